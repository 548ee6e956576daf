//! `natm atmtcp` against linux-atm's real `atmtcp` program (Debian atm-tools), on 127.0.0.1.
//!
//! Without kernel ATM, `atmtcp` still runs its TCP links (`listen`, `connect`), `print`,
//! `write FILE` (record) and `read FILE` (playback), and relays between links, which is all
//! these tests use. When the program is missing they skip with a message, unless
//! `NATM_REQUIRE_ATMTCP=1` (set by scripts/test), which makes a missing program a failure.
//!
//! Every child runs under a guard that kills it when the test ends, passed or failed, and
//! every wait is bounded.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{stderr, stdout};

/// Kills the child when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Guard {
    /// Wait for the child to exit, at most `limit`.
    fn wait(&mut self, limit: Duration, what: &str) -> ExitStatus {
        let end = Instant::now() + limit;
        loop {
            if let Some(s) = self.0.try_wait().expect("try_wait") {
                return s;
            }
            assert!(Instant::now() < end, "{what} did not exit within {limit:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A private scratch directory, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("natm-atmtcp-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).expect("scratch dir");
        Scratch(d)
    }
    fn path(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The `atmtcp` program, or `None` (after saying why) when the test should skip.
fn atmtcp() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d: PathBuf| d.join("atmtcp"))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("NATM_REQUIRE_ATMTCP").is_none_or(|v| v != "1"),
            "NATM_REQUIRE_ATMTCP=1 but linux-atm's atmtcp is not installed (apt-get install atm-tools)"
        );
        eprintln!("skipped: linux-atm's atmtcp is not installed (apt-get install atm-tools)");
    }
    found
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// Runs `atmtcp ARGS…` with its output in files.
fn spawn_atmtcp(bin: &Path, args: &[&str], out: &Path, err: &Path) -> Guard {
    Guard(
        Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(fs::File::create(out).expect("out file"))
            .stderr(fs::File::create(err).expect("err file"))
            .spawn()
            .expect("atmtcp starts"),
    )
}

/// Whether something listens on `port` on 127.0.0.1 or on every address (`atmtcp listen`
/// binds INADDR_ANY), from /proc/net/tcp, so that probing does not use up `atmtcp listen`'s
/// one connection.
fn listening(port: u16) -> bool {
    let ours = [
        format!("0100007F:{port:04X}"),
        format!("00000000:{port:04X}"),
    ];
    fs::read_to_string("/proc/net/tcp")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && ours.iter().any(|o| f[1] == o) && f[3] == "0A"
        })
}

/// Starts an `atmtcp` whose arguments (from `args(port)`) listen on a free port, and waits
/// until it listens. A port taken between choosing it and atmtcp's bind (tests run in
/// parallel) makes atmtcp exit; then another port is tried.
fn spawn_atmtcp_listening(
    bin: &Path,
    args: impl Fn(&str) -> Vec<String>,
    out: &Path,
    err: &Path,
) -> (Guard, u16) {
    for _ in 0..5 {
        let port = free_port();
        let a = args(&port.to_string());
        let mut g = spawn_atmtcp(
            bin,
            &a.iter().map(String::as_str).collect::<Vec<_>>(),
            out,
            err,
        );
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if listening(port) {
                return (g, port);
            }
            if g.0.try_wait().expect("try_wait").is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    panic!(
        "atmtcp never listened: {}",
        fs::read_to_string(err).unwrap_or_default()
    );
}

/// Runs `natm atmtcp ARGS…` with stdout and stderr piped.
fn spawn_natm(args: &[&str]) -> Guard {
    Guard(
        Command::new(env!("CARGO_BIN_EXE_natm"))
            .arg("atmtcp")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("natm starts"),
    )
}

/// Starts `natm atmtcp listen 0 ARGS…` and returns it with the port it listens on.
fn natm_listen(args: &[&str]) -> (Guard, u16, BufReader<ChildStderr>) {
    let mut g = spawn_natm(&[&["listen", "0"], args].concat());
    let mut err = BufReader::new(g.0.stderr.take().expect("stderr piped"));
    let mut line = String::new();
    err.read_line(&mut line).expect("natm's stderr");
    let port = line
        .trim()
        .strip_prefix("natm atmtcp: listening on 127.0.0.1:")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no listening line: {line:?}"));
    (g, port, err)
}

/// Collects a finished natm's output.
fn finish_natm(mut g: Guard, err: Option<BufReader<ChildStderr>>) -> (ExitStatus, String, String) {
    let status = g.wait(Duration::from_secs(20), "natm");
    let mut out = String::new();
    std::io::Read::read_to_string(g.0.stdout.as_mut().expect("stdout piped"), &mut out)
        .expect("stdout");
    let mut e = String::new();
    match err {
        Some(mut r) => std::io::Read::read_to_string(&mut r, &mut e),
        None => std::io::Read::read_to_string(g.0.stderr.as_mut().expect("piped"), &mut e),
    }
    .expect("stderr");
    (status, out, e)
}

/// One atmtcp frame: header and body.
fn frame(vpi: u16, vci: u16, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&vpi.to_be_bytes());
    f.extend_from_slice(&vci.to_be_bytes());
    f.extend_from_slice(&(body.len() as u32).to_be_bytes());
    f.extend_from_slice(body);
    f
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `atmtcp … print` output: `Link 1 (from link 0), VPI 1, VCI 42, 20 bytes:` then lines of
/// space-separated hex, 16 bytes each.
fn parse_print(text: &str) -> Vec<(u16, u16, Vec<u8>)> {
    let mut frames: Vec<(u16, u16, Vec<u8>, usize)> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Link ") {
            let (_, rest) = rest.split_once(", VPI ").expect("VPI");
            let (vpi, rest) = rest.split_once(", VCI ").expect("VCI");
            let (vci, rest) = rest.split_once(", ").expect("length");
            let len = rest.split(' ').next().expect("length");
            frames.push((
                vpi.parse().expect("vpi"),
                vci.parse().expect("vci"),
                Vec::new(),
                len.parse().expect("len"),
            ));
        } else {
            let f = frames.last_mut().expect("hex after a header");
            for h in line.split_whitespace() {
                f.2.push(u8::from_str_radix(h, 16).expect("hex byte"));
            }
        }
    }
    frames
        .into_iter()
        .map(|(p, c, b, n)| {
            assert_eq!(b.len(), n, "printed length of {p}.{c}");
            (p, c, b)
        })
        .collect()
}

/// 300 bytes, every value at least once.
fn payload() -> Vec<u8> {
    (0..300u32).map(|i| (i * 7 % 256) as u8).collect()
}

/// natm → atmtcp: natm connects to `atmtcp -d listen PORT print`, opens three VCs, sends
/// a binary SDU on each and closes them; atmtcp prints every SDU byte for byte and logs the
/// opens and closes it parsed.
#[test]
fn natm_to_atmtcp_print() {
    let Some(bin) = atmtcp() else { return };
    let dir = Scratch::new("print");
    let input = dir.path("sdu.bin");
    fs::write(&input, payload()).expect("write input");
    let (mut peer, port) = spawn_atmtcp_listening(
        &bin,
        |p| vec!["-d".into(), "listen".into(), p.into(), "print".into()],
        &dir.path("out"),
        &dir.path("err"),
    );
    let natm = spawn_natm(&[
        "connect",
        &format!("127.0.0.1:{port}"),
        "--vc",
        "0.100",
        "--vc",
        "1.42",
        "--vc",
        "2.300",
        "--qos",
        "cbr,aal5:max_pcr=1000,max_sdu=9180",
        "--input",
        input.to_str().expect("utf-8 path"),
        "--count",
        "0",
        "--timeout",
        "10",
    ]);
    let (status, out, err) = finish_natm(natm, None);
    assert!(status.success(), "natm: {status}\n{err}");
    assert_eq!(out, "", "natm received nothing");
    let status = peer.wait(Duration::from_secs(10), "atmtcp");
    let printed = fs::read_to_string(dir.path("out")).expect("atmtcp's output");
    let log = fs::read_to_string(dir.path("err")).expect("atmtcp's log");
    assert!(status.success(), "atmtcp: {status}\n{log}");
    assert_eq!(
        parse_print(&printed),
        [(0, 100, payload()), (1, 42, payload()), (2, 300, payload())],
        "{printed}"
    );
    for vc in ["0.100", "1.42", "2.300"] {
        for want in [
            format!("received control \"O {vc} 0.{vc} cbr,aal5:max_pcr=1000,max_sdu=9180\""),
            format!("Control: ({vc}) OPEN {vc},"),
            format!("received control \"C {vc}\""),
            format!("Control: ({vc}) CLOSE {vc},"),
        ] {
            assert!(log.contains(&want), "{want:?} not in atmtcp's log:\n{log}");
        }
    }
    assert!(!log.contains("unrecognized"), "{log}");
}

/// The frames fed to atmtcp's recorder: an open, data on three VCs (one of them empty and
/// one of 1000 bytes), and a close.
fn recorded_frames() -> Vec<u8> {
    let big: Vec<u8> = (0..1000u32).map(|i| (i * 13 % 251) as u8).collect();
    [
        frame(0, 0, b"O 1.42 0.1.42 ubr,aal5:max_pcr=0,max_sdu=8192"),
        frame(0, 100, b"hello"),
        frame(1, 42, &big),
        frame(0, 101, b""),
        frame(0, 0, b"C 1.42"),
    ]
    .concat()
}

/// atmtcp → natm: `atmtcp listen PORT write FILE` records frames sent to it; then
/// `atmtcp connect … read FILE` plays the recording into `natm atmtcp listen`, which prints
/// the open, every SDU on its VC byte for byte, and the close.
#[test]
fn atmtcp_recording_played_into_natm() {
    let Some(bin) = atmtcp() else { return };
    let dir = Scratch::new("playback");
    let rec = dir.path("rec.bin");
    let rec_s = rec.to_str().expect("utf-8 path");

    // Record.
    let (mut recorder, port) = spawn_atmtcp_listening(
        &bin,
        |p| vec!["listen".into(), p.into(), "write".into(), rec_s.into()],
        &dir.path("rec.out"),
        &dir.path("rec.err"),
    );
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to atmtcp listen");
    s.write_all(&recorded_frames()).expect("send to recorder");
    drop(s);
    let status = recorder.wait(Duration::from_secs(10), "atmtcp write");
    let log = fs::read_to_string(dir.path("rec.err")).unwrap_or_default();
    assert!(status.success(), "atmtcp write: {status}\n{log}");
    // The recording: per PDU a 4-byte stream number (BE), the atmtcp header, then the data
    // or, for control, the rest of the kernel's 120-byte struct atmtcp_control.
    let bytes = fs::read(&rec).expect("recording");
    let mut pos = 0;
    let mut vcs = Vec::new();
    while pos < bytes.len() {
        let h = &bytes[pos..pos + 12];
        assert_eq!(&h[..4], [0, 0, 0, 0], "stream 0 at {pos}");
        let vc = (
            u16::from_be_bytes([h[4], h[5]]),
            u16::from_be_bytes([h[6], h[7]]),
        );
        let len = u32::from_be_bytes([h[8], h[9], h[10], h[11]]);
        pos += 12 + if len == u32::MAX { 112 } else { len as usize };
        vcs.push((vc, len));
    }
    assert_eq!(
        vcs,
        [
            ((1, 42), u32::MAX),
            ((0, 100), 5),
            ((1, 42), 1000),
            ((0, 101), 0),
            ((1, 42), u32::MAX)
        ]
    );

    // Play back into natm.
    let (natm, nport, err) = natm_listen(&["--count", "5", "--timeout", "10"]);
    let mut player = spawn_atmtcp(
        &bin,
        &["connect", "127.0.0.1", &nport.to_string(), "read", rec_s],
        &dir.path("play.out"),
        &dir.path("play.err"),
    );
    let (status, out, err) = finish_natm(natm, Some(err));
    assert!(status.success(), "natm: {status}\n{err}");
    let play = player.wait(Duration::from_secs(10), "atmtcp read");
    assert!(play.success(), "atmtcp read: {play}");
    let open = b"O 1.42 0.1.42 ubr,aal5:max_sdu=8192";
    let big: Vec<u8> = (0..1000u32).map(|i| (i * 13 % 251) as u8).collect();
    let want = [
        format!(
            "0.0 {} {} open 1.42 0.1.42 ubr,aal5:max_sdu=8192",
            open.len(),
            hex(open)
        ),
        format!("0.100 5 {}", hex(b"hello")),
        format!("1.42 1000 {}", hex(&big)),
        "0.101 0 -".to_string(),
        format!("0.0 6 {} close 1.42", hex(b"C 1.42")),
    ];
    assert_eq!(out.lines().collect::<Vec<_>>(), want, "{err}");
}

/// Control through atmtcp as a relay: natm connects to `atmtcp listen P connect …`, which
/// then connects to `natm atmtcp listen` and relays. The open (which atmtcp re-encodes with
/// text2qos, then qos2text), the data and the close arrive at the far natm.
#[test]
fn natm_to_natm_through_atmtcp_relay() {
    let Some(bin) = atmtcp() else { return };
    let dir = Scratch::new("relay");
    let (far, far_port, far_err) = natm_listen(&["--count", "3", "--timeout", "10", "--json"]);
    let far_port = far_port.to_string();
    let (_relay, relay_port) = spawn_atmtcp_listening(
        &bin,
        |p| {
            ["listen", p, "connect", "127.0.0.1", &far_port]
                .map(String::from)
                .to_vec()
        },
        &dir.path("out"),
        &dir.path("err"),
    );
    let near = spawn_natm(&[
        "connect",
        &format!("127.0.0.1:{relay_port}"),
        "--vc",
        "5.77",
        "--qos",
        "ubr",
        "--text",
        "natm via atmtcp",
        "--count",
        "0",
        "--timeout",
        "10",
    ]);
    let (status, _, err) = finish_natm(near, None);
    assert!(status.success(), "near natm: {status}\n{err}");
    let (status, out, err) = finish_natm(far, Some(far_err));
    assert!(status.success(), "far natm: {status}\n{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(lines[0]["control"]["type"], "open", "{out}");
    assert_eq!(lines[0]["control"]["vc"], "5.77");
    assert_eq!(lines[0]["control"]["addr"], "0.5.77");
    assert_eq!(
        (lines[1]["vpi"].as_u64(), lines[1]["vci"].as_u64()),
        (Some(5), Some(77))
    );
    assert_eq!(lines[1]["hex"], hex(b"natm via atmtcp"));
    assert_eq!(lines[1]["length"], 15);
    assert_eq!(lines[2]["control"]["type"], "close", "{out}");
    assert_eq!(lines[2]["control"]["vc"], "5.77");
}

/// Bad input: exit 2 with one line on stderr, before any connection is tried.
#[test]
fn bad_input_exits_2() {
    for (args, want) in [
        (&["connect", "127.0.0.1:9", "--vc", "0.0"][..], "VC 0.0"),
        (&["connect", "127.0.0.1:9", "--vc", "1"], "expected VPI.VCI"),
        (
            &["connect", "127.0.0.1:9", "--vc", "1.70000"],
            "VCI must be",
        ),
        (
            &["connect", "127.0.0.1:9", "--vc", "1.2", "--qos", "ubx"],
            "--qos",
        ),
        (&["connect", "127.0.0.1:9", "--text", "x"], "need a --vc"),
        (&["connect", "no-port-here", "--vc", "1.2"], "HOST:PORT"),
        (&["connect", "127.0.0.1:9", "--timeout", "soon"], "seconds"),
        (
            &[
                "connect",
                "127.0.0.1:9",
                "--vc",
                "1.2",
                "--input",
                "/nonexistent/x",
            ],
            "--input",
        ),
        (&["listen", "70000"], "70000"),
    ] {
        let o = common::natm(&[&["atmtcp"], args].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{args:?}");
    }
}

/// A refused connection is a failure (exit 1), not bad input.
#[test]
fn refused_connection_exits_1() {
    let port = free_port();
    let o = common::natm(&[
        "atmtcp",
        "connect",
        &format!("127.0.0.1:{port}"),
        "--count",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("natm: connect to 127.0.0.1:"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

/// What natm does with a peer that is not `atmtcp`: an unknown control message is printed
/// and skipped (as `atmtcp` does), a giant PDU ends the link with exit 1 and the reason.
#[test]
fn bad_control_is_printed_and_giant_pdu_fails() {
    let (natm, port, err) = natm_listen(&["--timeout", "10"]);
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to natm");
    s.write_all(&frame(0, 0, b"X 1.2")).expect("send");
    s.write_all(&frame(3, 33, b"\x00\xff")).expect("send");
    s.write_all(&[0, 3, 0, 33, 0, 1, 0, 0]).expect("send"); // length 65536
    let (status, out, err) = finish_natm(natm, Some(err));
    drop(s);
    assert_eq!(status.code(), Some(1), "{err}");
    assert_eq!(
        out,
        format!(
            "0.0 5 {} bad-control does not start with O or C\n3.33 2 00ff\n",
            hex(b"X 1.2")
        )
    );
    assert!(
        err.ends_with("natm: atmtcp: giant PDU: length 65536 exceeds 65535\n"),
        "{err}"
    );
}

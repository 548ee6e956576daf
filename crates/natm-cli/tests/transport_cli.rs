//! `natm send` and `natm recv` through the lab's real daemons (`natm lab up`): a few MB
//! over the default lab (the auto path, its lanes; and every path with every service),
//! over links that drop 0.1 % of their cells, and on a switched VC (`natm recv --listen`,
//! `natm send --to`), checked by sha256; best effort saying its stream is incomplete on
//! the lossy links; the errors a user meets (no receiver, a receiver of another service,
//! a guaranteed rate the VC or the host cannot take, bad options).

mod common;
#[path = "support/lab.rs"]
mod lab;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{natm, stderr};
use lab::{Lab, sdu};

/// A file of `len` deterministic bytes in the lab's directory (removed with it); its path.
fn input(lab: &Lab, len: usize) -> PathBuf {
    let p = lab.0.join("transfer.in");
    std::fs::write(&p, sdu(len, 0x5a)).expect("write the input");
    p
}

fn sha256(p: &Path) -> String {
    let o = Command::new("sha256sum")
        .arg(p)
        .output()
        .expect("sha256sum (coreutils) runs");
    assert!(o.status.success(), "sha256sum {}", p.display());
    String::from_utf8(o.stdout).unwrap()[..64].to_string()
}

/// `natm recv` on h2 and `natm send` on h1 of VC `vc` with `service` (and `extra`
/// options on both), `file` in; the two outputs and the received file.
fn transfer(
    lab: &Lab,
    vc: &str,
    service: &str,
    extra: &[&str],
    file: &Path,
) -> (Output, Output, PathBuf) {
    let out = lab.0.join(format!("transfer-{vc}.out"));
    let args = |host: &str, cmd: &str| {
        let mut a = vec![
            cmd.to_string(),
            "--host".into(),
            host.into(),
            "--vc".into(),
            vc.into(),
            "--service".into(),
            service.into(),
            "--dir".into(),
            lab.arg().into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let recv = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args(args("h2", "recv"))
        .stdout(File::create(&out).expect("create the output"))
        .stderr(Stdio::piped())
        .spawn()
        .expect("natm recv runs");
    let send = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args(args("h1", "send"))
        .stdin(File::open(file).expect("open the input"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("natm send runs");
    let recv = recv.wait_with_output().expect("natm recv ends");
    (send, recv, out)
}

/// A reliable stream of `file` from h1 to h2 on `vc` (with `extra` options): both ends
/// exit 0 and the copy is byte-exact; the sender's summary.
fn reliable_byte_exact(lab: &Lab, vc: &str, extra: &[&str], file: &Path) -> String {
    let (send, recv, out) = transfer(lab, vc, "reliable", extra, file);
    let (se, re) = (stderr(&send), stderr(&recv));
    assert!(send.status.success(), "send: {se}");
    assert!(recv.status.success(), "recv: {re}");
    assert_eq!(sha256(&out), sha256(file), "send: {se} recv: {re}");
    eprintln!("{se}{re}");
    se
}

/// The messages a receiver's summary line says were lost (`… 1 message lost`, `… 3
/// messages lost`).
fn messages_lost(line: &str) -> u64 {
    let what = if line.contains(" 1 message lost") {
        "message lost"
    } else {
        "messages lost"
    };
    figure(line, what)
}

/// The number before `what` in a summary line (`… 3 resent …`).
fn figure(line: &str, what: &str) -> u64 {
    let at = line
        .find(what)
        .unwrap_or_else(|| panic!("{what:?} in {line:?}"));
    line[..at]
        .split_whitespace()
        .last()
        .and_then(|w| w.trim_start_matches('(').parse().ok())
        .unwrap_or_else(|| panic!("a number before {what:?} in {line:?}"))
}

const LEN: usize = 4_000_000;

#[test]
fn a_stream_through_the_default_lab_arrives_whole_and_errors_are_clear() {
    let lab = Lab::up("transport", "oc3", None);
    let file = input(&lab, LEN);
    let (send, recv, out) = transfer(&lab, "0.100", "reliable", &[], &file);
    let (se, re) = (stderr(&send), stderr(&recv));
    assert!(send.status.success(), "send: {se}");
    assert!(recv.status.success(), "recv: {re}");
    assert_eq!(sha256(&out), sha256(&file), "send: {se} recv: {re}");
    assert_eq!(se.lines().count(), 1, "{se}");
    assert!(
        se.starts_with(&format!("natm send: {LEN} bytes in 62 messages, ")),
        "{se}"
    );
    assert!(se.contains("Mbit/s") && se.contains("rtt "), "{se}");
    assert!(
        re.starts_with(&format!("natm recv: {LEN} bytes in 62 messages, ")),
        "{re}"
    );
    assert_eq!(messages_lost(&re), 0, "{re}");
    assert!(send.stdout.is_empty());

    // Every data path and every service: whole on a clean link, except that best effort
    // has no flow control: a receiver slower than its sender (two debug builds sharing
    // the machine's cores with the daemons) loses messages, and says so.
    for (vc, service, path) in [
        ("0.101", "best-effort", "daemon"),
        ("0.102", "reliable", "direct"),
        ("0.103", "guaranteed:100000", "lane"),
        ("0.104", "guaranteed:100000", "daemon"),
    ] {
        let (send, recv, out) = transfer(&lab, vc, service, &["--path", path], &file);
        let (se, re) = (stderr(&send), stderr(&recv));
        assert!(send.status.success(), "{service} {path}: send: {se}");
        if service == "best-effort" && !recv.status.success() {
            assert!(messages_lost(&re) > 0, "{re}");
            assert!(re.contains("natm: the stream is incomplete: "), "{re}");
        } else {
            assert!(recv.status.success(), "{service} {path}: recv: {re}");
            assert_eq!(sha256(&out), sha256(&file), "{service} {path}");
        }
    }

    // No receiver: the sender says so within its timeout.
    let o = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args([
            "send",
            "--host",
            "h1",
            "--vc",
            "0.105",
            "--service",
            "reliable",
            "--timeout",
            "0.5",
            "--dir",
        ])
        .arg(lab.arg())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.starts_with("natm: no reliable channel answered on VC 0.105 within 0.5 s"),
        "{e}"
    );

    // A receiver of another service: both ends name it.
    let recv = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args([
            "recv",
            "--host",
            "h2",
            "--vc",
            "0.106",
            "--service",
            "best-effort",
            "--timeout",
            "5",
            "--dir",
        ])
        .arg(lab.arg())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let send = natm(&[
        "send",
        "--host",
        "h1",
        "--vc",
        "0.106",
        "--service",
        "reliable",
        "--timeout",
        "5",
        "--dir",
        lab.arg(),
    ]);
    let recv = recv.wait_with_output().unwrap();
    for o in [&send, &recv] {
        assert_eq!(o.status.code(), Some(1));
        let e = stderr(o);
        assert!(e.contains("best-effort") && e.contains("reliable"), "{e}");
    }

    // Bad options: exit 2, naming the option.
    for (args, what) in [
        (vec!["--service", "fast"], "--service"),
        (
            vec![
                "--service",
                "guaranteed:1000",
                "--calibration",
                "/nonexistent/calibration.toml",
            ],
            "--calibration",
        ),
        (
            vec!["--service", "reliable", "--message-size", "0"],
            "--message-size",
        ),
        (vec!["--service", "reliable", "--qos", "nonsense"], "--qos"),
    ] {
        let mut a = vec!["send", "--vc", "0.100", "--dir", lab.arg()];
        a.extend(args);
        let o = natm(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}");
        assert!(
            stderr(&o).starts_with(&format!("natm: {what}")),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn a_reliable_stream_over_links_that_lose_cells_is_byte_exact() {
    let lab = Lab::up(
        "transport-lossy",
        "oc3",
        Some(
            "switch = [{ name = \"s1\" }]\nhost = [{ name = \"h1\" }, { name = \"h2\" }]\n\
             link = [{ a = \"h1\", b = \"s1\", impair = \"loss=0.1%\" }, \
                     { a = \"h2\", b = \"s1\", impair = \"loss=0.1%\" }]\n\
             pvc = [{ a = \"h1\", b = \"h2\", vc = \"0.100-0.101\" }]\n",
        ),
    );
    let file = input(&lab, LEN);
    let se = reliable_byte_exact(&lab, "0.100", &[], &file);
    // About 85,000 cells cross each link: SMART found and resent what they dropped.
    assert!(figure(&se, "resent") > 0, "{se}");
    assert!(figure(&se, "SMART losses") > 0, "{se}");

    // Best effort loses whole 64 KiB messages there, and says so.
    let (send, recv, _) = transfer(&lab, "0.101", "best-effort", &[], &file);
    assert!(send.status.success(), "send: {}", stderr(&send));
    assert_eq!(recv.status.code(), Some(1));
    let re = stderr(&recv);
    assert!(messages_lost(&re) > 0, "{re}");
    assert!(re.contains("natm: the stream is incomplete: "), "{re}");
}

/// The seed's channel from two simplex VCs: the stream on 0.102, its acks back on 0.103;
/// each VC carries one direction only, as hostd's counters show.
#[test]
fn a_stream_on_two_pvcs_goes_one_way_on_each() {
    let lab = Lab::up("transport-pair", "oc3", None);
    let file = input(&lab, 1_000_000);
    let pair = ["--return-vc", "0.103"];
    reliable_byte_exact(&lab, "0.102", &pair, &file);
    // The switch forwarded the stream on 0.102 from h1 (port 1) to h2 and nothing back;
    // on 0.103 only the acknowledgements, from h2 to h1.
    let stat = lab.stat();
    let xcs = stat["switches"][0]["status"]["connections"]
        .as_array()
        .expect("connections");
    let cells = |vc: &str, dir: &str| -> u64 {
        let x = xcs
            .iter()
            .find(|x| x["a"] == format!("1:{vc}"))
            .unwrap_or_else(|| panic!("no cross-connect of {vc} in {stat}"));
        x[dir]["cells_out"].as_u64().expect("cells_out")
    };
    let (fwd, back) = (cells("0.102", "a_to_b"), cells("0.103", "b_to_a"));
    assert!(fwd > 20_000, "the stream's VC carried {fwd} cells");
    assert!(
        back > 0 && back < fwd / 20,
        "the acks' VC carried {back} cells"
    );
    assert_eq!(
        cells("0.102", "b_to_a"),
        0,
        "the stream's VC carried cells back"
    );
    assert_eq!(
        cells("0.103", "a_to_b"),
        0,
        "the acks' VC carried cells forth"
    );

    let o = natm(&[
        "send",
        "--vc",
        "0.102",
        "--return-vc",
        "0.102",
        "--service",
        "reliable",
        "--dir",
        lab.arg(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--return-vc 0.102: must differ from --vc"),
        "{}",
        stderr(&o)
    );
}

/// Burst loss, header and payload bit errors and jitter on both links: a reliable stream
/// still arrives byte-exact (the AAL5 CRC turns a payload bit error into a lost TPDU,
/// the HEC receiver corrects one header bit and discards two).
#[test]
fn a_reliable_stream_over_links_with_burst_loss_and_bit_errors_is_byte_exact() {
    const IMPAIR: &str = "burst=0.1%/8,ber=1e-6,hec=1e-4,hec2=1e-5,delay=50us,jitter=20us";
    let lab = Lab::up(
        "transport-bursty",
        "oc3",
        Some(&format!(
            "switch = [{{ name = \"s1\" }}]\nhost = [{{ name = \"h1\" }}, {{ name = \"h2\" }}]\n\
             link = [{{ a = \"h1\", b = \"s1\", impair = \"{IMPAIR},seed=1\" }}, \
                     {{ a = \"h2\", b = \"s1\", impair = \"{IMPAIR},seed=2\" }}]\n\
             pvc = [{{ a = \"h1\", b = \"h2\", vc = \"0.100\" }}]\n"
        )),
    );
    let file = input(&lab, LEN);
    let se = reliable_byte_exact(&lab, "0.100", &[], &file);
    assert!(figure(&se, "resent") > 0, "{se}");
}

#[test]
fn a_stream_on_a_switched_vc_arrives_whole() {
    let lab = Lab::up("transport-svc", "oc3", None);
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    for h in ["h1", "h2"] {
        while !lab.host(h).status().expect("status").signalling_up {
            assert!(std::time::Instant::now() < end, "{h}: no signalling");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    let file = input(&lab, LEN);
    let out = lab.0.join("transfer-svc.out");
    let mut recv = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args([
            "recv",
            "--host",
            "h2",
            "--listen",
            "--service",
            "reliable",
            "--dir",
            lab.arg(),
        ])
        .stdout(File::create(&out).expect("create the output"))
        .stderr(Stdio::piped())
        .spawn()
        .expect("natm recv runs");
    let mut err = BufReader::new(recv.stderr.take().expect("piped"));
    let mut first = String::new();
    err.read_line(&mut first).expect("natm recv's first line");
    let addr = first
        .strip_prefix("natm recv: listening on ")
        .unwrap_or_else(|| panic!("{first:?}"))
        .trim()
        .to_string();
    let send = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args([
            "send",
            "--host",
            "h1",
            "--to",
            &addr,
            "--service",
            "reliable",
            "--dir",
            lab.arg(),
        ])
        .stdin(File::open(&file).expect("open the input"))
        .output()
        .expect("natm send runs");
    let status = recv.wait().expect("natm recv ends");
    let mut rest = String::new();
    err.read_to_string(&mut rest).expect("natm recv's stderr");
    assert!(send.status.success(), "send: {}", stderr(&send));
    assert!(status.success(), "recv: {rest}");
    assert!(
        rest.starts_with(&format!("natm recv: {LEN} bytes in 62 messages")),
        "{rest}"
    );
    assert_eq!(sha256(&out), sha256(&file));
}

/// Admission: a guaranteed rate more than the VC's QoS reserves, or than the host's
/// calibrated per-TPDU costs take, is refused at once (no wait for a receiver) in one line
/// naming the constraint and both figures.
#[test]
fn a_guaranteed_rate_the_vc_or_the_host_cannot_take_is_refused_in_one_line() {
    let lab = Lab::up("admission", "oc3", None);
    let slow_host = lab.0.join("slow-host.toml");
    let builtin = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../natm-sim/calibration/default.toml"
    ))
    .expect("natm-sim's builtin calibration");
    // 10 ms to send a frame: 581 TPDUs/s of 8 KiB at 100,000 cells/s take 5.8 s of CPU
    // per second.
    let slow: String = builtin
        .lines()
        .map(|l| {
            if l.starts_with("send_fixed_ns") {
                "send_fixed_ns = 10000000"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&slow_host, slow).unwrap();
    let slow_host = slow_host.to_str().unwrap();
    for (extra, line) in [
        (
            vec!["--qos", "cbr:pcr=1000"],
            "natm: VC 0.107 on h1: not admitted: link: the VC's cbr pcr 1000 cells/s < 100000 \
             cells/s needed for guaranteed:100000\n",
        ),
        (
            vec!["--qos", "ubr"],
            "natm: VC 0.107 on h1: not admitted: link: the VC is ubr, which reserves no rate, \
             and guaranteed:100000 needs 100000 cells/s (open it cbr:pcr=100000 or more)\n",
        ),
        (
            vec!["--calibration", slow_host],
            "natm: VC 0.107 on h1: not admitted: host: guaranteed:100000 in 8192-byte TPDUs",
        ),
    ] {
        let mut a = vec![
            "send",
            "--host",
            "h1",
            "--vc",
            "0.107",
            "--service",
            "guaranteed:100000",
            "--timeout",
            "30",
            "--dir",
            lab.arg(),
        ];
        a.extend(extra);
        let t0 = std::time::Instant::now();
        let o = natm(&a);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{a:?}: {e}");
        assert!(e.starts_with(line), "{a:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(10), "{e}");
    }
}

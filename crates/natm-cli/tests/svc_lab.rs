//! Issue 24's acceptance with the real daemons: switched VCs on the 3-switch, 4-host lab of
//! `examples/svc.toml` (h1, h2 ─ s1 ══ s2 ══ s3 ─ h4, h3 on s2; the trunks are atmtcp at
//! 10,000 cells/s, the host links OC-3c shared memory).
//!
//! One lab, one test, in order: calls from h1 to h4 across both trunks carry SDUs of 1 to
//! 65,535 bytes byte-exact both ways on every data path (auto, direct, daemon, lane); a CBR
//! call that no longer fits the s1 ═ s2 trunk is refused at the caller with cause 37 and
//! the trunk's free rate (`natm call`: exit 1, one stderr line), and after the first call's
//! release an identical one is set up; unknown addresses are refused with cause 1 (under a
//! switch's prefix, no host) and 3 (under no prefix); `kill -9` of a `natm call` holding a
//! call releases it at the listener (the time from the kill to `Released` is printed; the
//! assertion is a generous bound, timing is the benchmarks' business); a restart of s2
//! clears the calls through it at both ends, the trunks' SSCOP comes back and a new call
//! works. Meanwhile `natm capture` records s1's trunk port: tshark decodes every SSCOP PDU
//! and Q.2931 message on 0.5 (reassembled from the captured cells) with no error but the
//! Wireshark 4.0 bug the tshark tests document (a cause with diagnostics as the last IE).

mod common;
#[path = "support/lab.rs"]
mod lab;
#[path = "support/pdml.rs"]
mod pdml;

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{natm, stderr};
use lab::{Lab, exchange};
use natm::{Aesa, CallOptions, ChannelOptions, DataPath, Error, NotifyMode, Vc};
use pdml::tshark;

const TOPOLOGY: &str = include_str!("../../../examples/svc.toml");

const H4: &str = "47.0005.80FFE1000000F2000003.020000000004.00";
/// Under s3's prefix, no host there: cause 1.
const NO_HOST: &str = "47.0005.80FFE1000000F2000003.020000000009.00";
/// Under no switch's prefix: cause 3.
const NO_ROUTE: &str = "47.0005.80FFE1000000F2000009.020000000009.00";

/// `natm lab up` of the topology as it is (no `--rate`: that would replace the trunks'
/// 10,000 cells/s), in a directory of this process; down when the `Lab` drops.
fn up() -> Lab {
    let dir = std::env::temp_dir().join(format!("natm-lab-{}-svc", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let lab = Lab(dir);
    let topo = lab.0.with_extension("toml");
    std::fs::write(&topo, TOPOLOGY).expect("write the topology");
    let o = natm(&[
        "lab",
        "up",
        "--topology",
        topo.to_str().expect("utf-8"),
        "--dir",
        lab.arg(),
    ]);
    assert!(o.status.success(), "lab up: {}", stderr(&o));
    lab
}

fn aesa(text: &str) -> Aesa {
    text.parse().expect("an AESA")
}

fn channel(path: DataPath) -> ChannelOptions {
    let c = ChannelOptions::default().path(path);
    if path == DataPath::Lane {
        c.notify(NotifyMode::EventFd)
    } else {
        c
    }
}

/// Takes calls on h4 in a thread of its own: each accepted VC comes out of `vcs`; the
/// path of the next accept comes in through `paths`.
struct Acceptor {
    paths: mpsc::Sender<DataPath>,
    vcs: mpsc::Receiver<Result<Vc, String>>,
}

impl Acceptor {
    fn start(lab: &Lab, name: &str) -> Acceptor {
        let (path_tx, path_rx) = mpsc::channel::<DataPath>();
        let (vc_tx, vc_rx) = mpsc::channel();
        let host = lab.host(name);
        let listener = host.listen(None).expect("listen");
        std::thread::spawn(move || {
            let _host = host;
            while let Ok(path) = path_rx.recv() {
                let got = match listener.next_call(Some(Duration::from_secs(20))) {
                    Ok(call) => listener
                        .accept_call(call, &channel(path))
                        .map_err(|e| format!("accept: {e}")),
                    Err(e) => Err(format!("next call: {e}")),
                };
                if vc_tx.send(got).is_err() {
                    break;
                }
            }
        });
        Acceptor {
            paths: path_tx,
            vcs: vc_rx,
        }
    }

    /// Expects the next call, accepts it on `path`.
    fn expect(&self, path: DataPath) {
        self.paths.send(path).expect("acceptor thread");
    }

    fn accepted(&self) -> Vc {
        self.vcs
            .recv_timeout(Duration::from_secs(30))
            .expect("the acceptor answered")
            .unwrap_or_else(|e| panic!("accepting a call on h4: {e}"))
    }
}

fn call_opts(path: DataPath, qos: &str) -> CallOptions {
    CallOptions::new()
        .qos(qos.parse().expect("qos"))
        .channel(channel(path))
}

/// `natm call --host HOST ADDR --text hi` in the lab.
fn natm_call(lab: &Lab, host: &str, addr: &str, qos: &str) -> std::process::Output {
    natm(&[
        "call",
        "--host",
        host,
        addr,
        "--qos",
        qos,
        "--text",
        "hi",
        "--dir",
        lab.arg(),
    ])
}

/// The released cause of a VC whose call ends: waits for it up to `within`.
fn released(vc: &mut Vc, within: Duration) -> Result<natm::CauseInfo, String> {
    let mut buf = vec![0u8; 65_536];
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("still up".into());
        }
        match vc.recv_timeout(&mut buf, left) {
            Ok(_) => continue,
            Err(Error::Released(c)) => return Ok(c),
            Err(Error::Timeout) => return Err("still up".into()),
            Err(e) => return Err(format!("not a release: {e:?}")),
        }
    }
}

/// The daemons' logs, for a failure's message.
fn logs(lab: &Lab) -> String {
    let mut out = String::new();
    for n in ["s1", "s2", "s3", "h1", "h4"] {
        let text = std::fs::read_to_string(lab.0.join(format!("{n}.log"))).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        out += &format!(
            "--- {n}.log\n{}\n",
            lines[lines.len().saturating_sub(15)..].join("\n")
        );
    }
    let stat = lab.stat();
    for s in stat["switches"].as_array().into_iter().flatten() {
        out += &format!(
            "--- {} signalling {}\n",
            s["name"], s["status"]["signalling"]
        );
    }
    for h in stat["hosts"].as_array().into_iter().flatten() {
        out += &format!(
            "--- {} calls {} link {}\n",
            h["name"], h["status"]["calls"], h["status"]["link"]
        );
    }
    out
}

/// Every switch's signalling ports, by switch name: (port, side, link_up).
fn signalling(lab: &Lab) -> HashMap<String, Vec<(u64, String, bool)>> {
    let stat = lab.stat();
    let mut out = HashMap::new();
    for s in stat["switches"].as_array().expect("switches") {
        let name = s["name"].as_str().unwrap_or("?").to_string();
        let ports = s["status"]["signalling"]["ports"]
            .as_array()
            .map(|ports| {
                ports
                    .iter()
                    .map(|p| {
                        (
                            p["port"].as_u64().unwrap_or(0),
                            p["side"].as_str().unwrap_or("").to_string(),
                            p["link_up"].as_bool().unwrap_or(false),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.insert(name, ports);
    }
    out
}

/// Waits until every signalling port of every switch is up.
fn all_links_up(lab: &Lab, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let sig = signalling(lab);
        let down: Vec<String> = sig
            .iter()
            .flat_map(|(s, ports)| {
                ports
                    .iter()
                    .filter(|p| !p.2)
                    .map(move |p| format!("{s} p{}", p.0))
            })
            .collect();
        if down.is_empty() && sig.len() == 3 && sig.values().all(|p| !p.is_empty()) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "signalling not up on {down:?}: {sig:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `natm capture` of a switch port, stopped (SIGTERM) when done.
struct Capture {
    child: Child,
    file: std::path::PathBuf,
}

impl Capture {
    fn start(lab: &Lab, port: &str) -> Capture {
        let file = lab
            .0
            .with_extension(format!("{}.pcap", port.replace(':', "-")));
        let child = Command::new(env!("CARGO_BIN_EXE_natm"))
            .args(["capture", "--port", port, "--seconds", "120", "--out"])
            .arg(&file)
            .args(["--dir", lab.arg()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("natm capture runs");
        Capture { child, file }
    }

    /// Stops it (SIGTERM: natm capture writes a complete file and exits) and checks the
    /// file; the file goes when `self` drops.
    fn stop_and_check(mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let status = self.child.wait().expect("natm capture ends");
        assert!(status.success(), "natm capture: {status}");
        check_capture(&self.file);
    }
}

impl Drop for Capture {
    /// A test that fails before the check leaves no capture behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.file);
    }
}

#[test]
fn switched_vcs_across_two_trunks_with_the_real_daemons() {
    let lab = up();
    all_links_up(&lab, Duration::from_secs(20));
    let trunk = trunk_port(&lab);
    // s1's trunk (the calls' set-up, data and release between switches) and h1's port
    // (the refusals too).
    let captures = [
        Capture::start(&lab, &format!("s1:{trunk}")),
        Capture::start(&lab, "s1:1"),
    ];
    // The capture is attached before the first call (its start is asynchronous).
    std::thread::sleep(Duration::from_millis(300));

    let h1 = lab.host("h1");
    let h4 = aesa(H4);
    let acceptor = Acceptor::start(&lab, "h4");

    // 1. Data, byte-exact, on every path, across both trunks.
    for path in [
        DataPath::Auto,
        DataPath::Direct,
        DataPath::Daemon,
        DataPath::Lane,
    ] {
        acceptor.expect(path);
        let mut a = h1
            .call(&h4, call_opts(path, "ubr"))
            .unwrap_or_else(|e| panic!("call h1 → h4 on {path:?}: {e}"));
        let mut b = acceptor.accepted();
        exchange(&mut a, &mut b, &format!("call h1 → h4, {path:?}"));
        drop(a);
        let cause = released(&mut b, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{path:?}: h4 after h1's release: {e}"));
        assert_eq!(cause.value, 16, "{path:?}: normal clearing: {cause}");
    }

    // 2. CAC: 6,000 c/s of CBR fit the 10,000 c/s trunk once; the second is refused at
    //    the caller naming the trunk and its free rate, until the first is released.
    let cbr = "cbr:pcr=6000";
    acceptor.expect(DataPath::Auto);
    let first = h1
        .call(&h4, call_opts(DataPath::Auto, cbr))
        .expect("first CBR call");
    let first_far = acceptor.accepted();
    let o = natm_call(&lab, "h1", H4, cbr);
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "second CBR call: {err}\n{}",
        logs(&lab)
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("cause 37 (user cell rate not available)"),
        "{err}\n{}",
        logs(&lab)
    );
    assert!(
        err.contains(&format!("s1 p{trunk}")),
        "names s1's trunk: {err}"
    );
    assert!(err.contains("c/s free"), "the free rate: {err}");
    eprintln!("refused as expected: {}", err.trim_end());
    // Through the API too, with the cause's parts.
    match h1.call(&h4, call_opts(DataPath::Auto, cbr)) {
        Err(Error::CallFailed(c)) => {
            assert_eq!(c.value, 37, "{c}");
            assert!(c.diagnostic.contains("c/s free"), "{c}");
        }
        other => panic!("second CBR call through the API: {:?}", other.map(|_| ())),
    }
    drop(first);
    drop(first_far);
    // The release reaches s1's CAC right after the caller's RELEASE: a short retry window
    // covers the signalling's own delay, never a refusal for another reason.
    let deadline = Instant::now() + Duration::from_secs(5);
    acceptor.expect(DataPath::Auto);
    let mut again = loop {
        match h1.call(&h4, call_opts(DataPath::Auto, cbr)) {
            Ok(vc) => break vc,
            Err(Error::CallFailed(c)) if c.value == 37 && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("the same CBR call after the release: {e}"),
        }
    };
    let mut far = acceptor.accepted();
    again.send(b"again").expect("send");
    let n = far
        .recv_timeout(&mut [0u8; 64], Duration::from_secs(5))
        .expect("data on the second CBR call");
    assert_eq!(n, 5);
    drop(again);
    released(&mut far, Duration::from_secs(5)).expect("released");

    // 3. Unknown addresses: cause 1 under a switch's prefix, 3 under none.
    for (addr, value) in [(NO_HOST, 1), (NO_ROUTE, 3)] {
        let o = natm_call(&lab, "h1", addr, "ubr");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{addr}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("refused: cause {value} (")),
            "{addr}: {err}"
        );
        match h1.call(&aesa(addr), CallOptions::new()) {
            Err(Error::CallFailed(c)) => assert_eq!(c.value, value, "{addr}: {c}"),
            other => panic!("{addr}: {:?}", other.map(|_| ())),
        }
    }

    // 4. kill -9 of a caller: the listener sees the release.
    acceptor.expect(DataPath::Auto);
    // `natm call` holds the call for a minute after its SDU (`--linger`).
    let mut caller = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args([
            "call",
            "--host",
            "h1",
            H4,
            "--text",
            "before the kill",
            "--linger",
            "60",
            "--dir",
            lab.arg(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("natm call runs");
    let mut b = acceptor.accepted();
    // Data flows first, so the caller holds a working call when it dies.
    let mut buf = vec![0u8; 65_536];
    let n = b
        .recv_timeout(&mut buf, Duration::from_secs(10))
        .expect("the caller's data");
    assert_eq!(&buf[..n], b"before the kill");
    let killed = Instant::now();
    caller.kill().expect("SIGKILL");
    let cause = released(&mut b, Duration::from_secs(10)).expect("released after kill -9");
    let took = killed.elapsed();
    let _ = caller.wait();
    eprintln!(
        "kill -9 of the caller → Released at the listener in {:.1} ms ({cause})",
        took.as_secs_f64() * 1e3
    );
    assert!(
        took < Duration::from_secs(2),
        "release after kill -9 took {took:?}"
    );

    // 5. The capture: every SSCOP PDU and Q.2931 message on 0.5 decodes in tshark.
    for c in captures {
        c.stop_and_check();
    }

    // 6. A restart of s2 clears the call through it at both ends; SSCOP comes back.
    acceptor.expect(DataPath::Auto);
    let mut a = h1
        .call(&h4, CallOptions::new())
        .expect("a call before the restart");
    let mut b = acceptor.accepted();
    let o = natm(&["lab", "restart", "s2", "--kill", "--dir", lab.arg()]);
    assert!(o.status.success(), "lab restart: {}", stderr(&o));
    let near = released(&mut a, Duration::from_secs(10)).expect("h1's end released");
    let far = released(&mut b, Duration::from_secs(10)).expect("h4's end released");
    eprintln!("s2 restarted: h1 got {near}, h4 got {far}");
    all_links_up(&lab, Duration::from_secs(30));
    let sig = signalling(&lab);
    assert!(sig["s2"].iter().all(|p| p.2), "{sig:?}");
    acceptor.expect(DataPath::Auto);
    let mut a = h1
        .call(&h4, CallOptions::new())
        .expect("a call after the restart");
    let mut b = acceptor.accepted();
    a.send(b"after").expect("send");
    let n = b
        .recv_timeout(&mut buf, Duration::from_secs(10))
        .expect("data after the restart");
    assert_eq!(&buf[..n], b"after");
    // s2 counts the call: its calls are the new ones only.
    let stat = lab.stat();
    let s2 = stat["switches"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == "s2"))
        .expect("s2");
    assert_eq!(
        s2["status"]["signalling"]["calls_active"].as_u64(),
        Some(1),
        "{s2}"
    );
}

/// s1's port toward s2: the trunk (its tcp link).
fn trunk_port(lab: &Lab) -> u64 {
    let stat = lab.stat();
    let s1 = stat["switches"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == "s1"))
        .unwrap_or_else(|| panic!("s1 in {stat}"));
    let ports = s1["status"]["ports"].as_array().expect("s1's ports");
    ports
        .iter()
        .find(|p| p["link"].as_str().unwrap_or("").contains("tcp"))
        .and_then(|p| p["id"].as_u64())
        .unwrap_or_else(|| panic!("no tcp trunk port on s1: {s1}"))
}

// ---------------------------------------------------------------------------------------
// The capture through tshark

/// The AAL5 PDUs of VC 0.5 in a `natm capture` file (cells of both directions, which the
/// file does not tell apart): a frame's last cell closes the latest run of open cells whose
/// CRC checks, so a one-cell PDU of the other direction between a longer PDU's cells is
/// found too. The cells left over, if any, are returned with them.
fn signalling_pdus(pcap: &std::path::Path) -> (Vec<natm_capture::Record>, usize) {
    use natm_capture::{Reader, Record, RecordKind};
    use natm_wire::aal5::Pdu;
    let file = std::fs::File::open(pcap).expect("the capture");
    let reader = Reader::new(std::io::BufReader::new(file)).expect("a pcap");
    let mut open: Vec<[u8; 48]> = Vec::new();
    let mut pdus = Vec::new();
    for r in reader {
        let r = r.expect("a whole record");
        let RecordKind::Cell(c) = &r.kind else {
            continue;
        };
        let h = c.header;
        let (vpi, vci) = (
            ((h[0] & 0x0F) << 4) | (h[1] >> 4),
            (u16::from(h[1] & 0x0F) << 12) | (u16::from(h[2]) << 4) | u16::from(h[3] >> 4),
        );
        if (vpi, vci) != (0, 5) {
            continue;
        }
        open.push(c.payload);
        if h[3] & 0x02 == 0 {
            continue; // not a frame's last cell
        }
        let last = open.len() - 1;
        let found = (0..=last).rev().find_map(|from| {
            let bytes: Vec<u8> = open[from..].concat();
            let pdu = Pdu::new_checked(&bytes[..]).ok()?;
            pdu.check(65_535).ok()?;
            Some((from, bytes))
        });
        match found {
            Some((from, bytes)) => {
                open.truncate(from);
                pdus.push(Record {
                    time: r.time,
                    kind: RecordKind::Aal5Pdu {
                        vc: natm_core::VcId::uni(0, 5).expect("0.5"),
                        pdu: bytes,
                    },
                });
            }
            None => {
                // A lone last cell that does not check: keep it open for none.
                open.pop();
            }
        }
    }
    (pdus, open.len())
}

/// The Q.2931 message an SSCOP SD PDU carries (its SDU without the SD trailer).
fn q2931_of(sdu: &[u8]) -> Option<&[u8]> {
    let t = sdu.len().checked_sub(4)?;
    // SSCOP trailer: PL (2 bits), reserved, type (4 bits); SD is type 8.
    if sdu[t] & 0x0F != 0x08 {
        return None;
    }
    let pad = usize::from(sdu[t] >> 6);
    sdu.get(..t.checked_sub(pad)?)
}

/// The last IE of a Q.2931 message: (identifier, contents).
fn last_ie(msg: &[u8]) -> Option<(u8, &[u8])> {
    let mut at = 9;
    let mut last = None;
    while at + 4 <= msg.len() {
        let len = usize::from(u16::from_be_bytes([msg[at + 2], msg[at + 3]]));
        let c = msg.get(at + 4..at + 4 + len)?;
        last = Some((msg[at], c));
        at += 4 + len;
    }
    last
}

/// Wireshark 4.0's q2931 dissector reads past a message whose last IE is a cause with
/// diagnostics of 37, 43, 88, 96, 99 or 100, or an AAL parameters, traffic descriptor or
/// broadband sending complete IE, and calls it malformed (tests/tshark.rs, `Quirks`).
fn wireshark_overreads(msg: &[u8]) -> bool {
    match last_ie(msg) {
        Some((0x58 | 0x59 | 0x62, _)) => true,
        Some((0x08, c)) => c.len() > 2 && [37u8, 43, 88, 96, 99, 100].contains(&(c[1] & 0x7F)),
        _ => false,
    }
}

/// Every SSCOP PDU on 0.5 in the capture decodes in tshark, every SD's Q.2931 message too,
/// with no error but the documented Wireshark bug.
fn check_capture(pcap: &std::path::Path) {
    use natm_capture::{LinkType, RecordKind, Writer};
    let ok = Command::new("tshark")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("NATM_REQUIRE_TSHARK").as_deref() != Ok("1"),
            "tshark is not installed, and NATM_REQUIRE_TSHARK=1 requires it"
        );
        eprintln!("SKIPPED the capture's check: tshark is not installed");
        return;
    }
    let (pdus, left) = signalling_pdus(pcap);
    assert_eq!(left, 0, "cells of 0.5 that make no PDU");
    assert!(
        pdus.len() >= 20,
        "a capture of calls has signalling: {}",
        pdus.len()
    );
    // As SunATM records typed Q.SAAL: tshark decodes them as SSCOP, then Q.2931.
    let aal5 = pcap.with_extension("sunatm.pcap");
    let mut w = Writer::new(
        std::io::BufWriter::new(std::fs::File::create(&aal5).expect("create")),
        LinkType::SunAtm,
    )
    .expect("writer");
    for r in &pdus {
        let RecordKind::Aal5Pdu { vc, pdu } = &r.kind else {
            unreachable!()
        };
        let len = usize::from(u16::from_be_bytes([pdu[pdu.len() - 6], pdu[pdu.len() - 5]]));
        w.write(&natm_capture::Record {
            time: r.time,
            kind: RecordKind::SunAtm {
                vc: *vc,
                kind: natm_capture::SunAtmType::Qsaal,
                direction: natm_capture::Direction::default(),
                sdu: pdu[..len].to_vec(),
            },
        })
        .expect("write");
    }
    w.flush().expect("flush");
    drop(w);
    let packets = tshark(&aal5);
    let _ = std::fs::remove_file(&aal5);
    assert_eq!(packets.len(), pdus.len(), "tshark reads every PDU");
    let (mut sds, mut quirks, mut bad) = (0, 0, Vec::new());
    let mut types: HashMap<String, usize> = HashMap::new();
    for (i, (p, r)) in packets.iter().zip(&pdus).enumerate() {
        let RecordKind::Aal5Pdu { pdu, .. } = &r.kind else {
            unreachable!()
        };
        let len = usize::from(u16::from_be_bytes([pdu[pdu.len() - 6], pdu[pdu.len() - 5]]));
        let sdu = &pdu[..len];
        if !p.protos.iter().any(|x| x == "sscop") {
            bad.push(format!("#{i}: no SSCOP: {:?}", p.protos));
            continue;
        }
        let e = p.errors();
        match q2931_of(sdu) {
            Some(msg) => {
                sds += 1;
                if !p.protos.iter().any(|x| x == "q2931") {
                    bad.push(format!("#{i}: an SD without Q.2931: {:?}", p.protos));
                    continue;
                }
                let t = p
                    .fields
                    .iter()
                    .find(|f| f.0 == "q2931.message_type")
                    .map_or("?".to_string(), |f| f.1.clone());
                *types.entry(t).or_default() += 1;
                if !e.is_empty() {
                    if wireshark_overreads(msg)
                        && e.iter()
                            .all(|x| x.contains("malformed") || x.contains("Malformed"))
                    {
                        quirks += 1;
                    } else {
                        bad.push(format!("#{i}: {e:?} on {msg:02x?}"));
                    }
                }
            }
            None => {
                if !e.is_empty() {
                    bad.push(format!("#{i}: SSCOP {e:?} on {sdu:02x?}"));
                }
            }
        }
    }
    eprintln!(
        "capture {}: {} SSCOP PDUs, {sds} Q.2931 messages {types:?}, {quirks} with the Wireshark 4.0 overread",
        pcap.display(),
        pdus.len()
    );
    assert!(bad.is_empty(), "tshark errors: {bad:#?}");
    assert!(sds >= 10, "calls' messages: {sds}");
}

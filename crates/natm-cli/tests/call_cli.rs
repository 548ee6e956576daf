//! `natm call` and `natm listen` as a user runs them, against the natm crate's fake hostd
//! (test support only: a thread speaking hostd's protocol, no network): exit statuses, the
//! one stderr line of a refusal, the JSON shapes. Through the real daemons these are the
//! lab's tests.

#[path = "../../natm/tests/fake_hostd/mod.rs"]
mod fake_hostd;

use std::process::{Command, Output, Stdio};

use fake_hostd::{FakeHostd, REFUSED};

fn natm(fake: &FakeHostd, args: &[&str]) -> Output {
    let dir = fake.socket().parent().unwrap();
    Command::new(env!("CARGO_BIN_EXE_natm"))
        .args(args)
        .arg("--dir")
        .arg(dir)
        .output()
        .unwrap()
}

const OTHER: &str = "47.0005.80ffe1000000f21a3599.0020481a3500.00";

#[test]
fn a_refused_call_exits_1_with_one_line_naming_the_cause() {
    let fake = FakeHostd::start("cli-refused");
    let out = natm(
        &fake,
        &["call", REFUSED, "--text", "hi", "--path", "daemon"],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.ends_with(
            "refused: cause 37 (user cell rate not available) at LPN: s2 p3: 1000 c/s free\n"
        ),
        "{err}"
    );
    assert!(err.starts_with("natm: call to 47.0005"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_bad_address_exits_2_naming_it() {
    let fake = FakeHostd::start("cli-bad");
    let out = natm(&fake, &["call", "47.nope", "--text", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("natm: \"47.nope\" is not an ATM address"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_call_sends_and_prints_its_vc_and_set_up_time() {
    let fake = FakeHostd::start("cli-call");
    let out = natm(
        &fake,
        &[
            "call", OTHER, "--text", "hello", "--path", "daemon", "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["vc"], "0.32768");
    assert_eq!(doc["setup_ns"], 1_500_000);
    assert_eq!(
        (doc["sdus"].as_u64(), doc["bytes"].as_u64()),
        (Some(1), Some(5))
    );
    let out = natm(
        &fake,
        &["call", OTHER, "--text", "hello", "--path", "daemon"],
    );
    let line = String::from_utf8(out.stdout).unwrap();
    assert!(line.contains("VC 0.32768, set-up 1.500 ms"), "{line}");
    // A file of more than one SDU, from standard input.
    let mut child = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args([
            "call", OTHER, "--input", "-", "--path", "daemon", "--json", "--dir",
        ])
        .arg(fake.socket().parent().unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &vec![7u8; 100_000]).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (doc["sdus"].as_u64(), doc["bytes"].as_u64()),
        (Some(2), Some(100_000))
    );
}

#[test]
fn listen_prints_the_call_and_its_sdus_echoes_them_and_ends_after_count_calls() {
    let fake = FakeHostd::start("cli-listen");
    let dir = fake.socket().parent().unwrap().to_path_buf();
    let listen = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args([
            "listen", "--count", "1", "--echo", "--path", "daemon", "--json",
        ])
        .arg("--dir")
        .arg(&dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The caller waits for the listener's registration: calls before it are echoed by the
    // fake instead of offered.
    let host = natm::Host::connect_path(fake.socket()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut vc = loop {
        let opts = natm::CallOptions::new().path(natm::DataPath::Daemon);
        let vc = host.call(&OTHER.parse().unwrap(), opts).unwrap();
        if vc.call().unwrap().vc.to_string() != "0.32768" {
            break vc;
        }
        assert!(std::time::Instant::now() < deadline, "no listener came");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    vc.send(b"hello\x01").unwrap();
    let mut buf = [0u8; 64];
    let n = vc
        .recv_timeout(&mut buf, std::time::Duration::from_secs(10))
        .unwrap();
    assert_eq!(&buf[..n], b"hello\x01", "echoed");
    drop(vc);
    let out = listen.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let events: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["listening", "call", "sdu", "released"]);
    assert_eq!(lines[1]["vc"], "0.32769");
    assert_eq!(lines[2]["length"], 6);
    assert_eq!(lines[2]["text"], "hello\\x01");
    assert_eq!(lines[3]["cause"]["value"], 16);
}

#[test]
fn perf_calls_prints_calls_per_s_and_the_set_up_quantiles_as_json() {
    let fake = FakeHostd::start("cli-perf-calls");
    let socket = fake.socket().display().to_string();
    let out = natm(
        &fake,
        &[
            "perf",
            "calls",
            "--client-host",
            &socket,
            "--server-host",
            &socket,
            "--count",
            "100",
            "--warmup",
            "10",
            "--depth",
            "2",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["calls"], 100);
    assert!(doc["calls_per_s"].as_f64().unwrap() > 0.0);
    for q in ["p50", "p90", "p99", "max"] {
        assert!(doc["setup_ns"][q].as_u64().unwrap() > 0, "{q}");
    }
    assert_eq!(
        doc["baseline"]["name"],
        "tcp connect+accept+close (loopback)"
    );
    // Without a lab and without the hosts named, it says what to do (exit 2).
    let out = natm(&fake, &["perf", "calls"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("name --client-host and --server-host"),
        "{err}"
    );
}

//! Switched VCs through the lab's real daemons (`natm lab up`): `natm listen` and `natm
//! call` between two hosts of one switch, the API's call and accept carrying SDUs
//! byte-exact, refusals at the caller with the cause and the switch's explanation,
//! `natm perf calls` and `natm perf rr --svc`.

mod common;
#[path = "support/lab.rs"]
mod lab;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{natm, stderr, stdout};
use lab::{Lab, exchange};
use natm::{Aesa, CallOptions, Error};
use serde_json::Value;

/// Host `name`'s address, as its daemon reports it.
fn address(lab: &Lab, name: &str) -> Aesa {
    lab.host(name)
        .status()
        .expect("status")
        .address
        .expect("lab hosts have addresses")
}

/// Waits until every host of the lab has its signalling up (SSCOP established).
fn signalling_up(lab: &Lab, hosts: &[&str]) {
    let end = std::time::Instant::now() + Duration::from_secs(20);
    for h in hosts {
        while !lab.host(h).status().expect("status").signalling_up {
            assert!(
                std::time::Instant::now() < end,
                "{h}: signalling never came up"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `natm listen --host HOST --count 1 --json` on `lab`, its output piped.
fn listen_once(lab: &Lab, host: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_natm"))
        .args([
            "listen",
            "--host",
            host,
            "--count",
            "1",
            "--json",
            "--dir",
            lab.arg(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("natm listen runs")
}

#[test]
fn listen_and_call_through_one_switch_and_the_api_carries_sdus_byte_exact() {
    let lab = Lab::up("svc-one", "oc3", None);
    signalling_up(&lab, &["h1", "h2"]);
    let h2 = address(&lab, "h2");

    // natm listen on h2, natm call from h1.
    let listen = listen_once(&lab, "h2");
    // natm listen registers its listener some time after it starts; until then h2 refuses
    // calls (cause 1, no listener), so the call is tried until one is set up.
    let h2_text = h2.to_string();
    let mut called = None;
    for _ in 0..100 {
        let o = natm(&[
            "call",
            "--host",
            "h1",
            &h2_text,
            "--text",
            "hello, SVC",
            "--json",
            "--dir",
            lab.arg(),
        ]);
        if o.status.success() {
            called = Some(o);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = called.expect("a call to natm listen was set up");
    let doc: Value = serde_json::from_str(&stdout(&o)).expect("call JSON");
    assert!(doc["vc"].as_str().unwrap().starts_with("0."), "{doc}");
    assert!(doc["setup_ns"].as_u64().unwrap() > 0);
    let out = listen.wait_with_output().expect("natm listen ends");
    assert!(
        out.status.success(),
        "listen: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one object per line"))
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"listening"));
    assert_eq!(kinds.last(), Some(&"released"));
    let call = events
        .iter()
        .find(|e| e["event"] == "call")
        .expect("a call line");
    assert_eq!(call["calling"], address(&lab, "h1").to_string());
    // The SDU came unless the caller's release overtook it (the switch flushes a released
    // connection's queued cells: seen once with a CBR call); when it came, it came whole.
    if let Some(sdu) = events.iter().find(|e| e["event"] == "sdu") {
        assert_eq!(sdu["text"], "hello, SVC");
    }

    // The API: a listener on h2, a call from h1, SDUs of every size both ways.
    let server = lab.host("h2");
    let listener = server.listen(Some(9)).expect("listen");
    let to = *listener.address();
    let accepting = std::thread::spawn(move || {
        let (vc, calling, _qos) = listener.accept().expect("accept");
        (vc, calling, listener)
    });
    let h1 = lab.host("h1");
    let mut a = h1
        .call(&to, CallOptions::new().qos("ubr".parse().unwrap()))
        .expect("call");
    let (mut b, calling, _listener) = accepting.join().unwrap();
    assert_eq!(calling, Some(address(&lab, "h1")));
    assert_eq!(a.call().unwrap().remote, Some(to));
    exchange(&mut a, &mut b, "switched VC");
    // The caller hangs up: the callee's next operation names the cause.
    drop(a);
    let mut buf = [0u8; 16];
    match b.recv_timeout(&mut buf, Duration::from_secs(10)) {
        Err(Error::Released(c)) => assert_eq!(c.value, 16, "{c}"),
        other => panic!("expected the release, got {other:?}"),
    }

    // perf calls between h1 and h2, and perf rr over a switched VC.
    let o = natm(&[
        "perf",
        "calls",
        "--count",
        "300",
        "--warmup",
        "20",
        "--depth",
        "4",
        "--json",
        "--dir",
        lab.arg(),
    ]);
    assert!(o.status.success(), "perf calls: {}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).expect("perf calls JSON");
    assert_eq!(
        (doc["calls"].as_u64(), doc["failures"].as_u64()),
        (Some(300), Some(0))
    );
    assert!(doc["calls_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(doc["switches"], 1);
    let (c, s) = (lab.socket("h1"), lab.socket("h2"));
    let o = natm(&[
        "perf",
        "rr",
        "--svc",
        "--count",
        "500",
        "--warmup",
        "10",
        "--no-baseline",
        "--json",
        "--client-host",
        c.to_str().unwrap(),
        "--server-host",
        s.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "perf rr --svc: {}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).expect("perf rr JSON");
    assert!(
        doc["results"][0]["name"]
            .as_str()
            .unwrap()
            .starts_with("natm SVC")
    );
}

#[test]
fn refusals_across_trunks_name_the_cause_and_the_trunk_and_bandwidth_comes_back() {
    let topo = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/svc.toml"
    ))
    .expect("examples/svc.toml");
    // Its own rates (10,000 cells/s trunks): no --rate, which would replace them.
    let lab = Lab(std::env::temp_dir().join(format!("natm-lab-{}-svc-three", std::process::id())));
    let _ = std::fs::remove_dir_all(&lab.0);
    let file = lab.0.with_extension("toml");
    std::fs::write(&file, topo).expect("write topology");
    let o = natm(&[
        "lab",
        "up",
        "--topology",
        file.to_str().unwrap(),
        "--dir",
        lab.arg(),
    ]);
    assert!(o.status.success(), "lab up: {}", stderr(&o));
    signalling_up(&lab, &["h1", "h4"]);
    let h4 = address(&lab, "h4").to_string();

    // More than the 10,000 cells/s trunk: refused at the caller, one line, exit 1.
    let o = natm(&[
        "call",
        "--host",
        "h1",
        &h4,
        "--qos",
        "cbr:pcr=20000",
        "--text",
        "x",
        "--dir",
        lab.arg(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("refused: cause 37 (user cell rate not available)"),
        "{err}"
    );
    assert!(err.contains("c/s free"), "{err}");

    // An address nobody routes: cause 1 or 3.
    let mut unknown = address(&lab, "h4");
    unknown.0[0] = 0x39;
    let o = natm(&[
        "call",
        "--host",
        "h1",
        &unknown.to_string(),
        "--text",
        "x",
        "--dir",
        lab.arg(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("cause 3 (") || err.contains("cause 1 ("),
        "{err}"
    );
    // Not an address at all: exit 2.
    let o = natm(&[
        "call",
        "--host",
        "h1",
        "47.zz",
        "--text",
        "x",
        "--dir",
        lab.arg(),
    ]);
    assert_eq!(o.status.code(), Some(2));

    // A CBR call that fits holds the trunk: a second identical one is refused with cause
    // 37 until the first is released, then it is set up.
    let h4_addr = address(&lab, "h4");
    let server = lab.host("h4");
    let listener = server.listen(None).expect("listen");
    let accepting = std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok(call) = listener.next_call(Some(Duration::from_secs(20))) {
            match listener.accept_call(call, &natm::ChannelOptions::default()) {
                Ok(vc) => held.push(vc),
                Err(_) => continue,
            }
            if held.len() == 2 {
                return held;
            }
        }
        held
    });
    let h1 = lab.host("h1");
    let cbr = || CallOptions::new().qos("cbr:pcr=6000".parse().unwrap());
    let first = h1.call(&h4_addr, cbr()).expect("the first call fits");
    match h1.call(&h4_addr, cbr()) {
        Err(Error::CallFailed(c)) => {
            assert_eq!(c.value, 37, "{c}");
            assert!(c.diagnostic.contains("c/s free"), "{c}");
        }
        other => panic!("expected the refusal, got {:?}", other.map(|_| ())),
    }
    drop(first);
    // The release frees the trunk's bandwidth as it passes each switch.
    let mut second = None;
    for _ in 0..100 {
        match h1.call(&h4_addr, cbr()) {
            Ok(vc) => {
                second = Some(vc);
                break;
            }
            Err(Error::CallFailed(c)) if c.value == 37 => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("{e}"),
        }
    }
    let _second = second.expect("bandwidth came back on release");
    assert_eq!(accepting.join().unwrap().len(), 2);

    // perf calls --farthest crosses the three switches.
    let o = natm(&[
        "perf",
        "calls",
        "--farthest",
        "--count",
        "100",
        "--warmup",
        "10",
        "--no-baseline",
        "--json",
        "--dir",
        lab.arg(),
    ]);
    assert!(o.status.success(), "perf calls: {}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(doc["switches"], 3);
    assert_eq!(doc["calls"], 100);
}

#[test]
fn natm_call_streams_standard_input_over_the_call_as_it_comes() {
    use std::io::{BufRead, BufReader, Write};
    let lab = Lab::up("svc-stream", "oc3", None);
    signalling_up(&lab, &["h1", "h2"]);
    let h2 = address(&lab, "h2").to_string();
    let mut listen = listen_once(&lab, "h2");
    // natm listen's lines, each waited for at most 10 s (a call that read its input to
    // the end first would leave the test waiting for the call until then).
    let (tx, rx) = std::sync::mpsc::channel();
    let out = listen.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let next_event = || -> Value {
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("natm listen printed nothing more within 10 s");
        serde_json::from_str(&line).expect("one object per line")
    };
    assert_eq!(next_event()["event"], "listening");
    let mut call = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args([
            "call",
            "--host",
            "h1",
            &h2,
            "--input",
            "-",
            "--path",
            "daemon",
            "--json",
            "--dir",
            lab.arg(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("natm call runs");
    let mut input = call.stdin.take().unwrap();
    input.write_all(b"first part").unwrap();
    input.flush().unwrap();
    // The call is up and the first part across while standard input is still open: read
    // to its end first, nothing would come until the close below.
    let e = next_event();
    assert_eq!(e["event"], "call", "{e}");
    let e = next_event();
    assert_eq!(
        (e["event"].as_str(), e["text"].as_str()),
        (Some("sdu"), Some("first part")),
        "{e}"
    );
    input.write_all(b"second part").unwrap();
    drop(input);
    let e = next_event();
    assert_eq!(
        (e["event"].as_str(), e["text"].as_str()),
        (Some("sdu"), Some("second part")),
        "{e}"
    );
    assert_eq!(next_event()["event"], "released");
    let o = call.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_str(&String::from_utf8_lossy(&o.stdout)).unwrap();
    assert_eq!(
        (doc["sdus"].as_u64(), doc["bytes"].as_u64()),
        (Some(2), Some(21)),
        "{doc}"
    );
    assert!(listen.wait().unwrap().success());
}

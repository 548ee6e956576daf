//! `natm perf transport` as a user runs it: a short run over the default lab (`natm lab
//! up` in a fresh directory) for each service, the JSON a script reads, and clear refusals
//! of bad options. No goodput figure is asserted (the machine is shared); what is asserted
//! is that what was sent is accounted for.

mod common;
#[path = "support/lab.rs"]
mod lab;

use common::{natm, stderr, stdout};
use lab::Lab;
use serde_json::Value;

fn perf(lab: &Lab, extra: &[&str]) -> std::process::Output {
    let (h1, h2) = (lab.socket("h1"), lab.socket("h2"));
    let mut args = vec![
        "perf",
        "transport",
        "--sender-host",
        h1.to_str().unwrap(),
        "--receiver-host",
        h2.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    natm(&args)
}

fn run_json(lab: &Lab, extra: &[&str]) -> Value {
    let mut all = extra.to_vec();
    all.push("--json");
    let out = perf(lab, &all);
    assert!(
        out.status.success(),
        "natm perf transport {all:?}: {}",
        stderr(&out)
    );
    serde_json::from_str(&stdout(&out)).expect("natm perf transport --json prints JSON")
}

/// natm's figures at one size: goodput, bytes that arrived, and their sum.
fn check_natm(m: &Value, size: u64, reliable: bool) {
    assert!(m["bits_per_sec"].as_f64().unwrap() > 0.0, "{m}");
    assert!(m["messages_per_sec"].as_f64().unwrap() > 0.0, "{m}");
    let sent = m["sent_messages"].as_u64().unwrap();
    let got = m["received_messages"].as_u64().unwrap();
    assert!(got > 0 && got <= sent, "{m}");
    assert_eq!(m["received_bytes"].as_u64().unwrap(), got * size, "{m}");
    assert!(m["tpdus_sent"].as_u64().unwrap() >= sent, "{m}");
    assert!(m["resends"].as_u64().unwrap() >= m["timeout_resends"].as_u64().unwrap());
    if reliable {
        assert_eq!(got, sent, "reliable delivers everything: {m}");
        assert_eq!(m["lost_messages"], 0, "{m}");
        assert!(m["srtt_ms"].as_f64().unwrap() > 0.0, "{m}");
    }
    let expect = m["received_bytes"].as_f64().unwrap() * 8.0 / m["seconds"].as_f64().unwrap();
    assert!(
        (m["bits_per_sec"].as_f64().unwrap() / expect - 1.0).abs() < 1e-9,
        "{m}"
    );
}

#[test]
fn a_short_run_over_the_default_lab_reports_goodput_and_bad_options_exit_2() {
    let lab = Lab::up("perf-transport", "oc3", None);

    // Reliable, one size, with the TCP baseline.
    let v = run_json(
        &lab,
        &["--service", "reliable", "--size", "4096", "--count", "200"],
    );
    assert_eq!(v["service"], "reliable");
    assert_eq!(v["vc"], "0.0.100");
    assert_eq!(v["budget"], serde_json::json!({ "count": 200 }));
    assert!(
        v["half_power"].is_null(),
        "one size has no half-power point"
    );
    let sizes = v["sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), 1);
    assert_eq!(sizes[0]["size"], 4096);
    let m = &sizes[0]["natm"];
    check_natm(m, 4096, true);
    assert_eq!(m["sent_messages"], 200);
    let tcp = &sizes[0]["tcp"];
    assert_eq!(tcp["messages"], 200, "{tcp}");
    assert_eq!(tcp["bytes"], 200 * 4096, "{tcp}");
    assert!(tcp["bits_per_sec"].as_f64().unwrap() > 0.0, "{tcp}");
    assert!(sizes[0]["ratio"].as_f64().unwrap() > 0.0);

    // Best effort and guaranteed, no baseline, on other PVCs of the lab.
    for (vc, service) in [("0.101", "best-effort"), ("0.102", "guaranteed:100000")] {
        let v = run_json(
            &lab,
            &[
                "--service",
                service,
                "--vc",
                vc,
                "--size",
                "1500",
                "--count",
                "100",
                "--no-baseline",
            ],
        );
        assert_eq!(v["service"], service);
        let s = &v["sizes"][0];
        check_natm(&s["natm"], 1500, false);
        assert!(s["tcp"].is_null() && s["ratio"].is_null(), "{s}");
    }

    // The table: a line per size and the half-power point of a sweep. Two sizes of the
    // sweep's are enough to check the line; the whole sweep is the default.
    let out = perf(
        &lab,
        &[
            "--service",
            "reliable",
            "--vc",
            "0.103",
            "--count",
            "20",
            "--no-baseline",
        ],
    );
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        text.starts_with("natm perf transport: reliable channel on VC 0.0.103"),
        "{text}"
    );
    for size in ["64", "2048", "81920"] {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().next() == Some(size)),
            "{text}"
        );
    }
    assert!(
        text.contains("half-power point (half the largest size's goodput): natm "),
        "{text}"
    );

    // The sweep's JSON: the seed's sizes, each accounted for, and natm's half-power point
    // within them.
    let v = run_json(
        &lab,
        &[
            "--service",
            "reliable",
            "--vc",
            "0.104",
            "--sweep",
            "--count",
            "20",
            "--no-baseline",
        ],
    );
    let sizes: Vec<u64> = v["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let size = s["size"].as_u64().unwrap();
            check_natm(&s["natm"], size, true);
            size
        })
        .collect();
    assert_eq!(sizes, [64, 256, 1024, 2048, 4096, 8192, 32_768, 81_920]);
    let h = &v["half_power"]["natm"];
    let bytes = h["bytes"].as_f64().unwrap();
    assert!((64.0..=81_920.0).contains(&bytes), "{h}");
    assert_eq!(h["at_smallest"].as_bool().unwrap(), bytes == 64.0, "{h}");
    assert!(v["half_power"]["tcp"].is_null());

    // Bad options: exit 2, naming the option.
    for (args, what) in [
        (vec!["--service", "fast"], "--service"),
        (vec!["--service", "guaranteed:0"], "--service"),
        (vec!["--service", "reliable", "--size", "0"], "--size"),
        (vec!["--service", "reliable", "--size", "2000000"], "--size"),
        (vec!["--service", "reliable", "--count", "0"], "--count"),
        (vec!["--service", "reliable", "--seconds", "0"], "--seconds"),
        (vec!["--service", "reliable", "--vc", "x"], "--vc"),
        (vec!["--service", "reliable", "--qos", "nope"], "--qos"),
        (
            vec!["--service", "reliable", "--path", "teleport"],
            "--path",
        ),
        (
            vec!["--service", "reliable", "--size", "64", "--sweep"],
            "--sweep",
        ),
        (
            vec!["--service", "reliable", "--count", "5", "--seconds", "1"],
            "--seconds",
        ),
    ] {
        let out = perf(&lab, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(what), "{args:?}: {}", stderr(&out));
    }
}

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

/// A spread's median, least and greatest of the runs' goodputs.
fn check_spread(spread: &Value, runs: &[Value]) {
    let mut v: Vec<f64> = runs
        .iter()
        .map(|r| r["bits_per_sec"].as_f64().unwrap())
        .collect();
    v.sort_by(f64::total_cmp);
    assert_eq!(spread["min"].as_f64().unwrap(), v[0], "{spread}");
    assert_eq!(spread["max"].as_f64().unwrap(), v[v.len() - 1], "{spread}");
    let m = spread["median"].as_f64().unwrap();
    assert!(m >= v[0] && m <= v[v.len() - 1], "{spread}");
}

#[test]
fn a_short_run_over_the_default_lab_reports_goodput_and_bad_options_exit_2() {
    let lab = Lab::up("perf-transport", "oc3", None);

    // Reliable, one size, two runs, with the TCP baseline.
    let v = run_json(
        &lab,
        &[
            "--service",
            "reliable",
            "--size",
            "4096",
            "--count",
            "200",
            "--runs",
            "2",
        ],
    );
    assert_eq!(v["service"], "reliable");
    assert_eq!(v["vc"], "0.0.100");
    assert_eq!(v["budget"], serde_json::json!({ "count": 200 }));
    assert_eq!(v["runs"], 2);
    assert_eq!(v["line_rate"], "oc3", "read from the lab's hostd");
    assert_eq!(v["line_rate_from"], "lab");
    assert!(v["impair"].is_null());
    assert!(
        v["half_power"].is_null(),
        "one size has no half-power point"
    );
    let sizes = v["sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), 1);
    assert_eq!(sizes[0]["size"], 4096);
    let runs = sizes[0]["natm_runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for m in runs {
        check_natm(m, 4096, true);
        assert_eq!(m["sent_messages"], 200);
    }
    check_spread(&sizes[0]["natm"], runs);
    let tcp_runs = sizes[0]["tcp_runs"].as_array().unwrap();
    assert_eq!(tcp_runs.len(), 2);
    for tcp in tcp_runs {
        assert_eq!(tcp["messages"], 200, "{tcp}");
        assert_eq!(tcp["bytes"], 200 * 4096, "{tcp}");
        assert!(tcp["bits_per_sec"].as_f64().unwrap() > 0.0, "{tcp}");
    }
    check_spread(&sizes[0]["tcp"], tcp_runs);
    assert!(sizes[0]["ratio"].as_f64().unwrap() > 0.0);
    // 4 KiB in one TPDU: 12 + 4096 + 8 bytes, 86 cells at OC-3c's 353,207.5 cells/s.
    let ceiling = sizes[0]["ceiling_bits_per_sec"].as_f64().unwrap();
    let expect = 4096.0 * 8.0 * 149_760_000.0 / 424.0 / 86.0;
    assert!((ceiling / expect - 1.0).abs() < 1e-9, "{ceiling}");
    let fit = sizes[0]["seed_fit_bits_per_sec"].as_f64().unwrap();
    assert!((fit - 54e6 * 4096.0 / 6296.0).abs() < 1.0, "{fit}");
    assert!(v["seed"]["source"].as_str().unwrap().contains("issue 25"));

    // Best effort and guaranteed, no baseline, on other PVCs of the lab; guaranteed with
    // a bulk flow beside it on 0.103.
    for (vc, service, bulk) in [
        ("0.101", "best-effort", false),
        ("0.102", "guaranteed:100000", true),
    ] {
        let mut args = vec![
            "--service",
            service,
            "--vc",
            vc,
            "--size",
            "1500",
            "--count",
            "100",
            "--runs",
            "1",
            "--no-baseline",
        ];
        if bulk {
            // On the default path (auto: lanes on this lab): switchd shares a port's input
            // line among its lanes, so the guaranteed channel's hello gets in beside the
            // bulk flow's lane.
            args.push("--with-bulk");
        }
        let v = run_json(&lab, &args);
        assert_eq!(v["service"], service);
        let s = &v["sizes"][0];
        let m = &s["natm_runs"][0];
        check_natm(m, 1500, false);
        assert!(s["tcp"].is_null() && s["ratio"].is_null(), "{s}");
        if !bulk {
            assert!(s["rate"].is_null() && s["bulk"].is_null(), "{s}");
            continue;
        }
        assert_eq!(v["bulk_vc"], "0.0.103");
        // The rate: 1,500 B in one TPDU is 32 cells a message.
        let rate = &s["rate"];
        assert_eq!(rate["requested"], 100_000, "{rate}");
        let got = m["received_messages"].as_f64().unwrap();
        let achieved = (got - 1.0) * 32.0 / m["arrival_seconds"].as_f64().unwrap();
        let median = rate["achieved"]["median"].as_f64().unwrap();
        assert!((median / achieved - 1.0).abs() < 1e-9, "{rate} {m}");
        let dev = rate["deviation_percent"]["median"].as_f64().unwrap();
        assert!(
            (dev - (achieved / 1e5 - 1.0) * 100.0).abs() < 1e-6,
            "{rate}"
        );
        // The bulk flow's goodput is its arrivals over the measured run.
        let b = &m["bulk"];
        assert_eq!(b["seconds"], m["seconds"], "{b}");
        let bits = b["messages"].as_f64().unwrap() * 8192.0 * 8.0 / b["seconds"].as_f64().unwrap();
        assert!(
            (b["bits_per_sec"].as_f64().unwrap() - bits).abs() < 1e-6,
            "{b}"
        );
        assert_eq!(s["bulk"]["median"], b["bits_per_sec"], "{s}");
    }

    // The table: a line per size and the half-power point of a sweep. Two sizes of the
    // sweep's are enough to check the line; the whole sweep is the default.
    let png = lab.0.join("transport.png");
    let out = perf(
        &lab,
        &[
            "--service",
            "reliable",
            "--vc",
            "0.103",
            "--count",
            "20",
            "--runs",
            "1",
            "--no-baseline",
            "--plot",
            png.to_str().unwrap(),
        ],
    );
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        text.starts_with("natm perf transport: reliable channel on VC 0.0.103"),
        "{text}"
    );
    let bytes = std::fs::read(&png).expect("--plot writes its file");
    assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");
    assert!(text.contains(&format!("plot: {}", png.display())), "{text}");
    for size in ["64", "2048", "81920"] {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().next() == Some(size)),
            "{text}"
        );
    }
    assert!(
        text.contains("half-power point (half the largest size's median goodput): natm "),
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
            "--runs",
            "1",
            "--no-baseline",
        ],
    );
    let sizes: Vec<u64> = v["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let size = s["size"].as_u64().unwrap();
            check_natm(&s["natm_runs"][0], size, true);
            size
        })
        .collect();
    assert_eq!(sizes, [64, 256, 1024, 2048, 4096, 8192, 32_768, 81_920]);
    let h = &v["half_power"]["natm"];
    let bytes = h["bytes"].as_f64().unwrap();
    assert!((64.0..=81_920.0).contains(&bytes), "{h}");
    assert_eq!(h["at_smallest"].as_bool().unwrap(), bytes == 64.0, "{h}");
    assert!(v["half_power"]["tcp"].is_null());

    // The 8-byte round trip, raw and over a channel, on one PVC.
    let v = run_json(
        &lab,
        &["--rr", "--vc", "0.105", "--count", "50", "--runs", "1"],
    );
    assert_eq!(v["size"], 8);
    for kind in ["raw", "channel"] {
        let k = &v[kind];
        assert_eq!(
            k["count"], 50,
            "--count exchanges recorded after the warm-up: {k}"
        );
        let (p50, p99) = (
            k["p50_us"]["median"].as_f64().unwrap(),
            k["p99_us"]["median"].as_f64().unwrap(),
        );
        assert!(p50 > 0.0 && p99 >= p50, "{k}");
    }
    assert_eq!(v["channel"]["lost"], 0);
    let ratio = v["ratio_p50"].as_f64().unwrap();
    let expect = v["channel"]["p50_us"]["median"].as_f64().unwrap()
        / v["raw"]["p50_us"]["median"].as_f64().unwrap();
    assert!((ratio - expect).abs() < 1e-9, "{v}");

    // Impaired: 1 % cell loss on both hosts' links for one reliable run, on the direct
    // path (the lab's default is the lane, which bypasses hostd's link); everything still
    // arrives, some TPDUs were resent, and the links are clear again afterwards. The line
    // rate given overrides the lab's.
    let v = run_json(
        &lab,
        &[
            "--service",
            "reliable",
            "--vc",
            "0.106",
            "--size",
            "1500",
            "--count",
            "200",
            "--runs",
            "1",
            "--no-baseline",
            "--impair",
            "loss=1%,seed=5",
            "--line-rate",
            "100000",
        ],
    );
    assert_eq!(v["impair"], "loss=0.01,seed=5", "{v}");
    assert_eq!(v["path"], "direct");
    assert_eq!(
        (&v["line_rate"], &v["line_rate_from"]),
        (&"100000".into(), &"--line-rate".into())
    );
    let s = &v["sizes"][0];
    let m = &s["natm_runs"][0];
    check_natm(m, 1500, true);
    assert!(m["resends"].as_u64().unwrap() > 0, "1 % cell loss: {m}");
    assert_eq!(s["resends"], m["resends"]);
    let tpdu = m["tpdu_size"].as_u64().unwrap();
    assert!(tpdu > 0 && tpdu <= 8192, "{m}");
    assert_eq!(s["tpdu_size_reached"], serde_json::json!([tpdu, tpdu]));
    // 1,500 B in one TPDU: 32 cells at 100,000 cells/s.
    let ceiling = s["ceiling_bits_per_sec"].as_f64().unwrap();
    assert!(
        (ceiling - 1500.0 * 8.0 * 100_000.0 / 32.0).abs() < 1e-6,
        "{ceiling}"
    );
    for h in ["h1", "h2"] {
        let st = lab.host(h).status().unwrap();
        assert_eq!(st.link.impair, "", "{h}'s impairment cleared after the run");
        assert_eq!(st.link.rate, "oc3");
    }
    // A run that fails (the VC's QoS above the link's rate) clears the impairment too.
    let out = perf(
        &lab,
        &[
            "--service",
            "reliable",
            "--vc",
            "0.107",
            "--qos",
            "cbr:pcr=1000000",
            "--size",
            "1500",
            "--count",
            "10",
            "--runs",
            "1",
            "--no-baseline",
            "--impair",
            "loss=1%",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    for h in ["h1", "h2"] {
        assert_eq!(lab.host(h).status().unwrap().link.impair, "", "{h}");
    }
    // The table names the impairment and the TPDU size column.
    let out = perf(
        &lab,
        &[
            "--service",
            "best-effort",
            "--vc",
            "0.108",
            "--size",
            "1500",
            "--count",
            "50",
            "--runs",
            "1",
            "--no-baseline",
            "--impair",
            "burst=1%/4",
        ],
    );
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("impaired: both hosts' links"), "{text}");
    assert!(text.contains("burst="), "{text}");
    assert!(text.contains("tpdu"), "{text}");

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
        (vec!["--service", "reliable", "--runs", "0"], "--runs"),
        (
            vec!["--service", "reliable", "--line-rate", "oc1"],
            "--line-rate",
        ),
        (
            vec!["--service", "reliable", "--impair", "los=1%"],
            "--impair",
        ),
        (
            vec!["--service", "reliable", "--impair", "loss=200%"],
            "--impair",
        ),
        (
            vec![
                "--service",
                "reliable",
                "--impair",
                "loss=1%",
                "--path",
                "lane",
            ],
            "--path lane",
        ),
        (vec!["--rr", "--impair", "loss=1%"], "--impair"),
        (
            vec!["--service", "reliable", "--bulk-vc", "0.101"],
            "--with-bulk",
        ),
        (
            vec!["--service", "reliable", "--with-bulk", "--bulk-vc", "0.100"],
            "--bulk-vc",
        ),
        (
            vec!["--service", "reliable", "--with-bulk", "--bulk-vc", "y"],
            "--bulk-vc",
        ),
        (vec!["--rr", "--size", "64"], "--size"),
        (vec!["--rr", "--service", "reliable"], "--service"),
        (vec!["--rr", "--count", "0"], "--count"),
        (vec![], "--service"),
    ] {
        let out = perf(&lab, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(what), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn the_ceiling_follows_the_labs_line_rate() {
    let lab = Lab::up("perf-transport-unlimited", "unlimited", None);
    let v = run_json(
        &lab,
        &[
            "--service",
            "reliable",
            "--size",
            "4096",
            "--count",
            "50",
            "--runs",
            "1",
            "--no-baseline",
        ],
    );
    assert_eq!(v["line_rate"], "unlimited", "{v}");
    assert_eq!(v["line_rate_from"], "lab");
    let s = &v["sizes"][0];
    check_natm(&s["natm_runs"][0], 4096, true);
    assert!(
        s["ceiling_bits_per_sec"].is_null() && s["of_ceiling"].is_null(),
        "{s}"
    );
    let out = perf(
        &lab,
        &[
            "--service",
            "reliable",
            "--vc",
            "0.101",
            "--size",
            "4096",
            "--count",
            "20",
            "--runs",
            "1",
            "--no-baseline",
        ],
    );
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        text.contains("no AAL5 ceiling: the link's line rate is unlimited"),
        "{text}"
    );
    // The override still gives one.
    let v = run_json(
        &lab,
        &[
            "--service",
            "reliable",
            "--vc",
            "0.102",
            "--size",
            "4096",
            "--count",
            "20",
            "--runs",
            "1",
            "--no-baseline",
            "--line-rate",
            "oc12",
        ],
    );
    assert_eq!(v["line_rate"], "oc12");
    assert!(v["sizes"][0]["of_ceiling"].as_f64().unwrap() > 0.0);
}

//! `natm perf rr` and `natm perf baseline KIND rr` as a user runs them: tiny runs over the
//! kernel transports, the JSON a script reads, pipelining, and clear refusals of bad
//! options. No timing is asserted (the machine is shared); what is asserted is that every
//! transaction asked for is recorded and that the quantiles are consistent.

mod common;
#[path = "support/host_pair.rs"]
mod host_pair;

use common::{natm, stderr, stdout};
use serde_json::Value;

fn run_json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = natm(&all);
    assert!(out.status.success(), "natm {all:?}: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("natm perf rr --json prints JSON")
}

/// The quantiles of one result are ordered and its rate is positive.
fn check_result(r: &Value, count: Option<u64>) {
    let l = &r["latency"];
    let q = |k: &str| l[k].as_u64().unwrap_or_else(|| panic!("{k} in {r}"));
    assert!(q("min_ns") > 0, "{r}");
    assert!(q("min_ns") <= q("p50_ns"), "{r}");
    assert!(q("p50_ns") <= q("p90_ns"), "{r}");
    assert!(q("p90_ns") <= q("p99_ns"), "{r}");
    assert!(q("p99_ns") <= q("p999_ns"), "{r}");
    assert!(q("p999_ns") <= q("max_ns"), "{r}");
    assert!(r["transactions_per_sec"].as_f64().unwrap() > 0.0, "{r}");
    assert!(r["seconds"].as_f64().unwrap() > 0.0, "{r}");
    assert_eq!(
        r["lost"], 0,
        "nothing is lost on loopback at this depth: {r}"
    );
    if let Some(c) = count {
        assert_eq!(q("count"), c, "{r}");
    }
}

#[test]
fn a_udp_baseline_records_every_transaction_asked_for() {
    let v = run_json(&[
        "perf", "baseline", "udp", "rr", "--size", "32", "--count", "500", "--warmup", "20",
    ]);
    assert_eq!(v["size"], 32);
    assert_eq!(v["response_size"], 32);
    assert_eq!(v["depth"], 1);
    assert_eq!(v["count"], 500);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["kind"], "udp");
    check_result(&results[0], Some(500));
    assert!(v["ratios"].as_array().unwrap().is_empty());
}

#[test]
fn pipelined_requests_over_every_kernel_transport_with_ratios() {
    let v = run_json(&[
        "perf",
        "rr",
        "--kind",
        "tcp",
        "--baseline",
        "udp,unix",
        "--count",
        "400",
        "--depth",
        "8",
        "--warmup",
        "16",
    ]);
    assert_eq!(v["depth"], 8);
    let results = v["results"].as_array().unwrap();
    let kinds: Vec<&str> = results
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["tcp", "udp", "unix"]);
    for r in results {
        check_result(r, Some(400));
    }
    let ratios = v["ratios"].as_array().unwrap();
    assert_eq!(ratios.len(), 2);
    for (x, b) in ratios.iter().zip(["udp", "unix"]) {
        assert_eq!(x["baseline"], b);
        assert!(x["rate"].as_f64().unwrap() > 0.0, "{x}");
        assert!(x["p50"].as_f64().unwrap() > 0.0, "{x}");
    }
}

#[test]
fn responses_of_another_size_and_a_timed_run() {
    let v = run_json(&[
        "perf",
        "baseline",
        "unix",
        "rr",
        "--size",
        "16",
        "--response-size",
        "3000",
        "--seconds",
        "0.2",
        "--warmup",
        "0",
    ]);
    assert_eq!(v["response_size"], 3000);
    assert!(v["count"].is_null());
    let r = &v["results"][0];
    check_result(r, None);
    assert!(r["latency"]["count"].as_u64().unwrap() > 0);
    // Rounds end on the clock: the recorded time is the time asked for, give or take
    // the last round trip.
    let s = r["seconds"].as_f64().unwrap();
    assert!((0.19..1.0).contains(&s), "{s}");
}

#[test]
fn a_request_shorter_than_its_sequence_number_still_works() {
    let v = run_json(&[
        "perf", "baseline", "tcp", "rr", "--size", "1", "--count", "200", "--depth", "4",
        "--warmup", "0",
    ]);
    check_result(&v["results"][0], Some(200));
}

#[test]
fn the_table_names_each_transport_and_its_ratio() {
    let out = natm(&[
        "perf",
        "rr",
        "--kind",
        "unix",
        "--baseline",
        "tcp",
        "--count",
        "100",
        "--warmup",
        "0",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("p99.9"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("unix ")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("tcp ")), "{text}");
    assert!(text.contains("unix ÷ tcp: p50 "), "{text}");
}

#[test]
fn same_core_puts_client_and_server_on_one_cpu() {
    let v = run_json(&[
        "perf",
        "baseline",
        "tcp",
        "rr",
        "--same-core",
        "--count",
        "100",
        "--warmup",
        "0",
    ]);
    let p = &v["placement"];
    assert_eq!(p["client"], p["server"], "{p}");
    check_result(&v["results"][0], Some(100));
}

#[test]
fn bad_options_exit_2_and_name_what_was_wrong() {
    for (args, needle) in [
        (
            &["perf", "baseline", "udp", "rr", "--size", "0"][..],
            "--size 0",
        ),
        (
            &["perf", "baseline", "udp", "rr", "--size", "70000"][..],
            "--size 70000: a UDP datagram carries at most 65507",
        ),
        (
            &["perf", "baseline", "udp", "rr", "--response-size", "65508"][..],
            "--response-size 65508",
        ),
        (&["perf", "rr", "--kind", "atm"][..], "--kind \"atm\""),
        (
            &["perf", "rr", "--kind", "udp", "--baseline", "sctp"][..],
            "--baseline \"sctp\"",
        ),
        (
            &["perf", "baseline", "natm", "rr"][..],
            "transport \"natm\"",
        ),
        (
            &["perf", "rr", "--kind", "udp", "--depth", "0"][..],
            "--depth 0",
        ),
        (
            &["perf", "rr", "--kind", "udp", "--count", "0"][..],
            "--count 0",
        ),
        (
            &["perf", "rr", "--kind", "udp", "--seconds", "0"][..],
            "--seconds 0",
        ),
        (&["perf", "rr", "--kind", "udp", "--vc", "0.x"][..], "--vc"),
        (
            &["perf", "rr", "--kind", "udp", "--qos", "cbx"][..],
            "--qos",
        ),
        (
            &["perf", "rr", "--kind", "udp", "--mode", "spin"][..],
            "--mode \"spin\"",
        ),
        (
            &["perf", "rr", "--kind", "udp", "--path", "x"][..],
            "--path \"x\"",
        ),
        (
            &["perf", "rr", "--kind", "udp", "--cpu-client", "100000"][..],
            "--cpu-client 100000",
        ),
    ] {
        let out = natm(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn natm_between_two_hosts_beside_the_udp_baseline() {
    let lab = host_pair::Lab::new("rr");
    let (h1, h2) = (lab.socket(0), lab.socket(1));
    // Every wait mode on the direct path (signal mode needs each VC opened on the thread
    // that waits on it), and the daemon path.
    for (mode, path) in [
        ("adaptive", "direct"),
        ("poll", "direct"),
        ("eventfd", "direct"),
        ("signal", "direct"),
        ("adaptive", "daemon"),
    ] {
        let v = run_json(&[
            "perf",
            "rr",
            "--client-host",
            &h1,
            "--server-host",
            &h2,
            "--mode",
            mode,
            "--path",
            path,
            "--baseline",
            "udp",
            "--count",
            "200",
            "--depth",
            "2",
            "--warmup",
            "10",
        ]);
        let results = v["results"].as_array().unwrap();
        assert_eq!(results[0]["kind"], "natm");
        assert_eq!(results[1]["kind"], "udp");
        check_result(&results[0], Some(200));
        check_result(&results[1], Some(200));
        assert!(v["ratios"][0]["rate"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn natm_without_a_daemon_fails_and_says_where_it_looked() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no-such-lab");
    let sock = dir.join("h1.sock");
    let out = natm(&[
        "perf",
        "rr",
        "--client-host",
        sock.to_str().unwrap(),
        "--count",
        "10",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("no natm host daemon at"), "{err}");
    assert!(err.contains("h1.sock"), "{err}");
}

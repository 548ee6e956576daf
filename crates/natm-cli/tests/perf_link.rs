//! `natm perf link` as a user runs it: short runs over every kind of link, the JSON a
//! script reads, and clear refusals of bad options. No timing is asserted (the machine is
//! shared); what is asserted is that SDUs arrive whole, in order, and are accounted for.

mod common;

use common::{natm, stderr, stdout};
use serde_json::Value;

fn run_json(args: &[&str]) -> Value {
    let mut all = vec!["perf", "link", "--json", "--seconds", "0.2", "--runs", "1"];
    all.extend_from_slice(args);
    let out = natm(&all);
    assert!(out.status.success(), "natm {all:?}: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("natm perf link --json prints JSON")
}

fn runs(v: &Value) -> Vec<&Value> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["runs"].as_array().unwrap())
        .collect()
}

#[test]
fn shm_delivers_every_sdu_in_order_beside_the_tcp_baseline() {
    let v = run_json(&["--kind", "shm", "--size", "40,8192,65535"]);
    assert_eq!(v["kind"], "shm");
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    for (r, (size, cells)) in results.iter().zip([(40, 1), (8192, 171), (65535, 1366)]) {
        assert_eq!(r["size"], size);
        assert_eq!(r["cells_per_sdu"], cells);
        assert!(r["natm_bits_per_sec"]["median"].as_f64().unwrap() > 0.0);
        assert!(r["tcp_bits_per_sec"]["median"].as_f64().unwrap() > 0.0);
        assert!(r["ratio"]["median"].as_f64().unwrap() > 0.0);
        assert!(
            r["ceiling_bits_per_sec"].is_null(),
            "unlimited has no ceiling"
        );
    }
    for run in runs(&v) {
        assert!(run["sdus"].as_u64().unwrap() > 0);
        // A ring loses no cell and reorders nothing. ATM has no flow control between
        // applications: a receiver that falls behind runs out of posted buffers and the
        // adapter drops whole frames, each one counted (a debug build does, at 40 bytes).
        assert_eq!(run["misdelivered"], 0, "{run}");
        assert_eq!(run["drops_crc"], 0, "{run}");
        assert_eq!(run["drops_other"], 0, "{run}");
        assert_eq!(run["lost_sdus"], run["drops_no_buffer"], "{run}");
    }
}

#[test]
fn an_emulated_line_reports_its_ceiling_and_impairment_losses() {
    let v = run_json(&[
        "--kind",
        "shm",
        "--size",
        "1500",
        "--rate",
        "200000",
        "--impair",
        "loss=2%,seed=3",
        "--no-baseline",
    ]);
    assert_eq!(v["impair"], "loss=0.02,seed=3");
    let r = &v["results"][0];
    // 200,000 cells/s × 1500 bytes × 8 / 32 cells per SDU.
    assert_eq!(r["ceiling_bits_per_sec"].as_f64().unwrap(), 75e6);
    assert!(r["tcp_bits_per_sec"].is_null());
    let run = runs(&v)[0];
    // 2% of 32 cells: about half the SDUs lose a cell; the receiver drops them (CRC or
    // length), or they vanish whole when their last cell is lost with the next one's.
    let lost = run["lost_sdus"].as_u64().unwrap();
    assert!(lost > 0, "{run}");
    assert_eq!(run["misdelivered"], 0, "{run}");
}

#[test]
fn udp_and_atmtcp_links_carry_sdus() {
    for kind in ["udp", "tcp"] {
        let v = run_json(&["--kind", kind, "--size", "1500", "--no-baseline"]);
        assert_eq!(v["kind"], kind);
        let run = runs(&v)[0];
        assert!(run["sdus"].as_u64().unwrap() > 0, "{kind}: {run}");
        assert_eq!(run["misdelivered"], 0, "{kind}: {run}");
    }
}

#[test]
fn bad_options_exit_2_and_name_what_was_wrong() {
    for (args, needle) in [
        (&["--kind", "atm"][..], "--kind \"atm\""),
        (&["--size", "0"][..], "--size 0"),
        (&["--size", "70000"][..], "--size 70000"),
        (&["--size", "8k"][..], "--size \"8k\""),
        (&["--rate", "fast"][..], "--rate \"fast\""),
        (&["--impair", "loss=200%"][..], "--impair"),
        (
            &["--kind", "tcp", "--impair", "loss=1%"][..],
            "atmtcp carries whole SDUs",
        ),
        (&["--seconds", "0"][..], "--seconds"),
        (&["--runs", "0"][..], "--runs 0"),
    ] {
        let mut all = vec!["perf", "link"];
        all.extend_from_slice(args);
        let out = natm(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

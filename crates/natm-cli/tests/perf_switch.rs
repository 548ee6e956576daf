//! `natm perf switch` as a user runs it: a tiny run reports every measurement of every
//! run, the summary agrees with the runs, and bad options are refused by name. No rate is
//! asserted (the machine is shared and the build may be a debug one).

mod common;

use common::{natm, stderr, stdout};
use serde_json::Value;

#[test]
fn a_tiny_run_reports_forwarding_beside_the_bare_rings() {
    let out = natm(&[
        "perf", "switch", "--cells", "20000", "--runs", "3", "--rounds", "3", "--batch", "32",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(v["cells"], 20000);
    assert_eq!(v["batch"], 32);
    assert_eq!(v["goal_cells_per_sec"], 23.6e6);
    let runs = v["per_run"].as_array().expect("per_run");
    assert_eq!(runs.len(), 3);
    let mut fwd = Vec::new();
    for r in runs {
        for what in ["relay", "forwarding"] {
            let e = &r[what];
            assert!(e["cells_per_sec"].as_f64().unwrap() > 0.0, "{r}");
            assert!(e["seconds"].as_f64().unwrap() > 0.0, "{r}");
            let (p50, p90) = (
                e["interval_p50"].as_f64().unwrap(),
                e["interval_p90"].as_f64().unwrap(),
            );
            assert!(0.0 <= p50 && p50 <= p90, "{r}");
            if let Some(w) = e["middle_waited"].as_f64() {
                assert!((0.0..=1.5).contains(&w), "a share of the run: {r}");
            }
        }
        assert_eq!(r["relay"]["dropped"], 0, "the relay never drops: {r}");
        assert!(r["capacity"].as_f64().unwrap() > 0.0, "{r}");
        let ratio = r["forwarding"]["cells_per_sec"].as_f64().unwrap()
            / r["relay"]["cells_per_sec"].as_f64().unwrap();
        assert!((r["ratio"].as_f64().unwrap() - ratio).abs() < 1e-9, "{r}");
        fwd.push(r["forwarding"]["cells_per_sec"].as_f64().unwrap());
    }
    let quiet = v["quiet_runs"].as_u64().unwrap();
    assert!(quiet <= 3);
    assert_eq!(v["quiet_forwarding"].is_null(), quiet == 0, "{v}");
    assert_eq!(v["quiet_relay"].is_null(), quiet == 0, "{v}");
    fwd.sort_by(f64::total_cmp);
    let s = &v["forwarding"];
    assert_eq!(s["median"].as_f64().unwrap(), fwd[1]);
    assert_eq!(s["min"].as_f64().unwrap(), fwd[0]);
    assert_eq!(s["max"].as_f64().unwrap(), fwd[2]);
    assert_eq!(
        v["forwarding_meets_goal"].as_bool().unwrap(),
        fwd[1] >= 23.6e6
    );
}

#[test]
fn the_table_names_the_baseline_and_the_goal() {
    let out = natm(&[
        "perf", "switch", "--cells", "5000", "--runs", "1", "--rounds", "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "shm ring relay",
        "switchd forwarding",
        "loop alone",
        "23.6",
        "waited",
    ] {
        assert!(text.contains(needle), "{needle:?} in\n{text}");
    }
}

#[test]
fn bad_options_are_refused_by_name() {
    for (args, name) in [
        (&["--batch", "0"][..], "--batch"),
        (&["--batch", "20000"][..], "--batch"),
        (&["--cells", "0"][..], "--cells"),
        (&["--runs", "0"][..], "--runs"),
        (&["--rounds", "1"][..], "--rounds"),
    ] {
        let mut all = vec!["perf", "switch"];
        all.extend_from_slice(args);
        let out = natm(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        assert!(stderr(&out).contains(name), "{all:?}: {}", stderr(&out));
    }
}

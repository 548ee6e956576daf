//! `natm perf switch` as a user runs it: a tiny run reports every measurement of every
//! run, the summary agrees with the runs, and bad options are refused by name. No rate is
//! asserted (the machine is shared and the build may be a debug one).

mod common;

use common::{natm, stderr, stdout};
use serde_json::Value;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

#[test]
fn a_tiny_run_reports_forwarding_beside_the_bare_rings() {
    let out = natm(&[
        "perf", "switch", "--cells", "20000", "--round", "5000", "--runs", "3", "--rounds", "3",
        "--batch", "32", "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(v["cells"], 20000);
    assert_eq!(v["round"], 5000);
    assert_eq!(v["batch"], 32);
    assert_eq!(v["goal_cells_per_sec"], 23.6e6);
    let runs = v["per_run"].as_array().expect("per_run");
    assert_eq!(runs.len(), 3);
    let mut fwd = Vec::new();
    for r in runs {
        for what in ["relay", "forwarding", "continuous"] {
            let e = &r[what];
            assert!(f(&e["cells_per_sec"]) > 0.0, "{r}");
            assert!(f(&e["seconds"]) > 0.0, "{r}");
            if let Some(w) = e["middle_waited"].as_f64() {
                assert!((0.0..=1.5).contains(&w), "a share of the run: {r}");
            }
        }
        for what in ["relay", "forwarding"] {
            // 20,000 cells in rounds of 5,000 (forwarding may drop a round's cells).
            let n = r[what]["rounds"].as_u64().unwrap();
            assert!((1..=4).contains(&n), "{r}");
            assert!(f(&r[what]["round_p50"]) > 0.0, "{r}");
        }
        assert_eq!(r["relay"]["rounds"], 4, "the relay never drops: {r}");
        assert_eq!(r["relay"]["dropped"], 0, "{r}");
        assert_eq!(r["continuous"]["rounds"], 0, "not in rounds: {r}");
        assert!(f(&r["capacity"]) > 0.0, "{r}");
        let ratio = f(&r["forwarding"]["round_p50"]) / f(&r["relay"]["round_p50"]);
        assert!((f(&r["ratio"]) - ratio).abs() < 1e-9, "{r}");
        fwd.push(f(&r["forwarding"]["round_p50"]));
    }
    fwd.sort_by(f64::total_cmp);
    let s = &v["forwarding"];
    assert_eq!(f(&s["median"]), fwd[1]);
    assert_eq!(f(&s["min"]), fwd[0]);
    assert_eq!(f(&s["max"]), fwd[2]);
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
        "median round",
        "continuous",
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
        (&["--round", "0"][..], "--round"),
    ] {
        let mut all = vec!["perf", "switch"];
        all.extend_from_slice(args);
        let out = natm(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        assert!(stderr(&out).contains(name), "{all:?}: {}", stderr(&out));
    }
}

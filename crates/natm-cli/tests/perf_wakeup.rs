//! `natm perf wakeup` run as a user runs it: the JSON it prints, every sample delivered in
//! every mode, no disturber left behind, and bad options refused. No timing is asserted:
//! the machine is shared and noisy.

mod common;

use common::{natm, stderr, stdout};
use serde_json::Value;

const MODES: [&str; 6] = [
    "raw-eventfd",
    "raw-signal",
    "poll",
    "adaptive",
    "eventfd",
    "signal",
];

/// True while `pid` is a live (not zombie) process.
fn alive(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

#[test]
fn wakeup_json_every_mode_every_sample_no_disturber_left() {
    let o = natm(&[
        "perf",
        "wakeup",
        "--samples",
        "50",
        "--disturbers",
        "0,2",
        "--sched",
        "other",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
    assert_eq!(v["samples_per_mode"], 50);
    assert!(v["seed"].is_u64());
    assert_eq!(v["gap_us"], serde_json::json!([100, 500]));
    let conditions = v["conditions"].as_array().expect("conditions");
    assert_eq!(conditions.len(), 2);
    for (c, disturbers) in conditions.iter().zip([0, 2]) {
        assert_eq!(c["disturbers"], disturbers);
        assert_eq!(c["sched"], "other");
        assert_eq!(c["error"], Value::Null, "{c}");
        assert_eq!(c["complete"], true, "{c}");
        let pids = c["disturber_pids"].as_array().expect("pids");
        assert_eq!(pids.len(), disturbers);
        for pid in pids {
            let pid = pid.as_u64().expect("pid");
            assert!(!alive(pid), "disturber {pid} survived the run");
        }
        let modes = c["modes"].as_array().expect("modes");
        let names: Vec<&str> = modes.iter().map(|m| m["mode"].as_str().unwrap()).collect();
        assert_eq!(names, MODES);
        for m in modes {
            let name = m["mode"].as_str().unwrap();
            assert_eq!(m["requested"], 50, "{name}");
            assert_eq!(m["samples"], 50, "{name}: a wake-up was lost");
            assert_eq!(m["missed_wakeups"], 0, "{name}: woken only by the timeout");
            assert_eq!(m["stray"], 0, "{name}");
            let (med, p90, p99, max) = (
                m["median_us"].as_f64().expect("median"),
                m["p90_us"].as_f64().expect("p90"),
                m["p99_us"].as_f64().expect("p99"),
                m["max_us"].as_f64().expect("max"),
            );
            assert!(
                0.0 < med && med <= p90 && p90 <= p99 && p99 <= max,
                "{name}: {m}"
            );
            // Adaptive spins 30 µs, then sleeps like eventfd; the gaps (100–500 µs) are
            // longer than its spin, so it sleeps too.
            let blocking = name != "poll";
            if blocking {
                // The consumer really slept: the producer had to make a system call for
                // (nearly) every sample. Raw modes kick every time by construction.
                let kicks = m["kicks"].as_u64().expect("kicks");
                assert!(kicks <= 50, "{name}: {kicks} kicks");
                assert!(kicks >= 25, "{name}: only {kicks} of 50 samples slept");
                assert_eq!(m["kick_failures"], 0, "{name}");
            } else {
                assert_eq!(m["kicks"], Value::Null, "{name}");
            }
            match name {
                "raw-eventfd" | "raw-signal" => {
                    assert_eq!(m["baseline"], Value::Null);
                    assert_eq!(m["ratio"], Value::Null);
                }
                _ => {
                    let base = if name == "signal" {
                        "raw-signal"
                    } else {
                        "raw-eventfd"
                    };
                    assert_eq!(m["baseline"], base, "{name}");
                    let base_median =
                        modes.iter().find(|b| b["mode"] == base).unwrap()["median_us"]
                            .as_f64()
                            .unwrap();
                    let ratio = m["ratio"].as_f64().expect("ratio");
                    assert!((ratio - med / base_median).abs() < 1e-9, "{name}");
                }
            }
        }
    }
}

#[test]
fn wakeup_tables_name_every_mode_and_only_the_baselines_needed() {
    let o = natm(&[
        "perf",
        "wakeup",
        "--samples",
        "20",
        "--modes",
        "signal",
        "--disturbers",
        "0",
        "--sched",
        "other",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("### 0 disturbers, SCHED_OTHER"), "{out}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(rows.len(), 3, "header and two modes: {out}");
    assert!(rows[1].starts_with("| raw-signal | 20 |"), "{out}");
    assert!(rows[2].starts_with("| signal | 20 |"), "{out}");
    assert!(rows[2].contains("× raw-signal"), "{out}");
}

#[test]
fn wakeup_bad_options_exit_2_naming_the_option() {
    for (args, names) in [
        (&["--samples", "0"][..], "--samples"),
        (&["--samples", "2000000"], "--samples"),
        (&["--samples", "many"], "--samples"),
        (&["--modes", "poll,busy"], "--modes"),
        (&["--modes", "poll,poll"], "--modes"),
        (&["--modes", ""], "--modes"),
        (&["--disturbers", "0,x"], "--disturbers"),
        (&["--disturbers", "65"], "--disturbers"),
        (&["--disturbers=-1"], "--disturbers"),
        (&["--sched", "rr"], "--sched"),
        (&["--seed=-3"], "--seed"),
        (&["--bogus"], "--bogus"),
    ] {
        let mut all = vec!["perf", "wakeup"];
        all.extend_from_slice(args);
        let o = natm(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(names), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?}: nothing measured");
    }
}

#[test]
fn spin_ends_by_itself_and_checks_its_bound() {
    let start = std::time::Instant::now();
    let o = natm(&["perf", "spin", "--seconds", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let took = start.elapsed();
    assert!(took >= std::time::Duration::from_secs(1), "{took:?}");
    for bad in ["0", "3601"] {
        let o = natm(&["perf", "spin", "--seconds", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(stderr(&o).contains("--seconds"), "{}", stderr(&o));
    }
    // A spinner whose parent is not the one named exits at once.
    let o = natm(&["perf", "spin", "--seconds", "60", "--parent", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(start.elapsed() < std::time::Duration::from_secs(30));
}

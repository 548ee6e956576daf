//! `natm perf memory` as a user runs it: real `natm switchd` and `natm hostd` processes,
//! small counts; the figures come from the daemons' status, the goals are judged right,
//! and nothing the command started is left behind (no process, no file).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{natm, stderr, stdout};
use serde_json::Value;

/// A private TMPDIR for the command, so that what it leaves (or not) can be seen.
struct Tmp(PathBuf);

impl Tmp {
    fn new(tag: &str) -> Tmp {
        let p = PathBuf::from(format!("/tmp/natm-pm-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Tmp(p)
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn memory(tmp: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_natm"))
        .args(["perf", "memory"])
        .args(args)
        .env("TMPDIR", tmp)
        .output()
        .expect("natm runs")
}

/// Processes whose command line mentions `dir`.
fn processes_under(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&needle))
        .collect()
}

#[test]
fn daemons_report_their_memory_and_are_all_stopped() {
    let tmp = Tmp::new("run");
    let out = memory(&tmp.0, &["--xcs", "3000", "--channels", "20", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(v["xcs"], 3000);
    assert_eq!(v["channels"], 20);
    for k in [
        "switch_rss_empty",
        "switch_rss_loaded",
        "hostd_rss_empty",
        "hostd_rss_loaded",
    ] {
        let b = v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
        assert!(b > 1 << 20, "a daemon holds more than a MiB: {k} = {b}");
    }
    assert_eq!(
        v["state_bytes_per_connection"].as_u64().unwrap(),
        natm_switch::Switch::state_bytes_per_connection() as u64
    );
    let lines = v["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 6);
    for l in lines {
        match (l["goal_bytes"].as_u64(), l["met"].as_bool()) {
            (Some(g), Some(met)) => assert_eq!(met, l["bytes"].as_u64().unwrap() <= g, "{l}"),
            (None, None) => {}
            _ => panic!("a goal and its verdict go together: {l}"),
        }
    }
    assert_eq!(lines[0]["goal_bytes"], 64 << 20);
    assert_eq!(lines[5]["goal_bytes"], 256);
    assert!(v["switch_rss_after_status"].as_u64().unwrap() > 1 << 20);
    assert!(
        processes_under(&tmp.0).is_empty(),
        "{:?}",
        processes_under(&tmp.0)
    );
    let left: Vec<_> = std::fs::read_dir(&tmp.0).unwrap().collect();
    assert!(
        left.is_empty(),
        "the scratch directory is removed: {left:?}"
    );
}

#[test]
fn counts_beyond_what_the_daemons_hold_are_refused() {
    for (args, name) in [
        (&["--channels", "5000"][..], "--channels"),
        (&["--xcs", "300000"][..], "--xcs"),
    ] {
        let mut all = vec!["perf", "memory"];
        all.extend_from_slice(args);
        let out = natm(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(name), "{args:?}: {}", stderr(&out));
    }
}

//! `natm sim eventbuilder` as a user runs it: a small event builder reports as a table and
//! as JSON, writes its two PNG plots, and refuses bad input naming what was wrong.

use std::path::PathBuf;
use std::process::Output;

mod common;
use common::{stderr, stdout};

/// `natm sim eventbuilder ARGS…`
fn natm(args: &[&str]) -> Output {
    common::natm(&[&["sim", "eventbuilder"], args].concat())
}

const SMALL: [&str; 12] = [
    "--sources",
    "4",
    "--destinations",
    "4",
    "--rate",
    "1k",
    "--fragment",
    "256",
    "--duration",
    "20ms",
    "--calibration",
    "free",
];

/// A directory of its own under the system's temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("natm-eb-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn json_report_counts_every_event_and_plots_are_pngs() {
    let dir = TempDir::new("json");
    let plots = dir.0.join("plots");
    let plots_arg = plots.to_str().unwrap();
    let o = natm(&[&SMALL[..], &["--json", "--plot-dir", plots_arg]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)));
    // 1 kHz for 20 ms: events 0..19, every one built on an idle network.
    assert_eq!(v["events"]["assigned"], 20);
    assert_eq!(v["events"]["built"], 20);
    assert_eq!(v["events"]["lost"], 0);
    assert_eq!(v["config"]["sources"], 4);
    assert_eq!(v["config"]["fragment"], 256);
    let p50 = v["latency"]["p50_us"].as_f64().unwrap();
    assert!(p50 > 0.0, "{v}");
    for name in ["latency.png", "queues.png"] {
        let bytes = std::fs::read(plots.join(name)).expect(name);
        assert!(
            bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{name} is not a PNG"
        );
        assert!(bytes.len() > 1000, "{name}: {} bytes", bytes.len());
    }
}

#[test]
fn table_names_each_part_of_the_report() {
    let o = natm(&SMALL);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for part in [
        "event builder: 4 sources × 4 destinations",
        "events:   20 assigned, 20 built, 0 lost",
        "latency:  min",
        "links:",
        "queues:",
        "drops:",
        "run:",
    ] {
        assert!(out.contains(part), "{part:?} missing from\n{out}");
    }
}

#[test]
fn bad_input_is_refused_with_the_constraint_named() {
    let with = |k: &str, v: &str| -> Vec<String> {
        let mut a: Vec<String> = SMALL.iter().map(|s| s.to_string()).collect();
        let i = a.iter().position(|x| x == k).expect(k);
        a[i + 1] = v.to_string();
        a
    };
    for (k, v, want) in [
        ("--sources", "0", "sources must be at least 1"),
        ("--fragment", "0", "fragment must be 8..=65535"),
        ("--fragment", "65536", "fragment must be 8..=65535"),
        ("--rate", "0", "--rate"),
        ("--duration", "soon", "--duration"),
    ] {
        let a = with(k, v);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = natm(&a);
        assert_ne!(o.status.code(), Some(0), "{k} {v} accepted");
        assert!(stderr(&o).contains(want), "{k} {v}: {}", stderr(&o));
    }
    // 4 CBR VCs of 100,000 cells/s into one OC-3c destination port: CAC refuses.
    let o = natm(&[&SMALL[..], &["--qos", "cbr:pcr=100000"]].concat());
    assert_ne!(o.status.code(), Some(0));
    let err = stderr(&o);
    assert!(err.contains("CBR") && err.contains("refused"), "{err}");
}

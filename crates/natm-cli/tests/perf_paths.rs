//! `natm perf paths` as a user runs it: through a lab of real daemons, the three paths and
//! the kernel baselines are measured at the size asked for and a plot per path is written
//! (one size: each size costs about a second in a debug build). No figure is compared.

mod common;

use std::path::PathBuf;

use common::{natm, stderr, stdout};
use serde_json::Value;

struct Lab(PathBuf);

impl Lab {
    fn up(tag: &str) -> Lab {
        let p = std::env::temp_dir().join(format!("natm-pp-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        let lab = Lab(p);
        let o = natm(&["lab", "up", "--rate", "unlimited", "--dir", lab.arg()]);
        assert!(o.status.success(), "lab up: {}", stderr(&o));
        lab
    }
    fn arg(&self) -> &str {
        self.0.to_str().expect("utf-8 temp dir")
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = natm(&["lab", "down", "--dir", self.arg()]);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn every_path_and_the_kernel_at_every_size_with_plots() {
    let lab = Lab::up("run");
    let plot = lab.0.join("paths.png");
    let out = natm(&[
        "perf",
        "paths",
        "--dir",
        lab.arg(),
        "--sizes",
        "100",
        "--count",
        "3",
        "--warmup",
        "1",
        "--seconds",
        "0.02",
        "--plot",
        plot.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["size"], 100);
    assert_eq!(rows[0]["measured_size"], 100);
    for path in ["lane", "direct", "daemon", "udp", "tcp"] {
        let f = &rows[0][path];
        assert!(f["rtt_p50_us"].as_f64().unwrap() > 0.0, "{path}: {v}");
        assert!(
            f["transactions_per_sec"].as_f64().unwrap() > 0.0,
            "{path}: {v}"
        );
        assert!(f["mbytes_per_sec"].as_f64().unwrap() > 0.0, "{path}: {v}");
    }
    let plots = v["plots"].as_array().unwrap();
    assert_eq!(plots.len(), 3, "one per path");
    for p in plots {
        let bytes = std::fs::read(p.as_str().unwrap()).expect("plot written");
        assert_eq!(&bytes[1..4], b"PNG", "{p}");
    }
}

#[test]
fn without_a_lab_it_says_how_to_start_one() {
    let dir = std::env::temp_dir().join(format!("natm-pp-{}-none", std::process::id()));
    for (flag, value, code, says) in [
        ("--sizes", "40", 1, "natm lab up"),
        ("--sizes", "40,x", 2, "--sizes"),
        ("--paths", "lane,kernel", 2, "`kernel` is not a path"),
    ] {
        let out = natm(&["perf", "paths", "--dir", dir.to_str().unwrap(), flag, value]);
        assert_eq!(out.status.code(), Some(code), "{flag} {value}");
        assert!(
            stderr(&out).contains(says),
            "{flag} {value}: {}",
            stderr(&out)
        );
    }
}

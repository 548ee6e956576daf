//! `natm perf isolation` on real daemons: a conforming CBR connection loses no cell and no
//! SDU while a VBR source at twice its PCR is policed by the switch and a UBR flood loses
//! cells in its own queue; the lab is gone afterwards. The p99 delay rise is printed, not
//! asserted (it measures this machine's load as much as the switch).

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        // Only if the command failed to take its own lab down.
        if self.0.join("lab.json").exists() {
            let _ = common::natm(&["lab", "down", "--dir", &self.0.to_string_lossy()]);
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn n(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not a count in {v}"))
}

#[test]
fn aggressors_are_policed_and_queued_while_the_cbr_connection_loses_nothing() {
    let dir =
        TempDir(std::env::temp_dir().join(format!("natm-isolation-test-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    let start = Instant::now();
    // A slow sink link (10,000 cells/s: CBR 1,000, VBR PCR 1,000 / SCR 500, UBR's share
    // 8,500) so that a debug build on a busy machine still floods it, and a CBR rate whose
    // 256-cell queue at the switch outlasts a quarter-second stall of the switch daemon.
    // The aggressors share the CPUs evenly: at SCHED_IDLE (the default, for measuring)
    // the other tests running beside this one could starve them for the whole run.
    let out = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args([
            "perf",
            "isolation",
            "--seconds",
            "1",
            "--sink-rate",
            "10000",
            "--cbr-share",
            "10",
            "--aggressor-cpu",
            "normal",
            "--json",
            "--dir",
        ])
        .arg(&dir.0)
        .output()
        .expect("natm runs");
    let stderr = common::stderr(&out);
    assert!(out.status.success(), "natm perf isolation failed: {stderr}");
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "bounded in time: {:?}",
        start.elapsed()
    );
    let r: Value = serde_json::from_str(&common::stdout(&out)).expect("JSON report");
    assert_eq!(r["plan"]["aggressor_cpu"], "normal");
    assert_eq!(
        r["plan"]["ubr_source_qos"], "ubr:pcr=85000",
        "10x the UBR's share"
    );
    println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
    println!(
        "CBR p99 rise with aggressors: {} % (measured, not asserted)",
        r["p99_rise_percent"]
    );

    let phases = r["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), 3, "alone, among the aggressors, alone again");
    for p in phases {
        let name = &p["name"];
        let sent = n(p, "cbr_sent");
        assert!(sent > 0, "{name}: the CBR source sent");
        assert_eq!(n(p, "cbr_received"), sent, "{name}: every CBR SDU arrived");
        assert_eq!(n(p, "cbr_lost"), 0, "{name}");
        assert_eq!(n(p, "cbr_out_of_order"), 0, "{name}");
        let sw = &p["switch_cbr"];
        assert_eq!(n(sw, "policed"), 0, "{name}: CBR policed at the switch");
        assert_eq!(n(sw, "queue_dropped"), 0, "{name}: CBR dropped by a queue");
        assert_eq!(n(sw, "cells_in"), sent, "{name}: one cell per CBR SDU");
        assert_eq!(
            n(sw, "cells_out"),
            sent,
            "{name}: every CBR cell left the switch"
        );
        assert!(
            p["cbr_delay"]["p99_ns"].as_u64().is_some(),
            "{name}: delays"
        );
    }

    for alone in [&phases[0], &phases[2]] {
        let name = &alone["name"];
        assert_eq!(
            n(&alone["switch_vbr"], "cells_in"),
            0,
            "no aggressor in {name}"
        );
        assert_eq!(
            n(&alone["switch_ubr"], "cells_in"),
            0,
            "no aggressor in {name}"
        );
    }
    assert!(
        r["p99_control_percent"].as_f64().is_some(),
        "the control's p99 change is reported"
    );

    let mixed = &phases[1];
    let vbr = &mixed["switch_vbr"];
    assert!(n(vbr, "cells_in") > 0, "the VBR source sent: {vbr}");
    assert!(
        n(vbr, "policed") > 0,
        "the switch's UPC cut the VBR source at 2x its PCR: {vbr}"
    );
    let ubr = &mixed["switch_ubr"];
    let share = n(&r["plan"], "ubr_share") as f64;
    let delivered = mixed["ubr_delivered_cells_per_s"]
        .as_f64()
        .expect("UBR rate");
    assert!(
        n(ubr, "queue_dropped") > 0 || delivered <= share * 1.1,
        "the UBR flood lost cells in its queue or got no more than its share ({share} cells/s): \
         {ubr}, delivered {delivered} cells/s"
    );

    // The command took its lab down: no state, no directory.
    assert!(!dir.0.join("lab.json").exists(), "lab state left behind");
    assert!(!dir.0.exists(), "runtime directory left behind");
}

//! `natm demo` is the README's first command: it must bring up a real network, measure it
//! beside the kernel, capture what crossed h1's switch port, and leave nothing behind.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::Command;

use natm_capture::{Reader, RecordKind};
use serde_json::Value;

/// tshark's expert severity "error" (`PI_ERROR`).
const PI_ERROR: &str = "8388608";

fn temp(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("natm-demo-test-{}-{tag}", std::process::id()))
}

fn tshark_installed() -> bool {
    let found = Command::new("tshark")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("NATM_REQUIRE_TSHARK").as_deref() != Ok("1"),
            "tshark is not installed, and NATM_REQUIRE_TSHARK=1 requires it"
        );
        eprintln!("tshark is not installed: its check is skipped");
    }
    found
}

/// (packets, error-level expert infos) tshark reports for `file`.
fn tshark_errors(file: &Path) -> (u64, u64) {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-o", "erf.aal5_type:unspecified", "-T", "fields"])
        .args(["-e", "frame.number", "-e", "_ws.expert.severity"])
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let errors = lines
        .iter()
        .filter_map(|l| l.split('\t').nth(1))
        .flat_map(|s| s.split(','))
        .filter(|s| *s == PI_ERROR)
        .count();
    (lines.len() as u64, errors as u64)
}

/// Whether `pid` is still a process other than a zombie (one the demo would have left).
fn alive(pid: i64) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| !c.is_empty())
}

fn num(row: &Value, field: &str) -> f64 {
    row[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} of {row} is a number"))
}

#[test]
fn demo_measures_the_network_beside_the_kernel_and_leaves_nothing() {
    let pcap = temp("net.pcap");
    let dir = temp("lab");
    let out = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args(["demo", "--rate", "unlimited", "--json", "--pings", "3"])
        .args(["--rr-count", "200"])
        .args(["--stream-seconds", "0.2", "--dir"])
        .arg(&dir)
        .arg("--pcap")
        .arg(&pcap)
        .output()
        .expect("natm runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");

    // The explanations went to stderr, step by step.
    for step in [
        "1. The default lab",
        "2. A CBR PVC 0.200",
        "4. OAM F5",
        "8. Lab down",
    ] {
        assert!(stderr.contains(step), "missing {step:?} in:\n{stderr}");
    }

    let rows = doc["rows"].as_array().expect("rows");
    let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "natm UBR 0.100",
            "natm CBR 0.200",
            "kernel UDP",
            "kernel TCP"
        ]
    );
    for row in rows {
        let (p50, p99) = (num(row, "rr_p50_us"), num(row, "rr_p99_us"));
        assert!(p50 > 0.0 && p50 <= p99, "{row}");
        assert!(num(row, "rr_per_sec") > 0.0, "{row}");
    }
    for row in &rows[..2] {
        assert_eq!(row["ping_us"]["received"], 3, "{row}");
        let (min, avg, max) = (
            num(&row["ping_us"], "min"),
            num(&row["ping_us"], "avg"),
            num(&row["ping_us"], "max"),
        );
        assert!(0.0 < min && min <= avg && avg <= max, "{row}");
        assert!(num(row, "stream_mbit_s") > 0.0, "{row}");
        assert!(num(row, "rr_p50_vs_kernel_udp") > 0.0, "{row}");
        assert!(num(row, "stream_vs_kernel_tcp") > 0.0, "{row}");
    }
    assert!(rows[2]["stream_mbit_s"].is_null(), "no UDP goodput run");
    assert!(num(&rows[3], "stream_mbit_s") > 0.0);
    let floor = num(&doc, "oc3_floor_us");
    assert!(
        (11.2..11.4).contains(&floor),
        "four OC-3c cell times: {floor}"
    );

    // The capture: natm-capture reads it back, cell by cell.
    let reader = Reader::new(BufReader::new(File::open(&pcap).expect("the pcap exists")))
        .expect("a pcap file");
    let mut cells = 0u64;
    for record in reader {
        let record = record.expect("a whole record");
        assert!(matches!(record.kind, RecordKind::Cell(_)), "{record:?}");
        cells += 1;
    }
    assert!(cells >= 1, "no cell captured");
    assert_eq!(
        doc["pcap"]["cells"], cells,
        "the demo counted what it wrote"
    );
    if tshark_installed() {
        let (packets, errors) = tshark_errors(&pcap);
        assert_eq!(
            (packets, errors),
            (cells, 0),
            "tshark on {}",
            pcap.display()
        );
        assert_eq!(doc["pcap"]["tshark"]["errors"], 0);
        assert_eq!(doc["pcap"]["tshark"]["packets"], cells);
    }

    // Nothing left: the daemons are gone and so is the lab's directory.
    let pids = doc["pids"].as_array().expect("pids");
    assert_eq!(pids.len(), 3, "s1, h1 and h2");
    for pid in pids {
        let pid = pid.as_i64().expect("a pid");
        assert!(!alive(pid), "daemon {pid} is still running");
    }
    assert_eq!(doc["daemons_stopped"], 3);
    assert!(!dir.exists(), "{} was removed", dir.display());
    let _ = std::fs::remove_file(&pcap);
}

/// Without `--rate` the demo shows both worlds: at OC-3c against the line (goodput as a
/// share of the AAL5 ceiling, the round trip beside the floor), then at unlimited rate
/// against the kernel; a capture each, and nothing left behind.
#[test]
fn demo_by_default_runs_at_oc3_and_at_unlimited_rate() {
    let pcap = temp("both.pcap");
    let dir = temp("both");
    let out = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args(["demo", "--pings", "2", "--rr-count", "200"])
        .args(["--stream-seconds", "0.2", "--dir"])
        .arg(&dir)
        .arg("--pcap")
        .arg(&pcap)
        .output()
        .expect("natm runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let oc3 = stdout
        .find("=== natm demo at oc3 ===")
        .expect("the OC-3c run");
    let unlimited = stdout
        .find("=== natm demo at unlimited ===")
        .expect("the unlimited run");
    assert!(oc3 < unlimited, "OC-3c first:\n{stdout}");
    let rated = stdout
        .find("(stream: of the AAL5 ceiling at oc3; p50 vs the floor)")
        .expect("the OC-3c table's heading");
    let kernel = stdout
        .find("(p50 vs UDP, stream vs TCP)")
        .expect("the unlimited table's heading");
    assert!(rated < kernel, "{stdout}");
    let ubr = stdout[rated..]
        .lines()
        .find(|l| l.starts_with("natm UBR 0.100"))
        .expect("the UBR row at OC-3c");
    assert!(
        ubr.contains(" %, p50 ") && ubr.ends_with("the floor"),
        "{ubr}"
    );
    for rate in ["oc3", "unlimited"] {
        let p = pcap.with_file_name(format!(
            "natm-demo-test-{}-both-{rate}.pcap",
            std::process::id()
        ));
        assert!(p.exists(), "{} was written", p.display());
        let _ = std::fs::remove_file(&p);
    }
    assert!(!dir.exists(), "{} was removed", dir.display());
}

#[test]
fn a_bad_rate_is_refused_before_anything_starts() {
    let dir = temp("bad-rate");
    let out = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args(["demo", "--rate", "fast", "--dir"])
        .arg(&dir)
        .output()
        .expect("natm runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--rate fast"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dir.exists());
}

/// The older walk through the layers is still there, with its capture.
#[test]
fn demo_layers_shows_each_layer() {
    let pcap = temp("layers.pcap");
    let out = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args(["demo", "--layers", "--no-measure", "--pcap"])
        .arg(&pcap)
        .output()
        .expect("natm runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "ubr:pcr=10Mbps,sdu=9188    -> ubr:pcr=26041,max_sdu=9188",
        "flip bit 19             -> corrected (bit 19)",
        "one payload bit flipped -> discarded: AAL5 CRC error",
        "loopback reply tag=0x12345678",
        "CAC cbr:pcr=12000    -> admitted, 500 cells/s left",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    let cells = pcap.with_extension("cells.pcap");
    for file in [&pcap, &cells] {
        assert!(file.exists(), "{} was written", file.display());
        let _ = std::fs::remove_file(file);
    }
}

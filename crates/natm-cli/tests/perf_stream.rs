//! `natm perf stream` and `natm perf baseline KIND stream` as a user runs them: short
//! timed runs over the kernel transports, the JSON a script reads, the PNG plot of a
//! sweep, and clear refusals of bad options. No goodput figure is asserted (the machine is
//! shared); what is asserted is that what was sent is accounted for.

mod common;
#[path = "support/host_pair.rs"]
mod host_pair;

use std::path::PathBuf;

use common::{natm, stderr, stdout};
use serde_json::Value;

fn run_json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = natm(&all);
    assert!(out.status.success(), "natm {all:?}: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("natm perf stream --json prints JSON")
}

fn check_moved(m: &Value, reliable: bool) {
    assert!(m["bits_per_sec"].as_f64().unwrap() > 0.0, "{m}");
    assert!(m["messages_per_sec"].as_f64().unwrap() > 0.0, "{m}");
    let sent = m["sent_messages"].as_u64().unwrap();
    let got = m["received_messages"].as_u64().unwrap();
    assert!(got > 0 && got <= sent, "{m}");
    if reliable {
        assert_eq!(got, sent, "a reliable transport delivers everything: {m}");
    }
}

#[test]
fn a_tcp_baseline_at_one_size_delivers_every_message() {
    let v = run_json(&[
        "perf",
        "baseline",
        "tcp",
        "stream",
        "--size",
        "8192",
        "--seconds",
        "0.1",
    ]);
    assert_eq!(v["kinds"], serde_json::json!(["tcp"]));
    let sizes = v["sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), 1);
    assert_eq!(sizes[0]["size"], 8192);
    let m = &sizes[0]["results"][0];
    check_moved(m, true);
    // Goodput is the bytes received over the time they took.
    let bytes = m["received_bytes"].as_u64().unwrap();
    assert_eq!(bytes, m["received_messages"].as_u64().unwrap() * 8192);
    let expect = bytes as f64 * 8.0 / m["seconds"].as_f64().unwrap();
    assert!((m["bits_per_sec"].as_f64().unwrap() / expect - 1.0).abs() < 1e-9);
    assert!(v["plot"].is_null());
}

#[test]
fn a_sweep_writes_a_png_and_skips_what_udp_cannot_carry() {
    let png = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("perf_stream_sweep.png");
    let _ = std::fs::remove_file(&png);
    let path = png.to_str().unwrap();
    let v = run_json(&[
        "perf",
        "stream",
        "--kind",
        "unix",
        "--baseline",
        "tcp,udp",
        "--sweep",
        "64,1024,65536",
        "--seconds",
        "0.05",
        "--plot",
        path,
    ]);
    assert_eq!(v["kinds"], serde_json::json!(["unix", "tcp", "udp"]));
    assert_eq!(v["plot"], path);
    let sizes = v["sizes"].as_array().unwrap();
    let got: Vec<u64> = sizes.iter().map(|s| s["size"].as_u64().unwrap()).collect();
    assert_eq!(got, [64, 1024, 65536]);
    for s in sizes {
        check_moved(&s["results"][0], true);
        check_moved(&s["results"][1], true);
        assert!(s["ratios"][0].as_f64().unwrap() > 0.0, "{s}");
        if s["size"] == 65536 {
            // Above the largest UDP payload: not measured, no ratio.
            assert!(s["results"][2].is_null(), "{s}");
            assert!(s["ratios"][1].is_null(), "{s}");
        } else {
            check_moved(&s["results"][2], false);
        }
    }
    let bytes = std::fs::read(&png).expect("the plot was written");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    // IHDR: width and height, big-endian, right after the chunk's length and type.
    assert_eq!(&bytes[12..16], b"IHDR");
    let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!((width, height), (960, 600));
    assert!(bytes.len() > 5_000, "a plot with lines, not an empty image");
}

#[test]
fn the_table_shows_each_baseline_and_the_plot_legend() {
    let png = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("perf_stream_table.png");
    let out = natm(&[
        "perf",
        "stream",
        "--kind",
        "tcp",
        "--baseline",
        "unix",
        "--sweep",
        "100,200",
        "--seconds",
        "0.05",
        "--plot",
        png.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("unix Mbit/s"), "{text}");
    assert!(text.contains("messages/s"), "{text}");
    assert!(
        text.contains("tcp red") || text.contains("tcp green"),
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.contains('×')).count(),
        2,
        "{text}"
    );
}

#[test]
fn bad_options_exit_2_and_name_what_was_wrong() {
    for (args, needle) in [
        (
            &["perf", "baseline", "tcp", "stream", "--size", "0"][..],
            "--size 0",
        ),
        (
            &["perf", "baseline", "udp", "stream", "--size", "65536"][..],
            "--size 65536: a UDP datagram carries at most 65507",
        ),
        (
            &["perf", "stream", "--kind", "udp", "--sweep", "64,0"][..],
            "--sweep 0",
        ),
        (
            &["perf", "stream", "--kind", "udp", "--sweep", "64,1k"][..],
            "--sweep \"1k\"",
        ),
        (&["perf", "stream", "--kind", "atm"][..], "--kind \"atm\""),
        (
            &["perf", "stream", "--kind", "udp", "--seconds", "0"][..],
            "--seconds 0",
        ),
        (
            &["perf", "baseline", "sctp", "stream"][..],
            "transport \"sctp\"",
        ),
    ] {
        let out = natm(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn natm_between_two_hosts_beside_the_tcp_baseline() {
    let lab = host_pair::Lab::new("stream");
    let (h1, h2) = (lab.socket(0), lab.socket(1));
    let v = run_json(&[
        "perf",
        "stream",
        "--client-host",
        &h1,
        "--server-host",
        &h2,
        "--baseline",
        "tcp",
        "--sweep",
        "40,9180,65536",
        "--seconds",
        "0.1",
    ]);
    assert_eq!(v["kinds"], serde_json::json!(["natm", "tcp"]));
    for s in v["sizes"].as_array().unwrap() {
        if s["size"] == 65536 {
            // Above the largest AAL5 SDU: natm is not measured there, TCP is.
            assert!(s["results"][0].is_null(), "{s}");
            check_moved(&s["results"][1], true);
            continue;
        }
        // ATM has no flow control between applications: a receiver that falls behind
        // loses whole SDUs, so natm is checked as a lossy transport.
        check_moved(&s["results"][0], false);
        check_moved(&s["results"][1], true);
        assert!(s["ratios"][0].as_f64().unwrap() > 0.0, "{s}");
    }
}

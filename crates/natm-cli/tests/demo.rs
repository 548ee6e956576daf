//! `natm demo` is the README's first command: it must run, and show each layer doing its job.

use std::process::Command;

#[test]
fn demo_runs_and_shows_each_layer() {
    let pcap = std::env::temp_dir().join(format!("natm-demo-test-{}.pcap", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_natm"))
        .args(["demo", "--no-measure", "--pcap"])
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
        "refused: at 13:",
        "= 3 cells",
        "flip bit 19             -> corrected (bit 19)",
        "another error at once   -> discarded",
        "all cells               -> delivered 97 bytes",
        "one payload bit flipped -> discarded: AAL5 CRC error",
        "first cell lost         -> discarded",
        "loopback reply tag=0x12345678",
        "aal5=ok sdu=97 cells=3 llc ipv4",
        "crc10=ok F5 end-to-end loopback request",
        "UPC VBR.1 on vbr:pcr=1000,scr=250,mbs=10: 14 cells at PCR -> PPPPPPPPPPDDDP",
        "10000 cells at its PCR -> 10000 passed, 0 discarded",
        "20 cells: gaps 10.0 10.0 10.0 10.0 10.0 10.0 10.0 µs…, policer at CDVT 0 passes 20/20",
        "10 cells: gaps 20.0 20.0 20.0 20.0 100.0 100.0 100.0 µs…, policer at CDVT 0 passes 10/10",
        "300 cells: gaps",
        "policer at CDVT 0 passes 300/300",
        "CAC cbr:pcr=20000    -> CBR 20000 cells/s refused on sw0:1: 12500 of 353207 cells/s free",
        "CAC cbr:pcr=12000    -> admitted, 500 cells/s left",
        "4040 cells queued, 396 frames refused whole (EPD), 0 cells cut",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    let cells = pcap.with_extension("cells.pcap");
    for file in [&pcap, &cells] {
        assert!(
            std::fs::metadata(file).is_ok(),
            "{} was written",
            file.display()
        );
    }
    // Wireshark's own checks, when tshark is there (the test script requires it).
    if text.contains("tshark -V, the lines with its checks:") {
        assert!(
            text.contains("natm-demo-test") && text.contains(": AAL5 CRC: 0x"),
            "{text}"
        );
        assert_eq!(text.matches("Header Error Check: ").count(), 6, "{text}");
        assert_eq!(text.matches("(uncorrectable error)").count(), 1, "{text}");
        assert_eq!(text.matches("CRC-10: ").count(), 2, "{text}");
        assert!(
            text.contains("User Datagram Protocol, Src Port: 9"),
            "{text}"
        );
        let checks = text
            .lines()
            .filter(|l| l.contains(".pcap frame ") && !l.contains("User Datagram"));
        for line in checks {
            assert!(
                line.contains("(correct)") || line.contains("(uncorrectable error)"),
                "tshark disagrees: {line}"
            );
        }
    } else {
        assert!(
            std::env::var_os("NATM_REQUIRE_TSHARK").is_none(),
            "tshark is required:\n{text}"
        );
    }
    for file in [&pcap, &cells] {
        let _ = std::fs::remove_file(file);
    }
}

//! `natm aal5 send` and `natm dump` as a user runs them: output lines, exit codes, and
//! what happens with bad input and broken files. (tshark's view is in tshark.rs.)

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

/// A path under the temporary directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(tag: &str) -> TempFile {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        TempFile(std::env::temp_dir().join(format!("natm-cli-{}-{n}-{tag}", std::process::id())))
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("temp paths are UTF-8")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

mod common;
use common::{natm, stderr, stdout};

#[test]
fn send_then_dump() {
    let pcap = TempFile::new("hello.pcap");
    let o = natm(&[
        "aal5",
        "send",
        "--vc",
        "1.100",
        "--text",
        "hello",
        "--pcap",
        pcap.path(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "aal5: 5-byte SDU on 1.100 in 1 cell (pad 35), trailer uu=0x00 cpi=0x00 len=5 \
             crc=0x7f4cd5de; wrote 1 AAL5 record to {}\n",
            pcap.path()
        )
    );
    let o = natm(&["dump", pcap.path()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let line = stdout(&o);
    assert!(line.starts_with("1 "), "{line}");
    assert!(
        line.trim_end()
            .ends_with(" 1.100 aal5 len=48 aal5=ok sdu=5 cells=1"),
        "{line}"
    );
}

#[test]
fn send_cells_and_json_dump() {
    let input = TempFile::new("sdu.bin");
    std::fs::write(&input.0, [0x11u8; 100]).unwrap();
    let pcap = TempFile::new("cells.pcap");
    let o = natm(&[
        "aal5",
        "send",
        "--vc",
        "0.32",
        "--input",
        input.path(),
        "--pcap",
        pcap.path(),
        "--cells",
        "--uu",
        "7",
        "--cpi",
        "0x01",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("wrote 1 AAL5 record and 3 cell records"),
        "{}",
        stdout(&o)
    );
    let o = natm(&["dump", "--json", pcap.path()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    for (i, cell) in lines[..3].iter().enumerate() {
        assert_eq!(cell["record"], i + 1);
        assert_eq!(cell["kind"], "cell");
        assert_eq!(
            (cell["vpi"].as_u64(), cell["vci"].as_u64()),
            (Some(0), Some(32))
        );
        assert_eq!(
            cell["pti"],
            u64::from(i == 2),
            "only the last cell ends the frame"
        );
        assert_eq!(
            cell["hec"],
            serde_json::Value::Null,
            "ERF cells carry no HEC"
        );
    }
    assert_eq!(lines[3]["kind"], "aal5");
    assert_eq!(lines[3]["aal5"], "ok");
    assert_eq!(lines[3]["sdu_len"], 100);
    assert_eq!(
        lines[3]["time"], lines[2]["time"],
        "the PDU completes with its last cell"
    );
}

#[test]
fn send_rejects_bad_input_with_one_line_and_exit_2() {
    let pcap = TempFile::new("never.pcap");
    let big = TempFile::new("big.bin");
    std::fs::write(&big.0, vec![0u8; 65_536]).unwrap();
    let cases: [(&[&str], &str); 8] = [
        (&["--vc", "1x", "--text", "a"], "bad --vc \"1x\""),
        (
            &["--vc", "256.1", "--text", "a"],
            "VPI out of range 0..=255",
        ),
        (&["--vc", "1.65536", "--text", "a"], "VCI out of range"),
        (
            &["--vc", "1.1", "--text", ""],
            "an AAL5 SDU must be 1..=65535 bytes",
        ),
        (
            &["--vc", "1.1", "--input", big.path()],
            "65536 bytes exceeds the maximum SDU of 65535",
        ),
        (
            &["--vc", "1.1", "--input", "/nonexistent/sdu"],
            "cannot read /nonexistent/sdu",
        ),
        (
            &["--vc", "1.1", "--text", "a", "--uu", "256"],
            "bad --uu \"256\"",
        ),
        (
            &["--vc", "1.1", "--text", "a", "--cpi", "0xg"],
            "bad --cpi \"0xg\"",
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["aal5", "send", "--pcap", pcap.path()];
        all.extend_from_slice(args);
        let o = natm(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("natm: ") && err.contains(want),
            "{args:?}: {err}"
        );
        assert!(
            !pcap.0.exists(),
            "{args:?}: nothing is written on bad input"
        );
    }
}

#[test]
fn send_writes_cells_when_the_pdu_is_too_long_for_erf() {
    let input = TempFile::new("65500.bin");
    std::fs::write(&input.0, vec![0x33u8; 65_500]).unwrap();
    let pcap = TempFile::new("long.pcap");
    let o = natm(&[
        "aal5",
        "send",
        "--vc",
        "1.1",
        "--input",
        input.path(),
        "--pcap",
        pcap.path(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("wrote 1365 cell records only (a 65520-byte PDU is longer than an ERF AAL5 record holds, 65472)"),
        "{}",
        stdout(&o)
    );
    let o = natm(&["dump", pcap.path()]);
    assert_eq!(stdout(&o).lines().count(), 1365);
}

#[test]
fn dump_prints_what_it_read_then_the_error() {
    let pcap = TempFile::new("two.pcap");
    for text in ["first", "second"] {
        let one = TempFile::new("one.pcap");
        let o = natm(&[
            "aal5",
            "send",
            "--vc",
            "2.200",
            "--text",
            text,
            "--pcap",
            one.path(),
        ]);
        assert!(o.status.success());
        let bytes = std::fs::read(&one.0).unwrap();
        let mut all = std::fs::read(&pcap.0).unwrap_or_else(|_| bytes[..24].to_vec());
        all.extend_from_slice(&bytes[24..]);
        std::fs::write(&pcap.0, all).unwrap();
    }
    let full = std::fs::read(&pcap.0).unwrap();
    assert_eq!(full.len(), 24 + 2 * (16 + 16 + 52));
    // Cut the second record short: the first is still printed, then the error.
    std::fs::write(&pcap.0, &full[..full.len() - 10]).unwrap();
    let o = natm(&["dump", pcap.path()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stdout(&o).lines().count(), 1);
    assert_eq!(
        stderr(&o),
        format!(
            "natm: {}: truncated record at byte 108: its header says 68 bytes, the file has 58\n",
            pcap.path()
        )
    );
    // Not a pcap at all, or no file.
    std::fs::write(&pcap.0, b"not a capture file at all").unwrap();
    let o = natm(&["dump", pcap.path()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not a pcap file: magic 0x6e6f7420 at byte 0"),
        "{}",
        stderr(&o)
    );
    let o = natm(&["dump", "/nonexistent/capture.pcap"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with("natm: /nonexistent/capture.pcap: "));
}

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

/// atm-facts.md §5.5's SETUP in an SD with N(S) = `n_s` (3 pad bytes, atm-facts §6).
fn sd(msg: &[u8], n_s: u8) -> Vec<u8> {
    let pad = (4 - msg.len() % 4) % 4;
    let mut sd = msg.to_vec();
    sd.resize(msg.len() + pad, 0);
    sd.extend_from_slice(&[((pad as u8) << 6) | 0x08, 0, 0, n_s]);
    sd
}

const SETUP: [u8; 101] = [
    0x09, 0x03, 0x00, 0x00, 0x01, 0x05, 0x80, 0x00, 0x5c, 0x58, 0x80, 0x00, 0x07, 0x05, 0x8c, 0x23,
    0xe4, 0x81, 0x23, 0xe4, 0x59, 0x80, 0x00, 0x09, 0x84, 0x05, 0x63, 0xb7, 0x85, 0x05, 0x63, 0xb7,
    0xbe, 0x5e, 0x80, 0x00, 0x03, 0x10, 0x80, 0x80, 0x70, 0x80, 0x00, 0x15, 0x82, 0x47, 0x00, 0x05,
    0x80, 0xff, 0xe1, 0x00, 0x00, 0x00, 0xf2, 0x1a, 0x3d, 0x5c, 0x00, 0x20, 0x48, 0x1a, 0x3d, 0x5c,
    0x00, 0x6c, 0x80, 0x00, 0x15, 0x82, 0x47, 0x00, 0x05, 0x80, 0xff, 0xe1, 0x00, 0x00, 0x00, 0xf2,
    0x1a, 0x3d, 0x5c, 0x00, 0x20, 0x48, 0x1b, 0x00, 0x01, 0x00, 0x5f, 0x80, 0x00, 0x01, 0xcc, 0x5c,
    0x80, 0x00, 0x02, 0x00, 0x00,
];

const SETUP_TEXT: &str = "SETUP cr=1 flag=0 aal=[aal5 fwd_sdu=9188 bwd_sdu=9188] \
    td=[fwd pcr01=353207 bwd pcr01=353207 best-effort] bbc=[BCOB-X atc=NoIndication p2p] \
    called=47.0005.80FFE1000000F21A3D5C.0020481A3D5C.00 \
    calling=47.0005.80FFE1000000F21A3D5C.0020481B0001.00 blli=[l2=0x0c(llc)] qos=[class 0/0]";

fn write_capture(link: natm_capture::LinkType, records: &[natm_capture::Record]) -> TempFile {
    let file = TempFile::new("sig.pcap");
    let mut w = natm_capture::Writer::new(std::fs::File::create(&file.0).unwrap(), link).unwrap();
    for r in records {
        w.write(r).unwrap();
    }
    w.into_inner().unwrap();
    file
}

#[test]
fn dump_decodes_signalling() {
    use natm_capture::{Direction, LinkType, Record, RecordKind, SunAtmType};
    use natm_core::{Instant, VcId};
    let vc = VcId::uni(0, 5).unwrap();
    let sun = |i: u64, kind, direction, sdu: Vec<u8>| Record {
        time: Instant::from_nanos(1_000_000_000 * i),
        kind: RecordKind::SunAtm {
            vc,
            kind,
            direction,
            sdu,
        },
    };
    // CALL PROCEEDING from the network with VPCI 0 / VCI 32, RELEASE COMPLETE with cause
    // 47 at LN (atm-facts §5.5); a STAT (§6); an SD whose message has a wrong protocol
    // discriminator; bytes that are no SSCOP PDU.
    let call_proceeding = [
        0x09, 0x03, 0x80, 0x00, 0x01, 0x02, 0x80, 0x00, 0x09, 0x5a, 0x80, 0x00, 0x05, 0x88, 0x00,
        0x00, 0x00, 0x20,
    ];
    let release_complete = [
        0x09, 0x03, 0x80, 0x00, 0x01, 0x5a, 0x80, 0x00, 0x06, 0x08, 0x80, 0x00, 0x02, 0x82, 0xaf,
    ];
    let stat = vec![
        0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0x80, 0x0b, 0, 0, 3,
    ];
    let mut not_q2931 = call_proceeding;
    not_q2931[0] = 0x08;
    let (q, g) = (SunAtmType::Qsaal, SunAtmType::Guess);
    let (out, inn) = (Direction::DteToDce, Direction::DceToDte);
    let file = write_capture(
        LinkType::SunAtm,
        &[
            sun(1, q, out, sd(&SETUP, 0)),
            sun(2, g, inn, sd(&call_proceeding, 0)),
            sun(3, q, inn, sd(&release_complete, 1)),
            sun(4, q, out, stat),
            sun(5, q, inn, sd(&not_q2931, 2)),
            sun(6, q, inn, vec![1, 2, 3]),
        ],
    );
    let o = natm(&["dump", file.path()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    let want = [
        format!(
            "1 1.000000000 0.5 sunatm len=108 sscop signalling SD N(S)=0 len=101: {SETUP_TEXT} \
             (sunatm qsaal dte->dce)"
        ),
        "2 2.000000000 0.5 sunatm len=24 sscop signalling SD N(S)=0 len=18: CALL PROCEEDING \
         cr=1 flag=1 conn=[vpci=0 vci=32] (sunatm guess dce->dte)"
            .into(),
        "3 3.000000000 0.5 sunatm len=20 sscop signalling SD N(S)=1 len=15: RELEASE COMPLETE \
         cr=1 flag=1 cause=[47 (resource unavailable, unspecified) at LN] (sunatm qsaal dce->dte)"
            .into(),
        "4 4.000000000 0.5 sunatm len=20 sscop signalling STAT N(R)=3 N(MR)=128 N(PS)=1 \
         list=[3,4] (sunatm qsaal dte->dce)"
            .into(),
        "5 5.000000000 0.5 sunatm len=24 sscop signalling SD N(S)=2 len=18: error: q2931: \
         protocol discriminator 0x08, not Q.2931's 0x09 (sunatm qsaal dce->dte)"
            .into(),
        "6 6.000000000 0.5 sunatm len=3 sscop signalling error: sscop: SSCOP PDU of 3 bytes \
         is not a multiple of 4 (sunatm qsaal dce->dte)"
            .into(),
    ];
    assert_eq!(lines, want);

    let o = natm(&["dump", "--json", file.path()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(json.len(), 6);
    let setup = &json[0];
    assert_eq!(setup["record"], 1);
    assert_eq!(setup["kind"], "sunatm");
    assert_eq!(setup["decoded"], "sscop signalling");
    let sig = &setup["signalling"];
    assert_eq!(sig["sscop"]["type"], "SD");
    assert_eq!(sig["sscop"]["n_s"], 0);
    let m = &sig["q2931"];
    assert_eq!(m["message_type"], "SETUP");
    assert_eq!(m["call_ref"], 1);
    assert_eq!(m["call_ref_flag"], false);
    let ies = m["ies"].as_array().unwrap();
    assert_eq!(ies.len(), 7);
    assert_eq!(ies[1]["ie"], "traffic_descriptor");
    assert_eq!(ies[1]["fwd"]["pcr01"], 353_207);
    assert_eq!(ies[3]["ie"], "called_number");
    assert_eq!(
        ies[3]["number"],
        "47.0005.80FFE1000000F21A3D5C.0020481A3D5C.00"
    );
    assert_eq!(json[1]["signalling"]["q2931"]["ies"][0]["vci"], 32);
    let cause = &json[2]["signalling"]["q2931"]["ies"][0];
    assert_eq!(
        (&cause["ie"], &cause["value"], &cause["location_name"]),
        (&"cause".into(), &47.into(), &"LN".into())
    );
    assert_eq!(
        json[3]["signalling"]["sscop"]["list"],
        serde_json::json!([3, 4])
    );
    assert_eq!(json[4]["signalling"]["error"]["layer"], "q2931");
    assert_eq!(json[5]["signalling"]["error"]["layer"], "sscop");
    // Records that are not signalling keep `null`.
    assert!(json.iter().all(|j| j["aal5"].is_null()));

    // The same SETUP in an ERF AAL5 record on 0.5: the 108-byte SD in three cells
    // (atm-facts §6), checked before it is decoded.
    let mut pdu = Vec::new();
    natm_wire::aal5::encode_pdu(&sd(&SETUP, 0), 0, 0, &mut pdu).unwrap();
    let erf = write_capture(
        LinkType::Erf,
        &[Record {
            time: Instant::from_nanos(7_000_000_000),
            kind: RecordKind::Aal5Pdu { vc, pdu },
        }],
    );
    let o = natm(&["dump", erf.path()]);
    assert_eq!(
        stdout(&o),
        format!(
            "1 7.000000000 0.5 aal5 len=144 aal5=ok sdu=108 cells=3 sscop signalling \
             SD N(S)=0 len=101: {SETUP_TEXT}\n"
        )
    );
}

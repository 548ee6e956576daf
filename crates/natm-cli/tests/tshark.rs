//! Wireshark interoperability: captures written by natm-capture are read back by tshark
//! 4.0, which must agree with natm's own verdicts record by record, and files written by
//! Wireshark's tools are read by natm.
//!
//! Without tshark these tests print why and pass, unless `NATM_REQUIRE_TSHARK=1`, when a
//! missing tshark fails them. Each capture is checked with one tshark run (PDML output),
//! with `erf.aal5_type:unspecified` so that tshark does not guess protocols inside random
//! SDUs (its guesses produce "malformed" verdicts about bytes that are not packets at all).
//!
//! Signalling (`tshark_decodes_random_signalling_natm_emits`): 1,200 random valid Q.2931
//! messages from a fixed seed, every message type and every IE natm decodes, emitted by
//! natm_wire::q2931 and wrapped in SSCOP SDs by natm_wire::sscop, half as SunATM typed
//! signalling and half as ERF AAL5 on 0.5. tshark must decode each as SSCOP SD + Q.2931
//! with natm's N(S), message type, call reference and flag, cause values, connection
//! identifier, AAL type, bearer class, call state and restart class (and, from exported
//! PDUs for its `sscop` and `q2931` dissectors, one of each type), and report nothing but
//! the Wireshark 4.0 q2931 dissector bugs listed in `Quirks` (each recognised by where it
//! occurs); `natm dump --json` must agree too.

#[path = "support/pdml.rs"]
mod pdml;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use natm_capture::erf::MAX_AAL5_SDU;
use natm_capture::summary::{Aal5Check, Crc10Check, HecCheck, Kind};
use natm_capture::{
    CellRecord, Direction, LinkType, Reader, Record, RecordKind, SunAtmType, TsResolution, Writer,
    summarize,
};
use natm_core::{Instant, VcId};
use natm_wire::aal5::{self, Segmenter};
use natm_wire::oam::{Defect, Loopback, OamFlow, OamRepr};
use pdml::{PI_ERROR, attr, pdml, tshark};

// ---------------------------------------------------------------------------------------
// Tools

fn tool_available(tool: &str) -> bool {
    let found = Command::new(tool)
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("NATM_REQUIRE_TSHARK").as_deref() != Ok("1"),
            "{tool} is not installed, and NATM_REQUIRE_TSHARK=1 requires it"
        );
        // Straight to stderr: libtest captures the print macros of passing tests.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: {tool} is not installed (install tshark; NATM_REQUIRE_TSHARK=1 makes this a failure)"
        );
    }
    found
}

/// A file under the temporary directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(tag: &str) -> TempFile {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        TempFile(std::env::temp_dir().join(format!("natm-tshark-{}-{n}-{tag}", std::process::id())))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// xorshift64*: a seeded generator, so every run writes the same captures.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            v.extend_from_slice(&self.next().to_le_bytes());
        }
        v.truncate(n);
        v
    }

    /// A random SDU whose first bytes tshark's AAL5 heuristics leave alone: not 00 00
    /// (VC-mux bridged), 4x or 6x (raw IPv4/IPv6), AA or FE (LLC). Without this, tshark
    /// "decodes" random bytes as packets and reports them malformed.
    fn sdu(&mut self, n: usize) -> Vec<u8> {
        let mut sdu = self.bytes(n);
        if let Some(b) = sdu.first_mut()
            && (matches!(*b >> 4, 0 | 4 | 6) || *b == 0xAA || *b == 0xFE)
        {
            *b = 0x11;
        }
        sdu
    }

    fn vc(&mut self) -> VcId {
        VcId::uni(self.range(0, 255) as u32, self.range(32, 65535) as u32).unwrap()
    }
}

fn write_file(link: LinkType, records: &[Record], tag: &str) -> TempFile {
    let file = TempFile::new(tag);
    // ERF records carry their own fine timestamps, so the classic microsecond file loses
    // nothing; the other kinds go in nanosecond files. tshark reads both.
    let resolution = match link {
        LinkType::Erf => TsResolution::Micros,
        _ => TsResolution::Nanos,
    };
    let mut w = Writer::with_resolution(
        std::io::BufWriter::new(std::fs::File::create(&file.0).unwrap()),
        link,
        resolution,
    )
    .unwrap();
    for r in records {
        w.write(r).unwrap();
    }
    w.flush().unwrap();
    // What natm reads back is what it wrote.
    let back: Vec<Record> = Reader::new(std::io::BufReader::new(
        std::fs::File::open(&file.0).unwrap(),
    ))
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap();
    assert_eq!(back.len(), records.len());
    assert!(back == records, "{tag}: records read back differ");
    file
}

// ---------------------------------------------------------------------------------------
// What each record should look like

/// What a record was written as.
#[derive(Clone, Debug)]
enum Expect {
    /// An AAL5 PDU of an SDU of this many bytes (0: an abort PDU).
    Aal5 { sdu_len: usize },
    /// A cell; `oam` when it is an OAM cell.
    Cell { pti: u8, oam: Option<u8> },
    /// A SunATM SDU that tshark should decode down to `proto`, natm as `decoded`.
    Sun {
        proto: &'static str,
        decoded: &'static str,
        channel: &'static str,
    },
}

/// Counters of what was checked, for the closing message.
#[derive(Debug, Default)]
struct Tally {
    aal5_crc_ok: usize,
    aborts: usize,
    cells: usize,
    hec_ok: usize,
    crc10_ok: usize,
    sunatm: usize,
}

fn check(file: &TempFile, records: &[Record], expect: &[Expect], tally: &mut Tally) {
    let packets = tshark(&file.0);
    assert_eq!(packets.len(), records.len(), "tshark saw every record");
    for (i, ((record, want), p)) in records.iter().zip(expect).zip(&packets).enumerate() {
        let s = summarize(record);
        let at = format!("record {} ({s})", i + 1);
        assert_eq!(p.errors(), Vec::<String>::new(), "{at}: tshark errors");
        assert_eq!(
            p.vc(),
            s.vpi.zip(s.vci),
            "{at}: tshark's VPI/VCI differ from natm's"
        );
        match *want {
            Expect::Aal5 { sdu_len: 0 } => {
                // Wireshark takes Length 0 as "no valid trailer": no CRC verdict at all.
                assert_eq!(s.aal5, Some(Aal5Check::Abort), "{at}");
                assert_eq!(p.showname("atm.aal5t_crc"), None, "{at}");
                tally.aborts += 1;
            }
            Expect::Aal5 { sdu_len } => {
                assert_eq!(s.aal5, Some(Aal5Check::Ok), "{at}");
                assert_eq!(s.sdu_len, Some(sdu_len), "{at}");
                let crc = p.showname("atm.aal5t_crc").unwrap_or("(missing)");
                assert!(crc.ends_with("(correct)"), "{at}: tshark says {crc}");
                assert_eq!(p.show("atm.aal5t_len"), Some(&*sdu_len.to_string()), "{at}");
                assert_eq!(
                    p.show("atm.cells"),
                    Some(&*aal5::cell_count(sdu_len).to_string()),
                    "{at}"
                );
                tally.aal5_crc_ok += 1;
            }
            Expect::Cell { pti, oam } => {
                tally.cells += 1;
                assert_eq!(s.pti, Some(pti), "{at}");
                assert_eq!(p.show("atm.payload_type"), Some(&*pti.to_string()), "{at}");
                if s.hec.is_some() {
                    assert_eq!(s.hec, Some(HecCheck::Ok), "{at}");
                    let hec = p.showname("atm.header_error_check").unwrap_or("(missing)");
                    assert!(hec.ends_with("(correct)"), "{at}: tshark says {hec}");
                    tally.hec_ok += 1;
                }
                if let Some(function) = oam {
                    assert_eq!(s.kind, Kind::Oam, "{at}");
                    assert_eq!(s.crc10, Some(Crc10Check::Ok), "{at}");
                    assert!(p.has_proto("oamaal"), "{at}: tshark did not see OAM");
                    let crc = p.showname("atm.aal_oamcell.crc").unwrap_or("(missing)");
                    assert!(crc.ends_with("(correct))"), "{at}: tshark says {crc}");
                    assert_eq!(p.show("atm.aal_oamcell.type"), Some("1"), "{at}");
                    assert_eq!(
                        p.show("atm.aal_oamcell.type.fm"),
                        Some(&*function.to_string()),
                        "{at}"
                    );
                    tally.crc10_ok += 1;
                } else {
                    assert_ne!(s.kind, Kind::Oam, "{at}");
                }
            }
            Expect::Sun {
                proto,
                decoded,
                channel,
            } => {
                assert!(p.has_proto(proto), "{at}: tshark decoded {:?}", p.protos);
                let got = s.decoded.as_deref().unwrap_or("");
                assert!(got.starts_with(decoded), "{at}: natm decoded {got:?}");
                assert_eq!(p.show("atm.channel"), Some(channel), "{at}");
                tally.sunatm += 1;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Records

fn aal5_record(time: Instant, vc: VcId, sdu: &[u8], uu: u8) -> Record {
    let mut pdu = Vec::new();
    if sdu.is_empty() {
        // The abort PDU: Length 0, a good CRC.
        pdu.resize(natm_wire::PAYLOAD_LEN, 0);
        pdu[40] = uu;
        let crc = natm_wire::crc32::crc32(&pdu[..44]);
        pdu[44..].copy_from_slice(&crc.to_be_bytes());
    } else {
        aal5::encode_pdu(sdu, uu, 0, &mut pdu).unwrap();
    }
    Record {
        time,
        kind: RecordKind::Aal5Pdu { vc, pdu },
    }
}

fn cell_record(time: Instant, cell: &[u8; 53], with_hec: bool) -> Record {
    let mut c = CellRecord::from_cell(cell);
    if !with_hec {
        c.hec = None;
    }
    Record {
        time,
        kind: RecordKind::Cell(c),
    }
}

/// An SSCOP SD PDU carrying a Q.2931 STATUS ENQUIRY (call reference 0, no IEs).
fn signalling_sdu() -> Vec<u8> {
    let q2931 = [0x09, 0x03, 0x00, 0x00, 0x01, 0x75, 0x80, 0x00, 0x00];
    let pad = (4 - q2931.len() % 4) % 4;
    let mut sdu = q2931.to_vec();
    sdu.resize(q2931.len() + pad, 0);
    // Trailer: pad length in the top two bits, type 8 (SD), N(S) = 1.
    sdu.extend_from_slice(&[((pad as u8) << 6) | 0x08, 0, 0, 1]);
    sdu
}

/// LLC/SNAP + the 28-byte ICMP echo of atm-facts.md §2.3.
const LLC_ICMP: [u8; 36] = [
    0xaa, 0xaa, 0x03, 0x00, 0x00, 0x00, 0x08, 0x00, 0x45, 0x00, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00,
    0x40, 0x01, 0xf9, 0x8c, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0x02, 0x08, 0x00, 0xf7, 0xff,
    0x00, 0x00, 0x00, 0x00,
];

/// LLC/SNAP + the ATMARP request of atm-facts.md §7.2.
fn llc_atmarp() -> Vec<u8> {
    [
        &[0xaa, 0xaa, 0x03, 0x00, 0x00, 0x00, 0x08, 0x06][..],
        &[
            0x00, 0x13, 0x08, 0x00, 0x14, 0x00, 0x00, 0x01, 0x04, 0x00, 0x00, 0x04,
        ],
        &[
            0x47, 0x00, 0x05, 0x80, 0xff, 0xe1, 0x00, 0x00, 0x00, 0xf2, 0x1a, 0x3d, 0x5c, 0x00,
            0x20, 0x48, 0x1b, 0x00, 0x01, 0x00,
        ],
        &[10, 0, 0, 1, 10, 0, 0, 2],
    ]
    .concat()
}

/// SDU sizes at the edges: empty (abort), the one- and two-cell boundaries, common MTUs,
/// the largest SDU an ERF AAL5 record holds and the ones just past it, and the largest SDU.
const EDGE_SIZES: [usize; 24] = [
    0, 1, 39, 40, 41, 47, 48, 49, 87, 88, 89, 135, 136, 137, 1500, 1508, 1524, 9180, 9188, 65_464,
    65_465, 65_512, 65_513, 65_535,
];

fn sdu_size(rng: &mut Rng) -> usize {
    match rng.range(0, 99) {
        0..=34 => rng.range(1, 100) as usize,
        35..=49 => {
            // Around a cell boundary: 40 + 48k ± 1.
            let k = rng.range(0, 40);
            (40 + 48 * k + rng.range(0, 2)).saturating_sub(1) as usize
        }
        50..=89 => rng.range(101, 9188) as usize,
        _ => rng.range(9189, 65_535) as usize,
    }
}

#[test]
fn tshark_agrees_with_natm_on_random_captures() {
    if !tool_available("tshark") {
        return;
    }
    let mut rng = Rng(0x6e61_746d_2d63_6170); // "natm-cap"
    let mut t = Instant::from_nanos(1_700_000_000_000_000_000);
    let mut tick = |rng: &mut Rng| {
        t += natm_core::Duration::from_nanos(rng.range(1, 1_000_000));
        t
    };

    let mut erf = (Vec::new(), Vec::new());
    let mut exported = (Vec::new(), Vec::new());
    let mut sdu_bytes = 0usize;
    let mut sdus = 0usize;
    let mut cells_only = 0usize;
    let sizes: Vec<usize> = EDGE_SIZES
        .iter()
        .copied()
        .chain((0..1_000).map(|_| sdu_size(&mut rng)))
        .collect();
    for (i, &n) in sizes.iter().enumerate() {
        let vc = rng.vc();
        let uu = rng.next() as u8;
        let sdu = rng.sdu(n);
        sdu_bytes += n;
        sdus += 1;
        let time = tick(&mut rng);
        if n <= MAX_AAL5_SDU {
            erf.0.push(aal5_record(time, vc, &sdu, uu));
            erf.1.push(Expect::Aal5 { sdu_len: n });
        }
        // Cells: for the SDUs no ERF AAL5 record holds, and for a sample of the others
        // (those also as exported-PDU cells, where tshark checks the HEC).
        let sample = n > 0 && n <= 2_000 && i % 25 == 0;
        if n > MAX_AAL5_SDU || sample {
            cells_only += usize::from(n > MAX_AAL5_SDU);
            for cell in Segmenter::new(
                natm_wire::cell::CellHeader::data(vc, false),
                natm_core::HeaderFormat::Uni,
                &sdu,
                uu,
                0,
            )
            .unwrap()
            {
                let time = tick(&mut rng);
                let pti = (cell[3] >> 1) & 7;
                erf.0.push(cell_record(time, &cell, false));
                erf.1.push(Expect::Cell { pti, oam: None });
                if sample {
                    exported.0.push(cell_record(time, &cell, true));
                    exported.1.push(Expect::Cell { pti, oam: None });
                }
            }
        }
    }
    assert!(
        sdus >= 1_000 && sdu_bytes <= 50_000_000,
        "{sdus} SDUs, {sdu_bytes} bytes"
    );

    // Every OAM function on every flow, on random VCs, in both cell formats.
    let flows = [
        OamFlow::F4Segment,
        OamFlow::F4EndToEnd,
        OamFlow::F5Segment,
        OamFlow::F5EndToEnd,
    ];
    let request = Loopback::request(rng.next() as u32);
    let functions = [
        (OamRepr::Ais(Defect::default()), 0u8),
        (OamRepr::Rdi(Defect::default()), 1),
        (OamRepr::ContinuityCheck, 4),
        (OamRepr::Loopback(request), 8),
        (OamRepr::Loopback(request.reply()), 8),
    ];
    for flow in flows {
        for (repr, function) in &functions {
            let cell = repr.to_cell(flow, rng.vc());
            let pti = (cell[3] >> 1) & 7;
            let time = tick(&mut rng);
            for (file, with_hec) in [(&mut erf, false), (&mut exported, true)] {
                file.0.push(cell_record(time, &cell, with_hec));
                file.1.push(Expect::Cell {
                    pti,
                    oam: Some(*function),
                });
            }
        }
    }

    // SunATM: signalling, LLC/IP and ATMARP, typed and guessed, both directions.
    let mut sun = (Vec::new(), Vec::new());
    let sig = VcId::uni(0, 5).unwrap();
    let sun_records = [
        (
            sig,
            SunAtmType::Qsaal,
            signalling_sdu(),
            "q2931",
            "sscop signalling",
        ),
        (
            sig,
            SunAtmType::Guess,
            signalling_sdu(),
            "q2931",
            "sscop signalling",
        ),
        (
            rng.vc(),
            SunAtmType::Llc,
            LLC_ICMP.to_vec(),
            "icmp",
            "llc ipv4",
        ),
        (
            rng.vc(),
            SunAtmType::Guess,
            LLC_ICMP.to_vec(),
            "icmp",
            "llc ipv4",
        ),
        (
            rng.vc(),
            SunAtmType::Llc,
            llc_atmarp(),
            "arp",
            "llc arp atmarp request 10.0.0.1 -> 10.0.0.2",
        ),
    ];
    for (i, (vc, kind, sdu, proto, decoded)) in sun_records.into_iter().enumerate() {
        let direction = if i % 2 == 0 {
            Direction::DteToDce
        } else {
            Direction::DceToDte
        };
        sun.0.push(Record {
            time: tick(&mut rng),
            kind: RecordKind::SunAtm {
                vc,
                kind,
                direction,
                sdu,
            },
        });
        sun.1.push(Expect::Sun {
            proto,
            decoded,
            channel: if direction == Direction::DteToDce {
                "0"
            } else {
                "1"
            },
        });
    }

    let mut tally = Tally::default();
    let files = [
        (LinkType::Erf, &erf, "erf.pcap"),
        (LinkType::ExportedPdu, &exported, "cells.pcap"),
        (LinkType::SunAtm, &sun, "sunatm.pcap"),
    ];
    for (link, (records, expect), tag) in files {
        let file = write_file(link, records, tag);
        check(&file, records, expect, &mut tally);
    }
    eprintln!(
        "tshark agreed on {sdus} SDUs ({sdu_bytes} bytes; {cells_only} written as cells only): \
         {} ERF AAL5 records with CRC correct, {} abort PDUs, {} cell records ({} with HEC \
         correct, {} OAM with CRC-10 correct), {} SunATM records",
        tally.aal5_crc_ok, tally.aborts, tally.cells, tally.hec_ok, tally.crc10_ok, tally.sunatm
    );
    assert_eq!(tally.crc10_ok, 2 * flows.len() * functions.len());
    assert!(tally.aal5_crc_ok >= 1_000);
}

// ---------------------------------------------------------------------------------------
// Damage: tshark and `natm dump` must flag the same records the same way.

fn natm(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_natm"))
        .args(args)
        .output()
        .expect("natm runs")
}

fn dump_json(file: &TempFile) -> Vec<serde_json::Value> {
    let out = natm(&["dump", "--json", file.0.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn tshark_and_natm_dump_flag_the_same_damage() {
    if !tool_available("tshark") {
        return;
    }
    let t = Instant::from_nanos(1_700_000_000_000_000_000);
    let vc = VcId::uni(1, 100).unwrap();
    let good = aal5_record(t, vc, &[0x5a; 100], 0);
    let mut bad = good.clone();
    if let RecordKind::Aal5Pdu { pdu, .. } = &mut bad.kind {
        pdu[10] ^= 0x04;
    }
    let erf = write_file(LinkType::Erf, &[good, bad], "damaged-erf.pcap");
    let packets = tshark(&erf.0);
    let dumped = dump_json(&erf);
    assert!(
        packets[0]
            .showname("atm.aal5t_crc")
            .unwrap()
            .ends_with("(correct)")
    );
    assert_eq!(dumped[0]["aal5"], "ok");
    assert!(
        packets[1]
            .showname("atm.aal5t_crc")
            .unwrap()
            .ends_with("(incorrect)")
    );
    assert!(dumped[1]["aal5"]["crc"].is_object(), "{}", dumped[1]);

    let oam = OamRepr::Loopback(Loopback::request(9)).to_cell(OamFlow::F5EndToEnd, vc);
    let mut one_bit = oam;
    one_bit[2] ^= 0x01; // bit 23
    let mut two_bits = oam;
    two_bits[0] ^= 0xC0;
    let mut crc10 = oam;
    crc10[30] ^= 0x10;
    let cells: Vec<Record> = [oam, one_bit, two_bits, crc10]
        .iter()
        .map(|c| cell_record(t, c, true))
        .collect();
    let file = write_file(LinkType::ExportedPdu, &cells, "damaged-cells.pcap");
    let packets = tshark(&file.0);
    let dumped = dump_json(&file);
    let hec = |i: usize| {
        packets[i]
            .showname("atm.header_error_check")
            .unwrap()
            .to_owned()
    };
    assert!(hec(0).ends_with("(correct)"));
    assert_eq!(dumped[0]["hec"], "ok");
    assert!(hec(1).ends_with("(error in bit 23)"), "{}", hec(1));
    assert_eq!(dumped[1]["hec"]["corrected"]["bit"], 23);
    assert!(hec(2).contains("uncorrectable"), "{}", hec(2));
    assert!(dumped[2]["hec"]["bad"].is_object(), "{}", dumped[2]);
    let crc = packets[3].showname("atm.aal_oamcell.crc").unwrap();
    assert!(crc.ends_with("(incorrect))"), "{crc}");
    assert_eq!(dumped[3]["hec"], "ok");
    assert!(dumped[3]["crc10"]["bad"].is_object(), "{}", dumped[3]);

    // The text form says the same.
    let out = natm(&["dump", file.0.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[1].contains(" hec=corrected(bit 23)"), "{}", lines[1]);
    assert!(lines[2].contains(" hec=bad(syndrome "), "{}", lines[2]);
    assert!(lines[3].contains(" crc10=bad("), "{}", lines[3]);
}

#[test]
fn natm_aal5_send_output_reads_in_tshark() {
    if !tool_available("tshark") {
        return;
    }
    let out_file = TempFile::new("send.pcap");
    let out = natm(&[
        "aal5",
        "send",
        "--vc",
        "7.777",
        "--text",
        "Sent by natm aal5 send, over two cells of text",
        "--cells",
        "--uu",
        "0x5a",
        "--pcap",
        out_file.0.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).unwrap();
    assert!(
        line.starts_with(
            "aal5: 46-byte SDU on 7.777 in 2 cells (pad 42), trailer uu=0x5a cpi=0x00 len=46 crc="
        ),
        "{line}"
    );
    let packets = tshark(&out_file.0);
    assert_eq!(packets.len(), 3, "two cells, then the PDU");
    for p in &packets {
        assert_eq!(p.vc(), Some((7, 777)));
        assert_eq!(p.errors(), Vec::<String>::new());
    }
    assert_eq!(packets[0].show("atm.payload_type"), Some("0"));
    assert_eq!(packets[1].show("atm.payload_type"), Some("1"));
    assert!(
        packets[2]
            .showname("atm.aal5t_crc")
            .unwrap()
            .ends_with("(correct)")
    );
    assert_eq!(packets[2].show("atm.aal5t_len"), Some("46"));
    let dumped = dump_json(&out_file);
    assert_eq!(dumped[2]["aal5"], "ok");
    assert_eq!(dumped[2]["sdu_len"], 46);
}

// ---------------------------------------------------------------------------------------
// Files written by Wireshark's tools

fn hexdump(bytes: &[u8]) -> String {
    let mut s = String::from("0000");
    for b in bytes {
        s.push_str(&format!(" {b:02x}"));
    }
    s.push('\n');
    s
}

fn text2pcap(link: u32, bytes: &[u8], tag: &str) -> TempFile {
    let input = TempFile::new(&format!("{tag}.txt"));
    std::fs::write(&input.0, hexdump(bytes)).unwrap();
    let output = TempFile::new(tag);
    let out = Command::new("text2pcap")
        .args(["-q", "-F", "pcap", "-l", &link.to_string()])
        .arg(&input.0)
        .arg(&output.0)
        .output()
        .expect("text2pcap runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    output
}

fn read(file: &TempFile) -> Vec<Record> {
    Reader::new(std::io::BufReader::new(
        std::fs::File::open(&file.0).unwrap(),
    ))
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

#[test]
fn natm_reads_files_from_wiresharks_tools() {
    if !tool_available("text2pcap") || !tool_available("editcap") {
        return;
    }
    let vc = VcId::uni(1, 100).unwrap();
    // SunATM as text2pcap writes it: it puts its own pseudo-header (flags 0x80, VPI 0,
    // VCI 0) in front of the dumped bytes.
    let recs = read(&text2pcap(123, &LLC_ICMP, "t2p-sunatm.pcap"));
    assert_eq!(recs.len(), 1);
    assert_eq!(
        recs[0].kind,
        RecordKind::SunAtm {
            vc: VcId::uni(0, 0).unwrap(),
            kind: SunAtmType::Guess,
            direction: Direction::DteToDce,
            sdu: LLC_ICMP.to_vec()
        }
    );
    assert_eq!(summarize(&recs[0]).decoded.as_deref(), Some("llc ipv4"));
    // ERF as text2pcap writes it: it too puts its own header, all zeros (ERF type 0,
    // "legacy"), in front of the dumped bytes, so the record stays raw.
    let hello = aal5_record(Instant::from_nanos(5_000_000_000), vc, b"hello", 0);
    let mut erf = Vec::new();
    hello.encode(LinkType::Erf, &mut erf).unwrap();
    let recs = read(&text2pcap(197, &erf, "t2p-erf.pcap"));
    let mut want = vec![0u8; 16];
    want.extend_from_slice(&erf);
    assert_eq!(
        recs[0].kind,
        RecordKind::Other {
            linktype: LinkType::Erf,
            bytes: want
        }
    );
    assert_eq!(
        summarize(&recs[0]).note.as_deref(),
        Some("ERF type 0, not decoded")
    );
    // A link type natm does not decode comes through raw.
    let recs = read(&text2pcap(1, &[0xff; 20], "t2p-ether.pcap"));
    assert_eq!(
        recs[0].kind,
        RecordKind::Other {
            linktype: LinkType::Other(1),
            bytes: vec![0xff; 20]
        }
    );
    // editcap's nanosecond pcap of a natm file reads back the same records.
    let oam = OamRepr::ContinuityCheck.to_cell(OamFlow::F5Segment, vc);
    let ours = [
        hello,
        cell_record(Instant::from_nanos(5_000_000_123), &oam, false),
    ];
    let micro = write_file(LinkType::Erf, &ours, "editcap-in.pcap");
    let nano = TempFile::new("editcap-out.pcap");
    let out = Command::new("editcap")
        .args(["-F", "nsecpcap"])
        .arg(&micro.0)
        .arg(&nano.0)
        .output()
        .expect("editcap runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = Reader::new(std::fs::File::open(&nano.0).unwrap()).unwrap();
    assert_eq!(r.header().resolution, natm_capture::TsResolution::Nanos);
    assert_eq!(r.collect::<Result<Vec<_>, _>>().unwrap(), ours);
}

// ---------------------------------------------------------------------------------------
// Signalling: random valid Q.2931 messages, emitted by natm, in SSCOP SDs, read by tshark.
//
// The generator draws over natm_wire::q2931's types (its `arbitrary` module was not
// written yet): every message type of `MsgType::ALL`, with the IEs Q.2931 / UNI 3.1 /
// UNI 4.0 allow in it, and every IE natm decodes appears in some type. Contents are random
// within what the standards define: the traffic-descriptor combinations of UNI 3.1 / 4.0,
// AAL1, AAL3/4, AAL5 and user-defined AAL parameters, BLLI layer octets with the
// extension octets their protocol defines, cause diagnostics in the form Q.2931 gives
// for each cause value, AESAs of each format and native E.164 numbers.

use natm_core::Aesa;
use natm_wire::q2931::{
    AalParams, AalType, Atc, BearerCapability, BearerClass, Bhli, BhliType, Blli, BlliLayer,
    CallRef, CallState, Cause, CauseValue, CodingStandard, ConnectionId, ExtQos, Header, Location,
    Message, MsgAction, MsgInstruction, MsgType, Notification, Number, PartyNumber, PrefExcl,
    Presentation, QosClass, QosParam, RepeatIndicator, RestartClass, RestartIndicator, Screening,
    SscsType, Subaddress, SubaddressType, TmOptions, TrafficDescriptor, TrafficDirection,
    TransitDelay, UserPlane, VpAssoc,
};

impl Rng {
    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }

    /// True with probability `n` in `d`.
    fn chance(&mut self, n: u64, d: u64) -> bool {
        self.next() % d < n
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.range(0, from.len() as u64 - 1) as usize]
    }

    fn u8(&mut self) -> u8 {
        self.next() as u8
    }

    /// A 24-bit cell rate or burst size, never 0.
    fn rate(&mut self) -> u32 {
        // Half small (everyday rates), half anywhere in 24 bits.
        if self.coin() {
            self.range(1, 400_000) as u32
        } else {
            self.range(1, 0xFF_FFFF) as u32
        }
    }
}

/// IEs whose contents the generator draws.
mod sig_gen {
    use super::*;

    pub fn aesa(rng: &mut Rng) -> Aesa {
        let mut a = [0u8; 20];
        a.copy_from_slice(&rng.bytes(20));
        // The three AESA formats of UNI 3.1 §5.1.3.1 and UNI 4.0 (atm-facts §5.6), and
        // their group (anycast) AFIs. Not Linux's "local" AFI 0x49: the UNIs do not define
        // it, and Wireshark 4.0 flags it "Unknown AFI".
        a[0] = rng.pick(&[
            Aesa::AFI_DCC,
            Aesa::AFI_ICD,
            Aesa::AFI_E164,
            0xBD,
            0xC5,
            0xC3,
        ]);
        if matches!(a[0], Aesa::AFI_E164 | 0xC3) {
            // 15 BCD digits and the F pad (atm-facts §5.6).
            for (i, b) in a[1..9].iter_mut().enumerate() {
                let hi = rng.range(0, 9) as u8;
                let lo = if i == 7 { 0x0F } else { rng.range(0, 9) as u8 };
                *b = (hi << 4) | lo;
            }
        } else if matches!(a[0], Aesa::AFI_DCC | 0xBD) {
            a[1] = (rng.range(0, 9) as u8) << 4 | rng.range(0, 9) as u8;
            a[2] = (rng.range(0, 9) as u8) << 4 | 0x0F;
        }
        a[19] = rng.u8();
        Aesa(a)
    }

    pub fn party(rng: &mut Rng, calling: bool) -> PartyNumber {
        let number = if rng.chance(3, 4) {
            Number::Aesa(aesa(rng))
        } else {
            let n = rng.range(1, 15) as usize;
            Number::E164((0..n).map(|_| b'0' + rng.range(0, 9) as u8).collect())
        };
        let screening = (calling && rng.coin()).then(|| {
            (
                Presentation::from_code(rng.range(0, 2) as u8),
                Screening::from_code(rng.range(0, 3) as u8),
            )
        });
        PartyNumber { number, screening }
    }

    pub fn subaddress(rng: &mut Rng) -> Subaddress {
        if rng.coin() {
            Subaddress {
                kind: SubaddressType::Aesa,
                odd: false,
                info: aesa(rng).0.to_vec(),
            }
        } else {
            let n = rng.range(1, 20) as usize;
            Subaddress {
                kind: SubaddressType::User,
                odd: rng.coin(),
                info: rng.bytes(n),
            }
        }
    }

    pub fn aal(rng: &mut Rng) -> AalParams {
        match rng.range(0, 5) {
            // AAL5, the common case, twice as often.
            0 | 1 => {
                let sizes = rng.chance(4, 5);
                AalParams::Aal5 {
                    fwd_max_sdu: sizes.then(|| rng.range(1, 65535) as u16),
                    bwd_max_sdu: sizes.then(|| rng.range(1, 65535) as u16),
                    // 0x83 mode: UNI 3.0 only, not sent (atm-facts §5.3).
                    mode: None,
                    sscs: rng.coin().then(|| {
                        rng.pick(&[
                            SscsType::Null,
                            SscsType::SscopAssured,
                            SscsType::SscopNonAssured,
                            SscsType::FrameRelay,
                        ])
                    }),
                }
            }
            2 => {
                // AAL1 (Q.2931 §4.5.5): subtype, CBR rate, multiplier (with rate 0x40),
                // clock recovery, error correction, SDT block size, partial fill.
                let mut rest = Vec::new();
                rest.extend_from_slice(&[0x85, rng.range(0, 5) as u8]);
                let cbr = rng.pick(&[0x01u8, 0x04, 0x05, 0x06, 0x07, 0x10, 0x11, 0x12, 0x40]);
                rest.extend_from_slice(&[0x86, cbr]);
                if cbr == 0x40 {
                    rest.push(0x87);
                    rest.extend_from_slice(&(rng.range(1, 65535) as u16).to_be_bytes());
                }
                if rng.coin() {
                    rest.extend_from_slice(&[0x88, rng.range(0, 2) as u8]);
                }
                if rng.coin() {
                    rest.extend_from_slice(&[0x89, rng.range(0, 2) as u8]);
                }
                if rng.coin() {
                    rest.push(0x8A);
                    rest.extend_from_slice(&(rng.range(1, 65535) as u16).to_be_bytes());
                }
                if rng.coin() {
                    rest.extend_from_slice(&[0x8B, rng.range(1, 47) as u8]);
                }
                AalParams::Other {
                    aal_type: AalType::Aal1,
                    rest,
                }
            }
            3 => {
                // AAL3/4: max CPCS-SDU sizes, MID range, SSCS type.
                let mut rest = Vec::new();
                rest.push(0x8C);
                rest.extend_from_slice(&(rng.range(1, 65535) as u16).to_be_bytes());
                rest.push(0x81);
                rest.extend_from_slice(&(rng.range(1, 65535) as u16).to_be_bytes());
                if rng.coin() {
                    let lo = rng.range(0, 1023) as u16;
                    let hi = rng.range(u64::from(lo), 1023) as u16;
                    rest.push(0x82);
                    rest.extend_from_slice(&lo.to_be_bytes());
                    rest.extend_from_slice(&hi.to_be_bytes());
                }
                if rng.coin() {
                    rest.extend_from_slice(&[0x84, rng.pick(&[0u8, 1, 2, 4])]);
                }
                AalParams::Other {
                    aal_type: AalType::Aal34,
                    rest,
                }
            }
            _ => AalParams::Other {
                // User-defined AAL (Q.2931 0x10): four octets of user information.
                aal_type: AalType::UserDefined,
                rest: rng.bytes(4),
            },
        }
    }

    /// One direction of the UNI 3.1 / 4.0 allowed combinations (`kind` as in
    /// [`traffic`]).
    fn direction(rng: &mut Rng, kind: u64) -> TrafficDirection {
        let mut d = TrafficDirection::default();
        let pcr = rng.rate();
        d.pcr01 = Some(pcr);
        match kind {
            // CBR.2/3: PCR CLP=0 and CLP=0+1.
            1 => d.pcr0 = Some(rng.range(1, u64::from(pcr)) as u32),
            // VBR.2/3: SCR and MBS for CLP=0.
            2 => {
                d.scr0 = Some(rng.range(1, u64::from(pcr)) as u32);
                d.mbs0 = Some(rng.rate());
            }
            // VBR.1: SCR and MBS for CLP=0+1.
            3 => {
                d.scr01 = Some(rng.range(1, u64::from(pcr)) as u32);
                d.mbs01 = Some(rng.rate());
            }
            // ABR (UNI 4.0): MCR.
            4 => d.abr_mcr = Some(rng.range(0, u64::from(pcr)) as u32),
            // CBR.1 and UBR: PCR CLP=0+1 alone.
            _ => {}
        }
        d
    }

    /// 0 CBR.1, 1 CBR.2/3, 2 VBR.2/3, 3 VBR.1, 4 ABR, 5 UBR (best effort).
    pub fn traffic(rng: &mut Rng) -> TrafficDescriptor {
        let kind = rng.range(0, 5);
        let mut options = 0u8;
        if matches!(kind, 1 | 2) && rng.coin() {
            options |= TmOptions::FWD_TAGGING | TmOptions::BWD_TAGGING;
        }
        if rng.coin() {
            options |= TmOptions::FWD_FRAME_DISCARD;
        }
        if rng.coin() {
            options |= TmOptions::BWD_FRAME_DISCARD;
        }
        TrafficDescriptor {
            fwd: direction(rng, kind),
            bwd: direction(rng, kind),
            best_effort: kind == 5,
            options: (options != 0 || rng.chance(1, 8)).then_some(TmOptions(options)),
        }
    }

    /// UNI 4.0 minimum acceptable descriptor: PCR (CLP=0 or 0+1) and MCR.
    pub fn min_traffic(rng: &mut Rng) -> TrafficDescriptor {
        let mut t = TrafficDescriptor::default();
        for d in [&mut t.fwd, &mut t.bwd] {
            if rng.coin() {
                d.pcr01 = Some(rng.rate());
            } else {
                d.pcr0 = Some(rng.rate());
            }
            if rng.coin() {
                d.abr_mcr = Some(rng.rate());
            }
        }
        t
    }

    pub fn bearer(rng: &mut Rng) -> BearerCapability {
        let class = rng.pick(&[
            BearerClass::A,
            BearerClass::C,
            BearerClass::X,
            BearerClass::Vp,
        ]);
        // Octet 5a only with BCOB-X and transparent VP (Q.2931 §4.5.7).
        let atc = matches!(class, BearerClass::X | BearerClass::Vp)
            .then(|| {
                rng.coin().then(|| {
                    rng.pick(&[
                        Atc::NoIndication,
                        Atc::Cbr,
                        Atc::CbrClr,
                        Atc::RtVbr,
                        Atc::NrtVbr,
                        Atc::NrtVbrClr,
                        Atc::Abr,
                        Atc::RtVbrClr,
                    ])
                })
            })
            .flatten();
        BearerCapability {
            class,
            atc,
            clipping: rng.coin(),
            user_plane: rng.pick(&[UserPlane::P2p, UserPlane::P2mp]),
        }
    }

    pub fn bhli(rng: &mut Rng) -> Bhli {
        let (kind, n) = match rng.range(0, 3) {
            0 => (BhliType::Iso, rng.range(1, 8)),
            1 => (BhliType::User, rng.range(1, 8)),
            2 => (BhliType::Profile, 4),
            // OUI (3) and application identifier (4).
            _ => (BhliType::Vendor, 7),
        };
        Bhli {
            kind,
            info: rng.bytes(n as usize),
        }
    }

    /// Extension octets: `n` octets, all with the extension bit clear but the last.
    fn octets(values: &[u8]) -> Vec<u8> {
        let last = values.len().saturating_sub(1);
        values
            .iter()
            .enumerate()
            .map(|(i, v)| if i == last { v | 0x80 } else { v & 0x7F })
            .collect()
    }

    pub fn blli(rng: &mut Rng) -> Blli {
        let mut b = Blli::default();
        if rng.chance(1, 4) {
            // Layer 1: ITU-T I.361 / ATM (the one code point, 1).
            b.layer1 = Some(1);
        }
        let l2 = rng.range(0, 4);
        if l2 > 0 {
            let protocol = rng.pick(&[
                0x01u8, 0x02, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x10, 0x11,
            ]);
            let more = match protocol {
                // User specified: octet 6a carries the protocol information.
                0x10 => octets(&[rng.u8()]),
                // X.25-like modes: 6a mode (normal / extended), 6b window size.
                0x06..=0x09 | 0x0A | 0x0B | 0x0D | 0x0E | 0x11 if rng.coin() => {
                    let mode = rng.range(1, 2) as u8;
                    if rng.coin() {
                        octets(&[mode << 5, rng.range(1, 127) as u8])
                    } else {
                        octets(&[mode << 5])
                    }
                }
                _ => Vec::new(),
            };
            b.layer2 = Some(BlliLayer { protocol, more });
        }
        let l3 = rng.range(0, 3);
        if l3 > 0 || b.layer2.is_none() && b.layer1.is_none() {
            let protocol = rng.pick(&[0x06u8, 0x07, 0x08, 0x09, 0x0B, 0x10]);
            let more = match protocol {
                // X.25 PLP, ISO 8208, X.223: 7a mode, 7b default packet size, 7c window.
                0x06..=0x08 if rng.coin() => {
                    let mode = rng.range(1, 2) as u8;
                    octets(&[mode << 5, rng.range(4, 12) as u8, rng.range(1, 127) as u8])
                }
                // User specified: 7a.
                0x10 => octets(&[rng.u8()]),
                // ISO/IEC TR 9577: the IPI over 7a and 7b; SNAP (0x80) adds octet 8.
                0x0B => {
                    let ipi = rng.pick(&[0xCCu8, 0x80, 0x81, 0x82, 0x83]);
                    if ipi == 0x80 {
                        let mut s = [0u8; 5];
                        s.copy_from_slice(&rng.bytes(5));
                        if rng.coin() {
                            s[..3].copy_from_slice(&[0, 0, 0]);
                        }
                        b.snap = Some(s);
                    }
                    vec![ipi >> 1, 0x80 | ((ipi & 1) << 6)]
                }
                _ => Vec::new(),
            };
            b.layer3 = Some(BlliLayer { protocol, more });
        }
        b
    }

    pub fn conn(rng: &mut Rng) -> ConnectionId {
        let pref_excl = rng.pick(&[
            PrefExcl::Exclusive,
            PrefExcl::Exclusive,
            PrefExcl::AnyVci,
            PrefExcl::NoVci,
        ]);
        ConnectionId {
            vp_assoc: rng.pick(&[VpAssoc::Explicit, VpAssoc::Explicit, VpAssoc::Associated]),
            pref_excl,
            vpci: rng.range(0, 255) as u16,
            vci: if pref_excl == PrefExcl::NoVci {
                0
            } else {
                rng.range(32, 65535) as u16
            },
        }
    }

    pub fn qos(rng: &mut Rng) -> QosParam {
        if rng.coin() {
            QosParam::UNSPECIFIED
        } else {
            let c = [
                QosClass::Unspecified,
                QosClass::Class1,
                QosClass::Class2,
                QosClass::Class3,
                QosClass::Class4,
            ];
            QosParam {
                coding: CodingStandard::NetworkSpecific,
                fwd: rng.pick(&c),
                bwd: rng.pick(&c),
            }
        }
    }

    pub fn ext_qos(rng: &mut Rng) -> ExtQos {
        let mut cdv = || rng.coin().then(|| rng.range(0, 0xFF_FFFF) as u32);
        let (fwd_cdv, bwd_cdv, fwd_cum_cdv, bwd_cum_cdv) = (cdv(), cdv(), cdv(), cdv());
        ExtQos {
            origin: rng.range(0, 1) as u8,
            fwd_cdv,
            bwd_cdv,
            fwd_cum_cdv,
            bwd_cum_cdv,
            fwd_clr: rng.coin().then(|| rng.range(1, 15) as u8),
            bwd_clr: rng.coin().then(|| rng.range(1, 15) as u8),
        }
    }

    pub fn transit_delay(rng: &mut Rng) -> TransitDelay {
        TransitDelay {
            cumulative: Some(rng.range(0, 65535) as u16),
            maximum: rng.coin().then(|| rng.range(0, 65535) as u16),
            network_generated: rng.coin(),
        }
    }

    /// IE identifiers a cause diagnostic may name.
    const IE_IDS: [u8; 12] = [
        0x08, 0x14, 0x42, 0x58, 0x59, 0x5A, 0x5C, 0x5E, 0x5F, 0x6C, 0x70, 0x79,
    ];

    pub fn cause(rng: &mut Rng) -> Cause {
        let named: Vec<u8> = (0..128u8)
            .filter(|&v| CauseValue::from_code(v).name().is_some())
            .collect();
        let value = rng.pick(&named);
        let location = rng.pick(&[0u8, 1, 2, 3, 4, 5, 7, 10]);
        // Diagnostics as Q.2931 Table 4-15 / UNI 3.1 give them for each cause.
        let diagnostics = match value {
            // Condition: unknown, permanent, transient.
            1..=3 | 49 if rng.coin() => vec![0x80 | rng.range(0, 2) as u8],
            // Rejection reason (user specific, IE missing, IE insufficient), condition,
            // then the user's diagnostic or the IE.
            21 if rng.coin() => match rng.range(0, 2) {
                0 => {
                    let mut d = vec![0x80 | rng.range(0, 2) as u8];
                    let n = rng.range(0, 4) as usize;
                    d.extend(rng.bytes(n));
                    d
                }
                r => vec![
                    0x80 | ((r as u8) << 2) | rng.range(0, 2) as u8,
                    rng.pick(&IE_IDS),
                ],
            },
            // The traffic-descriptor subfield identifiers.
            37 => (0..rng.range(0, 3))
                .map(|_| rng.pick(&[0x82u8, 0x83, 0x84, 0x85, 0x88, 0x89, 0xA0, 0xA1]))
                .collect(),
            // IE identifiers.
            43 | 88 | 96 | 99 | 100 => (0..rng.range(0, 3)).map(|_| rng.pick(&IE_IDS)).collect(),
            // VPCI and VCI.
            82 if rng.coin() => {
                let mut d = (rng.range(0, 255) as u16).to_be_bytes().to_vec();
                d.extend((rng.range(32, 65535) as u16).to_be_bytes());
                d
            }
            // The message type.
            97 | 101 if rng.coin() => vec![rng.pick(&MsgType::ALL).code()],
            // The timer, three IA5 digits.
            102 => rng
                .pick(&[
                    b"303", b"308", b"309", b"310", b"313", b"316", b"317", b"322",
                ])
                .to_vec(),
            _ => Vec::new(),
        };
        Cause {
            location: Location::from_code(location),
            value: CauseValue::from_code(value),
            diagnostics,
        }
    }

    pub fn call_state(rng: &mut Rng) -> CallState {
        CallState::from_code(rng.pick(&[0u8, 1, 3, 4, 6, 7, 8, 9, 10, 11, 12, 0x3D, 0x3E]))
    }

    pub fn notification(rng: &mut Rng) -> Notification {
        let n = rng.range(1, 8) as usize;
        Notification {
            description: rng.bytes(n),
        }
    }

    /// A message of type `t` with the IEs its standard tables allow, some of each.
    pub fn message(rng: &mut Rng, t: MsgType) -> Message {
        let restart = matches!(t, MsgType::Restart | MsgType::RestartAck);
        let call_ref = if restart {
            CallRef::new(0, t == MsgType::RestartAck)
        } else {
            CallRef::new(rng.range(1, u64::from(CallRef::MAX)) as u32, rng.coin())
        };
        let mut m = Message::new(Header::new(t, call_ref));
        if rng.chance(1, 4) {
            m.header.instruction = MsgInstruction {
                flag: true,
                pass_along: false,
                action: rng.pick(&[
                    MsgAction::ClearCall,
                    MsgAction::DiscardIgnore,
                    MsgAction::DiscardReport,
                ]),
            };
        }
        let some = |rng: &mut Rng| rng.chance(2, 3);
        let notify = |rng: &mut Rng, m: &mut Message| {
            if rng.chance(1, 4) {
                m.notification = Some(notification(rng));
            }
        };
        match t {
            MsgType::Setup => {
                m.traffic = Some(traffic(rng));
                m.bearer = Some(bearer(rng));
                m.called = Some(party(rng, false));
                if some(rng) {
                    m.aal = Some(aal(rng));
                }
                if rng.coin() {
                    m.min_traffic = Some(min_traffic(rng));
                } else if rng.coin() {
                    m.alt_traffic = Some(traffic(rng));
                }
                if rng.coin() {
                    m.bhli = Some(bhli(rng));
                }
                if rng.coin() {
                    m.called_sub = Some(subaddress(rng));
                }
                if some(rng) {
                    m.calling = Some(party(rng, true));
                }
                if rng.coin() {
                    m.calling_sub = Some(subaddress(rng));
                }
                let n = rng.range(0, 3);
                m.blli = (0..n).map(|_| blli(rng)).collect();
                if n > 1 {
                    // Prioritised list for selecting one possibility.
                    m.repeat = Some(RepeatIndicator { indication: 2 });
                }
                if rng.coin() {
                    m.connection_id = Some(conn(rng));
                }
                if some(rng) {
                    m.qos = Some(qos(rng));
                }
                if rng.coin() {
                    m.ext_qos = Some(ext_qos(rng));
                }
                if rng.coin() {
                    m.transit_delay = Some(transit_delay(rng));
                }
                m.sending_complete = rng.coin();
                notify(rng, &mut m);
            }
            MsgType::CallProceeding | MsgType::Alerting => {
                if some(rng) {
                    m.connection_id = Some(conn(rng));
                }
                notify(rng, &mut m);
            }
            MsgType::Connect => {
                if some(rng) {
                    m.aal = Some(aal(rng));
                }
                if rng.coin() {
                    m.blli = vec![blli(rng)];
                }
                if some(rng) {
                    m.connection_id = Some(conn(rng));
                }
                if rng.coin() {
                    m.traffic = Some(traffic(rng));
                }
                if rng.coin() {
                    m.ext_qos = Some(ext_qos(rng));
                }
                if rng.coin() {
                    m.transit_delay = Some(transit_delay(rng));
                }
                notify(rng, &mut m);
            }
            MsgType::ConnectAck => notify(rng, &mut m),
            MsgType::Release | MsgType::ReleaseComplete => {
                let least = u64::from(t == MsgType::Release);
                m.cause = (0..rng.range(least, 2)).map(|_| cause(rng)).collect();
                notify(rng, &mut m);
            }
            MsgType::Status => {
                m.cause = vec![cause(rng)];
                m.call_state = Some(call_state(rng));
            }
            MsgType::StatusEnquiry => {}
            MsgType::Restart | MsgType::RestartAck => {
                let class = rng.pick(&[
                    RestartClass::IndicatedVc,
                    RestartClass::AllVcsInVpc,
                    RestartClass::AllVcs,
                ]);
                m.restart = Some(RestartIndicator { class });
                match class {
                    RestartClass::IndicatedVc => m.connection_id = Some(conn(rng)),
                    RestartClass::AllVcsInVpc => {
                        m.connection_id = Some(ConnectionId {
                            pref_excl: PrefExcl::NoVci,
                            vci: 0,
                            ..conn(rng)
                        });
                    }
                    _ => {}
                }
            }
            MsgType::Notify => m.notification = Some(notification(rng)),
            MsgType::Unknown(_) => unreachable!("only named types"),
        }
        m
    }
}

/// One packet of tshark's PDML with the offsets of its fields, for the signalling checks.
#[derive(Debug, Default)]
struct SigPacket {
    /// (name, show, pos) of every field.
    fields: Vec<(String, String, usize)>,
    /// (name, pos) of every protocol.
    protos: Vec<(String, usize)>,
}

/// An expert info tshark attached to a packet.
#[derive(Debug)]
struct Expert {
    pos: usize,
    message: String,
    severity: String,
}

impl SigPacket {
    fn show(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|f| f.0 == name)
            .map(|f| f.1.as_str())
    }

    fn shows(&self, name: &str) -> Vec<&str> {
        self.fields
            .iter()
            .filter(|f| f.0 == name)
            .map(|f| f.1.as_str())
            .collect()
    }

    fn proto_pos(&self, name: &str) -> Option<usize> {
        self.protos.iter().find(|p| p.0 == name).map(|p| p.1)
    }

    fn malformed(&self) -> bool {
        self.protos.iter().any(|p| p.0.starts_with("_ws.malformed"))
    }

    fn experts(&self) -> Vec<Expert> {
        let mut out: Vec<Expert> = Vec::new();
        for f in &self.fields {
            match f.0.as_str() {
                "_ws.expert" => out.push(Expert {
                    pos: f.2,
                    message: String::new(),
                    severity: String::new(),
                }),
                "_ws.expert.message" => {
                    if let Some(e) = out.last_mut() {
                        e.message.clone_from(&f.1);
                    }
                }
                "_ws.expert.severity" => {
                    if let Some(e) = out.last_mut() {
                        e.severity.clone_from(&f.1);
                    }
                }
                _ => {}
            }
        }
        out
    }
}

fn tshark_sig(file: &Path) -> Vec<SigPacket> {
    let text = pdml(file, &[]);
    let mut packets = Vec::new();
    let mut current: Option<SigPacket> = None;
    for line in text.lines() {
        let line = line.trim_start();
        if line.starts_with("<packet>") {
            current = Some(SigPacket::default());
        } else if line.starts_with("</packet>") {
            packets.extend(current.take());
        } else if let Some(p) = current.as_mut() {
            let pos = attr(line, "pos").and_then(|s| s.parse().ok()).unwrap_or(0);
            if line.starts_with("<proto ") {
                p.protos.extend(attr(line, "name").map(|n| (n, pos)));
            } else if line.starts_with("<field ")
                && let Some(name) = attr(line, "name")
            {
                p.fields
                    .push((name, attr(line, "show").unwrap_or_default(), pos));
            }
        }
    }
    packets
}

/// The IEs of an emitted message: (identifier, first byte, end, contents), offsets from
/// the message's first byte.
fn ie_layout(msg: &[u8]) -> Vec<(u8, usize, usize, &[u8])> {
    let mut out = Vec::new();
    let mut at = natm_wire::q2931::HEADER_LEN;
    while at + 4 <= msg.len() {
        let len = usize::from(u16::from_be_bytes([msg[at + 2], msg[at + 3]]));
        let end = at + 4 + len;
        out.push((msg[at], at, end, &msg[at + 4..end]));
        at = end;
    }
    assert_eq!(at, msg.len(), "IEs fill the message");
    out
}

/// Wireshark 4.0 q2931 dissector bugs that valid messages trip, each recognised exactly
/// (where in which IE) so that nothing else passes. Its AAL-parameter, traffic-descriptor,
/// broadband-sending-complete and some cause-diagnostic loops run while `len >= 0`, one
/// byte past the IE; its transit-delay loop does not step over a subfield's value; it
/// lacks UNI 4.0's ABR MCR subfields and reads user-defined AAL as AAL type 0x40.
#[derive(Debug, Default)]
struct Quirks {
    /// atm-facts §5.5: "Unknown AAL parameter" / "Unknown ATM traffic descriptor
    /// element" / "Unknown broadband sending complete element" warnings on the byte after
    /// an AAL-parameters, traffic-descriptor or sending-complete IE that another IE
    /// follows.
    overread_warning: usize,
    /// The same loops when the IE is the message's last: the read past the message
    /// throws, and tshark marks the packet malformed.
    overread_last_ie: usize,
    /// "Unknown ATM traffic descriptor element" on a forward or backward ABR minimum cell
    /// rate subfield (0x92 / 0x93, UNI 4.0 §4.5.6), which Wireshark 4.0 does not know.
    abr_mcr: usize,
    /// "Unknown transit delay identifier" inside an end-to-end transit delay IE with both
    /// the cumulative and the maximum delay: Wireshark reads the second identifier from
    /// the first value's bytes.
    transit_delay: usize,
    /// The cause diagnostics loop of causes 37, 43, 88, 96, 99 and 100 (IE or subfield
    /// identifiers) when the cause is the last IE: malformed, the same way.
    cause_diag_last_ie: usize,
    /// User-defined AAL (type 0x10, Q.2931): Wireshark names the type but parses its four
    /// octets of user information as subfields ("Unknown AAL parameter", atm-facts §10.10).
    user_defined_aal: usize,
}

/// (offset, identifier) of each subfield of a traffic descriptor's contents.
fn td_subfields(c: &[u8]) -> impl Iterator<Item = (usize, u8)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let id = *c.get(at)?;
        let here = at;
        at += match id {
            0xBE => 1,
            0xBF => 2,
            _ => 4,
        };
        Some((here, id))
    })
}

/// Every anomaly tshark reports on record `at` must be one of [`Quirks`]; anything else is a
/// failure.
fn check_sig_experts(at: &str, msg: &[u8], p: &SigPacket, q: &mut Quirks, bad: &mut Vec<String>) {
    let base = p
        .proto_pos("q2931")
        .unwrap_or_else(|| panic!("{at}: no q2931 in tshark"));
    let ies = ie_layout(msg);
    let last = ies.last().copied();
    let overread_ids = [0x58u8, 0x59, 0x62];
    let loop_causes = [37u8, 43, 88, 96, 99, 100];
    let last_overreads = last.is_some_and(|(id, ..)| overread_ids.contains(&id))
        || last.is_some_and(|(id, _, _, c)| {
            id == 0x08 && c.len() > 2 && loop_causes.contains(&(c[1] & 0x7F))
        });
    if p.malformed() {
        if !last_overreads {
            bad.push(format!(
                "{at}: tshark calls a valid message malformed: {}",
                hexdump(msg)
            ));
        }
        match last {
            Some((0x08, ..)) => q.cause_diag_last_ie += 1,
            _ => q.overread_last_ie += 1,
        }
    }
    for e in p.experts() {
        if e.severity != "6291456" && e.severity != PI_ERROR {
            continue; // notes and chats: not problems
        }
        if e.message.starts_with("Malformed Packet") && p.malformed() {
            continue; // counted above
        }
        let rel = e.pos.wrapping_sub(base);
        let after = |id: u8| ies.iter().any(|&(i, _, end, _)| i == id && end == rel);
        let inside = |id: u8, ok: &dyn Fn(&[u8]) -> bool| {
            ies.iter()
                .any(|&(i, start, end, c)| i == id && (start..end).contains(&rel) && ok(c))
        };
        let user_aal = inside(0x58, &|c| c.first() == Some(&0x10));
        let both_delays = inside(0x42, &|c| c.len() >= 6);
        let abr_mcr = ies.iter().any(|&(i, start, _, c)| {
            i == 0x59
                && td_subfields(c)
                    .any(|(at, id)| matches!(id, 0x92 | 0x93) && start + 4 + at == rel)
        });
        match e.message.as_str() {
            "Unknown AAL parameter" if user_aal => q.user_defined_aal += 1,
            "Unknown AAL parameter" if after(0x58) => q.overread_warning += 1,
            "Unknown ATM traffic descriptor element" if abr_mcr => q.abr_mcr += 1,
            "Unknown ATM traffic descriptor element" if after(0x59) => q.overread_warning += 1,
            "Unknown broadband sending complete element" if after(0x62) => {
                q.overread_warning += 1;
            }
            "Unknown transit delay identifier" if both_delays => q.transit_delay += 1,
            _ => bad.push(format!(
                "{at}: tshark {} at byte {rel} of the message: {:?}; message {}",
                if e.severity == PI_ERROR {
                    "error"
                } else {
                    "warning"
                },
                e.message,
                hexdump(msg)
            )),
        }
    }
}

#[test]
fn tshark_decodes_random_signalling_natm_emits() {
    const MESSAGES: usize = 1200;
    if !tool_available("tshark") {
        return;
    }
    let mut rng = Rng(0x5157_2931_0000_0017);
    let vc = VcId::uni(0, 5).unwrap();
    let n_s_base = rng.range(0, 0xFF_FFFF) as u32;
    type Side = (Vec<Record>, Vec<(Message, Vec<u8>, u32)>);
    let (mut sun, mut erf): (Side, Side) = Default::default();
    let mut ie_kinds = std::collections::BTreeSet::new();
    for i in 0..MESSAGES {
        let t = MsgType::ALL[i % MsgType::ALL.len()];
        let m = sig_gen::message(&mut rng, t);
        let bytes = m.to_vec();
        // natm reads back what it wrote, with no IE problem.
        let parsed = Message::parse(&bytes).unwrap_or_else(|e| panic!("{e}: {m}"));
        assert_eq!(parsed.problems, [], "message {i}: {m}");
        assert_eq!(parsed.message, m, "message {i} round trip");
        for (id, ..) in ie_layout(&bytes) {
            ie_kinds.insert(id);
        }
        let n_s = (n_s_base + i as u32) & 0xFF_FFFF;
        let sd = natm_wire::sscop::Repr::Sd { n_s, info: &bytes }
            .to_vec()
            .unwrap();
        let time = Instant::from_nanos(1_000_000_000 + i as u64 * 1_000_000);
        let record = if (i / MsgType::ALL.len()).is_multiple_of(2) {
            let direction = if rng.coin() {
                Direction::DteToDce
            } else {
                Direction::DceToDte
            };
            RecordKind::SunAtm {
                vc,
                kind: SunAtmType::Qsaal,
                direction,
                sdu: sd,
            }
        } else {
            let mut pdu = Vec::new();
            aal5::encode_pdu(&sd, 0, 0, &mut pdu).unwrap();
            RecordKind::Aal5Pdu { vc, pdu }
        };
        let side = if matches!(record, RecordKind::SunAtm { .. }) {
            &mut sun
        } else {
            &mut erf
        };
        side.0.push(Record { time, kind: record });
        side.1.push((m, bytes, n_s));
    }
    // Every IE natm decodes is in some message.
    let all_ies = [
        0x08u8, 0x14, 0x27, 0x42, 0x58, 0x59, 0x5A, 0x5C, 0x5D, 0x5E, 0x5F, 0x62, 0x63, 0x6C, 0x6D,
        0x70, 0x71, 0x79, 0x81, 0x82, 0xEC,
    ];
    for id in all_ies {
        assert!(ie_kinds.contains(&id), "no message carries IE 0x{id:02x}");
    }

    let mut quirks = Quirks::default();
    let mut bad = Vec::new();
    let mut checked = 0;
    for (link, (records, msgs), tag) in [
        (LinkType::SunAtm, &sun, "sig-sunatm.pcap"),
        (LinkType::Erf, &erf, "sig-erf.pcap"),
    ] {
        let file = write_file(link, records, tag);
        let packets = tshark_sig(&file.0);
        assert_eq!(
            packets.len(),
            records.len(),
            "{tag}: tshark saw every record"
        );
        // `natm dump --json` on the same file: the same SSCOP and Q.2931 headers.
        let dumped = dump_json(&file);
        assert_eq!(
            dumped.len(),
            records.len(),
            "{tag}: natm dump printed every record"
        );
        for (j, (m, _, n_s)) in dumped.iter().zip(msgs) {
            let sig = &j["signalling"];
            assert_eq!(sig["sscop"]["n_s"], *n_s, "{tag}: {j}");
            assert_eq!(
                sig["q2931"]["message_type_code"],
                m.header.msg_type.code(),
                "{tag}: {j}"
            );
            assert_eq!(
                sig["q2931"]["call_ref"], m.header.call_ref.value,
                "{tag}: {j}"
            );
            assert_eq!(
                sig["q2931"]["call_ref_flag"], m.header.call_ref.flag,
                "{tag}: {j}"
            );
            assert_eq!(
                sig["q2931"]["problems"],
                serde_json::json!([]),
                "{tag}: {j}"
            );
        }
        for (i, ((record, (m, bytes, n_s)), p)) in
            records.iter().zip(msgs).zip(&packets).enumerate()
        {
            let at = format!("{tag} record {} ({m})", i + 1);
            // natm dump's view: SSCOP SD, then the message, no error.
            let s = summarize(record);
            let sig = s
                .signalling
                .as_ref()
                .unwrap_or_else(|| panic!("{at}: natm: {s}"));
            assert_eq!(sig.error, None, "{at}");
            let sscop = sig.sscop.as_ref().unwrap();
            assert_eq!((sscop.pdu_type, sscop.n_s), ("SD", Some(*n_s)), "{at}");
            let q = sig.q2931.as_ref().unwrap();
            assert_eq!(q.problems, Vec::<String>::new(), "{at}");
            assert_eq!(q.message_type_code, m.header.msg_type.code(), "{at}");
            assert_eq!(
                (q.call_ref, q.call_ref_flag),
                (m.header.call_ref.value, m.header.call_ref.flag),
                "{at}"
            );
            // tshark's view: SSCOP SD with the same N(S), Q.2931 with the same type and
            // call reference, and no anomaly but the known dissector bugs.
            assert_eq!(p.show("sscop.type"), Some("0x08"), "{at}");
            assert_eq!(p.show("sscop.s"), Some(&*n_s.to_string()), "{at}");
            let mt = p.show("q2931.message_type").unwrap_or("(none)");
            assert_eq!(mt, format!("0x{:02x}", m.header.msg_type.code()), "{at}");
            let cr = p
                .show("q2931.call_ref")
                .unwrap_or("(none)")
                .replace(':', "");
            let cr = u32::from_str_radix(&cr, 16).unwrap_or(u32::MAX) & 0x7F_FFFF;
            assert_eq!(cr, m.header.call_ref.value, "{at}: tshark's call reference");
            let flag = p.show("q2931.call_ref_flag");
            assert_eq!(
                flag,
                Some(if m.header.call_ref.flag { "1" } else { "0" }),
                "{at}"
            );
            // Cause values and connection identifiers, where tshark got that far.
            if !p.malformed() {
                let causes: Vec<String> =
                    m.cause.iter().map(|c| c.value.code().to_string()).collect();
                let shown: Vec<String> = p
                    .shows("q2931.cause.value")
                    .iter()
                    .map(|v| {
                        u8::from_str_radix(v.trim_start_matches("0x"), 16)
                            .map_or(v.to_string(), |n| n.to_string())
                    })
                    .collect();
                assert_eq!(shown, causes, "{at}: cause values");
                let hex = |v: u8| format!("0x{v:02x}");
                let one = |field: &str, v: Option<u8>| {
                    assert_eq!(
                        p.show(field).map(str::to_string),
                        v.map(hex),
                        "{at}: {field}"
                    );
                };
                one(
                    "q2931.aal_type",
                    m.aal.as_ref().map(|a| a.aal_type().code()),
                );
                one("q2931.bearer_class", m.bearer.map(|b| b.class.code()));
                one("q2931.call_state", m.call_state.map(|c| c.code()));
                one("q2931.restart_indicator", m.restart.map(|r| r.class.code()));
                if let Some(c) = &m.connection_id {
                    assert_eq!(
                        p.show("q2931.conn_id.vpci"),
                        Some(&*c.vpci.to_string()),
                        "{at}"
                    );
                    assert_eq!(
                        p.show("q2931.conn_id.vci"),
                        Some(&*c.vci.to_string()),
                        "{at}"
                    );
                }
            }
            check_sig_experts(&at, bytes, p, &mut quirks, &mut bad);
            checked += 1;
        }
    }
    assert_eq!(checked, MESSAGES);

    // Exported PDUs for Wireshark's `sscop` and `q2931` dissectors (atm-facts §9), the
    // third way natm dump reads signalling: one SD and one bare message of each type.
    let mut exported = Vec::new();
    let mut expect = Vec::new();
    for (i, (m, bytes, n_s)) in sun.1.iter().take(MsgType::ALL.len()).enumerate() {
        for dissector in ["sscop", "q2931"] {
            let data = if dissector == "sscop" {
                natm_wire::sscop::Repr::Sd {
                    n_s: *n_s,
                    info: bytes,
                }
                .to_vec()
                .unwrap()
            } else {
                bytes.clone()
            };
            let mut record = Vec::new();
            natm_capture::exported_pdu::encode(dissector, &data, &mut record);
            exported.push(Record {
                time: Instant::from_nanos(2_000_000_000 + i as u64 * 1_000_000),
                kind: RecordKind::Other {
                    linktype: LinkType::ExportedPdu,
                    bytes: record,
                },
            });
            expect.push((dissector, m, bytes));
        }
    }
    let file = write_file(LinkType::ExportedPdu, &exported, "sig-exported.pcap");
    let packets = tshark_sig(&file.0);
    assert_eq!(packets.len(), exported.len());
    for ((record, (dissector, m, bytes)), p) in exported.iter().zip(&expect).zip(&packets) {
        let at = format!("exported {dissector} ({m})");
        let s = summarize(record);
        assert_eq!(s.decoded.as_deref(), Some(*dissector), "{at}");
        let q = s.signalling.as_ref().and_then(|g| g.q2931.as_ref());
        assert_eq!(
            q.map(|q| q.message_type_code),
            Some(m.header.msg_type.code()),
            "{at}"
        );
        assert!(
            p.proto_pos(dissector).is_some(),
            "{at}: tshark: {:?}",
            p.protos
        );
        let mt = p.show("q2931.message_type").unwrap_or("(none)");
        assert_eq!(mt, format!("0x{:02x}", m.header.msg_type.code()), "{at}");
        check_sig_experts(&at, bytes, p, &mut quirks, &mut bad);
    }

    assert!(
        bad.is_empty(),
        "{} of {checked} records with anomalies tshark reports beyond its known bugs:\n{}",
        bad.len(),
        bad.join("\n")
    );
    let _ = writeln!(
        std::io::stderr(),
        "tshark decoded {checked} random Q.2931 messages natm emitted (in SSCOP SDs, SunATM \
         and ERF AAL5 on 0.5); Wireshark 4.0 dissector bugs met: {quirks:?}"
    );
}

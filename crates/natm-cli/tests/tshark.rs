//! Wireshark interoperability: captures written by natm-capture are read back by tshark
//! 4.0, which must agree with natm's own verdicts record by record, and files written by
//! Wireshark's tools are read by natm.
//!
//! Without tshark these tests print why and pass, unless `NATM_REQUIRE_TSHARK=1`, when a
//! missing tshark fails them. Each capture is checked with one tshark run (PDML output),
//! with `erf.aal5_type:unspecified` so that tshark does not guess protocols inside random
//! SDUs (its guesses produce "malformed" verdicts about bytes that are not packets at all).

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

/// tshark's expert severity "error" (`PI_ERROR`).
const PI_ERROR: &str = "8388608";

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

// ---------------------------------------------------------------------------------------
// tshark's PDML, one packet at a time

/// The fields and protocols tshark reported for one packet.
#[derive(Debug, Default)]
struct Packet {
    /// (name, show, showname) of every field.
    fields: Vec<(String, String, String)>,
    /// Protocol names, in order.
    protos: Vec<String>,
}

impl Packet {
    fn show(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|f| f.0 == name)
            .map(|f| f.1.as_str())
    }

    fn showname(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|f| f.0 == name)
            .map(|f| f.2.as_str())
    }

    fn has_proto(&self, name: &str) -> bool {
        self.protos.iter().any(|p| p == name)
    }

    /// Malformed-packet markers and error-level expert infos.
    fn errors(&self) -> Vec<String> {
        let mut e: Vec<String> = self
            .protos
            .iter()
            .filter(|p| p.starts_with("_ws.malformed"))
            .cloned()
            .collect();
        for (i, f) in self.fields.iter().enumerate() {
            if f.0 == "_ws.expert.severity" && f.1 == PI_ERROR {
                let message = self.fields[..i]
                    .iter()
                    .rev()
                    .find(|g| g.0 == "_ws.expert.message")
                    .map_or("?", |g| g.1.as_str());
                e.push(format!("expert error: {message}"));
            }
            if f.0.starts_with("_ws.malformed") {
                e.push(f.2.clone());
            }
        }
        e
    }

    fn vc(&self) -> Option<(u16, u16)> {
        Some((
            self.show("atm.vpi")?.parse().ok()?,
            self.show("atm.vci")?.parse().ok()?,
        ))
    }
}

fn attr(line: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = line.find(&key)? + key.len();
    let end = line[start..].find('"')? + start;
    Some(
        line[start..end]
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&"),
    )
}

fn tshark(file: &Path) -> Vec<Packet> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-o", "erf.aal5_type:unspecified", "-T", "pdml"])
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "tshark failed on {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("PDML is UTF-8");
    let mut packets = Vec::new();
    let mut current: Option<Packet> = None;
    for line in text.lines() {
        let line = line.trim_start();
        if line.starts_with("<packet>") {
            current = Some(Packet::default());
        } else if line.starts_with("</packet>") {
            packets.extend(current.take());
        } else if let Some(p) = current.as_mut() {
            if line.starts_with("<proto ") {
                p.protos.extend(attr(line, "name"));
            } else if line.starts_with("<field ")
                && let Some(name) = attr(line, "name")
            {
                let show = attr(line, "show").unwrap_or_default();
                let showname = attr(line, "showname").unwrap_or_default();
                p.fields.push((name, show, showname));
            }
        }
    }
    packets
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

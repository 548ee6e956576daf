//! The walk of `natm demo --layers` through the layers without a network, told as it
//! goes: QoS text, cells and HEC (I.432), AAL5 (I.363.5), OAM cells (I.610), captures,
//! contracts, and the speed of the AAL5 path beside memcpy. The work is the parent
//! module's; this is its narration, written to any [`Write`] ([`walk`]).

use std::io::Write;
use std::path::Path;

use natm_adapter::{Reassembler, Reassembly};
use natm_capture::{CellRecord, LinkType, Record, RecordKind, summarize};
use natm_core::qos::Qos;
use natm_core::{HeaderFormat, VcId};
use natm_traffic::policer::Verdict;
use natm_wire::aal5::{self, MAX_SDU, Segmenter};
use natm_wire::cell::{Cell, CellHeader, HecReceiver, HecVerdict};
use natm_wire::oam::{Loopback, OamCell, OamFlow, OamRepr};

use super::{self as work, VBR_TEXT};
use crate::Error;
use crate::stats::Spread;

/// Writes one line (`writeln!`) to the walk's output; a failed write ends the walk.
macro_rules! say {
    ($out:expr) => {
        writeln!($out).map_err(|e| Error::io("writing the walk", e))?
    };
    ($out:expr, $($arg:tt)*) => {
        writeln!($out, $($arg)*).map_err(|e| Error::io("writing the walk", e))?
    };
}

const MESSAGE: &[u8] = b"Hello from natm: cells, HEC, AAL5 and OAM, all in user space.";

/// Walks through the layers, writing each step's figures with their explanation to `out`:
/// the captures go to `pcap` (ERF AAL5 PDUs) and beside it (`.cells.pcap`, the cells);
/// `no_measure` skips the memcpy-against-AAL5 measurement. Fails only when a capture
/// cannot be written or read back, or `out` refuses a line.
pub fn walk(out: &mut dyn Write, pcap: &Path, no_measure: bool) -> Result<(), Error> {
    let vc = VcId::uni(0, 100).expect("0.100 is a valid UNI VC");
    let mut pdus = Vec::new();
    let mut cell_records = Vec::new();
    let mut clock = natm_core::Instant::from_nanos(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    );
    let mut stamp = |kind: RecordKind| {
        clock += natm_core::Duration::from_micros(3);
        let to = if matches!(kind, RecordKind::Cell(_)) {
            &mut cell_records
        } else {
            &mut pdus
        };
        to.push(Record { time: clock, kind });
    };

    heading(out, "1. Traffic contracts in linux-atm's qos(7) text")?;
    for text in ["cbr:max_pcr=100000", "ubr:pcr=10Mbps,sdu=9188", "ubr,aal0"] {
        let qos: Qos = text.parse().expect("the walk's QoS texts are valid");
        say!(out, "  {text:<26} -> {qos}");
    }
    let refused = "cbr:max_pcr=1x";
    if let Err(e) = refused.parse::<Qos>() {
        say!(out, "  {refused:<26} -> refused: {e}");
    }

    heading(
        out,
        "2. A UDP datagram, LLC/SNAP-encapsulated (RFC 2684), becomes AAL5 cells on 0.100",
    )?;
    let sdu = work::llc_udp_datagram(MESSAGE);
    let cells: Vec<[u8; 53]> = Segmenter::uni(vc, &sdu)
        .expect("the datagram is a valid AAL5 SDU")
        .collect();
    say!(
        out,
        "  {} bytes (8 LLC/SNAP + 20 IPv4 + 8 UDP + {} message) + {} pad + 8 trailer = {} cells",
        sdu.len(),
        MESSAGE.len(),
        aal5::pad_len(sdu.len()),
        cells.len()
    );
    for c in &cells {
        let view = Cell::new_unchecked(&c[..]);
        let h = CellHeader::parse(&view, HeaderFormat::Uni).expect("we just built it");
        say!(out, "  header {} hec={:#04x}  {h}", hex(&c[..4]), c[4]);
        stamp(RecordKind::Cell(CellRecord::from_cell(c)));
    }
    let mut pdu = Vec::new();
    aal5::encode_pdu(&sdu, 0, 0, &mut pdu).expect("the datagram is a valid AAL5 SDU");
    stamp(RecordKind::Aal5Pdu {
        vc,
        pdu: pdu.clone(),
    });

    heading(
        out,
        "3. The HEC corrects one header bit error and discards worse (I.432)",
    )?;
    let mut rx = HecReceiver::new();
    let mut one = cells[0];
    one[2] ^= 0x10;
    let v = rx.receive(&mut Cell::new_unchecked(&mut one[..]));
    say!(out, "  flip bit 19             -> {}", verdict(v));
    let mut again = cells[0];
    again[1] ^= 0x01;
    let v = rx.receive(&mut Cell::new_unchecked(&mut again[..]));
    say!(
        out,
        "  another error at once   -> {} (detection mode)",
        verdict(v)
    );
    let mut two = cells[1];
    two[0] ^= 0x81;
    let mut fresh = HecReceiver::new();
    let v = fresh.receive(&mut Cell::new_unchecked(&mut two[..]));
    say!(out, "  flip two bits           -> {}", verdict(v));
    stamp(RecordKind::Cell(CellRecord::from_cell(&two)));

    heading(out, "4. Reassembly, and the AAL5 CRC catching damage")?;
    let mut reasm = Reassembler::new(vc, MAX_SDU).expect("a valid max_sdu");
    let delivered = feed(&mut reasm, cells.iter());
    say!(out, "  all cells               -> {delivered}");
    let mut flipped = cells.clone();
    flipped[0][20] ^= 0x04;
    say!(
        out,
        "  one payload bit flipped -> {}",
        feed(&mut reasm, flipped.iter())
    );
    let lost: Vec<_> = cells.iter().skip(1).collect();
    say!(
        out,
        "  first cell lost         -> {}",
        feed(&mut reasm, lost.into_iter())
    );

    heading(out, "5. OAM F5 end-to-end loopback (I.610)")?;
    let request = OamRepr::Loopback(Loopback::request(0x1234_5678));
    let req_cell = request.to_cell(OamFlow::F5EndToEnd, vc);
    let payload = OamCell::new_checked(&req_cell[5..]).expect("48 bytes");
    say!(
        out,
        "  request  {} crc10={:#05x} ok={}",
        OamRepr::parse(&payload)
            .map(|r| r.to_string())
            .unwrap_or_default(),
        payload.crc10(),
        payload.verify_crc10()
    );
    let reply = match OamRepr::parse(&payload) {
        Ok(OamRepr::Loopback(l)) => OamRepr::Loopback(l.reply()),
        _ => unreachable!("the loopback request just built parses as one"),
    };
    let reply_cell = reply.to_cell(OamFlow::F5EndToEnd, vc);
    say!(
        out,
        "  reply    {reply} (the far end cleared the indication and kept the tag)"
    );
    stamp(RecordKind::Cell(CellRecord::from_cell(&req_cell)));
    stamp(RecordKind::Cell(CellRecord::from_cell(&reply_cell)));

    heading(out, "6. Captures Wireshark reads")?;
    let path = pcap;
    let cells_path = path.with_extension("cells.pcap");
    // AAL5 PDUs as ERF records (Wireshark checks the CRC-32); cells as exported PDUs for
    // Wireshark's `atm_oam_cell` dissector, the one pcap form that keeps the HEC.
    work::write_capture(path, LinkType::Erf, &pdus)?;
    work::write_capture(&cells_path, LinkType::ExportedPdu, &cell_records)?;
    for file in [path, &cells_path] {
        say!(out, "  natm dump {}:", file.display());
        for summary in work::read_back(file)? {
            say!(out, "    {summary}");
        }
    }
    // tshark decodes every exported cell as OAM; its CRC-10 verdict means something only for
    // the cells that are OAM cells (frame numbers count from 1).
    let oam_frames: Vec<usize> = cell_records
        .iter()
        .enumerate()
        .filter(|(_, r)| summarize(r).crc10.is_some())
        .map(|(i, _)| i + 1)
        .collect();
    tshark_view(out, path, &cells_path, &oam_frames)?;

    heading(
        out,
        "7. Traffic contracts enforced: policing, shaping, admission, frame discard (TM 4.1)",
    )?;
    contracts(out)?;

    if !no_measure {
        heading(
            out,
            "8. Speed of the AAL5 path, beside memcpy in the same run",
        )?;
        measure(out)?;
    }
    say!(
        out,
        "\nMore: natm qos parse, natm qos check, natm admit, natm addr parse, natm aal5 send, natm dump, natm atmtcp (see README.md)."
    );
    Ok(())
}

/// Step 7: the contract of a VC policed cell by cell, a connection refused by admission
/// control with the reason, and EPD/PPD keeping a congested queue's losses to whole frames
/// ([`work::contracts`]).
fn contracts(out: &mut dyn Write) -> Result<(), Error> {
    let c = work::contracts()?;
    let (def, verdicts) = &c.vbr;
    let verdicts: String = verdicts
        .iter()
        .map(|v| match v {
            Verdict::Pass => 'P',
            Verdict::Tag => 'T',
            Verdict::Discard => 'D',
        })
        .collect();
    say!(
        out,
        "  UPC {def} on {VBR_TEXT}: 14 cells at PCR -> {verdicts}"
    );
    say!(
        out,
        "    (P pass, D discard: MBS = 10 cells pass, the 14th conforms again after the bucket drains)"
    );
    for (label, k) in &c.cbr {
        say!(
            out,
            "  UPC CBR.1 on cbr:pcr=100000, 10000 cells {label:<10} -> {} passed, {} discarded",
            k.pass,
            k.discard
        );
    }
    for s in &c.shaped {
        let gaps: Vec<String> = s
            .times_ns
            .windows(2)
            .take(7)
            .map(|w| format!("{:.1}", (w[1] - w[0]) as f64 / 1000.0))
            .collect();
        let k = s.policed;
        say!(
            out,
            "  shaper {:<34} {} cells: gaps {} µs…, policer at CDVT 0 passes {}/{}",
            s.label,
            s.times_ns.len(),
            gaps.join(" "),
            k.pass,
            k.pass + k.tag + k.discard
        );
    }
    for (request, verdict) in &c.cac {
        match verdict {
            Ok(free) => say!(out, "  CAC {request:<16} -> admitted, {free} cells/s left"),
            Err(e) => say!(out, "  CAC {request:<16} -> {e}"),
        }
    }
    let e = &c.epd;
    say!(
        out,
        "  EPD/PPD, 800 frames of 10 cells into a queue drained at half the rate -> {} cells queued, \
         {} frames refused whole (EPD), {} cells cut from frames under way (PPD {} + full {})",
        e.enqueued,
        e.epd_frames,
        e.ppd_cells + e.full_cells,
        e.ppd_cells,
        e.full_cells
    );
    Ok(())
}

fn heading(out: &mut dyn Write, text: &str) -> Result<(), Error> {
    say!(out, "\n{text}");
    Ok(())
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn verdict(v: HecVerdict) -> String {
    match v {
        HecVerdict::Valid => "valid".into(),
        HecVerdict::Corrected { bit } => format!("corrected (bit {bit})"),
        HecVerdict::Discarded { syndrome } => format!("discarded (syndrome {syndrome:#04x})"),
    }
}

fn feed<'a>(r: &mut Reassembler, cells: impl Iterator<Item = &'a [u8; 53]>) -> String {
    let mut out = "nothing delivered".to_string();
    for c in cells {
        match r.push_cell(c) {
            Reassembly::Complete(n) => {
                let text = r.sdu().get(36..).unwrap_or_default();
                out = format!("delivered {n} bytes: {:?}", String::from_utf8_lossy(text))
            }
            Reassembly::Discarded(e) => out = format!("discarded: {e}"),
            Reassembly::Incomplete => {}
        }
    }
    out
}

/// tshark's own verdicts on the captures ([`work::tshark_checks`]), if it is installed.
fn tshark_view(
    out: &mut dyn Write,
    pdus: &Path,
    cells: &Path,
    oam_frames: &[usize],
) -> Result<(), Error> {
    match work::tshark_checks(pdus, cells, oam_frames) {
        Some(checks) => {
            say!(out, "  tshark -V, the lines with its checks:");
            for c in checks {
                say!(out, "    {} frame {}: {}", c.file, c.frame, c.line);
            }
        }
        None => say!(
            out,
            "  (install tshark to see Wireshark's view: tshark -V -r {})",
            pdus.display()
        ),
    }
    Ok(())
}

/// The memcpy against AAL5 figures of [`crate::demo::copy_vs_aal5`].
fn measure(out: &mut dyn Write) -> Result<(), Error> {
    let (
        Spread {
            median: cm,
            min: clo,
            max: chi,
        },
        Spread {
            median: am,
            min: alo,
            max: ahi,
        },
    ) = crate::demo::copy_vs_aal5();
    say!(
        out,
        "  memcpy, 9180 B:               {cm:6.2} GB/s (min {clo:.2}, max {chi:.2})"
    );
    say!(
        out,
        "  segment+reassemble, 9180 B:   {am:6.2} GB/s (min {alo:.2}, max {ahi:.2}) = {:.3}x memcpy",
        am / cm
    );
    say!(
        out,
        "  (both from cache; `cargo bench -p natm-wire` has the full table)"
    );
    Ok(())
}

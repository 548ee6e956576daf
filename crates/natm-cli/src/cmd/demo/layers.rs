//! `natm demo --layers`: the older walk through the layers without a network: QoS text,
//! cells and HEC (I.432), AAL5 (I.363.5), OAM cells (I.610), captures, contracts.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;
use std::process::Command;

use natm_bench::stats::Spread;
use natm_capture::{CellRecord, LinkType, Reader, Record, RecordKind, Writer, summarize};
use natm_core::qos::Qos;
use natm_core::{HeaderFormat, VcId};
use natm_traffic::cac::{Cac, CacConfig};
use natm_traffic::discard::{FrameDiscard, FrameQueue};
use natm_traffic::policer::{Policer, Verdict};
use natm_traffic::sched::{Scheduler, VcSpec};
use natm_wire::aal5::{self, MAX_SDU, Reassembler, Reassembly, Segmenter};
use natm_wire::cell::{Cell, CellHeader, HecReceiver, HecVerdict};
use natm_wire::llc::{Encapsulation, LlcHeader};
use natm_wire::oam::{Loopback, OamCell, OamFlow, OamRepr};

use crate::{CliError, CmdResult};

/// OC-3c's cell rate, the line every step here runs at.
const OC3: u32 = natm_core::PhyRate::OC3.cells_per_s();

const MESSAGE: &[u8] = b"Hello from natm: cells, HEC, AAL5 and OAM, all in user space.";

/// The message as RFC 2684 would carry it for classical IP: LLC/SNAP, then an IPv4/UDP
/// datagram 10.0.0.1:9 → 10.0.0.2:9 (the UDP checksum is optional in IPv4 and left 0).
fn llc_udp_datagram(payload: &[u8]) -> Vec<u8> {
    let udp_len = 8 + payload.len();
    let ip_len = 20 + udp_len;
    let mut ip = vec![
        0x45,
        0,
        (ip_len >> 8) as u8,
        ip_len as u8,
        0,
        1,
        0,
        0,
        64,
        17,
        0,
        0,
    ];
    ip.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    let sum = ip
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>();
    let folded = !(((sum & 0xFFFF) + (sum >> 16)) as u16);
    ip[10..12].copy_from_slice(&folded.to_be_bytes());
    ip.extend_from_slice(&[0, 9, 0, 9, (udp_len >> 8) as u8, udp_len as u8, 0, 0]);
    ip.extend_from_slice(payload);
    let mut sdu = Vec::new();
    Encapsulation::Llc.encapsulate(LlcHeader::IPV4, &ip, &mut sdu);
    sdu
}

/// `natm demo --layers`: the walk through the layers, without the network.
pub(super) fn layers(pcap: Option<PathBuf>, no_measure: bool) -> CmdResult {
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

    heading("1. Traffic contracts in linux-atm's qos(7) text");
    for text in ["cbr:max_pcr=100000", "ubr:pcr=10Mbps,sdu=9188", "ubr,aal0"] {
        let qos: Qos = text
            .parse()
            .map_err(|e| CliError::failure(format!("demo QoS {text:?}: {e}")))?;
        println!("  {text:<26} -> {qos}");
    }
    let refused = "cbr:max_pcr=1x";
    if let Err(e) = refused.parse::<Qos>() {
        println!("  {refused:<26} -> refused: {e}");
    }

    heading("2. A UDP datagram, LLC/SNAP-encapsulated (RFC 2684), becomes AAL5 cells on 0.100");
    let sdu = llc_udp_datagram(MESSAGE);
    let cells: Vec<[u8; 53]> = Segmenter::uni(vc, &sdu)
        .map_err(|e| CliError::failure(e.to_string()))?
        .collect();
    println!(
        "  {} bytes (8 LLC/SNAP + 20 IPv4 + 8 UDP + {} message) + {} pad + 8 trailer = {} cells",
        sdu.len(),
        MESSAGE.len(),
        aal5::pad_len(sdu.len()),
        cells.len()
    );
    for c in &cells {
        let view = Cell::new_unchecked(&c[..]);
        let h = CellHeader::parse(&view, HeaderFormat::Uni).expect("we just built it");
        println!("  header {} hec={:#04x}  {h}", hex(&c[..4]), c[4]);
        stamp(RecordKind::Cell(CellRecord::from_cell(c)));
    }
    let mut pdu = Vec::new();
    aal5::encode_pdu(&sdu, 0, 0, &mut pdu).map_err(|e| CliError::failure(e.to_string()))?;
    stamp(RecordKind::Aal5Pdu {
        vc,
        pdu: pdu.clone(),
    });

    heading("3. The HEC corrects one header bit error and discards worse (I.432)");
    let mut rx = HecReceiver::new();
    let mut one = cells[0];
    one[2] ^= 0x10;
    let v = rx.receive(&mut Cell::new_unchecked(&mut one[..]));
    println!("  flip bit 19             -> {}", verdict(v));
    let mut again = cells[0];
    again[1] ^= 0x01;
    let v = rx.receive(&mut Cell::new_unchecked(&mut again[..]));
    println!(
        "  another error at once   -> {} (detection mode)",
        verdict(v)
    );
    let mut two = cells[1];
    two[0] ^= 0x81;
    let mut fresh = HecReceiver::new();
    let v = fresh.receive(&mut Cell::new_unchecked(&mut two[..]));
    println!("  flip two bits           -> {}", verdict(v));
    stamp(RecordKind::Cell(CellRecord::from_cell(&two)));

    heading("4. Reassembly, and the AAL5 CRC catching damage");
    let mut reasm = Reassembler::new(MAX_SDU);
    let delivered = feed(&mut reasm, cells.iter());
    println!("  all cells               -> {delivered}");
    let mut flipped = cells.clone();
    flipped[0][20] ^= 0x04;
    println!(
        "  one payload bit flipped -> {}",
        feed(&mut reasm, flipped.iter())
    );
    let lost: Vec<_> = cells.iter().skip(1).collect();
    println!(
        "  first cell lost         -> {}",
        feed(&mut reasm, lost.into_iter())
    );

    heading("5. OAM F5 end-to-end loopback (I.610)");
    let request = OamRepr::Loopback(Loopback::request(0x1234_5678));
    let req_cell = request.to_cell(OamFlow::F5EndToEnd, vc);
    let payload = OamCell::new_checked(&req_cell[5..]).expect("48 bytes");
    println!(
        "  request  {} crc10={:#05x} ok={}",
        OamRepr::parse(&payload)
            .map(|r| r.to_string())
            .unwrap_or_default(),
        payload.crc10(),
        payload.verify_crc10()
    );
    let reply = match OamRepr::parse(&payload) {
        Ok(OamRepr::Loopback(l)) => OamRepr::Loopback(l.reply()),
        _ => return Err(CliError::failure("demo: the loopback cell did not parse")),
    };
    let reply_cell = reply.to_cell(OamFlow::F5EndToEnd, vc);
    println!("  reply    {reply} (the far end cleared the indication and kept the tag)");
    stamp(RecordKind::Cell(CellRecord::from_cell(&req_cell)));
    stamp(RecordKind::Cell(CellRecord::from_cell(&reply_cell)));

    heading("6. Captures Wireshark reads");
    let path = pcap.unwrap_or_else(|| std::env::temp_dir().join("natm-demo.pcap"));
    let cells_path = path.with_extension("cells.pcap");
    // AAL5 PDUs as ERF records (Wireshark checks the CRC-32); cells as exported PDUs for
    // Wireshark's `atm_oam_cell` dissector, the one pcap form that keeps the HEC.
    write_capture(&path, LinkType::Erf, &pdus)?;
    write_capture(&cells_path, LinkType::ExportedPdu, &cell_records)?;
    for file in [&path, &cells_path] {
        println!("  natm dump {}:", file.display());
        for line in read_back(file)? {
            println!("    {line}");
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
    tshark_view(&path, &cells_path, &oam_frames);

    heading("7. Traffic contracts enforced: policing, shaping, admission, frame discard (TM 4.1)");
    contracts()?;

    if !no_measure {
        heading("8. Speed of the AAL5 path, beside memcpy in the same run");
        measure();
    }
    println!(
        "\nMore: natm qos parse, natm qos check, natm admit, natm addr parse, natm aal5 send, natm dump, natm atmtcp (see README.md)."
    );
    Ok(())
}

/// Step 7: the contract of a VC policed cell by cell, a connection refused by admission
/// control with the reason, and EPD/PPD keeping a congested queue's losses to whole frames.
fn contracts() -> CmdResult {
    let fail = |e: &dyn std::fmt::Display| CliError::failure(format!("demo contracts: {e}"));
    let ms = |k: u64| natm_core::Instant::from_nanos(k * 1_000_000);

    // atm-facts 4.3: PCR 1000, SCR 250, MBS 10; cells back to back at PCR, one per ms.
    let text = "vbr:pcr=1000,scr=250,mbs=10";
    let qos: Qos = text.parse().map_err(|e| fail(&e))?;
    let mut upc = Policer::from_params(None, &qos.tx, OC3).map_err(|e| fail(&e))?;
    let verdicts: String = (0..14)
        .map(|k| match upc.police(ms(k), false) {
            Verdict::Pass => 'P',
            Verdict::Tag => 'T',
            Verdict::Discard => 'D',
        })
        .collect();
    println!(
        "  UPC {} on {text}: 14 cells at PCR -> {verdicts}",
        upc.definition()
    );
    println!(
        "    (P pass, D discard: MBS = 10 cells pass, the 14th conforms again after the bucket drains)"
    );

    // A CBR source exactly at its PCR, and one 1% faster.
    for (label, spacing_ns) in [("at its PCR", 10_000u64), ("1% faster", 9_900)] {
        let qos: Qos = "cbr:pcr=100000".parse().map_err(|e| fail(&e))?;
        let mut upc = Policer::from_params(None, &qos.tx, OC3).map_err(|e| fail(&e))?;
        for k in 0..10_000u64 {
            upc.police(natm_core::Instant::from_nanos(k * spacing_ns), false);
        }
        let c = upc.counters();
        println!(
            "  UPC CBR.1 on cbr:pcr=100000, 10000 cells {label:<10} -> {} passed, {} discarded",
            c.pass, c.discard
        );
    }

    // The shaper of an OC-3c link: bursts enqueued at once leave spaced to each contract.
    let mut sched = Scheduler::new(OC3).map_err(|e| fail(&e))?;
    let specs = [
        ("CBR pcr=100000", VcSpec::cbr(100_000), 20),
        (
            "rt-VBR pcr=50000,scr=10000,mbs=5",
            VcSpec::rt_vbr(50_000, 10_000, 5),
            10,
        ),
        ("UBR (link rate, weight 1)", VcSpec::ubr(OC3, 1), 300),
    ];
    let mut vcs = Vec::new();
    for (label, spec, burst) in specs {
        let h = sched.add_vc(spec).map_err(|e| fail(&e))?;
        sched.enqueue(h, burst).map_err(|e| fail(&e))?;
        let upc =
            Policer::new(spec.category.conformance(), &spec.contract()).map_err(|e| fail(&e))?;
        vcs.push((label, h, upc, Vec::new()));
    }
    let mut now = natm_core::Instant::ZERO;
    while let Some(t) = sched.poll_transmit(now).or_else(|| {
        now = sched.poll_timeout()?;
        sched.poll_transmit(now)
    }) {
        if let Some((_, _, upc, times)) = vcs.iter_mut().find(|v| v.1 == t.vc) {
            upc.police(t.at, false);
            times.push(t.at.as_nanos());
        }
    }
    for (label, _, upc, times) in &vcs {
        let gaps: Vec<String> = times
            .windows(2)
            .take(7)
            .map(|w| format!("{:.1}", (w[1] - w[0]) as f64 / 1000.0))
            .collect();
        let c = upc.counters();
        println!(
            "  shaper {label:<34} {} cells: gaps {} µs…, policer at CDVT 0 passes {}/{}",
            times.len(),
            gaps.join(" "),
            c.pass,
            c.pass + c.tag + c.discard
        );
    }

    // Admission control on an OC-3c port already carrying a CBR and a VBR connection.
    let mut cac = Cac::new(CacConfig {
        link: "sw0:1".into(),
        capacity: OC3,
        buffer_cells: 0,
        max_ubr: 1024,
    });
    for existing in ["cbr:pcr=310000", "vbr:pcr=30707,scr=1000,mbs=100"] {
        let q: Qos = existing.parse().map_err(|e| fail(&e))?;
        cac.admit(&q.tx).map_err(|e| fail(&e))?;
    }
    for request in ["cbr:pcr=20000", "cbr:pcr=12000"] {
        let q: Qos = request.parse().map_err(|e| fail(&e))?;
        match cac.admit(&q.tx) {
            Ok(_) => println!(
                "  CAC {request:<16} -> admitted, {} cells/s left",
                cac.free()
            ),
            Err(e) => println!("  CAC {request:<16} -> {e}"),
        }
    }

    // A queue of 64 cells (EPD from 48) fed frames of 10 cells by 4 VCs at twice the rate
    // it is drained: what is lost goes in whole frames, and few frames are cut.
    let mut q: FrameQueue<u8, ()> =
        FrameQueue::new(FrameDiscard::new(64, 48).map_err(|e| fail(&e))?);
    for k in 0..8_000u32 {
        let (vc, cell) = ((k % 4) as u8, (k / 4) % 10);
        q.push_aal5(vc, cell == 9, ());
        if k % 2 == 1 {
            q.pop();
        }
    }
    let c = q.policy().counters();
    println!(
        "  EPD/PPD, 800 frames of 10 cells into a queue drained at half the rate -> {} cells queued, \
         {} frames refused whole (EPD), {} cells cut from frames under way (PPD {} + full {})",
        c.enqueued,
        c.epd_frames,
        c.ppd_cells + c.full_cells,
        c.ppd_cells,
        c.full_cells
    );
    Ok(())
}

fn heading(text: &str) {
    println!("\n{text}");
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

fn write_capture(path: &PathBuf, link: LinkType, records: &[Record]) -> CmdResult {
    let fail = |e: &dyn std::fmt::Display| CliError::failure(format!("{}: {e}", path.display()));
    let file = File::create(path).map_err(|e| fail(&e))?;
    let mut w = Writer::new(BufWriter::new(file), link).map_err(|e| fail(&e))?;
    for r in records {
        w.write(r).map_err(|e| fail(&e))?;
    }
    w.flush().map_err(|e| fail(&e))
}

/// The summaries `natm dump` prints, read back from the file.
fn read_back(path: &PathBuf) -> Result<Vec<String>, CliError> {
    let fail = |e: &dyn std::fmt::Display| CliError::failure(format!("{}: {e}", path.display()));
    let reader = Reader::new(BufReader::new(File::open(path).map_err(|e| fail(&e))?))
        .map_err(|e| fail(&e))?;
    reader
        .map(|r| r.map(|r| summarize(&r).to_string()).map_err(|e| fail(&e)))
        .collect()
}

/// Show tshark's own verdicts on the captures, if it is installed.
fn tshark_view(pdus: &PathBuf, cells: &PathBuf, oam_frames: &[usize]) {
    let mut shown = false;
    for file in [pdus, cells] {
        let out = Command::new("tshark")
            .args(["-o", "erf.aal5_type:unspecified", "-V", "-r"])
            .arg(file)
            .output();
        let Ok(out) = out else { break };
        if !out.status.success() {
            break;
        }
        if !shown {
            println!("  tshark -V, the lines with its checks:");
            shown = true;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut frame = 0;
        for line in text.lines() {
            let line = line.trim();
            if let Some(n) = line
                .strip_prefix("Frame ")
                .and_then(|rest| rest.split(':').next())
                .and_then(|n| n.parse().ok())
            {
                frame = n;
            }
            // The CRC-10 is a bit field: "…. = CRC-10: 0x22a ( (correct))".
            let crc10 = file == cells && oam_frames.contains(&frame);
            let line = match line.split_once(" = CRC-10:") {
                Some((_, verdict)) if crc10 => format!("CRC-10:{verdict}"),
                _ => line.to_string(),
            };
            let check = ["AAL5 CRC:", "Header Error Check:"]
                .iter()
                .any(|k| line.starts_with(k))
                || line.starts_with("CRC-10:");
            if check || line.starts_with("User Datagram Protocol") {
                println!("    {} frame {frame}: {line}", file_name(file));
            }
        }
    }
    if !shown {
        println!(
            "  (install tshark to see Wireshark's view: tshark -V -r {})",
            pdus.display()
        );
    }
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The memcpy against AAL5 figures of [`natm_bench::demo::copy_vs_aal5`].
fn measure() {
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
    ) = natm_bench::demo::copy_vs_aal5();
    println!("  memcpy, 9180 B:               {cm:6.2} GB/s (min {clo:.2}, max {chi:.2})");
    println!(
        "  segment+reassemble, 9180 B:   {am:6.2} GB/s (min {alo:.2}, max {ahi:.2}) = {:.3}x memcpy",
        am / cm
    );
    println!("  (both from cache; `cargo bench -p natm-wire` has the full table)");
}

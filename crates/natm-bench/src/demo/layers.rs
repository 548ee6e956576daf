//! The work of `natm demo --layers`, the walk through the layers without a network: an
//! RFC 2684 datagram to segment, the traffic contracts enforced (policing, shaping,
//! admission, frame discard), the captures written and read back, tshark's checks.
//!
//! [`walk`] tells the whole walk, each figure with its explanation, to any writer
//! (`natm demo --layers` gives it stdout).
//!
//! What it is not: a test of the parts: each call shows one behaviour on fixed inputs.
//!
//! Call contract: every function is one call on fixed inputs and returns what it found;
//! [`contracts`] is pure computation (no clock, no I/O), the capture functions touch only
//! the files named, and [`tshark_checks`] runs `tshark` if it is installed.

mod walk;

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;
use std::process::Command;

use natm_capture::{LinkType, Reader, Record, Summary, Writer, summarize};
use natm_core::Instant;
use natm_core::PhyRate;
use natm_core::qos::Qos;
use natm_traffic::cac::{Cac, CacConfig, Refusal};
use natm_traffic::discard::{DiscardCounters, FrameDiscard, FrameQueue};
use natm_traffic::policer::{Conformance, Counters, Policer, Verdict};
use natm_traffic::sched::{Scheduler, VcSpec};
use natm_wire::llc::{Encapsulation, LlcHeader};

use crate::Error;

pub use walk::walk;

/// `message` as RFC 2684 would carry it for classical IP: LLC/SNAP, then an IPv4/UDP
/// datagram 10.0.0.1:9 → 10.0.0.2:9 (the UDP checksum is optional in IPv4 and left 0).
pub fn llc_udp_datagram(message: &[u8]) -> Vec<u8> {
    let udp_len = 8 + message.len();
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
    ip.extend_from_slice(message);
    let mut sdu = Vec::new();
    Encapsulation::Llc.encapsulate(LlcHeader::IPV4, &ip, &mut sdu);
    sdu
}

/// The VBR contract [`contracts`] polices cell by cell (atm-facts 4.3).
pub const VBR_TEXT: &str = "vbr:pcr=1000,scr=250,mbs=10";

/// One VC of the OC-3c shaper: its contract, when each cell left, and what a policer of
/// the same contract at CDVT 0 made of the cells.
pub struct Shaped {
    /// The contract, as the walk names it.
    pub label: &'static str,
    /// When each cell left, in ns from the start.
    pub times_ns: Vec<u64>,
    /// The policer's counters.
    pub policed: Counters,
}

/// What [`contracts`] found.
pub struct Contracts {
    /// The conformance definition policing [`VBR_TEXT`], and its verdicts on 14 cells
    /// back to back at PCR, one per ms.
    pub vbr: (Conformance, Vec<Verdict>),
    /// A CBR.1 policer on `cbr:pcr=100000`, 10,000 cells at its PCR and 1% faster.
    pub cbr: [(&'static str, Counters); 2],
    /// Bursts through the shaper of an OC-3c link.
    pub shaped: Vec<Shaped>,
    /// Admission on an OC-3c port already carrying `cbr:pcr=310000` and
    /// `vbr:pcr=30707,scr=1000,mbs=100`: each request with the cells/s left, or why not.
    pub cac: Vec<(&'static str, Result<u64, Refusal>)>,
    /// A 64-cell queue (EPD from 48) fed 800 frames of 10 cells by 4 VCs at twice the rate
    /// it is drained.
    pub epd: DiscardCounters,
}

/// The contract of a VC policed cell by cell, CBR at and above its PCR, the shaper of an
/// OC-3c link, a connection refused by admission control with the reason, and EPD/PPD
/// keeping a congested queue's losses to whole frames.
pub fn contracts() -> Result<Contracts, Error> {
    let fail = |e: &dyn std::fmt::Display| Error::Traffic(format!("demo contracts: {e}"));
    let qos = |text: &str| text.parse::<Qos>().map_err(|e| fail(&e));
    let ms = |k: u64| Instant::from_nanos(k * 1_000_000);
    let link = PhyRate::OC3.cells_per_s();

    let mut upc = Policer::from_params(None, &qos(VBR_TEXT)?.tx, link).map_err(|e| fail(&e))?;
    let verdicts = (0..14).map(|k| upc.police(ms(k), false)).collect();
    let vbr = (upc.definition(), verdicts);

    let mut cbr = [
        ("at its PCR", Counters::default()),
        ("1% faster", Counters::default()),
    ];
    for ((_, counters), spacing_ns) in cbr.iter_mut().zip([10_000u64, 9_900]) {
        let mut upc =
            Policer::from_params(None, &qos("cbr:pcr=100000")?.tx, link).map_err(|e| fail(&e))?;
        for k in 0..10_000u64 {
            upc.police(Instant::from_nanos(k * spacing_ns), false);
        }
        *counters = upc.counters();
    }

    // Bursts enqueued at once leave spaced to each contract.
    let mut sched = Scheduler::new(link).map_err(|e| fail(&e))?;
    let specs = [
        ("CBR pcr=100000", VcSpec::cbr(100_000), 20),
        (
            "rt-VBR pcr=50000,scr=10000,mbs=5",
            VcSpec::rt_vbr(50_000, 10_000, 5),
            10,
        ),
        ("UBR (link rate, weight 1)", VcSpec::ubr(link, 1), 300),
    ];
    let mut vcs = Vec::new();
    for (label, spec, burst) in specs {
        let h = sched.add_vc(spec).map_err(|e| fail(&e))?;
        sched.enqueue(h, burst).map_err(|e| fail(&e))?;
        let upc =
            Policer::new(spec.category.conformance(), &spec.contract()).map_err(|e| fail(&e))?;
        vcs.push((
            h,
            upc,
            Shaped {
                label,
                times_ns: Vec::new(),
                policed: Counters::default(),
            },
        ));
    }
    let mut now = Instant::ZERO;
    while let Some(t) = sched.poll_transmit(now).or_else(|| {
        now = sched.poll_timeout()?;
        sched.poll_transmit(now)
    }) {
        if let Some((_, upc, shaped)) = vcs.iter_mut().find(|v| v.0 == t.vc) {
            upc.police(t.at, false);
            shaped.times_ns.push(t.at.as_nanos());
        }
    }
    let shaped = vcs
        .into_iter()
        .map(|(_, upc, shaped)| Shaped {
            policed: upc.counters(),
            ..shaped
        })
        .collect();

    let mut cac = Cac::new(CacConfig {
        link: "sw0:1".into(),
        capacity: link,
        buffer_cells: 0,
        max_ubr: 1024,
    });
    for existing in ["cbr:pcr=310000", "vbr:pcr=30707,scr=1000,mbs=100"] {
        cac.admit(&qos(existing)?.tx).map_err(|e| fail(&e))?;
    }
    let mut admitted = Vec::new();
    for request in ["cbr:pcr=20000", "cbr:pcr=12000"] {
        let verdict = cac.admit(&qos(request)?.tx).map(|_| cac.free());
        admitted.push((request, verdict));
    }

    // What is lost goes in whole frames, and few frames are cut.
    let mut q: FrameQueue<u8, ()> =
        FrameQueue::new(FrameDiscard::new(64, 48).map_err(|e| fail(&e))?);
    for k in 0..8_000u32 {
        let (vc, cell) = ((k % 4) as u8, (k / 4) % 10);
        q.push_aal5(vc, cell == 9, ());
        if k % 2 == 1 {
            q.pop();
        }
    }
    Ok(Contracts {
        vbr,
        cbr,
        shaped,
        cac: admitted,
        epd: q.policy().counters(),
    })
}

/// Writes `records` to a new pcap file at `path` with link type `link`.
pub fn write_capture(path: &Path, link: LinkType, records: &[Record]) -> Result<(), Error> {
    let fail = |e: &dyn std::fmt::Display| Error::Traffic(format!("{}: {e}", path.display()));
    let file = File::create(path).map_err(|e| fail(&e))?;
    let mut w = Writer::new(BufWriter::new(file), link).map_err(|e| fail(&e))?;
    for r in records {
        w.write(r).map_err(|e| fail(&e))?;
    }
    w.flush().map_err(|e| fail(&e))
}

/// The summaries `natm dump` prints of the records of the pcap file at `path`.
pub fn read_back(path: &Path) -> Result<Vec<Summary>, Error> {
    let fail = |e: &dyn std::fmt::Display| Error::Traffic(format!("{}: {e}", path.display()));
    let reader = Reader::new(BufReader::new(File::open(path).map_err(|e| fail(&e))?))
        .map_err(|e| fail(&e))?;
    reader
        .map(|r| r.map(|r| summarize(&r)).map_err(|e| fail(&e)))
        .collect()
}

/// One line of tshark's with a check of its: the file's name, the frame (from 1), the line.
pub struct TsharkCheck {
    /// The file's name, without its directory.
    pub file: String,
    /// The frame number.
    pub frame: usize,
    /// The line, trimmed (a CRC-10 line cut to `CRC-10: …`).
    pub line: String,
}

/// tshark's own checks (AAL5 CRC, HEC, CRC-10) and UDP lines in `tshark -V` of each file,
/// in order; `None` when tshark is not installed or fails on the first file. The CRC-10
/// lines count only for `oam_frames` of `cells` (tshark decodes every exported cell as OAM;
/// its verdict means something only for the OAM cells).
pub fn tshark_checks(pdus: &Path, cells: &Path, oam_frames: &[usize]) -> Option<Vec<TsharkCheck>> {
    let mut found: Option<Vec<TsharkCheck>> = None;
    for file in [pdus, cells] {
        let out = Command::new("tshark")
            .args(["-o", "erf.aal5_type:unspecified", "-V", "-r"])
            .arg(file)
            .output();
        let Ok(out) = out else { break };
        if !out.status.success() {
            break;
        }
        let checks = found.get_or_insert_with(Vec::new);
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
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
            let check = ["AAL5 CRC:", "Header Error Check:", "CRC-10:"]
                .iter()
                .any(|k| line.starts_with(k));
            if check || line.starts_with("User Datagram Protocol") {
                checks.push(TsharkCheck {
                    file: name.clone(),
                    frame,
                    line,
                });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_datagram_is_llc_snap_ipv4_udp_with_a_valid_header_checksum() {
        let sdu = llc_udp_datagram(b"hi");
        assert_eq!(sdu.len(), 8 + 20 + 8 + 2);
        assert_eq!(&sdu[..8], &[0xAA, 0xAA, 0x03, 0, 0, 0, 0x08, 0x00]);
        let ip = &sdu[8..28];
        let sum: u32 = ip
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        assert_eq!(((sum & 0xFFFF) + (sum >> 16)) as u16, 0xFFFF);
        assert_eq!(&sdu[28..], &[0, 9, 0, 9, 0, 10, 0, 0, b'h', b'i']);
    }

    #[test]
    fn contracts_show_what_the_walk_says() {
        let c = contracts().unwrap();
        let (def, verdicts) = &c.vbr;
        assert_eq!(*def, Conformance::Vbr1);
        assert_eq!(verdicts.len(), 14);
        assert!(verdicts[..10].iter().all(|v| *v == Verdict::Pass));
        assert_eq!(verdicts[13], Verdict::Pass);
        assert!(verdicts[10..13].iter().all(|v| *v == Verdict::Discard));
        assert_eq!(c.cbr[0].1.discard, 0);
        assert!(c.cbr[1].1.discard > 0);
        assert_eq!(c.shaped.len(), 3);
        for s in &c.shaped {
            assert_eq!(s.policed.tag + s.policed.discard, 0, "{}", s.label);
        }
        assert!(c.cac[0].1.is_err());
        assert!(c.cac[1].1.is_ok());
        assert!(c.epd.epd_frames > 0);
    }
}

//! One-line summaries of records, for `natm dump` and for tests that compare natm's
//! verdicts with Wireshark's.
//!
//! [`summarize`] applies the checks a receiver would: the AAL5 receive rules of I.363.5
//! ([`natm_wire::aal5::Pdu::check`]: CRC-32, abort, Length), the I.432 HEC receiver in
//! correction mode, fresh for each cell as Wireshark checks each cell on its own, and the
//! OAM CRC-10. It then names what the bytes carry where it can: OAM cells (flow and
//! function), RFC 2684 LLC/SNAP encapsulations, ATMARP packets, signalling and ILMI VCs.
//! A cell whose HEC was corrected is described after correction.
//!
//! Signalling records (SunATM typed signalling, SunATM or AAL5 SDUs on VCI 5 that are not
//! LLC-encapsulated, exported PDUs for Wireshark's `sscop` or `q2931` dissectors) are
//! decoded further, SSCOP and Q.2931, into [`Summary::signalling`] ([`crate::signalling`]);
//! an AAL5 PDU only once its CRC and Length pass.
//!
//! Not here: reassembly of cell records into PDUs (each record is summarised alone).

use core::fmt;

use natm_core::{HeaderFormat, Instant, VcId, Vci};
use natm_wire::aal5::{self, Aal5Error, Pdu};
use natm_wire::atmarp::{AtmArpRepr, Op};
use natm_wire::cell::{Cell, CellHeader, HecReceiver, HecVerdict, Pti};
use natm_wire::llc::LlcHeader;
use natm_wire::oam::{OamCell, OamError, OamFlow, OamRepr};
use serde::Serialize;

use crate::erf::{self, record_type};
use crate::exported_pdu;
use crate::pcap::LinkType;
use crate::record::{CellRecord, Record, RecordKind};
use crate::signalling::Signalling;
use crate::sunatm::{self, SunAtmType};

/// What a record is, for display.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// An AAL5 PDU.
    Aal5,
    /// A user-data cell.
    Cell,
    /// An F4 or F5 OAM cell.
    Oam,
    /// A resource-management cell (PTI 110).
    Rm,
    /// A SunATM SDU.
    SunAtm,
    /// Anything else.
    Other,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Aal5 => "aal5",
            Kind::Cell => "cell",
            Kind::Oam => "oam",
            Kind::Rm => "rm",
            Kind::SunAtm => "sunatm",
            Kind::Other => "other",
        })
    }
}

/// The HEC receiver's verdict on a cell header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HecCheck {
    /// No error.
    Ok,
    /// A single-bit error, corrected (bit 0 is the MSB of header byte 0).
    Corrected {
        /// The bit.
        bit: u8,
    },
    /// An uncorrectable error: the cell would be discarded.
    Bad {
        /// The syndrome.
        syndrome: u8,
    },
}

impl fmt::Display for HecCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HecCheck::Ok => f.write_str("ok"),
            HecCheck::Corrected { bit } => write!(f, "corrected(bit {bit})"),
            HecCheck::Bad { syndrome } => write!(f, "bad(syndrome {syndrome:#04x})"),
        }
    }
}

/// The AAL5 receive verdict on a PDU (I.363.5 §10.4 as [`Pdu::check`] applies it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Aal5Check {
    /// CRC right and Length consistent.
    Ok,
    /// The CRC-32 is wrong.
    Crc {
        /// CRC computed over the PDU.
        computed: u32,
        /// CRC in the trailer.
        received: u32,
    },
    /// Length 0: an aborted PDU.
    Abort,
    /// The Length field does not fit the PDU.
    Length {
        /// The Length field.
        length: u16,
        /// Bytes in the PDU.
        pdu_len: usize,
    },
    /// Not a whole number of cells (a truncated or foreign record).
    Partial {
        /// Bytes present.
        len: usize,
    },
}

impl Aal5Check {
    fn from_error(e: Aal5Error) -> Aal5Check {
        match e {
            Aal5Error::Crc { computed, received } => Aal5Check::Crc { computed, received },
            Aal5Error::Abort => Aal5Check::Abort,
            Aal5Error::Length { length, pdu_len } => Aal5Check::Length { length, pdu_len },
            // Oversize cannot happen with the largest maximum, nor EmptySdu on receive;
            // report them as the partial PDU they would have to be.
            Aal5Error::NotCellMultiple { len } | Aal5Error::Oversize { len, .. } => {
                Aal5Check::Partial { len }
            }
            Aal5Error::EmptySdu => Aal5Check::Partial { len: 0 },
        }
    }
}

impl fmt::Display for Aal5Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Aal5Check::Ok => f.write_str("ok"),
            Aal5Check::Crc { computed, received } => {
                write!(
                    f,
                    "crc-error(computed {computed:#010x}, trailer {received:#010x})"
                )
            }
            Aal5Check::Abort => f.write_str("abort"),
            Aal5Check::Length { length, pdu_len } => {
                write!(f, "length-error(length {length} in a {pdu_len}-byte pdu)")
            }
            Aal5Check::Partial { len } => write!(f, "partial({len} bytes, not whole cells)"),
        }
    }
}

/// The CRC-10 verdict on an OAM cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Crc10Check {
    /// Right.
    Ok,
    /// Wrong.
    Bad {
        /// CRC computed over the payload.
        computed: u16,
        /// CRC in the cell.
        received: u16,
    },
}

impl fmt::Display for Crc10Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Crc10Check::Ok => f.write_str("ok"),
            Crc10Check::Bad { computed, received } => {
                write!(f, "bad(computed {computed:#05x}, cell {received:#05x})")
            }
        }
    }
}

/// A one-line description of a record. `Display` gives the text line of `natm dump`;
/// serde gives its `--json` object (absent fields are `null`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// When, as `seconds.nanoseconds` since the Unix epoch (a string: JSON numbers cannot
    /// hold nanoseconds since 1970 exactly).
    #[serde(serialize_with = "serialize_time")]
    pub time: Instant,
    /// VPI, where the record has one.
    pub vpi: Option<u16>,
    /// VCI, where the record has one.
    pub vci: Option<u16>,
    /// PTI bits, for cells.
    pub pti: Option<u8>,
    /// CLP, for cells.
    pub clp: Option<bool>,
    /// What the record is.
    pub kind: Kind,
    /// Bytes: of the PDU, the cell (52 without HEC, 53 with), the SDU, or the raw record.
    pub len: usize,
    /// SDU bytes, for an AAL5 PDU that passed the checks.
    pub sdu_len: Option<usize>,
    /// Cells, for an AAL5 PDU of whole cells.
    pub cells: Option<usize>,
    /// HEC verdict, for cells captured with their HEC.
    pub hec: Option<HecCheck>,
    /// AAL5 verdict, for AAL5 PDUs.
    pub aal5: Option<Aal5Check>,
    /// CRC-10 verdict, for OAM cells.
    pub crc10: Option<Crc10Check>,
    /// The OAM cell, decoded: flow and function.
    pub oam: Option<String>,
    /// What the SDU carries, where known (`llc ipv4`, `llc arp`, `sscop signalling`, …).
    pub decoded: Option<String>,
    /// Anything else worth saying (the SunATM type, why a record stayed raw).
    pub note: Option<String>,
    /// A signalling record decoded: the SSCOP PDU and the Q.2931 message it carries, or
    /// why they did not decode.
    pub signalling: Option<Signalling>,
}

fn serialize_time<S: serde::Serializer>(t: &Instant, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(t)
}

impl Summary {
    fn new(time: Instant, kind: Kind, len: usize) -> Summary {
        Summary {
            time,
            vpi: None,
            vci: None,
            pti: None,
            clp: None,
            kind,
            len,
            sdu_len: None,
            cells: None,
            hec: None,
            aal5: None,
            crc10: None,
            oam: None,
            decoded: None,
            note: None,
            signalling: None,
        }
    }

    fn with_vc(mut self, vc: VcId) -> Summary {
        self.vpi = Some(vc.vpi.get());
        self.vci = Some(vc.vci.get());
        self
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.time)?;
        match (self.vpi, self.vci) {
            (Some(p), Some(c)) => write!(f, " {p}.{c}")?,
            _ => f.write_str(" -")?,
        }
        write!(f, " {} len={}", self.kind, self.len)?;
        if let (Some(pti), Some(clp)) = (self.pti, self.clp) {
            write!(f, " pti={pti} clp={}", u8::from(clp))?;
        }
        if let Some(h) = &self.hec {
            write!(f, " hec={h}")?;
        }
        if let Some(a) = &self.aal5 {
            write!(f, " aal5={a}")?;
        }
        if let Some(n) = self.sdu_len {
            write!(f, " sdu={n}")?;
        }
        if let Some(n) = self.cells {
            write!(f, " cells={n}")?;
        }
        if let Some(c) = &self.crc10 {
            write!(f, " crc10={c}")?;
        }
        for text in [&self.oam, &self.decoded].into_iter().flatten() {
            write!(f, " {text}")?;
        }
        if let Some(s) = &self.signalling {
            write!(f, " {s}")?;
        }
        if let Some(n) = &self.note {
            write!(f, " ({n})")?;
        }
        Ok(())
    }
}

/// Summarise one record. Never panics, whatever the record holds.
pub fn summarize(record: &Record) -> Summary {
    let time = record.time;
    match &record.kind {
        RecordKind::Aal5Pdu { vc, pdu } => aal5_summary(time, *vc, pdu),
        RecordKind::Cell(cell) => cell_summary(time, cell),
        RecordKind::SunAtm {
            vc,
            kind,
            direction,
            sdu,
        } => {
            let mut s = Summary::new(time, Kind::SunAtm, sdu.len()).with_vc(*vc);
            s.decoded = match kind {
                SunAtmType::Qsaal => Some(SSCOP.into()),
                SunAtmType::Ilmi => Some("ilmi".into()),
                SunAtmType::Lane => Some("lane".into()),
                _ => describe_sdu(*vc, sdu),
            };
            s.signalling = signalling(&s.decoded, sdu);
            s.note = Some(format!("sunatm {kind} {direction}"));
            s
        }
        RecordKind::Other { linktype, bytes } => {
            let mut s = Summary::new(time, Kind::Other, bytes.len());
            s.note = Some(why_raw(*linktype, bytes));
            if *linktype == LinkType::ExportedPdu
                && let Some((name, data)) = exported_pdu::decode(bytes)
            {
                s.signalling = match name {
                    b"sscop" => Some(Signalling::from_sscop(data)),
                    b"q2931" => Some(Signalling::from_q2931(data)),
                    _ => None,
                };
                if s.signalling.is_some() {
                    s.decoded = Some(String::from_utf8_lossy(name).into_owned());
                }
            }
            s
        }
    }
}

/// What [`describe_sdu`] calls the signalling VC's SDUs.
const SSCOP: &str = "sscop signalling";

/// The SSCOP and Q.2931 decoding of an SDU described as signalling.
fn signalling(decoded: &Option<String>, sdu: &[u8]) -> Option<Signalling> {
    (decoded.as_deref() == Some(SSCOP)).then(|| Signalling::from_sscop(sdu))
}

fn aal5_summary(time: Instant, vc: VcId, pdu: &[u8]) -> Summary {
    let mut s = Summary::new(time, Kind::Aal5, pdu.len()).with_vc(vc);
    if !pdu.is_empty() && pdu.len().is_multiple_of(natm_wire::PAYLOAD_LEN) {
        s.cells = Some(pdu.len() / natm_wire::PAYLOAD_LEN);
    }
    match Pdu::new_checked(pdu).and_then(|p| p.check(aal5::MAX_SDU)) {
        Ok(n) => {
            s.aal5 = Some(Aal5Check::Ok);
            s.sdu_len = Some(n);
            let sdu = pdu.get(..n).unwrap_or_default();
            s.decoded = describe_sdu(vc, sdu);
            s.signalling = signalling(&s.decoded, sdu);
        }
        Err(e) => s.aal5 = Some(Aal5Check::from_error(e)),
    }
    s
}

fn cell_summary(time: Instant, record: &CellRecord) -> Summary {
    let mut bytes = record.to_cell();
    let len = if record.hec.is_some() { 53 } else { 52 };
    let mut s = Summary::new(time, Kind::Cell, len);
    if record.hec.is_some() {
        // A fresh receiver: correction mode, as Wireshark checks each cell on its own.
        let verdict = HecReceiver::new().receive(&mut Cell::new_unchecked(&mut bytes[..]));
        s.hec = Some(match verdict {
            HecVerdict::Valid => HecCheck::Ok,
            HecVerdict::Corrected { bit } => HecCheck::Corrected { bit },
            HecVerdict::Discarded { syndrome } => HecCheck::Bad { syndrome },
        });
    }
    let cell = Cell::new_unchecked(&bytes[..]);
    let header = CellHeader::parse_unverified(&cell, HeaderFormat::Uni);
    s = s.with_vc(header.vc);
    s.pti = Some(header.pti.bits());
    s.clp = Some(header.clp);
    if let Some(flow) = OamFlow::of(&header) {
        s.kind = Kind::Oam;
        let payload = OamCell::new_unchecked(cell.payload());
        let repr = match OamRepr::parse(&payload) {
            Ok(repr) => {
                s.crc10 = Some(Crc10Check::Ok);
                repr
            }
            Err(e) => {
                if let OamError::Crc10 { computed, received } = e {
                    s.crc10 = Some(Crc10Check::Bad { computed, received });
                }
                OamRepr::parse_unverified(&record.payload)
            }
        };
        s.oam = Some(format!("{flow} {repr}"));
    } else if header.pti == Pti::ResourceMgmt {
        s.kind = Kind::Rm;
    }
    s
}

/// Name what an SDU carries: an LLC/SNAP header (and an ATMARP packet behind it), or the
/// protocol of a well-known VC.
fn describe_sdu(vc: VcId, sdu: &[u8]) -> Option<String> {
    if let Ok((header, at)) = LlcHeader::parse(sdu) {
        let mut text = header.to_string();
        if header == LlcHeader::ARP
            && let Some(arp) = sdu.get(at..).and_then(|b| AtmArpRepr::parse(b).ok())
        {
            text.push_str(&format!(
                " atmarp {} {} -> {}",
                op_name(arp.op),
                protocol_address(&arp.spa),
                protocol_address(&arp.tpa)
            ));
        }
        return Some(text);
    }
    match vc.vci {
        Vci::SIGNALLING => Some(SSCOP.into()),
        Vci::ILMI => Some("ilmi".into()),
        _ => None,
    }
}

fn op_name(op: Op) -> String {
    match op {
        Op::Request => "request".into(),
        Op::Reply => "reply".into(),
        Op::InRequest => "inarp-request".into(),
        Op::InReply => "inarp-reply".into(),
        Op::Nak => "nak".into(),
        Op::Unknown(n) => format!("op {n}"),
    }
}

fn protocol_address(a: &[u8]) -> String {
    match a {
        [] => "?".into(),
        [a, b, c, d] => format!("{a}.{b}.{c}.{d}"),
        _ => a.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

/// Why a record of this link type was kept raw.
fn why_raw(link: LinkType, bytes: &[u8]) -> String {
    match link {
        LinkType::Erf => match erf::split(bytes) {
            Err(e) => e.to_string(),
            Ok((h, body)) => match h.record_type() {
                record_type::AAL5 => format!(
                    "ERF AAL5 record with {} bytes, fewer than its 4-byte ATM header",
                    body.len()
                ),
                record_type::ATM => format!(
                    "ERF cell record with {} bytes, fewer than a 52-byte cell",
                    body.len()
                ),
                record_type::PAD => "ERF padding record".into(),
                t => format!("ERF type {t}, not decoded"),
            },
        },
        LinkType::SunAtm => format!(
            "SunATM record of {} bytes, shorter than its {}-byte pseudo-header",
            bytes.len(),
            sunatm::HEADER_LEN
        ),
        LinkType::ExportedPdu => match exported_pdu::decode(bytes) {
            Some((name, data)) => format!(
                "exported PDU of {} bytes for dissector {:?}",
                data.len(),
                String::from_utf8_lossy(name)
            ),
            None => "exported PDU whose tags run past the record".into(),
        },
        LinkType::Other(n) => format!("link type {n}, not decoded"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use natm_wire::oam::Loopback;

    fn vc(vpi: u32, vci: u32) -> VcId {
        VcId::uni(vpi, vci).unwrap()
    }

    fn t() -> Instant {
        Instant::from_nanos(1_000_000_000_000)
    }

    fn aal5(vc: VcId, sdu: &[u8]) -> Record {
        let mut pdu = Vec::new();
        aal5::encode_pdu(sdu, 0, 0, &mut pdu).unwrap();
        Record {
            time: t(),
            kind: RecordKind::Aal5Pdu { vc, pdu },
        }
    }

    const LLC_ICMP: [u8; 36] = [
        0xaa, 0xaa, 0x03, 0x00, 0x00, 0x00, 0x08, 0x00, 0x45, 0x00, 0x00, 0x1c, 0x00, 0x01, 0x00,
        0x00, 0x40, 0x01, 0xf9, 0x8c, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0x02, 0x08, 0x00,
        0xf7, 0xff, 0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn aal5_line() {
        let s = summarize(&aal5(vc(1, 100), &LLC_ICMP));
        assert_eq!(
            s.to_string(),
            "1000.000000000 1.100 aal5 len=48 aal5=ok sdu=36 cells=1 llc ipv4"
        );
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["time"], "1000.000000000");
        assert_eq!(json["kind"], "aal5");
        assert_eq!(json["aal5"], "ok");
        assert_eq!(json["hec"], serde_json::Value::Null);
        assert_eq!(json["decoded"], "llc ipv4");
    }

    #[test]
    fn atmarp_vector() {
        // atm-facts.md §7.2.
        let sdu: Vec<u8> = [
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
        .concat();
        let s = summarize(&aal5(vc(0, 100), &sdu));
        assert_eq!(
            s.decoded.as_deref(),
            Some("llc arp atmarp request 10.0.0.1 -> 10.0.0.2")
        );
    }

    #[test]
    fn aal5_errors() {
        let Record {
            kind: RecordKind::Aal5Pdu { pdu, .. },
            ..
        } = aal5(vc(1, 100), b"hello")
        else {
            unreachable!()
        };
        let mut bad = pdu.clone();
        bad[0] ^= 1;
        let s = aal5_summary(t(), vc(1, 100), &bad);
        assert!(matches!(
            s.aal5,
            Some(Aal5Check::Crc {
                received: 0x7f4c_d5de,
                ..
            })
        ));
        assert_eq!(s.sdu_len, None);
        let s = aal5_summary(t(), vc(1, 100), &pdu[..47]);
        assert_eq!(s.aal5, Some(Aal5Check::Partial { len: 47 }));
        assert_eq!(s.cells, None);
        let s = aal5_summary(t(), vc(1, 100), &[]);
        assert_eq!(s.aal5, Some(Aal5Check::Partial { len: 0 }));
        // The abort PDU of atm-facts.md §2.3.
        let mut abort = [0u8; 48];
        abort[44..].copy_from_slice(&[0x38, 0x66, 0x24, 0xc1]);
        let s = aal5_summary(t(), vc(1, 100), &abort);
        assert_eq!(s.aal5, Some(Aal5Check::Abort));
        assert!(s.to_string().contains("aal5=abort cells=1"));
    }

    #[test]
    fn cells_hec_and_oam() {
        let oam = OamRepr::Loopback(Loopback::request(1)).to_cell(OamFlow::F5EndToEnd, vc(1, 100));
        let rec = |cell: &[u8; 53]| Record {
            time: t(),
            kind: RecordKind::Cell(CellRecord::from_cell(cell)),
        };
        let s = summarize(&rec(&oam));
        assert_eq!(
            s.to_string(),
            "1000.000000000 1.100 oam len=53 pti=5 clp=0 hec=ok crc10=ok F5 end-to-end loopback request tag=0x00000001"
        );
        // Bit 0 of byte 2 is bit 23: corrected, and described after correction.
        let mut one = oam;
        one[2] ^= 1;
        let s = summarize(&rec(&one));
        assert_eq!(s.hec, Some(HecCheck::Corrected { bit: 23 }));
        assert_eq!((s.vpi, s.vci), (Some(1), Some(100)));
        let mut two = oam;
        two[0] ^= 0xC0;
        assert!(matches!(
            summarize(&rec(&two)).hec,
            Some(HecCheck::Bad { .. })
        ));
        let mut crc = oam;
        crc[20] ^= 1;
        assert!(matches!(
            summarize(&rec(&crc)).crc10,
            Some(Crc10Check::Bad { .. })
        ));
        // Without HEC (ERF): no verdict, 52 bytes.
        let s = summarize(&Record {
            time: t(),
            kind: RecordKind::Cell(CellRecord {
                hec: None,
                ..CellRecord::from_cell(&oam)
            }),
        });
        assert_eq!((s.hec, s.len, s.kind), (None, 52, Kind::Oam));
        // A user-data cell and an RM cell.
        let mut data = oam;
        data[3] &= !0x0E;
        data[4] = natm_wire::cell::hec([data[0], data[1], data[2], data[3]]);
        let s = summarize(&rec(&data));
        assert_eq!((s.kind, s.crc10, s.oam), (Kind::Cell, None, None));
        let mut rm = data;
        rm[3] |= 0x0C;
        rm[4] = natm_wire::cell::hec([rm[0], rm[1], rm[2], rm[3]]);
        assert_eq!(summarize(&rec(&rm)).kind, Kind::Rm);
    }

    #[test]
    fn sunatm_and_raw() {
        let s = summarize(&Record {
            time: t(),
            kind: RecordKind::SunAtm {
                vc: vc(1, 100),
                kind: SunAtmType::Guess,
                direction: sunatm::Direction::DteToDce,
                sdu: LLC_ICMP.to_vec(),
            },
        });
        assert_eq!(
            s.to_string(),
            "1000.000000000 1.100 sunatm len=36 llc ipv4 (sunatm guess dte->dce)"
        );
        let s = summarize(&Record {
            time: t(),
            kind: RecordKind::Other {
                linktype: LinkType::Erf,
                bytes: vec![0; 3],
            },
        });
        assert_eq!(
            s.to_string(),
            "1000.000000000 - other len=3 (ERF record of 3 bytes, shorter than its 16-byte header)"
        );
    }
}

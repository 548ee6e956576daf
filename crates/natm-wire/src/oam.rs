//! OAM cells of the F4 (virtual path) and F5 (virtual channel) flows (ITU-T I.610).
//!
//! ```text
//! byte 0      OAM type (high nibble) | function type (low nibble)
//! bytes 1..46 function-specific fields; unused bytes are 0x6A
//! bytes 46..48 six reserved zero bits + CRC-10 over the first 374 bits
//! ```
//!
//! [`OamCell`] views the 48-byte payload; [`OamRepr`] parses and emits AIS, RDI, continuity
//! check and loopback, and keeps any other type/function as raw bytes so it round-trips.
//! [`OamFlow`] tells which flow a header belongs to: F4 on VCI 3 (segment) or 4 (end to
//! end); F5 on the VC itself with PTI 100 (segment) or 101 (end to end).
//!
//! Loopback field sizes: location ID 16, source ID 16, 8 unused, as I.610 and Intel's IXP400
//! codelet have them (tcpdump's 12/12/16 split is not used; a recorded decision).

use core::fmt;

use natm_core::{VcId, Vci};

use crate::cell::{CellHeader, PAYLOAD_LEN, Pti, Truncated};

/// Fill byte for unused OAM fields.
pub const UNUSED: u8 = 0x6A;
/// Location or source ID meaning "the end point" / "no specific coding".
pub const ALL_ONES_ID: [u8; 16] = [0xFF; 16];

/// Byte ranges of the OAM payload.
pub mod field {
    use core::ops::Range;
    /// OAM type and function type.
    pub const TYPE_FUNCTION: usize = 0;
    /// Function-specific information.
    pub const INFO: Range<usize> = 1..46;
    /// Reserved bits and CRC-10.
    pub const CRC: Range<usize> = 46..48;
    /// Loopback indication (LSB).
    pub const LB_INDICATION: usize = 1;
    /// Loopback correlation tag.
    pub const LB_TAG: Range<usize> = 2..6;
    /// Loopback location ID.
    pub const LB_LOCATION: Range<usize> = 6..22;
    /// Loopback source ID.
    pub const LB_SOURCE: Range<usize> = 22..38;
    /// AIS/RDI defect type.
    pub const DEFECT_TYPE: usize = 1;
    /// AIS/RDI defect location.
    pub const DEFECT_LOCATION: Range<usize> = 2..18;
}

/// Type/function byte of fault-management AIS.
pub const AIS: u8 = 0x10;
/// Type/function byte of fault-management RDI (Wireshark: "FERF").
pub const RDI: u8 = 0x11;
/// Type/function byte of fault-management continuity check.
pub const CONTINUITY_CHECK: u8 = 0x14;
/// Type/function byte of fault-management loopback.
pub const LOOPBACK: u8 = 0x18;

static CRC10: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_10_ATM);

/// The CRC-10 for an OAM payload: over the 46 information bytes and the six reserved zero
/// bits (the catalogue CRC of 46 bytes, clocked six more times with zeros).
pub fn crc10(payload: &[u8; PAYLOAD_LEN]) -> u16 {
    let mut c = CRC10.checksum(&payload[..46]);
    for _ in 0..6 {
        let top = (c >> 9) & 1;
        c = (c << 1) & 0x3FF;
        if top != 0 {
            c ^= 0x233;
        }
    }
    c
}

/// The OAM flow a cell belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OamFlow {
    /// VP segment flow (VCI 3).
    F4Segment,
    /// VP end-to-end flow (VCI 4).
    F4EndToEnd,
    /// VC segment flow (PTI 100).
    F5Segment,
    /// VC end-to-end flow (PTI 101).
    F5EndToEnd,
}

impl OamFlow {
    /// The flow of a cell with this header, if it is an OAM cell. F4 cells are those on VCI
    /// 3 or 4 whose PTI is user data without the SDU-type bit, as Wireshark classifies them.
    /// This is the labelling rule (captures, `natm dump`); a receiver routes *every* VCI 3/4
    /// cell to its OAM handling (natm-adapter does), since I.361 reserves those VCIs for F4.
    pub fn of(header: &CellHeader) -> Option<OamFlow> {
        match header.pti {
            Pti::SegmentF5 => Some(OamFlow::F5Segment),
            Pti::EndToEndF5 => Some(OamFlow::F5EndToEnd),
            Pti::UserData {
                end_of_frame: false,
                ..
            } => match header.vc.vci {
                Vci::F4_SEGMENT => Some(OamFlow::F4Segment),
                Vci::F4_END_TO_END => Some(OamFlow::F4EndToEnd),
                _ => None,
            },
            _ => None,
        }
    }

    /// The header of an OAM cell of this flow for `vc` (for F4 only its VPI is used).
    pub fn header(self, vc: VcId) -> CellHeader {
        let (vci, pti) = match self {
            OamFlow::F4Segment => (Vci::F4_SEGMENT, Pti::DATA),
            OamFlow::F4EndToEnd => (Vci::F4_END_TO_END, Pti::DATA),
            OamFlow::F5Segment => (vc.vci, Pti::SegmentF5),
            OamFlow::F5EndToEnd => (vc.vci, Pti::EndToEndF5),
        };
        CellHeader {
            gfc: 0,
            vc: VcId::new(vc.vpi, vci),
            pti,
            clp: false,
        }
    }

    /// Whether this is a segment flow (looped back at the segment end point, e.g. a switch
    /// port) rather than end to end.
    pub fn is_segment(self) -> bool {
        matches!(self, OamFlow::F4Segment | OamFlow::F5Segment)
    }
}

impl fmt::Display for OamFlow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OamFlow::F4Segment => "F4 segment",
            OamFlow::F4EndToEnd => "F4 end-to-end",
            OamFlow::F5Segment => "F5 segment",
            OamFlow::F5EndToEnd => "F5 end-to-end",
        })
    }
}

/// A zero-copy view of an OAM cell payload (48 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OamCell<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> OamCell<T> {
    /// A view without a length check.
    pub const fn new_unchecked(buffer: T) -> Self {
        OamCell { buffer }
    }

    /// A view checked to hold 48 bytes.
    pub fn new_checked(buffer: T) -> Result<Self, Truncated> {
        let got = buffer.as_ref().len();
        if got < PAYLOAD_LEN {
            return Err(Truncated {
                needed: PAYLOAD_LEN,
                got,
            });
        }
        Ok(OamCell { buffer })
    }

    fn bytes(&self) -> &[u8; PAYLOAD_LEN] {
        self.buffer.as_ref()[..PAYLOAD_LEN]
            .try_into()
            .expect("length checked")
    }

    /// The type/function byte.
    pub fn type_function(&self) -> u8 {
        self.bytes()[field::TYPE_FUNCTION]
    }

    /// The OAM type (high nibble): 1 fault management, 2 performance, 8 activation, …
    pub fn oam_type(&self) -> u8 {
        self.type_function() >> 4
    }

    /// The function type (low nibble).
    pub fn function_type(&self) -> u8 {
        self.type_function() & 0xF
    }

    /// The CRC-10 carried in the cell.
    pub fn crc10(&self) -> u16 {
        let b = self.bytes();
        u16::from_be_bytes([b[46], b[47]]) & 0x3FF
    }

    /// The six reserved bits before the CRC (zero when sent correctly).
    pub fn reserved_bits(&self) -> u8 {
        self.bytes()[46] >> 2
    }

    /// Whether the CRC-10 is right: the division of all 48 bytes leaves no remainder.
    pub fn verify_crc10(&self) -> bool {
        CRC10.checksum(self.bytes()) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> OamCell<T> {
    /// Clear the reserved bits and store the CRC-10.
    pub fn fill_crc10(&mut self) {
        let b: &mut [u8; PAYLOAD_LEN] = (&mut self.buffer.as_mut()[..PAYLOAD_LEN])
            .try_into()
            .expect("length checked");
        b[46] = 0;
        b[47] = 0;
        let crc = crc10(b).to_be_bytes();
        b[46] = crc[0];
        b[47] = crc[1];
    }
}

/// AIS and RDI fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Defect {
    /// Defect type (0x6A when not used).
    pub defect_type: u8,
    /// Defect location (0x6A bytes when not used).
    pub location: [u8; 16],
}

impl Default for Defect {
    fn default() -> Self {
        Defect {
            defect_type: UNUSED,
            location: [UNUSED; 16],
        }
    }
}

/// Loopback fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Loopback {
    /// `true` for a request ("parent" cell); the point that loops it back clears it.
    pub request: bool,
    /// Chosen by the sender and echoed unchanged.
    pub correlation_tag: u32,
    /// Where the cell is to be looped back; all ones means the end point.
    pub location_id: [u8; 16],
    /// Who sent it; all ones when there is no specific coding.
    pub source_id: [u8; 16],
}

impl Loopback {
    /// A request to be looped back at the end point.
    pub fn request(correlation_tag: u32) -> Loopback {
        Loopback {
            request: true,
            correlation_tag,
            location_id: ALL_ONES_ID,
            source_id: ALL_ONES_ID,
        }
    }

    /// The reply a loopback point sends: the same cell with the indication cleared.
    pub fn reply(&self) -> Loopback {
        Loopback {
            request: false,
            ..*self
        }
    }
}

/// A parsed OAM payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OamRepr {
    /// Alarm indication signal, sent downstream when a defect is detected upstream.
    Ais(Defect),
    /// Remote defect indication, sent back towards the source.
    Rdi(Defect),
    /// Continuity check.
    ContinuityCheck,
    /// Loopback request or reply.
    Loopback(Loopback),
    /// Any other type/function, kept whole.
    Other {
        /// The type/function byte.
        type_function: u8,
        /// Bytes 1..46.
        info: [u8; 45],
    },
}

/// Why an OAM payload was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OamError {
    /// Fewer than 48 bytes.
    Truncated(Truncated),
    /// The CRC-10 is wrong.
    Crc10 {
        /// CRC computed.
        computed: u16,
        /// CRC in the cell.
        received: u16,
    },
}

impl fmt::Display for OamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OamError::Truncated(t) => write!(f, "OAM cell {t}"),
            OamError::Crc10 { computed, received } => {
                write!(
                    f,
                    "OAM CRC-10 error: computed {computed:#05x}, cell has {received:#05x}"
                )
            }
        }
    }
}

impl core::error::Error for OamError {}

impl OamRepr {
    /// Parse a payload, requiring a correct CRC-10.
    pub fn parse<T: AsRef<[u8]>>(cell: &OamCell<T>) -> Result<OamRepr, OamError> {
        let b = cell.buffer.as_ref();
        if b.len() < PAYLOAD_LEN {
            return Err(OamError::Truncated(Truncated {
                needed: PAYLOAD_LEN,
                got: b.len(),
            }));
        }
        if !cell.verify_crc10() {
            let mut zeroed: [u8; PAYLOAD_LEN] = *cell.bytes();
            zeroed[46] = 0;
            zeroed[47] = 0;
            return Err(OamError::Crc10 {
                computed: crc10(&zeroed),
                received: cell.crc10(),
            });
        }
        Ok(Self::parse_unverified(cell.bytes()))
    }

    /// Parse the fields without checking the CRC-10.
    pub fn parse_unverified(b: &[u8; PAYLOAD_LEN]) -> OamRepr {
        let id =
            |r: core::ops::Range<usize>| -> [u8; 16] { b[r].try_into().expect("16-byte field") };
        match b[field::TYPE_FUNCTION] {
            AIS | RDI => {
                let d = Defect {
                    defect_type: b[field::DEFECT_TYPE],
                    location: id(field::DEFECT_LOCATION),
                };
                if b[0] == AIS {
                    OamRepr::Ais(d)
                } else {
                    OamRepr::Rdi(d)
                }
            }
            CONTINUITY_CHECK => OamRepr::ContinuityCheck,
            LOOPBACK => OamRepr::Loopback(Loopback {
                request: b[field::LB_INDICATION] & 1 != 0,
                correlation_tag: u32::from_be_bytes(b[field::LB_TAG].try_into().expect("4 bytes")),
                location_id: id(field::LB_LOCATION),
                source_id: id(field::LB_SOURCE),
            }),
            type_function => OamRepr::Other {
                type_function,
                info: b[field::INFO].try_into().expect("45 bytes"),
            },
        }
    }

    /// The 48-byte payload, unused fields 0x6A, reserved bits 0 and CRC-10 filled.
    pub fn to_payload(&self) -> [u8; PAYLOAD_LEN] {
        let mut b = [UNUSED; PAYLOAD_LEN];
        match self {
            OamRepr::Ais(d) | OamRepr::Rdi(d) => {
                b[0] = if matches!(self, OamRepr::Ais(_)) {
                    AIS
                } else {
                    RDI
                };
                b[field::DEFECT_TYPE] = d.defect_type;
                b[field::DEFECT_LOCATION].copy_from_slice(&d.location);
            }
            OamRepr::ContinuityCheck => b[0] = CONTINUITY_CHECK,
            OamRepr::Loopback(l) => {
                b[0] = LOOPBACK;
                b[field::LB_INDICATION] = u8::from(l.request);
                b[field::LB_TAG].copy_from_slice(&l.correlation_tag.to_be_bytes());
                b[field::LB_LOCATION].copy_from_slice(&l.location_id);
                b[field::LB_SOURCE].copy_from_slice(&l.source_id);
            }
            OamRepr::Other {
                type_function,
                info,
            } => {
                b[0] = *type_function;
                b[field::INFO].copy_from_slice(info);
            }
        }
        OamCell::new_unchecked(&mut b[..]).fill_crc10();
        b
    }

    /// A whole 53-byte OAM cell of `flow` on `vc`.
    pub fn to_cell(&self, flow: OamFlow, vc: VcId) -> [u8; crate::CELL_LEN] {
        let mut cell = [0u8; crate::CELL_LEN];
        let header = flow
            .header(vc)
            .to_bytes(natm_core::HeaderFormat::Uni)
            .expect("a UNI VcId always fits a UNI header");
        cell[..5].copy_from_slice(&header);
        cell[5..].copy_from_slice(&self.to_payload());
        cell
    }
}

impl fmt::Display for OamRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OamRepr::Ais(d) => write!(f, "AIS defect={:#04x}", d.defect_type),
            OamRepr::Rdi(d) => write!(f, "RDI defect={:#04x}", d.defect_type),
            OamRepr::ContinuityCheck => f.write_str("CC"),
            OamRepr::Loopback(l) => write!(
                f,
                "loopback {} tag={:#010x}",
                if l.request { "request" } else { "reply" },
                l.correlation_tag
            ),
            OamRepr::Other { type_function, .. } => write!(
                f,
                "OAM type={} function={}",
                type_function >> 4,
                type_function & 0xF
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::{Cell, CellHeader};
    use natm_core::HeaderFormat;
    use proptest::prelude::*;

    fn vc(vpi: u32, vci: u32) -> VcId {
        VcId::uni(vpi, vci).unwrap()
    }

    fn lb_request_payload() -> [u8; 48] {
        // atm-facts.md §3.4.
        let mut p = [0u8; 48];
        p[..6].copy_from_slice(&[0x18, 0x01, 0x00, 0x00, 0x00, 0x01]);
        p[6..38].fill(0xFF);
        p[38..46].fill(0x6A);
        p[46..].copy_from_slice(&[0x03, 0x93]);
        p
    }

    #[test]
    fn crc10_catalogue_check() {
        assert_eq!(CRC10.checksum(b"123456789"), 0x199);
    }

    #[test]
    fn loopback_request_vector() {
        let want = lb_request_payload();
        let repr = OamRepr::Loopback(Loopback::request(1));
        assert_eq!(repr.to_payload(), want);
        let view = OamCell::new_checked(&want[..]).unwrap();
        assert!(view.verify_crc10());
        assert_eq!(view.crc10(), 0x393);
        assert_eq!(OamRepr::parse(&view), Ok(repr));
        let cell = repr.to_cell(OamFlow::F5EndToEnd, vc(1, 100));
        assert_eq!(&cell[..5], &[0x00, 0x10, 0x06, 0x4a, 0x78]);
        // Segment flow and F4: same payload CRC, the header differs.
        assert_eq!(
            &repr.to_cell(OamFlow::F5Segment, vc(1, 100))[..5],
            &[0x00, 0x10, 0x06, 0x48, 0x76]
        );
        assert_eq!(
            &repr.to_cell(OamFlow::F4EndToEnd, vc(1, 100))[..5],
            &[0x00, 0x10, 0x00, 0x40, 0x30]
        );
    }

    #[test]
    fn loopback_reply_vector() {
        let reply = OamRepr::Loopback(Loopback::request(1).reply()).to_payload();
        assert_eq!(reply[1], 0);
        assert_eq!(&reply[46..], &[0x01, 0x6a]);
    }

    #[test]
    fn fault_management_vectors() {
        // atm-facts.md §3.4: AIS → 03 b9, RDI → 00 af, CC → 03 87 (all other bytes 0x6A).
        for (repr, tf, crc) in [
            (OamRepr::Ais(Defect::default()), 0x10, [0x03, 0xb9]),
            (OamRepr::Rdi(Defect::default()), 0x11, [0x00, 0xaf]),
            (OamRepr::ContinuityCheck, 0x14, [0x03, 0x87]),
        ] {
            let p = repr.to_payload();
            assert_eq!(p[0], tf);
            assert!(p[1..46].iter().all(|&b| b == 0x6A));
            assert_eq!(&p[46..], &crc, "{repr}");
            assert_eq!(
                OamRepr::parse(&OamCell::new_checked(&p[..]).unwrap()),
                Ok(repr)
            );
        }
    }

    #[test]
    fn crc10_over_zeroed_field_is_the_known_bug() {
        // Running the catalogue CRC over 48 bytes with the CRC field zeroed gives 0x2DC, not 0x393.
        let mut p = lb_request_payload();
        p[46] = 0;
        p[47] = 0;
        assert_eq!(CRC10.checksum(&p), 0x2DC);
        assert_eq!(crc10(&p), 0x393);
    }

    #[test]
    fn bad_crc10_is_reported() {
        let mut p = lb_request_payload();
        p[10] ^= 0x40;
        let e = OamRepr::parse(&OamCell::new_checked(&p[..]).unwrap()).unwrap_err();
        assert!(matches!(
            e,
            OamError::Crc10 {
                received: 0x393,
                ..
            }
        ));
        assert_eq!(
            OamRepr::parse(&OamCell::new_unchecked(&p[..10])),
            Err(OamError::Truncated(Truncated {
                needed: 48,
                got: 10
            }))
        );
    }

    #[test]
    fn flow_classification() {
        let h = |vci, pti| CellHeader {
            gfc: 0,
            vc: vc(1, vci),
            pti: Pti::from_bits(pti),
            clp: false,
        };
        assert_eq!(OamFlow::of(&h(3, 0)), Some(OamFlow::F4Segment));
        assert_eq!(OamFlow::of(&h(4, 2)), Some(OamFlow::F4EndToEnd));
        assert_eq!(OamFlow::of(&h(4, 1)), None);
        assert_eq!(OamFlow::of(&h(100, 4)), Some(OamFlow::F5Segment));
        assert_eq!(OamFlow::of(&h(100, 5)), Some(OamFlow::F5EndToEnd));
        assert_eq!(OamFlow::of(&h(100, 0)), None);
        assert_eq!(OamFlow::of(&h(100, 6)), None);
        for flow in [
            OamFlow::F4Segment,
            OamFlow::F4EndToEnd,
            OamFlow::F5Segment,
            OamFlow::F5EndToEnd,
        ] {
            assert_eq!(OamFlow::of(&flow.header(vc(7, 200))), Some(flow));
        }
        let cell = OamRepr::ContinuityCheck.to_cell(OamFlow::F4Segment, vc(1, 100));
        assert_eq!(&cell[..5], &[0x00, 0x10, 0x00, 0x30, 0x67]);
        assert!(Cell::new_checked(&cell[..]).unwrap().verify_hec());
        let parsed =
            CellHeader::parse(&Cell::new_checked(&cell[..]).unwrap(), HeaderFormat::Uni).unwrap();
        assert_eq!(OamFlow::of(&parsed), Some(OamFlow::F4Segment));
    }

    proptest! {
        #[test]
        fn round_trip(tf: u8, info in any::<[u8; 45]>(), tag: u32, req: bool, loc: [u8; 16], src: [u8; 16], dt: u8) {
            let reprs = [
                OamRepr::Loopback(Loopback { request: req, correlation_tag: tag, location_id: loc, source_id: src }),
                OamRepr::Ais(Defect { defect_type: dt, location: loc }),
                OamRepr::Rdi(Defect { defect_type: dt, location: src }),
                OamRepr::ContinuityCheck,
            ];
            for r in reprs {
                let p = r.to_payload();
                prop_assert_eq!(OamRepr::parse(&OamCell::new_checked(&p[..]).unwrap()), Ok(r));
            }
            if ![AIS, RDI, CONTINUITY_CHECK, LOOPBACK].contains(&tf) {
                let r = OamRepr::Other { type_function: tf, info };
                let p = r.to_payload();
                prop_assert_eq!(OamRepr::parse(&OamCell::new_checked(&p[..]).unwrap()), Ok(r));
            }
        }

        #[test]
        fn any_single_bit_flip_fails_crc10(bit in 0usize..384) {
            let mut p = lb_request_payload();
            p[bit / 8] ^= 0x80 >> (bit % 8);
            let bit_in_reserved = (368..374).contains(&bit);
            prop_assert_eq!(OamCell::new_checked(&p[..]).unwrap().verify_crc10(), false, "bit {} reserved={}", bit, bit_in_reserved);
        }
    }
}

//! Identifiers of the ATM layer: interface, VPI, VCI (ITU-T I.361 §2.2).
//!
//! Each is a newtype whose constructor checks the range, so a value that exists is valid.
//! The UNI header has an 8-bit VPI and the NNI a 12-bit one; the limit that applies is
//! chosen by [`HeaderFormat`], never by a sentinel. Selectors such as "any" or
//! "unspecified" (linux-atm's `ATM_VCI_ANY = -1`) are not values of these types: they live
//! in the address types that need them.

use core::fmt;
use core::str::FromStr;

/// Which cell header layout a link uses (I.361 figure 2 and 3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HeaderFormat {
    /// User-network interface: 4-bit GFC, 8-bit VPI.
    #[default]
    Uni,
    /// Network-node interface: 12-bit VPI, no GFC.
    Nni,
}

impl HeaderFormat {
    /// The largest VPI this format can carry.
    pub const fn max_vpi(self) -> u16 {
        match self {
            HeaderFormat::Uni => Vpi::MAX_UNI,
            HeaderFormat::Nni => Vpi::MAX_NNI,
        }
    }
}

/// An identifier out of its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdError {
    /// The VPI is larger than the header format allows.
    VpiRange {
        /// The value given.
        value: u32,
        /// The largest allowed.
        max: u16,
    },
    /// The VCI does not fit 16 bits.
    VciRange {
        /// The value given.
        value: u32,
    },
    /// The interface number does not fit.
    ItfRange {
        /// The value given.
        value: u32,
    },
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            IdError::VpiRange { value, max } => write!(f, "VPI {value} out of range 0..={max}"),
            IdError::VciRange { value } => write!(f, "VCI {value} out of range 0..=65535"),
            IdError::ItfRange { value } => {
                write!(f, "interface {value} out of range 0..={}", Itf::MAX)
            }
        }
    }
}

impl core::error::Error for IdError {}

/// Virtual path identifier: 0..=4095, of which a UNI carries 0..=255.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Vpi(u16);

impl Vpi {
    /// Largest VPI at the UNI (8 bits). linux-atm: `ATM_MAX_VPI`.
    pub const MAX_UNI: u16 = (1 << 8) - 1;
    /// Largest VPI at the NNI (12 bits). linux-atm's `ATM_MAX_VPI_NNI` is the count, 4096.
    pub const MAX_NNI: u16 = (1 << 12) - 1;

    /// A VPI valid in `format`.
    pub const fn new(value: u32, format: HeaderFormat) -> Result<Vpi, IdError> {
        let max = format.max_vpi();
        if value > max as u32 {
            Err(IdError::VpiRange { value, max })
        } else {
            Ok(Vpi(value as u16))
        }
    }

    /// A VPI valid at the UNI.
    pub const fn uni(value: u32) -> Result<Vpi, IdError> {
        Vpi::new(value, HeaderFormat::Uni)
    }

    /// A VPI valid at the NNI (which includes every UNI VPI).
    pub const fn nni(value: u32) -> Result<Vpi, IdError> {
        Vpi::new(value, HeaderFormat::Nni)
    }

    /// The number.
    pub const fn get(self) -> u16 {
        self.0
    }

    /// Whether this VPI fits the given header format.
    pub const fn fits(self, format: HeaderFormat) -> bool {
        self.0 <= format.max_vpi()
    }
}

/// Virtual channel identifier, 16 bits. VCIs below [`Vci::FIRST_USER`] are reserved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Vci(u16);

impl Vci {
    /// Unassigned / idle; never user traffic.
    pub const UNASSIGNED: Vci = Vci(0);
    /// Meta-signalling (VPI 0).
    pub const META_SIGNALLING: Vci = Vci(1);
    /// General broadcast signalling.
    pub const BROADCAST_SIGNALLING: Vci = Vci(2);
    /// Segment OAM F4 flow of the VP.
    pub const F4_SEGMENT: Vci = Vci(3);
    /// End-to-end OAM F4 flow of the VP.
    pub const F4_END_TO_END: Vci = Vci(4);
    /// Point-to-point signalling (UNI default 0/5).
    pub const SIGNALLING: Vci = Vci(5);
    /// VP-level resource management.
    pub const VP_RM: Vci = Vci(6);
    /// ILMI.
    pub const ILMI: Vci = Vci(16);
    /// The first VCI that is not reserved. linux-atm: `ATM_NOT_RSV_VCI`.
    pub const FIRST_USER: u16 = 32;
    /// The largest VCI.
    pub const MAX: u16 = u16::MAX;

    /// A VCI from any integer, checked to fit 16 bits.
    pub const fn new(value: u32) -> Result<Vci, IdError> {
        if value > u16::MAX as u32 {
            Err(IdError::VciRange { value })
        } else {
            Ok(Vci(value as u16))
        }
    }

    /// A VCI from 16 bits; every value is representable.
    pub const fn from_u16(value: u16) -> Vci {
        Vci(value)
    }

    /// The number.
    pub const fn get(self) -> u16 {
        self.0
    }

    /// Whether the VCI is in the reserved range 0..32.
    pub const fn is_reserved(self) -> bool {
        self.0 < Vci::FIRST_USER
    }
}

/// A virtual channel on one link: VPI and VCI.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VcId {
    /// Virtual path.
    pub vpi: Vpi,
    /// Virtual channel within the path.
    pub vci: Vci,
}

impl VcId {
    /// A VC id from its parts.
    pub const fn new(vpi: Vpi, vci: Vci) -> VcId {
        VcId { vpi, vci }
    }

    /// A VC id valid at the UNI from plain numbers.
    pub const fn uni(vpi: u32, vci: u32) -> Result<VcId, IdError> {
        let vpi = match Vpi::uni(vpi) {
            Ok(v) => v,
            Err(e) => return Err(e),
        };
        match Vci::new(vci) {
            Ok(vci) => Ok(VcId { vpi, vci }),
            Err(e) => Err(e),
        }
    }
}

impl VcId {
    /// The VC as one number, the VPI above the VCI: `vpi << 16 | vci`. This is the key of
    /// the per-cell VC tables ([`SlotMap`](crate::slotmap::SlotMap)), and equals bits 4..32
    /// of an NNI cell header shifted down by 4 (a UNI header's too, once the GFC is masked).
    pub const fn key(self) -> u32 {
        (self.vpi.0 as u32) << 16 | self.vci.0 as u32
    }

    /// Parses the `vpi.vci` form, decimal without leading zeros as in libatm's `text2atm`
    /// (`0.100`), with the VPI limit of `format`. No interface, `*` or `?`: for those see
    /// [`PvcAddr`](crate::addr::PvcAddr).
    pub fn parse(text: &str, format: HeaderFormat) -> Result<VcId, VcIdParseError> {
        let (vpi, vci) = text.split_once('.').ok_or(VcIdParseError::NoDot)?;
        let vpi = decimal(vpi).ok_or(VcIdParseError::VpiNotDecimal)?;
        let vci = decimal(vci).ok_or(VcIdParseError::VciNotDecimal)?;
        let vpi = Vpi::new(vpi, format).map_err(|_| VcIdParseError::VpiRange {
            max: format.max_vpi(),
        })?;
        let vci = Vci::new(vci).map_err(|_| VcIdParseError::VciRange)?;
        Ok(VcId { vpi, vci })
    }
}

/// A decimal number without sign or leading zero, saturating at `u32::MAX` (which no
/// identifier reaches).
fn decimal(text: &str) -> Option<u32> {
    let b = text.as_bytes();
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    Some(b.iter().fold(0u32, |n, d| {
        n.saturating_mul(10).saturating_add(u32::from(d - b'0'))
    }))
}

impl fmt::Display for VcId {
    /// The linux-atm `vpi.vci` form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.vpi.0, self.vci.0)
    }
}

impl FromStr for VcId {
    type Err = VcIdParseError;
    /// The `vpi.vci` form that `Display` writes, with NNI VPIs (up to 4095); see
    /// [`VcId::parse`] for the UNI limit.
    fn from_str(text: &str) -> Result<VcId, VcIdParseError> {
        VcId::parse(text, HeaderFormat::Nni)
    }
}

/// Why text is not a `vpi.vci` ([`VcId::parse`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VcIdParseError {
    /// No `.` between the VPI and the VCI.
    NoDot,
    /// The VPI is not a decimal number (digits only, no sign, no leading zero).
    VpiNotDecimal,
    /// The VCI is not a decimal number (digits only, no sign, no leading zero).
    VciNotDecimal,
    /// The VPI is above the header format's limit.
    VpiRange {
        /// The largest VPI allowed.
        max: u16,
    },
    /// The VCI is above 65535.
    VciRange,
}

impl fmt::Display for VcIdParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            VcIdParseError::NoDot => f.write_str("expected VPI.VCI (e.g. 0.100)"),
            VcIdParseError::VpiNotDecimal => {
                f.write_str("the VPI is not a decimal number (digits, no leading zero)")
            }
            VcIdParseError::VciNotDecimal => {
                f.write_str("the VCI is not a decimal number (digits, no leading zero)")
            }
            VcIdParseError::VpiRange { max } => write!(f, "VPI out of range 0..={max}"),
            VcIdParseError::VciRange => write!(f, "VCI out of range 0..={}", Vci::MAX),
        }
    }
}

impl core::error::Error for VcIdParseError {}

impl fmt::Display for Vpi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for Vci {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// An ATM interface (adapter or port) number, as linux-atm's `itf`: 0..=32767.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Itf(u16);

impl Itf {
    /// Largest interface number (linux-atm stores it in a `short`).
    pub const MAX: u16 = i16::MAX as u16;

    /// An interface number, checked.
    pub const fn new(value: u32) -> Result<Itf, IdError> {
        if value > Itf::MAX as u32 {
            Err(IdError::ItfRange { value })
        } else {
            Ok(Itf(value as u16))
        }
    }

    /// The number.
    pub const fn get(self) -> u16 {
        self.0
    }
}

impl fmt::Display for Itf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_constants_match_field_widths() {
        assert_eq!(Vpi::MAX_UNI, (1 << 8) - 1);
        assert_eq!(Vpi::MAX_NNI, (1 << 12) - 1);
        assert_eq!(u32::from(Vci::MAX), (1u32 << 16) - 1);
    }

    #[test]
    fn vpi_range_depends_on_format() {
        assert!(Vpi::uni(255).is_ok());
        assert_eq!(
            Vpi::uni(256),
            Err(IdError::VpiRange {
                value: 256,
                max: 255
            })
        );
        assert!(Vpi::nni(4095).is_ok());
        assert_eq!(
            Vpi::nni(4096),
            Err(IdError::VpiRange {
                value: 4096,
                max: 4095
            })
        );
        assert!(Vpi::nni(300).unwrap().fits(HeaderFormat::Nni));
        assert!(!Vpi::nni(300).unwrap().fits(HeaderFormat::Uni));
    }

    #[test]
    fn vci_reserved_range() {
        assert!(Vci::SIGNALLING.is_reserved());
        assert!(Vci::from_u16(31).is_reserved());
        assert!(!Vci::from_u16(32).is_reserved());
        assert_eq!(Vci::new(65536), Err(IdError::VciRange { value: 65536 }));
    }

    #[test]
    fn vcid_parse() {
        assert_eq!("1.100".parse(), Ok(VcId::uni(1, 100).unwrap()));
        assert_eq!("0.0".parse(), Ok(VcId::default()));
        assert_eq!(
            "4095.65535".parse(),
            Ok(VcId::new(Vpi::nni(4095).unwrap(), Vci::from_u16(65535)))
        );
        assert_eq!(
            VcId::parse("255.65535", HeaderFormat::Uni),
            Ok(VcId::uni(255, 65535).unwrap())
        );
        use VcIdParseError as E;
        for (text, want) in [
            ("", E::NoDot),
            ("1", E::NoDot),
            ("1.", E::VciNotDecimal),
            (".5", E::VpiNotDecimal),
            ("a.b", E::VpiNotDecimal),
            ("1.2.3", E::VciNotDecimal),
            ("-1.5", E::VpiNotDecimal),
            ("+1.5", E::VpiNotDecimal),
            (" 1.5", E::VpiNotDecimal),
            ("01.5", E::VpiNotDecimal),
            ("1.05", E::VciNotDecimal),
            ("0.*", E::VciNotDecimal),
            ("?.5", E::VpiNotDecimal),
            ("4096.5", E::VpiRange { max: 4095 }),
            ("99999999999999.5", E::VpiRange { max: 4095 }),
            ("0.65536", E::VciRange),
        ] {
            assert_eq!(text.parse::<VcId>(), Err(want), "{text:?}");
        }
        assert_eq!(
            VcId::parse("256.5", HeaderFormat::Uni),
            Err(E::VpiRange { max: 255 })
        );
        assert_eq!(
            E::VpiRange { max: 255 }.to_string(),
            "VPI out of range 0..=255"
        );
        assert_eq!(E::VciRange.to_string(), "VCI out of range 0..=65535");
    }

    proptest::proptest! {
        #[test]
        fn vcid_display_parse_round_trip(vpi in 0u32..=4095, vci in 0u32..=65535) {
            let vc = VcId::new(Vpi::nni(vpi).unwrap(), Vci::new(vci).unwrap());
            proptest::prop_assert_eq!(vc.to_string().parse::<VcId>(), Ok(vc));
            let uni = VcId::parse(&vc.to_string(), HeaderFormat::Uni);
            if vpi <= 255 {
                proptest::prop_assert_eq!(uni, Ok(vc));
            } else {
                proptest::prop_assert_eq!(uni, Err(VcIdParseError::VpiRange { max: 255 }));
            }
        }
    }

    #[test]
    fn vcid_key_is_vpi_above_vci() {
        assert_eq!(VcId::uni(1, 100).unwrap().key(), 0x0001_0064);
        let nni = VcId::new(Vpi::nni(4095).unwrap(), Vci::from_u16(65535));
        assert_eq!(nni.key(), 0x0FFF_FFFF);
    }

    #[test]
    fn vcid_display() {
        assert_eq!(VcId::uni(1, 100).unwrap().to_string(), "1.100");
        assert!(VcId::uni(256, 1).is_err());
        assert_eq!(
            IdError::VpiRange {
                value: 256,
                max: 255
            }
            .to_string(),
            "VPI 256 out of range 0..=255"
        );
    }
}

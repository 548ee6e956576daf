//! Called (0x70) and calling (0x6C) party numbers and subaddresses (0x71, 0x6D); Q.2931
//! §4.5.11–4.5.14, UNI 3.1 §5.4.5.11–14, atm-facts §5.3 and §5.6.
//!
//! ```text
//! 5   ext | type of number (3) | numbering plan (4)     ext = 0 when 5a follows
//! 5a  1 | presentation (2) | spare (3) | screening (2)  (calling party only)
//! 6.. the address: a 20-byte AESA (plan 2) or IA5 digits (E.164, plan 1)
//! ```
//! natm accepts octet 5a in a called party number too (Q.2931 defines it only for the
//! calling party) and keeps it, so that what it parses it re-emits.

use alloc::vec::Vec;
use core::fmt;

use natm_core::addr::Aesa;

use super::{IeCodec, IeErrorKind, IeId, Reader, Writer, hex, open_enum};

open_enum! {
    /// Presentation indicator (octet 5a bits 7-6).
    pub enum Presentation: u8 {
        /// Presentation allowed (0).
        Allowed = 0,
        /// Presentation restricted (1).
        Restricted = 1,
        /// Number not available (2).
        NotAvailable = 2,
    }
}

open_enum! {
    /// Screening indicator (octet 5a bits 2-1).
    pub enum Screening: u8 {
        /// User-provided, not screened (0).
        UserNotScreened = 0,
        /// User-provided, verified and passed (1).
        UserPassed = 1,
        /// User-provided, verified and failed (2).
        UserFailed = 2,
        /// Network-provided (3).
        Network = 3,
    }
}

/// Type of number "unknown" (octet 5 bits 7-5), used with AESAs.
const TON_UNKNOWN: u8 = 0;
/// Type of number "international".
const TON_INTERNATIONAL: u8 = 1;
/// Numbering plan ISDN/telephony (E.164).
const PLAN_E164: u8 = 1;
/// Numbering plan ATM endsystem address.
const PLAN_AESA: u8 = 2;
/// Most digits of an E.164 number.
const E164_MAX: usize = 15;

/// A party's number.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Number {
    /// An ATM End System Address (type unknown, plan ATM endsystem address: 0x82).
    Aesa(Aesa),
    /// A native E.164 number (international, plan E.164: 0x91): 1 to 15 ASCII digits.
    E164(Vec<u8>),
    /// Any other type of number and plan, with the address bytes as received. Never the
    /// two combinations above (those parse as [`Number::Aesa`] or [`Number::E164`]).
    Other {
        /// Type of number (3 bits).
        ton: u8,
        /// Numbering plan (4 bits).
        plan: u8,
        /// The address bytes.
        digits: Vec<u8>,
    },
}

impl Number {
    fn ton_plan(&self) -> (u8, u8) {
        match self {
            Number::Aesa(_) => (TON_UNKNOWN, PLAN_AESA),
            Number::E164(_) => (TON_INTERNATIONAL, PLAN_E164),
            Number::Other { ton, plan, .. } => (*ton & 7, *plan & 0x0F),
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Number::Aesa(a) => &a.0,
            Number::E164(d) | Number::Other { digits: d, .. } => d,
        }
    }
}

impl fmt::Display for Number {
    /// AESAs in `atm2text` form, E.164 numbers as `+digits`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Number::Aesa(a) => a.fmt(f),
            Number::E164(d) => {
                f.write_str("+")?;
                for &c in d {
                    write!(f, "{}", char::from(c))?;
                }
                Ok(())
            }
            Number::Other { ton, plan, digits } => {
                write!(f, "ton{ton}/plan{plan}:")?;
                hex(f, digits)
            }
        }
    }
}

/// A called or calling party number.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PartyNumber {
    /// The number.
    pub number: Number,
    /// Octet 5a (calling party): presentation and screening indicators.
    pub screening: Option<(Presentation, Screening)>,
}

impl PartyNumber {
    /// An AESA without octet 5a.
    pub const fn aesa(a: Aesa) -> PartyNumber {
        PartyNumber {
            number: Number::Aesa(a),
            screening: None,
        }
    }

    fn parse(b: &[u8]) -> Result<PartyNumber, IeErrorKind> {
        let mut r = Reader::new(b);
        let o5 = r.u8()?;
        let screening = if o5 & 0x80 == 0 {
            let a = r.u8()?;
            if a & 0x80 == 0 {
                return Err(IeErrorKind::Invalid("octet 5a extension bit"));
            }
            Some((
                Presentation::from_code((a >> 5) & 3),
                Screening::from_code(a & 3),
            ))
        } else {
            None
        };
        let (ton, plan) = ((o5 >> 4) & 7, o5 & 0x0F);
        let digits = r.rest();
        let number = match (ton, plan) {
            (TON_UNKNOWN, PLAN_AESA) => {
                let a: [u8; 20] = digits
                    .try_into()
                    .map_err(|_| IeErrorKind::Invalid("AESA length"))?;
                Number::Aesa(Aesa(a))
            }
            (TON_INTERNATIONAL, PLAN_E164) => {
                if digits.is_empty()
                    || digits.len() > E164_MAX
                    || !digits.iter().all(u8::is_ascii_digit)
                {
                    return Err(IeErrorKind::Invalid("E.164 digits"));
                }
                Number::E164(digits.to_vec())
            }
            _ => Number::Other {
                ton,
                plan,
                digits: digits.to_vec(),
            },
        };
        Ok(PartyNumber { number, screening })
    }

    pub(crate) fn len(&self) -> usize {
        1 + usize::from(self.screening.is_some()) + self.number.bytes().len()
    }

    pub(crate) fn emit(&self, buf: &mut [u8]) {
        let mut w = Writer::new(buf);
        let (ton, plan) = self.number.ton_plan();
        let ext = if self.screening.is_some() { 0 } else { 0x80 };
        w.u8(ext | (ton << 4) | plan);
        if let Some((p, s)) = self.screening {
            w.u8(0x80 | ((p.code() & 3) << 5) | (s.code() & 3));
        }
        w.bytes(self.number.bytes());
    }
}

impl fmt::Display for PartyNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.number.fmt(f)?;
        if let Some((p, s)) = self.screening {
            write!(f, " ({p:?}, {s:?})")?;
        }
        Ok(())
    }
}

/// The called party number IE (0x70).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct CalledNumber(pub PartyNumber);

/// The calling party number IE (0x6C).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct CallingNumber(pub PartyNumber);

macro_rules! number_ie {
    ($t:ident, $id:ident) => {
        impl IeCodec for $t {
            const ID: IeId = IeId::$id;
            fn parse_contents(b: &[u8]) -> Result<$t, IeErrorKind> {
                PartyNumber::parse(b).map($t)
            }
            fn contents_len(&self) -> usize {
                self.0.len()
            }
            fn emit_contents(&self, buf: &mut [u8]) {
                self.0.emit(buf)
            }
        }
    };
}
number_ie!(CalledNumber, CalledNumber);
number_ie!(CallingNumber, CallingNumber);

open_enum! {
    /// Type of subaddress (octet 5 bits 7-5).
    pub enum SubaddressType: u8 {
        /// NSAP (0).
        Nsap = 0,
        /// ATM endsystem address (1).
        Aesa = 1,
        /// User-specified (2).
        User = 2,
    }
}

/// Most bytes of subaddress information.
const SUBADDR_MAX: usize = 20;

/// A called or calling party subaddress.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Subaddress {
    /// Type of subaddress.
    pub kind: SubaddressType,
    /// Odd/even indicator (bit 4).
    pub odd: bool,
    /// The subaddress, at most 20 bytes.
    pub info: Vec<u8>,
}

impl Subaddress {
    fn parse(b: &[u8]) -> Result<Subaddress, IeErrorKind> {
        let mut r = Reader::new(b);
        let o5 = r.u8()?;
        if o5 & 0x80 == 0 {
            return Err(IeErrorKind::Invalid("octet 5 extension bit"));
        }
        let info = r.rest();
        if info.len() > SUBADDR_MAX {
            return Err(IeErrorKind::BadLength);
        }
        Ok(Subaddress {
            kind: SubaddressType::from_code((o5 >> 4) & 7),
            odd: o5 & 0x08 != 0,
            info: info.to_vec(),
        })
    }

    pub(crate) fn len(&self) -> usize {
        1 + self.info.len()
    }

    pub(crate) fn emit(&self, buf: &mut [u8]) {
        let mut w = Writer::new(buf);
        w.u8(0x80 | ((self.kind.code() & 7) << 4) | if self.odd { 0x08 } else { 0 });
        w.bytes(&self.info);
    }
}

impl fmt::Display for Subaddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let (SubaddressType::Aesa | SubaddressType::Nsap, Ok(a)) =
            (self.kind, <[u8; 20]>::try_from(&self.info[..]))
        {
            return Aesa(a).fmt(f);
        }
        write!(f, "type{}:", self.kind.code())?;
        hex(f, &self.info)
    }
}

/// The called party subaddress IE (0x71).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct CalledSubaddress(pub Subaddress);

/// The calling party subaddress IE (0x6D).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct CallingSubaddress(pub Subaddress);

macro_rules! subaddr_ie {
    ($t:ident, $id:ident) => {
        impl IeCodec for $t {
            const ID: IeId = IeId::$id;
            fn parse_contents(b: &[u8]) -> Result<$t, IeErrorKind> {
                Subaddress::parse(b).map($t)
            }
            fn contents_len(&self) -> usize {
                1 + self.0.info.len()
            }
            fn emit_contents(&self, buf: &mut [u8]) {
                self.0.emit(buf)
            }
        }
    };
}
subaddr_ie!(CalledSubaddress, CalledSubaddress);
subaddr_ie!(CallingSubaddress, CallingSubaddress);

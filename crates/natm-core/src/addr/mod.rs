//! ATM addresses and their linux-atm text form: PVCs (`[itf.]vpi.vci`) and SVCs (AESA/NSAP
//! and E.164).
//!
//! [`AtmAddr`] is either a [`PvcAddr`] (an interface and a VC, where parts may be "any" or
//! "unspecified", see [`Sel`]) or an [`SvcAddr`] (a private [`Aesa`], a public [`E164`]
//! number, or both). `FromStr` reads what libatm's `text2atm` reads with the flags
//! `T2A_PVC | T2A_SVC | T2A_UNSPEC | T2A_WILDCARD`, and `Display` writes what `atm2text`
//! writes with `A2T_PRETTY`:
//!
//! ```
//! use natm_core::addr::{AtmAddr, Sel, SvcAddr};
//! use natm_core::Vci;
//!
//! let AtmAddr::Pvc(pvc) = "0.35".parse().unwrap() else { panic!() };
//! assert_eq!(pvc.vci, Sel::Is(Vci::from_u16(35)));
//! assert_eq!(pvc.to_string(), "0.0.35"); // the interface defaults to 0
//! assert_eq!("1.*.?".parse::<AtmAddr>().unwrap().to_string(), "1.*.?");
//!
//! let svc: SvcAddr = "47.0005.80ffe1000000f21a3502.0020481a3502.00".parse().unwrap();
//! assert_eq!(svc.to_string(), "47.0005.80FFE1000000F21A3502.0020481A3502.00");
//! let both: SvcAddr = "+4121.5551234+47.0005.80ffe1000000f21a3502.0020481a3502.00".parse().unwrap();
//! assert_eq!(both.pub_.unwrap().as_str(), "41215551234");
//! ```
//!
//! This module is a data type and its text form. It does **no name lookup**: libatm's
//! `T2A_NAME`/`A2T_NAME` consult `/etc/hosts.atm` and ANS (DNS); natm never does I/O here,
//! so a name is simply not an address. It knows nothing about routing or ILMI.
//!
//! # The text form (libatm 2.5.1, checked against the library itself)
//!
//! `text2atm` tries, in order, a PVC, an NSAP/AESA, then an E.164 number; the first that
//! fits wins, and some errors stop the search at once (libatm's `FATAL`):
//!
//! * **PVC**: `vpi.vci` or `itf.vpi.vci`, decimal without leading zeros; the interface
//!   defaults to 0; `itf` ≤ 32767, `vpi` ≤ 255 (≤ 4095 with [`AddrSyntax::nni`]),
//!   `vci` ≤ 65535. `*` ([`Sel::Any`], libatm `ATM_*_ANY`) needs `T2A_WILDCARD`, `?`
//!   ([`Sel::Unspecified`], `ATM_*_UNSPEC`) needs `T2A_UNSPEC` and is not allowed for the
//!   interface. natm's default [`AddrSyntax`] allows both, as the ATM tools do; a number
//!   out of range is not a PVC and is tried as an SVC address (`0.256.1` is the E.164
//!   number `02561`).
//! * **AESA**: 40 hex digits, with single dots anywhere between digits; the first byte (the
//!   AFI) must not be `00`. Or `digits:hex`: up to 15 decimal digits (not starting with 0)
//!   form an E.164 AESA (AFI `45`, digits right-aligned, `F` pad) followed by 22 hex
//!   digits. With `T2A_WILDCARD` an AESA may be cut short and end in `/bits`, a prefix
//!   length ([`SvcAddr::prefix_len`]).
//! * **E.164**: up to 12 decimal digits, optionally after `+`, with single dots between
//!   digits; then optionally `+` and an AESA (the private part).
//!
//! # Recorded decisions
//!
//! natm accepts exactly the strings `text2atm` accepts with the flags above, with the same
//! field values, except as listed here.
//!
//! * A PVC part of 2147483648 or 2147483649 overflows libatm's `int` (C undefined behaviour;
//!   the Debian build wraps). For the interface and VPI the wrapped value lands in a `short`
//!   as 0 or 1, and natm reproduces that (`2147483649.0.1` is `1.0.1`). As a VCI it stays
//!   negative, which no [`Vci`](crate::id::Vci) can hold: natm rejects such text ([`AddrErrorKind::VciOverflow`]).
//! * With `T2A_NNI` libatm accepts VPI 4096 (its `ATM_MAX_VPI_NNI` is a count, not a
//!   maximum); natm rejects it, as the NNI VPI has 12 bits.
//! * `/bits` after a normal AESA must be at most 7 or at least 72; after an E.164 AESA at
//!   least 72; after an AESA typed in hex with AFI `45` anything up to the digits given.
//!   libatm's odd rule is kept. The digits given are stored, and the rest of the AESA is
//!   zero (libatm leaves there whatever an earlier attempt wrote).
//! * `atm2text` cannot show a prefix length; natm's `Display` appends `/bits`.
//! * `atm2text` prints an E.164 AESA (AFI `45` or `C3`) as `digits:…` even when that does
//!   not read back to the same bytes (non-decimal digits, no `F` pad, the group AFI `C3`),
//!   or fails. natm prints those as 40 plain hex digits instead, which always read back.
//! * A NUL byte ends a C string; natm rejects text that contains one.
//!
//! libatm only says "-1". natm's [`AddrParseError`] gives a byte offset and a reason; when
//! no form fits, it reports the form whose parse got furthest (E.164 for a leading `+`).

mod aesa;
mod e164;
mod error;
mod prefix;
mod pvc;
mod svc;
mod text;

use core::fmt;
use core::str::FromStr;

pub use aesa::Aesa;
pub use e164::E164;
pub use error::{AddrErrorKind, AddrParseError, AddrValueError};
pub use prefix::{AesaPrefix, Esi, PrefixParseError};
pub use pvc::{PvcAddr, Sel};
pub use svc::SvcAddr;
pub use text::AddrSyntax;

use text::parse;

/// A PVC or SVC address (linux-atm `struct sockaddr_atmpvc` / `sockaddr_atmsvc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtmAddr {
    /// A permanent virtual circuit.
    Pvc(PvcAddr),
    /// A switched virtual circuit's called or calling party.
    Svc(SvcAddr),
}

impl AtmAddr {
    /// Parses any address form `syntax` allows (`text2atm` with `T2A_PVC | T2A_SVC`).
    pub fn parse_with(text: &str, syntax: AddrSyntax) -> Result<AtmAddr, AddrParseError> {
        parse(text, syntax)
    }

    /// `"pvc"` or `"svc"`.
    pub const fn kind(&self) -> &'static str {
        match self {
            AtmAddr::Pvc(_) => "pvc",
            AtmAddr::Svc(_) => "svc",
        }
    }

    /// Checks that `Display` writes text that `syntax` parses back to this value.
    pub fn validate(&self, syntax: AddrSyntax) -> Result<(), AddrValueError> {
        match self {
            AtmAddr::Pvc(a) => a.validate(syntax),
            AtmAddr::Svc(a) => a.validate(syntax),
        }
    }
}

impl fmt::Display for AtmAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AtmAddr::Pvc(a) => a.fmt(f),
            AtmAddr::Svc(a) => a.fmt(f),
        }
    }
}

impl FromStr for AtmAddr {
    type Err = AddrParseError;
    /// Any address form, with [`AddrSyntax::DEFAULT`].
    fn from_str(text: &str) -> Result<AtmAddr, AddrParseError> {
        AtmAddr::parse_with(text, AddrSyntax::DEFAULT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::{Itf, Vci, Vpi};
    use alloc::string::ToString;

    fn a(s: &str) -> AtmAddr {
        s.parse().unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    fn pvc(itf: Sel<u32>, vpi: Sel<u32>, vci: Sel<u32>) -> AtmAddr {
        AtmAddr::Pvc(PvcAddr {
            itf: itf.map(|v| Itf::new(v).unwrap()),
            vpi: vpi.map(|v| Vpi::nni(v).unwrap()),
            vci: vci.map(|v| Vci::new(v).unwrap()),
        })
    }

    #[test]
    fn pvc_forms() {
        use Sel::*;
        assert_eq!(a("0.5"), pvc(Is(0), Is(0), Is(5)));
        assert_eq!(a("1.2.3"), pvc(Is(1), Is(2), Is(3)));
        assert_eq!(a("*.1.5"), pvc(Any, Is(1), Is(5)));
        assert_eq!(a("?.?"), pvc(Is(0), Unspecified, Unspecified));
        assert_eq!(a("0.5").to_string(), "0.0.5");
        assert!("?.1.5".parse::<AtmAddr>().is_err());
        assert!("1.".parse::<AtmAddr>().is_err());
        // Out of range: not a PVC, so an E.164 number.
        assert_eq!(a("256.1").to_string(), "+2561");
        assert_eq!(a("00.5").to_string(), "+005");
    }

    #[test]
    fn pvc_overflow_like_libatm() {
        use Sel::*;
        assert_eq!(a("2147483649.0.1"), pvc(Is(1), Is(0), Is(1)));
        assert_eq!(a("0.2147483648.1"), pvc(Is(0), Is(0), Is(1)));
        let e = "0.0.2147483648".parse::<AtmAddr>().unwrap_err();
        assert_eq!(e.kind, AddrErrorKind::VciOverflow);
    }

    #[test]
    fn syntax_flags() {
        assert!(AtmAddr::parse_with("*.5", AddrSyntax::EXACT).is_err());
        assert!(AtmAddr::parse_with("?.5", AddrSyntax::EXACT).is_err());
        let nni = AddrSyntax {
            nni: true,
            ..AddrSyntax::DEFAULT
        };
        assert!(matches!(
            AtmAddr::parse_with("0.4095.5", nni),
            Ok(AtmAddr::Pvc(_))
        ));
        assert!(AtmAddr::parse_with("0.4096.5", nni).is_err());
        assert!(PvcAddr::parse_with("12345", AddrSyntax::DEFAULT).is_err());
    }

    #[test]
    fn aesa_forms() {
        let s = a("47.0005.80ffe1000000f21a3502.0020481a3502.00");
        assert_eq!(
            s.to_string(),
            "47.0005.80FFE1000000F21A3502.0020481A3502.00"
        );
        assert_eq!(
            a("49840f80ffe1000000f21a35020020481a350200").to_string(),
            "49.840F80FFE1000000F21A3502.0020481A3502.00"
        );
        let e = a("1234567:00000000.0020481a3502.00");
        let AtmAddr::Svc(SvcAddr { prv: Some(p), .. }) = e else {
            panic!()
        };
        assert_eq!(p.to_hex(), "45000000001234567f000000000020481a350200");
        assert_eq!(e.to_string(), "1234567:00000000.0020481A3502.00");
        // atm2text would print "123:567F…", which does not read back.
        let odd = a("450000000000001234567F000000000000000000");
        assert_eq!(odd.to_string(), "450000000000001234567F000000000000000000");
        assert!(
            "00.0005.80ffe1000000f21a3502.0020481a3502.00"
                .parse::<AtmAddr>()
                .is_err()
        );
    }

    #[test]
    fn e164_and_prefix() {
        let v = a("+12.34");
        assert_eq!(v.to_string(), "+1234");
        assert!("1234567890123".parse::<AtmAddr>().is_err());
        let both = a("1234+47.0005.80ffe1000000f21a3502.0020481a3502.00");
        assert_eq!(
            both.to_string(),
            "1234+47.0005.80FFE1000000F21A3502.0020481A3502.00"
        );
        let p = a("47.0005/7");
        assert_eq!(
            p.to_string(),
            "47.0005.00000000000000000000.000000000000.00/7"
        );
        assert_eq!(a(&p.to_string()), p);
        assert!("47.0005/8".parse::<AtmAddr>().is_err());
        assert_eq!(a("0/0").to_string(), "0/0");
        assert_eq!(
            a("47/").to_string(),
            "47.0000.00000000000000000000.000000000000.00/0"
        );
        assert!(AtmAddr::parse_with("47/4", AddrSyntax::EXACT).is_err());
    }

    #[test]
    fn errors_say_where() {
        let e = "47.0005.80ffe1000000f21a3502.0020481a3502"
            .parse::<AtmAddr>()
            .unwrap_err();
        assert_eq!(e.to_string(), "at 41: an AESA has 40 hex digits, found 38");
        assert_eq!(
            "".parse::<AtmAddr>().unwrap_err().kind,
            AddrErrorKind::Empty
        );
    }
}

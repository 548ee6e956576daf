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
//!   negative, which no [`Vci`] can hold: natm rejects such text ([`AddrErrorKind::VciOverflow`]).
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

use alloc::string::String;
use core::fmt;
use core::str::FromStr;

use crate::id::{HeaderFormat, Itf, VcId, Vci, Vpi};

/// One part of a PVC address: a value, any value (`*`), or unspecified (`?`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sel<T> {
    /// This value.
    Is(T),
    /// Any value, for a wildcard match or "let the system choose" (`*`, linux-atm
    /// `ATM_ITF_ANY`/`ATM_VPI_ANY`/`ATM_VCI_ANY`).
    Any,
    /// Not specified yet (`?`, linux-atm `ATM_VPI_UNSPEC`/`ATM_VCI_UNSPEC`).
    Unspecified,
}

impl<T> Sel<T> {
    /// Applies `f` to the value, keeping `Any` and `Unspecified`.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Sel<U> {
        match self {
            Sel::Is(v) => Sel::Is(f(v)),
            Sel::Any => Sel::Any,
            Sel::Unspecified => Sel::Unspecified,
        }
    }
}

impl<T: fmt::Display> fmt::Display for Sel<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sel::Is(v) => v.fmt(f),
            Sel::Any => f.write_str("*"),
            Sel::Unspecified => f.write_str("?"),
        }
    }
}

/// Which parts of the text form are allowed (libatm's `T2A_*` flags, minus name lookup).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AddrSyntax {
    /// `?` in a PVC address (`T2A_UNSPEC`).
    pub unspec: bool,
    /// `*` in a PVC address and `/bits` after an AESA (`T2A_WILDCARD`).
    pub wildcard: bool,
    /// VPIs up to 4095 (`T2A_NNI`); otherwise up to 255.
    pub nni: bool,
}

impl AddrSyntax {
    /// natm's default: `T2A_UNSPEC | T2A_WILDCARD`, UNI VPIs.
    pub const DEFAULT: AddrSyntax = AddrSyntax {
        unspec: true,
        wildcard: true,
        nni: false,
    };
    /// Concrete addresses only: no `?`, `*` or `/bits`.
    pub const EXACT: AddrSyntax = AddrSyntax {
        unspec: false,
        wildcard: false,
        nni: false,
    };
}

impl Default for AddrSyntax {
    fn default() -> AddrSyntax {
        AddrSyntax::DEFAULT
    }
}

/// A PVC address: interface, VPI and VCI (linux-atm `struct sockaddr_atmpvc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PvcAddr {
    /// Interface. The text form cannot express `Unspecified` here.
    pub itf: Sel<Itf>,
    /// Virtual path.
    pub vpi: Sel<Vpi>,
    /// Virtual channel.
    pub vci: Sel<Vci>,
}

impl PvcAddr {
    /// Parses the PVC text form only.
    pub fn parse_with(text: &str, syntax: AddrSyntax) -> Result<PvcAddr, AddrParseError> {
        check_text(text)?;
        try_pvc(text.as_bytes(), text, syntax).map_err(Fail::into_inner)
    }

    /// The VC, when both the VPI and the VCI are given (not `*` or `?`).
    pub fn vc(&self) -> Option<VcId> {
        match (self.vpi, self.vci) {
            (Sel::Is(vpi), Sel::Is(vci)) => Some(VcId::new(vpi, vci)),
            _ => None,
        }
    }

    /// Checks that `Display` writes text that `syntax` parses back to this value.
    pub fn validate(&self, syntax: AddrSyntax) -> Result<(), AddrValueError> {
        if self.itf == Sel::Unspecified {
            return Err(AddrValueError::ItfUnspecified);
        }
        let any = [
            self.itf == Sel::Any,
            self.vpi == Sel::Any,
            self.vci == Sel::Any,
        ];
        if any.contains(&true) && !syntax.wildcard {
            return Err(AddrValueError::NeedsWildcard);
        }
        if (self.vpi == Sel::Unspecified || self.vci == Sel::Unspecified) && !syntax.unspec {
            return Err(AddrValueError::NeedsUnspec);
        }
        if let Sel::Is(vpi) = self.vpi
            && !syntax.nni
            && !vpi.fits(HeaderFormat::Uni)
        {
            return Err(AddrValueError::NeedsNni);
        }
        Ok(())
    }
}

impl fmt::Display for PvcAddr {
    /// `itf.vpi.vci`, always with the interface, as `atm2text` writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.itf, self.vpi, self.vci)
    }
}

impl FromStr for PvcAddr {
    type Err = AddrParseError;
    /// The PVC form with [`AddrSyntax::DEFAULT`].
    fn from_str(text: &str) -> Result<PvcAddr, AddrParseError> {
        PvcAddr::parse_with(text, AddrSyntax::DEFAULT)
    }
}

/// An ATM End System Address (NSAP format, ATM Forum UNI 3.1 §5.1.3): always 20 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Aesa(pub [u8; 20]);

impl Aesa {
    /// Length in bytes (linux-atm `ATM_ESA_LEN`).
    pub const LEN: usize = 20;
    /// AFI of the DCC format.
    pub const AFI_DCC: u8 = 0x39;
    /// AFI of the ICD format.
    pub const AFI_ICD: u8 = 0x47;
    /// AFI of the E.164 format.
    pub const AFI_E164: u8 = 0x45;
    /// AFI of local addresses.
    pub const AFI_LOCAL: u8 = 0x49;

    /// 40 lower-case hex digits, no dots.
    pub fn to_hex(&self) -> String {
        use core::fmt::Write as _;
        let mut s = String::with_capacity(40);
        for b in self.0 {
            let _ = write!(s, "{b:02x}");
        }
        s
    }

    /// The authority and format identifier, the first byte.
    pub const fn afi(&self) -> u8 {
        self.0[0]
    }

    fn nibble(&self, i: usize) -> u8 {
        let b = self.0.get(i / 2).copied().unwrap_or(0);
        if i.is_multiple_of(2) {
            b >> 4
        } else {
            b & 0x0f
        }
    }

    /// The E.164 digits of an E.164 AESA, if `digits:…` reads back to exactly these bytes.
    fn e164_digits(&self) -> Option<(usize, usize)> {
        if self.afi() != Aesa::AFI_E164 || self.nibble(17) != 0x0f {
            return None;
        }
        if (2..17).any(|i| self.nibble(i) > 9) {
            return None;
        }
        let first = (2..17).find(|&i| self.nibble(i) != 0)?;
        Some((first, 17))
    }

    /// Writes the pretty form; `e164_ok` allows the `digits:…` form.
    fn write_pretty(&self, f: &mut fmt::Formatter<'_>, e164_ok: bool) -> fmt::Result {
        const BIN: &[usize] = &[1, 2, 10, 6, 1];
        const LOCAL: &[usize] = &[1, 12, 6, 1];
        const E164: &[usize] = &[4, 6, 1];
        const PURE: &[usize] = &[20];
        let (mut i, groups) = match self.afi() {
            0x39 | 0x47 | 0xbd | 0xc5 => (0, BIN),
            0x49 | 0xc7 => (0, LOCAL),
            Aesa::AFI_E164 => match self.e164_digits().filter(|_| e164_ok) {
                Some((from, to)) => {
                    for n in from..to {
                        write!(f, "{}", self.nibble(n))?;
                    }
                    f.write_str(":")?;
                    (9, E164)
                }
                None => (0, PURE),
            },
            _ => (0, PURE),
        };
        for (g, len) in groups.iter().enumerate() {
            if g > 0 {
                f.write_str(".")?;
            }
            for b in self.0.iter().skip(i).take(*len) {
                write!(f, "{b:02X}")?;
            }
            i += len;
        }
        Ok(())
    }
}

impl fmt::Display for Aesa {
    /// `atm2text`'s pretty form: `47.0005.80FFE1000000F21A3502.0020481A3502.00` for DCC and
    /// ICD, `49.…` in 1/12/6/1-byte groups for local addresses, `digits:HO-DSP.ESI.SEL` for
    /// E.164 AESAs, and 40 plain hex digits otherwise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_pretty(f, true)
    }
}

impl FromStr for Aesa {
    type Err = AddrParseError;
    /// 40 hex digits with optional dots, or the `digits:hex` E.164 AESA form.
    fn from_str(text: &str) -> Result<Aesa, AddrParseError> {
        check_text(text)?;
        match nsap(text.as_bytes(), text, 0, false) {
            Ok((aesa, _)) => Ok(aesa),
            Err(Fail::Fatal(e) | Fail::Other(e)) => Err(e),
        }
    }
}

/// A public E.164 number: 1 to 12 decimal digits (linux-atm `ATM_E164_LEN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct E164 {
    digits: [u8; E164::MAX_DIGITS],
    len: u8,
}

impl E164 {
    /// The most digits libatm stores.
    pub const MAX_DIGITS: usize = 12;

    /// A number from its decimal digits (no `+`, no dots).
    pub fn new(digits: &str) -> Option<E164> {
        let b = digits.as_bytes();
        if b.is_empty() || b.len() > E164::MAX_DIGITS || !b.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let mut out = [0u8; E164::MAX_DIGITS];
        out.get_mut(..b.len())?.copy_from_slice(b);
        Some(E164 {
            digits: out,
            len: b.len() as u8,
        })
    }

    /// The digits.
    pub fn as_str(&self) -> &str {
        let d = self.digits.get(..usize::from(self.len)).unwrap_or(&[]);
        // Only ASCII digits are ever stored.
        core::str::from_utf8(d).unwrap_or("")
    }
}

impl fmt::Display for E164 {
    /// The digits alone; [`SvcAddr`] adds the `+`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for E164 {
    type Err = AddrParseError;
    /// Digits with single dots between them, optionally after `+`.
    fn from_str(text: &str) -> Result<E164, AddrParseError> {
        check_text(text)?;
        let (e, end) = e164_digits(text.as_bytes(), text).map_err(Fail::into_inner)?;
        match text.as_bytes().get(end) {
            None => Ok(e),
            Some(_) => Err(AddrParseError {
                at: end,
                kind: bad_char(text, end),
            }),
        }
    }
}

/// An SVC address (linux-atm `struct sockaddr_atmsvc`): a private AESA, a public E.164
/// number, or both (then the E.164 number reaches the network and the AESA is its
/// subaddress).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SvcAddr {
    /// The private address.
    pub prv: Option<Aesa>,
    /// The public E.164 number (`pub` in C; `pub` is a Rust keyword).
    pub pub_: Option<E164>,
    /// With the wildcard syntax, `prv` is a pattern: only its first `prefix_len` bits count
    /// (text `…/bits`). The bytes after the hex digits given are zero.
    pub prefix_len: Option<u8>,
}

impl SvcAddr {
    /// An address with only a private AESA.
    pub const fn private(aesa: Aesa) -> SvcAddr {
        SvcAddr {
            prv: Some(aesa),
            pub_: None,
            prefix_len: None,
        }
    }

    /// An address with only an E.164 number.
    pub const fn public(e164: E164) -> SvcAddr {
        SvcAddr {
            prv: None,
            pub_: Some(e164),
            prefix_len: None,
        }
    }

    /// Parses the SVC text forms only.
    pub fn parse_with(text: &str, syntax: AddrSyntax) -> Result<SvcAddr, AddrParseError> {
        check_text(text)?;
        let mut tried = [None; 3];
        parse_svc(text, syntax, &mut tried)?.ok_or_else(|| pick_error(text, tried))
    }

    /// Checks that `Display` writes text that `syntax` parses back to this value.
    pub fn validate(&self, syntax: AddrSyntax) -> Result<(), AddrValueError> {
        if self.prv.is_none() && self.pub_.is_none() {
            return Err(AddrValueError::Empty);
        }
        let Some(prv) = self.prv else {
            return match self.prefix_len {
                Some(_) => Err(AddrValueError::BadPrefix),
                None => Ok(()),
            };
        };
        let Some(len) = self.prefix_len else {
            return match prv.afi() {
                0 => Err(AddrValueError::ZeroAfi),
                _ => Ok(()),
            };
        };
        if !syntax.wildcard {
            return Err(AddrValueError::NeedsWildcard);
        }
        let ok = if prv.0 == [0; 20] {
            len <= 4
        } else {
            prv.afi() != 0 && len <= 160 && (prv.afi() == Aesa::AFI_E164 || len <= 7 || len >= 72)
        };
        if ok {
            Ok(())
        } else {
            Err(AddrValueError::BadPrefix)
        }
    }
}

impl fmt::Display for SvcAddr {
    /// `atm2text`'s pretty form: `+E164`, `AESA` or `E164+AESA`, plus `/bits` for a prefix.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(e) = &self.pub_ {
            if self.prv.is_none() {
                f.write_str("+")?;
            }
            e.fmt(f)?;
            if self.prv.is_some() {
                f.write_str("+")?;
            }
        }
        if let Some(prv) = &self.prv {
            match self.prefix_len {
                None => prv.fmt(f)?,
                Some(len) => {
                    // Only one digit may stand for a zero AFI.
                    if prv.0 == [0; 20] {
                        f.write_str("0")?;
                    } else {
                        prv.write_pretty(f, len >= 72)?;
                    }
                    write!(f, "/{len}")?;
                }
            }
        }
        Ok(())
    }
}

impl FromStr for SvcAddr {
    type Err = AddrParseError;
    /// The SVC forms with [`AddrSyntax::DEFAULT`].
    fn from_str(text: &str) -> Result<SvcAddr, AddrParseError> {
        SvcAddr::parse_with(text, AddrSyntax::DEFAULT)
    }
}

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

/// Why an address value cannot be written as text that reads back to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrValueError {
    /// A PVC interface cannot be `?`.
    ItfUnspecified,
    /// `*` or a prefix needs [`AddrSyntax::wildcard`].
    NeedsWildcard,
    /// `?` needs [`AddrSyntax::unspec`].
    NeedsUnspec,
    /// A VPI above 255 needs [`AddrSyntax::nni`].
    NeedsNni,
    /// An SVC address with neither part.
    Empty,
    /// A private address whose first byte is 0 (libatm reads that as "no address").
    ZeroAfi,
    /// A prefix length the text form cannot carry with this AESA.
    BadPrefix,
}

impl fmt::Display for AddrValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddrValueError::ItfUnspecified => "the interface cannot be unspecified",
            AddrValueError::NeedsWildcard => "needs the wildcard syntax",
            AddrValueError::NeedsUnspec => "needs the unspecified syntax",
            AddrValueError::NeedsNni => "VPI above 255 needs the NNI syntax",
            AddrValueError::Empty => "SVC address without AESA or E.164 number",
            AddrValueError::ZeroAfi => "AESA with AFI 00",
            AddrValueError::BadPrefix => "prefix length not expressible for this AESA",
        })
    }
}

impl core::error::Error for AddrValueError {}

/// An address text that could not be parsed: where and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddrParseError {
    /// Byte offset into the text.
    pub at: usize,
    /// What was wrong there.
    pub kind: AddrErrorKind,
}

/// What was wrong with an address text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrErrorKind {
    /// The text is empty.
    Empty,
    /// The text contains a NUL byte.
    Nul,
    /// A character that no address form allows here.
    BadChar(char),
    /// A PVC address that ends with a dot.
    PvcTrailingDot,
    /// More than three PVC parts.
    PvcTooManyParts,
    /// A PVC number with a leading zero.
    PvcLeadingZero,
    /// A PVC number above 2147483649.
    PvcNumberTooBig,
    /// A `*` or `?` not followed by a dot.
    PvcDotRequired,
    /// A single number: a PVC needs at least `vpi.vci`.
    PvcNoDot,
    /// `*` without the wildcard syntax.
    WildcardNotAllowed,
    /// `?` without the unspecified syntax.
    UnspecNotAllowed,
    /// `?` as the interface.
    ItfUnspecified,
    /// Interface above 32767.
    ItfRange,
    /// VPI above the limit.
    VpiRange {
        /// The largest VPI allowed.
        max: u16,
    },
    /// VCI above 65535.
    VciRange,
    /// VCI 2147483648 or 2147483649, which libatm stores as a negative number.
    VciOverflow,
    /// An AESA starts with a dot.
    LeadingDot,
    /// Two dots in a row.
    TwoDots,
    /// A dot at the end, or no digits.
    NoDigits,
    /// An AESA with the wrong number of hex digits.
    AesaLength {
        /// How many were given.
        digits: u8,
    },
    /// More than 40 hex digits.
    AesaTooLong,
    /// An AESA whose first byte is 00.
    AesaZeroAfi,
    /// The E.164 number of an E.164 AESA starts with 0.
    E164AesaLeadingZero,
    /// The prefix length is not a decimal number.
    PrefixNotNumber,
    /// The prefix length is longer than the digits given.
    PrefixTooLong,
    /// The prefix length is in the range libatm refuses (8..=71, or below 72 for an E.164
    /// AESA).
    PrefixRange,
    /// More than 12 E.164 digits.
    E164TooLong,
}

impl fmt::Display for AddrErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use AddrErrorKind as K;
        match self {
            K::Empty => f.write_str("empty address"),
            K::Nul => f.write_str("NUL byte in address"),
            K::BadChar(c) => write!(f, "unexpected {c:?}"),
            K::PvcTrailingDot => f.write_str("PVC address ends with a dot"),
            K::PvcTooManyParts => f.write_str("more than three PVC parts (itf.vpi.vci)"),
            K::PvcLeadingZero => f.write_str("leading zero in a PVC number"),
            K::PvcNumberTooBig => f.write_str("PVC number too big"),
            K::PvcDotRequired => f.write_str("expected \".\" after \"*\" or \"?\""),
            K::PvcNoDot => f.write_str("not an address (a PVC needs vpi.vci)"),
            K::WildcardNotAllowed => f.write_str("\"*\" is not allowed here"),
            K::UnspecNotAllowed => f.write_str("\"?\" is not allowed here"),
            K::ItfUnspecified => f.write_str("the interface cannot be \"?\""),
            K::ItfRange => f.write_str("interface out of range 0..=32767"),
            K::VpiRange { max } => write!(f, "VPI out of range 0..={max}"),
            K::VciRange => f.write_str("VCI out of range 0..=65535"),
            K::VciOverflow => f.write_str("VCI overflows a C int (libatm would store it negative)"),
            K::LeadingDot => f.write_str("address starts with a dot"),
            K::TwoDots => f.write_str("two dots in a row"),
            K::NoDigits => f.write_str("expected a digit"),
            K::AesaLength { digits } => {
                write!(f, "an AESA has 40 hex digits, found {digits}")
            }
            K::AesaTooLong => f.write_str("more than 40 hex digits"),
            K::AesaZeroAfi => f.write_str("an AESA cannot start with 00"),
            K::E164AesaLeadingZero => {
                f.write_str("the E.164 number before \":\" cannot start with 0")
            }
            K::PrefixNotNumber => f.write_str("prefix length is not a number"),
            K::PrefixTooLong => f.write_str("prefix length longer than the digits given"),
            K::PrefixRange => f.write_str(
                "prefix length must be at most 7 or at least 72 (at least 72 for digits:…)",
            ),
            K::E164TooLong => f.write_str("more than 12 E.164 digits"),
        }
    }
}

impl fmt::Display for AddrParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}: {}", self.at, self.kind)
    }
}

impl core::error::Error for AddrParseError {}

/// libatm's two kinds of failure: `FATAL` ends the search, `TRY_OTHER` tries the next form.
enum Fail {
    Fatal(AddrParseError),
    Other(AddrParseError),
}

impl Fail {
    fn into_inner(self) -> AddrParseError {
        match self {
            Fail::Fatal(e) | Fail::Other(e) => e,
        }
    }
}

fn fatal(at: usize, kind: AddrErrorKind) -> Fail {
    Fail::Fatal(AddrParseError { at, kind })
}

fn other(at: usize, kind: AddrErrorKind) -> Fail {
    Fail::Other(AddrParseError { at, kind })
}

/// The byte at `i`, or 0 past the end (C's terminating NUL).
fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

/// The error for the character at `i` (which is always on a character boundary: every
/// byte before it was ASCII).
fn bad_char(text: &str, i: usize) -> AddrErrorKind {
    match text.get(i..).and_then(|r| r.chars().next()) {
        Some(c) => AddrErrorKind::BadChar(c),
        None => AddrErrorKind::NoDigits,
    }
}

fn check_text(text: &str) -> Result<(), AddrParseError> {
    if text.is_empty() {
        return Err(AddrParseError {
            at: 0,
            kind: AddrErrorKind::Empty,
        });
    }
    if let Some(i) = text.bytes().position(|b| b == 0) {
        return Err(AddrParseError {
            at: i,
            kind: AddrErrorKind::Nul,
        });
    }
    Ok(())
}

/// `text2atm` without name lookup.
fn parse(text: &str, syntax: AddrSyntax) -> Result<AtmAddr, AddrParseError> {
    check_text(text)?;
    let mut tried = [None; 3];
    match try_pvc(text.as_bytes(), text, syntax) {
        Ok(a) => return Ok(AtmAddr::Pvc(a)),
        Err(Fail::Fatal(e)) => return Err(e),
        Err(Fail::Other(e)) => tried[0] = Some(e),
    }
    match parse_svc(text, syntax, &mut tried)? {
        Some(a) => Ok(AtmAddr::Svc(a)),
        None => Err(pick_error(text, tried)),
    }
}

/// The SVC half of `text2atm`: `Ok(None)` when neither form fits (errors in `tried`).
fn parse_svc(
    text: &str,
    syntax: AddrSyntax,
    tried: &mut [Option<AddrParseError>; 3],
) -> Result<Option<SvcAddr>, AddrParseError> {
    let b = text.as_bytes();
    match nsap(b, text, 0, syntax.wildcard) {
        Ok((aesa, prefix_len)) => {
            return Ok(Some(SvcAddr {
                prv: Some(aesa),
                pub_: None,
                prefix_len,
            }));
        }
        Err(Fail::Fatal(e)) => return Err(e),
        Err(Fail::Other(e)) => tried[1] = Some(e),
    }
    match try_e164(b, text, syntax.wildcard) {
        Ok(a) => Ok(Some(a)),
        Err(Fail::Fatal(e)) => Err(e),
        Err(Fail::Other(e)) => {
            tried[2] = Some(e);
            Ok(None)
        }
    }
}

/// Of the forms tried (PVC, AESA, E.164), the error of the one that got furthest; a
/// leading `+` can only be E.164.
fn pick_error(text: &str, tried: [Option<AddrParseError>; 3]) -> AddrParseError {
    if let (true, Some(e)) = (text.starts_with('+'), tried[2]) {
        return e;
    }
    let mut best: Option<AddrParseError> = None;
    for e in tried.into_iter().flatten() {
        if best.is_none_or(|b| e.at > b.at) {
            best = Some(e);
        }
    }
    best.unwrap_or(AddrParseError {
        at: 0,
        kind: AddrErrorKind::Empty,
    })
}

/// libatm's `try_pvc`.
fn try_pvc(b: &[u8], text: &str, syntax: AddrSyntax) -> Result<PvcAddr, Fail> {
    use AddrErrorKind as K;
    let mut part = [0i32; 3];
    let mut start = [0usize; 3];
    let mut i = 0;
    let mut p = 0;
    loop {
        if p >= b.len() {
            return Err(fatal(p, K::PvcTrailingDot));
        }
        let Some(slot) = part.get_mut(i) else {
            return Err(other(p, K::PvcTooManyParts));
        };
        if let Some(s) = start.get_mut(i) {
            *s = p;
        }
        let c = at(b, p);
        if c.is_ascii_digit() {
            if c == b'0' && at(b, p + 1).is_ascii_digit() {
                return Err(other(p, K::PvcLeadingZero));
            }
            while let d @ b'0'..=b'9' = at(b, p) {
                if *slot > i32::MAX / 10 {
                    return Err(other(p, K::PvcNumberTooBig));
                }
                // C signed overflow; the Debian build wraps, and natm does the same.
                *slot = slot.wrapping_mul(10).wrapping_add(i32::from(d - b'0'));
                p += 1;
            }
            i += 1;
            if p >= b.len() {
                break;
            }
            if at(b, p) != b'.' {
                return Err(other(p, bad_char(text, p)));
            }
            p += 1;
            continue;
        }
        if c == b'*' {
            if !syntax.wildcard {
                return Err(fatal(p, K::WildcardNotAllowed));
            }
            *slot = -1;
        } else {
            if c != b'?' {
                return Err(other(p, bad_char(text, p)));
            }
            if !syntax.unspec {
                return Err(fatal(p, K::UnspecNotAllowed));
            }
            *slot = -2;
        }
        i += 1;
        p += 1;
        if p >= b.len() {
            break;
        }
        if at(b, p) != b'.' {
            return Err(fatal(p, K::PvcDotRequired));
        }
        p += 1;
    }
    if i < 2 {
        return Err(other(0, K::PvcNoDot));
    }
    if i == 2 {
        part = [0, part[0], part[1]];
        start = [0, start[0], start[1]];
    }
    let [itf, vpi, vci] = part;
    if itf > i32::from(i16::MAX) {
        return Err(other(start[0], K::ItfRange));
    }
    if vci > 65535 {
        return Err(other(start[2], K::VciRange));
    }
    // libatm's NNI limit is ATM_MAX_VPI_NNI = 4096, one too many; natm refuses 4096 below.
    let vpi_max = if syntax.nni {
        4096
    } else {
        i32::from(Vpi::MAX_UNI)
    };
    if vpi > vpi_max {
        return Err(other(
            start[1],
            K::VpiRange {
                max: if syntax.nni {
                    Vpi::MAX_NNI
                } else {
                    Vpi::MAX_UNI
                },
            },
        ));
    }
    if itf == -2 {
        return Err(fatal(start[0], K::ItfUnspecified));
    }
    // libatm stores itf and vpi in C shorts.
    let itf = match itf as i16 {
        -1 => Sel::Any,
        n => Sel::Is(Itf::new(n as u32).map_err(|_| fatal(start[0], K::ItfRange))?),
    };
    let vpi = match vpi as i16 {
        -1 => Sel::Any,
        -2 => Sel::Unspecified,
        n => Sel::Is(
            Vpi::nni(n as u32).map_err(|_| fatal(start[1], K::VpiRange { max: Vpi::MAX_NNI }))?,
        ),
    };
    let vci = match vci {
        -1 => Sel::Any,
        -2 => Sel::Unspecified,
        n => Sel::Is(Vci::new(n as u32).map_err(|_| fatal(start[2], K::VciOverflow))?),
    };
    Ok(PvcAddr { itf, vpi, vci })
}

/// C's `isxdigit` and its value.
fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Sets hex digit `pos` (0 = high nibble of byte 0) of `prv`.
fn set_nibble(prv: &mut [u8; 20], pos: usize, v: u8) {
    if let Some(byte) = prv.get_mut(pos / 2) {
        if pos.is_multiple_of(2) {
            *byte = v << 4;
        } else {
            *byte |= v & 0x0f;
        }
    }
}

/// libatm's `do_try_nsap`, from byte `start`: the AESA and, with `/bits`, the prefix length.
fn nsap(b: &[u8], text: &str, start: usize, wildcard: bool) -> Result<(Aesa, Option<u8>), Fail> {
    use AddrErrorKind as K;
    let mut prv = [0u8; 20];
    if at(b, start) == b'.' {
        return Err(fatal(start, K::LeadingDot));
    }
    // Up to 15 decimal digits then ':' is the E.164 AESA form.
    let count = b
        .iter()
        .skip(start)
        .take(16)
        .take_while(|c| c.is_ascii_digit())
        .count();
    let mut p;
    let mut pos;
    let mut min_prefix = 0;
    if count <= 15 && at(b, start + count) == b':' {
        if count == 0 || at(b, start) == b'0' {
            return Err(fatal(start, K::E164AesaLeadingZero));
        }
        prv[0] = Aesa::AFI_E164;
        pos = 17 - count;
        for &d in b.iter().skip(start).take(count) {
            set_nibble(&mut prv, pos, d - b'0');
            pos += 1;
        }
        prv[8] |= 0x0f;
        pos += 1;
        p = start + count + 1;
        min_prefix = 72;
    } else {
        pos = 0;
        p = start;
    }
    let mut dot = false;
    while p < b.len() {
        let c = at(b, p);
        if let Some(v) = hex_value(c) {
            if pos == 40 {
                return Err(other(p, K::AesaTooLong));
            }
            set_nibble(&mut prv, pos, v);
            pos += 1;
            dot = true;
        } else if c == b'/' && wildcard {
            break;
        } else if c != b'.' {
            return Err(other(p, bad_char(text, p)));
        } else if !dot {
            return Err(fatal(p, K::TwoDots));
        } else {
            dot = false;
        }
        p += 1;
    }
    if !dot {
        return Err(fatal(p, K::NoDigits));
    }
    if pos > 1 && prv[0] == 0 {
        return Err(other(start, K::AesaZeroAfi));
    }
    if p >= b.len() {
        if pos != 40 {
            return Err(other(p, K::AesaLength { digits: pos as u8 }));
        }
        return Ok((Aesa(prv), None));
    }
    // "/bits": pos <= 40, so len stays below 1600.
    let bits_at = p + 1;
    let mut len: usize = 0;
    for (k, &c) in b.iter().enumerate().skip(bits_at) {
        if !c.is_ascii_digit() {
            return Err(fatal(k, K::PrefixNotNumber));
        }
        if len >= pos * 4 {
            return Err(fatal(k, K::PrefixTooLong));
        }
        len = len * 10 + usize::from(c - b'0');
    }
    if len > 7 && prv[0] != Aesa::AFI_E164 {
        min_prefix = 72;
    }
    if len < min_prefix {
        return Err(fatal(bits_at, K::PrefixRange));
    }
    if len > pos * 4 {
        return Err(other(bits_at, K::PrefixTooLong));
    }
    let len = u8::try_from(len).map_err(|_| other(bits_at, K::PrefixTooLong))?;
    Ok((Aesa(prv), Some(len)))
}

/// The number part of libatm's `try_e164`: returns it and where it ended.
fn e164_digits(b: &[u8], text: &str) -> Result<(E164, usize), Fail> {
    use AddrErrorKind as K;
    let mut p = usize::from(matches!(at(b, 0), b':' | b'+'));
    let mut digits = [0u8; E164::MAX_DIGITS];
    let mut n = 0usize;
    let mut dot = false;
    while p < b.len() {
        let c = at(b, p);
        if c.is_ascii_digit() {
            let Some(slot) = digits.get_mut(n) else {
                return Err(other(p, K::E164TooLong));
            };
            *slot = c;
            n += 1;
            dot = true;
        } else if c != b'.' {
            break;
        } else if !dot {
            return Err(other(
                p,
                if n == 0 {
                    bad_char(text, p)
                } else {
                    K::TwoDots
                },
            ));
        } else {
            dot = false;
        }
        p += 1;
    }
    if !dot {
        let kind = match text.get(p..).and_then(|r| r.chars().next()) {
            Some(c) if n == 0 => K::BadChar(c),
            _ => K::NoDigits,
        };
        return Err(other(p, kind));
    }
    Ok((
        E164 {
            digits,
            len: n as u8,
        },
        p,
    ))
}

/// libatm's `try_e164`: an E.164 number, optionally followed by `+` and an AESA.
fn try_e164(b: &[u8], text: &str, wildcard: bool) -> Result<SvcAddr, Fail> {
    let (e, p) = e164_digits(b, text)?;
    let mut addr = SvcAddr::public(e);
    if p < b.len() {
        if at(b, p) != b'+' {
            return Err(other(p, bad_char(text, p)));
        }
        let (aesa, prefix_len) =
            nsap(b, text, p + 1, wildcard).map_err(|f| Fail::Fatal(f.into_inner()))?;
        addr.prv = Some(aesa);
        addr.prefix_len = prefix_len;
    }
    Ok(addr)
}

#[cfg(test)]
mod tests {
    use super::*;
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

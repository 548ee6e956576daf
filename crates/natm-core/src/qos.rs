//! Quality of service: linux-atm's `struct atm_qos` and its text form (qos(7)).
//!
//! [`Qos`] holds what a VC asks of the network in each direction ([`TrafficParams`]: class,
//! peak cell rates, maximum SDU) plus the AAL. [`Qos::from_str`](core::str::FromStr) reads the
//! text form of linux-atm's `text2qos` and [`Display`](core::fmt::Display) writes the form of
//! `qos2text`, so that strings from `atmarp`, `br2684ctl`, `aread`/`awrite` or a qos(7) example
//! mean here exactly what they mean to libatm:
//!
//! ```
//! use natm_core::qos::{Aal, Pcr, Qos, TrafficClass};
//!
//! let q: Qos = "cbr,aal5:max_pcr=11Mbps,min_pcr=10Mbps,sdu=8192".parse().unwrap();
//! assert_eq!(q.tx.class, TrafficClass::Cbr);
//! assert_eq!(q.tx.max_pcr, Pcr::Cps(28_645)); // 11e6 / 384 bits per cell, rounded down
//! assert_eq!(q.rx.min_pcr, 26_042); // min_pcr rounds up
//! assert_eq!(q.aal, Aal::Aal5);
//! assert_eq!(q.to_string(), "cbr,aal5:max_pcr=28645,min_pcr=26042,max_sdu=8192");
//! assert_eq!(q.to_string().parse::<Qos>().unwrap(), q);
//! ```
//!
//! This module is a data type and its text form. It is **not** traffic management: nothing
//! here polices, shapes or admits a connection, and [`Qos::validate`] only checks what the
//! text form can express, not what a switch would accept.
//!
//! # The grammar (libatm 2.5.1, checked against the library itself)
//!
//! ```text
//! qos     = class-list [ ":" params ] [ "tx" dir ] [ "rx" dir ]
//! class-list = item *( "," item )         item = "ubr" | "cbr" | "abr" | "aal0" | "aal5"
//! dir     = ":none" [","] | ":" params    (after "tx"; after "rx" no "," may follow)
//! params  = param *( "," param )          a "tx"/"rx" may follow the last ","
//! param   = ("max_pcr=" | "pcr=") rate | "min_pcr=" rate | ("max_sdu=" | "sdu=") integer
//! rate    = "max" | number [ "." digits ] [ "k" | "M" | "G" ] [ "cps" | "bps" ]
//! ```
//!
//! * Keywords (classes, AALs, parameter names, `tx`, `rx`, `:none`) are case-insensitive;
//!   `max`, `cps` and `bps` are case-sensitive (libatm compares them with `strncmp`).
//!   The multipliers `k`/`K`, `m`/`M`, `g`/`G` are 10³, 10⁶, 10⁹ whatever their case.
//! * At least one class must be given; the last class and the last AAL win, as does the last
//!   value of a repeated parameter. Parameters before `tx`/`rx` set both directions.
//! * `bps` rates are converted at 384 bits (48 bytes) per cell, rounded down, except
//!   `min_pcr`, which is rounded up. `cps` or no unit means cells per second. A multiplier
//!   needs a unit (`1k` is rejected, `1kcps` is 1000).
//! * `max` is the link rate ([`Pcr::Max`], libatm's `ATM_MAX_PCR = -1`); not allowed for
//!   `min_pcr`. Everything that is not given is 0, as in libatm.
//! * No whitespace is allowed anywhere, except that numbers are read with C's
//!   `strtoul`/`strtol`, which skip leading whitespace and accept a sign.
//!
//! # Recorded decisions: libatm oddities this module reproduces
//!
//! natm accepts exactly the strings `text2qos` accepts, with the same field values. Where
//! libatm's behaviour is surprising it is kept, so that no configuration changes meaning:
//!
//! * qos(7) says `pcr=` is a synonym of `max_pcr=`; the code stores it in `pcr`. So does natm.
//! * `vbr` is not a libatm class (rejected); `max_cdv=`/`cdv=` are not parameters at all, so
//!   `max_cdv` is always 0 after parsing and `qos2text` never prints it.
//! * Numbers go through C's `strtoul` (64-bit) and are truncated to 32 bits: `pcr=4294967297`
//!   is 1, `pcr=-18446744073709551615` is 1, a leading `+`, `-` or whitespace is accepted,
//!   and an empty number is 0 (`pcr=` and `pcr=kcps` both give 0, `pcr=.5kcps` gives 500).
//! * The fraction is added to the scaled integer part in 32-bit unsigned arithmetic, which
//!   can wrap: `pcr=4294967.999kcps` is 703. Likewise `min_pcr=4294967295bps` is 0. A rate
//!   that ends above 2³¹−1 is rejected. More than 8 fraction digits are rejected.
//! * `sdu=` goes through `strtol` and is truncated to a C `int`; the result must not be
//!   negative: `sdu=4294967296` is 0, `sdu=-4294967295` is 1, `sdu=2147483648` is rejected.
//! * `tx:none,` may end the string (a trailing comma) and `tx:nonerx:none` is accepted; after
//!   `rx:none` nothing may follow.
//! * `ubr:tx:none,rx:none` is accepted and leaves no direction with a class; `qos2text`
//!   cannot print that value (it fails), and it cannot print the parameters of a direction
//!   set to `none` (`ubr:pcr=1,tx:none` keeps `tx.pcr = 1`, which `qos2text` drops).
//!   For those values natm prints a longer form that libatm parses back to the same
//!   structure (see [`Qos`]'s `Display`); everywhere else the output equals `qos2text`'s.
//! * A NUL byte ends a C string; natm rejects it instead of ignoring what follows.
//!
//! # Extension: VBR
//!
//! natm also accepts the class `vbr` (linux-atm's `ATM_VBR = 3`, which `text2qos` rejects),
//! and for it three more parameters: `scr=` (sustainable cell rate, same syntax as `pcr=`
//! but no `max`), `mbs=` (maximum burst size in cells) and `cdvt=` (cell delay variation
//! tolerance in microseconds, the unit of `max_cdv`). The last two are plain decimal
//! integers up to 2³¹−1. They are rejected unless the final class is `vbr`. Example:
//! `vbr:pcr=10000,scr=5000,mbs=100`. Every string libatm accepts means the same to natm
//! with or without this extension; the extension only gives meaning to strings libatm
//! rejects.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write as _};
use core::str::FromStr;

/// Service category of one direction (linux-atm `traffic_class`; discriminants are
/// linux-atm's `ATM_NONE` … `ATM_ABR`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum TrafficClass {
    /// No traffic in this direction (`ATM_NONE`, written `tx:none` / `rx:none`).
    #[default]
    None = 0,
    /// Unspecified bit rate (`ATM_UBR`).
    Ubr = 1,
    /// Constant bit rate (`ATM_CBR`).
    Cbr = 2,
    /// Variable bit rate (`ATM_VBR`): a natm extension of the text form.
    Vbr = 3,
    /// Available bit rate (`ATM_ABR`).
    Abr = 4,
}

impl TrafficClass {
    /// linux-atm's numeric code.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The class with linux-atm's numeric code, if there is one (`ATM_ANYCLASS = 5` is not
    /// a class).
    pub const fn from_code(code: u8) -> Option<TrafficClass> {
        match code {
            0 => Some(TrafficClass::None),
            1 => Some(TrafficClass::Ubr),
            2 => Some(TrafficClass::Cbr),
            3 => Some(TrafficClass::Vbr),
            4 => Some(TrafficClass::Abr),
            _ => None,
        }
    }

    /// The keyword: `none`, `ubr`, `cbr`, `vbr` or `abr`.
    pub const fn name(self) -> &'static str {
        match self {
            TrafficClass::None => "none",
            TrafficClass::Ubr => "ubr",
            TrafficClass::Cbr => "cbr",
            TrafficClass::Vbr => "vbr",
            TrafficClass::Abr => "abr",
        }
    }
}

impl fmt::Display for TrafficClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The ATM adaptation layer of a VC; discriminants are linux-atm's `ATM_NO_AAL`,
/// `ATM_AAL0` and `ATM_AAL5`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Aal {
    /// Not specified (`ATM_NO_AAL`); the socket's own AAL applies.
    #[default]
    None = 0,
    /// Raw cells (`ATM_AAL0`).
    Aal0 = 13,
    /// AAL5 (`ATM_AAL5`).
    Aal5 = 5,
}

impl Aal {
    /// linux-atm's numeric code.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The AAL with linux-atm's numeric code, if natm supports it.
    pub const fn from_code(code: u8) -> Option<Aal> {
        match code {
            0 => Some(Aal::None),
            13 => Some(Aal::Aal0),
            5 => Some(Aal::Aal5),
            _ => None,
        }
    }

    /// The keyword: `none`, `aal0` or `aal5`.
    pub const fn name(self) -> &'static str {
        match self {
            Aal::None => "none",
            Aal::Aal0 => "aal0",
            Aal::Aal5 => "aal5",
        }
    }
}

impl fmt::Display for Aal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A peak cell rate of a traffic contract: the link rate, or cells per second. (A link's
/// own rate is a [`LineRate`](crate::rate::LineRate).)
///
/// `Cps(0)` is libatm's 0, "not given". The text form reaches `Cps` values up to
/// [`Pcr::TEXT_MAX`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pcr {
    /// Whatever the link can carry (linux-atm `ATM_MAX_PCR`, written `max`).
    Max,
    /// This many cells per second.
    Cps(u32),
}

impl Pcr {
    /// Not given (libatm's 0).
    pub const ZERO: Pcr = Pcr::Cps(0);
    /// The largest rate libatm stores (its fields are C `int`s).
    pub const TEXT_MAX: u32 = i32::MAX as u32;

    /// Whether this is "not given".
    pub const fn is_zero(self) -> bool {
        matches!(self, Pcr::Cps(0))
    }
}

impl Default for Pcr {
    fn default() -> Pcr {
        Pcr::ZERO
    }
}

impl fmt::Display for Pcr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pcr::Max => f.write_str("max"),
            Pcr::Cps(n) => write!(f, "{n}"),
        }
    }
}

/// Traffic parameters of one direction (linux-atm `struct atm_trafprm`, without the ABR
/// fields that no text form sets). A 0 means "not given", as in libatm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TrafficParams {
    /// Service category.
    pub class: TrafficClass,
    /// Maximum peak cell rate (`max_pcr=`).
    pub max_pcr: Pcr,
    /// Desired peak cell rate (`pcr=`).
    pub pcr: Pcr,
    /// Minimum acceptable peak cell rate in cells per second (`min_pcr=`).
    pub min_pcr: u32,
    /// Maximum cell delay variation in microseconds. No text sets it (libatm has no
    /// `max_cdv=`), so it is 0 after parsing.
    pub max_cdv: u32,
    /// Maximum SDU size in bytes (`max_sdu=` or `sdu=`).
    pub max_sdu: u32,
    /// Sustainable cell rate in cells per second (`scr=`, VBR extension).
    pub scr: u32,
    /// Maximum burst size in cells (`mbs=`, VBR extension).
    pub mbs: u32,
    /// Cell delay variation tolerance in microseconds (`cdvt=`, VBR extension).
    pub cdvt: u32,
}

/// A VC's quality of service (linux-atm `struct atm_qos`).
///
/// `Display` writes `qos2text`'s text. Two kinds of value `qos2text` cannot write (it fails
/// or drops fields) are written in a longer form that `text2qos` reads back to the same
/// structure: no direction with a class (`ubr:pcr=5,tx:none,rx:none`), and a `none`
/// direction that still has parameters (`ubr:pcr=1,tx:pcr=2,rx:none`).
/// `s.parse::<Qos>()?.to_string().parse()` always gives the same value back; for values
/// built in code this holds when [`Qos::validate`] passes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Qos {
    /// Transmit direction (`txtp`).
    pub tx: TrafficParams,
    /// Receive direction (`rxtp`).
    pub rx: TrafficParams,
    /// Adaptation layer.
    pub aal: Aal,
}

/// Why a [`Qos`] cannot be written as text that reads back to the same value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QosValueError {
    /// Both directions have a class, and they differ (the text has one class).
    ClassMismatch {
        /// Transmit class.
        tx: TrafficClass,
        /// Receive class.
        rx: TrafficClass,
    },
    /// A field is above 2³¹−1 (libatm's fields are C `int`s).
    OutOfRange {
        /// The field's name.
        field: &'static str,
    },
    /// `max_cdv` is not 0: the text form has no way to set it.
    MaxCdv,
    /// `scr`, `mbs` or `cdvt` is set but the class is not VBR.
    VbrOnly {
        /// The field's name.
        field: &'static str,
    },
    /// Neither direction has a class, and their parameters differ: the text can only set
    /// such parameters for both directions at once.
    NoneDirectionsDiffer,
}

impl fmt::Display for QosValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QosValueError::ClassMismatch { tx, rx } => {
                write!(f, "transmit class {tx} and receive class {rx} differ")
            }
            QosValueError::OutOfRange { field } => {
                write!(f, "{field} is above {}", Pcr::TEXT_MAX)
            }
            QosValueError::MaxCdv => f.write_str("max_cdv cannot be expressed in text"),
            QosValueError::VbrOnly { field } => write!(f, "{field} is only allowed for vbr"),
            QosValueError::NoneDirectionsDiffer => {
                f.write_str("both directions are none but their parameters differ")
            }
        }
    }
}

impl core::error::Error for QosValueError {}

/// A field as text sees it: `max` or a number, where 0 is "not given".
#[derive(Clone, Copy, PartialEq, Eq)]
enum Val {
    Max,
    N(u32),
}

impl Val {
    fn is_zero(self) -> bool {
        self == Val::N(0)
    }
}

impl From<Pcr> for Val {
    fn from(r: Pcr) -> Val {
        match r {
            Pcr::Max => Val::Max,
            Pcr::Cps(n) => Val::N(n),
        }
    }
}

/// Printed fields in `qos2text`'s order, then the VBR extension's.
const FIELD_NAMES: [&str; 7] = ["max_pcr", "pcr", "min_pcr", "max_sdu", "scr", "mbs", "cdvt"];

impl TrafficParams {
    fn text_fields(&self) -> [Val; 7] {
        [
            self.max_pcr.into(),
            self.pcr.into(),
            Val::N(self.min_pcr),
            Val::N(self.max_sdu),
            Val::N(self.scr),
            Val::N(self.mbs),
            Val::N(self.cdvt),
        ]
    }

    fn has_vbr_fields(&self) -> bool {
        self.scr != 0 || self.mbs != 0 || self.cdvt != 0
    }

    fn has_text_fields(&self) -> bool {
        self.text_fields().iter().any(|v| !v.is_zero())
    }

    fn check_ranges(&self) -> Result<(), QosValueError> {
        let max = Pcr::TEXT_MAX;
        for (name, v) in FIELD_NAMES.iter().zip(self.text_fields()) {
            if matches!(v, Val::N(n) if n > max) {
                return Err(QosValueError::OutOfRange { field: name });
            }
        }
        if self.max_cdv != 0 {
            return Err(QosValueError::MaxCdv);
        }
        Ok(())
    }
}

impl Qos {
    /// Checks that the text form can express this value, so that `Display` followed by
    /// parsing gives it back. Every value parsed from text passes.
    pub fn validate(&self) -> Result<(), QosValueError> {
        use TrafficClass as C;
        let (tx, rx) = (self.tx.class, self.rx.class);
        if tx != C::None && rx != C::None && tx != rx {
            return Err(QosValueError::ClassMismatch { tx, rx });
        }
        self.tx.check_ranges()?;
        self.rx.check_ranges()?;
        let class = if tx != C::None { tx } else { rx };
        if class != C::Vbr && class != C::None {
            for d in [&self.tx, &self.rx] {
                if d.scr != 0 {
                    return Err(QosValueError::VbrOnly { field: "scr" });
                }
                if d.mbs != 0 {
                    return Err(QosValueError::VbrOnly { field: "mbs" });
                }
                if d.cdvt != 0 {
                    return Err(QosValueError::VbrOnly { field: "cdvt" });
                }
            }
        }
        if class == C::None && self.tx.text_fields() != self.rx.text_fields() {
            return Err(QosValueError::NoneDirectionsDiffer);
        }
        Ok(())
    }

    /// The class word the text starts with, and the sections after the `:`.
    fn text_sections(&self) -> (TrafficClass, Vec<String>) {
        use TrafficClass as C;
        let (tx, rx) = (&self.tx, &self.rx);
        let (tf, rf) = (tx.text_fields(), rx.text_fields());
        let mut parts = Vec::new();
        if tx.class == C::None && rx.class == C::None {
            // qos2text fails here; any class keyword parses back the same, but only vbr
            // may carry the VBR parameters.
            let class = if tx.has_vbr_fields() { C::Vbr } else { C::Ubr };
            push_fields(&mut parts, &tf, |v, _| !v.is_zero());
            parts.push("tx:none".into());
            parts.push("rx:none".into());
            return (class, parts);
        }
        let class = if tx.class != C::None {
            tx.class
        } else {
            rx.class
        };
        let tx_lossy = tx.class == C::None && tx.has_text_fields();
        let rx_lossy = rx.class == C::None && rx.has_text_fields();
        if tx_lossy || rx_lossy {
            // The none direction's parameters can only come from the common part; the
            // other direction then overrides what differs, zeros included.
            let (nf, of) = if tx_lossy { (&tf, &rf) } else { (&rf, &tf) };
            push_fields(&mut parts, nf, |v, _| !v.is_zero());
            let mut other = Vec::new();
            push_fields(&mut other, of, |v, i| nf.get(i) != Some(&v));
            let other = (!other.is_empty()).then(|| other.join(","));
            if tx_lossy {
                parts.push("tx:none".into());
                if let Some(o) = other {
                    parts.push(alloc::format!("rx:{o}"));
                }
            } else {
                if let Some(o) = other {
                    parts.push(alloc::format!("tx:{o}"));
                }
                parts.push("rx:none".into());
            }
            return (class, parts);
        }
        // qos2text: fields equal in both directions first, then what differs.
        if tx.class != C::None && rx.class != C::None {
            push_fields(&mut parts, &tf, |v, i| {
                !v.is_zero() && rf.get(i) == Some(&v)
            });
        }
        for (name, me, my, other, other_none) in [
            ("tx", tx, &tf, &rf, rx.class == C::None),
            ("rx", rx, &rf, &tf, tx.class == C::None),
        ] {
            if me.class == C::None {
                parts.push(alloc::format!("{name}:none"));
                continue;
            }
            let mut items = Vec::new();
            push_fields(&mut items, my, |v, i| {
                !v.is_zero() && (other_none || other.get(i) != Some(&v))
            });
            if !items.is_empty() {
                parts.push(alloc::format!("{name}:{}", items.join(",")));
            }
        }
        (class, parts)
    }
}

/// Appends `name=value` for each field `keep` selects.
fn push_fields(out: &mut Vec<String>, fields: &[Val; 7], keep: impl Fn(Val, usize) -> bool) {
    for (i, (name, v)) in FIELD_NAMES.iter().zip(fields.iter()).enumerate() {
        if keep(*v, i) {
            let mut s = String::new();
            let _ = match v {
                Val::Max => write!(s, "{name}=max"),
                Val::N(n) => write!(s, "{name}={n}"),
            };
            out.push(s);
        }
    }
}

impl fmt::Display for Qos {
    /// `qos2text`'s output (see the type's documentation for the two exceptions).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (class, parts) = self.text_sections();
        f.write_str(class.name())?;
        if self.aal != Aal::None {
            write!(f, ",{}", self.aal)?;
        }
        for (i, part) in parts.iter().enumerate() {
            f.write_str(if i == 0 { ":" } else { "," })?;
            f.write_str(part)?;
        }
        Ok(())
    }
}

/// A QoS text that could not be parsed: where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QosParseError {
    /// Byte offset into the text where parsing stopped.
    pub at: usize,
    /// What was wrong there.
    pub kind: QosErrorKind,
}

/// What was wrong with a QoS text. `String` payloads quote a short piece of the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QosErrorKind {
    /// The text is empty.
    Empty,
    /// The text contains a NUL byte.
    Nul,
    /// Not a traffic class or AAL keyword where one was expected.
    UnknownClass(String),
    /// Only AAL keywords, no traffic class.
    NoClass,
    /// A `:` was expected.
    ExpectedColon(String),
    /// Nothing after a `:` or `,` that must be followed by a parameter.
    EmptyParams,
    /// Neither a parameter nor a `tx:`/`rx:` section.
    UnknownParam(String),
    /// After the `tx` section only an `rx` section may follow.
    ExpectedRx(String),
    /// A `,` was expected after a value.
    ExpectedComma(String),
    /// Text after the `rx` section.
    Trailing(String),
    /// A rate that does not fit (above 2³¹−1, or an overflowing multiplier).
    RateRange(&'static str),
    /// A multiplier `k`/`M`/`G` without `cps` or `bps` after it.
    MissingUnit(&'static str),
    /// More than 8 digits after the decimal point.
    TooManyDecimals(&'static str),
    /// `max` where it is not allowed.
    MaxNotAllowed(&'static str),
    /// A value that is negative once stored in a C `int`.
    NegativeValue(&'static str),
    /// An extension parameter's value is not a decimal number up to 2³¹−1.
    BadNumber(&'static str),
    /// `scr=`, `mbs=` or `cdvt=` when the class is not `vbr`.
    VbrOnly(&'static str),
}

/// Quotes `s`, or says "end of text".
struct Found<'a>(&'a str);

impl fmt::Display for Found<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("end of text")
        } else {
            write!(f, "{:?}", self.0)
        }
    }
}

impl fmt::Display for QosErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use QosErrorKind as K;
        match self {
            K::Empty => f.write_str("empty QoS text"),
            K::Nul => f.write_str("NUL byte in QoS text"),
            K::UnknownClass(w) if w.is_empty() => {
                f.write_str("expected a traffic class or AAL (ubr, cbr, abr, vbr, aal0, aal5)")
            }
            K::UnknownClass(w) => write!(
                f,
                "unknown traffic class {w:?} (expected ubr, cbr, abr, vbr, aal0 or aal5)"
            ),
            K::NoClass => f.write_str("no traffic class (ubr, cbr, abr or vbr)"),
            K::ExpectedColon(w) => write!(f, "expected \":\", found {}", Found(w)),
            K::EmptyParams => f.write_str("expected a parameter after \":\" or \",\""),
            K::UnknownParam(w) => write!(
                f,
                "unknown parameter {} (expected max_pcr=, pcr=, min_pcr=, max_sdu=, sdu=, tx: or rx:)",
                Found(w)
            ),
            K::ExpectedRx(w) => write!(f, "expected \"rx:\", found {}", Found(w)),
            K::ExpectedComma(w) => write!(f, "expected \",\", found {}", Found(w)),
            K::Trailing(w) => write!(f, "unexpected {} after the rx section", Found(w)),
            K::RateRange(p) => write!(f, "{p} rate out of range 0..=2147483647 cells/s"),
            K::MissingUnit(p) => write!(f, "{p} multiplier needs a unit (cps or bps)"),
            K::TooManyDecimals(p) => write!(f, "{p} has more than 8 digits after the point"),
            K::MaxNotAllowed(p) => write!(f, "{p} cannot be \"max\""),
            K::NegativeValue(p) => write!(f, "{p} out of range 0..=2147483647"),
            K::BadNumber(p) => write!(f, "{p} needs a decimal number 0..=2147483647"),
            K::VbrOnly(p) => write!(f, "{p}= is only allowed with class vbr"),
        }
    }
}

impl fmt::Display for QosParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}: {}", self.at, self.kind)
    }
}

impl core::error::Error for QosParseError {}

impl FromStr for Qos {
    type Err = QosParseError;

    /// Parses `text2qos`'s text (plus the VBR extension); see the module documentation.
    fn from_str(text: &str) -> Result<Qos, QosParseError> {
        Parser { text, p: 0 }.qos()
    }
}

/// Which directions a parameter list sets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Both,
    Tx,
    Rx,
}

/// A cursor over the text. Reading past the end gives 0, like C's terminating NUL
/// (NUL bytes inside the text are rejected up front, so 0 means the end).
struct Parser<'a> {
    text: &'a str,
    p: usize,
}

impl Parser<'_> {
    fn bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }

    fn byte_at(&self, i: usize) -> u8 {
        self.bytes().get(i).copied().unwrap_or(0)
    }

    fn peek(&self) -> u8 {
        self.byte_at(self.p)
    }

    fn at_end(&self) -> bool {
        self.p >= self.text.len()
    }

    /// libatm's `__atmlib_fetch`: the longest word that prefixes the rest, ignoring case.
    fn fetch(&mut self, words: &[&str]) -> Option<usize> {
        let rest = self.bytes().get(self.p..).unwrap_or(&[]);
        let mut best: Option<(usize, usize)> = None;
        for (i, w) in words.iter().enumerate() {
            let w = w.as_bytes();
            let hit = rest
                .get(..w.len())
                .is_some_and(|r| r.eq_ignore_ascii_case(w));
            if hit && best.is_none_or(|(_, len)| w.len() > len) {
                best = Some((i, w.len()));
            }
        }
        let (i, len) = best?;
        self.p += len;
        Some(i)
    }

    /// A short quote of the text at `at`, for error messages.
    fn word(&self, at: usize) -> String {
        let rest = self.text.get(at..).unwrap_or("");
        // The first character even if it is a separator, then up to the next separator.
        let mut chars = rest.chars();
        let first = chars.next().map(String::from).unwrap_or_default();
        first
            + &chars
                .take_while(|c| !matches!(c, ',' | ':'))
                .take(23)
                .collect::<String>()
    }

    fn err(&self, at: usize, kind: QosErrorKind) -> QosParseError {
        QosParseError { at, kind }
    }

    fn qos(mut self) -> Result<Qos, QosParseError> {
        use TrafficClass as C;
        if self.text.is_empty() {
            return Err(self.err(0, QosErrorKind::Empty));
        }
        if let Some(i) = self.bytes().iter().position(|&b| b == 0) {
            return Err(self.err(i, QosErrorKind::Nul));
        }
        let mut class = C::None;
        let mut aal = Aal::None;
        loop {
            let at = self.p;
            match self.fetch(&["ubr", "cbr", "vbr", "abr", "aal0", "aal5"]) {
                Some(0) => class = C::Ubr,
                Some(1) => class = C::Cbr,
                Some(2) => class = C::Vbr,
                Some(3) => class = C::Abr,
                Some(4) => aal = Aal::Aal0,
                Some(_) => aal = Aal::Aal5,
                None => return Err(self.err(at, QosErrorKind::UnknownClass(self.word(at)))),
            }
            if self.peek() != b',' {
                break;
            }
            self.p += 1;
        }
        if class == C::None {
            return Err(self.err(0, QosErrorKind::NoClass));
        }
        let dir = TrafficParams {
            class,
            ..TrafficParams::default()
        };
        let mut q = Qos {
            tx: dir,
            rx: dir,
            aal,
        };
        if self.at_end() {
            return Ok(q);
        }
        self.params(&mut q, Dir::Both, class)?;
        if self.at_end() {
            return Ok(q);
        }
        let at = self.p;
        match self.fetch(&["tx", "rx"]) {
            Some(0) => {
                if self.fetch(&[":none"]).is_some() {
                    q.tx.class = C::None;
                    if self.peek() == b',' {
                        self.p += 1;
                    }
                } else {
                    self.params(&mut q, Dir::Tx, class)?;
                }
            }
            Some(_) => self.p = at,
            None => return Err(self.err(at, QosErrorKind::UnknownParam(self.word(at)))),
        }
        if self.at_end() {
            return Ok(q);
        }
        let at = self.p;
        if self.fetch(&["rx"]).is_none() {
            return Err(self.err(at, QosErrorKind::ExpectedRx(self.word(at))));
        }
        if self.fetch(&[":none"]).is_some() {
            q.rx.class = C::None;
        } else {
            self.params(&mut q, Dir::Rx, class)?;
        }
        if !self.at_end() {
            return Err(self.err(self.p, QosErrorKind::Trailing(self.word(self.p))));
        }
        Ok(q)
    }

    /// `":" param ("," param)*`; stops without error before a word that is not a parameter.
    fn params(&mut self, q: &mut Qos, dir: Dir, class: TrafficClass) -> Result<(), QosParseError> {
        use QosErrorKind as K;
        if self.peek() != b':' {
            return Err(self.err(self.p, K::ExpectedColon(self.word(self.p))));
        }
        self.p += 1;
        loop {
            if self.at_end() {
                return Err(self.err(self.p, K::EmptyParams));
            }
            let at = self.p;
            let keys = [
                "max_pcr=", "pcr=", "min_pcr=", "max_sdu=", "sdu=", "scr=", "mbs=", "cdvt=",
            ];
            let Some(key) = self.fetch(&keys) else {
                return Ok(());
            };
            let vat = self.p;
            let set = |q: &mut Qos, f: &dyn Fn(&mut TrafficParams)| {
                if dir != Dir::Rx {
                    f(&mut q.tx);
                }
                if dir != Dir::Tx {
                    f(&mut q.rx);
                }
            };
            match key {
                0 => {
                    let v = self.rate(false, "max_pcr")?;
                    set(q, &|t| t.max_pcr = v);
                }
                1 => {
                    let v = self.rate(false, "pcr")?;
                    set(q, &|t| t.pcr = v);
                }
                2 => {
                    let Pcr::Cps(v) = self.rate(true, "min_pcr")? else {
                        return Err(self.err(vat, K::MaxNotAllowed("min_pcr")));
                    };
                    set(q, &|t| t.min_pcr = v);
                }
                3 | 4 => {
                    let (v, end) = c_strtol_int(self.bytes(), self.p);
                    let Ok(v) = u32::try_from(v) else {
                        return Err(self.err(vat, K::NegativeValue("max_sdu")));
                    };
                    self.p = end;
                    set(q, &|t| t.max_sdu = v);
                }
                _ if class != TrafficClass::Vbr => {
                    let name = ["scr", "mbs", "cdvt"]
                        .get(key - 5)
                        .copied()
                        .unwrap_or("scr");
                    return Err(self.err(at, K::VbrOnly(name)));
                }
                5 => {
                    let Pcr::Cps(v) = self.rate(false, "scr")? else {
                        return Err(self.err(vat, K::MaxNotAllowed("scr")));
                    };
                    set(q, &|t| t.scr = v);
                }
                6 => {
                    let v = self.plain_number("mbs")?;
                    set(q, &|t| t.mbs = v);
                }
                _ => {
                    let v = self.plain_number("cdvt")?;
                    set(q, &|t| t.cdvt = v);
                }
            }
            if self.at_end() {
                return Ok(());
            }
            if self.peek() != b',' {
                return Err(self.err(self.p, K::ExpectedComma(self.word(self.p))));
            }
            self.p += 1;
        }
    }

    /// An extension value: decimal digits only, up to 2³¹−1.
    fn plain_number(&mut self, name: &'static str) -> Result<u32, QosParseError> {
        let start = self.p;
        let mut v: u32 = 0;
        while self.peek().is_ascii_digit() {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u32::from(self.peek() - b'0')))
                .filter(|&v| v <= Pcr::TEXT_MAX)
                .ok_or_else(|| self.err(start, QosErrorKind::BadNumber(name)))?;
            self.p += 1;
        }
        if self.p == start {
            return Err(self.err(start, QosErrorKind::BadNumber(name)));
        }
        Ok(v)
    }

    /// libatm's `__t2q_get_rate`, with its C integer semantics; `up` rounds `bps` up.
    fn rate(&mut self, up: bool, name: &'static str) -> Result<Pcr, QosParseError> {
        use QosErrorKind as K;
        let start = self.p;
        if self
            .bytes()
            .get(start..)
            .is_some_and(|r| r.starts_with(b"max"))
        {
            self.p += 3;
            return Ok(Pcr::Max);
        }
        let (int, mut end) = c_strtoul(self.bytes(), start);
        // strtoul's unsigned long lands in an unsigned int.
        let mut rate = int as u32;
        let mut power: i32 = 0;
        let mut fract: u32 = 0;
        if self.byte_at(end) == b'.' {
            end += 1;
            while let d @ b'0'..=b'9' = self.byte_at(end) {
                fract = fract.wrapping_mul(10).wrapping_add(u32::from(d - b'0'));
                power -= 1;
                if power == -9 {
                    // libatm stops on the ninth digit without consuming it, so the parameter
                    // list then fails on it.
                    return Err(self.err(end, K::TooManyDecimals(name)));
                }
                end += 1;
            }
        }
        // "kKmMgGg": k and K scale once, m and M twice, g and G three times.
        let scale = match self.byte_at(end) {
            b'k' | b'K' => Some(1),
            b'm' | b'M' => Some(2),
            b'g' | b'G' => Some(3),
            _ => None,
        };
        if let Some(n) = scale {
            for _ in 0..n {
                // libatm refuses rate > UINT_MAX / 1000, exactly when this overflows.
                rate = rate
                    .checked_mul(1000)
                    .ok_or_else(|| self.err(start, K::RateRange(name)))?;
                power += 3;
            }
            end += 1;
        }
        while power != 0 && fract != 0 {
            if power < 0 {
                fract /= 10;
                power += 1;
            } else {
                fract = fract.wrapping_mul(10);
                power -= 1;
            }
        }
        // C unsigned arithmetic: this can wrap, and libatm keeps the wrapped value.
        rate = rate.wrapping_add(fract);
        let rest = self.bytes().get(end..).unwrap_or(&[]);
        if rest.len() < 3 {
            if scale.is_some() {
                return Err(self.err(end, K::MissingUnit(name)));
            }
        } else if rest.starts_with(b"cps") {
            end += 3;
        } else if rest.starts_with(b"bps") {
            let bits = if up {
                rate.wrapping_add(8 * 48 - 1)
            } else {
                rate
            };
            rate = bits / 8 / 48;
            end += 3;
        } else if scale.is_some() {
            return Err(self.err(end, K::MissingUnit(name)));
        }
        if rate > Pcr::TEXT_MAX {
            return Err(self.err(start, K::RateRange(name)));
        }
        self.p = end;
        Ok(Pcr::Cps(rate))
    }
}

/// C's `isspace` in the C locale.
fn c_isspace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Leading whitespace, sign and digits as glibc's `strto*` read them: (negative, magnitude
/// or `None` on u64 overflow, end). With no digits the end is `start`, as in C.
fn c_strto_digits(s: &[u8], start: usize) -> (bool, Option<u64>, usize) {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut p = start;
    while c_isspace(at(p)) {
        p += 1;
    }
    let neg = at(p) == b'-';
    if matches!(at(p), b'-' | b'+') {
        p += 1;
    }
    let first = p;
    let mut v = Some(0u64);
    while let d @ b'0'..=b'9' = at(p) {
        v = v
            .and_then(|v| v.checked_mul(10))
            .and_then(|v| v.checked_add(u64::from(d - b'0')));
        p += 1;
    }
    if p == first {
        return (false, Some(0), start);
    }
    (neg, v, p)
}

/// glibc `strtoul(s, &end, 10)` with a 64-bit `unsigned long`.
fn c_strtoul(s: &[u8], start: usize) -> (u64, usize) {
    match c_strto_digits(s, start) {
        (_, None, end) => (u64::MAX, end),
        (true, Some(v), end) => (v.wrapping_neg(), end),
        (false, Some(v), end) => (v, end),
    }
}

/// glibc `strtol(s, &end, 10)` with a 64-bit `long`, stored in a C `int` (truncated).
fn c_strtol_int(s: &[u8], start: usize) -> (i32, usize) {
    let (neg, mag, end) = c_strto_digits(s, start);
    let v: i64 = match (neg, mag) {
        (false, Some(m)) => i64::try_from(m).unwrap_or(i64::MAX),
        (false, None) => i64::MAX,
        (true, Some(m)) if m <= 1 << 63 => 0i64.wrapping_sub_unsigned(m),
        (true, _) => i64::MIN,
    };
    (v as i32, end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn q(s: &str) -> Qos {
        s.parse().unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    fn tp(class: TrafficClass) -> TrafficParams {
        TrafficParams {
            class,
            ..TrafficParams::default()
        }
    }

    #[test]
    fn codes_match_linux_atm() {
        assert_eq!(TrafficClass::Abr.code(), 4);
        assert_eq!(TrafficClass::from_code(5), None);
        assert_eq!(Aal::Aal0.code(), 13);
        assert_eq!(Aal::from_code(5), Some(Aal::Aal5));
    }

    #[test]
    fn pcr_is_not_max_pcr() {
        // qos(7) calls pcr= a synonym of max_pcr=; libatm stores it in pcr.
        let v = q("ubr:pcr=100kbps");
        assert_eq!(v.tx.pcr, Pcr::Cps(260));
        assert_eq!(v.tx.max_pcr, Pcr::ZERO);
        assert_eq!(v.to_string(), "ubr:pcr=260");
    }

    #[test]
    fn c_number_semantics() {
        assert_eq!(q("ubr:pcr=4294967297").tx.pcr, Pcr::Cps(1));
        assert_eq!(q("ubr:pcr=-18446744073709551615").tx.pcr, Pcr::Cps(1));
        assert_eq!(q("ubr:pcr=-2147483649").tx.pcr, Pcr::Cps(2_147_483_647));
        assert_eq!(q("ubr:pcr=4294967.999kcps").tx.pcr, Pcr::Cps(703));
        assert_eq!(q("ubr:min_pcr=4294967295bps").tx.min_pcr, 0);
        assert_eq!(q("ubr:pcr=.5kcps").tx.pcr, Pcr::Cps(500));
        assert_eq!(q("ubr:pcr= +7").tx.pcr, Pcr::Cps(7));
        assert_eq!(q("ubr:sdu=-4294967295").tx.max_sdu, 1);
        assert_eq!(q("ubr:sdu=-99999999999999999999").tx.max_sdu, 0);
        assert!("ubr:sdu=99999999999999999999".parse::<Qos>().is_err());
        assert!("ubr:pcr=2147483648".parse::<Qos>().is_err());
        assert!("ubr:pcr=1.123456789".parse::<Qos>().is_err());
    }

    #[test]
    fn units_and_rounding() {
        assert_eq!(q("ubr:pcr=1.5Mbps").tx.pcr, Pcr::Cps(3906));
        assert_eq!(q("ubr:min_pcr=1kbps").tx.min_pcr, 3);
        assert_eq!(q("ubr:pcr=2Gcps").tx.pcr, Pcr::Cps(2_000_000_000));
        assert!("ubr:pcr=1k".parse::<Qos>().is_err());
        assert!("ubr:pcr=1KBPS".parse::<Qos>().is_err());
        assert!("ubr:pcr=MAX".parse::<Qos>().is_err());
        assert_eq!(q("UBR:PCR=max").tx.pcr, Pcr::Max);
    }

    #[test]
    fn directions() {
        let v = q("ubr:pcr=1,tx:pcr=2,rx:none");
        assert_eq!(
            v.tx,
            TrafficParams {
                pcr: Pcr::Cps(2),
                ..tp(TrafficClass::Ubr)
            }
        );
        assert_eq!(
            v.rx,
            TrafficParams {
                pcr: Pcr::Cps(1),
                ..tp(TrafficClass::None)
            }
        );
        // qos2text would print "ubr:tx:pcr=2,rx:none" and lose rx.pcr.
        assert_eq!(v.to_string(), "ubr:pcr=1,tx:pcr=2,rx:none");
        assert_eq!(q(&v.to_string()), v);
        assert!(q("ubr:tx:none,").tx.class == TrafficClass::None);
        assert!("ubr:rx:none,".parse::<Qos>().is_err());
        assert!("ubr,tx:pcr=1".parse::<Qos>().is_err());
        let none = q("ubr:pcr=5,tx:none,rx:none");
        assert_eq!(none.to_string(), "ubr:pcr=5,tx:none,rx:none");
    }

    #[test]
    fn qos2text_order() {
        let v = q("ubr:max_pcr=1,pcr=1,min_pcr=1,sdu=1,tx:max_pcr=2,rx:min_pcr=3");
        assert_eq!(
            v.to_string(),
            "ubr:pcr=1,max_sdu=1,tx:max_pcr=2,min_pcr=1,rx:max_pcr=1,min_pcr=3"
        );
    }

    #[test]
    fn vbr_extension() {
        let v = q("vbr:pcr=10000,scr=5000,mbs=100,cdvt=250");
        assert_eq!(v.tx.class, TrafficClass::Vbr);
        assert_eq!((v.rx.scr, v.rx.mbs, v.rx.cdvt), (5000, 100, 250));
        assert_eq!(v.to_string(), "vbr:pcr=10000,scr=5000,mbs=100,cdvt=250");
        let e = "ubr:scr=5".parse::<Qos>().unwrap_err();
        assert_eq!(e.to_string(), "at 4: scr= is only allowed with class vbr");
        assert!("vbr:mbs=+5".parse::<Qos>().is_err());
        assert!("vbr:scr=max".parse::<Qos>().is_err());
    }

    #[test]
    fn error_positions() {
        let e = "ubr,ubx".parse::<Qos>().unwrap_err();
        assert_eq!(e.at, 4);
        assert!(
            e.to_string()
                .starts_with("at 4: unknown traffic class \"ubx\"")
        );
        assert_eq!("ubr:pcr=1x".parse::<Qos>().unwrap_err().at, 9);
        assert_eq!("".parse::<Qos>().unwrap_err().kind, QosErrorKind::Empty);
        assert_eq!("ubr\0".parse::<Qos>().unwrap_err().kind, QosErrorKind::Nul);
    }

    #[test]
    fn validate_rejects_what_text_cannot_say() {
        let mut v = q("ubr");
        v.rx.class = TrafficClass::Cbr;
        assert!(matches!(
            v.validate(),
            Err(QosValueError::ClassMismatch { .. })
        ));
        let mut v = q("ubr");
        v.tx.max_cdv = 1;
        assert_eq!(v.validate(), Err(QosValueError::MaxCdv));
        assert_eq!(q("vbr:scr=1,tx:none,rx:none").validate(), Ok(()));
    }
}

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

mod display;
mod parse;

use core::fmt;

pub use display::QosValueError;
pub use parse::{QosErrorKind, QosParseError};

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

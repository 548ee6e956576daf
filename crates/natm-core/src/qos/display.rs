//! Writing a [`Qos`] as text (`qos2text`, see [`Qos`]'s `Display`) and [`Qos::validate`], which
//! checks that a value built in code can be written so that it reads back.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write as _};

use super::{Aal, Pcr, Qos, TrafficClass, TrafficParams};

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

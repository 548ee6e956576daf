//! PVC addresses (`[itf.]vpi.vci`): [`Sel`], [`PvcAddr`] and libatm's `try_pvc`.

use core::fmt;
use core::str::FromStr;

use super::text::{AddrSyntax, Fail, at, bad_char, check_text, fatal, other};
use super::{AddrErrorKind, AddrParseError, AddrValueError};
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

/// libatm's `try_pvc`.
pub(super) fn try_pvc(b: &[u8], text: &str, syntax: AddrSyntax) -> Result<PvcAddr, Fail> {
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

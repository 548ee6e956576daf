//! SVC addresses: [`SvcAddr`] (an AESA, an E.164 number or both) and the SVC half of
//! `text2atm`.

use core::fmt;
use core::str::FromStr;

use super::aesa::nsap;
use super::e164::e164_digits;
use super::text::{AddrSyntax, Fail, at, bad_char, check_text, other, pick_error};
use super::{AddrParseError, AddrValueError, Aesa, E164};

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

/// The SVC half of `text2atm`: `Ok(None)` when neither form fits (errors in `tried`).
pub(super) fn parse_svc(
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

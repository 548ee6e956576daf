//! Public SVC addresses: the [`E164`] number and the number part of libatm's `try_e164`.

use core::fmt;
use core::str::FromStr;

use super::text::{Fail, at, bad_char, check_text, other};
use super::{AddrErrorKind, AddrParseError};

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
    /// The digits alone; [`SvcAddr`](super::SvcAddr) adds the `+`.
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

/// The number part of libatm's `try_e164`: returns it and where it ended.
pub(super) fn e164_digits(b: &[u8], text: &str) -> Result<(E164, usize), Fail> {
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

//! Private SVC addresses: the 20-byte [`Aesa`] (NSAP format), its pretty form and libatm's
//! `do_try_nsap`.

use alloc::string::String;
use core::fmt;
use core::str::FromStr;

use super::text::{Fail, at, bad_char, check_text, fatal, other};
use super::{AddrErrorKind, AddrParseError};

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
    pub(super) fn write_pretty(&self, f: &mut fmt::Formatter<'_>, e164_ok: bool) -> fmt::Result {
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
        // One write per group: `{:02X}` per byte went through the formatter's padding
        // machinery 20 times per address (hostd writes several per call).
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        let mut text = [0u8; 2 * 20];
        for (g, len) in groups.iter().enumerate() {
            if g > 0 {
                f.write_str(".")?;
            }
            let group = self.0.iter().skip(i).take(*len);
            let n = group.len();
            for (out, b) in text.chunks_exact_mut(2).zip(group) {
                out[0] = HEX[usize::from(b >> 4)];
                out[1] = HEX[usize::from(b & 0xf)];
            }
            f.write_str(core::str::from_utf8(&text[..2 * n]).map_err(|_| fmt::Error)?)?;
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
pub(super) fn nsap(
    b: &[u8],
    text: &str,
    start: usize,
    wildcard: bool,
) -> Result<(Aesa, Option<u8>), Fail> {
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

//! Address prefixes for routing: [`AesaPrefix`] (the first `bits` bits of an AESA, what a
//! switch announces and a route matches by longest prefix) and [`Esi`] (the 6-byte end
//! system identifier a host adds to its switch's 13-byte prefix, with a selector byte).
//!
//! Text: hex digits with single dots between them, as an AESA is written, optionally
//! followed by `/bits` (at most the digits given × 4). Without `/bits` the prefix is the
//! digits given: `47.0005.80ffe1000000f21a3599` is the 104-bit (13-byte) switch prefix of
//! UNI 3.1 §5.1.3. `Display` writes the same groups as [`Aesa`]'s pretty form for a DCC or
//! ICD prefix of whole groups, plain hex otherwise, and `/bits` when the length is not a
//! whole number of hex digits.

use core::fmt;
use core::str::FromStr;

use super::Aesa;

/// The first [`bits`](AesaPrefix::bits) bits of an AESA (0..=160); the bits after them are
/// zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AesaPrefix {
    bytes: [u8; 20],
    bits: u8,
}

/// A prefix's or an ESI's text did not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefixParseError {
    /// A character other than a hex digit, a dot between digits or one `/bits` suffix.
    BadChar(char),
    /// A dot at the start or end, or two in a row.
    BadDot,
    /// No digits.
    Empty,
    /// More hex digits than the value holds (40 for a prefix, 12 for an ESI).
    TooLong {
        /// The most allowed.
        max: usize,
    },
    /// An ESI needs exactly 12 hex digits.
    EsiLength(usize),
    /// `/bits` is not a number, or more than the digits given cover.
    BadLength,
}

impl fmt::Display for PrefixParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrefixParseError::BadChar(c) => write!(f, "unexpected character {c:?}"),
            PrefixParseError::BadDot => f.write_str("a dot must sit between two hex digits"),
            PrefixParseError::Empty => f.write_str("no hex digits"),
            PrefixParseError::TooLong { max } => write!(f, "more than {max} hex digits"),
            PrefixParseError::EsiLength(n) => {
                write!(f, "an ESI is 12 hex digits (6 bytes), not {n}")
            }
            PrefixParseError::BadLength => {
                f.write_str("the /bits length is not a number within the digits given")
            }
        }
    }
}

impl core::error::Error for PrefixParseError {}

/// Reads hex digits with single dots between them into `out` (high nibble first); returns
/// how many digits.
fn hex_digits(text: &str, out: &mut [u8]) -> Result<usize, PrefixParseError> {
    let mut n = 0;
    let mut last_dot = true;
    for c in text.chars() {
        if c == '.' {
            if last_dot {
                return Err(PrefixParseError::BadDot);
            }
            last_dot = true;
            continue;
        }
        let v = c.to_digit(16).ok_or(PrefixParseError::BadChar(c))? as u8;
        let max = out.len() * 2;
        let byte = out
            .get_mut(n / 2)
            .ok_or(PrefixParseError::TooLong { max })?;
        *byte |= if n.is_multiple_of(2) { v << 4 } else { v };
        n += 1;
        last_dot = false;
    }
    if n == 0 {
        return Err(PrefixParseError::Empty);
    }
    if last_dot {
        return Err(PrefixParseError::BadDot);
    }
    Ok(n)
}

impl AesaPrefix {
    /// The prefix every address has (a default route).
    pub const ALL: AesaPrefix = AesaPrefix {
        bytes: [0; 20],
        bits: 0,
    };

    /// The first `bits` bits of `addr` (`bits` above 160 is taken as 160).
    pub fn of(addr: &Aesa, bits: u8) -> AesaPrefix {
        let bits = bits.min(160);
        let mut bytes = [0u8; 20];
        let whole = usize::from(bits / 8);
        bytes[..whole].copy_from_slice(&addr.0[..whole]);
        if !bits.is_multiple_of(8) {
            bytes[whole] = addr.0[whole] & (0xFF << (8 - bits % 8));
        }
        AesaPrefix { bytes, bits }
    }

    /// The first 13 bytes of `addr`: a switch's prefix in UNI 3.1 §5.1.3's terms.
    pub fn switch_of(addr: &Aesa) -> AesaPrefix {
        AesaPrefix::of(addr, 104)
    }

    /// Its length in bits.
    pub const fn bits(&self) -> u8 {
        self.bits
    }

    /// Its bytes; those after the prefix are zero.
    pub const fn bytes(&self) -> &[u8; 20] {
        &self.bytes
    }

    /// Whether `addr` starts with this prefix.
    pub fn matches(&self, addr: &Aesa) -> bool {
        AesaPrefix::of(addr, self.bits) == *self
    }

    /// The address `prefix (13 bytes) + esi + sel`, when the prefix is 104 bits long.
    pub fn address(&self, esi: Esi, sel: u8) -> Option<Aesa> {
        if self.bits != 104 {
            return None;
        }
        let mut a = self.bytes;
        a[13..19].copy_from_slice(&esi.0);
        a[19] = sel;
        Some(Aesa(a))
    }
}

impl FromStr for AesaPrefix {
    type Err = PrefixParseError;

    fn from_str(text: &str) -> Result<AesaPrefix, PrefixParseError> {
        let (digits, len) = match text.split_once('/') {
            Some((d, l)) => (d, Some(l)),
            None => (text, None),
        };
        let mut bytes = [0u8; 20];
        let n = hex_digits(digits, &mut bytes)?;
        let given = n * 4;
        let bits = match len {
            None => given,
            Some(l) => match l.parse::<usize>() {
                Ok(b) if b <= given && !l.starts_with('+') => b,
                _ => return Err(PrefixParseError::BadLength),
            },
        };
        // `bits` ≤ 160: hex_digits stopped at 40 digits.
        Ok(AesaPrefix::of(&Aesa(bytes), bits as u8))
    }
}

impl fmt::Display for AesaPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = usize::from(self.bits).div_ceil(4);
        let nibble = |i: usize| {
            let b = self.bytes[i / 2];
            if i.is_multiple_of(2) {
                b >> 4
            } else {
                b & 0x0F
            }
        };
        // The pretty groups of a DCC/ICD AESA: AFI (2), DCC/ICD (4), HO-DSP (20), ESI
        // (12), SEL (2) digits.
        let dotted = matches!(self.bytes[0], Aesa::AFI_DCC | Aesa::AFI_ICD)
            && [2, 6, 26, 38, 40].contains(&digits);
        for i in 0..digits {
            if dotted && [2, 6, 26, 38].contains(&i) {
                f.write_str(".")?;
            }
            write!(f, "{:X}", nibble(i))?;
        }
        if digits == 0 {
            // No digits: the default route, written as `/0` after one zero digit.
            f.write_str("0")?;
        }
        if usize::from(self.bits) != digits * 4 || digits == 0 {
            write!(f, "/{}", self.bits)?;
        }
        Ok(())
    }
}

/// An end system identifier: the 6 bytes after a switch's 13-byte prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Esi(pub [u8; 6]);

impl FromStr for Esi {
    type Err = PrefixParseError;

    /// 12 hex digits, with dots between digits allowed (`0020481a3599`, `00.20.48.1a.35.99`).
    fn from_str(text: &str) -> Result<Esi, PrefixParseError> {
        let mut bytes = [0u8; 6];
        let n = hex_digits(text, &mut bytes)?;
        if n != 12 {
            return Err(PrefixParseError::EsiLength(n));
        }
        Ok(Esi(bytes))
    }
}

impl fmt::Display for Esi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02X}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;

    use super::*;

    const SWITCH: &str = "47.0005.80FFE1000000F21A3599";

    #[test]
    fn a_switch_prefix_reads_and_writes_as_its_aesa_groups() {
        let p: AesaPrefix = SWITCH.parse().unwrap();
        assert_eq!(p.bits(), 104);
        assert_eq!(p.to_string(), SWITCH);
        let esi: Esi = "0020481a3599".parse().unwrap();
        assert_eq!(esi.to_string(), "0020481A3599");
        let a = p.address(esi, 0x07).unwrap();
        assert_eq!(
            a.to_string(),
            "47.0005.80FFE1000000F21A3599.0020481A3599.07"
        );
        assert!(p.matches(&a));
        assert_eq!(AesaPrefix::switch_of(&a), p);
        assert!(!p.matches(&Aesa([0x39; 20])));
        assert!(AesaPrefix::ALL.matches(&a));
        assert_eq!(AesaPrefix::ALL.to_string(), "0/0");
        assert_eq!("0/0".parse::<AesaPrefix>().unwrap(), AesaPrefix::ALL);
    }

    #[test]
    fn lengths_that_are_not_whole_digits_keep_their_bits() {
        let p: AesaPrefix = "47.0005.8f/30".parse().unwrap();
        assert_eq!(p.bits(), 30);
        assert_eq!(p.to_string(), "4700058C/30");
        assert_eq!(
            "47.0005.8/30".parse::<AesaPrefix>(),
            Err(PrefixParseError::BadLength)
        );
        assert_eq!(p.to_string().parse::<AesaPrefix>().unwrap(), p);
        let short: AesaPrefix = "47".parse().unwrap();
        assert_eq!((short.bits(), short.to_string().as_str()), (8, "47"));
        assert!(short.address("000000000001".parse().unwrap(), 0).is_none());
    }

    #[test]
    fn bad_text_is_refused_naming_what_is_wrong() {
        for (text, e) in [
            ("", PrefixParseError::Empty),
            (".47", PrefixParseError::BadDot),
            ("47..00", PrefixParseError::BadDot),
            ("47.", PrefixParseError::BadDot),
            ("4g", PrefixParseError::BadChar('g')),
            ("47/9", PrefixParseError::BadLength),
            ("47/x", PrefixParseError::BadLength),
            (
                "47000580ffe1000000f21a35990020481a35990000",
                PrefixParseError::TooLong { max: 40 },
            ),
        ] {
            assert_eq!(text.parse::<AesaPrefix>(), Err(e), "{text:?}");
        }
        assert_eq!(
            "0020481a35".parse::<Esi>(),
            Err(PrefixParseError::EsiLength(10))
        );
        assert_eq!(
            "0020481a359900".parse::<Esi>(),
            Err(PrefixParseError::TooLong { max: 12 })
        );
    }

    proptest::proptest! {
        #[test]
        fn any_prefix_round_trips_through_text(bytes in proptest::array::uniform20(0u8..), bits in 0u8..=160) {
            let p = AesaPrefix::of(&Aesa(bytes), bits);
            let text = p.to_string();
            proptest::prop_assert_eq!(text.parse::<AesaPrefix>(), Ok(p), "{}", text);
            proptest::prop_assert!(p.matches(&Aesa(bytes)));
        }

        #[test]
        fn no_text_panics(text in "[0-9a-fA-F./x+]{0,50}") {
            let _ = text.parse::<AesaPrefix>();
            let _ = text.parse::<Esi>();
        }
    }
}

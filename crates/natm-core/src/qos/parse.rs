//! Reading a [`Qos`] from text: libatm's `text2qos` (qos(7)) plus natm's VBR extension, and
//! its errors.

use alloc::string::String;
use core::fmt;
use core::str::FromStr;

use super::{Aal, Pcr, Qos, TrafficClass, TrafficParams};

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

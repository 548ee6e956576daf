//! A link's configuration and its text forms.
//!
//! A link's rate is natm-core's [`LineRate`](natm_core::LineRate), with its own text form
//! (`oc3`, `stm1`, `oc12`, `stm4`, `25m`, `ds3`, a whole number of cells/s or `unlimited`).
//! [`Impairments`] reads a comma-separated list of `key=value`
//! parts, each key at most once, in any order; `""` and `none` mean no impairment:
//!
//! | key | value | meaning |
//! |---|---|---|
//! | `loss` | probability | random (Bernoulli) cell loss |
//! | `burst` | `LOSS/LEN` | Gilbert burst loss by its mean loss rate and mean burst length in cells (≥ 1) |
//! | `ge` | `P/R` | the same model by its transition probabilities Good→Bad and Bad→Good (exclusive with `burst`) |
//! | `hec` | probability | per cell: one header bit flipped (the HEC receiver corrects it) |
//! | `hec2` | probability | per cell: two header bits flipped (the HEC receiver discards it); `hec` + `hec2` ≤ 1 |
//! | `ber` | probability | bit error rate over the 384 payload bits |
//! | `delay` | duration | fixed delay |
//! | `jitter` | duration, optionally `:uniform` or `:exp` | random delay: uniform within ± the value around `delay` (as netem), or exponential with that mean added to `delay` |
//! | `seed` | u64 | the seed of every random draw (default 0) |
//!
//! A probability is a decimal or exponent number in [0, 1] (`0.01`, `1e-4`) or a percentage
//! (`1%`, `0.5%`). A duration is a decimal number and a unit, `ns`, `us` (or `µs`), `ms` or
//! `s` (`100us`, `1.5ms`), exact to the nanosecond; `0` needs no unit. For example:
//!
//! ```
//! use natm_netem::Impairments;
//! let imp: Impairments = "loss=1%,burst=0.5%/8,hec=1e-4,ber=1e-6,delay=100us,jitter=20us,seed=7"
//!     .parse()
//!     .unwrap();
//! assert_eq!(imp.delay.as_nanos(), 100_000);
//! // The canonical form: fixed key order, probabilities as plain numbers.
//! assert_eq!(
//!     imp.to_string(),
//!     "loss=0.01,burst=0.005/8,hec=1e-4,ber=1e-6,delay=100us,jitter=20us,seed=7"
//! );
//! let err = "loss=2%,delay=5".parse::<Impairments>().unwrap_err();
//! assert_eq!(err.to_string(), "at 8: \"delay=5\": a duration needs a unit (ns, us, ms or s)");
//! ```
//!
//! `Display` writes the canonical form, which parses back to the same value; the parser
//! never panics, whatever the text.

use alloc::string::{String, ToString};
use core::fmt;
use core::str::FromStr;

use natm_core::Duration;

/// A probability in [0, 1].
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Probability(f64);

impl Probability {
    /// Never.
    pub const ZERO: Probability = Probability(0.0);
    /// Always.
    pub const ONE: Probability = Probability(1.0);

    /// `p`, if it is a number in [0, 1].
    pub fn new(p: f64) -> Option<Probability> {
        (0.0..=1.0).contains(&p).then_some(Probability(p))
    }

    /// The value.
    pub const fn get(self) -> f64 {
        self.0
    }

    /// Whether it is 0.
    pub fn is_zero(self) -> bool {
        self.0 == 0.0
    }
}

impl fmt::Display for Probability {
    /// The shortest text that parses back to the same `f64`, in exponent form below 10⁻³.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0.0 || self.0 >= 1e-3 {
            write!(f, "{}", self.0)
        } else {
            write!(f, "{:e}", self.0)
        }
    }
}

/// Gilbert's burst-loss model (two states; Bad loses every cell, Good none), by either of
/// its two descriptions. Build with [`BurstLoss::mean`] or [`BurstLoss::transitions`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BurstLoss {
    /// Mean loss rate π and mean burst length L cells: r = 1/L, p = π r / (1 − π).
    Mean {
        /// The long-run fraction of cells lost.
        loss: Probability,
        /// The mean number of cells in a burst of losses (≥ 1).
        burst_len: f64,
    },
    /// Transition probabilities per cell: `p` Good→Bad, `r` Bad→Good.
    Transitions {
        /// Good → Bad.
        p: Probability,
        /// Bad → Good.
        r: Probability,
    },
}

impl BurstLoss {
    /// Mean loss rate `loss` in [0, 1) with bursts of `burst_len` ≥ 1 cells on average, if
    /// the model can have them (p = loss / ((1 − loss) · burst_len) at most 1).
    pub fn mean(loss: f64, burst_len: f64) -> Result<BurstLoss, ParseErrorKind> {
        let loss = Probability::new(loss)
            .filter(|l| l.get() < 1.0)
            .ok_or(ParseErrorKind::OutOfRange("a loss rate in [0, 1)"))?;
        if !(burst_len.is_finite() && burst_len >= 1.0) {
            return Err(ParseErrorKind::OutOfRange(
                "a burst length of at least 1 cell",
            ));
        }
        let b = BurstLoss::Mean { loss, burst_len };
        if b.transitions().0 > 1.0 {
            return Err(ParseErrorKind::OutOfRange(
                "a loss rate the burst length can reach (loss ≤ len / (len + 1))",
            ));
        }
        Ok(b)
    }

    /// The model with transition probabilities `p` (Good→Bad) and `r` (Bad→Good).
    pub fn transitions(&self) -> (f64, f64) {
        match *self {
            BurstLoss::Mean { loss, burst_len } => {
                let r = 1.0 / burst_len;
                (loss.get() * r / (1.0 - loss.get()), r)
            }
            BurstLoss::Transitions { p, r } => (p.get(), r.get()),
        }
    }
}

/// The shape of the random part of the delay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Jitter {
    /// No random delay.
    #[default]
    None,
    /// Uniform within `delay ± j` (whole ns, both ends included), clamped at 0 below; the
    /// mean is `delay` when `j ≤ delay`. As netem's `delay D J`.
    Uniform(Duration),
    /// `delay` plus an exponential variate of this mean (truncated to whole ns).
    Exponential(Duration),
}

/// The seeded impairments of a link; `Default` is none at all.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Impairments {
    /// Random cell loss.
    pub loss: Probability,
    /// Burst cell loss.
    pub burst: Option<BurstLoss>,
    /// Per cell, a single-bit header error.
    pub hec_single: Probability,
    /// Per cell, a two-bit header error. If `hec_single + hec_multi` exceeds 1 (only
    /// possible when built in code; the parser refuses it), multi-bit errors take what is
    /// left after single-bit ones.
    pub hec_multi: Probability,
    /// Payload bit error rate.
    pub ber: Probability,
    /// Fixed delay.
    pub delay: Duration,
    /// Random delay.
    pub jitter: Jitter,
    /// Seed of every random draw.
    pub seed: u64,
}

impl Impairments {
    /// Whether nothing is impaired (the seed aside).
    pub fn is_none(&self) -> bool {
        Impairments { seed: 0, ..*self } == Impairments::default()
    }
}

/// What is wrong with a part of a configuration text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// An empty part between commas.
    EmptyPart,
    /// A part without `=`.
    MissingValue,
    /// A key this syntax does not have.
    UnknownKey,
    /// A key given twice (`burst` and `ge` count as one).
    DuplicateKey,
    /// Not a number.
    BadNumber,
    /// A number outside what the key allows (the allowed range is named).
    OutOfRange(&'static str),
    /// A duration without a unit.
    MissingUnit,
    /// A duration with a unit other than ns, us, µs, ms, s.
    BadUnit,
    /// A duration finer than 1 ns or beyond u64 ns.
    BadDuration,
    /// A jitter shape other than `uniform` or `exp`.
    BadJitterShape,
    /// `burst`/`ge` without the `/` between its two numbers.
    MissingSlash,
    /// `hec` and `hec2` together above 1.
    HecSum,
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseErrorKind::EmptyPart => f.write_str("empty part"),
            ParseErrorKind::MissingValue => f.write_str("expected key=value"),
            ParseErrorKind::UnknownKey => {
                f.write_str("unknown key (loss, burst, ge, hec, hec2, ber, delay, jitter, seed)")
            }
            ParseErrorKind::DuplicateKey => f.write_str("key given twice"),
            ParseErrorKind::BadNumber => f.write_str("not a number"),
            ParseErrorKind::OutOfRange(what) => write!(f, "out of range: expected {what}"),
            ParseErrorKind::MissingUnit => f.write_str("a duration needs a unit (ns, us, ms or s)"),
            ParseErrorKind::BadUnit => f.write_str("unknown unit (ns, us, ms or s)"),
            ParseErrorKind::BadDuration => {
                f.write_str("duration finer than 1 ns or longer than 584 years")
            }
            ParseErrorKind::BadJitterShape => f.write_str("jitter shape is uniform or exp"),
            ParseErrorKind::MissingSlash => f.write_str("expected two numbers: A/B"),
            ParseErrorKind::HecSum => f.write_str("hec + hec2 is above 1"),
        }
    }
}

/// A configuration text that does not parse: where, which part, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Byte offset of the offending part in the text.
    pub at: usize,
    /// The offending part (`key=value`).
    pub part: String,
    /// Why.
    pub kind: ParseErrorKind,
}

impl ParseError {
    fn new(at: usize, part: &str, kind: ParseErrorKind) -> ParseError {
        ParseError {
            at,
            part: part.to_string(),
            kind,
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}: {:?}: {}", self.at, self.part, self.kind)
    }
}

impl core::error::Error for ParseError {}

/// A probability: `N` or `N%`.
fn parse_probability(v: &str) -> Result<Probability, ParseErrorKind> {
    let (num, scale) = match v.strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (v, 1.0),
    };
    let x = parse_real(num)? / scale;
    Probability::new(x).ok_or(ParseErrorKind::OutOfRange("a probability in [0, 1]"))
}

/// A finite decimal number (Rust's float syntax, without `inf` and `nan`).
fn parse_real(v: &str) -> Result<f64, ParseErrorKind> {
    let x: f64 = v.parse().map_err(|_| ParseErrorKind::BadNumber)?;
    if x.is_finite() {
        Ok(x)
    } else {
        Err(ParseErrorKind::BadNumber)
    }
}

/// Nanoseconds per unit.
const UNITS: [(&str, u64); 5] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
];

/// A duration: `0`, or digits with an optional fraction and a unit, exact in ns.
fn parse_duration(v: &str) -> Result<Duration, ParseErrorKind> {
    if v == "0" {
        return Ok(Duration::ZERO);
    }
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or(ParseErrorKind::MissingUnit)?;
    let (num, unit) = v.split_at(split);
    if num.is_empty() {
        return Err(ParseErrorKind::BadNumber);
    }
    let per = UNITS
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|&(_, n)| n)
        .ok_or(ParseErrorKind::BadUnit)?;
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !(frac.is_empty() || digits(frac)) || num.ends_with('.') {
        return Err(ParseErrorKind::BadNumber);
    }
    let whole: u64 = whole.parse().map_err(|_| ParseErrorKind::BadDuration)?;
    let mut ns = whole.checked_mul(per).ok_or(ParseErrorKind::BadDuration)?;
    // Each fractional digit is worth per/10^k ns, which must stay whole.
    let mut place = per;
    for d in frac.bytes() {
        let digit = u64::from(d - b'0');
        if !place.is_multiple_of(10) {
            if digit != 0 {
                return Err(ParseErrorKind::BadDuration);
            }
            continue;
        }
        place /= 10;
        ns = ns
            .checked_add(digit * place)
            .ok_or(ParseErrorKind::BadDuration)?;
    }
    Ok(Duration::from_nanos(ns))
}

/// A duration in the largest unit that holds it exactly.
fn fmt_duration(f: &mut fmt::Formatter<'_>, d: Duration) -> fmt::Result {
    let ns = d.as_nanos();
    if ns == 0 {
        return f.write_str("0");
    }
    for (unit, per) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if ns.is_multiple_of(per) {
            return write!(f, "{}{unit}", ns / per);
        }
    }
    write!(f, "{ns}ns")
}

/// `A/B`.
fn split_pair(v: &str) -> Result<(&str, &str), ParseErrorKind> {
    v.split_once('/').ok_or(ParseErrorKind::MissingSlash)
}

fn parse_jitter(v: &str) -> Result<Jitter, ParseErrorKind> {
    let (d, shape) = v.split_once(':').unwrap_or((v, "uniform"));
    let d = parse_duration(d)?;
    match shape {
        "uniform" => Ok(Jitter::Uniform(d)),
        "exp" => Ok(Jitter::Exponential(d)),
        _ => Err(ParseErrorKind::BadJitterShape),
    }
}

impl FromStr for Impairments {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Impairments, ParseError> {
        let mut imp = Impairments::default();
        if s.is_empty() || s == "none" {
            return Ok(imp);
        }
        // Keys seen, by their index in KEYS; burst and ge share one.
        const KEYS: [&str; 9] = [
            "loss", "burst", "hec", "hec2", "ber", "delay", "jitter", "seed", "ge",
        ];
        let mut seen = [false; 8];
        let mut at = 0;
        for part in s.split(',') {
            let err = |kind| ParseError::new(at, part, kind);
            if part.is_empty() {
                return Err(err(ParseErrorKind::EmptyPart));
            }
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| err(ParseErrorKind::MissingValue))?;
            let index = KEYS
                .iter()
                .position(|k| *k == key)
                .ok_or_else(|| err(ParseErrorKind::UnknownKey))?;
            let slot = if key == "ge" { 1 } else { index };
            if core::mem::replace(&mut seen[slot], true) {
                return Err(err(ParseErrorKind::DuplicateKey));
            }
            let parsed: Result<(), ParseErrorKind> = (|| {
                match key {
                    "loss" => imp.loss = parse_probability(value)?,
                    "burst" => {
                        let (l, n) = split_pair(value)?;
                        imp.burst = Some(BurstLoss::mean(
                            parse_probability(l)?.get(),
                            parse_real(n)?,
                        )?);
                    }
                    "ge" => {
                        let (p, r) = split_pair(value)?;
                        imp.burst = Some(BurstLoss::Transitions {
                            p: parse_probability(p)?,
                            r: parse_probability(r)?,
                        });
                    }
                    "hec" => imp.hec_single = parse_probability(value)?,
                    "hec2" => imp.hec_multi = parse_probability(value)?,
                    "ber" => imp.ber = parse_probability(value)?,
                    "delay" => imp.delay = parse_duration(value)?,
                    "jitter" => imp.jitter = parse_jitter(value)?,
                    _ => imp.seed = value.parse().map_err(|_| ParseErrorKind::BadNumber)?,
                }
                if imp.hec_single.get() + imp.hec_multi.get() > 1.0 {
                    return Err(ParseErrorKind::HecSum);
                }
                Ok(())
            })();
            parsed.map_err(err)?;
            at += part.len() + 1;
        }
        Ok(imp)
    }
}

impl fmt::Display for Impairments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Impairments::default() {
            return f.write_str("none");
        }
        let mut sep = "";
        let mut next = |f: &mut fmt::Formatter<'_>| {
            let s = sep;
            sep = ",";
            f.write_str(s)
        };
        if !self.loss.is_zero() {
            next(f)?;
            write!(f, "loss={}", self.loss)?;
        }
        match self.burst {
            Some(BurstLoss::Mean { loss, burst_len }) => {
                next(f)?;
                write!(f, "burst={loss}/{burst_len}")?;
            }
            Some(BurstLoss::Transitions { p, r }) => {
                next(f)?;
                write!(f, "ge={p}/{r}")?;
            }
            None => {}
        }
        for (key, p) in [
            ("hec", self.hec_single),
            ("hec2", self.hec_multi),
            ("ber", self.ber),
        ] {
            if !p.is_zero() {
                next(f)?;
                write!(f, "{key}={p}")?;
            }
        }
        if self.delay != Duration::ZERO {
            next(f)?;
            f.write_str("delay=")?;
            fmt_duration(f, self.delay)?;
        }
        match self.jitter {
            Jitter::None => {}
            Jitter::Uniform(d) => {
                next(f)?;
                f.write_str("jitter=")?;
                fmt_duration(f, d)?;
            }
            Jitter::Exponential(d) => {
                next(f)?;
                f.write_str("jitter=")?;
                fmt_duration(f, d)?;
                f.write_str(":exp")?;
            }
        }
        if self.seed != 0 {
            next(f)?;
            write!(f, "seed={}", self.seed)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(x: f64) -> Probability {
        Probability::new(x).unwrap()
    }

    fn err(s: &str) -> (usize, String, ParseErrorKind) {
        let e = s.parse::<Impairments>().unwrap_err();
        (e.at, e.part, e.kind)
    }

    #[test]
    fn parse_every_key() {
        let imp: Impairments =
            "loss=1%,burst=0.5%/8,hec=1e-4,hec2=0.00001,ber=1e-6,delay=1.5ms,jitter=20us:exp,seed=7"
                .parse()
                .unwrap();
        assert_eq!(
            imp,
            Impairments {
                loss: p(0.01),
                burst: Some(BurstLoss::mean(0.005, 8.0).unwrap()),
                hec_single: p(1e-4),
                hec_multi: p(1e-5),
                ber: p(1e-6),
                delay: Duration::from_micros(1500),
                jitter: Jitter::Exponential(Duration::from_micros(20)),
                seed: 7,
            }
        );
        assert_eq!(
            imp.to_string(),
            "loss=0.01,burst=0.005/8,hec=1e-4,hec2=1e-5,ber=1e-6,delay=1500us,jitter=20us:exp,seed=7"
        );
        let ge: Impairments = "seed=1,ge=0.01/0.5,jitter=3µs:uniform".parse().unwrap();
        assert_eq!(
            ge.burst,
            Some(BurstLoss::Transitions {
                p: p(0.01),
                r: p(0.5)
            })
        );
        assert_eq!(ge.jitter, Jitter::Uniform(Duration::from_nanos(3000)));
        assert_eq!(ge.to_string(), "ge=0.01/0.5,jitter=3us,seed=1");
    }

    #[test]
    fn none_and_empty() {
        assert_eq!("".parse::<Impairments>(), Ok(Impairments::default()));
        assert_eq!("none".parse::<Impairments>(), Ok(Impairments::default()));
        assert_eq!(Impairments::default().to_string(), "none");
        assert!(Impairments::default().is_none());
        let seeded: Impairments = "seed=5".parse().unwrap();
        assert!(seeded.is_none());
        assert_eq!(seeded.to_string(), "seed=5");
    }

    #[test]
    fn durations() {
        let d = |s: &str| parse_duration(s);
        assert_eq!(d("0"), Ok(Duration::ZERO));
        assert_eq!(d("250ns"), Ok(Duration::from_nanos(250)));
        assert_eq!(d("1.0ns"), Ok(Duration::from_nanos(1)));
        assert_eq!(d("0.000000001s"), Ok(Duration::from_nanos(1)));
        assert_eq!(d("2.5us"), Ok(Duration::from_nanos(2500)));
        assert_eq!(d("18446744073709551615ns"), Ok(Duration::MAX));
        assert_eq!(
            d("18446744073709551616ns"),
            Err(ParseErrorKind::BadDuration)
        );
        assert_eq!(d("18446744074s"), Err(ParseErrorKind::BadDuration));
        assert_eq!(d("1.5ns"), Err(ParseErrorKind::BadDuration));
        assert_eq!(d("0.0000000001s"), Err(ParseErrorKind::BadDuration));
        assert_eq!(d("5"), Err(ParseErrorKind::MissingUnit));
        assert_eq!(d("5min"), Err(ParseErrorKind::BadUnit));
        assert_eq!(d("ms"), Err(ParseErrorKind::BadNumber));
        assert_eq!(d("1.ms"), Err(ParseErrorKind::BadNumber));
        assert_eq!(d(".5ms"), Err(ParseErrorKind::BadNumber));
        assert_eq!(d("1..5ms"), Err(ParseErrorKind::BadNumber));
        assert_eq!(d("-1ms"), Err(ParseErrorKind::BadNumber));
    }

    #[test]
    fn errors_name_the_part_and_why() {
        use ParseErrorKind::*;
        assert_eq!(err("loss=1%,,ber=0"), (8, String::new(), EmptyPart));
        assert_eq!(err("loss"), (0, "loss".into(), MissingValue));
        assert_eq!(err("loss=1%,drop=3%"), (8, "drop=3%".into(), UnknownKey));
        assert_eq!(err("loss=1%,loss=2%"), (8, "loss=2%".into(), DuplicateKey));
        assert_eq!(
            err("burst=1%/4,ge=0.1/0.5"),
            (11, "ge=0.1/0.5".into(), DuplicateKey)
        );
        assert_eq!(err("loss=lots"), (0, "loss=lots".into(), BadNumber));
        assert_eq!(err("loss=nan"), (0, "loss=nan".into(), BadNumber));
        assert_eq!(err("loss=inf%"), (0, "loss=inf%".into(), BadNumber));
        assert!(matches!(err("loss=101%").2, OutOfRange(_)));
        assert!(matches!(err("ber=-1e-6").2, OutOfRange(_)));
        assert_eq!(err("burst=1%").2, MissingSlash);
        assert!(matches!(err("burst=1%/0.5").2, OutOfRange(_)));
        assert!(matches!(err("burst=100%/4").2, OutOfRange(_)));
        // 60 % loss cannot be had with bursts of one cell (p would be 1.5).
        assert!(matches!(err("burst=60%/1").2, OutOfRange(_)));
        assert_eq!(err("jitter=5us:gauss").2, BadJitterShape);
        assert_eq!(err("hec=0.6,hec2=0.5"), (8, "hec2=0.5".into(), HecSum));
        assert_eq!(err("seed=-1").2, BadNumber);
        assert_eq!(err("delay=5"), (0, "delay=5".into(), MissingUnit));
        let e = "loss=1%,drop=3%".parse::<Impairments>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "at 8: \"drop=3%\": unknown key (loss, burst, ge, hec, hec2, ber, delay, jitter, seed)"
        );
    }

    fn probability() -> impl Strategy<Value = Probability> {
        prop_oneof![
            Just(Probability::ZERO),
            Just(Probability::ONE),
            (0.0f64..=1.0).prop_map(p),
            (-300.0f64..0.0).prop_map(|e| p(10f64.powf(e))),
        ]
    }

    fn half() -> impl Strategy<Value = Probability> {
        (0.0f64..=0.5).prop_map(p)
    }

    fn duration() -> impl Strategy<Value = Duration> {
        prop_oneof![
            any::<u64>().prop_map(Duration::from_nanos),
            (0u64..1000).prop_map(Duration::from_micros),
            (0u64..1000).prop_map(Duration::from_millis),
        ]
    }

    fn impairments() -> impl Strategy<Value = Impairments> {
        let burst = prop_oneof![
            Just(None),
            ((0.0f64..0.5), (1.0f64..1e6)).prop_map(|(l, n)| Some(BurstLoss::mean(l, n).unwrap())),
            (probability(), probability()).prop_map(|(p, r)| Some(BurstLoss::Transitions { p, r })),
        ];
        let jitter = prop_oneof![
            Just(Jitter::None),
            duration().prop_map(Jitter::Uniform),
            duration().prop_map(Jitter::Exponential),
        ];
        (
            probability(),
            burst,
            (half(), half()),
            probability(),
            duration(),
            jitter,
            any::<u64>(),
        )
            .prop_map(
                |(loss, burst, (hec_single, hec_multi), ber, delay, jitter, seed)| Impairments {
                    loss,
                    burst,
                    hec_single,
                    hec_multi,
                    ber,
                    delay,
                    jitter,
                    seed,
                },
            )
    }

    proptest! {
        #[test]
        fn p_text_round_trips(imp in impairments()) {
            let text = imp.to_string();
            prop_assert_eq!(text.parse::<Impairments>(), Ok(imp), "{}", text);
        }

        #[test]
        fn p_parser_never_panics(s in "\\PC*") {
            let _ = s.parse::<Impairments>();
            let _ = s.parse::<natm_core::LineRate>();
        }

        #[test]
        fn p_parser_never_panics_near_the_syntax(
            s in "((loss|burst|ge|hec|hec2|ber|delay|jitter|seed|x)(=[-+0-9.e%/:µsmunexpifaINF]{0,12})?,?){0,6}"
        ) {
            if let Ok(imp) = s.parse::<Impairments>() {
                // Whatever parses prints as text that parses back to it.
                prop_assert_eq!(imp.to_string().parse::<Impairments>(), Ok(imp));
            }
        }
    }
}

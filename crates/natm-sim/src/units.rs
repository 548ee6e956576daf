//! The units of the simulator's command-line settings: event rates (`100k`, `1.5M`) and
//! durations (`20ms`, `1.5s`), as `natm sim eventbuilder` reads them.
//!
//! What it is not: a general unit library; the scenario file's durations are
//! [`crate::scenario::parse_duration`]'s. Call contract: pure functions of the text; an
//! error is one sentence naming the text and what was expected, for the caller to prefix
//! with the option's name.

use natm_core::Duration;

/// A rate in Hz: a positive number, optionally followed by `k` (×1000) or `M` (×10⁶).
pub fn parse_hz(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (num, mult) = match t.strip_suffix('k') {
        Some(n) => (n, 1e3),
        None => match t.strip_suffix('M') {
            Some(n) => (n, 1e6),
            None => (t, 1.0),
        },
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v * mult),
        _ => Err(format!(
            "{text:?} is not a positive number of events per second (e.g. 1000, 100k, 1.5M)"
        )),
    }
}

/// A duration: a non-negative decimal number and a unit, `ns`, `us`, `ms` or `s`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let bad = || format!("{text:?} is not a duration (a number and ns, us, ms or s: 20ms, 1.5s)");
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(bad)?;
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(bad()),
    };
    let v: f64 = num.parse().map_err(|_| bad())?;
    let ns = (v * scale).round();
    if !(ns.is_finite() && ns < u64::MAX as f64) {
        return Err(format!("{text:?} is too long"));
    }
    Ok(Duration::from_nanos(ns as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_durations_parse_with_their_units() {
        assert_eq!(parse_hz("100k"), Ok(100_000.0));
        assert_eq!(parse_hz("1.5M"), Ok(1_500_000.0));
        assert_eq!(parse_hz("250"), Ok(250.0));
        for bad in ["0", "-3", "abc", "", "k", "inf", "NaN"] {
            assert!(parse_hz(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_duration("20ms"), Ok(Duration::from_millis(20)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("7ns"), Ok(Duration::from_nanos(7)));
        for bad in ["", "5", "ms", "1h", "1e400s", "-1s", "1..2s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}

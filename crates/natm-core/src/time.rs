//! Time as plain integers of nanoseconds.
//!
//! An OC-3c cell slot lasts about 2.83 µs, so microseconds are too coarse; `u64` nanoseconds
//! cover 584 years. [`Instant`] counts from an arbitrary epoch chosen by the driver (the
//! real-time runtime converts the wall clock in exactly one place; the simulator starts at 0).
//! Arithmetic saturates instead of wrapping, so a clock that steps backwards gives a zero
//! [`Duration`], never a huge one.

use core::fmt;
use core::ops::{Add, AddAssign, Sub};

/// A point in time, in nanoseconds since the driver's epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(u64);

impl Instant {
    /// The driver's epoch.
    pub const ZERO: Instant = Instant(0);

    /// An instant `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The time from `earlier` to `self`, or zero if `earlier` is later.
    pub const fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, or `None` on overflow.
    pub const fn checked_add(self, d: Duration) -> Option<Instant> {
        match self.0.checked_add(d.0) {
            Some(n) => Some(Instant(n)),
            None => None,
        }
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);
    /// The longest representable span.
    pub const MAX: Duration = Duration(u64::MAX);

    /// A span of `n` nanoseconds.
    pub const fn from_nanos(n: u64) -> Self {
        Duration(n)
    }
    /// A span of `n` microseconds (saturating).
    pub const fn from_micros(n: u64) -> Self {
        Duration(n.saturating_mul(1_000))
    }
    /// A span of `n` milliseconds (saturating).
    pub const fn from_millis(n: u64) -> Self {
        Duration(n.saturating_mul(1_000_000))
    }
    /// A span of `n` seconds (saturating).
    pub const fn from_secs(n: u64) -> Self {
        Duration(n.saturating_mul(1_000_000_000))
    }
    /// The span in nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// The span in whole microseconds (truncated).
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    /// Saturates at the end of time rather than wrapping.
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturates at zero: time that appears to run backwards yields an empty span.
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, o: Duration) -> Duration {
        Duration(self.0.saturating_add(o.0))
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n < 1_000 {
            write!(f, "{n} ns")
        } else if n < 1_000_000 {
            write!(f, "{}.{:03} µs", n / 1_000, n % 1_000)
        } else if n < 1_000_000_000 {
            write!(f, "{}.{:03} ms", n / 1_000_000, (n / 1_000) % 1_000)
        } else {
            write!(f, "{}.{:03} s", n / 1_000_000_000, (n / 1_000_000) % 1_000)
        }
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:09}",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backwards_time_is_zero_not_wrapped() {
        let a = Instant::from_nanos(100);
        let b = Instant::from_nanos(40);
        assert_eq!(b - a, Duration::ZERO);
        assert_eq!(a - b, Duration::from_nanos(60));
    }

    #[test]
    fn add_saturates() {
        assert_eq!(
            Instant::from_nanos(u64::MAX - 1) + Duration::from_secs(1),
            Instant::from_nanos(u64::MAX)
        );
        assert_eq!(
            Instant::from_nanos(u64::MAX).checked_add(Duration::from_nanos(1)),
            None
        );
    }

    #[test]
    fn display_picks_unit() {
        assert_eq!(Duration::from_nanos(999).to_string(), "999 ns");
        assert_eq!(Duration::from_nanos(2_830).to_string(), "2.830 µs");
        assert_eq!(Duration::from_millis(1500).to_string(), "1.500 s");
        assert_eq!(
            Instant::from_nanos(1_000_000_001).to_string(),
            "1.000000001"
        );
    }
}

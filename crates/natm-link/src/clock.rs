//! [`Epoch`]: where the real clock meets the pure cores' time.
//!
//! natm's protocol cores take time as a `natm_core::Instant` (nanoseconds from an origin
//! the caller chooses). A runtime that drives a core on the real clock takes a
//! `std::time::Instant` as that origin and converts both ways here, and nowhere else.

use std::time::{Duration, Instant as StdInstant};

use natm_core::Instant;

/// The real instant that is `Instant::from_nanos(0)` for a core.
#[derive(Clone, Copy, Debug)]
pub struct Epoch(StdInstant);

impl Epoch {
    /// An epoch at the present instant.
    pub fn now() -> Epoch {
        Epoch(StdInstant::now())
    }

    /// The present as the core's time (saturating after 584 years).
    pub fn elapsed(&self) -> Instant {
        self.at(StdInstant::now())
    }

    /// A real instant already read, as the core's time (saturating; an instant before the
    /// epoch is its origin): one clock read can serve several uses.
    pub fn at(&self, t: StdInstant) -> Instant {
        Instant::from_nanos(
            u64::try_from(t.saturating_duration_since(self.0).as_nanos()).unwrap_or(u64::MAX),
        )
    }

    /// The real instant of a core's time.
    pub fn to_std(&self, t: Instant) -> StdInstant {
        self.0 + Duration::from_nanos(t.as_nanos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_time_and_real_time_agree() {
        let e = Epoch::now();
        let t = e.elapsed();
        let real = e.to_std(t);
        assert!(real <= StdInstant::now());
        assert_eq!(
            e.to_std(Instant::from_nanos(1_000)),
            e.0 + Duration::from_micros(1)
        );
        assert!(e.elapsed() >= t, "time never goes back");
        assert_eq!(e.at(e.0 + Duration::from_nanos(7)), Instant::from_nanos(7));
        assert_eq!(
            e.at(e.0 - Duration::from_nanos(1)),
            Instant::from_nanos(0),
            "before the epoch is its origin"
        );
    }
}

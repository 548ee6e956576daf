//! Latency histograms of `natm perf rr`: an HdrHistogram of nanoseconds with 3 significant
//! digits (every recorded value is within 0.1% of what is reported), and the summary the
//! command prints.
//!
//! Quantiles are HdrHistogram's `value_at_quantile` (the smallest recorded value, to the
//! histogram's precision, at or below which the quantile's share of samples lies), so they
//! are monotone: p50 ≤ p90 ≤ p99 ≤ p99.9 ≤ max.

use hdrhistogram::Histogram;
use serde::Serialize;

/// The longest round trip recorded as itself (one minute); longer ones are clamped to it.
pub const MAX_NS: u64 = 60_000_000_000;

/// A histogram of round-trip times in nanoseconds.
pub struct Latencies {
    histogram: Histogram<u64>,
    clamped: u64,
}

impl Latencies {
    /// An empty histogram covering 1 ns to [`MAX_NS`].
    pub fn new() -> Latencies {
        Latencies {
            histogram: Histogram::new_with_bounds(1, MAX_NS, 3)
                .expect("constant bounds 1..MAX_NS with 3 digits are valid"),
            clamped: 0,
        }
    }

    /// Records one round trip.
    pub fn record(&mut self, ns: u64) {
        let v = ns.clamp(1, MAX_NS);
        if v != ns.max(1) {
            self.clamped += 1;
        }
        // In bounds by the clamp, so this cannot fail.
        let _ = self.histogram.record(v);
    }

    /// Samples recorded.
    pub fn len(&self) -> u64 {
        self.histogram.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.histogram.is_empty()
    }

    /// The summary; `None` when nothing was recorded.
    pub fn summary(&self) -> Option<LatencySummary> {
        let h = &self.histogram;
        if h.is_empty() {
            return None;
        }
        Some(LatencySummary {
            count: h.len(),
            min_ns: h.min(),
            mean_ns: h.mean(),
            p50_ns: h.value_at_quantile(0.5),
            p90_ns: h.value_at_quantile(0.9),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
            clamped: self.clamped,
        })
    }
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies::new()
    }
}

/// Quantiles of a run's round trips, in nanoseconds.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct LatencySummary {
    /// Round trips recorded.
    pub count: u64,
    /// The shortest.
    pub min_ns: u64,
    /// The mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// The longest (to the histogram's precision).
    pub max_ns: u64,
    /// Round trips longer than [`MAX_NS`], recorded as [`MAX_NS`].
    pub clamped: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_a_known_spread() {
        let mut l = Latencies::new();
        assert!(l.summary().is_none());
        for ns in 1..=1000u64 {
            l.record(ns * 1000);
        }
        let s = l.summary().unwrap();
        assert_eq!(s.count, 1000);
        // 3 significant digits: within 0.1%.
        let near = |got: u64, want: u64| got.abs_diff(want) * 1000 <= want;
        assert!(near(s.p50_ns, 500_000), "{s:?}");
        assert!(near(s.p90_ns, 900_000), "{s:?}");
        assert!(near(s.p99_ns, 990_000), "{s:?}");
        assert!(near(s.p999_ns, 999_000), "{s:?}");
        assert!(near(s.max_ns, 1_000_000), "{s:?}");
        assert!(near(s.min_ns, 1000), "{s:?}");
        assert_eq!(s.clamped, 0);
    }

    #[test]
    fn out_of_range_values_are_clamped_and_counted() {
        let mut l = Latencies::new();
        l.record(0);
        l.record(MAX_NS * 2);
        let s = l.summary().unwrap();
        assert_eq!(s.count, 2);
        assert_eq!(s.clamped, 1, "0 ns is recorded as 1 ns, not as a clamp");
        assert!(s.max_ns >= MAX_NS - MAX_NS / 1000);
    }
}

//! The one place natm's measurements turn samples into figures: nearest-rank quantiles of
//! sorted integer samples, medians, and the median-and-range [`Spread`] of repeated runs.
//!
//! Two medians are in use and both are kept, so that no figure changes: [`Spread::of`]
//! takes the upper middle value of an even count (a value that was measured, what
//! `natm perf switch` and `natm demo` report), [`median`] and [`Spread::of_finite`] the mean
//! of the two middle values (what `natm perf link` and `natm perf calibrate` report).
//! Latency histograms (HdrHistogram's quantiles) are [`crate::histo`].

use serde::Serialize;

/// The `q`-quantile (0..=1) of sorted samples, nearest rank; 0 for no samples.
pub fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The value at `q` (0 the least, 1 the greatest) of sorted values, by the nearest index
/// (`round((n − 1) · q)`); 0 for no values.
pub fn at_fraction(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return 0.0;
    }
    sorted[((n - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize]
}

/// The upper median of sorted values (the middle one, or the upper of the two middle
/// ones); 0 for no values.
pub fn upper_median(sorted: &[f64]) -> f64 {
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// The median of `v` (sorted in place): the middle value, or the mean of the two middle
/// ones; NaN for no values.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Median, least and greatest of one figure over repeated runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    /// The median (see [`Spread::of`] and [`Spread::of_finite`] for which).
    pub median: f64,
    /// The least.
    pub min: f64,
    /// The greatest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`, its median the upper one of an even count (empty: all
    /// zero).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Spread {
        let mut v: Vec<f64> = values.into_iter().collect();
        v.sort_by(f64::total_cmp);
        Spread {
            median: upper_median(&v),
            min: v.first().copied().unwrap_or(0.0),
            max: v.last().copied().unwrap_or(0.0),
        }
    }

    /// The spread of the finite ones of `values`, its median the mean of the two middle
    /// ones of an even count; `None` when none is finite.
    pub fn of_finite(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        let median = median(&mut v);
        Some(Spread {
            median,
            min: v[0],
            max: v[v.len() - 1],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let s: Vec<u64> = (1..=10).collect();
        assert_eq!(quantile(&s, 0.5), 5);
        assert_eq!(quantile(&s, 0.9), 9);
        assert_eq!(quantile(&s, 0.99), 10);
        assert_eq!(quantile(&s, 0.0), 1);
        assert_eq!(quantile(&[], 0.5), 0);
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }

    #[test]
    fn spread_is_upper_median_and_range() {
        let s = Spread::of([3.0, 1.0, 4.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (3.0, 1.0, 4.0));
        let s = Spread::of([]);
        assert_eq!((s.median, s.min, s.max), (0.0, 0.0, 0.0));
    }

    #[test]
    fn finite_spread_skips_nan_and_averages_the_middle() {
        let s = Spread::of_finite(&[f64::NAN, 4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.5, 1.0, 4.0));
        assert_eq!(Spread::of_finite(&[f64::NAN]), None);
    }

    #[test]
    fn fractions_take_the_nearest_index() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(at_fraction(&v, 0.5), 3.0);
        assert_eq!(at_fraction(&v, 1.0), 5.0);
        assert_eq!(at_fraction(&[], 0.5), 0.0);
    }
}

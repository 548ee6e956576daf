//! The TPDU size that follows the loss rate.
//!
//! A TPDU of `c` cells survives random cell loss `p` with probability `(1 − p)^c` and
//! carries `48·c − 20` payload bytes (the 12-byte header and AAL5's 8-byte trailer take
//! the rest), so the expected goodput per cell sent is `(1 − p)^c · (48·c − 20) / (48·c)`.
//! Large TPDUs waste less on headers, small ones lose less to a cell's loss: at 2 % loss
//! an 8 KiB TPDU (172 cells) gets through 3 % of the time. [`best_tpdu_size`] picks the
//! payload size with the best expectation, in whole cells (a payload that fills its last
//! cell), in integer arithmetic. The reliable sender then segments new messages with it
//! ([`Endpoint::set_tpdu_size`](crate::Endpoint::set_tpdu_size)); the loss rate is the
//! driver's measurement (for instance the link's cell counters), or the sender's own
//! ([`Config::adaptive_tpdu_size`](crate::Config::adaptive_tpdu_size): the TPDUs SMART found
//! lost, converted to a cell loss by [`cell_loss_from_frames`]).

use crate::config::AAL5_MAX_SDU;
use crate::header::DATA_HEADER_LEN;

/// Parts per billion.
pub const PPB: u64 = 1_000_000_000;

/// The payload size (bytes, at most `max`, at least 28: one cell) that maximises expected
/// goodput under random cell loss of `cell_loss_ppb` parts per billion.
pub fn best_tpdu_size(cell_loss_ppb: u64, max: usize) -> usize {
    let overhead = DATA_HEADER_LEN + 8;
    let max_cells = (max.min(AAL5_MAX_SDU - DATA_HEADER_LEN) + overhead) / 48;
    let max_cells = max_cells.max(1) as u64;
    if cell_loss_ppb == 0 {
        // Nothing lost: the largest frame carries the most per cell.
        return (48 * max_cells as usize - overhead).min(max);
    }
    // (1 − p) in fixed point with 62 fraction bits, raised one cell at a time.
    let keep = u128::from(PPB - cell_loss_ppb.min(PPB)) * (1u128 << 62) / u128::from(PPB);
    let mut survive: u128 = 1 << 62;
    let (mut best, mut best_score) = (1u64, 0u128);
    for c in 1..=max_cells {
        survive = (survive * keep) >> 62;
        let payload = u128::from(48 * c) - overhead as u128;
        // Goodput per cell, up to the common factor 1/48.
        let score = survive * payload / u128::from(c);
        if score > best_score {
            best = c;
            best_score = score;
        }
    }
    (48 * best as usize - overhead).min(max)
}

/// The expected goodput per cell sent of TPDUs of `payload` bytes under random cell loss
/// of `cell_loss_ppb`, in parts per million of a cell's 48 bytes.
pub fn expected_goodput_ppm(cell_loss_ppb: u64, payload: usize) -> u64 {
    let c = crate::frame_cells(DATA_HEADER_LEN + payload);
    goodput_ppm_of(survival(cell_loss_ppb, u64::from(c)), payload, c)
}

/// Goodput, ppm of the line, of a `payload` in frames of `cells` cells that survive with
/// probability `survive` (62 fraction bits): survival · payload / (48 · cells).
pub(crate) fn goodput_ppm_of(survive: u128, payload: usize, cells: u32) -> u64 {
    ((survive * payload as u128 * 1_000_000 / u128::from(48 * cells)) >> 62) as u64
}

/// `(1 − p)^cells` in fixed point with 62 fraction bits, `p` in ppb.
fn survival(p: u64, cells: u64) -> u128 {
    survivals(p).nth(cells as usize).map_or(0, u128::from)
}

/// `(1 − p)^c` for `c` = 0, 1, 2, … in fixed point with 62 fraction bits, `p` in ppb.
pub(crate) fn survivals(p: u64) -> impl Iterator<Item = u64> {
    let keep = u128::from(PPB - p.min(PPB)) * (1u128 << 62) / u128::from(PPB);
    core::iter::successors(Some(1u64 << 62), move |&s| {
        // At most 2^62 · 2^62 before the shift, and at most 2^62 after.
        Some(((u128::from(s) * keep) >> 62) as u64)
    })
}

/// The random cell loss (ppb) under which frames of `cells` cells are lost `lost` times in
/// `total`: the `p` with `1 − (1 − p)^cells = lost / total`, to within a part per billion
/// (bisection, integer arithmetic).
pub fn cell_loss_from_frames(lost: u64, total: u64, cells: u64) -> u64 {
    if total == 0 || lost == 0 {
        return 0;
    }
    if lost >= total {
        return PPB;
    }
    let cells = cells.max(1);
    let want = u128::from(total - lost) * (1u128 << 62) / u128::from(total);
    let (mut lo, mut hi) = (0u64, PPB);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if survival(mid, cells) > want {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The expectation in floating point, for the check below.
    fn goodput(p: f64, payload: usize) -> f64 {
        let c = crate::frame_cells(payload + DATA_HEADER_LEN) as i32;
        (1.0 - p).powi(c) * payload as f64 / f64::from(c)
    }

    #[test]
    fn test_size_follows_the_loss() {
        // Lossless: the largest that fills whole cells (8,188 B in 171 cells carries more per
        // cell than 8,192 B in 172).
        assert_eq!(best_tpdu_size(0, 8192), 8188);
        assert_eq!(best_tpdu_size(0, 65_523), 65_500);
        let mut last = usize::MAX;
        for ppb in [100_000, 1_000_000, 10_000_000, 20_000_000, 100_000_000] {
            let s = best_tpdu_size(ppb, 65_523);
            assert!(s < last, "{ppb}: {s}");
            last = s;
            // Within a cell of the best of every size.
            let p = ppb as f64 / PPB as f64;
            let best = (28..=65_523)
                .step_by(48)
                .map(|n| goodput(p, n))
                .fold(0.0, f64::max);
            assert!(goodput(p, s) >= best * 0.999, "{ppb}: {s}");
        }
        assert_eq!(best_tpdu_size(PPB, 65_523), 28);
    }

    #[test]
    fn test_expected_goodput() {
        // Lossless: 1,500 B in 32 cells carry 97.7 % of their bytes.
        assert_eq!(expected_goodput_ppm(0, 1_500), 976_562);
        // 1 % cell loss: 27.5 % of 32-cell frames lost; 316 B in 7 cells do better.
        let (big, small) = (
            expected_goodput_ppm(10_000_000, 1_500),
            expected_goodput_ppm(10_000_000, 316),
        );
        assert!((big as f64 - 0.725 * 976_562.0).abs() < 1_000.0, "{big}");
        assert!(small > big + big / 5, "{small} {big}");
        assert_eq!(expected_goodput_ppm(PPB, 1_500), 0);
    }

    #[test]
    fn test_cell_loss_from_frames() {
        assert_eq!(cell_loss_from_frames(0, 100, 32), 0);
        assert_eq!(cell_loss_from_frames(5, 5, 32), PPB);
        // 1 % cell loss loses 27.5 % of 32-cell frames and 82.2 % of 172-cell ones.
        for (cells, flr) in [(32u64, 0.275_000_6), (172, 0.822_498)] {
            let lost = (flr * 1e6) as u64;
            let p = cell_loss_from_frames(lost, 1_000_000, cells);
            assert!((p as f64 - 1e7).abs() < 1e7 * 0.001, "{cells}: {p}");
        }
        assert_eq!(cell_loss_from_frames(1, 2, 1), 500_000_000);
    }
}

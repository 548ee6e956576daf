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
//! driver's measurement (for instance the link's cell counters, or the transport's own
//! TPDU loss converted with the TPDU's cell count).

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
}

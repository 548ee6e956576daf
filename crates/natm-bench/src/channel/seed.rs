//! The seed's figures that `natm perf transport` draws and tabulates beside natm's, and the
//! AAL5 ceiling it compares natm's goodput with.
//!
//! The seed's numbers are those quoted in issue 25 from Ahuja, Keshav & Saran (INFOCOM
//! 1996: the native-mode transport on 486 PCs with FORE HPA-200 adapters at OC-3c); the
//! paper's own data points are not in this repository. What the issue quotes: reliable
//! goodput of about 50 Mbit/s at 8 KiB messages, a peak of 54 Mbit/s and a half-power
//! point of about 2,200 bytes. The *fit* is the curve r∞·n/(n½ + n) through the peak and
//! the half-power point; it is this module's, not the paper's (at 8 KiB it gives 42.6
//! Mbit/s, below the quoted 50: the quoted points do not lie on one such curve).

use natm_core::LineRate;
use natm_transport::frame_cells;
use natm_transport::header::DATA_HEADER_LEN;

/// The seed's peak goodput, r∞ of the fit, bit/s.
pub const PEAK_BPS: f64 = 54e6;
/// The seed's half-power point, n½ of the fit, bytes.
pub const HALF_POWER_BYTES: f64 = 2200.0;
/// The points the issue quotes: (message size in bytes, goodput in bit/s): about 50
/// Mbit/s at 8 KiB, and the half-power point at half the peak.
pub const POINTS: [(f64, f64); 2] = [(HALF_POWER_BYTES, PEAK_BPS / 2.0), (8192.0, 50e6)];

/// The fitted seed goodput at `size`-byte messages, bit/s: r∞·n/(n½ + n).
pub fn fit(size: f64) -> f64 {
    if size <= 0.0 {
        return 0.0;
    }
    PEAK_BPS * size / (HALF_POWER_BYTES + size)
}

/// Cells that carry one `size`-byte message in TPDUs of `tpdu` payload bytes: each TPDU
/// one AAL5 frame of the 12-byte data header, its payload, the 8-byte trailer and the pad.
pub fn message_cells(size: usize, tpdu: usize) -> u64 {
    let tpdu = tpdu.max(1);
    let (full, rest) = (size / tpdu, size % tpdu);
    let mut cells = full as u64 * u64::from(frame_cells(DATA_HEADER_LEN + tpdu));
    if rest > 0 || size == 0 {
        cells += u64::from(frame_cells(DATA_HEADER_LEN + rest));
    }
    cells
}

/// The AAL5 ceiling at `size`-byte messages on a link of `line`: message bits per second
/// when every cell slot of the link carries the messages' cells and nothing else; `None`
/// on an unlimited link (no cell slots: no ceiling).
pub fn aal5_ceiling(size: usize, tpdu: usize, line: LineRate) -> Option<f64> {
    let (num, den) = line.exact()?;
    let cells_per_s = num as f64 / den as f64;
    Some(size as f64 * 8.0 * cells_per_s / message_cells(size, tpdu) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_passes_through_the_half_power_point_and_tends_to_the_peak() {
        assert!((fit(HALF_POWER_BYTES) - PEAK_BPS / 2.0).abs() < 1e-6);
        assert!(fit(1e9) < PEAK_BPS && fit(1e9) > 0.999 * PEAK_BPS);
        assert_eq!(fit(0.0), 0.0);
        assert!((fit(8192.0) / 1e6 - 42.57).abs() < 0.01);
    }

    #[test]
    fn message_cells_count_each_tpdu_frame() {
        // 64 B: 12 + 64 + 8 = 84 bytes, 2 cells.
        assert_eq!(message_cells(64, 8192), 2);
        // 28 B: 12 + 28 + 8 = 48, exactly 1 cell.
        assert_eq!(message_cells(28, 8192), 1);
        assert_eq!(message_cells(29, 8192), 2);
        // 8 KiB: 12 + 8192 + 8 = 8212 bytes, 172 cells; 81,920 B is ten of them.
        assert_eq!(message_cells(8192, 8192), 172);
        assert_eq!(message_cells(81_920, 8192), 1720);
        // 8,193 B: a full TPDU and one of 1 byte (1 cell).
        assert_eq!(message_cells(8193, 8192), 173);
    }

    #[test]
    fn the_ceiling_at_oc3_is_below_the_cell_payload_rate() {
        use natm_core::PhyRate;
        let payload = PhyRate::OC3.payload_bps() as f64;
        // 8 KiB: 8192 of the 172 × 48 bytes carried.
        let c = aal5_ceiling(8192, 8192, LineRate::OC3).unwrap();
        assert!((c / payload - 8192.0 / (172.0 * 48.0)).abs() < 1e-9, "{c}");
        // 64 B fill 64 of 96 bytes.
        let c = aal5_ceiling(64, 8192, LineRate::OC3).unwrap();
        assert!((c / payload - 64.0 / 96.0).abs() < 1e-9, "{c}");
        // Any whole cells/s; none on an unlimited link.
        let c = aal5_ceiling(64, 8192, LineRate::cells(1000).unwrap()).unwrap();
        assert!((c - 64.0 * 8.0 * 1000.0 / 2.0).abs() < 1e-9, "{c}");
        assert_eq!(aal5_ceiling(64, 8192, LineRate::Unlimited), None);
    }
}

//! The line and cell rates of the ATM physical layers that natm names (atm-facts §4.4).
//!
//! Each rate is kept as an exact fraction of cells per second, derived from its physical
//! layer, so that the figures users know come out of the arithmetic rather than a table:
//!
//! * **OC-3c / STM-1** (I.432.2, SONET STS-3c): 155.52 Mbit/s, of which 260 of 270 columns,
//!   149.76 Mbit/s, carry cells: 149 760 000 / 424 = 353 207.547 cells/s.
//! * **OC-12c / STM-4**: 1040 of 1080 columns of 622.08 Mbit/s, 599.04 Mbit/s:
//!   1 412 830.19 cells/s.
//! * **25.6 Mbit/s** (ATM Forum af-phy-0040): 25.6 Mbit/s less 8000 sync bytes a second,
//!   54-byte coded cells: (3 200 000 − 8000) / 54 = 59 111.1 cells/s.
//! * **DS3 PLCP** (af-phy-0054): 12 cells every 125 µs, 96 000 cells/s.
//!
//! [`LineRate::cells_per_s`] truncates as Linux does for its `ATM_OC3_PCR` and kin, which is
//! the number linux-atm users type. Not here: the emulation of a line (natm-link paces
//! cells; natm-traffic's scheduler slots a link by its cells/s).

use core::fmt;

/// Payload bits of one cell.
const PAYLOAD_BITS: u64 = 48 * 8;

/// A physical layer's cell rate, exactly: `num / den` cells/s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LineRate {
    name: &'static str,
    num: u64,
    den: u64,
}

impl LineRate {
    /// OC-3c / STM-1: 353 207.547 cells/s (Linux `ATM_OC3_PCR` 353207).
    pub const OC3: LineRate = LineRate {
        name: "oc3",
        num: 149_760_000,
        den: 424,
    };
    /// OC-12c / STM-4: 1 412 830.19 cells/s (Linux `ATM_OC12_PCR` 1412830).
    pub const OC12: LineRate = LineRate {
        name: "oc12",
        num: 599_040_000,
        den: 424,
    };
    /// The ATM Forum's 25.6 Mbit/s: 59 111.1 cells/s (Linux `ATM_25_PCR` 59111).
    pub const ATM25: LineRate = LineRate {
        name: "25m",
        num: 25_600_000 / 8 - 8000,
        den: 54,
    };
    /// DS3 with PLCP: 96 000 cells/s (Linux `ATM_DS3_PCR`).
    pub const DS3: LineRate = LineRate {
        name: "ds3",
        num: 96_000,
        den: 1,
    };
    /// Every named rate.
    pub const ALL: [LineRate; 4] = [Self::OC3, Self::OC12, Self::ATM25, Self::DS3];

    /// The rate named `name` (case-insensitive): `oc3` or `stm1`, `oc12` or `stm4`, `25m`,
    /// `ds3`.
    pub fn by_name(name: &str) -> Option<LineRate> {
        let alias = if name.eq_ignore_ascii_case("stm1") {
            "oc3"
        } else if name.eq_ignore_ascii_case("stm4") {
            "oc12"
        } else {
            name
        };
        Self::ALL
            .into_iter()
            .find(|r| r.name.eq_ignore_ascii_case(alias))
    }

    /// Its short name (`oc3`, `oc12`, `25m`, `ds3`).
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Whole cells per second, truncated as Linux's `ATM_*_PCR`.
    pub const fn cells_per_s(&self) -> u32 {
        // Every named rate is far below u32::MAX cells/s.
        (self.num / self.den) as u32
    }

    /// The exact rate as `(numerator, denominator)` cells/s.
    pub const fn exact(&self) -> (u64, u64) {
        (self.num, self.den)
    }

    /// The bit rate of cell payloads (48 bytes a cell), bit/s, truncated: the ceiling on
    /// AAL5 goodput before AAL5's own overhead.
    pub const fn payload_bps(&self) -> u64 {
        PAYLOAD_BITS * self.num / self.den
    }
}

impl fmt::Display for LineRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} cells/s)", self.name, self.cells_per_s())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// atm-facts §4.4: cells/s as Linux has them, and the 48-byte payload rate in Mbit/s to
    /// two decimals.
    #[test]
    fn rates_of_atm_facts_4_4() {
        let table = [
            (LineRate::OC3, 353_207, 13_563),
            (LineRate::OC12, 1_412_830, 54_253),
            (LineRate::ATM25, 59_111, 2_270),
            (LineRate::DS3, 96_000, 3_686),
        ];
        for (rate, cells, mbps_x100) in table {
            assert_eq!(rate.cells_per_s(), cells, "{rate}");
            let rounded = (rate.payload_bps() + 5_000) / 10_000;
            assert_eq!(rounded, mbps_x100, "{rate}");
        }
        // The fractions the table quotes: 353 207.547 and 1 412 830.19 cells/s.
        let (n, d) = LineRate::OC3.exact();
        assert_eq!(n * 1000 / d, 353_207_547);
        let (n, d) = LineRate::OC12.exact();
        assert_eq!(n * 100 / d, 141_283_018);
    }

    #[test]
    fn names() {
        assert_eq!(LineRate::by_name("OC3"), Some(LineRate::OC3));
        assert_eq!(LineRate::by_name("stm4"), Some(LineRate::OC12));
        assert_eq!(LineRate::by_name("25M"), Some(LineRate::ATM25));
        assert_eq!(LineRate::by_name("ds3").map(|r| r.name()), Some("ds3"));
        assert_eq!(LineRate::by_name("oc48"), None);
        assert_eq!(LineRate::OC3.to_string(), "oc3 (353207 cells/s)");
    }
}

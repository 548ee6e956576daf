//! Line rates: how fast a link carries cells (atm-facts §4.4).
//!
//! [`LineRate`] is a link's rate wherever natm has one: natm-netem's emulated line, a
//! natm-switch port's output, a natm-adapter's link. It is a named physical layer
//! ([`PhyRate`]), any whole number of cells per second, or unlimited (a memory ring).
//! Its text form is what topology and link files have always said: `oc3`, `stm1`, `oc12`,
//! `stm4`, `25m`, `ds3` (any case), a whole number of cells/s above 0, or `unlimited`.
//!
//! ```
//! use natm_core::rate::{LineRate, PhyRate};
//!
//! assert_eq!("OC3".parse::<LineRate>(), Ok(LineRate::OC3));
//! assert_eq!(LineRate::OC3.cells_per_s(), Some(353_207));
//! assert_eq!(PhyRate::OC3.cells_per_s(), 353_207);
//! assert_eq!("100000".parse::<LineRate>().unwrap().to_string(), "100000");
//! assert_eq!("unlimited".parse::<LineRate>().unwrap().cells_per_s(), None);
//! ```
//!
//! Each physical layer's rate is kept as an exact fraction of cells per second, derived
//! from the layer, so that the figures users know come out of the arithmetic rather than a
//! table:
//!
//! * **OC-3c / STM-1** (I.432.2, SONET STS-3c): 155.52 Mbit/s, of which 260 of 270 columns,
//!   149.76 Mbit/s, carry cells: 149 760 000 / 424 = 353 207.547 cells/s.
//! * **OC-12c / STM-4**: 1040 of 1080 columns of 622.08 Mbit/s, 599.04 Mbit/s:
//!   1 412 830.19 cells/s.
//! * **25.6 Mbit/s** (ATM Forum af-phy-0040): 25.6 Mbit/s less 8000 sync bytes a second,
//!   54-byte coded cells: (3 200 000 − 8000) / 54 = 59 111.1 cells/s.
//! * **DS3 PLCP** (af-phy-0054): 12 cells every 125 µs, 96 000 cells/s.
//!
//! [`PhyRate::cells_per_s`] truncates as Linux does for its `ATM_OC3_PCR` and kin, which is
//! the number linux-atm users type. A peak cell rate in a traffic contract is not a line
//! rate: that is [`Pcr`](crate::qos::Pcr).

use core::fmt;
use core::num::NonZeroU32;
use core::str::FromStr;

/// Payload bits of one cell.
const PAYLOAD_BITS: u64 = 48 * 8;

/// A physical layer's cell rate, exactly: `num / den` cells/s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PhyRate {
    name: &'static str,
    num: u64,
    den: u64,
}

impl PhyRate {
    /// OC-3c / STM-1: 353 207.547 cells/s (Linux `ATM_OC3_PCR` 353207).
    pub const OC3: PhyRate = PhyRate {
        name: "oc3",
        num: 149_760_000,
        den: 424,
    };
    /// OC-12c / STM-4: 1 412 830.19 cells/s (Linux `ATM_OC12_PCR` 1412830).
    pub const OC12: PhyRate = PhyRate {
        name: "oc12",
        num: 599_040_000,
        den: 424,
    };
    /// The ATM Forum's 25.6 Mbit/s: 59 111.1 cells/s (Linux `ATM_25_PCR` 59111).
    pub const ATM25: PhyRate = PhyRate {
        name: "25m",
        num: 25_600_000 / 8 - 8000,
        den: 54,
    };
    /// DS3 with PLCP: 96 000 cells/s (Linux `ATM_DS3_PCR`).
    pub const DS3: PhyRate = PhyRate {
        name: "ds3",
        num: 96_000,
        den: 1,
    };
    /// Every named rate.
    pub const ALL: [PhyRate; 4] = [Self::OC3, Self::OC12, Self::ATM25, Self::DS3];

    /// The rate named `name` (case-insensitive): `oc3` or `stm1`, `oc12` or `stm4`, `25m`,
    /// `ds3`.
    pub fn by_name(name: &str) -> Option<PhyRate> {
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

impl fmt::Display for PhyRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} cells/s)", self.name, self.cells_per_s())
    }
}

/// A link's line rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LineRate {
    /// A named physical layer, at its exact fractional cell rate.
    Phy(PhyRate),
    /// Any whole number of cells per second.
    CellsPerSec(NonZeroU32),
    /// No line rate (a memory ring): no serialisation time, a cell may leave as soon as it
    /// is offered or polled for.
    Unlimited,
}

impl LineRate {
    /// OC-3c / STM-1, 353 207.547 cells/s.
    pub const OC3: LineRate = LineRate::Phy(PhyRate::OC3);
    /// OC-12c / STM-4, 1 412 830.19 cells/s.
    pub const OC12: LineRate = LineRate::Phy(PhyRate::OC12);
    /// The ATM Forum's 25.6 Mbit/s, 59 111.1 cells/s.
    pub const ATM25: LineRate = LineRate::Phy(PhyRate::ATM25);
    /// DS3 with PLCP, 96 000 cells/s.
    pub const DS3: LineRate = LineRate::Phy(PhyRate::DS3);

    /// `n` cells per second; `None` for 0, which is no rate at all.
    pub const fn cells(n: u32) -> Option<LineRate> {
        match NonZeroU32::new(n) {
            Some(n) => Some(LineRate::CellsPerSec(n)),
            None => None,
        }
    }

    /// The exact rate as `(numerator, denominator)` cells/s, or `None` when unlimited.
    pub const fn exact(&self) -> Option<(u64, u64)> {
        match self {
            LineRate::Phy(r) => Some(r.exact()),
            LineRate::CellsPerSec(n) => Some((n.get() as u64, 1)),
            LineRate::Unlimited => None,
        }
    }

    /// Whole cells per second (at least 1; a named layer's truncated as Linux's
    /// `ATM_*_PCR`), or `None` when unlimited.
    pub const fn cells_per_s(&self) -> Option<u32> {
        match self {
            LineRate::Phy(r) => Some(r.cells_per_s()),
            LineRate::CellsPerSec(n) => Some(n.get()),
            LineRate::Unlimited => None,
        }
    }
}

impl Default for LineRate {
    /// OC-3c, 353 207.547 cells/s: the line an emulated link has unless told otherwise.
    fn default() -> LineRate {
        LineRate::OC3
    }
}

impl fmt::Display for LineRate {
    /// The text form: the layer's name, the number of cells/s, or `unlimited`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineRate::Phy(r) => f.write_str(r.name()),
            LineRate::CellsPerSec(n) => write!(f, "{n}"),
            LineRate::Unlimited => f.write_str("unlimited"),
        }
    }
}

impl FromStr for LineRate {
    type Err = LineRateParseError;
    fn from_str(s: &str) -> Result<LineRate, LineRateParseError> {
        if s.eq_ignore_ascii_case("unlimited") {
            return Ok(LineRate::Unlimited);
        }
        if let Some(r) = PhyRate::by_name(s) {
            return Ok(LineRate::Phy(r));
        }
        s.parse::<u32>()
            .ok()
            .and_then(LineRate::cells)
            .ok_or(LineRateParseError)
    }
}

/// Text that is not a line rate: not a layer's name, a whole number of cells/s above 0,
/// nor `unlimited`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineRateParseError;

impl fmt::Display for LineRateParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("expected oc3, stm1, oc12, stm4, 25m, ds3, cells/s above 0, or unlimited")
    }
}

impl core::error::Error for LineRateParseError {}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;

    use super::*;

    /// atm-facts §4.4: cells/s as Linux has them, and the 48-byte payload rate in Mbit/s to
    /// two decimals.
    #[test]
    fn rates_of_atm_facts_4_4() {
        let table = [
            (PhyRate::OC3, 353_207, 13_563),
            (PhyRate::OC12, 1_412_830, 54_253),
            (PhyRate::ATM25, 59_111, 2_270),
            (PhyRate::DS3, 96_000, 3_686),
        ];
        for (rate, cells, mbps_x100) in table {
            assert_eq!(rate.cells_per_s(), cells, "{rate}");
            let rounded = (rate.payload_bps() + 5_000) / 10_000;
            assert_eq!(rounded, mbps_x100, "{rate}");
        }
        // The fractions the table quotes: 353 207.547 and 1 412 830.19 cells/s.
        let (n, d) = PhyRate::OC3.exact();
        assert_eq!(n * 1000 / d, 353_207_547);
        let (n, d) = PhyRate::OC12.exact();
        assert_eq!(n * 100 / d, 141_283_018);
    }

    #[test]
    fn names() {
        assert_eq!(PhyRate::by_name("OC3"), Some(PhyRate::OC3));
        assert_eq!(PhyRate::by_name("stm4"), Some(PhyRate::OC12));
        assert_eq!(PhyRate::by_name("25M"), Some(PhyRate::ATM25));
        assert_eq!(PhyRate::by_name("ds3").map(|r| r.name()), Some("ds3"));
        assert_eq!(PhyRate::by_name("oc48"), None);
        assert_eq!(PhyRate::OC3.to_string(), "oc3 (353207 cells/s)");
    }

    #[test]
    fn text_form() {
        for (text, rate) in [
            ("oc3", LineRate::OC3),
            ("STM4", LineRate::OC12),
            ("25m", LineRate::ATM25),
            ("unlimited", LineRate::Unlimited),
            ("1000", LineRate::cells(1000).unwrap()),
        ] {
            assert_eq!(text.parse::<LineRate>(), Ok(rate));
        }
        assert_eq!(LineRate::default().to_string(), "oc3");
        assert_eq!(LineRate::OC12.to_string(), "oc12");
        for bad in ["0", "oc48", "", "-5", "1e6", "4294967296"] {
            assert_eq!(bad.parse::<LineRate>(), Err(LineRateParseError), "{bad:?}");
        }
        assert_eq!(LineRate::cells(0), None);
    }

    #[test]
    fn cells_per_second() {
        assert_eq!(LineRate::Unlimited.exact(), None);
        assert_eq!(LineRate::Unlimited.cells_per_s(), None);
        assert_eq!(LineRate::DS3.exact(), Some((96_000, 1)));
        assert_eq!(LineRate::OC3.cells_per_s(), Some(353_207));
        assert_eq!(LineRate::cells(7).unwrap().exact(), Some((7, 1)));
    }

    proptest::proptest! {
        #[test]
        fn display_parses_back(n in 1u32..) {
            let rate = LineRate::cells(n).unwrap();
            proptest::prop_assert_eq!(rate.to_string().parse::<LineRate>(), Ok(rate));
        }
    }
}

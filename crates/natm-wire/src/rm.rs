//! The ABR rate format carried in RM cells (ATM Forum TM 4.0 §5.10.3.1).
//!
//! Sixteen bits: a reserved bit, `nz`, a 5-bit exponent `e` and a 9-bit mantissa `m`, for
//! `rate = nz · 2^e · (1 + m/512)` cells/s. Encoding truncates, as Linux's `he.c` does.
//! The RM cell's other fields are not parsed yet (natm has no ABR).

/// A rate in the 16-bit ABR floating-point format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AbrRate(pub u16);

impl AbrRate {
    /// Encode a rate in cells/s, truncating to the representable value below it.
    pub fn from_cells_per_sec(rate: u32) -> AbrRate {
        if rate == 0 {
            return AbrRate(0);
        }
        let e = 31 - rate.leading_zeros(); // floor(log2(rate)), 0..=31
        let m = ((u64::from(rate) << 9) >> e) - 512;
        AbrRate(0x4000 | ((e as u16) << 9) | m as u16)
    }

    /// The rate in cells/s (truncated to an integer).
    pub fn cells_per_sec(self) -> u64 {
        if self.0 & 0x4000 == 0 {
            return 0;
        }
        let e = u32::from((self.0 >> 9) & 0x1F);
        let m = u64::from(self.0 & 0x1FF);
        ((512 + m) << e) >> 9
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn vectors() {
        // atm-facts.md §3.5 (linux drivers/atm/he.c rate_to_atmf).
        for (rate, code, back) in [
            (1, 0x4000, 1),
            (10, 0x4680, 10),
            (1000, 0x53E8, 1000),
            (59111, 0x5F9B, 59072),
            (353_207, 0x64B1, 352_768),
            (1_412_830, 0x68B1, 1_411_072),
        ] {
            let r = AbrRate::from_cells_per_sec(rate);
            assert_eq!(r.0, code, "rate {rate}");
            assert_eq!(r.cells_per_sec(), back, "rate {rate}");
        }
        assert_eq!(AbrRate::from_cells_per_sec(0).cells_per_sec(), 0);
    }

    proptest! {
        #[test]
        fn truncates_within_one_part_in_512(rate in 1u32..) {
            let back = AbrRate::from_cells_per_sec(rate).cells_per_sec();
            prop_assert!(back <= u64::from(rate));
            prop_assert!(u64::from(rate) - back <= u64::from(rate) / 512 + 1);
        }
    }
}

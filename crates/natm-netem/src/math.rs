//! The random draws of the emulator: independent seeded streams, uniform integers and reals,
//! the exponential law, and the first bit error of a run of bits.
//!
//! `core` has no `ln` without `std`; the `libm` crate (the Rust port of musl's libm, `no_std`)
//! provides it.

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

/// 2⁻⁵³: the spacing of the uniform reals drawn by [`Stream::unit`].
const UNIT: f64 = 1.0 / (1u64 << 53) as f64;

/// One seeded random stream. Each impairment has its own, forked from the link's seed by a
/// label, so enabling one impairment does not change what another does to the same cells.
#[derive(Clone, Debug)]
pub(crate) struct Stream(Xoshiro256PlusPlus);

impl Stream {
    /// The stream `label` of `seed`.
    pub(crate) fn new(seed: u64, label: u64) -> Stream {
        // seed_from_u64 spreads the bits (PCG32 fill), so adjacent seeds and labels give
        // unrelated states; the odd multiplier keeps (seed, label) pairs apart.
        let mixed = seed ^ label.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Stream(Xoshiro256PlusPlus::seed_from_u64(mixed))
    }

    /// A uniform real in [0, 1), on a grid of 2⁻⁵³.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * UNIT
    }

    /// A uniform real in (0, 1]: never 0, so its logarithm is finite.
    fn unit_open0(&mut self) -> f64 {
        ((self.0.next_u64() >> 11) + 1) as f64 * UNIT
    }

    /// True with probability `p` (0 never, 1 always).
    pub(crate) fn bernoulli(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// A uniform integer in `0..n` (`n > 0`), by Lemire's multiply-shift: the bias is below
    /// n / 2⁶⁴, far under anything a test can see.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.0.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// An exponential variate of mean `mean` (inverse transform), in the same unit.
    pub(crate) fn exponential(&mut self, mean: f64) -> f64 {
        -mean * libm::log(self.unit_open0())
    }
}

/// Bits of a cell payload.
pub(crate) const PAYLOAD_BITS: usize = 48 * 8;

/// Independent bit errors at a bit error rate `b` over a payload, drawn run by run: the
/// number of good bits before the next error is geometric, P(K ≥ k) = (1 − b)^k, so a cell
/// without errors (the usual case) costs one draw instead of 384.
#[derive(Clone, Debug)]
pub(crate) struct BitErrors {
    /// `survive[k] = (1 − b)^k`, k = 0..=384.
    survive: [f64; PAYLOAD_BITS + 1],
}

impl BitErrors {
    /// The table for bit error rate `b` in [0, 1]. Below about 10⁻¹⁵, 1 − b rounds to 1 and
    /// no error is ever drawn.
    pub(crate) fn new(b: f64) -> BitErrors {
        let mut survive = [1.0; PAYLOAD_BITS + 1];
        for k in 1..=PAYLOAD_BITS {
            survive[k] = survive[k - 1] * (1.0 - b);
        }
        BitErrors { survive }
    }

    /// Flips bits of `bits` (a big-endian bit string, bit 0 = MSB of byte 0) at this rate;
    /// returns how many.
    pub(crate) fn apply(&self, rng: &mut Stream, bits: &mut [u8]) -> u32 {
        let total = (bits.len() * 8).min(PAYLOAD_BITS);
        let mut pos = 0;
        let mut flipped = 0;
        while pos < total {
            let remaining = total - pos;
            let u = rng.unit();
            // K ≥ remaining: no error in the rest of the payload.
            if u < self.survive[remaining] {
                break;
            }
            // K = the number of k in 1..=remaining with (1 − b)^k > u.
            let good = self.survive[1..=remaining].partition_point(|&q| q > u);
            let bit = pos + good;
            bits[bit / 8] ^= 0x80 >> (bit % 8);
            flipped += 1;
            pos = bit + 1;
        }
        flipped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The logarithm the exponential law uses agrees with `std`'s over its whole domain.
    #[test]
    fn ln_matches_std() {
        let ln = libm::log;
        let mut rng = Stream::new(1, 2);
        let mut worst: f64 = 0.0;
        for _ in 0..100_000 {
            let x = rng.unit_open0();
            let err = (ln(x) - x.ln()).abs() / x.ln().abs().max(1e-300);
            worst = worst.max(err);
        }
        for x in [
            1.0,
            0.5,
            UNIT,
            0.999_999_999,
            core::f64::consts::FRAC_1_SQRT_2,
        ] {
            assert!((ln(x) - x.ln()).abs() <= 4.0 * f64::EPSILON * x.ln().abs().max(1.0));
        }
        assert!(worst < 1e-14, "worst relative error {worst}");
    }

    #[test]
    fn below_stays_below() {
        let mut rng = Stream::new(3, 4);
        for n in [1u64, 2, 3, 40, 39, u64::MAX] {
            for _ in 0..1000 {
                assert!(rng.below(n) < n);
            }
        }
    }

    #[test]
    fn bit_errors_extremes() {
        let mut rng = Stream::new(5, 6);
        let mut payload = [0u8; 48];
        assert_eq!(BitErrors::new(0.0).apply(&mut rng, &mut payload), 0);
        assert_eq!(payload, [0; 48]);
        assert_eq!(BitErrors::new(1.0).apply(&mut rng, &mut payload), 384);
        assert_eq!(payload, [0xff; 48]);
    }

    #[test]
    fn streams_differ_by_label_and_seed() {
        let draw = |seed, label| {
            let mut s = Stream::new(seed, label);
            [s.unit(), s.unit()]
        };
        assert_ne!(draw(1, 0), draw(1, 1));
        assert_ne!(draw(1, 0), draw(2, 0));
        assert_eq!(draw(7, 3), draw(7, 3));
    }
}

//! Seeds: one master seed per run, and a sub-seed per component derived from it by name.
//!
//! Every random choice in a run (the load's sizes and gaps, a link's impairments, the
//! swarm's fault mix) draws from its own stream, seeded by [`sub_seed`] of the run's master
//! seed and a label naming the component (`"link 3 a→b"`, `"load flow 7"`). Adding a
//! component therefore does not change what the others draw. Nothing else in the simulator
//! is random: no OS entropy, no clock.
//!
//! The label is hashed with 64-bit FNV-1a and mixed with the master seed by SplitMix64's
//! finaliser (both public-domain constructions, a few lines each); streams are xoshiro256++
//! ([`Rng`]) seeded from four SplitMix64 outputs.

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng as _, SeedableRng};

/// FNV-1a offset basis, 64 bit.
pub(crate) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a prime, 64 bit.
pub(crate) const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a of `bytes`, continuing from `h`.
pub(crate) fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// SplitMix64's output function: a bijection of u64 with full avalanche.
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of the component named `label` in the run of `master`.
pub fn sub_seed(master: u64, label: &str) -> u64 {
    splitmix64(master ^ fnv1a(FNV_OFFSET, label.as_bytes()))
}

/// A seeded xoshiro256++ stream with the few draws the simulator needs.
#[derive(Clone, Debug)]
pub struct Rng(Xoshiro256PlusPlus);

impl Rng {
    /// The stream of `seed`.
    pub fn new(seed: u64) -> Rng {
        let mut bytes = [0u8; 32];
        let mut z = seed;
        for chunk in bytes.chunks_exact_mut(8) {
            z = splitmix64(z);
            chunk.copy_from_slice(&z.to_le_bytes());
        }
        Rng(Xoshiro256PlusPlus::from_seed(bytes))
    }

    /// The stream of component `label` in run `master`.
    pub fn for_component(master: u64, label: &str) -> Rng {
        Rng::new(sub_seed(master, label))
    }

    /// A uniform u64.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A uniform integer in `0..n` (0 if `n` is 0), Lemire's multiply-shift.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniform integer in `lo..=hi` (`lo` if `hi < lo`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.below(hi - lo + 1)
    }

    /// A uniform real in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// A real uniform in `[lo, hi)`.
    pub fn real(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// A real log-uniform in `[lo, hi)` (both > 0): every decade equally likely.
    pub fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + (hi.ln() - lo.ln()) * self.unit()).exp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_seeds_depend_on_master_and_label_only() {
        assert_eq!(sub_seed(1, "link 0"), sub_seed(1, "link 0"));
        assert_ne!(sub_seed(1, "link 0"), sub_seed(1, "link 1"));
        assert_ne!(sub_seed(1, "link 0"), sub_seed(2, "link 0"));
        // FNV-1a of "a" is the published test vector.
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        let (mut a, mut b) = (Rng::new(9), Rng::new(9));
        let xs: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(
            xs,
            (0..4).map(|_| Rng::new(10).next_u64()).collect::<Vec<_>>()
        );
        for _ in 0..1000 {
            assert!(a.range(3, 5) >= 3 && a.range(3, 5) <= 5);
            let x = a.log_uniform(1e-6, 1e-3);
            assert!((1e-6..1e-3).contains(&x));
        }
    }
}

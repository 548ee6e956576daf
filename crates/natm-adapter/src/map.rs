//! A small open-addressing map from a `u32` key (a cell's VPI/VCI bits, or a VC handle) to
//! a slot index.
//!
//! Not `BTreeMap`: a lookup per cell would be a dozen dependent compares. Not `HashMap`: it
//! needs `std` and is randomly seeded. A fixed multiplicative hash, linear probing and
//! backward-shift deletion give the same behaviour on every run and leave no tombstones.
//! natm-aal has the same structure privately; this is the adapter's own.

use alloc::vec;
use alloc::vec::Vec;

/// An empty bucket: `key << 32 | slot` with slot `u32::MAX`, which no slot ever is (slots
/// are below `AdapterConfig::max_vcs`).
const EMPTY: u64 = u64::MAX;

#[derive(Clone, Debug)]
pub(crate) struct U32Map {
    buckets: Vec<u64>,
    mask: usize,
    shift: u32,
    len: usize,
}

impl U32Map {
    pub(crate) fn new() -> U32Map {
        U32Map::with_buckets(16)
    }

    fn with_buckets(n: usize) -> U32Map {
        debug_assert!(n.is_power_of_two() && n >= 2);
        U32Map {
            buckets: vec![EMPTY; n],
            mask: n - 1,
            shift: 32 - n.trailing_zeros(),
            len: 0,
        }
    }

    #[inline]
    fn home(&self, key: u32) -> usize {
        // Fibonacci hashing spreads consecutive keys (consecutive VCIs or handles).
        (key.wrapping_mul(0x9E37_79B9) >> self.shift) as usize
    }

    #[inline]
    fn find(&self, key: u32) -> Result<usize, usize> {
        let mut i = self.home(key);
        loop {
            let b = self.buckets[i];
            if b == EMPTY {
                return Err(i);
            }
            if (b >> 32) as u32 == key {
                return Ok(i);
            }
            i = (i + 1) & self.mask;
        }
    }

    #[inline]
    pub(crate) fn get(&self, key: u32) -> Option<u32> {
        let i = self.find(key).ok()?;
        Some(self.buckets[i] as u32)
    }

    /// Insert a key that is not present.
    pub(crate) fn insert(&mut self, key: u32, slot: u32) {
        debug_assert!(slot != u32::MAX);
        if (self.len + 1) * 2 > self.buckets.len() {
            self.grow();
        }
        let entry = u64::from(key) << 32 | u64::from(slot);
        match self.find(key) {
            Ok(i) => self.buckets[i] = entry,
            Err(i) => {
                self.buckets[i] = entry;
                self.len += 1;
            }
        }
    }

    pub(crate) fn remove(&mut self, key: u32) -> Option<u32> {
        let i = self.find(key).ok()?;
        let removed = self.buckets[i] as u32;
        // Backward shift: pull later entries of the run into the hole unless their home
        // lies between the hole and where they are.
        let mut hole = i;
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            let b = self.buckets[j];
            if b == EMPTY {
                break;
            }
            let home = self.home((b >> 32) as u32);
            if j.wrapping_sub(home) & self.mask >= j.wrapping_sub(hole) & self.mask {
                self.buckets[hole] = b;
                hole = j;
            }
        }
        self.buckets[hole] = EMPTY;
        self.len -= 1;
        Some(removed)
    }

    fn grow(&mut self) {
        let mut bigger = U32Map::with_buckets(self.buckets.len() * 2);
        for &b in &self.buckets {
            if b != EMPTY {
                bigger.insert((b >> 32) as u32, b as u32);
            }
        }
        *self = bigger;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        #[test]
        fn behaves_like_btreemap(ops in proptest::collection::vec((any::<bool>(), 0u32..200, 0u32..1000), 0..1500)) {
            let mut m = U32Map::new();
            let mut model = BTreeMap::new();
            for (insert, key, slot) in ops {
                // Clustered keys, some near u32::MAX, so probe runs collide and wrap.
                let key = key.wrapping_mul(0x9E37_79B9).rotate_left(key % 7);
                if insert {
                    m.insert(key, slot);
                    model.insert(key, slot);
                } else {
                    prop_assert_eq!(m.remove(key), model.remove(&key));
                }
            }
            for (k, v) in &model {
                prop_assert_eq!(m.get(*k), Some(*v));
            }
            prop_assert_eq!(m.len, model.len());
        }
    }
}

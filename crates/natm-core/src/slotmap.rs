//! [`SlotMap`]: a small open-addressing map from a `u32` key (a cell's VPI/VCI bits, a VC
//! handle) to a `u32` slot index, for the per-cell lookups of natm-adapter and
//! natm-switch.
//!
//! Why not `BTreeMap`: at 1,000 VCs a B-tree lookup is a dozen dependent compares, a large
//! share of the ~50 ns a cell may cost. Why not `HashMap`: it needs `std` and its default
//! hasher is randomly seeded. This table uses a fixed multiplicative hash, linear probing and
//! backward-shift deletion, so its behaviour is the same on every run and it never holds
//! tombstones. It has no iteration.

use alloc::vec;
use alloc::vec::Vec;

/// An empty bucket: key `u32::MAX` with slot `u32::MAX`, and no slot is `u32::MAX`.
const EMPTY: u64 = u64::MAX;

/// A map from any `u32` key to a slot index below `u32::MAX`.
#[derive(Clone, Debug)]
pub struct SlotMap {
    /// `key << 32 | slot`, or `EMPTY`.
    buckets: Vec<u64>,
    /// `buckets.len() - 1`; the length is a power of two.
    mask: usize,
    /// `32 - log2(buckets.len())`: the hash takes the top bits of the product.
    shift: u32,
    len: usize,
}

impl Default for SlotMap {
    fn default() -> SlotMap {
        SlotMap::new()
    }
}

impl SlotMap {
    /// An empty map.
    pub fn new() -> SlotMap {
        SlotMap::with_buckets(16)
    }

    fn with_buckets(n: usize) -> SlotMap {
        debug_assert!(n.is_power_of_two() && n >= 2);
        SlotMap {
            buckets: vec![EMPTY; n],
            mask: n - 1,
            shift: 32 - n.trailing_zeros(),
            len: 0,
        }
    }

    #[inline]
    fn home(&self, key: u32) -> usize {
        // Fibonacci hashing: consecutive VCIs (the usual allocation) spread evenly.
        (key.wrapping_mul(0x9E37_79B9) >> self.shift) as usize
    }

    /// The bucket holding `key` (`Ok`), or the empty bucket that ends its probe run (`Err`).
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
    /// The slot of `key`.
    pub fn get(&self, key: u32) -> Option<u32> {
        let i = self.find(key).ok()?;
        Some(self.buckets[i] as u32)
    }

    /// Insert or replace; returns the previous slot. `slot` must not be `u32::MAX`.
    pub fn insert(&mut self, key: u32, slot: u32) -> Option<u32> {
        debug_assert!(slot != u32::MAX, "slot u32::MAX marks an empty bucket");
        // Keep the load at most one half: probes stay short.
        if (self.len + 1) * 2 > self.buckets.len() {
            self.grow();
        }
        let entry = u64::from(key) << 32 | u64::from(slot);
        match self.find(key) {
            Ok(i) => Some(core::mem::replace(&mut self.buckets[i], entry) as u32),
            Err(i) => {
                self.buckets[i] = entry;
                self.len += 1;
                None
            }
        }
    }

    /// Remove `key`; returns its slot.
    pub fn remove(&mut self, key: u32) -> Option<u32> {
        let i = self.find(key).ok()?;
        let removed = self.buckets[i] as u32;
        // Backward-shift deletion: move later entries of the probe run into the hole when
        // their home is not between the hole and their position.
        let mut hole = i;
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            let b = self.buckets[j];
            if b == EMPTY {
                break;
            }
            let home = self.home((b >> 32) as u32);
            let dist_home = j.wrapping_sub(home) & self.mask;
            let dist_hole = j.wrapping_sub(hole) & self.mask;
            if dist_home >= dist_hole {
                self.buckets[hole] = b;
                hole = j;
            }
        }
        self.buckets[hole] = EMPTY;
        self.len -= 1;
        Some(removed)
    }

    fn grow(&mut self) {
        let mut bigger = SlotMap::with_buckets(self.buckets.len() * 2);
        for &b in &self.buckets {
            if b != EMPTY {
                bigger.insert((b >> 32) as u32, b as u32);
            }
        }
        *self = bigger;
    }

    /// Keys in the map.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        #[test]
        fn behaves_like_btreemap(ops in proptest::collection::vec((any::<bool>(), 0u32..300, 0u32..u32::MAX), 0..2000)) {
            let mut m = SlotMap::new();
            let mut model = BTreeMap::new();
            for (insert, key, slot) in ops {
                // Keys cluster (0..300) so probe runs collide and deletion shifts are exercised;
                // the odd ones land near u32::MAX, as VC handles may.
                let key = if key % 2 == 0 { (key * 7919) & 0x0FFF_FFFF } else { u32::MAX - key };
                if insert {
                    prop_assert_eq!(m.insert(key, slot), model.insert(key, slot));
                } else {
                    prop_assert_eq!(m.remove(key), model.remove(&key));
                }
                prop_assert_eq!(m.len(), model.len());
            }
            for (k, v) in &model {
                prop_assert_eq!(m.get(*k), Some(*v));
            }
            for k in 0..300u32 {
                let k = if k % 2 == 0 { (k * 7919) & 0x0FFF_FFFF } else { u32::MAX - k };
                prop_assert_eq!(m.get(k), model.get(&k).copied());
            }
        }
    }
}

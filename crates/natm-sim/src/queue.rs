//! The event queue: entries ordered by (time in ns, sequence number), so events at one
//! instant run in the order they were scheduled and a run is the same every time.
//!
//! Lazy invalidation: a component that wants to be woken at `t` is pushed with `t`; it
//! remembers the instant it is armed for (see `World`), and a popped entry whose time is
//! not that instant any more is stale and skipped. Re-arming earlier pushes again; later
//! waits for the earlier wake-up, which re-arms. So nothing is ever removed from the
//! middle of the heap.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What an entry wakes, packed into 32 bits: a kind (top 4 bits) and an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Target(pub u32);

impl Target {
    const SHIFT: u32 = 28;
    const MASK: u32 = (1 << Self::SHIFT) - 1;

    /// Kind `kind` (0..16), index `index` (below 2²⁸).
    pub fn new(kind: u8, index: u32) -> Target {
        debug_assert!(kind < 16 && index <= Self::MASK);
        Target(u32::from(kind) << Self::SHIFT | (index & Self::MASK))
    }

    /// The kind.
    pub fn kind(self) -> u8 {
        (self.0 >> Self::SHIFT) as u8
    }

    /// The index.
    pub fn index(self) -> u32 {
        self.0 & Self::MASK
    }
}

/// One entry, 16 bytes: time in the high 64 bits, then the low 32 bits of the sequence
/// number, then the target. Ordered by time, then sequence (the target never decides:
/// sequence numbers are unique until they wrap after 2³² pushes, and even then the order
/// is a function of the pushes alone, so runs stay deterministic).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry(u128);

/// A min-queue of (time, seq, target).
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<Entry>>,
    seq: u64,
}

impl EventQueue {
    /// Empty.
    pub fn new() -> EventQueue {
        EventQueue::default()
    }

    /// Schedule `target` at `t` ns; returns the entry's sequence number.
    pub fn push(&mut self, t: u64, target: Target) -> u64 {
        let seq = self.seq;
        self.seq += 1;
        self.heap.push(Reverse(Entry(
            u128::from(t) << 64 | u128::from(seq as u32) << 32 | u128::from(target.0),
        )));
        seq
    }

    /// The earliest entry's time.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|e| (e.0.0 >> 64) as u64)
    }

    /// Remove the earliest entry: (time, the low 32 bits of its sequence number, target).
    pub fn pop(&mut self) -> Option<(u64, u64, Target)> {
        self.heap.pop().map(|Reverse(Entry(k))| {
            (
                (k >> 64) as u64,
                u64::from((k >> 32) as u32),
                Target(k as u32),
            )
        })
    }

    /// Entries held (stale ones included).
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_at_one_instant_pop_in_push_order() {
        let mut q = EventQueue::new();
        q.push(10, Target::new(1, 5));
        q.push(5, Target::new(2, 7));
        q.push(10, Target::new(3, 1));
        q.push(5, Target::new(0, 2));
        let order: Vec<(u64, u8, u32)> = std::iter::from_fn(|| q.pop())
            .map(|(t, _, x)| (t, x.kind(), x.index()))
            .collect();
        assert_eq!(order, [(5, 2, 7), (5, 0, 2), (10, 1, 5), (10, 3, 1)]);
    }
}

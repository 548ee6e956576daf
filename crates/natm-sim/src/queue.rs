//! The event queue: entries ordered by (time in ns, sequence number), so events at one
//! instant run in the order they were scheduled and a run is the same every time.
//!
//! Lazy invalidation: a component that wants to be woken at `t` is pushed with `t`; it
//! remembers the instant it is armed for (see `World`), and a popped entry whose time is
//! not that instant any more is stale and skipped. Re-arming earlier pushes again; later
//! waits for the earlier wake-up, which re-arms. So nothing is ever removed from the
//! middle of the heap.

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

/// A min-queue of (time, seq, target), each entry one `u128`: time in the high 64 bits,
/// then the low 32 bits of the sequence number, then the target. Ordered by time, then
/// sequence (the target never decides: sequence numbers are unique until they wrap after
/// 2³² pushes, and even then the order is a function of the pushes alone, so runs stay
/// deterministic).
///
/// A 4-ary heap: half the levels of a binary one, and the four children of a node share a
/// cache line, so a pop (the hottest call of the event loop) touches fewer lines.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: Vec<u128>,
    seq: u64,
}

/// Children per node.
const ARITY: usize = 4;

impl EventQueue {
    /// Empty.
    pub fn new() -> EventQueue {
        EventQueue::default()
    }

    /// Schedule `target` at `t` ns; returns the entry's sequence number.
    pub fn push(&mut self, t: u64, target: Target) -> u64 {
        let seq = self.seq;
        self.seq += 1;
        let key = u128::from(t) << 64 | u128::from(seq as u32) << 32 | u128::from(target.0);
        let mut i = self.heap.len();
        self.heap.push(key);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.heap[parent] <= key {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = key;
        seq
    }

    /// The earliest entry's time.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.first().map(|k| (k >> 64) as u64)
    }

    /// Remove the earliest entry: (time, the low 32 bits of its sequence number, target).
    pub fn pop(&mut self) -> Option<(u64, u64, Target)> {
        let last = self.heap.pop()?;
        let top = match self.heap.first() {
            None => last,
            Some(&top) => {
                self.sift_down(last);
                top
            }
        };
        Some((
            (top >> 64) as u64,
            u64::from((top >> 32) as u32),
            Target(top as u32),
        ))
    }

    /// Puts `key` in the hole at the root and moves it down to its place.
    fn sift_down(&mut self, key: u128) {
        let n = self.heap.len();
        let mut i = 0;
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let mut m = first;
            for c in first + 1..(first + ARITY).min(n) {
                if self.heap[c] < self.heap[m] {
                    m = c;
                }
            }
            if self.heap[m] >= key {
                break;
            }
            self.heap[i] = self.heap[m];
            i = m;
        }
        self.heap[i] = key;
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

    #[test]
    fn pops_in_time_then_push_order_under_mixed_pushes_and_pops() {
        // Against a sorted model, with pops interleaved and many equal times.
        let mut q = EventQueue::new();
        let mut model: Vec<(u64, u64, u32)> = Vec::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut now = 0u64;
        for step in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x.is_multiple_of(3) && !model.is_empty() {
                model.sort();
                let want = model.remove(0);
                let (t, seq, target) = q.pop().expect("model holds entries");
                assert_eq!((t, seq, target.index()), want, "step {step}");
                now = t;
            } else {
                let t = now + x % 7;
                let seq = q.push(t, Target::new(1, step));
                model.push((t, seq, step));
            }
            assert_eq!(q.len(), model.len());
        }
        model.sort();
        for want in model {
            let (t, seq, target) = q.pop().expect("entries left");
            assert_eq!((t, seq, target.index()), want);
        }
        assert!(q.is_empty() && q.pop().is_none());
    }
}

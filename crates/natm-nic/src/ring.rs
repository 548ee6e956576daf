//! Single-producer single-consumer rings in a shared region.
//!
//! A ring is a control block of three cache lines followed by `entries` slots:
//!
//! | offset in ring | word | written by |
//! |---|---|---|
//! | 0   | producer index (tail), free-running u64, little-endian | producer |
//! | 64  | consumer index (head), free-running u64, little-endian | consumer |
//! | 128 | consumer-waiting flag (0 running, 1 about to sleep)     | consumer sets, producer clears |
//! | 136 | producer-waiting flag (0 running, 1 sleeps until space) | producer sets, consumer clears |
//! | 192 | slot 0, slot 1, … (`slot_size` bytes each)              | producer |
//!
//! Entry `i` lives in slot `i mod entries`. The ring holds `tail - head` entries.
//!
//! Memory orderings:
//! - the producer fills slots with Relaxed stores, then stores the tail with **Release**;
//!   the consumer loads the tail with **Acquire**, so it sees every slot word written
//!   before that tail. (A streaming producer fills them with non-temporal stores, which
//!   x86 does not order with Release: an SFENCE comes between.) A producer that dies before its Release store leaves the tail where
//!   it was: the half-written slots are beyond the tail and never read.
//! - the consumer reads slots with Relaxed loads, then stores the head with **Release**;
//!   the producer loads the head with **Acquire** before reusing slots, so its new writes
//!   cannot overtake the consumer's reads of the old entries.
//! - the waiting flag is a Dekker handshake (see [`crate::notify`]): the consumer stores
//!   the flag, issues a SeqCst fence and re-reads the tail; the producer stores the tail,
//!   issues a SeqCst fence and reads the flag. At least one of them sees the other's
//!   store, so a wake-up is never lost, and the producer makes a system call only when the
//!   consumer announced that it sleeps. The producer-waiting flag is the same handshake
//!   the other way round, for a producer that waits for free slots: it stores the flag,
//!   fences and re-reads the head; the consumer stores the head, fences and reads the flag.
//!
//! Each side keeps its own index locally and never re-reads it from shared memory, and
//! checks the peer's index (`tail - head <= entries`): a peer that scribbles on the indices
//! makes the ring report a [`RingFault`], never a panic or an access outside the ring.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::layout::{RING_CONTROL_BYTES, RingGeom};
use crate::shm::{Region, WORDS_PER_LINE, load_le, store_le};

const TAIL: usize = 0;
const HEAD: usize = WORDS_PER_LINE;
const WAITING: usize = 2 * WORDS_PER_LINE;
const SPACE_WAITING: usize = 2 * WORDS_PER_LINE + 1;

/// The peer broke the ring's invariant; the ring is unusable from then on.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
#[error("ring indices corrupt: head {head}, tail {tail}, {entries} entries")]
pub struct RingFault {
    /// Consumer index seen.
    pub head: u64,
    /// Producer index seen.
    pub tail: u64,
    /// Ring size.
    pub entries: u64,
}

/// Where a ring lies in a region (word indices, all in bounds by construction).
#[derive(Clone)]
pub(crate) struct RingRef {
    mem: Region,
    control: usize,
    slots: usize,
    pub(crate) entries: u64,
    slot_words: usize,
}

impl RingRef {
    /// A ring at a validated position. The layout was checked against this region's
    /// length, so every word index below is in bounds.
    pub(crate) fn new(mem: Region, geom: &RingGeom) -> Self {
        let control = geom.offset / 8;
        assert!(
            geom.offset + geom.span() <= mem.len_bytes(),
            "validated ring lies inside the region"
        );
        RingRef {
            mem,
            control,
            slots: control + RING_CONTROL_BYTES / 8,
            entries: u64::from(geom.entries),
            slot_words: geom.slot_size as usize / 8,
        }
    }

    #[inline(always)]
    fn word(&self, i: usize) -> &AtomicU64 {
        &self.mem.words()[self.control + i]
    }

    /// All slots, for batch loops (slot `i` is `[i * slot_words..][..slot_words]`).
    #[inline(always)]
    fn all_slots(&self) -> &[AtomicU64] {
        &self.mem.words()[self.slots..self.slots + self.entries as usize * self.slot_words]
    }

    #[inline(always)]
    pub(crate) fn waiting(&self) -> &AtomicU64 {
        self.word(WAITING)
    }

    /// The producer-waiting flag (a producer asleep until slots are freed).
    #[inline(always)]
    pub(crate) fn space_waiting(&self) -> &AtomicU64 {
        self.word(SPACE_WAITING)
    }

    #[inline(always)]
    pub(crate) fn load_tail(&self) -> u64 {
        load_le(self.word(TAIL), Ordering::Acquire)
    }

    #[inline(always)]
    pub(crate) fn load_head(&self) -> u64 {
        load_le(self.word(HEAD), Ordering::Acquire)
    }

    /// The indices in shared memory, `(head, tail)`, checked: what an end attaching to the
    /// ring continues from.
    fn indices(&self) -> Result<(u64, u64), RingFault> {
        let (tail, head) = (self.load_tail(), self.load_head());
        if tail.wrapping_sub(head) > self.entries {
            return Err(RingFault {
                head,
                tail,
                entries: self.entries,
            });
        }
        Ok((head, tail))
    }

    /// Calls `f(k, slot_words)` for the `n` slots of entries `start`, `start + 1`, …
    #[inline(always)]
    fn for_slots(&self, start: u64, n: usize, f: &mut impl FnMut(usize, &[AtomicU64])) {
        let sw = self.slot_words;
        let mask = (self.entries - 1) as usize;
        let slots = self.all_slots();
        let start = start as usize;
        for k in 0..n {
            let s = (start.wrapping_add(k) & mask) * sw;
            f(k, &slots[s..s + sw]);
        }
    }
}

/// The producer end: fills slots and publishes them.
pub(crate) struct Producer {
    pub(crate) ring: RingRef,
    tail: u64,
    head_cache: u64,
    fault: Option<RingFault>,
}

impl Producer {
    /// Attaches as the producer, continuing from the indices in shared memory (a
    /// producer that replaces a dead one continues where the last published entry ended).
    pub(crate) fn attach(ring: RingRef) -> Result<Self, RingFault> {
        let (head, tail) = ring.indices()?;
        Ok(Producer {
            ring,
            tail,
            head_cache: head,
            fault: None,
        })
    }

    pub(crate) fn fault(&self) -> Option<RingFault> {
        self.fault
    }

    /// Free slots, re-reading the consumer's index only when the cached one shows fewer
    /// than `want` free.
    #[inline]
    pub(crate) fn free(&mut self, want: usize) -> usize {
        if self.fault.is_some() {
            return 0;
        }
        let mut free = self.ring.entries - self.tail.wrapping_sub(self.head_cache);
        if free < want as u64 {
            let head = self.ring.load_head();
            // The consumer's index may only move forward, up to our tail.
            if head.wrapping_sub(self.head_cache) > self.tail.wrapping_sub(self.head_cache) {
                self.fault = Some(RingFault {
                    head,
                    tail: self.tail,
                    entries: self.ring.entries,
                });
                return 0;
            }
            self.head_cache = head;
            free = self.ring.entries - self.tail.wrapping_sub(head);
        }
        free as usize
    }

    /// Writes up to `n` entries with `fill(k, slot_words)` for k in 0.., then publishes
    /// them with one Release store. Returns how many were written.
    #[inline]
    pub(crate) fn push_with(&mut self, n: usize, fill: impl FnMut(usize, &[AtomicU64])) -> usize {
        self.push(n, fill, false)
    }

    /// [`push_with`](Self::push_with) for a `fill` that writes with non-temporal stores:
    /// a store fence orders them before the Release store that publishes them (x86's
    /// Release orders ordinary stores only).
    #[inline]
    pub(crate) fn push_with_streaming(
        &mut self,
        n: usize,
        fill: impl FnMut(usize, &[AtomicU64]),
    ) -> usize {
        self.push(n, fill, true)
    }

    #[inline(always)]
    fn push(&mut self, n: usize, mut fill: impl FnMut(usize, &[AtomicU64]), fence: bool) -> usize {
        let n = n.min(self.free(n));
        if n == 0 {
            return 0;
        }
        self.stage_with(n, &mut fill);
        #[cfg(target_arch = "x86_64")]
        if fence {
            // SAFETY: SFENCE has no operands and no effect on memory but ordering.
            unsafe { std::arch::x86_64::_mm_sfence() };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = fence;
        self.tail = self.tail.wrapping_add(n as u64);
        store_le(self.ring.word(TAIL), self.tail, Ordering::Release);
        n
    }

    /// Writes `n` (≤ free) entries without publishing them: the first half of a push, as
    /// a producer killed before its Release store leaves it.
    #[inline(always)]
    pub(crate) fn stage_with(&self, n: usize, fill: &mut impl FnMut(usize, &[AtomicU64])) {
        self.ring.for_slots(self.tail, n, fill);
    }
}

/// The consumer end: reads published slots and frees them.
pub(crate) struct Consumer {
    pub(crate) ring: RingRef,
    head: u64,
    tail_cache: u64,
    fault: Option<RingFault>,
}

impl Consumer {
    /// Attaches as the consumer, continuing from the indices in shared memory.
    pub(crate) fn attach(ring: RingRef) -> Result<Self, RingFault> {
        let (head, tail) = ring.indices()?;
        Ok(Consumer {
            ring,
            head,
            tail_cache: tail,
            fault: None,
        })
    }

    pub(crate) fn fault(&self) -> Option<RingFault> {
        self.fault
    }

    /// Entries ready, re-reading the producer's index (Acquire) only when the cached one
    /// shows fewer than `want`.
    #[inline]
    pub(crate) fn available(&mut self, want: usize) -> usize {
        if self.fault.is_some() {
            return 0;
        }
        let mut avail = self.tail_cache.wrapping_sub(self.head);
        if avail < want as u64 {
            let tail = self.ring.load_tail();
            // The producer's index may only move forward, and never more than a ring ahead.
            if tail.wrapping_sub(self.head) > self.ring.entries
                || tail.wrapping_sub(self.tail_cache) > self.ring.entries
            {
                self.fault = Some(RingFault {
                    head: self.head,
                    tail,
                    entries: self.ring.entries,
                });
                return 0;
            }
            self.tail_cache = tail;
            avail = tail.wrapping_sub(self.head);
        }
        avail as usize
    }

    /// Reads up to `n` entries with `read(k, slot_words)`, then frees them with one Release
    /// store. Returns how many were read.
    #[inline]
    pub(crate) fn pop_with(
        &mut self,
        n: usize,
        mut read: impl FnMut(usize, &[AtomicU64]),
    ) -> usize {
        let n = n.min(self.available(n));
        if n == 0 {
            return 0;
        }
        self.ring.for_slots(self.head, n, &mut read);
        self.head = self.head.wrapping_add(n as u64);
        store_le(self.ring.word(HEAD), self.head, Ordering::Release);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::HeapMem;
    use std::sync::Arc;

    fn ring(entries: u32) -> (Producer, Consumer) {
        let geom = RingGeom {
            offset: 64,
            entries,
            slot_size: 16,
        };
        let mem: Region = Arc::new(HeapMem::new(64 + geom.span().next_multiple_of(64)).unwrap());
        let r = RingRef::new(mem, &geom);
        (
            Producer::attach(r.clone()).unwrap(),
            Consumer::attach(r).unwrap(),
        )
    }

    fn push(p: &mut Producer, vals: &[u64]) -> usize {
        p.push_with(vals.len(), |k, s| s[0].store(vals[k], Ordering::Relaxed))
    }

    fn pop(c: &mut Consumer, n: usize) -> Vec<u64> {
        let mut out = Vec::new();
        c.pop_with(n, |_, s| out.push(s[0].load(Ordering::Relaxed)));
        out
    }

    #[test]
    fn control_words_are_on_separate_lines() {
        assert_eq!(TAIL * 8, 0);
        assert_eq!(HEAD * 8, 64);
        assert_eq!(WAITING * 8, 128);
    }

    #[test]
    fn empty_and_full() {
        let (mut p, mut c) = ring(4);
        assert_eq!(c.available(1), 0);
        assert!(pop(&mut c, 4).is_empty());
        assert_eq!(push(&mut p, &[1, 2, 3, 4, 5]), 4, "a 4-entry ring takes 4");
        assert_eq!(push(&mut p, &[6]), 0, "full");
        assert_eq!(pop(&mut c, 1), [1]);
        assert_eq!(push(&mut p, &[6, 7]), 1);
        assert_eq!(pop(&mut c, 10), [2, 3, 4, 6]);
        assert!(pop(&mut c, 10).is_empty());
    }

    #[test]
    fn wraps_around_over_many_laps() {
        let (mut p, mut c) = ring(8);
        let mut next = 0u64;
        let mut expect = 0u64;
        // Batch sizes that do not divide the ring, so every slot boundary is crossed.
        for lap in 0..5000u64 {
            let n = (lap % 5 + 1) as usize;
            let vals: Vec<u64> = (next..next + n as u64).collect();
            let pushed = push(&mut p, &vals);
            next += pushed as u64;
            for v in pop(&mut c, (lap % 3 + 1) as usize) {
                assert_eq!(v, expect);
                expect += 1;
            }
        }
        for v in pop(&mut c, 8) {
            assert_eq!(v, expect);
            expect += 1;
        }
        assert_eq!(expect, next);
        assert!(next > 8 * 1000, "many laps: {next}");
    }

    #[test]
    fn indices_wrap_at_u64_max() {
        let geom = RingGeom {
            offset: 0,
            entries: 4,
            slot_size: 16,
        };
        let mem: Region = Arc::new(HeapMem::new(geom.span().next_multiple_of(64)).unwrap());
        let r = RingRef::new(mem, &geom);
        store_le(r.word(TAIL), u64::MAX - 1, Ordering::Relaxed);
        store_le(r.word(HEAD), u64::MAX - 1, Ordering::Relaxed);
        let (mut p, mut c) = (
            Producer::attach(r.clone()).unwrap(),
            Consumer::attach(r).unwrap(),
        );
        for round in 0..10u64 {
            assert_eq!(push(&mut p, &[round, round + 100, round + 200]), 3);
            assert_eq!(pop(&mut c, 3), [round, round + 100, round + 200]);
        }
    }

    #[test]
    fn corrupt_indices_are_a_fault_not_a_panic() {
        let (mut p, mut c) = ring(4);
        push(&mut p, &[1]);
        // The peer writes a tail far ahead.
        store_le(c.ring.word(TAIL), 1000, Ordering::Release);
        assert_eq!(c.available(1), 0);
        assert!(c.fault().is_some());
        assert!(pop(&mut c, 1).is_empty());
        // The peer moves the head backwards.
        let (mut p, _c) = ring(4);
        push(&mut p, &[1, 2, 3, 4]);
        store_le(p.ring.word(HEAD), u64::MAX - 5, Ordering::Release);
        assert_eq!(p.free(1), 0);
        assert!(p.fault().is_some());
        // Attaching to a ring with bad indices is refused.
        let r = p.ring.clone();
        assert!(Producer::attach(r.clone()).is_err());
        assert!(Consumer::attach(r).is_err());
    }
}

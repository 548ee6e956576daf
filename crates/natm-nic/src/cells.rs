//! The shared-memory cell link: a pair of SPSC rings of 53-byte cells, one per direction,
//! in one region (memfd between processes, [`HeapMem`](crate::shm::HeapMem) in tests).
//!
//! Each cell occupies a 64-byte slot: bytes 0..53 the cell, 53..56 zero, 56..64 unused.
//! Cells move in batches: one index load per side per batch when the cached index
//! suffices, one Release store per batch.
//!
//! ```
//! use std::sync::Arc;
//! use natm_nic::cells::{CellLink, Side};
//! use natm_nic::shm::HeapMem;
//!
//! let mem = Arc::new(HeapMem::new(CellLink::region_bytes(64).unwrap()).unwrap());
//! let link = CellLink::create(mem, 64).unwrap();
//! let (mut a_tx, _a_rx) = link.endpoint(Side::A).unwrap();
//! let (_b_tx, mut b_rx) = link.endpoint(Side::B).unwrap();
//! assert_eq!(a_tx.push_batch(&[[7u8; 53]; 3]), 3);
//! let mut got = [[0u8; 53]; 16];
//! assert_eq!(b_rx.pop_batch(&mut got), 3);
//! assert_eq!(got[2], [7u8; 53]);
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

use crate::layout::{LINE_WEIGHT_OFFSETS, Layout, LayoutError, RegionKind, SPLICE_OFFSET};
#[cfg(test)]
use crate::layout::{SPLICE_HELD_B, SPLICE_RELEASED_A, SPLICE_RELEASED_B};
use crate::notify::{Wakeable, Waker};
use crate::ring::{Consumer, Producer, RingFault, RingRef};
use crate::shm::Region;
use crate::shm::{load_le, store_le};

/// Bytes in a cell.
pub const CELL_BYTES: usize = 53;
/// Bytes per slot.
pub const CELL_SLOT_BYTES: usize = 64;
/// A cell as raw bytes (header with HEC, 48-byte payload).
pub use natm_wire::cell::CellBytes;

/// Which end of the link: A sends on ring 0 and receives on ring 1, B the reverse.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Side {
    /// The side that sends on ring 0.
    A,
    /// The side that sends on ring 1.
    B,
}

/// Why an endpoint could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CellLinkError {
    /// The region's header was refused.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The region is smaller than the layout needs.
    #[error("region of {have} bytes, layout needs {need}")]
    RegionTooSmall {
        /// Mapped.
        have: usize,
        /// Needed.
        need: usize,
    },
    /// A ring's indices are corrupt.
    #[error(transparent)]
    Fault(#[from] RingFault),
}

/// A cell link's line-weight words ([`LINE_WEIGHT_OFFSETS`]): each side says its weight on
/// the line it shares with other senders into its peer, and the peer reads it (a switch
/// sharing a host's line between the host's main link and its lanes). Advisory: nothing
/// on the rings depends on it.
#[derive(Clone)]
pub struct LineWeight {
    mem: Region,
}

impl LineWeight {
    fn word(&self, side: Side) -> Option<&AtomicU64> {
        let at = LINE_WEIGHT_OFFSETS[usize::from(side == Side::B)];
        self.mem.words().get(at / 8)
    }

    /// Says `side`'s weight.
    pub fn set(&self, side: Side, weight: u32) {
        if let Some(w) = self.word(side) {
            store_le(w, u64::from(weight), Ordering::Relaxed);
        }
    }

    /// The weight `side` said, if it said one (0 and values past `u32` are unsaid).
    pub fn get(&self, side: Side) -> Option<u32> {
        let v = self.word(side).map_or(0, |w| load_le(w, Ordering::Relaxed));
        u32::try_from(v).ok().filter(|&v| v > 0)
    }
}

/// A cell-link region: its validated layout.
#[derive(Clone)]
pub struct CellLink {
    mem: Region,
    layout: Layout,
}

impl CellLink {
    /// Bytes of a region for rings of `entries` cells each.
    pub fn region_bytes(entries: u32) -> Result<usize, LayoutError> {
        Ok(Layout::cell_link(entries)?.region_size)
    }

    /// Lays out a fresh, zeroed region of exactly [`Self::region_bytes`] and writes its
    /// header.
    pub fn create(mem: Region, entries: u32) -> Result<Self, CellLinkError> {
        let layout = Layout::cell_link(entries)?;
        if mem.len_bytes() != layout.region_size {
            return Err(CellLinkError::RegionTooSmall {
                have: mem.len_bytes(),
                need: layout.region_size,
            });
        }
        layout.init_region(&*mem);
        Ok(CellLink { mem, layout })
    }

    /// Opens a region another process created, validating its header.
    pub fn open(mem: Region) -> Result<Self, CellLinkError> {
        let layout = Layout::load(&*mem, RegionKind::CellLink)?;
        Ok(CellLink { mem, layout })
    }

    /// The validated layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    fn ring(&self, i: usize) -> RingRef {
        let geom = self.layout.rings[i].expect("a validated cell link has rings 0 and 1");
        RingRef::new(self.mem.clone(), &geom)
    }

    /// The region's line-weight words.
    pub fn line_weight(&self) -> LineWeight {
        LineWeight {
            mem: self.mem.clone(),
        }
    }

    /// The region's splice word ([`SPLICE_OFFSET`]).
    pub fn splice_bits(&self) -> u64 {
        self.mem
            .words()
            .get(SPLICE_OFFSET / 8)
            .map_or(0, |w| load_le(w, Ordering::Acquire))
    }

    /// Sets `set` and clears `clear` in the splice word, atomically (each side's holder
    /// and the switch write it).
    pub fn update_splice_bits(&self, set: u64, clear: u64) {
        if let Some(w) = self.mem.words().get(SPLICE_OFFSET / 8) {
            let _ = w.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                Some(((u64::from_le(v) | set) & !clear).to_le())
            });
        }
    }

    /// Cells side `side` has published into its transmit ring and taken from its receive
    /// ring since the region was made, `(sent, taken)`: the rings' free-running indices,
    /// whoever ran the side (an application, the switch, one after the other). Read only,
    /// for an observer such as a switch reporting a lane it spliced; the values are the
    /// peers' and need not be consistent with each other.
    pub fn side_counts(&self, side: Side) -> (u64, u64) {
        let (tx, rx) = rings_of(side);
        (self.ring(tx).load_tail(), self.ring(rx).load_head())
    }

    /// The two ends of one side: its transmit ring's producer and receive ring's consumer.
    /// Attaching continues from the indices in the region (a restarted side picks up
    /// where the dead one left its last published batch).
    pub fn endpoint(&self, side: Side) -> Result<(CellProducer, CellConsumer), CellLinkError> {
        let (tx, rx) = rings_of(side);
        Ok((
            CellProducer {
                p: Producer::attach(self.ring(tx))?,
                waker: Waker::None,
                streaming: false,
            },
            CellConsumer {
                c: Consumer::attach(self.ring(rx))?,
                space_waker: Waker::None,
            },
        ))
    }
}

/// A side's transmit and receive rings: A sends on ring 0 and receives on ring 1.
fn rings_of(side: Side) -> (usize, usize) {
    match side {
        Side::A => (0, 1),
        Side::B => (1, 0),
    }
}

/// Copies a cell into a slot: 7 words, the last with 3 zero bytes after the cell.
#[inline(always)]
fn write_cell(slot: &[AtomicU64], cell: &CellBytes) {
    let Some(slot) = slot.get(..7) else { return };
    for (i, w) in slot.iter().enumerate().take(6) {
        let mut b = [0u8; 8];
        b.copy_from_slice(&cell[8 * i..8 * i + 8]);
        w.store(u64::from_ne_bytes(b), Ordering::Relaxed);
    }
    let mut b = [0u8; 8];
    b[..5].copy_from_slice(&cell[48..53]);
    slot[6].store(u64::from_ne_bytes(b), Ordering::Relaxed);
}

/// Copies a cell into a slot of 8 words with non-temporal stores, the whole line (the last
/// word zero): the line goes to memory without first being fetched from the consumer's
/// cache, so the producer does not wait for its ownership; the consumer reads it from
/// memory. The caller fences before publishing.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn write_cell_streaming(slot: &[AtomicU64], cell: &CellBytes) {
    let Some(slot) = slot.get(..8) else {
        return write_cell(slot, cell);
    };
    let word = |i: usize| {
        let mut b = [0u8; 8];
        let end = (8 * i + 8).min(CELL_BYTES);
        if 8 * i < end {
            b[..end - 8 * i].copy_from_slice(&cell[8 * i..end]);
        }
        i64::from_ne_bytes(b)
    };
    for (i, w) in slot.iter().enumerate() {
        // SAFETY: `w.as_ptr()` points at an aligned u64 of the mapped region, alive for
        // the call; the slot is beyond the published tail, so the consumer does not read
        // it until the fenced Release store publishes it (a peer that writes it anyway
        // only spoils its own entries: these words are never read back here).
        unsafe { std::arch::x86_64::_mm_stream_si64(w.as_ptr().cast::<i64>(), word(i)) };
    }
}

/// Copies a cell out of a slot.
#[inline(always)]
fn read_cell(slot: &[AtomicU64], cell: &mut CellBytes) {
    let Some(slot) = slot.get(..7) else { return };
    for (i, w) in slot.iter().enumerate().take(6) {
        cell[8 * i..8 * i + 8].copy_from_slice(&w.load(Ordering::Relaxed).to_ne_bytes());
    }
    cell[48..53].copy_from_slice(&slot[6].load(Ordering::Relaxed).to_ne_bytes()[..5]);
}

/// The fewest cells a streaming producer ([`CellProducer::set_streaming`]) writes with
/// non-temporal stores; smaller batches (a request, a reply) are written as usual, so that
/// the consumer finds them in cache rather than in memory.
pub const STREAMING_MIN: usize = 32;

/// Sends cells on one ring.
pub struct CellProducer {
    p: Producer,
    waker: Waker,
    streaming: bool,
}

impl CellProducer {
    /// Pushes as many of `cells` as fit (all, or a prefix) and publishes them; returns how
    /// many. 0 when full, or when the ring is broken (see [`Self::fault`]).
    #[inline]
    pub fn push_batch(&mut self, cells: &[CellBytes]) -> usize {
        #[cfg(target_arch = "x86_64")]
        let n = if self.streaming && cells.len() >= STREAMING_MIN {
            self.p
                .push_with_streaming(cells.len(), |k, slot| write_cell_streaming(slot, &cells[k]))
        } else {
            self.p
                .push_with(cells.len(), |k, slot| write_cell(slot, &cells[k]))
        };
        #[cfg(not(target_arch = "x86_64"))]
        let n = self
            .p
            .push_with(cells.len(), |k, slot| write_cell(slot, &cells[k]));
        if n > 0 {
            self.waker.after_publish(self.p.ring.waiting());
        }
        n
    }

    /// Writes batches of [`STREAMING_MIN`] cells or more with non-temporal stores (x86_64;
    /// elsewhere ordinary ones): the producer does not wait for the ownership of the lines
    /// the consumer read last, and the consumer reads them from memory instead of from the
    /// producer's cache. For a producer whose CPU is busier than its consumer's.
    pub fn set_streaming(&mut self, on: bool) {
        self.streaming = on;
    }

    /// Free slots now.
    pub fn free(&mut self) -> usize {
        self.p.free(usize::MAX)
    }

    /// How the consumer is woken when it sleeps (default: not at all, it polls).
    pub fn set_waker(&mut self, waker: Waker) {
        self.waker = waker;
    }

    /// The waker, to read its statistics.
    pub fn waker(&self) -> &Waker {
        &self.waker
    }

    /// Set once the consumer broke the ring's indices; the ring stays unusable.
    pub fn fault(&self) -> Option<RingFault> {
        self.p.fault()
    }

    /// The ring's free space as something to wait on ([`Wakeable`]: ready when a slot is
    /// free or the ring is broken), for a producer that sleeps until the consumer makes
    /// room. The consumer kicks it through its [`CellConsumer::set_space_waker`].
    pub fn space(&mut self) -> ProducerSpace<'_> {
        ProducerSpace(self)
    }

    /// The consumer-waiting flag of this ring (tests watch it to know the consumer sleeps).
    #[cfg(test)]
    pub(crate) fn waiting_flag_for_tests(&self) -> &AtomicU64 {
        self.p.ring.waiting()
    }

    /// Writes cells into the free slots without publishing them, word by word, stopping
    /// after `words` words: what a producer killed at that point of a push leaves.
    #[cfg(test)]
    pub(crate) fn stage_partial(&mut self, cells: &[CellBytes], words: usize) {
        let n = cells.len().min(self.p.free(cells.len()));
        let mut left = words;
        self.p.stage_with(n, &mut |k, slot: &[AtomicU64]| {
            let mut padded = [0u8; 56];
            padded[..CELL_BYTES].copy_from_slice(&cells[k]);
            for (w, chunk) in slot.iter().zip(padded.chunks_exact(8)) {
                if left == 0 {
                    return;
                }
                w.store(
                    u64::from_ne_bytes(chunk.try_into().expect("8 bytes")),
                    Ordering::Relaxed,
                );
                left -= 1;
            }
        });
    }
}

/// A producer's view of its ring's free slots, to wait on (see [`CellProducer::space`]).
pub struct ProducerSpace<'a>(&'a mut CellProducer);

impl Wakeable for ProducerSpace<'_> {
    fn ready(&mut self) -> bool {
        self.0.p.free(1) > 0 || self.0.p.fault().is_some()
    }

    fn waiting_flag(&self) -> &AtomicU64 {
        self.0.p.ring.space_waiting()
    }
}

/// Receives cells from one ring.
pub struct CellConsumer {
    c: Consumer,
    space_waker: Waker,
}

impl CellConsumer {
    /// Pops up to `out.len()` cells into `out`; returns how many. 0 when empty, or when the
    /// ring is broken (see [`Self::fault`]).
    #[inline]
    pub fn pop_batch(&mut self, out: &mut [CellBytes]) -> usize {
        let n = self
            .c
            .pop_with(out.len(), |k, slot| read_cell(slot, &mut out[k]));
        if n > 0 {
            self.space_waker.after_publish(self.c.ring.space_waiting());
        }
        n
    }

    /// How a producer waiting for free slots is woken (default: not at all, it polls).
    /// Costs a SeqCst fence per batch popped unless it is [`Waker::None`].
    pub fn set_space_waker(&mut self, waker: Waker) {
        self.space_waker = waker;
    }

    /// The space waker, to read its statistics.
    pub fn space_waker(&self) -> &Waker {
        &self.space_waker
    }

    /// Cells ready now.
    pub fn available(&mut self) -> usize {
        self.c.available(usize::MAX)
    }

    /// Set once the producer broke the ring's indices.
    pub fn fault(&self) -> Option<RingFault> {
        self.c.fault()
    }
}

impl Wakeable for CellConsumer {
    fn ready(&mut self) -> bool {
        self.c.available(1) > 0 || self.c.fault().is_some()
    }

    fn waiting_flag(&self) -> &AtomicU64 {
        self.c.ring.waiting()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::shm::HeapMem;

    #[test]
    fn each_side_says_its_line_weight_and_the_other_reads_it_and_the_rings_are_left_alone() {
        let mem: Region = Arc::new(HeapMem::new(CellLink::region_bytes(64).unwrap()).unwrap());
        let link = CellLink::create(mem.clone(), 64).unwrap();
        let w = link.line_weight();
        assert_eq!(
            (w.get(Side::A), w.get(Side::B)),
            (None, None),
            "a fresh region says nothing"
        );
        let (mut a_tx, _a_rx) = link.endpoint(Side::A).unwrap();
        w.set(Side::B, 22);
        // The other process opens the region: the words pass validation and read back.
        let opened = CellLink::open(mem).unwrap();
        assert_eq!(opened.line_weight().get(Side::B), Some(22));
        assert_eq!(opened.line_weight().get(Side::A), None);
        w.set(Side::A, 3);
        assert_eq!(opened.line_weight().get(Side::A), Some(3));
        let (_b_tx, mut b_rx) = opened.endpoint(Side::B).unwrap();
        assert_eq!(a_tx.push_batch(&[[9u8; 53]; 2]), 2);
        let mut got = [[0u8; 53]; 4];
        assert_eq!(b_rx.pop_batch(&mut got), 2);
        assert_eq!(got[1], [9u8; 53]);
        w.set(Side::B, 0);
        assert_eq!(opened.line_weight().get(Side::B), None, "0 is unsaid");
    }

    #[test]
    fn the_splice_word_reads_across_processes_and_a_side_taken_over_continues_its_ring() {
        let mem: Region = Arc::new(HeapMem::new(CellLink::region_bytes(64).unwrap()).unwrap());
        let link = CellLink::create(mem.clone(), 64).unwrap();
        assert_eq!(link.splice_bits(), 0, "a fresh region is not spliced");
        let (mut a_tx, _a_rx) = link.endpoint(Side::A).unwrap();
        let (_b_tx, mut b_rx) = CellLink::open(mem.clone())
            .unwrap()
            .endpoint(Side::B)
            .unwrap();
        assert_eq!(a_tx.push_batch(&[[1u8; 53], [2u8; 53], [3u8; 53]]), 3);
        let mut got = [[0u8; 53]; 4];
        assert_eq!(b_rx.pop_batch(&mut got[..1]), 1);
        // Side B changes hands: the new holder reads on from the old one's index.
        link.update_splice_bits(SPLICE_HELD_B | SPLICE_RELEASED_A, 0);
        drop(b_rx);
        let opened = CellLink::open(mem).unwrap();
        assert_eq!(opened.splice_bits(), SPLICE_HELD_B | SPLICE_RELEASED_A);
        let (_b_tx, mut b_rx) = opened.endpoint(Side::B).unwrap();
        assert_eq!(b_rx.pop_batch(&mut got), 2);
        assert_eq!(got[..2], [[2u8; 53], [3u8; 53]]);
        opened.update_splice_bits(SPLICE_RELEASED_B, SPLICE_HELD_B);
        assert_eq!(link.splice_bits(), SPLICE_RELEASED_A | SPLICE_RELEASED_B);
    }
}

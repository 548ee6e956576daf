//! The [`Switch`] state machine: its state here (ports, legs, cross-connect slots, the
//! cell pool and the slot pacer), its behaviour in the submodules along the cell's way:
//!
//! - [`ports`]: adding, removing, bringing up and down, flushing ports;
//! - [`connect`]: cross-connects made and removed (checks, UPC, CAC, the lookup tables);
//! - [`input`]: the cell input path (HEC, lookup, UPC, translation, queueing);
//! - [`express`]: the express path, input straight to output;
//! - [`output`]: the output path (pacing, strict priority, the UBR round robin);
//! - [`oam`]: AIS, segment loopback and the timers;
//! - [`signalling`]: VC 0.5 ended on signalling ports (receive and send queues);
//! - [`status`]: counters and what the switch holds.

mod connect;
mod express;
mod input;
mod oam;
mod output;
mod ports;
mod signalling;
pub use signalling::SIGNALLING_QUEUE_CELLS;
mod status;

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

use natm_core::slotmap::SlotMap;
use natm_core::{Duration, Instant};
use natm_traffic::cac::{Cac, Handle};
use natm_traffic::discard::{FrameDiscard, VcFrameState};
use natm_traffic::policer::Policer;
use natm_traffic::sched::Category;
use natm_wire::cell::HecReceiver;

use crate::types::{
    CrossConnect, DirCounters, PortConfig, PortCounters, PortId, SwitchConfig, SwitchError,
    category_index,
};

/// "No index" in the `u32` links and tables.
const NONE: u32 = u32::MAX;
/// The AIS period of I.610 (VP-AIS and VC-AIS): one cell per second while the defect lasts.
const AIS_PERIOD: Duration = Duration::from_secs(1);
const NANOS_PER_SEC: u64 = 1_000_000_000;

// Leg flags; the two top bits hold the category index.
const F_VP: u8 = 0x01;
const F_AAL5: u8 = 0x02;
/// UPC tags (rather than discards) non-conforming CLP=0 cells.
const F_TAG: u8 = 0x04;
/// A direction of class none: its cells are refused.
const F_BLOCKED: u8 = 0x08;
/// Weight 1: the round robin need not look the weight up. (A UBR leg is in its port's
/// ring exactly while it has cells queued.)
const F_WEIGHT1: u8 = 0x10;
/// Has an entry in `Switch::policed`.
const F_POLICED: u8 = 0x20;
const CAT_SHIFT: u8 = 6;
/// The UBR queue's index; the ones below it are FIFOs in strict priority.
const UBR: usize = category_index(Category::Ubr);

/// Header bits a VC leg keeps (PTI, CLP) and a VP leg keeps (VCI, PTI, CLP).
const KEEP_VC: u32 = 0x0000_000F;
const KEEP_VP: u32 = 0x000F_FFFF;
const CLP: u32 = 1;

/// One direction of a cross-connect: what the switch needs per cell. 32 bytes: what a
/// policed direction needs more lives in [`Policed`].
#[derive(Clone, Copy, Debug)]
struct Leg {
    cells_in: u64,
    dropped: u64,
    /// The output header's VPI (and VCI for a VC leg) bits; GFC 0.
    out_word: u32,
    /// The last cell of this leg's own circular list of queued cells (UBR only: the round
    /// robin serves it), or `NONE`; its `next` is the first.
    tail: u32,
    /// Cells of this leg in its output queue.
    queued: u32,
    /// The output port's slot.
    out_port: u16,
    flags: u8,
    frame: VcFrameState,
}

impl Leg {
    const EMPTY: Leg = Leg {
        cells_in: 0,
        dropped: 0,
        out_word: 0,
        tail: NONE,
        queued: 0,
        out_port: 0,
        flags: 0,
        frame: VcFrameState::Idle,
    };

    fn category(&self) -> usize {
        usize::from(self.flags >> CAT_SHIFT)
    }

    fn counters(&self, tagged: u64) -> DirCounters {
        DirCounters {
            cells_in: self.cells_in,
            cells_out: self.cells_in - self.dropped - u64::from(self.queued),
            dropped: self.dropped,
            tagged,
            queued: self.queued,
        }
    }
}

/// The UPC of a policed leg.
#[derive(Clone, Copy, Debug)]
struct Policed {
    policer: Policer,
    tagged: u64,
}

/// A queued cell: the output header (without HEC), the payload, the next cell in its list
/// and its leg (`NONE` for cells the switch generated). 60 bytes, padded to a cache line
/// so that reading one never touches two lines.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct QCell {
    payload: [u8; 48],
    word: u32,
    next: u32,
    leg: u32,
}

/// All queued cells of the switch, in singly linked lists, with a free list.
#[derive(Debug)]
struct Pool {
    cells: Vec<QCell>,
    free: u32,
}

impl Pool {
    fn new() -> Pool {
        Pool {
            cells: Vec::new(),
            free: NONE,
        }
    }

    #[inline]
    fn alloc(&mut self, word: u32, payload: &[u8; 48], leg: u32) -> u32 {
        let c = QCell {
            payload: *payload,
            word,
            next: NONE,
            leg,
        };
        if self.free != NONE {
            let i = self.free;
            self.free = self.cells[i as usize].next;
            self.cells[i as usize] = c;
            i
        } else {
            self.cells.push(c);
            (self.cells.len() - 1) as u32
        }
    }

    #[inline]
    fn release(&mut self, i: u32) {
        self.cells[i as usize].next = self.free;
        self.free = i;
    }

    #[inline]
    fn push(&mut self, list: &mut Fifo, i: u32) {
        if list.tail == NONE {
            list.head = i;
        } else {
            self.cells[list.tail as usize].next = i;
        }
        list.tail = i;
    }

    /// Appends `i` to the circular list ending at `tail`.
    #[inline]
    fn push_ring(&mut self, tail: &mut u32, i: u32) {
        if *tail == NONE {
            self.cells[i as usize].next = i;
        } else {
            self.cells[i as usize].next = self.cells[*tail as usize].next;
            self.cells[*tail as usize].next = i;
        }
        *tail = i;
    }

    /// Takes the first cell of the circular list ending at `tail`.
    #[inline]
    fn pop_ring(&mut self, tail: &mut u32) -> Option<u32> {
        if *tail == NONE {
            return None;
        }
        let head = self.cells[*tail as usize].next;
        if head == *tail {
            *tail = NONE;
        } else {
            self.cells[*tail as usize].next = self.cells[head as usize].next;
        }
        Some(head)
    }

    #[inline]
    fn pop(&mut self, list: &mut Fifo) -> Option<u32> {
        let i = list.head;
        if i == NONE {
            return None;
        }
        list.head = self.cells[i as usize].next;
        if list.head == NONE {
            list.tail = NONE;
        }
        Some(i)
    }
}

/// The head and tail of a list in the [`Pool`].
#[derive(Clone, Copy, Debug)]
struct Fifo {
    head: u32,
    tail: u32,
}

impl Fifo {
    const EMPTY: Fifo = Fifo {
        head: NONE,
        tail: NONE,
    };
}

/// Slot pacing of a rated port: slot `k` opens at `epoch + ⌈k·10⁹/rate⌉` ns. The quotient
/// and remainder of `k·10⁹/rate` are kept incrementally, so no slot needs a division.
#[derive(Clone, Copy, Debug)]
struct Pacer {
    rate: u32,
    epoch: Instant,
    k: u64,
    /// `⌊k·10⁹/rate⌋` and `k·10⁹ mod rate`.
    quotient: u64,
    remainder: u64,
}

impl Pacer {
    fn new(rate: u32, epoch: Instant) -> Pacer {
        Pacer {
            rate,
            epoch,
            k: 0,
            quotient: 0,
            remainder: 0,
        }
    }

    /// Slot 0 at `epoch`.
    fn restart(&mut self, epoch: Instant) {
        *self = Pacer::new(self.rate, epoch);
    }

    #[inline]
    fn slot(&self) -> Instant {
        let ns = self.quotient + u64::from(self.remainder != 0);
        Instant::from_nanos(self.epoch.as_nanos().saturating_add(ns))
    }

    #[inline]
    fn advance(&mut self) {
        let rate = u64::from(self.rate);
        self.k += 1;
        self.quotient += NANOS_PER_SEC / rate;
        self.remainder += NANOS_PER_SEC % rate;
        if self.remainder >= rate {
            self.remainder -= rate;
            self.quotient += 1;
        }
        // `rate` slots take exactly one second: keep the numbers small.
        if self.k == rate {
            debug_assert!(self.quotient == NANOS_PER_SEC && self.remainder == 0);
            let epoch = Instant::from_nanos(self.epoch.as_nanos().saturating_add(NANOS_PER_SEC));
            self.restart(epoch);
        }
    }
}

#[derive(Debug)]
struct Port {
    id: PortId,
    config: PortConfig,
    up: bool,
    hec: HecReceiver,
    /// Per VPI: the VP leg entering here, or `NONE`.
    vp: Vec<u32>,
    /// Per VPI: VC legs entering here (the VP ends here: F4 flows are the switch's).
    vcs_on_vpi: Vec<u32>,
    /// `vpi << 16 | vci` → VC leg entering here.
    vc: SlotMap,
    /// FIFOs of CBR (and generated OAM), rt-VBR and nrt-VBR cells.
    fifos: [Fifo; UBR],
    discard: [FrameDiscard; 4],
    /// UBR legs with cells, served round robin `weight` cells per turn.
    ring: VecDeque<u32>,
    served: u32,
    pacer: Option<Pacer>,
    next_ais: Option<Instant>,
    counters: PortCounters,
    /// CAC books of this port's output.
    cac: Cac,
    /// Signalling cells received (header with a good HEC), for the owner (signalling
    /// ports only; at most `SIGNALLING_QUEUE_CELLS`).
    sig_rx: VecDeque<[u8; 53]>,
    /// Cells the owner queued for 0.5 (header word without HEC, then the payload), served
    /// ahead of CBR; at most `SIGNALLING_QUEUE_CELLS`.
    sig_tx: VecDeque<(u32, [u8; 48])>,
    /// Cells queued since the last planted swap (test-only feature `mutants`).
    #[cfg(feature = "mutants")]
    reorder_count: u32,
}

impl Port {
    /// The next instant this port has something to do without input: its next slot while
    /// it is up with cells queued (rated ports only), or its next AIS cell.
    fn timeout(&self) -> Option<Instant> {
        let slot = match &self.pacer {
            Some(pacer) if self.up && self.has_output() => Some(pacer.slot()),
            _ => None,
        };
        match (self.next_ais, slot) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// [`timeout`](Self::timeout), its slot late by the line time of the cells queued
    /// behind the first, at most `window` (see [`Switch::poll_timeout_within`]).
    fn timeout_within(&self, window: Duration) -> Option<Instant> {
        let t = self.timeout()?;
        let Some(pacer) = &self.pacer else {
            return Some(t);
        };
        let queued: u64 = self.counters.queued();
        if !self.up || queued < 2 || self.next_ais.is_some_and(|a| a <= t) {
            return Some(t);
        }
        let behind = (queued - 1).saturating_mul(NANOS_PER_SEC / u64::from(pacer.rate));
        Some(t + Duration::from_nanos(behind.min(window.as_nanos())))
    }

    /// Whether any cell waits for output here.
    #[inline]
    fn has_output(&self) -> bool {
        self.counters.queue_depth != [0; 4] || !self.sig_tx.is_empty()
    }

    fn vpi_mask(&self) -> u32 {
        u32::from(self.config.format.max_vpi())
    }
}

/// A connection slot; free slots form a list through `next`.
#[derive(Clone, Debug)]
enum XcSlot {
    Live { generation: u32, xc: CrossConnect },
    Free { generation: u32, next: u32 },
}

impl XcSlot {
    fn generation(&self) -> u32 {
        match self {
            XcSlot::Live { generation, .. } | XcSlot::Free { generation, .. } => *generation,
        }
    }

    fn xc(&self) -> Option<&CrossConnect> {
        match self {
            XcSlot::Live { xc, .. } => Some(xc),
            XcSlot::Free { .. } => None,
        }
    }
}

/// The ATM switch fabric: ports, cross-connects, UPC, output queues and OAM, as a pure
/// state machine. See the crate documentation for the call contract.
#[derive(Debug)]
pub struct Switch {
    config: SwitchConfig,
    port_index: BTreeMap<PortId, u16>,
    /// The same as `port_index`, indexed by port number (`NONE` where none) up to the
    /// highest port: the lookup is per call on the cell path, a tree walk is not.
    slot_of: Vec<u32>,
    /// Boxed, as natm-adapter's VC state is: the per-cell check that a port exists reads
    /// a pointer no cell writes (the inline check was a hot spot in a profile). With the
    /// one lookup per run in `classify`: 1.065 → 0.993 µs per 64 cells of one VC in the
    /// bench; the two were not measured apart.
    ports: Vec<Option<Box<Port>>>,
    /// Leg `2·slot + 0` is a→b, `2·slot + 1` is b→a.
    legs: Vec<Leg>,
    xcs: Vec<XcSlot>,
    /// The first free slot, or `NONE`.
    free_slot: u32,
    live: u32,
    /// Leg → index into `policers`, for policed legs.
    policed: SlotMap,
    policers: Vec<Policed>,
    free_policers: Vec<u32>,
    /// CAC handles of connections that booked bandwidth (CBR, VBR): slot → per direction.
    reservations: BTreeMap<u32, [Option<(u16, Handle)>; 2]>,
    pool: Pool,
    /// Signalling cells waiting in the ports' receive queues, over all ports.
    sig_pending: usize,
    /// Scratch for [`handle_cells`](Self::handle_cells) and
    /// [`poll_transmit`](Self::poll_transmit), kept so that a call for one cell does not
    /// write a whole chunk's worth of it first.
    found: Vec<Found>,
    taken: Vec<u32>,
}

impl Switch {
    /// An empty switch: no ports, no connections.
    pub fn new(config: SwitchConfig) -> Switch {
        Switch {
            config,
            port_index: BTreeMap::new(),
            slot_of: Vec::new(),
            ports: Vec::new(),
            legs: Vec::new(),
            xcs: Vec::new(),
            free_slot: NONE,
            live: 0,
            policed: SlotMap::new(),
            policers: Vec::new(),
            free_policers: Vec::new(),
            reservations: BTreeMap::new(),
            pool: Pool::new(),
            sig_pending: 0,
            found: Vec::new(),
            taken: Vec::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &SwitchConfig {
        &self.config
    }

    fn slot(&self, port: PortId) -> Result<u16, SwitchError> {
        match self.slot_of.get(usize::from(port.0)) {
            Some(&slot) if slot != NONE => Ok(slot as u16),
            _ => Err(SwitchError::UnknownPort(port)),
        }
    }

    fn port(&self, slot: u16) -> &Port {
        self.ports[usize::from(slot)]
            .as_ref()
            .expect("a slot in port_index holds a port")
    }

    fn port_mut(&mut self, slot: u16) -> &mut Port {
        self.ports[usize::from(slot)]
            .as_mut()
            .expect("a slot in port_index holds a port")
    }
}

/// A cell of a chunk that has a leg: its index, the leg, its (corrected) header word and
/// the leg's flags.
#[derive(Clone, Copy, Debug, Default)]
struct Found {
    k: u32,
    li: u32,
    word: u32,
    flags: u8,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacer_slots_are_exact_across_the_second_boundary() {
        // OC-3c: 353,207 cells/s does not divide 10⁹.
        let rate = natm_core::PhyRate::OC3.cells_per_s();
        let epoch = Instant::from_nanos(5);
        let mut p = Pacer::new(rate, epoch);
        for k in 0..2 * u64::from(rate) + 10 {
            let want = 5 + (u128::from(k) * 1_000_000_000).div_ceil(u128::from(rate)) as u64;
            assert_eq!(p.slot().as_nanos(), want, "slot {k}");
            p.advance();
        }
        assert!(p.k < u64::from(rate), "k stays below the rate");
    }

    #[test]
    fn pool_lists_are_fifo_and_reuse_freed_cells() {
        let mut pool = Pool::new();
        let mut tail = NONE;
        let mut fifo = Fifo::EMPTY;
        for w in 0..5u32 {
            let i = pool.alloc(w, &[w as u8; 48], 7);
            pool.push_ring(&mut tail, i);
            let j = pool.alloc(w + 100, &[0; 48], NONE);
            pool.push(&mut fifo, j);
        }
        let mut ring_words = Vec::new();
        while let Some(i) = pool.pop_ring(&mut tail) {
            ring_words.push(pool.cells[i as usize].word);
            pool.release(i);
        }
        assert_eq!(ring_words, [0, 1, 2, 3, 4]);
        assert_eq!(tail, NONE);
        let mut fifo_words = Vec::new();
        while let Some(i) = pool.pop(&mut fifo) {
            fifo_words.push(pool.cells[i as usize].word);
            pool.release(i);
        }
        assert_eq!(fifo_words, [100, 101, 102, 103, 104]);
        // Ten cells were in use at most: the pool does not grow past its high-water mark.
        for _ in 0..10 {
            let i = pool.alloc(0, &[0; 48], NONE);
            pool.push(&mut fifo, i);
        }
        assert_eq!(pool.cells.len(), 10);
    }

    #[test]
    fn legs_and_queued_cells_have_the_sizes_the_docs_give() {
        assert_eq!(core::mem::size_of::<Leg>(), 32);
        assert_eq!(core::mem::size_of::<QCell>(), 64);
    }
}

//! The adapter: its state here (the per-VC state, the receive stage and the [`Adapter`]
//! itself), the rest in the submodules:
//!
//! - [`types`]: configuration, errors, completions, events and counters;
//! - [`vc`]: VCs opened and closed;
//! - [`buffers`]: buffers and descriptors posted, completions and events polled;
//! - [`tx`]: the transmit path (scheduling, shaping, segmentation);
//! - [`rx`]: the receive path (runs of cells, staging, reassembly, frame checks);
//! - [`timers`]: the reassembly timers.

mod buffers;
mod rx;
mod timers;
mod tx;
mod types;
mod vc;

pub use types::{
    AdapterConfig, Completion, ConfigError, Counters, Direction, Event, FrameDrop, HecCheck,
    OamKind, OpenError, RxVcConfig, Status, UnknownHandle, VcCounters,
};

use alloc::boxed::Box;
use alloc::collections::{BTreeSet, VecDeque};
use alloc::vec;
use alloc::vec::Vec;

use natm_core::slotmap::SlotMap;
use natm_core::{Duration, Instant};
use natm_traffic::gcra::{Gcra, GcraError};
use natm_traffic::policer::Policer;
use natm_traffic::sched::{Category, Scheduler, VcHandle, VcSpec};
use natm_wire::cell::{HEADER_LEN, HecReceiver, PAYLOAD_LEN};
use natm_wire::crc32::Crc32;

use crate::memory::BufferId;

/// Cells gathered before one buffer access and one CRC update (see the crate doc).
pub const STAGE_CELLS: usize = 64;
const STAGE_BYTES: usize = STAGE_CELLS * PAYLOAD_LEN;
/// The most buffer ids an adapter tracks (one state byte each).
pub const MAX_BUFFERS: u32 = 1 << 24;
/// The most VCs an adapter may be configured for.
pub const MAX_VCS: usize = 1 << 16;
/// A UBR VC whose PCR is at least this many cells/s (natm-traffic's fastest link: no link
/// can carry more) has no rate of its own: on an unlimited link it is not shaped.
pub const UBR_UNSHAPED_PCR: u32 = 1_000_000_000;
/// [`AdapterConfig::new`]'s shaping tolerance: a driver on the real clock wakes tens to
/// hundreds of µs late, and without a tolerance each late wake-up costs a shaped VC a cell
/// (one cell per call: a VC at 353,207 cells/s then crawls at the driver's wake-up rate).
/// A driver that calls on time sees exact CDVT-0 spacing whatever the tolerance.
pub const DEFAULT_SHAPER_CDV: Duration = Duration::from_millis(1);
/// "No slot" in the intrusive timer list and the stage.
const NIL: u32 = u32::MAX;
/// Refusals of posts that transfer no buffer (unknown or already held ids) waiting to be
/// polled; more are counted in [`Counters::refusals_dropped`], not queued.
const REFUSALS_MAX: usize = 1024;

/// Who holds a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BufState {
    App,
    Tx,
    RxFree,
    RxFilling,
    /// In the completion queue; the application's once polled.
    Returning,
}

#[derive(Clone, Copy, Debug)]
struct TxDesc {
    buffer: BufferId,
    len: u32,
}

#[derive(Clone, Copy, Debug)]
enum Rx {
    Idle,
    Filling {
        buffer: BufferId,
        /// Cells of the frame so far (the staged ones included).
        cells: u32,
        /// CRC over the cells written so far (not the staged ones).
        crc: Crc32,
        deadline: Option<Instant>,
    },
    /// A frame is being dropped: cells up to its end-of-frame cell are ignored.
    Skipping,
}

#[derive(Clone, Debug)]
struct Vc {
    handle: u32,
    key: u32,
    /// Header bytes (HEC included) of a middle and of the last cell of an SDU.
    header: [u8; HEADER_LEN],
    last_header: [u8; HEADER_LEN],
    txq: VecDeque<TxDesc>,
    /// Cells of the head SDU handed out, and their CRC.
    tx_next: u32,
    tx_crc: Crc32,
    sched: Option<VcHandle>,
    /// Unlimited links: the VC's own shaper, unless it has no rate (see [`UBR_UNSHAPED_PCR`]).
    shaper: Option<Shaper>,
    /// The key of a shaped VC in `Adapter::shaped` while `in_ring`.
    due: Instant,
    /// When a shaped VC last became backlogged: no cell counts as leaving before it.
    since: Instant,
    /// Scheduler backlog not backed by cells (an SDU cut short by a read fault).
    sched_excess: u64,
    /// Backlogged on an unlimited link: in the ring, or (shaped) in `Adapter::shaped`.
    in_ring: bool,
    max_sdu: usize,
    /// Cells of the longest SDU that fits both max_sdu and the receive buffer.
    rx_limit_cells: u32,
    policer: Option<Policer>,
    rx: Rx,
    /// Links of the timer FIFO; `timed` iff the VC is in it.
    t_prev: u32,
    t_next: u32,
    timed: bool,
    counters: VcCounters,
}

/// The shaper of one VC on an unlimited link, at CDVT 0 (as natm-traffic's scheduler
/// shapes on a rated one): a cell is due at the first instant where GCRA(1/PCR, 0) and, for
/// VBR, GCRA(1/SCR, BT) both conform, and is recorded in both when it leaves (at the
/// instant it left, or within `shaper_cdv` of it, when it was due).
#[derive(Clone, Copy, Debug)]
struct Shaper {
    peak: Gcra,
    sustainable: Option<Gcra>,
}

impl Shaper {
    /// The shaper of `spec` (the GCRAs of [`VcSpec::contract`], the contract the
    /// scheduler shapes to), or `None` for a UBR VC without a rate of its own.
    fn of(spec: &VcSpec) -> Result<Option<Shaper>, GcraError> {
        let contract = spec.contract();
        let sustainable = match spec.category {
            Category::Ubr if spec.pcr >= UBR_UNSHAPED_PCR => return Ok(None),
            Category::Cbr | Category::Ubr => None,
            Category::RtVbr | Category::NrtVbr => Some(Gcra::new(contract.sustainable_gcra()?)),
        };
        Ok(Some(Shaper {
            peak: Gcra::new(contract.peak_gcra()?),
            sustainable,
        }))
    }

    /// The earliest instant the next cell may leave. After a cell recorded at `t` it is
    /// after `t` (1/PCR is at least 1 ns).
    fn due(&self) -> Instant {
        let p = self.peak.next_conforming();
        match &self.sustainable {
            Some(s) => p.max(s.next_conforming()),
            None => p,
        }
    }

    /// A cell counted as leaving at `now` (not before [`due`](Self::due)).
    fn record(&mut self, now: Instant) {
        self.peak.record(now);
        if let Some(s) = &mut self.sustainable {
            s.record(now);
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    completion: Completion,
    /// Whether polling it gives the buffer back (false for refusals of ids not held).
    owned: bool,
}

/// The payloads of up to [`STAGE_CELLS`] cells (see the crate doc), on a cache line: the CRC
/// reads it 64 bytes at a time.
#[derive(Clone, Debug)]
#[repr(align(64))]
struct Stage([u8; STAGE_BYTES]);

/// The adapter of one link.
///
/// Call contract: see the crate doc. Nothing here panics on any cell bytes, any call order
/// or any argument; bad configurations are typed errors and bad descriptors come back as
/// completions. Every queue is bounded: descriptors by `max_tx_queued`, buffers by
/// `buffers`, events by `event_queue_max`, VCs by `max_vcs`.
#[derive(Clone, Debug)]
pub struct Adapter {
    config: AdapterConfig,
    now: Instant,
    /// Boxed: a slot's open check then reads a pointer that never changes while the VC is
    /// open. Inline, it read bytes of the receive state that every cell writes, and each
    /// cell stalled on the last one's store (a wide load over a narrower store in flight).
    vcs: Vec<Option<Box<Vc>>>,
    free_slots: Vec<u32>,
    open: usize,
    by_key: SlotMap,
    by_handle: SlotMap,
    /// The last key looked up and its slot (cells of a VC come in runs).
    key_cache: (u32, u32),
    sched: Option<Scheduler>,
    /// Scheduler handle index → slot.
    sched_slots: Vec<u32>,
    /// Unlimited links: backlogged unshaped slots in round-robin order.
    ring: VecDeque<u32>,
    /// Unlimited links: backlogged shaped slots by the instant each may send next.
    shaped: BTreeSet<(Instant, u32)>,
    tx_queued: usize,
    buffers: Vec<BufState>,
    rx_free: Vec<BufferId>,
    completions: VecDeque<Pending>,
    refusals_pending: usize,
    events: VecDeque<Event>,
    timer_head: u32,
    timer_tail: u32,
    stage: Stage,
    /// The receive stage's VC slot (NIL: empty) and cells; empty between calls.
    stage_slot: u32,
    stage_cells: usize,
    /// The I.432 receiver, natm-wire's (unused with [`HecCheck::Off`]); the `hec` and
    /// `hec_corrected` counters are its.
    hec: HecReceiver,
    counters: Counters,
}

impl Adapter {
    /// An adapter with no VC open and no buffer posted.
    pub fn new(config: AdapterConfig) -> Result<Adapter, ConfigError> {
        if config.buffers == 0 || config.buffers > MAX_BUFFERS {
            return Err(ConfigError::Buffers(config.buffers));
        }
        if config.rx_buffer_size == 0 {
            return Err(ConfigError::RxBufferSize);
        }
        if config.max_vcs == 0 || config.max_vcs > MAX_VCS {
            return Err(ConfigError::MaxVcs(config.max_vcs));
        }
        if config.max_tx_queued == 0 {
            return Err(ConfigError::MaxTxQueued);
        }
        let sched = match config.link.cells_per_s() {
            None => None,
            Some(r) => {
                let mut s = Scheduler::new(r).map_err(ConfigError::LinkRate)?;
                s.set_tolerance(config.shaper_cdv);
                Some(s)
            }
        };
        Ok(Adapter {
            config,
            now: Instant::ZERO,
            vcs: Vec::new(),
            free_slots: Vec::new(),
            open: 0,
            by_key: SlotMap::new(),
            by_handle: SlotMap::new(),
            key_cache: (NIL, NIL),
            sched,
            sched_slots: Vec::new(),
            ring: VecDeque::new(),
            shaped: BTreeSet::new(),
            tx_queued: 0,
            buffers: vec![BufState::App; config.buffers as usize],
            rx_free: Vec::new(),
            completions: VecDeque::new(),
            refusals_pending: 0,
            events: VecDeque::new(),
            timer_head: NIL,
            timer_tail: NIL,
            stage: Stage([0; STAGE_BYTES]),
            stage_slot: NIL,
            stage_cells: 0,
            hec: match config.hec {
                HecCheck::Detect => HecReceiver::detect_only(),
                HecCheck::Off | HecCheck::Correct => HecReceiver::new(),
            },
            counters: Counters::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &AdapterConfig {
        &self.config
    }

    /// Adapter-wide counters.
    pub fn counters(&self) -> Counters {
        let hec = self.hec.stats();
        Counters {
            hec: hec.discarded,
            hec_corrected: hec.corrected,
            ..self.counters
        }
    }

    /// An open VC's counters.
    pub fn vc_counters(&self, handle: u32) -> Option<VcCounters> {
        let slot = self.by_handle.get(handle)?;
        self.vcs[slot as usize].as_ref().map(|v| v.counters)
    }

    /// Free receive buffers posted and not yet taken by a frame.
    pub fn free_rx_buffers(&self) -> usize {
        self.rx_free.len()
    }

    /// Transmit descriptors queued (all VCs).
    pub fn tx_queued(&self) -> usize {
        self.tx_queued
    }

    /// Whether the adapter holds buffer `id` (posted, or completed and not yet polled).
    pub fn holds(&self, id: BufferId) -> bool {
        matches!(self.buffers.get(id.0 as usize), Some(s) if *s != BufState::App)
    }

    /// Time never goes back: an earlier `now` is the latest seen.
    fn clamp(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now);
        self.now
    }

    fn vc_mut(&mut self, slot: u32) -> &mut Vc {
        self.vcs[slot as usize]
            .as_mut()
            .expect("slots in maps, lists and the ring are open")
    }
}

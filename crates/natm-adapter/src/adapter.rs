//! The adapter: configuration, per-VC state, the transmit and receive paths.

use alloc::boxed::Box;
use alloc::collections::{BTreeSet, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use natm_core::{Duration, HeaderFormat, Instant, LineRate, VcId, Vci};
use natm_traffic::gcra::{Gcra, GcraError};
use natm_traffic::policer::{ContractError, Policer, Verdict};
use natm_traffic::sched::{Category, SchedError, Scheduler, VcHandle, VcSpec};
use natm_wire::aal5::{Aal5Error, MAX_SDU, TRAILER_LEN, cell_count, check_length};
use natm_wire::cell::{
    CELL_LEN, Cell, CellHeader, HEADER_LEN, HecReceiver, HecVerdict, PAYLOAD_LEN, Pti,
};
use natm_wire::crc32::{Crc32, RESIDUE};

use crate::memory::{BufferId, BufferMemory};
use natm_core::slotmap::SlotMap;

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

/// How received headers are checked (I.432 §4.3), by natm-wire's [`HecReceiver`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HecCheck {
    /// Not checked: the link did it.
    Off,
    /// Any header error discards the cell ([`HecReceiver::detect_only`]).
    Detect,
    /// The I.432 receiver: one single-bit error is corrected, then detection mode until an
    /// error-free header ([`HecReceiver::new`]).
    #[default]
    Correct,
}

/// Adapter-wide settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdapterConfig {
    /// The link's rate. With one ([`LineRate::cells_per_s`], 1..=10⁹ cells/s; a named
    /// layer's truncated) every cell goes through the scheduler. At [`LineRate::Unlimited`]
    /// (a memory ring) a VC with a finite contract is shaped to it (a cell leaves when its
    /// GCRAs allow, see [`AdapterConfig::shaper_cdv`]); the others (UBR at
    /// [`UBR_UNSHAPED_PCR`] or more) are served round robin, a burst at a time.
    pub link: LineRate,
    /// Unlimited links: how late a shaped VC's cells may leave and still count at the
    /// instants they were due, so a driver that calls [`Adapter::poll_transmit`] up to this
    /// late keeps the contract's rate (cells it was late for leave together, as a terminal's
    /// own cell delay variation). The output then conforms to GCRA(1/PCR, τ) and
    /// GCRA(1/SCR, BT + τ), τ this tolerance. Zero: CDVT-0 shaping, a late call loses the
    /// departures it missed. A VC gains nothing while it has nothing queued.
    pub shaper_cdv: Duration,
    /// UNI (8-bit VPI) or NNI (12-bit VPI) headers.
    pub format: HeaderFormat,
    /// Buffer ids are `0..buffers` (1..=[`MAX_BUFFERS`]).
    pub buffers: u32,
    /// Size of every receive buffer, bytes (at least 1); an SDU longer is oversize.
    pub rx_buffer_size: usize,
    /// A frame not complete this long after its first cell is dropped; `None`: never.
    pub reassembly_timeout: Option<Duration>,
    /// Header checking.
    pub hec: HecCheck,
    /// The most VCs open at once (1..=[`MAX_VCS`]).
    pub max_vcs: usize,
    /// The most transmit descriptors queued over all VCs (at least 1).
    pub max_tx_queued: usize,
    /// The most events waiting in [`Adapter::poll_event`]; more are counted and dropped.
    pub event_queue_max: usize,
}

impl AdapterConfig {
    /// An unlimited UNI link with a 1 ms shaping tolerance ([`DEFAULT_SHAPER_CDV`]),
    /// `buffers` ids with receive buffers of `rx_buffer_size` bytes, a 1 s reassembly
    /// timeout, HEC correction, 1,024 VCs, 4,096 queued descriptors and 1,024 events.
    pub const fn new(buffers: u32, rx_buffer_size: usize) -> AdapterConfig {
        AdapterConfig {
            link: LineRate::Unlimited,
            shaper_cdv: DEFAULT_SHAPER_CDV,
            format: HeaderFormat::Uni,
            buffers,
            rx_buffer_size,
            reassembly_timeout: Some(Duration::from_secs(1)),
            hec: HecCheck::Correct,
            max_vcs: 1024,
            max_tx_queued: 4096,
            event_queue_max: 1024,
        }
    }
}

/// Why an [`AdapterConfig`] was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// The link rate is not one the scheduler takes.
    LinkRate(SchedError),
    /// `buffers` is 0 or above [`MAX_BUFFERS`].
    Buffers(u32),
    /// `rx_buffer_size` is 0.
    RxBufferSize,
    /// `max_vcs` is 0 or above [`MAX_VCS`].
    MaxVcs(usize),
    /// `max_tx_queued` is 0.
    MaxTxQueued,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::LinkRate(e) => e.fmt(f),
            ConfigError::Buffers(n) => write!(f, "buffers {n} is not in 1..={MAX_BUFFERS}"),
            ConfigError::RxBufferSize => f.write_str("the receive buffer size is 0"),
            ConfigError::MaxVcs(n) => write!(f, "max_vcs {n} is not in 1..={MAX_VCS}"),
            ConfigError::MaxTxQueued => f.write_str("max_tx_queued is 0"),
        }
    }
}

impl core::error::Error for ConfigError {}

/// Receive settings of one VC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxVcConfig {
    /// The largest SDU accepted, 1..=65535 (linux-atm `max_sdu`).
    pub max_sdu: usize,
    /// The UPC applied to the VC's cells (I.371 §5.4); non-conforming cells are dropped
    /// and counted as `policed`, tagged ones pass.
    pub policer: Option<Policer>,
}

impl RxVcConfig {
    /// AAL5 up to `max_sdu` bytes, not policed.
    pub const fn aal5(max_sdu: usize) -> RxVcConfig {
        RxVcConfig {
            max_sdu,
            policer: None,
        }
    }
}

/// Why a VC could not be opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// A VC with this handle is open.
    HandleInUse(u32),
    /// The VC is open under another handle.
    VcInUse(VcId),
    /// The VPI does not fit the link's header format.
    VpiTooLarge {
        /// The VC.
        vc: VcId,
        /// The format's largest VPI.
        max: u16,
    },
    /// VCI 0 is unassigned and VCI 3/4 are the F4 OAM flows.
    ReservedVci(VcId),
    /// max_sdu must be 1..=65535.
    MaxSdu(usize),
    /// `max_vcs` VCs are open.
    TooManyVcs {
        /// The limit.
        max: usize,
    },
    /// The transmit contract was refused (by the scheduler, or its checks on an unlimited
    /// link).
    Tx(SchedError),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OpenError::HandleInUse(h) => write!(f, "handle {h} is in use"),
            OpenError::VcInUse(vc) => write!(f, "VC {vc} is open already"),
            OpenError::VpiTooLarge { vc, max } => {
                write!(
                    f,
                    "VC {vc}: the VPI exceeds {max}, the largest of this link"
                )
            }
            OpenError::ReservedVci(vc) => write!(
                f,
                "VC {vc}: VCI 0 is unassigned and VCI 3/4 are F4 OAM flows; they cannot be opened"
            ),
            OpenError::MaxSdu(n) => write!(f, "max_sdu {n} is outside 1..=65535"),
            OpenError::TooManyVcs { max } => write!(f, "{max} VCs are open already"),
            OpenError::Tx(e) => write!(f, "transmit contract refused: {e}"),
        }
    }
}

impl core::error::Error for OpenError {}

/// No VC is open with this handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownHandle(pub u32);

impl fmt::Display for UnknownHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no VC is open with handle {}", self.0)
    }
}

impl core::error::Error for UnknownHandle {}

/// Which way a completed buffer went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Posted with [`Adapter::post_tx`].
    Tx,
    /// Posted with [`Adapter::post_rx_buffer`].
    Rx,
}

/// What happened to a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Transmit: every cell was handed out. Receive: it holds an SDU of `len` bytes.
    Ok,
    /// The VC was closed (or the free pool reclaimed) while the adapter held it.
    Aborted,
    /// Refused: no VC is open with the handle.
    UnknownVc,
    /// Refused: the length is 0 or above 65535.
    BadLength,
    /// Refused: `max_tx_queued` descriptors are queued.
    QueueFull,
    /// Refused: the id is not below `AdapterConfig::buffers`. Ownership does not change.
    UnknownBuffer,
    /// Refused: the adapter holds this buffer already. Ownership does not change (the
    /// buffer comes back once, for the post that holds it).
    NotOwned,
    /// The buffer memory refused an access; the buffer is not used again.
    MemoryFault,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Ok => "ok",
            Status::Aborted => "aborted",
            Status::UnknownVc => "unknown VC",
            Status::BadLength => "length not in 1..=65535",
            Status::QueueFull => "transmit queue full",
            Status::UnknownBuffer => "unknown buffer",
            Status::NotOwned => "buffer already posted",
            Status::MemoryFault => "buffer memory fault",
        })
    }
}

/// A buffer handed back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The buffer.
    pub buffer: BufferId,
    /// Transmit or receive.
    pub direction: Direction,
    /// The VC: the descriptor's handle (transmit), the VC the SDU came on (receive);
    /// `None` for a free receive buffer that no frame took.
    pub handle: Option<u32>,
    /// Transmit: the descriptor's length. Receive: the SDU's length (0 unless `Ok`).
    pub len: usize,
    /// What happened.
    pub status: Status,
}

/// What a passed-aside cell is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OamKind {
    /// Segment OAM F5, PTI 100.
    F5Segment,
    /// End-to-end OAM F5, PTI 101.
    F5EndToEnd,
    /// Resource management, PTI 110.
    Rm,
    /// Segment OAM F4, VCI 3.
    F4Segment,
    /// End-to-end OAM F4, VCI 4.
    F4EndToEnd,
}

/// What the adapter passes aside, drained by [`Adapter::poll_event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// An OAM or RM cell, never reassembled.
    Oam {
        /// The VC of the header (for F4: the VPI with VCI 3 or 4).
        vc: VcId,
        /// The open VC's handle (`None` for F4 cells, which belong to the VP).
        handle: Option<u32>,
        /// What it is.
        kind: OamKind,
        /// The cell, with its header corrected if the HEC check corrected it.
        cell: [u8; CELL_LEN],
    },
}

/// Adapter-wide counters. Every cell handled is counted in `cells_in` and, if dropped, in
/// one drop counter; frame drops are counted once per frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Cells handed to `handle_cells`.
    pub cells_in: u64,
    /// Cells handed out by `poll_transmit`.
    pub cells_out: u64,
    /// SDUs received good and completed.
    pub frames_in: u64,
    /// SDUs whose last cell was handed out.
    pub frames_out: u64,
    /// SDU bytes received good.
    pub bytes_in: u64,
    /// SDU bytes of the SDUs sent.
    pub bytes_out: u64,
    /// Completions polled.
    pub completions: u64,
    /// Transmit descriptors refused (every refusal status).
    pub tx_refused: u64,
    /// Frames dropped at their first cell: no free receive buffer (the rest of the frame
    /// is skipped).
    pub no_buffer: u64,
    /// Frames with a bad CRC-32.
    pub crc: u64,
    /// Frames longer than the VC's max_sdu or the receive buffer.
    pub oversize: u64,
    /// Frames whose Length does not fit their cell count.
    pub length: u64,
    /// Frames with Length 0 (the sender aborted).
    pub aborted: u64,
    /// Frames dropped by the reassembly timeout.
    pub timeout: u64,
    /// Frames dropped because the buffer memory refused a write, or SDUs whose read failed.
    pub memory_fault: u64,
    /// Cells dropped for a header error.
    pub hec: u64,
    /// Headers corrected (single-bit errors).
    pub hec_corrected: u64,
    /// Cells dropped by a VC's policer.
    pub policed: u64,
    /// Cells on a VC that is not open.
    pub unknown_vc: u64,
    /// Cells with VCI 0 (unassigned or idle), dropped.
    pub unassigned: u64,
    /// Cells with the reserved PTI 111, dropped.
    pub reserved_pti: u64,
    /// OAM and RM cells passed aside.
    pub oam: u64,
    /// Events dropped because the event queue was full.
    pub events_dropped: u64,
    /// Refusals of unknown or already-held buffer ids not reported (too many waiting).
    pub refusals_dropped: u64,
}

/// Counters of one VC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VcCounters {
    /// Cells received on the VC (any PTI, before policing).
    pub cells_in: u64,
    /// Cells sent.
    pub cells_out: u64,
    /// SDUs received good.
    pub frames_in: u64,
    /// SDUs sent.
    pub frames_out: u64,
    /// SDU bytes received good.
    pub bytes_in: u64,
    /// SDU bytes sent.
    pub bytes_out: u64,
    /// Frames dropped for any reason (the adapter-wide counters say which).
    pub frames_dropped: u64,
    /// Cells dropped by the policer.
    pub policed: u64,
}

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

/// Why a frame was dropped (each reason has its counter in [`Counters`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameDrop {
    /// The CRC-32 is wrong.
    Crc,
    /// Length 0: the sender aborted the frame.
    Abort,
    /// The Length does not fit the frame's cell count.
    Length,
    /// Longer than the VC's max_sdu or the receive buffer.
    Oversize,
    /// Not complete within the reassembly timeout.
    Timeout,
}

impl FrameDrop {
    /// The verdict of natm-wire's [`check_length`] (the CRC was right).
    fn of(e: Aal5Error) -> FrameDrop {
        match e {
            Aal5Error::Crc { .. } => FrameDrop::Crc,
            Aal5Error::Abort => FrameDrop::Abort,
            Aal5Error::Oversize { .. } => FrameDrop::Oversize,
            // `check_length` gives neither of the last two.
            Aal5Error::Length { .. } | Aal5Error::NotCellMultiple { .. } | Aal5Error::EmptySdu => {
                FrameDrop::Length
            }
        }
    }
}

impl fmt::Display for FrameDrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FrameDrop::Crc => "AAL5 CRC error",
            FrameDrop::Abort => "AAL5 abort (Length = 0)",
            FrameDrop::Length => "AAL5 length error: Length does not fit the frame",
            FrameDrop::Oversize => "AAL5 oversize: longer than max_sdu or the receive buffer",
            FrameDrop::Timeout => "reassembly timeout",
        })
    }
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
            Some(r) => Some(Scheduler::new(r).map_err(ConfigError::LinkRate)?),
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

    /// Open a VC for both directions: `handle` names it in descriptors and completions.
    pub fn open_vc(
        &mut self,
        handle: u32,
        vc: VcId,
        tx: VcSpec,
        rx: RxVcConfig,
    ) -> Result<(), OpenError> {
        let format = self.config.format;
        if self.by_handle.get(handle).is_some() {
            return Err(OpenError::HandleInUse(handle));
        }
        if !vc.vpi.fits(format) {
            return Err(OpenError::VpiTooLarge {
                vc,
                max: format.max_vpi(),
            });
        }
        if matches!(
            vc.vci,
            Vci::UNASSIGNED | Vci::F4_SEGMENT | Vci::F4_END_TO_END
        ) {
            return Err(OpenError::ReservedVci(vc));
        }
        let key = vc.key();
        if self.by_key.get(key).is_some() {
            return Err(OpenError::VcInUse(vc));
        }
        if rx.max_sdu == 0 || rx.max_sdu > MAX_SDU {
            return Err(OpenError::MaxSdu(rx.max_sdu));
        }
        if self.open >= self.config.max_vcs {
            return Err(OpenError::TooManyVcs {
                max: self.config.max_vcs,
            });
        }
        let header = |end_of_frame| {
            CellHeader::data(vc, end_of_frame)
                .to_bytes(format)
                .map_err(|_| OpenError::VpiTooLarge {
                    vc,
                    max: format.max_vpi(),
                })
        };
        let (header, last_header) = (header(false)?, header(true)?);
        let (sched, shaper) = match &mut self.sched {
            Some(s) => (Some(s.add_vc(tx).map_err(OpenError::Tx)?), None),
            None => {
                // No scheduler to check the contract: the same check, without a link rate.
                tx.check().map_err(OpenError::Tx)?;
                let shaper = Shaper::of(&tx)
                    .map_err(|e| OpenError::Tx(SchedError::Contract(ContractError::Gcra(e))))?;
                (None, shaper)
            }
        };
        let rx_limit = rx.max_sdu.min(self.config.rx_buffer_size);
        let state = Vc {
            handle,
            key,
            header,
            last_header,
            txq: VecDeque::new(),
            tx_next: 0,
            tx_crc: Crc32::new(),
            sched,
            shaper,
            due: Instant::ZERO,
            since: Instant::ZERO,
            sched_excess: 0,
            in_ring: false,
            max_sdu: rx.max_sdu,
            rx_limit_cells: cell_count(rx_limit) as u32,
            policer: rx.policer,
            rx: Rx::Idle,
            t_prev: NIL,
            t_next: NIL,
            timed: false,
            counters: VcCounters::default(),
        };
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.vcs[s as usize] = Some(Box::new(state));
                s
            }
            None => {
                self.vcs.push(Some(Box::new(state)));
                (self.vcs.len() - 1) as u32
            }
        };
        if let Some(h) = sched {
            if self.sched_slots.len() <= h.index() {
                self.sched_slots.resize(h.index() + 1, NIL);
            }
            self.sched_slots[h.index()] = slot;
        }
        self.by_key.insert(key, slot);
        self.by_handle.insert(handle, slot);
        self.open += 1;
        Ok(())
    }

    /// Close a VC. Every buffer it held comes back as a completion with
    /// [`Status::Aborted`]: its queued descriptors, and the receive buffer of a frame in
    /// progress. Returns its counters.
    pub fn close_vc(&mut self, handle: u32) -> Result<VcCounters, UnknownHandle> {
        let slot = self.by_handle.remove(handle).ok_or(UnknownHandle(handle))?;
        self.timer_unlink(slot);
        debug_assert!(self.stage_slot != slot, "nothing is staged between calls");
        let vc = self.vcs[slot as usize]
            .take()
            .expect("the handle map points at open slots");
        self.by_key.remove(vc.key);
        self.key_cache = (NIL, NIL);
        for d in &vc.txq {
            self.complete(
                d.buffer,
                Direction::Tx,
                Some(handle),
                d.len as usize,
                Status::Aborted,
            );
        }
        self.tx_queued -= vc.txq.len();
        if let Rx::Filling { buffer, .. } = vc.rx {
            self.complete(buffer, Direction::Rx, Some(handle), 0, Status::Aborted);
        }
        if let (Some(s), Some(h)) = (&mut self.sched, vc.sched) {
            s.remove_vc(h).expect("the VC's scheduler handle is live");
            self.sched_slots[h.index()] = NIL;
        }
        if vc.in_ring {
            if vc.shaper.is_some() {
                self.shaped.remove(&(vc.due, slot));
            } else {
                self.ring.retain(|&s| s != slot);
            }
        }
        self.free_slots.push(slot);
        self.open -= 1;
        Ok(vc.counters)
    }

    /// Queue a completion; `owned` completions give the buffer back when polled.
    fn complete(
        &mut self,
        buffer: BufferId,
        direction: Direction,
        handle: Option<u32>,
        len: usize,
        status: Status,
    ) {
        self.buffers[buffer.0 as usize] = BufState::Returning;
        self.completions.push_back(Pending {
            completion: Completion {
                buffer,
                direction,
                handle,
                len,
                status,
            },
            owned: true,
        });
    }

    /// Refuse a post naming a buffer the adapter may not take (unknown, or held already):
    /// reported, but its ownership does not change.
    fn refuse_foreign(&mut self, buffer: BufferId, direction: Direction, handle: Option<u32>) {
        let status = if buffer.0 >= self.config.buffers {
            Status::UnknownBuffer
        } else {
            Status::NotOwned
        };
        if self.refusals_pending >= REFUSALS_MAX {
            self.counters.refusals_dropped += 1;
            return;
        }
        self.refusals_pending += 1;
        self.completions.push_back(Pending {
            completion: Completion {
                buffer,
                direction,
                handle,
                len: 0,
                status,
            },
            owned: false,
        });
    }

    /// Whether the application holds `buffer` (so the adapter may take it).
    fn app_owns(&self, buffer: BufferId) -> bool {
        self.buffers.get(buffer.0 as usize) == Some(&BufState::App)
    }

    /// Queue `len` bytes of `buffer` as one SDU on the VC `handle`. A descriptor that
    /// cannot be queued comes back as a completion naming the reason.
    pub fn post_tx(&mut self, now: Instant, buffer: BufferId, len: usize, handle: u32) {
        self.clamp(now);
        if !self.app_owns(buffer) {
            self.counters.tx_refused += 1;
            self.refuse_foreign(buffer, Direction::Tx, Some(handle));
            return;
        }
        let refusal = match self.by_handle.get(handle) {
            None => Err(Status::UnknownVc),
            Some(_) if len == 0 || len > MAX_SDU => Err(Status::BadLength),
            Some(_) if self.tx_queued >= self.config.max_tx_queued => Err(Status::QueueFull),
            Some(slot) => Ok(slot),
        };
        let slot = match refusal {
            Ok(slot) => slot,
            Err(status) => {
                self.counters.tx_refused += 1;
                self.complete(buffer, Direction::Tx, Some(handle), len, status);
                return;
            }
        };
        self.buffers[buffer.0 as usize] = BufState::Tx;
        self.tx_queued += 1;
        let desc = TxDesc {
            buffer,
            len: len as u32,
        };
        let vc = self.vcs[slot as usize]
            .as_mut()
            .expect("the handle map points at open slots");
        vc.txq.push_back(desc);
        match (&mut self.sched, vc.sched) {
            (Some(s), Some(h)) => {
                // At most max_tx_queued × 1366 cells: far from the scheduler's u64 limit.
                s.enqueue(h, cell_count(len) as u32)
                    .expect("a live handle and a bounded backlog");
            }
            _ => {
                if !vc.in_ring {
                    vc.in_ring = true;
                    match &vc.shaper {
                        Some(shaper) => {
                            vc.due = shaper.due();
                            vc.since = self.now;
                            self.shaped.insert((vc.due, slot));
                        }
                        None => self.ring.push_back(slot),
                    }
                }
            }
        }
    }

    /// Give the adapter a free receive buffer of `rx_buffer_size` bytes. A buffer it may
    /// not take comes back as a completion naming the reason.
    pub fn post_rx_buffer(&mut self, buffer: BufferId) {
        if !self.app_owns(buffer) {
            self.refuse_foreign(buffer, Direction::Rx, None);
            return;
        }
        self.buffers[buffer.0 as usize] = BufState::RxFree;
        self.rx_free.push(buffer);
    }

    /// Hand every free receive buffer back (completions with [`Status::Aborted`]); frames
    /// in progress keep theirs.
    pub fn reclaim_rx_buffers(&mut self) {
        while let Some(b) = self.rx_free.pop() {
            self.complete(b, Direction::Rx, None, 0, Status::Aborted);
        }
    }

    /// The next completed buffer, oldest first; the buffer is the application's again.
    pub fn poll_completion(&mut self) -> Option<Completion> {
        let p = self.completions.pop_front()?;
        if p.owned {
            self.buffers[p.completion.buffer.0 as usize] = BufState::App;
        } else {
            self.refusals_pending -= 1;
        }
        self.counters.completions += 1;
        Some(p.completion)
    }

    /// The next passed-aside cell.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The earliest time something is due: a cell may be sent (now, on an unlimited link
    /// with an unshaped backlog; when the first backlogged shaped VC's contract lets it
    /// send), or a reassembly deadline. `None`: nothing until the next input.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let tx = match &self.sched {
            // The scheduler's clock only moves in poll_transmit: never report a time
            // before the latest `now` the adapter has seen.
            Some(s) => s.poll_timeout().map(|t| t.max(self.now)),
            None if !self.ring.is_empty() => Some(self.now),
            None => self.shaped.first().map(|&(due, _)| due.max(self.now)),
        };
        let rx = match self.timer_head {
            NIL => None,
            slot => match self.vcs[slot as usize].as_ref().map(|v| v.rx) {
                Some(Rx::Filling { deadline, .. }) => deadline,
                _ => None,
            },
        };
        match (tx, rx) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Drop every frame whose reassembly deadline is at or before `now` (its buffer goes
    /// back to the free pool; counted as `timeout`).
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.clamp(now);
        while self.timer_head != NIL {
            let slot = self.timer_head;
            let state = self.vc_mut(slot).rx;
            match state {
                Rx::Filling {
                    deadline: Some(d), ..
                } if d <= now => self.drop_frame(slot, FrameDrop::Timeout),
                _ => break,
            }
        }
    }

    // ---------------------------------------------------------------- transmit

    /// Fill `out` with the cells that may be sent at `now`, reading the SDUs from `mem`;
    /// returns how many. On an unlimited link, first the cells of shaped VCs their
    /// contracts let send by `now` (earliest due first; one per VC unless
    /// [`AdapterConfig::shaper_cdv`] lets a late call catch up), then as many cells of the
    /// unshaped VCs as are queued and fit; on a rated link, at most one per link slot
    /// (usually one per call).
    pub fn poll_transmit<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        mem: &M,
        out: &mut [[u8; CELL_LEN]],
    ) -> usize {
        let now = self.clamp(now);
        let mut n = 0;
        if self.sched.is_some() {
            while n < out.len() {
                let Some(t) = self.sched.as_mut().and_then(|s| s.poll_transmit(now)) else {
                    break;
                };
                let slot = self.sched_slots[t.vc.index()];
                n += self.emit(slot, mem, &mut out[n..n + 1]);
            }
        } else {
            if !self.shaped.is_empty() {
                n = self.transmit_shaped(now, mem, out);
            }
            while n < out.len() {
                let Some(slot) = self.ring.pop_front() else {
                    break;
                };
                n += self.emit(slot, mem, &mut out[n..]);
                let vc = self.vc_mut(slot);
                if vc.txq.is_empty() {
                    vc.in_ring = false;
                } else {
                    self.ring.push_back(slot);
                }
            }
        }
        self.counters.cells_out += n as u64;
        n
    }

    /// Unlimited link: the cells of shaped VCs due at or before `now`, earliest due first;
    /// each counts as leaving when it was due, but not before `now − shaper_cdv` (without
    /// a tolerance: at `now`, one cell per VC).
    fn transmit_shaped<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        mem: &M,
        out: &mut [[u8; CELL_LEN]],
    ) -> usize {
        let floor = Instant::from_nanos(
            now.as_nanos()
                .saturating_sub(self.config.shaper_cdv.as_nanos()),
        );
        let mut n = 0;
        while n < out.len() {
            let Some(&(due, slot)) = self.shaped.first() else {
                break;
            };
            if due > now {
                break;
            }
            self.shaped.pop_first();
            // 0 cells only if the head SDU faulted before its first cell: no cell left, so
            // nothing is recorded and the VC's next SDU may go at once.
            let sent = self.emit(slot, mem, &mut out[n..n + 1]);
            n += sent;
            let vc = self.vc_mut(slot);
            let Some(shaper) = &mut vc.shaper else {
                vc.in_ring = false;
                continue;
            };
            if sent > 0 {
                shaper.record(due.max(floor).max(vc.since));
            }
            if vc.txq.is_empty() {
                vc.in_ring = false;
            } else {
                vc.due = shaper.due();
                let key = (vc.due, slot);
                self.shaped.insert(key);
            }
        }
        n
    }

    /// Cut up to `out.len()` (at most [`STAGE_CELLS`]) cells of the head SDU of `slot`.
    fn emit<M: BufferMemory + ?Sized>(
        &mut self,
        slot: u32,
        mem: &M,
        out: &mut [[u8; CELL_LEN]],
    ) -> usize {
        let stage = &mut self.stage.0;
        let vc = self.vcs[slot as usize]
            .as_mut()
            .expect("the ring and the scheduler name open slots");
        let Some(&desc) = vc.txq.front() else {
            // A scheduler grant for backlog an aborted SDU left behind: an idle slot.
            debug_assert!(vc.sched_excess > 0);
            vc.sched_excess = vc.sched_excess.saturating_sub(1);
            return 0;
        };
        let len = desc.len as usize;
        let total = cell_count(len);
        let first = vc.tx_next as usize;
        let c = out.len().min(STAGE_CELLS).min(total - first);
        let lo = first * PAYLOAD_LEN;
        let bytes = c * PAYLOAD_LEN;
        let data = len.saturating_sub(lo).min(bytes);
        if mem.read(desc.buffer, lo, &mut stage[..data]).is_err() {
            return self.tx_fault(slot, out);
        }
        stage[data..bytes].fill(0);
        let last = first + c == total;
        if last {
            // The trailer ends the last cell: UU 0, CPI 0, Length, then the CRC over all
            // that precedes it.
            let t = total * PAYLOAD_LEN - TRAILER_LEN - lo;
            stage[t..t + 2].fill(0);
            stage[t + 2..t + 4].copy_from_slice(&(len as u16).to_be_bytes());
            vc.tx_crc.update(&stage[..t + 4]);
            stage[t + 4..t + 8].copy_from_slice(&vc.tx_crc.finish().to_be_bytes());
        } else {
            vc.tx_crc.update(&stage[..bytes]);
        }
        for (cell, payload) in out[..c].iter_mut().zip(stage.chunks_exact(PAYLOAD_LEN)) {
            cell[..HEADER_LEN].copy_from_slice(&vc.header);
            cell[HEADER_LEN..].copy_from_slice(payload);
        }
        vc.counters.cells_out += c as u64;
        if !last {
            vc.tx_next += c as u32;
            return c;
        }
        out[c - 1][..HEADER_LEN].copy_from_slice(&vc.last_header);
        vc.txq.pop_front();
        vc.tx_next = 0;
        vc.tx_crc = Crc32::new();
        vc.counters.frames_out += 1;
        vc.counters.bytes_out += len as u64;
        let handle = vc.handle;
        self.tx_queued -= 1;
        self.counters.frames_out += 1;
        self.counters.bytes_out += len as u64;
        self.complete(desc.buffer, Direction::Tx, Some(handle), len, Status::Ok);
        c
    }

    /// The head SDU of `slot` could not be read: end it (an abort cell if some of its
    /// cells are out) and complete it with [`Status::MemoryFault`].
    fn tx_fault(&mut self, slot: u32, out: &mut [[u8; CELL_LEN]]) -> usize {
        let rated = self.sched.is_some();
        let vc = self.vc_mut(slot);
        let desc = vc.txq.pop_front().expect("the caller saw a head SDU");
        let total = cell_count(desc.len as usize) as u64;
        let sent = u64::from(vc.tx_next);
        let mut n = 0;
        if sent > 0 {
            // I.363.5: Length 0 aborts the CPCS-PDU; the CRC is right so the receiver
            // counts an abort, not a CRC error.
            let cell = &mut out[0];
            cell[..HEADER_LEN].copy_from_slice(&vc.last_header);
            cell[HEADER_LEN..].fill(0);
            vc.tx_crc.update(&cell[HEADER_LEN..CELL_LEN - 4]);
            let crc = vc.tx_crc.finish().to_be_bytes();
            cell[CELL_LEN - 4..].copy_from_slice(&crc);
            vc.counters.cells_out += 1;
            n = 1;
        }
        if rated {
            // This grant stood for one of the SDU's cells; the rest of its backlog is idle.
            vc.sched_excess += total - sent - 1;
        }
        vc.tx_next = 0;
        vc.tx_crc = Crc32::new();
        let handle = vc.handle;
        self.tx_queued -= 1;
        self.counters.memory_fault += 1;
        self.complete(
            desc.buffer,
            Direction::Tx,
            Some(handle),
            desc.len as usize,
            Status::MemoryFault,
        );
        n
    }

    // ---------------------------------------------------------------- receive

    /// Take in one cell (see [`handle_cells`](Self::handle_cells)).
    pub fn handle_cell<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        cell: &[u8; CELL_LEN],
        mem: &mut M,
    ) {
        self.handle_cells(now, core::slice::from_ref(cell), mem);
    }

    /// Take in cells in arrival order; reassembled payloads are written into posted
    /// receive buffers in `mem`. Any bytes are accepted.
    pub fn handle_cells<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        cells: &[[u8; CELL_LEN]],
        mem: &mut M,
    ) {
        let now = self.clamp(now);
        let mut i = 0;
        while let Some(cell) = cells.get(i) {
            let run = self.rx_run(now, &cells[i..], mem);
            if run > 0 {
                i += run;
            } else {
                self.rx_cell(now, cell, mem);
                i += 1;
            }
        }
        self.flush(mem);
    }

    /// [`handle_cells`](Self::handle_cells) without [`rx_run`](Self::rx_run): every cell
    /// through `rx_cell`, the reference the fast path is tested against.
    #[cfg(test)]
    pub(crate) fn handle_cells_one_by_one<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        cells: &[[u8; CELL_LEN]],
        mem: &mut M,
    ) {
        let now = self.clamp(now);
        for cell in cells {
            self.rx_cell(now, cell, mem);
        }
        self.flush(mem);
    }

    /// The middle of a frame in one pass: takes the cells at the front of `cells` whose
    /// header is the last good one (or, with the HEC not checked, the first cell's), when
    /// that header is user data without the end-of-frame mark on an unpoliced VC that is
    /// filling a frame, and stages their payloads as [`rx_cell`](Self::rx_cell) would,
    /// cell by cell; how many (0: none, the first cell must go through `rx_cell`). An
    /// SDU's cells but its first and last have one header, so this takes nearly all of
    /// them, with one compare per cell.
    #[inline]
    fn rx_run<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        cells: &[[u8; CELL_LEN]],
        mem: &mut M,
    ) -> usize {
        // The run's header: with the HEC checked, the last good one (so each cell's HEC
        // is checked by comparing the five bytes); unchecked, the first cell's four.
        let Some(first) = cells.first() else {
            return 0;
        };
        let (word, hec) = match self.config.hec {
            HecCheck::Off => (
                u32::from_be_bytes([first[0], first[1], first[2], first[3]]),
                None,
            ),
            _ => {
                let g = self.hec.last_valid();
                (u32::from_be_bytes([g[0], g[1], g[2], g[3]]), Some(g[4]))
            }
        };
        // Fixed-size compares: a slice compare here is a call to memcmp per cell.
        let same = |c: &[u8; CELL_LEN]| {
            u32::from_be_bytes([c[0], c[1], c[2], c[3]]) == word && hec.is_none_or(|h| c[4] == h)
        };
        if !same(first) {
            return 0;
        }
        let key = match self.config.format {
            HeaderFormat::Uni => (word >> 4) & 0x00FF_FFFF,
            HeaderFormat::Nni => (word >> 4) & 0x0FFF_FFFF,
        };
        // User data (PTI 0xx) without the end-of-frame mark (PTI x0x).
        if key != self.key_cache.0 || (word >> 1) & 0b101 != 0 {
            return 0;
        }
        let slot = self.key_cache.1;
        let Some(vc) = self.vcs[slot as usize].as_mut() else {
            return 0;
        };
        let Rx::Filling {
            cells: so_far,
            deadline,
            ..
        } = &vc.rx
        else {
            return 0;
        };
        if vc.policer.is_some() || deadline.is_some_and(|d| now >= d) {
            return 0;
        }
        // Up to the frame's cell limit: the cell past it goes through `rx_cell`, which
        // drops the frame as oversize.
        let room = vc.rx_limit_cells.saturating_sub(*so_far) as usize;
        let n = cells.iter().take(room).take_while(|c| same(c)).count();
        if n == 0 {
            return 0;
        }
        vc.counters.cells_in += n as u64;
        self.counters.cells_in += n as u64;
        if hec.is_some() {
            self.hec.valid_run(n as u64);
        }
        if self.stage_slot != slot {
            self.flush(mem);
        }
        // Stage by chunks that fill the stage: the frame's cell count must include the
        // staged cells and no more when the stage is flushed (it places them by it).
        let mut rest = &cells[..n];
        while !rest.is_empty() {
            self.stage_slot = slot;
            let m = rest.len().min(STAGE_CELLS - self.stage_cells);
            let (chunk, tail) = rest.split_at(m);
            for c in chunk {
                let at = self.stage_cells * PAYLOAD_LEN;
                self.stage.0[at..at + PAYLOAD_LEN].copy_from_slice(&c[HEADER_LEN..]);
                self.stage_cells += 1;
            }
            if let Some(Rx::Filling { cells, .. }) =
                self.vcs[slot as usize].as_mut().map(|v| &mut v.rx)
            {
                *cells += m as u32;
            }
            if self.stage_cells == STAGE_CELLS {
                self.flush(mem);
            }
            rest = tail;
        }
        n
    }

    #[inline]
    fn rx_cell<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        cell: &[u8; CELL_LEN],
        mem: &mut M,
    ) {
        self.counters.cells_in += 1;
        let mut header: [u8; HEADER_LEN] = cell[..HEADER_LEN].try_into().expect("53 > 5");
        let mut corrected = false;
        if self.config.hec != HecCheck::Off {
            match self.hec.check(&mut header) {
                HecVerdict::Valid => {}
                HecVerdict::Corrected { .. } => corrected = true,
                HecVerdict::Discarded { .. } => return,
            }
        }
        let word = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        let key = match self.config.format {
            HeaderFormat::Uni => (word >> 4) & 0x00FF_FFFF,
            HeaderFormat::Nni => (word >> 4) & 0x0FFF_FFFF,
        };
        let slot = if key == self.key_cache.0 {
            self.key_cache.1
        } else {
            match Vci::from_u16((word >> 4) as u16) {
                Vci::UNASSIGNED => {
                    self.counters.unassigned += 1;
                    return;
                }
                Vci::F4_SEGMENT | Vci::F4_END_TO_END => {
                    let kind = if (word >> 4) as u16 == 3 {
                        OamKind::F4Segment
                    } else {
                        OamKind::F4EndToEnd
                    };
                    self.pass_aside(None, kind, cell, corrected.then_some(header));
                    return;
                }
                _ => {}
            }
            let Some(slot) = self.by_key.get(key) else {
                self.counters.unknown_vc += 1;
                return;
            };
            self.key_cache = (key, slot);
            slot
        };
        let vc = self.vcs[slot as usize]
            .as_mut()
            .expect("the key map points at open slots");
        vc.counters.cells_in += 1;
        if let Some(p) = &mut vc.policer
            && p.police(now, word & 1 != 0) == Verdict::Discard
        {
            vc.counters.policed += 1;
            self.counters.policed += 1;
            return;
        }
        let kind = match Pti::from_bits((word >> 1) as u8 & 7) {
            Pti::UserData { end_of_frame, .. } => {
                let payload: &[u8; PAYLOAD_LEN] =
                    cell[HEADER_LEN..].try_into().expect("53 - 5 = 48");
                self.rx_data(now, slot, payload, end_of_frame, mem);
                return;
            }
            Pti::SegmentF5 => OamKind::F5Segment,
            Pti::EndToEndF5 => OamKind::F5EndToEnd,
            Pti::ResourceMgmt => OamKind::Rm,
            Pti::Reserved => {
                self.counters.reserved_pti += 1;
                return;
            }
        };
        let handle = vc.handle;
        self.pass_aside(Some(handle), kind, cell, corrected.then_some(header));
    }

    fn pass_aside(
        &mut self,
        handle: Option<u32>,
        kind: OamKind,
        cell: &[u8; CELL_LEN],
        corrected: Option<[u8; HEADER_LEN]>,
    ) {
        self.counters.oam += 1;
        if self.events.len() >= self.config.event_queue_max {
            self.counters.events_dropped += 1;
            return;
        }
        let mut cell = *cell;
        if let Some(h) = corrected {
            cell[..HEADER_LEN].copy_from_slice(&h);
        }
        let vc = Cell::new_unchecked(&cell[..]).vc(self.config.format);
        self.events.push_back(Event::Oam {
            vc,
            handle,
            kind,
            cell,
        });
    }

    /// A user-data cell of an open VC.
    #[inline]
    fn rx_data<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        slot: u32,
        payload: &[u8; PAYLOAD_LEN],
        end_of_frame: bool,
        mem: &mut M,
    ) {
        let state = self.vc_mut(slot).rx;
        let cells = match state {
            Rx::Skipping => {
                if end_of_frame {
                    self.vc_mut(slot).rx = Rx::Idle;
                }
                return;
            }
            Rx::Filling {
                deadline: Some(d), ..
            } if now >= d => {
                // handle_timeout came late: the old frame must not absorb this cell.
                self.drop_frame(slot, FrameDrop::Timeout);
                self.start_frame(now, slot, end_of_frame)
            }
            Rx::Filling { cells, .. } => Some(cells),
            Rx::Idle => self.start_frame(now, slot, end_of_frame),
        };
        let Some(cells) = cells else {
            return;
        };
        let vc = self.vc_mut(slot);
        if cells >= vc.rx_limit_cells {
            // More cells than the longest SDU that fits needs: oversize, whatever the
            // trailer will say.
            self.drop_frame(slot, FrameDrop::Oversize);
            if !end_of_frame {
                self.vc_mut(slot).rx = Rx::Skipping;
            }
            return;
        }
        if let Rx::Filling { cells, .. } = &mut vc.rx {
            *cells += 1;
        }
        if self.stage_slot != slot {
            self.flush(mem);
            self.stage_slot = slot;
        }
        let at = self.stage_cells * PAYLOAD_LEN;
        self.stage.0[at..at + PAYLOAD_LEN].copy_from_slice(payload);
        self.stage_cells += 1;
        if end_of_frame {
            self.finish_frame(slot, mem);
        } else if self.stage_cells == STAGE_CELLS {
            self.flush(mem);
        }
    }

    /// A frame's first cell: take a free buffer. `None` (and the frame skipped) if there
    /// is none.
    fn start_frame(&mut self, now: Instant, slot: u32, end_of_frame: bool) -> Option<u32> {
        let deadline = self
            .config
            .reassembly_timeout
            .and_then(|t| now.checked_add(t));
        let Some(buffer) = self.rx_free.pop() else {
            self.counters.no_buffer += 1;
            let vc = self.vc_mut(slot);
            vc.counters.frames_dropped += 1;
            vc.rx = if end_of_frame { Rx::Idle } else { Rx::Skipping };
            return None;
        };
        self.buffers[buffer.0 as usize] = BufState::RxFilling;
        self.vc_mut(slot).rx = Rx::Filling {
            buffer,
            cells: 0,
            crc: Crc32::new(),
            deadline,
        };
        if deadline.is_some() {
            self.timer_push(slot);
        }
        Some(0)
    }

    /// Write the staged cells of a frame in progress and add them to its CRC.
    fn flush<M: BufferMemory + ?Sized>(&mut self, mem: &mut M) {
        let slot = self.stage_slot;
        if slot == NIL {
            return;
        }
        let n = self.stage_cells;
        self.stage_slot = NIL;
        self.stage_cells = 0;
        let size = self.config.rx_buffer_size;
        let stage = &self.stage.0;
        let vc = self.vcs[slot as usize]
            .as_mut()
            .expect("the stage belongs to an open slot");
        let Rx::Filling {
            buffer, cells, crc, ..
        } = &mut vc.rx
        else {
            return;
        };
        let bytes = n * PAYLOAD_LEN;
        crc.update(&stage[..bytes]);
        let offset = (*cells as usize - n) * PAYLOAD_LEN;
        // Cells past the buffer's end can only be pad or an oversize SDU (checked at the
        // last cell): they are CRC'd, not written.
        let fits = bytes.min(size.saturating_sub(offset));
        if fits > 0 && mem.write(*buffer, offset, &stage[..fits]).is_err() {
            self.rx_fault(slot, true);
        }
    }

    /// The staged cells end a frame: check it (I.363.5 §10.4) and complete or drop it.
    fn finish_frame<M: BufferMemory + ?Sized>(&mut self, slot: u32, mem: &mut M) {
        let n = self.stage_cells;
        self.stage_slot = NIL;
        self.stage_cells = 0;
        let size = self.config.rx_buffer_size;
        let stage = &self.stage.0;
        let vc = self.vcs[slot as usize]
            .as_mut()
            .expect("the stage belongs to an open slot");
        let Rx::Filling {
            buffer,
            cells,
            mut crc,
            ..
        } = vc.rx
        else {
            return;
        };
        let bytes = n * PAYLOAD_LEN;
        crc.update(&stage[..bytes]);
        let trailer = &stage[bytes - TRAILER_LEN..bytes];
        let length = u16::from_be_bytes([trailer[2], trailer[3]]);
        let pdu_len = cells as usize * PAYLOAD_LEN;
        let crc_bad = crc.register() != RESIDUE;
        // Planted bug for natm-sim's meta-test (test-only feature): a bad CRC passes.
        #[cfg(feature = "mutants")]
        let crc_bad = crc_bad && !crate::mutants::ignore_crc();
        let verdict = if crc_bad {
            Err(FrameDrop::Crc)
        } else {
            check_length(length, pdu_len, vc.max_sdu.min(size)).map_err(FrameDrop::of)
        };
        let len = match verdict {
            Ok(len) => len,
            Err(why) => return self.drop_frame(slot, why),
        };
        let offset = (cells as usize - n) * PAYLOAD_LEN;
        let sdu_here = len.saturating_sub(offset).min(bytes);
        if sdu_here > 0 && mem.write(buffer, offset, &stage[..sdu_here]).is_err() {
            return self.rx_fault(slot, false);
        }
        vc.rx = Rx::Idle;
        vc.counters.frames_in += 1;
        vc.counters.bytes_in += len as u64;
        let handle = vc.handle;
        self.counters.frames_in += 1;
        self.counters.bytes_in += len as u64;
        self.timer_unlink(slot);
        self.complete(buffer, Direction::Rx, Some(handle), len, Status::Ok);
    }

    /// Drop the frame in progress on `slot`; its buffer goes back to the free pool.
    fn drop_frame(&mut self, slot: u32, why: FrameDrop) {
        if self.stage_slot == slot {
            self.stage_slot = NIL;
            self.stage_cells = 0;
        }
        self.timer_unlink(slot);
        let vc = self.vc_mut(slot);
        if let Rx::Filling { buffer, .. } = vc.rx {
            vc.counters.frames_dropped += 1;
            vc.rx = Rx::Idle;
            self.buffers[buffer.0 as usize] = BufState::RxFree;
            self.rx_free.push(buffer);
        }
        let c = &mut self.counters;
        match why {
            FrameDrop::Crc => c.crc += 1,
            FrameDrop::Abort => c.aborted += 1,
            FrameDrop::Length => c.length += 1,
            FrameDrop::Oversize => c.oversize += 1,
            FrameDrop::Timeout => c.timeout += 1,
        }
    }

    /// The memory refused a write into the frame's buffer: hand the buffer back with
    /// [`Status::MemoryFault`] (not reused) and skip the rest of the frame.
    fn rx_fault(&mut self, slot: u32, frame_continues: bool) {
        self.timer_unlink(slot);
        let vc = self.vc_mut(slot);
        let Rx::Filling { buffer, .. } = vc.rx else {
            return;
        };
        vc.counters.frames_dropped += 1;
        vc.rx = if frame_continues {
            Rx::Skipping
        } else {
            Rx::Idle
        };
        let handle = vc.handle;
        self.counters.memory_fault += 1;
        self.complete(buffer, Direction::Rx, Some(handle), 0, Status::MemoryFault);
    }

    // ---------------------------------------------------------------- timers

    /// Append `slot` to the timer FIFO: its deadline is the latest (one timeout for every
    /// VC, and `now` never goes back).
    fn timer_push(&mut self, slot: u32) {
        let tail = self.timer_tail;
        let vc = self.vc_mut(slot);
        debug_assert!(!vc.timed);
        vc.timed = true;
        vc.t_prev = tail;
        vc.t_next = NIL;
        if tail == NIL {
            self.timer_head = slot;
        } else {
            self.vc_mut(tail).t_next = slot;
        }
        self.timer_tail = slot;
    }

    fn timer_unlink(&mut self, slot: u32) {
        let vc = self.vc_mut(slot);
        if !vc.timed {
            return;
        }
        vc.timed = false;
        let (prev, next) = (vc.t_prev, vc.t_next);
        vc.t_prev = NIL;
        vc.t_next = NIL;
        if prev == NIL {
            self.timer_head = next;
        } else {
            self.vc_mut(prev).t_next = next;
        }
        if next == NIL {
            self.timer_tail = prev;
        } else {
            self.vc_mut(next).t_prev = prev;
        }
    }
}

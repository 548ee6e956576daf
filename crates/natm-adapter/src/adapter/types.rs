//! The adapter's public types: configuration and its errors, VC settings, completions,
//! events, counters and the reasons a frame is dropped.

use core::fmt;

use natm_core::{Duration, HeaderFormat, LineRate, VcId};
use natm_traffic::policer::Policer;
use natm_traffic::sched::SchedError;
use natm_wire::aal5::Aal5Error;
use natm_wire::cell::CELL_LEN;

use super::{DEFAULT_SHAPER_CDV, MAX_BUFFERS, MAX_VCS};
use crate::memory::BufferId;

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
    /// How late a shaped VC's cells may leave and still count at the instants they were
    /// due, so a driver that calls [`Adapter::poll_transmit`] up to this late keeps the
    /// contract's rate (cells it was late for leave together, as a terminal's own cell
    /// delay variation; on a rated link one per link slot the late call missed, the
    /// scheduler's [`set_tolerance`](natm_traffic::sched::Scheduler::set_tolerance)). The output then conforms to GCRA(1/PCR, τ) and
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
    pub(super) fn of(e: Aal5Error) -> FrameDrop {
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

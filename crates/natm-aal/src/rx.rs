//! The receive side: one [`Receiver`] for every VC of a link, reassembling AAL5 and passing
//! AAL0, OAM and RM cells through.
//!
//! Per cell, in this order:
//! 1. VCI 0 (unassigned and idle cells) is counted and dropped; VCI 3 and 4 are the F4 OAM
//!    flows of the VP (I.610) and are passed aside as [`CellKind::OamF4Segment`] /
//!    [`CellKind::OamF4EndToEnd`] whatever their PTI. This is wider on purpose than
//!    natm-wire's `OamFlow::of`, which labels only PTI 000/010 cells on VCI 3/4 as F4 (what
//!    Wireshark shows, for captures): I.361 reserves VCI 3/4 for the F4 flows, so no such
//!    cell may enter reassembly, and the OAM layer that takes the cell decides whether it
//!    is a valid OAM cell (PTI, CRC-10).
//! 2. A cell on a VC that is not open is counted and dropped.
//! 3. PTI 100 and 101 (F5 OAM, I.610) and 110 (RM) are passed aside as events carrying
//!    the cell; they never enter reassembly. PTI 111 (reserved) is counted and dropped.
//! 4. User-data cells go to the VC's AAL: AAL0 hands the raw cell up, AAL5 feeds
//!    natm-wire's [`Reassembler`], which applies the I.363.5 §10 receive rules (CRC-32,
//!    Length 0 = abort, Length/pad mismatch, oversize).

use alloc::collections::{BTreeSet, VecDeque};
use alloc::vec::Vec;
use core::fmt;

use natm_core::{Aal, Duration, HeaderFormat, Instant, VcId, Vci};
use natm_wire::aal5::{Aal5Error, MAX_SDU, Reassembler, Reassembly, pdu_len};
use natm_wire::cell::{CELL_LEN, Cell, HEADER_LEN, PAYLOAD_LEN, Pti};

use natm_core::slotmap::SlotMap;

/// A reassembly timeout that suits LAN round trips: a frame whose cells are more than this
/// apart is dropped. I.363.5 leaves the value to the implementation.
pub const DEFAULT_REASSEMBLY_TIMEOUT: Duration = Duration::from_secs(1);

/// Link-wide settings of a [`Receiver`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceiverConfig {
    /// Header layout of the link (UNI: 8-bit VPI, NNI: 12-bit).
    pub format: HeaderFormat,
    /// The most bytes the receiver holds at once: partial PDUs plus the payload of events
    /// not yet drained (SDU bytes, 53 per cell event). This bounds what peers can make the
    /// receiver keep. Capacity is bounded by configuration instead: each AAL5 VC allocates
    /// `pdu_len(max_sdu)` bytes of reassembly buffer at its first cell (natm-wire's
    /// `Reassembler`) and keeps it until the VC is closed.
    pub buffer_limit: usize,
    /// The most events waiting in [`Receiver::poll_event`].
    pub event_queue_max: usize,
}

impl Default for ReceiverConfig {
    fn default() -> ReceiverConfig {
        ReceiverConfig {
            format: HeaderFormat::Uni,
            buffer_limit: 16 << 20,
            event_queue_max: 4096,
        }
    }
}

/// Settings of one receiving VC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VcConfig {
    /// [`Aal::Aal5`] or [`Aal::Aal0`].
    pub aal: Aal,
    /// AAL5: the largest SDU accepted, 1..=65535 (linux-atm `max_sdu`).
    pub max_sdu: usize,
    /// AAL5: a frame not completed this long after its first cell is discarded; `None`
    /// keeps partial frames until their end cell comes (so does a deadline past the end of
    /// `Instant`).
    pub reassembly_timeout: Option<Duration>,
    /// The most bytes this VC holds: its partial PDU plus its undrained events. AAL5 needs
    /// at least `pdu_len(max_sdu)`; AAL0 at least one cell (53).
    pub buffer_limit: usize,
}

impl VcConfig {
    /// AAL5 with `max_sdu`, the default timeout, and room for two whole PDUs (one being
    /// reassembled while the previous waits to be drained).
    pub const fn aal5(max_sdu: usize) -> VcConfig {
        let capped = if max_sdu > MAX_SDU { MAX_SDU } else { max_sdu };
        VcConfig {
            aal: Aal::Aal5,
            max_sdu,
            reassembly_timeout: Some(DEFAULT_REASSEMBLY_TIMEOUT),
            buffer_limit: 2 * pdu_len(capped),
        }
    }

    /// AAL0 with room for 64 undrained cells.
    pub const fn aal0() -> VcConfig {
        VcConfig {
            aal: Aal::Aal0,
            max_sdu: PAYLOAD_LEN,
            reassembly_timeout: None,
            buffer_limit: 64 * CELL_LEN,
        }
    }

    /// The same with another reassembly timeout.
    pub const fn with_timeout(self, reassembly_timeout: Option<Duration>) -> VcConfig {
        VcConfig {
            reassembly_timeout,
            ..self
        }
    }

    /// The same with another per-VC buffer limit.
    pub const fn with_buffer_limit(self, buffer_limit: usize) -> VcConfig {
        VcConfig {
            buffer_limit,
            ..self
        }
    }
}

/// Why a VC could not be opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// The VC is open already.
    AlreadyOpen(VcId),
    /// The VPI does not fit the receiver's header format.
    VpiTooLarge {
        /// The VC asked for.
        vc: VcId,
        /// The format's largest VPI.
        max: u16,
    },
    /// VCI 0 carries no user traffic and VCI 3/4 are the F4 OAM flows (passed aside).
    ReservedVci(VcId),
    /// Only AAL0 and AAL5 are supported.
    UnsupportedAal(Aal),
    /// AAL5 max_sdu must be 1..=65535.
    MaxSdu(usize),
    /// The buffer limit cannot hold one whole PDU (or cell).
    BufferLimit {
        /// The limit asked for.
        buffer_limit: usize,
        /// The least that works.
        needed: usize,
    },
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OpenError::AlreadyOpen(vc) => write!(f, "VC {vc} is open already"),
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
            OpenError::UnsupportedAal(aal) => {
                write!(f, "AAL {aal} is not supported (only aal0 and aal5)")
            }
            OpenError::MaxSdu(n) => write!(f, "max_sdu {n} is outside 1..=65535"),
            OpenError::BufferLimit {
                buffer_limit,
                needed,
            } => write!(
                f,
                "buffer limit {buffer_limit} bytes is below the {needed} bytes one PDU needs"
            ),
        }
    }
}

impl core::error::Error for OpenError {}

/// The VC is not open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownVc(pub VcId);

impl fmt::Display for UnknownVc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VC {} is not open", self.0)
    }
}

impl core::error::Error for UnknownVc {}

/// What a cell passed aside is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CellKind {
    /// A user-data cell of an AAL0 VC.
    Aal0,
    /// Segment OAM F5 (PTI 100) on a user VC.
    OamF5Segment,
    /// End-to-end OAM F5 (PTI 101) on a user VC.
    OamF5EndToEnd,
    /// Resource management (PTI 110) on a user VC.
    Rm,
    /// Segment OAM F4 (VCI 3) of a VP.
    OamF4Segment,
    /// End-to-end OAM F4 (VCI 4) of a VP.
    OamF4EndToEnd,
}

impl fmt::Display for CellKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CellKind::Aal0 => "aal0",
            CellKind::OamF5Segment => "oam-f5-segment",
            CellKind::OamF5EndToEnd => "oam-f5-end-to-end",
            CellKind::Rm => "rm",
            CellKind::OamF4Segment => "oam-f4-segment",
            CellKind::OamF4EndToEnd => "oam-f4-end-to-end",
        })
    }
}

/// Why a partial or complete PDU was thrown away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Discard {
    /// An I.363.5 receive rule failed (CRC, Length 0 abort, Length, oversize).
    Pdu(Aal5Error),
    /// The frame was not completed within the reassembly timeout.
    Timeout {
        /// PDU bytes collected.
        bytes: usize,
    },
    /// The next cell would have taken the VC past its buffer limit.
    VcBufferFull {
        /// The VC's limit in bytes.
        limit: usize,
    },
    /// The next cell would have taken the receiver past its buffer limit.
    ReceiverBufferFull {
        /// The receiver's limit in bytes.
        limit: usize,
    },
}

impl fmt::Display for Discard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Discard::Pdu(e) => e.fmt(f),
            Discard::Timeout { bytes } => {
                write!(f, "reassembly timeout with {bytes} bytes collected")
            }
            Discard::VcBufferFull { limit } => {
                write!(f, "the VC's buffer limit of {limit} bytes is reached")
            }
            Discard::ReceiverBufferFull { limit } => {
                write!(f, "the receiver's buffer limit of {limit} bytes is reached")
            }
        }
    }
}

/// What the receiver hands up, drained by [`Receiver::poll_event`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// An AAL5 SDU that passed every receive check, in an owned buffer of exactly its length.
    Sdu {
        /// The VC it came on.
        vc: VcId,
        /// The SDU.
        sdu: Vec<u8>,
    },
    /// A cell passed aside: an AAL0 cell, or an OAM or RM cell (never reassembled).
    Cell {
        /// The VC (for F4 OAM: the VPI with VCI 3 or 4).
        vc: VcId,
        /// What it is.
        kind: CellKind,
        /// The whole cell as received, header and HEC included.
        cell: [u8; CELL_LEN],
    },
    /// A PDU was discarded (also counted in [`VcCounters`]).
    Discarded {
        /// The VC.
        vc: VcId,
        /// Why.
        reason: Discard,
    },
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Sdu { vc, sdu } => write!(f, "{vc}: SDU of {} bytes", sdu.len()),
            Event::Cell { vc, kind, .. } => write!(f, "{vc}: {kind} cell"),
            Event::Discarded { vc, reason } => write!(f, "{vc}: PDU discarded: {reason}"),
        }
    }
}

/// Counters of one VC. Every cell that reaches an open VC is counted exactly once in
/// `cells`, and its fate in one of the others (a PDU's fate once, when it ends).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VcCounters {
    /// Cells received on the VC, of any PTI.
    pub cells: u64,
    /// SDUs delivered (AAL5) or cells delivered (AAL0).
    pub delivered: u64,
    /// SDU bytes delivered (AAL5).
    pub sdu_bytes: u64,
    /// PDUs with a bad CRC-32.
    pub crc_errors: u64,
    /// PDUs whose Length does not fit the PDU.
    pub length_errors: u64,
    /// PDUs longer than max_sdu.
    pub oversize: u64,
    /// PDUs with Length 0 (the sender aborted).
    pub aborts: u64,
    /// Partial PDUs dropped by the reassembly timeout.
    pub timeouts: u64,
    /// Partial PDUs or AAL0 cells dropped at the VC's or the receiver's buffer limit.
    pub buffer_full: u64,
    /// SDUs or cells dropped because the event queue was full (the application did not drain).
    pub queue_full: u64,
    /// F5 OAM cells passed aside.
    pub oam_cells: u64,
    /// RM cells passed aside.
    pub rm_cells: u64,
    /// Cells with the reserved PTI 111, dropped.
    pub reserved_pti: u64,
}

/// Counters of cells that belong to no open VC, and of events not queued.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverCounters {
    /// Cells handled, all of them.
    pub cells: u64,
    /// Cells on a VC that is not open.
    pub unknown_vc: u64,
    /// Cells with VCI 0 (unassigned or idle).
    pub unassigned: u64,
    /// F4 OAM cells passed aside.
    pub oam_f4_cells: u64,
    /// Events of any kind not queued because the queue or the buffer limit was full.
    pub events_dropped: u64,
}

#[derive(Clone, Debug)]
enum Mode {
    Aal0,
    Aal5 {
        r: Reassembler,
        timeout: Option<Duration>,
        /// When the partial PDU expires; set iff a timer is in `Receiver::timers`.
        deadline: Option<Instant>,
        /// A buffer limit cut the PDU short: drop cells up to its end cell.
        skip_to_eof: bool,
    },
}

#[derive(Clone, Debug)]
struct Vc {
    id: VcId,
    mode: Mode,
    buffer_limit: usize,
    /// Bytes of its partial PDU plus its queued events.
    held: usize,
    counters: VcCounters,
}

#[derive(Clone, Debug)]
struct Queued {
    event: Event,
    /// The VC slot and its generation, for the VC's byte count (None for F4 cells).
    owner: Option<(u32, u32)>,
    bytes: usize,
}

#[derive(Clone, Debug)]
struct Slot {
    /// Bumped when the slot is reused, so events of a closed VC do not touch its successor.
    generation: u32,
    vc: Option<Vc>,
}

/// Receives the cells of one link for all its VCs.
///
/// Call contract (sans-IO; time is always an argument):
/// * `handle_cell(now, cell)` for each cell in arrival order;
/// * then drain [`poll_event`](Self::poll_event) until `None`;
/// * then sleep until [`poll_timeout`](Self::poll_timeout) (if any) and call
///   [`handle_timeout`](Self::handle_timeout) then, and drain events again.
///
/// The drain rule is not required for correctness: events wait in a queue bounded by
/// `event_queue_max` and by the byte limits, and what does not fit is dropped and counted
/// (`queue_full`, `events_dropped`), never held beyond the limits. A late `handle_timeout`
/// is harmless too: a cell arriving after its VC's deadline first expires the old frame.
///
/// Nothing here panics on any cell bytes or any call order.
#[derive(Clone, Debug)]
pub struct Receiver {
    config: ReceiverConfig,
    map: SlotMap,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Reassembly deadlines, ordered by time then slot (deterministic ties).
    timers: BTreeSet<(Instant, u32)>,
    events: VecDeque<Queued>,
    held: usize,
    counters: ReceiverCounters,
}

impl Receiver {
    /// A receiver with no VC open.
    pub fn new(config: ReceiverConfig) -> Receiver {
        Receiver {
            config,
            map: SlotMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            timers: BTreeSet::new(),
            events: VecDeque::new(),
            held: 0,
            counters: ReceiverCounters::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ReceiverConfig {
        &self.config
    }

    /// Start receiving on `vc`.
    pub fn open_vc(&mut self, vc: VcId, config: VcConfig) -> Result<(), OpenError> {
        if !vc.vpi.fits(self.config.format) {
            return Err(OpenError::VpiTooLarge {
                vc,
                max: self.config.format.max_vpi(),
            });
        }
        if matches!(
            vc.vci,
            Vci::UNASSIGNED | Vci::F4_SEGMENT | Vci::F4_END_TO_END
        ) {
            return Err(OpenError::ReservedVci(vc));
        }
        let (mode, needed) = match config.aal {
            Aal::Aal5 => {
                if config.max_sdu == 0 || config.max_sdu > MAX_SDU {
                    return Err(OpenError::MaxSdu(config.max_sdu));
                }
                let mode = Mode::Aal5 {
                    r: Reassembler::new(config.max_sdu),
                    timeout: config.reassembly_timeout,
                    deadline: None,
                    skip_to_eof: false,
                };
                (mode, pdu_len(config.max_sdu))
            }
            Aal::Aal0 => (Mode::Aal0, CELL_LEN),
            other @ Aal::None => return Err(OpenError::UnsupportedAal(other)),
        };
        if config.buffer_limit < needed {
            return Err(OpenError::BufferLimit {
                buffer_limit: config.buffer_limit,
                needed,
            });
        }
        let key = vc.key();
        if self.map.get(key).is_some() {
            return Err(OpenError::AlreadyOpen(vc));
        }
        let state = Vc {
            id: vc,
            mode,
            buffer_limit: config.buffer_limit,
            held: 0,
            counters: VcCounters::default(),
        };
        let slot = match self.free.pop() {
            Some(i) => {
                let s = &mut self.slots[i as usize];
                s.generation = s.generation.wrapping_add(1);
                s.vc = Some(state);
                i
            }
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    vc: Some(state),
                });
                (self.slots.len() - 1) as u32
            }
        };
        self.map.insert(key, slot);
        Ok(())
    }

    /// Stop receiving on `vc`: its partial PDU is dropped (not counted as an error); events
    /// already queued stay. Returns its counters.
    pub fn close_vc(&mut self, vc: VcId) -> Result<VcCounters, UnknownVc> {
        let slot = self.map.remove(vc.key()).ok_or(UnknownVc(vc))?;
        let s = &mut self.slots[slot as usize];
        let state = s.vc.take().expect("the map points at open slots");
        if let Mode::Aal5 { r, deadline, .. } = &state.mode {
            self.held -= r.pending();
            if let Some(d) = deadline {
                self.timers.remove(&(*d, slot));
            }
        }
        self.free.push(slot);
        Ok(state.counters)
    }

    /// Whether `vc` is open.
    pub fn is_open(&self, vc: VcId) -> bool {
        self.map.get(vc.key()).is_some()
    }

    /// The counters of an open VC.
    pub fn vc_counters(&self, vc: VcId) -> Option<VcCounters> {
        self.vc(vc).map(|v| v.counters)
    }

    /// Bytes an open VC holds (partial PDU and undrained events).
    pub fn vc_held_bytes(&self, vc: VcId) -> Option<usize> {
        self.vc(vc).map(|v| v.held)
    }

    /// Receiver-wide counters.
    pub fn counters(&self) -> &ReceiverCounters {
        &self.counters
    }

    /// Bytes held now: partial PDUs plus undrained events; never above `buffer_limit`.
    pub fn held_bytes(&self) -> usize {
        self.held
    }

    /// Events waiting.
    pub fn pending_events(&self) -> usize {
        self.events.len()
    }

    fn vc(&self, vc: VcId) -> Option<&Vc> {
        let slot = self.map.get(vc.key())?;
        self.slots[slot as usize].vc.as_ref()
    }

    /// Take in one cell. Any 53 bytes are accepted; the HEC is the link's business (natm-wire
    /// `HecReceiver`) and is not checked here.
    #[inline]
    pub fn handle_cell(&mut self, now: Instant, cell: &[u8; CELL_LEN]) {
        self.counters.cells += 1;
        let view = Cell::new_unchecked(cell);
        let id = view.vc(self.config.format);
        let kind = match id.vci {
            Vci::UNASSIGNED => {
                self.counters.unassigned += 1;
                return;
            }
            Vci::F4_SEGMENT => Some(CellKind::OamF4Segment),
            Vci::F4_END_TO_END => Some(CellKind::OamF4EndToEnd),
            _ => None,
        };
        if let Some(kind) = kind {
            self.counters.oam_f4_cells += 1;
            let event = Event::Cell {
                vc: id,
                kind,
                cell: *cell,
            };
            self.queue(None, event, CELL_LEN);
            return;
        }
        let Some(slot) = self.map.get(id.key()) else {
            self.counters.unknown_vc += 1;
            return;
        };
        let s = &mut self.slots[slot as usize];
        let generation = s.generation;
        let vc = s.vc.as_mut().expect("the map points at open slots");
        vc.counters.cells += 1;
        let kind = match view.pti() {
            Pti::UserData { end_of_frame, .. } => match vc.mode {
                Mode::Aal0 => CellKind::Aal0,
                Mode::Aal5 { .. } => {
                    let payload: &[u8; PAYLOAD_LEN] =
                        cell[HEADER_LEN..].try_into().expect("53 - 5 = 48");
                    self.aal5_data(now, slot, generation, payload, end_of_frame);
                    return;
                }
            },
            Pti::SegmentF5 => {
                vc.counters.oam_cells += 1;
                CellKind::OamF5Segment
            }
            Pti::EndToEndF5 => {
                vc.counters.oam_cells += 1;
                CellKind::OamF5EndToEnd
            }
            Pti::ResourceMgmt => {
                vc.counters.rm_cells += 1;
                CellKind::Rm
            }
            Pti::Reserved => {
                vc.counters.reserved_pti += 1;
                return;
            }
        };
        let event = Event::Cell {
            vc: id,
            kind,
            cell: *cell,
        };
        if self.queue(Some((slot, generation)), event, CELL_LEN) && kind == CellKind::Aal0 {
            self.vc_mut(slot).counters.delivered += 1;
        }
    }

    #[inline]
    fn vc_mut(&mut self, slot: u32) -> &mut Vc {
        self.slots[slot as usize]
            .vc
            .as_mut()
            .expect("the caller checked the slot is open")
    }

    #[inline]
    fn aal5_data(
        &mut self,
        now: Instant,
        slot: u32,
        generation: u32,
        payload: &[u8; PAYLOAD_LEN],
        end_of_frame: bool,
    ) {
        // A late handle_timeout must not let an expired frame absorb new cells.
        if let Mode::Aal5 {
            deadline: Some(d), ..
        } = self.vc_mut(slot).mode
            && now >= d
        {
            self.expire(slot, generation, d);
        }
        let receiver_room = self.config.buffer_limit.saturating_sub(self.held);
        let vc = self.slots[slot as usize]
            .vc
            .as_mut()
            .expect("the caller checked the slot is open");
        let Mode::Aal5 {
            r,
            timeout,
            deadline,
            skip_to_eof,
        } = &mut vc.mode
        else {
            return;
        };
        if *skip_to_eof {
            *skip_to_eof = !end_of_frame;
            return;
        }
        let before = r.pending();
        let full = if vc.held + PAYLOAD_LEN > vc.buffer_limit {
            Some(Discard::VcBufferFull {
                limit: vc.buffer_limit,
            })
        } else if receiver_room < PAYLOAD_LEN {
            Some(Discard::ReceiverBufferFull {
                limit: self.config.buffer_limit,
            })
        } else {
            None
        };
        let ended = match full {
            Some(reason) => {
                r.reset();
                *skip_to_eof = !end_of_frame;
                vc.counters.buffer_full += 1;
                Event::Discarded { vc: vc.id, reason }
            }
            None => match r.push(payload, end_of_frame) {
                Reassembly::Incomplete => {
                    let after = r.pending();
                    // A new PDU (or a discard in progress, which holds nothing: after == 0).
                    if before == 0
                        && after != 0
                        && let Some(t) = *timeout
                        && let Some(d) = now.checked_add(t)
                    {
                        *deadline = Some(d);
                        self.timers.insert((d, slot));
                    }
                    vc.held = vc.held - before + after;
                    self.held = self.held - before + after;
                    return;
                }
                Reassembly::Complete(_) => {
                    let sdu = r.sdu().to_vec();
                    r.reset();
                    Event::Sdu { vc: vc.id, sdu }
                }
                Reassembly::Discarded(e) => {
                    // The reassembler has dropped the PDU (pending() is 0 again).
                    let c = &mut vc.counters;
                    match e {
                        Aal5Error::Crc { .. } => c.crc_errors += 1,
                        Aal5Error::Abort => c.aborts += 1,
                        Aal5Error::Oversize { .. } => c.oversize += 1,
                        // `NotCellMultiple` and `EmptySdu` never come from `push`; counting
                        // them as length errors keeps this total.
                        Aal5Error::Length { .. }
                        | Aal5Error::NotCellMultiple { .. }
                        | Aal5Error::EmptySdu => c.length_errors += 1,
                    }
                    Event::Discarded {
                        vc: vc.id,
                        reason: Discard::Pdu(e),
                    }
                }
            },
        };
        // The PDU has ended: release its bytes and its timer, then hand up its event.
        vc.held -= before;
        self.held -= before;
        if let Some(d) = deadline.take() {
            self.timers.remove(&(d, slot));
        }
        // The SDU (at most `before` + 40 bytes) is smaller than the `before` + 48 the limits
        // admitted above, so only the queue length can refuse it.
        let sdu_len = match &ended {
            Event::Sdu { sdu, .. } => Some(sdu.len()),
            _ => None,
        };
        if self.queue(Some((slot, generation)), ended, sdu_len.unwrap_or(0))
            && let Some(n) = sdu_len
        {
            let c = &mut self.vc_mut(slot).counters;
            c.delivered += 1;
            c.sdu_bytes += n as u64;
        }
    }

    /// Drop the partial PDU of `slot`, whose timer is `(deadline, slot)`.
    fn expire(&mut self, slot: u32, generation: u32, deadline: Instant) {
        self.timers.remove(&(deadline, slot));
        let vc = self.vc_mut(slot);
        let Mode::Aal5 { r, deadline: d, .. } = &mut vc.mode else {
            return;
        };
        *d = None;
        let bytes = r.reset();
        vc.held -= bytes;
        vc.counters.timeouts += 1;
        let id = vc.id;
        self.held -= bytes;
        self.queue(
            Some((slot, generation)),
            Event::Discarded {
                vc: id,
                reason: Discard::Timeout { bytes },
            },
            0,
        );
    }

    /// Queue an event that holds `bytes`; `false` (and counted) if a limit refuses it.
    #[inline]
    fn queue(&mut self, owner: Option<(u32, u32)>, event: Event, bytes: usize) -> bool {
        let queue_ok = self.events.len() < self.config.event_queue_max;
        let mut bytes_ok = self.held + bytes <= self.config.buffer_limit;
        if let Some((slot, _)) = owner {
            let vc = self.vc_mut(slot);
            bytes_ok &= vc.held + bytes <= vc.buffer_limit;
            if queue_ok && bytes_ok {
                vc.held += bytes;
            } else if bytes > 0 {
                // A notice (0 bytes) lost is only counted receiver-wide; data is the VC's.
                if queue_ok {
                    vc.counters.buffer_full += 1;
                } else {
                    vc.counters.queue_full += 1;
                }
            }
        }
        if !(queue_ok && bytes_ok) {
            self.counters.events_dropped += 1;
            return false;
        }
        self.held += bytes;
        self.events.push_back(Queued {
            event,
            owner,
            bytes,
        });
        true
    }

    /// The next event, oldest first; the bytes it held are released.
    #[inline]
    pub fn poll_event(&mut self) -> Option<Event> {
        let q = self.events.pop_front()?;
        self.held -= q.bytes;
        if let Some((slot, generation)) = q.owner {
            let s = &mut self.slots[slot as usize];
            if s.generation == generation
                && let Some(vc) = s.vc.as_mut()
            {
                vc.held -= q.bytes;
            }
        }
        Some(q.event)
    }

    /// The earliest reassembly deadline, if any frame is in progress on a VC with a timeout.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.first().map(|&(t, _)| t)
    }

    /// Discard every partial PDU whose deadline is at or before `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&(d, slot)) = self.timers.first() {
            if d > now {
                break;
            }
            let generation = self.slots[slot as usize].generation;
            self.expire(slot, generation, d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use natm_core::Vpi;
    use natm_wire::aal5::{Segmenter, encode_pdu};
    use natm_wire::cell::CellHeader;

    const T0: Instant = Instant::from_nanos(1_000);
    const TIMEOUT: Duration = Duration::from_millis(10);

    fn vc(vpi: u32, vci: u32) -> VcId {
        VcId::uni(vpi, vci).unwrap()
    }

    fn cells(vc: VcId, sdu: &[u8]) -> Vec<[u8; CELL_LEN]> {
        Segmenter::uni(vc, sdu).unwrap().collect()
    }

    /// One cell with the given PTI on `vc` and a recognisable payload.
    fn cell_with_pti(vc: VcId, pti: Pti) -> [u8; CELL_LEN] {
        let h = CellHeader {
            gfc: 0,
            vc,
            pti,
            clp: false,
        };
        let mut c = [0x6Au8; CELL_LEN];
        c[..HEADER_LEN].copy_from_slice(&h.to_bytes(HeaderFormat::Uni).unwrap());
        c
    }

    /// The cells of a PDU whose trailer says `length` (CRC correct over whatever is there).
    fn pdu_cells(vc: VcId, body: &[u8], length: u16) -> Vec<[u8; CELL_LEN]> {
        let mut pdu = Vec::new();
        encode_pdu(body, 0, 0, &mut pdu).unwrap();
        let n = pdu.len();
        pdu[n - 6..n - 4].copy_from_slice(&length.to_be_bytes());
        let crc = natm_wire::aal5::Pdu::new_unchecked(&pdu[..]).computed_crc();
        pdu[n - 4..].copy_from_slice(&crc.to_be_bytes());
        let chunks = pdu.len() / PAYLOAD_LEN;
        pdu.chunks(PAYLOAD_LEN)
            .enumerate()
            .map(|(i, p)| {
                let pti = if i + 1 == chunks {
                    Pti::DATA_END
                } else {
                    Pti::DATA
                };
                let mut c = cell_with_pti(vc, pti);
                c[HEADER_LEN..].copy_from_slice(p);
                c
            })
            .collect()
    }

    fn rx_with(vc_config: VcConfig) -> (Receiver, VcId) {
        let mut rx = Receiver::new(ReceiverConfig::default());
        let v = vc(1, 100);
        rx.open_vc(v, vc_config).unwrap();
        (rx, v)
    }

    fn aal5_rx() -> (Receiver, VcId) {
        rx_with(VcConfig::aal5(1000).with_timeout(Some(TIMEOUT)))
    }

    /// Feed cells at `now`.
    macro_rules! recv {
        ($rx:expr, $now:expr, $cells:expr) => {
            for c in $cells.iter() {
                $rx.handle_cell($now, c);
            }
        };
    }

    /// The next event must match the pattern.
    macro_rules! event {
        ($rx:expr, $pat:pat) => {
            let e = $rx.poll_event();
            assert!(matches!(e, Some($pat)), "unexpected {e:?}");
        };
        ($rx:expr, $pat:pat if $cond:expr) => {
            let e = $rx.poll_event();
            let ok = matches!(e.clone(), Some($pat) if $cond);
            assert!(ok, "unexpected {e:?}");
        };
    }

    /// The next event must be a discard for this reason.
    macro_rules! discarded {
        ($rx:expr, $reason:pat) => {
            event!(
                $rx,
                Event::Discarded {
                    reason: $reason,
                    ..
                }
            );
        };
    }

    macro_rules! recv_nothing {
        ($rx:expr) => {
            assert_eq!($rx.poll_event(), None);
        };
    }

    /// A partial frame of `n` cells on `v`, and the rest of it.
    fn partial(rx: &mut Receiver, v: VcId, n: usize) -> Vec<[u8; CELL_LEN]> {
        let sdu: Vec<u8> = (0..200u8).collect();
        let mut cs = cells(v, &sdu);
        let rest = cs.split_off(n);
        recv!(rx, T0, cs);
        recv_nothing!(rx);
        assert_eq!(rx.held_bytes(), n * PAYLOAD_LEN);
        rest
    }

    #[test]
    fn test_idle_data_cell() {
        let (mut rx, v) = aal5_rx();
        let sdu = [7u8; 100];
        rx.handle_cell(T0, &cells(v, &sdu)[0]);
        recv_nothing!(rx);
        assert_eq!(rx.held_bytes(), 48);
        assert_eq!(rx.vc_held_bytes(v), Some(48));
        assert_eq!(rx.poll_timeout(), Some(T0 + TIMEOUT));
    }

    #[test]
    fn test_idle_end_cell() {
        let (mut rx, v) = aal5_rx();
        recv!(rx, T0, cells(v, b"hello"));
        assert_eq!(rx.held_bytes(), 5, "the undrained SDU is held");
        event!(rx, Event::Sdu { vc, sdu } if vc == v && sdu == b"hello");
        recv_nothing!(rx);
        assert_eq!(rx.held_bytes(), 0);
        assert_eq!(rx.poll_timeout(), None);
        let c = rx.vc_counters(v).unwrap();
        assert_eq!((c.cells, c.delivered, c.sdu_bytes), (1, 1, 5));
    }

    #[test]
    fn test_partial_data_cell() {
        let (mut rx, v) = aal5_rx();
        let rest = partial(&mut rx, v, 1);
        rx.handle_cell(T0 + Duration::from_millis(5), &rest[0]);
        recv_nothing!(rx);
        assert_eq!(rx.held_bytes(), 96);
        // The deadline runs from the first cell, not the latest.
        assert_eq!(rx.poll_timeout(), Some(T0 + TIMEOUT));
    }

    #[test]
    fn test_partial_end_cell() {
        let (mut rx, v) = aal5_rx();
        let rest = partial(&mut rx, v, 2);
        recv!(rx, T0, rest);
        event!(rx, Event::Sdu { sdu, .. } if sdu == (0..200u8).collect::<Vec<_>>());
        recv_nothing!(rx);
        assert_eq!(rx.poll_timeout(), None);
        assert_eq!(rx.held_bytes(), 0);
    }

    #[test]
    fn test_partial_oam_cell() {
        let (mut rx, v) = aal5_rx();
        let rest = partial(&mut rx, v, 2);
        let seg = cell_with_pti(v, Pti::SegmentF5);
        let e2e = cell_with_pti(v, Pti::EndToEndF5);
        rx.handle_cell(T0, &seg);
        rx.handle_cell(T0, &e2e);
        event!(rx, Event::Cell { vc, kind: CellKind::OamF5Segment, cell } if vc == v && cell == seg);
        event!(rx, Event::Cell { kind: CellKind::OamF5EndToEnd, cell, .. } if cell == e2e);
        // The frame in progress did not see them.
        recv!(rx, T0, rest);
        event!(rx, Event::Sdu { sdu, .. } if sdu.len() == 200);
        let c = rx.vc_counters(v).unwrap();
        assert_eq!((c.oam_cells, c.delivered, c.crc_errors), (2, 1, 0));
    }

    #[test]
    fn test_idle_oam_cell() {
        let (mut rx, v) = aal5_rx();
        rx.handle_cell(T0, &cell_with_pti(v, Pti::EndToEndF5));
        event!(
            rx,
            Event::Cell {
                kind: CellKind::OamF5EndToEnd,
                ..
            }
        );
        assert_eq!(rx.poll_timeout(), None, "an OAM cell starts no frame");
        assert_eq!(rx.held_bytes(), 0);
    }

    #[test]
    fn test_partial_rm_cell() {
        let (mut rx, v) = aal5_rx();
        let rest = partial(&mut rx, v, 3);
        let rm = cell_with_pti(v, Pti::ResourceMgmt);
        rx.handle_cell(T0, &rm);
        event!(rx, Event::Cell { kind: CellKind::Rm, cell, .. } if cell == rm);
        recv!(rx, T0, rest);
        event!(rx, Event::Sdu { .. });
        assert_eq!(rx.vc_counters(v).unwrap().rm_cells, 1);
    }

    #[test]
    fn test_partial_reserved_pti() {
        let (mut rx, v) = aal5_rx();
        let rest = partial(&mut rx, v, 1);
        rx.handle_cell(T0, &cell_with_pti(v, Pti::Reserved));
        recv_nothing!(rx);
        recv!(rx, T0, rest);
        event!(rx, Event::Sdu { .. });
        assert_eq!(rx.vc_counters(v).unwrap().reserved_pti, 1);
    }

    #[test]
    fn test_partial_timeout() {
        let (mut rx, v) = aal5_rx();
        let rest = partial(&mut rx, v, 2);
        // Just before the deadline nothing happens.
        rx.handle_timeout(T0 + Duration::from_nanos(TIMEOUT.as_nanos() - 1));
        recv_nothing!(rx);
        rx.handle_timeout(T0 + TIMEOUT);
        event!(rx, Event::Discarded { vc, reason: Discard::Timeout { bytes: 96 } } if vc == v);
        recv_nothing!(rx);
        assert_eq!(rx.held_bytes(), 0);
        assert_eq!(rx.poll_timeout(), None);
        assert_eq!(rx.vc_counters(v).unwrap().timeouts, 1);
        // The rest of the timed-out frame fails its CRC (it is only a tail); the next frame
        // is fine.
        let later = T0 + Duration::from_millis(20);
        recv!(rx, later, rest);
        discarded!(
            rx,
            Discard::Pdu(Aal5Error::Length { .. } | Aal5Error::Crc { .. })
        );
        recv!(rx, later, cells(v, b"next"));
        event!(rx, Event::Sdu { sdu, .. } if sdu == b"next");
    }

    #[test]
    fn test_partial_cell_after_deadline() {
        // handle_timeout was never called: the cell expires the old frame first.
        let (mut rx, v) = aal5_rx();
        partial(&mut rx, v, 2);
        let later = T0 + Duration::from_millis(50);
        recv!(rx, later, cells(v, b"fresh"));
        discarded!(rx, Discard::Timeout { bytes: 96 });
        event!(rx, Event::Sdu { sdu, .. } if sdu == b"fresh");
        assert_eq!(rx.poll_timeout(), None);
    }

    #[test]
    fn test_idle_timeout() {
        let (mut rx, v) = aal5_rx();
        rx.handle_timeout(T0 + Duration::from_secs(100));
        recv_nothing!(rx);
        assert_eq!(rx.vc_counters(v).unwrap().timeouts, 0);
    }

    #[test]
    fn test_partial_no_timeout_configured() {
        let (mut rx, v) = rx_with(VcConfig::aal5(1000).with_timeout(None));
        let rest = partial(&mut rx, v, 2);
        assert_eq!(rx.poll_timeout(), None);
        recv!(rx, Instant::from_nanos(u64::MAX), rest);
        event!(rx, Event::Sdu { .. });
    }

    #[test]
    fn test_partial_oversize() {
        let (mut rx, v) = rx_with(VcConfig::aal5(100));
        let big = cells(v, &[1u8; 300]);
        recv!(rx, T0, big);
        discarded!(rx, Discard::Pdu(Aal5Error::Oversize { .. }));
        recv_nothing!(rx);
        assert_eq!(rx.held_bytes(), 0);
        assert_eq!(rx.poll_timeout(), None);
        recv!(rx, T0, cells(v, &[2u8; 100]));
        event!(rx, Event::Sdu { sdu, .. } if sdu == [2u8; 100]);
        assert_eq!(rx.vc_counters(v).unwrap().oversize, 1);
    }

    #[test]
    fn test_idle_end_cell_length_above_max_sdu() {
        // The PDU fits the buffer (3 cells) but its Length says 130 > max_sdu 100.
        let (mut rx, v) = rx_with(VcConfig::aal5(100));
        let cs = pdu_cells(v, &[3u8; 130], 130);
        assert_eq!(cs.len(), 3);
        // pdu_len(100) is 144 = 3 cells, so the reassembler holds it all.
        recv!(rx, T0, cs);
        discarded!(
            rx,
            Discard::Pdu(Aal5Error::Oversize {
                len: 130,
                max_sdu: 100
            })
        );
        assert_eq!(rx.vc_counters(v).unwrap().oversize, 1);
    }

    #[test]
    fn test_partial_end_cell_bad_crc() {
        let (mut rx, v) = aal5_rx();
        let mut cs = cells(v, &[9u8; 150]);
        cs[1][20] ^= 0x10;
        recv!(rx, T0, cs);
        discarded!(rx, Discard::Pdu(Aal5Error::Crc { .. }));
        recv_nothing!(rx);
        let c = rx.vc_counters(v).unwrap();
        assert_eq!((c.crc_errors, c.delivered), (1, 0));
        assert_eq!(rx.held_bytes(), 0);
    }

    #[test]
    fn test_idle_abort() {
        // atm-facts §2.3: the abort PDU, 40 zero bytes and trailer 00 00 00 00 38 66 24 c1.
        let (mut rx, v) = aal5_rx();
        let mut c = cell_with_pti(v, Pti::DATA_END);
        c[HEADER_LEN..].fill(0);
        c[CELL_LEN - 4..].copy_from_slice(&[0x38, 0x66, 0x24, 0xc1]);
        rx.handle_cell(T0, &c);
        discarded!(rx, Discard::Pdu(Aal5Error::Abort));
        assert_eq!(rx.vc_counters(v).unwrap().aborts, 1);
    }

    #[test]
    fn test_partial_abort() {
        let (mut rx, v) = aal5_rx();
        partial(&mut rx, v, 2);
        // An abort ends the frame in progress: its cells are part of the aborted PDU.
        let cs = pdu_cells(v, &[0u8; 1], 0);
        recv!(rx, T0, cs);
        discarded!(rx, Discard::Pdu(Aal5Error::Abort | Aal5Error::Crc { .. }));
        assert_eq!(rx.held_bytes(), 0);
    }

    #[test]
    fn test_idle_end_cell_length_error() {
        let (mut rx, v) = aal5_rx();
        // Two cells but Length 10: pad of 78 > 47.
        recv!(rx, T0, pdu_cells(v, &[5u8; 60], 10));
        discarded!(
            rx,
            Discard::Pdu(Aal5Error::Length {
                length: 10,
                pdu_len: 96
            })
        );
        // Length longer than the PDU.
        recv!(rx, T0, pdu_cells(v, &[5u8; 20], 60));
        discarded!(
            rx,
            Discard::Pdu(Aal5Error::Length {
                length: 60,
                pdu_len: 48
            })
        );
        assert_eq!(rx.vc_counters(v).unwrap().length_errors, 2);
    }

    #[test]
    fn test_partial_lost_end_cell() {
        let (mut rx, v) = aal5_rx();
        let mut first = cells(v, &[1u8; 100]);
        first.pop();
        recv!(rx, T0, first);
        recv!(rx, T0, cells(v, &[2u8; 100]));
        // Strict I.363.5: both frames are lost, nothing salvaged.
        discarded!(rx, Discard::Pdu(_));
        recv_nothing!(rx);
        recv!(rx, T0, cells(v, &[3u8; 100]));
        event!(rx, Event::Sdu { sdu, .. } if sdu == [3u8; 100]);
    }

    #[test]
    fn test_unknown_vc_data_cell() {
        let (mut rx, _) = aal5_rx();
        recv!(rx, T0, cells(vc(1, 101), b"stray"));
        rx.handle_cell(T0, &cell_with_pti(vc(2, 100), Pti::SegmentF5));
        recv_nothing!(rx);
        assert_eq!(rx.counters().unknown_vc, 2);
        assert_eq!(rx.held_bytes(), 0);
        assert_eq!(rx.vc_counters(vc(1, 101)), None);
    }

    #[test]
    fn test_idle_unassigned_cell() {
        let (mut rx, _) = aal5_rx();
        let mut idle = [0x6Au8; CELL_LEN];
        idle[..HEADER_LEN].copy_from_slice(&[0, 0, 0, 1, 0x52]);
        rx.handle_cell(T0, &idle);
        rx.handle_cell(T0, &[0u8; CELL_LEN]);
        recv_nothing!(rx);
        assert_eq!(rx.counters().unassigned, 2);
    }

    #[test]
    fn test_idle_f4_oam_cell() {
        // F4 flows are passed aside whether or not a VC of that VP is open.
        let (mut rx, _) = aal5_rx();
        let seg = cell_with_pti(vc(7, 3), Pti::DATA);
        let e2e = cell_with_pti(vc(7, 4), Pti::DATA);
        rx.handle_cell(T0, &seg);
        rx.handle_cell(T0, &e2e);
        event!(rx, Event::Cell { vc: v, kind: CellKind::OamF4Segment, cell } if v == vc(7, 3) && cell == seg);
        event!(
            rx,
            Event::Cell {
                kind: CellKind::OamF4EndToEnd,
                ..
            }
        );
        assert_eq!(rx.counters().oam_f4_cells, 2);
    }

    #[test]
    fn test_partial_vc_buffer_limit() {
        // Room for one PDU: an undrained SDU leaves no room for the next frame.
        let limit = pdu_len(200);
        let (mut rx, v) = rx_with(VcConfig::aal5(200).with_buffer_limit(limit));
        recv!(rx, T0, cells(v, &[1u8; 200]));
        recv!(rx, T0, cells(v, &[2u8; 200]));
        assert!(rx.vc_held_bytes(v).unwrap() <= limit);
        event!(rx, Event::Sdu { sdu, .. } if sdu == [1u8; 200]);
        event!(rx, Event::Discarded { reason: Discard::VcBufferFull { limit: l }, .. } if l == limit);
        recv_nothing!(rx);
        assert_eq!(rx.vc_counters(v).unwrap().buffer_full, 1);
        // Drained: the next frame gets through.
        recv!(rx, T0, cells(v, &[3u8; 200]));
        event!(rx, Event::Sdu { sdu, .. } if sdu == [3u8; 200]);
    }

    #[test]
    fn test_partial_receiver_buffer_limit() {
        let mut rx = Receiver::new(ReceiverConfig {
            buffer_limit: 200,
            ..ReceiverConfig::default()
        });
        let (a, b) = (vc(0, 40), vc(0, 41));
        rx.open_vc(a, VcConfig::aal5(1000)).unwrap();
        rx.open_vc(b, VcConfig::aal5(1000)).unwrap();
        let ca = cells(a, &[1u8; 150]);
        let cb = cells(b, &[2u8; 150]);
        // a holds 3 × 48 = 144; b's first cell does not fit, its frame is skipped to its end.
        recv!(rx, T0, ca[..3]);
        recv!(rx, T0, cb);
        assert!(rx.held_bytes() <= 200);
        event!(rx, Event::Discarded { vc, reason: Discard::ReceiverBufferFull { limit: 200 } } if vc == b);
        recv_nothing!(rx);
        recv!(rx, T0, ca[3..]);
        event!(rx, Event::Sdu { vc, .. } if vc == a);
        recv!(rx, T0, cells(b, &[2u8; 150]));
        event!(rx, Event::Sdu { vc, .. } if vc == b);
    }

    #[test]
    fn test_idle_end_cell_event_queue_full() {
        let mut rx = Receiver::new(ReceiverConfig {
            event_queue_max: 1,
            ..ReceiverConfig::default()
        });
        let v = vc(0, 40);
        rx.open_vc(v, VcConfig::aal5(1000)).unwrap();
        recv!(rx, T0, cells(v, b"one"));
        recv!(rx, T0, cells(v, b"two"));
        assert_eq!(rx.pending_events(), 1);
        assert_eq!(rx.held_bytes(), 3);
        event!(rx, Event::Sdu { sdu, .. } if sdu == b"one");
        recv_nothing!(rx);
        let c = rx.vc_counters(v).unwrap();
        assert_eq!((c.delivered, c.sdu_bytes, c.queue_full), (1, 3, 1));
        assert_eq!(rx.counters().events_dropped, 1);
    }

    #[test]
    fn test_aal0_data_cell() {
        let (mut rx, v) = rx_with(VcConfig::aal0());
        let c = cells(v, &[4u8; 100]);
        recv!(rx, T0, c);
        for want in &c {
            event!(rx, Event::Cell { kind: CellKind::Aal0, cell, .. } if cell == *want);
        }
        recv_nothing!(rx);
        assert_eq!(rx.poll_timeout(), None);
        assert_eq!(rx.vc_counters(v).unwrap().delivered, 3);
    }

    #[test]
    fn test_aal0_oam_cell() {
        let (mut rx, v) = rx_with(VcConfig::aal0());
        rx.handle_cell(T0, &cell_with_pti(v, Pti::SegmentF5));
        event!(
            rx,
            Event::Cell {
                kind: CellKind::OamF5Segment,
                ..
            }
        );
    }

    #[test]
    fn test_aal0_buffer_limit() {
        let (mut rx, v) = rx_with(VcConfig::aal0().with_buffer_limit(2 * CELL_LEN));
        recv!(rx, T0, cells(v, &[4u8; 200]));
        assert_eq!(rx.pending_events(), 2);
        assert_eq!(rx.vc_held_bytes(v), Some(2 * CELL_LEN));
        let c = rx.vc_counters(v).unwrap();
        assert_eq!((c.cells, c.delivered, c.buffer_full), (5, 2, 3));
    }

    #[test]
    fn test_partial_close() {
        let (mut rx, v) = aal5_rx();
        let rest = partial(&mut rx, v, 2);
        let counters = rx.close_vc(v).unwrap();
        assert_eq!(counters.cells, 2);
        assert_eq!(rx.held_bytes(), 0);
        assert_eq!(rx.poll_timeout(), None);
        assert!(!rx.is_open(v));
        recv!(rx, T0, rest);
        assert_eq!(rx.counters().unknown_vc, 3);
        assert_eq!(rx.close_vc(v), Err(UnknownVc(v)));
    }

    #[test]
    fn test_closed_with_queued_events_slot_reused() {
        let (mut rx, v) = aal5_rx();
        recv!(rx, T0, cells(v, &[1u8; 30]));
        rx.close_vc(v).unwrap();
        let w = vc(1, 200);
        rx.open_vc(w, VcConfig::aal5(100)).unwrap();
        recv!(rx, T0, cells(w, &[2u8; 10]));
        assert_eq!(rx.held_bytes(), 40);
        assert_eq!(rx.vc_held_bytes(w), Some(10));
        // The old VC's SDU is still delivered and does not touch the new VC's count.
        event!(rx, Event::Sdu { vc, sdu } if vc == v && sdu == [1u8; 30]);
        assert_eq!(rx.vc_held_bytes(w), Some(10));
        event!(rx, Event::Sdu { vc, .. } if vc == w);
        assert_eq!((rx.held_bytes(), rx.vc_held_bytes(w)), (0, Some(0)));
    }

    #[test]
    fn test_open_errors() {
        let mut rx = Receiver::new(ReceiverConfig::default());
        let v = vc(1, 100);
        rx.open_vc(v, VcConfig::aal5(100)).unwrap();
        let nni_vc = VcId::new(Vpi::nni(300).unwrap(), Vci::from_u16(40));
        let cases = [
            (v, VcConfig::aal5(100), OpenError::AlreadyOpen(v)),
            (
                nni_vc,
                VcConfig::aal5(100),
                OpenError::VpiTooLarge {
                    vc: nni_vc,
                    max: 255,
                },
            ),
            (vc(1, 0), VcConfig::aal0(), OpenError::ReservedVci(vc(1, 0))),
            (vc(1, 3), VcConfig::aal0(), OpenError::ReservedVci(vc(1, 3))),
            (vc(1, 4), VcConfig::aal0(), OpenError::ReservedVci(vc(1, 4))),
            (
                vc(1, 40),
                VcConfig {
                    aal: Aal::None,
                    ..VcConfig::aal0()
                },
                OpenError::UnsupportedAal(Aal::None),
            ),
            (vc(1, 40), VcConfig::aal5(0), OpenError::MaxSdu(0)),
            (vc(1, 40), VcConfig::aal5(65_536), OpenError::MaxSdu(65_536)),
            (
                vc(1, 40),
                VcConfig::aal5(100).with_buffer_limit(143),
                OpenError::BufferLimit {
                    buffer_limit: 143,
                    needed: 144,
                },
            ),
            (
                vc(1, 40),
                VcConfig::aal0().with_buffer_limit(52),
                OpenError::BufferLimit {
                    buffer_limit: 52,
                    needed: 53,
                },
            ),
        ];
        for (id, config, want) in cases {
            assert_eq!(rx.open_vc(id, config), Err(want));
            assert!(!want.to_string().is_empty());
        }
        // Signalling and ILMI are ordinary AAL5 VCs here.
        rx.open_vc(vc(0, 5), VcConfig::aal5(4096)).unwrap();
        rx.open_vc(vc(0, 16), VcConfig::aal5(484)).unwrap();
    }

    #[test]
    fn test_nni_high_vpi() {
        let mut rx = Receiver::new(ReceiverConfig {
            format: HeaderFormat::Nni,
            ..ReceiverConfig::default()
        });
        let v = VcId::new(Vpi::nni(4000).unwrap(), Vci::from_u16(77));
        rx.open_vc(v, VcConfig::aal5(100)).unwrap();
        let h = CellHeader {
            gfc: 0,
            vc: v,
            pti: Pti::DATA,
            clp: false,
        };
        let seg = Segmenter::new(h, HeaderFormat::Nni, b"nni", 0, 0).unwrap();
        for c in seg {
            rx.handle_cell(T0, &c);
        }
        event!(rx, Event::Sdu { vc, sdu } if vc == v && sdu == b"nni");
    }

    #[test]
    fn test_many_vcs_open_close() {
        let mut rx = Receiver::new(ReceiverConfig::default());
        for vci in 32..2032 {
            rx.open_vc(vc(vci % 3, vci), VcConfig::aal5(100)).unwrap();
        }
        for vci in (32..2032).step_by(2) {
            rx.close_vc(vc(vci % 3, vci)).unwrap();
        }
        for vci in 32..2032u32 {
            assert_eq!(rx.is_open(vc(vci % 3, vci)), vci % 2 == 1, "{vci}");
            let v = vc(vci % 3, vci);
            let payload = vci.to_be_bytes();
            recv!(rx, T0, cells(v, &payload));
            if vci % 2 == 1 {
                event!(rx, Event::Sdu { vc, sdu } if vc == v && sdu == payload);
            }
            recv_nothing!(rx);
        }
    }

    #[test]
    fn displays() {
        let v = vc(1, 2);
        let events = [
            Event::Sdu {
                vc: v,
                sdu: vec![1, 2],
            },
            Event::Cell {
                vc: v,
                kind: CellKind::Rm,
                cell: [0; CELL_LEN],
            },
            Event::Discarded {
                vc: v,
                reason: Discard::Timeout { bytes: 96 },
            },
        ];
        let text: Vec<String> = events.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            text,
            [
                "1.2: SDU of 2 bytes",
                "1.2: rm cell",
                "1.2: PDU discarded: reassembly timeout with 96 bytes collected"
            ]
        );
        assert_eq!(UnknownVc(v).to_string(), "VC 1.2 is not open");
        for r in [
            Discard::Pdu(Aal5Error::Abort),
            Discard::VcBufferFull { limit: 1 },
            Discard::ReceiverBufferFull { limit: 1 },
        ] {
            assert!(!r.to_string().is_empty());
        }
    }
}

//! The [`Switch`] state machine.

mod express;

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use natm_core::slotmap::SlotMap;
use natm_core::{Duration, HeaderFormat, Instant, TrafficClass, TrafficParams, VcId, Vci, Vpi};
use natm_traffic::cac::{Cac, CacConfig, Handle};
use natm_traffic::discard::{Decision, DropReason, FrameDiscard, VcFrameState};
use natm_traffic::policer::{Contract, ContractError, Policer, Verdict};
use natm_traffic::sched::Category;
use natm_wire::cell::{Cell, HecMode, HecReceiver, HecVerdict};
use natm_wire::oam::{self, Defect, OamCell, OamRepr};

use crate::hec::hec;
use crate::types::{
    CrossConnect, DirCounters, Direction, Endpoint, PortConfig, PortCounters, PortId, SwitchConfig,
    SwitchError, Upc, XcCounters, XcId, category_index,
};

/// "No index" in the `u32` links and tables.
const NONE: u32 = u32::MAX;
/// The AIS period of I.610 (VP-AIS and VC-AIS): one cell per second while the defect lasts.
const AIS_PERIOD: Duration = Duration::from_secs(1);
const NANOS_PER_SEC: u64 = 1_000_000_000;
/// How late a rated port's slots may be used: a caller that polls late gets the slots of
/// at most the last millisecond at once, so a long stall never turns into a long burst.
const MAX_LAG: Duration = Duration::from_millis(1);
/// A `SlotMap` bucket (`key << 32 | slot`).
const SLOTMAP_BUCKET: usize = 8;
/// A `SlotMap` grows past half full to twice its size: its load stays above a quarter.
const MIN_LOAD_INVERSE: usize = 4;

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
    /// Cells queued since the last planted swap (test-only feature `mutants`).
    #[cfg(feature = "mutants")]
    reorder_count: u32,
}

impl Port {
    /// The next instant this port has something to do without input: its next slot while
    /// it is up with cells queued (rated ports only), or its next AIS cell.
    fn timeout(&self) -> Option<Instant> {
        let slot = match &self.pacer {
            Some(pacer) if self.up && self.counters.queue_depth != [0; 4] => Some(pacer.slot()),
            _ => None,
        };
        match (self.next_ais, slot) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
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

    /// Adds a port, up, with empty queues.
    pub fn add_port(&mut self, port: PortId, config: PortConfig) -> Result<(), SwitchError> {
        if self.port_index.contains_key(&port) {
            return Err(SwitchError::PortExists(port));
        }
        let bad = |reason| SwitchError::BadPortConfig { port, reason };
        if config.queue_cells.contains(&0) {
            return Err(bad("every queue limit must be at least 1 cell"));
        }
        if config.epd_percent > 100 {
            return Err(bad("the EPD threshold is a percentage (0..=100)"));
        }
        let mut discard = [FrameDiscard::new(1, 1).map_err(|_| bad("queue limits"))?; 4];
        for (d, &cap) in discard.iter_mut().zip(&config.queue_cells) {
            let pct = match config.epd_percent {
                0 => 100,
                p => u64::from(p),
            };
            let threshold = ((u64::from(cap) * pct) / 100).clamp(1, u64::from(cap)) as u32;
            *d = FrameDiscard::new(cap, threshold).map_err(|_| bad("queue limits"))?;
        }
        let vpis = usize::from(config.format.max_vpi()) + 1;
        let capacity = config.rate.cells_per_s().unwrap_or(u32::MAX);
        let p = Port {
            id: port,
            config,
            up: true,
            hec: HecReceiver::new(),
            vp: vec![NONE; vpis],
            vcs_on_vpi: vec![0; vpis],
            vc: SlotMap::new(),
            fifos: [Fifo::EMPTY; UBR],
            discard,
            ring: VecDeque::new(),
            served: 0,
            #[cfg(feature = "mutants")]
            reorder_count: 0,
            pacer: config
                .rate
                .cells_per_s()
                .map(|rate| Pacer::new(rate, Instant::ZERO)),
            next_ais: None,
            counters: PortCounters {
                up: true,
                ..PortCounters::default()
            },
            cac: Cac::new(CacConfig {
                link: format!("port {port}"),
                capacity,
                buffer_cells: config.queue_cells[1].saturating_add(config.queue_cells[2]),
                max_ubr: u32::MAX,
            }),
        };
        let slot = match self.ports.iter().position(Option::is_none) {
            Some(s) => {
                self.ports[s] = Some(Box::new(p));
                s
            }
            None => {
                self.ports.push(Some(Box::new(p)));
                self.ports.len() - 1
            }
        };
        // At most 65,536 ports exist, one per PortId.
        self.port_index.insert(port, slot as u16);
        let i = usize::from(port.0);
        if self.slot_of.len() <= i {
            self.slot_of.resize(i + 1, NONE);
        }
        self.slot_of[i] = slot as u32;
        Ok(())
    }

    /// Removes a port: every cross-connect with an end on it is disconnected first (its
    /// queued cells counted as flushed), then the port and its queues go. `now` is the
    /// time of removal; the far ends of those connections get no AIS, as the connections
    /// no longer exist.
    pub fn remove_port(&mut self, _now: Instant, port: PortId) -> Result<(), SwitchError> {
        let slot = self.slot(port)?;
        let doomed: Vec<XcId> = self
            .connections()
            .filter(|(_, xc)| xc.a.port == port || xc.b.port == port)
            .map(|(id, _)| id)
            .collect();
        for id in doomed {
            self.disconnect(id)?;
        }
        // Generated OAM cells may still be queued.
        self.flush_port(slot, false);
        self.ports[usize::from(slot)] = None;
        self.port_index.remove(&port);
        self.slot_of[usize::from(port.0)] = NONE;
        Ok(())
    }

    /// Brings a port down or up. Going down flushes its output queues (counted as
    /// `port_down`), and from then on cells arriving on it or queued for it are dropped
    /// (`port_down`), and every connection whose input is this port sends an end-to-end
    /// AIS cell downstream (F5 on VC legs, F4 VCI 4 on VP legs) now and then once per
    /// second (I.610 VP-AIS and VC-AIS) until the port comes back up.
    pub fn set_port_up(&mut self, now: Instant, port: PortId, up: bool) -> Result<(), SwitchError> {
        let slot = self.slot(port)?;
        let p = self.port_mut(slot);
        if p.up == up {
            return Ok(());
        }
        p.up = up;
        p.counters.up = up;
        if up {
            p.next_ais = None;
            if let Some(pacer) = &mut p.pacer {
                pacer.restart(now);
            }
        } else {
            self.flush_port(slot, true);
            self.send_ais(slot);
            self.port_mut(slot).next_ais = now.checked_add(AIS_PERIOD);
        }
        Ok(())
    }

    /// Drops every cell queued at `slot`: as `port_down` if `down`, else as `flushed`.
    fn flush_port(&mut self, slot: u16, down: bool) {
        let Switch {
            ports, legs, pool, ..
        } = self;
        let Some(p) = ports[usize::from(slot)].as_mut() else {
            return;
        };
        let mut n = 0u64;
        for f in &mut p.fifos {
            while let Some(i) = pool.pop(f) {
                let leg = pool.cells[i as usize].leg;
                if leg != NONE {
                    let l = &mut legs[leg as usize];
                    l.queued -= 1;
                    l.dropped += 1;
                }
                pool.release(i);
                n += 1;
            }
        }
        for li in p.ring.drain(..) {
            let l = &mut legs[li as usize];
            while let Some(i) = pool.pop_ring(&mut l.tail) {
                pool.release(i);
                n += 1;
            }
            l.dropped += u64::from(l.queued);
            l.queued = 0;
        }
        p.served = 0;
        p.counters.queue_depth = [0; 4];
        if down {
            p.counters.port_down += n;
        } else {
            p.counters.flushed += n;
        }
    }

    /// Generates one AIS cell on every leg entering port `slot`.
    fn send_ais(&mut self, slot: u16) {
        let id = self.port(slot).id;
        let payload = OamRepr::Ais(Defect::default()).to_payload();
        for s in 0..self.xcs.len() {
            let Some(&xc) = self.xcs[s].xc() else {
                continue;
            };
            for (dir, input) in [(0usize, xc.a), (1, xc.b)] {
                if input.port != id {
                    continue;
                }
                let leg = self.legs[2 * s + dir];
                let word = if leg.flags & F_VP != 0 {
                    // F4 end-to-end: VCI 4, PTI 0.
                    leg.out_word | 4 << 4
                } else {
                    // F5 end-to-end: PTI 101.
                    leg.out_word | 0b101 << 1
                };
                let out = leg.out_port;
                let Switch { ports, pool, .. } = self;
                let Some(p) = ports[usize::from(out)].as_mut() else {
                    continue;
                };
                p.counters.ais_sent += 1;
                enqueue_oam(p, pool, word, &payload);
            }
        }
    }

    /// Makes a duplex cross-connect, after checking both endpoints and admitting each
    /// direction on its output port (natm-traffic CAC: CBR at PCR, VBR at its equivalent
    /// bandwidth, UBR by count). Refusals name what was wrong. `now` is when it starts;
    /// nothing is timed from it yet (its policers start at their first cell).
    pub fn connect(&mut self, _now: Instant, xc: &CrossConnect) -> Result<XcId, SwitchError> {
        if self.live >= self.config.max_connections {
            return Err(SwitchError::TooMany {
                max: self.config.max_connections,
            });
        }
        if xc.a.vci.is_some() != xc.b.vci.is_some() {
            return Err(SwitchError::Mismatch { a: xc.a, b: xc.b });
        }
        if xc.a == xc.b || overlaps(&xc.a, &xc.b) {
            return Err(SwitchError::EndpointInUse {
                endpoint: xc.b,
                by: None,
            });
        }
        if xc.weight == 0 {
            return Err(SwitchError::ZeroWeight);
        }
        let category = xc.effective_category()?;
        let sa = self.slot(xc.a.port)?;
        let sb = self.slot(xc.b.port)?;
        self.check_endpoint(sa, &xc.a)?;
        self.check_endpoint(sb, &xc.b)?;
        // Policers, per direction: a→b (tx) enters at a, b→a (rx) at b.
        let mut policers = [None, None];
        for (i, (params, input, dir)) in [
            (&xc.qos.tx, sa, Direction::AToB),
            (&xc.qos.rx, sb, Direction::BToA),
        ]
        .into_iter()
        .enumerate()
        {
            if xc.upc == Upc::Off || params.class == TrafficClass::None {
                continue;
            }
            let link = self.port(input).cac.config().capacity;
            let bad = |error| SwitchError::BadContract {
                direction: dir,
                error,
            };
            let mut contract = match Contract::from_params(params, link) {
                // A UBR direction without a PCR has nothing to be policed against.
                Err(ContractError::NoPcr) if params.class == TrafficClass::Ubr => continue,
                r => r.map_err(bad)?,
            };
            contract.cdvt = contract.cdvt.max(self.port(input).config.cdvt);
            policers[i] = Some(Policer::new(category.conformance(), &contract).map_err(bad)?);
        }
        // CAC: a→b uses b's output, b→a uses a's.
        let mut booked: [Option<(u16, Handle)>; 2] = [None, None];
        for (i, (params, out)) in [(&xc.qos.tx, sb), (&xc.qos.rx, sa)].into_iter().enumerate() {
            if !books_bandwidth(params) {
                if params.class == TrafficClass::Abr {
                    // Refused as not supported, by the CAC's own words.
                    if let Err(r) = self.port(out).cac.assess(params) {
                        self.unbook(booked);
                        return Err(SwitchError::Admission(r));
                    }
                }
                continue;
            }
            match self.port_mut(out).cac.admit(params) {
                Ok(h) => booked[i] = Some((out, h)),
                Err(r) => {
                    self.unbook(booked);
                    return Err(SwitchError::Admission(r));
                }
            }
        }
        // All checks passed: nothing below fails.
        let (slot, generation) = match self.xcs.get(self.free_slot as usize) {
            Some(&XcSlot::Free { generation, next }) => {
                let slot = self.free_slot;
                self.free_slot = next;
                (slot, generation)
            }
            _ => {
                self.legs.push(Leg::EMPTY);
                self.legs.push(Leg::EMPTY);
                self.xcs.push(XcSlot::Free {
                    generation: 0,
                    next: NONE,
                });
                ((self.xcs.len() - 1) as u32, 0)
            }
        };
        self.xcs[slot as usize] = XcSlot::Live {
            generation,
            xc: *xc,
        };
        let id = XcId {
            index: slot,
            generation,
        };
        if booked.iter().any(Option::is_some) {
            self.reservations.insert(slot, booked);
        }
        let cat = category_index(category) as u8;
        for (dir, (input, output, in_slot, out_slot, params)) in [
            (xc.a, xc.b, sa, sb, &xc.qos.tx),
            (xc.b, xc.a, sb, sa, &xc.qos.rx),
        ]
        .into_iter()
        .enumerate()
        {
            let li = 2 * slot + dir as u32;
            let mut flags = cat << CAT_SHIFT;
            if let Some(policer) = policers[dir].take() {
                let p = Policed { policer, tagged: 0 };
                let i = match self.free_policers.pop() {
                    Some(i) => {
                        self.policers[i as usize] = p;
                        i
                    }
                    None => {
                        self.policers.push(p);
                        (self.policers.len() - 1) as u32
                    }
                };
                self.policed.insert(li, i);
                flags |= F_POLICED;
            }
            if input.vci.is_none() {
                flags |= F_VP;
            }
            if xc.aal5 {
                flags |= F_AAL5;
            }
            if xc.upc == Upc::Tag {
                flags |= F_TAG;
            }
            if params.class == TrafficClass::None {
                flags |= F_BLOCKED;
            }
            if xc.weight == 1 {
                flags |= F_WEIGHT1;
            }
            let out_word =
                u32::from(output.vpi) << 20 | output.vci.map_or(0, |vci| u32::from(vci) << 4);
            self.legs[li as usize] = Leg {
                out_word,
                out_port: out_slot,
                flags,
                ..Leg::EMPTY
            };
            let p = self.port_mut(in_slot);
            match input.vci {
                None => p.vp[usize::from(input.vpi)] = li,
                Some(vci) => {
                    p.vcs_on_vpi[usize::from(input.vpi)] += 1;
                    p.vc.insert(vc_key(input.vpi, vci), li);
                }
            }
        }
        self.live += 1;
        Ok(id)
    }

    fn unbook(&mut self, booked: [Option<(u16, Handle)>; 2]) {
        for (port, h) in booked.into_iter().flatten() {
            if let Some(p) = self.ports[usize::from(port)].as_mut() {
                // The handle was just booked on this port.
                let _ = p.cac.release(h);
            }
        }
    }

    fn check_endpoint(&self, slot: u16, e: &Endpoint) -> Result<(), SwitchError> {
        let p = self.port(slot);
        let bad = |reason| SwitchError::BadEndpoint {
            endpoint: *e,
            reason,
        };
        if e.vpi > p.config.format.max_vpi() {
            return Err(bad(match p.config.format {
                HeaderFormat::Uni => "VPI above 255 on a UNI port",
                HeaderFormat::Nni => "VPI above 4095 on an NNI port",
            }));
        }
        let in_use = |by: u32| SwitchError::EndpointInUse {
            endpoint: *e,
            by: Some(self.xc_id(by / 2)),
        };
        let vp = p.vp[usize::from(e.vpi)];
        if vp != NONE {
            return Err(in_use(vp));
        }
        match e.vci {
            Some(0) => Err(bad("VCI 0 is the unassigned cell")),
            Some(3 | 4) => Err(bad("VCIs 3 and 4 carry the VP's F4 OAM flows")),
            Some(vci) => match p.vc.get(vc_key(e.vpi, vci)) {
                Some(li) => Err(in_use(li)),
                None => Ok(()),
            },
            None if p.vcs_on_vpi[usize::from(e.vpi)] > 0 => Err(SwitchError::EndpointInUse {
                endpoint: *e,
                by: self.xc_on_vpi(p.id, e.vpi),
            }),
            None => Ok(()),
        }
    }

    fn xc_on_vpi(&self, port: PortId, vpi: u16) -> Option<XcId> {
        self.connections()
            .find(|(_, xc)| {
                (xc.a.port == port && xc.a.vpi == vpi) || (xc.b.port == port && xc.b.vpi == vpi)
            })
            .map(|(id, _)| id)
    }

    fn xc_id(&self, slot: u32) -> XcId {
        XcId {
            index: slot,
            generation: self.xcs[slot as usize].generation(),
        }
    }

    /// Removes a cross-connect: its table entries, policers and CAC bookings, and its
    /// queued cells (counted as `flushed` on their port). Returns what it was.
    pub fn disconnect(&mut self, id: XcId) -> Result<CrossConnect, SwitchError> {
        let s = id.index as usize;
        let xc = match self.xcs.get(s) {
            Some(XcSlot::Live { generation, xc }) if *generation == id.generation => *xc,
            _ => return Err(SwitchError::UnknownConnection(id)),
        };
        if let Some(booked) = self.reservations.remove(&id.index) {
            self.unbook(booked);
        }
        for (dir, input) in [(0usize, xc.a), (1, xc.b)] {
            let li = (2 * s + dir) as u32;
            self.flush_leg(li);
            if let Some(i) = self.policed.remove(li) {
                self.free_policers.push(i);
            }
            let in_slot = self.slot(input.port)?;
            let p = self.port_mut(in_slot);
            match input.vci {
                None => p.vp[usize::from(input.vpi)] = NONE,
                Some(vci) => {
                    p.vcs_on_vpi[usize::from(input.vpi)] -= 1;
                    p.vc.remove(vc_key(input.vpi, vci));
                }
            }
            self.legs[li as usize] = Leg::EMPTY;
        }
        self.xcs[s] = XcSlot::Free {
            generation: id.generation.wrapping_add(1),
            next: self.free_slot,
        };
        self.free_slot = id.index;
        self.live -= 1;
        Ok(xc)
    }

    /// Drops a leg's queued cells (counted as flushed at its output port).
    fn flush_leg(&mut self, li: u32) {
        let Switch {
            ports, legs, pool, ..
        } = self;
        let leg = &mut legs[li as usize];
        if leg.queued == 0 {
            return;
        }
        let Some(p) = ports[usize::from(leg.out_port)].as_mut() else {
            return;
        };
        let c = leg.category();
        let mut n = 0u32;
        if c == UBR {
            while let Some(i) = pool.pop_ring(&mut leg.tail) {
                pool.release(i);
                n += 1;
            }
            // It had cells, so it is in the ring.
            if p.ring.front() == Some(&li) {
                p.served = 0;
            }
            p.ring.retain(|&x| x != li);
        } else {
            // Unlink this leg's cells from the shared category FIFO.
            let f = &mut p.fifos[c];
            let mut prev = NONE;
            let mut i = f.head;
            while i != NONE {
                let next = pool.cells[i as usize].next;
                if pool.cells[i as usize].leg == li {
                    if prev == NONE {
                        f.head = next;
                    } else {
                        pool.cells[prev as usize].next = next;
                    }
                    if f.tail == i {
                        f.tail = prev;
                    }
                    pool.release(i);
                    n += 1;
                } else {
                    prev = i;
                }
                i = next;
            }
        }
        p.counters.queue_depth[c] -= n;
        p.counters.flushed += u64::from(n);
        leg.dropped += u64::from(n);
        leg.queued -= n;
    }

    /// One cell arrived on `port` at `now` (see [`handle_cells`](Self::handle_cells)).
    pub fn handle_cell(&mut self, now: Instant, port: PortId, cell: &[u8; 53]) {
        self.handle_cells(now, port, core::slice::from_ref(cell));
    }

    /// Cells arrived on `port` at `now`, in order. Each is HEC-checked (I.432 §4.3:
    /// single-bit correction, then detection mode), looked up, policed, translated and
    /// queued on its output port, or answered (OAM segment loopback), or dropped and
    /// counted. Cells for an unknown port are ignored.
    pub fn handle_cells(&mut self, now: Instant, port: PortId, cells: &[[u8; 53]]) {
        let Ok(in_slot) = self.slot(port) else {
            return;
        };
        // Two passes per chunk: the first checks headers and finds each cell's leg (short
        // iterations, so the table and leg loads of many cells are in flight at once), the
        // second polices and queues.
        let mut found = core::mem::take(&mut self.found);
        found.resize(CHUNK, Found::default());
        for chunk in cells.chunks(CHUNK) {
            let n = self.classify(in_slot, chunk, &mut found);
            self.forward(now, in_slot, chunk, &found[..n]);
        }
        self.found = found;
    }

    /// Pass one of [`handle_cells`](Self::handle_cells): counts every cell in, handles the
    /// ones that end here (bad HEC, idle, unknown, segment OAM) and writes the others to
    /// `found`; returns how many.
    #[inline]
    fn classify(&mut self, in_slot: u16, chunk: &[[u8; 53]], found: &mut [Found]) -> usize {
        let Switch {
            ports, legs, pool, ..
        } = self;
        let Some(p) = ports[usize::from(in_slot)].as_mut() else {
            return 0;
        };
        p.counters.cells_in += chunk.len() as u64;
        if !p.up {
            p.counters.port_down += chunk.len() as u64;
            return 0;
        }
        let vpi_mask = p.vpi_mask();
        let mut n = 0;
        // The last VC looked up, `(vpi << 16 | vci, leg)`: an SDU's cells come in a run, and
        // the table cannot change within the call.
        let mut last = (u32::MAX, NONE);
        for (k, cell) in chunk.iter().enumerate() {
            let mut word = u32::from_be_bytes([cell[0], cell[1], cell[2], cell[3]]);
            if hec(word) != cell[4] || p.hec.mode() == HecMode::Detection {
                let mut h = [cell[0], cell[1], cell[2], cell[3], cell[4]];
                match p.hec.receive(&mut Cell::new_unchecked(&mut h[..])) {
                    HecVerdict::Valid => {}
                    HecVerdict::Corrected { .. } => {
                        p.counters.hec_corrected += 1;
                        word = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
                    }
                    HecVerdict::Discarded { .. } => {
                        p.counters.hec_discarded += 1;
                        continue;
                    }
                }
            }
            let vpi = (word >> 20) & vpi_mask;
            let vci = (word >> 4) & 0xFFFF;
            if vpi == 0 && vci == 0 {
                p.counters.idle += 1;
                continue;
            }
            let vp_leg = p.vp[vpi as usize];
            let li = if vp_leg != NONE {
                if vci == 3 {
                    segment_oam(p, pool, word, payload_of(cell));
                    continue;
                }
                vp_leg
            } else {
                if vci == 3 || vci == 4 {
                    if p.vcs_on_vpi[vpi as usize] == 0 {
                        p.counters.unknown_vc += 1;
                    } else if vci == 3 {
                        segment_oam(p, pool, word, payload_of(cell));
                    } else {
                        // The VP ends here: its end-to-end flow is ours, and not answered.
                        p.counters.oam_terminated += 1;
                    }
                    continue;
                }
                let key = vpi << 16 | vci;
                let li = if key == last.0 {
                    last.1
                } else {
                    let Some(li) = p.vc.get(key) else {
                        p.counters.unknown_vc += 1;
                        continue;
                    };
                    last = (key, li);
                    li
                };
                if (word >> 1) & 7 == 0b100 {
                    segment_oam(p, pool, word, payload_of(cell));
                    continue;
                }
                li
            };
            // Reading the flags here starts the leg's load early.
            found[n] = Found {
                k: k as u32,
                li,
                word,
                flags: legs[li as usize].flags,
            };
            n += 1;
        }
        n
    }

    /// Pass two of [`handle_cells`](Self::handle_cells): UPC, translation and queueing of
    /// the cells `classify` found legs for.
    #[inline]
    fn forward(&mut self, now: Instant, in_slot: u16, chunk: &[[u8; 53]], found: &[Found]) {
        let Switch {
            ports,
            legs,
            pool,
            policers,
            policed,
            ..
        } = self;
        let (mut n_policed, mut n_tagged) = (0u64, 0u64);
        for &Found {
            k,
            li,
            mut word,
            flags,
        } in found
        {
            let cell = &chunk[k as usize];
            let leg = &mut legs[li as usize];
            leg.cells_in += 1;
            if flags & (F_BLOCKED | F_POLICED) != 0 {
                if flags & F_BLOCKED != 0 {
                    leg.dropped += 1;
                    n_policed += 1;
                    continue;
                }
                if let Some(pi) = policed.get(li) {
                    let clp = word & CLP != 0;
                    let upc = &mut policers[pi as usize];
                    match upc.policer.police(now, clp) {
                        Verdict::Pass => {}
                        Verdict::Discard if clp || flags & F_TAG == 0 => {
                            leg.dropped += 1;
                            n_policed += 1;
                            continue;
                        }
                        // VBR.3's tag, or a discard that this UPC turns into a tag.
                        Verdict::Tag | Verdict::Discard => {
                            word |= CLP;
                            upc.tagged += 1;
                            n_tagged += 1;
                        }
                    }
                }
            }
            let keep = if flags & F_VP != 0 { KEEP_VP } else { KEEP_VC };
            let out_word = leg.out_word | (word & keep);
            let Some(out) = ports[usize::from(leg.out_port)].as_mut() else {
                continue;
            };
            enqueue(out, pool, leg, li, out_word, payload_of(cell));
        }
        if let Some(p) = ports[usize::from(in_slot)].as_mut() {
            p.counters.policed += n_policed;
            p.counters.tagged += n_tagged;
        }
    }

    /// Fills `out` with cells to send on `port` at `now`, highest category first (CBR and
    /// generated OAM, rt-VBR, nrt-VBR, then UBR by weighted round robin), at most one per
    /// open slot on a rated port; returns how many. A down or unknown port sends nothing.
    pub fn poll_transmit(&mut self, now: Instant, port: PortId, out: &mut [[u8; 53]]) -> usize {
        let Ok(slot) = self.slot(port) else {
            return 0;
        };
        let Switch {
            ports,
            legs,
            pool,
            xcs,
            taken,
            ..
        } = self;
        let Some(p) = ports[usize::from(slot)].as_mut() else {
            return 0;
        };
        if !p.up {
            return 0;
        }
        let budget = match &mut p.pacer {
            None => out.len(),
            Some(pacer) => {
                if pacer.slot() + MAX_LAG < now {
                    // Polled late: the slots of the last MAX_LAG may go at once, older
                    // ones are lost.
                    pacer.restart(Instant::from_nanos(
                        now.as_nanos().saturating_sub(MAX_LAG.as_nanos()),
                    ));
                }
                // One cell per open slot, and no more slots than cells queued: every slot
                // taken here is used below.
                let queued = p.counters.queue_depth.iter().map(|&d| d as usize).sum();
                let want = out.len().min(queued);
                let mut b = 0;
                while b < want && pacer.slot() <= now {
                    pacer.advance();
                    b += 1;
                }
                b
            }
        };
        // Two passes per chunk: take the cells off the queues (a chain of dependent loads),
        // then write them out.
        const CHUNK: usize = 64;
        // Scratch kept in the switch, not zeroed per call: most calls take one cell.
        taken.resize(CHUNK, 0);
        let mut n = 0;
        while n < budget {
            let want = (budget - n).min(CHUNK);
            let mut got = 0;
            while got < want {
                let Some(i) = dequeue(p, legs, pool, xcs) else {
                    break;
                };
                taken[got] = i;
                got += 1;
            }
            for (&i, o) in taken[..got].iter().zip(&mut out[n..n + got]) {
                let c = &pool.cells[i as usize];
                o[..4].copy_from_slice(&c.word.to_be_bytes());
                o[4] = hec(c.word);
                o[5..].copy_from_slice(&c.payload);
                pool.release(i);
            }
            n += got;
            if got < want {
                break;
            }
        }
        if let Some(pacer) = &mut p.pacer {
            debug_assert_eq!(n, budget, "a rated port's budget is of queued cells");
            if p.counters.queue_depth == [0; 4] && pacer.slot() <= now {
                // Idle: slots that passed unused are not saved up for a burst later.
                pacer.restart(now);
            }
        }
        p.counters.cells_out += n as u64;
        n
    }

    /// The next instant at which something happens without input: a rated port's next
    /// slot while it has cells queued, or the next AIS cell of a down port.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.ports
            .iter()
            .flatten()
            .filter_map(|p| p.timeout())
            .min()
    }

    /// [`poll_timeout`](Self::poll_timeout) of one port (`None` also for an unknown port):
    /// the minimum of these over the ports is the switch's, so a driver of many ports can
    /// keep them in its own timer queue and poll only the ports that are due.
    pub fn port_timeout(&self, port: PortId) -> Option<Instant> {
        self.ports[usize::from(self.slot(port).ok()?)]
            .as_ref()?
            .timeout()
    }

    /// Does what is due at `now`: AIS cells of down ports. (Rated ports' slots are used by
    /// [`poll_transmit`](Self::poll_transmit).)
    pub fn handle_timeout(&mut self, now: Instant) {
        for slot in 0..self.ports.len() {
            let Some(p) = &mut self.ports[slot] else {
                continue;
            };
            let Some(t) = p.next_ais else { continue };
            if t > now {
                continue;
            }
            // One AIS per period; a late call does not send the missed ones.
            let period = AIS_PERIOD.as_nanos();
            let missed = now.saturating_duration_since(t).as_nanos() / period;
            let next = Instant::from_nanos(
                t.as_nanos()
                    .saturating_add((missed + 1).saturating_mul(period)),
            );
            p.next_ais = Some(next);
            self.send_ais(slot as u16);
        }
    }

    /// A port's counters, with its current queue depths.
    pub fn port_counters(&self, port: PortId) -> Option<PortCounters> {
        let slot = self.slot(port).ok()?;
        Some(self.port(slot).counters)
    }

    /// A port's admission books: what the connections leaving by it have reserved (their
    /// output direction's contract), to audit that every release gave back what it took.
    pub fn port_cac(&self, port: PortId) -> Option<&Cac> {
        let slot = self.slot(port).ok()?;
        Some(&self.port(slot).cac)
    }

    /// A cross-connect and its counters per direction.
    pub fn connection(&self, id: XcId) -> Option<(&CrossConnect, XcCounters)> {
        let slot = self.xcs.get(id.index as usize)?;
        if slot.generation() != id.generation {
            return None;
        }
        let xc = slot.xc()?;
        let s = 2 * id.index;
        let tagged = |li: u32| {
            self.policed
                .get(li)
                .map_or(0, |i| self.policers[i as usize].tagged)
        };
        Some((
            xc,
            XcCounters {
                a_to_b: self.legs[s as usize].counters(tagged(s)),
                b_to_a: self.legs[s as usize + 1].counters(tagged(s + 1)),
            },
        ))
    }

    /// The cross-connects, in slot order.
    pub fn connections(&self) -> impl Iterator<Item = (XcId, &CrossConnect)> {
        self.xcs.iter().enumerate().filter_map(|(i, s)| {
            s.xc().map(|xc| {
                (
                    XcId {
                        index: i as u32,
                        generation: s.generation(),
                    },
                    xc,
                )
            })
        })
    }

    /// How many cross-connects exist.
    pub fn connection_count(&self) -> u32 {
        self.live
    }

    /// The ports, in port number order.
    pub fn ports(&self) -> impl Iterator<Item = (PortId, &PortConfig)> {
        self.port_index
            .iter()
            .filter_map(|(&id, &slot)| Some((id, &self.ports[usize::from(slot)].as_ref()?.config)))
    }

    /// Bytes of switch state one cross-connect costs beyond its queued cells, from the
    /// sizes of the real structures: two legs, its slot (the [`CrossConnect`] and a
    /// generation; free slots chain through themselves), a UBR ring entry per leg, and one
    /// lookup-table entry per end at the table's lowest load (a `SlotMap` bucket is 8
    /// bytes and the table is more than a quarter full after growing, at most half).
    /// Policed directions add [`policer_bytes`](Self::policer_bytes) each; CBR/VBR
    /// directions add a CAC reservation in natm-traffic's `Cac`.
    pub fn state_bytes_per_connection() -> usize {
        2 * core::mem::size_of::<Leg>()
            + core::mem::size_of::<XcSlot>()
            + 2 * core::mem::size_of::<u32>()
            + 2 * SLOTMAP_BUCKET * MIN_LOAD_INVERSE
    }

    /// Bytes one policed direction adds: its [`Policer`] and tag counter, a free-list
    /// entry, and its entry in the leg → policer table at the lowest load.
    pub fn policer_bytes() -> usize {
        core::mem::size_of::<Policed>()
            + core::mem::size_of::<u32>()
            + SLOTMAP_BUCKET * MIN_LOAD_INVERSE
    }
}

/// Cells per pass of [`Switch::handle_cells`].
const CHUNK: usize = 32;

/// A cell of a chunk that has a leg: its index, the leg, its (corrected) header word and
/// the leg's flags.
#[derive(Clone, Copy, Debug, Default)]
struct Found {
    k: u32,
    li: u32,
    word: u32,
    flags: u8,
}

#[inline]
fn payload_of(cell: &[u8; 53]) -> &[u8; 48] {
    cell[5..].try_into().expect("53 - 5 = 48 bytes")
}

/// Whether one end's VP contains the other end (same port and VPI, one a VP).
fn overlaps(a: &Endpoint, b: &Endpoint) -> bool {
    a.port == b.port && a.vpi == b.vpi && (a.vci.is_none() || b.vci.is_none())
}

fn books_bandwidth(params: &TrafficParams) -> bool {
    matches!(params.class, TrafficClass::Cbr | TrafficClass::Vbr)
}

/// [`VcId::key`] of an endpoint's `vpi.vci`.
#[inline]
fn vc_key(vpi: u16, vci: u16) -> u32 {
    let vpi = Vpi::nni(u32::from(vpi))
        .expect("an endpoint's VPI was checked against its port's format, at most 4095");
    VcId::new(vpi, Vci::from_u16(vci)).key()
}

/// Queues a translated cell of leg `li` on its output port `p`, or drops it (EPD/PPD on
/// AAL5 user data, tail drop otherwise).
#[inline]
fn enqueue(p: &mut Port, pool: &mut Pool, leg: &mut Leg, li: u32, word: u32, payload: &[u8; 48]) {
    if !p.up {
        leg.dropped += 1;
        p.counters.port_down += 1;
        return;
    }
    let c = leg.category();
    let occupancy = p.counters.queue_depth[c];
    let user_data = word & 0b1000 == 0;
    let decision = if leg.flags & F_AAL5 != 0 && user_data {
        let end_of_frame = word & 0b0010 != 0;
        p.discard[c].decide(&mut leg.frame, occupancy, end_of_frame)
    } else if occupancy >= p.config.queue_cells[c] {
        // Plain tail drop (what `FrameDiscard::decide_cell` does), without the call.
        Decision::Drop(DropReason::Full)
    } else {
        Decision::Enqueue
    };
    match decision {
        Decision::Enqueue => {}
        Decision::Drop(reason) => {
            leg.dropped += 1;
            match reason {
                DropReason::Epd => p.counters.epd += 1,
                DropReason::Ppd => p.counters.ppd += 1,
                DropReason::Full => p.counters.queue_full += 1,
            }
            return;
        }
    }
    let i = pool.alloc(word, payload, li);
    p.counters.queue_depth[c] += 1;
    leg.queued += 1;
    #[cfg(feature = "mutants")]
    let before = if c == UBR { leg.tail } else { p.fifos[c].tail };
    if c == UBR {
        pool.push_ring(&mut leg.tail, i);
        if leg.queued == 1 {
            p.ring.push_back(li);
        }
    } else {
        pool.push(&mut p.fifos[c], i);
    }
    #[cfg(feature = "mutants")]
    planted_reorder(p, pool, before, i, li);
}

/// Planted bug for natm-sim's meta-test (test-only feature `mutants`, see
/// [`crate::mutants`]): once `p` has queued [`REORDER_EVERY`](crate::mutants::REORDER_EVERY)
/// cells, cell `i` of leg `li`, just queued behind `before`, swaps places with it if that
/// is a cell of the same leg. The two are adjacent in their list, so swapping their
/// contents swaps their order.
#[cfg(feature = "mutants")]
fn planted_reorder(p: &mut Port, pool: &mut Pool, before: u32, i: u32, li: u32) {
    if !crate::mutants::reorder() {
        return;
    }
    p.reorder_count = p.reorder_count.saturating_add(1);
    if p.reorder_count < crate::mutants::REORDER_EVERY
        || before == NONE
        || pool.cells[before as usize].leg != li
    {
        return;
    }
    p.reorder_count = 0;
    let (b, c) = (pool.cells[before as usize], pool.cells[i as usize]);
    pool.cells[before as usize].word = c.word;
    pool.cells[before as usize].payload = c.payload;
    pool.cells[i as usize].word = b.word;
    pool.cells[i as usize].payload = b.payload;
}

/// Queues a cell the switch generated (loopback reply, AIS) in `p`'s CBR queue.
fn enqueue_oam(p: &mut Port, pool: &mut Pool, word: u32, payload: &[u8; 48]) {
    if !p.up {
        p.counters.port_down += 1;
        return;
    }
    if p.counters.queue_depth[0] >= p.config.queue_cells[0] {
        p.counters.queue_full += 1;
        return;
    }
    let i = pool.alloc(word, payload, NONE);
    p.counters.queue_depth[0] += 1;
    pool.push(&mut p.fifos[0], i);
}

/// A segment OAM cell (F4 VCI 3, F5 PTI 100) arrived on `p` for a connection that passes
/// here: the switch port is the segment's end point (I.610 loopback). A loopback request
/// with a good CRC-10 whose location ID names the end point (all ones, as I.610 codes it;
/// or all zeros, which Intel's IXP400 OAM code also takes for the segment end point) is
/// answered out of the same port with the loopback indication cleared and the CRC-10
/// refilled; anything else ends here.
fn segment_oam(p: &mut Port, pool: &mut Pool, word: u32, payload: &[u8; 48]) {
    let cell = OamCell::new_unchecked(&payload[..]);
    let location = &payload[6..22];
    let is_request = cell.verify_crc10()
        && payload[0] == oam::LOOPBACK
        && payload[1] & 1 == 1
        && (location == oam::ALL_ONES_ID || location == [0; 16]);
    if !is_request {
        p.counters.oam_terminated += 1;
        return;
    }
    let mut reply = *payload;
    reply[1] = 0;
    OamCell::new_unchecked(&mut reply[..]).fill_crc10();
    p.counters.oam_answered += 1;
    enqueue_oam(p, pool, word, &reply);
}

/// The next cell to send from `p`: strict priority over the category FIFOs, then the UBR
/// ring, `weight` cells per turn.
#[inline]
fn dequeue(p: &mut Port, legs: &mut [Leg], pool: &mut Pool, xcs: &[XcSlot]) -> Option<u32> {
    for c in 0..UBR {
        if let Some(i) = pool.pop(&mut p.fifos[c]) {
            p.counters.queue_depth[c] -= 1;
            let li = pool.cells[i as usize].leg;
            if li != NONE {
                legs[li as usize].queued -= 1;
            }
            return Some(i);
        }
    }
    let &li = p.ring.front()?;
    let leg = &mut legs[li as usize];
    let i = pool.pop_ring(&mut leg.tail)?;
    leg.queued -= 1;
    p.counters.queue_depth[UBR] -= 1;
    p.served += 1;
    if leg.queued == 0 {
        p.ring.pop_front();
        p.served = 0;
    } else if leg.flags & F_WEIGHT1 != 0
        || p.served >= xcs[(li / 2) as usize].xc().map_or(1, |xc| xc.weight)
    {
        p.ring.pop_front();
        p.ring.push_back(li);
        p.served = 0;
    }
    Some(i)
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

//! The ATLAS event builder on the simulator (issue 6, point 4): a supervisor assigns events
//! to destinations, each destination asks every source for its fragment of the event, the
//! sources answer, and the destination has built the event when all fragments are in.
//!
//! The layer has three parts:
//! - the apps ([`Supervisor`], [`Destination`], [`Source`]): [`App`]s that see whole SDUs,
//!   share their counts through one [`EbStats`], and can be driven directly with
//!   [`AppIo`] (no engine needed);
//! - [`EbConfig`] and [`EbReport`]: what a run is asked to do and what it measured, the
//!   report also as the table `natm sim eventbuilder` prints ([`EbReport::table`]);
//! - [`run`]: one switch with a port per host, every VC a PVC cross-connect, the world run
//!   in steps of `sample_interval` with queue depths and link counters sampled in between.
//!
//! It is not a model of the ATLAS trigger/DAQ software: there is no credit-based flow
//! control (least-loaded assignment is the only feedback) and no retransmission: an event
//! that misses a fragment is lost after the timeout. Host CPU time per message is the
//! simulator's ([`HostCosts`], from a calibration), not the apps'.
//!
//! VCs (VPI 0 everywhere; VCI 32 + the peer's index on each host link):
//! - supervisor: `0.(32+d)` to destination `d`;
//! - destination: `0.32` to the supervisor, `0.(33+s)` to source `s`;
//! - source: `0.(32+d)` to destination `d`.
//!
//! Messages (integers big-endian):
//! - assignment, supervisor → destination: event number (8 bytes), the supervisor's send
//!   time in ns (8 bytes);
//! - request, destination → source: event number (8 bytes);
//! - fragment, source → destination: `fragment` bytes, the event number in the first 8;
//! - done, destination → supervisor: event number (8 bytes), then 1 = built, 2 = timed out.
//!
//! Accounting: every event the supervisor assigns ends as exactly one [`Outcome`]: built
//! (all fragments in before `assignment time + timeout`), timed out (the destination gave
//! up at that time), unanswered (no done reached the supervisor within twice the timeout,
//! and the destination had not decided either: the assignment was lost), or still pending
//! when the run stopped. Latency is build time − the supervisor's assignment send time.

mod render;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::rc::Rc;

use hdrhistogram::Histogram;
use natm_core::{Aal, Duration, Instant, LineRate, Qos, TrafficClass, TrafficParams, VcId, Vci};
use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};
use serde::Serialize;

use natm_switch::{CrossConnect, Endpoint, PortConfig, PortId, SwitchConfig};

use crate::app::{App, AppIo, HostCosts};
use crate::world::{End, HostConfig, HostId, LinkConfig, World};

/// The first VCI the event builder uses on every host link.
pub const FIRST_VCI: u16 = 32;
/// Bytes of the event number at the start of every message.
pub const EVENT_BYTES: usize = 8;
/// Source–destination pairs (PVCs) one run may have: 1024 × 1024.
pub const MAX_PAIRS: usize = 1 << 20;
/// Length of an assignment SDU.
pub const ASSIGNMENT_LEN: usize = 16;
/// Length of a request SDU.
pub const REQUEST_LEN: usize = 8;
/// Length of a done SDU.
pub const DONE_LEN: usize = 9;
const DONE_BUILT: u8 = 1;
const DONE_TIMED_OUT: u8 = 2;
/// Timer token of the supervisor's next assignment (other tokens are event numbers).
const TICK: u64 = u64::MAX;

/// The VC with VCI [`FIRST_VCI`] + `index` on VPI 0.
///
/// The caller keeps `index` within `0..=65535 - 32` (checked by [`EbConfig::validate`]).
pub fn vc(index: usize) -> VcId {
    let vci = (usize::from(FIRST_VCI) + index).min(usize::from(u16::MAX)) as u16;
    VcId {
        vci: Vci::from_u16(vci),
        ..VcId::default()
    }
}

/// The supervisor's VC to destination `d` (and the source's VC to destination `d`).
pub fn to_destination(d: usize) -> VcId {
    vc(d)
}

/// A destination's VC to the supervisor.
pub fn to_supervisor() -> VcId {
    vc(0)
}

/// A destination's VC to source `s`.
pub fn to_source(s: usize) -> VcId {
    vc(1 + s)
}

/// What became of one assigned event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Assigned, not decided yet.
    Pending,
    /// Every fragment arrived in time.
    Built,
    /// The destination gave up at the timeout.
    TimedOut,
    /// Neither the destination nor the supervisor heard of it within twice the timeout.
    Unanswered,
}

/// The counts the apps of one event builder share.
#[derive(Debug)]
pub struct EbStats {
    /// Event-building latency in ns (build time − assignment send time).
    pub latency: Histogram<u64>,
    /// The outcome of each event, by event number.
    pub outcomes: Vec<Outcome>,
    /// Events assigned.
    pub assigned: u64,
    /// Events built.
    pub built: u64,
    /// Events a destination gave up on.
    pub timed_out: u64,
    /// Events nobody decided within twice the timeout.
    pub unanswered: u64,
    /// Done SDUs the supervisor received.
    pub done_received: u64,
    /// Events built, per destination.
    pub built_per_destination: Vec<u64>,
    /// Fragments that arrived for an event their destination no longer waited for.
    pub late_fragments: u64,
    /// SDUs no app could read (wrong length, unknown event or VC), per kind of app.
    pub malformed: u64,
    /// Fragment requests the sources answered.
    pub fragments_sent: u64,
    /// Sends the simulator reported failed (`on_sent` with `ok = false`).
    pub send_failures: u64,
}

impl EbStats {
    /// Empty counts for `destinations` destinations, shared by the apps.
    pub fn shared(destinations: usize) -> Rc<RefCell<EbStats>> {
        Rc::new(RefCell::new(EbStats::new(destinations)))
    }

    /// Empty counts for `destinations` destinations.
    pub fn new(destinations: usize) -> EbStats {
        EbStats {
            // 1 ns to one hour at 3 significant digits: any latency a run can produce.
            latency: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("constant histogram bounds are valid"),
            outcomes: Vec::new(),
            assigned: 0,
            built: 0,
            timed_out: 0,
            unanswered: 0,
            done_received: 0,
            built_per_destination: vec![0; destinations],
            late_fragments: 0,
            malformed: 0,
            fragments_sent: 0,
            send_failures: 0,
        }
    }

    /// Events still pending.
    pub fn pending(&self) -> u64 {
        self.assigned - self.built - self.timed_out - self.unanswered
    }

    fn outcome(&self, event: u64) -> Option<Outcome> {
        usize::try_from(event)
            .ok()
            .and_then(|i| self.outcomes.get(i))
            .copied()
    }

    fn set_outcome(&mut self, event: u64, o: Outcome) {
        if let Some(slot) = usize::try_from(event)
            .ok()
            .and_then(|i| self.outcomes.get_mut(i))
        {
            *slot = o;
        }
    }
}

fn read_u64(b: &[u8]) -> Option<u64> {
    b.get(..8)
        .and_then(|s| <[u8; 8]>::try_from(s).ok())
        .map(u64::from_be_bytes)
}

/// When the supervisor assigns events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrivals {
    /// Event `n` at `start + n / rate`.
    Periodic,
    /// Exponential gaps of mean `1 / rate`, drawn from a generator seeded with `seed`.
    Poisson {
        /// The generator's seed.
        seed: u64,
    },
}

impl fmt::Display for Arrivals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arrivals::Periodic => f.write_str("periodic"),
            Arrivals::Poisson { seed } => write!(f, "poisson (seed {seed})"),
        }
    }
}

/// Which destination gets the next event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Event `n` to destination `n mod D`.
    RoundRobin,
    /// The destination with the fewest events assigned and not yet done (lowest index on
    /// a tie).
    LeastLoaded,
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::RoundRobin => "round-robin",
            Policy::LeastLoaded => "least-loaded",
        })
    }
}

/// The supervisor: assigns events at `rate` Hz until `stop_at`, one assignment SDU each.
pub struct Supervisor {
    destinations: usize,
    gap_ns: f64,
    arrivals: Arrivals,
    policy: Policy,
    stop_at: Instant,
    timeout: Duration,
    stats: Rc<RefCell<EbStats>>,
    rng: Xoshiro256PlusPlus,
    start: Instant,
    /// Time of the next assignment, in ns after `start` (fractional for Poisson gaps).
    next_offset_ns: f64,
    next_event: u64,
    load: Vec<u32>,
    outstanding: BTreeMap<u64, usize>,
}

impl Supervisor {
    /// A supervisor for `destinations` destinations assigning `rate_hz` events per second
    /// (finite, > 0) until `stop_at`; an event no destination answers within twice
    /// `timeout` counts as unanswered.
    pub fn new(
        destinations: usize,
        rate_hz: f64,
        arrivals: Arrivals,
        policy: Policy,
        stop_at: Instant,
        timeout: Duration,
        stats: Rc<RefCell<EbStats>>,
    ) -> Supervisor {
        let seed = match arrivals {
            Arrivals::Poisson { seed } => seed,
            Arrivals::Periodic => 0,
        };
        Supervisor {
            destinations,
            // A rate that is not a positive number assigns nothing (an infinite gap); at
            // most one event per ns, so the assignments always reach `stop_at`.
            gap_ns: if rate_hz.is_finite() && rate_hz > 0.0 {
                (1e9 / rate_hz).max(1.0)
            } else {
                f64::INFINITY
            },
            arrivals,
            policy,
            stop_at,
            timeout,
            stats,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            start: Instant::ZERO,
            next_offset_ns: 0.0,
            next_event: 0,
            load: vec![0; destinations],
            outstanding: BTreeMap::new(),
        }
    }

    fn next_at(&self) -> Instant {
        let ns = self.start.as_nanos() as f64 + self.next_offset_ns;
        Instant::from_nanos(ns.round().min(u64::MAX as f64) as u64)
    }

    fn schedule(&mut self, io: &mut AppIo) {
        if !self.next_offset_ns.is_finite() || self.destinations == 0 {
            return;
        }
        let at = self.next_at();
        if at < self.stop_at {
            io.timer(at, TICK);
        }
    }

    /// The first assignment: at the start, or never when the rate assigns nothing.
    fn advance_first(&mut self) {
        self.next_offset_ns = if self.gap_ns.is_finite() {
            0.0
        } else {
            f64::INFINITY
        };
    }

    fn advance(&mut self) {
        match self.arrivals {
            Arrivals::Periodic => {
                self.next_offset_ns = self.next_event as f64 * self.gap_ns;
            }
            Arrivals::Poisson { .. } => {
                // Inverse transform of a uniform in (0, 1]: never ln(0).
                let u = ((self.rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
                self.next_offset_ns += -u.ln() * self.gap_ns;
            }
        }
    }

    fn pick(&self, event: u64) -> usize {
        match self.policy {
            Policy::RoundRobin => (event % self.destinations as u64) as usize,
            Policy::LeastLoaded => self
                .load
                .iter()
                .enumerate()
                .min_by_key(|&(i, &l)| (l, i))
                .map_or(0, |(i, _)| i),
        }
    }

    fn release(&mut self, event: u64) -> bool {
        match self.outstanding.remove(&event) {
            Some(d) => {
                self.load[d] = self.load[d].saturating_sub(1);
                true
            }
            None => false,
        }
    }
}

impl App for Supervisor {
    fn start(&mut self, now: Instant, io: &mut AppIo) {
        // A restart forgets what was outstanding: those events end unanswered or decided
        // by their destination, as the shared outcomes say.
        self.start = now;
        self.load.iter_mut().for_each(|l| *l = 0);
        self.outstanding.clear();
        self.advance_first();
        self.schedule(io);
    }

    fn on_sdu(&mut self, _now: Instant, _vc: VcId, sdu: &[u8], _io: &mut AppIo) {
        match (sdu.len(), read_u64(sdu), sdu.get(8)) {
            (DONE_LEN, Some(event), Some(&(DONE_BUILT | DONE_TIMED_OUT))) => {
                if self.release(event) {
                    self.stats.borrow_mut().done_received += 1;
                }
            }
            _ => self.stats.borrow_mut().malformed += 1,
        }
    }

    fn on_timer(&mut self, now: Instant, token: u64, io: &mut AppIo) {
        if token != TICK {
            if self.release(token) {
                let mut stats = self.stats.borrow_mut();
                if stats.outcome(token) == Some(Outcome::Pending) {
                    stats.set_outcome(token, Outcome::Unanswered);
                    stats.unanswered += 1;
                }
            }
            return;
        }
        if self.destinations == 0 || !self.next_offset_ns.is_finite() {
            // No destination, or a rate that assigns nothing: no tick was asked for.
            return;
        }
        let event = self.next_event;
        let d = self.pick(event);
        self.next_event += 1;
        let mut msg = [0u8; ASSIGNMENT_LEN];
        msg[..8].copy_from_slice(&event.to_be_bytes());
        msg[8..].copy_from_slice(&now.as_nanos().to_be_bytes());
        io.send(to_destination(d), &msg);
        self.load[d] += 1;
        self.outstanding.insert(event, d);
        {
            let mut stats = self.stats.borrow_mut();
            stats.assigned += 1;
            stats.outcomes.push(Outcome::Pending);
        }
        let grace = Duration::from_nanos(self.timeout.as_nanos().saturating_mul(2));
        io.timer_after(now, grace, event);
        self.advance();
        self.schedule(io);
    }

    fn on_sent(&mut self, _now: Instant, _vc: VcId, _len: usize, ok: bool, _io: &mut AppIo) {
        if !ok {
            self.stats.borrow_mut().send_failures += 1;
        }
    }
}

struct Pending {
    assigned_at: Instant,
    got: u32,
    seen: Vec<u64>,
}

/// A destination: asks every source for the fragments of each event assigned to it.
pub struct Destination {
    index: usize,
    sources: usize,
    timeout: Duration,
    stats: Rc<RefCell<EbStats>>,
    source_of: HashMap<VcId, usize>,
    pending: BTreeMap<u64, Pending>,
}

impl Destination {
    /// Destination number `index` of an event builder with `sources` sources; events not
    /// built by `assignment time + timeout` are given up.
    pub fn new(
        index: usize,
        sources: usize,
        timeout: Duration,
        stats: Rc<RefCell<EbStats>>,
    ) -> Destination {
        Destination {
            index,
            sources,
            timeout,
            stats,
            source_of: (0..sources).map(|s| (to_source(s), s)).collect(),
            pending: BTreeMap::new(),
        }
    }

    /// Events waiting for fragments.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    fn done(event: u64, status: u8, io: &mut AppIo) {
        let mut msg = [0u8; DONE_LEN];
        msg[..8].copy_from_slice(&event.to_be_bytes());
        msg[8] = status;
        io.send(to_supervisor(), &msg);
    }

    fn on_assignment(&mut self, now: Instant, sdu: &[u8], io: &mut AppIo) {
        let (Some(event), Some(sent)) = (read_u64(sdu), sdu.get(8..).and_then(read_u64)) else {
            self.stats.borrow_mut().malformed += 1;
            return;
        };
        let outcome = self.stats.borrow().outcome(event);
        match outcome {
            Some(Outcome::Pending) if !self.pending.contains_key(&event) => {}
            // Decided already (the supervisor gave up on it) or a second copy.
            Some(_) => return,
            None => {
                self.stats.borrow_mut().malformed += 1;
                return;
            }
        }
        let assigned_at = Instant::from_nanos(sent);
        self.pending.insert(
            event,
            Pending {
                assigned_at,
                got: 0,
                seen: vec![0; self.sources.div_ceil(64)],
            },
        );
        for s in 0..self.sources {
            io.send(to_source(s), &event.to_be_bytes());
        }
        let deadline = assigned_at
            .checked_add(self.timeout)
            .unwrap_or(Instant::from_nanos(u64::MAX));
        io.timer(deadline.max(now), event);
    }

    fn on_fragment(&mut self, now: Instant, s: usize, sdu: &[u8], io: &mut AppIo) {
        let Some(event) = read_u64(sdu) else {
            self.stats.borrow_mut().malformed += 1;
            return;
        };
        let Some(p) = self.pending.get_mut(&event) else {
            self.stats.borrow_mut().late_fragments += 1;
            return;
        };
        let (word, bit) = (s / 64, 1u64 << (s % 64));
        if p.seen[word] & bit != 0 {
            self.stats.borrow_mut().malformed += 1;
            return;
        }
        p.seen[word] |= bit;
        p.got += 1;
        if p.got as usize == self.sources {
            let latency = now.saturating_duration_since(p.assigned_at).as_nanos();
            self.pending.remove(&event);
            let mut stats = self.stats.borrow_mut();
            // Saturates at the histogram's top (an hour) rather than failing.
            stats.latency.saturating_record(latency.max(1));
            stats.set_outcome(event, Outcome::Built);
            stats.built += 1;
            if let Some(c) = stats.built_per_destination.get_mut(self.index) {
                *c += 1;
            }
            drop(stats);
            Self::done(event, DONE_BUILT, io);
        }
    }
}

impl App for Destination {
    fn start(&mut self, _now: Instant, _io: &mut AppIo) {
        // After a crash nothing half-built survives; the timers that were set are gone too,
        // so those events end unanswered at the supervisor.
        self.pending.clear();
    }

    fn on_sdu(&mut self, now: Instant, vc: VcId, sdu: &[u8], io: &mut AppIo) {
        if vc == to_supervisor() {
            if sdu.len() == ASSIGNMENT_LEN {
                self.on_assignment(now, sdu, io);
            } else {
                self.stats.borrow_mut().malformed += 1;
            }
        } else if let Some(&s) = self.source_of.get(&vc) {
            self.on_fragment(now, s, sdu, io);
        } else {
            self.stats.borrow_mut().malformed += 1;
        }
    }

    fn on_timer(&mut self, _now: Instant, event: u64, io: &mut AppIo) {
        if self.pending.remove(&event).is_some() {
            let mut stats = self.stats.borrow_mut();
            stats.set_outcome(event, Outcome::TimedOut);
            stats.timed_out += 1;
            drop(stats);
            Self::done(event, DONE_TIMED_OUT, io);
        }
    }

    fn on_sent(&mut self, _now: Instant, _vc: VcId, _len: usize, ok: bool, _io: &mut AppIo) {
        if !ok {
            self.stats.borrow_mut().send_failures += 1;
        }
    }
}

/// A source: answers each request with a fragment of `fragment` bytes on the same VC.
pub struct Source {
    fragment: usize,
    stats: Rc<RefCell<EbStats>>,
}

impl Source {
    /// A source sending fragments of `fragment` bytes (≥ [`EVENT_BYTES`]; shorter ones are
    /// sent at [`EVENT_BYTES`]: the event number must fit).
    pub fn new(fragment: usize, stats: Rc<RefCell<EbStats>>) -> Source {
        Source {
            fragment: fragment.max(EVENT_BYTES),
            stats,
        }
    }
}

impl App for Source {
    fn start(&mut self, _now: Instant, _io: &mut AppIo) {}

    fn on_sdu(&mut self, _now: Instant, vc: VcId, sdu: &[u8], io: &mut AppIo) {
        match read_u64(sdu) {
            Some(event) if sdu.len() == REQUEST_LEN => {
                io.send_with(vc, self.fragment, |b| {
                    b[..EVENT_BYTES].copy_from_slice(&event.to_be_bytes());
                });
                self.stats.borrow_mut().fragments_sent += 1;
            }
            _ => self.stats.borrow_mut().malformed += 1,
        }
    }

    fn on_timer(&mut self, _now: Instant, _token: u64, _io: &mut AppIo) {}

    fn on_sent(&mut self, _now: Instant, _vc: VcId, _len: usize, ok: bool, _io: &mut AppIo) {
        if !ok {
            self.stats.borrow_mut().send_failures += 1;
        }
    }
}

/// What an event-builder run is asked to do.
#[derive(Clone, Debug)]
pub struct EbConfig {
    /// Sources (readout buffers), ≥ 1.
    pub sources: usize,
    /// Destinations (event-building nodes), ≥ 1.
    pub destinations: usize,
    /// Events assigned per second (finite, > 0).
    pub rate_hz: f64,
    /// Periodic or Poisson assignments.
    pub arrivals: Arrivals,
    /// How the supervisor picks a destination.
    pub policy: Policy,
    /// Bytes of each fragment ([`EVENT_BYTES`]..=65535).
    pub fragment: usize,
    /// The QoS of the data VCs (source ↔ destination); AAL5 is implied.
    pub qos: Qos,
    /// Every link's line rate.
    pub link: LineRate,
    /// Per-message host overheads (from a calibration).
    pub costs: HostCosts,
    /// How long the supervisor assigns events; the run goes on for twice the timeout after
    /// it so that every event is decided.
    pub duration: Duration,
    /// The seed of the whole run.
    pub seed: u64,
    /// An event not built this long after its assignment is lost.
    pub timeout: Duration,
    /// How often queues and links are sampled.
    pub sample_interval: Duration,
}

impl EbConfig {
    /// `sources` × `destinations` at `rate_hz` with `fragment`-byte fragments; UBR data VCs
    /// on OC-3c links, free hosts, periodic round-robin assignment for 1 s, seed 1, 100 ms
    /// timeout, 1 ms samples.
    pub fn new(sources: usize, destinations: usize, rate_hz: f64, fragment: usize) -> EbConfig {
        EbConfig {
            sources,
            destinations,
            rate_hz,
            arrivals: Arrivals::Periodic,
            policy: Policy::RoundRobin,
            fragment,
            qos: Qos {
                tx: TrafficParams {
                    class: TrafficClass::Ubr,
                    ..TrafficParams::default()
                },
                rx: TrafficParams {
                    class: TrafficClass::Ubr,
                    ..TrafficParams::default()
                },
                aal: Aal::Aal5,
            },
            link: LineRate::default(),
            costs: HostCosts::FREE,
            duration: Duration::from_secs(1),
            seed: 1,
            timeout: Duration::from_millis(100),
            sample_interval: Duration::from_millis(1),
        }
    }

    /// Checks every constraint [`run`] relies on, naming the one that fails.
    ///
    /// At most [`MAX_PAIRS`] source–destination pairs, 65,535 switch ports, 10⁸ events.
    pub fn validate(&self) -> Result<(), EbError> {
        if self.sources == 0 {
            return Err(EbError::Config("sources must be at least 1".into()));
        }
        if self.destinations == 0 {
            return Err(EbError::Config("destinations must be at least 1".into()));
        }
        // VCIs 32 + index on each host link; a port per host on one switch.
        let max_peers = usize::from(u16::MAX) - usize::from(FIRST_VCI);
        if self.sources > max_peers || self.destinations > max_peers {
            return Err(EbError::Config(format!(
                "at most {max_peers} sources and {max_peers} destinations: VCI 32 + peer index must fit 16 bits"
            )));
        }
        if self.sources + self.destinations + 1 > usize::from(u16::MAX) {
            return Err(EbError::Config(format!(
                "sources + destinations + 1 = {} switch ports: at most 65535",
                self.sources + self.destinations + 1
            )));
        }
        // Each source–destination pair is a PVC with its state in both adapters and the
        // switch (about 6.5 KiB in all: 421 MiB at 256 × 256); larger runs would exhaust
        // memory long after starting instead of being refused here.
        let pairs = self.sources * self.destinations;
        if pairs > MAX_PAIRS {
            return Err(EbError::Config(format!(
                "sources × destinations = {pairs} connections: at most {MAX_PAIRS} \
                 (1024 × 1024; each holds about 6.5 KiB of simulator state)"
            )));
        }
        if !(EVENT_BYTES..=65_535).contains(&self.fragment) {
            return Err(EbError::Config(format!(
                "fragment must be {EVENT_BYTES}..=65535 bytes (an AAL5 SDU that holds the 8-byte event number), not {}",
                self.fragment
            )));
        }
        if !(self.rate_hz.is_finite() && self.rate_hz > 0.0) {
            return Err(EbError::Config(format!(
                "rate must be a positive number of events per second, not {}",
                self.rate_hz
            )));
        }
        let events = self.rate_hz * self.duration.as_nanos() as f64 / 1e9;
        // One outcome byte per event is kept for the whole run.
        if events > 1e8 {
            return Err(EbError::Config(format!(
                "rate × duration = {events:.0} events: at most 10^8 in one run"
            )));
        }
        for (what, d) in [
            ("duration", self.duration),
            ("timeout", self.timeout),
            ("sample interval", self.sample_interval),
        ] {
            if d == Duration::ZERO {
                return Err(EbError::Config(format!("{what} must be more than 0")));
            }
        }
        if self.qos.tx.class == TrafficClass::None || self.qos.rx.class == TrafficClass::None {
            return Err(EbError::Config(
                "qos: the data VCs carry fragments (tx) and requests (rx): neither may be none"
                    .into(),
            ));
        }
        if self.qos.aal == Aal::Aal0 {
            return Err(EbError::Config(
                "qos: the event builder's VCs carry AAL5 SDUs, not aal0".into(),
            ));
        }
        Ok(())
    }

    fn echo(&self) -> ConfigEcho {
        ConfigEcho {
            sources: self.sources,
            destinations: self.destinations,
            rate_hz: self.rate_hz,
            arrivals: self.arrivals.to_string(),
            policy: self.policy.to_string(),
            fragment: self.fragment,
            qos: self.qos.to_string(),
            link: self.link.to_string(),
            costs_ns: CostsEcho {
                send_fixed: self.costs.send_fixed.as_nanos(),
                send_per_byte: self.costs.send_per_byte_ps as f64 / 1000.0,
                recv_fixed: self.costs.recv_fixed.as_nanos(),
                recv_per_byte: self.costs.recv_per_byte_ps as f64 / 1000.0,
                wakeup: self.costs.wakeup.as_nanos(),
            },
            duration_s: secs(self.duration),
            seed: self.seed,
            timeout_s: secs(self.timeout),
            sample_interval_s: secs(self.sample_interval),
        }
    }
}

fn secs(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e9
}

/// Why an event-builder run could not be made or run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EbError {
    /// A configuration value is out of range (the message names the constraint).
    Config(String),
    /// The network refused to be built: a port, a cross-connect (CAC names the binding
    /// constraint) or a VC.
    Network(String),
    /// The simulator found a core breaking an invariant (a bug in natm, not in the input).
    Invariant(String),
}

impl fmt::Display for EbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EbError::Config(m) => write!(f, "event builder: {m}"),
            EbError::Network(m) => write!(f, "event builder network: {m}"),
            EbError::Invariant(m) => write!(f, "event builder: the simulator stopped: {m}"),
        }
    }
}

impl std::error::Error for EbError {}

/// [`EbConfig`] as the report repeats it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConfigEcho {
    /// Sources.
    pub sources: usize,
    /// Destinations.
    pub destinations: usize,
    /// Events assigned per second.
    pub rate_hz: f64,
    /// `periodic` or `poisson (seed N)`.
    pub arrivals: String,
    /// `round-robin` or `least-loaded`.
    pub policy: String,
    /// Fragment bytes.
    pub fragment: usize,
    /// The data VCs' QoS, linux-atm text.
    pub qos: String,
    /// Line rate of every link.
    pub link: String,
    /// Host costs in ns (per byte: ns per byte).
    pub costs_ns: CostsEcho,
    /// Seconds of assignments.
    pub duration_s: f64,
    /// The run's seed.
    pub seed: u64,
    /// Event timeout in seconds.
    pub timeout_s: f64,
    /// Sampling interval in seconds.
    pub sample_interval_s: f64,
}

/// [`HostCosts`] in ns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CostsEcho {
    /// Fixed cost of a send.
    pub send_fixed: u64,
    /// Per byte sent.
    pub send_per_byte: f64,
    /// Fixed cost of a receive.
    pub recv_fixed: u64,
    /// Per byte received.
    pub recv_per_byte: f64,
    /// Wake-up of an idle host.
    pub wakeup: u64,
}

/// What happened to the events.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EventCounts {
    /// Assigned by the supervisor.
    pub assigned: u64,
    /// Built.
    pub built: u64,
    /// Lost: timed out plus unanswered.
    pub lost: u64,
    /// A destination gave up on them at the timeout.
    pub timed_out: u64,
    /// No destination decided them within twice the timeout (assignment lost).
    pub unanswered: u64,
    /// Not decided when the run stopped.
    pub pending: u64,
    /// Built per simulated second of assignments.
    pub achieved_rate_hz: f64,
    /// Fragments that came after their event was given up.
    pub late_fragments: u64,
    /// SDUs an app could not read.
    pub malformed: u64,
    /// Sends refused or aborted by a host.
    pub send_failures: u64,
    /// Fewest and most events one destination built.
    pub built_per_destination_min_max: (u64, u64),
}

/// Event-building latency in µs; `None` when nothing was built.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Latency {
    /// Smallest.
    pub min_us: f64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest.
    pub max_us: f64,
    /// Histogram for the plot: 60 equal buckets from the smallest latency to the largest.
    pub histogram: Vec<Bucket>,
}

/// One bar of the latency histogram.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bucket {
    /// Lower edge in µs (inclusive).
    pub from_us: f64,
    /// Upper edge in µs (exclusive).
    pub to_us: f64,
    /// Events built with a latency in the bucket.
    pub events: u64,
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Option<Latency> {
        if h.is_empty() {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        let (min, max) = (h.min(), h.max());
        const BUCKETS: u64 = 60;
        let width = (max - min) / BUCKETS + 1;
        let mut histogram: Vec<Bucket> = (0..BUCKETS)
            .map(|i| Bucket {
                from_us: us(min + i * width),
                to_us: us(min + (i + 1) * width),
                events: 0,
            })
            .collect();
        for v in h.iter_recorded() {
            // hdrhistogram's bucket values may stray a little past the exact min and max.
            let i = (v.value_iterated_to().clamp(min, max) - min) / width;
            histogram[i.min(BUCKETS - 1) as usize].events += v.count_at_value();
        }
        Some(Latency {
            min_us: us(min),
            mean_us: h.mean() / 1000.0,
            p50_us: us(h.value_at_quantile(0.5)),
            p90_us: us(h.value_at_quantile(0.9)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(max),
            histogram,
        })
    }
}

/// Link occupancy: cells carried / cells the line could carry, per sample interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkOccupancy {
    /// Mean over links and samples.
    pub mean: f64,
    /// Largest over links and samples.
    pub max: f64,
    /// The link with the largest mean, e.g. `s1→dst3`.
    pub worst_link: String,
    /// That link's mean.
    pub worst_link_mean: f64,
    /// That link's largest sample.
    pub worst_link_max: f64,
}

/// One sample of the switch's output queues.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueSample {
    /// Simulated time in seconds.
    pub t_s: f64,
    /// Cells queued at the fullest port.
    pub max_cells: u32,
    /// Mean cells queued over ports.
    pub mean_cells: f64,
}

/// Switch output-queue occupancy over the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueOccupancy {
    /// The port whose queue held the most cells in any sample, e.g. `dst3`.
    pub worst_port: String,
    /// Those cells.
    pub worst_port_max_cells: u32,
    /// Mean over ports and samples.
    pub mean_cells: f64,
    /// One entry per sample.
    pub samples: Vec<QueueSample>,
}

/// What was dropped at one place for one reason.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Drops {
    /// Where, e.g. `s1 port 7 (dst3)`, `link src1→s1`, `host dst0 adapter`.
    pub place: String,
    /// Why: `output queue full`, `early packet discard`, `no receive buffer`, …
    pub reason: String,
    /// How many.
    pub count: u64,
    /// Of what: `cells`, `frames` or `SDUs`.
    pub unit: String,
}

/// What an event-builder run measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EbReport {
    /// The configuration.
    pub config: ConfigEcho,
    /// Event counts and rate.
    pub events: EventCounts,
    /// Latency; `None` if nothing was built.
    pub latency: Option<Latency>,
    /// Link occupancy; `None` on unlimited links.
    pub links: Option<LinkOccupancy>,
    /// Queue occupancy.
    pub queues: QueueOccupancy,
    /// Cells dropped, per place and reason (only where some were).
    pub drops: Vec<Drops>,
    /// Sum of the `drops` counted in cells.
    pub cells_dropped: u64,
    /// Simulated seconds run (assignments, then draining).
    pub sim_seconds: f64,
    /// Wall-clock seconds the run took (not deterministic).
    pub wall_seconds: f64,
    /// Cell events the engine processed.
    pub cell_events: u64,
    /// Cell events per wall-clock second (not deterministic).
    pub cell_events_per_s: f64,
    /// Peak resident memory of this process in bytes (`VmHWM`), if the system says. [`run`]
    /// reads no `/proc` and leaves it `None`; the caller that runs it in a process of its own
    /// fills it in (`natm sim eventbuilder` does, with `natm_nic::procfs`).
    pub peak_rss_bytes: Option<u64>,
}

impl EbReport {
    /// The report without what differs between two runs of one seed (wall time, rate of
    /// the engine, memory).
    pub fn deterministic(&self) -> EbReport {
        EbReport {
            wall_seconds: 0.0,
            cell_events_per_s: 0.0,
            peak_rss_bytes: None,
            ..self.clone()
        }
    }
}

/// The name of switch port `p` (1-based): `sup`, `src0`…, `dst0`….
pub fn port_name(p: u16, sources: usize) -> String {
    let i = usize::from(p);
    match i {
        0 => "none".into(),
        1 => "sup".into(),
        _ if i < 2 + sources => format!("src{}", i - 2),
        _ => format!("dst{}", i - 2 - sources),
    }
}

/// Switch port numbers: the supervisor's, source `s`'s, destination `d`'s.
pub fn supervisor_port() -> u16 {
    1
}

/// Switch port of source `s`.
pub fn source_port(s: usize) -> u16 {
    (2 + s) as u16
}

/// Switch port of destination `d`.
pub fn destination_port(d: usize, sources: usize) -> u16 {
    (2 + sources + d) as u16
}

/// Accumulates per-port samples into link and queue occupancy.
struct Sampler {
    /// Cells per second of each line; `None` when unlimited.
    line_cps: Option<f64>,
    ports: usize,
    last_t: u64,
    last_in: Vec<u64>,
    last_out: Vec<u64>,
    /// Per link (2 per port: in = host→switch, out = switch→host): sum and max occupancy.
    occ_sum: Vec<f64>,
    occ_max: Vec<f64>,
    intervals: u64,
    queue_max: Vec<u32>,
    queue_sum: f64,
    samples: Vec<QueueSample>,
}

impl Sampler {
    fn new(ports: usize, line_cps: Option<f64>) -> Sampler {
        Sampler {
            line_cps,
            ports,
            last_t: 0,
            last_in: vec![0; ports],
            last_out: vec![0; ports],
            occ_sum: vec![0.0; 2 * ports],
            occ_max: vec![0.0; 2 * ports],
            intervals: 0,
            queue_max: vec![0; ports],
            queue_sum: 0.0,
            samples: Vec::new(),
        }
    }

    /// One sample at `t_ns`: per port, cumulative cells in and out and cells queued. Link
    /// occupancy counts only when `links` (the draining after the load is left out).
    fn sample(&mut self, t_ns: u64, links: bool, ports: impl Iterator<Item = (u64, u64, u32)>) {
        let dt = t_ns.saturating_sub(self.last_t);
        let capacity = self
            .line_cps
            .filter(|_| links)
            .map(|cps| cps * dt as f64 / 1e9);
        let (mut qmax, mut qsum) = (0u32, 0u64);
        for (i, (cin, cout, q)) in ports.enumerate().take(self.ports) {
            if let Some(cap) = capacity.filter(|&c| c > 0.0) {
                for (k, d) in [
                    (2 * i, cin.saturating_sub(self.last_in[i])),
                    (2 * i + 1, cout.saturating_sub(self.last_out[i])),
                ] {
                    let occ = d as f64 / cap;
                    self.occ_sum[k] += occ;
                    self.occ_max[k] = self.occ_max[k].max(occ);
                }
            }
            self.last_in[i] = cin;
            self.last_out[i] = cout;
            self.queue_max[i] = self.queue_max[i].max(q);
            qmax = qmax.max(q);
            qsum += u64::from(q);
        }
        if dt > 0 && links {
            self.intervals += 1;
        }
        self.last_t = t_ns;
        let mean = qsum as f64 / self.ports.max(1) as f64;
        self.queue_sum += mean;
        self.samples.push(QueueSample {
            t_s: t_ns as f64 / 1e9,
            max_cells: qmax,
            mean_cells: mean,
        });
    }

    fn links(&self, sources: usize) -> Option<LinkOccupancy> {
        self.line_cps?;
        if self.intervals == 0 || self.ports == 0 {
            return None;
        }
        let n = self.intervals as f64;
        let means: Vec<f64> = self.occ_sum.iter().map(|s| s / n).collect();
        let (worst, &worst_mean) = means
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))?;
        let port = port_name((worst / 2 + 1) as u16, sources);
        Some(LinkOccupancy {
            mean: means.iter().sum::<f64>() / means.len() as f64,
            max: self.occ_max.iter().copied().fold(0.0, f64::max),
            worst_link: if worst % 2 == 0 {
                format!("{port}→s1")
            } else {
                format!("s1→{port}")
            },
            worst_link_mean: worst_mean,
            worst_link_max: self.occ_max[worst],
        })
    }

    fn queues(self, sources: usize) -> QueueOccupancy {
        let (worst, max) = self
            .queue_max
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
            .map_or((0, 0), |(i, &m)| (i, m));
        QueueOccupancy {
            worst_port: port_name((worst + 1) as u16, sources),
            worst_port_max_cells: max,
            mean_cells: self.queue_sum / self.samples.len().max(1) as f64,
            samples: self.samples,
        }
    }
}

/// Buffer memory one host may reserve (its buffers are allocated zeroed, so only the ones
/// used become resident).
const HOST_BUFFER_BYTES: usize = 256 << 20;

/// A host's make-up for `peers` VCs: buffers the size of the largest SDU it handles, four
/// per VC each way (at least 32), within [`HOST_BUFFER_BYTES`].
fn host_config(peers: usize, largest: usize, costs: HostCosts) -> HostConfig {
    let per_side = (4 * peers).max(32);
    let cap = (HOST_BUFFER_BYTES / largest.max(1) / 2).max(1);
    let buffers = (2 * per_side.min(cap)) as u32;
    let mut c = HostConfig::new(buffers, largest);
    c.adapter.max_vcs = peers.max(1);
    c.costs = costs;
    c
}

fn network(e: impl fmt::Display) -> EbError {
    EbError::Network(e.to_string())
}

/// Runs the event builder `config` describes and reports what it measured.
///
/// One switch `s1`; port 1 the supervisor's, ports 2.. the sources', then the
/// destinations'; each host on its own link at `config.link`. Every VC is a PVC
/// cross-connect: UBR for the supervisor's, `config.qos` for the data VCs (`tx` the
/// fragments' direction, booked by CAC on the destination's port; `rx` the requests').
/// The supervisor assigns events for `config.duration`; the run goes on for twice the
/// timeout more so that every event is decided. Queues and links are sampled every
/// `config.sample_interval`.
pub fn run(config: &EbConfig) -> Result<EbReport, EbError> {
    config.validate()?;
    let wall = std::time::Instant::now();
    let (ns, nd) = (config.sources, config.destinations);
    let stats = EbStats::shared(nd);
    let data_qos = Qos {
        aal: Aal::Aal5,
        ..config.qos
    };
    let ubr = TrafficParams {
        class: TrafficClass::Ubr,
        ..TrafficParams::default()
    };
    let control_qos = Qos {
        tx: ubr,
        rx: ubr,
        aal: Aal::Aal5,
    };
    let swapped = |q: Qos| Qos {
        tx: q.rx,
        rx: q.tx,
        aal: q.aal,
    };

    let mut world = World::new(config.seed);
    let sw = world.add_switch(
        "s1",
        SwitchConfig {
            max_connections: u32::try_from(ns * nd + nd)
                .map_err(|_| EbError::Config("too many connections for one switch".into()))?,
        },
    );
    let link = LinkConfig {
        rate: config.link,
        ..LinkConfig::default()
    };
    let largest = config.fragment.max(ASSIGNMENT_LEN);
    let stop_at = Instant::ZERO
        .checked_add(config.duration)
        .ok_or_else(|| EbError::Config("duration too long".into()))?;
    let mut hosts = Vec::with_capacity(1 + ns + nd);
    let mut links = Vec::with_capacity(1 + ns + nd);
    let mut add = |world: &mut World, name: String, port: u16, peers: usize, app: Box<dyn App>| {
        let h = world
            .add_host(&name, host_config(peers, largest, config.costs), app)
            .map_err(network)?;
        let l = world
            .add_link(
                End::Host(h),
                End::Port(sw, PortId(port), PortConfig::default()),
                link,
            )
            .map_err(network)?;
        hosts.push(h);
        links.push(l);
        Ok::<HostId, EbError>(h)
    };
    let sup = add(
        &mut world,
        "sup".into(),
        supervisor_port(),
        nd,
        Box::new(Supervisor::new(
            nd,
            config.rate_hz,
            config.arrivals,
            config.policy,
            stop_at,
            config.timeout,
            stats.clone(),
        )),
    )?;
    let mut srcs = Vec::with_capacity(ns);
    for s in 0..ns {
        let app = Box::new(Source::new(config.fragment, stats.clone()));
        srcs.push(add(&mut world, format!("src{s}"), source_port(s), nd, app)?);
    }
    let mut dsts = Vec::with_capacity(nd);
    for d in 0..nd {
        let app = Box::new(Destination::new(d, ns, config.timeout, stats.clone()));
        let port = destination_port(d, ns);
        dsts.push(add(&mut world, format!("dst{d}"), port, ns + 1, app)?);
    }

    // Cross-connects, made together and audited once; a refusal (CAC) names the pair and
    // the binding constraint.
    let vci = |i: usize| FIRST_VCI + i as u16;
    let mut xcs = Vec::with_capacity(nd + ns * nd);
    for d in 0..nd {
        let a = Endpoint::vc(supervisor_port(), 0, vci(d));
        let b = Endpoint::vc(destination_port(d, ns), 0, vci(0));
        xcs.push((
            "sup".to_string(),
            format!("dst{d}"),
            CrossConnect::new(a, b, control_qos),
        ));
    }
    for s in 0..ns {
        for d in 0..nd {
            let a = Endpoint::vc(source_port(s), 0, vci(d));
            let b = Endpoint::vc(destination_port(d, ns), 0, vci(1 + s));
            xcs.push((
                format!("src{s}"),
                format!("dst{d}"),
                CrossConnect::new(a, b, data_qos),
            ));
        }
    }
    let all: Vec<CrossConnect> = xcs.iter().map(|(_, _, xc)| *xc).collect();
    world.connect_all(sw, &all).map_err(|(i, e)| {
        let (a, b, xc) = &xcs[i];
        EbError::Network(format!(
            "cross-connect {a} ↔ {b} ({} ↔ {}, qos {}): {e}",
            xc.a, xc.b, xc.qos
        ))
    })?;
    let name_of = |world: &World, h: HostId| world.host_name(h).to_string();
    let open = |world: &mut World, h: HostId, vc: VcId, q: &Qos| {
        world
            .open_vc(h, vc, q)
            .map_err(|e| EbError::Network(format!("VC {vc} at {}: {e}", name_of(world, h))))
    };
    for (d, &h) in dsts.iter().enumerate() {
        open(&mut world, sup, to_destination(d), &control_qos)?;
        open(&mut world, h, to_supervisor(), &control_qos)?;
        for (s, &src) in srcs.iter().enumerate() {
            open(&mut world, src, to_destination(d), &data_qos)?;
            open(&mut world, h, to_source(s), &swapped(data_qos))?;
        }
    }

    world.start();
    let grace = Duration::from_nanos(config.timeout.as_nanos().saturating_mul(2));
    let end = stop_at
        .checked_add(grace)
        .and_then(|t| t.checked_add(config.sample_interval))
        .ok_or_else(|| EbError::Config("duration + twice the timeout is too long".into()))?;
    let line_cps = config.link.exact().map(|(n, d)| n as f64 / d.max(1) as f64);
    let mut sampler = Sampler::new(hosts.len(), line_cps);
    let step = config.sample_interval.as_nanos();
    let mut t = 0u64;
    while t < end.as_nanos() {
        t = t.saturating_add(step).min(end.as_nanos());
        world
            .run_until(Instant::from_nanos(t))
            .map_err(|v| EbError::Invariant(v.to_string()))?;
        let switch = world.switch(sw);
        let ports = hosts.iter().zip(&links).enumerate().map(|(i, (_, &l))| {
            let [up, down] = world.link_counters(l);
            let q = switch
                .port_counters(PortId(i as u16 + 1))
                .map_or(0, |c| c.queued().min(u64::from(u32::MAX)) as u32);
            (up.carried, down.carried, q)
        });
        sampler.sample(t, t <= stop_at.as_nanos(), ports);
    }

    let mut drops = Vec::new();
    let mut add_drop = |place: &str, reason: &str, count: u64, unit: &str| {
        if count > 0 {
            drops.push(Drops {
                place: place.to_string(),
                reason: reason.to_string(),
                count,
                unit: unit.to_string(),
            });
        }
    };
    let switch = world.switch(sw);
    for (i, (&h, &l)) in hosts.iter().zip(&links).enumerate() {
        let name = world.host_name(h).to_string();
        if let Some(c) = switch.port_counters(PortId(i as u16 + 1)) {
            let place = format!("s1 port {} ({name})", i + 1);
            for (reason, n) in [
                ("output queue full", c.queue_full),
                ("early packet discard", c.epd),
                ("partial packet discard", c.ppd),
                ("policed (input)", c.policed),
                ("unknown VC (input)", c.unknown_vc),
                ("header error (input)", c.hec_discarded),
                ("port down", c.port_down),
                ("flushed", c.flushed),
            ] {
                add_drop(&place, reason, n, "cells");
            }
        }
        let [up, down] = world.link_counters(l);
        for (dir, c) in [
            (format!("link {name}→s1"), up),
            (format!("link s1→{name}"), down),
        ] {
            add_drop(
                &dir,
                "line queue full",
                c.queue_drops + c.overflow_drops,
                "cells",
            );
            add_drop(
                &dir,
                "lost on the line",
                c.lost_random + c.lost_burst,
                "cells",
            );
        }
        let a = world.adapter(h).counters();
        let place = format!("host {name} adapter");
        for (reason, n) in [
            ("no receive buffer", a.no_buffer),
            ("bad CRC", a.crc),
            ("oversize", a.oversize),
            ("bad length", a.length),
            ("reassembly timeout", a.timeout),
            ("transmit refused", a.tx_refused),
        ] {
            add_drop(&place, reason, n, "frames");
        }
    }
    let ws = world.stats();
    add_drop("hosts", "sends refused", ws.sends_refused, "SDUs");
    let cells_dropped = drops
        .iter()
        .filter(|d| d.unit == "cells")
        .map(|d| d.count)
        .sum();

    let st = stats.borrow();
    let per_dest = &st.built_per_destination;
    let wall_seconds = wall.elapsed().as_secs_f64();
    Ok(EbReport {
        config: config.echo(),
        events: EventCounts {
            assigned: st.assigned,
            built: st.built,
            lost: st.timed_out + st.unanswered,
            timed_out: st.timed_out,
            unanswered: st.unanswered,
            pending: st.pending(),
            achieved_rate_hz: st.built as f64 / secs(config.duration),
            late_fragments: st.late_fragments,
            malformed: st.malformed,
            send_failures: st.send_failures,
            built_per_destination_min_max: (
                per_dest.iter().copied().min().unwrap_or(0),
                per_dest.iter().copied().max().unwrap_or(0),
            ),
        },
        latency: Latency::of(&st.latency),
        links: sampler.links(ns),
        queues: sampler.queues(ns),
        drops,
        cells_dropped,
        sim_seconds: world.now().as_nanos() as f64 / 1e9,
        wall_seconds,
        cell_events: ws.cell_events,
        cell_events_per_s: ws.cell_events as f64 / wall_seconds.max(1e-9),
        peak_rss_bytes: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    fn events_of(io: &AppIo) -> Vec<(VcId, u64, u64)> {
        io.sends()
            .map(|(vc, b)| (vc, read_u64(b).unwrap(), read_u64(&b[8..]).unwrap()))
            .collect()
    }

    /// Fires the supervisor's assignment timers in order until none is left.
    fn assign_all(sup: &mut Supervisor, io: &mut AppIo) -> Vec<(VcId, u64, u64)> {
        let mut out = Vec::new();
        sup.start(Instant::ZERO, io);
        while let Some(&(t, tok)) = io.timers().iter().find(|(_, tok)| *tok == TICK) {
            out.extend(events_of(io));
            io.clear();
            sup.on_timer(t, tok, io);
        }
        out.extend(events_of(io));
        out
    }

    #[test]
    fn periodic_round_robin_assigns_at_the_rate_until_the_stop() {
        let stats = EbStats::shared(3);
        let mut sup = Supervisor::new(
            3,
            1000.0,
            Arrivals::Periodic,
            Policy::RoundRobin,
            at(4 * MS + 1),
            Duration::from_millis(10),
            stats.clone(),
        );
        let sent = assign_all(&mut sup, &mut AppIo::new());
        let want: Vec<_> = (0..5u64)
            .map(|n| (to_destination(n as usize % 3), n, n * MS))
            .collect();
        assert_eq!(sent, want);
        let s = stats.borrow();
        assert_eq!(s.assigned, 5);
        assert_eq!(s.outcomes, vec![Outcome::Pending; 5]);
    }

    #[test]
    fn poisson_arrivals_follow_the_seed_and_the_mean_rate() {
        let run = |seed| {
            let mut sup = Supervisor::new(
                4,
                10_000.0,
                Arrivals::Poisson { seed },
                Policy::RoundRobin,
                at(1_000 * MS),
                Duration::from_millis(10),
                EbStats::shared(4),
            );
            assign_all(&mut sup, &mut AppIo::new())
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
        // 10 kHz for 1 s: 10,000 expected, σ = 100.
        assert!((9_600..=10_400).contains(&a.len()), "{}", a.len());
        let gaps: Vec<u64> = a.windows(2).map(|w| w[1].2 - w[0].2).collect();
        assert!(gaps.iter().any(|&g| g < 20_000) && gaps.iter().any(|&g| g > 300_000));
    }

    #[test]
    fn least_loaded_sends_to_the_destination_that_answered() {
        let stats = EbStats::shared(2);
        let mut sup = Supervisor::new(
            2,
            1000.0,
            Arrivals::Periodic,
            Policy::LeastLoaded,
            at(100 * MS),
            Duration::from_millis(10),
            stats.clone(),
        );
        let mut io = AppIo::new();
        sup.start(Instant::ZERO, &mut io);
        let mut dests = Vec::new();
        for n in 0..4u64 {
            io.clear();
            sup.on_timer(at(n * MS), TICK, &mut io);
            dests.push(events_of(&io)[0].0);
            if n == 1 {
                // Destination 1 finishes event 1; destination 0 still has event 0.
                let mut done = [0u8; DONE_LEN];
                done[..8].copy_from_slice(&1u64.to_be_bytes());
                done[8] = DONE_BUILT;
                sup.on_sdu(at(n * MS + 1), to_destination(1), &done, &mut io);
            }
        }
        assert_eq!(
            dests,
            [
                to_destination(0),
                to_destination(1),
                to_destination(1),
                to_destination(0)
            ]
        );
        assert_eq!(stats.borrow().done_received, 1);
    }

    /// A toy network for the apps: every SDU arrives `delay` after it was sent.
    struct Net {
        sup: Supervisor,
        dests: Vec<Destination>,
        srcs: Vec<Source>,
        delay: u64,
        /// Drop the SDUs this returns true for: (from, to, bytes).
        drop: DropRule,
        queue: BTreeMap<(u64, u64), Ev>,
        seq: u64,
    }

    type DropRule = Box<dyn Fn(Node, Node, &[u8]) -> bool>;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Node {
        Sup,
        Dest(usize),
        Src(usize),
    }

    enum Ev {
        Sdu(Node, VcId, Vec<u8>),
        Timer(Node, u64),
    }

    impl Net {
        fn new(s: usize, d: usize, stop_ms: u64, timeout_ms: u64) -> (Net, Rc<RefCell<EbStats>>) {
            let stats = EbStats::shared(d);
            let timeout = Duration::from_millis(timeout_ms);
            let net = Net {
                sup: Supervisor::new(
                    d,
                    1000.0,
                    Arrivals::Periodic,
                    Policy::RoundRobin,
                    at(stop_ms * MS),
                    timeout,
                    stats.clone(),
                ),
                dests: (0..d)
                    .map(|i| Destination::new(i, s, timeout, stats.clone()))
                    .collect(),
                srcs: (0..s).map(|_| Source::new(100, stats.clone())).collect(),
                delay: 10_000,
                drop: Box::new(|_, _, _| false),
                queue: BTreeMap::new(),
                seq: 0,
            };
            (net, stats)
        }

        /// Where an SDU sent by `from` on `vc` arrives, and on which VC.
        fn peer(from: Node, vc: VcId) -> (Node, VcId) {
            let i = usize::from(vc.vci.get() - FIRST_VCI);
            match from {
                Node::Sup => (Node::Dest(i), to_supervisor()),
                Node::Dest(d) if i == 0 => (Node::Sup, to_destination(d)),
                Node::Dest(d) => (Node::Src(i - 1), to_destination(d)),
                Node::Src(s) => (Node::Dest(i), to_source(s)),
            }
        }

        fn push(&mut self, t: u64, ev: Ev) {
            self.seq += 1;
            self.queue.insert((t, self.seq), ev);
        }

        fn take(&mut self, now: u64, from: Node, io: &mut AppIo) {
            let sends: Vec<_> = io.sends().map(|(v, b)| (v, b.to_vec())).collect();
            for (vc, b) in sends {
                let (to, rvc) = Net::peer(from, vc);
                if !(self.drop)(from, to, &b) {
                    self.push(now + self.delay, Ev::Sdu(to, rvc, b));
                }
            }
            for &(t, tok) in io.timers() {
                self.push(t.as_nanos().max(now), Ev::Timer(from, tok));
            }
            io.clear();
        }

        fn run(&mut self, until: u64) {
            let mut io = AppIo::new();
            self.sup.start(Instant::ZERO, &mut io);
            self.take(0, Node::Sup, &mut io);
            while let Some(((t, _), ev)) = self.queue.pop_first() {
                if t > until {
                    break;
                }
                let now = at(t);
                let node = match ev {
                    Ev::Sdu(n, vc, b) => {
                        match n {
                            Node::Sup => self.sup.on_sdu(now, vc, &b, &mut io),
                            Node::Dest(d) => self.dests[d].on_sdu(now, vc, &b, &mut io),
                            Node::Src(s) => self.srcs[s].on_sdu(now, vc, &b, &mut io),
                        }
                        n
                    }
                    Ev::Timer(n, tok) => {
                        match n {
                            Node::Sup => self.sup.on_timer(now, tok, &mut io),
                            Node::Dest(d) => self.dests[d].on_timer(now, tok, &mut io),
                            Node::Src(s) => self.srcs[s].on_timer(now, tok, &mut io),
                        }
                        n
                    }
                };
                self.take(t, node, &mut io);
            }
        }
    }

    #[test]
    fn every_event_is_built_with_two_hops_of_latency() {
        let (mut net, stats) = Net::new(3, 2, 10, 5);
        net.run(100 * MS);
        let s = stats.borrow();
        assert_eq!(s.assigned, 10);
        assert_eq!(s.built, 10);
        assert_eq!(s.done_received, 10);
        assert_eq!(s.fragments_sent, 30);
        assert_eq!(s.built_per_destination, [5, 5]);
        assert_eq!((s.timed_out, s.unanswered, s.pending()), (0, 0, 0));
        // Assignment, request, fragment: three 10 µs hops.
        assert_eq!(s.latency.min(), 30_000);
        assert_eq!(s.latency.max(), s.latency.highest_equivalent(30_000));
        assert!(s.outcomes.iter().all(|&o| o == Outcome::Built));
        assert!(net.dests.iter().all(|d| d.pending() == 0));
    }

    #[test]
    fn a_missing_fragment_times_the_event_out_and_a_lost_assignment_goes_unanswered() {
        let (mut net, stats) = Net::new(2, 2, 4, 5);
        // Source 1 never answers event 1; the assignment of event 2 is lost.
        net.drop = Box::new(|from, to, b| {
            let ev = read_u64(b).unwrap();
            (from == Node::Src(1) && ev == 1)
                || (from == Node::Sup && to == Node::Dest(0) && ev == 2)
        });
        net.run(100 * MS);
        let s = stats.borrow();
        assert_eq!(s.assigned, 4);
        assert_eq!(
            s.outcomes,
            [
                Outcome::Built,
                Outcome::TimedOut,
                Outcome::Unanswered,
                Outcome::Built
            ]
        );
        assert_eq!(
            (s.built, s.timed_out, s.unanswered, s.pending()),
            (2, 1, 1, 0)
        );
        // The timed-out event's done reached the supervisor; the lost one never did.
        assert_eq!(s.done_received, 3);
        assert_eq!(s.late_fragments, 0);
    }

    #[test]
    fn a_fragment_after_the_timeout_is_late_not_built() {
        let (mut net, stats) = Net::new(1, 1, 1, 5);
        net.delay = 2 * MS; // three hops: 6 ms > 5 ms timeout
        net.run(100 * MS);
        let s = stats.borrow();
        assert_eq!((s.built, s.timed_out, s.late_fragments), (0, 1, 1));
    }

    #[test]
    fn garbage_is_counted_never_a_panic() {
        let stats = EbStats::shared(2);
        let mut sup = Supervisor::new(
            2,
            1.0,
            Arrivals::Periodic,
            Policy::LeastLoaded,
            at(MS),
            Duration::from_millis(1),
            stats.clone(),
        );
        let mut dest = Destination::new(0, 70, Duration::from_millis(1), stats.clone());
        let mut src = Source::new(3, stats.clone());
        let mut io = AppIo::new();
        let mut n = 0;
        for len in 0..40usize {
            let b: Vec<u8> = (0..len).map(|i| (i * 37 + len) as u8 | 0x80).collect();
            for vc in [vc(0), vc(1), vc(69), vc(70), vc(500)] {
                sup.on_sdu(at(1), vc, &b, &mut io);
                dest.on_sdu(at(1), vc, &b, &mut io);
                src.on_sdu(at(1), vc, &b, &mut io);
                n += 3;
            }
        }
        let s = stats.borrow();
        // A source answers only 8-byte requests (5 VCs × 1 length), with at least 8 bytes.
        assert_eq!(s.fragments_sent, 5);
        assert!(io.sends().all(|(_, b)| b.len() == EVENT_BYTES));
        // Readable fragments (≥ 8 bytes on the 3 source VCs) of an unknown event are late.
        assert_eq!(s.late_fragments, 3 * 32);
        assert_eq!(s.malformed, n - 5 - 3 * 32);
        assert_eq!((s.assigned, s.built), (0, 0));
    }

    #[test]
    fn sampler_divides_cells_by_line_capacity_and_names_the_worst() {
        // 2 ports at 1,000,000 cells/s, 1 ms samples: capacity 1000 cells per sample.
        let mut sm = Sampler::new(2, Some(1e6));
        sm.sample(MS, true, [(100, 500, 3), (0, 0, 0)].into_iter());
        sm.sample(2 * MS, true, [(300, 1500, 9), (50, 0, 1)].into_iter());
        let l = sm.links(0).unwrap();
        // Port 1 out: 500 then 1000 cells of 1000.
        assert_eq!(l.worst_link, "s1→sup");
        assert!((l.worst_link_mean - 0.75).abs() < 1e-12);
        assert!((l.worst_link_max - 1.0).abs() < 1e-12);
        assert!((l.max - 1.0).abs() < 1e-12);
        // (0.1 + 0.2) + (0.5 + 1.0) + 0 + 0.05, over 4 links × 2 samples.
        assert!((l.mean - 1.85 / 8.0).abs() < 1e-12);
        let q = sm.queues(0);
        assert_eq!((q.worst_port.as_str(), q.worst_port_max_cells), ("sup", 9));
        assert_eq!(q.samples.len(), 2);
        assert_eq!(q.samples[1].max_cells, 9);
        assert!((q.samples[1].mean_cells - 5.0).abs() < 1e-12);
        assert!(Sampler::new(2, None).links(0).is_none());
    }

    #[test]
    fn port_names_follow_the_layout() {
        assert_eq!(port_name(supervisor_port(), 3), "sup");
        assert_eq!(port_name(source_port(2), 3), "src2");
        assert_eq!(port_name(destination_port(0, 3), 3), "dst0");
    }

    #[test]
    fn latency_percentiles_and_histogram_count_every_event() {
        let mut h = EbStats::new(1).latency;
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let l = Latency::of(&h).unwrap();
        assert!((l.p50_us - 500.0).abs() < 1.0, "{}", l.p50_us);
        assert!((l.p99_us - 990.0).abs() < 1.0, "{}", l.p99_us);
        assert!((l.max_us - 1000.0).abs() < 1.0);
        assert_eq!(l.histogram.iter().map(|b| b.events).sum::<u64>(), 1000);
        assert_eq!(l.histogram.len(), 60);
        assert_eq!(l.histogram[0].from_us, l.min_us);
        assert!(l.histogram[59].to_us > l.max_us);
        // Equal buckets over a uniform spread: about 1000 / 60 each.
        assert!(l.histogram.iter().all(|b| (10..=25).contains(&b.events)));
        assert!(Latency::of(&EbStats::new(1).latency).is_none());
    }

    #[test]
    fn validate_names_the_constraint() {
        let ok = EbConfig::new(4, 4, 1000.0, 128);
        assert_eq!(ok.validate(), Ok(()));
        let msg = |c: EbConfig| c.validate().unwrap_err().to_string();
        assert!(msg(EbConfig::new(0, 4, 1000.0, 128)).contains("sources"));
        assert!(msg(EbConfig::new(4, 0, 1000.0, 128)).contains("destinations"));
        assert!(msg(EbConfig::new(4, 4, 1000.0, 0)).contains("fragment"));
        assert!(msg(EbConfig::new(4, 4, 1000.0, 65_536)).contains("fragment"));
        assert!(msg(EbConfig::new(4, 4, 0.0, 128)).contains("rate"));
        assert!(msg(EbConfig::new(4, 4, f64::NAN, 128)).contains("rate"));
        assert!(msg(EbConfig::new(40_000, 40_000, 1.0, 128)).contains("ports"));
        assert!(msg(EbConfig::new(1025, 1024, 1.0, 128)).contains("at most 1048576"));
        assert_eq!(EbConfig::new(1024, 1024, 1.0, 128).validate(), Ok(()));
        let mut c = ok.clone();
        c.timeout = Duration::ZERO;
        assert!(msg(c).contains("timeout"));
        let mut c = ok.clone();
        c.qos = "ubr:tx:none".parse().unwrap();
        assert!(msg(c).contains("neither may be none"));
        let mut c = ok.clone();
        c.qos = "aal0,ubr".parse().unwrap();
        assert!(msg(c).contains("AAL5"));
    }

    #[test]
    fn a_rate_that_is_not_a_positive_number_or_no_destination_assigns_nothing() {
        for (d, rate) in [
            (2, f64::NAN),
            (2, 0.0),
            (2, -5.0),
            (2, f64::INFINITY),
            (0, 1e3),
        ] {
            let stats = EbStats::shared(d);
            let mut sup = Supervisor::new(
                d,
                rate,
                Arrivals::Periodic,
                Policy::RoundRobin,
                at(10 * MS),
                Duration::from_millis(1),
                stats.clone(),
            );
            let mut io = AppIo::new();
            sup.start(Instant::ZERO, &mut io);
            // A stray tick does nothing either.
            sup.on_timer(at(1), TICK, &mut io);
            assert!(io.is_empty(), "{d} {rate}");
            assert_eq!(stats.borrow().assigned, 0);
        }
    }
}

//! The event builder's apps: [`Supervisor`], [`Destination`] and [`Source`], and the
//! [`EbStats`] they share.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use hdrhistogram::Histogram;
use natm_core::{Duration, Instant, VcId};
use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

use crate::app::{App, AppIo};

use super::{
    ASSIGNMENT_LEN, Arrivals, DONE_BUILT, DONE_LEN, DONE_TIMED_OUT, EVENT_BYTES, Policy,
    REQUEST_LEN, TICK, to_destination, to_source, to_supervisor,
};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eventbuilder::{FIRST_VCI, vc};

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

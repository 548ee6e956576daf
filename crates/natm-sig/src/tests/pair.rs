//! The user-network pair harness: a user side and a network side `Uni` over a simulated
//! SAAL in virtual time, with owners that start, answer, release and restart calls at
//! random. The SAAL loses messages, delays them and breaks (both ends see
//! AAL-RELEASE.indication and re-establish after a while). A chaos phase is followed by a
//! quiet phase in which each owner audits its active calls (STATUS ENQUIRY) and answers
//! what is pending, then one where every call is released. Checked:
//!
//! * every call ends connected at both ends or released at both ends, each with a cause
//!   (a call one end never saw counts as released there);
//! * no call reference leaks: both ends have no calls at the end.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng as _, SeedableRng};

use super::*;
use crate::{Restart, Signalling};

/// What one end knows of one call.
#[derive(Clone, Debug)]
struct Rec {
    live: bool,
    cause: Option<Cause>,
}

/// The entity under test at one end: call control alone over the simulated SAAL, or the
/// whole `Signalling` (SSCF-UNI and SSCOP too) over a simulated AAL5 link.
#[allow(clippy::large_enum_variant)] // one per side, in tests
enum Ent {
    Uni(Uni),
    Sig(Signalling),
}

impl Ent {
    fn uni(&self) -> &Uni {
        match self {
            Ent::Uni(u) => u,
            Ent::Sig(s) => s.uni(),
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Ent::Uni(u) => u.poll_timeout(),
            Ent::Sig(s) => s.poll_timeout(),
        }
    }
    fn handle_timeout(&mut self, now: Instant) {
        match self {
            Ent::Uni(u) => u.handle_timeout(now),
            Ent::Sig(s) => s.handle_timeout(now),
        }
    }
    fn poll_event(&mut self) -> Option<CallEvent> {
        match self {
            Ent::Uni(u) => u.poll_event(),
            Ent::Sig(s) => s.poll_event(),
        }
    }
    fn setup(&mut self, now: Instant, p: &SetupParams) -> Result<CallId, crate::CommandError> {
        match self {
            Ent::Uni(u) => u.setup(now, p),
            Ent::Sig(s) => s.setup(now, p),
        }
    }
    fn proceed(
        &mut self,
        now: Instant,
        c: CallId,
        k: Option<ConnId>,
    ) -> Result<(), crate::CommandError> {
        match self {
            Ent::Uni(u) => u.proceed(now, c, k),
            Ent::Sig(s) => s.proceed(now, c, k),
        }
    }
    fn connect(
        &mut self,
        now: Instant,
        c: CallId,
        k: Option<ConnId>,
    ) -> Result<(), crate::CommandError> {
        match self {
            Ent::Uni(u) => u.connect(now, c, k),
            Ent::Sig(s) => s.connect(now, c, k),
        }
    }
    fn release(
        &mut self,
        now: Instant,
        c: CallId,
        cause: Cause,
    ) -> Result<(), crate::CommandError> {
        match self {
            Ent::Uni(u) => u.release(now, c, cause),
            Ent::Sig(s) => s.release(now, c, cause),
        }
    }
    fn status_enquiry(&mut self, now: Instant, c: CallId) -> Result<(), crate::CommandError> {
        match self {
            Ent::Uni(u) => u.status_enquiry(now, c),
            Ent::Sig(s) => s.status_enquiry(now, c),
        }
    }
    fn restart(&mut self, now: Instant, what: Restart) -> Result<(), crate::CommandError> {
        match self {
            Ent::Uni(u) => u.restart(now, what),
            Ent::Sig(s) => s.restart(now, what),
        }
    }
}

/// One end: its entity, its owner's view of the calls, and the owner's pending actions.
struct Side {
    u: Ent,
    calls: BTreeMap<CallId, Rec>,
    /// The owner's actions: (when, call, what).
    todo: Vec<(Instant, CallId, Act)>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Act {
    Proceed,
    Connect,
    Release,
}

/// The simulated SAAL between the two ends.
struct Saal {
    up: bool,
    /// The link is broken until then: establishment fails.
    broken_until: Instant,
    /// In-flight messages to side i: (delivery time, bytes).
    q: [VecDeque<(Instant, Vec<u8>)>; 2],
    /// Side i asked to establish; answered then.
    establishing: [Option<Instant>; 2],
}

pub(crate) struct Sim {
    rng: Xoshiro256PlusPlus,
    now: Instant,
    sides: [Side; 2],
    saal: Saal,
    /// Chaos: loss probability in 1/1000, breaks allowed, owners start calls.
    loss: u32,
    breaks: bool,
    calls_on: bool,
    next_vci: u16,
    /// Drops the messages side i sends when this says so (targeted tests).
    drop_if: Option<fn(usize, &crate::msg::Inbound) -> bool>,
    pub delivered: u64,
}

const USER: usize = 0;
const NET: usize = 1;

impl Sim {
    pub(crate) fn new(seed: u64) -> Sim {
        Sim::with(seed, false)
    }

    /// With `sscop`, each end is a whole [`Signalling`] and the link carries SSCOP PDUs.
    pub(crate) fn with(seed: u64, sscop: bool) -> Sim {
        let side = |role| Side {
            u: if sscop {
                Ent::Sig(Signalling::new(
                    T0,
                    Config::new(role),
                    natm_sscop::Config::default(),
                ))
            } else {
                Ent::Uni(Uni::new(Config::new(role)))
            },
            calls: BTreeMap::new(),
            todo: Vec::new(),
        };
        let mut s = Sim {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            now: T0,
            sides: [side(Role::User), side(Role::Network)],
            saal: Saal {
                up: false,
                broken_until: T0,
                q: [VecDeque::new(), VecDeque::new()],
                establishing: [None, None],
            },
            loss: 0,
            breaks: false,
            calls_on: false,
            next_vci: 32,
            drop_if: None,
            delivered: 0,
        };
        s.drain(USER);
        s.drain(NET);
        s
    }

    fn below(&mut self, n: u64) -> u64 {
        self.rng.next_u64() % n.max(1)
    }

    fn ms(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi - lo + 1))
    }

    /// Takes side `i`'s output: SAAL requests (or SSCOP PDUs) into the link, events into
    /// its owner.
    fn drain(&mut self, i: usize) {
        loop {
            let r = match &mut self.sides[i].u {
                Ent::Uni(u) => u.poll_saal(),
                Ent::Sig(s) => s.poll_transmit().map(SaalRequest::Data),
            };
            let Some(r) = r else { break };
            let sscop = matches!(self.sides[i].u, Ent::Sig(_));
            match r {
                SaalRequest::Establish => {
                    if self.saal.establishing[i].is_none() {
                        let d = self.ms(5, 200);
                        self.saal.establishing[i] = Some(self.now + d);
                    }
                }
                SaalRequest::Data(b) => {
                    // Over SSCOP the link itself breaks: PDUs sent meanwhile are lost.
                    let down = if sscop {
                        self.now < self.saal.broken_until
                    } else {
                        !self.saal.up
                    };
                    if down {
                        continue;
                    }
                    if !sscop
                        && let (Some(f), Some(m)) = (self.drop_if, crate::msg::parse(&b))
                        && f(i, &m)
                    {
                        continue;
                    }
                    if self.loss > 0 && self.below(1000) < u64::from(self.loss) {
                        continue;
                    }
                    let d = self.ms(1, 50);
                    let q = &mut self.saal.q[1 - i];
                    let at = q
                        .back()
                        .map_or(self.now + d, |(t, _)| (*t).max(self.now + d));
                    q.push_back((at, b));
                }
                SaalRequest::Release | SaalRequest::UnitData(_) => {}
            }
        }
        while let Some(e) = self.sides[i].u.poll_event() {
            self.owner(i, e);
        }
    }

    /// The owner of side `i` reacts to an event.
    fn owner(&mut self, i: usize, e: CallEvent) {
        match e {
            CallEvent::Setup { call, .. } => {
                self.sides[i].calls.insert(
                    call,
                    Rec {
                        live: true,
                        cause: None,
                    },
                );
                let d1 = self.ms(0, 3000);
                let d2 = d1 + self.ms(0, 3000);
                let r = self.below(10);
                let side = &mut self.sides[i];
                match r {
                    0 => side.todo.push((self.now + d1, call, Act::Release)),
                    1..=4 => {
                        side.todo.push((self.now + d1, call, Act::Proceed));
                        side.todo.push((self.now + d2, call, Act::Connect));
                    }
                    _ => side.todo.push((self.now + d1, call, Act::Connect)),
                }
            }
            CallEvent::Connected { call, .. } if self.calls_on && self.below(3) == 0 => {
                let d = self.ms(100, 20_000);
                self.sides[i].todo.push((self.now + d, call, Act::Release));
            }
            CallEvent::Released { call, cause, .. } => {
                let r = self.sides[i].calls.get_mut(&call);
                let r = r.unwrap_or_else(|| panic!("side {i}: Released for unknown {call}"));
                assert!(r.live, "side {i}: {call} released twice");
                r.live = false;
                r.cause = Some(cause);
            }
            _ => {}
        }
    }

    fn new_call(&mut self) {
        let i = if self.below(3) == 0 { NET } else { USER };
        let conn = (i == NET).then(|| {
            self.next_vci = self.next_vci.wrapping_add(1).max(32);
            ConnId {
                vpci: 0,
                vci: self.next_vci,
            }
        });
        if let Ok(call) = self.sides[i].u.setup(self.now, &params(conn)) {
            self.sides[i].calls.insert(
                call,
                Rec {
                    live: true,
                    cause: None,
                },
            );
        }
        self.drain(i);
    }

    fn act(&mut self, i: usize, call: CallId, a: Act) {
        let now = self.now;
        let u = &mut self.sides[i].u;
        // Commands may be refused (the call moved on meanwhile): that is fine.
        let _ = match a {
            Act::Proceed if i == NET => {
                self.next_vci = self.next_vci.wrapping_add(1).max(32);
                let k = ConnId {
                    vpci: 0,
                    vci: self.next_vci,
                };
                u.proceed(now, call, Some(k))
            }
            Act::Proceed => u.proceed(now, call, None),
            Act::Connect if i == NET && u.uni().conn_id(call).is_none() => {
                self.next_vci = self.next_vci.wrapping_add(1).max(32);
                let k = ConnId {
                    vpci: 0,
                    vci: self.next_vci,
                };
                u.connect(now, call, Some(k))
            }
            Act::Connect => u.connect(now, call, None),
            Act::Release => u.release(now, call, normal()),
        };
        self.drain(i);
    }

    /// The simulated SAAL answers side `i`'s establish request (only over the simulated
    /// SAAL: `Signalling`'s own SSCOP does this itself).
    fn establish(&mut self, i: usize, now: Instant) {
        let ev = |s: &mut Side, e: SaalEvent| {
            if let Ent::Uni(u) = &mut s.u {
                u.handle_saal(now, e);
            }
        };
        if now < self.saal.broken_until {
            ev(&mut self.sides[i], SaalEvent::ReleaseIndication);
        } else if self.saal.up {
            ev(&mut self.sides[i], SaalEvent::EstablishConfirm);
        } else {
            self.saal.up = true;
            ev(&mut self.sides[i], SaalEvent::EstablishConfirm);
            ev(&mut self.sides[1 - i], SaalEvent::EstablishIndication);
            self.saal.establishing[1 - i] = None;
            self.drain(1 - i);
        }
        self.drain(i);
    }

    /// The next instant anything happens, capped at `end`.
    fn next_at(&self, end: Instant) -> Instant {
        let mut t = end;
        for s in &self.sides {
            if let Some(a) = s.u.poll_timeout() {
                t = t.min(a);
            }
            for (a, _, _) in &s.todo {
                t = t.min(*a);
            }
        }
        for q in &self.saal.q {
            if let Some((a, _)) = q.front() {
                t = t.min(*a);
            }
        }
        for a in self.saal.establishing.iter().flatten() {
            t = t.min(*a);
        }
        t
    }

    /// Runs until `end`, with new calls, breaks and restarts at random when enabled.
    pub(crate) fn run(&mut self, end: Instant) {
        let mut next_call = self.now;
        let mut next_break = self.now + Duration::from_secs(20);
        let mut spins = 0u32;
        while self.now < end {
            let mut at = self.next_at(end);
            if at <= self.now {
                spins += 1;
                assert!(
                    spins < 100_000,
                    "stuck at {:?}: timeouts {:?} {:?}",
                    self.now,
                    self.sides[0].u.poll_timeout(),
                    self.sides[1].u.poll_timeout()
                );
            } else {
                spins = 0;
            }
            if self.calls_on {
                at = at.min(next_call);
            }
            if self.breaks {
                at = at.min(next_break);
            }
            self.now = self.now.max(at);
            let now = self.now;
            if self.calls_on && now >= next_call {
                self.new_call();
                if self.below(200) == 0 {
                    let i = self.below(2) as usize;
                    let what = if self.below(2) == 0 {
                        Restart::All
                    } else {
                        Restart::Vc { vpci: 0, vci: 33 }
                    };
                    let _ = self.sides[i].u.restart(now, what);
                    self.drain(i);
                }
                next_call = now + self.ms(10, 2000);
            }
            if self.breaks && now >= next_break {
                let d = self.ms(100, 25_000);
                self.saal.broken_until = now + d;
                if self.saal.up {
                    self.saal.up = false;
                    self.saal.q = [VecDeque::new(), VecDeque::new()];
                    for i in 0..2 {
                        if let Ent::Uni(u) = &mut self.sides[i].u {
                            u.handle_saal(now, SaalEvent::ReleaseIndication);
                        }
                        self.drain(i);
                    }
                }
                next_break = now + self.ms(5_000, 60_000);
            }
            for i in 0..2 {
                if self.saal.establishing[i].is_some_and(|a| a <= now) {
                    self.saal.establishing[i] = None;
                    self.establish(i, now);
                }
            }
            for i in 0..2 {
                while self.saal.q[i].front().is_some_and(|(a, _)| *a <= now) {
                    let (_, b) = self.saal.q[i].pop_front().expect("front checked");
                    self.delivered += 1;
                    match &mut self.sides[i].u {
                        Ent::Uni(u) => u.handle_saal(now, SaalEvent::Data(b)),
                        Ent::Sig(s) => s.handle_pdu(now, &b),
                    }
                    self.drain(i);
                }
            }
            for i in 0..2 {
                let due: Vec<(Instant, CallId, Act)> = {
                    let todo = &mut self.sides[i].todo;
                    let (due, keep) = todo.drain(..).partition(|(a, _, _)| *a <= now);
                    *todo = keep;
                    due
                };
                for (_, call, a) in due {
                    self.act(i, call, a);
                }
                if self.sides[i].u.poll_timeout().is_some_and(|a| a <= now) {
                    self.sides[i].u.handle_timeout(now);
                    self.drain(i);
                }
            }
        }
    }

    /// The quiet phase: no loss, no breaks, no new calls; each owner audits its active
    /// calls once the SAAL is up, and everything pending plays out.
    pub(crate) fn settle(&mut self) {
        self.loss = 0;
        self.breaks = false;
        self.calls_on = false;
        self.drop_if = None;
        self.saal.broken_until = self.now;
        let t = self.now + Duration::from_secs(400);
        self.run(t);
        for i in 0..2 {
            let active: Vec<CallId> = self.sides[i]
                .u
                .uni()
                .calls()
                .filter(|(_, s)| *s == CallState::Active)
                .map(|(c, _)| c)
                .collect();
            for c in active {
                let _ = self.sides[i].u.status_enquiry(self.now, c);
                self.drain(i);
            }
        }
        let t = self.now + Duration::from_secs(400);
        self.run(t);
    }

    /// Every call ends connected at both ends or released at both ends with a cause.
    pub(crate) fn check_consistent(&self) -> Result<(), String> {
        for i in 0..2 {
            let me = &self.sides[i];
            let peer = &self.sides[1 - i];
            for (id, c) in me.u.uni().calls() {
                if c != CallState::Active {
                    return Err(format!("side {i}: {id} still in state {c:?}"));
                }
                let other = CallId {
                    origin: match id.origin {
                        Origin::Local => Origin::Remote,
                        Origin::Remote => Origin::Local,
                    },
                    cref: id.cref,
                };
                if peer.u.uni().call_state(other) != CallState::Active {
                    return Err(format!(
                        "side {i}: {id} active, the peer's is {:?}",
                        peer.u.uni().call_state(other)
                    ));
                }
            }
            for (id, r) in &me.calls {
                if r.live != me.u.uni().calls().any(|(c, _)| c == *id) {
                    return Err(format!("side {i}: {id} owner and entity disagree"));
                }
                if !r.live && r.cause.is_none() {
                    return Err(format!("side {i}: {id} ended without a cause"));
                }
            }
        }
        Ok(())
    }

    /// Releases every call from the user side and lets it play out; then no call may be
    /// left anywhere.
    pub(crate) fn release_all(&mut self) -> Result<(), String> {
        let active: Vec<CallId> = self.sides[USER].u.uni().calls().map(|(c, _)| c).collect();
        for c in active {
            let _ = self.sides[USER].u.release(self.now, c, normal());
            self.drain(USER);
        }
        let t = self.now + Duration::from_secs(400);
        self.run(t);
        for i in 0..2 {
            let n = self.sides[i].u.uni().call_count();
            if n != 0 {
                let left: Vec<_> = self.sides[i].u.uni().calls().collect();
                return Err(format!("side {i}: {n} call references left: {left:?}"));
            }
        }
        Ok(())
    }

    fn live_calls(&self) -> usize {
        self.sides.iter().map(|s| s.u.uni().call_count()).sum()
    }
}

fn campaign(seed: u64) -> Sim {
    campaign_with(seed, false)
}

fn campaign_with(seed: u64, sscop: bool) -> Sim {
    let mut s = Sim::with(seed, sscop);
    s.loss = [0, 20, 50, 100][(seed % 4) as usize];
    s.breaks = !seed.is_multiple_of(3);
    s.calls_on = true;
    let t = s.now + Duration::from_secs(600);
    s.run(t);
    s
}

#[test]
fn pairs_over_a_lossy_breaking_saal_stay_consistent() {
    let mut total = 0;
    for seed in 0..24 {
        let mut s = campaign(seed);
        total += s.sides[USER].calls.len();
        s.settle();
        if let Err(e) = s.check_consistent() {
            panic!("seed {seed}: {e}");
        }
        if let Err(e) = s.release_all() {
            panic!("seed {seed}: {e}");
        }
        s.check_consistent().unwrap();
        assert_eq!(s.live_calls(), 0);
    }
    assert!(total > 1000, "the campaign made calls: {total}");
}

#[test]
fn pair_without_faults_connects_calls() {
    let mut s = Sim::new(99);
    s.calls_on = true;
    let t = s.now + Duration::from_secs(120);
    s.run(t);
    let active = s.sides[USER]
        .u
        .uni()
        .calls()
        .filter(|(_, st)| *st == CallState::Active)
        .count();
    assert!(active > 5, "calls got through: {active}");
    s.settle();
    s.check_consistent().unwrap();
    s.release_all().unwrap();
}

#[test]
fn signalling_pair_over_sscop_connects_calls() {
    let mut s = Sim::with(5, true);
    s.calls_on = true;
    let t = s.now + Duration::from_secs(120);
    s.run(t);
    assert!(
        s.sides.iter().all(|x| x.u.uni().link_up()),
        "SSCOP established"
    );
    let active = s.sides[USER]
        .u
        .uni()
        .calls()
        .filter(|(_, st)| *st == CallState::Active)
        .count();
    assert!(active > 5, "calls got through: {active}");
    s.settle();
    s.check_consistent().unwrap();
    s.release_all().unwrap();
}

#[test]
fn signalling_pairs_over_a_lossy_breaking_link_stay_consistent() {
    let mut total = 0;
    for seed in 0..8 {
        let mut s = campaign_with(seed, true);
        total += s.sides[USER].calls.len();
        s.settle();
        if let Err(e) = s.check_consistent() {
            panic!("seed {seed}: {e}");
        }
        if let Err(e) = s.release_all() {
            panic!("seed {seed}: {e}");
        }
    }
    assert!(total > 300, "the campaign made calls: {total}");
}

/// One active call whose network-side RELEASEs are both lost: T308 expires twice.
fn t308_twice_scenario() -> Sim {
    let mut s = Sim::new(7);
    let t = s.now + Duration::from_secs(1);
    s.run(t);
    assert!(s.saal.up);
    let call = s.sides[USER].u.setup(s.now, &params(None)).unwrap();
    s.sides[USER].calls.insert(
        call,
        Rec {
            live: true,
            cause: None,
        },
    );
    s.drain(USER);
    let t = s.now + Duration::from_secs(10);
    s.run(t);
    let net_call = CallId {
        origin: Origin::Remote,
        cref: call.cref,
    };
    assert_eq!(s.sides[NET].u.uni().call_state(net_call), CallState::Active);
    assert_eq!(s.sides[USER].u.uni().call_state(call), CallState::Active);
    s.drop_if = Some(|i, m| i == NET && m.mt == crate::msg::Mt::Release);
    let _ = s.sides[NET].u.release(s.now, net_call, normal());
    s.drain(NET);
    let t = s.now + Duration::from_secs(70);
    s.run(t);
    s
}

#[test]
fn t308_twice_recovers_through_restart() {
    let mut s = t308_twice_scenario();
    s.settle();
    s.check_consistent().unwrap();
    assert_eq!(s.live_calls(), 0, "the restart cleared the user's call");
}

#[cfg(feature = "mutants")]
#[test]
fn mutant_no_release_complete_after_t308_is_caught() {
    crate::mutants::set_no_release_complete_after_t308(true);
    let mut s = t308_twice_scenario();
    s.settle();
    let caught = s.check_consistent().is_err() || s.release_all().is_err();
    crate::mutants::set_no_release_complete_after_t308(false);
    assert!(caught, "the pair harness must catch the planted bug");
    // And the random campaign catches it too, on some seed.
    crate::mutants::set_no_release_complete_after_t308(true);
    let mut hits = 0;
    for seed in 0..24 {
        let mut s = campaign(seed);
        s.settle();
        if s.check_consistent().is_err() || s.release_all().is_err() {
            hits += 1;
        }
    }
    crate::mutants::set_no_release_complete_after_t308(false);
    std::println!("mutant caught on {hits} of 24 seeds");
    assert!(hits > 0, "the campaign catches it on some seed");
}

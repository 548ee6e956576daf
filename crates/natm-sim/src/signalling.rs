//! The signalling campaign (issue 23): two UNI signalling entities, natm-sig's
//! [`Signalling`] (Q.2931 call control over SSCF-UNI and SSCOP), a user side and a network
//! side, joined by an impaired link in virtual time, under a seeded workload of calls,
//! releases, restarts, idle periods and link outages, with the invariants below checked
//! as the run goes and at its end.
//!
//! What it is: glue and oracles only. The entities are the production cores, driven
//! through their sans-IO face (`handle_pdu` / `poll_transmit` / `poll_event` /
//! `poll_timeout` / `handle_timeout` and the call commands), unchanged. Each SDU they send
//! on VC 0.5 is segmented into real cells by natm-wire's AAL5 [`Segmenter`]; each
//! direction of the link is a natm-netem [`Netem`] (loss, burst loss, payload bit
//! errors, delay, jitter that keeps the VC's order) with the link's down periods and
//! whole-frame duplication added here (natm-netem has no duplication); the far end
//! reassembles with natm-adapter's [`Reassembler`], so a damaged frame is caught by the
//! AAL5 CRC, never handed up. Header bit errors are left out: a link's HEC receiver is the
//! host core's (the default scenario drives it), and to a signalling endpoint a header
//! error is either corrected (nothing) or a lost cell, which the loss windows give.
//!
//! The simulator plays the owners: the user side's application places calls (random
//! AESAs and QoS) and hangs up; the network side's switch answers (CALL PROCEEDING then
//! CONNECT, CONNECT at once, a refusal with a cause, or no answer at all), hangs up, and
//! both restart a VC or the interface now and then.
//!
//! What it is not: no cells of the calls' own VCs, no switch fabric, no second copy of any
//! protocol; the oracles read the cores' public state (SSCOP's state variables and
//! counters, call control's calls and counters) and the PDUs on the wire.
//!
//! # A run
//!
//! The plan is drawn from the seed ([`SigPlan::draw`]): the load phase's length (40–150 s
//! of virtual time), Q.2931 timers (ngatm's defaults in a third of the seeds, a fast set
//! with T308 between 0.3 and 2 s in the rest, so that T308 can run out twice while SSCOP
//! still holds the link), each direction's impairments over windows of the phase, link
//! outages (short, shorter than SSCOP's Timer_NO_RESPONSE, and longer than NO_RESPONSE +
//! T309), idle periods with no calls (SSCOP's keep-alive and idle phases), the call rate
//! and holding times. At the end of the load phase every fault is cleared and no new call
//! is placed; the run then waits until signalling has *settled* (both SSCOPs in Data
//! Transfer Ready with nothing unacknowledged, no Q.2931 timer running, no cell in
//! flight, no answer pending) — at most [`SETTLE_BOUND`] — checks the end states, releases
//! every call still up, settles again and checks that nothing is left.
//!
//! # Invariants
//!
//! 1. **SSCOP delivers in order without loss or duplication while established.** On every
//!    PDU an entity takes while its SSCOP stays in Data Transfer Ready and its receiver is
//!    not reset (a BGN, RS, ER or acknowledgement it acts on sets VR(R) and VR(H) to 0; a
//!    stale or duplicated one it ignores does not, and is no reset): VR(R) advances by
//!    exactly the SDs SSCOP delivered (its `delivered` counter) and call control received
//!    exactly that many messages (its `rx` counter): none lost between the layers, none
//!    twice; and every N(S) VR(R) passed is one the entity took an SD for in this
//!    established period: nothing skipped. At the end, with the link healthy, each side
//!    has nothing unacknowledged. (The oracle cannot see the bytes handed up, only counts
//!    and sequence numbers: `Signalling` offers no tap between its layers.)
//! 2. **SSCOP answers USTAT** (timely recovery). When an entity in Data Transfer Ready takes
//!    a USTAT listing a gap, each listed N(S) still outstanding (at or above VT(A), below
//!    VT(S)) must be sent again within [`USTAT_BOUND`] (1 ms). Q.2110 §7.8 puts the listed
//!    SDs on the retransmission queue at once, ahead of new data and needing no credit or
//!    timer, so a correct transmitter resends them in the step that took the USTAT; without
//!    USTAT the same gap waits for the STAT that answers the next POLL, which is sent when
//!    Timer_POLL (750 ms) runs out or after MaxPD (25) SDs: 1 ms is far below the first and
//!    a signalling load never sends 25 SDs in 1 ms.
//! 3. **Call clearing bounded by T308.** A call that enters U11/N11 (RELEASE sent) is gone
//!    within `n308 × T308` (+1 ms): Q.2931 §5.4.3.4/§5.4.4.3 resend RELEASE when T308
//!    first runs out and release locally when it runs out again; the SAAL's loss, a
//!    RELEASE COMPLETE or a RELEASE end it sooner.
//! 4. **No call reference leaks.** After every step each entity holds exactly the calls it
//!    has reported and not yet reported released (`call_count`); after the final release
//!    both hold none (`call_count`, `call_refs_allocated`).
//! 5. **Every call ends once, and alike at both ends.** Each call gets exactly one
//!    `Released` (with its cause) at each end that knew it; after the settle, every call
//!    is active at both ends or gone at both ends.
//! 6. **Signalling settles** within [`SETTLE_BOUND`] after the faults clear (liveness):
//!    both SAALs up with nothing unacknowledged, or both released with no call left
//!    (natm-sig brings a released SAAL up again only when it has something to send).
//! 7. **The SAAL is not re-established without cause**: on a healthy link (up, no
//!    impairment window open) more than [`STORM_UPS`] re-establishments reported by one
//!    side within [`STORM_WINDOW`] are a loop between the layers (a resynchronisation
//!    answered by a resynchronisation). Under impairments re-establishments have causes
//!    (with Q.2110, a duplicated old SD draws an out-of-window USTAT the peer recovers
//!    from) and are not counted.
//! 8. **Virtual time advances**: [`SAME_INSTANT_STEPS`] steps at one instant, or the
//!    entities still exchanging output after [`PUMP_ROUNDS`] rounds, is a livelock.
//! 9. **Every QoS natm accepts has its IEs**: the campaign's SETUPs (UBR, CBR, VBR) encode.
//! 10. **No panic**: a panic in a core is caught and reported as this invariant's breach.
//!
//! Every breach is a [`Violation`] with the virtual time and what was seen; the swarm adds
//! the seed and `natm sim run --signalling --seed S` replays it. The same seed gives the
//! same [`SigReport::digest`] and a byte-identical trace.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write;

use natm_adapter::{Reassembler, Reassembly};
use natm_core::{Aesa, Duration, Instant, Qos, VcId};
use natm_netem::{BurstLoss, Impairments, Jitter, Netem, Probability};
use natm_sig::{
    CallEvent, CallId, CallState, Cause, CauseValue, CommandError, ConnId, Location, Origin,
    PartyNumber, Restart, Role, SetupParams, Signalling,
};
use natm_sscop::State as SscopState;
use natm_wire::aal5::Segmenter;
use natm_wire::cell::CELL_LEN;
use natm_wire::sscop::{Repr, SEQ_MAX};

use crate::seed::{FNV_OFFSET, Rng, fnv1a, sub_seed};
use crate::swarm::{SeedOutcome, SwarmReport};
use crate::world::Violation;

/// How long a USTAT may wait for the retransmissions it asks for (invariant 2).
pub const USTAT_BOUND: Duration = Duration::from_millis(1);

/// The longest wait for signalling to settle once the faults are cleared (invariant 6):
/// above T316 twice (2 × 120 s, a restart that is never acknowledged) and T309 with the
/// SSCOP establishment retries, with room.
pub const SETTLE_BOUND: Duration = Duration::from_secs(400);

/// Steps at one virtual instant before the run is declared stuck.
pub const SAME_INSTANT_STEPS: u64 = 100_000;

/// Rounds of moving output and events in one step before the run is declared stuck.
pub const PUMP_ROUNDS: u32 = 100_000;

/// The window and count of the re-establishment storm check (invariant 7): a correct
/// pair re-establishes the SAAL only after SSCOP gave up (Timer_NO_RESPONSE, 7 s, or MaxCC
/// BGNs 1 s apart) or after a resynchronisation one side asked for; more than
/// [`STORM_UPS`] in [`STORM_WINDOW`] is a loop between the layers.
pub const STORM_WINDOW: Duration = Duration::from_secs(1);

/// See [`STORM_WINDOW`].
pub const STORM_UPS: usize = 20;

/// Half the SSCOP sequence space.
const HALF: u32 = 1 << 23;

fn sub(a: u32, b: u32) -> u32 {
    a.wrapping_sub(b) & SEQ_MAX
}

fn ns(x: u64) -> Duration {
    Duration::from_nanos(x)
}

fn secs(x: f64) -> Duration {
    Duration::from_nanos((x * 1e9) as u64)
}

fn prob(p: f64) -> Probability {
    Probability::new(p.clamp(0.0, 1.0)).unwrap_or(Probability::ZERO)
}

/// The replay command of a signalling seed.
pub fn replay(seed: u64) -> String {
    format!("natm sim run --signalling --seed {seed}")
}

/// An impairment window on one direction of the link.
#[derive(Clone, Debug, PartialEq)]
pub struct ImpairWindow {
    /// From (since the start).
    pub at: Duration,
    /// For.
    pub length: Duration,
    /// What natm-netem does meanwhile.
    pub impairments: Impairments,
    /// Probability that a frame is sent twice (the glue's, natm-netem has none).
    pub duplicate: f64,
}

/// One run's plan, a function of the seed.
#[derive(Clone, Debug, PartialEq)]
pub struct SigPlan {
    /// The load phase.
    pub load: Duration,
    /// The user side's call control configuration.
    pub user: natm_sig::Config,
    /// The network side's.
    pub network: natm_sig::Config,
    /// Both SSCOPs' configuration.
    pub sscop: natm_sscop::Config,
    /// Impairment windows per direction (0: user → network, 1: network → user).
    pub impair: [Vec<ImpairWindow>; 2],
    /// Link outages (both directions), (from, for).
    pub downs: Vec<(Duration, Duration)>,
    /// Periods with no new call, (from, for).
    pub idle: Vec<(Duration, Duration)>,
    /// Mean gap between calls, seconds.
    pub call_gap: f64,
    /// Holding times, seconds (lo, hi).
    pub hold: (f64, f64),
    /// Per hang-up, the probability that the network side releases (else the user).
    pub network_hangs_up: f64,
    /// Per call event, the probability of a RESTART.
    pub restart: f64,
}

impl SigPlan {
    /// The plan of `seed`.
    pub fn draw(seed: u64) -> SigPlan {
        let mut rng = Rng::for_component(seed, "signalling plan");
        let load = secs(rng.real(40.0, 150.0));
        let total = load.as_nanos();
        let mut user = natm_sig::Config::new(Role::User);
        let mut network = natm_sig::Config::new(Role::Network);
        if rng.chance(0.67) {
            let t308 = secs(rng.real(0.3, 2.0));
            for c in [&mut user, &mut network] {
                c.t303 = secs(1.0);
                c.t308 = t308;
                c.t310 = secs(3.0);
                c.t313 = secs(1.0);
                c.t316 = secs(6.0);
                c.t317 = secs(4.0);
                c.t322 = secs(1.0);
            }
        }
        user.first_call_ref = rng.range(1, 0x7F_0000) as u32;
        network.first_call_ref = rng.range(1, 0x7F_0000) as u32;
        let window = |rng: &mut Rng, frac: f64| -> (Duration, Duration) {
            let at = rng.range(0, total * 8 / 10);
            let max_len = ((total as f64 * frac) as u64).clamp(1, total - at);
            (ns(at), ns(rng.range(max_len / 10, max_len).max(1)))
        };
        let mut impair = [Vec::new(), Vec::new()];
        for (d, list) in impair.iter_mut().enumerate() {
            for _ in 0..rng.range(0, 3) {
                let mut imp = Impairments {
                    seed: sub_seed(seed, &format!("signalling link {d} {}", list.len())),
                    ..Impairments::default()
                };
                if rng.chance(0.6) {
                    imp.loss = prob(rng.log_uniform(1e-3, 5e-2));
                }
                if rng.chance(0.3) {
                    imp.burst =
                        BurstLoss::mean(rng.log_uniform(1e-3, 3e-2), rng.real(1.5, 8.0)).ok();
                }
                if rng.chance(0.5) {
                    imp.ber = prob(rng.log_uniform(1e-6, 1e-4));
                }
                if rng.chance(0.5) {
                    imp.delay = ns(rng.range(10_000, 20_000_000));
                    if rng.chance(0.6) {
                        imp.jitter = Jitter::Uniform(ns(rng.range(1_000, 5_000_000)));
                    }
                }
                let duplicate = if rng.chance(0.3) {
                    rng.log_uniform(1e-3, 5e-2)
                } else {
                    0.0
                };
                let (at, length) = if rng.chance(0.4) {
                    (Duration::ZERO, load)
                } else {
                    window(&mut rng, 0.5)
                };
                list.push(ImpairWindow {
                    at,
                    length,
                    impairments: imp,
                    duplicate,
                });
            }
        }
        let mut downs = Vec::new();
        if rng.chance(0.6) {
            for _ in 0..rng.range(1, 3) {
                let at = ns(rng.range(0, total * 8 / 10));
                let len = match rng.below(3) {
                    0 => rng.real(0.05, 2.0),
                    1 => rng.real(2.0, 6.5),
                    _ => rng.real(8.0, 25.0),
                };
                downs.push((at, secs(len)));
            }
        }
        let mut idle = Vec::new();
        for _ in 0..rng.range(0, 2) {
            idle.push((ns(rng.range(0, total * 8 / 10)), secs(rng.real(5.0, 40.0))));
        }
        let call_gap = rng.log_uniform(0.1, 4.0);
        let lo = rng.real(0.05, 3.0);
        let hold = (lo, lo + rng.real(0.5, 20.0));
        SigPlan {
            load,
            user,
            network,
            sscop: natm_sscop::Config::default(),
            impair,
            downs,
            idle,
            call_gap,
            hold,
            network_hangs_up: rng.real(0.1, 0.9),
            restart: if rng.chance(0.5) {
                rng.real(0.005, 0.05)
            } else {
                0.0
            },
        }
    }
}

/// What a signalling run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SigReport {
    /// The seed.
    pub seed: u64,
    /// The digest of every event (FNV-1a of the trace lines).
    pub digest: u64,
    /// Virtual time at the end.
    pub end: Instant,
    /// Steps run.
    pub steps: u64,
    /// Calls the user side placed.
    pub calls: u64,
    /// Calls that became active at the user side.
    pub connected: u64,
    /// Calls the network side refused.
    pub refused: u64,
    /// RESTARTs sent (both sides).
    pub restarts: u64,
    /// Link outages.
    pub outages: u64,
    /// SDUs handed to the link (both directions, duplicates included).
    pub sdus: u64,
    /// Cells offered to the link.
    pub cells: u64,
    /// Frames dropped by the receivers.
    pub frames_dropped: u64,
    /// SDs retransmitted (both SSCOPs).
    pub sd_retransmitted: u64,
    /// USTATs sent (both SSCOPs).
    pub ustats: u64,
    /// SAAL establishments and re-establishments seen by call control (LinkUp events).
    pub link_ups: u64,
    /// USTAT-requested retransmissions the oracle watched.
    pub ustat_watched: u64,
    /// Wall-clock time of the run.
    pub wall: std::time::Duration,
}

impl SigReport {
    /// The report as `natm sim run --signalling` prints it.
    pub fn table(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(
            t,
            "ok: every signalling invariant held; {} calls placed, {} connected, {} refused, {} restarts, {} outages",
            self.calls, self.connected, self.refused, self.restarts, self.outages
        );
        let _ = writeln!(
            t,
            "virtual time {:.3} s, {} steps; {} SDUs in {} cells, {} frames dropped",
            self.end.as_nanos() as f64 / 1e9,
            self.steps,
            self.sdus,
            self.cells,
            self.frames_dropped
        );
        let _ = writeln!(
            t,
            "SSCOP: {} SDs retransmitted, {} USTATs ({} retransmissions watched), {} SAAL establishments",
            self.sd_retransmitted, self.ustats, self.ustat_watched, self.link_ups
        );
        let _ = writeln!(t, "digest {:016x}", self.digest);
        let _ = writeln!(t, "wall {:.3} s", self.wall.as_secs_f64());
        t
    }

    /// The report as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "seed": self.seed,
            "ok": true,
            "digest": format!("{:016x}", self.digest),
            "virtual_ns": self.end.as_nanos(),
            "steps": self.steps,
            "calls": self.calls,
            "connected": self.connected,
            "refused": self.refused,
            "restarts": self.restarts,
            "outages": self.outages,
            "sdus": self.sdus,
            "cells": self.cells,
            "frames_dropped": self.frames_dropped,
            "sd_retransmitted": self.sd_retransmitted,
            "ustats": self.ustats,
            "ustat_watched": self.ustat_watched,
            "link_ups": self.link_ups,
            "wall_s": self.wall.as_secs_f64(),
        })
    }
}

/// What the workload does at an instant.
#[derive(Clone, Debug)]
enum Act {
    /// The user side places a call.
    Call,
    /// The network side answers an incoming SETUP.
    Answer(CallId),
    /// The network side connects a proceeding call.
    Connect(CallId),
    /// One side hangs up the call of this (user side) call reference.
    HangUp {
        network: bool,
        cref: u32,
    },
    /// A side restarts a VC of one of its calls or the whole interface.
    Restart {
        network: bool,
        all: bool,
    },
    /// Link outage starts / ends.
    Down,
    Up,
    /// An impairment window on a direction starts / ends.
    Impair(usize, usize),
    Unimpair(usize),
    /// The load phase ends: faults cleared, no new call.
    EndLoad,
}

/// The SSCOP PDU kinds the oracle tells apart.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Seen {
    Sd(u32),
    Ustat(u32, u32),
    /// BGN, BGAK, BGREJ, END, ENDAK, RS, RSAK, ER, ERAK: the connection (re)starts or ends.
    Reset,
    Other,
}

fn seen(sdu: &[u8]) -> Seen {
    match Repr::parse(sdu) {
        Ok(Repr::Sd { n_s, .. }) => Seen::Sd(n_s),
        Ok(Repr::Ustat { list, .. }) => Seen::Ustat(list[0], list[1]),
        Ok(
            Repr::Bgn { .. }
            | Repr::Bgak { .. }
            | Repr::Bgrej { .. }
            | Repr::End { .. }
            | Repr::Endak
            | Repr::Rs { .. }
            | Repr::Rsak { .. }
            | Repr::Er { .. }
            | Repr::Erak { .. },
        ) => Seen::Reset,
        _ => Seen::Other,
    }
}

/// What the oracles read of an entity before and after it takes an input.
#[derive(Clone, Copy, Debug)]
struct Snap {
    state: SscopState,
    vt_s: u32,
    vt_a: u32,
    vr_r: u32,
    vr_h: u32,
    delivered: u64,
    rx: u64,
}

impl Snap {
    fn of(s: &Signalling) -> Snap {
        let sscop = s.sscf().sscop();
        let v = sscop.variables();
        Snap {
            state: sscop.state(),
            vt_s: v[0],
            vt_a: v[1],
            vr_r: v[3],
            vr_h: v[4],
            delivered: sscop.counters().delivered,
            rx: s.uni().counters().rx,
        }
    }
}

/// One signalling entity with its receiver and the oracles' records of it.
struct End {
    name: &'static str,
    sig: Signalling,
    reasm: Reassembler,
    /// Calls reported (set up or `Setup`) and not yet `Released`.
    open: BTreeSet<CallId>,
    /// N(S) of SDs taken in this established period, at or above VR(R).
    rx_seen: BTreeSet<u32>,
    /// N(S)s a USTAT asked this side to send again, with when.
    asked: Vec<(u32, Instant)>,
    /// Calls in U11/N11, since when.
    releasing: BTreeMap<CallId, Instant>,
    /// n308 × T308 + 1 ms.
    t308_bound: Duration,
    /// When call control last reported the SAAL up, within [`STORM_WINDOW`].
    link_ups: std::collections::VecDeque<Instant>,
}

/// One direction of the link.
struct Dir {
    netem: Netem,
    duplicate: f64,
    rng: Rng,
}

/// Per user-side call reference: what the workload knows of a call.
#[derive(Clone, Debug, Default)]
struct CallRec {
    /// The network side's id of it, once its SETUP arrived.
    net: Option<CallId>,
}

struct Sim {
    plan: SigPlan,
    now: Instant,
    steps: u64,
    digest: u64,
    trace: Option<Box<dyn Write>>,
    ends: [End; 2],
    dirs: [Dir; 2],
    up: bool,
    /// Impairment windows open per direction.
    active_windows: [u32; 2],
    acts: BTreeMap<(u64, u64), Act>,
    act_seq: u64,
    /// Steps run at `now` so far.
    same_instant: u64,
    rng: Rng,
    loading: bool,
    next_vci: u16,
    calls: BTreeMap<u32, CallRec>,
    report: SigReport,
}

fn cause(value: CauseValue) -> Cause {
    Cause::new(Location::User, value)
}

const VC_05: VcId = VcId {
    vpi: match natm_core::Vpi::uni(0) {
        Ok(v) => v,
        Err(_) => panic!("VPI 0"),
    },
    vci: natm_core::Vci::SIGNALLING,
};

/// QoS the user side asks for, as natm's qos(7) text.
const QOS: [&str; 5] = [
    "ubr",
    "ubr:pcr=100000",
    "cbr:pcr=20000",
    "cbr:pcr=8000",
    "vbr:pcr=30000,scr=10000,mbs=40,cdvt=100",
];

impl Sim {
    fn new(seed: u64, trace: Option<Box<dyn Write>>) -> Sim {
        let plan = SigPlan::draw(seed);
        let t0 = Instant::ZERO;
        let end = |name, cfg: natm_sig::Config| End {
            name,
            t308_bound: ns(cfg.t308.as_nanos() * u64::from(cfg.n308.max(1)) + 1_000_000),
            sig: Signalling::new(t0, cfg, plan.sscop.clone()),
            reasm: Reassembler::new(VC_05, 65_535).expect("0.5 opens"),
            open: BTreeSet::new(),
            rx_seen: BTreeSet::new(),
            asked: Vec::new(),
            releasing: BTreeMap::new(),
            link_ups: std::collections::VecDeque::new(),
        };
        let dir = |label: &str| Dir {
            netem: Netem::new(&natm_netem::Config::default()),
            duplicate: 0.0,
            rng: Rng::for_component(seed, label),
        };
        let mut sim = Sim {
            now: t0,
            steps: 0,
            digest: FNV_OFFSET,
            trace,
            ends: [end("user", plan.user), end("network", plan.network)],
            dirs: [
                dir("signalling duplicate user→network"),
                dir("signalling duplicate network→user"),
            ],
            up: true,
            active_windows: [0, 0],
            acts: BTreeMap::new(),
            act_seq: 0,
            same_instant: 0,
            rng: Rng::for_component(seed, "signalling workload"),
            loading: true,
            next_vci: 32,
            calls: BTreeMap::new(),
            report: SigReport {
                seed,
                ..SigReport::default()
            },
            plan,
        };
        let plan = sim.plan.clone();
        for (d, list) in plan.impair.iter().enumerate() {
            for (i, w) in list.iter().enumerate() {
                sim.schedule(w.at, Act::Impair(d, i));
                sim.schedule(w.at + w.length, Act::Unimpair(d));
            }
        }
        for &(at, len) in &plan.downs {
            sim.schedule(at, Act::Down);
            sim.schedule(at + len, Act::Up);
        }
        let first = secs(sim.rng.real(0.0, plan.call_gap * 2.0) + 0.5);
        sim.schedule(first, Act::Call);
        sim.schedule(plan.load, Act::EndLoad);
        sim
    }

    fn schedule(&mut self, after_start: Duration, a: Act) {
        self.act_seq += 1;
        self.acts.insert((after_start.as_nanos(), self.act_seq), a);
    }

    fn schedule_in(&mut self, delay: Duration, a: Act) {
        let at = ns(self.now.as_nanos() + delay.as_nanos());
        self.schedule(at, a);
    }

    fn note(&mut self, line: std::fmt::Arguments<'_>) {
        let text = format!("{} {} {line}\n", self.now.as_nanos(), self.steps);
        self.digest = fnv1a(self.digest, text.as_bytes());
        if let Some(t) = &mut self.trace {
            let _ = t.write_all(text.as_bytes());
        }
    }

    fn fail(&self, invariant: &'static str, detail: String) -> Violation {
        Violation {
            at: self.now,
            seq: self.steps,
            invariant,
            detail,
        }
    }

    fn next_time(&self) -> Option<Instant> {
        let acts = self
            .acts
            .keys()
            .next()
            .map(|&(t, _)| Instant::from_nanos(t));
        [
            acts,
            self.ends[0].sig.poll_timeout(),
            self.ends[1].sig.poll_timeout(),
            self.dirs[0].netem.poll_timeout(),
            self.dirs[1].netem.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Runs until `until` or until `stop` holds after a step.
    fn run_until(
        &mut self,
        until: Instant,
        stop: impl Fn(&Sim) -> bool,
    ) -> Result<bool, Violation> {
        loop {
            if stop(self) {
                return Ok(true);
            }
            let Some(t) = self.next_time().filter(|&t| t <= until) else {
                self.now = self.now.max(until);
                return Ok(stop(self));
            };
            self.step(t)?;
        }
    }

    fn step(&mut self, t: Instant) -> Result<(), Violation> {
        if t <= self.now {
            self.same_instant += 1;
            if self.same_instant > SAME_INSTANT_STEPS {
                let due: Vec<String> = self
                    .ends
                    .iter()
                    .map(|e| {
                        format!(
                            "{}: SSCOP timer {:?} ({:?}), Q.2931 timer {:?}",
                            e.name,
                            e.sig.sscf().poll_timeout().map(|t| t.as_nanos()),
                            e.sig.sscf().sscop().state(),
                            e.sig.uni().poll_timeout().map(|t| t.as_nanos())
                        )
                    })
                    .collect();
                return Err(self.fail(
                    "virtual time advances",
                    format!(
                        "{SAME_INSTANT_STEPS} steps at one instant: a timeout that is due again as soon as it is handled; {}",
                        due.join("; ")
                    ),
                ));
            }
        } else {
            self.same_instant = 0;
        }
        self.now = self.now.max(t);
        self.steps += 1;
        let now = self.now;
        LAST_STEP.with(|c| c.set((now.as_nanos(), self.steps)));
        self.deadlines()?;
        for d in 0..2 {
            while let Some(tx) = self.dirs[d].netem.poll_transmit(now) {
                if let Some(sdu) = self.cell_in(1 - d, tx.cell) {
                    self.deliver(1 - d, &sdu)?;
                }
            }
        }
        for e in 0..2 {
            if self.ends[e].sig.poll_timeout().is_some_and(|t| t <= now) {
                let before = Snap::of(&self.ends[e].sig);
                self.ends[e].sig.handle_timeout(now);
                self.observe(e, before, Seen::Other)?;
                self.pump()?;
            }
        }
        while let Some((&(t, s), _)) = self.acts.iter().next() {
            if t > now.as_nanos() {
                break;
            }
            let a = self.acts.remove(&(t, s)).expect("first action");
            self.act(a)?;
            self.pump()?;
        }
        self.pump()?;
        self.audit()
    }

    /// One cell arriving at end `e`, into reassembly; a whole good SDU comes back.
    fn cell_in(&mut self, e: usize, cell: [u8; CELL_LEN]) -> Option<Vec<u8>> {
        let end = &mut self.ends[e];
        match end.reasm.push_cell(&cell) {
            Reassembly::Complete(_) => Some(end.reasm.sdu().to_vec()),
            Reassembly::Discarded(_) => {
                self.report.frames_dropped += 1;
                None
            }
            Reassembly::Incomplete => None,
        }
    }

    /// End `e` takes one SDU from the link.
    fn deliver(&mut self, e: usize, sdu: &[u8]) -> Result<(), Violation> {
        let kind = seen(sdu);
        let name = self.ends[e].name;
        match Repr::parse(sdu) {
            Ok(r) => self.note(format_args!("rx {name} {r}")),
            Err(err) => self.note(format_args!("rx {name} {} bytes: {err}", sdu.len())),
        }
        let before = Snap::of(&self.ends[e].sig);
        self.ends[e].sig.handle_pdu(self.now, sdu);
        self.observe(e, before, kind)?;
        self.pump()
    }

    /// Invariants 1 and 2 around one input of end `e`.
    fn observe(&mut self, e: usize, before: Snap, kind: Seen) -> Result<(), Violation> {
        let now = self.now;
        let after = Snap::of(&self.ends[e].sig);
        let end = &mut self.ends[e];
        let dtr = SscopState::DataTransferReady;
        let adv = sub(after.vr_r, before.vr_r);
        let both = before.state == dtr && after.state == dtr;
        // A BGN, RS or ER (or their acknowledgements) that SSCOP acted on sets its
        // variables to 0; one it ignored (a stale or duplicated one) leaves them alone.
        let rx_reset = kind == Seen::Reset
            && after.vr_r == 0
            && after.vr_h == 0
            && (before.vr_r, before.vr_h) != (0, 0);
        let tx_reset = kind == Seen::Reset
            && after.vt_s == 0
            && after.vt_a == 0
            && (before.vt_s, before.vt_a) != (0, 0);
        if !both || tx_reset || sub(after.vt_a, before.vt_a) >= HALF {
            end.asked.clear();
        }
        if !both || rx_reset || adv >= HALF {
            // A new established period (or none): the records start again.
            end.rx_seen.clear();
            return Ok(());
        }
        if let Seen::Sd(n) = kind {
            end.rx_seen.insert(n);
        }
        let delivered = after.delivered.wrapping_sub(before.delivered);
        let rx = after.rx.wrapping_sub(before.rx);
        let name = end.name;
        if delivered != u64::from(adv) || rx != delivered {
            return Err(self.fail(
                "SSCOP delivers in order without loss or duplication",
                format!(
                    "{name}: VR(R) {} → {} ({adv} SDs in sequence) but SSCOP delivered {delivered} \
                     and call control received {rx} messages",
                    before.vr_r, after.vr_r
                ),
            ));
        }
        let mut n = before.vr_r;
        while n != after.vr_r {
            if !end.rx_seen.remove(&n) {
                return Err(self.fail(
                    "SSCOP delivers in order without loss or duplication",
                    format!(
                        "{name}: VR(R) moved {} → {} past N(S) {n}, which never arrived in this \
                         established period (lost)",
                        before.vr_r, after.vr_r
                    ),
                ));
            }
            n = (n + 1) & SEQ_MAX;
        }
        let vr_r = after.vr_r;
        end.rx_seen.retain(|&k| sub(k, vr_r) < HALF);
        if let Seen::Ustat(x, y) = kind {
            let mut n = x;
            let mut guard = 0;
            while n != y && guard < 4096 {
                let outstanding = sub(n, before.vt_a) < HALF
                    && sub(before.vt_s, n) > 0
                    && sub(before.vt_s, n) < HALF;
                if outstanding {
                    end.asked.push((n, now));
                    self.report.ustat_watched += 1;
                }
                n = (n + 1) & SEQ_MAX;
                guard += 1;
            }
        }
        Ok(())
    }

    /// Drain both entities' output and events until neither has more.
    fn pump(&mut self) -> Result<(), Violation> {
        for _ in 0..PUMP_ROUNDS {
            let mut moved = false;
            for e in 0..2 {
                while let Some(sdu) = self.ends[e].sig.poll_transmit() {
                    moved = true;
                    self.transmit(e, &sdu);
                }
                while let Some(ev) = self.ends[e].sig.poll_event() {
                    moved = true;
                    self.event(e, ev)?;
                }
            }
            if !moved {
                return Ok(());
            }
        }
        Err(self.fail(
            "virtual time advances",
            format!("the entities still exchange output after {PUMP_ROUNDS} rounds at one instant"),
        ))
    }

    /// End `e` sends one SDU on 0.5: cells onto its direction of the link.
    fn transmit(&mut self, e: usize, sdu: &[u8]) {
        let kind = seen(sdu);
        if let Seen::Sd(n) = kind {
            self.ends[e].asked.retain(|&(k, _)| k != n);
        }
        let name = self.ends[e].name;
        match Repr::parse(sdu) {
            Ok(r) => self.note(format_args!("tx {name} {r}")),
            Err(err) => self.note(format_args!("tx {name} {} bytes: {err}", sdu.len())),
        }
        let Ok(mut seg) = Segmenter::uni(VC_05, sdu) else {
            return;
        };
        let mut cells = Vec::with_capacity(seg.total_cells());
        let mut c = [0u8; CELL_LEN];
        while seg.next_cell(&mut c) {
            cells.push(c);
        }
        let copies = if self.dirs[e].duplicate > 0.0 {
            let p = self.dirs[e].duplicate;
            1 + usize::from(self.dirs[e].rng.chance(p))
        } else {
            1
        };
        for _ in 0..copies {
            self.report.sdus += 1;
            if self.up {
                self.report.cells += cells.len() as u64;
                self.dirs[e].netem.handle_cells(self.now, &cells);
            }
        }
    }

    /// What the owners do with call control's events.
    fn event(&mut self, e: usize, ev: CallEvent) -> Result<(), Violation> {
        let name = self.ends[e].name;
        self.note(format_args!("event {name} {}", event_text(&ev)));
        match ev {
            CallEvent::Setup { call, .. } => {
                if !self.ends[e].open.insert(call) {
                    return Err(self.fail(
                        "every call ends once",
                        format!("{name}: SETUP reported for {call}, which is still open"),
                    ));
                }
                if e == 1 {
                    if let Some(r) = self.calls.get_mut(&call.cref) {
                        r.net = Some(call);
                    }
                    let delay = secs(self.rng.real(0.0, 0.3));
                    self.schedule_in(delay, Act::Answer(call));
                } else {
                    // The workload's user places calls only; an incoming one is refused.
                    let _ = self.command(e, |s, now| {
                        s.release(now, call, cause(CauseValue::CallRejected))
                    })?;
                }
            }
            CallEvent::Released { call, cause, .. } if !self.ends[e].open.remove(&call) => {
                return Err(self.fail(
                    "every call ends once",
                    format!(
                        "{name}: {call} released (cause {}) but it was not open",
                        cause.value
                    ),
                ));
            }
            CallEvent::Connected { .. } if e == 0 => self.report.connected += 1,
            CallEvent::LinkUp => {
                self.report.link_ups += 1;
                if !self.healthy() {
                    // Loss, damage and duplication cause re-establishments: with Q.2110 a
                    // duplicated old SD draws an out-of-window USTAT, which the peer takes
                    // as a list error and recovers from (ER), and every recovery's burst of
                    // STATUS ENQUIRYs may meet the next duplicate.
                    self.ends[e].link_ups.clear();
                    return Ok(());
                }
                let now = self.now;
                let ups = &mut self.ends[e].link_ups;
                ups.push_back(now);
                while ups
                    .front()
                    .is_some_and(|&t| now.saturating_duration_since(t) > STORM_WINDOW)
                {
                    ups.pop_front();
                }
                let n = ups.len();
                if n > STORM_UPS {
                    return Err(self.fail(
                        "the SAAL is not re-established without cause",
                        format!(
                            "{name}: {} SAAL (re-)establishments within {} ms: a storm of \
                             resynchronisations or establishments",
                            n,
                            STORM_WINDOW.as_nanos() / 1_000_000
                        ),
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Runs a call command at end `e` with the oracles around it.
    fn command<T>(
        &mut self,
        e: usize,
        f: impl FnOnce(&mut Signalling, Instant) -> Result<T, CommandError>,
    ) -> Result<Result<T, CommandError>, Violation> {
        let before = Snap::of(&self.ends[e].sig);
        let r = f(&mut self.ends[e].sig, self.now);
        self.observe(e, before, Seen::Other)?;
        Ok(r)
    }

    fn act(&mut self, a: Act) -> Result<(), Violation> {
        self.note(format_args!("act {a:?}"));
        match a {
            Act::Call => {
                if !self.loading {
                    return Ok(());
                }
                let gap = secs(-self.rng.unit().max(1e-12).ln() * self.plan.call_gap);
                let mut next = ns(self.now.as_nanos() + gap.as_nanos());
                for &(at, len) in &self.plan.idle {
                    if next >= at && next < at + len {
                        next = at + len;
                    }
                }
                self.schedule(next, Act::Call);
                let params = self.setup_params();
                let r = self.command(0, |s, now| s.setup(now, &params))?;
                match r {
                    Ok(call) => {
                        self.report.calls += 1;
                        if !self.ends[0].open.insert(call) {
                            return Err(self.fail(
                                "no call reference leaks",
                                format!("user: setup gave {call}, which is still open"),
                            ));
                        }
                        self.calls.insert(call.cref, CallRec::default());
                        let (lo, hi) = self.plan.hold;
                        let hold = secs(self.rng.real(lo, hi));
                        let network = self.rng.chance(self.plan.network_hangs_up);
                        self.schedule_in(
                            hold,
                            Act::HangUp {
                                network,
                                cref: call.cref,
                            },
                        );
                    }
                    Err(CommandError::Qos(err)) => {
                        return Err(self.fail(
                            "every QoS natm accepts has its IEs",
                            format!("user: SETUP with QoS {} not encoded: {err}", params.qos),
                        ));
                    }
                    Err(_) => {}
                }
                if self.rng.chance(self.plan.restart) {
                    let network = self.rng.chance(0.6);
                    let all = self.rng.chance(0.3);
                    let delay = secs(self.rng.real(0.0, 2.0));
                    self.schedule_in(delay, Act::Restart { network, all });
                }
            }
            Act::Answer(call) => {
                if self.ends[1].sig.uni().call_state(call) != CallState::CallInitiated {
                    return Ok(());
                }
                let conn = ConnId {
                    vpci: 0,
                    vci: self.alloc_vci(),
                };
                match self.rng.below(20) {
                    0..=11 => {
                        let _ = self.command(1, |s, now| s.proceed(now, call, Some(conn)))?;
                        let delay = secs(self.rng.log_uniform(0.001, 4.0));
                        self.schedule_in(delay, Act::Connect(call));
                    }
                    12..=14 => {
                        let _ = self.command(1, |s, now| s.connect(now, call, Some(conn)))?;
                    }
                    15..=18 => {
                        self.report.refused += 1;
                        let v = [
                            CauseValue::UserBusy,
                            CauseValue::CallRejected,
                            CauseValue::NoRouteToDestination,
                            CauseValue::QosUnavailable,
                            CauseValue::ResourceUnavailable,
                        ][self.rng.below(5) as usize];
                        let _ = self.command(1, |s, now| s.release(now, call, cause(v)))?;
                    }
                    // A late answer: the user's T303 (twice) usually ends the call first.
                    _ => {
                        let delay = secs(self.rng.real(2.0, 40.0));
                        self.schedule_in(delay, Act::Connect(call));
                    }
                }
            }
            Act::Connect(call) => {
                let conn = match self.ends[1].sig.uni().conn_id(call) {
                    Some(_) => None,
                    None => Some(ConnId {
                        vpci: 0,
                        vci: self.alloc_vci(),
                    }),
                };
                let _ = self.command(1, |s, now| s.connect(now, call, conn))?;
            }
            Act::HangUp { network, cref } => {
                let call = if network {
                    self.calls.get(&cref).and_then(|r| r.net)
                } else {
                    Some(CallId {
                        origin: Origin::Local,
                        cref,
                    })
                };
                if let Some(call) = call {
                    let e = usize::from(network);
                    let _ = self.command(e, |s, now| {
                        s.release(now, call, cause(CauseValue::NormalCallClearing))
                    })?;
                }
            }
            Act::Restart { network, all } => {
                let e = usize::from(network);
                let what = if all {
                    Restart::All
                } else {
                    let conns: Vec<ConnId> = self.ends[e]
                        .sig
                        .uni()
                        .calls()
                        .filter_map(|(c, _)| self.ends[e].sig.uni().conn_id(c))
                        .collect();
                    if conns.is_empty() {
                        return Ok(());
                    }
                    let k = conns[self.rng.below(conns.len() as u64) as usize];
                    Restart::Vc {
                        vpci: k.vpci,
                        vci: k.vci,
                    }
                };
                let r = self.command(e, |s, now| s.restart(now, what))?;
                let name = self.ends[e].name;
                self.note(format_args!("restart {name} {what:?}: {r:?}"));
                if r.is_ok() {
                    self.report.restarts += 1;
                }
            }
            Act::Down => {
                self.up = false;
                self.report.outages += 1;
            }
            Act::Up => self.up = true,
            Act::Impair(d, i) => {
                self.active_windows[d] += 1;
                let w = self.plan.impair[d][i].clone();
                self.dirs[d].netem.set_impairments(&w.impairments);
                self.dirs[d].duplicate = w.duplicate;
            }
            Act::Unimpair(d) => {
                self.active_windows[d] = self.active_windows[d].saturating_sub(1);
                self.dirs[d].netem.set_impairments(&Impairments::default());
                self.dirs[d].duplicate = 0.0;
            }
            Act::EndLoad => {
                self.loading = false;
                self.active_windows = [0, 0];
                self.up = true;
                for d in &mut self.dirs {
                    d.netem.set_impairments(&Impairments::default());
                    d.duplicate = 0.0;
                }
                // Faults and hang-ups still planned are dropped; answers stay.
                self.acts
                    .retain(|_, a| matches!(a, Act::Answer(_) | Act::Connect(_)));
            }
        }
        Ok(())
    }

    /// Whether the link is up and unimpaired.
    fn healthy(&self) -> bool {
        self.up && self.active_windows == [0, 0]
    }

    fn alloc_vci(&mut self) -> u16 {
        let v = self.next_vci;
        self.next_vci = if v >= 65_000 { 32 } else { v + 1 };
        v
    }

    fn setup_params(&mut self) -> SetupParams {
        let mut a = [0u8; 20];
        a[0] = 0x47;
        for b in &mut a[1..] {
            *b = self.rng.below(256) as u8;
        }
        let qos: Qos = QOS[self.rng.below(QOS.len() as u64) as usize]
            .parse()
            .expect("the campaign's QoS texts parse");
        SetupParams {
            called: PartyNumber::aesa(Aesa(a)),
            called_sub: None,
            calling: None,
            calling_sub: None,
            qos,
            blli: None,
            bhli: None,
            conn: None,
        }
    }

    /// Invariants 2 and 3 at the start of a step: what was due before now.
    fn deadlines(&mut self) -> Result<(), Violation> {
        let now = self.now;
        for e in 0..2 {
            let end = &self.ends[e];
            if let Some(&(n, at)) = end.asked.first()
                && now.saturating_duration_since(at) > USTAT_BOUND
            {
                return Err(self.fail(
                    "SSCOP answers USTAT",
                    format!(
                        "{}: a USTAT taken at {} ns asked for SD N(S)={n}, still not sent again \
                         {} ns later (bound {} ns)",
                        end.name,
                        at.as_nanos(),
                        now.saturating_duration_since(at).as_nanos(),
                        USTAT_BOUND.as_nanos()
                    ),
                ));
            }
            for (call, &since) in &end.releasing {
                if now.saturating_duration_since(since) > end.t308_bound
                    && end.sig.uni().call_state(*call) == CallState::ReleaseRequest
                {
                    return Err(self.fail(
                        "call clearing bounded by T308",
                        format!(
                            "{}: {call} has been in {} (RELEASE sent) since {} ns, longer than \
                             n308 × T308 + 1 ms = {} ns",
                            end.name,
                            CallState::ReleaseRequest.name(end.sig.uni().role()),
                            since.as_nanos(),
                            end.t308_bound.as_nanos()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Invariants 3 (bookkeeping) and 4 after a step.
    fn audit(&mut self) -> Result<(), Violation> {
        let now = self.now;
        for e in 0..2 {
            let end = &mut self.ends[e];
            let uni = end.sig.uni();
            let in_rr: BTreeSet<CallId> = uni
                .calls()
                .filter(|&(_, s)| s == CallState::ReleaseRequest)
                .map(|(c, _)| c)
                .collect();
            end.releasing.retain(|c, _| in_rr.contains(c));
            for c in in_rr {
                end.releasing.entry(c).or_insert(now);
            }
            if uni.call_count() != end.open.len() {
                let held: Vec<String> = uni
                    .calls()
                    .filter(|(c, _)| !end.open.contains(c))
                    .map(|(c, s)| format!("{c} in {}", s.name(uni.role())))
                    .collect();
                let detail = format!(
                    "{}: call control holds {} calls, its owner was told of {} still open; \
                     held but not open: {held:?}",
                    end.name,
                    uni.call_count(),
                    end.open.len()
                );
                return Err(self.fail("no call reference leaks", detail));
            }
        }
        Ok(())
    }

    /// Whether signalling has settled (see the module docs).
    fn settled(&self) -> bool {
        // Up with nothing outstanding, or released with no call left (natm-sig brings a
        // released SAAL up again when it has something to send, not before).
        let up = self.ends.iter().all(|e| {
            let sscop = e.sig.sscf().sscop();
            sscop.state() == SscopState::DataTransferReady
                && sscop.unacknowledged() == 0
                && e.sig.uni().link_up()
        });
        let down = self.ends.iter().all(|e| {
            e.sig.sscf().sscop().state() == SscopState::Idle
                && !e.sig.uni().link_up()
                && e.sig.uni().call_count() == 0
        });
        (up || down)
            && self
                .ends
                .iter()
                .all(|e| e.sig.uni().poll_timeout().is_none())
            && self.dirs.iter().all(|d| d.netem.in_flight() == 0)
            && self
                .acts
                .values()
                .all(|a| !matches!(a, Act::Answer(_) | Act::Connect(_)))
    }

    fn settle(&mut self, what: &str) -> Result<(), Violation> {
        let until = ns(self.now.as_nanos() + SETTLE_BOUND.as_nanos());
        if self.run_until(Instant::from_nanos(until.as_nanos()), Sim::settled)? {
            return Ok(());
        }
        let detail = self
            .ends
            .iter()
            .map(|e| {
                let s = e.sig.sscf().sscop();
                format!(
                    "{}: SSCOP {:?} ({} unacknowledged), link {}, Q.2931 timer {:?}, calls {:?}",
                    e.name,
                    s.state(),
                    s.unacknowledged(),
                    if e.sig.uni().link_up() { "up" } else { "down" },
                    e.sig.uni().poll_timeout().map(|t| t.as_nanos()),
                    e.sig
                        .uni()
                        .calls()
                        .map(|(c, st)| format!("{c} {}", st.name(e.sig.uni().role())))
                        .collect::<Vec<_>>()
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        Err(self.fail(
            "signalling settles",
            format!(
                "not settled {} s after {what} with the link healthy: {detail}",
                SETTLE_BOUND.as_nanos() / 1_000_000_000
            ),
        ))
    }

    /// Invariant 5 after the settle: each call active at both ends or gone at both.
    fn ends_alike(&self) -> Result<(), Violation> {
        let (user, net) = (self.ends[0].sig.uni(), self.ends[1].sig.uni());
        for (c, s) in user.calls() {
            let peer = CallId {
                origin: Origin::Remote,
                cref: c.cref,
            };
            let ps = net.call_state(peer);
            if s != CallState::Active || ps != CallState::Active {
                return Err(self.fail(
                    "every call ends connected or released at both ends",
                    format!(
                        "user {c} is in {}, the network's {peer} in {}",
                        s.name(Role::User),
                        ps.name(Role::Network)
                    ),
                ));
            }
        }
        for (c, s) in net.calls() {
            let peer = CallId {
                origin: Origin::Local,
                cref: c.cref,
            };
            if c.origin != Origin::Remote || user.call_state(peer) != CallState::Active {
                return Err(self.fail(
                    "every call ends connected or released at both ends",
                    format!(
                        "network {c} is in {}, the user's {peer} in {}",
                        s.name(Role::Network),
                        user.call_state(peer).name(Role::User)
                    ),
                ));
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Violation> {
        let t = Instant::from_nanos(self.plan.load.as_nanos());
        self.run_until(t, |_| false)?;
        // EndLoad is due at `load`: run that instant's step.
        if let Some(t) = self.next_time().filter(|&x| x <= t) {
            self.step(t)?;
        }
        self.settle("the load phase")?;
        self.ends_alike()?;
        self.note(format_args!("check ends alike: ok"));
        // Release every call still up, from either side.
        let active: Vec<CallId> = self.ends[0].sig.uni().calls().map(|(c, _)| c).collect();
        for c in active {
            let network = self.rng.chance(0.5);
            let call = if network {
                CallId {
                    origin: Origin::Remote,
                    cref: c.cref,
                }
            } else {
                c
            };
            let e = usize::from(network);
            let _ = self.command(e, |s, now| {
                s.release(now, call, cause(CauseValue::NormalCallClearing))
            })?;
            self.pump()?;
        }
        self.audit()?;
        self.settle("the final release")?;
        for e in &self.ends {
            let uni = e.sig.uni();
            if uni.call_count() != 0 || uni.call_refs_allocated() != 0 || !e.open.is_empty() {
                return Err(self.fail(
                    "no call reference leaks",
                    format!(
                        "{}: after every call was released, {} calls and {} call references \
                         held, {} open",
                        e.name,
                        uni.call_count(),
                        uni.call_refs_allocated(),
                        e.open.len()
                    ),
                ));
            }
        }
        for e in &self.ends {
            let c = e.sig.sscf().sscop().counters();
            self.report.sd_retransmitted += c.sd_retransmitted;
            self.report.ustats += c.ustats;
        }
        Ok(())
    }
}

fn event_text(ev: &CallEvent) -> String {
    match ev {
        CallEvent::Setup { call, .. } => format!("setup {call}"),
        CallEvent::Released { call, cause, by } => {
            format!("released {call} cause {} by {by:?}", cause.value)
        }
        other => format!("{other:?}"),
    }
}

std::thread_local! {
    /// The (virtual time, step) of this thread's run, for a panic's report.
    static LAST_STEP: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// One signalling run of `seed`, its events traced to `trace` if given.
pub fn run(seed: u64, trace: Option<Box<dyn Write>>) -> Result<SigReport, Violation> {
    let wall = std::time::Instant::now();
    LAST_STEP.with(|c| c.set((0, 0)));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut sim = Sim::new(seed, trace);
        let r = sim.finish();
        (sim, r)
    }));
    match r {
        Ok((sim, Ok(()))) => {
            let mut report = sim.report.clone();
            report.digest = sim.digest;
            report.end = sim.now;
            report.steps = sim.steps;
            report.wall = wall.elapsed();
            Ok(report)
        }
        Ok((_, Err(v))) => Err(v),
        Err(p) => {
            let (at, seq) = LAST_STEP.with(|c| c.get());
            Err(Violation::panicked(
                p.as_ref(),
                Instant::from_nanos(at),
                seq,
                "a core",
                " (the trace's last line is where)",
            ))
        }
    }
}

/// One seed of a signalling swarm.
pub type SigOutcome = SeedOutcome<SigReport>;

impl SigOutcome {
    /// [`failure_line`](SeedOutcome::failure_line) with the campaign's replay command.
    pub fn failure_text(&self) -> Option<String> {
        self.failure_line(&replay(self.seed))
    }
}

/// A signalling swarm's outcomes.
pub type SigSwarmReport = SwarmReport<SigReport>;

/// Runs signalling seeds `from..from + n` on up to `threads` threads (0: the cores
/// available), as [`crate::swarm()`] runs a scenario's.
pub fn swarm(from: u64, n: u64, threads: usize, stop_at_failure: bool) -> SigSwarmReport {
    SwarmReport::from_seeds(crate::swarm::seeds(
        from,
        n,
        threads,
        stop_at_failure,
        |seed| run(seed, None),
    ))
}

//! The transport campaign (issue 25): natm-transport's endpoints, unchanged, as the
//! applications of two hosts whose TPDUs travel as AAL5 frames over the simulator's cell
//! network, under seeded link faults, with the transport's invariants checked as the run
//! goes and at its end (`natm sim run|swarm --transport`).
//!
//! What it is: a [`World`] of two hosts (`h1`, `h2`) on one switch (`s1`), OC-3c links,
//! and one PVC per transport channel through the switch (`0.100`, `0.101`, …). Each host's
//! [`App`] holds one natm-transport [`Endpoint`] per channel and drives it through its
//! sans-IO face as a driver would: every frame `poll_transmit` gives is one SDU on the
//! channel's VC (the adapter segments it into cells, the far adapter reassembles it and
//! checks its CRC), every SDU received is `handle_tpdu`'s, `poll_timeout` becomes an app
//! timer. A channel is the PVC's two directions (the transport's two simplex VCs). The
//! driver keeps at most [`SEND_LIMIT`] frames of a channel in the adapter and asks the
//! endpoint for the next when one has left ("may a TPDU go now" is the endpoint's
//! answer); acks that answer a received TPDU go in the same step, within that limit like
//! every other frame (the host's transmit buffers are shared by all its VCs: acks of
//! one-cell TPDUs sent past the limit once took them all and a guaranteed channel's frame
//! was refused).
//!
//! What it is not: no second copy of the transport (the oracles read the events the
//! endpoints hand up, the TPDU headers on the wire through `natm_transport::header`, and
//! the endpoints' public [`Stats`](natm_transport::Stats)), no host crash (it loses the
//! endpoints, which no transport survives) and no PVC churn, no admission (the PVCs are
//! configured).
//!
//! # A run
//!
//! Drawn from the seed ([`TransportPlan::draw`]): 3–5 channels — channel 0 reliable,
//! channel 1 best effort, channel 2 guaranteed, the rest any of the three — each with its
//! TPDU size, initial sequence numbers and (best effort and guaranteed) reassembly timeout;
//! on every direction of every channel a list of messages (1 byte to 1 MiB: reliable
//! directions carry one 1 MiB message in a third of the channels; guaranteed ones offer
//! about twice their rate so that the bucket always has work) sent during the load
//! phase ([`PHASE`]); and the faults: per link, impairments (random and burst cell loss,
//! header errors, payload bit errors, delay with jitter) over the whole phase or a window
//! of it, link outages, a switch crash (its PVCs come back from its configuration) and a
//! clogged switch port. At the end of the phase every fault is cleared, every best
//! effort and guaranteed direction sends [`FLUSH_MESSAGES`] more messages, and the run
//! goes on until every message is accounted for (at most [`SETTLE_BOUND`]).
//!
//! # Invariants
//!
//! 1. **Reliable delivers everything in order exactly once** ("reliable in order, exactly
//!    once"): every message an endpoint hands up on a reliable channel is the next one
//!    sent, byte for byte; no `Lost` is ever reported; at the end every message sent was
//!    delivered and both senders are idle (liveness, "transport settles").
//! 2. **Best effort never delivers a corrupted or duplicated message, and reports every
//!    loss** ("best effort intact, losses reported"; guaranteed channels too): a message
//!    handed up is byte-exact and its number is the next not yet delivered or reported
//!    lost; a `Lost` report covers exactly the next numbers; at the end every message sent
//!    is delivered or reported lost.
//! 3. **Guaranteed keeps its rate** ("guaranteed rate within tolerance"): the cells of its
//!    data TPDUs arriving at the receiver in each [`RATE_WINDOW`] that lies in the load
//!    phase, after [`RATE_SKIP`], at least [`RATE_MARGIN`] clear of every fault, and while
//!    the sender was backlogged, are the rate times the window within the token bucket's
//!    depth (`BUCKET_TPDUS` full TPDUs) plus one TPDU and [`RATE_SLACK`] of the expected count;
//!    and so is each run of consecutive such windows as a whole (the bucket bounds any
//!    interval, so over a long run the tolerance is a small fraction of the count). The
//!    guaranteed channel's PVC is CBR at 1.25 times its rate (the host shapes the bucket's
//!    batches), the others UBR.
//! 4. **Every TPDU acked naming it** (SMART): on a reliable channel every data TPDU a
//!    receiver takes within its window is answered at once by an ack whose trigger is that
//!    TPDU's sequence number and whose echo is its transmission count, alone or riding on
//!    a data TPDU, unless the endpoint holds it for its application's next call (half the
//!    reliable channels hold acks, [`ChannelPlan::hold_acks`]: the app's next call comes
//!    1 µs to 100 ms later, or sooner with a message to send).
//! 5. **The window halves on the first loss** (congestion response): on a reliable
//!    direction with no timeout yet, the ack through which SMART first finds a loss
//!    brings the congestion window or its threshold down.
//!
//! The cell network's own invariants ([`crate::check`]) hold throughout as in every run
//! (CAC books, conservation, nothing leaked, policing); its per-cell order and per-SDU
//! byte checks follow the load's tags, which TPDUs do not carry: here order and integrity
//! are the transport oracles' (1, 2).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::Write;
use std::rc::Rc;

use natm_core::{Duration, Instant, Qos, VcId};
use natm_netem::{BurstLoss, Impairments, Jitter, Probability};
use natm_switch::{CrossConnect, Endpoint as XcEnd, PortConfig, PortId, SwitchConfig};
use natm_transport::header::Repr;
use natm_transport::{
    BUCKET_TPDUS, Config, Endpoint, Event, Isn, MsgSeq, SendError, Service, Stats, frame_cells,
};

use crate::app::{App, AppIo};
use crate::faults::{Fault, FaultKind};
use crate::seed::{Rng, splitmix64};
use crate::swarm::{SeedOutcome, SwarmReport};
use crate::world::{
    Action, DEFAULT_CDVT, Dirs, End, HostConfig, LinkConfig, LinkId, SwitchId, Violation, World,
};

mod driver;
mod plan;
mod report;
#[cfg(test)]
mod tests;

pub use driver::fill_message;
use driver::{Flow, Ledger, Shared, TransportApp};
pub use plan::{ChannelPlan, TransportPlan};
use plan::{at, tpdu_cells};
pub use report::{ServiceCounts, TransportReport};

/// The load and fault phase.
pub const PHASE: Duration = Duration::from_millis(300);
/// After the phase, how long every message may take to be accounted for (liveness).
pub const SETTLE_BOUND: Duration = Duration::from_secs(30);
/// How often the settle loop looks.
const SETTLE_STEP: Duration = Duration::from_millis(5);
/// Messages every best effort and guaranteed direction sends after the phase. The first
/// can be lost with no fault: if the last frame of the phase lost its end cell, the
/// receiver's AAL5 reassembly takes the next frame's cells into it (a CRC or oversize
/// drop). Its own end cell leaves the VC's reassembly clean, so the second arrives and
/// reports every loss before it (seeds 893, 1341 and 1665 settled with one).
pub const FLUSH_MESSAGES: usize = 2;

/// The messages a direction of `service` sends after the phase.
fn flushes(service: Service) -> usize {
    if service == Service::Reliable {
        0
    } else {
        FLUSH_MESSAGES
    }
}

/// Frames of one channel the driver keeps in the adapter at most.
pub const SEND_LIMIT: u32 = 8;
/// The guaranteed rate's measuring window.
pub const RATE_WINDOW: Duration = Duration::from_millis(40);
/// The first part of the phase no rate window starts in (the bucket starts full).
pub const RATE_SKIP: Duration = Duration::from_millis(20);
/// How far a rate window keeps from every fault and every instant the sender was idle.
pub const RATE_MARGIN: Duration = Duration::from_millis(10);
/// The rate's tolerance beyond the bucket's burst, a fraction of the expected cells.
pub const RATE_SLACK: f64 = 0.02;
/// The first channel's VCI.
pub const FIRST_VCI: u16 = 100;
/// The largest message.
pub const MAX_MESSAGE: usize = 1 << 20;

/// The replay command of `seed`.
pub fn replay(seed: u64) -> String {
    format!("natm sim run --transport --seed {seed}")
}

/// The world of a plan: the two hosts, the switch, the links and the PVCs.
fn build(
    seed: u64,
    plan: &TransportPlan,
    ledger: &Shared,
) -> Result<(World, [LinkId; 2], SwitchId), String> {
    let mut world = World::new(seed);
    let s = world.add_switch("s1", SwitchConfig::default());
    let max_frame = plan
        .channels
        .iter()
        .map(|c| c.config.max_frame_len())
        .max()
        .unwrap_or(64);
    let mut hosts = Vec::new();
    for (h, name) in ["h1", "h2"].into_iter().enumerate() {
        let mut config = HostConfig::new(256, max_frame.next_multiple_of(64));
        config.adapter.reassembly_timeout = Some(Duration::from_millis(10));
        let app = TransportApp::new(h, plan, ledger.clone());
        hosts.push(
            world
                .add_host(name, config, Box::new(app))
                .map_err(|e| e.to_string())?,
        );
    }
    let mut links = Vec::new();
    for (h, port) in hosts.iter().zip([1u16, 2]) {
        let end = End::Port(
            s,
            PortId(port),
            PortConfig {
                cdvt: DEFAULT_CDVT,
                ..PortConfig::default()
            },
        );
        links.push(
            world
                .add_link(End::Host(*h), end, LinkConfig::default())
                .map_err(|e| e.to_string())?,
        );
    }
    for (c, ch) in plan.channels.iter().enumerate() {
        let vci = FIRST_VCI + c as u16;
        let qos: Qos = match ch.config.service.vc_pcr() {
            Some(pcr) => format!("cbr:pcr={pcr}"),
            None => "ubr".to_string(),
        }
        .parse()
        .map_err(|e| format!("channel {c}: {e:?}"))?;
        let end = |port| XcEnd {
            port: PortId(port),
            vpi: 0,
            vci: Some(vci),
        };
        world
            .connect(s, &CrossConnect::new(end(1), end(2), qos))
            .map_err(|e| format!("channel {c}: {e}"))?;
        let vc = VcId::uni(0, u32::from(vci)).map_err(|e| format!("{e:?}"))?;
        for h in &hosts {
            world
                .open_vc(*h, vc, &qos)
                .map_err(|e| format!("channel {c}: {e}"))?;
        }
    }
    Ok((world, [links[0], links[1]], s))
}

/// The guaranteed rate windows (invariant 3): (windows checked, worst deviation).
fn check_rates(plan: &TransportPlan, ledger: &Ledger) -> Result<(u64, f64), String> {
    let (mut n, mut worst) = (0u64, 0f64);
    let w = RATE_WINDOW.as_nanos();
    let margin = RATE_MARGIN.as_nanos();
    let clear = |a: u64, b: u64| {
        plan.faults.iter().all(|f| {
            let (s, e) = (f.at.as_nanos(), f.at.as_nanos() + f.length.as_nanos());
            e + margin <= a || s >= b + margin
        })
    };
    for (ci, ch) in plan.channels.iter().enumerate() {
        let Service::Guaranteed { rate } = ch.config.service else {
            continue;
        };
        let burst = f64::from((BUCKET_TPDUS + 1) * tpdu_cells(ch.config.tpdu_size));
        let want = f64::from(rate) * w as f64 / 1e9;
        for dir in 0..2 {
            // The receiver of direction `dir` keeps its cells in its own flow entry.
            let f = &ledger.flows[ci][dir];
            // A run of consecutive checked windows: (first window's start, windows, cells).
            let mut run: Option<(u64, u64, u64)> = None;
            let check = |from: u64, k: u64, got: u64| -> Result<(), String> {
                let want = want * k as f64;
                let tolerance = burst + RATE_SLACK * want;
                if (got as f64 - want).abs() > tolerance {
                    return Err(format!(
                        "channel {ci} direction {dir}: {got} cells in {} ms from {} ms, the rate \
                         {rate} cells/s gives {want:.0} (tolerance {tolerance:.0})",
                        k * w / 1_000_000,
                        from / 1_000_000,
                    ));
                }
                Ok(())
            };
            for k in 0..PHASE.as_nanos() / w {
                let (a, b) = (k * w, (k + 1) * w);
                let got = f.rx_cells.get(k as usize).copied().unwrap_or(0);
                let checked = a >= RATE_SKIP.as_nanos()
                    && clear(a, b)
                    && !f.idle.iter().any(|&t| t + margin > a && t < b);
                if !checked {
                    if let Some((from, k, got)) = run.take() {
                        check(from, k, got)?;
                    }
                    continue;
                }
                n += 1;
                worst = worst.max((got as f64 - want).abs() / want);
                check(a, 1, got)?;
                let r = run.get_or_insert((a, 0, 0));
                r.1 += 1;
                r.2 += got;
            }
            if let Some((from, k, got)) = run {
                check(from, k, got)?;
            }
        }
    }
    Ok((n, worst))
}

/// Whether every message is accounted for: `None`, or what is not.
fn unsettled(ledger: &Ledger, plan: &TransportPlan) -> Option<String> {
    for (ci, flows) in ledger.flows.iter().enumerate() {
        for (dir, f) in flows.iter().enumerate() {
            let want = plan.channels[ci].messages[dir].len() + f.service.map_or(0, flushes);
            if f.sent.len() < want {
                return Some(format!(
                    "channel {ci} direction {dir}: {} of {want} messages accepted by the sender",
                    f.sent.len()
                ));
            }
            if f.next < f.sent.len() as u64 {
                return Some(format!(
                    "channel {ci} direction {dir}: {} of {} messages delivered or reported lost",
                    f.next,
                    f.sent.len()
                ));
            }
            if f.service == Some(Service::Reliable) && !ledger.send_idle[ci][dir] {
                return Some(format!(
                    "channel {ci} direction {dir}: the sender still holds unacknowledged data"
                ));
            }
        }
    }
    None
}

/// The oracles' ledger of `plan`, empty.
fn new_ledger(plan: &TransportPlan) -> Shared {
    let ledger: Shared = Rc::default();
    {
        let mut l = ledger.borrow_mut();
        for ch in &plan.channels {
            l.stats.push([Stats::default(); 2]);
            l.send_idle.push([false; 2]);
            l.flows.push([0, 1].map(|d| Flow {
                service: Some(ch.config.service),
                msg0: ch.isn[d].msg,
                ..Flow::default()
            }));
        }
    }
    ledger
}

fn run_inner(
    seed: u64,
    plan: TransportPlan,
    trace: Option<Box<dyn Write>>,
) -> Result<TransportReport, Violation> {
    let wall = std::time::Instant::now();
    let ledger = new_ledger(&plan);
    // Every best effort and guaranteed direction sends messages after the phase, so that
    // whatever was lost before them is reported.
    let mut plan_run = plan.clone();
    for ch in &mut plan_run.channels {
        let k = flushes(ch.config.service);
        for list in &mut ch.messages {
            list.extend((0..k).map(|_| (at(PHASE.as_nanos() + 5_000_000), 100)));
        }
    }
    let (mut world, links, switch) = build(seed, &plan_run, &ledger).map_err(|e| Violation {
        at: Instant::ZERO,
        seq: 0,
        invariant: "scenario builds",
        detail: e,
    })?;
    if let Some(t) = trace {
        world.set_trace(t);
    }
    for f in &plan.faults {
        let (a, b) = (
            at(f.at.as_nanos()),
            at(f.at.as_nanos() + f.length.as_nanos()),
        );
        let (start, end) = match &f.kind {
            FaultKind::Impair { link, impairments } => (
                Action::Impairments(links[*link], Dirs::Both, *impairments),
                Action::Impairments(links[*link], Dirs::Both, Impairments::default()),
            ),
            FaultKind::LinkDown { link } => (
                Action::LinkUp(links[*link], false),
                Action::LinkUp(links[*link], true),
            ),
            FaultKind::SwitchCrash { .. } => {
                (Action::CrashSwitch(switch), Action::RestartSwitch(switch))
            }
            FaultKind::Clog { port, .. } => (
                Action::Clog(switch, PortId(*port), true),
                Action::Clog(switch, PortId(*port), false),
            ),
            other => {
                return Err(Violation {
                    at: Instant::ZERO,
                    seq: 0,
                    invariant: "scenario builds",
                    detail: format!("{other}: not a fault of the transport campaign"),
                });
            }
        };
        world.schedule(a, start);
        world.schedule(b, end);
    }
    world.start();
    let phase_end = at(PHASE.as_nanos());
    world.run_until(phase_end)?;
    let _ = world.apply(Action::RestartSwitch(switch));
    for port in [1, 2] {
        let _ = world.apply(Action::Clog(switch, PortId(port), false));
    }
    for l in links {
        let _ = world.apply(Action::LinkUp(l, true));
        let _ = world.apply(Action::Impairments(l, Dirs::Both, Impairments::default()));
    }
    world.audit_all()?;
    let bound = PHASE.as_nanos() + SETTLE_BOUND.as_nanos();
    let mut t = PHASE.as_nanos();
    let settled = loop {
        t = (t + SETTLE_STEP.as_nanos()).min(bound);
        world.run_until(at(t))?;
        let what = unsettled(&ledger.borrow(), &plan);
        match what {
            None => break t,
            Some(what) if t >= bound => {
                return Err(Violation {
                    at: world.now(),
                    seq: 0,
                    invariant: "transport settles",
                    detail: format!(
                        "{} s after the phase with faults off: {what}",
                        SETTLE_BOUND.as_nanos() / 1_000_000_000
                    ),
                });
            }
            Some(_) => {}
        }
    };
    world.audit_all()?;
    let l = ledger.borrow();
    let (rate_windows, worst_rate) = check_rates(&plan, &l).map_err(|detail| Violation {
        at: world.now(),
        seq: 0,
        invariant: "guaranteed rate within tolerance",
        detail,
    })?;
    let mut report = TransportReport {
        seed,
        digest: world.digest(),
        end: world.now(),
        settle: Duration::from_nanos(settled - PHASE.as_nanos()),
        faults: plan.faults.len(),
        refused: l.refused,
        rate_windows,
        worst_rate,
        cell_events: world.stats().cell_events,
        ..TransportReport::default()
    };
    for (ch, flows) in plan.channels.iter().zip(&l.flows) {
        let k = match ch.config.service {
            Service::Reliable => 0,
            Service::BestEffort => 1,
            Service::Guaranteed { .. } => 2,
        };
        let s = &mut report.services[k];
        s.channels += 1;
        for f in flows {
            s.sent += f.sent.len() as u64;
            s.delivered += f.delivered;
            s.lost += f.lost;
            s.bytes += f.bytes;
        }
    }
    for s in l.stats.iter().flatten() {
        report.resends.0 += s.smart_resends;
        report.resends.1 += s.timeout_resends;
        report.resends.2 += s.probes;
        report.timeouts += s.timeouts;
        report.window_cuts += s.window_cuts;
        report.acks_carried += s.acks_carried;
    }
    drop(l);
    report.wall = wall.elapsed();
    Ok(report)
}

/// One transport run of `seed`, its events traced to `trace` if given. A panic is
/// reported as the invariant "no panic".
pub fn run(seed: u64, trace: Option<Box<dyn Write>>) -> Result<TransportReport, Violation> {
    run_plan(seed, TransportPlan::draw(seed), trace)
}

/// [`run`] with a plan of the caller's (a test's: a seed's plan with its faults removed,
/// say); `seed` seeds the world.
pub fn run_plan(
    seed: u64,
    plan: TransportPlan,
    trace: Option<Box<dyn Write>>,
) -> Result<TransportReport, Violation> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_inner(seed, plan, trace)
    }))
    .unwrap_or_else(|p| {
        Err(Violation::panicked(
            p.as_ref(),
            Instant::ZERO,
            0,
            "a core or the driver",
            "",
        ))
    })
}

/// One seed of a transport swarm.
pub type TransportOutcome = SeedOutcome<TransportReport>;

impl TransportOutcome {
    /// [`failure_line`](SeedOutcome::failure_line) with the campaign's replay command.
    pub fn failure_text(&self) -> Option<String> {
        self.failure_line(&replay(self.seed))
    }
}

/// A transport swarm's outcomes.
pub type TransportSwarmReport = SwarmReport<TransportReport>;

/// Runs transport seeds `from..from + n` on up to `threads` threads (0: the cores
/// available), as [`crate::swarm()`] runs a scenario's.
pub fn swarm(from: u64, n: u64, threads: usize, stop_at_failure: bool) -> TransportSwarmReport {
    SwarmReport::from_seeds(crate::swarm::seeds(
        from,
        n,
        threads,
        stop_at_failure,
        |seed| run(seed, None),
    ))
}

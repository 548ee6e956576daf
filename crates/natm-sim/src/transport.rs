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
//! answer); acks that answer a received TPDU go at once.
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
//! effort and guaranteed direction sends one more message, and the run goes on until
//! every message is accounted for (at most [`SETTLE_BOUND`]).
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
//!    depth (`X_MAX` full TPDUs) plus one TPDU and [`RATE_SLACK`] of the expected count;
//!    and so is each run of consecutive such windows as a whole (the bucket bounds any
//!    interval, so over a long run the tolerance is a small fraction of the count). The
//!    guaranteed channel's PVC is CBR at 1.25 times its rate (the host shapes the bucket's
//!    batches), the others UBR.
//! 4. **Every TPDU acked naming it** (SMART): on a reliable channel every data TPDU a
//!    receiver takes within its window is answered at once by an ack whose trigger is that
//!    TPDU's sequence number and whose echo is its transmission count.
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
    Config, Endpoint, Event, Isn, MsgSeq, SendError, Service, Stats, X_MAX, frame_cells,
};

use crate::app::{App, AppIo};
use crate::faults::{Fault, FaultKind};
use crate::seed::{Rng, splitmix64};
use crate::swarm::{SeedOutcome, SwarmReport};
use crate::world::{
    Action, DEFAULT_CDVT, Dirs, End, HostConfig, LinkConfig, LinkId, SwitchId, Violation, World,
};

/// The load and fault phase.
pub const PHASE: Duration = Duration::from_millis(300);
/// After the phase, how long every message may take to be accounted for (liveness).
pub const SETTLE_BOUND: Duration = Duration::from_secs(30);
/// How often the settle loop looks.
const SETTLE_STEP: Duration = Duration::from_millis(5);
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

/// One channel's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelPlan {
    /// Its endpoints' configuration (both alike).
    pub config: Config,
    /// Initial sequence numbers: `[h1 → h2, h2 → h1]`.
    pub isn: [Isn; 2],
    /// The messages of each direction: (when, length).
    pub messages: [Vec<(Instant, usize)>; 2],
}

/// What a seed draws.
#[derive(Clone, Debug, PartialEq)]
pub struct TransportPlan {
    /// The channels, in VCI order.
    pub channels: Vec<ChannelPlan>,
    /// The faults, in the simulator's vocabulary: `Impair` and `LinkDown` on link 0
    /// (h1–s1) or 1 (h2–s1), `SwitchCrash` and `Clog` (port 1 towards h1, 2 towards h2)
    /// of switch 0; never a host crash (it would lose the endpoints) nor PVC churn.
    pub faults: Vec<Fault>,
}

fn prob(p: f64) -> Probability {
    Probability::new(p.clamp(0.0, 1.0)).unwrap_or(Probability::ZERO)
}

fn ns(x: u64) -> Duration {
    Duration::from_nanos(x)
}

fn at(x: u64) -> Instant {
    Instant::from_nanos(x)
}

/// Data TPDU cells of a payload of `n` bytes.
fn tpdu_cells(n: usize) -> u32 {
    frame_cells(natm_transport::header::DATA_HEADER_LEN + n)
}

impl TransportPlan {
    /// The plan of `seed` (see the [module documentation](self)).
    pub fn draw(seed: u64) -> TransportPlan {
        let mut rng = Rng::for_component(seed, "transport plan");
        let phase = PHASE.as_nanos();
        let n = rng.range(3, 5) as usize;
        let mut channels = Vec::new();
        for c in 0..n {
            let kind = match c {
                0 => 0,
                1 => 1,
                2 => 2,
                _ => rng.below(3),
            };
            let mut config = Config::default();
            let mut messages = [Vec::new(), Vec::new()];
            match kind {
                0 => {
                    config.service = Service::Reliable;
                    config.tpdu_size = [8192, 4096, 1500, 9000][rng.below(4) as usize];
                    let big = rng.chance(1.0 / 3.0).then(|| rng.below(2) as usize);
                    for (d, list) in messages.iter_mut().enumerate() {
                        let k = rng.range(3, 25);
                        for _ in 0..k {
                            let len = rng.log_uniform(1.0, 40_000.0) as usize;
                            list.push((at(rng.range(0, phase * 9 / 10)), len));
                        }
                        if big == Some(d) {
                            list.push((at(rng.range(0, phase / 3)), MAX_MESSAGE));
                        }
                    }
                }
                1 => {
                    config.service = Service::BestEffort;
                    config.tpdu_size = [8192, 4096, 1500, 512][rng.below(4) as usize];
                    config.reassembly_timeout = ns(rng.range(5_000_000, 100_000_000));
                    for list in messages.iter_mut() {
                        let k = rng.range(5, 40);
                        for _ in 0..k {
                            let len = if rng.chance(0.05) {
                                rng.range(100_000, MAX_MESSAGE as u64) as usize
                            } else {
                                rng.log_uniform(1.0, 20_000.0) as usize
                            };
                            list.push((at(rng.range(0, phase * 9 / 10)), len));
                        }
                    }
                }
                _ => {
                    let rate = rng.range(10_000, 30_000) as u32;
                    config.service = Service::Guaranteed { rate };
                    config.tpdu_size = [512, 1024, 1500][rng.below(3) as usize];
                    config.reassembly_timeout = ns(rng.range(5_000_000, 100_000_000));
                    // Offered at about twice the rate: the bucket always has work.
                    for list in messages.iter_mut() {
                        let mut t = 0u64;
                        while t < phase {
                            let len = rng.range(1, 6_000) as usize;
                            list.push((at(t), len));
                            let cells = len.div_ceil(config.tpdu_size) as u64
                                * u64::from(tpdu_cells(config.tpdu_size));
                            t += cells * 1_000_000_000 / (u64::from(rate) * 2);
                        }
                    }
                }
            }
            config.recv_buffer = (config.tpdus_of(config.max_message) as u32).max(256);
            for list in messages.iter_mut() {
                list.sort_by_key(|m| m.0);
            }
            let isn = [0, 1].map(|_| Isn {
                seq: rng.next_u64() as u32,
                msg: rng.next_u64() as u32,
            });
            channels.push(ChannelPlan {
                config,
                isn,
                messages,
            });
        }
        let mut faults = Vec::new();
        let window = |rng: &mut Rng, max_frac: f64| -> (Duration, Duration) {
            let a = rng.range(0, phase * 8 / 10);
            let max_len = ((phase as f64 * max_frac) as u64).clamp(1, phase - a);
            (ns(a), ns(rng.range(max_len / 10, max_len).max(1)))
        };
        for link in 0..2 {
            if rng.chance(0.7) {
                let mut imp = Impairments::default();
                if rng.chance(0.6) {
                    imp.loss = prob(rng.log_uniform(1e-5, 1e-2));
                }
                if rng.chance(0.3) {
                    imp.burst =
                        BurstLoss::mean(rng.log_uniform(1e-4, 1e-2), rng.real(1.5, 8.0)).ok();
                }
                if rng.chance(0.3) {
                    imp.hec_single = prob(rng.log_uniform(1e-4, 1e-2));
                }
                if rng.chance(0.2) {
                    imp.hec_multi = prob(rng.log_uniform(1e-4, 5e-3));
                }
                if rng.chance(0.4) {
                    imp.ber = prob(rng.log_uniform(1e-7, 1e-5));
                }
                if rng.chance(0.4) {
                    imp.delay = ns(rng.range(1_000, 2_000_000));
                    if rng.chance(0.6) {
                        imp.jitter = Jitter::Uniform(ns(rng.range(1_000, 500_000)));
                    }
                }
                if !imp.is_none() {
                    let (a, length) = if rng.chance(0.3) {
                        (Duration::ZERO, PHASE)
                    } else {
                        window(&mut rng, 0.5)
                    };
                    faults.push(Fault {
                        at: a,
                        length,
                        kind: FaultKind::Impair {
                            link,
                            impairments: imp,
                        },
                    });
                }
            }
            if rng.chance(0.3) {
                let (a, length) = window(&mut rng, 0.1);
                faults.push(Fault {
                    at: a,
                    length,
                    kind: FaultKind::LinkDown { link },
                });
            }
        }
        // The switch: a crash (every cell in it lost, the PVCs back from its
        // configuration on restart), and a clogged port (its queues fill and drop).
        if rng.chance(0.15) {
            let (a, length) = window(&mut rng, 0.1);
            faults.push(Fault {
                at: a,
                length,
                kind: FaultKind::SwitchCrash { switch: 0 },
            });
        }
        if rng.chance(0.25) {
            let port = rng.range(1, 2) as u16;
            let (a, length) = window(&mut rng, 0.05);
            faults.push(Fault {
                at: a,
                length,
                kind: FaultKind::Clog { switch: 0, port },
            });
        }
        TransportPlan { channels, faults }
    }
}

/// The bytes of message `i` of direction `key`: a function of both and the offset, so a
/// receiver checks each message byte for byte.
pub fn fill_message(key: u64, i: u64, buf: &mut [u8]) {
    let base = splitmix64(key ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    for (k, chunk) in buf.chunks_mut(8).enumerate() {
        let w = splitmix64(base ^ k as u64).to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
}

/// One direction of one channel as the oracles follow it.
#[derive(Clone, Debug, Default)]
struct Flow {
    service: Option<Service>,
    /// The direction's first message number.
    msg0: u32,
    /// Lengths of the messages the sender accepted, in order.
    sent: Vec<usize>,
    /// The next message number (from `msg0`) not yet delivered or reported lost.
    next: u64,
    delivered: u64,
    lost: u64,
    bytes: u64,
    /// Guaranteed: cells of data TPDUs received per rate window of the phase.
    rx_cells: Vec<u64>,
    /// Guaranteed: instants the sender had nothing queued.
    idle: Vec<u64>,
}

#[derive(Debug, Default)]
struct Ledger {
    /// Per channel, per direction (0: h1 → h2).
    flows: Vec<[Flow; 2]>,
    /// Per channel, per host: the endpoint's last figures.
    stats: Vec<[Stats; 2]>,
    /// Per channel, per host: whether its sender holds nothing (`send_idle`).
    send_idle: Vec<[bool; 2]>,
    refused: u64,
    sends_failed: u64,
}

type Shared = Rc<RefCell<Ledger>>;

/// One end of one channel on a host.
struct Chan {
    vc: VcId,
    ep: Endpoint,
    service: Service,
    /// This end's transmit direction (0: h1 → h2).
    dir: usize,
    key: u64,
    in_adapter: u32,
    staged: VecDeque<Vec<u8>>,
    schedule: Vec<(Instant, usize)>,
    next_scheduled: usize,
    pending: VecDeque<usize>,
    accepted: u64,
    armed: Option<Instant>,
    /// Reliable: SMART has found a loss of this end's TPDUs (the window oracle looks
    /// at the first only).
    seen_loss: bool,
}

/// Timer token kinds (low 2 bits; the channel index above).
const T_ENDPOINT: u64 = 0;
const T_MESSAGE: u64 = 1;

/// A host's transport driver and oracles.
struct TransportApp {
    chans: Vec<Chan>,
    ledger: Shared,
    frame: Vec<u8>,
    msg: Vec<u8>,
    phase_end: Instant,
}

fn flow_key(channel: usize, dir: usize) -> u64 {
    splitmix64((channel as u64) << 1 | dir as u64)
}

impl TransportApp {
    fn new(host: usize, plan: &TransportPlan, ledger: Shared) -> TransportApp {
        let mut chans = Vec::new();
        let mut max = 0;
        for (c, p) in plan.channels.iter().enumerate() {
            let dir = host;
            let ep = Endpoint::new(p.config, p.isn[dir], p.isn[1 - dir])
                .expect("the plan's configurations are valid");
            max = max.max(p.config.max_frame_len());
            chans.push(Chan {
                vc: VcId::uni(0, u32::from(FIRST_VCI) + c as u32).expect("a valid VCI"),
                ep,
                service: p.config.service,
                dir,
                key: flow_key(c, dir),
                in_adapter: 0,
                staged: VecDeque::new(),
                schedule: p.messages[dir].clone(),
                next_scheduled: 0,
                pending: VecDeque::new(),
                accepted: 0,
                armed: None,
                seen_loss: false,
            });
        }
        TransportApp {
            chans,
            ledger,
            frame: vec![0; max],
            msg: Vec::new(),
            phase_end: at(PHASE.as_nanos()),
        }
    }

    /// Accepts what is due, moves frames to the adapter, hands events to the oracles and
    /// arms the endpoint's timer.
    fn pump(&mut self, ci: usize, now: Instant, io: &mut AppIo) {
        let c = &mut self.chans[ci];
        // Messages due, in order, while the send queue takes them.
        while let Some(&len) = c.pending.front() {
            self.msg.resize(len, 0);
            fill_message(c.key, c.accepted, &mut self.msg);
            match c.ep.send_message(now, &self.msg) {
                Ok(_) => {
                    c.pending.pop_front();
                    c.accepted += 1;
                    self.ledger.borrow_mut().flows[ci][c.dir].sent.push(len);
                }
                Err(SendError::QueueFull { .. }) => break,
                Err(e) => {
                    io.fail("transport driver", format!("channel {ci}: {e}"));
                    c.pending.pop_front();
                }
            }
        }
        while c.in_adapter < SEND_LIMIT {
            if let Some(f) = c.staged.pop_front() {
                io.send(c.vc, &f);
                c.in_adapter += 1;
                continue;
            }
            match c.ep.poll_transmit(now, &mut self.frame) {
                Some(n) => {
                    io.send(c.vc, &self.frame[..n]);
                    c.in_adapter += 1;
                }
                None => break,
            }
        }
        if matches!(c.service, Service::Guaranteed { .. })
            && now < self.phase_end
            && c.ep.queued_bytes() == 0
        {
            let mut l = self.ledger.borrow_mut();
            let idle = &mut l.flows[ci][c.dir].idle;
            if idle.last() != Some(&now.as_nanos()) {
                idle.push(now.as_nanos());
            }
        }
        self.events(ci, io);
        let c = &mut self.chans[ci];
        {
            let mut l = self.ledger.borrow_mut();
            l.stats[ci][c.dir] = c.ep.stats();
            l.send_idle[ci][c.dir] = c.ep.send_idle();
        }
        if let Some(t) = c.ep.poll_timeout()
            && c.armed.is_none_or(|a| t < a || a <= now)
        {
            c.armed = Some(t);
            io.timer(t, (ci as u64) << 2 | T_ENDPOINT);
        }
    }

    /// The events of channel `ci`'s endpoint, checked (invariants 1 and 2).
    fn events(&mut self, ci: usize, io: &mut AppIo) {
        let c = &mut self.chans[ci];
        let rx_dir = 1 - c.dir;
        let rx_key = flow_key(ci, rx_dir);
        let mut l = self.ledger.borrow_mut();
        let f = &mut l.flows[ci][rx_dir];
        let reliable = c.service == Service::Reliable;
        let inv = if reliable {
            "reliable in order, exactly once"
        } else {
            "best effort intact, losses reported"
        };
        while let Some(ev) = c.ep.poll_event() {
            match ev {
                Event::Message { msg, data } => {
                    let i = u64::from(msg.since(MsgSeq(f.msg0)));
                    if i != f.next {
                        let what = if i < f.next {
                            "delivered again or out of order"
                        } else {
                            "delivered with earlier messages neither delivered nor reported lost"
                        };
                        io.fail(
                            inv,
                            format!(
                                "channel {ci} ({:?}): message {i} (seq {msg}) {what}; next expected {}",
                                c.service, f.next
                            ),
                        );
                        return;
                    }
                    let Some(&len) = f.sent.get(i as usize) else {
                        io.fail(
                            inv,
                            format!("channel {ci}: message {i} delivered, never sent"),
                        );
                        return;
                    };
                    self.msg.resize(len, 0);
                    fill_message(rx_key, i, &mut self.msg);
                    if data != self.msg {
                        let at = data
                            .iter()
                            .zip(&self.msg)
                            .position(|(a, b)| a != b)
                            .unwrap_or(len.min(data.len()));
                        io.fail(
                            inv,
                            format!(
                                "channel {ci}: message {i} of {} bytes delivered with {} bytes, first difference at byte {at}",
                                len,
                                data.len()
                            ),
                        );
                        return;
                    }
                    f.next += 1;
                    f.delivered += 1;
                    f.bytes += len as u64;
                }
                Event::Lost { first, last } => {
                    let (a, b) = (
                        u64::from(first.since(MsgSeq(f.msg0))),
                        u64::from(last.since(MsgSeq(f.msg0))),
                    );
                    if reliable {
                        io.fail(
                            inv,
                            format!("channel {ci}: messages {a}..={b} reported lost"),
                        );
                        return;
                    }
                    if a != f.next || b < a || b as usize >= f.sent.len() {
                        io.fail(
                            inv,
                            format!(
                                "channel {ci}: loss of {a}..={b} reported; next expected {}, {} sent",
                                f.next,
                                f.sent.len()
                            ),
                        );
                        return;
                    }
                    f.lost += b - a + 1;
                    f.next = b + 1;
                }
            }
        }
    }

    /// Moves the messages whose time has come to the pending queue and sets the next.
    fn due(&mut self, ci: usize, now: Instant, io: &mut AppIo) {
        let c = &mut self.chans[ci];
        while let Some(&(t, len)) = c.schedule.get(c.next_scheduled) {
            if t > now {
                io.timer(t, (ci as u64) << 2 | T_MESSAGE);
                break;
            }
            c.pending.push_back(len);
            c.next_scheduled += 1;
        }
    }
}

impl App for TransportApp {
    fn start(&mut self, now: Instant, io: &mut AppIo) {
        for ci in 0..self.chans.len() {
            self.due(ci, now, io);
            self.pump(ci, now, io);
        }
    }

    fn on_sdu(&mut self, now: Instant, vc: VcId, sdu: &[u8], io: &mut AppIo) {
        let Some(ci) = self.chans.iter().position(|c| c.vc == vc) else {
            return;
        };
        let c = &mut self.chans[ci];
        let data = match Repr::parse(sdu) {
            Ok(Repr::Data { header, .. }) => Some(header),
            _ => None,
        };
        if let (Some(_), Service::Guaranteed { .. }) = (data, c.service)
            && now < self.phase_end
        {
            let w = (now.as_nanos() / RATE_WINDOW.as_nanos()) as usize;
            let mut l = self.ledger.borrow_mut();
            let cells = &mut l.flows[ci][1 - c.dir].rx_cells;
            if cells.len() <= w {
                cells.resize(w + 1, 0);
            }
            cells[w] += u64::from(frame_cells(sdu.len()));
        }
        let s0 = c.ep.stats();
        if c.ep.handle_tpdu(now, sdu).is_err() {
            self.ledger.borrow_mut().refused += 1;
        }
        let s1 = c.ep.stats();
        if c.service == Service::Reliable {
            // Invariant 5: the first loss SMART finds, before any timeout, halves.
            if !c.seen_loss && s1.smart_losses > 0 {
                c.seen_loss = true;
                if s0.timeouts == 0 && s1.ssthresh >= s0.ssthresh && s1.cwnd >= s0.cwnd {
                    io.fail(
                        "window halves on the first loss",
                        format!(
                            "channel {ci} direction {}: SMART found {} TPDUs lost, window {} → {}, threshold {} → {}",
                            c.dir, s1.smart_losses, s0.cwnd, s1.cwnd, s0.ssthresh, s1.ssthresh
                        ),
                    );
                }
            }
            // Invariant 4: a data TPDU taken in the window is acked at once, named.
            if let Some(h) = data
                && s1.beyond_window == s0.beyond_window
                && s1.refused == s0.refused
            {
                let mut named = false;
                while let Some(n) = c.ep.poll_transmit(now, &mut self.frame) {
                    let f = &self.frame[..n];
                    match Repr::parse(f) {
                        Ok(Repr::Ack(a)) => {
                            named |= a.trigger == Some(h.seq) && a.echo == h.tx;
                            io.send(c.vc, f);
                            c.in_adapter += 1;
                        }
                        _ => {
                            c.staged.push_back(f.to_vec());
                            break;
                        }
                    }
                }
                if !named {
                    io.fail(
                        "every TPDU acked naming it",
                        format!(
                            "channel {ci}: data TPDU {} (transmission {}) taken, no ack names it",
                            h.seq, h.tx
                        ),
                    );
                }
            }
        }
        self.pump(ci, now, io);
    }

    fn on_timer(&mut self, now: Instant, token: u64, io: &mut AppIo) {
        let ci = (token >> 2) as usize;
        if ci >= self.chans.len() {
            return;
        }
        match token & 3 {
            T_ENDPOINT => {
                let c = &mut self.chans[ci];
                if c.armed.is_some_and(|a| a <= now) {
                    c.armed = None;
                }
                if c.ep.poll_timeout().is_some_and(|t| t <= now) {
                    c.ep.handle_timeout(now);
                }
            }
            T_MESSAGE => self.due(ci, now, io),
            _ => {}
        }
        self.pump(ci, now, io);
    }

    fn on_sent(&mut self, now: Instant, vc: VcId, _len: usize, ok: bool, io: &mut AppIo) {
        let Some(ci) = self.chans.iter().position(|c| c.vc == vc) else {
            return;
        };
        let c = &mut self.chans[ci];
        c.in_adapter = c.in_adapter.saturating_sub(1);
        if !ok {
            self.ledger.borrow_mut().sends_failed += 1;
        }
        self.pump(ci, now, io);
    }
}

/// Per service: what a run's channels did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceCounts {
    /// Channels.
    pub channels: u64,
    /// Messages accepted by the senders.
    pub sent: u64,
    /// Messages delivered.
    pub delivered: u64,
    /// Messages reported lost.
    pub lost: u64,
    /// Bytes delivered.
    pub bytes: u64,
}

/// What a transport run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TransportReport {
    /// The seed.
    pub seed: u64,
    /// The world's digest of every event.
    pub digest: u64,
    /// Virtual time at the end.
    pub end: Instant,
    /// From the end of the phase until every message was accounted for.
    pub settle: Duration,
    /// Reliable, best effort, guaranteed.
    pub services: [ServiceCounts; 3],
    /// Faults in the plan.
    pub faults: usize,
    /// TPDUs resent (SMART, timeout) and loss probes, all reliable endpoints.
    pub resends: (u64, u64, u64),
    /// Retransmission timeouts and window halvings.
    pub timeouts: u64,
    /// Window halvings.
    pub halvings: u64,
    /// Frames the endpoints refused.
    pub refused: u64,
    /// Guaranteed rate windows checked, and the largest deviation seen (fraction of the
    /// expected cells).
    pub rate_windows: u64,
    /// The largest deviation of a checked window from the rate, fraction of its cells.
    pub worst_rate: f64,
    /// The world's cell events.
    pub cell_events: u64,
    /// Wall-clock time.
    pub wall: std::time::Duration,
}

impl TransportReport {
    /// The report as `natm sim run --transport` prints it.
    pub fn table(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(
            t,
            "ok: every transport invariant held; {} faults, settled {:.1} ms after the phase",
            self.faults,
            self.settle.as_nanos() as f64 / 1e6
        );
        for (name, s) in ["reliable", "best effort", "guaranteed"]
            .iter()
            .zip(&self.services)
        {
            let _ = writeln!(
                t,
                "{name:<12} {} channels: {} messages sent, {} delivered ({} bytes), {} reported lost",
                s.channels, s.sent, s.delivered, s.bytes, s.lost
            );
        }
        let _ = writeln!(
            t,
            "reliable: {} SMART resends, {} timeout resends, {} probes, {} timeouts, {} halvings; {} frames refused",
            self.resends.0,
            self.resends.1,
            self.resends.2,
            self.timeouts,
            self.halvings,
            self.refused
        );
        let _ = writeln!(
            t,
            "guaranteed: {} rate windows checked, worst {:.2} % off the rate",
            self.rate_windows,
            self.worst_rate * 100.0
        );
        let _ = writeln!(
            t,
            "virtual time {:.3} s, {} cell events",
            self.end.as_nanos() as f64 / 1e9,
            self.cell_events
        );
        let _ = writeln!(t, "digest {:016x}", self.digest);
        let _ = writeln!(t, "wall {:.3} s", self.wall.as_secs_f64());
        t
    }

    /// The report as JSON.
    pub fn json(&self) -> serde_json::Value {
        let svc = |s: &ServiceCounts| {
            serde_json::json!({
                "channels": s.channels, "sent": s.sent, "delivered": s.delivered,
                "lost": s.lost, "bytes": s.bytes,
            })
        };
        serde_json::json!({
            "seed": self.seed,
            "ok": true,
            "digest": format!("{:016x}", self.digest),
            "virtual_ns": self.end.as_nanos(),
            "settle_ns": self.settle.as_nanos(),
            "faults": self.faults,
            "reliable": svc(&self.services[0]),
            "best_effort": svc(&self.services[1]),
            "guaranteed": svc(&self.services[2]),
            "smart_resends": self.resends.0,
            "timeout_resends": self.resends.1,
            "probes": self.resends.2,
            "timeouts": self.timeouts,
            "halvings": self.halvings,
            "refused": self.refused,
            "rate_windows": self.rate_windows,
            "worst_rate": self.worst_rate,
            "cell_events": self.cell_events,
            "wall_s": self.wall.as_secs_f64(),
        })
    }
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
        let qos: Qos = match ch.config.service {
            Service::Guaranteed { rate } => format!("cbr:pcr={}", u64::from(rate) * 5 / 4),
            _ => "ubr".to_string(),
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
        let burst = f64::from((X_MAX + 1) * tpdu_cells(ch.config.tpdu_size));
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
            let want = plan.channels[ci].messages[dir].len()
                + usize::from(f.service != Some(Service::Reliable));
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
    // Every best effort and guaranteed direction sends one message after the phase: it
    // arrives (no fault then), so whatever was lost before it is reported.
    let mut plan_run = plan.clone();
    for ch in &mut plan_run.channels {
        if ch.config.service != Service::Reliable {
            for list in &mut ch.messages {
                list.push((at(PHASE.as_nanos() + 5_000_000), 100));
            }
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
        report.halvings += s.window_halvings;
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
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into());
        Err(Violation {
            at: Instant::ZERO,
            seq: 0,
            invariant: "no panic",
            detail: format!("a core or the driver panicked: {msg}"),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn one_channel(service: Service) -> TransportPlan {
        let mut config = Config {
            service,
            tpdu_size: 1500,
            ..Config::default()
        };
        config.recv_buffer = config.tpdus_of(config.max_message) as u32;
        TransportPlan {
            channels: vec![ChannelPlan {
                config,
                isn: [Isn { seq: 5, msg: 9 }, Isn { seq: 70, msg: 3 }],
                messages: [Vec::new(), Vec::new()],
            }],
            faults: Vec::new(),
        }
    }

    /// Host h2's app takes `messages` from an h1 endpoint (acks carried back), the ledger
    /// saying `sent` were sent: the first failure its oracles report, and the ledger.
    fn deliver(
        service: Service,
        sent: &[usize],
        messages: &[Vec<u8>],
    ) -> (Option<(&'static str, String)>, Shared) {
        let plan = one_channel(service);
        let ledger = new_ledger(&plan);
        ledger.borrow_mut().flows[0][0].sent = sent.to_vec();
        let mut app = TransportApp::new(1, &plan, ledger.clone());
        let ch = &plan.channels[0];
        let mut tx = Endpoint::new(ch.config, ch.isn[0], ch.isn[1]).unwrap();
        let now = Instant::ZERO;
        for m in messages {
            tx.send_message(now, m).unwrap();
        }
        let (mut io, mut buf) = (AppIo::new(), vec![0; ch.config.max_frame_len()]);
        let vc = app.chans[0].vc;
        loop {
            let mut moved = false;
            while let Some(n) = tx.poll_transmit(now, &mut buf) {
                app.on_sdu(now, vc, &buf[..n], &mut io);
                if let Some(f) = io.take_failure() {
                    return (Some(f), ledger);
                }
                moved = true;
            }
            let back: Vec<Vec<u8>> = io.sends().map(|(_, b)| b.to_vec()).collect();
            io.clear();
            for b in back {
                tx.handle_tpdu(now, &b).unwrap();
                moved = true;
            }
            if !moved {
                return (None, ledger);
            }
        }
    }

    fn message(key: u64, i: u64, len: usize) -> Vec<u8> {
        let mut m = vec![0; len];
        fill_message(key, i, &mut m);
        m
    }

    #[test]
    fn messages_as_sent_pass_the_oracles() {
        let key = flow_key(0, 0);
        for service in [Service::Reliable, Service::BestEffort] {
            let lens = [1, 4000, 20_000];
            let msgs: Vec<_> = (0..3).map(|i| message(key, i, lens[i as usize])).collect();
            let (fail, ledger) = deliver(service, &lens, &msgs);
            assert_eq!(fail, None, "{service:?}");
            let l = ledger.borrow();
            assert_eq!((l.flows[0][0].delivered, l.flows[0][0].next), (3, 3));
            assert_eq!(l.flows[0][0].bytes, 24_001);
        }
    }

    #[test]
    fn a_changed_byte_is_caught_on_every_service() {
        let key = flow_key(0, 0);
        for (service, inv) in [
            (Service::Reliable, "reliable in order, exactly once"),
            (Service::BestEffort, "best effort intact, losses reported"),
            (
                Service::Guaranteed { rate: 100_000 },
                "best effort intact, losses reported",
            ),
        ] {
            let mut m = message(key, 0, 3000);
            m[2000] ^= 4;
            let (fail, _) = deliver(service, &[3000], &[m]);
            let (got, detail) = fail.expect("caught");
            assert_eq!(got, inv);
            assert!(detail.contains("first difference at byte 2000"), "{detail}");
        }
    }

    #[test]
    fn a_message_never_sent_or_another_messages_bytes_are_caught() {
        let key = flow_key(0, 0);
        // The ledger knows of one message; the endpoint hands up two.
        let msgs = vec![message(key, 0, 10), message(key, 1, 10)];
        let (fail, _) = deliver(Service::BestEffort, &[10], &msgs);
        assert!(fail.expect("caught").1.contains("never sent"));
        // Message 1's bytes as message 0.
        let (fail, _) = deliver(Service::Reliable, &[10], &[message(key, 1, 10)]);
        assert_eq!(fail.expect("caught").0, "reliable in order, exactly once");
    }

    fn rate_ledger(plan: &TransportPlan, cells: u64) -> Ledger {
        let mut l = Ledger::default();
        let windows = (PHASE.as_nanos() / RATE_WINDOW.as_nanos()) as usize;
        l.flows = plan
            .channels
            .iter()
            .map(|_| {
                [0, 1].map(|_| Flow {
                    rx_cells: vec![cells; windows],
                    ..Flow::default()
                })
            })
            .collect();
        l
    }

    #[test]
    fn the_rate_check_holds_within_the_bucket_and_skips_faults_and_idle_senders() {
        let plan = one_channel(Service::Guaranteed { rate: 25_000 });
        // 1,000 cells per 40 ms window; the tolerance is 7 TPDUs of 32 cells and 2 %.
        let want = 1_000;
        // Windows 40–80 ms … 240–280 ms: after RATE_SKIP, within the phase.
        let all = 6;
        let (n, worst) = check_rates(&plan, &rate_ledger(&plan, want)).unwrap();
        assert_eq!((n, worst), (2 * all, 0.0));
        // A window off by a bucket's burst passes if its neighbours make up for it.
        let mut l = rate_ledger(&plan, want);
        for (k, c) in l.flows[0][1].rx_cells.iter_mut().enumerate() {
            *c = if k % 2 == 0 { want + 240 } else { want - 240 };
        }
        let (_, worst) = check_rates(&plan, &l).unwrap();
        assert!((worst - 0.24).abs() < 1e-9, "{worst}");
        let e = check_rates(&plan, &rate_ledger(&plan, want - 250)).unwrap_err();
        assert!(e.contains("750 cells in 40 ms from 40 ms"), "{e}");
        // 10 % over in every window: each passes, their run (6,600 cells) does not.
        let e = check_rates(&plan, &rate_ledger(&plan, want + 100)).unwrap_err();
        assert!(e.contains("6600 cells in 240 ms from 40 ms"), "{e}");
        // A sender that stops sending is seen: windows with nothing received count.
        let mut l = rate_ledger(&plan, want);
        l.flows[0][0].rx_cells.truncate(4);
        let e = check_rates(&plan, &l).unwrap_err();
        assert!(e.contains("0 cells in 40 ms from 160 ms"), "{e}");
        // A fault over the whole phase: nothing is checked.
        let mut faulty = plan.clone();
        faulty.faults.push(Fault {
            at: Duration::ZERO,
            length: PHASE,
            kind: FaultKind::LinkDown { link: 1 },
        });
        assert_eq!(check_rates(&faulty, &rate_ledger(&plan, 0)).unwrap().0, 0);
        // A sender idle at 100 ms: its window (80–120 ms) is not checked.
        let mut l = rate_ledger(&plan, want);
        l.flows[0][0].idle.push(100_000_000);
        l.flows[0][0].rx_cells[2] = 0;
        let (n, _) = check_rates(&plan, &l).unwrap();
        assert_eq!(n, 2 * all - 1);
    }

    #[test]
    fn plans_are_valid_and_the_seed_decides_them() {
        for seed in 0..100 {
            let p = TransportPlan::draw(seed);
            assert_eq!(p, TransportPlan::draw(seed));
            for c in &p.channels {
                assert_eq!(c.config.validate(), Ok(()));
                for list in &c.messages {
                    assert!(
                        list.iter()
                            .all(|m| m.1 <= MAX_MESSAGE && m.0.as_nanos() < PHASE.as_nanos())
                    );
                }
            }
            for f in &p.faults {
                assert!(f.at.as_nanos() + f.length.as_nanos() <= PHASE.as_nanos());
            }
        }
    }
}

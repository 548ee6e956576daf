//! natm's switch daemon (issue 5): the pure switch core, [`natm_switch::Switch`], between
//! real links, with a management socket.
//!
//! # What it does
//!
//! [`run`] reads nothing itself: it takes a parsed [`SwitchdConfig`] (see [`config`] for
//! the TOML) and a stop flag. It listens on every port's link ([`natm_link::endpoint`];
//! a port with `role = "connect"` dials instead, from a helper thread), makes the
//! configured cross-connects, and then, on one thread, moves batches of cells
//! ([`fabric`]): receive from every attached link, hand the cells to the switch, send what
//! the switch transmits, keeping cells a link refused. A port is down (the switch sends
//! AIS downstream on its connections) until a peer attaches, and down again when the peer
//! goes away; the next peer to connect brings it up again.
//!
//! When nothing moves, the loop spins for [`SPIN`] and then, after a step that moved
//! nothing (so every shared-memory peer knows to kick, see natm-nic's [`Idler`]) and one more with
//! the links announcing the sleep (while it spins they announce nothing, so a busy peer
//! publishes without an eventfd write), sleeps in
//! `poll(2)` on the
//! links' descriptors, the listeners and the management socket, at most until the
//! switch's next timer (a paced port's next slot, the next AIS cell), a link's
//! [`next_due`](natm_link::endpoint::EndpointLink::next_due), or [`MAX_SLEEP`] (so a
//! shared-memory peer's death, which no descriptor reports, is noticed within it).
//! A port's listener stays open after its host attached: a later connection to it is a
//! [lane request](natm_link::lane) (an application's own rings for some of the port's
//! VCs, asked for by the host's daemon), answered within the next loop pass; one that
//! sends nothing within a second is closed.
//!
//! While it spins it yields the CPU after every pass that found nothing and every 20 µs of
//! busy ones ([`GiveWay`](natm_nic::sched::GiveWay)): traffic that keeps coming
//! keeps the switch spinning, and a thread woken on its CPU (a host's daemon, an
//! application) would otherwise wait for the switch's whole time slice. A switch pinned
//! with `cpu = N` was given its CPU and does not yield.
//!
//! `wait = "poll"` at the top level of the configuration never sleeps. `run` returns when
//! the stop flag is set (by [`install_signal_stop`]'s SIGTERM/SIGINT handler or a
//! `shutdown` request) and removes its socket files.
//!
//! # Management protocol
//!
//! A Unix stream socket at `management`; only the daemon's own uid or root may connect
//! (SO_PEERCRED). Each request is one JSON object on one line and gets one JSON line back,
//! in order. The messages are types of [`natm_proto::switchd`] (its docs have the details):
//! a [`Request`](natm_proto::switchd::Request) names its operation in `"op"`; every
//! [`Response`](natm_proto::switchd::Response) has `"ok"` and `"op"`. A line that is not
//! JSON, has no `"op"`, an unknown one or a bad field gets
//! `{"ok":false,"op":"error","kind":"…","error":"…"}` naming it (a typed
//! [`Refusal`](natm_proto::switchd::Refusal)), and the connection stays usable.
//!
//! * `{"op":"status"}` → `{"ok":true,"op":"status","name","pid","uptime_s","memory"`
//!   (VmRSS, bytes)`,"state_bytes_per_connection","capture_overflow","ports":[…],
//!   "connections":[…]}` ([`SwitchStatus`](natm_proto::switchd::SwitchStatus)). A port:
//!   `id`, `link` (its description), `up`, `attached`, `counters` (the switch's per-port
//!   counters by name, with `dropped`), `queue_depth` (`{"cbr","rt-vbr","nrt-vbr","ubr"}`),
//!   `link_counters` (or null), `link_warning` (present when the link said at setup that
//!   it may lose cells, e.g. UDP socket buffers too small for its rate), `held` (cells the
//!   link refused so far), `connects`,
//!   `disconnects`, `tx_lost`, `last_error`, `lanes` (each `{"vcs","rx","tx","dropped",
//!   "paused","held"}`), `lanes_attached`, `lanes_removed`, `lane_refused`, `lane_dropped`,
//!   `held_dropped`. A connection: `id` (`"SLOT.GENERATION"`), `a`, `b`, `qos` (qos(7)
//!   text), `category`, `upc`, `aal5`, `weight`, and `a_to_b` / `b_to_a` each
//!   `{"cells_in","cells_out","dropped","tagged","queued"}`.
//! * `{"op":"connect","a":"1:0.101","b":"2:0.101","qos":"cbr:pcr=1000"}`, optionally
//!   with `"upc"`, `"aal5"`, `"weight"`, `"category"` as in the configuration →
//!   `{"ok":true,"op":"connected","id":"3.1"}` or an error (a CAC refusal's text
//!   included, kind `refused`).
//! * `{"op":"disconnect","id":"3.1"}` → `{"ok":true,"op":"disconnected"}` or an error.
//! * `{"op":"capture","port":1,"vc":"0.100"}` (`vc` optional) →
//!   `{"ok":true,"op":"capturing","capturing":1}` and then one line per cell seen on that
//!   port in either direction, `{"t_ns":…,"dir":"in"|"out","cell":"<106 hex digits>"}`
//!   (`t_ns` since the Unix epoch), until the client closes the connection. A client that
//!   reads too slowly loses lines.
//! * `{"op":"shutdown"}` → `{"ok":true,"op":"shutting_down"}`, and the daemon stops.
//!
//! [`client`] has the client side. The forwarding loop's benchmarks (end to end with host
//! threads, and the loop alone in bursts) drive [`fabric::Fabric`] from natm-bench's
//! `forwarding` module.
//!
//! # Signalling (switched VCs)
//!
//! With a top-level `prefix`, the switch signals: every port with `signalling =
//! "network"` or `"user"` ends VC 0.5 in the switch core (`PortConfig::signalling`) and
//! is a port of the switch's [`natm_calls::CallControl`] on that side, with the
//! `[[route]]`s as its routes and the switch's name at the head of each refusal's
//! explanation. The fabric's step runs call control when the switch holds signalling
//! cells or call control's timers are due (one check per step otherwise), and the loop's
//! sleep ends at those timers; a link attached to a signalling port brings the port up
//! there (fresh SAAL, RESTART once it is up), a link that goes clears the port's calls.
//! Call control's log lines (refusals with their full text, ports cleared) go to stderr
//! as `natm switchd NAME: …`. `status` fills `signalling`: the prefix, counts, the state
//! bytes per call, each signalling port and at most [`mgmt::CALLS_LISTED`] calls.
//!
//! What it is not: no persistence of connections made over the socket, no per-port UDP
//! peer detection (a UDP port is up from the start).

pub mod client;
pub mod config;
pub mod fabric;
pub mod mgmt;

use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant as StdInstant};

use natm_link::endpoint::{EndpointLink, LinkConfig, LinkListener, LinkSetupError};
use natm_link::lane;
use natm_link::shm::{ShmHandover, ShmLink, Side, SpliceWord};
use natm_nic::sched::{Idler, Next};
use natm_switch::{PortId, SwitchConfig, SwitchError};
use rustix::event::{PollFd, PollFlags, Timespec, poll};

pub use config::{ConfigError, Role, SwitchdConfig};
use fabric::Fabric;
use mgmt::{DaemonInfo, Management, MgmtError};
pub use natm_core::IdleWait;

/// How long the loop spins with nothing to do before it sleeps.
pub use natm_nic::sched::SPIN;
/// The longest sleep.
pub const MAX_SLEEP: Duration = Duration::from_millis(20);
/// How often listeners, dialers and the management socket are looked at while busy.
const MAINTENANCE: Duration = Duration::from_millis(1);
/// The longest sleep while a link holds cells it refused, or has no descriptor.
const SHORT_SLEEP: Duration = Duration::from_micros(200);
/// How long a dialer waits per connection attempt.
const DIAL: Duration = Duration::from_millis(200);

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum SwitchdError {
    /// The switch refused a port.
    #[error("port {port}: {source}")]
    Port {
        /// The port.
        port: PortId,
        /// Why.
        source: SwitchError,
    },
    /// A port's link could not listen.
    #[error("port {port}: {source}")]
    Link {
        /// The port.
        port: PortId,
        /// Why.
        source: LinkSetupError,
    },
    /// A configured cross-connect was refused.
    #[error("xc {index} ({a} - {b}): {source}")]
    Xc {
        /// 1-based, in file order.
        index: usize,
        /// End a.
        a: String,
        /// End b.
        b: String,
        /// Why.
        source: SwitchError,
    },
    /// `cpu = N` could not be applied.
    #[error("cpu = {0}: cannot pin the switch there: {1}")]
    Cpu(usize, String),
    /// The management socket could not be opened.
    #[error(transparent)]
    Management(#[from] MgmtError),
    /// `poll(2)` failed.
    #[error("poll: {0}")]
    Poll(std::io::Error),
}

/// Makes SIGTERM and SIGINT set `stop` (for the CLI; [`run`] returns soon after).
pub fn install_signal_stop(stop: &Arc<AtomicBool>) -> std::io::Result<()> {
    signal_hook::flag::register(signal_hook::consts::SIGTERM, stop.clone())?;
    signal_hook::flag::register(signal_hook::consts::SIGINT, stop.clone())?;
    Ok(())
}

/// A port's way of getting a link.
enum Source {
    Listen(LinkListener),
    /// A dialer thread sends the link when it has one.
    Dial {
        config: LinkConfig,
        pending: Option<mpsc::Receiver<Box<dyn EndpointLink>>>,
    },
}

/// Starts a thread that dials until it has a link or `halt` is set (it ends by itself).
fn dial(config: LinkConfig, halt: Arc<AtomicBool>) -> mpsc::Receiver<Box<dyn EndpointLink>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        while !halt.load(Ordering::Acquire) {
            match config.connect(DIAL) {
                Ok(link) => {
                    let _ = tx.send(link);
                    return;
                }
                Err(_) => std::thread::sleep(DIAL / 4),
            }
        }
    });
    rx
}

/// Runs the switch daemon until `stop` is set. See the [crate documentation](self).
pub fn run(config: SwitchdConfig, stop: Arc<AtomicBool>) -> Result<(), SwitchdError> {
    let started = StdInstant::now();
    let halt = Arc::new(AtomicBool::new(false));
    let result = serve(&config, &stop, &halt, started);
    halt.store(true, Ordering::Release);
    result
}

fn serve(
    config: &SwitchdConfig,
    stop: &Arc<AtomicBool>,
    halt: &Arc<AtomicBool>,
    started: StdInstant,
) -> Result<(), SwitchdError> {
    if let Some(cpu) = config.cpu {
        let mut set = rustix::thread::CpuSet::new();
        if cpu >= rustix::thread::CpuSet::MAX_CPU {
            return Err(SwitchdError::Cpu(
                cpu,
                "beyond the largest CPU number".into(),
            ));
        }
        set.set(cpu);
        rustix::thread::sched_setaffinity(None, &set)
            .map_err(|e| SwitchdError::Cpu(cpu, e.to_string()))?;
    }
    // A rated port's slots are timed sleeps: the default 50 µs of timer slack would add
    // up to that to every paced cell, a CBR cell included, whenever the port is busy.
    // Failing only costs that precision.
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
    let mut fabric = Fabric::new(SwitchConfig::default());
    let mut sources = Vec::new();
    let mut links = Vec::new();
    let mut calls = config.prefix.map(|prefix| call_control(config, prefix));
    for p in &config.ports {
        let mut port = p.switch;
        port.signalling = calls.is_some() && p.signalling.is_some();
        fabric
            .add_port(p.id, port)
            .map_err(|source| SwitchdError::Port { port: p.id, source })?;
        if let (Some(cc), Some(side)) = (calls.as_mut(), p.signalling) {
            let side = match side {
                config::SigSide::Network => natm_calls::Side::Network,
                config::SigSide::User => natm_calls::Side::User,
            };
            let now = fabric.now();
            // Each port is added once: it cannot exist in call control already.
            let _ = cc.add_port(now, p.id, side);
        }
        links.push((p.id, p.link.describe()));
        // The switch core paces a rated port at the line rate: its slots are the line's.
        // A line emulator with the same rate behind it would queue every late slot's cells
        // again, in one FIFO for every class, and keep that queue while the port is busy
        // (CBR cells waited milliseconds behind UBR there); it keeps only the impairments.
        let mut line = p.link.clone();
        line.rate = natm_core::LineRate::Unlimited;
        sources.push(match p.role {
            Role::Listen => Source::Listen(
                line.listen()
                    .map_err(|source| SwitchdError::Link { port: p.id, source })?,
            ),
            Role::Connect => Source::Dial {
                config: line,
                pending: None,
            },
        });
    }
    for (i, xc) in config.xcs.iter().enumerate() {
        let now = fabric.now();
        fabric
            .switch
            .connect(now, xc)
            .map_err(|source| SwitchdError::Xc {
                index: i + 1,
                a: xc.a.to_string(),
                b: xc.b.to_string(),
                source,
            })?;
    }
    if let Some(cc) = calls {
        fabric.enable_calls(cc);
    }
    let mut mgmt = Management::bind(&config.management, &fabric)?;
    let info = DaemonInfo {
        name: &config.name,
        started,
        links: &links,
        stop,
    };
    // A switch pinned to a CPU was given that CPU: it does not give way.
    let mut idle = Idler::new(config.wait, StdInstant::now(), config.cpu.is_none());
    let mut pending_lanes: Vec<PendingLane> = Vec::new();
    // Links announce a sleep only in the step before one (see below).
    fabric.set_spinning(true);
    let mut last_maintenance: Option<StdInstant> = None;
    while !stop.load(Ordering::Acquire) {
        let now = fabric.now();
        let step = fabric.step(now);
        if let Some(cc) = fabric.calls.as_mut() {
            while let Some(line) = cc.poll_log() {
                eprintln!("natm switchd {}: {line}", config.name);
            }
        }
        let holding = step.holding;
        let wall = fabric.to_std(now);
        // A rated port's paced bursts are no reason to spin: the sleep's deadlines cover
        // them (spinning after each kept the loop awake at every burst).
        let mut moved = step.received + step.sent > step.sent_paced;
        if last_maintenance.is_none_or(|t| wall.saturating_duration_since(t) >= MAINTENANCE) {
            last_maintenance = Some(wall);
            moved |= attach_new_links(&mut fabric, &mut sources, halt);
            moved |= attach_new_lanes(&mut fabric, &mut sources, &mut pending_lanes);
            moved |= fabric.watch_splices();
            moved |= mgmt.service(&mut fabric, &info);
        }
        // The time read after the step serves here (maintenance is rare and short).
        if idle.after_pass(moved, StdInstant::now()) == Next::Again {
            continue;
        }
        // One more step with the links announcing: only it tells the peers to kick.
        fabric.set_spinning(false);
        let now = fabric.now();
        let arming = fabric.step(now);
        if arming.received + arming.sent > arming.sent_paced {
            fabric.set_spinning(true);
            idle.busy(StdInstant::now());
            continue;
        }
        let maintain = sleep(
            &fabric,
            &sources,
            &mgmt,
            &pending_lanes,
            holding || arming.holding,
        )
        .map_err(SwitchdError::Poll)?;
        idle.slept(StdInstant::now());
        fabric.set_spinning(true);
        // Woken by a listener, a client or a deadline: look at everything once. (Woken by
        // cells only, maintenance keeps its period: an empty listener's accept4 allocates
        // and frees a socket, which cost a call-heavy switch several µs per wake-up.)
        if maintain {
            last_maintenance = None;
        }
    }
    Ok(())
}

/// How long a connection to a port that has its link may take to send its lane request.
const LANE_REQUEST_WAIT: Duration = Duration::from_secs(1);
/// The most such connections waiting at once; more are closed at once.
const MAX_PENDING_LANES: usize = 64;

/// A connection to a port with a link, expected to send a lane request.
struct PendingLane {
    port: usize,
    stream: UnixStream,
    since: StdInstant,
}

/// Takes lane requests: accepts connections on the listeners of ports that have their
/// link, reads each one's request, and attaches the lane or answers why not. A
/// connection that sends nothing within [`LANE_REQUEST_WAIT`] is closed. Whether
/// anything happened.
fn attach_new_lanes(
    fabric: &mut Fabric,
    sources: &mut [Source],
    pending: &mut Vec<PendingLane>,
) -> bool {
    let mut any = false;
    for (i, source) in sources.iter_mut().enumerate() {
        let Source::Listen(l) = source else { continue };
        if fabric.ports[i].link.is_none() {
            continue;
        }
        while let Ok(Some(stream)) = l.accept_lane() {
            any = true;
            if pending.len() >= MAX_PENDING_LANES {
                // Closed unanswered: whoever opens this many and sends nothing is not hostd.
                drop(stream);
                continue;
            }
            pending.push(PendingLane {
                port: i,
                stream,
                since: StdInstant::now(),
            });
        }
    }
    let mut k = 0;
    while k < pending.len() {
        let pl = &pending[k];
        let got = lane::try_recv_request(&pl.stream);
        let expired = pl.since.elapsed() >= LANE_REQUEST_WAIT;
        match got {
            Ok(None) if !expired => {
                k += 1;
                continue;
            }
            Ok(None) => {}
            Ok(Some(req)) => {
                any = true;
                let pl = pending.swap_remove(k);
                match take_lane(fabric, pl.port, req, &pl.stream) {
                    Ok(None) => {
                        let _ = lane::send_reply(&pl.stream, Ok(()));
                    }
                    Ok(Some((side, label, handover))) => {
                        // Should the requester be gone already, its socket's end is seen
                        // by `watch_splices`, which takes the side back.
                        let _ = lane::send_splice(&pl.stream, side, label, &handover);
                    }
                    Err(why) => {
                        let _ = lane::send_reply(&pl.stream, Err(&why));
                        fabric.ports[pl.port].stats.last_error =
                            Some(format!("lane refused: {why}"));
                    }
                }
                continue;
            }
            Err(e) => {
                let _ = lane::send_reply(&pl.stream, Err(&e.to_string()));
            }
        }
        pending.swap_remove(k);
    }
    any
}

/// Opens and attaches one requested lane, or splices it with the lane at the other end of
/// its cross-connect (natm-link's `lane` module): `Some` with the side to hand over, its
/// label and descriptors. A request for a region that is spliced is a holder's hostd asking
/// again ([`Fabric::rejoin`]): taken, nothing served. The refusal's reason.
fn take_lane(
    fabric: &mut Fabric,
    port: usize,
    req: lane::LaneRequest,
    stream: &UnixStream,
) -> Result<Option<(Side, lane::LaneVc, ShmHandover)>, String> {
    let Ok([vc]) = <[lane::LaneVc; 1]>::try_from(&req.vcs[..]) else {
        let watch = stream.try_clone().map_err(|e| format!("dup: {e}"))?;
        let weight = req.weight;
        let (vcs, link) = req.open(watch).map_err(|e| e.to_string())?;
        fabric.ports[port].add_lane(vcs, weight, Box::new(link))?;
        return Ok(None);
    };
    if req.may_splice
        && let Some(spliced) = fabric.splice(port, vc, stream)
    {
        return Ok(Some(spliced));
    }
    let side_b = ShmLink::dup_handover(&req.handover).map_err(|e| e.to_string())?;
    let watch = stream.try_clone().map_err(|e| format!("dup: {e}"))?;
    let weight = req.weight;
    let (vcs, link) = req.open(watch).map_err(|e| e.to_string())?;
    let keep = fabric::SpliceKeep::new(
        side_b,
        link.splice_word(),
        Side::B,
        vc,
        Some(stream.try_clone().map_err(|e| format!("dup: {e}"))?),
    )?;
    if keep.word.bits() & SpliceWord::HELD_B != 0
        || fabric.splices.iter().any(|s| s.region == keep.region)
    {
        // Not served: the link opened on it goes unused.
        fabric.rejoin(port, vc, &keep.side_b, stream)?;
        return Ok(None);
    }
    fabric.ports[port].add_lane_kept(vcs, weight, Box::new(link), Some(keep))?;
    Ok(None)
}

/// Takes links from listeners and dialers for ports without one; whether any came.
fn attach_new_links(fabric: &mut Fabric, sources: &mut [Source], halt: &Arc<AtomicBool>) -> bool {
    let mut any = false;
    for (i, source) in sources.iter_mut().enumerate() {
        if fabric.ports[i].link.is_some() {
            continue;
        }
        let link = match source {
            Source::Listen(l) => match l.accept(Some(Duration::ZERO)) {
                Ok(link) => link,
                Err(e) => {
                    fabric.ports[i].stats.last_error = Some(e.to_string());
                    None
                }
            },
            Source::Dial { config, pending } => {
                let rx = pending.get_or_insert_with(|| dial(config.clone(), halt.clone()));
                match rx.try_recv() {
                    Ok(link) => {
                        *pending = None;
                        Some(link)
                    }
                    Err(mpsc::TryRecvError::Empty) => None,
                    Err(mpsc::TryRecvError::Disconnected) => {
                        *pending = None;
                        None
                    }
                }
            }
        };
        if let Some(link) = link {
            if let Some(w) = link.setup_warning() {
                eprintln!("natm switchd: port {}: {w}", fabric.ports[i].id.0);
            }
            fabric.attach(i, link);
            any = true;
        }
    }
    any
}

/// The call control of a switch with `prefix`: the configuration's name and routes. Its
/// SSCOPs start at an N(SQ) taken from the clock, so that a peer still established with
/// this switch's previous run re-establishes (it takes a BGN with the N(SQ) it saw last
/// for a retransmission).
fn call_control(
    config: &SwitchdConfig,
    prefix: natm_core::addr::AesaPrefix,
) -> natm_calls::CallControl {
    let mut c = natm_calls::Config::new(config.name.clone(), prefix);
    c.routes = config
        .routes
        .iter()
        .map(|r| natm_calls::Route {
            prefix: r.prefix,
            port: r.port,
        })
        .collect();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    c.sscop.first_sq = (nanos >> 10) as u8;
    natm_calls::CallControl::new(c)
}

/// Sleeps in `poll(2)` until a descriptor is ready or the next deadline; whether the
/// listeners, dialers, pending lanes or management want looking at (one of theirs is
/// ready, or the sleep ended at a deadline), rather than only links and lanes.
fn sleep(
    fabric: &Fabric,
    sources: &[Source],
    mgmt: &Management,
    pending_lanes: &[PendingLane],
    holding: bool,
) -> std::io::Result<bool> {
    let now = StdInstant::now();
    let mut until = now + MAX_SLEEP;
    let mut cap = |t: StdInstant| until = until.min(t);
    // Rated ports' slots: a burst's at once, as the hosts' emulated lines hand theirs over.
    if let Some(t) = fabric.switch.poll_timeout_within(fabric::BURST_WINDOW) {
        cap(fabric.to_std(t));
    }
    // Call control's timers (SSCOP's and Q.2931's).
    if let Some(t) = fabric.calls_due() {
        cap(fabric.to_std(t));
    }
    if holding || mgmt.has_output() {
        cap(now + SHORT_SLEEP);
    }
    let mut fds: Vec<PollFd<'_>> = Vec::new();
    // Where the descriptors of what maintenance serves start: each port's listener is
    // pushed after its links' (and marked), the rest come last.
    let mut maintained: Vec<usize> = Vec::new();
    for (p, source) in fabric.ports.iter().zip(sources) {
        match (&p.link, source) {
            (Some(link), _) => {
                if let Some(t) = link.next_due() {
                    cap(t);
                }
                // Lanes held back by the port's input line are read at its deadline, not
                // when they turn readable (they are readable all along); so is the main
                // link, which shares the line with them (a kick it had before it was held
                // back would keep its descriptor readable, and this loop spinning).
                let input_due = p.input_due();
                if let Some(t) = input_due {
                    cap(fabric.to_std(t));
                }
                match link.poll_fd() {
                    Some(_) if input_due.is_some() => {}
                    Some(fd) => fds.push(PollFd::from_borrowed_fd(fd, PollFlags::IN)),
                    None => cap(now + SHORT_SLEEP),
                }
                // Lanes: cells from their applications, or room they made. A paused lane
                // is not read, so its descriptor (never drained) is not waited on: the lane
                // it feeds making room is what ends the pause.
                let waited =
                    |l: &&fabric::Lane| (!l.paused() && input_due.is_none()) || l.held() > 0;
                for lane in p.lanes.iter().filter(waited) {
                    match lane.link.poll_fd() {
                        Some(fd) => fds.push(PollFd::from_borrowed_fd(fd, PollFlags::IN)),
                        None => cap(now + SHORT_SLEEP),
                    }
                }
                // A lane request may come on the port's listener.
                if let Source::Listen(l) = source
                    && let Some(fd) = l.poll_fd()
                {
                    maintained.push(fds.len());
                    fds.push(PollFd::from_borrowed_fd(fd, PollFlags::IN));
                }
            }
            (None, Source::Listen(l)) => match l.poll_fd() {
                Some(fd) => {
                    maintained.push(fds.len());
                    fds.push(PollFd::from_borrowed_fd(fd, PollFlags::IN));
                }
                None => cap(now + MAINTENANCE),
            },
            (None, Source::Dial { .. }) => cap(now + MAINTENANCE * 5),
        }
    }
    let rest = fds.len();
    // A spliced side's holder closing its socket: the switch takes the side back.
    for s in &fabric.splices {
        for sock in s.holders.iter().filter_map(|h| h.sock.as_ref()) {
            fds.push(PollFd::new(sock, PollFlags::IN));
        }
    }
    for pl in pending_lanes {
        fds.push(PollFd::new(&pl.stream, PollFlags::IN));
        cap(pl.since + LANE_REQUEST_WAIT);
    }
    for fd in mgmt.poll_fds() {
        fds.push(PollFd::from_borrowed_fd(fd, PollFlags::IN));
    }
    let left = until.saturating_duration_since(StdInstant::now());
    if left.is_zero() {
        return Ok(true);
    }
    let ts = Timespec::try_from(left).ok();
    match poll(&mut fds, ts.as_ref()) {
        Ok(0) | Err(rustix::io::Errno::INTR) => Ok(true),
        Ok(_) => {
            let ready = |i: usize| !fds[i].revents().is_empty();
            Ok(maintained.iter().any(|&i| ready(i)) || (rest..fds.len()).any(ready))
        }
        Err(e) => Err(e.into()),
    }
}

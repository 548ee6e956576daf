//! The host daemon: one process per host that owns the host's one link to the switch and
//! every application's VCs on it (issue 5).
//!
//! ```text
//!  app ──unix socket── channel manager ──┐ open/close/ping/status, daemon-path SDUs
//!  app ══memfd channel══ Adapter ────────┤
//!  app ══memfd channel══ Adapter ────────┼── one data-path loop ── the link (CellLink)
//!  app ──socket SDUs── Adapter(own bufs) ┘   (demux by VPI/VCI in, round robin out)
//! ```
//!
//! hostd is the real-time driver of natm-host-core's [`Host`]: the host's protocol logic
//! (admission, QoS → shaping, demultiplexing, transmit order, the OAM responder and pings)
//! lives there, shared with the simulator; hostd moves bytes between the sockets, the
//! channels' shared memory, the link and that object, and maps clients to channels.
//!
//! * **One adapter per channel**, as U-Net gives each endpoint its own: every VC an
//!   application opens gets its own host-core channel over its own region (a memfd handed
//!   to the application with SCM_RIGHTS), so one application's buffers, queues and
//!   mistakes never touch another's. Cells the link refuses stay with their channel and
//!   go first next time; nothing is dropped silently (cells lost when the link fails under
//!   them are counted).
//! * **Daemon path**: a VC whose SDUs travel over the socket, copied into hostd's own
//!   buffers, like a kernel driver's `sendmsg`/`recvmsg`: the baseline the direct path is
//!   measured against.
//! * **OAM** (I.610 §10.2.4, F5 loopback): the host core answers end-to-end loopback
//!   requests on every VC of the link; [`ping`] requests (see [`proto::Request::Ping`])
//!   send one and time the reply.
//! * **Channel manager**: the protocol is [`proto`]. The socket is created mode 0600 and
//!   every connection's SO_PEERCRED is checked ([`peer_allowed`]: hostd's uid or root).
//!   Refusals name the reason: VC in use, VCI below 32, a QoS that does not parse, the
//!   admission refusal of natm-traffic's CAC on the link's rate (an unlimited link is
//!   admitted as an OC-3c line, the nominal rate of a host's port; a UBR VC with no PCR
//!   of its own is not shaped to that rate, see `ubr_spec`).
//! * **Clean-up**: when a connection closes (exit, crash, `kill -9`), everything it held is
//!   reclaimed in the same loop iteration: its adapters, VCs, buffers, CAC reservations
//!   and memfd mappings. The channel is first marked revoked in its region
//!   ([`ChannelState::Revoked`]), so an application still holding the mapping gets an
//!   error, not a hang; a revoked channel is never serviced again.
//! * **Link loss**: a link that fails is dropped and reconnected every 100 ms through the
//!   connector; meanwhile transmit descriptors complete with
//!   [`proto::STATUS_LINK_DOWN`], channels are marked [`ChannelState::LinkDown`] (which wakes
//!   blocked applications), daemon-path clients get [`proto::Response::LinkDown`]. The VCs
//!   stay open: when the link comes back they work again.
//!
//! * **Switched VCs** (with [`HostdOptions::address`]; without one, call requests are
//!   refused saying the host has no address): the host core runs the UNI user side on VC
//!   0.5 (natm-host-core's "Switched VCs"). `call` sets up a call and, once the network
//!   connects it, opens its VC with the same open code as a PVC's `open` (every path), and
//!   answers `Opened` with `call` filled (`setup_ns` measured here); a refusal, or no
//!   answer within `timeout_ms` (cause 102 at U), is `CallFailed`. `listen` takes a
//!   selector (or any not taken); an incoming SETUP goes to the matching listener as
//!   `Incoming` (no listener: released with cause 1; a listener whose connection is going:
//!   88; no answer in 4 s: 18, by the host core); `accept` books the bandwidth, opens the VC
//!   at once and answers `Opened` when the network's CONNECT ACKNOWLEDGE comes; `reject`
//!   sends RELEASE COMPLETE with the cause. The far end's release is an unsolicited
//!   `Released { handle, cause }` and the VC is closed and revoked; `close` of a call's VC
//!   releases it with 16; a connection that closes (exit, crash, `kill -9`) has its calls
//!   released with 31 in the same pass, before its VCs go. `status` lists the address,
//!   whether SSCOP is up, and every call with its Q.2931 state.
//!
//! # Call contract
//!
//! * [`run`] is the daemon: configuration in ([`HostdConfig`], TOML), returns when `stop`
//!   is set. [`HostdThread::spawn`] runs one in a thread of this process (tests, examples,
//!   a lab); the socket exists when it returns.
//! * [`Hostd::new`] binds the socket and tries the link once; [`Hostd::run`] loops;
//!   [`Hostd::poll_once`] is one pass that never waits (accept and read clients, check
//!   and reconnect the link, take descriptors, receive and demultiplex, time out
//!   reassemblies, transmit round robin, post completions, expire pings, write clients,
//!   drop closed connections). A pass reads the clock once; it looks at the listener
//!   and the clients (one zero-wait `poll(2)`) while they have been busy in the last
//!   50 µs, else at most every 10 µs, so a spinning loop serving only direct-path
//!   channels makes no system call per pass. Between passes with nothing to do the
//!   loop spins 50 µs, then sleeps in `poll(2)` on the listener, the clients, the link's
//!   descriptor and every channel's eventfd (announced in the channel first, natm-nic's
//!   handshake, so an application kicks hostd only when it sleeps), at most 20 ms and
//!   never past an adapter's, the link's or a ping's deadline. `wait = "poll"` never
//!   sleeps.
//! * The link comes from a [`Connector`], called at start and every [`RECONNECT`] while
//!   the link is down; it is dropped on the first error of any call.
//!
//! What it is not: no ILMI (the address is configured, and the switch routes it by its
//! own configuration), no BLLI/BHLI matching of listeners (by selector only), no per-link scheduler across channels (each adapter shapes its own VC to
//! its contract on a rated link, and CAC keeps CBR and VBR within the link's rate; UBR
//! excess is left to the link's own pacing), one link per host.
//!
//! [`ping`]: proto::Request::Ping

use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use natm_adapter::{
    Adapter, AdapterConfig, BufferId, BufferMemory, Completion, Direction, MemoryError, Status,
    VecBuffers,
};
use natm_core::{Qos, VcId};
use natm_host_core::{
    ChannelId, ChannelMemory as HostChannelMemory, Event, Host, HostConfig, OpenError, PingId,
};
use natm_link::clock::Epoch;
use natm_link::endpoint::{EndpointLink, LinkConfig, LinkKind, WaitConfig, with_impairments};
use natm_netem::Impairments;
use natm_nic::channel::{self as nic, AdapterEnd, Channel, ChannelConfig, ChannelState};
use natm_nic::memfd::MemfdMem;
use natm_nic::notify::{Waiter, Waker};
use natm_nic::sched::{Idler, Next, SPIN};
use natm_nic::signal;
use serde::{Deserialize, Serialize};

use natm_link::driver::{self, BATCH, ChannelMemory, status_code};
use natm_proto::host::{
    self as proto, CacStatus, ChannelStatus, DataPath, ErrorKind, Frame, FrameError, HostStatus,
    LinkStatus, NotifyMode, Request, Response, SignalTarget, VcStats,
};

pub use natm_core::IdleWait;
pub use natm_host_core::NOMINAL_RATE;
/// How often a failed link is tried again.
pub const RECONNECT: Duration = Duration::from_millis(100);
/// Spin this long after the last progress before sleeping (adaptive wait).
/// The longest sleep: the loop looks at the link's health at least this often.
const MAX_SLEEP: Duration = Duration::from_millis(20);
/// How often a spinning loop looks at the listener and the clients (one `poll(2)`) while
/// none of them has had anything for [`SPIN`]: a look every pass was a system call per
/// pass on the direct path, whose data never crosses the socket.
const SOCKET_CHECK: Duration = Duration::from_micros(10);
/// A client's unsent output beyond which received daemon-path SDUs are dropped.
const MAX_CLIENT_BACKLOG: usize = 16 << 20;
/// Most buffers per VC.
pub const MAX_VC_BUFFERS: u32 = 4096;
/// Most buffer bytes (buffers × size) one VC may ask for.
pub const MAX_VC_BYTES: u64 = 64 << 20;
/// Most VCs open at once on a host (each has an adapter and, direct, a mapped region).
pub const MAX_CHANNELS: usize = 1024;

/// How long hostd waits for the switch's answer to a lane request.
const LANE_REQUEST_TIMEOUT: Duration = Duration::from_secs(1);

mod calls;
mod clients;
mod config;
mod ports;

use calls::*;
use clients::*;
pub use config::{
    CONNECT_TIMEOUT, Connector, HostdConfig, HostdError, HostdOptions, peer_allowed, run,
};
use ports::*;

/// The daemon: socket, link, channels and the data-path loop. See the [module
/// documentation](self).
pub struct Hostd {
    opts: HostdOptions,
    connector: Connector,
    link: Option<Box<dyn EndpointLink>>,
    /// The impairments of the cells sent set at run time ([`Request::Impair`]), put in
    /// front of every link made.
    impair: Impairments,
    next_reconnect: Instant,
    next_health: Instant,
    listener: UnixListener,
    own_uid: u32,
    conns: BTreeMap<u64, Conn>,
    next_conn: u64,
    /// The host: channels, admission, demultiplexing, transmit order, OAM.
    host: Host<AppChannel>,
    /// A port's handle (its VC's, which the application names) → its channel.
    by_handle: BTreeMap<u32, ChannelId>,
    /// Outstanding pings → the connection that asked.
    pings: BTreeMap<PingId, u64>,
    /// The calls applications asked for or were offered, while hostd answers for them.
    calls: BTreeMap<natm_host_core::CallId, AppCall>,
    /// `listen`s by their number.
    listeners: BTreeMap<u32, Listener>,
    next_listener: u32,
    /// Where VCs' cookies come from.
    cookies: Cookies,
    epoch: Epoch,
    inbox: Box<[natm_link::CellBytes; BATCH]>,
    /// Where client bytes are read to.
    scratch: Box<[u8]>,
    stats: LinkStatus,
    /// The counters of the VCs closed so far, summed (`natm stat`'s losses by cause).
    closed: VcStats,
    /// When the loop sleeps, spins or gives way.
    idle: Idler,
    /// The main link announces no sleep at its empty looks ([`EndpointLink::set_spinning`]):
    /// set by [`Hostd::run`] except in the pass before a sleep, so that a switch sending
    /// to a busy hostd makes no system call per batch.
    link_spins: bool,
    /// The current pass's time: the clock is read once per pass.
    now: natm_core::Instant,
    /// When a socket last had something to read or took something written.
    socket_activity: Instant,
    /// When the loop looks at the sockets next while they are quiet.
    next_socket_check: Instant,
}

/// VCs' cookies: 128 bits no other application can guess, from SipHash (a keyed
/// pseudo-random function) of a counter under two keys the process drew from the OS once,
/// instead of a `getrandom(2)` per VC.
struct Cookies {
    keys: [std::hash::RandomState; 2],
    next: u64,
}

impl Cookies {
    fn new() -> Cookies {
        Cookies {
            keys: [std::hash::RandomState::new(), std::hash::RandomState::new()],
            next: 0,
        }
    }

    /// The next cookie.
    fn next(&mut self) -> [u8; 16] {
        use std::hash::BuildHasher as _;
        self.next += 1;
        let mut c = [0u8; 16];
        for (half, key) in c.chunks_exact_mut(8).zip(&self.keys) {
            half.copy_from_slice(&key.hash_one(self.next).to_le_bytes());
        }
        c
    }
}

impl Hostd {
    /// Binds the socket (mode 0600; a stale socket file nobody listens on is replaced)
    /// and tries the link once; a link that cannot be made now is retried by the loop.
    pub fn new(opts: HostdOptions, connector: Connector) -> Result<Hostd, HostdError> {
        let listener = bind(&opts.socket)?;
        Ok(Hostd::with_listener(opts, connector, listener))
    }

    fn with_listener(
        opts: HostdOptions,
        mut connector: Connector,
        listener: UnixListener,
    ) -> Hostd {
        let link = connector().ok();
        let now = Instant::now();
        let wait = opts.wait;
        let mut host = Host::new(HostConfig {
            max_channels: MAX_CHANNELS,
            batch: BATCH,
            signalling: opts.address.map(natm_host_core::SignallingConfig::new),
            ..HostConfig::new(&opts.name, opts.link_rate.cells_per_s())
        });
        if link.is_some() {
            host.link_up();
        }
        let stats = LinkStatus {
            description: opts.link_description.clone(),
            rate: opts.link_rate.to_string(),
            up: link.is_some(),
            ..LinkStatus::default()
        };
        let hostd = Hostd {
            opts,
            connector,
            link,
            impair: Impairments::default(),
            next_reconnect: now + RECONNECT,
            next_health: now,
            listener,
            own_uid: rustix::process::getuid().as_raw(),
            conns: BTreeMap::new(),
            next_conn: 1,
            host,
            by_handle: BTreeMap::new(),
            pings: BTreeMap::new(),
            calls: BTreeMap::new(),
            listeners: BTreeMap::new(),
            next_listener: 1,
            cookies: Cookies::new(),
            epoch: Epoch::now(),
            inbox: Box::new([[0; 53]; BATCH]),
            scratch: vec![0; 65536].into_boxed_slice(),
            stats,
            closed: VcStats::default(),
            idle: Idler::new(wait, now, true),
            link_spins: false,
            now: natm_core::Instant::from_nanos(0),
            socket_activity: now,
            next_socket_check: now,
        };
        hostd.say_line_weight();
        hostd
    }

    /// The socket's path.
    pub fn socket(&self) -> &Path {
        &self.opts.socket
    }

    /// Runs the loop until `stop` is set (checked at least every 20 ms), then revokes every
    /// channel and removes the socket.
    pub fn run(&mut self, stop: &AtomicBool) -> io::Result<()> {
        // Shaped VCs and rated links send at timed sleeps' ends: the default 50 µs of
        // timer slack would add up to that to a paced cell. Failing only costs precision.
        let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
        // The main link announces a sleep only in the pass before one, as switchd's links
        // do: announcing at every empty look cost the switch an eventfd `write` per batch
        // it sent a busy hostd.
        self.set_link_spinning(true);
        while !stop.load(Ordering::Relaxed) {
            let progress = self.poll_once()?;
            let now = self.epoch.to_std(self.now);
            if self.idle.after_pass(progress, now) == Next::Sleep {
                // One more pass with the link announcing: only it tells the switch to kick.
                self.set_link_spinning(false);
                if self.poll_once()? {
                    self.set_link_spinning(true);
                    self.idle.busy(std::time::Instant::now());
                    continue;
                }
                self.sleep()?;
                self.set_link_spinning(true);
                self.idle.slept(std::time::Instant::now());
            }
        }
        self.shutdown();
        Ok(())
    }

    fn shutdown(&mut self) {
        let handles: Vec<u32> = self.by_handle.keys().copied().collect();
        for h in handles {
            self.close_app_channel(h);
        }
        let _ = std::fs::remove_file(&self.opts.socket);
    }

    /// One pass of the loop: everything that can move now. Returns whether anything did.
    pub fn poll_once(&mut self) -> io::Result<bool> {
        self.now = self.epoch.elapsed();
        let now = self.epoch.to_std(self.now);
        let mut progress = false;
        // The sockets are looked at every pass while they are busy, else every
        // SOCKET_CHECK (and on the pass after a sleep, which may have been woken by one).
        let (listener, readable) =
            if now.duration_since(self.socket_activity) < SPIN || now >= self.next_socket_check {
                self.next_socket_check = now + SOCKET_CHECK;
                self.readable_sockets()?
            } else {
                (false, Vec::new())
            };
        if listener {
            progress |= self.accept();
        }
        progress |= self.read_clients(&readable);
        self.check_link(now);
        progress |= self.take_posts();
        progress |= self.receive();
        self.host.handle_timeout(self.now);
        self.events(None);
        self.expire_calls(now);
        progress |= self.transmit();
        progress |= self.complete();
        self.events(None);
        let wrote = self.flush_clients();
        if listener || !readable.is_empty() || wrote {
            self.socket_activity = now;
        }
        progress |= wrote;
        self.reap();
        Ok(progress)
    }

    // ---------------------------------------------------------------- the link

    fn check_link(&mut self, now: Instant) {
        match &mut self.link {
            Some(l) => {
                if l.next_due().is_some_and(|t| t <= now)
                    && let Err(e) = l.send_cells(&[])
                {
                    self.link_failed(&e);
                    return;
                }
                if now >= self.next_health {
                    self.next_health = now + MAX_SLEEP;
                    // A zero wait looks at the peer's health (a shm link's socket).
                    if let Err(e) = l.wait_recv(Some(Duration::ZERO)) {
                        self.link_failed(&e);
                    }
                }
            }
            None => {
                if now >= self.next_reconnect {
                    self.next_reconnect = now + RECONNECT;
                    if let Ok(l) = (self.connector)() {
                        self.link = Some(with_impairments(l, &self.impair));
                        self.stats.reconnects += 1;
                        self.link_up();
                    }
                }
            }
        }
    }

    /// Says the main link's weight to the switch, which shares a rated port's input line
    /// between the main link and the port's lanes by weight (natm-switchd's `InputLine`):
    /// the transmit-round weight of every channel that sends on the main link (all but the
    /// lanes'), at least 1 for signalling and OAM. Called when a channel opens or closes
    /// and when the link comes up (a new link's region says nothing yet).
    pub(super) fn say_line_weight(&self) {
        if let Some(link) = &self.link {
            let main = self
                .host
                .weight_of_channels(|p| !matches!(p.mem, ChannelMem::Lane { .. }));
            link.set_line_weight(main.max(1));
        }
    }

    /// Whether the main link (and a link that comes up later) announces its sleeps
    /// ([`Hostd::link_spins`]).
    fn set_link_spinning(&mut self, on: bool) {
        self.link_spins = on;
        if let Some(l) = &mut self.link {
            l.set_spinning(on);
        }
    }

    fn link_up(&mut self) {
        self.set_link_spinning(self.link_spins);
        self.host.link_up();
        self.say_line_weight();
        let lanes = self.opts.lanes.clone();
        for (_, _, p) in self.host.channels_mut() {
            if let ChannelMem::Lane {
                switch,
                side_b,
                weight,
                splice: None,
                ..
            } = &mut p.mem
            {
                // The switch lost its lanes with the link (or is a new one): ask again.
                match lanes
                    .as_deref()
                    .map(|s| request_lane(s, p.vc, *weight, false, side_b))
                {
                    Some(Ok((sock, _))) => *switch = Some(sock),
                    _ => {
                        self.stats.lane_failures += 1;
                        continue;
                    }
                }
            }
            p.mem.set_state(ChannelState::Live);
        }
        self.notify_daemon_clients(&Response::LinkUp);
    }

    fn notify_daemon_clients(&mut self, r: &Response) {
        let ids: Vec<u64> = self
            .app_channels()
            .filter(|p| matches!(p.mem, ChannelMem::Daemon { .. }))
            .map(|p| p.conn)
            .collect();
        let mut done = Vec::new();
        for id in ids {
            if !done.contains(&id)
                && let Some(c) = self.conns.get_mut(&id)
            {
                c.send(r);
                done.push(id);
            }
        }
    }

    fn link_failed(&mut self, why: &io::Error) {
        if let Some(l) = self.link.take() {
            let c = l.counters();
            self.stats.tx_cells += c.tx_cells;
            self.stats.rx_cells += c.rx_cells;
            self.stats.rx_lost += c.rx_lost;
        }
        self.next_reconnect = Instant::now() + RECONNECT;
        // Queued cells are counted lost, every VC flushed (its queued descriptors come
        // back as link-down failures), pings fail.
        self.host.link_down();
        for (_, _, p) in self.host.channels_mut() {
            // A spliced side's holder keeps its socket: closing it would tell the switch
            // the application went.
            if let ChannelMem::Lane {
                switch,
                splice: None,
                ..
            } = &mut p.mem
            {
                *switch = None;
            }
            p.mem.set_state(ChannelState::LinkDown);
        }
        self.events(Some(&why.to_string()));
        self.notify_daemon_clients(&Response::LinkDown);
        // Buffers the flush returned to daemon-path ports go back to their pools now.
        self.complete();
    }

    fn receive(&mut self) -> bool {
        let mut progress = false;
        for batch in 0..16 {
            if batch > 0 {
                // Receive buffers the applications posted back after the last batch: a
                // pass of 16 batches could outrun a pool that the application recycles
                // (frames dropped for want of a buffer that was waiting in the channel).
                self.take_posts();
            }
            let Some(link) = &mut self.link else {
                return progress;
            };
            let n = match link.recv_cells(&mut self.inbox[..]) {
                Ok(0) => return progress,
                Ok(n) => n,
                Err(e) => {
                    self.link_failed(&e);
                    return true;
                }
            };
            progress = true;
            let mut at = 0;
            while at < n {
                at += self.host.handle_cells(self.now, &mut self.inbox[at..n]);
                if at < n {
                    // A daemon-path frame ended: its buffer goes back before the next.
                    self.complete();
                }
            }
            // Applications see each batch's frames (and can post buffers back) at once.
            self.complete();
        }
        progress
    }

    /// Sends what the host gives (OAM, then the channels round robin, CBR and VBR ones
    /// first) until the link is full or nobody has cells; at most 16 batches a channel.
    pub(super) fn transmit(&mut self) -> bool {
        let now = self.now;
        let mut progress = false;
        let mut failed = None;
        let Some(link) = &mut self.link else {
            return false;
        };
        for _ in 0..16 * (self.by_handle.len() + 1) {
            let Some(cells) = self.host.poll_transmit(now) else {
                break;
            };
            let offered = cells.len();
            match link.send_cells(cells) {
                Ok(k) => {
                    self.host.transmitted(k);
                    progress |= k > 0;
                    if k < offered {
                        break;
                    }
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failed {
            self.link_failed(&e);
            return true;
        }
        progress
    }

    // ----------------------------------------------------------------- sleeping

    /// Sleeps in `poll(2)` until a client, the link or a channel has something, or the
    /// next deadline.
    fn sleep(&mut self) -> io::Result<()> {
        let now = Instant::now();
        let mut until = now + MAX_SLEEP;
        if self.link.is_none() {
            until = until.min(self.next_reconnect);
        } else {
            until = until.min(self.next_health);
        }
        if let Some(t) = self.host.poll_timeout() {
            until = until.min(self.epoch.to_std(t));
        }
        if let Some(t) = self.call_deadline() {
            until = until.min(t);
        }
        // The link is full. A shared-memory link's descriptor turns readable when the
        // peer makes room (the full send announced the wait); other links have no such
        // event, so look again soon. (The host gives no deadline for a channel whose cells
        // wait for the link: honouring it spun this loop for as long as the link stayed
        // full.)
        if self.host.has_backlog() || self.conns.values().any(|c| c.stalled.is_some()) {
            until = until.min(now + Duration::from_micros(100));
        }
        if let Some(t) = self.link.as_ref().and_then(|l| l.next_due()) {
            until = until.min(t);
        }
        let link_fd = self.link.as_ref().and_then(|l| l.poll_fd());
        if self.link.is_some() && link_fd.is_none() {
            until = until.min(now + Duration::from_millis(1));
        }
        if until <= now + Duration::from_micros(20) {
            return Ok(());
        }
        // Announce the sleep on every channel; one with work pending cancels it.
        let mut armed = Vec::new();
        let mut cancel = false;
        for (_, _, p) in self.host.channels_mut() {
            if let ChannelMem::Direct { end, waiter, .. } = &mut p.mem {
                if waiter.prepare_to_sleep(end) {
                    armed.push(p.handle);
                } else {
                    cancel = true;
                }
            }
        }
        if !cancel {
            let mut fds = Vec::new();
            fds.push(rustix::event::PollFd::new(
                &self.listener,
                rustix::event::PollFlags::IN,
            ));
            for c in self.conns.values() {
                let mut f = rustix::event::PollFlags::empty();
                if c.stalled.is_none()
                    && !c.awaiting
                    && !c.closing
                    && c.out_bytes <= MAX_CLIENT_BACKLOG
                {
                    f |= rustix::event::PollFlags::IN;
                }
                if !c.out.is_empty() {
                    f |= rustix::event::PollFlags::OUT;
                }
                fds.push(rustix::event::PollFd::new(&c.stream, f));
            }
            if let Some(fd) = link_fd {
                fds.push(rustix::event::PollFd::from_borrowed_fd(
                    fd,
                    rustix::event::PollFlags::IN,
                ));
            }
            for p in self.app_channels() {
                if let ChannelMem::Direct { waiter, .. } = &p.mem
                    && let Some(fd) = waiter.as_fd()
                {
                    fds.push(rustix::event::PollFd::from_borrowed_fd(
                        fd,
                        rustix::event::PollFlags::IN,
                    ));
                }
            }
            let left = until.saturating_duration_since(Instant::now());
            let ts = rustix::event::Timespec::try_from(left).ok();
            match rustix::event::poll(&mut fds, ts.as_ref()) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
            // A socket may be what woke the loop: the next pass looks at them.
            self.next_socket_check = now;
        }
        for h in armed {
            if let Some((_, p)) = self
                .by_handle
                .get(&h)
                .and_then(|ch| self.host.channel_mut(*ch))
                && let ChannelMem::Direct { end, waiter, .. } = &mut p.mem
            {
                waiter.finish_sleep(end);
            }
        }
        Ok(())
    }
}

fn bind(path: &Path) -> Result<UnixListener, HostdError> {
    let err = |source| HostdError::Socket {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
        && !dir.exists()
    {
        std::fs::create_dir_all(dir).map_err(err)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(err)?;
    }
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(HostdError::InUse(path.to_path_buf()));
        }
        std::fs::remove_file(path).map_err(err)?;
    }
    let l = UnixListener::bind(path).map_err(err)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(err)?;
    l.set_nonblocking(true).map_err(err)?;
    Ok(l)
}

/// A daemon running in a thread of this process (tests, `natm lab`, doc examples).
pub struct HostdThread {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<io::Result<()>>>,
    socket: PathBuf,
}

impl HostdThread {
    /// Binds the socket here (so it exists when this returns) and runs the loop in a new
    /// thread.
    pub fn spawn(opts: HostdOptions, connector: Connector) -> Result<HostdThread, HostdError> {
        let socket = opts.socket.clone();
        let listener = bind(&socket)?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("natm-hostd".into())
            .spawn(move || Hostd::with_listener(opts, connector, listener).run(&s))?;
        Ok(HostdThread {
            stop,
            thread: Some(thread),
            socket,
        })
    }

    /// The socket's path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Stops the loop and waits for it.
    pub fn stop(mut self) -> io::Result<()> {
        self.halt()
    }

    fn halt(&mut self) -> io::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| io::Error::other("the hostd thread panicked"))?,
            None => Ok(()),
        }
    }
}

impl Drop for HostdThread {
    fn drop(&mut self) {
        let _ = self.halt();
    }
}

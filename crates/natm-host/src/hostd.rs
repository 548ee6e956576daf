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
//! * **One adapter per channel**, as U-Net gives each endpoint its own: every VC an
//!   application opens gets its own [`Adapter`] over its own channel region (a memfd handed
//!   to the application with SCM_RIGHTS), so one application's buffers, queues and
//!   mistakes never touch another's. Cells from the link are checked once (I.432 HEC
//!   receiver, one per link), then demultiplexed by VPI/VCI to the adapter owning the VC;
//!   every adapter's `poll_transmit` output goes to the one link, round robin between
//!   channels a batch at a time, CBR and VBR channels before UBR ones. Cells the link refuses stay with their channel and go
//!   first next time; nothing is dropped silently (cells lost when the link fails under
//!   them are counted).
//! * **Daemon path**: a VC whose SDUs travel over the socket, copied into hostd's own
//!   buffers, like a kernel driver's `sendmsg`/`recvmsg`: the baseline the direct path is
//!   measured against.
//! * **OAM** (I.610 §10.2.4, F5 loopback): hostd is the end point of every VC on its link.
//!   It answers end-to-end loopback requests (indication 1) with the same cell, indication
//!   0 and the same correlation tag; segment requests are the switch's to answer. [`ping`]
//!   requests (see [`proto::Request::Ping`]) send a request and time the reply.
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
//! What it is not: no signalling (PVCs only; the switch's tables are the switch's
//! business), no per-link scheduler across channels (each adapter shapes its own VC to
//! its contract on a rated link, and CAC keeps CBR and VBR within the link's rate; UBR
//! excess is left to the link's own pacing), one link per host.
//!
//! [`ping`]: proto::Request::Ping

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use natm_adapter::{
    Adapter, AdapterConfig, BufferId, Completion, Direction, HecCheck, RxVcConfig, Status,
    UBR_UNSHAPED_PCR, VecBuffers,
};
use natm_core::{HeaderFormat, LineRate, Pcr, PhyRate, PvcAddr, Qos, Sel, TrafficClass, VcId, Vci};
use natm_link::clock::Epoch;
use natm_link::endpoint::{EndpointLink, LinkConfig, LinkKind, WaitConfig};
use natm_nic::channel::{self as nic, AdapterEnd, Channel, ChannelConfig, ChannelState};
use natm_nic::memfd::MemfdMem;
use natm_nic::notify::{Waiter, Waker};
use natm_nic::sched::GiveWay;
use natm_nic::signal;
use natm_traffic::cac::{self, Cac, CacConfig};
use natm_traffic::sched::{Category, VcSpec};
use natm_wire::cell::{Cell as WireCell, CellHeader, HecReceiver, HecVerdict, Pti};
use natm_wire::oam::{Loopback, OamCell, OamFlow, OamRepr};
use serde::{Deserialize, Serialize};

use crate::driver::{self, BATCH, ChannelMemory, status_code};
use crate::proto::{
    self, CacStatus, ChannelStatus, DataPath, ErrorKind, Frame, FrameError, HostStatus, LinkStatus,
    NotifyMode, Request, Response, SignalTarget, VcStats,
};

type Cell = natm_link::Cell;

/// OC-3c's cell rate: what an unlimited link is admitted as.
pub const NOMINAL_RATE: u32 = PhyRate::OC3.cells_per_s();
/// How often a failed link is tried again.
pub const RECONNECT: Duration = Duration::from_millis(100);
/// Spin this long after the last progress before sleeping (adaptive wait).
const SPIN: Duration = Duration::from_micros(50);
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

/// How the daemon's own data-path loop waits when there is nothing to do (natm-switchd's
/// `IdleWait` for the switch). Not how an application is woken: that is its channel's
/// [`NotifyMode`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitMode {
    /// Spin 50 µs after the last work, yielding the CPU every 20 µs of spinning
    /// ([`GiveWay`]), then sleep in `poll(2)` on every descriptor.
    #[default]
    Adaptive,
    /// Never sleep: one CPU for the lowest latency.
    Poll,
    /// Never sleep, but `sched_yield` when idle: for more pollers than CPUs (a whole lab
    /// on a small machine), where a spinning daemon would hold a CPU the next hop needs.
    Yield,
}

/// What the daemon core needs besides its link.
#[derive(Clone, Debug)]
pub struct HostdOptions {
    /// The host's name (status).
    pub name: String,
    /// The Unix socket's path.
    pub socket: PathBuf,
    /// How to wait.
    pub wait: WaitMode,
    /// The link, for status.
    pub link_description: String,
    /// The link's rate, cells/s (`None`: unlimited, admitted as [`NOMINAL_RATE`]).
    pub link_rate: Option<u32>,
    /// The switch port's socket, where lanes are asked for ([`natm_link::lane`]); `None`:
    /// no lane path (the link is not shared memory).
    pub lanes: Option<PathBuf>,
}

/// Makes (or remakes) the link: called at start and every [`RECONNECT`] while it is down.
/// It should not block for long: the loop serves nobody while it runs.
pub type Connector = Box<dyn FnMut() -> io::Result<Box<dyn EndpointLink>> + Send>;

/// How long hostd waits for the switch's answer to a lane request.
const LANE_REQUEST_TIMEOUT: Duration = Duration::from_secs(1);

/// How long [`run`] lets the link's connect wait for the switch each time.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(20);

/// hostd's configuration file (TOML):
///
/// ```toml
/// name = "h1"
/// socket = "/run/natm/h1.sock"   # optional: natm_host::proto::default_socket(name)
/// wait = "adaptive"              # or "poll", or "yield"; optional, adaptive by default
/// [link]                         # natm_link::endpoint::LinkConfig
/// kind = "shm"
/// path = "/run/natm/s1-p1.sock"
/// rate = "oc3"
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostdConfig {
    /// The host's name.
    pub name: String,
    /// The channel manager's socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<PathBuf>,
    /// How the loop waits.
    #[serde(default)]
    pub wait: WaitMode,
    /// The link to the switch.
    pub link: LinkConfig,
}

impl HostdConfig {
    /// Parses the TOML text; errors name the key and what was wrong.
    pub fn from_toml(text: &str) -> Result<HostdConfig, HostdError> {
        toml::from_str(text).map_err(|e| HostdError::Config(e.to_string()))
    }

    /// Reads and parses a configuration file.
    pub fn load(path: &Path) -> Result<HostdConfig, HostdError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| HostdError::Config(format!("{}: {e}", path.display())))?;
        HostdConfig::from_toml(&text)
            .map_err(|e| HostdError::Config(format!("{}: {e}", path.display())))
    }

    /// The socket's path: `socket`, or the default for the name.
    pub fn socket_path(&self) -> PathBuf {
        self.socket
            .clone()
            .unwrap_or_else(|| proto::default_socket(&self.name))
    }

    /// The link as hostd makes it: a shared-memory link waits the way the loop does
    /// (`eventfd` under an adaptive loop, which spins itself and then sleeps in `poll(2)` on
    /// the link's descriptor; `poll` under a polling loop), whatever its `wait` says.
    pub fn effective_link(&self) -> LinkConfig {
        let mut link = self.link.clone();
        if let LinkKind::Shm { .. } = link.kind {
            link.wait = match self.wait {
                WaitMode::Adaptive => WaitConfig::EventFd,
                WaitMode::Poll | WaitMode::Yield => WaitConfig::Poll,
            };
        }
        link
    }

    /// The daemon options this configuration means.
    pub fn options(&self) -> HostdOptions {
        HostdOptions {
            name: self.name.clone(),
            socket: self.socket_path(),
            wait: self.wait,
            link_description: self.effective_link().describe(),
            link_rate: self.link.rate.cells_per_s(),
            lanes: match &self.link.kind {
                LinkKind::Shm { path } if !self.link.is_emulated() => Some(path.clone()),
                _ => None,
            },
        }
    }

    /// A connector that makes the configured link, waiting at most [`CONNECT_TIMEOUT`].
    pub fn connector(&self) -> Connector {
        let link = self.effective_link();
        Box::new(move || link.connect(CONNECT_TIMEOUT).map_err(io::Error::other))
    }
}

/// Runs host daemon `config` until `stop` is set: binds the socket, connects the link
/// (retrying every [`RECONNECT`] while the switch is not there), serves. Returns when
/// stopped, with every channel revoked and the socket removed.
pub fn run(config: HostdConfig, stop: Arc<AtomicBool>) -> Result<(), HostdError> {
    let mut d = Hostd::new(config.options(), config.connector())?;
    d.run(&stop)?;
    Ok(())
}

/// Whether a peer with `peer_uid` may use a daemon running as `own_uid`: the same user,
/// or root.
pub fn peer_allowed(peer_uid: u32, own_uid: u32) -> bool {
    peer_uid == own_uid || peer_uid == 0
}

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum HostdError {
    /// Another daemon listens on the socket.
    #[error("{0}: another hostd is listening there")]
    InUse(PathBuf),
    /// The socket could not be made.
    #[error("{path}: {source}")]
    Socket {
        /// The path.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The configuration was refused.
    #[error("hostd configuration: {0}")]
    Config(String),
    /// The loop failed.
    #[error("hostd: {0}")]
    Io(#[from] io::Error),
}

/// A loopback request waiting for its reply.
struct PendingPing {
    conn: u64,
    vc: VcId,
    segment: bool,
    tag: u32,
    sent: Instant,
    deadline: Instant,
}

/// One frame waiting to be written to a client.
struct Outgoing {
    bytes: Vec<u8>,
    at: usize,
    fds: Vec<OwnedFd>,
}

struct Conn {
    stream: UnixStream,
    pid: i32,
    rbuf: proto::FrameBuf,
    out: VecDeque<Outgoing>,
    out_bytes: usize,
    /// A daemon-path SDU waiting for a free buffer: the connection is not read meanwhile.
    stalled: Option<(u32, Vec<u8>)>,
    /// A ping is outstanding: requests after it wait (answers go in order).
    pinging: bool,
    /// Close once the output is written (refused peer, unparseable framing).
    closing: bool,
    dead: bool,
}

impl Conn {
    fn send(&mut self, r: &Response) {
        self.push(proto::control_frame(r), Vec::new());
    }

    fn push(&mut self, bytes: Vec<u8>, fds: Vec<OwnedFd>) {
        self.out_bytes += bytes.len();
        self.out.push_back(Outgoing { bytes, at: 0, fds });
    }

    fn refuse(&mut self, kind: ErrorKind, message: impl Into<String>) {
        self.send(&Response::Error {
            kind,
            message: message.into(),
        });
    }

    /// Writes what the socket takes now.
    fn flush(&mut self) -> bool {
        let mut progress = false;
        while let Some(o) = self.out.front_mut() {
            let fds: Vec<BorrowedFd<'_>> = o.fds.iter().map(|f| f.as_fd()).collect();
            match proto::send_with_fds(&self.stream, &o.bytes[o.at..], &fds) {
                Ok(0) => break,
                Ok(n) => {
                    progress = true;
                    o.at += n;
                    // Descriptors went with the first byte.
                    o.fds.clear();
                    self.out_bytes -= n;
                    if o.at == o.bytes.len() {
                        self.out.pop_front();
                    }
                }
                Err(_) => {
                    self.dead = true;
                    break;
                }
            }
        }
        progress
    }
}

// One per VC, held in a map: the size difference costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
enum PortMem {
    Direct {
        end: AdapterEnd,
        /// hostd sleeps on it; the application writes it after posting.
        waiter: Waiter,
        /// Kept so the mapping lives exactly as long as the port.
        _region: Arc<MemfdMem>,
    },
    Daemon {
        bufs: VecBuffers,
        free_tx: Vec<u32>,
    },
    /// The application runs the adapter on its own lane; hostd keeps the channel's
    /// state word and the lane's grant.
    Lane {
        /// For the state word only: hostd never services the channel's rings.
        end: AdapterEnd,
        /// The application's wake eventfd, written on every state change.
        app_wake: OwnedFd,
        /// Side B of the lane's rings, handed to the switch again after a reconnect.
        side_b: natm_link::shm::ShmHandover,
        /// The lane request's socket while the switch has the lane: closing it ends it.
        switch: Option<UnixStream>,
        _region: Arc<MemfdMem>,
    },
}

impl PortMem {
    /// Sets a channel's state word, waking the application.
    fn set_state(&mut self, state: ChannelState) {
        match self {
            PortMem::Direct { end, .. } => end.set_state(state),
            PortMem::Lane { end, app_wake, .. } => {
                end.set_state(state);
                // Whatever the application sleeps on, it also polls this eventfd.
                let _ = rustix::io::write(&*app_wake, &1u64.to_ne_bytes());
            }
            PortMem::Daemon { .. } => {}
        }
    }
}

/// Asks the switch at `socket` for a lane carrying `vc` over `side_b`'s rings; the
/// socket that keeps it, or why not.
fn request_lane(
    socket: &Path,
    vc: VcId,
    side_b: &natm_link::shm::ShmHandover,
) -> Result<UnixStream, String> {
    let sock = UnixStream::connect(socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    let handover = natm_link::shm::ShmLink::dup_handover(side_b).map_err(|e| e.to_string())?;
    let lane_vc = natm_link::lane::LaneVc {
        vpi: vc.vpi.get(),
        vci: vc.vci.get(),
    };
    natm_link::lane::request(&sock, &[lane_vc], &handover, LANE_REQUEST_TIMEOUT)
        .map_err(|e| e.to_string())?;
    sock.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok(sock)
}

struct Port {
    handle: u32,
    vc: VcId,
    qos: String,
    conn: u64,
    owner_pid: i32,
    cookie: [u8; 16],
    notify: NotifyMode,
    spec: VcSpec,
    rx: RxVcConfig,
    adapter: Adapter,
    mem: PortMem,
    reservation: cac::Handle,
    out: Box<[Cell; BATCH]>,
    sent: usize,
    filled: usize,
    deferred: VecDeque<Completion>,
    tx_failed: u64,
    client_drops: u64,
}

impl Port {
    fn link_backlog(&self) -> bool {
        self.sent < self.filled
    }
}

fn cookie_hex(c: &[u8; 16]) -> String {
    c.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_cookie(s: &str) -> Option<[u8; 16]> {
    if s.len() != 32 || !s.is_ascii() {
        return None;
    }
    let mut c = [0u8; 16];
    for (i, b) in c.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(c)
}

/// Parses a concrete PVC on interface 0.
fn parse_vc(text: &str) -> Result<VcId, String> {
    let a: PvcAddr = text
        .parse()
        .map_err(|e| format!("bad VC \"{text}\": {e}"))?;
    match a.itf {
        Sel::Is(i) if i.get() != 0 => {
            return Err(format!(
                "VC \"{text}\": interface {} does not exist (hostd has one link, interface 0)",
                i.get()
            ));
        }
        Sel::Unspecified => return Err(format!("VC \"{text}\": the interface is unspecified")),
        _ => {}
    }
    a.vc()
        .ok_or_else(|| format!("VC \"{text}\": give a VPI and a VCI (no `*` or `?`)"))
}

/// The daemon: socket, link, channels and the data-path loop. See the [module
/// documentation](self).
pub struct Hostd {
    opts: HostdOptions,
    connector: Connector,
    link: Option<Box<dyn EndpointLink>>,
    next_reconnect: Instant,
    next_health: Instant,
    listener: UnixListener,
    own_uid: u32,
    conns: BTreeMap<u64, Conn>,
    next_conn: u64,
    ports: BTreeMap<u32, Port>,
    by_vc: HashMap<u32, u32>,
    next_handle: u32,
    rr: u32,
    cac: Cac,
    pings: Vec<PendingPing>,
    oam_out: VecDeque<Cell>,
    epoch: Epoch,
    hec: HecReceiver,
    inbox: Box<[Cell; BATCH]>,
    /// Where client bytes are read to.
    scratch: Box<[u8]>,
    stats: LinkStatus,
    last_progress: Instant,
    /// Yields the CPU now and then while the adaptive loop spins.
    give_way: GiveWay,
    /// The current pass's time: the clock is read once per pass.
    now: natm_core::Instant,
    /// When a socket last had something to read or took something written.
    socket_activity: Instant,
    /// When the loop looks at the sockets next while they are quiet.
    next_socket_check: Instant,
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
        let capacity = opts.link_rate.unwrap_or(NOMINAL_RATE);
        let cac = Cac::new(CacConfig {
            link: format!("{}:link", opts.name),
            capacity,
            buffer_cells: 0,
            max_ubr: 4096,
        });
        let stats = LinkStatus {
            description: opts.link_description.clone(),
            up: link.is_some(),
            ..LinkStatus::default()
        };
        Hostd {
            opts,
            connector,
            link,
            next_reconnect: now + RECONNECT,
            next_health: now,
            listener,
            own_uid: rustix::process::getuid().as_raw(),
            conns: BTreeMap::new(),
            next_conn: 1,
            ports: BTreeMap::new(),
            by_vc: HashMap::new(),
            next_handle: 1,
            rr: 0,
            cac,
            pings: Vec::new(),
            oam_out: VecDeque::new(),
            epoch: Epoch::now(),
            hec: HecReceiver::new(),
            inbox: Box::new([[0; 53]; BATCH]),
            scratch: vec![0; 65536].into_boxed_slice(),
            stats,
            last_progress: now,
            give_way: GiveWay::new(now),
            now: natm_core::Instant::from_nanos(0),
            socket_activity: now,
            next_socket_check: now,
        }
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
        while !stop.load(Ordering::Relaxed) {
            let progress = self.poll_once()?;
            let now = self.epoch.to_std(self.now);
            if progress {
                self.last_progress = now;
            } else {
                match self.opts.wait {
                    WaitMode::Poll => std::hint::spin_loop(),
                    WaitMode::Yield => std::thread::yield_now(),
                    WaitMode::Adaptive => {
                        if now.duration_since(self.last_progress) >= SPIN {
                            self.sleep()?;
                            self.give_way.slept(std::time::Instant::now());
                            continue;
                        }
                    }
                }
            }
            if self.opts.wait == WaitMode::Adaptive {
                self.give_way.tick(now);
            }
        }
        self.shutdown();
        Ok(())
    }

    fn shutdown(&mut self) {
        let handles: Vec<u32> = self.ports.keys().copied().collect();
        for h in handles {
            self.close_port(h);
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
        self.timeouts();
        progress |= self.transmit();
        progress |= self.complete();
        self.expire_pings(now);
        let wrote = self.flush_clients();
        if listener || !readable.is_empty() || wrote {
            self.socket_activity = now;
        }
        progress |= wrote;
        self.reap();
        Ok(progress)
    }

    // ------------------------------------------------------------------ clients

    fn accept(&mut self) -> bool {
        let mut any = false;
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    any = true;
                    self.add_conn(stream);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return any,
            }
        }
    }

    fn add_conn(&mut self, stream: UnixStream) {
        if stream.set_nonblocking(true).is_err() {
            return;
        }
        let cred = rustix::net::sockopt::socket_peercred(&stream);
        let id = self.next_conn;
        self.next_conn += 1;
        let mut conn = Conn {
            stream,
            pid: 0,
            rbuf: proto::FrameBuf::new(),
            out: VecDeque::new(),
            out_bytes: 0,
            stalled: None,
            pinging: false,
            closing: false,
            dead: false,
        };
        match cred {
            Ok(c) if peer_allowed(c.uid.as_raw(), self.own_uid) => {
                conn.pid = c.pid.as_raw_nonzero().get();
            }
            Ok(c) => {
                conn.refuse(
                    ErrorKind::Refused,
                    format!(
                        "uid {} may not use this hostd (it serves uid {} and root)",
                        c.uid.as_raw(),
                        self.own_uid
                    ),
                );
                conn.closing = true;
            }
            Err(e) => {
                conn.refuse(ErrorKind::Refused, format!("SO_PEERCRED failed: {e}"));
                conn.closing = true;
            }
        }
        self.conns.insert(id, conn);
    }

    /// One `poll(2)` without waiting over the listener and the clients: whether the
    /// listener has a connection, and which clients have bytes (or hung up).
    fn readable_sockets(&mut self) -> io::Result<(bool, Vec<u64>)> {
        use rustix::event::{PollFd, PollFlags};
        let mut fds = Vec::with_capacity(1 + self.conns.len());
        fds.push(PollFd::new(&self.listener, PollFlags::IN));
        for c in self.conns.values() {
            fds.push(PollFd::new(&c.stream, PollFlags::IN));
        }
        match rustix::event::poll(&mut fds, Some(&rustix::event::Timespec::default())) {
            Ok(0) | Err(rustix::io::Errno::INTR) => return Ok((false, Vec::new())),
            Ok(_) => {}
            Err(e) => return Err(e.into()),
        }
        let ready = |f: &PollFd<'_>| !f.revents().is_empty();
        let listener = ready(&fds[0]);
        let conns = self
            .conns
            .keys()
            .zip(&fds[1..])
            .filter(|(_, f)| ready(f))
            .map(|(id, _)| *id)
            .collect();
        Ok((listener, conns))
    }

    fn read_clients(&mut self, readable: &[u64]) -> bool {
        let mut progress = false;
        let ids: Vec<u64> = self.conns.keys().copied().collect();
        for id in ids {
            progress |= self.retry_stalled(id);
            let Some(c) = self.conns.get_mut(&id) else {
                continue;
            };
            if c.closing || c.dead {
                continue;
            }
            let buf = &mut self.scratch[..];
            // Read only while nothing waits: a stalled SDU or a ping holds the rest back.
            // A client that does not read its answers is not read either.
            while readable.contains(&id)
                && c.out_bytes <= MAX_CLIENT_BACKLOG
                && c.stalled.is_none()
                && !c.pinging
                && c.rbuf.len() < 2 * proto::MAX_FRAME
            {
                match c.stream.read(buf) {
                    Ok(0) => {
                        c.dead = true;
                        break;
                    }
                    Ok(n) => {
                        progress = true;
                        c.rbuf.extend(&buf[..n]);
                        if n < buf.len() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        c.dead = true;
                        break;
                    }
                }
            }
            progress |= self.handle_frames(id);
        }
        progress
    }

    fn handle_frames(&mut self, id: u64) -> bool {
        let mut progress = false;
        loop {
            let Some(c) = self.conns.get_mut(&id) else {
                return progress;
            };
            if c.stalled.is_some() || c.pinging || c.closing || c.out_bytes > MAX_CLIENT_BACKLOG {
                return progress;
            }
            let Some(frame) = c.rbuf.next_frame::<Request>().transpose() else {
                return progress;
            };
            progress = true;
            match frame {
                Ok(Frame::Control(r)) => self.request(id, r),
                Ok(Frame::Data { handle, sdu }) => self.daemon_send(id, handle, sdu),
                Err(e @ (FrameError::BadLength(_) | FrameError::BadKind(_))) => {
                    // No way to find the next frame, or no way to read it: answer and
                    // hang up.
                    c.refuse(ErrorKind::BadRequest, e.to_string());
                    c.closing = true;
                }
                Err(e) => c.refuse(ErrorKind::BadRequest, e.to_string()),
            }
        }
    }

    fn flush_clients(&mut self) -> bool {
        let mut progress = false;
        for c in self.conns.values_mut() {
            progress |= c.flush();
            if c.closing && c.out.is_empty() {
                c.dead = true;
            }
        }
        progress
    }

    /// Drops closed connections and everything they held.
    fn reap(&mut self) {
        let dead: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| c.dead)
            .map(|(id, _)| *id)
            .collect();
        for id in dead {
            let owned: Vec<u32> = self
                .ports
                .values()
                .filter(|p| p.conn == id)
                .map(|p| p.handle)
                .collect();
            for h in owned {
                self.close_port(h);
            }
            self.pings.retain(|p| p.conn != id);
            self.conns.remove(&id);
        }
    }

    // ----------------------------------------------------------------- requests

    fn reply(&mut self, id: u64, r: Response) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.send(&r);
        }
    }

    fn request(&mut self, id: u64, r: Request) {
        match r {
            Request::Open {
                vc,
                qos,
                path,
                notify,
                signal,
                buffers,
                buffer_size,
            } => {
                let r = self.open(id, &vc, &qos, path, notify, signal, buffers, buffer_size);
                match r {
                    Ok((resp, fds)) => {
                        if let Some(c) = self.conns.get_mut(&id) {
                            c.push(proto::control_frame(&resp), fds);
                        }
                    }
                    Err((kind, message)) => self.reply(id, Response::Error { kind, message }),
                }
            }
            Request::Close { cookie } => {
                let r = self.close_request(id, &cookie);
                self.reply(id, r);
            }
            Request::Ping {
                vc,
                segment,
                correlation,
                timeout_ms,
            } => self.ping(id, &vc, segment, correlation, timeout_ms),
            Request::Status => {
                let s = self.status();
                self.reply(id, Response::Status(s));
            }
        }
    }

    fn close_request(&mut self, id: u64, cookie: &str) -> Response {
        let refused = |m: &str| Response::Error {
            kind: ErrorKind::Refused,
            message: m.to_string(),
        };
        let Some(c) = parse_cookie(cookie) else {
            return refused("unknown cookie (not 32 hex digits)");
        };
        let Some(p) = self.ports.values().find(|p| p.cookie == c) else {
            return refused("unknown cookie");
        };
        if p.conn != id {
            return refused("cookie belongs to another application");
        }
        let handle = p.handle;
        self.close_port(handle);
        Response::Closed { handle }
    }

    #[allow(clippy::too_many_arguments)]
    fn open(
        &mut self,
        id: u64,
        vc_text: &str,
        qos_text: &str,
        path: DataPath,
        notify: NotifyMode,
        signal_target: Option<SignalTarget>,
        buffers: u32,
        buffer_size: u32,
    ) -> Result<(Response, Vec<OwnedFd>), (ErrorKind, String)> {
        let bad = |m: String| (ErrorKind::BadRequest, m);
        let refused = |m: String| (ErrorKind::Refused, m);
        let vc = parse_vc(vc_text).map_err(bad)?;
        if vc.vci.get() < Vci::FIRST_USER {
            return Err(refused(format!(
                "VC {vc}: VCI {} is reserved (VCIs 0..=31 are for signalling, OAM and ILMI); use 32 or above",
                vc.vci.get()
            )));
        }
        if !vc.vpi.fits(HeaderFormat::Uni) {
            return Err(refused(format!("VC {vc}: VPI above 255 at the UNI")));
        }
        if let Some(&h) = self.by_vc.get(&vc.key()) {
            let pid = self.ports.get(&h).map_or(0, |p| p.owner_pid);
            return Err(refused(format!(
                "VC {vc} is in use by another channel (handle {h}, pid {pid})"
            )));
        }
        if self.ports.len() >= MAX_CHANNELS {
            return Err(refused(format!(
                "hostd has {MAX_CHANNELS} VCs open, its most"
            )));
        }
        let qos: Qos = qos_text
            .parse()
            .map_err(|e| bad(format!("bad QoS \"{qos_text}\": {e}")))?;
        if !(2..=MAX_VC_BUFFERS).contains(&buffers) {
            return Err(bad(format!(
                "buffers {buffers} is not in 2..={MAX_VC_BUFFERS}"
            )));
        }
        if buffer_size == 0 || !buffer_size.is_multiple_of(64) || buffer_size > (1 << 20) {
            return Err(bad(format!(
                "buffer_size {buffer_size} is not a multiple of 64 in 64..=1048576"
            )));
        }
        let bytes = u64::from(buffers) * u64::from(buffer_size);
        if bytes > MAX_VC_BYTES {
            return Err(bad(format!(
                "{buffers} buffers of {buffer_size} bytes are {bytes} bytes, above the {MAX_VC_BYTES} a VC may have"
            )));
        }
        let capacity = self.cac.config().capacity;
        let tx = qos.tx;
        let reservation = self.cac.admit(&tx).map_err(|e| refused(e.to_string()))?;
        let contract = self
            .cac
            .reservation(reservation)
            .map(|r| r.contract)
            .unwrap_or_default();
        let spec = match tx.class {
            TrafficClass::Cbr => VcSpec::cbr(contract.pcr),
            TrafficClass::Vbr => VcSpec::nrt_vbr(contract.pcr, contract.scr, contract.mbs),
            _ => ubr_spec(&tx, contract.pcr, capacity, self.opts.link_rate),
        };
        let max_sdu_qos = if qos.rx.max_sdu == 0 {
            65535
        } else {
            qos.rx.max_sdu as usize
        };
        let max_sdu = max_sdu_qos.min(buffer_size as usize).min(65535);
        let rx = RxVcConfig::aal5(max_sdu);
        let release = |cac: &mut Cac| {
            let _ = cac.release(reservation);
        };
        let handle = self.next_handle;
        let mut config = AdapterConfig::new(buffers, buffer_size as usize);
        config.link = self
            .opts
            .link_rate
            .and_then(LineRate::cells)
            .unwrap_or(LineRate::Unlimited);
        config.hec = HecCheck::Off;
        config.max_vcs = 1;
        config.max_tx_queued = buffers as usize;
        config.event_queue_max = 64;
        let mut adapter = match Adapter::new(config) {
            Ok(a) => a,
            Err(e) => {
                release(&mut self.cac);
                return Err(refused(e.to_string()));
            }
        };
        if let Err(e) = adapter.open_vc(handle, vc, spec, rx) {
            release(&mut self.cac);
            return Err(refused(e.to_string()));
        }
        let owner_pid = self.conns.get(&id).map_or(0, |c| c.pid);
        let made = match path {
            DataPath::Direct => {
                make_channel(buffers, buffer_size, notify, signal_target, owner_pid)
            }
            DataPath::Lane => self.make_lane(vc, buffers, buffer_size, notify),
            DataPath::Daemon => {
                let bufs = VecBuffers::new(buffers, buffer_size as usize);
                let rx_count = buffers / 2;
                for b in 0..rx_count {
                    adapter.post_rx_buffer(BufferId(b));
                }
                Ok((
                    PortMem::Daemon {
                        bufs,
                        free_tx: (rx_count..buffers).rev().collect(),
                    },
                    Vec::new(),
                ))
            }
        };
        let (mem, fds) = match made {
            Ok(m) => m,
            Err(e) => {
                release(&mut self.cac);
                return Err(e);
            }
        };
        let mut cookie = [0u8; 16];
        if rustix::rand::getrandom(&mut cookie, rustix::rand::GetRandomFlags::empty()).unwrap_or(0)
            != 16
        {
            release(&mut self.cac);
            return Err((ErrorKind::Internal, "getrandom failed".into()));
        }
        self.next_handle = self.next_handle.wrapping_add(1).max(1);
        let mut port = Port {
            handle,
            vc,
            qos: qos.to_string(),
            conn: id,
            owner_pid,
            cookie,
            notify,
            spec,
            rx,
            adapter,
            mem,
            reservation,
            out: Box::new([[0; 53]; BATCH]),
            sent: 0,
            filled: 0,
            deferred: VecDeque::new(),
            tx_failed: 0,
            client_drops: 0,
        };
        if self.link.is_none() {
            port.mem.set_state(ChannelState::LinkDown);
        }
        self.by_vc.insert(vc.key(), handle);
        self.ports.insert(handle, port);
        Ok((
            Response::Opened {
                handle,
                cookie: cookie_hex(&cookie),
                path,
                buffers,
                buffer_size,
                max_sdu: max_sdu as u32,
                link_up: self.link.is_some(),
                lane: (path == DataPath::Lane).then(|| proto::LaneShape::from_spec(&spec)),
            },
            fds,
        ))
    }

    /// A lane-path channel: the channel region (the application takes both its ends;
    /// hostd keeps the state word) and a lane the switch has attached, when the link is
    /// up (else it is asked for when the link comes up).
    fn make_lane(
        &mut self,
        vc: VcId,
        buffers: u32,
        buffer_size: u32,
        notify: NotifyMode,
    ) -> Result<(PortMem, Vec<OwnedFd>), (ErrorKind, String)> {
        let Some(socket) = self.opts.lanes.clone() else {
            return Err((
                ErrorKind::Refused,
                format!(
                    "the lane path needs an unlimited shared-memory link to the switch; this host's is {}",
                    self.opts.link_description
                ),
            ));
        };
        if notify == NotifyMode::Signal {
            return Err((
                ErrorKind::BadRequest,
                "a lane-path application waits by polling or on eventfds, not for signals".into(),
            ));
        }
        let internal =
            |what: &str, e: &dyn std::fmt::Display| (ErrorKind::Internal, format!("{what}: {e}"));
        // hostd writes no completions on this channel: no waker.
        let (mem, mut fds) = make_channel(buffers, buffer_size, NotifyMode::Poll, None, 0)?;
        let PortMem::Direct { end, _region, .. } = mem else {
            return Err(internal("channel", &"not a shared-memory channel"));
        };
        let app_wake = fds[1].try_clone().map_err(|e| internal("dup", &e))?;
        let (a, b) = natm_link::shm::ShmLink::create_detached(natm_link::lane::LANE_RING_CELLS)
            .map_err(|e| internal("lane rings", &e))?;
        let switch = match self.link {
            Some(_) => Some(
                request_lane(&socket, vc, &b)
                    .map_err(|e| (ErrorKind::Refused, format!("lane for VC {vc}: {e}")))?,
            ),
            None => None,
        };
        fds.extend([a.region, a.wait, a.kick]);
        Ok((
            PortMem::Lane {
                end,
                app_wake,
                side_b: b,
                switch,
                _region,
            },
            fds,
        ))
    }

    fn close_port(&mut self, handle: u32) {
        let Some(mut p) = self.ports.remove(&handle) else {
            return;
        };
        self.by_vc.remove(&p.vc.key());
        // A lane's socket closes with `p`: the switch drops the lane.
        p.mem.set_state(ChannelState::Revoked);
        let _ = self.cac.release(p.reservation);
        // The adapter, its buffers and the mapping go with `p`.
    }

    fn daemon_send(&mut self, id: u64, handle: u32, sdu: Vec<u8>) {
        let link_up = self.link.is_some();
        let now = self.now;
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        let Some(p) = self.ports.get_mut(&handle).filter(|p| p.conn == id) else {
            c.refuse(
                ErrorKind::Refused,
                format!("data for handle {handle}, which is not a VC of this connection"),
            );
            return;
        };
        let PortMem::Daemon { bufs, free_tx } = &mut p.mem else {
            c.refuse(
                ErrorKind::Refused,
                format!("handle {handle} is a direct-path channel: send through the channel"),
            );
            return;
        };
        if sdu.is_empty() || sdu.len() > bufs.size().min(65535) {
            p.tx_failed += 1;
            c.refuse(
                ErrorKind::Refused,
                format!(
                    "SDU of {} bytes on handle {handle}: not in 1..={}",
                    sdu.len(),
                    bufs.size().min(65535)
                ),
            );
            return;
        }
        if !link_up {
            p.tx_failed += 1;
            return;
        }
        let Some(b) = free_tx.pop() else {
            c.stalled = Some((handle, sdu));
            return;
        };
        let buf = bufs
            .buffer_mut(BufferId(b))
            .expect("free list holds the VC's own buffer ids");
        buf[..sdu.len()].copy_from_slice(&sdu);
        p.adapter.post_tx(now, BufferId(b), sdu.len(), handle);
    }

    fn retry_stalled(&mut self, id: u64) -> bool {
        let Some(c) = self.conns.get_mut(&id) else {
            return false;
        };
        let Some((handle, sdu)) = c.stalled.take() else {
            return false;
        };
        self.daemon_send(id, handle, sdu);
        self.conns.get(&id).is_some_and(|c| c.stalled.is_none())
    }

    fn ping(&mut self, id: u64, vc_text: &str, segment: bool, tag: u32, timeout_ms: u64) {
        let vc = match parse_vc(vc_text) {
            Ok(v) => v,
            Err(m) => {
                return self.reply(
                    id,
                    Response::Error {
                        kind: ErrorKind::BadRequest,
                        message: m,
                    },
                );
            }
        };
        if self.link.is_none() {
            return self.reply(
                id,
                Response::Error {
                    kind: ErrorKind::LinkDown,
                    message: format!("link down: no loopback on {vc}"),
                },
            );
        }
        let flow = if segment {
            OamFlow::F5Segment
        } else {
            OamFlow::F5EndToEnd
        };
        let cell = OamRepr::Loopback(Loopback::request(tag)).to_cell(flow, vc);
        self.oam_out.push_back(cell);
        let now = Instant::now();
        self.pings.push(PendingPing {
            conn: id,
            vc,
            segment,
            tag,
            sent: now,
            deadline: now + Duration::from_millis(timeout_ms.min(60_000)),
        });
        if let Some(c) = self.conns.get_mut(&id) {
            c.pinging = true;
        }
        self.send_oam();
    }

    fn expire_pings(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.pings.len() {
            if self.pings[i].deadline <= now {
                let p = self.pings.swap_remove(i);
                let scope = if p.segment { "segment" } else { "end-to-end" };
                if let Some(c) = self.conns.get_mut(&p.conn) {
                    c.pinging = false;
                    c.refuse(
                        ErrorKind::Timeout,
                        format!("no {scope} loopback reply on {} in time", p.vc),
                    );
                }
            } else {
                i += 1;
            }
        }
    }

    fn status(&self) -> HostStatus {
        let channels = self
            .ports
            .values()
            .map(|p| {
                let c = p.adapter.counters();
                ChannelStatus {
                    handle: p.handle,
                    vc: p.vc.to_string(),
                    qos: p.qos.clone(),
                    owner_pid: p.owner_pid,
                    notify: p.notify,
                    path: match p.mem {
                        PortMem::Direct { .. } => DataPath::Direct,
                        PortMem::Daemon { .. } => DataPath::Daemon,
                        PortMem::Lane { .. } => DataPath::Lane,
                    },
                    counters: VcStats::from_adapter(&c, p.client_drops, p.tx_failed),
                    tx_queued: p.adapter.tx_queued() as u64,
                    rx_free: p.adapter.free_rx_buffers() as u64,
                }
            })
            .collect();
        let mut link = self.stats.clone();
        link.up = self.link.is_some();
        if let Some(l) = &self.link {
            // Counts of earlier links were added up when they failed.
            let c = l.counters();
            link.tx_cells += c.tx_cells;
            link.rx_cells += c.rx_cells;
        }
        HostStatus {
            name: self.opts.name.clone(),
            pid: std::process::id(),
            link,
            cac: CacStatus {
                capacity: self.cac.config().capacity,
                cbr: self.cac.reserved_cbr(),
                vbr: self.cac.reserved_vbr(),
                ubr: self.cac.ubr_count(),
            },
            channels,
            vm_rss_bytes: natm_nic::procfs::resident_bytes(None).unwrap_or(0),
        }
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
                        self.link = Some(l);
                        self.stats.reconnects += 1;
                        self.link_up();
                    }
                }
            }
        }
    }

    fn link_up(&mut self) {
        self.hec = HecReceiver::new();
        for p in self.ports.values_mut() {
            if let PortMem::Lane { switch, side_b, .. } = &mut p.mem {
                // The switch lost its lanes with the link (or is a new one): ask again.
                match self
                    .opts
                    .lanes
                    .as_deref()
                    .map(|s| request_lane(s, p.vc, side_b))
                {
                    Some(Ok(sock)) => *switch = Some(sock),
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
            .ports
            .values()
            .filter(|p| matches!(p.mem, PortMem::Daemon { .. }))
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
        }
        self.next_reconnect = Instant::now() + RECONNECT;
        self.stats.lost_on_failure += self.oam_out.len() as u64;
        self.oam_out.clear();
        for p in self.ports.values_mut() {
            self.stats.lost_on_failure += (p.filled - p.sent) as u64;
            p.sent = 0;
            p.filled = 0;
            // Flush the adapter: queued descriptors come back (as link-down failures).
            let _ = p.adapter.close_vc(p.handle);
            let _ = p.adapter.open_vc(p.handle, p.vc, p.spec, p.rx);
            if let PortMem::Lane { switch, .. } = &mut p.mem {
                *switch = None;
            }
            p.mem.set_state(ChannelState::LinkDown);
        }
        for ping in std::mem::take(&mut self.pings) {
            if let Some(c) = self.conns.get_mut(&ping.conn) {
                c.pinging = false;
                c.refuse(ErrorKind::LinkDown, format!("link down: {why}"));
            }
        }
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
            self.demux(n);
            // Applications see each batch's frames (and can post buffers back) at once.
            self.complete();
        }
        progress
    }

    /// Routes `inbox[..n]`: OAM F5 to hostd, the rest in runs to the adapter of their VC.
    /// A daemon-path VC's run ends at each end of frame and its buffer goes back to its
    /// pool at once: hostd owns those buffers, so it never runs out of them for want of a
    /// pass through [`Hostd::complete`].
    fn demux(&mut self, n: usize) {
        let now = self.now;
        let mut run: Option<(u32, usize)> = None;
        for i in 0..n {
            let (target, eof) = self.classify(i);
            if let Some((h, start)) = run
                && target != Some(h)
            {
                self.deliver(h, start, i, now);
                run = None;
            }
            let Some(t) = target else {
                continue;
            };
            let start = *run.get_or_insert((t, i));
            if eof
                && self
                    .ports
                    .get(&t)
                    .is_some_and(|p| matches!(p.mem, PortMem::Daemon { .. }))
            {
                self.deliver(t, start.1, i + 1, now);
                run = None;
            }
        }
        if let Some((h, start)) = run {
            self.deliver(h, start, n, now);
        }
    }

    /// Checks cell `i`'s header and says which port it goes to (and whether it ends a
    /// frame); OAM cells are handled here.
    fn classify(&mut self, i: usize) -> (Option<u32>, bool) {
        let verdict = self
            .hec
            .receive(&mut WireCell::new_unchecked(&mut self.inbox[i][..]));
        if matches!(verdict, HecVerdict::Discarded { .. }) {
            return (None, false);
        }
        let h = CellHeader::parse_unverified(
            &WireCell::new_unchecked(&self.inbox[i][..]),
            HeaderFormat::Uni,
        );
        if h.pti.is_f5_oam() {
            self.stats.rx_oam += 1;
            let cell = self.inbox[i];
            self.oam_in(h, &cell);
            return (None, false);
        }
        if matches!(h.vc.vci, Vci::F4_SEGMENT | Vci::F4_END_TO_END) {
            self.stats.rx_oam += 1;
            return (None, false);
        }
        let t = self.by_vc.get(&h.vc.key()).copied();
        if t.is_none() {
            self.stats.rx_unknown_vc += 1;
        }
        (t, h.pti.is_end_of_frame())
    }

    /// Hands `inbox[start..end]` to port `h`'s adapter.
    fn deliver(&mut self, h: u32, start: usize, end: usize, now: natm_core::Instant) {
        let link_down = self.link.is_none();
        let Some(p) = self.ports.get_mut(&h) else {
            return;
        };
        let cells = &self.inbox[start..end];
        match &mut p.mem {
            PortMem::Direct { end, .. } => {
                p.adapter.handle_cells(now, cells, &mut ChannelMemory(end));
            }
            PortMem::Daemon { bufs, .. } => {
                p.adapter.handle_cells(now, cells, bufs);
                complete_port(p, &mut self.conns, link_down);
            }
            // The switch sends a lane's user data into the lane: cells here came before
            // the lane was attached, and go nowhere.
            PortMem::Lane { .. } => self.stats.rx_unknown_vc += (end - start) as u64,
        }
    }

    fn oam_in(&mut self, h: CellHeader, cell: &Cell) {
        let Ok(oam) = OamCell::new_checked(&cell[5..]) else {
            return;
        };
        let Ok(OamRepr::Loopback(lb)) = OamRepr::parse(&oam) else {
            return;
        };
        let segment = h.pti == Pti::SegmentF5;
        if lb.request {
            if !segment {
                let reply = OamRepr::Loopback(lb.reply()).to_cell(OamFlow::F5EndToEnd, h.vc);
                self.oam_out.push_back(reply);
                self.stats.loopbacks_answered += 1;
            }
            return;
        }
        if let Some(i) = self
            .pings
            .iter()
            .position(|p| p.vc == h.vc && p.tag == lb.correlation_tag && p.segment == segment)
        {
            let p = self.pings.swap_remove(i);
            let rtt = p.sent.elapsed().as_nanos().max(1) as u64;
            if let Some(c) = self.conns.get_mut(&p.conn) {
                c.pinging = false;
                c.send(&Response::Pong { rtt_ns: rtt });
            }
        }
    }

    fn send_oam(&mut self) -> bool {
        let Some(link) = &mut self.link else {
            return false;
        };
        let mut progress = false;
        while let Some(c) = self.oam_out.front() {
            match link.send_cells(std::slice::from_ref(c)) {
                Ok(1) => {
                    progress = true;
                    self.oam_out.pop_front();
                }
                Ok(_) => return progress,
                Err(e) => {
                    self.link_failed(&e);
                    return true;
                }
            }
        }
        progress
    }

    fn timeouts(&mut self) {
        let now = self.now;
        for p in self.ports.values_mut() {
            if p.adapter.poll_timeout().is_some_and(|t| t <= now) {
                p.adapter.handle_timeout(now);
            }
        }
    }

    /// Round robin over the channels (CBR and VBR ones first), a batch each per turn,
    /// until the link is full or nobody has cells.
    fn transmit(&mut self) -> bool {
        let mut progress = self.send_oam();
        if self.link.is_none() || !self.oam_out.is_empty() {
            return progress;
        }
        let now = self.now;
        for _ in 0..16 {
            // CBR and VBR channels first (CAC keeps their sum within the link), then UBR;
            // round robin within each.
            let rotated = || {
                self.ports
                    .range(self.rr..)
                    .chain(self.ports.range(..self.rr))
            };
            let order: Vec<u32> = rotated()
                .filter(|(_, p)| p.spec.category != Category::Ubr)
                .chain(rotated().filter(|(_, p)| p.spec.category == Category::Ubr))
                .map(|(h, _)| *h)
                .collect();
            let mut any = false;
            for h in order {
                let Some(link) = &mut self.link else {
                    return progress;
                };
                let p = self.ports.get_mut(&h).expect("handles from the map");
                if p.sent == p.filled {
                    p.filled = match &mut p.mem {
                        PortMem::Direct { end, .. } => {
                            p.adapter
                                .poll_transmit(now, &ChannelMemory(end), &mut p.out[..])
                        }
                        PortMem::Daemon { bufs, .. } => {
                            p.adapter.poll_transmit(now, &*bufs, &mut p.out[..])
                        }
                        PortMem::Lane { .. } => 0,
                    };
                    p.sent = 0;
                }
                if p.sent == p.filled {
                    continue;
                }
                match link.send_cells(&p.out[p.sent..p.filled]) {
                    Ok(k) => {
                        p.sent += k;
                        any |= k > 0;
                        progress |= k > 0;
                        if p.sent < p.filled {
                            // The link is full: this channel goes first next time.
                            self.rr = h;
                            return progress;
                        }
                    }
                    Err(e) => {
                        self.link_failed(&e);
                        return true;
                    }
                }
                self.rr = h.wrapping_add(1);
            }
            if !any {
                break;
            }
        }
        progress
    }

    /// Takes descriptors and free buffers from every direct channel.
    fn take_posts(&mut self) -> bool {
        let now = self.now;
        let link_up = self.link.is_some();
        let mut progress = false;
        let mut broken = Vec::new();
        for p in self.ports.values_mut() {
            let PortMem::Direct { end, .. } = &mut p.mem else {
                continue;
            };
            let (deferred, tx_failed) = (&mut p.deferred, &mut p.tx_failed);
            let taken = driver::take_posts(
                end,
                &mut p.adapter,
                |adapter, req| {
                    let (buffer, len) = (BufferId(req.buffer.0), req.len as usize);
                    if link_up {
                        adapter.post_tx(now, buffer, len, req.handle);
                    } else {
                        deferred.push_back(Completion {
                            buffer,
                            direction: Direction::Tx,
                            handle: Some(req.handle),
                            len,
                            status: Status::Aborted,
                        });
                    }
                },
                // A refused descriptor is a failed transmission; a refused free buffer
                // is skipped.
                |dir| *tx_failed += u64::from(dir == Direction::Tx),
            );
            match taken {
                Ok(n) => progress |= n > 0,
                Err(_) => {
                    broken.push(p.handle);
                    progress = true;
                }
            }
        }
        for h in broken {
            // The application broke its rings: that channel is revoked, its VC closed.
            let conn = self.ports.get(&h).map(|p| p.conn);
            self.close_port(h);
            if let Some(c) = conn.and_then(|c| self.conns.get_mut(&c)) {
                c.send(&Response::Revoked { handle: h });
            }
        }
        progress
    }

    /// Hands completed buffers back: to the channel, or (daemon path) to the client as
    /// data frames and to the VC's pools.
    fn complete(&mut self) -> bool {
        let link_down = self.link.is_none();
        let mut progress = false;
        let Hostd { ports, conns, .. } = self;
        for p in ports.values_mut() {
            progress |= complete_port(p, conns, link_down);
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
        for p in &self.pings {
            until = until.min(p.deadline);
        }
        for p in self.ports.values() {
            if p.link_backlog() {
                // The link is full. A shared-memory link's descriptor turns readable when
                // the peer makes room (the full send announced the wait); other links
                // have no such event, so look again soon. The adapter's own deadline is
                // no reason to stay awake: its cells wait for the link, not the clock
                // (honouring it spun this loop for as long as the link stayed full).
                until = until.min(now + Duration::from_micros(100));
                continue;
            }
            if let Some(t) = p.adapter.poll_timeout() {
                until = until.min(self.epoch.to_std(t));
            }
        }
        if !self.oam_out.is_empty() || self.conns.values().any(|c| c.stalled.is_some()) {
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
        for p in self.ports.values_mut() {
            if let PortMem::Direct { end, waiter, .. } = &mut p.mem {
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
                    && !c.pinging
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
            for p in self.ports.values() {
                if let PortMem::Direct { waiter, .. } = &p.mem
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
            if let Some(p) = self.ports.get_mut(&h)
                && let PortMem::Direct { end, waiter, .. } = &mut p.mem
            {
                waiter.finish_sleep(end);
            }
        }
        Ok(())
    }
}

/// A UBR VC's shaping: its own PCR when it has one; with none (not given, or `max`), the
/// link's rate on a rated link and nothing on an unlimited one ([`UBR_UNSHAPED_PCR`]). CAC
/// resolves a missing PCR to the nominal rate it admits an unlimited link at; shaping to
/// that held a memory link to an OC-3c's 135 Mbit/s.
fn ubr_spec(
    tx: &natm_core::TrafficParams,
    contract_pcr: u32,
    capacity: u32,
    link_rate: Option<u32>,
) -> VcSpec {
    let own_rate = [tx.pcr, tx.max_pcr]
        .iter()
        .any(|r| !r.is_zero() && *r != Pcr::Max);
    let pcr = match (own_rate, link_rate) {
        (false, None) => UBR_UNSHAPED_PCR,
        _ if contract_pcr == 0 => capacity,
        _ => contract_pcr,
    };
    VcSpec::ubr(pcr, 1)
}

/// Hands one port's completed buffers back (see [`Hostd::complete`]).
fn complete_port(p: &mut Port, conns: &mut BTreeMap<u64, Conn>, link_down: bool) -> bool {
    let mut progress = false;
    while let Some(c) = p
        .deferred
        .pop_front()
        .or_else(|| p.adapter.poll_completion())
    {
        progress = true;
        if link_down && c.status == Status::Aborted && c.direction == Direction::Tx {
            p.tx_failed += 1;
        }
        match &mut p.mem {
            PortMem::Direct { end, .. } => {
                let code = if link_down && c.status == Status::Aborted {
                    proto::STATUS_LINK_DOWN
                } else {
                    status_code(c.status)
                };
                if let Err(nic::ChannelError::Full) = driver::complete_to_channel(end, &c, code) {
                    p.deferred.push_front(c);
                    break;
                }
            }
            PortMem::Daemon { bufs, free_tx } => match c.direction {
                Direction::Tx => {
                    if c.status != Status::Ok {
                        p.tx_failed += 1;
                    }
                    free_tx.push(c.buffer.0);
                }
                Direction::Rx => {
                    if c.status == Status::Ok
                        && let Some(conn) = conns.get_mut(&p.conn)
                    {
                        if conn.out_bytes > MAX_CLIENT_BACKLOG {
                            p.client_drops += 1;
                        } else if let Some(b) = bufs.buffer(c.buffer) {
                            conn.push(proto::data_frame(p.handle, &b[..c.len]), Vec::new());
                        }
                    }
                    if matches!(c.status, Status::Ok | Status::Aborted) {
                        p.adapter.post_rx_buffer(c.buffer);
                    }
                }
            },
            PortMem::Lane { .. } => {}
        }
    }
    progress
}

/// Creates a direct-path channel: region, adapter end and the three descriptors for the
/// application.
fn make_channel(
    buffers: u32,
    buffer_size: u32,
    notify: NotifyMode,
    signal_target: Option<SignalTarget>,
    owner_pid: i32,
) -> Result<(PortMem, Vec<OwnedFd>), (ErrorKind, String)> {
    let internal =
        |what: &str, e: &dyn std::fmt::Display| (ErrorKind::Internal, format!("{what}: {e}"));
    let entries = buffers.next_power_of_two();
    let cfg = ChannelConfig {
        tx_entries: entries,
        rx_entries: entries,
        completion_entries: 2 * entries,
        buffer_size,
        buffer_count: buffers,
    };
    let layout = cfg
        .layout()
        .map_err(|e| (ErrorKind::BadRequest, format!("channel shape: {e}")))?;
    let region = Arc::new(
        MemfdMem::create("natm-channel", layout.region_size)
            .map_err(|e| internal("channel region", &e))?,
    );
    let memfd = region
        .fd()
        .try_clone_to_owned()
        .map_err(|e| internal("dup", &e))?;
    let ch = Channel::create(region.clone(), &cfg).map_err(|e| internal("channel", &e))?;
    let mut end = ch.adapter().map_err(|e| internal("channel", &e))?;
    // The eventfd the application sleeps on: hostd writes it.
    let (app_waiter, app_waker) = Waiter::eventfd().map_err(|e| internal("eventfd", &e))?;
    let app_fd = app_waiter
        .as_fd()
        .expect("an eventfd waiter has a descriptor")
        .try_clone_to_owned()
        .map_err(|e| internal("dup", &e))?;
    // The eventfd hostd sleeps on: the application writes it.
    let (waiter, _) = Waiter::eventfd().map_err(|e| internal("eventfd", &e))?;
    let kick_fd = waiter
        .as_fd()
        .expect("an eventfd waiter has a descriptor")
        .try_clone_to_owned()
        .map_err(|e| internal("dup", &e))?;
    let waker = match notify {
        NotifyMode::Poll => Waker::None,
        NotifyMode::Adaptive | NotifyMode::EventFd => app_waker,
        NotifyMode::Signal => {
            let Some(t) = signal_target else {
                return Err((
                    ErrorKind::BadRequest,
                    "notify = signal needs a signal target (tid, signo, channel)".into(),
                ));
            };
            if t.channel >= signal::MAX_CHANNELS {
                return Err((
                    ErrorKind::BadRequest,
                    format!(
                        "signal channel {} is not below {}",
                        t.channel,
                        signal::MAX_CHANNELS
                    ),
                ));
            }
            if !signal::is_rt_signal(t.signo) {
                return Err((
                    ErrorKind::BadRequest,
                    format!("signal {} is not a real-time signal", t.signo),
                ));
            }
            // Only a thread of the connecting process may be signalled.
            if !Path::new(&format!("/proc/{owner_pid}/task/{}", t.tid)).exists() {
                return Err((
                    ErrorKind::Refused,
                    format!("thread {} is not a thread of pid {owner_pid}", t.tid),
                ));
            }
            Waker::Signal(natm_nic::notify::SignalWaker::new(signal::Target {
                pid: owner_pid,
                tid: t.tid,
                signo: t.signo,
                channel: t.channel,
            }))
        }
    };
    end.set_waker(waker);
    Ok((
        PortMem::Direct {
            end,
            waiter,
            _region: region,
        },
        vec![memfd, app_fd, kick_fd],
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tx(text: &str) -> natm_core::TrafficParams {
        text.parse::<Qos>().unwrap().tx
    }

    #[test]
    fn ubr_without_a_rate_is_unshaped_only_on_an_unlimited_link() {
        let pcr = |text: &str, contract: u32, link: Option<u32>| {
            ubr_spec(&tx(text), contract, NOMINAL_RATE, link).pcr
        };
        // What CAC gives a UBR VC with no PCR: the nominal rate.
        assert_eq!(pcr("ubr", NOMINAL_RATE, None), UBR_UNSHAPED_PCR);
        assert_eq!(pcr("ubr:pcr=max", NOMINAL_RATE, None), UBR_UNSHAPED_PCR);
        assert_eq!(pcr("ubr", 0, None), UBR_UNSHAPED_PCR);
        // A rate of its own is kept; a rated link shapes to its rate.
        assert_eq!(pcr("ubr:pcr=10000", 10_000, None), 10_000);
        assert_eq!(pcr("ubr", 96_000, Some(96_000)), 96_000);
        assert_eq!(pcr("ubr", 0, Some(96_000)), NOMINAL_RATE);
    }
}

//! natm's application API: open PVCs with a QoS through the host daemon (hostd) and send
//! and receive AAL5 SDUs on them, blocking, non-blocking or zero-copy (issue 5).
//!
//! A [`Host`] is a connection to one host's daemon. [`Host::open`] asks it for a VC; the
//! VC's data then takes one of three paths ([`DataPath`]):
//!
//! * **Direct** (the default): hostd hands the application a shared-memory channel (a
//!   memfd with descriptor, free-buffer and completion rings and the buffers, natm-nic's
//!   channel region). [`Vc::send`] copies the SDU into a free buffer of the region and posts
//!   a descriptor; hostd's adapter segments the cells straight from that buffer. Received
//!   SDUs are reassembled straight into buffers the application posted. No system call
//!   per SDU unless somebody sleeps ([`NotifyMode`] says how the application waits), and
//!   [`Vc::tx_buffer`] / [`Vc::recv_zero_copy`] avoid the copies too.
//! * **Daemon**: each SDU is one message on the Unix socket, copied by hostd, as with a
//!   kernel driver. It exists to be measured against the direct path.
//! * **Lane**: hostd brokers a ring pair into the switch's port for this VC alone, and the
//!   application runs the adapter itself, in its own calls, over buffers in its own memory
//!   (no channel rings, no daemon on the data path). Only those calls move its cells:
//!   [`Vc::flush`] before going quiet. A receiver takes from its lane only as many SDUs as
//!   it has free buffers; the rest wait in the lane, and the switch holds back what feeds a
//!   full lane, so a slow reader loses nothing (on the other paths, as in ATM, a receiver
//!   out of buffers drops whole frames).
//!
//! Errors say what failed ([`Error`]): no daemon at the socket, a refusal with hostd's
//! reason (VC in use, reserved VCI, admission control), the link being down, the channel
//! being revoked (closed, or hostd gone), nothing ready, a timeout, an SDU too long.
//!
//! A blocked call also ends when hostd goes away without revoking (killed): a waiting
//! direct-path call looks at the socket every 50 ms and returns [`Error::Revoked`]. A
//! send that finds a free buffer does not wait and does not look.
//!
//! What it is not: no switched VCs (no signalling yet), no async API; a [`Vc`] in
//! [`NotifyMode::Signal`] mode must be used on the thread that opened it (the signal goes to
//! that thread).
//!
//! # Example
//!
//! This runs for real: it starts a host daemon in this process on a loopback link (every
//! cell sent comes back), so what the VC sends it also receives.
//!
//! ```
//! use std::time::Duration;
//! use natm::{DataPath, Host, NotifyMode, OamScope, VcOptions};
//! use natm_host::hostd::{HostdOptions, HostdThread, IdleWait};
//! use natm_host::loopback::LoopLink;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::env::temp_dir().join(format!("natm-doc-{}", std::process::id()));
//! let opts = HostdOptions {
//!     name: "h1".into(),
//!     socket: dir.join("h1.sock"),
//!     wait: IdleWait::Adaptive,
//!     link_description: "loopback".into(),
//!     link_rate: None,
//!     lanes: None,
//! };
//! let hostd = HostdThread::spawn(opts, Box::new(|| Ok(Box::new(LoopLink::new(4096)) as _)))?;
//!
//! let host = Host::connect_path(hostd.socket())?;
//! let mut vc = host.open(
//!     VcOptions::new("0.100".parse()?)
//!         .qos("ubr".parse()?)
//!         .notify(NotifyMode::Adaptive)
//!         .path(DataPath::Direct),
//! )?;
//! vc.send(b"hello, ATM")?;
//! let mut buf = [0u8; 100];
//! let n = vc.recv_timeout(&mut buf, Duration::from_secs(5))?;
//! assert_eq!(&buf[..n], b"hello, ATM");
//!
//! // Zero copy: fill a buffer of the region in place, and read one in place.
//! let mut b = vc.tx_buffer()?;
//! b[..3].copy_from_slice(b"abc");
//! b.send(3)?;
//! assert_eq!(&*vc.recv_zero_copy()?, b"abc");
//!
//! // An end-to-end OAM loopback: on a loopback link hostd answers its own request.
//! let rtt = host.ping("0.100".parse()?, OamScope::EndToEnd, Duration::from_secs(2))?;
//! assert!(rtt > Duration::ZERO);
//! assert_eq!(vc.counters()?.sdus_sent, 2);
//! assert_eq!(host.status()?.channels.len(), 1);
//! drop(vc);
//! hostd.stop()?;
//! # let _ = std::fs::remove_dir_all(&dir);
//! # Ok(())
//! # }
//! ```
//!
//! With a daemon already running (`natm hostd --config h1.toml`), only the name is needed:
//!
//! ```no_run
//! # fn main() -> Result<(), natm::Error> {
//! let host = natm::Host::connect("h1")?;
//! println!("{} channels open", host.status()?.channels.len());
//! # Ok(())
//! # }
//! ```

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{self, IoSliceMut};
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use natm_adapter::{Adapter, AdapterConfig, HecCheck, RxVcConfig, VecBuffers};
use natm_link::CellLink;
use natm_link::clock::Epoch;
use natm_link::driver::LinkSide;
use natm_link::shm::{ShmHandover, ShmLink, ShmWait};
use natm_nic::channel::{AppEnd, BufferId, Channel, ChannelState, PollError};
use natm_nic::memfd::MemfdMem;
use natm_nic::notify::{AdaptivePolicy, WaitOutcome, Waiter, check_eventfd};
use natm_nic::signal;
use natm_proto::host::{
    self as proto, ErrorKind, Frame, FrameError, Request, Response, SignalTarget,
};
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};

pub use natm_core::{PvcAddr, Qos, VcId};
pub use natm_proto::host::{DataPath, HostStatus, NotifyMode, VcStats};

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No daemon answers at the socket.
    #[error("no natm host daemon at {}: {source}", path.display())]
    NoDaemon {
        /// The socket's path.
        path: PathBuf,
        /// Why connecting failed.
        source: io::Error,
    },
    /// hostd refused the request, and says why.
    #[error("refused: {0}")]
    Refused(String),
    /// The host's link is down; hostd reconnects it.
    #[error("the host's link is down")]
    LinkDown,
    /// The channel is closed or hostd stopped servicing it.
    #[error("channel revoked by hostd")]
    Revoked,
    /// Nothing can be done without waiting (`try_*`).
    #[error("would block")]
    WouldBlock,
    /// The time ran out.
    #[error("timed out")]
    Timeout,
    /// An SDU longer than the VC carries, or than the receive buffer holds.
    #[error("{len} bytes do not fit: at most {max}")]
    TooLong {
        /// The SDU's length.
        len: usize,
        /// The most allowed.
        max: usize,
    },
    /// The socket or a system call failed, or hostd broke the protocol.
    #[error(transparent)]
    Io(#[from] io::Error),
}

fn protocol(what: impl Into<String>) -> Error {
    Error::Io(io::Error::new(io::ErrorKind::InvalidData, what.into()))
}

impl From<FrameError> for Error {
    fn from(e: FrameError) -> Error {
        match e {
            FrameError::Closed => Error::Revoked,
            FrameError::Io(e) => Error::Io(e),
            e => protocol(e.to_string()),
        }
    }
}

/// Which OAM F5 loopback: answered by the segment end point (the switch) or the far end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OamScope {
    /// The far host's daemon answers.
    EndToEnd,
    /// The switch answers.
    Segment,
}

/// What to open.
#[derive(Clone, Debug)]
pub struct VcOptions {
    addr: PvcAddr,
    qos: Option<Qos>,
    notify: NotifyMode,
    path: DataPath,
    buffers: u32,
    buffer_size: u32,
}

impl VcOptions {
    /// The PVC `addr` (e.g. `"0.100".parse()?`), UBR, adaptive notification, direct path,
    /// 32 buffers of 64 KiB (SDUs up to 65,535 bytes).
    pub fn new(addr: PvcAddr) -> VcOptions {
        VcOptions {
            addr,
            qos: None,
            notify: NotifyMode::Adaptive,
            path: DataPath::Direct,
            buffers: 32,
            buffer_size: 65536,
        }
    }

    /// The QoS (linux-atm qos(7) text, parsed).
    pub fn qos(mut self, qos: Qos) -> VcOptions {
        self.qos = Some(qos);
        self
    }

    /// How to wait.
    pub fn notify(mut self, notify: NotifyMode) -> VcOptions {
        self.notify = notify;
        self
    }

    /// Which path.
    pub fn path(mut self, path: DataPath) -> VcOptions {
        self.path = path;
        self
    }

    /// Buffers: half for sending, half posted for receiving.
    pub fn buffers(mut self, n: u32) -> VcOptions {
        self.buffers = n;
        self
    }

    /// Bytes per buffer (a multiple of 64); bounds the SDU size.
    pub fn buffer_size(mut self, n: u32) -> VcOptions {
        self.buffer_size = n;
        self
    }
}

/// The most bytes of received SDUs a daemon-path VC keeps for the application; beyond it
/// SDUs are dropped, as a full socket receive buffer drops them, so a VC nobody reads
/// cannot make the application allocate without bound.
const MAX_QUEUED_BYTES: usize = 16 << 20;

/// The SDUs a daemon-path VC received and the application has not taken yet.
#[derive(Default)]
struct RxQueue {
    sdus: VecDeque<Vec<u8>>,
    bytes: usize,
}

impl RxQueue {
    fn push(&mut self, sdu: Vec<u8>) {
        if self.bytes + sdu.len() <= MAX_QUEUED_BYTES {
            self.bytes += sdu.len();
            self.sdus.push_back(sdu);
        }
    }

    fn pop(&mut self) -> Option<Vec<u8>> {
        let sdu = self.sdus.pop_front()?;
        self.bytes -= sdu.len();
        Some(sdu)
    }
}

/// The connection to hostd, shared by a [`Host`] and its VCs.
struct Conn {
    stream: UnixStream,
    rbuf: proto::FrameBuf,
    fds: Vec<OwnedFd>,
    /// One queue per open daemon-path VC: data for any other handle is dropped.
    data: HashMap<u32, RxQueue>,
    link_down: bool,
    revoked: HashSet<u32>,
    closed: bool,
}

impl Conn {
    fn new(stream: UnixStream) -> Conn {
        Conn {
            stream,
            rbuf: proto::FrameBuf::new(),
            fds: Vec::new(),
            data: HashMap::new(),
            link_down: false,
            revoked: HashSet::new(),
            closed: false,
        }
    }

    /// Reads what arrives within `timeout` (`None`: wait) into the buffer; false if
    /// nothing did.
    fn fill(&mut self, timeout: Option<Duration>) -> Result<bool, Error> {
        if self.closed {
            return Err(Error::Revoked);
        }
        let mut pfd = [rustix::event::PollFd::new(
            &self.stream,
            rustix::event::PollFlags::IN,
        )];
        let ts = timeout.and_then(|t| rustix::event::Timespec::try_from(t).ok());
        match rustix::event::poll(&mut pfd, ts.as_ref()) {
            Ok(0) => return Ok(false),
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => return Ok(false),
            Err(e) => return Err(Error::Io(e.into())),
        }
        let mut buf = [0u8; 65536];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(8))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let msg = match recvmsg(
            &self.stream,
            &mut [IoSliceMut::new(&mut buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC | RecvFlags::DONTWAIT,
        ) {
            Ok(m) => m,
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => return Ok(false),
            Err(e) => return Err(Error::Io(e.into())),
        };
        for m in control.drain() {
            if let RecvAncillaryMessage::ScmRights(it) = m {
                self.fds.extend(it);
            }
        }
        if msg.bytes == 0 {
            self.closed = true;
            return Err(Error::Revoked);
        }
        self.rbuf.extend(&buf[..msg.bytes]);
        Ok(true)
    }

    /// Writes a whole frame; a socket hostd closed is [`Error::Revoked`].
    fn write(&self, frame: &[u8]) -> Result<(), Error> {
        proto::write_frame(&self.stream, frame).map_err(|e| {
            if e.kind() == io::ErrorKind::BrokenPipe {
                Error::Revoked
            } else {
                Error::Io(e)
            }
        })
    }

    /// The host's state.
    fn status(&mut self) -> Result<HostStatus, Error> {
        match self.request(&Request::Status)? {
            (Response::Status(s), _) => Ok(s),
            (r, _) => Err(protocol(format!("hostd answered status with {r:?}"))),
        }
    }

    /// The next frame already read that is not a notice or data (those are recorded).
    fn next_answer(&mut self) -> Result<Option<Response>, Error> {
        while let Some(frame) = self.rbuf.next_frame::<Response>()? {
            match frame {
                Frame::Data { handle, sdu } => {
                    if let Some(q) = self.data.get_mut(&handle) {
                        q.push(sdu);
                    }
                }
                Frame::Control(Response::LinkDown) => self.link_down = true,
                Frame::Control(Response::LinkUp) => self.link_down = false,
                Frame::Control(Response::Revoked { handle }) => {
                    self.revoked.insert(handle);
                }
                Frame::Control(r) => return Ok(Some(r)),
            }
        }
        Ok(None)
    }

    /// Takes in whatever has arrived, without waiting.
    fn catch_up(&mut self) -> Result<(), Error> {
        while self.fill(Some(Duration::ZERO))? {}
        if let Some(r) = self.next_answer()? {
            return Err(protocol(format!("unexpected message from hostd: {r:?}")));
        }
        Ok(())
    }

    fn request(&mut self, r: &Request) -> Result<(Response, Vec<OwnedFd>), Error> {
        self.request_within(r, None)
    }

    /// Sends a request and waits for its answer, at most `timeout` (`None`: no limit).
    fn request_within(
        &mut self,
        r: &Request,
        timeout: Option<Duration>,
    ) -> Result<(Response, Vec<OwnedFd>), Error> {
        let deadline = timeout.map(|t| Instant::now() + t);
        self.fds.clear();
        self.write(&proto::control_frame(r))?;
        loop {
            if let Some(answer) = self.next_answer()? {
                let fds = std::mem::take(&mut self.fds);
                return match answer {
                    Response::Error { kind, message } => Err(match kind {
                        ErrorKind::LinkDown => Error::LinkDown,
                        ErrorKind::Timeout => Error::Timeout,
                        _ => Error::Refused(message),
                    }),
                    a => Ok((a, fds)),
                };
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if !self.fill(left)? && deadline.is_some_and(|d| d <= Instant::now()) {
                return Err(Error::Timeout);
            }
        }
    }
}

/// A connection to a host's daemon. See the [crate documentation](crate).
pub struct Host {
    conn: Arc<Mutex<Conn>>,
    path: PathBuf,
}

fn lock(c: &Mutex<Conn>) -> MutexGuard<'_, Conn> {
    // A panic elsewhere while holding the lock leaves the connection usable.
    c.lock().unwrap_or_else(|p| p.into_inner())
}

/// How often a waiting direct-path call looks whether hostd is still there.
const DAEMON_CHECK: Duration = Duration::from_millis(50);

/// The longest a daemon-path receive holds the host's connection in one wait.
const RECV_SLICE: Duration = Duration::from_millis(10);

static SIGNAL_CHANNEL: AtomicU32 = AtomicU32::new(0);
static CORRELATION: AtomicU32 = AtomicU32::new(1);

impl Host {
    /// Connects to host `name`'s daemon at its default socket
    /// ([`natm_proto::host::default_socket`]).
    pub fn connect(name: &str) -> Result<Host, Error> {
        Host::connect_path(proto::default_socket(name))
    }

    /// Connects to the daemon listening at `path`.
    pub fn connect_path(path: impl AsRef<Path>) -> Result<Host, Error> {
        let path = path.as_ref().to_path_buf();
        let stream = UnixStream::connect(&path).map_err(|source| Error::NoDaemon {
            path: path.clone(),
            source,
        })?;
        Ok(Host {
            conn: Arc::new(Mutex::new(Conn::new(stream))),
            path,
        })
    }

    /// The daemon's socket.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens a VC.
    pub fn open(&self, opts: VcOptions) -> Result<Vc, Error> {
        let mut receiver = None;
        let signal_target = if opts.notify == NotifyMode::Signal && opts.path == DataPath::Direct {
            let signo = signal::rt_signal(4).ok_or_else(|| {
                Error::Io(io::Error::other("no real-time signal SIGRTMIN+4 here"))
            })?;
            let channel = SIGNAL_CHANNEL.fetch_add(1, Ordering::Relaxed) % signal::MAX_CHANNELS;
            let r = signal::Receiver::new(signo, channel)?;
            let t = r.target();
            receiver = Some(r);
            Some(SignalTarget {
                tid: t.tid,
                signo,
                channel,
            })
        } else {
            None
        };
        let req = Request::Open {
            vc: opts.addr.to_string(),
            qos: opts
                .qos
                .map_or_else(|| "ubr".to_string(), |q| q.to_string()),
            path: opts.path,
            notify: opts.notify,
            signal: signal_target,
            buffers: opts.buffers,
            buffer_size: opts.buffer_size,
        };
        let (answer, fds) = {
            let mut c = lock(&self.conn);
            let (answer, fds) = c.request(&req)?;
            if let Response::Opened { handle, .. } = answer
                && opts.path == DataPath::Daemon
            {
                // Under the same lock: the VC's first SDUs may follow the answer closely.
                c.data.insert(handle, RxQueue::default());
            }
            (answer, fds)
        };
        let Response::Opened {
            handle,
            cookie,
            max_sdu,
            buffers,
            lane,
            ..
        } = answer
        else {
            return Err(protocol(format!("hostd answered an open with {answer:?}")));
        };
        let mut vc = Vc {
            conn: self.conn.clone(),
            handle,
            cookie,
            max_sdu: max_sdu as usize,
            direct: None,
        };
        if opts.path == DataPath::Direct {
            // From here on, a failure closes the VC again (Vc's Drop).
            let daemon = lock(&self.conn).stream.try_clone()?;
            vc.direct = Some(Direct::attach(daemon, fds, opts.notify, receiver, buffers)?);
        } else if opts.path == DataPath::Lane {
            let daemon = lock(&self.conn).stream.try_clone()?;
            let shape = lane.ok_or_else(|| protocol("hostd's lane answer has no shape"))?;
            let vc_id = opts
                .addr
                .vc()
                .ok_or_else(|| protocol("hostd opened a VC with no VPI or VCI"))?;
            let setup = LaneSetup {
                handle,
                vc: vc_id,
                max_sdu: max_sdu as usize,
                shape,
            };
            vc.direct = Some(Direct::attach_lane(
                daemon,
                fds,
                opts.notify,
                buffers,
                setup,
            )?);
        }
        Ok(vc)
    }

    /// Sends one OAM F5 loopback request on `vc` and waits for the reply: the round-trip
    /// time as hostd measured it.
    pub fn ping(&self, vc: PvcAddr, scope: OamScope, timeout: Duration) -> Result<Duration, Error> {
        let req = Request::Ping {
            vc: vc.to_string(),
            segment: scope == OamScope::Segment,
            correlation: CORRELATION.fetch_add(1, Ordering::Relaxed),
            timeout_ms: timeout.as_millis().clamp(1, u128::from(u64::MAX)) as u64,
        };
        match lock(&self.conn).request(&req)? {
            (Response::Pong { rtt_ns }, _) => Ok(Duration::from_nanos(rtt_ns)),
            (r, _) => Err(protocol(format!("hostd answered a ping with {r:?}"))),
        }
    }

    /// The host's state: link, admission books, every channel.
    pub fn status(&self) -> Result<HostStatus, Error> {
        lock(&self.conn).status()
    }

    /// Closes the VC with this cookie (see [`Vc::cookie`]); hostd refuses a cookie of
    /// another connection's VC.
    pub fn close_cookie(&self, cookie: &str) -> Result<(), Error> {
        match lock(&self.conn).request(&Request::Close {
            cookie: cookie.to_string(),
        })? {
            (Response::Closed { .. }, _) => Ok(()),
            (r, _) => Err(protocol(format!("hostd answered close with {r:?}"))),
        }
    }
}

/// The application's side of a direct-path channel.
struct Direct {
    app: AppEnd,
    waiter: Waiter,
    buffer_size: usize,
    free_tx: Vec<BufferId>,
    /// Transmit buffers in all: when `free_tx` has them all, nothing is queued.
    tx_total: usize,
    /// Received SDUs not yet taken: buffer and length.
    ready: VecDeque<(BufferId, usize)>,
    /// A transmission failed because the link was down; reported by the next send.
    tx_link_down: bool,
    /// The connection to hostd, watched while waiting: if hostd dies it cannot mark the
    /// channel revoked, but its end of the socket closes.
    daemon: UnixStream,
    /// Lane path: the adapter this process runs.
    lane: Option<Box<LaneEngine>>,
}

/// What hostd's answer says about a lane-path VC.
struct LaneSetup {
    handle: u32,
    vc: VcId,
    max_sdu: usize,
    shape: proto::LaneShape,
}

/// How long dropping a lane-path VC keeps sending what it had queued.
const LANE_LINGER: Duration = Duration::from_secs(1);

/// How long an adaptive lane-path wait spins before it sleeps.
const LANE_SPIN: Duration = Duration::from_micros(30);

/// The lane path's engine: an adapter for the one VC, driven by the application's own
/// calls, between the VC's buffers (in this process's memory: no channel rings between the
/// application and its own adapter) and the lane.
struct LaneEngine {
    adapter: Adapter,
    side: LinkSide<ShmLink>,
    buffers: VecBuffers,
    epoch: Epoch,
    notify: NotifyMode,
    /// hostd writes it when it changes the channel's state (link down, revoked).
    state_fd: OwnedFd,
    /// The last pump moved nothing: its look at the lane found it empty, which asked the
    /// switch to kick the lane's eventfd (or there was no buffer to receive into).
    idle: bool,
}

fn lane_error(e: io::Error) -> Error {
    protocol(format!("lane: {e}"))
}

impl LaneEngine {
    /// Moves what can move now (`now` just read from the clock); whether any cell did.
    /// A timeout handled is not movement: a shaped VC whose cells wait for room in the
    /// lane is due at every pump, and counting it kept a polling sender from yielding.
    fn pump(&mut self, now: Instant) -> Result<bool, Error> {
        let now = self.epoch.at(now);
        if self.adapter.poll_timeout().is_some_and(|t| t <= now) {
            self.adapter.handle_timeout(now);
        }
        // Only as many SDUs begun as there are free receive buffers: the rest stay in the
        // lane (the switch holds back what feeds a full lane) instead of being dropped here.
        let free = self.adapter.free_rx_buffers();
        let cells_in = self
            .side
            .receive_sdus(&mut self.adapter, now, &mut self.buffers, free)
            .map_err(lane_error)?;
        let cells_out = self
            .side
            .transmit(&mut self.adapter, now, &self.buffers)
            .map_err(lane_error)?;
        let moved = cells_in + cells_out > 0;
        self.idle = !moved;
        Ok(moved)
    }

    /// Queues buffer `b` (`len` bytes) for transmission and moves what can move.
    fn send(&mut self, b: BufferId, len: usize, handle: u32) -> Result<(), Error> {
        let now = Instant::now();
        let at = self.epoch.at(now);
        self.adapter
            .post_tx(at, natm_adapter::BufferId(b.0), len, handle);
        self.pump(now).map(|_| ())
    }

    /// Waits at most `left` from `start` (just read) for anything to move (or the state to
    /// change): pumping between yields (poll), spinning then sleeping (adaptive) or sleeping
    /// at once (eventfd) on the lane's eventfd and the state eventfd. False if nothing came.
    /// The caller has just pumped and found nothing to take; if that pump moved cells, the
    /// lane is looked at again before any sleep.
    fn wait(&mut self, start: Instant, left: Duration) -> Result<bool, Error> {
        if !self.idle && self.pump(start)? {
            return Ok(true);
        }
        let spin = match self.notify {
            NotifyMode::Poll => left,
            NotifyMode::Adaptive => LANE_SPIN.min(left),
            _ => Duration::ZERO,
        };
        let mut now = start;
        loop {
            let spent = now.saturating_duration_since(start);
            if spent >= left {
                return Ok(false);
            }
            if spent < spin {
                // Another poller (the peer application, the switch) may need this CPU.
                std::thread::yield_now();
                // One clock read per round serves the adapter and the deadline.
                now = Instant::now();
                if self.pump(now)? {
                    return Ok(true);
                }
                continue;
            }
            // The last pump's receive found the lane empty, which asked the switch to kick
            // the lane's eventfd with its next cells (and a full ring, to kick with room).
            let mut until = start + left;
            if let Some(t) = self.adapter.poll_timeout() {
                until = until.min(self.epoch.to_std(t));
            }
            let sleep = until.saturating_duration_since(Instant::now());
            let ts = rustix::event::Timespec::try_from(sleep).ok();
            // An eventfd-mode shm link always has its descriptor.
            let link_fd = self.side.link().poll_fd().unwrap_or(self.state_fd.as_fd());
            let mut fds = [
                rustix::event::PollFd::new(&self.state_fd, rustix::event::PollFlags::IN),
                rustix::event::PollFd::from_borrowed_fd(link_fd, rustix::event::PollFlags::IN),
            ];
            match rustix::event::poll(&mut fds, ts.as_ref()) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(Error::Io(e.into())),
            }
            let mut b = [0u8; 8];
            let _ = rustix::io::read(&self.state_fd, &mut b);
            if let Some(fd) = self.side.link().poll_fd() {
                let _ = rustix::io::read(fd, &mut b);
            }
            return Ok(true);
        }
    }
}

impl Direct {
    fn attach(
        daemon: UnixStream,
        fds: Vec<OwnedFd>,
        notify: NotifyMode,
        receiver: Option<signal::Receiver>,
        buffers: u32,
    ) -> Result<Direct, Error> {
        let mut fds = fds.into_iter();
        let (Some(region), Some(wake_me), Some(kick), None) =
            (fds.next(), fds.next(), fds.next(), fds.next())
        else {
            return Err(protocol(
                "hostd's open answer did not carry three descriptors",
            ));
        };
        let mem = MemfdMem::map(region).map_err(|e| protocol(format!("channel region: {e}")))?;
        let ch = Channel::open(Arc::new(mem)).map_err(|e| protocol(format!("channel: {e}")))?;
        let mut app = ch.app().map_err(|e| protocol(format!("channel: {e}")))?;
        app.set_waker(Waiter::eventfd_waker(kick).map_err(|e| protocol(format!("eventfd: {e}")))?);
        let waiter = match (notify, receiver) {
            (NotifyMode::Poll, _) => Waiter::BusyPoll,
            (NotifyMode::Adaptive, _) => {
                check_eventfd(&wake_me).map_err(|e| protocol(format!("eventfd: {e}")))?;
                Waiter::Adaptive(AdaptivePolicy::default(), Arc::new(wake_me))
            }
            (NotifyMode::EventFd, _) => {
                Waiter::eventfd_from(wake_me).map_err(|e| protocol(format!("eventfd: {e}")))?
            }
            (NotifyMode::Signal, Some(r)) => Waiter::Signal(r),
            (NotifyMode::Signal, None) => return Err(protocol("no signal receiver")),
        };
        let geom = ch
            .layout()
            .buffers
            .ok_or_else(|| protocol("channel has no buffers"))?;
        let count = geom.count.min(buffers);
        Direct::assemble(app, waiter, geom.size, count, daemon, None)
    }

    /// The application's side of a channel of `count` buffers of `size` bytes: the first
    /// half posted for receiving, the rest free for sending.
    fn assemble(
        mut app: AppEnd,
        waiter: Waiter,
        size: u32,
        count: u32,
        daemon: UnixStream,
        mut lane: Option<Box<LaneEngine>>,
    ) -> Result<Direct, Error> {
        let rx = count / 2;
        for b in 0..rx {
            match &mut lane {
                Some(l) => l.adapter.post_rx_buffer(natm_adapter::BufferId(b)),
                None => app
                    .post_rx(BufferId(b))
                    .map_err(|e| protocol(format!("posting a receive buffer: {e}")))?,
            }
        }
        Ok(Direct {
            app,
            waiter,
            buffer_size: size as usize,
            free_tx: (rx..count).rev().map(BufferId).collect(),
            tx_total: (count - rx) as usize,
            ready: VecDeque::new(),
            tx_link_down: false,
            daemon,
            lane,
        })
    }

    /// The lane path: the channel's both ends, an adapter for the one VC as hostd
    /// admitted it, and the lane's side A.
    fn attach_lane(
        daemon: UnixStream,
        fds: Vec<OwnedFd>,
        notify: NotifyMode,
        buffers: u32,
        setup: LaneSetup,
    ) -> Result<Direct, Error> {
        let fds: [OwnedFd; proto::LANE_OPEN_FDS] = fds.try_into().map_err(|v: Vec<OwnedFd>| {
            protocol(format!(
                "hostd's lane answer carried {} descriptors, not {}",
                v.len(),
                proto::LANE_OPEN_FDS
            ))
        })?;
        let [region, state_fd, _kick, lane_region, lane_wait, lane_kick] = fds;
        check_eventfd(&state_fd).map_err(|e| protocol(format!("eventfd: {e}")))?;
        let mem = MemfdMem::map(region).map_err(|e| protocol(format!("channel region: {e}")))?;
        let ch = Channel::open(Arc::new(mem)).map_err(|e| protocol(format!("channel: {e}")))?;
        // The channel carries the state word only: the buffers are this process's own.
        let app = ch.app().map_err(|e| protocol(format!("channel: {e}")))?;
        let geom = ch
            .layout()
            .buffers
            .ok_or_else(|| protocol("channel has no buffers"))?;
        let count = geom.count.min(buffers);
        let mut config = AdapterConfig::new(count, geom.size as usize);
        config.link = natm_core::LineRate::Unlimited;
        // The switch writes every header it sends: its HEC is checked there, not here.
        config.hec = HecCheck::Off;
        config.max_vcs = 1;
        config.max_tx_queued = count as usize;
        config.event_queue_max = 64;
        let mut adapter =
            Adapter::new(config).map_err(|e| protocol(format!("lane adapter: {e}")))?;
        adapter
            .open_vc(
                setup.handle,
                setup.vc,
                setup.shape.spec(),
                RxVcConfig::aal5(setup.max_sdu),
            )
            .map_err(|e| protocol(format!("lane adapter: {e}")))?;
        let wait = match notify {
            NotifyMode::Poll => ShmWait::BusyPoll,
            _ => ShmWait::EventFd,
        };
        let mut link = ShmLink::open_a(
            ShmHandover {
                region: lane_region,
                wait: lane_wait,
                kick: lane_kick,
            },
            wait,
        )
        .map_err(|e| protocol(format!("lane: {e}")))?;
        // The application's CPU does the adapter's work and the switch has its own: large
        // batches skip the wait for the slot lines the switch read last (README, Benchmarks).
        link.set_streaming_writes(true);
        let engine = LaneEngine {
            adapter,
            side: LinkSide::new(link),
            buffers: VecBuffers::new(count, geom.size as usize),
            epoch: Epoch::now(),
            notify,
            state_fd,
            idle: false,
        };
        // The lane's waits are the engine's: the channel's waiter is never used.
        Direct::assemble(
            app,
            Waiter::BusyPoll,
            geom.size,
            count,
            daemon,
            Some(Box::new(engine)),
        )
    }

    /// Copies `sdu` into transmit buffer `b`.
    fn write_buffer(&mut self, b: BufferId, sdu: &[u8]) -> Result<(), Error> {
        match &mut self.lane {
            Some(l) => l
                .buffers
                .buffer_mut(natm_adapter::BufferId(b.0))
                .and_then(|buf| buf.get_mut(..sdu.len()))
                .map(|buf| buf.copy_from_slice(sdu))
                .ok_or_else(|| protocol(format!("transmit buffer {} is too small", b.0))),
            None => self
                .app
                .write_buffer(b, sdu)
                .map_err(|e| protocol(format!("transmit buffer: {e}"))),
        }
    }

    /// The first `len` bytes of buffer `b` (empty if out of bounds).
    fn buffer(&self, b: BufferId, len: usize) -> &[u8] {
        match &self.lane {
            Some(l) => l
                .buffers
                .buffer(natm_adapter::BufferId(b.0))
                .and_then(|buf| buf.get(..len)),
            None => self.app.buffer(b, len).ok(),
        }
        .unwrap_or(&[])
    }

    /// The first `len` bytes of buffer `b`, writable (empty if out of bounds).
    fn buffer_mut(&mut self, b: BufferId, len: usize) -> &mut [u8] {
        match &mut self.lane {
            Some(l) => l
                .buffers
                .buffer_mut(natm_adapter::BufferId(b.0))
                .and_then(|buf| buf.get_mut(..len)),
            None => self.app.buffer_mut(b, len).ok(),
        }
        .unwrap_or(&mut [])
    }

    /// Sends buffer `b`'s first `len` bytes on VC `handle`.
    fn post_tx(&mut self, b: BufferId, len: usize, handle: u32) -> Result<(), Error> {
        match &mut self.lane {
            Some(l) => l.send(b, len, handle),
            None => self
                .app
                .post_tx(b, len as u32, handle, 0)
                .map_err(|e| protocol(format!("transmit ring: {e}"))),
        }
    }

    /// Hands receive buffer `b` back for reception.
    fn post_rx(&mut self, b: BufferId) {
        match &mut self.lane {
            Some(l) => l.adapter.post_rx_buffer(natm_adapter::BufferId(b.0)),
            None => {
                let _ = self.app.post_rx(b);
            }
        }
    }

    /// Whether hostd's end of the socket is closed (hostd exited or was killed).
    fn daemon_gone(&self) -> bool {
        use rustix::event::{PollFd, PollFlags};
        let mut pfd = [PollFd::new(&self.daemon, PollFlags::RDHUP)];
        match rustix::event::poll(&mut pfd, Some(&rustix::event::Timespec::default())) {
            Ok(n) if n > 0 => pfd[0]
                .revents()
                .intersects(PollFlags::HUP | PollFlags::RDHUP | PollFlags::ERR),
            _ => false,
        }
    }

    fn state(&self) -> Result<(), Error> {
        match self.app.state() {
            ChannelState::Live => Ok(()),
            ChannelState::LinkDown => Err(Error::LinkDown),
            _ => Err(Error::Revoked),
        }
    }

    /// Takes every completion.
    fn drain(&mut self) -> Result<(), Error> {
        if let Some(l) = &mut self.lane {
            l.pump(Instant::now())?;
            while let Some(c) = l.adapter.poll_completion() {
                let b = BufferId(c.buffer.0);
                match c.direction {
                    natm_adapter::Direction::Rx if c.status == natm_adapter::Status::Ok => {
                        self.ready.push_back((b, c.len))
                    }
                    // A frame that never came (aborted, too long): the buffer goes back.
                    natm_adapter::Direction::Rx => l.adapter.post_rx_buffer(c.buffer),
                    natm_adapter::Direction::Tx => self.free_tx.push(b),
                }
            }
            return Ok(());
        }
        loop {
            match self.app.poll_completion() {
                Ok(Some(c)) if c.rx => {
                    if c.status == 0 {
                        self.ready.push_back((c.buffer, c.len as usize));
                    } else {
                        // A frame that never came (aborted): the buffer goes back.
                        let _ = self.app.post_rx(c.buffer);
                    }
                }
                Ok(Some(c)) => {
                    if c.status == proto::STATUS_LINK_DOWN {
                        self.tx_link_down = true;
                    }
                    self.free_tx.push(c.buffer);
                }
                Ok(None) => return Ok(()),
                Err(PollError::Refused(_)) => {}
                Err(PollError::Fault(f)) => return Err(protocol(format!("completion ring: {f}"))),
            }
        }
    }

    /// Waits for a completion or a state change until `deadline`; false if it passed.
    fn wait(&mut self, deadline: Option<Instant>) -> Result<bool, Error> {
        let now = Instant::now();
        let left = match deadline {
            Some(d) => {
                let left = d.saturating_duration_since(now);
                if left.is_zero() {
                    return Ok(false);
                }
                left
            }
            None => DAEMON_CHECK,
        };
        // In slices: between them, a hostd that died without revoking is noticed.
        let out = match &mut self.lane {
            Some(l) => {
                if l.wait(now, left.min(DAEMON_CHECK))? {
                    WaitOutcome::Ready
                } else {
                    WaitOutcome::TimedOut
                }
            }
            None => self.waiter.wait(&mut self.app, left.min(DAEMON_CHECK))?,
        };
        if out == WaitOutcome::TimedOut && self.daemon_gone() {
            return Err(Error::Revoked);
        }
        Ok(true)
    }

    fn free_tx(&mut self, deadline: Option<Instant>) -> Result<BufferId, Error> {
        // A lane's completions are collected when none is free: a drain there costs a pump
        // (a clock read and a look at the lane), and the send that follows pumps anyway.
        if self.lane.is_some() && !self.free_tx.is_empty() {
            self.state()?;
            if let Some(b) = self.free_tx.pop() {
                return Ok(b);
            }
        }
        loop {
            self.drain()?;
            self.state()?;
            if std::mem::take(&mut self.tx_link_down) {
                return Err(Error::LinkDown);
            }
            if let Some(b) = self.free_tx.pop() {
                return Ok(b);
            }
            if !self.wait(deadline)? {
                return Err(if deadline.is_some_and(|d| d <= Instant::now()) {
                    Error::WouldBlock
                } else {
                    Error::Timeout
                });
            }
        }
    }

    /// Waits until every transmit buffer is back: every SDU sent has left the adapter.
    fn flush(&mut self, deadline: Instant) -> Result<(), Error> {
        loop {
            self.drain()?;
            self.state()?;
            let backlog = self.lane.as_ref().map_or(0, |l| l.side.backlog());
            if self.free_tx.len() >= self.tx_total && backlog == 0 {
                return Ok(());
            }
            if !self.wait(Some(deadline))? {
                return Err(Error::Timeout);
            }
        }
    }

    /// Waits at most `timeout` (`None`: for ever) for a received SDU; its buffer and
    /// length.
    fn next_rx(
        &mut self,
        timeout: Option<Duration>,
        zero_wait: bool,
    ) -> Result<(BufferId, usize), Error> {
        // One taken already: no pump (on a lane, a clock read and a look at the lane).
        if let Some(&r) = self.ready.front() {
            return Ok(r);
        }
        // The clock is read only if the call has to wait.
        let mut deadline = None;
        loop {
            self.drain()?;
            if let Some(&r) = self.ready.front() {
                return Ok(r);
            }
            self.state()?;
            let deadline = *deadline.get_or_insert_with(|| timeout.map(|t| Instant::now() + t));
            if !self.wait(deadline)? {
                return Err(if zero_wait {
                    Error::WouldBlock
                } else {
                    Error::Timeout
                });
            }
        }
    }
}

/// An open VC. Dropping it closes it.
pub struct Vc {
    conn: Arc<Mutex<Conn>>,
    handle: u32,
    cookie: String,
    max_sdu: usize,
    direct: Option<Direct>,
}

impl Vc {
    /// hostd's handle for the VC.
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// The cookie that closes it ([`Host::close_cookie`]).
    pub fn cookie(&self) -> &str {
        &self.cookie
    }

    /// The largest SDU it carries.
    pub fn max_sdu(&self) -> usize {
        self.max_sdu
    }

    fn check_len(&self, len: usize) -> Result<(), Error> {
        if len == 0 {
            return Err(Error::Refused("an AAL5 SDU has at least 1 byte".into()));
        }
        if len > self.max_sdu {
            return Err(Error::TooLong {
                len,
                max: self.max_sdu,
            });
        }
        Ok(())
    }

    fn send_deadline(&mut self, sdu: &[u8], deadline: Option<Instant>) -> Result<(), Error> {
        self.check_len(sdu.len())?;
        let handle = self.handle;
        match &mut self.direct {
            Some(d) => {
                let b = d.free_tx(deadline)?;
                d.write_buffer(b, sdu)?;
                d.post_tx(b, sdu.len(), handle)
            }
            None => {
                let mut c = lock(&self.conn);
                c.catch_up()?;
                if c.revoked.contains(&handle) {
                    return Err(Error::Revoked);
                }
                if c.link_down {
                    return Err(Error::LinkDown);
                }
                if deadline.is_some() {
                    let mut pfd = [rustix::event::PollFd::new(
                        &c.stream,
                        rustix::event::PollFlags::OUT,
                    )];
                    if rustix::event::poll(&mut pfd, Some(&rustix::event::Timespec::default()))
                        .unwrap_or(0)
                        == 0
                    {
                        return Err(Error::WouldBlock);
                    }
                }
                c.write(&proto::data_frame(handle, sdu))
            }
        }
    }

    /// Sends one SDU, waiting for a free transmit buffer. Returning `Ok` means the SDU is
    /// queued for the link (there is no delivery confirmation in ATM).
    ///
    /// [`Error::LinkDown`]: the link is down, nothing was sent; an SDU queued just before
    /// the link failed is lost and reported by the next call. [`Error::Revoked`]: the VC
    /// was closed or hostd stopped. [`Error::TooLong`]: above [`Vc::max_sdu`].
    pub fn send(&mut self, sdu: &[u8]) -> Result<(), Error> {
        self.send_deadline(sdu, None)
    }

    /// Sends one SDU if a transmit buffer is free now; [`Error::WouldBlock`] if not.
    pub fn try_send(&mut self, sdu: &[u8]) -> Result<(), Error> {
        self.send_deadline(sdu, Some(Instant::now()))
    }

    fn recv_within(
        &mut self,
        buf: &mut [u8],
        timeout: Option<Duration>,
        zero_wait: bool,
    ) -> Result<usize, Error> {
        let handle = self.handle;
        match &mut self.direct {
            Some(d) => {
                let (b, len) = d.next_rx(timeout, zero_wait)?;
                if len > buf.len() {
                    return Err(Error::TooLong {
                        len,
                        max: buf.len(),
                    });
                }
                let sdu = d.buffer(b, len);
                if sdu.len() != len {
                    return Err(protocol(format!("receive buffer {} is out of bounds", b.0)));
                }
                buf[..len].copy_from_slice(sdu);
                d.ready.pop_front();
                d.post_rx(b);
                Ok(len)
            }
            None => {
                let deadline = timeout.map(|t| Instant::now() + t);
                loop {
                    // Locked per slice, so other VCs of the host are not held up by a wait.
                    let mut c = lock(&self.conn);
                    if let Some(q) = c.data.get_mut(&handle)
                        && let Some(front) = q.sdus.front()
                    {
                        if front.len() > buf.len() {
                            return Err(Error::TooLong {
                                len: front.len(),
                                max: buf.len(),
                            });
                        }
                        let sdu = q.pop().unwrap_or_default();
                        buf[..sdu.len()].copy_from_slice(&sdu);
                        return Ok(sdu.len());
                    }
                    if let Some(r) = c.next_answer()? {
                        return Err(protocol(format!("unexpected message from hostd: {r:?}")));
                    }
                    if c.data.get(&handle).is_some_and(|q| !q.sdus.is_empty()) {
                        continue;
                    }
                    if c.revoked.contains(&handle) {
                        return Err(Error::Revoked);
                    }
                    if c.link_down {
                        return Err(Error::LinkDown);
                    }
                    let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                    let slice = left.map_or(RECV_SLICE, |l| l.min(RECV_SLICE));
                    if !c.fill(Some(slice))? && deadline.is_some_and(|d| d <= Instant::now()) {
                        return Err(if zero_wait {
                            Error::WouldBlock
                        } else {
                            Error::Timeout
                        });
                    }
                }
            }
        }
    }

    /// Waits at most `timeout` until every SDU sent so far has been handed to the link
    /// ([`Error::Timeout`] if not). On the lane path the application itself moves its
    /// cells, in its calls into this crate: an application that sends and then stops
    /// calling (or exits) should flush first. Dropping a lane-path [`Vc`] flushes for up
    /// to a second. On the daemon path the SDU was handed over when `send` returned.
    pub fn flush(&mut self, timeout: Duration) -> Result<(), Error> {
        match &mut self.direct {
            Some(d) => d.flush(Instant::now() + timeout),
            None => Ok(()),
        }
    }

    /// Receives one SDU into `buf`, waiting for it; its length. An SDU longer than `buf`
    /// is [`Error::TooLong`] and stays queued.
    pub fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        self.recv_within(buf, None, false)
    }

    /// Receives one SDU if one is there; [`Error::WouldBlock`] if not.
    pub fn try_recv(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        self.recv_within(buf, Some(Duration::ZERO), true)
    }

    /// Receives one SDU, waiting at most `timeout` ([`Error::Timeout`]).
    pub fn recv_timeout(&mut self, buf: &mut [u8], timeout: Duration) -> Result<usize, Error> {
        self.recv_within(buf, Some(timeout), false)
    }

    fn direct(&mut self) -> Result<&mut Direct, Error> {
        self.direct.as_mut().ok_or_else(|| {
            Error::Refused("zero copy needs the direct path (a shared-memory channel)".into())
        })
    }

    /// A free transmit buffer of the channel to fill in place; [`TxBuffer::send`] sends
    /// it. Waits for one. Direct path only.
    pub fn tx_buffer(&mut self) -> Result<TxBuffer<'_>, Error> {
        let handle = self.handle;
        let max_sdu = self.max_sdu;
        let d = self.direct()?;
        let id = d.free_tx(None)?;
        let len = d.buffer_size.min(max_sdu);
        Ok(TxBuffer {
            d,
            id,
            len,
            handle,
            sent: false,
        })
    }

    /// The next received SDU, in place in the channel's buffer; dropping it hands the
    /// buffer back for reception. Waits for one. Direct path only.
    pub fn recv_zero_copy(&mut self) -> Result<RxSdu<'_>, Error> {
        let d = self.direct()?;
        let (id, len) = d.next_rx(None, false)?;
        d.ready.pop_front();
        Ok(RxSdu { d, id, len })
    }

    /// The VC's counters as its adapter keeps them (hostd's, or on the lane path this
    /// process's own).
    pub fn counters(&self) -> Result<VcStats, Error> {
        if let Some(l) = self.direct.as_ref().and_then(|d| d.lane.as_ref()) {
            // No channel rings on the lane path: nothing is refused between the application
            // and its own adapter.
            let c = l.adapter.counters();
            return Ok(VcStats::from_adapter(&c, 0, 0));
        }
        let status = lock(&self.conn).status()?;
        status
            .channels
            .iter()
            .find(|c| c.handle == self.handle)
            .map(|c| c.counters)
            .ok_or(Error::Revoked)
    }
}

impl Drop for Vc {
    fn drop(&mut self) {
        if let Some(d) = &mut self.direct
            && d.lane.is_some()
        {
            // Nobody else moves a lane's cells: send what is queued, within a bound.
            let _ = d.flush(Instant::now() + LANE_LINGER);
        }
        let mut c = lock(&self.conn);
        if !c.closed && !c.revoked.contains(&self.handle) {
            // Bounded: a hung daemon must not hang the application's drop.
            let _ = c.request_within(
                &Request::Close {
                    cookie: self.cookie.clone(),
                },
                Some(Duration::from_secs(2)),
            );
        }
        c.data.remove(&self.handle);
    }
}

/// A transmit buffer being filled in place ([`Vc::tx_buffer`]); dereferences to its
/// bytes. Dropped without [`send`](TxBuffer::send), it goes back to the free pool.
pub struct TxBuffer<'a> {
    d: &'a mut Direct,
    id: BufferId,
    len: usize,
    handle: u32,
    sent: bool,
}

impl TxBuffer<'_> {
    /// Sends the first `len` bytes as one SDU.
    pub fn send(mut self, len: usize) -> Result<(), Error> {
        if len == 0 || len > self.len {
            return Err(Error::TooLong { len, max: self.len });
        }
        self.d.state()?;
        self.d.post_tx(self.id, len, self.handle)?;
        self.sent = true;
        Ok(())
    }
}

impl Deref for TxBuffer<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.d.buffer(self.id, self.len)
    }
}

impl DerefMut for TxBuffer<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.d.buffer_mut(self.id, self.len)
    }
}

impl Drop for TxBuffer<'_> {
    fn drop(&mut self) {
        if !self.sent {
            self.d.free_tx.push(self.id);
        }
    }
}

/// A received SDU in place in the channel's buffer ([`Vc::recv_zero_copy`]).
pub struct RxSdu<'a> {
    d: &'a mut Direct,
    id: BufferId,
    len: usize,
}

impl Deref for RxSdu<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.d.buffer(self.id, self.len)
    }
}

impl Drop for RxSdu<'_> {
    fn drop(&mut self) {
        self.d.post_rx(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What hostd sends is another process's bytes: data frames for a handle that is not
    /// an open daemon-path VC are dropped, and a VC's queue stops at its bound.
    #[test]
    fn received_data_is_kept_only_for_open_vcs_and_only_up_to_the_bound() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let mut c = Conn::new(ours);
        c.data.insert(7, RxQueue::default());
        let sdu = vec![0x5a; 60_000];
        let per_handle = MAX_QUEUED_BYTES / sdu.len() + 20;
        let writer = std::thread::spawn(move || {
            for handle in [7, 9] {
                for _ in 0..per_handle {
                    proto::write_frame(&theirs, &proto::data_frame(handle, &sdu)).unwrap();
                }
            }
        });
        // Read until the writer is done and its end closes.
        loop {
            match c.fill(Some(Duration::from_secs(5))) {
                Ok(_) => assert!(c.next_answer().unwrap().is_none()),
                Err(Error::Revoked) => break,
                Err(e) => panic!("{e}"),
            }
        }
        writer.join().unwrap();
        assert!(c.next_answer().unwrap().is_none());
        assert!(
            !c.data.contains_key(&9),
            "no queue for a handle never opened"
        );
        let q = &c.data[&7];
        assert_eq!(q.sdus.len(), MAX_QUEUED_BYTES / 60_000);
        assert_eq!(q.bytes, q.sdus.len() * 60_000);
    }
}

//! Link endpoints from configuration: what the daemons' TOML says a link is, and the code
//! that makes the link from it (the switch side listens, the host side connects).
//!
//! ```toml
//! { kind = "shm", path = "/run/natm/s1-p1.sock" }                     # shared-memory rings
//! { kind = "udp", local = "127.0.0.1:41000", peer = "127.0.0.1:41001" }
//! { kind = "tcp", addr = "127.0.0.1:41002" }                         # atmtcp cell frames
//! ```
//!
//! with, on any kind, `rate = "oc3" | "oc12" | "unlimited" | "<cells/s>"` (natm-netem's
//! names; default `unlimited`) and `impair = "<natm-netem impairment text>"` (default
//! none), and on `shm` only `wait = "adaptive" | "poll" | "eventfd"` (default `adaptive`)
//! and `ring_cells = <power of two>` (default 4096). Unknown keys, keys of another kind,
//! and addresses that are not `IP:port` are errors that name the key and the text.
//!
//! # What each kind does
//!
//! * `shm`: the switch side ([`LinkConfig::listen`]) binds a Unix stream socket at `path`
//!   (replacing a stale socket file nobody listens on; removed again when the listener is
//!   dropped). For each host that connects it creates a ring pair and hands it over
//!   ([`ShmLink::offer`]); the host side ([`LinkConfig::connect`]) receives it
//!   ([`ShmLink::accept`]). The socket stays open to tell either side the other is gone.
//!   `wait` is the host side's choice; the listening side always uses the eventfd
//!   (`poll`: busy polling) so its links have a [`poll_fd`](CellLink::poll_fd) for a
//!   daemon that sleeps on many links at once and spins on its own.
//! * `udp`: both sides bind `local` and talk to `peer` only ([`UdpLink`]); a listener's
//!   link is ready at once. UDP cannot tell that the peer is gone. The socket buffers are
//!   sized from `rate` ([`UdpConfig::for_rate`]); when the kernel grants less,
//!   [`EndpointLink::setup_warning`] says so, for the daemon's log.
//! * `tcp`: the switch side listens on `addr`, the host side connects to it; one atmtcp
//!   frame per cell ([`TcpCellLink`]), socket buffers sized from `rate`
//!   ([`TcpCellLink::size_buffers`]), a shortfall said as for udp.
//!
//! A link with a rate other than `unlimited` or with impairments is wrapped in
//! [`Emulated`], which emulates the sending direction of this end only.
//!
//! # Call contract of the links made here
//!
//! Each is an [`EndpointLink`]: a [`CellLink`] that is `Send`, plus
//! [`EndpointLink::next_due`], the instant by which the caller must call the link again
//! (`send_cells(&[])` suffices) even when nothing is readable, because the link holds
//! cells or bytes that leave on their own time (an emulated line's paced cells, TCP bytes
//! the socket did not take). A caller that sleeps in `poll(2)` on
//! [`poll_fd`](CellLink::poll_fd) bounds its sleep by it. `Box<dyn EndpointLink>`
//! converts to `Box<dyn CellLink>` by trait upcasting where only the cell calls matter.
//!
//! A peer that is gone (process exited, socket closed) makes `recv_cells`/`send_cells` fail
//! with an `io::Error` for which [`is_peer_gone`] holds (shm: once the ring is empty or
//! full; tcp: at the end of the stream), never `Ok(0)` forever.

use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use natm_core::LineRate;
use natm_netem::Impairments;
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use serde::{Deserialize, Serialize};

use crate::cell::CellLink;
use crate::emulated::Emulated;
use crate::shm::{AdaptivePolicy, ShmError, ShmLink, ShmWait};
use crate::tcpcell::TcpCellLink;
use crate::udp::{UdpConfig, UdpLink};

/// Ring entries of a shared-memory link unless configured.
pub const DEFAULT_RING_CELLS: u32 = 4096;

/// How often a connecting side retries while nobody listens yet.
const RETRY: Duration = Duration::from_millis(10);

/// A [`CellLink`] made from configuration. See the [module documentation](self).
pub trait EndpointLink: CellLink + Send {
    /// When the caller must call the link again (`send_cells(&[])` is enough) although
    /// nothing is readable: the link holds cells or bytes that leave by then. `None`:
    /// nothing held.
    fn next_due(&self) -> Option<Instant>;

    /// The caller spins now (`true`) or is about to sleep on `poll_fd` (`false`): a
    /// shared-memory link stops or resumes announcing its sleeps
    /// ([`ShmLink::set_spinning`]); an emulated line passes it to the link inside. Other
    /// links ignore it.
    fn set_spinning(&mut self, on: bool) {
        let _ = on;
    }

    /// An error if the peer is known to be gone, for a caller that is not reading the link
    /// for now (a paused lane): a shared-memory link looks at its peer's socket at most
    /// once per [`crate::shm::PEER_POLL`]. Other links report that in their reads.
    fn check_peer(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// What the caller should tell its user about this link at setup: why it may lose
    /// cells or fall short of its rate (a UDP link's socket buffers smaller than its rate
    /// needs). `None`: nothing to say.
    fn setup_warning(&self) -> Option<String> {
        None
    }

    /// Replaces the impairments of the cells sent from now on, when this link runs them
    /// through an emulated line ([`Emulated`]); `false`, changing nothing, when it has
    /// none ([`with_impairments`] puts one in front).
    fn set_impairments(&mut self, impairments: &Impairments) -> bool {
        let _ = impairments;
        false
    }

    /// Says this end's weight on a line it shares with other senders (hostd's main link
    /// beside the lanes into the same switch port: the switch shares the port's input line
    /// among them by weight); `false` where the link cannot say it (only a shared-memory
    /// link can, in its region's [`natm_nic::cells::LineWeight`]).
    fn set_line_weight(&self, weight: u32) -> bool {
        let _ = weight;
        false
    }

    /// The weight the peer said ([`EndpointLink::set_line_weight`]), if it said one.
    fn line_weight(&self) -> Option<u32> {
        None
    }
}

/// `link` with the cells it sends from now on impaired by `impairments` (natm-netem's):
/// set in its emulated line when it has one, else behind a new one at an unlimited rate
/// (the link's own pace stays); none on a link without a line changes nothing. Cells
/// already inside keep their fate.
pub fn with_impairments(
    mut link: Box<dyn EndpointLink>,
    impairments: &Impairments,
) -> Box<dyn EndpointLink> {
    if link.set_impairments(impairments) || impairments.is_none() {
        return link;
    }
    let config = natm_netem::Config {
        rate: LineRate::Unlimited,
        impairments: *impairments,
        ..natm_netem::Config::default()
    };
    Box::new(Emulated::new(link, &config))
}

/// A boxed link: every call goes to the box's link.
impl<L: EndpointLink + ?Sized> EndpointLink for Box<L> {
    fn next_due(&self) -> Option<Instant> {
        (**self).next_due()
    }

    fn set_spinning(&mut self, on: bool) {
        (**self).set_spinning(on);
    }

    fn check_peer(&mut self) -> io::Result<()> {
        (**self).check_peer()
    }

    fn setup_warning(&self) -> Option<String> {
        (**self).setup_warning()
    }

    fn set_impairments(&mut self, impairments: &Impairments) -> bool {
        (**self).set_impairments(impairments)
    }

    fn set_line_weight(&self, weight: u32) -> bool {
        (**self).set_line_weight(weight)
    }

    fn line_weight(&self) -> Option<u32> {
        (**self).line_weight()
    }
}

/// How long a caller may leave a TCP link with unwritten bytes before trying again.
const TCP_RETRY: Duration = Duration::from_micros(200);

impl EndpointLink for ShmLink {
    fn next_due(&self) -> Option<Instant> {
        None
    }

    fn set_spinning(&mut self, on: bool) {
        ShmLink::set_spinning(self, on);
    }

    fn check_peer(&mut self) -> io::Result<()> {
        self.idle_peer_check()
    }

    fn set_line_weight(&self, weight: u32) -> bool {
        ShmLink::set_line_weight(self, weight);
        true
    }

    fn line_weight(&self) -> Option<u32> {
        ShmLink::peer_line_weight(self)
    }
}

impl EndpointLink for UdpLink {
    fn next_due(&self) -> Option<Instant> {
        UdpLink::next_due(self)
    }

    fn setup_warning(&self) -> Option<String> {
        self.buffers().shortfall()
    }
}

impl EndpointLink for TcpCellLink {
    fn next_due(&self) -> Option<Instant> {
        (self.pending_bytes() > 0).then(|| Instant::now() + TCP_RETRY)
    }

    fn setup_warning(&self) -> Option<String> {
        self.buffers().shortfall()
    }
}

impl<L: EndpointLink> EndpointLink for Emulated<L>
where
    Emulated<L>: Send,
{
    fn next_due(&self) -> Option<Instant> {
        match (self.poll_timeout(), self.inner().next_due()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn set_spinning(&mut self, on: bool) {
        self.inner_mut().set_spinning(on);
    }

    fn setup_warning(&self) -> Option<String> {
        self.inner().setup_warning()
    }

    fn set_impairments(&mut self, impairments: &Impairments) -> bool {
        Emulated::set_impairments(self, impairments);
        true
    }

    fn set_line_weight(&self, weight: u32) -> bool {
        self.inner().set_line_weight(weight)
    }

    fn line_weight(&self) -> Option<u32> {
        self.inner().line_weight()
    }
}

/// Whether a link's error means the peer is gone (closed, reset, exited) rather than a
/// fault in this process.
pub fn is_peer_gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof
            | io::ErrorKind::NotConnected
    )
}

/// Where a link goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// Shared-memory rings handed over a Unix socket at `path`.
    Shm {
        /// The Unix socket.
        path: PathBuf,
    },
    /// Cells in UDP datagrams from `local` to `peer`.
    Udp {
        /// This side's address.
        local: SocketAddr,
        /// The other side's address.
        peer: SocketAddr,
    },
    /// atmtcp cell frames over TCP; the switch side listens on `addr`.
    Tcp {
        /// The listening address.
        addr: SocketAddr,
    },
}

/// How a shared-memory host side waits (`wait = …`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitConfig {
    /// Spin briefly, then sleep on the eventfd ([`ShmWait::Adaptive`]).
    #[default]
    Adaptive,
    /// Spin on the ring ([`ShmWait::BusyPoll`]).
    Poll,
    /// Sleep on the eventfd at once ([`ShmWait::EventFd`]).
    EventFd,
}

impl WaitConfig {
    fn name(self) -> &'static str {
        match self {
            WaitConfig::Adaptive => "adaptive",
            WaitConfig::Poll => "poll",
            WaitConfig::EventFd => "eventfd",
        }
    }
}

/// One link's configuration. Deserialised from the TOML forms in the
/// [module documentation](self); serialises back to them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawLinkConfig", into = "RawLinkConfig")]
pub struct LinkConfig {
    /// Where the link goes.
    pub kind: LinkKind,
    /// The emulated line rate of this end's sending direction.
    pub rate: LineRate,
    /// The emulated impairments of this end's sending direction.
    pub impair: Impairments,
    /// How a shared-memory host side waits (ignored by the other kinds).
    pub wait: WaitConfig,
    /// Cells per ring of a shared-memory link (a power of two).
    pub ring_cells: u32,
}

/// The TOML table as written, before its fields are checked against its kind.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLinkConfig {
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    local: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    peer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    addr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rate: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    impair: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wait: Option<WaitConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ring_cells: Option<u32>,
}

fn socket_addr(key: &str, text: Option<String>, kind: &str) -> Result<SocketAddr, String> {
    let text = text.ok_or_else(|| format!("kind = \"{kind}\" needs `{key}` (\"IP:port\")"))?;
    text.parse()
        .map_err(|_| format!("`{key}` = {text:?} is not an IP:port address"))
}

impl TryFrom<RawLinkConfig> for LinkConfig {
    type Error = String;

    fn try_from(raw: RawLinkConfig) -> Result<LinkConfig, String> {
        let kind = raw.kind.as_str();
        let allowed: &[&str] = match kind {
            "shm" => &["path", "wait", "ring_cells"],
            "udp" => &["local", "peer"],
            "tcp" => &["addr"],
            other => {
                return Err(format!(
                    "`kind` = {other:?} is not one of \"shm\", \"udp\", \"tcp\""
                ));
            }
        };
        for (key, present) in [
            ("path", raw.path.is_some()),
            ("local", raw.local.is_some()),
            ("peer", raw.peer.is_some()),
            ("addr", raw.addr.is_some()),
            ("wait", raw.wait.is_some()),
            ("ring_cells", raw.ring_cells.is_some()),
        ] {
            if present && !allowed.contains(&key) {
                return Err(format!("`{key}` does not apply to kind = \"{kind}\""));
            }
        }
        let link = match kind {
            "shm" => LinkKind::Shm {
                path: raw
                    .path
                    .filter(|p| !p.as_os_str().is_empty())
                    .ok_or("kind = \"shm\" needs `path` (a Unix socket path)")?,
            },
            "udp" => LinkKind::Udp {
                local: socket_addr("local", raw.local, kind)?,
                peer: socket_addr("peer", raw.peer, kind)?,
            },
            _ => LinkKind::Tcp {
                addr: socket_addr("addr", raw.addr, kind)?,
            },
        };
        let rate = match raw.rate {
            None => LineRate::Unlimited,
            Some(r) => r
                .parse()
                .map_err(|e| format!("`rate` = {r:?}: {e} (oc3, oc12, unlimited or cells/s)"))?,
        };
        let impair = match raw.impair {
            None => Impairments::default(),
            Some(i) => i.parse().map_err(|e| format!("`impair` = {i:?}: {e}"))?,
        };
        let ring_cells = raw.ring_cells.unwrap_or(DEFAULT_RING_CELLS);
        if !ring_cells.is_power_of_two() || ring_cells < 2 {
            return Err(format!(
                "`ring_cells` = {ring_cells} is not a power of two of at least 2"
            ));
        }
        Ok(LinkConfig {
            kind: link,
            rate,
            impair,
            wait: raw.wait.unwrap_or_default(),
            ring_cells,
        })
    }
}

impl From<LinkConfig> for RawLinkConfig {
    fn from(c: LinkConfig) -> RawLinkConfig {
        let mut raw = RawLinkConfig {
            rate: (c.rate != LineRate::Unlimited).then(|| c.rate.to_string()),
            impair: (c.impair != Impairments::default()).then(|| c.impair.to_string()),
            ..RawLinkConfig::default()
        };
        match c.kind {
            LinkKind::Shm { path } => {
                raw.kind = "shm".into();
                raw.path = Some(path);
                raw.wait = Some(c.wait);
                raw.ring_cells = Some(c.ring_cells);
            }
            LinkKind::Udp { local, peer } => {
                raw.kind = "udp".into();
                raw.local = Some(local.to_string());
                raw.peer = Some(peer.to_string());
            }
            LinkKind::Tcp { addr } => {
                raw.kind = "tcp".into();
                raw.addr = Some(addr.to_string());
            }
        }
        raw
    }
}

/// Why a link could not be set up; names the path or address and what failed.
#[derive(Debug, thiserror::Error)]
pub enum LinkSetupError {
    /// The configuration text was refused (TOML syntax, a key, a value).
    #[error("link configuration: {0}")]
    Config(String),
    /// A socket call failed.
    #[error("{target}: {what}: {source}")]
    Io {
        /// The path or address.
        target: String,
        /// What was being done (`bind`, `connect`, `accept` …).
        what: &'static str,
        /// What the kernel said.
        source: io::Error,
    },
    /// The shared-memory handover or rings failed.
    #[error("{target}: shared-memory link: {source}")]
    Shm {
        /// The socket path.
        target: String,
        /// The failure.
        source: ShmError,
    },
    /// Nobody answered in time.
    #[error("{target}: no peer within {timeout:?}")]
    Timeout {
        /// The path or address.
        target: String,
        /// How long was waited.
        timeout: Duration,
    },
    /// Another socket file (or something else) is at the path, in use.
    #[error("{target}: in use by another listener")]
    InUse {
        /// The path or address.
        target: String,
    },
}

impl LinkConfig {
    /// A link configuration from one TOML table's text (the inline-table body or a
    /// `[section]`'s keys), e.g. `kind = "tcp"\naddr = "127.0.0.1:41002"`.
    pub fn from_toml(text: &str) -> Result<LinkConfig, LinkSetupError> {
        toml::from_str(text).map_err(|e| LinkSetupError::Config(e.to_string()))
    }

    /// The path or address, as named in errors.
    pub fn target(&self) -> String {
        match &self.kind {
            LinkKind::Shm { path } => path.display().to_string(),
            LinkKind::Udp { local, peer } => format!("{local} -> {peer}"),
            LinkKind::Tcp { addr } => addr.to_string(),
        }
    }

    /// One line for status output: `shm /run/natm/s1-p1.sock, oc3`, with the
    /// impairments when there are any.
    pub fn describe(&self) -> String {
        let kind = match self.kind {
            LinkKind::Shm { .. } => "shm",
            LinkKind::Udp { .. } => "udp",
            LinkKind::Tcp { .. } => "tcp",
        };
        let mut s = format!("{kind} {}, {}", self.target(), self.rate);
        if self.impair != Impairments::default() {
            s.push_str(&format!(", impair {}", self.impair));
        }
        if let LinkKind::Shm { .. } = self.kind {
            s.push_str(&format!(", wait {}", self.wait.name()));
        }
        s
    }

    /// Whether sent cells cross an emulated line ([`Emulated`]).
    pub fn is_emulated(&self) -> bool {
        self.rate != LineRate::Unlimited || self.impair != Impairments::default()
    }

    fn io(&self, what: &'static str) -> impl FnOnce(io::Error) -> LinkSetupError {
        let target = self.target();
        move |source| LinkSetupError::Io {
            target,
            what,
            source,
        }
    }

    fn finish<L: EndpointLink + 'static>(&self, link: L) -> Box<dyn EndpointLink>
    where
        Emulated<L>: Send,
    {
        if !self.is_emulated() {
            return Box::new(link);
        }
        let config = natm_netem::Config {
            rate: self.rate,
            impairments: self.impair,
            ..natm_netem::Config::default()
        };
        Box::new(Emulated::new(link, &config))
    }

    /// The host side: connects to the switch's listener (retrying while nobody listens,
    /// up to `timeout`), or for `udp` binds `local`.
    pub fn connect(&self, timeout: Duration) -> Result<Box<dyn EndpointLink>, LinkSetupError> {
        let deadline = Instant::now() + timeout;
        let timed_out = || LinkSetupError::Timeout {
            target: self.target(),
            timeout,
        };
        match &self.kind {
            LinkKind::Shm { path } => {
                let sock = loop {
                    match UnixStream::connect(path) {
                        Ok(s) => break s,
                        Err(e)
                            if matches!(
                                e.kind(),
                                io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
                            ) && Instant::now() + RETRY < deadline =>
                        {
                            std::thread::sleep(RETRY);
                        }
                        Err(e) => return Err(self.io("connect")(e)),
                    }
                };
                let left = deadline.saturating_duration_since(Instant::now());
                let wait = match self.wait {
                    WaitConfig::Adaptive => ShmWait::Adaptive(AdaptivePolicy::default()),
                    WaitConfig::Poll => ShmWait::BusyPoll,
                    WaitConfig::EventFd => ShmWait::EventFd,
                };
                let link = ShmLink::accept(sock, wait, Some(left.max(Duration::from_millis(1))))
                    .map_err(|source| LinkSetupError::Shm {
                        target: self.target(),
                        source,
                    })?;
                Ok(self.finish(link))
            }
            LinkKind::Udp { local, peer } => {
                let link = UdpLink::bind(*local, *peer, UdpConfig::for_rate(self.rate))
                    .map_err(self.io("bind"))?;
                Ok(self.finish(link))
            }
            LinkKind::Tcp { addr } => {
                let stream = loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(timed_out());
                    }
                    match TcpStream::connect_timeout(addr, left) {
                        Ok(s) => break s,
                        Err(e)
                            if e.kind() == io::ErrorKind::ConnectionRefused
                                && Instant::now() + RETRY < deadline =>
                        {
                            std::thread::sleep(RETRY);
                        }
                        Err(e) if e.kind() == io::ErrorKind::TimedOut => return Err(timed_out()),
                        Err(e) => return Err(self.io("connect")(e)),
                    }
                };
                let mut link = TcpCellLink::from_stream(stream).map_err(self.io("connect"))?;
                link.size_buffers(self.rate).map_err(self.io("connect"))?;
                Ok(self.finish(link))
            }
        }
    }

    /// The switch side: listens on the path or address (for `udp`, binds `local`).
    pub fn listen(&self) -> Result<LinkListener, LinkSetupError> {
        let inner = match &self.kind {
            LinkKind::Shm { path } => {
                let l = bind_unix(path).map_err(|e| match e {
                    Some(source) => self.io("bind")(source),
                    None => LinkSetupError::InUse {
                        target: self.target(),
                    },
                })?;
                l.set_nonblocking(true).map_err(self.io("bind"))?;
                Listener::Shm {
                    listener: l,
                    path: path.clone(),
                }
            }
            LinkKind::Udp { local, peer } => Listener::Udp {
                sock: Some(UdpSocket::bind(local).map_err(self.io("bind"))?),
                local: *local,
                peer: *peer,
            },
            LinkKind::Tcp { addr } => {
                let l = TcpListener::bind(addr).map_err(self.io("bind"))?;
                l.set_nonblocking(true).map_err(self.io("bind"))?;
                Listener::Tcp(l)
            }
        };
        Ok(LinkListener {
            config: self.clone(),
            inner,
        })
    }
}

impl fmt::Display for LinkConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Binds a Unix listener at `path`, replacing a socket file nobody listens on. `Err(None)`:
/// somebody does.
fn bind_unix(path: &Path) -> Result<UnixListener, Option<io::Error>> {
    match UnixListener::bind(path) {
        Ok(l) => Ok(l),
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
            let is_socket = std::fs::symlink_metadata(path)
                .map(|m| m.file_type().is_socket())
                .unwrap_or(false);
            if !is_socket {
                return Err(Some(e));
            }
            if UnixStream::connect(path).is_ok() {
                return Err(None);
            }
            std::fs::remove_file(path).map_err(Some)?;
            UnixListener::bind(path).map_err(Some)
        }
        Err(e) => Err(Some(e)),
    }
}

#[derive(Debug)]
enum Listener {
    Shm {
        listener: UnixListener,
        path: PathBuf,
    },
    Udp {
        /// The bound socket until it is handed out in a link.
        sock: Option<UdpSocket>,
        local: SocketAddr,
        peer: SocketAddr,
    },
    Tcp(TcpListener),
}

/// The switch side of a configured link: hands out a link each time a peer connects.
#[derive(Debug)]
pub struct LinkListener {
    config: LinkConfig,
    inner: Listener,
}

impl LinkListener {
    /// The configuration it listens for.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// The descriptor that turns readable when a peer connects (`None` for udp, whose
    /// link is ready at once).
    pub fn poll_fd(&self) -> Option<BorrowedFd<'_>> {
        match &self.inner {
            Listener::Shm { listener, .. } => Some(listener.as_fd()),
            Listener::Udp { .. } => None,
            Listener::Tcp(l) => Some(l.as_fd()),
        }
    }

    /// The bound address (tcp and udp; useful after binding port 0).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match &self.inner {
            Listener::Shm { .. } => None,
            Listener::Udp { sock, local, .. } => Some(
                sock.as_ref()
                    .and_then(|s| s.local_addr().ok())
                    .unwrap_or(*local),
            ),
            Listener::Tcp(l) => l.local_addr().ok(),
        }
    }

    /// For a shared-memory port that already has its link: the next connection, not
    /// answered, to be read as a [lane request](crate::lane) (`None` when nobody is
    /// waiting, or for other kinds). The stream is non-blocking.
    pub fn accept_lane(&mut self) -> io::Result<Option<UnixStream>> {
        let Listener::Shm { listener, .. } = &self.inner else {
            return Ok(None);
        };
        loop {
            match listener.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(true)?;
                    return Ok(Some(s));
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionAborted | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }

    /// Returns a link when a peer has connected (`None` when `timeout` passes first;
    /// `None` for no limit). udp: the link is ready at once (a later call binds `local`
    /// again, which fails while the earlier link is alive).
    pub fn accept(
        &mut self,
        timeout: Option<Duration>,
    ) -> Result<Option<Box<dyn EndpointLink>>, LinkSetupError> {
        let config = &self.config;
        if let Listener::Udp { sock, local, peer } = &mut self.inner {
            let sock = match sock.take() {
                Some(s) => s,
                None => UdpSocket::bind(*local).map_err(config.io("bind"))?,
            };
            let link = UdpLink::from_socket(sock, *peer, UdpConfig::for_rate(config.rate))
                .map_err(config.io("connect"))?;
            return Ok(Some(config.finish(link)));
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let got = match &self.inner {
                Listener::Shm { listener, .. } => match listener.accept() {
                    Ok((s, _)) => {
                        s.set_nonblocking(false).map_err(config.io("accept"))?;
                        let wait = match config.wait {
                            WaitConfig::Poll => ShmWait::BusyPoll,
                            WaitConfig::Adaptive | WaitConfig::EventFd => ShmWait::EventFd,
                        };
                        let link =
                            ShmLink::offer(s, config.ring_cells, wait).map_err(|source| {
                                LinkSetupError::Shm {
                                    target: config.target(),
                                    source,
                                }
                            })?;
                        return Ok(Some(config.finish(link)));
                    }
                    Err(e) => e,
                },
                Listener::Tcp(l) => match l.accept() {
                    Ok((s, _)) => {
                        let mut link = TcpCellLink::from_stream(s).map_err(config.io("accept"))?;
                        link.size_buffers(config.rate)
                            .map_err(config.io("accept"))?;
                        return Ok(Some(config.finish(link)));
                    }
                    Err(e) => e,
                },
                Listener::Udp { .. } => return Ok(None),
            };
            match got.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => {}
                // A peer that went away between connect and accept: wait for the next.
                io::ErrorKind::ConnectionAborted => continue,
                _ => return Err(config.io("accept")(got)),
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left.is_some_and(|l| l.is_zero()) {
                return Ok(None);
            }
            let Some(fd) = self.poll_fd() else {
                return Ok(None);
            };
            let ts = left.and_then(|l| Timespec::try_from(l).ok());
            let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::IN)];
            match poll(&mut fds, ts.as_ref()) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(self.config.io("poll")(e.into())),
            }
        }
    }
}

impl Drop for LinkListener {
    fn drop(&mut self) {
        if let Listener::Shm { path, .. } = &self.inner {
            // Only our own socket file: leave anything that replaced it alone.
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_parses_and_describes_itself() {
        let c = LinkConfig::from_toml(
            "kind = \"shm\"\npath = \"/run/natm/s1-p1.sock\"\nrate = \"oc3\"",
        )
        .unwrap();
        assert_eq!(c.describe(), "shm /run/natm/s1-p1.sock, oc3, wait adaptive");
        assert_eq!(c.ring_cells, DEFAULT_RING_CELLS);
        assert!(c.is_emulated());
        let c = LinkConfig::from_toml(
            "kind = \"udp\"\nlocal = \"127.0.0.1:41000\"\npeer = \"127.0.0.1:41001\"\nimpair = \"loss=1%,seed=3\"",
        )
        .unwrap();
        assert_eq!(
            c.describe(),
            "udp 127.0.0.1:41000 -> 127.0.0.1:41001, unlimited, impair loss=0.01,seed=3"
        );
        let c =
            LinkConfig::from_toml("kind = \"tcp\"\naddr = \"127.0.0.1:41002\"\nrate = \"1000\"")
                .unwrap();
        assert_eq!(c.describe(), "tcp 127.0.0.1:41002, 1000");
        // And back to TOML, and again.
        let text = toml::to_string(&c).unwrap();
        assert_eq!(LinkConfig::from_toml(&text).unwrap(), c);
    }

    #[test]
    fn bad_configuration_names_the_key_and_text() {
        for (text, needle) in [
            ("kind = \"pigeon\"", "\"pigeon\""),
            ("kind = \"tcp\"", "needs `addr`"),
            (
                "kind = \"tcp\"\naddr = \"localhost:99\"",
                "\"localhost:99\"",
            ),
            (
                "kind = \"tcp\"\naddr = \"127.0.0.1:1\"\nwait = \"poll\"",
                "`wait`",
            ),
            (
                "kind = \"udp\"\nlocal = \"127.0.0.1:1\"\npeer = \"1.2.3\"",
                "`peer`",
            ),
            (
                "kind = \"shm\"\npath = \"/x\"\nrate = \"fast\"",
                "`rate` = \"fast\"",
            ),
            (
                "kind = \"shm\"\npath = \"/x\"\nimpair = \"los=1%\"",
                "`impair`",
            ),
            (
                "kind = \"shm\"\npath = \"/x\"\nring_cells = 1000",
                "`ring_cells`",
            ),
            ("kind = \"shm\"\npath = \"/x\"\nwait = \"doze\"", "doze"),
            ("kind = \"shm\"\npath = \"/x\"\ncolour = 3", "colour"),
            ("kind = \"shm\"\npath = ", "line 2"),
        ] {
            let e = LinkConfig::from_toml(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn impairments_set_at_run_time_lose_cells_and_clear() {
        let (a, mut b) = ShmLink::pair(4096).unwrap();
        let plain: Box<dyn EndpointLink> = Box::new(a);
        let all: Impairments = "loss=100%".parse().unwrap();
        // No emulated line yet: one is put in front.
        let mut link = with_impairments(plain, &all);
        let cells = [[7u8; 53]; 10];
        assert_eq!(link.send_cells(&cells).unwrap(), 10);
        let mut buf = [[0u8; 53]; 16];
        assert_eq!(b.recv_cells(&mut buf).unwrap(), 0, "every cell lost");
        // The line is there now: set in place, and cleared.
        assert!(link.set_impairments(&Impairments::default()));
        let mut link = with_impairments(link, &Impairments::default());
        assert_eq!(link.send_cells(&cells).unwrap(), 10);
        assert_eq!(b.recv_cells(&mut buf).unwrap(), 10);
    }
}

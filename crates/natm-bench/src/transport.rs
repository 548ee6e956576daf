//! The message transports `natm perf rr` and `natm perf stream` measure, behind one trait.
//!
//! A [`Transport`] is one end of a bidirectional channel that carries whole messages: what
//! one `send` gives is what one `recv` returns, or nothing (a datagram transport may drop
//! it). The engine opens a connected pair with [`pair`] and runs the client on one end and
//! the server (or receiver) on the other, in two threads of this process.
//!
//! Call contract:
//!
//! * messages are 1 byte or more; an empty message is the engine's end-of-session marker,
//!   and `recv` returning `Ok(0)` means "an empty message arrived, or the peer closed";
//! * `recv` blocks until a message arrives or the timeout set with
//!   [`Transport::set_recv_timeout`] passes, which is `Err` of kind
//!   [`io::ErrorKind::TimedOut`];
//! * a message longer than the buffer given to `recv` is an error (never silently cut);
//! * [`Transport::ready`] is called once on each end, on the thread that will use it,
//!   before the first message.
//!
//! The natm transport ([`NatmTransport`]) is one VC of the `natm` API: the client's opened
//! through host h1's daemon, the server's through h2's (`--client-host`, `--server-host`);
//! with [`NatmTarget::svc`] (`--svc`) a switched VC instead, the client's host calling the
//! server's host's listener.
//! It cannot send the empty end marker (an AAL5 SDU of Length 0 is an abort, I.363.5), so
//! it sends nothing for it; the engine ends natm sessions, like every lossy one, by a
//! flag and a receive timeout.
//!
//! This layer does no timing and keeps no statistics; that is [`crate::rr`] and
//! [`crate::stream`]. The kernel transports are in [`crate::kernel`].

use std::fmt;
use std::io;
use std::time::Duration;

/// The natm application's notification mode and data path (natm-host's protocol types, as
/// the natm library takes them).
pub use natm::{DataPath, NotifyMode};
use natm_core::addr::PvcAddr;
use natm_core::qos::Qos;
use serde::Serialize;

use crate::kernel;

/// One end of a message channel.
pub trait Transport: Send {
    /// Sends one whole message (blocking while the transport applies back-pressure).
    fn send(&mut self, msg: &[u8]) -> io::Result<()>;
    /// Receives one whole message into `buf` and returns its length (see the module doc
    /// for `Ok(0)` and timeouts).
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    /// Bounds every later `recv` by `timeout` (`None`: block without a bound).
    fn set_recv_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()>;
    /// What this transport is, for reports.
    fn name(&self) -> String;
    /// Makes the end ready on the calling thread, which then uses it (natm opens its VC
    /// here, so that a signal-mode VC signals the thread that waits on it). The engine
    /// calls it on each end, in its thread, before any traffic.
    fn ready(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What carries the messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// natm over a running lab: client on host h1, server on host h2.
    Natm,
    /// Kernel UDP datagrams over 127.0.0.1.
    Udp,
    /// Kernel TCP over 127.0.0.1, each message behind a 4-byte length, `TCP_NODELAY`.
    Tcp,
    /// A kernel Unix `SOCK_SEQPACKET` socket pair.
    Unix,
}

/// The largest UDP payload over IPv4 (65,535 minus the IP and UDP headers).
pub const UDP_MAX: usize = 65_507;
/// The largest AAL5 SDU.
pub const AAL5_MAX: usize = 65_535;
/// The largest message natm's kernel stream transports are asked to carry.
pub const STREAM_MAX: usize = 1 << 20;
/// The largest `SOCK_SEQPACKET` record: the default socket send buffer (212,992 bytes on
/// Linux) less room for the kernel's own accounting.
pub const SEQPACKET_MAX: usize = 160 * 1024;

impl Kind {
    /// Its name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Natm => "natm",
            Kind::Udp => "udp",
            Kind::Tcp => "tcp",
            Kind::Unix => "unix",
        }
    }

    /// The largest message it carries, and what limits it.
    pub fn max_message(self) -> (usize, &'static str) {
        match self {
            Kind::Natm => (AAL5_MAX, "an AAL5 SDU"),
            Kind::Udp => (UDP_MAX, "a UDP datagram"),
            Kind::Tcp => (STREAM_MAX, "a framed TCP message"),
            Kind::Unix => (SEQPACKET_MAX, "a SOCK_SEQPACKET record"),
        }
    }

    /// Whether a message of `size` bytes fits.
    pub fn carries(self, size: usize) -> bool {
        size >= 1 && size <= self.max_message().0
    }

    /// Whether it may lose messages (the engine then bounds its waits).
    pub fn lossy(self) -> bool {
        matches!(self, Kind::Natm | Kind::Udp)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Opens a connected pair of `kind` for messages of up to `message` bytes: (client end,
/// server end).
pub fn pair(
    kind: Kind,
    natm: Option<&NatmTarget>,
    message: usize,
) -> io::Result<(Box<dyn Transport>, Box<dyn Transport>)> {
    match kind {
        Kind::Natm => match natm {
            Some(n) => n.pair(message),
            None => Err(io::Error::other(
                "natm transport asked for without its options",
            )),
        },
        Kind::Udp => {
            let (a, b) = kernel::udp_pair()?;
            Ok((Box::new(a), Box::new(b)))
        }
        Kind::Tcp => {
            let (a, b) = kernel::tcp_pair()?;
            Ok((Box::new(a), Box::new(b)))
        }
        Kind::Unix => {
            let (a, b) = kernel::seqpacket_pair()?;
            Ok((Box::new(a), Box::new(b)))
        }
    }
}

/// Where the client and server threads run.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Placement {
    /// The client's (or sender's) CPU.
    pub client: Option<usize>,
    /// The server's (or receiver's) CPU.
    pub server: Option<usize>,
}

impl Placement {
    /// A CPU as the reports print it: its number, or `any` when none was chosen.
    pub fn cpu_text(c: Option<usize>) -> String {
        c.map_or("any".to_string(), |c| c.to_string())
    }

    /// The CPUs asked for, checked against the ones this process may use, with the
    /// defaults filled in: the client on the first allowed CPU, the server on the first
    /// other one (the client's with `same_core`). An [`Error::Plan`] names the option
    /// (`--cpu-client`, `--cpu-server`) as the command line does.
    pub fn choose(
        client: Option<usize>,
        server: Option<usize>,
        same_core: bool,
    ) -> Result<Placement, crate::Error> {
        let allowed = natm_nic::sched::allowed_cpus().unwrap_or_default();
        for (name, cpu) in [("--cpu-client", client), ("--cpu-server", server)] {
            if let Some(c) = cpu
                && !allowed.is_empty()
                && !allowed.contains(&c)
            {
                return Err(crate::Error::Plan(format!(
                    "{name} {c}: this process may run on CPUs {allowed:?} only"
                )));
            }
        }
        let chosen = client.or(allowed.first().copied());
        let server = if same_core {
            chosen
        } else {
            server.or(match client {
                // The first allowed CPU that is not the client's.
                Some(c) => allowed.iter().copied().find(|&x| x != c),
                None => allowed.get(1).copied(),
            })
        };
        Ok(Placement {
            client: chosen,
            server,
        })
    }
}

/// The natm side of a run, checked.
#[derive(Clone, Debug)]
pub struct NatmTarget {
    /// The VC both ends open.
    pub vc: PvcAddr,
    /// Its QoS.
    pub qos: Qos,
    /// How the ends wait.
    pub mode: NotifyMode,
    /// Which data path.
    pub path: DataPath,
    /// The client's host: a name, or a socket path when it holds a `/`.
    pub client_host: String,
    /// The server's host.
    pub server_host: String,
    /// A switched VC instead of the PVC `vc`: the server's host listens (any selector of
    /// its address), the client calls it, and the network gives the VC.
    pub svc: bool,
}

/// The transports of a run: the measured one first, then the baselines.
#[derive(Clone, Debug)]
pub struct Targets {
    /// Every transport, the measured one first.
    pub kinds: Vec<Kind>,
    /// natm's options (`None` for a kernel baseline run alone).
    pub natm: Option<NatmTarget>,
}

impl Targets {
    /// A kernel baseline alone (`natm perf baseline KIND …`).
    pub fn kernel(kind: Kind) -> Targets {
        Targets {
            kinds: vec![kind],
            natm: None,
        }
    }
}

impl NatmTarget {
    /// Connects to both hosts' daemons; each end opens its VC in [`Transport::ready`]. For a
    /// switched VC the server's host listens first; the client calls in its `ready`, and the
    /// server accepts at its first receive (its `ready` returns before the call comes: the
    /// engines start the client only once the server is ready).
    fn pair(&self, message: usize) -> io::Result<(Box<dyn Transport>, Box<dyn Transport>)> {
        if self.svc {
            let mut server = NatmTransport::connect(&self.server_host, self, message)?;
            let listener = server.host.listen(None).map_err(natm_error)?;
            let called = *listener.address();
            server.open = Opening::Accept(listener);
            let mut client = NatmTransport::connect(&self.client_host, self, message)?;
            client.open = Opening::Call(called);
            return Ok((Box::new(client), Box::new(server)));
        }
        let client = NatmTransport::connect(&self.client_host, self, message)?;
        let server = NatmTransport::connect(&self.server_host, self, message)?;
        Ok((Box::new(client), Box::new(server)))
    }
}

/// The memory of a VC's buffers: the API's default (32 buffers of 64 KiB).
const BUFFER_BUDGET: u32 = 2 << 20;

/// Buffers for messages of `message` bytes, as an application that knows its SDU size
/// opens its VC: the default memory in buffers of that size (rounded up to 64 bytes), at
/// least the default 32 and at most 1,024. With the default 64 KiB buffers a receiver of
/// small SDUs had 16 buffers posted, and a burst of a contract's cells (the sender's
/// late wake-ups caught up) found it without buffers.
pub fn buffers_for(message: usize) -> (u32, u32) {
    let size = u32::try_from(message.clamp(1, 65_536))
        .unwrap_or(65_536)
        .next_multiple_of(64);
    (BUFFER_BUDGET.div_ceil(size).clamp(32, 1024), size)
}

/// How a [`NatmTransport`]'s VC comes: a PVC opened, a call placed, a call accepted.
enum Opening {
    Pvc,
    Call(natm::Aesa),
    Accept(natm::Listener),
}

/// How long a switched VC's server end waits for the client's call.
const ACCEPT_WAIT: Duration = Duration::from_secs(30);

/// One end of a natm VC (see the module doc).
pub struct NatmTransport {
    host: natm::Host,
    options: natm::VcOptions,
    channel: natm::ChannelOptions,
    qos: Qos,
    open: Opening,
    vc: Option<natm::Vc>,
    timeout: Option<Duration>,
    label: String,
}

/// A natm API error as the engine sees it.
fn natm_error(e: natm::Error) -> io::Error {
    let kind = match &e {
        natm::Error::Timeout => io::ErrorKind::TimedOut,
        natm::Error::TooLong { .. } => io::ErrorKind::InvalidData,
        natm::Error::NoDaemon { .. } => io::ErrorKind::NotFound,
        natm::Error::Io(e) => e.kind(),
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, e.to_string())
}

impl NatmTransport {
    /// Connects to `host` (a name, or a socket path when it holds a `/`), for messages of
    /// up to `message` bytes ([`buffers_for`]).
    pub fn connect(host: &str, target: &NatmTarget, message: usize) -> io::Result<NatmTransport> {
        let h = if host.contains('/') {
            natm::Host::connect_path(host)
        } else {
            natm::Host::connect(host)
        }
        .map_err(natm_error)?;
        let (buffers, buffer_size) = buffers_for(message);
        let options = natm::VcOptions::new(target.vc)
            .qos(target.qos)
            .notify(target.mode)
            .path(target.path)
            .buffers(buffers)
            .buffer_size(buffer_size);
        let channel = natm::ChannelOptions::default()
            .notify(target.mode)
            .path(target.path)
            .buffers(buffers)
            .buffer_size(buffer_size);
        let what = if target.svc {
            format!("natm SVC {} → {}", target.client_host, target.server_host)
        } else {
            format!("natm VC {}", target.vc)
        };
        Ok(NatmTransport {
            host: h,
            options,
            channel,
            qos: target.qos,
            open: Opening::Pvc,
            vc: None,
            timeout: None,
            label: format!(
                "{what} on {host}, QoS {}, {:?} wait, {:?} path",
                target.qos, target.mode, target.path
            ),
        })
    }

    /// Opens the VC as this end does: a PVC, a call, or the listener's next call.
    fn open_vc(&self) -> io::Result<natm::Vc> {
        match &self.open {
            Opening::Pvc => self.host.open(self.options.clone()),
            Opening::Call(addr) => {
                let opts = natm::CallOptions::new()
                    .qos(self.qos)
                    .channel(self.channel.clone());
                self.host.call(addr, opts)
            }
            Opening::Accept(listener) => listener
                .next_call(Some(ACCEPT_WAIT))
                .and_then(|call| listener.accept_call(call, &self.channel)),
        }
        .map_err(natm_error)
    }

    /// The VC, opened at the first use. Borrowed in place: taking it out and putting it
    /// back moved the whole `Vc` twice per message (6 % of a pipelined run's CPU).
    fn vc(&mut self) -> io::Result<&mut natm::Vc> {
        if self.vc.is_none() {
            self.vc = Some(self.open_vc()?);
        }
        Ok(self.vc.as_mut().expect("opened above"))
    }
}

/// How long a natm sender's end marker waits for its queued SDUs to leave.
const FLUSH: Duration = Duration::from_secs(5);

impl Transport for NatmTransport {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        if msg.is_empty() {
            // The end marker: AAL5 has no empty SDU (see the module doc). What is queued
            // still goes out (on the lane path only the application's calls move it).
            return self.vc()?.flush(FLUSH).map_err(natm_error);
        }
        self.vc()?.send(msg).map_err(natm_error)
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let timeout = self.timeout;
        let vc = self.vc()?;
        match timeout {
            Some(t) => vc.recv_timeout(buf, t),
            None => vc.recv(buf),
        }
        .map_err(natm_error)
    }

    fn set_recv_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.timeout = timeout;
        Ok(())
    }

    fn name(&self) -> String {
        self.label.clone()
    }

    fn ready(&mut self) -> io::Result<()> {
        if matches!(self.open, Opening::Accept(_)) {
            // The call comes once the client is started, which waits for this.
            return Ok(());
        }
        self.vc().map(|_| ())
    }
}

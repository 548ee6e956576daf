//! natm's application API: open PVCs, or call ATM addresses (switched VCs), with a QoS
//! through the host daemon (hostd) and send and receive AAL5 SDUs on them, blocking,
//! non-blocking or zero-copy (issues 5 and 24).
//!
//! A [`Host`] is a connection to one host's daemon. [`Host::open`] asks it for a VC; the
//! VC's data then takes one of three paths ([`DataPath`]). Unless the options name one,
//! hostd takes the fastest its link allows ([`DataPath::Auto`], the default): the lane on a
//! shared-memory link, else the direct path.
//!
//! * **Lane**: hostd brokers a ring pair into the switch's port for this VC alone, and the
//!   application runs the adapter itself, in its own calls, over buffers in its own memory
//!   (no channel rings, no daemon on the data path). Only those calls move its cells:
//!   [`Vc::flush`] before going quiet. On a rated link the adapter shapes the VC to its
//!   contract and the switch port takes the lanes' cells at the link's rate, less what
//!   hostd's main link sent (natm-switchd's port input line), so lanes keep to the line
//!   without the application pacing it. A receiver takes from its lane only as many SDUs as it has free
//!   buffers; the rest wait in the lane, and the switch holds back what feeds a full lane,
//!   so a slow reader loses nothing (on the other paths, as in ATM, a receiver out of
//!   buffers drops whole frames). A link with emulated impairments has no lanes.
//! * **Direct**: hostd hands the application a shared-memory channel (a memfd with
//!   descriptor, free-buffer and completion rings and the buffers, natm-nic's channel
//!   region). [`Vc::send`] copies the SDU into a free buffer of the region and posts a
//!   descriptor; hostd's adapter segments the cells straight from that buffer. Received
//!   SDUs are reassembled straight into buffers the application posted. No system call per
//!   SDU unless somebody sleeps ([`NotifyMode`] says how the application waits), and
//!   [`Vc::tx_buffer`] / [`Vc::recv_zero_copy`] avoid the copies too. UDP and TCP links,
//!   and signal notification, take this path.
//! * **Daemon**: each SDU is one message on the Unix socket, copied by hostd, as with a
//!   kernel driver. It exists to be measured against the direct path.
//!
//! **Switched VCs.** [`Host::call`] asks hostd for a call to an ATM address ([`Aesa`]) with
//! a QoS ([`CallOptions`]); hostd signals it (Q.2931 over SSCOP on VC 0.5 of its link) and
//! the network admits it hop by hop. The answer is the same [`Vc`] as a PVC's, on any data
//! path, and [`Vc::call`] tells the VC the network gave, both addresses, the QoS and the
//! set-up time. A refusal is [`Error::CallFailed`] carrying the cause (value, name,
//! location, and a natm switch's explanation in its diagnostic, e.g. the trunk and its
//! free rate). [`Host::listen`] registers a [`Listener`] for the host's address (or one
//! selector of it), on a connection of its own since hostd offers it calls unasked;
//! [`Listener::accept`] gives the VC, the calling party and the QoS, and
//! [`Listener::next_call`] with [`Listener::reject`] refuses one with a cause;
//! [`Host::listen_accepting`] makes a listener hostd answers itself (every call accepted as
//! it arrives, as a TCP listener's kernel completes the handshake before `accept(2)`), the
//! fastest way to take many calls. When the far
//! end or the network releases a call, the VC's next operation is [`Error::Released`] with
//! the cause; dropping the [`Vc`] releases the call (normal clearing).
//!
//! **Transport channels.** [`transport::Channel`] runs natm-transport's endpoint over a VC:
//! whole messages with a service (reliable, best effort, guaranteed), initial sequence
//! numbers exchanged by a hello, timers run inside the channel's own calls, on any data
//! path ([`transport`] says how).
//!
//! Errors say what failed ([`Error`]): no daemon at the socket, a refusal with hostd's
//! reason (VC in use, reserved VCI, admission control), the link being down, the channel
//! being revoked (closed, or hostd gone), nothing ready, a timeout, an SDU too long.
//!
//! A blocked call also ends when hostd goes away without revoking (killed): a waiting
//! direct-path call looks at the socket every 50 ms and returns [`Error::Revoked`]. A
//! send that finds a free buffer does not wait and does not look.
//!
//! What it is not: no async API; no point-to-multipoint calls, no BLLI/SAP matching of
//! incoming calls (a listener matches the address's selector byte); a [`Vc`] in
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
//!     link_rate: natm_core::LineRate::Unlimited,
//!     lanes: None,
//!     address: None,
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
//! A switched VC, with the lab's daemons signalling: h2 listens, h1 calls h2's address.
//!
//! ```no_run
//! use std::time::Duration;
//! use natm::{CallOptions, Error, Host};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let h2 = Host::connect("h2")?;
//! let listener = h2.listen(None)?;
//! let to = *listener.address();
//! let server = std::thread::spawn(move || -> Result<(), Error> {
//!     let (mut vc, calling, qos) = listener.accept()?;
//!     println!("call from {calling:?} with {qos}");
//!     let mut buf = [0u8; 100];
//!     let n = vc.recv(&mut buf)?;
//!     vc.send(&buf[..n])
//! });
//! let h1 = Host::connect("h1")?;
//! match h1.call(&to, CallOptions::new().qos("cbr:pcr=1000".parse()?)) {
//!     Ok(mut vc) => {
//!         let call = vc.call().expect("a switched VC");
//!         println!("VC {} set up in {} µs", call.vc, call.setup_ns / 1000);
//!         vc.send(b"hello")?;
//!         let mut buf = [0u8; 100];
//!         let n = vc.recv_timeout(&mut buf, Duration::from_secs(1))?;
//!         assert_eq!(&buf[..n], b"hello");
//!     }
//!     // e.g. "call refused: cause 37 (user cell rate not available) at LPN: s2 p3: …"
//!     Err(Error::CallFailed(cause)) => eprintln!("refused: {cause}"),
//!     Err(e) => return Err(e.into()),
//! }
//! server.join().expect("the server thread")?;
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
    self as proto, AutoAccept, Frame, FrameError, Request, Response, SignalTarget,
};
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};

pub use natm_core::{Aesa, PvcAddr, Qos, VcId};
pub use natm_proto::host::{
    CallInfo, CauseInfo, DataPath, ErrorKind, HostStatus, NotifyMode, VcStats,
};

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
    /// The request was refused, and says why: by hostd (`kind` as it classed the refusal:
    /// [`ErrorKind::Refused`] for a request understood and refused, such as a VC in use or
    /// admission control; [`ErrorKind::BadRequest`] for one that does not parse;
    /// [`ErrorKind::Internal`] for hostd's own failure), or by this library before asking
    /// (a request it knows hostd would refuse: [`ErrorKind::BadRequest`]).
    #[error("refused: {message}")]
    Refused {
        /// What kind of refusal.
        kind: ErrorKind,
        /// Why, in words.
        message: String,
    },
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
    /// The network or the called party refused the call, or it timed out (cause 102):
    /// the cause's value, name, location and the refusal's explanation (a natm switch's
    /// diagnostic, e.g. the trunk and its free rate).
    #[error("call refused: {0}")]
    CallFailed(CauseInfo),
    /// The call of this switched VC was released by the far end or the network (or lost
    /// with the link); the VC is closed.
    #[error("call released: {0}")]
    Released(CauseInfo),
    /// A transport channel's far end does not match this one (service, TPDU size or
    /// largest message), in words ([`transport::Channel::over`]).
    #[error("transport handshake: {0}")]
    Handshake(String),
    /// A guaranteed transport channel's rate is more than the VC's QoS reserves or the
    /// host's per-TPDU budget takes; the refusal names which and both figures
    /// ([`transport::admission`]).
    #[error("not admitted: {0}")]
    NotAdmitted(transport::Refusal),
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

/// How a VC's channel is set up: what a PVC ([`VcOptions`]), a call ([`CallOptions`]) and
/// an accepted call ([`Listener::accept_call`]) have in common.
#[derive(Clone, Debug)]
pub struct ChannelOptions {
    notify: NotifyMode,
    path: DataPath,
    buffers: u32,
    buffer_size: u32,
}

impl Default for ChannelOptions {
    /// Adaptive notification, the fastest path the link allows ([`DataPath::Auto`]), 32
    /// buffers of 64 KiB (SDUs up to 65,535 bytes).
    fn default() -> ChannelOptions {
        ChannelOptions {
            notify: NotifyMode::Adaptive,
            path: DataPath::Auto,
            buffers: 32,
            buffer_size: 65536,
        }
    }
}

/// The channel builders, one definition for every options type that holds a
/// [`ChannelOptions`] in its field `channel` (or is one: `channel` is then `self`).
macro_rules! channel_builders {
    ($t:ty $(, $field:ident)?) => {
        impl $t {
            /// How to wait.
            pub fn notify(mut self, notify: NotifyMode) -> $t {
                self$(.$field)?.notify = notify;
                self
            }

            /// Which path.
            pub fn path(mut self, path: DataPath) -> $t {
                self$(.$field)?.path = path;
                self
            }

            /// Buffers: half for sending, half posted for receiving.
            pub fn buffers(mut self, n: u32) -> $t {
                self$(.$field)?.buffers = n;
                self
            }

            /// Bytes per buffer (a multiple of 64); bounds the SDU size.
            pub fn buffer_size(mut self, n: u32) -> $t {
                self$(.$field)?.buffer_size = n;
                self
            }
        }
    };
}

channel_builders!(ChannelOptions);
channel_builders!(VcOptions, channel);
channel_builders!(CallOptions, channel);

/// What to open.
#[derive(Clone, Debug)]
pub struct VcOptions {
    addr: PvcAddr,
    qos: Option<Qos>,
    channel: ChannelOptions,
}

impl VcOptions {
    /// The PVC `addr` (e.g. `"0.100".parse()?`), UBR, and the channel's defaults
    /// ([`ChannelOptions::default`]: adaptive notification, [`DataPath::Auto`], 32 buffers
    /// of 64 KiB).
    pub fn new(addr: PvcAddr) -> VcOptions {
        VcOptions {
            addr,
            qos: None,
            channel: ChannelOptions::default(),
        }
    }

    /// The QoS (linux-atm qos(7) text, parsed).
    pub fn qos(mut self, qos: Qos) -> VcOptions {
        self.qos = Some(qos);
        self
    }
}

/// How to place a call ([`Host::call`]).
#[derive(Clone, Debug)]
pub struct CallOptions {
    qos: Option<Qos>,
    channel: ChannelOptions,
    timeout: Duration,
}

impl Default for CallOptions {
    fn default() -> CallOptions {
        CallOptions::new()
    }
}

impl CallOptions {
    /// UBR, the channel's defaults ([`ChannelOptions::default`]), and 4 s for the network
    /// to answer (Q.2931's T303 is 4 s).
    pub fn new() -> CallOptions {
        CallOptions {
            qos: None,
            channel: ChannelOptions::default(),
            timeout: Duration::from_secs(4),
        }
    }

    /// The QoS (linux-atm qos(7) text, parsed); `tx` is this end's sending direction.
    pub fn qos(mut self, qos: Qos) -> CallOptions {
        self.qos = Some(qos);
        self
    }

    /// The channel's options all at once (as [`CallOptions::notify`], [`CallOptions::path`],
    /// [`CallOptions::buffers`] and [`CallOptions::buffer_size`] set them one by one).
    pub fn channel(mut self, channel: ChannelOptions) -> CallOptions {
        self.channel = channel;
        self
    }

    /// How long hostd waits for the network's answer before it gives up (the call then
    /// fails with cause 102, recovery on timer expiry).
    pub fn timeout(mut self, timeout: Duration) -> CallOptions {
        self.timeout = timeout;
        self
    }
}

/// UBR, as the text `ubr` means: the QoS of a PVC or call that names none.
pub(crate) fn default_qos() -> Qos {
    "ubr".parse().expect("`ubr` is a QoS")
}

mod direct;
mod host;
#[cfg(feature = "_internal_test_exports")]
#[doc(hidden)]
pub mod internal;
mod lane;
mod listen;
pub mod transport;
mod vc;

use direct::*;
pub use host::Host;
use host::*;
use lane::*;
pub use listen::{IncomingCall, Listener};
pub use vc::{RxSdu, TxBuffer, Vc};

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

//! The host daemon's socket protocol, shared by hostd, the `natm` API crate and the CLI.
//!
//! An application talks to hostd over a Unix stream socket. Every message both ways is a
//! *frame*:
//!
//! ```text
//! u32 little-endian: length of what follows (1..=MAX_FRAME)
//! u8 kind:           0 = control (JSON), 1 = data
//! body:              control: one JSON value (Request to hostd, Response from it)
//!                    data:    u32 little-endian VC handle, then the SDU's bytes
//! ```
//!
//! Control requests are answered in order, one [`Response`] each. hostd may also send
//! unsolicited responses ([`Response::LinkDown`], [`Response::LinkUp`],
//! [`Response::Revoked`]) and, for VCs opened on the daemon path, data frames with received
//! SDUs; a client that has a request outstanding skips those (keeping them for later) until
//! its answer comes. The [`Response::Opened`] answer to a direct-path open carries file
//! descriptors (SCM_RIGHTS) on its first byte: the channel region's memfd, then the eventfd
//! the application sleeps on (hostd writes it), then the eventfd hostd sleeps on (the
//! application writes it). hostd creates all three, so an application never hands hostd
//! a descriptor.
//!
//! On the daemon path an application sends an SDU as one data frame; hostd copies it
//! into its own buffers, like a kernel driver's `sendmsg`. hostd stops reading a
//! connection while that VC has no free buffer, so a fast sender blocks in `write`
//! instead of losing SDUs.
//!
//! What it is not: no versioning beyond refusing what does not parse, no authentication
//! beyond the socket's mode and SO_PEERCRED (hostd's business).

use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;

use natm_adapter::{Counters as AdapterCounters, UBR_UNSHAPED_PCR};
use natm_core::addr::Aesa;
use natm_core::{Qos, VcId};
use natm_traffic::sched::{Category, VcSpec};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, recvmsg, sendmsg,
};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Where host `name`'s daemon listens unless told otherwise:
/// `$NATM_RUNTIME_DIR/<name>.sock`, else `$XDG_RUNTIME_DIR/natm/<name>.sock`, else
/// `/tmp/natm-<uid>/<name>.sock`.
pub fn default_socket(name: &str) -> std::path::PathBuf {
    let file = format!("{name}.sock");
    let set = |v: &str| std::env::var_os(v).filter(|s| !s.is_empty());
    if let Some(d) = set("NATM_RUNTIME_DIR") {
        return std::path::PathBuf::from(d).join(file);
    }
    if let Some(d) = set("XDG_RUNTIME_DIR") {
        return std::path::PathBuf::from(d).join("natm").join(file);
    }
    let uid = rustix::process::getuid().as_raw();
    std::path::PathBuf::from(format!("/tmp/natm-{uid}")).join(file)
}

/// The largest frame body (kind byte included): a 65,535-byte SDU and its handle fit.
pub const MAX_FRAME: usize = 1 << 20;
/// Frame kind: a JSON control message.
pub const KIND_CONTROL: u8 = 0;
/// Frame kind: an SDU on a daemon-path VC.
pub const KIND_DATA: u8 = 1;
/// Descriptors an [`Response::Opened`] for a direct-path channel carries.
pub const OPEN_FDS: usize = 3;
/// Descriptors an [`Response::Opened`] for a lane-path channel carries: the channel's
/// three, then the lane's side A (region, the eventfd the application sleeps on, the one
/// it writes to wake the switch). hostd also writes the channel's wake eventfd (the
/// second) whenever it changes the channel's state.
pub const LANE_OPEN_FDS: usize = 6;

/// A completion status hostd writes when it fails a transmit descriptor because the link
/// is down (the adapter's own codes are `natm_link::driver::status_code`, 0..=7).
pub const STATUS_LINK_DOWN: u16 = 16;

/// How an application is told that its channel has something for it: the one type for
/// it, in this protocol, the natm library's `VcOptions` and `natm perf`. (Not the daemons'
/// own idle wait, which is hostd's `IdleWait`.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NotifyMode {
    /// It spins on the completion ring: lowest latency, one CPU.
    Poll,
    /// It spins briefly (the natm library: 30 µs), then sleeps on an eventfd hostd writes.
    #[default]
    Adaptive,
    /// It sleeps on an eventfd hostd writes, at once.
    EventFd,
    /// hostd sends it a real-time signal carrying its channel number (the natm library:
    /// use the VC on the thread that opened it).
    Signal,
}

impl NotifyMode {
    /// Every mode.
    pub const ALL: [NotifyMode; 4] = [
        NotifyMode::Poll,
        NotifyMode::Adaptive,
        NotifyMode::EventFd,
        NotifyMode::Signal,
    ];

    /// The mode's name on the wire, on command lines and in JSON.
    pub const fn name(self) -> &'static str {
        match self {
            NotifyMode::Poll => "poll",
            NotifyMode::Adaptive => "adaptive",
            NotifyMode::EventFd => "eventfd",
            NotifyMode::Signal => "signal",
        }
    }
}

/// Where a VC's data goes: the one type for it, in this protocol, the natm library's
/// `VcOptions` and `natm perf`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataPath {
    /// The fastest path the host's link allows, chosen by hostd when it opens the VC: the
    /// application's own lane on a shared-memory link (at any rate, without impairments),
    /// else the direct path. The answer names the path taken.
    #[default]
    Auto,
    /// Through a shared-memory channel: no system call or copy per SDU in hostd's path.
    Direct,
    /// Through the socket: one message and a copy per SDU each way.
    Daemon,
    /// The application's own lane to the switch (natm-link's `lane` module): it runs the
    /// adapter itself and moves cells on its own ring pair; hostd only admits the VC,
    /// brokers the lane and reports the link's state in the channel (needs a shared-memory
    /// link without emulated impairments; on a rated one the switch port takes the lanes'
    /// cells at the link's rate).
    Lane,
}

impl DataPath {
    /// Every path, the application's own lane first (the order `natm perf paths` measures
    /// them in by default).
    pub const ALL: [DataPath; 3] = [DataPath::Lane, DataPath::Direct, DataPath::Daemon];

    /// The path's name on the wire, on command lines (`--path`, `--paths`) and in JSON.
    pub const fn name(self) -> &'static str {
        match self {
            DataPath::Auto => "auto",
            DataPath::Direct => "direct",
            DataPath::Daemon => "daemon",
            DataPath::Lane => "lane",
        }
    }
}

/// Where hostd sends the signal of a [`NotifyMode::Signal`] channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignalTarget {
    /// The thread (Linux tid) to signal; must belong to the connecting process.
    pub tid: i32,
    /// The real-time signal number.
    pub signo: i32,
    /// The channel number the signal carries (natm-nic's signal bitmap, below 1024).
    pub channel: u32,
}

/// A request to hostd.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Open a VC.
    Open {
        /// The PVC on the host's one link (`vpi.vci` on the wire).
        vc: VcId,
        /// The QoS (linux-atm's qos(7) text on the wire).
        qos: Qos,
        /// Direct (channel) or daemon (socket) path.
        path: DataPath,
        /// Notification (direct path only).
        notify: NotifyMode,
        /// For [`NotifyMode::Signal`].
        #[serde(default)]
        signal: Option<SignalTarget>,
        /// Buffers in the channel (direct path) or hostd's pool for the VC (daemon path).
        buffers: u32,
        /// Bytes per buffer, a multiple of 64; bounds the SDU size.
        buffer_size: u32,
    },
    /// Close a VC this connection opened: answered with [`Response::Closed`], or not at
    /// all when `quiet` (a switched VC's application that does not wait for the release:
    /// hostd releases the call as it would otherwise; a refusal goes unsaid).
    Close {
        /// The cookie [`Response::Opened`] gave, 32 hex digits.
        cookie: String,
        /// Send no answer.
        #[serde(default, skip_serializing_if = "is_false")]
        quiet: bool,
    },
    /// Send one OAM F5 loopback request and wait for its reply.
    Ping {
        /// The VC (`vpi.vci` on the wire).
        vc: VcId,
        /// Segment (the switch loops it back) or end to end (the far host does).
        segment: bool,
        /// The correlation tag.
        correlation: u32,
        /// How long to wait, ms.
        timeout_ms: u64,
    },
    /// Report the host's state.
    Status,
    /// Impair the cells this host sends on its link from now on (natm-netem's
    /// impairments text, e.g. `loss=1%`; `""` clears): answered with
    /// [`Response::Impaired`]. For measurements (`natm perf transport --impair`): the
    /// setting is hostd's until changed or hostd stops, it is kept across a reconnect,
    /// and while it is set hostd opens no lane-path VC (a lane bypasses its link) and
    /// refuses it while one is open.
    Impair {
        /// The impairments, natm-netem's text.
        impair: String,
    },
    /// Set up a switched VC to `called` (issue 24) and open it as [`Request::Open`] would
    /// a PVC: answered with [`Response::Opened`] (its `call` says which VC the network
    /// gave and how long set-up took) or, when the network or the far end refused,
    /// [`Response::CallFailed`] with the cause.
    Call {
        /// The called party's ATM address (`atm2text` form on the wire).
        called: Aesa,
        /// The QoS (qos(7) text on the wire); `tx` is this application's sending side.
        qos: Qos,
        /// Direct (channel) or daemon (socket) path.
        path: DataPath,
        /// Notification (direct path only).
        notify: NotifyMode,
        /// For [`NotifyMode::Signal`].
        #[serde(default)]
        signal: Option<SignalTarget>,
        /// Buffers, as for [`Request::Open`].
        buffers: u32,
        /// Bytes per buffer, as for [`Request::Open`].
        buffer_size: u32,
        /// How long to wait for the network's answer, ms.
        timeout_ms: u64,
    },
    /// Take incoming calls to the host's address whose selector byte is `selector` (any
    /// selector not taken by another listener when `None`): answered with
    /// [`Response::Listening`], then an unsolicited [`Response::Incoming`] per call.
    ///
    /// With `accept`, hostd accepts every call it offers this listener itself, the moment
    /// the SETUP arrives, and opens its VC as `accept` says (as a TCP listener's kernel
    /// completes the handshake before `accept(2)`): the application gets an unsolicited
    /// [`Response::Arrived`] per call once the network confirmed it, instead of
    /// `Incoming`, and cannot reject.
    Listen {
        /// The address's last byte, or `None` for any.
        #[serde(default)]
        selector: Option<u8>,
        /// Accept every call with a VC opened like this.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        accept: Option<AutoAccept>,
    },
    /// Accept an incoming call ([`Response::Incoming`]) and open its VC: answered with
    /// [`Response::Opened`] (with `call`) once the network confirmed it, or
    /// [`Response::CallFailed`].
    Accept {
        /// The call, as `Incoming` named it.
        call: u32,
        /// Direct (channel) or daemon (socket) path.
        path: DataPath,
        /// Notification (direct path only).
        notify: NotifyMode,
        /// For [`NotifyMode::Signal`].
        #[serde(default)]
        signal: Option<SignalTarget>,
        /// Buffers, as for [`Request::Open`].
        buffers: u32,
        /// Bytes per buffer, as for [`Request::Open`].
        buffer_size: u32,
    },
    /// Refuse an incoming call with a Q.2931 cause value (21, call rejected, is usual):
    /// answered with [`Response::Rejected`].
    Reject {
        /// The call, as `Incoming` named it.
        call: u32,
        /// The cause value, 1..=127.
        cause: u8,
    },
}

/// hostd's answer, or an unsolicited notice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Response {
    /// The VC is open.
    Opened {
        /// Names the VC in descriptors and data frames.
        handle: u32,
        /// 128 random bits, 32 hex digits: presented to close the VC.
        cookie: String,
        /// The path.
        path: DataPath,
        /// Buffers (as granted).
        buffers: u32,
        /// Bytes per buffer.
        buffer_size: u32,
        /// The largest SDU the VC carries.
        max_sdu: u32,
        /// Whether the link is up now.
        link_up: bool,
        /// Lane path only: how the application's own adapter shapes the VC, as admitted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lane: Option<LaneShape>,
        /// A switched VC only ([`Request::Call`], [`Request::Accept`]): the call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call: Option<CallInfo>,
    },
    /// The VC is closed.
    Closed {
        /// Its handle.
        handle: u32,
    },
    /// A loopback reply came back.
    Pong {
        /// Round-trip time measured by hostd, ns.
        rtt_ns: u64,
    },
    /// The host's state.
    Status(HostStatus),
    /// The impairments set by [`Request::Impair`] are in force.
    Impaired {
        /// Their text as natm-netem writes it (`""`: none).
        impair: String,
    },
    /// The request failed.
    Error {
        /// What kind of failure.
        kind: ErrorKind,
        /// What was wrong, for a person.
        message: String,
    },
    /// Unsolicited: the link failed; transmissions fail until [`Response::LinkUp`].
    LinkDown,
    /// Unsolicited: the link is back.
    LinkUp,
    /// Unsolicited: hostd will not service this VC again.
    Revoked {
        /// Its handle.
        handle: u32,
    },
    /// The listener is registered.
    Listening {
        /// Names the listener in [`Response::Incoming`].
        listener: u32,
        /// The address it takes calls to (`atm2text` form); with `selector: None`, the
        /// host's own address.
        address: Aesa,
    },
    /// Unsolicited: a call arrived for a listener; answer with [`Request::Accept`] or
    /// [`Request::Reject`] (hostd rejects it with cause 18, no user responding, when
    /// neither comes within its alerting time).
    Incoming {
        /// The listener it matched.
        listener: u32,
        /// Names the call in `Accept`/`Reject`.
        call: u32,
        /// The calling party, when the SETUP named it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        calling: Option<Aesa>,
        /// The called address (this host's).
        called: Aesa,
        /// The QoS as this side sees it (`tx` is this side's sending direction).
        qos: Qos,
    },
    /// The incoming call was rejected.
    Rejected {
        /// The call.
        call: u32,
    },
    /// A call was not set up: refused by the network or the far end, or it timed out
    /// (`cause` 102, recovery on timer expiry, at location `U`).
    CallFailed {
        /// Why.
        cause: CauseInfo,
    },
    /// Unsolicited, to a listener that accepts by itself ([`Request::Listen`]'s
    /// `accept`): a call arrived and is active, its VC open; `opened` is the
    /// [`Response::Opened`] an [`Request::Accept`] would have been answered with (with
    /// `call`, and the channel's descriptors alongside on the direct path).
    Arrived {
        /// The listener it matched.
        listener: u32,
        /// The VC, a [`Response::Opened`].
        opened: Box<Response>,
    },
    /// Unsolicited: a switched VC's call was released by the far end or the network
    /// (or lost with the link); the VC is closed, its handle no longer valid.
    Released {
        /// The VC's handle.
        handle: u32,
        /// Why.
        cause: CauseInfo,
    },
}

/// How a listener that accepts by itself opens each call's VC ([`Request::Listen`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutoAccept {
    /// Direct (channel) or daemon (socket) path.
    pub path: DataPath,
    /// Notification (direct path only; not [`NotifyMode::Signal`], whose target is per VC).
    pub notify: NotifyMode,
    /// Buffers, as for [`Request::Open`].
    pub buffers: u32,
    /// Bytes per buffer, as for [`Request::Open`].
    pub buffer_size: u32,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A switched VC's call, as [`Response::Opened`] reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallInfo {
    /// The VC the network assigned on the host's link.
    pub vc: VcId,
    /// This end's address.
    pub local: Aesa,
    /// The far end's address, when known (the called party for an outgoing call, the
    /// calling party, if the SETUP named it, for an incoming one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<Aesa>,
    /// The QoS as this end sees it.
    pub qos: Qos,
    /// From the request to the network's CONNECT (outgoing) or CONNECT ACKNOWLEDGE
    /// (incoming), ns, as hostd measured it.
    pub setup_ns: u64,
}

/// A Q.2931 cause (Q.850 values) as an application sees it: what `natm call` prints and
/// the `natm` library's call errors carry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CauseInfo {
    /// The cause value, e.g. 37.
    pub value: u8,
    /// Its name, e.g. `user cell rate not available` (`cause N` for a value Q.2931 does
    /// not define).
    pub name: String,
    /// Where it was generated: `U`, `LPN`, `LN`, `TN`, `RLN`, `RPN`, `INTL`, `BI`.
    pub location: String,
    /// The diagnostics as text: natm's switches explain a refusal here (e.g. which trunk
    /// and its free rate), others' are shown printable or in hex; empty when none.
    pub diagnostic: String,
}

impl fmt::Display for CauseInfo {
    /// `cause 37 (user cell rate not available) at LPN: s2:p3 free 1000 c/s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cause {} ({}) at {}",
            self.value, self.name, self.location
        )?;
        if !self.diagnostic.is_empty() {
            write!(f, ": {}", self.diagnostic)?;
        }
        Ok(())
    }
}

/// Classes of [`Response::Error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The request was understood and refused (VC in use, admission, a foreign cookie…).
    Refused,
    /// The request did not parse.
    BadRequest,
    /// The link is down.
    LinkDown,
    /// No answer in time.
    Timeout,
    /// hostd failed to do it (out of memory, a system call failed).
    Internal,
}

/// What `status` reports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostStatus {
    /// The host's name.
    pub name: String,
    /// hostd's pid.
    pub pid: u32,
    /// The link.
    pub link: LinkStatus,
    /// Admission books of the link.
    pub cac: CacStatus,
    /// Every open VC.
    pub channels: Vec<ChannelStatus>,
    /// hostd's resident memory (VmRSS), bytes.
    pub vm_rss_bytes: u64,
    /// The counters of every VC closed since hostd started, summed: its losses by cause
    /// outlive the VC.
    #[serde(default)]
    pub closed: Box<VcStats>,
    /// The host's ATM address, when it signals (issue 24).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<Aesa>,
    /// Whether the host's signalling link (SSCOP on 0.5) is established.
    #[serde(default)]
    pub signalling_up: bool,
    /// Every call in any state, switched VCs and calls being set up.
    #[serde(default)]
    pub calls: Vec<HostCall>,
}

/// One call of [`HostStatus`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCall {
    /// `out` (this host called) or `in`.
    pub direction: String,
    /// The VC, once the network named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vc: Option<VcId>,
    /// The open VC's handle, once the call is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<u32>,
    /// The far end's address, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<Aesa>,
    /// Q.2931's state for the call (e.g. `U10 active`).
    pub state: String,
    /// The QoS as this end sees it.
    pub qos: Qos,
    /// Milliseconds since the call started.
    pub age_ms: u64,
    /// The application's pid.
    pub owner_pid: i32,
}

/// The link's state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkStatus {
    /// What it is.
    pub description: String,
    /// Its line rate as the configuration names it (`oc3`, `100000`, `unlimited`;
    /// natm-core's `LineRate` text); empty from a hostd that does not say.
    #[serde(default)]
    pub rate: String,
    /// The impairments set at run time ([`Request::Impair`]), natm-netem's text; empty
    /// when none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub impair: String,
    /// Whether it is up.
    pub up: bool,
    /// Times it came back after failing.
    pub reconnects: u64,
    /// Cells sent.
    pub tx_cells: u64,
    /// Cells received.
    pub rx_cells: u64,
    /// Batches the link knows were lost on the way in (UDP: datagrams missing from the
    /// peer's sequence, most often dropped by a full socket buffer).
    #[serde(default)]
    pub rx_lost: u64,
    /// What the link said at setup about losing cells or falling short of its rate (a UDP
    /// link's socket buffers smaller than its rate needs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Cells received for no open VC.
    pub rx_unknown_vc: u64,
    /// OAM cells received.
    pub rx_oam: u64,
    /// Loopback requests answered.
    pub loopbacks_answered: u64,
    /// Cells lost because the link failed under them.
    pub lost_on_failure: u64,
    /// Lane requests the switch refused or did not answer after the link came back (the
    /// channel stays link-down).
    #[serde(default)]
    pub lane_failures: u64,
}

/// The link's admission books.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacStatus {
    /// Capacity, cells/s.
    pub capacity: u32,
    /// CBR reserved, cells/s.
    pub cbr: u64,
    /// VBR equivalent bandwidth reserved, cells/s.
    pub vbr: u64,
    /// UBR connections.
    pub ubr: u32,
}

/// One open VC.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelStatus {
    /// Its handle.
    pub handle: u32,
    /// `vpi.vci`.
    pub vc: String,
    /// QoS text.
    pub qos: String,
    /// The owner's pid (SO_PEERCRED).
    pub owner_pid: i32,
    /// Notification mode.
    pub notify: NotifyMode,
    /// Path.
    pub path: DataPath,
    /// The adapter's counters for the VC. On the lane path the adapter runs in the
    /// application (`natm::Vc::counters` there): only `cells_sent` and `cells_received`
    /// are filled, from the lane's ring indices (every cell the application's side sent
    /// and took since the lane's region was made), and the rest are 0.
    pub counters: VcStats,
    /// Transmit descriptors queued in the adapter (0 on the lane path).
    pub tx_queued: u64,
    /// Free receive buffers the adapter holds (0 on the lane path).
    pub rx_free: u64,
    /// A lane spliced to another application's (natm-link's `lane` module): the two
    /// share its rings, and the switch is off its data path.
    #[serde(default)]
    pub spliced: bool,
}

/// A VC's counters (natm-adapter's per-VC and drop counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VcStats {
    /// SDUs sent.
    pub sdus_sent: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// SDUs received.
    pub sdus_received: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// Cells sent.
    pub cells_sent: u64,
    /// Cells received.
    pub cells_received: u64,
    /// Frames dropped: no free receive buffer.
    pub drops_no_buffer: u64,
    /// Frames dropped: CRC-32.
    pub drops_crc: u64,
    /// Frames dropped: length field.
    pub drops_length: u64,
    /// Frames dropped: oversize.
    pub drops_oversize: u64,
    /// Frames dropped: reassembly timeout.
    pub drops_timeout: u64,
    /// Cells dropped: policed.
    pub drops_policed: u64,
    /// Transmissions refused or failed (queue full, link down…).
    pub tx_failed: u64,
}

/// How a lane-path application shapes its VC: the contract hostd admitted (cells/s and
/// cells; a UBR VC with no rate of its own on an unlimited link has `pcr` 0, unshaped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneShape {
    /// `"cbr"`, `"rt-vbr"`, `"nrt-vbr"` or `"ubr"`.
    pub category: LaneCategory,
    /// Peak cell rate.
    pub pcr: u32,
    /// Sustainable cell rate (VBR).
    pub scr: u32,
    /// Maximum burst size (VBR).
    pub mbs: u32,
    /// A spliced lane (natm-link's `lane` module): the side of another lane's region the
    /// descriptors are, and the VC its cells carry instead of the application's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub splice: Option<LaneSplice>,
}

/// The side of a spliced lane's region an application holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneSplice {
    /// Side B (`true`) or A.
    pub side_b: bool,
    /// The label's VPI.
    pub vpi: u16,
    /// The label's VCI.
    pub vci: u16,
}

/// A service category on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LaneCategory {
    /// CBR.
    Cbr,
    /// rt-VBR.
    RtVbr,
    /// nrt-VBR.
    NrtVbr,
    /// UBR.
    Ubr,
}

impl LaneShape {
    /// The shape of a scheduler spec (`UBR_UNSHAPED_PCR` becomes 0).
    pub fn from_spec(spec: &VcSpec) -> LaneShape {
        LaneShape {
            category: match spec.category {
                Category::Cbr => LaneCategory::Cbr,
                Category::RtVbr => LaneCategory::RtVbr,
                Category::NrtVbr => LaneCategory::NrtVbr,
                Category::Ubr => LaneCategory::Ubr,
            },
            pcr: if spec.pcr == UBR_UNSHAPED_PCR {
                0
            } else {
                spec.pcr
            },
            scr: spec.scr,
            mbs: spec.mbs,
            splice: None,
        }
    }

    /// The scheduler spec it stands for.
    pub fn spec(&self) -> VcSpec {
        match self.category {
            LaneCategory::Cbr => VcSpec::cbr(self.pcr),
            LaneCategory::RtVbr => VcSpec::rt_vbr(self.pcr, self.scr, self.mbs),
            LaneCategory::NrtVbr => VcSpec::nrt_vbr(self.pcr, self.scr, self.mbs),
            LaneCategory::Ubr if self.pcr == 0 => VcSpec::ubr(UBR_UNSHAPED_PCR, 1),
            LaneCategory::Ubr => VcSpec::ubr(self.pcr, 1),
        }
    }
}

impl VcStats {
    /// Adds `o`'s counts to these (saturating).
    pub fn add(&mut self, o: &VcStats) {
        let pairs = [
            (&mut self.sdus_sent, o.sdus_sent),
            (&mut self.bytes_sent, o.bytes_sent),
            (&mut self.sdus_received, o.sdus_received),
            (&mut self.bytes_received, o.bytes_received),
            (&mut self.cells_sent, o.cells_sent),
            (&mut self.cells_received, o.cells_received),
            (&mut self.drops_no_buffer, o.drops_no_buffer),
            (&mut self.drops_crc, o.drops_crc),
            (&mut self.drops_length, o.drops_length),
            (&mut self.drops_oversize, o.drops_oversize),
            (&mut self.drops_timeout, o.drops_timeout),
            (&mut self.drops_policed, o.drops_policed),
            (&mut self.tx_failed, o.tx_failed),
        ];
        for (a, b) in pairs {
            *a = a.saturating_add(b);
        }
    }

    /// An adapter's counters for its one VC, plus drops and failures counted outside it.
    pub fn from_adapter(c: &AdapterCounters, extra_drops: u64, extra_failed: u64) -> VcStats {
        VcStats {
            sdus_sent: c.frames_out,
            bytes_sent: c.bytes_out,
            sdus_received: c.frames_in,
            bytes_received: c.bytes_in,
            cells_sent: c.cells_out,
            cells_received: c.cells_in,
            drops_no_buffer: c.no_buffer + extra_drops,
            drops_crc: c.crc,
            drops_length: c.length + c.aborted,
            drops_oversize: c.oversize,
            drops_timeout: c.timeout,
            drops_policed: c.policed,
            tx_failed: c.tx_refused + extra_failed,
        }
    }
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the socket.
    #[error("the socket closed")]
    Closed,
    /// The length is 0 or above [`MAX_FRAME`].
    #[error("frame length {0} is not in 1..={MAX_FRAME}")]
    BadLength(u64),
    /// An unknown kind byte.
    #[error("unknown frame kind {0}")]
    BadKind(u8),
    /// A data frame shorter than its handle.
    #[error("a data frame of {0} bytes has no room for its handle")]
    ShortData(usize),
    /// A control frame that is not a message.
    #[error("bad control message: {0}")]
    Json(#[from] serde_json::Error),
    /// The socket failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// A frame, decoded.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<T> {
    /// A control message.
    Control(T),
    /// An SDU.
    Data {
        /// The VC handle.
        handle: u32,
        /// The SDU.
        sdu: Vec<u8>,
    },
}

/// A control frame's bytes.
pub fn control_frame<T: Serialize>(msg: &T) -> Vec<u8> {
    let body = serde_json::to_vec(msg).expect("protocol messages always serialize");
    let mut f = Vec::with_capacity(5 + body.len());
    f.extend_from_slice(&(body.len() as u32 + 1).to_le_bytes());
    f.push(KIND_CONTROL);
    f.extend_from_slice(&body);
    f
}

/// A data frame's bytes.
pub fn data_frame(handle: u32, sdu: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(9 + sdu.len());
    f.extend_from_slice(&(sdu.len() as u32 + 5).to_le_bytes());
    f.push(KIND_DATA);
    f.extend_from_slice(&handle.to_le_bytes());
    f.extend_from_slice(sdu);
    f
}

/// Decodes a frame's kind and body (the bytes after the length).
pub fn decode<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<Frame<T>, FrameError> {
    match body.split_first() {
        None => Err(FrameError::BadLength(0)),
        Some((&KIND_CONTROL, json)) => Ok(Frame::Control(serde_json::from_slice(json)?)),
        Some((&KIND_DATA, rest)) => {
            if rest.len() < 4 {
                return Err(FrameError::ShortData(rest.len()));
            }
            let handle = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
            Ok(Frame::Data {
                handle,
                sdu: rest[4..].to_vec(),
            })
        }
        Some((&k, _)) => Err(FrameError::BadKind(k)),
    }
}

/// The whole frame at the front of `buf`, if it holds one: its body (the bytes after the
/// length) and how many bytes of `buf` it takes, length included.
pub fn split_frame(buf: &[u8]) -> Result<Option<(&[u8], usize)>, FrameError> {
    let Some((len, rest)) = buf.split_first_chunk::<4>() else {
        return Ok(None);
    };
    let len = u32::from_le_bytes(*len) as usize;
    if len == 0 || len > MAX_FRAME {
        return Err(FrameError::BadLength(len as u64));
    }
    Ok(rest.get(..len).map(|body| (body, 4 + len)))
}

/// Bytes read from a stream socket, taken a frame at a time. Taking a frame moves a
/// cursor; the bytes taken are dropped once per [`FrameBuf::extend`], not once per frame
/// (a drain per frame moved every byte behind it again: quadratic in a buffer of small
/// frames), and each frame's bytes are copied once, into its decoded value.
#[derive(Debug, Default)]
pub struct FrameBuf {
    bytes: Vec<u8>,
    start: usize,
}

impl FrameBuf {
    /// An empty buffer.
    pub fn new() -> FrameBuf {
        FrameBuf::default()
    }

    /// Appends bytes read from the socket.
    pub fn extend(&mut self, more: &[u8]) {
        if self.start > 0 {
            self.bytes.drain(..self.start);
            self.start = 0;
        }
        self.bytes.extend_from_slice(more);
    }

    /// Bytes held and not taken yet.
    pub fn len(&self) -> usize {
        self.bytes.len() - self.start
    }

    /// Whether every byte was taken.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes the next whole frame, decoded, if the buffer holds one. A frame that does not
    /// decode is taken all the same (the error says why); a bad length is not (nothing
    /// behind it can be framed).
    pub fn next_frame<T: for<'de> Deserialize<'de>>(
        &mut self,
    ) -> Result<Option<Frame<T>>, FrameError> {
        let Some((body, used)) = split_frame(&self.bytes[self.start..])? else {
            return Ok(None);
        };
        let frame = decode(body);
        self.start += used;
        if self.start == self.bytes.len() {
            self.bytes.clear();
            self.start = 0;
        }
        frame.map(Some)
    }
}

/// Reads one frame from a blocking socket, with the descriptors that came with it.
pub fn read_frame<T: for<'de> Deserialize<'de>>(
    sock: &UnixStream,
) -> Result<(Frame<T>, Vec<OwnedFd>), FrameError> {
    let mut len = [0u8; 4];
    let fds = recv_with_fds(sock, &mut len)?;
    let n = u32::from_le_bytes(len) as usize;
    if n == 0 || n > MAX_FRAME {
        return Err(FrameError::BadLength(n as u64));
    }
    let mut body = vec![0u8; n];
    let mut s = sock;
    s.read_exact(&mut body).map_err(eof_is_closed)?;
    Ok((decode(&body)?, fds))
}

fn eof_is_closed(e: io::Error) -> FrameError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        FrameError::Closed
    } else {
        FrameError::Io(e)
    }
}

/// Fills `buf` from the socket; descriptors that arrive with any of its bytes are kept.
fn recv_with_fds(sock: &UnixStream, buf: &mut [u8]) -> Result<Vec<OwnedFd>, FrameError> {
    let mut fds = Vec::new();
    let mut got = 0;
    while got < buf.len() {
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(8))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let r = recvmsg(
            sock,
            &mut [IoSliceMut::new(&mut buf[got..])],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        );
        let msg = match r {
            Ok(m) => m,
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::AGAIN) => {
                return Err(FrameError::Io(io::Error::from(io::ErrorKind::WouldBlock)));
            }
            Err(e) => return Err(FrameError::Io(e.into())),
        };
        for m in control.drain() {
            if let RecvAncillaryMessage::ScmRights(it) = m {
                fds.extend(it);
            }
        }
        if msg.bytes == 0 {
            return Err(FrameError::Closed);
        }
        got += msg.bytes;
    }
    Ok(fds)
}

/// Writes a whole frame to a blocking socket.
pub fn write_frame(sock: &UnixStream, frame: &[u8]) -> io::Result<()> {
    let mut s = sock;
    s.write_all(frame)
}

/// Sends the first bytes of `frame` with `fds` attached (SCM_RIGHTS), without waiting;
/// returns how many bytes went (0 if the socket is full: the descriptors did not go).
pub fn send_with_fds(sock: &UnixStream, frame: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<usize> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(OPEN_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(io::Error::other("too many descriptors for one message"));
    }
    match sendmsg(
        sock,
        &[IoSlice::new(frame)],
        &mut control,
        SendFlags::NOSIGNAL | SendFlags::DONTWAIT,
    ) {
        Ok(n) => Ok(n),
        Err(rustix::io::Errno::AGAIN) => Ok(0),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn mode_and_path_names_are_their_json() {
        for m in NotifyMode::ALL {
            assert_eq!(
                serde_json::to_string(&m).unwrap(),
                format!("\"{}\"", m.name())
            );
        }
        for p in DataPath::ALL {
            assert_eq!(
                serde_json::to_string(&p).unwrap(),
                format!("\"{}\"", p.name())
            );
        }
    }

    proptest! {
        /// Whatever a peer writes, framing and decoding answer with a value or an error.
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut rest = &bytes[..];
            while let Ok(Some((body, used))) = split_frame(rest) {
                let _ = decode::<Request>(body);
                let _ = decode::<Response>(body);
                rest = &rest[used..];
            }
            let _ = decode::<Request>(&bytes);
            // The same bytes arriving in pieces, as reads hand them over.
            let mut buf = FrameBuf::new();
            for piece in bytes.chunks(7) {
                buf.extend(piece);
                while let Ok(Some(_)) | Err(FrameError::Json(_) | FrameError::ShortData(_) | FrameError::BadKind(_)) =
                    buf.next_frame::<Request>()
                {}
            }
        }

        /// Data frames carry any SDU and handle unchanged.
        #[test]
        fn data_frames_round_trip(handle in any::<u32>(), sdu in proptest::collection::vec(any::<u8>(), 0..2000)) {
            let frame = data_frame(handle, &sdu);
            let (body, used) = split_frame(&frame).unwrap().unwrap();
            prop_assert_eq!(used, frame.len());
            prop_assert_eq!(decode::<Request>(body).unwrap(), Frame::Data { handle, sdu });
        }
    }

    #[test]
    fn frames_round_trip_and_garbage_is_refused() {
        let mut buf = FrameBuf::new();
        buf.extend(&control_frame(&Request::Status));
        buf.extend(&data_frame(7, b"hello"));
        assert_eq!(
            buf.next_frame::<Request>().unwrap().unwrap(),
            Frame::Control(Request::Status)
        );
        assert_eq!(
            buf.next_frame::<Request>().unwrap().unwrap(),
            Frame::Data {
                handle: 7,
                sdu: b"hello".to_vec()
            }
        );
        assert!(buf.is_empty());
        let huge = [0xff, 0xff, 0xff, 0x7f, 0];
        assert!(matches!(split_frame(&huge), Err(FrameError::BadLength(_))));
        assert!(matches!(
            decode::<Request>(&[9, 1]),
            Err(FrameError::BadKind(9))
        ));
        assert!(matches!(
            decode::<Request>(&[1, 1]),
            Err(FrameError::ShortData(1))
        ));
        assert!(matches!(
            decode::<Request>(b"\0{\"op\":\"fly\"}"),
            Err(FrameError::Json(_))
        ));
        let open = r#"{"op":"open","vc":"0.100","qos":"ubr","path":"direct","notify":"eventfd","buffers":8,"buffer_size":4096}"#;
        assert!(matches!(
            decode::<Request>(&[b"\0".as_slice(), open.as_bytes()].concat()).unwrap(),
            Frame::Control(Request::Open { .. })
        ));
    }

    #[test]
    fn call_messages_round_trip_as_their_documented_json() {
        let addr: Aesa = "47.0005.80ffe1000000f21a3599.0020481a3599.00"
            .parse()
            .unwrap();
        let call = r#"{"op":"call","called":"47.0005.80FFE1000000F21A3599.0020481A3599.00","qos":"cbr:pcr=1000","path":"auto","notify":"adaptive","buffers":8,"buffer_size":4096,"timeout_ms":2000}"#;
        let Request::Call { called, qos, .. } = serde_json::from_str(call).unwrap() else {
            panic!("not a call");
        };
        assert_eq!((called, qos), (addr, "cbr:pcr=1000".parse().unwrap()));
        let bad = call.replace("47.0005", "47.00x5");
        let e = serde_json::from_str::<Request>(&bad).unwrap_err();
        assert!(e.to_string().contains("bad ATM address"), "{e}");
        let cause = CauseInfo {
            value: 37,
            name: "user cell rate not available".into(),
            location: "LPN".into(),
            diagnostic: "s2:p3 free 1000 c/s".into(),
        };
        assert_eq!(
            cause.to_string(),
            "cause 37 (user cell rate not available) at LPN: s2:p3 free 1000 c/s"
        );
        for r in [
            Request::Listen {
                selector: Some(7),
                accept: None,
            },
            Request::Listen {
                selector: None,
                accept: Some(AutoAccept {
                    path: DataPath::Daemon,
                    notify: NotifyMode::Poll,
                    buffers: 2,
                    buffer_size: 4096,
                }),
            },
            Request::Close {
                cookie: "00".repeat(16),
                quiet: true,
            },
            Request::Reject { call: 3, cause: 21 },
        ] {
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(serde_json::from_str::<Request>(&json).unwrap(), r);
        }
        for r in [
            Response::CallFailed {
                cause: cause.clone(),
            },
            Response::Released { handle: 4, cause },
            Response::Arrived {
                listener: 2,
                opened: Box::new(Response::Opened {
                    handle: 9,
                    cookie: "ab".repeat(16),
                    path: DataPath::Daemon,
                    buffers: 2,
                    buffer_size: 4096,
                    max_sdu: 4096,
                    link_up: true,
                    lane: None,
                    call: Some(CallInfo {
                        vc: "0.32768".parse().unwrap(),
                        local: addr,
                        remote: Some(addr),
                        qos: "ubr".parse().unwrap(),
                        setup_ns: 1000,
                    }),
                }),
            },
            Response::Incoming {
                listener: 1,
                call: 2,
                calling: None,
                called: addr,
                qos: "ubr".parse().unwrap(),
            },
            Response::Listening {
                listener: 1,
                address: addr,
            },
        ] {
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(serde_json::from_str::<Response>(&json).unwrap(), r);
        }
    }
}

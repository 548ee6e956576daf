//! The world's public vocabulary: handles, configurations, actions, errors, statistics.

use super::*;

/// A host's handle in its world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostId(pub u32);
/// A switch's handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SwitchId(pub u32);
/// A link's handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkId(pub u32);
/// A cross-connect's handle in the world's record: stable across switch restarts (the
/// switch's own [`natm_switch::XcId`] changes when it is rebuilt).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u32);

/// One end of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// A host (one link per host).
    Host(HostId),
    /// A new port of a switch. Its rate is set from the link (whole cells/s).
    Port(SwitchId, PortId, PortConfig),
}

/// A host's make-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostConfig {
    /// The adapter's settings; its link rate, `buffers` and `rx_buffer_size` are set by the
    /// world (from the link and the fields below).
    pub adapter: AdapterConfig,
    /// Buffers in all: half are kept posted for receive, half are the transmit free list.
    pub buffers: u32,
    /// Bytes per buffer (the largest SDU sent or received).
    pub buffer_size: usize,
    /// CPU costs per message.
    pub costs: HostCosts,
}

impl HostConfig {
    /// `buffers` buffers of `buffer_size` bytes, a free CPU, the adapter's defaults.
    pub fn new(buffers: u32, buffer_size: usize) -> HostConfig {
        HostConfig {
            adapter: AdapterConfig::new(buffers, buffer_size),
            buffers,
            buffer_size,
            costs: HostCosts::FREE,
        }
    }
}

impl Default for HostConfig {
    /// 256 buffers of 9,216 bytes.
    fn default() -> HostConfig {
        HostConfig::new(256, 9216)
    }
}

/// A link's make-up (both directions alike).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    /// The line rate.
    pub rate: LineRate,
    /// Impairments; each direction gets its own sub-seed of the world's seed (the seed
    /// here is ignored).
    pub impairments: Impairments,
    /// Cells that may wait for the line.
    pub queue_cells: usize,
}

impl Default for LinkConfig {
    /// OC-3c, no impairments, natm-netem's default queue.
    fn default() -> LinkConfig {
        LinkConfig {
            rate: LineRate::default(),
            impairments: Impairments::default(),
            queue_cells: natm_netem::DEFAULT_QUEUE_CELLS as usize,
        }
    }
}

/// How a host's transmit side shapes a VC.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VcOptions {
    /// Shape at this multiple of the contract's rates (1.0: within contract; 2.0: a greedy
    /// source the switch must police). Capped at the link's rate.
    pub greedy: f64,
}

impl Default for VcOptions {
    fn default() -> VcOptions {
        VcOptions { greedy: 1.0 }
    }
}

/// Which directions of a link an impairment change applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dirs {
    /// From end `a` to end `b`.
    AToB,
    /// From `b` to `a`.
    BToA,
    /// Both.
    Both,
}

/// A fault or command, carried out at once or at a scheduled instant.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Bring a link down (`false`) or up.
    LinkUp(LinkId, bool),
    /// Crash a switch (it loses all state).
    CrashSwitch(SwitchId),
    /// Restart a crashed switch from the world's record.
    RestartSwitch(SwitchId),
    /// Crash a host (adapter, CPU queue and timers lost).
    CrashHost(HostId),
    /// Restart a crashed host: VCs reopened, `App::start` called.
    RestartHost(HostId),
    /// Stop (`true`) or resume polling a switch port's output.
    Clog(SwitchId, PortId, bool),
    /// Make a cross-connect (the id it gets is returned by [`World::connect`]; scheduled,
    /// it is recorded as the next `ConnId`).
    Connect(SwitchId, CrossConnect),
    /// Remove a cross-connect.
    Disconnect(SwitchId, ConnId),
    /// Remove the recorded cross-connect whose `a` end is this endpoint.
    DisconnectEndpoint(SwitchId, Endpoint),
    /// Open a VC at a host.
    OpenVc(HostId, VcId, Qos, VcOptions),
    /// Close a VC at a host.
    CloseVc(HostId, VcId),
    /// New impairments on a link, for cells offered from now on.
    Impairments(LinkId, Dirs, Impairments),
    /// Duplicate whole frames of VC 0.5 (signalling) on a link with this probability each
    /// (0: none), both directions: the copy follows the frame at once. Data VCs are not
    /// duplicated (their cells carry the order oracle's serials).
    DuplicateSignalling(LinkId, f64),
}

/// Why a builder call or command was refused; the text names what was wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// No such host.
    #[error("no host {0}")]
    UnknownHost(u32),
    /// No such switch.
    #[error("no switch {0}")]
    UnknownSwitch(u32),
    /// No such link.
    #[error("no link {0}")]
    UnknownLink(u32),
    /// No such cross-connect in the record.
    #[error("switch {switch}: no cross-connect {conn}")]
    UnknownConn {
        /// The switch.
        switch: String,
        /// The id.
        conn: u32,
    },
    /// A host has one link.
    #[error("host {0} has a link already")]
    HostHasLink(String),
    /// A host needs its link before VCs.
    #[error("host {0} has no link")]
    NoLink(String),
    /// The switch refused.
    #[error("switch {switch}: {reason}")]
    Switch {
        /// The switch.
        switch: String,
        /// Its refusal.
        reason: String,
    },
    /// The host refused (CAC, adapter).
    #[error("host {host}: {reason}")]
    Host {
        /// The host.
        host: String,
        /// Its refusal.
        reason: String,
    },
    /// A configuration value is unusable.
    #[error("{0}")]
    Config(String),
}

/// An invariant breached: the run stops at the event that showed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Virtual time of the event.
    pub at: Instant,
    /// The event's sequence number (its low 32 bits, as the trace shows it).
    pub seq: u64,
    /// Which invariant (see [`crate::check`]).
    pub invariant: &'static str,
    /// What was seen.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invariant \"{}\" broken at {} ns (event {}): {}",
            self.invariant,
            self.at.as_nanos(),
            self.seq,
            self.detail
        )
    }
}

impl std::error::Error for Violation {}

impl Violation {
    /// The invariant "no panic": `who` panicked with `payload` (what `catch_unwind`
    /// caught) at (`at`, `seq`); `hint` follows the message (where to look).
    pub fn panicked(
        payload: &(dyn std::any::Any + Send),
        at: Instant,
        seq: u64,
        who: &str,
        hint: &str,
    ) -> Violation {
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into());
        Violation {
            at,
            seq,
            invariant: "no panic",
            detail: format!("{who} panicked: {msg}{hint}"),
        }
    }
}

/// What the run has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Events run (stale queue entries not counted).
    pub events: u64,
    /// Stale queue entries skipped.
    pub stale: u64,
    /// Cells handled by one component each (see the module doc).
    pub cell_events: u64,
    /// SDUs the apps sent that a host took (a buffer, an open VC).
    pub sdus_sent: u64,
    /// Sends refused at once (no buffer, VC not open, bad length) or after the CPU (VC
    /// closed meanwhile).
    pub sends_refused: u64,
    /// SDUs delivered to apps.
    pub sdus_delivered: u64,
    /// Cells offered to a down link.
    pub dropped_link_down: u64,
    /// Cells that reached a crashed node.
    pub dropped_node_down: u64,
    /// Scheduled actions carried out.
    pub actions: u64,
    /// Actions refused (logged in the trace).
    pub actions_refused: u64,
    /// Frames of VC 0.5 duplicated on links ([`Action::DuplicateSignalling`]).
    pub signalling_duplicated: u64,
}

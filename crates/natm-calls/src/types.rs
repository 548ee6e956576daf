//! The configuration and the values call control reports.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use natm_core::addr::{Aesa, AesaPrefix};
use natm_core::{Duration, Qos};
use natm_sig::UniVersion;
use natm_switch::PortId;

/// Which side of the UNI the switch is on a port (Q.2931 §1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The network side: a host's port, and the `a` end of a trunk. It assigns the port's
    /// VCIs (in the SETUPs it sends and the CALL PROCEEDING it answers SETUPs with).
    Network,
    /// The user side: the `b` end of a trunk; the peer switch assigns the VCIs.
    User,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Network => "network",
            Side::User => "user",
        })
    }
}

/// A static route: addresses matching `prefix` leave by `port` (the longest matching
/// prefix wins).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// The addresses.
    pub prefix: AesaPrefix,
    /// The port toward them.
    pub port: PortId,
}

/// The configuration of a switch's call control.
#[derive(Clone, Debug)]
pub struct Config {
    /// The switch's name, at the head of each refusal's explanation (`s2 p3: 1000 c/s
    /// free`); keep it short (the explanation has 28 bytes).
    pub name: String,
    /// The switch's own prefix (13 bytes): an address under it without a route is
    /// unallocated (cause 1), any other address without a route has no route (cause 3).
    pub prefix: AesaPrefix,
    /// The routes (a host's 19-byte prefix to its port, another switch's prefix to the
    /// trunk toward it).
    pub routes: Vec<Route>,
    /// The VCIs (on VPI 0) this switch assigns on the network side of its ports:
    /// 32768..=65535 by default, so they never meet PVCs.
    pub vci_first: u16,
    /// The last VCI of the range.
    pub vci_last: u16,
    /// The UNI version of the ports' signalling (UNI 4.0 by default; with UNI 3.1 a
    /// bandwidth refusal is cause 51, not 37); a port may have its own
    /// ([`CallControl::add_port_version`](crate::CallControl::add_port_version)).
    pub version: UniVersion,
    /// SSCOP's parameters on every port.
    pub sscop: natm_sscop::Config,
}

impl Config {
    /// No routes, VCIs 32768..=65535, UNI 4.0, SSCOP's defaults but the window
    /// ([`natm_sig::saal::sscop_config`]).
    pub fn new(name: impl Into<String>, prefix: AesaPrefix) -> Config {
        Config {
            name: name.into(),
            prefix,
            routes: Vec::new(),
            vci_first: 32768,
            vci_last: 65535,
            version: UniVersion::Uni40,
            sscop: natm_sig::saal::sscop_config(),
        }
    }
}

/// Why a port command was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortError {
    /// The port has call control already.
    Exists(PortId),
    /// The port has no call control.
    Unknown(PortId),
}

impl fmt::Display for PortError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PortError::Exists(p) => write!(f, "port {p} signals already"),
            PortError::Unknown(p) => write!(f, "port {p} does not signal"),
        }
    }
}

impl core::error::Error for PortError {}

/// One port's signalling, as [`CallControl::ports`](crate::CallControl::ports) reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortStatus {
    /// The port.
    pub port: PortId,
    /// The switch's side on it.
    pub side: Side,
    /// Whether the driver has the port up.
    pub up: bool,
    /// SSCOP's state.
    pub sscop: natm_sscop::State,
    /// Whether call control sees the SAAL established.
    pub link_up: bool,
    /// Call legs on the port.
    pub calls: usize,
    /// SAAL establishments since the port was added.
    pub establishments: u64,
    /// VCIs in use by calls on the port (assigned here or by the peer).
    pub vcis: usize,
}

/// Where a call is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// SETUP forwarded, CALL PROCEEDING sent back; waiting for CONNECT.
    Proceeding,
    /// Connected end to end.
    Active,
    /// One leg is gone, the other is being released.
    Releasing,
}

impl Phase {
    /// `proceeding`, `active`, `releasing`.
    pub const fn name(self) -> &'static str {
        match self {
            Phase::Proceeding => "proceeding",
            Phase::Active => "active",
            Phase::Releasing => "releasing",
        }
    }
}

/// One leg of a call: its port and VCI (VPI 0), `None` until known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LegStatus {
    /// The port.
    pub port: PortId,
    /// The VCI, once assigned.
    pub vci: Option<u16>,
}

impl fmt::Display for LegStatus {
    /// `PORT:0.VCI`, or `PORT:?` before the VC is known.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.vci {
            Some(v) => write!(f, "{}:0.{v}", self.port),
            None => write!(f, "{}:?", self.port),
        }
    }
}

/// One call through the switch, as [`CallControl::calls`](crate::CallControl::calls)
/// reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct CallStatus {
    /// The calling side's leg (`None` once it is gone while the other is released).
    pub a: Option<LegStatus>,
    /// The called side's leg.
    pub b: Option<LegStatus>,
    /// Where the call is.
    pub phase: Phase,
    /// The QoS as the caller sees it.
    pub qos: Qos,
    /// The called party.
    pub called: Aesa,
    /// The calling party, when the SETUP named an AESA.
    pub calling: Option<Aesa>,
    /// Time since the SETUP arrived.
    pub age: Duration,
}

/// Counts since start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Calls that reached active.
    pub connected: u64,
    /// Calls refused here or failed before active.
    pub refused: u64,
    /// Calls cleared because a port or its SAAL went.
    pub cleared_by_port: u64,
    /// Signalling SDUs not sent because the port's queue was full or the port down.
    pub tx_dropped: u64,
    /// Log lines dropped because nobody read [`poll_log`](crate::CallControl::poll_log).
    pub log_dropped: u64,
}

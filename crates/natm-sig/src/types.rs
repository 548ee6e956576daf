//! The values call control's owner passes in and gets back.

use alloc::boxed::Box;
use core::fmt;

use natm_core::Qos;
use natm_wire::q2931::qos::QosMapError;

use crate::config::Timer;
use crate::state::CallState;
use crate::{Bhli, Blli, Cause, Message, PartyNumber, Subaddress};

/// Which side allocated a call reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// This side (it sent the SETUP); its messages carry flag 0.
    Local,
    /// The peer (it sent the SETUP); this side's messages carry flag 1.
    Remote,
}

/// One call on an interface: its call reference (23 bits) and which side allocated it.
/// Both sides may use the same value at once, one each (atm-facts 5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallId {
    /// Which side allocated the reference.
    pub origin: Origin,
    /// The call reference value, 1..=0x7F_FFFF (0 is the global reference).
    pub cref: u32,
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = match self.origin {
            Origin::Local => "out",
            Origin::Remote => "in",
        };
        write!(f, "cref {}/{side}", self.cref)
    }
}

/// A connection identifier: the VPCI (the VPI on a UNI without virtual path
/// multiplexing) and VCI the network assigned to a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId {
    /// Virtual path connection identifier.
    pub vpci: u16,
    /// Virtual channel identifier.
    pub vci: u16,
}

impl fmt::Display for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.vpci, self.vci)
    }
}

/// What a RESTART covers (the restart indicator's class, Q.2931 §4.5.19).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Restart {
    /// Class 0: the indicated VC.
    Vc {
        /// Its VPCI.
        vpci: u16,
        /// Its VCI.
        vci: u16,
    },
    /// Class 1: every VC of the indicated VPC (UNI 4.0).
    Vp {
        /// Its VPCI.
        vpci: u16,
    },
    /// Class 2: every VC of the interface.
    All,
}

/// An outgoing call's parameters: what [`Uni::setup`](crate::Uni::setup) puts in SETUP.
#[derive(Clone, Debug, PartialEq)]
pub struct SetupParams {
    /// The called party (mandatory).
    pub called: PartyNumber,
    /// The called party's subaddress.
    pub called_sub: Option<Subaddress>,
    /// The calling party.
    pub calling: Option<PartyNumber>,
    /// The calling party's subaddress.
    pub calling_sub: Option<Subaddress>,
    /// The VC's QoS as the caller sees it (`tx` is the forward direction), mapped to the
    /// AAL parameters, traffic descriptors, bearer capability and QoS parameter IEs by
    /// `natm_wire::q2931::qos` (`max` rates must be resolved first: `qos::resolve_max`).
    pub qos: Qos,
    /// Broadband low layer information.
    pub blli: Option<Blli>,
    /// Broadband high layer information.
    pub bhli: Option<Bhli>,
    /// The connection, which the network side names in its SETUP (the user side leaves
    /// it to the network).
    pub conn: Option<ConnId>,
}

/// An incoming SETUP as call control read it.
#[derive(Clone, Debug, PartialEq)]
pub struct IncomingSetup {
    /// The parameters. The QoS is the caller's view (`tx` is the caller's transmit
    /// direction); the called side's own view is `natm_wire::q2931::qos::swap_directions`
    /// of it.
    pub params: SetupParams,
    /// Whether the QoS IEs mapped to a natm `Qos`; when not, `params.qos` is the default
    /// and the owner may refuse the call (cause 73) or read `message` itself.
    pub qos_mapped: bool,
    /// The whole message, with every IE as decoded.
    pub message: Message,
}

/// Who ended a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReleaseOrigin {
    /// The peer (RELEASE, RELEASE COMPLETE, or a STATUS saying it has no such call).
    Peer,
    /// This side: the owner's command, a timer, the SAAL's loss, or a restart.
    Local,
}

/// What call control reports to its owner.
#[derive(Clone, Debug, PartialEq)]
pub enum CallEvent {
    /// A SETUP arrived for a new call (U6 / N1). Answer with
    /// [`proceed`](crate::Uni::proceed), [`connect`](crate::Uni::connect) or
    /// [`release`](crate::Uni::release).
    Setup {
        /// The new call.
        call: CallId,
        /// What the SETUP asked for.
        setup: Box<IncomingSetup>,
    },
    /// The called side is proceeding (CALL PROCEEDING, or UNI 4.0's ALERTING).
    Proceeding {
        /// The call.
        call: CallId,
        /// The connection, if named yet.
        conn: Option<ConnId>,
    },
    /// The call is active (U10 / N10).
    Connected {
        /// The call.
        call: CallId,
        /// Its connection.
        conn: Option<ConnId>,
    },
    /// The call ended and its call reference is free. Every call that was reported
    /// (`Setup`) or started (`setup`) ends with exactly one `Released`.
    Released {
        /// The call.
        call: CallId,
        /// Why: the peer's cause, or this side's.
        cause: Cause,
        /// Who ended it.
        by: ReleaseOrigin,
    },
    /// A STATUS that did not end the call: the answer to a STATUS ENQUIRY, or the peer
    /// reporting an error (`cause` says which).
    Status {
        /// The call (`None` for the global call reference).
        call: Option<CallId>,
        /// The STATUS's cause.
        cause: Cause,
        /// The peer's call state code.
        peer_state: u8,
    },
    /// The peer restarted `what` and this side's calls on it were released; with
    /// `RestartResponse::Owner`, confirm with [`restart_response`](crate::Uni::restart_response).
    RestartIndication {
        /// What the peer restarted.
        what: Restart,
    },
    /// The peer restarted `what`, this side's calls on it were released and RESTART
    /// ACKNOWLEDGE was sent.
    Restarted {
        /// What the peer restarted.
        what: Restart,
    },
    /// This side's RESTART was acknowledged.
    RestartDone {
        /// What was restarted.
        what: Restart,
    },
    /// A restart did not complete: T316 ran out (no RESTART ACKNOWLEDGE) or T317 did (the
    /// owner never confirmed the peer's).
    RestartFailed {
        /// What was being restarted.
        what: Restart,
        /// T316 or T317.
        timer: Timer,
    },
    /// The SAAL is established.
    LinkUp,
    /// The SAAL was lost; active calls wait under T309, others were released.
    LinkDown,
}

/// Why a command was refused. Nothing was sent and nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandError {
    /// No such call (it may have just been released).
    NoSuchCall,
    /// The command does not apply in the call's state.
    WrongState(CallState),
    /// The network side must name the connection here.
    MissingConnId,
    /// The network side named the connection already (CALL PROCEEDING) and may not
    /// change it.
    ConnIdNamed,
    /// All 8 388 606 call references are in use.
    NoCallRef,
    /// A restart of this side's is still waiting for its acknowledgement.
    RestartBusy,
    /// No RESTART from the peer is waiting for a response.
    NoRestart,
    /// The QoS cannot be signalled (`max` rates not resolved, values beyond the IEs'
    /// fields, …; see `natm_wire::q2931::qos`).
    Qos(QosMapError),
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::NoSuchCall => f.write_str("no such call"),
            CommandError::WrongState(s) => write!(f, "not possible in call state {}", s.code()),
            CommandError::MissingConnId => f.write_str("the network side must name the VPCI/VCI"),
            CommandError::ConnIdNamed => f.write_str("the connection was named already"),
            CommandError::NoCallRef => f.write_str("no call reference free"),
            CommandError::RestartBusy => f.write_str("a restart is already in progress"),
            CommandError::NoRestart => f.write_str("no restart to respond to"),
            CommandError::Qos(e) => write!(f, "the QoS cannot be signalled: {e}"),
        }
    }
}

impl core::error::Error for CommandError {}

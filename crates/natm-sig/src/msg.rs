//! Between call control and the codec (`natm_wire::q2931`): a received message reduced to
//! what the state machines look at ([`Inbound`]), and the messages they send ([`Out`],
//! [`setup`]).

use alloc::vec::Vec;

use crate::types::{ConnId, Restart, SetupParams};
use crate::{Cause, CauseValue};

/// Message types call control tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mt {
    Setup,
    CallProceeding,
    Alerting,
    Connect,
    ConnectAck,
    Release,
    ReleaseComplete,
    Status,
    StatusEnquiry,
    Restart,
    RestartAck,
    Notify,
    /// Any other type: unknown, or one natm does not implement (point-to-multipoint, …).
    Other(u8),
}

impl Mt {
    pub(crate) const fn code(self) -> u8 {
        match self {
            Mt::Alerting => 0x01,
            Mt::CallProceeding => 0x02,
            Mt::Setup => 0x05,
            Mt::Connect => 0x07,
            Mt::ConnectAck => 0x0F,
            Mt::Restart => 0x46,
            Mt::Release => 0x4D,
            Mt::RestartAck => 0x4E,
            Mt::ReleaseComplete => 0x5A,
            Mt::Notify => 0x6E,
            Mt::StatusEnquiry => 0x75,
            Mt::Status => 0x7D,
            Mt::Other(t) => t,
        }
    }

    pub(crate) const fn from_code(t: u8) -> Mt {
        match t {
            0x01 => Mt::Alerting,
            0x02 => Mt::CallProceeding,
            0x05 => Mt::Setup,
            0x07 => Mt::Connect,
            0x0F => Mt::ConnectAck,
            0x46 => Mt::Restart,
            0x4D => Mt::Release,
            0x4E => Mt::RestartAck,
            0x5A => Mt::ReleaseComplete,
            0x6E => Mt::Notify,
            0x75 => Mt::StatusEnquiry,
            0x7D => Mt::Status,
            t => Mt::Other(t),
        }
    }
}

/// The message's explicit action indicator (the message type's second octet, §4.4.4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MsgAction {
    /// No explicit instruction (flag 0): the standard's default applies.
    None,
    /// Clear call.
    Clear,
    /// Discard and ignore.
    Ignore,
    /// Discard and report status.
    Report,
}

/// An IE's action indicator, when its flag asks to follow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IeAction {
    /// No explicit instruction.
    None,
    Clear,
    DiscardProceed,
    DiscardReport,
    DiscardMsg,
    DiscardMsgReport,
}

/// What was wrong with an IE (§5.6.7, §5.6.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProblemKind {
    /// A mandatory IE is missing.
    MandatoryMissing,
    /// A mandatory IE's contents are wrong.
    MandatoryContent,
    /// An IE this entity does not know (or not allowed in this message).
    Unrecognised,
    /// A non-mandatory IE's contents are wrong.
    Content,
}

/// One IE problem of a received message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Problem {
    pub ie: u8,
    pub kind: ProblemKind,
    pub action: IeAction,
}

impl Problem {
    /// The cause that reports it.
    pub(crate) fn cause_value(&self) -> CauseValue {
        match self.kind {
            ProblemKind::MandatoryMissing => CauseValue::MandatoryIeMissing,
            ProblemKind::MandatoryContent | ProblemKind::Content => CauseValue::InvalidIeContents,
            ProblemKind::Unrecognised => CauseValue::IeNonExistent,
        }
    }
}

/// The connection identifier IE's identifier.
pub(crate) const CONNECTION_ID: u8 = 0x5A;

/// Makes the connection identifier mandatory in `m` (the network's SETUP and first
/// answer): missing, or present with bad contents, it is a mandatory IE's problem.
pub(crate) fn require_conn(m: &mut Inbound) {
    if m.conn.is_some() {
        return;
    }
    match m.problems.iter_mut().find(|p| p.ie == CONNECTION_ID) {
        Some(p) => {
            p.kind = ProblemKind::MandatoryContent;
            p.action = IeAction::None;
        }
        None => m.problems.push(Problem {
            ie: CONNECTION_ID,
            kind: ProblemKind::MandatoryMissing,
            action: IeAction::None,
        }),
    }
}

/// A received message as call control sees it.
#[derive(Clone, Debug)]
pub(crate) struct Inbound {
    pub cref: u32,
    pub flag: bool,
    pub mt: Mt,
    pub action: MsgAction,
    pub cause: Option<Cause>,
    pub conn: Option<ConnId>,
    pub call_state: Option<u8>,
    pub restart: Option<Restart>,
    pub setup: Option<alloc::boxed::Box<crate::IncomingSetup>>,
    pub problems: Vec<Problem>,
}

/// A message to send, other than SETUP.
#[derive(Clone, Debug)]
pub(crate) struct Out {
    pub mt: Mt,
    pub cref: u32,
    pub flag: bool,
    pub cause: Option<Cause>,
    pub conn: Option<ConnId>,
    pub call_state: Option<u8>,
    pub restart: Option<Restart>,
}

impl Out {
    pub(crate) fn new(mt: Mt, cref: u32, flag: bool) -> Out {
        Out {
            mt,
            cref,
            flag,
            cause: None,
            conn: None,
            call_state: None,
            restart: None,
        }
    }
    pub(crate) fn cause(mut self, c: Cause) -> Out {
        self.cause = Some(c);
        self
    }
    pub(crate) fn conn(mut self, c: ConnId) -> Out {
        self.conn = Some(c);
        self
    }
    pub(crate) fn call_state(mut self, s: u8) -> Out {
        self.call_state = Some(s);
        self
    }
    pub(crate) fn restart(mut self, r: Restart) -> Out {
        self.restart = Some(r);
        self
    }
}

// -------------------------------------------------------------------------------------
// The codec glue.

use natm_wire::q2931::{
    CallRef, CallState as IeCallState, ConnectionId, Header, IeAction as WireIeAction, IeProblem,
    Message, MsgAction as WireMsgAction, MsgType, RestartClass, RestartIndicator,
};

use natm_wire::q2931::qos::{QosIes, QosMapError, UniVersion};

use crate::IncomingSetup;
use alloc::boxed::Box;

fn msg_type(mt: Mt) -> MsgType {
    MsgType::from_code(mt.code())
}

fn restart_ies(r: Restart) -> (RestartIndicator, Option<ConnectionId>) {
    match r {
        Restart::Vc { vpci, vci } => (
            RestartIndicator {
                class: RestartClass::IndicatedVc,
            },
            Some(ConnectionId::exclusive(vpci, vci)),
        ),
        Restart::Vp { vpci } => (
            RestartIndicator {
                class: RestartClass::AllVcsInVpc,
            },
            Some(ConnectionId::exclusive(vpci, 0)),
        ),
        Restart::All => (
            RestartIndicator {
                class: RestartClass::AllVcs,
            },
            None,
        ),
    }
}

impl Out {
    /// The message's bytes.
    pub(crate) fn emit(&self) -> Vec<u8> {
        let mut m = Message::new(Header::new(
            msg_type(self.mt),
            CallRef::new(self.cref, self.flag),
        ));
        if let Some(c) = &self.cause {
            m.cause.push(c.clone());
        }
        if let Some(k) = self.conn {
            m.connection_id = Some(ConnectionId::exclusive(k.vpci, k.vci));
        }
        if let Some(s) = self.call_state {
            m.call_state = Some(IeCallState::from_code(s));
        }
        if let Some(r) = self.restart {
            let (ri, conn) = restart_ies(r);
            m.restart = Some(ri);
            if m.connection_id.is_none() {
                m.connection_id = conn;
            }
        }
        m.to_vec()
    }
}

/// SETUP with call reference `cref` from its allocator (flag 0), for a peer of `version`.
pub(crate) fn setup_for(
    cref: u32,
    p: &SetupParams,
    version: UniVersion,
) -> Result<Vec<u8>, QosMapError> {
    QosIes::from_qos_for(&p.qos, version)?;
    Ok(setup_message(cref, false, p)?.to_vec())
}

/// SETUP for a UNI 4.0 peer.
#[cfg(test)]
pub(crate) fn setup(cref: u32, p: &SetupParams) -> Result<Vec<u8>, QosMapError> {
    setup_for(cref, p, UniVersion::Uni40)
}

/// SETUP with any flag (tests send the wrong one too).
#[cfg(test)]
pub(crate) fn setup_with_flag(cref: u32, flag: bool, p: &SetupParams) -> Vec<u8> {
    setup_message(cref, flag, p)
        .expect("test QoS maps")
        .to_vec()
}

/// The SETUP message: the QoS through `natm_wire::q2931::qos`, then the addresses and
/// layer information.
pub(crate) fn setup_message(
    cref: u32,
    flag: bool,
    p: &SetupParams,
) -> Result<Message, QosMapError> {
    let ies = QosIes::from_qos(&p.qos)?;
    let mut m = Message::new(Header::new(MsgType::Setup, CallRef::new(cref, flag)));
    ies.apply(&mut m);
    m.called = Some(p.called.clone());
    m.called_sub = p.called_sub.clone();
    m.calling = p.calling.clone();
    m.calling_sub = p.calling_sub.clone();
    m.blli = p.blli.iter().cloned().collect();
    m.bhli = p.bhli.clone();
    if let Some(k) = p.conn {
        m.connection_id = Some(ConnectionId::exclusive(k.vpci, k.vci));
    }
    Ok(m)
}

fn conn_id(c: &ConnectionId) -> ConnId {
    ConnId {
        vpci: c.vpci,
        vci: c.vci,
    }
}

fn problem(p: &IeProblem) -> Option<Problem> {
    let ie = p.id().code();
    Some(match *p {
        IeProblem::Unrecognised { flags, .. } => Problem {
            ie,
            kind: ProblemKind::Unrecognised,
            action: if flags.flag {
                match flags.action {
                    WireIeAction::ClearCall => IeAction::Clear,
                    WireIeAction::DiscardProceed => IeAction::DiscardProceed,
                    WireIeAction::DiscardReport => IeAction::DiscardReport,
                    WireIeAction::DiscardMessage => IeAction::DiscardMsg,
                    WireIeAction::DiscardMessageReport => IeAction::DiscardMsgReport,
                    // Reserved values: as no explicit instruction.
                    WireIeAction::Unknown(_) => IeAction::None,
                }
            } else {
                IeAction::None
            },
        },
        IeProblem::ContentError { mandatory, .. } => Problem {
            ie,
            kind: if mandatory {
                ProblemKind::MandatoryContent
            } else {
                ProblemKind::Content
            },
            action: IeAction::None,
        },
        IeProblem::MandatoryMissing { .. } => Problem {
            ie,
            kind: ProblemKind::MandatoryMissing,
            action: IeAction::None,
        },
        // §5.6.8.4: repeats beyond what is allowed are ignored.
        IeProblem::Repeated { .. } => return None,
    })
}

/// Reads a received message; `None` for what §5.6.1–5.6.2 drops (too short, wrong
/// protocol discriminator, call reference length, lengths that do not add up).
pub(crate) fn parse(b: &[u8]) -> Option<Inbound> {
    let parsed = Message::parse(b).ok()?;
    let m = parsed.message;
    let mut problems: Vec<Problem> = parsed.problems.iter().filter_map(problem).collect();
    let h = m.header;
    let mt = Mt::from_code(h.msg_type.code());
    let action = if h.instruction.flag {
        match h.instruction.action {
            WireMsgAction::ClearCall => MsgAction::Clear,
            WireMsgAction::DiscardIgnore => MsgAction::Ignore,
            _ => MsgAction::Report,
        }
    } else {
        MsgAction::None
    };
    let conn = m.connection_id.as_ref().map(conn_id);
    let restart = match m.restart.map(|r| r.class) {
        None => None,
        Some(RestartClass::AllVcs) => Some(Restart::All),
        Some(RestartClass::IndicatedVc) => match conn {
            Some(k) => Some(Restart::Vc {
                vpci: k.vpci,
                vci: k.vci,
            }),
            None => {
                // The connection identifier is mandatory with class 0 (§5.5.2).
                problems.push(Problem {
                    ie: CONNECTION_ID,
                    kind: ProblemKind::MandatoryMissing,
                    action: IeAction::None,
                });
                None
            }
        },
        Some(RestartClass::AllVcsInVpc) => match conn {
            Some(k) => Some(Restart::Vp { vpci: k.vpci }),
            None => {
                problems.push(Problem {
                    ie: CONNECTION_ID,
                    kind: ProblemKind::MandatoryMissing,
                    action: IeAction::None,
                });
                None
            }
        },
        Some(RestartClass::Unknown(_)) => {
            problems.push(Problem {
                ie: 0x79,
                kind: ProblemKind::MandatoryContent,
                action: IeAction::None,
            });
            None
        }
    };
    let setup = if mt == Mt::Setup {
        incoming_setup(&m)
    } else {
        None
    };
    Some(Inbound {
        cref: h.call_ref.value,
        flag: h.call_ref.flag,
        mt,
        action,
        cause: m.cause.first().cloned(),
        conn,
        call_state: m.call_state.map(|s| s.code()),
        restart,
        setup,
        problems,
    })
}

fn incoming_setup(m: &Message) -> Option<Box<IncomingSetup>> {
    let called = m.called.clone()?;
    let qos = QosIes::from_message(m).and_then(|ies| ies.to_qos());
    let qos_mapped = qos.is_ok();
    let params = SetupParams {
        called,
        called_sub: m.called_sub.clone(),
        calling: m.calling.clone(),
        calling_sub: m.calling_sub.clone(),
        qos: qos.unwrap_or_default(),
        blli: m.blli.first().cloned(),
        bhli: m.bhli.clone(),
        conn: m.connection_id.as_ref().map(conn_id),
    };
    Some(Box::new(IncomingSetup {
        params,
        qos_mapped,
        message: m.clone(),
    }))
}

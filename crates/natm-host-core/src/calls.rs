//! The UNI user side of a host: a `natm_sig::Signalling` on VC 0.5 of the host's link, and
//! the calls it sets up, each with its bandwidth booked on the link and, once the driver
//! opens it, its VC on a channel. See the crate documentation's "Switched VCs".

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::fmt;

use natm_adapter::{Reassembler, Reassembly};
use natm_core::addr::Aesa;
use natm_core::{Duration, Instant, Qos, VcId, Vci};
use natm_sig::{
    Blli, CallEvent, Cause, CauseValue, ConnId, Location, PartyNumber, ReleaseOrigin, Role,
    SetupParams, Signalling,
};
use natm_traffic::cac;
use natm_wire::aal5::Segmenter;
use natm_wire::q2931::Number;
use natm_wire::q2931::qos::{UniVersion, resolve_max, swap_directions};

use crate::{ChannelId, ChannelMemory, Event, Host, NOMINAL_RATE, OpenError, VcHandle};

/// VPI 0 / VCI 5: the signalling VC.
pub const SIGNALLING_VC: VcId = match VcId::uni(0, Vci::SIGNALLING.get() as u32) {
    Ok(vc) => vc,
    Err(_) => panic!("0.5 is a UNI VC"),
};

/// The largest signalling SDU taken from the link.
const MAX_SIGNALLING_SDU: usize = 8192;

/// A host's signalling settings: with them in [`HostConfig::signalling`](crate::HostConfig),
/// the host runs the UNI user side on VC 0.5 whenever its link is up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignallingConfig {
    /// The host's address: the calling party of its calls; incoming SETUPs whose called
    /// party is another address (any selector of it is this host's) are refused with cause 1.
    pub address: Aesa,
    /// Call control's settings (its role is forced to `User`).
    pub sig: natm_sig::Config,
    /// SSCOP's settings.
    pub saal: natm_sscop::Config,
    /// How long an incoming call waits for [`Host::accept`] or [`Host::reject`] before the
    /// host releases it with cause 18 (no user responding): 4 s.
    pub answer_timeout: Duration,
}

impl SignallingConfig {
    /// The defaults for a host at `address`: ngatm's timers, SSCF-UNI's SSCOP (with
    /// [`natm_sig::saal::sscop_config`]'s window), 4 s to answer.
    pub fn new(address: Aesa) -> SignallingConfig {
        SignallingConfig {
            address,
            sig: natm_sig::Config::new(Role::User),
            saal: natm_sig::saal::sscop_config(),
            answer_timeout: Duration::from_secs(4),
        }
    }
}

/// A call of this host, unique for the host's life (call references are reused; these are
/// not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallId(pub u64);

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "call {}", self.0)
    }
}

/// An outgoing call's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct CallParams {
    /// Whom to call.
    pub called: Aesa,
    /// The VC's QoS as this host sees it (`tx` is what it sends). `max` rates are resolved
    /// to the link's rate.
    pub qos: Qos,
    /// Broadband low layer information, if any.
    pub blli: Option<Blli>,
}

impl CallParams {
    /// A call to `called` with `qos`.
    pub fn new(called: Aesa, qos: Qos) -> CallParams {
        CallParams {
            called,
            qos,
            blli: None,
        }
    }
}

/// Which side set a call up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// This host called.
    Outgoing,
    /// The network offered it.
    Incoming,
}

/// Where a call is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallPhase {
    /// SETUP sent, not connected yet.
    Calling,
    /// Offered ([`Event::IncomingCall`]), not answered yet.
    Offered,
    /// Accepted (CONNECT sent), not acknowledged yet.
    Accepted,
    /// Active.
    Connected,
    /// Released by this host, waiting for the network's answer.
    Releasing,
}

/// A call as the host records it.
#[derive(Clone, Debug, PartialEq)]
pub struct CallInfo {
    /// Who set it up.
    pub direction: Direction,
    /// Where it is.
    pub phase: CallPhase,
    /// This host's end: its address (outgoing) or the called party (incoming).
    pub local: Aesa,
    /// The other end: the called party (outgoing) or the calling party if the SETUP named
    /// one (incoming).
    pub remote: Option<Aesa>,
    /// The QoS as this host sees it (`tx` is what it sends).
    pub qos: Qos,
    /// The VC the network named, once it did.
    pub vc: Option<VcId>,
    /// The VC's handle while the driver has it open ([`Host::open_call_vc`]).
    pub handle: Option<VcHandle>,
    /// When it was asked for or offered.
    pub since: Instant,
    /// The call reference and side on the link.
    pub sig: natm_sig::CallId,
    /// The bandwidth booked while no VC holds it.
    booking: Option<cac::Handle>,
    /// Until when an offered call waits for an answer.
    answer_by: Option<Instant>,
}

/// Why a call command was refused.
#[derive(Clone, Debug, PartialEq)]
pub enum CallError {
    /// The host has no signalling (no address configured).
    NoSignalling,
    /// The link is down: there is no signalling until it comes back.
    LinkDown,
    /// Refused here before anything was sent: the link's admission control (cause 37, or
    /// 51 to a UNI 3.1 network, with the explanation in the diagnostics; 47 for the UBR
    /// limit, 73 for a contract that is not well formed).
    Refused {
        /// The cause, as a network would have given it.
        cause: Cause,
        /// The full explanation.
        refusal: cac::Refusal,
    },
    /// Call control refused the command (e.g. a QoS that cannot be signalled).
    Command(natm_sig::CommandError),
    /// No such call (it may have just been released).
    NoSuchCall(CallId),
    /// The command does not apply in the call's phase.
    WrongPhase(CallId, CallPhase),
    /// The call's VC could not be opened.
    Open(OpenError),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::NoSignalling => f.write_str("the host has no address: it does not signal"),
            CallError::LinkDown => f.write_str("link down: no signalling"),
            CallError::Refused { cause, refusal } => write!(f, "cause {cause}: {refusal}"),
            CallError::Command(e) => write!(f, "{e}"),
            CallError::NoSuchCall(c) => write!(f, "no {c}"),
            CallError::WrongPhase(c, p) => write!(f, "{c} is {p:?}: not possible now"),
            CallError::Open(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for CallError {}

/// The signalling entity of the host and what goes with it.
pub(crate) struct Sig {
    pub(crate) config: SignallingConfig,
    /// `None` while the link is down, or up and not started yet (`pending`).
    pub(crate) entity: Option<Signalling>,
    /// The link came up: start a fresh entity at the next call that has the time.
    pub(crate) pending: bool,
    pub(crate) up: bool,
    pub(crate) rx: Reassembler,
    pub(crate) calls: BTreeMap<CallId, CallInfo>,
    pub(crate) by_sig: BTreeMap<natm_sig::CallId, CallId>,
    pub(crate) next_call: u64,
}

impl Sig {
    pub(crate) fn new(mut config: SignallingConfig) -> Sig {
        config.sig.role = Role::User;
        Sig {
            config,
            entity: None,
            pending: false,
            up: false,
            rx: Reassembler::new(SIGNALLING_VC, MAX_SIGNALLING_SDU).expect("VC 0.5 is a UNI VC"),
            calls: BTreeMap::new(),
            by_sig: BTreeMap::new(),
            next_call: 1,
        }
    }
}

fn aesa_of(p: &PartyNumber) -> Option<Aesa> {
    match &p.number {
        Number::Aesa(a) => Some(*a),
        _ => None,
    }
}

/// A cause from this side (location U) with `diag` as its diagnostics (cut to 28 bytes).
pub fn user_cause(value: CauseValue, diag: &[u8]) -> Cause {
    let mut c = Cause::new(Location::User, value);
    c.diagnostics = diag[..diag.len().min(28)].to_vec();
    c
}

/// The cause of an admission refusal, with the short explanation natm puts in diagnostics.
fn refusal_cause(r: &cac::Refusal, version: UniVersion) -> Cause {
    let (value, diag) = match r {
        cac::Refusal::Bandwidth { link, free, .. } => {
            let v = if version == UniVersion::Uni31 {
                CauseValue::UserCellRateNotAvailable31
            } else {
                CauseValue::UserCellRateNotAvailable
            };
            (v, alloc::format!("{link}: {free} c/s free"))
        }
        cac::Refusal::UbrLimit { link, max } => (
            CauseValue::ResourceUnavailable,
            alloc::format!("{link}: {max} UBR"),
        ),
        cac::Refusal::Contract { link, .. } | cac::Refusal::Unsupported { link, .. } => (
            CauseValue::UnsupportedTrafficParams,
            alloc::format!("{link}: contract"),
        ),
    };
    user_cause(value, diag.as_bytes())
}

fn vc_of(conn: ConnId) -> Option<VcId> {
    VcId::uni(u32::from(conn.vpci), u32::from(conn.vci)).ok()
}

impl<M: ChannelMemory> Host<M> {
    // ------------------------------------------------------------------ signalling

    /// Whether the host signals (it has an address).
    pub fn signals(&self) -> bool {
        self.sig.is_some()
    }

    /// The host's address, if it signals.
    pub fn address(&self) -> Option<Aesa> {
        self.sig.as_ref().map(|s| s.config.address)
    }

    /// Whether the SAAL on 0.5 is established.
    pub fn is_signalling_up(&self) -> bool {
        self.sig.as_ref().is_some_and(|s| s.up)
    }

    /// The signalling entity, for its queries, while the link is up.
    pub fn signalling(&self) -> Option<&Signalling> {
        self.sig.as_ref().and_then(|s| s.entity.as_ref())
    }

    /// Every call, in order of their ids.
    pub fn calls(&self) -> impl Iterator<Item = (CallId, &CallInfo)> {
        self.sig
            .iter()
            .flat_map(|s| s.calls.iter().map(|(id, c)| (*id, c)))
    }

    /// One call.
    pub fn call_info(&self, call: CallId) -> Option<&CallInfo> {
        self.sig.as_ref()?.calls.get(&call)
    }

    /// Asks for a call. The QoS's `tx` is admitted on the link first: a refusal is returned
    /// with its cause and nothing is sent. Otherwise SETUP goes out and the call ends in
    /// [`Event::CallConnected`] or [`Event::CallReleased`].
    pub fn call(&mut self, now: Instant, params: &CallParams) -> Result<CallId, CallError> {
        self.start_signalling(now);
        let line = self.config.link_rate.unwrap_or(NOMINAL_RATE);
        let sig = self.sig.as_mut().ok_or(CallError::NoSignalling)?;
        let entity = sig.entity.as_mut().ok_or(CallError::LinkDown)?;
        let qos = resolve_max(&params.qos, line);
        let booking = self
            .cac
            .admit(&qos.tx)
            .map_err(|refusal| CallError::Refused {
                cause: refusal_cause(&refusal, sig.config.sig.version),
                refusal,
            })?;
        let setup = SetupParams {
            called: PartyNumber::aesa(params.called),
            called_sub: None,
            calling: Some(PartyNumber::aesa(sig.config.address)),
            calling_sub: None,
            qos,
            blli: params.blli.clone(),
            bhli: None,
            conn: None,
        };
        let cref = match entity.setup(now, &setup) {
            Ok(c) => c,
            Err(e) => {
                let _ = self.cac.release(booking);
                return Err(CallError::Command(e));
            }
        };
        let id = CallId(sig.next_call);
        sig.next_call += 1;
        sig.by_sig.insert(cref, id);
        sig.calls.insert(
            id,
            CallInfo {
                direction: Direction::Outgoing,
                phase: CallPhase::Calling,
                local: sig.config.address,
                remote: Some(params.called),
                qos,
                vc: None,
                handle: None,
                since: now,
                sig: cref,
                booking: Some(booking),
                answer_by: None,
            },
        );
        self.pump_signalling(now);
        Ok(id)
    }

    /// Accepts an offered call ([`Event::IncomingCall`]): its `tx` is admitted on the link
    /// (refused: the call is released with the refusal's cause and the refusal returned),
    /// then CONNECT goes out. Its VC may be opened ([`open_call_vc`](Self::open_call_vc))
    /// from now on; [`Event::CallConnected`] follows.
    pub fn accept(&mut self, now: Instant, call: CallId) -> Result<(), CallError> {
        let sig = self.sig.as_mut().ok_or(CallError::NoSignalling)?;
        let entity = sig.entity.as_mut().ok_or(CallError::LinkDown)?;
        let c = sig
            .calls
            .get_mut(&call)
            .ok_or(CallError::NoSuchCall(call))?;
        if c.phase != CallPhase::Offered {
            return Err(CallError::WrongPhase(call, c.phase));
        }
        let booking = match self.cac.admit(&c.qos.tx) {
            Ok(b) => b,
            Err(refusal) => {
                let cause = refusal_cause(&refusal, sig.config.sig.version);
                let _ = entity.release(now, c.sig, cause.clone());
                c.phase = CallPhase::Releasing;
                c.answer_by = None;
                self.pump_signalling(now);
                return Err(CallError::Refused { cause, refusal });
            }
        };
        if let Err(e) = entity.connect(now, c.sig, None) {
            let _ = self.cac.release(booking);
            return Err(CallError::Command(e));
        }
        c.booking = Some(booking);
        c.phase = CallPhase::Accepted;
        c.answer_by = None;
        self.pump_signalling(now);
        Ok(())
    }

    /// Refuses an offered call with `cause` (RELEASE COMPLETE).
    pub fn reject(&mut self, now: Instant, call: CallId, cause: Cause) -> Result<(), CallError> {
        let phase = self
            .call_info(call)
            .map(|c| c.phase)
            .ok_or(CallError::NoSuchCall(call))?;
        if phase != CallPhase::Offered {
            return Err(CallError::WrongPhase(call, phase));
        }
        self.release(now, call, cause)
    }

    /// Releases a call in any phase with `cause`: its VC (if open) is closed and its
    /// bandwidth returned now; [`Event::CallReleased`] follows when the network answers.
    pub fn release(&mut self, now: Instant, call: CallId, cause: Cause) -> Result<(), CallError> {
        let sig = self.sig.as_mut().ok_or(CallError::NoSignalling)?;
        let c = sig
            .calls
            .get_mut(&call)
            .ok_or(CallError::NoSuchCall(call))?;
        if c.phase == CallPhase::Releasing {
            return Ok(());
        }
        c.phase = CallPhase::Releasing;
        c.answer_by = None;
        let cref = c.sig;
        if let Some(e) = sig.entity.as_mut() {
            let _ = e.release(now, cref, cause);
        }
        self.free_call_resources(call);
        self.pump_signalling(now);
        Ok(())
    }

    /// Opens a call's VC (the one the network named) on channel `ch` with the call's QoS and
    /// the bandwidth booked for it: from an outgoing call's [`Event::CallConnected`], or an
    /// incoming call's [`accept`](Self::accept), on. The VC is closed by the host when the
    /// call ends; closing it first ([`close_vc`](Self::close_vc)) returns its bandwidth and
    /// leaves the call to be released.
    pub fn open_call_vc(&mut self, call: CallId, ch: ChannelId) -> Result<VcHandle, CallError> {
        let sig = self.sig.as_mut().ok_or(CallError::NoSignalling)?;
        let c = sig.calls.get(&call).ok_or(CallError::NoSuchCall(call))?;
        let (Some(vc), Some(booking), None) = (c.vc, c.booking, c.handle) else {
            return Err(CallError::WrongPhase(call, c.phase));
        };
        if !matches!(c.phase, CallPhase::Accepted | CallPhase::Connected) {
            return Err(CallError::WrongPhase(call, c.phase));
        }
        let qos = c.qos;
        let h = self
            .open_vc_booked(ch, vc, &qos, crate::Scale::CONTRACT, Some((booking, call)))
            .map_err(CallError::Open)?;
        let c = self
            .sig
            .as_mut()
            .and_then(|s| s.calls.get_mut(&call))
            .expect("the call was just found");
        c.booking = None;
        c.handle = Some(h);
        Ok(h)
    }

    /// A call's VC was closed by the driver: its bandwidth went with it.
    pub(crate) fn call_vc_closed(&mut self, call: CallId) {
        if let Some(c) = self.sig.as_mut().and_then(|s| s.calls.get_mut(&call)) {
            c.handle = None;
        }
    }

    /// Closes a call's VC or returns its booking: exactly one of them holds its bandwidth.
    fn free_call_resources(&mut self, call: CallId) {
        let Some(c) = self.sig.as_mut().and_then(|s| s.calls.get_mut(&call)) else {
            return;
        };
        let booking = c.booking.take();
        let handle = c.handle.take();
        if let Some(b) = booking {
            let _ = self.cac.release(b);
        }
        if let Some(h) = handle {
            self.close_vc(h);
        }
    }

    /// Ends a call: resources freed, the event queued.
    fn end_call(&mut self, call: CallId, cause: Cause, by: ReleaseOrigin) {
        self.free_call_resources(call);
        if let Some(sig) = self.sig.as_mut()
            && let Some(c) = sig.calls.remove(&call)
        {
            sig.by_sig.remove(&c.sig);
            self.events
                .push_back(Event::CallReleased { call, cause, by });
        }
    }

    /// The link came up: the signalling starts fresh at the next call with the time.
    pub(crate) fn signalling_link_up(&mut self) {
        if let Some(sig) = self.sig.as_mut() {
            sig.entity = None;
            sig.pending = true;
            sig.rx = Reassembler::new(SIGNALLING_VC, MAX_SIGNALLING_SDU).expect("a UNI VC");
        }
    }

    /// The link went down: every call is cleared (cause 27, here) and the entity goes.
    pub(crate) fn signalling_link_down(&mut self) {
        let Some(sig) = self.sig.as_mut() else {
            return;
        };
        sig.entity = None;
        sig.pending = false;
        let was_up = core::mem::replace(&mut sig.up, false);
        let calls: Vec<CallId> = sig.calls.keys().copied().collect();
        for call in calls {
            let cause = user_cause(CauseValue::DestinationOutOfOrder, b"link down");
            self.end_call(call, cause, ReleaseOrigin::Local);
        }
        if was_up {
            self.events.push_back(Event::SignallingDown);
        }
    }

    /// Starts the entity if the link came up since.
    pub(crate) fn start_signalling(&mut self, now: Instant) {
        if let Some(sig) = self.sig.as_mut()
            && sig.pending
            && self.link_up
        {
            sig.pending = false;
            sig.entity = Some(Signalling::new(
                now,
                sig.config.sig,
                sig.config.saal.clone(),
            ));
            self.pump_signalling(now);
        }
    }

    /// A cell of VC 0.5 from the link.
    pub(crate) fn signalling_cell(&mut self, now: Instant, cell: &crate::CellBytes) {
        self.start_signalling(now);
        let Some(sig) = self.sig.as_mut() else {
            self.counters.rx_unknown_vc += 1;
            return;
        };
        let Some(entity) = sig.entity.as_mut() else {
            return;
        };
        self.counters.rx_signalling += 1;
        if let Reassembly::Complete(_) = sig.rx.push_cell(cell) {
            entity.handle_pdu(now, sig.rx.sdu());
            self.pump_signalling(now);
        }
    }

    /// Signalling's deadline and offered calls' answer deadlines.
    pub(crate) fn signalling_timeout(&self) -> Option<Instant> {
        let sig = self.sig.as_ref()?;
        if sig.pending {
            return Some(Instant::ZERO);
        }
        let answers = sig.calls.values().filter_map(|c| c.answer_by);
        sig.entity
            .as_ref()
            .and_then(Signalling::poll_timeout)
            .into_iter()
            .chain(answers)
            .min()
    }

    pub(crate) fn signalling_handle_timeout(&mut self, now: Instant) {
        self.start_signalling(now);
        let Some(sig) = self.sig.as_mut() else {
            return;
        };
        if let Some(e) = sig.entity.as_mut()
            && e.poll_timeout().is_some_and(|t| t <= now)
        {
            e.handle_timeout(now);
        }
        let late: Vec<CallId> = sig
            .calls
            .iter()
            .filter(|(_, c)| c.answer_by.is_some_and(|t| t <= now))
            .map(|(id, _)| *id)
            .collect();
        for call in late {
            let cause = user_cause(CauseValue::NoUserResponding, b"");
            let _ = self.release(now, call, cause);
        }
        self.pump_signalling(now);
    }

    /// Moves the entity's SDUs to the control queue as cells and its events to the host's.
    pub(crate) fn pump_signalling(&mut self, now: Instant) {
        loop {
            let Some(entity) = self.sig.as_mut().and_then(|s| s.entity.as_mut()) else {
                return;
            };
            if let Some(sdu) = entity.poll_transmit() {
                if let Ok(mut seg) = Segmenter::uni(SIGNALLING_VC, &sdu) {
                    let mut cell = [0u8; 53];
                    while seg.next_cell(&mut cell) {
                        self.oam_out.push_back(cell);
                    }
                }
                continue;
            }
            let Some(e) = entity.poll_event() else {
                return;
            };
            self.call_event(now, e);
        }
    }

    fn call_event(&mut self, now: Instant, e: CallEvent) {
        let Some(sig) = self.sig.as_mut() else {
            return;
        };
        match e {
            CallEvent::LinkUp => {
                sig.up = true;
                self.events.push_back(Event::SignallingUp);
            }
            CallEvent::LinkDown => {
                if core::mem::replace(&mut sig.up, false) {
                    self.events.push_back(Event::SignallingDown);
                }
            }
            CallEvent::Setup { call, setup } => self.incoming(now, call, setup),
            CallEvent::Proceeding { call, conn } => {
                if let Some(id) = sig.by_sig.get(&call).copied() {
                    self.named(now, id, conn);
                }
            }
            CallEvent::Connected { call, conn } => {
                let Some(id) = sig.by_sig.get(&call).copied() else {
                    return;
                };
                if !self.named(now, id, conn) {
                    return;
                }
                let Some(c) = self.sig.as_mut().and_then(|s| s.calls.get_mut(&id)) else {
                    return;
                };
                if !matches!(c.phase, CallPhase::Calling | CallPhase::Accepted) {
                    return;
                }
                let Some(vc) = c.vc else {
                    // Connected, and no VC named in CALL PROCEEDING or CONNECT.
                    let cause = user_cause(CauseValue::VpciVciAssignmentFailure, b"no VC named");
                    let _ = self.release(now, id, cause);
                    return;
                };
                c.phase = CallPhase::Connected;
                self.events.push_back(Event::CallConnected { call: id, vc });
            }
            CallEvent::Released { call, cause, by } => {
                if let Some(id) = sig.by_sig.get(&call).copied() {
                    self.end_call(id, cause, by);
                }
            }
            CallEvent::RestartIndication { .. } => {
                // The calls on it were released (each reported): confirm at once.
                if let Some(e) = sig.entity.as_mut() {
                    let _ = e.restart_response(now);
                }
            }
            CallEvent::Status { .. }
            | CallEvent::Restarted { .. }
            | CallEvent::RestartDone { .. }
            | CallEvent::RestartFailed { .. } => {}
        }
    }

    /// The network named a call's VC (or did not): `false` if the call was released for it.
    fn named(&mut self, now: Instant, id: CallId, conn: Option<ConnId>) -> bool {
        let Some(c) = self.sig.as_ref().and_then(|s| s.calls.get(&id)) else {
            return false;
        };
        let problem = match (c.vc, conn) {
            (Some(v), Some(n)) if vc_of(n) == Some(v) => None,
            (Some(_), Some(_)) => Some(CauseValue::VpciVciAssignmentFailure),
            (Some(_), None) => None,
            (None, None) => {
                (c.phase != CallPhase::Calling).then_some(CauseValue::VpciVciAssignmentFailure)
            }
            (None, Some(n)) => match vc_of(n) {
                Some(vc) if self.check_vc(vc).is_ok() => {
                    let c = self
                        .sig
                        .as_mut()
                        .and_then(|s| s.calls.get_mut(&id))
                        .expect("found above");
                    c.vc = Some(vc);
                    None
                }
                Some(_) => Some(CauseValue::VpciVciNotAvailable),
                None => Some(CauseValue::VpciVciUnacceptable),
            },
        };
        let Some(value) = problem else {
            return true;
        };
        let _ = self.release(now, id, user_cause(value, b""));
        false
    }

    fn incoming(
        &mut self,
        now: Instant,
        call: natm_sig::CallId,
        setup: Box<natm_sig::IncomingSetup>,
    ) {
        let Some(sig) = self.sig.as_mut() else {
            return;
        };
        let address = sig.config.address;
        let called = aesa_of(&setup.params.called);
        let ours = called.is_some_and(|a| a.0[..19] == address.0[..19]);
        let vc = setup.params.conn.and_then(vc_of);
        let refuse = if !ours {
            Some(CauseValue::UnallocatedNumber)
        } else if !setup.qos_mapped {
            Some(CauseValue::UnsupportedTrafficParams)
        } else {
            match vc {
                None => Some(CauseValue::VpciVciAssignmentFailure),
                Some(v) if self.check_vc(v).is_err() => Some(CauseValue::VpciVciNotAvailable),
                Some(_) => None,
            }
        };
        let sig = self.sig.as_mut().expect("checked above");
        if let Some(value) = refuse {
            if let Some(e) = sig.entity.as_mut() {
                let _ = e.release(now, call, user_cause(value, b""));
            }
            return;
        }
        let id = CallId(sig.next_call);
        sig.next_call += 1;
        let qos = swap_directions(&setup.params.qos);
        let calling = setup.params.calling.as_ref().and_then(aesa_of);
        let vc = vc.expect("checked above");
        sig.by_sig.insert(call, id);
        sig.calls.insert(
            id,
            CallInfo {
                direction: Direction::Incoming,
                phase: CallPhase::Offered,
                local: called.unwrap_or(address),
                remote: calling,
                qos,
                vc: Some(vc),
                handle: None,
                since: now,
                sig: call,
                booking: None,
                answer_by: now.checked_add(sig.config.answer_timeout),
            },
        );
        self.events
            .push_back(Event::IncomingCall(Box::new(IncomingCall {
                call: id,
                calling,
                called: called.unwrap_or(address),
                qos,
                vc,
                blli: setup.params.blli.clone(),
            })));
    }
}

/// An offered call, as [`Event::IncomingCall`] gives it.
#[derive(Clone, Debug, PartialEq)]
pub struct IncomingCall {
    /// The call: answer with [`Host::accept`] or [`Host::reject`].
    pub call: CallId,
    /// The caller, if the SETUP named one.
    pub calling: Option<Aesa>,
    /// The address called (this host's, perhaps with another selector).
    pub called: Aesa,
    /// The QoS as this host sees it (`tx` is what it sends).
    pub qos: Qos,
    /// The VC the network named.
    pub vc: VcId,
    /// The caller's BLLI, if any.
    pub blli: Option<Blli>,
}

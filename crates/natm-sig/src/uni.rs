//! [`Uni`]: Q.2931 call control of one interface (one signalling VC), user or network side.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

use natm_core::Instant;

use crate::config::{Config, RestartResponse, Role, Timer};
use crate::msg::{self, IeAction, Inbound, MsgAction, Mt, Out, ProblemKind};
use crate::saal::{SaalEvent, SaalRequest};
use crate::state::{CallState, RestartState};
use crate::types::{
    CallEvent, CallId, CommandError, ConnId, Origin, ReleaseOrigin, Restart, SetupParams,
};
use crate::{Cause, CauseValue, Location};

/// The largest call reference value (23 bits). ngatm keeps 0x7F_FFFF as a dummy, so
/// allocation stops one below.
const CREF_MAX: u32 = 0x7F_FFFE;

/// A running per-call or per-interface timer: when it fires and how many times its message
/// has been sent.
#[derive(Clone, Copy, Debug)]
struct Running {
    timer: Timer,
    at: Instant,
    sent: u8,
}

/// One call.
#[derive(Clone, Debug)]
struct Call {
    state: CallState,
    /// T303, T308, T310 or T313: a call runs at most one of them.
    timer: Option<Running>,
    /// T322 runs beside the others.
    t322: Option<Running>,
    /// The connection identifier, once one side has named it.
    conn: Option<ConnId>,
    /// The SETUP as sent, for T303's retransmission.
    setup: Option<Vec<u8>>,
    /// The cause of this side's RELEASE, for T308's retransmission and the final report.
    release_cause: Option<Cause>,
}

impl Call {
    fn new(state: CallState) -> Call {
        Call {
            state,
            timer: None,
            t322: None,
            conn: None,
            setup: None,
            release_cause: None,
        }
    }
}

/// Where the SAAL (SSCF-UNI over SSCOP) is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Saal {
    Released,
    Establishing,
    Established,
}

/// Counters for tests and for `natm` status output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Messages received.
    pub rx: u64,
    /// Messages sent (retransmissions included).
    pub tx: u64,
    /// Received messages dropped before call control saw them (Q.2931 §5.6.1–5.6.2:
    /// protocol discriminator, length, call reference format).
    pub rx_dropped: u64,
    /// STATUS messages sent to report an error (§5.6; not the answers to STATUS ENQUIRY).
    pub errors_reported: u64,
}

/// Q.2931 / UNI 3.1 call control of one interface, user side or network side.
///
/// One `Uni` per signalling VC. It is a pure state machine: it owns the calls of the
/// interface (each keyed by a [`CallId`]: its call reference and which side allocated it),
/// their timers, the interface's restart procedures and its view of the SAAL.
///
/// # Call contract
///
/// * Input: [`handle_saal`](Uni::handle_saal) for what the SAAL (SSCF-UNI) reports,
///   [`handle_timeout`](Uni::handle_timeout) when [`poll_timeout`](Uni::poll_timeout)'s
///   instant has come, and the commands ([`setup`](Uni::setup), [`proceed`](Uni::proceed),
///   [`connect`](Uni::connect), [`release`](Uni::release), [`restart`](Uni::restart),
///   [`status_enquiry`](Uni::status_enquiry), [`restart_response`](Uni::restart_response)).
/// * Output: after any input or command, drain [`poll_saal`](Uni::poll_saal) (requests for
///   the SAAL: establish, and each message as `Data`) and [`poll_event`](Uni::poll_event)
///   until both give `None`, then wait until `poll_timeout`.
/// * Time only moves forward; `now` earlier than a previous call is taken as that call.
///
/// A new `Uni` asks the SAAL to establish at once (both sides do; SSCOP resolves the
/// collision). Messages produced while the SAAL is not established wait for it.
///
/// What it is not: it neither encodes QoS into IEs by itself (`natm_wire::q2931::qos` does)
/// nor allocates VPI/VCI (the network side's owner passes them in), nor does it know
/// about the cells of the VCs it sets up.
#[derive(Clone, Debug)]
pub struct Uni {
    config: Config,
    calls: BTreeMap<CallId, Call>,
    next_cref: u32,
    saal: Saal,
    t309: Option<Instant>,
    /// Messages waiting for the SAAL to be established.
    held: VecDeque<Vec<u8>>,
    to_saal: VecDeque<SaalRequest>,
    events: VecDeque<CallEvent>,
    /// REST0 / REST1 for restarts this side sent.
    rest_start: RestartState,
    rest_what: Option<Restart>,
    t316: Option<Running>,
    rest_msg: Option<Vec<u8>>,
    /// REST0 / REST2 for restarts the peer sent (REST2 only with `RestartResponse::Owner`).
    rest_respond: RestartState,
    rest_respond_what: Option<Restart>,
    t317: Option<Instant>,
    last_now: Instant,
    counters: Counters,
}

impl Uni {
    /// A call control entity with no calls, asking the SAAL to establish.
    pub fn new(config: Config) -> Uni {
        let first = config.first_call_ref.clamp(1, CREF_MAX);
        let mut u = Uni {
            config,
            calls: BTreeMap::new(),
            next_cref: first,
            saal: Saal::Establishing,
            t309: None,
            held: VecDeque::new(),
            to_saal: VecDeque::new(),
            events: VecDeque::new(),
            rest_start: RestartState::Null,
            rest_what: None,
            t316: None,
            rest_msg: None,
            rest_respond: RestartState::Null,
            rest_respond_what: None,
            t317: None,
            last_now: Instant::ZERO,
            counters: Counters::default(),
        };
        u.to_saal.push_back(SaalRequest::Establish);
        u
    }

    /// Bytes one call costs here, from the sizes of the real structures: its entry (call
    /// reference and state, timers, connection, kept cause) in the call table at a B-tree's
    /// lowest load (nodes half full: twice the entry). Not counted: the SETUP kept for
    /// T303's retransmission while the call is being set up (the encoded message's bytes).
    pub fn state_bytes_per_call() -> usize {
        2 * core::mem::size_of::<(CallId, Call)>()
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// User or network side.
    pub fn role(&self) -> Role {
        self.config.role
    }

    /// Whether the SAAL is established.
    pub fn link_up(&self) -> bool {
        self.saal == Saal::Established
    }

    /// The state of `call` (`Null` for a call this entity does not have).
    pub fn call_state(&self, call: CallId) -> CallState {
        self.calls.get(&call).map_or(CallState::Null, |c| c.state)
    }

    /// The connection identifier of `call`, once known.
    pub fn conn_id(&self, call: CallId) -> Option<ConnId> {
        self.calls.get(&call).and_then(|c| c.conn)
    }

    /// The calls this entity has, with their states, in call reference order.
    pub fn calls(&self) -> impl Iterator<Item = (CallId, CallState)> + '_ {
        self.calls.iter().map(|(id, c)| (*id, c.state))
    }

    /// The number of calls, i.e. of call references in use on the interface (both those
    /// allocated here and the peer's). Every call that ends gives its reference back: with
    /// no call in progress this is 0.
    pub fn call_count(&self) -> usize {
        self.calls.len()
    }

    /// Call references this side allocated and has not given back yet.
    pub fn call_refs_allocated(&self) -> usize {
        self.calls
            .keys()
            .filter(|k| k.origin == Origin::Local)
            .count()
    }

    /// The restart states: (this side's restart, the peer's restart).
    pub fn restart_states(&self) -> (RestartState, RestartState) {
        (self.rest_start, self.rest_respond)
    }

    /// Counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The next request for the SAAL.
    pub fn poll_saal(&mut self) -> Option<SaalRequest> {
        self.to_saal.pop_front()
    }

    /// The next event for the owner.
    pub fn poll_event(&mut self) -> Option<CallEvent> {
        self.events.pop_front()
    }

    /// When [`handle_timeout`](Uni::handle_timeout) is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let calls = self
            .calls
            .values()
            .flat_map(|c| [c.timer.map(|r| r.at), c.t322.map(|r| r.at)])
            .flatten();
        let global = [self.t309, self.t316.map(|r| r.at), self.t317];
        calls.chain(global.into_iter().flatten()).min()
    }

    fn clock(&mut self, now: Instant) -> Instant {
        if now > self.last_now {
            self.last_now = now;
        }
        self.last_now
    }

    fn at(&self, now: Instant, t: Timer) -> Instant {
        now + self.config.duration(t)
    }

    /// Where this side's causes come from: the user, or the private network serving it
    /// (a switch's UNI port).
    fn location(&self) -> Location {
        match self.config.role {
            Role::User => Location::User,
            Role::Network => Location::PrivateLocal,
        }
    }

    fn cause(&self, v: CauseValue) -> Cause {
        Cause::new(self.location(), v)
    }

    /// Cause `v` with a timer's number as its diagnostic (cause 102, §4.5.15).
    fn cause_timer(&self, v: CauseValue, t: Option<Timer>) -> Cause {
        let mut c = self.cause(v);
        if let Some(t) = t {
            c.diagnostics = t.digits().to_vec();
        }
        c
    }

    /// Cause `v` (96, 99, 100) naming the IE as its diagnostic.
    fn cause_ie(&self, v: CauseValue, ie: u8) -> Cause {
        let mut c = self.cause(v);
        c.diagnostics = alloc::vec![ie];
        c
    }

    /// Cause `v` (97, 101) naming the message type as its diagnostic.
    fn cause_mt(&self, v: CauseValue, mt: Option<u8>) -> Cause {
        let mut c = self.cause(v);
        if let Some(t) = mt {
            c.diagnostics = alloc::vec![t];
        }
        c
    }

    // ---------------------------------------------------------------------------------
    // Output

    fn send(&mut self, bytes: Vec<u8>) {
        self.counters.tx += 1;
        match self.saal {
            Saal::Established => self.to_saal.push_back(SaalRequest::Data(bytes)),
            Saal::Establishing => self.held.push_back(bytes),
            Saal::Released => {
                self.held.push_back(bytes);
                self.saal = Saal::Establishing;
                self.to_saal.push_back(SaalRequest::Establish);
            }
        }
    }

    /// The flag of a message sent for `call` (atm-facts 5.1): 0 from the side that
    /// allocated the call reference.
    fn flag(call: CallId) -> bool {
        call.origin == Origin::Remote
    }

    fn out(call: CallId, mt: Mt) -> Out {
        Out::new(mt, call.cref, Self::flag(call))
    }

    /// STATUS for `call` in `state` with `cause`.
    fn send_status(&mut self, call: CallId, state: u8, cause: Cause) {
        let m = Self::out(call, Mt::Status).cause(cause).call_state(state);
        self.send(m.emit());
    }

    /// STATUS reporting an error (§5.6).
    fn report(&mut self, call: CallId, state: u8, cause: Cause) {
        self.counters.errors_reported += 1;
        self.send_status(call, state, cause);
    }

    fn event(&mut self, e: CallEvent) {
        self.events.push_back(e);
    }

    /// Ends `call`: its reference is free again and the owner hears `Released`.
    fn finish(&mut self, call: CallId, cause: Cause, by: ReleaseOrigin) {
        if self.calls.remove(&call).is_some() {
            self.event(CallEvent::Released { call, cause, by });
        }
    }

    /// Starts clearing `call` with RELEASE (Q.2931 §5.4.3/5.4.4): T308, U11/N11.
    fn start_release(&mut self, now: Instant, call: CallId, cause: Cause) {
        let at = self.at(now, Timer::T308);
        let Some(c) = self.calls.get_mut(&call) else {
            return;
        };
        c.state = CallState::ReleaseRequest;
        c.timer = Some(Running {
            timer: Timer::T308,
            at,
            sent: 1,
        });
        c.t322 = None;
        c.release_cause = Some(cause.clone());
        let m = Self::out(call, Mt::Release).cause(cause);
        self.send(m.emit());
    }

    /// Rejects `call` with RELEASE COMPLETE and forgets it (used before the call was
    /// answered, and for T303's last expiry).
    fn reject(&mut self, call: CallId, cause: Cause, by: ReleaseOrigin) {
        let m = Self::out(call, Mt::ReleaseComplete).cause(cause.clone());
        self.send(m.emit());
        self.finish(call, cause, by);
    }

    // ---------------------------------------------------------------------------------
    // Commands

    fn alloc_cref(&mut self) -> Option<u32> {
        let start = self.next_cref;
        let mut v = start;
        loop {
            let id = CallId {
                cref: v,
                origin: Origin::Local,
            };
            let next = if v >= CREF_MAX { 1 } else { v + 1 };
            if !self.calls.contains_key(&id) {
                self.next_cref = next;
                return Some(v);
            }
            v = next;
            if v == start {
                return None;
            }
        }
    }

    /// Starts a call: SETUP with `params`, T303; U1 on the user side, N6 on the network
    /// side (which must name the connection, `params.conn`).
    pub fn setup(&mut self, now: Instant, params: &SetupParams) -> Result<CallId, CommandError> {
        let now = self.clock(now);
        if self.config.role == Role::Network && params.conn.is_none() {
            return Err(CommandError::MissingConnId);
        }
        let cref = self.alloc_cref().ok_or(CommandError::NoCallRef)?;
        let bytes = msg::setup_for(cref, params, self.config.version).map_err(CommandError::Qos)?;
        let call = CallId {
            cref,
            origin: Origin::Local,
        };
        let state = match self.config.role {
            Role::User => CallState::CallInitiated,
            Role::Network => CallState::CallPresent,
        };
        let mut c = Call::new(state);
        c.conn = params.conn;
        c.setup = Some(bytes.clone());
        c.timer = Some(Running {
            timer: Timer::T303,
            at: self.at(now, Timer::T303),
            sent: 1,
        });
        self.calls.insert(call, c);
        self.send(bytes);
        Ok(call)
    }

    fn call_mut(&mut self, call: CallId) -> Result<&mut Call, CommandError> {
        self.calls.get_mut(&call).ok_or(CommandError::NoSuchCall)
    }

    /// Answers an incoming call with CALL PROCEEDING: U6 → U9, or N1 → N3. The network
    /// side must name the connection here (its first answer carries it); the user side may
    /// (when the network's SETUP left the VCI to it).
    pub fn proceed(
        &mut self,
        now: Instant,
        call: CallId,
        conn: Option<ConnId>,
    ) -> Result<(), CommandError> {
        self.clock(now);
        let role = self.config.role;
        let c = self.call_mut(call)?;
        let from = match role {
            Role::User => CallState::CallPresent,
            Role::Network => CallState::CallInitiated,
        };
        if c.state != from {
            return Err(CommandError::WrongState(c.state));
        }
        if role == Role::Network && conn.is_none() && c.conn.is_none() {
            return Err(CommandError::MissingConnId);
        }
        let first = c.conn.is_none() || role == Role::Network;
        if conn.is_some() {
            c.conn = conn;
        }
        c.state = match role {
            Role::User => CallState::IncomingCallProceeding,
            Role::Network => CallState::OutgoingCallProceeding,
        };
        let mut m = Self::out(call, Mt::CallProceeding);
        if let Some(k) = conn.or(if first { c.conn } else { None }) {
            m = m.conn(k);
        }
        self.send(m.emit());
        Ok(())
    }

    /// Accepts an incoming call with CONNECT. User side: U6/U9 → U8 with T313 (U10 on
    /// CONNECT ACKNOWLEDGE). Network side: N1/N3 → N10 at once (the network's CONNECT
    /// completes the call); in N1 the connection must be named, in N3 CALL PROCEEDING
    /// named it already (`conn` is then `None` or the same).
    pub fn connect(
        &mut self,
        now: Instant,
        call: CallId,
        conn: Option<ConnId>,
    ) -> Result<(), CommandError> {
        let now = self.clock(now);
        let role = self.config.role;
        let t313 = self.at(now, Timer::T313);
        let c = self.call_mut(call)?;
        let ok = match role {
            Role::User => matches!(
                c.state,
                CallState::CallPresent | CallState::IncomingCallProceeding
            ),
            Role::Network => matches!(
                c.state,
                CallState::CallInitiated | CallState::OutgoingCallProceeding
            ),
        };
        if !ok {
            return Err(CommandError::WrongState(c.state));
        }
        // The network's first answer names the connection; after that it stays.
        let first_answer = role == Role::Network && c.state == CallState::CallInitiated;
        if first_answer && conn.is_none() && c.conn.is_none() {
            return Err(CommandError::MissingConnId);
        }
        if role == Role::Network && !first_answer && conn.is_some() && conn != c.conn {
            return Err(CommandError::ConnIdNamed);
        }
        if conn.is_some() {
            c.conn = conn;
        }
        let mut m = Self::out(call, Mt::Connect);
        if let Some(k) = conn.or(if first_answer { c.conn } else { None }) {
            m = m.conn(k);
        }
        let conn = c.conn;
        match role {
            Role::User => {
                c.state = CallState::ConnectRequest;
                c.timer = Some(Running {
                    timer: Timer::T313,
                    at: t313,
                    sent: 1,
                });
                self.send(m.emit());
            }
            Role::Network => {
                c.state = CallState::Active;
                c.timer = None;
                self.send(m.emit());
                self.event(CallEvent::Connected { call, conn });
            }
        }
        Ok(())
    }

    /// Clears `call` with `cause`. A call not answered yet (U6/N1) is refused with
    /// RELEASE COMPLETE and ends at once (`Released` follows); any other call gets RELEASE
    /// and T308, and `Released` comes with RELEASE COMPLETE (or T308's last expiry).
    pub fn release(
        &mut self,
        now: Instant,
        call: CallId,
        cause: Cause,
    ) -> Result<(), CommandError> {
        let now = self.clock(now);
        let role = self.config.role;
        let c = self.call_mut(call)?;
        let unanswered = match role {
            Role::User => c.state == CallState::CallPresent,
            Role::Network => c.state == CallState::CallInitiated,
        };
        if c.state == CallState::ReleaseRequest {
            return Err(CommandError::WrongState(c.state));
        }
        if unanswered {
            self.reject(call, cause, ReleaseOrigin::Local);
        } else {
            self.start_release(now, call, cause);
        }
        Ok(())
    }

    /// Asks the peer for `call`'s state (STATUS ENQUIRY, T322). The answer is checked as
    /// §5.6.11 says; a compatible one is reported as [`CallEvent::Status`].
    pub fn status_enquiry(&mut self, now: Instant, call: CallId) -> Result<(), CommandError> {
        let now = self.clock(now);
        let at = self.at(now, Timer::T322);
        let c = self.call_mut(call)?;
        if c.t322.is_none() {
            c.t322 = Some(Running {
                timer: Timer::T322,
                at,
                sent: 1,
            });
            self.send(Self::out(call, Mt::StatusEnquiry).emit());
        }
        Ok(())
    }

    /// Restarts one VC or the whole interface (Q.2931 §5.5.1): the calls on it are cleared
    /// here at once (each reported `Released`, cause 41), RESTART goes out on the global
    /// call reference with T316, and [`CallEvent::RestartDone`] follows RESTART
    /// ACKNOWLEDGE.
    pub fn restart(&mut self, now: Instant, what: Restart) -> Result<(), CommandError> {
        let now = self.clock(now);
        if self.rest_start != RestartState::Null {
            return Err(CommandError::RestartBusy);
        }
        self.clear_for_restart(what, self.cause(CauseValue::TemporaryFailure));
        let bytes = Out::new(Mt::Restart, 0, false).restart(what).emit();
        self.rest_start = RestartState::Requested;
        self.rest_what = Some(what);
        self.t316 = Some(Running {
            timer: Timer::T316,
            at: self.at(now, Timer::T316),
            sent: 1,
        });
        self.rest_msg = Some(bytes.clone());
        self.send(bytes);
        Ok(())
    }

    /// Confirms, with `RestartResponse::Owner`, that the VCs of the peer's RESTART are
    /// free: RESTART ACKNOWLEDGE goes out and REST2 ends.
    pub fn restart_response(&mut self, now: Instant) -> Result<(), CommandError> {
        self.clock(now);
        if self.rest_respond != RestartState::Indicated {
            return Err(CommandError::NoRestart);
        }
        let what = self.rest_respond_what.take().unwrap_or(Restart::All);
        self.rest_respond = RestartState::Null;
        self.t317 = None;
        self.send(Out::new(Mt::RestartAck, 0, true).restart(what).emit());
        Ok(())
    }

    fn clear_for_restart(&mut self, what: Restart, cause: Cause) {
        // A restart returns VCs to idle (Q.2931 §5.5): a call that has no VC yet (a SETUP
        // not yet answered with one) is on none of them and goes on. A network sends
        // RESTART (all) whenever its SAAL comes up, and a user's first SETUP may cross it.
        let hit: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, c)| match what {
                Restart::All => c.conn.is_some(),
                Restart::Vc { vpci, vci } => c.conn.is_some_and(|k| k.vpci == vpci && k.vci == vci),
                Restart::Vp { vpci } => c.conn.is_some_and(|k| k.vpci == vpci),
            })
            .map(|(id, _)| *id)
            .collect();
        for id in hit {
            self.finish(id, cause.clone(), ReleaseOrigin::Local);
        }
    }

    // ---------------------------------------------------------------------------------
    // SAAL

    /// Takes what the SAAL reports: establishment, release, and received messages.
    pub fn handle_saal(&mut self, now: Instant, event: SaalEvent) {
        let now = self.clock(now);
        match event {
            SaalEvent::EstablishConfirm | SaalEvent::EstablishIndication => {
                if self.saal == Saal::Established {
                    // Resynchronised or recovered under us: what was in flight may be
                    // lost. The link stays up; no establishment is asked for (asking would
                    // resynchronise it again).
                    self.link_reset(now);
                } else {
                    self.link_established(now);
                }
            }
            SaalEvent::ReleaseIndication | SaalEvent::ReleaseConfirm => match self.saal {
                Saal::Established => self.link_lost(now),
                // An establishment that failed (SSCOP ran out of BGNs): tried again while
                // T309 runs, otherwise when there is something to send.
                Saal::Establishing if self.t309.is_some() => {
                    self.to_saal.push_back(SaalRequest::Establish);
                }
                Saal::Establishing => self.saal = Saal::Released,
                Saal::Released => {}
            },
            SaalEvent::Data(bytes) => self.handle_message(now, &bytes),
            // Q.2931 uses assured data only.
            SaalEvent::UnitData(_) => {}
        }
    }

    fn link_established(&mut self, now: Instant) {
        self.saal = Saal::Established;
        // An establishment asked for while the link was down is moot once it is up (the
        // peer may have re-established it, SSCOP's AA-RELEASE + AA-ESTABLISH indications);
        // sent to an established SSCF it would resynchronise (RS), and a resync confirmed
        // while established would come back here as a re-establishment, and so on.
        self.to_saal
            .retain(|r| !matches!(r, SaalRequest::Establish));
        while let Some(m) = self.held.pop_front() {
            self.to_saal.push_back(SaalRequest::Data(m));
        }
        if self.t309.take().is_some() {
            // Q.2931 §5.6.9: ask for the state of each surviving call.
            self.enquire_active(now);
        }
        self.event(CallEvent::LinkUp);
    }

    fn enquire_active(&mut self, now: Instant) {
        let active: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, c)| c.state == CallState::Active)
            .map(|(id, _)| *id)
            .collect();
        for id in active {
            let _ = self.status_enquiry(now, id);
        }
    }

    /// Clears the calls that are not active internally (§5.6.9 a); says whether any call
    /// is left.
    fn clear_unsettled(&mut self) -> bool {
        let ids: Vec<CallId> = self.calls.keys().copied().collect();
        let mut active = false;
        for id in ids {
            let c = &self.calls[&id];
            if c.state == CallState::Active {
                active = true;
                if let Some(c) = self.calls.get_mut(&id) {
                    c.t322 = None;
                }
            } else {
                let cause = c
                    .release_cause
                    .clone()
                    .unwrap_or_else(|| self.cause(CauseValue::DestinationOutOfOrder));
                self.finish(id, cause, ReleaseOrigin::Local);
            }
        }
        active
    }

    /// The SAAL is gone (Q.2931 §5.6.9): calls not active are cleared internally, active
    /// ones wait under T309 while the SAAL is re-established.
    fn link_lost(&mut self, now: Instant) {
        self.saal = Saal::Establishing;
        self.held.clear();
        self.to_saal.retain(|r| !matches!(r, SaalRequest::Data(_)));
        if self.clear_unsettled() && self.t309.is_none() {
            self.t309 = Some(self.at(now, Timer::T309));
        }
        self.to_saal.push_back(SaalRequest::Establish);
        self.event(CallEvent::LinkDown);
    }

    /// The established SAAL was resynchronised or recovered (AAL-ESTABLISH.indication or
    /// .confirm while established): messages may have been lost, so it is handled as a
    /// loss and re-establishment in one step: unsettled calls cleared, active ones asked
    /// after.
    fn link_reset(&mut self, now: Instant) {
        if self.clear_unsettled() {
            self.enquire_active(now);
        }
        self.event(CallEvent::LinkUp);
    }

    // ---------------------------------------------------------------------------------
    // Timers

    /// Runs the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.clock(now);
        if self.t309.is_some_and(|t| t <= now) {
            self.t309 = None;
            self.t309_expired();
        }
        if self.t316.is_some_and(|r| r.at <= now) {
            self.t316_expired(now);
        }
        if self.t317.is_some_and(|t| t <= now) {
            // The owner never confirmed: no RESTART ACKNOWLEDGE (Q.2931 §5.5.2).
            self.t317 = None;
            self.rest_respond = RestartState::Null;
            let what = self.rest_respond_what.take().unwrap_or(Restart::All);
            self.event(CallEvent::RestartFailed {
                what,
                timer: Timer::T317,
            });
        }
        let due: Vec<(CallId, bool)> = self
            .calls
            .iter()
            .flat_map(|(id, c)| {
                let a = c.timer.is_some_and(|r| r.at <= now).then_some((*id, false));
                let b = c.t322.is_some_and(|r| r.at <= now).then_some((*id, true));
                [a, b]
            })
            .flatten()
            .collect();
        for (id, is_t322) in due {
            if is_t322 {
                self.t322_expired(now, id);
            } else {
                self.call_timer_expired(now, id);
            }
        }
    }

    fn t309_expired(&mut self) {
        // Q.2931 §5.6.9: the SAAL did not come back; every call is cleared internally, and
        // what waited to be sent for them goes too (the global reference's stays).
        self.held
            .retain(|b| b.get(2..5) == Some(&[0, 0, 0]) || b.get(2..5) == Some(&[0x80, 0, 0]));
        let ids: Vec<CallId> = self.calls.keys().copied().collect();
        for id in ids {
            // A call the owner was already releasing keeps its own cause.
            let cause = self.calls[&id]
                .release_cause
                .clone()
                .unwrap_or_else(|| self.cause(CauseValue::DestinationOutOfOrder));
            self.finish(id, cause, ReleaseOrigin::Local);
        }
    }

    fn t316_expired(&mut self, now: Instant) {
        let Some(r) = self.t316 else { return };
        let what = self.rest_what.unwrap_or(Restart::All);
        if r.sent < self.config.n316 {
            self.t316 = Some(Running {
                at: self.at(now, Timer::T316),
                sent: r.sent + 1,
                ..r
            });
            // What the peer clears when this RESTART arrives is cleared here again: calls
            // made on the restarted VCs since the first one would otherwise live on here
            // only (natm-sim's signalling swarm, seed 190; Q.2931 §5.5.1 keeps the VCs
            // out of use until the acknowledgement).
            let cause = self.cause(CauseValue::TemporaryFailure);
            self.clear_for_restart(what, cause);
            if let Some(m) = self.rest_msg.clone() {
                self.send(m);
            }
        } else {
            self.t316 = None;
            self.rest_start = RestartState::Null;
            self.rest_what = None;
            self.rest_msg = None;
            self.event(CallEvent::RestartFailed {
                what,
                timer: Timer::T316,
            });
        }
    }

    fn t322_expired(&mut self, now: Instant, id: CallId) {
        let n322 = self.config.n322;
        let at = self.at(now, Timer::T322);
        let Some(c) = self.calls.get_mut(&id) else {
            return;
        };
        let Some(r) = c.t322 else { return };
        if r.sent < n322 {
            c.t322 = Some(Running {
                at,
                sent: r.sent + 1,
                ..r
            });
            self.send(Self::out(id, Mt::StatusEnquiry).emit());
        } else {
            c.t322 = None;
            if c.state != CallState::ReleaseRequest {
                self.start_release(now, id, self.cause(CauseValue::TemporaryFailure));
            }
        }
    }

    fn call_timer_expired(&mut self, now: Instant, id: CallId) {
        let (n303, n308) = (self.config.n303, self.config.n308);
        let normal = self.cause(CauseValue::NormalUnspecified);
        let (t303, t308) = (self.at(now, Timer::T303), self.at(now, Timer::T308));
        let Some(c) = self.calls.get_mut(&id) else {
            return;
        };
        let Some(r) = c.timer.take() else { return };
        match r.timer {
            Timer::T303 if r.sent < n303 => {
                c.timer = Some(Running {
                    at: t303,
                    sent: r.sent + 1,
                    ..r
                });
                if let Some(m) = c.setup.clone() {
                    self.send(m);
                }
            }
            Timer::T303 => {
                // No answer to SETUP twice: RELEASE COMPLETE, cause 102 "303" (§5.1.1).
                let cause = self.cause_timer(CauseValue::RecoveryOnTimerExpiry, Some(Timer::T303));
                self.reject(id, cause, ReleaseOrigin::Local);
            }
            Timer::T308 if r.sent < n308 => {
                c.timer = Some(Running {
                    at: t308,
                    sent: r.sent + 1,
                    ..r
                });
                let cause = c.release_cause.clone().unwrap_or(normal);
                self.send(Self::out(id, Mt::Release).cause(cause).emit());
            }
            Timer::T308 => {
                #[cfg(feature = "mutants")]
                if self.config.role == Role::Network
                    && crate::mutants::no_release_complete_after_t308()
                {
                    // Planted bug: the call stays in N11 with no timer, for ever.
                    return;
                }
                // §5.4.3.4 / §5.4.4.3: release locally; the VC is in maintenance
                // condition, which the restart procedure clears at the peer.
                let cause = c.release_cause.clone().unwrap_or(normal);
                let conn = c.conn;
                self.finish(id, cause, ReleaseOrigin::Local);
                if let Some(k) = conn
                    && self.config.restart_after_t308
                    && self.rest_start == RestartState::Null
                {
                    let vc = Restart::Vc {
                        vpci: k.vpci,
                        vci: k.vci,
                    };
                    let _ = self.restart(now, vc);
                }
            }
            Timer::T310 | Timer::T313 => {
                let cause = self.cause_timer(CauseValue::RecoveryOnTimerExpiry, Some(r.timer));
                self.start_release(now, id, cause);
            }
            _ => {}
        }
    }

    // ---------------------------------------------------------------------------------
    // Received messages

    fn handle_message(&mut self, now: Instant, bytes: &[u8]) {
        self.counters.rx += 1;
        let Some(m) = msg::parse(bytes) else {
            self.counters.rx_dropped += 1;
            return;
        };
        if m.cref == 0 {
            self.handle_global(now, m);
            return;
        }
        let id = CallId {
            cref: m.cref,
            // Flag 1: sent to the side that allocated the reference, i.e. to us.
            origin: if m.flag {
                Origin::Local
            } else {
                Origin::Remote
            },
        };
        if self.calls.contains_key(&id) {
            self.handle_for_call(now, id, m);
        } else {
            self.handle_unknown_cref(id, m);
        }
    }

    /// Q.2931 §5.6.3.2: a call reference with no call.
    fn handle_unknown_cref(&mut self, id: CallId, m: Inbound) {
        match m.mt {
            Mt::Setup if id.origin == Origin::Remote => self.incoming_setup(id, m),
            // A SETUP claiming our reference: ignored.
            Mt::Setup => {}
            Mt::ReleaseComplete => {}
            Mt::StatusEnquiry => {
                self.send_status(id, 0, self.cause(CauseValue::ResponseToStatusEnquiry));
            }
            Mt::Status => {
                if m.call_state.is_some_and(|s| s != 0) {
                    let c = self.cause(CauseValue::MessageNotCompatible);
                    self.send(Self::out(id, Mt::ReleaseComplete).cause(c).emit());
                }
            }
            _ => {
                let c = self.cause(CauseValue::InvalidCallRef);
                self.send(Self::out(id, Mt::ReleaseComplete).cause(c).emit());
            }
        }
    }

    fn incoming_setup(&mut self, id: CallId, mut m: Inbound) {
        // Mandatory IEs (§5.6.7) and IEs asking to clear (§5.6.8): refuse.
        for p in &m.problems {
            let refuse = match p.kind {
                ProblemKind::MandatoryMissing => Some(CauseValue::MandatoryIeMissing),
                ProblemKind::MandatoryContent => Some(CauseValue::InvalidIeContents),
                ProblemKind::Unrecognised if p.action == IeAction::Clear => {
                    Some(CauseValue::IeNonExistent)
                }
                ProblemKind::Content if p.action == IeAction::Clear => {
                    Some(CauseValue::InvalidIeContents)
                }
                _ => None,
            };
            if let Some(v) = refuse {
                let c = self.cause_ie(v, p.ie);
                self.send(Self::out(id, Mt::ReleaseComplete).cause(c).emit());
                return;
            }
            if matches!(p.action, IeAction::DiscardMsg | IeAction::DiscardMsgReport) {
                if p.action == IeAction::DiscardMsgReport {
                    self.report(id, 0, self.cause_ie(p.cause_value(), p.ie));
                }
                return;
            }
        }
        if self.config.role == Role::User {
            // UNI 3.1 §5.3.1.7: the network's SETUP names the connection.
            msg::require_conn(&mut m);
            if let Some(p) = m.problems.iter().find(|p| p.ie == msg::CONNECTION_ID) {
                let c = self.cause_ie(p.cause_value(), p.ie);
                self.send(Self::out(id, Mt::ReleaseComplete).cause(c).emit());
                return;
            }
        }
        let Some(setup) = m.setup else {
            // Not a SETUP the codec could read as one: treated as its mandatory IEs missing.
            let c = self.cause(CauseValue::MandatoryIeMissing);
            self.send(Self::out(id, Mt::ReleaseComplete).cause(c).emit());
            return;
        };
        if self.rest_respond == RestartState::Indicated {
            // REST2: the interface is being restarted; no new calls (§5.5.2).
            let c = self.cause(CauseValue::TemporaryFailure);
            self.send(Self::out(id, Mt::ReleaseComplete).cause(c).emit());
            return;
        }
        let state = match self.config.role {
            Role::User => CallState::CallPresent,
            Role::Network => CallState::CallInitiated,
        };
        let mut c = Call::new(state);
        c.conn = setup.params.conn;
        self.calls.insert(id, c);
        self.report_optional_problems(id, state, &m.problems);
        self.event(CallEvent::Setup { call: id, setup });
    }

    /// STATUS for the non-mandatory IE problems §5.6.8 says to report.
    fn report_optional_problems(
        &mut self,
        id: CallId,
        state: CallState,
        problems: &[msg::Problem],
    ) {
        let rep = problems.iter().find(|p| {
            matches!(p.kind, ProblemKind::Unrecognised | ProblemKind::Content)
                && matches!(p.action, IeAction::None | IeAction::DiscardReport)
        });
        if let Some(p) = rep {
            let c = self.cause_ie(p.cause_value(), p.ie);
            self.report(id, state.code(), c);
        }
    }

    fn handle_for_call(&mut self, now: Instant, id: CallId, mut m: Inbound) {
        let Some(state) = self.calls.get(&id).map(|c| c.state) else {
            return;
        };
        let role = self.config.role;
        // UNI 3.1 §5.3: the network's first answer to SETUP names the connection.
        let first_answer = role == Role::User
            && state == CallState::CallInitiated
            && matches!(m.mt, Mt::CallProceeding | Mt::Connect | Mt::Alerting);
        if first_answer {
            msg::require_conn(&mut m);
        }
        // Messages valid in every state (§5.4, §5.6.10, §5.6.11).
        match m.mt {
            Mt::Release => return self.rx_release(id, m),
            Mt::ReleaseComplete => return self.rx_release_complete(id, m),
            Mt::StatusEnquiry => {
                let c = self.cause(CauseValue::ResponseToStatusEnquiry);
                self.send_status(id, state.code(), c);
                return;
            }
            Mt::Status => return self.rx_status(now, id, state, m),
            // A repeated SETUP (the peer's T303): the first one is being answered.
            Mt::Setup => return,
            Mt::Notify => return,
            _ => {}
        }
        use CallState::*;
        let ok = match (role, m.mt) {
            (Role::User, Mt::CallProceeding | Mt::Alerting) => {
                state == CallInitiated || (m.mt == Mt::Alerting && state == OutgoingCallProceeding)
            }
            (Role::User, Mt::Connect) => matches!(state, CallInitiated | OutgoingCallProceeding),
            (Role::User, Mt::ConnectAck) => state == ConnectRequest,
            (Role::Network, Mt::CallProceeding | Mt::Alerting) => {
                state == CallPresent || (m.mt == Mt::Alerting && state == IncomingCallProceeding)
            }
            (Role::Network, Mt::Connect) => matches!(state, CallPresent | IncomingCallProceeding),
            // The user's answer to the network's CONNECT.
            (Role::Network, Mt::ConnectAck) => state == Active && id.origin == Origin::Remote,
            _ => false,
        };
        if !ok {
            let v = if matches!(m.mt, Mt::Other(_)) {
                CauseValue::MessageTypeNonExistent
            } else {
                CauseValue::MessageNotCompatible
            };
            let diag = match m.mt {
                Mt::Other(t) => Some(t),
                _ => None,
            };
            let c = self.cause_mt(v, diag);
            match m.action {
                MsgAction::Clear => {
                    if state != ReleaseRequest {
                        self.start_release(now, id, c);
                    }
                }
                MsgAction::Ignore => {}
                MsgAction::None | MsgAction::Report => self.report(id, state.code(), c),
            }
            return;
        }
        // §5.6.7: a mandatory IE missing or wrong: the message is not acted on.
        if let Some(p) = m.problems.iter().find(|p| {
            matches!(
                p.kind,
                ProblemKind::MandatoryMissing | ProblemKind::MandatoryContent
            )
        }) {
            let c = self.cause_ie(p.cause_value(), p.ie);
            self.report(id, state.code(), c);
            return;
        }
        // §5.6.8: optional IEs the codec could not use, by their action indicators.
        for p in &m.problems {
            match p.action {
                IeAction::Clear => {
                    self.start_release(now, id, self.cause_ie(p.cause_value(), p.ie));
                    return;
                }
                IeAction::DiscardMsg => return,
                IeAction::DiscardMsgReport => {
                    self.report(id, state.code(), self.cause_ie(p.cause_value(), p.ie));
                    return;
                }
                _ => {}
            }
        }
        let next = self.transition(now, id, state, &m);
        self.report_optional_problems(id, next, &m.problems);
    }

    /// The normal transitions (Q.2931 §5.1–§5.3, the state tables' non-error rows).
    fn transition(&mut self, now: Instant, id: CallId, state: CallState, m: &Inbound) -> CallState {
        let t310 = self.at(now, Timer::T310);
        let Some(c) = self.calls.get_mut(&id) else {
            return CallState::Null;
        };
        if m.conn.is_some() {
            c.conn = m.conn;
        }
        let conn = c.conn;
        match m.mt {
            Mt::CallProceeding | Mt::Alerting => {
                if state == CallState::CallInitiated || state == CallState::CallPresent {
                    c.state = if self.config.role == Role::User {
                        CallState::OutgoingCallProceeding
                    } else {
                        CallState::IncomingCallProceeding
                    };
                    c.timer = Some(Running {
                        timer: Timer::T310,
                        at: t310,
                        sent: 1,
                    });
                    c.setup = None;
                    let s = c.state;
                    self.event(CallEvent::Proceeding { call: id, conn });
                    return s;
                }
                state
            }
            Mt::Connect => {
                c.state = CallState::Active;
                c.timer = None;
                c.setup = None;
                self.send(Self::out(id, Mt::ConnectAck).emit());
                self.event(CallEvent::Connected { call: id, conn });
                CallState::Active
            }
            Mt::ConnectAck => {
                if state == CallState::ConnectRequest {
                    c.state = CallState::Active;
                    c.timer = None;
                    self.event(CallEvent::Connected { call: id, conn });
                }
                CallState::Active
            }
            _ => state,
        }
    }

    fn rx_release(&mut self, id: CallId, m: Inbound) {
        let Some(c) = self.calls.get(&id) else {
            return;
        };
        let state = c.state;
        let missing = m.problems.iter().find(|p| {
            matches!(
                p.kind,
                ProblemKind::MandatoryMissing | ProblemKind::MandatoryContent
            )
        });
        let peer_cause = m
            .cause
            .clone()
            .unwrap_or_else(|| self.cause(CauseValue::NormalUnspecified));
        if state == CallState::ReleaseRequest {
            // Clear collision (§5.4.5): both sent RELEASE; no RELEASE COMPLETE.
            self.finish(id, peer_cause, ReleaseOrigin::Peer);
            return;
        }
        // U12/N12, passed through: RELEASE COMPLETE at once (§5.4.4).
        let mut rc = Self::out(id, Mt::ReleaseComplete);
        if let Some(p) = missing {
            rc = rc.cause(self.cause_ie(p.cause_value(), p.ie));
        }
        self.send(rc.emit());
        self.finish(id, peer_cause, ReleaseOrigin::Peer);
    }

    fn rx_release_complete(&mut self, id: CallId, m: Inbound) {
        let own = self.calls.get(&id).and_then(|c| c.release_cause.clone());
        let cause = m
            .cause
            .or(own)
            .unwrap_or_else(|| self.cause(CauseValue::NormalUnspecified));
        self.finish(id, cause, ReleaseOrigin::Peer);
    }

    /// §5.6.11: STATUS received for a call.
    fn rx_status(&mut self, now: Instant, id: CallId, state: CallState, m: Inbound) {
        if let Some(c) = self.calls.get_mut(&id) {
            c.t322 = None;
        }
        let Some(peer) = m.call_state else {
            // Without its call state a STATUS says nothing; no STATUS is sent back, which
            // could loop between two entities.
            return;
        };
        let cause = m
            .cause
            .clone()
            .unwrap_or_else(|| self.cause(CauseValue::NormalUnspecified));
        if peer == 0 {
            // The peer has no such call: release here without a message.
            self.finish(id, cause, ReleaseOrigin::Peer);
            return;
        }
        if state == CallState::ReleaseRequest {
            return;
        }
        if !state.compatible_with(peer) {
            let c = self.cause(CauseValue::MessageNotCompatible);
            self.start_release(now, id, c);
            return;
        }
        self.event(CallEvent::Status {
            call: Some(id),
            cause,
            peer_state: peer,
        });
    }

    /// Messages on the global call reference (§5.5, §5.6.3.3).
    fn handle_global(&mut self, now: Instant, m: Inbound) {
        let global = CallId {
            cref: 0,
            origin: if m.flag {
                Origin::Local
            } else {
                Origin::Remote
            },
        };
        match m.mt {
            Mt::Restart if !m.flag => self.rx_restart(now, global, m),
            Mt::RestartAck if m.flag => {
                if self.rest_start == RestartState::Requested {
                    let what = self.rest_what.take().unwrap_or(Restart::All);
                    self.rest_start = RestartState::Null;
                    self.t316 = None;
                    self.rest_msg = None;
                    self.event(CallEvent::RestartDone { what });
                }
            }
            Mt::Status => {
                if let (Some(cause), Some(peer_state)) = (m.cause, m.call_state) {
                    self.event(CallEvent::Status {
                        call: None,
                        cause,
                        peer_state,
                    });
                }
            }
            Mt::StatusEnquiry => {
                let st = self.global_state();
                self.send_status(global, st, self.cause(CauseValue::ResponseToStatusEnquiry));
            }
            _ => {
                let st = self.global_state();
                self.report(global, st, self.cause(CauseValue::InvalidCallRef));
            }
        }
    }

    fn global_state(&self) -> u8 {
        if self.rest_respond != RestartState::Null {
            self.rest_respond.code()
        } else {
            self.rest_start.code()
        }
    }

    fn rx_restart(&mut self, now: Instant, global: CallId, m: Inbound) {
        if self.rest_respond == RestartState::Indicated {
            return;
        }
        if let Some(p) = m.problems.iter().find(|p| {
            matches!(
                p.kind,
                ProblemKind::MandatoryMissing | ProblemKind::MandatoryContent
            )
        }) {
            let st = self.global_state();
            self.report(global, st, self.cause_ie(p.cause_value(), p.ie));
            return;
        }
        let Some(what) = m.restart else {
            let st = self.global_state();
            self.report(global, st, self.cause(CauseValue::MandatoryIeMissing));
            return;
        };
        self.clear_for_restart(what, self.cause(CauseValue::TemporaryFailure));
        match self.config.restart_response {
            RestartResponse::Auto => {
                self.send(Out::new(Mt::RestartAck, 0, true).restart(what).emit());
                self.event(CallEvent::Restarted { what });
            }
            RestartResponse::Owner => {
                self.rest_respond = RestartState::Indicated;
                self.rest_respond_what = Some(what);
                self.t317 = Some(self.at(now, Timer::T317));
                self.event(CallEvent::RestartIndication { what });
            }
        }
    }
}

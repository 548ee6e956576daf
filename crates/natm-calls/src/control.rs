//! [`CallControl`]: the ports' signalling, the calls bridged between them, and what they
//! hold in the switch (cross-connects, CAC bookings, VCIs).

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

use natm_adapter::{Reassembler, Reassembly};
use natm_core::addr::Aesa;
use natm_core::{Duration, Instant, Qos, TrafficClass, VcId, Vci, Vpi};
use natm_sig::{
    CallEvent, CallId, Cause, CauseValue, CommandError, ConnId, IncomingSetup, Location,
    PartyNumber, Restart, Role, SetupParams, Signalling, UniVersion,
};
use natm_switch::{CrossConnect, Endpoint, PortId, Switch, SwitchError, XcId};
use natm_traffic::cac::Refusal;
use natm_traffic::policer::ContractError;
use natm_wire::aal5::Segmenter;
use natm_wire::q2931::cause::MAX_DIAGNOSTICS;
use natm_wire::q2931::ie::Number;

use crate::types::{
    CallStatus, Config, Counters, LegStatus, Phase, PortError, PortStatus, Route, Side,
};

/// The signalling VC, 0.5.
fn signalling_vc() -> VcId {
    VcId::new(Vpi::default(), Vci::SIGNALLING)
}
/// The largest signalling SDU taken (an SSCOP PDU with the longest Q.2931 message).
const MAX_SDU: usize = 8192;
/// Log lines kept for [`CallControl::poll_log`]; older ones are dropped and counted.
const MAX_LOG: usize = 1024;

/// One signalling port.
#[derive(Debug)]
struct Port {
    side: Side,
    /// The UNI version of the port's signalling.
    version: UniVersion,
    up: bool,
    sig: Signalling,
    rx: Reassembler,
    link_up: bool,
    /// RESTART (all) to send once the SAAL is up: after add, `port_up` or a loss.
    restart_pending: bool,
    establishments: u64,
    /// VCIs of calls on this port (assigned here or by the peer).
    vcis: BTreeSet<u16>,
    /// Where the next VCI search starts.
    next_vci: u16,
    /// Signalling entities this port has had: each new one's SSCOP starts at another
    /// N(SQ), so that a peer still established with the last one re-establishes.
    generation: u8,
    /// The port's calls (its `Signalling`'s call ids) → the call.
    legs: BTreeMap<CallId, u32>,
}

/// One leg of a call.
#[derive(Clone, Copy, Debug)]
struct Leg {
    port: PortId,
    call: CallId,
    vci: Option<u16>,
}

/// A call: leg `a` the caller's, leg `b` the called side's.
#[derive(Clone, Debug)]
struct Call {
    a: Option<Leg>,
    b: Option<Leg>,
    qos: Qos,
    xc: Option<XcId>,
    phase: Phase,
    /// Reached active (counted as connected, not refused, when it ends).
    connected: bool,
    called: Aesa,
    calling: Option<Aesa>,
    since: Instant,
    /// A leg released while the cross-connect still held cells for the other: the other
    /// leg's release waits for them (see [`CallControl::drain`]).
    drain: Option<Box<Drain>>,
}

/// A release waiting for the connection's queued cells.
#[derive(Clone, Debug)]
struct Drain {
    /// The leg that went.
    gone: Which,
    /// The cause passed on to the other leg.
    cause: Cause,
    /// When the release goes on even with cells still queued.
    until: Instant,
}

/// The longest a release waits for the connection's cells queued toward the other leg.
pub const DRAIN_MAX: Duration = Duration::from_secs(1);
/// How often a waiting release looks at the connection's queue again.
pub const DRAIN_CHECK: Duration = Duration::from_millis(1);

/// Which leg.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    A,
    B,
}

/// A refusal: the cause value, the explanation (diagnostics) and the log's detail.
struct Refuse {
    value: CauseValue,
    explanation: String,
    detail: String,
}

/// The call control of one switch. See the crate documentation for the call contract.
#[derive(Debug)]
pub struct CallControl {
    config: Config,
    ports: BTreeMap<PortId, Port>,
    calls: BTreeMap<u32, Call>,
    next_call: u32,
    log: VecDeque<String>,
    counters: Counters,
    /// Calls whose release waits for queued cells, and when they are looked at next.
    draining: Vec<u32>,
    drain_check: Option<Instant>,
}

impl CallControl {
    /// Call control with no ports.
    pub fn new(config: Config) -> CallControl {
        CallControl {
            config,
            ports: BTreeMap::new(),
            calls: BTreeMap::new(),
            next_call: 0,
            log: VecDeque::new(),
            counters: Counters::default(),
            draining: Vec::new(),
            drain_check: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Adds signalling on `port` (a port of the switch with `PortConfig::signalling`), up:
    /// its SAAL starts establishing at `now`, and RESTART (all) goes out once it is up.
    /// The port speaks [`Config::version`].
    pub fn add_port(&mut self, now: Instant, port: PortId, side: Side) -> Result<(), PortError> {
        self.add_port_version(now, port, side, self.config.version)
    }

    /// [`add_port`](Self::add_port) for a port whose peer speaks `version` (a foreign UNI
    /// 3.1 peer: its SETUPs carry no UNI 4.0 IEs, and a bandwidth refusal to it is cause
    /// 51).
    pub fn add_port_version(
        &mut self,
        now: Instant,
        port: PortId,
        side: Side,
        version: UniVersion,
    ) -> Result<(), PortError> {
        if self.ports.contains_key(&port) {
            return Err(PortError::Exists(port));
        }
        let p = Port {
            side,
            version,
            up: true,
            sig: self.fresh_signalling(now, side, version, 0),
            rx: Reassembler::new(signalling_vc(), MAX_SDU).expect("0.5 and 8192 bytes are valid"),
            link_up: false,
            restart_pending: true,
            establishments: 0,
            vcis: BTreeSet::new(),
            next_vci: self.config.vci_first,
            generation: 0,
            legs: BTreeMap::new(),
        };
        self.ports.insert(port, p);
        Ok(())
    }

    fn fresh_signalling(
        &self,
        now: Instant,
        side: Side,
        version: UniVersion,
        generation: u8,
    ) -> Signalling {
        let role = match side {
            Side::Network => Role::Network,
            Side::User => Role::User,
        };
        let mut c = natm_sig::Config::new(role);
        c.version = version;
        let mut saal = self.config.sscop.clone();
        // 64 N(SQ) values apart per generation: each entity's own re-establishments
        // count up by one from its start.
        saal.first_sq = saal.first_sq.wrapping_add(generation.wrapping_mul(64));
        Signalling::new(now, c, saal)
    }

    /// Gives `port` a fresh signalling entity (the calls were cleared), establishing at
    /// `now`, with RESTART (all) to follow once the SAAL is up.
    fn renew(&mut self, now: Instant, port: PortId) {
        let Some(p) = self.ports.get(&port) else {
            return;
        };
        let (side, version, generation) = (p.side, p.version, p.generation.wrapping_add(1));
        let fresh = self.fresh_signalling(now, side, version, generation);
        if let Some(p) = self.ports.get_mut(&port) {
            p.sig = fresh;
            p.generation = generation;
            p.link_up = false;
            p.restart_pending = true;
            p.rx =
                Reassembler::new(signalling_vc(), MAX_SDU).expect("0.5 and 8192 bytes are valid");
        }
    }

    /// The port's link went: every call with a leg on it is cleared (the other legs
    /// released with cause 27), its cross-connects and VCIs returned, and its signalling
    /// starts afresh when [`port_up`](Self::port_up) comes. The switch port's own state is
    /// the driver's (`Switch::set_port_up`).
    pub fn port_down(
        &mut self,
        now: Instant,
        port: PortId,
        sw: &mut Switch,
    ) -> Result<(), PortError> {
        let p = self.ports.get_mut(&port).ok_or(PortError::Unknown(port))?;
        if !p.up {
            return Ok(());
        }
        p.up = false;
        self.clear_port(now, port, "port down", sw);
        self.run(now, sw);
        Ok(())
    }

    /// The port's link is back: a fresh signalling entity establishes the SAAL at `now`,
    /// and RESTART (all) goes out once it is up.
    pub fn port_up(
        &mut self,
        now: Instant,
        port: PortId,
        sw: &mut Switch,
    ) -> Result<(), PortError> {
        let p = self.ports.get_mut(&port).ok_or(PortError::Unknown(port))?;
        if p.up {
            return Ok(());
        }
        p.up = true;
        self.renew(now, port);
        self.run(now, sw);
        Ok(())
    }

    /// Takes the signalling cells every port received (`Switch::poll_signalling`), runs
    /// the SDUs through each port's signalling, acts on what call control reports
    /// (routing, VCIs, cross-connects, answers, releases) and queues what is to be sent
    /// (`Switch::send_signalling`). Call when `Switch::has_signalling`.
    pub fn handle(&mut self, now: Instant, sw: &mut Switch) {
        let mut cells = [[0u8; 53]; 64];
        let ids: Vec<PortId> = self.ports.keys().copied().collect();
        for id in ids {
            loop {
                let n = sw.poll_signalling(id, &mut cells);
                if n == 0 {
                    break;
                }
                let Some(p) = self.ports.get_mut(&id) else {
                    break;
                };
                if !p.up {
                    continue;
                }
                for c in &cells[..n] {
                    if let Reassembly::Complete(_) = p.rx.push_cell(c) {
                        p.sig.handle_pdu(now, p.rx.sdu());
                    }
                }
            }
        }
        self.run(now, sw);
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.ports
            .values()
            .filter(|p| p.up)
            .filter_map(|p| p.sig.poll_timeout())
            .chain(self.drain_check)
            .min()
    }

    /// Runs the timers due at `now` (SSCOP's and Q.2931's of every up port) and what
    /// follows from them.
    pub fn handle_timeout(&mut self, now: Instant, sw: &mut Switch) {
        for p in self.ports.values_mut() {
            if p.up && p.sig.poll_timeout().is_some_and(|t| t <= now) {
                p.sig.handle_timeout(now);
            }
        }
        self.run(now, sw);
    }

    /// The next log line: one per refusal and per port cleared, the whole text (the
    /// cause's diagnostics carry a 28-byte explanation of it).
    pub fn poll_log(&mut self) -> Option<String> {
        self.log.pop_front()
    }

    /// Counts since start.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Calls in any phase.
    pub fn call_count(&self) -> usize {
        self.calls.len()
    }

    /// VCIs in use by calls on `port` (0 for a port without signalling): with no call
    /// left, every port's is 0.
    pub fn allocated_vcis(&self, port: PortId) -> usize {
        self.ports.get(&port).map_or(0, |p| p.vcis.len())
    }

    /// Each signalling port, in port order.
    pub fn ports(&self) -> impl Iterator<Item = PortStatus> + '_ {
        self.ports.iter().map(|(&port, p)| PortStatus {
            port,
            side: p.side,
            up: p.up,
            sscop: p.sig.sscf().sscop().state(),
            link_up: p.link_up,
            calls: p.legs.len(),
            establishments: p.establishments,
            vcis: p.vcis.len(),
        })
    }

    /// Each call, oldest first (`take` what a listing can hold).
    pub fn calls(&self, now: Instant) -> impl Iterator<Item = CallStatus> + '_ {
        self.calls.values().map(move |c| CallStatus {
            a: c.a.map(|l| LegStatus {
                port: l.port,
                vci: l.vci,
            }),
            b: c.b.map(|l| LegStatus {
                port: l.port,
                vci: l.vci,
            }),
            phase: c.phase,
            qos: c.qos,
            called: c.called,
            calling: c.calling,
            age: now.saturating_duration_since(c.since),
        })
    }

    /// The signalling entity of `port`, for its queries.
    pub fn signalling(&self, port: PortId) -> Option<&Signalling> {
        self.ports.get(&port).map(|p| &p.sig)
    }

    /// An honest estimate of the bytes of state one call costs, from the sizes of the
    /// real structures: the call (in the call table at a B-tree's lowest load, twice the
    /// entry), its two legs in their ports' tables and VCI sets (likewise), and the two
    /// natm-sig calls (`Uni::state_bytes_per_call`). Not counted: a SETUP kept for T303
    /// while the call is being set up, SSCOP's buffers (per port, not per call).
    pub fn state_bytes_per_call() -> usize {
        use core::mem::size_of;
        2 * size_of::<(u32, Call)>()
            + 2 * (2 * size_of::<(CallId, u32)>() + 2 * size_of::<u16>())
            + 2 * natm_sig::Uni::state_bytes_per_call()
    }

    // ---------------------------------------------------------------------------------
    // The engine

    /// Acts on every port's events until none is left, then sends what they produced.
    fn run(&mut self, now: Instant, sw: &mut Switch) {
        if self.drain_check.is_some_and(|t| t <= now) {
            self.drain(now, sw);
        }
        let ids: Vec<PortId> = self.ports.keys().copied().collect();
        // Bounded: each round acts on events that earlier rounds' commands produced.
        for _ in 0..64 {
            let mut any = false;
            for &id in &ids {
                while let Some(ev) = self.ports.get_mut(&id).and_then(|p| p.sig.poll_event()) {
                    any = true;
                    self.on_event(now, id, ev, sw);
                }
            }
            if !any {
                break;
            }
        }
        for (&id, p) in &mut self.ports {
            while let Some(sdu) = p.sig.poll_transmit() {
                if !p.up || !send_sdu(now, sw, id, &sdu) {
                    self.counters.tx_dropped += 1;
                }
            }
        }
    }

    fn on_event(&mut self, now: Instant, port: PortId, ev: CallEvent, sw: &mut Switch) {
        match ev {
            CallEvent::Setup { call, setup } => self.on_setup(now, port, call, &setup, sw),
            CallEvent::Proceeding { call, conn } => {
                self.on_answer(now, port, call, conn, false, sw)
            }
            CallEvent::Connected { call, conn } => self.on_answer(now, port, call, conn, true, sw),
            CallEvent::Released { call, cause, .. } => {
                if let Some((idx, which)) = self.find(port, call) {
                    self.leg_gone(now, idx, which, &cause, sw);
                }
            }
            CallEvent::RestartIndication { .. } => {
                if let Some(p) = self.ports.get_mut(&port) {
                    let _ = p.sig.restart_response(now);
                }
            }
            CallEvent::RestartFailed { what, timer } => {
                self.push_log(format!(
                    "p{port}: restart of {what:?} failed ({timer:?} ran out)"
                ));
            }
            CallEvent::LinkUp => {
                if let Some(p) = self.ports.get_mut(&port) {
                    if !p.link_up {
                        p.establishments += 1;
                    }
                    p.link_up = true;
                    if p.restart_pending && p.sig.restart(now, Restart::All).is_ok() {
                        p.restart_pending = false;
                    }
                }
            }
            CallEvent::LinkDown => {
                self.clear_port(now, port, "SAAL lost", sw);
                self.renew(now, port);
            }
            CallEvent::Status { .. }
            | CallEvent::Restarted { .. }
            | CallEvent::RestartDone { .. } => {}
        }
    }

    fn find(&self, port: PortId, call: CallId) -> Option<(u32, Which)> {
        let idx = *self.ports.get(&port)?.legs.get(&call)?;
        let c = self.calls.get(&idx)?;
        if c.a.is_some_and(|l| l.port == port && l.call == call) {
            Some((idx, Which::A))
        } else if c.b.is_some_and(|l| l.port == port && l.call == call) {
            Some((idx, Which::B))
        } else {
            None
        }
    }

    /// A SETUP arrived on port `a`: route it, assign what this switch assigns, book the
    /// bandwidth, forward it and answer CALL PROCEEDING; or refuse it.
    fn on_setup(
        &mut self,
        now: Instant,
        a: PortId,
        call: CallId,
        setup: &IncomingSetup,
        sw: &mut Switch,
    ) {
        let called = match aesa_of(&setup.params.called) {
            Some(addr) => addr,
            None => {
                let r = self.refusal(
                    CauseValue::NoRouteToDestination,
                    "no route",
                    "the called number is not an AESA".into(),
                );
                return self.refuse(now, a, call, None, r);
            }
        };
        let who = format!("p{a} {call} to {called}");
        match self.admit(now, a, call, called, setup, sw) {
            Ok(()) => {}
            Err(r) => self.refuse(now, a, call, Some(&who), r),
        }
    }

    fn admit(
        &mut self,
        now: Instant,
        a: PortId,
        call: CallId,
        called: Aesa,
        setup: &IncomingSetup,
        sw: &mut Switch,
    ) -> Result<(), Refuse> {
        if !setup.qos_mapped {
            return Err(self.refusal(
                CauseValue::UnsupportedTrafficParams,
                "QoS IEs not mapped",
                "the SETUP's traffic IEs do not map to a natm QoS".into(),
            ));
        }
        let qos = setup.params.qos;
        let b = self.route(&called)?;
        if b == a {
            return Err(self.refusal(
                CauseValue::NoRouteToDestination,
                "route loops",
                format!("the route to {called} leads back to port {a}"),
            ));
        }
        match self.ports.get(&b) {
            Some(p) if p.up && p.link_up => {}
            _ => {
                return Err(self.refusal(
                    CauseValue::DestinationOutOfOrder,
                    &format!("p{b} down"),
                    format!("port {b} toward {called} is down or its SAAL is not up"),
                ));
            }
        }
        // Leg a's VCI: assigned here on the network side, by the peer's SETUP otherwise.
        let side_a = self.ports[&a].side;
        let vci_a = match side_a {
            Side::Network => self.alloc_vci(a).ok_or_else(|| self.no_vci(a))?,
            Side::User => match setup.params.conn {
                Some(ConnId { vpci: 0, vci }) if self.take_vci(a, vci) => vci,
                other => {
                    return Err(self.refusal(
                        CauseValue::VpciVciNotAvailable,
                        &format!("p{a}: VCI taken"),
                        format!("port {a}: the SETUP's connection {other:?} is not free on VPI 0"),
                    ));
                }
            },
        };
        let vci_b = match self.ports[&b].side {
            Side::Network => match self.alloc_vci(b) {
                Some(v) => Some(v),
                None => {
                    self.free_vci(a, vci_a);
                    return Err(self.no_vci(b));
                }
            },
            Side::User => None,
        };
        let undo_vcis = |cc: &mut CallControl| {
            cc.free_vci(a, vci_a);
            if let Some(v) = vci_b {
                cc.free_vci(b, v);
            }
        };
        // Bandwidth: booked now when both VCs are known, else checked now and booked when
        // the peer names leg b's VCI.
        let xc = CrossConnect::new(
            Endpoint::vc(a.0, 0, vci_a),
            Endpoint::vc(b.0, 0, vci_b.unwrap_or(u16::MAX)),
            qos,
        );
        let booked = match vci_b {
            Some(_) => sw.connect(now, &xc).map(Some),
            None => sw.assess(&xc).map(|()| None),
        };
        let xc_id = match booked {
            Ok(id) => id,
            Err(e) => {
                undo_vcis(self);
                return Err(self.switch_refusal(&xc, &e, sw));
            }
        };
        let params = SetupParams {
            called: setup.params.called.clone(),
            called_sub: setup.params.called_sub.clone(),
            calling: setup.params.calling.clone(),
            calling_sub: setup.params.calling_sub.clone(),
            qos,
            blli: setup.params.blli.clone(),
            bhli: setup.params.bhli.clone(),
            conn: vci_b.map(|vci| ConnId { vpci: 0, vci }),
        };
        let pb = self.ports.get_mut(&b).expect("routed to a signalling port");
        let call_b = match pb.sig.setup(now, &params) {
            Ok(c) => c,
            Err(e) => {
                if let Some(id) = xc_id {
                    let _ = sw.disconnect(id);
                }
                undo_vcis(self);
                let value = match e {
                    CommandError::Qos(_) => CauseValue::UnsupportedTrafficParams,
                    _ => CauseValue::ResourceUnavailable,
                };
                return Err(self.refusal(
                    value,
                    &format!("p{b}: {}", short(&e)),
                    format!("port {b}: SETUP not sent: {e}"),
                ));
            }
        };
        let idx = self.next_call;
        self.next_call = self.next_call.wrapping_add(1);
        let calling = setup.params.calling.as_ref().and_then(aesa_of);
        self.calls.insert(
            idx,
            Call {
                a: Some(Leg {
                    port: a,
                    call,
                    vci: Some(vci_a),
                }),
                b: Some(Leg {
                    port: b,
                    call: call_b,
                    vci: vci_b,
                }),
                qos,
                xc: xc_id,
                phase: Phase::Proceeding,
                connected: false,
                called,
                calling,
                since: now,
                drain: None,
            },
        );
        self.ports
            .get_mut(&a)
            .expect("the SETUP's port")
            .legs
            .insert(call, idx);
        self.ports
            .get_mut(&b)
            .expect("routed to a signalling port")
            .legs
            .insert(call_b, idx);
        let conn_a = (side_a == Side::Network).then_some(ConnId {
            vpci: 0,
            vci: vci_a,
        });
        let proceeded = self
            .ports
            .get_mut(&a)
            .map(|p| p.sig.proceed(now, call, conn_a));
        if !matches!(proceeded, Some(Ok(()))) {
            // Leg a is gone already (it cannot be answered): release leg b.
            let cause = self.cause(CauseValue::NormalUnspecified, "");
            self.leg_gone(now, idx, Which::A, &cause, sw);
        }
        Ok(())
    }

    /// CALL PROCEEDING (`connected` false) or CONNECT on leg b: its VCI, if the peer
    /// assigns it; the cross-connect once both VCs are known; CONNECT to the caller.
    fn on_answer(
        &mut self,
        now: Instant,
        port: PortId,
        call: CallId,
        conn: Option<ConnId>,
        connected: bool,
        sw: &mut Switch,
    ) {
        let Some((idx, which)) = self.find(port, call) else {
            return;
        };
        if which == Which::A {
            // The caller's side completed its CONNECT (user side on a trunk): nothing more.
            return;
        }
        let Some(c) = self.calls.get(&idx) else {
            return;
        };
        let Some(leg_b) = c.b else { return };
        if c.a.is_none() || c.phase == Phase::Releasing {
            // The caller is gone and leg b is being released: an answer crossed it.
            return;
        }
        if leg_b.vci.is_none()
            && let Some(k) = conn
        {
            let ok = k.vpci == 0 && self.take_vci(port, k.vci);
            if !ok {
                let r = self.refusal(
                    CauseValue::VpciVciNotAvailable,
                    &format!("p{port}: VCI taken"),
                    format!("port {port}: the peer named {k}, not free on VPI 0"),
                );
                return self.fail_call(now, idx, r, sw);
            }
            if let Some(c) = self.calls.get_mut(&idx)
                && let Some(l) = c.b.as_mut()
            {
                l.vci = Some(k.vci);
            }
        }
        let Some(c) = self.calls.get(&idx) else {
            return;
        };
        if c.xc.is_none()
            && let (Some(a), Some(b)) = (c.a, c.b)
            && let (Some(va), Some(vb)) = (a.vci, b.vci)
        {
            let xc = CrossConnect::new(
                Endpoint::vc(a.port.0, 0, va),
                Endpoint::vc(b.port.0, 0, vb),
                c.qos,
            );
            match sw.connect(now, &xc) {
                Ok(id) => {
                    if let Some(c) = self.calls.get_mut(&idx) {
                        c.xc = Some(id);
                    }
                }
                Err(e) => {
                    let r = self.switch_refusal(&xc, &e, sw);
                    return self.fail_call(now, idx, r, sw);
                }
            }
        }
        if !connected {
            return;
        }
        let Some(c) = self.calls.get(&idx) else {
            return;
        };
        let (Some(a), Some(_)) = (c.a, c.xc) else {
            // CONNECT without a VC named: the peer broke the protocol.
            let r = self.refusal(
                CauseValue::VpciVciAssignmentFailure,
                &format!("p{port}: no VCI"),
                format!("port {port}: CONNECT named no VC"),
            );
            return self.fail_call(now, idx, r, sw);
        };
        let ok = self
            .ports
            .get_mut(&a.port)
            .is_some_and(|p| p.sig.connect(now, a.call, None).is_ok());
        if ok {
            if let Some(c) = self.calls.get_mut(&idx) {
                c.phase = Phase::Active;
                c.connected = true;
            }
            self.counters.connected += 1;
        }
    }

    /// A call that cannot go on: both legs released with `r`'s cause, logged.
    fn fail_call(&mut self, now: Instant, idx: u32, r: Refuse, sw: &mut Switch) {
        let Some(c) = self.calls.get_mut(&idx) else {
            return;
        };
        c.phase = Phase::Releasing;
        let who = match (c.a, c.b) {
            (Some(a), Some(b)) => format!("p{} {} to {} via p{}", a.port, a.call, c.called, b.port),
            _ => format!("call to {}", c.called),
        };
        if let Some(id) = c.xc.take() {
            let _ = sw.disconnect(id);
        }
        let legs = [c.a, c.b];
        let cause = self.cause(r.value, &r.explanation);
        self.push_log(format!(
            "{who}: released with cause {} ({}): {}",
            r.value, r.explanation, r.detail
        ));
        for leg in legs.into_iter().flatten() {
            self.release_leg(now, idx, leg, &cause);
        }
    }

    /// Releases `leg`; a leg its signalling no longer knows is gone at once.
    fn release_leg(&mut self, now: Instant, idx: u32, leg: Leg, cause: &Cause) {
        let r = self
            .ports
            .get_mut(&leg.port)
            .map(|p| p.sig.release(now, leg.call, cause.clone()));
        if let Some(Err(CommandError::NoSuchCall)) | None = r {
            let which = match self.calls.get(&idx) {
                Some(c)
                    if c.a
                        .is_some_and(|l| l.port == leg.port && l.call == leg.call) =>
                {
                    Which::A
                }
                _ => Which::B,
            };
            self.drop_leg(idx, which);
        }
    }

    /// Leg `which` of call `idx` ended with `cause`: its VCI is free, the cross-connect
    /// goes, the other leg is released with the same cause; the call ends with its last
    /// leg.
    ///
    /// The other leg's RELEASE goes ahead of the connection's cells (0.5 is sent before
    /// the port's queues), and the disconnect drops what is queued: while the connection
    /// holds cells from the leg that went toward the other, both wait until those cells
    /// have left (at most [`DRAIN_MAX`]; the connection stays, the gone leg keeps its
    /// VCI until then).
    fn leg_gone(&mut self, now: Instant, idx: u32, which: Which, cause: &Cause, sw: &mut Switch) {
        let Some(c) = self.calls.get_mut(&idx) else {
            return;
        };
        if c.drain.is_none()
            && let Some(id) = c.xc
            && queued_toward_other(sw, id, which) > 0
        {
            c.phase = Phase::Releasing;
            c.drain = Some(Box::new(Drain {
                gone: which,
                cause: cause.clone(),
                until: now + DRAIN_MAX,
            }));
            self.draining.push(idx);
            let next = now + DRAIN_CHECK;
            self.drain_check = Some(self.drain_check.map_or(next, |t| t.min(next)));
            return;
        }
        if let Some(id) = c.xc.take() {
            let _ = sw.disconnect(id);
        }
        c.phase = Phase::Releasing;
        let other = match which {
            Which::A => c.b,
            Which::B => c.a,
        };
        self.drop_leg(idx, which);
        if let Some(leg) = other {
            self.release_leg(now, idx, leg, cause);
        }
    }

    /// Releases waiting for queued cells whose cells have left (or whose time is up) go
    /// on: the connection goes, the gone leg is forgotten, the other released.
    fn drain(&mut self, now: Instant, sw: &mut Switch) {
        let mut i = 0;
        while i < self.draining.len() {
            let idx = self.draining[i];
            let ready = match self.calls.get(&idx) {
                Some(c) => match (&c.drain, c.xc) {
                    (Some(d), Some(id)) => {
                        now >= d.until || queued_toward_other(sw, id, d.gone) == 0
                    }
                    // Another path ended it meanwhile (the other leg went, a port went).
                    _ => {
                        self.draining.swap_remove(i);
                        continue;
                    }
                },
                None => {
                    self.draining.swap_remove(i);
                    continue;
                }
            };
            if !ready {
                i += 1;
                continue;
            }
            self.draining.swap_remove(i);
            let Some(d) = self.calls.get_mut(&idx).and_then(|c| c.drain.take()) else {
                continue;
            };
            self.leg_gone(now, idx, d.gone, &d.cause, sw);
        }
        self.drain_check = (!self.draining.is_empty()).then(|| now + DRAIN_CHECK);
    }

    /// Forgets leg `which` of call `idx` (its VCI freed); the call goes with its last leg.
    fn drop_leg(&mut self, idx: u32, which: Which) {
        let Some(c) = self.calls.get_mut(&idx) else {
            return;
        };
        let leg = match which {
            Which::A => c.a.take(),
            Which::B => c.b.take(),
        };
        let done = c.a.is_none() && c.b.is_none();
        let never_active = !c.connected;
        if let Some(leg) = leg
            && let Some(p) = self.ports.get_mut(&leg.port)
        {
            p.legs.remove(&leg.call);
            #[cfg(feature = "mutants")]
            let keep = crate::mutants::keep_vci_on_release();
            #[cfg(not(feature = "mutants"))]
            let keep = false;
            if let Some(v) = leg.vci
                && !keep
            {
                p.vcis.remove(&v);
            }
        }
        if done {
            self.calls.remove(&idx);
            if never_active {
                self.counters.refused += 1;
            }
        }
    }

    /// Every call with a leg on `port` is cleared: that leg is forgotten, the other
    /// released with cause 27.
    fn clear_port(&mut self, now: Instant, port: PortId, why: &str, sw: &mut Switch) {
        let Some(p) = self.ports.get_mut(&port) else {
            return;
        };
        p.link_up = false;
        let hit: Vec<CallId> = p.legs.keys().copied().collect();
        if hit.is_empty() {
            self.push_log(format!("p{port}: {why}"));
            return;
        }
        self.push_log(format!("p{port}: {why}: {} calls cleared", hit.len()));
        let cause = self.cause(
            CauseValue::DestinationOutOfOrder,
            &format!("{} p{port} {why}", self.config.name),
        );
        for call in hit {
            self.counters.cleared_by_port += 1;
            // A leg is in its port's table exactly while its call has it; a stale entry
            // would be dropped below.
            if let Some((idx, which)) = self.find(port, call) {
                self.leg_gone(now, idx, which, &cause, sw);
            }
        }
        // Whatever the port's signalling still held is gone with it.
        if let Some(p) = self.ports.get_mut(&port) {
            p.legs.clear();
            p.vcis.clear();
        }
    }

    // ---------------------------------------------------------------------------------
    // Routing, VCIs, causes

    fn route(&self, called: &Aesa) -> Result<PortId, Refuse> {
        let best = self
            .config
            .routes
            .iter()
            .filter(|r| r.prefix.matches(called))
            .max_by_key(|r| r.prefix.bits());
        match best {
            Some(Route { port, .. }) => Ok(*port),
            None if self.config.prefix.matches(called) => Err(self.refusal(
                CauseValue::UnallocatedNumber,
                "unallocated",
                format!("{called} is under this switch's prefix but no host has it"),
            )),
            None => Err(self.refusal(
                CauseValue::NoRouteToDestination,
                "no route",
                format!("no route to {called}"),
            )),
        }
    }

    /// Assigns a free VCI on `port` from the configured range.
    fn alloc_vci(&mut self, port: PortId) -> Option<u16> {
        let (first, last) = (self.config.vci_first, self.config.vci_last);
        let p = self.ports.get_mut(&port)?;
        if first > last || p.vcis.len() > usize::from(last - first) {
            return None;
        }
        let mut v = p.next_vci.clamp(first, last);
        loop {
            if p.vcis.insert(v) {
                p.next_vci = if v == last { first } else { v + 1 };
                return Some(v);
            }
            v = if v == last { first } else { v + 1 };
        }
    }

    /// Marks a VCI the peer assigned as used; false if it is not usable.
    fn take_vci(&mut self, port: PortId, vci: u16) -> bool {
        vci >= 32
            && self
                .ports
                .get_mut(&port)
                .is_some_and(|p| p.vcis.insert(vci))
    }

    fn free_vci(&mut self, port: PortId, vci: u16) {
        if let Some(p) = self.ports.get_mut(&port) {
            p.vcis.remove(&vci);
        }
    }

    fn no_vci(&self, port: PortId) -> Refuse {
        self.refusal(
            CauseValue::NoVpciVciAvailable,
            &format!("p{port}: no VCI free"),
            format!(
                "port {port}: every VCI of {}..={} is in use",
                self.config.vci_first, self.config.vci_last
            ),
        )
    }

    /// A refusal whose explanation is `what` after the switch's name.
    fn refusal(&self, value: CauseValue, what: &str, detail: String) -> Refuse {
        Refuse {
            value,
            explanation: format!("{} {what}", self.config.name),
            detail,
        }
    }

    /// What the switch core's refusal of `xc` means for the caller.
    fn switch_refusal(&self, xc: &CrossConnect, e: &SwitchError, sw: &Switch) -> Refuse {
        let detail = format!("{e}");
        match e {
            SwitchError::Admission(
                Refusal::Bandwidth { .. }
                | Refusal::Contract {
                    error: ContractError::PcrAboveLink { .. },
                    ..
                },
            ) => {
                // Which direction did not fit (a→b leaves by b's port, b→a by a's), and
                // what that port has free.
                let mut what = String::new();
                for (params, port) in [(&xc.qos.tx, xc.b.port), (&xc.qos.rx, xc.a.port)] {
                    if let Some(cac) = sw.port_cac(port)
                        && let Err(
                            Refusal::Bandwidth { .. }
                            | Refusal::Contract {
                                error: ContractError::PcrAboveLink { .. },
                                ..
                            },
                        ) = cac.assess(params)
                    {
                        let _ = write!(what, "p{port}: {} c/s free", cac.free());
                        break;
                    }
                }
                // The refusal goes back on the caller's port (`a`), in its UNI version.
                let version = self.ports.get(&xc.a.port).map(|p| p.version);
                let value = match version.unwrap_or(self.config.version) {
                    UniVersion::Uni31 => CauseValue::UserCellRateNotAvailable31,
                    _ => CauseValue::UserCellRateNotAvailable,
                };
                self.refusal(value, &what, detail)
            }
            SwitchError::Admission(Refusal::UbrLimit { max, .. }) => self.refusal(
                CauseValue::ResourceUnavailable,
                &format!("{max} UBR max"),
                detail,
            ),
            SwitchError::TooMany { max } => self.refusal(
                CauseValue::ResourceUnavailable,
                &format!("{max} VCs max"),
                detail,
            ),
            SwitchError::Admission(Refusal::Contract { .. }) | SwitchError::BadContract { .. } => {
                self.refusal(
                    CauseValue::UnsupportedTrafficParams,
                    "bad traffic params",
                    detail,
                )
            }
            SwitchError::Admission(Refusal::Unsupported { class, .. })
            | SwitchError::NoCategory(class) => self.refusal(
                CauseValue::QosUnavailable,
                &format!("no {}", class_name(*class)),
                detail,
            ),
            SwitchError::EndpointInUse { endpoint, .. }
            | SwitchError::BadEndpoint { endpoint, .. } => self.refusal(
                CauseValue::ResourceUnavailable,
                &format!("p{} VC in use", endpoint.port),
                detail,
            ),
            _ => self.refusal(CauseValue::ResourceUnavailable, "switch refused", detail),
        }
    }

    /// A cause of this switch (location LPN) with `explanation` as its diagnostics (ASCII,
    /// at most 28 bytes).
    fn cause(&self, value: CauseValue, explanation: &str) -> Cause {
        let mut c = Cause::new(Location::PrivateLocal, value);
        c.diagnostics = explanation
            .bytes()
            .map(|b| {
                if b.is_ascii_graphic() || b == b' ' {
                    b
                } else {
                    b'?'
                }
            })
            .take(MAX_DIAGNOSTICS)
            .collect();
        c
    }

    /// Refuses the unanswered call `call` on port `a` (RELEASE COMPLETE with the cause and
    /// explanation), logs it.
    fn refuse(&mut self, now: Instant, a: PortId, call: CallId, who: Option<&str>, r: Refuse) {
        let cause = self.cause(r.value, &r.explanation);
        if let Some(p) = self.ports.get_mut(&a) {
            let _ = p.sig.release(now, call, cause.clone());
        }
        self.counters.refused += 1;
        let who = who.map_or_else(|| format!("p{a} {call}"), String::from);
        let explanation = String::from_utf8_lossy(&cause.diagnostics).into_owned();
        self.push_log(format!(
            "{who}: refused with cause {} ({explanation}): {}",
            r.value, r.detail
        ));
    }

    fn push_log(&mut self, line: String) {
        if self.log.len() >= MAX_LOG {
            self.log.pop_front();
            self.counters.log_dropped += 1;
        }
        self.log.push_back(line);
    }
}

/// The class as qos(7) names it.
fn class_name(c: TrafficClass) -> &'static str {
    match c {
        TrafficClass::Ubr => "ubr",
        TrafficClass::Cbr => "cbr",
        TrafficClass::Vbr => "vbr",
        TrafficClass::Abr => "abr",
        TrafficClass::None => "none",
    }
}

/// A command error in a few words.
fn short(e: &CommandError) -> &'static str {
    match e {
        CommandError::Qos(_) => "QoS not signalled",
        CommandError::NoCallRef => "no call ref",
        _ => "SETUP refused",
    }
}

/// Segments `sdu` onto 0.5 and queues its cells on `port`; false if any was refused.
fn send_sdu(now: Instant, sw: &mut Switch, port: PortId, sdu: &[u8]) -> bool {
    let Ok(mut seg) = Segmenter::uni(signalling_vc(), sdu) else {
        return false;
    };
    let mut cell = [0u8; 53];
    while seg.next_cell(&mut cell) {
        if sw.send_signalling(now, port, &cell).is_err() {
            return false;
        }
    }
    true
}

/// The party as an AESA, when it is one.
fn aesa_of(p: &PartyNumber) -> Option<Aesa> {
    match &p.number {
        Number::Aesa(a) => Some(*a),
        _ => None,
    }
}

/// Cells of connection `id` queued from leg `gone`'s side toward the other leg.
fn queued_toward_other(sw: &Switch, id: XcId, gone: Which) -> u64 {
    sw.connection(id).map_or(0, |(_, k)| match gone {
        Which::A => u64::from(k.a_to_b.queued),
        Which::B => u64::from(k.b_to_a.queued),
    })
}

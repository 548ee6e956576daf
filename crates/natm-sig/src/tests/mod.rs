//! State × event tests in virtual time. `recv!` feeds the entity a message from its peer,
//! `send!` takes what it sent (decoded back through the codec) and checks its type,
//! `event!` takes the owner's next event.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use natm_core::{Duration, Instant};

use crate::msg::{self, Inbound, Mt, Out};
use crate::{
    CallEvent, CallId, CallState, Cause, CauseValue, Config, ConnId, Location, Origin, Role,
    SaalEvent, SaalRequest, SetupParams, Uni,
};

mod errors;
mod network;
mod pair;
mod restart;
mod timers;
mod user;

pub(crate) const T0: Instant = Instant::from_nanos(1_000_000_000);

/// Feeds a message from the peer: `recv!(t, Connect, cref, flag, .conn(k), …)`.
macro_rules! recv {
    ($t:expr, $mt:ident, $cref:expr, $flag:expr $(, .$m:ident($v:expr))* $(,)?) => {
        $t.rx(crate::msg::Out::new(crate::msg::Mt::$mt, $cref, $flag)$(.$m($v))*)
    };
}

/// Takes the next message the entity sent and checks its type (`send!(t, Release)`), or
/// checks that it sent nothing (`send!(t)`).
macro_rules! send {
    ($t:expr) => {{
        let m = $t.sent();
        assert!(m.is_none(), "sent nothing, not {m:?}");
    }};
    ($t:expr, $mt:ident) => {{
        let m = $t.sent();
        match m {
            Some(m) if m.mt == crate::msg::Mt::$mt => m,
            other => panic!("expected {} to be sent, got {other:?}", stringify!($mt)),
        }
    }};
}

/// Takes the owner's next event and matches it (`event!(t, CallEvent::LinkUp)`), or checks
/// that there is none (`event!(t)`).
macro_rules! event {
    ($t:expr) => {{
        let e = $t.event();
        assert!(e.is_none(), "no event, not {e:?}");
    }};
    ($t:expr, $p:pat) => {{
        let e = $t.event();
        let Some(e @ $p) = e else {
            panic!("expected {}, got {e:?}", stringify!($p));
        };
        e
    }};
}

pub(crate) use {event, recv, send};

/// One entity and what it produced.
pub(crate) struct T {
    pub u: Uni,
    pub now: Instant,
    pub sent: VecDeque<Inbound>,
    pub saal: VecDeque<SaalRequest>,
    pub events: VecDeque<CallEvent>,
}

impl T {
    /// An entity with the SAAL established and nothing pending.
    pub fn new(role: Role) -> T {
        T::with(Config::new(role))
    }

    pub fn with(config: Config) -> T {
        let mut t = T {
            u: Uni::new(config),
            now: T0,
            sent: VecDeque::new(),
            saal: VecDeque::new(),
            events: VecDeque::new(),
        };
        assert_eq!(t.u.poll_saal(), Some(SaalRequest::Establish));
        t.saal_event(SaalEvent::EstablishConfirm);
        event!(t, CallEvent::LinkUp);
        t
    }

    pub fn drain(&mut self) {
        while let Some(r) = self.u.poll_saal() {
            match r {
                SaalRequest::Data(b) => {
                    let m = msg::parse(&b).expect("what the entity sends parses");
                    assert!(m.problems.is_empty(), "sent with problems: {m:?}");
                    self.sent.push_back(m);
                }
                other => self.saal.push_back(other),
            }
        }
        while let Some(e) = self.u.poll_event() {
            self.events.push_back(e);
        }
    }

    pub fn rx(&mut self, o: Out) {
        self.rx_bytes(&o.emit());
    }

    pub fn rx_bytes(&mut self, b: &[u8]) {
        self.u.handle_saal(self.now, SaalEvent::Data(b.to_vec()));
        self.drain();
    }

    pub fn saal_event(&mut self, e: SaalEvent) {
        self.u.handle_saal(self.now, e);
        self.drain();
    }

    /// Moves time on by `d`, running the timers due on the way one deadline at a time.
    pub fn advance(&mut self, d: Duration) {
        let end = self.now + d;
        while let Some(at) = self.u.poll_timeout() {
            if at > end {
                break;
            }
            self.now = self.now.max(at);
            self.u.handle_timeout(self.now);
            self.drain();
        }
        self.now = end;
    }

    pub fn sent(&mut self) -> Option<Inbound> {
        self.drain();
        self.sent.pop_front()
    }

    pub fn event(&mut self) -> Option<CallEvent> {
        self.drain();
        self.events.pop_front()
    }

    pub fn state(&self, call: CallId) -> CallState {
        self.u.call_state(call)
    }

    /// Nothing sent and no event left over.
    pub fn quiet(&mut self) {
        send!(self);
        event!(self);
    }
}

pub(crate) fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

pub(crate) const K: ConnId = ConnId { vpci: 0, vci: 32 };

pub(crate) fn cause(v: CauseValue) -> Cause {
    Cause::new(Location::User, v)
}

pub(crate) fn normal() -> Cause {
    cause(CauseValue::NormalCallClearing)
}

/// A UBR AAL5 call to an ICD AESA, as atm-facts 5.5's SETUP.
pub(crate) fn params(conn: Option<ConnId>) -> SetupParams {
    use natm_core::qos::{Aal, Pcr, Qos, TrafficClass, TrafficParams};
    let dir = TrafficParams {
        class: TrafficClass::Ubr,
        max_pcr: Pcr::Cps(353_207),
        max_sdu: 9188,
        ..TrafficParams::default()
    };
    let aesa = |last: u8| {
        let mut a = [
            0x47, 0, 5, 0x80, 0xff, 0xe1, 0, 0, 0, 0xf2, 0x1a, 0x3d, 0x5c, 0, 0x20, 0x48, 0x1a,
            0x3d, 0x5c, 0,
        ];
        a[19] = last;
        crate::PartyNumber::aesa(natm_core::addr::Aesa(a))
    };
    SetupParams {
        called: aesa(0),
        called_sub: None,
        calling: Some(aesa(1)),
        calling_sub: None,
        qos: Qos {
            tx: dir,
            rx: dir,
            aal: Aal::Aal5,
        },
        blli: None,
        bhli: None,
        conn,
    }
}

/// The flag of a message the peer sends for `call`.
pub(crate) fn peer_flag(call: CallId) -> bool {
    call.origin == Origin::Local
}

/// The cause value of a decoded message.
pub(crate) fn cv(m: &Inbound) -> Option<CauseValue> {
    m.cause.as_ref().map(|c| c.value)
}

/// Moves `t` (user side) to `state` with one call; gives the call. Outgoing states (U1,
/// U3, U10 through U3) use a call this side started; incoming ones (U6, U9, U8) the peer's.
pub(crate) fn user_in(state: u8) -> (T, CallId) {
    let mut t = T::new(Role::User);
    let call = match state {
        1 | 3 | 10 | 11 => {
            let call = t.u.setup(t.now, &params(None)).unwrap();
            send!(t, Setup);
            if state >= 3 {
                recv!(t, CallProceeding, call.cref, true, .conn(K));
                event!(t, CallEvent::Proceeding { .. });
            }
            if state >= 10 {
                recv!(t, Connect, call.cref, true, .conn(K));
                send!(t, ConnectAck);
                event!(t, CallEvent::Connected { .. });
            }
            if state == 11 {
                t.u.release(t.now, call, normal()).unwrap();
                send!(t, Release);
            }
            call
        }
        6 | 9 | 8 => {
            t.rx_bytes(&msg::setup(7, &params(Some(K))).unwrap());
            let e = event!(t, CallEvent::Setup { .. });
            let CallEvent::Setup { call, .. } = e else {
                unreachable!()
            };
            if state == 9 {
                t.u.proceed(t.now, call, None).unwrap();
                send!(t, CallProceeding);
            }
            if state == 8 {
                t.u.connect(t.now, call, None).unwrap();
                send!(t, Connect);
            }
            call
        }
        _ => panic!("no helper for U{state}"),
    };
    assert_eq!(t.state(call).code(), state);
    t.quiet();
    (t, call)
}

/// Moves `t` (network side) to `state` with one call. N1, N3 and N10 use the user's call
/// (N10 through N3 and the network's CONNECT); N6, N9 and N11 the network's own.
pub(crate) fn network_in(state: u8) -> (T, CallId) {
    let mut t = T::new(Role::Network);
    let call = match state {
        1 | 3 | 10 => {
            t.rx_bytes(&msg::setup(5, &params(None)).unwrap());
            let e = event!(t, CallEvent::Setup { .. });
            let CallEvent::Setup { call, .. } = e else {
                unreachable!()
            };
            if state >= 3 {
                t.u.proceed(t.now, call, Some(K)).unwrap();
                send!(t, CallProceeding);
            }
            if state == 10 {
                t.u.connect(t.now, call, None).unwrap();
                send!(t, Connect);
                event!(t, CallEvent::Connected { .. });
            }
            call
        }
        6 | 9 | 11 => {
            let call = t.u.setup(t.now, &params(Some(K))).unwrap();
            send!(t, Setup);
            if state >= 9 {
                recv!(t, CallProceeding, call.cref, true);
                event!(t, CallEvent::Proceeding { .. });
            }
            if state == 11 {
                t.u.release(t.now, call, normal()).unwrap();
                send!(t, Release);
            }
            call
        }
        _ => panic!("no helper for N{state}"),
    };
    assert_eq!(t.state(call).code(), state);
    t.quiet();
    (t, call)
}

#[test]
fn starts_by_establishing_the_saal() {
    let mut u = Uni::new(Config::new(Role::User));
    assert_eq!(u.poll_saal(), Some(SaalRequest::Establish));
    assert_eq!(u.poll_saal(), None);
    assert!(!u.link_up());
    u.handle_saal(T0, SaalEvent::EstablishIndication);
    assert!(u.link_up());
    assert_eq!(u.poll_event(), Some(CallEvent::LinkUp));
    let _: Vec<u8> = Vec::new();
}

/// The message columns of the state tables below, in order.
pub(crate) const COLUMNS: [Mt; 10] = [
    Mt::CallProceeding,
    Mt::Alerting,
    Mt::Connect,
    Mt::ConnectAck,
    Mt::Release,
    Mt::ReleaseComplete,
    Mt::StatusEnquiry,
    Mt::Setup,
    Mt::Notify,
    // ADD PARTY: point-to-multipoint, not implemented here.
    Mt::Other(0x80),
];

/// Runs one row of a state table: in `state` (reached by `reach`), each message of
/// [`COLUMNS`] from the peer must give the outcome written in `row`:
/// `-` nothing; `101`, `97`, `30` a STATUS with that cause, state kept; `>n` nothing sent,
/// state n; `RC>0` RELEASE COMPLETE sent, call gone; `CA>10` CONNECT ACKNOWLEDGE sent, U10.
pub(crate) fn table_row(reach: fn(u8) -> (T, CallId), state: u8, row: [&str; 10]) {
    for (mt, want) in COLUMNS.into_iter().zip(row) {
        let (mut t, call) = reach(state);
        let flag = peer_flag(call);
        let what = alloc::format!("state {state}, {mt:?}: expected {want}");
        match mt {
            Mt::Setup => t.rx_bytes(&msg::setup_with_flag(call.cref, flag, &params(Some(K)))),
            // Answers to SETUP name the connection (mandatory in the network's first one).
            Mt::CallProceeding | Mt::Alerting | Mt::Connect => {
                t.rx(Out::new(mt, call.cref, flag).conn(K))
            }
            _ => t.rx(Out::new(mt, call.cref, flag)),
        }
        let (sent, next) = match want.split_once('>') {
            Some((s, n)) => (s, n.parse::<u8>().unwrap()),
            None => (want, state),
        };
        match sent {
            "-" | "" => send!(t),
            "RC" => {
                send!(t, ReleaseComplete);
            }
            "CA" => {
                send!(t, ConnectAck);
            }
            code => {
                let m = send!(t, Status);
                let code: u8 = code.parse().unwrap();
                assert_eq!(cv(&m).map(|c| c.code()), Some(code), "{what}");
                assert_eq!(m.call_state, Some(state), "{what}");
            }
        }
        assert_eq!(t.state(call).code(), next, "{what}");
        match next {
            _ if next == state => event!(t),
            0 => {
                event!(t, CallEvent::Released { .. });
                assert_eq!(t.u.call_count(), 0, "{what}: reference given back");
            }
            10 => {
                event!(t, CallEvent::Connected { .. });
            }
            _ => {
                event!(t, CallEvent::Proceeding { .. });
            }
        }
        t.quiet();
    }
}

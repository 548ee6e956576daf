//! The user side's state table (Q.2931 §5.1–5.4; UNI 3.1 §5.5): every message from the
//! network in every state, every command in every state.

use super::*;
use crate::CommandError;

#[test]
fn messages_in_every_state() {
    //                 CALL PROC ALERTING CONNECT  CONN ACK  RELEASE  REL COMP STAT ENQ SETUP NOTIFY ADD PARTY
    table_row(
        user_in,
        1,
        [
            ">3", ">3", "CA>10", "101", "RC>0", ">0", "30", "-", "-", "97",
        ],
    );
    table_row(
        user_in,
        3,
        [
            "101", "-", "CA>10", "101", "RC>0", ">0", "30", "-", "-", "97",
        ],
    );
    table_row(
        user_in,
        6,
        [
            "101", "101", "101", "101", "RC>0", ">0", "30", "-", "-", "97",
        ],
    );
    table_row(
        user_in,
        9,
        [
            "101", "101", "101", "101", "RC>0", ">0", "30", "-", "-", "97",
        ],
    );
    table_row(
        user_in,
        8,
        [
            "101", "101", "101", ">10", "RC>0", ">0", "30", "-", "-", "97",
        ],
    );
    table_row(
        user_in,
        10,
        [
            "101", "101", "101", "101", "RC>0", ">0", "30", "-", "-", "97",
        ],
    );
    // U11: RELEASE is the clear collision (§5.4.5): no RELEASE COMPLETE.
    table_row(
        user_in,
        11,
        ["101", "101", "101", "101", ">0", ">0", "30", "-", "-", "97"],
    );
}

/// The commands the owner can give, and what each does in each state: `proceed`,
/// `connect`, `release`.
#[test]
fn commands_in_every_state() {
    for state in [1u8, 3, 6, 8, 9, 10, 11] {
        // proceed: only U6 → U9.
        let (mut t, call) = user_in(state);
        let r = t.u.proceed(t.now, call, None);
        if state == 6 {
            r.unwrap();
            send!(t, CallProceeding);
            assert_eq!(t.state(call), CallState::IncomingCallProceeding);
        } else {
            assert_eq!(r, Err(CommandError::WrongState(t.state(call))));
            t.quiet();
        }
        // connect: U6, U9 → U8 with T313.
        let (mut t, call) = user_in(state);
        let r = t.u.connect(t.now, call, None);
        if state == 6 || state == 9 {
            r.unwrap();
            send!(t, Connect);
            assert_eq!(t.state(call), CallState::ConnectRequest);
            recv!(t, ConnectAck, call.cref, false);
            let e = event!(t, CallEvent::Connected { .. });
            assert_eq!(
                e,
                CallEvent::Connected {
                    call,
                    conn: Some(K)
                }
            );
        } else {
            assert!(r.is_err());
            t.quiet();
        }
        // release: U6 refuses with RELEASE COMPLETE; U11 cannot; the rest RELEASE → U11.
        let (mut t, call) = user_in(state);
        let r = t.u.release(t.now, call, cause(CauseValue::UserBusy));
        match state {
            6 => {
                r.unwrap();
                let m = send!(t, ReleaseComplete);
                assert_eq!(cv(&m), Some(CauseValue::UserBusy));
                event!(t, CallEvent::Released { .. });
                assert_eq!(t.u.call_count(), 0);
            }
            11 => assert!(r.is_err()),
            _ => {
                r.unwrap();
                let m = send!(t, Release);
                assert_eq!(cv(&m), Some(CauseValue::UserBusy));
                assert_eq!(t.state(call), CallState::ReleaseRequest);
                recv!(t, ReleaseComplete, call.cref, peer_flag(call));
                let e = event!(t, CallEvent::Released { .. });
                let CallEvent::Released { cause, by, .. } = e else {
                    unreachable!()
                };
                assert_eq!(
                    (cause.value, by),
                    (CauseValue::UserBusy, crate::ReleaseOrigin::Peer)
                );
                assert_eq!(t.u.call_count(), 0);
            }
        }
        t.quiet();
    }
}

#[test]
fn outgoing_call_end_to_end() {
    let mut t = T::new(Role::User);
    let call = t.u.setup(t.now, &params(None)).unwrap();
    assert_eq!(call.origin, Origin::Local);
    let m = send!(t, Setup);
    assert!(!m.flag, "the originator's flag is 0");
    assert_eq!(t.u.call_refs_allocated(), 1);
    recv!(t, CallProceeding, call.cref, true, .conn(K));
    let e = event!(t, CallEvent::Proceeding { .. });
    assert_eq!(
        e,
        CallEvent::Proceeding {
            call,
            conn: Some(K)
        }
    );
    recv!(t, Connect, call.cref, true);
    let m = send!(t, ConnectAck);
    assert!(!m.flag);
    event!(t, CallEvent::Connected { conn: Some(K), .. });
    assert_eq!(t.u.conn_id(call), Some(K));
    t.u.release(t.now, call, normal()).unwrap();
    send!(t, Release);
    recv!(t, ReleaseComplete, call.cref, true);
    event!(t, CallEvent::Released { .. });
    assert_eq!((t.u.call_count(), t.u.call_refs_allocated()), (0, 0));
    t.quiet();
}

#[test]
fn incoming_call_gets_the_networks_parameters() {
    let mut t = T::new(Role::User);
    t.rx_bytes(&msg::setup(99, &params(Some(K))).unwrap());
    let e = event!(t, CallEvent::Setup { .. });
    let CallEvent::Setup { call, setup } = e else {
        unreachable!()
    };
    assert_eq!(
        call,
        CallId {
            origin: Origin::Remote,
            cref: 99
        }
    );
    assert_eq!(setup.params.conn, Some(K));
    assert_eq!(setup.params, params(Some(K)));
    t.u.connect(t.now, call, None).unwrap();
    let m = send!(t, Connect);
    assert!(m.flag, "answers carry flag 1");
}

#[test]
fn call_references_are_allocated_apart_and_reused() {
    let mut t = T::new(Role::User);
    let a = t.u.setup(t.now, &params(None)).unwrap();
    let b = t.u.setup(t.now, &params(None)).unwrap();
    assert_ne!(a.cref, b.cref);
    assert!(a.cref > 0 && a.cref <= 0x7F_FFFF && b.cref <= 0x7F_FFFF);
    // The peer may use the same value for its own call at the same time.
    t.rx_bytes(&msg::setup(a.cref, &params(Some(K))).unwrap());
    event!(t, CallEvent::Setup { .. });
    assert_eq!(t.u.call_count(), 3);
    assert_eq!(t.u.call_refs_allocated(), 2);
    // The allocator wraps below 0x7F_FFFF.
    let mut c = Config::new(Role::User);
    c.first_call_ref = 0x7F_FFFE;
    let mut t = T::with(c);
    let x = t.u.setup(t.now, &params(None)).unwrap();
    let y = t.u.setup(t.now, &params(None)).unwrap();
    assert_eq!((x.cref, y.cref), (0x7F_FFFE, 1));
}

#[test]
fn uni31_peers_get_no_uni40_traffic_negotiation() {
    let mut c = Config::new(Role::User);
    c.version = crate::UniVersion::Uni31;
    let mut t = T::with(c);
    let mut p = params(None);
    p.qos.tx.pcr = natm_core::qos::Pcr::Cps(1000);
    let r = t.u.setup(t.now, &p);
    assert!(matches!(r, Err(crate::CommandError::Qos(_))), "{r:?}");
    assert_eq!(t.u.call_count(), 0);
    t.quiet();
    // What UNI 3.1 can say goes out.
    t.u.setup(t.now, &params(None)).unwrap();
    send!(t, Setup);
}

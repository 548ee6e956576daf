//! The network side's state table (Q.2931 §5.1–5.4 network side; UNI 3.1 §5.5): every
//! message from the user in every state, every command in every state.

use super::*;
use crate::CommandError;

#[test]
fn messages_in_every_state() {
    //                    CALL PROC ALERTING CONNECT  CONN ACK RELEASE  REL COMP STAT ENQ SETUP NOTIFY ADD PARTY
    table_row(
        network_in,
        1,
        [
            "101", "101", "101", "101", "RC>0", ">0", "30", "-", "-", "97",
        ],
    );
    table_row(
        network_in,
        3,
        [
            "101", "101", "101", "101", "RC>0", ">0", "30", "-", "-", "97",
        ],
    );
    table_row(
        network_in,
        6,
        [
            ">9", ">9", "CA>10", "101", "RC>0", ">0", "30", "-", "-", "97",
        ],
    );
    table_row(
        network_in,
        9,
        [
            "101", "-", "CA>10", "101", "RC>0", ">0", "30", "-", "-", "97",
        ],
    );
    // N10 of the user's call: its CONNECT ACKNOWLEDGE answers the network's CONNECT.
    table_row(
        network_in,
        10,
        ["101", "101", "101", "-", "RC>0", ">0", "30", "-", "-", "97"],
    );
    table_row(
        network_in,
        11,
        ["101", "101", "101", "101", ">0", ">0", "30", "-", "-", "97"],
    );
}

#[test]
fn commands_in_every_state() {
    for state in [1u8, 3, 6, 9, 10, 11] {
        // proceed: N1 → N3, naming the connection.
        let (mut t, call) = network_in(state);
        if state == 1 {
            assert_eq!(
                t.u.proceed(t.now, call, None),
                Err(CommandError::MissingConnId)
            );
            t.quiet();
            t.u.proceed(t.now, call, Some(K)).unwrap();
            let m = send!(t, CallProceeding);
            assert_eq!((m.conn, m.flag), (Some(K), true));
            assert_eq!(t.state(call), CallState::OutgoingCallProceeding);
        } else {
            let r = t.u.proceed(t.now, call, Some(K));
            assert_eq!(r, Err(CommandError::WrongState(t.state(call))));
            t.quiet();
        }
        // connect: N1, N3 → N10 at once.
        let (mut t, call) = network_in(state);
        let r = t.u.connect(t.now, call, Some(K));
        if state == 1 || state == 3 {
            r.unwrap();
            let m = send!(t, Connect);
            assert!(m.conn.is_some(), "CONNECT names the connection");
            assert_eq!(t.state(call), CallState::Active);
            event!(t, CallEvent::Connected { conn: Some(K), .. });
        } else {
            assert!(r.is_err());
        }
        t.quiet();
        // release: N1 refuses with RELEASE COMPLETE; N11 cannot; the rest RELEASE → N11.
        let (mut t, call) = network_in(state);
        let r =
            t.u.release(t.now, call, cause(CauseValue::NoRouteToDestination));
        match state {
            1 => {
                r.unwrap();
                let m = send!(t, ReleaseComplete);
                assert_eq!(cv(&m), Some(CauseValue::NoRouteToDestination));
                event!(
                    t,
                    CallEvent::Released {
                        by: crate::ReleaseOrigin::Local,
                        ..
                    }
                );
            }
            11 => assert!(r.is_err()),
            _ => {
                r.unwrap();
                send!(t, Release);
                assert_eq!(t.state(call), CallState::ReleaseRequest);
                recv!(t, ReleaseComplete, call.cref, peer_flag(call));
                event!(t, CallEvent::Released { .. });
            }
        }
        assert!(state == 11 || t.u.call_count() == 0);
        t.quiet();
    }
}

#[test]
fn network_setup_needs_a_connection() {
    let mut t = T::new(Role::Network);
    assert_eq!(
        t.u.setup(t.now, &params(None)),
        Err(CommandError::MissingConnId)
    );
    t.quiet();
    let call = t.u.setup(t.now, &params(Some(K))).unwrap();
    let m = send!(t, Setup);
    assert_eq!(m.setup.as_ref().and_then(|s| s.params.conn), Some(K));
    // The user accepts straight away with CONNECT: N6 → N8 → N10, CONNECT ACK sent.
    recv!(t, Connect, call.cref, true);
    send!(t, ConnectAck);
    event!(t, CallEvent::Connected { conn: Some(K), .. });
    assert_eq!(t.state(call), CallState::Active);
}

#[test]
fn incoming_setup_is_reported_with_its_parameters() {
    let mut t = T::new(Role::Network);
    t.rx_bytes(&msg::setup(42, &params(None)).unwrap());
    let e = event!(t, CallEvent::Setup { .. });
    let CallEvent::Setup { call, setup } = e else {
        unreachable!()
    };
    assert_eq!(
        call,
        CallId {
            origin: Origin::Remote,
            cref: 42
        }
    );
    assert_eq!(setup.params, params(None));
    assert!(setup.qos_mapped);
    assert_eq!(t.state(call), CallState::CallInitiated);
}

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

/// What the entity sends, byte for byte against atm-facts 5.5's vectors (which Wireshark
/// decodes).
#[test]
fn atm_facts_vectors() {
    fn data(u: &mut Uni) -> Vec<u8> {
        match u.poll_saal() {
            Some(crate::SaalRequest::Data(b)) => b,
            other => panic!("expected a message, got {other:?}"),
        }
    }
    let mut u = Uni::new(Config::new(Role::User));
    assert_eq!(u.poll_saal(), Some(crate::SaalRequest::Establish));
    u.handle_saal(T0, crate::SaalEvent::EstablishConfirm);
    // Our call 1: CONNECT ACK, STATUS ENQUIRY and RELEASE cause 16 from the originator.
    let call = u.setup(T0, &params(None)).unwrap();
    assert_eq!(call.cref, 1);
    let _setup = data(&mut u);
    let proceeding = [
        0x09, 0x03, 0x80, 0, 1, 0x02, 0x80, 0, 9, 0x5a, 0x80, 0, 5, 0x88, 0, 0, 0, 0x20,
    ];
    u.handle_saal(T0, crate::SaalEvent::Data(proceeding.to_vec()));
    let mut connect = proceeding;
    connect[5] = 0x07;
    u.handle_saal(T0, crate::SaalEvent::Data(connect.to_vec()));
    assert_eq!(data(&mut u), [0x09, 0x03, 0, 0, 1, 0x0f, 0x80, 0, 0]);
    u.status_enquiry(T0, call).unwrap();
    assert_eq!(data(&mut u), [0x09, 0x03, 0, 0, 1, 0x75, 0x80, 0, 0]);
    u.release(T0, call, normal()).unwrap();
    assert_eq!(
        data(&mut u),
        [
            0x09, 0x03, 0, 0, 1, 0x4d, 0x80, 0, 6, 0x08, 0x80, 0, 2, 0x80, 0x90
        ]
    );
    // The peer's STATUS ENQUIRY for its call 1, active here: STATUS cause 30, U10.
    let mut u = Uni::new(Config::new(Role::User));
    u.handle_saal(T0, crate::SaalEvent::EstablishConfirm);
    let _ = u.poll_saal();
    u.handle_saal(
        T0,
        crate::SaalEvent::Data(msg::setup(1, &params(Some(K))).unwrap()),
    );
    while u.poll_event().is_some() {}
    let theirs = CallId {
        origin: Origin::Remote,
        cref: 1,
    };
    u.connect(T0, theirs, None).unwrap();
    let _connect = data(&mut u);
    u.handle_saal(
        T0,
        crate::SaalEvent::Data(alloc::vec![0x09, 0x03, 0, 0, 1, 0x0f, 0x80, 0, 0]),
    );
    assert_eq!(u.call_state(theirs), CallState::Active);
    u.handle_saal(
        T0,
        crate::SaalEvent::Data(alloc::vec![0x09, 0x03, 0, 0, 1, 0x75, 0x80, 0, 0]),
    );
    assert_eq!(
        data(&mut u),
        [
            0x09, 0x03, 0x80, 0, 1, 0x7d, 0x80, 0, 0x0b, 0x08, 0x80, 0, 2, 0x80, 0x9e, 0x14, 0x80,
            0, 1, 0x0a
        ]
    );
    // RESTART of every VC, and the peer's acknowledgement.
    u.restart(T0, crate::Restart::All).unwrap();
    assert_eq!(
        data(&mut u),
        [
            0x09, 0x03, 0, 0, 0, 0x46, 0x80, 0, 5, 0x79, 0x80, 0, 1, 0x82
        ]
    );
    // The peer's RESTART is acknowledged with atm-facts' bytes.
    let mut n = Uni::new(Config::new(Role::Network));
    n.handle_saal(T0, crate::SaalEvent::EstablishConfirm);
    let _ = n.poll_saal();
    n.handle_saal(
        T0,
        crate::SaalEvent::Data(alloc::vec![
            0x09, 0x03, 0, 0, 0, 0x46, 0x80, 0, 5, 0x79, 0x80, 0, 1, 0x82
        ]),
    );
    assert_eq!(
        data(&mut n),
        [
            0x09, 0x03, 0x80, 0, 0, 0x4e, 0x80, 0, 5, 0x79, 0x80, 0, 1, 0x82
        ]
    );
}

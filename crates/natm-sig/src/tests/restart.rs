//! Restart procedures (Q.2931 §5.5, §2.3 REST0/REST1/REST2), both sides, each class.

use super::*;
use crate::{ReleaseOrigin, Restart, RestartState};

#[test]
fn restart_all_clears_every_call_and_is_acknowledged() {
    for role in [Role::User, Role::Network] {
        let (mut t, call) = if role == Role::User {
            user_in(10)
        } else {
            network_in(10)
        };
        let other =
            t.u.setup(t.now, &params(Some(ConnId { vpci: 0, vci: 40 })))
                .unwrap();
        send!(t, Setup);
        t.u.restart(t.now, Restart::All).unwrap();
        let mut gone = alloc::vec![];
        for _ in 0..2 {
            let e = event!(
                t,
                CallEvent::Released {
                    by: ReleaseOrigin::Local,
                    ..
                }
            );
            let CallEvent::Released { call, cause, .. } = e else {
                unreachable!()
            };
            assert_eq!(cause.value, CauseValue::TemporaryFailure);
            gone.push(call);
        }
        gone.sort();
        let mut want = alloc::vec![call, other];
        want.sort();
        assert_eq!(gone, want);
        let m = send!(t, Restart);
        assert_eq!((m.cref, m.flag, m.restart), (0, false, Some(Restart::All)));
        assert_eq!(t.u.restart_states().0, RestartState::Requested);
        assert_eq!(t.u.call_count(), 0);
        // A RESTART ACK with the wrong flag is not the answer.
        recv!(t, RestartAck, 0, false, .restart(Restart::All));
        assert_eq!(t.u.restart_states().0, RestartState::Requested);
        send!(t, Status);
        recv!(t, RestartAck, 0, true, .restart(Restart::All));
        event!(t, CallEvent::RestartDone { what: Restart::All });
        assert_eq!(t.u.restart_states().0, RestartState::Null);
        assert_eq!(t.u.poll_timeout(), None);
        t.quiet();
    }
}

#[test]
fn restart_of_one_vc_clears_only_its_call() {
    let (mut t, call) = network_in(10);
    let other =
        t.u.setup(t.now, &params(Some(ConnId { vpci: 0, vci: 40 })))
            .unwrap();
    send!(t, Setup);
    t.u.restart(t.now, Restart::Vc { vpci: 0, vci: 40 })
        .unwrap();
    let e = event!(t, CallEvent::Released { .. });
    assert!(matches!(e, CallEvent::Released { call, .. } if call == other));
    let m = send!(t, Restart);
    assert_eq!(m.restart, Some(Restart::Vc { vpci: 0, vci: 40 }));
    assert_eq!(m.conn, Some(ConnId { vpci: 0, vci: 40 }));
    assert_eq!(t.state(call), CallState::Active);
}

#[test]
fn received_restart_each_class() {
    let cases = [
        (Restart::Vc { vpci: 0, vci: 32 }, true),
        (Restart::Vc { vpci: 0, vci: 33 }, false),
        (Restart::Vp { vpci: 0 }, true),
        (Restart::Vp { vpci: 1 }, false),
        (Restart::All, true),
    ];
    for (what, hits) in cases {
        for role in [Role::User, Role::Network] {
            let (mut t, call) = if role == Role::User {
                user_in(10)
            } else {
                network_in(10)
            };
            recv!(t, Restart, 0, false, .restart(what));
            if hits {
                let e = event!(t, CallEvent::Released { .. });
                let CallEvent::Released { cause, .. } = e else {
                    unreachable!()
                };
                assert_eq!(cause.value, CauseValue::TemporaryFailure);
                assert_eq!(t.state(call), CallState::Null);
            } else {
                assert_eq!(t.state(call), CallState::Active);
            }
            let m = send!(t, RestartAck);
            assert_eq!((m.cref, m.flag, m.restart), (0, true, Some(what)));
            event!(t, CallEvent::Restarted { .. });
            t.quiet();
        }
    }
}

#[test]
fn a_setup_not_yet_given_a_vc_survives_a_restart_of_all_vcs() {
    // The network restarts everything when its SAAL comes up; a user's first SETUP may
    // cross that RESTART. The call has no VC yet, so no VC's restart covers it.
    let (mut t, call) = user_in(1);
    recv!(t, Restart, 0, false, .restart(Restart::All));
    let m = send!(t, RestartAck);
    assert_eq!(m.restart, Some(Restart::All));
    event!(t, CallEvent::Restarted { .. });
    assert_eq!(t.state(call), CallState::CallInitiated);
    recv!(t, CallProceeding, call.cref, true, .conn(K));
    event!(t, CallEvent::Proceeding { .. });
    recv!(t, Connect, call.cref, true, .conn(K));
    send!(t, ConnectAck);
    event!(t, CallEvent::Connected { .. });
    // Once it has its VC, the same restart clears it.
    recv!(t, Restart, 0, false, .restart(Restart::All));
    event!(t, CallEvent::Released { .. });
    assert_eq!(t.state(call), CallState::Null);
}

#[test]
fn restart_without_its_connection_identifier_is_reported() {
    let mut t = T::new(Role::User);
    // Class 0 with no connection identifier.
    let mut o = Out::new(Mt::Restart, 0, false).restart(Restart::All);
    o.restart = None;
    let mut b = o.emit();
    // Append a restart indicator of class 0 by hand: 79 80 00 01 80.
    b.extend_from_slice(&[0x79, 0x80, 0x00, 0x01, 0x80]);
    let len = (b.len() - 9) as u16;
    b[7..9].copy_from_slice(&len.to_be_bytes());
    t.rx_bytes(&b);
    let m = send!(t, Status);
    assert_eq!(cv(&m), Some(CauseValue::MandatoryIeMissing));
    assert_eq!((m.cref, m.flag), (0, true));
    // No restart indicator at all.
    recv!(t, Restart, 0, false);
    let m = send!(t, Status);
    assert_eq!(cv(&m), Some(CauseValue::MandatoryIeMissing));
    t.quiet();
}

#[test]
fn rest2_refuses_new_calls_until_the_owner_answers() {
    let mut c = Config::new(Role::Network);
    c.restart_response = crate::RestartResponse::Owner;
    let mut t = T::with(c);
    recv!(t, Restart, 0, false, .restart(Restart::All));
    event!(t, CallEvent::RestartIndication { .. });
    // A duplicate RESTART while in REST2 changes nothing.
    recv!(t, Restart, 0, false, .restart(Restart::All));
    t.quiet();
    t.rx_bytes(&msg::setup(3, &params(None)).unwrap());
    let m = send!(t, ReleaseComplete);
    assert_eq!(cv(&m), Some(CauseValue::TemporaryFailure));
    event!(t);
    // STATUS ENQUIRY on the global reference reports REST2.
    recv!(t, StatusEnquiry, 0, false);
    let m = send!(t, Status);
    assert_eq!(m.call_state, Some(RestartState::Indicated.code()));
    t.u.restart_response(t.now).unwrap();
    send!(t, RestartAck);
    assert_eq!(
        t.u.restart_states(),
        (RestartState::Null, RestartState::Null)
    );
}

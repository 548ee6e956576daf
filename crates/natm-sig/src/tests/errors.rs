//! Q.2931 §5.6 error handling, row by row: what a malformed or unexpected message does,
//! and that the call stays where the standard keeps it.

use super::*;
use crate::msg::parse;

#[test]
fn headers_that_are_not_q2931_are_dropped() {
    let mut t = T::new(Role::User);
    let good = Out::new(Mt::StatusEnquiry, 5, false).emit();
    let mut bad_pd = good.clone();
    bad_pd[0] = 0x08;
    let mut bad_crlen = good.clone();
    bad_crlen[1] = 2;
    let mut bad_len = good.clone();
    bad_len[8] = 9;
    for b in [
        &bad_pd[..],
        &bad_crlen[..],
        &bad_len[..],
        &good[..4],
        &[][..],
    ] {
        t.rx_bytes(b);
        t.quiet();
    }
    assert_eq!(t.u.counters().rx_dropped, 5);
}

#[test]
fn unknown_call_references() {
    // §5.6.3.2 a–g, each message type on a reference with no call.
    type Case = (Mt, bool, Option<(Mt, CauseValue)>);
    let cases: [Case; 10] = [
        (
            Mt::Release,
            false,
            Some((Mt::ReleaseComplete, CauseValue::InvalidCallRef)),
        ),
        (Mt::ReleaseComplete, false, None),
        (
            Mt::StatusEnquiry,
            false,
            Some((Mt::Status, CauseValue::ResponseToStatusEnquiry)),
        ),
        (
            Mt::Connect,
            true,
            Some((Mt::ReleaseComplete, CauseValue::InvalidCallRef)),
        ),
        (
            Mt::CallProceeding,
            true,
            Some((Mt::ReleaseComplete, CauseValue::InvalidCallRef)),
        ),
        (
            Mt::ConnectAck,
            false,
            Some((Mt::ReleaseComplete, CauseValue::InvalidCallRef)),
        ),
        (
            Mt::Alerting,
            true,
            Some((Mt::ReleaseComplete, CauseValue::InvalidCallRef)),
        ),
        (
            Mt::Notify,
            false,
            Some((Mt::ReleaseComplete, CauseValue::InvalidCallRef)),
        ),
        (
            Mt::Other(0x80),
            false,
            Some((Mt::ReleaseComplete, CauseValue::InvalidCallRef)),
        ),
        (
            Mt::Restart,
            false,
            Some((Mt::ReleaseComplete, CauseValue::InvalidCallRef)),
        ),
    ];
    for role in [Role::User, Role::Network] {
        for (mt, flag, want) in cases {
            let mut t = T::new(role);
            t.rx(Out::new(mt, 77, flag));
            match want {
                None => send!(t),
                Some((rmt, c)) => {
                    let m = t.sent().unwrap();
                    assert_eq!((m.mt, cv(&m)), (rmt, Some(c)), "{mt:?}");
                    assert_eq!((m.cref, m.flag), (77, !flag), "answers flip the flag");
                    if rmt == Mt::Status {
                        assert_eq!(m.call_state, Some(0));
                    }
                }
            }
            assert_eq!(t.u.call_count(), 0);
            t.quiet();
        }
    }
}

#[test]
fn status_on_an_unknown_reference() {
    let mut t = T::new(Role::User);
    // Peer thinks the call is active: RELEASE COMPLETE 101.
    recv!(t, Status, 9, true, .cause(cause(CauseValue::ResponseToStatusEnquiry)), .call_state(10));
    let m = send!(t, ReleaseComplete);
    assert_eq!(cv(&m), Some(CauseValue::MessageNotCompatible));
    // Peer in Null too: nothing.
    recv!(t, Status, 9, true, .cause(cause(CauseValue::ResponseToStatusEnquiry)), .call_state(0));
    t.quiet();
}

#[test]
fn setup_with_our_flag_is_ignored() {
    let mut t = T::new(Role::Network);
    t.rx_bytes(&msg::setup_with_flag(3, true, &params(None)));
    t.quiet();
    assert_eq!(t.u.call_count(), 0);
}

#[test]
fn global_reference_takes_only_restart_and_status() {
    for mt in [Mt::Setup, Mt::Connect, Mt::Release, Mt::CallProceeding] {
        let mut t = T::new(Role::User);
        t.rx(Out::new(mt, 0, false));
        let m = send!(t, Status);
        assert_eq!(cv(&m), Some(CauseValue::InvalidCallRef), "{mt:?}");
        assert_eq!((m.cref, m.call_state), (0, Some(0)));
        t.quiet();
    }
    // STATUS on the global reference is reported, nothing sent.
    let mut t = T::new(Role::User);
    recv!(t, Status, 0, true, .cause(cause(CauseValue::InvalidCallRef)), .call_state(0));
    event!(t, CallEvent::Status { call: None, .. });
    t.quiet();
}

/// Sets the message action indicator of `b` (byte 6).
fn with_action(mut b: alloc::vec::Vec<u8>, action: u8) -> alloc::vec::Vec<u8> {
    b[6] = 0x90 | action;
    b
}

#[test]
fn message_action_indicators_on_unexpected_messages() {
    // CONNECT ACK in U10 with explicit instructions: clear, ignore, report.
    let (mut t, call) = user_in(10);
    t.rx_bytes(&with_action(
        Out::new(Mt::ConnectAck, call.cref, true).emit(),
        0,
    ));
    let m = send!(t, Release);
    assert_eq!(cv(&m), Some(CauseValue::MessageNotCompatible));
    assert_eq!(t.state(call), CallState::ReleaseRequest);

    let (mut t, call) = user_in(10);
    t.rx_bytes(&with_action(
        Out::new(Mt::ConnectAck, call.cref, true).emit(),
        1,
    ));
    t.quiet();
    assert_eq!(t.state(call), CallState::Active);

    let (mut t, call) = user_in(10);
    t.rx_bytes(&with_action(
        Out::new(Mt::Other(0x88), call.cref, true).emit(),
        2,
    ));
    let m = send!(t, Status);
    assert_eq!(cv(&m), Some(CauseValue::MessageTypeNonExistent));
    assert_eq!(m.cause.unwrap().diagnostics, [0x88]);
    assert_eq!(t.state(call), CallState::Active);
}

/// `b` with one more IE appended (`id`, octet 2, contents).
fn with_ie(mut b: alloc::vec::Vec<u8>, id: u8, flags: u8, contents: &[u8]) -> alloc::vec::Vec<u8> {
    b.extend_from_slice(&[id, flags]);
    b.extend_from_slice(&(contents.len() as u16).to_be_bytes());
    b.extend_from_slice(contents);
    let len = (b.len() - 9) as u16;
    b[7..9].copy_from_slice(&len.to_be_bytes());
    b
}

#[test]
fn mandatory_ie_missing_or_wrong() {
    // SETUP without its called party number: RELEASE COMPLETE 96, no call.
    let mut p = msg::setup_message(8, false, &params(None)).unwrap();
    p.called = None;
    let mut t = T::new(Role::Network);
    t.rx_bytes(&p.to_vec());
    let m = send!(t, ReleaseComplete);
    assert_eq!(cv(&m), Some(CauseValue::MandatoryIeMissing));
    assert_eq!(m.cause.unwrap().diagnostics, [0x70]);
    assert_eq!(t.u.call_count(), 0);
    t.quiet();

    // RELEASE without a cause: released all the same, RELEASE COMPLETE says 96.
    let (mut t, call) = user_in(10);
    recv!(t, Release, call.cref, true);
    let m = send!(t, ReleaseComplete);
    assert_eq!(cv(&m), Some(CauseValue::MandatoryIeMissing));
    event!(t, CallEvent::Released { .. });

    // RELEASE with a broken cause: 100.
    let (mut t, call) = user_in(10);
    t.rx_bytes(&with_ie(
        Out::new(Mt::Release, call.cref, true).emit(),
        0x08,
        0x80,
        &[0x80],
    ));
    let m = send!(t, ReleaseComplete);
    assert_eq!(cv(&m), Some(CauseValue::InvalidIeContents));
    event!(t, CallEvent::Released { .. });

    // STATUS without its call state: nothing (no STATUS answers a STATUS), call kept.
    let (mut t, call) = user_in(10);
    recv!(t, Status, call.cref, true, .cause(cause(CauseValue::ResponseToStatusEnquiry)));
    t.quiet();
    assert_eq!(t.state(call), CallState::Active);
}

#[test]
fn unrecognised_ies_by_action_indicator() {
    // An unknown IE (0x4A) in CONNECT received in U1, with each action indicator.
    let cases: [(u8, &str); 6] = [
        (0x80, "proceed+report"),
        (0x90, "clear"),
        (0x91, "proceed"),
        (0x92, "proceed+report"),
        (0x95, "discard"),
        (0x96, "discard+report"),
    ];
    for (flags, what) in cases {
        let (mut t, call) = user_in(1);
        let b = with_ie(
            Out::new(Mt::Connect, call.cref, true).conn(K).emit(),
            0x4A,
            flags,
            &[1, 2],
        );
        assert_eq!(parse(&b).unwrap().problems.len(), 1);
        t.rx_bytes(&b);
        match what {
            "clear" => {
                let m = send!(t, Release);
                assert_eq!(cv(&m), Some(CauseValue::IeNonExistent));
                assert_eq!(t.state(call), CallState::ReleaseRequest);
            }
            "discard" => {
                t.quiet();
                assert_eq!(t.state(call), CallState::CallInitiated);
            }
            "discard+report" => {
                let m = send!(t, Status);
                assert_eq!(cv(&m), Some(CauseValue::IeNonExistent));
                assert_eq!(m.call_state, Some(1));
                assert_eq!(m.cause.unwrap().diagnostics, [0x4A]);
                assert_eq!(t.state(call), CallState::CallInitiated);
            }
            _ => {
                send!(t, ConnectAck);
                if what == "proceed+report" {
                    let m = send!(t, Status);
                    assert_eq!(cv(&m), Some(CauseValue::IeNonExistent));
                    assert_eq!(m.call_state, Some(10));
                }
                event!(t, CallEvent::Connected { .. });
                assert_eq!(t.state(call), CallState::Active);
            }
        }
        t.quiet();
    }
}

#[test]
fn optional_ie_with_bad_contents_is_dropped_and_reported() {
    // CONNECT in U3 whose connection identifier is too short: it is optional there, so the
    // call proceeds without it, and STATUS 100 names it.
    let (mut t, call) = user_in(3);
    let b = with_ie(
        Out::new(Mt::Connect, call.cref, true).emit(),
        0x5A,
        0x80,
        &[0x88, 0],
    );
    t.rx_bytes(&b);
    send!(t, ConnectAck);
    let m = send!(t, Status);
    assert_eq!(cv(&m), Some(CauseValue::InvalidIeContents));
    assert_eq!(m.cause.unwrap().diagnostics, [0x5A]);
    event!(t, CallEvent::Connected { conn: Some(K), .. });
    assert_eq!(t.state(call), CallState::Active);
}

#[test]
fn the_networks_first_answer_and_setup_name_the_connection() {
    // CALL PROCEEDING in U1 without a connection identifier: STATUS 96, U1 kept.
    let (mut t, call) = user_in(1);
    recv!(t, CallProceeding, call.cref, true);
    let m = send!(t, Status);
    assert_eq!(cv(&m), Some(CauseValue::MandatoryIeMissing));
    assert_eq!(m.cause.unwrap().diagnostics, [0x5A]);
    assert_eq!(t.state(call), CallState::CallInitiated);
    // With a broken one: STATUS 100.
    let b = with_ie(
        Out::new(Mt::Connect, call.cref, true).emit(),
        0x5A,
        0x80,
        &[0x88, 0],
    );
    t.rx_bytes(&b);
    let m = send!(t, Status);
    assert_eq!(cv(&m), Some(CauseValue::InvalidIeContents));
    assert_eq!(t.state(call), CallState::CallInitiated);
    t.quiet();
    // The network's SETUP without one: RELEASE COMPLETE 96, no call.
    let mut t = T::new(Role::User);
    t.rx_bytes(&msg::setup(4, &params(None)).unwrap());
    let m = send!(t, ReleaseComplete);
    assert_eq!(cv(&m), Some(CauseValue::MandatoryIeMissing));
    assert_eq!(t.u.call_count(), 0);
    t.quiet();
    // The user's SETUP to the network needs none.
    let mut t = T::new(Role::Network);
    t.rx_bytes(&msg::setup(4, &params(None)).unwrap());
    event!(t, CallEvent::Setup { .. });
}

#[test]
fn status_checks_compatibility() {
    // Incompatible: peer in U6 while the network's own call is in N9 … is compatible;
    // peer active while we are in N6 → incompatible → RELEASE 101.
    let (mut t, call) = network_in(6);
    recv!(t, Status, call.cref, true, .cause(cause(CauseValue::ResponseToStatusEnquiry)), .call_state(10));
    let m = send!(t, Release);
    assert_eq!(cv(&m), Some(CauseValue::MessageNotCompatible));
    assert_eq!(t.state(call), CallState::ReleaseRequest);

    let (mut t, call) = network_in(9);
    recv!(t, Status, call.cref, true, .cause(cause(CauseValue::ResponseToStatusEnquiry)), .call_state(9));
    event!(t, CallEvent::Status { peer_state: 9, .. });
    t.quiet();

    // The peer reporting our error (cause 97) in a compatible state: just reported.
    let (mut t, call) = user_in(10);
    recv!(t, Status, call.cref, true, .cause(cause(CauseValue::MessageTypeNonExistent)), .call_state(10));
    event!(t, CallEvent::Status { .. });
    t.quiet();

    // In U11 a non-null STATUS changes nothing; a null one ends the call.
    let (mut t, call) = user_in(11);
    recv!(t, Status, call.cref, true, .cause(cause(CauseValue::ResponseToStatusEnquiry)), .call_state(10));
    t.quiet();
    recv!(t, Status, call.cref, true, .cause(cause(CauseValue::ResponseToStatusEnquiry)), .call_state(0));
    event!(t, CallEvent::Released { .. });
    assert_eq!(t.u.call_count(), 0);
}

#[test]
fn every_state_answers_status_enquiry_with_its_state() {
    for s in [1u8, 3, 6, 8, 9, 10, 11] {
        let (mut t, call) = user_in(s);
        recv!(t, StatusEnquiry, call.cref, peer_flag(call));
        let m = send!(t, Status);
        assert_eq!(
            (m.call_state, cv(&m)),
            (Some(s), Some(CauseValue::ResponseToStatusEnquiry))
        );
    }
    for s in [1u8, 3, 6, 9, 10, 11] {
        let (mut t, call) = network_in(s);
        recv!(t, StatusEnquiry, call.cref, peer_flag(call));
        let m = send!(t, Status);
        assert_eq!(m.call_state, Some(s));
    }
}

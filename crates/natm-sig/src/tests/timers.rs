//! Each timer's expiry (Q.2931 §5.1–5.6, atm-facts 5.4): T303, T308, T309, T310, T313,
//! T316, T317, T322.

use super::*;
use crate::{ReleaseOrigin, Restart, RestartResponse, SaalEvent, Timer};

fn released(t: &mut T) -> (Cause, ReleaseOrigin) {
    let e = event!(t, CallEvent::Released { .. });
    let CallEvent::Released { cause, by, .. } = e else {
        unreachable!()
    };
    (cause, by)
}

#[test]
fn t303_resends_setup_once_then_clears_with_102() {
    for role in [Role::User, Role::Network] {
        let mut t = T::new(role);
        let call = t.u.setup(t.now, &params(Some(K))).unwrap();
        let first = send!(t, Setup);
        t.advance(less1(secs(4)));
        t.quiet();
        t.advance(Duration::from_nanos(1));
        let again = send!(t, Setup);
        assert_eq!((again.cref, again.flag), (first.cref, first.flag));
        t.advance(secs(4));
        let m = send!(t, ReleaseComplete);
        let c = m.cause.unwrap();
        assert_eq!(
            (c.value, &c.diagnostics[..]),
            (CauseValue::RecoveryOnTimerExpiry, &b"303"[..])
        );
        let (c, by) = released(&mut t);
        assert_eq!(
            (c.value, &c.diagnostics[..], by),
            (
                CauseValue::RecoveryOnTimerExpiry,
                &b"303"[..],
                ReleaseOrigin::Local
            )
        );
        assert_eq!(t.state(call), CallState::Null);
        assert_eq!(t.u.call_count(), 0);
        assert_eq!(t.u.poll_timeout(), None);
        t.quiet();
    }
}

#[test]
fn t303_stops_on_any_answer() {
    let (mut t, call) = user_in(3);
    assert_eq!(
        t.u.poll_timeout(),
        Some(t.now + Config::new(Role::User).t310)
    );
    let _ = call;
    t.advance(secs(5));
    t.quiet();
}

#[test]
fn t308_resends_release_once_then_releases_locally_and_restarts_the_vc() {
    for role in [Role::User, Role::Network] {
        let (mut t, call) = if role == Role::User {
            user_in(10)
        } else {
            network_in(10)
        };
        t.u.release(t.now, call, normal()).unwrap();
        send!(t, Release);
        t.advance(secs(30));
        let m = send!(t, Release);
        assert_eq!(cv(&m), Some(CauseValue::NormalCallClearing));
        t.quiet();
        t.advance(secs(30));
        let (c, by) = released(&mut t);
        assert_eq!(
            (c.value, by),
            (CauseValue::NormalCallClearing, ReleaseOrigin::Local)
        );
        assert_eq!(t.u.call_count(), 0);
        // The VC is in maintenance condition: restarted (§5.4.3.4, §5.5).
        let m = send!(t, Restart);
        assert_eq!((m.cref, m.flag), (0, false));
        assert_eq!(
            m.restart,
            Some(Restart::Vc {
                vpci: K.vpci,
                vci: K.vci
            })
        );
        recv!(t, RestartAck, 0, true, .restart(Restart::Vc { vpci: 0, vci: 32 }), .conn(K));
        event!(t, CallEvent::RestartDone { .. });
        t.quiet();
    }
}

#[test]
fn t308_without_restart() {
    let mut c = Config::new(Role::User);
    c.restart_after_t308 = false;
    let mut t = T::with(c);
    let call = t.u.setup(t.now, &params(None)).unwrap();
    send!(t, Setup);
    t.u.release(t.now, call, normal()).unwrap();
    send!(t, Release);
    t.advance(secs(60));
    send!(t, Release);
    released(&mut t);
    t.quiet();
}

#[test]
fn t310_clears_with_102() {
    for role in [Role::User, Role::Network] {
        let (mut t, call) = if role == Role::User {
            user_in(3)
        } else {
            network_in(9)
        };
        let t310 = Config::new(role).t310;
        t.advance(less1(t310));
        t.quiet();
        t.advance(Duration::from_nanos(1));
        let m = send!(t, Release);
        let c = m.cause.unwrap();
        assert_eq!(
            (c.value, &c.diagnostics[..]),
            (CauseValue::RecoveryOnTimerExpiry, &b"310"[..])
        );
        assert_eq!(t.state(call), CallState::ReleaseRequest);
        recv!(t, ReleaseComplete, call.cref, true);
        let (c, _) = released(&mut t);
        assert_eq!(c.value, CauseValue::RecoveryOnTimerExpiry);
    }
}

#[test]
fn t313_clears_with_102() {
    let (mut t, call) = user_in(8);
    t.advance(secs(4));
    let m = send!(t, Release);
    assert_eq!(m.cause.unwrap().diagnostics, b"313");
    assert_eq!(t.state(call), CallState::ReleaseRequest);
    t.quiet();
}

#[test]
fn t309_saal_back_in_time_keeps_active_calls_and_enquires() {
    let (mut t, call) = user_in(10);
    // A second call, not active: cleared at once.
    let other = t.u.setup(t.now, &params(None)).unwrap();
    send!(t, Setup);
    t.saal_event(SaalEvent::ReleaseIndication);
    let e = event!(t, CallEvent::Released { .. });
    assert!(matches!(e, CallEvent::Released { call, .. } if call == other));
    event!(t, CallEvent::LinkDown);
    assert_eq!(t.saal.pop_front(), Some(crate::SaalRequest::Establish));
    assert_eq!(t.state(call), CallState::Active);
    // The owner releases meanwhile? No: it waits. 9 s later the SAAL is back.
    t.advance(secs(9));
    t.quiet();
    t.saal_event(SaalEvent::EstablishConfirm);
    event!(t, CallEvent::LinkUp);
    send!(t, StatusEnquiry);
    recv!(t, Status, call.cref, true, .cause(cause(CauseValue::ResponseToStatusEnquiry)), .call_state(10));
    event!(t, CallEvent::Status { peer_state: 10, .. });
    assert_eq!(t.state(call), CallState::Active);
    t.advance(secs(60));
    t.quiet();
}

#[test]
fn t309_expiry_clears_every_call_with_27() {
    for role in [Role::User, Role::Network] {
        let (mut t, call) = if role == Role::User {
            user_in(10)
        } else {
            network_in(10)
        };
        t.saal_event(SaalEvent::ReleaseIndication);
        event!(t, CallEvent::LinkDown);
        // SSCOP gives up establishing: tried again while T309 runs.
        t.saal.clear();
        t.saal_event(SaalEvent::ReleaseIndication);
        assert_eq!(t.saal.pop_front(), Some(crate::SaalRequest::Establish));
        t.advance(less1(secs(10)));
        t.quiet();
        t.advance(Duration::from_nanos(1));
        let (c, by) = released(&mut t);
        assert_eq!(
            (c.value, by),
            (CauseValue::DestinationOutOfOrder, ReleaseOrigin::Local)
        );
        assert_eq!(t.state(call), CallState::Null);
        assert_eq!(t.u.call_count(), 0);
        // Nothing was sent while the SAAL was down.
        t.quiet();
    }
}

#[test]
fn t309_status_answer_null_clears_the_call() {
    let (mut t, call) = user_in(10);
    t.saal_event(SaalEvent::ReleaseIndication);
    event!(t, CallEvent::LinkDown);
    t.saal_event(SaalEvent::EstablishIndication);
    event!(t, CallEvent::LinkUp);
    send!(t, StatusEnquiry);
    recv!(t, Status, call.cref, true, .cause(cause(CauseValue::ResponseToStatusEnquiry)), .call_state(0));
    released(&mut t);
    send!(t);
    assert_eq!(t.u.call_count(), 0);
}

#[test]
fn t322_resends_then_clears_with_41() {
    let (mut t, call) = user_in(10);
    t.u.status_enquiry(t.now, call).unwrap();
    send!(t, StatusEnquiry);
    // A second enquiry while one is outstanding sends nothing more.
    t.u.status_enquiry(t.now, call).unwrap();
    t.quiet();
    t.advance(secs(4));
    send!(t, StatusEnquiry);
    t.advance(secs(4));
    let m = send!(t, Release);
    assert_eq!(cv(&m), Some(CauseValue::TemporaryFailure));
    assert_eq!(t.state(call), CallState::ReleaseRequest);
    // A STATUS in time stops it.
    let (mut t, call) = user_in(10);
    t.u.status_enquiry(t.now, call).unwrap();
    send!(t, StatusEnquiry);
    t.advance(secs(3));
    recv!(t, Status, call.cref, true, .cause(cause(CauseValue::ResponseToStatusEnquiry)), .call_state(10));
    event!(t, CallEvent::Status { .. });
    t.advance(secs(60));
    t.quiet();
}

#[test]
fn t316_resends_restart_then_gives_up() {
    let mut t = T::new(Role::Network);
    t.u.restart(t.now, Restart::All).unwrap();
    send!(t, Restart);
    assert_eq!(
        t.u.restart(t.now, Restart::All),
        Err(crate::CommandError::RestartBusy)
    );
    t.advance(secs(120));
    send!(t, Restart);
    t.advance(secs(120));
    let e = event!(t, CallEvent::RestartFailed { .. });
    assert_eq!(
        e,
        CallEvent::RestartFailed {
            what: Restart::All,
            timer: Timer::T316
        }
    );
    assert_eq!(t.u.restart_states().0, crate::RestartState::Null);
    t.quiet();
}

#[test]
fn t317_bounds_the_owners_restart_response() {
    let mut c = Config::new(Role::User);
    c.restart_response = RestartResponse::Owner;
    let mut t = T::with(c);
    recv!(t, Restart, 0, false, .restart(Restart::All));
    event!(t, CallEvent::RestartIndication { what: Restart::All });
    assert_eq!(t.u.restart_states().1, crate::RestartState::Indicated);
    t.quiet();
    t.advance(secs(90));
    event!(
        t,
        CallEvent::RestartFailed {
            timer: Timer::T317,
            ..
        }
    );
    send!(t);
    assert_eq!(
        t.u.restart_response(t.now),
        Err(crate::CommandError::NoRestart)
    );
    // In time: RESTART ACKNOWLEDGE.
    recv!(t, Restart, 0, false, .restart(Restart::All));
    event!(t, CallEvent::RestartIndication { .. });
    t.advance(secs(89));
    t.u.restart_response(t.now).unwrap();
    let m = send!(t, RestartAck);
    assert_eq!((m.cref, m.flag, m.restart), (0, true, Some(Restart::All)));
    t.advance(secs(60));
    t.quiet();
}

fn less1(d: Duration) -> Duration {
    Duration::from_nanos(d.as_nanos() - 1)
}

#[test]
fn saal_resynchronised_under_an_established_link() {
    // AAL-ESTABLISH.indication while established (the peer resynchronised): no new
    // establishment is asked for; unsettled calls are cleared, active ones enquired.
    let (mut t, call) = user_in(10);
    let other = t.u.setup(t.now, &params(None)).unwrap();
    send!(t, Setup);
    t.saal_event(SaalEvent::EstablishIndication);
    let e = event!(t, CallEvent::Released { .. });
    assert!(matches!(e, CallEvent::Released { call, .. } if call == other));
    event!(t, CallEvent::LinkUp);
    send!(t, StatusEnquiry);
    assert!(t.saal.is_empty(), "no establish request: {:?}", t.saal);
    assert_eq!(t.state(call), CallState::Active);
    assert!(t.u.link_up());
    t.quiet();
}

/// The SAAL lost in every state (§5.6.9): only active calls survive, under T309.
#[test]
fn saal_loss_in_every_state() {
    let user: [(Reach, &[u8]); 2] = [
        (user_in, &[1, 3, 6, 8, 9, 10, 11]),
        (network_in, &[1, 3, 6, 9, 10, 11]),
    ];
    for (reach, states) in user {
        for &st in states {
            let (mut t, call) = reach(st);
            t.saal_event(SaalEvent::ReleaseIndication);
            if st == 10 {
                assert_eq!(t.state(call), CallState::Active);
                event!(t, CallEvent::LinkDown);
                assert!(t.u.poll_timeout().is_some(), "T309 runs");
            } else {
                let e = event!(t, CallEvent::Released { .. });
                let CallEvent::Released { cause, .. } = e else {
                    unreachable!()
                };
                let want = if st == 11 {
                    CauseValue::NormalCallClearing
                } else {
                    CauseValue::DestinationOutOfOrder
                };
                assert_eq!(cause.value, want, "state {st}");
                event!(t, CallEvent::LinkDown);
                assert_eq!(t.u.call_count(), 0);
                assert_eq!(t.u.poll_timeout(), None, "state {st}: no timer left");
            }
            send!(t);
            assert_eq!(t.saal.pop_front(), Some(crate::SaalRequest::Establish));
        }
    }
}

/// STATUS in every state (§5.6.11): the peer's Null ends the call; its own state is
/// compatible; a state far off clears with 101.
#[test]
fn status_in_every_state() {
    let both: [(Reach, &[u8]); 2] = [
        (user_in, &[1, 3, 6, 8, 9, 10, 11]),
        (network_in, &[1, 3, 6, 9, 10, 11]),
    ];
    let enq = || cause(CauseValue::ResponseToStatusEnquiry);
    for (reach, states) in both {
        for &st in states {
            let (mut t, call) = reach(st);
            recv!(t, Status, call.cref, peer_flag(call), .cause(enq()), .call_state(0));
            event!(t, CallEvent::Released { .. });
            send!(t);

            let (mut t, call) = reach(st);
            // The peer's own view of the same state (its number may differ while
            // messages cross; these are the plain cases).
            let peer = match st {
                8 => 10,
                11 => 12,
                s => s,
            };
            recv!(t, Status, call.cref, peer_flag(call), .cause(enq()), .call_state(peer));
            if st == 11 {
                t.quiet();
            } else {
                event!(t, CallEvent::Status { .. });
                t.quiet();
            }
            assert_eq!(t.state(call).code(), st);

            // Far off: a peer in U/N 6 (call present) for a call that is active here, or
            // active for one still being set up.
            let (mut t, call) = reach(st);
            let off = if st == 10 { 6 } else { 12 };
            recv!(t, Status, call.cref, peer_flag(call), .cause(enq()), .call_state(off));
            if st == 11 {
                t.quiet();
            } else {
                let m = send!(t, Release);
                assert_eq!(cv(&m), Some(CauseValue::MessageNotCompatible), "state {st}");
                assert_eq!(t.state(call), CallState::ReleaseRequest);
            }
        }
    }
}

/// A helper that puts an entity in a state with one call.
type Reach = fn(u8) -> (T, CallId);

#[test]
fn release_while_t309_runs_waits_for_the_saal() {
    let (mut t, call) = user_in(10);
    t.saal_event(SaalEvent::ReleaseIndication);
    event!(t, CallEvent::LinkDown);
    t.u.release(t.now, call, cause(CauseValue::UserBusy))
        .unwrap();
    send!(t); // held until the SAAL is back
    assert_eq!(t.state(call), CallState::ReleaseRequest);
    // Back in time: the RELEASE goes out.
    t.advance(secs(5));
    t.saal_event(SaalEvent::EstablishConfirm);
    event!(t, CallEvent::LinkUp);
    send!(t, Release);
    recv!(t, ReleaseComplete, call.cref, true);
    event!(t, CallEvent::Released { .. });
    // Not back: T309 clears it with the owner's cause.
    let (mut t, call) = user_in(10);
    t.saal_event(SaalEvent::ReleaseIndication);
    event!(t, CallEvent::LinkDown);
    t.u.release(t.now, call, cause(CauseValue::UserBusy))
        .unwrap();
    t.advance(secs(10));
    let e = event!(t, CallEvent::Released { .. });
    let CallEvent::Released { cause: c, .. } = e else {
        unreachable!()
    };
    assert_eq!(c.value, CauseValue::UserBusy);
    assert_eq!(t.u.call_count(), 0);
    assert_eq!(t.u.poll_timeout(), None);
}

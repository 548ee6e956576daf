//! Reliable state × event tests: one endpoint fed hand-made TPDUs. The sender's tests
//! (`test_sender_*`) take acks and check what goes out and the window; the receiver's
//! (`test_receiver_*`) take data TPDUs and check the acks and the deliveries.

use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::header::{Ack, DataHeader, Repr, ServiceKind, emit_ack, emit_data_header};
use crate::{Endpoint, RxError, Service};

/// The first seq of the sender under test: the tests run across the wrap.
const S: u32 = u32::MAX - 2;

fn s(k: u32) -> u32 {
    S.wrapping_add(k)
}

fn sender(max_window: u32) -> Endpoint {
    let c = Config {
        tpdu_size: 100,
        max_message: 1_000,
        max_window,
        adaptive_tpdu_size: false,
        ..Config::default()
    };
    Endpoint::new(c, Isn { seq: S, msg: 0 }, Isn::default()).unwrap()
}

/// Queues `n` one-TPDU messages.
fn queue(e: &mut Endpoint, n: usize) {
    for _ in 0..n {
        e.send_message(Instant::ZERO, &[7; 100]).unwrap();
    }
}

/// Drains the data TPDUs the endpoint sends at `now`: (seq offset from S, tx).
fn sent(e: &mut Endpoint, now: Instant) -> Vec<(u32, u8)> {
    let mut buf = vec![0; e.config().max_frame_len()];
    let mut v = Vec::new();
    while let Some(n) = e.poll_transmit(now, &mut buf) {
        match Repr::parse(&buf[..n]).unwrap() {
            Repr::Data { header, .. } => v.push((header.seq.wrapping_sub(S), header.tx)),
            Repr::Ack(a) => panic!("unexpected {a:?}"),
        }
    }
    v
}

/// Gives the sender an ack: cumulative through offset `cum`, triggered by offset `trigger`
/// (its transmission `echo`), window 64.
fn ack(e: &mut Endpoint, now: Instant, cum: u32, trigger: Option<(u32, u8)>, bitmap: u64) {
    ack_w(e, now, cum, trigger, bitmap, 64).unwrap();
}

fn ack_w(
    e: &mut Endpoint,
    now: Instant,
    cum: u32,
    trigger: Option<(u32, u8)>,
    bitmap: u64,
    window: u32,
) -> Result<(), RxError> {
    let mut buf = [0; 24];
    emit_ack(
        &Ack {
            service: ServiceKind::Reliable,
            cum: s(cum),
            trigger: trigger.map(|t| s(t.0)),
            echo: trigger.map_or(0, |t| t.1),
            window,
            bitmap,
        },
        &mut buf,
    );
    e.handle_tpdu(now, &buf)
}

/// Acks offsets `from..to` one by one, in order, each at `now`.
fn ack_each(e: &mut Endpoint, now: Instant, from: u32, to: u32) {
    for k in from..to {
        ack(e, now, k + 1, Some((k, 0)), 0);
    }
}

#[test]
fn test_sender_slow_start_doubles_per_round_trip() {
    let mut e = sender(256);
    queue(&mut e, 100);
    let t = at(us(100));
    assert_eq!(sent(&mut e, Instant::ZERO), [(0, 0)]);
    assert_eq!(e.stats().cwnd, 1);
    let mut next = 1;
    for w in [2, 4, 8, 16] {
        let flight = w / 2;
        ack_each(&mut e, t, next - flight, next);
        assert_eq!(e.stats().cwnd, w, "+1 per ack");
        let out = sent(&mut e, t);
        assert_eq!(out.len(), w as usize);
        assert_eq!(out[0], (next, 0));
        next += w;
    }
    assert_eq!(e.stats().ssthresh, 128);
}

#[test]
fn test_sender_congestion_avoidance_one_per_round_trip() {
    // max_window 8: ssthresh 4.
    let mut e = sender(8);
    queue(&mut e, 100);
    let t = at(us(100));
    sent(&mut e, t);
    ack_each(&mut e, t, 0, 1);
    sent(&mut e, t);
    ack_each(&mut e, t, 1, 3);
    assert_eq!(e.stats().cwnd, 4);
    assert_eq!(sent(&mut e, t).len(), 4);
    // A window of 4 acks: +1.
    ack_each(&mut e, t, 3, 6);
    assert_eq!(e.stats().cwnd, 4);
    ack_each(&mut e, t, 6, 7);
    assert_eq!(e.stats().cwnd, 5);
    assert_eq!(sent(&mut e, t).len(), 5);
    ack_each(&mut e, t, 7, 12);
    assert_eq!(e.stats().cwnd, 6);
    // Never above max_window.
    for k in 12..60 {
        sent(&mut e, t);
        ack_each(&mut e, t, k, k + 1);
    }
    assert_eq!(e.stats().cwnd, 8);
}

#[test]
fn test_sender_ack_due_follows_the_last_send_and_the_round_trip() {
    let mut e = sender(8);
    assert_eq!(e.ack_due(), None, "nothing sent");
    queue(&mut e, 3);
    sent(&mut e, at(us(10)));
    assert_eq!(
        e.ack_due(),
        None,
        "in flight, but no round trip measured yet"
    );
    ack(&mut e, at(us(14)), 1, Some((0, 0)), 0);
    assert_eq!(e.stats().srtt, Some(us(4)));
    assert_eq!(e.ack_due(), None, "nothing in flight");
    // Two go at 20 µs, the window being 2 now: the ack of the last is due a round trip on.
    assert_eq!(sent(&mut e, at(us(20))).len(), 2);
    assert_eq!(e.ack_due(), Some((at(us(24)), us(4))));
    ack(&mut e, at(us(25)), 2, Some((1, 0)), 0);
    let srtt = e.stats().srtt.unwrap();
    assert_eq!(
        e.ack_due(),
        Some((at(us(20)) + srtt, srtt)),
        "one still in flight"
    );
    ack(&mut e, at(us(25)), 3, Some((2, 0)), 0);
    assert_eq!(e.ack_due(), None, "all acked");

    let c = Config {
        service: Service::BestEffort,
        ..Config::default()
    };
    let mut b = Endpoint::new(c, Isn::default(), Isn::default()).unwrap();
    b.send_message(Instant::ZERO, b"x").unwrap();
    let mut buf = vec![0; c.max_frame_len()];
    assert!(b.poll_transmit(Instant::ZERO, &mut buf).is_some());
    assert_eq!(b.ack_due(), None, "no acks on best effort");
}

/// Grows the window to 8 and sends offsets 7..15 (8 in flight, 7 acked); its round trips
/// measure 0.
fn window_of_8() -> Endpoint {
    let mut e = sender(256);
    queue(&mut e, 100);
    let t = at(us(100));
    sent(&mut e, t);
    ack_each(&mut e, t, 0, 1);
    sent(&mut e, t);
    ack_each(&mut e, t, 1, 3);
    sent(&mut e, t);
    ack_each(&mut e, t, 3, 7);
    assert_eq!(sent(&mut e, t), (7..15).map(|k| (k, 0)).collect::<Vec<_>>());
    assert_eq!((e.stats().cwnd, e.stats().flight), (8, 8));
    e
}

/// SMART: an ack whose trigger is above a missing TPDU resends it at once, without a
/// timeout, and halves the window; the same TPDU is not resent by later acks of TPDUs sent
/// before its resend, only by one of a TPDU sent after it (the resend was lost too).
#[test]
pub(crate) fn test_sender_smart_resends_at_once_and_once_per_round_trip() {
    let mut e = window_of_8();
    // Acked 100 µs after it went, where the round trips were 0: the path holds a queue,
    // and the loss halves the window as Reno's.
    let t = at(us(200));
    // 7 lost; 8 arrives.
    ack(&mut e, t, 7, Some((8, 0)), 0);
    assert_eq!(
        sent(&mut e, t),
        [(7, 1)],
        "resent at once, second transmission"
    );
    let st = e.stats();
    assert_eq!((st.smart_resends, st.timeouts, st.window_cuts), (1, 0, 1));
    assert_eq!((st.cwnd, st.ssthresh), (4, 4));
    // 9 and 10 arrive, sent before the resend: 7 is not resent.
    ack(&mut e, t, 7, Some((9, 0)), 0b1);
    ack(&mut e, t, 7, Some((10, 0)), 0b11);
    assert_eq!(sent(&mut e, t), []);
    assert_eq!(e.stats().smart_resends, 1);
    // 11..15 arrive; the window lets new TPDUs go.
    for k in 11..15 {
        ack(&mut e, t, 7, Some((k, 0)), (1 << (k - 7)) - 1);
    }
    let out = sent(&mut e, t);
    assert!(
        !out.is_empty() && out.iter().all(|&(k, tx)| k >= 15 && tx == 0),
        "{out:?}"
    );
    // An ack of 15, sent after the resend, with 7 still missing: the resend was lost.
    ack(&mut e, t, 7, Some((15, 0)), 0xff);
    let out = sent(&mut e, t);
    assert_eq!(out[0], (7, 2));
    assert!(out[1..].iter().all(|&(_, tx)| tx == 0), "{out:?}");
    // Not a second halving: 7 was sent before the recovery point.
    assert_eq!(e.stats().window_cuts, 1);
    // 7 arrives: everything through 15 is acknowledged.
    ack(&mut e, t, 16, Some((7, 2)), 0);
    assert_eq!(e.stats().smart_resends, 2);
    assert_eq!(e.stats().timeouts, 0);
}

/// On [`window_of_8`] at `t`: 8 and 10 arrive, so SMART finds 7 and 9 lost and resends
/// both at once; the figures after.
fn lose_7_and_9(e: &mut Endpoint, t: Instant) -> crate::Stats {
    ack(e, t, 7, Some((8, 0)), 0);
    ack(e, t, 7, Some((10, 0)), 0b1);
    assert_eq!(sent(e, t), [(7, 1), (9, 1)]);
    e.stats()
}

/// A loss while the path holds no queue (the round trip at its least) cuts window and
/// threshold by a fifth, Veno's rule for random loss, at most once per window of data.
#[test]
fn test_sender_a_loss_without_a_queue_cuts_a_fifth() {
    let mut e = window_of_8();
    // Acked as fast as every TPDU before.
    let st = lose_7_and_9(&mut e, at(us(100)));
    assert_eq!(
        (st.window_cuts, st.random_loss_cuts, st.cwnd, st.ssthresh),
        (1, 1, 6, 6)
    );
    assert_eq!(st.min_rtt, Some(Duration::ZERO));
}

/// Two losses in one window of data halve once; a loss of a TPDU sent after the halving
/// halves again (a path with a queue, as in the test above).
#[test]
pub(crate) fn test_sender_window_halves_once_per_window() {
    let mut e = window_of_8();
    let t = at(us(200));
    let st = lose_7_and_9(&mut e, t);
    assert_eq!((st.window_cuts, st.cwnd, st.ssthresh), (1, 4, 4));
    for k in 11..15 {
        ack(&mut e, t, 7, Some((k, 0)), 0b101 | ((1 << (k - 7)) - 1));
    }
    ack(&mut e, t, 9, Some((7, 1)), 0x1f);
    ack(&mut e, t, 15, Some((9, 1)), 0);
    let cwnd = e.stats().cwnd;
    let out = sent(&mut e, t);
    let first_new = out[0].0;
    assert!(first_new >= 15);
    // A TPDU sent after the recovery point is lost: the second halving.
    ack(&mut e, t, first_new, Some((first_new + 1, 0)), 0);
    assert_eq!(sent(&mut e, t)[0], (first_new, 1));
    assert_eq!(e.stats().window_cuts, 2);
    assert_eq!(e.stats().cwnd, (cwnd / 2).max(2));
}

/// A timeout: window 1, threshold half the flight, everything in flight resent in order
/// as the window opens, the timeout doubled.
#[test]
fn test_sender_timeout_window_to_one() {
    let mut e = window_of_8();
    let rto = e.stats().rto;
    assert_eq!(rto, ms(50), "the floor: the round trips measured are 0");
    let due = e.poll_timeout().unwrap();
    // The loss probe comes first (max(2·srtt, min_probe 100 µs)).
    assert_eq!(due, at(us(100)) + us(100));
    e.handle_timeout(at(us(100)) + rto);
    let st = e.stats();
    assert_eq!((st.timeouts, st.cwnd, st.ssthresh, st.flight), (1, 1, 4, 0));
    assert_eq!(st.rto, ms(100), "backed off");
    let t = at(us(100)) + rto;
    assert_eq!(sent(&mut e, t), [(7, 1)], "one TPDU: the window is 1");
    // 7's first transmission arrived late (echo 0), not its resend: Karn's rule, no
    // sample, the back-off stays.
    ack(&mut e, t, 8, Some((7, 0)), 0);
    assert_eq!(e.stats().rto, ms(100));
    assert_eq!(sent(&mut e, t), [(8, 1), (9, 1)], "slow start again");
    assert_eq!(e.stats().timeout_resends, 3);
    // The echo names 8's resend, its latest transmission: its round trip is measured and
    // the back-off ends (without the echo, at high loss it would only grow).
    ack(&mut e, t + us(30), 9, Some((8, 1)), 0);
    // 7/8 of the round trips of 0 measured before, 1/8 of this one's 30 µs.
    assert_eq!(e.stats().srtt, Some(Duration::from_nanos(3_750)));
    assert_eq!(e.stats().rto, ms(50));
}

/// The timeout never goes below `min_rto`, whatever the round trips; a loss probe does,
/// down to `min_probe`.
#[test]
fn test_sender_timeout_floor() {
    for min_rto in [ms(50), ms(5), us(10)] {
        let c = Config {
            min_rto,
            initial_rto: ms(50),
            min_probe: us(1),
            ..Config::default()
        };
        let mut e = Endpoint::new(c, Isn::default(), Isn::default()).unwrap();
        for k in 0..20u32 {
            let t = at(us(u64::from(k) * 100));
            e.send_message(t, &[0]).unwrap();
            let mut buf = vec![0; c.max_frame_len()];
            assert!(e.poll_transmit(t, &mut buf).is_some());
            // Round trips of 10 µs.
            let mut a = [0; 24];
            emit_ack(
                &Ack {
                    service: ServiceKind::Reliable,
                    cum: k + 1,
                    trigger: Some(k),
                    echo: 0,
                    window: 64,
                    bitmap: 0,
                },
                &mut a,
            );
            e.handle_tpdu(t + us(10), &a).unwrap();
        }
        let st = e.stats();
        assert_eq!(st.srtt, Some(us(10)));
        // 10 µs + 4·rttvar, floored.
        let computed = us(10) + st.rttvar + st.rttvar + st.rttvar + st.rttvar;
        assert!(computed < us(11));
        assert_eq!(st.rto, min_rto.max(computed));
    }
    let zero = Config {
        min_rto: Duration::ZERO,
        ..Config::default()
    };
    assert_eq!(
        Endpoint::new(zero, Isn::default(), Isn::default()).unwrap_err(),
        crate::ConfigError::ZeroMinRto
    );
}

/// A loss probe resends the TPDU sent last when the whole flight is lost; its ack lets
/// SMART find the rest, with no timeout and no change of window by the probe itself.
#[test]
fn test_sender_probe_finds_a_lost_flight() {
    let mut e = window_of_8();
    let probe = e.poll_timeout().unwrap();
    e.handle_timeout(probe);
    // The receiver's window takes a new TPDU: that is the probe.
    assert_eq!(sent(&mut e, probe), [(15, 0)]);
    assert_eq!((e.stats().probes, e.stats().cwnd), (1, 8));
    ack(&mut e, probe + us(100), 7, Some((15, 0)), 0);
    assert_eq!(
        sent(&mut e, probe + us(100)),
        (7..15).map(|k| (k, 1)).collect::<Vec<_>>()
    );
    assert_eq!(e.stats().timeouts, 0);
    assert_eq!(e.stats().window_cuts, 1);
}

/// A closed window stops new TPDUs; with nothing in flight the persist timer sends one
/// past it, which the receiver drops and answers without trigger; it goes again when the
/// window opens.
#[test]
fn test_sender_zero_window_probe() {
    let mut e = sender(256);
    queue(&mut e, 10);
    let t = at(us(100));
    sent(&mut e, t);
    ack_w(&mut e, t, 1, Some((0, 0)), 0, 0).unwrap();
    assert_eq!(sent(&mut e, t), []);
    assert_eq!(e.stats().peer_window, 0);
    let persist = e.poll_timeout().unwrap();
    assert_eq!(persist, t + ms(50));
    e.handle_timeout(persist);
    assert_eq!(sent(&mut e, persist), [(1, 0)]);
    assert_eq!(e.stats().window_probes, 1);
    // Dropped beyond the window: waits again, backed off, with no loss counted.
    ack_w(&mut e, persist, 1, None, 0, 0).unwrap();
    assert_eq!(e.stats().flight, 0);
    assert_eq!(e.poll_timeout(), Some(persist + ms(100)));
    assert_eq!(e.stats().window_cuts, 0);
    // The window opens (an update without trigger): 1 goes again, then the rest.
    ack_w(&mut e, persist, 1, None, 0, 4).unwrap();
    assert_eq!(sent(&mut e, persist), [(1, 1), (2, 0)]);
}

#[test]
fn test_sender_refuses_impossible_acks() {
    let mut e = sender(256);
    queue(&mut e, 3);
    let t = at(us(100));
    sent(&mut e, t);
    assert_eq!(
        ack_w(&mut e, t, 2, Some((0, 0)), 0, 64),
        Err(RxError::AckBeyondSent { cum: s(2) })
    );
    assert_eq!(
        ack_w(&mut e, t, 0, Some((1, 0)), 0, 64),
        Err(RxError::TriggerNotSent { trigger: s(1) })
    );
    ack(&mut e, t, 1, Some((0, 0)), 0);
    // An old (duplicated) ack is ignored.
    ack_w(&mut e, t, 0, Some((0, 0)), 0, 64).unwrap();
    assert_eq!(e.stats().acks_old, 1);
    assert_eq!(e.stats().refused, 2);
    // Another service's ack, and an ack on a channel without acks.
    let mut buf = [0; 24];
    let be = Ack {
        service: ServiceKind::BestEffort,
        cum: 0,
        trigger: None,
        echo: 0,
        window: 0,
        bitmap: 0,
    };
    emit_ack(&be, &mut buf);
    assert_eq!(
        e.handle_tpdu(t, &buf),
        Err(RxError::WrongService {
            expected: ServiceKind::Reliable,
            got: ServiceKind::BestEffort
        })
    );
    let c = Config {
        service: Service::BestEffort,
        ..Config::default()
    };
    let mut b = Endpoint::new(c, Isn::default(), Isn::default()).unwrap();
    assert_eq!(b.handle_tpdu(t, &buf), Err(RxError::AckNotExpected));
    assert_eq!(
        b.handle_tpdu(t, &[0x10]),
        Err(RxError::Header(crate::header::HeaderError::Truncated {
            need: 12,
            have: 1
        }))
    );
}

// --- receiver -------------------------------------------------------------------------

fn receiver(buffer: u32) -> Endpoint {
    let c = Config {
        tpdu_size: 100,
        max_message: 200,
        recv_buffer: buffer,
        ..Config::default()
    };
    Endpoint::new(c, Isn::default(), Isn { seq: S, msg: 40 }).unwrap()
}

/// Gives the receiver data TPDU `k` of message `msg`.
fn data(e: &mut Endpoint, k: u32, msg: u32, first: bool, last: bool) -> Result<(), RxError> {
    let mut buf = vec![0; 12 + 3];
    emit_data_header(
        &DataHeader {
            service: ServiceKind::Reliable,
            first,
            last,
            seq: s(k),
            msg,
            tx: (k % 3) as u8,
        },
        None,
        &mut buf,
    );
    buf[12..].copy_from_slice(&[k as u8; 3]);
    e.handle_tpdu(at(ms(1)), &buf)
}

/// An ack as sent: (cum offset, trigger offset and echo, bitmap, window).
type SentAck = (u32, Option<(u32, u8)>, u64, u32);

/// The acks sent.
fn acks(e: &mut Endpoint) -> Vec<SentAck> {
    let mut buf = vec![0; e.config().max_frame_len()];
    let mut v = Vec::new();
    while let Some(n) = e.poll_transmit(at(ms(1)), &mut buf) {
        match Repr::parse(&buf[..n]).unwrap() {
            Repr::Ack(a) => v.push((
                a.cum.wrapping_sub(S),
                a.trigger.map(|t| (t.wrapping_sub(S), a.echo)),
                a.bitmap,
                a.window,
            )),
            r => panic!("unexpected {r}"),
        }
    }
    v
}

/// Every data TPDU is acked with the cumulative ack, itself as the trigger (and its
/// transmission echoed), and the bitmap of what came above the first missing one.
#[test]
pub(crate) fn test_receiver_acks_every_tpdu_with_its_trigger() {
    let mut e = receiver(16);
    data(&mut e, 0, 40, true, true).unwrap();
    data(&mut e, 2, 42, true, true).unwrap();
    data(&mut e, 3, 43, true, true).unwrap();
    data(&mut e, 0, 40, true, true).unwrap();
    assert_eq!(
        acks(&mut e),
        [
            (1, Some((0, 0)), 0, 15),
            (1, Some((2, 2)), 0b1, 15),
            (1, Some((3, 0)), 0b11, 15),
            (1, Some((0, 0)), 0b11, 15),
        ]
    );
    assert_eq!(e.stats().duplicates, 1);
    // 1 fills the gap: 41, 42 and 43 follow 40, in order.
    data(&mut e, 1, 41, true, true).unwrap();
    assert_eq!(acks(&mut e), [(4, Some((1, 1)), 0, 12)]);
    let msgs: Vec<u32> = core::iter::from_fn(|| e.poll_event())
        .map(|ev| match ev {
            Event::Message { msg, data } => {
                assert_eq!(data.len(), 3);
                msg.0
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(msgs, [40, 41, 42, 43]);
}

/// Messages the application leaves close the window; a TPDU past it is dropped and
/// answered without trigger; taking them opens it, and an update says so.
#[test]
fn test_receiver_window_closes_and_reopens() {
    let mut e = receiver(4);
    data(&mut e, 0, 40, true, false).unwrap();
    data(&mut e, 1, 40, false, true).unwrap();
    data(&mut e, 2, 41, true, true).unwrap();
    assert_eq!(
        acks(&mut e).iter().map(|a| a.3).collect::<Vec<_>>(),
        [3, 2, 1]
    );
    data(&mut e, 3, 42, true, true).unwrap();
    assert_eq!(acks(&mut e), [(4, Some((3, 0)), 0, 0)]);
    data(&mut e, 4, 43, true, true).unwrap();
    assert_eq!(acks(&mut e), [(4, None, 0, 0)]);
    assert_eq!(e.stats().beyond_window, 1);
    assert!(matches!(
        e.poll_event(),
        Some(Event::Message {
            msg: MsgSeq(40),
            ..
        })
    ));
    assert_eq!(acks(&mut e), [(4, None, 0, 2)]);
    assert_eq!(e.stats().window_updates, 1);
}

/// A TPDU that breaks the message structure (a broken peer) is counted and its message
/// dropped; nothing panics and later messages still come.
#[test]
fn test_receiver_broken_message_structure() {
    let mut e = receiver(16);
    data(&mut e, 0, 40, false, true).unwrap();
    data(&mut e, 1, 41, true, false).unwrap();
    data(&mut e, 2, 99, false, true).unwrap();
    data(&mut e, 3, 42, true, true).unwrap();
    assert_eq!(e.stats().protocol_errors, 3);
    assert!(matches!(
        e.poll_event(),
        Some(Event::Message {
            msg: MsgSeq(42),
            ..
        })
    ));
    let mut long = vec![0; 12 + 101];
    emit_data_header(
        &DataHeader {
            service: ServiceKind::Reliable,
            first: true,
            last: true,
            seq: s(4),
            msg: 43,
            tx: 0,
        },
        None,
        &mut long,
    );
    assert_eq!(
        e.handle_tpdu(at(ms(1)), &long),
        Err(RxError::PayloadTooLong { len: 101, max: 100 })
    );
}

/// What a test of arbitrary input does to the sender.
#[derive(Clone, Debug)]
enum Op {
    Ack {
        cum: u32,
        trigger: Option<(u32, u8)>,
        bitmap: u64,
        window: u32,
    },
    Time(u64),
    Queue(u8),
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    prop_oneof![
        (
            0u32..40,
            proptest::option::of((0u32..40, 0u8..3)),
            any::<u64>(),
            0u32..80
        )
            .prop_map(|(cum, trigger, bitmap, window)| Op::Ack {
                cum,
                trigger,
                bitmap,
                window
            }),
        (0u64..200_000).prop_map(Op::Time),
        (1u8..8).prop_map(Op::Queue),
    ]
}

proptest::proptest! {
    /// Under any acks (valid or not) and timers, the window stays within 1..=max_window,
    /// the threshold at least 2, the timeout at least its floor; only a probe goes past
    /// the receiver's window, and nothing panics.
    #[test]
    fn sender_invariants_under_arbitrary_acks(ops in proptest::collection::vec(op(), 1..200)) {
        let mut e = sender(16);
        queue(&mut e, 20);
        let mut now = Instant::ZERO;
        let mut edge = 1u32;
        for op in ops {
            match op {
                Op::Ack { cum, trigger, bitmap, window } => {
                    if ack_w(&mut e, now, cum, trigger, bitmap, window).is_ok() && cum + window > edge {
                        edge = edge.max(cum + window);
                    }
                }
                Op::Time(t) => {
                    now += us(t);
                    if e.poll_timeout().is_some_and(|t| t <= now) {
                        e.handle_timeout(now);
                    }
                }
                Op::Queue(n) => {
                    let _ = (0..n).map(|_| e.send_message(now, &[1; 100])).count();
                }
            }
            let before = e.stats();
            for (k, _) in sent(&mut e, now) {
                let after = e.stats();
                let probes = after.probes + after.window_probes - before.probes - before.window_probes;
                proptest::prop_assert!(k < edge || probes > 0, "{k} past the edge {edge}");
            }
            let s = e.stats();
            proptest::prop_assert!((1..=16).contains(&s.cwnd), "{s:?}");
            proptest::prop_assert!(s.ssthresh >= 2);
            proptest::prop_assert!(s.rto >= ms(50));
            if let Some(t) = e.poll_timeout() {
                proptest::prop_assert!(t >= now);
            }
        }
    }
}

/// Congestion avoidance grows the window by one TPDU of the configured size per window of
/// acks: counted in TPDUs of a smaller size in use, by the ratio of their cells k (100-byte
/// TPDUs take 3 cells, 28-byte ones 1), spread over the acks, k/cwnd each, so that a cut
/// before a window's last ack does not lose what the acks before it earned.
#[test]
fn test_sender_growth_counts_full_size_tpdus() {
    for (size, step) in [(100, 1), (28, 2)] {
        // Largest window 6: threshold 3, reached after two acks of slow start.
        let mut e = sender(6);
        e.set_tpdu_size(size).unwrap();
        queue(&mut e, 20);
        let t = at(us(100));
        let mut acked = 0;
        while acked < 5 {
            let out = sent(&mut e, t);
            assert!(!out.is_empty());
            for _ in out {
                if acked < 5 {
                    ack_each(&mut e, t, acked, acked + 1);
                    acked += 1;
                }
                if acked == 2 {
                    assert_eq!((e.stats().cwnd, e.stats().ssthresh), (3, 3), "{size}");
                }
            }
        }
        // Three acks of avoidance: one window of them. With k = 3 the first ack is a step
        // (3/3) and the next two one more (3/4 each): the window grows as it goes.
        assert_eq!(e.stats().cwnd, 3 + step, "{size}");
    }
}

// --- acks riding on data ----------------------------------------------------------------

/// What one `poll_transmit` sends: a data TPDU (offset of its seq from 0, and the riding
/// ack's (cum, trigger) offsets from `S`), or an ack alone (its cum and trigger offsets).
#[derive(Debug, PartialEq, Eq)]
enum Out {
    Data(u32, Option<(u32, Option<u32>)>),
    Ack(u32, Option<u32>),
}

fn next_out(e: &mut Endpoint) -> Option<Out> {
    let mut buf = vec![0; e.config().max_frame_len()];
    let n = e.poll_transmit(at(ms(1)), &mut buf)?;
    let off = |a: &Ack| (a.cum.wrapping_sub(S), a.trigger.map(|t| t.wrapping_sub(S)));
    Some(match Repr::parse(&buf[..n]).unwrap() {
        Repr::Data { header, ack, .. } => Out::Data(header.seq, ack.as_ref().map(off)),
        Repr::Ack(a) => {
            let (cum, trigger) = off(&a);
            Out::Ack(cum, trigger)
        }
    })
}

/// A message sent after one was received carries that message's ack: one frame, not two.
#[test]
fn test_the_newest_ack_rides_on_the_next_data_tpdu() {
    let mut e = receiver(16);
    data(&mut e, 0, 40, true, true).unwrap();
    e.send_message(at(ms(1)), b"reply #1").unwrap();
    assert_eq!(next_out(&mut e), Some(Out::Data(0, Some((1, Some(0))))));
    assert_eq!(next_out(&mut e), None);
    let st = e.stats();
    assert_eq!((st.acks_sent, st.acks_carried), (1, 1));
}

/// Holding, the ack of a TPDU that gives the application a message waits for data;
/// released, it goes alone. Older acks, and acks while no message waits, never wait.
#[test]
fn test_a_held_ack_waits_for_data_until_released() {
    let mut e = receiver(16);
    e.hold_acks(true);
    data(&mut e, 0, 40, true, false).unwrap();
    assert_eq!(
        next_out(&mut e),
        Some(Out::Ack(1, Some(0))),
        "no message yet"
    );
    data(&mut e, 1, 40, false, true).unwrap();
    data(&mut e, 2, 41, true, true).unwrap();
    assert_eq!(
        next_out(&mut e),
        Some(Out::Ack(2, Some(1))),
        "the older ack"
    );
    assert_eq!(next_out(&mut e), None, "the newest is held");
    e.release_ack();
    assert_eq!(next_out(&mut e), Some(Out::Ack(3, Some(2))));
    assert_eq!(next_out(&mut e), None);

    // Held, then carried by the reply: the hold ends with it.
    data(&mut e, 3, 42, true, true).unwrap();
    assert_eq!(next_out(&mut e), None);
    e.send_message(at(ms(1)), b"reply").unwrap();
    assert_eq!(next_out(&mut e), Some(Out::Data(0, Some((4, Some(3))))));
    // Off: no hold.
    e.hold_acks(false);
    data(&mut e, 4, 43, true, true).unwrap();
    assert_eq!(next_out(&mut e), Some(Out::Ack(5, Some(4))));
}

/// A data TPDU with no room for the ack goes without it, and the ack (held or not) goes
/// alone right after.
#[test]
fn test_a_full_tpdu_leaves_the_ack_to_follow_it() {
    let c = Config {
        tpdu_size: 100,
        max_message: 200,
        recv_buffer: 16,
        adaptive_tpdu_size: false,
        ..Config::default()
    };
    let mut e = Endpoint::new(c, Isn::default(), Isn { seq: S, msg: 40 }).unwrap();
    e.hold_acks(true);
    data(&mut e, 0, 40, true, true).unwrap();
    // 100 bytes fill the TPDU (tpdu_size 100): 13 more do not fit.
    e.send_message(at(ms(1)), &[1; 100]).unwrap();
    assert_eq!(next_out(&mut e), Some(Out::Data(0, None)));
    assert_eq!(next_out(&mut e), Some(Out::Ack(1, Some(0))));
    // 87 bytes and the ack's 13 fit.
    data(&mut e, 1, 41, true, true).unwrap();
    e.send_message(at(ms(1)), &[1; 87]).unwrap();
    assert_eq!(next_out(&mut e), None, "the window is one TPDU until acked");
    let mut ack = [0; 24];
    emit_ack(
        &Ack {
            service: ServiceKind::Reliable,
            cum: 1,
            trigger: Some(0),
            echo: 0,
            window: 16,
            bitmap: 0,
        },
        &mut ack,
    );
    e.handle_tpdu(at(ms(1)), &ack).unwrap();
    assert_eq!(next_out(&mut e), Some(Out::Data(1, Some((2, Some(1))))));
}

/// A riding ack does what the same ack alone does: here it acknowledges the sender's
/// TPDUs, and its trigger shows the older ones lost (SMART).
#[test]
fn test_a_riding_ack_acks_and_finds_losses() {
    let mut e = sender(8);
    queue(&mut e, 3);
    let t = at(us(100));
    assert_eq!(sent(&mut e, Instant::ZERO), [(0, 0)]);
    ack(&mut e, t, 1, Some((0, 0)), 0);
    assert_eq!(sent(&mut e, t), [(1, 0), (2, 0)]);
    // The peer's data TPDU carries an ack: 1 lost, 2 received.
    let mut buf = vec![0; 12 + 21 + 1];
    let n = emit_data_header(
        &DataHeader {
            service: ServiceKind::Reliable,
            first: true,
            last: true,
            seq: 0,
            msg: 0,
            tx: 0,
        },
        Some(&Ack {
            service: ServiceKind::Reliable,
            cum: s(1),
            trigger: Some(s(2)),
            echo: 0,
            window: 64,
            bitmap: 1,
        }),
        &mut buf,
    );
    assert_eq!(n, 33);
    e.handle_tpdu(t, &buf).unwrap();
    let st = e.stats();
    assert_eq!(
        (st.acks_received, st.smart_losses, st.tpdus_received),
        (2, 1, 1)
    );
    assert_eq!(
        e.poll_event().map(|_| ()),
        Some(()),
        "its message delivered"
    );
    // The resend of 1, full (no room for the ack), then the ack of the peer's TPDU.
    let mut out = vec![0; e.config().max_frame_len()];
    let n = e.poll_transmit(t, &mut out).unwrap();
    let Ok(Repr::Data { header, ack, .. }) = Repr::parse(&out[..n]) else {
        panic!("not data");
    };
    assert_eq!((header.seq, header.tx, ack), (s(1), 1, None));
    let n = e.poll_transmit(t, &mut out).unwrap();
    let Ok(Repr::Ack(a)) = Repr::parse(&out[..n]) else {
        panic!("not an ack");
    };
    assert_eq!((a.cum, a.trigger), (1, Some(0)));
}

/// A frame whose riding ack is refused is refused whole: its data is not taken either.
#[test]
fn test_a_refused_riding_ack_refuses_the_frame() {
    let frame = |service: ServiceKind, cum: u32, len: usize| {
        let mut buf = vec![0; 12 + 13 + len];
        emit_data_header(
            &DataHeader {
                service,
                first: true,
                last: true,
                seq: S,
                msg: 40,
                tx: 0,
            },
            Some(&Ack {
                service,
                cum,
                trigger: None,
                echo: 0,
                window: 64,
                bitmap: 0,
            }),
            &mut buf,
        );
        buf
    };
    let mut e = receiver(16);
    // It acknowledges a TPDU this end never sent.
    assert_eq!(
        e.handle_tpdu(at(ms(1)), &frame(ServiceKind::Reliable, 1, 8)),
        Err(RxError::AckBeyondSent { cum: 1 })
    );
    // Its payload is too long: the ack is not taken.
    assert_eq!(
        e.handle_tpdu(at(ms(1)), &frame(ServiceKind::Reliable, 0, 101)),
        Err(RxError::PayloadTooLong { len: 101, max: 100 })
    );
    let st = e.stats();
    assert_eq!((st.tpdus_received, st.acks_received, st.refused), (0, 0, 2));
    assert!(e.poll_event().is_none());
    // A best-effort channel has no acks.
    let c = Config {
        service: Service::BestEffort,
        tpdu_size: 100,
        max_message: 200,
        ..Config::default()
    };
    let mut be = Endpoint::new(c, Isn::default(), Isn { seq: S, msg: 40 }).unwrap();
    assert_eq!(
        be.handle_tpdu(at(ms(1)), &frame(ServiceKind::BestEffort, 0, 8)),
        Err(RxError::AckNotExpected)
    );
    assert!(be.poll_event().is_none());
    assert_eq!(be.stats().tpdus_received, 0);
}

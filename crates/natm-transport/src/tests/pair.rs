//! Two endpoints over impaired wires, in virtual time: a safety phase with faults on
//! (nothing wrong is ever delivered), then a liveness phase with faults off (everything is
//! delivered, or every loss reported).

use alloc::vec;
use alloc::vec::Vec;

use proptest::prelude::*;

use super::*;
use crate::Service;
use crate::testing::{GilbertElliott, PPB};

/// Impairments drawn from a seed: up to 20 % cell loss, bursts, bit errors, frame loss,
/// duplication, jitter and a flap.
fn faults() -> impl Strategy<Value = WireConfig> {
    (
        0u64..=200_000_000,
        prop::option::of((
            1_000u64..200_000,
            10_000_000u64..500_000_000,
            100_000_000u64..=PPB,
        )),
        0u64..20_000_000,
        0u64..100_000_000,
        0u64..50_000_000,
        0u64..2_000,
        prop::option::of((0u64..400, 1u64..300)),
    )
        .prop_map(
            |(cell_loss, burst, bit_errors, frame_loss, duplicate, jitter, flap)| WireConfig {
                rate: 353_207,
                delay: us(100),
                jitter: us(jitter),
                cell_loss,
                burst: burst.map(|(to_bad, to_good, bad_loss)| GilbertElliott {
                    to_bad,
                    to_good,
                    bad_loss,
                }),
                frame_loss,
                bit_errors,
                duplicate,
                queue_cells: 0,
                flaps: flap
                    .map(|(start, len)| vec![(at(ms(start)), ms(len))])
                    .unwrap_or_default(),
            },
        )
}

fn sizes() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(
        prop_oneof![0usize..100, 100usize..5_000, 5_000usize..40_000],
        1..40,
    )
}

fn config(service: Service, tpdu_size: usize) -> Config {
    Config {
        service,
        tpdu_size,
        max_message: 64 << 10,
        recv_buffer: (64 << 10) / tpdu_size as u32 + 64,
        max_window: 64,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Reliable, both ways at once: under faults nothing is delivered out of order, twice
    /// or corrupted; once the faults stop, everything is.
    #[test]
    fn reliable_delivers_everything_once_in_order(
        seed: u64,
        faults in faults(),
        tpdu_size in prop_oneof![1usize..64, 64usize..2_000, 2_000usize..9_000],
        a_sizes in sizes(),
        b_sizes in sizes(),
        ab_seq: u32, ba_seq in (u32::MAX - 20)..=u32::MAX, ab_msg: u32, ba_msg: u32,
        holds: (bool, bool),
    ) {
        let (ab, ba) = (Isn { seq: ab_seq, msg: ab_msg }, Isn { seq: ba_seq, msg: ba_msg });
        let mut p = pair(config(Service::Reliable, tpdu_size), ab, ba, &faults, seed);
        (p.a_holds, p.b_holds) = holds;
        let (mut a, mut b) = (Outbox::new(seed, a_sizes), Outbox::new(!seed, b_sizes));
        drive(&mut p, &mut a, &mut b, at(ms(500)));
        prop_assert_eq!(check_reliable(&p.b_events, ab, &a, false), Ok(()));
        prop_assert_eq!(check_reliable(&p.a_events, ba, &b, false), Ok(()));
        p.ab.set_config(WireConfig::oc3(us(100)));
        p.ba.set_config(WireConfig::oc3(us(100)));
        let limit = p.now + Duration::from_secs(600);
        drive(&mut p, &mut a, &mut b, limit);
        prop_assert_eq!(check_reliable(&p.b_events, ab, &a, true), Ok(()));
        prop_assert_eq!(check_reliable(&p.a_events, ba, &b, true), Ok(()));
        // Everything acknowledged in the end.
        let limit = p.now + Duration::from_secs(120);
        p.run_until(limit);
        prop_assert!(p.a.send_idle() && p.b.send_idle());
        prop_assert_eq!(p.refused, 0);
        let s = p.a.stats();
        prop_assert!(s.rto >= ms(50));
        prop_assert!(s.cwnd >= 1 && s.cwnd <= 64);
    }

    /// Best effort: what is delivered is right and delivered once; every other message is
    /// reported lost exactly once (a last message, sent without faults, flushes the tail).
    #[test]
    fn best_effort_never_delivers_twice_and_reports_every_loss(
        seed: u64,
        faults in faults(),
        tpdu_size in prop_oneof![1usize..64, 64usize..2_000, 2_000usize..9_000],
        guaranteed: bool,
        sizes in sizes(),
        isn_seq in (u32::MAX - 20)..=u32::MAX, isn_msg: u32,
    ) {
        let service = if guaranteed { Service::Guaranteed { rate: 200_000 } } else { Service::BestEffort };
        let ab = Isn { seq: isn_seq, msg: isn_msg };
        let mut p = pair(config(service, tpdu_size), ab, Isn::default(), &faults, seed);
        let mut a = Outbox::new(seed, sizes);
        let mut none = Outbox::default();
        drive(&mut p, &mut a, &mut none, at(ms(500)));
        p.run_until(at(ms(1_000)));
        p.ab.set_config(WireConfig::oc3(us(100)));
        a.sizes.push(10);
        let limit = p.now + Duration::from_secs(10);
        drive(&mut p, &mut a, &mut none, limit);
        let limit = p.now + Duration::from_secs(5);
        p.run_until(limit);
        let n = a.sizes.len();
        let mut seen = vec![0u32; n];
        let mut last_delivered = None;
        for (_, e) in &p.b_events {
            match e {
                Event::Message { msg, data } => {
                    let k = msg.since(MsgSeq(isn_msg)) as usize;
                    prop_assert!(k < n, "message {} never sent", msg);
                    prop_assert_eq!(data, &message(seed, k as u64, a.sizes[k]));
                    prop_assert!(last_delivered.is_none_or(|l| l < k), "{} after {:?}", k, last_delivered);
                    last_delivered = Some(k);
                    seen[k] += 1;
                }
                Event::Lost { first, last } => {
                    let (f, l) = (first.since(MsgSeq(isn_msg)) as usize, last.since(MsgSeq(isn_msg)) as usize);
                    prop_assert!(f <= l && l < n, "lost {}..={} of {}", f, l, n);
                    for s in &mut seen[f..=l] {
                        *s += 1;
                    }
                }
            }
        }
        prop_assert!(seen.iter().all(|&s| s == 1), "delivered or lost other than once: {:?}", seen);
        prop_assert_eq!(seen[n - 1], 1);
        prop_assert_eq!(p.refused, 0);
        let st = p.b.stats();
        prop_assert_eq!(st.msgs_delivered + st.msgs_lost, n as u64);
    }
}

/// Request and reply, one at a time: with each application holding its ack for its next
/// call ([`crate::Endpoint::hold_ack`]), the ack rides on the reply and on the next
/// request, so each round trip is one frame each way, as raw AAL5's; without, two. Under
/// loss, duplication and jitter too, every request and reply arrives once, in order.
#[test]
fn held_acks_ride_on_requests_and_replies() {
    let run = |holds: bool, faults: &WireConfig, seed: u64| {
        let (ab, ba) = (
            Isn { seq: 5, msg: 6 },
            Isn {
                seq: u32::MAX,
                msg: 8,
            },
        );
        let mut p = pair(Config::default(), ab, ba, faults, seed);
        (p.a_holds, p.b_holds) = (holds, holds);
        let n = 200;
        let (mut requests, mut replies) = (
            Outbox::new(seed, vec![8; n]),
            Outbox::new(!seed, vec![8; n]),
        );
        let limit = at(Duration::from_secs(600));
        loop {
            // The client sends request k once reply k - 1 came; the server replies to
            // each request it has.
            let got_replies = messages(&p.a_events);
            if requests.offered == got_replies && requests.offered < n {
                requests.offered += 1;
                let m = message(requests.seed, requests.offered as u64 - 1, 8);
                p.a.send_message(p.now, &m).unwrap();
            }
            while replies.offered < messages(&p.b_events) {
                replies.offered += 1;
                let m = message(replies.seed, replies.offered as u64 - 1, 8);
                p.b.send_message(p.now, &m).unwrap();
            }
            if got_replies == n || !p.step(limit) {
                break;
            }
        }
        p.run_until(p.now + ms(1_000));
        assert_eq!(check_reliable(&p.b_events, ab, &requests, true), Ok(()));
        assert_eq!(check_reliable(&p.a_events, ba, &replies, true), Ok(()));
        assert!(p.a.send_idle() && p.b.send_idle());
        (
            p.ab.stats.frames,
            p.ba.stats.frames,
            p.a.stats(),
            p.b.stats(),
        )
    };
    let clean = WireConfig::oc3(us(100));
    let (ab, ba, a, b) = run(true, &clean, 1);
    // Each way the 200 messages; and the last reply's ack, alone.
    assert_eq!((ab, ba), (201, 200), "{a:?} {b:?}");
    assert_eq!((a.acks_carried, b.acks_carried), (199, 200));
    let (ab, ba, ..) = run(false, &clean, 1);
    assert_eq!((ab, ba), (400, 400));
    for seed in 0..20 {
        let faults = WireConfig {
            cell_loss: 20_000_000,
            duplicate: 20_000_000,
            jitter: us(50),
            ..clean.clone()
        };
        let (.., a, b) = run(true, &faults, seed);
        assert!(a.acks_carried > 100 && b.acks_carried > 100, "{a:?} {b:?}");
    }
}

/// A receiver that stops reading closes its window; the sender stalls without losing or
/// overrunning anything and resumes when reading resumes, even when every window update
/// is lost (the persist timer probes).
#[test]
fn flow_control_stall_ends() {
    for lose_updates in [false, true] {
        let c = Config {
            tpdu_size: 1_000,
            max_message: 4_000,
            recv_buffer: 16,
            max_window: 64,
            ..Config::default()
        };
        let ab = Isn {
            seq: u32::MAX - 3,
            msg: 5,
        };
        let mut p = pair(c, ab, Isn::default(), &WireConfig::oc3(us(100)), 1);
        p.b_reads = false;
        let mut a = Outbox::new(3, vec![3_500; 40]);
        drive(&mut p, &mut a, &mut Outbox::default(), at(ms(200)));
        // 16 TPDUs of buffer hold 4 messages of 4 TPDUs: then the window is 0.
        assert_eq!(p.b.receive_window(), 0);
        assert!(p.b.has_events());
        assert_eq!(p.a.stats().peer_window, 0);
        let sent = p.a.stats().tpdus_sent;
        p.run_until(at(ms(2_000)));
        // Only window probes went past the closed window, each dropped and answered; new
        // TPDUs stopped (the first probe may be the next new one).
        let s = p.a.stats();
        assert!(s.window_probes >= 5, "{s:?}");
        assert_eq!(
            p.b.stats().beyond_window,
            s.window_probes,
            "the sender kept to the window"
        );
        assert!(s.tpdus_sent <= sent + 1, "{s:?}");
        assert_eq!(s.timeouts, 0);
        if lose_updates {
            // From now on b's acks without trigger are lost: only a probe's answer opens.
            p.ba.set_config(WireConfig {
                frame_loss: PPB,
                ..WireConfig::oc3(us(100))
            });
        }
        p.b_reads = true;
        p.pump();
        p.ba.set_config(WireConfig::oc3(us(100)));
        drive(&mut p, &mut a, &mut Outbox::default(), at(ms(60_000)));
        assert_eq!(check_reliable(&p.b_events, ab, &a, true), Ok(()));
    }
}

/// Sequence numbers wrap on both sides of a long transfer of small TPDUs.
#[test]
fn sequence_numbers_wrap() {
    let c = config(Service::Reliable, 16);
    let ab = Isn {
        seq: u32::MAX - 1_000,
        msg: u32::MAX - 3,
    };
    let ba = Isn {
        seq: u32::MAX,
        msg: u32::MAX,
    };
    let faults = WireConfig {
        cell_loss: 5_000_000,
        ..WireConfig::oc3(us(100))
    };
    let mut p = pair(c, ab, ba, &faults, 9);
    let mut a = Outbox::new(1, vec![1_000; 40]);
    let mut b = Outbox::new(2, vec![100; 40]);
    drive(&mut p, &mut a, &mut b, at(Duration::from_secs(60)));
    assert_eq!(check_reliable(&p.b_events, ab, &a, true), Ok(()));
    assert_eq!(check_reliable(&p.a_events, ba, &b, true), Ok(()));
    assert!(p.a.stats().tpdus_sent > 2_000);
    assert!(p.a.stats().smart_resends > 0);
}

/// A message of 1 MiB, and one at the limit, segmented and reassembled byte-exact.
#[test]
fn one_mebibyte_messages() {
    let c = Config::default();
    let ab = Isn { seq: 77, msg: 1 };
    let faults = WireConfig {
        cell_loss: 100_000,
        ..WireConfig::oc3(us(100))
    };
    let mut p = pair(c, ab, Isn::default(), &faults, 4);
    let mut a = Outbox::new(5, vec![1 << 20, 1, (1 << 20) - 1, 0]);
    drive(
        &mut p,
        &mut a,
        &mut Outbox::default(),
        at(Duration::from_secs(30)),
    );
    assert_eq!(check_reliable(&p.b_events, ab, &a, true), Ok(()));
    assert_eq!(
        p.a.send_message(p.now, &vec![0; (1 << 20) + 1]),
        Err(SendError::MessageTooLarge {
            len: (1 << 20) + 1,
            max: 1 << 20
        })
    );
}

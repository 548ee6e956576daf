//! The oracles' own tests: each catches what it is for, and the plans are sound.

use super::driver::flow_key;
use super::*;

fn one_channel(service: Service) -> TransportPlan {
    let mut config = Config {
        service,
        tpdu_size: 1500,
        ..Config::default()
    };
    config.recv_buffer = config.tpdus_of(config.max_message) as u32;
    TransportPlan {
        channels: vec![ChannelPlan {
            config,
            isn: [Isn { seq: 5, msg: 9 }, Isn { seq: 70, msg: 3 }],
            messages: [Vec::new(), Vec::new()],
            hold_acks: None,
        }],
        faults: Vec::new(),
    }
}

/// Host h2's app takes `messages` from an h1 endpoint (acks carried back), the ledger
/// saying `sent` were sent: the first failure its oracles report, and the ledger.
fn deliver(
    service: Service,
    sent: &[usize],
    messages: &[Vec<u8>],
) -> (Option<(&'static str, String)>, Shared) {
    let plan = one_channel(service);
    let ledger = new_ledger(&plan);
    ledger.borrow_mut().flows[0][0].sent = sent.to_vec();
    let mut app = TransportApp::new(1, &plan, ledger.clone());
    let ch = &plan.channels[0];
    let mut tx = Endpoint::new(ch.config, ch.isn[0], ch.isn[1]).unwrap();
    let now = Instant::ZERO;
    for m in messages {
        tx.send_message(now, m).unwrap();
    }
    let (mut io, mut buf) = (AppIo::new(), vec![0; ch.config.max_frame_len()]);
    let vc = app.chans[0].vc;
    loop {
        let mut moved = false;
        while let Some(n) = tx.poll_transmit(now, &mut buf) {
            app.on_sdu(now, vc, &buf[..n], &mut io);
            if let Some(f) = io.take_failure() {
                return (Some(f), ledger);
            }
            moved = true;
        }
        let back: Vec<Vec<u8>> = io.sends().map(|(_, b)| b.to_vec()).collect();
        io.clear();
        for b in back {
            tx.handle_tpdu(now, &b).unwrap();
            // The frame has left: the driver may send what it held back.
            app.on_sent(now, vc, b.len(), true, &mut io);
            moved = true;
        }
        if !moved {
            return (None, ledger);
        }
    }
}

fn message(key: u64, i: u64, len: usize) -> Vec<u8> {
    let mut m = vec![0; len];
    fill_message(key, i, &mut m);
    m
}

#[test]
fn messages_as_sent_pass_the_oracles() {
    let key = flow_key(0, 0);
    for service in [Service::Reliable, Service::BestEffort] {
        let lens = [1, 4000, 20_000];
        let msgs: Vec<_> = (0..3).map(|i| message(key, i, lens[i as usize])).collect();
        let (fail, ledger) = deliver(service, &lens, &msgs);
        assert_eq!(fail, None, "{service:?}");
        let l = ledger.borrow();
        assert_eq!((l.flows[0][0].delivered, l.flows[0][0].next), (3, 3));
        assert_eq!(l.flows[0][0].bytes, 24_001);
    }
}

#[test]
fn a_changed_byte_is_caught_on_every_service() {
    let key = flow_key(0, 0);
    for (service, inv) in [
        (Service::Reliable, "reliable in order, exactly once"),
        (Service::BestEffort, "best effort intact, losses reported"),
        (
            Service::Guaranteed { rate: 100_000 },
            "best effort intact, losses reported",
        ),
    ] {
        let mut m = message(key, 0, 3000);
        m[2000] ^= 4;
        let (fail, _) = deliver(service, &[3000], &[m]);
        let (got, detail) = fail.expect("caught");
        assert_eq!(got, inv);
        assert!(detail.contains("first difference at byte 2000"), "{detail}");
    }
}

#[test]
fn a_message_never_sent_or_another_messages_bytes_are_caught() {
    let key = flow_key(0, 0);
    // The ledger knows of one message; the endpoint hands up two.
    let msgs = vec![message(key, 0, 10), message(key, 1, 10)];
    let (fail, _) = deliver(Service::BestEffort, &[10], &msgs);
    assert!(fail.expect("caught").1.contains("never sent"));
    // Message 1's bytes as message 0.
    let (fail, _) = deliver(Service::Reliable, &[10], &[message(key, 1, 10)]);
    assert_eq!(fail.expect("caught").0, "reliable in order, exactly once");
}

fn rate_ledger(plan: &TransportPlan, cells: u64) -> Ledger {
    let mut l = Ledger::default();
    let windows = (PHASE.as_nanos() / RATE_WINDOW.as_nanos()) as usize;
    l.flows = plan
        .channels
        .iter()
        .map(|_| {
            [0, 1].map(|_| Flow {
                rx_cells: vec![cells; windows],
                ..Flow::default()
            })
        })
        .collect();
    l
}

#[test]
fn the_rate_check_holds_within_the_bucket_and_skips_faults_and_idle_senders() {
    let plan = one_channel(Service::Guaranteed { rate: 25_000 });
    // 1,000 cells per 40 ms window; the tolerance is 8 TPDUs of 32 cells and 2 %.
    let want = 1_000;
    // Windows 40–80 ms … 240–280 ms: after RATE_SKIP, within the phase.
    let all = 6;
    let (n, worst) = check_rates(&plan, &rate_ledger(&plan, want)).unwrap();
    assert_eq!((n, worst), (2 * all, 0.0));
    // A window off by a bucket's burst passes if its neighbours make up for it.
    let mut l = rate_ledger(&plan, want);
    for (k, c) in l.flows[0][1].rx_cells.iter_mut().enumerate() {
        *c = if k % 2 == 0 { want + 240 } else { want - 240 };
    }
    let (_, worst) = check_rates(&plan, &l).unwrap();
    assert!((worst - 0.24).abs() < 1e-9, "{worst}");
    let e = check_rates(&plan, &rate_ledger(&plan, want - 290)).unwrap_err();
    assert!(e.contains("710 cells in 40 ms from 40 ms"), "{e}");
    // 10 % over in every window: each passes, their run (6,600 cells) does not.
    let e = check_rates(&plan, &rate_ledger(&plan, want + 100)).unwrap_err();
    assert!(e.contains("6600 cells in 240 ms from 40 ms"), "{e}");
    // A sender that stops sending is seen: windows with nothing received count.
    let mut l = rate_ledger(&plan, want);
    l.flows[0][0].rx_cells.truncate(4);
    let e = check_rates(&plan, &l).unwrap_err();
    assert!(e.contains("0 cells in 40 ms from 160 ms"), "{e}");
    // A fault over the whole phase: nothing is checked.
    let mut faulty = plan.clone();
    faulty.faults.push(Fault {
        at: Duration::ZERO,
        length: PHASE,
        kind: FaultKind::LinkDown { link: 1 },
    });
    assert_eq!(check_rates(&faulty, &rate_ledger(&plan, 0)).unwrap().0, 0);
    // A sender idle at 100 ms: its window (80–120 ms) is not checked.
    let mut l = rate_ledger(&plan, want);
    l.flows[0][0].idle.push(100_000_000);
    l.flows[0][0].rx_cells[2] = 0;
    let (n, _) = check_rates(&plan, &l).unwrap();
    assert_eq!(n, 2 * all - 1);
}

#[test]
fn plans_are_valid_and_the_seed_decides_them() {
    for seed in 0..100 {
        let p = TransportPlan::draw(seed);
        assert_eq!(p, TransportPlan::draw(seed));
        for c in &p.channels {
            assert_eq!(c.config.validate(), Ok(()));
            for list in &c.messages {
                assert!(
                    list.iter()
                        .all(|m| m.1 <= MAX_MESSAGE && m.0.as_nanos() < PHASE.as_nanos())
                );
            }
        }
        for f in &p.faults {
            assert!(f.at.as_nanos() + f.length.as_nanos() <= PHASE.as_nanos());
        }
    }
}

//! Two reliable flows through one switch output queue, in virtual time: they share the
//! line evenly, fill it, and read the queue's drops as congestion (the window halves).
//!
//! Set-up: two default-configured channels whose data frames go through one OC-3c line
//! with a drop-tail queue (a frame that would wait behind more than the queue's cells is
//! dropped whole, as natm-switch's UBR output drops), each with its own ack wire; 8 KiB
//! messages queued back to back; the second flow starts after the first has the line to
//! itself. A frame is tagged with its flow by one byte in front on the shared line (it
//! adds a cell to a frame only when the frame ends within a byte of a cell's end).
//!
//! This is the case the window's "a random-looking loss cuts by a fifth" rule must not
//! take for random loss: a flow that cut by a fifth at the queue's drops would keep more
//! of the line than its peer.

use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::testing::WireStats;
use crate::{Endpoint, Stats};

const SIZE: usize = 8_192;

/// One flow: its two ends, its ack wire, its messages.
struct Flow {
    a: Endpoint,
    b: Endpoint,
    back: Wire,
    out: Outbox,
    /// Sends from this time on.
    start: Instant,
    /// Messages delivered, and those delivered from the measuring start on.
    delivered: usize,
    measured: usize,
}

/// What a run gave: each flow's goodput (message bytes/s) from `from` to the end, its
/// sender's figures, and the shared line's.
struct Shared {
    goodput: Vec<f64>,
    stats: Vec<Stats>,
    line: WireStats,
}

/// `starts.len()` flows over one line of `line` (its queue and delay; acks the same delay,
/// no queue), run until `end`, goodput measured from `from`.
fn run(line: &WireConfig, starts: &[Duration], from: Duration, end: Duration, seed: u64) -> Shared {
    let config = Config::default();
    let cell = Duration::from_nanos(1_000_000_000u64.div_ceil(line.rate));
    let back = WireConfig::oc3(line.delay);
    let mut flows: Vec<Flow> = starts
        .iter()
        .enumerate()
        .map(|(i, &start)| {
            let isn = Isn {
                seq: (seed as u32).wrapping_add(i as u32 * 0x4000_0000),
                msg: 0,
            };
            let mut a = Endpoint::new(config, isn, Isn::default()).expect("valid");
            // The API's hello measures the round trip before any TPDU.
            a.set_rtt_hint(line.delay + line.delay + cell + cell);
            Flow {
                a,
                b: Endpoint::new(config, Isn::default(), isn).expect("valid"),
                back: Wire::new(back.clone(), seed ^ (i as u64 + 1)),
                out: Outbox::new(seed + i as u64, vec![SIZE; 200_000]),
                start: at(start),
                delivered: 0,
                measured: 0,
            }
        })
        .collect();
    let mut wire = Wire::new(line.clone(), seed);
    let mut frame = vec![0u8; config.max_frame_len() + 1];
    let (from, end) = (at(from), at(end));
    let mut now = Instant::ZERO;
    loop {
        for (i, f) in flows.iter_mut().enumerate() {
            if now < f.start {
                continue;
            }
            f.out.offer(&mut f.a, now);
            frame[0] = i as u8;
            while let Some(n) = f.a.poll_transmit(now, &mut frame[1..]) {
                wire.send(now, &frame[..=n]);
            }
            while let Some(n) = f.b.poll_transmit(now, &mut frame[1..]) {
                f.back.send(now, &frame[1..=n]);
            }
            while let Some(e) = f.b.poll_event() {
                let Event::Message { data, .. } = e else {
                    panic!("flow {i}: {e:?}");
                };
                assert!(
                    data == message(f.out.seed, f.delivered as u64, SIZE),
                    "flow {i}: message {} is not the one sent",
                    f.delivered
                );
                f.delivered += 1;
                if now >= from {
                    f.measured += 1;
                }
            }
        }
        let next = flows
            .iter()
            .flat_map(|f| {
                let waiting = (f.start > now).then_some(f.start);
                [
                    f.a.poll_timeout(),
                    f.b.poll_timeout(),
                    f.back.next_arrival(),
                    waiting,
                ]
            })
            .chain([wire.next_arrival()])
            .flatten()
            .min();
        match next {
            Some(t) if t <= end => now = now.max(t),
            _ => break,
        }
        while let Some(fr) = wire.pop_due(now) {
            let f = &mut flows[usize::from(fr[0])];
            f.b.handle_tpdu(now, &fr[1..]).expect("a well-formed TPDU");
        }
        for f in &mut flows {
            while let Some(fr) = f.back.pop_due(now) {
                f.a.handle_tpdu(now, &fr).expect("a well-formed ack");
            }
            if f.a.poll_timeout().is_some_and(|t| t <= now) {
                f.a.handle_timeout(now);
            }
            if f.b.poll_timeout().is_some_and(|t| t <= now) {
                f.b.handle_timeout(now);
            }
        }
    }
    let secs = (end - from).as_nanos() as f64 / 1e9;
    Shared {
        goodput: flows
            .iter()
            .map(|f| (f.measured * SIZE) as f64 / secs)
            .collect(),
        stats: flows.iter().map(|f| f.a.stats()).collect(),
        line: wire.stats,
    }
}

#[test]
fn two_flows_through_one_full_queue_share_the_line_and_halve() {
    // natm-switch's UBR output queue (4,096 cells) and a shorter one; 100 µs and 1 ms
    // one way. Whether most cuts must be halvings: at 2,000 cells 58 % of them were fifths
    // (the drops of two flows interleave, and each flow's backlog is half the queue's),
    // yet the shares stayed within 2 % and the line 94 % full.
    for (queue, delay, halvings) in [
        (4_096, us(100), true),
        (4_096, ms(1), true),
        (2_000, us(100), false),
    ] {
        let line = WireConfig {
            queue_cells: queue,
            ..WireConfig::oc3(delay)
        };
        let alone = run(&line, &[ms(0)], ms(1_000), ms(2_500), 11).goodput[0];
        let two = run(&line, &[ms(0), ms(500)], ms(1_000), ms(2_500), 11);
        let (g, s) = (&two.goodput, &two.stats);
        let text = format!(
            "queue {queue} cells, {delay:?} one way: {:.1} and {:.1} Mbit/s (alone {:.1}); \
             cuts {} ({} by a fifth) and {} ({}); timeouts {} and {}; queue drops {}; \
             TPDUs {} and {} B",
            g[0] * 8e-6,
            g[1] * 8e-6,
            alone * 8e-6,
            s[0].window_cuts,
            s[0].random_loss_cuts,
            s[1].window_cuts,
            s[1].random_loss_cuts,
            s[0].timeouts,
            s[1].timeouts,
            two.line.queue_drops,
            s[0].tpdu_size,
            s[1].tpdu_size,
        );
        std::println!("{text}");
        // The queue overflowed: the flows did meet.
        assert!(two.line.queue_drops > 0, "{text}");
        // Even shares, and the line kept full between them.
        let (lo, hi) = (g[0].min(g[1]), g[0].max(g[1]));
        assert!(lo >= 0.8 * hi, "{text}");
        assert!(g[0] + g[1] >= 0.9 * alone, "{text}");
        // Drops at a full queue are congestion: mostly halvings, not the fifth of random
        // loss (up to two fifths of the cuts were fifths at 1 ms: the late flow's least
        // round trip already has the first flow's queue in it, so its backlog looks small).
        for st in s {
            assert!(st.window_cuts > 0, "{text}");
            if halvings {
                assert!(st.random_loss_cuts * 2 < st.window_cuts, "{text}");
            }
        }
    }
}

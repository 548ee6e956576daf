//! The transport's cost per TPDU on one core, both endpoints' work included: the figure a
//! host's per-TPDU processing budget is set against.
//!
//! * `tpdu/reliable/S`: A sends 1,000 messages of S bytes (one TPDU each) to B over a
//!   perfect link with zero delay; every TPDU is segmented, encoded, parsed, buffered,
//!   acknowledged by its own SMART ack, reassembled and delivered as an `Event::Message`.
//! * `tpdu/best_effort/S`: the same without acks or send buffer.
//! * `round_trip/reliable/8`: 1,000 request/reply exchanges of 8 bytes, each end holding
//!   the ack of what it received until its reply carries it, as the API's channel does.
//!
//! Throughput is in TPDUs (`Throughput::Elements`). Run: `cargo bench -p natm-transport`.

use std::hint::black_box;
use std::time::Duration as StdDuration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use natm_core::Instant;
use natm_transport::{Config, Endpoint, Event, Isn, Service};

const MESSAGES: u64 = 1_000;

fn carry(from: &mut Endpoint, to: &mut Endpoint, buf: &mut [u8], now: Instant) -> bool {
    let mut moved = false;
    while let Some(n) = from.poll_transmit(now, buf) {
        to.handle_tpdu(now, &buf[..n])
            .expect("a TPDU of the channel");
        moved = true;
    }
    moved
}

/// A → B, `n` messages of `msg`; returns how many B delivered.
fn transfer(a: &mut Endpoint, b: &mut Endpoint, buf: &mut [u8], msg: &[u8], n: u64) -> u64 {
    let now = Instant::ZERO;
    let (mut sent, mut delivered) = (0, 0);
    while delivered < n {
        // 64 at a time: a best-effort receiver whose application falls behind its buffer
        // (256 TPDUs) reports the excess lost.
        let batch = (sent + 64).min(n);
        while sent < batch && a.send_message(now, msg).is_ok() {
            sent += 1;
        }
        let moved = carry(a, b, buf, now) | carry(b, a, buf, now);
        while let Some(e) = b.poll_event() {
            if let Event::Message { data, .. } = e {
                black_box(data);
                delivered += 1;
            }
        }
        assert!(moved || delivered == n, "the transfer stalled");
    }
    delivered
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("tpdu");
    g.throughput(Throughput::Elements(MESSAGES));
    g.measurement_time(StdDuration::from_secs(3));
    for (name, service) in [
        ("reliable", Service::Reliable),
        ("best_effort", Service::BestEffort),
    ] {
        for size in [64usize, 1_500, 8_192] {
            let config = Config {
                service,
                tpdu_size: size,
                max_message: size,
                ..Config::default()
            };
            g.bench_function(BenchmarkId::new(name, size), |bch| {
                let isn = Isn::default();
                let mut a = Endpoint::new(config, isn, isn).expect("a valid config");
                let mut b = Endpoint::new(config, isn, isn).expect("a valid config");
                let mut buf = vec![0; config.max_frame_len()];
                let msg = vec![0x5a; size];
                bch.iter(|| {
                    let got = transfer(&mut a, &mut b, &mut buf, &msg, MESSAGES);
                    assert_eq!(got, MESSAGES);
                })
            });
        }
    }
    g.finish();

    // The 8-byte round trip's share that is the transport's: the API's channel holds the
    // ack of a message it hands up until the application's next call, so a reply carries
    // it (one frame each way).
    let mut g = c.benchmark_group("round_trip");
    g.throughput(Throughput::Elements(MESSAGES));
    g.bench_function("reliable/8", |bch| {
        let config = Config::default();
        let isn = Isn::default();
        let mut a = Endpoint::new(config, isn, isn).expect("a valid config");
        let mut b = Endpoint::new(config, isn, isn).expect("a valid config");
        a.hold_acks(true);
        b.hold_acks(true);
        let mut buf = vec![0; config.max_frame_len()];
        let msg = [0x5au8; 8];
        let now = Instant::ZERO;
        let mut one_way = |from: &mut Endpoint, to: &mut Endpoint| {
            from.send_message(now, &msg).expect("room");
            from.release_ack();
            let n = from.poll_transmit(now, &mut buf).expect("the message");
            to.handle_tpdu(now, &buf[..n])
                .expect("a TPDU of the channel");
            match to.poll_event() {
                Some(Event::Message { data, .. }) => black_box(data),
                other => panic!("{other:?}"),
            };
        };
        bch.iter(|| {
            for _ in 0..MESSAGES {
                one_way(&mut a, &mut b);
                one_way(&mut b, &mut a);
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! SD throughput between two SSCOP endpoints in virtual time: messages per second of one
//! core, both endpoints' work included.
//!
//! * `sd/transfer/N`: A sends N messages of 64 bytes to B over a perfect link with zero
//!   delay; after every MaxPD (25) SDs A's POLL goes to B and B's STAT comes back, which
//!   slides the window (30 SDs, linux-atm's). Every PDU is encoded, parsed, buffered for
//!   retransmission, acknowledged and delivered as an `Event::Data`.
//!
//! Throughput is in messages (`Throughput::Elements`); the goal (issue 23) is 1 M/s. Run:
//! `cargo bench -p natm-sscop --bench sd`.

use std::hint::black_box;
use std::time::Duration as StdDuration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use natm_core::Instant;
use natm_sscop::{Config, Event, Sscop, State};

const MESSAGES: u64 = 10_000;

fn carry(from: &mut Sscop, to: &mut Sscop, now: Instant) {
    while let Some(pdu) = from.poll_transmit() {
        to.handle_pdu(now, &pdu);
    }
}

fn established() -> (Sscop, Sscop) {
    let now = Instant::ZERO;
    let mut a = Sscop::new(Config::default());
    let mut b = Sscop::new(Config::default());
    a.establish_request(now, Vec::new(), true);
    carry(&mut a, &mut b, now);
    b.establish_response(now, Vec::new(), true);
    carry(&mut b, &mut a, now);
    while a.poll_event().is_some() {}
    while b.poll_event().is_some() {}
    assert_eq!(a.state(), State::DataTransferReady);
    (a, b)
}

/// Send `n` messages A → B; returns how many B delivered.
fn transfer(a: &mut Sscop, b: &mut Sscop, n: u64) -> u64 {
    let now = Instant::ZERO;
    let msg = [0x5au8; 64];
    let mut delivered = 0;
    let mut sent = 0;
    while delivered < n {
        for _ in 0..25.min(n - sent) {
            a.data_request(now, msg.to_vec());
            sent += 1;
        }
        carry(a, b, now);
        while let Some(e) = b.poll_event() {
            if let Event::Data { data, .. } = e {
                black_box(data);
                delivered += 1;
            }
        }
        carry(b, a, now);
        while a.poll_event().is_some() {}
    }
    delivered
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("sd");
    g.throughput(Throughput::Elements(MESSAGES));
    g.measurement_time(StdDuration::from_secs(3));
    g.bench_function(BenchmarkId::new("transfer", MESSAGES), |bch| {
        let (mut a, mut b) = established();
        bch.iter(|| {
            let got = transfer(&mut a, &mut b, MESSAGES);
            assert_eq!(got, MESSAGES);
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

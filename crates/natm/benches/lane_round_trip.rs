//! The 8-byte round trip of a reliable transport channel beside raw AAL5's, between two
//! lane-path VCs joined in this process (`natm::internal::lane_pair`, what a splice gives
//! two applications), with no daemon running: issue 25's round-trip point without the
//! lab's noise. `natm perf transport --rr` measures the same over the lab.
//!
//! `cargo bench -p natm --bench lane_round_trip [-- TRIPS [RUNS]]`: RUNS runs (default 5)
//! of TRIPS round trips (default 100,000) of each kind, alternating raw and channel, the
//! client thread on CPU 0 and the server on CPU 1; it prints each run's p50, p99 and
//! quartiles, and the ratio of the medians.

use std::thread;
use std::time::Instant;

use natm::NotifyMode;
use natm::internal::lane_pair;
use natm::transport::{Channel, Event, Service, TransportOptions};

const SIZE: usize = 8;
const WARMUP: usize = 2_000;

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with("--"));
    let trips: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let opts = TransportOptions::new(Service::Reliable);
    let (count, size) = (opts.buffers(), opts.buffer_size());
    let (mut raw, mut chan) = (Vec::new(), Vec::new());
    for run in 1..=runs {
        for channel in [false, true] {
            let (c, s) = lane_pair(count, size, NotifyMode::Adaptive).expect("a lane pair");
            let mut nanos = if channel {
                channel_trips(c, s, opts, trips)
            } else {
                raw_trips(c, s, trips)
            };
            nanos.sort_unstable();
            let (p50, p99) = (q(&nanos, 0.5), q(&nanos, 0.99));
            let kind = if channel { "channel" } else { "raw" };
            // The quartiles show the steps a waiter's yields put round trips in.
            let (p25, p75) = (q(&nanos, 0.25), q(&nanos, 0.75));
            println!(
                "run {run} {kind:8} p50 {p50:6.3} µs  p99 {p99:6.3} µs  \
                 (p25 {p25:.3}, p75 {p75:.3})"
            );
            if channel { &mut chan } else { &mut raw }.push(p50);
        }
    }
    let (r, c) = (median(&mut raw), median(&mut chan));
    println!(
        "median p50: raw {r:.3} µs, channel {c:.3} µs, channel ÷ raw {:.2}×",
        c / r
    );
}

fn q(sorted: &[u64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p) as usize] as f64 / 1e3
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn pin(cpu: usize) {
    let _ = natm_nic::sched::pin_current_thread(cpu);
}

fn raw_trips(mut client: natm::Vc, mut server: natm::Vc, trips: usize) -> Vec<u64> {
    let total = trips + WARMUP;
    let srv = thread::spawn(move || {
        pin(1);
        let mut buf = [0u8; SIZE];
        for _ in 0..total {
            let n = server.recv(&mut buf).expect("a request");
            server.send(&buf[..n]).expect("a reply");
        }
        server
    });
    pin(0);
    let mut nanos = Vec::with_capacity(trips);
    let mut buf = [0u8; SIZE];
    for i in 0..total as u64 {
        let t0 = Instant::now();
        client.send(&i.to_be_bytes()).expect("a request");
        client.recv(&mut buf).expect("a reply");
        assert_eq!(u64::from_be_bytes(buf), i);
        if i >= WARMUP as u64 {
            nanos.push(t0.elapsed().as_nanos() as u64);
        }
    }
    let server = srv.join().expect("the server thread");
    drop((client, server));
    nanos
}

fn channel_trips(
    client: natm::Vc,
    server: natm::Vc,
    opts: TransportOptions,
    trips: usize,
) -> Vec<u64> {
    let total = trips + WARMUP;
    let srv = thread::spawn(move || {
        pin(1);
        let mut ch = Channel::over(server, opts).expect("the server's channel");
        for _ in 0..total {
            match ch.recv().expect("a request") {
                Event::Message { data, .. } => ch.send(&data).expect("a reply"),
                e => panic!("a reliable channel gave {e:?}"),
            };
        }
        ch.linger(
            std::time::Duration::from_millis(50),
            std::time::Duration::from_secs(1),
        )
        .expect("lingering");
    });
    pin(0);
    let mut ch = Channel::over(client, opts).expect("the client's channel");
    let mut nanos = Vec::with_capacity(trips);
    for i in 0..total as u64 {
        let t0 = Instant::now();
        ch.send(&i.to_be_bytes()).expect("a request");
        match ch.recv().expect("a reply") {
            Event::Message { data, .. } => assert_eq!(data, i.to_be_bytes()),
            e => panic!("a reliable channel gave {e:?}"),
        }
        if i >= WARMUP as u64 {
            nanos.push(t0.elapsed().as_nanos() as u64);
        }
    }
    ch.flush(std::time::Duration::from_secs(5))
        .expect("flushing");
    srv.join().expect("the server thread");
    nanos
}

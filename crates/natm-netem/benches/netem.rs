//! Cells per second through the emulator: a busy OC-3c line without impairments (the FIFO
//! path), and with every impairment on, jitter included (the heap and per-VC order path).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use natm_core::Instant;
use natm_core::LineRate;
use natm_netem::{Config, Netem};

const CELLS: u64 = 100_000;

fn run(config: &Config) -> u64 {
    let mut link = Netem::new(config);
    let mut delivered = 0;
    let mut cell = [0u8; 53];
    for i in 0..CELLS {
        // 1000 VCs, one offer per OC-3c cell time so the queue neither fills nor empties.
        cell[..4].copy_from_slice(&(((i % 1000) as u32) << 4).to_be_bytes());
        let now = Instant::from_nanos(i * 2832);
        link.handle_cell(now, cell);
        while link.poll_transmit(now).is_some() {
            delivered += 1;
        }
    }
    while let Some(t) = link.poll_timeout() {
        while link.poll_transmit(t).is_some() {
            delivered += 1;
        }
    }
    delivered
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("netem");
    g.throughput(Throughput::Elements(CELLS));
    let plain = Config::default();
    g.bench_function("oc3_unimpaired", |b| b.iter(|| run(&plain)));
    let impaired = Config {
        rate: LineRate::default(),
        impairments:
            "loss=1%,burst=0.5%/8,hec=1e-4,hec2=1e-5,ber=1e-6,delay=100us,jitter=20us,seed=7"
                .parse()
                .expect("bench config parses"),
        ..Config::default()
    };
    g.bench_function("oc3_all_impairments", |b| b.iter(|| run(&impaired)));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

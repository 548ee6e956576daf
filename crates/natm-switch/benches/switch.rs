//! The switch's forwarding path: 2 ports, 1,000 UBR cross-connects from port 1 to port 2,
//! unlimited rate. Each iteration hands in a batch of 64 cells (16 consecutive VCs, 4 cells
//! each, spread over all 1,000 VCs across iterations) with `handle_cells` and takes them out
//! with `poll_transmit` in one batch of 64: HEC check, lookup, translation, UBR queueing and
//! weighted round robin, HEC generation. Throughput is cells. Goal (issue 5): ≤ 25 ns per
//! cell, i.e. ≥ 40 M cells/s in the core.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use natm_core::Instant;
use natm_switch::{CrossConnect, Endpoint, PortConfig, PortId, Switch, SwitchConfig};
use natm_wire::cell::hec;

const VCS: u32 = 1000;
const BATCH: usize = 64;

fn cell(vpi: u32, vci: u32) -> [u8; 53] {
    let mut c = [0x5A; 53];
    let w = vpi << 20 | vci << 4;
    c[..4].copy_from_slice(&w.to_be_bytes());
    c[4] = hec(w.to_be_bytes());
    c
}

fn forward(c: &mut Criterion) {
    let mut sw = Switch::new(SwitchConfig::default());
    sw.add_port(PortId(1), PortConfig::default()).expect("port");
    sw.add_port(PortId(2), PortConfig::default()).expect("port");
    let qos = "ubr".parse().expect("qos");
    for i in 0..VCS {
        let xc = CrossConnect::new(
            Endpoint::vc(1, 1, 32 + i as u16),
            Endpoint::vc(2, 2, 32 + i as u16),
            qos,
        );
        sw.connect(Instant::ZERO, &xc).expect("admitted");
    }
    // 1,000 / 16 batches, each of 16 VCs × 4 cells interleaved.
    let batches: Vec<Vec<[u8; 53]>> = (0..VCS.div_ceil(16))
        .map(|b| {
            (0..BATCH as u32)
                .map(|k| cell(1, 32 + (b * 16 + k % 16) % VCS))
                .collect()
        })
        .collect();
    let mut out = vec![[0u8; 53]; BATCH];
    let mut g = c.benchmark_group("switch");
    g.throughput(Throughput::Elements(BATCH as u64));
    let mut i = 0;
    g.bench_function("forward_1000_ubr_vcs_batch_64", |b| {
        b.iter(|| {
            sw.handle_cells(Instant::ZERO, PortId(1), &batches[i]);
            i = (i + 1) % batches.len();
            let n = sw.poll_transmit(Instant::ZERO, PortId(2), &mut out);
            assert_eq!(n, BATCH);
            black_box(&out);
        })
    });
    g.finish();
}

criterion_group!(benches, forward);
criterion_main!(benches);

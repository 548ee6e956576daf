//! The switch's forwarding path: 2 ports, 1,000 UBR cross-connects from port 1 to port 2,
//! unlimited rate. Each iteration hands in a batch of 64 cells (16 consecutive VCs, 4 cells
//! each, spread over all 1,000 VCs across iterations) with `handle_cells` and takes them out
//! with `poll_transmit` in one batch of 64: HEC check, lookup, translation, UBR queueing and
//! weighted round robin, HEC generation. Throughput is cells. Goal (issue 5): ≤ 25 ns per
//! cell, i.e. ≥ 40 M cells/s in the core. A second case sends through an OC-3c-paced port;
//! a third sends 64 cells of one VC per batch (one stream, as a lane's SDU is), which
//! `classify` looks up once; a fourth passes those through `Switch::express`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use natm_core::{Instant, LineRate};
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

/// A switch with 1,000 UBR cross-connects from port 1 to port 2 (whose config is given),
/// and the batches of cells that cycle over them.
fn setup(out_port: PortConfig) -> (Switch, Vec<Vec<[u8; 53]>>) {
    let mut sw = Switch::new(SwitchConfig::default());
    sw.add_port(PortId(1), PortConfig::default()).expect("port");
    sw.add_port(PortId(2), out_port).expect("port");
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
    let batches = (0..VCS.div_ceil(16))
        .map(|b| {
            (0..BATCH as u32)
                .map(|k| cell(1, 32 + (b * 16 + k % 16) % VCS))
                .collect()
        })
        .collect();
    (sw, batches)
}

fn forward(c: &mut Criterion) {
    let mut g = c.benchmark_group("switch");
    g.throughput(Throughput::Elements(BATCH as u64));
    let mut out = vec![[0u8; 53]; BATCH];

    let (mut sw, batches) = setup(PortConfig::default());
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

    // The same through an OC-3c port (353,207 cells/s), virtual time advancing 64 slots
    // per batch: the cost of slot pacing.
    let rated = PortConfig {
        rate: LineRate::OC3,
        ..PortConfig::default()
    };
    let (mut sw, batches) = setup(rated);
    let mut i = 0;
    let mut now = 0u64;
    g.bench_function("forward_1000_ubr_vcs_batch_64_oc3_paced", |b| {
        b.iter(|| {
            let t = Instant::from_nanos(now);
            sw.handle_cells(t, PortId(1), &batches[i]);
            i = (i + 1) % batches.len();
            // 64 slots of 1/353207 s each (181,196.9 ns), rounded up.
            now += 181_197;
            let n = sw.poll_transmit(Instant::from_nanos(now), PortId(2), &mut out);
            assert_eq!(n, BATCH);
            black_box(&out);
        })
    });

    // One VC, 64 cells per batch, as an 8 KiB SDU's cells come from a lane.
    let (mut sw, _) = setup(PortConfig::default());
    let one = vec![cell(1, 32); BATCH];
    g.bench_function("forward_1_ubr_vc_batch_64", |b| {
        b.iter(|| {
            sw.handle_cells(Instant::ZERO, PortId(1), &one);
            let n = sw.poll_transmit(Instant::ZERO, PortId(2), &mut out);
            assert_eq!(n, BATCH);
            black_box(&out);
        })
    });

    // The same 64 cells through the express path (switchd's lane-to-lane case): the
    // headers translated in place, nothing queued. The batch is copied first, as switchd
    // has it in its receive buffer.
    let (mut sw, _) = setup(PortConfig::default());
    g.bench_function("express_1_ubr_vc_batch_64", |b| {
        b.iter(|| {
            out.copy_from_slice(&one);
            let taken = sw.express(PortId(1), &mut out, |_, _| true);
            assert_eq!(taken, Some((PortId(2), BATCH)));
            black_box(&out);
        })
    });
    g.finish();
}

criterion_group!(benches, forward);
criterion_main!(benches);

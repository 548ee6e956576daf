//! Cell decisions per second beside a plain loop over the same cells, measured in the same
//! run (the machine is shared and noisy, so only ratios within one run mean much).
//!
//! * `policer/floor/N`: a loop over N pre-generated arrivals that only sums their times.
//! * `policer/cbr1/N`, `policer/vbr1/N`: the same arrivals through a UPC
//!   (`Policer::police`) under CBR.1 and VBR.1; about a third of the cells fail.
//! * `shaper/floor/V`: a round robin over V per-VC counters, one step per cell.
//! * `shaper/sched/V`: cells out of a `Scheduler` with V VCs, all backlogged (a mix of
//!   CBR, rt-VBR, nrt-VBR and UBR), virtual time jumping to each `poll_timeout`.
//!
//! Throughput is in cells (`Throughput::Elements`). Run: `cargo bench -p natm-traffic
//! --bench traffic`; `scripts/bench-table policer floor` and `scripts/bench-table shaper
//! floor` print the tables.

use std::hint::black_box;
use std::time::Duration as StdDuration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use natm_core::{Duration, Instant};
use natm_traffic::policer::{Conformance, Contract, Policer};
use natm_traffic::sched::{Scheduler, VcSpec};

/// OC-3c, cells/s.
const OC3: u32 = natm_core::PhyRate::OC3.cells_per_s();
/// Arrivals per policer iteration.
const ARRIVALS: usize = 4096;
/// Cells per shaper iteration.
const CELLS: u64 = 4096;

/// Arrival times with gaps of 5 to 25 µs (a fixed LCG, so every run polices the same
/// cells), against PCR 100 000 (10 µs) and SCR 50 000 cells/s (20 µs).
fn arrivals() -> Vec<(Instant, bool)> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut t = 0u64;
    (0..ARRIVALS)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            t += 5_000 + (x >> 33) % 20_001;
            (Instant::from_nanos(t), (x >> 20) & 7 == 0)
        })
        .collect()
}

fn policer(c: &mut Criterion) {
    let cells = arrivals();
    let mut g = c.benchmark_group("policer");
    g.throughput(Throughput::Elements(ARRIVALS as u64));
    g.bench_with_input(BenchmarkId::new("floor", ARRIVALS), &cells, |b, cells| {
        b.iter(|| {
            let mut sum = 0u64;
            for &(t, clp) in cells {
                sum = sum.wrapping_add(black_box(t.as_nanos()) + u64::from(clp));
            }
            sum
        })
    });
    let cdvt = Duration::from_micros(1);
    let contracts = [
        (
            "cbr1",
            Conformance::Cbr1,
            Contract {
                pcr: 100_000,
                cdvt,
                ..Contract::default()
            },
        ),
        (
            "vbr1",
            Conformance::Vbr1,
            Contract {
                pcr: 100_000,
                scr: 50_000,
                mbs: 32,
                cdvt,
            },
        ),
    ];
    for (name, def, contract) in contracts {
        let fresh = Policer::new(def, &contract).expect("well-formed contract");
        g.bench_with_input(BenchmarkId::new(name, ARRIVALS), &cells, |b, cells| {
            b.iter(|| {
                let mut upc = fresh;
                for &(t, clp) in cells {
                    black_box(upc.police(t, clp));
                }
                upc.counters().pass
            })
        });
    }
    g.finish();
}

/// A scheduler on OC-3c with `n` VCs, every one with a backlog that lasts the run: VC `k`
/// is CBR, rt-VBR, nrt-VBR or UBR by `k mod 4`; the guaranteed ones share half the link,
/// the UBR ones may each take all of it (weights 1 to 3).
fn backlogged(n: usize) -> Scheduler {
    let mut s = Scheduler::new(OC3).expect("valid link");
    let guaranteed = n.div_ceil(4) + (n + 2) / 4 + (n + 1) / 4;
    let pcr = (OC3 / (2 * guaranteed as u32)).max(2);
    for k in 0..n {
        let spec = match k % 4 {
            0 => VcSpec::cbr(pcr),
            1 => VcSpec::rt_vbr(pcr, pcr / 2, 16),
            2 => VcSpec::nrt_vbr(pcr, pcr / 2, 16),
            _ => VcSpec::ubr(OC3, 1 + (k as u32 / 4) % 3),
        };
        let vc = s.add_vc(spec).expect("valid VC");
        s.enqueue(vc, u32::MAX).expect("known VC");
    }
    s
}

fn shaper(c: &mut Criterion) {
    let mut g = c.benchmark_group("shaper");
    g.throughput(Throughput::Elements(CELLS));
    for n in [1usize, 100, 10_000] {
        let mut counters = vec![0u64; n];
        let mut next = 0;
        g.bench_function(BenchmarkId::new("floor", n), |b| {
            b.iter(|| {
                for _ in 0..CELLS {
                    next = if next + 1 == n { 0 } else { next + 1 };
                    counters[next] = counters[next].wrapping_add(black_box(1));
                }
                counters[next]
            })
        });
        let mut s = backlogged(n);
        g.bench_function(BenchmarkId::new("sched", n), |b| {
            b.iter(|| {
                let mut sum = 0u64;
                let mut sent = 0;
                while sent < CELLS {
                    let now = s.poll_timeout().expect("backlogged");
                    if let Some(tx) = s.poll_transmit(now) {
                        sum = sum.wrapping_add(tx.slot);
                        sent += 1;
                    }
                }
                sum
            })
        });
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(30)
        .warm_up_time(StdDuration::from_secs(1))
        .measurement_time(StdDuration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = policer, shaper
}
criterion_main!(benches);

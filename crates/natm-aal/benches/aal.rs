//! Reassembly of interleaved cells from 1,000 VCs, beside a floor measured in the same run:
//! a plain loop over the same cells that finds each cell's per-VC slot by index and copies
//! its payload there (no lookup structure, no CRC, no events).
//!
//! Goal (issue 3): at least 20 M cells/s through `Receiver::handle_cell` with deliveries
//! drained.

use std::hint::black_box;
use std::time::Duration as StdDuration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use natm_aal::{Event, Receiver, ReceiverConfig, TxConfig, TxQueue, VcConfig};
use natm_core::{HeaderFormat, Instant, VcId};
use natm_wire::cell::{CELL_LEN, HEADER_LEN, PAYLOAD_LEN};

const VCS: u32 = 1_000;
const FIRST_VCI: u32 = 32;
/// SDU sizes cycled over the VCs: mostly 1,500-byte packets, some small and some large.
const SIZES: [usize; 8] = [1500, 1500, 1500, 1500, 40, 576, 1500, 9180];
const SDUS_PER_VC: usize = 2;

fn vc(i: u32) -> VcId {
    VcId::uni(1, FIRST_VCI + i).expect("VCI fits")
}

/// Every VC's SDUs, cut into cells by natm-aal's transmit queues and interleaved round
/// robin: one cell of each VC that still has cells, in turn.
fn stream() -> Vec<[u8; CELL_LEN]> {
    let sdus: Vec<Vec<u8>> = (0..VCS as usize * SDUS_PER_VC)
        .map(|k| (0..SIZES[k % SIZES.len()]).map(|b| (b ^ k) as u8).collect())
        .collect();
    let mut queues: Vec<TxQueue<&[u8]>> = (0..VCS)
        .map(|i| TxQueue::new(vc(i), HeaderFormat::Uni, TxConfig::aal5(9180)).expect("config"))
        .collect();
    for (k, sdu) in sdus.iter().enumerate() {
        queues[k % VCS as usize].send(sdu).expect("room");
    }
    let mut cells = Vec::new();
    let mut c = [0u8; CELL_LEN];
    loop {
        let before = cells.len();
        for q in &mut queues {
            if q.next_cell(&mut c) {
                cells.push(c);
            }
        }
        if cells.len() == before {
            return cells;
        }
    }
}

fn receiver() -> Receiver {
    let mut rx = Receiver::new(ReceiverConfig::default());
    for i in 0..VCS {
        rx.open_vc(vc(i), VcConfig::aal5(9180)).expect("config");
    }
    rx
}

/// The floor: per-VC buffers indexed straight from the VCI, payload copied, offset reset at
/// the end-of-frame cell.
struct Floor {
    bufs: Vec<Vec<u8>>,
    lens: Vec<usize>,
}

impl Floor {
    fn new() -> Floor {
        Floor {
            bufs: (0..VCS).map(|_| vec![0u8; 9216]).collect(),
            lens: vec![0; VCS as usize],
        }
    }

    #[inline]
    fn push(&mut self, cell: &[u8; CELL_LEN]) -> usize {
        let word = u32::from_be_bytes([cell[0], cell[1], cell[2], cell[3]]);
        let i = (((word >> 4) & 0xFFFF) - FIRST_VCI) as usize % VCS as usize;
        let at = self.lens[i];
        let end = (at + PAYLOAD_LEN).min(9216);
        self.bufs[i][end - PAYLOAD_LEN..end].copy_from_slice(&cell[HEADER_LEN..]);
        if word & 2 != 0 {
            self.lens[i] = 0;
            end
        } else {
            self.lens[i] = end;
            0
        }
    }
}

fn bench(c: &mut Criterion) {
    let cells = stream();
    // Check once that the receiver delivers every SDU of the stream.
    let mut rx = receiver();
    let mut delivered = 0;
    for cell in &cells {
        rx.handle_cell(Instant::ZERO, cell);
        while let Some(e) = rx.poll_event() {
            assert!(matches!(e, Event::Sdu { .. }), "{e}");
            delivered += 1;
        }
    }
    assert_eq!(delivered, VCS as usize * SDUS_PER_VC);

    let mut g = c.benchmark_group("reassembly");
    g.throughput(Throughput::Elements(cells.len() as u64));
    g.measurement_time(StdDuration::from_secs(3));
    g.sample_size(30);
    // The parameter is the number of VCs (and makes `scripts/bench-table reassembly floor`
    // find the results).
    g.bench_function(BenchmarkId::new("floor", VCS), |b| {
        let mut floor = Floor::new();
        b.iter(|| {
            let mut ends = 0usize;
            for cell in &cells {
                ends += floor.push(black_box(cell));
            }
            black_box(ends)
        })
    });
    g.bench_function(BenchmarkId::new("receiver", VCS), |b| {
        let mut rx = receiver();
        let mut now = Instant::ZERO;
        b.iter(|| {
            let mut bytes = 0usize;
            for cell in &cells {
                rx.handle_cell(now, black_box(cell));
                while let Some(e) = rx.poll_event() {
                    if let Event::Sdu { sdu, .. } = e {
                        bytes += sdu.len();
                    }
                }
            }
            now += natm_core::Duration::from_micros(1);
            black_box(bytes)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

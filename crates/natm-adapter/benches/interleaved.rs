//! Reassembly of interleaved cells from 1,000 VCs, beside a floor measured in the same run:
//! a plain loop over the same cells that finds each cell's per-VC slot by index and copies
//! its payload there (no lookup structure, no CRC, no completions).
//!
//! Goal (issue 3): at least 20 M cells/s through `Adapter::handle_cells` (batches of 64
//! cells, as a link delivers them) with the completions drained and the buffers posted
//! again. Moved from natm-aal's receiver, which went: the adapter's is natm's one AAL5
//! receive path. Every cell is another VC's, so no cell takes the run path.

use std::hint::black_box;
use std::time::Duration as StdDuration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use natm_adapter::{
    Adapter, AdapterConfig, BufferId, RxVcConfig, Status, UBR_UNSHAPED_PCR, VecBuffers,
};
use natm_core::{Instant, VcId};
use natm_traffic::sched::VcSpec;
use natm_wire::aal5::Segmenter;
use natm_wire::cell::{CELL_LEN, HEADER_LEN, PAYLOAD_LEN};

const VCS: u32 = 1_000;
const FIRST_VCI: u32 = 32;
/// SDU sizes cycled over the VCs: mostly 1,500-byte packets, some small and some large.
const SIZES: [usize; 8] = [1500, 1500, 1500, 1500, 40, 576, 1500, 9180];
const SDUS_PER_VC: usize = 2;
const MAX_SDU: usize = 9180;
const BATCH: usize = 64;

fn vc(i: u32) -> VcId {
    VcId::uni(1, FIRST_VCI + i).expect("VCI fits")
}

/// Every VC's SDUs, segmented by natm-wire and interleaved round robin: one cell of each
/// VC that still has cells, in turn.
fn stream() -> Vec<[u8; CELL_LEN]> {
    let sdus: Vec<Vec<u8>> = (0..VCS as usize * SDUS_PER_VC)
        .map(|k| (0..SIZES[k % SIZES.len()]).map(|b| (b ^ k) as u8).collect())
        .collect();
    let mut per_vc: Vec<Vec<[u8; CELL_LEN]>> = vec![Vec::new(); VCS as usize];
    for (k, sdu) in sdus.iter().enumerate() {
        let i = k % VCS as usize;
        per_vc[i].extend(Segmenter::uni(vc(i as u32), sdu).expect("a valid SDU"));
    }
    let longest = per_vc.iter().map(Vec::len).max().unwrap_or(0);
    (0..longest)
        .flat_map(|n| per_vc.iter().filter_map(move |cells| cells.get(n).copied()))
        .collect()
}

/// An adapter with the 1,000 VCs open and a buffer posted for each.
fn adapter() -> (Adapter, VecBuffers) {
    let mut a = Adapter::new(AdapterConfig {
        max_vcs: VCS as usize,
        ..AdapterConfig::new(VCS, MAX_SDU)
    })
    .expect("config");
    for i in 0..VCS {
        let ubr = VcSpec::ubr(UBR_UNSHAPED_PCR, 1);
        a.open_vc(i, vc(i), ubr, RxVcConfig::aal5(MAX_SDU))
            .expect("open");
        a.post_rx_buffer(BufferId(i));
    }
    (a, VecBuffers::new(VCS, MAX_SDU))
}

/// The cells through the adapter; the SDU bytes delivered.
fn receive(a: &mut Adapter, mem: &mut VecBuffers, now: Instant, cells: &[[u8; CELL_LEN]]) -> usize {
    let mut bytes = 0;
    for batch in cells.chunks(BATCH) {
        a.handle_cells(now, black_box(batch), mem);
        while let Some(c) = a.poll_completion() {
            debug_assert_eq!(c.status, Status::Ok);
            bytes += c.len;
            a.post_rx_buffer(c.buffer);
        }
    }
    bytes
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
    // Check once that the adapter delivers every SDU of the stream.
    let (mut a, mut mem) = adapter();
    let want: usize = (0..VCS as usize * SDUS_PER_VC)
        .map(|k| SIZES[k % SIZES.len()])
        .sum();
    assert_eq!(receive(&mut a, &mut mem, Instant::ZERO, &cells), want);
    assert_eq!(a.counters().frames_in, (VCS as usize * SDUS_PER_VC) as u64);

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
    g.bench_function(BenchmarkId::new("adapter", VCS), |b| {
        let (mut a, mut mem) = adapter();
        let mut now = Instant::ZERO;
        b.iter(|| {
            let bytes = receive(&mut a, &mut mem, now, &cells);
            now += natm_core::Duration::from_micros(1);
            black_box(bytes)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

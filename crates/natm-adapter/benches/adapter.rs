//! The adapter's two data paths at 48 B, 8 KiB and 64 KiB SDUs on one VC, beside a floor
//! measured in the same run: a plain copy of the same SDU bytes twice (application buffer
//! → cells → application buffer, with no headers, CRC or lookups).
//!
//! * `segment`: `post_tx` 64 SDUs from `VecBuffers`, `poll_transmit` in batches of 64
//!   cells, completions drained.
//! * `reassemble`: the cells of 64 SDUs through `handle_cells` in batches of 64 into
//!   posted `VecBuffers`, completions drained and buffers posted again.
//!
//! Throughput is SDU bytes. Goal (issue 4): each side well under ~20 ns per cell at 8 KiB.

use std::hint::black_box;
use std::time::Duration as StdDuration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use natm_adapter::{
    Adapter, AdapterConfig, BufferId, RxVcConfig, Status, UBR_UNSHAPED_PCR, VecBuffers,
};
use natm_core::{Instant, VcId};
use natm_traffic::sched::VcSpec;
use natm_wire::cell::CELL_LEN;

const SDUS: u32 = 64;
const BATCH: usize = 64;
const SIZES: [usize; 3] = [48, 8192, 65_535];

fn vc() -> VcId {
    VcId::uni(1, 100).expect("VCI fits")
}

fn adapter(size: usize) -> Adapter {
    let mut a = Adapter::new(AdapterConfig::new(SDUS, size)).expect("config");
    // UBR without a rate of its own: the unlimited link's unshaped burst path.
    a.open_vc(
        1,
        vc(),
        VcSpec::ubr(UBR_UNSHAPED_PCR, 1),
        RxVcConfig::aal5(size),
    )
    .expect("open");
    a
}

fn filled(size: usize) -> VecBuffers {
    let mut m = VecBuffers::new(SDUS, size);
    for id in 0..SDUS {
        for (i, b) in m
            .buffer_mut(BufferId(id))
            .expect("id")
            .iter_mut()
            .enumerate()
        {
            *b = (i as u32 ^ id) as u8;
        }
    }
    m
}

/// Send all 64 SDUs; returns the cells handed out.
fn segment(a: &mut Adapter, m: &VecBuffers, size: usize, out: &mut [[u8; CELL_LEN]]) -> usize {
    for id in 0..SDUS {
        a.post_tx(Instant::ZERO, BufferId(id), size, 1);
    }
    let mut cells = 0;
    loop {
        let n = a.poll_transmit(Instant::ZERO, m, out);
        if n == 0 {
            break;
        }
        black_box(&out[..n]);
        cells += n;
    }
    while let Some(c) = a.poll_completion() {
        debug_assert_eq!(c.status, Status::Ok);
    }
    cells
}

fn reassemble(a: &mut Adapter, m: &mut VecBuffers, cells: &[[u8; CELL_LEN]]) -> usize {
    // The free pool is a stack: posted in reverse, SDU k lands in buffer k.
    for id in (0..SDUS).rev() {
        a.post_rx_buffer(BufferId(id));
    }
    for chunk in cells.chunks(BATCH) {
        a.handle_cells(Instant::ZERO, black_box(chunk), m);
    }
    let mut bytes = 0;
    while let Some(c) = a.poll_completion() {
        bytes += c.len;
    }
    bytes
}

fn bench(c: &mut Criterion) {
    for size in SIZES {
        let src = filled(size);
        let mut tx = adapter(size);
        let mut out = vec![[0u8; CELL_LEN]; BATCH];
        // The cell stream once, and a check that it arrives whole.
        let mut cells = Vec::new();
        for id in 0..SDUS {
            tx.post_tx(Instant::ZERO, BufferId(id), size, 1);
        }
        loop {
            let n = tx.poll_transmit(Instant::ZERO, &src, &mut out);
            if n == 0 {
                break;
            }
            cells.extend_from_slice(&out[..n]);
        }
        while tx.poll_completion().is_some() {}
        let mut rx = adapter(size);
        let mut dst = VecBuffers::new(SDUS, size);
        let got = reassemble(&mut rx, &mut dst, &cells);
        assert_eq!(got, SDUS as usize * size, "{:?}", rx.counters());
        assert_eq!(dst, src, "every SDU arrived whole");
        let cells_per_sdu = cells.len() / SDUS as usize;

        let mut g = c.benchmark_group(format!("adapter-{size}B"));
        g.throughput(Throughput::Bytes(SDUS as u64 * size as u64));
        g.measurement_time(StdDuration::from_secs(3));
        g.warm_up_time(StdDuration::from_secs(1));
        g.sample_size(30);
        g.bench_function(BenchmarkId::new("floor-memcpy-twice", size), |b| {
            let mut mid = vec![0u8; SDUS as usize * size];
            let mut end = vec![0u8; SDUS as usize * size];
            let all: Vec<u8> = (0..SDUS)
                .flat_map(|id| src.buffer(BufferId(id)).expect("id").to_vec())
                .collect();
            b.iter(|| {
                for ((s, m), e) in all
                    .chunks(size)
                    .zip(mid.chunks_mut(size))
                    .zip(end.chunks_mut(size))
                {
                    m.copy_from_slice(black_box(s));
                    e.copy_from_slice(black_box(m));
                }
                black_box(&end);
            })
        });
        g.bench_function(BenchmarkId::new("segment", size), |b| {
            let mut tx = adapter(size);
            b.iter(|| black_box(segment(&mut tx, &src, size, &mut out)))
        });
        g.bench_function(BenchmarkId::new("reassemble", size), |b| {
            let mut rx = adapter(size);
            b.iter(|| black_box(reassemble(&mut rx, &mut dst, &cells)))
        });
        g.finish();
        println!("{size} B SDUs: {cells_per_sdu} cells each");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

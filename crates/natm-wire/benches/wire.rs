//! Throughput of the AAL5 data path beside `memcpy` of the same bytes, measured in the same
//! run (the machine is shared and noisy, so only ratios within one run mean much).
//!
//! * `memcpy/N`: copy N bytes between two buffers that stay in cache: the floor.
//! * `memcpy_cold/N`: the same copy between buffers that are not in any cache.
//! * `crc32/N`: CRC-32/BZIP2 of N bytes (natm-clmul: carry-less multiply from 256 bytes
//!   with AVX-512, from 512 through crc-fast without; a table below).
//! * `segment/N`: an N-byte SDU into N/48 cells (header, payload copy, trailer, CRC).
//!
//! Reassembly is natm-adapter's (`cargo bench -p natm-adapter`).
//!
//! Run: `cargo bench -p natm-wire --bench wire`; `scripts/bench-table` turns the results
//! into the README table.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use natm_core::VcId;
use natm_wire::aal5::{self, Segmenter};
use natm_wire::crc32::Crc32;

const SIZES: [usize; 4] = [48, 1500, 9180, 65535];

fn sdu(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0])
        .collect()
}

fn bench(c: &mut Criterion) {
    let vc = VcId::uni(1, 100).expect("valid VC");
    for &n in &SIZES {
        let data = sdu(n);
        let mut g = c.benchmark_group("aal5");
        g.throughput(Throughput::Bytes(n as u64));

        let mut dst = vec![0u8; n];
        g.bench_with_input(BenchmarkId::new("memcpy", n), &data, |b, d| {
            b.iter(|| {
                dst.copy_from_slice(black_box(d));
                black_box(&dst);
            })
        });

        // The same copy from and to memory that is not in any cache: successive iterations walk
        // a 256 MiB arena, as a stream of fresh application buffers would. The arenas are made
        // once, on first use (criterion calls this closure once per sample, and skips it when a
        // filter excludes the benchmark), and written in full so no page fault is measured.
        let mut arenas: Option<(Vec<u8>, Vec<u8>)> = None;
        let mut slot = 0;
        g.bench_function(BenchmarkId::new("memcpy_cold", n), |b| {
            let (src, dst) =
                arenas.get_or_insert_with(|| (vec![1u8; 256 << 20], vec![2u8; 256 << 20]));
            let stride = n.next_multiple_of(64);
            let slots = src.len() / stride;
            b.iter(|| {
                let at = slot * stride;
                slot = (slot + 1) % slots;
                dst[at..at + n].copy_from_slice(black_box(&src[at..at + n]));
                black_box(&dst[at]);
            })
        });
        drop(arenas);

        g.bench_with_input(BenchmarkId::new("crc32", n), &data, |b, d| {
            b.iter(|| {
                let mut crc = Crc32::new();
                crc.update(black_box(d));
                crc.finish()
            })
        });

        let mut cells = vec![0u8; aal5::cell_count(n) * natm_wire::CELL_LEN];
        g.bench_with_input(BenchmarkId::new("segment", n), &data, |b, d| {
            b.iter(|| {
                let mut seg = Segmenter::uni(vc, black_box(d)).expect("valid SDU");
                seg.write_cells(&mut cells)
            })
        });

        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(1))
        .sample_size(30);
    targets = bench
}
criterion_main!(benches);

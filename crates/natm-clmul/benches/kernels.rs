//! The kernels over one 9,180-byte SDU's cells (192 cells, 9,216 payload bytes), each
//! through the dispatching call and through [`natm_clmul::portable`], beside `memcpy` of the
//! same bytes in the same run; and the CRC of one cell's payload (48 bytes, what a one-cell
//! SDU's segmentation and reassembly each compute) both ways. `cargo bench -p natm-clmul`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use natm_clmul::{CELL_LEN, INIT, PAYLOAD_LEN, portable};

const CELLS: usize = 192;

fn bench(c: &mut Criterion) {
    let payloads: Vec<u8> = (0..CELLS * PAYLOAD_LEN)
        .map(|i| (i * 7 + i / 251) as u8)
        .collect();
    let mut cells = vec![0u8; CELLS * CELL_LEN];
    let mut out = vec![0u8; CELLS * PAYLOAD_LEN];
    let header = [0x00, 0x10, 0x06, 0x40, 0x00];
    natm_clmul::scatter_cells(&header, &payloads, &mut cells);

    let mut g = c.benchmark_group("clmul");
    g.throughput(Throughput::Bytes(payloads.len() as u64));
    g.bench_function("memcpy", |b| {
        b.iter(|| {
            out.copy_from_slice(black_box(&payloads));
            black_box(&out);
        })
    });
    g.bench_function("crc32", |b| {
        b.iter(|| natm_clmul::crc32_update(INIT, black_box(&payloads)))
    });
    g.bench_function("crc32_portable", |b| {
        b.iter(|| portable::crc32_update(INIT, black_box(&payloads)))
    });
    g.bench_function("scatter", |b| {
        b.iter(|| natm_clmul::scatter_cells(&header, black_box(&payloads), black_box(&mut cells)))
    });
    g.bench_function("scatter_portable", |b| {
        b.iter(|| portable::scatter_cells(&header, black_box(&payloads), black_box(&mut cells)))
    });
    g.bench_function("gather", |b| {
        b.iter(|| natm_clmul::gather_payloads(INIT, black_box(&cells), black_box(&mut out)))
    });
    g.bench_function("gather_portable", |b| {
        b.iter(|| portable::gather_payloads(INIT, black_box(&cells), black_box(&mut out)))
    });
    g.finish();

    let mut g = c.benchmark_group("clmul_one_cell");
    g.throughput(Throughput::Bytes(PAYLOAD_LEN as u64));
    let cell = &payloads[..PAYLOAD_LEN];
    g.bench_function("crc32", |b| {
        b.iter(|| natm_clmul::crc32_update(INIT, black_box(cell)))
    });
    g.bench_function("crc32_portable", |b| {
        b.iter(|| portable::crc32_update(INIT, black_box(cell)))
    });
    g.finish();
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

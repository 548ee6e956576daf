//! Cells per second through natm-nic's shared-memory cell ring (memfd) beside a bare SPSC
//! ring of 64-byte slots, measured in the same run: producer and consumer on two threads,
//! batches of 16 cells, 1024-slot rings on both sides, consumer pinned to CPU 0 and
//! producer to CPU 1 so that the two spinners never share a vCPU.
//!
//! `bare` is the simplest correct atomic ring: slots in ordinary memory written with plain
//! copies, a Release/Acquire index pair on separate cache lines, each side caching the
//! other's index (the same caching natm-nic does). `shm` is `natm_nic::cells` over a memfd
//! mapping, where every slot word goes through an `AtomicU64` (the peer is untrusted) and
//! the indices are checked.
//!
//! After criterion's own report, a summary prints the median and interquartile range of
//! each benchmark's samples (cells/s) and the ratio shm/bare, then the same for 15
//! interleaved bare/shm pairs, which see the same load from other processes. `shm-heap` is
//! the same ring over the heap stand-in, for reference. `shm-link` is what a natm user
//! sends through: natm-link's `ShmLink` (the same memfd ring behind the `CellLink` trait,
//! with its counters and the producer-space handshake), busy polling; it is measured
//! against `bare` too.

use std::cell::UnsafeCell;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use natm_nic::cells::{CellBytes, CellLink, Side};
use natm_nic::memfd::MemfdMem;

const BATCH: usize = 16;
const ENTRIES: usize = 1024;
/// Cells moved per criterion iteration.
const CELLS_PER_ITER: u64 = 16 * 1024;

#[repr(align(64))]
struct Line<T>(T);

/// A 64-byte slot on its own cache line (as natm-nic's slots are in a page-aligned memfd).
#[repr(C, align(64))]
struct Slot(UnsafeCell<[u8; 64]>);

/// The baseline ring.
struct Bare {
    slots: Box<[Slot]>,
    tail: Line<AtomicUsize>,
    head: Line<AtomicUsize>,
}

// SAFETY: slots are shared between exactly one producer and one consumer thread, and the
// index protocol gives each slot to one of them at a time: the producer writes only slots
// in [tail, head + ENTRIES) before publishing them with a Release store of tail; the
// consumer reads only slots in [head, tail) after an Acquire load of tail and gives them
// back with a Release store of head, which the producer Acquire-loads before reuse.
unsafe impl Sync for Bare {}

struct BareTx {
    ring: Arc<Bare>,
    tail: usize,
    head_cache: usize,
}

struct BareRx {
    ring: Arc<Bare>,
    head: usize,
    tail_cache: usize,
}

fn bare() -> (BareTx, BareRx) {
    let ring = Arc::new(Bare {
        slots: (0..ENTRIES)
            .map(|_| Slot(UnsafeCell::new([0; 64])))
            .collect(),
        tail: Line(AtomicUsize::new(0)),
        head: Line(AtomicUsize::new(0)),
    });
    (
        BareTx {
            ring: ring.clone(),
            tail: 0,
            head_cache: 0,
        },
        BareRx {
            ring,
            head: 0,
            tail_cache: 0,
        },
    )
}

impl BareTx {
    fn push_batch(&mut self, cells: &[CellBytes]) -> usize {
        if ENTRIES - (self.tail - self.head_cache) < cells.len() {
            self.head_cache = self.ring.head.0.load(Ordering::Acquire);
        }
        let n = cells.len().min(ENTRIES - (self.tail - self.head_cache));
        for (k, c) in cells[..n].iter().enumerate() {
            let slot = &self.ring.slots[(self.tail + k) % ENTRIES].0;
            // SAFETY: this slot is at most ENTRIES ahead of the consumer's last released
            // head, so it is the producer's alone until the Release store below (see the
            // Sync impl).
            unsafe { (&mut (*slot.get()))[..53].copy_from_slice(c) };
        }
        self.tail += n;
        self.ring.tail.0.store(self.tail, Ordering::Release);
        n
    }
}

impl BareRx {
    fn pop_batch(&mut self, out: &mut [CellBytes]) -> usize {
        if self.tail_cache - self.head < out.len() {
            self.tail_cache = self.ring.tail.0.load(Ordering::Acquire);
        }
        let n = out.len().min(self.tail_cache - self.head);
        for (k, o) in out[..n].iter_mut().enumerate() {
            let slot = &self.ring.slots[(self.head + k) % ENTRIES].0;
            // SAFETY: the slot was published by the producer's Release store of tail, which
            // our Acquire load saw; the producer will not touch it before our Release store
            // of head below.
            o.copy_from_slice(unsafe { &(&(*slot.get()))[..53] });
        }
        self.head += n;
        self.ring.head.0.store(self.head, Ordering::Release);
        n
    }
}

/// After an empty or full ring: spin briefly, then yield. If the two threads share a vCPU
/// (the machine is shared with other work), a pure spinner would burn its whole time slice
/// before the other side runs (DESIGN §6: 8 ms per round trip).
#[inline(always)]
fn idle(n: usize, misses: &mut u32) {
    if n > 0 {
        *misses = 0;
    } else {
        *misses += 1;
        if *misses < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// Pins the calling thread to `cpu` when the machine has more than one; best effort (a
/// container may forbid it), and the pinning is reported once in the summary.
fn pin(cpu: usize) -> bool {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n < 2 {
        return false;
    }
    natm_nic::sched::pin_current_thread(cpu % n).is_ok()
}

/// Moves `total` cells from a producer thread to this thread; returns the elapsed time.
fn run<T: Send + 'static>(
    total: u64,
    mut tx: T,
    push: fn(&mut T, &[CellBytes]) -> usize,
    mut pop: impl FnMut(&mut [CellBytes]) -> usize,
) -> (Duration, T) {
    let batch: [CellBytes; BATCH] = std::array::from_fn(|i| [i as u8; 53]);
    pin(0);
    let start = Instant::now();
    let producer = std::thread::spawn(move || {
        pin(1);
        let mut sent = 0u64;
        let mut misses = 0u32;
        while sent < total {
            let want = (total - sent).min(BATCH as u64) as usize;
            let n = push(&mut tx, &batch[..want]);
            idle(n, &mut misses);
            sent += n as u64;
        }
        tx
    });
    let mut out = [[0u8; 53]; BATCH];
    let mut got = 0u64;
    let mut check = 0u64;
    let mut misses = 0u32;
    while got < total {
        let n = pop(&mut out);
        idle(n, &mut misses);
        for c in &out[..n] {
            check = check.wrapping_add(u64::from(c[52]));
        }
        got += n as u64;
    }
    let elapsed = start.elapsed();
    std::hint::black_box(check);
    (elapsed, producer.join().expect("producer thread"))
}

fn output_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => PathBuf::from(d).join("criterion"),
        None => PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../target/criterion"
        )),
    }
}

/// Cells/s of each sample criterion stored.
fn samples(name: &str) -> Option<Vec<f64>> {
    let path = output_dir()
        .join("rings")
        .join(name)
        .join("new/sample.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let iters = v["iters"].as_array()?;
    let times = v["times"].as_array()?;
    let mut rates: Vec<f64> = iters
        .iter()
        .zip(times)
        .filter_map(|(i, t)| Some(i.as_f64()? * CELLS_PER_ITER as f64 / (t.as_f64()? * 1e-9)))
        .collect();
    rates.sort_by(f64::total_cmp);
    Some(rates)
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// A table of the median and interquartile range of each ring's sorted rates (cells/s).
fn print_rates(rows: &[(&str, &[f64])]) {
    println!("| ring | median M cells/s | IQR (p25–p75) M cells/s |");
    println!("|---|---|---|");
    for (name, v) in rows {
        println!(
            "| {name} | {:.1} | {:.1}–{:.1} |",
            quantile(v, 0.5) / 1e6,
            quantile(v, 0.25) / 1e6,
            quantile(v, 0.75) / 1e6
        );
    }
}

fn bare_once(cells: u64) -> Duration {
    let (tx, mut rx) = bare();
    run(cells, tx, BareTx::push_batch, |o| rx.pop_batch(o)).0
}

fn shm_once(cells: u64) -> Duration {
    let bytes = CellLink::region_bytes(ENTRIES as u32).expect("valid size");
    let mem = Arc::new(MemfdMem::create("natm-bench", bytes).expect("memfd"));
    let link = CellLink::create(mem, ENTRIES as u32).expect("fresh region");
    let (tx, _) = link.endpoint(Side::A).expect("fresh ring");
    let (_, mut rx) = link.endpoint(Side::B).expect("fresh ring");
    run(
        cells,
        tx,
        |t, cells| t.push_batch(cells),
        |o| rx.pop_batch(o),
    )
    .0
}

fn shm_link_once(cells: u64) -> Duration {
    use natm_link::CellLink as _;
    use natm_link::shm::{ShmLink, ShmWait};
    let (tx, mut rx) = ShmLink::pair_with(ENTRIES as u32, ShmWait::BusyPoll).expect("shm link");
    run(
        cells,
        tx,
        |t, cells| t.send_cells(cells).expect("a fresh link does not fail"),
        |o| rx.recv_cells(o).expect("a fresh link does not fail"),
    )
    .0
}

/// Sorted rates (cells/s) of bare, shm and shm-link runs alternated so that all see the
/// same load from other processes, and the sorted ratios shm/bare and shm-link/bare of
/// each round.
type Rounds = (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>);

fn interleaved(rounds: usize, cells: u64) -> Rounds {
    let (mut b, mut s, mut r, mut l, mut rl) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let rb = cells as f64 / bare_once(cells).as_secs_f64();
        let rs = cells as f64 / shm_once(cells).as_secs_f64();
        let rk = cells as f64 / shm_link_once(cells).as_secs_f64();
        b.push(rb);
        s.push(rs);
        l.push(rk);
        r.push(rs / rb);
        rl.push(rk / rb);
    }
    for v in [&mut b, &mut s, &mut r, &mut l, &mut rl] {
        v.sort_by(f64::total_cmp);
    }
    (b, s, r, l, rl)
}

fn main() {
    let mut c = Criterion::default()
        .output_directory(&output_dir())
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average before: {}", load.trim());
    println!(
        "consumer pinned to cpu 0, producer to cpu 1: {}",
        if pin(0) {
            "yes"
        } else {
            "no (not allowed or one cpu)"
        }
    );
    {
        let mut g = c.benchmark_group("rings");
        g.throughput(Throughput::Elements(CELLS_PER_ITER));
        g.bench_function("bare", |b| {
            b.iter_custom(|iters| {
                let (tx, mut rx) = bare();
                run(iters * CELLS_PER_ITER, tx, BareTx::push_batch, |o| {
                    rx.pop_batch(o)
                })
                .0
            })
        });
        g.bench_function("shm", |b| {
            b.iter_custom(|iters| shm_once(iters * CELLS_PER_ITER))
        });
        g.bench_function("shm-link", |b| {
            b.iter_custom(|iters| shm_link_once(iters * CELLS_PER_ITER))
        });
        g.bench_function("shm-heap", |b| {
            b.iter_custom(|iters| {
                let bytes = CellLink::region_bytes(ENTRIES as u32).expect("valid size");
                let mem = Arc::new(natm_nic::shm::HeapMem::new(bytes).expect("heap"));
                let link = CellLink::create(mem, ENTRIES as u32).expect("fresh region");
                let (tx, _) = link.endpoint(Side::A).expect("fresh ring");
                let (_, mut rx) = link.endpoint(Side::B).expect("fresh ring");
                run(
                    iters * CELLS_PER_ITER,
                    tx,
                    |t, cells| t.push_batch(cells),
                    |o| rx.pop_batch(o),
                )
                .0
            })
        });
        g.finish();
    }
    c.final_summary();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average after: {}", load.trim());
    if let (Some(bare), Some(shm), Some(link)) =
        (samples("bare"), samples("shm"), samples("shm-link"))
    {
        println!();
        print_rates(&[("bare", &bare), ("shm", &shm), ("shm-link", &link)]);
        println!(
            "\nratio shm/bare (medians): {:.2}, shm-link/bare {:.2} (goal >= 0.7)",
            quantile(&shm, 0.5) / quantile(&bare, 0.5),
            quantile(&link, 0.5) / quantile(&bare, 0.5)
        );
    }
    // Criterion runs bare, then shm: on a shared machine the load can change in between.
    // Interleaved pairs see the same load.
    let (b, s, r, l, rl) = interleaved(15, 2_000_000);
    println!("\ninterleaved, 15 rounds of bare, shm, shm-link, 2M cells each (same load):");
    print_rates(&[("bare", &b), ("shm", &s), ("shm-link", &l)]);
    for (name, r) in [("shm/bare", &r), ("shm-link/bare", &rl)] {
        println!(
            "ratio {name} per round: median {:.2}, IQR {:.2}–{:.2} (goal >= 0.7)",
            quantile(r, 0.5),
            quantile(r, 0.25),
            quantile(r, 0.75)
        );
    }
}

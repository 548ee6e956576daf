//! Measures what the links carry: an emulated OC-3c line over the shared-memory link kept
//! full for 2 s (cells/s at the receiver against 353,207.547), and the bare shared-memory
//! link at an unlimited rate, one thread and two.
//!
//! `cargo run --release -p natm-link --example link_rate`

use std::time::{Duration, Instant};

use natm_core::PhyRate;
use natm_link::emulated::Emulated;
use natm_link::shm::{ShmLink, ShmWait};
use natm_link::{CellBytes, CellLink};
use natm_netem::Config;

const T: Option<Duration> = Some(Duration::from_secs(10));

fn main() {
    // Emulated OC-3c, a sender that keeps it full for 2 s.
    let (a, mut b) = ShmLink::pair(4096).unwrap();
    let queue_cells: u32 = std::env::args().nth(1).map_or(1024, |s| s.parse().unwrap());
    let mut e = Emulated::new(
        a,
        &Config {
            queue_cells,
            ..Config::default()
        },
    );
    println!("transmit queue {queue_cells} cells");
    let run = Duration::from_secs(2);
    let rx = std::thread::spawn(move || {
        let mut buf = [[0u8; 53]; 256];
        let (mut n, mut first, mut last) = (0u64, None, Instant::now());
        loop {
            let got = b
                .recv_cells_timeout(&mut buf, Some(Duration::from_millis(300)))
                .unwrap();
            if got == 0 {
                break;
            }
            let now = Instant::now();
            first.get_or_insert(now);
            last = now;
            n += got as u64;
        }
        (n, last - first.unwrap())
    });
    let batch = [[0u8; 53]; 64];
    let t0 = Instant::now();
    while t0.elapsed() < run {
        e.send_cells_timeout(&batch, T).unwrap();
    }
    e.finish(T).unwrap();
    let (n, span) = rx.join().unwrap();
    let rate = n as f64 / span.as_secs_f64();
    let (num, den) = PhyRate::OC3.exact();
    let oc3 = num as f64 / den as f64;
    println!(
        "emulated OC-3c over shm: {n} cells in {:.3} s = {rate:.0} cells/s ({:.3} % of 353207.547)",
        span.as_secs_f64(),
        100.0 * rate / oc3
    );

    // Bare shm, one thread: send a batch, receive it.
    let (mut a, mut b) = ShmLink::pair_with(4096, ShmWait::BusyPoll).unwrap();
    let cells: Vec<CellBytes> = vec![[7u8; 53]; 64];
    let mut buf = [[0u8; 53]; 64];
    let t0 = Instant::now();
    let mut n = 0u64;
    while t0.elapsed() < Duration::from_secs(1) {
        for _ in 0..1000 {
            a.send_cells(&cells).unwrap();
            n += b.recv_cells(&mut buf).unwrap() as u64;
        }
    }
    println!(
        "shm, one thread, 64-cell batches: {:.1} M cells/s",
        n as f64 / t0.elapsed().as_secs_f64() / 1e6
    );

    // Bare shm, two threads, eventfd waits.
    for mode in [ShmWait::BusyPoll, ShmWait::EventFd] {
        let (mut a, mut b) = ShmLink::pair_with(4096, mode).unwrap();
        const N: u64 = 20_000_000;
        let cells = cells.clone();
        let tx = std::thread::spawn(move || {
            let mut sent = 0u64;
            while sent < N {
                sent += a.send_cells_timeout(&cells, T).unwrap() as u64;
            }
        });
        let t0 = Instant::now();
        let mut got = 0u64;
        let mut buf = [[0u8; 53]; 256];
        while got < N {
            got += b.recv_cells_timeout(&mut buf, T).unwrap() as u64;
        }
        let secs = t0.elapsed().as_secs_f64();
        tx.join().unwrap();
        println!(
            "shm, two threads, {mode:?}: {:.1} M cells/s",
            got as f64 / secs / 1e6
        );
    }
}

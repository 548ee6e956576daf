use std::time::{Duration, Instant};

use super::{BACKENDS, cell, check_cell};
use crate::cells::{CELL_SLOT_BYTES, CellBytes, CellLink, CellLinkError, STREAMING_MIN, Side};
use crate::layout::{HEADER_BYTES, LayoutError, RING_CONTROL_BYTES};

#[test]
fn cell_link_layout() {
    let l = crate::layout::Layout::cell_link(16).unwrap();
    assert_eq!(l.rings[0].unwrap().offset, HEADER_BYTES);
    assert_eq!(
        l.rings[1].unwrap().offset,
        HEADER_BYTES + RING_CONTROL_BYTES + 16 * CELL_SLOT_BYTES
    );
    assert_eq!(l.region_size, 128 + 2 * (192 + 16 * 64));
    assert!(l.rings[2].is_none());
}

#[test]
fn open_validates_and_sees_the_same_rings() {
    for (name, mk) in BACKENDS {
        let mem = mk(CellLink::region_bytes(16).unwrap());
        let link = CellLink::create(mem.clone(), 16).unwrap();
        let other = CellLink::open(mem.clone()).unwrap();
        assert_eq!(other.layout(), link.layout(), "{name}");
        let (mut a_tx, mut a_rx) = link.endpoint(Side::A).unwrap();
        let (mut b_tx, mut b_rx) = other.endpoint(Side::B).unwrap();
        assert_eq!(a_tx.push_batch(&[cell(1), cell(2)]), 2);
        assert_eq!(b_tx.push_batch(&[cell(9)]), 1);
        let mut out = [[0u8; 53]; 4];
        assert_eq!(b_rx.pop_batch(&mut out), 2);
        assert_eq!(
            (check_cell(&out[0]), check_cell(&out[1])),
            (Some(1), Some(2))
        );
        assert_eq!(a_rx.pop_batch(&mut out), 1);
        assert_eq!(check_cell(&out[0]), Some(9));
        // A region of another kind or a zeroed one is refused with a typed error.
        assert!(matches!(
            crate::channel::Channel::open(mem),
            Err(LayoutError::WrongKind { .. })
        ));
        let zero = mk(4096);
        assert!(matches!(
            CellLink::open(zero),
            Err(CellLinkError::Layout(LayoutError::BadMagic { found: 0 }))
        ));
        assert!(matches!(
            CellLink::create(mk(4096), 16),
            Err(CellLinkError::RegionTooSmall { .. })
        ));
    }
}

#[test]
fn full_and_empty() {
    for (name, mk) in BACKENDS {
        let link = CellLink::create(mk(CellLink::region_bytes(8).unwrap()), 8).unwrap();
        let (mut tx, _) = link.endpoint(Side::A).unwrap();
        let (_, mut rx) = link.endpoint(Side::B).unwrap();
        let mut out = [[0u8; 53]; 16];
        assert_eq!(rx.pop_batch(&mut out), 0, "{name}: empty");
        let cells: Vec<CellBytes> = (0..16).map(cell).collect();
        assert_eq!(tx.push_batch(&cells), 8, "{name}: takes a ring's worth");
        assert_eq!(tx.push_batch(&cells), 0, "{name}: full");
        assert_eq!(tx.free(), 0);
        assert_eq!(rx.available(), 8);
        assert_eq!(rx.pop_batch(&mut out[..3]), 3);
        assert_eq!(tx.push_batch(&cells[8..]), 3);
        assert_eq!(rx.pop_batch(&mut out), 8);
        let seqs: Vec<_> = out[..8].iter().map(|c| check_cell(c).unwrap()).collect();
        assert_eq!(seqs, [3, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!(rx.pop_batch(&mut out), 0);
        assert_eq!(tx.free(), 8);
    }
}

#[test]
fn wraps_around_over_many_laps() {
    for (name, mk) in BACKENDS {
        let link = CellLink::create(mk(CellLink::region_bytes(16).unwrap()), 16).unwrap();
        let (mut tx, _) = link.endpoint(Side::B).unwrap();
        let (_, mut rx) = link.endpoint(Side::A).unwrap();
        let (mut sent, mut got) = (0u64, 0u64);
        let mut out = [[0u8; 53]; 16];
        for lap in 0..20_000u64 {
            let n = (lap % 7 + 1) as usize;
            let batch: Vec<CellBytes> = (sent..sent + n as u64).map(cell).collect();
            sent += tx.push_batch(&batch) as u64;
            let m = rx.pop_batch(&mut out[..(lap % 5 + 1) as usize]);
            for c in &out[..m] {
                assert_eq!(check_cell(c), Some(got), "{name}");
                got += 1;
            }
        }
        got += rx.pop_batch(&mut out) as u64;
        assert_eq!(got, sent);
        assert!(sent / 16 > 3000, "{name}: {} laps", sent / 16);
    }
}

#[test]
fn two_threads_stream_in_order() {
    // Ordinary stores, and a streaming producer (non-temporal stores for batches of
    // STREAMING_MIN cells or more, fenced before they are published) with batches on
    // both sides of that size: every cell arrives whole and in order.
    let cases = [(false, 16), (true, 16), (true, STREAMING_MIN + 7)];
    for ((name, mk), (streaming, batch)) in BACKENDS
        .iter()
        .flat_map(|b| cases.iter().map(move |c| (b, *c)))
    {
        let name = format!("{name}, streaming {streaming}, batches of {batch}");
        let link = CellLink::create(mk(CellLink::region_bytes(64).unwrap()), 64).unwrap();
        let (mut tx, _) = link.endpoint(Side::A).unwrap();
        tx.set_streaming(streaming);
        let (_, mut rx) = link.endpoint(Side::B).unwrap();
        const N: u64 = 200_000;
        let deadline = Instant::now() + Duration::from_secs(20);
        let producer = std::thread::spawn(move || {
            let mut sent = 0u64;
            while sent < N && Instant::now() < deadline {
                let batch: Vec<CellBytes> =
                    (sent..(sent + batch as u64).min(N)).map(cell).collect();
                let n = tx.push_batch(&batch);
                if n == 0 {
                    std::thread::yield_now();
                }
                sent += n as u64;
            }
            sent
        });
        let mut got = 0u64;
        let mut out = [[0u8; 53]; 16];
        while got < N && Instant::now() < deadline {
            let n = rx.pop_batch(&mut out);
            if n == 0 {
                std::thread::yield_now();
            }
            for c in &out[..n] {
                assert_eq!(check_cell(c), Some(got), "{name}: cell {got}");
                got += 1;
            }
        }
        assert_eq!(producer.join().unwrap(), N, "{name}");
        assert_eq!(got, N, "{name}");
    }
}

#[test]
fn corrupt_indices_from_the_peer_stop_the_ring() {
    for (name, mk) in BACKENDS {
        let mem = mk(CellLink::region_bytes(8).unwrap());
        let link = CellLink::create(mem.clone(), 8).unwrap();
        let (mut tx, _) = link.endpoint(Side::A).unwrap();
        let (_, mut rx) = link.endpoint(Side::B).unwrap();
        assert_eq!(tx.push_batch(&[cell(0)]), 1);
        // The peer writes a tail 1000 entries ahead into ring 0's control block.
        let tail_word = link.layout().rings[0].unwrap().offset / 8;
        mem.words()[tail_word].store(1000u64.to_le(), std::sync::atomic::Ordering::Release);
        let mut out = [[0u8; 53]; 4];
        assert_eq!(rx.pop_batch(&mut out), 0, "{name}");
        assert!(rx.fault().is_some(), "{name}");
        assert!(matches!(
            link.endpoint(Side::B),
            Err(CellLinkError::Fault(_))
        ));
    }
}

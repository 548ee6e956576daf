//! Application → channel → adapter → link → adapter → channel → application, in one thread
//! over a shared-memory link pair: what a user of the driver relies on.

use std::time::{Duration, Instant};

use natm_adapter::{Adapter, AdapterConfig, RxVcConfig, Status};
use natm_adapter::{BufferId as AdapterBuffer, VecBuffers};
use natm_core::VcId;
use natm_link::CellLink;
use natm_link::driver::{Driver, LinkSide, status_from_code};
use natm_link::shm::{ShmLink, ShmWait};
use natm_nic::channel::{AppEnd, BufferId, Channel, ChannelConfig, Completion};
use natm_nic::shm::HeapMem;
use natm_traffic::sched::VcSpec;

const BUFFERS: u32 = 16;
const SIZE: u32 = 66_048; // a 65,535-byte SDU's cells, rounded up to 64

/// An adapter of `buffers` buffers of `size` bytes with UBR VC 0.32 (handle 7) open,
/// receiving SDUs of at most `max_sdu` bytes.
fn adapter_on_0_32(buffers: u32, size: usize, max_sdu: usize) -> Adapter {
    let mut adapter = Adapter::new(AdapterConfig::new(buffers, size)).unwrap();
    adapter
        .open_vc(
            7,
            VcId::uni(0, 32).unwrap(),
            VcSpec::ubr(1_000_000, 1),
            RxVcConfig::aal5(max_sdu),
        )
        .unwrap();
    adapter
}

fn side(link: ShmLink) -> (AppEnd, Driver<ShmLink>) {
    let cfg = ChannelConfig {
        tx_entries: 16,
        rx_entries: 16,
        completion_entries: 32,
        buffer_size: SIZE,
        buffer_count: BUFFERS,
    };
    let region = HeapMem::new(cfg.layout().unwrap().region_size).unwrap();
    let ch = Channel::create(std::sync::Arc::new(region), &cfg).unwrap();
    let app = ch.app().unwrap();
    let adapter = adapter_on_0_32(BUFFERS, SIZE as usize, 65_535);
    (app, Driver::new(adapter, ch.adapter().unwrap(), link))
}

/// Polls both drivers until `done` holds or two seconds pass.
fn run(
    a: &mut Driver<ShmLink>,
    b: &mut Driver<ShmLink>,
    mut done: impl FnMut(&Driver<ShmLink>, &Driver<ShmLink>) -> bool,
) -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        a.poll().unwrap();
        b.poll().unwrap();
        if done(a, b) {
            return true;
        }
    }
    false
}

/// Polls both drivers until `app` has a completion, and returns it.
fn next_completion(
    a: &mut Driver<ShmLink>,
    b: &mut Driver<ShmLink>,
    app: &mut AppEnd,
) -> Completion {
    let mut got = None;
    let done = run(a, b, |_, _| {
        got = got.or_else(|| app.poll_completion().unwrap());
        got.is_some()
    });
    assert!(done, "no completion within two seconds");
    got.unwrap()
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

#[test]
fn sdus_of_every_size_arrive_whole_in_posted_buffers() {
    let (la, lb) = ShmLink::heap_pair(1024, ShmWait::BusyPoll).unwrap();
    let (mut app_a, mut a) = side(la);
    let (mut app_b, mut b) = side(lb);
    for i in 0..BUFFERS {
        app_b.post_rx(BufferId(i)).unwrap();
    }
    let sizes = [1usize, 40, 41, 48, 1500, 8192, 65_535];
    for (k, &len) in sizes.iter().enumerate() {
        let data = pattern(len, k as u8);
        app_a.write_buffer(BufferId(k as u32), &data).unwrap();
        app_a.post_tx(BufferId(k as u32), len as u32, 7, 0).unwrap();
    }
    let mut got = Vec::new();
    let mut sent = 0;
    let ok = run(&mut a, &mut b, |_, _| {
        while let Some(c) = app_a.poll_completion().unwrap() {
            assert_eq!(status_from_code(c.status), Some(Status::Ok));
            sent += 1;
        }
        while let Some(c) = app_b.poll_completion().unwrap() {
            assert!(c.rx);
            assert_eq!(
                (c.handle, status_from_code(c.status)),
                (7, Some(Status::Ok))
            );
            let mut data = vec![0; c.len as usize];
            app_b.read_buffer(c.buffer, &mut data).unwrap();
            got.push(data);
            app_b.post_rx(c.buffer).unwrap();
        }
        got.len() == sizes.len() && sent == sizes.len()
    });
    assert!(ok, "sent {sent}, received {}", got.len());
    for (k, &len) in sizes.iter().enumerate() {
        assert_eq!(got[k], pattern(len, k as u8), "SDU {k} of {len} bytes");
    }
    let c = b.adapter().counters();
    assert_eq!(c.frames_in, sizes.len() as u64);
}

#[test]
fn no_free_buffer_drops_the_frame_and_counts_it() {
    let (la, lb) = ShmLink::heap_pair(1024, ShmWait::BusyPoll).unwrap();
    let (mut app_a, mut a) = side(la);
    let (mut app_b, mut b) = side(lb);
    app_a.write_buffer(BufferId(0), b"first").unwrap();
    app_a.post_tx(BufferId(0), 5, 7, 0).unwrap();
    assert!(run(&mut a, &mut b, |_, b| b.adapter().counters().no_buffer == 1));
    // With a buffer posted the next one arrives.
    app_b.post_rx(BufferId(3)).unwrap();
    app_a.write_buffer(BufferId(1), b"second").unwrap();
    app_a.post_tx(BufferId(1), 6, 7, 0).unwrap();
    let c = next_completion(&mut a, &mut b, &mut app_b);
    assert_eq!((c.buffer, c.len), (BufferId(3), 6));
}

#[test]
fn a_descriptor_for_an_unknown_vc_comes_back_with_its_reason() {
    let (la, lb) = ShmLink::heap_pair(64, ShmWait::BusyPoll).unwrap();
    let (mut app_a, mut a) = side(la);
    let (_app_b, mut b) = side(lb);
    app_a.post_tx(BufferId(2), 100, 99, 0).unwrap();
    let c = next_completion(&mut a, &mut b, &mut app_a);
    assert_eq!(c.buffer, BufferId(2));
    assert_eq!(status_from_code(c.status), Some(Status::UnknownVc));
    assert!(!app_a.adapter_holds(BufferId(2)));
    // Nothing went on the link.
    assert_eq!(a.link().counters().tx_cells, 0);
}

#[test]
fn a_link_that_falls_behind_loses_nothing() {
    // A 16-cell ring and a 171-cell SDU: the driver keeps what the link refused.
    let (la, lb) = ShmLink::heap_pair(16, ShmWait::BusyPoll).unwrap();
    let (mut app_a, mut a) = side(la);
    let (mut app_b, mut b) = side(lb);
    app_b.post_rx(BufferId(0)).unwrap();
    let data = pattern(8192, 9);
    app_a.write_buffer(BufferId(5), &data).unwrap();
    app_a.post_tx(BufferId(5), 8192, 7, 0).unwrap();
    // Only the sender runs at first, so the ring fills and the link refuses cells.
    for _ in 0..10 {
        a.poll().unwrap();
    }
    assert!(a.link_backlog() > 0 && a.counters().link_full > 0);
    let c = next_completion(&mut a, &mut b, &mut app_b);
    let mut back = vec![0; c.len as usize];
    app_b.read_buffer(c.buffer, &mut back).unwrap();
    assert_eq!(back, data);
}

/// The three cells of the 100-byte SDU `pattern(100, seed)` on 0.32.
fn sdu_cells(seed: u8) -> Vec<[u8; 53]> {
    let sdu = pattern(100, seed);
    let mut seg = natm_wire::aal5::Segmenter::uni(VcId::uni(0, 32).unwrap(), &sdu).unwrap();
    let (mut out, mut c) = (Vec::new(), [0u8; 53]);
    while seg.next_cell(&mut c) {
        out.push(c);
    }
    out
}

/// The lane path's receiving end: a link pair of `ring` entries (the sending end first),
/// the receiving end's link side, and an adapter for 0.32 with `buffers` receive buffers
/// of 128 bytes in its own memory, all posted.
fn own_buffers(ring: u32, buffers: u32) -> (ShmLink, LinkSide<ShmLink>, Adapter, VecBuffers) {
    let (a, b) = ShmLink::pair_with(ring, ShmWait::BusyPoll).unwrap();
    let mut adapter = adapter_on_0_32(buffers, 128, 128);
    for i in 0..buffers {
        adapter.post_rx_buffer(AdapterBuffer(i));
    }
    (a, LinkSide::new(b), adapter, VecBuffers::new(buffers, 128))
}

/// The lane path's receive: an adapter given only as many SDUs as it has free buffers drops
/// none; the rest wait in the link side (and then in the link) until buffers come back.
#[test]
fn receiving_by_free_buffers_leaves_the_rest_in_the_link() {
    let (mut a, mut side, mut adapter, mut mem) = own_buffers(4096, 4);
    // Ten 3-cell SDUs on the link.
    let cells: Vec<[u8; 53]> = (0..10u8).flat_map(sdu_cells).collect();
    assert_eq!(a.send_cells(&cells).unwrap(), 30);
    let now = natm_core::Instant::from_nanos(0);
    let mut got = Vec::new();
    for _ in 0..100 {
        let free = adapter.free_rx_buffers();
        side.receive_sdus(&mut adapter, now, &mut mem, free)
            .unwrap();
        // Hand one buffer back per round, so most rounds find too few.
        if let Some(c) = adapter.poll_completion() {
            assert_eq!(c.status, Status::Ok);
            got.push(mem.buffer(c.buffer).unwrap()[..c.len].to_vec());
            adapter.post_rx_buffer(c.buffer);
        }
    }
    let want: Vec<Vec<u8>> = (0..10).map(|k| pattern(100, k)).collect();
    assert_eq!(got, want, "every SDU, in order");
    assert_eq!(adapter.counters().no_buffer, 0);
}

/// The SDU under way needs no new buffer: with none free, its remaining cells still go to
/// the adapter, and the next SDU waits.
#[test]
fn receiving_by_free_buffers_finishes_the_sdu_under_way() {
    let (mut a, mut side, mut adapter, mut mem) = own_buffers(64, 1);
    let now = natm_core::Instant::from_nanos(0);
    let (first, second) = (sdu_cells(1), sdu_cells(2));

    // The first cell begins the SDU and takes the only buffer.
    a.send_cells(&first[..1]).unwrap();
    assert_eq!(
        side.receive_sdus(&mut adapter, now, &mut mem, 1).unwrap(),
        1
    );
    assert_eq!(adapter.free_rx_buffers(), 0);
    // The rest of it and all of the next: only the rest is taken.
    a.send_cells(&first[1..]).unwrap();
    a.send_cells(&second).unwrap();
    assert_eq!(
        side.receive_sdus(&mut adapter, now, &mut mem, 0).unwrap(),
        2
    );
    let c = adapter
        .poll_completion()
        .expect("the SDU under way completed");
    assert_eq!(c.status, Status::Ok);
    assert_eq!(
        &mem.buffer(c.buffer).unwrap()[..c.len],
        &pattern(100, 1)[..]
    );
    assert_eq!(
        side.receive_sdus(&mut adapter, now, &mut mem, 0).unwrap(),
        0
    );
    // With the buffer back, the next SDU comes whole.
    adapter.post_rx_buffer(c.buffer);
    assert_eq!(
        side.receive_sdus(&mut adapter, now, &mut mem, 1).unwrap(),
        3
    );
    let c = adapter.poll_completion().expect("the next SDU");
    assert_eq!(
        &mem.buffer(c.buffer).unwrap()[..c.len],
        &pattern(100, 2)[..]
    );
    assert_eq!(adapter.counters().no_buffer, 0);
}

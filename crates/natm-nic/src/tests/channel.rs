use std::sync::atomic::Ordering;

use proptest::prelude::*;

use super::BACKENDS;
use crate::channel::{
    BufferId, Channel, ChannelConfig, ChannelError, Completion, Counter, Descriptor, PollError,
    Refusal, post_raw_completion, post_raw_tx,
};
use crate::layout::LayoutError;
use crate::shm::{HeapMem, Region};

const CFG: ChannelConfig = ChannelConfig {
    tx_entries: 4,
    rx_entries: 4,
    completion_entries: 8,
    buffer_size: 256,
    buffer_count: 8,
};

fn channel(mk: fn(usize) -> Region) -> Channel {
    Channel::create(mk(CFG.layout().unwrap().region_size), &CFG).unwrap()
}

#[test]
fn transmit_and_receive_round_trip() {
    for (name, mk) in BACKENDS {
        let ch = channel(mk);
        // The adapter maps the same region and validates the header.
        let other = Channel::open(ch.region()).unwrap();
        let mut app = ch.app().unwrap();
        let mut adapter = other.adapter().unwrap();

        app.write_buffer(BufferId(2), b"hello, adapter").unwrap();
        app.post_tx(BufferId(2), 14, 77, 0x1).unwrap();
        app.post_rx(BufferId(5)).unwrap();
        assert!(app.adapter_holds(BufferId(2)) && app.adapter_holds(BufferId(5)));

        let req = adapter.poll_tx().unwrap().unwrap();
        assert_eq!(
            (req.buffer, req.len, req.handle, req.flags),
            (BufferId(2), 14, 77, 1),
            "{name}"
        );
        let mut data = [0u8; 14];
        adapter.read_buffer(req.buffer, &mut data).unwrap();
        assert_eq!(&data, b"hello, adapter");
        let free = adapter.poll_rx_buffer().unwrap().unwrap();
        assert_eq!(free, BufferId(5));
        adapter.write_buffer(free, b"a reply").unwrap();
        adapter.complete_rx(free, 7, 78, 0).unwrap();
        adapter.complete_tx(req.buffer, 0).unwrap();

        let c1 = app.poll_completion().unwrap().unwrap();
        assert_eq!(
            c1,
            Completion {
                buffer: BufferId(5),
                len: 7,
                handle: 78,
                rx: true,
                status: 0
            }
        );
        let mut reply = [0u8; 7];
        app.read_buffer(c1.buffer, &mut reply).unwrap();
        assert_eq!(&reply, b"a reply");
        let c2 = app.poll_completion().unwrap().unwrap();
        assert_eq!(
            c2,
            Completion {
                buffer: BufferId(2),
                len: 14,
                handle: 77,
                rx: false,
                status: 0
            }
        );
        assert_eq!(app.poll_completion(), Ok(None));
        assert!(!app.adapter_holds(BufferId(2)));

        for (c, v) in [
            (Counter::TxPosted, 1),
            (Counter::RxPosted, 1),
            (Counter::TxTaken, 1),
            (Counter::RxTaken, 1),
            (Counter::Completed, 2),
            (Counter::CompletionsTaken, 2),
            (Counter::RefusedNotOwned, 0),
        ] {
            assert_eq!(ch.counter(c), v, "{name}: {c:?}");
        }
    }
}

#[test]
fn local_ownership_rules() {
    for (name, mk) in BACKENDS {
        let ch = channel(mk);
        let mut app = ch.app().unwrap();
        let mut adapter = ch.adapter().unwrap();
        assert_eq!(
            app.post_tx(BufferId(8), 1, 0, 0),
            Err(ChannelError::NoSuchBuffer(BufferId(8))),
            "{name}"
        );
        assert_eq!(
            app.post_tx(BufferId(0), 257, 0, 0),
            Err(ChannelError::TooLong {
                len: 257,
                size: 256
            })
        );
        app.post_tx(BufferId(0), 1, 0, 0).unwrap();
        assert_eq!(
            app.write_buffer(BufferId(0), b"x"),
            Err(ChannelError::NotOurs(BufferId(0))),
            "posted: not ours"
        );
        assert_eq!(
            app.post_rx(BufferId(0)),
            Err(ChannelError::NotOurs(BufferId(0))),
            "no double post"
        );
        assert_eq!(
            adapter.read_buffer(BufferId(0), &mut [0; 1]),
            Err(ChannelError::NotOurs(BufferId(0))),
            "not taken yet"
        );
        let req = adapter.poll_tx().unwrap().unwrap();
        assert_eq!(
            adapter.write_buffer(req.buffer, b"x"),
            Err(ChannelError::NotOurs(req.buffer)),
            "tx buffers are read-only"
        );
        assert_eq!(
            adapter.complete_rx(req.buffer, 1, 0, 0),
            Err(ChannelError::NotOurs(req.buffer))
        );
        assert_eq!(
            adapter.complete_tx(BufferId(3), 0),
            Err(ChannelError::NotOurs(BufferId(3)))
        );
        // Full rings.
        for i in 1..5 {
            app.post_tx(BufferId(i), 1, 0, 0).unwrap();
        }
        assert_eq!(app.post_tx(BufferId(5), 1, 0, 0), Err(ChannelError::Full));
        assert!(
            !app.adapter_holds(BufferId(5)),
            "a refused post leaves the buffer with the app"
        );
    }
}

#[test]
fn adapter_refuses_bad_descriptors_and_counts_them() {
    for (name, mk) in BACKENDS {
        let ch = channel(mk);
        let mut adapter = ch.adapter().unwrap();
        let d = |offset, len| Descriptor {
            offset,
            len,
            handle: 1,
            flags: 0,
            status: 0,
        };
        // Outside the buffer area, past a buffer, mid-buffer, then a double post.
        assert!(post_raw_tx(&ch, d(8 * 256, 10)));
        assert_eq!(
            adapter.poll_tx(),
            Err(PollError::Refused(Refusal::OutOfBounds)),
            "{name}"
        );
        assert!(post_raw_tx(&ch, d(0, 257)));
        assert_eq!(
            adapter.poll_tx(),
            Err(PollError::Refused(Refusal::OutOfBounds))
        );
        assert!(post_raw_tx(&ch, d(300, 10)));
        assert_eq!(
            adapter.poll_tx(),
            Err(PollError::Refused(Refusal::Misaligned))
        );
        assert!(post_raw_tx(&ch, d(512, 10)));
        assert!(adapter.poll_tx().unwrap().is_some());
        assert!(post_raw_tx(&ch, d(512, 10)));
        assert_eq!(
            adapter.poll_tx(),
            Err(PollError::Refused(Refusal::NotOwned)),
            "held already"
        );
        assert_eq!(adapter.poll_tx(), Ok(None));
        assert_eq!(ch.counter(Counter::RefusedOutOfBounds), 2);
        assert_eq!(ch.counter(Counter::RefusedMisaligned), 1);
        assert_eq!(ch.counter(Counter::RefusedNotOwned), 1);
        assert_eq!(ch.counter(Counter::TxTaken), 1);
    }
}

#[test]
fn app_refuses_completions_for_buffers_the_adapter_does_not_hold() {
    for (name, mk) in BACKENDS {
        let ch = channel(mk);
        let mut app = ch.app().unwrap();
        let mut adapter = ch.adapter().unwrap();
        app.post_rx(BufferId(1)).unwrap();
        let b1 = adapter.poll_rx_buffer().unwrap().unwrap();
        adapter.complete_rx(b1, 4, 0, 0).unwrap();
        assert!(app.poll_completion().unwrap().is_some());
        // A misbehaving adapter completes buffer 1 again (the app owns it now), a buffer
        // outside the area, and one mid-buffer.
        let d = |offset| Descriptor {
            offset,
            len: 4,
            handle: 0,
            flags: Descriptor::FLAG_RX,
            status: 0,
        };
        assert!(post_raw_completion(&ch, d(256)));
        assert!(post_raw_completion(&ch, d(1 << 20)));
        assert!(post_raw_completion(&ch, d(260)));
        assert_eq!(
            app.poll_completion(),
            Err(PollError::Refused(Refusal::NotOwned)),
            "{name}"
        );
        assert_eq!(
            app.poll_completion(),
            Err(PollError::Refused(Refusal::OutOfBounds))
        );
        assert_eq!(
            app.poll_completion(),
            Err(PollError::Refused(Refusal::Misaligned))
        );
        assert_eq!(app.poll_completion(), Ok(None));
        assert_eq!(ch.counter(Counter::AppRefused), 3);
        assert!(!app.adapter_holds(BufferId(1)));
        app.write_buffer(BufferId(1), b"still mine").unwrap();
    }
}

#[test]
fn create_checks_sizes() {
    let n = CFG.layout().unwrap().region_size;
    let bad = ChannelConfig {
        completion_entries: 4,
        ..CFG
    };
    assert!(matches!(
        bad.layout(),
        Err(LayoutError::CompletionTooSmall { .. })
    ));
    let mem: Region = std::sync::Arc::new(HeapMem::new(n + 64).unwrap());
    assert!(matches!(
        Channel::create(mem, &CFG),
        Err(LayoutError::SizeMismatch { .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A peer that writes random words anywhere in the region (indices, slots, counters,
    /// the header) never makes either end panic or touch memory outside the region.
    #[test]
    fn scribbling_peer_never_panics(writes in proptest::collection::vec((0usize..4096, any::<u64>()), 0..40), ops in proptest::collection::vec((0u8..8, 0u32..9), 0..60)) {
        let n = CFG.layout().unwrap().region_size;
        let mem: Region = std::sync::Arc::new(HeapMem::new(n).unwrap());
        let ch = Channel::create(mem.clone(), &CFG).unwrap();
        let mut app = ch.app().unwrap();
        let mut adapter = ch.adapter().unwrap();
        let words = mem.words();
        for (k, &(op, buffer)) in ops.iter().enumerate() {
            if let Some(&(at, v)) = writes.get(k) {
                words[at % words.len()].store(v, Ordering::Relaxed);
            }
            // Buffers 0..=8: 8 is out of range.
            let b = BufferId(buffer);
            match op {
                0 => { let _ = app.post_tx(b, 10, 1, 0); }
                1 => { let _ = app.post_rx(b); }
                2 => { let _ = app.poll_completion(); }
                3 => { if let Ok(Some(r)) = adapter.poll_tx() { let _ = adapter.complete_tx(r.buffer, 0); } }
                4 => { if let Ok(Some(r)) = adapter.poll_rx_buffer() { let _ = adapter.write_buffer(r, b"x"); let _ = adapter.complete_rx(r, 1, 2, 0); } }
                5 => { let _ = app.write_buffer(b, b"data"); }
                6 => { let _ = Channel::open(mem.clone()).map(|c| c.app().is_ok()); }
                _ => { let _ = ch.counter(Counter::Completed); }
            }
        }
    }
}

#[test]
fn adapter_reads_and_writes_held_buffers_at_word_offsets() {
    for (name, mk) in BACKENDS {
        let ch = channel(mk);
        let mut app = ch.app().unwrap();
        let mut adapter = ch.adapter().unwrap();
        let data: Vec<u8> = (0..200u8).collect();
        app.write_buffer(BufferId(1), &data).unwrap();
        app.post_tx(BufferId(1), 200, 1, 0).unwrap();
        app.post_rx(BufferId(3)).unwrap();
        let tx = adapter.poll_tx().unwrap().unwrap().buffer;
        let rx = adapter.poll_rx_buffer().unwrap().unwrap();
        assert_eq!(adapter.buffer_size(), 256);

        // CellBytes-sized pieces at offsets 48·k, the way segmentation reads.
        let mut piece = [0u8; 48];
        adapter.read_buffer_at(tx, 96, &mut piece).unwrap();
        assert_eq!(&piece[..], &data[96..144], "{name}");
        adapter.write_buffer_at(rx, 48, &piece).unwrap();
        adapter.write_buffer_at(rx, 0, &data[..48]).unwrap();
        let mut back = [0u8; 96];
        adapter.read_buffer_at(rx, 0, &mut back).unwrap();
        assert_eq!(&back[..48], &data[..48]);
        assert_eq!(&back[48..], &data[96..144]);

        // Unaligned, past the end, and the wrong direction are refused.
        assert!(matches!(
            adapter.read_buffer_at(tx, 4, &mut piece),
            Err(ChannelError::Unaligned { offset: 4 })
        ));
        assert!(matches!(
            adapter.read_buffer_at(tx, 216, &mut piece),
            Err(ChannelError::TooLong { .. })
        ));
        assert!(matches!(
            adapter.read_buffer_at(tx, usize::MAX - 7, &mut piece),
            Err(ChannelError::TooLong { .. })
        ));
        assert!(matches!(
            adapter.write_buffer_at(tx, 0, &piece),
            Err(ChannelError::NotOurs(_))
        ));
        // A buffer the adapter does not hold.
        assert!(matches!(
            adapter.read_buffer_at(BufferId(0), 0, &mut piece),
            Err(ChannelError::NotOurs(_))
        ));
    }
}

#[test]
fn state_word_is_seen_by_both_ends_and_wakes_a_sleeping_app() {
    use crate::channel::ChannelState;
    use crate::notify::{WaitOutcome, Waiter};
    for (name, mk) in BACKENDS {
        let ch = channel(mk);
        let other = Channel::open(ch.region()).unwrap();
        let mut app = ch.app().unwrap();
        let mut adapter = other.adapter().unwrap();
        assert_eq!(
            app.state(),
            ChannelState::Live,
            "{name}: a fresh region is live"
        );
        let (mut waiter, waker) = Waiter::eventfd().unwrap();
        adapter.set_waker(waker);
        // The app sleeps on its completion ring; a state change alone must wake it.
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(30));
            adapter.set_state(ChannelState::Revoked);
            adapter
        });
        let start = std::time::Instant::now();
        let out = waiter
            .wait(&mut app, std::time::Duration::from_secs(5))
            .unwrap();
        let adapter = t.join().unwrap();
        assert_eq!(out, WaitOutcome::Ready, "{name}");
        assert!(
            start.elapsed() < std::time::Duration::from_secs(2),
            "{name}"
        );
        assert_eq!(app.state(), ChannelState::Revoked, "{name}");
        assert_eq!(adapter.state(), ChannelState::Revoked, "{name}");
        // The header still validates: the word is outside what validation checks.
        assert!(Channel::open(ch.region()).is_ok(), "{name}");
        assert_eq!(
            ChannelState::from_code(ChannelState::LinkDown.code()),
            ChannelState::LinkDown
        );
        assert_eq!(ChannelState::from_code(9), ChannelState::Unknown(9));
    }
}

#[test]
fn zero_copy_views_cover_only_owned_buffers() {
    for (name, mk) in BACKENDS {
        let ch = channel(mk);
        let other = Channel::open(ch.region()).unwrap();
        let mut app = ch.app().unwrap();
        let mut adapter = other.adapter().unwrap();
        app.buffer_mut(BufferId(1), 5)
            .unwrap()
            .copy_from_slice(b"hello");
        app.post_tx(BufferId(1), 5, 1, 0).unwrap();
        let req = adapter.poll_tx().unwrap().unwrap();
        let mut got = [0u8; 5];
        adapter.read_buffer(req.buffer, &mut got).unwrap();
        assert_eq!(&got, b"hello", "{name}");
        assert_eq!(
            app.buffer(BufferId(1), 5),
            Err(ChannelError::NotOurs(BufferId(1))),
            "{name}: no view of a buffer the adapter holds"
        );
        assert!(matches!(
            app.buffer(BufferId(0), 257),
            Err(ChannelError::TooLong { .. })
        ));
        assert!(matches!(
            app.buffer(BufferId(8), 1),
            Err(ChannelError::NoSuchBuffer(_))
        ));
        adapter.complete_tx(req.buffer, 0).unwrap();
        app.poll_completion().unwrap().unwrap();
        assert_eq!(app.buffer(BufferId(1), 5).unwrap(), b"hello", "{name}");
    }
}

//! A peer that dies with the ring half written.
//!
//! A push is: write the slot words (Relaxed), then publish the tail (Release). A producer
//! killed anywhere before the Release store leaves entries beyond the tail, which the
//! consumer never reads; a replacement producer attaches at the published tail and
//! overwrites them. Tested three ways: a simulated crash after every single word of a
//! batch (in process, both backends), a forked child that stages half a batch and kills
//! itself with SIGKILL, and a forked child producing flat out that the parent kills with
//! SIGKILL at an arbitrary moment.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{BACKENDS, cell, check_cell};
use crate::cells::{CellBytes, CellLink, Side};
use crate::channel::{BufferId, Channel, ChannelConfig, Descriptor};
use crate::memfd::MemfdMem;
use crate::shm::{Region, SharedMem};

#[test]
fn crash_after_every_word_of_a_batch() {
    for (name, mk) in BACKENDS {
        // 4 cells of 7 words each: crash after 0..=28 words written.
        for words in 0..=28 {
            let link = CellLink::create(mk(CellLink::region_bytes(8).unwrap()), 8).unwrap();
            let mut rx = link.endpoint(Side::B).unwrap().1;
            {
                let (mut tx, _) = link.endpoint(Side::A).unwrap();
                assert_eq!(tx.push_batch(&[cell(0), cell(1)]), 2);
                let half: Vec<CellBytes> = (100..104).map(cell).collect();
                tx.stage_partial(&half, words);
                // The producer dies here: dropped without publishing.
            }
            let mut out = [[0u8; 53]; 8];
            let n = rx.pop_batch(&mut out);
            assert_eq!(
                n, 2,
                "{name}, crash after {words} words: only published cells"
            );
            assert_eq!(
                (check_cell(&out[0]), check_cell(&out[1])),
                (Some(0), Some(1))
            );
            assert_eq!(
                rx.pop_batch(&mut out),
                0,
                "{name}: nothing half written is seen"
            );
            // A new producer takes over at the published tail and overwrites the debris.
            let (mut tx2, _) = link.endpoint(Side::A).unwrap();
            let fresh: Vec<CellBytes> = (2..8).map(cell).collect();
            assert_eq!(tx2.push_batch(&fresh), 6);
            assert_eq!(rx.pop_batch(&mut out), 6);
            for (i, c) in out[..6].iter().enumerate() {
                assert_eq!(check_cell(c), Some(2 + i as u64), "{name}, {words} words");
            }
        }
    }
}

#[test]
fn app_dies_between_descriptor_and_index() {
    for (name, mk) in BACKENDS {
        let cfg = ChannelConfig {
            tx_entries: 4,
            rx_entries: 4,
            completion_entries: 8,
            buffer_size: 128,
            buffer_count: 4,
        };
        let ch = Channel::create(mk(cfg.layout().unwrap().region_size), &cfg).unwrap();
        let mut adapter = ch.adapter().unwrap();
        {
            let mut app = ch.app().unwrap();
            app.write_buffer(BufferId(0), b"complete").unwrap();
            app.post_tx(BufferId(0), 8, 5, 0).unwrap();
            app.stage_tx(Descriptor {
                offset: 128,
                len: 3,
                handle: 6,
                flags: 0,
                status: 0,
            });
        }
        let req = adapter.poll_tx().unwrap().unwrap();
        assert_eq!(
            (req.buffer, req.len, req.handle),
            (BufferId(0), 8, 5),
            "{name}"
        );
        assert_eq!(
            adapter.poll_tx(),
            Ok(None),
            "{name}: the staged descriptor is invisible"
        );
        assert!(!adapter.holds(BufferId(1)));
    }
}

fn memfd_link(entries: u32) -> (Arc<MemfdMem>, CellLink) {
    let mem =
        Arc::new(MemfdMem::create("natm-fork", CellLink::region_bytes(entries).unwrap()).unwrap());
    let link = CellLink::create(mem.clone() as Region, entries).unwrap();
    (mem, link)
}

/// Forks; the child runs `child` (which must not allocate: the parent is multithreaded)
/// and is expected to die by SIGKILL. Returns the child's pid.
pub(crate) fn fork_child(child: impl FnOnce()) -> libc::pid_t {
    // SAFETY: fork in a multithreaded process: the child runs only `child`, which touches
    // the shared mapping through atomics and makes async-signal-safe calls (kill, _exit),
    // never the allocator or locks; it never returns into the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        child();
        // SAFETY: _exit is async-signal-safe and ends the child without running the
        // parent's atexit handlers or destructors.
        unsafe { libc::_exit(3) };
    }
    pid
}

/// Waits (bounded) for the child and asserts it died of SIGKILL.
pub(crate) fn reap_killed(pid: libc::pid_t) {
    reap(pid, |status| {
        libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL
    });
}

/// Waits (bounded) for the child and asserts `ok(status)`.
pub(crate) fn reap(pid: libc::pid_t, ok: impl Fn(i32) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a live local; WNOHANG never blocks.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            assert!(ok(status), "child status {status:#x}");
            return;
        }
        assert!(r == 0, "waitpid failed");
        assert!(Instant::now() < deadline, "child did not end");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn child_process_killed_with_half_a_batch_written() {
    let (mem, link) = memfd_link(16);
    // The parent maps the memfd a second time, as a receiving process would.
    let theirs: Region = Arc::new(MemfdMem::map(mem.fd().try_clone_to_owned().unwrap()).unwrap());
    let mine = CellLink::open(theirs).unwrap();
    let (_, mut rx) = mine.endpoint(Side::B).unwrap();
    let (mut tx, _) = link.endpoint(Side::A).unwrap();
    let published = [cell(0), cell(1), cell(2)];
    let half = [cell(50), cell(51), cell(52), cell(53)];
    let pid = fork_child(move || {
        tx.push_batch(&published);
        // Two and a half cells of the next batch, then death before the Release store.
        tx.stage_partial(&half, 17);
        // SAFETY: kill and getpid are async-signal-safe; SIGKILL ends this process here.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    });
    reap_killed(pid);
    let mut out = [[0u8; 53]; 16];
    assert_eq!(rx.pop_batch(&mut out), 3);
    assert_eq!(
        out[..3].iter().map(check_cell).collect::<Vec<_>>(),
        [Some(0), Some(1), Some(2)]
    );
    assert_eq!(
        rx.pop_batch(&mut out),
        0,
        "the half-written batch is never seen"
    );
    // The debris is really there in shared memory, beyond the tail.
    let slot3 = link.layout().rings[0].unwrap().offset / 8 + 24 + 3 * 8;
    assert_eq!(u64::from_le(mem.words()[slot3].load(Ordering::Relaxed)), 50);
    let (mut tx2, _) = mine.endpoint(Side::A).unwrap();
    assert_eq!(tx2.push_batch(&[cell(3)]), 1);
    assert_eq!(rx.pop_batch(&mut out), 1);
    assert_eq!(check_cell(&out[0]), Some(3));
}

#[test]
fn child_process_killed_while_streaming() {
    let (_mem, link) = memfd_link(64);
    let (_, mut rx) = link.endpoint(Side::B).unwrap();
    let (mut tx, _) = link.endpoint(Side::A).unwrap();
    let pid = fork_child(move || {
        let mut batch = [[0u8; 53]; 16];
        let mut seq = 0u64;
        // Runs until killed (or gives up after a bounded time if the parent died).
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let free = tx.free().min(16);
            for (i, c) in batch[..free].iter_mut().enumerate() {
                *c = cell(seq + i as u64);
            }
            seq += tx.push_batch(&batch[..free]) as u64;
            std::hint::spin_loop();
        }
    });
    let mut got = 0u64;
    let mut out = [[0u8; 53]; 16];
    let deadline = Instant::now() + Duration::from_secs(10);
    // Consume until a good number of cells went by, then kill the child mid-stream.
    while got < 50_000 && Instant::now() < deadline {
        let n = rx.pop_batch(&mut out);
        for c in &out[..n] {
            assert_eq!(check_cell(c), Some(got), "intact and in order");
            got += 1;
        }
        if n == 0 {
            std::thread::yield_now();
        }
    }
    // SAFETY: kill on the pid of our own child, which has not been reaped yet.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    reap_killed(pid);
    loop {
        let n = rx.pop_batch(&mut out);
        if n == 0 {
            break;
        }
        for c in &out[..n] {
            assert_eq!(
                check_cell(c),
                Some(got),
                "every published cell intact after the kill"
            );
            got += 1;
        }
    }
    assert!(got >= 50_000, "child produced only {got}");
    assert!(rx.fault().is_none());
}

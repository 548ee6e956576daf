//! Every notification mode really waits and is woken. The producer side never guesses:
//! for the blocking modes it publishes only once the consumer has announced in shared
//! memory that it is going to sleep; every wait has a timeout far above the expected
//! wake-up, so a lost wake-up fails the test instead of hanging it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{BACKENDS, cell, check_cell};
use crate::cells::{CellConsumer, CellLink, CellProducer, Side};
use crate::channel::{BufferId, Channel, ChannelConfig};
use crate::notify::{AdaptivePolicy, SignalWaker, WaitOutcome, Waiter, Wakeable, Waker};
use crate::signal;

const LONG: Duration = Duration::from_secs(10);

fn link(mk: fn(usize) -> crate::shm::Region) -> (CellProducer, CellConsumer) {
    let link = CellLink::create(mk(CellLink::region_bytes(16).unwrap()), 16).unwrap();
    (
        link.endpoint(Side::A).unwrap().0,
        link.endpoint(Side::B).unwrap().1,
    )
}

/// Spins (bounded) until `cond` holds.
fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + LONG;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::yield_now();
    }
}

/// Runs `waiter` on a consumer thread; once it reports `started` (and, for blocking
/// modes, the shared flag says it sleeps), the producer pushes one cell.
fn wake_once(
    mut rx: CellConsumer,
    mut tx: CellProducer,
    make_waiter: impl FnOnce() -> Waiter + Send + 'static,
    blocking: bool,
    pause: Duration,
) -> (WaitOutcome, Duration, CellProducer) {
    let started = Arc::new(AtomicBool::new(false));
    let s2 = started.clone();
    let (target_tx, target_rx) = mpsc::channel();
    let consumer = std::thread::spawn(move || {
        let mut w = make_waiter();
        target_tx.send(w.signal_target()).unwrap();
        // t0 before `started`: the producer's pause counts from after it, so `took`
        // includes the whole pause even if this thread is descheduled here.
        let t0 = Instant::now();
        s2.store(true, Ordering::Release);
        let out = w.wait(&mut rx, LONG).unwrap();
        let took = t0.elapsed();
        let mut c = [[0u8; 53]; 1];
        assert_eq!(rx.pop_batch(&mut c), 1);
        assert_eq!(check_cell(&c[0]), Some(42));
        (out, took)
    });
    if let Some(t) = target_rx.recv().unwrap() {
        tx.set_waker(Waker::Signal(SignalWaker::new(t)));
    }
    until("the consumer to start", || started.load(Ordering::Acquire));
    if blocking {
        // The consumer announced in shared memory that it is about to sleep.
        until("the consumer to announce its sleep", || {
            tx.waiting_flag_for_tests().load(Ordering::SeqCst) != 0
        });
    }
    std::thread::sleep(pause);
    if blocking {
        // Asleep again: a polling consumer's sleep ends after POLL_SLEEP_MAX (1 ms) and it
        // spins before the next one, and a cell published then is found without a kick
        // (1 run in ~40 failed `woken by its kick` that way).
        until("the consumer to sleep again", || {
            tx.waiting_flag_for_tests().load(Ordering::SeqCst) != 0
        });
    }
    assert_eq!(tx.push_batch(&[cell(42)]), 1);
    let (out, took) = consumer.join().unwrap();
    (out, took, tx)
}

#[test]
fn busy_poll_wakes() {
    for (name, mk) in BACKENDS {
        let (tx, rx) = link(mk);
        let (out, took, _) = wake_once(rx, tx, || Waiter::BusyPoll, false, Duration::ZERO);
        assert_eq!(out, WaitOutcome::Ready, "{name}");
        assert!(took < LONG);
    }
}

#[test]
fn poll_wakes() {
    for (name, mk) in BACKENDS {
        let (mut tx, rx) = link(mk);
        let (waiter, waker) = Waiter::poll().unwrap();
        tx.set_waker(waker);
        // Whether it yields or sleeps meanwhile depends on the machine: it is woken.
        let (out, took, _) = wake_once(rx, tx, move || waiter, false, Duration::from_millis(5));
        assert_eq!(out, WaitOutcome::Ready, "{name}");
        assert!(took < LONG);
    }
}

#[test]
fn a_crowded_poller_sleeps_and_is_woken_by_its_kick() {
    let cpu = crate::sched::allowed_cpus().unwrap()[0];
    for (name, mk) in BACKENDS {
        // The producer publishes right after it saw the consumer's sleep announced, but the
        // consumer may leave that sleep in between (a stale eventfd count, the end of its
        // bounded sleep) and find the cell by looking: woken, yet not by the kick. So a few
        // tries, one of which must be the kick's.
        let mut kicked = 0;
        for _ in 0..3 {
            let (mut tx, rx) = link(mk);
            // Another poller of this process, awake on the one CPU the consumer may use.
            let other = crate::sched::Pollers::register();
            assert!(!other.crowded(&[cpu]), "{name}: alone on cpu {cpu}");
            let (waiter, waker) = Waiter::poll().unwrap();
            tx.set_waker(waker);
            let make = move || {
                crate::sched::pin_current_thread(cpu).unwrap();
                waiter
            };
            // Blocking: the producer publishes only once the consumer announced its sleep.
            let (out, took, tx) = wake_once(rx, tx, make, true, Duration::from_millis(2));
            assert_eq!(out, WaitOutcome::Ready, "{name}");
            assert!(took < LONG);
            drop(other);
            kicked = tx.waker().kicks();
            if kicked == 1 {
                break;
            }
        }
        assert_eq!(kicked, 1, "{name}: woken by its kick");
    }
}

#[test]
fn adaptive_wakes_from_its_sleep_phase() {
    for (name, mk) in BACKENDS {
        let (mut tx, rx) = link(mk);
        let policy = AdaptivePolicy {
            spin: Duration::from_micros(50),
            yields: 10,
        };
        let (waiter, waker) = Waiter::adaptive(policy).unwrap();
        tx.set_waker(waker);
        // The consumer spins 50 µs, yields 10 times and announces its sleep; the producer
        // then holds back 30 ms more before it publishes.
        let (out, took, tx) = wake_once(rx, tx, move || waiter, true, Duration::from_millis(30));
        assert_eq!(out, WaitOutcome::Ready, "{name}");
        assert!(
            took >= Duration::from_millis(30),
            "{name}: it waited ({took:?})"
        );
        assert!(took < LONG);
        assert_eq!(tx.waker().kicks(), 1, "{name}: woken by its kick");
    }
}

#[test]
fn adaptive_spinning_consumer_gets_no_kick() {
    for (name, mk) in BACKENDS {
        let (mut tx, rx) = link(mk);
        // A spin far longer than the test: the cell always comes while it spins.
        let policy = AdaptivePolicy {
            spin: LONG * 2,
            yields: 0,
        };
        let (waiter, waker) = Waiter::adaptive(policy).unwrap();
        tx.set_waker(waker);
        let (out, took, tx) = wake_once(
            rx,
            tx,
            move || waiter,
            false,
            // Long enough for the consumer to be well inside its spin.
            Duration::from_millis(5),
        );
        assert_eq!(out, WaitOutcome::Ready, "{name}");
        assert!(took < LONG);
        assert_eq!(
            tx.waker().kicks(),
            0,
            "{name}: a spinning consumer is not kicked"
        );
        assert_eq!(tx.waiting_flag_for_tests().load(Ordering::SeqCst), 0);
    }
}

#[test]
fn adaptive_past_its_spin_blocks_and_one_kick_wakes_it() {
    for (name, mk) in BACKENDS {
        let (mut tx, rx) = link(mk);
        let (waiter, waker) = Waiter::adaptive(AdaptivePolicy::default()).unwrap();
        assert_eq!(
            waiter.mode(),
            crate::notify::Notify::Adaptive(AdaptivePolicy::default())
        );
        assert!(waiter.as_fd().is_some(), "it sleeps on an eventfd");
        tx.set_waker(waker);
        // `blocking`: the producer publishes only once the consumer stored the flag, that
        // is once its spin is over and it is about to block.
        let (out, took, tx) = wake_once(rx, tx, move || waiter, true, Duration::ZERO);
        assert_eq!(out, WaitOutcome::Ready, "{name}");
        assert!(took < LONG);
        assert_eq!(
            tx.waker().kicks(),
            1,
            "{name}: exactly one write for one sleep"
        );
        assert_eq!(tx.waker().kick_failures(), 0, "{name}");
        assert_eq!(tx.waiting_flag_for_tests().load(Ordering::SeqCst), 0);
    }
}

/// A small seeded generator for the stress gaps (xorshift64*).
struct Gaps(u64);

impl Gaps {
    fn next_below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// Ping-pong of `rounds` single cells: the producer publishes cell `i` only after the
/// consumer took cell `i - 1` and went back to wait, after a gap drawn from `0..=gap_max`
/// or, every other round on average, from `0..=2 µs` (the consumer is then between its
/// return to `wait` and its sleep); gaps are busy-waited, so precise to a µs or so. Each
/// publish is the only
/// one that can wake the consumer, so a lost wake-up leaves the consumer asleep until
/// its 10 s timeout and fails the round. Returns the producer (for its kick counts).
fn ping_pong(
    mk: fn(usize) -> crate::shm::Region,
    waiter: Waiter,
    waker: Waker,
    rounds: u64,
    gap_max: Duration,
    seed: u64,
) -> CellProducer {
    let (mut tx, mut rx) = link(mk);
    tx.set_waker(waker);
    let taken = Arc::new(AtomicU64::new(0));
    let t2 = taken.clone();
    let mut waiter = waiter;
    let consumer = std::thread::spawn(move || {
        let mut c = [[0u8; 53]; 2];
        for i in 0..rounds {
            let out = waiter.wait(&mut rx, LONG).unwrap();
            assert_eq!(out, WaitOutcome::Ready, "round {i}: the wake-up was lost");
            assert_eq!(rx.pop_batch(&mut c), 1, "round {i}");
            assert_eq!(check_cell(&c[0]), Some(i));
            t2.store(i + 1, Ordering::Release);
        }
    });
    let mut gaps = Gaps(seed | 1);
    let max_ns = gap_max.as_nanos() as u64 + 1;
    for i in 0..rounds {
        // Spun, not yielded: the publish must be able to land within a µs of the
        // consumer's return to `wait`.
        let deadline = Instant::now() + LONG;
        while taken.load(Ordering::Acquire) < i {
            assert!(
                Instant::now() < deadline,
                "round {i}: the consumer is stuck"
            );
            std::hint::spin_loop();
        }
        let gap = Duration::from_nanos(match gaps.next_below(2) {
            0 => gaps.next_below(2001),
            _ => gaps.next_below(max_ns),
        });
        let t0 = Instant::now();
        while t0.elapsed() < gap {
            std::hint::spin_loop();
        }
        assert_eq!(tx.push_batch(&[cell(i)]), 1);
    }
    consumer.join().unwrap();
    tx
}

#[test]
fn adaptive_loses_no_wake_up_around_its_spin_threshold() {
    // Gaps of 0–50 µs around a 20 µs spin: some cells come while the consumer spins,
    // some as it announces its sleep, some once it sleeps.
    const ROUNDS: u64 = 3000;
    for (i, (name, mk)) in BACKENDS.into_iter().enumerate() {
        let policy = AdaptivePolicy {
            spin: Duration::from_micros(20),
            yields: 0,
        };
        let (waiter, waker) = Waiter::adaptive(policy).unwrap();
        let tx = ping_pong(
            mk,
            waiter,
            waker,
            ROUNDS,
            Duration::from_micros(50),
            7 + i as u64,
        );
        assert!(
            tx.waker().kicks() <= ROUNDS,
            "{name}: at most a kick per cell"
        );
        assert_eq!(tx.waker().kick_failures(), 0, "{name}");
    }
}

#[test]
fn eventfd_loses_no_wake_up_with_the_drain_before_the_sleep() {
    // The eventfd mode drains before it announces a sleep, not after it wakes: cells
    // published at every point of that sequence must each wake it.
    const ROUNDS: u64 = 5000;
    for (i, (name, mk)) in BACKENDS.into_iter().enumerate() {
        let (waiter, waker) = Waiter::eventfd().unwrap();
        let tx = ping_pong(
            mk,
            waiter,
            waker,
            ROUNDS,
            Duration::from_micros(30),
            11 + i as u64,
        );
        assert!(tx.waker().kicks() <= ROUNDS, "{name}");
        assert_eq!(tx.waker().kick_failures(), 0, "{name}");
    }
}

#[test]
fn a_kick_left_from_an_earlier_sleep_does_not_end_the_next_wait() {
    for make in [
        Waiter::eventfd as fn() -> std::io::Result<(Waiter, Waker)>,
        || Waiter::adaptive(AdaptivePolicy::default()),
    ] {
        let (_tx, mut rx) = link(BACKENDS[0].1);
        let (mut waiter, _waker) = make().unwrap();
        // A count is pending (a kick that raced with an earlier timeout, say), and the
        // ring is empty: the wait drains it, sleeps, and times out.
        rustix::io::write(waiter.as_fd().unwrap(), &1u64.to_ne_bytes()).unwrap();
        assert_eq!(
            waiter.wait(&mut rx, Duration::from_millis(20)).unwrap(),
            WaitOutcome::TimedOut
        );
        assert_eq!(rx.waiting_flag().load(Ordering::Relaxed), 0);
        // And the count is gone.
        let mut buf = [0u8; 8];
        assert_eq!(
            rustix::io::read(waiter.as_fd().unwrap(), &mut buf),
            Err(rustix::io::Errno::AGAIN)
        );
    }
}

#[test]
fn polling_modes_time_out_on_an_empty_ring() {
    let (_tx, mut rx) = link(BACKENDS[0].1);
    for mut w in [
        Waiter::BusyPoll,
        Waiter::adaptive(AdaptivePolicy::default()).unwrap().0,
    ] {
        let t0 = Instant::now();
        assert_eq!(
            w.wait(&mut rx, Duration::from_millis(20)).unwrap(),
            WaitOutcome::TimedOut
        );
        assert!(t0.elapsed() >= Duration::from_millis(20));
    }
    // An unbounded timeout is accepted (no deadline overflow) when the ring is ready.
    let (mut tx, mut ready) = link(BACKENDS[0].1);
    assert_eq!(tx.push_batch(&[cell(1)]), 1);
    for mut w in [
        Waiter::BusyPoll,
        Waiter::adaptive(AdaptivePolicy::default()).unwrap().0,
    ] {
        assert_eq!(
            w.wait(&mut ready, Duration::MAX).unwrap(),
            WaitOutcome::Ready
        );
    }
    let (mut w, _waker) = Waiter::eventfd().unwrap();
    assert_eq!(
        w.wait(&mut rx, Duration::from_millis(20)).unwrap(),
        WaitOutcome::TimedOut
    );
    assert_eq!(
        rx.waiting_flag().load(Ordering::Relaxed),
        0,
        "the flag is cleared after a timeout"
    );
}

#[test]
fn eventfd_wakes_a_blocked_consumer_and_the_fast_path_makes_no_call() {
    for (name, mk) in BACKENDS {
        let (mut tx, rx) = link(mk);
        let (waiter, waker) = Waiter::eventfd().unwrap();
        tx.set_waker(waker);
        // Nobody sleeps: pushes make no system call.
        let mut other_rx = rx;
        for i in 0..100 {
            assert_eq!(tx.push_batch(&[cell(i)]), 1);
            let mut c = [[0u8; 53]; 1];
            assert_eq!(other_rx.pop_batch(&mut c), 1);
        }
        assert_eq!(tx.waker().kicks(), 0, "{name}: fast path is syscall-free");
        let (out, took, tx) = wake_once(other_rx, tx, move || waiter, true, Duration::ZERO);
        assert_eq!(out, WaitOutcome::Ready, "{name}");
        assert!(took < LONG);
        assert_eq!(
            tx.waker().kicks(),
            1,
            "{name}: exactly one write for one sleep"
        );
        assert_eq!(tx.waker().kick_failures(), 0);
    }
}

#[test]
fn eventfd_in_the_applications_epoll() {
    use rustix::event::epoll;
    let (mut tx, mut rx) = link(BACKENDS[1].1);
    let (waiter, waker) = Waiter::eventfd().unwrap();
    tx.set_waker(waker);
    let ep = epoll::create(epoll::CreateFlags::CLOEXEC).unwrap();
    epoll::add(
        &ep,
        waiter.as_fd().unwrap(),
        epoll::EventData::new_u64(7),
        epoll::EventFlags::IN,
    )
    .unwrap();
    let producer = std::thread::spawn(move || {
        until("the consumer to announce its sleep", || {
            tx.waiting_flag_for_tests().load(Ordering::SeqCst) != 0
        });
        assert_eq!(tx.push_batch(&[cell(5)]), 1);
        tx
    });
    assert!(
        waiter.prepare_to_sleep(&mut rx),
        "nothing there yet: may sleep"
    );
    let mut events: Vec<epoll::Event> = Vec::with_capacity(4);
    let ts = rustix::event::Timespec {
        tv_sec: 10,
        tv_nsec: 0,
    };
    epoll::wait(&ep, rustix::buffer::spare_capacity(&mut events), Some(&ts)).unwrap();
    waiter.finish_sleep(&mut rx);
    assert_eq!(events.len(), 1, "epoll woke for the eventfd");
    assert_eq!(events[0].data.u64(), 7);
    let tx = producer.join().unwrap();
    assert_eq!(tx.waker().kicks(), 1);
    let mut c = [[0u8; 53]; 1];
    assert_eq!(rx.pop_batch(&mut c), 1);
    assert_eq!(check_cell(&c[0]), Some(5));
}

#[test]
fn signal_wakes_a_blocked_consumer_with_its_channel() {
    let signo = signal::rt_signal(2).unwrap();
    for (i, (name, mk)) in BACKENDS.into_iter().enumerate() {
        let (delivered0, _) = signal::delivered();
        let (tx, rx) = link(mk);
        let channel = 700 + i as u32;
        let (out, took, tx) = wake_once(
            rx,
            tx,
            move || Waiter::signal(signo, channel).unwrap(),
            true,
            Duration::ZERO,
        );
        assert_eq!(out, WaitOutcome::Ready, "{name}");
        assert!(took < LONG);
        assert_eq!(tx.waker().kicks(), 1, "{name}");
        assert_eq!(tx.waker().kick_failures(), 0, "{name}");
        assert!(
            signal::delivered().0 > delivered0,
            "{name}: the handler ran"
        );
    }
}

#[test]
fn signal_interrupts_a_running_thread_and_records_the_channel() {
    let signo = signal::rt_signal(3).unwrap();
    signal::install(signo).unwrap();
    let (tid_tx, tid_rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        signal::set_blocked(signo, false).unwrap();
        tid_tx
            .send(rustix::thread::gettid().as_raw_nonzero().get())
            .unwrap();
        // Busy with other work; the handler interrupts it and marks channel 9.
        let deadline = Instant::now() + LONG;
        while !signal::take_pending(9) {
            assert!(Instant::now() < deadline, "no signal");
            std::hint::spin_loop();
        }
    });
    let tid = tid_rx.recv().unwrap();
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    signal::send(signal::Target {
        pid,
        tid,
        signo,
        channel: 9,
    })
    .unwrap();
    worker.join().unwrap();
    assert!(!signal::take_pending(9), "taken once");
    assert!(
        signal::send(signal::Target {
            pid,
            tid: 0x7fff_fff0,
            signo,
            channel: 9
        })
        .is_err(),
        "no such thread"
    );
}

#[test]
fn adapter_sleeps_on_the_transmit_ring_until_the_app_posts() {
    let cfg = ChannelConfig {
        tx_entries: 4,
        rx_entries: 4,
        completion_entries: 8,
        buffer_size: 64,
        buffer_count: 4,
    };
    let ch = Channel::create(BACKENDS[1].1(cfg.layout().unwrap().region_size), &cfg).unwrap();
    let mut app = ch.app().unwrap();
    let mut adapter = ch.adapter().unwrap();
    let (mut waiter, waker) = Waiter::eventfd().unwrap();
    app.set_waker(waker);
    let flag = ch.clone();
    let poster = std::thread::spawn(move || {
        let ring0 = flag.layout().rings[0].unwrap().offset / 8 + 16;
        until("the adapter to sleep", || {
            flag.region().words()[ring0].load(Ordering::SeqCst) != 0
        });
        app.write_buffer(BufferId(3), b"tx").unwrap();
        app.post_tx(BufferId(3), 2, 1, 0).unwrap();
    });
    assert_eq!(waiter.wait(&mut adapter, LONG).unwrap(), WaitOutcome::Ready);
    poster.join().unwrap();
    assert_eq!(adapter.poll_tx().unwrap().unwrap().buffer, BufferId(3));
}

#[test]
fn eventfd_wakes_a_consumer_in_another_process() {
    use crate::memfd::MemfdMem;
    use crate::tests::dying_peer::{fork_child, reap};
    let mem =
        Arc::new(MemfdMem::create("natm-notify", CellLink::region_bytes(16).unwrap()).unwrap());
    let link = CellLink::create(mem.clone(), 16).unwrap();
    let (mut tx, _) = link.endpoint(Side::A).unwrap();
    let (_, mut rx) = link.endpoint(Side::B).unwrap();
    let (mut waiter, waker) = Waiter::eventfd().unwrap();
    tx.set_waker(waker);
    // The child inherits the mapping and the eventfd (fork keeps CLOEXEC fds); it waits
    // for the parent to announce its sleep in shared memory, then pushes and kicks.
    let pid = fork_child(move || {
        let deadline = Instant::now() + LONG;
        while tx.waiting_flag_for_tests().load(Ordering::SeqCst) == 0 {
            if Instant::now() > deadline {
                // SAFETY: _exit is async-signal-safe; status 4 makes the parent's check fail.
                unsafe { libc::_exit(4) };
            }
            std::hint::spin_loop();
        }
        let code = if tx.push_batch(&[cell(11)]) == 1 && tx.waker().kicks() == 1 {
            0
        } else {
            5
        };
        // SAFETY: as above.
        unsafe { libc::_exit(code) };
    });
    assert_eq!(waiter.wait(&mut rx, LONG).unwrap(), WaitOutcome::Ready);
    reap(pid, |status| {
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
    });
    let mut c = [[0u8; 53]; 1];
    assert_eq!(rx.pop_batch(&mut c), 1);
    assert_eq!(check_cell(&c[0]), Some(11));
}

#[test]
fn install_takes_every_real_time_signal() {
    // SIGRTMAX is 64: its bit must not overflow the installed set.
    signal::install(libc::SIGRTMAX()).unwrap();
    signal::install(libc::SIGRTMAX()).unwrap();
}

#[test]
fn real_time_signals_are_the_c_librarys_range() {
    let first = signal::rt_signal(0).unwrap();
    assert!(signal::is_rt_signal(first));
    assert!(signal::is_rt_signal(libc::SIGRTMAX()));
    assert!(!signal::is_rt_signal(first - 1));
    assert!(!signal::is_rt_signal(libc::SIGRTMAX() + 1));
    assert!(!signal::is_rt_signal(libc::SIGKILL));
    assert!(signal::install(first - 1).is_err());
}

#[test]
fn signal_receiver_refuses_another_thread() {
    let signo = signal::rt_signal(4).unwrap();
    let r = signal::Receiver::new(signo, 3).unwrap();
    let err = std::thread::scope(|s| {
        s.spawn(|| r.sleep(Duration::from_millis(1)))
            .join()
            .unwrap()
    });
    assert!(err.is_err());
    assert!(
        r.sleep(Duration::from_millis(1)).is_ok(),
        "its own thread may sleep"
    );
}

mod peer_eventfds {
    //! Eventfds handed over by another process are checked and made non-blocking.

    use std::os::fd::OwnedFd;

    use rustix::event::{EventfdFlags, eventfd};
    use rustix::fs::{OFlags, fcntl_getfl};

    use super::*;
    use crate::notify::{EventFdError, check_eventfd};

    #[test]
    fn a_pipe_or_a_file_is_refused() {
        let (r, w) = std::io::pipe().unwrap();
        for fd in [OwnedFd::from(r), OwnedFd::from(w)] {
            match Waiter::eventfd_from(fd) {
                Err(EventFdError::NotEventFd { found }) => assert!(found.starts_with("pipe:")),
                other => panic!("a pipe was taken: {:?}", other.map(|w| w.mode())),
            }
        }
        let file: OwnedFd = std::fs::File::open("/proc/self/status").unwrap().into();
        assert!(matches!(
            Waiter::eventfd_waker(file),
            Err(EventFdError::NotEventFd { .. })
        ));
        // Another anonymous inode (an epoll fd) is not an eventfd either.
        let ep = rustix::event::epoll::create(rustix::event::epoll::CreateFlags::CLOEXEC).unwrap();
        match check_eventfd(&ep) {
            Err(EventFdError::NotEventFd { found }) => assert_eq!(found, "anon_inode:[eventpoll]"),
            other => panic!("an epoll fd was taken: {other:?}"),
        }
    }

    #[test]
    fn a_semaphore_eventfd_is_refused() {
        let fd = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::SEMAPHORE).unwrap();
        let kernel_says = std::fs::read_to_string(format!(
            "/proc/self/fdinfo/{}",
            std::os::fd::AsRawFd::as_raw_fd(&fd)
        ))
        .unwrap()
        .contains("eventfd-semaphore");
        let r = check_eventfd(&fd);
        if kernel_says {
            assert!(matches!(r, Err(EventFdError::Semaphore)), "{r:?}");
        } else {
            assert!(r.is_ok(), "kernels without the fdinfo line cannot tell");
        }
    }

    #[test]
    fn a_blocking_eventfd_is_made_non_blocking() {
        let fd = eventfd(0, EventfdFlags::CLOEXEC).unwrap();
        assert!(!fcntl_getfl(&fd).unwrap().contains(OFlags::NONBLOCK));
        let dup = fd.try_clone().unwrap();
        let waiter = Waiter::eventfd_from(fd).unwrap();
        // The flag is on the shared open file description: the duplicate sees it too.
        assert!(fcntl_getfl(&dup).unwrap().contains(OFlags::NONBLOCK));
        // A drain of an empty counter returns at once instead of blocking.
        let mut buf = [0u8; 8];
        assert_eq!(
            rustix::io::read(waiter.as_fd().unwrap(), &mut buf),
            Err(rustix::io::Errno::AGAIN)
        );
        // And a consumer waiting on it times out rather than hanging in the drain.
        let (_tx, mut rx) = link(BACKENDS[0].1);
        let mut waiter = waiter;
        let t0 = Instant::now();
        assert_eq!(
            waiter.wait(&mut rx, Duration::from_millis(20)).unwrap(),
            WaitOutcome::TimedOut
        );
        assert!(t0.elapsed() < LONG);
    }

    #[test]
    fn a_full_counter_does_not_block_a_kick() {
        let fd = eventfd(0, EventfdFlags::CLOEXEC).unwrap();
        // The peer fills the counter to its maximum, 2^64 - 2: one more write would block.
        rustix::io::write(&fd, &(u64::MAX - 1).to_ne_bytes()).unwrap();
        let waker = Waiter::eventfd_waker(fd).unwrap();
        let (mut tx, rx) = link(BACKENDS[0].1);
        tx.set_waker(waker);
        // The consumer announces its sleep, so the next push kicks.
        rx.waiting_flag().store(1, Ordering::SeqCst);
        let (done_tx, done_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let pushed = tx.push_batch(&[cell(1)]);
            done_tx
                .send((pushed, tx.waker().kicks(), tx.waker().kick_failures()))
                .unwrap();
        });
        let (pushed, kicks, failures) = done_rx
            .recv_timeout(LONG)
            .expect("the kick blocked on a full counter");
        assert_eq!((pushed, kicks, failures), (1, 1, 1));
    }
}

#[test]
fn eventfd_wakes_a_producer_waiting_for_space() {
    for (name, mk) in BACKENDS {
        let (mut tx, mut rx) = link(mk);
        let (mut waiter, waker) = Waiter::eventfd().unwrap();
        rx.set_space_waker(waker);
        let full: Vec<_> = (0..16).map(cell).collect();
        assert_eq!(tx.push_batch(&full), 16, "{name}");
        // Full: the producer times out, and no pop has kicked yet.
        assert_eq!(
            waiter
                .wait(&mut tx.space(), Duration::from_millis(10))
                .unwrap(),
            WaitOutcome::TimedOut,
            "{name}"
        );
        let waiting = Arc::new(AtomicBool::new(false));
        let w2 = waiting.clone();
        let producer = std::thread::spawn(move || {
            w2.store(true, Ordering::Release);
            let t0 = Instant::now();
            let out = waiter.wait(&mut tx.space(), LONG).unwrap();
            (out, t0.elapsed(), tx.push_batch(&[cell(16)]))
        });
        until("the producer to wait", || waiting.load(Ordering::Acquire));
        std::thread::sleep(Duration::from_millis(20));
        let mut out = [[0u8; 53]; 4];
        assert_eq!(rx.pop_batch(&mut out), 4, "{name}");
        let (outcome, took, pushed) = producer.join().unwrap();
        assert_eq!((outcome, pushed), (WaitOutcome::Ready, 1), "{name}");
        assert!(took < LONG, "{name}");
        assert!(rx.space_waker().kicks() <= 1, "{name}");
        // While nobody waits for space, pops make no system call.
        let before = rx.space_waker().kicks();
        let mut rest = [[0u8; 53]; 16];
        assert_eq!(rx.pop_batch(&mut rest), 13, "{name}");
        assert_eq!(rx.space_waker().kicks(), before, "{name}");
    }
}

#[test]
fn a_spinner_whose_full_spins_find_nothing_spins_short_and_probes() {
    use crate::notify::{PROBE_EVERY, SHORT_SPIN, Spinner};
    let policy = AdaptivePolicy::default();
    let mut s = Spinner::new(policy);
    assert_eq!(
        s.plan(),
        (policy.spin, true),
        "it starts out spinning in full"
    );
    let mut misses = 0;
    while s.spins_in_full() {
        assert_eq!(s.plan(), (policy.spin, true));
        s.learn(false);
        misses += 1;
        assert!(misses < 20, "empty spins never made it stop");
    }
    // From a hit rate of one, a half is crossed after a few empty spins, not one.
    assert!((4..=8).contains(&misses), "{misses} empty spins");
    for i in 1..PROBE_EVERY {
        assert_eq!(s.plan(), (SHORT_SPIN, false), "wait {i} after the switch");
    }
    assert_eq!(s.plan(), (policy.spin, true), "the probe");
    // Probes that find work bring the full spin back.
    let mut probes = 1;
    s.learn(true);
    while !s.spins_in_full() {
        for _ in 1..PROBE_EVERY {
            assert!(!s.plan().1);
        }
        assert!(s.plan().1);
        s.learn(true);
        probes += 1;
        assert!(probes < 20, "hits never brought the full spin back");
    }
    assert!(probes <= 8, "{probes} probes");
    // A spin shorter than the short one is kept.
    let tiny = AdaptivePolicy {
        spin: Duration::from_nanos(100),
        yields: 0,
    };
    let mut s = Spinner::new(tiny);
    for _ in 0..20 {
        s.learn(false);
    }
    assert_eq!(s.plan(), (tiny.spin, false));
}

#[test]
fn an_adaptive_waiter_learns_only_from_spins_it_finished() {
    for (name, mk) in BACKENDS {
        let (mut tx, mut rx) = link(mk);
        let policy = AdaptivePolicy {
            spin: Duration::from_micros(200),
            yields: 0,
        };
        let (mut waiter, waker) = Waiter::adaptive(policy).unwrap();
        tx.set_waker(waker);
        let full = |w: &Waiter| match w {
            Waiter::Adaptive(s, _) => s.spins_in_full(),
            _ => unreachable!(),
        };
        // Timeouts inside the spin say nothing about it.
        for _ in 0..20 {
            let out = waiter.wait(&mut rx, Duration::from_micros(20)).unwrap();
            assert_eq!(out, WaitOutcome::TimedOut, "{name}");
        }
        assert!(
            full(&waiter),
            "{name}: cut-short spins were taken for empty ones"
        );
        // Whole spins that find nothing (then a short sleep) are.
        for _ in 0..20 {
            let out = waiter.wait(&mut rx, Duration::from_micros(400)).unwrap();
            assert_eq!(out, WaitOutcome::TimedOut, "{name}");
        }
        assert!(!full(&waiter), "{name}: empty spins went on in full");
        // A cell that is there at once is still seen without a sleep.
        assert_eq!(tx.push_batch(&[cell(1)]), 1);
        assert_eq!(waiter.wait(&mut rx, LONG).unwrap(), WaitOutcome::Ready);
        let mut c = [[0u8; 53]; 1];
        assert_eq!(rx.pop_batch(&mut c), 1);
        assert_eq!(check_cell(&c[0]), Some(1));
        assert_eq!(tx.waker().kicks(), 0, "{name}");
    }
}

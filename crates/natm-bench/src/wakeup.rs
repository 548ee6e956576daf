//! The engine of `natm perf wakeup`: how long from a cell's arrival until the application runs, in each
//! of natm-nic's notification modes, beside the raw kernel wake-ups they are built on,
//! measured in the same run by the same threads with the same gaps (issue 4; experiments
//! 1-a and 2-a of the user-level driver paper).
//!
//! # What is measured
//!
//! A producer thread and a consumer thread share one of natm-nic's cell rings in a memfd
//! region; the consumer is pinned to the first CPU this process may use and the producer
//! to the second (when there are two). For each sample the producer
//!
//! 1. waits until the consumer has finished the previous sample,
//! 2. sleeps a gap of 100–500 µs drawn from `--seed` (the same gaps for every mode), so that
//!    the consumer of a blocking mode is really asleep,
//! 3. reads `CLOCK_MONOTONIC` and writes that time into a cell, which it publishes with
//!    `push_batch` (whose waker kicks the consumer as the mode says).
//!
//! The consumer waits in the mode's [`Waiter`], pops the cell, reads `CLOCK_MONOTONIC` and
//! records the difference: **from just before the publish to the application holding the
//! cell**. The modes:
//!
//! * `poll`: [`Waiter::BusyPoll`], no waker;
//! * `adaptive`: [`Waiter::adaptive`] with the default policy (spin 30 µs, then the
//!   eventfd mode's sleep; the gaps are longer than the spin, so every sample measures the
//!   wake-up from the sleep, and after the first few empty spins the waiter spins 1 µs
//!   but every 64th wait, natm-nic's `Spinner`);
//! * `eventfd`: [`Waiter::eventfd`] (`poll(2)` on an eventfd, written by the producer only
//!   when the consumer announced it sleeps);
//! * `signal`: [`Waiter::signal`] (`ppoll(2)` with a real-time signal unblocked, sent with
//!   `rt_tgsigqueueinfo` only when the consumer announced it sleeps).
//!
//! and the raw mechanisms, with the same clock readings but no ring:
//!
//! * `raw-eventfd`: the producer stores the time in an atomic and writes an eventfd; the
//!   consumer is blocked in `read(2)` on it;
//! * `raw-signal`: the producer stores the time and sends the real-time signal to the
//!   consumer thread with `rt_tgsigqueueinfo` ([`signal::send`]); the consumer sleeps in
//!   `ppoll(2)` with the signal unblocked and its handler installed ([`signal::Receiver`]):
//!   the kernel mechanism natm's signal mode is built on.
//!
//! The ratio column divides a mode's median by its raw mechanism's median in the same
//! condition: `eventfd`, `poll` and `adaptive` by `raw-eventfd`, `signal` by `raw-signal`.
//!
//! # Conditions
//!
//! Every combination of `--disturbers` (CPU-bound child processes: this binary re-run as
//! the hidden `natm perf spin`, `SCHED_OTHER`, unpinned, each ending by itself after the
//! condition's time bound and killed when the condition ends) and `--sched` (`other`, or
//! `fifo`: producer and consumer at `SCHED_FIFO` priority [`FIFO_PRIORITY`]). Modes run
//! interleaved in rounds of [`ROUND`] samples, in an order that rotates every round, so a
//! change of load during a condition touches every mode alike and no mode always follows
//! the same one.
//!
//! Under `SCHED_FIFO` a busy-polling consumer owns its CPU: the disturbers sharing it do
//! not run while a `poll` round lasts (about 40 ms), and the kernel's real-time throttling
//! (95% of each second) is never reached because every other round blocks. The producer
//! is on the other CPU, so polling still works. With a single CPU, `poll` is skipped under
//! `SCHED_FIFO` (the spinning consumer would shut out the producer).
//!
//! Every wait is bounded (1 s per wake-up, 2 s for the producer's wait on the consumer),
//! and every condition by a deadline: a sample not delivered in time is counted as
//! missing, a wake-up that came only by the timeout as missed.

mod render;

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use natm_nic::cells::{CELL_BYTES, CellBytes, CellConsumer, CellLink, CellProducer, Side};
use natm_nic::memfd::MemfdMem;
use natm_nic::notify::{AdaptivePolicy, SignalWaker, WaitOutcome, Waiter, Waker};
use natm_nic::sched::{self, FifoPriority, Policy};
use natm_nic::signal;
use serde::Serialize;

use crate::Error;
use crate::stats::quantile;

/// Shortest gap between a sample's acknowledgement and the next publish.
pub const GAP_MIN_US: u64 = 100;
/// Longest gap.
pub const GAP_MAX_US: u64 = 500;
/// Samples of one mode before the next mode takes a turn.
pub const ROUND: u64 = 100;
/// The producer's and consumer's priority under `--sched fifo`.
pub const FIFO_PRIORITY: u8 = 10;
/// Longest single wait of the consumer for a wake-up.
const WAIT_TIMEOUT: Duration = Duration::from_secs(1);
/// Longest wait of the producer for the consumer to finish a sample.
const ACK_TIMEOUT: Duration = Duration::from_secs(2);
/// Ring entries (one cell is in flight at a time).
const RING_ENTRIES: u32 = 64;

/// What wakes the consumer.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Mech {
    /// A raw eventfd: `write` wakes a `read`.
    RawEventFd,
    /// A raw real-time signal: `rt_tgsigqueueinfo` wakes a `ppoll`.
    RawSignal,
    /// natm-nic's busy polling.
    Poll,
    /// natm-nic's adaptive wait: spin, then sleep on an eventfd.
    Adaptive,
    /// natm-nic's eventfd waiter.
    EventFd,
    /// natm-nic's signal waiter.
    Signal,
}

impl Mech {
    /// The notification modes (each measured beside its raw baseline).
    pub const MODES: [Mech; 4] = [Mech::Poll, Mech::Adaptive, Mech::EventFd, Mech::Signal];

    /// Its name in options and reports.
    pub fn name(self) -> &'static str {
        match self {
            Mech::RawEventFd => "raw-eventfd",
            Mech::RawSignal => "raw-signal",
            Mech::Poll => "poll",
            Mech::Adaptive => "adaptive",
            Mech::EventFd => "eventfd",
            Mech::Signal => "signal",
        }
    }

    /// The raw mechanism a mode is compared with.
    fn baseline(self) -> Option<Mech> {
        match self {
            Mech::RawEventFd | Mech::RawSignal => None,
            Mech::Poll | Mech::Adaptive | Mech::EventFd => Some(Mech::RawEventFd),
            Mech::Signal => Some(Mech::RawSignal),
        }
    }
}

/// The scheduling policy of the producer and consumer threads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SchedChoice {
    /// `SCHED_OTHER`.
    Other,
    /// `SCHED_FIFO` at [`FIFO_PRIORITY`].
    Fifo,
}

impl SchedChoice {
    /// Its name in options and reports.
    pub fn name(self) -> &'static str {
        match self {
            SchedChoice::Other => "other",
            SchedChoice::Fifo => "fifo",
        }
    }

    fn policy(self) -> Policy {
        match self {
            SchedChoice::Other => Policy::Other,
            SchedChoice::Fifo => Policy::Fifo(
                FifoPriority::new(i64::from(FIFO_PRIORITY)).expect("FIFO_PRIORITY is in 1..=99"),
            ),
        }
    }
}

/// A wake-up run: what [`run`] does.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Samples per mode in each condition, at least 1.
    pub samples: u64,
    /// The modes, each measured beside its raw baseline (no repeats).
    pub modes: Vec<Mech>,
    /// Numbers of disturbing processes, one condition each.
    pub disturbers: Vec<u32>,
    /// Scheduling policies, one condition each (times each number of disturbers).
    pub scheds: Vec<SchedChoice>,
    /// Seed of the gaps between samples.
    pub seed: u64,
    /// The `natm` executable whose hidden `perf spin` is a disturber.
    pub natm: PathBuf,
}

/// `CLOCK_MONOTONIC` in nanoseconds.
fn mono_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(t.tv_nsec as u64)
}

/// SplitMix64: the gap of sample `i` of round `round`, the same for every mode.
fn gap(seed: u64, round: u64, i: u64) -> Duration {
    let mut z = seed ^ round.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i.rotate_left(32);
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    Duration::from_micros(GAP_MIN_US + z % (GAP_MAX_US - GAP_MIN_US + 1))
}

/// Payload layout of a sample cell (after the 5-byte header): time, round, sequence.
fn sample_cell(stamp: u64, round: u64, seq: u64) -> CellBytes {
    let mut c = [0u8; CELL_BYTES];
    c[5..13].copy_from_slice(&stamp.to_le_bytes());
    c[13..21].copy_from_slice(&round.to_le_bytes());
    c[21..29].copy_from_slice(&seq.to_le_bytes());
    c
}

fn read_u64(c: &CellBytes, at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&c[at..at + 8]);
    u64::from_le_bytes(b)
}

/// State the two threads share in one condition.
struct Shared {
    /// Samples the consumer has finished (all rounds).
    consumed: AtomicU64,
    /// Raw modes: the producer's time of the sample in flight.
    stamp: AtomicU64,
    /// Raw modes: samples published (all rounds).
    published: AtomicU64,
    /// Set by either side to end the condition early.
    abort: AtomicBool,
    deadline: Instant,
    seed: u64,
}

impl Shared {
    fn stop(&self) -> bool {
        self.abort.load(Ordering::Relaxed) || Instant::now() >= self.deadline
    }
}

/// How the producer wakes the consumer in one round.
enum Kick {
    /// Through the ring's waker (nothing for the polling modes).
    Ring(Waker),
    /// By hand, no ring.
    Raw(Raw),
}

/// The raw mechanisms: an eventfd write, or a signal to the consumer thread.
enum Raw {
    EventFd(Arc<OwnedFd>),
    Signal(signal::Target),
}

/// One round, from the consumer (which made the waiting side) to the producer.
struct Round {
    mech: Mech,
    index: u64,
    n: u64,
    kick: Kick,
}

#[derive(Default)]
struct Tally {
    latencies_ns: Vec<u64>,
    missed: u64,
    stray: u64,
}

/// The consumer's half of the schedule: per mechanism, latencies and missed wake-ups.
fn consumer(
    mut rx: CellConsumer,
    schedule: Vec<(Mech, u64, u64)>,
    to_producer: mpsc::Sender<Round>,
    shared: Arc<Shared>,
) -> Result<BTreeMap<Mech, Tally>, String> {
    let signo = signal::rt_signal(0).ok_or("no real-time signal free")?;
    let raw_signo = signal::rt_signal(1).ok_or("no second real-time signal free")?;
    let mut tally: BTreeMap<Mech, Tally> = BTreeMap::new();
    let mut out = [[0u8; CELL_BYTES]; 4];
    for (mech, index, n) in schedule {
        if shared.stop() {
            break;
        }
        let t = tally.entry(mech).or_default();
        match mech {
            Mech::Poll | Mech::Adaptive | Mech::EventFd | Mech::Signal => {
                let (mut waiter, waker) = match mech {
                    Mech::Poll => (Waiter::BusyPoll, Waker::None),
                    Mech::Adaptive => Waiter::adaptive(AdaptivePolicy::default())
                        .map_err(|e| format!("eventfd: {e}"))?,
                    Mech::EventFd => Waiter::eventfd().map_err(|e| format!("eventfd: {e}"))?,
                    _ => {
                        let w =
                            Waiter::signal(signo, 1).map_err(|e| format!("signal waiter: {e}"))?;
                        let target = w.signal_target().ok_or("signal waiter has no target")?;
                        (w, Waker::Signal(SignalWaker::new(target)))
                    }
                };
                let kick = Kick::Ring(waker);
                if to_producer
                    .send(Round {
                        mech,
                        index,
                        n,
                        kick,
                    })
                    .is_err()
                {
                    break;
                }
                let mut got = 0;
                while got < n && !shared.stop() {
                    let outcome = waiter
                        .wait(&mut rx, WAIT_TIMEOUT)
                        .map_err(|e| format!("{} wait: {e}", mech.name()))?;
                    let k = rx.pop_batch(&mut out);
                    let now = mono_ns();
                    if let Some(f) = rx.fault() {
                        return Err(format!("ring fault: {f}"));
                    }
                    if k > 0 && outcome == WaitOutcome::TimedOut {
                        t.missed += k as u64;
                    }
                    for c in &out[..k] {
                        if read_u64(c, 13) != index {
                            t.stray += 1;
                            continue;
                        }
                        t.latencies_ns.push(now.saturating_sub(read_u64(c, 5)));
                        got += 1;
                    }
                    shared.consumed.fetch_add(k as u64, Ordering::Release);
                }
            }
            Mech::RawEventFd => {
                let fd = Arc::new(
                    rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC)
                        .map_err(|e| format!("eventfd: {e}"))?,
                );
                let kick = Kick::Raw(Raw::EventFd(fd.clone()));
                if to_producer
                    .send(Round {
                        mech,
                        index,
                        n,
                        kick,
                    })
                    .is_err()
                {
                    break;
                }
                let mut buf = [0u8; 8];
                let mut got = 0;
                while got < n {
                    match rustix::io::read(&*fd, &mut buf) {
                        Ok(_) => {}
                        Err(rustix::io::Errno::INTR) => continue,
                        Err(e) => return Err(format!("raw eventfd read: {e}")),
                    }
                    let now = mono_ns();
                    // The producer writes the eventfd once more when it gives up.
                    if shared.abort.load(Ordering::Acquire) {
                        break;
                    }
                    let stamp = shared.stamp.load(Ordering::Acquire);
                    t.latencies_ns.push(now.saturating_sub(stamp));
                    got += 1;
                    shared.consumed.fetch_add(1, Ordering::Release);
                }
            }
            Mech::RawSignal => {
                let receiver = signal::Receiver::new(raw_signo, 2)
                    .map_err(|e| format!("signal receiver: {e}"))?;
                let kick = Kick::Raw(Raw::Signal(receiver.target()));
                let mut seen = shared.published.load(Ordering::Acquire);
                if to_producer
                    .send(Round {
                        mech,
                        index,
                        n,
                        kick,
                    })
                    .is_err()
                {
                    break;
                }
                let mut got = 0;
                'samples: while got < n {
                    let mut woken = true;
                    loop {
                        if shared.published.load(Ordering::Acquire) > seen {
                            break;
                        }
                        if shared.stop() {
                            break 'samples;
                        }
                        let before = signal::delivered().0;
                        receiver
                            .sleep(WAIT_TIMEOUT)
                            .map_err(|e| format!("raw signal sleep: {e}"))?;
                        woken = signal::delivered().0 != before;
                    }
                    let now = mono_ns();
                    let stamp = shared.stamp.load(Ordering::Acquire);
                    if !woken {
                        t.missed += 1;
                    }
                    t.latencies_ns.push(now.saturating_sub(stamp));
                    seen += 1;
                    got += 1;
                    shared.consumed.fetch_add(1, Ordering::Release);
                }
            }
        }
    }
    Ok(tally)
}

/// Waits until the consumer has finished `sent` samples: spins for 50 µs (it usually has
/// by then in the polling modes), then sleeps in 20 µs steps. False on timeout or abort.
fn wait_consumed(shared: &Shared, sent: u64) -> bool {
    let start = Instant::now();
    while shared.consumed.load(Ordering::Acquire) < sent {
        let waited = start.elapsed();
        if waited >= ACK_TIMEOUT || shared.stop() {
            return false;
        }
        if waited < Duration::from_micros(50) {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(Duration::from_micros(20));
        }
    }
    true
}

/// The producer's half: runs each round the consumer sets up; returns the kick counts.
fn producer(
    mut tx: CellProducer,
    rounds: mpsc::Receiver<Round>,
    shared: Arc<Shared>,
) -> BTreeMap<Mech, (u64, u64)> {
    let mut kicks: BTreeMap<Mech, (u64, u64)> = BTreeMap::new();
    let mut sent = 0u64;
    'rounds: for round in rounds {
        let Round {
            mech,
            index,
            n,
            kick,
        } = round;
        let raw = match kick {
            Kick::Ring(w) => {
                tx.set_waker(w);
                None
            }
            Kick::Raw(raw) => {
                tx.set_waker(Waker::None);
                Some(raw)
            }
        };
        let count = kicks.entry(mech).or_default();
        for i in 0..n {
            if !wait_consumed(&shared, sent) {
                shared.abort.store(true, Ordering::Release);
                break;
            }
            std::thread::sleep(gap(shared.seed, index, i));
            if shared.stop() {
                shared.abort.store(true, Ordering::Release);
                break;
            }
            let stamp = mono_ns();
            let ok = match &raw {
                // One cell at a time, each consumed before the next: the ring is never full.
                None => tx.push_batch(&[sample_cell(stamp, index, i)]) == 1,
                Some(Raw::EventFd(fd)) => {
                    shared.stamp.store(stamp, Ordering::Release);
                    count.0 += 1;
                    rustix::io::write(&**fd, &1u64.to_ne_bytes()).is_ok()
                }
                Some(Raw::Signal(target)) => {
                    shared.stamp.store(stamp, Ordering::Release);
                    shared.published.fetch_add(1, Ordering::Release);
                    count.0 += 1;
                    signal::send(*target).is_ok()
                }
            };
            if !ok && raw.is_none() {
                shared.abort.store(true, Ordering::Release);
                break;
            }
            if !ok {
                count.1 += 1;
            }
            sent += 1;
        }
        let finished = !shared.abort.load(Ordering::Acquire) && wait_consumed(&shared, sent);
        match &raw {
            None => {
                count.0 += tx.waker().kicks();
                count.1 += tx.waker().kick_failures();
            }
            Some(Raw::EventFd(fd)) if !finished => {
                // Release a consumer blocked in read(2): it sees `abort` and stops.
                shared.abort.store(true, Ordering::Release);
                let _ = rustix::io::write(&**fd, &1u64.to_ne_bytes());
            }
            Some(_) => {}
        }
        if !finished {
            shared.abort.store(true, Ordering::Release);
            break 'rounds;
        }
    }
    tx.set_waker(Waker::None);
    kicks
}

/// CPU-bound child processes (`natm perf spin`), killed and reaped when dropped.
struct Disturbers(Vec<Child>);

impl Disturbers {
    fn spawn(exe: &Path, n: u32, seconds: u64) -> Result<Self, String> {
        let parent = std::process::id().to_string();
        let mut d = Disturbers(Vec::new());
        for _ in 0..n {
            let child = Command::new(exe)
                .args([
                    "perf",
                    "spin",
                    "--seconds",
                    &seconds.to_string(),
                    "--parent",
                    &parent,
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("starting a disturber ({}): {e}", exe.display()))?;
            d.0.push(child);
        }
        Ok(d)
    }

    fn pids(&self) -> Vec<u32> {
        self.0.iter().map(Child::id).collect()
    }

    /// True when every disturber still runs.
    fn all_running(&mut self) -> bool {
        self.0.iter_mut().all(|c| matches!(c.try_wait(), Ok(None)))
    }
}

impl Drop for Disturbers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
        }
        for c in &mut self.0 {
            let _ = c.wait();
        }
    }
}

/// Which CPUs the consumer and producer are pinned to (none with a single CPU).
#[derive(Clone, Copy, Serialize)]
pub struct Placement {
    /// The consumer's CPU.
    pub consumer_cpu: Option<usize>,
    /// The producer's CPU.
    pub producer_cpu: Option<usize>,
}

fn place(cpu: Option<usize>, sched: SchedChoice) -> Result<(), String> {
    if let Some(cpu) = cpu {
        sched::pin_current_thread(cpu).map_err(|e| e.to_string())?;
    }
    sched::set_current_thread_policy(sched.policy()).map_err(|e| e.to_string())
}

/// Whether a thread may take `SCHED_FIFO`: tried on a thread of its own.
fn fifo_allowed() -> Result<(), String> {
    std::thread::spawn(|| place(None, SchedChoice::Fifo))
        .join()
        .map_err(|_| "probe thread panicked".to_string())?
}

/// One mode's figures in one condition.
#[derive(Serialize)]
pub struct ModeReport {
    /// The mode (or raw baseline).
    pub mode: &'static str,
    /// Samples asked for.
    pub requested: u64,
    /// Samples delivered.
    pub samples: u64,
    /// Wake-ups that came only by the consumer's timeout.
    pub missed_wakeups: u64,
    /// Samples from another round (never expected).
    pub stray: u64,
    /// System calls the producer made to wake the consumer (none for `poll`; for
    /// `adaptive`, only the samples that found it asleep after its spin).
    pub kicks: Option<u64>,
    /// Of those, the ones that failed.
    pub kick_failures: Option<u64>,
    /// Median latency.
    pub median_us: Option<f64>,
    /// 90th percentile.
    pub p90_us: Option<f64>,
    /// 99th percentile.
    pub p99_us: Option<f64>,
    /// Greatest.
    pub max_us: Option<f64>,
    /// The raw mechanism it is compared with.
    pub baseline: Option<&'static str>,
    /// This mode's median over its baseline's median.
    pub ratio: Option<f64>,
}

/// One condition (disturbers × policy).
#[derive(Serialize)]
pub struct ConditionReport {
    /// Disturbing processes.
    pub disturbers: u32,
    /// The policy.
    pub sched: &'static str,
    /// Why the condition was skipped or cut short.
    pub error: Option<String>,
    /// Every mode delivered every sample.
    pub complete: bool,
    /// Seconds the condition lasted.
    pub seconds: f64,
    /// The disturbers' process ids.
    pub disturber_pids: Vec<u32>,
    /// What was adjusted, and why.
    pub notes: Vec<String>,
    /// One per mode and baseline.
    pub modes: Vec<ModeReport>,
}

/// What a wake-up run reports (`natm perf wakeup --json`).
#[derive(Serialize)]
pub struct Report {
    /// Seed of the gaps.
    pub seed: u64,
    /// Samples per mode and condition.
    pub samples_per_mode: u64,
    /// Shortest and longest gap.
    pub gap_us: [u64; 2],
    /// Samples per round.
    pub round: u64,
    /// The `SCHED_FIFO` priority.
    pub fifo_priority: u8,
    /// Where the threads ran.
    pub placement: Placement,
    /// `/proc/loadavg`'s three figures before the run.
    pub load_before: String,
    /// One per condition.
    pub conditions: Vec<ConditionReport>,
}

/// Nearest-rank percentile of sorted values, in µs.
fn percentile_us(sorted: &[u64], q: f64) -> Option<f64> {
    (!sorted.is_empty()).then(|| quantile(sorted, q) as f64 / 1000.0)
}

fn mode_reports(
    mechs: &[Mech],
    requested: u64,
    mut tally: BTreeMap<Mech, Tally>,
    kicks: &BTreeMap<Mech, (u64, u64)>,
) -> Vec<ModeReport> {
    let mut reports: Vec<ModeReport> = mechs
        .iter()
        .map(|&m| {
            let mut t = tally.remove(&m).unwrap_or_default();
            t.latencies_ns.sort_unstable();
            let blocking = m != Mech::Poll;
            let (k, kf) = kicks.get(&m).copied().unwrap_or((0, 0));
            ModeReport {
                mode: m.name(),
                requested,
                samples: t.latencies_ns.len() as u64,
                missed_wakeups: t.missed,
                stray: t.stray,
                kicks: blocking.then_some(k),
                kick_failures: blocking.then_some(kf),
                median_us: percentile_us(&t.latencies_ns, 0.5),
                p90_us: percentile_us(&t.latencies_ns, 0.9),
                p99_us: percentile_us(&t.latencies_ns, 0.99),
                max_us: t.latencies_ns.last().map(|&v| v as f64 / 1000.0),
                baseline: m.baseline().map(Mech::name),
                ratio: None,
            }
        })
        .collect();
    let medians: BTreeMap<&str, f64> = reports
        .iter()
        .filter_map(|r| Some((r.mode, r.median_us?)))
        .collect();
    for r in &mut reports {
        if let (Some(b), Some(m)) = (r.baseline, r.median_us) {
            r.ratio = medians.get(b).filter(|&&b| b > 0.0).map(|b| m / b);
        }
    }
    reports
}

fn run_condition(
    plan: &Plan,
    disturbers: u32,
    sched: SchedChoice,
    placement: Placement,
) -> ConditionReport {
    let mut report = ConditionReport {
        disturbers,
        sched: sched.name(),
        error: None,
        complete: false,
        seconds: 0.0,
        disturber_pids: Vec::new(),
        notes: Vec::new(),
        modes: Vec::new(),
    };
    if sched == SchedChoice::Fifo
        && let Err(e) = fifo_allowed()
    {
        report.error = Some(format!("{e}; condition skipped"));
        return report;
    }
    let mut modes = plan.modes.clone();
    if sched == SchedChoice::Fifo && placement.producer_cpu.is_none() && modes.contains(&Mech::Poll)
    {
        modes.retain(|&m| m != Mech::Poll);
        report
            .notes
            .push("poll skipped: one CPU, a SCHED_FIFO spinner would shut out the producer".into());
    }
    let mut mechs: Vec<Mech> = modes.iter().filter_map(|m| m.baseline()).collect();
    mechs.extend(&modes);
    mechs.sort();
    mechs.dedup();
    let rounds = plan.samples.div_ceil(ROUND);
    // The order rotates every round: a mode that always ran right after a busy-polling
    // round (CPUs awake and warm) or after a sleeping one would carry that into its figures.
    let schedule: Vec<(Mech, u64, u64)> = (0..rounds)
        .flat_map(|r| {
            let n = ROUND.min(plan.samples - r * ROUND);
            let k = mechs.len();
            let mechs = &mechs;
            (0..k).map(move |i| (mechs[(i + r as usize) % k], r, n))
        })
        .collect();
    // A generous bound: 5 ms per sample (gaps average 0.3 ms) plus 10 s.
    let total = plan.samples * mechs.len() as u64;
    let bound =
        Duration::from_secs(10) + Duration::from_millis(5) * total.min(u32::MAX as u64) as u32;
    let start = Instant::now();
    let result = measure(
        plan,
        disturbers,
        sched,
        placement,
        schedule,
        bound,
        &mut report,
    );
    report.seconds = start.elapsed().as_secs_f64();
    match result {
        Ok((tally, kicks)) => {
            report.modes = mode_reports(&mechs, plan.samples, tally, &kicks);
            report.complete = report
                .modes
                .iter()
                .all(|m| m.samples == m.requested && m.missed_wakeups == 0 && m.stray == 0);
            if !report.complete && report.error.is_none() {
                report.error = Some("some samples were not delivered in time (see counts)".into());
            }
        }
        Err(e) => report.error = Some(e),
    }
    report
}

type Measured = (BTreeMap<Mech, Tally>, BTreeMap<Mech, (u64, u64)>);

fn measure(
    plan: &Plan,
    disturbers: u32,
    sched: SchedChoice,
    placement: Placement,
    schedule: Vec<(Mech, u64, u64)>,
    bound: Duration,
    report: &mut ConditionReport,
) -> Result<Measured, String> {
    let bytes = CellLink::region_bytes(RING_ENTRIES).map_err(|e| e.to_string())?;
    let mem = Arc::new(MemfdMem::create("natm-perf-wakeup", bytes).map_err(|e| e.to_string())?);
    let link = CellLink::create(mem, RING_ENTRIES).map_err(|e| e.to_string())?;
    let (tx, _) = link.endpoint(Side::A).map_err(|e| e.to_string())?;
    let (_, rx) = link.endpoint(Side::B).map_err(|e| e.to_string())?;
    // Disturbers end by themselves a little after the condition's bound.
    let mut spinners = Disturbers::spawn(&plan.natm, disturbers, bound.as_secs() + 5)?;
    report.disturber_pids = spinners.pids();
    if disturbers > 0 {
        // Let them reach full speed.
        std::thread::sleep(Duration::from_millis(200));
    }
    let shared = Arc::new(Shared {
        consumed: AtomicU64::new(0),
        stamp: AtomicU64::new(0),
        published: AtomicU64::new(0),
        abort: AtomicBool::new(false),
        deadline: Instant::now() + bound,
        seed: plan.seed,
    });
    let (to_producer, rounds) = mpsc::channel();
    let placed = Arc::new(Mutex::new(Vec::<String>::new()));
    let p = {
        let shared = shared.clone();
        let placed = placed.clone();
        std::thread::Builder::new()
            .name("natm-producer".into())
            .spawn(move || {
                if let Err(e) = place(placement.producer_cpu, sched) {
                    placed
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(format!("producer: {e}"));
                    shared.abort.store(true, Ordering::Release);
                    return BTreeMap::new();
                }
                producer(tx, rounds, shared)
            })
            .map_err(|e| format!("starting the producer thread: {e}"))?
    };
    let c = {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("natm-consumer".into())
            .spawn(move || {
                place(placement.consumer_cpu, sched).map_err(|e| format!("consumer: {e}"))?;
                let r = consumer(rx, schedule, to_producer, shared.clone());
                if r.is_err() {
                    shared.abort.store(true, Ordering::Release);
                }
                r
            })
            .map_err(|e| format!("starting the consumer thread: {e}"))?
    };
    let tally = c
        .join()
        .map_err(|_| "the consumer thread panicked".to_string());
    let kicks = p
        .join()
        .map_err(|_| "the producer thread panicked".to_string());
    if disturbers > 0 && !spinners.all_running() {
        report
            .notes
            .push("a disturber ended before the measurement did".into());
    }
    drop(spinners);
    if let Some(e) = placed.lock().unwrap_or_else(|e| e.into_inner()).first() {
        return Err(e.clone());
    }
    Ok((tally??, kicks?))
}

/// Runs the conditions of `plan` and returns the report (prints nothing).
pub fn run(plan: &Plan) -> Result<Report, Error> {
    let cpus = sched::allowed_cpus().map_err(Error::Sched)?;
    let placement = match cpus.as_slice() {
        [c, p, ..] => Placement {
            consumer_cpu: Some(*c),
            producer_cpu: Some(*p),
        },
        _ => Placement {
            consumer_cpu: None,
            producer_cpu: None,
        },
    };
    let load_before = std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let mut conditions = Vec::new();
    for &sched in &plan.scheds {
        for &d in &plan.disturbers {
            conditions.push(run_condition(plan, d, sched, placement));
        }
    }
    Ok(Report {
        seed: plan.seed,
        samples_per_mode: plan.samples,
        gap_us: [GAP_MIN_US, GAP_MAX_US],
        round: ROUND,
        fifo_priority: FIFO_PRIORITY,
        placement,
        load_before,
        conditions,
    })
}

/// A disturber: spins on one CPU for `seconds`, then returns; dies with its parent
/// (`PR_SET_PDEATHSIG`), and fails at once if `parent` is given and is not its parent any
/// more.
pub fn spin(seconds: u64, parent: Option<u32>) -> Result<(), Error> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(|e| Error::io("prctl(PR_SET_PDEATHSIG)", e.into()))?;
    if let Some(parent) = parent {
        // The parent may have died before the prctl: then nobody would kill us.
        let now = rustix::process::getppid().map(|p| p.as_raw_nonzero().get() as u32);
        if now != Some(parent) {
            return Err(Error::NoResult("perf spin: the parent process is gone"));
        }
    }
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut x = 0x1234_5678_u64;
    while Instant::now() < end {
        for _ in 0..100_000 {
            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
    }
    Ok(())
}

//! Measurements of natm-switchd's forwarding loop, the daemon's [`Fabric`] on one pinned
//! core (the loops of `natm perf switch`, see [`crate::switch`]):
//!
//! * [`forwarding`]: between two shared-memory "hosts" on other threads, end to end;
//! * [`switch_capacity`]: the loop alone, in bursts from a full input ring, on one thread
//!   (the figure to hold against a cells/s goal on a machine where other processes
//!   compete for the CPUs: the median burst is robust to preemption, an end-to-end run
//!   is not).
//!
//! * [`ring_relay`]: [`forwarding`]'s baseline, the same rings and host threads with a
//!   plain relay instead of the switch;
//! * [`forwarding_in_rounds`] and [`ring_relay_in_rounds`]: the same, one ring's worth of
//!   cells at a time (each round timed alone; the median round is robust to preemption).
//!
//! # `forwarding`
//!
//! Host 1 sends `cells` cells on VC 0.100 into port 1; the switch translates them to
//! 2:0.200 and sends them out of port 2, where host 2 receives and counts them. The
//! figure is cells forwarded per second of wall time, from the first cell sent to the
//! last received. Cells the switch drops (its output queue overflows when host 2 reads
//! slower than host 1 sends) are counted apart, not in the rate. Every link busy-polls.
//! The hosts are two threads on two further CPUs when there are three or more; with only
//! one spare CPU, one thread plays both hosts (two spinning threads on one CPU would take
//! turns by whole time slices, and the measurement would be of the scheduler).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use natm_core::Qos;
use natm_link::shm::{ShmError, ShmLink, ShmWait};
use natm_link::{CELL_LEN, CellBytes, CellLink};
use natm_switch::{CrossConnect, Endpoint, PortConfig, PortId, SwitchConfig, SwitchError};

use natm_switchd::fabric::Fabric;

/// Ring size of each benchmark link, in cells.
const RING: u32 = 16_384;
/// Cells per round of [`forwarding_in_rounds`]: a ring's worth, under a millisecond at the
/// goal's rate, shorter than a scheduler time slice.
pub const ROUND: u64 = RING as u64;

/// What [`forwarding`] measured.
#[derive(Clone, Debug)]
pub struct Forwarding {
    /// Cells host 1 sent.
    pub sent: u64,
    /// Cells host 2 received (forwarded by the switch).
    pub forwarded: u64,
    /// Cells the switch dropped (its output queue full: host 2 read slower than host 1
    /// sent).
    pub dropped: u64,
    /// Cells per batch.
    pub batch: usize,
    /// From the start to the last cell received.
    pub elapsed: Duration,
    /// Forwarded cells per second.
    pub cells_per_second: f64,
    /// The CPU the switch loop was pinned to, if pinning worked.
    pub cpu: Option<usize>,
    /// Steps of the switch loop.
    pub steps: u64,
    /// Steps that moved no cell.
    pub idle_steps: u64,
    /// Time the switch loop spent in steps that moved cells.
    pub busy: Duration,
    /// Forwarded cells per second of `busy` time: what one core of switch can do when it
    /// never waits for the hosts (on a loaded machine, hosts that cannot keep up make
    /// `cells_per_second` a figure of the hosts).
    pub busy_cells_per_second: f64,
    /// Time the switch loop's thread was runnable but waited for its CPU (another
    /// process or thread had it), from `/proc/thread-self/schedstat`; `None` where the
    /// kernel does not say. A large figure means `cells_per_second` measured the machine's
    /// load, not the switch.
    pub switch_waited: Option<Duration>,
    /// The same for the host threads, summed.
    pub hosts_waited: Option<Duration>,
    /// In rounds ([`forwarding_in_rounds`], [`ring_relay_in_rounds`]): cells per second of
    /// each round, from its first cell sent to its last received, sorted (rounds that
    /// lost cells left out); empty otherwise. A round is short (about a millisecond for
    /// [`ROUND`] cells) and starts with empty rings, so a preemption slows the rounds it
    /// falls in and no other: the median round holds still on a loaded machine.
    pub round_rates: Vec<f64>,
}

impl Forwarding {
    /// The round at quantile `q` (0 slowest, 1 fastest) of [`Forwarding::round_rates`];
    /// 0 without rounds.
    pub fn round_quantile(&self, q: f64) -> f64 {
        crate::stats::at_fraction(&self.round_rates, q)
    }
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A link could not be made.
    #[error("shared-memory link: {0}")]
    Link(#[from] ShmError),
    /// The switch refused the set-up.
    #[error("switch: {0}")]
    Switch(#[from] SwitchError),
    /// A batch of 0 or more than a ring, or 0 cells.
    #[error("bad parameters: {0}")]
    Parameters(String),
    /// A host thread failed.
    #[error("host: {0}")]
    Host(String),
    /// Not every cell was forwarded or dropped within the time limit.
    #[error("only {got} of {want} cells were forwarded or dropped within {limit:?}")]
    Incomplete {
        /// Cells received.
        got: u64,
        /// Cells sent.
        want: u64,
        /// The limit.
        limit: Duration,
    },
}

/// A UNI cell on VPI 0, VCI `vci`, with a valid HEC and `seq` in its payload.
fn cell(vci: u16, seq: u64) -> CellBytes {
    let mut c = [0u8; CELL_LEN];
    let word = u32::from(vci) << 4;
    c[..4].copy_from_slice(&word.to_be_bytes());
    c[4] = natm_wire::cell::hec([c[0], c[1], c[2], c[3]]);
    c[5..13].copy_from_slice(&seq.to_be_bytes());
    c
}

/// Forwards `cells` cells in batches of `batch` through the switch loop on the calling
/// thread, pinned to one CPU for the run (its affinity is restored afterwards); returns the
/// rate. Gives up after a minute.
pub fn forwarding(cells: u64, batch: usize) -> Result<Forwarding, BenchError> {
    forwarding_with(cells, batch, None)
}

/// [`forwarding`] in rounds of `round` cells: host 1 sends a round, waits until host 2 has
/// received all of it, then sends the next ([`Forwarding::round_rates`]). The switch loop
/// runs on throughout.
pub fn forwarding_in_rounds(
    cells: u64,
    batch: usize,
    round: u64,
) -> Result<Forwarding, BenchError> {
    check_round(round)?;
    forwarding_with(cells, batch, Some(round))
}

fn check_round(round: u64) -> Result<(), BenchError> {
    if round == 0 {
        return Err(BenchError::Parameters("a round of 0 cells".into()));
    }
    Ok(())
}

fn forwarding_with(cells: u64, batch: usize, round: Option<u64>) -> Result<Forwarding, BenchError> {
    check(cells, batch)?;
    let mut fabric = Fabric::with_batch(SwitchConfig::default(), batch);
    fabric.add_port(PortId(1), PortConfig::default())?;
    fabric.add_port(PortId(2), PortConfig::default())?;
    connect_1_to_2(&mut fabric)?;
    let (sw1, h1) = ShmLink::pair_with(RING, ShmWait::BusyPoll)?;
    let (sw2, h2) = ShmLink::pair_with(RING, ShmWait::BusyPoll)?;
    fabric.attach(0, Box::new(sw1));
    fabric.attach(1, Box::new(sw2));
    drive(cells, batch, SwitchMiddle(fabric), h1, h2, 200, round)
}

/// The baseline of [`forwarding`]: the same two rings, host threads and pinning, with the
/// switch loop replaced by a relay that moves each batch from port 1's ring to port 2's
/// unchanged (no header lookup, no queue). `forwarding`'s rate over this one is what the
/// switch costs on top of the shared-memory rings.
pub fn ring_relay(cells: u64, batch: usize) -> Result<Forwarding, BenchError> {
    ring_relay_with(cells, batch, None)
}

/// [`ring_relay`] in rounds, as [`forwarding_in_rounds`].
pub fn ring_relay_in_rounds(
    cells: u64,
    batch: usize,
    round: u64,
) -> Result<Forwarding, BenchError> {
    check_round(round)?;
    ring_relay_with(cells, batch, Some(round))
}

fn ring_relay_with(cells: u64, batch: usize, round: Option<u64>) -> Result<Forwarding, BenchError> {
    check(cells, batch)?;
    let (sw1, h1) = ShmLink::pair_with(RING, ShmWait::BusyPoll)?;
    let (sw2, h2) = ShmLink::pair_with(RING, ShmWait::BusyPoll)?;
    let relay = RelayMiddle {
        rx: sw1,
        tx: sw2,
        buf: vec![[0u8; CELL_LEN]; batch],
        start: 0,
        end: 0,
    };
    // The relay does not translate: host 2 sees VCI 100.
    drive(cells, batch, relay, h1, h2, 100, round)
}

fn check(cells: u64, batch: usize) -> Result<(), BenchError> {
    if cells == 0 || batch == 0 || batch > RING as usize {
        return Err(BenchError::Parameters(format!(
            "cells {cells} (≥ 1), batch {batch} (1..={RING})"
        )));
    }
    Ok(())
}

/// What sits between host 1's ring and host 2's in [`drive`].
trait Middle {
    /// One pass; the cells moved (received + sent) and, when some moved, how long it took.
    fn step(&mut self) -> Result<(usize, Duration), BenchError>;
    /// Whether it holds no cell.
    fn drained(&self) -> bool;
    /// Cells it dropped so far.
    fn dropped(&self) -> u64;
}

struct SwitchMiddle(Fabric);

impl Middle for SwitchMiddle {
    fn step(&mut self) -> Result<(usize, Duration), BenchError> {
        let now = self.0.now();
        let step = self.0.step(now);
        let moved = step.received + step.sent;
        let took = if moved > 0 {
            Duration::from_nanos(self.0.now().as_nanos().saturating_sub(now.as_nanos()))
        } else {
            Duration::ZERO
        };
        Ok((moved, took))
    }

    fn drained(&self) -> bool {
        self.0.ports.iter().all(|p| p.held() == 0)
            && self
                .0
                .switch
                .port_counters(PortId(2))
                .is_some_and(|c| c.queued() == 0)
    }

    fn dropped(&self) -> u64 {
        dropped(&self.0)
    }
}

struct RelayMiddle {
    rx: ShmLink,
    tx: ShmLink,
    buf: Vec<CellBytes>,
    /// `buf[start..end]` waits for room in `tx`.
    start: usize,
    end: usize,
}

impl Middle for RelayMiddle {
    fn step(&mut self) -> Result<(usize, Duration), BenchError> {
        let t0 = Instant::now();
        let mut moved = 0;
        if self.start == self.end {
            self.end = self.rx.recv_cells(&mut self.buf).map_err(relay_error)?;
            self.start = 0;
            moved += self.end;
        }
        if self.start < self.end {
            let n = self
                .tx
                .send_cells(&self.buf[self.start..self.end])
                .map_err(relay_error)?;
            self.start += n;
            moved += n;
        }
        let took = if moved > 0 {
            t0.elapsed()
        } else {
            Duration::ZERO
        };
        Ok((moved, took))
    }

    fn drained(&self) -> bool {
        self.start == self.end
    }

    fn dropped(&self) -> u64 {
        0
    }
}

fn relay_error(e: std::io::Error) -> BenchError {
    BenchError::Host(format!("relay: {e}"))
}

/// Runs `middle` on the calling thread, pinned to the first allowed CPU, between host 1
/// (sending `cells` cells on `h1`) and host 2 (receiving on `h2`, checking for VCI
/// `out_vci`) on other CPUs; gives up after a minute.
fn drive(
    cells: u64,
    batch: usize,
    mut middle: impl Middle,
    h1: ShmLink,
    h2: ShmLink,
    out_vci: u16,
    round: Option<u64>,
) -> Result<Forwarding, BenchError> {
    let limit = Duration::from_secs(60);
    let got = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let cpus = natm_nic::sched::allowed_cpus().unwrap_or_default();
    let saved = rustix::thread::sched_getaffinity(None).ok();
    let cpu = cpus.first().copied();
    let pinned = cpu.filter(|&c| natm_nic::sched::pin_current_thread(c).is_ok());
    let waited0 = run_queue_wait();

    let t0 = Instant::now();
    // One host thread per spare CPU: with a single spare CPU, one thread plays both hosts
    // (two spinning threads on one CPU would take turns by whole time slices).
    let hosts = Hosts {
        cells,
        batch,
        out_vci,
        round,
    };
    let (sender, receiver) = if cpus.len() >= 3 {
        let (g, d) = (got.clone(), done.clone());
        let c1 = cpus.get(1).copied();
        let c2 = cpus.get(2).copied();
        let s = std::thread::spawn(move || hosts.run(c1, Some(h1), None, &g, &d));
        let (g, d) = (got.clone(), done.clone());
        let r = std::thread::spawn(move || hosts.run(c2, None, Some(h2), &g, &d));
        (Some(s), r)
    } else {
        let (g, d) = (got.clone(), done.clone());
        let c1 = cpus.get(1).copied();
        let r = std::thread::spawn(move || hosts.run(c1, Some(h1), Some(h2), &g, &d));
        (None, r)
    };
    let (mut steps, mut idle_steps, mut quiet) = (0u64, 0u64, 0u64);
    let mut busy = Duration::ZERO;
    let mut failed = Ok(());
    loop {
        let (moved, took) = match middle.step() {
            Ok(m) => m,
            Err(e) => {
                failed = Err(e);
                break;
            }
        };
        steps += 1;
        if moved == 0 {
            idle_steps += 1;
            quiet += 1;
        } else {
            quiet = 0;
            busy += took;
        }
        // Look at the clock and the threads only now and then: they cost per step.
        if steps.is_multiple_of(1024) {
            let drained = sender.as_ref().is_none_or(|s| s.is_finished())
                && got.load(Ordering::Relaxed) + middle.dropped() >= cells
                && quiet > 1024
                && middle.drained();
            if drained || receiver.is_finished() || t0.elapsed() > limit {
                break;
            }
        }
    }
    let switch_waited = waited0
        .zip(run_queue_wait())
        .map(|(a, b)| b.saturating_sub(a));
    done.store(true, Ordering::Release);
    let end = receiver
        .join()
        .map_err(|_| BenchError::Host("host panicked".into()));
    let sent = sender.map(|s| {
        s.join()
            .map_err(|_| BenchError::Host("host panicked".into()))
    });
    if let Some(set) = saved {
        let _ = rustix::thread::sched_setaffinity(None, &set);
    }
    failed?;
    let mut hosts_waited = Some(Duration::ZERO);
    let mut round_rates = Vec::new();
    if let Some(sent) = sent {
        let s = sent?.map_err(BenchError::Host)?;
        hosts_waited = hosts_waited.zip(s.waited).map(|(a, b)| a + b);
        round_rates = s.rounds;
    }
    let end = end?.map_err(BenchError::Host)?;
    hosts_waited = hosts_waited.zip(end.waited).map(|(a, b)| a + b);
    round_rates.extend_from_slice(&end.rounds);
    round_rates.sort_by(f64::total_cmp);
    let forwarded = got.load(Ordering::Relaxed);
    let dropped = middle.dropped();
    if forwarded + dropped < cells {
        return Err(BenchError::Incomplete {
            got: forwarded + dropped,
            want: cells,
            limit,
        });
    }
    let elapsed = end.last.saturating_duration_since(t0);
    Ok(Forwarding {
        sent: cells,
        forwarded,
        dropped,
        batch,
        elapsed,
        cells_per_second: forwarded as f64 / elapsed.as_secs_f64().max(1e-9),
        cpu: pinned,
        steps,
        idle_steps,
        busy,
        busy_cells_per_second: forwarded as f64 / busy.as_secs_f64().max(1e-9),
        switch_waited,
        hosts_waited,
        round_rates,
    })
}

/// How long the calling thread has waited on a run queue while runnable (another thread
/// had its CPU), from `/proc/thread-self/schedstat`; `None` where the kernel does not say.
pub fn run_queue_wait() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

fn dropped(fabric: &Fabric) -> u64 {
    [PortId(1), PortId(2)]
        .iter()
        .filter_map(|&p| fabric.switch.port_counters(p))
        .map(|c| c.dropped())
        .sum()
}

/// What every host thread of a run does.
#[derive(Clone, Copy)]
struct Hosts {
    cells: u64,
    batch: usize,
    /// The VCI cells arrive on at host 2.
    out_vci: u16,
    /// Cells per round, or `None` to send without pause.
    round: Option<u64>,
}

/// How a host thread ended.
struct HostEnd {
    /// When the last cell arrived.
    last: Instant,
    /// Cells per second of each whole round (the sending host, in rounds).
    rounds: Vec<f64>,
    /// Its time on a run queue.
    waited: Option<Duration>,
}

/// A round not received whole after this long lost cells (the switch dropped some).
const ROUND_STALL: Duration = Duration::from_secs(1);

/// The sending host's rounds: send `round` cells, wait until host 2 has them all, time it.
struct Rounds {
    round: u64,
    /// Where the current round begins and ends, in cells sent.
    begin: u64,
    end: u64,
    /// Cells lost in abandoned rounds (they never arrive).
    lost: u64,
    /// When the current round's first cell was sent.
    start: Option<Instant>,
    rates: Vec<f64>,
}

impl Rounds {
    /// Whether the sender may send now; closes the round when host 2 has all of it.
    fn may_send(&mut self, sent: u64, cells: u64, got: u64) -> bool {
        if sent < self.end {
            if self.start.is_none() {
                self.start = Some(Instant::now());
            }
            return true;
        }
        let Some(start) = self.start else {
            return sent < cells;
        };
        let took = start.elapsed();
        if got + self.lost >= self.end {
            let n = self.end - self.begin;
            self.rates.push(n as f64 / took.as_secs_f64().max(1e-9));
        } else if took > ROUND_STALL {
            // Cells were dropped: this round never completes and is left out.
            self.lost = self.end - got;
        } else {
            return false;
        }
        self.start = None;
        self.begin = self.end;
        self.end = (self.end + self.round).min(cells);
        sent < cells
    }

    /// Whether every round is closed.
    fn finished(&self, cells: u64) -> bool {
        self.start.is_none() && self.end >= cells
    }
}

impl Hosts {
    /// A host thread: sends `cells` cells on `tx` (if given), in rounds if asked, and
    /// receives on `rx` (if given) until `done`.
    fn run(
        self,
        cpu: Option<usize>,
        mut tx: Option<ShmLink>,
        mut rx: Option<ShmLink>,
        got: &AtomicU64,
        done: &AtomicBool,
    ) -> Result<HostEnd, String> {
        let (cells, batch) = (self.cells, self.batch);
        pin_host(cpu);
        let waited0 = run_queue_wait();
        let out: Vec<CellBytes> = (0..batch as u64).map(|i| cell(100, i)).collect();
        let header = u32::from(self.out_vci) << 4;
        let mut buf = vec![[0u8; CELL_LEN]; batch];
        let (mut sent, mut n_got) = (0u64, 0u64);
        let mut last = Instant::now();
        let mut rounds = self.round.filter(|_| tx.is_some()).map(|r| Rounds {
            round: r,
            begin: 0,
            end: r.min(cells),
            lost: 0,
            start: None,
            rates: Vec::with_capacity((cells / r + 1) as usize),
        });
        let mut idle = 0u32;
        let give_up = Instant::now() + Duration::from_secs(60);
        loop {
            let mut moved = 0;
            let open = match rounds.as_mut() {
                Some(r) => r.may_send(sent, cells, got.load(Ordering::Relaxed)),
                None => sent < cells,
            };
            if let Some(tx) = tx.as_mut().filter(|_| open) {
                let until = rounds.as_ref().map_or(cells, |r| r.end);
                let n = (until - sent).min(batch as u64) as usize;
                let k = tx.send_cells(&out[..n]).map_err(|e| e.to_string())?;
                sent += k as u64;
                moved += k;
            }
            if let Some(rx) = rx.as_mut() {
                let n = rx.recv_cells(&mut buf).map_err(|e| e.to_string())?;
                if n > 0 {
                    if u32::from_be_bytes([buf[0][0], buf[0][1], buf[0][2], buf[0][3]]) != header {
                        return Err(format!("a cell arrived without VCI {}", self.out_vci));
                    }
                    n_got += n as u64;
                    last = Instant::now();
                    got.store(n_got, Ordering::Relaxed);
                    moved += n;
                }
            }
            if moved > 0 {
                idle = 0;
                continue;
            }
            idle += 1;
            if idle.is_multiple_of(1024) {
                let sending_done = tx.is_none()
                    || (sent == cells && rounds.as_ref().is_none_or(|r| r.finished(cells)));
                if sending_done && (rx.is_none() || done.load(Ordering::Acquire)) {
                    let waited = waited0
                        .zip(run_queue_wait())
                        .map(|(a, b)| b.saturating_sub(a));
                    return Ok(HostEnd {
                        last,
                        rounds: rounds.map(|r| r.rates).unwrap_or_default(),
                        waited,
                    });
                }
                if Instant::now() > give_up {
                    return Err(format!("gave up after {sent} sent, {n_got} received"));
                }
            }
            std::hint::spin_loop();
        }
    }
}

fn pin_host(cpu: Option<usize>) {
    if let Some(c) = cpu {
        let _ = natm_nic::sched::pin_current_thread(c);
    }
}

/// What [`switch_capacity`] measured.
#[derive(Clone, Debug)]
pub struct Capacity {
    /// Cells per burst (a full input ring).
    pub burst: usize,
    /// Cells per batch.
    pub batch: usize,
    /// Cells per second of each burst, sorted.
    pub rates: Vec<f64>,
    /// The CPU it ran on, if pinning worked.
    pub cpu: Option<usize>,
}

impl Capacity {
    /// The median burst's rate, in cells per second (robust to a burst that was
    /// preempted by another process).
    pub fn median(&self) -> f64 {
        crate::stats::upper_median(&self.rates)
    }

    /// The fastest burst's rate.
    pub fn best(&self) -> f64 {
        self.rates.last().copied().unwrap_or(0.0)
    }
}

/// The switch loop's own capacity, on one pinned CPU and one thread: each round fills
/// port 1's input ring (`RING` cells on VC 0.100) from the host end, then times the
/// fabric's steps until every cell has been forwarded into port 2's ring (2:0.200, room
/// for all of them, so the switch never waits), then empties that ring untimed and checks
/// the count. Returns each round's rate: unlike [`forwarding`], no host thread shares the
/// measurement, and a round that another process preempted shows as one slow round.
pub fn switch_capacity(rounds: usize, batch: usize) -> Result<Capacity, BenchError> {
    if rounds == 0 || batch == 0 || batch > RING as usize {
        return Err(BenchError::Parameters(format!(
            "rounds {rounds} (≥ 1), batch {batch} (1..={RING})"
        )));
    }
    let mut fabric = Fabric::with_batch(SwitchConfig::default(), batch);
    fabric.add_port(PortId(1), PortConfig::default())?;
    // Port 2's UBR queue holds a whole burst: nothing is dropped while the ring fills.
    let out = PortConfig {
        queue_cells: [256, 256, 1024, RING],
        ..PortConfig::default()
    };
    fabric.add_port(PortId(2), out)?;
    connect_1_to_2(&mut fabric)?;
    let (sw1, mut h1) = ShmLink::pair_with(RING, ShmWait::BusyPoll)?;
    let (sw2, mut h2) = ShmLink::pair_with(RING, ShmWait::BusyPoll)?;
    fabric.attach(0, Box::new(sw1));
    fabric.attach(1, Box::new(sw2));
    let saved = rustix::thread::sched_getaffinity(None).ok();
    let cpu = natm_nic::sched::allowed_cpus()
        .unwrap_or_default()
        .first()
        .copied()
        .filter(|&c| natm_nic::sched::pin_current_thread(c).is_ok());
    let burst: Vec<CellBytes> = (0..u64::from(RING)).map(|i| cell(100, i)).collect();
    let mut buf = vec![[0u8; CELL_LEN]; RING as usize];
    let mut rates = Vec::with_capacity(rounds);
    let mut result = Ok(());
    for round in 0..rounds {
        let filled = match h1.send_cells(&burst) {
            Ok(n) => n,
            Err(e) => {
                result = Err(BenchError::Host(e.to_string()));
                break;
            }
        };
        let t0 = Instant::now();
        let mut moved = 0;
        while moved < filled {
            let now = fabric.now();
            moved += fabric.step(now).sent;
            if t0.elapsed() > Duration::from_secs(10) {
                break;
            }
        }
        let took = t0.elapsed();
        let got = h2.recv_cells(&mut buf).unwrap_or(0);
        if got != filled || moved != filled {
            result = Err(BenchError::Incomplete {
                got: got as u64,
                want: filled as u64,
                limit: Duration::from_secs(10),
            });
            break;
        }
        if round > 0 {
            // The first round warms the caches and the switch's cell pool.
            rates.push(filled as f64 / took.as_secs_f64().max(1e-9));
        }
    }
    if let Some(set) = saved {
        let _ = rustix::thread::sched_setaffinity(None, &set);
    }
    result?;
    if rates.is_empty() {
        rates.push(0.0);
    }
    rates.sort_by(f64::total_cmp);
    Ok(Capacity {
        burst: RING as usize,
        batch,
        rates,
        cpu,
    })
}

/// The benches' one cross-connect: UBR from port 1's 0.100 to port 2's 0.200.
fn connect_1_to_2(fabric: &mut Fabric) -> Result<(), BenchError> {
    let now = fabric.now();
    let ubr = "ubr"
        .parse::<Qos>()
        .map_err(|e| BenchError::Parameters(e.to_string()))?;
    fabric.switch.connect(
        now,
        &CrossConnect::new(Endpoint::vc(1, 0, 100), Endpoint::vc(2, 0, 200), ubr),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_relay_moves_every_cell_and_reports_waits() {
        let r = ring_relay(10_000, 64).unwrap();
        assert_eq!((r.sent, r.forwarded, r.dropped), (10_000, 10_000, 0));
        assert!(r.cells_per_second > 0.0 && r.steps > 0);
        assert!(ring_relay(0, 64).is_err());
        assert!(ring_relay(10, RING as usize + 1).is_err());
        let f = forwarding(10_000, 64).unwrap();
        assert_eq!(f.forwarded + f.dropped, 10_000);
        assert!(f.round_rates.is_empty(), "not in rounds");
        assert_eq!(f.round_quantile(0.5), 0.0);
        let f = ring_relay_in_rounds(4 * 1000 + 500, 64, 1000).unwrap();
        assert_eq!(f.forwarded, 4500);
        assert_eq!(f.round_rates.len(), 5, "{:?}", f.round_rates);
        assert!(f.round_rates.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(f.round_quantile(1.0), f.round_rates[4]);
        assert_eq!(f.round_quantile(0.5), f.round_rates[2]);
        let f = forwarding_in_rounds(3000, 64, 1000).unwrap();
        assert_eq!(f.forwarded + f.dropped, 3000);
        assert_eq!(f.round_rates.len(), 3, "nothing dropped at this size");
        assert!(forwarding_in_rounds(3000, 64, 0).is_err());
    }
}

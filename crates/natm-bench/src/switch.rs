//! The engine of `natm perf switch`: the switch daemon's forwarding loop on one core through shared-memory
//! rings, against issue 5's goal of an OC-192's worth of cells (23.6 M cells/s), beside the
//! bare rings measured in the same run.
//!
//! # What is measured
//!
//! Each of `--runs` runs measures four things, in an order that rotates every run so that
//! a change of the machine's load touches all of them alike:
//!
//! * **ring relay in rounds** ([`bench::ring_relay_in_rounds`]), the baseline: host 1
//!   sends `--round` cells into a shared-memory ring, a relay thread pinned to the first
//!   CPU moves each batch unchanged into a second ring, host 2 receives them; then the
//!   next round. No switch.
//! * **forwarding in rounds** ([`bench::forwarding_in_rounds`]): the same rings, host
//!   threads and pinning, with natm-switchd's loop (header lookup, translation, queueing)
//!   in place of the relay. Its median round over the relay's is what the switch costs.
//! * **forwarding, continuous** ([`bench::forwarding`]): `--cells` cells without pause,
//!   the figure over the whole run's wall time.
//! * **the loop alone** ([`bench::switch_capacity`]): one thread, `--rounds` bursts of a
//!   full ring, median burst per run.
//!
//! The host threads run on the second CPU (one thread plays both hosts when there are only
//! two). Every end-to-end run also reports how long the middle thread and the host threads
//! were runnable but waiting for their CPU (`/proc/thread-self/schedstat`). On a 2-CPU
//! machine shared with compilers those waits are 20–70% of a run, and a continuous run's
//! rate is a figure of that load: single runs ranged from 1.5 to 42.7 M cells/s. A round
//! (a ring's worth of cells, under a millisecond, starting from empty rings) is shorter
//! than a scheduler time slice: a preemption slows the rounds it falls in and no other,
//! so the median round holds still while the load moves. The report gives each figure's
//! median and range over the runs.
//!
//! This module only drives the benchmarks; the loops are [`crate::forwarding`]'s.

mod render;

use std::time::Duration;

use serde::Serialize;

use crate::Error;
use crate::forwarding::{self as bench, Forwarding};
use crate::progress::Progress;
use crate::stats::Spread;

/// Issue 5's goal: an OC-192's payload worth of cells per second on one core.
pub const GOAL_CELLS_PER_SEC: f64 = 23.6e6;
/// One end-to-end run.
#[derive(Clone, Debug, Serialize)]
pub struct EndToEnd {
    /// Cells received by host 2 per second of wall time.
    pub cells_per_sec: f64,
    /// Cells per second of the time the middle thread spent moving cells.
    pub busy_cells_per_sec: f64,
    /// Cells dropped (switch queue full).
    pub dropped: u64,
    /// Wall time of the run.
    pub seconds: f64,
    /// Share of the wall time the middle (switch or relay) thread waited for its CPU.
    pub middle_waited: Option<f64>,
    /// Share of the wall time the host threads waited for their CPU (summed).
    pub hosts_waited: Option<f64>,
    /// In rounds: the median round's rate (0 otherwise).
    pub round_p50: f64,
    /// In rounds: whole rounds timed.
    pub rounds: usize,
}

impl EndToEnd {
    fn of(f: &Forwarding) -> EndToEnd {
        let wall = f.elapsed.as_secs_f64().max(1e-9);
        let share = |d: Option<Duration>| d.map(|d| d.as_secs_f64() / wall);
        EndToEnd {
            cells_per_sec: f.cells_per_second,
            busy_cells_per_sec: f.busy_cells_per_second,
            dropped: f.dropped,
            seconds: f.elapsed.as_secs_f64(),
            middle_waited: share(f.switch_waited),
            hosts_waited: share(f.hosts_waited),
            round_p50: f.round_quantile(0.5),
            rounds: f.round_rates.len(),
        }
    }
}

/// One run of the three measurements.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// The baseline: rings and a plain relay, in rounds.
    pub relay: EndToEnd,
    /// natm-switchd's loop between the same rings, in rounds.
    pub forwarding: EndToEnd,
    /// The same without pause.
    pub continuous: EndToEnd,
    /// The loop alone: median burst, cells/s.
    pub capacity: f64,
    /// forwarding ÷ relay, median rounds.
    pub ratio: f64,
}

/// What `natm perf switch` reports.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Cells per end-to-end run.
    pub cells: u64,
    /// Cells per round.
    pub round: u64,
    /// Cells per batch.
    pub batch: usize,
    /// Runs.
    pub runs: usize,
    /// Bursts per loop-alone run.
    pub rounds: usize,
    /// The CPU the switch loop (and the relay) ran on.
    pub switch_cpu: Option<usize>,
    /// CPUs this process may use.
    pub cpus: Vec<usize>,
    /// The goal, cells/s.
    pub goal_cells_per_sec: f64,
    /// Ring relay, each run's median round, cells/s.
    pub relay: Spread,
    /// Forwarding, each run's median round, cells/s.
    pub forwarding: Spread,
    /// Forwarding without pause, cells/s of wall time.
    pub continuous: Spread,
    /// Forwarding without pause per busy switch core, cells/s.
    pub continuous_busy: Spread,
    /// The loop alone, cells/s (each run's median burst).
    pub capacity: Spread,
    /// forwarding ÷ relay (median rounds), per run.
    pub ratio: Spread,
    /// Share of the continuous runs' wall time the switch thread waited for its CPU.
    pub continuous_waited: Spread,
    /// Whether the median of forwarding's median rounds meets the goal.
    pub forwarding_meets_goal: bool,
    /// Whether the median continuous rate meets the goal.
    pub continuous_meets_goal: bool,
    /// Whether the median loop-alone rate meets the goal.
    pub capacity_meets_goal: bool,
    /// Every run.
    pub per_run: Vec<Run>,
}

/// A `natm perf switch` run: what [`run`] does.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Cells per end-to-end run (forwarding and relay), at least 1.
    pub cells: u64,
    /// Cells per round of the in-rounds runs, at least 1.
    pub round: u64,
    /// Cells per batch, in the switch loop and the host threads (1 to a ring).
    pub batch: usize,
    /// Runs of each measurement, at least 1.
    pub runs: usize,
    /// Bursts of the loop-alone measurement per run (the first is a warm-up), at least 2.
    pub rounds: usize,
}

/// Runs the measurements of `plan` and returns the report (prints nothing).
pub fn run(args: &Plan) -> Result<Report, Error> {
    let mut progress = Progress::new(4 * args.runs as u64, "switch");
    let mut per_run = Vec::with_capacity(args.runs);
    let mut switch_cpu = None;
    for r in 0..args.runs {
        let (mut relay, mut forwarding, mut continuous, mut capacity) = (None, None, None, None);
        for k in 0..4 {
            let which = (r + k) % 4;
            let name = ["ring relay", "forwarding", "continuous", "loop alone"][which];
            progress.set_message(format!("switch run {}: {name}", r + 1));
            let fail = |source| Error::Switch { what: name, source };
            match which {
                0 => {
                    relay = Some(
                        bench::ring_relay_in_rounds(args.cells, args.batch, args.round)
                            .map_err(fail)?,
                    )
                }
                1 => {
                    forwarding = Some(
                        bench::forwarding_in_rounds(args.cells, args.batch, args.round)
                            .map_err(fail)?,
                    )
                }
                2 => {
                    let f = bench::forwarding(args.cells, args.batch).map_err(fail)?;
                    switch_cpu = switch_cpu.or(f.cpu);
                    continuous = Some(f);
                }
                _ => {
                    capacity = Some(bench::switch_capacity(args.rounds, args.batch).map_err(fail)?)
                }
            }
            progress.inc(1);
        }
        // Each arm above ran once.
        let (Some(relay), Some(forwarding), Some(continuous), Some(capacity)) =
            (relay, forwarding, continuous, capacity)
        else {
            return Err(Error::NoResult("a measurement of the run did not run"));
        };
        let (relay, forwarding) = (EndToEnd::of(&relay), EndToEnd::of(&forwarding));
        per_run.push(Run {
            ratio: forwarding.round_p50 / relay.round_p50.max(1e-9),
            relay,
            forwarding,
            continuous: EndToEnd::of(&continuous),
            capacity: capacity.median(),
        });
    }
    drop(progress);
    let spread = |f: fn(&Run) -> f64| Spread::of(per_run.iter().map(f));
    let forwarding = spread(|r| r.forwarding.round_p50);
    let continuous = spread(|r| r.continuous.cells_per_sec);
    let capacity = spread(|r| r.capacity);
    Ok(Report {
        cells: args.cells,
        round: args.round,
        batch: args.batch,
        runs: args.runs,
        rounds: args.rounds,
        switch_cpu,
        cpus: natm_nic::sched::allowed_cpus().unwrap_or_default(),
        goal_cells_per_sec: GOAL_CELLS_PER_SEC,
        relay: spread(|r| r.relay.round_p50),
        forwarding,
        continuous,
        continuous_busy: spread(|r| r.continuous.busy_cells_per_sec),
        capacity,
        ratio: spread(|r| r.ratio),
        continuous_waited: spread(|r| r.continuous.middle_waited.unwrap_or(0.0)),
        forwarding_meets_goal: forwarding.median >= GOAL_CELLS_PER_SEC,
        continuous_meets_goal: continuous.median >= GOAL_CELLS_PER_SEC,
        capacity_meets_goal: capacity.median >= GOAL_CELLS_PER_SEC,
        per_run,
    })
}

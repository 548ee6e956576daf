//! `natm perf switch`: the switch daemon's forwarding loop on one core through shared-memory
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
//! This module only drives the benchmarks and prints; the loops are natm-switchd's.

use std::time::Duration;

use clap::Args;
use natm_switchd::bench::{self, Forwarding};
use serde::Serialize;

use super::Progress;
use crate::{CliError, CmdResult};

/// Issue 5's goal: an OC-192's payload worth of cells per second on one core.
pub const GOAL_CELLS_PER_SEC: f64 = 23.6e6;
const MAX_CELLS: u64 = 1_000_000_000;
const MAX_RUNS: usize = 1000;
const MAX_ROUNDS: usize = 100_000;
/// The benchmarks' ring size: the largest batch.
const MAX_BATCH: usize = 16_384;

/// Arguments of `natm perf switch`.
#[derive(Args, Debug)]
pub struct SwitchArgs {
    /// Cells per end-to-end run (forwarding and relay).
    #[arg(long, default_value_t = 20_000_000)]
    cells: u64,
    /// Cells per round of the in-rounds runs (default: one ring).
    #[arg(long, default_value_t = bench::ROUND)]
    round: u64,
    /// Cells per batch, in the switch loop and the host threads.
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// Runs of each measurement (median and range reported).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Bursts of the loop-alone measurement per run (the first is a warm-up).
    #[arg(long, default_value_t = 101)]
    rounds: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

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

/// Median, least and greatest of one figure over the runs.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Spread {
    /// The median (the upper one of an even count).
    pub median: f64,
    /// The least.
    pub min: f64,
    /// The greatest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (empty: all zero).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Spread {
        let mut v: Vec<f64> = values.into_iter().collect();
        v.sort_by(f64::total_cmp);
        Spread {
            median: v.get(v.len() / 2).copied().unwrap_or(0.0),
            min: v.first().copied().unwrap_or(0.0),
            max: v.last().copied().unwrap_or(0.0),
        }
    }
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

fn check(args: &SwitchArgs) -> Result<(), CliError> {
    if !(1..=MAX_CELLS).contains(&args.cells) {
        return Err(CliError::usage(format!(
            "--cells {}: expected 1 to {MAX_CELLS}",
            args.cells
        )));
    }
    if args.round == 0 {
        return Err(CliError::usage("--round 0: a round is at least 1 cell"));
    }
    if !(1..=MAX_BATCH).contains(&args.batch) {
        return Err(CliError::usage(format!(
            "--batch {}: expected 1 to {MAX_BATCH} (a ring)",
            args.batch
        )));
    }
    if !(1..=MAX_RUNS).contains(&args.runs) {
        return Err(CliError::usage(format!(
            "--runs {}: expected 1 to {MAX_RUNS}",
            args.runs
        )));
    }
    if !(2..=MAX_ROUNDS).contains(&args.rounds) {
        return Err(CliError::usage(format!(
            "--rounds {}: expected 2 (a warm-up and one measured) to {MAX_ROUNDS}",
            args.rounds
        )));
    }
    Ok(())
}

fn failed(what: &str, e: bench::BenchError) -> CliError {
    CliError::failure(format!("{what}: {e}"))
}

/// Runs `natm perf switch`.
pub fn run(args: SwitchArgs) -> CmdResult {
    check(&args)?;
    let mut progress = Progress::new(4 * args.runs as u64, "switch");
    let mut per_run = Vec::with_capacity(args.runs);
    let mut switch_cpu = None;
    for r in 0..args.runs {
        let (mut relay, mut forwarding, mut continuous, mut capacity) = (None, None, None, None);
        for k in 0..4 {
            let which = (r + k) % 4;
            let name = ["ring relay", "forwarding", "continuous", "loop alone"][which];
            progress.set_message(format!("switch run {}: {name}", r + 1));
            let fail = |e| failed(name, e);
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
            return Err(CliError::failure("a measurement of the run did not run"));
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
    let report = Report {
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
    };
    super::print_report(args.json, &report, print_table)
}

fn m(cells_per_sec: f64) -> String {
    format!("{:.1}", cells_per_sec / 1e6)
}

fn pct(share: Option<f64>) -> String {
    share.map_or_else(|| "-".into(), |s| format!("{:.0}%", s * 100.0))
}

fn met(yes: bool) -> &'static str {
    if yes { "met" } else { "not met" }
}

fn print_table(r: &Report) {
    println!(
        "switch forwarding on one core: {} run(s); rounds of {} cells, {} cells per run, \
         batch {}; switch on cpu {}, CPUs {:?}",
        r.runs,
        r.round,
        r.cells,
        r.batch,
        r.switch_cpu
            .map_or_else(|| "(unpinned)".into(), |c| c.to_string()),
        r.cpus
    );
    println!(
        "{:<42} {:>9} {:>15} {:>9}",
        "M cells/s", "median", "min - max", "goal"
    );
    let row = |name: &str, s: &Spread, goal: &str| {
        println!(
            "{name:<42} {:>9} {:>15} {goal:>9}",
            m(s.median),
            format!("{} - {}", m(s.min), m(s.max))
        );
    };
    row("shm ring relay, no switch (median round)", &r.relay, "");
    row(
        "switchd forwarding (median round)",
        &r.forwarding,
        met(r.forwarding_meets_goal),
    );
    row(
        "switchd forwarding, continuous",
        &r.continuous,
        met(r.continuous_meets_goal),
    );
    row("  per busy switch core", &r.continuous_busy, "");
    row(
        &format!("switchd loop alone ({} bursts/run)", r.rounds - 1),
        &r.capacity,
        met(r.capacity_meets_goal),
    );
    println!(
        "forwarding / relay (median rounds): {:.2}x ({:.2} - {:.2}); goal {} M cells/s \
         (OC-192); continuous runs' switch thread waited {:.0}% ({:.0} - {:.0}%) of the time \
         for its CPU",
        r.ratio.median,
        r.ratio.min,
        r.ratio.max,
        m(r.goal_cells_per_sec),
        r.continuous_waited.median * 100.0,
        r.continuous_waited.min * 100.0,
        r.continuous_waited.max * 100.0
    );
    println!();
    println!(
        "{:>3} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "run", "relay", "fwd", "fwd/rel", "contin.", "waited", "hosts", "dropped", "alone"
    );
    for (i, run) in r.per_run.iter().enumerate() {
        println!(
            "{:>3} {:>8} {:>8} {:>8.2} {:>8} {:>8} {:>8} {:>8} {:>8}",
            i + 1,
            m(run.relay.round_p50),
            m(run.forwarding.round_p50),
            run.ratio,
            m(run.continuous.cells_per_sec),
            pct(run.continuous.middle_waited),
            pct(run.continuous.hosts_waited),
            run.continuous.dropped,
            m(run.capacity),
        );
    }
    println!(
        "relay, fwd: median round; waited: share of the continuous run's wall time the switch \
         thread (hosts: the host threads) was runnable but another task had its CPU"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_median_and_range() {
        let s = Spread::of([3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        let s = Spread::of([4.0, 1.0]);
        assert_eq!((s.median, s.min, s.max), (4.0, 1.0, 4.0));
        let s = Spread::of([]);
        assert_eq!((s.median, s.min, s.max), (0.0, 0.0, 0.0));
    }
}

//! `natm perf switch`: the switch daemon's forwarding loop on one core through shared-memory
//! rings, against issue 5's goal of an OC-192's worth of cells (23.6 M cells/s), beside the
//! bare rings measured in the same run.
//!
//! # What is measured
//!
//! Each of `--runs` runs measures three things, in an order that rotates every run so
//! that a change of the machine's load touches all of them alike:
//!
//! * **ring relay** ([`natm_switchd::bench::ring_relay`]), the baseline: host 1 sends
//!   `--cells` cells into a shared-memory ring, a relay thread pinned to the first CPU
//!   moves each batch unchanged into a second ring, host 2 receives them. No switch.
//! * **forwarding** ([`natm_switchd::bench::forwarding`]): the same rings, host threads
//!   and pinning, with natm-switchd's loop (header lookup, translation, queueing) in
//!   place of the relay. Its rate over the relay's is what the switch costs.
//! * **capacity** ([`natm_switchd::bench::switch_capacity`]): the loop alone on one
//!   thread, `--rounds` bursts of a full ring, median burst per run.
//!
//! The host threads run on the second CPU (one thread plays both hosts when there are only
//! two). Each end-to-end run also reports how long the switch thread and the host threads
//! were runnable but waiting for their CPU (`/proc/thread-self/schedstat`): an end-to-end
//! figure from a run whose threads waited is a figure of the machine's other load, which
//! is why single runs of `forwarding` ranged from 1.5 to 42.7 M cells/s on a 2-CPU machine
//! shared with compilers. The report gives the median and the range over all runs, and
//! again over the quiet runs only (every thread waited under [`QUIET_SHARE`] of the run).
//! Within a run, host 2 marks every [`bench::INTERVAL`] cells (about a millisecond, less
//! than a scheduler time slice): a preempted thread slows the intervals it falls in and not
//! the others, so a run's 90th-percentile interval is the rate of its undisturbed
//! stretches, a figure that holds still on a loaded machine where the run's mean does not.
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
/// The most a quiet run's threads wait for a CPU, as a share of its wall time.
pub const QUIET_SHARE: f64 = 0.05;
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
    /// Median rate of the run's intervals of [`bench::INTERVAL`] cells (0: none whole).
    pub interval_p50: f64,
    /// The rate 9 intervals in 10 stayed below: the run's undisturbed stretches.
    pub interval_p90: f64,
}

impl EndToEnd {
    /// Whether its threads had their CPUs (waits known and under [`QUIET_SHARE`]).
    pub fn quiet(&self) -> bool {
        self.middle_waited.is_some_and(|w| w < QUIET_SHARE)
            && self.hosts_waited.is_some_and(|w| w < QUIET_SHARE)
    }

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
            interval_p50: f.interval_quantile(0.5),
            interval_p90: f.interval_quantile(0.9),
        }
    }
}

/// One run of the three measurements.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// The baseline: rings and a plain relay.
    pub relay: EndToEnd,
    /// natm-switchd's loop between the same rings.
    pub forwarding: EndToEnd,
    /// The loop alone: median burst, cells/s.
    pub capacity: f64,
    /// forwarding ÷ relay.
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
    /// Ring relay, cells/s over the runs.
    pub relay: Spread,
    /// Forwarding, cells/s over the runs.
    pub forwarding: Spread,
    /// Forwarding per busy switch core, cells/s.
    pub forwarding_busy: Spread,
    /// Ring relay, each run's 90th-percentile interval.
    pub relay_interval_p90: Spread,
    /// Forwarding, each run's median interval.
    pub forwarding_interval_p50: Spread,
    /// Forwarding, each run's 90th-percentile interval.
    pub forwarding_interval_p90: Spread,
    /// The loop alone, cells/s (each run's median burst).
    pub capacity: Spread,
    /// forwarding ÷ relay, per run.
    pub ratio: Spread,
    /// Runs in which neither the relay's nor forwarding's threads waited for a CPU more
    /// than [`QUIET_SHARE`] of the time.
    pub quiet_runs: usize,
    /// Ring relay over the quiet runs only (`null` if none).
    pub quiet_relay: Option<Spread>,
    /// Forwarding over the quiet runs only (`null` if none).
    pub quiet_forwarding: Option<Spread>,
    /// Whether the median forwarding rate meets the goal.
    pub forwarding_meets_goal: bool,
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
    let mut progress = Progress::new(3 * args.runs as u64, "switch");
    let mut per_run = Vec::with_capacity(args.runs);
    let mut switch_cpu = None;
    for r in 0..args.runs {
        let (mut relay, mut forwarding, mut capacity) = (None, None, None);
        for k in 0..3 {
            match (r + k) % 3 {
                0 => {
                    progress.set_message(format!("switch run {}: ring relay", r + 1));
                    relay = Some(
                        bench::ring_relay(args.cells, args.batch)
                            .map_err(|e| failed("ring relay", e))?,
                    );
                }
                1 => {
                    progress.set_message(format!("switch run {}: forwarding", r + 1));
                    let f = bench::forwarding(args.cells, args.batch)
                        .map_err(|e| failed("forwarding", e))?;
                    switch_cpu = switch_cpu.or(f.cpu);
                    forwarding = Some(f);
                }
                _ => {
                    progress.set_message(format!("switch run {}: loop alone", r + 1));
                    capacity = Some(
                        bench::switch_capacity(args.rounds, args.batch)
                            .map_err(|e| failed("switch capacity", e))?,
                    );
                }
            }
            progress.inc(1);
        }
        // Each arm above ran once.
        let (Some(relay), Some(forwarding), Some(capacity)) = (relay, forwarding, capacity) else {
            return Err(CliError::failure("a measurement of the run did not run"));
        };
        per_run.push(Run {
            ratio: forwarding.cells_per_second / relay.cells_per_second.max(1e-9),
            relay: EndToEnd::of(&relay),
            forwarding: EndToEnd::of(&forwarding),
            capacity: capacity.median(),
        });
    }
    drop(progress);
    let relay = Spread::of(per_run.iter().map(|r| r.relay.cells_per_sec));
    let forwarding = Spread::of(per_run.iter().map(|r| r.forwarding.cells_per_sec));
    let capacity = Spread::of(per_run.iter().map(|r| r.capacity));
    let quiet: Vec<&Run> = per_run
        .iter()
        .filter(|r| r.relay.quiet() && r.forwarding.quiet())
        .collect();
    let quiet_spread =
        |f: fn(&Run) -> f64| (!quiet.is_empty()).then(|| Spread::of(quiet.iter().map(|r| f(r))));
    let quiet_relay = quiet_spread(|r| r.relay.cells_per_sec);
    let quiet_forwarding = quiet_spread(|r| r.forwarding.cells_per_sec);
    let quiet_runs = quiet.len();
    let report = Report {
        cells: args.cells,
        batch: args.batch,
        runs: args.runs,
        rounds: args.rounds,
        switch_cpu,
        cpus: natm_nic::sched::allowed_cpus().unwrap_or_default(),
        goal_cells_per_sec: GOAL_CELLS_PER_SEC,
        relay,
        forwarding,
        forwarding_busy: Spread::of(per_run.iter().map(|r| r.forwarding.busy_cells_per_sec)),
        relay_interval_p90: Spread::of(per_run.iter().map(|r| r.relay.interval_p90)),
        forwarding_interval_p50: Spread::of(per_run.iter().map(|r| r.forwarding.interval_p50)),
        forwarding_interval_p90: Spread::of(per_run.iter().map(|r| r.forwarding.interval_p90)),
        capacity,
        ratio: Spread::of(per_run.iter().map(|r| r.ratio)),
        quiet_runs,
        quiet_relay,
        quiet_forwarding,
        forwarding_meets_goal: forwarding.median >= GOAL_CELLS_PER_SEC,
        capacity_meets_goal: capacity.median >= GOAL_CELLS_PER_SEC,
        per_run,
    };
    if args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| CliError::failure(format!("JSON: {e}")))?;
        println!("{text}");
    } else {
        print_table(&report);
    }
    Ok(())
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
        "switch forwarding on one core: {} run(s), {} cells per end-to-end run, batch {}, \
         switch on cpu {}, CPUs {:?}",
        r.runs,
        r.cells,
        r.batch,
        r.switch_cpu
            .map_or_else(|| "(unpinned)".into(), |c| c.to_string()),
        r.cpus
    );
    println!(
        "{:<38} {:>9} {:>15} {:>9}",
        "M cells/s", "median", "min - max", "goal"
    );
    let row = |name: &str, s: &Spread, goal: &str| {
        println!(
            "{name:<38} {:>9} {:>15} {goal:>9}",
            m(s.median),
            format!("{} - {}", m(s.min), m(s.max))
        );
    };
    row("shm ring relay, no switch (baseline)", &r.relay, "");
    row(
        "switchd forwarding, end to end",
        &r.forwarding,
        met(r.forwarding_meets_goal),
    );
    row("  per busy switch core", &r.forwarding_busy, "");
    row(
        &format!("  intervals of {} cells, p50", bench::INTERVAL),
        &r.forwarding_interval_p50,
        "",
    );
    row(
        &format!("  intervals of {} cells, p90", bench::INTERVAL),
        &r.forwarding_interval_p90,
        met(r.forwarding_interval_p90.median >= r.goal_cells_per_sec),
    );
    row("relay, intervals p90", &r.relay_interval_p90, "");
    if let (Some(relay), Some(fwd)) = (&r.quiet_relay, &r.quiet_forwarding) {
        let n = r.quiet_runs;
        row(&format!("relay, {n} quiet run(s) only"), relay, "");
        row(
            &format!("forwarding, {n} quiet run(s) only"),
            fwd,
            met(fwd.median >= r.goal_cells_per_sec),
        );
    } else {
        println!("(no quiet run: in every run a thread waited for its CPU over 5% of the time)");
    }
    row(
        &format!("switchd loop alone ({} bursts/run)", r.rounds - 1),
        &r.capacity,
        met(r.capacity_meets_goal),
    );
    println!(
        "forwarding / relay: {:.2}x median ({:.2} - {:.2}); goal {} M cells/s (OC-192)",
        r.ratio.median,
        r.ratio.min,
        r.ratio.max,
        m(r.goal_cells_per_sec)
    );
    println!();
    println!(
        "{:>3} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "run",
        "relay",
        "waited",
        "fwd",
        "waited",
        "hosts",
        "fwd p90",
        "dropped",
        "alone",
        "fwd/rel"
    );
    for (i, run) in r.per_run.iter().enumerate() {
        println!(
            "{:>3} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8.2}",
            i + 1,
            m(run.relay.cells_per_sec),
            pct(run.relay.middle_waited),
            m(run.forwarding.cells_per_sec),
            pct(run.forwarding.middle_waited),
            pct(run.forwarding.hosts_waited),
            m(run.forwarding.interval_p90),
            run.forwarding.dropped,
            m(run.capacity),
            run.ratio
        );
    }
    println!(
        "waited: share of the run's wall time the relay/switch thread (or, `hosts`, the host \
         threads) was runnable but another task had its CPU; a quiet run has both under {:.0}%",
        QUIET_SHARE * 100.0
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

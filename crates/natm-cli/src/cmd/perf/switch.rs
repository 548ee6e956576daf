//! `natm perf switch`: the options of natm-bench's switch forwarding engine
//! ([`switch::run`]) and its table.

use clap::Args;
use natm_bench::forwarding as bench;
use natm_bench::stats::Spread;
use natm_bench::switch::{self, Plan, Report};

use crate::{CliError, CmdResult};

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

/// Runs `natm perf switch`.
pub fn run(args: SwitchArgs) -> CmdResult {
    check(&args)?;
    let plan = Plan {
        cells: args.cells,
        round: args.round,
        batch: args.batch,
        runs: args.runs,
        rounds: args.rounds,
    };
    let report = switch::run(&plan).map_err(super::failure)?;
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

//! `natm perf switch`: the options of natm-bench's switch forwarding engine
//! ([`switch::run`]); the report prints its own table ([`Report::table`]).

use clap::Args;
use natm_bench::forwarding as bench;
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
    super::print_report(args.json, &report, Report::table)
}

//! `natm perf rr`: the options of natm-bench's request/response engine ([`rr::run`]); the
//! report prints its own table ([`Report::table`]).

use std::time::Duration;

use clap::Args;
use natm_bench::rr::{self, Report};
use natm_bench::transport::Targets;

use super::transport::{CpuArgs, TargetArgs};
use crate::{CliError, CmdResult};

const MAX_DEPTH: u32 = 4096;
const MAX_COUNT: u64 = 1_000_000_000;

/// Arguments of `natm perf rr`.
#[derive(Args, Debug)]
pub struct RrArgs {
    #[command(flatten)]
    opts: RrOpts,
    #[command(flatten)]
    target: TargetArgs,
}

/// The measurement's options, shared with `natm perf baseline KIND rr`.
#[derive(Args, Debug)]
pub struct RrOpts {
    /// Request size in bytes.
    #[arg(long, default_value_t = 32)]
    size: usize,
    /// Response size in bytes (default: the request size).
    #[arg(long)]
    response_size: Option<usize>,
    /// Transactions recorded per transport.
    #[arg(long, default_value_t = 100_000)]
    count: u64,
    /// Run each transport for this many seconds instead of --count transactions.
    #[arg(long, conflicts_with = "count")]
    seconds: Option<f64>,
    /// Requests in flight (pipelining).
    #[arg(long, default_value_t = 1)]
    depth: u32,
    /// Transactions per transport before recording starts.
    #[arg(long, default_value_t = 1000)]
    warmup: u64,
    #[command(flatten)]
    cpus: CpuArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Checks `opts` against `targets`.
pub fn plan(opts: &RrOpts, targets: &Targets) -> Result<rr::Plan, CliError> {
    let response_size = opts.response_size.unwrap_or(opts.size);
    let main = targets.kinds[0];
    for (name, n) in [("--size", opts.size), ("--response-size", response_size)] {
        if n == 0 {
            return Err(CliError::usage(format!(
                "{name} 0: a message is at least 1 byte"
            )));
        }
        let (max, what) = main.max_message();
        if n > max {
            return Err(CliError::usage(format!(
                "{name} {n}: {what} carries at most {max} bytes"
            )));
        }
    }
    let budget = match opts.seconds {
        Some(s) if s > 0.0 && s <= 3600.0 => rr::Budget::Time(Duration::from_secs_f64(s)),
        Some(s) => {
            return Err(CliError::usage(format!(
                "--seconds {s}: expected more than 0 and at most 3600"
            )));
        }
        None if (1..=MAX_COUNT).contains(&opts.count) => rr::Budget::Count(opts.count),
        None => {
            return Err(CliError::usage(format!(
                "--count {}: expected 1 to {MAX_COUNT}",
                opts.count
            )));
        }
    };
    if !(1..=MAX_DEPTH).contains(&opts.depth) {
        return Err(CliError::usage(format!(
            "--depth {}: expected 1 to {MAX_DEPTH}",
            opts.depth
        )));
    }
    if opts.warmup > MAX_COUNT {
        return Err(CliError::usage(format!(
            "--warmup {}: expected at most {MAX_COUNT}",
            opts.warmup
        )));
    }
    let mut kinds = vec![main];
    let mut skipped = Vec::new();
    for &k in &targets.kinds[1..] {
        if k.carries(opts.size) && k.carries(response_size) {
            kinds.push(k);
        } else {
            let (max, what) = k.max_message();
            skipped.push(format!("{k}: {what} carries at most {max} bytes"));
        }
    }
    Ok(rr::Plan {
        size: opts.size,
        response_size,
        budget,
        depth: opts.depth,
        warmup: opts.warmup,
        placement: opts.cpus.placement()?,
        kinds,
        skipped,
        natm: targets.natm.clone(),
    })
}

/// Runs `natm perf rr`.
pub fn run(args: RrArgs) -> CmdResult {
    let targets = args.target.targets()?;
    measure(&args.opts, &targets)
}

/// Measures `targets` with `opts` and prints the report.
pub fn measure(opts: &RrOpts, targets: &Targets) -> CmdResult {
    let plan = plan(opts, targets)?;
    let report = rr::run(&plan).map_err(super::failure)?;
    super::warn(&report.warnings);
    super::print_report(opts.json, &report, Report::table)
}

//! `natm perf stream`: the options of natm-bench's goodput engine ([`stream::run`]) and
//! its PNG plot ([`plot`]); the report prints its own table ([`Report::table`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use natm_bench::plot::{self, Series};
use natm_bench::stream::{self, DEFAULT_SWEEP, Report};
use natm_bench::transport::{STREAM_MAX, Targets};

use super::transport::{CpuArgs, TargetArgs};
use crate::{CliError, CmdResult};

/// Arguments of `natm perf stream`.
#[derive(Args, Debug)]
pub struct StreamArgs {
    #[command(flatten)]
    opts: StreamOpts,
    #[command(flatten)]
    target: TargetArgs,
}

/// The measurement's options, shared with `natm perf baseline KIND stream`.
#[derive(Args, Debug)]
pub struct StreamOpts {
    /// One message size in bytes (instead of the sweep).
    #[arg(long, conflicts_with = "sweep")]
    size: Option<usize>,
    /// Seconds of sending per size and transport.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Message sizes in bytes, comma separated.
    #[arg(long, default_value = DEFAULT_SWEEP)]
    sweep: String,
    /// Write a PNG plot of goodput against size to FILE.
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    #[command(flatten)]
    cpus: CpuArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Checks `opts` against `targets`.
pub fn plan(opts: &StreamOpts, targets: &Targets) -> Result<stream::Plan, CliError> {
    let main = targets.kinds[0];
    let (max, what) = main.max_message();
    let sizes = match opts.size {
        Some(n) => {
            check_size(n, "--size")?;
            if n > max {
                return Err(CliError::usage(format!(
                    "--size {n}: {what} carries at most {max} bytes"
                )));
            }
            vec![n]
        }
        None => {
            let mut sizes = Vec::new();
            for part in opts.sweep.split(',') {
                let n: usize = part.trim().parse().map_err(|_| {
                    CliError::usage(format!("--sweep {part:?}: not a whole number of bytes"))
                })?;
                check_size(n, "--sweep")?;
                sizes.push(n);
            }
            sizes
        }
    };
    if !(opts.seconds > 0.0 && opts.seconds <= 3600.0) {
        return Err(CliError::usage(format!(
            "--seconds {}: expected more than 0 and at most 3600",
            opts.seconds
        )));
    }
    Ok(stream::Plan {
        sizes,
        time: Duration::from_secs_f64(opts.seconds),
        placement: opts.cpus.placement()?,
        kinds: targets.kinds.clone(),
        natm: targets.natm.clone(),
    })
}

fn check_size(n: usize, what: &str) -> Result<(), CliError> {
    if n == 0 {
        return Err(CliError::usage(format!(
            "{what} 0: a message is at least 1 byte"
        )));
    }
    if n > STREAM_MAX {
        return Err(CliError::usage(format!(
            "{what} {n}: at most {} bytes",
            STREAM_MAX
        )));
    }
    Ok(())
}

/// Runs `natm perf stream`.
pub fn run(args: StreamArgs) -> CmdResult {
    let targets = args.target.targets()?;
    measure(&args.opts, &targets)
}

/// Measures `targets` with `opts`, prints the report and writes the plot.
pub fn measure(opts: &StreamOpts, targets: &Targets) -> CmdResult {
    let plan = plan(opts, targets)?;
    let mut report = stream::run(&plan).map_err(super::failure)?;
    super::warn(&report.warnings);
    if let Some(path) = &opts.plot {
        let series: Vec<Series> = report
            .kinds
            .iter()
            .enumerate()
            .map(|(k, &kind)| Series {
                kind,
                points: report
                    .sizes
                    .iter()
                    .filter_map(|s| {
                        s.results[k]
                            .as_ref()
                            .map(|m| (s.size, m.bits_per_sec / 1e6))
                    })
                    .collect(),
            })
            .collect();
        plot::goodput(path, &series)
            .map_err(|e| CliError::failure(format!("--plot {}: {e}", path.display())))?;
        report.plot = Some(path.display().to_string());
    }
    super::print_report(opts.json, &report, Report::table)
}

//! `natm perf link`: the options of natm-bench's link goodput engine ([`link::run`]); the
//! report prints its own table ([`link::Report::table`]).

use std::time::Duration;

use clap::Args;
use natm_bench::link::{self, Kind, MAX_SDU, Plan};
use natm_core::LineRate;

use crate::{CliError, CmdResult};

/// Arguments of `natm perf link`.
#[derive(Args, Debug)]
pub struct LinkArgs {
    /// The link: shm (shared-memory cell rings), udp (cells in datagrams over 127.0.0.1),
    /// tcp-cell (one atmtcp frame per cell over 127.0.0.1: the daemons' tcp link) or tcp
    /// (linux-atm's atmtcp framing of whole SDUs over 127.0.0.1).
    #[arg(long, default_value = "shm")]
    kind: String,
    /// SDU sizes in bytes, comma separated, each 1..=65535.
    #[arg(long, default_value = "48,512,1500,8192,65535")]
    size: String,
    /// Line rate: unlimited, oc3, oc12, 25m, ds3 or a number of cells/s.
    #[arg(long, default_value = "unlimited")]
    rate: String,
    /// Cell impairments on the sender's line, e.g. "loss=1%,ber=1e-6,seed=7" (shm and udp).
    #[arg(long)]
    impair: Option<String>,
    /// Seconds per run.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Runs per size (each natm run is paired with a TCP run).
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// Skip the kernel TCP baseline.
    #[arg(long)]
    no_baseline: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `natm perf link`.
pub fn run(args: LinkArgs) -> CmdResult {
    let plan = plan(&args)?;
    let report = link::run(&plan).map_err(super::failure)?;
    super::print_report(args.json, &report, |r| r.table(plan.runs))
}

fn plan(args: &LinkArgs) -> Result<Plan, CliError> {
    let kind = match args.kind.as_str() {
        "shm" => Kind::Shm,
        "udp" => Kind::Udp,
        "tcp" => Kind::Tcp,
        "tcp-cell" => Kind::TcpCell,
        k => {
            return Err(CliError::usage(format!(
                "--kind {k:?}: expected shm, udp, tcp-cell or tcp"
            )));
        }
    };
    let mut sizes = Vec::new();
    for part in args.size.split(',') {
        let n: usize = part.trim().parse().map_err(|_| {
            CliError::usage(format!("--size {part:?}: not a whole number of bytes"))
        })?;
        if !(1..=MAX_SDU).contains(&n) {
            return Err(CliError::usage(format!(
                "--size {n}: an AAL5 SDU is 1 to {MAX_SDU} bytes"
            )));
        }
        sizes.push(n);
    }
    let rate: LineRate = args
        .rate
        .parse()
        .map_err(|e| CliError::usage(format!("--rate {:?}: {e}", args.rate)))?;
    let impair = match &args.impair {
        None => None,
        Some(s) => {
            let imp = super::impairments(s)?;
            if kind == Kind::Tcp && !imp.is_none() {
                return Err(CliError::usage(
                    "--impair: atmtcp carries whole SDUs, not cells; cell impairments apply to \
                     --kind shm, udp and tcp-cell",
                ));
            }
            Some(imp)
        }
    };
    if !(args.seconds > 0.0 && args.seconds <= 60.0) {
        return Err(CliError::usage(format!(
            "--seconds {}: expected more than 0 and at most 60",
            args.seconds
        )));
    }
    if !(1..=50).contains(&args.runs) {
        return Err(CliError::usage(format!(
            "--runs {}: expected 1 to 50",
            args.runs
        )));
    }
    Ok(Plan {
        kind,
        sizes,
        rate,
        impair,
        run_time: Duration::from_secs_f64(args.seconds),
        runs: args.runs,
        baseline: !args.no_baseline,
    })
}

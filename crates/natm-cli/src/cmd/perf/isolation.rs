//! `natm perf isolation`: the options of natm-bench's policing-isolation engine
//! ([`isolation::run`]); the report prints its own table ([`Report::table`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use natm_bench::isolation::{self, Plan, Report};

use crate::cmd::lab;
use crate::{CliError, CmdResult};

/// `natm perf isolation`
#[derive(Args, Debug)]
pub struct IsolationArgs {
    /// Seconds of CBR traffic per phase.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// The sink link's line rate: oc3, oc12, 25m, ds3 or cells/s.
    #[arg(long, default_value = "15000")]
    sink_rate: String,
    /// The CBR connection's PCR as a percentage of the sink rate (also the VBR's PCR).
    #[arg(long, default_value_t = 20)]
    cbr_share: u32,
    /// The UBR source's rate as a multiple of its share (its adapter shapes it there);
    /// `max`: as fast as its host sends.
    #[arg(long, default_value = "10")]
    ubr_over: String,
    /// The aggressors' hosts' CPU priority: `idle` (SCHED_IDLE, as if on machines of their
    /// own) or `normal` (sharing this machine's CPUs evenly).
    #[arg(long, value_enum, default_value_t = AggressorCpu::Idle)]
    aggressor_cpu: AggressorCpu,
    /// The lab's runtime directory (default: a fresh one under the temporary directory);
    /// it must not hold a running lab, and is removed at the end.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// How the aggressors' daemons and sending threads are scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum AggressorCpu {
    /// `SCHED_IDLE`.
    Idle,
    /// `SCHED_OTHER`, like everything else.
    Normal,
}

/// Runs `natm perf isolation`.
pub fn run(args: IsolationArgs) -> CmdResult {
    if !(args.seconds.is_finite() && (0.2..=3600.0).contains(&args.seconds)) {
        return Err(CliError::usage(format!(
            "--seconds {}: use 0.2 to 3600",
            args.seconds
        )));
    }
    let plan = Plan::new(
        &args.sink_rate,
        args.cbr_share,
        &args.ubr_over,
        match args.aggressor_cpu {
            AggressorCpu::Idle => isolation::AggressorCpu::Idle,
            AggressorCpu::Normal => isolation::AggressorCpu::Normal,
        },
    )
    .map_err(super::failure)?;
    let dir = args.dir.clone().unwrap_or(plan.dir.clone());
    if dir.join("lab.json").exists() {
        return Err(CliError::usage(format!(
            "--dir {}: a lab was started there; use another directory",
            dir.display()
        )));
    }
    let plan = Plan {
        time: Duration::from_secs_f64(args.seconds),
        dir,
        natm: lab::natm_exe()?,
        ..plan
    };
    let report = isolation::run(&plan).map_err(super::failure)?;
    super::print_report(args.json, &report, Report::table)
}

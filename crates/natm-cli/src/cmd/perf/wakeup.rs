//! `natm perf wakeup`: the options of natm-bench's wake-up engine ([`wakeup::run`]), whose
//! report prints its own tables ([`Report::table`]); the hidden `natm perf spin`, the engine's disturber process.

use clap::Args;
use natm_bench::wakeup::{self, Mech, Plan, Report, SchedChoice};

use crate::{CliError, CmdResult};

const MAX_SAMPLES: u64 = 1_000_000;
const MAX_DISTURBERS: u32 = 64;

/// Arguments of `natm perf wakeup`.
#[derive(Args)]
pub struct WakeupArgs {
    /// Samples per mode in each condition (1–1000000).
    #[arg(long, default_value_t = 2000)]
    samples: u64,
    /// Notification modes, comma separated: poll, adaptive, eventfd, signal. The raw
    /// baselines they are compared with are measured with them.
    #[arg(long, default_value = "poll,adaptive,eventfd,signal")]
    modes: String,
    /// Numbers of CPU-bound disturbing processes, comma separated (each 0–64).
    #[arg(long, default_value = "0,2,4")]
    disturbers: String,
    /// Scheduling policies of the producer and consumer, comma separated: other, fifo.
    #[arg(long, default_value = "other,fifo")]
    sched: String,
    /// Seed of the gaps between samples.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// Splits a comma-separated option into its items, refusing empty items and repeats.
fn list<T: PartialEq>(
    option: &str,
    text: &str,
    parse: impl Fn(&str) -> Option<T>,
    expected: &str,
) -> Result<Vec<T>, CliError> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim) {
        let v = parse(item)
            .ok_or_else(|| CliError::usage(format!("{option}: {item:?} is not {expected}")))?;
        if out.contains(&v) {
            return Err(CliError::usage(format!("{option}: {item:?} given twice")));
        }
        out.push(v);
    }
    Ok(out)
}

fn plan(args: &WakeupArgs) -> Result<Plan, CliError> {
    if !(1..=MAX_SAMPLES).contains(&args.samples) {
        return Err(CliError::usage(format!(
            "--samples: {} is outside 1..={MAX_SAMPLES}",
            args.samples
        )));
    }
    let modes = list(
        "--modes",
        &args.modes,
        |s| Mech::MODES.into_iter().find(|m| m.name() == s),
        "a mode (poll, adaptive, eventfd, signal)",
    )?;
    let disturbers = list(
        "--disturbers",
        &args.disturbers,
        |s| s.parse::<u32>().ok().filter(|&n| n <= MAX_DISTURBERS),
        "a number of processes from 0 to 64",
    )?;
    let scheds = list(
        "--sched",
        &args.sched,
        |s| match s {
            "other" => Some(SchedChoice::Other),
            "fifo" => Some(SchedChoice::Fifo),
            _ => None,
        },
        "a policy (other, fifo)",
    )?;
    let natm = std::env::current_exe()
        .map_err(|e| CliError::failure(format!("finding natm's binary: {e}")))?;
    Ok(Plan {
        samples: args.samples,
        modes,
        disturbers,
        scheds,
        seed: args.seed,
        natm,
    })
}

/// Runs `natm perf wakeup`.
pub fn run(args: WakeupArgs) -> CmdResult {
    let plan = plan(&args)?;
    let report = wakeup::run(&plan).map_err(super::failure)?;
    super::print_report(args.json, &report, Report::table)
}

/// Arguments of the hidden `natm perf spin`: one CPU-bound disturber.
#[derive(Args)]
pub struct SpinArgs {
    /// How long to spin before exiting (1–3600 s).
    #[arg(long)]
    seconds: u64,
    /// The process that started this one: exit at once if it is gone.
    #[arg(long)]
    parent: Option<u32>,
}

/// Spins on one CPU for `--seconds`, then exits; dies with its parent (`PR_SET_PDEATHSIG`).
pub fn spin(args: SpinArgs) -> CmdResult {
    if !(1..=3600).contains(&args.seconds) {
        return Err(CliError::usage(format!(
            "--seconds: {} is outside 1..=3600",
            args.seconds
        )));
    }
    wakeup::spin(args.seconds, args.parent).map_err(super::failure)
}

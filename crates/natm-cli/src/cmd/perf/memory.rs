//! `natm perf memory`: the options of natm-bench's memory engine ([`memory::run`]); the
//! report prints its own table ([`Report::table`]).

use clap::Args;
use natm_bench::memory::{self, MAX_XCS, Plan, Report, VCI_PER_VPI};

use crate::{CliError, CmdResult};

/// Arguments of `natm perf memory`.
#[derive(Args, Debug)]
pub struct MemoryArgs {
    /// Cross-connects in the switch.
    #[arg(long, default_value_t = 65_536)]
    xcs: u32,
    /// Channels opened on the host daemon.
    #[arg(long, default_value_t = 1000)]
    channels: u32,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `natm perf memory`.
pub fn run(args: MemoryArgs) -> CmdResult {
    if args.xcs > MAX_XCS {
        return Err(CliError::usage(format!(
            "--xcs {}: at most {MAX_XCS} (256 VPIs of {VCI_PER_VPI} VCIs)",
            args.xcs
        )));
    }
    let max_channels = natm_host::hostd::MAX_CHANNELS as u32;
    if args.channels > max_channels {
        return Err(CliError::usage(format!(
            "--channels {}: hostd holds at most {max_channels}",
            args.channels
        )));
    }
    let natm = std::env::current_exe()
        .map_err(|e| CliError::failure(format!("cannot find this executable: {e}")))?;
    let plan = Plan {
        xcs: args.xcs,
        channels: args.channels,
        natm,
    };
    let report = memory::run(&plan).map_err(super::failure)?;
    super::print_report(args.json, &report, Report::table)
}

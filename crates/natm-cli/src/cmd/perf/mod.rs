//! `natm perf`: measurements of natm's parts on this machine, each beside a baseline
//! measured in the same run.
//!
//! * `natm perf wakeup`: how long from a cell's arrival until the application runs, in
//!   each notification mode, beside raw eventfd and signal wake-ups ([`wakeup`]).

use clap::Subcommand;

use crate::CmdResult;

pub mod wakeup;

/// `natm perf …`
#[derive(Subcommand)]
pub enum PerfCommand {
    /// Wake-up latency from cell arrival to the application running, per notification
    /// mode, beside raw eventfd and signal wake-ups measured in the same run.
    Wakeup(wakeup::WakeupArgs),
    /// A CPU-bound disturber for the measurements: spins for `--seconds`, then exits.
    #[command(hide = true)]
    Spin(wakeup::SpinArgs),
}

/// Runs a `natm perf` subcommand.
pub fn run(command: PerfCommand) -> CmdResult {
    match command {
        PerfCommand::Wakeup(args) => wakeup::run(args),
        PerfCommand::Spin(args) => wakeup::spin(args),
    }
}

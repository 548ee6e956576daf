//! `natm perf`: measurements of natm's parts on this machine, each beside a baseline
//! measured in the same run.
//!
//! * `natm perf wakeup`: how long from a cell's arrival until the application runs, in
//!   each notification mode, beside raw eventfd and signal wake-ups ([`wakeup`]).
//! * `natm perf link`: AAL5 goodput application → adapter → link → adapter → application
//!   over shm, UDP or atmtcp, beside kernel TCP over loopback ([`link`], [`baseline`]).

use clap::Subcommand;

use crate::CmdResult;

pub mod baseline;
pub mod link;
pub mod wakeup;

/// `natm perf …`
#[derive(Subcommand)]
pub enum PerfCommand {
    /// Wake-up latency from cell arrival to the application running, per notification
    /// mode, beside raw eventfd and signal wake-ups measured in the same run.
    Wakeup(wakeup::WakeupArgs),
    /// AAL5 goodput from application to application through the adapters and one link
    /// (shm, udp or tcp), beside kernel TCP over loopback measured in the same run.
    Link(link::LinkArgs),
    /// A CPU-bound disturber for the measurements: spins for `--seconds`, then exits.
    #[command(hide = true)]
    Spin(wakeup::SpinArgs),
}

/// Runs a `natm perf` subcommand.
pub fn run(command: PerfCommand) -> CmdResult {
    match command {
        PerfCommand::Wakeup(args) => wakeup::run(args),
        PerfCommand::Link(args) => link::run(args),
        PerfCommand::Spin(args) => wakeup::spin(args),
    }
}

/// Pins the calling thread to `cpu` if one is given. Best effort: a refused pin (a container
/// may forbid it) leaves an unpinned run, which still measures, only more noisily.
pub(crate) fn pin(cpu: Option<usize>) {
    if let Some(cpu) = cpu {
        let _ = natm_nic::sched::pin_current_thread(cpu);
    }
}

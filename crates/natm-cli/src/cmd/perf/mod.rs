//! `natm perf`: measurements of natm's parts on this machine, each beside a baseline
//! measured in the same run. The engines are natm-bench's ([`natm_bench`]); each module
//! here parses its subcommand's options into the engine's plan and prints its report as
//! the report's own table (each natm-bench report's `table`) or as JSON (`--json`).
//!
//! * `natm perf wakeup`: how long from a cell's arrival until the application runs, in
//!   each notification mode, beside raw eventfd and signal wake-ups ([`wakeup`]).
//! * `natm perf link`: AAL5 goodput application → adapter → link → adapter → application
//!   over shm, UDP or atmtcp, beside kernel TCP over loopback ([`link`]).
//! * `natm perf rr`: request/response latency quantiles and transaction rate ([`rr`]);
//!   `natm perf stream`: one-way goodput over a sweep of message sizes, with a PNG plot
//!   ([`stream`], [`natm_bench::plot`]). Both measure a natm-bench transport: natm, or the kernel's
//!   UDP, TCP and Unix `SOCK_SEQPACKET` loopback, measured beside natm in the same run
//!   ([`transport`] holds their options); `natm perf baseline udp|tcp|unix rr|stream`
//!   measures one of them alone.
//! * `natm perf switch`: the switch daemon's forwarding loop on one core beside bare
//!   shared-memory rings ([`switch`]); `natm perf memory`: the daemons' resident sizes and
//!   the switch's state per VC against issue 5's goals ([`memory`]); `natm perf paths`:
//!   round-trip time and throughput of the daemon path against the direct path over a
//!   sweep of sizes, beside the kernel's UDP and TCP ([`paths`]).
//! * `natm perf isolation` ([`isolation`]) and `natm perf calibrate` ([`calibrate`]).
//! * `natm perf calls`: switched VCs' set-up latency and set-up + release rate between two
//!   hosts of the lab, beside TCP connect + accept + close on loopback ([`calls`]); `natm perf rr
//!   --svc` and `natm perf stream --svc` measure a switched VC instead of the PVC.
//! * `natm perf transport`: goodput of natm's transport channel (`natm::transport`) per
//!   service and message size between two hosts of the lab, beside kernel TCP
//!   ([`tchannel`]).

use clap::{Args, Subcommand};

use crate::{CliError, CmdResult};

pub mod calibrate;
pub mod calls;
pub mod isolation;
pub mod link;
pub mod memory;
pub mod paths;
pub mod rr;
pub mod stream;
pub mod switch;
pub mod tchannel;
pub mod transport;
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
    /// Request/response latency (p50 … p99.9, max) and transactions/s, natm beside kernel
    /// baselines measured in the same run.
    Rr(rr::RrArgs),
    /// One-way goodput (ttcp-like) over a sweep of message sizes, natm beside kernel
    /// baselines measured in the same run; optionally a PNG plot.
    Stream(stream::StreamArgs),
    /// Switch forwarding on one core (end to end and the loop alone) beside bare
    /// shared-memory rings measured in the same run.
    Switch(switch::SwitchArgs),
    /// Resident size of switchd with 65,536 cross-connects and of hostd with 1,000
    /// channels, and the switch core's state per VC, against issue 5's goals.
    Memory(memory::MemoryArgs),
    /// Round-trip time and throughput per message size, daemon path against direct path,
    /// beside kernel UDP and TCP measured in the same run; optionally PNG plots.
    Paths(paths::PathsArgs),
    /// Switched VCs: set-up latency (p50, p99) and set-up + release rate between two hosts
    /// of the lab (two of one switch, or --farthest), several calls outstanding, beside TCP
    /// connect + accept + close on loopback measured in the same run.
    Calls(calls::CallsArgs),
    /// Goodput of natm's transport channel (issue 25) between two hosts of the lab on a
    /// PVC, for one service, at one message size or over the seed's sweep (64 B to 80 KiB,
    /// with the half-power point), several runs each, beside kernel TCP on loopback, the
    /// AAL5 ceiling and the seed's quoted figures; a guaranteed channel's rate against the
    /// requested one (--with-bulk: beside a reliable bulk flow); --rr: the 8-byte round
    /// trip of a reliable channel beside the raw AAL5 one.
    Transport(tchannel::TransportArgs),
    /// A kernel loopback baseline alone: udp, tcp or unix, then rr or stream.
    Baseline(BaselineArgs),
    /// Policing isolation through the switch: a conforming CBR connection alone, then beside
    /// a VBR source at 2x its PCR and a UBR flood (its own lab, taken down at the end).
    Isolation(isolation::IsolationArgs),
    /// The simulator's host costs measured on the real adapter path: CPU time per SDU sent
    /// and received over sizes 40 B to 16 KiB, fitted to fixed + per-byte, and the eventfd
    /// wake-up; written as a calibration file (natm-sim's calib format).
    Calibrate(calibrate::CalibrateArgs),
    /// A CPU-bound disturber for the measurements: spins for `--seconds`, then exits.
    #[command(hide = true)]
    Spin(wakeup::SpinArgs),
}

/// Runs a `natm perf` subcommand.
pub fn run(command: PerfCommand) -> CmdResult {
    match command {
        PerfCommand::Wakeup(args) => wakeup::run(args),
        PerfCommand::Link(args) => link::run(args),
        PerfCommand::Rr(args) => rr::run(args),
        PerfCommand::Stream(args) => stream::run(args),
        PerfCommand::Switch(args) => switch::run(args),
        PerfCommand::Memory(args) => memory::run(args),
        PerfCommand::Paths(args) => paths::run(args),
        PerfCommand::Baseline(args) => baseline_run(args),
        PerfCommand::Spin(args) => wakeup::spin(args),
        PerfCommand::Isolation(args) => isolation::run(args),
        PerfCommand::Calibrate(args) => calibrate::run(args),
        PerfCommand::Calls(args) => calls::run(args),
        PerfCommand::Transport(args) => tchannel::run(args),
    }
}

/// A measurement's failure, as the command reports it (exit status 1).
pub(crate) fn failure(e: natm_bench::Error) -> CliError {
    match e {
        // A plan the engine refused names the flags that made it: a usage error (exit 2).
        natm_bench::Error::Plan(m) => CliError::usage(m),
        e => CliError::failure(e.to_string()),
    }
}

/// `--impair`'s text as natm-netem's impairments, or the usage error naming it.
pub(crate) fn impairments(spec: &str) -> Result<natm_netem::Impairments, CliError> {
    spec.parse()
        .map_err(|e| CliError::usage(format!("--impair {spec:?}: {e}")))
}

/// Prints a run's placement warnings on stderr (the JSON report carries them too).
pub(crate) fn warn(warnings: &[String]) {
    for w in warnings {
        eprintln!("natm perf: warning: {w}");
    }
}

/// Prints a command's report: pretty JSON with `--json`, else its table.
pub(crate) fn print_report<R: serde::Serialize>(
    json: bool,
    report: &R,
    table: impl FnOnce(&R) -> String,
) -> CmdResult {
    if json {
        let text = serde_json::to_string_pretty(report)
            .map_err(|e| CliError::failure(format!("JSON: {e}")))?;
        println!("{text}");
    } else {
        print!("{}", table(report));
    }
    Ok(())
}

/// `natm perf baseline KIND rr|stream …`
#[derive(Args)]
pub struct BaselineArgs {
    /// The kernel transport: udp, tcp or unix.
    transport: String,
    #[command(subcommand)]
    measure: BaselineMeasure,
}

/// What `natm perf baseline` measures.
#[derive(Subcommand)]
pub enum BaselineMeasure {
    /// Request/response latency and rate.
    Rr(rr::RrOpts),
    /// One-way goodput.
    Stream(stream::StreamOpts),
}

fn baseline_run(args: BaselineArgs) -> CmdResult {
    let kind = transport::parse_kind(&args.transport, "transport", false)?;
    let targets = natm_bench::transport::Targets::kernel(kind);
    match args.measure {
        BaselineMeasure::Rr(opts) => rr::measure(&opts, &targets),
        BaselineMeasure::Stream(opts) => stream::measure(&opts, &targets),
    }
}

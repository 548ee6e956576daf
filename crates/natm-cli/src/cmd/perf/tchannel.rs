//! `natm perf transport`: the options of natm-bench's transport-channel goodput engine
//! ([`channel::run`]); the report prints its own table ([`Report::table`]).

use clap::Args;
use natm::transport::Service;
use natm_bench::channel::{self, Budget, DEFAULT_SWEEP, MAX_SIZE, Report, Target};
use natm_core::addr::{AddrSyntax, PvcAddr};

use super::transport::CpuArgs;
use crate::cmd::call::{parse_path, parse_qos};
use crate::cmd::transfer::parse_service;
use crate::{CliError, CmdResult};

/// Arguments of `natm perf transport`.
#[derive(Args, Debug)]
pub struct TransportArgs {
    /// The channel's service: reliable, best-effort or guaranteed:RATE (cells/s).
    #[arg(long)]
    service: String,
    /// One message size in bytes (instead of the sweep).
    #[arg(long, conflicts_with = "sweep")]
    size: Option<usize>,
    /// Measure the seed's range instead: 64, 256, 1024, 2048, 4096, 8192, 32768 and
    /// 81920 bytes, with the half-power point (the default when --size is not given).
    #[arg(long)]
    sweep: bool,
    /// Messages sent per size and transport (instead of --seconds).
    #[arg(long, conflicts_with = "seconds")]
    count: Option<u64>,
    /// Seconds of sending per size and transport (default 2).
    #[arg(long)]
    seconds: Option<f64>,
    /// Measure no kernel TCP baseline.
    #[arg(long)]
    no_baseline: bool,
    /// The PVC both hosts open, `[itf.]vpi.vci`.
    #[arg(long, default_value = "0.100")]
    vc: String,
    /// The VC's QoS in qos(7) form (default ubr; cbr:pcr=RATE for guaranteed:RATE).
    #[arg(long)]
    qos: Option<String>,
    /// The data path: auto, direct, daemon or lane.
    #[arg(long, default_value = "auto")]
    path: String,
    /// The sender's host: a host name (its daemon's default socket) or a socket path.
    #[arg(long, default_value = "h1")]
    sender_host: String,
    /// The receiver's host, likewise.
    #[arg(long, default_value = "h2")]
    receiver_host: String,
    #[command(flatten)]
    cpus: CpuArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Checks the options (exit 2 naming the one that is wrong).
fn plan(a: &TransportArgs) -> Result<channel::Plan, CliError> {
    let service = parse_service(&a.service)?;
    let sizes = match a.size {
        Some(n) if n == 0 || n > MAX_SIZE => {
            return Err(CliError::usage(format!(
                "--size {n}: expected 1 to {MAX_SIZE} bytes"
            )));
        }
        Some(n) => vec![n],
        None => DEFAULT_SWEEP.to_vec(),
    };
    let budget = match (a.count, a.seconds) {
        (Some(0), _) => return Err(CliError::usage("--count 0: expected 1 or more messages")),
        (Some(n), _) => Budget::Count(n),
        (None, Some(s)) if !(s.is_finite() && s > 0.0 && s <= 3600.0) => {
            return Err(CliError::usage(format!(
                "--seconds {s}: expected more than 0 and at most 3600"
            )));
        }
        (None, Some(s)) => Budget::Seconds(s),
        (None, None) => Budget::Seconds(2.0),
    };
    let vc = PvcAddr::parse_with(&a.vc, AddrSyntax::EXACT)
        .map_err(|e| CliError::usage(format!("--vc {:?}: {e}", a.vc)))?;
    let qos = match (&a.qos, service) {
        (Some(q), _) => parse_qos(q, "--qos")?,
        (None, Service::Guaranteed { rate }) => parse_qos(&format!("cbr:pcr={rate}"), "--qos")?,
        (None, _) => parse_qos("ubr", "--qos")?,
    };
    let path = parse_path(&a.path)?;
    Ok(channel::Plan {
        service,
        sizes,
        budget,
        placement: a.cpus.placement()?,
        target: Target {
            vc,
            qos,
            path,
            sender_host: a.sender_host.clone(),
            receiver_host: a.receiver_host.clone(),
        },
        baseline: !a.no_baseline,
    })
}

/// Runs `natm perf transport`.
pub fn run(args: TransportArgs) -> CmdResult {
    let plan = plan(&args)?;
    let report = channel::run(&plan).map_err(super::failure)?;
    super::warn(&report.warnings);
    super::print_report(args.json, &report, Report::table)
}

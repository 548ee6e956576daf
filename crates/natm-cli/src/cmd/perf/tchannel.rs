//! `natm perf transport`: the options of natm-bench's transport-channel goodput engine
//! ([`channel::run`], its plot [`channel::plot`]) and of its round-trip mode
//! ([`channel::rr::run`], `--rr`); the reports print their own tables. `--impair` and the
//! line rate read from the lab are the engine's ([`channel::Plan::impair`],
//! [`channel::Plan::line`]); this module only checks their text (exit 2).

use std::path::PathBuf;

use clap::Args;
use natm_bench::channel::{self, Budget, DEFAULT_SWEEP, MAX_RUNS, MAX_SIZE, Report, Target};
use natm_core::LineRate;
use natm_core::addr::{AddrSyntax, PvcAddr};

use super::transport::CpuArgs;
use crate::cmd::call::{parse_path, parse_qos};
use crate::cmd::transfer::{channel_qos, parse_service};
use crate::{CliError, CmdResult};

/// Arguments of `natm perf transport`.
#[derive(Args, Debug)]
pub struct TransportArgs {
    /// The channel's service: reliable, best-effort or guaranteed:RATE (cells/s of the
    /// TPDUs' frames). Not with --rr (always reliable).
    #[arg(long, required_unless_present = "rr", conflicts_with = "rr")]
    service: Option<String>,
    /// Measure the 8-byte round trip of a reliable channel beside the raw AAL5 one on the
    /// same PVC and path instead of goodput; --count is then the round trips recorded per
    /// run and kind (default 10000).
    #[arg(long, conflicts_with_all = ["size", "sweep", "seconds", "no_baseline", "plot", "with_bulk"])]
    rr: bool,
    /// Runs per size (natm and TCP alternating; the table gives the median and min-max),
    /// or per kind with --rr.
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// Write a PNG of goodput against message size: natm's medians with the runs' spread,
    /// TCP's, the AAL5 ceiling and the seed's quoted points and fitted curve.
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// The line rate for the AAL5 ceiling: oc3, oc12, 25m, ds3, a number of cells/s or
    /// unlimited (no ceiling). Default: the sender's host link's, as its hostd reports it.
    #[arg(long)]
    line_rate: Option<String>,
    /// Impair the path for the run, in natm-netem's grammar (the lab topology's `impair`),
    /// e.g. "loss=0.1%" or "burst=0.1%/8,ber=1e-6": both hosts' hostd impair the cells they
    /// send (the data crosses the sender's link, the acks the receiver's) and clear it
    /// afterwards, also when the run fails. The lane path bypasses hostd's link: --path auto
    /// becomes direct, lane is refused. Not with --rr.
    #[arg(long, value_name = "SPEC", conflicts_with = "rr")]
    impair: Option<String>,
    /// During every run a reliable bulk transfer between the same two hosts on a second
    /// PVC (--bulk-vc) shares the link; the table adds its goodput.
    #[arg(long)]
    with_bulk: bool,
    /// The bulk transfer's PVC (default: --vc's VCI + 1), UBR.
    #[arg(long, requires = "with_bulk")]
    bulk_vc: Option<String>,
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
    /// Seconds of sending per run of a size and transport (default 2).
    #[arg(long)]
    seconds: Option<f64>,
    /// Measure no kernel TCP baseline.
    #[arg(long)]
    no_baseline: bool,
    /// The PVC both hosts open, `[itf.]vpi.vci`.
    #[arg(long, default_value = "0.100")]
    vc: String,
    /// The VC's QoS in qos(7) form (default ubr; for guaranteed:RATE cbr:pcr=RATE×1.25, the
    /// headroom the channel's bucket needs to keep its rate).
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

/// Checks --runs (exit 2 naming it).
fn runs(a: &TransportArgs) -> Result<u32, CliError> {
    if (1..=MAX_RUNS).contains(&a.runs) {
        Ok(a.runs)
    } else {
        Err(CliError::usage(format!(
            "--runs {}: expected 1 to {MAX_RUNS}",
            a.runs
        )))
    }
}

/// Checks the options (exit 2 naming the one that is wrong).
fn plan(a: &TransportArgs) -> Result<channel::Plan, CliError> {
    let service = parse_service(a.service.as_deref().unwrap_or_default())?;
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
    let qos = channel_qos(a.qos.as_deref(), service)?;
    let path = parse_path(&a.path)?;
    let line = match &a.line_rate {
        None => None,
        Some(r) => Some(r.parse::<LineRate>().map_err(|_| {
            CliError::usage(format!(
                "--line-rate {r:?}: expected oc3, oc12, 25m, ds3, a number of cells/s above 0 \
                 or unlimited"
            ))
        })?),
    };
    // The engine refuses --path lane with it (a lane bypasses hostd's impaired link).
    let impair = a.impair.as_deref().map(super::impairments).transpose()?;
    let bulk = if a.with_bulk {
        let bulk_vc = match &a.bulk_vc {
            Some(b) => PvcAddr::parse_with(b, AddrSyntax::EXACT)
                .map_err(|e| CliError::usage(format!("--bulk-vc {b:?}: {e}")))?,
            None => next_vc(vc)?,
        };
        if bulk_vc == vc {
            return Err(CliError::usage(format!(
                "--bulk-vc {bulk_vc}: the bulk flow needs a PVC of its own, not --vc's"
            )));
        }
        Some((bulk_vc, parse_qos("ubr", "--bulk-vc")?))
    } else {
        None
    };
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
        runs: runs(a)?,
        line,
        impair,
        bulk,
    })
}

/// The PVC after `vc`: its VCI + 1.
fn next_vc(vc: PvcAddr) -> Result<PvcAddr, CliError> {
    let text = vc.to_string();
    let (head, vci) = text.rsplit_once('.').unwrap_or(("", &text));
    let next = vci
        .parse::<u32>()
        .ok()
        .and_then(|v| v.checked_add(1))
        .map(|v| format!("{head}.{v}"))
        .and_then(|t| PvcAddr::parse_with(&t, AddrSyntax::EXACT).ok());
    next.ok_or_else(|| {
        CliError::usage(format!(
            "--with-bulk: VC {vc} has no next VCI; give --bulk-vc"
        ))
    })
}

/// The round-trip mode's plan (`--rr`).
fn rr_plan(a: &TransportArgs) -> Result<channel::rr::Plan, CliError> {
    let count = match a.count {
        Some(0) => return Err(CliError::usage("--count 0: expected 1 or more round trips")),
        Some(n) if n > 10_000_000 => {
            return Err(CliError::usage(format!(
                "--count {n}: expected at most 10000000 round trips"
            )));
        }
        Some(n) => n,
        None => 10_000,
    };
    let vc = PvcAddr::parse_with(&a.vc, AddrSyntax::EXACT)
        .map_err(|e| CliError::usage(format!("--vc {:?}: {e}", a.vc)))?;
    let qos = parse_qos(a.qos.as_deref().unwrap_or("ubr"), "--qos")?;
    Ok(channel::rr::Plan {
        target: Target {
            vc,
            qos,
            path: parse_path(&a.path)?,
            sender_host: a.sender_host.clone(),
            receiver_host: a.receiver_host.clone(),
        },
        count,
        warmup: (count / 10).clamp(1, 1000),
        runs: runs(a)?,
        placement: a.cpus.placement()?,
    })
}

/// Runs `natm perf transport`.
pub fn run(args: TransportArgs) -> CmdResult {
    if args.rr {
        let plan = rr_plan(&args)?;
        let report = channel::rr::run(&plan).map_err(super::failure)?;
        super::warn(&report.warnings);
        return super::print_report(args.json, &report, channel::rr::Report::table);
    }
    let plan = plan(&args)?;
    let mut report = channel::run(&plan).map_err(super::failure)?;
    if let Some(path) = &args.plot {
        channel::plot(&report, path)
            .map_err(|e| CliError::failure(format!("--plot {}: {e}", path.display())))?;
        report.plot = Some(path.display().to_string());
    }
    super::warn(&report.warnings);
    super::print_report(args.json, &report, Report::table)
}

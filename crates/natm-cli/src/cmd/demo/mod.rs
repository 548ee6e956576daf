//! `natm demo`: the README's first command. It brings up a natm network on this machine,
//! measures it beside the kernel's loopback in the same run, and takes it down again.
//!
//! The steps, each explained as it runs:
//!
//! 1. the default lab ([`super::lab`]: switch s1, hosts h1 and h2 on shared-memory links, UBR
//!    PVCs 0.100–0.109) in a runtime directory of its own (a fresh one under the temp
//!    directory, or `--dir`), its links at `--rate`; without one, the whole demo runs
//!    twice, at OC-3c (the seeds' line rate: goodput as a share of the AAL5 ceiling, the
//!    round trip beside the four-cell floor) and at `unlimited` (what the machine can do,
//!    beside the kernel), a table each;
//! 2. a CBR PVC 0.200 (PCR 100,000 cells/s) added through s1's management socket beside
//!    the UBR PVC 0.100; both opened from h1 and h2, one SDU each way. Its UPC tags by
//!    default: s1's CBR.1 policer runs at CDVT 0 and cells reach it in the link's batches,
//!    so with `discard` (the hidden `--cbr-upc discard`) most 8 KiB frames lose a cell;
//!    the policer's counters are reported;
//! 3. on each of the two PVCs: OAM F5 end-to-end loopback (I.610 §10.2.4),
//!    request/response of 32 bytes and one-way goodput of 8 KiB messages, measured by
//!    `natm perf`'s engine ([`natm_bench::rr::run`], [`natm_bench::stream::one_run`]);
//! 4. the kernel's UDP (request/response) and TCP (request/response and goodput) loopback,
//!    same sizes, in the same run;
//! 5. a capture of s1's port 1 (h1's link) during the pings and request/response runs,
//!    written to `--pcap` and, when tshark is installed, decoded by it (expert errors
//!    counted);
//! 6. the lab taken down in every case: at the end, on an error, on a panic (a guard's
//!    `Drop`), and on SIGINT/SIGTERM (looked at between steps, so within a step's time;
//!    exit status 130).
//!
//! Then one table; `--json` prints it as JSON (and the explanations go to stderr). The
//! goodput runs are not captured: the capture stream is one JSON line per cell, which at
//! full speed would slow the switch being measured and lose most lines anyway.
//!
//! What it is not: a benchmark. Each figure comes from a short run (a few thousand
//! transactions, one second of goodput); `natm perf` measures longer, with more options.
//!
//! `natm demo --layers` is the older walk through the layers without a network: QoS
//! text, cells and HEC (I.432), AAL5 (I.363.5), OAM cells (I.610), captures, contracts.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clap::Args;
use natm_core::qos::Qos;

use super::lab::topology;
use crate::{CliError, CmdResult};
use natm_bench::demo::network::{self, Plan};
use natm_bench::demo::{Tshark, oc3_floor_ns};

/// Options of `natm demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Runtime directory of the demo's lab, removed at the end (default: a fresh directory
    /// under the temp directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Line rate of the lab's links: unlimited, oc3, oc12, 25m, ds3 or cells/s (default:
    /// both OC-3c and unlimited, one after the other).
    #[arg(long)]
    rate: Option<String>,
    /// Where to write the capture (default: natm-demo.pcap in the temp directory).
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Print the table as JSON on stdout (the explanations go to stderr).
    #[arg(long)]
    json: bool,
    /// Instead: the walk through the layers (QoS text, cells, AAL5, OAM, captures,
    /// contracts) without a network.
    #[arg(long, conflicts_with_all = ["dir", "json"])]
    layers: bool,
    /// With --layers: skip the speed measurement.
    #[arg(long, requires = "layers")]
    no_measure: bool,
    /// OAM loopback requests per PVC.
    #[arg(long, default_value_t = 5, hide = true)]
    pings: u32,
    /// Request/response transactions recorded per transport.
    #[arg(long, default_value_t = 3000, hide = true)]
    rr_count: u64,
    /// Seconds of each goodput run.
    #[arg(long, default_value_t = 1.0, hide = true)]
    stream_seconds: f64,
    /// The CBR PVC's peak cell rate, cells/s.
    #[arg(long, default_value_t = 100_000, hide = true)]
    cbr_pcr: u32,
    /// What s1 does with the CBR PVC's cells above its contract: tag or discard.
    #[arg(long, default_value = "tag", hide = true)]
    cbr_upc: String,
}

/// Runs `natm demo`.
pub fn run(args: DemoArgs) -> CmdResult {
    if args.layers {
        let pcap = args.pcap.unwrap_or_else(network::default_pcap);
        return natm_bench::demo::layers::walk(
            &mut std::io::stdout().lock(),
            &pcap,
            args.no_measure,
        )
        .map_err(|e| CliError::failure(e.to_string()));
    }
    network(&args)
}

/// Prints lines of explanation: on stdout, or on stderr when stdout carries JSON.
struct Say {
    json: bool,
}

impl Say {
    fn lines(&self, text: &str) {
        if self.json {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
    }
}

/// A step's failure as the command reports it; an interruption exits 130 (128 + SIGINT,
/// as a shell reports a command Ctrl-C stopped).
fn failed(e: natm_bench::Error) -> CliError {
    match e {
        natm_bench::Error::Interrupted => CliError {
            code: 130,
            message: e.to_string(),
        },
        e => CliError::failure(e.to_string()),
    }
}

fn usage_secs(what: &str, v: f64) -> Result<Duration, CliError> {
    if !(v.is_finite() && v > 0.0 && v <= 60.0) {
        return Err(CliError::usage(format!(
            "{what} {v}: expected more than 0 and at most 60 seconds"
        )));
    }
    Ok(Duration::from_secs_f64(v))
}

/// A fresh directory name under the temp directory, for the demo's lab.
fn fresh_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    std::env::temp_dir().join(format!("natm-demo-{}-{nanos:09}", std::process::id()))
}

/// The demo's plan from the options, its links at `rate`.
fn plan(args: &DemoArgs, rate: &str) -> Result<Plan, CliError> {
    let stream_time = usage_secs("--stream-seconds", args.stream_seconds)?;
    if args.pings == 0 || args.pings > 1000 {
        return Err(CliError::usage(format!(
            "--pings {}: expected 1 to 1000",
            args.pings
        )));
    }
    if args.rr_count == 0 || args.rr_count > 10_000_000 {
        return Err(CliError::usage(format!(
            "--rr-count {}: expected 1 to 10000000",
            args.rr_count
        )));
    }
    let cbr_text = format!("cbr:pcr={}", args.cbr_pcr);
    if !matches!(args.cbr_upc.as_str(), "tag" | "discard") {
        return Err(CliError::usage(format!(
            "--cbr-upc {:?}: expected tag or discard",
            args.cbr_upc
        )));
    }
    let cbr_qos: Qos = cbr_text
        .parse()
        .map_err(|e| CliError::usage(format!("--cbr-pcr {}: {e}", args.cbr_pcr)))?;
    let topology = topology::Topology::parse(topology::DEFAULT_TOPOLOGY, Some(rate))
        .map_err(|e| CliError::usage(format!("--rate {rate}: {e}")))?;
    let dir = match (&args.dir, args.rate.is_some()) {
        (Some(d), true) => d.clone(),
        // Both worlds: a directory each, so that the second lab never meets the first's.
        (Some(d), false) => d.join(rate),
        (None, _) => fresh_dir(),
    };
    Ok(Plan {
        dir,
        topology,
        topology_text: topology::DEFAULT_TOPOLOGY.to_string(),
        rate: rate.to_string(),
        pcap: {
            let pcap = args.pcap.clone().unwrap_or_else(network::default_pcap);
            match args.rate {
                Some(_) => pcap,
                // Both worlds: a capture each, named after the rate.
                None => pcap.with_file_name(format!(
                    "{}-{rate}.pcap",
                    pcap.file_stem()
                        .and_then(|s| s.to_str())
                        .unwrap_or("natm-demo")
                )),
            }
        },
        pings: args.pings,
        rr_count: args.rr_count,
        stream_time,
        cbr: (cbr_text, cbr_qos),
        cbr_upc: args.cbr_upc.clone(),
        natm: super::lab::natm_exe()?,
    })
}

/// The demo's network runs (one at `--rate`, or OC-3c then unlimited): natm-bench's
/// engine, narrated as it goes, then a table each. With `--json`: one run's document, or
/// `{"runs": [...]}` for both.
fn network(args: &DemoArgs) -> CmdResult {
    let say = Say { json: args.json };
    let rates: Vec<&str> = match &args.rate {
        Some(r) => vec![r.as_str()],
        None => vec!["oc3", "unlimited"],
    };
    let plans = rates
        .iter()
        .map(|r| plan(args, r))
        .collect::<Result<Vec<_>, _>>()?;
    let stop = Arc::new(AtomicBool::new(false));
    natm_switchd::install_signal_stop(&stop)
        .map_err(|e| CliError::failure(format!("cannot install signal handlers: {e}")))?;
    let floor_ns = oc3_floor_ns();
    let mut docs = Vec::new();
    let mut tables = String::new();
    let mut decode_errors = Vec::new();
    for plan in &plans {
        if plans.len() > 1 {
            say.lines(&format!("\n=== natm demo at {} ===\n", plan.rate));
        }
        // On a thread of its own: the engines pin the thread they run on, which must not
        // hold the next run to that CPU.
        let out = std::thread::scope(|scope| {
            scope
                .spawn(|| network::run(plan, &stop, |step| say.lines(&step.narration(plan))))
                .join()
        })
        .map_err(|_| CliError::failure("the demo's run panicked"))?
        .map_err(failed)?;
        docs.push(out.json(plan, floor_ns));
        tables.push_str(&out.table(floor_ns, &plan.rate));
        if let Tshark::Decoded { errors, .. } = out.tshark
            && errors > 0
        {
            decode_errors.push(format!(
                "tshark found {errors} errors in {}",
                plan.pcap.display()
            ));
        }
    }
    if let (Some(d), None) = (&args.dir, &args.rate) {
        // The runs' directories went with their labs; the parent made for them goes too.
        let _ = std::fs::remove_dir(d);
    }
    if args.json {
        let doc = match docs.len() {
            1 => docs.remove(0),
            _ => serde_json::json!({ "runs": docs }),
        };
        let text = serde_json::to_string_pretty(&doc)
            .map_err(|e| CliError::failure(format!("JSON: {e}")))?;
        println!("{text}");
    } else {
        print!("{tables}");
    }
    if !decode_errors.is_empty() {
        return Err(CliError::failure(decode_errors.join("; ")));
    }
    Ok(())
}

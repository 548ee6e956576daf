//! `natm demo`: the README's first command. It brings up a natm network on this machine,
//! measures it beside the kernel's loopback in the same run, and takes it down again.
//!
//! The steps, each explained as it runs:
//!
//! 1. the default lab ([`super::lab`]: switch s1, hosts h1 and h2 on shared-memory links, UBR
//!    PVCs 0.100–0.109) in a runtime directory of its own (a fresh one under the temp
//!    directory, or `--dir`), its links at `--rate` (default `unlimited`, what the machine
//!    can do; the OC-3c floor is printed beside the figures);
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
use serde_json::{Value, json};

use super::lab::topology;
use crate::{CliError, CmdResult};
use natm_bench::demo::network::{
    self, Outcome, Plan, RR_SIZE, RR_WARMUP, Row, STREAM_SIZE, Step, UBR_VC, ratios,
};
use natm_bench::demo::{CBR_VC, Tshark, oc3_floor_ns};
use natm_bench::transport::DataPath;

mod layers;

/// Options of `natm demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Runtime directory of the demo's lab, removed at the end (default: a fresh directory
    /// under the temp directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Line rate of the lab's links: unlimited, oc3, oc12, 25m, ds3 or cells/s.
    #[arg(long, default_value = "unlimited")]
    rate: String,
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
        return layers::layers(args.pcap, args.no_measure);
    }
    network(&args)
}

/// Prints one line of explanation: on stdout, or on stderr when stdout carries JSON.
struct Say {
    json: bool,
}

impl Say {
    fn line(&self, text: &str) {
        if self.json {
            eprintln!("{text}");
        } else {
            println!("{text}");
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

/// The demo's plan from the options.
fn plan(args: &DemoArgs) -> Result<Plan, CliError> {
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
    let topology = topology::Topology::parse(topology::DEFAULT_TOPOLOGY, Some(&args.rate))
        .map_err(|e| CliError::usage(format!("--rate {}: {e}", args.rate)))?;
    Ok(Plan {
        dir: args.dir.clone().unwrap_or_else(fresh_dir),
        topology,
        topology_text: topology::DEFAULT_TOPOLOGY.to_string(),
        rate: args.rate.clone(),
        pcap: args.pcap.clone().unwrap_or_else(network::default_pcap),
        pings: args.pings,
        rr_count: args.rr_count,
        stream_time,
        cbr: (cbr_text, cbr_qos),
        cbr_upc: args.cbr_upc.clone(),
        natm: super::lab::natm_exe()?,
    })
}

/// The demo's network run: natm-bench's engine, narrated as it goes, then the table.
fn network(args: &DemoArgs) -> CmdResult {
    let say = Say { json: args.json };
    let plan = plan(args)?;
    let stop = Arc::new(AtomicBool::new(false));
    natm_switchd::install_signal_stop(&stop)
        .map_err(|e| CliError::failure(format!("cannot install signal handlers: {e}")))?;
    let out = network::run(&plan, &stop, |step| narrate(&say, &plan, step)).map_err(failed)?;
    let floor_ns = oc3_floor_ns();
    if args.json {
        print_json(&plan, &out, floor_ns)?;
    } else {
        print_table(&out.rows, floor_ns, &args.rate);
    }
    if let Tshark::Decoded { errors, .. } = out.tshark
        && errors > 0
    {
        return Err(CliError::failure(format!(
            "tshark found {errors} errors in {}",
            plan.pcap.display()
        )));
    }
    Ok(())
}

/// The lines of explanation of one step.
fn narrate(say: &Say, plan: &Plan, step: Step<'_>) {
    let cbr_text = &plan.cbr.0;
    match step {
        Step::LabStarting => {
            say.line(&format!(
                "1. The default lab: switch s1, hosts h1 and h2 on shared-memory links at rate {}, in {}",
                plan.rate,
                plan.dir.display()
            ));
            if plan.rate == "unlimited" {
                say.line(
                    "   (links unpaced, to show what this machine can do; OC-3c's floor is in the table)",
                );
            }
        }
        Step::LabUp(daemons) => {
            for d in daemons {
                say.line(&format!("   {:<3} {:<6} pid {}", d.name, d.role, d.pid));
            }
        }
        Step::CbrStarting { .. } => {
            say.line(&format!(
                "2. A CBR PVC {CBR_VC} ({cbr_text}, UPC {}) added through s1's management socket beside UBR {UBR_VC}",
                plan.cbr_upc
            ));
            if plan.cbr_upc == "tag" {
                say.line(
                    "   (UPC tag: s1's CBR.1 policer has CDVT 0 and cells reach it in batches, so it tags\n    \
                     cells above the PCR with CLP=1 rather than discarding them; --cbr-upc discard shows the loss)",
                );
            }
        }
        Step::CbrConnected { ports: (p1, p2), id } => say.line(&format!(
            "   s1 connected {p1}:{CBR_VC} - {p2}:{CBR_VC} (connection {id})"
        )),
        Step::Hello(text) => say.line(&format!(
            "   {text} opened on h1 and h2: one SDU h1 -> h2 and one back, both arrived whole"
        )),
        Step::CaptureStarting(p1) => say.line(&format!(
            "3. Capturing s1's port {p1} (h1's link) during the pings and request/response runs into {}",
            plan.pcap.display()
        )),
        Step::PingsStarting => say.line(&format!(
            "4. OAM F5 end-to-end loopback from h1, {} request(s) per PVC: h2's daemon answers each cell",
            plan.pings
        )),
        Step::Pinged(text, p) => say.line(&format!(
            "   {text}: {}/{} replies, RTT min/avg/max {:.1}/{:.1}/{:.1} µs",
            p.received,
            p.sent,
            us(p.min_ns),
            us(p.avg_ns),
            us(p.max_ns)
        )),
        Step::RrStarting(path) => {
            say.line(&format!(
                "5. Request/response, {RR_SIZE}-byte requests and responses, {} transactions each (after {RR_WARMUP} unrecorded), h1 -> h2 and back; the kernel's UDP and TCP loopback take turns with natm",
                plan.rr_count
            ));
            say.line(&match path {
                DataPath::Lane => "   natm's applications on their own lanes to s1 (no daemon on the data path), sleeping on eventfds".to_string(),
                _ => "   natm's applications on hostd's direct path, adaptive wait".to_string(),
            });
        }
        Step::Rr(row) => say.line(&format!(
            "   {:<15} p50 {:.1} µs, p99 {:.1} µs, {:.0} transactions/s{}",
            row.name,
            us(row.p50_ns.unwrap_or(0)),
            us(row.p99_ns.unwrap_or(0)),
            row.rr_per_sec.unwrap_or(0.0),
            if row.rr_lost > 0 {
                format!(", {} lost", row.rr_lost)
            } else {
                String::new()
            }
        )),
        Step::CaptureDone(p1, captured) => say.line(&format!(
            "   capture stopped: {} cells of s1:{p1} written{}",
            captured.cells,
            if captured.skipped > 0 {
                format!(", {} damaged lines skipped", captured.skipped)
            } else {
                String::new()
            }
        )),
        Step::StreamStarting => say.line(&format!(
            "6. One-way goodput, {STREAM_SIZE}-byte messages for {:.1} s each: natm on both PVCs, then kernel TCP",
            plan.stream_time.as_secs_f64()
        )),
        Step::Stream(row, received, sent) => say.line(&format!(
            "   {:<15} {:.1} Mbit/s ({received} of {sent} messages arrived)",
            row.name,
            row.stream_bps.unwrap_or(0.0) / 1e6,
        )),
        Step::Policed(p) => say.line(&format!(
            "   s1's policer on {CBR_VC}: {} cells in, {} tagged CLP=1, {} discarded",
            p.cells_in, p.tagged, p.dropped
        )),
        Step::TsharkStarting => say.line("7. tshark over the capture"),
        Step::Tshark(Tshark::Missing) => say.line("   tshark not installed"),
        Step::Tshark(Tshark::Failed(e)) => say.line(&format!("   tshark failed: {e}")),
        Step::Tshark(Tshark::Decoded { packets, errors }) => say.line(&format!(
            "   tshark: {packets} packets decoded, {errors} errors"
        )),
        Step::LabDown(stopped, seconds) => say.line(&format!(
            "8. Lab down: {stopped} daemons stopped, {} removed ({seconds:.1} s in all)",
            plan.dir.display()
        )),
    }
}

/// The table as JSON.
fn print_json(plan: &Plan, out: &Outcome, floor_ns: u64) -> CmdResult {
    let rows = &out.rows;
    let doc = json!({
        "rate": plan.rate,
        "dir": plan.dir,
        "pids": out.pids,
        "daemons_stopped": out.stopped,
        "rr_size": RR_SIZE,
        "stream_size": STREAM_SIZE,
        "oc3_floor_us": floor_ns as f64 / 1e3,
        "cbr": {
            "qos": plan.cbr.0,
            "upc": plan.cbr_upc,
            "policed": out.policed.as_ref().map(|p| json!({
                "cells_in": p.cells_in, "tagged": p.tagged, "dropped": p.dropped,
            })),
        },
        "rows": rows.iter().map(|r| row_json(r, rows)).collect::<Vec<_>>(),
        "pcap": {
            "path": plan.pcap,
            "cells": out.captured.cells,
            "skipped_lines": out.captured.skipped,
            "tshark": match &out.tshark {
                Tshark::Missing => Value::Null,
                Tshark::Failed(e) => json!({ "error": e }),
                Tshark::Decoded { packets, errors } => json!({ "packets": packets, "errors": errors }),
            },
        },
        "seconds": out.started.elapsed().as_secs_f64(),
    });
    let text =
        serde_json::to_string_pretty(&doc).map_err(|e| CliError::failure(format!("JSON: {e}")))?;
    println!("{text}");
    Ok(())
}

/// A ratio with two significant digits at least (natm's goodput may be 0.002× TCP's).
fn times(x: f64) -> String {
    let decimals = if x > 0.0 && x < 1.0 {
        (1.0 - x.log10().floor()).clamp(2.0, 6.0) as usize
    } else {
        2
    };
    format!("{x:.decimals$}×")
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

fn row_json(r: &Row, rows: &[Row]) -> Value {
    let (p50_ratio, stream_ratio) = ratios(r, rows);
    json!({
        "name": r.name,
        "ping_us": r.ping.map(|p| json!({
            "sent": p.sent, "received": p.received,
            "min": us(p.min_ns), "avg": us(p.avg_ns), "max": us(p.max_ns), "p50": us(p.p50_ns),
        })),
        "rr_p50_us": r.p50_ns.map(us),
        "rr_p99_us": r.p99_ns.map(us),
        "rr_per_sec": r.rr_per_sec,
        "rr_lost": r.rr_lost,
        "stream_mbit_s": r.stream_bps.map(|b| b / 1e6),
        "rr_p50_vs_kernel_udp": p50_ratio,
        "stream_vs_kernel_tcp": stream_ratio,
    })
}

fn print_table(rows: &[Row], floor_ns: u64, rate: &str) {
    let cell = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    println!();
    println!(
        "{:<16} {:>10} {:>10} {:>10} {:>11} {:>11}  ratio to kernel",
        "", "ping RTT", "rr p50", "rr p99", "rr rate", "stream"
    );
    println!(
        "{:<16} {:>10} {:>10} {:>10} {:>11} {:>11}  (p50 vs UDP, stream vs TCP)",
        "", "avg µs", "µs", "µs", "trans/s", "Mbit/s"
    );
    for r in rows {
        let (p50_ratio, stream_ratio) = ratios(r, rows);
        let ratio = match r.name.as_str() {
            "kernel UDP" => "reference for p50".to_string(),
            "kernel TCP" => format!("p50 {}; reference for stream", cell(p50_ratio.map(times))),
            _ => format!(
                "p50 {}, stream {}",
                cell(p50_ratio.map(times)),
                cell(stream_ratio.map(times))
            ),
        };
        println!(
            "{:<16} {:>10} {:>10} {:>10} {:>11} {:>11}  {ratio}",
            r.name,
            cell(r.ping.map(|p| format!("{:.1}", us(p.avg_ns)))),
            cell(r.p50_ns.map(|n| format!("{:.1}", us(n)))),
            cell(r.p99_ns.map(|n| format!("{:.1}", us(n)))),
            cell(r.rr_per_sec.map(|x| format!("{x:.0}"))),
            cell(r.stream_bps.map(|b| format!("{:.1}", b / 1e6))),
        );
    }
    let floor = format!("{:.1}", us(floor_ns));
    println!(
        "{:<16} {:>10} {:>10} {:>10} {:>11} {:>11}  four OC-3c cell times",
        "OC-3c floor", floor, floor, floor, "", ""
    );
    println!(
        "\nThe OC-3c floor is what the wire alone takes for a one-cell request and a one-cell answer\n\
         over h1-s1-h2 and back; the links here ran at {rate}. Try: natm lab up, natm ping 0.100,\n\
         natm perf rr, natm capture --port s1:1 (see README.md); natm demo --layers walks the layers."
    );
}

#[cfg(test)]
mod tests {
    use super::times;

    #[test]
    fn small_ratios_keep_two_significant_digits() {
        assert_eq!(times(2.345), "2.35×");
        assert_eq!(times(0.5), "0.50×");
        assert_eq!(times(0.05), "0.050×");
        assert_eq!(times(0.00213), "0.0021×");
        assert_eq!(times(0.0), "0.00×");
    }
}

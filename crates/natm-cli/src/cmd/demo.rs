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
//!    `natm perf`'s engine ([`rr::execute`], [`stream::one_run`]);
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

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clap::{Args, FromArgMatches};
use natm_adapter::{Reassembler, Reassembly};
use natm_capture::{CellRecord, LinkType, Reader, Record, RecordKind, Writer, summarize};
use natm_core::qos::Qos;
use natm_core::{HeaderFormat, PvcAddr, VcId};
use natm_switchd::client::{self, ClientError};
use natm_traffic::cac::{Cac, CacConfig};
use natm_traffic::discard::{FrameDiscard, FrameQueue};
use natm_traffic::policer::{Policer, Verdict};
use natm_traffic::rate::LineRate;
use natm_traffic::sched::{Scheduler, VcSpec};
use natm_wire::aal5::{self, MAX_SDU, Segmenter};
use natm_wire::cell::{Cell, CellHeader, HecReceiver, HecVerdict};
use natm_wire::llc::{Encapsulation, LlcHeader};
use natm_wire::oam::{Loopback, OamCell, OamFlow, OamRepr};
use serde_json::{Value, json};

use super::lab::{OwnedLab, topology};
use super::perf::transport::{DataPath, Kind, NatmTarget, Targets, WaitMode};
use super::perf::{Progress, rr, stream};
use super::ping::quantile;
use crate::{CliError, CmdResult};

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

/// The UBR PVC of the default topology the demo measures.
const UBR_VC: &str = "0.100";
/// The CBR PVC the demo adds.
const CBR_VC: &str = "0.200";
/// The table's rows.
const ROW_UBR: usize = 0;
const ROW_CBR: usize = 1;
const ROW_UDP: usize = 2;
const ROW_TCP: usize = 3;
/// Request and response size: one cell with its AAL5 trailer (32 + 8 ≤ 48).
const RR_SIZE: usize = 32;
/// Message size of the goodput runs.
const STREAM_SIZE: usize = 8192;
/// Transactions per transport before recording (not counted).
const RR_WARMUP: u64 = 500;
/// The most cells the capture keeps (a bound on the file, about 100 bytes a cell).
const CAPTURE_MAX: u64 = 200_000;
/// How long the capture waits for more lines once it is told to stop.
const CAPTURE_QUIET: Duration = Duration::from_millis(50);
/// Wait for each OAM loopback reply, and between requests.
const PING_TIMEOUT: Duration = Duration::from_secs(1);
const PING_INTERVAL: Duration = Duration::from_millis(10);
/// tshark's expert severity "error" (`PI_ERROR`), as `-T fields` prints it.
const PI_ERROR: &str = "8388608";

/// Runs `natm demo`.
pub fn run(args: DemoArgs) -> CmdResult {
    if args.layers {
        return layers(args.pcap, args.no_measure);
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

/// An error unless SIGINT or SIGTERM came.
fn check(stop: &AtomicBool) -> CmdResult {
    if stop.load(Ordering::Relaxed) {
        // 128 + SIGINT, as a shell reports a command Ctrl-C stopped.
        return Err(CliError {
            code: 130,
            message: "interrupted (the lab is taken down, nothing is left running)".into(),
        });
    }
    Ok(())
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

/// One PVC's OAM loopback round trips.
#[derive(Clone, Copy, Debug)]
struct PingSummary {
    sent: u32,
    received: u32,
    min_ns: u64,
    avg_ns: u64,
    max_ns: u64,
    p50_ns: u64,
}

/// One row of the table.
#[derive(Debug, Default)]
struct Row {
    name: String,
    ping: Option<PingSummary>,
    p50_ns: Option<u64>,
    p99_ns: Option<u64>,
    rr_per_sec: Option<f64>,
    rr_lost: u64,
    stream_bps: Option<f64>,
}

/// The demo's network run.
fn network(args: &DemoArgs) -> CmdResult {
    let say = Say { json: args.json };
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
    let ubr_vc: PvcAddr = UBR_VC
        .parse()
        .map_err(|e| CliError::failure(format!("{UBR_VC}: {e}")))?;
    let cbr_vc: PvcAddr = CBR_VC
        .parse()
        .map_err(|e| CliError::failure(format!("{CBR_VC}: {e}")))?;
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
    let ubr_qos: Qos = "ubr"
        .parse()
        .map_err(|e| CliError::failure(format!("ubr: {e}")))?;
    let topo = topology::Topology::parse(topology::DEFAULT_TOPOLOGY, Some(&args.rate))
        .map_err(|e| CliError::usage(format!("--rate {}: {e}", args.rate)))?;
    let pcap = args
        .pcap
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("natm-demo.pcap"));
    let dir = args.dir.clone().unwrap_or_else(fresh_dir);
    let stop = Arc::new(AtomicBool::new(false));
    natm_switchd::install_signal_stop(&stop)
        .map_err(|e| CliError::failure(format!("cannot install signal handlers: {e}")))?;
    let started = Instant::now();

    say.line(&format!(
        "1. The default lab: switch s1, hosts h1 and h2 on shared-memory links at rate {}, in {}",
        args.rate,
        dir.display()
    ));
    if args.rate == "unlimited" {
        say.line(
            "   (links unpaced, to show what this machine can do; OC-3c's floor is in the table)",
        );
    }
    let mut demo_lab = OwnedLab::start(
        "natm demo",
        &dir,
        &topo,
        topology::DEFAULT_TOPOLOGY.to_string(),
        Some(args.rate.clone()),
    )?;
    let pids: Vec<i32> = demo_lab.state.daemons.iter().map(|d| d.pid).collect();
    for d in &demo_lab.state.daemons {
        say.line(&format!("   {:<3} {:<6} pid {}", d.name, d.role, d.pid));
    }
    check(&stop)?;

    let s1 = demo_lab.socket("s1")?;
    let (h1, h2) = (demo_lab.socket("h1")?, demo_lab.socket("h2")?);
    let port_of = |h: &str| {
        topo.host_link(h)
            .and_then(|(li, _)| topo.port_of("s1", li))
            .ok_or_else(|| CliError::failure(format!("no port of s1 faces {h}")))
    };
    let (p1, p2) = (port_of("h1")?, port_of("h2")?);
    say.line(&format!(
        "2. A CBR PVC {CBR_VC} ({cbr_text}, UPC {}) added through s1's management socket beside UBR {UBR_VC}",
        args.cbr_upc
    ));
    if args.cbr_upc == "tag" {
        say.line(
            "   (UPC tag: s1's CBR.1 policer has CDVT 0 and cells reach it in batches, so it tags\n    \
             cells above the PCR with CLP=1 rather than discarding them; --cbr-upc discard shows the loss)",
        );
    }
    let id = connect_cbr(&s1, (p1, p2), &cbr_text, &args.cbr_upc)?;
    say.line(&format!(
        "   s1 connected {p1}:{CBR_VC} - {p2}:{CBR_VC} (connection {id})"
    ));
    for (vc, qos, text) in [(ubr_vc, ubr_qos, UBR_VC), (cbr_vc, cbr_qos, CBR_VC)] {
        hello(&h1, &h2, vc, qos)?;
        say.line(&format!(
            "   {text} opened on h1 and h2: one SDU h1 -> h2 and one back, both arrived whole"
        ));
    }
    check(&stop)?;

    say.line(&format!(
        "3. Capturing s1's port {p1} (h1's link) during the pings and request/response runs into {}",
        pcap.display()
    ));
    let capture = CaptureRun::start(&s1, p1, &pcap)?;
    let mut rows: Vec<Row> = [
        format!("natm UBR {UBR_VC}"),
        format!("natm CBR {CBR_VC}"),
        "kernel UDP".into(),
        "kernel TCP".into(),
    ]
    .into_iter()
    .map(|name| Row {
        name,
        ..Row::default()
    })
    .collect();

    say.line(&format!(
        "4. OAM F5 end-to-end loopback from h1, {} request(s) per PVC: h2's daemon answers each cell",
        args.pings
    ));
    for (i, (vc, text)) in [(ubr_vc, UBR_VC), (cbr_vc, CBR_VC)].iter().enumerate() {
        let p = ping(&h1, *vc, args.pings, &stop)?;
        say.line(&format!(
            "   {text}: {}/{} replies, RTT min/avg/max {:.1}/{:.1}/{:.1} µs",
            p.received,
            p.sent,
            us(p.min_ns),
            us(p.avg_ns),
            us(p.max_ns)
        ));
        rows[ROW_UBR + i].ping = Some(p);
    }
    check(&stop)?;

    // On unlimited links the applications take their own lanes to the switch and sleep on
    // eventfds; a paced link is hostd's to pace, so there they use its direct path.
    let (path, mode) = if args.rate == "unlimited" {
        (DataPath::Lane, WaitMode::Eventfd)
    } else {
        (DataPath::Direct, WaitMode::Adaptive)
    };
    let target = |vc: PvcAddr, qos: Qos| NatmTarget {
        vc,
        qos,
        mode,
        path,
        client_host: h1.display().to_string(),
        server_host: h2.display().to_string(),
    };
    let ubr = Targets {
        kinds: vec![Kind::Natm, Kind::Udp, Kind::Tcp],
        natm: Some(target(ubr_vc, ubr_qos)),
    };
    let cbr = Targets {
        kinds: vec![Kind::Natm],
        natm: Some(target(cbr_vc, cbr_qos)),
    };
    say.line(&format!(
        "5. Request/response, {RR_SIZE}-byte requests and responses, {} transactions each (after {RR_WARMUP} unrecorded), h1 -> h2 and back; the kernel's UDP and TCP loopback take turns with natm",
        args.rr_count
    ));
    say.line(&match path {
        DataPath::Lane => "   natm's applications on their own lanes to s1 (no daemon on the data path), sleeping on eventfds".to_string(),
        _ => "   natm's applications on hostd's direct path, adaptive wait".to_string(),
    });
    rr_step(&say, &mut rows, [&ubr, &cbr], args.rr_count, &stop)?;
    let captured = capture.finish()?;
    say.line(&format!(
        "   capture stopped: {} cells of s1:{p1} written{}",
        captured.cells,
        if captured.skipped > 0 {
            format!(", {} damaged lines skipped", captured.skipped)
        } else {
            String::new()
        }
    ));

    say.line(&format!(
        "6. One-way goodput, {STREAM_SIZE}-byte messages for {:.1} s each: natm on both PVCs, then kernel TCP",
        stream_time.as_secs_f64()
    ));
    stream_step(&say, &mut rows, [&ubr, &cbr], args.stream_seconds, &stop)?;

    let policed = policing(&s1, &format!("{p1}:{CBR_VC}"));
    if let Some(p) = &policed {
        say.line(&format!(
            "   s1's policer on {CBR_VC}: {} cells in, {} tagged CLP=1, {} discarded",
            p.cells_in, p.tagged, p.dropped
        ));
    }

    say.line("7. tshark over the capture");
    let tshark = tshark_check(&pcap);
    match &tshark {
        Tshark::Missing => say.line("   tshark not installed"),
        Tshark::Failed(e) => say.line(&format!("   tshark failed: {e}")),
        Tshark::Decoded { packets, errors } => say.line(&format!(
            "   tshark: {packets} packets decoded, {errors} errors"
        )),
    }

    let stopped = demo_lab.down()?;
    say.line(&format!(
        "8. Lab down: {stopped} daemons stopped, {} removed ({:.1} s in all)",
        dir.display(),
        started.elapsed().as_secs_f64()
    ));

    let floor_ns = oc3_floor_ns();
    if args.json {
        let doc = json!({
            "rate": args.rate,
            "dir": dir,
            "pids": pids,
            "daemons_stopped": stopped,
            "rr_size": RR_SIZE,
            "stream_size": STREAM_SIZE,
            "oc3_floor_us": floor_ns as f64 / 1e3,
            "cbr": {
                "qos": cbr_text,
                "upc": args.cbr_upc,
                "policed": policed.as_ref().map(|p| json!({
                    "cells_in": p.cells_in, "tagged": p.tagged, "dropped": p.dropped,
                })),
            },
            "rows": rows.iter().map(|r| row_json(r, &rows)).collect::<Vec<_>>(),
            "pcap": {
                "path": pcap,
                "cells": captured.cells,
                "skipped_lines": captured.skipped,
                "tshark": match &tshark {
                    Tshark::Missing => Value::Null,
                    Tshark::Failed(e) => json!({ "error": e }),
                    Tshark::Decoded { packets, errors } => json!({ "packets": packets, "errors": errors }),
                },
            },
            "seconds": started.elapsed().as_secs_f64(),
        });
        let text = serde_json::to_string_pretty(&doc)
            .map_err(|e| CliError::failure(format!("JSON: {e}")))?;
        println!("{text}");
    } else {
        print_table(&rows, floor_ns, &args.rate);
    }
    if let Tshark::Decoded { errors, .. } = tshark
        && errors > 0
    {
        return Err(CliError::failure(format!(
            "tshark found {errors} errors in {}",
            pcap.display()
        )));
    }
    Ok(())
}

/// Adds the CBR PVC between `ports` of the switch at `s1`; returns the connection's id.
fn connect_cbr(s1: &Path, ports: (u16, u16), qos: &str, upc: &str) -> Result<String, CliError> {
    let reply = client::request(
        s1,
        &json!({
            "op": "connect",
            "a": format!("{}:{CBR_VC}", ports.0),
            "b": format!("{}:{CBR_VC}", ports.1),
            "qos": qos,
            "upc": upc,
        }),
        Duration::from_secs(2),
    )
    .map_err(|e| CliError::failure(format!("s1: {e}")))?;
    if reply.get("ok") != Some(&Value::Bool(true)) {
        return Err(CliError::failure(format!(
            "s1 refused the CBR PVC: {}",
            reply.get("error").and_then(Value::as_str).unwrap_or("?")
        )));
    }
    Ok(reply
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string())
}

/// Request/response over the UBR PVC with the kernel baselines taking turns, then over the
/// CBR PVC; fills the rows' rr columns.
fn rr_step(
    say: &Say,
    rows: &mut [Row],
    [ubr, cbr]: [&Targets; 2],
    count: u64,
    stop: &AtomicBool,
) -> CmdResult {
    let rr_opts = parse_opts::<rr::RrOpts>(
        "rr",
        &[
            "--size",
            &RR_SIZE.to_string(),
            "--count",
            &count.to_string(),
            "--warmup",
            &RR_WARMUP.min(count).to_string(),
        ],
    )?;
    for (targets, first_row) in [(ubr, ROW_UBR), (cbr, ROW_CBR)] {
        let plan = rr::plan(&rr_opts, targets)?;
        let report = rr::execute(&plan, targets)?;
        for r in &report.results {
            let row = match r.kind {
                Kind::Natm => first_row,
                Kind::Udp => ROW_UDP,
                Kind::Tcp => ROW_TCP,
                Kind::Unix => continue,
            };
            let row = &mut rows[row];
            row.p50_ns = r.latency.map(|l| l.p50_ns);
            row.p99_ns = r.latency.map(|l| l.p99_ns);
            row.rr_per_sec = Some(r.transactions_per_sec);
            row.rr_lost = r.lost;
            say.line(&format!(
                "   {:<15} p50 {:.1} µs, p99 {:.1} µs, {:.0} transactions/s{}",
                row.name,
                us(row.p50_ns.unwrap_or(0)),
                us(row.p99_ns.unwrap_or(0)),
                r.transactions_per_sec,
                if r.lost > 0 {
                    format!(", {} lost", r.lost)
                } else {
                    String::new()
                }
            ));
        }
        check(stop)?;
    }
    Ok(())
}

/// One goodput run each: natm on both PVCs, then kernel TCP; fills the stream column.
fn stream_step(
    say: &Say,
    rows: &mut [Row],
    [ubr, cbr]: [&Targets; 2],
    seconds: f64,
    stop: &AtomicBool,
) -> CmdResult {
    let stream_opts = parse_opts::<stream::StreamOpts>(
        "stream",
        &[
            "--size",
            &STREAM_SIZE.to_string(),
            "--seconds",
            &seconds.to_string(),
        ],
    )?;
    let plan = stream::plan(&stream_opts, ubr)?;
    let mut progress = Progress::new(3 * (seconds * 1e3) as u64, "stream");
    for (kind, targets, row) in [
        (Kind::Natm, ubr, ROW_UBR),
        (Kind::Natm, cbr, ROW_CBR),
        (Kind::Tcp, ubr, ROW_TCP),
    ] {
        let m = stream::one_run(kind, STREAM_SIZE, &plan, targets, &mut progress)
            .map_err(|e| CliError::failure(format!("{}: goodput run: {e}", rows[row].name)))?;
        rows[row].stream_bps = Some(m.bits_per_sec);
        say.line(&format!(
            "   {:<15} {:.1} Mbit/s ({} of {} messages arrived)",
            rows[row].name,
            m.bits_per_sec / 1e6,
            m.received_messages,
            m.sent_messages
        ));
        check(stop)?;
    }
    drop(progress);
    Ok(())
}

/// Parses `natm perf`'s options from `args`, as the command line would give them, so that
/// the engine's own checks and defaults apply.
fn parse_opts<T: Args + FromArgMatches>(name: &'static str, args: &[&str]) -> Result<T, CliError> {
    let command = T::augment_args(clap::Command::new(name).no_binary_name(true));
    let matches = command
        .try_get_matches_from(args)
        .map_err(|e| CliError::failure(format!("{name} options: {e}")))?;
    T::from_arg_matches(&matches).map_err(|e| CliError::failure(format!("{name} options: {e}")))
}

/// Opens `vc` on both hosts and sends one SDU each way.
fn hello(h1: &Path, h2: &Path, vc: PvcAddr, qos: Qos) -> CmdResult {
    let fail = |what: &str, e: natm::Error| CliError::failure(format!("{vc} {what}: {e}"));
    let a = natm::Host::connect_path(h1).map_err(|e| fail("h1", e))?;
    let b = natm::Host::connect_path(h2).map_err(|e| fail("h2", e))?;
    let options = natm::VcOptions::new(vc).qos(qos);
    let mut va = a.open(options.clone()).map_err(|e| fail("open on h1", e))?;
    let mut vb = b.open(options).map_err(|e| fail("open on h2", e))?;
    let mut buf = vec![0u8; 256];
    for forth in [true, false] {
        let (from, to, name) = if forth {
            ("h1", "h2", &b"hello from h1"[..])
        } else {
            ("h2", "h1", &b"hello from h2"[..])
        };
        let (tx, rx) = if forth {
            (&mut va, &mut vb)
        } else {
            (&mut vb, &mut va)
        };
        tx.send(name)
            .map_err(|e| fail(&format!("send on {from}"), e))?;
        let n = rx
            .recv_timeout(&mut buf, Duration::from_secs(2))
            .map_err(|e| fail(&format!("receive on {to}"), e))?;
        if &buf[..n] != name {
            return Err(CliError::failure(format!(
                "{vc}: {to} received {n} bytes that are not what {from} sent"
            )));
        }
    }
    Ok(())
}

/// `count` OAM F5 end-to-end loopbacks on `vc` from the host at `socket`.
fn ping(
    socket: &Path,
    vc: PvcAddr,
    count: u32,
    stop: &AtomicBool,
) -> Result<PingSummary, CliError> {
    let host =
        natm::Host::connect_path(socket).map_err(|e| CliError::failure(format!("h1: {e}")))?;
    let mut rtts = Vec::new();
    let mut last_error = String::new();
    for i in 0..count {
        check(stop)?;
        match host.ping(vc, natm::OamScope::EndToEnd, PING_TIMEOUT) {
            Ok(rtt) => rtts.push(rtt.as_nanos() as u64),
            Err(e) => last_error = e.to_string(),
        }
        if i + 1 < count {
            std::thread::sleep(PING_INTERVAL);
        }
    }
    if rtts.is_empty() {
        return Err(CliError::failure(format!(
            "OAM loopback on {vc}: no reply to {count} request(s): {last_error}"
        )));
    }
    rtts.sort_unstable();
    Ok(PingSummary {
        sent: count,
        received: rtts.len() as u32,
        min_ns: rtts[0],
        avg_ns: rtts.iter().sum::<u64>() / rtts.len() as u64,
        max_ns: rtts[rtts.len() - 1],
        p50_ns: quantile(&rtts, 0.5),
    })
}

/// A connection's policing counters, both directions together.
struct Policing {
    cells_in: u64,
    tagged: u64,
    dropped: u64,
}

/// The counters of the connection whose end `a` is `end` (`PORT:VPI.VCI`), from the
/// switch's status; `None` when the switch does not say.
fn policing(switch: &Path, end: &str) -> Option<Policing> {
    let status = client::request(switch, &json!({"op": "status"}), Duration::from_secs(2)).ok()?;
    let xc = status
        .get("connections")?
        .as_array()?
        .iter()
        .find(|c| c.get("a").and_then(Value::as_str) == Some(end))?;
    let sum = |field: &str| {
        ["a_to_b", "b_to_a"]
            .iter()
            .filter_map(|d| xc.get(*d)?.get(field)?.as_u64())
            .sum()
    };
    Some(Policing {
        cells_in: sum("cells_in"),
        tagged: sum("tagged"),
        dropped: sum("dropped"),
    })
}

/// What the capture wrote.
struct Captured {
    cells: u64,
    /// Lines of the capture stream that were not a cell (cut by a read timeout).
    skipped: u64,
}

/// A capture of one switch port into a pcap file, on a thread of its own.
struct CaptureRun {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Result<Captured, String>>,
}

impl CaptureRun {
    fn start(switch: &Path, port: u16, path: &Path) -> Result<CaptureRun, CliError> {
        let file = File::create(path)
            .map_err(|e| CliError::failure(format!("{}: {e}", path.display())))?;
        let mut writer = Writer::new(BufWriter::new(file), LinkType::Erf)
            .map_err(|e| CliError::failure(format!("{}: {e}", path.display())))?;
        let mut capture = client::capture(switch, port, None, CAPTURE_QUIET)
            .map_err(|e| CliError::failure(format!("capture on s1:{port}: {e}")))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let name = path.display().to_string();
        let handle = std::thread::Builder::new()
            .name("demo-capture".into())
            .spawn(move || {
                let mut got = Captured {
                    cells: 0,
                    skipped: 0,
                };
                // Once told to stop, it reads on until the stream is quiet, so the cells
                // of the last run are in the file.
                while got.cells < CAPTURE_MAX {
                    match capture.next_cell() {
                        Ok(c) => {
                            let record = Record {
                                time: natm_core::Instant::from_nanos(c.t_ns),
                                kind: RecordKind::Cell(CellRecord::from_cell(&c.cell)),
                            };
                            writer.write(&record).map_err(|e| format!("{name}: {e}"))?;
                            got.cells += 1;
                        }
                        Err(ClientError::Io { source, .. })
                            if matches!(
                                source.kind(),
                                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                            ) =>
                        {
                            if flag.load(Ordering::Relaxed) {
                                break;
                            }
                        }
                        Err(ClientError::BadReply { .. }) => got.skipped += 1,
                        Err(e) => return Err(e.to_string()),
                    }
                }
                writer.flush().map_err(|e| format!("{name}: {e}"))?;
                Ok(got)
            })
            .map_err(|e| CliError::failure(format!("cannot start the capture thread: {e}")))?;
        Ok(CaptureRun { stop, handle })
    }

    fn finish(self) -> Result<Captured, CliError> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .join()
            .map_err(|_| CliError::failure("the capture thread panicked"))?
            .map_err(|e| CliError::failure(format!("capture: {e}")))
    }
}

/// What tshark made of the capture.
enum Tshark {
    Missing,
    Failed(String),
    Decoded { packets: u64, errors: u64 },
}

/// Runs tshark over `path` and counts packets and error-level expert infos (malformed
/// packets included: tshark reports each as one).
fn tshark_check(path: &Path) -> Tshark {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-o", "erf.aal5_type:unspecified", "-T", "fields"])
        .args(["-e", "frame.number", "-e", "_ws.expert.severity"])
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Tshark::Missing,
        Err(e) => return Tshark::Failed(e.to_string()),
    };
    if !out.status.success() {
        return Tshark::Failed(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut packets, mut errors) = (0u64, 0u64);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        packets += 1;
        let severities = line.split('\t').nth(1).unwrap_or("");
        errors += severities.split(',').filter(|s| *s == PI_ERROR).count() as u64;
    }
    Tshark::Decoded { packets, errors }
}

/// Four cell times at OC-3c: a one-cell request over two links and its one-cell answer
/// back over two, without any processing.
fn oc3_floor_ns() -> u64 {
    let (n, d) = LineRate::OC3.exact();
    (4 * d as u128 * 1_000_000_000 / n as u128) as u64
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

/// natm's figure over the kernel's: rr p50 against UDP, goodput against TCP.
fn ratios(row: &Row, rows: &[Row]) -> (Option<f64>, Option<f64>) {
    let p50 = match (row.p50_ns, rows[ROW_UDP].p50_ns) {
        (Some(a), Some(b)) if b > 0 => Some(a as f64 / b as f64),
        _ => None,
    };
    let stream = match (row.stream_bps, rows[ROW_TCP].stream_bps) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    (p50, stream)
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

const MESSAGE: &[u8] = b"Hello from natm: cells, HEC, AAL5 and OAM, all in user space.";

/// The message as RFC 2684 would carry it for classical IP: LLC/SNAP, then an IPv4/UDP
/// datagram 10.0.0.1:9 → 10.0.0.2:9 (the UDP checksum is optional in IPv4 and left 0).
fn llc_udp_datagram(payload: &[u8]) -> Vec<u8> {
    let udp_len = 8 + payload.len();
    let ip_len = 20 + udp_len;
    let mut ip = vec![
        0x45,
        0,
        (ip_len >> 8) as u8,
        ip_len as u8,
        0,
        1,
        0,
        0,
        64,
        17,
        0,
        0,
    ];
    ip.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    let sum = ip
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>();
    let folded = !(((sum & 0xFFFF) + (sum >> 16)) as u16);
    ip[10..12].copy_from_slice(&folded.to_be_bytes());
    ip.extend_from_slice(&[0, 9, 0, 9, (udp_len >> 8) as u8, udp_len as u8, 0, 0]);
    ip.extend_from_slice(payload);
    let mut sdu = Vec::new();
    Encapsulation::Llc.encapsulate(LlcHeader::IPV4, &ip, &mut sdu);
    sdu
}

/// `natm demo --layers`: the walk through the layers, without the network.
fn layers(pcap: Option<PathBuf>, no_measure: bool) -> CmdResult {
    let vc = VcId::uni(0, 100).expect("0.100 is a valid UNI VC");
    let mut pdus = Vec::new();
    let mut cell_records = Vec::new();
    let mut clock = natm_core::Instant::from_nanos(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    );
    let mut stamp = |kind: RecordKind| {
        clock += natm_core::Duration::from_micros(3);
        let to = if matches!(kind, RecordKind::Cell(_)) {
            &mut cell_records
        } else {
            &mut pdus
        };
        to.push(Record { time: clock, kind });
    };

    heading("1. Traffic contracts in linux-atm's qos(7) text");
    for text in ["cbr:max_pcr=100000", "ubr:pcr=10Mbps,sdu=9188", "ubr,aal0"] {
        let qos: Qos = text
            .parse()
            .map_err(|e| CliError::failure(format!("demo QoS {text:?}: {e}")))?;
        println!("  {text:<26} -> {qos}");
    }
    let refused = "cbr:max_pcr=1x";
    if let Err(e) = refused.parse::<Qos>() {
        println!("  {refused:<26} -> refused: {e}");
    }

    heading("2. A UDP datagram, LLC/SNAP-encapsulated (RFC 2684), becomes AAL5 cells on 0.100");
    let sdu = llc_udp_datagram(MESSAGE);
    let cells: Vec<[u8; 53]> = Segmenter::uni(vc, &sdu)
        .map_err(|e| CliError::failure(e.to_string()))?
        .collect();
    println!(
        "  {} bytes (8 LLC/SNAP + 20 IPv4 + 8 UDP + {} message) + {} pad + 8 trailer = {} cells",
        sdu.len(),
        MESSAGE.len(),
        aal5::pad_len(sdu.len()),
        cells.len()
    );
    for c in &cells {
        let view = Cell::new_unchecked(&c[..]);
        let h = CellHeader::parse(&view, HeaderFormat::Uni).expect("we just built it");
        println!("  header {} hec={:#04x}  {h}", hex(&c[..4]), c[4]);
        stamp(RecordKind::Cell(CellRecord::from_cell(c)));
    }
    let mut pdu = Vec::new();
    aal5::encode_pdu(&sdu, 0, 0, &mut pdu).map_err(|e| CliError::failure(e.to_string()))?;
    stamp(RecordKind::Aal5Pdu {
        vc,
        pdu: pdu.clone(),
    });

    heading("3. The HEC corrects one header bit error and discards worse (I.432)");
    let mut rx = HecReceiver::new();
    let mut one = cells[0];
    one[2] ^= 0x10;
    let v = rx.receive(&mut Cell::new_unchecked(&mut one[..]));
    println!("  flip bit 19             -> {}", verdict(v));
    let mut again = cells[0];
    again[1] ^= 0x01;
    let v = rx.receive(&mut Cell::new_unchecked(&mut again[..]));
    println!(
        "  another error at once   -> {} (detection mode)",
        verdict(v)
    );
    let mut two = cells[1];
    two[0] ^= 0x81;
    let mut fresh = HecReceiver::new();
    let v = fresh.receive(&mut Cell::new_unchecked(&mut two[..]));
    println!("  flip two bits           -> {}", verdict(v));
    stamp(RecordKind::Cell(CellRecord::from_cell(&two)));

    heading("4. Reassembly, and the AAL5 CRC catching damage");
    let mut reasm = Reassembler::new(vc, MAX_SDU).expect("a valid max_sdu");
    let delivered = feed(&mut reasm, cells.iter());
    println!("  all cells               -> {delivered}");
    let mut flipped = cells.clone();
    flipped[0][20] ^= 0x04;
    println!(
        "  one payload bit flipped -> {}",
        feed(&mut reasm, flipped.iter())
    );
    let lost: Vec<_> = cells.iter().skip(1).collect();
    println!(
        "  first cell lost         -> {}",
        feed(&mut reasm, lost.into_iter())
    );

    heading("5. OAM F5 end-to-end loopback (I.610)");
    let request = OamRepr::Loopback(Loopback::request(0x1234_5678));
    let req_cell = request.to_cell(OamFlow::F5EndToEnd, vc);
    let payload = OamCell::new_checked(&req_cell[5..]).expect("48 bytes");
    println!(
        "  request  {} crc10={:#05x} ok={}",
        OamRepr::parse(&payload)
            .map(|r| r.to_string())
            .unwrap_or_default(),
        payload.crc10(),
        payload.verify_crc10()
    );
    let reply = match OamRepr::parse(&payload) {
        Ok(OamRepr::Loopback(l)) => OamRepr::Loopback(l.reply()),
        _ => return Err(CliError::failure("demo: the loopback cell did not parse")),
    };
    let reply_cell = reply.to_cell(OamFlow::F5EndToEnd, vc);
    println!("  reply    {reply} (the far end cleared the indication and kept the tag)");
    stamp(RecordKind::Cell(CellRecord::from_cell(&req_cell)));
    stamp(RecordKind::Cell(CellRecord::from_cell(&reply_cell)));

    heading("6. Captures Wireshark reads");
    let path = pcap.unwrap_or_else(|| std::env::temp_dir().join("natm-demo.pcap"));
    let cells_path = path.with_extension("cells.pcap");
    // AAL5 PDUs as ERF records (Wireshark checks the CRC-32); cells as exported PDUs for
    // Wireshark's `atm_oam_cell` dissector, the one pcap form that keeps the HEC.
    write_capture(&path, LinkType::Erf, &pdus)?;
    write_capture(&cells_path, LinkType::ExportedPdu, &cell_records)?;
    for file in [&path, &cells_path] {
        println!("  natm dump {}:", file.display());
        for line in read_back(file)? {
            println!("    {line}");
        }
    }
    // tshark decodes every exported cell as OAM; its CRC-10 verdict means something only for
    // the cells that are OAM cells (frame numbers count from 1).
    let oam_frames: Vec<usize> = cell_records
        .iter()
        .enumerate()
        .filter(|(_, r)| summarize(r).crc10.is_some())
        .map(|(i, _)| i + 1)
        .collect();
    tshark_view(&path, &cells_path, &oam_frames);

    heading("7. Traffic contracts enforced: policing, shaping, admission, frame discard (TM 4.1)");
    contracts()?;

    if !no_measure {
        heading("8. Speed of the AAL5 path, beside memcpy in the same run");
        measure();
    }
    println!(
        "\nMore: natm qos parse, natm qos check, natm admit, natm addr parse, natm aal5 send, natm dump, natm atmtcp (see README.md)."
    );
    Ok(())
}

/// Step 7: the contract of a VC policed cell by cell, a connection refused by admission
/// control with the reason, and EPD/PPD keeping a congested queue's losses to whole frames.
fn contracts() -> CmdResult {
    let fail = |e: &dyn std::fmt::Display| CliError::failure(format!("demo contracts: {e}"));
    let ms = |k: u64| natm_core::Instant::from_nanos(k * 1_000_000);

    // atm-facts 4.3: PCR 1000, SCR 250, MBS 10; cells back to back at PCR, one per ms.
    let text = "vbr:pcr=1000,scr=250,mbs=10";
    let qos: Qos = text.parse().map_err(|e| fail(&e))?;
    let mut upc = Policer::from_params(None, &qos.tx, 353_207).map_err(|e| fail(&e))?;
    let verdicts: String = (0..14)
        .map(|k| match upc.police(ms(k), false) {
            Verdict::Pass => 'P',
            Verdict::Tag => 'T',
            Verdict::Discard => 'D',
        })
        .collect();
    println!(
        "  UPC {} on {text}: 14 cells at PCR -> {verdicts}",
        upc.definition()
    );
    println!(
        "    (P pass, D discard: MBS = 10 cells pass, the 14th conforms again after the bucket drains)"
    );

    // A CBR source exactly at its PCR, and one 1% faster.
    for (label, spacing_ns) in [("at its PCR", 10_000u64), ("1% faster", 9_900)] {
        let qos: Qos = "cbr:pcr=100000".parse().map_err(|e| fail(&e))?;
        let mut upc = Policer::from_params(None, &qos.tx, 353_207).map_err(|e| fail(&e))?;
        for k in 0..10_000u64 {
            upc.police(natm_core::Instant::from_nanos(k * spacing_ns), false);
        }
        let c = upc.counters();
        println!(
            "  UPC CBR.1 on cbr:pcr=100000, 10000 cells {label:<10} -> {} passed, {} discarded",
            c.pass, c.discard
        );
    }

    // The shaper of an OC-3c link: bursts enqueued at once leave spaced to each contract.
    let mut sched = Scheduler::new(LineRate::OC3.cells_per_s()).map_err(|e| fail(&e))?;
    let specs = [
        ("CBR pcr=100000", VcSpec::cbr(100_000), 20),
        (
            "rt-VBR pcr=50000,scr=10000,mbs=5",
            VcSpec::rt_vbr(50_000, 10_000, 5),
            10,
        ),
        ("UBR (link rate, weight 1)", VcSpec::ubr(353_207, 1), 300),
    ];
    let mut vcs = Vec::new();
    for (label, spec, burst) in specs {
        let h = sched.add_vc(spec).map_err(|e| fail(&e))?;
        sched.enqueue(h, burst).map_err(|e| fail(&e))?;
        let upc =
            Policer::new(spec.category.conformance(), &spec.contract()).map_err(|e| fail(&e))?;
        vcs.push((label, h, upc, Vec::new()));
    }
    let mut now = natm_core::Instant::ZERO;
    while let Some(t) = sched.poll_transmit(now).or_else(|| {
        now = sched.poll_timeout()?;
        sched.poll_transmit(now)
    }) {
        if let Some((_, _, upc, times)) = vcs.iter_mut().find(|v| v.1 == t.vc) {
            upc.police(t.at, false);
            times.push(t.at.as_nanos());
        }
    }
    for (label, _, upc, times) in &vcs {
        let gaps: Vec<String> = times
            .windows(2)
            .take(7)
            .map(|w| format!("{:.1}", (w[1] - w[0]) as f64 / 1000.0))
            .collect();
        let c = upc.counters();
        println!(
            "  shaper {label:<34} {} cells: gaps {} µs…, policer at CDVT 0 passes {}/{}",
            times.len(),
            gaps.join(" "),
            c.pass,
            c.pass + c.tag + c.discard
        );
    }

    // Admission control on an OC-3c port already carrying a CBR and a VBR connection.
    let mut cac = Cac::new(CacConfig {
        link: "sw0:1".into(),
        capacity: 353_207,
        buffer_cells: 0,
        max_ubr: 1024,
    });
    for existing in ["cbr:pcr=310000", "vbr:pcr=30707,scr=1000,mbs=100"] {
        let q: Qos = existing.parse().map_err(|e| fail(&e))?;
        cac.admit(&q.tx).map_err(|e| fail(&e))?;
    }
    for request in ["cbr:pcr=20000", "cbr:pcr=12000"] {
        let q: Qos = request.parse().map_err(|e| fail(&e))?;
        match cac.admit(&q.tx) {
            Ok(_) => println!(
                "  CAC {request:<16} -> admitted, {} cells/s left",
                cac.free()
            ),
            Err(e) => println!("  CAC {request:<16} -> {e}"),
        }
    }

    // A queue of 64 cells (EPD from 48) fed frames of 10 cells by 4 VCs at twice the rate
    // it is drained: what is lost goes in whole frames, and few frames are cut.
    let mut q: FrameQueue<u8, ()> =
        FrameQueue::new(FrameDiscard::new(64, 48).map_err(|e| fail(&e))?);
    for k in 0..8_000u32 {
        let (vc, cell) = ((k % 4) as u8, (k / 4) % 10);
        q.push_aal5(vc, cell == 9, ());
        if k % 2 == 1 {
            q.pop();
        }
    }
    let c = q.policy().counters();
    println!(
        "  EPD/PPD, 800 frames of 10 cells into a queue drained at half the rate -> {} cells queued, \
         {} frames refused whole (EPD), {} cells cut from frames under way (PPD {} + full {})",
        c.enqueued,
        c.epd_frames,
        c.ppd_cells + c.full_cells,
        c.ppd_cells,
        c.full_cells
    );
    Ok(())
}

fn heading(text: &str) {
    println!("\n{text}");
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn verdict(v: HecVerdict) -> String {
    match v {
        HecVerdict::Valid => "valid".into(),
        HecVerdict::Corrected { bit } => format!("corrected (bit {bit})"),
        HecVerdict::Discarded { syndrome } => format!("discarded (syndrome {syndrome:#04x})"),
    }
}

fn feed<'a>(r: &mut Reassembler, cells: impl Iterator<Item = &'a [u8; 53]>) -> String {
    let mut out = "nothing delivered".to_string();
    for c in cells {
        match r.push_cell(c) {
            Reassembly::Complete(n) => {
                let text = r.sdu().get(36..).unwrap_or_default();
                out = format!("delivered {n} bytes: {:?}", String::from_utf8_lossy(text))
            }
            Reassembly::Discarded(e) => out = format!("discarded: {e}"),
            Reassembly::Incomplete => {}
        }
    }
    out
}

fn write_capture(path: &PathBuf, link: LinkType, records: &[Record]) -> CmdResult {
    let fail = |e: &dyn std::fmt::Display| CliError::failure(format!("{}: {e}", path.display()));
    let file = File::create(path).map_err(|e| fail(&e))?;
    let mut w = Writer::new(BufWriter::new(file), link).map_err(|e| fail(&e))?;
    for r in records {
        w.write(r).map_err(|e| fail(&e))?;
    }
    w.flush().map_err(|e| fail(&e))
}

/// The summaries `natm dump` prints, read back from the file.
fn read_back(path: &PathBuf) -> Result<Vec<String>, CliError> {
    let fail = |e: &dyn std::fmt::Display| CliError::failure(format!("{}: {e}", path.display()));
    let reader = Reader::new(BufReader::new(File::open(path).map_err(|e| fail(&e))?))
        .map_err(|e| fail(&e))?;
    reader
        .map(|r| r.map(|r| summarize(&r).to_string()).map_err(|e| fail(&e)))
        .collect()
}

/// Show tshark's own verdicts on the captures, if it is installed.
fn tshark_view(pdus: &PathBuf, cells: &PathBuf, oam_frames: &[usize]) {
    let mut shown = false;
    for file in [pdus, cells] {
        let out = Command::new("tshark")
            .args(["-o", "erf.aal5_type:unspecified", "-V", "-r"])
            .arg(file)
            .output();
        let Ok(out) = out else { break };
        if !out.status.success() {
            break;
        }
        if !shown {
            println!("  tshark -V, the lines with its checks:");
            shown = true;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut frame = 0;
        for line in text.lines() {
            let line = line.trim();
            if let Some(n) = line
                .strip_prefix("Frame ")
                .and_then(|rest| rest.split(':').next())
                .and_then(|n| n.parse().ok())
            {
                frame = n;
            }
            // The CRC-10 is a bit field: "…. = CRC-10: 0x22a ( (correct))".
            let crc10 = file == cells && oam_frames.contains(&frame);
            let line = match line.split_once(" = CRC-10:") {
                Some((_, verdict)) if crc10 => format!("CRC-10:{verdict}"),
                _ => line.to_string(),
            };
            let check = ["AAL5 CRC:", "Header Error Check:"]
                .iter()
                .any(|k| line.starts_with(k))
                || line.starts_with("CRC-10:");
            if check || line.starts_with("User Datagram Protocol") {
                println!("    {} frame {frame}: {line}", file_name(file));
            }
        }
    }
    if !shown {
        println!(
            "  (install tshark to see Wireshark's view: tshark -V -r {})",
            pdus.display()
        );
    }
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Alternate rounds of memcpy and segment+reassemble of 9,180-byte SDUs (the classical-IP
/// MTU plus LLC), so both see the same machine load; report the median round of each.
fn measure() {
    const N: usize = 9180;
    const ROUNDS: usize = 7;
    let sdu: Vec<u8> = (0..N).map(|i| i as u8).collect();
    let mut dst = vec![0u8; N];
    let mut cells = vec![0u8; aal5::cell_count(N) * 53];
    let vc = VcId::uni(0, 100).expect("valid VC");
    let mut rx = Reassembler::new(vc, MAX_SDU).expect("a valid max_sdu");
    let mut copy_rates = Vec::new();
    let mut aal5_rates = Vec::new();
    let round = Duration::from_millis(60);
    for _ in 0..ROUNDS {
        copy_rates.push(rate(N, round, || {
            dst.copy_from_slice(std::hint::black_box(&sdu));
            std::hint::black_box(&dst);
        }));
        aal5_rates.push(rate(N, round, || {
            let mut seg = Segmenter::uni(vc, std::hint::black_box(&sdu)).expect("valid SDU");
            let n = seg.write_cells(&mut cells);
            let (whole, _) = cells[..n * 53].as_chunks::<53>();
            std::hint::black_box(rx.push_cells(whole));
        }));
    }
    let (cm, clo, chi) = median_spread(&mut copy_rates);
    let (am, alo, ahi) = median_spread(&mut aal5_rates);
    println!("  memcpy, 9180 B:               {cm:6.2} GB/s (min {clo:.2}, max {chi:.2})");
    println!(
        "  segment+reassemble, 9180 B:   {am:6.2} GB/s (min {alo:.2}, max {ahi:.2}) = {:.3}x memcpy",
        am / cm
    );
    println!("  (both from cache; `cargo bench -p natm-wire` has the full table)");
}

fn rate(bytes: usize, budget: Duration, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < budget {
        for _ in 0..64 {
            f();
        }
        n += 64;
    }
    (bytes as f64 * n as f64) / start.elapsed().as_nanos() as f64
}

fn median_spread(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

#[cfg(test)]
mod tests {
    use super::{oc3_floor_ns, times};

    #[test]
    fn the_oc3_floor_is_four_cell_times() {
        // 53 bytes × 8 bits at 149.76 Mbit/s of cell payload rate: 2.831 µs a cell.
        assert_eq!(oc3_floor_ns(), 11_324);
    }

    #[test]
    fn small_ratios_keep_two_significant_digits() {
        assert_eq!(times(2.345), "2.35×");
        assert_eq!(times(0.5), "0.50×");
        assert_eq!(times(0.05), "0.050×");
        assert_eq!(times(0.00213), "0.0021×");
        assert_eq!(times(0.0), "0.00×");
    }
}

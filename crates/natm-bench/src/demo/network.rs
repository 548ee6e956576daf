//! `natm demo`'s network run as one engine: the lab up, the CBR PVC beside the UBR one,
//! OAM loopbacks, request/response and goodput beside the kernel's loopback, a capture
//! and tshark's reading of it, the lab down.
//!
//! # What it is
//!
//! [`run`] does the steps in order and tells the caller what each found through a
//! callback of [`Step`]s, so that the caller narrates as the run goes; it returns the
//! figures of the table ([`Outcome`]). The steps' own work is the parent module's
//! ([`super::connect_cbr`], [`super::ping`], [`super::CaptureRun`], …) and
//! [`crate::rr`]'s and [`crate::stream`]'s.
//!
//! # What it is not
//!
//! Not a printer (the narration of each step, the table and the JSON are rendered here,
//! [`Step::narration`], [`Outcome::table`], [`Outcome::json`], and printed by natm-cli),
//! and not a benchmark: each figure comes from a short run.
//!
//! # Call contract
//!
//! * The [`Plan`] is taken as checked (counts and times in range, the topology parsed).
//! * `run` blocks for the whole demo (seconds), starts the lab's daemons as this process's
//!   children and takes them down before it returns, on success, on error and on a panic
//!   (the lab's guard).
//! * `stop` is looked at between steps: once it is set, `run` takes the lab down and
//!   returns [`Error::Interrupted`].
//! * Each [`Step`] is reported once, in the order of the variants' documentation; a step
//!   announced (`…Starting`) and then failed ends the run with the error.

mod render;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use natm_core::PvcAddr;
use natm_core::qos::Qos;
use natm_lab::OwnedLab;
use natm_lab::topology::Topology;

use super::{
    CBR_VC, CaptureRun, Captured, PingSummary, Policing, Tshark, connect_cbr, hello, ping,
    policing, tshark_check,
};
use crate::Error;
use crate::progress::Progress;
use crate::transport::{DataPath, Kind, NatmTarget, NotifyMode, Placement, Targets};

/// The UBR PVC of the default topology the demo measures.
pub const UBR_VC: &str = "0.100";
/// Request and response size: one cell with its AAL5 trailer (32 + 8 ≤ 48).
pub const RR_SIZE: usize = 32;
/// Message size of the goodput runs.
pub const STREAM_SIZE: usize = 8192;
/// Transactions per transport before recording (not counted).
pub const RR_WARMUP: u64 = 500;
/// The table's rows, in this order.
pub const ROW_UBR: usize = 0;
/// The CBR PVC's row.
pub const ROW_CBR: usize = 1;
/// The kernel's UDP row.
pub const ROW_UDP: usize = 2;
/// The kernel's TCP row.
pub const ROW_TCP: usize = 3;

/// What the demo runs.
pub struct Plan {
    /// The lab's runtime directory (made, and removed at the end).
    pub dir: PathBuf,
    /// The topology, its links at `rate`.
    pub topology: Topology,
    /// The topology's text, as `lab.json` records it.
    pub topology_text: String,
    /// The links' rate as given (`unlimited`: the applications wait on eventfds).
    pub rate: String,
    /// Where the capture goes.
    pub pcap: PathBuf,
    /// OAM loopback requests per PVC, 1 to 1000.
    pub pings: u32,
    /// Request/response transactions recorded per transport, at least 1.
    pub rr_count: u64,
    /// Time of each goodput run.
    pub stream_time: Duration,
    /// The CBR PVC's QoS text and QoS.
    pub cbr: (String, Qos),
    /// What the switch does with the CBR PVC's cells above its contract: `tag` or
    /// `discard`.
    pub cbr_upc: String,
    /// The `natm` executable the lab runs as `natm switchd` and `natm hostd`.
    pub natm: PathBuf,
}

/// One row of the table: a PVC of natm's, or a kernel loopback.
#[derive(Debug, Default)]
pub struct Row {
    /// `natm UBR 0.100`, `natm CBR 0.200`, `kernel UDP`, `kernel TCP`.
    pub name: String,
    /// The OAM loopbacks (natm's rows).
    pub ping: Option<PingSummary>,
    /// Request/response round trip, median.
    pub p50_ns: Option<u64>,
    /// Request/response round trip, 99th percentile.
    pub p99_ns: Option<u64>,
    /// Transactions per second.
    pub rr_per_sec: Option<f64>,
    /// Transactions lost.
    pub rr_lost: u64,
    /// One-way goodput.
    pub stream_bps: Option<f64>,
}

/// natm's figure over the kernel's: `row`'s rr p50 against UDP's, its goodput against
/// TCP's (`rows` in the order of [`ROW_UBR`]…[`ROW_TCP`]).
pub fn ratios(row: &Row, rows: &[Row]) -> (Option<f64>, Option<f64>) {
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

/// What the run found, step by step, in this order.
pub enum Step<'a> {
    /// The lab is about to start.
    LabStarting,
    /// The lab is up: its daemons.
    LabUp(&'a [natm_lab::Daemon]),
    /// The CBR PVC is about to be added between these ports of s1 (h1's, h2's).
    CbrStarting {
        /// s1's ports facing h1 and h2.
        ports: (u16, u16),
    },
    /// s1 connected the CBR PVC under this id.
    CbrConnected {
        /// s1's ports facing h1 and h2.
        ports: (u16, u16),
        /// The connection's id.
        id: &'a str,
    },
    /// One SDU went each way on this PVC (`0.100`, then `0.200`).
    Hello(&'a str),
    /// The capture of this port of s1 is about to start.
    CaptureStarting(u16),
    /// The OAM loopbacks are about to start.
    PingsStarting,
    /// One PVC's loopbacks.
    Pinged(&'a str, &'a PingSummary),
    /// Request/response is about to start on this path.
    RrStarting(DataPath),
    /// One row's request/response figures are in.
    Rr(&'a Row),
    /// The capture of this port stopped.
    CaptureDone(u16, &'a Captured),
    /// The goodput runs are about to start.
    StreamStarting,
    /// One row's goodput run: the row, then messages received and sent.
    Stream(&'a Row, u64, u64),
    /// s1's policer counters on the CBR PVC (when s1 says).
    Policed(&'a Policing),
    /// tshark is about to read the capture.
    TsharkStarting,
    /// What it made of it.
    Tshark(&'a Tshark),
    /// The lab is down: daemons stopped, seconds since the start.
    LabDown(usize, f64),
}

/// The figures of the table and what the JSON adds.
pub struct Outcome {
    /// The daemons' process ids.
    pub pids: Vec<i32>,
    /// How many daemons the end stopped.
    pub stopped: usize,
    /// The rows, [`ROW_UBR`]…[`ROW_TCP`].
    pub rows: Vec<Row>,
    /// What the capture wrote.
    pub captured: Captured,
    /// s1's policer counters on the CBR PVC.
    pub policed: Option<Policing>,
    /// tshark's reading of the capture.
    pub tshark: Tshark,
    /// When the run started.
    pub started: Instant,
}

fn check(stop: &AtomicBool) -> Result<(), Error> {
    if stop.load(Ordering::Relaxed) {
        return Err(Error::Interrupted);
    }
    Ok(())
}

fn pvc(text: &str) -> Result<PvcAddr, Error> {
    text.parse()
        .map_err(|e| Error::Plan(format!("{text}: {e}")))
}

/// Runs the demo, reporting each step to `step`.
pub fn run(
    plan: &Plan,
    stop: &AtomicBool,
    mut step: impl FnMut(Step<'_>),
) -> Result<Outcome, Error> {
    let ubr_vc = pvc(UBR_VC)?;
    let cbr_vc = pvc(CBR_VC)?;
    let ubr_qos: Qos = "ubr"
        .parse()
        .map_err(|e| Error::Plan(format!("ubr: {e}")))?;
    let started = Instant::now();
    step(Step::LabStarting);
    let topo = &plan.topology;
    let mut lab = OwnedLab::start(
        "natm demo",
        &plan.dir,
        topo,
        plan.topology_text.clone(),
        Some(plan.rate.clone()),
        &plan.natm,
    )?;
    let pids: Vec<i32> = lab.state.daemons.iter().map(|d| d.pid).collect();
    step(Step::LabUp(&lab.state.daemons));
    check(stop)?;

    let s1 = lab.socket("s1")?;
    let (h1, h2) = (lab.socket("h1")?, lab.socket("h2")?);
    let port_of = |h: &str| {
        topo.host_link(h)
            .and_then(|(li, _)| topo.port_of("s1", li))
            .ok_or_else(|| Error::Daemon(format!("no port of s1 faces {h}")))
    };
    let ports = (port_of("h1")?, port_of("h2")?);
    step(Step::CbrStarting { ports });
    let id = connect_cbr(&s1, ports, &plan.cbr.0, &plan.cbr_upc)?;
    step(Step::CbrConnected { ports, id: &id });
    for (vc, qos, text) in [(ubr_vc, ubr_qos, UBR_VC), (cbr_vc, plan.cbr.1, CBR_VC)] {
        hello(&h1, &h2, vc, qos)?;
        step(Step::Hello(text));
    }
    check(stop)?;

    step(Step::CaptureStarting(ports.0));
    let capture = CaptureRun::start(&s1, ports.0, &plan.pcap)?;
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

    step(Step::PingsStarting);
    for (i, (vc, text)) in [(ubr_vc, UBR_VC), (cbr_vc, CBR_VC)].iter().enumerate() {
        let p = ping(&h1, *vc, plan.pings, stop)?;
        step(Step::Pinged(text, &p));
        rows[ROW_UBR + i].ping = Some(p);
    }
    check(stop)?;

    // The applications take the path an application gets by default (their own lanes to
    // the switch on these shm links, at any rate); on unlimited links they sleep on
    // eventfds, on rated ones they wait adaptively, as natm's default.
    let path = DataPath::Auto;
    let mode = if plan.rate == "unlimited" {
        NotifyMode::EventFd
    } else {
        NotifyMode::Adaptive
    };
    let target = |vc: PvcAddr, qos: Qos| NatmTarget {
        vc,
        qos,
        mode,
        path,
        client_host: h1.display().to_string(),
        server_host: h2.display().to_string(),
        svc: false,
    };
    let ubr = Targets {
        kinds: vec![Kind::Natm, Kind::Udp, Kind::Tcp],
        natm: Some(target(ubr_vc, ubr_qos)),
    };
    let cbr = Targets {
        kinds: vec![Kind::Natm],
        natm: Some(target(cbr_vc, plan.cbr.1)),
    };
    let placement = Placement::choose(None, None, false)?;
    step(Step::RrStarting(path));
    rr_step(plan, placement, &mut rows, [&ubr, &cbr], stop, &mut step)?;
    let captured = capture.finish()?;
    step(Step::CaptureDone(ports.0, &captured));

    step(Step::StreamStarting);
    stream_step(plan, placement, &mut rows, [&ubr, &cbr], stop, &mut step)?;

    let policed = policing(&s1, &format!("{}:{CBR_VC}", ports.0));
    if let Some(p) = &policed {
        step(Step::Policed(p));
    }

    step(Step::TsharkStarting);
    let tshark = tshark_check(&plan.pcap);
    step(Step::Tshark(&tshark));

    let stopped = lab.down()?;
    step(Step::LabDown(stopped, started.elapsed().as_secs_f64()));
    Ok(Outcome {
        pids,
        stopped,
        rows,
        captured,
        policed,
        tshark,
        started,
    })
}

/// Request/response over the UBR PVC with the kernel baselines taking turns, then over the
/// CBR PVC; fills the rows' rr columns.
fn rr_step(
    plan: &Plan,
    placement: Placement,
    rows: &mut [Row],
    [ubr, cbr]: [&Targets; 2],
    stop: &AtomicBool,
    step: &mut impl FnMut(Step<'_>),
) -> Result<(), Error> {
    for (targets, first_row) in [(ubr, ROW_UBR), (cbr, ROW_CBR)] {
        let rr_plan = crate::rr::Plan {
            size: RR_SIZE,
            response_size: RR_SIZE,
            budget: crate::rr::Budget::Count(plan.rr_count),
            depth: 1,
            warmup: RR_WARMUP.min(plan.rr_count),
            placement,
            kinds: targets.kinds.clone(),
            skipped: Vec::new(),
            natm: targets.natm.clone(),
        };
        let report = crate::rr::run(&rr_plan)?;
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
            step(Step::Rr(row));
        }
        check(stop)?;
    }
    Ok(())
}

/// One goodput run each: natm on both PVCs, then kernel TCP; fills the stream column.
fn stream_step(
    plan: &Plan,
    placement: Placement,
    rows: &mut [Row],
    [ubr, cbr]: [&Targets; 2],
    stop: &AtomicBool,
    step: &mut impl FnMut(Step<'_>),
) -> Result<(), Error> {
    let seconds = plan.stream_time.as_secs_f64();
    let mut progress = Progress::new(3 * (seconds * 1e3) as u64, "stream");
    for (kind, targets, row) in [
        (Kind::Natm, ubr, ROW_UBR),
        (Kind::Natm, cbr, ROW_CBR),
        (Kind::Tcp, ubr, ROW_TCP),
    ] {
        let stream_plan = crate::stream::Plan {
            sizes: vec![STREAM_SIZE],
            time: plan.stream_time,
            placement,
            kinds: ubr.kinds.clone(),
            natm: targets.natm.clone(),
        };
        let m = crate::stream::one_run(kind, STREAM_SIZE, &stream_plan, &mut progress)
            .map_err(|e| Error::io(format!("{}: goodput run", rows[row].name), e))?;
        rows[row].stream_bps = Some(m.bits_per_sec);
        step(Step::Stream(
            &rows[row],
            m.received_messages,
            m.sent_messages,
        ));
        check(stop)?;
    }
    drop(progress);
    Ok(())
}

/// The capture's default place: `natm-demo.pcap` in the temp directory.
pub fn default_pcap() -> PathBuf {
    std::env::temp_dir().join("natm-demo.pcap")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(p50_ns: Option<u64>, stream_bps: Option<f64>) -> Row {
        Row {
            p50_ns,
            stream_bps,
            ..Row::default()
        }
    }

    #[test]
    fn ratios_are_against_kernel_udp_and_tcp_and_absent_without_a_figure() {
        let rows = vec![
            row(Some(30_000), Some(1e8)),
            row(None, None),
            row(Some(10_000), None),
            row(Some(20_000), Some(4e8)),
        ];
        assert_eq!(ratios(&rows[0], &rows), (Some(3.0), Some(0.25)));
        assert_eq!(ratios(&rows[1], &rows), (None, None));
        let zero = vec![
            row(Some(1), Some(1.0)),
            row(None, None),
            row(Some(0), None),
            row(None, Some(0.0)),
        ];
        assert_eq!(ratios(&zero[0], &zero), (None, None));
    }
}

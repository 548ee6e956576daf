//! The engine of `natm perf transport`: one-way goodput of natm's native-mode transport
//! ([`natm::transport::Channel`], issue 25) between two hosts of the running lab over a
//! PVC, for one service, at one message size or over a sweep of sizes, beside kernel TCP
//! on loopback at the same sizes in the same run.
//!
//! # What is measured
//!
//! For each size, a fresh channel: the receiver (a thread pinned to the server CPU) opens
//! the PVC on its host and a [`Channel`] over it; the sender (this thread, pinned to the
//! client CPU) does the same on its host, and the two hellos meet. The sender then sends
//! messages of the size back to back until the budget is spent ([`Budget`]: a number of
//! messages, or seconds of sending), then an *end* message, and waits until everything
//! has left ([`Channel::flush`]: acknowledged on a reliable channel). The receiver counts
//! the data messages and bytes that arrive, the messages the channel reports lost
//! ([`Event::Lost`], best effort and guaranteed), and when the last one came; after the
//! end it lingers so that the sender's last retransmissions are answered.
//!
//! Goodput is the message bytes received ÷ the time from the first send to the last
//! receive; messages/s likewise. *Resends* are the sender's retransmitted TPDUs (SMART's
//! and after a timeout). Every message is one type byte (data `0x00`, end `0x01`) and the
//! rest of its size; the end carries the number of data messages sent. Without
//! retransmission the end may be lost: it is sent four times (0, 50, 150, 350 ms after
//! the data), and the receiver also stops once the sender is done and nothing came for
//! [`QUIET`].
//!
//! The baseline is kernel TCP over 127.0.0.1 ([`crate::transport::Kind::Tcp`]: each
//! message behind a 4-byte length, `TCP_NODELAY`), the same sizes and budget, the same
//! CPUs. Sizes are measured one after another, natm then TCP at each.
//!
//! Each size is measured [`Plan::runs`] times, natm and TCP alternating; the report gives
//! the median and the least and greatest of the runs. For a sweep, [`half_power`] gives
//! each transport's half-power point from the medians: the smallest message size that
//! reaches half the goodput of the largest size measured.
//!
//! Beside natm's goodput each size gets the AAL5 ceiling at the link's line rate
//! ([`seed::aal5_ceiling`]: every cell slot carrying the messages' TPDU frames; none on
//! an unlimited link) and the seed's fitted goodput ([`seed::fit`]; the seed's figures are
//! those quoted in issue 25, see [`seed`]). The line rate is the sender's host link's, as
//! its hostd reports it ([`Plan::line`] overrides it).
//!
//! # Impairment
//!
//! With [`Plan::impair`] (natm-netem's impairments, the grammar of the lab topology's
//! `impair`), both hosts' hostd impair the cells they send on their links for the whole
//! run ([`natm::Host::set_impairments`]): the data crosses one impaired line (the sender's
//! link), the acks another (the receiver's). The impairment is cleared when the run ends,
//! failed or not ([`Impaired`]). A lane bypasses hostd's link, so an impaired run uses the
//! direct path (`auto` becomes `direct`; `lane` is refused). Per run the report keeps the
//! TPDUs resent and the TPDU size the sender had reached at the end
//! ([`NatmMoved::tpdu_size`]; it shrinks under loss with the adaptive size).
//!
//! A guaranteed channel's figure is its rate: the cells of the messages that arrived after
//! the first one ÷ the time from the first arrival to the last, against the requested
//! rate (its deviation in %; lost messages count as not delivered). With
//! [`Plan::bulk`], a reliable channel on a second PVC between the same two hosts sends
//! [`BULK_SIZE`]-byte messages back to back during each natm run, sharing the link; its
//! goodput is counted over the measured channel's run (first send to last arrival).
//!
//! The 8-byte round trip of a reliable channel beside the raw AAL5 one is [`rr`].
//!
//! # What it is not
//!
//! No impairment code of its own (hostd runs natm-netem, as for a topology's `impair`),
//! none between the switch and the hosts (switchd's lines stay as the topology has them),
//! no switched VC (a PVC both hosts open), no shared scheduler in the application between
//! the measured channel and the bulk one (each is its own channel in its own threads: their
//! cells meet in the switch on a lane, and in hostd's transmit round, natm-host-core's
//! weighted round robin, on the daemon and direct paths). The seed's curve is drawn from
//! the quoted numbers, not the paper's data. The line rate read from the lab is
//! the sender's link's only (a slower link further on is not seen).

mod render;
pub mod rr;
pub mod seed;

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use natm::transport::{Channel, Event, Service, TransportOptions};
use natm::{DataPath, VcOptions};
use natm_core::LineRate;
use natm_core::addr::PvcAddr;
use natm_core::qos::Qos;
use natm_netem::Impairments;
use serde::Serialize;

use crate::plot;
use crate::progress::Progress;
use crate::stats::Spread;
use crate::transport::{self, Kind, Placement};
use crate::{Error, pin};

/// The default sweep: the seed's range, 64 B to 80 KiB, in eight sizes.
pub const DEFAULT_SWEEP: [usize; 8] = [64, 256, 1024, 2048, 4096, 8192, 32_768, 81_920];
/// The largest message size a plan may ask for (natm-transport's default largest message).
pub const MAX_SIZE: usize = 1 << 20;
/// How long a receiver waits for more once the sender is done.
pub const QUIET: Duration = Duration::from_millis(500);
/// How long the sender waits for its messages to leave (reliable: be acknowledged).
const FLUSH: Duration = Duration::from_secs(30);
/// How long each end waits for the other's hello.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// When the copies of the end message go on a channel without retransmission.
const END_COPIES_MS: [u64; 4] = [0, 50, 150, 350];
/// Messages sent between two looks at the clock.
const CLOCK_EVERY: u64 = 16;
/// The bulk flow's message size ([`Plan::bulk`]): one full TPDU.
pub const BULK_SIZE: usize = 8192;
/// The most runs per size a plan may ask for.
pub const MAX_RUNS: u32 = 100;
/// A data message's type byte.
const DATA: u8 = 0x00;
/// The end message's type byte.
const END: u8 = 0x01;

/// How much each size sends.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Budget {
    /// This many messages.
    Count(u64),
    /// Sending for this long.
    Seconds(f64),
}

/// The natm side of a run, checked.
#[derive(Clone, Debug)]
pub struct Target {
    /// The PVC both hosts open.
    pub vc: PvcAddr,
    /// Its QoS.
    pub qos: Qos,
    /// The data path both ends use.
    pub path: DataPath,
    /// The sender's host: a name, or a socket path when it holds a `/`.
    pub sender_host: String,
    /// The receiver's host, likewise.
    pub receiver_host: String,
}

/// A goodput run of the transport: what [`run`] does.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The channel's service.
    pub service: Service,
    /// Message sizes in bytes (1 to [`MAX_SIZE`]), measured in this order.
    pub sizes: Vec<usize>,
    /// What each size and transport sends.
    pub budget: Budget,
    /// Where the sender and receiver threads run.
    pub placement: Placement,
    /// The hosts and the VC.
    pub target: Target,
    /// Whether kernel TCP is measured beside.
    pub baseline: bool,
    /// Runs per size (1 to [`MAX_RUNS`]), natm and TCP alternating.
    pub runs: u32,
    /// The link's line rate for the AAL5 ceiling; `None`: the sender's host link's, read
    /// from its hostd.
    pub line: Option<LineRate>,
    /// Impairments both hosts put on the cells they send during the run (see the module
    /// doc); `None`: the links as they are.
    pub impair: Option<Impairments>,
    /// A reliable bulk flow beside every natm run, on this PVC and QoS.
    pub bulk: Option<(PvcAddr, Qos)>,
}

/// What natm's channel moved at one size.
#[derive(Clone, Debug, Serialize)]
pub struct NatmMoved {
    /// Goodput: message bytes received per second, in bits.
    pub bits_per_sec: f64,
    /// Data messages received per second.
    pub messages_per_sec: f64,
    /// Data messages sent.
    pub sent_messages: u64,
    /// Data messages received.
    pub received_messages: u64,
    /// Their bytes.
    pub received_bytes: u64,
    /// Messages the receiving channel reported lost (never for reliable).
    pub lost_messages: u64,
    /// From the first send to the last receive.
    pub seconds: f64,
    /// Data TPDUs the sender sent for the first time.
    pub tpdus_sent: u64,
    /// TPDUs it resent: SMART's plus those after a timeout.
    pub resends: u64,
    /// Of which after a timeout.
    pub timeout_resends: u64,
    /// The TPDU payload size the sender segmented with at the end (adaptive: shrinks
    /// under loss).
    pub tpdu_size: usize,
    /// The sender's smoothed round trip at the end, in milliseconds (reliable).
    pub srtt_ms: Option<f64>,
    /// The least round trip it measured, in milliseconds (reliable).
    pub min_rtt_ms: Option<f64>,
    /// Window cuts on losses SMART found (reliable).
    pub window_cuts: u64,
    /// Of which by a fifth only: the loss looked random (no queue on the path, or losses
    /// scattered rather than in runs).
    pub random_loss_cuts: u64,
    /// From the first arrival to the last.
    pub arrival_seconds: f64,
    /// The reliable bulk flow beside it ([`Plan::bulk`]).
    pub bulk: Option<BulkMoved>,
}

/// What the bulk flow moved during one natm run.
#[derive(Clone, Debug, Serialize)]
pub struct BulkMoved {
    /// Goodput over the natm run's time.
    pub bits_per_sec: f64,
    /// Its messages that arrived in that time.
    pub messages: u64,
    /// The natm run's time: its first send to its last arrival.
    pub seconds: f64,
}

/// A guaranteed channel's rate at one size, over the runs.
#[derive(Clone, Debug, Serialize)]
pub struct RateFigure {
    /// The requested rate, cells/s.
    pub requested: u32,
    /// The rate that arrived, cells/s (see the module doc); `null` when no run had two
    /// arrivals.
    pub achieved: Option<Spread>,
    /// (achieved ÷ requested − 1) × 100 of each run.
    pub deviation_percent: Option<Spread>,
}

/// What kernel TCP moved at one size.
#[derive(Clone, Debug, Serialize)]
pub struct TcpMoved {
    /// Goodput.
    pub bits_per_sec: f64,
    /// Messages received per second.
    pub messages_per_sec: f64,
    /// Messages sent (all of them arrive).
    pub messages: u64,
    /// Their bytes.
    pub bytes: u64,
    /// From the first send to the last receive.
    pub seconds: f64,
}

/// One size's figures.
#[derive(Debug, Serialize)]
pub struct SizeResult {
    /// The message size in bytes.
    pub size: usize,
    /// natm's goodput over the runs, bit/s.
    pub natm: Spread,
    /// Kernel TCP's (`null` with no baseline).
    pub tcp: Option<Spread>,
    /// natm's median goodput ÷ TCP's (`null` with no baseline).
    pub ratio: Option<f64>,
    /// The AAL5 ceiling at this size, bit/s ([`seed::aal5_ceiling`]); `null` on an
    /// unlimited link.
    pub ceiling_bits_per_sec: Option<f64>,
    /// natm's median ÷ the ceiling (`null` without one).
    pub of_ceiling: Option<f64>,
    /// TPDUs resent, summed over the runs.
    pub resends: u64,
    /// The TPDU size the sender had reached at the end, least and greatest of the runs.
    pub tpdu_size_reached: (usize, usize),
    /// The seed's fitted goodput at this size, bit/s ([`seed::fit`]).
    pub seed_fit_bits_per_sec: f64,
    /// A guaranteed channel's rate (`null` for the other services).
    pub rate: Option<RateFigure>,
    /// The bulk flow's goodput over the runs, bit/s (`null` without one).
    pub bulk: Option<Spread>,
    /// natm's runs, in the order measured.
    pub natm_runs: Vec<NatmMoved>,
    /// TCP's runs.
    pub tcp_runs: Vec<TcpMoved>,
}

/// The seed's figures a report carries ([`seed`]).
#[derive(Debug, Serialize)]
pub struct SeedFigures {
    /// Where they come from.
    pub source: &'static str,
    /// r∞ of the fit, bit/s.
    pub peak_bits_per_sec: f64,
    /// n½ of the fit, bytes.
    pub half_power_bytes: f64,
    /// The quoted points: (bytes, bit/s).
    pub points: Vec<(f64, f64)>,
}

/// A half-power point ([`half_power`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct HalfPoint {
    /// The message size in bytes, interpolated.
    pub bytes: f64,
    /// The smallest size measured already reaches half: the point is at or below `bytes`.
    pub at_smallest: bool,
}

/// The half-power points of a sweep; `null` where not defined.
#[derive(Debug, Serialize)]
pub struct HalfPower {
    /// natm's.
    pub natm: Option<HalfPoint>,
    /// TCP's.
    pub tcp: Option<HalfPoint>,
}

/// What a run reports (`natm perf transport --json`).
#[derive(Debug, Serialize)]
pub struct Report {
    /// The service, as `--service` names it.
    pub service: String,
    /// The PVC.
    pub vc: String,
    /// Its QoS.
    pub qos: String,
    /// The data path.
    pub path: String,
    /// What each size sent.
    pub budget: Budget,
    /// Runs per size.
    pub runs: u32,
    /// The line rate of the AAL5 ceiling (`unlimited`: no ceiling).
    pub line_rate: String,
    /// Where it comes from: `lab` (the sender's hostd) or `--line-rate`.
    pub line_rate_from: &'static str,
    /// The impairments both hosts put on their sent cells during the run (natm-netem's
    /// text), `null` without.
    pub impair: Option<String>,
    /// The TPDU payload size the ceiling counts, bytes.
    pub tpdu_size: usize,
    /// The bulk flow's PVC (`null` without one).
    pub bulk_vc: Option<String>,
    /// Where the threads ran.
    pub placement: Placement,
    /// One per size, in the plan's order.
    pub sizes: Vec<SizeResult>,
    /// The half-power points of the medians (with two sizes or more).
    pub half_power: Option<HalfPower>,
    /// The seed's.
    pub seed: SeedFigures,
    /// The PNG written (`--plot`), set by the caller.
    pub plot: Option<String>,
    /// Why the placement may not give a meaningful figure.
    pub warnings: Vec<String>,
}

/// The service's name as `--service` takes it.
pub fn service_name(s: Service) -> String {
    match s {
        Service::Reliable => "reliable".into(),
        Service::BestEffort => "best-effort".into(),
        Service::Guaranteed { rate } => format!("guaranteed:{rate}"),
    }
}

/// The half-power point of `(size, goodput)` points: the smallest size whose goodput
/// reaches half of the largest size's, interpolated linearly in size between it and the
/// size below it. `None` with fewer than two points or no goodput at the largest size. If
/// the smallest size already reaches half, that size, marked
/// [`at_smallest`](HalfPoint::at_smallest) (nothing below it to interpolate with).
pub fn half_power(points: &[(usize, f64)]) -> Option<HalfPoint> {
    let mut p: Vec<(f64, f64)> = points.iter().map(|&(s, g)| (s as f64, g)).collect();
    p.sort_by(|a, b| a.0.total_cmp(&b.0));
    if p.len() < 2 {
        return None;
    }
    let top = p.last()?.1;
    if top.is_nan() || top <= 0.0 {
        return None;
    }
    let half = top / 2.0;
    let i = p.iter().position(|&(_, g)| g >= half)?;
    if i == 0 {
        return Some(HalfPoint {
            bytes: p[0].0,
            at_smallest: true,
        });
    }
    let ((s0, g0), (s1, g1)) = (p[i - 1], p[i]);
    // g0 < half <= g1, so g1 > g0.
    Some(HalfPoint {
        bytes: s0 + (s1 - s0) * (half - g0) / (g1 - g0),
        at_smallest: false,
    })
}

/// The impairments of an impaired run in force on the hosts' links ([`Plan::impair`]):
/// dropping it clears them ([`Impaired::clear`] says whether that worked).
struct Impaired {
    /// Each host impaired so far, by name, and the connection that did it.
    hosts: Vec<(String, natm::Host)>,
}

impl Impaired {
    /// Impairs the cells each of `hosts` sends; on a failure the ones already impaired are
    /// cleared again.
    fn set(hosts: &[&str], impair: &Impairments) -> Result<Impaired, Error> {
        let mut done = Impaired { hosts: Vec::new() };
        let text = impair.to_string();
        for &name in hosts {
            let host = connect(name).map_err(|e| Error::Natm {
                what: format!("host {name}"),
                source: e,
            })?;
            host.set_impairments(&text).map_err(|e| Error::Natm {
                what: format!("impairing host {name}'s link with {text:?}"),
                source: e,
            })?;
            done.hosts.push((name.to_string(), host));
        }
        Ok(done)
    }

    /// Clears every host's impairments; the first failure, after trying them all.
    fn clear(mut self) -> Result<(), Error> {
        let mut first = None;
        for (name, host) in self.hosts.drain(..) {
            if let Err(e) = host.set_impairments("") {
                first.get_or_insert(Error::Natm {
                    what: format!("clearing host {name}'s impairments"),
                    source: e,
                });
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Impaired {
    fn drop(&mut self) {
        // A run that failed on the way: clear what can be cleared; its own error is the
        // one reported.
        for (_, host) in self.hosts.drain(..) {
            let _ = host.set_impairments("");
        }
    }
}

/// The line rate of host `name`'s link, as its hostd reports it.
fn lab_line_rate(name: &str) -> Result<LineRate, Error> {
    let status = connect(name)
        .and_then(|h| h.status())
        .map_err(|e| Error::Natm {
            what: format!("host {name}'s status"),
            source: e,
        })?;
    let rate = &status.link.rate;
    rate.parse().map_err(|_| {
        Error::Daemon(format!(
            "host {name}'s hostd reports its link's rate as {rate:?}, not a line rate; \
             give --line-rate"
        ))
    })
}

/// The data path of an impaired run: not a lane (it bypasses hostd's impaired link).
fn impaired_path(path: DataPath) -> Result<DataPath, Error> {
    match path {
        DataPath::Auto => Ok(DataPath::Direct),
        DataPath::Lane => Err(Error::Plan(
            "--path lane with --impair: a lane bypasses hostd's link, where the impairment \
             is; use direct or daemon"
                .into(),
        )),
        p => Ok(p),
    }
}

/// Runs the measurement of `plan` and returns its report (prints nothing). With
/// [`Plan::impair`] the hosts' links are impaired for the run and cleared after it, also
/// when it fails.
pub fn run(plan: &Plan) -> Result<Report, Error> {
    let (line, line_rate_from) = match plan.line {
        Some(l) => (l, "--line-rate"),
        None => (lab_line_rate(&plan.target.sender_host)?, "lab"),
    };
    let Some(impair) = plan.impair else {
        return measure(plan, line, line_rate_from);
    };
    let mut plan = plan.clone();
    plan.target.path = impaired_path(plan.target.path)?;
    let impaired = Impaired::set(
        &[&plan.target.sender_host, &plan.target.receiver_host],
        &impair,
    )?;
    let report = measure(&plan, line, line_rate_from);
    let cleared = impaired.clear();
    let mut report = report?;
    cleared?;
    report.impair = Some(impair.to_string());
    Ok(report)
}

/// [`run`]'s measurement on the links as they are.
fn measure(plan: &Plan, line: LineRate, line_rate_from: &'static str) -> Result<Report, Error> {
    let warnings = crate::crowding::for_run(&plan.placement, None);
    let per = if plan.baseline { 2 } else { 1 };
    let runs = plan.runs.max(1);
    let total = plan.sizes.len() as u64 * u64::from(runs) * per;
    let mut progress = Progress::new(total, "transport");
    let tpdu = TransportOptions::new(plan.service).config.tpdu_size;
    let mut sizes = Vec::new();
    for &size in &plan.sizes {
        let mut natm_runs = Vec::new();
        let mut tcp_runs = Vec::new();
        for i in 1..=runs {
            progress.set_message(format!("transport natm {size} B, run {i}"));
            let natm = natm_run(plan, size)
                .map_err(|e| Error::io(format!("natm transport, {size}-byte messages"), e))?;
            natm_runs.push(natm);
            progress.inc(1);
            if plan.baseline {
                progress.set_message(format!("transport tcp {size} B, run {i}"));
                let t = tcp_run(plan, size)
                    .map_err(|e| Error::io(format!("tcp, {size}-byte messages"), e))?;
                tcp_runs.push(t);
                progress.inc(1);
            }
        }
        sizes.push(summarize(plan, line, size, tpdu, natm_runs, tcp_runs));
    }
    drop(progress);
    let half = (sizes.len() >= 2).then(|| {
        let natm: Vec<(usize, f64)> = sizes.iter().map(|s| (s.size, s.natm.median)).collect();
        let tcp: Vec<(usize, f64)> = sizes
            .iter()
            .filter_map(|s| s.tcp.map(|t| (s.size, t.median)))
            .collect();
        HalfPower {
            natm: half_power(&natm),
            tcp: half_power(&tcp),
        }
    });
    Ok(Report {
        service: service_name(plan.service),
        vc: plan.target.vc.to_string(),
        qos: plan.target.qos.to_string(),
        path: plan.target.path.name().to_string(),
        budget: plan.budget,
        runs,
        line_rate: line.to_string(),
        line_rate_from,
        impair: None,
        tpdu_size: tpdu,
        bulk_vc: plan.bulk.map(|(vc, _)| vc.to_string()),
        placement: plan.placement,
        sizes,
        half_power: half,
        seed: SeedFigures {
            source: "quoted in issue 25 from Ahuja, Keshav & Saran 1996; the paper's own \
                     data points are not in this repository",
            peak_bits_per_sec: seed::PEAK_BPS,
            half_power_bytes: seed::HALF_POWER_BYTES,
            points: seed::POINTS.to_vec(),
        },
        plot: None,
        warnings,
    })
}

/// One size's figures from its runs.
fn summarize(
    plan: &Plan,
    line: LineRate,
    size: usize,
    tpdu: usize,
    natm_runs: Vec<NatmMoved>,
    tcp_runs: Vec<TcpMoved>,
) -> SizeResult {
    let natm = Spread::of(natm_runs.iter().map(|m| m.bits_per_sec));
    let tcp = (!tcp_runs.is_empty()).then(|| Spread::of(tcp_runs.iter().map(|t| t.bits_per_sec)));
    let ratio = tcp
        .filter(|t| t.median > 0.0)
        .map(|t| natm.median / t.median);
    let ceiling = seed::aal5_ceiling(size, tpdu, line);
    let tpdu_sizes = natm_runs.iter().map(|m| m.tpdu_size);
    let rate = match plan.service {
        Service::Guaranteed { rate } => Some(rate_figure(rate, size, tpdu, &natm_runs)),
        _ => None,
    };
    let bulk = plan.bulk.map(|_| {
        Spread::of(
            natm_runs
                .iter()
                .filter_map(|m| m.bulk.as_ref().map(|b| b.bits_per_sec)),
        )
    });
    SizeResult {
        size,
        natm,
        tcp,
        ratio,
        ceiling_bits_per_sec: ceiling,
        of_ceiling: ceiling.map(|c| natm.median / c),
        resends: natm_runs.iter().map(|m| m.resends).sum(),
        tpdu_size_reached: (
            tpdu_sizes.clone().min().unwrap_or(0),
            tpdu_sizes.max().unwrap_or(0),
        ),
        seed_fit_bits_per_sec: seed::fit(size as f64),
        rate,
        bulk,
        natm_runs,
        tcp_runs,
    }
}

/// The rate a guaranteed channel delivered in each run against `requested` (cells/s).
pub fn rate_figure(requested: u32, size: usize, tpdu: usize, runs: &[NatmMoved]) -> RateFigure {
    let cells = seed::message_cells(size, tpdu) as f64;
    let achieved: Vec<f64> = runs
        .iter()
        .map(|m| {
            if m.received_messages >= 2 && m.arrival_seconds > 0.0 {
                (m.received_messages - 1) as f64 * cells / m.arrival_seconds
            } else {
                f64::NAN
            }
        })
        .collect();
    let deviation: Vec<f64> = achieved
        .iter()
        .map(|a| (a / f64::from(requested) - 1.0) * 100.0)
        .collect();
    RateFigure {
        requested,
        achieved: Spread::of_finite(&achieved),
        deviation_percent: Spread::of_finite(&deviation),
    }
}

/// What the table prints beside the plot's file name.
pub const PLOT_LEGEND: &str = "x: message size in bytes (log scale), y: goodput in Mbit/s; \
                               natm median with min-max bars red, tcp green (cut at the top \
                               when above 1.2× the AAL5 ceiling), AAL5 ceiling grey, seed \
                               fit orange, the seed's quoted points purple, a guaranteed \
                               channel's requested rate blue";

/// Draws `report`'s goodput against message size into a PNG at `path`
/// ([`plot::log_sizes`]): natm's medians with the runs' spread, TCP's medians, the AAL5
/// ceiling, the seed's fit over the measured range and the seed's quoted points, and a
/// guaranteed channel's requested rate as goodput.
pub fn plot(report: &Report, path: &std::path::Path) -> io::Result<()> {
    let mbit = |b: f64| b / 1e6;
    let natm: Vec<(f64, f64)> = report
        .sizes
        .iter()
        .map(|s| (s.size as f64, mbit(s.natm.median)))
        .collect();
    let bars: Vec<(f64, f64, f64)> = report
        .sizes
        .iter()
        .map(|s| (s.size as f64, mbit(s.natm.min), mbit(s.natm.max)))
        .collect();
    let tcp: Vec<(f64, f64)> = report
        .sizes
        .iter()
        .filter_map(|s| s.tcp.map(|t| (s.size as f64, mbit(t.median))))
        .collect();
    let ceiling: Vec<(f64, f64)> = report
        .sizes
        .iter()
        .filter_map(|s| Some((s.size as f64, mbit(s.ceiling_bits_per_sec?))))
        .collect();
    let (lo, hi) = report.sizes.iter().fold((f64::MAX, 0f64), |(lo, hi), s| {
        (lo.min(s.size as f64), hi.max(s.size as f64))
    });
    // The fit as a smooth curve: 48 points evenly spaced on the log axis.
    let fit: Vec<(f64, f64)> = if lo <= hi {
        (0..48)
            .map(|i| {
                let n = lo * (hi / lo).powf(f64::from(i) / 47.0);
                (n, mbit(seed::fit(n)))
            })
            .collect()
    } else {
        Vec::new()
    };
    let points: Vec<(f64, f64)> = seed::POINTS.iter().map(|&(n, b)| (n, mbit(b))).collect();
    // A guaranteed channel's requested rate as message goodput at each size.
    let asked: Vec<(f64, f64)> = report
        .sizes
        .iter()
        .filter_map(|s| {
            let r = s.rate.as_ref()?;
            let cells = seed::message_cells(s.size, report.tpdu_size) as f64;
            Some((
                s.size as f64,
                mbit(f64::from(r.requested) * s.size as f64 * 8.0 / cells),
            ))
        })
        .collect();
    let curve = |name, rgb, points, line, marks| plot::Curve {
        name,
        rgb,
        points,
        bars: &[],
        line,
        marks,
    };
    let mut curves = vec![plot::Curve {
        bars: &bars,
        ..curve("natm median", [220, 30, 30], &natm, true, true)
    }];
    // Loopback TCP runs at memory speed: the y axis stops a little above the link's
    // ceiling so that natm and the seed stay readable; TCP's line is cut at the top.
    let cap = 1.2
        * ceiling
            .iter()
            .chain(&natm)
            .map(|p| p.1)
            .fold(mbit(seed::PEAK_BPS), f64::max);
    let clipped = tcp.iter().any(|p| p.1 > cap);
    if !tcp.is_empty() {
        let name = if clipped { "tcp cut at top" } else { "tcp" };
        curves.push(curve(name, [20, 150, 40], &tcp, true, true));
    }
    if !asked.is_empty() {
        curves.push(curve("asked", [30, 60, 220], &asked, true, false));
    }
    if !ceiling.is_empty() {
        curves.push(curve(
            "aal5 ceiling",
            [110, 110, 110],
            &ceiling,
            true,
            false,
        ));
    }
    curves.push(curve("seed fit", [240, 140, 0], &fit, true, false));
    curves.push(curve("seed points", [130, 40, 180], &points, false, true));
    plot::log_sizes(path, &curves, Some(cap))
}

/// Whether the budget still lets the sender go on, `sent` messages after `start`.
fn more(budget: Budget, sent: u64, start: Instant) -> bool {
    match budget {
        Budget::Count(n) => sent < n,
        Budget::Seconds(s) => start.elapsed().as_secs_f64() < s,
    }
}

/// A natm API error as the engine reports it.
fn natm_error(what: &str, e: natm::Error) -> io::Error {
    io::Error::other(format!("{what}: {e}"))
}

/// Opens `target`'s PVC on `host` and a channel of the plan's service over it.
fn open(host: &str, plan: &Plan) -> io::Result<Channel> {
    let t = &plan.target;
    open_channel(host, plan.service, t.vc, t.qos, t.path)
}

/// Connects to `host`'s hostd: a host name, or a socket path when it holds a `/`.
fn connect(host: &str) -> Result<natm::Host, natm::Error> {
    if host.contains('/') {
        natm::Host::connect_path(host)
    } else {
        natm::Host::connect(host)
    }
}

/// Opens PVC `vc` with `qos` on `host` and a `service` channel over it.
fn open_channel(
    host: &str,
    service: Service,
    vc: PvcAddr,
    qos: Qos,
    path: DataPath,
) -> io::Result<Channel> {
    let h = connect(host).map_err(|e| natm_error(&format!("host {host}"), e))?;
    let opts = TransportOptions::new(service).handshake_timeout(HANDSHAKE);
    let options = VcOptions::new(vc)
        .qos(qos)
        .path(path)
        .buffers(opts.buffers())
        .buffer_size(opts.buffer_size());
    Channel::open(&h, options, opts).map_err(|e| match e {
        natm::Error::Timeout => io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "VC {vc} on {host}: the other end's channel did not answer within {} s",
                HANDSHAKE.as_secs()
            ),
        ),
        e => natm_error(&format!("VC {vc} on {host}"), e),
    })
}

/// What the receiver counted.
struct Received {
    messages: u64,
    bytes: u64,
    lost: u64,
    first: Option<Instant>,
    last: Option<Instant>,
    /// Every data message's arrival, when asked for (the bulk flow's).
    arrivals: Vec<Instant>,
}

/// The receiver's loop: until the end message, or the sender is done and it is quiet;
/// `keep` keeps every arrival's time.
fn receive(ch: &mut Channel, done: &AtomicBool, keep: bool) -> io::Result<Received> {
    let mut r = Received {
        messages: 0,
        bytes: 0,
        lost: 0,
        first: None,
        last: None,
        arrivals: Vec::new(),
    };
    loop {
        match ch.recv_timeout(QUIET) {
            Ok(Event::Message { data, .. }) => match data.first() {
                Some(&DATA) => {
                    let now = Instant::now();
                    r.messages += 1;
                    r.bytes += data.len() as u64;
                    r.first.get_or_insert(now);
                    r.last = Some(now);
                    if keep {
                        r.arrivals.push(now);
                    }
                }
                Some(&END) => break,
                _ => return Err(io::Error::other("a message that is not the run's")),
            },
            Ok(Event::Lost { first, last }) => {
                r.lost += u64::from(last.0.wrapping_sub(first.0)) + 1;
            }
            Err(natm::Error::Timeout) => {
                if done.load(Ordering::Acquire) {
                    break;
                }
            }
            Err(e) => return Err(natm_error("receiving", e)),
        }
    }
    // Answer the sender's last retransmissions (its lost final acks).
    ch.linger(Duration::from_millis(200), Duration::from_secs(2))
        .map_err(|e| natm_error("lingering", e))?;
    Ok(r)
}

/// One run of natm's channel at `size`, with the bulk flow beside it when the plan has
/// one.
fn natm_run(plan: &Plan, size: usize) -> io::Result<NatmMoved> {
    let bulk = match plan.bulk {
        Some((vc, qos)) => Some(Bulk::start(plan, vc, qos)?),
        None => None,
    };
    let measured = measured_run(plan, size);
    let bulk = bulk.map(Bulk::finish).transpose();
    let (mut moved, start) = measured?;
    if let Some(arrivals) = bulk? {
        // The bulk flow's messages that arrived during the measured run.
        let seconds = moved.seconds;
        let end = start + Duration::from_secs_f64(seconds);
        let messages = arrivals.iter().filter(|&&t| t >= start && t <= end).count() as u64;
        moved.bulk = Some(BulkMoved {
            bits_per_sec: if seconds > 0.0 {
                (messages * BULK_SIZE as u64) as f64 * 8.0 / seconds
            } else {
                0.0
            },
            messages,
            seconds,
        });
    }
    Ok(moved)
}

/// One run of the measured channel: its figures and when its sender started.
fn measured_run(plan: &Plan, size: usize) -> io::Result<(NatmMoved, Instant)> {
    let done = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::sync_channel::<()>(1);
    let rx = {
        let done = done.clone();
        let plan = plan.clone();
        thread::Builder::new().name("transport-rx".into()).spawn(
            move || -> io::Result<Received> {
                pin(plan.placement.server);
                let _ = ready_tx.send(());
                let mut ch = open(&plan.target.receiver_host, &plan)?;
                receive(&mut ch, &done, false)
            },
        )?
    };
    // The receiver has started opening; both ends' hellos meet.
    let _ = ready_rx.recv();
    pin(plan.placement.client);
    let sending = (|| -> io::Result<(u64, Instant, Channel)> {
        let mut ch = open(&plan.target.sender_host, plan)?;
        let mut msg: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        msg[0] = DATA;
        let mut sent = 0u64;
        let start = Instant::now();
        while more(plan.budget, sent, start) {
            for _ in 0..CLOCK_EVERY {
                ch.send(&msg).map_err(|e| natm_error("sending", e))?;
                sent += 1;
                if matches!(plan.budget, Budget::Count(n) if sent >= n) {
                    break;
                }
            }
        }
        let mut end = [0u8; 9];
        end[0] = END;
        end[1..].copy_from_slice(&sent.to_be_bytes());
        if plan.service == Service::Reliable {
            ch.send(&end)
                .map_err(|e| natm_error("sending the end", e))?;
        } else {
            // Each copy after the data has left, at its time.
            ch.flush(FLUSH).map_err(|e| natm_error("flushing", e))?;
            let left = Instant::now();
            for ms in END_COPIES_MS {
                let at = left + Duration::from_millis(ms);
                while Instant::now() < at {
                    ch.poll().map_err(|e| natm_error("polling", e))?;
                    thread::sleep(Duration::from_millis(1));
                }
                ch.send(&end)
                    .map_err(|e| natm_error("sending the end", e))?;
            }
        }
        ch.flush(FLUSH).map_err(|e| natm_error("flushing", e))?;
        Ok((sent, start, ch))
    })();
    done.store(true, Ordering::Release);
    let received = rx
        .join()
        .map_err(|_| io::Error::other("the receiver thread panicked"))?;
    let (sent, start, ch) = sending?;
    let r = received?;
    let stats = ch.stats().endpoint;
    let seconds = r
        .last
        .map_or(0.0, |l| l.duration_since(start).as_secs_f64());
    let per_sec = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
    if plan.service == Service::Reliable && r.messages != sent {
        return Err(io::Error::other(format!(
            "sent {sent} messages, {} arrived over a reliable channel",
            r.messages
        )));
    }
    let arrival_seconds = match (r.first, r.last) {
        (Some(f), Some(l)) => l.duration_since(f).as_secs_f64(),
        _ => 0.0,
    };
    let moved = NatmMoved {
        bits_per_sec: per_sec(r.bytes as f64 * 8.0),
        messages_per_sec: per_sec(r.messages as f64),
        sent_messages: sent,
        received_messages: r.messages,
        received_bytes: r.bytes,
        lost_messages: r.lost,
        seconds,
        tpdus_sent: stats.tpdus_sent,
        resends: stats.smart_resends + stats.timeout_resends,
        timeout_resends: stats.timeout_resends,
        tpdu_size: stats.tpdu_size,
        srtt_ms: stats.srtt.map(|d| d.as_nanos() as f64 / 1e6),
        min_rtt_ms: stats.min_rtt.map(|d| d.as_nanos() as f64 / 1e6),
        window_cuts: stats.window_cuts,
        random_loss_cuts: stats.random_loss_cuts,
        arrival_seconds,
        bulk: None,
    };
    Ok((moved, start))
}

/// The reliable bulk flow beside a measured run: a sender and a receiver thread on their
/// own channel.
struct Bulk {
    stop: Arc<AtomicBool>,
    sender_done: Arc<AtomicBool>,
    tx: thread::JoinHandle<io::Result<()>>,
    rx: thread::JoinHandle<io::Result<Received>>,
}

impl Bulk {
    /// Opens the bulk channel on `vc` and returns once its first message has been sent.
    fn start(plan: &Plan, vc: PvcAddr, qos: Qos) -> io::Result<Bulk> {
        let stop = Arc::new(AtomicBool::new(false));
        let sender_done = Arc::new(AtomicBool::new(false));
        let path = plan.target.path;
        let rx = {
            let done = sender_done.clone();
            let host = plan.target.receiver_host.clone();
            thread::Builder::new().name("bulk-rx".into()).spawn(
                move || -> io::Result<Received> {
                    let mut ch = open_channel(&host, Service::Reliable, vc, qos, path)?;
                    receive(&mut ch, &done, true)
                },
            )?
        };
        let (going_tx, going_rx) = mpsc::sync_channel::<()>(1);
        let tx = {
            let stop = stop.clone();
            let done = sender_done.clone();
            let host = plan.target.sender_host.clone();
            thread::Builder::new()
                .name("bulk-tx".into())
                .spawn(move || -> io::Result<()> {
                    let sent = (|| {
                        let mut ch = open_channel(&host, Service::Reliable, vc, qos, path)?;
                        let mut msg: Vec<u8> = (0..BULK_SIZE).map(|i| (i % 251) as u8).collect();
                        msg[0] = DATA;
                        let mut sent = 0u64;
                        while !stop.load(Ordering::Acquire) {
                            ch.send(&msg).map_err(|e| natm_error("bulk: sending", e))?;
                            if sent == 0 {
                                let _ = going_tx.send(());
                            }
                            sent += 1;
                        }
                        let mut end = [0u8; 9];
                        end[0] = END;
                        end[1..].copy_from_slice(&sent.to_be_bytes());
                        ch.send(&end)
                            .map_err(|e| natm_error("bulk: sending the end", e))?;
                        ch.flush(FLUSH).map_err(|e| natm_error("bulk: flushing", e))
                    })();
                    done.store(true, Ordering::Release);
                    sent
                })?
        };
        let bulk = Bulk {
            stop,
            sender_done,
            tx,
            rx,
        };
        // The sender drops its end of `going` when it fails before its first message.
        if going_rx.recv_timeout(HANDSHAKE + FLUSH).is_err() {
            return Err(match bulk.finish() {
                Err(e) => e,
                Ok(_) => io::Error::other(format!("bulk flow on VC {vc}: nothing sent")),
            });
        }
        Ok(bulk)
    }

    /// Stops the flow and returns its data messages' arrival times.
    fn finish(self) -> io::Result<Vec<Instant>> {
        self.stop.store(true, Ordering::Release);
        let sent = self
            .tx
            .join()
            .map_err(|_| io::Error::other("the bulk sender thread panicked"));
        self.sender_done.store(true, Ordering::Release);
        let received = self
            .rx
            .join()
            .map_err(|_| io::Error::other("the bulk receiver thread panicked"))?;
        sent??;
        Ok(received?.arrivals)
    }
}

/// One run of kernel TCP at `size`, with the plan's budget.
fn tcp_run(plan: &Plan, size: usize) -> io::Result<TcpMoved> {
    let (mut sender, mut receiver) = transport::pair(Kind::Tcp, None, size)?;
    let cpu = plan.placement.server;
    let rx = thread::Builder::new()
        .name("transport-rx-tcp".into())
        .spawn(move || -> io::Result<(u64, u64, Option<Instant>)> {
            pin(cpu);
            receiver.ready()?;
            let mut buf = vec![0u8; size];
            let (mut messages, mut bytes, mut last) = (0u64, 0u64, None);
            loop {
                match receiver.recv(&mut buf)? {
                    0 => break,
                    n => {
                        messages += 1;
                        bytes += n as u64;
                        last = Some(Instant::now());
                    }
                }
            }
            Ok((messages, bytes, last))
        })?;
    pin(plan.placement.client);
    let sending = (|| -> io::Result<(u64, Instant)> {
        sender.ready()?;
        let msg: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let mut sent = 0u64;
        let start = Instant::now();
        while more(plan.budget, sent, start) {
            for _ in 0..CLOCK_EVERY {
                sender.send(&msg)?;
                sent += 1;
                if matches!(plan.budget, Budget::Count(n) if sent >= n) {
                    break;
                }
            }
        }
        Ok((sent, start))
    })();
    // The end marker, also after a failure (so that the receiver stops).
    let ended = sender.send(&[]);
    drop(sender);
    let received = rx
        .join()
        .map_err(|_| io::Error::other("the receiver thread panicked"))?;
    let (sent, start) = sending?;
    ended?;
    let (messages, bytes, last) = received?;
    if messages != sent {
        return Err(io::Error::other(format!(
            "sent {sent} messages, {messages} arrived over TCP"
        )));
    }
    let seconds = last.map_or(0.0, |l| l.duration_since(start).as_secs_f64());
    let per_sec = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
    Ok(TcpMoved {
        bits_per_sec: per_sec(bytes as f64 * 8.0),
        messages_per_sec: per_sec(messages as f64),
        messages,
        bytes,
        seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(bytes: f64) -> Option<HalfPoint> {
        Some(HalfPoint {
            bytes,
            at_smallest: false,
        })
    }

    #[test]
    fn half_power_interpolates_between_the_sizes_around_half() {
        let p = [(64, 10.0), (1024, 40.0), (2048, 60.0), (8192, 100.0)];
        // Half of 100 is 50: between 1024 (40) and 2048 (60), half way.
        assert_eq!(half_power(&p), at(1536.0));
        // Order does not matter.
        let mut q = p;
        q.reverse();
        assert_eq!(half_power(&q), at(1536.0));
        // Exactly half at a size: that size.
        assert_eq!(
            half_power(&[(64, 10.0), (512, 50.0), (4096, 100.0)]),
            at(512.0)
        );
    }

    #[test]
    fn half_power_is_undefined_or_the_smallest_size_at_the_edges() {
        assert_eq!(half_power(&[]), None);
        assert_eq!(half_power(&[(64, 10.0)]), None);
        assert_eq!(half_power(&[(64, 10.0), (128, 0.0)]), None);
        assert_eq!(
            half_power(&[(64, 60.0), (128, 100.0)]),
            Some(HalfPoint {
                bytes: 64.0,
                at_smallest: true
            })
        );
        // The largest size is not the best one: half of the largest size's goodput.
        assert_eq!(
            half_power(&[(64, 10.0), (128, 200.0), (256, 40.0)]),
            at(64.0 + 64.0 * 10.0 / 190.0)
        );
    }

    fn moved(received: u64, arrival_seconds: f64) -> NatmMoved {
        NatmMoved {
            bits_per_sec: 0.0,
            messages_per_sec: 0.0,
            sent_messages: received,
            received_messages: received,
            received_bytes: 0,
            lost_messages: 0,
            seconds: arrival_seconds,
            tpdus_sent: received,
            resends: 0,
            timeout_resends: 0,
            tpdu_size: 8192,
            srtt_ms: None,
            min_rtt_ms: None,
            window_cuts: 0,
            random_loss_cuts: 0,
            arrival_seconds,
            bulk: None,
        }
    }

    #[test]
    fn a_guaranteed_rate_counts_the_cells_after_the_first_arrival() {
        // 1,500-byte messages: 32 cells each. 1,001 arrivals over 0.32 s: 100,000 cells/s.
        let runs = [moved(1001, 0.32), moved(1001, 0.32 * 1.02), moved(1, 0.0)];
        let f = rate_figure(100_000, 1500, 8192, &runs);
        assert_eq!(f.requested, 100_000);
        let a = f.achieved.unwrap();
        assert!((a.max - 100_000.0).abs() < 1e-6, "{a:?}");
        assert!((a.min - 100_000.0 / 1.02).abs() < 1e-6, "{a:?}");
        // The run with one arrival has no rate and is left out.
        let d = f.deviation_percent.unwrap();
        assert!(d.max.abs() < 1e-9 && (d.min - (1.0 / 1.02 - 1.0) * 100.0).abs() < 1e-9);
        assert!(
            rate_figure(10, 64, 8192, &[moved(0, 0.0)])
                .achieved
                .is_none()
        );
    }

    #[test]
    fn an_impaired_run_takes_the_direct_path_never_a_lane() {
        assert_eq!(impaired_path(DataPath::Auto).unwrap(), DataPath::Direct);
        assert_eq!(impaired_path(DataPath::Direct).unwrap(), DataPath::Direct);
        assert_eq!(impaired_path(DataPath::Daemon).unwrap(), DataPath::Daemon);
        let e = impaired_path(DataPath::Lane).unwrap_err().to_string();
        assert!(e.contains("--path lane"), "{e}");
    }

    #[test]
    fn a_count_budget_stops_at_the_count() {
        let t = Instant::now();
        assert!(more(Budget::Count(2), 1, t));
        assert!(!more(Budget::Count(2), 2, t));
        assert!(!more(Budget::Seconds(0.0), 0, t));
    }
}

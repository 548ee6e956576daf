//! `natm perf isolation`: the issue-5 policing-isolation acceptance, on real daemons.
//!
//! The claim: a UBR source flooding its port at 10× its share and a VBR source at 2× its
//! PCR cost a conforming CBR connection no cell, and its p99 delay rises less than 10%.
//!
//! The command brings up its own lab (natm-cli's `lab` module, in a private runtime
//! directory it takes down at the end): switch `s1`; hosts `cbr`, `vbr` and `ubr` on
//! unlimited shared-memory links; host `sink` on a link with a line rate (`--sink-rate`).
//! Three PVCs go to the sink, each through the switch's UPC and per-class queues (strict
//! priority CBR > rt-VBR > nrt-VBR > UBR):
//!
//! * 0.100, `cbr:pcr=C` with C = `--cbr-share` of the sink rate, UPC off: the conforming
//!   connection. Its application paces 1-cell SDUs at 90% of C (the adapter shapes it to C
//!   on its unlimited link as well). Each SDU holds a sequence number, the phase and its
//!   CLOCK_MONOTONIC send time; the sink (same process, same clock) records the one-way
//!   delay in an HdrHistogram and counts lost and out-of-order SDUs. Its UPC is off because
//!   a CDVT-0 policer would judge the jitter of the sender's threads and daemons, not the
//!   contract; the switch's counters still show every cell it dropped.
//! * 0.101, `vbr:pcr=P,scr=P/2,mbs=32` with P = C, UPC discard. The application opens its
//!   VC with `vbr:pcr=2P,scr=2P,mbs=1`, so its adapter sends at twice the switch's PCR and
//!   the switch's UPC must cut it.
//! * 0.102, `ubr`, UPC off: the application sends 8 KiB SDUs as fast as it can; what the
//!   link leaves (the sink rate minus C and the VBR's SCR) is its share, and its queue at
//!   the switch drops the rest (EPD/PPD or queue full).
//!
//! Phase 1 runs the CBR connection alone, phase 2 with both aggressors (started first,
//! so their queues are full when the CBR phase starts). Per phase the command reports the
//! CBR SDUs sent, received, lost and out of order, p50/p99 delay, and from the switch's
//! `status` (deltas over the phase) each connection's cells in, out, policed, tagged and
//! queue-dropped, and the aggressors' offered rates beside their shares.
//!
//! The default sink rate, 15,000 cells/s, is low so that the UBR flood reaches 10× its
//! share on a small machine: the aggressors' daemons shape each VC in real time, one cell
//! per wake-up for a VC with a rate, and a 2-core machine wakes them some 100,000 times a
//! second at best. At `--sink-rate oc3` the senders cannot load the link.
//!
//! What it is not: the delays include both hosts' daemons and the switch daemon sharing
//! this machine's CPUs with the aggressors' senders, so the p99 rise measures the machine
//! as much as the switch; it is printed, not judged.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use clap::Args;
use natm::{Host, VcOptions};
use serde::Serialize;
use serde_json::{Value, json};

use super::histo::{Latencies, LatencySummary};
use crate::cmd::lab::{self, OwnedLab};
use crate::{CliError, CmdResult};

/// The PVCs' VCIs at both ends.
const CBR_VC: &str = "0.100";
const VBR_VC: &str = "0.101";
const UBR_VC: &str = "0.102";
/// A CBR SDU: sequence number, send time (ns), phase: one cell.
const CBR_SDU: usize = 17;
const VBR_SDU: usize = 1000;
const UBR_SDU: usize = 8192;
/// The sink's CBR channel: enough posted buffers for 100 ms at 10,000 SDUs/s.
const SINK_CBR_BUFFERS: u32 = 2048;
/// Time for cells in flight to arrive after a phase's senders stop.
const DRAIN: Duration = Duration::from_millis(400);
/// Aggressors run this long before phase 2's CBR traffic starts.
const WARM_UP: Duration = Duration::from_millis(300);
const SWITCH_TIMEOUT: Duration = Duration::from_secs(3);

/// `natm perf isolation`
#[derive(Args, Debug)]
pub struct IsolationArgs {
    /// Seconds of CBR traffic per phase.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// The sink link's line rate: oc3, oc12, 25m, ds3 or cells/s.
    #[arg(long, default_value = "15000")]
    sink_rate: String,
    /// The CBR connection's PCR as a percentage of the sink rate (also the VBR's PCR).
    #[arg(long, default_value_t = 20)]
    cbr_share: u32,
    /// The lab's runtime directory (default: a fresh one under the temporary directory);
    /// it must not hold a running lab, and is removed at the end.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// The contracts of one run, in cells/s.
#[derive(Clone, Debug, Serialize)]
struct Plan {
    sink_rate: String,
    sink_cells_per_s: u64,
    cbr_qos: String,
    vbr_qos: String,
    vbr_source_qos: String,
    ubr_qos: String,
    cbr_pcr: u32,
    cbr_send_rate: u32,
    vbr_pcr: u32,
    vbr_scr: u32,
    /// What the sink link leaves for UBR: its rate minus C and the VBR's SCR.
    ubr_share: u64,
}

impl Plan {
    fn new(sink_rate: &str, cbr_share: u32) -> Result<Plan, CliError> {
        let rate: natm_netem::Rate = sink_rate
            .parse()
            .map_err(|e| CliError::usage(format!("--sink-rate {sink_rate}: {e}")))?;
        let Some((num, den)) = rate.exact() else {
            return Err(CliError::usage(
                "--sink-rate: the sink's link needs a line rate (not unlimited)",
            ));
        };
        let cells = num / den;
        if !(1..=45).contains(&cbr_share) {
            return Err(CliError::usage(format!(
                "--cbr-share {cbr_share}: use 1..=45 (the CBR and the VBR each take it)"
            )));
        }
        let pcr = u32::try_from(cells * u64::from(cbr_share) / 100).unwrap_or(u32::MAX);
        if !(20..=500_000).contains(&pcr) {
            return Err(CliError::usage(format!(
                "--sink-rate {sink_rate} with --cbr-share {cbr_share} gives a CBR PCR of \
                 {pcr} cells/s: keep it in 20..=500000 (the senders run in real time)"
            )));
        }
        let scr = pcr / 2;
        Ok(Plan {
            sink_rate: rate.to_string(),
            sink_cells_per_s: cells,
            cbr_qos: format!("cbr:pcr={pcr}"),
            vbr_qos: format!("vbr:pcr={pcr},scr={scr},mbs=32"),
            vbr_source_qos: format!("vbr:pcr={p2},scr={p2},mbs=1", p2 = 2 * pcr),
            ubr_qos: "ubr".into(),
            cbr_pcr: pcr,
            cbr_send_rate: pcr / 10 * 9,
            vbr_pcr: pcr,
            vbr_scr: scr,
            ubr_share: cells - u64::from(pcr) - u64::from(scr),
        })
    }

    fn topology(&self) -> String {
        format!(
            r#"[[switch]]
name = "s1"

[[host]]
name = "cbr"

[[host]]
name = "vbr"

[[host]]
name = "ubr"

[[host]]
name = "sink"

[[link]]
a = "cbr"
b = "s1"
rate = "unlimited"

[[link]]
a = "vbr"
b = "s1"
rate = "unlimited"

[[link]]
a = "ubr"
b = "s1"
rate = "unlimited"

[[link]]
a = "sink"
b = "s1"
rate = "{rate}"

[[pvc]]
a = "cbr"
b = "sink"
vc = "{CBR_VC}"
qos = "{cbr}"
upc = "off"

[[pvc]]
a = "vbr"
b = "sink"
vc = "{VBR_VC}"
qos = "{vbr}"
upc = "discard"

[[pvc]]
a = "ubr"
b = "sink"
vc = "{UBR_VC}"
qos = "{ubr}"
upc = "off"
"#,
            rate = self.sink_rate,
            cbr = self.cbr_qos,
            vbr = self.vbr_qos,
            ubr = self.ubr_qos,
        )
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the one clock both ends read.
fn mono_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

fn natm_err(what: &str, e: natm::Error) -> CliError {
    CliError::failure(format!("{what}: {e}"))
}

fn open(
    lab: &OwnedLab,
    node: &str,
    vc: &str,
    qos: &str,
    buffers: u32,
    size: u32,
) -> Result<natm::Vc, CliError> {
    let host = Host::connect_path(lab.socket(node)?).map_err(|e| natm_err(node, e))?;
    let addr = vc
        .parse()
        .map_err(|e| CliError::failure(format!("{vc}: {e}")))?;
    let qos = qos
        .parse()
        .map_err(|e| CliError::failure(format!("{qos}: {e}")))?;
    host.open(
        VcOptions::new(addr)
            .qos(qos)
            .buffers(buffers)
            .buffer_size(size),
    )
    .map_err(|e| natm_err(&format!("{node} opening {vc}"), e))
}

/// What the sink saw of the CBR connection in one phase.
#[derive(Default)]
struct CbrRx {
    received: u64,
    out_of_order: u64,
    delays: Latencies,
}

/// The sink's CBR receiver: runs until `stop`, attributes each SDU to the phase it names.
fn cbr_sink(mut vc: natm::Vc, stop: Arc<AtomicBool>) -> Result<[CbrRx; 2], String> {
    let mut phases: [CbrRx; 2] = Default::default();
    let mut last: Option<u64> = None;
    let mut buf = [0u8; 64];
    loop {
        match vc.recv_timeout(&mut buf, Duration::from_millis(20)) {
            Ok(n) => {
                let now = mono_ns();
                if n != CBR_SDU {
                    return Err(format!("the sink got a {n}-byte SDU on {CBR_VC}"));
                }
                let seq = u64::from_be_bytes(buf[..8].try_into().expect("8 bytes"));
                let sent = u64::from_be_bytes(buf[8..16].try_into().expect("8 bytes"));
                let Some(p) = phases.get_mut(usize::from(buf[16])) else {
                    return Err(format!("an SDU on {CBR_VC} names phase {}", buf[16]));
                };
                p.received += 1;
                if last.is_some_and(|l| seq <= l) {
                    p.out_of_order += 1;
                }
                last = Some(last.map_or(seq, |l| l.max(seq)));
                p.delays.record(now.saturating_sub(sent));
            }
            Err(natm::Error::Timeout) if stop.load(Ordering::Relaxed) => return Ok(phases),
            Err(natm::Error::Timeout) => {}
            Err(e) => return Err(format!("sink {CBR_VC}: {e}")),
        }
    }
}

/// A sink that counts what arrives on an aggressor's VC until `stop`.
fn count_sink(mut vc: natm::Vc, stop: Arc<AtomicBool>, sdus: Arc<AtomicU64>) -> Result<(), String> {
    let mut buf = vec![0u8; UBR_SDU];
    loop {
        match vc.recv_timeout(&mut buf, Duration::from_millis(20)) {
            Ok(_) => {
                sdus.fetch_add(1, Ordering::Relaxed);
            }
            Err(natm::Error::Timeout) if stop.load(Ordering::Relaxed) => return Ok(()),
            Err(natm::Error::Timeout) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// An aggressor: sends `len`-byte SDUs as fast as its VC takes them until `stop`.
fn flood(
    mut vc: natm::Vc,
    len: usize,
    stop: Arc<AtomicBool>,
    sdus: Arc<AtomicU64>,
) -> Result<(), String> {
    let sdu = vec![0x5Au8; len];
    while !stop.load(Ordering::Relaxed) {
        match vc.send(&sdu) {
            Ok(()) => {
                sdus.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

/// Sends CBR SDUs paced at `rate` per second for `time`, stamped with `phase`; returns how
/// many. The schedule is absolute (a late sender catches up by at most two SDUs, which the
/// adapter's shaper spaces at the PCR).
fn cbr_send(
    vc: &mut natm::Vc,
    rate: u32,
    time: Duration,
    phase: u8,
    seq: &mut u64,
) -> Result<u64, CliError> {
    let period = Duration::from_nanos(1_000_000_000 / u64::from(rate.max(1)));
    let start = Instant::now();
    let mut next = start;
    let mut sent = 0;
    while start.elapsed() < time {
        let now = Instant::now();
        if next > now {
            thread::sleep(next - now);
        } else if now - next > 2 * period {
            next = now;
        }
        // Stamped once a buffer is free, just before it is posted: the delay is the
        // network's (hostd, shaper, link, switch, sink), not the wait for a buffer.
        let err = |e| natm_err(&format!("cbr sending on {CBR_VC}"), e);
        let mut b = vc.tx_buffer().map_err(err)?;
        b[..8].copy_from_slice(&seq.to_be_bytes());
        b[8..16].copy_from_slice(&mono_ns().to_be_bytes());
        b[16] = phase;
        b.send(CBR_SDU).map_err(err)?;
        *seq += 1;
        sent += 1;
        next += period;
    }
    Ok(sent)
}

/// One connection's switch counters (source to sink), as deltas over a phase.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
struct ConnCounters {
    cells_in: u64,
    cells_out: u64,
    /// Discarded by the UPC at the source's port.
    policed: u64,
    tagged: u64,
    /// Dropped otherwise: queue full, EPD/PPD, port down.
    queue_dropped: u64,
}

impl ConnCounters {
    fn minus(self, o: ConnCounters) -> ConnCounters {
        ConnCounters {
            cells_in: self.cells_in.saturating_sub(o.cells_in),
            cells_out: self.cells_out.saturating_sub(o.cells_out),
            policed: self.policed.saturating_sub(o.policed),
            tagged: self.tagged.saturating_sub(o.tagged),
            queue_dropped: self.queue_dropped.saturating_sub(o.queue_dropped),
        }
    }
}

/// The three connections' counters from the switch's `status`.
#[derive(Clone, Copy, Debug, Default)]
struct SwitchSnap {
    cbr: ConnCounters,
    vbr: ConnCounters,
    ubr: ConnCounters,
}

fn field(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or(0)
}

/// The counters of the connection whose source end is `…:vc`.
fn conn(status: &Value, vc: &str) -> Result<ConnCounters, CliError> {
    let missing = || CliError::failure(format!("the switch's status has no connection {vc}"));
    let conns = status["connections"].as_array().ok_or_else(missing)?;
    let c = conns
        .iter()
        .find(|c| {
            c["a"]
                .as_str()
                .is_some_and(|a| a.ends_with(&format!(":{vc}")))
        })
        .ok_or_else(missing)?;
    let port: u64 = c["a"]
        .as_str()
        .and_then(|a| a.split(':').next())
        .and_then(|p| p.parse().ok())
        .ok_or_else(missing)?;
    // Each source host has its own port, carrying this one connection: the port's policed
    // count is the connection's.
    let policed = status["ports"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["id"].as_u64() == Some(port)))
        .map_or(0, |p| field(&p["counters"], "policed"));
    let d = &c["a_to_b"];
    Ok(ConnCounters {
        cells_in: field(d, "cells_in"),
        cells_out: field(d, "cells_out"),
        policed,
        tagged: field(d, "tagged"),
        queue_dropped: field(d, "dropped").saturating_sub(policed),
    })
}

fn switch_snap(lab: &OwnedLab) -> Result<SwitchSnap, CliError> {
    let v =
        natm_switchd::client::request(&lab.socket("s1")?, &json!({"op": "status"}), SWITCH_TIMEOUT)
            .map_err(|e| CliError::failure(format!("switch s1 status: {e}")))?;
    if v["ok"] != Value::Bool(true) {
        return Err(CliError::failure(format!(
            "switch s1 status refused: {}",
            v["error"].as_str().unwrap_or("no reason")
        )));
    }
    Ok(SwitchSnap {
        cbr: conn(&v, CBR_VC)?,
        vbr: conn(&v, VBR_VC)?,
        ubr: conn(&v, UBR_VC)?,
    })
}

/// What one phase measured.
#[derive(Clone, Debug, Serialize)]
struct PhaseReport {
    name: &'static str,
    seconds: f64,
    cbr_sent: u64,
    cbr_received: u64,
    cbr_lost: u64,
    cbr_out_of_order: u64,
    cbr_delay: Option<LatencySummary>,
    switch_cbr: ConnCounters,
    switch_vbr: ConnCounters,
    switch_ubr: ConnCounters,
    /// Cells/s the aggressors' applications offered (0 in phase 1).
    vbr_offered_cells_per_s: f64,
    ubr_offered_cells_per_s: f64,
    /// Cells/s of whole SDUs the sink received on the aggressors' VCs (a frame the UPC or
    /// a queue cut a cell from is lost whole at the sink's AAL5).
    vbr_delivered_cells_per_s: f64,
    ubr_delivered_cells_per_s: f64,
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
struct Report {
    plan: Plan,
    phases: Vec<PhaseReport>,
    /// (p99 with aggressors / p99 alone − 1) × 100.
    p99_rise_percent: Option<f64>,
    /// The UBR's offered rate over its share; the VBR's over its switch PCR.
    ubr_offered_over_share: f64,
    vbr_offered_over_pcr: f64,
}

fn cells_of(len: usize) -> u64 {
    natm_wire::aal5::cell_count(len) as u64
}

/// Runs `natm perf isolation`.
pub fn run(args: IsolationArgs) -> CmdResult {
    if !(args.seconds.is_finite() && (0.2..=3600.0).contains(&args.seconds)) {
        return Err(CliError::usage(format!(
            "--seconds {}: use 0.2 to 3600",
            args.seconds
        )));
    }
    let plan = Plan::new(&args.sink_rate, args.cbr_share)?;
    let dir = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("natm-isolation-{}", std::process::id()))
    });
    if dir.join("lab.json").exists() {
        return Err(CliError::usage(format!(
            "--dir {}: a lab was started there; use another directory",
            dir.display()
        )));
    }
    let text = plan.topology();
    let topo = lab::topology::Topology::parse(&text, None)
        .map_err(|e| CliError::failure(format!("the isolation lab's topology: {e}")))?;
    let mut lab = OwnedLab::start("natm perf isolation", &dir, &topo, text, None)?;
    let report = measure(&lab, &plan, Duration::from_secs_f64(args.seconds));
    let down = lab.down().map(|_| ());
    let report = report?;
    down?;
    super::print_report(args.json, &report, print_table)
}

/// The sink's threads and their stop flag.
struct Sinks {
    stop: Arc<AtomicBool>,
    cbr: JoinHandle<Result<[CbrRx; 2], String>>,
    others: Vec<JoinHandle<Result<(), String>>>,
    vbr_sdus: Arc<AtomicU64>,
    ubr_sdus: Arc<AtomicU64>,
}

impl Sinks {
    fn start(lab: &OwnedLab, plan: &Plan) -> Result<Sinks, CliError> {
        let stop = Arc::new(AtomicBool::new(false));
        let cbr_vc = open(lab, "sink", CBR_VC, &plan.cbr_qos, SINK_CBR_BUFFERS, 64)?;
        let vbr_vc = open(lab, "sink", VBR_VC, &plan.vbr_qos, 64, 1024)?;
        let ubr_vc = open(lab, "sink", UBR_VC, &plan.ubr_qos, 64, UBR_SDU as u32)?;
        let (vbr_sdus, ubr_sdus) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let s = stop.clone();
        let cbr = thread::spawn(move || cbr_sink(cbr_vc, s));
        let mut others = Vec::new();
        for (vc, n) in [(vbr_vc, &vbr_sdus), (ubr_vc, &ubr_sdus)] {
            let (s, n) = (stop.clone(), n.clone());
            others.push(thread::spawn(move || count_sink(vc, s, n)));
        }
        Ok(Sinks {
            stop,
            cbr,
            others,
            vbr_sdus,
            ubr_sdus,
        })
    }

    fn finish(self) -> Result<[CbrRx; 2], CliError> {
        self.stop.store(true, Ordering::Relaxed);
        fn joined<T>(r: thread::Result<Result<T, String>>) -> Result<T, CliError> {
            match r {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(CliError::failure(format!("sink: {e}"))),
                Err(_) => Err(CliError::failure("a sink thread panicked")),
            }
        }
        for h in self.others {
            joined(h.join())?;
        }
        joined(self.cbr.join())
    }
}

/// The aggressors of phase 2.
struct Aggressors {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Result<(), String>>>,
    vbr_sdus: Arc<AtomicU64>,
    ubr_sdus: Arc<AtomicU64>,
}

impl Aggressors {
    fn start(lab: &OwnedLab, plan: &Plan) -> Result<Aggressors, CliError> {
        let stop = Arc::new(AtomicBool::new(false));
        let vbr_vc = open(lab, "vbr", VBR_VC, &plan.vbr_source_qos, 64, 1024)?;
        let ubr_vc = open(lab, "ubr", UBR_VC, &plan.ubr_qos, 64, UBR_SDU as u32)?;
        let (vbr_sdus, ubr_sdus) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let mut threads = Vec::new();
        for (vc, len, n) in [(vbr_vc, VBR_SDU, &vbr_sdus), (ubr_vc, UBR_SDU, &ubr_sdus)] {
            let (s, n) = (stop.clone(), n.clone());
            threads.push(thread::spawn(move || flood(vc, len, s, n)));
        }
        Ok(Aggressors {
            stop,
            threads,
            vbr_sdus,
            ubr_sdus,
        })
    }

    fn stop(self) -> CmdResult {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.threads {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(CliError::failure(format!("aggressor: {e}"))),
                Err(_) => return Err(CliError::failure("an aggressor thread panicked")),
            }
        }
        Ok(())
    }
}

fn measure(lab: &OwnedLab, plan: &Plan, time: Duration) -> Result<Report, CliError> {
    let sinks = Sinks::start(lab, plan)?;
    // Four transmit buffers: a sender its VC holds back waits for a buffer rather than
    // queueing SDUs whose delay would then be its own.
    let mut cbr = open(lab, "cbr", CBR_VC, &plan.cbr_qos, 8, 64)?;
    let mut seq = 0u64;

    // Phase 1: the CBR connection alone.
    let s0 = switch_snap(lab)?;
    let sent1 = cbr_send(&mut cbr, plan.cbr_send_rate, time, 0, &mut seq)?;
    thread::sleep(DRAIN);
    let s1 = switch_snap(lab)?;

    // Phase 2: the aggressors first, then the CBR connection among them.
    let aggressors = Aggressors::start(lab, plan)?;
    thread::sleep(WARM_UP);
    let s1b = switch_snap(lab)?;
    let (vbr_tx0, ubr_tx0) = (
        aggressors.vbr_sdus.load(Ordering::Relaxed),
        aggressors.ubr_sdus.load(Ordering::Relaxed),
    );
    let (vbr_rx1, ubr_rx1) = (
        sinks.vbr_sdus.load(Ordering::Relaxed),
        sinks.ubr_sdus.load(Ordering::Relaxed),
    );
    let t2 = Instant::now();
    let sent2 = cbr_send(&mut cbr, plan.cbr_send_rate, time, 1, &mut seq)?;
    let elapsed2 = t2.elapsed().as_secs_f64();
    let (vbr_tx, ubr_tx) = (
        aggressors.vbr_sdus.load(Ordering::Relaxed) - vbr_tx0,
        aggressors.ubr_sdus.load(Ordering::Relaxed) - ubr_tx0,
    );
    let (vbr_rx, ubr_rx) = (
        sinks.vbr_sdus.load(Ordering::Relaxed) - vbr_rx1,
        sinks.ubr_sdus.load(Ordering::Relaxed) - ubr_rx1,
    );
    let s2a = switch_snap(lab)?;
    aggressors.stop()?;
    thread::sleep(DRAIN);
    let s2 = switch_snap(lab)?;
    drop(cbr);
    let rx = sinks.finish()?;

    let secs = time.as_secs_f64();
    let rate = |n: u64, len: usize| (n * cells_of(len)) as f64 / elapsed2;
    let phase = |name,
                 sent: u64,
                 rx: &CbrRx,
                 cbr: ConnCounters,
                 vbr,
                 ubr,
                 offered: (f64, f64),
                 delivered: (f64, f64)| PhaseReport {
        name,
        seconds: secs,
        cbr_sent: sent,
        cbr_received: rx.received,
        cbr_lost: sent.saturating_sub(rx.received),
        cbr_out_of_order: rx.out_of_order,
        cbr_delay: rx.delays.summary(),
        switch_cbr: cbr,
        switch_vbr: vbr,
        switch_ubr: ubr,
        vbr_offered_cells_per_s: offered.0,
        ubr_offered_cells_per_s: offered.1,
        vbr_delivered_cells_per_s: delivered.0,
        ubr_delivered_cells_per_s: delivered.1,
    };
    let p1 = phase(
        "CBR alone",
        sent1,
        &rx[0],
        s1.cbr.minus(s0.cbr),
        s1.vbr.minus(s0.vbr),
        s1.ubr.minus(s0.ubr),
        (0.0, 0.0),
        (0.0, 0.0),
    );
    // The CBR counters over all of phase 2 (warm-up and drain included: it sends nothing
    // then); the aggressors' over the CBR traffic's span, when both ran.
    let p2 = phase(
        "CBR + VBR at 2x PCR + UBR flood",
        sent2,
        &rx[1],
        s2.cbr.minus(s1.cbr),
        s2a.vbr.minus(s1b.vbr),
        s2a.ubr.minus(s1b.ubr),
        (rate(vbr_tx, VBR_SDU), rate(ubr_tx, UBR_SDU)),
        (rate(vbr_rx, VBR_SDU), rate(ubr_rx, UBR_SDU)),
    );
    let p99_rise_percent = match (&p1.cbr_delay, &p2.cbr_delay) {
        (Some(a), Some(b)) if a.p99_ns > 0 => {
            Some((b.p99_ns as f64 / a.p99_ns as f64 - 1.0) * 100.0)
        }
        _ => None,
    };
    let ubr_offered_over_share = p2.ubr_offered_cells_per_s / plan.ubr_share.max(1) as f64;
    let vbr_offered_over_pcr = p2.vbr_offered_cells_per_s / f64::from(plan.vbr_pcr.max(1));
    Ok(Report {
        plan: plan.clone(),
        phases: vec![p1, p2],
        p99_rise_percent,
        ubr_offered_over_share,
        vbr_offered_over_pcr,
    })
}

fn us(ns: Option<u64>) -> String {
    ns.map_or("-".into(), |n| format!("{:.1}", n as f64 / 1000.0))
}

fn print_table(r: &Report) {
    let p = &r.plan;
    println!(
        "sink link {} ({} cells/s); CBR {} (sent at {} cells/s), VBR {} (source opens {}), \
         UBR {} (share {} cells/s)",
        p.sink_rate,
        p.sink_cells_per_s,
        p.cbr_qos,
        p.cbr_send_rate,
        p.vbr_qos,
        p.vbr_source_qos,
        p.ubr_qos,
        p.ubr_share
    );
    println!(
        "{:<34} {:>8} {:>8} {:>6} {:>6} {:>10} {:>10}",
        "phase", "CBR sent", "received", "lost", "ooo", "p50 µs", "p99 µs"
    );
    for ph in &r.phases {
        let d = ph.cbr_delay.as_ref();
        println!(
            "{:<34} {:>8} {:>8} {:>6} {:>6} {:>10} {:>10}",
            ph.name,
            ph.cbr_sent,
            ph.cbr_received,
            ph.cbr_lost,
            ph.cbr_out_of_order,
            us(d.map(|d| d.p50_ns)),
            us(d.map(|d| d.p99_ns)),
        );
    }
    match r.p99_rise_percent {
        Some(x) => {
            println!("CBR p99 rise with aggressors: {x:+.1}% (goal < 10%; measured, not judged)")
        }
        None => println!("CBR p99 rise: not measured (no delays recorded)"),
    }
    println!();
    println!(
        "switch s1, per connection (source to sink):\n{:<34} {:>5} {:>10} {:>10} {:>10} {:>8} {:>12}",
        "phase", "conn", "cells in", "cells out", "policed", "tagged", "queue-drop"
    );
    for ph in &r.phases {
        for (name, c) in [
            ("CBR", ph.switch_cbr),
            ("VBR", ph.switch_vbr),
            ("UBR", ph.switch_ubr),
        ] {
            println!(
                "{:<34} {:>5} {:>10} {:>10} {:>10} {:>8} {:>12}",
                ph.name, name, c.cells_in, c.cells_out, c.policed, c.tagged, c.queue_dropped
            );
        }
    }
    if let Some(ph) = r.phases.get(1) {
        println!();
        println!(
            "aggressors in phase 2: VBR offered {:.0} cells/s ({:.2}x its PCR {}), whole SDUs \
             delivered {:.0} cells/s; UBR offered {:.0} cells/s ({:.1}x its share {}), whole \
             SDUs delivered {:.0} cells/s",
            ph.vbr_offered_cells_per_s,
            r.vbr_offered_over_pcr,
            p.vbr_pcr,
            ph.vbr_delivered_cells_per_s,
            ph.ubr_offered_cells_per_s,
            r.ubr_offered_over_share,
            p.ubr_share,
            ph.ubr_delivered_cells_per_s,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_takes_shares_of_the_sink_rate() {
        let p = Plan::new("50000", 20).unwrap();
        assert_eq!(p.cbr_qos, "cbr:pcr=10000");
        assert_eq!(p.vbr_qos, "vbr:pcr=10000,scr=5000,mbs=32");
        assert_eq!(p.vbr_source_qos, "vbr:pcr=20000,scr=20000,mbs=1");
        assert_eq!(p.ubr_share, 35_000);
        assert_eq!(p.cbr_send_rate, 9_000);
        let t = p.topology();
        assert!(t.contains("rate = \"50000\""));
        lab::topology::Topology::parse(&t, None).expect("the lab takes it");
    }

    #[test]
    fn bad_rates_and_shares_are_refused_with_a_reason() {
        for (rate, share, what) in [
            ("unlimited", 20, "line rate"),
            ("fast", 20, "--sink-rate fast"),
            ("50000", 0, "--cbr-share 0"),
            ("50000", 46, "--cbr-share 46"),
            ("50", 20, "CBR PCR of 10"),
        ] {
            let e = Plan::new(rate, share).unwrap_err();
            assert_eq!(e.code, 2);
            assert!(e.message.contains(what), "{rate}/{share}: {}", e.message);
        }
    }

    #[test]
    fn a_connection_is_read_from_the_switch_status_by_its_source_vc() {
        let status = json!({
            "ports": [
                {"id": 2, "counters": {"policed": 7}},
                {"id": 4, "counters": {"policed": 0}},
            ],
            "connections": [
                {"a": "2:0.101", "b": "4:0.101",
                 "a_to_b": {"cells_in": 100, "cells_out": 80, "dropped": 20, "tagged": 1}},
            ],
        });
        let c = conn(&status, "0.101").unwrap();
        assert_eq!(
            c,
            ConnCounters {
                cells_in: 100,
                cells_out: 80,
                policed: 7,
                tagged: 1,
                queue_dropped: 13
            }
        );
        assert!(conn(&status, "0.100").is_err());
    }
}

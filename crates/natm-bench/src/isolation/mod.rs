//! The engine of `natm perf isolation`: the issue-5 policing-isolation acceptance, on real daemons.
//!
//! The claim: a UBR source flooding its port at 10× its share and a VBR source at 2× its
//! PCR cost a conforming CBR connection no cell, and its p99 delay rises less than 10%.
//!
//! The command brings up its own lab (natm-lab, in a private runtime
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
//!   VC with `vbr:pcr=2P,scr=2P,mbs=1` on a lane, so its adapter sends at twice the
//!   switch's PCR and the switch's UPC must cut it.
//! * 0.102, `ubr`, UPC off: the application sends 8 KiB SDUs on a lane opened with
//!   `ubr:pcr=R`, R = `--ubr-over` (default 10) times its share, so its adapter sends at
//!   that rate (`--ubr-over max`: unshaped, as fast as the host goes). Its share is what the
//!   link leaves (the sink rate minus C and the VBR's SCR); its queue at the switch drops
//!   the rest (EPD/PPD or queue full).
//!
//! Phase 1 runs the CBR connection alone, phase 2 among both aggressors, phase 3 alone
//! again: the control. The phases take turns in five rounds of one window each
//! (`--seconds` per phase in all), so all see the machine in the same states: before a
//! window alone the aggressors pause and their queues drain; before a window among them
//! they run long enough to fill their queues. Per phase the command reports the CBR SDUs
//! sent, received, lost and out of order, p50/p99 delay, and from the switch's `status`
//! (deltas over the phase's windows) each connection's cells in, out, policed, tagged and
//! queue-dropped, and the aggressors' offered rates beside their shares.
//!
//! The control measures nothing new about the network: phases 1 and 3 are the same
//! experiment, so their p99s differ only by the machine's noise. The report gives that
//! difference beside the rise, because a rise smaller than it is not a finding.
//!
//! The default sink rate, 15,000 cells/s, is low so that the aggressors reach their rates
//! on a small machine; at `--sink-rate oc3` a 2-core machine cannot give them the 2.5 M
//! cells/s that 10× the UBR's share asks, and the report says what they offered.
//!
//! The aggressors' hosts stand for machines of their own: their daemons and the threads
//! that send on them run at `SCHED_IDLE` (`--aggressor-cpu idle`, the default), so they get
//! the CPU time the switch, the sink and the CBR host leave, and a CBR cell's wake-ups do
//! not wait behind them. The switch and the sink's daemon, which every aggressor cell
//! crosses, run at normal priority and do all of the aggressors' work there; the report
//! shows what the aggressors offered. `--aggressor-cpu normal` lets them share the CPUs
//! evenly with the rest, which on a 2-core machine measures the machine.
//!
//! What it is not: the delays include the daemons' wake-ups on this machine's CPUs; the
//! p99 rise is printed, not judged.

mod render;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use natm::{DataPath, Host, VcOptions};
use natm_nic::sched::{self, Policy};
use serde::Serialize;

use natm_lab::OwnedLab;
use natm_lab::topology::Topology;

use crate::Error;
use crate::histo::{Latencies, LatencySummary};

mod counters;

pub use counters::ConnCounters;
use counters::{SwitchSnap, switch_snap};

/// The PVCs' VCIs at both ends.
const CBR_VC: &str = "0.100";
const VBR_VC: &str = "0.101";
const UBR_VC: &str = "0.102";
/// A CBR SDU: sequence number, send time (ns), phase: one cell.
const CBR_SDU: usize = 17;
const VBR_SDU: usize = 1000;
const UBR_SDU: usize = 8192;
/// A channel to open: its VC, buffer count and buffer size.
#[derive(Clone, Copy)]
struct ChannelPlan {
    vc: &'static str,
    buffers: u32,
    size: u32,
}

/// The sink's CBR channel: enough posted buffers for 100 ms at 10,000 SDUs/s.
const SINK_CBR: ChannelPlan = ChannelPlan {
    vc: CBR_VC,
    buffers: 2048,
    size: 64,
};
/// The CBR source: four transmit buffers, so a sender its VC holds back waits for a buffer
/// rather than queueing SDUs whose delay would then be its own.
const CBR_SOURCE: ChannelPlan = ChannelPlan {
    vc: CBR_VC,
    buffers: 8,
    size: 64,
};
/// The VBR and UBR channels, at the sink and at their sources.
const VBR: ChannelPlan = ChannelPlan {
    vc: VBR_VC,
    buffers: 64,
    size: 1024,
};
const UBR: ChannelPlan = ChannelPlan {
    vc: UBR_VC,
    buffers: 64,
    size: UBR_SDU as u32,
};
/// Time for the aggressors' queues (4,096 UBR cells at the switch) to drain after they
/// pause, before a window alone.
const DRAIN: Duration = Duration::from_millis(400);
/// Time for the CBR cells in flight to arrive after a window (they take ~100 µs).
const CBR_DRAIN: Duration = Duration::from_millis(50);
/// Aggressors run this long before a window among them starts.
const WARM_UP: Duration = Duration::from_millis(300);
/// Rounds of one window per phase.
const ROUNDS: u32 = 5;
const SWITCH_TIMEOUT: Duration = Duration::from_secs(3);
/// The fastest UBR source `--ubr-over` asks an adapter to shape (about 2 Gbit/s).
const MAX_SHAPED_UBR: u32 = 5_000_000;

/// How the aggressors' daemons and sending threads are scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AggressorCpu {
    /// `SCHED_IDLE`.
    Idle,
    /// `SCHED_OTHER`, like everything else.
    Normal,
}

/// The contracts of one run, in cells/s, and where it runs: what [`run`] does. Made by
/// [`Plan::new`]; the report repeats the contracts (`time`, `dir` and `natm` are not in
/// it).
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The sink link's line rate.
    pub sink_rate: String,
    /// The same in cells/s.
    pub sink_cells_per_s: u64,
    /// The CBR connection's QoS.
    pub cbr_qos: String,
    /// The VBR connection's QoS at the switch.
    pub vbr_qos: String,
    /// What the VBR source opens (twice the switch's PCR).
    pub vbr_source_qos: String,
    /// The UBR connection's QoS at the switch.
    pub ubr_qos: String,
    /// What the UBR source opens: `ubr:pcr=…` at `--ubr-over` times its share, or `ubr`.
    pub ubr_source_qos: String,
    /// How the aggressors' hosts are scheduled.
    pub aggressor_cpu: AggressorCpu,
    /// The CBR connection's PCR.
    pub cbr_pcr: u32,
    /// The rate the CBR source sends at (90 % of its PCR).
    pub cbr_send_rate: u32,
    /// The VBR connection's PCR.
    pub vbr_pcr: u32,
    /// The VBR connection's SCR.
    pub vbr_scr: u32,
    /// What the sink link leaves for UBR: its rate minus C and the VBR's SCR.
    pub ubr_share: u64,
    /// CBR traffic per phase.
    #[serde(skip)]
    pub time: Duration,
    /// The lab's runtime directory: it must not hold a lab, and is removed at the end.
    #[serde(skip)]
    pub dir: PathBuf,
    /// The `natm` executable that runs the lab's daemons.
    #[serde(skip)]
    pub natm: PathBuf,
}

impl Plan {
    /// The contracts for a sink link of `sink_rate` (cells/s text, as natm-netem reads
    /// it), a CBR PCR of `cbr_share` % of it, and a UBR source at `ubr_over` times its
    /// share ("max": unshaped); refused with the option's name (`--sink-rate`, …) when
    /// they make no measurement. `time` is 3 s, `dir` a fresh one under the temporary
    /// directory, `natm` empty: the caller sets them.
    pub fn new(
        sink_rate: &str,
        cbr_share: u32,
        ubr_over: &str,
        aggressor_cpu: AggressorCpu,
    ) -> Result<Plan, Error> {
        let rate: natm_core::LineRate = sink_rate
            .parse()
            .map_err(|e| Error::Plan(format!("--sink-rate {sink_rate}: {e}")))?;
        let Some((num, den)) = rate.exact() else {
            return Err(Error::Plan(
                "--sink-rate: the sink's link needs a line rate (not unlimited)".into(),
            ));
        };
        let cells = num / den;
        if !(1..=45).contains(&cbr_share) {
            return Err(Error::Plan(format!(
                "--cbr-share {cbr_share}: use 1..=45 (the CBR and the VBR each take it)"
            )));
        }
        let pcr = u32::try_from(cells * u64::from(cbr_share) / 100).unwrap_or(u32::MAX);
        if !(20..=500_000).contains(&pcr) {
            return Err(Error::Plan(format!(
                "--sink-rate {sink_rate} with --cbr-share {cbr_share} gives a CBR PCR of \
                 {pcr} cells/s: keep it in 20..=500000 (the senders run in real time)"
            )));
        }
        let scr = pcr / 2;
        let ubr_share = cells - u64::from(pcr) - u64::from(scr);
        let ubr_source_qos = match ubr_over {
            "max" => "ubr".to_string(),
            x => {
                let over: u32 = x
                    .parse()
                    .ok()
                    .filter(|o| (1..=1000).contains(o))
                    .ok_or_else(|| Error::Plan(format!("--ubr-over {x}: use 1..=1000 or max")))?;
                let rate = ubr_share.saturating_mul(u64::from(over));
                if rate > u64::from(MAX_SHAPED_UBR) {
                    return Err(Error::Plan(format!(
                        "--ubr-over {x}: {rate} cells/s is beyond what a source is shaped to \
                         ({MAX_SHAPED_UBR}); use a lower multiple or max"
                    )));
                }
                format!("ubr:pcr={rate}")
            }
        };
        Ok(Plan {
            sink_rate: rate.to_string(),
            sink_cells_per_s: cells,
            cbr_qos: format!("cbr:pcr={pcr}"),
            vbr_qos: format!("vbr:pcr={pcr},scr={scr},mbs=32"),
            vbr_source_qos: format!("vbr:pcr={p2},scr={p2},mbs=1", p2 = 2 * pcr),
            ubr_qos: "ubr".into(),
            ubr_source_qos,
            aggressor_cpu,
            cbr_pcr: pcr,
            cbr_send_rate: pcr / 10 * 9,
            vbr_pcr: pcr,
            vbr_scr: scr,
            ubr_share,
            time: Duration::from_secs(3),
            dir: std::env::temp_dir().join(format!("natm-isolation-{}", std::process::id())),
            natm: PathBuf::new(),
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

fn natm_err(what: &str, e: natm::Error) -> Error {
    Error::Natm {
        what: what.to_string(),
        source: e,
    }
}

fn open(
    lab: &OwnedLab,
    node: &str,
    channel: ChannelPlan,
    path: DataPath,
    qos: &str,
) -> Result<natm::Vc, Error> {
    let ChannelPlan { vc, buffers, size } = channel;
    let host = Host::connect_path(lab.socket(node)?).map_err(|e| natm_err(node, e))?;
    let addr = vc
        .parse()
        .map_err(|e| Error::Traffic(format!("{vc}: {e}")))?;
    let qos = qos
        .parse()
        .map_err(|e| Error::Traffic(format!("{qos}: {e}")))?;
    host.open(
        VcOptions::new(addr)
            .path(path)
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

/// The phases, in the order each round runs them; an SDU carries its phase's index.
const PHASES: [&str; 3] = [
    "CBR alone",
    "CBR + VBR at 2x PCR + UBR flood",
    "CBR alone again (control)",
];

/// The sink's CBR receiver: runs until `stop`, attributes each SDU to the phase it names.
fn cbr_sink(mut vc: natm::Vc, stop: Arc<AtomicBool>) -> Result<[CbrRx; 3], String> {
    let mut phases: [CbrRx; 3] = Default::default();
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

/// An aggressor: sends `len`-byte SDUs as fast as its VC takes them until `stop`, except
/// while `paused`.
fn flood(
    mut vc: natm::Vc,
    len: usize,
    cpu: AggressorCpu,
    (stop, paused): (Arc<AtomicBool>, Arc<AtomicBool>),
    sdus: Arc<AtomicU64>,
) -> Result<(), String> {
    if cpu == AggressorCpu::Idle {
        sched::set_current_thread_policy(Policy::Idle).map_err(|e| e.to_string())?;
    }
    let sdu = vec![0x5Au8; len];
    while !stop.load(Ordering::Relaxed) {
        if paused.load(Ordering::Relaxed) {
            thread::sleep(Duration::from_millis(1));
            continue;
        }
        match vc.send(&sdu) {
            Ok(()) => {
                sdus.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

/// The CBR source: its VC, its send rate (SDUs/s) and the next SDU's sequence number.
struct CbrSource {
    vc: natm::Vc,
    rate: u32,
    seq: u64,
}

impl CbrSource {
    /// One window of `time` stamped with `phase`, added to that phase's sums.
    fn window(&mut self, time: Duration, phase: u8, sums: &mut PhaseSums) -> Result<(), Error> {
        let t = Instant::now();
        sums.cbr_sent += cbr_send(&mut self.vc, self.rate, time, phase, &mut self.seq)?;
        sums.seconds += t.elapsed().as_secs_f64();
        Ok(())
    }
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
) -> Result<u64, Error> {
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

/// What one phase measured.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseReport {
    /// The phase.
    pub name: &'static str,
    /// Its length.
    pub seconds: f64,
    /// CBR SDUs sent.
    pub cbr_sent: u64,
    /// CBR SDUs received.
    pub cbr_received: u64,
    /// CBR SDUs lost.
    pub cbr_lost: u64,
    /// CBR SDUs out of order.
    pub cbr_out_of_order: u64,
    /// The CBR SDUs' one-way delay.
    pub cbr_delay: Option<LatencySummary>,
    /// The switch's counters of the CBR connection.
    pub switch_cbr: ConnCounters,
    /// Of the VBR connection.
    pub switch_vbr: ConnCounters,
    /// Of the UBR connection.
    pub switch_ubr: ConnCounters,
    /// Cells/s the VBR application offered (0 alone).
    pub vbr_offered_cells_per_s: f64,
    /// Cells/s the UBR application offered (0 alone).
    pub ubr_offered_cells_per_s: f64,
    /// Cells/s of whole SDUs the sink received on the VBR VC (a frame the UPC or a queue
    /// cut a cell from is lost whole at the sink's AAL5).
    pub vbr_delivered_cells_per_s: f64,
    /// Likewise on the UBR VC.
    pub ubr_delivered_cells_per_s: f64,
}

/// What an isolation run reports (`natm perf isolation --json`).
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The contracts.
    pub plan: Plan,
    /// Alone, with the aggressors, alone again.
    pub phases: Vec<PhaseReport>,
    /// (p99 with aggressors / p99 alone − 1) × 100.
    pub p99_rise_percent: Option<f64>,
    /// (p99 alone again / p99 alone − 1) × 100: the same experiment twice, so the
    /// machine's noise; a rise within it is not a finding.
    pub p99_control_percent: Option<f64>,
    /// The UBR's offered rate over its share.
    pub ubr_offered_over_share: f64,
    /// The VBR's offered rate over its switch PCR.
    pub vbr_offered_over_pcr: f64,
}

/// Brings up the plan's lab in `plan.dir`, measures the three phases, takes the lab down
/// (on an error too) and returns the report (prints nothing but the lab's drop line).
pub fn run(plan: &Plan) -> Result<Report, Error> {
    let text = plan.topology();
    let topo = Topology::parse(&text, None)
        .map_err(|e| Error::Traffic(format!("the isolation lab's topology: {e}")))?;
    let mut lab = OwnedLab::start(
        "natm perf isolation",
        &plan.dir,
        &topo,
        text,
        None,
        &plan.natm,
    )?;
    let report = measure(&lab, plan, plan.time);
    let down = lab.down().map(|_| ());
    let report = report?;
    down?;
    Ok(report)
}

fn cells_of(len: usize) -> u64 {
    natm_wire::aal5::cell_count(len) as u64
}

/// The sink's threads and their stop flag.
struct Sinks {
    stop: Arc<AtomicBool>,
    cbr: JoinHandle<Result<[CbrRx; 3], String>>,
    others: Vec<JoinHandle<Result<(), String>>>,
    vbr_sdus: Arc<AtomicU64>,
    ubr_sdus: Arc<AtomicU64>,
}

impl Sinks {
    fn start(lab: &OwnedLab, plan: &Plan) -> Result<Sinks, Error> {
        let stop = Arc::new(AtomicBool::new(false));
        let cbr_vc = open(lab, "sink", SINK_CBR, DataPath::Direct, &plan.cbr_qos)?;
        let vbr_vc = open(lab, "sink", VBR, DataPath::Direct, &plan.vbr_qos)?;
        let ubr_vc = open(lab, "sink", UBR, DataPath::Direct, &plan.ubr_qos)?;
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

    fn finish(self) -> Result<[CbrRx; 3], Error> {
        self.stop.store(true, Ordering::Relaxed);
        fn joined<T>(r: thread::Result<Result<T, String>>) -> Result<T, Error> {
            match r {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(Error::Traffic(format!("sink: {e}"))),
                Err(_) => Err(Error::Panicked("a sink thread".into())),
            }
        }
        for h in self.others {
            joined(h.join())?;
        }
        joined(self.cbr.join())
    }
}

/// The aggressors of phase 2: started once, paused between their windows.
struct Aggressors {
    stop: Arc<AtomicBool>,
    paused: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Result<(), String>>>,
    vbr_sdus: Arc<AtomicU64>,
    ubr_sdus: Arc<AtomicU64>,
}

impl Aggressors {
    /// Opens the aggressors' VCs and starts their senders, paused.
    fn start(lab: &OwnedLab, plan: &Plan) -> Result<Aggressors, Error> {
        let stop = Arc::new(AtomicBool::new(false));
        let paused = Arc::new(AtomicBool::new(true));
        let vbr_vc = open(lab, "vbr", VBR, DataPath::Lane, &plan.vbr_source_qos)?;
        let ubr_vc = open(lab, "ubr", UBR, DataPath::Lane, &plan.ubr_source_qos)?;
        if plan.aggressor_cpu == AggressorCpu::Idle {
            for host in ["vbr", "ubr"] {
                let pid = lab.pid(host)?;
                sched::set_process_policy(pid, Policy::Idle).map_err(|e| {
                    Error::Traffic(format!("lowering host {host} (pid {pid}): {e}"))
                })?;
            }
        }
        let (vbr_sdus, ubr_sdus) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let mut threads = Vec::new();
        for (vc, len, n) in [(vbr_vc, VBR_SDU, &vbr_sdus), (ubr_vc, UBR_SDU, &ubr_sdus)] {
            let flags = (stop.clone(), paused.clone());
            let (n, cpu) = (n.clone(), plan.aggressor_cpu);
            threads.push(thread::spawn(move || flood(vc, len, cpu, flags, n)));
        }
        Ok(Aggressors {
            stop,
            paused,
            threads,
            vbr_sdus,
            ubr_sdus,
        })
    }

    fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed);
    }

    /// SDUs sent so far: (VBR, UBR).
    fn sent(&self) -> (u64, u64) {
        (
            self.vbr_sdus.load(Ordering::Relaxed),
            self.ubr_sdus.load(Ordering::Relaxed),
        )
    }

    fn stop(self) -> Result<(), Error> {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.threads {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(Error::Traffic(format!("aggressor: {e}"))),
                Err(_) => return Err(Error::Panicked("an aggressor thread".into())),
            }
        }
        Ok(())
    }
}

/// What one phase accumulates over its windows.
#[derive(Default)]
struct PhaseSums {
    cbr_sent: u64,
    /// Seconds of CBR traffic.
    seconds: f64,
    switch: [ConnCounters; 3],
    /// Aggressor SDUs sent and whole ones delivered, over the CBR windows: (VBR, UBR).
    offered: (u64, u64),
    delivered: (u64, u64),
}

impl PhaseSums {
    fn add_switch(&mut self, from: SwitchSnap, to: SwitchSnap, cbr_to: SwitchSnap) {
        let d = [
            cbr_to.cbr.minus(from.cbr),
            to.vbr.minus(from.vbr),
            to.ubr.minus(from.ubr),
        ];
        for (acc, x) in self.switch.iter_mut().zip(d) {
            *acc = acc.plus(x);
        }
    }
}

/// A window of the CBR connection alone (phase `phase`): the aggressors paused and their
/// queues drained first.
fn alone(
    lab: &OwnedLab,
    cbr: &mut CbrSource,
    window: Duration,
    phase: u8,
    sums: &mut PhaseSums,
) -> Result<(), Error> {
    thread::sleep(DRAIN);
    let s0 = switch_snap(lab)?;
    cbr.window(window, phase, sums)?;
    thread::sleep(CBR_DRAIN);
    let s1 = switch_snap(lab)?;
    sums.add_switch(s0, s1, s1);
    Ok(())
}

fn measure(lab: &OwnedLab, plan: &Plan, time: Duration) -> Result<Report, Error> {
    let sinks = Sinks::start(lab, plan)?;
    let mut cbr = CbrSource {
        vc: open(lab, "cbr", CBR_SOURCE, DataPath::Direct, &plan.cbr_qos)?,
        rate: plan.cbr_send_rate,
        seq: 0,
    };
    let aggressors = Aggressors::start(lab, plan)?;
    let window = time / ROUNDS;
    let mut sums: [PhaseSums; 3] = Default::default();
    let delivered = || {
        (
            sinks.vbr_sdus.load(Ordering::Relaxed),
            sinks.ubr_sdus.load(Ordering::Relaxed),
        )
    };
    // Rounds of one window per phase (alone, among the aggressors, alone again), so that
    // all phases see the machine in the same states (its noise drifts over seconds).
    for _ in 0..ROUNDS {
        alone(lab, &mut cbr, window, 0, &mut sums[0])?;

        // Among the aggressors, their queues full when the CBR window starts.
        aggressors.set_paused(false);
        thread::sleep(WARM_UP);
        let b0 = switch_snap(lab)?;
        let (tx0, rx0) = (aggressors.sent(), delivered());
        cbr.window(window, 1, &mut sums[1])?;
        let (tx1, rx1) = (aggressors.sent(), delivered());
        let b1 = switch_snap(lab)?;
        aggressors.set_paused(true);
        thread::sleep(CBR_DRAIN);
        let b2 = switch_snap(lab)?;
        sums[1].add_switch(b0, b1, b2);
        let s = &mut sums[1];
        s.offered = (s.offered.0 + tx1.0 - tx0.0, s.offered.1 + tx1.1 - tx0.1);
        s.delivered = (s.delivered.0 + rx1.0 - rx0.0, s.delivered.1 + rx1.1 - rx0.1);

        // Alone again, as in the first window: the control.
        alone(lab, &mut cbr, window, 2, &mut sums[2])?;
    }
    aggressors.stop()?;
    thread::sleep(DRAIN);
    drop(cbr);
    let rx = sinks.finish()?;

    let phases: Vec<PhaseReport> = sums
        .iter()
        .zip(&rx)
        .zip(PHASES)
        .map(|((s, rx), name)| {
            let rate = |n: u64, len: usize| (n * cells_of(len)) as f64 / s.seconds.max(1e-9);
            PhaseReport {
                name,
                seconds: s.seconds,
                cbr_sent: s.cbr_sent,
                cbr_received: rx.received,
                cbr_lost: s.cbr_sent.saturating_sub(rx.received),
                cbr_out_of_order: rx.out_of_order,
                cbr_delay: rx.delays.summary(),
                switch_cbr: s.switch[0],
                switch_vbr: s.switch[1],
                switch_ubr: s.switch[2],
                vbr_offered_cells_per_s: rate(s.offered.0, VBR_SDU),
                ubr_offered_cells_per_s: rate(s.offered.1, UBR_SDU),
                vbr_delivered_cells_per_s: rate(s.delivered.0, VBR_SDU),
                ubr_delivered_cells_per_s: rate(s.delivered.1, UBR_SDU),
            }
        })
        .collect();
    let p99_change = |to: usize| match (&phases[0].cbr_delay, &phases[to].cbr_delay) {
        (Some(a), Some(b)) if a.p99_ns > 0 => {
            Some((b.p99_ns as f64 / a.p99_ns as f64 - 1.0) * 100.0)
        }
        _ => None,
    };
    let (p99_rise_percent, p99_control_percent) = (p99_change(1), p99_change(2));
    let ubr_offered_over_share = phases[1].ubr_offered_cells_per_s / plan.ubr_share.max(1) as f64;
    let vbr_offered_over_pcr = phases[1].vbr_offered_cells_per_s / f64::from(plan.vbr_pcr.max(1));
    Ok(Report {
        plan: plan.clone(),
        phases,
        p99_rise_percent,
        p99_control_percent,
        ubr_offered_over_share,
        vbr_offered_over_pcr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_takes_shares_of_the_sink_rate() {
        let p = Plan::new("50000", 20, "10", AggressorCpu::Idle).unwrap();
        assert_eq!(p.cbr_qos, "cbr:pcr=10000");
        assert_eq!(p.vbr_qos, "vbr:pcr=10000,scr=5000,mbs=32");
        assert_eq!(p.vbr_source_qos, "vbr:pcr=20000,scr=20000,mbs=1");
        assert_eq!(p.ubr_share, 35_000);
        assert_eq!(p.ubr_source_qos, "ubr:pcr=350000");
        assert_eq!(
            Plan::new("50000", 20, "max", AggressorCpu::Idle)
                .unwrap()
                .ubr_source_qos,
            "ubr"
        );
        assert_eq!(p.cbr_send_rate, 9_000);
        let t = p.topology();
        assert!(t.contains("rate = \"50000\""));
        Topology::parse(&t, None).expect("the lab takes it");
    }

    #[test]
    fn bad_rates_and_shares_are_refused_with_a_reason() {
        for (rate, share, over, what) in [
            ("unlimited", 20, "10", "line rate"),
            ("fast", 20, "10", "--sink-rate fast"),
            ("50000", 0, "10", "--cbr-share 0"),
            ("50000", 46, "10", "--cbr-share 46"),
            ("50", 20, "10", "CBR PCR of 10"),
            ("50000", 20, "0", "--ubr-over 0"),
            ("50000", 20, "ten", "--ubr-over ten"),
            ("oc12", 20, "10", "shaped to (5000000)"),
        ] {
            let e = Plan::new(rate, share, over, AggressorCpu::Idle).unwrap_err();
            assert!(
                matches!(&e, Error::Plan(m) if m.contains(what)),
                "{rate}/{share}/{over}: {e}"
            );
        }
    }
}

//! The engine of `natm perf link`: AAL5 goodput from one application to another through natm's adapter
//! and one link, beside kernel TCP over loopback measured in the same run (issue 4).
//!
//! # What is measured
//!
//! Two threads, pinned to the first two CPUs this process may use:
//!
//! * the **sender** is an application and its adapter (the user-level driver runs in the
//!   application, as in the user-level driver and ATLAS DAQ studies): it fills its channel's
//!   transmit buffers once, then keeps every buffer posted (a sequence number is rewritten
//!   in the first 8 bytes of each SDU that long), and polls its [`Driver`], which segments straight from
//!   the channel's buffers into cells and hands them to the link;
//! * the **receiver** posts every buffer of its channel as a free receive buffer, polls its
//!   driver, which reassembles the link's cells straight into those buffers, and for each
//!   SDU completed checks its length and sequence number and reposts the buffer.
//!
//! Both poll without sleeping (busy polling). Goodput is SDU bytes delivered to the
//! receiving application divided by the time from the first SDU posted to the last one
//! delivered. The run lasts `--seconds`, then the sender stops posting and the receiver
//! counts what is still in flight (or what the impairments dropped).
//!
//! The **baseline** is kernel TCP over 127.0.0.1 with the same message size and the same
//! CPU placement ([`baseline`]). Runs alternate (natm, TCP, natm, TCP, …) so that a change in
//! the machine's load touches both; the ratio is taken per pair and its median reported.
//!
//! Kinds:
//!
//! * `shm`: natm's shared-memory cell link ([`ShmLink`], a memfd ring pair);
//! * `udp`: cells batched in UDP datagrams over 127.0.0.1 ([`UdpLink`]), with the socket
//!   buffers a daemon's link of that rate gets ([`UdpConfig::for_rate`]); when the kernel
//!   grants less, the report says so, and the cells the kernel dropped (datagrams missing
//!   from the receiver's sequence) are counted in [`NatmRun::link_lost`];
//! * `tcp-cell`: one atmtcp frame per cell over TCP ([`TcpCellLink`]), the daemons'
//!   `kind = "tcp"` link with the socket buffers a daemon's gets
//!   ([`TcpCellLink::size_buffers`]), adapters on both ends as for shm and udp;
//! * `tcp`: linux-atm's atmtcp framing over TCP ([`AtmtcpLink`]). atmtcp carries whole
//!   SDUs, not cells, so no adapter is on this path: the sender writes SDU frames, the
//!   receiver decodes them. `--rate` paces SDUs by the line time of their cells;
//!   `--impair` (cell impairments) is refused.
//!
//! With `--rate` other than `unlimited`, or `--impair`, the sender's link is wrapped in an
//! [`Emulated`] line (natm-netem on the real clock, 16,384 cells of transmit queue so that
//! scheduling stalls of a loaded machine do not cost line time) and the table also shows
//! the goodput as a share of the AAL5 ceiling for that SDU size: the line's cell rate ×
//! SDU bytes / cells per SDU.

mod render;

use std::io;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use natm_adapter::{Adapter, AdapterConfig, RxVcConfig, Status};
use natm_core::LineRate;
use natm_core::VcId;
use natm_link::CellLink;
use natm_link::atmtcp::{self, AtmtcpLink};
use natm_link::driver::{Driver, status_from_code};
use natm_link::emulated::Emulated;
use natm_link::shm::{ShmLink, ShmWait};
use natm_link::tcpcell::TcpCellLink;
use natm_link::udp::{UdpConfig, UdpLink};
use natm_netem::Impairments;
use natm_nic::channel::{AppEnd, BufferId, Channel, ChannelConfig};
use natm_nic::memfd::MemfdMem;
use natm_traffic::sched::VcSpec;
use serde::Serialize;

use crate::stats::Spread;
use crate::{Error, baseline, pin};

/// The largest AAL5 SDU.
pub const MAX_SDU: usize = 65_535;
/// Buffers in each channel: enough to keep the link busy while completions come back.
pub(crate) const BUFFERS: u32 = 32;
/// The VC the measurement runs on.
pub(crate) const HANDLE: u32 = 1;
/// Cells of transmit queue in an emulated line.
const EMULATED_QUEUE: u32 = 16_384;
/// How long the receiver waits for the last SDUs after the sender stopped.
const DRAIN: Duration = Duration::from_millis(500);

/// The link between the two adapters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Shared-memory cell rings.
    Shm,
    /// Cells in UDP datagrams over 127.0.0.1.
    Udp,
    /// linux-atm's atmtcp framing over TCP on 127.0.0.1.
    Tcp,
    /// One atmtcp frame per cell over TCP on 127.0.0.1 (the daemons' TCP link).
    #[serde(rename = "tcp-cell")]
    TcpCell,
}

/// A link goodput run: what [`run`] does.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The link.
    pub kind: Kind,
    /// SDU sizes in bytes, each 1 to [`MAX_SDU`].
    pub sizes: Vec<usize>,
    /// The sender's line rate.
    pub rate: LineRate,
    /// Cell impairments on the sender's line (shm and udp only).
    pub impair: Option<Impairments>,
    /// Length of each run.
    pub run_time: Duration,
    /// Runs per size.
    pub runs: u32,
    /// Whether each natm run is paired with a kernel TCP run.
    pub baseline: bool,
}

/// What one natm run delivered, and what it lost on the way.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct NatmRun {
    /// Goodput.
    pub bits_per_sec: f64,
    /// SDUs delivered.
    pub sdus: u64,
    /// Bytes delivered.
    pub bytes: u64,
    /// Length of the run.
    pub seconds: f64,
    /// SDUs the sender posted and never saw delivered (lost cells, impairments).
    pub lost_sdus: u64,
    /// SDUs delivered with a sequence number not after the previous one, or a wrong length.
    pub misdelivered: u64,
    /// Cells the sender's adapter sent.
    pub cells_sent: u64,
    /// PDUs the receiver dropped for a bad CRC-32.
    pub drops_crc: u64,
    /// PDUs the receiver dropped for want of a buffer.
    pub drops_no_buffer: u64,
    /// Cells the receiver dropped for a bad HEC.
    pub drops_hec: u64,
    /// What the receiver dropped for any other reason.
    pub drops_other: u64,
    /// Batches the receiving link knows were lost on the way (UDP: datagrams the kernel
    /// dropped, from sequence gaps).
    pub link_lost: u64,
}

/// One size's figures.
#[derive(Debug, Serialize)]
pub struct SizeResult {
    /// The SDU size in bytes.
    pub size: usize,
    /// Cells per SDU.
    pub cells_per_sdu: usize,
    /// natm's goodput over the runs.
    pub natm_bits_per_sec: Option<Spread>,
    /// Kernel TCP's goodput over the runs.
    pub tcp_bits_per_sec: Option<Spread>,
    /// natm ÷ TCP, per pair of runs.
    pub ratio: Option<Spread>,
    /// The AAL5 goodput ceiling of the emulated line for this size.
    pub ceiling_bits_per_sec: Option<f64>,
    /// natm's median ÷ the ceiling.
    pub of_ceiling: Option<f64>,
    /// Each natm run.
    pub runs: Vec<NatmRun>,
}

/// What a link goodput run reports (`natm perf link --json`).
#[derive(Debug, Serialize)]
pub struct Report {
    /// The link.
    pub kind: Kind,
    /// The line rate.
    pub rate: String,
    /// The impairments.
    pub impair: Option<String>,
    /// Seconds per run.
    pub seconds: f64,
    /// What the links said at setup (a UDP link's socket buffers smaller than its rate
    /// needs), each once.
    pub warnings: Vec<String>,
    /// One per size.
    pub results: Vec<SizeResult>,
}

/// Cells of an AAL5 PDU carrying `len` bytes.
fn cells_for(len: usize) -> usize {
    (len + 8).div_ceil(48)
}

/// Runs the measurement of `plan` and returns its report (prints nothing).
pub fn run(plan: &Plan) -> Result<Report, Error> {
    let cpus = placement();
    let mut results = Vec::new();
    let mut warnings = Vec::new();
    for &size in &plan.sizes {
        let mut runs = Vec::new();
        let mut natm = Vec::new();
        let mut tcp = Vec::new();
        let mut ratios = Vec::new();
        for _ in 0..plan.runs {
            let (r, warning) = natm_run(plan, size, cpus)
                .map_err(|e| Error::io(format!("natm run, {size}-byte SDUs"), e))?;
            if let Some(w) = warning.filter(|w| !warnings.contains(w)) {
                warnings.push(w);
            }
            natm.push(r.bits_per_sec);
            runs.push(r);
            if plan.baseline {
                let b = baseline::tcp_loopback(size, plan.run_time, cpus).map_err(|e| {
                    Error::io(format!("kernel TCP baseline, {size}-byte writes"), e)
                })?;
                tcp.push(b.bits_per_sec());
                ratios.push(r.bits_per_sec / b.bits_per_sec());
            }
        }
        let natm_summary = Spread::of_finite(&natm);
        let ceiling = plan
            .rate
            .exact()
            .map(|(num, den)| num as f64 / den as f64 * (size * 8) as f64 / cells_for(size) as f64);
        let of_ceiling = match (&natm_summary, ceiling) {
            (Some(s), Some(c)) => Some(s.median / c),
            _ => None,
        };
        results.push(SizeResult {
            size,
            cells_per_sdu: cells_for(size),
            natm_bits_per_sec: natm_summary,
            tcp_bits_per_sec: Spread::of_finite(&tcp),
            ratio: Spread::of_finite(&ratios),
            ceiling_bits_per_sec: ceiling,
            of_ceiling,
            runs,
        });
    }
    Ok(Report {
        kind: plan.kind,
        rate: plan.rate.to_string(),
        impair: plan.impair.as_ref().map(|i| i.to_string()),
        seconds: plan.run_time.as_secs_f64(),
        warnings,
        results,
    })
}

/// The CPUs for the sender and the receiver: the first two this process may use.
fn placement() -> Option<(usize, usize)> {
    let cpus = natm_nic::sched::allowed_cpus().ok()?;
    match cpus.as_slice() {
        [a, b, ..] => Some((*a, *b)),
        _ => None,
    }
}

/// One run, and what its links said at setup.
fn natm_run(
    plan: &Plan,
    size: usize,
    cpus: Option<(usize, usize)>,
) -> io::Result<(NatmRun, Option<String>)> {
    match plan.kind {
        Kind::Shm => {
            let (a, b) = ShmLink::pair_with(4096, ShmWait::BusyPoll).map_err(io::Error::other)?;
            Ok((with_line(plan, size, cpus, a, b)?, None))
        }
        Kind::Udp => {
            let sa = UdpSocket::bind("127.0.0.1:0")?;
            let sb = UdpSocket::bind("127.0.0.1:0")?;
            let (aa, ab) = (sa.local_addr()?, sb.local_addr()?);
            let cfg = UdpConfig::for_rate(plan.rate);
            let a = UdpLink::from_socket(sa, ab, cfg)?;
            let b = UdpLink::from_socket(sb, aa, cfg)?;
            let warning = a.buffers().shortfall().or(b.buffers().shortfall());
            Ok((with_line(plan, size, cpus, a, b)?, warning))
        }
        Kind::TcpCell => {
            let listener = TcpListener::bind("127.0.0.1:0")?;
            let mut a = TcpCellLink::connect(listener.local_addr()?, Duration::from_secs(5))?;
            let mut b = TcpCellLink::from_stream(listener.accept()?.0)?;
            let warning =
                (a.size_buffers(plan.rate)?.shortfall()).or(b.size_buffers(plan.rate)?.shortfall());
            Ok((with_line(plan, size, cpus, a, b)?, warning))
        }
        Kind::Tcp => Ok((atmtcp_run(plan, size, cpus)?, None)),
    }
}

/// Wraps the sender's link in an emulated line when the plan asks for one.
fn with_line<L: CellLink + Send + 'static>(
    plan: &Plan,
    size: usize,
    cpus: Option<(usize, usize)>,
    tx: L,
    rx: L,
) -> io::Result<NatmRun> {
    if plan.rate == LineRate::Unlimited && plan.impair.as_ref().is_none_or(Impairments::is_none) {
        return adapter_run(size, plan.run_time, cpus, tx, rx);
    }
    let config = natm_netem::Config {
        rate: plan.rate,
        impairments: plan.impair.unwrap_or_default(),
        queue_cells: EMULATED_QUEUE,
        ..natm_netem::Config::default()
    };
    adapter_run(size, plan.run_time, cpus, Emulated::new(tx, &config), rx)
}

/// One side's channel, adapter and driver: `BUFFERS` buffers of `size` bytes (rounded up
/// to 64) and one UBR VC, 0.100 as handle `HANDLE`, that only the link limits. Also
/// `natm perf calibrate`'s measuring set-up.
pub(crate) fn side<L: CellLink>(size: usize, link: L) -> io::Result<(AppEnd, Driver<L>)> {
    let buffer_size = size.div_ceil(64) * 64;
    let cfg = ChannelConfig {
        tx_entries: BUFFERS,
        rx_entries: BUFFERS,
        completion_entries: 2 * BUFFERS,
        buffer_size: buffer_size as u32,
        buffer_count: BUFFERS,
    };
    let layout = cfg.layout().map_err(io::Error::other)?;
    let mem = MemfdMem::create("natm-perf-link", layout.region_size).map_err(io::Error::other)?;
    let ch = Channel::create(Arc::new(mem), &cfg).map_err(io::Error::other)?;
    let app = ch.app().map_err(io::Error::other)?;
    let end = ch.adapter().map_err(io::Error::other)?;
    let mut config = AdapterConfig::new(BUFFERS, buffer_size);
    config.max_tx_queued = BUFFERS as usize;
    let mut adapter = Adapter::new(config).map_err(|e| io::Error::other(e.to_string()))?;
    adapter
        .open_vc(
            HANDLE,
            VcId::uni(0, 100).map_err(|e| io::Error::other(e.to_string()))?,
            // The line (or the ring) is the only limit; UBR at any PCR the scheduler takes.
            VcSpec::ubr(1_000_000_000, 1),
            RxVcConfig::aal5(size),
        )
        .map_err(|e| io::Error::other(e.to_string()))?;
    Ok((app, Driver::new(adapter, end, link)))
}

fn adapter_run<T, R>(
    size: usize,
    time: Duration,
    cpus: Option<(usize, usize)>,
    tx: T,
    rx: R,
) -> io::Result<NatmRun>
where
    T: CellLink + Send + 'static,
    R: CellLink + Send + 'static,
{
    let (mut app_tx, mut tx) = side(size, tx)?;
    let (mut app_rx, mut rx) = side(size, rx)?;
    let posted = Arc::new(AtomicU64::new(0));
    let sender_done = Arc::new(AtomicBool::new(false));
    let receiver_done = Arc::new(AtomicBool::new(false));
    let start = Instant::now();

    let receiver = {
        let (posted, sender_done, receiver_done) =
            (posted.clone(), sender_done.clone(), receiver_done.clone());
        thread::spawn(move || -> io::Result<(NatmRun, Instant)> {
            pin(cpus.map(|c| c.1));
            let result = receive(size, &mut app_rx, &mut rx, &posted, &sender_done, start);
            receiver_done.store(true, Ordering::Release);
            result
        })
    };
    pin(cpus.map(|c| c.0));
    let sent = send(size, time, &mut app_tx, &mut tx, &posted, &receiver_done);
    sender_done.store(true, Ordering::Release);
    // Keep the sender's line moving (an emulated line releases cells only when polled)
    // until the receiver has all it will get.
    while !receiver_done.load(Ordering::Acquire) {
        if tx.poll().is_err() {
            break;
        }
    }
    let (mut run, last) = receiver
        .join()
        .map_err(|_| io::Error::other("the receiver thread panicked"))??;
    let cells_sent = sent?;
    run.cells_sent = cells_sent;
    run.lost_sdus = posted
        .load(Ordering::Acquire)
        .saturating_sub(run.sdus + run.misdelivered);
    let elapsed = last.duration_since(start);
    run.seconds = elapsed.as_secs_f64();
    run.bits_per_sec = run.bytes as f64 * 8.0 / run.seconds.max(1e-9);
    Ok(run)
}

/// The sender's loop; returns the cells its link took.
fn send<L: CellLink>(
    size: usize,
    time: Duration,
    app: &mut AppEnd,
    driver: &mut Driver<L>,
    posted: &AtomicU64,
    receiver_done: &AtomicBool,
) -> io::Result<u64> {
    let pattern: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    let mut free: Vec<u32> = (0..BUFFERS).collect();
    for &b in &free {
        app.write_buffer(BufferId(b), &pattern)
            .map_err(io::Error::other)?;
    }
    let mut seq = 0u64;
    let mut outstanding = 0u32;
    let start = Instant::now();
    let mut posting = true;
    loop {
        if posting {
            while let Some(b) = free.pop() {
                if size >= SEQ_LEN {
                    app.write_buffer(BufferId(b), &seq.to_le_bytes())
                        .map_err(io::Error::other)?;
                }
                app.post_tx(BufferId(b), size as u32, HANDLE, 0)
                    .map_err(io::Error::other)?;
                seq += 1;
                outstanding += 1;
            }
            posted.store(seq, Ordering::Release);
        }
        driver.poll().map_err(io::Error::other)?;
        while let Some(c) = app.poll_completion().map_err(io::Error::other)? {
            if status_from_code(c.status) != Some(Status::Ok) {
                return Err(io::Error::other(format!(
                    "a transmit completed with status {}",
                    c.status
                )));
            }
            outstanding -= 1;
            free.push(c.buffer.0);
        }
        if posting && start.elapsed() >= time {
            posting = false;
        }
        if (!posting && outstanding == 0) || receiver_done.load(Ordering::Acquire) {
            return Ok(driver.link().counters().tx_cells);
        }
    }
}

/// The receiver's loop; returns what arrived and when the last SDU did.
fn receive<L: CellLink>(
    size: usize,
    app: &mut AppEnd,
    driver: &mut Driver<L>,
    posted: &AtomicU64,
    sender_done: &AtomicBool,
    start: Instant,
) -> io::Result<(NatmRun, Instant)> {
    for b in 0..BUFFERS {
        app.post_rx(BufferId(b)).map_err(io::Error::other)?;
    }
    let mut run = NatmRun::default();
    let mut last = start;
    let mut next_seq = 0u64;
    let mut quiet_since: Option<Instant> = None;
    loop {
        let progress = driver.poll().map_err(io::Error::other)?;
        let mut got = false;
        while let Some(c) = app.poll_completion().map_err(io::Error::other)? {
            got = true;
            if status_from_code(c.status) == Some(Status::Ok) {
                if in_order(app, &c, size, &mut next_seq)? {
                    run.sdus += 1;
                    run.bytes += size as u64;
                } else {
                    run.misdelivered += 1;
                }
                last = Instant::now();
            }
            app.post_rx(c.buffer).map_err(io::Error::other)?;
        }
        if sender_done.load(Ordering::Acquire) {
            let c = driver.adapter().counters();
            let dropped = c.no_buffer + c.crc + c.oversize + c.length + c.aborted + c.timeout;
            if run.sdus + run.misdelivered + dropped >= posted.load(Ordering::Acquire) {
                break;
            }
            if got || progress.any() {
                quiet_since = None;
            } else if quiet_since.get_or_insert_with(Instant::now).elapsed() > DRAIN {
                break;
            }
        }
    }
    run.link_lost = driver.link().counters().rx_lost;
    let c = driver.adapter().counters();
    run.drops_crc = c.crc;
    run.drops_no_buffer = c.no_buffer;
    run.drops_hec = c.hec;
    run.drops_other = c.oversize + c.length + c.aborted + c.timeout + c.unknown_vc;
    Ok((run, last))
}

/// Bytes of the sequence number an SDU carries first, when it is that long.
const SEQ_LEN: usize = 8;

/// Whether a delivered SDU is the right length and, when it carries a sequence number,
/// comes after the previous one (a gap is SDUs lost on the way, taken up after).
fn in_order(
    app: &AppEnd,
    c: &natm_nic::channel::Completion,
    size: usize,
    next_seq: &mut u64,
) -> io::Result<bool> {
    if c.len as usize != size {
        return Ok(false);
    }
    if size < SEQ_LEN {
        return Ok(true);
    }
    let mut head = [0u8; SEQ_LEN];
    app.read_buffer(c.buffer, &mut head)
        .map_err(io::Error::other)?;
    let seq = u64::from_le_bytes(head);
    if seq < *next_seq {
        return Ok(false);
    }
    *next_seq = seq.saturating_add(1);
    Ok(true)
}

/// The atmtcp path: SDU frames over TCP, paced by the line time of their cells when the
/// plan has a rate.
fn atmtcp_run(plan: &Plan, size: usize, cpus: Option<(usize, usize)>) -> io::Result<NatmRun> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr: SocketAddr = listener.local_addr()?;
    let vc = atmtcp::Vc { vpi: 0, vci: 100 };
    let receiver = thread::spawn(move || -> io::Result<(NatmRun, Instant)> {
        pin(cpus.map(|c| c.1));
        let mut link = AtmtcpLink::accept(&listener)?;
        let mut run = NatmRun::default();
        let mut last = Instant::now();
        loop {
            match link.recv(Some(Duration::from_secs(5))) {
                Ok(Some(atmtcp::Event::Data { vc: got, sdu })) => {
                    if got == vc && sdu.len() == size {
                        run.sdus += 1;
                        run.bytes += size as u64;
                    } else {
                        run.misdelivered += 1;
                    }
                    last = Instant::now();
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return Ok((run, last)),
            }
        }
    });
    pin(cpus.map(|c| c.0));
    let mut link = AtmtcpLink::connect(addr, Duration::from_secs(5))?;
    let sdu = vec![0x5au8; size];
    // Line time per SDU, in ns, when paced.
    let per_sdu_ns = plan
        .rate
        .exact()
        .map(|(num, den)| cells_for(size) as f64 * den as f64 * 1e9 / num as f64);
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed() < plan.run_time {
        if let Some(ns) = per_sdu_ns {
            let due = start + Duration::from_nanos((sent as f64 * ns) as u64);
            let now = Instant::now();
            if due > now {
                thread::sleep(due - now);
            }
        }
        link.send_sdu(vc, &sdu).map_err(io::Error::other)?;
        sent += 1;
    }
    link.shutdown(false).map_err(io::Error::other)?;
    drop(link);
    let (mut run, last) = receiver
        .join()
        .map_err(|_| io::Error::other("the receiver thread panicked"))??;
    run.lost_sdus = sent.saturating_sub(run.sdus + run.misdelivered);
    run.cells_sent = sent * cells_for(size) as u64;
    run.seconds = last.duration_since(start).as_secs_f64();
    run.bits_per_sec = run.bytes as f64 * 8.0 / run.seconds.max(1e-9);
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_per_sdu_follow_the_aal5_trailer() {
        assert_eq!(cells_for(1), 1);
        assert_eq!(cells_for(40), 1);
        assert_eq!(cells_for(41), 2);
        assert_eq!(cells_for(8192), 171);
        assert_eq!(cells_for(65_535), 1366);
    }

    #[test]
    fn summary_takes_the_middle() {
        let s = Spread::of_finite(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(
            Spread::of_finite(&[1.0, 2.0, 3.0, 4.0]).unwrap().median,
            2.5
        );
        assert!(Spread::of_finite(&[]).is_none());
    }
}

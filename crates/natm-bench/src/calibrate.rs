//! The engine of `natm perf calibrate`: the per-message CPU costs of a host on the real adapter path, fitted
//! to the line the simulator charges (issue 6, point 4), written as a calibration file
//! (natm-sim's `calib` module documents the format and what each figure means).
//!
//! # What is measured
//!
//! Two threads, pinned to the first two CPUs this process may use, each an application with
//! its own natm-nic channel and natm-host [`Driver`] (the natm-adapter core), joined by a
//! natm-link shared-memory cell link that busy-polls (no wake-up system calls on the path).
//! For each SDU size from 40 B to 16 KiB they take turns, batch by batch:
//!
//! * the **sender** writes each SDU of the batch into a channel buffer (the copy natm's
//!   `send` makes), posts it, and polls its driver until the adapter has segmented every
//!   SDU into cells on the link and the application has taken the transmit completions;
//! * then the **receiver**, with the batch's cells all on the link, polls its driver, which
//!   reassembles them straight into its posted buffers, and for each SDU completed checks
//!   its status and length, copies it out (the copy natm's `recv` makes) and reposts the
//!   buffer.
//!
//! Each thread reads its own CPU clock (`CLOCK_THREAD_CPUTIME_ID`: time spent preempted by
//! the machine's other work does not count) around its turn; the clock's own cost, measured
//! first, is taken off. A batch's time ÷ its SDUs is one sample; the median of the samples
//! of a size is that size's figure, and `fixed + per_byte · len` is fitted to the figures by
//! least squares ([`natm_sim::calib::fit`]).
//!
//! The **wake-up** is the median of `natm perf wakeup`'s `eventfd` mode (an idle receiver
//! asleep on natm-nic's eventfd waiter, from the cell's publish until it holds the cell),
//! measured by running the plan's `natm` executable's `perf wakeup` with `--json`.
//!
//! The **transport** costs ([`transport`]) are natm-transport's own work per TPDU frame of
//! the same sizes, measured on the sending thread after the data path, and written as
//! the file's `[transport]` table: the `natm` API admits a guaranteed channel against the
//! data path's cost of its frame plus these.
//!
//! The sizes are measured in rounds, one batch of each per round in a rotating order, so
//! that a change in the machine's load touches every size alike. `--seconds` bounds the
//! whole run: a fifth for the wake-ups, a tenth for the transport, the rest for the
//! rounds (at least [`MIN_BATCHES`] after two thrown away).

mod render;
pub mod transport;

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use natm_adapter::Status;
use natm_link::driver::{Driver, status_from_code};
use natm_link::shm::{ShmLink, ShmWait};
use natm_nic::channel::{AppEnd, BufferId};
use natm_sim::app::HostCosts;
use natm_sim::calib::{Calibration, FitPoint, fit};
use serde::Serialize;

use crate::stats::median;
use crate::{Error, pin};
// The channel set-up is `natm perf link`'s: BUFFERS buffers (also the largest batch), VC
// handle HANDLE.
use crate::link::{BUFFERS, HANDLE};

/// SDU sizes measured, bytes.
pub const SIZES: [usize; 10] = [40, 100, 256, 512, 1024, 1500, 2048, 4096, 8192, 16_384];
/// Cells of each link ring; a batch's cells must all fit.
const RING_CELLS: u32 = 4096;
/// Rounds (batches per size) at the least, however short `--seconds` is.
pub const MIN_BATCHES: usize = 5;
/// Rounds thrown away first (cold caches, first-touch page faults).
const WARMUP_BATCHES: usize = 2;
/// Longest a batch may take before the run is declared stuck.
const BATCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Share of `--seconds` given to the wake-up measurement.
const WAKEUP_SHARE: f64 = 0.2;
/// Share of `--seconds` given to the transport's per-TPDU costs.
const TRANSPORT_SHARE: f64 = 0.1;
/// Wake-up samples at the least and at the most.
const WAKEUP_SAMPLES: (u64, u64) = (50, 2000);

/// A calibration run: what [`run`] does.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Seconds for the whole measurement (0.1 to 600).
    pub seconds: f64,
    /// The `natm` executable whose `perf wakeup` measures the wake-up.
    pub natm: PathBuf,
    /// The command that asked for the calibration, written into the file.
    pub command: String,
}

/// One size's medians, with the fit's residuals.
#[derive(Debug, Serialize)]
pub struct Row {
    /// SDU size in bytes.
    pub size: usize,
    /// SDUs per batch.
    pub batch: usize,
    /// Batches recorded.
    pub batches: usize,
    /// Median CPU time per SDU sent.
    pub send_ns: f64,
    /// Median CPU time per SDU received.
    pub recv_ns: f64,
    /// `send_ns` less the fitted line.
    pub send_residual_ns: f64,
    /// `recv_ns` less the fitted line.
    pub recv_residual_ns: f64,
    /// Median CPU time of natm-transport's work to send one TPDU frame of `size` bytes.
    pub tpdu_send_ns: f64,
    /// Median CPU time of its work to receive one.
    pub tpdu_recv_ns: f64,
}

/// What a calibration run reports (`natm perf calibrate --json`).
#[derive(Debug, Serialize)]
pub struct Report {
    /// Kernel, CPU model and CPU count.
    pub measured_on: String,
    /// When, UTC.
    pub date: String,
    /// The command, as the plan gave it.
    pub command: String,
    /// Seconds the run lasted.
    pub seconds: f64,
    /// The CPU clock's own cost, taken off every batch.
    pub clock_overhead_ns: u64,
    /// Fitted fixed cost of a send.
    pub send_fixed_ns: u64,
    /// Fitted cost of a send per byte.
    pub send_per_byte_ps: u64,
    /// Fitted fixed cost of a receive.
    pub recv_fixed_ns: u64,
    /// Fitted cost of a receive per byte.
    pub recv_per_byte_ps: u64,
    /// The eventfd wake-up's median.
    pub wakeup_ns: u64,
    /// Wake-ups sampled.
    pub wakeup_samples: u64,
    /// Root mean square of the send residuals.
    pub send_rms_residual_ns: f64,
    /// Root mean square of the receive residuals.
    pub recv_rms_residual_ns: f64,
    /// Fitted fixed cost of natm-transport's work to send a TPDU.
    pub tpdu_send_fixed_ns: u64,
    /// Its cost per frame byte.
    pub tpdu_send_per_byte_ps: u64,
    /// Fitted fixed cost of natm-transport's work to receive a TPDU.
    pub tpdu_recv_fixed_ns: u64,
    /// Its cost per frame byte.
    pub tpdu_recv_per_byte_ps: u64,
    /// One per size.
    pub rows: Vec<Row>,
    /// Where the calibration file was written, if the caller wrote it (the engine leaves it
    /// `None`).
    pub out: Option<String>,
    /// The calibration file's text.
    pub toml: String,
}

/// Runs the measurement of `plan` and returns its report, the calibration file's text in
/// it (writes nothing).
pub fn run(plan: &Plan) -> Result<Report, Error> {
    let started = Instant::now();
    // Read before any pinning: a pinned thread's affinity is one CPU.
    let measured_on = machine();
    let cpus = placement();
    let budget = Duration::from_secs_f64(plan.seconds * (1.0 - WAKEUP_SHARE - TRANSPORT_SHARE));
    let transport_budget = Duration::from_secs_f64(plan.seconds * TRANSPORT_SHARE);
    // The sender is a thread of its own, so that this one stays unpinned and the wake-up
    // measurement it starts may use every CPU.
    let (measured, clock_overhead, (tpdu, transport)) = thread::spawn(move || {
        let clock_overhead = clock_overhead_ns();
        let measured = measure_sizes(&SIZES, budget, cpus, clock_overhead)?;
        // Still pinned to the sender's CPU.
        let tpdu = transport::measure(&SIZES, transport_budget, clock_overhead)
            .map_err(|e| io::Error::other(format!("the transport's per-TPDU costs: {e}")))?;
        Ok::<_, io::Error>((measured, clock_overhead, tpdu))
    })
    .join()
    .map_err(|_| Error::Panicked("the sending thread".into()))?
    .map_err(Error::Measurement)?;
    let wakeup_samples =
        ((plan.seconds * WAKEUP_SHARE / 0.0007) as u64).clamp(WAKEUP_SAMPLES.0, WAKEUP_SAMPLES.1);
    let wakeup_ns = eventfd_wakeup_ns(&plan.natm, wakeup_samples)?;

    let send_pts: Vec<(u32, f64)> = measured
        .iter()
        .map(|m| (m.size as u32, m.send_ns))
        .collect();
    let recv_pts: Vec<(u32, f64)> = measured
        .iter()
        .map(|m| (m.size as u32, m.recv_ns))
        .collect();
    let (Some(send), Some(recv)) = (fit(&send_pts), fit(&recv_pts)) else {
        return Err(Error::NoResult("no size gave a finite median to fit"));
    };
    let costs = HostCosts {
        send_fixed: natm_core::Duration::from_nanos(send.fixed_ns.round() as u64),
        send_per_byte_ps: send.per_byte_ps.round() as u64,
        recv_fixed: natm_core::Duration::from_nanos(recv.fixed_ns.round() as u64),
        recv_per_byte_ps: recv.per_byte_ps.round() as u64,
        wakeup: natm_core::Duration::from_nanos(wakeup_ns),
    };
    let calibration = Calibration {
        costs,
        measured_on,
        command: plan.command.clone(),
        date: utc_now(),
        fits: measured
            .iter()
            .map(|m| FitPoint {
                size: m.size as u32,
                send_ns: tenths(m.send_ns),
                recv_ns: tenths(m.recv_ns),
            })
            .collect(),
        transport: Some(transport),
    };
    let text = calibration.to_toml();
    // What is written must be what the simulator reads back.
    Calibration::parse(&text).map_err(|e| Error::Refused {
        what: "the calibration written",
        why: e.to_string(),
    })?;
    let rows: Vec<Row> = measured
        .iter()
        .zip(&calibration.fits)
        .zip(&tpdu)
        .map(|((m, p), t)| Row {
            size: m.size,
            batch: m.batch,
            batches: m.batches,
            send_ns: p.send_ns,
            recv_ns: p.recv_ns,
            send_residual_ns: tenths(p.send_residual_ns(&costs)),
            recv_residual_ns: tenths(p.recv_residual_ns(&costs)),
            tpdu_send_ns: tenths(t.send_ns),
            tpdu_recv_ns: tenths(t.recv_ns),
        })
        .collect();
    let rms = |f: fn(&Row) -> f64| {
        let n = rows.len().max(1) as f64;
        tenths((rows.iter().map(|r| f(r).powi(2)).sum::<f64>() / n).sqrt())
    };
    Ok(Report {
        measured_on: calibration.measured_on.clone(),
        date: calibration.date.clone(),
        command: calibration.command.clone(),
        seconds: tenths(started.elapsed().as_secs_f64()),
        clock_overhead_ns: clock_overhead,
        send_fixed_ns: costs.send_fixed.as_nanos(),
        send_per_byte_ps: costs.send_per_byte_ps,
        recv_fixed_ns: costs.recv_fixed.as_nanos(),
        recv_per_byte_ps: costs.recv_per_byte_ps,
        wakeup_ns,
        wakeup_samples,
        send_rms_residual_ns: rms(|r| r.send_residual_ns),
        recv_rms_residual_ns: rms(|r| r.recv_residual_ns),
        tpdu_send_fixed_ns: transport.send_fixed_ns,
        tpdu_send_per_byte_ps: transport.send_per_byte_ps,
        tpdu_recv_fixed_ns: transport.recv_fixed_ns,
        tpdu_recv_per_byte_ps: transport.recv_per_byte_ps,
        rows,
        out: None,
        toml: text,
    })
}

/// `v` to one decimal, as the nearest float to that decimal (so the file shows `4418.9`,
/// not `4418.900000000001`).
fn tenths(v: f64) -> f64 {
    format!("{v:.1}").parse().unwrap_or(v)
}

/// This thread's CPU time, ns.
fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

/// The median cost of one reading of the thread CPU clock (a system call on most machines).
fn clock_overhead_ns() -> u64 {
    let mut v: Vec<u64> = (0..201)
        .map(|_| {
            let a = thread_cpu_ns();
            thread_cpu_ns().saturating_sub(a)
        })
        .collect();
    v.sort_unstable();
    crate::stats::quantile(&v, 0.5)
}

/// The CPUs of the sender and the receiver: the first two this process may use.
fn placement() -> Option<(usize, usize)> {
    let cpus = natm_nic::sched::allowed_cpus().ok()?;
    match cpus.as_slice() {
        [a, b, ..] => Some((*a, *b)),
        _ => None,
    }
}

/// Cells of an AAL5 PDU carrying `len` bytes.
fn cells_for(len: usize) -> usize {
    (len + 8).div_ceil(48)
}

/// SDUs per batch for `size`: every buffer, as long as the batch's cells fit in the ring.
fn batch_for(size: usize) -> usize {
    (RING_CELLS as usize / cells_for(size)).clamp(1, BUFFERS as usize)
}

/// One size's figures.
struct Measured {
    size: usize,
    batch: usize,
    batches: usize,
    send_ns: f64,
    recv_ns: f64,
}

/// One size's sending side, kept by the sending thread.
struct TxSide {
    size: usize,
    batch: usize,
    sdu: Vec<u8>,
    app: AppEnd,
    driver: Driver<ShmLink>,
    send_ns: Vec<f64>,
    recv_ns: Vec<f64>,
}

/// Measures every size in rounds, one batch of each size per round in an order that
/// rotates, until `budget` is spent (and at least the warm-up and [`MIN_BATCHES`] rounds
/// are done): a change in the machine's load touches every size alike instead of bending
/// the fit.
fn measure_sizes(
    sizes: &[usize],
    budget: Duration,
    cpus: Option<(usize, usize)>,
    clock_overhead: u64,
) -> io::Result<Vec<Measured>> {
    let mut txs = Vec::new();
    let mut rxs = Vec::new();
    for &size in sizes {
        let (a, b) = ShmLink::pair_with(RING_CELLS, ShmWait::BusyPoll).map_err(io::Error::other)?;
        let (app, driver) = super::link::side(size, a)?;
        let (mut app_rx, rx) = super::link::side(size, b)?;
        for buf in 0..BUFFERS {
            app_rx.post_rx(BufferId(buf)).map_err(io::Error::other)?;
        }
        txs.push(TxSide {
            size,
            batch: batch_for(size),
            sdu: (0..size).map(|i| (i % 251) as u8).collect(),
            app,
            driver,
            send_ns: Vec::new(),
            recv_ns: Vec::new(),
        });
        rxs.push((size, batch_for(size), app_rx, rx));
    }
    // The receiver takes the index of the size whose batch is on its link.
    let (to_rx, batches) = mpsc::channel::<usize>();
    let (to_tx, received) = mpsc::channel::<io::Result<u64>>();
    let receiver = thread::spawn(move || {
        pin(cpus.map(|c| c.1));
        let mut copy = vec![0u8; rxs.iter().map(|r| r.0).max().unwrap_or(0)];
        while let Ok(i) = batches.recv() {
            let r = match rxs.get_mut(i) {
                Some((size, batch, app, driver)) => {
                    receive_batch(*size, *batch, app, driver, &mut copy[..*size])
                }
                None => Err(io::Error::other(format!("no size number {i}"))),
            };
            let failed = r.is_err();
            if to_tx.send(r).is_err() || failed {
                break;
            }
        }
    });
    pin(cpus.map(|c| c.0));
    let start = Instant::now();
    let n = txs.len();
    let mut result = Ok(());
    'rounds: for round in 0.. {
        if round >= WARMUP_BATCHES + MIN_BATCHES && start.elapsed() >= budget {
            break;
        }
        for k in 0..n {
            let i = (k + round) % n;
            let t = &mut txs[i];
            let sent = match send_batch(t.size, t.batch, &t.sdu, &mut t.app, &mut t.driver) {
                Ok(ns) => ns,
                Err(e) => {
                    result = Err(e);
                    break 'rounds;
                }
            };
            let got = match to_rx.send(i).map(|()| received.recv()) {
                Ok(Ok(Ok(ns))) => ns,
                Ok(Ok(Err(e))) => {
                    result = Err(e);
                    break 'rounds;
                }
                Ok(Err(_)) | Err(_) => {
                    result = Err(io::Error::other("the receiver thread ended"));
                    break 'rounds;
                }
            };
            if round >= WARMUP_BATCHES {
                let per = |ns: u64| ns.saturating_sub(clock_overhead) as f64 / t.batch as f64;
                t.send_ns.push(per(sent));
                t.recv_ns.push(per(got));
            }
        }
    }
    drop(to_rx);
    receiver
        .join()
        .map_err(|_| io::Error::other("the receiver thread panicked"))?;
    result?;
    Ok(txs
        .into_iter()
        .map(|mut t| Measured {
            size: t.size,
            batch: t.batch,
            batches: t.send_ns.len(),
            send_ns: median(&mut t.send_ns),
            recv_ns: median(&mut t.recv_ns),
        })
        .collect())
}

/// Sends one batch; returns the sender's CPU time for it, ns.
fn send_batch(
    size: usize,
    batch: usize,
    sdu: &[u8],
    app: &mut AppEnd,
    driver: &mut Driver<ShmLink>,
) -> io::Result<u64> {
    let deadline = Instant::now() + BATCH_TIMEOUT;
    let t0 = thread_cpu_ns();
    for b in 0..batch as u32 {
        app.write_buffer(BufferId(b), sdu)
            .map_err(io::Error::other)?;
        app.post_tx(BufferId(b), size as u32, HANDLE, 0)
            .map_err(io::Error::other)?;
    }
    let mut done = 0;
    while done < batch {
        driver.poll().map_err(io::Error::other)?;
        while let Some(c) = app.poll_completion().map_err(io::Error::other)? {
            if status_from_code(c.status) != Some(Status::Ok) {
                return Err(io::Error::other(format!(
                    "a transmit completed with status {}",
                    c.status
                )));
            }
            done += 1;
        }
        if done < batch && Instant::now() > deadline {
            return Err(io::Error::other(format!(
                "{done} of {batch} transmits completed in {BATCH_TIMEOUT:?}"
            )));
        }
    }
    Ok(thread_cpu_ns().saturating_sub(t0))
}

/// Receives one batch whose cells are on the link; returns the receiver's CPU time, ns.
fn receive_batch(
    size: usize,
    batch: usize,
    app: &mut AppEnd,
    driver: &mut Driver<ShmLink>,
    copy: &mut [u8],
) -> io::Result<u64> {
    let deadline = Instant::now() + BATCH_TIMEOUT;
    let t0 = thread_cpu_ns();
    let mut got = 0;
    while got < batch {
        driver.poll().map_err(io::Error::other)?;
        while let Some(c) = app.poll_completion().map_err(io::Error::other)? {
            if status_from_code(c.status) != Some(Status::Ok) || c.len as usize != size {
                return Err(io::Error::other(format!(
                    "an SDU arrived with status {} and {} bytes (expected {size})",
                    c.status, c.len
                )));
            }
            app.read_buffer(c.buffer, copy).map_err(io::Error::other)?;
            app.post_rx(c.buffer).map_err(io::Error::other)?;
            got += 1;
        }
        if got < batch && Instant::now() > deadline {
            let d = driver.adapter().counters();
            return Err(io::Error::other(format!(
                "{got} of {batch} SDUs arrived in {BATCH_TIMEOUT:?} (dropped: crc {}, no buffer \
                 {}, length {}, oversize {})",
                d.crc, d.no_buffer, d.length, d.oversize
            )));
        }
    }
    Ok(thread_cpu_ns().saturating_sub(t0))
}

/// The median of `natm perf wakeup`'s eventfd mode, ns, from this binary run as
/// `natm perf wakeup --modes eventfd --json`.
fn eventfd_wakeup_ns(exe: &Path, samples: u64) -> Result<u64, Error> {
    let out = Command::new(exe)
        .args(["perf", "wakeup", "--modes", "eventfd", "--disturbers", "0"])
        .args(["--sched", "other", "--json", "--samples"])
        .arg(samples.to_string())
        .output()
        .map_err(|e| Error::io(format!("running {} perf wakeup", exe.display()), e))?;
    if !out.status.success() {
        return Err(Error::Child {
            what: "perf wakeup",
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| Error::Refused {
        what: "perf wakeup's JSON",
        why: e.to_string(),
    })?;
    let condition = &v["conditions"][0];
    if let Some(e) = condition["error"].as_str() {
        return Err(Error::Refused {
            what: "perf wakeup",
            why: e.to_string(),
        });
    }
    let median_us = condition["modes"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["mode"] == "eventfd"))
        .and_then(|m| m["median_us"].as_f64())
        .filter(|v| v.is_finite() && *v > 0.0)
        .ok_or(Error::NoResult("perf wakeup reported no eventfd median"))?;
    Ok((median_us * 1000.0).round() as u64)
}

/// Kernel release, CPU model and CPU count.
fn machine() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown kernel".into());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    // What nproc counts: the CPUs this process may run on.
    let n = natm_nic::sched::allowed_cpus()
        .map(|c| c.len())
        .or_else(|_| thread::available_parallelism().map(|n| n.get()))
        .unwrap_or(1);
    format!(
        "Linux {release}; {model}; {n} CPU{}",
        if n == 1 { "" } else { "s" }
    )
}

/// Now, as UTC `YYYY-MM-DDTHH:MM:SSZ`.
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc(secs)
}

/// Seconds since the Unix epoch as UTC `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian).
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from a day count, by 400-year eras of 146,097 days starting in March.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_795_498_245), "2026-11-24T05:30:45Z");
        assert_eq!(utc(4_107_542_399), "2100-02-28T23:59:59Z");
        assert_eq!(utc(4_107_542_400), "2100-03-01T00:00:00Z");
    }

    #[test]
    fn batches_fit_the_ring_and_the_buffers() {
        assert_eq!(batch_for(40), BUFFERS as usize);
        for size in SIZES {
            let b = batch_for(size);
            assert!(b >= 1 && b <= BUFFERS as usize);
            assert!(b * cells_for(size) <= RING_CELLS as usize, "{size}");
        }
        assert_eq!(batch_for(16_384), 4096 / 342);
    }
}

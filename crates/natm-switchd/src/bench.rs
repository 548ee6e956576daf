//! A measurement of the forwarding loop: the daemon's [`Fabric`] on one pinned core
//! between two shared-memory "hosts" on other threads.
//!
//! Host 1 sends `cells` cells on VC 0.100 into port 1; the switch translates them to
//! 2:0.200 and sends them out of port 2, where host 2 receives and counts them. The
//! figure is cells forwarded per second of wall time, from the first cell sent to the
//! last received. The switch side's links busy-poll (the fabric never waits while
//! cells flow); the hosts use the adaptive wait (spin, then sleep on the eventfd), since
//! on a machine with few cores a busy-polling host would take the CPU its peer needs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use natm_core::Qos;
use natm_link::shm::{AdaptivePolicy, ShmError, ShmLink, ShmWait};
use natm_link::{CELL_LEN, Cell, CellLink};
use natm_switch::{CrossConnect, Endpoint, PortConfig, PortId, SwitchConfig, SwitchError};

use crate::fabric::Fabric;

/// Ring size of each benchmark link, in cells.
const RING: u32 = 16_384;

/// What [`forwarding`] measured.
#[derive(Clone, Copy, Debug)]
pub struct Forwarding {
    /// Cells forwarded (all of those sent).
    pub cells: u64,
    /// Cells per batch.
    pub batch: usize,
    /// Wall time.
    pub elapsed: Duration,
    /// Cells per second.
    pub cells_per_second: f64,
    /// The CPU the switch loop was pinned to, if pinning worked.
    pub cpu: Option<usize>,
    /// Steps of the switch loop.
    pub steps: u64,
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A link could not be made.
    #[error("shared-memory link: {0}")]
    Link(#[from] ShmError),
    /// The switch refused the set-up.
    #[error("switch: {0}")]
    Switch(#[from] SwitchError),
    /// A batch of 0 or more than a ring, or 0 cells.
    #[error("bad parameters: {0}")]
    Parameters(String),
    /// A host thread failed.
    #[error("host: {0}")]
    Host(String),
    /// Not every cell arrived within the time limit.
    #[error("only {got} of {want} cells arrived within {limit:?}")]
    Incomplete {
        /// Cells received.
        got: u64,
        /// Cells sent.
        want: u64,
        /// The limit.
        limit: Duration,
    },
}

/// A UNI cell on VPI 0, VCI `vci`, with a valid HEC and `seq` in its payload.
fn cell(vci: u16, seq: u64) -> Cell {
    let mut c = [0u8; CELL_LEN];
    let word = u32::from(vci) << 4;
    c[..4].copy_from_slice(&word.to_be_bytes());
    c[4] = natm_wire::cell::hec([c[0], c[1], c[2], c[3]]);
    c[5..13].copy_from_slice(&seq.to_be_bytes());
    c
}

/// Forwards `cells` cells in batches of `batch` through the switch loop on the calling
/// thread, pinned to one CPU for the run (its affinity is restored afterwards); returns the
/// rate. Gives up after a minute.
pub fn forwarding(cells: u64, batch: usize) -> Result<Forwarding, BenchError> {
    if cells == 0 || batch == 0 || batch > RING as usize {
        return Err(BenchError::Parameters(format!(
            "cells {cells} (≥ 1), batch {batch} (1..={RING})"
        )));
    }
    let limit = Duration::from_secs(60);
    let mut fabric = Fabric::with_batch(SwitchConfig::default(), batch);
    fabric.add_port(PortId(1), PortConfig::default())?;
    fabric.add_port(PortId(2), PortConfig::default())?;
    let now = fabric.now();
    fabric.switch.connect(
        now,
        &CrossConnect::new(
            Endpoint::vc(1, 0, 100),
            Endpoint::vc(2, 0, 200),
            "ubr"
                .parse::<Qos>()
                .map_err(|e| BenchError::Parameters(e.to_string()))?,
        ),
    )?;
    let host_wait = ShmWait::Adaptive(AdaptivePolicy::default());
    let (sw1, h1) = ShmLink::create(RING, ShmWait::BusyPoll)?;
    let h1 = ShmLink::open(h1, host_wait)?;
    let (sw2, h2) = ShmLink::create(RING, ShmWait::BusyPoll)?;
    let h2 = ShmLink::open(h2, host_wait)?;
    fabric.attach(0, Box::new(sw1));
    fabric.attach(1, Box::new(sw2));

    let got = Arc::new(AtomicU64::new(0));
    let cpus = natm_nic::sched::allowed_cpus().unwrap_or_default();
    let saved = rustix::thread::sched_getaffinity(None).ok();
    let cpu = cpus.first().copied();
    let pinned = cpu.filter(|&c| natm_nic::sched::pin_current_thread(c).is_ok());
    let host_cpu = cpus.get(1).copied();

    let t0 = Instant::now();
    let sender = std::thread::spawn(move || -> Result<(), String> {
        pin_host(host_cpu);
        let mut h1 = h1;
        let out: Vec<Cell> = (0..batch as u64).map(|i| cell(100, i)).collect();
        let mut sent = 0u64;
        while sent < cells {
            let n = (cells - sent).min(batch as u64) as usize;
            let k = h1
                .send_cells_timeout(&out[..n], Some(limit))
                .map_err(|e| e.to_string())?;
            if k < n {
                return Err(format!("sending stalled after {} cells", sent + k as u64));
            }
            sent += n as u64;
        }
        Ok(())
    });
    let got2 = got.clone();
    let receiver = std::thread::spawn(move || -> Result<Instant, String> {
        pin_host(host_cpu);
        let mut h2 = h2;
        let mut buf = vec![[0u8; CELL_LEN]; batch];
        let mut n_got = 0u64;
        while n_got < cells {
            let n = h2
                .recv_cells_timeout(&mut buf, Some(limit))
                .map_err(|e| e.to_string())?;
            if n == 0 {
                return Err(format!("nothing for a minute after {n_got} cells"));
            }
            if u32::from_be_bytes([buf[0][0], buf[0][1], buf[0][2], buf[0][3]]) != 200 << 4 {
                return Err("a cell arrived untranslated".into());
            }
            n_got += n as u64;
            got2.store(n_got, Ordering::Relaxed);
        }
        Ok(Instant::now())
    });
    let mut steps = 0u64;
    loop {
        // Look at the clock and the receiver only now and then: they cost per step.
        if steps.is_multiple_of(1024)
            && (got.load(Ordering::Relaxed) >= cells
                || receiver.is_finished()
                || t0.elapsed() > limit)
        {
            break;
        }
        let now = fabric.now();
        fabric.step(now);
        steps += 1;
    }
    // Let the receiver finish (or fail) before judging.
    let end = receiver
        .join()
        .map_err(|_| BenchError::Host("receiver panicked".into()))?;
    let sent = sender
        .join()
        .map_err(|_| BenchError::Host("sender panicked".into()))?;
    if let Some(set) = saved {
        let _ = rustix::thread::sched_setaffinity(None, &set);
    }
    sent.map_err(BenchError::Host)?;
    let end = end.map_err(BenchError::Host)?;
    let n = got.load(Ordering::Relaxed);
    if n < cells {
        return Err(BenchError::Incomplete {
            got: n,
            want: cells,
            limit,
        });
    }
    let elapsed = end.duration_since(t0);
    Ok(Forwarding {
        cells,
        batch,
        elapsed,
        cells_per_second: cells as f64 / elapsed.as_secs_f64(),
        cpu: pinned,
        steps,
    })
}

fn pin_host(cpu: Option<usize>) {
    if let Some(c) = cpu {
        let _ = natm_nic::sched::pin_current_thread(c);
    }
}

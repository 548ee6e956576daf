//! natm-transport's own CPU cost per TPDU, for the calibration file's `[transport]` table
//! (natm-sim's `calib` module says what it means; the `natm` API's admission of a
//! guaranteed channel adds it to the data path's cost of the frame).
//!
//! One thread, two best-effort endpoints (no acks, no timers: a guaranteed channel's work
//! per TPDU without its leaky bucket's waits). For each frame size of the calibration, a
//! batch of one-TPDU messages is sent (`send_message` + `poll_transmit` into a frame
//! buffer each) and then received (`handle_tpdu` + `poll_event` each), each half timed
//! by the thread's CPU clock; sizes in rotating rounds as the data path's are. What it is
//! not: the VC's send and receive (the data path's figures have them) nor the driver's
//! (`natm::transport::Channel`'s) bookkeeping around the endpoint.

use std::time::{Duration, Instant};

use natm_sim::calib::{TransportCosts, fit};
use natm_transport::header::DATA_HEADER_LEN;
use natm_transport::{Config, Endpoint, Event, Isn, Service};

use super::thread_cpu_ns;
use crate::stats::median;

/// Messages per batch.
const BATCH: usize = 64;
/// Rounds thrown away first, and rounds at the least.
const WARMUP: usize = 2;
const MIN_ROUNDS: usize = 5;

/// One frame size's sender, receiver and samples.
struct Size {
    frame: usize,
    tx: Endpoint,
    rx: Endpoint,
    msg: Vec<u8>,
    frames: Vec<Vec<u8>>,
    send_ns: Vec<f64>,
    recv_ns: Vec<f64>,
}

/// One frame size's medians.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    /// Frame bytes (header and payload).
    pub frame: usize,
    /// Sending one TPDU, ns.
    pub send_ns: f64,
    /// Receiving one, ns.
    pub recv_ns: f64,
}

/// The per-size medians and the fitted costs, measured for about `budget` over the frame
/// sizes `sizes` (each at least a header and one byte).
pub fn measure(
    sizes: &[usize],
    budget: Duration,
    clock_overhead: u64,
) -> Result<(Vec<Point>, TransportCosts), String> {
    let mut all = Vec::new();
    for &frame in sizes {
        let payload = frame
            .checked_sub(DATA_HEADER_LEN)
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("a TPDU frame of {frame} bytes has no payload"))?;
        let config = Config {
            service: Service::BestEffort,
            tpdu_size: payload,
            max_message: payload,
            ..Config::default()
        };
        let isn = Isn::default();
        let ep = || Endpoint::new(config, isn, isn).map_err(|e| format!("{frame} B: {e}"));
        all.push(Size {
            frame,
            tx: ep()?,
            rx: ep()?,
            msg: (0..payload).map(|i| (i % 251) as u8).collect(),
            frames: vec![vec![0; config.max_frame_len()]; BATCH],
            send_ns: Vec::new(),
            recv_ns: Vec::new(),
        });
    }
    let now = natm_core::Instant::ZERO;
    let start = Instant::now();
    let n = all.len();
    for round in 0.. {
        if round >= WARMUP + MIN_ROUNDS && start.elapsed() >= budget {
            break;
        }
        for k in 0..n {
            let s = &mut all[(k + round) % n];
            let mut lens = [0usize; BATCH];
            let t0 = thread_cpu_ns();
            for (buf, len) in s.frames.iter_mut().zip(&mut lens) {
                s.tx.send_message(now, &s.msg)
                    .map_err(|e| format!("{} B: {e:?}", s.frame))?;
                *len = s.tx.poll_transmit(now, buf).unwrap_or(0);
            }
            let t1 = thread_cpu_ns();
            let mut got = 0;
            for (buf, &len) in s.frames.iter().zip(&lens) {
                // A refused frame leaves `got` short, which is reported below.
                let _ = s.rx.handle_tpdu(now, &buf[..len]);
                if let Some(Event::Message { data, .. }) = s.rx.poll_event() {
                    got += usize::from(data.len() == s.msg.len());
                }
            }
            let t2 = thread_cpu_ns();
            if got != BATCH {
                return Err(format!(
                    "{} B: {got} of {BATCH} TPDUs came through the endpoints",
                    s.frame
                ));
            }
            if round >= WARMUP {
                let per = |ns: u64| ns.saturating_sub(clock_overhead) as f64 / BATCH as f64;
                s.send_ns.push(per(t1 - t0));
                s.recv_ns.push(per(t2 - t1));
            }
        }
    }
    let points: Vec<Point> = all
        .iter_mut()
        .map(|s| Point {
            frame: s.frame,
            send_ns: median(&mut s.send_ns),
            recv_ns: median(&mut s.recv_ns),
        })
        .collect();
    let line = |pick: fn(&Point) -> f64| {
        let pts: Vec<(u32, f64)> = points.iter().map(|p| (p.frame as u32, pick(p))).collect();
        fit(&pts).ok_or_else(|| "no TPDU size gave a finite median to fit".to_string())
    };
    let (send, recv) = (line(|p| p.send_ns)?, line(|p| p.recv_ns)?);
    Ok((
        points,
        TransportCosts {
            send_fixed_ns: send.fixed_ns.round() as u64,
            send_per_byte_ps: send.per_byte_ps.round() as u64,
            recv_fixed_ns: recv.fixed_ns.round() as u64,
            recv_per_byte_ps: recv.per_byte_ps.round() as u64,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_size_is_measured_and_fitted() {
        let (points, costs) = measure(&[40, 1500, 8204], Duration::ZERO, 0).unwrap();
        assert_eq!(
            points.iter().map(|p| p.frame).collect::<Vec<_>>(),
            [40, 1500, 8204]
        );
        assert!(
            points.iter().all(|p| p.send_ns > 0.0 && p.recv_ns > 0.0),
            "{points:?}"
        );
        // Copying 8 KiB costs more than copying 28 bytes: the line has a slope or a
        // fixed part at the least.
        assert!(
            costs.send_fixed_ns + costs.send_per_byte_ps > 0,
            "{costs:?}"
        );
        let e = measure(&[12], Duration::ZERO, 0).unwrap_err();
        assert!(e.contains("12 bytes has no payload"), "{e}");
    }
}

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
//! For a sweep, [`half_power`] gives each transport's half-power point: the smallest
//! message size that reaches half the goodput of the largest size measured.
//!
//! # What it is not
//!
//! No plot and none of the seed's fitted lines (issue 25 asks for both; not built), no
//! impairment of its own (impair the lab's links in its topology), no round-trip figure,
//! no switched VC: a PVC both hosts open.

mod render;

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use natm::transport::{Channel, Event, Service, TransportOptions};
use natm::{DataPath, VcOptions};
use natm_core::addr::PvcAddr;
use natm_core::qos::Qos;
use serde::Serialize;

use crate::progress::Progress;
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
    /// The sender's smoothed round trip at the end, in milliseconds (reliable).
    pub srtt_ms: Option<f64>,
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
    /// natm's channel.
    pub natm: NatmMoved,
    /// Kernel TCP (`null` with no baseline).
    pub tcp: Option<TcpMoved>,
    /// natm's goodput ÷ TCP's (`null` with no baseline).
    pub ratio: Option<f64>,
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
    /// Where the threads ran.
    pub placement: Placement,
    /// One per size, in the plan's order.
    pub sizes: Vec<SizeResult>,
    /// The half-power points (with two sizes or more).
    pub half_power: Option<HalfPower>,
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

/// Runs the measurement of `plan` and returns its report (prints nothing).
pub fn run(plan: &Plan) -> Result<Report, Error> {
    let warnings = crate::crowding::for_run(&plan.placement, None);
    let per = if plan.baseline { 2 } else { 1 };
    let mut progress = Progress::new((plan.sizes.len() * per) as u64, "transport");
    let mut sizes = Vec::new();
    for &size in &plan.sizes {
        progress.set_message(format!("transport natm {size} B"));
        let natm = natm_run(plan, size)
            .map_err(|e| Error::io(format!("natm transport, {size}-byte messages"), e))?;
        progress.inc(1);
        let tcp = if plan.baseline {
            progress.set_message(format!("transport tcp {size} B"));
            let t = tcp_run(plan, size)
                .map_err(|e| Error::io(format!("tcp, {size}-byte messages"), e))?;
            progress.inc(1);
            Some(t)
        } else {
            None
        };
        let ratio = tcp
            .as_ref()
            .filter(|t| t.bits_per_sec > 0.0)
            .map(|t| natm.bits_per_sec / t.bits_per_sec);
        sizes.push(SizeResult {
            size,
            natm,
            tcp,
            ratio,
        });
    }
    drop(progress);
    let half = (sizes.len() >= 2).then(|| {
        let natm: Vec<(usize, f64)> = sizes
            .iter()
            .map(|s| (s.size, s.natm.bits_per_sec))
            .collect();
        let tcp: Vec<(usize, f64)> = sizes
            .iter()
            .filter_map(|s| s.tcp.as_ref().map(|t| (s.size, t.bits_per_sec)))
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
        placement: plan.placement,
        sizes,
        half_power: half,
        warnings,
    })
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

/// Opens `target`'s PVC on `host` and a channel over it.
fn open(host: &str, plan: &Plan) -> io::Result<Channel> {
    let h = if host.contains('/') {
        natm::Host::connect_path(host)
    } else {
        natm::Host::connect(host)
    }
    .map_err(|e| natm_error(&format!("host {host}"), e))?;
    let opts = TransportOptions::new(plan.service).handshake_timeout(HANDSHAKE);
    let vc = VcOptions::new(plan.target.vc)
        .qos(plan.target.qos)
        .path(plan.target.path)
        .buffers(256)
        .buffer_size(opts.buffer_size());
    Channel::open(&h, vc, opts).map_err(|e| match e {
        natm::Error::Timeout => io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "VC {} on {host}: the other end's channel did not answer within {} s",
                plan.target.vc,
                HANDSHAKE.as_secs()
            ),
        ),
        e => natm_error(&format!("VC {} on {host}", plan.target.vc), e),
    })
}

/// What the receiver counted.
struct Received {
    messages: u64,
    bytes: u64,
    lost: u64,
    last: Option<Instant>,
}

/// The receiver's loop: until the end message, or the sender is done and it is quiet.
fn receive(ch: &mut Channel, done: &AtomicBool) -> io::Result<Received> {
    let mut r = Received {
        messages: 0,
        bytes: 0,
        lost: 0,
        last: None,
    };
    loop {
        match ch.recv_timeout(QUIET) {
            Ok(Event::Message { data, .. }) => match data.first() {
                Some(&DATA) => {
                    r.messages += 1;
                    r.bytes += data.len() as u64;
                    r.last = Some(Instant::now());
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

/// One run of natm's channel at `size`.
fn natm_run(plan: &Plan, size: usize) -> io::Result<NatmMoved> {
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
                receive(&mut ch, &done)
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
    Ok(NatmMoved {
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
        srtt_ms: stats.srtt.map(|d| d.as_nanos() as f64 / 1e6),
    })
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

    #[test]
    fn a_count_budget_stops_at_the_count() {
        let t = Instant::now();
        assert!(more(Budget::Count(2), 1, t));
        assert!(!more(Budget::Count(2), 2, t));
        assert!(!more(Budget::Seconds(0.0), 0, t));
    }
}

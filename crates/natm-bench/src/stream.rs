//! The engine of `natm perf stream`: one-way goodput over a [`Transport`](crate::transport::Transport), ttcp-like, the measured
//! transport beside kernel baselines in the same run, for one message size or a sweep of
//! sizes (issue 5). The PNG plot of it is the caller's.
//!
//! # What is measured
//!
//! For each size and transport, a fresh connected pair: the sender (this thread, pinned to
//! `--cpu-client`) sends messages of the size back to back for `--seconds`, then the empty
//! end marker; the receiver (a thread pinned to `--cpu-server`) counts the messages and
//! bytes it receives and when the last one came. Goodput is bytes received ÷ the time from
//! the first send to the last receive; messages/s likewise. A lossy transport (UDP, natm)
//! may drop messages when the receiver falls behind: they count as sent, not received, and
//! the receiver stops once the sender is done and nothing came for [`QUIET`].
//!
//! Sizes are measured one after another; at each size the transports take turns in an
//! order that rotates from one size to the next. A size a baseline cannot carry (above
//! 65,507 bytes for UDP) is left out for that baseline and said so.

mod render;

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::progress::Progress;
use crate::rr::{tell_ready, wait_ready};
use crate::transport::{self, Kind, NatmTarget, Placement};
use crate::{Error, pin};

/// The default sweep of message sizes.
pub const DEFAULT_SWEEP: &str = "40,64,128,256,512,1024,2048,4096,8192,16384,32768,65536";
/// How long a lossy receiver waits for more after the sender is done.
pub const QUIET: Duration = Duration::from_millis(100);
/// Messages sent between two looks at the clock.
const CLOCK_EVERY: u32 = 16;

/// A goodput run: what [`run`] does.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Message sizes in bytes, measured in this order; a transport measures those it
    /// carries.
    pub sizes: Vec<usize>,
    /// Time of sending per size and transport.
    pub time: Duration,
    /// Where the sender and receiver threads run.
    pub placement: Placement,
    /// Transports measured, the measured one first.
    pub kinds: Vec<Kind>,
    /// natm's options, needed when `kinds` holds [`Kind::Natm`].
    pub natm: Option<NatmTarget>,
}

/// What one transport moved at one size.
#[derive(Clone, Debug, Serialize)]
pub struct Moved {
    /// The transport.
    pub kind: Kind,
    /// Goodput.
    pub bits_per_sec: f64,
    /// Messages received per second.
    pub messages_per_sec: f64,
    /// Messages sent.
    pub sent_messages: u64,
    /// Messages received.
    pub received_messages: u64,
    /// Bytes received.
    pub received_bytes: u64,
    /// From the first send to the last receive.
    pub seconds: f64,
}

/// One size's figures.
#[derive(Debug, Serialize)]
pub struct SizeResult {
    /// The message size in bytes.
    pub size: usize,
    /// One per transport, in the order of `kinds`; `null` where the transport cannot carry
    /// the size.
    pub results: Vec<Option<Moved>>,
    /// The measured transport's goodput ÷ each baseline's (`null` where either is missing).
    pub ratios: Vec<Option<f64>>,
}

/// What a goodput run reports (`natm perf stream --json`).
#[derive(Debug, Serialize)]
pub struct Report {
    /// The transports, the measured one first.
    pub kinds: Vec<Kind>,
    /// Seconds of sending per size and transport.
    pub seconds: f64,
    /// Where the threads ran.
    pub placement: Placement,
    /// One per size, in the plan's order.
    pub sizes: Vec<SizeResult>,
    /// The plot written of it, if the caller wrote one (the engine leaves it `None`).
    pub plot: Option<String>,
    /// Why the placement may not give a meaningful figure ([`crowding`](crate::crowding)).
    pub warnings: Vec<String>,
}

/// Runs the measurement of `plan` and returns its report (prints nothing, plots nothing).
pub fn run(plan: &Plan) -> Result<Report, Error> {
    let warnings = crate::crowding::for_run(&plan.placement, plan.natm.as_ref());
    let cells: u64 = plan
        .sizes
        .iter()
        .map(|&s| plan.kinds.iter().filter(|k| k.carries(s)).count() as u64)
        .sum();
    // In milliseconds of sending, so that one long run moves the bar too.
    let run_ms = plan.time.as_millis() as u64;
    let mut progress = Progress::new(cells * run_ms, "stream");
    let mut sizes = Vec::new();
    for (i, &size) in plan.sizes.iter().enumerate() {
        let mut results: Vec<Option<Moved>> = vec![None; plan.kinds.len()];
        for j in 0..plan.kinds.len() {
            let at = (i + j) % plan.kinds.len();
            let kind = plan.kinds[at];
            if !kind.carries(size) {
                continue;
            }
            progress.set_message(format!("stream {kind} {size} B"));
            let m = one_run(kind, size, plan, &mut progress)
                .map_err(|e| Error::io(format!("{kind}, {size}-byte messages"), e))?;
            results[at] = Some(m);
        }
        let ratios = results[1..]
            .iter()
            .map(|b| match (&results[0], b) {
                (Some(a), Some(b)) if b.bits_per_sec > 0.0 => Some(a.bits_per_sec / b.bits_per_sec),
                _ => None,
            })
            .collect();
        sizes.push(SizeResult {
            size,
            results,
            ratios,
        });
    }
    drop(progress);
    Ok(Report {
        kinds: plan.kinds.clone(),
        seconds: plan.time.as_secs_f64(),
        placement: plan.placement,
        sizes,
        plot: None,
        warnings,
    })
}

/// One timed run of `kind` at `size`.
pub fn one_run(kind: Kind, size: usize, plan: &Plan, progress: &mut Progress) -> io::Result<Moved> {
    let (mut sender, mut receiver) = transport::pair(kind, plan.natm.as_ref(), size)?;
    let lossy = kind.lossy();
    let done = Arc::new(AtomicBool::new(false));
    let cpu = plan.placement.server;
    let (ready_tx, ready_rx) = mpsc::sync_channel(1);
    let rx = {
        let done = done.clone();
        thread::Builder::new()
            .name(format!("stream-rx-{kind}"))
            .spawn(move || -> io::Result<(u64, u64, Option<Instant>)> {
                pin(cpu);
                let set_up = receiver.ready().and_then(|()| {
                    // A reliable transport always delivers the end marker.
                    receiver.set_recv_timeout(if lossy { Some(QUIET) } else { None })
                });
                tell_ready(&ready_tx, &set_up);
                set_up?;
                let mut buf = vec![0u8; size];
                let (mut messages, mut bytes, mut last) = (0u64, 0u64, None);
                loop {
                    match receiver.recv(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            messages += 1;
                            bytes += n as u64;
                            last = Some(Instant::now());
                        }
                        Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                            if done.load(Ordering::Acquire) {
                                break;
                            }
                        }
                        Err(e) => return Err(e),
                    }
                }
                Ok((messages, bytes, last))
            })?
    };
    wait_ready(&ready_rx, "receiving")?;
    pin(plan.placement.client);
    sender.ready()?;
    let msg: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    let mut sent = 0u64;
    let start = Instant::now();
    let run_ms = plan.time.as_millis() as u64;
    let mut shown_ms = 0u64;
    let sending = (|| -> io::Result<()> {
        loop {
            let elapsed = start.elapsed();
            let ms = (elapsed.as_millis() as u64).min(run_ms);
            progress.inc(ms - shown_ms);
            shown_ms = ms;
            if elapsed >= plan.time {
                return Ok(());
            }
            for _ in 0..CLOCK_EVERY {
                sender.send(&msg)?;
                sent += 1;
            }
        }
    })();
    progress.inc(run_ms - shown_ms);
    done.store(true, Ordering::Release);
    // The end marker (a lossy receiver also stops by itself once it is quiet).
    let ended = sender.send(&[]);
    let received = rx
        .join()
        .map_err(|_| io::Error::other("the receiver thread panicked"))?;
    sending?;
    ended?;
    let (messages, bytes, last) = received?;
    let seconds = last.map_or(0.0, |l| l.duration_since(start).as_secs_f64());
    let per_sec = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
    if !lossy && messages != sent {
        return Err(io::Error::other(format!(
            "sent {sent} messages, {messages} arrived over a reliable transport"
        )));
    }
    Ok(Moved {
        kind,
        bits_per_sec: per_sec(bytes as f64 * 8.0),
        messages_per_sec: per_sec(messages as f64),
        sent_messages: sent,
        received_messages: messages,
        received_bytes: bytes,
        seconds,
    })
}

//! `natm perf stream`: one-way goodput over a [`Transport`], ttcp-like, the measured
//! transport beside kernel baselines in the same run, for one message size or a sweep of
//! sizes, with an optional PNG plot ([`plot`](super::plot)) (issue 5).
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

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use super::plot::{self, Series};
use super::rr::{tell_ready, wait_ready};
use super::transport::{self, CpuArgs, Kind, Placement, TargetArgs, Targets};
use super::{Progress, pin};
use crate::{CliError, CmdResult};

/// The default sweep of message sizes.
pub const DEFAULT_SWEEP: &str = "40,64,128,256,512,1024,2048,4096,8192,16384,32768,65536";
/// How long a lossy receiver waits for more after the sender is done.
pub const QUIET: Duration = Duration::from_millis(100);
/// Messages sent between two looks at the clock.
const CLOCK_EVERY: u32 = 16;

/// Arguments of `natm perf stream`.
#[derive(Args, Debug)]
pub struct StreamArgs {
    #[command(flatten)]
    opts: StreamOpts,
    #[command(flatten)]
    target: TargetArgs,
}

/// The measurement's options, shared with `natm perf baseline KIND stream`.
#[derive(Args, Debug)]
pub struct StreamOpts {
    /// One message size in bytes (instead of the sweep).
    #[arg(long, conflicts_with = "sweep")]
    size: Option<usize>,
    /// Seconds of sending per size and transport.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Message sizes in bytes, comma separated.
    #[arg(long, default_value = DEFAULT_SWEEP)]
    sweep: String,
    /// Write a PNG plot of goodput against size to FILE.
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    #[command(flatten)]
    cpus: CpuArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// A checked `natm perf stream` run.
pub struct Plan {
    sizes: Vec<usize>,
    time: Duration,
    placement: Placement,
    kinds: Vec<Kind>,
}

/// Checks `opts` against `targets`.
pub fn plan(opts: &StreamOpts, targets: &Targets) -> Result<Plan, CliError> {
    let main = targets.kinds[0];
    let (max, what) = main.max_message();
    let sizes = match opts.size {
        Some(n) => {
            check_size(n, "--size")?;
            if n > max {
                return Err(CliError::usage(format!(
                    "--size {n}: {what} carries at most {max} bytes"
                )));
            }
            vec![n]
        }
        None => {
            let mut sizes = Vec::new();
            for part in opts.sweep.split(',') {
                let n: usize = part.trim().parse().map_err(|_| {
                    CliError::usage(format!("--sweep {part:?}: not a whole number of bytes"))
                })?;
                check_size(n, "--sweep")?;
                sizes.push(n);
            }
            sizes
        }
    };
    if !(opts.seconds > 0.0 && opts.seconds <= 3600.0) {
        return Err(CliError::usage(format!(
            "--seconds {}: expected more than 0 and at most 3600",
            opts.seconds
        )));
    }
    Ok(Plan {
        sizes,
        time: Duration::from_secs_f64(opts.seconds),
        placement: opts.cpus.placement()?,
        kinds: targets.kinds.clone(),
    })
}

fn check_size(n: usize, what: &str) -> Result<(), CliError> {
    if n == 0 {
        return Err(CliError::usage(format!(
            "{what} 0: a message is at least 1 byte"
        )));
    }
    if n > transport::STREAM_MAX {
        return Err(CliError::usage(format!(
            "{what} {n}: at most {} bytes",
            transport::STREAM_MAX
        )));
    }
    Ok(())
}

/// Runs `natm perf stream`.
pub fn run(args: StreamArgs) -> CmdResult {
    let targets = args.target.targets()?;
    measure(&args.opts, &targets)
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
    size: usize,
    /// One per transport, in the order of `kinds`; `null` where the transport cannot carry
    /// the size.
    results: Vec<Option<Moved>>,
    /// The measured transport's goodput ÷ each baseline's (`null` where either is missing).
    ratios: Vec<Option<f64>>,
}

/// What `natm perf stream` reports.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The transports, the measured one first.
    kinds: Vec<Kind>,
    seconds: f64,
    placement: Placement,
    sizes: Vec<SizeResult>,
    plot: Option<String>,
}

/// Measures `targets` with `opts`, prints the report and writes the plot.
pub fn measure(opts: &StreamOpts, targets: &Targets) -> CmdResult {
    let plan = plan(opts, targets)?;
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
            let m = one_run(kind, size, &plan, targets, &mut progress)
                .map_err(|e| CliError::failure(format!("{kind}, {size}-byte messages: {e}")))?;
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
    let mut report = Report {
        kinds: plan.kinds.clone(),
        seconds: plan.time.as_secs_f64(),
        placement: plan.placement,
        sizes,
        plot: None,
    };
    if let Some(path) = &opts.plot {
        let series: Vec<Series> = report
            .kinds
            .iter()
            .enumerate()
            .map(|(k, &kind)| Series {
                kind,
                points: report
                    .sizes
                    .iter()
                    .filter_map(|s| {
                        s.results[k]
                            .as_ref()
                            .map(|m| (s.size, m.bits_per_sec / 1e6))
                    })
                    .collect(),
            })
            .collect();
        plot::goodput(path, &series)
            .map_err(|e| CliError::failure(format!("--plot {}: {e}", path.display())))?;
        report.plot = Some(path.display().to_string());
    }
    super::print_report(opts.json, &report, print_table)
}

/// One timed run of `kind` at `size`.
pub fn one_run(
    kind: Kind,
    size: usize,
    plan: &Plan,
    targets: &Targets,
    progress: &mut Progress,
) -> io::Result<Moved> {
    let (mut sender, mut receiver) = transport::pair(kind, targets.natm.as_ref())?;
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

fn print_table(r: &Report) {
    let cpu = |c: Option<usize>| c.map_or("any".to_string(), |c| c.to_string());
    println!(
        "natm perf stream: {:.1} s per size and transport; sender CPU {}, receiver CPU {}",
        r.seconds,
        cpu(r.placement.client),
        cpu(r.placement.server)
    );
    let main = r.kinds[0];
    let mut head = format!(
        "{:>8} {:>10} {:>12} {:>6}",
        "size", "Mbit/s", "messages/s", "lost"
    );
    for b in &r.kinds[1..] {
        head.push_str(&format!(" {:>12} {:>8}", format!("{b} Mbit/s"), "ratio"));
    }
    println!("{main}: goodput; ratio = {main} ÷ the baseline, same size, same run");
    println!("{head}");
    for s in &r.sizes {
        let mut line = match &s.results[0] {
            Some(m) => format!(
                "{:>8} {:>10.1} {:>12.0} {:>6}",
                s.size,
                m.bits_per_sec / 1e6,
                m.messages_per_sec,
                m.sent_messages - m.received_messages.min(m.sent_messages)
            ),
            None => format!("{:>8} {:>10} {:>12} {:>6}", s.size, "-", "-", "-"),
        };
        for (b, ratio) in s.results[1..].iter().zip(&s.ratios) {
            let mbit = b
                .as_ref()
                .map_or("-".to_string(), |m| format!("{:.1}", m.bits_per_sec / 1e6));
            let ratio = ratio.map_or("-".to_string(), |x| format!("{x:.2}×"));
            line.push_str(&format!(" {mbit:>12} {ratio:>8}"));
        }
        println!("{line}");
    }
    for (k, kind) in r.kinds.iter().enumerate() {
        let missing: Vec<String> = r
            .sizes
            .iter()
            .filter(|s| s.results[k].is_none())
            .map(|s| s.size.to_string())
            .collect();
        if !missing.is_empty() {
            let (max, what) = kind.max_message();
            println!(
                "{kind}: not measured at {} bytes ({what} carries at most {max})",
                missing.join(", ")
            );
        }
    }
    if let Some(p) = &r.plot {
        println!("plot: {p}; {}", plot::LEGEND);
    }
}

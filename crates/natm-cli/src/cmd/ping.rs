//! `natm ping [--host h1] [--segment] [-c N] [-i S] VPI.VCI`: OAM F5 loopback (I.610 §10.2.4)
//! on a PVC, like `ping`.
//!
//! The host daemon sends a loopback request cell (loopback indication 1, a correlation tag)
//! and times the reply: end to end, the far host's daemon loops it back; with `--segment`,
//! the first switch does. Each line is one reply; the summary has the loss and the RTT
//! minimum, average, maximum and percentiles in µs. Exit status 1 when no reply came back.

use std::time::{Duration, Instant};

use clap::Args;
use natm::{OamScope, PvcAddr};
use natm_bench::stats::quantile;
use serde_json::json;

use super::lab::{self, DirArgs};
use crate::{CliError, CmdResult};

/// Options of `natm ping`.
#[derive(Args, Debug)]
pub struct PingArgs {
    /// The PVC, VPI.VCI (e.g. 0.100).
    pub vc: String,
    /// The host to ping from.
    #[arg(long, default_value = "h1")]
    pub host: String,
    /// Segment loopback (the switch answers) instead of end to end.
    #[arg(long)]
    pub segment: bool,
    /// Requests to send.
    #[arg(short = 'c', long, default_value_t = 5)]
    pub count: u32,
    /// Seconds between requests.
    #[arg(short = 'i', long, default_value_t = 0.2)]
    pub interval: f64,
    /// Seconds to wait for each reply.
    #[arg(short = 'W', long, default_value_t = 1.0)]
    pub timeout: f64,
    /// Print JSON (RTTs in ns).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub dir: DirArgs,
}

fn secs(what: &str, v: f64, max: f64) -> Result<Duration, CliError> {
    if !(v.is_finite() && v >= 0.0 && v <= max) {
        return Err(CliError::usage(format!(
            "{what} {v}: must be 0 to {max} seconds"
        )));
    }
    Ok(Duration::from_secs_f64(v))
}

/// Connects to a lab host by name: the lab's record if there is one, else the socket rule.
pub fn connect_host(dir: &DirArgs, name: &str) -> Result<natm::Host, CliError> {
    let rt = lab::runtime_dir(dir.dir.as_deref());
    let socket = match lab::load_state(&rt) {
        Ok(state) => match state.daemons.iter().find(|d| d.name == name) {
            Some(d) if d.role == "host" => d.socket.clone(),
            Some(_) => {
                return Err(CliError::usage(format!(
                    "--host {name}: that is a switch, not a host"
                )));
            }
            None => {
                let hosts: Vec<&str> = state
                    .daemons
                    .iter()
                    .filter(|d| d.role == "host")
                    .map(|d| d.name.as_str())
                    .collect();
                return Err(CliError::usage(format!(
                    "--host {name}: the lab's hosts are {}",
                    hosts.join(", ")
                )));
            }
        },
        Err(_) => rt.join(format!("{name}.sock")),
    };
    natm::Host::connect_path(&socket).map_err(|e| CliError::failure(format!("host {name}: {e}")))
}

/// Runs `natm ping`.
pub fn run(args: PingArgs) -> CmdResult {
    let vc: PvcAddr = args
        .vc
        .parse()
        .map_err(|e| CliError::usage(format!("{:?} is not a PVC (VPI.VCI): {e}", args.vc)))?;
    if args.count == 0 {
        return Err(CliError::usage("--count 0: send at least one request"));
    }
    let interval = secs("--interval", args.interval, 60.0)?;
    let timeout = secs("--timeout", args.timeout, 60.0)?;
    if timeout.is_zero() {
        return Err(CliError::usage("--timeout 0: a reply needs some time"));
    }
    // Shown as the user wrote it (PvcAddr's own form adds the interface, 0.0.100).
    let shown = args.vc.trim().to_string();
    let host = connect_host(&args.dir, &args.host)?;
    let scope = if args.segment {
        OamScope::Segment
    } else {
        OamScope::EndToEnd
    };
    let what = if args.segment {
        "segment"
    } else {
        "end-to-end"
    };
    if !args.json {
        println!("PING {shown} from {} (OAM F5 {what} loopback)", args.host);
    }
    let mut rtts = Vec::new();
    let mut errors = Vec::new();
    for seq in 1..=args.count {
        let started = Instant::now();
        match host.ping(vc, scope, timeout) {
            Ok(rtt) => {
                let ns = rtt.as_nanos() as u64;
                rtts.push(ns);
                if !args.json {
                    println!(
                        "reply from {shown}: seq={seq} time={:.1} µs",
                        ns as f64 / 1e3
                    );
                }
            }
            Err(e) => {
                if !args.json {
                    println!("no reply: seq={seq}: {e}");
                }
                errors.push(e.to_string());
            }
        }
        if seq < args.count {
            std::thread::sleep(interval.saturating_sub(started.elapsed()));
        }
    }
    let mut sorted = rtts.clone();
    sorted.sort_unstable();
    let sent = u64::from(args.count);
    let received = rtts.len() as u64;
    let avg = if rtts.is_empty() {
        0
    } else {
        rtts.iter().sum::<u64>() / received
    };
    if args.json {
        let doc = json!({
            "vc": shown, "host": args.host, "scope": what,
            "sent": sent, "received": received,
            "rtt_ns": {
                "min": sorted.first(), "avg": avg, "max": sorted.last(),
                "p50": quantile(&sorted, 0.5), "p90": quantile(&sorted, 0.9), "p99": quantile(&sorted, 0.99),
            },
            "samples_ns": rtts, "errors": errors,
        });
        println!("{doc}");
    } else {
        println!("--- {shown} ping statistics ---");
        println!(
            "{sent} requests sent, {received} replies, {:.0}% loss",
            100.0 * (sent - received) as f64 / sent as f64
        );
        if let (Some(min), Some(max)) = (sorted.first(), sorted.last()) {
            let us = |ns: u64| ns as f64 / 1e3;
            println!(
                "rtt min/avg/max = {:.1}/{:.1}/{:.1} µs, p50 {:.1}, p90 {:.1}, p99 {:.1} µs",
                us(*min),
                us(avg),
                us(*max),
                us(quantile(&sorted, 0.5)),
                us(quantile(&sorted, 0.9)),
                us(quantile(&sorted, 0.99))
            );
        }
    }
    if received == 0 {
        return Err(CliError::failure(format!(
            "no reply from {shown}: {}",
            errors.last().map(String::as_str).unwrap_or("")
        )));
    }
    Ok(())
}

//! `natm stat [--watch] [--json]`: what every daemon of the lab is doing — the switch's
//! ports, cross-connects and queues, each host's link and channels with their owning
//! process, counters and memory.
//!
//! A switch answers on its management socket (`{"op":"status"}`, natm-switchd); a host on
//! its channel-manager socket (natm's `Host::status`). `--json` prints one document with
//! each daemon's answer as it gave it; `--watch` reprints every `--interval` until
//! interrupted (or `--count` times).

use std::time::Duration;

use clap::Args;
use natm::HostStatus;
use natm_lab::DaemonStatus;
use natm_switchd::client::SwitchStatus;
use serde_json::{Value, json};

use super::lab::{self, Daemon, DirArgs};
use crate::{CliError, CmdResult};

/// Options of `natm stat`.
#[derive(Args, Debug)]
pub struct StatArgs {
    /// Reprint every --interval.
    #[arg(long)]
    pub watch: bool,
    /// Seconds between reprints with --watch.
    #[arg(long, default_value_t = 1.0)]
    pub interval: f64,
    /// Stop --watch after this many prints.
    #[arg(long)]
    pub count: Option<u64>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Only this daemon (a switch or host name).
    #[arg(long)]
    pub node: Option<String>,
    #[command(flatten)]
    pub dir: DirArgs,
}

const TIMEOUT: Duration = Duration::from_secs(2);

/// One daemon's status, or why it did not answer.
pub fn daemon_status(d: &Daemon) -> Result<DaemonStatus, String> {
    d.status(TIMEOUT).map_err(|e| e.to_string())
}

fn mib(bytes: Option<u64>) -> String {
    match bytes {
        Some(b) => format!("{:.1} MiB", b as f64 / (1 << 20) as f64),
        None => "?".into(),
    }
}

/// A one-line summary of a daemon's status.
pub fn one_line(status: &DaemonStatus) -> String {
    match status {
        DaemonStatus::Switch(v) => {
            let up = v.ports.iter().filter(|p| p.up).count();
            format!(
                "{up}/{} ports up, {} cross-connects, {}",
                v.ports.len(),
                v.connections.len(),
                mib(v.memory)
            )
        }
        DaemonStatus::Host(v) => format!(
            "link {} ({}), {} channels, {}",
            if v.link.up { "up" } else { "DOWN" },
            v.link.description,
            v.channels.len(),
            mib(Some(v.vm_rss_bytes))
        ),
    }
}

fn print_switch(name: &str, v: &SwitchStatus) {
    println!(
        "switch {name}: pid {}, up {:.0} s, {}, {} B of state per cross-connect",
        v.pid,
        v.uptime_s,
        mib(v.memory),
        v.state_bytes_per_connection
    );
    println!(
        "  {:<5} {:<4} {:>12} {:>12} {:>9} {:>9} {:>9}  {:<18} link",
        "port",
        "up",
        "cells in",
        "cells out",
        "dropped",
        "policed",
        "unknown",
        "queued cbr/rt/nrt/ubr"
    );
    for p in &v.ports {
        let c = &p.counters;
        let q = &p.queue_depth;
        println!(
            "  {:<5} {:<4} {:>12} {:>12} {:>9} {:>9} {:>9}  {:<18} {}",
            p.id,
            if p.up { "yes" } else { "no" },
            c.cells_in,
            c.cells_out,
            c.dropped,
            c.policed,
            c.unknown_vc,
            format!("{}/{}/{}/{}", q.cbr, q.rt_vbr, q.nrt_vbr, q.ubr),
            p.link
        );
        for l in &p.lanes {
            println!(
                "        lane {}: {} cells in, {} out, {} held, {} dropped, {} steps paused",
                l.vcs.join(","),
                l.rx,
                l.tx,
                l.held,
                l.dropped,
                l.paused
            );
        }
    }
    if !v.connections.is_empty() {
        println!(
            "  {:<8} {:<10} {:<10} {:<24} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8}",
            "xc", "a", "b", "qos", "a>b in", "a>b out", "drop", "b>a in", "b>a out", "drop"
        );
        for x in &v.connections {
            let (ab, ba) = (&x.a_to_b, &x.b_to_a);
            println!(
                "  {:<8} {:<10} {:<10} {:<24} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8}",
                x.id,
                x.a,
                x.b,
                x.qos,
                ab.cells_in,
                ab.cells_out,
                ab.dropped,
                ba.cells_in,
                ba.cells_out,
                ba.dropped
            );
        }
    }
}

fn print_host(name: &str, v: &HostStatus) {
    let l = &v.link;
    println!(
        "host {name}: pid {}, {}, link {} {} (tx {} cells, rx {} cells, {} reconnects)",
        v.pid,
        mib(Some(v.vm_rss_bytes)),
        l.description,
        if l.up { "up" } else { "DOWN" },
        l.tx_cells,
        l.rx_cells,
        l.reconnects
    );
    if v.channels.is_empty() {
        println!("  no channels");
        return;
    }
    println!(
        "  {:<6} {:<8} {:<22} {:>8} {:<9} {:<7} {:>10} {:>10} {:>8} {:>8}",
        "handle", "vc", "qos", "pid", "notify", "path", "sdus tx", "sdus rx", "txq", "drops"
    );
    for c in &v.channels {
        let k = &c.counters;
        let drops = k.drops_no_buffer
            + k.drops_crc
            + k.drops_length
            + k.drops_oversize
            + k.drops_timeout
            + k.drops_policed;
        // A lane's adapter runs in the application: hostd has no data counters for it.
        let counts: [String; 4] = if c.path == natm_proto::host::DataPath::Lane {
            ["(in app)".into(), "-".into(), "-".into(), "-".into()]
        } else {
            [
                k.sdus_sent.to_string(),
                k.sdus_received.to_string(),
                c.tx_queued.to_string(),
                drops.to_string(),
            ]
        };
        println!(
            "  {:<6} {:<8} {:<22} {:>8} {:<9} {:<7} {:>10} {:>10} {:>8} {:>8}",
            c.handle,
            c.vc,
            c.qos,
            c.owner_pid,
            json_name(&c.notify),
            json_name(&c.path),
            counts[0],
            counts[1],
            counts[2],
            counts[3]
        );
    }
}

/// A unit enum's name as its JSON has it (`"eventfd"`, `"lane"`).
fn json_name<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        _ => "?".into(),
    }
}

/// Runs `natm stat`.
pub fn run(args: StatArgs) -> CmdResult {
    let interval = Duration::try_from_secs_f64(args.interval)
        .ok()
        .filter(|_| args.interval > 0.0);
    let interval = match interval {
        Some(i) => i,
        None if args.watch => {
            return Err(CliError::usage(format!(
                "--interval {}: must be a positive number of seconds",
                args.interval
            )));
        }
        None => Duration::ZERO,
    };
    let dir = lab::runtime_dir(args.dir.dir.as_deref());
    let state = lab::load_state(&dir)?;
    let daemons: Vec<&Daemon> = state
        .daemons
        .iter()
        .filter(|d| args.node.as_ref().is_none_or(|n| *n == d.name))
        .collect();
    if daemons.is_empty() {
        return Err(CliError::usage(format!(
            "--node {}: the lab has no such switch or host",
            args.node.as_deref().unwrap_or("")
        )));
    }
    let mut printed = 0u64;
    loop {
        let answers: Vec<(&Daemon, Result<DaemonStatus, String>)> =
            daemons.iter().map(|d| (*d, daemon_status(d))).collect();
        if args.json {
            let doc = json!({
                "dir": dir,
                "switches": answers.iter().filter(|(d, _)| d.role == "switch")
                    .map(|(d, r)| node_json(d, r)).collect::<Vec<_>>(),
                "hosts": answers.iter().filter(|(d, _)| d.role == "host")
                    .map(|(d, r)| node_json(d, r)).collect::<Vec<_>>(),
            });
            println!("{}", serde_json::to_string(&doc).unwrap_or_default());
        } else {
            if args.watch {
                print!("\x1b[2J\x1b[H");
            }
            for (d, r) in &answers {
                match r {
                    Ok(DaemonStatus::Switch(v)) => print_switch(&d.name, v),
                    Ok(DaemonStatus::Host(v)) => print_host(&d.name, v),
                    Err(e) => println!("{} {}: no answer: {e}", d.role, d.name),
                }
            }
        }
        printed += 1;
        if !args.watch || args.count.is_some_and(|c| printed >= c) {
            return Ok(());
        }
        std::thread::sleep(interval);
    }
}

fn node_json(d: &Daemon, r: &Result<DaemonStatus, String>) -> Value {
    match r {
        Ok(v) => json!({"name": d.name, "pid": d.pid, "status": v}),
        Err(e) => json!({"name": d.name, "pid": d.pid, "error": e}),
    }
}

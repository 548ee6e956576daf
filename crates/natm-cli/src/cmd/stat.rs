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

/// One daemon's status as JSON, or why it did not answer.
pub fn daemon_status(d: &Daemon) -> Result<Value, String> {
    d.status(TIMEOUT).map_err(|e| e.to_string())
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn mib(v: &Value) -> String {
    match v.as_u64() {
        Some(b) => format!("{:.1} MiB", b as f64 / (1 << 20) as f64),
        None => "?".into(),
    }
}

/// A one-line summary of a daemon's status.
pub fn one_line(role: &str, v: &Value) -> String {
    if role == "switch" {
        let ports = v["ports"].as_array().map(Vec::len).unwrap_or(0);
        let up = v["ports"]
            .as_array()
            .map(|p| p.iter().filter(|p| p["up"] == Value::Bool(true)).count())
            .unwrap_or(0);
        let xcs = v["connections"].as_array().map(Vec::len).unwrap_or(0);
        format!(
            "{up}/{ports} ports up, {xcs} cross-connects, {}",
            mib(&v["memory"])
        )
    } else {
        let up = if v["link"]["up"] == Value::Bool(true) {
            "up"
        } else {
            "DOWN"
        };
        let ch = v["channels"].as_array().map(Vec::len).unwrap_or(0);
        format!(
            "link {up} ({}), {ch} channels, {}",
            v["link"]["description"].as_str().unwrap_or("?"),
            mib(&v["vm_rss_bytes"])
        )
    }
}

fn print_switch(name: &str, v: &Value) {
    println!(
        "switch {name}: pid {}, up {:.0} s, {}, {} B of state per cross-connect",
        n(&v["pid"]),
        v["uptime_s"].as_f64().unwrap_or(0.0),
        mib(&v["memory"]),
        n(&v["state_bytes_per_connection"])
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
    for p in v["ports"].as_array().into_iter().flatten() {
        let c = &p["counters"];
        // By name: the object's keys come back sorted, not in priority order.
        let q: Vec<String> = ["cbr", "rt-vbr", "nrt-vbr", "ubr"]
            .iter()
            .map(|k| n(&p["queue_depth"][*k]).to_string())
            .collect();
        println!(
            "  {:<5} {:<4} {:>12} {:>12} {:>9} {:>9} {:>9}  {:<18} {}",
            n(&p["id"]),
            if p["up"] == Value::Bool(true) {
                "yes"
            } else {
                "no"
            },
            n(&c["cells_in"]),
            n(&c["cells_out"]),
            n(&c["dropped"]),
            n(&c["policed"]),
            n(&c["unknown_vc"]),
            q.join("/"),
            p["link"].as_str().unwrap_or("-")
        );
        for l in p["lanes"].as_array().into_iter().flatten() {
            let vcs: Vec<&str> = l["vcs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            println!(
                "        lane {}: {} cells in, {} out, {} held, {} dropped, {} steps paused",
                vcs.join(","),
                n(&l["rx"]),
                n(&l["tx"]),
                n(&l["held"]),
                n(&l["dropped"]),
                n(&l["paused"])
            );
        }
    }
    let xcs = v["connections"].as_array().cloned().unwrap_or_default();
    if !xcs.is_empty() {
        println!(
            "  {:<8} {:<10} {:<10} {:<24} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8}",
            "xc", "a", "b", "qos", "a>b in", "a>b out", "drop", "b>a in", "b>a out", "drop"
        );
        for x in &xcs {
            let (ab, ba) = (&x["a_to_b"], &x["b_to_a"]);
            println!(
                "  {:<8} {:<10} {:<10} {:<24} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8}",
                x["id"].as_str().unwrap_or("?"),
                x["a"].as_str().unwrap_or("?"),
                x["b"].as_str().unwrap_or("?"),
                x["qos"].as_str().unwrap_or("?"),
                n(&ab["cells_in"]),
                n(&ab["cells_out"]),
                n(&ab["dropped"]),
                n(&ba["cells_in"]),
                n(&ba["cells_out"]),
                n(&ba["dropped"])
            );
        }
    }
}

fn print_host(name: &str, v: &Value) {
    let l = &v["link"];
    println!(
        "host {name}: pid {}, {}, link {} {} (tx {} cells, rx {} cells, {} reconnects)",
        n(&v["pid"]),
        mib(&v["vm_rss_bytes"]),
        l["description"].as_str().unwrap_or("?"),
        if l["up"] == Value::Bool(true) {
            "up"
        } else {
            "DOWN"
        },
        n(&l["tx_cells"]),
        n(&l["rx_cells"]),
        n(&l["reconnects"])
    );
    let chans = v["channels"].as_array().cloned().unwrap_or_default();
    if chans.is_empty() {
        println!("  no channels");
        return;
    }
    println!(
        "  {:<6} {:<8} {:<22} {:>8} {:<9} {:<7} {:>10} {:>10} {:>8} {:>8}",
        "handle", "vc", "qos", "pid", "notify", "path", "sdus tx", "sdus rx", "txq", "drops"
    );
    for c in &chans {
        let k = &c["counters"];
        let drops: u64 = k
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(key, _)| key.starts_with("drops"))
                    .map(|(_, x)| n(x))
                    .sum()
            })
            .unwrap_or(0);
        // A lane's adapter runs in the application: hostd has no data counters for it.
        let counts: [String; 4] = if c["path"].as_str() == Some("lane") {
            ["(in app)".into(), "-".into(), "-".into(), "-".into()]
        } else {
            [
                n(&k["sdus_sent"]).to_string(),
                n(&k["sdus_received"]).to_string(),
                n(&c["tx_queued"]).to_string(),
                drops.to_string(),
            ]
        };
        println!(
            "  {:<6} {:<8} {:<22} {:>8} {:<9} {:<7} {:>10} {:>10} {:>8} {:>8}",
            n(&c["handle"]),
            c["vc"].as_str().unwrap_or("?"),
            c["qos"].as_str().unwrap_or("?"),
            c["owner_pid"].as_i64().unwrap_or(0),
            c["notify"].as_str().unwrap_or("?"),
            c["path"].as_str().unwrap_or("?"),
            counts[0],
            counts[1],
            counts[2],
            counts[3]
        );
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
        let answers: Vec<(&Daemon, Result<Value, String>)> =
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
                    Ok(v) if d.role == "switch" => print_switch(&d.name, v),
                    Ok(v) => print_host(&d.name, v),
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

fn node_json(d: &Daemon, r: &Result<Value, String>) -> Value {
    match r {
        Ok(v) => json!({"name": d.name, "pid": d.pid, "status": v}),
        Err(e) => json!({"name": d.name, "pid": d.pid, "error": e}),
    }
}

//! `natm stat [--watch] [--json]`: what every daemon of the lab is doing — the switch's
//! ports, cross-connects and queues, each host's link and channels with their owning
//! process, counters and memory; and where the daemons signal, the calls: each host's
//! address, signalling state and calls (direction, VC, state, QoS, age, owner), each
//! switch's SSCOP state per port and calls with both legs ([`natm_lab::calls_table`]).
//!
//! A switch answers on its management socket (`{"op":"status"}`, natm-switchd); a host on
//! its channel-manager socket (natm's `Host::status`). `--json` prints one document with
//! each daemon's answer as it gave it; `--watch` reprints every `--interval` until
//! interrupted (or `--count` times). The text and the JSON are natm-lab's
//! ([`natm_lab::stat_table`], [`natm_lab::stat_json`]).

use std::time::Duration;

use clap::Args;
use natm_lab::DaemonStatus;

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
            let doc = natm_lab::stat_json(&dir, &answers);
            println!("{}", serde_json::to_string(&doc).unwrap_or_default());
        } else {
            if args.watch {
                print!("\x1b[2J\x1b[H");
            }
            print!("{}", natm_lab::stat_table(&answers));
            print!("{}", natm_lab::calls_table(&answers));
        }
        printed += 1;
        if !args.watch || args.count.is_some_and(|c| printed >= c) {
            return Ok(());
        }
        std::thread::sleep(interval);
    }
}

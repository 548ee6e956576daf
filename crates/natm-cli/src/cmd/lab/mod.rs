//! `natm lab up|status|down|restart`: an ATM network of switch and host daemons on this
//! machine, started and stopped by natm-lab ([`natm_lab`]); this module holds the options
//! and what is printed.
//!
//! `up` reads a topology ([`topology`]; the default is one switch `s1`, hosts `h1` and `h2`
//! on OC-3c shared-memory links, UBR PVCs 0.100–0.109), writes each daemon's configuration
//! into the runtime directory, starts `natm switchd` for every switch and then `natm hostd`
//! for every host as background processes (their own process groups, output in
//! `NAME.log`), waits until each answers on its socket, and records them in `lab.json`.
//! `status` asks each daemon for its state and lists each host's address and each
//! switch's prefix; `down` stops them (SIGTERM, then SIGKILL after
//! 3 s) and removes what it made in the runtime directory (the directory too, unless it
//! holds files of someone else's). Shared memory is memfd-backed, so it goes with
//! the processes: nothing is left in /dev/shm.
//!
//! The runtime directory is `--dir`, else `$NATM_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/natm`,
//! else `/tmp/natm-UID` — the same rule the `natm` API uses to find a host's socket, so
//! applications reach the lab's hosts by name.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};

pub use natm_lab::{Daemon, LabState, runtime_dir, topology};
use topology::Topology;

use crate::{CliError, CmdResult};

/// `natm lab …`
#[derive(Subcommand)]
pub enum LabCommand {
    /// Start the lab's daemons in the background.
    Up(UpArgs),
    /// Show the lab's daemons and what they carry.
    Status(StatusArgs),
    /// Stop the lab's daemons and remove what the lab made in its runtime directory.
    Down(DirArgs),
    /// Stop one daemon and start it again from the same configuration.
    Restart(RestartArgs),
}

/// Options of `natm lab restart`.
#[derive(Args, Debug)]
pub struct RestartArgs {
    /// The switch or host to restart.
    pub node: String,
    /// Kill it with SIGKILL (a crash) instead of stopping it with SIGTERM.
    #[arg(long)]
    pub kill: bool,
    /// Milliseconds to wait before starting it again.
    #[arg(long, default_value_t = 0)]
    pub pause_ms: u64,
    #[command(flatten)]
    pub dir: DirArgs,
}

/// Where the lab lives.
#[derive(Args, Debug, Clone)]
pub struct DirArgs {
    /// Runtime directory (default: $NATM_RUNTIME_DIR, $XDG_RUNTIME_DIR/natm or /tmp/natm-UID).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// Options of `natm lab up`.
#[derive(Args, Debug)]
pub struct UpArgs {
    /// Topology file (TOML); default: one switch, two hosts, OC-3c shm links, UBR PVCs
    /// 0.100-0.109.
    #[arg(long)]
    pub topology: Option<PathBuf>,
    /// Replace every link's line rate: unlimited, oc3, oc12, 25m, ds3 or cells/s.
    #[arg(long)]
    pub rate: Option<String>,
    /// Print the lab as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub dir: DirArgs,
}

/// Options of `natm lab status`.
#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub dir: DirArgs,
}

/// Runs a `natm lab` subcommand.
pub fn run(command: LabCommand) -> CmdResult {
    match command {
        LabCommand::Up(args) => up(args),
        LabCommand::Status(args) => status(args),
        LabCommand::Restart(args) => restart(args),
        LabCommand::Down(args) => down(&runtime_dir(args.dir.as_deref())).map(|stopped| {
            println!("lab down: stopped {stopped} daemon(s)");
        }),
    }
}

/// A lab's failure, as a command reports it: an unknown node is the user's input (exit 2),
/// the rest exit 1.
pub fn failure(e: natm_lab::Error) -> CliError {
    match e {
        natm_lab::Error::NoSuchNode { .. } => CliError::usage(e.to_string()),
        e => CliError::failure(e.to_string()),
    }
}

impl From<natm_lab::Error> for CliError {
    fn from(e: natm_lab::Error) -> CliError {
        failure(e)
    }
}

/// This executable, which the lab runs as `natm switchd` and `natm hostd`.
pub fn natm_exe() -> Result<PathBuf, CliError> {
    std::env::current_exe()
        .map_err(|e| CliError::failure(format!("cannot find the natm binary: {e}")))
}

/// Reads `lab.json` of a running lab.
pub fn load_state(dir: &Path) -> Result<LabState, CliError> {
    natm_lab::load_state(dir).map_err(failure)
}

/// Stops a lab's daemons and removes its directory; returns how many were running.
pub fn down(dir: &Path) -> Result<usize, CliError> {
    natm_lab::down(dir).map_err(failure)
}

fn up(args: UpArgs) -> CmdResult {
    let dir = runtime_dir(args.dir.dir.as_deref());
    let text = match &args.topology {
        Some(p) => fs::read_to_string(p)
            .map_err(|e| CliError::usage(format!("--topology {}: {e}", p.display())))?,
        None => topology::DEFAULT_TOPOLOGY.to_string(),
    };
    let topo = Topology::parse(&text, args.rate.as_deref()).map_err(|e| {
        CliError::usage(match &args.topology {
            Some(p) => format!("--topology {}: {e}", p.display()),
            None => e.to_string(),
        })
    })?;
    let state =
        natm_lab::start(&dir, &topo, text, args.rate.clone(), &natm_exe()?).map_err(failure)?;
    if args.json {
        let text = serde_json::to_string_pretty(&state.json()).unwrap_or_default();
        println!("{text}");
    } else {
        print!("{}", state.up_table(&dir, &topo));
    }
    Ok(())
}

/// `natm lab restart NODE`: stops one daemon (SIGKILL with `--kill`, as a crash would) and
/// starts it again from the same configuration; the others keep running.
fn restart(args: RestartArgs) -> CmdResult {
    let dir = runtime_dir(args.dir.dir.as_deref());
    let (old_pid, daemon) = natm_lab::restart(
        &dir,
        &args.node,
        args.kill,
        Duration::from_millis(args.pause_ms),
        &natm_exe()?,
    )
    .map_err(failure)?;
    println!(
        "{} restarted: pid {} -> {}",
        daemon.name, old_pid, daemon.pid
    );
    Ok(())
}

fn status(args: StatusArgs) -> CmdResult {
    let dir = runtime_dir(args.dir.dir.as_deref());
    let state = load_state(&dir)?;
    let details: Vec<_> = state
        .daemons
        .iter()
        .map(crate::cmd::stat::daemon_status)
        .collect();
    if args.json {
        let text = serde_json::to_string_pretty(&state.status_json(&details)).unwrap_or_default();
        println!("{text}");
    } else {
        print!("{}", state.status_table(&dir, &details));
    }
    Ok(())
}

//! `natm switchd --config FILE` and `natm hostd --config FILE`: the daemons in the
//! foreground (`natm lab up` starts them in the background). SIGTERM or SIGINT stops
//! either one cleanly: sockets removed, links closed, every channel reclaimed.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::Args;

use crate::{CliError, CmdResult};

/// Options of a daemon.
#[derive(Args, Debug)]
pub struct DaemonArgs {
    /// The daemon's configuration (TOML; `natm lab up` writes one per node).
    #[arg(long)]
    pub config: PathBuf,
}

fn stop_flag() -> Result<Arc<AtomicBool>, CliError> {
    let stop = Arc::new(AtomicBool::new(false));
    natm_switchd::install_signal_stop(&stop)
        .map_err(|e| CliError::failure(format!("cannot install signal handlers: {e}")))?;
    Ok(stop)
}

/// Runs the switch daemon until a signal or a `shutdown` request.
pub fn switchd(args: DaemonArgs) -> CmdResult {
    let config = natm_switchd::SwitchdConfig::from_file(&args.config)
        .map_err(|e| CliError::usage(format!("{}: {e}", args.config.display())))?;
    let stop = stop_flag()?;
    natm_switchd::run(config, stop).map_err(|e| CliError::failure(format!("switchd: {e}")))
}

/// Runs the host daemon until a signal.
pub fn hostd(args: DaemonArgs) -> CmdResult {
    let config = natm_host::hostd::HostdConfig::load(&args.config)
        .map_err(|e| CliError::usage(format!("{}: {e}", args.config.display())))?;
    let stop = stop_flag()?;
    natm_host::hostd::run(config, stop).map_err(|e| CliError::failure(format!("hostd: {e}")))
}

//! `natm perf wakeup` (being written).

use clap::Args;

use crate::{CliError, CmdResult};

/// Arguments of `natm perf wakeup`.
#[derive(Args)]
pub struct WakeupArgs {}

/// Runs the measurement.
pub fn run(_args: WakeupArgs) -> CmdResult {
    Err(CliError::failure("natm perf wakeup is not written yet"))
}

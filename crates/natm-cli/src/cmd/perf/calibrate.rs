//! `natm perf calibrate`: the options of natm-bench's calibration engine
//! ([`calibrate::run`]) and the calibration file written; the report prints its own table
//! ([`calibrate::Report::table`]).

use natm_bench::calibrate::{self, Plan};

use clap::Args;

use crate::{CliError, CmdResult};

/// Arguments of `natm perf calibrate`.
#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Write the calibration file here (else it is printed on stdout and the table on
    /// stderr). `natm send|recv` admit a guaranteed channel against the file at
    /// $NATM_CALIBRATION, else $XDG_CONFIG_HOME/natm/calibration.toml or
    /// ~/.config/natm/calibration.toml.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Seconds for the whole measurement (0.1–600).
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `natm perf calibrate`.
pub fn run(args: CalibrateArgs) -> CmdResult {
    if !(args.seconds >= 0.1 && args.seconds <= 600.0) {
        return Err(CliError::usage(format!(
            "--seconds {}: expected 0.1 to 600",
            args.seconds
        )));
    }
    let natm = std::env::current_exe()
        .map_err(|e| CliError::failure(format!("finding this program to run perf wakeup: {e}")))?;
    let plan = Plan {
        seconds: args.seconds,
        natm,
        command: command_line(),
    };
    let mut report = calibrate::run(&plan).map_err(super::failure)?;
    if let Some(path) = &args.out {
        std::fs::write(path, &report.toml)
            .map_err(|e| CliError::failure(format!("--out {}: {e}", path.display())))?;
        report.out = Some(path.display().to_string());
    }
    let to_file = args.out.is_some();
    super::print_report(args.json, &report, |r| {
        if to_file {
            r.table()
        } else {
            // stdout carries the file, so that `> FILE` captures only it.
            eprint!("{}", r.table());
            r.toml.clone()
        }
    })
}

/// The command as typed, quoted for a POSIX shell where needed.
fn command_line() -> String {
    std::env::args()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                a
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

//! `natm perf calibrate`: the options of natm-bench's calibration engine
//! ([`calibrate::run`]), its table, and the calibration file written.

use natm_bench::calibrate::{self, Plan, Report};

use clap::Args;

use crate::{CliError, CmdResult};

/// Arguments of `natm perf calibrate`.
#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Write the calibration file here (else it is printed on stdout and the table on
    /// stderr).
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
            print!("{}", table(r));
        } else {
            // stdout carries the file, so that `> FILE` captures only it.
            eprint!("{}", table(r));
            print!("{}", r.toml);
        }
    })
}

fn table(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "natm perf calibrate: {} ({:.1} s); CPU time per SDU, median of batches",
        r.measured_on, r.seconds
    );
    let _ = writeln!(
        s,
        "{:>6} {:>6} {:>8} {:>10} {:>10} {:>12} {:>12}",
        "size", "batch", "batches", "send ns", "recv ns", "send resid", "recv resid"
    );
    for row in &r.rows {
        let _ = writeln!(
            s,
            "{:>6} {:>6} {:>8} {:>10.1} {:>10.1} {:>12.1} {:>12.1}",
            row.size,
            row.batch,
            row.batches,
            row.send_ns,
            row.recv_ns,
            row.send_residual_ns,
            row.recv_residual_ns
        );
    }
    let _ = writeln!(
        s,
        "send    = {} ns + {} ps/byte (rms residual {:.1} ns)",
        r.send_fixed_ns, r.send_per_byte_ps, r.send_rms_residual_ns
    );
    let _ = writeln!(
        s,
        "receive = {} ns + {} ps/byte (rms residual {:.1} ns)",
        r.recv_fixed_ns, r.recv_per_byte_ps, r.recv_rms_residual_ns
    );
    let _ = writeln!(
        s,
        "wakeup  = {} ns (eventfd mode, median of {} samples)",
        r.wakeup_ns, r.wakeup_samples
    );
    let _ = writeln!(
        s,
        "(CPU clock read costs {} ns, taken off every batch)",
        r.clock_overhead_ns
    );
    if let Some(out) = &r.out {
        let _ = writeln!(s, "written to {out}");
    }
    s
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

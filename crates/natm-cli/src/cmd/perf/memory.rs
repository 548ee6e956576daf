//! `natm perf memory`: the options of natm-bench's memory engine ([`memory::run`]) and its
//! table.

use clap::Args;
use natm_bench::memory::{self, MAX_XCS, Plan, Report, VCI_PER_VPI};

use crate::{CliError, CmdResult};

/// Arguments of `natm perf memory`.
#[derive(Args, Debug)]
pub struct MemoryArgs {
    /// Cross-connects in the switch.
    #[arg(long, default_value_t = 65_536)]
    xcs: u32,
    /// Channels opened on the host daemon.
    #[arg(long, default_value_t = 1000)]
    channels: u32,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `natm perf memory`.
pub fn run(args: MemoryArgs) -> CmdResult {
    if args.xcs > MAX_XCS {
        return Err(CliError::usage(format!(
            "--xcs {}: at most {MAX_XCS} (256 VPIs of {VCI_PER_VPI} VCIs)",
            args.xcs
        )));
    }
    let max_channels = natm_host::hostd::MAX_CHANNELS as u32;
    if args.channels > max_channels {
        return Err(CliError::usage(format!(
            "--channels {}: hostd holds at most {max_channels}",
            args.channels
        )));
    }
    let natm = std::env::current_exe()
        .map_err(|e| CliError::failure(format!("cannot find this executable: {e}")))?;
    let plan = Plan {
        xcs: args.xcs,
        channels: args.channels,
        natm,
    };
    let report = memory::run(&plan).map_err(super::failure)?;
    super::print_report(args.json, &report, print_table)
}

/// Bytes as MiB, KiB or bytes.
fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
    } else if bytes >= 1 << 10 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

fn print_table(r: &Report) {
    println!("{:<36} {:>12} {:>12} {:>8}", "memory", "goal", "figure", "");
    for l in &r.lines {
        println!(
            "{:<36} {:>12} {:>12} {:>8}",
            l.what,
            l.goal_bytes
                .map_or_else(|| "-".into(), |g| format!("<= {}", size(g))),
            size(l.bytes),
            match l.met {
                Some(true) => "met",
                Some(false) => "not met",
                None => "",
            }
        );
    }
    println!(
        "per cross-connect (RSS difference / {}): {:.0} B; per hostd channel (/ {}): {:.0} B",
        r.xcs, r.switch_rss_per_xc, r.channels, r.hostd_rss_per_channel
    );
    println!(
        "switchd RSS read from /proc before any status request ({} cross-connects made over \
         the management socket in {:.2} s); its status's `memory` is read after the reply \
         listing every connection is built, so it counts that reply",
        r.xcs, r.switch_connect_seconds
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_in_units() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(2048), "2.0 KiB");
        assert_eq!(size(64 << 20), "64.0 MiB");
    }
}

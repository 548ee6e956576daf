//! `natm perf isolation`: the options of natm-bench's policing-isolation engine
//! ([`isolation::run`]) and its table.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use natm_bench::isolation::{self, Plan, Report};

use crate::cmd::lab;
use crate::{CliError, CmdResult};

/// `natm perf isolation`
#[derive(Args, Debug)]
pub struct IsolationArgs {
    /// Seconds of CBR traffic per phase.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// The sink link's line rate: oc3, oc12, 25m, ds3 or cells/s.
    #[arg(long, default_value = "15000")]
    sink_rate: String,
    /// The CBR connection's PCR as a percentage of the sink rate (also the VBR's PCR).
    #[arg(long, default_value_t = 20)]
    cbr_share: u32,
    /// The UBR source's rate as a multiple of its share (its adapter shapes it there);
    /// `max`: as fast as its host sends.
    #[arg(long, default_value = "10")]
    ubr_over: String,
    /// The aggressors' hosts' CPU priority: `idle` (SCHED_IDLE, as if on machines of their
    /// own) or `normal` (sharing this machine's CPUs evenly).
    #[arg(long, value_enum, default_value_t = AggressorCpu::Idle)]
    aggressor_cpu: AggressorCpu,
    /// The lab's runtime directory (default: a fresh one under the temporary directory);
    /// it must not hold a running lab, and is removed at the end.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// How the aggressors' daemons and sending threads are scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum AggressorCpu {
    /// `SCHED_IDLE`.
    Idle,
    /// `SCHED_OTHER`, like everything else.
    Normal,
}

/// Runs `natm perf isolation`.
pub fn run(args: IsolationArgs) -> CmdResult {
    if !(args.seconds.is_finite() && (0.2..=3600.0).contains(&args.seconds)) {
        return Err(CliError::usage(format!(
            "--seconds {}: use 0.2 to 3600",
            args.seconds
        )));
    }
    let plan = Plan::new(
        &args.sink_rate,
        args.cbr_share,
        &args.ubr_over,
        match args.aggressor_cpu {
            AggressorCpu::Idle => isolation::AggressorCpu::Idle,
            AggressorCpu::Normal => isolation::AggressorCpu::Normal,
        },
    )
    .map_err(|e| match e {
        natm_bench::Error::Plan(m) => CliError::usage(m),
        e => super::failure(e),
    })?;
    let dir = args.dir.clone().unwrap_or(plan.dir.clone());
    if dir.join("lab.json").exists() {
        return Err(CliError::usage(format!(
            "--dir {}: a lab was started there; use another directory",
            dir.display()
        )));
    }
    let plan = Plan {
        time: Duration::from_secs_f64(args.seconds),
        dir,
        natm: lab::natm_exe()?,
        ..plan
    };
    let report = isolation::run(&plan).map_err(super::failure)?;
    super::print_report(args.json, &report, print_table)
}

fn us(ns: Option<u64>) -> String {
    ns.map_or("-".into(), |n| format!("{:.1}", n as f64 / 1000.0))
}

fn print_table(r: &Report) {
    let p = &r.plan;
    println!(
        "sink link {} ({} cells/s); CBR {} (sent at {} cells/s), VBR {} (source opens {}), \
         UBR {} (share {} cells/s; source opens {})",
        p.sink_rate,
        p.sink_cells_per_s,
        p.cbr_qos,
        p.cbr_send_rate,
        p.vbr_qos,
        p.vbr_source_qos,
        p.ubr_qos,
        p.ubr_share,
        p.ubr_source_qos,
    );
    println!(
        "{:<34} {:>8} {:>8} {:>6} {:>6} {:>10} {:>10}",
        "phase", "CBR sent", "received", "lost", "ooo", "p50 µs", "p99 µs"
    );
    for ph in &r.phases {
        let d = ph.cbr_delay.as_ref();
        println!(
            "{:<34} {:>8} {:>8} {:>6} {:>6} {:>10} {:>10}",
            ph.name,
            ph.cbr_sent,
            ph.cbr_received,
            ph.cbr_lost,
            ph.cbr_out_of_order,
            us(d.map(|d| d.p50_ns)),
            us(d.map(|d| d.p99_ns)),
        );
    }
    match (r.p99_rise_percent, r.p99_control_percent) {
        (Some(x), Some(c)) => println!(
            "CBR p99 rise with aggressors: {x:+.1}% (goal < 10%; measured, not judged); \
             alone again (control): {c:+.1}%, the machine's noise"
        ),
        _ => println!("CBR p99 rise: not measured (no delays recorded)"),
    }
    println!();
    println!(
        "switch s1, per connection (source to sink):\n{:<34} {:>5} {:>10} {:>10} {:>10} {:>8} {:>12}",
        "phase", "conn", "cells in", "cells out", "policed", "tagged", "queue-drop"
    );
    for ph in &r.phases {
        for (name, c) in [
            ("CBR", ph.switch_cbr),
            ("VBR", ph.switch_vbr),
            ("UBR", ph.switch_ubr),
        ] {
            println!(
                "{:<34} {:>5} {:>10} {:>10} {:>10} {:>8} {:>12}",
                ph.name, name, c.cells_in, c.cells_out, c.policed, c.tagged, c.queue_dropped
            );
        }
    }
    if let Some(ph) = r.phases.get(1) {
        println!();
        println!(
            "aggressors in phase 2: VBR offered {:.0} cells/s ({:.2}x its PCR {}), whole SDUs \
             delivered {:.0} cells/s; UBR offered {:.0} cells/s ({:.1}x its share {}), whole \
             SDUs delivered {:.0} cells/s",
            ph.vbr_offered_cells_per_s,
            r.vbr_offered_over_pcr,
            p.vbr_pcr,
            ph.vbr_delivered_cells_per_s,
            ph.ubr_offered_cells_per_s,
            r.ubr_offered_over_share,
            p.ubr_share,
            ph.ubr_delivered_cells_per_s,
        );
    }
}

//! `natm sim`: the deterministic simulator (natm-sim) from the command line.
//!
//! * `natm sim run [SCENARIO.toml] [--seed N] [--trace FILE] [--json]`: one run. The seed is
//!   printed first (drawn from the clock when not given), so every run can be replayed.
//!   With no file: natm-sim's default scenario, the default lab topology under a mixed
//!   CBR/VBR/UBR load with faults drawn from the seed.
//! * `natm sim swarm [SCENARIO.toml] [--seeds N] [--from S]`: seeds `S..S+N`, one line per
//!   failing seed (with the command that replays it) and a total.
//! * `--signalling` (on `run` and `swarm`, instead of a scenario file): natm-sim's
//!   signalling campaign, two UNI signalling entities over an impaired link on 0.5 (see
//!   `natm_sim::signalling`). A flag, not a scenario kind: scenarios are topology files
//!   for the cell network, and this campaign has no topology to describe, only a seed.
//! * `--calls` (on `run` and `swarm`, instead of a scenario file): natm-sim's calls
//!   scenario (`natm_sim::CALLS_SCENARIO`): three switches, four hosts churning switched
//!   calls through natm-calls' call control and the host core's signalling, faults from
//!   the seed. Any scenario file with `calls = true` in its `[sim]` table does the same
//!   on its own topology.
//! * `--transport` (on `run` and `swarm`, instead of a scenario file): natm-sim's
//!   transport campaign (`natm_sim::transport`): natm-transport's reliable, best-effort
//!   and guaranteed channels between two hosts, their TPDUs as AAL5 frames on PVCs
//!   through a switch, under link faults drawn from the seed.
//! * `natm sim eventbuilder …`: the ATLAS event builder (see `sim_eventbuilder`).
//!
//! Scenario files are `natm lab` topology files with an optional `[sim]` table. This module
//! reads arguments and prints; the simulation is natm-sim's.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use natm_sim::Scenario;

use super::sim_eventbuilder::{self, EventBuilderArgs};
use crate::{CliError, CmdResult};

/// `natm sim …`
#[derive(Subcommand, Debug)]
pub enum SimCommand {
    /// Run one scenario with one seed: load and faults, then a drain with faults off; every
    /// invariant is checked after every event.
    Run(RunArgs),
    /// Run one scenario over many seeds; print the failing ones with their replay command.
    Swarm(SwarmArgs),
    /// The ATLAS event builder: sources, destinations and a supervisor on one switch.
    Eventbuilder(EventBuilderArgs),
}

/// `natm sim run`
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Scenario: a topology file (as `natm lab up` takes) with an optional [sim] table.
    /// Without one: the default lab topology under a mixed load, faults from the seed.
    pub scenario: Option<PathBuf>,
    /// The seed of the whole run (default: drawn from the clock and printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write every event as a line to this file (the same seed writes the same bytes).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Run the signalling campaign (two UNI signalling entities over an impaired link)
    /// instead of a scenario.
    #[arg(long, conflicts_with = "scenario")]
    pub signalling: bool,
    /// Run the calls scenario (switched calls churned by every host under faults) instead
    /// of a scenario file.
    #[arg(long, conflicts_with_all = ["scenario", "signalling"])]
    pub calls: bool,
    /// Run the transport campaign (natm-transport's channels between two hosts over
    /// impaired links) instead of a scenario.
    #[arg(long, conflicts_with_all = ["scenario", "signalling", "calls"])]
    pub transport: bool,
}

/// `natm sim swarm`
#[derive(Args, Debug)]
pub struct SwarmArgs {
    /// Scenario file, as for `natm sim run` (default: the default scenario).
    pub scenario: Option<PathBuf>,
    /// How many seeds.
    #[arg(long, default_value_t = 200)]
    pub seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    pub from: u64,
    /// Worker threads (default: the CPUs available).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Stop starting new seeds after the first failure.
    #[arg(long)]
    pub stop: bool,
    /// Swarm the signalling campaign instead of a scenario.
    #[arg(long, conflicts_with = "scenario")]
    pub signalling: bool,
    /// Swarm the calls scenario instead of a scenario file.
    #[arg(long, conflicts_with_all = ["scenario", "signalling"])]
    pub calls: bool,
    /// Swarm the transport campaign instead of a scenario.
    #[arg(long, conflicts_with_all = ["scenario", "signalling", "calls"])]
    pub transport: bool,
}

/// Runs a `natm sim` subcommand.
pub fn run(command: SimCommand) -> CmdResult {
    match command {
        SimCommand::Run(a) => run_one(a),
        SimCommand::Swarm(a) => swarm(a),
        SimCommand::Eventbuilder(a) => sim_eventbuilder::run(a).map_err(CliError::usage),
    }
}

fn load(path: Option<&PathBuf>, calls: bool) -> Result<Scenario, CliError> {
    let Some(path) = path else {
        return Ok(if calls {
            Scenario::calls_scenario()
        } else {
            Scenario::default_scenario()
        });
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
    Scenario::parse(&text, Some(&path.to_string_lossy()))
        .map_err(|e| CliError::usage(format!("{}: {}", path.display(), e.0)))
}

fn clock_seed() -> u64 {
    // Outside the run: only picks which run to do, and is printed so it can be redone.
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64 % 1_000_000_000)
}

fn run_one(args: RunArgs) -> CmdResult {
    if args.signalling {
        return run_signalling(args);
    }
    if args.transport {
        return run_transport(args);
    }
    let scenario = load(args.scenario.as_ref(), args.calls)?;
    let seed = args.seed.unwrap_or_else(clock_seed);
    if !args.json {
        let name = if args.calls { "(calls)" } else { "(default)" };
        println!(
            "natm sim: seed {seed}, scenario {}",
            args.scenario
                .as_ref()
                .map_or(name.to_string(), |p| p.display().to_string())
        );
    }
    let trace: Option<Box<dyn Write>> = match &args.trace {
        Some(p) => Some(Box::new(BufWriter::new(File::create(p).map_err(|e| {
            CliError::usage(format!("cannot create {}: {e}", p.display()))
        })?))),
        None => None,
    };
    match natm_sim::run(&scenario, seed, trace) {
        Ok(r) => {
            if args.json {
                println!("{}", r.json());
            } else {
                print!("{}", r.table());
            }
            Ok(())
        }
        Err(v) => Err(CliError::failure(format!(
            "seed {seed}: {v}\nreplay: {}",
            scenario.replay(seed)
        ))),
    }
}

fn open_trace(path: Option<&PathBuf>) -> Result<Option<Box<dyn Write>>, CliError> {
    Ok(match path {
        Some(p) => Some(Box::new(BufWriter::new(File::create(p).map_err(|e| {
            CliError::usage(format!("cannot create {}: {e}", p.display()))
        })?))),
        None => None,
    })
}

/// One seed of a campaign that is not a scenario file (signalling, transport): the seed
/// line, the run, its report as a table or JSON, or the violation with its replay command.
fn run_campaign<R, V: std::fmt::Display>(
    args: RunArgs,
    name: &str,
    run: impl FnOnce(u64, Option<Box<dyn Write>>) -> Result<R, V>,
    replay: fn(u64) -> String,
    show: impl FnOnce(&R, bool) -> String,
) -> CmdResult {
    let seed = args.seed.unwrap_or_else(clock_seed);
    if !args.json {
        println!("natm sim: seed {seed}, {name}");
    }
    let trace = open_trace(args.trace.as_ref())?;
    match run(seed, trace) {
        Ok(r) => {
            print!("{}", show(&r, args.json));
            Ok(())
        }
        Err(v) => Err(CliError::failure(format!(
            "seed {seed}: {v}\nreplay: {}",
            replay(seed)
        ))),
    }
}

fn run_signalling(args: RunArgs) -> CmdResult {
    run_campaign(
        args,
        "signalling campaign",
        natm_sim::signalling::run,
        natm_sim::signalling::replay,
        |r, json| {
            if json {
                format!("{}\n", r.json())
            } else {
                r.table()
            }
        },
    )
}

fn run_transport(args: RunArgs) -> CmdResult {
    run_campaign(
        args,
        "transport campaign",
        natm_sim::transport::run,
        natm_sim::transport::replay,
        |r, json| {
            if json {
                format!("{}\n", r.json())
            } else {
                r.table()
            }
        },
    )
}

/// Prints each failed seed's text (replay command included); how many failed.
fn print_failures(out: &mut impl Write, texts: impl Iterator<Item = Option<String>>) -> u64 {
    let mut failed = 0;
    for t in texts {
        failed += 1;
        if let Some(t) = t {
            let _ = writeln!(out, "{t}");
        }
    }
    failed
}

/// A swarm's exit: a failure naming how many seeds failed.
fn swarm_end(failed: u64, ran: u64) -> CmdResult {
    if failed > 0 {
        return Err(CliError::failure(format!("{failed} of {ran} seeds failed")));
    }
    Ok(())
}

fn swarm_transport(args: SwarmArgs) -> CmdResult {
    let report = natm_sim::transport::swarm(args.from, args.seeds, args.threads, args.stop);
    let mut out = std::io::stdout().lock();
    let failed = print_failures(&mut out, report.failures().map(|o| o.failure_text()));
    let ran = report.outcomes.len() as u64;
    let ok: Vec<_> = report
        .outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().ok())
        .collect();
    let sum = |k: usize, f: fn(&natm_sim::transport::ServiceCounts) -> u64| -> u64 {
        ok.iter().map(|r| f(&r.services[k])).sum()
    };
    let bytes: u64 = (0..3).map(|k| sum(k, |s| s.bytes)).sum();
    let events: u64 = ok.iter().map(|r| r.cell_events).sum();
    let windows: u64 = ok.iter().map(|r| r.rate_windows).sum();
    let worst = ok.iter().map(|r| r.worst_rate).fold(0.0, f64::max);
    let _ = writeln!(
        out,
        "swarm: {ran} seeds from {} (transport campaign), {failed} failed, {} passed; {:.1} s wall, {:.1} M cell events; messages delivered: {} reliable, {} best effort ({} reported lost), {} guaranteed ({} reported lost); {:.1} MB; {windows} guaranteed rate windows, worst {:.2} % off",
        args.from,
        ran - failed,
        report.wall.as_secs_f64(),
        events as f64 / 1e6,
        sum(0, |s| s.delivered),
        sum(1, |s| s.delivered),
        sum(1, |s| s.lost),
        sum(2, |s| s.delivered),
        sum(2, |s| s.lost),
        bytes as f64 / 1e6,
        worst * 100.0
    );
    swarm_end(failed, ran)
}

fn swarm_signalling(args: SwarmArgs) -> CmdResult {
    let report = natm_sim::signalling::swarm(args.from, args.seeds, args.threads, args.stop);
    let mut out = std::io::stdout().lock();
    let failed = print_failures(&mut out, report.failures().map(|o| o.failure_text()));
    let ran = report.outcomes.len() as u64;
    let ok = || {
        report
            .outcomes
            .iter()
            .filter_map(|o| o.result.as_ref().ok())
    };
    let calls: u64 = ok().map(|r| r.calls).sum();
    let virt: f64 = ok().map(|r| r.end.as_nanos() as f64 / 1e9).sum();
    let _ = writeln!(
        out,
        "swarm: {ran} seeds from {} (signalling campaign), {failed} failed, {} passed; {:.1} s wall, {calls} calls in {:.0} s of virtual time",
        args.from,
        ran - failed,
        report.wall.as_secs_f64(),
        virt
    );
    swarm_end(failed, ran)
}

fn swarm(args: SwarmArgs) -> CmdResult {
    if args.seeds == 0 {
        return Err(CliError::usage("--seeds must be at least 1"));
    }
    if args.signalling {
        return swarm_signalling(args);
    }
    if args.transport {
        return swarm_transport(args);
    }
    let scenario = load(args.scenario.as_ref(), args.calls)?;
    let report = natm_sim::swarm(&scenario, args.from, args.seeds, args.threads, args.stop);
    let mut out = std::io::stdout().lock();
    let failed = print_failures(
        &mut out,
        report.failures().map(|o| o.failure_text(&scenario)),
    );
    let ran = report.outcomes.len() as u64;
    let events: u64 = report
        .outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().ok())
        .map(|r| r.stats.cell_events)
        .sum();
    let calls = report
        .outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().ok()?.calls)
        .fold((0, 0), |(p, c), k| (p + k.placed, c + k.connected));
    let calls = if scenario.sim.calls {
        format!(", {} calls placed, {} connected", calls.0, calls.1)
    } else {
        String::new()
    };
    let name = if args.calls {
        "calls scenario"
    } else {
        "default scenario"
    };
    let _ = writeln!(
        out,
        "swarm: {ran} seeds from {} ({}), {failed} failed, {} passed; {:.1} s wall, {:.1} M cell events{calls}",
        args.from,
        args.scenario
            .as_ref()
            .map_or(name.to_string(), |p| p.display().to_string()),
        ran - failed,
        report.wall.as_secs_f64(),
        events as f64 / 1e6
    );
    swarm_end(failed, ran)
}

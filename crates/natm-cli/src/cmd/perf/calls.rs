//! `natm perf calls`: the options of natm-bench's call engine ([`calls::run`]); the report
//! prints its own table ([`Report::table`]).
//!
//! The two hosts come from the running lab: `--client-host` and `--server-host` when given,
//! else two hosts of one switch from the lab's topology, or with `--farthest` the pair with
//! the most switches between them ([`calls::host_pair`]).

use std::time::Duration;

use clap::Args;
use natm_bench::calls::{self, MAX_DEPTH, Report};

use super::super::call::{parse_path, parse_qos};
use super::super::lab::{self, DirArgs, topology::Topology};
use crate::{CliError, CmdResult};

const MAX_COUNT: u64 = 10_000_000;

/// Arguments of `natm perf calls`.
#[derive(Args, Debug)]
pub struct CallsArgs {
    /// The calling host (default: chosen from the lab's topology).
    #[arg(long, requires = "server_host")]
    client_host: Option<String>,
    /// The called host (default: chosen from the lab's topology).
    #[arg(long, requires = "client_host")]
    server_host: Option<String>,
    /// Choose the two hosts with the most switches between them (default: two hosts of
    /// one switch).
    #[arg(long, conflicts_with = "client_host")]
    farthest: bool,
    /// The calls' QoS in qos(7) form.
    #[arg(long, default_value = "ubr")]
    qos: String,
    /// The VCs' data path: daemon (the default: no channel memory per call), direct, lane
    /// or auto.
    #[arg(long, default_value = "daemon")]
    path: String,
    /// Calls outstanding at once (a calling thread each, all to one listener), 1 to 64.
    #[arg(long, default_value_t = 8)]
    depth: u32,
    /// Calls recorded.
    #[arg(long, default_value_t = 10_000)]
    count: u64,
    /// Calls before recording starts.
    #[arg(long, default_value_t = 500)]
    warmup: u64,
    /// Leave out the baseline: TCP connect + accept + close on loopback with as many outstanding,
    /// measured in the same run (the kernel's own connection set-up and teardown on this
    /// machine, with no network between: the floor for any connection set-up here; at
    /// most 20,000, since closed connections hold a port in TIME_WAIT).
    #[arg(long)]
    no_baseline: bool,
    /// Seconds hostd waits for the network's answer to a call.
    #[arg(long, default_value_t = 4.0)]
    timeout: f64,
    /// Print JSON (`calls_per_s`, `setup_ns` quantiles, the baseline).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dir: DirArgs,
}

/// The hosts' sockets (or names) and the switches between them, from the lab.
/// The hosts: (client, server) as named, their sockets (or the names), the switches between.
type Hosts = ((String, String), (String, String), Option<usize>);

fn hosts(args: &CallsArgs) -> Result<Hosts, CliError> {
    let dir = lab::runtime_dir(args.dir.dir.as_deref());
    let state = natm_lab::load_state(&dir).ok();
    let topo = state
        .as_ref()
        .and_then(|s| Topology::parse(&s.topology, s.rate.as_deref()).ok());
    let (client, server, switches) = match (&args.client_host, &args.server_host) {
        (Some(c), Some(s)) => {
            let between = topo.as_ref().and_then(|t| calls::switches_between(t, c, s));
            (c.clone(), s.clone(), between)
        }
        _ => {
            let Some(t) = topo else {
                return Err(CliError::usage(format!(
                    "no lab in {}: start one (natm lab up) or name --client-host and --server-host",
                    dir.display()
                )));
            };
            let (c, s, n) = calls::host_pair(&t, args.farthest).ok_or_else(|| {
                CliError::usage("the lab's topology has no two hosts joined by switches")
            })?;
            (c, s, Some(n))
        }
    };
    // A lab host's socket is its record's; anything else is taken as a name or a path.
    let socket = |name: &str| {
        state
            .as_ref()
            .and_then(|s| {
                s.daemons
                    .iter()
                    .find(|d| d.name == name && d.role == "host")
            })
            .map_or_else(|| name.to_string(), |d| d.socket.display().to_string())
    };
    let sockets = (socket(&client), socket(&server));
    Ok(((client, server), sockets, switches))
}

/// Checks the options into a plan (without looking at the lab).
pub fn plan(
    args: &CallsArgs,
    names: (String, String),
    (client, server): (String, String),
    switches: Option<usize>,
) -> Result<calls::Plan, CliError> {
    if !(1..=MAX_DEPTH).contains(&args.depth) {
        return Err(CliError::usage(format!(
            "--depth {}: expected 1 to {MAX_DEPTH}",
            args.depth
        )));
    }
    if !(1..=MAX_COUNT).contains(&args.count) {
        return Err(CliError::usage(format!(
            "--count {}: expected 1 to {MAX_COUNT}",
            args.count
        )));
    }
    if args.warmup > MAX_COUNT {
        return Err(CliError::usage(format!(
            "--warmup {}: expected at most {MAX_COUNT}",
            args.warmup
        )));
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 600.0) {
        return Err(CliError::usage(format!(
            "--timeout {}: must be above 0 and at most 600 seconds",
            args.timeout
        )));
    }
    Ok(calls::Plan {
        client,
        server,
        names,
        switches,
        qos: parse_qos(&args.qos, "--qos")?,
        path: parse_path(&args.path)?,
        depth: args.depth,
        count: args.count,
        warmup: args.warmup,
        baseline: !args.no_baseline,
        timeout: Duration::from_secs_f64(args.timeout),
    })
}

/// Runs `natm perf calls`.
pub fn run(args: CallsArgs) -> CmdResult {
    // The options first: a bad one is named before the lab is looked at.
    plan(&args, Default::default(), Default::default(), None)?;
    let (names, sockets, switches) = hosts(&args)?;
    let plan = plan(&args, names, sockets, switches)?;
    let report = calls::run(&plan).map_err(super::failure)?;
    super::print_report(args.json, &report, Report::table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: CallsArgs,
    }

    fn parse(args: &[&str]) -> Result<CallsArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("calls").chain(args.iter().copied())).map(|c| c.args)
    }

    fn names() -> (String, String) {
        ("h1".into(), "h2".into())
    }

    #[test]
    fn options_are_checked_into_the_plan() {
        let a = parse(&[]).unwrap();
        let p = plan(&a, names(), names(), Some(1)).unwrap();
        assert_eq!(
            (p.depth, p.count, p.warmup, p.baseline),
            (8, 10_000, 500, true)
        );
        assert_eq!(p.path, natm::DataPath::Daemon);
        let a = parse(&["--depth", "65"]).unwrap();
        assert_eq!(plan(&a, names(), names(), None).unwrap_err().code, 2);
        let a = parse(&["--qos", "fast"]).unwrap();
        assert_eq!(plan(&a, names(), names(), None).unwrap_err().code, 2);
        let a = parse(&["--no-baseline", "--path", "direct", "--count", "5"]).unwrap();
        let p = plan(&a, names(), names(), None).unwrap();
        assert_eq!(
            (p.baseline, p.count, p.path),
            (false, 5, natm::DataPath::Direct)
        );
        assert!(
            parse(&["--client-host", "h1"]).is_err(),
            "both hosts or neither"
        );
        assert!(parse(&["--farthest", "--client-host", "h1", "--server-host", "h3"]).is_err());
        assert!(parse(&["--farthest", "--json"]).is_ok());
    }
}

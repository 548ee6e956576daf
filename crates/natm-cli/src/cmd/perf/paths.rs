//! `natm perf paths`: the options of natm-bench's data-path engine ([`paths::run`]) and
//! its PNG plots; the report prints its own table ([`Report::table`]).

use std::path::{Path, PathBuf};

use clap::Args;
use natm_bench::paths::{self, Figures, Plan, Report, Row};
use natm_bench::plot::{self, Series};
use natm_bench::stream::DEFAULT_SWEEP;
use natm_bench::transport::{self, DataPath, Kind};

use crate::cmd::lab;
use crate::{CliError, CmdResult};

const MAX_COUNT: u64 = 100_000_000;

/// Arguments of `natm perf paths`.
#[derive(Args, Debug)]
pub struct PathsArgs {
    /// Message sizes in bytes, comma separated.
    #[arg(long, default_value = DEFAULT_SWEEP)]
    sizes: String,
    /// Round trips recorded per size and transport.
    #[arg(long, default_value_t = 10_000)]
    count: u64,
    /// Round trips per size and transport before recording starts.
    #[arg(long, default_value_t = 500)]
    warmup: u64,
    /// Seconds of streaming per size and transport.
    #[arg(long, default_value_t = 0.5)]
    seconds: f64,
    /// The lab's runtime directory (default: as `natm lab`).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// The client's host in the lab.
    #[arg(long, default_value = "h1")]
    client_host: String,
    /// The server's host in the lab.
    #[arg(long, default_value = "h2")]
    server_host: String,
    /// The VC, `[itf.]vpi.vci`.
    #[arg(long, default_value = "0.100")]
    vc: String,
    /// How the natm ends wait: poll, adaptive, eventfd or signal.
    #[arg(long, default_value = "adaptive")]
    mode: String,
    /// The paths to measure, in this order, comma separated: lane, direct, daemon (the
    /// lane path needs shared-memory links without impairments).
    #[arg(long, default_value = "lane,direct,daemon")]
    paths: String,
    /// Write a PNG plot of throughput against size per path measured, with UDP and TCP:
    /// the direct path's to FILE, the others' beside it in FILE with `-daemon` or `-lane`
    /// before the extension.
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// `--paths`: known names, each once, at least one.
fn parse_paths(text: &str) -> Result<Vec<DataPath>, CliError> {
    let mut out: Vec<DataPath> = Vec::new();
    for part in text.split(',').map(str::trim) {
        let Some(&path) = DataPath::ALL.iter().find(|p| p.name() == part) else {
            return Err(CliError::usage(format!(
                "--paths {text}: `{part}` is not a path; use lane, direct or daemon"
            )));
        };
        if out.contains(&path) {
            return Err(CliError::usage(format!(
                "--paths {text}: `{part}` is named twice"
            )));
        }
        out.push(path);
    }
    Ok(out)
}

fn parse_sizes(text: &str) -> Result<Vec<usize>, CliError> {
    let mut sizes = Vec::new();
    for part in text.split(',') {
        let n: usize = part
            .trim()
            .parse()
            .map_err(|_| CliError::usage(format!("--sizes {part:?}: not a whole number")))?;
        if n == 0 || n > transport::STREAM_MAX {
            return Err(CliError::usage(format!(
                "--sizes {n}: expected 1 to {} bytes",
                transport::STREAM_MAX
            )));
        }
        sizes.push(n);
    }
    Ok(sizes)
}

/// Where `--plot FILE` puts natm path `natm`'s plot: the direct path's at FILE, the
/// others' at FILE with `-daemon` or `-lane` before its extension.
fn plot_path(path: &Path, natm: DataPath) -> PathBuf {
    if natm == DataPath::Direct {
        return path.to_path_buf();
    }
    let natm = natm.name();
    let stem = path
        .file_stem()
        .map_or_else(|| "paths".into(), |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(e) => format!("{stem}-{natm}.{}", e.to_string_lossy()),
        None => format!("{stem}-{natm}"),
    };
    path.with_file_name(name)
}

/// Runs `natm perf paths`.
pub fn run(args: PathsArgs) -> CmdResult {
    let sizes = parse_sizes(&args.sizes)?;
    let paths = parse_paths(&args.paths)?;
    if !(1..=MAX_COUNT).contains(&args.count) {
        return Err(CliError::usage(format!(
            "--count {}: expected 1 to {MAX_COUNT}",
            args.count
        )));
    }
    if !(args.seconds > 0.0 && args.seconds <= 3600.0) {
        return Err(CliError::usage(format!(
            "--seconds {}: expected more than 0 and at most 3600",
            args.seconds
        )));
    }
    let plan = Plan {
        sizes,
        count: args.count,
        warmup: args.warmup,
        seconds: args.seconds,
        dir: lab::runtime_dir(args.dir.as_deref()),
        client_host: args.client_host.clone(),
        server_host: args.server_host.clone(),
        vc: args.vc.clone(),
        mode: args.mode.clone(),
        paths: paths.clone(),
        natm: std::env::current_exe()
            .map_err(|e| CliError::failure(format!("cannot find this executable: {e}")))?,
    };
    let mut report = paths::run(&plan).map_err(super::failure)?;
    let rows = &report.rows;
    let mut plots = Vec::new();
    if let Some(file) = &args.plot {
        let series = |pick: &dyn Fn(&Row) -> &Figures, kind: Kind| Series {
            kind,
            points: rows
                .iter()
                .filter_map(|r| pick(r).mbytes_per_sec.map(|v| (r.measured_size, v * 8.0)))
                .collect(),
        };
        let kernel = [
            series(&|r| &r.udp, Kind::Udp),
            series(&|r| &r.tcp, Kind::Tcp),
        ];
        for natm_path in &paths {
            let path = plot_path(file, *natm_path);
            let natm = series(&|r| r.path(*natm_path), Kind::Natm);
            let mut all = vec![natm];
            all.extend(kernel.iter().map(|s| Series {
                kind: s.kind,
                points: s.points.clone(),
            }));
            plot::goodput(&path, &all)
                .map_err(|e| CliError::failure(format!("--plot {}: {e}", path.display())))?;
            plots.push(path.display().to_string());
        }
    }
    report.plots = plots;
    super::print_report(args.json, &report, Report::table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_refuse_nonsense() {
        assert_eq!(parse_sizes("40, 64,65536").unwrap(), vec![40, 64, 65536]);
        assert!(parse_sizes("0").is_err());
        assert!(parse_sizes("4k").is_err());
        assert!(parse_sizes("").is_err());
    }

    #[test]
    fn the_other_paths_plots_sit_beside_the_direct_one() {
        let file = Path::new("/tmp/p.png");
        assert_eq!(plot_path(file, DataPath::Direct), file);
        assert_eq!(
            plot_path(file, DataPath::Daemon),
            PathBuf::from("/tmp/p-daemon.png")
        );
        assert_eq!(
            plot_path(file, DataPath::Lane),
            PathBuf::from("/tmp/p-lane.png")
        );
        assert_eq!(
            plot_path(Path::new("out"), DataPath::Daemon),
            PathBuf::from("out-daemon")
        );
    }

    #[test]
    fn paths_parse_in_order_and_refuse_nonsense() {
        assert_eq!(parse_paths("lane,direct,daemon").unwrap(), DataPath::ALL);
        assert_eq!(
            parse_paths("daemon, direct").unwrap(),
            [DataPath::Daemon, DataPath::Direct]
        );
        for (bad, why) in [
            ("kernel", "`kernel` is not a path"),
            ("", "`` is not a path"),
            ("lane,lane", "`lane` is named twice"),
        ] {
            let e = parse_paths(bad).unwrap_err();
            assert_eq!(e.code, 2, "{bad}");
            assert!(e.message.contains(why), "{bad}: {}", e.message);
        }
    }
}

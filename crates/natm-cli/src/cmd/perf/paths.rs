//! `natm perf paths`: the per-message cost of natm's data paths over a sweep of message
//! sizes, after Figures 3 and 4 of the ATLAS DAQ paper (round-trip time and throughput
//! against message size, a kernel driver's path against a user-space one).
//!
//! * the **daemon path**: every SDU is a message on hostd's socket, copied into hostd's
//!   buffers, one system call per message each way (like a kernel driver's
//!   `sendmsg`/`recvmsg`);
//! * the **direct path**: the application's shared-memory channel to its adapter, which
//!   hostd drives;
//! * the **lane path**: the application is its own adapter, on its own rings into the
//!   switch's port (the paper's user-level driver; it needs links at unlimited rate).
//!
//! For each size the command measures, through a running lab (client on `--client-host`,
//! server on `--server-host`, VC `--vc`): the round-trip time's median (`natm perf rr`,
//! one request in flight) and one-way throughput (`natm perf stream`), on each path of
//! `--paths`, and the kernel's UDP and TCP over loopback at the same size in the same run
//! (they ride along in the first path's runs). Sizes above an AAL5 SDU (65,535 bytes) are
//! measured at 65,535 bytes on every transport, so that each row compares like with like;
//! UDP carries at most 65,507 bytes and is left out above that.
//!
//! The measuring is `natm perf rr` and `natm perf stream` themselves: this command runs
//! this executable with `--json` for each (the engine's rounds, warm-up and loss handling
//! unchanged) and gathers their reports into one table and plot. The lab is found as
//! `natm perf rr` finds it: the hosts' sockets in the runtime directory (`--dir`, else the
//! `natm lab` default).

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use serde::Serialize;
use serde_json::Value;

use super::plot::{self, Series};
use crate::cmd::lab;
use crate::{CliError, CmdResult};
use natm_bench::stream::DEFAULT_SWEEP;
use natm_bench::transport::{self, AAL5_MAX, DataPath, Kind};

const MAX_COUNT: u64 = 100_000_000;
/// Attempts at a run refused because its VC is still in use.
const IN_USE_TRIES: u32 = 5;
/// The pause after a stream that lost natm messages: longer than AAL5's reassembly
/// timeout (natm-aal's default, 1 s), so that a partial SDU it left is gone.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(1100);

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
    /// lane path needs the lab's links at unlimited rate).
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

/// One transport's figures at one size.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Figures {
    /// Median round trip, microseconds.
    pub rtt_p50_us: Option<f64>,
    /// Transactions per second at one request in flight.
    pub transactions_per_sec: Option<f64>,
    /// One-way goodput, MB/s (10⁶ bytes).
    pub mbytes_per_sec: Option<f64>,
}

/// One size's row.
#[derive(Debug, Serialize)]
pub struct Row {
    /// The size asked for.
    pub size: usize,
    /// The size measured (at most an AAL5 SDU).
    pub measured_size: usize,
    /// natm, lane path.
    pub lane: Figures,
    /// natm, direct path.
    pub direct: Figures,
    /// natm, daemon path.
    pub daemon: Figures,
    /// Kernel UDP over loopback.
    pub udp: Figures,
    /// Kernel TCP over loopback.
    pub tcp: Figures,
}

/// What `natm perf paths` reports.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The client's host socket.
    pub client: String,
    /// The server's host socket.
    pub server: String,
    /// Round trips per size and transport.
    pub count: u64,
    /// Streaming seconds per size and transport.
    pub seconds: f64,
    /// One per size.
    pub rows: Vec<Row>,
    /// The plots written.
    pub plots: Vec<String>,
}

impl Row {
    /// The figures of natm path `path`.
    fn path_mut(&mut self, path: DataPath) -> &mut Figures {
        match path {
            DataPath::Lane => &mut self.lane,
            DataPath::Direct => &mut self.direct,
            DataPath::Daemon => &mut self.daemon,
        }
    }

    fn path(&self, path: DataPath) -> &Figures {
        match path {
            DataPath::Lane => &self.lane,
            DataPath::Direct => &self.direct,
            DataPath::Daemon => &self.daemon,
        }
    }
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

/// A failed run of `path`; a lane run's says what a lane needs and how to leave it out.
fn hint(path: DataPath, mut e: CliError) -> CliError {
    if path == DataPath::Lane {
        e.message.push_str(
            " (lanes need a lab at `--rate unlimited`; `--paths direct,daemon` leaves them out)",
        );
    }
    e
}

/// A host's socket in the lab's runtime directory (the lab's naming rule).
fn host_socket(dir: &Path, host: &str) -> Result<PathBuf, CliError> {
    let p = lab::topology::path_in(dir, host, ".sock");
    if !p.exists() {
        return Err(CliError::failure(format!(
            "no host {host:?} in {}: start a lab first (natm lab up --dir {0})",
            dir.display()
        )));
    }
    Ok(p)
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

/// The size measured for a size asked for: at most an AAL5 SDU, on every transport.
fn measured_size(asked: usize) -> usize {
    asked.min(AAL5_MAX)
}

/// Runs this executable's `natm perf …` with `args` and `--json`; its parsed report. A
/// refusal because the VC is still held (hostd reclaims a closed channel within about
/// 100 ms) is tried again, up to [`IN_USE_TRIES`] times.
fn perf_json(args: &[String]) -> Result<Value, CliError> {
    let mut tries = 1;
    loop {
        match perf_json_once(args) {
            Err(e) if tries < IN_USE_TRIES && e.message.contains("in use") => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            r => return r,
        }
    }
}

fn perf_json_once(args: &[String]) -> Result<Value, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::failure(format!("cannot find this executable: {e}")))?;
    let out = Command::new(exe)
        .arg("perf")
        .args(args)
        .arg("--json")
        .output()
        .map_err(|e| CliError::failure(format!("cannot run natm perf: {e}")))?;
    if !out.status.success() {
        return Err(CliError::failure(format!(
            "natm perf {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        CliError::failure(format!(
            "natm perf {}: not a JSON report: {e}",
            args.join(" ")
        ))
    })
}

/// The options both engines take for the natm side.
struct NatmSide {
    client: String,
    server: String,
    vc: String,
    mode: String,
}

impl NatmSide {
    /// The natm options for `path`; with `baselines` its runs carry the kernel's.
    fn args(&self, path: DataPath, baselines: bool) -> Vec<String> {
        let mut a: Vec<String> = [
            "--kind",
            "natm",
            "--path",
            path.name(),
            "--client-host",
            &self.client,
            "--server-host",
            &self.server,
            "--vc",
            &self.vc,
            "--mode",
            &self.mode,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if baselines {
            a.extend(["--baseline".to_string(), "udp,tcp".to_string()]);
        } else {
            a.push("--no-baseline".into());
        }
        a
    }
}

/// The figures of `kind` in an rr report.
fn rr_figures(report: &Value, kind: &str) -> Option<(f64, f64)> {
    let r = report["results"]
        .as_array()?
        .iter()
        .find(|r| r["kind"] == kind)?;
    let p50 = r["latency"]["p50_ns"].as_f64()? / 1e3;
    Some((p50, r["transactions_per_sec"].as_f64()?))
}

/// The MB/s of `kind` at `size` in a stream report.
fn stream_figure(report: &Value, kind: &str, size: usize) -> Option<f64> {
    let at = report["kinds"].as_array()?.iter().position(|k| k == kind)?;
    let s = report["sizes"]
        .as_array()?
        .iter()
        .find(|s| s["size"].as_u64() == Some(size as u64))?;
    Some(s["results"].get(at)?["bits_per_sec"].as_f64()? / 8e6)
}

/// Whether natm lost messages in a stream report (a partial SDU may then wait on the VC
/// for the reassembly timeout).
fn lost_natm(report: &Value) -> bool {
    let Some(sizes) = report["sizes"].as_array() else {
        return true;
    };
    sizes.iter().any(|s| {
        let m = &s["results"][0];
        m["sent_messages"] != m["received_messages"]
    })
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
    let dir = lab::runtime_dir(args.dir.as_deref());
    let side = NatmSide {
        client: host_socket(&dir, &args.client_host)?
            .to_string_lossy()
            .into_owned(),
        server: host_socket(&dir, &args.server_host)?
            .to_string_lossy()
            .into_owned(),
        vc: args.vc.clone(),
        mode: args.mode.clone(),
    };
    let measured: Vec<usize> = sizes.iter().map(|&s| measured_size(s)).collect();

    // Round trips first, streams last: a stream that loses cells of a long SDU leaves a
    // partial reassembly on the VC until its timeout, which a round trip right after it
    // would wait out.
    let mut rrs = Vec::new();
    for &m in &measured {
        let mut per_path = Vec::new();
        for (k, &path) in paths.iter().enumerate() {
            let mut a: Vec<String> = vec![
                "rr".into(),
                "--size".into(),
                m.to_string(),
                "--count".into(),
                args.count.to_string(),
                "--warmup".into(),
                args.warmup.to_string(),
            ];
            a.extend(side.args(path, k == 0));
            per_path.push(perf_json(&a).map_err(|e| hint(path, e))?);
        }
        rrs.push(per_path);
    }
    // One stream run per size and path, each its own process: the stream engine opens
    // the next size's VC before hostd has let go of the last one on the daemon path.
    let mut streams: Vec<Vec<Value>> = Vec::new();
    for (k, &path) in paths.iter().enumerate() {
        let mut per_size = Vec::new();
        for &m in &measured {
            let previous = per_size.last().or(streams.last().and_then(|p| p.last()));
            if previous.is_some_and(lost_natm) {
                std::thread::sleep(SETTLE);
            }
            let mut a: Vec<String> = vec![
                "stream".into(),
                "--size".into(),
                m.to_string(),
                "--seconds".into(),
                args.seconds.to_string(),
            ];
            a.extend(side.args(path, k == 0));
            per_size.push(perf_json(&a).map_err(|e| hint(path, e))?);
        }
        streams.push(per_size);
    }
    let mut rows = Vec::new();
    for (i, ((&size, &m), per_path)) in sizes.iter().zip(&measured).zip(&rrs).enumerate() {
        let mut row = Row {
            size,
            measured_size: m,
            lane: Figures::default(),
            direct: Figures::default(),
            daemon: Figures::default(),
            udp: Figures::default(),
            tcp: Figures::default(),
        };
        for (k, ((path, stream), rr)) in paths.iter().zip(&streams).zip(per_path).enumerate() {
            let stream = &stream[i];
            let fill = |kind: &str, f: &mut Figures| {
                if let Some((p50, tps)) = rr_figures(rr, kind) {
                    f.rtt_p50_us = Some(p50);
                    f.transactions_per_sec = Some(tps);
                }
                f.mbytes_per_sec = stream_figure(stream, kind, m);
            };
            fill("natm", row.path_mut(*path));
            if k == 0 {
                fill("udp", &mut row.udp);
                fill("tcp", &mut row.tcp);
            }
        }
        rows.push(row);
    }
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
    let report = Report {
        client: side.client,
        server: side.server,
        count: args.count,
        seconds: args.seconds,
        rows,
        plots,
    };
    super::print_report(args.json, &report, print_table)
}

fn cell(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.decimals$}"))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "-".into(),
    }
}

fn print_table(r: &Report) {
    println!(
        "natm's data paths, client {} -> server {}; rr: {} round trips per size (p50), \
         stream: {} s per size; - where a path was not measured",
        r.client, r.server, r.count, r.seconds
    );
    println!(
        "{:>7} | {:>38} {:>7} | {:>43} {:>7}",
        "", "round trip p50 (us)", "daemon/", "throughput (MB/s)", "direct/"
    );
    println!(
        "{:>7} | {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} | {:>8} {:>8} {:>8} {:>8} {:>8} {:>7}",
        "bytes",
        "lane",
        "direct",
        "daemon",
        "udp",
        "tcp",
        "direct",
        "lane",
        "direct",
        "daemon",
        "udp",
        "tcp",
        "daemon"
    );
    let mut clamped = false;
    for row in &r.rows {
        let size = if row.measured_size == row.size {
            row.size.to_string()
        } else {
            clamped = true;
            format!("{}*", row.size)
        };
        println!(
            "{size:>7} | {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} | {:>8} {:>8} {:>8} {:>8} {:>8} {:>7}",
            cell(row.lane.rtt_p50_us, 1),
            cell(row.direct.rtt_p50_us, 1),
            cell(row.daemon.rtt_p50_us, 1),
            cell(row.udp.rtt_p50_us, 1),
            cell(row.tcp.rtt_p50_us, 1),
            ratio(row.daemon.rtt_p50_us, row.direct.rtt_p50_us),
            cell(row.lane.mbytes_per_sec, 1),
            cell(row.direct.mbytes_per_sec, 1),
            cell(row.daemon.mbytes_per_sec, 1),
            cell(row.udp.mbytes_per_sec, 1),
            cell(row.tcp.mbytes_per_sec, 1),
            ratio(row.direct.mbytes_per_sec, row.daemon.mbytes_per_sec),
        );
    }
    if clamped {
        println!(
            "* measured at {AAL5_MAX} bytes (an AAL5 SDU's most) on every transport; \
             UDP carries at most {} bytes",
            transport::UDP_MAX
        );
    }
    for p in &r.plots {
        println!("plot: {p} ({})", plot::LEGEND);
    }
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
        assert_eq!(measured_size(65_536), 65_535);
        assert_eq!(measured_size(40), 40);
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

    #[test]
    fn figures_are_read_from_the_engines_reports() {
        let rr = serde_json::json!({"results": [
            {"kind": "natm", "latency": {"p50_ns": 12500}, "transactions_per_sec": 70000.0},
            {"kind": "udp", "latency": {"p50_ns": 20000}, "transactions_per_sec": 45000.0}
        ]});
        assert_eq!(rr_figures(&rr, "natm"), Some((12.5, 70000.0)));
        assert_eq!(rr_figures(&rr, "tcp"), None);
        let stream = serde_json::json!({"kinds": ["natm", "udp"], "sizes": [
            {"size": 40, "results": [{"bits_per_sec": 8e6}, null]}
        ]});
        assert_eq!(stream_figure(&stream, "natm", 40), Some(1.0));
        assert_eq!(stream_figure(&stream, "udp", 40), None);
        assert_eq!(stream_figure(&stream, "natm", 64), None);
    }

    #[test]
    fn a_stream_that_lost_natm_messages_is_noticed() {
        let whole = serde_json::json!({"sizes": [
            {"results": [{"sent_messages": 5, "received_messages": 5}, null]}
        ]});
        assert!(!lost_natm(&whole));
        let lossy = serde_json::json!({"sizes": [
            {"results": [{"sent_messages": 5, "received_messages": 5}]},
            {"results": [{"sent_messages": 9, "received_messages": 7}]}
        ]});
        assert!(lost_natm(&lossy));
        assert!(lost_natm(&serde_json::json!({})));
    }
}

//! The engine of `natm perf paths`: the per-message cost of natm's data paths over a sweep of message
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
//! The measuring is `natm perf rr` and `natm perf stream` themselves: this engine runs
//! the plan's `natm` executable with `--json` for each (the engine's rounds, warm-up and loss handling
//! unchanged) and gathers their reports into one table and plot. The lab is found as
//! `natm perf rr` finds it: the hosts' sockets in the runtime directory (`--dir`, else the
//! `natm lab` default).

mod render;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;
use serde_json::Value;

use crate::Error;
use crate::transport::{AAL5_MAX, DataPath};

/// Attempts at a run refused because its VC is still in use.
const IN_USE_TRIES: u32 = 5;
/// The pause after a stream that lost natm messages: longer than AAL5's reassembly
/// timeout (natm-aal's default, 1 s), so that a partial SDU it left is gone.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(1100);

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

/// A `natm perf paths` run: what [`run`] does.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Message sizes asked for (each measured at [`measured_size`]).
    pub sizes: Vec<usize>,
    /// Round trips recorded per size and transport.
    pub count: u64,
    /// Round trips per size and transport before recording starts.
    pub warmup: u64,
    /// Seconds of streaming per size and transport.
    pub seconds: f64,
    /// The lab's runtime directory.
    pub dir: PathBuf,
    /// The client's host in the lab.
    pub client_host: String,
    /// The server's host in the lab.
    pub server_host: String,
    /// The VC, `[itf.]vpi.vci` text.
    pub vc: String,
    /// How the natm ends wait (`natm perf rr --mode` text).
    pub mode: String,
    /// The paths to measure, in this order.
    pub paths: Vec<DataPath>,
    /// The `natm` executable whose `perf rr` and `perf stream` measure.
    pub natm: PathBuf,
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
    /// The plots written (the caller's; the engine leaves it empty).
    pub plots: Vec<String>,
}

impl Row {
    /// The figures of natm path `path` (`Auto` is the lane: the runs are on shared-memory
    /// labs, where hostd takes it).
    fn path_mut(&mut self, path: DataPath) -> &mut Figures {
        match path {
            DataPath::Lane | DataPath::Auto => &mut self.lane,
            DataPath::Direct => &mut self.direct,
            DataPath::Daemon => &mut self.daemon,
        }
    }

    /// The figures of natm path `path` (`Auto`: the lane, as above).
    pub fn path(&self, path: DataPath) -> &Figures {
        match path {
            DataPath::Lane | DataPath::Auto => &self.lane,
            DataPath::Direct => &self.direct,
            DataPath::Daemon => &self.daemon,
        }
    }
}

/// A host's socket in the lab's runtime directory (the lab's naming rule).
fn host_socket(dir: &Path, host: &str) -> Result<PathBuf, Error> {
    let p = natm_lab::topology::path_in(dir, host, ".sock");
    if !p.exists() {
        return Err(Error::NoHost {
            host: host.to_string(),
            dir: dir.to_path_buf(),
        });
    }
    Ok(p)
}

/// A failed run of `path`; a lane run's says what a lane needs and how to leave it out.
fn hint(path: DataPath, e: Error) -> Error {
    if path == DataPath::Lane {
        Error::Lane(Box::new(e))
    } else {
        e
    }
}

/// The size measured for a size asked for: at most an AAL5 SDU, on every transport.
pub fn measured_size(asked: usize) -> usize {
    asked.min(AAL5_MAX)
}

/// Runs this executable's `natm perf …` with `args` and `--json`; its parsed report. A
/// refusal because the VC is still held (hostd reclaims a closed channel within about
/// 100 ms) is tried again, up to [`IN_USE_TRIES`] times.
fn perf_json(natm: &Path, args: &[String]) -> Result<Value, Error> {
    let mut tries = 1;
    loop {
        match perf_json_once(natm, args) {
            Err(e) if tries < IN_USE_TRIES && e.to_string().contains("in use") => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            r => return r,
        }
    }
}

fn perf_json_once(natm: &Path, args: &[String]) -> Result<Value, Error> {
    let out = Command::new(natm)
        .arg("perf")
        .args(args)
        .arg("--json")
        .output()
        .map_err(|e| Error::io("cannot run natm perf", e))?;
    if !out.status.success() {
        return Err(Error::Perf {
            args: args.join(" "),
            why: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    serde_json::from_slice(&out.stdout).map_err(|e| Error::Perf {
        args: args.join(" "),
        why: format!("not a JSON report: {e}"),
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

/// Runs `natm perf rr` and `natm perf stream` of `plan.natm` over the plan's sizes and
/// paths and gathers their reports into rows (prints nothing, plots nothing).
pub fn run(plan: &Plan) -> Result<Report, Error> {
    let side = NatmSide {
        client: host_socket(&plan.dir, &plan.client_host)?
            .to_string_lossy()
            .into_owned(),
        server: host_socket(&plan.dir, &plan.server_host)?
            .to_string_lossy()
            .into_owned(),
        vc: plan.vc.clone(),
        mode: plan.mode.clone(),
    };
    let measured: Vec<usize> = plan.sizes.iter().map(|&s| measured_size(s)).collect();

    // Round trips first, streams last: a stream that loses cells of a long SDU leaves a
    // partial reassembly on the VC until its timeout, which a round trip right after it
    // would wait out.
    let mut rrs = Vec::new();
    for &m in &measured {
        let mut per_path = Vec::new();
        for (k, &path) in plan.paths.iter().enumerate() {
            let mut a: Vec<String> = vec![
                "rr".into(),
                "--size".into(),
                m.to_string(),
                "--count".into(),
                plan.count.to_string(),
                "--warmup".into(),
                plan.warmup.to_string(),
            ];
            a.extend(side.args(path, k == 0));
            per_path.push(perf_json(&plan.natm, &a).map_err(|e| hint(path, e))?);
        }
        rrs.push(per_path);
    }
    // One stream run per size and path, each its own process: the stream engine opens
    // the next size's VC before hostd has let go of the last one on the daemon path.
    let mut streams: Vec<Vec<Value>> = Vec::new();
    for (k, &path) in plan.paths.iter().enumerate() {
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
                plan.seconds.to_string(),
            ];
            a.extend(side.args(path, k == 0));
            per_size.push(perf_json(&plan.natm, &a).map_err(|e| hint(path, e))?);
        }
        streams.push(per_size);
    }
    let mut rows = Vec::new();
    for (i, ((&size, &m), per_path)) in plan.sizes.iter().zip(&measured).zip(&rrs).enumerate() {
        let mut row = Row {
            size,
            measured_size: m,
            lane: Figures::default(),
            direct: Figures::default(),
            daemon: Figures::default(),
            udp: Figures::default(),
            tcp: Figures::default(),
        };
        for (k, ((path, stream), rr)) in plan.paths.iter().zip(&streams).zip(per_path).enumerate() {
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
    Ok(Report {
        client: side.client,
        server: side.server,
        count: plan.count,
        seconds: plan.seconds,
        rows,
        plots: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_above_an_sdu_are_measured_at_one() {
        assert_eq!(measured_size(65_536), 65_535);
        assert_eq!(measured_size(40), 40);
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

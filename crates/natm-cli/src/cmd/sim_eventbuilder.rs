//! `natm sim eventbuilder`: the ATLAS event builder on the simulator (issue 6, point 4).
//!
//! Reads the options into a [`natm_sim::eventbuilder::EbConfig`], runs it with
//! [`natm_sim::eventbuilder::run`] and prints the report as a table or, with `--json`, as
//! JSON; `--plot-dir DIR` also writes `DIR/latency.png` (event-building latency histogram)
//! and `DIR/queues.png` (switch output-queue occupancy over time). Host costs come from a
//! calibration file (`--calibration FILE`), natm-sim's builtin calibration by default, or
//! none (`--calibration free`).
//!
//! This module parses and prints; the model, every figure and the table
//! ([`EbReport::table`]) are natm-sim's. natm-bench's
//! plot module draws the plots from the report's figures.

use std::path::{Path, PathBuf};

use clap::Args;
use natm_bench::plot::{self, Line};
use natm_core::LineRate;
use natm_core::{Aal, Qos};
use natm_sim::calib::Calibration;
use natm_sim::eventbuilder::{self as eb, Arrivals, EbConfig, EbReport, Policy};
use natm_sim::units::{parse_duration, parse_hz};

/// `natm sim eventbuilder --sources S --destinations D --rate HZ --fragment BYTES …`
#[derive(Args, Debug, Clone)]
pub struct EventBuilderArgs {
    /// Sources (readout buffers), each on its own link to the switch.
    #[arg(long)]
    pub sources: usize,
    /// Destinations (event-building nodes), each on its own link to the switch.
    #[arg(long)]
    pub destinations: usize,
    /// Events per second the supervisor assigns: a number, optionally with k or M (100k).
    #[arg(long)]
    pub rate: String,
    /// Bytes of each source's fragment of an event (8..=65535).
    #[arg(long)]
    pub fragment: usize,
    /// QoS of the data VCs, linux-atm qos(7) text (AAL5 implied).
    #[arg(long, default_value = "ubr")]
    pub qos: String,
    /// Line rate of every link: oc3, oc12, 25m, ds3, unlimited or cells/s.
    #[arg(long, default_value = "oc3")]
    pub link: String,
    /// Simulated time of assignments (then twice the timeout to drain): 1s, 20ms, …
    #[arg(long, default_value = "1s")]
    pub duration: String,
    /// Seed of the whole run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// An event not built this long after its assignment is lost.
    #[arg(long, default_value = "100ms")]
    pub timeout: String,
    /// Interval between samples of queues and links.
    #[arg(long, default_value = "1ms")]
    pub sample: String,
    /// Poisson assignments (seeded from --seed) instead of periodic ones.
    #[arg(long)]
    pub poisson: bool,
    /// Assign each event to the destination with the fewest unfinished events instead of
    /// event mod destinations.
    #[arg(long)]
    pub least_loaded: bool,
    /// Host costs: a calibration file from `natm perf calibrate`, `builtin` (natm-sim's
    /// own) or `free` (hosts cost nothing).
    #[arg(long, default_value = "builtin")]
    pub calibration: String,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write latency.png and queues.png into this directory (made if missing).
    #[arg(long)]
    pub plot_dir: Option<PathBuf>,
}

/// Runs the event builder the options describe and prints (and draws) its report.
pub fn run(args: EventBuilderArgs) -> Result<(), String> {
    let (config, costs_from) = config(&args)?;
    let mut report = eb::run(&config).map_err(|e| e.to_string())?;
    report.peak_rss_bytes = natm_nic::procfs::peak_resident_bytes(None).ok();
    let plots = match &args.plot_dir {
        Some(dir) => write_plots(dir, &report)?,
        None => Vec::new(),
    };
    if args.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| format!("JSON: {e}"))?;
        println!("{text}");
    } else {
        print!("{}", report.table(&costs_from, &plots));
    }
    Ok(())
}

/// The run's configuration from the options, and where the host costs came from.
pub fn config(args: &EventBuilderArgs) -> Result<(EbConfig, String), String> {
    let rate_hz = parse_hz(&args.rate).map_err(|e| format!("--rate: {e}"))?;
    let mut c = EbConfig::new(args.sources, args.destinations, rate_hz, args.fragment);
    let mut qos: Qos = args
        .qos
        .parse()
        .map_err(|e| format!("--qos {:?}: {e}", args.qos))?;
    if qos.aal == Aal::None {
        qos.aal = Aal::Aal5;
    }
    c.qos = qos;
    c.link = args
        .link
        .parse::<LineRate>()
        .map_err(|e| format!("--link {:?}: {e}", args.link))?;
    c.duration = parse_duration(&args.duration).map_err(|e| format!("--duration: {e}"))?;
    c.timeout = parse_duration(&args.timeout).map_err(|e| format!("--timeout: {e}"))?;
    c.sample_interval = parse_duration(&args.sample).map_err(|e| format!("--sample: {e}"))?;
    c.seed = args.seed;
    if args.poisson {
        c.arrivals = Arrivals::Poisson { seed: args.seed };
    }
    if args.least_loaded {
        c.policy = Policy::LeastLoaded;
    }
    let from = match args.calibration.as_str() {
        "free" => "none (hosts cost nothing)".to_string(),
        "builtin" => {
            c.costs = Calibration::builtin().costs;
            "natm-sim's builtin calibration".to_string()
        }
        file => {
            let cal = Calibration::load(file).map_err(|e| format!("--calibration {file}: {e}"))?;
            c.costs = cal.costs;
            format!("calibration {file}")
        }
    };
    c.validate().map_err(|e| e.to_string())?;
    Ok((c, from))
}

/// Writes `latency.png` and `queues.png` into `dir` ([`natm_bench::plot`]); returns their
/// paths.
pub fn write_plots(dir: &Path, r: &EbReport) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("--plot-dir {}: {e}", dir.display()))?;
    let lat = dir.join("latency.png");
    let hist: Vec<(f64, f64, f64)> = match &r.latency {
        Some(l) => l
            .histogram
            .iter()
            .map(|b| (b.from_us, b.to_us, b.events as f64))
            .collect(),
        None => Vec::new(),
    };
    plot::bars(&lat, &hist, "latency us", "events")
        .map_err(|e| format!("{}: {e}", lat.display()))?;
    let queues = dir.join("queues.png");
    let max: Vec<(f64, f64)> = r
        .queues
        .samples
        .iter()
        .map(|s| (s.t_s * 1e3, f64::from(s.max_cells)))
        .collect();
    let mean: Vec<(f64, f64)> = r
        .queues
        .samples
        .iter()
        .map(|s| (s.t_s * 1e3, s.mean_cells))
        .collect();
    let series = [
        Line {
            name: "max port",
            rgb: [255, 0, 0],
            points: &max,
        },
        Line {
            name: "mean",
            rgb: [0, 0, 255],
            points: &mean,
        },
    ];
    plot::lines(&queues, &series, "time ms", "cells")
        .map_err(|e| format!("{}: {e}", queues.display()))?;
    Ok(vec![lat, queues])
}

#[cfg(test)]
mod tests {
    use super::*;
    use natm_core::Duration;

    fn args(s: usize, d: usize, rate: &str, frag: usize) -> EventBuilderArgs {
        EventBuilderArgs {
            sources: s,
            destinations: d,
            rate: rate.into(),
            fragment: frag,
            qos: "ubr".into(),
            link: "oc3".into(),
            duration: "20ms".into(),
            seed: 1,
            timeout: "100ms".into(),
            sample: "1ms".into(),
            poisson: false,
            least_loaded: false,
            calibration: "free".into(),
            json: false,
            plot_dir: None,
        }
    }

    #[test]
    fn options_make_the_config_and_bad_ones_name_the_option() {
        let mut a = args(4, 3, "1k", 200);
        a.poisson = true;
        a.least_loaded = true;
        a.qos = "cbr:pcr=1000".into();
        let (c, _) = config(&a).unwrap();
        assert_eq!((c.sources, c.destinations, c.fragment), (4, 3, 200));
        assert_eq!(c.rate_hz, 1000.0);
        assert_eq!(c.arrivals, Arrivals::Poisson { seed: 1 });
        assert_eq!(c.policy, Policy::LeastLoaded);
        assert_eq!(c.qos.aal, Aal::Aal5);
        assert_eq!(c.duration, Duration::from_millis(20));
        let err = |a: EventBuilderArgs| config(&a).unwrap_err();
        assert!(err(args(0, 3, "1k", 200)).contains("sources"));
        assert!(err(args(4, 3, "0", 200)).contains("--rate"));
        assert!(err(args(4, 3, "1k", 0)).contains("fragment"));
        assert!(err(args(4, 3, "1k", 70_000)).contains("fragment"));
        let mut a = args(4, 3, "1k", 200);
        a.qos = "cbr:pcr=foo".into();
        assert!(err(a).contains("--qos"));
        let mut a = args(4, 3, "1k", 200);
        a.link = "oc7".into();
        assert!(err(a).contains("--link"));
        let mut a = args(4, 3, "1k", 200);
        a.calibration = "/nonexistent/cal.toml".into();
        assert!(err(a).contains("--calibration"));
    }
}

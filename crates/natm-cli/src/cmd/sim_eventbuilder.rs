//! `natm sim eventbuilder`: the ATLAS event builder on the simulator (issue 6, point 4).
//!
//! Reads the options into a [`natm_sim::eventbuilder::EbConfig`], runs it with
//! [`natm_sim::eventbuilder::run`] and prints the report as a table or, with `--json`, as
//! JSON; `--plot-dir DIR` also writes `DIR/latency.png` (event-building latency histogram)
//! and `DIR/queues.png` (switch output-queue occupancy over time). Host costs come from a
//! calibration file (`--calibration FILE`), natm-sim's builtin calibration by default, or
//! none (`--calibration free`).
//!
//! This module parses, prints and draws; the model and every figure are natm-sim's. natm-bench's
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
        print!("{}", table(&report, &costs_from, &plots));
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

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

/// The report as the table `natm sim eventbuilder` prints.
pub fn table(r: &EbReport, costs_from: &str, plots: &[PathBuf]) -> String {
    use std::fmt::Write as _;
    let c = &r.config;
    let e = &r.events;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "event builder: {} sources × {} destinations, {} Hz {} {}, {}-byte fragments, qos {}, links {}, seed {}",
        c.sources,
        c.destinations,
        c.rate_hz,
        c.arrivals,
        c.policy,
        c.fragment,
        c.qos,
        c.link,
        c.seed
    );
    let k = &c.costs_ns;
    let _ = writeln!(
        t,
        "hosts:    {costs_from}: send {} ns + {} ns/B, receive {} ns + {} ns/B, wake-up {} ns",
        k.send_fixed, k.send_per_byte, k.recv_fixed, k.recv_per_byte, k.wakeup
    );
    let _ = writeln!(
        t,
        "events:   {} assigned, {} built, {} lost ({} timed out, {} unanswered), {} pending",
        e.assigned, e.built, e.lost, e.timed_out, e.unanswered, e.pending
    );
    let _ = writeln!(
        t,
        "rate:     {:.1} Hz built of {} Hz asked; per destination {}–{} events",
        e.achieved_rate_hz,
        c.rate_hz,
        e.built_per_destination_min_max.0,
        e.built_per_destination_min_max.1
    );
    if e.late_fragments + e.malformed + e.send_failures > 0 {
        let _ = writeln!(
            t,
            "          {} late fragments, {} unreadable SDUs, {} failed sends",
            e.late_fragments, e.malformed, e.send_failures
        );
    }
    match &r.latency {
        Some(l) => {
            let _ = writeln!(
                t,
                "latency:  min {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}  mean {:.1} µs",
                l.min_us, l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.max_us, l.mean_us
            );
        }
        None => {
            let _ = writeln!(t, "latency:  no event built");
        }
    }
    match &r.links {
        Some(l) => {
            let _ = writeln!(
                t,
                "links:    occupancy mean {}, max {}; busiest {}: mean {}, max {}",
                pct(l.mean),
                pct(l.max),
                l.worst_link,
                pct(l.worst_link_mean),
                pct(l.worst_link_max)
            );
        }
        None => {
            let _ = writeln!(t, "links:    unlimited rate: no occupancy");
        }
    }
    let q = &r.queues;
    if q.worst_port_max_cells == 0 {
        let _ = writeln!(
            t,
            "queues:   switch output queues empty at all {} samples",
            q.samples.len()
        );
    } else {
        let _ = writeln!(
            t,
            "queues:   fullest port {}: {} cells; mean {:.2} cells per port over {} samples",
            q.worst_port,
            q.worst_port_max_cells,
            q.mean_cells,
            q.samples.len()
        );
    }
    if r.drops.is_empty() {
        let _ = writeln!(t, "drops:    none");
    } else {
        let _ = writeln!(t, "drops:    {} cells in all", r.cells_dropped);
        for d in r.drops.iter().take(10) {
            let _ = writeln!(
                t,
                "          {:>10} {:<6} {}: {}",
                d.count, d.unit, d.place, d.reason
            );
        }
        if r.drops.len() > 10 {
            let _ = writeln!(
                t,
                "          … {} more places (--json lists all)",
                r.drops.len() - 10
            );
        }
    }
    let rss = r.peak_rss_bytes.map_or("unknown".to_string(), |b| {
        format!("{:.0} MiB", b as f64 / 1048576.0)
    });
    let _ = writeln!(
        t,
        "run:      {:.3} simulated s in {:.2} s wall; {} cell events ({:.2} M/s); peak RSS {rss}",
        r.sim_seconds,
        r.wall_seconds,
        r.cell_events,
        r.cell_events_per_s / 1e6
    );
    for p in plots {
        let _ = writeln!(t, "plot:     {}", p.display());
    }
    t
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

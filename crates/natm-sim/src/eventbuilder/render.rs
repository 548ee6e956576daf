//! The table of `natm sim eventbuilder`: [`EbReport::table`].

use std::fmt::Write as _;
use std::path::PathBuf;

use super::EbReport;

impl EbReport {
    /// The report as the table `natm sim eventbuilder` prints (one line per row, each
    /// ending in a newline): `costs_from` says where the host costs came from, `plots` are
    /// the plot files written.
    pub fn table(&self, costs_from: &str, plots: &[PathBuf]) -> String {
        let r = self;
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
}

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

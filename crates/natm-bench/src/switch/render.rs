//! The table of `natm perf switch`: [`Report::table`].

use std::fmt::Write as _;

use super::Report;
use crate::stats::Spread;

impl Report {
    /// The report as the table `natm perf switch` prints (one line per row, each ending in a
    /// newline).
    pub fn table(&self) -> String {
        let r = self;

        let mut t = String::new();
        let _ = writeln!(
            t,
            "switch forwarding on one core: {} run(s); rounds of {} cells, {} cells per run, \
             batch {}; switch on cpu {}, CPUs {:?}",
            r.runs,
            r.round,
            r.cells,
            r.batch,
            r.switch_cpu
                .map_or_else(|| "(unpinned)".into(), |c| c.to_string()),
            r.cpus
        );
        let _ = writeln!(
            t,
            "{:<42} {:>9} {:>15} {:>9}",
            "M cells/s", "median", "min - max", "goal"
        );
        let mut row = |name: &str, s: &Spread, goal: &str| {
            let _ = writeln!(
                t,
                "{name:<42} {:>9} {:>15} {goal:>9}",
                m(s.median),
                format!("{} - {}", m(s.min), m(s.max))
            );
        };
        row("shm ring relay, no switch (median round)", &r.relay, "");
        row(
            "switchd forwarding (median round)",
            &r.forwarding,
            met(r.forwarding_meets_goal),
        );
        row(
            "switchd forwarding, continuous",
            &r.continuous,
            met(r.continuous_meets_goal),
        );
        row("  per busy switch core", &r.continuous_busy, "");
        row(
            &format!("switchd loop alone ({} bursts/run)", r.rounds - 1),
            &r.capacity,
            met(r.capacity_meets_goal),
        );
        let _ = writeln!(
            t,
            "forwarding / relay (median rounds): {:.2}x ({:.2} - {:.2}); goal {} M cells/s \
             (OC-192); continuous runs' switch thread waited {:.0}% ({:.0} - {:.0}%) of the time \
             for its CPU",
            r.ratio.median,
            r.ratio.min,
            r.ratio.max,
            m(r.goal_cells_per_sec),
            r.continuous_waited.median * 100.0,
            r.continuous_waited.min * 100.0,
            r.continuous_waited.max * 100.0
        );
        let _ = writeln!(t);
        let _ = writeln!(
            t,
            "{:>3} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "run", "relay", "fwd", "fwd/rel", "contin.", "waited", "hosts", "dropped", "alone"
        );
        for (i, run) in r.per_run.iter().enumerate() {
            let _ = writeln!(
                t,
                "{:>3} {:>8} {:>8} {:>8.2} {:>8} {:>8} {:>8} {:>8} {:>8}",
                i + 1,
                m(run.relay.round_p50),
                m(run.forwarding.round_p50),
                run.ratio,
                m(run.continuous.cells_per_sec),
                pct(run.continuous.middle_waited),
                pct(run.continuous.hosts_waited),
                run.continuous.dropped,
                m(run.capacity),
            );
        }
        let _ = writeln!(
            t,
            "relay, fwd: median round; waited: share of the continuous run's wall time the switch \
             thread (hosts: the host threads) was runnable but another task had its CPU"
        );
        t
    }
}

fn m(cells_per_sec: f64) -> String {
    format!("{:.1}", cells_per_sec / 1e6)
}

fn pct(share: Option<f64>) -> String {
    share.map_or_else(|| "-".into(), |s| format!("{:.0}%", s * 100.0))
}

fn met(yes: bool) -> &'static str {
    if yes { "met" } else { "not met" }
}

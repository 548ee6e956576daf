//! The table of `natm perf wakeup`: [`Report::table`].

use std::fmt::Write as _;

use super::Report;

impl Report {
    /// The report as the table `natm perf wakeup` prints (one line per row, each ending in a
    /// newline).
    pub fn table(&self) -> String {
        let r = self;

        let mut t = String::new();
        let _ = writeln!(
            t,
            "natm perf wakeup: {} samples per mode and condition, gaps {}–{} µs (seed {}), rounds of {} \
             samples interleaving the modes",
            r.samples_per_mode, r.gap_us[0], r.gap_us[1], r.seed, r.round
        );
        let cpu = |c: Option<usize>| c.map_or("unpinned".into(), |c| format!("cpu {c}"));
        let _ = writeln!(
            t,
            "consumer {}, producer {}; SCHED_FIFO at priority {}; load average before: {}",
            cpu(r.placement.consumer_cpu),
            cpu(r.placement.producer_cpu),
            r.fifo_priority,
            r.load_before
        );
        let _ = writeln!(
            t,
            "latency = consumer's CLOCK_MONOTONIC after it holds the cell (raw: after read/ppoll \
             returns) − producer's just before the publish (raw: before write/rt_tgsigqueueinfo)"
        );
        for c in &r.conditions {
            let sched = match c.sched {
                "fifo" => "SCHED_FIFO",
                _ => "SCHED_OTHER",
            };
            let _ = writeln!(
                t,
                "\n### {} disturber{}, {sched} ({:.1} s)\n",
                c.disturbers,
                if c.disturbers == 1 { "" } else { "s" },
                c.seconds
            );
            for n in &c.notes {
                let _ = writeln!(t, "note: {n}");
            }
            if let Some(e) = &c.error {
                let _ = writeln!(t, "{e}\n");
            }
            if c.modes.is_empty() {
                continue;
            }
            let _ = writeln!(
                t,
                "| mode | samples | median µs | p90 µs | p99 µs | max µs | × raw (median) | kicks |"
            );
            let _ = writeln!(t, "|---|---|---|---|---|---|---|---|");
            for m in &c.modes {
                let samples = if m.samples == m.requested && m.missed_wakeups == 0 {
                    m.samples.to_string()
                } else {
                    format!(
                        "{} of {} ({} missed)",
                        m.samples, m.requested, m.missed_wakeups
                    )
                };
                let ratio = match (m.ratio, m.baseline) {
                    (Some(x), Some(b)) => format!("{x:.2}× {b}"),
                    (None, Some(b)) => format!("– ({b} missing)"),
                    _ => "–".into(),
                };
                let kicks = m.kicks.map_or("–".into(), |k| k.to_string());
                let _ = writeln!(
                    t,
                    "| {} | {samples} | {} | {} | {} | {} | {ratio} | {kicks} |",
                    m.mode,
                    fmt_us(m.median_us),
                    fmt_us(m.p90_us),
                    fmt_us(m.p99_us),
                    fmt_us(m.max_us)
                );
            }
        }
        t
    }
}

fn fmt_us(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if v < 10.0 => format!("{v:.2}"),
        Some(v) if v < 1000.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.0}"),
    }
}

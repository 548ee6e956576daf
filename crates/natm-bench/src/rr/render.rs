//! The table of `natm perf rr`: [`Report::table`].

use std::fmt::Write as _;

use super::Report;

impl Report {
    /// The report as the table `natm perf rr` prints (one line per row, each ending in a
    /// newline).
    pub fn table(&self) -> String {
        let r = self;

        let mut t = String::new();
        let how = match (r.count, r.seconds) {
            (Some(c), _) => format!("{c} transactions"),
            (None, Some(s)) => format!("{s} s"),
            _ => String::new(),
        };
        let cpu = crate::transport::Placement::cpu_text;
        let _ = writeln!(
            t,
            "natm perf rr: {}-byte requests, {}-byte responses, depth {}, {how} per transport \
             after {} warm-up; client CPU {}, server CPU {}",
            r.size,
            r.response_size,
            r.depth,
            r.warmup,
            cpu(r.placement.client),
            cpu(r.placement.server)
        );
        let _ = writeln!(t, "round-trip times in µs; rate in transactions/s");
        let _ = writeln!(
            t,
            "{:<6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>12} {:>6}",
            "", "p50", "p90", "p99", "p99.9", "max", "rate", "lost"
        );
        let us = |ns: u64| format!("{:.2}", ns as f64 / 1000.0);
        for k in &r.results {
            let _ = match &k.latency {
                Some(l) => writeln!(
                    t,
                    "{:<6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>12.0} {:>6}",
                    k.kind.name(),
                    us(l.p50_ns),
                    us(l.p90_ns),
                    us(l.p99_ns),
                    us(l.p999_ns),
                    us(l.max_ns),
                    k.transactions_per_sec,
                    k.lost
                ),
                None => writeln!(t, "{:<6} no transaction completed", k.kind.name()),
            };
        }
        if let Some(main) = r.results.first() {
            for x in &r.ratios {
                let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}×"));
                let _ = writeln!(
                    t,
                    "{} ÷ {}: p50 {}, p99 {}, rate {:.2}×",
                    main.kind,
                    x.baseline,
                    f(x.p50),
                    f(x.p99),
                    x.rate
                );
            }
        }
        for s in &r.skipped {
            let _ = writeln!(t, "not measured: {s}");
        }
        t
    }
}

//! The table of `natm perf paths`: [`Report::table`].

use std::fmt::Write as _;

use super::Report;
use crate::plot;
use crate::transport::{self, AAL5_MAX};

impl Report {
    /// The report as the table `natm perf paths` prints (one line per row, each ending in a
    /// newline).
    pub fn table(&self) -> String {
        let r = self;

        let mut t = String::new();
        let _ = writeln!(
            t,
            "natm's data paths, client {} -> server {}; rr: {} round trips per size (p50), \
             stream: {} s per size; - where a path was not measured",
            r.client, r.server, r.count, r.seconds
        );
        let _ = writeln!(
            t,
            "{:>7} | {:>38} {:>7} | {:>43} {:>7}",
            "", "round trip p50 (us)", "daemon/", "throughput (MB/s)", "direct/"
        );
        let _ = writeln!(
            t,
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
            let _ = writeln!(
                t,
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
            let _ = writeln!(
                t,
                "* measured at {AAL5_MAX} bytes (an AAL5 SDU's most) on every transport; \
                 UDP carries at most {} bytes",
                transport::UDP_MAX
            );
        }
        for p in &r.plots {
            let _ = writeln!(t, "plot: {p} ({})", plot::LEGEND);
        }
        t
    }
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

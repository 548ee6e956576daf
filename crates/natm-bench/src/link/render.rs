//! The table of `natm perf link`: [`Report::table`].

use std::fmt::Write as _;

use super::Report;
use crate::stats::Spread;

impl Report {
    /// The report as the table `natm perf link` prints (one line per row, each ending in a
    /// newline); `runs` is the plan's runs per size.
    pub fn table(&self, runs: u32) -> String {
        let r = self;

        let mut t = String::new();
        let _ = writeln!(
            t,
            "natm perf link: kind {:?}, rate {}, impairments {}, {} run(s) of {:.1} s per size",
            r.kind,
            r.rate,
            r.impair.as_deref().unwrap_or("none"),
            runs,
            r.seconds
        );
        for w in &r.warnings {
            let _ = writeln!(t, "warning: {w}");
        }
        let _ = writeln!(
            t,
            "goodput in Mbit/s: median (min–max); ratio = natm ÷ kernel TCP loopback, per pair"
        );
        let _ = writeln!(
            t,
            "{:>7} {:>6} {:>26} {:>26} {:>20} {:>9}",
            "size", "cells", "natm", "kernel TCP", "ratio", "ceiling"
        );
        let mbit = |s: &Option<Spread>| match s {
            Some(s) => format!(
                "{:.1} ({:.1}–{:.1})",
                s.median / 1e6,
                s.min / 1e6,
                s.max / 1e6
            ),
            None => "-".into(),
        };
        for s in &r.results {
            let ratio = match &s.ratio {
                Some(x) => format!("{:.2}× ({:.2}–{:.2})", x.median, x.min, x.max),
                None => "-".into(),
            };
            let ceiling = match s.of_ceiling {
                Some(f) => format!("{:.2}%", f * 100.0),
                None => "-".into(),
            };
            let _ = writeln!(
                t,
                "{:>7} {:>6} {:>26} {:>26} {:>20} {:>9}",
                s.size,
                s.cells_per_sdu,
                mbit(&s.natm_bits_per_sec),
                mbit(&s.tcp_bits_per_sec),
                ratio,
                ceiling
            );
            let lost: u64 = s.runs.iter().map(|r| r.lost_sdus).sum();
            let bad: u64 = s.runs.iter().map(|r| r.misdelivered).sum();
            let crc: u64 = s.runs.iter().map(|r| r.drops_crc).sum();
            let hec: u64 = s.runs.iter().map(|r| r.drops_hec).sum();
            let nobuf: u64 = s.runs.iter().map(|r| r.drops_no_buffer).sum();
            let other: u64 = s.runs.iter().map(|r| r.drops_other).sum();
            let link: u64 = s.runs.iter().map(|r| r.link_lost).sum();
            if lost + bad + crc + hec + nobuf + other + link > 0 {
                let _ = writeln!(
                    t,
                    "        lost {lost} SDUs, misdelivered {bad}; receiver dropped: crc {crc}, \
                     hec {hec}, no buffer {nobuf}, other {other}; link lost {link} batches"
                );
            }
        }
        t
    }
}

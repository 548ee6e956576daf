//! The tables of `natm perf transport`: [`Report::table`] and [`rr::Report::table`].

use std::fmt::Write as _;

use super::{Budget, HalfPoint, Report, rr};
use crate::stats::Spread;

impl Report {
    /// The report as the table `natm perf transport` prints (one line per row, each ending
    /// in a newline).
    pub fn table(&self) -> String {
        let r = self;
        let mut t = String::new();
        let cpu = crate::transport::Placement::cpu_text;
        let budget = match r.budget {
            Budget::Count(n) => format!("{n} messages"),
            Budget::Seconds(s) => format!("{s:.1} s"),
        };
        let _ = writeln!(
            t,
            "natm perf transport: {} channel on VC {} (QoS {}, {} path), {budget} per run, \
             {} run(s) per size; sender CPU {}, receiver CPU {}",
            r.service,
            r.vc,
            r.qos,
            r.path,
            r.runs,
            cpu(r.placement.client),
            cpu(r.placement.server)
        );
        if let Some(i) = &r.impair {
            let _ = writeln!(
                t,
                "impaired: both hosts' links impair the cells they send as {i:?} \
                 (the data crosses the sender's, the acks the receiver's), cleared after \
                 the run; the lane path bypasses the impairment, so the run used the {} path",
                r.path
            );
        }
        let tcp = r.sizes.iter().any(|s| s.tcp.is_some());
        let ceiling = if r.line_rate == "unlimited" {
            "no AAL5 ceiling: the link's line rate is unlimited (from the lab)".to_string()
        } else {
            format!(
                "ceiling = AAL5 at {} (from {}) with {}-byte TPDUs",
                r.line_rate, r.line_rate_from, r.tpdu_size
            )
        };
        let rate = r.sizes.iter().any(|s| s.rate.is_some());
        let _ = writeln!(
            t,
            "goodput of whole messages, median (min-max) of the runs; {ceiling}; seed fit = \
             54·n/(2200+n) Mbit/s (issue 25's quote of the seed); resends and lost summed \
             over the runs; tpdu = the TPDU size limit the sender had reached at the end \
             (least-greatest of the runs; a smaller message is one TPDU){}",
            if tcp {
                "; ratio = natm ÷ kernel TCP on loopback, same size, same run"
            } else {
                ""
            }
        );
        if let Some(vc) = &r.bulk_vc {
            let _ = writeln!(
                t,
                "a reliable bulk flow of {}-byte messages on VC {vc} shares the link during \
                 every run (bulk Mbit/s: its goodput over the measured run)",
                super::BULK_SIZE
            );
        }
        let mut head = format!(
            "{:>8} {:>8} {:>15} {:>9} {:>7} {:>8} {:>8} {:>6} {:>11}",
            "size", "Mbit/s", "min-max", "ceiling", "% ceil", "seed fit", "resends", "lost", "tpdu"
        );
        if rate {
            head.push_str(&format!(
                " {:>9} {:>9} {:>17}",
                "asked c/s", "got c/s", "deviation %"
            ));
        }
        if r.bulk_vc.is_some() {
            head.push_str(&format!(" {:>9}", "bulk Mbit"));
        }
        if tcp {
            head.push_str(&format!(" {:>10} {:>8}", "tcp Mbit/s", "ratio"));
        }
        let _ = writeln!(t, "{head}");
        for s in &r.sizes {
            let lost: u64 = s
                .natm_runs
                .iter()
                .map(|m| m.sent_messages - m.received_messages.min(m.sent_messages))
                .sum();
            let (ceiling, of) = match (s.ceiling_bits_per_sec, s.of_ceiling) {
                (Some(c), Some(o)) => (format!("{:.1}", c / 1e6), format!("{:.1}%", o * 100.0)),
                _ => ("unlimited".to_string(), "-".to_string()),
            };
            let tpdu = match s.tpdu_size_reached {
                (lo, hi) if lo == hi => lo.to_string(),
                (lo, hi) => format!("{lo}-{hi}"),
            };
            let mut line = format!(
                "{:>8} {:>8.1} {:>15} {:>9} {:>7} {:>8.1} {:>8} {:>6} {:>11}",
                s.size,
                s.natm.median / 1e6,
                range(s.natm, 1e6, 1),
                ceiling,
                of,
                s.seed_fit_bits_per_sec / 1e6,
                s.resends,
                lost,
                tpdu
            );
            if rate {
                match &s.rate {
                    Some(g) => line.push_str(&format!(
                        " {:>9} {:>9} {:>17}",
                        g.requested,
                        g.achieved
                            .map_or("-".into(), |a| format!("{:.0}", a.median)),
                        g.deviation_percent.map_or("-".into(), |d| format!(
                            "{:+.2} ({})",
                            d.median,
                            range(d, 1.0, 2)
                        ))
                    )),
                    None => line.push_str(&format!(" {:>9} {:>9} {:>17}", "-", "-", "-")),
                }
            }
            if r.bulk_vc.is_some() {
                let b = s
                    .bulk
                    .map_or("-".into(), |b| format!("{:.1}", b.median / 1e6));
                line.push_str(&format!(" {b:>9}"));
            }
            if tcp {
                match s.tcp {
                    Some(b) => line.push_str(&format!(
                        " {:>10.1} {:>8}",
                        b.median / 1e6,
                        s.ratio.map_or("-".to_string(), ratio)
                    )),
                    None => line.push_str(&format!(" {:>10} {:>8}", "-", "-")),
                }
            }
            let _ = writeln!(t, "{line}");
        }
        if let Some(h) = &r.half_power {
            let b = |x: Option<HalfPoint>| match x {
                None => "undefined".to_string(),
                Some(p) if p.at_smallest => format!("≤ {:.0} B (the smallest size)", p.bytes),
                Some(p) => format!("{:.0} B", p.bytes),
            };
            let mut line = format!(
                "half-power point (half the largest size's median goodput): natm {}",
                b(h.natm)
            );
            if tcp {
                line.push_str(&format!(", tcp {}", b(h.tcp)));
            }
            line.push_str(&format!("; the seed's ~{:.0} B", r.seed.half_power_bytes));
            let _ = writeln!(t, "{line}");
        }
        if let Some(p) = &r.plot {
            let _ = writeln!(t, "plot: {p} ({})", super::PLOT_LEGEND);
        }
        t
    }
}

impl rr::Report {
    /// The report as the table `natm perf transport --rr` prints.
    pub fn table(&self) -> String {
        let r = self;
        let mut t = String::new();
        let _ = writeln!(
            t,
            "natm perf transport --rr: {}-byte round trips on VC {} (QoS {}, {} path), \
             {} run(s) of each, alternating; median (min-max) of the runs' quantiles",
            r.size, r.vc, r.qos, r.path, r.runs
        );
        let _ = writeln!(
            t,
            "{:<18} {:>8} {:>17} {:>8} {:>17} {:>8} {:>6}",
            "", "p50 µs", "min-max", "p99 µs", "min-max", "count", "lost"
        );
        for (name, k) in [("raw AAL5 (Vc)", &r.raw), ("reliable channel", &r.channel)] {
            let _ = writeln!(
                t,
                "{:<18} {:>8.1} {:>17} {:>8.1} {:>17} {:>8} {:>6}",
                name,
                k.p50_us.median,
                range(k.p50_us, 1.0, 1),
                k.p99_us.median,
                range(k.p99_us, 1.0, 1),
                k.count,
                k.lost
            );
        }
        let _ = writeln!(
            t,
            "channel ÷ raw: p50 {}, p99 {} (issue 25's goal: p50 ≤ 1.2×)",
            ratio(r.ratio_p50),
            ratio(r.ratio_p99)
        );
        t
    }
}

/// `min-max` of a spread divided by `unit`, with `decimals`.
fn range(s: Spread, unit: f64, decimals: usize) -> String {
    format!("{:.decimals$}-{:.decimals$}", s.min / unit, s.max / unit)
}

/// A ratio with two significant digits down to 0.001 (natm beside loopback TCP is often
/// below 0.1).
fn ratio(x: f64) -> String {
    if x >= 0.1 || x == 0.0 || !x.is_finite() {
        format!("{x:.2}×")
    } else {
        format!("{x:.3}×")
    }
}

//! The table of `natm perf transport`: [`Report::table`].

use std::fmt::Write as _;

use super::{Budget, HalfPoint, Report};

impl Report {
    /// The report as the table `natm perf transport` prints (one line per row, each ending
    /// in a newline).
    pub fn table(&self) -> String {
        let r = self;
        let mut t = String::new();
        let cpu = |c: Option<usize>| c.map_or("any".to_string(), |c| c.to_string());
        let budget = match r.budget {
            Budget::Count(n) => format!("{n} messages"),
            Budget::Seconds(s) => format!("{s:.1} s"),
        };
        let _ = writeln!(
            t,
            "natm perf transport: {} channel on VC {} (QoS {}, {} path), {budget} per size; \
             sender CPU {}, receiver CPU {}",
            r.service,
            r.vc,
            r.qos,
            r.path,
            cpu(r.placement.client),
            cpu(r.placement.server)
        );
        let tcp = r.sizes.iter().any(|s| s.tcp.is_some());
        let _ = writeln!(
            t,
            "goodput of whole messages; resends = TPDUs resent{}",
            if tcp {
                "; ratio = natm ÷ kernel TCP on loopback, same size, same run"
            } else {
                ""
            }
        );
        let mut head = format!(
            "{:>8} {:>10} {:>12} {:>8} {:>8}",
            "size", "Mbit/s", "messages/s", "resends", "lost"
        );
        if tcp {
            head.push_str(&format!(
                " {:>12} {:>12} {:>8}",
                "tcp Mbit/s", "tcp msg/s", "ratio"
            ));
        }
        let _ = writeln!(t, "{head}");
        for s in &r.sizes {
            let m = &s.natm;
            let mut line = format!(
                "{:>8} {:>10.1} {:>12.0} {:>8} {:>8}",
                s.size,
                m.bits_per_sec / 1e6,
                m.messages_per_sec,
                m.resends,
                m.sent_messages - m.received_messages.min(m.sent_messages)
            );
            if tcp {
                match &s.tcp {
                    Some(b) => line.push_str(&format!(
                        " {:>12.1} {:>12.0} {:>8}",
                        b.bits_per_sec / 1e6,
                        b.messages_per_sec,
                        s.ratio.map_or("-".to_string(), ratio)
                    )),
                    None => line.push_str(&format!(" {:>12} {:>12} {:>8}", "-", "-", "-")),
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
                "half-power point (half the largest size's goodput): natm {}",
                b(h.natm)
            );
            if tcp {
                line.push_str(&format!(", tcp {}", b(h.tcp)));
            }
            let _ = writeln!(t, "{line}");
        }
        t
    }
}

/// A ratio with two significant digits down to 0.001 (natm beside loopback TCP is often
/// below 0.1).
fn ratio(x: f64) -> String {
    if x >= 0.1 || x == 0.0 {
        format!("{x:.2}×")
    } else {
        format!("{x:.3}×")
    }
}

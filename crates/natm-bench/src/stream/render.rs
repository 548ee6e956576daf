//! The table of `natm perf stream`: [`Report::table`].

use std::fmt::Write as _;

use super::Report;
use crate::plot;

impl Report {
    /// The report as the table `natm perf stream` prints (one line per row, each ending in a
    /// newline).
    pub fn table(&self) -> String {
        let r = self;

        let mut t = String::new();
        let cpu = crate::transport::Placement::cpu_text;
        let _ = writeln!(
            t,
            "natm perf stream: {:.1} s per size and transport; sender CPU {}, receiver CPU {}",
            r.seconds,
            cpu(r.placement.client),
            cpu(r.placement.server)
        );
        let main = r.kinds[0];
        let mut head = format!(
            "{:>8} {:>10} {:>12} {:>6}",
            "size", "Mbit/s", "messages/s", "lost"
        );
        for b in &r.kinds[1..] {
            head.push_str(&format!(" {:>12} {:>8}", format!("{b} Mbit/s"), "ratio"));
        }
        let _ = writeln!(
            t,
            "{main}: goodput; ratio = {main} ÷ the baseline, same size, same run"
        );
        let _ = writeln!(t, "{head}");
        for s in &r.sizes {
            let mut line = match &s.results[0] {
                Some(m) => format!(
                    "{:>8} {:>10.1} {:>12.0} {:>6}",
                    s.size,
                    m.bits_per_sec / 1e6,
                    m.messages_per_sec,
                    m.sent_messages - m.received_messages.min(m.sent_messages)
                ),
                None => format!("{:>8} {:>10} {:>12} {:>6}", s.size, "-", "-", "-"),
            };
            for (b, ratio) in s.results[1..].iter().zip(&s.ratios) {
                let mbit = b
                    .as_ref()
                    .map_or("-".to_string(), |m| format!("{:.1}", m.bits_per_sec / 1e6));
                let ratio = ratio.map_or("-".to_string(), |x| format!("{x:.2}×"));
                line.push_str(&format!(" {mbit:>12} {ratio:>8}"));
            }
            let _ = writeln!(t, "{line}");
        }
        for (k, kind) in r.kinds.iter().enumerate() {
            let missing: Vec<String> = r
                .sizes
                .iter()
                .filter(|s| s.results[k].is_none())
                .map(|s| s.size.to_string())
                .collect();
            if !missing.is_empty() {
                let (max, what) = kind.max_message();
                let _ = writeln!(
                    t,
                    "{kind}: not measured at {} bytes ({what} carries at most {max})",
                    missing.join(", ")
                );
            }
        }
        if let Some(p) = &r.plot {
            let _ = writeln!(t, "plot: {p}; {}", plot::LEGEND);
        }
        t
    }
}

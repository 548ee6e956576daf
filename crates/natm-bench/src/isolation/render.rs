//! The table of `natm perf isolation`: [`Report::table`].

use std::fmt::Write as _;

use super::Report;

impl Report {
    /// The report as the table `natm perf isolation` prints (one line per row, each ending in a
    /// newline).
    pub fn table(&self) -> String {
        let r = self;

        let mut t = String::new();
        let p = &r.plan;
        let _ = writeln!(
            t,
            "sink link {} ({} cells/s); CBR {} (sent at {} cells/s), VBR {} (source opens {}), \
             UBR {} (share {} cells/s; source opens {})",
            p.sink_rate,
            p.sink_cells_per_s,
            p.cbr_qos,
            p.cbr_send_rate,
            p.vbr_qos,
            p.vbr_source_qos,
            p.ubr_qos,
            p.ubr_share,
            p.ubr_source_qos,
        );
        let _ = writeln!(
            t,
            "{:<34} {:>8} {:>8} {:>6} {:>6} {:>10} {:>10}",
            "phase", "CBR sent", "received", "lost", "ooo", "p50 µs", "p99 µs"
        );
        for ph in &r.phases {
            let d = ph.cbr_delay.as_ref();
            let _ = writeln!(
                t,
                "{:<34} {:>8} {:>8} {:>6} {:>6} {:>10} {:>10}",
                ph.name,
                ph.cbr_sent,
                ph.cbr_received,
                ph.cbr_lost,
                ph.cbr_out_of_order,
                us(d.map(|d| d.p50_ns)),
                us(d.map(|d| d.p99_ns)),
            );
        }
        let _ = match (r.p99_rise_percent, r.p99_control_percent) {
            (Some(x), Some(c)) => writeln!(
                t,
                "CBR p99 rise with aggressors: {x:+.1}% (goal < 10%; measured, not judged); \
                 alone again (control): {c:+.1}%, the machine's noise"
            ),
            _ => writeln!(t, "CBR p99 rise: not measured (no delays recorded)"),
        };
        let _ = writeln!(t);
        let _ = writeln!(
            t,
            "switch s1, per connection (source to sink):\n{:<34} {:>5} {:>10} {:>10} {:>10} {:>8} {:>12}",
            "phase", "conn", "cells in", "cells out", "policed", "tagged", "queue-drop"
        );
        for ph in &r.phases {
            for (name, c) in [
                ("CBR", ph.switch_cbr),
                ("VBR", ph.switch_vbr),
                ("UBR", ph.switch_ubr),
            ] {
                let _ = writeln!(
                    t,
                    "{:<34} {:>5} {:>10} {:>10} {:>10} {:>8} {:>12}",
                    ph.name, name, c.cells_in, c.cells_out, c.policed, c.tagged, c.queue_dropped
                );
            }
        }
        if let Some(ph) = r.phases.get(1) {
            let _ = writeln!(t);
            let _ = writeln!(
                t,
                "aggressors in phase 2: VBR offered {:.0} cells/s ({:.2}x its PCR {}), whole SDUs \
                 delivered {:.0} cells/s; UBR offered {:.0} cells/s ({:.1}x its share {}), whole \
                 SDUs delivered {:.0} cells/s",
                ph.vbr_offered_cells_per_s,
                r.vbr_offered_over_pcr,
                p.vbr_pcr,
                ph.vbr_delivered_cells_per_s,
                ph.ubr_offered_cells_per_s,
                r.ubr_offered_over_share,
                p.ubr_share,
                ph.ubr_delivered_cells_per_s,
            );
        }
        t
    }
}

fn us(ns: Option<u64>) -> String {
    ns.map_or("-".into(), |n| format!("{:.1}", n as f64 / 1000.0))
}

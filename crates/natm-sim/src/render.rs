//! The text of `natm sim run`: a run's report as its table ([`RunReport::table`]) and as
//! JSON ([`RunReport::json`]), so that every front end prints a run alike.

use std::fmt::Write as _;

use serde_json::Value;

use crate::RunReport;

impl RunReport {
    /// The report as the table `natm sim run` prints after its seed line (one line per row,
    /// each ending in a newline).
    pub fn table(&self) -> String {
        let r = self;
        let s = &r.stats;
        let mut t = String::new();
        let _ = writeln!(
            t,
            "ok: every invariant held; {} faults planned, {} flows probed after the drain",
            r.faults, r.flows
        );
        let _ = writeln!(
            t,
            "virtual time {:.3} ms, {} events, {} cell events",
            r.end.as_nanos() as f64 / 1e6,
            s.events,
            s.cell_events
        );
        let _ = writeln!(
            t,
            "SDUs: {} sent, {} delivered, {} refused at the host; cells lost to down links {}, to down nodes {}",
            s.sdus_sent,
            s.sdus_delivered,
            s.sends_refused,
            s.dropped_link_down,
            s.dropped_node_down
        );
        let _ = writeln!(
            t,
            "actions: {} carried out, {} refused",
            s.actions, s.actions_refused
        );
        if let Some(c) = &r.calls {
            let _ = writeln!(
                t,
                "calls: {} placed, {} offered, {} connected, {} failed ({} for cell rate); settled {:.3} s after the drain",
                c.placed,
                c.offered,
                c.connected,
                c.failed,
                c.no_cell_rate,
                c.settle.as_nanos() as f64 / 1e9
            );
        }
        let _ = writeln!(t, "digest {:016x}", r.digest);
        let _ = writeln!(
            t,
            "wall {:.3} s: {:.2} M cell events/s",
            r.wall.as_secs_f64(),
            r.cell_events_per_sec() / 1e6
        );
        t
    }

    /// The report as `natm sim run --json` prints it (one object; `Display` gives it on one
    /// line).
    pub fn json(&self) -> Value {
        let r = self;
        let s = &r.stats;
        let mut v = serde_json::json!({
            "seed": r.seed,
            "ok": true,
            "digest": format!("{:016x}", r.digest),
            "virtual_ns": r.end.as_nanos(),
            "wall_s": r.wall.as_secs_f64(),
            "events": s.events,
            "cell_events": s.cell_events,
            "cell_events_per_s": r.cell_events_per_sec(),
            "sdus_sent": s.sdus_sent,
            "sdus_delivered": s.sdus_delivered,
            "sends_refused": s.sends_refused,
            "dropped_link_down": s.dropped_link_down,
            "dropped_node_down": s.dropped_node_down,
            "faults": r.faults,
            "flows": r.flows,
            "actions": s.actions,
            "actions_refused": s.actions_refused,
        });
        if let Some(c) = &r.calls {
            v["calls"] = serde_json::json!({
                "placed": c.placed,
                "offered": c.offered,
                "connected": c.connected,
                "failed": c.failed,
                "no_cell_rate": c.no_cell_rate,
                "settle_ns": c.settle.as_nanos(),
            });
        }
        v
    }
}

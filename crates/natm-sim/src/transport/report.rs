//! What a transport run did, as `natm sim run --transport` prints it.

use super::*;

/// Per service: what a run's channels did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceCounts {
    /// Channels.
    pub channels: u64,
    /// Messages accepted by the senders.
    pub sent: u64,
    /// Messages delivered.
    pub delivered: u64,
    /// Messages reported lost.
    pub lost: u64,
    /// Bytes delivered.
    pub bytes: u64,
}

/// What a transport run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TransportReport {
    /// The seed.
    pub seed: u64,
    /// The world's digest of every event.
    pub digest: u64,
    /// Virtual time at the end.
    pub end: Instant,
    /// From the end of the phase until every message was accounted for.
    pub settle: Duration,
    /// Reliable, best effort, guaranteed.
    pub services: [ServiceCounts; 3],
    /// Faults in the plan.
    pub faults: usize,
    /// TPDUs resent (SMART, timeout) and loss probes, all reliable endpoints.
    pub resends: (u64, u64, u64),
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Window cuts on SMART losses: halvings, and cuts by a fifth for losses that look
    /// random (`natm_transport::Stats::window_cuts`).
    pub window_cuts: u64,
    /// Acks that rode on data TPDUs (`natm_transport::Stats::acks_carried`).
    pub acks_carried: u64,
    /// Frames the endpoints refused.
    pub refused: u64,
    /// Guaranteed rate windows checked, and the largest deviation seen (fraction of the
    /// expected cells).
    pub rate_windows: u64,
    /// The largest deviation of a checked window from the rate, fraction of its cells.
    pub worst_rate: f64,
    /// The world's cell events.
    pub cell_events: u64,
    /// Wall-clock time.
    pub wall: std::time::Duration,
}

impl TransportReport {
    /// The report as `natm sim run --transport` prints it.
    pub fn table(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(
            t,
            "ok: every transport invariant held; {} faults, settled {:.1} ms after the phase",
            self.faults,
            self.settle.as_nanos() as f64 / 1e6
        );
        for (name, s) in ["reliable", "best effort", "guaranteed"]
            .iter()
            .zip(&self.services)
        {
            let _ = writeln!(
                t,
                "{name:<12} {} channels: {} messages sent, {} delivered ({} bytes), {} reported lost",
                s.channels, s.sent, s.delivered, s.bytes, s.lost
            );
        }
        let _ = writeln!(
            t,
            "reliable: {} SMART resends, {} timeout resends, {} probes, {} timeouts, {} window cuts, {} acks carried on data; {} frames refused",
            self.resends.0,
            self.resends.1,
            self.resends.2,
            self.timeouts,
            self.window_cuts,
            self.acks_carried,
            self.refused
        );
        let _ = writeln!(
            t,
            "guaranteed: {} rate windows checked, worst {:.2} % off the rate",
            self.rate_windows,
            self.worst_rate * 100.0
        );
        let _ = writeln!(
            t,
            "virtual time {:.3} s, {} cell events",
            self.end.as_nanos() as f64 / 1e9,
            self.cell_events
        );
        let _ = writeln!(t, "digest {:016x}", self.digest);
        let _ = writeln!(t, "wall {:.3} s", self.wall.as_secs_f64());
        t
    }

    /// The report as JSON.
    pub fn json(&self) -> serde_json::Value {
        let svc = |s: &ServiceCounts| {
            serde_json::json!({
                "channels": s.channels, "sent": s.sent, "delivered": s.delivered,
                "lost": s.lost, "bytes": s.bytes,
            })
        };
        serde_json::json!({
            "seed": self.seed,
            "ok": true,
            "digest": format!("{:016x}", self.digest),
            "virtual_ns": self.end.as_nanos(),
            "settle_ns": self.settle.as_nanos(),
            "faults": self.faults,
            "reliable": svc(&self.services[0]),
            "best_effort": svc(&self.services[1]),
            "guaranteed": svc(&self.services[2]),
            "smart_resends": self.resends.0,
            "timeout_resends": self.resends.1,
            "probes": self.resends.2,
            "timeouts": self.timeouts,
            "window_cuts": self.window_cuts,
            "acks_carried": self.acks_carried,
            "refused": self.refused,
            "rate_windows": self.rate_windows,
            "worst_rate": self.worst_rate,
            "cell_events": self.cell_events,
            "wall_s": self.wall.as_secs_f64(),
        })
    }
}

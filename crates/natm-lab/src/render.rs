//! The text of `natm stat` and `natm lab status`: a daemon's status as one line
//! ([`DaemonStatus::one_line`]) or as its table ([`DaemonStatus::table`]).

use std::fmt::Write as _;

use natm::HostStatus;
use natm_switchd::client::SwitchStatus;
use serde_json::Value;

use crate::DaemonStatus;

impl DaemonStatus {
    /// A one-line summary: ports up, cross-connects and memory of a switch; link, channels
    /// and memory of a host.
    pub fn one_line(&self) -> String {
        match self {
            DaemonStatus::Switch(v) => {
                let up = v.ports.iter().filter(|p| p.up).count();
                format!(
                    "{up}/{} ports up, {} cross-connects, {}",
                    v.ports.len(),
                    v.connections.len(),
                    mib(v.memory)
                )
            }
            DaemonStatus::Host(v) => format!(
                "link {} ({}), {} channels, {}",
                if v.link.up { "up" } else { "DOWN" },
                v.link.description,
                v.channels.len(),
                mib(Some(v.vm_rss_bytes))
            ),
        }
    }

    /// The status of the daemon `name` as `natm stat` prints it (one line per row, each
    /// ending in a newline): a switch's ports, lanes and cross-connects with their
    /// counters, a host's link and channels.
    pub fn table(&self, name: &str) -> String {
        match self {
            DaemonStatus::Switch(v) => switch_table(name, v),
            DaemonStatus::Host(v) => host_table(name, v),
        }
    }
}

fn mib(bytes: Option<u64>) -> String {
    match bytes {
        Some(b) => format!("{:.1} MiB", b as f64 / (1 << 20) as f64),
        None => "?".into(),
    }
}

fn switch_table(name: &str, v: &SwitchStatus) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "switch {name}: pid {}, up {:.0} s, {}, {} B of state per cross-connect",
        v.pid,
        v.uptime_s,
        mib(v.memory),
        v.state_bytes_per_connection
    );
    let _ = writeln!(
        t,
        "  {:<5} {:<4} {:>12} {:>12} {:>9} {:>9} {:>9}  {:<18} link",
        "port",
        "up",
        "cells in",
        "cells out",
        "dropped",
        "policed",
        "unknown",
        "queued cbr/rt/nrt/ubr"
    );
    for p in &v.ports {
        let c = &p.counters;
        let q = &p.queue_depth;
        let _ = writeln!(
            t,
            "  {:<5} {:<4} {:>12} {:>12} {:>9} {:>9} {:>9}  {:<18} {}",
            p.id,
            if p.up { "yes" } else { "no" },
            c.cells_in,
            c.cells_out,
            c.dropped,
            c.policed,
            c.unknown_vc,
            format!("{}/{}/{}/{}", q.cbr, q.rt_vbr, q.nrt_vbr, q.ubr),
            p.link
        );
        for l in &p.lanes {
            let _ = writeln!(
                t,
                "        lane {}: {} cells in, {} out, {} held, {} dropped, {} steps paused",
                l.vcs.join(","),
                l.rx,
                l.tx,
                l.held,
                l.dropped,
                l.paused
            );
        }
    }
    if !v.connections.is_empty() {
        let _ = writeln!(
            t,
            "  {:<8} {:<10} {:<10} {:<24} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8}",
            "xc", "a", "b", "qos", "a>b in", "a>b out", "drop", "b>a in", "b>a out", "drop"
        );
        for x in &v.connections {
            let (ab, ba) = (&x.a_to_b, &x.b_to_a);
            let _ = writeln!(
                t,
                "  {:<8} {:<10} {:<10} {:<24} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8}",
                x.id,
                x.a,
                x.b,
                x.qos,
                ab.cells_in,
                ab.cells_out,
                ab.dropped,
                ba.cells_in,
                ba.cells_out,
                ba.dropped
            );
        }
    }
    t
}

fn host_table(name: &str, v: &HostStatus) -> String {
    let mut t = String::new();
    let l = &v.link;
    let _ = writeln!(
        t,
        "host {name}: pid {}, {}, link {} {} (tx {} cells, rx {} cells, {} reconnects)",
        v.pid,
        mib(Some(v.vm_rss_bytes)),
        l.description,
        if l.up { "up" } else { "DOWN" },
        l.tx_cells,
        l.rx_cells,
        l.reconnects
    );
    if v.channels.is_empty() {
        let _ = writeln!(t, "  no channels");
        return t;
    }
    let _ = writeln!(
        t,
        "  {:<6} {:<8} {:<22} {:>8} {:<9} {:<7} {:>10} {:>10} {:>8} {:>8}",
        "handle", "vc", "qos", "pid", "notify", "path", "sdus tx", "sdus rx", "txq", "drops"
    );
    for c in &v.channels {
        let k = &c.counters;
        let drops = k.drops_no_buffer
            + k.drops_crc
            + k.drops_length
            + k.drops_oversize
            + k.drops_timeout
            + k.drops_policed;
        // A lane's adapter runs in the application: hostd has no data counters for it.
        let counts: [String; 4] = if c.path == natm::DataPath::Lane {
            ["(in app)".into(), "-".into(), "-".into(), "-".into()]
        } else {
            [
                k.sdus_sent.to_string(),
                k.sdus_received.to_string(),
                c.tx_queued.to_string(),
                drops.to_string(),
            ]
        };
        let _ = writeln!(
            t,
            "  {:<6} {:<8} {:<22} {:>8} {:<9} {:<7} {:>10} {:>10} {:>8} {:>8}",
            c.handle,
            c.vc,
            c.qos,
            c.owner_pid,
            json_name(&c.notify),
            json_name(&c.path),
            counts[0],
            counts[1],
            counts[2],
            counts[3]
        );
    }
    t
}

/// A unit enum's name as its JSON has it (`"eventfd"`, `"lane"`).
fn json_name<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        _ => "?".into(),
    }
}

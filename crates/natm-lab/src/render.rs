//! The text of `natm stat` and `natm lab`: a daemon's status as one line
//! ([`DaemonStatus::one_line`]) or as its table ([`DaemonStatus::table`]); the lab as
//! `natm lab up` and `natm lab status` print it ([`LabState::up_table`],
//! [`LabState::status_table`]) and as their JSON ([`LabState::json`],
//! [`LabState::status_json`]); every daemon's answer as `natm stat` prints it
//! ([`stat_table`], [`stat_json`]).

use std::fmt::Write as _;
use std::path::Path;

use natm::HostStatus;
use natm_switchd::client::SwitchStatus;
use serde_json::{Value, json};

use crate::topology::Topology;
use crate::{Daemon, DaemonStatus, LabState, is_our_daemon};

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

impl LabState {
    /// The lab as `natm lab up --json` prints it: its directory and daemons, each with
    /// whether it is still running, a host's `address` (`atm2text` form) and a switch's
    /// `prefix`.
    pub fn json(&self) -> Value {
        let daemon = |d: &Daemon| {
            let mut v = json!({
                "name": d.name,
                "role": d.role,
                "pid": d.pid,
                "alive": is_our_daemon(d.pid, &d.config),
                "socket": d.socket,
                "log": d.log,
            });
            if let Some(a) = d.address {
                v["address"] = json!(a.to_string());
            }
            if let Some(p) = d.prefix {
                v["prefix"] = json!(p.to_string());
            }
            v
        };
        json!({
            "dir": self.dir,
            "daemons": self.daemons.iter().map(daemon).collect::<Vec<_>>(),
        })
    }

    /// What `natm lab up` prints of the lab it started in `dir` from `topo`: the daemons
    /// with their sockets, the PVCs, and commands to try.
    pub fn up_table(&self, dir: &Path, topo: &Topology) -> String {
        let mut t = String::new();
        let _ = writeln!(t, "lab up in {}", dir.display());
        for d in &self.daemons {
            let _ = writeln!(
                t,
                "  {:<6} {:<6} pid {:<7} socket {}",
                d.name,
                d.role,
                d.pid,
                d.socket.display()
            );
        }
        let _ = writeln!(t, "PVCs: {}", summarize_pvcs(topo));
        let _ = writeln!(t, "try: {}", self.to_try(topo).join("   "));
        t
    }

    /// Commands that work on this lab: a ping on its first PVC (and `natm perf rr`, whose
    /// defaults are h1, h2 and 0.100, when that PVC is there), a call between its first
    /// two hosts with addresses, `natm stat`, `natm lab down`.
    fn to_try(&self, topo: &Topology) -> Vec<String> {
        let mut cmds = Vec::new();
        if let Some(p) = topo.pvcs.first() {
            let vc = p.vc.to_string();
            if p.a == "h1" && p.b == "h2" && vc == "0.100" {
                cmds.push("natm ping 0.100".to_string());
                cmds.push("natm perf rr".to_string());
            } else {
                cmds.push(format!("natm ping --host {} {vc}", p.a));
            }
        }
        let mut hosts = self
            .daemons
            .iter()
            .filter_map(|d| Some((d.name.as_str(), d.address?)));
        if let (Some((a, _)), Some((b, addr))) = (hosts.next(), hosts.next()) {
            cmds.push(format!("natm listen --host {b} &"));
            cmds.push(format!("natm call --host {a} {addr} --text hello"));
        }
        cmds.push("natm stat".to_string());
        cmds.push("natm lab down".to_string());
        cmds
    }

    /// `natm lab status --json`: [`LabState::json`] with each daemon's status (`details`,
    /// in the order of the daemons), or why it did not answer.
    pub fn status_json(&self, details: &[Result<DaemonStatus, String>]) -> Value {
        let mut out = self.json();
        out["status"] = Value::Array(
            details
                .iter()
                .map(|r| match r {
                    Ok(v) => json!(v),
                    Err(e) => json!({ "error": e }),
                })
                .collect(),
        );
        out
    }

    /// What `natm lab status` prints of the lab in `dir`: one line per daemon, whether it
    /// runs, and its status's summary from `details` (in the order of the daemons), then
    /// under it the host's address or the switch's prefix.
    pub fn status_table(&self, dir: &Path, details: &[Result<DaemonStatus, String>]) -> String {
        let mut t = String::new();
        let _ = writeln!(t, "lab in {}", dir.display());
        for (d, r) in self.daemons.iter().zip(details) {
            let alive = if is_our_daemon(d.pid, &d.config) {
                "running"
            } else {
                "NOT RUNNING"
            };
            let summary = match r {
                Ok(v) => v.one_line(),
                Err(e) => format!("no answer: {e}"),
            };
            let _ = writeln!(
                t,
                "  {:<6} {:<6} pid {:<7} {alive:<11} {summary}",
                d.name, d.role, d.pid
            );
            if let Some(a) = d.address {
                let _ = writeln!(t, "{:<17}address {a}", "");
            }
            if let Some(p) = d.prefix {
                let _ = writeln!(t, "{:<17}prefix {p}", "");
            }
        }
        t
    }
}

fn summarize_pvcs(topo: &Topology) -> String {
    let mut groups: Vec<(String, String, natm_core::Qos, Vec<u16>)> = Vec::new();
    for p in &topo.pvcs {
        match groups.last_mut() {
            Some((a, b, q, v)) if *a == p.a && *b == p.b && *q == p.qos => v.push(p.vc.vci.get()),
            _ => groups.push((p.a.clone(), p.b.clone(), p.qos, vec![p.vc.vci.get()])),
        }
    }
    if groups.is_empty() {
        return "none".into();
    }
    groups
        .iter()
        .map(|(a, b, q, v)| {
            let range = match (v.first(), v.last()) {
                (Some(f), Some(l)) if f != l => format!("0.{f}-0.{l}"),
                (Some(f), _) => format!("0.{f}"),
                _ => String::new(),
            };
            format!("{a} <-> {b} {range} {q}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What `natm stat` prints of the daemons' `answers`: each status's table
/// ([`DaemonStatus::table`]), or one line saying why the daemon did not answer.
pub fn stat_table(answers: &[(&Daemon, Result<DaemonStatus, String>)]) -> String {
    let mut t = String::new();
    for (d, r) in answers {
        match r {
            Ok(status) => t.push_str(&status.table(&d.name)),
            Err(e) => {
                let _ = writeln!(t, "{} {}: no answer: {e}", d.role, d.name);
            }
        }
    }
    t
}

/// `natm stat --json`: the lab's directory, then the switches' and the hosts' answers,
/// each status as its daemon gave it or why it did not answer.
pub fn stat_json(dir: &Path, answers: &[(&Daemon, Result<DaemonStatus, String>)]) -> Value {
    let node = |d: &Daemon, r: &Result<DaemonStatus, String>| match r {
        Ok(v) => json!({"name": d.name, "pid": d.pid, "status": v}),
        Err(e) => json!({"name": d.name, "pid": d.pid, "error": e}),
    };
    let role = |role: &str| {
        answers
            .iter()
            .filter(|(d, _)| d.role == role)
            .map(|(d, r)| node(d, r))
            .collect::<Vec<_>>()
    };
    json!({
        "dir": dir,
        "switches": role("switch"),
        "hosts": role("host"),
    })
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
        if let Some(l) = p.link_counters.filter(|l| l.rx_lost + l.rx_malformed > 0) {
            let _ = writeln!(
                t,
                "        link lost {} batches on the way in, refused {} malformed",
                l.rx_lost, l.rx_malformed
            );
        }
        if let Some(w) = &p.link_warning {
            let _ = writeln!(t, "        link warning: {w}");
        }
        if !p.lanes.is_empty() {
            // The weights a rated port's input line is shared by.
            let _ = writeln!(
                t,
                "        main link weight {}",
                p.main_weight
                    .map_or_else(|| "1 (unsaid)".into(), |w| w.to_string())
            );
        }
        for l in &p.lanes {
            if let Some(peer) = &l.spliced_with {
                let _ = writeln!(
                    t,
                    "        lane {} spliced with {peer}: the applications share its rings, the switch is off its data path; {} cells in, {} out",
                    l.vcs.join(","),
                    l.rx,
                    l.tx
                );
                continue;
            }
            let label = l
                .label
                .as_ref()
                .map_or_else(String::new, |v| format!(" (its cells carry {v})"));
            let _ = writeln!(
                t,
                "        lane {}{label} (weight {}): {} cells in, {} out, {} held, {} dropped, {} steps paused",
                l.vcs.join(","),
                l.weight,
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
        "host {name}: pid {}, {}, link {} {} (tx {} cells, rx {} cells, {} batches lost on \
         the way in, {} reconnects)",
        v.pid,
        mib(Some(v.vm_rss_bytes)),
        l.description,
        if l.up { "up" } else { "DOWN" },
        l.tx_cells,
        l.rx_cells,
        l.rx_lost,
        l.reconnects
    );
    // Where this host lost data since it started, VCs closed or open.
    let mut all = *v.closed;
    for c in &v.channels {
        all.add(&c.counters);
    }
    let _ = writeln!(
        t,
        "  lost: {} frames without a receive buffer, {} CRC, {} length, {} oversize, {} timeout; \
         {} cells policed, {} cells on link failure; {} sends failed",
        all.drops_no_buffer,
        all.drops_crc,
        all.drops_length,
        all.drops_oversize,
        all.drops_timeout,
        all.drops_policed,
        l.lost_on_failure,
        all.tx_failed
    );
    if let Some(w) = &l.warning {
        let _ = writeln!(t, "  link warning: {w}");
    }
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
        if c.path == natm::DataPath::Lane {
            // What hostd sees of the lane: its rings' indices and the splice word.
            let spliced = if c.spliced {
                "; spliced to another application's lane, the switch off its data path"
            } else {
                ""
            };
            let _ = writeln!(
                t,
                "         lane: {} cells out, {} in{spliced}",
                k.cells_sent, k.cells_received
            );
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lab_json_and_status_name_each_hosts_address_and_each_switchs_prefix() {
        let t = Topology::parse(crate::topology::DEFAULT_TOPOLOGY, None).unwrap();
        let state = LabState {
            dir: "/x".into(),
            daemons: vec![daemon(&t, "s1", "switch"), daemon(&t, "h1", "host")],
            topology: String::new(),
            rate: None,
        };
        // lab.json keeps them, as text.
        let again: LabState =
            serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
        assert_eq!(again.daemons[1].address, state.daemons[1].address);
        assert_eq!(again.daemons[0].prefix, state.daemons[0].prefix);
        let j = state.status_json(&[Err("down".into()), Err("down".into())]);
        let prefix = "47.0005.80FFE1000000F2000001";
        assert_eq!(j["daemons"][0]["prefix"], prefix);
        assert_eq!(j["daemons"][0].get("address"), None);
        assert_eq!(
            j["daemons"][1]["address"],
            format!("{prefix}.020000000001.00")
        );
        let text = state.status_table(Path::new("/x"), &[Err("down".into()), Err("down".into())]);
        assert!(text.contains(&format!("prefix {prefix}\n")), "{text}");
        assert!(
            text.contains(&format!("address {prefix}.020000000001.00\n")),
            "{text}"
        );
    }

    /// Daemon `name` of `t` as a lab in `/x` would record it.
    fn daemon(t: &Topology, name: &str, role: &str) -> Daemon {
        Daemon {
            name: name.into(),
            role: role.into(),
            pid: 0,
            socket: format!("/x/{name}.sock").into(),
            config: format!("/x/{name}.toml").into(),
            log: format!("/x/{name}.log").into(),
            address: t.address_of(name),
            prefix: t.prefix_of(name),
        }
    }

    fn state_of(t: &Topology) -> LabState {
        let mut daemons: Vec<Daemon> = t.switches.iter().map(|s| daemon(t, s, "switch")).collect();
        daemons.extend(t.hosts.iter().map(|h| daemon(t, h, "host")));
        LabState {
            dir: "/x".into(),
            daemons,
            topology: String::new(),
            rate: None,
        }
    }

    #[test]
    fn lab_up_suggests_only_commands_that_work_on_the_lab() {
        let t = Topology::parse(crate::topology::DEFAULT_TOPOLOGY, None).unwrap();
        let up = state_of(&t).up_table(Path::new("/x"), &t);
        let h2 = t.address_of("h2").unwrap();
        assert!(
            up.contains(&format!(
                "try: natm ping 0.100   natm perf rr   natm listen --host h2 &   natm call --host h1 {h2} --text hello   natm stat   natm lab down\n"
            )),
            "{up}"
        );
        // No PVC (examples/svc.toml): no ping, no perf rr; a call still.
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/svc.toml"
        ))
        .unwrap();
        let t = Topology::parse(&text, None).unwrap();
        let up = state_of(&t).up_table(Path::new("/x"), &t);
        let line = up.lines().find(|l| l.starts_with("try: ")).unwrap();
        assert!(t.pvcs.is_empty(), "svc.toml has no PVCs");
        assert!(
            !line.contains("ping") && !line.contains("perf rr"),
            "{line}"
        );
        assert!(line.contains("natm call --host h1 "), "{line}");
    }
}

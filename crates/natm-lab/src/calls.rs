//! `natm stat`'s calls (issue 24): each signalling host's address, SAAL state and calls,
//! and each signalling switch's ports (SSCOP state per port) and calls with both legs.
//! Empty when no daemon signals, so a PVC-only lab's `natm stat` is as it was.

use std::fmt::Write as _;

use natm::HostStatus;
use natm_proto::switchd::SignallingStatus;

use crate::{Daemon, DaemonStatus};

/// Seconds, from milliseconds, as `natm stat` shows an age.
fn age(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1e3)
}

fn host_calls(name: &str, v: &HostStatus, t: &mut String) {
    let Some(address) = &v.address else { return };
    let _ = writeln!(
        t,
        "host {name} calls: address {address}, signalling {}, {} call{}",
        if v.signalling_up { "up" } else { "DOWN" },
        v.calls.len(),
        if v.calls.len() == 1 { "" } else { "s" }
    );
    if v.calls.is_empty() {
        return;
    }
    let _ = writeln!(
        t,
        "  {:<4} {:<8} {:<7} {:<14} {:<22} {:>8} {:>8}  remote",
        "dir", "vc", "handle", "state", "qos", "age", "pid"
    );
    for c in &v.calls {
        let _ = writeln!(
            t,
            "  {:<4} {:<8} {:<7} {:<14} {:<22} {:>8} {:>8}  {}",
            c.direction,
            c.vc.map_or_else(|| "-".into(), |vc| vc.to_string()),
            c.handle.map_or_else(|| "-".into(), |h| h.to_string()),
            c.state,
            c.qos.to_string(),
            age(c.age_ms),
            c.owner_pid,
            c.remote.map_or_else(|| "-".into(), |a| a.to_string())
        );
    }
}

fn switch_calls(name: &str, s: &SignallingStatus, t: &mut String) {
    let _ = writeln!(
        t,
        "switch {name} calls: prefix {}, {} active, {} connected and {} refused since start, \
         {} bytes of signalling state per call",
        s.prefix, s.calls_active, s.calls_connected, s.calls_refused, s.state_bytes_per_call
    );
    for p in &s.ports {
        let _ = writeln!(
            t,
            "  port {:<3} {:<7} SSCOP {:<22} SAAL {:<4} {:>6} calls {:>4} establishments",
            p.port,
            p.side,
            p.sscop,
            if p.link_up { "up" } else { "DOWN" },
            p.calls,
            p.establishments
        );
    }
    if s.calls.is_empty() {
        return;
    }
    let _ = writeln!(
        t,
        "  {:<14} {:<14} {:<12} {:<22} {:>8}  called (calling)",
        "leg a", "leg b", "state", "qos", "age"
    );
    for c in &s.calls {
        let _ = writeln!(
            t,
            "  {:<14} {:<14} {:<12} {:<22} {:>8}  {}{}",
            c.a,
            c.b,
            c.state,
            c.qos,
            age(c.age_ms),
            c.called,
            c.calling
                .as_ref()
                .map_or_else(String::new, |a| format!(" ({a})"))
        );
    }
    let listed = s.calls.len() as u64;
    if s.calls_active > listed {
        let _ = writeln!(t, "  … and {} more", s.calls_active - listed);
    }
}

/// The calls section of `natm stat`'s text: nothing for daemons that do not signal.
pub fn calls_table(answers: &[(&Daemon, Result<DaemonStatus, String>)]) -> String {
    let mut t = String::new();
    for (d, r) in answers {
        match r {
            Ok(DaemonStatus::Host(v)) => host_calls(&d.name, v, &mut t),
            Ok(DaemonStatus::Switch(v)) => {
                if let Some(s) = &v.signalling {
                    switch_calls(&d.name, s, &mut t);
                }
            }
            Err(_) => {}
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use natm_proto::host::HostCall;
    use natm_proto::switchd::{SignallingPort, SwitchCall};

    #[test]
    fn hosts_and_switches_that_signal_list_their_calls_and_others_nothing() {
        let a = "47.0005.80ffe1000000f21a3599.0020481a3599.00"
            .parse()
            .unwrap();
        let mut h = HostStatus::default();
        let quiet = [(&daemon("h1", "host"), Ok(DaemonStatus::Host(h.clone())))];
        assert_eq!(calls_table(&quiet), "");
        h.address = Some(a);
        h.signalling_up = true;
        h.calls.push(HostCall {
            direction: "out".into(),
            vc: Some("0.32768".parse().unwrap()),
            handle: Some(3),
            remote: Some(a),
            state: "U10 active".into(),
            qos: "cbr:pcr=1000".parse().unwrap(),
            age_ms: 1500,
            owner_pid: 42,
        });
        let text = calls_table(&[(&daemon("h1", "host"), Ok(DaemonStatus::Host(h)))]);
        assert!(text.starts_with("host h1 calls: address 47.0005"), "{text}");
        assert!(text.contains("signalling up, 1 call\n"), "{text}");
        assert!(text.contains("out  0.32768  3       U10 active"), "{text}");
        assert!(text.contains("1.5 s"), "{text}");
        let s = SignallingStatus {
            prefix: "47.0005.80ffe1000000f21a3599".into(),
            calls_active: 3,
            calls_connected: 10,
            calls_refused: 1,
            state_bytes_per_call: 600,
            ports: vec![SignallingPort {
                port: 0,
                side: "network".into(),
                sscop: "data-transfer-ready".into(),
                link_up: true,
                calls: 1,
                establishments: 1,
                ..Default::default()
            }],
            calls: vec![SwitchCall {
                a: "0:0.32768".into(),
                b: "2:0.32770".into(),
                state: "active".into(),
                qos: "ubr".into(),
                called: "47.0005.80ffe1000000f21a3599.0020481a3500.00".into(),
                calling: None,
                age_ms: 20,
            }],
        };
        let mut text = String::new();
        switch_calls("s1", &s, &mut text);
        assert!(
            text.contains("3 active, 10 connected and 1 refused"),
            "{text}"
        );
        assert!(
            text.contains("port 0   network SSCOP data-transfer-ready"),
            "{text}"
        );
        assert!(
            text.contains("0:0.32768      2:0.32770      active"),
            "{text}"
        );
        assert!(text.ends_with("… and 2 more\n"), "{text}");
    }

    fn daemon(name: &str, role: &str) -> Daemon {
        Daemon {
            name: name.into(),
            role: role.into(),
            pid: 1,
            socket: "/x".into(),
            config: "/x".into(),
            log: "/x".into(),
            address: None,
            prefix: None,
        }
    }
}

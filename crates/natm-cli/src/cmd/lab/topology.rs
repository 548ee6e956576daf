//! What a lab's daemons are told to do: their configuration files, made from a
//! [`Topology`] (natm-topology reads and checks the file; it is re-exported here).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use natm_topology::*;

/// Addresses the lab chose for its links (UDP and TCP ports on 127.0.0.1).
#[derive(Clone, Debug, Default)]
pub struct Addresses {
    /// Per link index: (switch-or-a side address, b side address) as text.
    pub udp: BTreeMap<usize, (String, String)>,
    /// Per link index: the listening address.
    pub tcp: BTreeMap<usize, String>,
}

/// The runtime directory's file for node `name` with `suffix`.
pub fn path_in(dir: &Path, name: &str, suffix: &str) -> PathBuf {
    dir.join(format!("{name}{suffix}"))
}

fn toml_str(s: &str) -> String {
    // TOML basic strings share JSON's escapes for everything a path or a name holds.
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// The `[link]`-style fields for link `li` as seen from `node` (which listens if it is a
/// switch and the other end is a host, or if it is the link's `b` between two switches).
fn link_fields(topo: &Topology, li: usize, node: &str, dir: &Path, addrs: &Addresses) -> String {
    let l = &topo.links[li];
    let mut s = String::new();
    match l.kind {
        LinkKind::Shm => {
            let sock = dir.join(format!("link{}.sock", li + 1));
            let _ = writeln!(
                s,
                "kind = \"shm\"\npath = {}",
                toml_str(&sock.to_string_lossy())
            );
        }
        LinkKind::Udp => {
            let (pa, pb) = addrs.udp.get(&li).cloned().unwrap_or_default();
            let (local, peer) = if l.a == node { (pa, pb) } else { (pb, pa) };
            let _ = writeln!(
                s,
                "kind = \"udp\"\nlocal = {}\npeer = {}",
                toml_str(&local),
                toml_str(&peer)
            );
        }
        LinkKind::Tcp => {
            let addr = addrs.tcp.get(&li).cloned().unwrap_or_default();
            let _ = writeln!(s, "kind = \"tcp\"\naddr = {}", toml_str(&addr));
        }
    }
    let _ = writeln!(s, "rate = {}", toml_str(&l.rate));
    if topo.switches.contains(&node.to_string()) && listener_of(topo, li) != node {
        let _ = writeln!(s, "role = \"connect\"");
    }
    if !l.impair.is_empty() {
        let _ = writeln!(s, "impair = {}", toml_str(&l.impair));
    }
    s
}

/// natm-switchd's configuration for switch `sw`.
pub fn switch_config(topo: &Topology, sw: &str, dir: &Path, addrs: &Addresses) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "name = {}", toml_str(sw));
    if let Some(w) = &topo.wait {
        let _ = writeln!(s, "wait = {}", toml_str(w));
    }
    if let Some(cpu) = topo.switch_cpu {
        let _ = writeln!(s, "cpu = {cpu}");
    }
    let _ = writeln!(
        s,
        "management = {}",
        toml_str(&path_in(dir, sw, ".sock").to_string_lossy())
    );
    for (li, _) in topo.neighbours(sw) {
        let Some(port) = topo.port_of(sw, li) else {
            continue;
        };
        let _ = writeln!(s, "\n[[port]]\nid = {port}");
        s.push_str(&link_fields(topo, li, sw, dir, addrs));
    }
    for (name, a, b, p) in topo.cross_connects() {
        if name != sw {
            continue;
        }
        let _ = writeln!(
            s,
            "\n[[xc]]\na = {}\nb = {}\nqos = {}\nupc = {}\naal5 = true",
            toml_str(&a),
            toml_str(&b),
            toml_str(&p.qos),
            toml_str(&p.upc)
        );
    }
    s
}

/// natm-hostd's configuration for host `h`.
pub fn host_config(topo: &Topology, h: &str, dir: &Path, addrs: &Addresses) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "name = {}", toml_str(h));
    if let Some(w) = &topo.wait {
        let _ = writeln!(s, "wait = {}", toml_str(w));
    }
    let _ = writeln!(
        s,
        "socket = {}",
        toml_str(&path_in(dir, h, ".sock").to_string_lossy())
    );
    if let Some((li, _)) = topo.host_link(h) {
        s.push_str("\n[link]\n");
        s.push_str(&link_fields(topo, li, h, dir, addrs));
    }
    s
}

/// Which side of a link listens: the switch facing a host, or `a` between two switches.
pub fn listener_of(topo: &Topology, li: usize) -> &str {
    let l = &topo.links[li];
    if topo.hosts.contains(&l.a) {
        &l.b
    } else {
        &l.a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn listener_is_the_first_switch_between_two() {
        let text = r#"
            switch = [{ name = "s1" }, { name = "s2" }]
            host = [{ name = "h1" }, { name = "h2" }]
            link = [{ a = "h1", b = "s1" }, { a = "s1", b = "s2", kind = "udp" }, { a = "s2", b = "h2" }]
        "#;
        let t = Topology::parse(text, None).unwrap();
        assert_eq!(listener_of(&t, 0), "s1");
        assert_eq!(listener_of(&t, 1), "s1");
    }

    #[test]
    fn daemon_configs_name_the_shared_sockets() {
        let t = Topology::parse(DEFAULT_TOPOLOGY, None).unwrap();
        let dir = Path::new("/run/natm");
        let s1 = switch_config(&t, "s1", dir, &Addresses::default());
        assert!(s1.contains("management = \"/run/natm/s1.sock\""), "{s1}");
        assert!(s1.contains("[[port]]\nid = 1\nkind = \"shm\"\npath = \"/run/natm/link1.sock\""));
        assert_eq!(s1.matches("[[xc]]").count(), 10);
        let h2 = host_config(&t, "h2", dir, &Addresses::default());
        assert!(
            h2.contains("[link]\nkind = \"shm\"\npath = \"/run/natm/link2.sock\"\nrate = \"oc3\""),
            "{h2}"
        );
        // Both parse as TOML.
        toml::from_str::<toml::Value>(&s1).unwrap();
        toml::from_str::<toml::Value>(&h2).unwrap();
    }
}

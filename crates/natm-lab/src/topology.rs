//! What a lab's daemons are told to do: their configurations, made from a [`Topology`]
//! (natm-topology reads and checks the file; it is re-exported here) as the daemons' own
//! configuration types (natm-host's [`HostdConfig`], natm-switchd's [`ConfigFile`]) and
//! written with `toml::to_string`. The topology's values are typed; where a daemon's type
//! takes text, it is the value's `Display`, which the daemon parses back to the same value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use natm_host::hostd::HostdConfig;
use natm_link::endpoint::LinkConfig;
use natm_switchd::config::{ConfigFile, PortFile, Role, XcFile};

use crate::Error;

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

/// A setting of the topology (a link's `rate` or `impair`) the daemon's
/// configuration type refuses.
fn refused(node: &str, e: impl std::fmt::Display) -> Error {
    Error::Config {
        node: node.to_string(),
        why: e.to_string(),
    }
}

/// The link `li` as seen from `node`, as natm-link's [`LinkConfig`] (built from the same
/// keys a configuration file gives it, so its own checks and defaults apply).
fn link_config(
    topo: &Topology,
    li: usize,
    node: &str,
    dir: &Path,
    addrs: &Addresses,
) -> Result<LinkConfig, Error> {
    let l = &topo.links[li];
    let mut t = toml::Table::new();
    let mut put = |k: &str, v: String| {
        t.insert(k.to_string(), toml::Value::String(v));
    };
    match l.kind {
        LinkKind::Shm => {
            put("kind", "shm".into());
            let sock = dir.join(format!("link{}.sock", li + 1));
            put("path", sock.to_string_lossy().into_owned());
        }
        LinkKind::Udp => {
            let (pa, pb) = addrs.udp.get(&li).cloned().unwrap_or_default();
            let (local, peer) = if l.a == node { (pa, pb) } else { (pb, pa) };
            put("kind", "udp".into());
            put("local", local);
            put("peer", peer);
        }
        LinkKind::Tcp => {
            put("kind", "tcp".into());
            put("addr", addrs.tcp.get(&li).cloned().unwrap_or_default());
        }
    }
    put("rate", l.rate.to_string());
    if l.impair != Impairments::default() {
        put("impair", l.impair.to_string());
    }
    t.try_into().map_err(|e| refused(node, e))
}

/// natm-switchd's configuration for switch `sw`.
pub fn switch_config(
    topo: &Topology,
    sw: &str,
    dir: &Path,
    addrs: &Addresses,
) -> Result<ConfigFile, Error> {
    let mut ports = Vec::new();
    for (li, _) in topo.neighbours(sw) {
        let Some(port) = topo.port_of(sw, li) else {
            continue;
        };
        ports.push(PortFile {
            id: port,
            link: link_config(topo, li, sw, dir, addrs)?,
            role: (listener_of(topo, li) != sw).then_some(Role::Connect),
            signalling: None,
        });
    }
    let xcs = topo
        .cross_connects()
        .into_iter()
        .filter(|x| topo.switches[x.switch] == sw)
        .map(|x| XcFile {
            a: x.a,
            b: x.b,
            qos: topo.pvcs[x.pvc].qos,
            upc: Some(topo.pvcs[x.pvc].upc),
            aal5: Some(true),
        })
        .collect();
    Ok(ConfigFile {
        name: sw.to_string(),
        wait: topo.wait,
        cpu: topo.switch_cpu,
        management: path_in(dir, sw, ".sock"),
        prefix: None,
        ports,
        xcs,
        routes: Vec::new(),
    })
}

/// natm-hostd's configuration for host `h`.
pub fn host_config(
    topo: &Topology,
    h: &str,
    dir: &Path,
    addrs: &Addresses,
) -> Result<HostdConfig, Error> {
    let Some((li, _)) = topo.host_link(h) else {
        return Err(refused(h, "a host without a link"));
    };
    Ok(HostdConfig {
        name: h.to_string(),
        socket: Some(path_in(dir, h, ".sock")),
        wait: topo.wait.unwrap_or_default(),
        address: None,
        link: link_config(topo, li, h, dir, addrs)?,
    })
}

/// A daemon's configuration as the text of its file.
pub fn to_toml(config: &impl serde::Serialize) -> Result<String, Error> {
    toml::to_string(config).map_err(Error::Toml)
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
    use natm_switchd::SwitchdConfig;

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
    fn daemon_configs_name_the_shared_sockets_and_parse_back() {
        let t = Topology::parse(DEFAULT_TOPOLOGY, None).unwrap();
        let dir = Path::new("/run/natm");
        let s1 = to_toml(&switch_config(&t, "s1", dir, &Addresses::default()).unwrap()).unwrap();
        assert!(s1.contains("management = \"/run/natm/s1.sock\""), "{s1}");
        assert_eq!(s1.matches("[[xc]]").count(), 10, "{s1}");
        let c = SwitchdConfig::from_toml(&s1).unwrap();
        assert_eq!(c.ports.len(), 2);
        assert_eq!(c.xcs.len(), 10);
        assert!(c.ports.iter().all(|p| p.role == Role::Listen));
        let h2 = to_toml(&host_config(&t, "h2", dir, &Addresses::default()).unwrap()).unwrap();
        let h = HostdConfig::from_toml(&h2).unwrap();
        assert_eq!(h.socket_path(), Path::new("/run/natm/h2.sock"));
        assert_eq!(
            h.link.kind,
            natm_link::endpoint::LinkKind::Shm {
                path: "/run/natm/link2.sock".into()
            }
        );
        assert_eq!(h.link.rate.to_string(), "oc3", "{h2}");
    }

    #[test]
    fn a_dialling_trunk_end_says_connect() {
        let text = r#"
            switch = [{ name = "s1" }, { name = "s2" }]
            host = [{ name = "h1" }, { name = "h2" }]
            link = [{ a = "h1", b = "s1" }, { a = "s1", b = "s2" }, { a = "s2", b = "h2" }]
        "#;
        let t = Topology::parse(text, None).unwrap();
        let s2 = switch_config(&t, "s2", Path::new("/x"), &Addresses::default()).unwrap();
        let c = SwitchdConfig::from_toml(&to_toml(&s2).unwrap()).unwrap();
        assert_eq!(
            c.ports.iter().filter(|p| p.role == Role::Connect).count(),
            1
        );
    }

    #[test]
    fn the_daemons_read_back_the_topologys_values() {
        let text = r#"
            switch = [{ name = "s1" }]
            host = [{ name = "h1" }, { name = "h2" }]
            link = [
                { a = "h1", b = "s1", rate = "100000", impair = "loss=1%,delay=100us,seed=3" },
                { a = "h2", b = "s1", rate = "unlimited" },
            ]
            pvc = [{ a = "h1", b = "h2", vc = "0.100", qos = "cbr:pcr=20000", upc = "tag" }]
        "#;
        let t = Topology::parse(text, None).unwrap();
        let dir = Path::new("/x");
        let h1 = host_config(&t, "h1", dir, &Addresses::default()).unwrap();
        let h1 = HostdConfig::from_toml(&to_toml(&h1).unwrap()).unwrap();
        assert_eq!(
            (h1.link.rate, h1.link.impair),
            (t.links[0].rate, t.links[0].impair)
        );
        let s1 = switch_config(&t, "s1", dir, &Addresses::default()).unwrap();
        let c = SwitchdConfig::from_toml(&to_toml(&s1).unwrap()).unwrap();
        assert_eq!(c.ports[0].link.impair, t.links[0].impair);
        assert_eq!(c.ports[1].link.rate, t.links[1].rate);
        let xc = &c.xcs[0];
        let p = &t.pvcs[0];
        let x = t.cross_connects()[0];
        assert_eq!((xc.a, xc.b, xc.qos, xc.upc), (x.a, x.b, p.qos, p.upc));
    }
}

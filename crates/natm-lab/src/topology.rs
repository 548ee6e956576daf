//! What a lab's daemons are told to do: their configurations, made from a [`Topology`]
//! (natm-topology reads and checks the file; it is re-exported here) as the daemons' own
//! configuration types (natm-host's [`HostdConfig`], natm-switchd's [`ConfigFile`]) and
//! written with `toml::to_string`. The topology's values are typed; where a daemon's type
//! takes text, it is the value's `Display`, which the daemon parses back to the same value.
//!
//! Every lab signals: each switch gets its `prefix` and its `[[route]]`s (the topology's
//! [`Route`]s), every port `signalling = "network"` or `"user"` (the topology's
//! [`Side`]: a host's port and a trunk's `a` end network, a trunk's `b` end user, an
//! external's port network), and each host its `address`. An `[[external]]` on a switch is
//! one more port, an atmtcp (`kind = "tcp"`) link that listens at the entry's `listen` or
//! dials its `connect` (`role = "connect"`); on a host it is the host's link, which hostd
//! dials, so only `connect` is taken there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use natm_host::hostd::HostdConfig;
use natm_link::endpoint::{DEFAULT_RING_CELLS, LinkConfig, WaitConfig};
use natm_switch::PortId;
use natm_switchd::config::{ConfigFile, PortFile, Role, RouteEntry, SigSide, XcFile};

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

/// An external's atmtcp link at `addr` (a listening or a dialled address).
fn external_link(e: &External, addr: std::net::SocketAddr) -> LinkConfig {
    LinkConfig {
        kind: natm_link::endpoint::LinkKind::Tcp { addr },
        rate: e.rate,
        impair: Impairments::default(),
        wait: WaitConfig::default(),
        ring_cells: DEFAULT_RING_CELLS,
    }
}

/// natm-switchd's side for the topology's.
fn sig_side(side: Side) -> SigSide {
    match side {
        Side::Network => SigSide::Network,
        Side::User => SigSide::User,
    }
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
            signalling: Some(sig_side(topo.side(sw, li))),
        });
    }
    for (_, e, port) in topo.externals_of(sw) {
        let (addr, role) = match e.end {
            ExternalEnd::Listen(a) => (a, None),
            ExternalEnd::Connect(a) => (a, Some(Role::Connect)),
        };
        ports.push(PortFile {
            id: port,
            link: external_link(e, addr),
            role,
            signalling: Some(SigSide::Network),
        });
    }
    let routes = topo
        .routes_of(sw)
        .map(|r| RouteEntry {
            prefix: r.prefix,
            port: PortId(r.port),
        })
        .collect();
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
        prefix: topo.prefix_of(sw),
        ports,
        xcs,
        routes,
    })
}

/// natm-hostd's configuration for host `h`.
pub fn host_config(
    topo: &Topology,
    h: &str,
    dir: &Path,
    addrs: &Addresses,
) -> Result<HostdConfig, Error> {
    let link = match (topo.host_link(h), topo.host_external(h)) {
        (Some((li, _)), _) => link_config(topo, li, h, dir, addrs)?,
        (None, Some((_, e))) => match e.end {
            ExternalEnd::Connect(addr) => external_link(e, addr),
            ExternalEnd::Listen(addr) => {
                return Err(refused(
                    h,
                    format!(
                        "external listen {addr}: hostd dials its link; give the host's \
                         [[external]] connect instead"
                    ),
                ));
            }
        },
        (None, None) => return Err(refused(h, "a host without a link")),
    };
    Ok(HostdConfig {
        name: h.to_string(),
        socket: Some(path_in(dir, h, ".sock")),
        wait: topo.wait.unwrap_or_default(),
        address: topo.address_of(h),
        link,
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
    fn the_default_lab_signals_with_derived_addresses_and_host_routes() {
        let t = Topology::parse(DEFAULT_TOPOLOGY, None).unwrap();
        let dir = Path::new("/x");
        let s1 = switch_config(&t, "s1", dir, &Addresses::default()).unwrap();
        let c = SwitchdConfig::from_toml(&to_toml(&s1).unwrap()).unwrap();
        let prefix = "47.0005.80FFE1000000F2000001";
        assert_eq!(c.prefix.map(|p| p.to_string()).as_deref(), Some(prefix));
        assert!(
            c.ports
                .iter()
                .all(|p| p.signalling == Some(SigSide::Network))
        );
        let routes: Vec<String> = c
            .routes
            .iter()
            .map(|r| format!("{}>{}", r.prefix, r.port))
            .collect();
        assert_eq!(
            routes,
            [
                format!("{prefix}.020000000001>1"),
                format!("{prefix}.020000000002>2")
            ]
        );
        assert!(c.routes.iter().all(|r| r.prefix.bits() == 152));
        for (h, esi) in [("h1", "020000000001"), ("h2", "020000000002")] {
            let hc = host_config(&t, h, dir, &Addresses::default()).unwrap();
            let hc = HostdConfig::from_toml(&to_toml(&hc).unwrap()).unwrap();
            assert_eq!(
                hc.address.map(|a| a.to_string()),
                Some(format!("{prefix}.{esi}.00"))
            );
            assert_eq!(hc.options().address, hc.address);
        }
    }

    /// s1 – s2 – s3 in a line, h1 on s1, h2 on s2, h3 on s3; an external on s3 that dials,
    /// one on s1 that listens, and host h4 on an external.
    const LINE: &str = r#"
        switch = [{ name = "s1" }, { name = "s2", prefix = "47.0005.80ffe1000000f21a3599" }, { name = "s3" }]
        host = [{ name = "h1" }, { name = "h2", esi = "0020481a3599" }, { name = "h3" }, { name = "h4" }]
        link = [
            { a = "h1", b = "s1" }, { a = "s1", b = "s2", kind = "tcp" },
            { a = "s2", b = "s3" }, { a = "h2", b = "s2" }, { a = "s3", b = "h3" },
        ]
        external = [
            { node = "s3", connect = "127.0.0.1:2813", prefix = "39.0840" },
            { node = "s1", listen = "127.0.0.1:2812", prefix = "45.0000", rate = "100000" },
            { node = "h4", connect = "127.0.0.1:2814" },
        ]
    "#;

    fn read_switch(t: &Topology, sw: &str) -> SwitchdConfig {
        let mut addrs = Addresses::default();
        addrs.tcp.insert(1, "127.0.0.1:40001".into());
        let c = switch_config(t, sw, Path::new("/x"), &addrs).unwrap();
        SwitchdConfig::from_toml(&to_toml(&c).unwrap()).unwrap()
    }

    fn routes(c: &SwitchdConfig) -> Vec<String> {
        c.routes
            .iter()
            .map(|r| format!("{}>{}", r.prefix, r.port))
            .collect()
    }

    #[test]
    fn trunks_signal_network_at_a_and_user_at_b_and_route_to_the_next_hop() {
        let t = Topology::parse(LINE, None).unwrap();
        let (p1, p2, p3) = (
            "47.0005.80FFE1000000F2000001",
            "47.0005.80FFE1000000F21A3599",
            "47.0005.80FFE1000000F2000003",
        );
        let s2 = read_switch(&t, "s2");
        assert_eq!(s2.prefix.map(|p| p.to_string()).as_deref(), Some(p2));
        let sides: Vec<_> = s2.ports.iter().map(|p| (p.id.0, p.signalling)).collect();
        assert_eq!(
            sides,
            [
                (1, Some(SigSide::User)),
                (2, Some(SigSide::Network)),
                (3, Some(SigSide::Network))
            ]
        );
        assert_eq!(
            routes(&s2),
            [
                format!("{p2}.0020481A3599>3"),
                format!("{p1}>1"),
                "450000>1".to_string(),
                format!("{p3}>2"),
                "39.0840>2".to_string(),
            ]
        );
        let s1 = read_switch(&t, "s1");
        assert_eq!(s1.ports[1].signalling, Some(SigSide::Network));
        assert_eq!(
            routes(&s1),
            [
                format!("{p1}.020000000001>1"),
                "450000>3".to_string(),
                format!("{p2}>2"),
                format!("{p3}>2"),
                "39.0840>2".to_string(),
            ]
        );
    }

    #[test]
    fn externals_are_atmtcp_ports_on_a_switch_and_the_link_of_a_host() {
        let t = Topology::parse(LINE, None).unwrap();
        let s1 = read_switch(&t, "s1");
        let ext = &s1.ports[2];
        assert_eq!(
            (ext.id.0, ext.role, ext.signalling),
            (3, Role::Listen, Some(SigSide::Network))
        );
        assert_eq!(ext.link.describe(), "tcp 127.0.0.1:2812, 100000");
        let s3 = read_switch(&t, "s3");
        let ext = &s3.ports[2];
        assert_eq!(
            (ext.id.0, ext.role, ext.signalling),
            (3, Role::Connect, Some(SigSide::Network))
        );
        assert_eq!(ext.link.describe(), "tcp 127.0.0.1:2813, oc3");
        assert!(routes(&s3).contains(&"39.0840>3".to_string()));
        let h4 = host_config(&t, "h4", Path::new("/x"), &Addresses::default()).unwrap();
        let h4 = HostdConfig::from_toml(&to_toml(&h4).unwrap()).unwrap();
        assert_eq!(h4.link.describe(), "tcp 127.0.0.1:2814, oc3");
        assert_eq!(
            h4.address.map(|a| a.to_string()).as_deref(),
            Some("47.0005.80FFE1000000F3000004.020000000004.00")
        );
        // hostd dials: a host's external that listens is refused, naming the host.
        let t = Topology::parse(
            &LINE.replace(
                "connect = \"127.0.0.1:2814\"",
                "listen = \"127.0.0.1:2814\"",
            ),
            None,
        )
        .unwrap();
        let e = host_config(&t, "h4", Path::new("/x"), &Addresses::default()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("h4's configuration: external listen 127.0.0.1:2814"),
            "{e}"
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

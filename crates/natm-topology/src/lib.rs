//! A network's topology: switches, hosts, the links between them and the PVCs across them,
//! read from TOML and checked, with each PVC's route and the cross-connects it needs.
//!
//! ```toml
//! wait = "adaptive"   # optional, every daemon: adaptive (spin, then sleep), poll or yield
//! switch_cpu = 1      # optional: every switch daemon pins itself to this CPU
//!
//! [[switch]]
//! name = "s1"
//!
//! [[host]]
//! name = "h1"
//!
//! [[link]]             # a host's one link to a switch, or a link between two switches
//! a = "h1"
//! b = "s1"
//! kind = "shm"         # shm | udp | tcp (atmtcp framing)
//! rate = "oc3"         # unlimited | oc3 | oc12 | 25m | ds3 | cells/s
//! impair = ""          # natm-netem impairments, e.g. "loss=0.1%"
//!
//! [[pvc]]
//! a = "h1"
//! b = "h2"
//! vc = "0.100-0.109"   # one VC or a range of VCIs; the same VPI.VCI at both hosts
//! qos = "ubr"          # linux-atm qos(7) text, natm's VBR extension included
//! upc = "discard"      # off | tag | discard, at every switch on the path
//! ```
//!
//! A PVC's route is the shortest path from host to host (breadth first, ties broken by the
//! order links are listed). On each switch the PVC enters and leaves by a port, one per
//! link, numbered from 1 in the order the switch's links are listed. On host links the PVC
//! uses the VC it names; on links between two switches each PVC gets its own VC, from
//! 0.1000 upward, so PVCs that share such a link never collide.
//!
//! A file may also hold a `[sim]` table: `natm lab` ignores it and `natm sim` reads it
//! (natm-sim's scenario), so one file describes a lab and its simulation.
//!
//! This crate is arithmetic on names; it starts nothing. `natm lab` turns a topology into
//! daemon configurations, natm-sim into a simulated network.

#![forbid(unsafe_code)]

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use natm_core::qos::Qos;
use natm_core::{HeaderFormat, VcId, Vci};
use serde::Deserialize;

/// The default topology: one switch `s1`, two hosts `h1` and `h2` on OC-3c shared-memory
/// links, UBR PVCs 0.100–0.109 between them.
pub const DEFAULT_TOPOLOGY: &str = r#"
[[switch]]
name = "s1"

[[host]]
name = "h1"

[[host]]
name = "h2"

[[link]]
a = "h1"
b = "s1"
kind = "shm"
rate = "oc3"

[[link]]
a = "h2"
b = "s1"
kind = "shm"
rate = "oc3"

[[pvc]]
a = "h1"
b = "h2"
vc = "0.100-0.109"
qos = "ubr"
"#;

/// The TOML document.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    wait: Option<String>,
    #[serde(default)]
    switch_cpu: Option<usize>,
    #[serde(default)]
    switch: Vec<NodeDecl>,
    #[serde(default)]
    host: Vec<NodeDecl>,
    #[serde(default)]
    link: Vec<LinkDecl>,
    #[serde(default)]
    pvc: Vec<PvcDecl>,
    /// natm-sim's scenario settings; read by natm-sim, ignored here.
    #[serde(default)]
    #[allow(dead_code)]
    sim: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeDecl {
    name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkDecl {
    a: String,
    b: String,
    #[serde(default = "default_kind")]
    kind: String,
    #[serde(default = "default_rate")]
    rate: String,
    #[serde(default)]
    impair: String,
}

fn default_kind() -> String {
    "shm".into()
}

fn default_rate() -> String {
    "oc3".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PvcDecl {
    a: String,
    b: String,
    vc: String,
    #[serde(default = "default_qos")]
    qos: String,
    #[serde(default = "default_upc")]
    upc: String,
}

fn default_qos() -> String {
    "ubr".into()
}

fn default_upc() -> String {
    "discard".into()
}

/// How a link carries cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// Shared-memory rings (same machine).
    Shm,
    /// Cells batched in UDP datagrams.
    Udp,
    /// TCP in linux-atm's atmtcp framing, one frame per cell.
    Tcp,
}

impl LinkKind {
    fn parse(s: &str) -> Option<LinkKind> {
        match s {
            "shm" => Some(LinkKind::Shm),
            "udp" => Some(LinkKind::Udp),
            "tcp" => Some(LinkKind::Tcp),
            _ => None,
        }
    }
}

/// A link between two nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// First end (a host or a switch).
    pub a: String,
    /// Second end.
    pub b: String,
    /// Transport.
    pub kind: LinkKind,
    /// Line rate text (natm-netem's `Rate`).
    pub rate: String,
    /// Impairment text (natm-netem), empty for none.
    pub impair: String,
}

/// A PVC between two hosts, one VC (ranges are expanded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pvc {
    /// Host at one end.
    pub a: String,
    /// Host at the other end.
    pub b: String,
    /// The VC at both hosts.
    pub vc: VcId,
    /// Its QoS text, checked.
    pub qos: String,
    /// UPC action at the switches: off, tag or discard.
    pub upc: String,
}

/// A checked topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// Switch names, in file order.
    pub switches: Vec<String>,
    /// Host names, in file order.
    pub hosts: Vec<String>,
    /// Links, in file order.
    pub links: Vec<Link>,
    /// PVCs, ranges expanded.
    pub pvcs: Vec<Pvc>,
    /// How every daemon waits when idle: `adaptive` (spin briefly, then sleep) or `poll`
    /// (never sleep: lowest latency, one CPU per daemon); `None` is the daemons' default.
    pub wait: Option<String>,
    /// The CPU every switch daemon pins itself to, if any.
    pub switch_cpu: Option<usize>,
}

/// What is wrong with a topology; the text names the entry.
#[derive(Debug, PartialEq, Eq)]
pub struct TopologyError(pub String);

impl std::fmt::Display for TopologyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, TopologyError> {
    Err(TopologyError(msg.into()))
}

/// `vpi.vci` or `vpi.first-last` (same VPI).
fn parse_vc_range(s: &str) -> Result<Vec<VcId>, String> {
    let vc = |t: &str| {
        VcId::parse(t, HeaderFormat::Uni)
            .map_err(|e| format!("{s:?} is not vpi.vci or vpi.first-last: {e}"))
    };
    let (first, last) = match s.split_once('-') {
        None => {
            let only = vc(s)?;
            (only, only)
        }
        Some((first, last)) => {
            let first = vc(first)?;
            // The end of a range may repeat the VPI: 0.100-0.109 or 0.100-109.
            let last = if last.contains('.') {
                vc(last)?
            } else {
                vc(&format!("{}.{last}", first.vpi))?
            };
            if last.vpi != first.vpi {
                return Err(format!("{s:?}: a range stays within one VPI"));
            }
            (first, last)
        }
    };
    let (vpi, first, last) = (first.vpi, first.vci.get(), last.vci.get());
    if last < first || last - first >= 1024 {
        return Err(format!(
            "{s:?}: the range must run upward and hold at most 1024 VCs"
        ));
    }
    (first..=last)
        .map(|vci| {
            let vci = Vci::from_u16(vci);
            if vci.is_reserved() {
                return Err(format!("{s:?}: VCIs below 32 are reserved (I.361)"));
            }
            Ok(VcId::new(vpi, vci))
        })
        .collect()
}

impl Topology {
    /// Reads and checks a topology. `rate`, when given, replaces every link's line rate.
    pub fn parse(text: &str, rate: Option<&str>) -> Result<Topology, TopologyError> {
        let file: File = toml::from_str(text).map_err(|e| TopologyError(e.to_string()))?;
        let mut names = BTreeSet::new();
        for n in file.switch.iter().chain(&file.host) {
            if !valid_name(&n.name) {
                return err(format!(
                    "name {:?}: use 1 to 32 letters, digits, '-' or '_', starting with a letter",
                    n.name
                ));
            }
            if !names.insert(n.name.clone()) {
                return err(format!("name {:?} is used twice", n.name));
            }
        }
        let switches: Vec<String> = file.switch.into_iter().map(|n| n.name).collect();
        let hosts: Vec<String> = file.host.into_iter().map(|n| n.name).collect();
        let is_host = |n: &str| hosts.iter().any(|h| h == n);
        let is_switch = |n: &str| switches.iter().any(|s| s == n);
        let mut links = Vec::new();
        let mut host_links: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, l) in file.link.iter().enumerate() {
            let what = format!("link {} ({} - {})", i + 1, l.a, l.b);
            for end in [&l.a, &l.b] {
                if !is_host(end) && !is_switch(end) {
                    return err(format!("{what}: no host or switch is named {end:?}"));
                }
            }
            if l.a == l.b {
                return err(format!("{what}: joins a node to itself"));
            }
            if is_host(&l.a) && is_host(&l.b) {
                return err(format!(
                    "{what}: joins two hosts; a host's link goes to a switch"
                ));
            }
            for end in [&l.a, &l.b] {
                if is_host(end) {
                    *host_links.entry(end).or_default() += 1;
                }
            }
            let kind = LinkKind::parse(&l.kind).ok_or_else(|| {
                TopologyError(format!("{what}: kind {:?}: use shm, udp or tcp", l.kind))
            })?;
            let rate = rate.unwrap_or(&l.rate);
            rate.parse::<natm_core::LineRate>()
                .map_err(|e| TopologyError(format!("{what}: rate {rate:?}: {e}")))?;
            if !l.impair.is_empty() {
                l.impair
                    .parse::<natm_netem::Impairments>()
                    .map_err(|e| TopologyError(format!("{what}: impair {:?}: {e}", l.impair)))?;
            }
            links.push(Link {
                a: l.a.clone(),
                b: l.b.clone(),
                kind,
                rate: rate.to_string(),
                impair: l.impair.clone(),
            });
        }
        for h in &hosts {
            match host_links.get(h.as_str()) {
                Some(1) => {}
                None => return err(format!("host {h:?} has no link to a switch")),
                Some(n) => {
                    return err(format!(
                        "host {h:?} has {n} links; a host has one adapter and one link"
                    ));
                }
            }
        }
        let mut pvcs = Vec::new();
        let mut used: BTreeSet<(String, VcId)> = BTreeSet::new();
        for (i, p) in file.pvc.iter().enumerate() {
            let what = format!("pvc {} ({} - {} {})", i + 1, p.a, p.b, p.vc);
            for end in [&p.a, &p.b] {
                if !is_host(end) {
                    return err(format!("{what}: {end:?} is not a host"));
                }
            }
            if p.a == p.b {
                return err(format!("{what}: both ends are the same host"));
            }
            p.qos
                .parse::<Qos>()
                .map_err(|e| TopologyError(format!("{what}: qos {:?}: {e}", p.qos)))?;
            if !matches!(p.upc.as_str(), "off" | "tag" | "discard") {
                return err(format!("{what}: upc {:?}: use off, tag or discard", p.upc));
            }
            let vcs = parse_vc_range(&p.vc).map_err(|e| TopologyError(format!("{what}: {e}")))?;
            for vc in vcs {
                for end in [&p.a, &p.b] {
                    if !used.insert((end.clone(), vc)) {
                        return err(format!("{what}: {end} already has a PVC on {vc}"));
                    }
                }
                pvcs.push(Pvc {
                    a: p.a.clone(),
                    b: p.b.clone(),
                    vc,
                    qos: p.qos.clone(),
                    upc: p.upc.clone(),
                });
            }
        }
        if let Some(w) = &file.wait
            && !matches!(w.as_str(), "adaptive" | "poll" | "yield")
        {
            return err(format!("wait {w:?}: use adaptive, poll or yield"));
        }
        let topo = Topology {
            switches,
            hosts,
            links,
            pvcs,
            wait: file.wait.clone(),
            switch_cpu: file.switch_cpu,
        };
        for p in &topo.pvcs {
            if topo.route(&p.a, &p.b).is_none() {
                return err(format!(
                    "pvc {} - {} {}: no path between the hosts",
                    p.a, p.b, p.vc
                ));
            }
        }
        Ok(topo)
    }

    /// The links of node `n`, as (link index, the other end), in file order.
    pub fn neighbours<'a>(&'a self, n: &'a str) -> impl Iterator<Item = (usize, &'a str)> + 'a {
        self.links.iter().enumerate().filter_map(move |(i, l)| {
            if l.a == n {
                Some((i, l.b.as_str()))
            } else if l.b == n {
                Some((i, l.a.as_str()))
            } else {
                None
            }
        })
    }

    /// The port a link has on switch `s`: 1 + its position among `s`'s links.
    pub fn port_of(&self, s: &str, link: usize) -> Option<u16> {
        self.neighbours(s)
            .position(|(i, _)| i == link)
            .and_then(|p| u16::try_from(p + 1).ok())
    }

    /// The links from host `a` to host `b`, shortest first-found path; never through a host.
    pub fn route(&self, a: &str, b: &str) -> Option<Vec<usize>> {
        let mut prev: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
        let mut seen = BTreeSet::from([a]);
        let mut queue = VecDeque::from([a]);
        while let Some(n) = queue.pop_front() {
            if n == b {
                break;
            }
            if n != a && self.hosts.iter().any(|h| h == n) {
                continue;
            }
            for (i, m) in self.neighbours(n) {
                if seen.insert(m) {
                    prev.insert(m, (i, n));
                    queue.push_back(m);
                }
            }
        }
        let mut path = Vec::new();
        let mut n = b;
        while n != a {
            let (i, p) = *prev.get(n)?;
            path.push(i);
            n = p;
        }
        path.reverse();
        Some(path)
    }

    /// The host's one link.
    pub fn host_link(&self, h: &str) -> Option<(usize, &Link)> {
        self.links
            .iter()
            .enumerate()
            .find(|(_, l)| l.a == h || l.b == h)
    }

    /// The cross-connects each switch gets: `(switch, a endpoint, b endpoint, pvc)` with
    /// endpoints as `port:vpi.vci`, `a` toward the PVC's host `a`.
    pub fn cross_connects(&self) -> Vec<(String, String, String, &Pvc)> {
        let mut next_trunk_vci: BTreeMap<usize, u16> = BTreeMap::new();
        let mut out = Vec::new();
        for p in &self.pvcs {
            let Some(path) = self.route(&p.a, &p.b) else {
                continue;
            };
            // The VC on each link of the path.
            let vcs: Vec<String> = path
                .iter()
                .enumerate()
                .map(|(k, &li)| {
                    if k == 0 || k + 1 == path.len() {
                        p.vc.to_string()
                    } else {
                        let v = next_trunk_vci.entry(li).or_insert(1000);
                        let s = format!("0.{v}");
                        *v = v.saturating_add(1);
                        s
                    }
                })
                .collect();
            // Walk the path: node after link k is a switch until the last link.
            let mut node = p.a.as_str();
            for k in 0..path.len().saturating_sub(1) {
                let l = &self.links[path[k]];
                let sw = if l.a == node { &l.b } else { &l.a };
                let (Some(pin), Some(pout)) =
                    (self.port_of(sw, path[k]), self.port_of(sw, path[k + 1]))
                else {
                    continue;
                };
                out.push((
                    sw.clone(),
                    format!("{pin}:{}", vcs[k]),
                    format!("{pout}:{}", vcs[k + 1]),
                    p,
                ));
                node = sw;
            }
        }
        out
    }
}

fn valid_name(n: &str) -> bool {
    let mut chars = n.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && n.len() <= 32
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_topology_is_two_hosts_on_one_switch_with_ten_pvcs() {
        let t = Topology::parse(DEFAULT_TOPOLOGY, None).unwrap();
        assert_eq!(t.switches, ["s1"]);
        assert_eq!(t.hosts, ["h1", "h2"]);
        assert_eq!(t.pvcs.len(), 10);
        assert_eq!(t.pvcs[0].vc.to_string(), "0.100");
        assert_eq!(t.pvcs[9].vc.to_string(), "0.109");
        let xcs = t.cross_connects();
        assert_eq!(xcs.len(), 10);
        assert_eq!(
            (xcs[0].1.as_str(), xcs[0].2.as_str()),
            ("1:0.100", "2:0.100")
        );
    }

    #[test]
    fn pvc_ranges_stay_in_one_vpi_and_say_what_is_wrong() {
        let vcs = |s| parse_vc_range(s).map(|v| v.iter().map(VcId::to_string).collect::<Vec<_>>());
        assert_eq!(vcs("1.100").unwrap(), ["1.100"]);
        assert_eq!(vcs("0.100-0.102").unwrap(), ["0.100", "0.101", "0.102"]);
        assert_eq!(vcs("0.100-101").unwrap(), ["0.100", "0.101"]);
        for (bad, says) in [
            ("100", "expected VPI.VCI"),
            ("256.100", "VPI out of range 0..=255"),
            ("0.x", "the VCI is not a decimal number"),
            ("0.100-1.101", "a range stays within one VPI"),
            ("0.101-100", "must run upward"),
            ("0.31", "reserved"),
        ] {
            let e = vcs(bad).unwrap_err();
            assert!(
                e.starts_with(&format!("{bad:?}")) && e.contains(says),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn a_sim_table_is_left_to_the_simulator() {
        let text = format!("{DEFAULT_TOPOLOGY}\n[sim]\nduration = \"50ms\"\n");
        assert_eq!(Topology::parse(&text, None).unwrap().hosts, ["h1", "h2"]);
    }

    #[test]
    fn rate_override_replaces_every_link_rate() {
        let t = Topology::parse(DEFAULT_TOPOLOGY, Some("unlimited")).unwrap();
        assert!(t.links.iter().all(|l| l.rate == "unlimited"));
    }

    #[test]
    fn a_pvc_across_two_switches_gets_its_own_trunk_vc() {
        let text = r#"
            switch = [{ name = "s1" }, { name = "s2" }]
            host = [{ name = "h1" }, { name = "h2" }]
            link = [{ a = "h1", b = "s1" }, { a = "s1", b = "s2", kind = "udp" }, { a = "s2", b = "h2" }]
            pvc = [{ a = "h1", b = "h2", vc = "0.100-0.101" }]
        "#;
        let t = Topology::parse(text, None).unwrap();
        assert_eq!(t.route("h1", "h2"), Some(vec![0, 1, 2]));
        let xcs: Vec<_> = t
            .cross_connects()
            .into_iter()
            .map(|(s, a, b, _)| format!("{s} {a} {b}"))
            .collect();
        assert_eq!(
            xcs,
            [
                "s1 1:0.100 2:0.1000",
                "s2 1:0.1000 2:0.100",
                "s1 1:0.101 2:0.1001",
                "s2 1:0.1001 2:0.101"
            ]
        );
    }

    #[test]
    fn bad_topologies_are_refused_naming_the_entry() {
        let cases = [
            ("host = [{ name = \"h1\" }]", "host \"h1\" has no link"),
            (
                "switch = [{ name = \"s1\" }]\nhost = [{ name = \"s1\" }]",
                "used twice",
            ),
            (
                "switch = [{ name = \"s1\" }]\nlink = [{ a = \"s1\", b = \"x\" }]",
                "no host or switch is named \"x\"",
            ),
            (
                "switch = [{ name = \"s1\" }]\nhost = [{ name = \"h1\" }]\nlink = [{ a = \"h1\", b = \"s1\", kind = \"ip\" }]",
                "kind \"ip\"",
            ),
            (
                "switch = [{ name = \"s1\" }]\nhost = [{ name = \"h1\" }]\nlink = [{ a = \"h1\", b = \"s1\", rate = \"fast\" }]",
                "rate \"fast\"",
            ),
            (
                "switch = [{ name = \"s1\" }]\nhost = [{ name = \"h1\" }, { name = \"h2\" }]\nlink = [{ a = \"h1\", b = \"s1\" }, { a = \"h2\", b = \"s1\" }]\npvc = [{ a = \"h1\", b = \"h2\", vc = \"0.5\" }]",
                "reserved",
            ),
            (
                "switch = [{ name = \"s1\" }, { name = \"s2\" }]\nhost = [{ name = \"h1\" }, { name = \"h2\" }]\nlink = [{ a = \"h1\", b = \"s1\" }, { a = \"h2\", b = \"s2\" }]\npvc = [{ a = \"h1\", b = \"h2\", vc = \"0.100\" }]",
                "no path",
            ),
            ("bogus = 1", "unknown field"),
        ];
        for (text, want) in cases {
            let e = Topology::parse(text, None).unwrap_err();
            assert!(e.0.contains(want), "{text}: {e}");
        }
    }
}

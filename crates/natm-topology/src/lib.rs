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
//! Switched VCs: every switch has a 13-byte prefix (`prefix` in its `[[switch]]`, else one
//! derived from its position), every host an address (its switch's prefix + `esi` in its
//! `[[host]]`, else one derived from its position, + selector 0), every switch static routes
//! (derived from the links, plus `[[route]]` entries), and `[[external]]` entries attach
//! foreign ATM devices over atmtcp to a switch or a host. The keys, the derivation schemes
//! and the sides of trunks are in [`svc`].
//!
//! A file may also hold a `[sim]` table: `natm lab` ignores it and `natm sim` reads it
//! (natm-sim's scenario), so one file describes a lab and its simulation.
//!
//! Every value is parsed here, once, into the type its users take: a link's rate and
//! impairments as natm-core's [`LineRate`] and natm-netem's [`Impairments`], a PVC's VC, QoS and UPC as
//! [`VcId`], [`Qos`] and natm-switch's [`Upc`], a cross-connect's ends as natm-switch's
//! [`Endpoint`]. A value that does not parse is a [`TopologyError`] naming the entry, the
//! key and what is wrong; nothing downstream parses the text again or falls back to a
//! default. Where a daemon's configuration file wants text, it is the value's `Display`,
//! which parses back to the same value.
//!
//! This crate is arithmetic on names; it starts nothing. `natm lab` turns a topology into
//! daemon configurations, natm-sim into a simulated network.

#![forbid(unsafe_code)]

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::str::FromStr;

use natm_core::addr::{Aesa, AesaPrefix};
use natm_core::qos::Qos;
use natm_core::{HeaderFormat, VcId, Vci};
pub use natm_core::{IdleWait, LineRate};
pub use natm_netem::Impairments;
pub use natm_switch::{Endpoint, Upc};
use serde::Deserialize;
pub use svc::{External, ExternalEnd, Route, RouteTo, Side, derived_esi, derived_prefix};

pub mod svc;

/// The default lab's network as TOML text, without PVCs: one switch `s1`, two hosts `h1`
/// and `h2` on OC-3c shared-memory links. A macro, so that `concat!` builds
/// [`DEFAULT_TOPOLOGY`] and natm-sim's default scenario from the one text.
#[macro_export]
macro_rules! default_network {
    () => {
        r#"
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
"#
    };
}

/// The default topology: [`default_network!`] (one switch `s1`, two hosts `h1` and `h2` on
/// OC-3c shared-memory links) with UBR PVCs 0.100–0.109 between them.
pub const DEFAULT_TOPOLOGY: &str = concat!(
    default_network!(),
    r#"
[[pvc]]
a = "h1"
b = "h2"
vc = "0.100-0.109"
qos = "ubr"
"#
);

/// The TOML document.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    wait: Option<String>,
    #[serde(default)]
    switch_cpu: Option<usize>,
    #[serde(default)]
    switch: Vec<SwitchDecl>,
    #[serde(default)]
    host: Vec<HostDecl>,
    #[serde(default)]
    link: Vec<LinkDecl>,
    #[serde(default)]
    pvc: Vec<PvcDecl>,
    #[serde(default)]
    external: Vec<svc::ExternalDecl>,
    #[serde(default)]
    route: Vec<svc::RouteDecl>,
    /// natm-sim's scenario settings; read by natm-sim, ignored here.
    #[serde(default)]
    #[allow(dead_code)]
    sim: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SwitchDecl {
    name: String,
    #[serde(default)]
    prefix: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostDecl {
    name: String,
    #[serde(default)]
    esi: Option<String>,
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
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// First end (a host or a switch).
    pub a: String,
    /// Second end.
    pub b: String,
    /// Transport.
    pub kind: LinkKind,
    /// Line rate (`rate`, default OC-3c).
    pub rate: LineRate,
    /// Impairments (`impair`, default none).
    pub impair: Impairments,
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
    /// Its QoS (`qos`, default UBR), `tx` from `a` to `b`.
    pub qos: Qos,
    /// What the switches on its path do with non-conforming cells (`upc`, default discard).
    pub upc: Upc,
}

/// A cross-connect a PVC needs on a switch of its path ([`Topology::cross_connects`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PvcCrossConnect {
    /// The switch, an index into [`Topology::switches`].
    pub switch: usize,
    /// The end toward the PVC's host `a`.
    pub a: Endpoint,
    /// The end toward its host `b`.
    pub b: Endpoint,
    /// The PVC, an index into [`Topology::pvcs`].
    pub pvc: usize,
}

/// A checked topology.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    /// Switch names, in file order.
    pub switches: Vec<String>,
    /// Host names, in file order.
    pub hosts: Vec<String>,
    /// Links, in file order.
    pub links: Vec<Link>,
    /// PVCs, ranges expanded.
    pub pvcs: Vec<Pvc>,
    /// How every daemon waits when idle; `None` is the daemons' default.
    pub wait: Option<IdleWait>,
    /// The CPU every switch daemon pins itself to, if any.
    pub switch_cpu: Option<usize>,
    /// Each switch's 13-byte prefix, in the order of [`Topology::switches`].
    pub prefixes: Vec<AesaPrefix>,
    /// Each host's address, in the order of [`Topology::hosts`].
    pub addresses: Vec<Aesa>,
    /// The foreign peers over atmtcp (`[[external]]`), in file order.
    pub externals: Vec<External>,
    /// Every switch's static routes, switch by switch ([`svc`]).
    pub routes: Vec<Route>,
}

/// What is wrong with a topology; the text names the entry.
#[derive(Debug, PartialEq, Eq)]
pub struct TopologyError(pub String);

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TopologyError {}

fn err<T>(msg: impl Into<String>) -> Result<T, TopologyError> {
    Err(TopologyError(msg.into()))
}

/// `text` as a `T`, or an error naming the entry (`what`), the key and what is wrong.
fn value<T: FromStr>(what: &str, key: &str, text: &str) -> Result<T, TopologyError>
where
    T::Err: fmt::Display,
{
    text.parse()
        .map_err(|e| TopologyError(format!("{what}: {key} {text:?}: {e}")))
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
        let rate: Option<LineRate> = rate
            .map(|r| value("the rate override", "rate", r))
            .transpose()?;
        let mut names = BTreeSet::new();
        let node_names = file.switch.iter().map(|s| &s.name);
        for n in node_names.chain(file.host.iter().map(|h| &h.name)) {
            if !valid_name(n) {
                return err(format!(
                    "name {n:?}: use 1 to 32 letters, digits, '-' or '_', starting with a letter"
                ));
            }
            if !names.insert(n.clone()) {
                return err(format!("name {n:?} is used twice"));
            }
        }
        let switches: Vec<String> = file.switch.iter().map(|n| n.name.clone()).collect();
        let hosts: Vec<String> = file.host.iter().map(|n| n.name.clone()).collect();
        let externals = svc::externals(&file.external, &switches, &hosts, rate)?;
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
            let rate = match rate {
                Some(r) => r,
                None => value(&what, "rate", &l.rate)?,
            };
            // natm-netem reads "" and "none" as no impairment.
            let impair = value(&what, "impair", &l.impair)?;
            links.push(Link {
                a: l.a.clone(),
                b: l.b.clone(),
                kind,
                rate,
                impair,
            });
        }
        for h in &hosts {
            let ext = externals.iter().filter(|e| e.node == *h).count();
            match (host_links.get(h.as_str()), ext) {
                (Some(1), 0) | (None, 1) => {}
                (None, 0) => {
                    return err(format!(
                        "host {h:?} has no link to a switch and no [[external]]"
                    ));
                }
                (Some(_), 1..) => {
                    return err(format!(
                        "host {h:?} has a link to a switch and an [[external]]; a host has \
                         one adapter and one link: give it one or the other"
                    ));
                }
                (Some(n), _) => {
                    return err(format!(
                        "host {h:?} has {n} links; a host has one adapter and one link"
                    ));
                }
                (None, n) => {
                    return err(format!(
                        "host {h:?} has {n} [[external]] entries; a host has one adapter and \
                         one link"
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
            let qos: Qos = value(&what, "qos", &p.qos)?;
            let upc: Upc = value(&what, "upc", &p.upc)?;
            let vcs =
                parse_vc_range(&p.vc).map_err(|e| TopologyError(format!("{what}: vc {e}")))?;
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
                    qos,
                    upc,
                });
            }
        }
        let wait = match &file.wait {
            Some(w) => Some(value::<IdleWait>("the topology", "wait", w)?),
            None => None,
        };
        let mut topo = Topology {
            switches,
            hosts,
            links,
            pvcs,
            wait,
            switch_cpu: file.switch_cpu,
            prefixes: Vec::new(),
            addresses: Vec::new(),
            externals,
            routes: Vec::new(),
        };
        let given: Vec<Option<String>> = file.switch.iter().map(|s| s.prefix.clone()).collect();
        topo.prefixes = svc::switch_prefixes(&given, &topo)?;
        let given: Vec<Option<String>> = file.host.iter().map(|h| h.esi.clone()).collect();
        topo.addresses = svc::host_addresses(&given, &topo)?;
        topo.routes = svc::routes(&file.route, &topo)?;
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

    /// The cross-connects the switches get, in PVC order and along each PVC's path.
    pub fn cross_connects(&self) -> Vec<PvcCrossConnect> {
        let mut next_trunk_vci: BTreeMap<usize, u16> = BTreeMap::new();
        let mut out = Vec::new();
        for (pi, p) in self.pvcs.iter().enumerate() {
            let Some(path) = self.route(&p.a, &p.b) else {
                continue;
            };
            // The VC on each link of the path, as (VPI, VCI).
            let vcs: Vec<(u16, u16)> = path
                .iter()
                .enumerate()
                .map(|(k, &li)| {
                    if k == 0 || k + 1 == path.len() {
                        (p.vc.vpi.get(), p.vc.vci.get())
                    } else {
                        let v = next_trunk_vci.entry(li).or_insert(1000);
                        let vc = (0, *v);
                        *v = v.saturating_add(1);
                        vc
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
                let switch = self
                    .switches
                    .iter()
                    .position(|s| s == sw)
                    .expect("a path's inner nodes are switches (hosts end paths)");
                out.push(PvcCrossConnect {
                    switch,
                    a: Endpoint::vc(pin, vcs[k].0, vcs[k].1),
                    b: Endpoint::vc(pout, vcs[k + 1].0, vcs[k + 1].1),
                    pvc: pi,
                });
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
            (xcs[0].a.to_string().as_str(), xcs[0].b.to_string().as_str()),
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
        assert!(t.links.iter().all(|l| l.rate.to_string() == "unlimited"));
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
            .map(|x| format!("{} {} {}", t.switches[x.switch], x.a, x.b))
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
    /// Two hosts on one switch, the host link and the PVC with `link` and `pvc` added to
    /// their keys.
    fn one_pvc(link: &str, pvc: &str) -> String {
        format!(
            "switch = [{{ name = \"s1\" }}]\nhost = [{{ name = \"h1\" }}, {{ name = \"h2\" }}]\n\
             link = [{{ a = \"h1\", b = \"s1\"{link} }}, {{ a = \"h2\", b = \"s1\" }}]\n\
             pvc = [{{ a = \"h1\", b = \"h2\", vc = \"0.100\"{pvc} }}]\n"
        )
    }

    #[test]
    fn a_value_that_does_not_parse_is_refused_naming_the_entry_and_the_key() {
        let link = "link 1 (h1 - s1): ";
        let pvc = "pvc 1 (h1 - h2 0.100): ";
        for (text, entry, key, why) in [
            (
                one_pvc(", rate = \"oc48\"", ""),
                link,
                "rate \"oc48\"",
                "rate",
            ),
            (one_pvc(", rate = \"0\"", ""), link, "rate \"0\"", "rate"),
            (
                one_pvc(", impair = \"loss=2\"", ""),
                link,
                "impair \"loss=2\"",
                "probability",
            ),
            (
                one_pvc(", impair = \"delay=5\"", ""),
                link,
                "impair \"delay=5\"",
                "unit",
            ),
            (
                one_pvc("", ", upc = \"drop\""),
                pvc,
                "upc \"drop\"",
                "off, tag or discard",
            ),
            (
                one_pvc("", ", qos = \"abr:pcr=x\""),
                pvc,
                "qos \"abr:pcr=x\"",
                "",
            ),
            (one_pvc("", ", qos = \"fast\""), pvc, "qos \"fast\"", ""),
        ] {
            let e = Topology::parse(&text, None).unwrap_err().0;
            assert!(e.starts_with(&format!("{entry}{key}: ")), "{text}: {e}");
            assert!(e.contains(why), "{text}: {e}");
        }
        for (vc, why) in [
            ("0.5", "reserved"),
            ("0.x", "VCI is not a decimal number"),
            ("300.100", "VPI"),
            ("0.100-1.101", "within one VPI"),
        ] {
            let text = one_pvc("", "").replace("\"0.100\"", &format!("{vc:?}"));
            let e = Topology::parse(&text, None).unwrap_err().0;
            let entry = format!("pvc 1 (h1 - h2 {vc}): vc {vc:?}");
            assert!(e.starts_with(&entry) && e.contains(why), "{vc}: {e}");
        }
        let e = Topology::parse(&format!("wait = \"spin\"\n{DEFAULT_TOPOLOGY}"), None).unwrap_err();
        assert_eq!(
            e.0,
            "the topology: wait \"spin\": use adaptive, poll or yield"
        );
        let e = Topology::parse(DEFAULT_TOPOLOGY, Some("fast")).unwrap_err();
        assert!(e.0.starts_with("the rate override: rate \"fast\": "), "{e}");
    }

    #[test]
    fn typed_values_print_text_that_parses_back_to_them() {
        let text = one_pvc(
            ", rate = \"100000\", impair = \"loss=1%,burst=0.5%/8,hec=1e-4,delay=100us,jitter=20us:exp,seed=7\"",
            ", qos = \"vbr,aal5:pcr=30000,scr=10000,mbs=40,cdvt=500\", upc = \"tag\"",
        );
        let t = Topology::parse(&format!("wait = \"yield\"\n{text}"), None).unwrap();
        let l = &t.links[0];
        assert_eq!(l.rate.to_string().parse::<LineRate>(), Ok(l.rate));
        assert_eq!(
            l.impair.to_string().parse::<Impairments>().unwrap(),
            l.impair
        );
        assert_ne!(l.impair, Impairments::default());
        let p = &t.pvcs[0];
        assert_eq!(p.qos.to_string().parse::<Qos>(), Ok(p.qos));
        assert_eq!(p.upc.to_string().parse::<Upc>(), Ok(p.upc));
        assert_eq!(p.upc, Upc::Tag);
        assert_eq!(p.vc.to_string(), "0.100");
        let w = t.wait.unwrap();
        assert_eq!(w.to_string().parse::<IdleWait>(), Ok(w));
        // The whole topology, written back from its values, is the same topology.
        let again = one_pvc(
            &format!(", rate = \"{}\", impair = \"{}\"", l.rate, l.impair),
            &format!(", qos = \"{}\", upc = \"{}\"", p.qos, p.upc),
        )
        .replace("\"0.100\"", &format!("\"{}\"", p.vc));
        let again = Topology::parse(&format!("wait = \"{w}\"\n{again}"), None).unwrap();
        assert_eq!(again, t);
        for x in t.cross_connects() {
            assert_eq!(x.a.to_string().parse::<Endpoint>(), Ok(x.a));
            assert_eq!(x.b.to_string().parse::<Endpoint>(), Ok(x.b));
        }
    }

    #[test]
    fn defaults_are_oc3_no_impairment_ubr_and_discard() {
        let t = Topology::parse(&one_pvc("", ""), None).unwrap();
        assert_eq!(t.links[0].rate, LineRate::default());
        assert_eq!(t.links[0].impair, Impairments::default());
        assert_eq!(t.pvcs[0].qos, "ubr".parse::<Qos>().unwrap());
        assert_eq!(t.pvcs[0].upc, Upc::Discard);
        assert_eq!(t.wait, None);
    }
}

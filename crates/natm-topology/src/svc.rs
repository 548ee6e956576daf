//! What switched VCs need of a topology: every switch's prefix, every host's address, the
//! static routes of every switch, the sides of trunks, and foreign peers over atmtcp.
//!
//! ```toml
//! [[switch]]
//! name = "s1"
//! prefix = "47.0005.80ffe1000000f21a3599"   # optional: the switch's 13-byte prefix
//!
//! [[host]]
//! name = "h1"
//! esi = "0020481a3599"                      # optional: 6 bytes; address = prefix + esi + 00
//!
//! [[route]]                 # more routes than the derived ones
//! switch = "s1"
//! prefix = "39.0840"        # any length; longest prefix wins at the switch
//! via = "s2"                # a node linked to the switch (the first such link), or
//! # port = 3                # one of the switch's ports
//!
//! [[external]]              # a foreign ATM device over an atmtcp connection
//! node = "s1"               # a switch or a host
//! listen = "127.0.0.1:2812" # or connect = "127.0.0.1:2812" (IP:port, exactly one)
//! prefix = "47.0005.80ffe1000000f21a3599"   # on a switch: addresses routed to it (required)
//! rate = "oc3"              # optional, default oc3 (as a link's; `--rate` replaces it too)
//! ```
//!
//! **Prefixes.** A switch without `prefix` gets `47.0005.80FFE1000000.F2` followed by its
//! 1-based position among the switches as three bytes (`s1` of a file listing it first:
//! `47.0005.80FFE1000000F2000001`): ICD 0005 with natm's HO-DSP, marker byte `F2`. A
//! `prefix` given must be 13 bytes (26 hex digits). Two switches with one prefix are
//! refused naming both, a derived prefix that equals a given one too (give that switch a
//! prefix).
//!
//! **Addresses.** A host's address is its switch's prefix + its ESI + selector 0. A host
//! without `esi` gets `02.00.00` followed by its 1-based position among the hosts as three
//! bytes (`020000000001`: a locally administered MAC address). Two hosts with one address
//! are refused naming both. A host whose link is an `[[external]]` has no switch: its
//! prefix is that entry's `prefix` (13 bytes) or, without one, `47.0005.80FFE1000000.F3`
//! followed by the host's 1-based position; these prefixes may not equal a switch's.
//! Hosts are registered with their switch by this configuration (no ILMI).
//!
//! **Routes.** Each switch routes, in this order: each attached host's 19-byte prefix
//! (152 bits: any selector) to the host's port; each external of its own its `prefix` to
//! the external's port; every other switch's prefix, and the prefixes of that switch's
//! externals, to the port of the first link of the shortest path toward it (the same
//! breadth-first search, in link order, as PVCs use). Then each `[[route]]` for it: one
//! whose prefix the switch already routes replaces that route. A switch that would route
//! one prefix to two ports is refused naming both routes, as are two `[[route]]`s of one
//! switch and prefix.
//!
//! **Sides.** A host's port is the network side; on a link between two switches the link's
//! `a` end is the network side (it assigns the trunk's VCIs), the `b` end the user side.
//!
//! **Externals.** On a switch, an `[[external]]` adds a port after the switch's links (in
//! the order of the entries) whose link is an atmtcp TCP connection (`listen`: the switch
//! listens there; `connect`: it dials there), signalling as the network side, with a
//! route of `prefix` to it. On a host it is the host's link instead of a link to a switch
//! (a host has either one `[[link]]` to a switch or one `[[external]]`, never both), the
//! host being the user side; hostd dials, so natm lab takes only `connect` there.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use natm_core::LineRate;
use natm_core::addr::{Aesa, AesaPrefix, Esi};
use serde::Deserialize;

use crate::{Topology, TopologyError, err, value};

/// The first nine bytes of a derived prefix: AFI 47 (ICD), ICD 0005, HO-DSP 80FFE1000000.
const DERIVED_BASE: [u8; 9] = [0x47, 0x00, 0x05, 0x80, 0xff, 0xe1, 0x00, 0x00, 0x00];
/// The tenth byte of a switch's derived prefix.
pub const SWITCH_MARK: u8 = 0xf2;
/// The tenth byte of the derived prefix of a host on an external link.
pub const HOST_MARK: u8 = 0xf3;
/// The first three bytes of a derived ESI.
const ESI_BASE: [u8; 3] = [0x02, 0x00, 0x00];
/// The most switches (or hosts) a three-byte position numbers.
const MAX_NODES: usize = 0xff_ffff;

/// A derived 13-byte prefix: [`DERIVED_BASE`], `mark`, then `index + 1` in three bytes.
pub fn derived_prefix(mark: u8, index: usize) -> AesaPrefix {
    let mut a = [0u8; 20];
    a[..9].copy_from_slice(&DERIVED_BASE);
    a[9] = mark;
    let n = u32::try_from(index + 1).unwrap_or(u32::MAX).to_be_bytes();
    a[10..13].copy_from_slice(&n[1..]);
    AesaPrefix::switch_of(&Aesa(a))
}

/// A derived ESI: `02 00 00`, then `index + 1` in three bytes.
pub fn derived_esi(index: usize) -> Esi {
    let mut e = [0u8; 6];
    e[..3].copy_from_slice(&ESI_BASE);
    let n = u32::try_from(index + 1).unwrap_or(u32::MAX).to_be_bytes();
    e[3..].copy_from_slice(&n[1..]);
    Esi(e)
}

/// Which side of the UNI a port's signalling is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The network side: a host's port, a trunk's `a` end, an external on a switch.
    Network,
    /// The user side: a trunk's `b` end, a host.
    User,
}

/// How an external's atmtcp connection is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExternalEnd {
    /// The node listens at this address (`listen`).
    Listen(SocketAddr),
    /// The node dials this address (`connect`).
    Connect(SocketAddr),
}

/// A foreign ATM device attached over atmtcp (`[[external]]`).
#[derive(Clone, Debug, PartialEq)]
pub struct External {
    /// The switch or host it is attached to.
    pub node: String,
    /// Listen or connect, and where.
    pub end: ExternalEnd,
    /// On a switch: the addresses routed to it. On a host: the host's 13-byte prefix
    /// (given, or derived with [`HOST_MARK`]).
    pub prefix: AesaPrefix,
    /// The line rate of the connection (`rate`, default OC-3c).
    pub rate: LineRate,
}

/// What a route leads to, for status and error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteTo {
    /// A host attached to the switch (an index into [`Topology::hosts`]).
    Host(usize),
    /// Another switch (an index into [`Topology::switches`]).
    Switch(usize),
    /// An external (an index into [`Topology::externals`]).
    External(usize),
    /// A `[[route]]` entry (0-based, in file order).
    Entry(usize),
}

/// A switch's static route: calls to addresses under `prefix` leave by `port`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// The switch, an index into [`Topology::switches`].
    pub switch: usize,
    /// The address prefix.
    pub prefix: AesaPrefix,
    /// The port.
    pub port: u16,
    /// Why the route is there.
    pub to: RouteTo,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExternalDecl {
    node: String,
    #[serde(default)]
    listen: Option<String>,
    #[serde(default)]
    connect: Option<String>,
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    rate: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RouteDecl {
    switch: String,
    prefix: String,
    #[serde(default)]
    via: Option<String>,
    #[serde(default)]
    port: Option<u16>,
}

/// A 13-byte prefix from `text`, or an error naming the entry and the key.
fn prefix13(what: &str, key: &str, text: &str) -> Result<AesaPrefix, TopologyError> {
    let p: AesaPrefix = value(what, key, text)?;
    if p.bits() != 104 {
        return err(format!(
            "{what}: {key} {text:?}: the prefix of an address is 13 bytes (26 hex digits), not {} bits",
            p.bits()
        ));
    }
    Ok(p)
}

/// The `[[external]]` entries, checked; `rate` overrides every rate.
pub(crate) fn externals(
    decls: &[ExternalDecl],
    switches: &[String],
    hosts: &[String],
    rate: Option<LineRate>,
) -> Result<Vec<External>, TopologyError> {
    let mut out: Vec<External> = Vec::new();
    for (i, d) in decls.iter().enumerate() {
        let what = format!("external {} ({})", i + 1, d.node);
        let host = hosts.iter().position(|h| *h == d.node);
        if host.is_none() && !switches.contains(&d.node) {
            return err(format!("{what}: no host or switch is named {:?}", d.node));
        }
        let end = match (&d.listen, &d.connect) {
            (Some(l), None) => ExternalEnd::Listen(value(&what, "listen", l)?),
            (None, Some(c)) => ExternalEnd::Connect(value(&what, "connect", c)?),
            _ => {
                return err(format!(
                    "{what}: give exactly one of listen and connect (IP:port)"
                ));
            }
        };
        if let ExternalEnd::Listen(a) = end
            && let Some(j) = out.iter().position(|e| e.end == ExternalEnd::Listen(a))
        {
            return err(format!(
                "{what}: listen {a} is external {} ({})'s too",
                j + 1,
                out[j].node
            ));
        }
        let prefix = match (host, &d.prefix) {
            (None, None) => {
                return err(format!(
                    "{what}: prefix: required on a switch (the addresses routed to the external)"
                ));
            }
            (None, Some(p)) => value(&what, "prefix", p)?,
            (Some(_), Some(p)) => prefix13(&what, "prefix", p)?,
            (Some(h), None) => derived_prefix(HOST_MARK, h),
        };
        let rate = match (rate, &d.rate) {
            (Some(r), _) => r,
            (None, Some(r)) => value(&what, "rate", r)?,
            (None, None) => LineRate::default(),
        };
        out.push(External {
            node: d.node.clone(),
            end,
            prefix,
            rate,
        });
    }
    Ok(out)
}

/// Every switch's prefix, in switch order: given ones first, so that a derived prefix
/// equal to a given one is the one refused. No switch may have the prefix of a host on an
/// external (`topo.externals` is filled in).
pub(crate) fn switch_prefixes(
    given: &[Option<String>],
    topo: &Topology,
) -> Result<Vec<AesaPrefix>, TopologyError> {
    if topo.switches.len() > MAX_NODES || topo.hosts.len() > MAX_NODES {
        return err(format!(
            "at most {MAX_NODES} switches and {MAX_NODES} hosts"
        ));
    }
    let what = |i: usize| format!("switch {} ({})", i + 1, topo.switches[i]);
    let mut owner: BTreeMap<AesaPrefix, String> = BTreeMap::new();
    for (i, e) in topo.externals.iter().enumerate() {
        if topo.hosts.contains(&e.node) {
            owner.insert(e.prefix, format!("external {} ({})'s", i + 1, e.node));
        }
    }
    let mut out = vec![AesaPrefix::ALL; topo.switches.len()];
    for (i, g) in given.iter().enumerate() {
        if let Some(text) = g {
            let p = prefix13(&what(i), "prefix", text)?;
            if let Some(o) = owner.get(&p) {
                return err(format!("{}: prefix {p} is {o} too", what(i)));
            }
            owner.insert(p, format!("{}'s", what(i)));
            out[i] = p;
        }
    }
    for (i, g) in given.iter().enumerate() {
        if g.is_none() {
            let p = derived_prefix(SWITCH_MARK, i);
            if let Some(o) = owner.get(&p) {
                return err(format!(
                    "{}: its derived prefix {p} is {o}; give {} a prefix",
                    what(i),
                    topo.switches[i]
                ));
            }
            owner.insert(p, format!("{}'s", what(i)));
            out[i] = p;
        }
    }
    Ok(out)
}

/// Every host's address, in host order (needs the switches' prefixes).
pub(crate) fn host_addresses(
    given: &[Option<String>],
    topo: &Topology,
) -> Result<Vec<Aesa>, TopologyError> {
    let mut by_addr: BTreeMap<Aesa, usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(topo.hosts.len());
    for (i, h) in topo.hosts.iter().enumerate() {
        let what = format!("host {} ({h})", i + 1);
        let esi = match &given[i] {
            Some(text) => value::<Esi>(&what, "esi", text)?,
            None => derived_esi(i),
        };
        let prefix = if let Some((_, e)) = topo.host_external(h) {
            e.prefix
        } else {
            let (_, l) = topo
                .host_link(h)
                .ok_or_else(|| TopologyError(format!("{what}: no link")))?;
            let sw = if l.a == *h { &l.b } else { &l.a };
            topo.prefix_of(sw)
                .ok_or_else(|| TopologyError(format!("{what}: {sw} has no prefix")))?
        };
        let addr = prefix
            .address(esi, 0)
            .ok_or_else(|| TopologyError(format!("{what}: prefix {prefix} is not 13 bytes")))?;
        if let Some(&j) = by_addr.get(&addr) {
            return err(format!(
                "{what}: address {addr} is host {} ({})'s too; give one of them another esi",
                j + 1,
                topo.hosts[j]
            ));
        }
        by_addr.insert(addr, i);
        out.push(addr);
    }
    Ok(out)
}

impl Topology {
    /// Switch `sw`'s 13-byte prefix.
    pub fn prefix_of(&self, sw: &str) -> Option<AesaPrefix> {
        let i = self.switches.iter().position(|s| s == sw)?;
        self.prefixes.get(i).copied()
    }

    /// Host `h`'s address.
    pub fn address_of(&self, h: &str) -> Option<Aesa> {
        let i = self.hosts.iter().position(|x| x == h)?;
        self.addresses.get(i).copied()
    }

    /// Host `h`'s external link, if its link is one: (index into
    /// [`Topology::externals`], the entry).
    pub fn host_external(&self, h: &str) -> Option<(usize, &External)> {
        if !self.hosts.iter().any(|x| x == h) {
            return None;
        }
        self.externals.iter().enumerate().find(|(_, e)| e.node == h)
    }

    /// The port external `i` has on its switch: after the switch's links, in the order of
    /// the switch's externals. `None` for an external on a host.
    pub fn external_port(&self, i: usize) -> Option<u16> {
        let e = self.externals.get(i)?;
        if !self.switches.contains(&e.node) {
            return None;
        }
        let links = self.neighbours(&e.node).count();
        let before = self.externals[..i]
            .iter()
            .filter(|x| x.node == e.node)
            .count();
        u16::try_from(links + before + 1).ok()
    }

    /// The externals of switch `sw`, as (index, entry, port), in file order.
    pub fn externals_of<'a>(
        &'a self,
        sw: &'a str,
    ) -> impl Iterator<Item = (usize, &'a External, u16)> + 'a {
        self.externals
            .iter()
            .enumerate()
            .filter(move |(_, e)| e.node == sw)
            .filter_map(|(i, e)| Some((i, e, self.external_port(i)?)))
    }

    /// The side switch `sw`'s end of link `li` signals as: [`Side::Network`] toward a host
    /// and at a trunk's `a` end, [`Side::User`] at a trunk's `b` end.
    pub fn side(&self, sw: &str, li: usize) -> Side {
        match self.links.get(li) {
            Some(l) if l.b == sw && !self.hosts.contains(&l.a) => Side::User,
            _ => Side::Network,
        }
    }

    /// Switch `sw`'s routes, in the order the module documentation gives.
    pub fn routes_of<'a>(&'a self, sw: &'a str) -> impl Iterator<Item = &'a Route> + 'a {
        let i = self.switches.iter().position(|s| s == sw);
        self.routes.iter().filter(move |r| Some(r.switch) == i)
    }

    /// What a route leads to, in words.
    pub fn route_target(&self, to: RouteTo) -> String {
        match to {
            RouteTo::Host(h) => format!("host {}", self.hosts[h]),
            RouteTo::Switch(s) => format!("switch {}", self.switches[s]),
            RouteTo::External(e) => format!("external {} ({})", e + 1, self.externals[e].node),
            RouteTo::Entry(r) => format!("route {}", r + 1),
        }
    }
}

/// Every switch's routes (needs prefixes, addresses and externals).
pub(crate) fn routes(decls: &[RouteDecl], topo: &Topology) -> Result<Vec<Route>, TopologyError> {
    let mut out = Vec::new();
    for (si, sw) in topo.switches.iter().enumerate() {
        let mut table: Vec<Route> = Vec::new();
        let mut add = |prefix: AesaPrefix, port: u16, to: RouteTo| match table
            .iter()
            .find(|r| r.prefix == prefix)
        {
            Some(r) if r.port == port => Ok(()),
            Some(r) => err(format!(
                "switch {} ({sw}): {prefix} would leave by port {} ({}) and by port {port} ({})",
                si + 1,
                r.port,
                topo.route_target(r.to),
                topo.route_target(to)
            )),
            None => {
                table.push(Route {
                    switch: si,
                    prefix,
                    port,
                    to,
                });
                Ok(())
            }
        };
        for (li, other) in topo.neighbours(sw) {
            let (Some(h), Some(port)) = (
                topo.hosts.iter().position(|x| x == other),
                topo.port_of(sw, li),
            ) else {
                continue;
            };
            add(
                AesaPrefix::of(&topo.addresses[h], 152),
                port,
                RouteTo::Host(h),
            )?;
        }
        for (ei, e, port) in topo.externals_of(sw) {
            add(e.prefix, port, RouteTo::External(ei))?;
        }
        for (ti, t) in topo.switches.iter().enumerate() {
            if ti == si {
                continue;
            }
            let Some(port) = topo
                .route(sw, t)
                .and_then(|path| path.first().copied())
                .and_then(|li| topo.port_of(sw, li))
            else {
                continue;
            };
            add(topo.prefixes[ti], port, RouteTo::Switch(ti))?;
            for (ei, e, _) in topo.externals_of(t) {
                add(e.prefix, port, RouteTo::External(ei))?;
            }
        }
        out.append(&mut table);
    }
    let mut given: BTreeMap<(usize, AesaPrefix), usize> = BTreeMap::new();
    for (i, d) in decls.iter().enumerate() {
        let what = format!("route {} ({})", i + 1, d.switch);
        let Some(si) = topo.switches.iter().position(|s| *s == d.switch) else {
            return err(format!("{what}: switch: no switch is named {:?}", d.switch));
        };
        let prefix: AesaPrefix = value(&what, "prefix", &d.prefix)?;
        let ports = topo.neighbours(&d.switch).count() + topo.externals_of(&d.switch).count();
        let port = match (&d.via, d.port) {
            (Some(v), None) => topo
                .neighbours(&d.switch)
                .find(|(_, n)| n == v)
                .and_then(|(li, _)| topo.port_of(&d.switch, li))
                .ok_or_else(|| {
                    TopologyError(format!(
                        "{what}: via {v:?}: no link joins {} and {v}",
                        d.switch
                    ))
                })?,
            (None, Some(p)) if p >= 1 && usize::from(p) <= ports => p,
            (None, Some(p)) => {
                return err(format!(
                    "{what}: port {p}: {} has ports 1 to {ports}",
                    d.switch
                ));
            }
            _ => return err(format!("{what}: give exactly one of via and port")),
        };
        if let Some(j) = given.insert((si, prefix), i) {
            return err(format!(
                "{what}: {} already routes {prefix} by route {}",
                d.switch,
                j + 1
            ));
        }
        out.retain(|r| !(r.switch == si && r.prefix == prefix));
        out.push(Route {
            switch: si,
            prefix,
            port,
            to: RouteTo::Entry(i),
        });
    }
    out.sort_by_key(|r| r.switch);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_TOPOLOGY;

    fn parse(text: &str) -> Topology {
        Topology::parse(text, None).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn refused(text: &str) -> String {
        Topology::parse(text, None).unwrap_err().0
    }

    /// `routes_of(sw)` as `prefix>port` text.
    fn table(t: &Topology, sw: &str) -> Vec<String> {
        t.routes_of(sw)
            .map(|r| format!("{}>{}", r.prefix, r.port))
            .collect()
    }

    const S: &str = "47.0005.80FFE1000000F2";

    /// s1 – s2 – s3 in a line, h1 on s1, h2 on s2, h3 on s3.
    const LINE: &str = r#"
        switch = [{ name = "s1" }, { name = "s2" }, { name = "s3" }]
        host = [{ name = "h1" }, { name = "h2" }, { name = "h3" }]
        link = [
            { a = "h1", b = "s1" }, { a = "s1", b = "s2" },
            { a = "s2", b = "s3" }, { a = "h2", b = "s2" }, { a = "s3", b = "h3" },
        ]
    "#;

    #[test]
    fn prefixes_and_esis_are_derived_from_positions_unless_given() {
        let t = parse(DEFAULT_TOPOLOGY);
        assert_eq!(t.prefix_of("s1").unwrap().to_string(), format!("{S}000001"));
        assert_eq!(
            t.address_of("h1").unwrap().to_string(),
            format!("{S}000001.020000000001.00")
        );
        assert_eq!(
            t.address_of("h2").unwrap().to_string(),
            format!("{S}000001.020000000002.00")
        );
        let t = parse(
            &LINE
                .replace(
                    "{ name = \"s2\" }",
                    "{ name = \"s2\", prefix = \"47.0005.80ffe1000000f21a3599\" }",
                )
                .replace(
                    "{ name = \"h2\" }",
                    "{ name = \"h2\", esi = \"0020481a3599\" }",
                ),
        );
        let p: Vec<String> = t.prefixes.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            p,
            [
                format!("{S}000001"),
                format!("{S}1A3599"),
                format!("{S}000003")
            ]
        );
        assert_eq!(
            t.address_of("h2").unwrap().to_string(),
            format!("{S}1A3599.0020481A3599.00")
        );
        assert_eq!(
            t.address_of("h3").unwrap().to_string(),
            format!("{S}000003.020000000003.00")
        );
    }

    #[test]
    fn duplicate_prefixes_and_addresses_are_refused_naming_both() {
        let two = |s1: &str, s2: &str| {
            LINE.replace("{ name = \"s1\" }", &format!("{{ name = \"s1\"{s1} }}"))
                .replace("{ name = \"s2\" }", &format!("{{ name = \"s2\"{s2} }}"))
        };
        let p = ", prefix = \"47.0005.80ffe1000000f21a3599\"";
        assert_eq!(
            refused(&two(p, p)),
            format!("switch 2 (s2): prefix {S}1A3599 is switch 1 (s1)'s too")
        );
        // s2 is given the prefix s1 would derive: s1 is told to take one of its own.
        let e = refused(&two("", ", prefix = \"47.0005.80ffe1000000f2000001\""));
        assert_eq!(
            e,
            format!(
                "switch 1 (s1): its derived prefix {S}000001 is switch 2 (s2)'s; give s1 a prefix"
            )
        );
        // Two hosts on one switch with one ESI; the same ESI on two switches is fine.
        let esi = |h: &str, e: &str| format!("{{ name = \"{h}\", esi = \"{e}\" }}");
        let text =
            DEFAULT_TOPOLOGY.replace("name = \"h2\"", "name = \"h2\"\nesi = \"020000000001\"");
        assert_eq!(
            refused(&text),
            format!(
                "host 2 (h2): address {S}000001.020000000001.00 is host 1 (h1)'s too; give one \
                 of them another esi"
            )
        );
        let t = parse(
            &LINE
                .replace("{ name = \"h1\" }", &esi("h1", "0020481a3599"))
                .replace("{ name = \"h3\" }", &esi("h3", "0020481a3599")),
        );
        assert_ne!(t.address_of("h1"), t.address_of("h3"));
    }

    #[test]
    fn a_line_of_three_switches_routes_hosts_to_their_ports_and_switches_to_the_next_hop() {
        let t = parse(LINE);
        let h = |h: &str| format!("{}", AesaPrefix::of(&t.address_of(h).unwrap(), 152));
        // s1: port 1 h1, port 2 the trunk to s2.
        assert_eq!(
            table(&t, "s1"),
            [
                format!("{}>1", h("h1")),
                format!("{S}000002>2"),
                format!("{S}000003>2")
            ]
        );
        // s2: port 1 to s1, port 2 to s3, port 3 h2.
        assert_eq!(
            table(&t, "s2"),
            [
                format!("{}>3", h("h2")),
                format!("{S}000001>1"),
                format!("{S}000003>2")
            ]
        );
        assert_eq!(
            table(&t, "s3"),
            [
                format!("{}>2", h("h3")),
                format!("{S}000001>1"),
                format!("{S}000002>1")
            ]
        );
        assert_eq!(h("h1"), format!("{S}000001.020000000001"));
        // Trunk sides: the link's a end is the network side.
        assert_eq!(
            (t.side("s1", 1), t.side("s2", 1)),
            (Side::Network, Side::User)
        );
        assert_eq!(
            (t.side("s2", 2), t.side("s3", 2)),
            (Side::Network, Side::User)
        );
        assert_eq!(
            (t.side("s1", 0), t.side("s3", 4)),
            (Side::Network, Side::Network)
        );
        let r = t.routes_of("s2").nth(1).unwrap();
        assert_eq!(t.route_target(r.to), "switch s1");
    }

    #[test]
    fn a_triangle_routes_every_switch_straight_to_the_others() {
        let t = parse(
            r#"
            switch = [{ name = "s1" }, { name = "s2" }, { name = "s3" }]
            host = [{ name = "h1" }]
            link = [{ a = "s1", b = "s2" }, { a = "s2", b = "s3" }, { a = "s3", b = "s1" }, { a = "h1", b = "s1" }]
        "#,
        );
        let h1 = AesaPrefix::of(&t.address_of("h1").unwrap(), 152);
        assert_eq!(
            table(&t, "s1"),
            [
                format!("{h1}>3"),
                format!("{S}000002>1"),
                format!("{S}000003>2")
            ]
        );
        assert_eq!(
            table(&t, "s2"),
            [format!("{S}000001>1"), format!("{S}000003>2")]
        );
        assert_eq!(
            table(&t, "s3"),
            [format!("{S}000001>2"), format!("{S}000002>1")]
        );
        // s3 is the b end of s2 – s3 and the a end of s3 – s1.
        assert_eq!(
            (t.side("s3", 1), t.side("s3", 2)),
            (Side::User, Side::Network)
        );
    }

    #[test]
    fn route_entries_add_routes_and_replace_derived_ones() {
        let text = format!(
            "{LINE}\nroute = [{{ switch = \"s1\", prefix = \"39.0840\", via = \"s2\" }}, \
             {{ switch = \"s3\", prefix = \"{S}000001\", port = 2 }}]"
        );
        let t = parse(&text);
        assert!(table(&t, "s1").contains(&"39.0840>2".to_string()));
        let s3: Vec<_> = t.routes_of("s3").collect();
        assert_eq!(s3.len(), 3, "{s3:?}");
        let r = s3.iter().find(|r| r.to == RouteTo::Entry(1)).unwrap();
        assert_eq!((r.prefix.to_string(), r.port), (format!("{S}000001"), 2));
    }

    #[test]
    fn an_external_on_a_switch_is_a_port_after_its_links_routed_from_every_switch() {
        let text = format!(
            "{LINE}\n[[external]]\nnode = \"s1\"\nlisten = \"127.0.0.1:2812\"\n\
             prefix = \"39.0840.0001\"\n[[external]]\nnode = \"s3\"\n\
             connect = \"127.0.0.1:2813\"\nprefix = \"39.0840.0003\"\nrate = \"100000\"\n"
        );
        let t = parse(&text);
        let e = &t.externals[0];
        assert_eq!(
            e.end,
            ExternalEnd::Listen("127.0.0.1:2812".parse().unwrap())
        );
        assert_eq!(e.rate, LineRate::default());
        assert_eq!(t.externals[1].rate.to_string(), "100000");
        assert_eq!(
            t.externals[1].end,
            ExternalEnd::Connect("127.0.0.1:2813".parse().unwrap())
        );
        assert_eq!((t.external_port(0), t.external_port(1)), (Some(3), Some(3)));
        let s1 = table(&t, "s1");
        assert!(s1.contains(&"3908400001>3".into()), "{s1:?}");
        assert!(s1.contains(&"3908400003>2".into()), "{s1:?}");
        let s2 = table(&t, "s2");
        assert!(s2.contains(&"3908400001>1".into()), "{s2:?}");
        assert!(s2.contains(&"3908400003>2".into()), "{s2:?}");
        // The rate override reaches the externals too.
        let t = Topology::parse(&text, Some("oc12")).unwrap();
        assert!(t.externals.iter().all(|e| e.rate.to_string() == "oc12"));
    }

    #[test]
    fn an_external_on_a_host_is_its_link_and_gives_its_prefix() {
        let text = r#"
            switch = [{ name = "s1" }]
            host = [{ name = "h1" }, { name = "h2" }, { name = "h3" }]
            link = [{ a = "h1", b = "s1" }]
            external = [
                { node = "h2", connect = "127.0.0.1:2812" },
                { node = "h3", connect = "127.0.0.1:2813", prefix = "39.0840.0000.0000.0000.0000.0003" },
            ]
        "#;
        let t = parse(text);
        assert!(t.host_link("h2").is_none());
        assert_eq!(t.host_external("h2").map(|(i, _)| i), Some(0));
        assert_eq!(t.external_port(0), None);
        assert_eq!(
            t.address_of("h2").unwrap().to_string(),
            "47.0005.80FFE1000000F3000002.020000000002.00"
        );
        assert_eq!(
            t.address_of("h3").unwrap().to_string(),
            "39.0840.00000000000000000003.020000000003.00"
        );
        // The switch routes only its own host: nothing leads to a host's external.
        assert_eq!(table(&t, "s1").len(), 1);
        // A PVC cannot reach a host on an external.
        let pvc = format!("{text}\npvc = [{{ a = \"h1\", b = \"h2\", vc = \"0.100\" }}]");
        assert!(refused(&pvc).contains("no path"), "{}", refused(&pvc));
    }

    #[test]
    fn bad_entries_are_refused_naming_them() {
        let ext = |body: &str| format!("{LINE}\n[[external]]\n{body}\n");
        let route = |body: &str| format!("{LINE}\n[[route]]\n{body}\n");
        for (text, want) in [
            (
                LINE.replace("{ name = \"s1\" }", "{ name = \"s1\", prefix = \"47\" }"),
                "switch 1 (s1): prefix \"47\": the prefix of an address is 13 bytes (26 hex digits), not 8 bits",
            ),
            (
                LINE.replace("{ name = \"s1\" }", "{ name = \"s1\", prefix = \"4x\" }"),
                "switch 1 (s1): prefix \"4x\": unexpected character 'x'",
            ),
            (
                LINE.replace("{ name = \"h2\" }", "{ name = \"h2\", esi = \"0020\" }"),
                "host 2 (h2): esi \"0020\": an ESI is 12 hex digits (6 bytes), not 4",
            ),
            (
                LINE.replace(
                    "{ name = \"s1\" }",
                    "{ name = \"s1\", esi = \"002000000000\" }",
                ),
                "unknown field `esi`",
            ),
            (
                ext("node = \"s9\"\nlisten = \"127.0.0.1:1\"\nprefix = \"39\""),
                "external 1 (s9): no host or switch is named \"s9\"",
            ),
            (
                ext("node = \"s1\"\nprefix = \"39\""),
                "external 1 (s1): give exactly one of listen and connect (IP:port)",
            ),
            (
                ext(
                    "node = \"s1\"\nlisten = \"127.0.0.1:1\"\nconnect = \"127.0.0.1:2\"\nprefix = \"39\"",
                ),
                "external 1 (s1): give exactly one of listen and connect (IP:port)",
            ),
            (
                ext("node = \"s1\"\nlisten = \"localhost:2812\"\nprefix = \"39\""),
                "external 1 (s1): listen \"localhost:2812\": invalid socket address syntax",
            ),
            (
                ext("node = \"s1\"\nlisten = \"127.0.0.1:1\""),
                "external 1 (s1): prefix: required on a switch",
            ),
            (
                ext("node = \"s1\"\nlisten = \"127.0.0.1:1\"\nprefix = \"39\"\nrate = \"fast\""),
                "external 1 (s1): rate \"fast\": ",
            ),
            (
                ext("node = \"h1\"\nconnect = \"127.0.0.1:1\""),
                "host \"h1\" has a link to a switch and an [[external]]",
            ),
            (
                ext(
                    "node = \"s1\"\nlisten = \"127.0.0.1:1\"\nprefix = \"39\"\n[[external]]\nnode = \"s2\"\nlisten = \"127.0.0.1:1\"\nprefix = \"45\"",
                ),
                "external 2 (s2): listen 127.0.0.1:1 is external 1 (s1)'s too",
            ),
            (
                // An external on s1 claiming s3's prefix: s2 would send it both ways.
                ext(&format!(
                    "node = \"s1\"\nlisten = \"127.0.0.1:1\"\nprefix = \"{S}000003\""
                )),
                "switch 1 (s1): 47.0005.80FFE1000000F2000003 would leave by port 3 (external 1 (s1)) and by port 2 (switch s3)",
            ),
            (
                route("switch = \"h1\"\nprefix = \"39\"\nvia = \"s2\""),
                "route 1 (h1): switch: no switch is named \"h1\"",
            ),
            (
                route("switch = \"s1\"\nprefix = \"39\"\nvia = \"s3\""),
                "route 1 (s1): via \"s3\": no link joins s1 and s3",
            ),
            (
                route("switch = \"s1\"\nprefix = \"39\"\nport = 3"),
                "route 1 (s1): port 3: s1 has ports 1 to 2",
            ),
            (
                route("switch = \"s1\"\nprefix = \"39\"\nport = 1\nvia = \"h1\""),
                "route 1 (s1): give exactly one of via and port",
            ),
            (
                route("switch = \"s1\"\nprefix = \"3g\"\nport = 1"),
                "route 1 (s1): prefix \"3g\": unexpected character 'g'",
            ),
            (
                route(
                    "switch = \"s1\"\nprefix = \"39\"\nport = 1\n[[route]]\nswitch = \"s1\"\nprefix = \"39\"\nport = 2",
                ),
                "route 2 (s1): s1 already routes 39 by route 1",
            ),
        ] {
            let e = refused(&text);
            assert!(e.contains(want), "{text}\nwant: {want}\ngot:  {e}");
        }
    }
}

#[cfg(test)]
mod example {
    use super::*;

    #[test]
    fn the_svc_example_has_the_addresses_and_routes_its_header_says() {
        let t = Topology::parse(include_str!("../../../examples/svc.toml"), None).unwrap();
        let s = "47.0005.80FFE1000000F200000";
        for (h, sw, n) in [("h1", 1, 1), ("h2", 1, 2), ("h3", 2, 3), ("h4", 3, 4)] {
            assert_eq!(
                t.address_of(h).unwrap().to_string(),
                format!("{s}{sw}.02000000000{n}.00")
            );
        }
        // s1: h1 on port 1, h2 on port 2, s2 and s3 by the trunk on port 3.
        let s1: Vec<_> = t.routes_of("s1").map(|r| (r.port, r.to)).collect();
        assert_eq!(
            s1,
            [
                (1, RouteTo::Host(0)),
                (2, RouteTo::Host(1)),
                (3, RouteTo::Switch(1)),
                (3, RouteTo::Switch(2))
            ]
        );
        let trunks: Vec<_> = t
            .links
            .iter()
            .filter(|l| l.kind == crate::LinkKind::Tcp)
            .collect();
        assert_eq!(trunks.len(), 2);
        assert!(trunks.iter().all(|l| l.rate.cells_per_s() == Some(10_000)));
        assert_eq!(
            (t.side("s1", 2), t.side("s2", 2)),
            (Side::Network, Side::User)
        );
    }
}

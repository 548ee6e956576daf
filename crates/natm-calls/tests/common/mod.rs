//! A network in virtual time: switches (a `Switch` and its `CallControl` each), hosts on
//! their ports (plain user-side `natm_sig::Signalling`s whose SDUs are moved as cells by
//! hand), trunks between switch ports; optionally lossy, duplicating host links for 0.5.

#![allow(dead_code)]

use std::collections::BTreeMap;

use natm_adapter::{Reassembler, Reassembly};
use natm_calls::{CallControl, Config, Route, Side};
use natm_core::addr::{Aesa, AesaPrefix, Esi};
use natm_core::{Duration, Instant, LineRate, Qos, VcId};
use natm_sig::{CallEvent, CallId, Cause, PartyNumber, Role, SetupParams, Signalling};
use natm_switch::{PortConfig, PortId, Switch, SwitchConfig};
use natm_wire::aal5::Segmenter;

pub fn sig_vc() -> VcId {
    VcId::uni(0, 5).unwrap()
}

/// A tiny seeded PRNG (xorshift64*), like natm-sig's pair tests use.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

pub struct Host {
    pub sig: Signalling,
    rx: Reassembler,
    pub events: Vec<CallEvent>,
    /// Data cells (not 0.5) received.
    pub data: Vec<[u8; 53]>,
    pub address: Aesa,
}

pub struct Node {
    pub sw: Switch,
    pub cc: CallControl,
}

pub struct Net {
    pub now: Instant,
    pub nodes: Vec<Node>,
    /// (switch, port) → host.
    pub hosts: BTreeMap<(usize, u16), Host>,
    /// (switch, port) → (switch, port) both ways.
    pub trunks: BTreeMap<(usize, u16), (usize, u16)>,
    /// Percent of host-link SDUs lost, and duplicated, each way.
    pub loss: u64,
    pub dup: u64,
    pub rng: Rng,
    /// Every switch's log lines.
    pub logs: Vec<String>,
    /// Host links whose 0.5 SDUs are lost both ways (a cut signalling link).
    pub cut: std::collections::BTreeSet<(usize, u16)>,
}

pub fn prefix(n: u8) -> AesaPrefix {
    format!("47.0005.80ffe1000000f21a35{n:02x}")
        .parse()
        .unwrap()
}

/// The 19-byte route of a host.
pub fn host_route(switch: u8, port: u16) -> AesaPrefix {
    AesaPrefix::of(&host_address(switch, port), 152)
}

pub fn host_address(switch: u8, port: u16) -> Aesa {
    prefix(switch)
        .address(Esi([0, 0, 0, 0, 0, port as u8]), 0)
        .unwrap()
}

pub fn qos(text: &str) -> Qos {
    text.parse().unwrap()
}

impl Net {
    pub fn new() -> Net {
        Net {
            now: Instant::ZERO,
            nodes: Vec::new(),
            hosts: BTreeMap::new(),
            trunks: BTreeMap::new(),
            loss: 0,
            dup: 0,
            rng: Rng::new(1),
            logs: Vec::new(),
            cut: std::collections::BTreeSet::new(),
        }
    }

    /// A switch `s{n}` (n from 1) with prefix `prefix(n)` and `routes` (prefix, port);
    /// returns its index.
    pub fn switch(&mut self, routes: &[(AesaPrefix, u16)]) -> usize {
        let n = self.nodes.len() + 1;
        let mut config = Config::new(format!("s{n}"), prefix(n as u8));
        config.routes = routes
            .iter()
            .map(|&(prefix, port)| Route {
                prefix,
                port: PortId(port),
            })
            .collect();
        self.nodes.push(Node {
            sw: Switch::new(SwitchConfig::default()),
            cc: CallControl::new(config),
        });
        n - 1
    }

    fn add_port(&mut self, s: usize, port: u16, side: Side, rate: LineRate) {
        let version = self.nodes[s].cc.config().version;
        self.add_port_version(s, port, side, rate, version);
    }

    fn add_port_version(
        &mut self,
        s: usize,
        port: u16,
        side: Side,
        rate: LineRate,
        version: natm_sig::UniVersion,
    ) {
        let now = self.now;
        let node = &mut self.nodes[s];
        let config = PortConfig {
            signalling: true,
            rate,
            ..PortConfig::default()
        };
        node.sw.add_port(PortId(port), config).unwrap();
        node.cc
            .add_port_version(now, PortId(port), side, version)
            .unwrap();
    }

    /// A host on switch `s`'s port `port` (network side there), routed by its 19 bytes.
    pub fn host(&mut self, s: usize, port: u16, rate: LineRate) -> Aesa {
        self.host_version(s, port, rate, natm_sig::UniVersion::Uni40)
    }

    /// [`host`](Self::host) speaking `version` on its port.
    pub fn host_version(
        &mut self,
        s: usize,
        port: u16,
        rate: LineRate,
        version: natm_sig::UniVersion,
    ) -> Aesa {
        self.add_port_version(s, port, Side::Network, rate, version);
        let address = host_address(s as u8 + 1, port);
        let saal = natm_sscop::Config::default();
        let mut config = natm_sig::Config::new(Role::User);
        config.version = version;
        self.hosts.insert(
            (s, port),
            Host {
                sig: Signalling::new(self.now, config, saal),
                rx: Reassembler::new(sig_vc(), 8192).unwrap(),
                events: Vec::new(),
                data: Vec::new(),
                address,
            },
        );
        address
    }

    /// A trunk from `a`'s port `pa` (network side) to `b`'s port `pb` (user side).
    pub fn trunk(&mut self, a: usize, pa: u16, b: usize, pb: u16, rate: LineRate) {
        self.add_port(a, pa, Side::Network, rate);
        self.add_port(b, pb, Side::User, rate);
        self.trunks.insert((a, pa), (b, pb));
        self.trunks.insert((b, pb), (a, pa));
    }

    /// Moves everything that can move now, until nothing does.
    pub fn settle(&mut self) {
        for _ in 0..200 {
            if !self.round() {
                return;
            }
        }
        panic!("the network did not settle");
    }

    fn round(&mut self) -> bool {
        let now = self.now;
        let mut moved = false;
        // Hosts → their switch ports.
        for (&(s, port), h) in &mut self.hosts {
            while let Some(sdu) = h.sig.poll_transmit() {
                moved = true;
                let copies = if self.cut.contains(&(s, port)) || self.rng.chance(self.loss) {
                    0
                } else if self.rng.chance(self.dup) {
                    2
                } else {
                    1
                };
                for _ in 0..copies {
                    let cells = cells_of(sig_vc(), &sdu);
                    self.nodes[s].sw.handle_cells(now, PortId(port), &cells);
                }
            }
        }
        for node in &mut self.nodes {
            if node.sw.has_signalling() {
                moved = true;
                node.cc.handle(now, &mut node.sw);
            }
            while let Some(line) = node.cc.poll_log() {
                self.logs.push(line);
            }
        }
        // Switch ports → hosts and trunks.
        let mut out = vec![[0u8; 53]; 256];
        for s in 0..self.nodes.len() {
            let ports: Vec<PortId> = self.nodes[s].sw.ports().map(|(p, _)| p).collect();
            for port in ports {
                loop {
                    let n = self.nodes[s].sw.poll_transmit(now, port, &mut out);
                    if n == 0 {
                        break;
                    }
                    moved = true;
                    let cells = &out[..n];
                    if let Some(h) = self.hosts.get_mut(&(s, port.0)) {
                        for c in cells {
                            if u32::from_be_bytes([c[0], c[1], c[2], c[3]]) >> 4 == 5 {
                                if let Reassembly::Complete(_) = h.rx.push_cell(c) {
                                    let copies = if self.cut.contains(&(s, port.0))
                                        || self.rng.chance(self.loss)
                                    {
                                        0
                                    } else if self.rng.chance(self.dup) {
                                        2
                                    } else {
                                        1
                                    };
                                    let sdu = h.rx.sdu().to_vec();
                                    for _ in 0..copies {
                                        h.sig.handle_pdu(now, &sdu);
                                    }
                                }
                            } else {
                                h.data.push(*c);
                            }
                        }
                    } else if let Some(&(t, tp)) = self.trunks.get(&(s, port.0)) {
                        self.nodes[t].sw.handle_cells(now, PortId(tp), cells);
                    }
                }
            }
        }
        for h in self.hosts.values_mut() {
            while let Some(e) = h.sig.poll_event() {
                moved = true;
                h.events.push(e);
            }
        }
        moved
    }

    fn next_timeout(&self) -> Option<Instant> {
        let hosts = self.hosts.values().filter_map(|h| h.sig.poll_timeout());
        let nodes = self
            .nodes
            .iter()
            .flat_map(|n| [n.cc.poll_timeout(), n.sw.poll_timeout()])
            .flatten();
        hosts.chain(nodes).min()
    }

    /// Runs 10 ms: enough for every message in flight to arrive (rated ports pace).
    pub fn step(&mut self) {
        self.run_for(Duration::from_millis(10));
    }

    /// Runs timers and traffic for `d` of virtual time.
    pub fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        self.settle();
        loop {
            let next = self
                .next_timeout()
                .map_or(end, |t| t.min(end))
                .max(self.now);
            self.now = next;
            let now = self.now;
            for h in self.hosts.values_mut() {
                if h.sig.poll_timeout().is_some_and(|t| t <= now) {
                    h.sig.handle_timeout(now);
                }
            }
            for node in &mut self.nodes {
                if node.cc.poll_timeout().is_some_and(|t| t <= now) {
                    node.cc.handle_timeout(now, &mut node.sw);
                }
                node.sw.handle_timeout(now);
            }
            self.settle();
            if self.now >= end {
                return;
            }
        }
    }

    pub fn h(&mut self, s: usize, port: u16) -> &mut Host {
        self.hosts.get_mut(&(s, port)).unwrap()
    }

    /// Host (s, port) calls `to` with `qos`.
    pub fn call(&mut self, s: usize, port: u16, to: Aesa, q: &str) -> CallId {
        let now = self.now;
        let h = self.h(s, port);
        let params = SetupParams {
            called: PartyNumber::aesa(to),
            called_sub: None,
            calling: Some(PartyNumber::aesa(h.address)),
            calling_sub: None,
            qos: qos(q),
            blli: None,
            bhli: None,
            conn: None,
        };
        h.sig.setup(now, &params).unwrap()
    }

    /// Host (s, port) accepts `call` (CONNECT).
    pub fn accept(&mut self, s: usize, port: u16, call: CallId) {
        let now = self.now;
        self.h(s, port).sig.connect(now, call, None).unwrap();
    }

    /// The events host (s, port) got since the last take.
    pub fn take_events(&mut self, s: usize, port: u16) -> Vec<CallEvent> {
        std::mem::take(&mut self.h(s, port).events)
    }

    /// The incoming SETUP a host got: its call id and connection.
    pub fn incoming(&mut self, s: usize, port: u16) -> Option<(CallId, Option<natm_sig::ConnId>)> {
        self.take_events(s, port).into_iter().find_map(|e| match e {
            CallEvent::Setup { call, setup } => Some((call, setup.params.conn)),
            _ => None,
        })
    }

    /// Sends `n` data cells from host (s, port) on `vci`.
    pub fn send_data(&mut self, s: usize, port: u16, vci: u16, n: u8) {
        let now = self.now;
        let vc = VcId::uni(0, u32::from(vci)).unwrap();
        for i in 0..n {
            let cells = cells_of(vc, &[i; 40]);
            self.nodes[s].sw.handle_cells(now, PortId(port), &cells);
        }
        self.step();
    }

    /// The released cause a host saw for `call`.
    pub fn released(events: &[CallEvent], call: CallId) -> Option<Cause> {
        events.iter().find_map(|e| match e {
            CallEvent::Released { call: c, cause, .. } if *c == call => Some(cause.clone()),
            _ => None,
        })
    }

    /// No VCI, bandwidth or call left anywhere.
    pub fn assert_nothing_leaked(&self) {
        for (i, node) in self.nodes.iter().enumerate() {
            assert_eq!(node.cc.call_count(), 0, "s{}: calls left", i + 1);
            assert_eq!(
                node.sw.connection_count(),
                0,
                "s{}: cross-connects left",
                i + 1
            );
            for p in node.cc.ports() {
                assert_eq!(p.vcis, 0, "s{} p{}: VCIs left", i + 1, p.port);
                assert_eq!(p.calls, 0, "s{} p{}: legs left", i + 1, p.port);
                let cac = node.sw.port_cac(p.port).unwrap();
                assert_eq!(
                    cac.reserved_cbr() + cac.reserved_vbr(),
                    0,
                    "s{} p{}: bandwidth left",
                    i + 1,
                    p.port
                );
            }
        }
    }
}

/// The cells of `sdu` on `vc` (AAL5).
pub fn cells_of(vc: VcId, sdu: &[u8]) -> Vec<[u8; 53]> {
    let mut seg = Segmenter::uni(vc, sdu).unwrap();
    let mut v = Vec::new();
    let mut c = [0u8; 53];
    while seg.next_cell(&mut c) {
        v.push(c);
    }
    v
}

//! Scenarios: a natm-topology file (the one `natm lab up` takes) plus an optional `[sim]`
//! table, turned into a [`World`] with a load and a fault plan, and run through a load
//! phase and a liveness phase.
//!
//! ```toml
//! [sim]
//! duration = "50ms"     # the load and fault phase (virtual time)
//! drain = "100ms"       # the liveness phase: every queue empties, every probe arrives
//! faults = "swarm"      # swarm (drawn from the seed) | none | listed ([[sim.fault]])
//! ubr_load = 0.3        # UBR load per host link, fraction of its rate, split over flows
//! sdu = [20, 4000]      # SDU sizes, bytes (at least 20: the checkable load's header)
//! churn = true          # with faults = "swarm": PVC churn too
//! calls = true          # switched calls: every switch and host signals, every host
//!                       # churns calls (crate::calls); see "Calls" below
//!
//! [[sim.fault]]         # faults = "listed"
//! at = "10ms"
//! kind = "link_down"    # impair | link_down | switch_crash | host_crash | clog | churn
//! target = "h1-s1"      # a link "a-b", a switch, a host, a port "s1:2", a PVC "0.110"
//! for = "5ms"
//! impair = "loss=1%"    # kind = "impair" only: natm-netem impairment text
//!
//! [[sim.flow]]          # per-PVC settings of the load
//! vc = "0.112"
//! greedy = 2.0          # the hosts shape at 2 × the contract, so the switches police
//! ```
//!
//! Flows run both ways on every PVC: UBR at random sizes and gaps, CBR and VBR at about
//! 90 % of their contract (PCR; SCR for VBR) times `greedy`. A run: build the world, start
//! the load at 0, the faults as planned; at `duration` every fault is cleared (links up and
//! unimpaired, crashed nodes restarted, ports unclogged) and the load stops; 15 ms later (past
//! the hosts' 10 ms reassembly timeout) one probe SDU per flow is sent, and a second one
//! 12 ms after (the first may end a frame whose end cell a fault lost: AAL5 knows no
//! other boundary); at `duration + drain` every queue must be empty and every
//! flow's second probe delivered (invariant 6 of [`crate::check`]).
//!
//! # Calls
//!
//! With `calls = true` every switch port signals (natm-calls' `CallControl` beside each
//! switch, with the prefix, routes and sides natm-topology derives, as natm lab writes
//! them for switchd), every host signals at its topology address, and each host's app
//! churns calls ([`crate::calls::CallApp`]) beside its PVC load until `duration`, when
//! it releases them all. After the drain, the run waits (at most
//! [`CALLS_SETTLE_BOUND`] of virtual time) until no call is left in any host or call
//! control ("calls settle"), goes on [`CALLS_AFTER_SETTLE`] more, and checks that nothing
//! is left: no call or call reference in any signalling entity ("no call reference
//! leaks"), no VCI allocated on any port and no switched cross-connect or booking beyond
//! the PVCs' on any switch port or host link ("no VCI or bandwidth leaked"), and every
//! call ended once at each end that knew it, a call active at its caller having been
//! accepted by the called host ("every call ends once, alike at both ends"). Data on
//! calls is checked by the apps as it arrives ("data on calls byte-exact"), and the
//! switched cross-connects join the CAC and conservation audits of [`crate::check`].
//! Scenarios without `calls` run exactly as before (same events, same digests).
//!
//! The scenario's errors name the entry: `sim.fault 2: target "h9": no such host`.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;

use natm_core::{
    Duration, HeaderFormat, Instant, LineRate, Qos, TrafficClass, VcId, VcIdParseError,
};
use natm_netem::Impairments;
use natm_switch::{CrossConnect, PortConfig, PortId, SwitchConfig};
use natm_topology::{PvcCrossConnect, Topology};
use serde::Deserialize;

use crate::faults::{Fault, FaultKind, FaultPlan};
use crate::load::{FlowSpec, LoadApp, Pace, Probes};
use crate::seed::sub_seed;
use crate::world::{
    Action, DEFAULT_CDVT, Dirs, End, HostConfig, HostId, LinkConfig, LinkId, Stats, SwitchId,
    VcOptions, Violation, World,
};

/// The scenario with no file: the default lab's nodes and OC-3c links under a mixed load
/// (UBR, CBR, VBR PVCs; one greedy CBR PVC the switch must police), churn on, faults drawn
/// from the seed.
pub const DEFAULT_SCENARIO: &str = concat!(
    natm_topology::default_network!(),
    r#"
[[pvc]]
a = "h1"
b = "h2"
vc = "0.100-0.103"
qos = "ubr"

[[pvc]]
a = "h1"
b = "h2"
vc = "0.110"
qos = "cbr:pcr=20000"
upc = "discard"

[[pvc]]
a = "h1"
b = "h2"
vc = "0.111"
qos = "vbr:pcr=30000,scr=10000,mbs=40"
upc = "tag"

[[pvc]]
a = "h1"
b = "h2"
vc = "0.112"
qos = "cbr:pcr=8000"
upc = "tag"

[sim]
duration = "100ms"
drain = "100ms"
faults = "swarm"
ubr_load = 0.5
sdu = [20, 3000]
churn = true

[[sim.flow]]
vc = "0.112"
greedy = 2.0
"#
);

/// The scenario of `natm sim run --calls`: three switches in a row (trunks of 20,000
/// cells/s), four hosts (two on `s1`, one on `s2`, one on `s3`), a CBR and a UBR PVC
/// under a light load, and every host churning switched calls ([`crate::calls`]); faults
/// drawn from the seed.
pub const CALLS_SCENARIO: &str = r#"
[[switch]]
name = "s1"

[[switch]]
name = "s2"

[[switch]]
name = "s3"

[[host]]
name = "h1"

[[host]]
name = "h2"

[[host]]
name = "h3"

[[host]]
name = "h4"

[[link]]
a = "h1"
b = "s1"
rate = "oc3"

[[link]]
a = "h2"
b = "s1"
rate = "oc3"

[[link]]
a = "s1"
b = "s2"
rate = "20000"

[[link]]
a = "s2"
b = "s3"
rate = "20000"

[[link]]
a = "h3"
b = "s2"
rate = "oc3"

[[link]]
a = "h4"
b = "s3"
rate = "oc3"

[[pvc]]
a = "h1"
b = "h4"
vc = "0.100"
qos = "cbr:pcr=500"
upc = "discard"

[[pvc]]
a = "h2"
b = "h3"
vc = "0.101"
qos = "ubr"

[sim]
duration = "300ms"
drain = "100ms"
faults = "swarm"
ubr_load = 0.002
sdu = [20, 400]
calls = true
"#;

/// The hosts' reassembly timeout: a frame whose end was lost holds its VC's reassembly
/// this long (the next frame on the VC merges with it and fails its CRC meanwhile).
pub const REASSEMBLY_TIMEOUT: Duration = Duration::from_millis(10);

/// When the first probes are sent after the load phase: past the reassembly timeout.
pub const PROBE_DELAY: Duration = Duration::from_millis(15);

/// What is wrong with a scenario; the text names the entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError(pub String);

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScenarioError {}

fn bad<T>(msg: impl Into<String>) -> Result<T, ScenarioError> {
    Err(ScenarioError(msg.into()))
}

#[derive(Debug, Deserialize)]
struct File {
    #[serde(default)]
    sim: Option<SimTable>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SimTable {
    duration: Option<String>,
    drain: Option<String>,
    faults: Option<String>,
    ubr_load: Option<f64>,
    sdu: Option<[usize; 2]>,
    churn: Option<bool>,
    calls: Option<bool>,
    #[serde(default)]
    fault: Vec<RawFault>,
    #[serde(default)]
    flow: Vec<RawFlow>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    at: String,
    kind: String,
    target: String,
    #[serde(rename = "for")]
    length: String,
    impair: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    vc: String,
    greedy: Option<f64>,
}

/// Where the faults come from.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultMode {
    /// Drawn from the seed.
    Swarm,
    /// None.
    None,
    /// As listed.
    Listed(FaultPlan),
}

/// The `[sim]` settings.
#[derive(Clone, Debug, PartialEq)]
pub struct SimParams {
    /// The load and fault phase.
    pub duration: Duration,
    /// The liveness phase's bound.
    pub drain: Duration,
    /// The faults.
    pub faults: FaultMode,
    /// UBR load per host link, a fraction of its rate.
    pub ubr_load: f64,
    /// SDU sizes, bytes.
    pub sdu: (usize, usize),
    /// PVC churn in swarm mode.
    pub churn: bool,
    /// Greedy factor per PVC index (1.0 when not listed).
    pub greedy: BTreeMap<usize, f64>,
    /// Switched calls: every switch signals (call control on every port), every host
    /// signals and runs [`crate::calls::CallApp`] beside its PVC load.
    pub calls: bool,
}

/// A topology and its simulation settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The file it came from (`None`: the default scenario), for replay commands.
    pub file: Option<String>,
    /// The network.
    pub topology: Topology,
    /// The run's settings.
    pub sim: SimParams,
}

/// Parses `10ms`, `1.5s`, `200us`, `500ns` (also `µs`).
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic() || c == 'µ')?;
    let (num, unit) = s.split_at(split);
    let x: f64 = num.trim().parse().ok()?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    let n = x * scale;
    (0.0..1e18)
        .contains(&n)
        .then(|| Duration::from_nanos(n as u64))
}

impl Scenario {
    /// The default scenario ([`DEFAULT_SCENARIO`]).
    pub fn default_scenario() -> Scenario {
        Scenario::parse(DEFAULT_SCENARIO, None).expect("the default scenario is valid")
    }

    /// The calls scenario ([`CALLS_SCENARIO`]).
    pub fn calls_scenario() -> Scenario {
        Scenario::parse(CALLS_SCENARIO, None).expect("the calls scenario is valid")
    }

    /// Reads a scenario: the topology (natm-topology's checks), then its `[sim]` table.
    /// `file` names it in replay commands.
    pub fn parse(text: &str, file: Option<&str>) -> Result<Scenario, ScenarioError> {
        let topology = Topology::parse(text, None).map_err(|e| ScenarioError(e.0))?;
        if let Some(e) = topology.externals.first() {
            return bad(format!(
                "external ({}): foreign peers over atmtcp are not simulated",
                e.node
            ));
        }
        let raw: File =
            toml::from_str(text).map_err(|e| ScenarioError(format!("sim: {}", e.message())))?;
        let t = raw.sim.unwrap_or_default();
        let dur = |what: &str, v: &Option<String>, default: Duration| match v {
            None => Ok(default),
            Some(s) => parse_duration(s).ok_or_else(|| {
                ScenarioError(format!(
                    "sim.{what} {s:?}: not a duration such as \"50ms\", \"2s\" or \"100us\""
                ))
            }),
        };
        let duration = dur("duration", &t.duration, Duration::from_millis(40))?;
        let drain = dur("drain", &t.drain, Duration::from_millis(100))?;
        if duration == Duration::ZERO {
            return bad("sim.duration: must be above 0");
        }
        let last_probe = PROBE_DELAY.as_nanos() + crate::load::PROBE_GAP.as_nanos();
        if drain.as_nanos() < 2 * last_probe {
            return bad(format!(
                "sim.drain: at least {} ms (the last probes leave {} ms into it)",
                2 * last_probe / 1_000_000,
                last_probe / 1_000_000
            ));
        }
        let ubr_load = t.ubr_load.unwrap_or(0.3);
        if !(0.0..=1.0).contains(&ubr_load) {
            return bad(format!("sim.ubr_load {ubr_load:?}: a fraction in 0..=1"));
        }
        let sdu = t.sdu.map(|[a, b]| (a, b)).unwrap_or((20, 3000));
        if sdu.0 < crate::check::MIN_SDU || sdu.1 < sdu.0 || sdu.1 > 65535 {
            return bad(format!(
                "sim.sdu [{}, {}]: sizes from {} up to 65535, the smaller first",
                sdu.0,
                sdu.1,
                crate::check::MIN_SDU
            ));
        }
        let mut greedy = BTreeMap::new();
        for (i, f) in t.flow.iter().enumerate() {
            let what = format!("sim.flow {}", i + 1);
            let vc = parse_vc(&f.vc)
                .map_err(|e| ScenarioError(format!("{what}: vc {:?}: not vpi.vci: {e}", f.vc)))?;
            let idx: Vec<usize> = topology
                .pvcs
                .iter()
                .enumerate()
                .filter(|(_, p)| p.vc == vc)
                .map(|(i, _)| i)
                .collect();
            if idx.is_empty() {
                return bad(format!("{what}: vc {:?} is no PVC of the topology", f.vc));
            }
            let g = f.greedy.unwrap_or(1.0);
            if !(g.is_finite() && (0.01..=100.0).contains(&g)) {
                return bad(format!("{what}: greedy {g:?}: a factor in 0.01..=100"));
            }
            for i in idx {
                greedy.insert(i, g);
            }
        }
        let faults = match t.faults.as_deref().unwrap_or("swarm") {
            "swarm" => {
                if !t.fault.is_empty() {
                    return bad("sim.fault entries need faults = \"listed\"");
                }
                FaultMode::Swarm
            }
            "none" => {
                if !t.fault.is_empty() {
                    return bad("sim.fault entries need faults = \"listed\"");
                }
                FaultMode::None
            }
            "listed" => FaultMode::Listed(listed(&topology, &t.fault, duration)?),
            other => return bad(format!("sim.faults {other:?}: use swarm, none or listed")),
        };
        let sc = Scenario {
            file: file.map(str::to_string),
            topology,
            sim: SimParams {
                duration,
                drain,
                faults,
                ubr_load,
                sdu,
                churn: t.churn.unwrap_or(true),
                greedy,
                calls: t.calls.unwrap_or(false),
            },
        };
        // Everything a run builds is checked now (CAC on hosts and switches included),
        // so a run never fails for the file's sake.
        Built::new(&sc, 0, &Probes::default())?;
        Ok(sc)
    }

    /// The replay command for `seed`.
    pub fn replay(&self, seed: u64) -> String {
        match (&self.file, self.sim.calls) {
            (Some(f), _) => format!("natm sim run {f} --seed {seed}"),
            (None, false) => format!("natm sim run --seed {seed}"),
            (None, true) => format!("natm sim run --calls --seed {seed}"),
        }
    }

    /// The fault plan of `seed`.
    pub fn plan(&self, seed: u64) -> FaultPlan {
        match &self.sim.faults {
            FaultMode::None => FaultPlan::none(),
            FaultMode::Listed(p) => p.clone(),
            FaultMode::Swarm => {
                let mut p = FaultPlan::swarm(seed, &self.topology, self.sim.duration);
                if !self.sim.churn {
                    p.faults
                        .retain(|f| !matches!(f.kind, FaultKind::Churn { .. }));
                }
                if self.sim.calls {
                    p.faults.extend(FaultPlan::calls_swarm(
                        seed,
                        &self.topology,
                        self.sim.duration,
                    ));
                }
                p
            }
        }
    }
}

/// `vpi.vci` as a UNI VC.
fn parse_vc(s: &str) -> Result<VcId, VcIdParseError> {
    VcId::parse(s.trim(), HeaderFormat::Uni)
}

fn link_named(topo: &Topology, t: &str) -> Option<usize> {
    let (a, b) = t.split_once('-')?;
    topo.links
        .iter()
        .position(|l| (l.a == a && l.b == b) || (l.a == b && l.b == a))
}

fn listed(topo: &Topology, raw: &[RawFault], phase: Duration) -> Result<FaultPlan, ScenarioError> {
    let mut faults = Vec::new();
    for (i, f) in raw.iter().enumerate() {
        let what = format!("sim.fault {}", i + 1);
        let at = parse_duration(&f.at)
            .ok_or_else(|| ScenarioError(format!("{what}: at {:?}: not a duration", f.at)))?;
        let length = parse_duration(&f.length)
            .ok_or_else(|| ScenarioError(format!("{what}: for {:?}: not a duration", f.length)))?;
        if at.as_nanos().saturating_add(length.as_nanos()) > phase.as_nanos() {
            return bad(format!(
                "{what}: ends after sim.duration; every fault is over before the liveness phase"
            ));
        }
        let target = f.target.as_str();
        let no = |kind: &str| ScenarioError(format!("{what}: target {target:?}: no such {kind}"));
        if f.impair.is_some() && f.kind != "impair" {
            return bad(format!("{what}: impair is for kind = \"impair\" only"));
        }
        let kind = match f.kind.as_str() {
            "impair" => {
                let link = link_named(topo, target).ok_or_else(|| no("link (\"a-b\")"))?;
                let text = f.impair.as_deref().ok_or_else(|| {
                    ScenarioError(format!("{what}: kind impair needs impair = \"…\""))
                })?;
                let impairments: Impairments = text
                    .parse()
                    .map_err(|e| ScenarioError(format!("{what}: impair {text:?}: {e}")))?;
                FaultKind::Impair { link, impairments }
            }
            "link_down" => FaultKind::LinkDown {
                link: link_named(topo, target).ok_or_else(|| no("link (\"a-b\")"))?,
            },
            "switch_crash" => FaultKind::SwitchCrash {
                switch: topo
                    .switches
                    .iter()
                    .position(|s| s == target)
                    .ok_or_else(|| no("switch"))?,
            },
            "host_crash" => FaultKind::HostCrash {
                host: topo
                    .hosts
                    .iter()
                    .position(|s| s == target)
                    .ok_or_else(|| no("host"))?,
            },
            "clog" => {
                let (s, p) = target
                    .split_once(':')
                    .ok_or_else(|| no("switch port (\"s1:2\")"))?;
                let switch = topo
                    .switches
                    .iter()
                    .position(|x| x == s)
                    .ok_or_else(|| no("switch"))?;
                let port: u16 = p.parse().map_err(|_| no("switch port (\"s1:2\")"))?;
                if port == 0 || usize::from(port) > topo.neighbours(s).count() {
                    return Err(no("port"));
                }
                FaultKind::Clog { switch, port }
            }
            "churn" => {
                let vc = parse_vc(target).map_err(|_| no("PVC (\"0.110\")"))?;
                FaultKind::Churn {
                    pvc: topo
                        .pvcs
                        .iter()
                        .position(|p| p.vc == vc)
                        .ok_or_else(|| no("PVC"))?,
                }
            }
            other => {
                return bad(format!(
                    "{what}: kind {other:?}: use impair, link_down, switch_crash, host_crash, clog or churn"
                ));
            }
        };
        faults.push(Fault { at, length, kind });
    }
    Ok(FaultPlan { faults })
}

/// What a run did.
#[derive(Clone, Debug, PartialEq)]
pub struct RunReport {
    /// The seed.
    pub seed: u64,
    /// The world's counts.
    pub stats: Stats,
    /// The digest of every event.
    pub digest: u64,
    /// Faults in the plan.
    pub faults: usize,
    /// Flows, each probed.
    pub flows: usize,
    /// Virtual time at the end.
    pub end: Instant,
    /// Wall-clock time of the run (building included).
    pub wall: std::time::Duration,
    /// What the calls did, in a scenario with `calls`.
    pub calls: Option<CallCounts>,
}

/// What the calls of a run did (from the world's ledger).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallCounts {
    /// Calls the hosts placed (SETUP sent).
    pub placed: u64,
    /// Calls offered to a called host.
    pub offered: u64,
    /// Calls active at their caller.
    pub connected: u64,
    /// Calls that ended before they were active at the caller.
    pub failed: u64,
    /// Of those, refused for bandwidth by a switch (cause 37 at location LPN, the
    /// explanation in its diagnostics).
    pub no_cell_rate: u64,
    /// Virtual time from the end of the drain until no call was left anywhere (0: none
    /// was left by then).
    pub settle: Duration,
}

impl RunReport {
    /// Simulated cell events per second of wall-clock time.
    pub fn cell_events_per_sec(&self) -> f64 {
        self.stats.cell_events as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// A scenario made into a world.
pub(crate) struct Built {
    pub(crate) world: World,
    hosts: Vec<HostId>,
    switches: Vec<SwitchId>,
    links: Vec<LinkId>,
    base_impair: Vec<Impairments>,
    /// Per PVC: its cross-connects (switch, xc).
    pvc_xcs: Vec<Vec<(SwitchId, CrossConnect)>>,
    /// Per PVC: (host a, host b, vc, qos as seen from a, options a, options b).
    pvc_vcs: Vec<(HostId, HostId, VcId, Qos, VcOptions)>,
    flows: Vec<u32>,
}

fn swap(q: &Qos) -> Qos {
    Qos {
        tx: q.rx,
        rx: q.tx,
        ..*q
    }
}

/// What a host's UBR load is a fraction of on an unlimited link, which has no rate:
/// OC-3c's, in whole cells/s.
const UNLIMITED_LOAD_BASIS: u32 = natm_core::PhyRate::OC3.cells_per_s();

/// A link's rate in cells/s for reckoning load; an unlimited link counts as
/// [`UNLIMITED_LOAD_BASIS`].
fn load_basis(rate: &LineRate) -> f64 {
    rate.exact()
        .map_or(f64::from(UNLIMITED_LOAD_BASIS), |(n, d)| {
            n as f64 / d as f64
        })
}

impl Built {
    pub(crate) fn new(sc: &Scenario, seed: u64, probes: &Probes) -> Result<Built, ScenarioError> {
        let topo = &sc.topology;
        let sim = &sc.sim;
        let mut world = World::new(seed);
        let stop = Instant::from_nanos(sim.duration.as_nanos());
        let probe_at = Instant::from_nanos(sim.duration.as_nanos() + PROBE_DELAY.as_nanos());
        let switches: Vec<SwitchId> = topo
            .switches
            .iter()
            .map(|s| world.add_switch(s, SwitchConfig::default()))
            .collect();
        // Flows per host, numbered in PVC order: 2k from a, 2k+1 from b.
        let host_ix = |n: &str| topo.hosts.iter().position(|h| h == n);
        let link_rate = |h: &str| -> f64 {
            let (_, l) = topo
                .host_link(h)
                .expect("every host has its link (Topology::parse checks)");
            load_basis(&l.rate)
        };
        let mut ubr_count = vec![0usize; topo.hosts.len()];
        let mut qoses = Vec::new();
        for p in &topo.pvcs {
            let qos = p.qos;
            for end in [&p.a, &p.b] {
                if qos.tx.class == TrafficClass::Ubr
                    && let Some(h) = host_ix(end)
                {
                    ubr_count[h] += 1;
                }
            }
            qoses.push(qos);
        }
        let mut specs: Vec<Vec<FlowSpec>> = vec![Vec::new(); topo.hosts.len()];
        let mut flows = Vec::new();
        for (i, p) in topo.pvcs.iter().enumerate() {
            let g = sim.greedy.get(&i).copied().unwrap_or(1.0);
            for (k, (from, q)) in [(&p.a, qoses[i]), (&p.b, swap(&qoses[i]))]
                .into_iter()
                .enumerate()
            {
                let Some(h) = host_ix(from) else { continue };
                let flow = (2 * i + k) as u32;
                let c = natm_traffic::policer::Contract::from_params(&q.tx, u32::MAX).ok();
                let (pace, sizes) = match (q.tx.class, c) {
                    (TrafficClass::Cbr, Some(c)) => (
                        Pace::Even(0.9 * f64::from(c.pcr) * g),
                        (sim.sdu.0, sim.sdu.1.min(1500).max(sim.sdu.0)),
                    ),
                    (TrafficClass::Vbr, Some(c)) => {
                        let burst = (c.mbs as usize * 48).saturating_sub(8).max(sim.sdu.0);
                        (
                            Pace::Even(0.9 * f64::from(c.scr.max(1)) * g),
                            (sim.sdu.0, sim.sdu.1.min(burst).max(sim.sdu.0)),
                        )
                    }
                    (_, c) => {
                        let share = sim.ubr_load * link_rate(from) / ubr_count[h].max(1) as f64;
                        let rate = match c {
                            Some(c) => share.min(0.9 * f64::from(c.pcr) * g),
                            None => share,
                        };
                        (Pace::Random(rate), sim.sdu)
                    }
                };
                specs[h].push(FlowSpec {
                    flow,
                    vc: p.vc,
                    sizes,
                    pace,
                    seed: sub_seed(seed, &format!("load flow {flow}")),
                });
                flows.push(flow);
                let to = if k == 0 { &p.b } else { &p.a };
                if let Some(dest) = host_ix(to) {
                    world.checker_mut().register_load(dest as u32, p.vc, flow);
                }
            }
        }
        let buffer_size = sim.sdu.1.max(64).next_multiple_of(64);
        let mut hosts = Vec::new();
        let address = |n: &str| {
            topo.address_of(n)
                .ok_or_else(|| ScenarioError(format!("host {n}: no address")))
        };
        for (h, name) in topo.hosts.iter().enumerate() {
            let load = LoadApp::new(
                std::mem::take(&mut specs[h]),
                stop,
                probe_at,
                probes.clone(),
            );
            let app: Box<dyn crate::App> = if sim.calls {
                let mut peers = Vec::new();
                for other in topo.hosts.iter().filter(|o| *o != name) {
                    peers.push(address(other)?);
                }
                let index = u8::try_from(h)
                    .ok()
                    .filter(|i| *i < 128)
                    .ok_or_else(|| ScenarioError("sim.calls: at most 128 hosts".into()))?;
                let rng = crate::seed::Rng::for_component(seed, &format!("calls {name}"));
                Box::new(crate::calls::Both {
                    load,
                    calls: crate::calls::CallApp::new(index, peers, stop, rng),
                })
            } else {
                Box::new(load)
            };
            // 256 buffers, fewer for large SDUs: at most 4 MiB a host.
            let buffers = (4 << 20) / buffer_size;
            let mut config = HostConfig::new(buffers.clamp(16, 256) as u32, buffer_size);
            config.adapter.reassembly_timeout = Some(REASSEMBLY_TIMEOUT);
            let id = world
                .add_host(name, config, app)
                .map_err(|e| ScenarioError(e.to_string()))?;
            if sim.calls {
                let sig = natm_host_core::SignallingConfig::new(address(name)?);
                world
                    .enable_signalling(id, sig)
                    .map_err(|e| ScenarioError(e.to_string()))?;
            }
            hosts.push(id);
        }
        let mut links = Vec::new();
        let mut base_impair = Vec::new();
        for (li, l) in topo.links.iter().enumerate() {
            let what = format!("link {} ({} - {})", li + 1, l.a, l.b);
            let end = |n: &str| -> Result<End, ScenarioError> {
                if let Some(h) = host_ix(n) {
                    return Ok(End::Host(hosts[h]));
                }
                let s = topo
                    .switches
                    .iter()
                    .position(|x| x == n)
                    .ok_or_else(|| ScenarioError(format!("{what}: no node {n:?}")))?;
                let port = topo
                    .port_of(n, li)
                    .ok_or_else(|| ScenarioError(format!("{what}: no port on {n}")))?;
                Ok(End::Port(
                    switches[s],
                    PortId(port),
                    PortConfig {
                        cdvt: DEFAULT_CDVT,
                        signalling: sim.calls,
                        ..PortConfig::default()
                    },
                ))
            };
            let (rate, impairments) = (l.rate, l.impair);
            let id = world
                .add_link(
                    end(&l.a)?,
                    end(&l.b)?,
                    LinkConfig {
                        rate,
                        impairments,
                        ..LinkConfig::default()
                    },
                )
                .map_err(|e| ScenarioError(format!("{what}: {e}")))?;
            links.push(id);
            base_impair.push(impairments);
        }
        if sim.calls {
            for (s, name) in topo.switches.iter().enumerate() {
                let prefix = topo
                    .prefix_of(name)
                    .ok_or_else(|| ScenarioError(format!("switch {name}: no prefix")))?;
                let mut config = natm_calls::Config::new(name.clone(), prefix);
                config.routes = topo
                    .routes_of(name)
                    .map(|r| natm_calls::Route {
                        prefix: r.prefix,
                        port: PortId(r.port),
                    })
                    .collect();
                let sides = topo
                    .neighbours(name)
                    .filter_map(|(li, _)| {
                        let side = match topo.side(name, li) {
                            natm_topology::Side::Network => natm_calls::Side::Network,
                            natm_topology::Side::User => natm_calls::Side::User,
                        };
                        topo.port_of(name, li).map(|p| (PortId(p), side))
                    })
                    .collect();
                world
                    .enable_calls(switches[s], config, sides)
                    .map_err(|e| ScenarioError(format!("switch {name}: {e}")))?;
            }
        }
        let mut pvc_xcs = vec![Vec::new(); topo.pvcs.len()];
        for PvcCrossConnect {
            switch: s,
            a,
            b,
            pvc: i,
        } in topo.cross_connects()
        {
            let p = &topo.pvcs[i];
            let what = format!("pvc {} - {} {} on {}", p.a, p.b, p.vc, topo.switches[s]);
            let mut xc = CrossConnect::new(a, b, qoses[i]);
            xc.upc = p.upc;
            world
                .connect(switches[s], &xc)
                .map_err(|e| ScenarioError(format!("{what}: {e}")))?;
            pvc_xcs[i].push((switches[s], xc));
        }
        let mut pvc_vcs = Vec::new();
        for (i, p) in topo.pvcs.iter().enumerate() {
            let g = sim.greedy.get(&i).copied().unwrap_or(1.0);
            let opts = VcOptions { greedy: g };
            let host = |n: &str| {
                hosts[host_ix(n).expect("a PVC's ends are hosts (Topology::parse checks)")]
            };
            let (ha, hb) = (host(&p.a), host(&p.b));
            let what = format!("pvc {} ({} - {} {})", i + 1, p.a, p.b, p.vc);
            world
                .open_vc_with(ha, p.vc, &qoses[i], opts)
                .map_err(|e| ScenarioError(format!("{what}: {e}")))?;
            world
                .open_vc_with(hb, p.vc, &swap(&qoses[i]), opts)
                .map_err(|e| ScenarioError(format!("{what}: {e}")))?;
            pvc_vcs.push((ha, hb, p.vc, qoses[i], opts));
        }
        Ok(Built {
            world,
            hosts,
            switches,
            links,
            base_impair,
            pvc_xcs,
            pvc_vcs,
            flows,
        })
    }

    /// Schedules a fault's start and end.
    fn schedule(&mut self, f: &Fault) {
        let at = Instant::from_nanos(f.at.as_nanos());
        let end = Instant::from_nanos(f.at.as_nanos().saturating_add(f.length.as_nanos()));
        let w = &mut self.world;
        match &f.kind {
            FaultKind::Impair { link, impairments } => {
                let l = self.links[*link];
                w.schedule(at, Action::Impairments(l, Dirs::Both, *impairments));
                w.schedule(
                    end,
                    Action::Impairments(l, Dirs::Both, self.base_impair[*link]),
                );
            }
            FaultKind::LinkDown { link } => {
                w.schedule(at, Action::LinkUp(self.links[*link], false));
                w.schedule(end, Action::LinkUp(self.links[*link], true));
            }
            FaultKind::SwitchCrash { switch } => {
                w.schedule(at, Action::CrashSwitch(self.switches[*switch]));
                w.schedule(end, Action::RestartSwitch(self.switches[*switch]));
            }
            FaultKind::HostCrash { host } => {
                w.schedule(at, Action::CrashHost(self.hosts[*host]));
                w.schedule(end, Action::RestartHost(self.hosts[*host]));
            }
            FaultKind::Clog { switch, port } => {
                w.schedule(
                    at,
                    Action::Clog(self.switches[*switch], PortId(*port), true),
                );
                w.schedule(
                    end,
                    Action::Clog(self.switches[*switch], PortId(*port), false),
                );
            }
            FaultKind::DuplicateSignalling { link, p } => {
                let l = self.links[*link];
                w.schedule(at, Action::DuplicateSignalling(l, *p));
                w.schedule(end, Action::DuplicateSignalling(l, 0.0));
            }
            FaultKind::Churn { pvc } => {
                for (s, xc) in &self.pvc_xcs[*pvc] {
                    w.schedule(at, Action::DisconnectEndpoint(*s, xc.a));
                    w.schedule(end, Action::Connect(*s, *xc));
                }
                let (ha, hb, vc, qos, opts) = self.pvc_vcs[*pvc];
                w.schedule(at, Action::CloseVc(ha, vc));
                w.schedule(at, Action::CloseVc(hb, vc));
                w.schedule(end, Action::OpenVc(ha, vc, qos, opts));
                w.schedule(end, Action::OpenVc(hb, vc, swap(&qos), opts));
            }
        }
    }

    /// Where a flow's cells went: its path's counters, for a liveness failure's text.
    fn describe_flow(&self, flow: u32) -> String {
        let pvc = (flow / 2) as usize;
        let Some(&(ha, hb, vc, _, _)) = self.pvc_vcs.get(pvc) else {
            return String::new();
        };
        let (from, to) = if flow.is_multiple_of(2) {
            (ha, hb)
        } else {
            (hb, ha)
        };
        let w = &self.world;
        let vcc = |h: HostId| {
            w.hosts[h.0 as usize]
                .vcs
                .get(&vc)
                .and_then(|r| r.handle)
                .and_then(|hd| w.adapter(h).vc_counters(hd))
        };
        let mut text = format!(
            "{} → {} on {vc}: sender {:?}; receiver {:?}",
            w.host_name(from),
            w.host_name(to),
            vcc(from),
            vcc(to)
        );
        for (s, xc) in &self.pvc_xcs[pvc] {
            let live = w.switches[s.0 as usize]
                .xcs
                .values()
                .find(|r| r.xc.a == xc.a)
                .and_then(|r| r.live)
                .and_then(|id| w.switch(*s).connection(id));
            text += &format!("; {} {:?}", w.switch_name(*s), live.map(|(_, c)| c));
        }
        text
    }

    /// At the end of the fault phase: every fault cleared, whatever the plan left.
    fn clear_all(&mut self) {
        let w = &mut self.world;
        for &l in &self.links {
            let _ = w.apply(Action::LinkUp(l, true));
            let _ = w.apply(Action::Impairments(l, Dirs::Both, Impairments::default()));
        }
        for &s in &self.switches {
            let _ = w.apply(Action::RestartSwitch(s));
        }
        for &h in &self.hosts {
            let _ = w.apply(Action::RestartHost(h));
        }
        for &s in &self.switches {
            let ports: Vec<PortId> = w.switch(s).ports().map(|(p, _)| p).collect();
            for p in ports {
                let _ = w.apply(Action::Clog(s, p, false));
            }
        }
    }
}

/// Runs `scenario` with `seed`: the load and fault phase, then the liveness phase. With
/// `trace`, every event is written there as a line. A breached invariant ends the run; a
/// panic is reported as the invariant "no panic".
pub fn run(
    scenario: &Scenario,
    seed: u64,
    trace: Option<Box<dyn Write>>,
) -> Result<RunReport, Violation> {
    // A core that panics is a breach like any other: the swarm reports the seed and goes on.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_inner(scenario, seed, trace, false, true)
    }))
    .unwrap_or_else(|p| {
        Err(Violation::panicked(
            p.as_ref(),
            Instant::ZERO,
            0,
            "a core or the driver",
            " (the trace's last line is where)",
        ))
    })
}

/// [`run`] with the per-cell and per-SDU invariant checks off (the audits and the
/// liveness check stay): the engine's own speed, for measurements only.
pub fn run_unchecked(scenario: &Scenario, seed: u64) -> Result<RunReport, Violation> {
    run_inner(scenario, seed, None, false, false)
}

fn run_inner(
    scenario: &Scenario,
    seed: u64,
    trace: Option<Box<dyn Write>>,
    poll_all_ports: bool,
    checks: bool,
) -> Result<RunReport, Violation> {
    let wall = std::time::Instant::now();
    let probes = Probes::default();
    let mut b = Built::new(scenario, seed, &probes).map_err(|e| Violation {
        at: Instant::ZERO,
        seq: 0,
        invariant: "scenario builds",
        detail: e.0,
    })?;
    if let Some(t) = trace {
        b.world.set_trace(t);
    }
    b.world.set_poll_all_ports(poll_all_ports);
    b.world.checker_mut().enabled = checks;
    let plan = scenario.plan(seed);
    for f in &plan.faults {
        b.schedule(f);
    }
    b.world.start();
    let phase_end = Instant::from_nanos(scenario.sim.duration.as_nanos());
    b.world.run_until(phase_end)?;
    b.clear_all();
    b.world.audit_all()?;
    let end = Instant::from_nanos(scenario.sim.duration.as_nanos() + scenario.sim.drain.as_nanos());
    b.world.run_until(end)?;
    b.world.audit_all()?;
    let fail = |detail: String| Violation {
        at: end,
        seq: 0,
        invariant: "liveness",
        detail,
    };
    let calls = if scenario.sim.calls {
        Some(settle_calls(&mut b.world, end)?)
    } else {
        None
    };
    if scenario.sim.calls {
        // Signalling keeps its SAALs alive: a POLL may be on a link at any instant.
        for _ in 0..CALLS_BUSY_TRIES {
            if b.world.busy().is_none() {
                break;
            }
            let t = b.world.now().as_nanos() + 1_000_000;
            b.world.run_until(Instant::from_nanos(t))?;
        }
    }
    if let Some(what) = b.world.busy() {
        return Err(fail(format!(
            "{} after the drain bound ({} ns) with faults off: {what}",
            "not drained",
            scenario.sim.drain.as_nanos()
        )));
    }
    let probes = probes.borrow();
    for &flow in &b.flows {
        let Some(&probe) = probes.get(&flow) else {
            return Err(fail(format!("flow {flow}: its probe was never sent")));
        };
        let got = b.world.check.delivered(flow);
        if got.is_none_or(|g| g < probe) {
            return Err(fail(format!(
                "flow {flow}: probe SDU {probe} not delivered within the drain bound (last \
                 delivered: {got:?}); {}",
                b.describe_flow(flow)
            )));
        }
    }
    Ok(RunReport {
        seed,
        stats: b.world.stats(),
        digest: b.world.digest(),
        faults: plan.faults.len(),
        flows: b.flows.len(),
        end: b.world.now(),
        wall: wall.elapsed(),
        calls,
    })
}

/// How long calls may take to settle after the load phase (invariant "calls settle"):
/// above two T308s (30 s each), T303 twice and SSCOP's recoveries, with room.
pub const CALLS_SETTLE_BOUND: Duration = Duration::from_secs(400);

/// How often the settle loop looks.
const CALLS_SETTLE_STEP: Duration = Duration::from_millis(50);

/// After the calls settled, the run goes on this long (past every signalling timer that
/// could still bring a call back) before the end checks.
pub const CALLS_AFTER_SETTLE: Duration = Duration::from_secs(40);

/// 1 ms steps the drain check of a run with calls may wait for a keep-alive in flight.
const CALLS_BUSY_TRIES: u32 = 20;

/// The calls' liveness and end checks: from `from` (the end of the drain; every app
/// released its calls at the end of the load phase and places no more), every call is gone from every host and call control within
/// [`CALLS_SETTLE_BOUND`]; then, [`CALLS_AFTER_SETTLE`] later, the end checks of
/// [`World::check_calls_end`].
fn settle_calls(w: &mut World, from: Instant) -> Result<CallCounts, Violation> {
    let start = from.as_nanos();
    let bound = start + CALLS_SETTLE_BOUND.as_nanos();
    let mut t = w.now().as_nanos();
    let settled_at = loop {
        if w.calls_settled().is_none() {
            break t;
        }
        if t >= bound {
            let what = w.calls_settled().unwrap_or_default();
            return Err(Violation {
                at: w.now(),
                seq: 0,
                invariant: "calls settle",
                detail: format!(
                    "calls still up {} s after the drain with faults off: {what}",
                    CALLS_SETTLE_BOUND.as_nanos() / 1_000_000_000
                ),
            });
        }
        t = (t + CALLS_SETTLE_STEP.as_nanos()).min(bound);
        w.run_until(Instant::from_nanos(t))?;
    };
    w.run_until(Instant::from_nanos(
        settled_at + CALLS_AFTER_SETTLE.as_nanos(),
    ))?;
    w.check_calls_end()?;
    w.audit_all()?;
    let mut c = CallCounts {
        settle: Duration::from_nanos(settled_at.saturating_sub(start)),
        ..CallCounts::default()
    };
    for r in w.call_records() {
        if let Some((_, _, end)) = &r.caller {
            c.placed += 1;
            if end.connected {
                c.connected += 1;
            } else {
                c.failed += 1;
                if let Some(cause) = &end.released
                    && cause.value == natm_host_core::CauseValue::UserCellRateNotAvailable
                    && cause.location == natm_host_core::Location::PrivateLocal
                    && !cause.diagnostics.is_empty()
                {
                    c.no_cell_rate += 1;
                }
            }
        }
        if r.called.is_some() {
            c.offered += 1;
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_only_the_ports_cells_go_to_gives_the_run_the_drain_rule_gives() {
        // Faults included: the swarm's plans.
        for text in [
            DEFAULT_SCENARIO,
            include_str!("../../../examples/sim/two-switches.toml"),
        ] {
            let sc = Scenario::parse(text, None).unwrap();
            for seed in 0..6 {
                let a = run_inner(&sc, seed, None, false, true).unwrap();
                let b = run_inner(&sc, seed, None, true, true).unwrap();
                // The same events at the same instants with the same cells; a cell a
                // paced port sends at the instant of an input may be counted in the
                // switch's timeout event at that instant instead, so digests may differ.
                assert_eq!(a.stats, b.stats, "seed {seed}");
                assert!(a.stats.sdus_delivered > 100);
            }
        }
    }

    #[test]
    fn a_topology_with_an_external_peer_is_not_simulated() {
        let text = format!(
            "{DEFAULT_SCENARIO}\n[[external]]\nnode = \"s1\"\nlisten = \"127.0.0.1:2812\"\nprefix = \"39\"\n"
        );
        let e = Scenario::parse(&text, None).unwrap_err();
        assert_eq!(
            e.0,
            "external (s1): foreign peers over atmtcp are not simulated"
        );
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("50ms"), Some(Duration::from_millis(50)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("200us"), Some(Duration::from_micros(200)));
        assert_eq!(parse_duration("7 ns"), Some(Duration::from_nanos(7)));
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("-1ms"), None);
        assert_eq!(parse_duration("1h"), None);
    }

    #[test]
    fn the_default_scenario_is_the_default_labs_network() {
        let sc = Scenario::default_scenario();
        let lab = Topology::parse(natm_topology::DEFAULT_TOPOLOGY, None).unwrap();
        assert_eq!(sc.topology.switches, lab.switches);
        assert_eq!(sc.topology.hosts, lab.hosts);
        assert_eq!(sc.topology.links, lab.links);
        let qos: Vec<String> = sc.topology.pvcs.iter().map(|p| p.qos.to_string()).collect();
        let classes: Vec<&str> = qos.iter().map(|q| &q[..3]).collect();
        for c in ["ubr", "cbr", "vbr"] {
            assert!(classes.contains(&c), "{classes:?}");
        }
        assert_eq!(sc.sim.greedy.values().copied().collect::<Vec<_>>(), [2.0]);
        assert_eq!(sc.sim.faults, FaultMode::Swarm);
    }

    #[test]
    fn a_value_that_does_not_parse_is_refused_at_parse_naming_the_entry_and_the_key() {
        for (from, to, want) in [
            (
                "upc = \"tag\"",
                "upc = \"drop\"",
                "pvc 3 (h1 - h2 0.111): upc \"drop\": ",
            ),
            (
                "qos = \"cbr:pcr=8000\"",
                "qos = \"cbr:pcr=eight\"",
                "pvc 4 (h1 - h2 0.112): qos \"cbr:pcr=eight\": ",
            ),
            (
                "vc = \"0.112\"\ngreedy",
                "vc = \"0.x\"\ngreedy",
                "sim.flow 1: vc \"0.x\": ",
            ),
        ] {
            let text = DEFAULT_SCENARIO.replacen(from, to, 1);
            assert_ne!(text, DEFAULT_SCENARIO, "{from}");
            let e = Scenario::parse(&text, None).unwrap_err().0;
            assert!(e.starts_with(want), "{to}: {e}");
        }
    }
}

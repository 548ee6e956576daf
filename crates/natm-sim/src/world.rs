//! The simulated network: hosts, switches and links built with [`World`]'s builder calls,
//! and the event loop that drives the production cores through virtual time.
//!
//! * **Hosts.** A natm-adapter [`Adapter`] over [`VecBuffers`], half the buffers kept
//!   posted for receive and half a free list for transmit; a CPU modelled as one FIFO
//!   server charging [`HostCosts`] per send (before the SDU is posted) and per SDU
//!   received (before the app sees it); and an [`App`]. Transmit VCs are derived from a
//!   QoS as natm-host's hostd does (host CAC on the link; CBR at the contract PCR, VBR at
//!   PCR/SCR/MBS, UBR at its own PCR or unshaped).
//! * **Links.** Two natm-netem [`Netem`] directions. A cell offered to a down link is
//!   dropped and counted; cells in flight keep their fate. Link down/up takes the switch
//!   ports at its ends down/up ([`Switch::set_port_up`], which sends AIS).
//! * **Switches.** A natm-switch [`Switch`], one port per link, the rate from the link
//!   (whole cells/s, as switchd does) and a 1 ms CDVT unless the port config says
//!   otherwise. A clogged port is not polled for output until unclogged. A crashed switch
//!   loses all state; on restart it is rebuilt from the world's record of its ports and
//!   cross-connects (as switchd restarts from its configuration).
//! * **Crashes.** A crashed host loses its adapter, its queued CPU work and its timers; the
//!   [`App`] object is kept (it is the program, restarted: `start` is called again) and its
//!   VCs are reopened on restart.
//!
//! # Events and the drain rules
//!
//! Events: a link direction's next departure ([`Netem::poll_timeout`]), an adapter's
//! timeout, a switch's timeout, a host CPU finishing a job, an app timer, a scheduled
//! [`Action`]. Each core is drained as its module doc says: after input or a command the
//! adapter's `poll_transmit`, `poll_completion` and `poll_event` until empty, the switch's
//! `poll_transmit` on every (unclogged) port until it gives less than asked, a netem's
//! `poll_transmit` until `None`; then each is armed at its `poll_timeout`.
//!
//! A *cell event* is one cell handled by one component: a cell the adapter transmits, a
//! cell offered to a link direction, a cell handed to a switch port, a cell handed to an
//! adapter's receive side. [`Stats::cell_events`] counts them; it is the unit of the
//! simulator's speed.
//!
//! # Determinism
//!
//! Events run in (time, sequence) order; every random draw comes from a sub-seed of the
//! world's seed ([`crate::seed`]); maps iterated on the path are ordered (`BTreeMap`).
//! Every event feeds its time, sequence, kind, component and a count into a 64-bit FNV-1a
//! digest ([`World::digest`]); [`World::set_trace`] also writes it as a text line.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::fmt;
use std::io::Write;

use natm_adapter::{
    Adapter, AdapterConfig, BufferId, Completion, Direction as AdDir, RxVcConfig, Status,
    UBR_UNSHAPED_PCR, VecBuffers,
};
use natm_core::{Duration, Instant, LineRate, PhyRate, Qos, TrafficClass, VcId};
use natm_netem::{Config as NetemConfig, Impairments, Netem};
use natm_switch::{CrossConnect, Endpoint, PortConfig, PortId, Switch, SwitchConfig};
use natm_traffic::cac::{Cac, CacConfig};
use natm_traffic::sched::VcSpec;

use crate::app::{App, AppIo, HostCosts};
use crate::check::{Checker, FastMap};
use crate::queue::{EventQueue, Target};
use crate::seed::{FNV_OFFSET, FNV_PRIME, sub_seed};

/// A host's handle in its world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostId(pub u32);
/// A switch's handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SwitchId(pub u32);
/// A link's handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkId(pub u32);
/// A cross-connect's handle in the world's record: stable across switch restarts (the
/// switch's own [`natm_switch::XcId`] changes when it is rebuilt).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u32);

/// One end of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// A host (one link per host).
    Host(HostId),
    /// A new port of a switch. Its rate is set from the link (whole cells/s).
    Port(SwitchId, PortId, PortConfig),
}

/// A host's make-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostConfig {
    /// The adapter's settings; its link rate, `buffers` and `rx_buffer_size` are set by the
    /// world (from the link and the fields below).
    pub adapter: AdapterConfig,
    /// Buffers in all: half are kept posted for receive, half are the transmit free list.
    pub buffers: u32,
    /// Bytes per buffer (the largest SDU sent or received).
    pub buffer_size: usize,
    /// CPU costs per message.
    pub costs: HostCosts,
}

impl HostConfig {
    /// `buffers` buffers of `buffer_size` bytes, a free CPU, the adapter's defaults.
    pub fn new(buffers: u32, buffer_size: usize) -> HostConfig {
        HostConfig {
            adapter: AdapterConfig::new(buffers, buffer_size),
            buffers,
            buffer_size,
            costs: HostCosts::FREE,
        }
    }
}

impl Default for HostConfig {
    /// 256 buffers of 9,216 bytes.
    fn default() -> HostConfig {
        HostConfig::new(256, 9216)
    }
}

/// A link's make-up (both directions alike).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    /// The line rate.
    pub rate: LineRate,
    /// Impairments; each direction gets its own sub-seed of the world's seed (the seed
    /// here is ignored).
    pub impairments: Impairments,
    /// Cells that may wait for the line.
    pub queue_cells: usize,
}

impl Default for LinkConfig {
    /// OC-3c, no impairments, natm-netem's default queue.
    fn default() -> LinkConfig {
        LinkConfig {
            rate: LineRate::default(),
            impairments: Impairments::default(),
            queue_cells: natm_netem::DEFAULT_QUEUE_CELLS as usize,
        }
    }
}

/// How a host's transmit side shapes a VC.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VcOptions {
    /// Shape at this multiple of the contract's rates (1.0: within contract; 2.0: a greedy
    /// source the switch must police). Capped at the link's rate.
    pub greedy: f64,
}

impl Default for VcOptions {
    fn default() -> VcOptions {
        VcOptions { greedy: 1.0 }
    }
}

/// Which directions of a link an impairment change applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dirs {
    /// From end `a` to end `b`.
    AToB,
    /// From `b` to `a`.
    BToA,
    /// Both.
    Both,
}

/// A fault or command, carried out at once or at a scheduled instant.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Bring a link down (`false`) or up.
    LinkUp(LinkId, bool),
    /// Crash a switch (it loses all state).
    CrashSwitch(SwitchId),
    /// Restart a crashed switch from the world's record.
    RestartSwitch(SwitchId),
    /// Crash a host (adapter, CPU queue and timers lost).
    CrashHost(HostId),
    /// Restart a crashed host: VCs reopened, `App::start` called.
    RestartHost(HostId),
    /// Stop (`true`) or resume polling a switch port's output.
    Clog(SwitchId, PortId, bool),
    /// Make a cross-connect (the id it gets is returned by [`World::connect`]; scheduled,
    /// it is recorded as the next `ConnId`).
    Connect(SwitchId, CrossConnect),
    /// Remove a cross-connect.
    Disconnect(SwitchId, ConnId),
    /// Remove the recorded cross-connect whose `a` end is this endpoint.
    DisconnectEndpoint(SwitchId, Endpoint),
    /// Open a VC at a host.
    OpenVc(HostId, VcId, Qos, VcOptions),
    /// Close a VC at a host.
    CloseVc(HostId, VcId),
    /// New impairments on a link, for cells offered from now on.
    Impairments(LinkId, Dirs, Impairments),
}

/// Why a builder call or command was refused; the text names what was wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// No such host.
    #[error("no host {0}")]
    UnknownHost(u32),
    /// No such switch.
    #[error("no switch {0}")]
    UnknownSwitch(u32),
    /// No such link.
    #[error("no link {0}")]
    UnknownLink(u32),
    /// No such cross-connect in the record.
    #[error("switch {switch}: no cross-connect {conn}")]
    UnknownConn {
        /// The switch.
        switch: String,
        /// The id.
        conn: u32,
    },
    /// A host has one link.
    #[error("host {0} has a link already")]
    HostHasLink(String),
    /// A host needs its link before VCs.
    #[error("host {0} has no link")]
    NoLink(String),
    /// The switch refused.
    #[error("switch {switch}: {reason}")]
    Switch {
        /// The switch.
        switch: String,
        /// Its refusal.
        reason: String,
    },
    /// The host refused (CAC, adapter).
    #[error("host {host}: {reason}")]
    Host {
        /// The host.
        host: String,
        /// Its refusal.
        reason: String,
    },
    /// A configuration value is unusable.
    #[error("{0}")]
    Config(String),
}

/// An invariant breached: the run stops at the event that showed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Virtual time of the event.
    pub at: Instant,
    /// The event's sequence number (its low 32 bits, as the trace shows it).
    pub seq: u64,
    /// Which invariant (see [`crate::check`]).
    pub invariant: &'static str,
    /// What was seen.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invariant \"{}\" broken at {} ns (event {}): {}",
            self.invariant,
            self.at.as_nanos(),
            self.seq,
            self.detail
        )
    }
}

impl std::error::Error for Violation {}

/// What the run has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Events run (stale queue entries not counted).
    pub events: u64,
    /// Stale queue entries skipped.
    pub stale: u64,
    /// Cells handled by one component each (see the module doc).
    pub cell_events: u64,
    /// SDUs the apps sent that a host took (a buffer, an open VC).
    pub sdus_sent: u64,
    /// Sends refused at once (no buffer, VC not open, bad length) or after the CPU (VC
    /// closed meanwhile).
    pub sends_refused: u64,
    /// SDUs delivered to apps.
    pub sdus_delivered: u64,
    /// Cells offered to a down link.
    pub dropped_link_down: u64,
    /// Cells that reached a crashed node.
    pub dropped_node_down: u64,
    /// Scheduled actions carried out.
    pub actions: u64,
    /// Actions refused (logged in the trace).
    pub actions_refused: u64,
}

/// Event kinds, the top bits of a queue [`Target`].
pub(crate) mod kind {
    pub const LINK: u8 = 0;
    pub const ADAPTER: u8 = 1;
    pub const SWITCH: u8 = 2;
    pub const CPU: u8 = 3;
    pub const TIMER: u8 = 4;
    pub const ACTION: u8 = 5;
    pub const NAMES: [&str; 6] = ["link", "adapter", "switch", "cpu", "timer", "action"];
}

/// Not armed.
const IDLE: u64 = u64::MAX;
/// Cells polled per batch.
const BATCH: usize = 32;
/// A core that reports a timeout at or before the instant it was just drained at (a
/// clogged port's due cell) is looked at again this much later, not in a loop.
const RETRY_NS: u64 = 1_000;
/// Events between two whole-world audits (besides those after every action), at least.
const AUDIT_EVERY: u64 = 1 << 14;
/// A whole-world audit costs about one pass over the state; it runs at most once per this
/// many events per item of state (cross-connect, port, host buffer), so that in a large
/// world it stays a small share of the run rather than growing with the world.
const AUDIT_EVENTS_PER_ITEM: u64 = 4;
/// The CDVT a switch port tolerates unless its config gives one (switchd's default).
pub const DEFAULT_CDVT: Duration = Duration::from_millis(1);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EndRec {
    Host(u32),
    Port(u32, PortId),
}

pub(crate) struct LinkRec {
    pub(crate) ends: [EndRec; 2],
    pub(crate) dirs: [Netem; 2],
    pub(crate) up: bool,
    pub(crate) config: LinkConfig,
    pub(crate) armed: [u64; 2],
}

/// A buffer as the world sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Buf {
    /// In the host's free list.
    Free,
    /// Holding an SDU waiting for the CPU (send).
    Cpu,
    /// Posted to the adapter (handle for transmit; `None` for receive).
    Adapter(Option<u32>),
    /// A received SDU waiting for the CPU.
    Received,
}

#[derive(Clone, Copy, Debug)]
enum Job {
    Send { vc: VcId, buf: BufferId, len: usize },
    Recv { vc: VcId, buf: BufferId, len: usize },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct VcRec {
    pub(crate) qos: Qos,
    pub(crate) options: VcOptions,
    /// The adapter handle while open (`None` while the host is down).
    pub(crate) handle: Option<u32>,
    cac: Option<natm_traffic::cac::Handle>,
}

pub(crate) struct HostNode {
    pub(crate) name: String,
    pub(crate) config: HostConfig,
    pub(crate) adapter: Adapter,
    pub(crate) mem: VecBuffers,
    pub(crate) link: Option<(u32, usize)>,
    pub(crate) up: bool,
    app: Option<Box<dyn App>>,
    io: AppIo,
    pub(crate) vcs: BTreeMap<VcId, VcRec>,
    pub(crate) by_handle: BTreeMap<u32, VcId>,
    next_handle: u32,
    cac: Cac,
    rx_free: Vec<BufferId>,
    tx_free: Vec<BufferId>,
    pub(crate) bufs: Vec<Buf>,
    /// Per transmit buffer: the VC and length of the send it holds.
    tx_meta: Vec<(VcId, usize)>,
    cpu: VecDeque<Job>,
    cpu_busy: bool,
    timers: BinaryHeap<Reverse<(u64, u64, u64)>>,
    timer_seq: u64,
    notices: VecDeque<(VcId, usize, bool)>,
    started: bool,
    armed: [u64; 3],
}

impl HostNode {
    fn rx_count(&self) -> u32 {
        (self.config.buffers / 2).max(1)
    }

    /// Whether the CPU has work.
    pub(crate) fn cpu_busy(&self) -> bool {
        self.cpu_busy || !self.cpu.is_empty()
    }
}

#[derive(Clone, Debug)]
pub(crate) struct PortRec {
    pub(crate) id: PortId,
    pub(crate) config: PortConfig,
    pub(crate) link: u32,
    /// The link direction leaving the switch by this port.
    pub(crate) out_dir: usize,
    pub(crate) clogged: bool,
    /// The last instant its output was polled.
    polled_at: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct XcRec {
    pub(crate) xc: CrossConnect,
    pub(crate) live: Option<natm_switch::XcId>,
}

pub(crate) struct SwitchNode {
    pub(crate) name: String,
    config: SwitchConfig,
    pub(crate) sw: Switch,
    pub(crate) up: bool,
    pub(crate) ports: Vec<PortRec>,
    pub(crate) xcs: BTreeMap<ConnId, XcRec>,
    armed: u64,
    /// (input port, VPI << 16 | VCI, or VPI << 16 | 0xFFFF_0000 for a VP) → the output
    /// port's index in `ports`, from the record: which ports a cell's arrival can give
    /// output to.
    route: FastMap<(u16, u32), u32>,
    /// Port number → index in `ports`.
    port_ix: FastMap<u16, u32>,
    route_dirty: bool,
    /// The last instant some ports were left unpolled after an input or a timeout.
    skipped_at: u64,
    /// Per port (index in `ports`): the switch's `port_timeout` in ns as last read, or
    /// `IDLE` (none, or taken off `due` to be polled). Not `IDLE` means in `due`.
    port_due: Vec<u64>,
    /// The ports' timeouts, earliest first; an entry that is not its port's `port_due` is
    /// stale and skipped. A timeout then polls the due ports only, not all of them.
    due: BinaryHeap<Reverse<(u64, u32)>>,
}

impl SwitchNode {
    pub(crate) fn port(&self, id: PortId) -> Option<&PortRec> {
        self.ports.iter().find(|p| p.id == id)
    }

    /// Re-reads port `i`'s timeout from the switch after something may have changed it.
    fn refresh_due(&mut self, i: u32) {
        let t = self
            .sw
            .port_timeout(self.ports[i as usize].id)
            .map_or(IDLE, |t| t.as_nanos());
        let slot = &mut self.port_due[i as usize];
        if t != *slot {
            *slot = t;
            if t != IDLE {
                self.due.push(Reverse((t, i)));
            }
        }
    }

    /// The ports due at or before `now` into `out` (ascending, each once), taken off `due`.
    fn take_due(&mut self, now: u64, out: &mut Vec<u32>) {
        while let Some(&Reverse((t, i))) = self.due.peek() {
            if t > now {
                break;
            }
            self.due.pop();
            if self.port_due[i as usize] == t {
                self.port_due[i as usize] = IDLE;
                out.push(i);
            }
        }
        out.sort_unstable();
    }

    /// The earliest port timeout: the switch's `poll_timeout`, without a pass over the
    /// ports.
    fn next_due(&mut self) -> Option<Instant> {
        while let Some(&Reverse((t, i))) = self.due.peek() {
            if self.port_due[i as usize] == t {
                return Some(Instant::from_nanos(t));
            }
            self.due.pop();
        }
        None
    }

    /// Forgets every port timeout (the switch was replaced).
    fn clear_due(&mut self) {
        self.due.clear();
        self.port_due.fill(IDLE);
    }

    fn rebuild_route(&mut self) {
        self.route.clear();
        for r in self.xcs.values() {
            for (from, to) in [(r.xc.a, r.xc.b), (r.xc.b, r.xc.a)] {
                let key = match from.vci {
                    Some(vci) => u32::from(from.vpi) << 16 | u32::from(vci),
                    None => u32::from(from.vpi) << 16 | VP_MARK,
                };
                if let Some(&i) = self.port_ix.get(&to.port.0) {
                    self.route.insert((from.port.0, key), i);
                }
            }
        }
        self.route_dirty = false;
    }

    /// The output ports (indices in `ports`) `cells` arriving at `port` may go to, into
    /// `out`; `false` if that cannot be told from their headers (damaged, OAM, unknown) and
    /// every port must be polled.
    fn outputs(&mut self, port: PortId, cells: &[[u8; 53]], out: &mut Vec<u32>) -> bool {
        if self.route_dirty {
            self.rebuild_route();
        }
        for c in cells {
            if natm_wire::cell::hec([c[0], c[1], c[2], c[3]]) != c[4] || c[3] & 0x08 != 0 {
                return false;
            }
            let w = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
            let vpi = (w >> 20) & 0xFF;
            let vci = (w >> 4) & 0xFFFF;
            let hit = self
                .route
                .get(&(port.0, vpi << 16 | vci))
                .or_else(|| self.route.get(&(port.0, vpi << 16 | VP_MARK)));
            match hit {
                Some(&o) => {
                    if !out.contains(&o) {
                        out.push(o);
                    }
                }
                None => return false,
            }
        }
        true
    }
}

/// Marks a VP entry in [`SwitchNode::route`] (no VCI has these bits).
const VP_MARK: u32 = 0xFFFF_0000;

/// The simulated network and its event loop.
pub struct World {
    seed: u64,
    now: Instant,
    queue: EventQueue,
    pub(crate) hosts: Vec<HostNode>,
    pub(crate) switches: Vec<SwitchNode>,
    pub(crate) links: Vec<LinkRec>,
    actions: BTreeMap<(u64, u64), Action>,
    action_seq: u64,
    action_armed: u64,
    next_conn: u32,
    stats: Stats,
    digest: u64,
    trace: Option<Box<dyn Write>>,
    pub(crate) check: Checker,
    violation: Option<Violation>,
    cur_seq: u64,
    cells: Vec<[u8; 53]>,
    /// Output batch for the cores' poll_transmit, kept to spare a 1.7 KB memset per drain.
    out: Vec<[u8; 53]>,
    /// Output ports (indices) of a switch input, kept between calls.
    outs: Vec<u32>,
    poll_all_ports: bool,
    /// The event count at which the next periodic audit runs.
    next_audit: u64,
}

impl World {
    /// An empty world at time zero, all randomness from `seed`.
    pub fn new(seed: u64) -> World {
        World {
            seed,
            now: Instant::ZERO,
            queue: EventQueue::new(),
            hosts: Vec::new(),
            switches: Vec::new(),
            links: Vec::new(),
            actions: BTreeMap::new(),
            action_seq: 0,
            action_armed: IDLE,
            next_conn: 0,
            stats: Stats::default(),
            digest: FNV_OFFSET,
            trace: None,
            check: Checker::new(),
            violation: None,
            cur_seq: 0,
            cells: Vec::with_capacity(BATCH),
            out: vec![[0; 53]; BATCH],
            outs: Vec::new(),
            poll_all_ports: false,
            next_audit: AUDIT_EVERY,
        }
    }

    /// The master seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Write every event as a text line to `out` from now on.
    pub fn set_trace(&mut self, out: Box<dyn Write>) {
        self.trace = Some(out);
    }

    /// The current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// What the run has done so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The running hash of every event (time, sequence, kind, component, count).
    pub fn digest(&self) -> u64 {
        self.digest
    }

    /// Poll every port of a switch after each input, as the switch's drain rule says
    /// literally, instead of only the ports the cells go to (the default, which gives the
    /// same run; kept to show that it does).
    pub fn set_poll_all_ports(&mut self, on: bool) {
        self.poll_all_ports = on;
    }

    /// The invariant checker (to register flows and switch checks on or off).
    pub fn checker_mut(&mut self) -> &mut Checker {
        &mut self.check
    }

    // ------------------------------------------------------------------ builder

    /// Adds a switch with no ports.
    pub fn add_switch(&mut self, name: &str, config: SwitchConfig) -> SwitchId {
        self.switches.push(SwitchNode {
            name: name.to_string(),
            config,
            sw: Switch::new(config),
            up: true,
            ports: Vec::new(),
            xcs: BTreeMap::new(),
            armed: IDLE,
            route: FastMap::default(),
            port_ix: FastMap::default(),
            route_dirty: true,
            skipped_at: 0,
            port_due: Vec::new(),
            due: BinaryHeap::new(),
        });
        SwitchId(self.switches.len() as u32 - 1)
    }

    /// Adds a host running `app`; it needs a link ([`add_link`](Self::add_link)) before
    /// VCs, and starts at [`start`](Self::start).
    pub fn add_host(
        &mut self,
        name: &str,
        config: HostConfig,
        app: Box<dyn App>,
    ) -> Result<HostId, SimError> {
        let adapter =
            make_adapter(&config, LineRate::Unlimited).map_err(|reason| SimError::Host {
                host: name.to_string(),
                reason,
            })?;
        let n = config.buffers;
        let rx = (n / 2).max(1);
        self.hosts.push(HostNode {
            name: name.to_string(),
            config,
            adapter,
            mem: VecBuffers::new(n, config.buffer_size),
            link: None,
            up: true,
            app: Some(app),
            io: AppIo::new(),
            vcs: BTreeMap::new(),
            by_handle: BTreeMap::new(),
            next_handle: 1,
            cac: host_cac(name, None),
            rx_free: (0..rx).rev().map(BufferId).collect(),
            tx_free: (rx..n).rev().map(BufferId).collect(),
            bufs: vec![Buf::Free; n as usize],
            tx_meta: vec![(VcId::default(), 0); n as usize],
            cpu: VecDeque::new(),
            cpu_busy: false,
            timers: BinaryHeap::new(),
            timer_seq: 0,
            notices: VecDeque::new(),
            started: false,
            armed: [IDLE; 3],
        });
        Ok(HostId(self.hosts.len() as u32 - 1))
    }

    /// Joins two ends with a link. A host end gets its adapter's rate from the link; a
    /// port end is added to its switch with the link's rate (whole cells/s).
    pub fn add_link(&mut self, a: End, b: End, config: LinkConfig) -> Result<LinkId, SimError> {
        let li = self.links.len() as u32;
        let cps = config.rate.cells_per_s();
        for end in [&a, &b] {
            match *end {
                End::Host(h) => {
                    let host = self.host_ref(h)?;
                    if host.link.is_some() {
                        return Err(SimError::HostHasLink(host.name.clone()));
                    }
                }
                End::Port(s, p, _) => {
                    let sw = self.switch_ref(s)?;
                    if sw.port(p).is_some() {
                        return Err(SimError::Switch {
                            switch: sw.name.clone(),
                            reason: format!("port {p} exists already"),
                        });
                    }
                }
            }
        }
        if a == b {
            return Err(SimError::Config("a link joins two different ends".into()));
        }
        let mut ends = [EndRec::Host(0); 2];
        for (side, end) in [a, b].into_iter().enumerate() {
            match end {
                End::Host(h) => {
                    let host = &mut self.hosts[h.0 as usize];
                    host.adapter = make_adapter(&host.config, config.rate).map_err(|reason| {
                        SimError::Host {
                            host: host.name.clone(),
                            reason,
                        }
                    })?;
                    host.cac = host_cac(&host.name, cps);
                    host.link = Some((li, side));
                    ends[side] = EndRec::Host(h.0);
                }
                End::Port(s, p, mut pc) => {
                    let sw = &mut self.switches[s.0 as usize];
                    pc.rate = config.rate;
                    sw.sw.add_port(p, pc).map_err(|e| SimError::Switch {
                        switch: sw.name.clone(),
                        reason: e.to_string(),
                    })?;
                    sw.port_ix.insert(p.0, sw.ports.len() as u32);
                    sw.port_due.push(IDLE);
                    sw.ports.push(PortRec {
                        id: p,
                        config: pc,
                        link: li,
                        out_dir: side,
                        clogged: false,
                        polled_at: 0,
                    });
                    ends[side] = EndRec::Port(s.0, p);
                }
            }
        }
        let dir = |d: usize| {
            let mut imp = config.impairments;
            imp.seed = sub_seed(self.seed, &format!("link {li} dir {d}"));
            Netem::new(&NetemConfig {
                rate: config.rate,
                queue_cells: u32::try_from(config.queue_cells).unwrap_or(u32::MAX),
                impairments: imp,
                ..NetemConfig::default()
            })
        };
        let dirs = [dir(0), dir(1)];
        self.links.push(LinkRec {
            ends,
            dirs,
            up: true,
            config,
            armed: [IDLE; 2],
        });
        Ok(LinkId(li))
    }

    /// Makes a cross-connect on switch `s` now (recorded, so a restart remakes it).
    pub fn connect(&mut self, s: SwitchId, xc: &CrossConnect) -> Result<ConnId, SimError> {
        let id = self.connect_unaudited(s, xc)?;
        self.audit_switch_ports(s.0, Some([xc.a.port, xc.b.port]));
        Ok(id)
    }

    /// Makes many cross-connects on switch `s` now, then audits the switch once (each
    /// audit walks the switch's record, so one per connect is quadratic in their number).
    /// Stops at the first refusal; those made before it stay made, as with `connect`.
    pub fn connect_all(
        &mut self,
        s: SwitchId,
        xcs: &[CrossConnect],
    ) -> Result<Vec<ConnId>, (usize, SimError)> {
        let mut ids = Vec::with_capacity(xcs.len());
        let mut result = Ok(());
        for (i, xc) in xcs.iter().enumerate() {
            match self.connect_unaudited(s, xc) {
                Ok(id) => ids.push(id),
                Err(e) => {
                    result = Err((i, e));
                    break;
                }
            }
        }
        if self.switch_ref(s).is_ok() {
            self.audit_switch_ports(s.0, None);
        }
        result.map(|()| ids)
    }

    fn connect_unaudited(&mut self, s: SwitchId, xc: &CrossConnect) -> Result<ConnId, SimError> {
        self.switch_ref(s)?;
        let now = self.now;
        let node = &mut self.switches[s.0 as usize];
        let live = if node.up {
            Some(node.sw.connect(now, xc).map_err(|e| SimError::Switch {
                switch: node.name.clone(),
                reason: e.to_string(),
            })?)
        } else {
            None
        };
        let id = ConnId(self.next_conn);
        self.next_conn += 1;
        node.xcs.insert(id, XcRec { xc: *xc, live });
        node.route_dirty = true;
        self.check.leg_reset(s.0, id);
        Ok(id)
    }

    /// Removes a cross-connect from switch `s` and from the record.
    pub fn disconnect(&mut self, s: SwitchId, conn: ConnId) -> Result<(), SimError> {
        self.switch_ref(s)?;
        let node = &mut self.switches[s.0 as usize];
        let rec = node
            .xcs
            .remove(&conn)
            .ok_or_else(|| SimError::UnknownConn {
                switch: node.name.clone(),
                conn: conn.0,
            })?;
        node.route_dirty = true;
        if let (true, Some(live)) = (node.up, rec.live) {
            node.sw.disconnect(live).map_err(|e| SimError::Switch {
                switch: node.name.clone(),
                reason: e.to_string(),
            })?;
        }
        self.check.leg_reset(s.0, conn);
        self.drain_switch(s.0);
        self.audit_switch_ports(s.0, Some([rec.xc.a.port, rec.xc.b.port]));
        Ok(())
    }

    /// The cross-connects recorded on switch `s`.
    pub fn connections(&self, s: SwitchId) -> Vec<(ConnId, CrossConnect)> {
        self.switches
            .get(s.0 as usize)
            .map(|n| n.xcs.iter().map(|(id, r)| (*id, r.xc)).collect())
            .unwrap_or_default()
    }

    /// Opens `vc` at host `h` within its contract.
    pub fn open_vc(&mut self, h: HostId, vc: VcId, qos: &Qos) -> Result<(), SimError> {
        self.open_vc_with(h, vc, qos, VcOptions::default())
    }

    /// Opens `vc` at host `h`: host CAC on its link, then the adapter VC shaped as
    /// hostd shapes it (times `options.greedy`).
    pub fn open_vc_with(
        &mut self,
        h: HostId,
        vc: VcId,
        qos: &Qos,
        options: VcOptions,
    ) -> Result<(), SimError> {
        self.host_ref(h)?;
        let host = &mut self.hosts[h.0 as usize];
        let refuse = |host: &HostNode, reason: String| SimError::Host {
            host: host.name.clone(),
            reason,
        };
        if host.link.is_none() {
            return Err(SimError::NoLink(host.name.clone()));
        }
        if host.vcs.contains_key(&vc) {
            return Err(refuse(host, format!("VC {vc} is open already")));
        }
        if !(options.greedy.is_finite() && options.greedy > 0.0) {
            return Err(refuse(
                host,
                format!("greedy factor {} is not > 0", options.greedy),
            ));
        }
        let cac = host
            .cac
            .admit(&qos.tx)
            .map_err(|e| refuse(host, e.to_string()))?;
        let mut rec = VcRec {
            qos: *qos,
            options,
            handle: None,
            cac: Some(cac),
        };
        if host.up
            && let Err(e) = open_in_adapter(host, vc, &mut rec)
        {
            let _ = host.cac.release(cac);
            return Err(refuse(host, e));
        }
        host.vcs.insert(vc, rec);
        self.drain_host(h.0);
        Ok(())
    }

    /// Closes `vc` at host `h`: every buffer it held comes back.
    pub fn close_vc(&mut self, h: HostId, vc: VcId) -> Result<(), SimError> {
        self.host_ref(h)?;
        let host = &mut self.hosts[h.0 as usize];
        let rec = host.vcs.remove(&vc).ok_or_else(|| SimError::Host {
            host: host.name.clone(),
            reason: format!("VC {vc} is not open"),
        })?;
        if let Some(c) = rec.cac {
            let _ = host.cac.release(c);
        }
        if let Some(handle) = rec.handle {
            let _ = host.adapter.close_vc(handle);
            // Drained while the handle still names the VC, so the app hears of its
            // aborted sends.
            self.drain_host(h.0);
            self.hosts[h.0 as usize].by_handle.remove(&handle);
            let host = &self.hosts[h.0 as usize];
            if let Some(i) = host
                .bufs
                .iter()
                .position(|b| *b == Buf::Adapter(Some(handle)))
            {
                self.violate(
                    "nothing leaked after release",
                    format!(
                        "host {}: buffer {i} posted on {vc} did not come back when the VC closed",
                        host.name
                    ),
                );
            }
        }
        Ok(())
    }

    /// Calls every host's `App::start` (at the current time).
    pub fn start(&mut self) {
        for h in 0..self.hosts.len() {
            if self.hosts[h].up && !self.hosts[h].started {
                self.hosts[h].started = true;
                self.call_app(h as u32, |app, now, io| app.start(now, io));
            }
        }
    }

    /// Carries out `action` at `at` (at once if `at` is now or past, at the next
    /// [`run_until`](Self::run_until)).
    pub fn schedule(&mut self, at: Instant, action: Action) {
        let t = at.max(self.now).as_nanos();
        self.actions.insert((t, self.action_seq), action);
        self.action_seq += 1;
        self.arm_action();
    }

    /// Carries out `action` now.
    pub fn apply(&mut self, action: Action) -> Result<(), SimError> {
        self.stats.actions += 1;
        let r = self.apply_inner(action);
        if r.is_err() {
            self.stats.actions_refused += 1;
        }
        self.audit();
        r
    }

    /// Runs events until virtual time `t` (inclusive); the clock is then `t`. Stops at the
    /// first invariant breached.
    pub fn run_until(&mut self, t: Instant) -> Result<(), Violation> {
        let end = t.as_nanos();
        if let Some(v) = self.violation.take() {
            return Err(v);
        }
        while let Some(when) = self.queue.peek_time() {
            if when > end {
                break;
            }
            let Some((when, seq, target)) = self.queue.pop() else {
                break;
            };
            if !self.take_armed(target, when) {
                self.stats.stale += 1;
                continue;
            }
            self.now = Instant::from_nanos(when);
            self.cur_seq = seq;
            self.stats.events += 1;
            let count = self.dispatch(target);
            self.record(when, seq, target, count);
            if self.stats.events >= self.next_audit {
                // The whole-world audits also run now and then between actions, so a leak
                // shows near where it happened.
                self.audit();
                self.next_audit = self.stats.events + self.audit_period();
            }
            if let Some(v) = self.violation.take() {
                return Err(v);
            }
        }
        self.now = self.now.max(t);
        Ok(())
    }

    /// Checks every invariant that holds at any instant, on the whole world.
    pub fn audit_all(&mut self) -> Result<(), Violation> {
        self.audit();
        match self.violation.take() {
            Some(v) => Err(v),
            None => Ok(()),
        }
    }

    /// Whether every queue is empty: links, switch output queues, adapters' transmit
    /// queues and host CPUs (the liveness condition). Returns what is not, if anything.
    pub fn busy(&self) -> Option<String> {
        for (i, l) in self.links.iter().enumerate() {
            for d in 0..2 {
                if l.dirs[d].in_flight() > 0 {
                    return Some(format!(
                        "link {i} direction {d} holds {} cells",
                        l.dirs[d].in_flight()
                    ));
                }
            }
        }
        for s in &self.switches {
            for p in &s.ports {
                if let Some(c) = s.sw.port_counters(p.id)
                    && c.queued() > 0
                {
                    return Some(format!(
                        "switch {} port {} holds {} cells",
                        s.name,
                        p.id,
                        c.queued()
                    ));
                }
            }
        }
        for h in &self.hosts {
            if h.adapter.tx_queued() > 0 {
                return Some(format!(
                    "host {} adapter holds {} transmit descriptors",
                    h.name,
                    h.adapter.tx_queued()
                ));
            }
            if h.cpu_busy() {
                return Some(format!("host {} CPU has {} jobs", h.name, h.cpu.len()));
            }
        }
        None
    }

    // --------------------------------------------------------------- accessors

    /// The switch core.
    pub fn switch(&self, s: SwitchId) -> &Switch {
        &self.switches[s.0 as usize].sw
    }

    /// The adapter core.
    pub fn adapter(&self, h: HostId) -> &Adapter {
        &self.hosts[h.0 as usize].adapter
    }

    /// A link's two directions' counters: a→b, b→a.
    pub fn link_counters(&self, l: LinkId) -> [natm_netem::Counters; 2] {
        let l = &self.links[l.0 as usize];
        [l.dirs[0].counters(), l.dirs[1].counters()]
    }

    /// A link's configuration.
    pub fn link_config(&self, l: LinkId) -> LinkConfig {
        self.links[l.0 as usize].config
    }

    /// Whether a link is up.
    pub fn link_up(&self, l: LinkId) -> bool {
        self.links[l.0 as usize].up
    }

    /// Cells in flight on each direction of a link.
    pub fn link_in_flight(&self, l: LinkId) -> [usize; 2] {
        let l = &self.links[l.0 as usize];
        [l.dirs[0].in_flight(), l.dirs[1].in_flight()]
    }

    /// A host's name.
    pub fn host_name(&self, h: HostId) -> &str {
        &self.hosts[h.0 as usize].name
    }

    /// A switch's name.
    pub fn switch_name(&self, s: SwitchId) -> &str {
        &self.switches[s.0 as usize].name
    }

    /// Hosts, switches and links in the world.
    pub fn counts(&self) -> (usize, usize, usize) {
        (self.hosts.len(), self.switches.len(), self.links.len())
    }

    /// Jobs waiting for or on a host's CPU.
    pub fn cpu_queue(&self, h: HostId) -> usize {
        let host = &self.hosts[h.0 as usize];
        host.cpu.len()
    }

    fn host_ref(&self, h: HostId) -> Result<&HostNode, SimError> {
        self.hosts
            .get(h.0 as usize)
            .ok_or(SimError::UnknownHost(h.0))
    }

    fn switch_ref(&self, s: SwitchId) -> Result<&SwitchNode, SimError> {
        self.switches
            .get(s.0 as usize)
            .ok_or(SimError::UnknownSwitch(s.0))
    }

    // ------------------------------------------------------------ event loop

    fn armed_slot(&mut self, t: Target) -> Option<&mut u64> {
        let i = t.index() as usize;
        match t.kind() {
            kind::LINK => self.links.get_mut(i / 2).map(|l| &mut l.armed[i % 2]),
            kind::ADAPTER => self.hosts.get_mut(i).map(|h| &mut h.armed[0]),
            kind::CPU => self.hosts.get_mut(i).map(|h| &mut h.armed[1]),
            kind::TIMER => self.hosts.get_mut(i).map(|h| &mut h.armed[2]),
            kind::SWITCH => self.switches.get_mut(i).map(|s| &mut s.armed),
            kind::ACTION => Some(&mut self.action_armed),
            _ => None,
        }
    }

    /// Wake `target` at `t` ns unless it is armed for that instant or earlier.
    fn arm(&mut self, target: Target, t: u64) {
        let Some(slot) = self.armed_slot(target) else {
            return;
        };
        if t < *slot {
            *slot = t;
            self.queue.push(t, target);
        }
    }

    /// Whether a popped entry is the one its component waits for (and disarm it).
    fn take_armed(&mut self, target: Target, t: u64) -> bool {
        match self.armed_slot(target) {
            Some(slot) if *slot == t => {
                *slot = IDLE;
                true
            }
            _ => false,
        }
    }

    /// Arm at a core's `poll_timeout`, never at or before the instant just drained.
    fn arm_at(&mut self, target: Target, timeout: Option<Instant>) {
        if let Some(t) = timeout {
            let now = self.now.as_nanos();
            let t = t.as_nanos();
            self.arm(target, if t <= now { now + RETRY_NS } else { t });
        }
    }

    fn record(&mut self, t: u64, seq: u64, target: Target, count: u64) {
        for w in [t, seq, u64::from(target.0), count] {
            self.digest = (self.digest ^ w).wrapping_mul(FNV_PRIME);
        }
        if let Some(out) = &mut self.trace {
            let name = match target.kind() {
                kind::LINK => format!("link{}.{}", target.index() / 2, target.index() % 2),
                kind::SWITCH => self.switches[target.index() as usize].name.clone(),
                kind::ACTION => "-".to_string(),
                _ => self.hosts[target.index() as usize].name.clone(),
            };
            // A trace that cannot be written is given up, not a reason to stop the run.
            if writeln!(
                out,
                "{t} {seq} {} {name} {count}",
                kind::NAMES[target.kind() as usize]
            )
            .is_err()
            {
                self.trace = None;
            }
        }
    }

    fn trace_note(&mut self, text: &str) {
        let t = self.now.as_nanos();
        self.digest =
            (self.digest ^ crate::seed::fnv1a(FNV_OFFSET, text.as_bytes())).wrapping_mul(FNV_PRIME);
        if let Some(out) = &mut self.trace
            && writeln!(out, "{t} - note {text}").is_err()
        {
            self.trace = None;
        }
    }

    pub(crate) fn violate(&mut self, invariant: &'static str, detail: String) {
        if self.violation.is_none() {
            self.violation = Some(Violation {
                at: self.now,
                seq: self.cur_seq,
                invariant,
                detail,
            });
        }
    }

    fn dispatch(&mut self, target: Target) -> u64 {
        let i = target.index();
        match target.kind() {
            kind::LINK => self.link_event(i / 2, (i % 2) as usize),
            kind::ADAPTER => {
                let now = self.now;
                let host = &mut self.hosts[i as usize];
                if !host.up {
                    return 0;
                }
                host.adapter.handle_timeout(now);
                self.drain_host(i)
            }
            kind::SWITCH => {
                let now = self.now;
                let node = &mut self.switches[i as usize];
                if !node.up {
                    return 0;
                }
                let mut outs = std::mem::take(&mut self.outs);
                outs.clear();
                node.take_due(now.as_nanos(), &mut outs);
                // A down port's only timeout is its AIS, which queues cells on the output
                // ports of its connections, not due ones: then every port is polled. What
                // else `handle_timeout` does is nothing (it sends AIS only). A port is
                // down exactly while its link is (`apply_inner`, `restart_switch`).
                let links = &self.links;
                let ais = outs
                    .iter()
                    .any(|&p| !links[node.ports[p as usize].link as usize].up);
                if self.poll_all_ports || ais {
                    node.sw.handle_timeout(now);
                    self.outs = outs;
                    return self.drain_switch(i);
                }
                // Only due ports have output; the others are polled late, as after an
                // input (see `cells_to_switch`).
                self.catch_up(i, &outs);
                let n = self.drain_ports(i, outs.iter().copied());
                let node = &mut self.switches[i as usize];
                if outs.len() < node.ports.len() {
                    node.skipped_at = now.as_nanos();
                }
                self.outs = outs;
                n
            }
            kind::CPU => self.cpu_done(i),
            kind::TIMER => self.timers_due(i),
            kind::ACTION => self.actions_due(),
            _ => 0,
        }
    }

    fn link_event(&mut self, l: u32, d: usize) -> u64 {
        let now = self.now;
        // `cells` keeps its length between events (clearing would write it whole): only
        // what is polled into it is read.
        let mut cells = std::mem::take(&mut self.cells);
        let link = &mut self.links[l as usize];
        let mut len = 0;
        loop {
            if cells.len() < len + BATCH {
                cells.resize(len + BATCH, [0; 53]);
            }
            let n = link.dirs[d].poll_transmit_cells(now, &mut cells[len..len + BATCH]);
            len += n;
            if n < BATCH {
                break;
            }
        }
        let to = link.ends[1 - d];
        let timeout = link.dirs[d].poll_timeout();
        let n = len as u64;
        match to {
            EndRec::Host(h) => self.cells_to_host(h, &cells[..len]),
            EndRec::Port(s, p) => self.cells_to_switch(s, p, &cells[..len]),
        }
        self.cells = cells;
        self.arm_at(Target::new(kind::LINK, l * 2 + d as u32), timeout);
        n
    }

    fn cells_to_host(&mut self, h: u32, cells: &[[u8; 53]]) {
        let now = self.now;
        if !self.hosts[h as usize].up {
            self.stats.dropped_node_down += cells.len() as u64;
            return;
        }
        self.stats.cell_events += cells.len() as u64;
        if let Err(detail) = self.check.cells_at_host(h, cells) {
            let name = &self.hosts[h as usize].name;
            self.violate("cell order per VC", format!("into host {name}: {detail}"));
        }
        let host = &mut self.hosts[h as usize];
        host.adapter.handle_cells(now, cells, &mut host.mem);
        self.drain_host(h);
    }

    fn cells_to_switch(&mut self, s: u32, p: PortId, cells: &[[u8; 53]]) {
        let now = self.now;
        if !self.switches[s as usize].up {
            self.stats.dropped_node_down += cells.len() as u64;
            return;
        }
        self.stats.cell_events += cells.len() as u64;
        let node = &self.switches[s as usize];
        if let Err((inv, detail)) = self.check.cells_into_switch(s, node, p, cells, now) {
            self.violate(inv, detail);
        }
        // Only the ports these cells go to can have new output (the switch's own timers
        // wake the others), so a switch of many ports is not polled whole per cell. What
        // polling an idle port does (its pacer forgets unused slots) is done late, exactly:
        // before a port gets cells, it is polled empty at the last instant it was skipped.
        let mut outs = std::mem::take(&mut self.outs);
        outs.clear();
        let node = &mut self.switches[s as usize];
        let selective = !self.poll_all_ports && node.outputs(p, cells, &mut outs);
        if selective {
            self.catch_up(s, &outs);
        }
        let node = &mut self.switches[s as usize];
        node.sw.handle_cells(now, p, cells);
        if let Err(detail) = self
            .check
            .after_switch_input(s, &self.switches[s as usize], p)
        {
            self.violate("conforming traffic never policed", detail);
        }
        if selective {
            self.drain_ports(s, outs.iter().copied());
            let node = &mut self.switches[s as usize];
            if outs.len() < node.ports.len() {
                node.skipped_at = now.as_nanos();
            }
        } else {
            self.drain_switch(s);
        }
        self.outs = outs;
    }

    /// Polls each of these ports empty at the last instant ports were skipped, unless it
    /// was polled since: what polling all ports there would have done to them.
    fn catch_up(&mut self, s: u32, ports: &[u32]) {
        let node = &mut self.switches[s as usize];
        let skipped = node.skipped_at;
        for &i in ports {
            let r = &mut node.ports[i as usize];
            if r.polled_at < skipped && !r.clogged {
                node.sw
                    .poll_transmit(Instant::from_nanos(skipped), r.id, &mut []);
                r.polled_at = skipped;
            }
        }
    }

    /// Offer cells to a link direction (dropped if the link is down).
    fn offer(&mut self, l: u32, d: usize, cells: &[[u8; 53]]) {
        let now = self.now;
        let link = &mut self.links[l as usize];
        if !link.up {
            self.stats.dropped_link_down += cells.len() as u64;
            return;
        }
        self.stats.cell_events += cells.len() as u64;
        link.dirs[d].handle_cells(now, cells);
        let timeout = link.dirs[d].poll_timeout();
        self.arm_at(Target::new(kind::LINK, l * 2 + d as u32), timeout);
    }

    /// The switch's drain rule: every unclogged port until it gives less than asked.
    fn drain_switch(&mut self, s: u32) -> u64 {
        let n = self.switches[s as usize].ports.len() as u32;
        self.drain_ports(s, 0..n)
    }

    /// The drain rule on the ports of these indices.
    fn drain_ports(&mut self, s: u32, ports: impl IntoIterator<Item = u32>) -> u64 {
        let now = self.now;
        let mut total = 0u64;
        if !self.switches[s as usize].up {
            return 0;
        }
        let mut out = std::mem::take(&mut self.out);
        out.resize(BATCH, [0; 53]);
        for pi in ports {
            let pi = pi as usize;
            let node = &mut self.switches[s as usize];
            let port = &node.ports[pi];
            if port.clogged {
                // Its cells wait, and so may its timeout.
                node.refresh_due(pi as u32);
                continue;
            }
            let (id, link, out_dir) = (port.id, port.link, port.out_dir);
            node.ports[pi].polled_at = now.as_nanos();
            loop {
                let node = &mut self.switches[s as usize];
                let n = node.sw.poll_transmit(now, id, &mut out);
                if n == 0 {
                    break;
                }
                total += n as u64;
                if let Err(detail) = self.check.cells_out_of_switch(
                    s,
                    &self.switches[s as usize],
                    id,
                    &out[..n],
                    now,
                ) {
                    self.violate("policing bound", detail);
                }
                self.offer(link, out_dir, &out[..n]);
                if n < BATCH {
                    break;
                }
            }
            self.switches[s as usize].refresh_due(pi as u32);
        }
        self.out = out;
        let node = &mut self.switches[s as usize];
        let timeout = node.next_due();
        debug_assert_eq!(
            timeout,
            node.sw.poll_timeout(),
            "{}: port timeouts",
            node.name
        );
        self.arm_at(Target::new(kind::SWITCH, s), timeout);
        total
    }

    /// The adapter's drain rule, then keep receive buffers posted and arm its timeout.
    fn drain_host(&mut self, h: u32) -> u64 {
        let now = self.now;
        let mut total = 0u64;
        if !self.hosts[h as usize].up {
            return 0;
        }
        let mut out = std::mem::take(&mut self.out);
        out.resize(BATCH, [0; 53]);
        loop {
            let host = &mut self.hosts[h as usize];
            let n = host.adapter.poll_transmit(now, &host.mem, &mut out);
            if n == 0 {
                break;
            }
            total += n as u64;
            self.stats.cell_events += n as u64;
            if let Some((l, side)) = self.hosts[h as usize].link {
                self.offer(l, side, &out[..n]);
            }
            if n < BATCH {
                break;
            }
        }
        self.out = out;
        loop {
            let host = &mut self.hosts[h as usize];
            let Some(c) = host.adapter.poll_completion() else {
                break;
            };
            self.completion(h, c);
        }
        let host = &mut self.hosts[h as usize];
        while host.adapter.poll_event().is_some() {}
        while let Some(b) = host.rx_free.pop() {
            host.bufs[b.0 as usize] = Buf::Adapter(None);
            host.adapter.post_rx_buffer(b);
        }
        let timeout = host.adapter.poll_timeout();
        self.arm_at(Target::new(kind::ADAPTER, h), timeout);
        self.pump_notices(h);
        total
    }

    fn completion(&mut self, h: u32, c: Completion) {
        let host = &mut self.hosts[h as usize];
        let i = c.buffer.0 as usize;
        if i >= host.bufs.len() || !matches!(host.bufs[i], Buf::Adapter(_)) {
            // A refusal that does not transfer ownership: nothing comes back.
            return;
        }
        match c.direction {
            AdDir::Tx => {
                host.bufs[i] = Buf::Free;
                host.tx_free.push(c.buffer);
                let vc = c.handle.and_then(|hd| host.by_handle.get(&hd).copied());
                if let Some(vc) = vc {
                    host.notices.push_back((vc, c.len, c.status == Status::Ok));
                }
            }
            AdDir::Rx => {
                let vc = c.handle.and_then(|hd| host.by_handle.get(&hd).copied());
                match (c.status, vc) {
                    (Status::Ok, Some(vc)) => {
                        host.bufs[i] = Buf::Received;
                        self.cpu_push(
                            h,
                            Job::Recv {
                                vc,
                                buf: c.buffer,
                                len: c.len,
                            },
                        );
                    }
                    _ => {
                        host.bufs[i] = Buf::Free;
                        host.rx_free.push(c.buffer);
                    }
                }
            }
        }
    }

    fn cpu_push(&mut self, h: u32, job: Job) {
        let now = self.now.as_nanos();
        let host = &mut self.hosts[h as usize];
        host.cpu.push_back(job);
        if !host.cpu_busy {
            host.cpu_busy = true;
            let cost = job_cost(&host.config.costs, &job) + host.config.costs.wakeup.as_nanos();
            self.arm(Target::new(kind::CPU, h), now.saturating_add(cost));
        }
    }

    fn cpu_done(&mut self, h: u32) -> u64 {
        let now = self.now;
        let host = &mut self.hosts[h as usize];
        if !host.up {
            return 0;
        }
        let Some(job) = host.cpu.pop_front() else {
            host.cpu_busy = false;
            return 0;
        };
        match job {
            Job::Send { vc, buf, len } => {
                let handle = host.vcs.get(&vc).and_then(|r| r.handle);
                match handle {
                    Some(handle) => {
                        host.bufs[buf.0 as usize] = Buf::Adapter(Some(handle));
                        host.adapter.post_tx(now, buf, len, handle);
                        self.stats.sdus_sent += 1;
                        self.drain_host(h);
                    }
                    None => {
                        host.bufs[buf.0 as usize] = Buf::Free;
                        host.tx_free.push(buf);
                        host.notices.push_back((vc, len, false));
                        self.stats.sends_refused += 1;
                        self.pump_notices(h);
                    }
                }
            }
            Job::Recv { vc, buf, len } => {
                let bytes = self.hosts[h as usize]
                    .mem
                    .buffer(buf)
                    .map(|b| &b[..len.min(b.len())])
                    .unwrap_or(&[]);
                if let Err(detail) = self.check.sdu_delivered(h, vc, bytes) {
                    let name = &self.hosts[h as usize].name;
                    self.violate("no bad frame delivered", format!("host {name} {detail}"));
                }
                self.stats.sdus_delivered += 1;
                let host = &mut self.hosts[h as usize];
                let mut app = host.app.take();
                let mut io = std::mem::take(&mut host.io);
                if let Some(app) = app.as_mut() {
                    let bytes = host
                        .mem
                        .buffer(buf)
                        .map(|b| &b[..len.min(b.len())])
                        .unwrap_or(&[]);
                    app.on_sdu(now, vc, bytes, &mut io);
                }
                let host = &mut self.hosts[h as usize];
                host.app = app;
                host.io = io;
                host.bufs[buf.0 as usize] = Buf::Free;
                host.rx_free.push(buf);
                self.carry_out_io(h);
                self.drain_host(h);
            }
        }
        let now_ns = self.now.as_nanos();
        let host = &mut self.hosts[h as usize];
        match host.cpu.front() {
            Some(next) if host.up => {
                let cost = job_cost(&host.config.costs, next);
                self.arm(Target::new(kind::CPU, h), now_ns.saturating_add(cost));
            }
            _ => host.cpu_busy = false,
        }
        1
    }

    fn timers_due(&mut self, h: u32) -> u64 {
        let now = self.now.as_nanos();
        let mut n = 0;
        loop {
            let host = &mut self.hosts[h as usize];
            if !host.up {
                break;
            }
            match host.timers.peek() {
                Some(Reverse((t, _, _))) if *t <= now => {}
                _ => break,
            }
            let Some(Reverse((_, _, token))) = host.timers.pop() else {
                break;
            };
            n += 1;
            self.call_app(h, |app, now, io| app.on_timer(now, token, io));
        }
        self.arm_timer(h);
        n
    }

    fn arm_timer(&mut self, h: u32) {
        if let Some(Reverse((t, _, _))) = self.hosts[h as usize].timers.peek() {
            let t = (*t).max(self.now.as_nanos());
            self.arm(Target::new(kind::TIMER, h), t);
        }
    }

    /// Calls the app, then carries out what it asked.
    fn call_app(&mut self, h: u32, f: impl FnOnce(&mut dyn App, Instant, &mut AppIo)) {
        let now = self.now;
        let host = &mut self.hosts[h as usize];
        let Some(mut app) = host.app.take() else {
            return;
        };
        let mut io = std::mem::take(&mut host.io);
        f(app.as_mut(), now, &mut io);
        let host = &mut self.hosts[h as usize];
        host.app = Some(app);
        host.io = io;
        self.carry_out_io(h);
    }

    /// Sends and timers asked by the last app call.
    fn carry_out_io(&mut self, h: u32) {
        let now = self.now.as_nanos();
        let host = &mut self.hosts[h as usize];
        let io = std::mem::take(&mut host.io);
        for (vc, sdu) in io.sends() {
            let host = &mut self.hosts[h as usize];
            let open = host.vcs.get(&vc).is_some_and(|r| r.handle.is_some());
            let ok_len = !sdu.is_empty() && sdu.len() <= 65535 && sdu.len() <= host.mem.size();
            let buf = if open && ok_len {
                host.tx_free.pop()
            } else {
                None
            };
            match buf {
                Some(buf) => {
                    if let Some(b) = host.mem.buffer_mut(buf) {
                        b[..sdu.len()].copy_from_slice(sdu);
                    }
                    host.bufs[buf.0 as usize] = Buf::Cpu;
                    host.tx_meta[buf.0 as usize] = (vc, sdu.len());
                    self.cpu_push(
                        h,
                        Job::Send {
                            vc,
                            buf,
                            len: sdu.len(),
                        },
                    );
                }
                None => {
                    self.stats.sends_refused += 1;
                    self.hosts[h as usize]
                        .notices
                        .push_back((vc, sdu.len(), false));
                }
            }
        }
        let host = &mut self.hosts[h as usize];
        for &(at, token) in io.timers() {
            let seq = host.timer_seq;
            host.timer_seq += 1;
            host.timers
                .push(Reverse((at.as_nanos().max(now), seq, token)));
        }
        let mut io = io;
        io.clear();
        self.hosts[h as usize].io = io;
        self.arm_timer(h);
    }

    /// Tell the app about finished sends, in order (an app may send again from there).
    fn pump_notices(&mut self, h: u32) {
        while let Some((vc, len, ok)) = self.hosts[h as usize].notices.pop_front() {
            self.call_app(h, |app, now, io| app.on_sent(now, vc, len, ok, io));
        }
    }

    fn arm_action(&mut self) {
        if let Some((&(t, _), _)) = self.actions.first_key_value() {
            self.arm(Target::new(kind::ACTION, 0), t);
        }
    }

    fn actions_due(&mut self) -> u64 {
        let now = self.now.as_nanos();
        let mut n = 0;
        while let Some(entry) = self.actions.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let action = entry.remove();
            n += 1;
            let text = format!("{action:?}");
            if let Err(e) = self.apply(action) {
                self.trace_note(&format!("refused {text}: {e}"));
            } else {
                self.trace_note(&text);
            }
        }
        self.arm_action();
        n
    }

    fn apply_inner(&mut self, action: Action) -> Result<(), SimError> {
        let now = self.now;
        match action {
            Action::LinkUp(l, up) => {
                let link = self
                    .links
                    .get_mut(l.0 as usize)
                    .ok_or(SimError::UnknownLink(l.0))?;
                if link.up == up {
                    return Ok(());
                }
                link.up = up;
                let ends = link.ends;
                for end in ends {
                    if let EndRec::Port(s, p) = end {
                        let node = &mut self.switches[s as usize];
                        if node.up {
                            let _ = node.sw.set_port_up(now, p, up);
                            self.drain_switch(s);
                        }
                    }
                }
                Ok(())
            }
            Action::CrashSwitch(s) => {
                self.switch_ref(s)?;
                let node = &mut self.switches[s.0 as usize];
                if node.up {
                    node.up = false;
                    node.sw = Switch::new(node.config);
                    node.clear_due();
                    for r in node.xcs.values_mut() {
                        r.live = None;
                    }
                    node.armed = IDLE;
                }
                Ok(())
            }
            Action::RestartSwitch(s) => {
                self.switch_ref(s)?;
                self.restart_switch(s.0);
                Ok(())
            }
            Action::CrashHost(h) => {
                self.host_ref(h)?;
                let host = &mut self.hosts[h.0 as usize];
                if host.up {
                    host.up = false;
                    // Sends the crash took (waiting for the CPU or in the adapter): the
                    // app hears of them when it is back, before it starts again.
                    host.notices.clear();
                    for (i, b) in host.bufs.iter().enumerate() {
                        if matches!(b, Buf::Cpu | Buf::Adapter(Some(_))) {
                            let (vc, len) = host.tx_meta[i];
                            host.notices.push_back((vc, len, false));
                        }
                    }
                    host.cpu.clear();
                    host.cpu_busy = false;
                    host.timers.clear();
                    host.armed = [IDLE; 3];
                    host.by_handle.clear();
                    for r in host.vcs.values_mut() {
                        r.handle = None;
                    }
                    let n = host.config.buffers;
                    let rx = host.rx_count();
                    host.rx_free = (0..rx).rev().map(BufferId).collect();
                    host.tx_free = (rx..n).rev().map(BufferId).collect();
                    host.bufs.fill(Buf::Free);
                    let rate = host.adapter.config().link;
                    host.adapter =
                        make_adapter(&host.config, rate).map_err(|reason| SimError::Host {
                            host: host.name.clone(),
                            reason,
                        })?;
                }
                Ok(())
            }
            Action::RestartHost(h) => {
                self.host_ref(h)?;
                let host = &mut self.hosts[h.0 as usize];
                if host.up {
                    return Ok(());
                }
                host.up = true;
                let vcs: Vec<VcId> = host.vcs.keys().copied().collect();
                for vc in vcs {
                    let mut rec = host.vcs[&vc];
                    // Reopened as before; a refusal now would be a core bug worth seeing.
                    if let Err(e) = open_in_adapter(host, vc, &mut rec) {
                        let name = host.name.clone();
                        self.violate(
                            "nothing leaked after release",
                            format!("host {name}: reopening {vc} after a restart failed: {e}"),
                        );
                        return Ok(());
                    }
                    host.vcs.insert(vc, rec);
                }
                self.drain_host(h.0);
                self.pump_notices(h.0);
                self.call_app(h.0, |app, now, io| app.start(now, io));
                self.hosts[h.0 as usize].started = true;
                Ok(())
            }
            Action::Clog(s, p, on) => {
                let node = self
                    .switches
                    .get_mut(s.0 as usize)
                    .ok_or(SimError::UnknownSwitch(s.0))?;
                let name = node.name.clone();
                let port =
                    node.ports
                        .iter_mut()
                        .find(|r| r.id == p)
                        .ok_or_else(|| SimError::Switch {
                            switch: name,
                            reason: format!("no port {p}"),
                        })?;
                port.clogged = on;
                self.drain_switch(s.0);
                Ok(())
            }
            Action::Connect(s, xc) => self.connect(s, &xc).map(|_| ()),
            Action::Disconnect(s, c) => self.disconnect(s, c),
            Action::DisconnectEndpoint(s, e) => {
                let node = self.switch_ref(s)?;
                let id = node
                    .xcs
                    .iter()
                    .find(|(_, r)| r.xc.a == e)
                    .map(|(id, _)| *id)
                    .ok_or_else(|| SimError::Switch {
                        switch: node.name.clone(),
                        reason: format!("no cross-connect from {e}"),
                    })?;
                self.disconnect(s, id)
            }
            Action::OpenVc(h, vc, qos, options) => self.open_vc_with(h, vc, &qos, options),
            Action::CloseVc(h, vc) => self.close_vc(h, vc),
            Action::Impairments(l, dirs, imp) => {
                let seed = self.seed;
                let link = self
                    .links
                    .get_mut(l.0 as usize)
                    .ok_or(SimError::UnknownLink(l.0))?;
                let which: &[usize] = match dirs {
                    Dirs::AToB => &[0],
                    Dirs::BToA => &[1],
                    Dirs::Both => &[0, 1],
                };
                for &d in which {
                    let mut imp = imp;
                    // A fresh stream per change, still a function of the seed and time.
                    imp.seed =
                        sub_seed(seed, &format!("link {} dir {d} at {}", l.0, now.as_nanos()));
                    link.dirs[d].set_impairments(&imp);
                }
                Ok(())
            }
        }
    }

    fn restart_switch(&mut self, s: u32) {
        let now = self.now;
        let node = &mut self.switches[s as usize];
        if node.up {
            return;
        }
        node.up = true;
        node.sw = Switch::new(node.config);
        node.clear_due();
        let mut notes = Vec::new();
        for p in &node.ports {
            if let Err(e) = node.sw.add_port(p.id, p.config) {
                notes.push(format!("{}: port {} not remade: {e}", node.name, p.id));
            }
        }
        for p in &node.ports {
            if !self.links[p.link as usize].up {
                let _ = node.sw.set_port_up(now, p.id, false);
            }
        }
        let mut gone = Vec::new();
        for (id, r) in node.xcs.iter_mut() {
            match node.sw.connect(now, &r.xc) {
                Ok(x) => r.live = Some(x),
                Err(e) => {
                    notes.push(format!(
                        "{}: cross-connect {} not remade: {e}",
                        node.name, id.0
                    ));
                    gone.push(*id);
                }
            }
        }
        for id in gone {
            node.xcs.remove(&id);
        }
        node.route_dirty = true;
        let ids: Vec<ConnId> = node.xcs.keys().copied().collect();
        for id in ids {
            self.check.leg_reset(s, id);
        }
        for n in notes {
            self.trace_note(&n);
        }
        self.drain_switch(s);
    }

    /// Events until the next periodic audit: [`AUDIT_EVERY`], or more in a world so large
    /// that an audit every [`AUDIT_EVERY`] events would be a large share of the run.
    fn audit_period(&self) -> u64 {
        let switches: usize = self
            .switches
            .iter()
            .map(|s| s.xcs.len() + s.ports.len())
            .sum();
        let hosts: usize = self.hosts.iter().map(|h| h.bufs.len()).sum();
        AUDIT_EVERY.max(AUDIT_EVENTS_PER_ITEM * (switches + hosts) as u64)
    }

    /// The audits that hold at any instant: CAC books, connection counts, cell
    /// conservation, buffer ownership.
    fn audit(&mut self) {
        for s in 0..self.switches.len() {
            self.audit_switch(s as u32);
        }
        for h in 0..self.hosts.len() {
            let host = &self.hosts[h];
            if !host.up {
                continue;
            }
            for (i, b) in host.bufs.iter().enumerate() {
                let held = host.adapter.holds(BufferId(i as u32));
                let ours = matches!(b, Buf::Adapter(_));
                if held != ours {
                    let detail = format!(
                        "host {}: buffer {i} is {b:?} in the host's record but the adapter {} it",
                        host.name,
                        if held { "holds" } else { "does not hold" }
                    );
                    self.violate("nothing leaked after release", detail);
                    return;
                }
            }
        }
    }

    fn audit_switch(&mut self, s: u32) {
        self.audit_switch_ports(s, None);
    }

    fn audit_switch_ports(&mut self, s: u32, only: Option<[PortId; 2]>) {
        let node = &self.switches[s as usize];
        if let Err((inv, detail)) = crate::check::audit_switch(node, only) {
            self.violate(inv, detail);
        }
    }
}

fn job_cost(costs: &HostCosts, job: &Job) -> u64 {
    match *job {
        Job::Send { len, .. } => costs.send(len).as_nanos(),
        Job::Recv { len, .. } => costs.recv(len).as_nanos(),
    }
}

fn make_adapter(config: &HostConfig, link: LineRate) -> Result<Adapter, String> {
    let mut c = config.adapter;
    c.link = link;
    c.buffers = config.buffers;
    c.rx_buffer_size = config.buffer_size;
    c.max_tx_queued = c.max_tx_queued.max(config.buffers as usize);
    Adapter::new(c).map_err(|e| e.to_string())
}

/// The host's CAC on its link, as hostd books it (unlimited: the nominal OC-3c rate).
fn host_cac(name: &str, cps: Option<u32>) -> Cac {
    Cac::new(CacConfig {
        link: format!("{name}:link"),
        capacity: cps.unwrap_or(NOMINAL_RATE),
        buffer_cells: 0,
        max_ubr: 4096,
    })
}

/// hostd's capacity for an unlimited link.
const NOMINAL_RATE: u32 = PhyRate::OC3.cells_per_s();

/// Opens `vc` in the host's adapter with a fresh handle, as hostd derives the spec.
fn open_in_adapter(host: &mut HostNode, vc: VcId, rec: &mut VcRec) -> Result<(), String> {
    let capacity = host.cac.config().capacity;
    let link_rate = host.adapter.config().link.cells_per_s();
    let tx = rec.qos.tx;
    let contract = rec
        .cac
        .and_then(|c| host.cac.reservation(c))
        .map(|r| r.contract)
        .unwrap_or_default();
    let g = rec.options.greedy;
    let scale = |r: u32| -> u32 {
        let cap = link_rate.unwrap_or(u32::MAX);
        ((f64::from(r) * g).round() as u64).clamp(1, u64::from(cap)) as u32
    };
    let spec = match tx.class {
        TrafficClass::Cbr => VcSpec::cbr(scale(contract.pcr)),
        TrafficClass::Vbr => VcSpec::nrt_vbr(
            scale(contract.pcr),
            scale(contract.scr).min(scale(contract.pcr)),
            contract.mbs,
        ),
        _ => {
            let own_rate = [tx.pcr, tx.max_pcr]
                .iter()
                .any(|r| !r.is_zero() && *r != natm_core::qos::Pcr::Max);
            let pcr = match (own_rate, link_rate) {
                (false, None) => UBR_UNSHAPED_PCR,
                _ if contract.pcr == 0 => capacity,
                _ => scale(contract.pcr),
            };
            VcSpec::ubr(pcr, 1)
        }
    };
    let max_sdu = if rec.qos.rx.max_sdu == 0 {
        65535
    } else {
        rec.qos.rx.max_sdu as usize
    };
    let max_sdu = max_sdu.min(host.config.buffer_size).min(65535);
    let handle = host.next_handle;
    host.next_handle = host.next_handle.wrapping_add(1).max(1);
    host.adapter
        .open_vc(handle, vc, spec, RxVcConfig::aal5(max_sdu))
        .map_err(|e| e.to_string())?;
    rec.handle = Some(handle);
    host.by_handle.insert(handle, vc);
    Ok(())
}

//! The simulated network: hosts, switches and links built with [`World`]'s builder calls,
//! and the event loop that drives the production cores through virtual time.
//!
//! * **Hosts.** natm-host-core's [`Host`], the same object hostd drives (admission on the
//!   link, QoS → shaping, demultiplexing, transmit order, the OAM responder), with one
//!   channel: one natm-adapter [`Adapter`] over [`VecBuffers`], half the buffers kept
//!   posted for receive and half a free list for transmit; a CPU modelled as one FIFO
//!   server charging [`HostCosts`] per send (before the SDU is posted) and per SDU
//!   received (before the app sees it); and an [`App`].
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
    Adapter, AdapterConfig, BufferId, Completion, Direction as AdDir, Status, VecBuffers,
};
use natm_calls::{CallControl, Side};
use natm_core::{Duration, Instant, LineRate, Qos, VcId};
use natm_host_core::{
    CallId, ChannelId, Host, HostConfig as CoreConfig, Scale, SignallingConfig, VcHandle,
};
use natm_netem::{Config as NetemConfig, Impairments, Netem};
use natm_switch::{CrossConnect, Endpoint, PortConfig, PortId, Switch, SwitchConfig};

use crate::app::{App, AppIo, CallNote, HostCosts};
use crate::check::{Checker, FastMap};
use crate::queue::{EventQueue, Target};
use crate::seed::{FNV_OFFSET, FNV_PRIME, sub_seed};

mod calls;
mod nodes;
mod run;
mod types;

pub use calls::{CallEnd, CallRecord};

pub(crate) use nodes::*;
use run::*;
pub use types::*;

/// Event kinds, the top bits of a queue [`Target`].
pub(crate) mod kind {
    pub const LINK: u8 = 0;
    pub const ADAPTER: u8 = 1;
    pub const SWITCH: u8 = 2;
    pub const CPU: u8 = 3;
    pub const TIMER: u8 = 4;
    pub const ACTION: u8 = 5;
    /// A switch's call control's timers.
    pub const CALLS: u8 = 6;
    pub const NAMES: [&str; 7] = [
        "link", "adapter", "switch", "cpu", "timer", "action", "calls",
    ];
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
    /// Every call the hosts placed or were offered, for the end checks.
    pub(crate) ledger: calls::Ledger,
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
            ledger: calls::Ledger::default(),
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
            calls: None,
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
        let (core, channel) =
            make_core(name, &config, None, None).map_err(|reason| SimError::Host {
                host: name.to_string(),
                reason,
            })?;
        let n = config.buffers;
        let rx = (n / 2).max(1);
        self.hosts.push(HostNode {
            name: name.to_string(),
            config,
            core,
            channel,
            core_events: Vec::new(),
            link: None,
            up: true,
            app: Some(app),
            io: AppIo::new(),
            vcs: BTreeMap::new(),
            by_handle: BTreeMap::new(),
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
            sig: None,
            call_vcs: BTreeMap::new(),
            call_notes: VecDeque::new(),
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
                    (host.core, host.channel) =
                        make_core(&host.name, &host.config, cps, host.sig.clone()).map_err(
                            |reason| SimError::Host {
                                host: host.name.clone(),
                                reason,
                            },
                        )?;
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
            dup: [None, None],
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
        let cap = host.core.config().link_rate.unwrap_or(u32::MAX);
        let g = options.greedy;
        let scale = |r: u32| ((f64::from(r) * g).round() as u64).clamp(1, u64::from(cap)) as u32;
        let core = host
            .core
            .open_vc_scaled(host.channel, vc, qos, Scale::Rates(&scale))
            .map_err(|e| refuse(host, e.to_string()))?;
        let handle = host.up.then_some(core.0);
        if let Some(hd) = handle {
            host.by_handle.insert(hd, vc);
        }
        host.vcs.insert(
            vc,
            VcRec {
                qos: *qos,
                options,
                handle,
                core,
            },
        );
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
        host.core.close_vc(rec.core);
        if let Some(handle) = rec.handle {
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
                if self.hosts[h].sig.is_some() {
                    // Its signalling starts with the drain's timeout.
                    self.drain_host(h as u32);
                }
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
            if h.adapter().tx_queued() > 0 {
                return Some(format!(
                    "host {} adapter holds {} transmit descriptors",
                    h.name,
                    h.adapter().tx_queued()
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
        self.hosts[h.0 as usize].adapter()
    }

    /// Sends an F5 loopback request from host `h` on `vc` (see
    /// [`natm_host_core::Host::ping`]); its outcome comes with [`take_host_events`](Self::take_host_events).
    pub fn ping(
        &mut self,
        h: HostId,
        vc: VcId,
        segment: bool,
        tag: u32,
        timeout: Duration,
    ) -> Result<natm_host_core::PingId, SimError> {
        let now = self.now;
        let host = self
            .hosts
            .get_mut(h.0 as usize)
            .ok_or(SimError::UnknownHost(h.0))?;
        if !host.up {
            return Err(SimError::Host {
                host: host.name.clone(),
                reason: "the host is down".into(),
            });
        }
        let id = host
            .core
            .ping(now, vc, segment, tag, timeout)
            .map_err(|e| SimError::Host {
                host: host.name.clone(),
                reason: e.to_string(),
            })?;
        self.drain_host(h.0);
        Ok(id)
    }

    /// What host `h`'s core has told since the last call (ping outcomes).
    pub fn take_host_events(&mut self, h: HostId) -> Vec<natm_host_core::Event> {
        self.hosts
            .get_mut(h.0 as usize)
            .map(|host| std::mem::take(&mut host.core_events))
            .unwrap_or_default()
    }

    /// The host core's own counters (OAM, cells of no VC, HEC).
    pub fn host_counters(
        &self,
        h: HostId,
    ) -> (natm_host_core::Counters, natm_wire::cell::HecStats) {
        let core = &self.hosts[h.0 as usize].core;
        (core.counters(), core.hec_stats())
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
}

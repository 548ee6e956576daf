//! The forwarding engine: the pure switch between real links, one step at a time.
//!
//! A step receives one batch from every port with a link, hands each batch to
//! [`Switch::handle_cells`], runs the switch's timer when due, then for every port sends
//! the cells it still holds from an earlier step (a link may refuse cells when its ring or
//! socket is full) and, only when it holds none, takes a new batch from
//! [`Switch::poll_transmit`]. So a slow link backs cells up into the switch's own
//! per-category queues (where priorities, EPD and the queue limits apply) and no cell a
//! link refused is ever dropped silently: cells held for a link that goes away are counted
//! in [`PortStats::tx_lost`].
//!
//! A link that fails (its peer left) is dropped and its port set down
//! ([`Switch::set_port_up`]), which makes the switch send AIS downstream; a new link on
//! the port sets it up again. The daemon loop ([`crate::run`]) and the benchmark
//! ([`crate::bench`]) both drive this.

use std::time::Instant as StdInstant;

use natm_calls::CallControl;
use natm_core::HeaderFormat;
use natm_core::Instant;
use natm_link::clock::Epoch;
use natm_link::emulated::COALESCE;
use natm_link::endpoint::{EndpointLink, is_peer_gone};
use natm_link::lane::LaneVc;
use natm_link::{CELL_LEN, CellBytes};
use natm_switch::{PortConfig, PortId, Switch, SwitchConfig, SwitchError};

mod splice;
pub use splice::{Holder, SpliceKeep, Spliced, relabel};

/// Cells moved per port per step at most.
pub const BATCH: usize = 256;

/// What the daemon counts per port beyond the switch's [`natm_switch::PortCounters`].
#[derive(Clone, Debug, Default)]
pub struct PortStats {
    /// Times a link was attached (a host connected).
    pub connects: u64,
    /// Times a link was dropped because it failed.
    pub disconnects: u64,
    /// Cells the switch sent that the link had not taken when it went away.
    pub tx_lost: u64,
    /// The last link error, as text.
    pub last_error: Option<String>,
    /// Lanes attached so far.
    pub lanes_attached: u64,
    /// Lanes removed (their requester went away, or the lane failed).
    pub lanes_removed: u64,
    /// Cells received on a lane for a VC that is not the lane's: dropped.
    pub lane_refused: u64,
    /// Cells for the port's lanes dropped because the lane held [`LANE_HOLD`] (a lane
    /// fed from a main link, which is never paused).
    pub lane_dropped: u64,
    /// Cells for the main link dropped because it held [`LANE_HOLD`] while the switch
    /// went on serving the port's lanes.
    pub held_dropped: u64,
}

/// The most cells a lane keeps that its ring refused.
pub const LANE_HOLD: usize = 8192;
/// A lane holding more than this many cells pauses the lanes that feed it.
pub const LANE_PAUSE: usize = 2048;
/// Congested steps between two recomputations of which lanes feed which, while nothing
/// changed.
const ROUTE_REFRESH: u64 = 4096;

/// What the daemon counts per lane.
#[derive(Clone, Copy, Debug, Default)]
pub struct LaneStats {
    /// Cells received from the lane and handed to the switch.
    pub rx: u64,
    /// Cells the lane's ring accepted.
    pub tx: u64,
    /// Cells for the lane dropped because it already held [`LANE_HOLD`].
    pub dropped: u64,
    /// Steps in which the lane was not read because a lane it feeds was congested.
    pub paused: u64,
}

/// An application's lane on a port (see the [module documentation](self)).
pub struct Lane {
    /// The lane's rings (side B of a [`natm_link::lane`] handover).
    pub link: Box<dyn EndpointLink>,
    /// The VCs it carries, sorted.
    pub vcs: Vec<LaneVc>,
    /// Its share of a rated port's input line beside the port's other lanes and main link
    /// (at least 1): the host's weight for the channel (natm-host-core's `vc_weight`).
    pub weight: u32,
    keys: Vec<u32>,
    out: Vec<CellBytes>,
    out_from: usize,
    /// The lanes its VCs are cross-connected to: `(port index, lane index)`.
    feeds: Vec<(usize, usize)>,
    /// Not read this step: a lane it feeds holds more than [`LANE_PAUSE`].
    paused: bool,
    /// Its virtual time on a rated port's input line ([`Fabric::receive_fair`]).
    vtime: u64,
    /// Counters.
    pub stats: LaneStats,
    /// What a splice needs (single-VC lanes only).
    pub splice: Option<SpliceKeep>,
    /// A relabelled lane's label (its ring's cells carry it instead of the VC) and that
    /// label's key at the port.
    relabel: Option<(LaneVc, u32)>,
    /// Scratch for relabelled cells on their way out.
    relabelled: Vec<CellBytes>,
}

impl Lane {
    /// Not read in the last step: a lane it feeds is congested.
    pub fn paused(&self) -> bool {
        self.paused
    }

    /// Cells held for the lane's ring.
    pub fn held(&self) -> usize {
        self.out.len() - self.out_from
    }

    /// Sends `cells` to the lane, holding what its ring does not take (after what it
    /// already holds, in order), or counts them dropped beyond [`LANE_HOLD`]. A lane that
    /// holds nothing is written straight from `cells`: no copy in between. A ring error
    /// is left for [`flush`](Self::flush) to find. The cells the ring took.
    fn send_or_hold(
        &mut self,
        cells: &[CellBytes],
        port: &mut PortStats,
        format: HeaderFormat,
    ) -> usize {
        if let Some((label, _)) = self.relabel {
            let mut out = std::mem::take(&mut self.relabelled);
            out.clear();
            out.extend_from_slice(cells);
            for c in &mut out {
                splice::relabel(c, format, label);
            }
            let sent = self.send_or_hold_as_is(&out, port);
            self.relabelled = out;
            return sent;
        }
        self.send_or_hold_as_is(cells, port)
    }

    fn send_or_hold_as_is(&mut self, cells: &[CellBytes], port: &mut PortStats) -> usize {
        let mut sent = 0;
        if self.held() == 0 {
            sent = self.link.send_cells(cells).unwrap_or(0);
            self.stats.tx += sent as u64;
        }
        let rest = &cells[sent..];
        let keep = rest.len().min(LANE_HOLD.saturating_sub(self.held()));
        self.out.extend_from_slice(&rest[..keep]);
        let dropped = (rest.len() - keep) as u64;
        self.stats.dropped += dropped;
        port.lane_dropped += dropped;
        sent
    }

    /// Sends what it holds; the cells the ring took.
    fn flush(&mut self) -> std::io::Result<usize> {
        if self.held() == 0 {
            return Ok(0);
        }
        let k = self.link.send_cells(&self.out[self.out_from..])?;
        self.out_from += k;
        self.stats.tx += k as u64;
        if self.out_from == self.out.len() {
            self.out.clear();
            self.out_from = 0;
        }
        Ok(k)
    }
}

/// A cell's VPI and VCI as one number, `vpi << 16 | vci`, at a port of `format`.
#[inline]
fn vc_key(cell: &CellBytes, format: HeaderFormat) -> u32 {
    word_key(
        u32::from_be_bytes([cell[0], cell[1], cell[2], cell[3]]),
        format,
    )
}

/// [`vc_key`] of a header's first four bytes, big-endian.
#[inline]
fn word_key(word: u32, format: HeaderFormat) -> u32 {
    let w = word >> 4;
    match format {
        HeaderFormat::Uni => w & 0x00ff_ffff,
        HeaderFormat::Nni => w & 0x0fff_ffff,
    }
}

fn lane_key(v: LaneVc) -> u32 {
    (u32::from(v.vpi) << 16) | u32::from(v.vci)
}

/// One port's link state.
pub struct PortLink {
    /// The port.
    pub id: PortId,
    /// The link, while a peer is attached.
    pub link: Option<Box<dyn EndpointLink>>,
    /// Cells taken from the switch that the link has not accepted yet, from `held_from`.
    held: Vec<CellBytes>,
    held_from: usize,
    /// Counters.
    pub stats: PortStats,
    /// The port's header format (how a cell's VPI/VCI is read for the lanes).
    pub format: HeaderFormat,
    /// Lanes, while their requesters keep them.
    pub lanes: Vec<Lane>,
    /// `(vc key, lane index)`, sorted by key: which lane a VC's cells go to.
    lane_of: Vec<(u32, usize)>,
    /// A rated port's input line, which its lanes' cells cross (see [`InputLine`]); `Some`
    /// exactly when the switch paces the port's output.
    input: Option<InputLine>,
    /// The last read of the lanes stopped at the input line's allowance: the lanes are
    /// not waited on until [`InputLine::due`].
    input_blocked: bool,
    /// The member read first in the next step (a lane, or the main link at index
    /// `lanes.len()` on a rated port).
    lane_turn: usize,
    /// The main link's virtual time on a rated port's input line (the lanes keep theirs).
    main_vtime: u64,
}

/// What [`Fabric::receive_lanes`] has gathered from a port's members.
#[derive(Debug, Default)]
struct Pass {
    /// Cells the switch took.
    kept: usize,
    /// Cells the express path put in other lanes' rings.
    sent: usize,
    /// Lanes that failed.
    gone: Vec<usize>,
    /// Why the main link failed.
    main_failed: Option<String>,
}

/// A cell's worth of virtual time at weight 1 on a rated port's input line
/// ([`Fabric::receive_lanes`]).
const VTIME_UNIT: u64 = 1 << 16;

/// The host-to-switch direction of a rated port as its lanes see it. hostd's main link
/// crosses hostd's own emulated line; a lane's cells come straight from the application's
/// rings, so the switch takes them no faster than the line would have carried them: one
/// cell per slot of `1/rate`, the main link's cells and the lanes' together (shared by
/// weight, [`Fabric::receive_lanes`]), a late step taking the slots it missed up to
/// [`COALESCE`] of them. Slots are counted exactly (ticks of 1/rate ns, as natm-netem's
/// line), so the rate does not drift.
#[derive(Clone, Copy, Debug)]
pub struct InputLine {
    /// Cells/s.
    rate: u128,
    /// When the line finishes the last cell taken, in ticks (ns × rate).
    free_at: u128,
}

/// [`COALESCE`] in the switch core's time: how late a rated port's burst may leave
/// ([`Switch::poll_timeout_within`]) and how much of an idle input line is saved.
pub const BURST_WINDOW: natm_core::Duration =
    natm_core::Duration::from_nanos(COALESCE.as_nanos() as u64);

/// Ticks (ns × rate) per cell.
const SLOT_TICKS: u128 = 1_000_000_000;

impl InputLine {
    /// A line of `rate` cells/s, idle.
    pub fn new(rate: u32) -> InputLine {
        InputLine {
            rate: u128::from(rate.max(1)),
            free_at: 0,
        }
    }

    /// `free_at`, no earlier than the window before `now` (slots unused longer ago are not
    /// saved up).
    fn floor(&self, now: Instant) -> u128 {
        let window = u128::from(BURST_WINDOW.as_nanos());
        let start = u128::from(now.as_nanos()).saturating_sub(window) * self.rate;
        self.free_at.max(start)
    }

    /// Cells that may cross the line at `now`.
    pub fn allowance(&self, now: Instant) -> usize {
        let t = u128::from(now.as_nanos()) * self.rate;
        let f = self.floor(now);
        if f > t {
            return 0;
        }
        usize::try_from((t - f) / SLOT_TICKS + 1).unwrap_or(usize::MAX)
    }

    /// `n` cells crossed the line at `now` (the main link's too: they may push the line's
    /// next free slot past `now`).
    pub fn take(&mut self, now: Instant, n: usize) {
        self.free_at = self.floor(now) + n as u128 * SLOT_TICKS;
    }

    /// When a lane held back by the line is read again: once a burst's worth of slots
    /// ([`COALESCE`]) has come, as the hosts' emulated lines hand theirs over.
    pub fn due(&self) -> Instant {
        let ns = self.free_at.div_ceil(self.rate) + u128::from(BURST_WINDOW.as_nanos());
        Instant::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

impl PortLink {
    /// Member `m`'s virtual time on the input line: lane `m`'s, or the main link's past
    /// the lanes.
    fn vtime_mut(&mut self, m: usize) -> &mut u64 {
        match self.lanes.get_mut(m) {
            Some(lane) => &mut lane.vtime,
            None => &mut self.main_vtime,
        }
    }

    /// When the lanes are read again, while the input line holds them back (`None`: they
    /// are read whenever they have cells).
    pub fn input_due(&self) -> Option<Instant> {
        self.input
            .filter(|_| self.input_blocked && !self.lanes.is_empty())
            .map(|line| line.due())
    }

    /// Cells held for the link.
    pub fn held(&self) -> usize {
        self.held.len() - self.held_from
    }

    /// Adds a lane carrying `vcs` at `weight`; refused, with the reason, when the port has
    /// no link or another lane has one of the VCs (or a VC does not fit the port's header).
    pub fn add_lane(
        &mut self,
        vcs: Vec<LaneVc>,
        weight: u32,
        link: Box<dyn EndpointLink>,
    ) -> Result<(), String> {
        self.add_lane_kept(vcs, weight, link, None)
    }

    /// [`add_lane`](Self::add_lane) with what a splice needs of a single-VC lane; relabelled
    /// when the keep's label is not the VC.
    pub fn add_lane_kept(
        &mut self,
        vcs: Vec<LaneVc>,
        weight: u32,
        link: Box<dyn EndpointLink>,
        splice: Option<SpliceKeep>,
    ) -> Result<(), String> {
        if self.link.is_none() {
            return Err(format!("port {} has no link", self.id.0));
        }
        if let Some(v) = vcs
            .iter()
            .find(|v| self.format == HeaderFormat::Uni && v.vpi > 255 || v.vpi > 4095)
        {
            return Err(format!(
                "VPI {} does not fit port {}'s header",
                v.vpi, self.id.0
            ));
        }
        if let Some(v) = vcs.iter().find(|v| {
            self.lane_of
                .binary_search_by_key(&lane_key(**v), |e| e.0)
                .is_ok()
        }) {
            return Err(format!(
                "VC {}.{} is carried by another lane of port {}",
                v.vpi, v.vci, self.id.0
            ));
        }
        let mut keys: Vec<u32> = vcs.iter().map(|v| lane_key(*v)).collect();
        keys.sort_unstable();
        keys.dedup();
        let splice = splice.filter(|_| vcs.len() == 1);
        let relabel = splice
            .as_ref()
            .filter(|k| k.label != vcs[0])
            .map(|k| (k.label, lane_key(k.label)));
        self.lanes.push(Lane {
            splice,
            relabel,
            relabelled: Vec::new(),
            link,
            vcs,
            weight: weight.max(1),
            keys,
            out: Vec::new(),
            out_from: 0,
            feeds: Vec::new(),
            paused: false,
            vtime: 0,
            stats: LaneStats::default(),
        });
        self.stats.lanes_attached += 1;
        self.index_lanes();
        Ok(())
    }

    fn remove_lane(&mut self, i: usize) -> Lane {
        // Cells held for a lane that went away are lost with it, counted as a link's are.
        self.stats.tx_lost += self.lanes[i].held() as u64;
        let lane = self.lanes.remove(i);
        self.stats.lanes_removed += 1;
        self.index_lanes();
        lane
    }

    fn index_lanes(&mut self) {
        self.lane_of.clear();
        for (i, l) in self.lanes.iter().enumerate() {
            self.lane_of.extend(l.keys.iter().map(|&k| (k, i)));
        }
        self.lane_of.sort_unstable();
    }

    /// The lane a cell sent out of the port goes to: user data (PTI 0–3) of a lane's VC.
    #[inline]
    fn lane_for(&self, cell: &CellBytes) -> Option<usize> {
        self.lane_for_word(u32::from_be_bytes([cell[0], cell[1], cell[2], cell[3]]))
    }

    /// [`lane_for`](Self::lane_for) of a cell whose header's first four bytes, big-endian,
    /// are `word`.
    #[inline]
    fn lane_for_word(&self, word: u32) -> Option<usize> {
        if word & 0x08 != 0 {
            return None;
        }
        let k = word_key(word, self.format);
        self.lane_of
            .binary_search_by_key(&k, |e| e.0)
            .ok()
            .map(|i| self.lane_of[i].1)
    }
}

/// A cell seen on a captured port.
#[derive(Clone, Copy, Debug)]
pub struct Tapped {
    /// The port.
    pub port: PortId,
    /// `true`: sent out of the port; `false`: received on it.
    pub out: bool,
    /// When (the fabric's clock).
    pub at: Instant,
    /// The cell.
    pub cell: CellBytes,
}

/// The most tapped cells kept between two drains; more are counted, not kept.
pub const TAP_LIMIT: usize = 1 << 16;

/// The switch and its ports' links. See the [module documentation](self).
pub struct Fabric {
    /// The pure switch.
    pub switch: Switch,
    /// Scratch of [`Fabric::receive_lanes`]: the members' weights and those still reading.
    member_weights: Vec<u64>,
    member_reading: Vec<usize>,
    /// Ports in configuration order.
    pub ports: Vec<PortLink>,
    /// The clock the switch is driven on.
    pub epoch: Epoch,
    buf: Vec<CellBytes>,
    /// Ports whose cells are being captured.
    pub tap_ports: Vec<PortId>,
    /// Captured cells not yet drained.
    pub tapped: Vec<Tapped>,
    /// Captured cells not kept for want of room.
    pub tap_overflow: u64,
    /// What the lane routes were computed from (lane changes, connections), and when.
    routes_seen: (u64, u32),
    routes_age: u64,
    /// Some lane may be marked paused.
    lanes_paused: bool,
    /// Spliced regions (see [`splice`]).
    pub splices: Vec<Spliced>,
    /// The switch's call control, when it signals (see [`Fabric::enable_calls`]).
    pub calls: Option<CallControl>,
    /// When the call control's timers are next due (its `poll_timeout`, kept here: that
    /// scans every call, a step reads this).
    calls_due: Option<Instant>,
}

/// What a step did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// Cells received from links.
    pub received: usize,
    /// Cells links accepted.
    pub sent: usize,
    /// Of `sent`, the cells of rated ports' paced bursts: they leave on their own time,
    /// which the switch's deadlines cover, so they are no reason to keep spinning.
    pub sent_paced: usize,
    /// Whether some link still holds refused cells.
    pub holding: bool,
}

impl Fabric {
    /// A fabric with no ports, moving up to [`BATCH`] cells per port per step.
    pub fn new(config: SwitchConfig) -> Fabric {
        Fabric::with_batch(config, BATCH)
    }

    /// A fabric with no ports, moving up to `batch` cells (at least 1) per port per step.
    pub fn with_batch(config: SwitchConfig, batch: usize) -> Fabric {
        Fabric {
            switch: Switch::new(config),
            ports: Vec::new(),
            epoch: Epoch::now(),
            buf: vec![[0u8; CELL_LEN]; batch.max(1)],
            tap_ports: Vec::new(),
            tapped: Vec::new(),
            tap_overflow: 0,
            member_weights: Vec::new(),
            member_reading: Vec::new(),
            routes_seen: (0, 0),
            routes_age: 0,
            lanes_paused: false,
            splices: Vec::new(),
            calls: None,
            calls_due: None,
        }
    }

    /// Gives the switch its call control: from now on each step runs it when the switch
    /// holds signalling cells or its timers are due, and links attached or dropped on its
    /// ports bring them up or down there too. Its ports must exist, with
    /// `PortConfig::signalling`, and be added to it already.
    pub fn enable_calls(&mut self, mut calls: CallControl) {
        let now = self.now();
        // Ports are down until a link is attached.
        for p in &self.ports {
            let _ = calls.port_down(now, p.id, &mut self.switch);
        }
        self.calls_due = calls.poll_timeout();
        self.calls = Some(calls);
    }

    /// When the call control's timers are next due.
    pub fn calls_due(&self) -> Option<Instant> {
        self.calls_due
    }

    /// Runs call control if the switch holds signalling cells or its timers are due: one
    /// check per step when nothing is.
    #[inline]
    fn run_calls(&mut self, now: Instant) {
        if !self.switch.has_signalling() && self.calls_due.is_none_or(|t| t > now) {
            return;
        }
        let Some(cc) = self.calls.as_mut() else {
            return;
        };
        if self.switch.has_signalling() {
            cc.handle(now, &mut self.switch);
        }
        if cc.poll_timeout().is_some_and(|t| t <= now) {
            cc.handle_timeout(now, &mut self.switch);
        }
        self.calls_due = cc.poll_timeout();
    }

    /// Tells call control that port `id`'s link came (`up`) or went.
    fn calls_port(&mut self, now: Instant, id: PortId, up: bool) {
        let Some(cc) = self.calls.as_mut() else {
            return;
        };
        // A port without signalling is not call control's: nothing to do.
        let _ = if up {
            cc.port_up(now, id, &mut self.switch)
        } else {
            cc.port_down(now, id, &mut self.switch)
        };
        self.calls_due = cc.poll_timeout();
    }

    /// The fabric's present time.
    pub fn now(&self) -> Instant {
        self.epoch.elapsed()
    }

    /// A real instant of the fabric's time.
    pub fn to_std(&self, t: Instant) -> StdInstant {
        self.epoch.to_std(t)
    }

    /// Adds a port, down until a link is attached.
    pub fn add_port(&mut self, id: PortId, config: PortConfig) -> Result<(), SwitchError> {
        self.switch.add_port(id, config)?;
        let now = self.now();
        self.switch.set_port_up(now, id, false)?;
        self.ports.push(PortLink {
            id,
            link: None,
            held: Vec::new(),
            held_from: 0,
            stats: PortStats::default(),
            format: config.format,
            lanes: Vec::new(),
            lane_of: Vec::new(),
            input: config.rate.cells_per_s().map(InputLine::new),
            input_blocked: false,
            lane_turn: 0,
            main_vtime: 0,
        });
        Ok(())
    }

    /// The index of a port in [`Fabric::ports`].
    pub fn index(&self, id: PortId) -> Option<usize> {
        port_index(&self.ports, id)
    }

    /// Attaches a link to port `i` and sets the port up.
    pub fn attach(&mut self, i: usize, link: Box<dyn EndpointLink>) {
        let now = self.now();
        let p = &mut self.ports[i];
        p.link = Some(link);
        p.stats.connects += 1;
        // The port exists (it was added through add_port): set_port_up cannot fail.
        let id = p.id;
        let _ = self.switch.set_port_up(now, id, true);
        self.calls_port(now, id, true);
    }

    /// Drops port `i`'s link (it failed with `why`) and sets the port down.
    pub fn detach(&mut self, i: usize, why: String) {
        let now = self.now();
        let p = &mut self.ports[i];
        p.link = None;
        p.stats.disconnects += 1;
        p.stats.tx_lost += p.held() as u64;
        p.held.clear();
        p.held_from = 0;
        p.stats.last_error = Some(why);
        // Lanes ride on the port's link: the host asks for them again when it reconnects.
        p.stats.lanes_removed += p.lanes.len() as u64;
        p.stats.tx_lost += p.lanes.iter().map(|l| l.held() as u64).sum::<u64>();
        p.lanes.clear();
        p.lane_of.clear();
        let id = p.id;
        let _ = self.switch.set_port_up(now, id, false);
        self.calls_port(now, id, false);
    }

    /// Keeps `cells` for the capture clients, up to [`TAP_LIMIT`]; counts the rest.
    fn tap(
        tapped: &mut Vec<Tapped>,
        overflow: &mut u64,
        (port, out, at): (PortId, bool, Instant),
        cells: &[CellBytes],
    ) {
        let room = TAP_LIMIT.saturating_sub(tapped.len()).min(cells.len());
        tapped.extend(cells[..room].iter().map(|&cell| Tapped {
            port,
            out,
            at,
            cell,
        }));
        *overflow += (cells.len() - room) as u64;
    }

    /// Tells every link and lane whether the loop spins (`true`: no sleep announcements,
    /// so peers publish without kicking) or is about to sleep (`false`: the next step
    /// announces on every empty ring).
    pub fn set_spinning(&mut self, on: bool) {
        for p in &mut self.ports {
            if let Some(l) = p.link.as_mut() {
                l.set_spinning(on);
            }
            for lane in &mut p.lanes {
                lane.link.set_spinning(on);
            }
        }
    }

    /// One step at `now`: receive from every link, run the switch, send to every link.
    pub fn step(&mut self, now: Instant) -> Step {
        let mut step = Step::default();
        let mut failed: Vec<(usize, String)> = Vec::new();
        self.pause_lanes();
        for i in 0..self.ports.len() {
            let p = &mut self.ports[i];
            if p.link.is_none() {
                continue;
            }
            // A rated port with lanes shares its input line between the main link and the
            // lanes: `receive_lanes` reads both.
            if p.lanes.is_empty() || p.input.is_none() {
                match self.receive_main(i, now, usize::MAX) {
                    Ok(n) => step.received += n,
                    Err(why) => failed.push((i, why)),
                }
            }
            if !self.ports[i].lanes.is_empty() {
                let (received, sent, main_failed) = self.receive_lanes(i, now);
                step.received += received;
                step.sent += sent;
                failed.extend(main_failed.map(|why| (i, why)));
            }
        }
        for (i, why) in failed.drain(..) {
            self.detach(i, why);
        }
        self.run_calls(now);
        if self.switch.poll_timeout().is_some_and(|t| t <= now) {
            self.switch.handle_timeout(now);
        }
        for i in 0..self.ports.len() {
            let p = &mut self.ports[i];
            if p.link.is_some() && !p.lanes.is_empty() {
                step.sent += Self::flush_lanes(p);
            }
            let Some(link) = p.link.as_mut() else {
                continue;
            };
            if p.held_from < p.held.len() {
                match link.send_cells(&p.held[p.held_from..]) {
                    Ok(k) => {
                        step.sent += k;
                        p.held_from += k;
                        if p.held_from == p.held.len() {
                            p.held.clear();
                            p.held_from = 0;
                        } else {
                            step.holding = true;
                            // A backed-up main link must not stop the port's lanes.
                            if p.lanes.is_empty() {
                                continue;
                            }
                        }
                    }
                    Err(e) => {
                        failed.push((i, link_error(&e)));
                        continue;
                    }
                }
            }
            let id = p.id;
            // A rated port's cells go in bursts, when the burst's last slot has come (the
            // slots stay exact): sending each as its slot passed kept this loop, and the
            // peer's, awake for every cell.
            let mut n = if self
                .switch
                .port_timeout_within(id, BURST_WINDOW)
                .is_some_and(|t| t > now)
            {
                0
            } else {
                self.switch.poll_transmit(now, id, &mut self.buf)
            };
            if n > 0 && self.tap_ports.contains(&id) {
                let (tapped, overflow) = (&mut self.tapped, &mut self.tap_overflow);
                Self::tap(tapped, overflow, (id, true, now), &self.buf[..n]);
            }
            let p = &mut self.ports[i];
            if !p.lanes.is_empty() {
                let (kept, sent) = Self::split_to_lanes(p, &mut self.buf[..n]);
                n = kept;
                step.sent += sent + Self::flush_lanes(p);
            }
            if p.held_from < p.held.len() {
                // Still backed up (only with lanes): the main link's new cells queue behind
                // what it holds, in order, up to a bound.
                let keep = n.min(LANE_HOLD.saturating_sub(p.held()));
                p.held.extend_from_slice(&self.buf[..keep]);
                p.stats.held_dropped += (n - keep) as u64;
                continue;
            }
            let Some(link) = p.link.as_mut() else {
                continue;
            };
            let result = if n > 0 {
                link.send_cells(&self.buf[..n])
            } else if link.next_due().is_some_and(|t| t <= StdInstant::now()) {
                // Cells or bytes the link holds leave on their own time.
                link.send_cells(&[])
            } else {
                Ok(0)
            };
            match result {
                Ok(k) => {
                    step.sent += k;
                    // A rated port (it has an input line) paces its output too.
                    if p.input.is_some() {
                        step.sent_paced += k;
                    }
                    if k < n {
                        p.held.extend_from_slice(&self.buf[k..n]);
                        step.holding = true;
                    }
                }
                Err(e) => {
                    // The cells taken from the switch are lost with the link.
                    p.held.extend_from_slice(&self.buf[..n]);
                    failed.push((i, link_error(&e)));
                }
            }
        }
        for (i, why) in failed {
            self.detach(i, why);
        }
        step
    }
}

impl Fabric {
    /// Reads at most `max` cells from port `i`'s main link and hands them to the switch
    /// (and the capture); they cross a rated port's input line. The cells read, or why the
    /// link failed.
    fn receive_main(&mut self, i: usize, now: Instant, max: usize) -> Result<usize, String> {
        let p = &mut self.ports[i];
        let Some(link) = p.link.as_mut() else {
            return Ok(0);
        };
        let max = max.min(self.buf.len());
        let n = link
            .recv_cells(&mut self.buf[..max])
            .map_err(|e| link_error(&e))?;
        if n == 0 {
            return Ok(0);
        }
        if let Some(line) = &mut p.input {
            line.take(now, n);
        }
        let id = p.id;
        self.switch.handle_cells(now, id, &self.buf[..n]);
        if self.tap_ports.contains(&id) {
            let (tapped, overflow) = (&mut self.tapped, &mut self.tap_overflow);
            Self::tap(tapped, overflow, (id, false, now), &self.buf[..n]);
        }
        Ok(n)
    }

    /// Reads at most `max` cells from lane `l` of port `i` and hands the cells on the
    /// lane's own VCs to the switch (counting the others as refused). The cells read from
    /// the ring, the cells taken, and the cells the express path put in other lanes'
    /// rings; `None` if the lane failed.
    fn receive_lane(
        &mut self,
        i: usize,
        l: usize,
        now: Instant,
        max: usize,
    ) -> Option<(usize, usize, usize)> {
        let p = &mut self.ports[i];
        let (id, format) = (p.id, p.format);
        let lane = &mut p.lanes[l];
        let n = lane.link.recv_cells(&mut self.buf[..max]).ok()?;
        if n == 0 {
            return Some((0, 0, 0));
        }
        if let Some(line) = &mut p.input {
            line.take(now, n);
        }
        // A relabelled lane's cells carry the region's label: the port's VC from here on.
        if let Some((_, label)) = lane.relabel {
            let vc = lane.vcs[0];
            for c in &mut self.buf[..n] {
                if vc_key(c, format) == label {
                    splice::relabel(c, format, vc);
                }
            }
        }
        // Cells of one VC come in runs: one key looked up per run. Cells are moved only
        // once one was refused (never, from a well-behaved application).
        let mut kept = 0;
        let mut last: Option<(u32, bool)> = None;
        for j in 0..n {
            let key = vc_key(&self.buf[j], format);
            let ok = match last {
                Some((k, ok)) if k == key => ok,
                _ => {
                    let ok = lane.keys.binary_search(&key).is_ok();
                    last = Some((key, ok));
                    ok
                }
            };
            if ok {
                if kept != j {
                    self.buf[kept] = self.buf[j];
                }
                kept += 1;
            }
        }
        p.stats.lane_refused += (n - kept) as u64;
        lane.stats.rx += kept as u64;
        let mut sent = 0;
        if kept > 0 {
            if self.tap_ports.contains(&id) {
                let (tapped, overflow) = (&mut self.tapped, &mut self.tap_overflow);
                Self::tap(tapped, overflow, (id, false, now), &self.buf[..kept]);
            }
            sent = self.forward_lane_cells(id, now, kept);
        }
        Some((n, kept, sent))
    }

    /// Receives one batch from each of port `i`'s lanes and, on a rated port, from its
    /// main link too (on an unrated one [`Fabric::step`] has read the main link first),
    /// and hands the cells to the switch; removes lanes that failed. The cells taken, the
    /// cells the express path put in other lanes' rings, and why the main link failed.
    ///
    /// A rated port's input line is shared by weight among its members: the lanes (each at
    /// its VC's weight) and the main link (at the weight hostd says for the channels it
    /// sends, [`EndpointLink::line_weight`]; 1 unsaid), by [`Fabric::receive_fair`]. A main
    /// link read first and unbounded took every slot while hostd's own channels were busy,
    /// and a lane's handshake got nothing for 10 s.
    fn receive_lanes(&mut self, i: usize, now: Instant) -> (usize, usize, Option<String>) {
        let p = &mut self.ports[i];
        p.input_blocked = false;
        let count = p.lanes.len();
        let rated = p.input.is_some();
        // Member `count` is the main link, where the line is shared.
        let members = count + usize::from(rated && p.link.is_some());
        // The read order turns by one member a step: among members equally far behind,
        // the first read gets a one-slot allowance.
        let first = p.lane_turn % members.max(1);
        p.lane_turn = first + 1;
        let mut pass = Pass::default();
        if rated {
            let main_weight = p
                .link
                .as_ref()
                .and_then(|l| l.line_weight())
                .unwrap_or(1)
                .max(1);
            // Scratch kept in the fabric: this runs every step.
            let mut weights = std::mem::take(&mut self.member_weights);
            let mut reading = std::mem::take(&mut self.member_reading);
            weights.clear();
            weights.extend(
                (0..members)
                    .map(|m| u64::from(p.lanes.get(m).map_or(main_weight, |l| l.weight.max(1)))),
            );
            reading.clear();
            for k in 0..members {
                let m = (first + k) % members;
                if self.readable(i, m, &mut pass) {
                    reading.push(m);
                }
            }
            // Virtual times only order the members: kept small, counted from the least of
            // those read this step. A member not read (a paused lane) is brought up to it,
            // or it would come back far behind and take the line from the others until it
            // caught up.
            let p = &mut self.ports[i];
            let least = reading.iter().map(|&m| *p.vtime_mut(m)).min().unwrap_or(0);
            for m in 0..members {
                let v = p.vtime_mut(m);
                *v = (*v).max(least) - least;
            }
            self.receive_fair(i, now, &mut reading, &weights, &mut pass);
            self.member_weights = weights;
            self.member_reading = reading;
        } else {
            for k in 0..members {
                let m = (first + k) % members;
                if self.readable(i, m, &mut pass) {
                    self.receive_member(i, m, now, self.buf.len(), &mut pass);
                }
            }
        }
        let mut gone = pass.gone;
        gone.sort_unstable();
        gone.dedup();
        for l in gone.into_iter().rev() {
            self.ports[i].remove_lane(l);
        }
        (pass.kept, pass.sent, pass.main_failed)
    }

    /// Whether member `m` of port `i` is read this step: a paused lane is not (its
    /// application's death is looked for instead, since it is not read).
    fn readable(&mut self, i: usize, m: usize, pass: &mut Pass) -> bool {
        let Some(lane) = self.ports[i].lanes.get_mut(m) else {
            return true;
        };
        if lane.paused {
            lane.stats.paused += 1;
            if lane.link.check_peer().is_err() {
                pass.gone.push(m);
            }
            return false;
        }
        true
    }

    /// A rated port's members, while the line allows cells (self-clocked fair queueing
    /// over the members' virtual times, a cell read advancing a member's by
    /// [`VTIME_UNIT`] ÷ its weight): the member furthest behind (the first in `order`
    /// among equals) reads up to its weighted share of what the line allows among the
    /// members still reading, rounded up (`reading`: the members to read, in the step's
    /// turning order). A member that had fewer cells is done for the step, and its virtual
    /// time is brought up to the least of those still reading, so that an idle member does
    /// not save up a burst for later.
    fn receive_fair(
        &mut self,
        i: usize,
        now: Instant,
        reading: &mut Vec<usize>,
        weights: &[u64],
        pass: &mut Pass,
    ) {
        while !reading.is_empty() {
            let p = &mut self.ports[i];
            let allowed = p
                .input
                .map_or(0, |line| line.allowance(now).min(self.buf.len()));
            if allowed == 0 {
                p.input_blocked = true;
                return;
            }
            // `min_by_key` keeps the first of equals: the turning order breaks ties.
            let Some((k, m)) = reading
                .iter()
                .copied()
                .enumerate()
                .min_by_key(|&(_, m)| *p.vtime_mut(m))
            else {
                return;
            };
            let left: u64 = reading.iter().map(|&r| weights[r]).sum();
            let share = (allowed as u64 * weights[m]).div_ceil(left.max(1));
            let share = usize::try_from(share).map_or(allowed, |s| s.min(allowed));
            let read = self.receive_member(i, m, now, share, pass);
            let p = &mut self.ports[i];
            let v = p.vtime_mut(m);
            *v = v.saturating_add(read as u64 * VTIME_UNIT / weights[m].max(1));
            if read < share {
                reading.remove(k);
                if let Some(least) = reading.iter().map(|&r| *p.vtime_mut(r)).min() {
                    let v = p.vtime_mut(m);
                    *v = (*v).max(least);
                }
            } else {
                // A full read may have left cells in the ring.
                p.input_blocked = true;
            }
        }
    }

    /// Reads member `m` of port `i`'s line (a lane, or the main link at `lanes.len()`),
    /// at most `max` cells, into `pass`: a failed lane goes in its `gone`, a failed main
    /// link's reason in its `main_failed` (then it reads nothing, so it is not read again
    /// in the step). The cells read from the member's ring.
    fn receive_member(
        &mut self,
        i: usize,
        m: usize,
        now: Instant,
        max: usize,
        pass: &mut Pass,
    ) -> usize {
        if m < self.ports[i].lanes.len() {
            match self.receive_lane(i, m, now, max) {
                Some((read, kept, sent)) => {
                    pass.kept += kept;
                    pass.sent += sent;
                    read
                }
                None => {
                    pass.gone.push(m);
                    0
                }
            }
        } else {
            match self.receive_main(i, now, max) {
                Ok(n) => {
                    pass.kept += n;
                    n
                }
                Err(why) => {
                    pass.main_failed = Some(why);
                    0
                }
            }
        }
    }

    /// Hands the first `n` cells of the buffer, received on a lane of port `id`, to the
    /// switch: runs that [`Switch::express`] takes go straight into the lane their output
    /// VC has (or are held for it, as `poll_transmit`'s cells would be), the rest from the
    /// first it refuses go to the queues. Nothing goes express while cells are captured, so
    /// that the capture sees every cell as the queues pass it. The cells the lanes' rings
    /// took.
    fn forward_lane_cells(&mut self, id: PortId, now: Instant, n: usize) -> usize {
        let mut from = 0;
        let mut sent = 0;
        while from < n && self.tap_ports.is_empty() {
            let ports = &self.ports;
            let mut to = None;
            let run = self
                .switch
                .express(id, &mut self.buf[from..n], |out, word| {
                    to = port_index(ports, out)
                        .and_then(|q| Some((q, ports[q].lane_for_word(word)?)));
                    to.is_some()
                });
            let (Some((_, k)), Some((q, l))) = (run, to) else {
                break;
            };
            let p = &mut self.ports[q];
            sent += p.lanes[l].send_or_hold(&self.buf[from..from + k], &mut p.stats, p.format);
            from += k;
        }
        if from < n {
            self.switch.handle_cells(now, id, &self.buf[from..n]);
        }
        sent
    }

    /// Lane-to-lane flow control: marks paused every lane that feeds a lane holding more
    /// than [`LANE_PAUSE`] cells, so a slow receiving application slows its senders down
    /// (their rings fill, their sends wait) instead of losing their cells at
    /// [`LANE_HOLD`]. Lanes fed from a main link are not protected: the host daemons'
    /// links are never paused, as a switch never stops reading a line.
    fn pause_lanes(&mut self) {
        let congested = self
            .ports
            .iter()
            .any(|p| p.lanes.iter().any(|l| l.held() > LANE_PAUSE));
        if !congested {
            // The common case, once per step: no allocation, no routes.
            if self.lanes_paused {
                self.lanes_paused = false;
                for l in self.ports.iter_mut().flat_map(|p| p.lanes.iter_mut()) {
                    l.paused = false;
                }
            }
            return;
        }
        self.lanes_paused = true;
        let seen = (
            self.ports
                .iter()
                .map(|p| p.stats.lanes_attached + p.stats.lanes_removed + p.stats.disconnects)
                .sum(),
            self.switch.connection_count(),
        );
        self.routes_age += 1;
        if seen != self.routes_seen || self.routes_age >= ROUTE_REFRESH {
            self.routes_seen = seen;
            self.routes_age = 0;
            self.route_lanes();
        }
        let congested: Vec<Vec<bool>> = self
            .ports
            .iter()
            .map(|p| p.lanes.iter().map(|l| l.held() > LANE_PAUSE).collect())
            .collect();
        for p in &mut self.ports {
            for l in &mut p.lanes {
                l.paused = l
                    .feeds
                    .iter()
                    .any(|&(q, k)| congested.get(q).and_then(|c| c.get(k)) == Some(&true));
            }
        }
    }

    /// Finds, for every lane, the lanes its VCs are cross-connected to.
    fn route_lanes(&mut self) {
        let mut at: std::collections::HashMap<(u16, u32), (usize, usize)> =
            std::collections::HashMap::new();
        for (pi, p) in self.ports.iter_mut().enumerate() {
            for (li, l) in p.lanes.iter_mut().enumerate() {
                l.feeds.clear();
                for &k in &l.keys {
                    at.insert((p.id.0, k), (pi, li));
                }
            }
        }
        let mut feeds: Vec<((usize, usize), (usize, usize))> = Vec::new();
        for (_, xc) in self.switch.connections() {
            for (from, to) in [(xc.a, xc.b), (xc.b, xc.a)] {
                let mut link = |vci_in: u16, vci_out: u16| {
                    let kin = (u32::from(from.vpi) << 16) | u32::from(vci_in);
                    let kout = (u32::from(to.vpi) << 16) | u32::from(vci_out);
                    if let (Some(&src), Some(&dst)) =
                        (at.get(&(from.port.0, kin)), at.get(&(to.port.0, kout)))
                    {
                        feeds.push((src, dst));
                    }
                };
                match (from.vci, to.vci) {
                    (Some(a), Some(b)) => link(a, b),
                    // A VP cross-connect carries every VCI of the VP unchanged.
                    _ => {
                        let vcis: Vec<u16> = at
                            .keys()
                            .filter(|(port, k)| {
                                *port == from.port.0 && k >> 16 == u32::from(from.vpi)
                            })
                            .map(|(_, k)| (k & 0xffff) as u16)
                            .collect();
                        for v in vcis {
                            link(v, v);
                        }
                    }
                }
            }
        }
        for ((sp, sl), dst) in feeds {
            let f = &mut self.ports[sp].lanes[sl].feeds;
            if !f.contains(&dst) {
                f.push(dst);
            }
        }
    }

    /// Sends the cells of `cells` that belong to a lane of `p` to that lane (or holds them
    /// for it) and packs the rest (the main link's) at the front, in order; how many are
    /// left there, and how many the lanes' rings took.
    fn split_to_lanes(p: &mut PortLink, cells: &mut [CellBytes]) -> (usize, usize) {
        let head = |c: &CellBytes| [c[0], c[1], c[2], c[3]];
        let (mut kept, mut sent) = (0, 0);
        // Cells of one VC come in runs of one header: one lookup per run. Runs for the
        // same lane one after another (a frame's cells and its last one) go in one send:
        // every send may wake a reader that sleeps on the lane.
        let mut pending: Option<(usize, usize)> = None; // (lane, first cell)
        let mut j = 0;
        while j < cells.len() {
            let h = head(&cells[j]);
            let end = j + cells[j..].iter().take_while(|c| head(c) == h).count();
            let lane = p.lane_for(&cells[j]);
            if let Some((l, from)) = pending
                && lane != Some(l)
            {
                sent += p.lanes[l].send_or_hold(&cells[from..j], &mut p.stats, p.format);
                pending = None;
            }
            match lane {
                Some(l) => {
                    if pending.is_none() {
                        pending = Some((l, j));
                    }
                }
                None => {
                    cells.copy_within(j..end, kept);
                    kept += end - j;
                }
            }
            j = end;
        }
        if let Some((l, from)) = pending {
            sent += p.lanes[l].send_or_hold(&cells[from..], &mut p.stats, p.format);
        }
        (kept, sent)
    }

    /// Sends what every lane of `p` holds; removes lanes that failed. The cells sent.
    fn flush_lanes(p: &mut PortLink) -> usize {
        let mut sent = 0;
        let mut l = 0;
        while l < p.lanes.len() {
            match p.lanes[l].flush() {
                Ok(k) => {
                    sent += k;
                    l += 1;
                }
                Err(_) => {
                    p.remove_lane(l);
                }
            }
        }
        sent
    }
}

/// The index of port `id` in `ports` ([`Fabric::index`], for callers that hold only the
/// ports).
fn port_index(ports: &[PortLink], id: PortId) -> Option<usize> {
    ports.iter().position(|p| p.id == id)
}

fn link_error(e: &std::io::Error) -> String {
    if is_peer_gone(e) {
        format!("peer gone: {e}")
    } else {
        format!("link error: {e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    #[test]
    fn the_input_line_takes_one_cell_per_slot_and_saves_no_more_than_a_burst() {
        // 1,000 cells/s: a slot of 1 ms. An idle line has saved the last COALESCE (200 µs)
        // of slots: one cell now, the next 0.8 ms later, then one per slot exactly.
        let mut line = InputLine::new(1000);
        let t0 = at(10_000_000_000);
        let after = |ns: u64| at(t0.as_nanos() + ns);
        assert_eq!(line.allowance(t0), 1);
        line.take(t0, 1);
        assert_eq!(line.allowance(t0), 0);
        assert_eq!(line.allowance(after(799_999)), 0);
        assert_eq!(line.allowance(after(800_000)), 1);
        // The main link's cells use slots too: five of them push the lanes back 5 ms.
        line.take(after(800_000), 5);
        assert_eq!(line.allowance(after(5_799_999)), 0);
        assert_eq!(line.allowance(after(5_800_000)), 1);
        // Held back, the lanes are read again a burst's time after the line frees.
        assert_eq!(line.due(), after(6_000_000));
        // Over a second of steps every 37 µs (the last at 999.999 ms), taking all that is
        // allowed: the slots at 0, 1, …, 999 ms, no more.
        let mut line = InputLine::new(1000);
        let (mut taken, mut t) = (0, 0u64);
        while t <= 1_000_000_000 {
            let n = line.allowance(at(t));
            line.take(at(t), n);
            taken += n;
            t += 37_000;
        }
        assert_eq!(taken, 1000);
        // OC-3c: a late step finds at most the window's slots (70 at 353,207 cells/s).
        let mut line = InputLine::new(353_207);
        line.take(at(0), 1);
        assert_eq!(line.allowance(at(1_000_000_000)), 71);
    }

    /// A link whose far end has `cells` cells of VCI `vci` ready at every read
    /// (`usize::MAX`: always full) and says `weight` for its line.
    struct Fake {
        vci: u16,
        cells: usize,
        weight: Option<u32>,
    }

    impl natm_link::CellLink for Fake {
        fn send_cells(&mut self, cells: &[CellBytes]) -> std::io::Result<usize> {
            Ok(cells.len())
        }
        fn recv_cells(&mut self, buf: &mut [CellBytes]) -> std::io::Result<usize> {
            // UNI header, VPI 0: the VCI sits in bits 4..20 of the first word.
            let word = u32::from(self.vci) << 4;
            let n = buf.len().min(self.cells);
            for c in &mut buf[..n] {
                *c = [0; CELL_LEN];
                c[..4].copy_from_slice(&word.to_be_bytes());
            }
            Ok(n)
        }
        fn wait_recv(&mut self, _: Option<std::time::Duration>) -> std::io::Result<bool> {
            Ok(true)
        }
        fn wait_send(&mut self, _: Option<std::time::Duration>) -> std::io::Result<bool> {
            Ok(true)
        }
        fn poll_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
            None
        }
        fn counters(&self) -> natm_link::LinkCounters {
            natm_link::LinkCounters::default()
        }
    }

    impl EndpointLink for Fake {
        fn next_due(&self) -> Option<StdInstant> {
            None
        }
        fn line_weight(&self) -> Option<u32> {
            self.weight
        }
    }

    /// A host's main link (VCI 1) with `cells` ready at every read, saying `weight`.
    fn main_link(cells: usize, weight: Option<u32>) -> Fake {
        Fake {
            vci: 1,
            cells,
            weight,
        }
    }

    /// A fabric with one port of `rate` cells/s, main link `main` and lanes of `(vci,
    /// weight, cells ready per read)`.
    fn rated_port(rate: u32, main: Fake, lanes: &[(u16, u32, usize)]) -> Fabric {
        let mut f = Fabric::new(SwitchConfig::default());
        let config = PortConfig {
            rate: natm_core::LineRate::CellsPerSec(core::num::NonZeroU32::new(rate).unwrap()),
            ..PortConfig::default()
        };
        f.add_port(PortId(1), config).unwrap();
        f.attach(0, Box::new(main));
        for &(vci, weight, cells) in lanes {
            let lane = Fake {
                vci,
                cells,
                weight: None,
            };
            f.ports[0]
                .add_lane(vec![LaneVc { vpi: 0, vci }], weight, Box::new(lane))
                .unwrap();
        }
        f
    }

    /// A port of `rate` cells/s with main link `main` and lanes of `(vci, weight, cells
    /// ready per read)`, stepped every `every` ns, `steps` times: the cells the main link
    /// got, then each lane's.
    fn line_shares(
        rate: u32,
        main: Fake,
        lanes: &[(u16, u32, usize)],
        every: u64,
        steps: u64,
    ) -> (u64, Vec<u64>) {
        let mut f = rated_port(rate, main, lanes);
        let t0 = 10_000_000_000;
        let mut total = 0;
        for k in 0..steps {
            let (taken, _, failed) = f.receive_lanes(0, at(t0 + k * every));
            assert!(failed.is_none());
            total += taken as u64;
        }
        let lanes: Vec<u64> = f.ports[0].lanes.iter().map(|l| l.stats.rx).collect();
        (total - lanes.iter().sum::<u64>(), lanes)
    }

    #[test]
    fn a_lane_paused_for_a_while_does_not_take_the_line_from_the_others_when_it_resumes() {
        // Two full lanes of weight 1 beside an idle main link, 40-cell allowances. While
        // lane 0 is paused lane 1 reads alone; once lane 0 resumes they share the line
        // evenly at once (a paused lane whose virtual time stood still came back 100 steps
        // behind and took every slot until it caught up).
        let full = usize::MAX;
        let mut f = rated_port(
            1_000_000,
            main_link(0, None),
            &[(100, 1, full), (101, 1, full)],
        );
        let t0 = 10_000_000_000;
        f.ports[0].lanes[0].paused = true;
        for k in 0..100 {
            f.receive_lanes(0, at(t0 + k * 40_000));
        }
        f.ports[0].lanes[0].paused = false;
        let before: Vec<u64> = f.ports[0].lanes.iter().map(|l| l.stats.rx).collect();
        assert_eq!(before[0], 0);
        for k in 100..120 {
            f.receive_lanes(0, at(t0 + k * 40_000));
        }
        let got: Vec<u64> = f.ports[0]
            .lanes
            .iter()
            .zip(&before)
            .map(|(l, b)| l.stats.rx - b)
            .collect();
        // Within a step's worth of even (before the fix: 800 and 0).
        assert!(got.iter().all(|&n| (360..=440).contains(&n)), "{got:?}");
    }

    #[test]
    fn a_full_main_link_shares_the_input_line_with_the_lanes_by_weight() {
        // hostd's channels keep its main link full (weight 4, four bulk channels) beside a
        // guaranteed lane that wants a quarter of the line (weight 23): the lane gets its
        // quarter and the main link the rest. Read first and unbounded, the main link took
        // every slot and the lane got nothing.
        let main = main_link(usize::MAX, Some(4));
        let (m, lanes) = line_shares(1_000_000, main, &[(100, 23, 10)], 40_000, 1_000);
        assert_eq!(lanes, [10_000]);
        // (The first step also finds the idle line's saved slots.)
        assert!(
            m + lanes[0] >= 40_000 && m + lanes[0] <= 40_201,
            "{m} {lanes:?}"
        );
        // Both always full: the line goes 23:4.
        let main = main_link(usize::MAX, Some(4));
        let (m, lanes) = line_shares(1_000_000, main, &[(100, 23, usize::MAX)], 40_000, 1_000);
        assert!(
            (lanes[0] as f64 / m as f64 - 23.0 / 4.0).abs() < 0.05,
            "{m} {lanes:?}"
        );
        // One-cell allowances: turns of three steps for the main link (weight 3), one for
        // the lane; a main link that says no weight weighs 1.
        let main = main_link(usize::MAX, Some(3));
        assert_eq!(
            line_shares(1_000, main, &[(100, 1, usize::MAX)], 1_000_000, 1_000),
            (750, vec![250])
        );
        let main = main_link(usize::MAX, None);
        assert_eq!(
            line_shares(1_000, main, &[(100, 1, usize::MAX)], 1_000_000, 1_000),
            (500, vec![500])
        );
    }

    #[test]
    fn lanes_of_a_rated_port_share_one_cell_allowances_in_turn() {
        // A switch that steps once per slot finds an allowance of one cell each time: with
        // two lanes always full, each gets every other slot (the first in attach order
        // took them all before the read order turned).
        let full = usize::MAX;
        let mut f = rated_port(1_000, main_link(0, None), &[(100, 1, full), (101, 1, full)]);
        let t0 = 10_000_000_000;
        for k in 0..1_000u64 {
            f.receive_lanes(0, at(t0 + k * 1_000_000));
        }
        let rx: Vec<u64> = f.ports[0].lanes.iter().map(|l| l.stats.rx).collect();
        assert_eq!(rx, [500, 500]);
    }

    /// Two lanes of weights 3 and 1, always full, on a port of `rate` cells/s stepped
    /// every `every` ns, `steps` times: the cells each got.
    fn weighted_shares(rate: u32, every: u64, steps: u64) -> Vec<u64> {
        let full = usize::MAX;
        let mut f = rated_port(rate, main_link(0, None), &[(100, 3, full), (101, 1, full)]);
        let t0 = 10_000_000_000;
        for k in 0..steps {
            f.receive_lanes(0, at(t0 + k * every));
        }
        f.ports[0].lanes.iter().map(|l| l.stats.rx).collect()
    }

    #[test]
    fn lanes_of_a_rated_port_share_its_line_by_weight() {
        // One-cell allowances (1,000 cells/s, a step a slot): turns of three steps and one.
        assert_eq!(weighted_shares(1_000, 1_000_000, 1_000), [750, 250]);
        // Allowances of 40 cells (1 M cells/s, a step every 40 µs): 30 and 10 in each step
        // (the first step also finds the idle line's saved slots).
        let rx = weighted_shares(1_000_000, 40_000, 1_000);
        assert!(rx[0] + rx[1] >= 40_000, "{rx:?}");
        assert!((rx[0] as f64 / rx[1] as f64 - 3.0).abs() < 0.003, "{rx:?}");
    }

    #[test]
    fn taps_keep_up_to_the_limit_and_count_the_rest() {
        let (mut tapped, mut overflow) = (Vec::new(), 0);
        let at = Instant::from_nanos(3);
        let cells = vec![[7u8; CELL_LEN]; TAP_LIMIT - 1];
        Fabric::tap(&mut tapped, &mut overflow, (PortId(1), false, at), &cells);
        assert_eq!((tapped.len(), overflow), (TAP_LIMIT - 1, 0));
        Fabric::tap(
            &mut tapped,
            &mut overflow,
            (PortId(2), true, at),
            &cells[..3],
        );
        assert_eq!((tapped.len(), overflow), (TAP_LIMIT, 2));
        let last = tapped.last().unwrap();
        assert_eq!((last.port, last.out, last.at), (PortId(2), true, at));
    }
}

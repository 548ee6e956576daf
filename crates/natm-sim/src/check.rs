//! The invariants a run is held to, checked as it goes. A breach stops the run with a
//! [`Violation`](crate::world::Violation) naming the invariant.
//!
//! When: 1–3 on every batch of cells a switch port or adapter takes in or a switch port
//! sends, and on every SDU delivered; 4 and 5 on the whole world after every action and
//! command, every 16,384 events (or 4 events per cross-connect, port and host buffer if
//! that is more) and at the end, and a VC's buffers when it closes; 6 at the end of a
//! scenario run.
//!
//! These are oracles: they decode what the load wrote into its cells and SDUs and bound
//! what the cores may do, but they never do the cores' work (no reassembly, no policing,
//! no admission). The invariants, and what each catches:
//!
//! 1. **Cell order per VC** (I.150 cell sequence integrity). The load writes a 12-byte tag
//!    at the start of every 48-byte chunk of each SDU ([`write_tag`]: flow, a serial that
//!    grows per flow, and a check word mixing both). At every cell arrival at a switch port
//!    or a host adapter the tag is decoded (cells whose check fails, corrupted or untagged,
//!    are skipped) and its serial must be above the last one seen for that flow there.
//!    Catches a switch or link that reorders a VC.
//! 2. **No bad frame delivered.** Every SDU an app receives on a VC registered as load
//!    ([`Checker::register_load`]) is rebuilt from its flow and number ([`build_sdu`]) and
//!    compared byte for byte; SDU numbers must grow per flow and the flow must belong to
//!    that host and VC. Catches a reassembler that lets a corrupted or merged frame through.
//! 3. **Policing.** (a) *Upper bound*, sound under any rounding: on a policed leg, the
//!    untagged user cells the switch lets out since the leg's first cell arrived are at
//!    most `1 + (elapsed + τ)/T + 1` for the PCR GCRA (and for VBR the SCR GCRA with
//!    τ = BT + CDVT). Catches a UPC that lets non-conforming cells pass. (b) *Conforming
//!    traffic never policed*: a stricter GCRA (T rounded up, τ 1/16 and 1 µs smaller)
//!    follows the cells arriving at the switch input per leg; while every policed leg
//!    entering a port has only conforming cells by it (and no damaged header arrived
//!    there), the port's `policed` and `tagged` counters must not move. A leg that breaks
//!    the strict contract stops being checked until it is remade.
//! 4. **CAC books balance**: per port, `reserved_cbr` and `reserved_vbr` are the sums of
//!    the live reservations, no UBR count, and the reservations are as many as the CBR/VBR
//!    directions of recorded cross-connects leaving by the port. Catches a CAC that forgets
//!    a release.
//! 5. **Nothing leaked**: every buffer of a host is exactly where the host's record says
//!    (the adapter holds exactly the posted ones); after a VC closes none of its buffers is
//!    held; the switch's connection count is the world's record; the switch's cell
//!    conservation identity holds (`Σ cells_in + Σ ais_sent = Σ cells_out + Σ dropped +
//!    Σ queued`, and per connection direction).
//!
//!    On a switch with call control (scenarios with `calls`), the cross-connects it made
//!    are not in the record: 4 and 5 count them with the recorded ones (their bookings,
//!    their connection count, the signalling cells that end at or come from the switch's
//!    owner in the conservation identity), and each must be on VPI 0 with SVC VCIs at
//!    both ends, no more of them than calls in call control.
//! 6. **Liveness** (checked by [`crate::scenario`] at the end of a run): with faults off
//!    and the load stopped, every queue drains and each flow's probe arrives (the second
//!    of two: see [`crate::load`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use natm_core::{Instant, TrafficClass, VcId};
use natm_switch::{Category, PortId, Upc};
use natm_traffic::policer::Contract;

use crate::seed::splitmix64;
use crate::world::{ConnId, SwitchNode};

/// Flows numbered below this are followed in a vector per point.
const SMALL_FLOWS: u32 = 1 << 16;

/// Bytes of a tag at the start of each 48-byte chunk.
pub const TAG_LEN: usize = 12;
/// The smallest tagged SDU: a tag, the SDU number and the length.
pub const MIN_SDU: usize = 20;

/// The check word of a tag.
pub fn tag_check(flow: u32, serial: u32) -> u32 {
    (splitmix64(u64::from(flow) << 32 | u64::from(serial)) >> 32) as u32
}

/// Writes a tag into the first 12 bytes of `chunk` (if it has them).
pub fn write_tag(chunk: &mut [u8], flow: u32, serial: u32) {
    if let Some(t) = chunk.get_mut(..TAG_LEN) {
        t[0..4].copy_from_slice(&flow.to_le_bytes());
        t[4..8].copy_from_slice(&serial.to_le_bytes());
        t[8..12].copy_from_slice(&tag_check(flow, serial).to_le_bytes());
    }
}

/// The (flow, serial) of a tag at the start of `bytes`, if its check holds.
pub fn read_tag(bytes: &[u8]) -> Option<(u32, u32)> {
    let t = bytes.get(..TAG_LEN)?;
    let w = |i: usize| u32::from_le_bytes([t[i], t[i + 1], t[i + 2], t[i + 3]]);
    let (flow, serial, check) = (w(0), w(4), w(8));
    (check == tag_check(flow, serial)).then_some((flow, serial))
}

/// Cells an SDU of `len` bytes takes serials for (one per 48-byte chunk).
pub fn serials_of(len: usize) -> u32 {
    len.div_ceil(48) as u32
}

/// Writes SDU number `sdu` of `flow` into `buf` (its whole length): a tag per chunk with
/// serials from `first_serial`, the SDU number and its length (mixed with the flow and
/// number) after the first tag, and bytes
/// that are a function of (flow, SDU number, offset) elsewhere. `buf` is at least
/// [`MIN_SDU`] bytes.
pub fn build_sdu(flow: u32, sdu: u32, first_serial: u32, buf: &mut [u8]) {
    let base = splitmix64(u64::from(flow) << 32 | u64::from(sdu));
    // A 64-bit LCG from the (flow, number) hash: one multiply per 8 bytes, and every
    // word depends on the SDU and its offset.
    let mut x = base;
    let mut next = || {
        x = x
            .wrapping_mul(0x5851_F42D_4C95_7F2D)
            .wrapping_add(0x1405_7B7E_F767_814F);
        (x ^ x >> 29).to_le_bytes()
    };
    // Whole words apart from the tail: a copy of a length known at compile time is a
    // store, not a call to memcpy per word.
    let mut words = buf.chunks_exact_mut(8);
    for w in &mut words {
        w.copy_from_slice(&next());
    }
    let tail = words.into_remainder();
    let n = tail.len();
    tail.copy_from_slice(&next()[..n]);
    for (k, chunk) in buf.chunks_mut(48).enumerate() {
        write_tag(chunk, flow, first_serial.wrapping_add(k as u32));
    }
    if buf.len() >= MIN_SDU {
        buf[12..16].copy_from_slice(&sdu.to_le_bytes());
        // The length, mixed with the flow and number so that a damaged number shows too.
        let len = buf.len() as u32 ^ (base >> 32) as u32;
        buf[16..20].copy_from_slice(&len.to_le_bytes());
    }
}

/// Checks a delivered SDU against what its flow sent: `(flow, sdu number)`, or what is
/// wrong with it.
pub fn verify_sdu(bytes: &[u8], scratch: &mut Vec<u8>) -> Result<(u32, u32), String> {
    if bytes.len() < MIN_SDU {
        return Err(format!(
            "an SDU of {} bytes, below the load's {MIN_SDU}",
            bytes.len()
        ));
    }
    let (flow, serial) = read_tag(bytes).ok_or("the first cell's tag is damaged")?;
    let sdu = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]);
    if scratch.len() < bytes.len() {
        scratch.resize(bytes.len(), 0);
    }
    let expected = &mut scratch[..bytes.len()];
    build_sdu(flow, sdu, serial, expected);
    if bytes == expected {
        return Ok((flow, sdu));
    }
    if let Some(i) = bytes.iter().zip(expected.iter()).position(|(a, b)| a != b) {
        return Err(format!(
            "flow {flow} SDU {sdu} ({} bytes): byte {i} is {:#04x}, sent {:#04x}",
            bytes.len(),
            bytes[i],
            scratch[i]
        ));
    }
    Ok((flow, sdu))
}

/// A fast deterministic hasher for the per-cell maps (keys are small integers).
#[derive(Default)]
pub(crate) struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        splitmix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).rotate_left(5) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 ^= x;
    }
    fn write_u32(&mut self, x: u32) {
        self.0 = self.0.rotate_left(32) ^ u64::from(x);
    }
    fn write_u16(&mut self, x: u16) {
        self.write_u32(u32::from(x));
    }
}

pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<MixHasher>>;

/// A GCRA in virtual-scheduling form over f64 ns, for the oracles only.
#[derive(Clone, Copy, Debug)]
struct Vsa {
    t: f64,
    tau: f64,
    tat: f64,
}

impl Vsa {
    fn conforms(&mut self, now: f64) -> bool {
        if now < self.tat - self.tau {
            return false;
        }
        self.tat = self.tat.max(now) + self.t;
        true
    }
}

/// One policed direction of a cross-connect at a switch.
#[derive(Clone, Debug)]
struct Leg {
    in_port: PortId,
    in_key: u32,
    out_port: PortId,
    out_key: u32,
    /// (T ns, τ ns) of each GCRA: PCR, then SCR for VBR.
    bounds: Vec<(f64, f64)>,
    first: Option<u64>,
    passed: u64,
    strict: Vec<Vsa>,
    checkable: bool,
}

/// Per switch: the policed legs and the per-port baseline of policing counters.
#[derive(Clone, Debug, Default)]
struct SwitchCheck {
    dirty: bool,
    reset: BTreeSet<ConnId>,
    legs: BTreeMap<(ConnId, u8), Leg>,
    by_in: FastMap<(u16, u32), (ConnId, u8)>,
    by_out: FastMap<(u16, u32), (ConnId, u8)>,
    /// Per input port: policed + tagged when its check (b) started.
    base: BTreeMap<u16, u64>,
    /// Input ports with policed legs.
    policed_ports: Vec<u16>,
    /// Input ports with a leg the strict oracle no longer follows.
    bad_ports: Vec<u16>,
    /// Port number → its order-check point (index into `Checker::last_small`).
    points: Vec<u32>,
}

/// The invariant checker's state.
#[derive(Default)]
pub struct Checker {
    /// Host → its order-check point (index into `last_small`); switch ports have theirs
    /// in [`SwitchCheck::points`]. Dense vectors: the lookup is per batch of cells.
    host_points: Vec<u32>,
    /// Last serial per point and flow, for flows below [`SMALL_FLOWS`].
    last_small: Vec<Vec<u32>>,
    /// Last serial per (point, flow) for larger flow numbers.
    last: FastMap<u64, u32>,
    /// Registered load VCs: (host, vc) → receiving.
    load: BTreeMap<(u32, VcId), ()>,
    /// Flow → (receiving host, vc).
    flows: BTreeMap<u32, (u32, VcId)>,
    /// Highest SDU number delivered per flow.
    delivered: BTreeMap<u32, u32>,
    switches: Vec<SwitchCheck>,
    scratch: Vec<u8>,
    /// Whether the policing checks (3a, 3b) run.
    pub policing: bool,
    /// Whether the per-cell and per-SDU checks (1, 2, 3) run at all; the audits (4, 5)
    /// always do. Off only to measure the engine alone.
    pub enabled: bool,
}

fn header_key(cell: &[u8; 53]) -> u32 {
    // UNI: GFC(4) VPI(8) VCI(16) PTI(3) CLP(1).
    let w = u32::from_be_bytes([cell[0], cell[1], cell[2], cell[3]]);
    (w >> 4) & 0x00FF_FFFF
}

fn key_of(vpi: u16, vci: Option<u16>) -> u32 {
    u32::from(vpi) << 16 | u32::from(vci.unwrap_or(0))
}

impl Checker {
    /// A checker with every invariant on.
    pub fn new() -> Checker {
        Checker {
            policing: true,
            enabled: true,
            ..Checker::default()
        }
    }

    /// SDUs arriving at host `host` on `vc` are the load's: flow `flow` sends them, and
    /// each is verified byte for byte.
    pub fn register_load(&mut self, host: u32, vc: VcId, flow: u32) {
        self.load.insert((host, vc), ());
        self.flows.insert(flow, (host, vc));
    }

    /// The highest SDU number of `flow` delivered so far.
    pub fn delivered(&self, flow: u32) -> Option<u32> {
        self.delivered.get(&flow).copied()
    }

    /// The point in slot `i` of `slots`, made if new.
    fn point(slots: &mut Vec<u32>, i: usize, last_small: &mut Vec<Vec<u32>>) -> usize {
        if slots.len() <= i {
            slots.resize(i + 1, u32::MAX);
        }
        if slots[i] == u32::MAX {
            slots[i] = last_small.len() as u32;
            last_small.push(Vec::new());
        }
        slots[i] as usize
    }

    fn order(&mut self, pi: usize, cells: &[[u8; 53]]) -> Result<(), String> {
        let point = pi as u64;
        for c in cells {
            let Some((flow, serial)) = read_tag(&c[5..]) else {
                continue;
            };
            // Flow numbers are small (the load numbers them from 0): a vector per point;
            // a large one (only from a foreign load) goes to the map.
            let small = &mut self.last_small[pi];
            let last = if flow < SMALL_FLOWS {
                let f = flow as usize;
                if f >= small.len() {
                    small.resize(f + 1, 0);
                }
                &mut small[f]
            } else {
                self.last.entry(point << 32 | u64::from(flow)).or_insert(0)
            };
            if serial <= *last && *last != 0 {
                return Err(format!(
                    "flow {flow}: cell serial {serial} arrived after serial {last}"
                ));
            }
            *last = serial;
        }
        Ok(())
    }

    pub(crate) fn cells_at_host(&mut self, h: u32, cells: &[[u8; 53]]) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        let pi = Self::point(&mut self.host_points, h as usize, &mut self.last_small);
        self.order(pi, cells)
    }

    pub(crate) fn leg_reset(&mut self, s: u32, conn: ConnId) {
        let sc = self.switch(s);
        sc.dirty = true;
        sc.reset.insert(conn);
    }

    fn switch(&mut self, s: u32) -> &mut SwitchCheck {
        let i = s as usize;
        if self.switches.len() <= i {
            self.switches.resize_with(i + 1, SwitchCheck::default);
        }
        &mut self.switches[i]
    }

    /// Switch `s`'s policing state with its legs current; `None` when policing is not
    /// checked or the switch polices no leg.
    fn policed(&mut self, s: u32, node: &SwitchNode) -> Option<&mut SwitchCheck> {
        if !(self.policing && self.enabled) {
            return None;
        }
        self.refresh(s, node);
        let sc = &mut self.switches[s as usize];
        (!sc.legs.is_empty()).then_some(sc)
    }

    /// Rebuilds the leg maps from the world's record, keeping the state of legs not reset.
    fn refresh(&mut self, s: u32, node: &SwitchNode) {
        let sc = self.switch(s);
        if !sc.dirty {
            return;
        }
        sc.dirty = false;
        let reset = std::mem::take(&mut sc.reset);
        let mut old = std::mem::take(&mut sc.legs);
        sc.by_in.clear();
        sc.by_out.clear();
        for (id, r) in &node.xcs {
            let xc = &r.xc;
            if xc.upc == Upc::Off || xc.a.vci.is_none() {
                continue;
            }
            let Ok(category) = xc.effective_category() else {
                continue;
            };
            for (d, params, input, output) in
                [(0u8, &xc.qos.tx, xc.a, xc.b), (1, &xc.qos.rx, xc.b, xc.a)]
            {
                if params.class == TrafficClass::None {
                    continue;
                }
                let Some(port) = node.port(input.port) else {
                    continue;
                };
                let link_pcr = match node.sw.port_cac(input.port) {
                    Some(c) => c.config().capacity,
                    None => continue,
                };
                let Ok(mut contract) = Contract::from_params(params, link_pcr) else {
                    continue;
                };
                contract.cdvt = contract.cdvt.max(port.config.cdvt);
                let tau = contract.cdvt.as_nanos() as f64;
                let t = 1e9 / f64::from(contract.pcr);
                let mut bounds = vec![(t, tau)];
                let strict_tau = (tau - tau / 16.0 - 1000.0).max(0.0);
                let t_up = t.ceil();
                let mut strict = vec![Vsa {
                    t: t_up,
                    tau: strict_tau,
                    tat: 0.0,
                }];
                let vbr = matches!(category, Category::NrtVbr | Category::RtVbr);
                if vbr && contract.scr > 0 && contract.mbs > 0 {
                    let ts = 1e9 / f64::from(contract.scr);
                    let bt = f64::from(contract.mbs - 1) * (ts - t);
                    bounds.push((ts, bt + tau));
                    let bt_strict = (f64::from(contract.mbs - 1) * (ts.floor() - t_up)).max(0.0);
                    strict.push(Vsa {
                        t: ts.ceil(),
                        tau: bt_strict + strict_tau,
                        tat: 0.0,
                    });
                }
                let key = (*id, d);
                let fresh = Leg {
                    in_port: input.port,
                    in_key: key_of(input.vpi, input.vci),
                    out_port: output.port,
                    out_key: key_of(output.vpi, output.vci),
                    bounds,
                    first: None,
                    passed: 0,
                    strict,
                    checkable: true,
                };
                let leg = match old.remove(&key) {
                    Some(l) if !reset.contains(id) => l,
                    _ => fresh,
                };
                sc.by_in.insert((leg.in_port.0, leg.in_key), key);
                sc.by_out.insert((leg.out_port.0, leg.out_key), key);
                sc.legs.insert(key, leg);
            }
        }
        // Ports whose legs changed start their baseline afresh at their next input.
        sc.base.clear();
        sc.policed_ports.clear();
        sc.bad_ports.clear();
        for l in sc.legs.values() {
            if !sc.policed_ports.contains(&l.in_port.0) {
                sc.policed_ports.push(l.in_port.0);
            }
            if !l.checkable && !sc.bad_ports.contains(&l.in_port.0) {
                sc.bad_ports.push(l.in_port.0);
            }
        }
    }

    pub(crate) fn cells_into_switch(
        &mut self,
        s: u32,
        node: &SwitchNode,
        p: PortId,
        cells: &[[u8; 53]],
        now: Instant,
    ) -> Result<(), (&'static str, String)> {
        if !self.enabled {
            return Ok(());
        }
        self.switch(s);
        let points = &mut self.switches[s as usize].points;
        let pi = Self::point(points, usize::from(p.0), &mut self.last_small);
        self.order(pi, cells).map_err(|e| {
            (
                "cell order per VC",
                format!("into switch {} port {p}: {e}", node.name),
            )
        })?;
        let Some(sc) = self.policed(s, node) else {
            return Ok(());
        };
        let t = now.as_nanos();
        for c in cells {
            let hdr = [c[0], c[1], c[2], c[3]];
            if natm_wire::cell::hec(hdr) != c[4] {
                // A damaged header may be corrected onto any leg: the strict oracle can no
                // longer follow this port's legs.
                for leg in sc.legs.values_mut() {
                    if leg.in_port == p {
                        leg.checkable = false;
                    }
                }
                if !sc.bad_ports.contains(&p.0) {
                    sc.bad_ports.push(p.0);
                }
                continue;
            }
            let Some(key) = sc.by_in.get(&(p.0, header_key(c))) else {
                continue;
            };
            let Some(leg) = sc.legs.get_mut(key) else {
                continue;
            };
            // Every cell of the leg counts, OAM included: the UPC polices F5 OAM cells with
            // the user cells (an AIS from upstream may be non-conforming).
            leg.first.get_or_insert(t);
            if leg.checkable {
                let tf = t as f64;
                let ok = leg.strict.iter().all(|g| tf >= g.tat - g.tau);
                if ok {
                    for g in &mut leg.strict {
                        g.conforms(tf);
                    }
                } else {
                    leg.checkable = false;
                    if !sc.bad_ports.contains(&p.0) {
                        sc.bad_ports.push(p.0);
                    }
                }
            }
        }
        Ok(())
    }

    pub(crate) fn after_switch_input(
        &mut self,
        s: u32,
        node: &SwitchNode,
        p: PortId,
    ) -> Result<(), String> {
        if !(self.policing && self.enabled) {
            return Ok(());
        }
        let Some(sc) = self.switches.get_mut(s as usize) else {
            return Ok(());
        };
        // Only ports with policed legs entering, all still followed by the strict oracle.
        if !sc.policed_ports.contains(&p.0) || sc.bad_ports.contains(&p.0) {
            return Ok(());
        }
        let Some(pc) = node.sw.port_counters(p) else {
            return Ok(());
        };
        let now_count = pc.policed + pc.tagged;
        match sc.base.get(&p.0) {
            Some(&base) => {
                if now_count != base {
                    return Err(format!(
                        "switch {} port {p}: {} cells policed or tagged while every policed \
                         connection entering it conformed to a stricter contract",
                        node.name,
                        now_count - base.min(now_count)
                    ));
                }
            }
            _ => {
                sc.base.insert(p.0, now_count);
            }
        }
        Ok(())
    }

    pub(crate) fn cells_out_of_switch(
        &mut self,
        s: u32,
        node: &SwitchNode,
        p: PortId,
        cells: &[[u8; 53]],
        now: Instant,
    ) -> Result<(), String> {
        let Some(sc) = self.policed(s, node) else {
            return Ok(());
        };
        let t = now.as_nanos();
        for c in cells {
            // User data (PTI 0xx) with CLP 0.
            if c[3] & 0x08 != 0 || c[3] & 0x01 != 0 {
                continue;
            }
            let Some(key) = sc.by_out.get(&(p.0, header_key(c))) else {
                continue;
            };
            let Some(leg) = sc.legs.get_mut(key) else {
                continue;
            };
            let Some(first) = leg.first else {
                continue;
            };
            leg.passed += 1;
            let elapsed = t.saturating_sub(first) as f64;
            for &(tt, tau) in &leg.bounds {
                let bound = 2.0 + (elapsed + tau) / tt;
                if leg.passed as f64 > bound {
                    return Err(format!(
                        "switch {} cross-connect {} {}: {} untagged cells let out in {} ns \
                         since its first cell, above the GCRA(T = {tt:.1} ns, τ = {tau:.0} ns) \
                         bound {bound:.1}",
                        node.name,
                        key.0.0,
                        if key.1 == 0 { "a→b" } else { "b→a" },
                        leg.passed,
                        elapsed
                    ));
                }
            }
        }
        Ok(())
    }

    pub(crate) fn sdu_delivered(&mut self, h: u32, vc: VcId, bytes: &[u8]) -> Result<(), String> {
        if !self.load.contains_key(&(h, vc)) {
            return Ok(());
        }
        if !self.enabled {
            // Unchecked, but the liveness check still needs what arrived.
            if let (Some((flow, _)), Some(n)) = (read_tag(bytes), bytes.get(12..16)) {
                let sdu = u32::from_le_bytes([n[0], n[1], n[2], n[3]]);
                let last = self.delivered.entry(flow).or_insert(sdu);
                *last = (*last).max(sdu);
            }
            return Ok(());
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let r = verify_sdu(bytes, &mut scratch);
        self.scratch = scratch;
        let (flow, sdu) = r.map_err(|e| format!("VC {vc}: {e}"))?;
        match self.flows.get(&flow) {
            Some(&(fh, fvc)) if (fh, fvc) == (h, vc) => {}
            _ => {
                return Err(format!(
                    "VC {vc}: SDU {sdu} of flow {flow}, which is not this VC's"
                ));
            }
        }
        let last = self.delivered.entry(flow).or_insert(sdu);
        if sdu < *last {
            return Err(format!(
                "VC {vc}: flow {flow} SDU {sdu} delivered after SDU {last}"
            ));
        }
        *last = sdu;
        Ok(())
    }
}

/// Invariants 4 and 5 on one switch: CAC books, connection count, cell conservation.
/// With `only`, the CAC books of just those ports and no per-connection conservation:
/// the cheap audit after a connect or disconnect, which touch two ports.
pub(crate) fn audit_switch(
    node: &SwitchNode,
    only: Option<[PortId; 2]>,
) -> Result<(), (&'static str, String)> {
    if !node.up {
        return Ok(());
    }
    let sw = &node.sw;
    // The cross-connects call control made (switches that signal only): not in the record,
    // on VPI 0 with SVC VCIs at both ends, booked like the recorded ones.
    let switched = match &node.calls {
        Some(c) => {
            let xcs = crate::world::World::switched(node);
            let first = c.config.vci_first;
            for (_, xc) in &xcs {
                for e in [xc.a, xc.b] {
                    if e.vpi != 0 || e.vci.is_none_or(|v| v < first) {
                        return Err((
                            "nothing leaked after release",
                            format!(
                                "switch {}: a switched cross-connect {} – {} is not on SVC VCIs",
                                node.name, xc.a, xc.b
                            ),
                        ));
                    }
                }
            }
            // Each call holds one cross-connect at most: more is a cross-connect leaked.
            let calls = c.cc.as_ref().map_or(0, |cc| cc.call_count());
            if xcs.len() > calls {
                return Err((
                    "no VCI or bandwidth leaked",
                    format!(
                        "switch {}: {} switched cross-connects for {calls} calls in call control",
                        node.name,
                        xcs.len()
                    ),
                ));
            }
            xcs
        }
        None => Vec::new(),
    };
    let live =
        node.xcs.values().filter(|r| r.live.is_some()).count() as u32 + switched.len() as u32;
    if sw.connection_count() != live {
        return Err((
            "nothing leaked after release",
            format!(
                "switch {}: {} connections in the switch, {live} in the record",
                node.name,
                sw.connection_count()
            ),
        ));
    }
    let books = |c: TrafficClass| matches!(c, TrafficClass::Cbr | TrafficClass::Vbr);
    // Reservations expected per output port, in one pass over the record.
    let mut expect: BTreeMap<u16, usize> = BTreeMap::new();
    let wanted = |p: PortId| only.is_none_or(|o| o.contains(&p));
    let recorded = node
        .xcs
        .values()
        .filter(|r| r.live.is_some())
        .map(|r| &r.xc);
    for xc in recorded.chain(switched.iter().map(|(_, xc)| xc)) {
        if books(xc.qos.tx.class) && wanted(xc.b.port) {
            *expect.entry(xc.b.port.0).or_default() += 1;
        }
        if books(xc.qos.rx.class) && wanted(xc.a.port) {
            *expect.entry(xc.a.port.0).or_default() += 1;
        }
    }
    let (mut sum_in, mut sum_out) = (0u64, 0u64);
    for p in node.ports.iter().filter(|p| wanted(p.id)) {
        let Some(cac) = sw.port_cac(p.id) else {
            continue;
        };
        let (mut cbr, mut vbr, mut ubr, mut n) = (0u64, 0u64, 0u32, 0usize);
        for (_, r) in cac.reservations() {
            n += 1;
            match r.class {
                TrafficClass::Cbr => cbr += r.cells_per_s,
                TrafficClass::Vbr => vbr += r.cells_per_s,
                _ => ubr += 1,
            }
        }
        let expected = expect.get(&p.id.0).copied().unwrap_or(0);
        if cac.reserved_cbr() != cbr
            || cac.reserved_vbr() != vbr
            || cac.ubr_count() != ubr
            || n != expected
        {
            return Err((
                "CAC books balance",
                format!(
                    "switch {} port {}: books say CBR {} VBR {} UBR {} cells/s; the {n} live \
                     reservations sum to CBR {cbr} VBR {vbr} UBR {ubr}; the record has \
                     {expected} CBR/VBR directions leaving by this port",
                    node.name,
                    p.id,
                    cac.reserved_cbr(),
                    cac.reserved_vbr(),
                    cac.ubr_count()
                ),
            ));
        }
        if let Some(c) = sw.port_counters(p.id) {
            sum_in += c.cells_in + c.ais_sent + c.signalling_out;
            sum_out += c.cells_out + c.dropped() + c.queued() + c.signalling_in;
        }
    }
    if only.is_some() {
        return Ok(());
    }
    if sum_in != sum_out {
        return Err((
            "nothing leaked after release",
            format!(
                "switch {}: cells in + AIS sent = {sum_in}, cells out + dropped + queued = {sum_out}",
                node.name
            ),
        ));
    }
    for (id, r) in &node.xcs {
        let Some(live) = r.live else { continue };
        let Some((_, xcc)) = sw.connection(live) else {
            return Err((
                "nothing leaked after release",
                format!(
                    "switch {}: recorded cross-connect {} is gone",
                    node.name, id.0
                ),
            ));
        };
        for (name, d) in [("a→b", xcc.a_to_b), ("b→a", xcc.b_to_a)] {
            if d.cells_in != d.cells_out + d.dropped + u64::from(d.queued) {
                return Err((
                    "nothing leaked after release",
                    format!(
                        "switch {} cross-connect {} {name}: in {} ≠ out {} + dropped {} + queued {}",
                        node.name, id.0, d.cells_in, d.cells_out, d.dropped, d.queued
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip_and_damage_is_seen() {
        let mut c = [0u8; 48];
        write_tag(&mut c, 7, 1234);
        assert_eq!(read_tag(&c), Some((7, 1234)));
        for bit in 0..96 {
            let mut d = c;
            d[bit / 8] ^= 0x80 >> (bit % 8);
            assert_eq!(read_tag(&d), None, "bit {bit}");
        }
        assert_eq!(read_tag(&[0u8; 48]), None);
    }

    #[test]
    fn sdus_verify_and_any_changed_byte_is_named() {
        let mut scratch = Vec::new();
        for len in [20usize, 47, 48, 59, 60, 200, 9000] {
            let mut b = vec![0u8; len];
            build_sdu(3, 17, 500, &mut b);
            assert_eq!(verify_sdu(&b, &mut scratch), Ok((3, 17)), "len {len}");
            for i in [0, 13, len / 2, len - 1] {
                let mut d = b.clone();
                d[i] ^= 1;
                assert!(verify_sdu(&d, &mut scratch).is_err(), "len {len} byte {i}");
            }
            // A frame cut short is caught by the length field.
            if len > 60 {
                assert!(verify_sdu(&b[..len - 48], &mut scratch).is_err());
            }
        }
        assert!(verify_sdu(&[0u8; 10], &mut scratch).is_err());
    }

    #[test]
    fn order_check_skips_damaged_tags_and_catches_a_step_back() {
        let mut ch = Checker::new();
        let cell = |flow, serial| {
            let mut c = [0u8; 53];
            write_tag(&mut c[5..], flow, serial);
            c
        };
        assert!(
            ch.cells_at_host(0, &[cell(1, 1), cell(1, 2), cell(2, 1)])
                .is_ok()
        );
        let mut bad = cell(1, 1);
        bad[9] ^= 4;
        assert!(ch.cells_at_host(0, &[bad, cell(1, 5)]).is_ok());
        // Another point keeps its own count.
        assert!(ch.cells_at_host(1, &[cell(1, 3)]).is_ok());
        let e = ch.cells_at_host(0, &[cell(1, 4)]).unwrap_err();
        assert!(e.contains("serial 4 arrived after serial 5"), "{e}");
    }
}

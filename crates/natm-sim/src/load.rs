//! The scenarios' traffic: an [`App`] per host that sends tagged, checkable SDUs on its
//! flows until the load phase ends, then one probe SDU per flow.
//!
//! Every SDU is [`build_sdu`]'s: a tag per 48-byte chunk (flow, cell serial, check),
//! the SDU number and length, and bytes that are a function of (flow, SDU number, offset),
//! so the checker can verify cell order at every hop and every SDU delivered byte for byte.
//! A flow is one direction of one PVC. Its SDU sizes and gaps come from its own seeded
//! stream: UBR flows send random sizes with exponential gaps around a mean rate; CBR and
//! VBR flows send at a fixed fraction of their contract (≈ 90 %, or times `greedy`).
//!
//! Call contract: the scenario builds one [`LoadApp`] per host with its flows and the
//! phase instants; the [`Probes`] it shares with the apps records each flow's last probe
//! SDU number, for the liveness check. Each flow sends two probes [`PROBE_GAP`] apart: the
//! first may legitimately be taken as the end of a frame a fault cut (AAL5 has no other
//! frame boundary), the second must arrive.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use natm_core::{Duration, Instant, VcId};

use crate::app::{App, AppIo};
use crate::check::{MIN_SDU, build_sdu, serials_of};
use crate::seed::Rng;

/// Probe SDU numbers per flow, shared between the apps and the scenario runner.
pub type Probes = Rc<RefCell<BTreeMap<u32, u32>>>;

/// How a flow paces its SDUs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pace {
    /// Random gaps (exponential) around a mean rate in cells/s.
    Random(f64),
    /// Even gaps at a rate in cells/s.
    Even(f64),
}

/// One flow a host sends.
#[derive(Clone, Debug)]
pub struct FlowSpec {
    /// The flow's number (unique in the run; the checker's key).
    pub flow: u32,
    /// The VC it is sent on.
    pub vc: VcId,
    /// SDU sizes, bytes (at least [`MIN_SDU`]).
    pub sizes: (usize, usize),
    /// Its pacing.
    pub pace: Pace,
    /// The seed of its sizes and gaps.
    pub seed: u64,
}

#[derive(Clone, Debug)]
struct Flow {
    spec: FlowSpec,
    rng: Rng,
    next_sdu: u32,
    next_serial: u32,
    probe_sent: bool,
}

/// Timer token of the first probe of each flow.
const PROBE: u64 = u64::MAX;
/// Timer token of the second probe.
const PROBE2: u64 = u64::MAX - 1;

/// Between a flow's two probes: past the scenarios' reassembly timeout.
pub const PROBE_GAP: Duration = Duration::from_millis(12);

/// A host's load.
pub struct LoadApp {
    flows: Vec<Flow>,
    stop: Instant,
    probe_at: Instant,
    probes: Probes,
}

impl LoadApp {
    /// Sends `flows` from time 0 until `stop`, then one probe per flow at `probe_at`.
    pub fn new(flows: Vec<FlowSpec>, stop: Instant, probe_at: Instant, probes: Probes) -> LoadApp {
        LoadApp {
            flows: flows
                .into_iter()
                .map(|spec| Flow {
                    rng: Rng::new(spec.seed),
                    spec,
                    next_sdu: 1,
                    next_serial: 1,
                    probe_sent: false,
                })
                .collect(),
            stop,
            probe_at,
            probes,
        }
    }

    fn send(flow: &mut Flow, len: usize, io: &mut AppIo) -> u32 {
        let (id, sdu, serial) = (flow.spec.flow, flow.next_sdu, flow.next_serial);
        io.send_with(flow.spec.vc, len, |b| build_sdu(id, sdu, serial, b));
        flow.next_sdu += 1;
        flow.next_serial = flow.next_serial.wrapping_add(serials_of(len));
        sdu
    }

    /// The gap before the next SDU of `len` bytes, ns.
    fn gap(flow: &mut Flow, len: usize) -> u64 {
        let cells = serials_of(len + 8) as f64;
        let (rate, random) = match flow.spec.pace {
            Pace::Random(r) => (r, true),
            Pace::Even(r) => (r, false),
        };
        let mean = cells / rate.max(1.0) * 1e9;
        let g = if random {
            // Exponential, capped at 20 means so a flow never falls silent for long.
            -mean * (1.0 - flow.rng.unit()).max(1e-9).ln().max(-20.0)
        } else {
            mean
        };
        (g as u64).max(1)
    }
}

impl App for LoadApp {
    fn start(&mut self, now: Instant, io: &mut AppIo) {
        for (i, f) in self.flows.iter_mut().enumerate() {
            if now < self.stop {
                // Flows start staggered so they do not all fire at one instant.
                let len = f.rng.range(f.spec.sizes.0 as u64, f.spec.sizes.1 as u64) as usize;
                let g = LoadApp::gap(f, len);
                io.timer(
                    Instant::from_nanos(now.as_nanos() + g % 1_000_000),
                    i as u64,
                );
            }
        }
        if now <= self.probe_at {
            io.timer(self.probe_at, PROBE);
        }
    }

    fn on_sdu(&mut self, _now: Instant, _vc: VcId, _sdu: &[u8], _io: &mut AppIo) {}

    fn on_timer(&mut self, now: Instant, token: u64, io: &mut AppIo) {
        if token == PROBE {
            // The first probe may be taken by AAL5 as the end of a frame whose end cell a
            // fault lost (a receiver skips an oversize frame up to its end cell); it ends
            // that frame, so the second, past the reassembly timeout, must arrive.
            for f in &mut self.flows {
                LoadApp::send(f, MIN_SDU, io);
            }
            io.timer_after(now, PROBE_GAP, PROBE2);
            return;
        }
        if token == PROBE2 {
            for f in &mut self.flows {
                if !f.probe_sent {
                    let sdu = LoadApp::send(f, MIN_SDU, io);
                    f.probe_sent = true;
                    self.probes.borrow_mut().insert(f.spec.flow, sdu);
                }
            }
            return;
        }
        let Some(f) = self.flows.get_mut(token as usize) else {
            return;
        };
        if now >= self.stop {
            return;
        }
        let len = f.rng.range(f.spec.sizes.0 as u64, f.spec.sizes.1 as u64) as usize;
        let len = len.max(MIN_SDU);
        LoadApp::send(f, len, io);
        let g = LoadApp::gap(f, len);
        let next = now.as_nanos().saturating_add(g);
        if next < self.stop.as_nanos() {
            io.timer(Instant::from_nanos(next), token);
        }
    }

    fn on_sent(&mut self, now: Instant, vc: VcId, len: usize, ok: bool, io: &mut AppIo) {
        // A probe that could not be sent (a host just restarted, a VC reopening) is sent
        // again a little later, as a new SDU.
        if !ok && len == MIN_SDU && now >= self.probe_at {
            for f in &mut self.flows {
                if f.spec.vc == vc && f.probe_sent {
                    f.probe_sent = false;
                }
            }
            io.timer(Instant::from_nanos(now.as_nanos() + 1_000_000), PROBE2);
        }
    }
}

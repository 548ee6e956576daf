//! Ports: added, removed, brought up and down, and their queues flushed.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use natm_core::Instant;
use natm_core::slotmap::SlotMap;
use natm_traffic::cac::{Cac, CacConfig};
use natm_traffic::discard::FrameDiscard;
use natm_wire::cell::HecReceiver;

use super::{AIS_PERIOD, Fifo, NONE, Pacer, Port, Switch, UBR};
use crate::types::{PortConfig, PortCounters, PortId, SwitchError, XcId};

impl Switch {
    /// Adds a port, up, with empty queues.
    pub fn add_port(&mut self, port: PortId, config: PortConfig) -> Result<(), SwitchError> {
        if self.port_index.contains_key(&port) {
            return Err(SwitchError::PortExists(port));
        }
        let bad = |reason| SwitchError::BadPortConfig { port, reason };
        if config.queue_cells.contains(&0) {
            return Err(bad("every queue limit must be at least 1 cell"));
        }
        if config.epd_percent > 100 {
            return Err(bad("the EPD threshold is a percentage (0..=100)"));
        }
        let mut discard = [FrameDiscard::new(1, 1).map_err(|_| bad("queue limits"))?; 4];
        for (d, &cap) in discard.iter_mut().zip(&config.queue_cells) {
            let pct = match config.epd_percent {
                0 => 100,
                p => u64::from(p),
            };
            let threshold = ((u64::from(cap) * pct) / 100).clamp(1, u64::from(cap)) as u32;
            *d = FrameDiscard::new(cap, threshold).map_err(|_| bad("queue limits"))?;
        }
        let vpis = usize::from(config.format.max_vpi()) + 1;
        let capacity = config.rate.cells_per_s().unwrap_or(u32::MAX);
        let p = Port {
            id: port,
            config,
            up: true,
            hec: HecReceiver::new(),
            vp: vec![NONE; vpis],
            vcs_on_vpi: vec![0; vpis],
            vc: SlotMap::new(),
            fifos: [Fifo::EMPTY; UBR],
            discard,
            ring: VecDeque::new(),
            served: 0,
            #[cfg(feature = "mutants")]
            reorder_count: 0,
            pacer: config
                .rate
                .cells_per_s()
                .map(|rate| Pacer::new(rate, Instant::ZERO)),
            next_ais: None,
            sig_rx: VecDeque::new(),
            sig_tx: VecDeque::new(),
            counters: PortCounters {
                up: true,
                ..PortCounters::default()
            },
            cac: Cac::new(CacConfig {
                link: format!("port {port}"),
                capacity,
                buffer_cells: config.queue_cells[1].saturating_add(config.queue_cells[2]),
                max_ubr: u32::MAX,
            }),
        };
        let slot = match self.ports.iter().position(Option::is_none) {
            Some(s) => {
                self.ports[s] = Some(Box::new(p));
                s
            }
            None => {
                self.ports.push(Some(Box::new(p)));
                self.ports.len() - 1
            }
        };
        // At most 65,536 ports exist, one per PortId.
        self.port_index.insert(port, slot as u16);
        let i = usize::from(port.0);
        if self.slot_of.len() <= i {
            self.slot_of.resize(i + 1, NONE);
        }
        self.slot_of[i] = slot as u32;
        Ok(())
    }

    /// Removes a port: every cross-connect with an end on it is disconnected first (its
    /// queued cells counted as flushed), then the port and its queues go. `now` is the
    /// time of removal; the far ends of those connections get no AIS, as the connections
    /// no longer exist.
    pub fn remove_port(&mut self, _now: Instant, port: PortId) -> Result<(), SwitchError> {
        let slot = self.slot(port)?;
        let doomed: Vec<XcId> = self
            .connections()
            .filter(|(_, xc)| xc.a.port == port || xc.b.port == port)
            .map(|(id, _)| id)
            .collect();
        for id in doomed {
            self.disconnect(id)?;
        }
        // Generated OAM cells may still be queued.
        self.flush_port(slot, false);
        self.sig_pending -= self.port(slot).sig_rx.len();
        self.ports[usize::from(slot)] = None;
        self.port_index.remove(&port);
        self.slot_of[usize::from(port.0)] = NONE;
        Ok(())
    }

    /// Brings a port down or up. Going down flushes its output queues (counted as
    /// `port_down`), and from then on cells arriving on it or queued for it are dropped
    /// (`port_down`), and every connection whose input is this port sends an end-to-end
    /// AIS cell downstream (F5 on VC legs, F4 VCI 4 on VP legs) now and then once per
    /// second (I.610 VP-AIS and VC-AIS) until the port comes back up. Signalling cells
    /// waiting for the owner are discarded (they were counted as `signalling_in`; the
    /// owner's signalling starts again when the port comes back), and queued signalling
    /// cells for output are flushed as `port_down`.
    pub fn set_port_up(&mut self, now: Instant, port: PortId, up: bool) -> Result<(), SwitchError> {
        let slot = self.slot(port)?;
        let p = self.port_mut(slot);
        if p.up == up {
            return Ok(());
        }
        p.up = up;
        p.counters.up = up;
        if up {
            p.next_ais = None;
            if let Some(pacer) = &mut p.pacer {
                pacer.restart(now);
            }
        } else {
            self.flush_port(slot, true);
            let p = self.port_mut(slot);
            let waiting = p.sig_rx.len();
            p.sig_rx.clear();
            self.sig_pending -= waiting;
            self.send_ais(slot);
            self.port_mut(slot).next_ais = now.checked_add(AIS_PERIOD);
        }
        Ok(())
    }

    /// Drops every cell queued at `slot`: as `port_down` if `down`, else as `flushed`.
    fn flush_port(&mut self, slot: u16, down: bool) {
        let Switch {
            ports, legs, pool, ..
        } = self;
        let Some(p) = ports[usize::from(slot)].as_mut() else {
            return;
        };
        let mut n = p.sig_tx.len() as u64;
        p.sig_tx.clear();
        p.counters.signalling_queued = 0;
        for f in &mut p.fifos {
            while let Some(i) = pool.pop(f) {
                let leg = pool.cells[i as usize].leg;
                if leg != NONE {
                    let l = &mut legs[leg as usize];
                    l.queued -= 1;
                    l.dropped += 1;
                }
                pool.release(i);
                n += 1;
            }
        }
        for li in p.ring.drain(..) {
            let l = &mut legs[li as usize];
            while let Some(i) = pool.pop_ring(&mut l.tail) {
                pool.release(i);
                n += 1;
            }
            l.dropped += u64::from(l.queued);
            l.queued = 0;
        }
        p.served = 0;
        p.counters.queue_depth = [0; 4];
        if down {
            p.counters.port_down += n;
        } else {
            p.counters.flushed += n;
        }
    }
}

//! Cross-connects: made (endpoint checks, UPC contracts, CAC) and removed, and the
//! per-port lookup tables that map a cell's VPI/VCI to its leg.

use natm_core::{HeaderFormat, Instant, TrafficClass, TrafficParams, VcId, Vci, Vpi};
use natm_traffic::cac::Handle;
use natm_traffic::policer::{Contract, ContractError, Policer};

use super::{
    CAT_SHIFT, F_AAL5, F_BLOCKED, F_POLICED, F_TAG, F_VP, F_WEIGHT1, Leg, NONE, Policed, Switch,
    UBR, XcSlot,
};
use crate::types::{
    CrossConnect, Direction, Endpoint, PortId, SwitchError, Upc, XcId, category_index,
};

impl Switch {
    /// Makes a duplex cross-connect, after checking both endpoints and admitting each
    /// direction on its output port (natm-traffic CAC: CBR at PCR, VBR at its equivalent
    /// bandwidth, UBR by count). Refusals name what was wrong. `now` is when it starts;
    /// nothing is timed from it yet (its policers start at their first cell).
    pub fn connect(&mut self, _now: Instant, xc: &CrossConnect) -> Result<XcId, SwitchError> {
        if self.live >= self.config.max_connections {
            return Err(SwitchError::TooMany {
                max: self.config.max_connections,
            });
        }
        if xc.a.vci.is_some() != xc.b.vci.is_some() {
            return Err(SwitchError::Mismatch { a: xc.a, b: xc.b });
        }
        if xc.a == xc.b || overlaps(&xc.a, &xc.b) {
            return Err(SwitchError::EndpointInUse {
                endpoint: xc.b,
                by: None,
            });
        }
        if xc.weight == 0 {
            return Err(SwitchError::ZeroWeight);
        }
        let category = xc.effective_category()?;
        let sa = self.slot(xc.a.port)?;
        let sb = self.slot(xc.b.port)?;
        self.check_endpoint(sa, &xc.a)?;
        self.check_endpoint(sb, &xc.b)?;
        // Policers, per direction: a→b (tx) enters at a, b→a (rx) at b.
        let mut policers = [None, None];
        for (i, (params, input, dir)) in [
            (&xc.qos.tx, sa, Direction::AToB),
            (&xc.qos.rx, sb, Direction::BToA),
        ]
        .into_iter()
        .enumerate()
        {
            if xc.upc == Upc::Off || params.class == TrafficClass::None {
                continue;
            }
            let link = self.port(input).cac.config().capacity;
            let bad = |error| SwitchError::BadContract {
                direction: dir,
                error,
            };
            let mut contract = match Contract::from_params(params, link) {
                // A UBR direction without a PCR has nothing to be policed against.
                Err(ContractError::NoPcr) if params.class == TrafficClass::Ubr => continue,
                r => r.map_err(bad)?,
            };
            contract.cdvt = contract.cdvt.max(self.port(input).config.cdvt);
            policers[i] = Some(Policer::new(category.conformance(), &contract).map_err(bad)?);
        }
        // CAC: a→b uses b's output, b→a uses a's.
        let mut booked: [Option<(u16, Handle)>; 2] = [None, None];
        for (i, (params, out)) in [(&xc.qos.tx, sb), (&xc.qos.rx, sa)].into_iter().enumerate() {
            if !books_bandwidth(params) {
                if params.class == TrafficClass::Abr {
                    // Refused as not supported, by the CAC's own words.
                    if let Err(r) = self.port(out).cac.assess(params) {
                        self.unbook(booked);
                        return Err(SwitchError::Admission(r));
                    }
                }
                continue;
            }
            match self.port_mut(out).cac.admit(params) {
                Ok(h) => booked[i] = Some((out, h)),
                Err(r) => {
                    self.unbook(booked);
                    return Err(SwitchError::Admission(r));
                }
            }
        }
        // All checks passed: nothing below fails.
        let (slot, generation) = match self.xcs.get(self.free_slot as usize) {
            Some(&XcSlot::Free { generation, next }) => {
                let slot = self.free_slot;
                self.free_slot = next;
                (slot, generation)
            }
            _ => {
                self.legs.push(Leg::EMPTY);
                self.legs.push(Leg::EMPTY);
                self.xcs.push(XcSlot::Free {
                    generation: 0,
                    next: NONE,
                });
                ((self.xcs.len() - 1) as u32, 0)
            }
        };
        self.xcs[slot as usize] = XcSlot::Live {
            generation,
            xc: *xc,
        };
        let id = XcId {
            index: slot,
            generation,
        };
        if booked.iter().any(Option::is_some) {
            self.reservations.insert(slot, booked);
        }
        let cat = category_index(category) as u8;
        for (dir, (input, output, in_slot, out_slot, params)) in [
            (xc.a, xc.b, sa, sb, &xc.qos.tx),
            (xc.b, xc.a, sb, sa, &xc.qos.rx),
        ]
        .into_iter()
        .enumerate()
        {
            let li = 2 * slot + dir as u32;
            let mut flags = cat << CAT_SHIFT;
            if let Some(policer) = policers[dir].take() {
                let p = Policed { policer, tagged: 0 };
                let i = match self.free_policers.pop() {
                    Some(i) => {
                        self.policers[i as usize] = p;
                        i
                    }
                    None => {
                        self.policers.push(p);
                        (self.policers.len() - 1) as u32
                    }
                };
                self.policed.insert(li, i);
                flags |= F_POLICED;
            }
            if input.vci.is_none() {
                flags |= F_VP;
            }
            if xc.aal5 {
                flags |= F_AAL5;
            }
            if xc.upc == Upc::Tag {
                flags |= F_TAG;
            }
            if params.class == TrafficClass::None {
                flags |= F_BLOCKED;
            }
            if xc.weight == 1 {
                flags |= F_WEIGHT1;
            }
            let out_word =
                u32::from(output.vpi) << 20 | output.vci.map_or(0, |vci| u32::from(vci) << 4);
            self.legs[li as usize] = Leg {
                out_word,
                out_port: out_slot,
                flags,
                ..Leg::EMPTY
            };
            let p = self.port_mut(in_slot);
            match input.vci {
                None => p.vp[usize::from(input.vpi)] = li,
                Some(vci) => {
                    p.vcs_on_vpi[usize::from(input.vpi)] += 1;
                    p.vc.insert(vc_key(input.vpi, vci), li);
                }
            }
        }
        self.live += 1;
        Ok(id)
    }

    /// What [`connect`](Self::connect) would say about `xc`'s admission, without making
    /// it: the connection limit, the category, both ports, and CAC of each direction on its
    /// output port (a→b on `b`'s port, b→a on `a`'s). The endpoints' VPI/VCI are not
    /// checked (a caller may not know one yet, e.g. a VCI its peer assigns), nor the
    /// contracts UPC would police. A later `connect` may still be refused if the books
    /// change meanwhile.
    pub fn assess(&self, xc: &CrossConnect) -> Result<(), SwitchError> {
        if self.live >= self.config.max_connections {
            return Err(SwitchError::TooMany {
                max: self.config.max_connections,
            });
        }
        xc.effective_category()?;
        let sa = self.slot(xc.a.port)?;
        let sb = self.slot(xc.b.port)?;
        for (params, out) in [(&xc.qos.tx, sb), (&xc.qos.rx, sa)] {
            if books_bandwidth(params) || params.class == TrafficClass::Abr {
                self.port(out)
                    .cac
                    .assess(params)
                    .map_err(SwitchError::Admission)?;
            }
        }
        Ok(())
    }

    fn unbook(&mut self, booked: [Option<(u16, Handle)>; 2]) {
        for (port, h) in booked.into_iter().flatten() {
            if let Some(p) = self.ports[usize::from(port)].as_mut() {
                // The handle was just booked on this port.
                let _ = p.cac.release(h);
            }
        }
    }

    fn check_endpoint(&self, slot: u16, e: &Endpoint) -> Result<(), SwitchError> {
        let p = self.port(slot);
        let bad = |reason| SwitchError::BadEndpoint {
            endpoint: *e,
            reason,
        };
        if e.vpi > p.config.format.max_vpi() {
            return Err(bad(match p.config.format {
                HeaderFormat::Uni => "VPI above 255 on a UNI port",
                HeaderFormat::Nni => "VPI above 4095 on an NNI port",
            }));
        }
        let in_use = |by: u32| SwitchError::EndpointInUse {
            endpoint: *e,
            by: Some(self.xc_id(by / 2)),
        };
        if p.config.signalling && e.vpi == 0 && matches!(e.vci, None | Some(5)) {
            return Err(bad(
                "0.5 is this signalling port's own VC (VP 0 cannot be connected whole)",
            ));
        }
        let vp = p.vp[usize::from(e.vpi)];
        if vp != NONE {
            return Err(in_use(vp));
        }
        match e.vci {
            Some(0) => Err(bad("VCI 0 is the unassigned cell")),
            Some(3 | 4) => Err(bad("VCIs 3 and 4 carry the VP's F4 OAM flows")),
            Some(vci) => match p.vc.get(vc_key(e.vpi, vci)) {
                Some(li) => Err(in_use(li)),
                None => Ok(()),
            },
            None if p.vcs_on_vpi[usize::from(e.vpi)] > 0 => Err(SwitchError::EndpointInUse {
                endpoint: *e,
                by: self.xc_on_vpi(p.id, e.vpi),
            }),
            None => Ok(()),
        }
    }

    fn xc_on_vpi(&self, port: PortId, vpi: u16) -> Option<XcId> {
        self.connections()
            .find(|(_, xc)| {
                (xc.a.port == port && xc.a.vpi == vpi) || (xc.b.port == port && xc.b.vpi == vpi)
            })
            .map(|(id, _)| id)
    }

    fn xc_id(&self, slot: u32) -> XcId {
        XcId {
            index: slot,
            generation: self.xcs[slot as usize].generation(),
        }
    }

    /// Removes a cross-connect: its table entries, policers and CAC bookings, and its
    /// queued cells (counted as `flushed` on their port). Returns what it was.
    pub fn disconnect(&mut self, id: XcId) -> Result<CrossConnect, SwitchError> {
        let s = id.index as usize;
        let xc = match self.xcs.get(s) {
            Some(XcSlot::Live { generation, xc }) if *generation == id.generation => *xc,
            _ => return Err(SwitchError::UnknownConnection(id)),
        };
        if let Some(booked) = self.reservations.remove(&id.index) {
            self.unbook(booked);
        }
        for (dir, input) in [(0usize, xc.a), (1, xc.b)] {
            let li = (2 * s + dir) as u32;
            self.flush_leg(li);
            if let Some(i) = self.policed.remove(li) {
                self.free_policers.push(i);
            }
            let in_slot = self.slot(input.port)?;
            let p = self.port_mut(in_slot);
            match input.vci {
                None => p.vp[usize::from(input.vpi)] = NONE,
                Some(vci) => {
                    p.vcs_on_vpi[usize::from(input.vpi)] -= 1;
                    p.vc.remove(vc_key(input.vpi, vci));
                }
            }
            self.legs[li as usize] = Leg::EMPTY;
        }
        self.xcs[s] = XcSlot::Free {
            generation: id.generation.wrapping_add(1),
            next: self.free_slot,
        };
        self.free_slot = id.index;
        self.live -= 1;
        Ok(xc)
    }

    /// Drops a leg's queued cells (counted as flushed at its output port).
    fn flush_leg(&mut self, li: u32) {
        let Switch {
            ports, legs, pool, ..
        } = self;
        let leg = &mut legs[li as usize];
        if leg.queued == 0 {
            return;
        }
        let Some(p) = ports[usize::from(leg.out_port)].as_mut() else {
            return;
        };
        let c = leg.category();
        let mut n = 0u32;
        if c == UBR {
            while let Some(i) = pool.pop_ring(&mut leg.tail) {
                pool.release(i);
                n += 1;
            }
            // It had cells, so it is in the ring.
            if p.ring.front() == Some(&li) {
                p.served = 0;
            }
            p.ring.retain(|&x| x != li);
        } else {
            // Unlink this leg's cells from the shared category FIFO.
            let f = &mut p.fifos[c];
            let mut prev = NONE;
            let mut i = f.head;
            while i != NONE {
                let next = pool.cells[i as usize].next;
                if pool.cells[i as usize].leg == li {
                    if prev == NONE {
                        f.head = next;
                    } else {
                        pool.cells[prev as usize].next = next;
                    }
                    if f.tail == i {
                        f.tail = prev;
                    }
                    pool.release(i);
                    n += 1;
                } else {
                    prev = i;
                }
                i = next;
            }
        }
        p.counters.queue_depth[c] -= n;
        p.counters.flushed += u64::from(n);
        leg.dropped += u64::from(n);
        leg.queued -= n;
    }
}

/// Whether one end's VP contains the other end (same port and VPI, one a VP).
fn overlaps(a: &Endpoint, b: &Endpoint) -> bool {
    a.port == b.port && a.vpi == b.vpi && (a.vci.is_none() || b.vci.is_none())
}

fn books_bandwidth(params: &TrafficParams) -> bool {
    matches!(params.class, TrafficClass::Cbr | TrafficClass::Vbr)
}

/// [`VcId::key`] of an endpoint's `vpi.vci`.
#[inline]
fn vc_key(vpi: u16, vci: u16) -> u32 {
    let vpi = Vpi::nni(u32::from(vpi))
        .expect("an endpoint's VPI was checked against its port's format, at most 4095");
    VcId::new(vpi, Vci::from_u16(vci)).key()
}

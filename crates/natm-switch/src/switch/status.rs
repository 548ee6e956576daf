//! What the switch reports: port and connection counters, CAC books, the lists of ports
//! and cross-connects, and the bytes of state a connection costs.

use natm_traffic::cac::Cac;

use super::{Leg, Policed, Switch, XcSlot};
use crate::types::{CrossConnect, PortConfig, PortCounters, PortId, XcCounters, XcId};

/// A `SlotMap` bucket (`key << 32 | slot`).
const SLOTMAP_BUCKET: usize = 8;
/// A `SlotMap` grows past half full to twice its size: its load stays above a quarter.
const MIN_LOAD_INVERSE: usize = 4;

impl Switch {
    /// A port's counters, with its current queue depths.
    pub fn port_counters(&self, port: PortId) -> Option<PortCounters> {
        let slot = self.slot(port).ok()?;
        Some(self.port(slot).counters)
    }

    /// A port's admission books: what the connections leaving by it have reserved (their
    /// output direction's contract), to audit that every release gave back what it took.
    pub fn port_cac(&self, port: PortId) -> Option<&Cac> {
        let slot = self.slot(port).ok()?;
        Some(&self.port(slot).cac)
    }

    /// A cross-connect and its counters per direction.
    pub fn connection(&self, id: XcId) -> Option<(&CrossConnect, XcCounters)> {
        let slot = self.xcs.get(id.index as usize)?;
        if slot.generation() != id.generation {
            return None;
        }
        let xc = slot.xc()?;
        let s = 2 * id.index;
        let tagged = |li: u32| {
            self.policed
                .get(li)
                .map_or(0, |i| self.policers[i as usize].tagged)
        };
        Some((
            xc,
            XcCounters {
                a_to_b: self.legs[s as usize].counters(tagged(s)),
                b_to_a: self.legs[s as usize + 1].counters(tagged(s + 1)),
            },
        ))
    }

    /// The cross-connects, in slot order.
    pub fn connections(&self) -> impl Iterator<Item = (XcId, &CrossConnect)> {
        self.xcs.iter().enumerate().filter_map(|(i, s)| {
            s.xc().map(|xc| {
                (
                    XcId {
                        index: i as u32,
                        generation: s.generation(),
                    },
                    xc,
                )
            })
        })
    }

    /// How many cross-connects exist.
    pub fn connection_count(&self) -> u32 {
        self.live
    }

    /// The ports, in port number order.
    pub fn ports(&self) -> impl Iterator<Item = (PortId, &PortConfig)> {
        self.port_index
            .iter()
            .filter_map(|(&id, &slot)| Some((id, &self.ports[usize::from(slot)].as_ref()?.config)))
    }

    /// Bytes of switch state one cross-connect costs beyond its queued cells, from the
    /// sizes of the real structures: two legs, its slot (the [`CrossConnect`] and a
    /// generation; free slots chain through themselves), a UBR ring entry per leg, and one
    /// lookup-table entry per end at the table's lowest load (a `SlotMap` bucket is 8
    /// bytes and the table is more than a quarter full after growing, at most half).
    /// Policed directions add [`policer_bytes`](Self::policer_bytes) each; CBR/VBR
    /// directions add a CAC reservation in natm-traffic's `Cac`.
    pub fn state_bytes_per_connection() -> usize {
        2 * core::mem::size_of::<Leg>()
            + core::mem::size_of::<XcSlot>()
            + 2 * core::mem::size_of::<u32>()
            + 2 * SLOTMAP_BUCKET * MIN_LOAD_INVERSE
    }

    /// Bytes one policed direction adds: its [`Policer`] and tag counter, a free-list
    /// entry, and its entry in the leg → policer table at the lowest load.
    pub fn policer_bytes() -> usize {
        core::mem::size_of::<Policed>()
            + core::mem::size_of::<u32>()
            + SLOTMAP_BUCKET * MIN_LOAD_INVERSE
    }
}

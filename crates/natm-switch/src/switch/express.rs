//! The express path: a run of one VC's cells passed straight from input to output.
//!
//! [`Switch::handle_cells`] queues every cell and [`Switch::poll_transmit`] takes it off
//! again. When the output port is unrated and holds nothing in any queue, that round trip
//! decides nothing: strict priority, the round robin, EPD/PPD and the queue limits all see
//! an empty port, and the cells would leave at the next poll in arrival order. The express
//! path does the same for such a run in one pass over the cells, translating their
//! headers in place and counting them as the two calls would have, without the pool.
//!
//! It takes only the plain case (a VC leg without UPC, user data with a good HEC, an AAL5
//! VC that is not discarding a frame) and leaves everything else, starting with the first
//! cell it does not take, to `handle_cells`. A caller that mixes the two keeps the cells'
//! order: once `handle_cells` has queued anything for a port, the express path refuses
//! that port until `poll_transmit` has emptied it.

use natm_wire::cell::HecMode;

use super::{F_AAL5, F_BLOCKED, F_POLICED, F_VP, KEEP_VC, NONE, Switch};
use crate::hec::{hec, hec_low};
use crate::types::PortId;

/// The header bits that name a cell's connection: GFC or VPI, and VCI.
const ROUTE_BITS: u32 = 0xFFFF_FFF0;
/// The PTI bit that marks OAM and resource-management cells.
const PTI_NOT_USER: u32 = 0b1000;
/// The PTI bit that marks an AAL5 frame's last cell.
const PTI_END_OF_FRAME: u32 = 0b0010;

impl Switch {
    /// Passes the longest prefix of `cells` (arrived on `port` together) that the express
    /// path may take straight through, translating the headers in place; returns the
    /// output port and how many cells, or `None` when it takes none (see the [module
    /// documentation](self)). `accept` is asked first, with the output port and the first
    /// cell's translated header word, whether the caller can send the run there at once;
    /// it refuses by returning `false`, and then nothing changes.
    ///
    /// The cells taken are counted as `handle_cells` followed by `poll_transmit` would
    /// count them: in at `port`, in on their connection, out at the output port (and in
    /// the output queue's frame-discard counters).
    pub fn express(
        &mut self,
        port: PortId,
        cells: &mut [[u8; 53]],
        accept: impl FnOnce(PortId, u32) -> bool,
    ) -> Option<(PortId, usize)> {
        let in_slot = self.slot(port).ok()?;
        let Switch { ports, legs, .. } = self;
        let first = cells.first()?;
        let word = u32::from_be_bytes([first[0], first[1], first[2], first[3]]);
        let p = ports[usize::from(in_slot)].as_ref()?;
        if !p.up || p.hec.mode() == HecMode::Detection || hec(word) != first[4] {
            return None;
        }
        let vpi = (word >> 20) & p.vpi_mask();
        let vci = (word >> 4) & 0xFFFF;
        if (vpi == 0 && vci == 0)
            || vci == 3
            || vci == 4
            || word & PTI_NOT_USER != 0
            || p.vp[vpi as usize] != NONE
        {
            return None;
        }
        let li = p.vc.get(vpi << 16 | vci)?;
        let leg = &legs[li as usize];
        if leg.flags & (F_BLOCKED | F_POLICED | F_VP) != 0
            || (leg.flags & F_AAL5 != 0 && leg.frame.is_discarding())
        {
            return None;
        }
        let out = ports[usize::from(leg.out_port)].as_ref()?;
        let c = leg.category();
        if !out.up || out.pacer.is_some() || out.has_output() || out.config.queue_cells[c] == 0 {
            return None;
        }
        let out_id = out.id;
        let out_word = leg.out_word | (word & KEEP_VC);
        if !accept(out_id, out_word) {
            return None;
        }
        // The run's headers differ from the first one's only in PTI and CLP: their HECs
        // differ by what those bits add (see `hec_low`), in and out alike.
        let route = word & ROUTE_BITS;
        let hec_in = hec(route);
        let out_route = leg.out_word;
        let hec_out = hec(out_route);
        let mut n: u32 = 0;
        let mut last_ends_frame = false;
        for cell in cells.iter_mut().take(u32::MAX as usize) {
            let w = u32::from_be_bytes([cell[0], cell[1], cell[2], cell[3]]);
            let low = hec_low(w);
            if w & ROUTE_BITS != route || w & PTI_NOT_USER != 0 || hec_in ^ low != cell[4] {
                break;
            }
            let o = out_route | (w & KEEP_VC);
            cell[..4].copy_from_slice(&o.to_be_bytes());
            cell[4] = hec_out ^ low;
            last_ends_frame = w & PTI_END_OF_FRAME != 0;
            n += 1;
        }
        let leg = &mut legs[li as usize];
        let out = ports[usize::from(leg.out_port)]
            .as_mut()
            .expect("the output port was found above");
        if leg.flags & F_AAL5 != 0 {
            // An empty queue and a frame not being discarded (checked above): every cell
            // is taken, and the frame state follows the cells as it would in the queue.
            let passed = out.discard[c].pass_through(&mut leg.frame, n, last_ends_frame);
            debug_assert!(passed);
        }
        leg.cells_in += u64::from(n);
        out.counters.cells_out += u64::from(n);
        if let Some(p) = ports[usize::from(in_slot)].as_mut() {
            p.counters.cells_in += u64::from(n);
        }
        Some((out_id, n as usize))
    }

    /// Whether the switch does nothing to a VC's user cells from `port` but translate their
    /// headers: an unpoliced, unblocked VC leg (not a VP's) to an up, unpaced port. A
    /// caller may then carry them past the switch (natm-switchd's spliced lanes).
    pub fn passes_untouched(&self, port: PortId, vpi: u16, vci: u16) -> bool {
        let Ok(slot) = self.slot(port) else {
            return false;
        };
        let Some(p) = self.ports[usize::from(slot)].as_ref() else {
            return false;
        };
        let (vpi, vci) = (u32::from(vpi), u32::from(vci));
        if !p.up || vpi > p.vpi_mask() || p.vp[vpi as usize] != NONE {
            return false;
        }
        let Some(li) = p.vc.get(vpi << 16 | vci) else {
            return false;
        };
        let leg = &self.legs[li as usize];
        leg.flags & (F_BLOCKED | F_POLICED | F_VP) == 0
            && self.ports[usize::from(leg.out_port)]
                .as_ref()
                .is_some_and(|o| o.up && o.pacer.is_none())
    }
}

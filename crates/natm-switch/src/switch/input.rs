//! The cell input path: [`Switch::handle_cells`] checks each cell's HEC, finds its leg,
//! polices it (UPC), translates its header and queues it on its output port (EPD/PPD,
//! tail drop).

use natm_core::Instant;
use natm_traffic::discard::{Decision, DropReason};
use natm_traffic::policer::Verdict;
use natm_wire::cell::{Cell, HecMode, HecVerdict};

use super::oam::segment_oam;
use super::signalling::{SIGNALLING_KEY, receive_signalling};
use super::{
    CLP, F_AAL5, F_BLOCKED, F_POLICED, F_TAG, F_VP, Found, KEEP_VC, KEEP_VP, Leg, NONE, Pool, Port,
    Switch, UBR,
};
use crate::hec::hec;
use crate::types::PortId;

impl Switch {
    /// One cell arrived on `port` at `now` (see [`handle_cells`](Self::handle_cells)).
    pub fn handle_cell(&mut self, now: Instant, port: PortId, cell: &[u8; 53]) {
        self.handle_cells(now, port, core::slice::from_ref(cell));
    }

    /// Cells arrived on `port` at `now`, in order. Each is HEC-checked (I.432 §4.3:
    /// single-bit correction, then detection mode), looked up, policed, translated and
    /// queued on its output port, or answered (OAM segment loopback), or dropped and
    /// counted. Cells for an unknown port are ignored.
    pub fn handle_cells(&mut self, now: Instant, port: PortId, cells: &[[u8; 53]]) {
        let Ok(in_slot) = self.slot(port) else {
            return;
        };
        // Two passes per chunk: the first checks headers and finds each cell's leg (short
        // iterations, so the table and leg loads of many cells are in flight at once), the
        // second polices and queues.
        let mut found = core::mem::take(&mut self.found);
        found.resize(CHUNK, Found::default());
        for chunk in cells.chunks(CHUNK) {
            let n = self.classify(in_slot, chunk, &mut found);
            self.forward(now, in_slot, chunk, &found[..n]);
        }
        self.found = found;
    }

    /// Pass one of [`handle_cells`](Self::handle_cells): counts every cell in, handles the
    /// ones that end here (bad HEC, idle, unknown, segment OAM) and writes the others to
    /// `found`; returns how many.
    #[inline]
    fn classify(&mut self, in_slot: u16, chunk: &[[u8; 53]], found: &mut [Found]) -> usize {
        let Switch {
            ports,
            legs,
            pool,
            sig_pending,
            ..
        } = self;
        let Some(p) = ports[usize::from(in_slot)].as_mut() else {
            return 0;
        };
        p.counters.cells_in += chunk.len() as u64;
        if !p.up {
            p.counters.port_down += chunk.len() as u64;
            return 0;
        }
        let vpi_mask = p.vpi_mask();
        let mut n = 0;
        // The last VC looked up, `(vpi << 16 | vci, leg)`: an SDU's cells come in a run, and
        // the table cannot change within the call.
        let mut last = (u32::MAX, NONE);
        for (k, cell) in chunk.iter().enumerate() {
            let mut word = u32::from_be_bytes([cell[0], cell[1], cell[2], cell[3]]);
            if hec(word) != cell[4] || p.hec.mode() == HecMode::Detection {
                let mut h = [cell[0], cell[1], cell[2], cell[3], cell[4]];
                match p.hec.receive(&mut Cell::new_unchecked(&mut h[..])) {
                    HecVerdict::Valid => {}
                    HecVerdict::Corrected { .. } => {
                        p.counters.hec_corrected += 1;
                        word = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
                    }
                    HecVerdict::Discarded { .. } => {
                        p.counters.hec_discarded += 1;
                        continue;
                    }
                }
            }
            let vpi = (word >> 20) & vpi_mask;
            let vci = (word >> 4) & 0xFFFF;
            if vpi == 0 && vci == 0 {
                p.counters.idle += 1;
                continue;
            }
            let vp_leg = p.vp[vpi as usize];
            let li = if vp_leg != NONE {
                if vci == 3 {
                    segment_oam(p, pool, word, payload_of(cell));
                    continue;
                }
                vp_leg
            } else {
                if vci == 3 || vci == 4 {
                    if p.vcs_on_vpi[vpi as usize] == 0 {
                        p.counters.unknown_vc += 1;
                    } else if vci == 3 {
                        segment_oam(p, pool, word, payload_of(cell));
                    } else {
                        // The VP ends here: its end-to-end flow is ours, and not answered.
                        p.counters.oam_terminated += 1;
                    }
                    continue;
                }
                let key = vpi << 16 | vci;
                let li = if key == last.0 {
                    last.1
                } else {
                    let Some(li) = p.vc.get(key) else {
                        // 0.5 is never connected on a signalling port: its cells end up
                        // here, off the path of connected cells.
                        if key == SIGNALLING_KEY && p.config.signalling {
                            if receive_signalling(p, word, cell) {
                                *sig_pending += 1;
                            }
                        } else {
                            p.counters.unknown_vc += 1;
                        }
                        continue;
                    };
                    last = (key, li);
                    li
                };
                if (word >> 1) & 7 == 0b100 {
                    segment_oam(p, pool, word, payload_of(cell));
                    continue;
                }
                li
            };
            // Reading the flags here starts the leg's load early.
            found[n] = Found {
                k: k as u32,
                li,
                word,
                flags: legs[li as usize].flags,
            };
            n += 1;
        }
        n
    }

    /// Pass two of [`handle_cells`](Self::handle_cells): UPC, translation and queueing of
    /// the cells `classify` found legs for.
    #[inline]
    fn forward(&mut self, now: Instant, in_slot: u16, chunk: &[[u8; 53]], found: &[Found]) {
        let Switch {
            ports,
            legs,
            pool,
            policers,
            policed,
            ..
        } = self;
        let (mut n_policed, mut n_tagged) = (0u64, 0u64);
        for &Found {
            k,
            li,
            mut word,
            flags,
        } in found
        {
            let cell = &chunk[k as usize];
            let leg = &mut legs[li as usize];
            leg.cells_in += 1;
            if flags & (F_BLOCKED | F_POLICED) != 0 {
                if flags & F_BLOCKED != 0 {
                    leg.dropped += 1;
                    n_policed += 1;
                    continue;
                }
                if let Some(pi) = policed.get(li) {
                    let clp = word & CLP != 0;
                    let upc = &mut policers[pi as usize];
                    match upc.policer.police(now, clp) {
                        Verdict::Pass => {}
                        Verdict::Discard if clp || flags & F_TAG == 0 => {
                            leg.dropped += 1;
                            n_policed += 1;
                            continue;
                        }
                        // VBR.3's tag, or a discard that this UPC turns into a tag.
                        Verdict::Tag | Verdict::Discard => {
                            word |= CLP;
                            upc.tagged += 1;
                            n_tagged += 1;
                        }
                    }
                }
            }
            let keep = if flags & F_VP != 0 { KEEP_VP } else { KEEP_VC };
            let out_word = leg.out_word | (word & keep);
            let Some(out) = ports[usize::from(leg.out_port)].as_mut() else {
                continue;
            };
            enqueue(out, pool, leg, li, out_word, payload_of(cell));
        }
        if let Some(p) = ports[usize::from(in_slot)].as_mut() {
            p.counters.policed += n_policed;
            p.counters.tagged += n_tagged;
        }
    }
}

/// Cells per pass of [`Switch::handle_cells`].
const CHUNK: usize = 32;

#[inline]
fn payload_of(cell: &[u8; 53]) -> &[u8; 48] {
    cell[5..].try_into().expect("53 - 5 = 48 bytes")
}

/// Queues a translated cell of leg `li` on its output port `p`, or drops it (EPD/PPD on
/// AAL5 user data, tail drop otherwise).
#[inline]
fn enqueue(p: &mut Port, pool: &mut Pool, leg: &mut Leg, li: u32, word: u32, payload: &[u8; 48]) {
    if !p.up {
        leg.dropped += 1;
        p.counters.port_down += 1;
        return;
    }
    let c = leg.category();
    let occupancy = p.counters.queue_depth[c];
    let user_data = word & 0b1000 == 0;
    let decision = if leg.flags & F_AAL5 != 0 && user_data {
        let end_of_frame = word & 0b0010 != 0;
        p.discard[c].decide(&mut leg.frame, occupancy, end_of_frame)
    } else if occupancy >= p.config.queue_cells[c] {
        // Plain tail drop (what `FrameDiscard::decide_cell` does), without the call.
        Decision::Drop(DropReason::Full)
    } else {
        Decision::Enqueue
    };
    match decision {
        Decision::Enqueue => {}
        Decision::Drop(reason) => {
            leg.dropped += 1;
            match reason {
                DropReason::Epd => p.counters.epd += 1,
                DropReason::Ppd => p.counters.ppd += 1,
                DropReason::Full => p.counters.queue_full += 1,
            }
            return;
        }
    }
    let i = pool.alloc(word, payload, li);
    p.counters.queue_depth[c] += 1;
    leg.queued += 1;
    #[cfg(feature = "mutants")]
    let before = if c == UBR { leg.tail } else { p.fifos[c].tail };
    if c == UBR {
        pool.push_ring(&mut leg.tail, i);
        if leg.queued == 1 {
            p.ring.push_back(li);
        }
    } else {
        pool.push(&mut p.fifos[c], i);
    }
    #[cfg(feature = "mutants")]
    planted_reorder(p, pool, before, i, li);
}

/// Planted bug for natm-sim's meta-test (test-only feature `mutants`, see
/// [`crate::mutants`]): once `p` has queued [`REORDER_EVERY`](crate::mutants::REORDER_EVERY)
/// cells, cell `i` of leg `li`, just queued behind `before`, swaps places with it if that
/// is a cell of the same leg. The two are adjacent in their list, so swapping their
/// contents swaps their order.
#[cfg(feature = "mutants")]
fn planted_reorder(p: &mut Port, pool: &mut Pool, before: u32, i: u32, li: u32) {
    if !crate::mutants::reorder() {
        return;
    }
    p.reorder_count = p.reorder_count.saturating_add(1);
    if p.reorder_count < crate::mutants::REORDER_EVERY
        || before == NONE
        || pool.cells[before as usize].leg != li
    {
        return;
    }
    p.reorder_count = 0;
    let (b, c) = (pool.cells[before as usize], pool.cells[i as usize]);
    pool.cells[before as usize].word = c.word;
    pool.cells[before as usize].payload = c.payload;
    pool.cells[i as usize].word = b.word;
    pool.cells[i as usize].payload = b.payload;
}

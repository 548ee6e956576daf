//! The receive path: [`Adapter::handle_cells`] checks headers, takes runs of one VC's
//! cells through the stage into receive buffers, and checks and hands out each frame.

use natm_core::{HeaderFormat, Instant, Vci};
use natm_traffic::policer::Verdict;
use natm_wire::aal5::{TRAILER_LEN, check_length};
use natm_wire::cell::{CELL_LEN, Cell, HEADER_LEN, HecVerdict, PAYLOAD_LEN, Pti};
use natm_wire::crc32::{Crc32, RESIDUE};

use super::{
    Adapter, BufState, Direction, Event, FrameDrop, HecCheck, NIL, OamKind, Rx, STAGE_CELLS, Status,
};
use crate::memory::BufferMemory;

impl Adapter {
    /// Take in one cell (see [`handle_cells`](Self::handle_cells)).
    pub fn handle_cell<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        cell: &[u8; CELL_LEN],
        mem: &mut M,
    ) {
        self.handle_cells(now, core::slice::from_ref(cell), mem);
    }

    /// Take in cells in arrival order; reassembled payloads are written into posted
    /// receive buffers in `mem`. Any bytes are accepted.
    pub fn handle_cells<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        cells: &[[u8; CELL_LEN]],
        mem: &mut M,
    ) {
        let now = self.clamp(now);
        let mut i = 0;
        while let Some(cell) = cells.get(i) {
            let run = self.rx_run(now, &cells[i..], mem);
            if run > 0 {
                i += run;
            } else {
                self.rx_cell(now, cell, mem);
                i += 1;
            }
        }
        self.flush(mem);
    }

    /// [`handle_cells`](Self::handle_cells) without [`rx_run`](Self::rx_run): every cell
    /// through `rx_cell`, the reference the fast path is tested against.
    #[cfg(test)]
    pub(crate) fn handle_cells_one_by_one<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        cells: &[[u8; CELL_LEN]],
        mem: &mut M,
    ) {
        let now = self.clamp(now);
        for cell in cells {
            self.rx_cell(now, cell, mem);
        }
        self.flush(mem);
    }

    /// The middle of a frame in one pass: takes the cells at the front of `cells` whose
    /// header is the last good one (or, with the HEC not checked, the first cell's), when
    /// that header is user data without the end-of-frame mark on an unpoliced VC that is
    /// filling a frame, and stages their payloads as [`rx_cell`](Self::rx_cell) would,
    /// cell by cell; how many (0: none, the first cell must go through `rx_cell`). An
    /// SDU's cells but its first and last have one header, so this takes nearly all of
    /// them, with one compare per cell.
    #[inline]
    fn rx_run<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        cells: &[[u8; CELL_LEN]],
        mem: &mut M,
    ) -> usize {
        // The run's header: with the HEC checked, the last good one (so each cell's HEC
        // is checked by comparing the five bytes); unchecked, the first cell's four.
        let Some(first) = cells.first() else {
            return 0;
        };
        let (word, hec) = match self.config.hec {
            HecCheck::Off => (
                u32::from_be_bytes([first[0], first[1], first[2], first[3]]),
                None,
            ),
            _ => {
                let g = self.hec.last_valid();
                (u32::from_be_bytes([g[0], g[1], g[2], g[3]]), Some(g[4]))
            }
        };
        // Fixed-size compares: a slice compare here is a call to memcmp per cell.
        let same = |c: &[u8; CELL_LEN]| {
            u32::from_be_bytes([c[0], c[1], c[2], c[3]]) == word && hec.is_none_or(|h| c[4] == h)
        };
        if !same(first) {
            return 0;
        }
        let key = match self.config.format {
            HeaderFormat::Uni => (word >> 4) & 0x00FF_FFFF,
            HeaderFormat::Nni => (word >> 4) & 0x0FFF_FFFF,
        };
        // User data (PTI 0xx) without the end-of-frame mark (PTI x0x).
        if key != self.key_cache.0 || (word >> 1) & 0b101 != 0 {
            return 0;
        }
        let slot = self.key_cache.1;
        let Some(vc) = self.vcs[slot as usize].as_mut() else {
            return 0;
        };
        let Rx::Filling {
            cells: so_far,
            deadline,
            ..
        } = &vc.rx
        else {
            return 0;
        };
        if vc.policer.is_some() || deadline.is_some_and(|d| now >= d) {
            return 0;
        }
        // Up to the frame's cell limit: the cell past it goes through `rx_cell`, which
        // drops the frame as oversize.
        let room = vc.rx_limit_cells.saturating_sub(*so_far) as usize;
        let n = cells.iter().take(room).take_while(|c| same(c)).count();
        if n == 0 {
            return 0;
        }
        vc.counters.cells_in += n as u64;
        self.counters.cells_in += n as u64;
        if hec.is_some() {
            self.hec.valid_run(n as u64);
        }
        if self.stage_slot != slot {
            self.flush(mem);
        }
        // Stage by chunks that fill the stage: the frame's cell count must include the
        // staged cells and no more when the stage is flushed (it places them by it).
        let mut rest = &cells[..n];
        while !rest.is_empty() {
            self.stage_slot = slot;
            let m = rest.len().min(STAGE_CELLS - self.stage_cells);
            let (chunk, tail) = rest.split_at(m);
            for c in chunk {
                let at = self.stage_cells * PAYLOAD_LEN;
                self.stage.0[at..at + PAYLOAD_LEN].copy_from_slice(&c[HEADER_LEN..]);
                self.stage_cells += 1;
            }
            if let Some(Rx::Filling { cells, .. }) =
                self.vcs[slot as usize].as_mut().map(|v| &mut v.rx)
            {
                *cells += m as u32;
            }
            if self.stage_cells == STAGE_CELLS {
                self.flush(mem);
            }
            rest = tail;
        }
        n
    }

    #[inline]
    fn rx_cell<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        cell: &[u8; CELL_LEN],
        mem: &mut M,
    ) {
        self.counters.cells_in += 1;
        let mut header: [u8; HEADER_LEN] = cell[..HEADER_LEN].try_into().expect("53 > 5");
        let mut corrected = false;
        if self.config.hec != HecCheck::Off {
            match self.hec.check(&mut header) {
                HecVerdict::Valid => {}
                HecVerdict::Corrected { .. } => corrected = true,
                HecVerdict::Discarded { .. } => return,
            }
        }
        let word = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        let key = match self.config.format {
            HeaderFormat::Uni => (word >> 4) & 0x00FF_FFFF,
            HeaderFormat::Nni => (word >> 4) & 0x0FFF_FFFF,
        };
        let slot = if key == self.key_cache.0 {
            self.key_cache.1
        } else {
            match Vci::from_u16((word >> 4) as u16) {
                Vci::UNASSIGNED => {
                    self.counters.unassigned += 1;
                    return;
                }
                Vci::F4_SEGMENT | Vci::F4_END_TO_END => {
                    let kind = if (word >> 4) as u16 == 3 {
                        OamKind::F4Segment
                    } else {
                        OamKind::F4EndToEnd
                    };
                    self.pass_aside(None, kind, cell, corrected.then_some(header));
                    return;
                }
                _ => {}
            }
            let Some(slot) = self.by_key.get(key) else {
                self.counters.unknown_vc += 1;
                return;
            };
            self.key_cache = (key, slot);
            slot
        };
        let vc = self.vcs[slot as usize]
            .as_mut()
            .expect("the key map points at open slots");
        vc.counters.cells_in += 1;
        if let Some(p) = &mut vc.policer
            && p.police(now, word & 1 != 0) == Verdict::Discard
        {
            vc.counters.policed += 1;
            self.counters.policed += 1;
            return;
        }
        let kind = match Pti::from_bits((word >> 1) as u8 & 7) {
            Pti::UserData { end_of_frame, .. } => {
                let payload: &[u8; PAYLOAD_LEN] =
                    cell[HEADER_LEN..].try_into().expect("53 - 5 = 48");
                self.rx_data(now, slot, payload, end_of_frame, mem);
                return;
            }
            Pti::SegmentF5 => OamKind::F5Segment,
            Pti::EndToEndF5 => OamKind::F5EndToEnd,
            Pti::ResourceMgmt => OamKind::Rm,
            Pti::Reserved => {
                self.counters.reserved_pti += 1;
                return;
            }
        };
        let handle = vc.handle;
        self.pass_aside(Some(handle), kind, cell, corrected.then_some(header));
    }

    fn pass_aside(
        &mut self,
        handle: Option<u32>,
        kind: OamKind,
        cell: &[u8; CELL_LEN],
        corrected: Option<[u8; HEADER_LEN]>,
    ) {
        self.counters.oam += 1;
        if self.events.len() >= self.config.event_queue_max {
            self.counters.events_dropped += 1;
            return;
        }
        let mut cell = *cell;
        if let Some(h) = corrected {
            cell[..HEADER_LEN].copy_from_slice(&h);
        }
        let vc = Cell::new_unchecked(&cell[..]).vc(self.config.format);
        self.events.push_back(Event::Oam {
            vc,
            handle,
            kind,
            cell,
        });
    }

    /// A user-data cell of an open VC.
    #[inline]
    fn rx_data<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        slot: u32,
        payload: &[u8; PAYLOAD_LEN],
        end_of_frame: bool,
        mem: &mut M,
    ) {
        let state = self.vc_mut(slot).rx;
        let cells = match state {
            Rx::Skipping => {
                if end_of_frame {
                    self.vc_mut(slot).rx = Rx::Idle;
                }
                return;
            }
            Rx::Filling {
                deadline: Some(d), ..
            } if now >= d => {
                // handle_timeout came late: the old frame must not absorb this cell.
                self.drop_frame(slot, FrameDrop::Timeout);
                self.start_frame(now, slot, end_of_frame)
            }
            Rx::Filling { cells, .. } => Some(cells),
            Rx::Idle => self.start_frame(now, slot, end_of_frame),
        };
        let Some(cells) = cells else {
            return;
        };
        let vc = self.vc_mut(slot);
        if cells >= vc.rx_limit_cells {
            // More cells than the longest SDU that fits needs: oversize, whatever the
            // trailer will say.
            self.drop_frame(slot, FrameDrop::Oversize);
            if !end_of_frame {
                self.vc_mut(slot).rx = Rx::Skipping;
            }
            return;
        }
        if let Rx::Filling { cells, .. } = &mut vc.rx {
            *cells += 1;
        }
        if self.stage_slot != slot {
            self.flush(mem);
            self.stage_slot = slot;
        }
        let at = self.stage_cells * PAYLOAD_LEN;
        self.stage.0[at..at + PAYLOAD_LEN].copy_from_slice(payload);
        self.stage_cells += 1;
        if end_of_frame {
            self.finish_frame(slot, mem);
        } else if self.stage_cells == STAGE_CELLS {
            self.flush(mem);
        }
    }

    /// A frame's first cell: take a free buffer. `None` (and the frame skipped) if there
    /// is none.
    fn start_frame(&mut self, now: Instant, slot: u32, end_of_frame: bool) -> Option<u32> {
        let deadline = self
            .config
            .reassembly_timeout
            .and_then(|t| now.checked_add(t));
        let Some(buffer) = self.rx_free.pop() else {
            self.counters.no_buffer += 1;
            let vc = self.vc_mut(slot);
            vc.counters.frames_dropped += 1;
            vc.rx = if end_of_frame { Rx::Idle } else { Rx::Skipping };
            return None;
        };
        self.buffers[buffer.0 as usize] = BufState::RxFilling;
        self.vc_mut(slot).rx = Rx::Filling {
            buffer,
            cells: 0,
            crc: Crc32::new(),
            deadline,
        };
        if deadline.is_some() {
            self.timer_push(slot);
        }
        Some(0)
    }

    /// Write the staged cells of a frame in progress and add them to its CRC.
    fn flush<M: BufferMemory + ?Sized>(&mut self, mem: &mut M) {
        let slot = self.stage_slot;
        if slot == NIL {
            return;
        }
        let n = self.stage_cells;
        self.stage_slot = NIL;
        self.stage_cells = 0;
        let size = self.config.rx_buffer_size;
        let stage = &self.stage.0;
        let vc = self.vcs[slot as usize]
            .as_mut()
            .expect("the stage belongs to an open slot");
        let Rx::Filling {
            buffer, cells, crc, ..
        } = &mut vc.rx
        else {
            return;
        };
        let bytes = n * PAYLOAD_LEN;
        crc.update(&stage[..bytes]);
        let offset = (*cells as usize - n) * PAYLOAD_LEN;
        // Cells past the buffer's end can only be pad or an oversize SDU (checked at the
        // last cell): they are CRC'd, not written.
        let fits = bytes.min(size.saturating_sub(offset));
        if fits > 0 && mem.write(*buffer, offset, &stage[..fits]).is_err() {
            self.rx_fault(slot, true);
        }
    }

    /// The staged cells end a frame: check it (I.363.5 §10.4) and complete or drop it.
    fn finish_frame<M: BufferMemory + ?Sized>(&mut self, slot: u32, mem: &mut M) {
        let n = self.stage_cells;
        self.stage_slot = NIL;
        self.stage_cells = 0;
        let size = self.config.rx_buffer_size;
        let stage = &self.stage.0;
        let vc = self.vcs[slot as usize]
            .as_mut()
            .expect("the stage belongs to an open slot");
        let Rx::Filling {
            buffer,
            cells,
            mut crc,
            ..
        } = vc.rx
        else {
            return;
        };
        let bytes = n * PAYLOAD_LEN;
        crc.update(&stage[..bytes]);
        let trailer = &stage[bytes - TRAILER_LEN..bytes];
        let length = u16::from_be_bytes([trailer[2], trailer[3]]);
        let pdu_len = cells as usize * PAYLOAD_LEN;
        let crc_bad = crc.register() != RESIDUE;
        // Planted bug for natm-sim's meta-test (test-only feature): a bad CRC passes.
        #[cfg(feature = "mutants")]
        let crc_bad = crc_bad && !crate::mutants::ignore_crc();
        let verdict = if crc_bad {
            Err(FrameDrop::Crc)
        } else {
            check_length(length, pdu_len, vc.max_sdu.min(size)).map_err(FrameDrop::of)
        };
        let len = match verdict {
            Ok(len) => len,
            Err(why) => return self.drop_frame(slot, why),
        };
        let offset = (cells as usize - n) * PAYLOAD_LEN;
        let sdu_here = len.saturating_sub(offset).min(bytes);
        if sdu_here > 0 && mem.write(buffer, offset, &stage[..sdu_here]).is_err() {
            return self.rx_fault(slot, false);
        }
        vc.rx = Rx::Idle;
        vc.counters.frames_in += 1;
        vc.counters.bytes_in += len as u64;
        let handle = vc.handle;
        self.counters.frames_in += 1;
        self.counters.bytes_in += len as u64;
        self.timer_unlink(slot);
        self.complete(buffer, Direction::Rx, Some(handle), len, Status::Ok);
    }

    /// Drop the frame in progress on `slot`; its buffer goes back to the free pool.
    pub(super) fn drop_frame(&mut self, slot: u32, why: FrameDrop) {
        if self.stage_slot == slot {
            self.stage_slot = NIL;
            self.stage_cells = 0;
        }
        self.timer_unlink(slot);
        let vc = self.vc_mut(slot);
        if let Rx::Filling { buffer, .. } = vc.rx {
            vc.counters.frames_dropped += 1;
            vc.rx = Rx::Idle;
            self.buffers[buffer.0 as usize] = BufState::RxFree;
            self.rx_free.push(buffer);
        }
        let c = &mut self.counters;
        match why {
            FrameDrop::Crc => c.crc += 1,
            FrameDrop::Abort => c.aborted += 1,
            FrameDrop::Length => c.length += 1,
            FrameDrop::Oversize => c.oversize += 1,
            FrameDrop::Timeout => c.timeout += 1,
        }
    }

    /// The memory refused a write into the frame's buffer: hand the buffer back with
    /// [`Status::MemoryFault`] (not reused) and skip the rest of the frame.
    fn rx_fault(&mut self, slot: u32, frame_continues: bool) {
        self.timer_unlink(slot);
        let vc = self.vc_mut(slot);
        let Rx::Filling { buffer, .. } = vc.rx else {
            return;
        };
        vc.counters.frames_dropped += 1;
        vc.rx = if frame_continues {
            Rx::Skipping
        } else {
            Rx::Idle
        };
        let handle = vc.handle;
        self.counters.memory_fault += 1;
        self.complete(buffer, Direction::Rx, Some(handle), 0, Status::MemoryFault);
    }
}

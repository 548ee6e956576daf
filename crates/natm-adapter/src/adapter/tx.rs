//! The transmit path: [`Adapter::poll_transmit`] picks VCs (the scheduler on a rated link;
//! round robin and the shapers on an unlimited one) and segments their SDUs into cells.

use natm_core::Instant;
use natm_wire::aal5::{TRAILER_LEN, cell_count};
use natm_wire::cell::{CELL_LEN, HEADER_LEN, PAYLOAD_LEN};
use natm_wire::crc32::Crc32;

use super::{Adapter, Direction, STAGE_CELLS, Status};
use crate::memory::BufferMemory;

impl Adapter {
    /// Fill `out` with the cells that may be sent at `now`, reading the SDUs from `mem`;
    /// returns how many. On an unlimited link, first the cells of shaped VCs their
    /// contracts let send by `now` (earliest due first; one per VC unless
    /// [`AdapterConfig::shaper_cdv`] lets a late call catch up), then as many cells of the
    /// unshaped VCs as are queued and fit; on a rated link, at most one per link slot
    /// (usually one per call).
    pub fn poll_transmit<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        mem: &M,
        out: &mut [[u8; CELL_LEN]],
    ) -> usize {
        let now = self.clamp(now);
        let mut n = 0;
        if self.sched.is_some() {
            while n < out.len() {
                let Some(t) = self.sched.as_mut().and_then(|s| s.poll_transmit(now)) else {
                    break;
                };
                let slot = self.sched_slots[t.vc.index()];
                n += self.emit(slot, mem, &mut out[n..n + 1]);
            }
        } else {
            if !self.shaped.is_empty() {
                n = self.transmit_shaped(now, mem, out);
            }
            while n < out.len() {
                let Some(slot) = self.ring.pop_front() else {
                    break;
                };
                n += self.emit(slot, mem, &mut out[n..]);
                let vc = self.vc_mut(slot);
                if vc.txq.is_empty() {
                    vc.in_ring = false;
                } else {
                    self.ring.push_back(slot);
                }
            }
        }
        self.counters.cells_out += n as u64;
        n
    }

    /// Unlimited link: the cells of shaped VCs due at or before `now`, earliest due first;
    /// each counts as leaving when it was due, but not before `now − shaper_cdv` (without
    /// a tolerance: at `now`, one cell per VC).
    fn transmit_shaped<M: BufferMemory + ?Sized>(
        &mut self,
        now: Instant,
        mem: &M,
        out: &mut [[u8; CELL_LEN]],
    ) -> usize {
        let floor = Instant::from_nanos(
            now.as_nanos()
                .saturating_sub(self.config.shaper_cdv.as_nanos()),
        );
        let mut n = 0;
        while n < out.len() {
            let Some(&(due, slot)) = self.shaped.first() else {
                break;
            };
            if due > now {
                break;
            }
            self.shaped.pop_first();
            // 0 cells only if the head SDU faulted before its first cell: no cell left, so
            // nothing is recorded and the VC's next SDU may go at once.
            let sent = self.emit(slot, mem, &mut out[n..n + 1]);
            n += sent;
            let vc = self.vc_mut(slot);
            let Some(shaper) = &mut vc.shaper else {
                vc.in_ring = false;
                continue;
            };
            if sent > 0 {
                shaper.record(due.max(floor).max(vc.since));
            }
            if vc.txq.is_empty() {
                vc.in_ring = false;
            } else {
                vc.due = shaper.due();
                let key = (vc.due, slot);
                self.shaped.insert(key);
            }
        }
        n
    }

    /// Cut up to `out.len()` (at most [`STAGE_CELLS`]) cells of the head SDU of `slot`.
    fn emit<M: BufferMemory + ?Sized>(
        &mut self,
        slot: u32,
        mem: &M,
        out: &mut [[u8; CELL_LEN]],
    ) -> usize {
        let stage = &mut self.stage.0;
        let vc = self.vcs[slot as usize]
            .as_mut()
            .expect("the ring and the scheduler name open slots");
        let Some(&desc) = vc.txq.front() else {
            // A scheduler grant for backlog an aborted SDU left behind: an idle slot.
            debug_assert!(vc.sched_excess > 0);
            vc.sched_excess = vc.sched_excess.saturating_sub(1);
            return 0;
        };
        let len = desc.len as usize;
        let total = cell_count(len);
        let first = vc.tx_next as usize;
        let c = out.len().min(STAGE_CELLS).min(total - first);
        let lo = first * PAYLOAD_LEN;
        let bytes = c * PAYLOAD_LEN;
        let data = len.saturating_sub(lo).min(bytes);
        if mem.read(desc.buffer, lo, &mut stage[..data]).is_err() {
            return self.tx_fault(slot, out);
        }
        stage[data..bytes].fill(0);
        let last = first + c == total;
        if last {
            // The trailer ends the last cell: UU 0, CPI 0, Length, then the CRC over all
            // that precedes it.
            let t = total * PAYLOAD_LEN - TRAILER_LEN - lo;
            stage[t..t + 2].fill(0);
            stage[t + 2..t + 4].copy_from_slice(&(len as u16).to_be_bytes());
            vc.tx_crc.update(&stage[..t + 4]);
            stage[t + 4..t + 8].copy_from_slice(&vc.tx_crc.finish().to_be_bytes());
        } else {
            vc.tx_crc.update(&stage[..bytes]);
        }
        for (cell, payload) in out[..c].iter_mut().zip(stage.chunks_exact(PAYLOAD_LEN)) {
            cell[..HEADER_LEN].copy_from_slice(&vc.header);
            cell[HEADER_LEN..].copy_from_slice(payload);
        }
        vc.counters.cells_out += c as u64;
        if !last {
            vc.tx_next += c as u32;
            return c;
        }
        out[c - 1][..HEADER_LEN].copy_from_slice(&vc.last_header);
        vc.txq.pop_front();
        vc.tx_next = 0;
        vc.tx_crc = Crc32::new();
        vc.counters.frames_out += 1;
        vc.counters.bytes_out += len as u64;
        let handle = vc.handle;
        self.tx_queued -= 1;
        self.counters.frames_out += 1;
        self.counters.bytes_out += len as u64;
        self.complete(desc.buffer, Direction::Tx, Some(handle), len, Status::Ok);
        c
    }

    /// The head SDU of `slot` could not be read: end it (an abort cell if some of its
    /// cells are out) and complete it with [`Status::MemoryFault`].
    fn tx_fault(&mut self, slot: u32, out: &mut [[u8; CELL_LEN]]) -> usize {
        let rated = self.sched.is_some();
        let vc = self.vc_mut(slot);
        let desc = vc.txq.pop_front().expect("the caller saw a head SDU");
        let total = cell_count(desc.len as usize) as u64;
        let sent = u64::from(vc.tx_next);
        let mut n = 0;
        if sent > 0 {
            // I.363.5: Length 0 aborts the CPCS-PDU; the CRC is right so the receiver
            // counts an abort, not a CRC error.
            let cell = &mut out[0];
            cell[..HEADER_LEN].copy_from_slice(&vc.last_header);
            cell[HEADER_LEN..].fill(0);
            vc.tx_crc.update(&cell[HEADER_LEN..CELL_LEN - 4]);
            let crc = vc.tx_crc.finish().to_be_bytes();
            cell[CELL_LEN - 4..].copy_from_slice(&crc);
            vc.counters.cells_out += 1;
            n = 1;
        }
        if rated {
            // This grant stood for one of the SDU's cells; the rest of its backlog is idle.
            vc.sched_excess += total - sent - 1;
        }
        vc.tx_next = 0;
        vc.tx_crc = Crc32::new();
        let handle = vc.handle;
        self.tx_queued -= 1;
        self.counters.memory_fault += 1;
        self.complete(
            desc.buffer,
            Direction::Tx,
            Some(handle),
            desc.len as usize,
            Status::MemoryFault,
        );
        n
    }
}

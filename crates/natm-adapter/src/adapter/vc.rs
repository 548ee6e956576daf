//! VCs opened (header templates, scheduler or shaper, receive limits) and closed.

use alloc::boxed::Box;
use alloc::collections::VecDeque;

use natm_core::{Instant, VcId, Vci};
use natm_traffic::policer::ContractError;
use natm_traffic::sched::{SchedError, VcSpec};
use natm_wire::aal5::{MAX_SDU, cell_count};
use natm_wire::cell::CellHeader;
use natm_wire::crc32::Crc32;

use super::{
    Adapter, Direction, NIL, OpenError, Rx, RxVcConfig, Shaper, Status, UnknownHandle, Vc,
    VcCounters,
};

impl Adapter {
    /// Open a VC for both directions: `handle` names it in descriptors and completions.
    pub fn open_vc(
        &mut self,
        handle: u32,
        vc: VcId,
        tx: VcSpec,
        rx: RxVcConfig,
    ) -> Result<(), OpenError> {
        let format = self.config.format;
        if self.by_handle.get(handle).is_some() {
            return Err(OpenError::HandleInUse(handle));
        }
        if !vc.vpi.fits(format) {
            return Err(OpenError::VpiTooLarge {
                vc,
                max: format.max_vpi(),
            });
        }
        if matches!(
            vc.vci,
            Vci::UNASSIGNED | Vci::F4_SEGMENT | Vci::F4_END_TO_END
        ) {
            return Err(OpenError::ReservedVci(vc));
        }
        let key = vc.key();
        if self.by_key.get(key).is_some() {
            return Err(OpenError::VcInUse(vc));
        }
        if rx.max_sdu == 0 || rx.max_sdu > MAX_SDU {
            return Err(OpenError::MaxSdu(rx.max_sdu));
        }
        if self.open >= self.config.max_vcs {
            return Err(OpenError::TooManyVcs {
                max: self.config.max_vcs,
            });
        }
        let header = |end_of_frame| {
            CellHeader::data(vc, end_of_frame)
                .to_bytes(format)
                .map_err(|_| OpenError::VpiTooLarge {
                    vc,
                    max: format.max_vpi(),
                })
        };
        let (header, last_header) = (header(false)?, header(true)?);
        let (sched, shaper) = match &mut self.sched {
            Some(s) => (Some(s.add_vc(tx).map_err(OpenError::Tx)?), None),
            None => {
                // No scheduler to check the contract: the same check, without a link rate.
                tx.check().map_err(OpenError::Tx)?;
                let shaper = Shaper::of(&tx)
                    .map_err(|e| OpenError::Tx(SchedError::Contract(ContractError::Gcra(e))))?;
                (None, shaper)
            }
        };
        let rx_limit = rx.max_sdu.min(self.config.rx_buffer_size);
        let state = Vc {
            handle,
            key,
            header,
            last_header,
            txq: VecDeque::new(),
            tx_next: 0,
            tx_crc: Crc32::new(),
            sched,
            shaper,
            due: Instant::ZERO,
            since: Instant::ZERO,
            sched_excess: 0,
            in_ring: false,
            max_sdu: rx.max_sdu,
            rx_limit_cells: cell_count(rx_limit) as u32,
            policer: rx.policer,
            rx: Rx::Idle,
            t_prev: NIL,
            t_next: NIL,
            timed: false,
            counters: VcCounters::default(),
        };
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.vcs[s as usize] = Some(Box::new(state));
                s
            }
            None => {
                self.vcs.push(Some(Box::new(state)));
                (self.vcs.len() - 1) as u32
            }
        };
        if let Some(h) = sched {
            if self.sched_slots.len() <= h.index() {
                self.sched_slots.resize(h.index() + 1, NIL);
            }
            self.sched_slots[h.index()] = slot;
        }
        self.by_key.insert(key, slot);
        self.by_handle.insert(handle, slot);
        self.open += 1;
        Ok(())
    }

    /// Close a VC. Every buffer it held comes back as a completion with
    /// [`Status::Aborted`]: its queued descriptors, and the receive buffer of a frame in
    /// progress. Returns its counters.
    pub fn close_vc(&mut self, handle: u32) -> Result<VcCounters, UnknownHandle> {
        let slot = self.by_handle.remove(handle).ok_or(UnknownHandle(handle))?;
        self.timer_unlink(slot);
        debug_assert!(self.stage_slot != slot, "nothing is staged between calls");
        let vc = self.vcs[slot as usize]
            .take()
            .expect("the handle map points at open slots");
        self.by_key.remove(vc.key);
        self.key_cache = (NIL, NIL);
        for d in &vc.txq {
            self.complete(
                d.buffer,
                Direction::Tx,
                Some(handle),
                d.len as usize,
                Status::Aborted,
            );
        }
        self.tx_queued -= vc.txq.len();
        if let Rx::Filling { buffer, .. } = vc.rx {
            self.complete(buffer, Direction::Rx, Some(handle), 0, Status::Aborted);
        }
        if let (Some(s), Some(h)) = (&mut self.sched, vc.sched) {
            s.remove_vc(h).expect("the VC's scheduler handle is live");
            self.sched_slots[h.index()] = NIL;
        }
        if vc.in_ring {
            if vc.shaper.is_some() {
                self.shaped.remove(&(vc.due, slot));
            } else {
                self.ring.retain(|&s| s != slot);
            }
        }
        self.free_slots.push(slot);
        self.open -= 1;
        Ok(vc.counters)
    }
}

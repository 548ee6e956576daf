//! Buffers and descriptors: transmit descriptors and free receive buffers posted,
//! buffers given back as completions, refusals of posts that transfer no buffer, and the
//! completion and event queues polled.

use natm_core::Instant;
use natm_wire::aal5::{MAX_SDU, cell_count};

use super::{
    Adapter, BufState, Completion, Direction, Event, Pending, REFUSALS_MAX, Status, TxDesc,
};
use crate::memory::BufferId;

impl Adapter {
    /// Queue a completion; `owned` completions give the buffer back when polled.
    pub(super) fn complete(
        &mut self,
        buffer: BufferId,
        direction: Direction,
        handle: Option<u32>,
        len: usize,
        status: Status,
    ) {
        self.buffers[buffer.0 as usize] = BufState::Returning;
        self.completions.push_back(Pending {
            completion: Completion {
                buffer,
                direction,
                handle,
                len,
                status,
            },
            owned: true,
        });
    }

    /// Refuse a post naming a buffer the adapter may not take (unknown, or held already):
    /// reported, but its ownership does not change.
    fn refuse_foreign(&mut self, buffer: BufferId, direction: Direction, handle: Option<u32>) {
        let status = if buffer.0 >= self.config.buffers {
            Status::UnknownBuffer
        } else {
            Status::NotOwned
        };
        if self.refusals_pending >= REFUSALS_MAX {
            self.counters.refusals_dropped += 1;
            return;
        }
        self.refusals_pending += 1;
        self.completions.push_back(Pending {
            completion: Completion {
                buffer,
                direction,
                handle,
                len: 0,
                status,
            },
            owned: false,
        });
    }

    /// Whether the application holds `buffer` (so the adapter may take it).
    fn app_owns(&self, buffer: BufferId) -> bool {
        self.buffers.get(buffer.0 as usize) == Some(&BufState::App)
    }

    /// Queue `len` bytes of `buffer` as one SDU on the VC `handle`. A descriptor that
    /// cannot be queued comes back as a completion naming the reason.
    pub fn post_tx(&mut self, now: Instant, buffer: BufferId, len: usize, handle: u32) {
        self.clamp(now);
        if !self.app_owns(buffer) {
            self.counters.tx_refused += 1;
            self.refuse_foreign(buffer, Direction::Tx, Some(handle));
            return;
        }
        let refusal = match self.by_handle.get(handle) {
            None => Err(Status::UnknownVc),
            Some(_) if len == 0 || len > MAX_SDU => Err(Status::BadLength),
            Some(_) if self.tx_queued >= self.config.max_tx_queued => Err(Status::QueueFull),
            Some(slot) => Ok(slot),
        };
        let slot = match refusal {
            Ok(slot) => slot,
            Err(status) => {
                self.counters.tx_refused += 1;
                self.complete(buffer, Direction::Tx, Some(handle), len, status);
                return;
            }
        };
        self.buffers[buffer.0 as usize] = BufState::Tx;
        self.tx_queued += 1;
        let desc = TxDesc {
            buffer,
            len: len as u32,
        };
        let vc = self.vcs[slot as usize]
            .as_mut()
            .expect("the handle map points at open slots");
        vc.txq.push_back(desc);
        match (&mut self.sched, vc.sched) {
            (Some(s), Some(h)) => {
                // At most max_tx_queued × 1366 cells: far from the scheduler's u64 limit.
                s.enqueue(h, cell_count(len) as u32)
                    .expect("a live handle and a bounded backlog");
            }
            _ => {
                if !vc.in_ring {
                    vc.in_ring = true;
                    match &vc.shaper {
                        Some(shaper) => {
                            vc.due = shaper.due();
                            vc.since = self.now;
                            self.shaped.insert((vc.due, slot));
                        }
                        None => self.ring.push_back(slot),
                    }
                }
            }
        }
    }

    /// Give the adapter a free receive buffer of `rx_buffer_size` bytes. A buffer it may
    /// not take comes back as a completion naming the reason.
    pub fn post_rx_buffer(&mut self, buffer: BufferId) {
        if !self.app_owns(buffer) {
            self.refuse_foreign(buffer, Direction::Rx, None);
            return;
        }
        self.buffers[buffer.0 as usize] = BufState::RxFree;
        self.rx_free.push(buffer);
    }

    /// Hand every free receive buffer back (completions with [`Status::Aborted`]); frames
    /// in progress keep theirs.
    pub fn reclaim_rx_buffers(&mut self) {
        while let Some(b) = self.rx_free.pop() {
            self.complete(b, Direction::Rx, None, 0, Status::Aborted);
        }
    }

    /// The next completed buffer, oldest first; the buffer is the application's again.
    pub fn poll_completion(&mut self) -> Option<Completion> {
        let p = self.completions.pop_front()?;
        if p.owned {
            self.buffers[p.completion.buffer.0 as usize] = BufState::App;
        } else {
            self.refusals_pending -= 1;
        }
        self.counters.completions += 1;
        Some(p.completion)
    }

    /// The next passed-aside cell.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}

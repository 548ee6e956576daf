//! Timers: the next instant something is due (a cell that may be sent, a reassembly
//! deadline), the reassembly timeouts, and the intrusive FIFO of VCs with a reassembly
//! timer running.

use natm_core::Instant;

use super::{Adapter, FrameDrop, NIL, Rx};

impl Adapter {
    /// The earliest time something is due: a cell may be sent (now, on an unlimited link
    /// with an unshaped backlog; when the first backlogged shaped VC's contract lets it
    /// send), or a reassembly deadline. `None`: nothing until the next input.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let tx = match &self.sched {
            // The scheduler's clock only moves in poll_transmit: never report a time
            // before the latest `now` the adapter has seen.
            Some(s) => s.poll_timeout().map(|t| t.max(self.now)),
            None if !self.ring.is_empty() => Some(self.now),
            None => self.shaped.first().map(|&(due, _)| due.max(self.now)),
        };
        let rx = match self.timer_head {
            NIL => None,
            slot => match self.vcs[slot as usize].as_ref().map(|v| v.rx) {
                Some(Rx::Filling { deadline, .. }) => deadline,
                _ => None,
            },
        };
        match (tx, rx) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Drop every frame whose reassembly deadline is at or before `now` (its buffer goes
    /// back to the free pool; counted as `timeout`).
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.clamp(now);
        while self.timer_head != NIL {
            let slot = self.timer_head;
            let state = self.vc_mut(slot).rx;
            match state {
                Rx::Filling {
                    deadline: Some(d), ..
                } if d <= now => self.drop_frame(slot, FrameDrop::Timeout),
                _ => break,
            }
        }
    }

    /// Append `slot` to the timer FIFO: its deadline is the latest (one timeout for every
    /// VC, and `now` never goes back).
    pub(super) fn timer_push(&mut self, slot: u32) {
        let tail = self.timer_tail;
        let vc = self.vc_mut(slot);
        debug_assert!(!vc.timed);
        vc.timed = true;
        vc.t_prev = tail;
        vc.t_next = NIL;
        if tail == NIL {
            self.timer_head = slot;
        } else {
            self.vc_mut(tail).t_next = slot;
        }
        self.timer_tail = slot;
    }

    pub(super) fn timer_unlink(&mut self, slot: u32) {
        let vc = self.vc_mut(slot);
        if !vc.timed {
            return;
        }
        vc.timed = false;
        let (prev, next) = (vc.t_prev, vc.t_next);
        vc.t_prev = NIL;
        vc.t_next = NIL;
        if prev == NIL {
            self.timer_head = next;
        } else {
            self.vc_mut(prev).t_next = next;
        }
        if next == NIL {
            self.timer_tail = prev;
        } else {
            self.vc_mut(next).t_prev = prev;
        }
    }
}

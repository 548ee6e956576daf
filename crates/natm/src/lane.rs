//! The lane path: the adapter an application runs itself over its own ring pair to the
//! switch ([`LaneEngine`]), and what hostd's answer says about it.

use super::*;

/// What hostd's answer says about a lane-path VC.
pub(crate) struct LaneSetup {
    pub(crate) handle: u32,
    pub(crate) vc: VcId,
    pub(crate) max_sdu: usize,
    pub(crate) shape: proto::LaneShape,
}

/// How long dropping a lane-path VC keeps sending what it had queued.
pub(crate) const LANE_LINGER: Duration = Duration::from_secs(1);

/// How long an adaptive lane-path wait spins before it sleeps.
pub(crate) const LANE_SPIN: Duration = Duration::from_micros(30);

/// The lane path's engine: an adapter for the one VC, driven by the application's own
/// calls, between the VC's buffers (in this process's memory: no channel rings between the
/// application and its own adapter) and the lane.
pub(crate) struct LaneEngine {
    pub(crate) adapter: Adapter,
    pub(crate) side: LinkSide<ShmLink>,
    pub(crate) buffers: VecBuffers,
    pub(crate) epoch: Epoch,
    pub(crate) notify: NotifyMode,
    /// hostd writes it when it changes the channel's state (link down, revoked).
    pub(crate) state_fd: OwnedFd,
    /// The last pump moved nothing: its look at the lane found it empty, which asked the
    /// switch to kick the lane's eventfd (or there was no buffer to receive into).
    pub(crate) idle: bool,
}

pub(crate) fn lane_error(e: io::Error) -> Error {
    protocol(format!("lane: {e}"))
}

impl LaneEngine {
    /// Moves what can move now (`now` just read from the clock); whether any cell did.
    /// A timeout handled is not movement: a shaped VC whose cells wait for room in the
    /// lane is due at every pump, and counting it kept a polling sender from yielding.
    pub(crate) fn pump(&mut self, now: Instant) -> Result<bool, Error> {
        let now = self.epoch.at(now);
        if self.adapter.poll_timeout().is_some_and(|t| t <= now) {
            self.adapter.handle_timeout(now);
        }
        // Only as many SDUs begun as there are free receive buffers: the rest stay in the
        // lane (the switch holds back what feeds a full lane) instead of being dropped here.
        let free = self.adapter.free_rx_buffers();
        let cells_in = self
            .side
            .receive_sdus(&mut self.adapter, now, &mut self.buffers, free)
            .map_err(lane_error)?;
        let cells_out = self
            .side
            .transmit(&mut self.adapter, now, &self.buffers)
            .map_err(lane_error)?;
        let moved = cells_in + cells_out > 0;
        self.idle = !moved;
        Ok(moved)
    }

    /// Queues buffer `b` (`len` bytes) for transmission and moves what can move.
    pub(crate) fn send(&mut self, b: BufferId, len: usize, handle: u32) -> Result<(), Error> {
        let now = Instant::now();
        let at = self.epoch.at(now);
        self.adapter
            .post_tx(at, natm_adapter::BufferId(b.0), len, handle);
        self.pump(now).map(|_| ())
    }

    /// Waits at most `left` from `start` (just read) for anything to move (or the state to
    /// change): pumping between yields (poll), spinning then sleeping (adaptive) or sleeping
    /// at once (eventfd) on the lane's eventfd and the state eventfd. False if nothing came.
    /// The caller has just pumped and found nothing to take; if that pump moved cells, the
    /// lane is looked at again before any sleep.
    pub(crate) fn wait(&mut self, start: Instant, left: Duration) -> Result<bool, Error> {
        if !self.idle && self.pump(start)? {
            return Ok(true);
        }
        // A shaped VC's next departure is known: sleep until it rather than spin. A spinning
        // thread yields, and a yield can hand a busy neighbour on this CPU its whole slice
        // (EEVDF), so the departures came late and a guaranteed channel lost its rate.
        let departure_soon = self
            .adapter
            .poll_timeout()
            .map(|t| self.epoch.to_std(t))
            .is_some_and(|t| t > start && t < start + LANE_SPIN);
        let spin = match self.notify {
            NotifyMode::Poll => left,
            NotifyMode::Adaptive if departure_soon => Duration::ZERO,
            NotifyMode::Adaptive => LANE_SPIN.min(left),
            _ => Duration::ZERO,
        };
        let mut now = start;
        loop {
            let spent = now.saturating_duration_since(start);
            if spent >= left {
                return Ok(false);
            }
            if spent < spin {
                // Another poller (the peer application, the switch) may need this CPU.
                std::thread::yield_now();
                // One clock read per round serves the adapter and the deadline.
                now = Instant::now();
                if self.pump(now)? {
                    return Ok(true);
                }
                continue;
            }
            // The last pump's receive found the lane empty, which asked the switch to kick
            // the lane's eventfd with its next cells (and a full ring, to kick with room).
            let mut until = start + left;
            if let Some(t) = self.adapter.poll_timeout() {
                until = until.min(self.epoch.to_std(t));
            }
            let sleep = until.saturating_duration_since(Instant::now());
            let ts = rustix::event::Timespec::try_from(sleep).ok();
            // An eventfd-mode shm link always has its descriptor.
            let link_fd = self.side.link().poll_fd().unwrap_or(self.state_fd.as_fd());
            let mut fds = [
                rustix::event::PollFd::new(&self.state_fd, rustix::event::PollFlags::IN),
                rustix::event::PollFd::from_borrowed_fd(link_fd, rustix::event::PollFlags::IN),
            ];
            match rustix::event::poll(&mut fds, ts.as_ref()) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(Error::Io(e.into())),
            }
            let mut b = [0u8; 8];
            let _ = rustix::io::read(&self.state_fd, &mut b);
            if let Some(fd) = self.side.link().poll_fd() {
                let _ = rustix::io::read(fd, &mut b);
            }
            return Ok(true);
        }
    }
}

//! A direct-path VC: the application's end of its channel region, and on the lane path the
//! adapter it runs itself.

use super::*;
use natm_link::shm::Side;

/// The application's side of a direct-path channel.
pub(crate) struct Direct {
    pub(crate) app: AppEnd,
    pub(crate) waiter: Waiter,
    pub(crate) buffer_size: usize,
    pub(crate) free_tx: Vec<BufferId>,
    /// Transmit buffers in all: when `free_tx` has them all, nothing is queued.
    pub(crate) tx_total: usize,
    /// Received SDUs not yet taken: buffer and length.
    pub(crate) ready: VecDeque<(BufferId, usize)>,
    /// A transmission failed because the link was down; reported by the next send.
    pub(crate) tx_link_down: bool,
    /// The connection to hostd, watched while waiting: if hostd dies it cannot mark the
    /// channel revoked, but its end of the socket closes.
    pub(crate) daemon: UnixStream,
    /// Lane path: the adapter this process runs.
    pub(crate) lane: Option<Box<LaneEngine>>,
}

impl Direct {
    pub(crate) fn attach(
        daemon: UnixStream,
        fds: Vec<OwnedFd>,
        notify: NotifyMode,
        receiver: Option<signal::Receiver>,
        buffers: u32,
    ) -> Result<Direct, Error> {
        let mut fds = fds.into_iter();
        let (Some(region), Some(wake_me), Some(kick), None) =
            (fds.next(), fds.next(), fds.next(), fds.next())
        else {
            return Err(protocol(
                "hostd's open answer did not carry three descriptors",
            ));
        };
        let mem = MemfdMem::map(region).map_err(|e| protocol(format!("channel region: {e}")))?;
        let ch = Channel::open(Arc::new(mem)).map_err(|e| protocol(format!("channel: {e}")))?;
        let mut app = ch.app().map_err(|e| protocol(format!("channel: {e}")))?;
        app.set_waker(Waiter::eventfd_waker(kick).map_err(|e| protocol(format!("eventfd: {e}")))?);
        let waiter = match (notify, receiver) {
            (NotifyMode::Poll, _) => {
                Waiter::poll_from(wake_me).map_err(|e| protocol(format!("eventfd: {e}")))?
            }
            (NotifyMode::Adaptive, _) => {
                check_eventfd(&wake_me).map_err(|e| protocol(format!("eventfd: {e}")))?;
                Waiter::Adaptive(AdaptivePolicy::default().into(), Arc::new(wake_me))
            }
            (NotifyMode::EventFd, _) => {
                Waiter::eventfd_from(wake_me).map_err(|e| protocol(format!("eventfd: {e}")))?
            }
            (NotifyMode::Signal, Some(r)) => Waiter::Signal(r),
            (NotifyMode::Signal, None) => return Err(protocol("no signal receiver")),
        };
        let geom = ch
            .layout()
            .buffers
            .ok_or_else(|| protocol("channel has no buffers"))?;
        let count = geom.count.min(buffers);
        Direct::assemble(app, waiter, geom.size, count, daemon, None)
    }

    /// The application's side of a channel of `count` buffers of `size` bytes: the first
    /// half posted for receiving, the rest free for sending.
    pub(crate) fn assemble(
        mut app: AppEnd,
        waiter: Waiter,
        size: u32,
        count: u32,
        daemon: UnixStream,
        mut lane: Option<Box<LaneEngine>>,
    ) -> Result<Direct, Error> {
        let rx = count / 2;
        for b in 0..rx {
            match &mut lane {
                Some(l) => l.adapter.post_rx_buffer(natm_adapter::BufferId(b)),
                None => app
                    .post_rx(BufferId(b))
                    .map_err(|e| protocol(format!("posting a receive buffer: {e}")))?,
            }
        }
        Ok(Direct {
            app,
            waiter,
            buffer_size: size as usize,
            free_tx: (rx..count).rev().map(BufferId).collect(),
            tx_total: (count - rx) as usize,
            ready: VecDeque::new(),
            tx_link_down: false,
            daemon,
            lane,
        })
    }

    /// The lane path: the channel's both ends, an adapter for the one VC as hostd
    /// admitted it, and the lane's side A.
    pub(crate) fn attach_lane(
        daemon: UnixStream,
        fds: Vec<OwnedFd>,
        notify: NotifyMode,
        buffers: u32,
        setup: LaneSetup,
    ) -> Result<Direct, Error> {
        let fds: [OwnedFd; proto::LANE_OPEN_FDS] = fds.try_into().map_err(|v: Vec<OwnedFd>| {
            protocol(format!(
                "hostd's lane answer carried {} descriptors, not {}",
                v.len(),
                proto::LANE_OPEN_FDS
            ))
        })?;
        let [region, state_fd, _kick, lane_region, lane_wait, lane_kick] = fds;
        check_eventfd(&state_fd).map_err(|e| protocol(format!("eventfd: {e}")))?;
        let mem = MemfdMem::map(region).map_err(|e| protocol(format!("channel region: {e}")))?;
        let ch = Channel::open(Arc::new(mem)).map_err(|e| protocol(format!("channel: {e}")))?;
        // The channel carries the state word only: the buffers are this process's own.
        let app = ch.app().map_err(|e| protocol(format!("channel: {e}")))?;
        let geom = ch
            .layout()
            .buffers
            .ok_or_else(|| protocol("channel has no buffers"))?;
        let count = geom.count.min(buffers);
        // A spliced lane's cells carry the region's label, its other holder's VC, and this
        // end holds the side hostd says (natm-link's `lane` module).
        let (vc, side) = match setup.shape.splice {
            None => (setup.vc, Side::A),
            Some(s) => (
                VcId::uni(u32::from(s.vpi), u32::from(s.vci)).map_err(|e| {
                    protocol(format!("spliced lane's label {}.{}: {e}", s.vpi, s.vci))
                })?,
                if s.side_b { Side::B } else { Side::A },
            ),
        };
        let wait = match notify {
            NotifyMode::Poll => ShmWait::BusyPoll,
            _ => ShmWait::EventFd,
        };
        let link = ShmLink::open_side(
            ShmHandover {
                region: lane_region,
                wait: lane_wait,
                kick: lane_kick,
            },
            side,
            wait,
        )
        .map_err(|e| protocol(format!("lane: {e}")))?;
        let engine = LaneEngine::new(
            LaneVc {
                handle: setup.handle,
                vc,
                shape: setup.shape,
                max_sdu: setup.max_sdu,
            },
            count,
            geom.size as usize,
            link,
            notify,
            state_fd,
        )?;
        // The lane's waits are the engine's: the channel's waiter is never used.
        Direct::assemble(
            app,
            Waiter::BusyPoll,
            geom.size,
            count,
            daemon,
            Some(Box::new(engine)),
        )
    }

    /// Copies `sdu` into transmit buffer `b`.
    pub(crate) fn write_buffer(&mut self, b: BufferId, sdu: &[u8]) -> Result<(), Error> {
        match &mut self.lane {
            Some(l) => l
                .buffers
                .buffer_mut(natm_adapter::BufferId(b.0))
                .and_then(|buf| buf.get_mut(..sdu.len()))
                .map(|buf| buf.copy_from_slice(sdu))
                .ok_or_else(|| protocol(format!("transmit buffer {} is too small", b.0))),
            None => self
                .app
                .write_buffer(b, sdu)
                .map_err(|e| protocol(format!("transmit buffer: {e}"))),
        }
    }

    /// The first `len` bytes of buffer `b` (empty if out of bounds).
    pub(crate) fn buffer(&self, b: BufferId, len: usize) -> &[u8] {
        match &self.lane {
            Some(l) => l
                .buffers
                .buffer(natm_adapter::BufferId(b.0))
                .and_then(|buf| buf.get(..len)),
            None => self.app.buffer(b, len).ok(),
        }
        .unwrap_or(&[])
    }

    /// The first `len` bytes of buffer `b`, writable (empty if out of bounds).
    pub(crate) fn buffer_mut(&mut self, b: BufferId, len: usize) -> &mut [u8] {
        match &mut self.lane {
            Some(l) => l
                .buffers
                .buffer_mut(natm_adapter::BufferId(b.0))
                .and_then(|buf| buf.get_mut(..len)),
            None => self.app.buffer_mut(b, len).ok(),
        }
        .unwrap_or(&mut [])
    }

    /// Sends buffer `b`'s first `len` bytes on VC `handle`; `now`, a clock reading of the
    /// caller's pass, serves a lane's pump (else it reads the clock).
    pub(crate) fn post_tx(
        &mut self,
        b: BufferId,
        len: usize,
        handle: u32,
        now: Option<Instant>,
    ) -> Result<(), Error> {
        match &mut self.lane {
            Some(l) => l.send(b, len, handle, now.unwrap_or_else(Instant::now)),
            None => self
                .app
                .post_tx(b, len as u32, handle, 0)
                .map_err(|e| protocol(format!("transmit ring: {e}"))),
        }
    }

    /// Hands receive buffer `b` back for reception.
    pub(crate) fn post_rx(&mut self, b: BufferId) {
        match &mut self.lane {
            Some(l) => l.adapter.post_rx_buffer(natm_adapter::BufferId(b.0)),
            None => {
                let _ = self.app.post_rx(b);
            }
        }
    }

    /// Whether hostd's end of the socket is closed (hostd exited or was killed).
    pub(crate) fn daemon_gone(&self) -> bool {
        use rustix::event::{PollFd, PollFlags};
        let mut pfd = [PollFd::new(&self.daemon, PollFlags::RDHUP)];
        match rustix::event::poll(&mut pfd, Some(&rustix::event::Timespec::default())) {
            Ok(n) if n > 0 => pfd[0]
                .revents()
                .intersects(PollFlags::HUP | PollFlags::RDHUP | PollFlags::ERR),
            _ => false,
        }
    }

    pub(crate) fn state(&self) -> Result<(), Error> {
        match self.app.state() {
            ChannelState::Live => Ok(()),
            ChannelState::LinkDown => Err(Error::LinkDown),
            _ => Err(Error::Revoked),
        }
    }

    /// Takes every completion (on a lane, after moving what can move).
    pub(crate) fn drain(&mut self) -> Result<(), Error> {
        self.drain_at(None)
    }

    /// [`Direct::drain`]; `now`, a clock reading of the caller's pass, serves the lane's
    /// pump (else it reads the clock).
    pub(crate) fn drain_at(&mut self, now: Option<Instant>) -> Result<(), Error> {
        if let Some(l) = &mut self.lane {
            l.pump(now.unwrap_or_else(Instant::now))?;
        }
        self.collect()
    }

    /// Takes the completions there are, moving nothing.
    pub(crate) fn collect(&mut self) -> Result<(), Error> {
        if let Some(l) = &mut self.lane {
            while let Some(c) = l.adapter.poll_completion() {
                let b = BufferId(c.buffer.0);
                match c.direction {
                    natm_adapter::Direction::Rx if c.status == natm_adapter::Status::Ok => {
                        self.ready.push_back((b, c.len))
                    }
                    // A frame that never came (aborted, too long): the buffer goes back.
                    natm_adapter::Direction::Rx => l.adapter.post_rx_buffer(c.buffer),
                    natm_adapter::Direction::Tx => self.free_tx.push(b),
                }
            }
            return Ok(());
        }
        loop {
            match self.app.poll_completion() {
                Ok(Some(c)) if c.rx => {
                    if c.status == 0 {
                        self.ready.push_back((c.buffer, c.len as usize));
                    } else {
                        // A frame that never came (aborted): the buffer goes back.
                        let _ = self.app.post_rx(c.buffer);
                    }
                }
                Ok(Some(c)) => {
                    if c.status == proto::STATUS_LINK_DOWN {
                        self.tx_link_down = true;
                    }
                    self.free_tx.push(c.buffer);
                }
                Ok(None) => return Ok(()),
                Err(PollError::Refused(_)) => {}
                Err(PollError::Fault(f)) => return Err(protocol(format!("completion ring: {f}"))),
            }
        }
    }

    /// Waits for a completion or a state change until `deadline`; false if it passed.
    pub(crate) fn wait(&mut self, deadline: Option<Instant>) -> Result<bool, Error> {
        self.wait_from(Instant::now(), deadline)
    }

    /// [`Direct::wait`] from `now`, a clock reading just taken.
    pub(crate) fn wait_from(
        &mut self,
        now: Instant,
        deadline: Option<Instant>,
    ) -> Result<bool, Error> {
        let left = match deadline {
            Some(d) => {
                let left = d.saturating_duration_since(now);
                if left.is_zero() {
                    return Ok(false);
                }
                left
            }
            None => DAEMON_CHECK,
        };
        // In slices: between them, a hostd that died without revoking is noticed.
        let out = match &mut self.lane {
            Some(l) => {
                if l.wait(now, left.min(DAEMON_CHECK))? {
                    WaitOutcome::Ready
                } else {
                    WaitOutcome::TimedOut
                }
            }
            None => self.waiter.wait(&mut self.app, left.min(DAEMON_CHECK))?,
        };
        if out == WaitOutcome::TimedOut && self.daemon_gone() {
            return Err(Error::Revoked);
        }
        Ok(true)
    }

    pub(crate) fn free_tx(&mut self, deadline: Option<Instant>) -> Result<BufferId, Error> {
        loop {
            match self.try_free_tx(None) {
                Err(Error::WouldBlock) => {}
                got => return got,
            }
            if !self.wait(deadline)? {
                return Err(if deadline.is_some_and(|d| d <= Instant::now()) {
                    Error::WouldBlock
                } else {
                    Error::Timeout
                });
            }
        }
    }

    /// A free transmit buffer now, or [`Error::WouldBlock`]; `now` (a clock reading of
    /// the caller's pass, else one is read) serves a lane's pump if completions have to be
    /// collected.
    pub(crate) fn try_free_tx(&mut self, now: Option<Instant>) -> Result<BufferId, Error> {
        // A lane's completions are collected when none is free: a drain there costs a pump
        // (a clock read and a look at the lane), and the send that follows pumps anyway.
        if self.lane.is_none() || self.free_tx.is_empty() {
            self.drain_at(now)?;
        }
        self.state()?;
        if std::mem::take(&mut self.tx_link_down) {
            return Err(Error::LinkDown);
        }
        self.free_tx.pop().ok_or(Error::WouldBlock)
    }

    /// Waits until every transmit buffer is back: every SDU sent has left the adapter.
    pub(crate) fn flush(&mut self, deadline: Instant) -> Result<(), Error> {
        loop {
            self.drain()?;
            self.state()?;
            let backlog = self.lane.as_ref().map_or(0, |l| l.side.backlog());
            if self.free_tx.len() >= self.tx_total && backlog == 0 {
                return Ok(());
            }
            if !self.wait(Some(deadline))? {
                return Err(Error::Timeout);
            }
        }
    }

    /// A received SDU now, if there is one: with `pump`, after moving what can move at
    /// `now` (a clock reading of the caller's pass, else one is read), else from what was
    /// collected. One taken already: no pump.
    pub(crate) fn try_next_rx(
        &mut self,
        now: Option<Instant>,
        pump: bool,
    ) -> Result<Option<(BufferId, usize)>, Error> {
        if let Some(&r) = self.ready.front() {
            return Ok(Some(r));
        }
        if pump {
            self.drain_at(now)?;
        } else {
            self.collect()?;
        }
        if let Some(&r) = self.ready.front() {
            return Ok(Some(r));
        }
        self.state()?;
        Ok(None)
    }

    /// Waits at most `timeout` (`None`: for ever) for a received SDU; its buffer and
    /// length. `zero_wait`: a call that does not wait, [`Error::WouldBlock`] at once when
    /// nothing is there.
    pub(crate) fn next_rx(
        &mut self,
        timeout: Option<Duration>,
        zero_wait: bool,
    ) -> Result<(BufferId, usize), Error> {
        // The clock is read only if the call has to wait.
        let mut deadline = None;
        loop {
            match self.try_next_rx(None, true)? {
                Some(got) => return Ok(got),
                // Nothing there, and the call does not wait: no clock read, no wait.
                None if zero_wait => return Err(Error::WouldBlock),
                None => {}
            }
            let deadline = *deadline.get_or_insert_with(|| timeout.map(|t| Instant::now() + t));
            if !self.wait(deadline)? {
                return Err(Error::Timeout);
            }
        }
    }
}

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

/// How many times a spinning lane-path wait looks at the lane's ring index (a pause
/// between looks) after each yield before it pumps again. A yield costs about half a
/// microsecond on the VMs natm is measured on, and a cell that landed just after one was
/// found only after the next: the unlimited-rate round trip came in steps of a yield,
/// raw AAL5 at 0.95 or 1.45 µs, a transport channel at 1.24, 1.75 or 2.3 µs, the median
/// jumping between them with tens of nanoseconds of work. Eight looks (~0.2 µs here) put
/// most round trips in the first step (in the VM's slow mode the steps come back) and
/// keep the yield, so a neighbour that needs the CPU still gets it at once.
const LOOKS_AFTER_YIELD: u32 = 8;

/// Looks at the lane's ring index between clock reads while a wait spins for input its
/// caller expects ([`LaneEngine::expect`]).
const LOOKS_PER_READ: u32 = 16;

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
    /// The last pump moved nothing.
    pub(crate) idle: bool,
    /// The last pump took cells in: what they completed waits to be collected, and a
    /// look right after it would most likely find nothing more.
    pub(crate) took_in: bool,
    /// The clock reading, taken inside the last [`LaneEngine::wait`], of the look that
    /// ended it by moving cells: the caller's next pass may take it as its own instead of
    /// reading the clock.
    pub(crate) fresh: Option<Instant>,
    /// Input the caller expects by then (a transport's reply or ack, from its round
    /// trip): the next [`LaneEngine::wait`] looks for it without yielding until then.
    pub(crate) expect: Option<Instant>,
}

/// The one VC a lane engine's adapter carries.
pub(crate) struct LaneVc {
    pub(crate) handle: u32,
    /// The VC its cells carry: hostd's, or a spliced lane's label.
    pub(crate) vc: VcId,
    /// Its contract (the splice, if any, is already in `vc`).
    pub(crate) shape: proto::LaneShape,
    pub(crate) max_sdu: usize,
}

impl LaneVc {
    /// `vc` as UBR, not spliced.
    #[cfg(any(test, feature = "_internal_test_exports"))]
    pub(crate) fn ubr(handle: u32, vc: VcId, max_sdu: usize) -> LaneVc {
        let shape = proto::LaneShape {
            category: proto::LaneCategory::Ubr,
            pcr: 0,
            scr: 0,
            mbs: 0,
            splice: None,
        };
        LaneVc {
            handle,
            vc,
            shape,
            max_sdu,
        }
    }
}

pub(crate) fn lane_error(e: io::Error) -> Error {
    protocol(format!("lane: {e}"))
}

impl LaneEngine {
    /// An engine for `vc` over `count` buffers of `size` bytes and the lane `link`.
    pub(crate) fn new(
        vc: LaneVc,
        count: u32,
        size: usize,
        mut link: ShmLink,
        notify: NotifyMode,
        state_fd: OwnedFd,
    ) -> Result<LaneEngine, Error> {
        let mut config = AdapterConfig::new(count, size);
        config.link = natm_core::LineRate::Unlimited;
        // The switch writes every header it sends: its HEC is checked there, not here.
        config.hec = HecCheck::Off;
        config.max_vcs = 1;
        config.max_tx_queued = count as usize;
        config.event_queue_max = 64;
        let mut adapter =
            Adapter::new(config).map_err(|e| protocol(format!("lane adapter: {e}")))?;
        adapter
            .open_vc(
                vc.handle,
                vc.vc,
                vc.shape.spec(),
                RxVcConfig::aal5(vc.max_sdu),
            )
            .map_err(|e| protocol(format!("lane adapter: {e}")))?;
        // The application's CPU does the adapter's work and the switch has its own: large
        // batches skip the wait for the slot lines the switch read last (README, Benchmarks).
        link.set_streaming_writes(true);
        // The lane announces a sleep only in the pump just before one ([`LaneEngine::wait`]).
        link.set_spinning(true);
        Ok(LaneEngine {
            adapter,
            side: LinkSide::new(link),
            buffers: VecBuffers::new(count, size),
            epoch: Epoch::now(),
            notify,
            state_fd,
            idle: false,
            took_in: false,
            fresh: None,
            expect: None,
        })
    }

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
        self.took_in = cells_in > 0;
        self.idle = !moved;
        Ok(moved)
    }

    /// Queues buffer `b` (`len` bytes) for transmission and moves what can move (`now`
    /// just read from the clock).
    pub(crate) fn send(
        &mut self,
        b: BufferId,
        len: usize,
        handle: u32,
        now: Instant,
    ) -> Result<(), Error> {
        let at = self.epoch.at(now);
        self.adapter
            .post_tx(at, natm_adapter::BufferId(b.0), len, handle);
        self.pump(now).map(|_| ())
    }

    /// A pump whose empty looks announce a sleep (the lane is otherwise left spinning:
    /// [`ShmLink::set_spinning`]); the caller sleeps next unless it moved cells.
    fn arm_and_pump(&mut self, now: Instant) -> Result<bool, Error> {
        self.side.link_mut().set_spinning(false);
        let moved = self.pump(now);
        if !matches!(moved, Ok(false)) {
            self.side.link_mut().set_spinning(true);
        }
        moved
    }

    /// Looks at the lane's ring until `until`, pumping when cells land; the clock reading
    /// of the pump that moved them, if one did.
    fn spin_until(&mut self, until: Instant) -> Result<Option<Instant>, Error> {
        loop {
            let mut ready = false;
            for _ in 0..LOOKS_PER_READ {
                ready = self.side.link_mut().rx_ready();
                if ready {
                    break;
                }
                std::hint::spin_loop();
            }
            let now = Instant::now();
            if ready && self.pump(now)? {
                return Ok(Some(now));
            }
            if now >= until {
                return Ok(None);
            }
        }
    }

    /// Waits at most `left` from `start` (just read) for anything to move (or the state to
    /// change): pumping between yields (poll), spinning then sleeping (adaptive) or sleeping
    /// at once (eventfd) on the lane's eventfd and the state eventfd. False if nothing came.
    /// The caller has just pumped and found nothing to take; if that pump moved cells, the
    /// lane is looked at again before any sleep. Adaptive, with [`LaneEngine::expect`] set,
    /// it first looks for the expected input without yielding until then.
    pub(crate) fn wait(&mut self, start: Instant, left: Duration) -> Result<bool, Error> {
        // (`start` is the caller's reading: lending it back would keep a caller whose
        // every look moves cells at one time for ever, its deadline and timers never due.)
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
        let expect = self.expect.take();
        let spin_for = expect.filter(|_| self.notify == NotifyMode::Adaptive && !departure_soon);
        if let Some(until) = spin_for {
            // Input due within a round trip: looked for without yielding, so that it is
            // taken as it lands rather than after the yield it landed in (not with a
            // shaped cell due meanwhile: the spin pumps only for input).
            if let Some(now) = self.spin_until(until.min(start + left))? {
                self.fresh = Some(now);
                return Ok(true);
            }
        }
        let mut now = start;
        loop {
            let spent = now.saturating_duration_since(start);
            if spent >= left {
                return Ok(false);
            }
            if spent < spin {
                // Another poller (the peer application, the switch) may need this CPU.
                std::thread::yield_now();
                for _ in 0..LOOKS_AFTER_YIELD {
                    if self.side.link_mut().rx_ready() {
                        break;
                    }
                    std::hint::spin_loop();
                }
                // One clock read per round serves the adapter and the deadline.
                now = Instant::now();
                if self.pump(now)? {
                    self.fresh = Some(now);
                    return Ok(true);
                }
                continue;
            }
            // One more pump, announcing: its receive on an empty lane asks the peer to kick
            // the lane's eventfd with its next cells (and a full ring, to kick with room).
            // Every other pump announces nothing, so a busy peer publishes and pops
            // without a system call (announcing at each empty look cost the peer one
            // `write` per ack and this side one `read`: ~600,000 each a second at 64 KiB).
            let now = Instant::now();
            if self.arm_and_pump(now)? {
                self.fresh = Some(now);
                return Ok(true);
            }
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
            let polled = rustix::event::poll(&mut fds, ts.as_ref());
            self.side.link_mut().set_spinning(true);
            match polled {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine on side A of a fresh lane of 64 cells, and side B as its peer.
    fn engine_and_peer() -> (LaneEngine, ShmLink) {
        let (a, b) = ShmLink::pair_with(64, ShmWait::EventFd).unwrap();
        let state = rustix::event::eventfd(
            0,
            rustix::event::EventfdFlags::NONBLOCK | rustix::event::EventfdFlags::CLOEXEC,
        )
        .unwrap();
        let vc = LaneVc::ubr(1, VcId::uni(0, 100).unwrap(), 2048);
        let mut e = LaneEngine::new(vc, 8, 2048, a, NotifyMode::EventFd, state).unwrap();
        for b in 0..4 {
            e.adapter.post_rx_buffer(natm_adapter::BufferId(b));
        }
        (e, b)
    }

    /// A one-cell AAL5 frame on 0.100 (its CRC is wrong: the engine drops it, having
    /// moved it).
    const CELL: [u8; 53] = {
        let mut c = [0u8; 53];
        c[2] = 0x06;
        c[3] = 0x42;
        c
    };

    /// Waits on the engine while `peer_then` runs on another thread 50 ms later; the wait
    /// must end long before its 10 s.
    fn wait_while(
        e: &mut LaneEngine,
        peer: ShmLink,
        peer_then: impl FnOnce(&mut ShmLink) + Send + 'static,
    ) -> ShmLink {
        let t = std::thread::spawn(move || {
            let mut peer = peer;
            std::thread::sleep(Duration::from_millis(50));
            peer_then(&mut peer);
            peer
        });
        let start = Instant::now();
        assert!(e.wait(start, Duration::from_secs(10)).unwrap());
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the wait was not woken"
        );
        t.join().unwrap()
    }

    /// While the application keeps calling, its empty looks at the lane announce nothing:
    /// the peer publishes without a system call. Only the look before a sleep announces,
    /// and the peer's next cell wakes the sleeper.
    #[test]
    fn a_busy_lane_costs_its_peer_no_kicks_and_a_sleeping_one_is_woken_by_the_next_cell() {
        let (mut e, mut peer) = engine_and_peer();
        for _ in 0..100 {
            assert!(!e.pump(Instant::now()).unwrap(), "nothing there yet");
            assert_eq!(peer.send_cells(&[CELL]).unwrap(), 1);
            assert!(e.pump(Instant::now()).unwrap(), "the cell is taken");
        }
        assert_eq!(peer.shm_counters().kicks, 0);
        let peer = wait_while(&mut e, peer, |p| {
            assert_eq!(p.send_cells(&[CELL]).unwrap(), 1);
        });
        assert_eq!(peer.shm_counters().kicks, 1, "one kick, for the sleeper");
        assert!(e.pump(Instant::now()).unwrap());
    }

    /// A wait lends its caller only a reading it took itself: the caller's own, lent
    /// back, would keep a caller whose every look moves cells at one time (its deadline
    /// and timers never due).
    #[test]
    fn a_wait_lends_only_a_reading_it_took() {
        let (mut e, mut peer) = engine_and_peer();
        assert_eq!(peer.send_cells(&[CELL]).unwrap(), 1);
        assert!(e.pump(Instant::now()).unwrap());
        // Not idle: the wait's first look moves the next cell, at the caller's reading.
        assert_eq!(peer.send_cells(&[CELL]).unwrap(), 1);
        let start = Instant::now();
        assert!(e.wait(start, Duration::from_secs(1)).unwrap());
        assert_eq!(e.fresh, None, "the caller's own reading came back");
    }

    /// The same for room: a sender held by a full lane is kicked only once it sleeps.
    #[test]
    fn a_full_lane_costs_its_peer_no_kicks_until_the_sender_sleeps() {
        let (mut e, mut peer) = engine_and_peer();
        // Two SDUs of 42 cells into a ring of 64.
        for b in 4..6 {
            e.send(BufferId(b), 2000, 1, Instant::now()).unwrap();
        }
        let mut cells = [[0u8; 53]; 64];
        for _ in 0..10 {
            e.pump(Instant::now()).unwrap();
        }
        assert_eq!(peer.recv_cells(&mut cells[..8]).unwrap(), 8);
        assert!(e.pump(Instant::now()).unwrap(), "8 more cells go");
        assert_eq!(peer.shm_counters().kicks, 0);
        let mut peer = wait_while(&mut e, peer, |p| {
            let mut cells = [[0u8; 53]; 8];
            assert_eq!(p.recv_cells(&mut cells).unwrap(), 8);
        });
        assert_eq!(peer.shm_counters().kicks, 1, "one kick, for room");
        let mut got = 16;
        loop {
            e.pump(Instant::now()).unwrap();
            match peer.recv_cells(&mut cells).unwrap() {
                0 => break,
                n => got += n,
            }
        }
        assert_eq!(got, 84, "every cell of both SDUs");
    }
}

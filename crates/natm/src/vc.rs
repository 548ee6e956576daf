//! An open VC and the zero-copy buffers it lends.

use super::*;

/// An open VC, a PVC ([`Host::open`]) or a switched VC ([`Host::call`],
/// [`Listener::accept`]). Dropping it closes it: a PVC's drop returns once hostd closed it
/// (the PVC is free for another application then); a switched VC's hands hostd the release
/// and returns at once, as a socket's `close(2)` does (hostd sends the VC's queued cells,
/// then clears the call, normal clearing).
pub struct Vc {
    pub(crate) conn: Arc<Mutex<Conn>>,
    pub(crate) handle: u32,
    pub(crate) cookie: String,
    pub(crate) max_sdu: usize,
    pub(crate) direct: Option<Direct>,
    /// A switched VC's call ([`Host::call`], [`Listener::accept`]).
    pub(crate) call: Option<CallInfo>,
    /// The QoS it was opened with (a call's as this end sees it).
    pub(crate) qos: Qos,
    /// Daemon path: SDUs written to hostd ([`Vc::flush`] waits until its adapter sent
    /// them).
    pub(crate) daemon_sent: u64,
}

/// How long a switched VC found revoked waits for hostd's notice of why (the release's
/// cause), which may come just behind the channel's state.
pub(crate) const RELEASE_NOTICE: Duration = Duration::from_millis(100);

impl Vc {
    /// hostd's handle for the VC.
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// The cookie that closes it ([`Host::close_cookie`]).
    pub fn cookie(&self) -> &str {
        &self.cookie
    }

    /// The largest SDU it carries.
    pub fn max_sdu(&self) -> usize {
        self.max_sdu
    }

    /// The QoS the VC was opened with: a PVC's as [`VcOptions::qos`] asked (UBR if none;
    /// hostd admitted it as asked), a switched VC's as this end sees the call's (`tx` is
    /// this end's sending direction).
    pub fn qos(&self) -> &Qos {
        &self.qos
    }

    /// A switched VC's call: the VC the network gave, this end's and the far end's
    /// addresses, the QoS as this end sees it, the set-up time. `None` for a PVC.
    pub fn call(&self) -> Option<&CallInfo> {
        self.call.as_ref()
    }

    /// A switched VC's release, with its cause, if hostd's notice of it has been read
    /// (by any call into this crate on the VC's connection); it reads nothing itself.
    pub fn released(&self) -> Option<CauseInfo> {
        lock(&self.conn).released.get(&self.handle).cloned()
    }

    /// On a switched VC, [`Error::Revoked`] is the call's release when hostd said so:
    /// [`Error::Released`] with the cause.
    pub(crate) fn explain(&self, e: Error) -> Error {
        if !matches!(e, Error::Revoked) || self.call.is_none() {
            return e;
        }
        match lock(&self.conn).release_cause(self.handle, RELEASE_NOTICE) {
            Some(cause) => Error::Released(cause),
            None => e,
        }
    }

    pub(crate) fn check_len(&self, len: usize) -> Result<(), Error> {
        if len == 0 {
            return Err(Error::Refused {
                kind: ErrorKind::BadRequest,
                message: "an AAL5 SDU has at least 1 byte".into(),
            });
        }
        if len > self.max_sdu {
            return Err(Error::TooLong {
                len,
                max: self.max_sdu,
            });
        }
        Ok(())
    }

    pub(crate) fn send_deadline(
        &mut self,
        sdu: &[u8],
        deadline: Option<Instant>,
    ) -> Result<(), Error> {
        self.send_inner(sdu, deadline).map_err(|e| self.explain(e))
    }

    fn send_inner(&mut self, sdu: &[u8], deadline: Option<Instant>) -> Result<(), Error> {
        self.check_len(sdu.len())?;
        let handle = self.handle;
        match &mut self.direct {
            Some(d) => {
                let b = d.free_tx(deadline)?;
                d.write_buffer(b, sdu)?;
                d.post_tx(b, sdu.len(), handle, None)
            }
            None => {
                let mut c = lock(&self.conn);
                c.catch_up()?;
                if c.revoked.contains(&handle) {
                    return Err(Error::Revoked);
                }
                if c.link_down {
                    return Err(Error::LinkDown);
                }
                if deadline.is_some() {
                    let mut pfd = [rustix::event::PollFd::new(
                        &c.stream,
                        rustix::event::PollFlags::OUT,
                    )];
                    if rustix::event::poll(&mut pfd, Some(&rustix::event::Timespec::default()))
                        .unwrap_or(0)
                        == 0
                    {
                        return Err(Error::WouldBlock);
                    }
                }
                c.write(&proto::data_frame(handle, sdu))?;
                drop(c);
                self.daemon_sent += 1;
                Ok(())
            }
        }
    }

    /// Sends one SDU, waiting for a free transmit buffer. Returning `Ok` means the SDU is
    /// queued for the link (there is no delivery confirmation in ATM).
    ///
    /// [`Error::LinkDown`]: the link is down, nothing was sent; an SDU queued just before
    /// the link failed is lost and reported by the next call. [`Error::Revoked`]: the VC
    /// was closed or hostd stopped. [`Error::Released`]: a switched VC's call was released
    /// by the far end or the network (the cause says why); every later call says so too.
    /// [`Error::TooLong`]: above [`Vc::max_sdu`].
    pub fn send(&mut self, sdu: &[u8]) -> Result<(), Error> {
        self.send_deadline(sdu, None)
    }

    /// Sends one SDU if a transmit buffer is free now; [`Error::WouldBlock`] if not.
    pub fn try_send(&mut self, sdu: &[u8]) -> Result<(), Error> {
        self.send_deadline(sdu, Some(Instant::now()))
    }

    pub(crate) fn recv_within(
        &mut self,
        buf: &mut [u8],
        timeout: Option<Duration>,
        zero_wait: bool,
    ) -> Result<usize, Error> {
        self.recv_inner(buf, timeout, zero_wait)
            .map_err(|e| self.explain(e))
    }

    fn recv_inner(
        &mut self,
        buf: &mut [u8],
        timeout: Option<Duration>,
        zero_wait: bool,
    ) -> Result<usize, Error> {
        let handle = self.handle;
        match &mut self.direct {
            Some(d) => {
                let (b, len) = d.next_rx(timeout, zero_wait)?;
                if len > buf.len() {
                    return Err(Error::TooLong {
                        len,
                        max: buf.len(),
                    });
                }
                let sdu = d.buffer(b, len);
                if sdu.len() != len {
                    return Err(protocol(format!("receive buffer {} is out of bounds", b.0)));
                }
                buf[..len].copy_from_slice(sdu);
                d.ready.pop_front();
                d.post_rx(b);
                Ok(len)
            }
            None => {
                let deadline = timeout.map(|t| Instant::now() + t);
                loop {
                    // Locked per slice, so other VCs of the host are not held up by a wait.
                    let mut c = lock(&self.conn);
                    if let Some(q) = c.data.get_mut(&handle)
                        && let Some(front) = q.sdus.front()
                    {
                        if front.len() > buf.len() {
                            return Err(Error::TooLong {
                                len: front.len(),
                                max: buf.len(),
                            });
                        }
                        let sdu = q.pop().unwrap_or_default();
                        buf[..sdu.len()].copy_from_slice(&sdu);
                        return Ok(sdu.len());
                    }
                    if let Some(r) = c.next_answer()? {
                        return Err(protocol(format!("unexpected message from hostd: {r:?}")));
                    }
                    if c.data.get(&handle).is_some_and(|q| !q.sdus.is_empty()) {
                        continue;
                    }
                    if c.revoked.contains(&handle) {
                        return Err(Error::Revoked);
                    }
                    if c.link_down {
                        return Err(Error::LinkDown);
                    }
                    let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                    let slice = left.map_or(RECV_SLICE, |l| l.min(RECV_SLICE));
                    if !c.fill(Some(slice))? && deadline.is_some_and(|d| d <= Instant::now()) {
                        return Err(if zero_wait {
                            Error::WouldBlock
                        } else {
                            Error::Timeout
                        });
                    }
                }
            }
        }
    }

    /// Waits at most `timeout` until every SDU sent so far has been handed to the link
    /// ([`Error::Timeout`] if not), so that an application may exit without losing its
    /// tail. On the lane path the application itself moves its cells, in its calls into
    /// this crate: an application that sends and then stops calling (or exits) should
    /// flush first; dropping a lane-path [`Vc`] flushes for up to a second. On the daemon
    /// path hostd holds what `send` handed it until its adapter has sent it (and drops it
    /// if the VC closes first): this asks hostd for the VC's counters every millisecond
    /// until they show every SDU sent or failed (the link down).
    pub fn flush(&mut self, timeout: Duration) -> Result<(), Error> {
        let deadline = Instant::now() + timeout;
        let r = match &mut self.direct {
            Some(d) => d.flush(deadline),
            None => self.daemon_flush(deadline),
        };
        r.map_err(|e| self.explain(e))
    }

    fn daemon_flush(&self, deadline: Instant) -> Result<(), Error> {
        loop {
            let c = self.counters()?;
            if c.sdus_sent + c.tx_failed >= self.daemon_sent {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Receives one SDU into `buf`, waiting for it; its length. An SDU longer than `buf`
    /// is [`Error::TooLong`] and stays queued.
    pub fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        self.recv_within(buf, None, false)
    }

    /// Receives one SDU if one is there; [`Error::WouldBlock`] if not.
    pub fn try_recv(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        self.recv_within(buf, Some(Duration::ZERO), true)
    }

    /// Receives one SDU, waiting at most `timeout` ([`Error::Timeout`]).
    pub fn recv_timeout(&mut self, buf: &mut [u8], timeout: Duration) -> Result<usize, Error> {
        self.recv_within(buf, Some(timeout), false)
    }

    /// For a driver of this VC (the transport's channel, while it has no endpoint, and on
    /// the daemon path): waits until `deadline` for a received SDU and takes it into `buf`
    /// (`Ok(None)`: none came in time). With `tx_blocked` (daemon path) it waits at most a
    /// millisecond: a blocked send is the socket's, which this does not watch. A driver
    /// on the direct or lane path waits with [`Vc::wait_in_place`].
    pub(crate) fn wait_sdu(
        &mut self,
        buf: &mut [u8],
        deadline: Instant,
        tx_blocked: bool,
    ) -> Result<Option<usize>, Error> {
        let mut left = deadline.saturating_duration_since(Instant::now());
        if tx_blocked {
            left = left.min(Duration::from_millis(1));
        }
        match self.recv_within(buf, Some(left), left.is_zero()) {
            Ok(n) => Ok(Some(n)),
            Err(Error::Timeout | Error::WouldBlock) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// For a driver of this VC on the direct or lane path (the transport's channel, which
    /// takes SDUs in place) that has just looked at it (at `now`, a clock reading):
    /// waits until `deadline` for a received SDU, or with `tx_blocked` also for a
    /// transmit buffer coming free, taking nothing. It may return early, when cells or
    /// completions moved. On a lane whose look moved cells, the clock reading of that look
    /// (the driver's next pass may use it). On a lane, input `expect`ed by then is looked
    /// for without yielding until then. Daemon path: [`Vc::wait_sdu`].
    pub(crate) fn wait_in_place(
        &mut self,
        now: Instant,
        deadline: Instant,
        tx_blocked: bool,
        expect: Option<Instant>,
    ) -> Result<Option<Instant>, Error> {
        let Some(d) = &mut self.direct else {
            return Ok(None);
        };
        let waited = (|| {
            if let Some(l) = &mut d.lane {
                l.fresh = None;
                l.expect = expect;
            }
            // What the look's own sends moved in may be waiting as completions.
            d.collect()?;
            // Nothing received, and (when blocked on sending) no transmit buffer free.
            let room = tx_blocked && !d.free_tx.is_empty();
            if d.ready.is_empty() && !room {
                d.state()?;
                d.wait_from(now, Some(deadline))?;
            }
            Ok(d.lane.as_mut().and_then(|l| l.fresh.take()))
        })();
        waited.map_err(|e| self.explain(e))
    }

    pub(crate) fn direct(&mut self) -> Result<&mut Direct, Error> {
        self.direct.as_mut().ok_or_else(|| Error::Refused {
            kind: ErrorKind::BadRequest,
            message: "zero copy needs the direct path (a shared-memory channel)".into(),
        })
    }

    /// A free transmit buffer of the channel to fill in place; [`TxBuffer::send`] sends
    /// it. Waits for one. Direct path only.
    pub fn tx_buffer(&mut self) -> Result<TxBuffer<'_>, Error> {
        let handle = self.handle;
        let max_sdu = self.max_sdu;
        let got = self.direct()?.free_tx(None);
        let id = match got {
            Ok(id) => id,
            Err(e) => return Err(self.explain(e)),
        };
        let d = self.direct()?;
        let len = d.buffer_size.min(max_sdu);
        Ok(TxBuffer {
            d,
            id,
            len,
            handle,
            sent: false,
        })
    }

    /// For the transport's channel, which builds its frames in place: on the direct or
    /// lane path, if a transmit buffer of at least `min_len` bytes is free now, `fill`
    /// writes a frame into it and returns its length (or `None`: nothing to send, the
    /// buffer goes back), and the frame is sent. `now` is a clock reading of the
    /// channel's pass.
    pub(crate) fn send_filled_at(
        &mut self,
        now: Instant,
        min_len: usize,
        fill: impl FnOnce(&mut [u8]) -> Option<usize>,
    ) -> Result<Filled, Error> {
        let (handle, max_sdu) = (self.handle, self.max_sdu);
        let Some(d) = &mut self.direct else {
            return Ok(Filled::Unavailable);
        };
        let len = d.buffer_size.min(max_sdu);
        if len < min_len {
            return Ok(Filled::Unavailable);
        }
        let id = match d.try_free_tx(Some(now)) {
            Ok(id) => id,
            Err(Error::WouldBlock) => return Ok(Filled::NoBuffer),
            Err(e) => return Err(self.explain(e)),
        };
        let Some(n) = fill(d.buffer_mut(id, len)) else {
            d.free_tx.push(id);
            return Ok(Filled::Empty);
        };
        if n == 0 || n > len {
            // The driver's own bug, not the peer's: said, not sent as something else.
            d.free_tx.push(id);
            return Err(protocol(format!(
                "a frame of {n} bytes written into a transmit buffer of {len}"
            )));
        }
        match d.post_tx(id, n, handle, Some(now)) {
            Ok(()) => Ok(Filled::Sent),
            Err(e) => Err(self.explain(e)),
        }
    }

    /// On the lane path, whether the lane's last pump took cells in: their SDUs wait to
    /// be collected, and another look right away would most likely find nothing more.
    pub(crate) fn lane_took_in(&self) -> bool {
        self.direct
            .as_ref()
            .and_then(|d| d.lane.as_ref())
            .is_some_and(|l| l.took_in)
    }

    /// On the lane path, whether no collected SDU is left: only a pump moves more in (on
    /// the daemon's direct path, hostd may have completed more since).
    pub(crate) fn lane_ready_empty(&self) -> bool {
        self.direct
            .as_ref()
            .is_some_and(|d| d.lane.is_some() && d.ready.is_empty())
    }

    /// [`Vc::recv_zero_copy`] if an SDU is there now, for the transport's channel, which
    /// parses its frames in place: with `pump` after moving what can move at `now` (a
    /// clock reading of its pass), else only from what was collected (the later calls of
    /// one pass).
    pub(crate) fn try_recv_zero_copy_at(
        &mut self,
        now: Instant,
        pump: bool,
    ) -> Result<Option<RxSdu<'_>>, Error> {
        let got = self.direct()?.try_next_rx(Some(now), pump);
        match got {
            Ok(Some((id, len))) => self.rx_sdu(id, len).map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(self.explain(e)),
        }
    }

    /// The next received SDU, in place in the channel's buffer; dropping it hands the
    /// buffer back for reception. Waits for one. Direct path only.
    pub fn recv_zero_copy(&mut self) -> Result<RxSdu<'_>, Error> {
        let got = self.direct()?.next_rx(None, false);
        match got {
            Ok((id, len)) => self.rx_sdu(id, len),
            Err(e) => Err(self.explain(e)),
        }
    }

    /// The SDU in buffer `id`, `len` bytes, at the head of the ready queue, taken.
    fn rx_sdu(&mut self, id: BufferId, len: usize) -> Result<RxSdu<'_>, Error> {
        let d = self.direct()?;
        // The descriptor is hostd's (or the lane adapter's): checked, as `recv` checks it.
        if d.buffer(id, len).len() != len {
            return Err(protocol(format!(
                "receive buffer {} is out of bounds",
                id.0
            )));
        }
        d.ready.pop_front();
        Ok(RxSdu { d, id, len })
    }

    /// The VC's counters as its adapter keeps them (hostd's, or on the lane path this
    /// process's own).
    pub fn counters(&self) -> Result<VcStats, Error> {
        if let Some(l) = self.direct.as_ref().and_then(|d| d.lane.as_ref()) {
            // No channel rings on the lane path: nothing is refused between the application
            // and its own adapter.
            let c = l.adapter.counters();
            return Ok(VcStats::from_adapter(&c, 0, 0));
        }
        let status = lock(&self.conn).status()?;
        status
            .channels
            .iter()
            .find(|c| c.handle == self.handle)
            .map(|c| c.counters)
            .ok_or_else(|| self.explain(Error::Revoked))
    }
}

impl Drop for Vc {
    fn drop(&mut self) {
        if let Some(d) = &mut self.direct
            && d.lane.is_some()
        {
            // Nobody else moves a lane's cells: send what is queued, within a bound.
            let _ = d.flush(Instant::now() + LANE_LINGER);
        }
        let mut c = lock(&self.conn);
        if !c.closed && !c.revoked.contains(&self.handle) {
            let cookie = self.cookie.clone();
            if self.call.is_some() {
                // A call's release goes on in hostd (after the VC's queued cells), as a
                // socket's close(2) returns before its FIN is answered: nothing waits here.
                let _ = c.write(&proto::control_frame(&Request::Close {
                    cookie,
                    quiet: true,
                }));
            } else {
                // Bounded: a hung daemon must not hang the application's drop. (A PVC is
                // free again for another application once this returns.)
                let _ = c.request_within(
                    &Request::Close {
                        cookie,
                        quiet: false,
                    },
                    Some(Duration::from_secs(2)),
                );
            }
        }
        c.data.remove(&self.handle);
        c.released.remove(&self.handle);
    }
}

/// What [`Vc::send_filled_at`] did.
pub(crate) enum Filled {
    /// A frame went.
    Sent,
    /// `fill` had nothing to send.
    Empty,
    /// No transmit buffer was free.
    NoBuffer,
    /// Not the direct or lane path, or its buffers are too short.
    Unavailable,
}

/// A transmit buffer being filled in place ([`Vc::tx_buffer`]); dereferences to its
/// bytes. Dropped without [`send`](TxBuffer::send), it goes back to the free pool.
pub struct TxBuffer<'a> {
    pub(crate) d: &'a mut Direct,
    pub(crate) id: BufferId,
    pub(crate) len: usize,
    pub(crate) handle: u32,
    pub(crate) sent: bool,
}

impl TxBuffer<'_> {
    /// Sends the first `len` bytes as one SDU.
    pub fn send(mut self, len: usize) -> Result<(), Error> {
        if len == 0 || len > self.len {
            return Err(Error::TooLong { len, max: self.len });
        }
        self.d.state()?;
        self.d.post_tx(self.id, len, self.handle, None)?;
        self.sent = true;
        Ok(())
    }
}

impl Deref for TxBuffer<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.d.buffer(self.id, self.len)
    }
}

impl DerefMut for TxBuffer<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.d.buffer_mut(self.id, self.len)
    }
}

impl Drop for TxBuffer<'_> {
    fn drop(&mut self) {
        if !self.sent {
            self.d.free_tx.push(self.id);
        }
    }
}

/// A received SDU in place in the channel's buffer ([`Vc::recv_zero_copy`]).
pub struct RxSdu<'a> {
    pub(crate) d: &'a mut Direct,
    pub(crate) id: BufferId,
    pub(crate) len: usize,
}

impl Deref for RxSdu<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.d.buffer(self.id, self.len)
    }
}

impl Drop for RxSdu<'_> {
    fn drop(&mut self) {
        self.d.post_rx(self.id);
    }
}

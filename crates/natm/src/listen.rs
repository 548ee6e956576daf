//! Incoming calls: a [`Listener`] on its own connection to hostd, the calls hostd offers
//! it, and accepting or rejecting them.

use super::*;

/// A call offered to a [`Listener`], not yet accepted or rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IncomingCall {
    pub(crate) listener: u32,
    pub(crate) call: u32,
    pub(crate) calling: Option<Aesa>,
    pub(crate) called: Aesa,
    pub(crate) qos: Qos,
}

impl IncomingCall {
    /// The calling party, when the SETUP named it.
    pub fn calling(&self) -> Option<&Aesa> {
        self.calling.as_ref()
    }

    /// The address called (this host's, with the listener's selector).
    pub fn called(&self) -> &Aesa {
        &self.called
    }

    /// The QoS as this end sees it (`tx` is this end's sending direction).
    pub fn qos(&self) -> &Qos {
        &self.qos
    }

    /// hostd's number for the call.
    pub fn id(&self) -> u32 {
        self.call
    }
}

/// Takes calls to the host's address ([`Host::listen`]).
///
/// It has a connection of its own to hostd, on which hostd offers it each call as it comes
/// ([`Listener::next_call`]); a call is then accepted ([`Listener::accept_call`]) or
/// rejected with a cause ([`Listener::reject`]), and hostd rejects it itself (cause 18, no
/// user responding) when neither comes within its alerting time. The VCs accepted share
/// the listener's connection, so hostd keeps the listener registered until it and every
/// VC it accepted are dropped; calls offered after the listener is dropped are left to
/// hostd's alerting time.
///
/// A listener made by [`Host::listen_accepting`] is answered by hostd itself: every call
/// is accepted as it arrives, and [`Listener::accept`] takes the calls already active
/// (there is nothing to reject, and `next_call`, `accept_call` and `reject` refuse).
pub struct Listener {
    conn: Arc<Mutex<Conn>>,
    id: u32,
    address: Aesa,
    /// hostd accepts every call itself, with VCs opened so.
    auto: Option<ChannelOptions>,
}

/// What an auto-accepting listener's `next_call`, `accept_call` and `reject` say.
fn accepts_by_itself() -> Error {
    Error::Refused {
        kind: ErrorKind::BadRequest,
        message: "this listener accepts every call itself (Host::listen_accepting): take calls with accept".into(),
    }
}

/// The cause a dropped listener rejects the calls it was offered with: 21, call rejected.
const DROPPED_CAUSE: u8 = 21;

impl Listener {
    /// Registers a listener on its own connection `conn`.
    pub(crate) fn register(
        conn: Arc<Mutex<Conn>>,
        selector: Option<u8>,
        auto: Option<ChannelOptions>,
    ) -> Result<Listener, Error> {
        let accept = auto.as_ref().map(|ch| AutoAccept {
            path: ch.path,
            notify: ch.notify,
            buffers: ch.buffers,
            buffer_size: ch.buffer_size,
        });
        let answer = lock(&conn).request(&Request::Listen { selector, accept })?;
        match answer {
            (Response::Listening { listener, address }, _) => Ok(Listener {
                conn,
                id: listener,
                address,
                auto,
            }),
            (r, _) => Err(protocol(format!("hostd answered listen with {r:?}"))),
        }
    }

    /// The address it takes calls to: the host's own, with its selector.
    pub fn address(&self) -> &Aesa {
        &self.address
    }

    /// Waits at most `timeout` (`None`: for ever) for the next call offered
    /// ([`Error::Timeout`] if none came).
    pub fn next_call(&self, timeout: Option<Duration>) -> Result<IncomingCall, Error> {
        if self.auto.is_some() {
            return Err(accepts_by_itself());
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            // Locked per slice: the accepted VCs share the connection.
            let mut c = lock(&self.conn);
            if let Some(r) = c.next_answer()? {
                return Err(protocol(format!("unexpected message from hostd: {r:?}")));
            }
            if let Some(i) = c.incoming.pop_front() {
                return Ok(i);
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let slice = left.map_or(RECV_SLICE, |l| l.min(RECV_SLICE));
            if !c.fill(Some(slice))? && deadline.is_some_and(|d| d <= Instant::now()) {
                return Err(Error::Timeout);
            }
        }
    }

    /// Waits for the next call and accepts it with the channel's defaults
    /// ([`ChannelOptions::default`]): the VC, the calling party (when the SETUP named it)
    /// and the QoS. On a listener that accepts by itself, the next call hostd accepted.
    pub fn accept(&self) -> Result<(Vc, Option<Aesa>, Qos), Error> {
        self.accept_within(None)
    }

    /// As [`Listener::accept`], waiting at most `timeout` (`None`: for ever) for a call
    /// ([`Error::Timeout`] if none came).
    pub fn accept_within(
        &self,
        timeout: Option<Duration>,
    ) -> Result<(Vc, Option<Aesa>, Qos), Error> {
        let Some(ch) = &self.auto else {
            let call = self.next_call(timeout)?;
            let (calling, qos) = (call.calling, call.qos);
            let vc = self.accept_call(call, &ChannelOptions::default())?;
            return Ok((vc, calling, qos));
        };
        let deadline = timeout.map(|t| Instant::now() + t);
        let arrival = loop {
            let mut c = lock(&self.conn);
            if let Some(r) = c.next_answer()? {
                return Err(protocol(format!("unexpected message from hostd: {r:?}")));
            }
            if let Some(i) = c.arrived.iter().position(|a| a.listener == self.id)
                && let Some(a) = c.arrived.remove(i)
            {
                break a;
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let slice = left.map_or(RECV_SLICE, |l| l.min(RECV_SLICE));
            if !c.fill(Some(slice))? && deadline.is_some_and(|d| d <= Instant::now()) {
                return Err(Error::Timeout);
            }
        };
        let vc = attach(
            &self.conn,
            arrival.opened,
            arrival.fds,
            ch,
            None,
            None,
            None,
        )?;
        let (calling, qos) = vc
            .call()
            .map(|c| (c.remote, c.qos))
            .ok_or_else(|| protocol("hostd's arrival has no call"))?;
        Ok((vc, calling, qos))
    }

    /// Waits for the next call and accepts it with `opts`, as [`Listener::accept`]. A
    /// listener that accepts by itself refuses: its VCs are opened as it was told.
    pub fn accept_with(&self, opts: &ChannelOptions) -> Result<(Vc, Option<Aesa>, Qos), Error> {
        let call = self.next_call(None)?;
        let (calling, qos) = (call.calling, call.qos);
        let vc = self.accept_call(call, opts)?;
        Ok((vc, calling, qos))
    }

    /// Accepts `call` and opens its VC as `opts` say, once the network confirmed it. A
    /// call the caller gave up on meanwhile is [`Error::CallFailed`].
    pub fn accept_call(&self, call: IncomingCall, opts: &ChannelOptions) -> Result<Vc, Error> {
        if self.auto.is_some() {
            return Err(accepts_by_itself());
        }
        let (receiver, signal) = signal_target(opts)?;
        let req = Request::Accept {
            call: call.call,
            path: opts.path,
            notify: opts.notify,
            signal,
            buffers: opts.buffers,
            buffer_size: opts.buffer_size,
        };
        open_on(&self.conn, &req, opts, receiver, None, None)
    }

    /// Rejects `call` with Q.2931 cause `cause` (1..=127; 21, call rejected, is usual).
    pub fn reject(&self, call: IncomingCall, cause: u8) -> Result<(), Error> {
        if self.auto.is_some() {
            return Err(accepts_by_itself());
        }
        if !(1..=127).contains(&cause) {
            return Err(Error::Refused {
                kind: ErrorKind::BadRequest,
                message: format!("cause {cause}: a cause value is 1 to 127"),
            });
        }
        let req = Request::Reject {
            call: call.call,
            cause,
        };
        match lock(&self.conn).request(&req)? {
            (Response::Rejected { .. }, _) => Ok(()),
            (r, _) => Err(protocol(format!("hostd answered reject with {r:?}"))),
        }
    }

    /// hostd's number for the listener.
    pub fn id(&self) -> u32 {
        self.id
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // The calls offered and not answered are rejected now rather than left to ring.
        let mut c = lock(&self.conn);
        // Calls hostd accepted that nobody took are released.
        let arrived: Vec<Arrival> = c.arrived.drain(..).collect();
        for a in arrived.into_iter().filter(|a| a.listener == self.id) {
            if let Response::Opened { cookie, .. } = a.opened {
                let _ = c.write(&proto::control_frame(&Request::Close {
                    cookie,
                    quiet: true,
                }));
            }
        }
        let offered: Vec<IncomingCall> = c.incoming.drain(..).collect();
        for call in offered.into_iter().filter(|i| i.listener == self.id) {
            if c.closed {
                break;
            }
            // Bounded: a hung daemon must not hang the application's drop.
            let _ = c.request_within(
                &Request::Reject {
                    call: call.call,
                    cause: DROPPED_CAUSE,
                },
                Some(Duration::from_secs(2)),
            );
        }
    }
}

//! The connection to hostd: the channel manager's socket, shared by a `Host` and its VCs,
//! and `Host`'s calls.

use super::*;

/// The most bytes of received SDUs a daemon-path VC keeps for the application; beyond it
/// SDUs are dropped, as a full socket receive buffer drops them, so a VC nobody reads
/// cannot make the application allocate without bound.
pub(crate) const MAX_QUEUED_BYTES: usize = 16 << 20;

/// The SDUs a daemon-path VC received and the application has not taken yet.
#[derive(Default)]
pub(crate) struct RxQueue {
    pub(crate) sdus: VecDeque<Vec<u8>>,
    pub(crate) bytes: usize,
}

impl RxQueue {
    pub(crate) fn push(&mut self, sdu: Vec<u8>) {
        if self.bytes + sdu.len() <= MAX_QUEUED_BYTES {
            self.bytes += sdu.len();
            self.sdus.push_back(sdu);
        }
    }

    pub(crate) fn pop(&mut self) -> Option<Vec<u8>> {
        let sdu = self.sdus.pop_front()?;
        self.bytes -= sdu.len();
        Some(sdu)
    }
}

/// The connection to hostd, shared by a [`Host`] and its VCs.
pub(crate) struct Conn {
    pub(crate) stream: UnixStream,
    pub(crate) rbuf: proto::FrameBuf,
    pub(crate) fds: Vec<OwnedFd>,
    /// One queue per open daemon-path VC: data for any other handle is dropped.
    pub(crate) data: HashMap<u32, RxQueue>,
    pub(crate) link_down: bool,
    pub(crate) revoked: HashSet<u32>,
    /// Switched VCs whose call hostd reported released, with the cause (they are in
    /// `revoked` too); an entry goes when its [`Vc`] does.
    pub(crate) released: HashMap<u32, proto::CauseInfo>,
    /// Calls hostd offered this connection's listener, not yet accepted or rejected (at
    /// most [`MAX_INCOMING`]; beyond, hostd's alerting time rejects them).
    pub(crate) incoming: VecDeque<IncomingCall>,
    /// Calls hostd accepted for this connection's listener (one that accepts by itself),
    /// not taken yet (at most [`MAX_INCOMING`]; beyond, they are closed again).
    pub(crate) arrived: VecDeque<Arrival>,
    /// The requests sent whose answers have not come, oldest first (hostd answers in
    /// order): `true` for one whose answer is skipped when it comes, because its wait timed
    /// out (a VC it opened is closed again) or the library sent it on its own.
    pub(crate) awaiting: VecDeque<bool>,
    pub(crate) closed: bool,
    /// What [`fill`](Self::fill) receives into, made on its first read: a 64 KiB array
    /// on the stack was zeroed on every read (a tenth of `natm perf calls`' CPU time).
    scratch: Vec<u8>,
}

/// The most offered calls a listener's connection keeps unanswered.
pub(crate) const MAX_INCOMING: usize = 1024;

impl Conn {
    pub(crate) fn new(stream: UnixStream) -> Conn {
        Conn {
            stream,
            rbuf: proto::FrameBuf::new(),
            fds: Vec::new(),
            data: HashMap::new(),
            link_down: false,
            revoked: HashSet::new(),
            released: HashMap::new(),
            incoming: VecDeque::new(),
            arrived: VecDeque::new(),
            awaiting: VecDeque::new(),
            closed: false,
            scratch: Vec::new(),
        }
    }

    /// Reads what arrives within `timeout` (`None`: wait) into the buffer; false if
    /// nothing did.
    pub(crate) fn fill(&mut self, timeout: Option<Duration>) -> Result<bool, Error> {
        if self.closed {
            return Err(Error::Revoked);
        }
        // With no limit the read itself waits (the socket blocks): one system call per
        // wake-up instead of a poll and a read.
        let flags = match timeout {
            None => RecvFlags::CMSG_CLOEXEC,
            Some(t) => {
                let mut pfd = [rustix::event::PollFd::new(
                    &self.stream,
                    rustix::event::PollFlags::IN,
                )];
                let ts = rustix::event::Timespec::try_from(t).ok();
                match rustix::event::poll(&mut pfd, ts.as_ref()) {
                    Ok(0) => return Ok(false),
                    Ok(_) => {}
                    Err(rustix::io::Errno::INTR) => return Ok(false),
                    Err(e) => return Err(Error::Io(e.into())),
                }
                RecvFlags::CMSG_CLOEXEC | RecvFlags::DONTWAIT
            }
        };
        if self.scratch.is_empty() {
            self.scratch = vec![0; 65536];
        }
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(8))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let msg = match recvmsg(
            &self.stream,
            &mut [IoSliceMut::new(&mut self.scratch)],
            &mut control,
            flags,
        ) {
            Ok(m) => m,
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => return Ok(false),
            Err(e) => return Err(Error::Io(e.into())),
        };
        for m in control.drain() {
            if let RecvAncillaryMessage::ScmRights(it) = m {
                self.fds.extend(it);
            }
        }
        if msg.bytes == 0 {
            self.closed = true;
            return Err(Error::Revoked);
        }
        self.rbuf.extend(&self.scratch[..msg.bytes]);
        Ok(true)
    }

    /// The cause of switched VC `handle`'s release, if hostd reported it: looked for in
    /// what has arrived, and for at most `wait` in what arrives (hostd revokes a channel and
    /// sends the notice in two steps, so a direct-path VC may see the first before the
    /// second).
    pub(crate) fn release_cause(
        &mut self,
        handle: u32,
        wait: Duration,
    ) -> Option<proto::CauseInfo> {
        let deadline = Instant::now() + wait;
        loop {
            // Answers to nobody's request are not expected here; they are dropped.
            while let Ok(Some(_)) = self.next_answer() {}
            if let Some(c) = self.released.get(&handle) {
                return Some(c.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !matches!(self.fill(Some(left)), Ok(true)) {
                while let Ok(Some(_)) = self.next_answer() {}
                return self.released.get(&handle).cloned();
            }
        }
    }

    /// Writes a whole frame; a socket hostd closed is [`Error::Revoked`].
    pub(crate) fn write(&self, frame: &[u8]) -> Result<(), Error> {
        proto::write_frame(&self.stream, frame).map_err(|e| {
            if e.kind() == io::ErrorKind::BrokenPipe {
                Error::Revoked
            } else {
                Error::Io(e)
            }
        })
    }

    /// The host's state.
    pub(crate) fn status(&mut self) -> Result<HostStatus, Error> {
        match self.request(&Request::Status)? {
            (Response::Status(s), _) => Ok(s),
            (r, _) => Err(protocol(format!("hostd answered status with {r:?}"))),
        }
    }

    /// The next frame already read that is not a notice or data (those are recorded).
    pub(crate) fn next_answer(&mut self) -> Result<Option<Response>, Error> {
        while let Some(frame) = self.rbuf.next_frame::<Response>()? {
            match frame {
                Frame::Data { handle, sdu } => {
                    if let Some(q) = self.data.get_mut(&handle) {
                        q.push(sdu);
                    }
                }
                Frame::Control(Response::LinkDown) => self.link_down = true,
                Frame::Control(Response::LinkUp) => self.link_down = false,
                Frame::Control(Response::Revoked { handle }) => {
                    self.revoked.insert(handle);
                }
                Frame::Control(Response::Released { handle, cause }) => {
                    self.revoked.insert(handle);
                    self.released.insert(handle, cause);
                }
                Frame::Control(Response::Incoming {
                    listener,
                    call,
                    calling,
                    called,
                    qos,
                }) => {
                    if self.incoming.len() < MAX_INCOMING {
                        self.incoming.push_back(IncomingCall {
                            listener,
                            call,
                            calling,
                            called,
                            qos,
                        });
                    }
                }
                Frame::Control(Response::Arrived { listener, opened }) => {
                    // The channel's descriptors came with this frame (a read ends at them).
                    let fds = std::mem::take(&mut self.fds);
                    let Response::Opened {
                        handle,
                        path,
                        ref cookie,
                        ..
                    } = *opened
                    else {
                        return Err(protocol(format!("hostd's arrival is no VC: {opened:?}")));
                    };
                    if self.arrived.len() >= MAX_INCOMING {
                        let close = Request::Close {
                            cookie: cookie.clone(),
                            quiet: true,
                        };
                        self.write(&proto::control_frame(&close))?;
                        continue;
                    }
                    if path == DataPath::Daemon {
                        // Its first SDUs may follow closely.
                        self.data.insert(handle, RxQueue::default());
                    }
                    self.arrived.push_back(Arrival {
                        listener,
                        opened: *opened,
                        fds,
                    });
                }
                Frame::Control(r) => {
                    if self.awaiting.pop_front() != Some(true) {
                        return Ok(Some(r));
                    }
                    // The late answer to a request given up on.
                    self.fds.clear();
                    if let Response::Opened { cookie, .. } = r {
                        let close = Request::Close {
                            cookie,
                            quiet: true,
                        };
                        self.write(&proto::control_frame(&close))?;
                    }
                }
            }
        }
        Ok(None)
    }

    /// Takes in whatever has arrived, without waiting.
    pub(crate) fn catch_up(&mut self) -> Result<(), Error> {
        while self.fill(Some(Duration::ZERO))? {}
        if let Some(r) = self.next_answer()? {
            return Err(protocol(format!("unexpected message from hostd: {r:?}")));
        }
        Ok(())
    }

    pub(crate) fn request(&mut self, r: &Request) -> Result<(Response, Vec<OwnedFd>), Error> {
        self.request_within(r, None)
    }

    /// Sends a request and waits for its answer, at most `timeout` (`None`: no limit).
    pub(crate) fn request_within(
        &mut self,
        r: &Request,
        timeout: Option<Duration>,
    ) -> Result<(Response, Vec<OwnedFd>), Error> {
        let deadline = timeout.map(|t| Instant::now() + t);
        self.fds.clear();
        self.write(&proto::control_frame(r))?;
        self.awaiting.push_back(false);
        loop {
            if let Some(answer) = self.next_answer()? {
                let fds = std::mem::take(&mut self.fds);
                return match answer {
                    Response::Error { kind, message } => Err(match kind {
                        ErrorKind::LinkDown => Error::LinkDown,
                        ErrorKind::Timeout => Error::Timeout,
                        kind => Error::Refused { kind, message },
                    }),
                    Response::CallFailed { cause } => Err(Error::CallFailed(cause)),
                    a => Ok((a, fds)),
                };
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if !self.fill(left)? && deadline.is_some_and(|d| d <= Instant::now()) {
                // Its answer may still come: it is skipped then. (This request is the newest
                // sent: requests go one at a time under the connection's lock.)
                if let Some(last) = self.awaiting.back_mut() {
                    *last = true;
                }
                return Err(Error::Timeout);
            }
        }
    }
}

/// A call hostd accepted for a listener ([`Response::Arrived`]): its `Opened` and the
/// channel's descriptors.
pub(crate) struct Arrival {
    pub(crate) listener: u32,
    pub(crate) opened: Response,
    pub(crate) fds: Vec<OwnedFd>,
}

/// A connection to a host's daemon. See the [crate documentation](crate).
pub struct Host {
    pub(crate) conn: Arc<Mutex<Conn>>,
    pub(crate) path: PathBuf,
}

pub(crate) fn lock(c: &Mutex<Conn>) -> MutexGuard<'_, Conn> {
    // A panic elsewhere while holding the lock leaves the connection usable.
    c.lock().unwrap_or_else(|p| p.into_inner())
}

/// How often a waiting direct-path call looks whether hostd is still there.
pub(crate) const DAEMON_CHECK: Duration = Duration::from_millis(50);

/// The longest a daemon-path receive holds the host's connection in one wait.
pub(crate) const RECV_SLICE: Duration = Duration::from_millis(10);

static SIGNAL_CHANNEL: AtomicU32 = AtomicU32::new(0);
static CORRELATION: AtomicU32 = AtomicU32::new(1);

impl Host {
    /// Connects to host `name`'s daemon at its default socket
    /// ([`natm_proto::host::default_socket`]).
    pub fn connect(name: &str) -> Result<Host, Error> {
        Host::connect_path(proto::default_socket(name))
    }

    /// Connects to the daemon listening at `path`.
    pub fn connect_path(path: impl AsRef<Path>) -> Result<Host, Error> {
        let path = path.as_ref().to_path_buf();
        let stream = UnixStream::connect(&path).map_err(|source| Error::NoDaemon {
            path: path.clone(),
            source,
        })?;
        Ok(Host {
            conn: Arc::new(Mutex::new(Conn::new(stream))),
            path,
        })
    }

    /// The daemon's socket.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens a VC.
    pub fn open(&self, opts: VcOptions) -> Result<Vc, Error> {
        let (receiver, signal) = signal_target(&opts.channel)?;
        let ch = &opts.channel;
        let req = Request::Open {
            vc: vc_on_the_link(&opts.addr)?,
            qos: opts.qos.unwrap_or_else(default_qos),
            path: ch.path,
            notify: ch.notify,
            signal,
            buffers: ch.buffers,
            buffer_size: ch.buffer_size,
        };
        open_on(&self.conn, &req, ch, receiver, opts.addr.vc(), None)
    }

    /// Calls `addr` (a switched VC): the network sets the call up hop by hop, and the VC
    /// is opened as [`Host::open`] opens a PVC, on any data path. [`Vc::call`] says which
    /// VC the network gave and how long set-up took. A refusal by the network or the
    /// called party, or no answer within the options' timeout, is [`Error::CallFailed`]
    /// with the cause.
    pub fn call(&self, addr: &Aesa, opts: CallOptions) -> Result<Vc, Error> {
        let (receiver, signal) = signal_target(&opts.channel)?;
        let ch = &opts.channel;
        let req = Request::Call {
            called: *addr,
            qos: opts.qos.unwrap_or_else(default_qos),
            path: ch.path,
            notify: ch.notify,
            signal,
            buffers: ch.buffers,
            buffer_size: ch.buffer_size,
            timeout_ms: opts.timeout.as_millis().clamp(1, u128::from(u64::MAX)) as u64,
        };
        // hostd answers within the timeout (cause 102 when the network did not): the margin
        // only bounds the wait for a hostd that hangs.
        let wait = opts.timeout.saturating_add(CALL_MARGIN);
        open_on(&self.conn, &req, ch, receiver, None, Some(wait))
    }

    /// Takes calls to this host's address with selector byte `selector` (`None`: any
    /// selector no other listener took). The listener has a connection of its own to
    /// hostd, since hostd offers it calls when they come ([`Listener`]).
    pub fn listen(&self, selector: Option<u8>) -> Result<Listener, Error> {
        let other = Host::connect_path(&self.path)?;
        Listener::register(other.conn, selector, None)
    }

    /// As [`Host::listen`], but hostd accepts every call itself the moment it arrives
    /// (as a TCP listener's kernel completes the handshake before `accept(2)`), with each
    /// VC opened as `channel` says: [`Listener::accept`] then takes calls already active,
    /// and the listener cannot reject. Notification by signal is refused (its target is
    /// per VC).
    pub fn listen_accepting(
        &self,
        selector: Option<u8>,
        channel: ChannelOptions,
    ) -> Result<Listener, Error> {
        let other = Host::connect_path(&self.path)?;
        Listener::register(other.conn, selector, Some(channel))
    }

    /// Sends one OAM F5 loopback request on `vc` and waits for the reply: the round-trip
    /// time as hostd measured it.
    pub fn ping(&self, vc: PvcAddr, scope: OamScope, timeout: Duration) -> Result<Duration, Error> {
        let req = Request::Ping {
            vc: vc_on_the_link(&vc)?,
            segment: scope == OamScope::Segment,
            correlation: CORRELATION.fetch_add(1, Ordering::Relaxed),
            timeout_ms: timeout.as_millis().clamp(1, u128::from(u64::MAX)) as u64,
        };
        match lock(&self.conn).request(&req)? {
            (Response::Pong { rtt_ns }, _) => Ok(Duration::from_nanos(rtt_ns)),
            (r, _) => Err(protocol(format!("hostd answered a ping with {r:?}"))),
        }
    }

    /// The host's state: link, admission books, every channel.
    pub fn status(&self) -> Result<HostStatus, Error> {
        lock(&self.conn).status()
    }

    /// Impairs the cells this host sends on its link from now on (natm-netem's
    /// impairments text, e.g. `loss=1%`; `""` clears) and returns the text in force (`""`:
    /// none). For measurements: hostd keeps the setting until it is changed (also for
    /// every other application of the host), and opens no lane-path VC while it is set.
    pub fn set_impairments(&self, impair: &str) -> Result<String, Error> {
        match lock(&self.conn).request(&Request::Impair {
            impair: impair.to_string(),
        })? {
            (Response::Impaired { impair }, _) => Ok(impair),
            (r, _) => Err(protocol(format!("hostd answered impair with {r:?}"))),
        }
    }

    /// Closes the VC with this cookie (see [`Vc::cookie`]); hostd refuses a cookie of
    /// another connection's VC.
    pub fn close_cookie(&self, cookie: &str) -> Result<(), Error> {
        match lock(&self.conn).request(&Request::Close {
            cookie: cookie.to_string(),
            quiet: false,
        })? {
            (Response::Closed { .. }, _) => Ok(()),
            (r, _) => Err(protocol(format!("hostd answered close with {r:?}"))),
        }
    }
}

/// How much longer than a call's timeout the library waits for hostd's answer.
pub(crate) const CALL_MARGIN: Duration = Duration::from_secs(2);

/// For [`NotifyMode::Signal`] on a path that may be the direct one: the receiver this
/// thread waits on and the target hostd signals.
pub(crate) fn signal_target(
    ch: &ChannelOptions,
) -> Result<(Option<signal::Receiver>, Option<SignalTarget>), Error> {
    // Auto with signals is the direct path (a lane waits by polling or on eventfds).
    if ch.notify != NotifyMode::Signal || !matches!(ch.path, DataPath::Direct | DataPath::Auto) {
        return Ok((None, None));
    }
    let signo = signal::rt_signal(4)
        .ok_or_else(|| Error::Io(io::Error::other("no real-time signal SIGRTMIN+4 here")))?;
    let channel = SIGNAL_CHANNEL.fetch_add(1, Ordering::Relaxed) % signal::MAX_CHANNELS;
    let r = signal::Receiver::new(signo, channel)?;
    let t = r.target();
    Ok((
        Some(r),
        Some(SignalTarget {
            tid: t.tid,
            signo,
            channel,
        }),
    ))
}

/// Sends `req` (an open, a call or an accept) on `conn` and attaches the VC hostd opened
/// to the path it took. `pvc` is the VC of a PVC open (a switched VC's comes in the
/// answer's call); `wait` bounds the wait for the answer.
pub(crate) fn open_on(
    conn: &Arc<Mutex<Conn>>,
    req: &Request,
    ch: &ChannelOptions,
    receiver: Option<signal::Receiver>,
    pvc: Option<VcId>,
    wait: Option<Duration>,
) -> Result<Vc, Error> {
    let (answer, fds) = {
        let mut c = lock(conn);
        let (answer, fds) = c.request_within(req, wait)?;
        if let Response::Opened { handle, path, .. } = answer
            && path == DataPath::Daemon
        {
            // Under the same lock: the VC's first SDUs may follow the answer closely.
            c.data.insert(handle, RxQueue::default());
        }
        (answer, fds)
    };
    // A PVC's QoS is the one asked for (hostd admitted it as asked); a call's comes in
    // its answer.
    let asked = match req {
        Request::Open { qos, .. } => Some(*qos),
        _ => None,
    };
    attach(conn, answer, fds, ch, receiver, pvc, asked)
}

/// Makes the [`Vc`] of hostd's `Opened` answer `answer` (or an arrival's), attached to the
/// path hostd took with the descriptors `fds` that came with it. `pvc` is a PVC's VC,
/// `asked` the QoS a PVC was opened with.
pub(crate) fn attach(
    conn: &Arc<Mutex<Conn>>,
    answer: Response,
    fds: Vec<OwnedFd>,
    ch: &ChannelOptions,
    receiver: Option<signal::Receiver>,
    pvc: Option<VcId>,
    asked: Option<Qos>,
) -> Result<Vc, Error> {
    let Response::Opened {
        handle,
        cookie,
        max_sdu,
        buffers,
        lane,
        path,
        call,
        ..
    } = answer
    else {
        return Err(protocol(format!("hostd opened no VC: it said {answer:?}")));
    };
    let vc_id = call.as_ref().map(|c| c.vc).or(pvc);
    let qos = call
        .as_ref()
        .map(|c| c.qos)
        .or(asked)
        .unwrap_or_else(default_qos);
    let mut vc = Vc {
        daemon_sent: 0,
        conn: conn.clone(),
        handle,
        cookie,
        max_sdu: max_sdu as usize,
        direct: None,
        call,
        qos,
    };
    // The path hostd took: the one asked for, or for `Auto` the lane or the direct path.
    // Anything else would leave this side waiting on the wrong path (`vc` closes again).
    let fits = match ch.path {
        DataPath::Auto => matches!(path, DataPath::Direct | DataPath::Lane),
        asked => asked == path,
    };
    if !fits {
        return Err(protocol(format!(
            "hostd opened a {} path VC for a {} request",
            path.name(),
            ch.path.name()
        )));
    }
    if path == DataPath::Direct {
        // From here on, a failure closes the VC again (Vc's Drop).
        let daemon = lock(conn).stream.try_clone()?;
        vc.direct = Some(Direct::attach(daemon, fds, ch.notify, receiver, buffers)?);
    } else if path == DataPath::Lane {
        let daemon = lock(conn).stream.try_clone()?;
        let shape = lane.ok_or_else(|| protocol("hostd's lane answer has no shape"))?;
        let vc_id = vc_id.ok_or_else(|| protocol("hostd opened a VC with no VPI or VCI"))?;
        let setup = LaneSetup {
            handle,
            vc: vc_id,
            max_sdu: max_sdu as usize,
            shape,
        };
        vc.direct = Some(Direct::attach_lane(daemon, fds, ch.notify, buffers, setup)?);
    }
    Ok(vc)
}

/// The VC of `addr` on the host's one link (interface 0): a PVC address names an interface
/// and may leave parts open (`*`, `?`), which hostd's protocol does not carry.
pub(crate) fn vc_on_the_link(addr: &PvcAddr) -> Result<VcId, Error> {
    let bad = |message: String| Error::Refused {
        kind: ErrorKind::BadRequest,
        message,
    };
    match addr.itf {
        natm_core::Sel::Is(i) if i.get() != 0 => {
            return Err(bad(format!(
                "VC \"{addr}\": interface {} does not exist (hostd has one link, interface 0)",
                i.get()
            )));
        }
        natm_core::Sel::Unspecified => {
            return Err(bad(format!("VC \"{addr}\": the interface is unspecified")));
        }
        _ => {}
    }
    addr.vc().ok_or_else(|| {
        bad(format!(
            "VC \"{addr}\": give a VPI and a VCI (no `*` or `?`)"
        ))
    })
}

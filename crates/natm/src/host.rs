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
    pub(crate) closed: bool,
}

impl Conn {
    pub(crate) fn new(stream: UnixStream) -> Conn {
        Conn {
            stream,
            rbuf: proto::FrameBuf::new(),
            fds: Vec::new(),
            data: HashMap::new(),
            link_down: false,
            revoked: HashSet::new(),
            closed: false,
        }
    }

    /// Reads what arrives within `timeout` (`None`: wait) into the buffer; false if
    /// nothing did.
    pub(crate) fn fill(&mut self, timeout: Option<Duration>) -> Result<bool, Error> {
        if self.closed {
            return Err(Error::Revoked);
        }
        let mut pfd = [rustix::event::PollFd::new(
            &self.stream,
            rustix::event::PollFlags::IN,
        )];
        let ts = timeout.and_then(|t| rustix::event::Timespec::try_from(t).ok());
        match rustix::event::poll(&mut pfd, ts.as_ref()) {
            Ok(0) => return Ok(false),
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => return Ok(false),
            Err(e) => return Err(Error::Io(e.into())),
        }
        let mut buf = [0u8; 65536];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(8))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let msg = match recvmsg(
            &self.stream,
            &mut [IoSliceMut::new(&mut buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC | RecvFlags::DONTWAIT,
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
        self.rbuf.extend(&buf[..msg.bytes]);
        Ok(true)
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
                Frame::Control(r) => return Ok(Some(r)),
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
        loop {
            if let Some(answer) = self.next_answer()? {
                let fds = std::mem::take(&mut self.fds);
                return match answer {
                    Response::Error { kind, message } => Err(match kind {
                        ErrorKind::LinkDown => Error::LinkDown,
                        ErrorKind::Timeout => Error::Timeout,
                        kind => Error::Refused { kind, message },
                    }),
                    a => Ok((a, fds)),
                };
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if !self.fill(left)? && deadline.is_some_and(|d| d <= Instant::now()) {
                return Err(Error::Timeout);
            }
        }
    }
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
        let mut receiver = None;
        // Auto with signals is the direct path (a lane waits by polling or on eventfds).
        let signal_target = if opts.notify == NotifyMode::Signal
            && matches!(opts.path, DataPath::Direct | DataPath::Auto)
        {
            let signo = signal::rt_signal(4).ok_or_else(|| {
                Error::Io(io::Error::other("no real-time signal SIGRTMIN+4 here"))
            })?;
            let channel = SIGNAL_CHANNEL.fetch_add(1, Ordering::Relaxed) % signal::MAX_CHANNELS;
            let r = signal::Receiver::new(signo, channel)?;
            let t = r.target();
            receiver = Some(r);
            Some(SignalTarget {
                tid: t.tid,
                signo,
                channel,
            })
        } else {
            None
        };
        let req = Request::Open {
            vc: vc_on_the_link(&opts.addr)?,
            // No QoS given: UBR, as the text `ubr` means.
            qos: opts
                .qos
                .unwrap_or_else(|| "ubr".parse().expect("`ubr` is a QoS")),
            path: opts.path,
            notify: opts.notify,
            signal: signal_target,
            buffers: opts.buffers,
            buffer_size: opts.buffer_size,
        };
        let (answer, fds) = {
            let mut c = lock(&self.conn);
            let (answer, fds) = c.request(&req)?;
            if let Response::Opened { handle, .. } = answer
                && opts.path == DataPath::Daemon
            {
                // Under the same lock: the VC's first SDUs may follow the answer closely.
                c.data.insert(handle, RxQueue::default());
            }
            (answer, fds)
        };
        let Response::Opened {
            handle,
            cookie,
            max_sdu,
            buffers,
            lane,
            path,
            ..
        } = answer
        else {
            return Err(protocol(format!("hostd answered an open with {answer:?}")));
        };
        let mut vc = Vc {
            conn: self.conn.clone(),
            handle,
            cookie,
            max_sdu: max_sdu as usize,
            direct: None,
        };
        // The path hostd took: the one asked for, or for `Auto` the lane or the direct path.
        // Anything else would leave this side waiting on the wrong path (`vc` closes again).
        let fits = match opts.path {
            DataPath::Auto => matches!(path, DataPath::Direct | DataPath::Lane),
            asked => asked == path,
        };
        if !fits {
            return Err(protocol(format!(
                "hostd opened a {} path VC for a {} request",
                path.name(),
                opts.path.name()
            )));
        }
        if path == DataPath::Direct {
            // From here on, a failure closes the VC again (Vc's Drop).
            let daemon = lock(&self.conn).stream.try_clone()?;
            vc.direct = Some(Direct::attach(daemon, fds, opts.notify, receiver, buffers)?);
        } else if path == DataPath::Lane {
            let daemon = lock(&self.conn).stream.try_clone()?;
            let shape = lane.ok_or_else(|| protocol("hostd's lane answer has no shape"))?;
            let vc_id = opts
                .addr
                .vc()
                .ok_or_else(|| protocol("hostd opened a VC with no VPI or VCI"))?;
            let setup = LaneSetup {
                handle,
                vc: vc_id,
                max_sdu: max_sdu as usize,
                shape,
            };
            vc.direct = Some(Direct::attach_lane(
                daemon,
                fds,
                opts.notify,
                buffers,
                setup,
            )?);
        }
        Ok(vc)
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

    /// Closes the VC with this cookie (see [`Vc::cookie`]); hostd refuses a cookie of
    /// another connection's VC.
    pub fn close_cookie(&self, cookie: &str) -> Result<(), Error> {
        match lock(&self.conn).request(&Request::Close {
            cookie: cookie.to_string(),
        })? {
            (Response::Closed { .. }, _) => Ok(()),
            (r, _) => Err(protocol(format!("hostd answered close with {r:?}"))),
        }
    }
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

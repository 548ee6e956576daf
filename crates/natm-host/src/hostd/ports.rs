//! hostd's ports: an application's VC as hostd holds it (its memory on each data path,
//! made and revoked here), and the moves of descriptors and completions between the
//! channels and their adapters.

use super::*;

// One per VC, held in a map: the size difference costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub(super) enum ChannelMem {
    Direct {
        end: AdapterEnd,
        /// hostd sleeps on it; the application writes it after posting.
        waiter: Waiter,
        /// Kept so the mapping lives exactly as long as the port.
        _region: Arc<MemfdMem>,
    },
    Daemon {
        bufs: VecBuffers,
        free_tx: Vec<u32>,
    },
    /// The application runs the adapter on its own lane; hostd keeps the channel's
    /// state word and the lane's grant.
    Lane {
        /// For the state word only: hostd never services the channel's rings.
        end: AdapterEnd,
        /// The application's wake eventfd, written on every state change.
        app_wake: OwnedFd,
        /// Side B of the lane's rings, handed to the switch again after a reconnect.
        side_b: natm_link::shm::ShmHandover,
        /// The lane's weight on the switch port's input line (its VC's, as the host's
        /// transmit round would weigh it).
        weight: u32,
        /// The lane request's socket while the switch has the lane: closing it ends it.
        switch: Option<UnixStream>,
        /// A spliced lane's side, label and descriptors (natm-link's `lane` module).
        splice: Option<(
            natm_link::shm::Side,
            natm_link::lane::LaneVc,
            natm_link::shm::ShmHandover,
        )>,
        /// The splice word of the region the application runs (mapped once: the status
        /// reads its rings' indices, a release sets its bit).
        word: Option<natm_link::shm::SpliceWord>,
        _region: Arc<MemfdMem>,
    },
}

/// What hostd can see of a lane the application runs: its rings' indices and the
/// region's splice word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LaneView {
    /// Cells the application's side sent and took since the region was made.
    pub(super) sent: u64,
    pub(super) taken: u64,
    /// Both sides are applications': the switch is off the data path.
    pub(super) spliced: bool,
}

impl ChannelMem {
    /// A lane's application let its side go (closed the VC or died): says so in the
    /// region, before the lane's socket closes, so the switch may take the side back if
    /// the lane was spliced (natm-link's `lane` module). Its own side A, or the side a
    /// splice gave it.
    pub(super) fn release_lane(&self) {
        use natm_link::shm::SpliceWord;
        let Some((region, side)) = self.lane_side() else {
            return;
        };
        match self.lane_word() {
            Some(w) => w.update(SpliceWord::released(side), 0),
            // The word could not be mapped when the lane was made: once more now.
            None => {
                if let Ok(w) = SpliceWord::of(region) {
                    w.update(SpliceWord::released(side), 0);
                }
            }
        }
    }

    /// The region a lane's application runs and its side of it: its own side A, or the
    /// side a splice gave it.
    fn lane_side(&self) -> Option<(&natm_link::shm::ShmHandover, natm_link::shm::Side)> {
        match self {
            ChannelMem::Lane {
                splice: Some((side, _, h)),
                ..
            } => Some((h, *side)),
            ChannelMem::Lane { side_b, .. } => Some((side_b, natm_link::shm::Side::A)),
            _ => None,
        }
    }

    /// That region's splice word, mapped when the lane was made.
    fn lane_word(&self) -> Option<&natm_link::shm::SpliceWord> {
        match self {
            ChannelMem::Lane { word, .. } => word.as_ref(),
            _ => None,
        }
    }

    /// What hostd sees of a lane-path VC ([`LaneView`]); `None` on the other paths.
    /// Spliced means the other side is an application's: side B is one while `HELD_B` is
    /// set and its release bit is not (the switch clears `HELD_B` when it takes B back);
    /// side A, the creator's, is one until its release bit is set (the switch clears
    /// that bit when it hands A to another application).
    pub(super) fn lane_view(&self) -> Option<LaneView> {
        use natm_link::shm::{Side, SpliceWord};
        let (_, side) = self.lane_side()?;
        let w = self.lane_word()?;
        let (sent, taken) = w.cells(side);
        let bits = w.bits();
        let spliced = match side {
            Side::A => bits & SpliceWord::HELD_B != 0 && bits & SpliceWord::released(Side::B) == 0,
            Side::B => bits & SpliceWord::released(Side::A) == 0,
        };
        Some(LaneView {
            sent,
            taken,
            spliced,
        })
    }

    /// Sets a channel's state word, waking the application.
    pub(super) fn set_state(&mut self, state: ChannelState) {
        match self {
            ChannelMem::Direct { end, .. } => end.set_state(state),
            ChannelMem::Lane { end, app_wake, .. } => {
                end.set_state(state);
                // Whatever the application sleeps on, it also polls this eventfd.
                let _ = rustix::io::write(&*app_wake, &1u64.to_ne_bytes());
            }
            ChannelMem::Daemon { .. } => {}
        }
    }
}

/// Asks the switch at `socket` for a lane carrying `vc` at `weight` over `side_b`'s rings;
/// the socket that keeps it, or why not.
pub(super) fn request_lane(
    socket: &Path,
    vc: VcId,
    weight: u32,
    may_splice: bool,
    side_b: &natm_link::shm::ShmHandover,
) -> Result<(UnixStream, natm_link::lane::Grant), String> {
    let sock = UnixStream::connect(socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    let handover = natm_link::shm::ShmLink::dup_handover(side_b).map_err(|e| e.to_string())?;
    let lane_vc = natm_link::lane::LaneVc {
        vpi: vc.vpi.get(),
        vci: vc.vci.get(),
    };
    let grant = natm_link::lane::request(
        &sock,
        &[lane_vc],
        weight,
        may_splice,
        &handover,
        LANE_REQUEST_TIMEOUT,
    )
    .map_err(|e| e.to_string())?;
    sock.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok((sock, grant))
}

/// An application's VC: hostd's side of one host-core channel (which holds its adapter).
pub(super) struct AppChannel {
    pub(super) handle: u32,
    pub(super) vc: VcId,
    pub(super) conn: u64,
    pub(super) owner_pid: i32,
    pub(super) cookie: [u8; 16],
    pub(super) notify: NotifyMode,
    pub(super) mem: ChannelMem,
    /// Completions the channel had no room for, or that hostd made itself (descriptors
    /// posted while the link was down): they go first.
    pub(super) deferred: VecDeque<Completion>,
    pub(super) tx_failed: u64,
    pub(super) client_drops: u64,
}

/// A port's buffers as its adapter sees them.
pub(super) enum ChannelBuffers<'a> {
    Direct(ChannelMemory<'a>),
    Daemon(&'a mut VecBuffers),
}

impl BufferMemory for ChannelBuffers<'_> {
    fn read(&self, id: BufferId, offset: usize, out: &mut [u8]) -> Result<(), MemoryError> {
        match self {
            ChannelBuffers::Direct(m) => m.read(id, offset, out),
            ChannelBuffers::Daemon(m) => m.read(id, offset, out),
        }
    }

    fn write(&mut self, id: BufferId, offset: usize, data: &[u8]) -> Result<(), MemoryError> {
        match self {
            ChannelBuffers::Direct(m) => m.write(id, offset, data),
            ChannelBuffers::Daemon(m) => m.write(id, offset, data),
        }
    }
}

impl HostChannelMemory for AppChannel {
    type Buffers<'a> = ChannelBuffers<'a>;

    fn buffers(&mut self) -> Option<ChannelBuffers<'_>> {
        match &mut self.mem {
            ChannelMem::Direct { end, .. } => Some(ChannelBuffers::Direct(ChannelMemory(end))),
            ChannelMem::Daemon { bufs, .. } => Some(ChannelBuffers::Daemon(bufs)),
            // The switch sends a lane's user data into the lane: cells that reach hostd
            // came before the lane was attached, and go nowhere.
            ChannelMem::Lane { .. } => None,
        }
    }

    /// hostd owns a daemon-path VC's buffers: each frame's goes back to its pool before the
    /// next arrives, so it never runs out of them for want of a pass through `complete`.
    fn frame_at_a_time(&self) -> bool {
        matches!(self.mem, ChannelMem::Daemon { .. })
    }
}

impl Hostd {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn open(
        &mut self,
        id: u64,
        vc: VcId,
        qos: &Qos,
        path: DataPath,
        notify: NotifyMode,
        signal_target: Option<SignalTarget>,
        buffers: u32,
        buffer_size: u32,
        call: Option<natm_host_core::CallId>,
    ) -> Result<(Response, Vec<OwnedFd>), (ErrorKind, String)> {
        let refused = |m: String| (ErrorKind::Refused, m);
        self.host.check_vc(vc).map_err(|e| self.refusal(e))?;
        if self.by_handle.len() >= MAX_CHANNELS {
            return Err(refused(
                OpenError::TooManyChannels { max: MAX_CHANNELS }.to_string(),
            ));
        }
        check_shape(buffers, buffer_size)?;
        // Admission is asked before any memory is made or a lane is asked for, and booked
        // (by `open_vc`) once they are. A call's bandwidth was booked when it was set up.
        if call.is_none() {
            self.host
                .cac()
                .assess(&qos.tx)
                .map_err(|e| refused(e.to_string()))?;
        }
        let owner_pid = self.conns.get(&id).map_or(0, |c| c.pid);
        let direct = || make_channel(buffers, buffer_size, notify, signal_target, owner_pid);
        // Auto: the application's own lane where the link has lanes (the fastest path, no
        // daemon between the application and the switch), else the direct path; a lane the
        // switch refuses falls back to the direct path too.
        let (path, (mem, fds)) = match path {
            DataPath::Auto
                if self.opts.lanes.is_some()
                    && self.impair.is_none()
                    && notify != NotifyMode::Signal =>
            {
                match self.make_lane(vc, qos, buffers, buffer_size, notify) {
                    Ok(made) => (DataPath::Lane, made),
                    Err(_) => {
                        // Counted where `natm stat` shows the host's lane failures.
                        self.stats.lane_failures += 1;
                        (DataPath::Direct, direct()?)
                    }
                }
            }
            DataPath::Auto | DataPath::Direct => (DataPath::Direct, direct()?),
            DataPath::Lane => (
                DataPath::Lane,
                self.make_lane(vc, qos, buffers, buffer_size, notify)?,
            ),
            DataPath::Daemon => (
                DataPath::Daemon,
                (
                    ChannelMem::Daemon {
                        bufs: VecBuffers::new(buffers, buffer_size as usize),
                        free_tx: (buffers / 2..buffers).rev().collect(),
                    },
                    Vec::new(),
                ),
            ),
        };
        let cookie = self.cookies.next();
        let mut config = AdapterConfig::new(buffers, buffer_size as usize);
        config.max_vcs = 1;
        config.max_tx_queued = buffers as usize;
        config.event_queue_max = 64;
        let port = AppChannel {
            handle: 0,
            vc,
            conn: id,
            owner_pid,
            cookie,
            notify,
            mem,
            deferred: VecDeque::new(),
            tx_failed: 0,
            client_drops: 0,
        };
        let ch = self
            .host
            .open_channel(config, port)
            .map_err(|e| self.refusal(e))?;
        let opened = match call {
            None => self.host.open_vc(ch, vc, qos),
            Some(call) => self.host.open_call_vc(call, ch).map_err(|e| match e {
                natm_host_core::CallError::Open(e) => e,
                _ => OpenError::UnknownChannel(ch),
            }),
        };
        let handle = match opened {
            Ok(h) => h,
            Err(e) => {
                // A lane the switch spliced to another application's: say this side is
                // let go, or the switch never takes it back for that peer. (`open_channel`
                // above cannot fail after the checks before `make_lane`.)
                if let Some(p) = self.host.close_channel(ch) {
                    p.mem.release_lane();
                }
                return Err(self.refusal(e));
            }
        };
        let info = *self.host.vc(handle).expect("the VC just opened");
        let link_up = self.link.is_some();
        let (adapter, port) = self.host.channel_mut(ch).expect("the channel just opened");
        port.handle = handle.0;
        if let ChannelMem::Daemon { .. } = port.mem {
            for b in 0..buffers / 2 {
                adapter.post_rx_buffer(BufferId(b));
            }
        }
        if !link_up {
            port.mem.set_state(ChannelState::LinkDown);
        }
        let splice = match &port.mem {
            ChannelMem::Lane {
                splice: Some((side, label, _)),
                ..
            } => Some(proto::LaneSplice {
                side_b: *side == natm_link::shm::Side::B,
                vpi: label.vpi,
                vci: label.vci,
            }),
            _ => None,
        };
        self.by_handle.insert(handle.0, ch);
        self.say_line_weight();
        Ok((
            Response::Opened {
                handle: handle.0,
                cookie: cookie_hex(&cookie),
                path,
                buffers,
                buffer_size,
                max_sdu: info.rx.max_sdu as u32,
                link_up,
                lane: (path == DataPath::Lane).then(|| proto::LaneShape {
                    splice,
                    ..lane_shape(qos, &info.spec)
                }),
                call: None,
            },
            fds,
        ))
    }

    /// A host-core refusal as the client reads it: an in-use VC names its holder's pid.
    pub(super) fn refusal(&self, e: OpenError) -> (ErrorKind, String) {
        let message = match e {
            OpenError::InUse { vc, by, channel } => {
                let pid = self.host.memory(channel).map_or(0, |p| p.owner_pid);
                format!(
                    "VC {vc} is in use by another channel (handle {}, pid {pid})",
                    by.0
                )
            }
            e => e.to_string(),
        };
        (ErrorKind::Refused, message)
    }

    /// Every port.
    pub(super) fn app_channels(&self) -> impl Iterator<Item = &AppChannel> {
        self.host.channel_ids().filter_map(|c| self.host.memory(c))
    }

    /// A lane-path channel: the channel region (the application takes both its ends;
    /// hostd keeps the state word) and a lane the switch has attached, when the link is
    /// up (else it is asked for when the link comes up).
    pub(super) fn make_lane(
        &mut self,
        vc: VcId,
        qos: &Qos,
        buffers: u32,
        buffer_size: u32,
        notify: NotifyMode,
    ) -> Result<(ChannelMem, Vec<OwnedFd>), (ErrorKind, String)> {
        let Some(socket) = self.opts.lanes.clone() else {
            return Err((
                ErrorKind::Refused,
                format!(
                    "the lane path needs a shared-memory link to the switch without emulated impairments; this host's is {}",
                    self.opts.link_description
                ),
            ));
        };
        if !self.impair.is_none() {
            return Err((
                ErrorKind::Refused,
                format!(
                    "the lane path bypasses hostd's link, which is impaired ({}) for now",
                    self.impair
                ),
            ));
        }
        if notify == NotifyMode::Signal {
            return Err((
                ErrorKind::BadRequest,
                "a lane-path application waits by polling or on eventfds, not for signals".into(),
            ));
        }
        let internal =
            |what: &str, e: &dyn std::fmt::Display| (ErrorKind::Internal, format!("{what}: {e}"));
        // hostd writes no completions on this channel: no waker.
        let (mem, mut fds) = make_channel(buffers, buffer_size, NotifyMode::Poll, None, 0)?;
        let ChannelMem::Direct { end, _region, .. } = mem else {
            return Err(internal("channel", &"not a shared-memory channel"));
        };
        let app_wake = fds[1].try_clone().map_err(|e| internal("dup", &e))?;
        let (a, b) = natm_link::shm::ShmLink::create_detached(natm_link::lane::LANE_RING_CELLS)
            .map_err(|e| internal("lane rings", &e))?;
        let weight = self.host.weight_of(&qos.tx);
        let (switch, grant) = match self.link {
            Some(_) => {
                let (sock, grant) = request_lane(&socket, vc, weight, true, &b)
                    .map_err(|e| (ErrorKind::Refused, format!("lane for VC {vc}: {e}")))?;
                (Some(sock), grant)
            }
            None => (None, natm_link::lane::Grant::Taken),
        };
        let splice = match grant {
            natm_link::lane::Grant::Taken => {
                fds.extend([a.region, a.wait, a.kick]);
                None
            }
            natm_link::lane::Grant::Spliced(s) => {
                let kept = natm_link::shm::ShmLink::dup_handover(&s.handover)
                    .map_err(|e| internal("dup", &e))?;
                fds.extend([s.handover.region, s.handover.wait, s.handover.kick]);
                Some((s.side, s.label, kept))
            }
        };
        let word = natm_link::shm::SpliceWord::of(splice.as_ref().map_or(&b, |s| &s.2)).ok();
        Ok((
            ChannelMem::Lane {
                end,
                app_wake,
                side_b: b,
                weight,
                switch,
                splice,
                word,
                _region,
            },
            fds,
        ))
    }

    /// Closes an application's VC; a call's is released first (cause 16) unless it ended.
    pub(super) fn close_app_channel(&mut self, handle: u32) {
        // What the application handed over (a daemon-path send, descriptors taken from a
        // direct channel) goes to the link before the call's RELEASE and before the channel
        // and its queued cells go: closing right after a send lost the SDU.
        self.transmit();
        self.release_call_of(handle);
        let Some(ch) = self.by_handle.remove(&handle) else {
            return;
        };
        // The adapter and the reservation go here; a lane's socket, the buffers and the
        // mapping go with the port.
        if let (Some(a), Some(p)) = (self.host.adapter(ch), self.host.memory(ch)) {
            let last = VcStats::from_adapter(&a.counters(), p.client_drops, p.tx_failed);
            self.closed.add(&last);
        }
        if let Some(mut p) = self.host.close_channel(ch) {
            p.mem.release_lane();
            p.mem.set_state(ChannelState::Revoked);
        }
        self.say_line_weight();
    }
    /// Takes descriptors and free buffers from every direct channel.
    pub(super) fn take_posts(&mut self) -> bool {
        let now = self.now;
        let link_up = self.link.is_some();
        let mut progress = false;
        let mut broken = Vec::new();
        for (_, adapter, p) in self.host.channels_mut() {
            let AppChannel {
                mem: ChannelMem::Direct { end, .. },
                deferred,
                tx_failed,
                ..
            } = p
            else {
                continue;
            };
            let taken = driver::take_posts(
                end,
                adapter,
                |adapter, req| {
                    let (buffer, len) = (BufferId(req.buffer.0), req.len as usize);
                    if link_up {
                        adapter.post_tx(now, buffer, len, req.handle);
                    } else {
                        deferred.push_back(Completion {
                            buffer,
                            direction: Direction::Tx,
                            handle: Some(req.handle),
                            len,
                            status: Status::Aborted,
                        });
                    }
                },
                // A refused descriptor is a failed transmission; a refused free buffer
                // is skipped.
                |dir| *tx_failed += u64::from(dir == Direction::Tx),
            );
            match taken {
                Ok(n) => progress |= n > 0,
                Err(_) => {
                    broken.push(p.handle);
                    progress = true;
                }
            }
        }
        for h in broken {
            // The application broke its rings: that channel is revoked, its VC closed.
            let conn = self.app_channels().find(|p| p.handle == h).map(|p| p.conn);
            self.close_app_channel(h);
            if let Some(c) = conn.and_then(|c| self.conns.get_mut(&c)) {
                c.send(&Response::Revoked { handle: h });
            }
        }
        progress
    }

    /// Hands completed buffers back: to the channel, or (daemon path) to the client as
    /// data frames and to the VC's pools.
    pub(super) fn complete(&mut self) -> bool {
        let link_down = self.link.is_none();
        let mut progress = false;
        let Hostd { host, conns, .. } = self;
        for (_, adapter, p) in host.channels_mut() {
            progress |= complete_channel(adapter, p, conns, link_down);
        }
        progress
    }
}

/// Hands one port's completed buffers back (see [`Hostd::complete`]).
pub(super) fn complete_channel(
    adapter: &mut Adapter,
    p: &mut AppChannel,
    conns: &mut BTreeMap<u64, Conn>,
    link_down: bool,
) -> bool {
    let mut progress = false;
    while let Some(c) = p.deferred.pop_front().or_else(|| adapter.poll_completion()) {
        progress = true;
        if link_down && c.status == Status::Aborted && c.direction == Direction::Tx {
            p.tx_failed += 1;
        }
        match &mut p.mem {
            ChannelMem::Direct { end, .. } => {
                let code = if link_down && c.status == Status::Aborted {
                    proto::STATUS_LINK_DOWN
                } else {
                    status_code(c.status)
                };
                if let Err(nic::ChannelError::Full) = driver::complete_to_channel(end, &c, code) {
                    p.deferred.push_front(c);
                    break;
                }
            }
            ChannelMem::Daemon { bufs, free_tx } => match c.direction {
                Direction::Tx => {
                    if c.status != Status::Ok {
                        p.tx_failed += 1;
                    }
                    free_tx.push(c.buffer.0);
                }
                Direction::Rx => {
                    if c.status == Status::Ok
                        && let Some(conn) = conns.get_mut(&p.conn)
                    {
                        if conn.out_bytes > MAX_CLIENT_BACKLOG {
                            p.client_drops += 1;
                        } else if let Some(b) = bufs.buffer(c.buffer) {
                            conn.push(proto::data_frame(p.handle, &b[..c.len]), Vec::new());
                        }
                    }
                    if matches!(c.status, Status::Ok | Status::Aborted) {
                        adapter.post_rx_buffer(c.buffer);
                    }
                }
            },
            ChannelMem::Lane { .. } => {}
        }
    }
    progress
}

/// Checks a VC's buffers: 2..=[`MAX_VC_BUFFERS`] of a multiple of 64 bytes up to 1 MiB,
/// [`MAX_VC_BYTES`] in all.
pub(super) fn check_shape(buffers: u32, buffer_size: u32) -> Result<(), (ErrorKind, String)> {
    let bad = |m: String| (ErrorKind::BadRequest, m);
    if !(2..=MAX_VC_BUFFERS).contains(&buffers) {
        return Err(bad(format!(
            "buffers {buffers} is not in 2..={MAX_VC_BUFFERS}"
        )));
    }
    if buffer_size == 0 || !buffer_size.is_multiple_of(64) || buffer_size > (1 << 20) {
        return Err(bad(format!(
            "buffer_size {buffer_size} is not a multiple of 64 in 64..=1048576"
        )));
    }
    let bytes = u64::from(buffers) * u64::from(buffer_size);
    if bytes > MAX_VC_BYTES {
        return Err(bad(format!(
            "{buffers} buffers of {buffer_size} bytes are {bytes} bytes, above the {MAX_VC_BYTES} a VC may have"
        )));
    }
    Ok(())
}

/// Creates a direct-path channel: region, adapter end and the three descriptors for the
/// application.
pub(super) fn make_channel(
    buffers: u32,
    buffer_size: u32,
    notify: NotifyMode,
    signal_target: Option<SignalTarget>,
    owner_pid: i32,
) -> Result<(ChannelMem, Vec<OwnedFd>), (ErrorKind, String)> {
    let internal =
        |what: &str, e: &dyn std::fmt::Display| (ErrorKind::Internal, format!("{what}: {e}"));
    let entries = buffers.next_power_of_two();
    let cfg = ChannelConfig {
        tx_entries: entries,
        rx_entries: entries,
        completion_entries: 2 * entries,
        buffer_size,
        buffer_count: buffers,
    };
    let layout = cfg
        .layout()
        .map_err(|e| (ErrorKind::BadRequest, format!("channel shape: {e}")))?;
    let region = Arc::new(
        MemfdMem::create("natm-channel", layout.region_size)
            .map_err(|e| internal("channel region", &e))?,
    );
    let memfd = region
        .fd()
        .try_clone_to_owned()
        .map_err(|e| internal("dup", &e))?;
    let ch = Channel::create(region.clone(), &cfg).map_err(|e| internal("channel", &e))?;
    let mut end = ch.adapter().map_err(|e| internal("channel", &e))?;
    // The eventfd the application sleeps on: hostd writes it.
    let (app_waiter, app_waker) = Waiter::eventfd().map_err(|e| internal("eventfd", &e))?;
    let app_fd = app_waiter
        .as_fd()
        .expect("an eventfd waiter has a descriptor")
        .try_clone_to_owned()
        .map_err(|e| internal("dup", &e))?;
    // The eventfd hostd sleeps on: the application writes it.
    let (waiter, _) = Waiter::eventfd().map_err(|e| internal("eventfd", &e))?;
    let kick_fd = waiter
        .as_fd()
        .expect("an eventfd waiter has a descriptor")
        .try_clone_to_owned()
        .map_err(|e| internal("dup", &e))?;
    let waker = match notify {
        // A polling application sleeps on it too when its CPUs are crowded.
        NotifyMode::Poll | NotifyMode::Adaptive | NotifyMode::EventFd => app_waker,
        NotifyMode::Signal => {
            let Some(t) = signal_target else {
                return Err((
                    ErrorKind::BadRequest,
                    "notify = signal needs a signal target (tid, signo, channel)".into(),
                ));
            };
            if t.channel >= signal::MAX_CHANNELS {
                return Err((
                    ErrorKind::BadRequest,
                    format!(
                        "signal channel {} is not below {}",
                        t.channel,
                        signal::MAX_CHANNELS
                    ),
                ));
            }
            if !signal::is_rt_signal(t.signo) {
                return Err((
                    ErrorKind::BadRequest,
                    format!("signal {} is not a real-time signal", t.signo),
                ));
            }
            // Only a thread of the connecting process may be signalled.
            if !Path::new(&format!("/proc/{owner_pid}/task/{}", t.tid)).exists() {
                return Err((
                    ErrorKind::Refused,
                    format!("thread {} is not a thread of pid {owner_pid}", t.tid),
                ));
            }
            Waker::Signal(natm_nic::notify::SignalWaker::new(signal::Target {
                pid: owner_pid,
                tid: t.tid,
                signo: t.signo,
                channel: t.channel,
            }))
        }
    };
    end.set_waker(waker);
    Ok((
        ChannelMem::Direct {
            end,
            waiter,
            _region: region,
        },
        vec![memfd, app_fd, kick_fd],
    ))
}

/// How a lane's application shapes its VC: to the contract, except a UBR VC without a rate
/// of its own, which the switch port's input line keeps to the link's rate (natm-switchd's
/// `InputLine`): shaped in the application as well, its cells after the first would wait
/// for the application's next call.
fn lane_shape(qos: &Qos, spec: &natm_traffic::sched::VcSpec) -> proto::LaneShape {
    let mut shape = proto::LaneShape::from_spec(spec);
    let own_rate = [qos.tx.pcr, qos.tx.max_pcr]
        .iter()
        .any(|r| !r.is_zero() && *r != natm_core::Pcr::Max);
    if shape.category == proto::LaneCategory::Ubr && !own_rate {
        shape.pcr = 0;
    }
    shape
}

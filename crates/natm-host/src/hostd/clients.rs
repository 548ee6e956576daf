//! hostd's channel manager: the clients' connections, their requests, the daemon path's
//! SDUs, pings and status.

use super::*;

/// One frame waiting to be written to a client.
pub(super) struct Outgoing {
    pub(super) bytes: Vec<u8>,
    pub(super) at: usize,
    pub(super) fds: Vec<OwnedFd>,
}

pub(super) struct Conn {
    pub(super) stream: UnixStream,
    pub(super) pid: i32,
    pub(super) rbuf: proto::FrameBuf,
    pub(super) out: VecDeque<Outgoing>,
    pub(super) out_bytes: usize,
    /// A daemon-path SDU waiting for a free buffer: the connection is not read meanwhile.
    pub(super) stalled: Option<(u32, Vec<u8>)>,
    /// A ping's or a call's answer is outstanding: requests after it wait (answers go in
    /// order).
    pub(super) awaiting: bool,
    /// Close once the output is written (refused peer, unparseable framing).
    pub(super) closing: bool,
    pub(super) dead: bool,
}

impl Conn {
    pub(super) fn send(&mut self, r: &Response) {
        self.push(proto::control_frame(r), Vec::new());
    }

    pub(super) fn push(&mut self, bytes: Vec<u8>, fds: Vec<OwnedFd>) {
        self.out_bytes += bytes.len();
        self.out.push_back(Outgoing { bytes, at: 0, fds });
    }

    pub(super) fn refuse(&mut self, kind: ErrorKind, message: impl Into<String>) {
        self.send(&Response::Error {
            kind,
            message: message.into(),
        });
    }

    /// Writes what the socket takes now.
    pub(super) fn flush(&mut self) -> bool {
        let mut progress = false;
        while let Some(o) = self.out.front_mut() {
            let fds: Vec<BorrowedFd<'_>> = o.fds.iter().map(|f| f.as_fd()).collect();
            match proto::send_with_fds(&self.stream, &o.bytes[o.at..], &fds) {
                Ok(0) => break,
                Ok(n) => {
                    progress = true;
                    o.at += n;
                    // Descriptors went with the first byte.
                    o.fds.clear();
                    self.out_bytes -= n;
                    if o.at == o.bytes.len() {
                        self.out.pop_front();
                    }
                }
                Err(_) => {
                    self.dead = true;
                    break;
                }
            }
        }
        progress
    }
}

pub(super) fn cookie_hex(c: &[u8; 16]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(32);
    for b in c {
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    s
}

pub(super) fn parse_cookie(s: &str) -> Option<[u8; 16]> {
    if s.len() != 32 || !s.is_ascii() {
        return None;
    }
    let mut c = [0u8; 16];
    for (i, b) in c.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(c)
}

impl Hostd {
    // ------------------------------------------------------------------ clients

    pub(super) fn accept(&mut self) -> bool {
        let mut any = false;
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    any = true;
                    self.add_conn(stream);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return any,
            }
        }
    }

    pub(super) fn add_conn(&mut self, stream: UnixStream) {
        if stream.set_nonblocking(true).is_err() {
            return;
        }
        let cred = rustix::net::sockopt::socket_peercred(&stream);
        let id = self.next_conn;
        self.next_conn += 1;
        let mut conn = Conn {
            stream,
            pid: 0,
            rbuf: proto::FrameBuf::new(),
            out: VecDeque::new(),
            out_bytes: 0,
            stalled: None,
            awaiting: false,
            closing: false,
            dead: false,
        };
        match cred {
            Ok(c) if peer_allowed(c.uid.as_raw(), self.own_uid) => {
                conn.pid = c.pid.as_raw_nonzero().get();
            }
            Ok(c) => {
                conn.refuse(
                    ErrorKind::Refused,
                    format!(
                        "uid {} may not use this hostd (it serves uid {} and root)",
                        c.uid.as_raw(),
                        self.own_uid
                    ),
                );
                conn.closing = true;
            }
            Err(e) => {
                conn.refuse(ErrorKind::Refused, format!("SO_PEERCRED failed: {e}"));
                conn.closing = true;
            }
        }
        self.conns.insert(id, conn);
    }

    /// One `poll(2)` without waiting over the listener and the clients: whether the
    /// listener has a connection, and which clients have bytes (or hung up).
    pub(super) fn readable_sockets(&mut self) -> io::Result<(bool, Vec<u64>)> {
        use rustix::event::{PollFd, PollFlags};
        let mut fds = Vec::with_capacity(1 + self.conns.len());
        fds.push(PollFd::new(&self.listener, PollFlags::IN));
        for c in self.conns.values() {
            fds.push(PollFd::new(&c.stream, PollFlags::IN));
        }
        match rustix::event::poll(&mut fds, Some(&rustix::event::Timespec::default())) {
            Ok(0) | Err(rustix::io::Errno::INTR) => return Ok((false, Vec::new())),
            Ok(_) => {}
            Err(e) => return Err(e.into()),
        }
        let ready = |f: &PollFd<'_>| !f.revents().is_empty();
        let listener = ready(&fds[0]);
        let conns = self
            .conns
            .keys()
            .zip(&fds[1..])
            .filter(|(_, f)| ready(f))
            .map(|(id, _)| *id)
            .collect();
        Ok((listener, conns))
    }

    pub(super) fn read_clients(&mut self, readable: &[u64]) -> bool {
        let mut progress = false;
        let ids: Vec<u64> = self.conns.keys().copied().collect();
        for id in ids {
            progress |= self.retry_stalled(id);
            let Some(c) = self.conns.get_mut(&id) else {
                continue;
            };
            if c.closing || c.dead {
                continue;
            }
            let buf = &mut self.scratch[..];
            // Read only while nothing waits: a stalled SDU or a ping holds the rest back.
            // A client that does not read its answers is not read either.
            while readable.contains(&id)
                && c.out_bytes <= MAX_CLIENT_BACKLOG
                && c.stalled.is_none()
                && !c.awaiting
                && c.rbuf.len() < 2 * proto::MAX_FRAME
            {
                match c.stream.read(buf) {
                    Ok(0) => {
                        c.dead = true;
                        break;
                    }
                    Ok(n) => {
                        progress = true;
                        c.rbuf.extend(&buf[..n]);
                        if n < buf.len() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        c.dead = true;
                        break;
                    }
                }
            }
            progress |= self.handle_frames(id);
        }
        progress
    }

    pub(super) fn handle_frames(&mut self, id: u64) -> bool {
        let mut progress = false;
        loop {
            let Some(c) = self.conns.get_mut(&id) else {
                return progress;
            };
            if c.stalled.is_some() || c.awaiting || c.closing || c.out_bytes > MAX_CLIENT_BACKLOG {
                return progress;
            }
            let Some(frame) = c.rbuf.next_frame::<Request>().transpose() else {
                return progress;
            };
            progress = true;
            match frame {
                Ok(Frame::Control(r)) => self.request(id, r),
                Ok(Frame::Data { handle, sdu }) => self.daemon_send(id, handle, sdu),
                Err(e @ (FrameError::BadLength(_) | FrameError::BadKind(_))) => {
                    // No way to find the next frame, or no way to read it: answer and
                    // hang up.
                    c.refuse(ErrorKind::BadRequest, e.to_string());
                    c.closing = true;
                }
                Err(e) => c.refuse(ErrorKind::BadRequest, e.to_string()),
            }
        }
    }

    pub(super) fn flush_clients(&mut self) -> bool {
        let mut progress = false;
        for c in self.conns.values_mut() {
            progress |= c.flush();
            if c.closing && c.out.is_empty() {
                c.dead = true;
            }
        }
        progress
    }

    /// Drops closed connections and everything they held.
    pub(super) fn reap(&mut self) {
        let dead: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| c.dead)
            .map(|(id, _)| *id)
            .collect();
        for id in dead {
            // Its calls are released (cause 31) before their VCs go.
            self.drop_calls_of(id);
            let owned: Vec<u32> = self
                .app_channels()
                .filter(|p| p.conn == id)
                .map(|p| p.handle)
                .collect();
            for h in owned {
                self.close_app_channel(h);
            }
            self.pings.retain(|_, conn| *conn != id);
            self.conns.remove(&id);
        }
    }

    // ----------------------------------------------------------------- requests

    pub(super) fn reply(&mut self, id: u64, r: Response) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.send(&r);
        }
    }

    pub(super) fn request(&mut self, id: u64, r: Request) {
        match r {
            Request::Open {
                vc,
                qos,
                path,
                notify,
                signal,
                buffers,
                buffer_size,
            } => {
                let r = self.open(
                    id,
                    vc,
                    &qos,
                    path,
                    notify,
                    signal,
                    buffers,
                    buffer_size,
                    None,
                );
                match r {
                    Ok((resp, fds)) => {
                        if let Some(c) = self.conns.get_mut(&id) {
                            c.push(proto::control_frame(&resp), fds);
                        }
                    }
                    Err((kind, message)) => self.reply(id, Response::Error { kind, message }),
                }
            }
            Request::Close { cookie, quiet } => {
                let r = self.close_request(id, &cookie);
                // A quiet close's refusal (a cookie not this connection's) goes unsaid.
                if !quiet {
                    self.reply(id, r);
                }
            }
            Request::Ping {
                vc,
                segment,
                correlation,
                timeout_ms,
            } => self.ping(id, vc, segment, correlation, timeout_ms),
            Request::Status => {
                let s = self.status();
                self.reply(id, Response::Status(s));
            }
            Request::Impair { impair } => {
                let r = match self.set_impairments(&impair) {
                    Ok(impair) => Response::Impaired { impair },
                    Err((kind, message)) => Response::Error { kind, message },
                };
                self.reply(id, r);
            }
            Request::Call {
                called,
                qos,
                path,
                notify,
                signal,
                buffers,
                buffer_size,
                timeout_ms,
            } => {
                let shape = Shape {
                    path,
                    notify,
                    signal,
                    buffers,
                    buffer_size,
                };
                self.call_request(id, called, &qos, shape, timeout_ms);
            }
            Request::Listen { selector, accept } => self.listen_request(id, selector, accept),
            Request::Accept {
                call,
                path,
                notify,
                signal,
                buffers,
                buffer_size,
            } => {
                let shape = Shape {
                    path,
                    notify,
                    signal,
                    buffers,
                    buffer_size,
                };
                self.accept_request(id, call, shape);
            }
            Request::Reject { call, cause } => self.reject_request(id, call, cause),
        }
    }

    pub(super) fn close_request(&mut self, id: u64, cookie: &str) -> Response {
        let refused = |m: &str| Response::Error {
            kind: ErrorKind::Refused,
            message: m.to_string(),
        };
        let Some(c) = parse_cookie(cookie) else {
            return refused("unknown cookie (not 32 hex digits)");
        };
        let Some(p) = self.app_channels().find(|p| p.cookie == c) else {
            return refused("unknown cookie");
        };
        if p.conn != id {
            return refused("cookie belongs to another application");
        }
        let handle = p.handle;
        self.close_app_channel(handle);
        Response::Closed { handle }
    }

    pub(super) fn daemon_send(&mut self, id: u64, handle: u32, sdu: Vec<u8>) {
        let link_up = self.link.is_some();
        let now = self.now;
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        let Some((adapter, p)) = self
            .by_handle
            .get(&handle)
            .and_then(|ch| self.host.channel_mut(*ch))
            .filter(|(_, p)| p.conn == id)
        else {
            c.refuse(
                ErrorKind::Refused,
                format!("data for handle {handle}, which is not a VC of this connection"),
            );
            return;
        };
        let ChannelMem::Daemon { bufs, free_tx } = &mut p.mem else {
            c.refuse(
                ErrorKind::Refused,
                format!("handle {handle} is a direct-path channel: send through the channel"),
            );
            return;
        };
        if sdu.is_empty() || sdu.len() > bufs.size().min(65535) {
            p.tx_failed += 1;
            c.refuse(
                ErrorKind::Refused,
                format!(
                    "SDU of {} bytes on handle {handle}: not in 1..={}",
                    sdu.len(),
                    bufs.size().min(65535)
                ),
            );
            return;
        }
        if !link_up {
            p.tx_failed += 1;
            return;
        }
        let Some(b) = free_tx.pop() else {
            c.stalled = Some((handle, sdu));
            return;
        };
        let buf = bufs
            .buffer_mut(BufferId(b))
            .expect("free list holds the VC's own buffer ids");
        buf[..sdu.len()].copy_from_slice(&sdu);
        adapter.post_tx(now, BufferId(b), sdu.len(), handle);
    }

    pub(super) fn retry_stalled(&mut self, id: u64) -> bool {
        let Some(c) = self.conns.get_mut(&id) else {
            return false;
        };
        let Some((handle, sdu)) = c.stalled.take() else {
            return false;
        };
        self.daemon_send(id, handle, sdu);
        self.conns.get(&id).is_some_and(|c| c.stalled.is_none())
    }

    pub(super) fn ping(&mut self, id: u64, vc: VcId, segment: bool, tag: u32, timeout_ms: u64) {
        let timeout = natm_core::Duration::from_millis(timeout_ms.min(60_000));
        match self.host.ping(self.now, vc, segment, tag, timeout) {
            Ok(ping) => {
                self.pings.insert(ping, id);
                if let Some(c) = self.conns.get_mut(&id) {
                    c.awaiting = true;
                }
            }
            Err(e) => self.reply(
                id,
                Response::Error {
                    kind: ErrorKind::LinkDown,
                    message: e.to_string(),
                },
            ),
        }
    }

    /// Answers the clients whose pings ended (`link_down`: why the link went) and those
    /// whose calls moved.
    pub(super) fn events(&mut self, link_down: Option<&str>) {
        while let Some(e) = self.host.poll_event() {
            let (ping, r) = match e {
                Event::PingReply { ping, rtt } => (
                    ping,
                    Response::Pong {
                        rtt_ns: rtt.as_nanos(),
                    },
                ),
                Event::PingTimeout { ping, vc, segment } => {
                    let scope = if segment { "segment" } else { "end-to-end" };
                    (
                        ping,
                        Response::Error {
                            kind: ErrorKind::Timeout,
                            message: format!("no {scope} loopback reply on {vc} in time"),
                        },
                    )
                }
                Event::PingFailed { ping } => (
                    ping,
                    Response::Error {
                        kind: ErrorKind::LinkDown,
                        message: format!("link down: {}", link_down.unwrap_or("link lost")),
                    },
                ),
                Event::IncomingCall(i) => {
                    self.incoming(&i);
                    continue;
                }
                Event::CallConnected { call, vc } => {
                    self.connected(call, vc);
                    continue;
                }
                Event::CallReleased { call, cause, .. } => {
                    self.released(call, &cause);
                    continue;
                }
                Event::SignallingUp | Event::SignallingDown => continue,
            };
            if let Some(c) = self
                .pings
                .remove(&ping)
                .and_then(|c| self.conns.get_mut(&c))
            {
                c.awaiting = false;
                c.send(&r);
            }
        }
    }

    /// [`Request::Impair`]: parses `text`, puts the impairments in front of the link (now
    /// and at every reconnect) and returns their text. Refused while a lane-path VC is
    /// open: its cells bypass hostd's link.
    pub(super) fn set_impairments(&mut self, text: &str) -> Result<String, (ErrorKind, String)> {
        let impair: Impairments = text
            .parse()
            .map_err(|e| (ErrorKind::BadRequest, format!("impairments {text:?}: {e}")))?;
        let lanes = self
            .app_channels()
            .filter(|p| matches!(p.mem, ChannelMem::Lane { .. }))
            .count();
        if !impair.is_none() && lanes > 0 {
            return Err((
                ErrorKind::Refused,
                format!(
                    "{lanes} lane-path VC(s) open: their cells bypass hostd's link, so they \
                     would not be impaired; close them first"
                ),
            ));
        }
        if let Some(l) = self.link.take() {
            self.link = Some(with_impairments(l, &impair));
        }
        self.impair = impair;
        // Said where `natm stat` and `natm lab status` show the link, so that a run that
        // was killed before it cleared its impairment is seen.
        let (description, shown) = if impair.is_none() {
            (self.opts.link_description.clone(), String::new())
        } else {
            let shown = impair.to_string();
            let d = format!(
                "{}, impaired at run time {shown}",
                self.opts.link_description
            );
            (d, shown)
        };
        self.stats.description = description;
        self.stats.impair = shown.clone();
        Ok(shown)
    }

    pub(super) fn status(&self) -> HostStatus {
        let channels = self
            .host
            .channel_ids()
            .filter_map(|ch| Some((self.host.adapter(ch)?, self.host.memory(ch)?)))
            .map(|(adapter, p)| {
                let c = adapter.counters();
                let lane = p.mem.lane_view();
                let qos = self
                    .host
                    .vc(natm_host_core::VcHandle(p.handle))
                    .map_or(String::new(), |v| v.qos.to_string());
                ChannelStatus {
                    handle: p.handle,
                    vc: p.vc.to_string(),
                    qos,
                    owner_pid: p.owner_pid,
                    notify: p.notify,
                    path: match p.mem {
                        ChannelMem::Direct { .. } => DataPath::Direct,
                        ChannelMem::Daemon { .. } => DataPath::Daemon,
                        ChannelMem::Lane { .. } => DataPath::Lane,
                    },
                    counters: match lane {
                        Some(l) => VcStats {
                            cells_sent: l.sent,
                            cells_received: l.taken,
                            ..VcStats::default()
                        },
                        None => VcStats::from_adapter(&c, p.client_drops, p.tx_failed),
                    },
                    tx_queued: adapter.tx_queued() as u64,
                    rx_free: adapter.free_rx_buffers() as u64,
                    spliced: lane.is_some_and(|l| l.spliced),
                }
            })
            .collect();
        let mut link = self.stats.clone();
        link.up = self.link.is_some();
        let hc = self.host.counters();
        link.rx_unknown_vc = hc.rx_unknown_vc;
        link.rx_oam = hc.rx_oam;
        link.loopbacks_answered = hc.loopbacks_answered;
        link.lost_on_failure = hc.lost_on_failure;
        if let Some(l) = &self.link {
            // Counts of earlier links were added up when they failed.
            let c = l.counters();
            link.tx_cells += c.tx_cells;
            link.rx_cells += c.rx_cells;
            link.rx_lost += c.rx_lost;
            link.warning = l.setup_warning();
        }
        HostStatus {
            name: self.opts.name.clone(),
            pid: std::process::id(),
            link,
            cac: CacStatus {
                capacity: self.host.cac().config().capacity,
                cbr: self.host.cac().reserved_cbr(),
                vbr: self.host.cac().reserved_vbr(),
                ubr: self.host.cac().ubr_count(),
            },
            channels,
            closed: Box::new(self.closed),
            vm_rss_bytes: natm_nic::procfs::resident_bytes(None).unwrap_or(0),
            address: self.host.address(),
            signalling_up: self.host.is_signalling_up(),
            calls: self.call_status(),
        }
    }
}

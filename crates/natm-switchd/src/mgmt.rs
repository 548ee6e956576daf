//! The management socket's server side: JSON lines on a Unix stream socket, the protocol
//! of [`natm_proto::switchd`] (summarised in the crate documentation).
//!
//! Non-blocking throughout: the daemon loop calls [`Management::service`] between
//! forwarding steps; a client that does not read its replies or its capture stream only
//! loses capture lines (counted, [`OUT_LIMIT`]) and, past a hard limit on replies, its
//! connection. Only a peer with the daemon's uid, or root, is served (SO_PEERCRED).

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant as StdInstant, SystemTime, UNIX_EPOCH};

use natm_core::{HeaderFormat, VcId};
use natm_link::shm::Side;
use natm_proto::switchd::{
    self as proto, Connect, ConnectionStatus, ErrorKind, LaneStatus, PortStatus, Refusal, Request,
    Response, SwitchStatus,
};
use natm_switch::{
    CATEGORIES, Category, DirCounters, PortCounters, PortId, SwitchError, Upc, XcId,
};

use crate::config::XcText;
use crate::fabric::{Fabric, Tapped};

/// Capture lines waiting for a slow client beyond which new ones are dropped (bytes).
pub const OUT_LIMIT: usize = 4 << 20;
/// A request line longer than this closes the connection (bytes).
pub const LINE_LIMIT: usize = 64 << 10;

/// What the daemon tells the management layer about itself.
pub struct DaemonInfo<'a> {
    /// The switch's name.
    pub name: &'a str,
    /// When the daemon started.
    pub started: StdInstant,
    /// Each port's link description, by port.
    pub links: &'a [(PortId, String)],
    /// Set by a `shutdown` request.
    pub stop: &'a Arc<AtomicBool>,
}

struct Client {
    stream: UnixStream,
    input: Vec<u8>,
    output: Vec<u8>,
    /// The port being captured, and for one VC the header bits to match (`mask`, `value`).
    capture: Option<(PortId, Option<Filter>)>,
    capture_dropped: u64,
    closed: bool,
}

/// The listening socket and its clients.
pub struct Management {
    listener: UnixListener,
    path: PathBuf,
    clients: Vec<Client>,
    uid: u32,
    /// Nanoseconds since the Unix epoch at the fabric's time zero, for capture stamps.
    unix_base_ns: u64,
}

/// Why the management socket could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("management socket {path}: {source}")]
pub struct MgmtError {
    /// The path.
    pub path: PathBuf,
    /// What failed.
    pub source: io::Error,
}

impl Management {
    /// Binds the socket at `path` (replacing a stale socket file nobody listens on).
    pub fn bind(path: &Path, fabric: &Fabric) -> Result<Management, MgmtError> {
        let err = |source| MgmtError {
            path: path.to_path_buf(),
            source,
        };
        let listener = match UnixListener::bind(path) {
            Ok(l) => l,
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                let stale = std::fs::symlink_metadata(path)
                    .is_ok_and(|m| m.file_type().is_socket())
                    && UnixStream::connect(path).is_err();
                if !stale {
                    return Err(err(e));
                }
                std::fs::remove_file(path).map_err(err)?;
                UnixListener::bind(path).map_err(err)?
            }
            Err(e) => return Err(err(e)),
        };
        listener.set_nonblocking(true).map_err(err)?;
        let since_zero = fabric.epoch.elapsed().as_nanos();
        let unix_now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        Ok(Management {
            listener,
            path: path.to_path_buf(),
            clients: Vec::new(),
            uid: rustix::process::getuid().as_raw(),
            unix_base_ns: unix_now.saturating_sub(since_zero),
        })
    }

    /// Descriptors to wake on: the listener and every client.
    pub fn poll_fds(&self) -> impl Iterator<Item = BorrowedFd<'_>> {
        std::iter::once(self.listener.as_fd()).chain(self.clients.iter().map(|c| c.stream.as_fd()))
    }

    /// Whether some client waits for its output to be written.
    pub fn has_output(&self) -> bool {
        self.clients.iter().any(|c| !c.output.is_empty())
    }

    /// Accepts clients, answers complete request lines, streams captured cells, writes
    /// what the clients take, and drops closed clients. Returns whether anything happened.
    pub fn service(&mut self, fabric: &mut Fabric, info: &DaemonInfo<'_>) -> bool {
        let mut busy = false;
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    busy = true;
                    self.admit(stream);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        for i in 0..self.clients.len() {
            busy |= self.read_and_answer(i, fabric, info);
        }
        if !fabric.tapped.is_empty() {
            busy = true;
            self.fan_out(fabric);
        }
        for c in &mut self.clients {
            flush(c);
        }
        let before = self.clients.len();
        self.clients.retain(|c| !c.closed);
        if self.clients.iter().all(|c| c.capture.is_none()) {
            fabric.tap_ports.clear();
        } else {
            let mut ports: Vec<PortId> = self
                .clients
                .iter()
                .filter_map(|c| c.capture.map(|(p, _)| p))
                .collect();
            ports.sort();
            ports.dedup();
            fabric.tap_ports = ports;
        }
        busy || before != self.clients.len()
    }

    fn admit(&mut self, stream: UnixStream) {
        let allowed = rustix::net::sockopt::socket_peercred(&stream)
            .map(|c| c.uid.as_raw() == self.uid || c.uid.is_root())
            .unwrap_or(false);
        if stream.set_nonblocking(true).is_err() {
            return;
        }
        let mut c = Client {
            stream,
            input: Vec::new(),
            output: Vec::new(),
            capture: None,
            capture_dropped: 0,
            closed: false,
        };
        if !allowed {
            reply(
                &mut c,
                &Response::Error(Refusal::new(
                    ErrorKind::PermissionDenied,
                    "permission denied: only the daemon's user (or root) may manage this switch",
                )),
            );
            flush(&mut c);
            c.closed = true;
            return;
        }
        self.clients.push(c);
    }

    fn read_and_answer(&mut self, i: usize, fabric: &mut Fabric, info: &DaemonInfo<'_>) -> bool {
        let mut busy = false;
        let mut buf = [0u8; 4096];
        // A budget per call, so a client that writes without pause cannot hold the loop.
        let mut budget = LINE_LIMIT;
        while budget > 0 {
            let c = &mut self.clients[i];
            match c.stream.read(&mut buf) {
                Ok(0) => {
                    c.closed = true;
                    break;
                }
                Ok(n) => {
                    busy = true;
                    budget = budget.saturating_sub(n);
                    c.input.extend_from_slice(&buf[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    c.closed = true;
                    break;
                }
            }
        }
        while let Some(end) = self.clients[i].input.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.clients[i].input.drain(..=end).collect();
            let answer = self.answer(i, &line[..end], fabric, info);
            reply(&mut self.clients[i], &answer);
        }
        let c = &mut self.clients[i];
        if c.input.len() > LINE_LIMIT {
            reply(
                c,
                &Response::Error(Refusal::new(
                    ErrorKind::LineTooLong,
                    format!("request line longer than {LINE_LIMIT} bytes"),
                )),
            );
            flush(c);
            c.closed = true;
        }
        busy
    }

    fn answer(
        &mut self,
        i: usize,
        line: &[u8],
        fabric: &mut Fabric,
        info: &DaemonInfo<'_>,
    ) -> Response {
        let req = match proto::decode_request(line) {
            Ok(req) => req,
            Err(refusal) => return Response::Error(refusal),
        };
        let result = match req {
            Request::Status => Ok(Response::Status(status(fabric, info))),
            Request::Connect(c) => connect(&c, fabric),
            Request::Disconnect { id } => disconnect(&id, fabric),
            Request::Capture { port, vc } => capture(port, vc.as_deref(), fabric).map(|only| {
                self.clients[i].capture = Some((PortId(port), only.map(|(_, filter)| filter)));
                if !fabric.tap_ports.contains(&PortId(port)) {
                    fabric.tap_ports.push(PortId(port));
                }
                Response::Capturing {
                    port,
                    unseen: unseen(PortId(port), only.map(|(vc, _)| vc), fabric),
                }
            }),
            Request::Shutdown => {
                info.stop.store(true, Ordering::Release);
                Ok(Response::ShuttingDown)
            }
        };
        result.unwrap_or_else(Response::Error)
    }

    /// Gives every capturing client the lines of its cells, each line formatted once
    /// however many clients take it.
    fn fan_out(&mut self, fabric: &mut Fabric) {
        let mut line = Vec::with_capacity(160);
        for t in &fabric.tapped {
            line.clear();
            let word = u32::from_be_bytes([t.cell[0], t.cell[1], t.cell[2], t.cell[3]]);
            for c in &mut self.clients {
                let Some((port, filter)) = c.capture else {
                    continue;
                };
                if port != t.port || filter.is_some_and(|(mask, value)| word & mask != value) {
                    continue;
                }
                if c.output.len() >= OUT_LIMIT {
                    c.capture_dropped += 1;
                    continue;
                }
                if line.is_empty() {
                    capture_line(&mut line, self.unix_base_ns, t);
                }
                c.output.extend_from_slice(&line);
            }
        }
        fabric.tapped.clear();
    }
}

/// The header bits that select VC `vpi.vci` on a port of `format`, as `(mask, value)`;
/// `None` if the VPI does not fit the format.
fn vc_filter(format: HeaderFormat, vpi: u16, vci: u16) -> Option<Filter> {
    if vpi > format.max_vpi() {
        return None;
    }
    let mask = u32::from(format.max_vpi()) << 20 | 0xFFFF << 4;
    Some((mask, u32::from(vpi) << 20 | u32::from(vci) << 4))
}

/// Appends the capture line of `t`: `{"t_ns":…,"dir":"in"|"out","cell":"<hex>"}`.
fn capture_line(line: &mut Vec<u8>, unix_base_ns: u64, t: &Tapped) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let t_ns = unix_base_ns.saturating_add(t.at.as_nanos());
    let dir = if t.out { "out" } else { "in" };
    // Writing to a Vec cannot fail.
    let _ = write!(line, "{{\"t_ns\":{t_ns},\"dir\":\"{dir}\",\"cell\":\"");
    for &b in &t.cell {
        line.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xF)]]);
    }
    line.extend_from_slice(b"\"}\n");
}

impl Drop for Management {
    fn drop(&mut self) {
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.file_type().is_socket()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn reply(c: &mut Client, response: &Response) {
    let line = proto::encode_response(response);
    // Replies are never dropped; a client that lets far more than the limit pile up
    // is not reading and is closed.
    if c.output.len() > 4 * OUT_LIMIT {
        c.closed = true;
        return;
    }
    c.output.extend_from_slice(line.as_bytes());
}

fn flush(c: &mut Client) {
    let mut done = 0;
    while done < c.output.len() {
        // MSG_NOSIGNAL: a client that went away must not raise SIGPIPE in the daemon,
        // whatever the embedding program did with that signal.
        match rustix::net::send(
            &c.stream,
            &c.output[done..],
            rustix::net::SendFlags::NOSIGNAL,
        ) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::AGAIN) => break,
            Err(_) => {
                c.closed = true;
                break;
            }
        }
    }
    c.output.drain(..done);
}

fn port_counters(c: &PortCounters) -> proto::PortCounters {
    proto::PortCounters {
        cells_in: c.cells_in,
        cells_out: c.cells_out,
        dropped: c.dropped(),
        idle: c.idle,
        hec_corrected: c.hec_corrected,
        hec_discarded: c.hec_discarded,
        unknown_vc: c.unknown_vc,
        policed: c.policed,
        tagged: c.tagged,
        queue_full: c.queue_full,
        epd: c.epd,
        ppd: c.ppd,
        port_down: c.port_down,
        flushed: c.flushed,
        oam_answered: c.oam_answered,
        oam_terminated: c.oam_terminated,
        ais_sent: c.ais_sent,
    }
}

/// The queue depths of `c`, by category.
fn queue_depth(c: &PortCounters) -> proto::QueueDepth {
    let mut q = proto::QueueDepth::default();
    for (cat, depth) in CATEGORIES.iter().zip(c.queue_depth) {
        *match cat {
            Category::Cbr => &mut q.cbr,
            Category::RtVbr => &mut q.rt_vbr,
            Category::NrtVbr => &mut q.nrt_vbr,
            Category::Ubr => &mut q.ubr,
        } = depth;
    }
    q
}

fn dir_counters(d: &DirCounters) -> proto::DirCounters {
    proto::DirCounters {
        cells_in: d.cells_in,
        cells_out: d.cells_out,
        dropped: d.dropped,
        tagged: d.tagged,
        queued: d.queued,
    }
}

fn category(c: Category) -> proto::Category {
    match c {
        Category::Cbr => proto::Category::Cbr,
        Category::RtVbr => proto::Category::RtVbr,
        Category::NrtVbr => proto::Category::NrtVbr,
        Category::Ubr => proto::Category::Ubr,
    }
}

fn upc(u: Upc) -> proto::Upc {
    match u {
        Upc::Off => proto::Upc::Off,
        Upc::Tag => proto::Upc::Tag,
        Upc::Discard => proto::Upc::Discard,
    }
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

fn status(fabric: &Fabric, info: &DaemonInfo<'_>) -> SwitchStatus {
    // Before the reply is built: a reply listing 65,536 connections is itself many MiB,
    // which would be counted as the switch's own size.
    let memory = natm_nic::procfs::resident_bytes(None).ok();
    let ports = fabric
        .ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let c = fabric.switch.port_counters(p.id).unwrap_or_default();
            let link = info
                .links
                .iter()
                .find(|(id, _)| *id == p.id)
                .map_or(String::new(), |(_, d)| d.clone());
            PortStatus {
                id: p.id.0,
                link,
                up: c.up,
                attached: p.link.is_some(),
                counters: port_counters(&c),
                queue_depth: queue_depth(&c),
                link_counters: p.link.as_ref().map(|l| {
                    let l = l.counters();
                    proto::LinkCounters {
                        tx_cells: l.tx_cells,
                        tx_batches: l.tx_batches,
                        rx_cells: l.rx_cells,
                        rx_batches: l.rx_batches,
                        rx_malformed: l.rx_malformed,
                        rx_lost: l.rx_lost,
                    }
                }),
                link_warning: p.link.as_ref().and_then(|l| l.setup_warning()),
                held: count(p.held()),
                connects: p.stats.connects,
                disconnects: p.stats.disconnects,
                tx_lost: p.stats.tx_lost,
                last_error: p.stats.last_error.clone(),
                lanes: p
                    .lanes
                    .iter()
                    .map(|l| LaneStatus {
                        vcs: l.vcs.iter().map(ToString::to_string).collect(),
                        rx: l.stats.rx,
                        tx: l.stats.tx,
                        dropped: l.stats.dropped,
                        paused: l.stats.paused,
                        held: count(l.held()),
                        weight: l.weight,
                        spliced_with: None,
                        label: l
                            .splice
                            .as_ref()
                            .filter(|k| [k.label] != l.vcs[..])
                            .map(|k| k.label.to_string()),
                    })
                    .chain(fabric.spliced_at(i).map(|(s, h)| {
                        let peer = s.holders.iter().find(|o| !std::ptr::eq(*o, h)).map(|o| {
                            let port = fabric.ports.get(o.port).map_or(0, |q| q.id.0);
                            format!("{port}:{}", o.vc)
                        });
                        // Holders are side A's, then side B's.
                        let side = if std::ptr::eq(h, &s.holders[0]) {
                            Side::A
                        } else {
                            Side::B
                        };
                        let (sent, taken) = s.word.cells(side);
                        LaneStatus {
                            vcs: vec![h.vc.to_string()],
                            rx: sent,
                            tx: taken,
                            weight: 1,
                            spliced_with: peer,
                            ..LaneStatus::default()
                        }
                    }))
                    .collect(),
                main_weight: p.link.as_ref().and_then(|l| l.line_weight()),
                lanes_attached: p.stats.lanes_attached,
                lanes_removed: p.stats.lanes_removed,
                lane_refused: p.stats.lane_refused,
                lane_dropped: p.stats.lane_dropped,
                held_dropped: p.stats.held_dropped,
            }
        })
        .collect();
    let connections = fabric
        .switch
        .connections()
        .filter_map(|(id, _)| fabric.switch.connection(id).map(|(xc, c)| (id, *xc, c)))
        .map(|(id, xc, c)| ConnectionStatus {
            id: id.to_string(),
            a: xc.a.to_string(),
            b: xc.b.to_string(),
            qos: xc.qos.to_string(),
            category: xc.effective_category().ok().map(category),
            upc: upc(xc.upc),
            aal5: xc.aal5,
            weight: xc.weight,
            a_to_b: dir_counters(&c.a_to_b),
            b_to_a: dir_counters(&c.b_to_a),
        })
        .collect();
    SwitchStatus {
        name: info.name.to_string(),
        pid: std::process::id(),
        uptime_s: info.started.elapsed().as_secs_f64(),
        memory,
        state_bytes_per_connection: count(natm_switch::Switch::state_bytes_per_connection()),
        capture_overflow: fabric.tap_overflow,
        ports,
        connections,
        signalling: fabric
            .calls
            .as_ref()
            .map(|cc| Box::new(signalling(cc, fabric.now()))),
    }
}

/// The most calls a `status` lists (the rest are counted in `calls_active`).
pub const CALLS_LISTED: usize = 1000;

/// Call control's status, in the protocol's terms.
fn signalling(cc: &natm_calls::CallControl, now: natm_core::Instant) -> proto::SignallingStatus {
    let c = cc.counters();
    proto::SignallingStatus {
        prefix: cc.config().prefix.to_string(),
        calls_active: count(cc.call_count()),
        calls_connected: c.connected,
        calls_refused: c.refused,
        state_bytes_per_call: count(natm_calls::CallControl::state_bytes_per_call()),
        ports: cc
            .ports()
            .map(|p| proto::SignallingPort {
                port: p.port.0,
                side: p.side.to_string(),
                sscop: sscop_state(p.sscop).to_string(),
                link_up: p.link_up,
                calls: count(p.calls),
                establishments: p.establishments,
                sscop_counters: cc.signalling(p.port).map_or_else(Default::default, |sig| {
                    let c = sig.sscf().sscop().counters();
                    proto::SscopCounters {
                        sd_sent: c.sd_sent,
                        delivered: c.delivered,
                        polls: c.polls,
                        stats: c.stats,
                        credit_waits: c.credit_waits,
                    }
                }),
            })
            .collect(),
        calls: cc
            .calls(now)
            .take(CALLS_LISTED)
            .map(|call| proto::SwitchCall {
                a: leg(call.a),
                b: leg(call.b),
                state: call.phase.name().to_string(),
                qos: call.qos.to_string(),
                called: call.called.to_string(),
                calling: call.calling.map(|a| a.to_string()),
                age_ms: call.age.as_nanos() / 1_000_000,
            })
            .collect(),
    }
}

/// A leg as `PORT:VPI.VCI` (`PORT:?` before its VC is known, `-` once it is gone).
fn leg(l: Option<natm_calls::LegStatus>) -> String {
    l.map_or_else(|| "-".to_string(), |l| l.to_string())
}

/// SSCOP's state by name.
fn sscop_state(s: natm_sscop::State) -> &'static str {
    use natm_sscop::State as S;
    match s {
        S::Idle => "idle",
        S::OutgoingConnectionPending => "outgoing-connection-pending",
        S::IncomingConnectionPending => "incoming-connection-pending",
        S::OutgoingDisconnectionPending => "outgoing-disconnection-pending",
        S::OutgoingResynchronizationPending => "outgoing-resynchronization-pending",
        S::IncomingResynchronizationPending => "incoming-resynchronization-pending",
        S::OutgoingRecoveryPending => "outgoing-recovery-pending",
        S::RecoveryResponsePending => "recovery-response-pending",
        S::IncomingRecoveryPending => "incoming-recovery-pending",
        S::DataTransferReady => "data-transfer-ready",
    }
}

/// The refusal of what the switch core refused.
fn switch_refusal(e: &SwitchError) -> Refusal {
    let kind = match e {
        SwitchError::UnknownPort(_) | SwitchError::UnknownConnection(_) => ErrorKind::NotFound,
        _ => ErrorKind::Refused,
    };
    Refusal::new(kind, e.to_string())
}

fn connect(req: &Connect, fabric: &mut Fabric) -> Result<Response, Refusal> {
    let t = XcText {
        a: &req.a,
        b: &req.b,
        qos: &req.qos,
        upc: req.upc.as_deref(),
        aal5: req.aal5,
        weight: req.weight,
        category: req.category.as_deref(),
    };
    let xc = t
        .parse()
        .map_err(|(key, e)| Refusal::new(ErrorKind::BadRequest, format!("\"{key}\": {e}")))?;
    let now = fabric.now();
    match fabric.switch.connect(now, &xc) {
        Ok(id) => Ok(Response::Connected { id: id.to_string() }),
        Err(e) => Err(switch_refusal(&e)),
    }
}

fn disconnect(id: &str, fabric: &mut Fabric) -> Result<Response, Refusal> {
    let id: XcId = id
        .parse()
        .map_err(|e| Refusal::new(ErrorKind::BadRequest, format!("\"id\": {e}")))?;
    match fabric.switch.disconnect(id) {
        Ok(_) => Ok(Response::Disconnected),
        Err(e) => Err(switch_refusal(&e)),
    }
}

/// The VCs of `port` (only `vc`, if given) spliced between two applications' lanes, whose
/// cells a capture there does not see, as `VPI.VCI`.
fn unseen(port: PortId, vc: Option<VcId>, fabric: &Fabric) -> Vec<String> {
    let Some(at) = fabric.index(port) else {
        return Vec::new();
    };
    let mut vcs: Vec<String> = fabric
        .splices
        .iter()
        .flat_map(|s| &s.holders)
        .filter(|h| h.port == at)
        .filter(|h| vc.is_none_or(|w| (w.vpi.get(), w.vci.get()) == (h.vc.vpi, h.vc.vci)))
        .map(|h| h.vc.to_string())
        .collect();
    vcs.sort();
    vcs.dedup();
    vcs
}

/// A header filter: (mask, value) of a cell's first four bytes.
type Filter = (u32, u32);

/// A capture of `port` only of VC `vc` (`VPI.VCI`), if given: that VC and its header
/// filter.
fn capture(
    port: u16,
    vc: Option<&str>,
    fabric: &Fabric,
) -> Result<Option<(VcId, Filter)>, Refusal> {
    let Some(format) = fabric
        .switch
        .ports()
        .find(|(id, _)| *id == PortId(port))
        .map(|(_, c)| c.format)
    else {
        return Err(Refusal::new(ErrorKind::NotFound, format!("no port {port}")));
    };
    let Some(vc) = vc else {
        return Ok(None);
    };
    let bad = |message: String| Refusal::new(ErrorKind::BadRequest, message);
    let parsed: VcId = vc
        .parse()
        .map_err(|e| bad(format!("\"vc\": {vc:?} is not VPI.VCI: {e}")))?;
    vc_filter(format, parsed.vpi.get(), parsed.vci.get())
        .map(|filter| Some((parsed, filter)))
        .ok_or_else(|| {
            bad(format!(
                "\"vc\": VPI {} is above {} on port {port}",
                parsed.vpi,
                format.max_vpi()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use natm_core::Instant;

    fn word(gfc: u32, vpi: u32, vci: u32) -> u32 {
        gfc << 28 | vpi << 20 | vci << 4
    }

    #[test]
    fn a_vc_filter_matches_the_whole_vpi_of_its_ports_format() {
        let (mask, value) = vc_filter(HeaderFormat::Nni, 5, 100).unwrap();
        assert_eq!(word(0, 5, 100) & mask, value);
        assert_ne!(word(0, 0x105, 100) & mask, value, "VPI 0x105 is not VPI 5");
        assert_ne!(word(0, 5, 101) & mask, value);
        // On a UNI port the top four bits are GFC, not VPI.
        let (mask, value) = vc_filter(HeaderFormat::Uni, 5, 100).unwrap();
        assert_eq!(word(0xA, 5, 100) & mask, value);
        assert_eq!(vc_filter(HeaderFormat::Uni, 256, 100), None);
        assert!(vc_filter(HeaderFormat::Nni, 4095, 100).is_some());
    }

    #[test]
    fn a_capture_line_is_the_json_the_protocol_gives() {
        let mut cell = [0u8; 53];
        cell[0] = 0xAB;
        cell[52] = 0x0F;
        let t = Tapped {
            port: PortId(1),
            out: true,
            at: Instant::from_nanos(7),
            cell,
        };
        let mut line = Vec::new();
        capture_line(&mut line, 1_000, &t);
        assert_eq!(line.last(), Some(&b'\n'));
        let parsed: proto::CaptureLine = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            parsed,
            proto::CaptureLine {
                t_ns: 1_007,
                dir: proto::CaptureDir::Out,
                cell
            }
        );
    }
}

//! linux-atm's atmsigd, unmodified, attached to natm over an atmtcp connection through
//! natm-interop's bridge (`natm_interop::bridge`): its signalling FIFOs become AAL5 on VC
//! 0.5 of a natm-link `kind = "tcp"` link (one atmtcp frame per cell).
//!
//! * `bridge_*`: the bridge against a natm-sig `Signalling` at the other end of the link,
//!   in this process.
//! * `switch_*`: `atmsigd -m user` on the `[[external]]` port of a real switchd (the
//!   switch is the network side there), with a hostd behind the switch; the configurations
//!   are natm-lab's, from a topology; both daemons run in threads of this process.
//! * `host_*`: `atmsigd -m network` as the network of a hostd whose link is an
//!   `[[external]]` (hostd dials; the bridge listens).
//!
//! atmsigd runs `-u uni40` (natm's daemons signal UNI 4.0). Each test prints `INTEROP |
//! scenario | direction | result | causes` lines (`--nocapture`). Skipped with a message
//! when atmsigd or cc is missing unless `NATM_REQUIRE_ATMSIGD=1`; every wait is bounded;
//! atmsigd, the daemons and their directories are gone when a test ends.

use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant as StdInstant};

use natm_adapter::{Reassembler, Reassembly};
use natm_core::addr::Aesa;
use natm_core::{Instant, VcId};
use natm_host::hostd::{HostdConfig, HostdThread};
use natm_interop::atmsigd::{AtmSigd, Dir, Mode, Options, Uni};
use natm_interop::kernel::{KernelMsg, MsgType, Qos as KQos};
use natm_lab::topology::{self, Addresses, Topology};
use natm_link::CELL_LEN;
use natm_link::endpoint::{EndpointLink, LinkConfig};
use natm_proto::host::{self as proto, CauseInfo, DataPath, Frame, NotifyMode, Request, Response};
use natm_sig::{CallEvent, PartyNumber, Role, SetupParams, Signalling};
use natm_wire::aal5::Segmenter;
use natm_wire::q2931::{Message, MsgType as MsgType2931};
use natm_wire::sscop::{PduType, Repr};

/// atmsigd's own address (the shim's ATM_GETADDR), under [`SIGD_PREFIX`].
const SIGD_ADDR: [u8; 20] = [
    0x47, 0x00, 0x05, 0x80, 0xff, 0xe1, 0x00, 0x00, 0x00, 0xf2, 0x1a, 0x3d, 0x5c, 0x00, 0x20, 0x48,
    0x1a, 0x3d, 0x5c, 0x00,
];
/// The `[[external]]` entry's prefix: what the switch routes to atmsigd.
const SIGD_PREFIX: &str = "47.0005.80ffe1000000f21a3d5c";
/// How long a test waits for any one thing.
const LIMIT: Duration = Duration::from_secs(10);
/// Kernel-side socket tags.
const LISTENER: u64 = 0x1111;

fn report(scenario: &str, direction: &str, result: &str, causes: &str) {
    eprintln!("INTEROP | {scenario} | {direction} | {result} | {causes}");
}

fn pdu_type(sdu: &[u8]) -> Option<PduType> {
    Repr::parse(sdu).ok().map(|r| r.pdu_type())
}

/// The Q.2931 messages of type `ty` that crossed the bridge in direction `dir` from trace
/// entry `from` on, with their causes: `RELEASE 16, …`.
fn sent(sigd: &AtmSigd, from: usize, dir: Dir, ty: MsgType2931) -> String {
    let mut out = Vec::new();
    for s in sigd.trace.iter().skip(from).filter(|s| s.dir == dir) {
        let Ok(Repr::Sd { info, .. }) = Repr::parse(&s.sdu) else {
            continue;
        };
        let Ok(p) = Message::parse(info) else {
            continue;
        };
        if p.message.header.msg_type == ty {
            let causes: Vec<String> = p
                .message
                .cause
                .iter()
                .map(|c| c.value.code().to_string())
                .collect();
            out.push(format!("{ty:?} {}", causes.join("/")));
        }
    }
    if out.is_empty() {
        "none".into()
    } else {
        out.join(", ")
    }
}

/// Waits until a message of one of `types` crossed in `dir` after trace entry `from`.
fn wait_sent(sigd: &mut AtmSigd, from: usize, dir: Dir, types: &[MsgType2931]) -> bool {
    sigd.wait(LIMIT, |s| {
        s.trace[from..].iter().any(|x| {
            x.dir == dir
                && matches!(Repr::parse(&x.sdu), Ok(Repr::Sd { info, .. })
                    if Message::parse(info).is_ok_and(|p| types.contains(&p.message.header.msg_type)))
        })
    })
}

/// atmsigd in `mode`, UNI 4.0, with its own address; `None` when skipped.
fn atmsigd(name: &str, mode: Mode) -> Option<AtmSigd> {
    let opts = Options {
        uni: Uni::Uni40,
        ..Options::new(mode, Some(SIGD_ADDR))
    };
    AtmSigd::spawn_or_skip(name, &opts)
}

/// Whether atmsigd's SSCOP is established: it sent what only an established SSCOP sends
/// (or a BGAK).
fn sigd_established(s: &AtmSigd) -> bool {
    s.from_sigd().any(|p| {
        matches!(
            pdu_type(p),
            Some(PduType::Bgak | PduType::Poll | PduType::Stat | PduType::Sd)
        )
    })
}

/// A loopback port nobody listens on now (the test's own pick).
fn free_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    l.local_addr().expect("its address")
}

/// An atmtcp cell link's configuration at `addr`, no rate limit.
fn tcp(addr: SocketAddr) -> LinkConfig {
    LinkConfig::from_toml(&format!("kind = \"tcp\"\naddr = \"{addr}\"")).expect("tcp link")
}

fn listen_any(sigd: &mut AtmSigd) {
    let mut m = KernelMsg::new(MsgType::Listen, LISTENER);
    m.svc = Some([0; 20]);
    m.qos = Some(KQos::ubr(9188));
    sigd.kernel_send(&m);
    kernel(sigd, MsgType::Okay);
}

fn kernel(sigd: &mut AtmSigd, kind: MsgType) -> KernelMsg {
    match sigd.kernel_wait(kind, LIMIT) {
        Some(m) => {
            eprintln!("  atmsigd kernel: {m:?}");
            m
        }
        None => panic!("atmsigd's kernel side said no {kind:?} within {LIMIT:?}"),
    }
}

// --- The bridge against natm-sig in this process -------------------------------------------

/// natm's side of the link: a `Signalling` of `role` in a thread, its events sent back.
struct NatmEnd {
    cmd: mpsc::Sender<Option<SetupParams>>,
    events: mpsc::Receiver<CallEvent>,
    thread: Option<JoinHandle<()>>,
}

impl NatmEnd {
    fn start(mut link: Box<dyn EndpointLink>, role: Role) -> NatmEnd {
        let (cmd, crx) = mpsc::channel::<Option<SetupParams>>();
        let (etx, events) = mpsc::channel();
        let thread = thread::spawn(move || {
            let start = StdInstant::now();
            let clock = || Instant::from_nanos(start.elapsed().as_nanos() as u64);
            let vc = VcId::uni(0, 5).unwrap();
            let mut sig = Signalling::new(
                clock(),
                natm_sig::Config::new(role),
                natm_sscop::Config::default(),
            );
            let mut rx = Reassembler::new(vc, 9188).unwrap();
            let mut buf = [[0u8; CELL_LEN]; 64];
            loop {
                let now = clock();
                match crx.try_recv() {
                    Ok(Some(p)) => {
                        let _ = sig.setup(now, &p);
                    }
                    Ok(None) | Err(mpsc::TryRecvError::Disconnected) => return,
                    Err(mpsc::TryRecvError::Empty) => {}
                }
                if sig.poll_timeout().is_some_and(|t| t <= now) {
                    sig.handle_timeout(now);
                }
                while let Some(sdu) = sig.poll_transmit() {
                    let cells: Vec<_> = Segmenter::uni(vc, &sdu).unwrap().collect();
                    if link.send_cells_timeout(&cells, Some(LIMIT)).is_err() {
                        return;
                    }
                }
                let Ok(n) = link.recv_cells_timeout(&mut buf, Some(Duration::from_millis(2)))
                else {
                    return;
                };
                for c in &buf[..n] {
                    if let Reassembly::Complete(_) = rx.push_cell(c) {
                        sig.handle_pdu(clock(), rx.sdu());
                    }
                }
                while let Some(e) = sig.poll_event() {
                    let _ = etx.send(e);
                }
            }
        });
        NatmEnd {
            cmd,
            events,
            thread: Some(thread),
        }
    }

    /// The first event `pred` accepts, within [`LIMIT`].
    fn event(&self, what: &str, pred: impl Fn(&CallEvent) -> bool) -> CallEvent {
        let end = StdInstant::now() + LIMIT;
        loop {
            let left = end.saturating_duration_since(StdInstant::now());
            match self.events.recv_timeout(left) {
                Ok(e) if pred(&e) => return e,
                Ok(e) => eprintln!("  natm event: {e:?}"),
                Err(_) => panic!("natm: no {what} within {LIMIT:?}"),
            }
        }
    }
}

impl Drop for NatmEnd {
    fn drop(&mut self) {
        let _ = self.cmd.send(None);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// atmsigd `-m user` bridged to a network-side `Signalling` over a loopback atmtcp cell
/// link: SSCOP establishes, and a SETUP crosses both ways (atmsigd answers with CONNECT).
#[test]
fn bridge_carries_saal_and_a_call() {
    let Some(mut sigd) = atmsigd("bridge", Mode::User) else {
        return;
    };
    let mut listener = tcp("127.0.0.1:0".parse().unwrap()).listen().unwrap();
    let addr = listener.local_addr().unwrap();
    let link = tcp(addr).connect(LIMIT).expect("connect the bridge");
    let ours = listener
        .accept(Some(LIMIT))
        .unwrap()
        .expect("the bridge connected");
    assert!(sigd.bridge(link));
    let natm = NatmEnd::start(ours, Role::Network);
    natm.event("LinkUp", |e| matches!(e, CallEvent::LinkUp));
    assert!(
        sigd.wait(LIMIT, |s| sigd_established(s)),
        "atmsigd's SSCOP never established:\n{}",
        sigd.log()
    );
    listen_any(&mut sigd);
    natm.cmd
        .send(Some(SetupParams {
            called: PartyNumber::aesa(Aesa(SIGD_ADDR)),
            called_sub: None,
            calling: None,
            calling_sub: None,
            qos: "ubr,aal5:max_pcr=353207,sdu=9188".parse().unwrap(),
            blli: None,
            bhli: None,
            conn: Some(natm_sig::ConnId {
                vpci: 0,
                vci: 40000,
            }),
        }))
        .unwrap();
    let ind = kernel(&mut sigd, MsgType::Indicate);
    let mut acc = KernelMsg::new(MsgType::Accept, 0x2222);
    acc.listen_vcc = ind.listen_vcc;
    sigd.kernel_send(&acc);
    natm.event("Connected", |e| matches!(e, CallEvent::Connected { .. }));
    kernel(&mut sigd, MsgType::Okay);
    let stats = sigd.bridge_stats().unwrap();
    assert!(stats.to_link >= 2 && stats.to_sigd >= 2, "{stats:?}");
    assert_eq!(stats.ended, None);
    report(
        "bridge: FIFOs ⇄ AAL5 on 0.5 over atmtcp cells",
        "natm-sig network ↔ atmsigd -m user",
        &format!(
            "SSCOP established, SETUP/CONNECT; {} SDUs out, {} in",
            stats.to_link, stats.to_sigd
        ),
        "-",
    );
}

// --- Real daemons from a topology -----------------------------------------------------------

static DIRS: AtomicU32 = AtomicU32::new(0);

/// switchd's loop in a thread.
type SwitchdThread = JoinHandle<Result<(), natm_switchd::SwitchdError>>;

/// A switchd and a hostd of natm-lab's configurations for `topo`, in threads of this
/// process, their sockets in a directory of their own; stopped and removed when dropped.
struct Lab {
    dir: PathBuf,
    topo: Topology,
    switchd: Option<(Arc<AtomicBool>, SwitchdThread)>,
    mgmt: Option<PathBuf>,
    hostd: Option<HostdThread>,
}

impl Lab {
    fn new(name: &str, text: &str) -> Lab {
        let topo = Topology::parse(text, None).expect("the test's topology");
        let dir = std::env::temp_dir().join(format!(
            "natm-interop-{name}-{}-{}",
            std::process::id(),
            DIRS.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the lab's directory");
        Lab {
            dir,
            topo,
            switchd: None,
            mgmt: None,
            hostd: None,
        }
    }

    /// Starts switch `sw` and waits until it answers `status`.
    fn start_switch(&mut self, sw: &str) {
        let c = topology::switch_config(&self.topo, sw, &self.dir, &Addresses::default())
            .expect("switch configuration");
        let text = topology::to_toml(&c).expect("toml");
        let config = natm_switchd::SwitchdConfig::from_toml(&text).expect("switchd takes it");
        let mgmt = config.management.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let t = thread::spawn(move || natm_switchd::run(config, s));
        self.switchd = Some((stop, t));
        self.mgmt = Some(mgmt);
        let end = StdInstant::now() + LIMIT;
        while self.client().status().is_err() {
            assert!(StdInstant::now() < end, "switchd never answered");
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Starts host `h` (its socket exists when this returns).
    fn start_host(&mut self, h: &str) {
        let c = topology::host_config(&self.topo, h, &self.dir, &Addresses::default())
            .expect("host configuration");
        let text = topology::to_toml(&c).expect("toml");
        let config = HostdConfig::from_toml(&text).expect("hostd takes it");
        self.hostd =
            Some(HostdThread::spawn(config.options(), config.connector()).expect("hostd starts"));
    }

    fn client(&self) -> natm_switchd::client::Client {
        natm_switchd::client::Client::new(self.mgmt.as_ref().expect("a switch"), LIMIT)
    }

    /// The switch's signalling port `port`.
    fn sig_port(&self, port: u16) -> Option<natm_proto::switchd::SignallingPort> {
        let st = self.client().status().ok()?;
        st.signalling?.ports.into_iter().find(|p| p.port == port)
    }

    fn calls_active(&self) -> u64 {
        let st = self.client().status().expect("switch status");
        st.signalling.map_or(0, |s| s.calls_active)
    }

    /// A connection to hostd, as an application.
    fn app(&self) -> UnixStream {
        let s = UnixStream::connect(self.hostd.as_ref().expect("a host").socket())
            .expect("connect to hostd");
        s.set_read_timeout(Some(LIMIT)).unwrap();
        s
    }

    /// Waits until hostd says its signalling is up.
    fn wait_host_signalling(&self) {
        let app = self.app();
        let end = StdInstant::now() + LIMIT;
        loop {
            if let Response::Status(st) = ask(&app, &Request::Status)
                && st.signalling_up
            {
                return;
            }
            assert!(StdInstant::now() < end, "hostd's signalling never came up");
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        drop(self.hostd.take());
        if let Some((stop, t)) = self.switchd.take() {
            stop.store(true, Ordering::Release);
            let _ = t.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ask(s: &UnixStream, r: &Request) -> Response {
    proto::write_frame(s, &proto::control_frame(r)).expect("write to hostd");
    answer(s)
}

/// hostd's next control frame, skipping link notices.
fn answer(s: &UnixStream) -> Response {
    loop {
        match proto::read_frame::<Response>(s).expect("hostd answers") {
            (Frame::Control(Response::LinkUp | Response::LinkDown), _) => {}
            (Frame::Control(r), _) => return r,
            (f, _) => panic!("expected a control frame, got {f:?}"),
        }
    }
}

/// UBR on AAL5, what atmsigd's listener takes.
const CALL_QOS: &str = "ubr,aal5:max_pcr=100000,max_sdu=9188";

fn call(to: Aesa) -> Request {
    Request::Call {
        called: to,
        qos: CALL_QOS.parse().unwrap(),
        path: DataPath::Daemon,
        notify: NotifyMode::Poll,
        signal: None,
        buffers: 4,
        buffer_size: 9216,
        timeout_ms: 5000,
    }
}

/// Places a call from a new application connection in a thread (hostd answers once the
/// network does); the connection comes back with the answer.
fn call_in_thread(lab: &Lab, to: Aesa) -> JoinHandle<(UnixStream, Response)> {
    let app = lab.app();
    thread::spawn(move || {
        let r = ask(&app, &call(to));
        (app, r)
    })
}

fn cause_of(r: Response) -> CauseInfo {
    match r {
        Response::CallFailed { cause } => cause,
        r => panic!("expected CallFailed, got {r:?}"),
    }
}

/// The calls both ways between the natm host and atmsigd, as seen by the natm host's
/// applications and atmsigd's kernel side: natm → atmsigd accepted and released by natm,
/// natm → atmsigd rejected (the cause comes back to the caller), atmsigd → natm accepted
/// by a natm listener and released by atmsigd. `host` is the natm host's name.
fn calls_both_ways(lab: &Lab, sigd: &mut AtmSigd, host: &str, direction: &str) {
    listen_any(sigd);
    let sigd_addr = Aesa(SIGD_ADDR);

    // natm → atmsigd, accepted.
    let caller = call_in_thread(lab, sigd_addr);
    let ind = kernel(sigd, MsgType::Indicate);
    let mut acc = KernelMsg::new(MsgType::Accept, 0x2222);
    acc.listen_vcc = ind.listen_vcc;
    sigd.kernel_send(&acc);
    kernel(sigd, MsgType::Okay);
    let (app, r) = caller.join().unwrap();
    let (info, cookie, handle) = match r {
        Response::Opened {
            call: Some(info),
            cookie,
            handle,
            ..
        } => (info, cookie, handle),
        r => panic!("natm's call to atmsigd: {r:?}"),
    };
    report(
        "natm call → atmsigd, accepted (as_accept)",
        direction,
        &format!(
            "CONNECT: natm VC {} (atmsigd's VC {:?}), set up in {} µs",
            info.vc,
            ind.pvc,
            info.setup_ns / 1000
        ),
        "-",
    );
    // The call's VC carries data both ways: the bridge stands in for atmsigd's owner.
    let sigd_vci = ind.pvc.expect("atmsigd named the VC").vci as u32;
    data_both_ways(&app, handle, sigd, sigd_vci, direction);

    sigd.sync();
    let mark = sigd.trace.len();
    match ask(
        &app,
        &Request::Close {
            cookie,
            quiet: false,
        },
    ) {
        Response::Closed { .. } => {}
        r => panic!("close: {r:?}"),
    }
    let closed = kernel(sigd, MsgType::Close);
    // atmsigd answers RELEASE with RELEASE COMPLETE once its kernel side closes too.
    sigd.kernel_send(&KernelMsg::new(MsgType::Close, 0x2222));
    let done = wait_sent(sigd, mark, Dir::FromSigd, &[MsgType2931::ReleaseComplete]);
    assert!(done, "atmsigd sent no RELEASE COMPLETE");
    report(
        "natm releases (application closes the VC)",
        direction,
        &format!(
            "atmsigd's kernel told (reply {}), RELEASE COMPLETE after it closed",
            closed.reply
        ),
        &sent(sigd, mark, Dir::ToSigd, MsgType2931::Release),
    );

    // natm → atmsigd, rejected by atmsigd's owner.
    let caller = call_in_thread(lab, sigd_addr);
    let ind = kernel(sigd, MsgType::Indicate);
    let mut rej = KernelMsg::new(MsgType::Reject, 0x5555);
    rej.listen_vcc = ind.listen_vcc;
    sigd.kernel_send(&rej);
    let (_, r) = caller.join().unwrap();
    let cause = cause_of(r);
    eprintln!("  natm call: refused: {cause}");
    report(
        "natm call → atmsigd, rejected (as_reject)",
        direction,
        &format!("the caller gets: {cause}"),
        &cause.value.to_string(),
    );

    // natm → atmsigd with a max SDU other than its listener's: atmsigd refuses by itself.
    sigd.sync();
    let mark = sigd.trace.len();
    let app = lab.app();
    let mut r = call(sigd_addr);
    if let Request::Call { qos, .. } = &mut r {
        *qos = "ubr,aal5:max_pcr=100000,max_sdu=1024".parse().unwrap();
    }
    let cause = cause_of(ask(&app, &r));
    eprintln!("  natm call: refused: {cause}");
    // atmsigd 2.5.1 answers before any CALL PROCEEDING, in both modes, with RELEASE
    // COMPLETE 88 (incompatible destination), which natm passes to the caller unchanged.
    let rc = [MsgType2931::ReleaseComplete];
    assert!(wait_sent(sigd, mark, Dir::FromSigd, &rc));
    assert_eq!(cause.value, 88, "{cause}");
    report(
        "natm call → atmsigd, max SDU 1024 against its listener's 9188",
        direction,
        &format!(
            "atmsigd refuses by itself ({}); the caller gets {cause}",
            sent(sigd, mark, Dir::FromSigd, MsgType2931::ReleaseComplete)
        ),
        &cause.value.to_string(),
    );

    // atmsigd → natm, answered by a natm listener.
    let listener = lab.app();
    match ask(
        &listener,
        &Request::Listen {
            selector: None,
            accept: None,
        },
    ) {
        Response::Listening { .. } => {}
        r => panic!("listen: {r:?}"),
    }
    let host_addr = lab.topo.address_of(host).expect("the host's address");
    let mut c = KernelMsg::new(MsgType::Connect, 0x3333);
    c.svc = Some(host_addr.0);
    c.qos = Some(KQos::ubr(1024));
    sigd.kernel_send(&c);
    let (call, calling) = match answer(&listener) {
        Response::Incoming { call, calling, .. } => (call, calling),
        r => panic!("expected Incoming, got {r:?}"),
    };
    assert_eq!(calling, Some(sigd_addr), "the calling party natm saw");
    let accept = Request::Accept {
        call,
        path: DataPath::Daemon,
        notify: NotifyMode::Poll,
        signal: None,
        buffers: 4,
        buffer_size: 9216,
    };
    let vc = match ask(&listener, &accept) {
        Response::Opened {
            call: Some(info), ..
        } => info.vc,
        r => panic!("accept: {r:?}"),
    };
    let ok = kernel(sigd, MsgType::Okay);
    assert_eq!(ok.reply, 0, "atmsigd's connect succeeded");
    report(
        "atmsigd call (as_connect) → natm listener, accepted",
        direction,
        &format!("CONNECT: natm VC {vc}, atmsigd's VC {:?}", ok.pvc),
        "-",
    );
    sigd.kernel_send(&KernelMsg::new(MsgType::Close, 0x3333));
    let cause = match answer(&listener) {
        Response::Released { cause, .. } => cause,
        r => panic!("expected Released, got {r:?}"),
    };
    kernel(sigd, MsgType::Close);
    report(
        "atmsigd releases (as_close)",
        direction,
        &format!("the natm listener's VC released: {cause}"),
        &cause.value.to_string(),
    );
}

/// An SDU each way on an active call's VC: from the natm application (hostd's daemon
/// path, `handle`) to the bridge, which sees it as AAL5 on atmsigd's VC `0.vci`, and from
/// the bridge on that VC to the application, byte for byte.
fn data_both_ways(app: &UnixStream, handle: u32, sigd: &mut AtmSigd, vci: u32, direction: &str) {
    let out = b"natm to atmsigd's VC".to_vec();
    proto::write_frame(app, &proto::data_frame(handle, &out)).expect("send on the VC");
    let want = (0u16, vci as u16, out.clone());
    let arrived = sigd.wait(LIMIT, |s| {
        s.bridge_stats().is_some_and(|b| b.data.contains(&want))
    });
    assert!(
        arrived,
        "the SDU never reached the bridge on 0.{vci}: {:?}",
        sigd.bridge_stats()
    );
    let back = b"atmsigd's VC to natm".to_vec();
    assert!(sigd.send_data(0, vci, &back));
    let got = loop {
        match proto::read_frame::<Response>(app).expect("hostd delivers") {
            (Frame::Data { handle: h, sdu }, _) if h == handle => break sdu,
            (Frame::Control(Response::LinkUp | Response::LinkDown), _) => {}
            (f, _) => panic!("expected data on {handle}, got {f:?}"),
        }
    };
    assert_eq!(got, back);
    report(
        "data on the call's VC (AAL5, the bridge as atmsigd's owner)",
        direction,
        &format!("one SDU each way on 0.{vci}, byte for byte"),
        "-",
    );
}

/// The topology of the switch tests: s1 with host h1 and atmsigd's `[[external]]` port,
/// which the switch listens on at `port`.
fn switch_topology(port: SocketAddr) -> String {
    format!(
        "[[switch]]\nname = \"s1\"\n\n[[host]]\nname = \"h1\"\n\n\
         [[link]]\na = \"h1\"\nb = \"s1\"\n\n\
         [[external]]\nnode = \"s1\"\nlisten = \"{port}\"\nprefix = \"{SIGD_PREFIX}\"\n"
    )
}

/// switchd, hostd and `atmsigd -m user` bridged to the switch's external port, SSCOP
/// established on both ends; `None` when skipped.
fn switch_setup(name: &str) -> Option<(Lab, AtmSigd, u16)> {
    let mut sigd = atmsigd(name, Mode::User)?;
    let addr = free_port();
    let mut lab = Lab::new(name, &switch_topology(addr));
    let (_, _, port) = lab.topo.externals_of("s1").next().expect("the external");
    lab.start_switch("s1");
    lab.start_host("h1");
    lab.wait_host_signalling();
    let link = tcp(addr).connect(LIMIT).expect("the bridge connects");
    assert!(sigd.bridge(link));
    let end = StdInstant::now() + LIMIT;
    while !lab.sig_port(port).is_some_and(|p| p.link_up) {
        assert!(
            StdInstant::now() < end,
            "the switch's port {port} never saw SSCOP established: {:?}\n{}",
            lab.sig_port(port),
            sigd.log()
        );
        thread::sleep(Duration::from_millis(10));
    }
    assert!(
        sigd.wait(LIMIT, |s| sigd_established(s)),
        "atmsigd's SSCOP never established:\n{}",
        sigd.log()
    );
    Some((lab, sigd, port))
}

/// atmsigd `-m user` on a natm switch's `[[external]]` port: calls both ways with the
/// natm host behind the switch.
#[test]
fn switch_external_calls() {
    let Some((lab, mut sigd, port)) = switch_setup("swcalls") else {
        return;
    };
    let direction = "natm switch (network) ↔ atmsigd -m user";
    report(
        "SSCOP over the external port",
        direction,
        &format!("established: {:?}", lab.sig_port(port)),
        "-",
    );
    calls_both_ways(&lab, &mut sigd, "h1", direction);
    let end = StdInstant::now() + LIMIT;
    while lab.calls_active() != 0 {
        assert!(StdInstant::now() < end, "calls left at the switch");
        thread::sleep(Duration::from_millis(10));
    }
}

/// `secs` of idle signalling: atmsigd's POLLs (Timer_IDLE, 15 s) are answered by natm's
/// STATs and natm's by atmsigd's, and nobody re-establishes or releases the SAAL. Returns
/// the counts for the report.
fn stays_up(sigd: &mut AtmSigd, secs: Duration) -> String {
    sigd.sync();
    let from = sigd.trace.len();
    sigd.wait(secs, |_| false);
    let after = &sigd.trace[from..];
    let count = |dir: Dir, ty: PduType| {
        after
            .iter()
            .filter(|s| s.dir == dir && pdu_type(&s.sdu) == Some(ty))
            .count()
    };
    let (sigd_polls, natm_stats) = (
        count(Dir::FromSigd, PduType::Poll),
        count(Dir::ToSigd, PduType::Stat),
    );
    let (natm_polls, sigd_stats) = (
        count(Dir::ToSigd, PduType::Poll),
        count(Dir::FromSigd, PduType::Stat),
    );
    let restarts: Vec<_> = after
        .iter()
        .filter(|s| {
            matches!(
                pdu_type(&s.sdu),
                Some(PduType::Bgn | PduType::End | PduType::Rs | PduType::Er)
            )
        })
        .map(|s| (s.dir, pdu_type(&s.sdu)))
        .collect();
    assert!(sigd_polls >= 1, "atmsigd polled {sigd_polls} times");
    assert!(
        natm_stats >= sigd_polls,
        "natm answered {natm_stats} of {sigd_polls} POLLs"
    );
    assert!(natm_polls >= 1, "natm polled {natm_polls} times");
    assert!(
        sigd_stats + 1 >= natm_polls,
        "atmsigd answered {sigd_stats} of {natm_polls}"
    );
    assert!(
        restarts.is_empty(),
        "the SAAL was re-established or released while idle: {restarts:?}"
    );
    let stats = sigd.bridge_stats().expect("bridged");
    assert_eq!(stats.ended, None, "the atmtcp link ended");
    format!(
        "kept alive: atmsigd POLL×{sigd_polls}/natm STAT×{natm_stats}, natm POLL×{natm_polls}/atmsigd STAT×{sigd_stats}"
    )
}

/// atmsigd `-m user` on a natm switch's `[[external]]` port: SSCOP stays established over
/// 16.5 s of idle (past atmsigd's Timer_IDLE), seen in the switch's status too.
#[test]
fn switch_external_keeps_sscop_alive() {
    let Some((lab, mut sigd, port)) = switch_setup("swidle") else {
        return;
    };
    let what = stays_up(&mut sigd, Duration::from_millis(16_500));
    let p = lab.sig_port(port).expect("the port signals");
    assert!(p.link_up, "{p:?}");
    assert_eq!(p.establishments, 1, "{p:?}");
    assert_eq!(p.sscop, "data-transfer-ready", "{p:?}");
    report(
        "SSCOP establishment + keep-alive (16.5 s idle)",
        "natm switch (network) ↔ atmsigd -m user",
        &format!(
            "{what}; switch port {port}: {} establishment(s)",
            p.establishments
        ),
        "-",
    );
}

/// hostd (user side) whose link is an `[[external]]` that dials the bridge, and `atmsigd
/// -m network` behind the bridge, SSCOP established on both ends; `None` when skipped.
fn host_setup(name: &str) -> Option<(Lab, AtmSigd)> {
    let mut sigd = atmsigd(name, Mode::Network)?;
    let mut listener = tcp("127.0.0.1:0".parse().unwrap())
        .listen()
        .expect("the bridge listens");
    let addr = listener.local_addr().expect("its address");
    let text =
        format!("[[host]]\nname = \"h1\"\n\n[[external]]\nnode = \"h1\"\nconnect = \"{addr}\"\n");
    let mut lab = Lab::new(name, &text);
    lab.start_host("h1");
    let link = listener
        .accept(Some(LIMIT))
        .expect("accept")
        .expect("hostd dialled the bridge");
    assert!(sigd.bridge(link));
    lab.wait_host_signalling();
    assert!(
        sigd.wait(LIMIT, |s| sigd_established(s)),
        "atmsigd's SSCOP never established:\n{}",
        sigd.log()
    );
    Some((lab, sigd))
}

/// `atmsigd -m network` as the network of a natm host on an `[[external]]` link: calls
/// both ways.
#[test]
fn host_external_calls() {
    let Some((lab, mut sigd)) = host_setup("hostcalls") else {
        return;
    };
    let direction = "natm host (user) ↔ atmsigd -m network";
    report(
        "SSCOP over the host's external link",
        direction,
        "established (hostd: signalling up)",
        "-",
    );
    calls_both_ways(&lab, &mut sigd, "h1", direction);
}

/// `atmsigd -m network` and a natm host: SSCOP stays established over 16.5 s of idle.
#[test]
fn host_external_keeps_sscop_alive() {
    let Some((lab, mut sigd)) = host_setup("hostidle") else {
        return;
    };
    let what = stays_up(&mut sigd, Duration::from_millis(16_500));
    lab.wait_host_signalling();
    report(
        "SSCOP establishment + keep-alive (16.5 s idle)",
        "natm host (user) ↔ atmsigd -m network",
        &what,
        "-",
    );
}

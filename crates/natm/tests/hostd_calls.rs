//! The API's switched VCs through the real hostd (in this process), whose link ends at a
//! fake switch in a thread: a network-side `natm_sig::Signalling` on VC 0.5 that answers
//! a SETUP with CONNECT on a VCI it picks and loops that VC's cells back, refuses one
//! address with cause 37 and an explanation, and offers calls to the host or releases them
//! when the test asks. (TEST SUPPORT: the same shape as natm-host's tests/svc.rs switch,
//! which speaks hostd's protocol by hand; a shared test-support module would serve both.)
//! Through real switches these are the lab's tests.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use natm::{Aesa, CallOptions, ChannelOptions, DataPath, Error, Host, NotifyMode};
use natm_adapter::{Reassembler, Reassembly};
use natm_core::{HeaderFormat, Qos, VcId};
use natm_host::hostd::{HostdOptions, HostdThread, IdleWait};
use natm_link::endpoint::EndpointLink;
use natm_link::{CellBytes, CellLink, LinkCounters};
use natm_sig::{
    CallEvent, CallId, Cause, CauseValue, ConnId, Location, PartyNumber, Role, SetupParams,
    Signalling,
};
use natm_wire::aal5::Segmenter;
use natm_wire::cell::{Cell as WireCell, CellHeader};
use natm_wire::q2931::Number;

const SIGNALLING: VcId = natm_host_core::SIGNALLING_VC;

fn vc_id(vci: u16) -> VcId {
    VcId::uni(0, u32::from(vci)).unwrap()
}

#[derive(Default)]
struct Wire {
    to_switch: VecDeque<CellBytes>,
    to_host: VecDeque<CellBytes>,
}

/// hostd's end of the link.
struct HostEnd {
    wire: Arc<Mutex<Wire>>,
    counters: LinkCounters,
}

impl CellLink for HostEnd {
    fn send_cells(&mut self, cells: &[CellBytes]) -> io::Result<usize> {
        self.wire.lock().unwrap().to_switch.extend(cells);
        self.counters.tx_cells += cells.len() as u64;
        Ok(cells.len())
    }
    fn recv_cells(&mut self, buf: &mut [CellBytes]) -> io::Result<usize> {
        let mut w = self.wire.lock().unwrap();
        let n = buf.len().min(w.to_host.len());
        for (slot, c) in buf.iter_mut().zip(w.to_host.drain(..n)) {
            *slot = c;
        }
        self.counters.rx_cells += n as u64;
        Ok(n)
    }
    fn wait_recv(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        if self.wire.lock().unwrap().to_host.is_empty() {
            if let Some(t) = timeout {
                std::thread::sleep(t.min(Duration::from_millis(1)));
            }
            return Ok(false);
        }
        Ok(true)
    }
    fn wait_send(&mut self, _timeout: Option<Duration>) -> io::Result<bool> {
        Ok(true)
    }
    fn poll_fd(&self) -> Option<BorrowedFd<'_>> {
        None
    }
    fn counters(&self) -> LinkCounters {
        self.counters
    }
}

impl EndpointLink for HostEnd {
    fn next_due(&self) -> Option<Instant> {
        None
    }
}

fn host_address() -> Aesa {
    let mut a = Aesa([0x47; 20]);
    a.0[19] = 0;
    a
}

fn far_address() -> Aesa {
    Aesa([0x45; 20])
}

fn refused_address() -> Aesa {
    Aesa([0x39; 20])
}

/// What the test asks of the switch.
enum Cmd {
    /// A SETUP to the host's `selector` on `vci`, from [`far_address`].
    Offer { vci: u16, selector: u8, qos: Qos },
    /// RELEASE of the call on `vci`, cause 16 with diagnostics "far end".
    Release { vci: u16 },
}

struct Switch {
    stop: Arc<AtomicBool>,
    cmds: Sender<Cmd>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Switch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run_switch(wire: &Mutex<Wire>, stop: &AtomicBool, cmds: &Receiver<Cmd>) {
    let epoch = Instant::now();
    let now = || natm_core::Instant::from_nanos(epoch.elapsed().as_nanos() as u64);
    let mut sig = Signalling::new(
        now(),
        natm_sig::Config::new(Role::Network),
        natm_sscop::Config::default(),
    );
    let mut rx = Reassembler::new(SIGNALLING, 8192).unwrap();
    let mut next_vci = 32768u16;
    let mut vcis: BTreeMap<CallId, u16> = BTreeMap::new();
    while !stop.load(Ordering::Relaxed) {
        let t = now();
        let cells: Vec<CellBytes> = wire.lock().unwrap().to_switch.drain(..).collect();
        let mut back = Vec::new();
        for cell in cells {
            let h = CellHeader::parse_unverified(
                &WireCell::new_unchecked(&cell[..]),
                HeaderFormat::Uni,
            );
            if h.vc == SIGNALLING {
                if let Reassembly::Complete(_) = rx.push_cell(&cell) {
                    sig.handle_pdu(t, rx.sdu());
                }
            } else if vcis.values().any(|v| vc_id(*v) == h.vc) {
                back.push(cell);
            }
        }
        while let Ok(cmd) = cmds.try_recv() {
            match cmd {
                Cmd::Offer { vci, selector, qos } => {
                    let mut called = host_address();
                    called.0[19] = selector;
                    let params = SetupParams {
                        called: PartyNumber::aesa(called),
                        called_sub: None,
                        calling: Some(PartyNumber::aesa(far_address())),
                        calling_sub: None,
                        qos,
                        blli: None,
                        bhli: None,
                        conn: Some(ConnId { vpci: 0, vci }),
                    };
                    if let Ok(c) = sig.setup(t, &params) {
                        vcis.insert(c, vci);
                    }
                }
                Cmd::Release { vci } => {
                    if let Some((c, _)) = vcis.iter().find(|(_, v)| **v == vci) {
                        let mut cause =
                            Cause::new(Location::PrivateLocal, CauseValue::NormalCallClearing);
                        cause.diagnostics = b"far end".to_vec();
                        let _ = sig.release(t, *c, cause);
                    }
                }
            }
        }
        if sig.poll_timeout().is_some_and(|d| d <= t) {
            sig.handle_timeout(t);
        }
        while let Some(e) = sig.poll_event() {
            match e {
                CallEvent::Setup { call, setup } => {
                    let called = match &setup.params.called.number {
                        Number::Aesa(a) => Some(*a),
                        _ => None,
                    };
                    if called == Some(refused_address()) {
                        let mut cause = Cause::new(
                            Location::PrivateLocal,
                            CauseValue::UserCellRateNotAvailable,
                        );
                        cause.diagnostics = b"s1 p2: 1000 c/s free".to_vec();
                        let _ = sig.release(t, call, cause);
                    } else {
                        let vci = next_vci;
                        next_vci += 1;
                        vcis.insert(call, vci);
                        let _ = sig.connect(t, call, Some(ConnId { vpci: 0, vci }));
                    }
                }
                CallEvent::Released { call, .. } => {
                    vcis.remove(&call);
                }
                _ => {}
            }
        }
        while let Some(sdu) = sig.poll_transmit() {
            let mut seg = Segmenter::uni(SIGNALLING, &sdu).unwrap();
            let mut cell = [0u8; 53];
            while seg.next_cell(&mut cell) {
                back.push(cell);
            }
        }
        wire.lock().unwrap().to_host.extend(back);
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// hostd with an address, its link at the fake switch, signalling up.
struct Setup {
    dir: std::path::PathBuf,
    hostd: Option<HostdThread>,
    switch: Switch,
}

impl Drop for Setup {
    fn drop(&mut self) {
        drop(self.hostd.take());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Setup {
    fn new(tag: &str) -> Setup {
        let dir = std::env::temp_dir().join(format!("natm-api-svc-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let wire = Arc::new(Mutex::new(Wire::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (cmds, cmd_rx) = channel();
        let (w, s) = (wire.clone(), stop.clone());
        let thread = std::thread::spawn(move || run_switch(&w, &s, &cmd_rx));
        let switch = Switch {
            stop,
            cmds,
            thread: Some(thread),
        };
        let opts = HostdOptions {
            name: "h".into(),
            socket: dir.join("h.sock"),
            wait: IdleWait::Adaptive,
            link_description: "fake switch".into(),
            link_rate: None,
            lanes: None,
            address: Some(host_address()),
        };
        let mut once = Some(wire);
        let connector: natm_host::hostd::Connector = Box::new(move || match once.take() {
            Some(wire) => Ok(Box::new(HostEnd {
                wire,
                counters: LinkCounters::default(),
            }) as _),
            None => Err(io::Error::other("one link only")),
        });
        let hostd = HostdThread::spawn(opts, connector).unwrap();
        let s = Setup {
            dir,
            hostd: Some(hostd),
            switch,
        };
        let host = s.host();
        let end = Instant::now() + Duration::from_secs(10);
        while !host.status().unwrap().signalling_up {
            assert!(Instant::now() < end, "signalling never came up");
            std::thread::sleep(Duration::from_millis(5));
        }
        s
    }

    fn host(&self) -> Host {
        Host::connect_path(self.hostd.as_ref().unwrap().socket()).unwrap()
    }
}

const WAIT: Duration = Duration::from_secs(10);

fn opts(path: DataPath) -> CallOptions {
    CallOptions::new()
        .qos("aal5,cbr:pcr=1000,max_sdu=1024".parse().unwrap())
        .path(path)
        .notify(NotifyMode::Poll)
        .buffers(4)
        .buffer_size(1024)
        .timeout(Duration::from_secs(5))
}

#[test]
fn a_call_carries_data_on_the_direct_and_daemon_paths_and_tells_its_vc() {
    let s = Setup::new("paths");
    let host = s.host();
    for (i, path) in [DataPath::Direct, DataPath::Daemon].into_iter().enumerate() {
        let mut vc = host.call(&far_address(), opts(path)).unwrap();
        let call = vc.call().expect("a switched VC").clone();
        assert_eq!(call.vc, vc_id(32768 + i as u16), "{path:?}");
        assert_eq!(
            (call.local, call.remote),
            (host_address(), Some(far_address()))
        );
        vc.send(b"through the switch and back").unwrap();
        let mut buf = [0u8; 1024];
        let n = vc.recv_timeout(&mut buf, WAIT).unwrap();
        assert_eq!(&buf[..n], b"through the switch and back", "{path:?}");
    }
}

#[test]
fn a_refusal_by_the_network_is_call_failed_with_the_explanation() {
    let s = Setup::new("refused");
    let e = s
        .host()
        .call(&refused_address(), opts(DataPath::Daemon))
        .err()
        .expect("refused");
    match &e {
        Error::CallFailed(c) => {
            assert_eq!(
                (c.value, c.diagnostic.as_str()),
                (37, "s1 p2: 1000 c/s free")
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().starts_with("call refused: cause 37 ("), "{e}");
}

#[test]
fn an_accepted_call_carries_data_and_its_release_is_the_next_operation_s_error() {
    let s = Setup::new("accept");
    let host = s.host();
    let listener = host.listen(Some(5)).unwrap();
    assert_eq!(listener.address().0[19], 5);
    for (vci, path) in [(40000, DataPath::Direct), (40001, DataPath::Daemon)] {
        let qos: Qos = "aal5,ubr:pcr=2000,max_sdu=1024".parse().unwrap();
        s.switch
            .cmds
            .send(Cmd::Offer {
                vci,
                selector: 5,
                qos,
            })
            .unwrap();
        let call = listener.next_call(Some(WAIT)).unwrap();
        assert_eq!(call.calling(), Some(&far_address()));
        let ch = ChannelOptions::default()
            .path(path)
            .notify(NotifyMode::Poll)
            .buffers(4)
            .buffer_size(1024);
        let mut vc = listener.accept_call(call, &ch).unwrap();
        assert_eq!(vc.call().unwrap().vc, vc_id(vci));
        vc.send(b"looped").unwrap();
        let mut buf = [0u8; 1024];
        let n = vc.recv_timeout(&mut buf, WAIT).unwrap();
        assert_eq!(&buf[..n], b"looped", "{path:?}");
        s.switch.cmds.send(Cmd::Release { vci }).unwrap();
        match vc.recv_timeout(&mut buf, WAIT) {
            Err(Error::Released(c)) => {
                assert_eq!(
                    (c.value, c.diagnostic.as_str()),
                    (16, "far end"),
                    "{path:?}"
                )
            }
            other => panic!("{path:?}: expected the release, got {other:?}"),
        }
        assert!(matches!(vc.send(b"x"), Err(Error::Released(_))), "{path:?}");
    }
}

#[test]
fn a_listener_rejects_with_a_cause_and_the_host_stays_usable() {
    let s = Setup::new("reject");
    let host = s.host();
    let listener = host.listen(None).unwrap();
    s.switch
        .cmds
        .send(Cmd::Offer {
            vci: 40100,
            selector: 0,
            qos: "ubr".parse().unwrap(),
        })
        .unwrap();
    let call = listener.next_call(Some(WAIT)).unwrap();
    listener.reject(call, 21).unwrap();
    // A call after it still works.
    let mut vc = host.call(&far_address(), opts(DataPath::Daemon)).unwrap();
    vc.send(b"after").unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(vc.recv_timeout(&mut buf, WAIT).unwrap(), 5);
}

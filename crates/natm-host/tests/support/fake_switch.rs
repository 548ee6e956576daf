//! A fake switch for hostd's switched-VC tests (test support, shared by natm-host's
//! `tests/svc.rs` and natm's `tests/hostd_calls.rs`): a network-side `natm_sig::Signalling`
//! on VC 0.5 of an in-memory link that answers a SETUP with CONNECT on a VCI it picks and
//! loops that VC's cells back, refuses [`refused_address`] with cause 37 and an
//! explanation, never answers [`silent_address`], and offers or releases calls when the
//! test asks; [`start_hostd`] puts a hostd at its other end.

#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::os::fd::BorrowedFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use natm_adapter::{Reassembler, Reassembly};
use natm_core::addr::Aesa;
use natm_core::{HeaderFormat, Qos, VcId};
use natm_host::hostd::{HostdOptions, HostdThread, IdleWait};
use natm_host_core::SIGNALLING_VC;
use natm_link::endpoint::EndpointLink;
use natm_link::{CellBytes, CellLink, LinkCounters};
use natm_sig::{
    CallEvent, CallId, Cause, CauseValue, ConnId, Location, PartyNumber, Role, SetupParams,
    Signalling,
};
use natm_wire::aal5::Segmenter;
use natm_wire::cell::{Cell as WireCell, CellHeader};
use natm_wire::q2931::Number;

// ------------------------------------------------------------------ the link

#[derive(Default)]
pub struct Wire {
    pub to_switch: VecDeque<CellBytes>,
    pub to_host: VecDeque<CellBytes>,
}

/// hostd's end of a link to the fake switch.
pub struct HostEnd {
    pub wire: Arc<Mutex<Wire>>,
    pub counters: LinkCounters,
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

// ----------------------------------------------------------- the fake switch

/// The called address the switch never answers.
pub fn silent_address() -> Aesa {
    Aesa([0x33; 20])
}

/// The called address the switch refuses (cause 37 with an explanation).
pub fn refused_address() -> Aesa {
    Aesa([0x39; 20])
}

pub fn host_address() -> Aesa {
    let mut a = Aesa([0x47; 20]);
    a.0[19] = 0;
    a
}

pub fn far_address() -> Aesa {
    Aesa([0x45; 20])
}

/// What the test asks of the switch.
pub enum Cmd {
    /// A SETUP to the host on `vci`, to `selector` of its address.
    Offer { vci: u16, selector: u8, qos: Qos },
    /// RELEASE of the call on `vci` with cause 16 and diagnostics "far end".
    Release { vci: u16 },
}

/// What the switch saw.
#[derive(Debug)]
pub enum Seen {
    Connected { vci: u16 },
    Released { vci: Option<u16>, cause: Cause },
}

pub struct Switch {
    pub stop: Arc<AtomicBool>,
    pub cmds: Sender<Cmd>,
    pub seen: Receiver<Seen>,
    pub thread: Option<std::thread::JoinHandle<()>>,
}

impl Switch {
    pub fn spawn(wire: Arc<Mutex<Wire>>) -> Switch {
        let stop = Arc::new(AtomicBool::new(false));
        let (cmds, cmd_rx) = channel();
        let (seen_tx, seen) = channel();
        let s = stop.clone();
        let thread = std::thread::spawn(move || run_switch(&wire, &s, &cmd_rx, &seen_tx));
        Switch {
            stop,
            cmds,
            seen,
            thread: Some(thread),
        }
    }

    /// The next thing the switch saw that `pick` takes, within 10 s.
    pub fn wait<T>(&self, mut pick: impl FnMut(Seen) -> Option<T>) -> T {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let s = self.seen.recv_timeout(left).expect("the switch saw it");
            if let Some(t) = pick(s) {
                return t;
            }
        }
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub fn run_switch(
    wire: &Mutex<Wire>,
    stop: &AtomicBool,
    cmds: &Receiver<Cmd>,
    seen: &Sender<Seen>,
) {
    let epoch = Instant::now();
    let now = || natm_core::Instant::from_nanos(epoch.elapsed().as_nanos() as u64);
    let mut sig = Signalling::new(
        now(),
        natm_sig::Config::new(Role::Network),
        natm_sscop::Config::default(),
    );
    let mut rx = Reassembler::new(SIGNALLING_VC, 8192).unwrap();
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
            if h.vc == SIGNALLING_VC {
                if let Reassembly::Complete(_) = rx.push_cell(&cell) {
                    sig.handle_pdu(t, rx.sdu());
                }
            } else if vcis
                .values()
                .any(|v| VcId::uni(0, u32::from(*v)).ok() == Some(h.vc))
            {
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
                    if called == Some(silent_address()) {
                        // No answer at all.
                    } else if called == Some(refused_address()) {
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
                CallEvent::Connected { call, .. } => {
                    if let Some(v) = vcis.get(&call) {
                        let _ = seen.send(Seen::Connected { vci: *v });
                    }
                }
                CallEvent::Released { call, cause, .. } => {
                    let vci = vcis.remove(&call);
                    let _ = seen.send(Seen::Released { vci, cause });
                }
                _ => {}
            }
        }
        while let Some(sdu) = sig.poll_transmit() {
            let mut seg = Segmenter::uni(SIGNALLING_VC, &sdu).unwrap();
            let mut cell = [0u8; 53];
            while seg.next_cell(&mut cell) {
                back.push(cell);
            }
        }
        wire.lock().unwrap().to_host.extend(back);
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// A hostd named `h` with its socket in `dir` and `address` (none: it does not signal),
/// its one link at a fresh fake switch.
pub fn start_hostd(dir: &Path, address: Option<Aesa>) -> (HostdThread, Switch) {
    let wire = Arc::new(Mutex::new(Wire::default()));
    let switch = Switch::spawn(wire.clone());
    let opts = HostdOptions {
        name: "h".into(),
        socket: dir.join("h.sock"),
        wait: IdleWait::Adaptive,
        link_description: "fake switch".into(),
        link_rate: natm_core::LineRate::Unlimited,
        lanes: None,
        address,
    };
    let mut once = Some(wire);
    let connector: natm_host::hostd::Connector = Box::new(move || match once.take() {
        Some(wire) => Ok(Box::new(HostEnd {
            wire,
            counters: LinkCounters::default(),
        }) as _),
        None => Err(io::Error::other("one link only")),
    });
    (HostdThread::spawn(opts, connector).unwrap(), switch)
}

//! TEST SUPPORT ONLY: a fake host daemon that speaks natm_proto::host frames on a Unix
//! socket, with no link, no adapter and no signalling, so the `natm` API's call, listen,
//! accept, reject and release handling can be tested before hostd signals.
//!
//! What it does, per request (daemon path only; anything else is refused):
//!
//! * `Call` to [`REFUSED`]: answered `CallFailed` with [`refusal`] (cause 37 and a switch's
//!   explanation);
//! * `Call` while a listener of the called selector (or of any) is registered: offers the
//!   call to it (`Incoming`) and answers the caller when the listener accepts (`Opened`
//!   with the call to both, their data frames then cross over) or rejects (`CallFailed`
//!   with the listener's cause);
//! * `Call` to [`HELD`]: no answer until [`FakeHostd::answer_held`];
//! * `Call` while a listener that accepts by itself is registered: `Arrived` to it and
//!   `Opened` to the caller at once;
//! * `Call` with no listener: `Opened` with a call, and data frames on it are echoed back;
//! * `Close`: `Closed`, and the far end of a crossed call gets `Released` (cause 16);
//! * `Status`: a status naming the host's address.
//!
//! [`FakeHostd::release`] sends `Released` for a handle, as hostd does when the network
//! clears a call.

#![allow(dead_code)]

use std::collections::HashMap;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use natm_core::addr::Aesa;
use natm_core::{Qos, VcId};
use natm_proto::host::{
    self as proto, CallInfo, CauseInfo, DataPath, ErrorKind, Frame, HostStatus, Request, Response,
};

/// The fake host's own address.
pub const ADDRESS: &str = "47.0005.80ffe1000000f21a3599.0020481a3599.00";
/// An address the fake network refuses.
pub const REFUSED: &str = "47.0005.80ffe1000000f21a3599.00204800dead.00";
/// An address whose calls the fake holds unanswered until [`FakeHostd::answer_held`].
pub const HELD: &str = "47.0005.80ffe1000000f21a3599.002048000001.00";

/// The refusal a call to [`REFUSED`] gets.
pub fn refusal() -> CauseInfo {
    CauseInfo {
        value: 37,
        name: "user cell rate not available".into(),
        location: "LPN".into(),
        diagnostic: "s2 p3: 1000 c/s free".into(),
    }
}

/// A connection's writing end, shared by the threads that answer on it.
type Writer = Arc<Mutex<UnixStream>>;

fn send(w: &Writer, frame: &[u8]) {
    let s = w.lock().unwrap_or_else(|p| p.into_inner());
    let _ = proto::write_frame(&s, frame);
}

fn control(w: &Writer, r: &Response) {
    send(w, &proto::control_frame(r));
}

struct Vc {
    owner: Writer,
    cookie: String,
    /// The other end of a crossed call (its handle), else echo.
    peer: Option<u32>,
}

struct Pending {
    caller: Writer,
    called: Aesa,
    calling: Aesa,
    qos: Qos,
}

#[derive(Default)]
struct State {
    next: u32,
    /// Each listener: its number, selector (`None`: any) and connection.
    /// Id, selector, connection, and whether it accepts by itself.
    listeners: Vec<(u32, Option<u8>, Writer, bool)>,
    /// Calls to [`HELD`] not answered yet: the caller's connection and the called address.
    held: Vec<(Writer, Aesa, Qos)>,
    pending: HashMap<u32, Pending>,
    vcs: HashMap<u32, Vc>,
}

impl State {
    fn id(&mut self) -> u32 {
        self.next += 1;
        self.next
    }

    /// Opens a daemon-path VC owned by `owner` and answers it `Opened` with `call`.
    /// Opens a VC for `owner`: answered `Opened`, or for an auto-accepting listener
    /// `arrived`, announced as `Arrived`.
    fn open(
        &mut self,
        owner: &Writer,
        peer: Option<u32>,
        call: CallInfo,
        arrived: Option<u32>,
    ) -> u32 {
        let handle = self.id();
        let cookie = format!("{handle:032x}");
        self.vcs.insert(
            handle,
            Vc {
                owner: owner.clone(),
                cookie: cookie.clone(),
                peer,
            },
        );
        let opened = Response::Opened {
            handle,
            cookie,
            path: DataPath::Daemon,
            buffers: 32,
            buffer_size: 65536,
            max_sdu: 65535,
            link_up: true,
            lane: None,
            call: Some(call),
        };
        match arrived {
            None => control(owner, &opened),
            Some(listener) => control(
                owner,
                &Response::Arrived {
                    listener,
                    opened: Box::new(opened),
                },
            ),
        }
        handle
    }
}

/// The fake daemon: a thread accepting connections on a socket in a directory of its own.
pub struct FakeHostd {
    dir: PathBuf,
    socket: PathBuf,
    state: Arc<Mutex<State>>,
}

fn addr(text: &str) -> Aesa {
    text.parse().expect("a test address")
}

impl FakeHostd {
    /// Starts it in a fresh temporary directory.
    pub fn start(tag: &str) -> FakeHostd {
        let dir =
            std::env::temp_dir().join(format!("natm-fake-hostd-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let socket = dir.join("h1.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let st = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let st = st.clone();
                std::thread::spawn(move || serve(stream, &st));
            }
        });
        FakeHostd { dir, socket, state }
    }

    /// Its socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Sends `Released` for `handle` with `cause`, as hostd does when the network clears
    /// the call; the VC is gone.
    pub fn release(&self, handle: u32, cause: CauseInfo) {
        let mut st = self.state.lock().unwrap();
        if let Some(vc) = st.vcs.remove(&handle) {
            control(&vc.owner, &Response::Released { handle, cause });
        }
    }

    /// Answers the calls to [`HELD`] now (`Opened`), however late that is.
    pub fn answer_held(&self) {
        let mut st = self.state.lock().unwrap();
        let held = std::mem::take(&mut st.held);
        for (w, called, qos) in held {
            let info = CallInfo {
                vc: "0.32771".parse::<VcId>().unwrap(),
                local: addr(ADDRESS),
                remote: Some(called),
                qos,
                setup_ns: 9_000_000_000,
            };
            st.open(&w, None, info, None);
        }
    }

    /// Open VCs.
    pub fn open_vcs(&self) -> usize {
        self.state.lock().unwrap().vcs.len()
    }
}

impl Drop for FakeHostd {
    fn drop(&mut self) {
        // The accepting thread stays blocked in accept; the socket file goes.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn serve(stream: UnixStream, st: &Mutex<State>) {
    let w: Writer = Arc::new(Mutex::new(stream.try_clone().unwrap()));
    loop {
        let frame = match proto::read_frame::<Request>(&stream) {
            Ok((f, _)) => f,
            Err(_) => break,
        };
        let mut s = st.lock().unwrap();
        match frame {
            Frame::Data { handle, sdu } => {
                let Some(vc) = s.vcs.get(&handle) else {
                    continue;
                };
                match vc.peer.and_then(|p| s.vcs.get(&p).map(|v| (p, v))) {
                    Some((p, peer)) => send(&peer.owner, &proto::data_frame(p, &sdu)),
                    None => send(&vc.owner, &proto::data_frame(handle, &sdu)),
                }
            }
            Frame::Control(r) => answer(&mut s, &w, r),
        }
    }
    // The connection closed: its listeners and VCs go.
    let mut s = st.lock().unwrap();
    s.listeners.retain(|(_, _, l, _)| !Arc::ptr_eq(l, &w));
    s.vcs.retain(|_, v| !Arc::ptr_eq(&v.owner, &w));
}

fn refuse(w: &Writer, message: &str) {
    control(
        w,
        &Response::Error {
            kind: ErrorKind::Refused,
            message: message.into(),
        },
    );
}

fn answer(s: &mut State, w: &Writer, r: Request) {
    let own = addr(ADDRESS);
    match r {
        Request::Call {
            called, qos, path, ..
        } => {
            if path != DataPath::Daemon {
                return refuse(w, "the fake hostd has the daemon path only");
            }
            if called == addr(REFUSED) {
                return control(w, &Response::CallFailed { cause: refusal() });
            }
            if called == addr(HELD) {
                s.held.push((w.clone(), called, qos));
                return;
            }
            let sel = called.0[19];
            let listening = s
                .listeners
                .iter()
                .find(|(_, l, _, _)| l.is_none_or(|l| l == sel))
                .map(|(id, _, w, auto)| (*id, w.clone(), *auto));
            if let Some((listener, lw, true)) = listening {
                // Accepted at once: the listener hears of it as active.
                let info = |remote: Aesa, local: Aesa, vci: u16| CallInfo {
                    vc: format!("0.{vci}").parse::<VcId>().unwrap(),
                    local,
                    remote: Some(remote),
                    qos,
                    setup_ns: 2_000_000,
                };
                let callee = s.open(&lw, None, info(own, called, 32769), Some(listener));
                let caller = s.open(w, Some(callee), info(called, own, 32770), None);
                if let Some(v) = s.vcs.get_mut(&callee) {
                    v.peer = Some(caller);
                }
                return;
            }
            if let Some((listener, lw, _)) = listening {
                let call = s.id();
                s.pending.insert(
                    call,
                    Pending {
                        caller: w.clone(),
                        called,
                        calling: own,
                        qos,
                    },
                );
                return control(
                    &lw,
                    &Response::Incoming {
                        listener,
                        call,
                        calling: Some(own),
                        called,
                        qos,
                    },
                );
            }
            let info = CallInfo {
                vc: "0.32768".parse::<VcId>().unwrap(),
                local: own,
                remote: Some(called),
                qos,
                setup_ns: 1_500_000,
            };
            s.open(w, None, info, None);
        }
        Request::Listen { selector, accept } => {
            // (A call on any path but the daemon's is refused before it reaches one.)
            let listener = s.id();
            s.listeners
                .push((listener, selector, w.clone(), accept.is_some()));
            let mut address = own;
            if let Some(sel) = selector {
                address.0[19] = sel;
            }
            control(w, &Response::Listening { listener, address });
        }
        Request::Accept { call, path, .. } => {
            if path != DataPath::Daemon {
                return refuse(w, "the fake hostd has the daemon path only");
            }
            let Some(p) = s.pending.remove(&call) else {
                return refuse(w, "no such call");
            };
            let info = |remote: Aesa, local: Aesa, vci: u16| CallInfo {
                vc: format!("0.{vci}").parse::<VcId>().unwrap(),
                local,
                remote: Some(remote),
                qos: p.qos,
                setup_ns: 2_000_000,
            };
            let callee = s.open(w, None, info(p.calling, p.called, 32769), None);
            let caller = s.open(
                &p.caller,
                Some(callee),
                info(p.called, p.calling, 32770),
                None,
            );
            if let Some(v) = s.vcs.get_mut(&callee) {
                v.peer = Some(caller);
            }
        }
        Request::Reject { call, cause } => {
            let Some(p) = s.pending.remove(&call) else {
                return refuse(w, "no such call");
            };
            control(w, &Response::Rejected { call });
            control(
                &p.caller,
                &Response::CallFailed {
                    cause: CauseInfo {
                        value: cause,
                        name: "call rejected".into(),
                        location: "U".into(),
                        diagnostic: String::new(),
                    },
                },
            );
        }
        Request::Close { cookie, quiet } => {
            let Some(handle) = s
                .vcs
                .iter()
                .find(|(_, v)| v.cookie == cookie)
                .map(|(h, _)| *h)
            else {
                if !quiet {
                    refuse(w, "no such VC");
                }
                return;
            };
            let vc = s.vcs.remove(&handle).expect("found above");
            if !quiet {
                control(w, &Response::Closed { handle });
            }
            if let Some(p) = vc.peer
                && let Some(peer) = s.vcs.remove(&p)
            {
                control(
                    &peer.owner,
                    &Response::Released {
                        handle: p,
                        cause: CauseInfo {
                            value: 16,
                            name: "normal call clearing".into(),
                            location: "U".into(),
                            diagnostic: String::new(),
                        },
                    },
                );
            }
        }
        Request::Status => control(
            w,
            &Response::Status(HostStatus {
                name: "h1".into(),
                address: Some(own),
                signalling_up: true,
                ..HostStatus::default()
            }),
        ),
        _ => refuse(w, "the fake hostd does not do that"),
    }
}

//! hostd's switched VCs: the protocol's `call`, `listen`, `accept` and `reject` on the host
//! core's UNI user side, each call's VC opened as `open` opens a PVC's, and the calls of an
//! application that goes released at once.

use natm_core::addr::Aesa;
use natm_host_core::{
    CallError, CallId, CallParams, Cause, CauseValue, Direction as CallDirection, IncomingCall,
    Location, VcHandle, user_cause,
};
use natm_proto::host::{AutoAccept, CallInfo, CauseInfo, HostCall};
use natm_sig::{CallState, Role};

use super::*;

/// What hostd says when it is asked for a call and has no address.
pub(super) const NO_ADDRESS: &str = "this host has no ATM address (hostd's `address`): it does not signal, switched VCs are not available";

/// How an application asked its VC to be opened: [`Hostd::open`]'s arguments but the VC.
#[derive(Clone, Copy, Debug)]
pub(super) struct Shape {
    pub(super) path: DataPath,
    pub(super) notify: NotifyMode,
    pub(super) signal: Option<SignalTarget>,
    pub(super) buffers: u32,
    pub(super) buffer_size: u32,
}

/// Where a call is, as hostd sees it.
pub(super) enum Waiting {
    /// An outgoing call: `Opened` or `CallFailed` once it ends, `CallFailed` (102) at the
    /// deadline.
    Connect { shape: Shape, deadline: Instant },
    /// Offered to a listener, not answered yet.
    Offered,
    /// Accepted, its VC open: the `Opened` answer (or, for a listener that accepts by
    /// itself, the `Arrived` notice to `arrived`'s listener) waits for the network's
    /// confirmation.
    Accepted {
        opened: Box<Response>,
        fds: Vec<OwnedFd>,
        arrived: Option<u32>,
    },
    /// Active: the application has the VC.
    Active,
}

/// A call hostd holds for an application.
pub(super) struct AppCall {
    pub(super) conn: u64,
    pub(super) owner_pid: i32,
    /// When the application asked for it (outgoing) or accepted it (incoming).
    pub(super) started: natm_core::Instant,
    /// The VC's handle once it is open.
    pub(super) handle: Option<u32>,
    pub(super) waiting: Waiting,
}

/// A `listen` of a connection.
pub(super) struct Listener {
    pub(super) conn: u64,
    pub(super) selector: Option<u8>,
    /// Accepts every call itself, its VC opened so.
    pub(super) auto: Option<Shape>,
}

/// A Q.2931 cause as an application reads it.
pub(super) fn cause_info(c: &Cause) -> CauseInfo {
    let value = c.value.code();
    let d = &c.diagnostics;
    let diagnostic = if d.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        String::from_utf8_lossy(d).into_owned()
    } else {
        d.iter().map(|b| format!("{b:02x}")).collect()
    };
    CauseInfo {
        value,
        name: c
            .value
            .name()
            .map_or_else(|| format!("cause {value}"), String::from),
        location: match c.location {
            Location::Unknown(v) => format!("location {v}"),
            l => l.abbrev().to_string(),
        },
        diagnostic,
    }
}

/// `U10 active` and the like.
fn state_text(s: CallState) -> String {
    let what = match s {
        CallState::Null => "null",
        CallState::CallInitiated => "call initiated",
        CallState::OutgoingCallProceeding => "outgoing call proceeding",
        CallState::CallPresent => "call present",
        CallState::ConnectRequest => "connect request",
        CallState::IncomingCallProceeding => "incoming call proceeding",
        CallState::Active => "active",
        CallState::ReleaseRequest => "release request",
        CallState::ReleaseIndication => "release indication",
    };
    format!("{} {what}", s.name(Role::User))
}

impl Hostd {
    fn refuse_no_address(&mut self, id: u64) {
        self.reply(
            id,
            Response::Error {
                kind: ErrorKind::Refused,
                message: NO_ADDRESS.to_string(),
            },
        );
    }

    fn await_answer(&mut self, id: u64, on: bool) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.awaiting = on;
        }
    }

    // ----------------------------------------------------------------- requests

    pub(super) fn call_request(
        &mut self,
        id: u64,
        called: Aesa,
        qos: &Qos,
        shape: Shape,
        timeout_ms: u64,
    ) {
        if !self.host.signals() {
            return self.refuse_no_address(id);
        }
        if let Err((kind, message)) = check_shape(shape.buffers, shape.buffer_size) {
            return self.reply(id, Response::Error { kind, message });
        }
        match self.host.call(self.now, &CallParams::new(called, *qos)) {
            Ok(call) => {
                let wait = Duration::from_millis(timeout_ms.clamp(1, 600_000));
                let owner_pid = self.conns.get(&id).map_or(0, |c| c.pid);
                self.calls.insert(
                    call,
                    AppCall {
                        conn: id,
                        owner_pid,
                        started: self.now,
                        handle: None,
                        waiting: Waiting::Connect {
                            shape,
                            deadline: Instant::now() + wait,
                        },
                    },
                );
                self.await_answer(id, true);
            }
            Err(CallError::Refused { cause, .. }) => self.reply(
                id,
                Response::CallFailed {
                    cause: cause_info(&cause),
                },
            ),
            Err(CallError::Command(natm_sig::CommandError::Qos(e))) => {
                let cause =
                    user_cause(CauseValue::UnsupportedTrafficParams, b"QoS not signallable");
                self.reply(
                    id,
                    Response::CallFailed {
                        cause: CauseInfo {
                            diagnostic: format!("QoS not signallable: {e}"),
                            ..cause_info(&cause)
                        },
                    },
                );
            }
            Err(CallError::LinkDown) => self.reply(
                id,
                Response::Error {
                    kind: ErrorKind::LinkDown,
                    message: "link down: no signalling until it is back".into(),
                },
            ),
            Err(e) => self.reply(
                id,
                Response::Error {
                    kind: ErrorKind::Refused,
                    message: e.to_string(),
                },
            ),
        }
    }

    pub(super) fn listen_request(
        &mut self,
        id: u64,
        selector: Option<u8>,
        accept: Option<AutoAccept>,
    ) {
        let Some(address) = self.host.address() else {
            return self.refuse_no_address(id);
        };
        let auto = match accept {
            None => None,
            Some(a) => {
                if a.notify == NotifyMode::Signal {
                    return self.reply(
                        id,
                        Response::Error {
                            kind: ErrorKind::BadRequest,
                            message: "a listener that accepts by itself cannot notify by signal (the signal's target is per VC): use poll, adaptive or eventfd".into(),
                        },
                    );
                }
                if let Err((kind, message)) = check_shape(a.buffers, a.buffer_size) {
                    return self.reply(id, Response::Error { kind, message });
                }
                Some(Shape {
                    path: a.path,
                    notify: a.notify,
                    signal: None,
                    buffers: a.buffers,
                    buffer_size: a.buffer_size,
                })
            }
        };
        if let Some((l, _)) = self.listeners.iter().find(|(_, l)| l.selector == selector) {
            let what = selector.map_or("any selector".to_string(), |s| format!("selector {s}"));
            return self.reply(
                id,
                Response::Error {
                    kind: ErrorKind::Refused,
                    message: format!("{what} is taken by listener {l}"),
                },
            );
        }
        let listener = self.next_listener;
        self.next_listener += 1;
        self.listeners.insert(
            listener,
            Listener {
                conn: id,
                selector,
                auto,
            },
        );
        let mut address = address;
        if let Some(s) = selector {
            address.0[19] = s;
        }
        self.reply(id, Response::Listening { listener, address });
    }

    /// The offered call `call` of connection `id`, or the refusal to answer with.
    fn offered(&self, id: u64, call: u32) -> Result<CallId, String> {
        let cid = CallId(u64::from(call));
        match self.calls.get(&cid) {
            Some(c) if c.conn == id && matches!(c.waiting, Waiting::Offered) => Ok(cid),
            _ => Err(format!(
                "no incoming call {call} waits for this connection's answer (answered, released or never offered)"
            )),
        }
    }

    pub(super) fn accept_request(&mut self, id: u64, call: u32, shape: Shape) {
        if !self.host.signals() {
            return self.refuse_no_address(id);
        }
        let cid = match self.offered(id, call) {
            Ok(c) => c,
            Err(message) => {
                return self.reply(
                    id,
                    Response::Error {
                        kind: ErrorKind::Refused,
                        message,
                    },
                );
            }
        };
        if let Err((kind, message)) = check_shape(shape.buffers, shape.buffer_size) {
            return self.reply(id, Response::Error { kind, message });
        }
        match self.accept_offered(id, cid, shape, None) {
            Ok(()) => self.await_answer(id, true),
            Err(r) => self.reply(id, *r),
        }
    }

    /// Accepts offered call `cid` of connection `id` and opens its VC as `shape` says;
    /// `arrived` names the listener when hostd accepts for it. The answer (or notice)
    /// waits for the network's confirmation; on failure, what to answer.
    fn accept_offered(
        &mut self,
        id: u64,
        cid: CallId,
        shape: Shape,
        arrived: Option<u32>,
    ) -> Result<(), Box<Response>> {
        if let Err(e) = self.host.accept(self.now, cid) {
            self.calls.remove(&cid);
            return Err(Box::new(match e {
                CallError::Refused { cause, .. } => Response::CallFailed {
                    cause: cause_info(&cause),
                },
                e => Response::Error {
                    kind: ErrorKind::Refused,
                    message: e.to_string(),
                },
            }));
        }
        let Some((vc, qos)) = self.host.call_info(cid).and_then(|i| Some((i.vc?, i.qos))) else {
            self.calls.remove(&cid);
            return Err(Box::new(Response::Error {
                kind: ErrorKind::Internal,
                message: "the accepted call has no VC".into(),
            }));
        };
        match self.open(
            id,
            vc,
            &qos,
            shape.path,
            shape.notify,
            shape.signal,
            shape.buffers,
            shape.buffer_size,
            Some(cid),
        ) {
            Ok((opened, fds)) => {
                let handle = match &opened {
                    Response::Opened { handle, .. } => Some(*handle),
                    _ => None,
                };
                if let Some(c) = self.calls.get_mut(&cid) {
                    c.started = self.now;
                    c.handle = handle;
                    c.waiting = Waiting::Accepted {
                        opened: Box::new(opened),
                        fds,
                        arrived,
                    };
                }
                Ok(())
            }
            Err((kind, message)) => {
                self.calls.remove(&cid);
                let cause = user_cause(CauseValue::ResourceUnavailable, b"hostd: VC not opened");
                let _ = self.host.release(self.now, cid, cause);
                Err(Box::new(Response::Error { kind, message }))
            }
        }
    }

    pub(super) fn reject_request(&mut self, id: u64, call: u32, cause: u8) {
        if !self.host.signals() {
            return self.refuse_no_address(id);
        }
        if !(1..=127).contains(&cause) {
            return self.reply(
                id,
                Response::Error {
                    kind: ErrorKind::BadRequest,
                    message: format!("cause {cause} is not in 1..=127"),
                },
            );
        }
        let r = match self.offered(id, call) {
            Ok(cid) => {
                self.calls.remove(&cid);
                let cause = user_cause(CauseValue::from_code(cause), b"");
                match self.host.reject(self.now, cid, cause) {
                    Ok(()) => Response::Rejected { call },
                    Err(e) => Response::Error {
                        kind: ErrorKind::Refused,
                        message: e.to_string(),
                    },
                }
            }
            Err(message) => Response::Error {
                kind: ErrorKind::Refused,
                message,
            },
        };
        self.reply(id, r);
    }

    // ------------------------------------------------------------ applications

    /// A call VC's application closed it: the call is released with 16.
    pub(super) fn release_call_of(&mut self, handle: u32) {
        let Some(call) = self.host.vc(VcHandle(handle)).and_then(|v| v.call()) else {
            return;
        };
        self.calls.remove(&call);
        let cause = user_cause(CauseValue::NormalCallClearing, b"");
        let _ = self.host.release(self.now, call, cause);
    }

    /// Connection `id` is gone: its calls are released with 31 now, its listeners go.
    pub(super) fn drop_calls_of(&mut self, id: u64) {
        let mine: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, c)| c.conn == id)
            .map(|(call, _)| *call)
            .collect();
        for call in mine {
            self.calls.remove(&call);
            let cause = user_cause(CauseValue::NormalUnspecified, b"application gone");
            let _ = self.host.release(self.now, call, cause);
        }
        self.listeners.retain(|_, l| l.conn != id);
    }

    /// Outgoing calls past their deadline fail with 102 and are released.
    pub(super) fn expire_calls(&mut self, now: Instant) {
        let late: Vec<CallId> = self
            .calls
            .iter()
            .filter(
                |(_, c)| matches!(c.waiting, Waiting::Connect { deadline, .. } if deadline <= now),
            )
            .map(|(call, _)| *call)
            .collect();
        for call in late {
            let Some(c) = self.calls.remove(&call) else {
                continue;
            };
            let cause = user_cause(
                CauseValue::RecoveryOnTimerExpiry,
                b"hostd: no answer in time",
            );
            let _ = self.host.release(self.now, call, cause.clone());
            self.await_answer(c.conn, false);
            self.reply(
                c.conn,
                Response::CallFailed {
                    cause: cause_info(&cause),
                },
            );
        }
    }

    /// The earliest outgoing call's deadline.
    pub(super) fn call_deadline(&self) -> Option<Instant> {
        self.calls
            .values()
            .filter_map(|c| match c.waiting {
                Waiting::Connect { deadline, .. } => Some(deadline),
                _ => None,
            })
            .min()
    }

    // ------------------------------------------------------------------- events

    pub(super) fn incoming(&mut self, i: &IncomingCall) {
        let selector = i.called.0[19];
        let listener = self
            .listeners
            .iter()
            .find(|(_, l)| l.selector == Some(selector))
            .or_else(|| self.listeners.iter().find(|(_, l)| l.selector.is_none()))
            .map(|(id, l)| (*id, l.conn, l.auto));
        let alive = listener
            .filter(|(_, conn, _)| self.conns.get(conn).is_some_and(|c| !c.dead && !c.closing));
        let Some((listener, conn, auto)) = alive else {
            // Nobody takes this selector: unallocated; a listener whose application is
            // going: incompatible destination.
            let (value, diag): (_, &[u8]) = match listener {
                None => (CauseValue::UnallocatedNumber, b"no listener"),
                Some(_) => (CauseValue::IncompatibleDestination, b"listener gone"),
            };
            let _ = self.host.reject(self.now, i.call, user_cause(value, diag));
            return;
        };
        let owner_pid = self.conns.get(&conn).map_or(0, |c| c.pid);
        self.calls.insert(
            i.call,
            AppCall {
                conn,
                owner_pid,
                started: self.now,
                handle: None,
                waiting: Waiting::Offered,
            },
        );
        if let Some(shape) = auto {
            // Nobody waits for an answer here: a VC that cannot be opened refuses the call.
            if self
                .accept_offered(conn, i.call, shape, Some(listener))
                .is_err()
            {
                let cause = user_cause(CauseValue::ResourceUnavailable, b"hostd: VC not opened");
                let _ = self.host.reject(self.now, i.call, cause);
            }
            return;
        }
        self.reply(
            conn,
            Response::Incoming {
                listener,
                call: i.call.0 as u32,
                calling: i.calling,
                called: i.called,
                qos: i.qos,
            },
        );
    }

    fn opened_call_info(&self, call: CallId, started: natm_core::Instant) -> Option<CallInfo> {
        let i = self.host.call_info(call)?;
        Some(CallInfo {
            vc: i.vc?,
            local: i.local,
            remote: i.remote,
            qos: i.qos,
            setup_ns: self.now.saturating_duration_since(started).as_nanos(),
        })
    }

    pub(super) fn connected(&mut self, call: CallId, vc: VcId) {
        let Some(c) = self.calls.get_mut(&call) else {
            return;
        };
        let (conn, started) = (c.conn, c.started);
        match std::mem::replace(&mut c.waiting, Waiting::Active) {
            Waiting::Connect { shape, .. } => {
                let qos = self.host.call_info(call).map(|i| i.qos).unwrap_or_default();
                let info = self.opened_call_info(call, started);
                self.await_answer(conn, false);
                match self.open(
                    conn,
                    vc,
                    &qos,
                    shape.path,
                    shape.notify,
                    shape.signal,
                    shape.buffers,
                    shape.buffer_size,
                    Some(call),
                ) {
                    Ok((mut opened, fds)) => {
                        if let Response::Opened {
                            handle, call: ci, ..
                        } = &mut opened
                        {
                            *ci = info;
                            if let Some(c) = self.calls.get_mut(&call) {
                                c.handle = Some(*handle);
                            }
                        }
                        if let Some(c) = self.conns.get_mut(&conn) {
                            c.push(proto::control_frame(&opened), fds);
                        }
                    }
                    Err((kind, message)) => {
                        self.calls.remove(&call);
                        let cause =
                            user_cause(CauseValue::ResourceUnavailable, b"hostd: VC not opened");
                        let _ = self.host.release(self.now, call, cause);
                        self.reply(conn, Response::Error { kind, message });
                    }
                }
            }
            Waiting::Accepted {
                mut opened,
                fds,
                arrived,
            } => {
                if let Response::Opened { call: ci, .. } = &mut *opened {
                    *ci = self.opened_call_info(call, started);
                }
                let frame = match arrived {
                    Some(listener) => proto::control_frame(&Response::Arrived { listener, opened }),
                    None => {
                        self.await_answer(conn, false);
                        proto::control_frame(&opened)
                    }
                };
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.push(frame, fds);
                }
            }
            w @ (Waiting::Offered | Waiting::Active) => {
                if let Some(c) = self.calls.get_mut(&call) {
                    c.waiting = w;
                }
            }
        }
    }

    pub(super) fn released(&mut self, call: CallId, cause: &Cause) {
        let Some(c) = self.calls.remove(&call) else {
            return;
        };
        let info = cause_info(cause);
        match c.waiting {
            Waiting::Connect { .. } | Waiting::Accepted { arrived: None, .. } => {
                self.await_answer(c.conn, false);
                self.reply(c.conn, Response::CallFailed { cause: info });
            }
            // The application never heard of it.
            Waiting::Offered
            | Waiting::Accepted {
                arrived: Some(_), ..
            } => {}
            Waiting::Active => {
                if let Some(h) = c.handle {
                    self.reply(
                        c.conn,
                        Response::Released {
                            handle: h,
                            cause: info,
                        },
                    );
                }
            }
        }
        if let Some(h) = c.handle {
            self.close_app_channel(h);
        }
    }

    /// The calls `status` lists.
    pub(super) fn call_status(&self) -> Vec<HostCall> {
        let uni = self.host.signalling().map(|s| s.uni());
        self.host
            .calls()
            .map(|(id, i)| {
                let mine = self.calls.get(&id);
                HostCall {
                    direction: match i.direction {
                        CallDirection::Outgoing => "out",
                        CallDirection::Incoming => "in",
                    }
                    .to_string(),
                    vc: i.vc,
                    handle: mine.and_then(|c| c.handle),
                    remote: i.remote,
                    state: uni
                        .map(|u| state_text(u.call_state(i.sig)))
                        .unwrap_or_default(),
                    qos: i.qos,
                    age_ms: self.now.saturating_duration_since(i.since).as_nanos() / 1_000_000,
                    owner_pid: mine.map_or(0, |c| c.owner_pid),
                }
            })
            .collect()
    }
}

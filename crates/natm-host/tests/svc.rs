//! Switched VCs through hostd at the protocol level: hostd on a link whose other end is a
//! fake switch in a thread (a network-side `natm_sig::Signalling` that answers SETUP with
//! CONNECT on a VC it picks and loops that VC's cells back, or refuses with a cause), and
//! applications speaking natm_proto::host frames on the socket.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use natm_core::addr::Aesa;
use natm_core::{Qos, VcId};
use natm_host::hostd::HostdThread;
use natm_proto::host::{
    self as proto, AutoAccept, CauseInfo, DataPath, Frame, NotifyMode, Request, Response,
};
use natm_sig::CauseValue;

#[path = "support/fake_switch.rs"]
mod fake_switch;

use fake_switch::*;

// --------------------------------------------------------------------- hostd

struct Setup {
    dir: PathBuf,
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
    fn new(tag: &str, address: Option<Aesa>) -> Setup {
        let dir = std::env::temp_dir().join(format!("natm-svc-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (hostd, switch) = start_hostd(&dir, address);
        let s = Setup {
            dir,
            hostd: Some(hostd),
            switch,
        };
        if address.is_some() {
            let app = s.connect();
            let end = Instant::now() + Duration::from_secs(10);
            loop {
                match ask(&app, &Request::Status) {
                    Response::Status(st) if st.signalling_up => break,
                    _ => {}
                }
                assert!(Instant::now() < end, "signalling never came up");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        s
    }

    fn connect(&self) -> UnixStream {
        let s = UnixStream::connect(self.hostd.as_ref().unwrap().socket()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }
}

fn ask(s: &UnixStream, r: &Request) -> Response {
    proto::write_frame(s, &proto::control_frame(r)).unwrap();
    answer(s).0
}

fn answer(s: &UnixStream) -> (Response, Vec<OwnedFd>) {
    match proto::read_frame::<Response>(s).unwrap() {
        (Frame::Control(r), fds) => (r, fds),
        (f, _) => panic!("expected a control frame, got {f:?}"),
    }
}

fn call(to: Aesa, path: DataPath) -> Request {
    Request::Call {
        called: to,
        qos: "aal5,cbr:pcr=1000,max_sdu=1024".parse().unwrap(),
        path,
        notify: NotifyMode::Poll,
        signal: None,
        buffers: 4,
        buffer_size: 1024,
        timeout_ms: 5000,
    }
}

fn accept(call: u32, path: DataPath) -> Request {
    Request::Accept {
        call,
        path,
        notify: NotifyMode::Poll,
        signal: None,
        buffers: 4,
        buffer_size: 1024,
    }
}

fn echo_daemon(app: &UnixStream, handle: u32, sdu: &[u8]) {
    proto::write_frame(app, &proto::data_frame(handle, sdu)).unwrap();
    match proto::read_frame::<Response>(app).unwrap().0 {
        Frame::Data {
            handle: h,
            sdu: got,
        } => {
            assert_eq!(h, handle);
            assert_eq!(got, sdu);
        }
        f => panic!("{f:?}"),
    }
}

fn cause_of(r: Response) -> CauseInfo {
    match r {
        Response::CallFailed { cause } => cause,
        r => panic!("expected CallFailed, got {r:?}"),
    }
}

// --------------------------------------------------------------------- tests

#[test]
fn without_an_address_calls_are_refused_saying_so() {
    let s = Setup::new("noaddr", None);
    let app = s.connect();
    match ask(&app, &call(far_address(), DataPath::Daemon)) {
        Response::Error { message, .. } => {
            assert!(message.contains("no ATM address"), "{message}")
        }
        r => panic!("{r:?}"),
    }
}

#[test]
fn a_call_connects_and_data_flows_on_the_daemon_path_and_is_released_on_close() {
    let s = Setup::new("daemon", Some(host_address()));
    let app = s.connect();
    let (handle, cookie, info) = match ask(&app, &call(far_address(), DataPath::Daemon)) {
        Response::Opened {
            handle,
            cookie,
            call: Some(info),
            path,
            ..
        } => {
            assert_eq!(path, DataPath::Daemon);
            (handle, cookie, info)
        }
        r => panic!("{r:?}"),
    };
    assert_eq!(info.vc, VcId::uni(0, 32768).unwrap());
    assert_eq!(info.local, host_address());
    assert_eq!(info.remote, Some(far_address()));
    assert!(info.setup_ns > 0);
    echo_daemon(&app, handle, b"over a switched VC");

    match ask(&app, &Request::Status) {
        Response::Status(st) => {
            assert_eq!(st.address, Some(host_address()));
            assert!(st.signalling_up);
            assert_eq!(st.calls.len(), 1);
            assert_eq!(st.calls[0].direction, "out");
            assert_eq!(st.calls[0].state, "U10 active");
            assert_eq!(st.calls[0].handle, Some(handle));
            assert_eq!(st.calls[0].owner_pid, std::process::id() as i32);
        }
        r => panic!("{r:?}"),
    }
    assert!(matches!(
        ask(
            &app,
            &Request::Close {
                cookie,
                quiet: false,
            }
        ),
        Response::Closed { .. }
    ));
    let cause = s.switch.wait(|e| match e {
        Seen::Released { cause, .. } => Some(cause),
        _ => None,
    });
    assert_eq!(cause.value, CauseValue::NormalCallClearing);
}

#[test]
fn a_call_on_the_direct_path_carries_data_through_the_channel() {
    use natm_nic::channel::{BufferId, Channel};
    let s = Setup::new("direct", Some(host_address()));
    let app = s.connect();
    proto::write_frame(
        &app,
        &proto::control_frame(&call(far_address(), DataPath::Direct)),
    )
    .unwrap();
    let (r, fds) = answer(&app);
    let handle = match r {
        Response::Opened {
            handle,
            path: DataPath::Direct,
            call: Some(_),
            ..
        } => handle,
        r => panic!("{r:?}"),
    };
    let region = fds.into_iter().next().expect("the region");
    let mem = natm_nic::memfd::MemfdMem::map(region).unwrap();
    let ch = Channel::open(Arc::new(mem)).unwrap();
    let mut end = ch.app().unwrap();
    end.post_rx(BufferId(0)).unwrap();
    end.post_rx(BufferId(1)).unwrap();
    end.write_buffer(BufferId(3), b"through the channel")
        .unwrap();
    end.post_tx(BufferId(3), 19, handle, 0).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(c) = end.poll_completion().unwrap()
            && c.rx
        {
            assert_eq!(c.status, 0);
            assert_eq!(
                end.buffer(c.buffer, c.len as usize).unwrap(),
                b"through the channel"
            );
            break;
        }
        assert!(Instant::now() < deadline, "nothing came back");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_refusal_arrives_as_call_failed_with_the_cause_and_its_explanation() {
    let s = Setup::new("refused", Some(host_address()));
    let app = s.connect();
    let cause = cause_of(ask(&app, &call(refused_address(), DataPath::Daemon)));
    assert_eq!(cause.value, 37);
    assert_eq!(cause.name, "user cell rate not available");
    assert_eq!(cause.location, "LPN");
    assert_eq!(cause.diagnostic, "s1 p2: 1000 c/s free");
    // A QoS the IEs cannot carry is refused here: 73.
    let mut r = call(far_address(), DataPath::Daemon);
    if let Request::Call { qos, .. } = &mut r {
        *qos = "ubr:pcr=20000000".parse().unwrap();
    }
    let cause = cause_of(ask(&app, &r));
    assert_eq!((cause.value, cause.location.as_str()), (73, "U"), "{cause}");
    // The connection goes on, and nothing is left booked.
    match ask(&app, &Request::Status) {
        Response::Status(st) => {
            assert!(st.calls.is_empty());
            assert_eq!(st.cac.cbr, 0);
        }
        r => panic!("{r:?}"),
    }
}

#[test]
fn incoming_calls_are_offered_to_listeners_accepted_and_rejected() {
    let s = Setup::new("listen", Some(host_address()));
    let app = s.connect();
    let (listener, address) = match ask(
        &app,
        &Request::Listen {
            selector: Some(7),
            accept: None,
        },
    ) {
        Response::Listening { listener, address } => (listener, address),
        r => panic!("{r:?}"),
    };
    assert_eq!(address.0[19], 7);
    assert_eq!(&address.0[..19], &host_address().0[..19]);
    // Nobody listens to selector 9: unallocated number.
    let qos: Qos = "aal5,cbr:pcr=2000,max_sdu=1024".parse().unwrap();
    s.switch
        .cmds
        .send(Cmd::Offer {
            vci: 40000,
            selector: 9,
            qos,
        })
        .unwrap();
    let cause = s.switch.wait(|e| match e {
        Seen::Released {
            vci: Some(40000),
            cause,
        } => Some(cause),
        _ => None,
    });
    assert_eq!(cause.value, CauseValue::UnallocatedNumber);

    // Offered, accepted: Opened once the network confirms, data loops back.
    s.switch
        .cmds
        .send(Cmd::Offer {
            vci: 40001,
            selector: 7,
            qos,
        })
        .unwrap();
    let call_no = match answer(&app).0 {
        Response::Incoming {
            listener: l,
            call,
            calling,
            called,
            qos: q,
        } => {
            assert_eq!(l, listener);
            assert_eq!(calling, Some(far_address()));
            assert_eq!(called, address);
            assert_eq!(q.rx, qos.tx, "the host's own view");
            call
        }
        r => panic!("{r:?}"),
    };
    let handle = match ask(&app, &accept(call_no, DataPath::Daemon)) {
        Response::Opened {
            handle,
            call: Some(info),
            ..
        } => {
            assert_eq!(info.vc, VcId::uni(0, 40001).unwrap());
            assert_eq!(info.remote, Some(far_address()));
            handle
        }
        r => panic!("{r:?}"),
    };
    s.switch.wait(|e| match e {
        Seen::Connected { vci: 40001 } => Some(()),
        _ => None,
    });
    echo_daemon(&app, handle, b"incoming");

    // Offered, rejected with 21: RELEASE COMPLETE with it.
    s.switch
        .cmds
        .send(Cmd::Offer {
            vci: 40002,
            selector: 7,
            qos,
        })
        .unwrap();
    let call_no = match answer(&app).0 {
        Response::Incoming { call, .. } => call,
        r => panic!("{r:?}"),
    };
    assert_eq!(
        ask(
            &app,
            &Request::Reject {
                call: call_no,
                cause: 21
            }
        ),
        Response::Rejected { call: call_no }
    );
    let cause = s.switch.wait(|e| match e {
        Seen::Released {
            vci: Some(40002),
            cause,
        } => Some(cause),
        _ => None,
    });
    assert_eq!(cause.value, CauseValue::CallRejected);

    // The far end releases the accepted call: Released, unsolicited, with its cause.
    s.switch.cmds.send(Cmd::Release { vci: 40001 }).unwrap();
    match answer(&app).0 {
        Response::Released { handle: h, cause } => {
            assert_eq!(h, handle);
            assert_eq!(cause.value, 16);
            assert_eq!(cause.diagnostic, "far end");
        }
        r => panic!("{r:?}"),
    }
    match ask(&app, &Request::Status) {
        Response::Status(st) => {
            assert!(st.calls.is_empty());
            assert!(st.channels.is_empty(), "the VC is closed");
            assert_eq!(st.cac.cbr, 0);
        }
        r => panic!("{r:?}"),
    }
}

#[test]
fn a_listener_that_accepts_by_itself_gets_active_calls_and_a_quiet_close_has_no_answer() {
    let s = Setup::new("auto", Some(host_address()));
    let app = s.connect();
    let shape = AutoAccept {
        path: DataPath::Daemon,
        notify: NotifyMode::Poll,
        buffers: 4,
        buffer_size: 1024,
    };
    let listen = |selector, accept| Request::Listen { selector, accept };
    // A signal's target is per VC: refused, saying so; a bad shape too.
    for bad in [
        AutoAccept {
            notify: NotifyMode::Signal,
            ..shape
        },
        AutoAccept {
            buffer_size: 1000,
            ..shape
        },
    ] {
        match ask(&app, &listen(Some(8), Some(bad))) {
            Response::Error { .. } => {}
            r => panic!("{bad:?}: {r:?}"),
        }
    }
    let listener = match ask(&app, &listen(Some(8), Some(shape))) {
        Response::Listening { listener, .. } => listener,
        r => panic!("{r:?}"),
    };
    let qos: Qos = "aal5,ubr:pcr=2000,max_sdu=1024".parse().unwrap();
    s.switch
        .cmds
        .send(Cmd::Offer {
            vci: 40300,
            selector: 8,
            qos,
        })
        .unwrap();
    // hostd answered the network itself; the application hears of an active call.
    s.switch.wait(|e| match e {
        Seen::Connected { vci: 40300 } => Some(()),
        _ => None,
    });
    let (handle, cookie) = match answer(&app).0 {
        Response::Arrived {
            listener: l,
            opened,
        } => {
            assert_eq!(l, listener);
            match *opened {
                Response::Opened {
                    handle,
                    cookie,
                    call: Some(info),
                    path: DataPath::Daemon,
                    ..
                } => {
                    assert_eq!(info.vc, VcId::uni(0, 40300).unwrap());
                    assert_eq!(info.remote, Some(far_address()));
                    assert_eq!(info.qos.rx, qos.tx, "the host's own view");
                    (handle, cookie)
                }
                r => panic!("{r:?}"),
            }
        }
        r => panic!("{r:?}"),
    };
    echo_daemon(&app, handle, b"accepted by hostd");
    // A quiet close: the call is released, and the next answer on the connection is the
    // next request's (no Closed in between).
    proto::write_frame(
        &app,
        &proto::control_frame(&Request::Close {
            cookie,
            quiet: true,
        }),
    )
    .unwrap();
    let cause = s.switch.wait(|e| match e {
        Seen::Released {
            vci: Some(40300),
            cause,
        } => Some(cause),
        _ => None,
    });
    assert_eq!(cause.value, CauseValue::NormalCallClearing);
    // (The call goes once the switch's RELEASE COMPLETE is in.)
    let end = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match ask(&app, &Request::Status) {
            Response::Status(st) if st.calls.is_empty() => break,
            Response::Status(st) => {
                assert!(std::time::Instant::now() < end, "{:?}", st.calls)
            }
            r => panic!("{r:?}"),
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn an_application_that_goes_has_its_calls_released_with_31() {
    let s = Setup::new("gone", Some(host_address()));
    let app = s.connect();
    assert!(matches!(
        ask(&app, &call(far_address(), DataPath::Daemon)),
        Response::Opened { call: Some(_), .. }
    ));
    s.switch.wait(|e| match e {
        Seen::Connected { .. } => Some(()),
        _ => None,
    });
    drop(app);
    let cause = s.switch.wait(|e| match e {
        Seen::Released { cause, .. } => Some(cause),
        _ => None,
    });
    assert_eq!(cause.value, CauseValue::NormalUnspecified);
    let other = s.connect();
    match ask(&other, &Request::Status) {
        Response::Status(st) => assert_eq!(st.cac.cbr, 0, "bandwidth returned at once"),
        r => panic!("{r:?}"),
    }
    // The call itself goes when the switch's RELEASE COMPLETE arrives.
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        match ask(&other, &Request::Status) {
            Response::Status(st) if st.calls.is_empty() => break,
            Response::Status(st) => assert_eq!(st.calls[0].state, "U11 release request"),
            r => panic!("{r:?}"),
        }
        assert!(Instant::now() < end, "the call stayed");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_release_from_the_far_end_arrives_as_released() {
    let s = Setup::new("farend", Some(host_address()));
    let app = s.connect();
    let (handle, vc) = match ask(&app, &call(far_address(), DataPath::Daemon)) {
        Response::Opened {
            handle,
            call: Some(info),
            ..
        } => (handle, info.vc),
        r => panic!("{r:?}"),
    };
    s.switch
        .cmds
        .send(Cmd::Release { vci: vc.vci.get() })
        .unwrap();
    match answer(&app).0 {
        Response::Released { handle: h, cause } => {
            assert_eq!(h, handle);
            assert_eq!(cause.value, 16);
            assert_eq!(cause.location, "LPN");
        }
        r => panic!("{r:?}"),
    }
    // The handle is gone.
    proto::write_frame(&app, &proto::data_frame(handle, b"x")).unwrap();
    assert!(matches!(answer(&app).0, Response::Error { .. }));
}

#[test]
fn a_call_with_no_answer_in_time_fails_with_102_and_is_released() {
    let s = Setup::new("timeout", Some(host_address()));
    let app = s.connect();
    let mut r = call(silent_address(), DataPath::Daemon);
    if let Request::Call { timeout_ms, .. } = &mut r {
        *timeout_ms = 100;
    }
    let cause = cause_of(ask(&app, &r));
    assert_eq!(cause.value, 102);
    assert_eq!(cause.location, "U");
    let cause = s.switch.wait(|e| match e {
        Seen::Released { cause, .. } => Some(cause),
        _ => None,
    });
    assert_eq!(cause.value, CauseValue::RecoveryOnTimerExpiry);
}

#[test]
fn an_incoming_call_nobody_answers_is_released_with_18() {
    let s = Setup::new("noanswer", Some(host_address()));
    let app = s.connect();
    assert!(matches!(
        ask(
            &app,
            &Request::Listen {
                selector: None,
                accept: None,
            }
        ),
        Response::Listening { .. }
    ));
    let qos: Qos = "ubr".parse().unwrap();
    s.switch
        .cmds
        .send(Cmd::Offer {
            vci: 40010,
            selector: 3,
            qos,
        })
        .unwrap();
    assert!(matches!(answer(&app).0, Response::Incoming { .. }));
    let cause = s.switch.wait(|e| match e {
        Seen::Released {
            vci: Some(40010),
            cause,
        } => Some(cause),
        _ => None,
    });
    assert_eq!(cause.value, CauseValue::NoUserResponding);
}

const CHILD_ENV: &str = "NATM_TEST_SVC_SOCKET";

/// Run only as the child of `a_killed_application_has_its_calls_released_with_31`.
#[test]
#[ignore = "the child half of a test; runs only when that test starts it"]
fn child_calls_and_waits() {
    let socket = std::env::var(CHILD_ENV).expect("started by the parent test");
    let app = UnixStream::connect(socket).unwrap();
    app.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    match ask(&app, &call(far_address(), DataPath::Daemon)) {
        Response::Opened { call: Some(_), .. } => println!("CONNECTED"),
        r => println!("FAILED {r:?}"),
    }
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn a_killed_application_has_its_calls_released_with_31() {
    use std::io::BufRead;
    let s = Setup::new("kill9", Some(host_address()));
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_calls_and_waits",
            "--nocapture",
        ])
        .env(CHILD_ENV, s.hostd.as_ref().unwrap().socket())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("CONNECTED") && !line.contains("FAILED") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the child ended");
    }
    assert!(line.contains("CONNECTED"), "{line}");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let cause = s.switch.wait(|e| match e {
        Seen::Released { cause, .. } => Some(cause),
        _ => None,
    });
    assert_eq!(cause.value, CauseValue::NormalUnspecified);
}

//! The channel manager at the protocol level: raw frames on the Unix socket.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use natm_host::hostd::{HostdError, HostdOptions, HostdThread, IdleWait, peer_allowed};
use natm_host::loopback::LoopLink;
use natm_proto::host::{self as proto, ErrorKind, Frame, Request, Response};

const CHILD_ENV: &str = "NATM_TEST_PEER_SOCKET";

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn daemon(tag: &str) -> (Dir, HostdThread) {
    let dir = std::env::temp_dir().join(format!("natm-hostd-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = HostdThread::spawn(options(&dir.join("h.sock")), loopback()).unwrap();
    (Dir(dir), d)
}

fn options(socket: &Path) -> HostdOptions {
    HostdOptions {
        name: "h".into(),
        socket: socket.to_path_buf(),
        wait: IdleWait::Adaptive,
        link_description: "loopback".into(),
        link_rate: natm_core::LineRate::Unlimited,
        lanes: None,
        address: None,
    }
}

fn loopback() -> natm_host::hostd::Connector {
    Box::new(|| Ok(Box::new(LoopLink::new(1024)) as _))
}

fn connect(d: &HostdThread) -> UnixStream {
    let s = UnixStream::connect(d.socket()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn ask(s: &UnixStream, r: &Request) -> Response {
    proto::write_frame(s, &proto::control_frame(r)).unwrap();
    answer(s)
}

fn answer(s: &UnixStream) -> Response {
    match proto::read_frame::<Response>(s).unwrap().0 {
        Frame::Control(r) => r,
        f => panic!("expected a control frame, got {f:?}"),
    }
}

fn error(r: Response) -> (ErrorKind, String) {
    match r {
        Response::Error { kind, message } => (kind, message),
        r => panic!("expected an error, got {r:?}"),
    }
}

fn open(vc: &str, qos: &str) -> Request {
    Request::Open {
        vc: vc.parse().expect("a VC"),
        qos: qos.parse().expect("a QoS"),
        path: proto::DataPath::Daemon,
        notify: proto::NotifyMode::Poll,
        signal: None,
        buffers: 4,
        buffer_size: 1024,
    }
}

#[test]
fn peers_of_another_uid_are_refused_unless_root() {
    assert!(peer_allowed(1000, 1000));
    assert!(peer_allowed(0, 1000), "root may use anyone's daemon");
    assert!(!peer_allowed(1001, 1000));
    assert!(!peer_allowed(1000, 0), "a root daemon serves root only");
}

#[test]
fn the_socket_is_private_and_taken_only_once() {
    let (dir, d) = daemon("mode");
    let mode = std::fs::metadata(d.socket()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    match natm_host::hostd::Hostd::new(options(d.socket()), loopback()) {
        Err(HostdError::InUse(p)) => assert_eq!(p, d.socket()),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a second daemon took the socket"),
    }
    d.stop().unwrap();
    assert!(
        !dir.0.join("h.sock").exists(),
        "the socket is removed at stop"
    );
    // A stale socket file (nobody listening) is replaced.
    drop(std::os::unix::net::UnixListener::bind(dir.0.join("h.sock")).unwrap());
    let d = HostdThread::spawn(options(&dir.0.join("h.sock")), loopback()).unwrap();
    let s = connect(&d);
    assert!(matches!(ask(&s, &Request::Status), Response::Status(_)));
}

#[test]
fn garbage_gets_an_error_and_a_hang_up_while_others_are_served() {
    let (_dir, d) = daemon("garbage");
    let good = connect(&d);
    let mut bad = connect(&d);
    bad.write_all(b"GET / HTTP/1.1\r\nHost: natm\r\n\r\n")
        .unwrap();
    let (kind, m) = error(answer(&bad));
    assert_eq!(kind, ErrorKind::BadRequest);
    assert!(m.contains("frame length"), "{m}");
    let mut rest = Vec::new();
    assert_eq!(bad.read_to_end(&mut rest).unwrap(), 0, "hostd hung up");

    // Well framed but not a request: an error, and the connection goes on.
    let mut frame = vec![];
    let body = br#"{"op":"launch","vc":"0.100"}"#;
    frame.extend_from_slice(&(body.len() as u32 + 1).to_le_bytes());
    frame.push(proto::KIND_CONTROL);
    frame.extend_from_slice(body);
    proto::write_frame(&good, &frame).unwrap();
    let (kind, m) = error(answer(&good));
    assert_eq!(kind, ErrorKind::BadRequest);
    assert!(m.contains("launch"), "{m}");

    // The VC and the QoS are typed in the protocol: text that does not read as one is a
    // bad request naming it (the `natm` API refuses `*`, `?` and other interfaces itself).
    for (vc, qos, named) in [
        ("zero.hundred", "ubr", "bad VC \"zero.hundred\""),
        ("0.*", "ubr", "bad VC \"0.*\""),
        ("0.100", "ubr,frobnicate", "bad QoS \"ubr,frobnicate\""),
    ] {
        let body = format!(
            r#"{{"op":"open","vc":"{vc}","qos":"{qos}","path":"daemon","notify":"poll","buffers":4,"buffer_size":1024}}"#
        );
        let mut frame = (body.len() as u32 + 1).to_le_bytes().to_vec();
        frame.push(proto::KIND_CONTROL);
        frame.extend_from_slice(body.as_bytes());
        proto::write_frame(&good, &frame).unwrap();
        let (kind, m) = error(answer(&good));
        assert_eq!(kind, ErrorKind::BadRequest);
        assert!(m.contains(named), "{m}");
    }
    let (kind, m) = error(ask(&good, &open("0.31", "ubr")));
    assert_eq!(kind, ErrorKind::Refused);
    assert!(m.contains("VCI 31 is reserved"), "{m}");
    let big = Request::Open {
        vc: "0.100".parse().unwrap(),
        qos: "ubr".parse().unwrap(),
        path: proto::DataPath::Daemon,
        notify: proto::NotifyMode::Poll,
        signal: None,
        buffers: 4096,
        buffer_size: 1 << 20,
    };
    let (kind, m) = error(ask(&good, &big));
    assert_eq!(kind, ErrorKind::BadRequest);
    assert!(m.contains("above the 67108864 a VC may have"), "{m}");
    // A signal may only go to a thread of the process that asks.
    let mut signalled = open("0.100", "ubr");
    if let Request::Open {
        path,
        notify,
        signal,
        ..
    } = &mut signalled
    {
        *path = proto::DataPath::Direct;
        *notify = proto::NotifyMode::Signal;
        *signal = Some(proto::SignalTarget {
            tid: 1,
            signo: natm_nic::signal::rt_signal(4).unwrap(),
            channel: 3,
        });
    }
    let (kind, m) = error(ask(&good, &signalled));
    assert_eq!(kind, ErrorKind::Refused);
    assert!(m.contains("thread 1 is not a thread of pid"), "{m}");
    // An SDU for a handle that is not ours.
    proto::write_frame(&good, &proto::data_frame(77, b"x")).unwrap();
    let (kind, m) = error(answer(&good));
    assert_eq!(kind, ErrorKind::Refused);
    assert!(m.contains("handle 77"), "{m}");

    // Daemon path on a loopback link: the SDU comes back on the same VC.
    let Response::Opened { handle, .. } = ask(&good, &open("0.100", "ubr")) else {
        panic!("open refused");
    };
    proto::write_frame(&good, &proto::data_frame(handle, b"echo")).unwrap();
    match proto::read_frame::<Response>(&good).unwrap().0 {
        Frame::Data { handle: h, sdu } => {
            assert_eq!(h, handle);
            assert_eq!(sdu, b"echo");
        }
        f => panic!("{f:?}"),
    }
    match ask(&good, &Request::Status) {
        Response::Status(s) => {
            assert_eq!(s.channels.len(), 1);
            assert_eq!(s.channels[0].owner_pid, std::process::id() as i32);
            assert_eq!(s.channels[0].path, proto::DataPath::Daemon);
            assert!(s.vm_rss_bytes > 0);
        }
        r => panic!("{r:?}"),
    }
}

/// Run only as the child of `a_peer_with_another_uid_is_told_why_and_hung_up_on`.
#[test]
#[ignore = "the child half of a test; runs only when that test starts it"]
fn child_connects_as_another_user() {
    let socket = std::env::var(CHILD_ENV).expect("started by the parent test");
    let s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let (_, m) = error(answer(&s));
    println!("REFUSED {m}");
}

#[test]
fn a_peer_with_another_uid_is_told_why_and_hung_up_on() {
    if rustix::process::getuid().as_raw() != 0 {
        // Making a process of another uid needs root; peer_allowed is tested above.
        return;
    }
    let (dir, d) = daemon("peercred");
    // Open the file modes up so only SO_PEERCRED stands between the peer and hostd.
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(d.socket(), std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_connects_as_another_user",
            "--nocapture",
        ])
        .env(CHILD_ENV, d.socket())
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("REFUSED uid 65534 may not use this hostd (it serves uid 0 and root)"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The daemon goes on serving its own user.
    let s = connect(&d);
    assert!(matches!(ask(&s, &Request::Status), Response::Status(_)));
}

fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn configuration_is_checked_and_run_serves_a_configured_udp_link() {
    use natm_host::hostd::{HostdConfig, run};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let e = HostdConfig::from_toml("name = \"h1\"\ncolour = \"red\"\n[link]\nkind = \"udp\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("colour"), "{e}");
    let c = HostdConfig::from_toml(
        "name = \"h1\"\n[link]\nkind = \"udp\"\nlocal = \"127.0.0.1:1\"\npeer = \"127.0.0.1:2\"\nrate = \"oc3\"\n",
    )
    .unwrap();
    assert_eq!(c.socket_path(), proto::default_socket("h1"));
    assert_eq!(c.wait, IdleWait::Adaptive);
    assert_eq!(c.options().link_rate.cells_per_s(), Some(353_207));

    // Two daemons from configuration, joined by UDP on loopback.
    let dir = Dir(std::env::temp_dir().join(format!("natm-hostd-run-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).unwrap();
    let (pa, pb) = (free_udp_port(), free_udp_port());
    let config = |name: &str, local: u16, peer: u16| {
        HostdConfig::from_toml(&format!(
            "name = \"{name}\"\nsocket = \"{}\"\n[link]\nkind = \"udp\"\nlocal = \"127.0.0.1:{local}\"\npeer = \"127.0.0.1:{peer}\"\n",
            dir.0.join(format!("{name}.sock")).display()
        ))
        .unwrap()
    };
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = [config("ha", pa, pb), config("hb", pb, pa)]
        .into_iter()
        .map(|c| {
            let stop = stop.clone();
            std::thread::spawn(move || run(c, stop))
        })
        .collect();
    let connect = |name: &str| {
        let sock = dir.0.join(format!("{name}.sock"));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let s = loop {
            if let Ok(s) = UnixStream::connect(&sock) {
                break s;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{name} never listened"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        match ask(&s, &Request::Status) {
            Response::Status(st) => {
                assert_eq!(st.name, name);
                assert!(st.link.up);
                assert!(
                    st.link.description.starts_with("udp 127.0.0.1:"),
                    "{}",
                    st.link.description
                );
            }
            r => panic!("{r:?}"),
        }
        (s, sock)
    };
    // Both ends up before the ping: a cell sent while hb has not bound its port is lost.
    let (s, sock) = connect("ha");
    let _hb = connect("hb");
    let ping = Request::Ping {
        vc: "0.100".parse().unwrap(),
        segment: false,
        correlation: 42,
        timeout_ms: 5000,
    };
    match ask(&s, &ping) {
        Response::Pong { rtt_ns } => assert!(rtt_ns > 0),
        r => panic!("{r:?}"),
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap().unwrap();
    }
    assert!(!sock.exists(), "the socket is removed at stop");
}

#[test]
fn an_impair_request_loses_the_cells_sent_until_it_is_cleared() {
    let (_dir, d) = daemon("impair");
    let s = connect(&d);
    // A text natm-netem refuses, named.
    let (kind, m) = error(ask(
        &s,
        &Request::Impair {
            impair: "los=1%".into(),
        },
    ));
    assert_eq!(kind, ErrorKind::BadRequest);
    assert!(m.contains("los=1%"), "{m}");
    let Response::Opened { handle, .. } = ask(&s, &open("0.100", "ubr")) else {
        panic!("open refused");
    };
    // Every cell lost: the looped-back SDU never comes.
    let r = ask(
        &s,
        &Request::Impair {
            impair: "loss=100%".into(),
        },
    );
    assert_eq!(
        r,
        Response::Impaired {
            impair: "loss=1".into()
        }
    );
    match ask(&s, &Request::Status) {
        Response::Status(st) => {
            assert_eq!(st.link.impair, "loss=1");
            assert_eq!(st.link.description, "loopback, impaired at run time loss=1");
            assert_eq!(st.link.rate, "unlimited");
        }
        r => panic!("{r:?}"),
    }
    proto::write_frame(&s, &proto::data_frame(handle, b"lost")).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(
        proto::read_frame::<Response>(&s).is_err(),
        "an SDU came through a link that loses every cell"
    );
    // Cleared: SDUs come back again.
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let r = ask(&s, &Request::Impair { impair: "".into() });
    assert_eq!(r, Response::Impaired { impair: "".into() });
    match ask(&s, &Request::Status) {
        Response::Status(st) => {
            assert_eq!(
                (st.link.impair.as_str(), st.link.description.as_str()),
                ("", "loopback")
            );
        }
        r => panic!("{r:?}"),
    }
    proto::write_frame(&s, &proto::data_frame(handle, b"echo")).unwrap();
    match proto::read_frame::<Response>(&s).unwrap().0 {
        Frame::Data { sdu, .. } => assert_eq!(sdu, b"echo"),
        f => panic!("{f:?}"),
    }
}

#[test]
fn hostd_says_its_main_links_weight_to_the_switch_in_the_link_region() {
    // The switch's end of a shared-memory link (the switch offers the region: side A),
    // hostd's the other: the switch shares a rated port's input line between hostd's main
    // link and the port's lanes by the weight hostd says there.
    let (switch_end, host_end) = natm_link::shm::ShmLink::pair(1024).unwrap();
    let slot = std::sync::Mutex::new(Some(host_end));
    let dir = std::env::temp_dir().join(format!("natm-hostd-weight-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let _dir = Dir(dir.clone());
    let mut opts = options(&dir.join("h.sock"));
    opts.link_rate = natm_core::LineRate::OC3;
    let d = HostdThread::spawn(
        opts,
        Box::new(move || {
            slot.lock()
                .unwrap()
                .take()
                .map(|l| Box::new(l) as _)
                .ok_or_else(|| std::io::Error::other("the link is made once"))
        }),
    )
    .unwrap();
    let weight_becomes = |want: u32| {
        let t0 = std::time::Instant::now();
        while switch_end.peer_line_weight() != Some(want) {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "weight {:?}, not {want}",
                switch_end.peer_line_weight()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    // Signalling and OAM only: at least 1.
    weight_becomes(1);
    let guaranteed = connect(&d);
    assert!(matches!(
        ask(&guaranteed, &open("0.100", "cbr:pcr=125000")),
        Response::Opened { .. }
    ));
    // 125,000 cells/s in 64ths of OC-3c's 353,207: 23 (natm-host-core's vc_weight).
    weight_becomes(23);
    let bulk = connect(&d);
    assert!(matches!(
        ask(&bulk, &open("0.101", "ubr")),
        Response::Opened { .. }
    ));
    weight_becomes(24);
    // The application goes: its channel's weight with it.
    drop(guaranteed);
    weight_becomes(1);
    d.stop().unwrap();
}

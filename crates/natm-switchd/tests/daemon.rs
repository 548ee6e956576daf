//! The switch daemon in a thread, with "hosts" on real links made from configuration
//! snippets: AAL5 frames through a translating cross-connect over shm, udp and tcp ports;
//! status counters; connect, disconnect and capture over the management socket; a host
//! that leaves (AIS downstream) and comes back; bad requests; shutdown.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use natm_adapter::{Reassembler, Reassembly};
use natm_core::VcId;
use natm_link::endpoint::{EndpointLink, LinkConfig};
use natm_link::{CELL_LEN, CellBytes};
use natm_switchd::SwitchdConfig;
use natm_switchd::client::{Connect, ErrorKind, Response, Upc, decode_response};
use natm_wire::aal5::Segmenter;

use common::{Daemon, T, TempDir};

/// A host on one link: sends AAL5 frames, reassembles what arrives per VC.
struct Host {
    link: Box<dyn EndpointLink>,
    vc: (u16, u16),
    reasm: Reassembler,
    frames: Vec<Vec<u8>>,
    /// F5 end-to-end OAM cells seen (AIS).
    oam_e2e: u64,
    /// Cells on another VC.
    other: u64,
}

impl Host {
    fn connect(snippet: &str, vc: (u16, u16)) -> Host {
        Host {
            link: LinkConfig::from_toml(snippet).unwrap().connect(T).unwrap(),
            vc,
            reasm: Reassembler::new(VcId::uni(vc.0.into(), vc.1.into()).unwrap(), 65_535).unwrap(),
            frames: Vec::new(),
            oam_e2e: 0,
            other: 0,
        }
    }

    fn send_frame(&mut self, vc: (u16, u16), sdu: &[u8]) {
        let id = VcId::uni(vc.0.into(), vc.1.into()).unwrap();
        let mut seg = Segmenter::uni(id, sdu).unwrap();
        let mut cells: Vec<CellBytes> = Vec::new();
        let mut c = [0u8; CELL_LEN];
        while seg.next_cell(&mut c) {
            cells.push(c);
        }
        let n = self.link.send_cells_timeout(&cells, Some(T)).unwrap();
        assert_eq!(n, cells.len());
    }

    /// Takes whatever has arrived (waiting at most `wait` for the first cells).
    fn poll(&mut self, wait: Duration) -> usize {
        let mut buf = [[0u8; CELL_LEN]; 64];
        let mut total = 0;
        let mut first = true;
        loop {
            let n = if first {
                self.link.recv_cells_timeout(&mut buf, Some(wait)).unwrap()
            } else {
                self.link.recv_cells(&mut buf).unwrap()
            };
            first = false;
            if n == 0 {
                return total;
            }
            total += n;
            for c in &buf[..n] {
                let word = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
                let vc = (((word >> 20) & 0xFF) as u16, ((word >> 4) & 0xFFFF) as u16);
                let pti = (word >> 1) & 7;
                assert_eq!(natm_wire::cell::hec([c[0], c[1], c[2], c[3]]), c[4], "HEC");
                if vc != self.vc {
                    self.other += 1;
                } else if pti == 0b101 {
                    self.oam_e2e += 1;
                } else if pti < 4 {
                    let payload: &[u8; 48] = c[5..].try_into().unwrap();
                    if let Reassembly::Complete(_) = self.reasm.push(payload, pti & 1 == 1) {
                        self.frames.push(self.reasm.sdu().to_vec());
                    }
                }
            }
        }
    }

    fn wait_frames(&mut self, n: usize) {
        let deadline = Instant::now() + T;
        while self.frames.len() < n {
            assert!(
                Instant::now() < deadline,
                "{} of {n} frames arrived",
                self.frames.len()
            );
            self.poll(Duration::from_millis(20));
        }
    }
}

fn frame(i: usize) -> Vec<u8> {
    (0..1 + (i * 37) % 1500)
        .map(|k| (k * 7 + i) as u8)
        .collect()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The switch-side and host-side link snippets of port `n` of kind `kind`.
fn link_pair(kind: &str, dir: &Path, n: u32) -> (String, String) {
    match kind {
        "shm" => {
            let s = format!(
                "kind = \"shm\"\npath = {:?}",
                dir.join(format!("p{n}.sock"))
            );
            (s.clone(), s)
        }
        "udp" => {
            let (a, b) = (free_udp_port(), free_udp_port());
            (
                format!("kind = \"udp\"\nlocal = \"127.0.0.1:{a}\"\npeer = \"127.0.0.1:{b}\""),
                format!("kind = \"udp\"\nlocal = \"127.0.0.1:{b}\"\npeer = \"127.0.0.1:{a}\""),
            )
        }
        _ => {
            let s = format!("kind = \"tcp\"\naddr = \"127.0.0.1:{}\"", free_port());
            (s.clone(), s)
        }
    }
}

fn two_port_config(dir: &Path, kind: &str) -> (String, String, String) {
    let (s1, h1) = link_pair(kind, dir, 1);
    let (s2, h2) = link_pair(kind, dir, 2);
    let text = format!(
        "name = \"s1\"\nmanagement = {:?}\n\n[[port]]\nid = 1\n{s1}\n\n[[port]]\nid = 2\n{s2}\n\n\
         [[xc]]\na = \"1:0.100\"\nb = \"2:0.200\"\nqos = \"ubr\"\naal5 = true\n",
        dir.join("s1.sock")
    );
    (text, h1, h2)
}

/// Frames both ways through 1:0.100 ↔ 2:0.200, byte-exact; checks the counters.
fn frames_both_ways(kind: &str) {
    let dir = TempDir::new(kind);
    let (text, h1, h2) = two_port_config(&dir.0, kind);
    let d = Daemon::start(&text);
    let mut a = Host::connect(&h1, (0, 100));
    let mut b = Host::connect(&h2, (0, 200));
    d.wait_port(1, true);
    d.wait_port(2, true);
    const FRAMES: usize = 120;
    // At most this many frames in flight each way: UDP has no flow control, and a busy
    // machine (the test run's other binaries) can leave a socket buffer unread long enough
    // to overflow it; the test is about translation, not about loss under overload.
    const WINDOW: usize = 8;
    for i in 0..FRAMES {
        a.send_frame((0, 100), &frame(i));
        b.send_frame((0, 200), &frame(FRAMES + i));
        a.poll(Duration::ZERO);
        b.poll(Duration::ZERO);
        if i + 1 > WINDOW {
            b.wait_frames(i + 1 - WINDOW);
            a.wait_frames(i + 1 - WINDOW);
        }
    }
    a.wait_frames(FRAMES);
    b.wait_frames(FRAMES);
    for i in 0..FRAMES {
        assert_eq!(b.frames[i], frame(i), "{kind}: frame {i} a→b");
        assert_eq!(a.frames[i], frame(FRAMES + i), "{kind}: frame {i} b→a");
    }
    // The counters say what crossed.
    let a_cells: u64 = (0..FRAMES)
        .map(|i| (frame(i).len() + 8).div_ceil(48) as u64)
        .sum();
    let s = d.status();
    assert_eq!(s.name, "s1");
    assert!(s.memory.unwrap() > 0);
    let xc = &s.connections[0];
    assert_eq!((xc.a.as_str(), xc.b.as_str()), ("1:0.100", "2:0.200"));
    assert_eq!(xc.qos, "ubr");
    assert_eq!(xc.a_to_b.cells_in, a_cells, "{s:?}");
    assert_eq!(xc.a_to_b.cells_out, a_cells, "{s:?}");
    assert_eq!(xc.a_to_b.dropped, 0);
    let p1 = d.port(1);
    assert_eq!(p1.counters.cells_in, a_cells, "{p1:?}");
    assert!(p1.attached);
    assert!(p1.link.starts_with(kind), "{p1:?}");
    assert_eq!(p1.queue_depth.ubr, 0);
    assert_eq!(a.other + b.other, 0);
    drop((a, b));
    d.stop();
    assert!(
        !dir.0.join("s1.sock").exists(),
        "the management socket is removed"
    );
    assert!(!dir.0.join("p1.sock").exists(), "link sockets are removed");
}

#[test]
fn frames_cross_shm_ports_byte_exact_with_translation() {
    frames_both_ways("shm");
}

#[test]
fn frames_cross_udp_ports_byte_exact_with_translation() {
    frames_both_ways("udp");
}

#[test]
fn frames_cross_tcp_ports_byte_exact_with_translation() {
    frames_both_ways("tcp");
}

#[test]
fn a_host_that_leaves_brings_ais_and_its_return_brings_traffic_back() {
    let dir = TempDir::new("reconnect");
    let (text, h1, h2) = two_port_config(&dir.0, "shm");
    let d = Daemon::start(&text);
    let mut a = Host::connect(&h1, (0, 100));
    let mut b = Host::connect(&h2, (0, 200));
    d.wait_port(1, true);
    d.wait_port(2, true);
    a.send_frame((0, 100), &frame(1));
    b.wait_frames(1);
    let ais_before = b.oam_e2e;
    // Host a leaves: port 1 goes down and b sees AIS on its VC.
    drop(a);
    d.wait_port(1, false);
    let deadline = Instant::now() + T;
    while b.oam_e2e == ais_before {
        assert!(Instant::now() < deadline, "no AIS reached host b");
        b.poll(Duration::from_millis(20));
    }
    let p1 = d.port(1);
    assert!(!p1.attached);
    assert_eq!(p1.disconnects, 1);
    assert!(
        p1.last_error.as_deref().unwrap().contains("peer gone"),
        "{p1:?}"
    );
    assert!(d.port(2).counters.ais_sent >= 1);
    // It comes back: the port is up and frames flow again.
    let mut a = Host::connect(&h1, (0, 100));
    d.wait_port(1, true);
    a.send_frame((0, 100), &frame(2));
    b.wait_frames(2);
    assert_eq!(b.frames[1], frame(2));
    b.send_frame((0, 200), &frame(3));
    a.wait_frames(1);
    assert_eq!(a.frames[0], frame(3));
    assert_eq!(d.port(1).connects, 2);
}

#[test]
fn connect_disconnect_and_capture_over_the_socket() {
    let dir = TempDir::new("mgmt");
    let (s1, h1) = link_pair("shm", &dir.0, 1);
    let (s2, h2) = link_pair("shm", &dir.0, 2);
    let text = format!(
        "name = \"s9\"\nmanagement = {:?}\n\n[[port]]\nid = 1\n{s1}\n\n[[port]]\nid = 2\n{s2}\n\n\
         [[port]]\nid = 3\nkind = \"shm\"\npath = {:?}\nrate = \"1000\"\n",
        dir.0.join("s9.sock"),
        dir.0.join("p3.sock")
    );
    let d = Daemon::start(&text);
    let mut a = Host::connect(&h1, (0, 101));
    let mut b = Host::connect(&h2, (0, 201));
    d.wait_port(1, true);
    d.wait_port(2, true);
    let client = d.client();
    let id = client
        .connect(&Connect {
            a: "1:0.101".into(),
            b: "2:0.201".into(),
            qos: "cbr:pcr=100000".into(),
            upc: Some("tag".into()),
            ..Connect::default()
        })
        .unwrap();
    // The capture sees the frame's cells going in on port 1.
    let mut cap = client.capture(1, Some("0.101")).unwrap();
    a.send_frame((0, 101), &frame(5));
    b.wait_frames(1);
    assert_eq!(b.frames[0], frame(5));
    let cells = (frame(5).len() + 8).div_ceil(48);
    for k in 0..cells {
        let c = cap.next_cell().unwrap();
        assert!(!c.out, "cell {k} is incoming");
        assert_eq!(
            u32::from_be_bytes([c.cell[0], c.cell[1], c.cell[2], c.cell[3]]) >> 4 & 0xFFFF,
            101
        );
        assert!(c.t_ns > 1_600_000_000_000_000_000, "a Unix time in ns");
    }
    drop(cap);
    let s = d.status();
    let xc = s.connections.iter().find(|x| x.id == id).unwrap();
    assert_eq!(xc.qos, "cbr:pcr=100000", "{xc:?}");
    assert_eq!(xc.upc, Upc::Tag);
    assert_eq!(xc.a_to_b.cells_out, cells as u64);
    // CAC: port 3 carries 1000 cells/s.
    let e = client
        .connect(&Connect {
            a: "1:0.102".into(),
            b: "3:0.102".into(),
            qos: "cbr:pcr=5000".into(),
            ..Connect::default()
        })
        .unwrap_err();
    let refusal = e.refusal().unwrap();
    assert_eq!(refusal.kind, ErrorKind::Refused, "{e}");
    assert!(refusal.message.contains("port 3"), "{e}");
    // Disconnect: cells on the VC are now unknown.
    client.disconnect(&id).unwrap();
    let e = client.disconnect(&id).unwrap_err();
    assert_eq!(
        e.refusal().map(|r| r.kind),
        Some(ErrorKind::NotFound),
        "a second disconnect: {e}"
    );
    let before = d.port(1).counters.unknown_vc;
    a.send_frame((0, 101), &frame(6));
    let deadline = Instant::now() + T;
    while d.port(1).counters.unknown_vc == before {
        assert!(
            Instant::now() < deadline,
            "cells after disconnect not counted"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(b.poll(Duration::from_millis(50)), 0, "nothing crosses");
    // Shutdown over the socket ends run() cleanly.
    client.shutdown().unwrap();
    let mut d = d;
    let t = d.thread.take().unwrap();
    let deadline = Instant::now() + T;
    while !t.is_finished() {
        assert!(
            Instant::now() < deadline,
            "shutdown did not stop the daemon"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    t.join().unwrap().unwrap();
    assert!(!dir.0.join("s9.sock").exists());
}

#[test]
fn bad_requests_get_errors_naming_them_and_the_connection_stays_usable() {
    let dir = TempDir::new("bad");
    let (text, _, _) = two_port_config(&dir.0, "shm");
    let d = Daemon::start(&text);
    let s = UnixStream::connect(&d.mgmt).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let cases: [(&str, ErrorKind, &str); 9] = [
        ("this is not json", ErrorKind::BadJson, "bad JSON"),
        ("{\"op\": 7}", ErrorKind::NoOp, "\"op\""),
        (
            "{\"op\": \"fly\"}",
            ErrorKind::UnknownOp,
            "unknown op \"fly\"",
        ),
        (
            "{\"op\": \"connect\", \"a\": \"1:0.300\"}",
            ErrorKind::BadRequest,
            "\"b\"",
        ),
        (
            "{\"op\": \"connect\", \"a\": \"1:0.300\", \"b\": \"2:0.300\", \"qos\": \"cbr:pcr=x\"}",
            ErrorKind::BadRequest,
            "\"qos\"",
        ),
        (
            "{\"op\": \"connect\", \"a\": \"9:0.300\", \"b\": \"2:0.300\", \"qos\": \"ubr\"}",
            ErrorKind::NotFound,
            "no port 9",
        ),
        (
            "{\"op\": \"disconnect\", \"id\": \"banana\"}",
            ErrorKind::BadRequest,
            "\"id\"",
        ),
        (
            "{\"op\": \"capture\", \"port\": 42}",
            ErrorKind::NotFound,
            "no port 42",
        ),
        (
            "{\"op\": \"capture\", \"port\": 1, \"vc\": \"x\"}",
            ErrorKind::BadRequest,
            "\"vc\"",
        ),
    ];
    for (req, kind, needle) in cases {
        w.write_all(format!("{req}\n").as_bytes()).unwrap();
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        // The raw line keeps the shape scripts read: "ok" false, "error" a string.
        assert!(line.starts_with("{\"ok\":false,"), "{req}: {line}");
        let Ok(Response::Error(e)) = decode_response(line.as_bytes()) else {
            panic!("{req}: {line}");
        };
        assert_eq!(e.kind, kind, "{req}: {e}");
        assert!(e.message.contains(needle), "{req}: {e}");
    }
    // Still usable.
    w.write_all(b"{\"op\":\"status\"}\n").unwrap();
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let Ok(Response::Status(s)) = decode_response(line.as_bytes()) else {
        panic!("{line}");
    };
    assert_eq!(s.ports.len(), 2);
    // A line without end is refused and the connection closed.
    let _ = w.write_all(&vec![b'x'; 100 << 10]);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.contains("longer than"), "{line}");
    let mut rest = String::new();
    assert_eq!(r.read_line(&mut rest).unwrap_or(0), 0, "closed: {rest}");
    // Others are still served.
    assert_eq!(d.status().ports.len(), 2);
    d.stop();
}

#[test]
fn a_bad_start_is_an_error_naming_the_port() {
    let dir = TempDir::new("badstart");
    let text = format!(
        "name = \"s1\"\nmanagement = {:?}\n[[port]]\nid = 4\nkind = \"tcp\"\naddr = \"192.0.2.1:41002\"\n",
        dir.0.join("m.sock")
    );
    let config = SwitchdConfig::from_toml(&text).unwrap();
    let e = natm_switchd::run(config, Arc::new(AtomicBool::new(false))).unwrap_err();
    let e = e.to_string();
    assert!(e.contains("port 4") && e.contains("192.0.2.1:41002"), "{e}");
}

#[test]
fn two_daemons_joined_by_a_trunk_one_dialling_the_other() {
    let dir = TempDir::new("trunk");
    let (sa, ha) = link_pair("shm", &dir.0, 1);
    let (sb, hb) = link_pair("tcp", &dir.0, 2);
    let (trunk, _) = link_pair("tcp", &dir.0, 3);
    let s1 = format!(
        "name = \"s1\"\nmanagement = {:?}\n[[port]]\nid = 1\n{sa}\n[[port]]\nid = 2\n{trunk}\n\
         [[xc]]\na = \"1:0.100\"\nb = \"2:0.1000\"\nqos = \"ubr\"\n",
        dir.0.join("s1.sock")
    );
    let s2 = format!(
        "name = \"s2\"\nmanagement = {:?}\n[[port]]\nid = 1\n{trunk}\nrole = \"connect\"\n\
         [[port]]\nid = 2\n{sb}\n[[xc]]\na = \"1:0.1000\"\nb = \"2:0.200\"\nqos = \"ubr\"\n",
        dir.0.join("s2.sock")
    );
    let d1 = Daemon::start(&s1);
    let d2 = Daemon::start(&s2);
    let mut a = Host::connect(&ha, (0, 100));
    let mut b = Host::connect(&hb, (0, 200));
    d1.wait_port(2, true);
    d2.wait_port(1, true);
    d2.wait_port(2, true);
    d1.wait_port(1, true);
    for i in 0..20 {
        a.send_frame((0, 100), &frame(i));
        b.send_frame((0, 200), &frame(100 + i));
    }
    b.wait_frames(20);
    a.wait_frames(20);
    for i in 0..20 {
        assert_eq!(b.frames[i], frame(i));
        assert_eq!(a.frames[i], frame(100 + i));
    }
    // The trunk breaks (s1 stops): s2's trunk port goes down, and it dials again when s1
    // is back.
    drop(a);
    d1.stop();
    d2.wait_port(1, false);
    let d1 = Daemon::start(&s1);
    d2.wait_port(1, true);
    let mut a = Host::connect(&ha, (0, 100));
    d1.wait_port(1, true);
    a.send_frame((0, 100), &frame(77));
    b.wait_frames(21);
    assert_eq!(b.frames[20], frame(77));
    assert!(d2.port(1).connects >= 2);
}

#[test]
fn a_host_that_does_not_read_backs_cells_into_the_switch_queues_and_nothing_is_lost_unseen() {
    let dir = TempDir::new("backpressure");
    let text = format!(
        "name = \"s1\"\nmanagement = {:?}\n[[port]]\nid = 1\nkind = \"shm\"\npath = {:?}\n\
         [[port]]\nid = 2\nkind = \"shm\"\npath = {:?}\nring_cells = 64\n\
         queue_cells = [16, 16, 16, 100]\n\
         [[xc]]\na = \"1:0.100\"\nb = \"2:0.200\"\nqos = \"ubr\"\naal5 = true\n",
        dir.0.join("m.sock"),
        dir.0.join("p1.sock"),
        dir.0.join("p2.sock")
    );
    let d = Daemon::start(&text);
    let mut a = Host::connect(
        &format!("kind = \"shm\"\npath = {:?}", dir.0.join("p1.sock")),
        (0, 100),
    );
    let mut b = Host::connect(
        &format!(
            "kind = \"shm\"\npath = {:?}\nring_cells = 64",
            dir.0.join("p2.sock")
        ),
        (0, 200),
    );
    d.wait_port(1, true);
    d.wait_port(2, true);
    // 200 frames of 10 cells while b reads nothing: 64 fit b's ring, some wait in the
    // daemon (held), 100 in the UBR queue, and the rest are dropped as whole frames.
    const FRAMES: usize = 200;
    let sdu = |i: usize| vec![i as u8; 9 * 48 - 8 + 40];
    for i in 0..FRAMES {
        a.send_frame((0, 100), &sdu(i));
    }
    let per_frame = (sdu(0).len() + 8).div_ceil(48) as u64;
    let sent = per_frame * FRAMES as u64;
    let deadline = Instant::now() + T;
    let x = loop {
        let x = d.status().connections[0].a_to_b;
        if x.cells_in == sent {
            break x;
        }
        assert!(
            Instant::now() < deadline,
            "not all cells reached the switch: {x:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let p2 = d.port(2);
    let (out, dropped, queued) = (x.cells_out, x.dropped, u64::from(x.queued));
    assert_eq!(out + dropped + queued, sent, "{x:?}");
    assert!(dropped > 0, "the queue limit was reached: {x:?}");
    assert!(queued > 0, "cells wait in the switch: {x:?}");
    let c = &p2.counters;
    assert_eq!(c.epd + c.ppd + c.queue_full, dropped, "{p2:?}");
    // b reads now: every cell the switch sent arrives, and the frames are whole.
    let deadline = Instant::now() + T;
    let mut got = 0u64;
    while got < out + queued {
        assert!(Instant::now() < deadline, "{got} of {} cells", out + queued);
        got += b.poll(Duration::from_millis(20)) as u64;
    }
    assert_eq!(got, sent - dropped);
    assert_eq!(b.frames.len() as u64, got / per_frame);
    for f in &b.frames {
        assert_eq!(f, &sdu(usize::from(f[0])), "a whole frame");
    }
    assert_eq!(d.port(2).tx_lost, 0);
}

#[test]
fn a_paced_port_carries_frames_at_its_rate() {
    let dir = TempDir::new("paced");
    let (text, h1, h2) = two_port_config(&dir.0, "shm");
    // Port 2 emulates a 20,000 cells/s line (the switch paces its output to it).
    let text = text.replacen(
        "[[port]]\nid = 2\n",
        "[[port]]\nid = 2\nrate = \"20000\"\n",
        1,
    );
    let d = Daemon::start(&text);
    assert!(d.port(2).link.contains("20000"));
    let mut a = Host::connect(&h1, (0, 100));
    let mut b = Host::connect(&h2, (0, 200));
    d.wait_port(1, true);
    d.wait_port(2, true);
    let sdu = vec![0x5a; 48 * 50 - 8];
    let t0 = Instant::now();
    for _ in 0..20 {
        a.send_frame((0, 100), &sdu);
    }
    b.wait_frames(20);
    // 1,000 cells at 20,000 cells/s: at least 50 ms.
    let took = t0.elapsed();
    assert!(took >= Duration::from_millis(45), "{took:?}");
    assert!(b.frames.iter().all(|f| *f == sdu));
}

//! Links made from configuration text: each kind listens and connects from a TOML snippet,
//! carries cells byte-exact both ways, reports a departed peer as an error, and takes a
//! new peer after one left.

use std::io;
use std::net::UdpSocket;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use natm_link::endpoint::{EndpointLink, LinkConfig, LinkSetupError, is_peer_gone};
use natm_link::{CELL_LEN, CellBytes};

const N: u32 = 10_000;
const T: Duration = Duration::from_secs(20);

/// A temporary directory for socket files, removed at the end.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("natm-endpoint-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// CellBytes `i` of stream `s`: a valid header on VC (1+s).(32+i%500), a payload that says which.
fn cell(s: u8, i: u32) -> CellBytes {
    let mut c = [0u8; CELL_LEN];
    let word = (u32::from(1 + s) << 20) | ((32 + i % 500) << 4);
    c[..4].copy_from_slice(&word.to_be_bytes());
    c[4] = natm_wire::cell::hec([c[0], c[1], c[2], c[3]]);
    c[5..9].copy_from_slice(&i.to_be_bytes());
    for (k, b) in c[9..].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(17).wrapping_add(k as u8) ^ s;
    }
    c
}

/// Sends stream `s` and receives stream `r` (N cells each) at once; returns the link.
/// With a `window`, sends at most that many cells beyond those received (both sides run
/// this, so neither gets more than two windows ahead of the other's reading).
fn exchange(
    mut link: Box<dyn EndpointLink>,
    s: u8,
    r: u8,
    window: Option<usize>,
) -> Box<dyn EndpointLink> {
    let deadline = Instant::now() + T;
    let out: Vec<CellBytes> = (0..N).map(|i| cell(s, i)).collect();
    let (mut sent, mut got) = (0usize, 0u32);
    let mut buf = [[0u8; CELL_LEN]; 64];
    while sent < out.len() || got < N || link.next_due().is_some() {
        assert!(
            Instant::now() < deadline,
            "stuck: sent {sent}, got {got} of {N}"
        );
        let limit = window.map_or(out.len(), |w| got as usize + w);
        let end = out.len().min(sent + 100).min(limit.max(sent));
        sent += link.send_cells(&out[sent..end]).unwrap();
        let n = link.recv_cells(&mut buf).unwrap();
        for c in &buf[..n] {
            assert_eq!(*c, cell(r, got), "cell {got} of stream {r}");
            got += 1;
        }
        if n == 0 && (sent == out.len() || sent == limit) {
            link.wait_recv(Some(Duration::from_micros(200))).unwrap();
        }
    }
    link
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Listens with `switch`, connects with `host` in another thread, exchanges N cells each
/// way; returns both links and the listener.
fn run_pair(
    switch: &LinkConfig,
    host: LinkConfig,
    window: Option<usize>,
) -> (
    natm_link::endpoint::LinkListener,
    Box<dyn EndpointLink>,
    Box<dyn EndpointLink>,
) {
    let mut listener = switch.listen().unwrap();
    let h = std::thread::spawn(move || {
        let link = host.connect(T).unwrap();
        exchange(link, 1, 2, window)
    });
    let link = listener.accept(Some(T)).unwrap().expect("a peer connected");
    let link = exchange(link, 2, 1, window);
    let host = h.join().unwrap();
    assert_eq!(link.counters().rx_cells, u64::from(N));
    assert_eq!(link.counters().tx_cells, u64::from(N));
    assert_eq!(host.counters().rx_cells, u64::from(N));
    (listener, link, host)
}

/// Receives until the link fails; the error.
fn until_error(link: &mut dyn EndpointLink) -> io::Error {
    let deadline = Instant::now() + T;
    let mut buf = [[0u8; CELL_LEN]; 16];
    loop {
        assert!(
            Instant::now() < deadline,
            "the peer's departure was never seen"
        );
        match link.recv_cells(&mut buf) {
            Ok(_) => {
                let _ = link.wait_recv(Some(Duration::from_millis(5)));
            }
            Err(e) => return e,
        }
    }
}

#[test]
fn shm_from_toml_both_ways_then_peer_gone_then_a_new_peer() {
    let dir = TempDir::new("shm");
    let path = dir.0.join("s1-p1.sock");
    let text = format!("kind = \"shm\"\npath = {:?}\nring_cells = 256", path);
    let switch = LinkConfig::from_toml(&text).unwrap();
    let host = LinkConfig::from_toml(&format!("{text}\nwait = \"eventfd\"")).unwrap();
    let (mut listener, mut link, host_link) = run_pair(&switch, host.clone(), None);
    assert!(path.exists());
    assert!(link.poll_fd().is_some(), "the switch side can sleep on it");
    // The host goes away: the switch side sees an error, not Ok(0) forever.
    drop(host_link);
    let e = until_error(&mut *link);
    assert!(is_peer_gone(&e), "{e}");
    assert!(
        link.send_cells(&[cell(0, 0); 300]).is_err() || link.send_cells(&[cell(0, 0)]).is_err()
    );
    // A new host connects to the same listener.
    let h = std::thread::spawn(move || exchange(host.connect(T).unwrap(), 1, 2, None));
    let link = listener.accept(Some(T)).unwrap().unwrap();
    let mut link = exchange(link, 2, 1, None);
    drop(h.join().unwrap());
    assert!(is_peer_gone(&until_error(&mut *link)));
    // The listener's socket file goes with it.
    drop(listener);
    assert!(!path.exists());
}

#[test]
fn tcp_from_toml_both_ways_paced_and_peer_gone() {
    let switch = LinkConfig::from_toml("kind = \"tcp\"\naddr = \"127.0.0.1:0\"").unwrap();
    let listener = switch.listen().unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    // A paced line on the host side (10,000 cells at 400,000 cells/s: 25 ms).
    let switch = LinkConfig::from_toml(&format!("kind = \"tcp\"\naddr = \"{addr}\"")).unwrap();
    let host = LinkConfig::from_toml(&format!(
        "kind = \"tcp\"\naddr = \"{addr}\"\nrate = \"400000\""
    ))
    .unwrap();
    let (_listener, mut link, host_link) = run_pair(&switch, host, None);
    drop(host_link);
    let e = until_error(&mut *link);
    assert!(is_peer_gone(&e), "{e}");
    assert!(e.to_string().contains("closed the connection"), "{e}");
}

#[test]
fn udp_from_toml_both_ways() {
    let (pa, pb) = (free_udp_port(), free_udp_port());
    let switch = LinkConfig::from_toml(&format!(
        "kind = \"udp\"\nlocal = \"127.0.0.1:{pa}\"\npeer = \"127.0.0.1:{pb}\""
    ))
    .unwrap();
    let host = LinkConfig::from_toml(&format!(
        "kind = \"udp\"\nlocal = \"127.0.0.1:{pb}\"\npeer = \"127.0.0.1:{pa}\""
    ))
    .unwrap();
    // Both ends exist before either sends: udp drops cells nobody is bound for. UDP has
    // no flow control: a window of 500 cells keeps the backlog within the receivers'
    // socket buffers however the threads are scheduled.
    let mut listener = switch.listen().unwrap();
    let host_link = host.connect(T).unwrap();
    let link = listener.accept(Some(Duration::ZERO)).unwrap().unwrap();
    let h = std::thread::spawn(move || exchange(host_link, 1, 2, Some(500)));
    let link = exchange(link, 2, 1, Some(500));
    let host_link = h.join().unwrap();
    assert_eq!(link.counters().rx_lost + host_link.counters().rx_lost, 0);
}

#[test]
fn bad_addresses_and_absent_peers_are_errors_naming_them() {
    // An address this machine does not have.
    let c = LinkConfig::from_toml("kind = \"tcp\"\naddr = \"192.0.2.1:41002\"").unwrap();
    let e = c.listen().unwrap_err();
    assert!(matches!(e, LinkSetupError::Io { what: "bind", .. }), "{e}");
    assert!(e.to_string().contains("192.0.2.1:41002"), "{e}");
    // Nobody listening: the connect waits its timeout and says where.
    let port = free_udp_port();
    let c = LinkConfig::from_toml(&format!("kind = \"tcp\"\naddr = \"127.0.0.1:{port}\"")).unwrap();
    let e = c.connect(Duration::from_millis(50)).err().unwrap();
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    let dir = TempDir::new("bad");
    let path = dir.0.join("nobody.sock");
    let c = LinkConfig::from_toml(&format!("kind = \"shm\"\npath = {path:?}")).unwrap();
    let e = c.connect(Duration::from_millis(50)).err().unwrap();
    assert!(e.to_string().contains("nobody.sock"), "{e}");
    // A directory that does not exist.
    let c = LinkConfig::from_toml("kind = \"shm\"\npath = \"/nonexistent-natm/x.sock\"").unwrap();
    let e = c.listen().unwrap_err();
    assert!(e.to_string().contains("/nonexistent-natm/x.sock"), "{e}");
    // A path somebody listens on already is refused; a stale socket file is replaced.
    let path = dir.0.join("busy.sock");
    let c = LinkConfig::from_toml(&format!("kind = \"shm\"\npath = {path:?}")).unwrap();
    let first = c.listen().unwrap();
    assert!(matches!(c.listen(), Err(LinkSetupError::InUse { .. })));
    drop(first);
    let stale = std::os::unix::net::UnixListener::bind(&path).unwrap();
    drop(stale);
    assert!(path.exists());
    assert!(c.listen().is_ok(), "a stale socket file is replaced");
    // Bad TOML names the line.
    let e = LinkConfig::from_toml("kind = \"udp\"\nlocal = 127.0.0.1").unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
}

/// The environment variable that turns the test below into its own peer process.
const CHILD_ENV: &str = "NATM_ENDPOINT_TEST_PEER";

#[test]
fn a_peer_process_that_exits_is_an_error_on_the_other_side() {
    if let Ok(text) = std::env::var(CHILD_ENV) {
        // The child: connect, send one cell, and exit without any goodbye.
        let mut link = LinkConfig::from_toml(&text).unwrap().connect(T).unwrap();
        assert_eq!(link.send_cells_timeout(&[cell(1, 0)], Some(T)).unwrap(), 1);
        while link.next_due().is_some() {
            link.send_cells(&[]).unwrap();
        }
        std::process::exit(0);
    }
    let dir = TempDir::new("exit");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for text in [
        format!("kind = \"shm\"\npath = {:?}", dir.0.join("x.sock")),
        format!("kind = \"tcp\"\naddr = \"127.0.0.1:{port}\""),
    ] {
        let mut listener = LinkConfig::from_toml(&text).unwrap().listen().unwrap();
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "a_peer_process_that_exits_is_an_error_on_the_other_side",
                "--exact",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &text)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut link = listener
            .accept(Some(T))
            .unwrap()
            .expect("the child connected");
        let mut buf = [[0u8; CELL_LEN]; 4];
        assert_eq!(
            link.recv_cells_timeout(&mut buf, Some(T)).unwrap(),
            1,
            "{text}"
        );
        assert_eq!(buf[0], cell(1, 0));
        assert!(child.wait().unwrap().success());
        let e = until_error(&mut *link);
        assert!(is_peer_gone(&e), "{text}: {e}");
    }
}

#[test]
fn a_udp_rate_the_kernel_cannot_buffer_is_said_at_setup() {
    // 10⁹ cells/s for 20 ms in one-cell datagrams is some 16 GB of socket buffer.
    let (pa, pb) = (free_udp_port(), free_udp_port());
    let c = LinkConfig::from_toml(&format!(
        "kind = \"udp\"\nlocal = \"127.0.0.1:{pa}\"\npeer = \"127.0.0.1:{pb}\"\nrate = \"1000000000\""
    ))
    .unwrap();
    let link = c.connect(T).unwrap();
    let w = link.setup_warning().expect("a warning");
    assert!(w.contains("socket buffers"), "{w}");
    let dir = TempDir::new("warn");
    let c = LinkConfig::from_toml(&format!(
        "kind = \"shm\"\npath = {:?}",
        dir.0.join("s.sock")
    ))
    .unwrap();
    let mut listener = c.listen().unwrap();
    let h = std::thread::spawn(move || c.connect(T).unwrap().setup_warning());
    let sw = listener.accept(Some(T)).unwrap().unwrap();
    assert_eq!((sw.setup_warning(), h.join().unwrap()), (None, None));
}

//! Transport channels (`natm::transport::Channel`) through two real host daemons in this
//! process, joined host to host by a shared-memory link that can drop every n-th cell one
//! way: a multi-megabyte reliable stream byte-exact on the daemon and the direct path (and
//! over the lossy link, with SMART's resends counted), best effort reporting exactly the
//! messages it lost, guaranteed keeping to its rate, the hello refusing a peer of another
//! service, admission refusing a guaranteed rate the VC or the host cannot honour, the
//! non-blocking calls.
//! Through the lab's switch and its lanes these are natm-cli's `transport_cli` tests.

mod common;

use std::io;
use std::os::fd::BorrowedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{TempDir, pattern};
use natm::transport::{
    Channel, ChannelStats, CostLine, Event, HostBudget, MsgSeq, Service, TransportOptions,
};
use natm::{DataPath, Error, Host, NotifyMode, VcOptions};
use natm_host::hostd::{HostdOptions, HostdThread, IdleWait};
use natm_link::endpoint::EndpointLink;
use natm_link::shm::ShmLink;
use natm_link::{CellBytes, CellLink, LinkCounters};

/// A link that drops every `every`-th cell it is given to send (0: none), and counts them.
struct Lossy {
    inner: ShmLink,
    every: u64,
    seen: u64,
    dropped: Arc<AtomicU64>,
}

impl CellLink for Lossy {
    fn send_cells(&mut self, cells: &[CellBytes]) -> io::Result<usize> {
        if self.every == 0 {
            return self.inner.send_cells(cells);
        }
        // The cells before the next one to drop go; the dropped one counts as sent.
        let drop_at = (self.every - 1 - self.seen % self.every) as usize;
        if drop_at >= cells.len() {
            let n = self.inner.send_cells(cells)?;
            self.seen += n as u64;
            return Ok(n);
        }
        let n = self.inner.send_cells(&cells[..drop_at])?;
        self.seen += n as u64;
        if n < drop_at {
            return Ok(n);
        }
        self.seen += 1;
        self.dropped.fetch_add(1, Ordering::Relaxed);
        Ok(n + 1)
    }
    fn recv_cells(&mut self, buf: &mut [CellBytes]) -> io::Result<usize> {
        self.inner.recv_cells(buf)
    }
    fn wait_recv(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        self.inner.wait_recv(timeout)
    }
    fn wait_send(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        self.inner.wait_send(timeout)
    }
    fn poll_fd(&self) -> Option<BorrowedFd<'_>> {
        self.inner.poll_fd()
    }
    fn counters(&self) -> LinkCounters {
        self.inner.counters()
    }
}

impl EndpointLink for Lossy {
    fn next_due(&self) -> Option<std::time::Instant> {
        self.inner.next_due()
    }
}

/// Hosts a and b, a's sent cells dropped one in `every` (0: none).
struct Hosts {
    a: HostdThread,
    b: HostdThread,
    dropped: Arc<AtomicU64>,
    _dir: TempDir,
}

impl Hosts {
    fn new(every: u64) -> Hosts {
        let dir = TempDir::new();
        let (la, lb) = ShmLink::pair(4096).unwrap();
        let dropped = Arc::new(AtomicU64::new(0));
        let spawn = |name: &str, link: ShmLink, every: u64| {
            let mut link = Some(link);
            let dropped = dropped.clone();
            let opts = HostdOptions {
                name: name.into(),
                socket: dir.0.join(format!("{name}.sock")),
                wait: IdleWait::Adaptive,
                link_description: "shm pair".into(),
                link_rate: natm_core::LineRate::Unlimited,
                lanes: None,
                address: None,
            };
            HostdThread::spawn(
                opts,
                Box::new(move || {
                    let inner = link
                        .take()
                        .ok_or_else(|| io::Error::other("the link was taken"))?;
                    Ok(Box::new(Lossy {
                        inner,
                        every,
                        seen: 0,
                        dropped: dropped.clone(),
                    }) as Box<dyn EndpointLink>)
                }),
            )
            .unwrap()
        };
        let a = spawn("a", la, every);
        let b = spawn("b", lb, 0);
        Hosts {
            a,
            b,
            dropped,
            _dir: dir,
        }
    }

    /// A channel at each end of VC 0.100, both opened at once (each waits for the other);
    /// UBR, or CBR at the rate of a guaranteed channel (admission wants it reserved).
    fn pair(&self, path: DataPath, a: TransportOptions, b: TransportOptions) -> (Channel, Channel) {
        let vc = |o: &TransportOptions| {
            let qos = match o.config.service {
                Service::Guaranteed { rate } => format!("cbr:pcr={rate}"),
                _ => "ubr".into(),
            };
            VcOptions::new("0.100".parse().unwrap())
                .qos(qos.parse().unwrap())
                .notify(NotifyMode::Adaptive)
                .path(path)
                .buffers(128)
                .buffer_size(o.buffer_size())
        };
        let hb = Host::connect_path(self.b.socket()).unwrap();
        let vb = vc(&b);
        let tb = std::thread::spawn(move || Channel::open(&hb, vb, b));
        let ha = Host::connect_path(self.a.socket()).unwrap();
        let ca = Channel::open(&ha, vc(&a), a).expect("a's channel");
        let cb = tb.join().unwrap().expect("b's channel");
        (ca, cb)
    }
}

const T: Duration = Duration::from_secs(60);

/// `total` bytes in messages of `size` from a to b on a reliable channel, checked
/// byte-exact and in order; b's figures.
fn reliable_stream(hosts: &Hosts, path: DataPath, total: usize, size: usize) -> (Channel, Channel) {
    let opts = TransportOptions::new(Service::Reliable);
    let (mut a, mut b) = hosts.pair(path, opts, opts);
    let data = pattern(total, 0x3c);
    let reader = std::thread::spawn(move || {
        let mut got = Vec::with_capacity(total);
        let first = MsgSeq(b.stats().remote.msg);
        let mut k = 0u32;
        while got.len() < total {
            match b.recv_timeout(T).expect("a message") {
                Event::Message { msg, data } => {
                    assert_eq!(msg, first.add(k), "in order");
                    k += 1;
                    got.extend_from_slice(&data);
                }
                Event::Lost { .. } => panic!("a reliable channel lost messages"),
            }
        }
        b.linger(Duration::from_millis(300), Duration::from_secs(5))
            .unwrap();
        (got, b)
    });
    let start = Instant::now();
    for m in data.chunks(size) {
        a.send(m).expect("send");
    }
    a.flush(T).expect("everything acknowledged");
    let elapsed = start.elapsed();
    let (got, b) = reader.join().unwrap();
    assert!(got == data, "{path:?}: the stream differs");
    let s = a.stats().endpoint;
    eprintln!(
        "{path:?}: {total} bytes in {elapsed:?}, srtt {:?}, cwnd {}, smart resends {}, \
         timeout resends {}, probes {}",
        s.srtt, s.cwnd, s.smart_resends, s.timeout_resends, s.probes
    );
    assert_eq!(s.bytes_sent, total as u64);
    assert_eq!(b.stats().endpoint.bytes_delivered, total as u64);
    assert!(s.srtt.is_some(), "round trips measured");
    assert!(s.acks_received > 0);
    (a, b)
}

#[test]
fn a_reliable_stream_is_byte_exact_on_the_daemon_and_the_direct_path() {
    let hosts = Hosts::new(0);
    for path in [DataPath::Direct, DataPath::Daemon] {
        let (a, b) = reliable_stream(&hosts, path, 6 << 20, 65_536);
        let (sa, sb) = (a.stats(), b.stats());
        assert_eq!(sa.remote, sb.local, "the ISNs agree");
        assert_eq!(sb.remote, sa.local);
        assert_ne!(sa.local, sb.local, "each end drew its own");
    }
}

#[test]
fn a_reliable_stream_over_a_lossy_link_is_byte_exact_and_smart_resends_what_was_lost() {
    // One cell in 997 from a to b: about one 8 KiB TPDU in six.
    let hosts = Hosts::new(997);
    let (a, _b) = reliable_stream(&hosts, DataPath::Direct, 3 << 20, 100_000);
    let s = a.stats().endpoint;
    assert!(hosts.dropped.load(Ordering::Relaxed) > 50);
    assert!(s.smart_losses > 0 && s.smart_resends > 0, "{s:?}");
}

#[test]
fn best_effort_reports_exactly_the_messages_it_lost() {
    // One cell in 499 from a to b; messages of one 22-cell TPDU.
    let hosts = Hosts::new(499);
    let opts = TransportOptions::new(Service::BestEffort);
    let (mut a, mut b) = hosts.pair(DataPath::Direct, opts, opts);
    const N: u32 = 3000;
    let message = |k: u32| {
        let mut m = pattern(1000, k as u8);
        m[..4].copy_from_slice(&k.to_be_bytes());
        m
    };
    let reader = std::thread::spawn(move || {
        let first = MsgSeq(b.stats().remote.msg);
        let mut seen = vec![0u8; N as usize];
        let (mut delivered, mut lost) = (0, 0);
        loop {
            match b.recv_timeout(T).expect("an event") {
                Event::Message { msg, data } => {
                    let k = msg.since(first);
                    if k >= N {
                        break; // an end marker
                    }
                    assert!(data == message(k), "message {k} differs");
                    seen[k as usize] += 1;
                    delivered += 1;
                }
                Event::Lost { first: f, last } => {
                    for k in f.since(first)..=last.since(first) {
                        if k < N {
                            seen[k as usize] += 1;
                            lost += 1;
                        }
                    }
                }
            }
        }
        assert!(
            seen.iter().all(|&n| n == 1),
            "every message delivered or reported, once"
        );
        (delivered, lost, b.stats().endpoint)
    });
    for k in 0..N {
        a.send(&message(k)).expect("send");
        if k % 64 == 63 {
            // At the link's pace: losses here are the link's, not the queues'.
            a.flush(T).unwrap();
        }
    }
    a.flush(T).unwrap();
    // End markers until the reader has one (they can be lost too).
    let mut k = N;
    while !reader.is_finished() {
        a.send(&[0xee]).expect("send a marker");
        a.flush(T).unwrap();
        k += 1;
        assert!(k < N + 1000, "no end marker arrived");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (delivered, lost, s) = reader.join().unwrap();
    eprintln!(
        "best effort: {delivered} delivered, {lost} lost, {} reports, {} cells dropped; {s:?}; \
         a: {:?}",
        s.loss_reports,
        hosts.dropped.load(Ordering::Relaxed),
        a.stats()
    );
    assert_eq!(delivered + lost, N);
    assert!(
        lost > 0,
        "the link dropped {} cells",
        hosts.dropped.load(Ordering::Relaxed)
    );
    assert!(s.loss_reports > 0);
    assert_eq!(
        a.stats().endpoint.smart_resends,
        0,
        "best effort resends nothing"
    );
}

#[test]
fn a_peer_of_another_service_is_refused_by_the_hello() {
    let hosts = Hosts::new(0);
    let vc = |h: &HostdThread| {
        let host = Host::connect_path(h.socket()).unwrap();
        (
            host,
            VcOptions::new("0.101".parse().unwrap()).path(DataPath::Daemon),
        )
    };
    let (hb, vb) = vc(&hosts.b);
    let tb = std::thread::spawn(move || {
        Channel::open(
            &hb,
            vb,
            TransportOptions::new(Service::BestEffort).handshake_timeout(Duration::from_secs(5)),
        )
    });
    let (ha, va) = vc(&hosts.a);
    let ra = Channel::open(
        &ha,
        va,
        TransportOptions::new(Service::Reliable).handshake_timeout(Duration::from_secs(5)),
    );
    for r in [ra, tb.join().unwrap()] {
        match r {
            Err(Error::Handshake(why)) => assert!(why.contains("best-effort"), "{why}"),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a channel of another service"),
        }
    }
}

#[test]
fn no_peer_is_a_timeout_and_the_non_blocking_calls_do_not_wait() {
    let hosts = Hosts::new(0);
    let host = Host::connect_path(hosts.a.socket()).unwrap();
    let t0 = Instant::now();
    let r = Channel::open(
        &host,
        VcOptions::new("0.102".parse().unwrap()),
        TransportOptions::new(Service::Reliable).handshake_timeout(Duration::from_millis(300)),
    );
    assert!(matches!(r, Err(Error::Timeout)), "{:?}", r.err());
    assert!(t0.elapsed() < Duration::from_secs(3));

    let opts = TransportOptions::new(Service::Reliable);
    let (mut a, mut b) = hosts.pair(DataPath::Auto, opts, opts);
    assert!(matches!(b.try_recv(), Err(Error::WouldBlock)));
    let too_long = vec![0u8; a.config().max_message + 1];
    assert!(matches!(a.send(&too_long), Err(Error::TooLong { .. })));
    // try_send until the send queue (4 MiB) is full; nobody reads meanwhile.
    let m = vec![7u8; 1 << 20];
    let mut sent = 0;
    loop {
        match a.try_send(&m) {
            Ok(_) => sent += 1,
            Err(Error::WouldBlock) => break,
            Err(e) => panic!("{e}"),
        }
        assert!(sent < 100, "the queue never filled");
    }
    assert!(sent >= 1);
    for _ in 0..sent {
        loop {
            a.poll().unwrap();
            match b.recv_timeout(Duration::from_millis(20)) {
                Ok(Event::Message { data, .. }) => {
                    assert!(data == m);
                    break;
                }
                Ok(e) => panic!("{e:?}"),
                Err(Error::Timeout) => {}
                Err(e) => panic!("{e}"),
            }
        }
    }
    // a's last acks may have been dropped at its own full ring (the loop polls it once per
    // message), so b keeps answering a's probes until a's flush ends: a receiver that stops
    // calling its channel leaves the sender waiting (what `Channel::linger` is for).
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                b.poll().unwrap();
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let flushed = a.flush(T);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        flushed.unwrap();
    });
}

#[test]
fn guaranteed_keeps_to_its_rate_and_delivers_in_order() {
    let hosts = Hosts::new(0);
    const RATE: u32 = 50_000;
    let opts = TransportOptions::new(Service::Guaranteed { rate: RATE });
    let (mut a, mut b) = hosts.pair(DataPath::Direct, opts, opts);
    // 256 messages of one full TPDU: 172 cells each with header, trailer and pad.
    let n = 256u32;
    let cells = u64::from(n) * u64::from(natm_transport::frame_cells(opts.max_frame()));
    let ideal = Duration::from_secs_f64(cells as f64 / f64::from(RATE));
    let reader = std::thread::spawn(move || {
        let first = MsgSeq(b.stats().remote.msg);
        for k in 0..n {
            match b.recv_timeout(T).expect("a message") {
                Event::Message { msg, data } => {
                    assert_eq!(msg, first.add(k));
                    assert!(data == pattern(8192, k as u8), "message {k}");
                }
                Event::Lost { first, last } => panic!("lost {first}..={last} on a clean link"),
            }
        }
    });
    let start = Instant::now();
    for k in 0..n {
        a.send(&pattern(8192, k as u8)).expect("send");
    }
    a.flush(T).unwrap();
    let elapsed = start.elapsed();
    reader.join().unwrap();
    let s = a.stats().endpoint;
    eprintln!(
        "guaranteed {RATE} cells/s: {cells} cells in {elapsed:?} (ideal {ideal:?}), {} activations, X {}",
        s.activations, s.spacing
    );
    // The bucket never lets the channel run ahead of its rate (its first burst aside);
    // slower only if this machine is busy.
    assert!(elapsed >= ideal.mul_f64(0.9), "{elapsed:?} for {ideal:?}");
    assert!(elapsed <= ideal * 3, "{elapsed:?} for {ideal:?}");
    assert!(s.activations > 0);
}

/// A guaranteed channel over a VC whose QoS does not reserve its rate, or on a host whose
/// per-TPDU budget cannot take it, is refused at once (no hello, no wait for a peer),
/// naming the constraint; the VC is closed again with the channel, so it can be reopened.
#[test]
fn admission_refuses_a_rate_the_vc_or_the_host_cannot_honour() {
    let hosts = Hosts::new(0);
    let host = Host::connect_path(hosts.a.socket()).unwrap();
    let opts = TransportOptions::new(Service::Guaranteed { rate: 20_000 })
        .handshake_timeout(Duration::from_secs(30));
    let open = |qos: &str, opts: TransportOptions| {
        let vc = VcOptions::new("0.105".parse().unwrap())
            .qos(qos.parse().unwrap())
            .buffer_size(opts.buffer_size());
        let t0 = Instant::now();
        let r = Channel::open(&host, vc, opts);
        assert!(t0.elapsed() < Duration::from_secs(5), "admission waited");
        match r {
            Err(Error::NotAdmitted(why)) => why,
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("admitted with {qos}"),
        }
    };
    // What admission reads: the QoS the PVC was opened with (UBR when none is given).
    let vc = host
        .open(VcOptions::new("0.105".parse().unwrap()).qos("cbr:pcr=10000".parse().unwrap()))
        .unwrap();
    assert_eq!(vc.qos(), &"cbr:pcr=10000".parse().unwrap());
    drop(vc);
    let vc = host.open(VcOptions::new("0.105".parse().unwrap())).unwrap();
    assert_eq!(vc.qos(), &"ubr".parse().unwrap());
    drop(vc);
    let why = open("cbr:pcr=10000", opts);
    assert_eq!(why.constraint(), "link");
    assert_eq!(
        Error::NotAdmitted(why).to_string(),
        "not admitted: link: the VC's cbr pcr 10000 cells/s < 20000 cells/s needed for \
         guaranteed:20000"
    );
    assert_eq!(open("ubr", opts).constraint(), "link");
    // 1 ms to send a TPDU and 1 ms to receive one: 116 TPDUs/s of 172 cells take 233 ms
    // of CPU per second, more than a tenth of a CPU.
    let slow = CostLine {
        fixed_ns: 1_000_000,
        per_byte_ps: 0,
    };
    let budget = HostBudget {
        share_permille: 100,
        ..HostBudget::new(slow, slow)
    };
    let why = open("cbr:pcr=20000", opts.budget(budget));
    assert_eq!(why.constraint(), "host");
    assert!(why.to_string().contains("> the budget's 100 ms"), "{why}");
}

/// The seed's duplex channel from two simplex VCs: a sends on 0.100 and receives on
/// 0.101, b the same two crossed; over a link that drops a's cells, on both paths. Each
/// VC carries one direction only: the data one way, the acks the other.
#[test]
fn a_channel_from_two_vcs_sends_on_one_and_receives_on_the_other() {
    let hosts = Hosts::new(997);
    for path in [DataPath::Direct, DataPath::Daemon] {
        let opts = TransportOptions::new(Service::Reliable);
        let vc = |v: &str| {
            VcOptions::new(v.parse().unwrap())
                .path(path)
                .buffers(128)
                .buffer_size(opts.buffer_size())
        };
        let hb = Host::connect_path(hosts.b.socket()).unwrap();
        let (sb, rb) = (vc("0.101"), vc("0.100"));
        let tb = std::thread::spawn(move || Channel::open_pair(&hb, sb, rb, opts));
        let ha = Host::connect_path(hosts.a.socket()).unwrap();
        let mut a = Channel::open_pair(&ha, vc("0.100"), vc("0.101"), opts).expect("a's pair");
        let mut b = tb.join().unwrap().expect("b's pair");
        assert_eq!(a.send_vc().qos(), b.vc().qos());

        let total = 2 << 20;
        let data = pattern(total, 0x5e);
        let reader = std::thread::spawn(move || {
            let mut got = Vec::with_capacity(total);
            while got.len() < total {
                match b.recv_timeout(T).expect("a message") {
                    Event::Message { data, .. } => got.extend_from_slice(&data),
                    Event::Lost { .. } => panic!("a reliable channel lost messages"),
                }
            }
            b.linger(Duration::from_millis(300), Duration::from_secs(5))
                .unwrap();
            (got, b)
        });
        for m in data.chunks(20_000) {
            a.send(m).expect("send");
        }
        a.flush(T).expect("everything acknowledged");
        let (got, b) = reader.join().unwrap();
        assert!(got == data, "{path:?}: the stream differs");
        let s = a.stats().endpoint;
        assert!(
            s.smart_resends > 0,
            "{path:?}: a's lost cells were resent: {s:?}"
        );

        // a's sending VC carried a's frames only; its receiving VC only b's.
        let (a_out, a_in) = (a.send_vc().counters().unwrap(), a.vc().counters().unwrap());
        assert!(a_out.sdus_sent > 0 && a_out.sdus_received == 0, "{a_out:?}");
        assert!(a_in.sdus_received > 0 && a_in.sdus_sent == 0, "{a_in:?}");
        let b_out = b.send_vc().counters().unwrap();
        assert!(b_out.sdus_sent > 0 && b_out.sdus_received == 0, "{b_out:?}");
    }
}

/// A request and its reply move one frame each way: the channel holds the ack of a message
/// it hands the application until its next call, and the reply carries it. On the daemon
/// and the direct path.
#[test]
fn a_reply_carries_the_ack_of_its_request() {
    let hosts = Hosts::new(0);
    for path in [DataPath::Direct, DataPath::Daemon] {
        let opts = TransportOptions::new(Service::Reliable);
        let (mut a, mut b) = hosts.pair(path, opts, opts);
        let n = 200u64;
        let server = std::thread::spawn(move || {
            for _ in 0..n {
                match b.recv_timeout(T).expect("a request") {
                    Event::Message { data, .. } => b.send(&data).expect("the reply"),
                    Event::Lost { .. } => panic!("a reliable channel lost messages"),
                };
            }
            // The last request's ack rides on the last reply; the last reply's ack comes
            // alone, when the client's next call (its flush) ends the hold.
            b.linger(Duration::from_millis(300), Duration::from_secs(5))
                .unwrap();
            b
        });
        for k in 0..n {
            a.send(&k.to_be_bytes()).expect("a request");
            match a.recv_timeout(T).expect("a reply") {
                Event::Message { data, .. } => assert_eq!(data, k.to_be_bytes()),
                Event::Lost { .. } => panic!("a reliable channel lost messages"),
            }
        }
        a.flush(T).expect("everything acknowledged");
        let b = server.join().unwrap();
        let (sa, sb) = (a.stats(), b.stats());
        // Each request carried the ack of the reply before it; each reply its request's.
        assert!(sa.endpoint.acks_carried >= n - 1, "{path:?}: {sa:?}");
        assert!(sb.endpoint.acks_carried >= n - 1, "{path:?}: {sb:?}");
        // Acks went alone only for the last reply and for the peer's loss probes (sent
        // when a reply is later than twice the round trip, as on a loaded machine), whose
        // duplicates are answered at once.
        let alone = |s: &ChannelStats| s.endpoint.acks_sent - s.endpoint.acks_carried;
        assert!(
            alone(&sa) <= sb.endpoint.probes + 1,
            "{path:?}: {sa:?} {sb:?}"
        );
        assert!(
            alone(&sb) <= sa.endpoint.probes + 1,
            "{path:?}: {sa:?} {sb:?}"
        );
        assert!(
            b.stats().endpoint.acks_received >= n,
            "every reply acknowledged"
        );
    }
}

/// A channel dropped while it holds the ack of the last message it handed up sends that
/// ack: the peer's flush completes without a retransmission.
#[test]
fn a_dropped_channel_sends_the_ack_it_held() {
    let hosts = Hosts::new(0);
    let opts = TransportOptions::new(Service::Reliable);
    let (mut a, mut b) = hosts.pair(DataPath::Direct, opts, opts);
    a.send(b"last words").unwrap();
    assert!(matches!(b.recv_timeout(T), Ok(Event::Message { .. })));
    drop(b);
    a.flush(T).expect("acknowledged by the dropped end");
    let s = a.stats().endpoint;
    assert_eq!((s.timeouts, s.timeout_resends), (0, 0), "{s:?}");
}

//! SDUs of every size byte-exact both ways between two hosts, in every notify mode, on both
//! paths, blocking, non-blocking and zero-copy.

mod common;

use std::time::{Duration, Instant};

use common::{SIZES, TwoHosts, pattern};
use natm::{DataPath, Error, Host, NotifyMode, Vc, VcOptions};
use natm_host::hostd::IdleWait;

const T: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Style {
    Blocking,
    NonBlocking,
    ZeroCopy,
}

fn transfer(from: &mut Vc, to: &mut Vc, sdu: &[u8], style: Style) {
    let mut buf = vec![0u8; 65536];
    match style {
        Style::Blocking => {
            from.send(sdu).unwrap();
            let n = to.recv_timeout(&mut buf, T).unwrap();
            assert_eq!(&buf[..n], sdu, "{} bytes blocking", sdu.len());
        }
        Style::NonBlocking => {
            let deadline = Instant::now() + T;
            loop {
                match from.try_send(sdu) {
                    Ok(()) => break,
                    Err(Error::WouldBlock) => assert!(Instant::now() < deadline),
                    Err(e) => panic!("try_send: {e}"),
                }
            }
            let n = loop {
                match to.try_recv(&mut buf) {
                    Ok(n) => break n,
                    Err(Error::WouldBlock) => {
                        assert!(Instant::now() < deadline, "nothing came");
                        std::thread::yield_now();
                    }
                    Err(e) => panic!("try_recv: {e}"),
                }
            };
            assert_eq!(&buf[..n], sdu, "{} bytes non-blocking", sdu.len());
        }
        Style::ZeroCopy => {
            let mut b = from.tx_buffer().unwrap();
            b[..sdu.len()].copy_from_slice(sdu);
            b.send(sdu.len()).unwrap();
            let got = to.recv_zero_copy().unwrap();
            assert_eq!(&*got, sdu, "{} bytes zero copy", sdu.len());
        }
    }
}

fn round_trips(wait: IdleWait) {
    let hosts = TwoHosts::new(wait);
    let ha = Host::connect_path(hosts.a.socket()).unwrap();
    let hb = Host::connect_path(hosts.b.socket()).unwrap();
    for path in [DataPath::Direct, DataPath::Daemon] {
        for notify in [
            NotifyMode::Poll,
            NotifyMode::Adaptive,
            NotifyMode::EventFd,
            NotifyMode::Signal,
        ] {
            let opts = || {
                VcOptions::new("0.100".parse().unwrap())
                    .qos("ubr".parse().unwrap())
                    .notify(notify)
                    .path(path)
                    .buffers(8)
            };
            let mut a = ha.open(opts()).unwrap();
            let mut b = hb.open(opts()).unwrap();
            assert_eq!(a.max_sdu(), 65535);
            let styles: &[Style] = match path {
                DataPath::Direct => &[Style::Blocking, Style::NonBlocking, Style::ZeroCopy],
                DataPath::Daemon => &[Style::Blocking, Style::NonBlocking],
                DataPath::Lane | DataPath::Auto => unreachable!("not among the paths above"),
            };
            for &style in styles {
                for (i, &len) in SIZES.iter().enumerate() {
                    let ab = pattern(len, i as u8);
                    let ba = pattern(len, 0x80 | i as u8);
                    transfer(&mut a, &mut b, &ab, style);
                    transfer(&mut b, &mut a, &ba, style);
                }
            }
            let sent: usize = SIZES.iter().sum::<usize>() * styles.len();
            let ca = a.counters().unwrap();
            assert_eq!(
                ca.sdus_sent,
                (SIZES.len() * styles.len()) as u64,
                "{path:?} {notify:?}"
            );
            assert_eq!(ca.bytes_sent, sent as u64);
            assert_eq!(ca.sdus_received, ca.sdus_sent);
            assert_eq!(ca.drops_no_buffer + ca.drops_crc + ca.drops_timeout, 0);
            // An SDU above the VC's maximum is refused before it leaves.
            assert!(matches!(
                a.send(&vec![0u8; 65536]),
                Err(Error::TooLong {
                    len: 65536,
                    max: 65535
                })
            ));
        }
    }
    // Every VC was closed on drop: nothing left in either daemon.
    assert!(ha.status().unwrap().channels.is_empty());
    assert!(hb.status().unwrap().channels.is_empty());
}

#[test]
fn every_size_both_ways_every_mode_both_paths_adaptive_daemons() {
    round_trips(IdleWait::Adaptive);
}

#[test]
fn every_size_both_ways_with_polling_daemons() {
    round_trips(IdleWait::Poll);
}

#[test]
fn a_burst_queues_in_the_channel_and_arrives_in_order() {
    let hosts = TwoHosts::new(IdleWait::Adaptive);
    let ha = Host::connect_path(hosts.a.socket()).unwrap();
    let hb = Host::connect_path(hosts.b.socket()).unwrap();
    let opts = || {
        VcOptions::new("0.200".parse().unwrap())
            .buffers(64)
            .buffer_size(2048)
    };
    let mut a = ha.open(opts()).unwrap();
    let mut b = hb.open(opts()).unwrap();
    let mut buf = [0u8; 2048];
    // More SDUs than a side has transmit buffers: send blocks until completions free some.
    for i in 0..20u32 {
        for k in 0..10u32 {
            a.send(&(i * 10 + k).to_le_bytes().repeat(100)).unwrap();
        }
        for k in 0..10u32 {
            let n = b.recv_timeout(&mut buf, T).unwrap();
            assert_eq!(&buf[..n], &(i * 10 + k).to_le_bytes().repeat(100)[..]);
        }
    }
    assert!(matches!(b.try_recv(&mut buf), Err(Error::WouldBlock)));
    assert!(matches!(
        b.recv_timeout(&mut buf, Duration::from_millis(20)),
        Err(Error::Timeout)
    ));
}

#[test]
fn on_a_rated_link_a_cbr_vc_is_shaped_to_its_pcr() {
    // OC-3c hosts: every adapter runs natm-traffic's scheduler.
    let hosts = TwoHosts::with_rate(
        IdleWait::Adaptive,
        natm_core::LineRate::Phy(natm_core::PhyRate::OC3),
    );
    let ha = Host::connect_path(hosts.a.socket()).unwrap();
    let hb = Host::connect_path(hosts.b.socket()).unwrap();
    let opts = || {
        VcOptions::new("0.100".parse().unwrap())
            .qos("cbr:pcr=20000".parse().unwrap())
            .buffers(8)
    };
    let mut a = ha.open(opts()).unwrap();
    let mut b = hb.open(opts()).unwrap();
    let mut buf = vec![0u8; 65536];
    // Warm up the path, then time 4 SDUs of 9,180 bytes: 192 cells each at 20,000 cells/s.
    a.send(b"warm").unwrap();
    b.recv_timeout(&mut buf, T).unwrap();
    let sdu = pattern(9180, 7);
    let start = Instant::now();
    for _ in 0..4 {
        a.send(&sdu).unwrap();
    }
    for _ in 0..4 {
        let n = b.recv_timeout(&mut buf, T).unwrap();
        assert_eq!(&buf[..n], &sdu[..]);
    }
    let took = start.elapsed();
    // 768 cells at PCR take 38.4 ms less one cell time; faster means not shaped.
    assert!(took >= Duration::from_millis(38), "took {took:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let s = ha.status().unwrap();
    assert_eq!(s.cac.cbr, 20_000);
    assert_eq!(s.cac.capacity, 353_207);
}

#[test]
fn the_daemon_path_holds_a_fast_sender_back_instead_of_dropping() {
    let hosts = TwoHosts::new(IdleWait::Adaptive);
    let ha = Host::connect_path(hosts.a.socket()).unwrap();
    let hb = Host::connect_path(hosts.b.socket()).unwrap();
    // Two transmit buffers in hostd for 300 SDUs sent back to back: hostd stops reading
    // the socket while none is free, so the sender waits in write(2).
    let opts = || {
        VcOptions::new("0.300".parse().unwrap())
            .path(DataPath::Daemon)
            .buffers(4)
            .buffer_size(2048)
    };
    let mut a = ha.open(opts()).unwrap();
    let mut b = hb.open(opts()).unwrap();
    let receiver = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        for i in 0..300u32 {
            let n = b.recv_timeout(&mut buf, T).unwrap();
            assert_eq!(&buf[..n], &i.to_be_bytes().repeat(375)[..], "SDU {i}");
        }
        b
    });
    for i in 0..300u32 {
        a.send(&i.to_be_bytes().repeat(375)).unwrap();
    }
    let _b = receiver.join().unwrap();
    let c = a.counters().unwrap();
    assert_eq!(c.sdus_sent, 300);
    assert_eq!(c.tx_failed, 0);
}

#[test]
fn a_waiting_daemon_path_receive_does_not_hold_up_the_hosts_other_vcs() {
    let hosts = TwoHosts::new(IdleWait::Adaptive);
    let ha = Host::connect_path(hosts.a.socket()).unwrap();
    let hb = Host::connect_path(hosts.b.socket()).unwrap();
    let daemon = |vc: &str| VcOptions::new(vc.parse().unwrap()).path(DataPath::Daemon);
    let mut waiting = ha.open(daemon("0.101")).unwrap();
    let mut other = ha.open(daemon("0.102")).unwrap();
    let mut peer = hb.open(daemon("0.102")).unwrap();
    let t = std::thread::spawn(move || {
        let mut buf = [0u8; 16];
        let r = waiting.recv_timeout(&mut buf, Duration::from_secs(2));
        assert!(matches!(r, Err(Error::Timeout)), "{r:?}");
    });
    std::thread::sleep(Duration::from_millis(50));
    let start = Instant::now();
    other.send(b"meanwhile").unwrap();
    let mut buf = [0u8; 16];
    let n = peer.recv_timeout(&mut buf, T).unwrap();
    assert_eq!(&buf[..n], b"meanwhile");
    assert_eq!(other.counters().unwrap().sdus_sent, 1);
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    t.join().unwrap();
}

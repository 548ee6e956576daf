//! What happens around the data: an application killed mid-transfer, cookies, revoked
//! channels, link loss and reconnection, OAM loopback, refusals.

mod common;

use std::time::{Duration, Instant};

use common::TwoHosts;
use natm::{DataPath, Error, Host, NotifyMode, OamScope, VcOptions};
use natm_host::hostd::IdleWait;

const T: Duration = Duration::from_secs(10);
#[test]
fn another_applications_cookie_is_refused_and_a_closed_channel_is_revoked() {
    let hosts = TwoHosts::new(IdleWait::Adaptive);
    let first = Host::connect_path(hosts.a.socket()).unwrap();
    let second = Host::connect_path(hosts.a.socket()).unwrap();
    let mut vc = first
        .open(VcOptions::new("0.100".parse().unwrap()))
        .unwrap();
    match second.close_cookie(vc.cookie()) {
        Err(Error::Refused { message: m, .. }) => {
            assert_eq!(m, "cookie belongs to another application")
        }
        r => panic!("a foreign cookie: {r:?}"),
    }
    match second.close_cookie("00000000000000000000000000000000") {
        Err(Error::Refused { message: m, .. }) => assert_eq!(m, "unknown cookie"),
        r => panic!("an unknown cookie: {r:?}"),
    }
    // Nothing happened to the channel: it still carries data.
    assert_eq!(first.status().unwrap().channels.len(), 1);
    let hb = Host::connect_path(hosts.b.socket()).unwrap();
    let mut peer = hb.open(VcOptions::new("0.100".parse().unwrap())).unwrap();
    vc.send(b"still here").unwrap();
    let mut buf = [0u8; 64];
    let n = peer.recv_timeout(&mut buf, T).unwrap();
    assert_eq!(&buf[..n], b"still here");
    // The owner closes it by cookie while still holding the mapping: a stale mapping.
    let cookie = vc.cookie().to_string();
    first.close_cookie(&cookie).unwrap();
    assert!(matches!(vc.send(b"x"), Err(Error::Revoked)));
    assert!(matches!(vc.try_recv(&mut buf), Err(Error::Revoked)));
    assert!(matches!(vc.recv(&mut buf), Err(Error::Revoked)));
    assert!(first.status().unwrap().channels.is_empty());
}

#[test]
fn a_blocked_receiver_sees_link_down_and_traffic_flows_after_reconnection() {
    let hosts = TwoHosts::new(IdleWait::Adaptive);
    let ha = Host::connect_path(hosts.a.socket()).unwrap();
    let hb = Host::connect_path(hosts.b.socket()).unwrap();
    let cases = [
        (DataPath::Direct, NotifyMode::Poll),
        (DataPath::Direct, NotifyMode::Adaptive),
        (DataPath::Direct, NotifyMode::EventFd),
        (DataPath::Direct, NotifyMode::Signal),
        (DataPath::Daemon, NotifyMode::EventFd),
    ];
    for (path, notify) in cases {
        let opts = || {
            VcOptions::new("0.100".parse().unwrap())
                .notify(notify)
                .path(path)
        };
        let mut a = ha.open(opts()).unwrap();
        let mut b = hb.open(opts()).unwrap();
        a.send(b"before").unwrap();
        let mut buf = [0u8; 64];
        let n = b.recv_timeout(&mut buf, T).unwrap();
        assert_eq!(&buf[..n], b"before");

        let cutter = std::thread::spawn({
            let cut = hosts.cut.clone();
            move || {
                std::thread::sleep(Duration::from_millis(100));
                cut.store(true, std::sync::atomic::Ordering::Relaxed);
                Instant::now()
            }
        });
        let r = b.recv(&mut buf);
        let woke = Instant::now();
        let cut_at = cutter.join().unwrap();
        assert!(
            matches!(r, Err(Error::LinkDown)),
            "{path:?} {notify:?}: {r:?}"
        );
        let after = woke.duration_since(cut_at);
        assert!(
            after < Duration::from_millis(200),
            "{path:?}: saw it after {after:?}"
        );
        // Host a notices at its next look at the link (it may have been asleep).
        let deadline = Instant::now() + T;
        while ha.status().unwrap().link.up {
            assert!(Instant::now() < deadline, "host a never saw the link go");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            matches!(a.send(b"during"), Err(Error::LinkDown)),
            "{path:?}"
        );

        hosts.reconnect();
        let deadline = Instant::now() + T;
        while !(ha.status().unwrap().link.up && hb.status().unwrap().link.up) {
            assert!(Instant::now() < deadline, "no reconnection");
            std::thread::sleep(Duration::from_millis(10));
        }
        // The VCs stayed open; data flows both ways again.
        let deadline = Instant::now() + T;
        loop {
            match a.send(b"after") {
                Ok(()) => break,
                Err(Error::LinkDown) => assert!(Instant::now() < deadline),
                Err(e) => panic!("{e}"),
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let n = b.recv_timeout(&mut buf, T).unwrap();
        assert_eq!(&buf[..n], b"after", "{path:?}");
        b.send(b"back").unwrap();
        let n = a.recv_timeout(&mut buf, T).unwrap();
        assert_eq!(&buf[..n], b"back", "{path:?}");
        assert!(ha.status().unwrap().link.reconnects >= 1);
    }
}

#[test]
fn end_to_end_ping_crosses_to_the_other_host_and_segment_ping_times_out() {
    let hosts = TwoHosts::new(IdleWait::Adaptive);
    let ha = Host::connect_path(hosts.a.socket()).unwrap();
    let hb = Host::connect_path(hosts.b.socket()).unwrap();
    for _ in 0..3 {
        let rtt = ha
            .ping("0.100".parse().unwrap(), OamScope::EndToEnd, T)
            .unwrap();
        assert!(rtt > Duration::ZERO && rtt < T, "{rtt:?}");
    }
    assert!(hb.status().unwrap().link.loopbacks_answered >= 3);
    // Host to host there is no switch to answer a segment loopback.
    assert!(matches!(
        ha.ping(
            "0.100".parse().unwrap(),
            OamScope::Segment,
            Duration::from_millis(50)
        ),
        Err(Error::Timeout)
    ));
    // The connection goes on serving after the timeout.
    assert!(ha.status().unwrap().link.up);
}

#[test]
fn refusals_name_the_reason_and_the_daemon_goes_on() {
    let hosts = TwoHosts::with_rate(
        IdleWait::Adaptive,
        natm_core::LineRate::Phy(natm_core::PhyRate::OC3),
    );
    let h = Host::connect_path(hosts.a.socket()).unwrap();
    let refused = |r: Result<natm::Vc, Error>| match r {
        Err(Error::Refused { message: m, .. }) => m,
        Err(e) => panic!("not a refusal: {e}"),
        Ok(_) => panic!("opened"),
    };
    let m = refused(h.open(VcOptions::new("0.5".parse().unwrap())));
    assert!(m.contains("VCI 5 is reserved"), "{m}");
    let m = refused(
        h.open(VcOptions::new("0.100".parse().unwrap()).qos("cbr:pcr=400000".parse().unwrap())),
    );
    assert!(m.contains("400000") && m.contains("353207"), "{m}");
    let _vc = h
        .open(VcOptions::new("0.100".parse().unwrap()).qos("cbr:pcr=1000".parse().unwrap()))
        .unwrap();
    let m = refused(h.open(VcOptions::new("0.100".parse().unwrap())));
    assert!(m.contains("VC 0.100 is in use"), "{m}");
    let m = refused(h.open(VcOptions::new("0.101".parse().unwrap()).buffer_size(100)));
    assert!(m.contains("multiple of 64"), "{m}");
    assert!(matches!(
        Host::connect_path(hosts.dir.0.join("nobody.sock")),
        Err(Error::NoDaemon { .. })
    ));
    let s = h.status().unwrap();
    assert_eq!(s.channels.len(), 1);
    assert_eq!(s.cac.cbr, 1000);
    assert_eq!(s.name, "a");
}

//! The API's switched VCs through the real hostd (in this process), whose link ends at a
//! fake switch in a thread: a network-side `natm_sig::Signalling` on VC 0.5 that answers
//! a SETUP with CONNECT on a VCI it picks and loops that VC's cells back, refuses one
//! address with cause 37 and an explanation, and offers calls to the host or releases them
//! when the test asks (natm-host's `tests/support/fake_switch.rs`, shared with natm-host's
//! protocol-level tests).
//! Through real switches these are the lab's tests.

use std::time::{Duration, Instant};

use natm::{CallOptions, ChannelOptions, DataPath, Error, Host, NotifyMode};
use natm_core::{Qos, VcId};
use natm_host::hostd::HostdThread;

#[path = "../../natm-host/tests/support/fake_switch.rs"]
mod fake_switch;

use fake_switch::*;

fn vc_id(vci: u16) -> VcId {
    VcId::uni(0, u32::from(vci)).unwrap()
}

/// hostd with an address, its link at the fake switch, signalling up.
struct Setup {
    dir: std::path::PathBuf,
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
    fn new(tag: &str) -> Setup {
        let dir = std::env::temp_dir().join(format!("natm-api-svc-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (hostd, switch) = start_hostd(&dir, Some(host_address()));
        let s = Setup {
            dir,
            hostd: Some(hostd),
            switch,
        };
        let host = s.host();
        let end = Instant::now() + Duration::from_secs(10);
        while !host.status().unwrap().signalling_up {
            assert!(Instant::now() < end, "signalling never came up");
            std::thread::sleep(Duration::from_millis(5));
        }
        s
    }

    fn host(&self) -> Host {
        Host::connect_path(self.hostd.as_ref().unwrap().socket()).unwrap()
    }
}

const WAIT: Duration = Duration::from_secs(10);

fn opts(path: DataPath) -> CallOptions {
    CallOptions::new()
        .qos("aal5,cbr:pcr=1000,max_sdu=1024".parse().unwrap())
        .path(path)
        .notify(NotifyMode::Poll)
        .buffers(4)
        .buffer_size(1024)
        .timeout(Duration::from_secs(5))
}

#[test]
fn a_call_carries_data_on_the_direct_and_daemon_paths_and_tells_its_vc() {
    let s = Setup::new("paths");
    let host = s.host();
    for (i, path) in [DataPath::Direct, DataPath::Daemon].into_iter().enumerate() {
        let mut vc = host.call(&far_address(), opts(path)).unwrap();
        let call = vc.call().expect("a switched VC").clone();
        assert_eq!(call.vc, vc_id(32768 + i as u16), "{path:?}");
        assert_eq!(
            (call.local, call.remote),
            (host_address(), Some(far_address()))
        );
        vc.send(b"through the switch and back").unwrap();
        let mut buf = [0u8; 1024];
        let n = vc.recv_timeout(&mut buf, WAIT).unwrap();
        assert_eq!(&buf[..n], b"through the switch and back", "{path:?}");
    }
}

#[test]
fn a_refusal_by_the_network_is_call_failed_with_the_explanation() {
    let s = Setup::new("refused");
    let e = s
        .host()
        .call(&refused_address(), opts(DataPath::Daemon))
        .err()
        .expect("refused");
    match &e {
        Error::CallFailed(c) => {
            assert_eq!(
                (c.value, c.diagnostic.as_str()),
                (37, "s1 p2: 1000 c/s free")
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().starts_with("call refused: cause 37 ("), "{e}");
}

#[test]
fn an_accepted_call_carries_data_and_its_release_is_the_next_operation_s_error() {
    let s = Setup::new("accept");
    let host = s.host();
    let listener = host.listen(Some(5)).unwrap();
    assert_eq!(listener.address().0[19], 5);
    for (vci, path) in [(40000, DataPath::Direct), (40001, DataPath::Daemon)] {
        let qos: Qos = "aal5,ubr:pcr=2000,max_sdu=1024".parse().unwrap();
        s.switch
            .cmds
            .send(Cmd::Offer {
                vci,
                selector: 5,
                qos,
            })
            .unwrap();
        let call = listener.next_call(Some(WAIT)).unwrap();
        assert_eq!(call.calling(), Some(&far_address()));
        let ch = ChannelOptions::default()
            .path(path)
            .notify(NotifyMode::Poll)
            .buffers(4)
            .buffer_size(1024);
        let mut vc = listener.accept_call(call, &ch).unwrap();
        assert_eq!(vc.call().unwrap().vc, vc_id(vci));
        vc.send(b"looped").unwrap();
        let mut buf = [0u8; 1024];
        let n = vc.recv_timeout(&mut buf, WAIT).unwrap();
        assert_eq!(&buf[..n], b"looped", "{path:?}");
        s.switch.cmds.send(Cmd::Release { vci }).unwrap();
        match vc.recv_timeout(&mut buf, WAIT) {
            Err(Error::Released(c)) => {
                assert_eq!(
                    (c.value, c.diagnostic.as_str()),
                    (16, "far end"),
                    "{path:?}"
                )
            }
            other => panic!("{path:?}: expected the release, got {other:?}"),
        }
        assert!(matches!(vc.send(b"x"), Err(Error::Released(_))), "{path:?}");
    }
}

#[test]
fn a_listener_rejects_with_a_cause_and_the_host_stays_usable() {
    let s = Setup::new("reject");
    let host = s.host();
    let listener = host.listen(None).unwrap();
    s.switch
        .cmds
        .send(Cmd::Offer {
            vci: 40100,
            selector: 0,
            qos: "ubr".parse().unwrap(),
        })
        .unwrap();
    let call = listener.next_call(Some(WAIT)).unwrap();
    listener.reject(call, 21).unwrap();
    // A call after it still works.
    let mut vc = host.call(&far_address(), opts(DataPath::Daemon)).unwrap();
    vc.send(b"after").unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(vc.recv_timeout(&mut buf, WAIT).unwrap(), 5);
}

#[test]
fn a_listener_that_accepts_by_itself_hands_over_active_calls_on_every_path() {
    let s = Setup::new("auto");
    let host = s.host();
    let ch = |path| {
        ChannelOptions::default()
            .path(path)
            .notify(NotifyMode::Poll)
            .buffers(4)
            .buffer_size(1024)
    };
    let qos: Qos = "aal5,ubr:pcr=2000,max_sdu=1024".parse().unwrap();
    for (vci, path) in [(40200, DataPath::Direct), (40201, DataPath::Daemon)] {
        let listener = host.listen_accepting(Some(6), ch(path)).unwrap();
        // Nothing to answer: offering calls is hostd's business here.
        let refused = listener.next_call(Some(Duration::ZERO)).unwrap_err();
        assert!(
            refused.to_string().contains("accepts every call itself"),
            "{refused}"
        );
        s.switch
            .cmds
            .send(Cmd::Offer {
                vci,
                selector: 6,
                qos,
            })
            .unwrap();
        let (mut vc, calling, got) = listener.accept_within(Some(WAIT)).unwrap();
        assert_eq!(calling, Some(far_address()), "{path:?}");
        assert_eq!(got.tx.pcr, qos.tx.pcr, "{path:?}");
        assert_eq!(vc.call().unwrap().vc, vc_id(vci), "{path:?}");
        vc.send(b"auto").unwrap();
        let mut buf = [0u8; 1024];
        let n = vc.recv_timeout(&mut buf, WAIT).unwrap();
        assert_eq!(&buf[..n], b"auto", "{path:?}");
        // The application's drop hands hostd the release without waiting for it; the
        // switch sees it.
        drop(vc);
        s.switch.wait(|seen| match seen {
            Seen::Released {
                vci: Some(v),
                cause,
            } if v == vci => Some(cause),
            _ => None,
        });
        // No call waits: the next one times out, and the listener stays usable.
        assert!(matches!(
            listener.accept_within(Some(Duration::from_millis(20))),
            Err(Error::Timeout)
        ));
        drop(listener);
    }
    // Signals' targets are per VC: such a listener is refused, saying why.
    let Err(e) = host.listen_accepting(None, ch(DataPath::Direct).notify(NotifyMode::Signal))
    else {
        panic!("a listener notifying by signal was registered");
    };
    assert!(e.to_string().contains("cannot notify by signal"), "{e}");
}

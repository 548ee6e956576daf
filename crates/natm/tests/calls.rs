//! The API's switched VCs against a fake hostd (tests/fake_hostd: test support only):
//! calls answered and refused, listeners accepting and rejecting, releases seen by the
//! VC's next operation. The same API through the real daemons is the lab's tests'.

mod fake_hostd;

use std::time::Duration;

use fake_hostd::{ADDRESS, FakeHostd, HELD, REFUSED, refusal};
use natm::{Aesa, CallOptions, CauseInfo, ChannelOptions, DataPath, Error, Host};

fn daemon() -> CallOptions {
    CallOptions::new().path(DataPath::Daemon)
}

fn addr(text: &str) -> Aesa {
    text.parse().unwrap()
}

const WAIT: Duration = Duration::from_secs(5);

#[test]
fn a_refused_call_is_a_typed_error_with_the_cause_and_its_explanation() {
    let fake = FakeHostd::start("refused");
    let host = Host::connect_path(fake.socket()).unwrap();
    let e = host.call(&addr(REFUSED), daemon()).err().expect("refused");
    match &e {
        Error::CallFailed(c) => assert_eq!(*c, refusal()),
        other => panic!("not a call failure: {other:?}"),
    }
    assert_eq!(
        e.to_string(),
        "call refused: cause 37 (user cell rate not available) at LPN: s2 p3: 1000 c/s free"
    );
    // The connection stays usable.
    assert_eq!(host.status().unwrap().address, Some(addr(ADDRESS)));
}

#[test]
fn a_call_opens_a_vc_that_carries_data_and_tells_its_call() {
    let fake = FakeHostd::start("echo");
    let host = Host::connect_path(fake.socket()).unwrap();
    let called = addr("47.0005.80ffe1000000f21a3599.0020481a3500.00");
    let qos = "cbr:pcr=1000".parse().unwrap();
    let mut vc = host.call(&called, daemon().qos(qos)).unwrap();
    let call = vc.call().expect("a switched VC has its call").clone();
    assert_eq!(call.vc.to_string(), "0.32768");
    assert_eq!(call.remote, Some(called));
    assert_eq!(call.local, addr(ADDRESS));
    assert_eq!(call.qos, qos);
    assert_eq!(vc.qos(), &qos, "a call's VC has the call's QoS");
    assert_eq!(call.setup_ns, 1_500_000);
    vc.send(b"over a switched VC").unwrap();
    let mut buf = [0u8; 64];
    let n = vc.recv_timeout(&mut buf, WAIT).unwrap();
    assert_eq!(&buf[..n], b"over a switched VC");
    drop(vc);
    // Dropping it closed it (the fake answers Close at once; a status is a round trip).
    host.status().unwrap();
    assert_eq!(fake.open_vcs(), 0);
}

#[test]
fn a_release_by_the_network_is_the_next_operation_s_error_naming_the_cause() {
    let fake = FakeHostd::start("released");
    let host = Host::connect_path(fake.socket()).unwrap();
    let mut vc = host
        .call(
            &addr("47.0005.80ffe1000000f21a3599.0020481a3500.00"),
            daemon(),
        )
        .unwrap();
    let cause = CauseInfo {
        value: 27,
        name: "destination out of order".into(),
        location: "LPN".into(),
        diagnostic: "s1 p2 down".into(),
    };
    fake.release(vc.handle(), cause.clone());
    let mut buf = [0u8; 16];
    match vc.recv_timeout(&mut buf, WAIT) {
        Err(Error::Released(c)) => assert_eq!(c, cause),
        other => panic!("expected the release, got {other:?}"),
    }
    match vc.send(b"x") {
        Err(e @ Error::Released(_)) => assert_eq!(
            e.to_string(),
            "call released: cause 27 (destination out of order) at LPN: s1 p2 down"
        ),
        other => panic!("expected the release, got {other:?}"),
    }
}

#[test]
fn a_listener_accepts_a_call_and_both_ends_exchange_data_then_the_far_end_sees_the_release() {
    let fake = FakeHostd::start("accept");
    let server = Host::connect_path(fake.socket()).unwrap();
    let listener = server.listen(Some(7)).unwrap();
    let mut to = *listener.address();
    to.0[19] = 7;
    assert_eq!(*listener.address(), to);
    let accepting = std::thread::spawn(move || {
        let opts = ChannelOptions::default().path(DataPath::Daemon);
        let (mut vc, calling, qos) = listener.accept_with(&opts).unwrap();
        assert_eq!(calling, Some(addr(ADDRESS)));
        assert_eq!(qos, "ubr:pcr=5000".parse().unwrap());
        let _ = vc.call().expect("an accepted call has its call");
        let mut buf = [0u8; 64];
        let n = vc.recv_timeout(&mut buf, WAIT).unwrap();
        vc.send(&buf[..n]).unwrap();
        // The caller hangs up: the next operation names the cause.
        let e = vc.recv_timeout(&mut buf, WAIT).unwrap_err();
        (e, listener)
    });
    let client = Host::connect_path(fake.socket()).unwrap();
    // The listener is on a connection of its own, so its server `Host` stays usable.
    assert!(server.status().is_ok());
    let opts = daemon().qos("ubr:pcr=5000".parse().unwrap());
    let mut vc = client.call(&to, opts).unwrap();
    vc.send(b"ping").unwrap();
    let mut buf = [0u8; 64];
    let n = vc.recv_timeout(&mut buf, WAIT).unwrap();
    assert_eq!(&buf[..n], b"ping");
    drop(vc);
    let (e, _listener) = accepting.join().unwrap();
    match e {
        Error::Released(c) => assert_eq!(c.value, 16),
        other => panic!("expected the release, got {other:?}"),
    }
}

#[test]
fn a_listener_sees_an_incoming_call_and_rejects_it_with_a_cause() {
    let fake = FakeHostd::start("reject");
    let server = Host::connect_path(fake.socket()).unwrap();
    let listener = server.listen(None).unwrap();
    let rejecting = std::thread::spawn(move || {
        let call = listener.next_call(Some(WAIT)).unwrap();
        assert_eq!(call.calling(), Some(&addr(ADDRESS)));
        assert!(matches!(
            listener.reject(call.clone(), 0),
            Err(Error::Refused { .. })
        ));
        listener.reject(call, 21).unwrap();
        // No second call comes.
        assert!(matches!(
            listener.next_call(Some(Duration::from_millis(50))),
            Err(Error::Timeout)
        ));
    });
    let client = Host::connect_path(fake.socket()).unwrap();
    let e = client
        .call(&addr(ADDRESS), daemon())
        .err()
        .expect("rejected");
    rejecting.join().unwrap();
    match e {
        Error::CallFailed(c) => {
            assert_eq!((c.value, c.location.as_str()), (21, "U"));
            assert_eq!(c.to_string(), "cause 21 (call rejected) at U");
        }
        other => panic!("expected the rejection, got {other:?}"),
    }
}

#[test]
fn accept_takes_the_channel_options_and_refusals_of_them_are_hostd_s() {
    let fake = FakeHostd::start("opts");
    let server = Host::connect_path(fake.socket()).unwrap();
    let listener = server.listen(None).unwrap();
    let client = Host::connect_path(fake.socket()).unwrap();
    let calling = std::thread::spawn(move || client.call(&addr(ADDRESS), daemon()));
    let call = listener.next_call(Some(WAIT)).unwrap();
    let direct = ChannelOptions::default().path(DataPath::Direct);
    // The fake refuses the direct path; the call stays offered, so it can still be taken.
    assert!(matches!(
        listener.accept_call(call.clone(), &direct),
        Err(Error::Refused { .. })
    ));
    let _vc = listener
        .accept_call(
            call,
            &ChannelOptions::default().path(DataPath::Daemon).buffers(8),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let vc = calling.join().unwrap().unwrap();
    assert_eq!(vc.call().unwrap().vc.to_string(), "0.32770");
}

#[test]
fn an_answer_that_comes_after_the_call_gave_up_is_skipped_and_its_vc_closed() {
    let fake = FakeHostd::start("late");
    let host = Host::connect_path(fake.socket()).unwrap();
    // hostd should have answered within the call's timeout; the library gives up a margin
    // after it.
    let opts = daemon().timeout(Duration::from_millis(1));
    assert!(matches!(host.call(&addr(HELD), opts), Err(Error::Timeout)));
    fake.answer_held();
    // The late `Opened` is not taken for the status's answer, and its VC is closed again.
    assert_eq!(host.status().unwrap().address, Some(addr(ADDRESS)));
    host.status().unwrap();
    assert_eq!(fake.open_vcs(), 0);
}

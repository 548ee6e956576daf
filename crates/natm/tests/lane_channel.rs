//! Transport channels over an in-process lane (`natm::internal::lane_pair`, what a splice
//! gives two applications): request and reply, where a blocked call spins for the reply
//! it expects (`Channel::wait`'s use of `Endpoint::ack_due`), and a wait for a reply that
//! never comes, which must not spin past its deadline.

use std::thread;
use std::time::{Duration, Instant};

use natm::internal::lane_pair;
use natm::transport::{Channel, Event, Service, TransportOptions};
use natm::{Error, NotifyMode};

const EXCHANGES: u64 = 2_000;

fn channels() -> (Channel, Channel) {
    let opts = TransportOptions::new(Service::Reliable);
    let (a, b) =
        lane_pair(opts.buffers(), opts.buffer_size(), NotifyMode::Adaptive).expect("a lane pair");
    // The hello needs both ends at once.
    let far = thread::spawn(move || Channel::over(b, opts).expect("the far channel"));
    let near = Channel::over(a, opts).expect("the near channel");
    (near, far.join().expect("the far end's thread"))
}

#[test]
fn requests_and_replies_over_a_lane_go_one_frame_each_way() {
    let (mut client, mut server) = channels();
    let srv = thread::spawn(move || {
        for _ in 0..EXCHANGES {
            match server.recv().expect("a request") {
                Event::Message { data, .. } => server.send(&data).expect("a reply"),
                e => panic!("a reliable channel gave {e:?}"),
            };
        }
        server
            .linger(Duration::from_millis(20), Duration::from_secs(1))
            .expect("lingering");
        server.stats()
    });
    for i in 0..EXCHANGES {
        client.send(&i.to_be_bytes()).expect("a request");
        match client.recv().expect("a reply") {
            Event::Message { data, .. } => assert_eq!(data, i.to_be_bytes(), "reply {i}"),
            e => panic!("a reliable channel gave {e:?}"),
        }
    }
    client.flush(Duration::from_secs(5)).expect("flushing");
    let c = client.stats();
    let s = srv.join().expect("the server's thread");
    assert_eq!(c.endpoint.msgs_delivered, EXCHANGES);
    assert_eq!(s.endpoint.msgs_delivered, EXCHANGES);
    // Every reply carried its request's ack, and every request the last reply's.
    assert!(s.endpoint.acks_carried >= EXCHANGES - 1, "{s:?}");
    assert!(c.endpoint.acks_carried >= EXCHANGES - 1, "{c:?}");
}

#[test]
fn a_reply_that_never_comes_ends_the_wait_at_its_deadline() {
    let (mut client, mut server) = channels();
    // A round trip measured, so that the client expects its reply soon and spins for it.
    client.send(b"ping").expect("a request");
    assert!(matches!(server.recv(), Ok(Event::Message { .. })));
    server.send(b"pong").expect("a reply");
    assert!(matches!(client.recv(), Ok(Event::Message { .. })));
    assert!(client.stats().endpoint.srtt.is_some());
    // The server takes the next request's frame but never answers it.
    client.send(b"ping").expect("a request");
    let t = Instant::now();
    assert!(matches!(
        client.recv_timeout(Duration::from_millis(30)),
        Err(Error::Timeout)
    ));
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_millis(30),
        "returned early: {waited:?}"
    );
    // Liveness, not speed: the spin for the expected reply ends.
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    drop(server);
}

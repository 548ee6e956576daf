//! The work of an 8-byte request/reply round trip with no waiting: both ends of an
//! in-process lane (`natm::internal::lane_pair`) driven by one thread, so that each call
//! finds its SDU already there. What is left is the processing on the round trip's path
//! (both ends' sends and receives, segmentation, reassembly, the transport's work), not
//! the time cells take to be seen by a spinning peer: `lane_round_trip` measures that.
//!
//! * `one_thread_round_trip/raw`: AAL5 SDUs on the two [`natm::Vc`]s.
//! * `one_thread_round_trip/channel`: messages on two reliable
//!   [`natm::transport::Channel`]s over them (a reply carries its request's ack).
//!
//! Run: `cargo bench -p natm --bench one_thread_round_trip`.

use std::hint::black_box;
use std::thread;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use natm::NotifyMode;
use natm::internal::lane_pair;
use natm::transport::{Channel, Event, Service, TransportOptions};

fn bench(c: &mut Criterion) {
    let opts = TransportOptions::new(Service::Reliable);
    let (count, size) = (opts.buffers(), opts.buffer_size());
    let mut g = c.benchmark_group("one_thread_round_trip");
    g.measurement_time(Duration::from_secs(3));

    let (mut a, mut b) = lane_pair(count, size, NotifyMode::Adaptive).expect("a lane pair");
    let mut buf = [0u8; 8];
    g.bench_function("raw", |t| {
        t.iter(|| {
            a.send(black_box(b"request!")).expect("a request");
            let n = b.recv(&mut buf).expect("the request");
            b.send(&buf[..n]).expect("a reply");
            black_box(a.recv(&mut buf).expect("the reply"));
        })
    });
    drop((a, b));

    let (a, b) = lane_pair(count, size, NotifyMode::Adaptive).expect("a lane pair");
    // The hello needs both ends at once.
    let far = thread::spawn(move || Channel::over(b, opts).expect("the far channel"));
    let mut a = Channel::over(a, opts).expect("the near channel");
    let mut b = far.join().expect("the far end's thread");
    let message = |e: Event| match e {
        Event::Message { data, .. } => data,
        e => panic!("a reliable channel gave {e:?}"),
    };
    g.bench_function("channel", |t| {
        t.iter(|| {
            a.send(black_box(b"request!")).expect("a request");
            let request = message(b.recv().expect("the request"));
            b.send(&request).expect("a reply");
            black_box(message(a.recv().expect("the reply")));
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

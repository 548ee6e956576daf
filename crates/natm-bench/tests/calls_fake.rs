//! `natm perf calls` and `natm perf rr --svc` engines over the natm crate's fake hostd (test
//! support only: hostd's protocol on a Unix socket, no network), so their call handling is
//! tested before the daemons signal. The figures mean nothing here; the shapes do.

#[path = "../../natm/tests/fake_hostd/mod.rs"]
mod fake_hostd;

use std::time::Duration;

use natm_bench::calls;
use natm_bench::rr;
use natm_bench::transport::{DataPath, Kind, NatmTarget, NotifyMode, Placement};

#[test]
fn perf_calls_places_every_call_through_the_listeners_and_reports_the_rate() {
    let fake = fake_hostd::FakeHostd::start("bench-calls");
    let socket = fake.socket().display().to_string();
    let plan = calls::Plan {
        client: socket.clone(),
        server: socket,
        names: ("h1".into(), "h2".into()),
        switches: Some(1),
        qos: "ubr".parse().unwrap(),
        path: DataPath::Daemon,
        depth: 4,
        count: 200,
        warmup: 20,
        baseline: true,
        timeout: Duration::from_secs(4),
    };
    let r = calls::run(&plan).unwrap();
    assert_eq!((r.calls, r.failures), (200, 0), "{:?}", r.first_failure);
    assert!(r.calls_per_s > 0.0);
    // The fake's own set-up figure, as hostd reports it in the call.
    assert_eq!(r.hostd_setup_ns.p50, 2_000_000);
    assert!(r.setup_ns.p50 > 0 && r.setup_ns.p99 >= r.setup_ns.p50);
    assert!(r.called.ends_with(".01"), "{}", r.called);
    assert!(r.baseline.as_ref().is_some_and(|b| b.count == 200));
    let j = serde_json::to_value(&r).unwrap();
    assert!(j["calls_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn perf_calls_where_no_call_is_set_up_fails_with_the_first_refusal() {
    let fake = fake_hostd::FakeHostd::start("bench-refused");
    let socket = fake.socket().display().to_string();
    let plan = calls::Plan {
        client: socket.clone(),
        server: socket,
        names: ("h1".into(), "h2".into()),
        switches: None,
        qos: "ubr".parse().unwrap(),
        // The fake refuses every path but the daemon's.
        path: DataPath::Direct,
        depth: 2,
        count: 10,
        warmup: 0,
        baseline: false,
        timeout: Duration::from_secs(4),
    };
    let e = calls::run(&plan).unwrap_err().to_string();
    assert!(e.starts_with("no call was set up"), "{e}");
}

#[test]
fn perf_rr_svc_runs_over_a_call_to_the_server_host_s_listener() {
    let fake = fake_hostd::FakeHostd::start("bench-rr-svc");
    let socket = fake.socket().display().to_string();
    let plan = rr::Plan {
        size: 32,
        response_size: 32,
        budget: rr::Budget::Count(200),
        depth: 1,
        warmup: 10,
        placement: Placement {
            client: None,
            server: None,
        },
        kinds: vec![Kind::Natm],
        skipped: Vec::new(),
        natm: Some(NatmTarget {
            vc: "0.100".parse().unwrap(),
            qos: "ubr".parse().unwrap(),
            mode: NotifyMode::Adaptive,
            path: DataPath::Daemon,
            client_host: socket.clone(),
            server_host: socket,
            svc: true,
        }),
    };
    let r = rr::run(&plan).unwrap();
    let k = &r.results[0];
    assert!(k.name.starts_with("natm SVC"), "{}", k.name);
    assert_eq!(k.latency.as_ref().map(|l| l.count), Some(200));
}

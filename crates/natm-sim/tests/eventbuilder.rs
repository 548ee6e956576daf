//! The event builder on the simulator: a small run builds every event no faster than the
//! links allow, reports occupancies that add up, is the same for the same seed, and bad
//! QoS is refused by the switch's CAC with the constraint named.

use natm_core::Duration;
use natm_sim::eventbuilder::{Arrivals, EbConfig, EbError, Policy, run};

/// OC-3c: 149.76 Mbit/s of cells, 53 bytes each.
const OC3_CELL_NS: f64 = 53.0 * 8.0 / 149.76e6 * 1e9;

fn small() -> EbConfig {
    let mut c = EbConfig::new(4, 4, 1000.0, 256);
    c.duration = Duration::from_millis(20);
    c
}

#[test]
fn a_small_run_builds_every_event_above_the_physical_floor() {
    let c = small();
    let r = run(&c).unwrap();
    let e = &r.events;
    assert_eq!(e.assigned, 20);
    assert_eq!((e.built, e.lost, e.pending), (20, 0, 0));
    assert_eq!(e.built_per_destination_min_max, (5, 5));
    assert_eq!(e.achieved_rate_hz, 1000.0);
    assert_eq!((e.malformed, e.late_fragments, e.send_failures), (0, 0, 0));

    // All four 256-byte fragments (6 cells each) cross the destination's one downlink, after
    // the assignment came down it and the requests went up its uplink.
    let cells = 4.0 * 6.0 + 2.0;
    let floor_us = cells * OC3_CELL_NS / 1000.0;
    let l = r.latency.as_ref().unwrap();
    assert!(
        l.min_us > floor_us,
        "min {} µs ≤ floor {floor_us} µs",
        l.min_us
    );
    assert!(l.min_us <= l.p50_us && l.p50_us <= l.p99_us && l.p99_us <= l.max_us);
    // An idle network: nothing waits long.
    assert!(l.max_us < 1000.0, "max {} µs", l.max_us);
    assert_eq!(l.histogram.iter().map(|b| b.events).sum::<u64>(), 20);

    // A destination's downlink carries 250 events/s × (24 + 1) cells: 1.8 % of OC-3c;
    // a source's downlink 1000 request cells/s, 0.3 %.
    let links = r.links.as_ref().unwrap();
    assert!(
        links.worst_link.starts_with("s1→dst"),
        "{}",
        links.worst_link
    );
    let want = 250.0 * 25.0 / 353_207.5;
    assert!(
        (links.worst_link_mean - want).abs() < 0.2 * want,
        "{} vs {want}",
        links.worst_link_mean
    );
    assert!(links.mean > 0.0 && links.mean < links.worst_link_mean);
    assert!(links.max <= 1.01, "{}", links.max);
    assert!(r.drops.is_empty(), "{:?}", r.drops);
    assert_eq!(r.cells_dropped, 0);
    // Twice the 100 ms timeout of draining, sampled every 1 ms, and the last sample.
    assert!((r.sim_seconds - 0.221).abs() < 1e-9, "{}", r.sim_seconds);
    assert_eq!(r.queues.samples.len(), 221);
    assert!(r.cell_events > 0);
}

#[test]
fn one_seed_one_report_and_another_seed_another() {
    let mut c = small();
    c.arrivals = Arrivals::Poisson { seed: 5 };
    c.policy = Policy::LeastLoaded;
    let a = run(&c).unwrap();
    let b = run(&c).unwrap();
    assert_eq!(a.deterministic(), b.deterministic());
    c.arrivals = Arrivals::Poisson { seed: 6 };
    let other = run(&c).unwrap();
    assert_ne!(a.deterministic(), other.deterministic());
}

#[test]
fn a_cbr_contract_the_destination_port_cannot_carry_is_refused_by_name() {
    let mut c = small();
    // Fragments at 100,000 cells/s from each of 4 sources into one OC-3c port.
    c.qos = "cbr:tx:pcr=100000,rx:pcr=1000".parse().unwrap();
    let err = run(&c).unwrap_err();
    let EbError::Network(msg) = &err else {
        panic!("{err}")
    };
    assert!(msg.contains("src3 ↔ dst0"), "{msg}");
    assert!(msg.contains("CBR") && msg.contains("refused"), "{msg}");
}

#[test]
fn an_overloaded_destination_loses_events_and_says_where_cells_went() {
    // 8 sources × 4 KiB into 2 destinations at 2 kHz: 1000 events/s × 8 × 86 cells per
    // destination, about twice OC-3c.
    let mut c = EbConfig::new(8, 2, 2000.0, 4096);
    c.duration = Duration::from_millis(20);
    c.timeout = Duration::from_millis(10);
    let r = run(&c).unwrap();
    let e = &r.events;
    assert_eq!(e.assigned, 40);
    assert_eq!(e.built + e.lost + e.pending, 40);
    assert!(e.lost > 0, "{e:?}");
    assert!(r.cells_dropped > 0);
    assert!(
        r.drops.iter().any(|d| d.place.contains("dst")),
        "{:?}",
        r.drops
    );
    let links = r.links.unwrap();
    assert!(links.worst_link_max > 0.9, "{links:?}");
    assert!(links.worst_link.starts_with("s1→dst"), "{links:?}");
    // The destinations' output queues fill up to the UBR limit.
    assert!(
        r.queues.worst_port.starts_with("dst"),
        "{:?}",
        r.queues.worst_port
    );
    assert!(
        r.queues.worst_port_max_cells > 1000,
        "{}",
        r.queues.worst_port_max_cells
    );
}

//! The simulator's speed, in simulated cell events per second of wall-clock time on one
//! core (a cell event: one cell handled by one component, see `natm_sim::world`).
//! Measurement only, not a pass/fail gate in debug builds:
//! `cargo test --release -p natm-sim --test perf -- --ignored --nocapture`.

use natm_sim::scenario::FaultMode;
use natm_sim::scenario::run_unchecked;
use natm_sim::{Scenario, run};

fn measure(label: &str, sc: &Scenario) -> f64 {
    let r = run(sc, 1, None).unwrap_or_else(|v| panic!("{v}"));
    let bare = run_unchecked(sc, 1).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(bare.stats.cell_events, r.stats.cell_events);
    eprintln!(
        "{label}, per-cell checks off: {:.2} M cell events/s",
        bare.cell_events_per_sec() / 1e6
    );
    let rate = r.cell_events_per_sec();
    eprintln!(
        "{label}, every check on: {} cell events, {} events in {:.3} s wall: {:.2} M cell events/s",
        r.stats.cell_events,
        r.stats.events,
        r.wall.as_secs_f64(),
        rate / 1e6
    );
    rate
}

#[test]
#[ignore = "a measurement: run with --release --ignored"]
fn cell_events_per_second_on_one_core() {
    // The default network loaded near line rate with large SDUs, no faults, every
    // invariant checked.
    let text = natm_sim::DEFAULT_SCENARIO
        .replace("duration = \"100ms\"", "duration = \"500ms\"")
        .replace("ubr_load = 0.5", "ubr_load = 0.85")
        .replace("sdu = [20, 3000]", "sdu = [2000, 9000]");
    assert!(
        text.contains("500ms") && text.contains("0.85"),
        "the default scenario changed"
    );
    let mut sc = Scenario::parse(&text, None).unwrap();
    sc.sim.faults = FaultMode::None;
    let checked = measure("OC-3c", &sc);
    // The same on unlimited links: no line-rate pacing, cells move in batches.
    let fast = Scenario::parse(
        &text.replace("rate = \"oc3\"", "rate = \"unlimited\""),
        None,
    )
    .unwrap();
    let mut fast = fast;
    fast.sim.faults = FaultMode::None;
    measure("unlimited links", &fast);
    let two = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/sim/two-switches.toml"
    ))
    .unwrap();
    let mut two = Scenario::parse(
        &two.replace("duration = \"40ms\"", "duration = \"500ms\"")
            .replace("ubr_load = 0.3", "ubr_load = 0.85"),
        None,
    )
    .unwrap();
    two.sim.faults = FaultMode::None;
    measure("two switches, OC-3c", &two);
    assert!(checked > 0.0);
}

//! Whole runs of scenarios: a clean run, determinism, the swarm.

use natm_sim::scenario::FaultMode;
use natm_sim::{Scenario, run, swarm};

#[test]
fn a_clean_run_delivers_every_sdu_sent_in_order() {
    let mut sc = Scenario::default_scenario();
    sc.sim.faults = FaultMode::None;
    let r = run(&sc, 1, None).unwrap_or_else(|v| panic!("{v}"));
    eprintln!("{r:?} {:.0} cell events/s", r.cell_events_per_sec());
    assert!(r.stats.sdus_sent > 100);
    assert_eq!(r.stats.sdus_delivered, r.stats.sdus_sent);
}

#[test]
fn swarm_seeds() {
    let sc = Scenario::default_scenario();
    let rep = swarm(&sc, 0, 200, 0, false);
    for o in &rep.outcomes {
        match &o.result {
            Ok(r) => eprintln!(
                "seed {} ok: {} faults, {} cell events, {:?}",
                o.seed, r.faults, r.stats.cell_events, r.wall
            ),
            Err(_) => eprintln!("{}", o.failure_text(&sc).unwrap()),
        }
    }
    eprintln!("wall {:?}", rep.wall);
    assert_eq!(rep.failures().count(), 0);
}

//! The meta-test: each planted bug of the cores is found by the default scenario's swarm
//! within 200 seeds, by the invariant it breaks. One test function, because the mutant
//! flags are process-global.
#![cfg(feature = "mutants")]

use natm_sim::mutants::{self, ALL};
use natm_sim::{Scenario, swarm};

#[test]
fn every_mutant_is_caught_by_the_swarm_within_200_seeds() {
    let sc = Scenario::default_scenario();
    for m in ALL {
        mutants::set(m, true);
        let rep = swarm(&sc, 0, 200, 0, true);
        mutants::set(m, false);
        let want = m.caught_by();
        let caught: Vec<String> = rep
            .outcomes
            .iter()
            .filter(|o| o.result.as_ref().is_err_and(|v| v.invariant == want))
            .filter_map(|o| o.failure_text(&sc))
            .collect();
        let other: Vec<String> = rep.failures().filter_map(|o| o.failure_text(&sc)).collect();
        eprintln!(
            "{m:?}: {} seeds run, {:?}; first: {:?}",
            rep.outcomes.len(),
            rep.wall,
            other.first()
        );
        assert!(
            caught
                .iter()
                .all(|t| t.contains("replay: natm sim run --seed")),
            "{caught:?}"
        );
        assert!(
            !caught.is_empty(),
            "{m:?} was not caught by \"{want}\" in 200 seeds; failures: {other:?}"
        );
    }
    // All off again: the scenario passes.
    let rep = swarm(&sc, 0, 8, 0, false);
    assert_eq!(rep.failures().count(), 0);
}

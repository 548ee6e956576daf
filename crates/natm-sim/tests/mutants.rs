//! The meta-test: each planted bug of the cores is found within 200 seeds by the swarm of
//! its campaign (the default scenario's for the cell network's cores, the signalling
//! campaign's for SSCOP and call control, the calls scenario's for switch call control, the
//! transport campaign's for natm-transport),
//! by the invariant it breaks. One test function,
//! because the mutant flags are process-global.
#![cfg(feature = "mutants")]

use natm_sim::mutants::{self, ALL, Campaign};
use natm_sim::{Scenario, SeedOutcome, SwarmReport, signalling, swarm, transport};

/// (failures caught by `want`, every failure) of `m`'s campaign over seeds 0..200.
fn hunt(sc: &Scenario, m: mutants::Mutant, want: &str) -> (Vec<String>, Vec<String>) {
    match m.campaign() {
        Campaign::Cells => sort_out(m, &swarm(sc, 0, 200, 0, true), want, |o| o.failure_text(sc)),
        Campaign::Calls => {
            let calls = Scenario::calls_scenario();
            sort_out(m, &swarm(&calls, 0, 200, 0, true), want, |o| {
                o.failure_text(&calls)
            })
        }
        Campaign::Signalling => sort_out(m, &signalling::swarm(0, 200, 0, true), want, |o| {
            o.failure_text()
        }),
        Campaign::Transport => sort_out(m, &transport::swarm(0, 200, 0, true), want, |o| {
            o.failure_text()
        }),
    }
}

/// A swarm's failures by `want`, and all of them, as `text` writes each.
fn sort_out<R>(
    m: mutants::Mutant,
    rep: &SwarmReport<R>,
    want: &str,
    text: impl Fn(&SeedOutcome<R>) -> Option<String>,
) -> (Vec<String>, Vec<String>) {
    eprintln!("{m:?}: {} seeds run, {:?}", rep.outcomes.len(), rep.wall);
    let caught = rep
        .outcomes
        .iter()
        .filter(|o| o.result.as_ref().is_err_and(|v| v.invariant == want))
        .filter_map(&text)
        .collect();
    (caught, rep.failures().filter_map(&text).collect())
}

#[test]
fn every_mutant_is_caught_by_its_swarm_within_200_seeds() {
    let sc = Scenario::default_scenario();
    for m in ALL {
        mutants::set(m, true);
        let want = m.caught_by();
        let (caught, other) = hunt(&sc, m, want);
        mutants::set(m, false);
        eprintln!("{m:?}: first failure: {:?}", other.first());
        let replay = match m.campaign() {
            Campaign::Cells => "replay: natm sim run --seed",
            Campaign::Calls => "replay: natm sim run --calls --seed",
            Campaign::Signalling => "replay: natm sim run --signalling --seed",
            Campaign::Transport => "replay: natm sim run --transport --seed",
        };
        assert!(caught.iter().all(|t| t.contains(replay)), "{caught:?}");
        assert!(
            !caught.is_empty(),
            "{m:?} was not caught by \"{want}\" in 200 seeds; failures: {other:?}"
        );
    }
    // All off again: both campaigns pass.
    let rep = swarm(&sc, 0, 8, 0, false);
    assert_eq!(rep.failures().count(), 0);
    let rep = signalling::swarm(0, 8, 0, false);
    assert_eq!(rep.failures().count(), 0);
    let rep = swarm(&Scenario::calls_scenario(), 0, 8, 0, false);
    assert_eq!(rep.failures().count(), 0);
    let rep = transport::swarm(0, 8, 0, false);
    assert_eq!(rep.failures().count(), 0);
}

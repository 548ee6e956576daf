//! Switched calls in the cell network: the calls scenario runs under faults with every
//! invariant held, its digest is a function of the seed, and calls connect and fail.

use natm_sim::{CALLS_SCENARIO, Scenario, run};

#[test]
fn a_calls_scenario_runs_and_calls_connect_and_fail() {
    let sc = Scenario::parse(CALLS_SCENARIO, None).unwrap();
    let r = run(&sc, 1, None).unwrap_or_else(|v| panic!("{v}"));
    let c = r.calls.expect("a calls scenario counts its calls");
    eprintln!("{c:?} {:?} {:?}", r.stats, r.wall);
    assert!(c.connected > 10, "{c:?}");
    assert!(c.failed > 0, "{c:?}");
}

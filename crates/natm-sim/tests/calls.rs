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

#[test]
fn every_invariant_holds_over_a_swarm_of_calls_seeds() {
    let sc = Scenario::parse(CALLS_SCENARIO, None).unwrap();
    let rep = natm_sim::swarm(&sc, 0, 200, 0, false);
    let fails: Vec<String> = rep.failures().filter_map(|o| o.failure_text(&sc)).collect();
    eprintln!("{} seeds in {:?}", rep.outcomes.len(), rep.wall);
    assert!(fails.is_empty(), "{} failed: {fails:#?}", fails.len());
}

#[test]
#[ignore]
fn trace_one() {
    let seed: u64 = std::env::var("SEED").unwrap().parse().unwrap();
    let sc = Scenario::parse(CALLS_SCENARIO, None).unwrap();
    let f = std::fs::File::create("/tmp/simt/trace.txt").unwrap();
    let r = run(&sc, seed, Some(Box::new(std::io::BufWriter::new(f))));
    eprintln!("{:?}", r.map(|r| r.calls).map_err(|v| v.to_string()));
}

//! Switched calls in the cell network: the calls scenario runs under faults with every
//! invariant held, its digest is a function of the seed, and calls connect and fail.

use natm_sim::{CALLS_SCENARIO, Scenario, run};

#[test]
fn a_calls_scenario_runs_and_calls_connect_and_fail() {
    let sc = Scenario::parse(CALLS_SCENARIO, None).unwrap();
    assert!(sc.sim.calls);
    let r = run(&sc, 1, None).unwrap_or_else(|v| panic!("{v}"));
    let c = r.calls.expect("a calls scenario counts its calls");
    eprintln!("{c:?} {:?} {:?}", r.stats, r.wall);
    assert!(c.connected > 10, "{c:?}");
    assert!(c.failed > 0, "{c:?}");
    assert!(
        c.no_cell_rate > 0,
        "the big CBR is refused on a trunk: {c:?}"
    );
}

#[test]
fn one_seed_gives_one_run_with_calls() {
    let sc = Scenario::calls_scenario();
    let a = run(&sc, 5, None).unwrap_or_else(|v| panic!("{v}"));
    let b = run(&sc, 5, None).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!((a.digest, a.stats, a.calls), (b.digest, b.stats, b.calls));
    let c = run(&sc, 6, None).unwrap_or_else(|v| panic!("{v}"));
    assert_ne!(a.digest, c.digest);
    assert_eq!(sc.replay(5), "natm sim run --calls --seed 5");
}

#[test]
fn every_invariant_holds_over_a_swarm_of_calls_seeds() {
    let sc = Scenario::parse(CALLS_SCENARIO, None).unwrap();
    let rep = natm_sim::swarm(&sc, 0, 200, 0, false);
    let fails: Vec<String> = rep.failures().filter_map(|o| o.failure_text(&sc)).collect();
    eprintln!("{} seeds in {:?}", rep.outcomes.len(), rep.wall);
    assert!(fails.is_empty(), "{} failed: {fails:#?}", fails.len());
}

/// One seed's trace, for a failure's study (`SEED=5 TRACE=/tmp/t.txt cargo test
/// --release -p natm-sim --test calls trace_one -- --ignored --nocapture`).
#[test]
#[ignore]
fn trace_one() {
    let seed: u64 = std::env::var("SEED").unwrap().parse().unwrap();
    let sc = Scenario::parse(CALLS_SCENARIO, None).unwrap();
    let path = std::env::var("TRACE").unwrap();
    let f = std::fs::File::create(path).unwrap();
    let r = run(&sc, seed, Some(Box::new(std::io::BufWriter::new(f))));
    eprintln!("{:?}", r.map(|r| r.calls).map_err(|v| v.to_string()));
}

/// A long swarm for hunting (`SEEDS=2000 FROM=0 cargo test --release -p natm-sim --test
/// calls long_swarm -- --ignored --nocapture`).
#[test]
#[ignore]
fn long_swarm() {
    let n: u64 = std::env::var("SEEDS").map_or(2000, |s| s.parse().unwrap());
    let from: u64 = std::env::var("FROM").map_or(0, |s| s.parse().unwrap());
    let sc = Scenario::calls_scenario();
    let rep = natm_sim::swarm(&sc, from, n, 0, false);
    for f in rep.failures().filter_map(|o| o.failure_text(&sc)) {
        println!("FAIL {f}");
    }
    let ok: Vec<_> = rep
        .outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().ok())
        .collect();
    let settle = ok.iter().filter_map(|r| r.calls).map(|c| c.settle).max();
    let settled_late = ok
        .iter()
        .filter_map(|r| r.calls)
        .filter(|c| c.settle.as_nanos() > 0)
        .count();
    let placed: u64 = ok.iter().filter_map(|r| r.calls).map(|c| c.placed).sum();
    let cpu: f64 = ok.iter().map(|r| r.wall.as_secs_f64()).sum::<f64>() / ok.len().max(1) as f64;
    println!(
        "{} seeds in {:?}; {placed} calls; {settled_late} settled after the drain (longest {settle:?}); {:.1} ms per seed",
        rep.outcomes.len(),
        rep.wall,
        cpu * 1e3
    );
}

#[test]
fn calls_are_opt_in_per_scenario_file_and_run_on_any_topology() {
    let text = include_str!("../../../examples/sim/two-switches.toml");
    let plain = Scenario::parse(text, None).unwrap();
    assert!(!plain.sim.calls);
    assert_eq!(run(&plain, 2, None).unwrap().calls, None);
    let with = text.replace("churn = true", "churn = true\ncalls = true");
    let sc = Scenario::parse(&with, Some("two.toml")).unwrap();
    assert!(sc.sim.calls);
    assert_eq!(sc.replay(2), "natm sim run two.toml --seed 2");
    let rep = natm_sim::swarm(&sc, 0, 16, 0, false);
    let fails: Vec<String> = rep.failures().filter_map(|o| o.failure_text(&sc)).collect();
    assert!(fails.is_empty(), "{fails:#?}");
    let placed: u64 = rep
        .outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().ok()?.calls)
        .map(|c| c.placed)
        .sum();
    assert!(placed > 0);
}

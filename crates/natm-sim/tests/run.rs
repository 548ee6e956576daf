//! Whole runs of the default scenario: a clean run, the swarm of 200 seeds, and what a
//! failure says.

use natm_core::Instant;
use natm_sim::scenario::FaultMode;
use natm_sim::{Scenario, SeedOutcome, Violation, run, swarm};

#[test]
fn a_clean_run_delivers_every_sdu_sent_in_order() {
    let mut sc = Scenario::default_scenario();
    sc.sim.faults = FaultMode::None;
    // The greedy source's excess is policed by design; without it nothing may be lost.
    sc.sim.greedy.clear();
    let r = run(&sc, 1, None).unwrap_or_else(|v| panic!("{v}"));
    assert!(r.stats.sdus_sent > 300, "{:?}", r.stats);
    assert_eq!(r.stats.sdus_delivered, r.stats.sdus_sent);
    assert_eq!(r.stats.sends_refused, 0);
    assert_eq!(r.flows, 14);
}

#[test]
fn a_swarm_of_200_seeds_on_the_default_scenario_passes_within_3_minutes() {
    let sc = Scenario::default_scenario();
    let rep = swarm(&sc, 0, 200, 0, false);
    assert_eq!(rep.outcomes.len(), 200);
    let failures: Vec<String> = rep.failures().filter_map(|o| o.failure_text(&sc)).collect();
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(rep.wall.as_secs() < 180, "{:?}", rep.wall);
    // The swarm draws faults in most seeds.
    let faulty = rep
        .outcomes
        .iter()
        .filter(|o| o.result.as_ref().is_ok_and(|r| r.faults >= 2))
        .count();
    assert!(faulty > 150, "{faulty} of 200 seeds had two faults or more");
    eprintln!("200 seeds in {:?}", rep.wall);
    // A seed's run does not depend on the thread or on what ran beside it.
    for o in rep.outcomes.iter().step_by(40) {
        let alone = run(&sc, o.seed, None).unwrap();
        let swarmed = o.result.as_ref().unwrap();
        assert_eq!((alone.digest, alone.stats), (swarmed.digest, swarmed.stats));
    }
}

#[test]
fn a_failure_names_seed_invariant_time_and_the_replay_command() {
    let v = Violation {
        at: Instant::from_nanos(1_250_000),
        seq: 99,
        invariant: "cell order per VC",
        detail: "flow 3: cell serial 7 arrived after serial 8".into(),
    };
    let o: SeedOutcome = SeedOutcome {
        seed: 42,
        result: Err(v),
    };
    let sc = Scenario::default_scenario();
    assert_eq!(
        o.failure_text(&sc).unwrap(),
        "seed 42: cell order per VC at 1250000 ns: flow 3: cell serial 7 arrived after serial 8 \
         — replay: natm sim run --seed 42"
    );
    let mut named = sc.clone();
    named.file = Some("examples/sim/two-switches.toml".into());
    assert!(
        o.failure_text(&named)
            .unwrap()
            .ends_with("replay: natm sim run examples/sim/two-switches.toml --seed 42")
    );
}

/// A switch of 32 ports, each host sending to the next: the run is as cheap per cell as
/// on two ports (only the ports a cell goes to are polled).
#[test]
fn a_wide_switch_runs_clean() {
    let n = 32;
    let mut text = String::from("[[switch]]\nname = \"s1\"\n");
    for i in 0..n {
        text += &format!(
            "[[host]]\nname = \"h{i}\"\n[[link]]\na = \"h{i}\"\nb = \"s1\"\nrate = \"oc3\"\n"
        );
    }
    for i in 0..n {
        text += &format!(
            "[[pvc]]\na = \"h{i}\"\nb = \"h{}\"\nvc = \"0.{}\"\nqos = \"ubr\"\n",
            (i + 1) % n,
            100 + i
        );
    }
    text += "[sim]\nduration = \"20ms\"\nfaults = \"none\"\nubr_load = 0.5\n";
    let sc = Scenario::parse(&text, None).unwrap();
    let r = run(&sc, 5, None).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(r.flows, 2 * n);
    assert_eq!(r.stats.sdus_delivered, r.stats.sdus_sent);
    eprintln!(
        "32 ports: {} cell events in {:?} ({:.1} M/s)",
        r.stats.cell_events,
        r.wall,
        r.cell_events_per_sec() / 1e6
    );
}

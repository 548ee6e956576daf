//! The transport campaign: seeds pass with every invariant, replay the same, and differ.

use natm_sim::faults::FaultKind;
use natm_sim::transport::{self, TransportPlan};

#[test]
fn seeds_pass_and_replay_the_same() {
    for seed in 0..4 {
        let a = transport::run(seed, None).unwrap_or_else(|v| panic!("seed {seed}: {v}"));
        eprintln!("seed {seed}:\n{}", a.table());
        let b = transport::run(seed, None).unwrap();
        assert_eq!(a.digest, b.digest, "seed {seed}");
        assert_eq!(a.services, b.services);
        assert!(a.services[0].delivered > 0 && a.services[0].delivered == a.services[0].sent);
    }
}

#[test]
fn plans_mix_services_faults_and_sizes() {
    let plans: Vec<TransportPlan> = (0..50).map(TransportPlan::draw).collect();
    assert!(plans.iter().all(|p| p.channels.len() >= 3));
    assert!(plans.iter().any(|p| {
        p.faults
            .iter()
            .any(|f| matches!(f.kind, FaultKind::LinkDown { .. }))
    }));
    assert!(
        plans
            .iter()
            .flat_map(|p| &p.channels)
            .flat_map(|c| c.messages.iter().flatten())
            .any(|m| m.1 == transport::MAX_MESSAGE)
    );
    assert_ne!(plans[0], plans[1]);
}

#[test]
fn without_faults_nothing_is_lost_and_the_rate_is_checked() {
    for seed in 0..6 {
        let mut plan = TransportPlan::draw(seed);
        plan.faults.clear();
        let r =
            transport::run_plan(seed, plan, None).unwrap_or_else(|v| panic!("seed {seed}: {v}"));
        eprintln!("seed {seed} without faults:\n{}", r.table());
        for s in &r.services {
            assert_eq!(s.lost, 0, "seed {seed}");
            assert_eq!(s.delivered, s.sent, "seed {seed}");
        }
        assert!(r.rate_windows >= 12, "seed {seed}: {}", r.rate_windows);
    }
}

#[test]
fn a_failure_names_the_seed_the_invariant_and_the_replay_command() {
    let o = transport::TransportOutcome {
        seed: 42,
        result: Err(natm_sim::Violation {
            at: natm_core::Instant::from_nanos(5),
            seq: 0,
            invariant: "every TPDU acked naming it",
            detail: "channel 0".into(),
        }),
    };
    assert_eq!(
        o.failure_text().unwrap(),
        "seed 42: every TPDU acked naming it at 5 ns: channel 0 — replay: natm sim run --transport --seed 42"
    );
}

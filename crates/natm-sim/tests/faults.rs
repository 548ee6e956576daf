//! Each fault kind alone on a small scenario is survived: the invariants hold and the
//! liveness phase drains. Listed faults parse, and errors name the entry.

use natm_sim::scenario::FaultMode;
use natm_sim::{Scenario, run, swarm};

const TWO_SWITCHES: &str = include_str!("../../../examples/sim/two-switches.toml");

/// The two-switch example with `faults` as its listed faults (and the swarm's off).
fn with_faults(faults: &str) -> Scenario {
    let text = TWO_SWITCHES.replace("faults = \"swarm\"", "faults = \"listed\"");
    Scenario::parse(&format!("{text}\n{faults}"), Some("two.toml"))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn fault(at: &str, kind: &str, target: &str, length: &str, extra: &str) -> String {
    format!(
        "[[sim.fault]]\nat = \"{at}\"\nkind = \"{kind}\"\ntarget = \"{target}\"\nfor = \"{length}\"\n{extra}\n"
    )
}

#[test]
fn each_fault_kind_alone_is_survived() {
    let cases = [
        fault("5ms", "impair", "s1-s2", "30ms", "impair = \"loss=2%\""),
        fault("5ms", "impair", "h1-s1", "30ms", "impair = \"burst=2%/4\""),
        fault("5ms", "impair", "s2-h2", "30ms", "impair = \"hec=1%\""),
        fault("5ms", "impair", "s2-h2", "30ms", "impair = \"hec2=1%\""),
        fault("5ms", "impair", "h3-s1", "30ms", "impair = \"ber=1e-5\""),
        fault(
            "0ms",
            "impair",
            "s1-s2",
            "40ms",
            "impair = \"delay=200us,jitter=150us\"",
        ),
        fault("10ms", "link_down", "s1-s2", "5ms", ""),
        fault("10ms", "switch_crash", "s2", "5ms", ""),
        fault("10ms", "host_crash", "h3", "5ms", ""),
        fault("10ms", "clog", "s1:2", "2ms", ""),
        fault("10ms", "churn", "0.120", "10ms", ""),
        fault("10ms", "churn", "0.130", "10ms", ""),
    ];
    for f in cases {
        let sc = with_faults(&f);
        for seed in 0..3 {
            let r = run(&sc, seed, None).unwrap_or_else(|v| panic!("{f}seed {seed}: {v}"));
            assert_eq!(r.faults, 1);
            assert!(r.stats.sdus_delivered > 50, "{f}: {:?}", r.stats);
        }
    }
}

#[test]
fn faults_do_happen() {
    // A link down drops cells offered to it; a crashed host drops what reaches it.
    let sc = with_faults(&fault("10ms", "link_down", "h1-s1", "5ms", ""));
    assert!(run(&sc, 1, None).unwrap().stats.dropped_link_down > 0);
    let sc = with_faults(&fault("10ms", "host_crash", "h2", "5ms", ""));
    assert!(run(&sc, 1, None).unwrap().stats.dropped_node_down > 0);
    let sc = with_faults(&fault("10ms", "switch_crash", "s1", "5ms", ""));
    assert!(run(&sc, 1, None).unwrap().stats.dropped_node_down > 0);
}

#[test]
fn a_clean_run_on_two_switches_delivers_everything_and_the_swarm_passes() {
    let mut sc = Scenario::parse(TWO_SWITCHES, Some("examples/sim/two-switches.toml")).unwrap();
    assert_eq!(sc.topology.switches, ["s1", "s2"]);
    let rep = swarm(&sc, 0, 40, 0, false);
    let failures: Vec<String> = rep.failures().filter_map(|o| o.failure_text(&sc)).collect();
    assert!(failures.is_empty(), "{failures:#?}");
    // Without faults and without the greedy source (whose excess the switches police),
    // every SDU sent arrives.
    sc.sim.faults = FaultMode::None;
    sc.sim.greedy.clear();
    let r = run(&sc, 3, None).unwrap();
    assert!(r.stats.sdus_sent > 200);
    assert_eq!(r.stats.sdus_delivered, r.stats.sdus_sent);
}

#[test]
fn listed_faults_errors_name_the_entry() {
    let base = TWO_SWITCHES.replace("faults = \"swarm\"", "faults = \"listed\"");
    let cases = [
        (
            fault("1ms", "melt", "s1", "1ms", ""),
            "sim.fault 1: kind \"melt\"",
        ),
        (
            fault("1ms", "host_crash", "h9", "1ms", ""),
            "sim.fault 1: target \"h9\": no such host",
        ),
        (
            fault("1ms", "link_down", "h1-h2", "1ms", ""),
            "sim.fault 1: target \"h1-h2\": no such link",
        ),
        (
            fault("1ms", "clog", "s1:9", "1ms", ""),
            "sim.fault 1: target \"s1:9\": no such port",
        ),
        (fault("1ms", "churn", "0.999", "1ms", ""), "no such PVC"),
        (
            fault("soon", "host_crash", "h1", "1ms", ""),
            "sim.fault 1: at \"soon\"",
        ),
        (
            fault("39ms", "host_crash", "h1", "5ms", ""),
            "ends after sim.duration",
        ),
        (
            fault("1ms", "impair", "h1-s1", "1ms", "impair = \"loss=200%\""),
            "impair \"loss=200%\"",
        ),
        (fault("1ms", "impair", "h1-s1", "1ms", ""), "needs impair"),
        (
            fault("1ms", "host_crash", "h1", "1ms", "colour = 1"),
            "colour",
        ),
    ];
    for (f, want) in cases {
        let text = format!("{base}\n{}{f}", fault("1ms", "host_crash", "h1", "1ms", ""));
        let e = Scenario::parse(&text, None).unwrap_err().to_string();
        let want = want.replace("sim.fault 1", "sim.fault 2");
        assert!(e.contains(&want), "{f}: {e}");
    }
    let sim_errors = [
        (
            "duration = \"40ms\"",
            "duration = \"forever\"",
            "sim.duration \"forever\"",
        ),
        ("ubr_load = 0.3", "ubr_load = 3.0", "sim.ubr_load 3"),
        ("sdu = [20, 3000]", "sdu = [5, 3000]", "sim.sdu [5, 3000]"),
        (
            "[[sim.flow]]\nvc = \"0.121\"",
            "[[sim.flow]]\nvc = \"0.999\"",
            "sim.flow 1: vc \"0.999\" is no PVC",
        ),
        ("greedy = 2.0", "greedy = -1.0", "sim.flow 1: greedy -1"),
        (
            "faults = \"swarm\"",
            "faults = \"all\"",
            "sim.faults \"all\"",
        ),
        ("churn = true", "churn = true\nspeed = 1", "speed"),
    ];
    for (from, to, want) in sim_errors {
        let e = Scenario::parse(&TWO_SWITCHES.replace(from, to), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{to}: {e}");
    }
}

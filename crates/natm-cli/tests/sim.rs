//! `natm sim run` and `natm sim swarm` as a user runs them: the seed comes first, one seed
//! replays the same run (digest and trace bytes), the example scenario runs, a failing
//! scenario names the replay command, and bad input is refused naming what was wrong.

use std::path::PathBuf;
use std::process::Output;

mod common;
use common::{stderr, stdout};

fn sim(args: &[&str]) -> Output {
    common::natm(&[&["sim"], args].concat())
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("natm-sim-cli-{}-{name}", std::process::id()))
}

fn digest(out: &Output) -> String {
    stdout(out)
        .lines()
        .find_map(|l| l.strip_prefix("digest "))
        .unwrap_or_else(|| panic!("no digest line: {}", stdout(out)))
        .to_string()
}

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/sim")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn one_seed_replays_the_same_run_and_the_seed_is_printed_first() {
    let (t1, t2) = (temp("trace1"), temp("trace2"));
    let a = sim(&["run", "--seed", "11", "--trace", t1.to_str().unwrap()]);
    let b = sim(&["run", "--seed", "11", "--trace", t2.to_str().unwrap()]);
    let c = sim(&["run", "--seed", "12"]);
    for o in [&a, &b, &c] {
        assert!(o.status.success(), "{}{}", stdout(o), stderr(o));
    }
    assert!(
        stdout(&a).starts_with("natm sim: seed 11, scenario (default)\n"),
        "{}",
        stdout(&a)
    );
    assert!(stdout(&a).contains("ok: every invariant held"));
    assert_eq!(digest(&a), digest(&b));
    assert_ne!(digest(&a), digest(&c));
    let (x, y) = (std::fs::read(&t1).unwrap(), std::fs::read(&t2).unwrap());
    assert!(x.len() > 1000, "a trace of {} bytes", x.len());
    assert!(x == y, "the same seed wrote different traces");
    let _ = std::fs::remove_file(t1);
    let _ = std::fs::remove_file(t2);
}

#[test]
fn json_report_and_the_example_scenario() {
    let o = sim(&[
        "run",
        &example("two-switches.toml"),
        "--seed",
        "3",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("JSON");
    assert_eq!(v["seed"], 3);
    assert!(v["cell_events"].as_u64().unwrap() > 1000, "{v}");
    assert!(v["sdus_delivered"].as_u64().unwrap() > 0, "{v}");
}

#[test]
fn swarm_reports_a_total_and_a_failing_scenario_names_its_replay() {
    let o = sim(&["swarm", "--seeds", "6", "--from", "40"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("swarm: 6 seeds from 40 (default scenario), 0 failed, 6 passed"),
        "{}",
        stdout(&o)
    );

    // A link whose cells take 500 ms cannot drain within a 30 ms bound: the liveness
    // invariant breaks, and the failure says how to replay it.
    let f = temp("slow-link.toml");
    std::fs::write(
        &f,
        "switch = [{ name = \"s1\" }]\nhost = [{ name = \"h1\" }, { name = \"h2\" }]\n\
         link = [{ a = \"h1\", b = \"s1\", impair = \"delay=500ms\" }, { a = \"h2\", b = \"s1\" }]\n\
         pvc = [{ a = \"h1\", b = \"h2\", vc = \"0.100\" }]\n\
         [sim]\nduration = \"20ms\"\ndrain = \"60ms\"\nfaults = \"none\"\n",
    )
    .unwrap();
    let path = f.to_str().unwrap();
    let o = sim(&["run", path, "--seed", "5"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("seed 5: invariant \"liveness\""), "{err}");
    assert!(
        err.contains(&format!("replay: natm sim run {path} --seed 5")),
        "{err}"
    );
    let o = sim(&["swarm", path, "--seeds", "2", "--from", "7"]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("seed 7: liveness"), "{out}");
    assert!(
        out.contains(&format!("replay: natm sim run {path} --seed 8")),
        "{out}"
    );
    assert!(
        out.contains("2 seeds from 7") && out.contains("2 failed"),
        "{out}"
    );
    let _ = std::fs::remove_file(f);
}

#[test]
fn bad_input_is_refused_naming_what_was_wrong() {
    let o = sim(&["run", "/nonexistent/scenario.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read /nonexistent/scenario.toml"));

    let f = temp("bad.toml");
    std::fs::write(
        &f,
        "[[switch]]\nname = \"s1\"\n[[host]]\nname = \"h1\"\n[[link]]\na = \"h1\"\nb = \"s1\"\n\
         [sim]\nduration = \"soon\"\n",
    )
    .unwrap();
    let o = sim(&["run", f.to_str().unwrap(), "--seed", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("duration"), "{}", stderr(&o));

    std::fs::write(&f, "[[switch]]\nname = \"s1\"\nbogus = 1\n").unwrap();
    let o = sim(&["swarm", f.to_str().unwrap(), "--seeds", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bogus"), "{}", stderr(&o));

    let o = sim(&["swarm", "--seeds", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--seeds must be at least 1"));
    let _ = std::fs::remove_file(f);
}

#[test]
fn the_calls_scenario_runs_replays_and_swarms() {
    let a = sim(&["run", "--calls", "--seed", "4"]);
    let b = sim(&["run", "--calls", "--seed", "4"]);
    assert!(a.status.success(), "{}{}", stdout(&a), stderr(&a));
    let out = stdout(&a);
    assert!(
        out.starts_with("natm sim: seed 4, scenario (calls)\n"),
        "{out}"
    );
    assert!(out.contains("\ncalls: "), "{out}");
    assert_eq!(digest(&a), digest(&b));
    let j = sim(&["run", "--calls", "--seed", "4", "--json"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&j).trim()).unwrap();
    assert!(v["calls"]["placed"].as_u64().unwrap() > 0, "{v}");
    let s = sim(&["swarm", "--calls", "--seeds", "4"]);
    assert!(s.status.success(), "{}{}", stdout(&s), stderr(&s));
    assert!(
        stdout(&s).contains("(calls scenario), 0 failed, 4 passed"),
        "{}",
        stdout(&s)
    );
    let bad = sim(&["run", "--calls", "--signalling"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
}

#[test]
fn the_transport_campaign_runs_replays_and_swarms() {
    let (t1, t2) = (temp("transport1"), temp("transport2"));
    let a = sim(&[
        "run",
        "--transport",
        "--seed",
        "6",
        "--trace",
        t1.to_str().unwrap(),
    ]);
    let b = sim(&[
        "run",
        "--transport",
        "--seed",
        "6",
        "--trace",
        t2.to_str().unwrap(),
    ]);
    let c = sim(&["run", "--transport", "--seed", "7"]);
    assert!(a.status.success(), "{}{}", stdout(&a), stderr(&a));
    let out = stdout(&a);
    assert!(
        out.starts_with("natm sim: seed 6, transport campaign\nok: every transport invariant held"),
        "{out}"
    );
    for line in [
        "\nreliable ",
        "\nbest effort ",
        "\nguaranteed ",
        "rate windows checked",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    assert_eq!(digest(&a), digest(&b));
    assert_ne!(digest(&a), digest(&c));
    let (x, y) = (std::fs::read(&t1).unwrap(), std::fs::read(&t2).unwrap());
    assert!(
        x.len() > 1000 && x == y,
        "the same seed writes the same trace"
    );
    let _ = (std::fs::remove_file(t1), std::fs::remove_file(t2));
    let j = sim(&["run", "--transport", "--seed", "6", "--json"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&j).trim()).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["digest"].as_str().unwrap(), digest(&a));
    let r = &v["reliable"];
    assert!(r["delivered"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(r["delivered"], r["sent"], "{v}");
    let s = sim(&["swarm", "--transport", "--seeds", "6", "--from", "3"]);
    assert!(s.status.success(), "{}{}", stdout(&s), stderr(&s));
    assert!(
        stdout(&s).contains("6 seeds from 3 (transport campaign), 0 failed, 6 passed"),
        "{}",
        stdout(&s)
    );
    for bad in [
        sim(&["run", "--transport", "--calls"]),
        sim(&["swarm", "--transport", "--signalling"]),
        sim(&["run", "--transport", "/some/scenario.toml"]),
    ] {
        assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    }
}

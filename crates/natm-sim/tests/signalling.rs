//! The signalling campaign: one seed, one run (same digest, same trace bytes), and a
//! handful of seeds pass every invariant.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;

use natm_sim::signalling::{self, run};

/// A trace sink the test can read back.
#[derive(Clone, Default)]
struct Sink(Rc<RefCell<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn traced(seed: u64) -> (u64, Vec<u8>) {
    let sink = Sink::default();
    let r = run(seed, Some(Box::new(sink.clone())))
        .unwrap_or_else(|v| panic!("seed {seed}: {v}; replay: {}", signalling::replay(seed)));
    let bytes = sink.0.borrow().clone();
    (r.digest, bytes)
}

#[test]
fn same_seed_same_digest_and_trace_and_different_seeds_differ() {
    let (d1, t1) = traced(3);
    let (d2, t2) = traced(3);
    assert_eq!(d1, d2);
    assert!(t1 == t2, "the traces of one seed differ");
    assert!(t1.len() > 10_000, "a trace of {} bytes", t1.len());
    assert_eq!(run(3, None).unwrap().digest, d1);
    let (d3, _) = traced(4);
    assert_ne!(d1, d3);
}

#[test]
fn a_handful_of_seeds_pass_and_do_what_the_campaign_is_for() {
    let mut calls = 0;
    let mut connected = 0;
    let mut retransmitted = 0;
    for seed in 0..12 {
        let r = run(seed, None)
            .unwrap_or_else(|v| panic!("seed {seed}: {v}; replay: {}", signalling::replay(seed)));
        calls += r.calls;
        connected += r.connected;
        retransmitted += r.sd_retransmitted;
    }
    assert!(
        calls > 100 && connected > 50,
        "{calls} calls, {connected} connected"
    );
    assert!(retransmitted > 0);
}

/// Seeds that found bugs in the cores (natm-sig: a resynchronisation storm, 9 and 72; a
/// SETUP held past T309 sent for a cleared call, 1; a T316 retransmission clearing calls at
/// the peer only, 190) and in this oracle (a stale ERAK taken for a reset, 254 and 624).
#[test]
fn the_seeds_that_found_bugs_pass() {
    for seed in [1, 9, 72, 190, 254, 624] {
        if let Err(v) = run(seed, None) {
            panic!("seed {seed}: {v}; replay: {}", signalling::replay(seed));
        }
    }
}

/// `cargo test -p natm-sim --test signalling -- --ignored --nocapture scan`: a table of
/// seeds, for looking.
#[test]
#[ignore]
fn scan() {
    let from: u64 = std::env::var("FROM")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let n: u64 = std::env::var("N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    for seed in from..from + n {
        let trace: Option<Box<dyn Write>> = std::env::var("TRACE")
            .ok()
            .map(|p| Box::new(std::fs::File::create(p).unwrap()) as Box<dyn Write>);
        match run(seed, trace) {
            Ok(r) => println!(
                "seed {seed}: ok {} calls {} conn {} rexmit {} ustat {} outages {:.1}s {:.3}s wall",
                r.calls,
                r.connected,
                r.sd_retransmitted,
                r.ustat_watched,
                r.outages,
                r.end.as_nanos() as f64 / 1e9,
                r.wall.as_secs_f64()
            ),
            Err(v) => println!("seed {seed}: {v}"),
        }
    }
}

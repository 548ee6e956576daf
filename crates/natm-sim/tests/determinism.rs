//! One seed, one run: the same seed gives the same digest and a byte-identical trace;
//! different seeds give different runs.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;

use natm_sim::{Scenario, run};

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

fn traced(sc: &Scenario, seed: u64) -> (u64, Vec<u8>) {
    let sink = Sink::default();
    let r = run(sc, seed, Some(Box::new(sink.clone()))).unwrap_or_else(|v| panic!("{v}"));
    let bytes = sink.0.borrow().clone();
    (r.digest, bytes)
}

#[test]
fn same_seed_same_digest_and_trace_bytes_and_different_seeds_differ() {
    let sc = Scenario::default_scenario();
    let (d1, t1) = traced(&sc, 7);
    let (d2, t2) = traced(&sc, 7);
    assert_eq!(d1, d2);
    assert!(t1.len() > 10_000, "a trace of {} bytes", t1.len());
    assert!(t1 == t2, "the traces of one seed differ");
    // The digest does not depend on tracing.
    assert_eq!(run(&sc, 7, None).unwrap().digest, d1);
    let (d3, t3) = traced(&sc, 8);
    assert_ne!(d1, d3);
    assert_ne!(t1, t3);
    // Every line is "time seq kind component count" or a note, in time order.
    let text = String::from_utf8(t1).unwrap();
    let mut last = 0u64;
    for line in text.lines() {
        let mut f = line.split(' ');
        let t: u64 = f.next().unwrap().parse().unwrap();
        assert!(t >= last, "{line}");
        last = t;
        let kind = f.nth(1).unwrap();
        assert!(
            [
                "link", "adapter", "switch", "cpu", "timer", "action", "note"
            ]
            .contains(&kind),
            "{line}"
        );
    }
    let digests: std::collections::BTreeSet<u64> =
        (0..20).map(|s| run(&sc, s, None).unwrap().digest).collect();
    assert_eq!(digests.len(), 20);
}

//! The forwarding measurement: a small run checks that it works; the full run (ignored
//! by default, meant for a release build) prints the figure.

use natm_bench::forwarding::{forwarding, switch_capacity};

#[test]
fn a_small_forwarding_run_moves_every_cell() {
    let r = forwarding(20_000, 64).unwrap();
    assert_eq!(r.sent, 20_000);
    assert_eq!(r.forwarded + r.dropped, 20_000);
    assert!(r.forwarded > 0 && r.cells_per_second > 0.0);
    assert!(r.steps > 0);
    assert!(forwarding(0, 64).is_err());
    assert!(forwarding(10, 0).is_err());
    let c = switch_capacity(3, 64).unwrap();
    assert_eq!(c.rates.len(), 2, "the first round is a warm-up");
    assert!(c.median() > 0.0 && c.best() >= c.median());
    assert!(switch_capacity(0, 64).is_err());
}

/// `cargo test -p natm-bench --release --test forwarding -- --ignored --nocapture`
#[test]
#[ignore = "a measurement: run in release"]
fn switch_capacity_on_one_core() {
    for batch in [32, 64, 128, 256] {
        let c = switch_capacity(201, batch).unwrap();
        println!(
            "batch {batch:>3}: median {:.1} M cells/s, best {:.1} M cells/s over {} bursts of {} cells (cpu {:?})",
            c.median() / 1e6,
            c.best() / 1e6,
            c.rates.len(),
            c.burst,
            c.cpu
        );
    }
}

/// `cargo test -p natm-bench --release --test forwarding -- --ignored --nocapture`
#[test]
#[ignore = "a measurement: run in release"]
fn forwarding_rate() {
    for batch in [32, 64, 128, 256] {
        let r = forwarding(20_000_000, batch).unwrap();
        println!(
            "batch {batch:>3}: {:.1} M cells/s forwarded, {:.1} M cells/s per busy switch core \
             ({} of {} cells, {} dropped, in {:.2?}; {} steps, {} idle; switch on cpu {:?})",
            r.cells_per_second / 1e6,
            r.busy_cells_per_second / 1e6,
            r.forwarded,
            r.sent,
            r.dropped,
            r.elapsed,
            r.steps,
            r.idle_steps,
            r.cpu
        );
    }
}

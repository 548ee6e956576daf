//! The forwarding measurement: a small run checks that it works; the full run (ignored
//! by default, meant for a release build) prints the figure.

use natm_switchd::bench::forwarding;

#[test]
fn a_small_forwarding_run_moves_every_cell() {
    let r = forwarding(20_000, 64).unwrap();
    assert_eq!(r.sent, 20_000);
    assert_eq!(r.forwarded + r.dropped, 20_000);
    assert!(r.forwarded > 0 && r.cells_per_second > 0.0);
    assert!(r.steps > 0);
    assert!(forwarding(0, 64).is_err());
    assert!(forwarding(10, 0).is_err());
}

/// `cargo test -p natm-switchd --release --test bench -- --ignored --nocapture`
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

//! natm's signalling against linux-atm's atmsigd, unmodified, through
//! `tools/atm_socket_shim.c` (see the crate docs and `natm_interop::atmsigd`).
//!
//! Skips with a message when atmsigd or cc is missing, unless `NATM_REQUIRE_ATMSIGD=1`
//! (set by scripts/test). Every scenario is bounded (< 20 s of wall clock); every atmsigd is
//! killed, reaped and its directory removed when the test ends, passed or failed.

use std::time::Duration;

use natm_core::Instant;
use natm_interop::atmsigd::{AtmSigd, Mode, Options, SaalEndpoint};
use natm_interop::vectors;

/// A natm side that says nothing: only watches what atmsigd sends.
struct Silent;

impl SaalEndpoint for Silent {
    fn handle_pdu(&mut self, _: Instant, _: &[u8]) {}
    fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        None
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _: Instant) {}
}

/// Unanswered, atmsigd repeats its BGN every second (Timer_CC), in both modes.
#[test]
fn atmsigd_starts_with_bgn_in_both_modes() {
    for mode in [Mode::User, Mode::Network] {
        let Some(mut sigd) = AtmSigd::spawn_or_skip("bgn", &Options::new(mode, None)) else {
            return;
        };
        let ok = sigd.pump(&mut Silent, Duration::from_millis(2500), |_, s| {
            s.from_sigd().count() >= 2
        });
        let seen: Vec<&[u8]> = sigd.from_sigd().collect();
        assert!(ok, "{mode:?}: expected two BGNs, saw {seen:02x?}");
        assert_eq!(seen[0], vectors::BGN, "{mode:?}");
        assert_eq!(seen[1], vectors::BGN, "{mode:?}");
        let gap = sigd.trace[1].at.saturating_duration_since(sigd.trace[0].at);
        assert!(
            (900..1500).contains(&(gap.as_nanos() / 1_000_000)),
            "{mode:?}: BGN repeated after {gap:?}"
        );
    }
}

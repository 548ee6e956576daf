//! The planted mutants are caught: each makes a test of this crate fail, and passes it
//! again when switched off. The flags are per thread in unit tests, so these run beside
//! the others.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::efficiency::lan_goodput_holds;
use super::reliable::{
    test_receiver_acks_every_tpdu_with_its_trigger,
    test_sender_smart_resends_at_once_and_once_per_round_trip,
    test_sender_window_halves_once_per_window,
};
use crate::mutants::{set_ack_without_trigger, set_window_never_halves};

fn fails(f: impl FnOnce()) -> bool {
    catch_unwind(AssertUnwindSafe(f)).is_err()
}

/// 1,500-byte messages at 0.1 % cell loss on the LAN.
fn efficiency() {
    lan_goodput_holds(1_500, 1_000, 1_000_000);
}

#[test]
fn ack_without_trigger_is_caught() {
    set_ack_without_trigger(false);
    assert!(!fails(test_receiver_acks_every_tpdu_with_its_trigger));
    assert!(!fails(efficiency));
    set_ack_without_trigger(true);
    let unit = fails(test_receiver_acks_every_tpdu_with_its_trigger);
    // Without triggers SMART finds nothing: every loss waits for a probe or the timeout.
    let goodput = fails(efficiency);
    set_ack_without_trigger(false);
    assert!(unit, "the receiver's ack test misses the mutant");
    assert!(goodput, "the efficiency test misses the mutant");
    assert!(!fails(efficiency), "off again");
}

#[test]
fn window_never_halves_is_caught() {
    set_window_never_halves(false);
    assert!(!fails(test_sender_window_halves_once_per_window));
    assert!(!fails(
        test_sender_smart_resends_at_once_and_once_per_round_trip
    ));
    set_window_never_halves(true);
    let once = fails(test_sender_window_halves_once_per_window);
    let smart = fails(test_sender_smart_resends_at_once_and_once_per_round_trip);
    set_window_never_halves(false);
    assert!(
        once && smart,
        "the window tests miss the mutant: {once} {smart}"
    );
    assert!(
        !fails(test_sender_window_halves_once_per_window),
        "off again"
    );
}

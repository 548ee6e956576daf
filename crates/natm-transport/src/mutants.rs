//! Planted bugs for the mutation meta-test (issue 25): this crate's tests must catch each.
//! Test-only: this module exists only with the `mutants` feature, and each bug is off until
//! its setter switches it on. Never use it for anything else.
//!
//! The flags are process-global `core` atomics (the crate is `no_std`): whoever switches
//! one on must switch it off again, and nothing that relies on the correct behaviour may
//! run beside it in the same process. In this crate's own unit tests each flag is per
//! thread instead, so the mutant tests cannot disturb the tests running beside them.
//!
//! * [`set_ack_without_trigger`][]: the receiver's acks carry no trigger (flagged
//!   NO_TRIGGER), so the sender cannot tell which TPDU got through: SMART finds nothing
//!   lost, and every loss waits for a probe or the timeout.
//! * [`set_window_never_halves`][]: a loss found by SMART leaves window and threshold as
//!   they are.

natm_core::planted_bug! {
    /// Planted bug: acks carry no trigger sequence number.
    ACK_WITHOUT_TRIGGER, set_ack_without_trigger, ack_without_trigger
}

natm_core::planted_bug! {
    /// Planted bug: the window never halves on a loss found by SMART.
    WINDOW_NEVER_HALVES, set_window_never_halves, window_never_halves
}

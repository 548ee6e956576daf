//! Planted bugs for natm-sim's mutation meta-test (issue 23): the simulator's swarm, and
//! this crate's pair harness, must catch each of them. Test-only: this module exists only
//! with the `mutants` feature, and each bug is off until its setter switches it on. Never
//! use it for anything else.
//!
//! The flags are process-global `core` atomics (the crate is `no_std`): whoever switches
//! one on must switch it off again, and nothing that relies on the correct behaviour may
//! run beside it in the same process. In this crate's own tests each flag is per thread
//! instead, so that the mutant test cannot disturb the other tests running beside it.
//!
//! * [`set_no_release_complete_after_t308`][]: a network side whose T308 expires for the
//!   last time neither releases the call locally nor restarts its VC: the call stays in
//!   N11 with no timer, for ever, and its call reference leaks.

natm_core::planted_bug! {
    /// Planted bug: the network side keeps a call in N11 after T308's last expiry.
    NO_RELEASE_AFTER_T308, set_no_release_complete_after_t308, no_release_complete_after_t308
}

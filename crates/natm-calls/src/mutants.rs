//! Planted bugs for natm-sim's mutation meta-test (issue 24): the simulator's calls
//! swarm must catch each of them. Test-only: this module exists only with the `mutants`
//! feature, and each bug is off until its setter switches it on. Never use it for anything
//! else.
//!
//! The flags are process-global `core` atomics (the crate is `no_std`): whoever switches
//! one on must switch it off again, and nothing that relies on the correct behaviour may
//! run beside it in the same process.
//!
//! * [`set_keep_vci_on_release`][]: a call leg that goes keeps its VCI allocated on its
//!   port (the VCI leaks; the port runs out of VCIs after enough calls).

natm_core::planted_bug! {
    /// Planted bug: a released call leg does not return its VCI.
    KEEP_VCI_ON_RELEASE, set_keep_vci_on_release, keep_vci_on_release
}

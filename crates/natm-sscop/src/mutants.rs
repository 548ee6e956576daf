//! Planted bugs for natm-sim's mutation meta-test (issue 23): the simulator's swarm, and
//! this crate's pair harness, must catch each of them. Test-only: this module exists only
//! with the `mutants` feature, and each bug is off until its setter switches it on. Never
//! use it for anything else.
//!
//! The flags are process-global `core` atomics (the crate is `no_std`): whoever switches
//! one on must switch it off again, and nothing that relies on the correct behaviour may
//! run beside it in the same process. In this crate's own unit tests each flag is per
//! thread instead, so that the mutant test cannot disturb the other tests running beside
//! it.
//!
//! * [`set_ignore_ustat`][]: the transmitter ignores USTAT (it still takes its N(R) and
//!   N(MR), but retransmits nothing it asks for); lost SDs then wait for the next
//!   POLL/STAT round.

use core::sync::atomic::{AtomicBool, Ordering};

#[cfg(not(test))]
static IGNORE_USTAT: AtomicBool = AtomicBool::new(false);

#[cfg(test)]
std::thread_local! {
    static IGNORE_USTAT: AtomicBool = const { AtomicBool::new(false) };
}

#[cfg(not(test))]
fn with<R>(flag: &'static AtomicBool, op: impl FnOnce(&AtomicBool) -> R) -> R {
    op(flag)
}

#[cfg(test)]
fn with<R>(
    flag: &'static std::thread::LocalKey<AtomicBool>,
    op: impl FnOnce(&AtomicBool) -> R,
) -> R {
    flag.with(op)
}

/// Planted bug: USTAT triggers no retransmission.
pub fn set_ignore_ustat(on: bool) {
    with(&IGNORE_USTAT, |f| f.store(on, Ordering::Relaxed));
}

pub(crate) fn ignore_ustat() -> bool {
    with(&IGNORE_USTAT, |f| f.load(Ordering::Relaxed))
}

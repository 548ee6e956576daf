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

natm_core::planted_bug! {
    /// Planted bug: USTAT triggers no retransmission.
    IGNORE_USTAT, set_ignore_ustat, ignore_ustat
}

#[cfg(all(test, feature = "mutants"))]
mod tests {
    use super::*;
    use crate::tests::{Pair, T0, swarm_run};
    use natm_core::Duration;
    use natm_wire::sscop::Repr;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Whether the pair harness's checks fail on swarm seed `seed`.
    fn caught(seed: u64) -> bool {
        catch_unwind(AssertUnwindSafe(|| {
            swarm_run(seed);
        }))
        .is_err()
    }

    /// Three SDs with the second lost; what B has at 30 ms and at 2 s. The harness's own
    /// USTAT bound is lifted so that the slow path can be watched.
    fn lost_second_sd() -> (Vec<u64>, Vec<u64>) {
        let mut p = Pair::new(4, ms(5));
        p.ustat_bound = Duration::from_secs(10);
        p.a.establish_request(T0, Vec::new(), true);
        p.run(T0 + ms(100), None);
        let start = p.now;
        p.offer();
        p.offer();
        p.run(start, None);
        let lost = p.ab.take_last().expect("the second SD");
        assert!(matches!(Repr::parse(&lost), Ok(Repr::Sd { n_s: 1, .. })));
        p.offer();
        p.run(start + ms(30), None);
        let early = p.b_log.delivered.clone();
        p.run(start + ms(2000), None);
        (early, p.b_log.delivered.clone())
    }

    // One test for every mutant of the crate: the flags are global outside unit tests.
    #[test]
    fn mutants_off_behave_and_on_misbehave() {
        set_ignore_ustat(false);
        assert_eq!(lost_second_sd(), (vec![0, 1, 2], vec![0, 1, 2]));
        assert!(!caught(5), "the correct SSCOP passes the swarm seed");

        set_ignore_ustat(true);
        let slow = lost_second_sd();
        let swarm = caught(5);
        set_ignore_ustat(false);
        // The data still arrives, but only after the POLL/STAT round (Timer_POLL 750 ms).
        assert_eq!(slow, (vec![0], vec![0, 1, 2]));
        assert!(swarm, "the pair harness's USTAT bound catches the mutant");

        assert!(!caught(5), "off again");
    }
}

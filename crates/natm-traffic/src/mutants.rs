//! Planted bugs for natm-sim's mutation meta-test (issue 6): the simulator's swarm must
//! catch each of them. Test-only: this module exists only with the `mutants` feature, and
//! each bug is off until its setter switches it on. Never use it for anything else.
//!
//! The flags are process-global `core` atomics (the crate is `no_std`): whoever switches
//! one on must switch it off again, and nothing that relies on the correct behaviour may
//! run beside it in the same process. In this crate's own unit tests each flag is per
//! thread instead, so that the mutant test cannot disturb the other tests running beside
//! it.
//!
//! * [`set_policer_never_tags`][]: [`Policer::police`](crate::policer::Policer::police)
//!   returns [`Verdict::Pass`](crate::policer::Verdict::Pass) for every cell (no tag, no
//!   discard). The GCRAs still run as if the true verdict had been given.
//! * [`set_cac_forgets_release`][]: [`Cac::release`](crate::cac::Cac::release) removes
//!   the reservation from the live set but leaves its bandwidth (or its UBR count) booked.

natm_core::planted_bug! {
    /// Planted bug: the UPC passes every cell as conforming.
    POLICER_NEVER_TAGS, set_policer_never_tags, policer_never_tags
}

natm_core::planted_bug! {
    /// Planted bug: a CAC release does not give its bandwidth back.
    CAC_FORGETS_RELEASE, set_cac_forgets_release, cac_forgets_release
}

#[cfg(all(test, feature = "mutants"))]
mod tests {
    use super::*;
    use crate::cac::{Cac, CacConfig};
    use crate::policer::{Policer, Verdict};
    use natm_core::{Instant, Qos};

    const OC3: u32 = natm_core::PhyRate::OC3.cells_per_s();

    fn ms(k: u64) -> Instant {
        Instant::from_nanos(k * 1_000_000)
    }

    /// The first 14 verdicts of a back-to-back burst at PCR for VBR.3 (tag) PCR 1000,
    /// SCR 250, MBS 10: cells 10..13 fail SCR.
    fn vbr3_burst() -> ([Verdict; 14], crate::policer::Counters) {
        let qos: Qos = "vbr:pcr=1000,scr=250,mbs=10".parse().unwrap();
        let mut upc =
            Policer::from_params(Some(crate::policer::Conformance::Vbr3), &qos.tx, OC3).unwrap();
        let mut v = [Verdict::Pass; 14];
        for (k, v) in v.iter_mut().enumerate() {
            *v = upc.police(ms(k as u64), false);
        }
        // A cell far too early for PCR: discarded by a correct UPC.
        let early = upc.police(Instant::from_nanos(13_000_001), false);
        assert_eq!(early == Verdict::Pass, policer_never_tags());
        (v, upc.counters())
    }

    fn cac_round_trip() -> (u64, u64, u32, usize) {
        let mut cac = Cac::new(CacConfig {
            link: "sw0:1".into(),
            capacity: OC3,
            buffer_cells: 0,
            max_ubr: 4,
        });
        let tx = |s: &str| s.parse::<Qos>().unwrap().tx;
        let handles = [
            cac.admit(&tx("cbr:pcr=1000")).unwrap(),
            cac.admit(&tx("vbr:pcr=2000,scr=500,mbs=10")).unwrap(),
            cac.admit(&tx("ubr")).unwrap(),
        ];
        for h in handles {
            cac.release(h).unwrap();
        }
        let live = cac.reservations().count();
        (
            cac.reserved_cbr(),
            cac.reserved_vbr(),
            cac.ubr_count(),
            live,
        )
    }

    // One test for every mutant of the crate: the flags are process-global.
    #[test]
    fn mutants_off_behave_and_on_misbehave() {
        set_policer_never_tags(false);
        set_cac_forgets_release(false);

        let (v, c) = vbr3_burst();
        let mut expect = [Verdict::Pass; 14];
        expect[10..13].fill(Verdict::Tag);
        assert_eq!(v, expect, "a correct VBR.3 UPC tags cells that fail SCR");
        assert_eq!((c.tag, c.discard), (3, 1));
        assert_eq!(
            cac_round_trip(),
            (0, 0, 0, 0),
            "a correct CAC's books balance"
        );

        set_policer_never_tags(true);
        let (v, c) = vbr3_burst();
        set_policer_never_tags(false);
        assert_eq!(
            v,
            [Verdict::Pass; 14],
            "the planted UPC passes non-conforming cells"
        );
        assert_eq!((c.pass, c.tag, c.discard), (15, 0, 0));

        set_cac_forgets_release(true);
        let books = cac_round_trip();
        set_cac_forgets_release(false);
        assert_eq!(books, (1000, 2000, 1, 0), "released yet still booked");

        // Off again: both back to the correct behaviour.
        assert_eq!(vbr3_burst().0, expect);
        assert_eq!(cac_round_trip(), (0, 0, 0, 0));
    }
}

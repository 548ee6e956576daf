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
//! * [`set_ignore_crc`][]: the AAL5 receiver takes a frame whose CRC-32 is wrong for a
//!   good one (I.363.5 §10.4's other checks, Length 0 and Length against the cell count
//!   and the sizes, still apply).

natm_core::planted_bug! {
    /// Planted bug: received AAL5 frames with a bad CRC-32 are delivered.
    IGNORE_CRC, set_ignore_crc, ignore_crc
}

#[cfg(all(test, feature = "mutants"))]
mod tests {
    use super::*;
    use crate::{Adapter, AdapterConfig, BufferId, Counters, RxVcConfig, Status, VecBuffers};
    use crate::{UBR_UNSHAPED_PCR, tests::T0};
    use natm_core::VcId;
    use natm_traffic::sched::VcSpec;
    use natm_wire::aal5::Segmenter;
    use natm_wire::cell::CELL_LEN;
    use std::vec::Vec;

    /// The status and bytes of each Rx completion.
    type Delivered = Vec<(Status, Vec<u8>)>;

    /// Receives on 1.32 a 1000-byte SDU with one payload bit flipped (cell 7 of 21), then
    /// the same SDU with cell 5 lost; gives what was delivered and the counters.
    fn receive() -> (Delivered, Counters, Vec<u8>) {
        let vc = VcId::uni(1, 32).unwrap();
        let mut a = Adapter::new(AdapterConfig::new(4, 4096)).unwrap();
        a.open_vc(
            10,
            vc,
            VcSpec::ubr(UBR_UNSHAPED_PCR, 1),
            RxVcConfig::aal5(4096),
        )
        .unwrap();
        let mut mem = VecBuffers::new(4, 4096);
        for id in 0..4 {
            a.post_rx_buffer(BufferId(id));
        }
        let sdu: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        let good: Vec<[u8; CELL_LEN]> = Segmenter::uni(vc, &sdu).unwrap().collect();
        assert_eq!(good.len(), 21);
        let mut flipped = good.clone();
        flipped[7][20] ^= 0x10;
        let mut lost = good.clone();
        lost.remove(5);
        a.handle_cells(T0, &flipped, &mut mem);
        a.handle_cells(T0, &lost, &mut mem);
        let mut got = Vec::new();
        while let Some(c) = a.poll_completion() {
            got.push((c.status, mem.buffer(c.buffer).unwrap()[..c.len].to_vec()));
        }
        let mut bad = sdu;
        bad[7 * 48 + 20 - 5] ^= 0x10;
        (got, a.counters(), bad)
    }

    // One test for every mutant of the crate: the flags are global outside unit tests.
    #[test]
    fn mutants_off_behave_and_on_misbehave() {
        set_ignore_crc(false);
        let (got, k, _) = receive();
        assert!(
            got.is_empty(),
            "a correct receiver delivers neither: {got:?}"
        );
        // The lost cell breaks the CRC too, which is checked first.
        assert_eq!((k.crc, k.length, k.frames_in), (2, 0, 0));

        set_ignore_crc(true);
        let (got, k, bad) = receive();
        set_ignore_crc(false);
        assert_eq!(got, [(Status::Ok, bad)], "the corrupted frame is delivered");
        assert_eq!(
            (k.crc, k.length, k.frames_in),
            (0, 1, 1),
            "length still checked"
        );

        let (got, k, _) = receive();
        assert!(got.is_empty() && k.crc == 2, "off again: {got:?}");
    }
}

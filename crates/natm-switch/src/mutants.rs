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
//! * [`set_reorder`][]: the switch swaps two cells of one connection. Each port counts
//!   the cells it queues; from the [`REORDER_EVERY`]th on, the first cell queued right
//!   behind a cell of its own connection (in that connection's UBR queue, or in a shared
//!   category FIFO when the cell before is of the same direction of the same
//!   cross-connect) swaps places with it, and the count starts again. A port with no
//!   backlog of two cells of one connection therefore never reorders. The count runs only
//!   while the flag is on and is per port, so a run stays reproducible.

/// Cells a port queues between two planted swaps (at least).
pub const REORDER_EVERY: u32 = 97;

natm_core::planted_bug! {
    /// Planted bug: output queues swap two cells of one connection now and then.
    REORDER, set_reorder, reorder
}

#[cfg(all(test, feature = "mutants"))]
mod tests {
    use super::*;
    use crate::hec::hec;
    use crate::{CrossConnect, PortConfig, PortId, Switch, SwitchConfig};
    use natm_core::Instant;
    use std::vec::Vec;

    /// A UNI cell on `vpi.vci`, PTI 0, whose payload starts with the sequence number `seq`.
    fn cell(vpi: u32, vci: u32, seq: u16) -> [u8; 53] {
        let mut c = [0u8; 53];
        let w = vpi << 20 | vci << 4;
        c[..4].copy_from_slice(&w.to_be_bytes());
        c[4] = hec(w);
        c[5..7].copy_from_slice(&seq.to_be_bytes());
        c
    }

    /// The VCI and sequence number of each cell port 2 sends.
    fn drain(sw: &mut Switch) -> Vec<(u32, u16)> {
        let mut out = [[0u8; 53]; 64];
        let mut all = Vec::new();
        loop {
            let n = sw.poll_transmit(Instant::ZERO, PortId(2), &mut out);
            for c in &out[..n] {
                let w = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
                all.push(((w >> 4) & 0xFFFF, u16::from_be_bytes([c[5], c[6]])));
            }
            if n < out.len() {
                return all;
            }
        }
    }

    fn switch(qos: &[(&str, &str, &str)]) -> Switch {
        let mut sw = Switch::new(SwitchConfig::default());
        for p in 1..=3 {
            sw.add_port(PortId(p), PortConfig::default()).unwrap();
        }
        for (a, b, q) in qos {
            let xc = CrossConnect::new(a.parse().unwrap(), b.parse().unwrap(), q.parse().unwrap());
            sw.connect(Instant::ZERO, &xc).unwrap();
        }
        sw
    }

    /// 200 cells of one UBR connection, all queued before port 2 sends.
    fn ubr_run() -> Vec<u16> {
        let mut sw = switch(&[("1:0.100", "2:0.200", "ubr")]);
        let cells: Vec<[u8; 53]> = (0..200).map(|k| cell(0, 100, k)).collect();
        sw.handle_cells(Instant::ZERO, PortId(1), &cells);
        drain(&mut sw).into_iter().map(|(_, s)| s).collect()
    }

    /// Two CBR connections into port 2's CBR FIFO: 100 cells alternating (no cell follows
    /// one of its own), then two of the first. Gives each connection's sequence.
    fn cbr_run() -> (Vec<u16>, Vec<u16>) {
        let mut sw = switch(&[
            ("1:0.100", "2:0.200", "cbr:pcr=10000"),
            ("3:0.100", "2:0.201", "cbr:pcr=10000"),
        ]);
        for k in 0..50 {
            sw.handle_cells(Instant::ZERO, PortId(1), &[cell(0, 100, k)]);
            sw.handle_cells(Instant::ZERO, PortId(3), &[cell(0, 100, k)]);
        }
        sw.handle_cells(
            Instant::ZERO,
            PortId(1),
            &[cell(0, 100, 50), cell(0, 100, 51)],
        );
        let out = drain(&mut sw);
        let of = |vci| out.iter().filter(|c| c.0 == vci).map(|c| c.1).collect();
        (of(200), of(201))
    }

    // One test for every mutant of the crate: the flags are global outside unit tests.
    #[test]
    fn mutants_off_behave_and_on_misbehave() {
        set_reorder(false);
        let in_order: Vec<u16> = (0..200).collect();
        assert_eq!(ubr_run(), in_order, "a correct switch keeps cell order");
        let (a, b) = cbr_run();
        assert_eq!((a, b), ((0..52).collect(), (0..50).collect()));

        set_reorder(true);
        let ubr = ubr_run();
        let cbr = cbr_run();
        set_reorder(false);
        // The 97th cell overtakes the 96th, then the 194th the 193rd.
        let mut want = in_order.clone();
        want.swap(95, 96);
        want.swap(192, 193);
        assert_eq!(ubr, want, "two cells of one VC come out swapped");
        // In the shared FIFO the count is reached at cell 97 but only the last cell,
        // queued right behind one of its own connection, can swap.
        let mut a: Vec<u16> = (0..52).collect();
        a.swap(50, 51);
        assert_eq!(cbr, (a, (0..50).collect()));

        assert_eq!(ubr_run(), in_order, "off again");
    }
}

//! Property tests of the receiver and the transmit queue together.

use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;

use natm_core::{Duration, HeaderFormat, Instant, VcId};
use natm_wire::aal5::pdu_len;
use natm_wire::cell::{CELL_LEN, Cell, HEADER_LEN, HecReceiver, HecVerdict};
use proptest::prelude::*;

use crate::{Event, Receiver, ReceiverConfig, TxConfig, TxQueue, VcConfig};

fn vc(i: usize) -> VcId {
    VcId::uni(1, 32 + i as u32).unwrap()
}

/// The cells of every SDU of every VC, interleaved by `order` (each entry picks the VC whose
/// next cell goes next; a VC with nothing left passes its turn on).
fn interleave(sdus: &[Vec<Vec<u8>>], order: &[usize]) -> Vec<[u8; CELL_LEN]> {
    let mut queues: Vec<TxQueue<&[u8]>> = (0..sdus.len())
        .map(|i| {
            let config = TxConfig {
                queue_max: 1000,
                ..TxConfig::aal5(65_535)
            };
            TxQueue::new(vc(i), HeaderFormat::Uni, config).unwrap()
        })
        .collect();
    for (q, list) in queues.iter_mut().zip(sdus) {
        for s in list {
            q.send(&s[..]).unwrap();
        }
    }
    let mut out = Vec::new();
    let mut cell = [0u8; CELL_LEN];
    let mut turn = order.iter().cycle();
    while queues.iter().any(|q| q.has_cells()) {
        let mut i = *turn.next().expect("cycle of a non-empty order") % queues.len();
        while !queues[i].has_cells() {
            i = (i + 1) % queues.len();
        }
        assert!(queues[i].next_cell(&mut cell));
        out.push(cell);
    }
    out
}

/// What a channel may do to a cell.
#[derive(Clone, Copy, Debug)]
enum Fault {
    Pass,
    Drop,
    Duplicate,
    /// Flip this bit of the cell (header included: the cell may land on another VC).
    Flip(u16),
    /// Let time pass by this many µs before the cell (drives reassembly timeouts).
    Wait(u16),
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        20 => Just(Fault::Pass),
        1 => Just(Fault::Drop),
        1 => Just(Fault::Duplicate),
        1 => (0u16..(CELL_LEN as u16 * 8)).prop_map(Fault::Flip),
        1 => (0u16..3000).prop_map(Fault::Wait),
    ]
}

fn sdu_lists(max_vcs: usize, max_len: usize) -> impl Strategy<Value = Vec<Vec<Vec<u8>>>> {
    proptest::collection::vec(
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..max_len), 0..6),
        1..max_vcs,
    )
}

/// Check the byte limits, then drain events into `got` when `drain` says so.
fn step_checks(
    rx: &mut Receiver,
    vcs: usize,
    drain: bool,
    got: &mut BTreeMap<VcId, Vec<Vec<u8>>>,
) -> Result<(), TestCaseError> {
    prop_assert!(rx.held_bytes() <= rx.config().buffer_limit);
    let mut sum = 0;
    for i in 0..vcs {
        let held = rx.vc_held_bytes(vc(i)).expect("open");
        prop_assert!(held <= LIMIT_VC);
        sum += held;
    }
    // Undrained F4 cells (a flipped VCI) are held receiver-wide only.
    prop_assert!(sum <= rx.held_bytes());
    if drain {
        while let Some(e) = rx.poll_event() {
            if let Event::Sdu { vc, sdu } = e {
                got.entry(vc).or_default().push(sdu);
            }
        }
        // What is left is partial PDUs, each counted once.
        let partial: usize = (0..vcs).map(|i| rx.vc_held_bytes(vc(i)).unwrap_or(0)).sum();
        prop_assert_eq!(rx.held_bytes(), partial);
    }
    Ok(())
}

const MAX_SDU: usize = 2000;
const LIMIT_VC: usize = 3 * pdu_len(MAX_SDU);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// (1) and (2): under loss, duplication, bit errors and timeouts, every SDU delivered on
    /// a VC is one that was sent on it, and the bytes held never exceed the limits. Cells
    /// pass the link's HEC receiver first, as they do in natm: the AAL does not check the
    /// HEC, and a header bit error that got past it would move a whole valid frame to another
    /// VC (this property found that when cells skipped the HEC).
    #[test]
    fn faulty_interleavings_deliver_only_sent_sdus(
        sdus in sdu_lists(8, 300),
        order in proptest::collection::vec(0usize..8, 1..20),
        faults in proptest::collection::vec(fault(), 1..64),
        drains in proptest::collection::vec(any::<bool>(), 1..16),
        receiver_limit in 48usize..4000,
    ) {
        let cells = interleave(&sdus, &order);
        let mut rx = Receiver::new(ReceiverConfig {
            buffer_limit: receiver_limit,
            event_queue_max: 8,
            ..ReceiverConfig::default()
        });
        for i in 0..sdus.len() {
            let config = VcConfig::aal5(MAX_SDU)
                .with_timeout(Some(Duration::from_millis(1)))
                .with_buffer_limit(LIMIT_VC);
            rx.open_vc(vc(i), config).unwrap();
        }
        let mut now = Instant::ZERO;
        let mut got = BTreeMap::new();
        let mut hec = HecReceiver::new();
        let mut faults = faults.iter().cycle();
        let mut drains = drains.iter().cycle();
        for c in &cells {
            let mut c = *c;
            let copies = match *faults.next().unwrap() {
                Fault::Pass => 1,
                Fault::Drop => 0,
                Fault::Duplicate => 2,
                Fault::Flip(bit) => {
                    c[usize::from(bit / 8)] ^= 1 << (bit % 8);
                    1
                }
                Fault::Wait(us) => {
                    now += Duration::from_micros(u64::from(us));
                    if *drains.next().unwrap() {
                        rx.handle_timeout(now);
                    }
                    1
                }
            };
            for _ in 0..copies {
                let mut c = c;
                if let HecVerdict::Discarded { .. } = hec.receive(&mut Cell::new_unchecked(&mut c[..])) {
                    continue;
                }
                rx.handle_cell(now, &c);
                step_checks(&mut rx, sdus.len(), *drains.next().unwrap(), &mut got)?;
            }
        }
        step_checks(&mut rx, sdus.len(), true, &mut got)?;
        for (v, delivered) in &got {
            let i = usize::from(v.vci.get()) - 32;
            for sdu in delivered {
                prop_assert!(sdus[i].contains(sdu), "{v}: delivered an SDU never sent");
            }
        }
    }

    /// (2) with arbitrary cells: any bytes at all, on open and unknown VCs.
    #[test]
    fn arbitrary_cells_stay_within_limits(
        cells in proptest::collection::vec((any::<[u8; 8]>(), 0u8..6, any::<bool>()), 0..400),
        receiver_limit in 0usize..2000,
        queue_max in 0usize..5,
    ) {
        let mut rx = Receiver::new(ReceiverConfig {
            buffer_limit: receiver_limit,
            event_queue_max: queue_max,
            ..ReceiverConfig::default()
        });
        rx.open_vc(vc(0), VcConfig::aal5(100).with_buffer_limit(200)).unwrap();
        rx.open_vc(vc(1), VcConfig::aal0().with_buffer_limit(106)).unwrap();
        let mut now = Instant::ZERO;
        for (i, (bytes, which, drain)) in cells.iter().enumerate() {
            // A header on VC 0 or 1, F4 (VCI 3), unknown, or raw bytes; then noise.
            let mut c = [bytes[7]; CELL_LEN];
            c[..4].copy_from_slice(match which {
                0 => &[0x00, 0x10, 0x02, 0x00],
                1 => &[0x00, 0x10, 0x02, 0x10],
                2 => &[0x00, 0x10, 0x00, 0x30],
                3 => &[0x00, 0x10, 0x09, 0x00],
                _ => &bytes[..4],
            });
            c[3] |= bytes[4] & 0x0F; // any PTI and CLP
            c[HEADER_LEN..HEADER_LEN + 3].copy_from_slice(&bytes[5..8]);
            now += Duration::from_micros(u64::from(bytes[5]) * 100);
            if i % 7 == 0 {
                rx.handle_timeout(now);
            }
            rx.handle_cell(now, &c);
            prop_assert!(rx.held_bytes() <= receiver_limit);
            prop_assert!(rx.vc_held_bytes(vc(0)).unwrap() <= 200);
            prop_assert!(rx.vc_held_bytes(vc(1)).unwrap() <= 106);
            prop_assert!(rx.pending_events() <= queue_max);
            if *drain {
                while rx.poll_event().is_some() {}
                prop_assert_eq!(rx.vc_held_bytes(vc(1)), Some(0));
                prop_assert_eq!(rx.held_bytes(), rx.vc_held_bytes(vc(0)).unwrap());
            }
        }
    }

    /// (3) clean streams: every SDU arrives byte-exact, in order, on its VC.
    #[test]
    fn clean_interleavings_deliver_everything_in_order(
        sdus in sdu_lists(12, 600),
        order in proptest::collection::vec(0usize..12, 1..30),
    ) {
        let cells = interleave(&sdus, &order);
        let mut rx = Receiver::new(ReceiverConfig::default());
        for i in 0..sdus.len() {
            rx.open_vc(vc(i), VcConfig::aal5(MAX_SDU)).unwrap();
        }
        let mut got: BTreeMap<VcId, Vec<Vec<u8>>> = BTreeMap::new();
        for c in &cells {
            rx.handle_cell(Instant::ZERO, c);
            step_checks(&mut rx, sdus.len(), true, &mut got)?;
        }
        for (i, sent) in sdus.iter().enumerate() {
            prop_assert_eq!(got.remove(&vc(i)).unwrap_or_default(), sent.clone());
            let c = rx.vc_counters(vc(i)).unwrap();
            prop_assert_eq!(c.delivered, sent.len() as u64);
            prop_assert_eq!(c.crc_errors + c.length_errors + c.oversize + c.timeouts, 0);
        }
        prop_assert!(got.is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Round trip through a transmit queue and a receiver, SDUs of 1..=65535 bytes.
    #[test]
    fn round_trip_any_size(len in 1usize..=65_535, seed in any::<u8>(), max_sdu in 1usize..=65_535) {
        let sdu: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect();
        let v = vc(5);
        let mut tx: TxQueue<Vec<u8>> = TxQueue::new(v, HeaderFormat::Uni, TxConfig::aal5(65_535)).unwrap();
        let mut rx = Receiver::new(ReceiverConfig::default());
        rx.open_vc(v, VcConfig::aal5(max_sdu)).unwrap();
        tx.send(sdu.clone()).unwrap();
        let mut cell = [0u8; CELL_LEN];
        while tx.next_cell(&mut cell) {
            rx.handle_cell(Instant::ZERO, &cell);
        }
        prop_assert_eq!(tx.poll_completion(), Some(sdu.clone()));
        let e = rx.poll_event();
        if len <= max_sdu {
            prop_assert_eq!(e, Some(Event::Sdu { vc: v, sdu }));
        } else {
            let oversize = matches!(e, Some(Event::Discarded { .. }));
            prop_assert!(oversize);
            prop_assert_eq!(rx.vc_counters(v).unwrap().oversize, 1);
        }
        prop_assert_eq!(rx.poll_event(), None);
        prop_assert_eq!(rx.held_bytes(), 0);
    }
}

#[test]
fn interleave_keeps_per_vc_order() {
    let sdus = vec![vec![vec![1u8; 100]], vec![vec![2u8; 50], vec![3u8; 10]]];
    let cells = interleave(&sdus, &[0, 1]);
    assert_eq!(cells.len(), 3 + 2 + 1);
    // Round robin: VC 0, VC 1, VC 0, VC 1, VC 0, VC 1.
    assert_eq!(cells[0][3] >> 4, cells[2][3] >> 4);
    assert_ne!(cells[0][2..4], cells[1][2..4]);
}

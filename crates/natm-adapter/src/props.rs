//! Property tests: end to end through two adapters, with faults, buffer ownership, and
//! arbitrary bytes.

use std::collections::BTreeMap;
use std::vec::Vec;

use natm_core::{Duration, Instant, LineRate};
use natm_wire::cell::CELL_LEN;
use proptest::prelude::*;

use crate::tests::{Checked, T0, UBR, config, sdu, vc};
use crate::*;

pub(crate) const VCS: u32 = 4;
pub(crate) const BUFFERS: u32 = 64;
pub(crate) const SIZE: usize = 3000;

fn pair_adapter(link: LineRate) -> Adapter {
    let mut a = Adapter::new(AdapterConfig {
        link,
        buffers: BUFFERS,
        rx_buffer_size: SIZE,
        ..config()
    })
    .unwrap();
    let spec = match link {
        LineRate::Unlimited => UBR,
        LineRate::Phy(_) | LineRate::CellsPerSec(_) => natm_traffic::sched::VcSpec::ubr(100_000, 1),
    };
    for i in 0..VCS {
        a.open_vc(100 + i, vc(i), spec, RxVcConfig::aal5(SIZE))
            .unwrap();
    }
    a
}

/// What a run delivered, per VC handle, in order.
type Delivered = BTreeMap<u32, Vec<Vec<u8>>>;

/// Send `sdus` (VC index, length) from one adapter to another; `mangle` may change the
/// cell stream between them. Returns what was sent and what was delivered per handle.
pub(crate) fn run(
    sdus: &[(u32, usize)],
    link: LineRate,
    batch: usize,
    mut mangle: impl FnMut(Vec<[u8; CELL_LEN]>) -> Vec<[u8; CELL_LEN]>,
) -> (Delivered, Delivered) {
    let mut tx = pair_adapter(link);
    let mut rx = pair_adapter(link);
    let mut tm = Checked::new(BUFFERS, SIZE);
    let mut rm = Checked::new(BUFFERS, SIZE);
    // Buffers 0..32 transmit, 32..64 receive.
    let mut free_tx: Vec<u32> = (0..32).collect();
    for id in 32..BUFFERS {
        rm.rx.insert(id);
        rx.post_rx_buffer(BufferId(id));
    }
    let mut sent = Delivered::new();
    let mut got = Delivered::new();
    let mut pending = sdus.iter().enumerate();
    let mut next = pending.next();
    let mut now = T0;
    let mut out = vec![[0u8; CELL_LEN]; batch];
    for _ in 0..1_000_000 {
        // Post what fits.
        while let Some((k, &(v, len))) = next {
            let Some(id) = free_tx.pop() else { break };
            let data = sdu(len, k as u32);
            tm.mem.buffer_mut(BufferId(id)).unwrap()[..len].copy_from_slice(&data);
            tm.tx.insert(id);
            tx.post_tx(now, BufferId(id), len, 100 + v);
            sent.entry(100 + v).or_default().push(data);
            next = pending.next();
        }
        let n = tx.poll_transmit(now, &tm, &mut out);
        let cells = mangle(out[..n].to_vec());
        rx.handle_cells(now, &cells, &mut rm);
        while let Some(c) = tx.poll_completion() {
            assert_eq!((c.direction, c.status), (Direction::Tx, Status::Ok));
            tm.returned(&c);
            free_tx.push(c.buffer.0);
        }
        while let Some(c) = rx.poll_completion() {
            assert_eq!((c.direction, c.status), (Direction::Rx, Status::Ok));
            let data = rm.mem.buffer(c.buffer).unwrap()[..c.len].to_vec();
            got.entry(c.handle.unwrap()).or_default().push(data);
            rm.returned(&c);
            rm.rx.insert(c.buffer.0);
            rx.post_rx_buffer(c.buffer);
        }
        if n == 0 {
            match tx.poll_timeout() {
                Some(t) => now = t.max(now),
                None if next.is_none() => break,
                None => {}
            }
        }
    }
    assert_eq!(tx.tx_queued(), 0, "everything was sent");
    (sent, got)
}

/// A xorshift64 generator from `seed`, for the faults the properties inject.
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

/// `cells` with faults, in thousandths: each lost with odds `loss`, one bit flipped with
/// odds `flip`, sent twice with odds `dup`.
pub(crate) fn faults(
    cells: Vec<[u8; CELL_LEN]>,
    rand: &mut impl FnMut() -> u64,
    (loss, flip, dup): (u32, u32, u32),
) -> Vec<[u8; CELL_LEN]> {
    let mut out = Vec::new();
    for mut c in cells {
        if rand() % 1000 < u64::from(loss) {
            continue;
        }
        if rand() % 1000 < u64::from(flip) {
            let bit = (rand() % (CELL_LEN as u64 * 8)) as usize;
            c[bit / 8] ^= 0x80 >> (bit % 8);
        }
        out.push(c);
        if rand() % 1000 < u64::from(dup) {
            out.push(c);
        }
    }
    out
}

pub(crate) fn sdu_list() -> impl Strategy<Value = Vec<(u32, usize)>> {
    proptest::collection::vec(
        (
            0..VCS,
            prop_oneof![1usize..100, 1usize..SIZE, Just(SIZE), Just(40), Just(41)],
        ),
        0..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// (1) SDUs on random VCs come out identical and in order per VC.
    #[test]
    fn sdus_arrive_whole_and_in_order(sdus in sdu_list(), batch in 1usize..80, rated in any::<bool>()) {
        let link = if rated { LineRate::cells(1_000_000).unwrap() } else { LineRate::Unlimited };
        let (sent, got) = run(&sdus, link, batch, |c| c);
        prop_assert_eq!(sent, got);
    }

    /// (2) With loss, single-bit flips anywhere and duplication, whatever is delivered on a
    /// VC was sent on that VC. (Not "in order, once": a duplicated one-cell SDU is a valid
    /// frame twice, which AAL5 cannot tell.)
    #[test]
    fn faults_never_forge_an_sdu(
        sdus in sdu_list(),
        seed in any::<u64>(),
        loss in 0u32..100,
        flip in 0u32..100,
        dup in 0u32..100,
    ) {
        let mut rand = xorshift(seed);
        let (sent, got) = run(&sdus, LineRate::Unlimited, 16, |cells| {
            faults(cells, &mut rand, (loss, flip, dup))
        });
        for (h, sdus) in &got {
            let from = sent.get(h).map(Vec::as_slice).unwrap_or_default();
            for s in sdus {
                prop_assert!(from.contains(s), "an SDU never sent on handle {} was delivered", h);
            }
        }
    }

    /// (4) Receiving a frame's middle cells in one pass (`rx_run`) changes nothing: the
    /// same completions with the same bytes, the same counters, as cell by cell, with loss,
    /// flips, duplicates, frames too long for the VC, any batch sizes, reassembly
    /// timeouts passing between batches, and the HEC checked or not.
    #[test]
    fn receiving_in_runs_is_receiving_cell_by_cell(
        sdus in sdu_list(),
        seed in any::<u64>(),
        loss in 0u32..50,
        flip in 0u32..50,
        dup in 0u32..50,
        batches in proptest::collection::vec((1usize..200, 0u64..3_000), 1..40),
        limit in prop_oneof![Just(SIZE), 1usize..SIZE],
        hec in prop_oneof![Just(HecCheck::Correct), Just(HecCheck::Detect), Just(HecCheck::Off)],
    ) {
        let mut rand = xorshift(seed);
        // The cells of all the SDUs, faults applied (none of them received by `run`).
        let mut cells = Vec::new();
        run(&sdus, LineRate::Unlimited, 64, |batch| {
            cells.extend(faults(batch, &mut rand, (loss, flip, dup)));
            Vec::new()
        });
        let receiver = || {
            let mut a = Adapter::new(AdapterConfig {
                buffers: BUFFERS,
                rx_buffer_size: SIZE,
                reassembly_timeout: Some(Duration::from_micros(500)),
                hec,
                ..config()
            })
            .unwrap();
            for i in 0..VCS {
                a.open_vc(100 + i, vc(i), UBR, RxVcConfig::aal5(limit)).unwrap();
            }
            for id in 0..BUFFERS {
                a.post_rx_buffer(BufferId(id));
            }
            a
        };
        let (mut fast, mut slow) = (receiver(), receiver());
        let (mut fm, mut sm) = (VecBuffers::new(BUFFERS, SIZE), VecBuffers::new(BUFFERS, SIZE));
        let mut now = T0;
        let mut rest = cells.as_slice();
        let mut batch = batches.iter().cycle();
        while !rest.is_empty() {
            let &(n, us) = batch.next().unwrap();
            let (this, tail) = rest.split_at(n.min(rest.len()));
            now += Duration::from_micros(us);
            fast.handle_timeout(now);
            slow.handle_timeout(now);
            fast.handle_cells(now, this, &mut fm);
            slow.handle_cells_one_by_one(now, this, &mut sm);
            loop {
                let (f, s) = (fast.poll_completion(), slow.poll_completion());
                prop_assert_eq!(f, s);
                let Some(c) = f else { break };
                if c.status == Status::Ok {
                    prop_assert_eq!(&fm.buffer(c.buffer).unwrap()[..c.len], &sm.buffer(c.buffer).unwrap()[..c.len]);
                }
                fast.post_rx_buffer(c.buffer);
                slow.post_rx_buffer(c.buffer);
            }
            rest = tail;
        }
        prop_assert_eq!(fast.counters(), slow.counters());
        for i in 0..VCS {
            prop_assert_eq!(fast.vc_counters(100 + i), slow.vc_counters(100 + i));
        }
    }

    /// (3) Ownership: random operations never read or write a buffer the adapter does not
    /// hold (the checked memory asserts it), and every buffer posted comes back exactly
    /// once or is still held.
    #[test]
    fn buffers_come_back_exactly_once(ops in proptest::collection::vec((0u8..9, any::<u16>(), any::<u16>()), 0..300)) {
        let mut a = Adapter::new(AdapterConfig {
            buffers: 16,
            rx_buffer_size: 500,
            max_tx_queued: 6,
            ..config()
        })
        .unwrap();
        let mut peer = pair_adapter(LineRate::Unlimited);
        let mut pm = Checked::new(BUFFERS, SIZE);
        let mut m = Checked::new(16, 500);
        let mut open = [false; 3];
        let mut now = T0;
        let mut cells = vec![[0u8; CELL_LEN]; 24];
        let mut returned = [0u32; 16];
        let mut given = [0u32; 16];
        for (op, x, y) in ops {
            let id = u32::from(x % 18); // 16 and 17 do not exist
            match op {
                0 => {
                    let h = u32::from(y % 3);
                    if !open[h as usize] {
                        a.open_vc(100 + h, vc(h), UBR, RxVcConfig::aal5(usize::from(y % 600) + 1)).unwrap();
                        open[h as usize] = true;
                    }
                }
                1 => {
                    let h = u32::from(y % 3);
                    open[h as usize] = false;
                    let _ = a.close_vc(100 + h);
                }
                2 => {
                    // The test only marks a buffer given when the adapter may take it.
                    if id < 16 && !a.holds(BufferId(id)) {
                        m.tx.insert(id);
                        given[id as usize] += 1;
                    }
                    a.post_tx(now, BufferId(id), usize::from(y % 700), 100 + u32::from(x % 4));
                }
                3 => {
                    if id < 16 && !a.holds(BufferId(id)) {
                        m.rx.insert(id);
                        given[id as usize] += 1;
                    }
                    a.post_rx_buffer(BufferId(id));
                }
                4 => {
                    let n = a.poll_transmit(now, &m, &mut cells[..usize::from(y % 24)]);
                    // Loop our own cells back (their VCs are ours), sometimes cut short.
                    let keep = n - usize::from(x) % (n + 1) / 4;
                    a.handle_cells(now, &cells[..keep], &mut m);
                }
                5 => {
                    // Cells from a peer on the same VCs.
                    let len = usize::from(y % 800) + 1;
                    pm.tx.insert(0);
                    peer.post_tx(now, BufferId(0), len, 100 + u32::from(x % 3));
                    let mut burst = vec![[0u8; CELL_LEN]; 32];
                    loop {
                        let n = peer.poll_transmit(now, &pm, &mut burst);
                        if n == 0 {
                            break;
                        }
                        a.handle_cells(now, &burst[..n], &mut m);
                    }
                    while let Some(c) = peer.poll_completion() {
                        pm.returned(&c);
                    }
                }
                6 => {
                    now += Duration::from_millis(u64::from(y % 20));
                    a.handle_timeout(now);
                }
                7 => a.reclaim_rx_buffers(),
                _ => {}
            }
            while let Some(c) = a.poll_completion() {
                m.returned(&c);
                if !matches!(c.status, Status::UnknownBuffer | Status::NotOwned) {
                    returned[c.buffer.0 as usize] += 1;
                    prop_assert!(!a.holds(c.buffer));
                }
            }
            for i in 0..16 {
                prop_assert_eq!(a.holds(BufferId(i)), given[i as usize] > returned[i as usize]);
            }
        }
        // Close everything and reclaim: all comes back.
        for h in 0..3 {
            let _ = a.close_vc(100 + h);
        }
        a.reclaim_rx_buffers();
        while let Some(c) = a.poll_completion() {
            m.returned(&c);
            if !matches!(c.status, Status::UnknownBuffer | Status::NotOwned) {
                returned[c.buffer.0 as usize] += 1;
            }
        }
        prop_assert_eq!(given, returned);
        prop_assert!(m.tx.is_empty() && m.rx.is_empty());
    }

    /// (4) Arbitrary cell bytes never panic, whatever the HEC mode, and the counters add up.
    #[test]
    fn arbitrary_cells_never_panic(
        raw in proptest::collection::vec(any::<u8>(), 0..(CELL_LEN * 64)),
        hec in 0u8..3,
        nni in any::<bool>(),
        steps in proptest::collection::vec(0u64..5_000_000, 1..8),
    ) {
        let mut a = Adapter::new(AdapterConfig {
            hec: [HecCheck::Off, HecCheck::Detect, HecCheck::Correct][usize::from(hec)],
            format: if nni { natm_core::HeaderFormat::Nni } else { natm_core::HeaderFormat::Uni },
            rx_buffer_size: 100,
            event_queue_max: 8,
            ..config()
        })
        .unwrap();
        // Every VC of VPI 0/1 with a small VCI open, so random headers often hit one.
        for vci in 5..40u32 {
            for vpi in 0..2u32 {
                if vci != 3 && vci != 4 {
                    let v = natm_core::VcId::uni(vpi, vci).unwrap();
                    a.open_vc(vpi * 100 + vci, v, UBR, RxVcConfig::aal5(usize::from(vci as u16 * 7))).unwrap();
                }
            }
        }
        let mut m = Checked::new(16, 100);
        for id in 0..8 {
            m.rx.insert(id);
            a.post_rx_buffer(BufferId(id));
        }
        let cells: Vec<[u8; CELL_LEN]> = raw
            .chunks_exact(CELL_LEN)
            .map(|c| c.try_into().unwrap())
            .collect();
        let mut now = Instant::ZERO;
        for (chunk, step) in cells.chunks(cells.len() / steps.len() + 1).zip(&steps) {
            now += Duration::from_nanos(*step);
            a.handle_cells(now, chunk, &mut m);
            a.handle_timeout(now);
            while let Some(c) = a.poll_completion() {
                m.returned(&c);
                m.rx.insert(c.buffer.0);
                a.post_rx_buffer(c.buffer);
            }
            while a.poll_event().is_some() {}
        }
        let k = a.counters();
        prop_assert_eq!(k.cells_in, cells.len() as u64);
        prop_assert!(k.hec + k.unknown_vc + k.unassigned + k.oam + k.policed + k.reserved_pti <= k.cells_in);
    }
}

/// A contract the unlimited link shapes: CBR, nrt-VBR or UBR with a PCR.
fn shaped_spec() -> impl Strategy<Value = natm_traffic::sched::VcSpec> {
    use natm_traffic::sched::VcSpec;
    (0u8..3, 1_000u32..200_000, 1u32..=100, 1u32..64).prop_map(|(kind, pcr, scr_pct, mbs)| {
        match kind {
            0 => VcSpec::cbr(pcr),
            1 => VcSpec::nrt_vbr(pcr, (pcr / 100 * scr_pct).max(1), mbs),
            _ => VcSpec::ubr(pcr, 1),
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Two shaped VCs and an unshaped UBR VC, all backlogged, on an unlimited link driven
    /// at arbitrary (often late) instants: every shaped VC's cells pass a UPC for its
    /// contract with CDVT = the shaper's tolerance, at the instants they left, and the
    /// unshaped VC fills every batch.
    #[test]
    fn shaped_vcs_conform_and_unshaped_ubr_gets_the_rest(
        specs in proptest::collection::vec(shaped_spec(), 2),
        cdv_us in prop_oneof![Just(0u64), 1u64..2_000],
        steps in proptest::collection::vec((0u64..300, any::<bool>()), 200..400),
        batch in 1usize..20,
    ) {
        use natm_traffic::policer::{Contract, Policer, Verdict};
        let cdv = Duration::from_micros(cdv_us);
        let mut a = Adapter::new(AdapterConfig {
            shaper_cdv: cdv,
            buffers: BUFFERS,
            rx_buffer_size: SIZE,
            max_tx_queued: BUFFERS as usize,
            ..config()
        })
        .unwrap();
        let mut m = Checked::new(BUFFERS, SIZE);
        let mut upcs = Vec::new();
        for (i, spec) in specs.iter().enumerate() {
            a.open_vc(100 + i as u32, vc(i as u32), *spec, RxVcConfig::aal5(SIZE)).unwrap();
            let contract = Contract { cdvt: cdv, ..spec.contract() };
            upcs.push(Policer::new(spec.category.conformance(), &contract).unwrap());
        }
        a.open_vc(102, vc(2), UBR, RxVcConfig::aal5(SIZE)).unwrap();
        // Each VC keeps 16 SDUs queued, re-posted as they complete.
        let post = |a: &mut Adapter, m: &mut Checked, id: u32, now: Instant| {
            let data = sdu(SIZE, id);
            m.mem.buffer_mut(BufferId(id)).unwrap().copy_from_slice(&data);
            m.tx.insert(id);
            a.post_tx(now, BufferId(id), SIZE, 100 + id / 16);
        };
        for id in 0..48 {
            post(&mut a, &mut m, id, T0);
        }
        let mut out = vec![[0u8; CELL_LEN]; batch];
        let mut now = T0;
        for (late_us, at_timeout) in steps {
            // Either at the adapter's timeout plus some lateness, or at an arbitrary step.
            let next = if at_timeout {
                a.poll_timeout().unwrap_or(now)
            } else {
                now
            };
            now = next.max(now) + Duration::from_micros(late_us);
            let n = a.poll_transmit(now, &m, &mut out);
            prop_assert_eq!(n, batch, "the unshaped VC is always backlogged");
            for c in &out[..n] {
                let v = (u16::from(c[2]) << 4 | u16::from(c[3]) >> 4) - 32;
                if let Some(upc) = upcs.get_mut(usize::from(v)) {
                    prop_assert_eq!(upc.police(now, false), Verdict::Pass, "VC {} at {:?}", v, now);
                }
            }
            while let Some(c) = a.poll_completion() {
                m.returned(&c);
                prop_assert_eq!(c.status, Status::Ok);
                post(&mut a, &mut m, c.buffer.0, now);
            }
        }
        // The shaped VCs did send (their PCR is at least 1,000 cells/s and time passed).
        for upc in &upcs {
            prop_assert!(upc.counters().pass > 0);
        }
    }
}

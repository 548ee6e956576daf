//! Traffic management through the switch: UPC, strict priority, UBR weighted round robin,
//! queue limits, EPD/PPD, output pacing.

mod common;

use common::{cell, drain, drain_at, header, qos, switch_with, take, two_ports};
use natm_adapter::{Reassembler, Reassembly};
use natm_core::{Duration, Instant, LineRate, VcId};
use natm_switch::{Category, CrossConnect, Endpoint, PortConfig, PortId, Upc};
use natm_wire::aal5::Segmenter;

const T0: Instant = Instant::ZERO;

/// A source at twice PCR 1000 cells/s (one cell per 500 µs) on a CBR.1 contract.
fn police_at_twice_pcr(upc: Upc) -> (Vec<[u8; 53]>, natm_switch::PortCounters) {
    let mut sw = two_ports();
    let mut xc = CrossConnect::new(
        Endpoint::vc(1, 0, 40),
        Endpoint::vc(2, 0, 41),
        qos("cbr:max_pcr=1000"),
    );
    xc.upc = upc;
    sw.connect(T0, &xc).expect("admitted");
    let mut out = Vec::new();
    for k in 0..1000u64 {
        let now = Instant::from_nanos(k * 500_000);
        sw.handle_cell(now, PortId(1), &cell(0, 40, 0, false, k as u8));
        out.extend(drain_at(&mut sw, now, 2));
    }
    (out, sw.port_counters(PortId(1)).expect("port"))
}

#[test]
fn upc_discard_at_twice_pcr_drops_exactly_half() {
    let (out, c) = police_at_twice_pcr(Upc::Discard);
    assert_eq!(out.len(), 500);
    assert_eq!(c.policed, 500);
    assert_eq!(c.tagged, 0);
    // The conforming cells are the even ones, unchanged.
    for (i, o) in out.iter().enumerate() {
        assert_eq!(header(o), (0, 41, 0, false));
        assert_eq!(o[5], (2 * i) as u8);
    }
}

#[test]
fn upc_tag_at_twice_pcr_tags_exactly_half() {
    let (out, c) = police_at_twice_pcr(Upc::Tag);
    assert_eq!(out.len(), 1000);
    assert_eq!(c.policed, 0);
    assert_eq!(c.tagged, 500);
    for (i, o) in out.iter().enumerate() {
        assert_eq!(header(o), (0, 41, 0, i % 2 == 1), "cell {i}");
    }
}

#[test]
fn upc_off_passes_everything() {
    let (out, c) = police_at_twice_pcr(Upc::Off);
    assert_eq!(out.len(), 1000);
    assert_eq!((c.policed, c.tagged), (0, 0));
}

/// A source at exactly its PCR of 1000 cells/s whose cells arrive ten at a time, every
/// 10 ms (as a batching link delivers them): policed at the port's CDVT.
fn batched_at_pcr(port_cdvt: Duration) -> natm_switch::PortCounters {
    let input = PortConfig {
        cdvt: port_cdvt,
        ..PortConfig::default()
    };
    let mut sw = switch_with(&[(1, input), (2, PortConfig::default())]);
    let mut xc = CrossConnect::new(
        Endpoint::vc(1, 0, 40),
        Endpoint::vc(2, 0, 41),
        qos("cbr:max_pcr=1000"),
    );
    xc.upc = Upc::Discard;
    sw.connect(T0, &xc).expect("admitted");
    for batch in 0..100u64 {
        let now = Instant::from_nanos(batch * 10_000_000);
        for k in 0..10u8 {
            sw.handle_cell(now, PortId(1), &cell(0, 40, 0, false, k));
        }
        drain_at(&mut sw, now, 2);
    }
    sw.port_counters(PortId(1)).expect("port")
}

#[test]
fn a_port_cdvt_passes_a_conforming_source_that_arrives_in_batches() {
    // Nine cell times of jitter tolerated: every batch passes whole.
    assert_eq!(batched_at_pcr(Duration::from_millis(9)).policed, 0);
    // At CDVT 0 the same conforming source loses nine cells of every ten.
    assert_eq!(batched_at_pcr(Duration::ZERO).policed, 900);
}

#[test]
fn strict_priority_under_overload() {
    let mut sw = two_ports();
    let specs = [
        (40, qos("cbr:max_pcr=1000"), None),
        (
            41,
            qos("vbr:pcr=1000,scr=500,mbs=10"),
            Some(Category::RtVbr),
        ),
        (42, qos("vbr:pcr=1000,scr=500,mbs=10"), None),
        (43, qos("ubr"), None),
    ];
    for (vci, q, cat) in specs {
        let mut xc = CrossConnect::new(Endpoint::vc(1, 0, vci), Endpoint::vc(2, 0, vci), q);
        xc.category = cat;
        sw.connect(T0, &xc).expect("admitted");
    }
    // Four cells in, two out per round: only CBR and rt-VBR get through.
    let mut got = [0usize; 4];
    for _ in 0..100 {
        for vci in 40..44 {
            sw.handle_cell(T0, PortId(1), &cell(0, vci, 0, false, 0));
        }
        for o in take(&mut sw, 2, 2) {
            got[(header(&o).1 - 40) as usize] += 1;
        }
    }
    assert_eq!(got, [100, 100, 0, 0]);
    assert_eq!(
        sw.port_counters(PortId(2)).expect("port").queue_depth,
        [0, 0, 100, 100]
    );
    // Then nrt-VBR drains before UBR.
    let rest: Vec<u32> = take(&mut sw, 2, 150).iter().map(|o| header(o).1).collect();
    assert_eq!(rest[..100], [42; 100]);
    assert_eq!(rest[100..], [43; 50]);
}

#[test]
fn ubr_weighted_round_robin_shares_exact() {
    let mut sw = two_ports();
    for (vci, weight) in [(50, 1), (51, 2), (52, 3)] {
        let mut xc =
            CrossConnect::new(Endpoint::vc(1, 0, vci), Endpoint::vc(2, 0, vci), qos("ubr"));
        xc.weight = weight;
        sw.connect(T0, &xc).expect("admitted");
    }
    for _ in 0..600 {
        for vci in 50..53 {
            sw.handle_cell(T0, PortId(1), &cell(0, vci, 0, false, 0));
        }
    }
    let out: Vec<u32> = take(&mut sw, 2, 600).iter().map(|o| header(o).1).collect();
    let share = |v| out.iter().filter(|&&x| x == v).count();
    assert_eq!((share(50), share(51), share(52)), (100, 200, 300));
    assert_eq!(
        out[..6],
        [50, 51, 51, 52, 52, 52],
        "one turn each, weight cells per turn"
    );
}

#[test]
fn queue_limit_tail_drops_and_counts() {
    let config = PortConfig {
        queue_cells: [4, 4, 4, 10],
        ..PortConfig::default()
    };
    let mut sw = switch_with(&[(1, PortConfig::default()), (2, config)]);
    let xc = CrossConnect::new(Endpoint::vc(1, 0, 40), Endpoint::vc(2, 0, 41), qos("ubr"));
    let id = sw.connect(T0, &xc).expect("admitted");
    for k in 0..25 {
        sw.handle_cell(T0, PortId(1), &cell(0, 40, 0, false, k));
    }
    let c = sw.port_counters(PortId(2)).expect("port");
    assert_eq!((c.queue_full, c.queue_depth[3]), (15, 10));
    let out = drain(&mut sw, 2);
    assert_eq!(out.len(), 10);
    assert!(
        out.iter().enumerate().all(|(i, o)| o[5] == i as u8),
        "the first 10, in order"
    );
    let (_, xcc) = sw.connection(id).expect("live");
    assert_eq!(
        (
            xcc.a_to_b.cells_in,
            xcc.a_to_b.cells_out,
            xcc.a_to_b.dropped
        ),
        (25, 10, 15)
    );
}

/// The cells of `sdu` on VCI `vci`.
fn frame(vci: u32, sdu: &[u8]) -> Vec<[u8; 53]> {
    let mut s = Segmenter::uni(VcId::uni(0, vci).expect("vc"), sdu).expect("segments");
    let mut cells = Vec::new();
    let mut c = [0u8; 53];
    while s.next_cell(&mut c) {
        cells.push(c);
    }
    cells
}

/// Reassembles the cells of VCI `vci` in `out`: the SDUs delivered and the PDUs discarded.
fn reassemble(out: &[[u8; 53]], vci: u32) -> (Vec<Vec<u8>>, usize) {
    let mut r = Reassembler::new(VcId::uni(0, vci).expect("vc"), 2000).expect("max_sdu");
    let mut sdus = Vec::new();
    let mut bad = 0;
    for o in out.iter().filter(|o| header(o).1 == vci) {
        match r.push_cell(o) {
            Reassembly::Incomplete => {}
            Reassembly::Complete(_) => sdus.push(r.sdu().to_vec()),
            Reassembly::Discarded(_) => bad += 1,
        }
    }
    (sdus, bad)
}

#[test]
fn epd_drops_whole_frames_and_ppd_keeps_the_last_cell() {
    // UBR limit 20 cells, EPD at 50%: new frames are refused from 10 queued cells on.
    let config = PortConfig {
        queue_cells: [4, 4, 4, 20],
        epd_percent: 50,
        ..PortConfig::default()
    };
    let mut sw = switch_with(&[(1, PortConfig::default()), (2, config)]);
    for vci in [40, 41] {
        let xc = CrossConnect::new(
            Endpoint::vc(1, 0, vci),
            Endpoint::vc(2, 0, vci),
            qos("ubr,aal5"),
        );
        assert!(xc.aal5, "AAL5 from the QoS");
        sw.connect(T0, &xc).expect("admitted");
    }
    let sdu = |n: usize, x: u8| -> Vec<u8> { (0..n).map(|i| (i as u8) ^ x).collect() };
    let (long, short) = (sdu(1100, 1), sdu(360, 2));
    let long_cells = frame(40, &long); // 24 cells
    let short_cells = frame(41, &short); // 8 cells
    assert_eq!((long_cells.len(), short_cells.len()), (24, 8));
    let mut out = Vec::new();
    let send = |sw: &mut natm_switch::Switch, cells: &[[u8; 53]]| {
        for c in cells {
            sw.handle_cell(T0, PortId(1), c);
        }
    };
    // VC 40's frame starts on an empty queue: accepted.
    send(&mut sw, &long_cells[..12]);
    // VC 41's frame starts with 12 queued (≥ 10): refused whole by EPD.
    send(&mut sw, &short_cells);
    // VC 40 fills the queue: cell 21 finds it full, cell 22 is dropped by PPD.
    send(&mut sw, &long_cells[12..22]);
    out.extend(take(&mut sw, 2, 5));
    // Cell 23 is dropped by PPD; the last cell finds room and is kept.
    send(&mut sw, &long_cells[22..]);
    let c = sw.port_counters(PortId(2)).expect("port");
    assert_eq!((c.epd, c.queue_full, c.ppd), (8, 1, 2));
    out.extend(drain(&mut sw, 2));
    assert_eq!(out.len(), 21);
    // Both VCs then send a frame on an empty queue: both arrive whole.
    let (long2, short2) = (sdu(1100, 3), sdu(360, 4));
    for c in frame(40, &long2).iter().chain(&frame(41, &short2)) {
        sw.handle_cell(T0, PortId(1), c);
        out.extend(drain(&mut sw, 2));
    }
    // The receiver gets only whole, correct frames: the PPD remnant is caught at its
    // kept last cell and does not spoil the next frame.
    assert_eq!(reassemble(&out, 40), (vec![long2], 1));
    assert_eq!(reassemble(&out, 41), (vec![short2], 0));
}

#[test]
fn rated_port_paces_exactly_in_virtual_time() {
    // 3 cells/s: slots at 0, ⌈10⁹/3⌉ = 333,333,334 ns, 666,666,667 ns, 1 s, …
    let config = PortConfig {
        rate: LineRate::cells(3).unwrap(),
        ..PortConfig::default()
    };
    let mut sw = switch_with(&[(1, PortConfig::default()), (2, config)]);
    let xc = CrossConnect::new(Endpoint::vc(1, 0, 40), Endpoint::vc(2, 0, 41), qos("ubr"));
    sw.connect(T0, &xc).expect("admitted");
    for _ in 0..7 {
        sw.handle_cell(T0, PortId(1), &cell(0, 40, 0, false, 0));
    }
    let mut sent_at = Vec::new();
    let mut buf = [[0u8; 53]; 8];
    let mut now = T0;
    while sent_at.len() < 7 {
        let n = sw.poll_transmit(now, PortId(2), &mut buf);
        assert!(n <= 1, "never two cells in one slot");
        if n == 1 {
            sent_at.push(now.as_nanos());
        }
        match sw.poll_timeout() {
            Some(t) => now = t,
            None => break,
        }
    }
    assert_eq!(
        sent_at,
        [
            0,
            333_333_334,
            666_666_667,
            1_000_000_000,
            1_333_333_334,
            1_666_666_667,
            2_000_000_000
        ]
    );
    assert_eq!(sw.poll_timeout(), None, "nothing queued, nothing due");
    // A slot is not early: 1 ns before it nothing goes.
    for _ in 0..2 {
        sw.handle_cell(now, PortId(1), &cell(0, 40, 0, false, 0));
    }
    assert_eq!(
        sw.poll_transmit(now, PortId(2), &mut buf),
        0,
        "the slot at 2 s was used"
    );
    let next = sw.poll_timeout().expect("a cell waits");
    assert_eq!(next.as_nanos(), 2_333_333_334);
    let early = Instant::from_nanos(next.as_nanos() - 1);
    assert_eq!(sw.poll_transmit(early, PortId(2), &mut buf), 0);
    assert_eq!(sw.poll_transmit(next, PortId(2), &mut buf), 1);
    // An idle port does not save slots up: after a long pause one cell goes at once, the
    // next a full slot later.
    let later = next + Duration::from_secs(10);
    sw.handle_cell(later, PortId(1), &cell(0, 40, 0, false, 0));
    assert_eq!(sw.poll_transmit(later, PortId(2), &mut buf), 1);
    assert_eq!(sw.poll_transmit(later, PortId(2), &mut buf), 0);
}

#[test]
fn a_driver_waking_for_bursts_keeps_the_slots_exact() {
    // 1,000 cells/s (slots of 1 ms) and a window of 5 ms: a driver sleeping to
    // poll_timeout_within sends bursts of up to 6 cells, each burst the slots that passed.
    let config = PortConfig {
        rate: LineRate::cells(1000).unwrap(),
        ..PortConfig::default()
    };
    let mut sw = switch_with(&[(1, PortConfig::default()), (2, config)]);
    let xc = CrossConnect::new(Endpoint::vc(1, 0, 40), Endpoint::vc(2, 0, 41), qos("ubr"));
    sw.connect(T0, &xc).expect("admitted");
    let window = Duration::from_millis(5);
    // One cell alone: due at its slot, not held for the window.
    sw.handle_cell(T0, PortId(1), &cell(0, 40, 0, false, 0));
    assert_eq!(sw.poll_timeout_within(window), Some(T0));
    let mut buf = [[0u8; 53]; 16];
    assert_eq!(sw.poll_transmit(T0, PortId(2), &mut buf), 1);
    // Twenty more: the driver wakes at the 6th slot, then every 6th while 6 or more
    // wait, then at the last.
    for _ in 0..20 {
        sw.handle_cell(T0, PortId(1), &cell(0, 40, 0, false, 0));
    }
    let mut wakes = Vec::new();
    let mut sent = 0;
    while let Some(t) = sw.poll_timeout_within(window) {
        assert_eq!(sw.port_timeout_within(PortId(2), window), Some(t));
        let n = sw.poll_transmit(t, PortId(2), &mut buf);
        wakes.push((t.as_nanos() / 1_000_000, n));
        sent += n;
    }
    assert_eq!(sent, 20);
    // Slots 1..=20 ms; each wake sends exactly the slots that have passed.
    assert_eq!(wakes, [(6, 6), (12, 6), (18, 6), (20, 2)]);
    assert_eq!(sw.poll_timeout(), None);
}

#[test]
fn unlimited_port_releases_up_to_the_batch() {
    let mut sw = two_ports();
    let xc = CrossConnect::new(Endpoint::vc(1, 0, 40), Endpoint::vc(2, 0, 41), qos("ubr"));
    sw.connect(T0, &xc).expect("admitted");
    for _ in 0..100 {
        sw.handle_cell(T0, PortId(1), &cell(0, 40, 0, false, 0));
    }
    assert_eq!(take(&mut sw, 2, 64).len(), 64);
    assert_eq!(take(&mut sw, 2, 64).len(), 36);
    assert_eq!(sw.poll_timeout(), None);
}

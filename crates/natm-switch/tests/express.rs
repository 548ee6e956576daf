//! The express path ([`Switch::express`]): what it takes, what it refuses, and the property
//! that a driver using it sends every connection the same cells, in the same order, with
//! the same counters, as one that queues everything.

mod common;

use std::collections::BTreeMap;

use common::{cell, header, qos};
use natm_core::{Duration, HeaderFormat, Instant, LineRate};
use natm_switch::{
    Category, CrossConnect, Endpoint, PortConfig, PortId, Switch, SwitchConfig, Upc, XcId,
};
use natm_wire::cell::hec;
use proptest::prelude::*;

/// Ports 1 and 2 (UNI, unlimited), 3 (NNI, unlimited) and 4 (UNI, 10,000 cells/s).
fn four_ports() -> Switch {
    let mut sw = Switch::new(SwitchConfig::default());
    let nni = PortConfig {
        format: HeaderFormat::Nni,
        ..PortConfig::default()
    };
    let rated = PortConfig {
        rate: LineRate::cells(10_000).unwrap(),
        ..PortConfig::default()
    };
    for (id, config) in [
        (1, PortConfig::default()),
        (2, PortConfig::default()),
        (3, nni),
        (4, rated),
    ] {
        sw.add_port(PortId(id), config).expect("port");
    }
    sw
}

/// VCs 0.32–0.37 from ports 1 and 2 to VPI 1 or 2 (the input port's number) on another
/// port, of the kinds the express path takes and the kinds it leaves to the queues, and
/// the VP 7 from port 1 to port 2:
///
/// | VCI | kind | from 1 to | from 2 to |
/// |---|---|---|---|
/// | 32 | UBR, AAL5 | 2 | 3 |
/// | 33 | UBR, weight 3 | 3 | 4 (rated) |
/// | 34 | CBR, UPC discards | 4 | 1 |
/// | 35 | rt-VBR, AAL5 | 2 | 3 |
/// | 36 | UBR, AAL5 | 3 | 4 |
/// | 37 | UBR, UPC tags | 4 | 1 |
fn cross_connects() -> Vec<CrossConnect> {
    let kinds = [
        (qos("ubr,aal5"), None, Upc::Off, 1, true),
        (qos("ubr"), None, Upc::Off, 3, false),
        (qos("cbr:max_pcr=2000"), None, Upc::Discard, 1, false),
        (
            qos("vbr:pcr=3000,scr=1000,mbs=4"),
            Some(Category::RtVbr),
            Upc::Off,
            1,
            true,
        ),
        (qos("ubr,aal5"), None, Upc::Off, 1, true),
        (qos("ubr:max_pcr=5000"), None, Upc::Tag, 2, false),
    ];
    let mut v = Vec::new();
    for (i, (q, category, upc, weight, aal5)) in kinds.into_iter().enumerate() {
        let vci = 32 + i as u16;
        for (a, b) in [(1u16, [2u16, 3, 4][i % 3]), (2, [3, 4, 1][i % 3])] {
            v.push(CrossConnect {
                category,
                upc,
                weight,
                aal5,
                ..CrossConnect::new(Endpoint::vc(a, 0, vci), Endpoint::vc(b, a, vci), q)
            });
        }
    }
    v.push(CrossConnect::new(
        Endpoint::vp(1, 7),
        Endpoint::vp(2, 7),
        qos("ubr"),
    ));
    v
}

fn connected() -> (Switch, Vec<XcId>) {
    let mut sw = four_ports();
    let ids = cross_connects()
        .iter()
        .map(|xc| sw.connect(Instant::ZERO, xc).expect("admitted"))
        .collect();
    (sw, ids)
}

/// Hands `cells` (arrived on `port`) to the switch as switchd's fabric does: runs the
/// express path takes are sent at once (appended to `sent`), the rest from the first it
/// refuses is queued. How many went express.
fn express_then_queue(
    sw: &mut Switch,
    now: Instant,
    port: u16,
    cells: &mut [[u8; 53]],
    sent: &mut Vec<(u16, [u8; 53])>,
) -> usize {
    let mut from = 0;
    while from < cells.len() {
        let Some((out, k)) = sw.express(PortId(port), &mut cells[from..], |_, _| true) else {
            break;
        };
        assert!(k > 0, "a run taken has cells");
        sent.extend(cells[from..from + k].iter().map(|c| (out.0, *c)));
        from += k;
    }
    sw.handle_cells(now, PortId(port), &cells[from..]);
    from
}

/// Everything every port sends at `now`, in batches of 256, as `(port, cell)`.
fn drain_all(sw: &mut Switch, now: Instant, sent: &mut Vec<(u16, [u8; 53])>) {
    let mut out = vec![[0u8; 53]; 256];
    for p in 1..=4u16 {
        loop {
            let n = sw.poll_transmit(now, PortId(p), &mut out);
            sent.extend(out[..n].iter().map(|c| (p, *c)));
            if n < out.len() {
                break;
            }
        }
    }
}

/// The cells sent, per output port and connection (header without PTI and CLP), in order.
fn per_connection(sent: &[(u16, [u8; 53])]) -> BTreeMap<(u16, u32), Vec<[u8; 53]>> {
    let mut m: BTreeMap<(u16, u32), Vec<[u8; 53]>> = BTreeMap::new();
    for (p, c) in sent {
        let w = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        assert_eq!(c[4], hec([c[0], c[1], c[2], c[3]]), "HEC of a sent cell");
        m.entry((*p, w & 0xFFFF_FFF0)).or_default().push(*c);
    }
    m
}

fn all_counters(sw: &Switch, ids: &[XcId]) -> String {
    let ports: Vec<_> = (1..=4).map(|p| sw.port_counters(PortId(p))).collect();
    let xcs: Vec<_> = ids
        .iter()
        .map(|&id| sw.connection(id).map(|c| c.1))
        .collect();
    format!("{ports:?} {xcs:?}")
}

#[test]
fn a_run_of_one_vc_goes_through_translated_and_counted() {
    let (mut sw, ids) = connected();
    // 0.32 from port 1 goes to port 2 as 1.32 (UBR, AAL5, no UPC). Three cells of a frame,
    // the last with CLP, then one of 0.33.
    let mut cells = vec![
        cell(0, 32, 0, false, 1),
        cell(0, 32, 0, false, 2),
        cell(0, 32, 1, true, 3),
        cell(0, 33, 0, false, 4),
    ];
    let mut asked = None;
    let got = sw.express(PortId(1), &mut cells, |port, word| {
        asked = Some((port, word));
        true
    });
    assert_eq!(got, Some((PortId(2), 3)));
    assert_eq!(asked, Some((PortId(2), 1 << 20 | 32 << 4)));
    assert_eq!(header(&cells[0]), (1, 32, 0, false));
    assert_eq!(header(&cells[2]), (1, 32, 1, true), "PTI and CLP kept");
    assert_eq!(cells[2][5..], [3; 48], "payload untouched");
    assert_eq!(
        header(&cells[3]),
        (0, 33, 0, false),
        "the next run untouched"
    );
    let p1 = sw.port_counters(PortId(1)).expect("port");
    let p2 = sw.port_counters(PortId(2)).expect("port");
    assert_eq!((p1.cells_in, p2.cells_out, p2.queued()), (3, 3, 0));
    let (_, c) = sw.connection(ids[0]).expect("connected");
    assert_eq!(
        (c.a_to_b.cells_in, c.a_to_b.cells_out, c.a_to_b.queued),
        (3, 3, 0)
    );
}

#[test]
fn refusals_leave_everything_as_it_was() {
    let (mut sw, ids) = connected();
    let before = all_counters(&sw, &ids);
    let refused = |sw: &mut Switch, port: u16, mut c: [u8; 53], why: &str| {
        let original = c;
        let got = sw.express(PortId(port), std::slice::from_mut(&mut c), |_, _| true);
        assert_eq!(got, None, "{why}");
        assert_eq!(c, original, "{why}: the cell is untouched");
    };
    refused(&mut sw, 1, cell(0, 32, 4, false, 0), "segment OAM");
    refused(&mut sw, 1, cell(0, 32, 5, false, 0), "end-to-end OAM");
    refused(&mut sw, 1, cell(0, 3, 0, false, 0), "F4 VCI");
    refused(&mut sw, 1, cell(0, 0, 0, false, 0), "idle");
    refused(&mut sw, 1, cell(0, 99, 0, false, 0), "unknown VC");
    refused(&mut sw, 1, cell(7, 40, 0, false, 0), "a VP connection");
    refused(&mut sw, 1, cell(0, 34, 0, false, 0), "a policed connection");
    refused(&mut sw, 2, cell(0, 37, 0, false, 0), "a tagging connection");
    refused(
        &mut sw,
        2,
        cell(0, 33, 0, false, 0),
        "output port 4 is rated",
    );
    refused(&mut sw, 9, cell(0, 32, 0, false, 0), "no such port");
    let mut bad = cell(0, 32, 0, false, 0);
    bad[4] ^= 1;
    refused(&mut sw, 1, bad, "a bad HEC");
    let mut c = [cell(0, 32, 0, false, 0)];
    assert_eq!(sw.express(PortId(1), &mut c, |_, _| false), None);
    assert_eq!(header(&c[0]), (0, 32, 0, false), "refused by the caller");
    assert_eq!(all_counters(&sw, &ids), before, "nothing counted");

    // A cell queued for the output port: the run must wait behind it.
    sw.handle_cells(Instant::ZERO, PortId(1), &[cell(0, 35, 0, false, 0)]);
    refused(
        &mut sw,
        1,
        cell(0, 32, 0, false, 0),
        "a cell queued on port 2",
    );
    assert_eq!(common::drain(&mut sw, 2).len(), 1);
    let mut c = [cell(0, 32, 0, false, 0)];
    assert_eq!(
        sw.express(PortId(1), &mut c, |_, _| true),
        Some((PortId(2), 1))
    );

    // A port that is down.
    sw.set_port_up(Instant::ZERO, PortId(2), false)
        .expect("port");
    refused(&mut sw, 1, cell(0, 32, 0, false, 0), "output port down");
    refused(&mut sw, 2, cell(0, 32, 0, false, 0), "input port down");
}

/// UBR AAL5 VCs 0.`vci` from port 1 to port 2, whose queues hold 4 cells (EPD at 2).
fn into_a_small_queue(vcis: &[u16]) -> Switch {
    let small = PortConfig {
        queue_cells: [4, 4, 4, 4],
        epd_percent: 50,
        ..PortConfig::default()
    };
    let mut sw = Switch::new(SwitchConfig::default());
    sw.add_port(PortId(1), PortConfig::default()).expect("port");
    sw.add_port(PortId(2), small).expect("port");
    for &vci in vcis {
        let xc = CrossConnect {
            aal5: true,
            ..CrossConnect::new(Endpoint::vc(1, 0, vci), Endpoint::vc(2, 0, vci), qos("ubr"))
        };
        sw.connect(Instant::ZERO, &xc).expect("admitted");
    }
    sw
}

#[test]
fn a_frame_being_discarded_is_left_to_the_queues() {
    // One UBR AAL5 VC into a queue of 4 cells (EPD at 2): a frame that meets a full queue
    // is cut (PPD) and the rest of it must be discarded by the queues, not passed express.
    let mut sw = into_a_small_queue(&[32]);
    // Six cells of one frame through the queues: four queued, the fifth cut, PPD on.
    let frame: Vec<_> = (0..6).map(|i| cell(0, 32, 0, false, i)).collect();
    sw.handle_cells(Instant::ZERO, PortId(1), &frame);
    assert_eq!(common::drain(&mut sw, 2).len(), 4);
    let mut rest = [cell(0, 32, 0, false, 6), cell(0, 32, 1, false, 7)];
    assert_eq!(
        sw.express(PortId(1), &mut rest, |_, _| true),
        None,
        "the frame is being discarded"
    );
    sw.handle_cells(Instant::ZERO, PortId(1), &rest);
    let out = common::drain(&mut sw, 2);
    assert_eq!(out.len(), 1, "PPD keeps only the frame's last cell");
    assert_eq!(out[0][5], 7);
    // The next frame starts clean: express again.
    let mut next = [cell(0, 32, 1, false, 8)];
    assert_eq!(
        sw.express(PortId(1), &mut next, |_, _| true),
        Some((PortId(2), 1))
    );
}

#[test]
fn an_express_run_leaves_the_frame_state_as_the_queues_would() {
    // A frame begun express is under way: when the queue then passes its EPD threshold,
    // the frame's rest is still taken (EPD refuses only new frames).
    let mut sw = into_a_small_queue(&[32, 33]);
    let mut begun = [cell(0, 32, 0, false, 0), cell(0, 32, 0, false, 1)];
    assert_eq!(
        sw.express(PortId(1), &mut begun, |_, _| true),
        Some((PortId(2), 2))
    );
    // Two cells of another frame fill the queue to the threshold.
    sw.handle_cells(
        Instant::ZERO,
        PortId(1),
        &[cell(0, 33, 0, false, 9), cell(0, 33, 0, false, 9)],
    );
    sw.handle_cells(Instant::ZERO, PortId(1), &[cell(0, 32, 1, false, 2)]);
    let out = common::drain(&mut sw, 2);
    assert_eq!(out.len(), 3, "the begun frame's last cell is queued");
    assert_eq!(out.iter().filter(|c| c[5] == 2).count(), 1);
    assert_eq!(sw.port_counters(PortId(2)).expect("port").epd, 0);
}

/// One step of the property: cells of one of the connections (index into a small table
/// of input port and header), possibly with one bit flipped, or time passing.
#[derive(Clone, Debug)]
enum Op {
    Cells {
        port: u16,
        vpi: u32,
        vci: u32,
        n: u8,
        pti: u8,
        flip: Option<(u8, u8)>,
        fill: u8,
    },
    Mixed(Vec<(u16, u32, u32, u8)>),
    Advance(u32),
    PortUp(u16, bool),
}

fn op() -> impl Strategy<Value = Op> {
    let vpi = prop_oneof![8 => Just(0u32), 1 => Just(7u32), 1 => Just(1u32)];
    let vci = 30u32..40;
    prop_oneof![
        8 => (1u16..3, vpi.clone(), vci.clone(), 1u8..64, 0u8..8, proptest::option::weighted(0.1, (0u8..64, 0u8..40)), any::<u8>())
            .prop_map(|(port, vpi, vci, n, pti, flip, fill)| Op::Cells { port, vpi, vci, n, pti, flip, fill }),
        3 => proptest::collection::vec((1u16..3, vpi, vci, 0u8..8), 1..40).prop_map(Op::Mixed),
        1 => (0u32..3_000_000).prop_map(Op::Advance),
        1 => (1u16..5, any::<bool>()).prop_map(|(p, u)| Op::PortUp(p, u)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// With the ports drained after every batch (as switchd's fabric does, every step),
    /// passing runs express changes nothing a connection sees: each sends the same cells
    /// in the same order, and every port and connection counter is the same. Only the
    /// interleaving of different connections on one port may differ (an express run goes
    /// out before cells queued in the same step), which an idle unrated port allows.
    #[test]
    fn express_changes_nothing_a_connection_sees(ops in proptest::collection::vec(op(), 1..120)) {
        let (mut plain, ids) = connected();
        let (mut fast, _) = connected();
        let (mut sent_plain, mut sent_fast) = (Vec::new(), Vec::new());
        let mut now = Instant::ZERO;
        for op in ops {
            let (port, mut cells) = match op {
                Op::Cells { port, vpi, vci, n, pti, flip, fill } => {
                    let mut cells: Vec<_> = (0..n)
                        .map(|i| {
                            let last = i + 1 == n;
                            // Frames end at the run's end, or as `pti` says for other values.
                            let pti = if pti < 2 { pti | u8::from(last) } else { pti };
                            cell(vpi, vci, pti, i % 5 == 4, fill.wrapping_add(i))
                        })
                        .collect();
                    if let Some((k, bit)) = flip {
                        let k = usize::from(k) % cells.len();
                        cells[k][usize::from(bit / 8)] ^= 0x80 >> (bit % 8);
                    }
                    (port, cells)
                }
                Op::Mixed(v) => {
                    let port = v[0].0;
                    let cells = v
                        .iter()
                        .enumerate()
                        .map(|(i, &(_, vpi, vci, pti))| cell(vpi, vci, pti, false, i as u8))
                        .collect();
                    (port, cells)
                }
                Op::Advance(ns) => {
                    now += Duration::from_nanos(u64::from(ns));
                    plain.handle_timeout(now);
                    fast.handle_timeout(now);
                    drain_all(&mut plain, now, &mut sent_plain);
                    drain_all(&mut fast, now, &mut sent_fast);
                    continue;
                }
                Op::PortUp(p, up) => {
                    plain.set_port_up(now, PortId(p), up).expect("port");
                    fast.set_port_up(now, PortId(p), up).expect("port");
                    continue;
                }
            };
            plain.handle_cells(now, PortId(port), &cells);
            express_then_queue(&mut fast, now, port, &mut cells, &mut sent_fast);
            drain_all(&mut plain, now, &mut sent_plain);
            drain_all(&mut fast, now, &mut sent_fast);
            prop_assert_eq!(per_connection(&sent_plain), per_connection(&sent_fast));
            prop_assert_eq!(all_counters(&plain, &ids), all_counters(&fast, &ids));
        }
    }
}

#[test]
fn a_stream_of_frames_goes_express_whole() {
    // The stream switchd sees from a lane: 8 KiB frames of one UBR AAL5 VC, 256 cells a
    // batch, nothing queued between batches. Every cell goes express.
    let (mut sw, ids) = connected();
    let mut sent = Vec::new();
    let frame_cells = 171;
    let mut cells: Vec<_> = (0..frame_cells * 6)
        .map(|i| {
            cell(
                0,
                32,
                u8::from(i % frame_cells == frame_cells - 1),
                false,
                i as u8,
            )
        })
        .collect();
    let mut express = 0;
    for batch in cells.chunks_mut(256) {
        express += express_then_queue(&mut sw, Instant::ZERO, 1, batch, &mut sent);
        drain_all(&mut sw, Instant::ZERO, &mut sent);
    }
    assert_eq!(express, frame_cells * 6);
    assert_eq!(sent.len(), frame_cells * 6);
    let (_, c) = sw.connection(ids[0]).expect("connected");
    assert_eq!(c.a_to_b.cells_out, (frame_cells * 6) as u64);
}

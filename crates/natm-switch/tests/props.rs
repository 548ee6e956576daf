//! Property: any cell bytes on any port, in any order with any commands between them,
//! never panic, and cells are conserved: everything handed in (plus AIS the switch made) is
//! sent, dropped for a counted reason, or still queued.

mod common;

use common::{fixture, qos};
use natm_core::{Duration, Instant};
use natm_switch::{Category, CrossConnect, Endpoint, PortConfig, PortId, Switch, SwitchConfig};
use natm_wire::cell::hec;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    /// Raw bytes.
    Raw(u16, Vec<u8>),
    /// A header from a small set (so cells hit connections), maybe one bit flipped.
    Cell {
        port: u16,
        vpi: u8,
        vci: u8,
        pti: u8,
        clp: bool,
        flip: Option<u8>,
        fill: u8,
    },
    Poll(u16, u8),
    Advance(u32),
    PortUp(u16, bool),
    Reconnect(u8),
    /// A cell queued for 0.5 (refused on port 2, which does not signal).
    Signal(u16, u8),
    /// Received signalling cells drained.
    Drain(u16, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (0u16..4, proptest::collection::vec(any::<u8>(), 53)).prop_map(|(p, b)| Op::Raw(p, b)),
        6 => (1u16..4, 0u8..4, 0u8..7, 0u8..8, any::<bool>(), proptest::option::weighted(0.1, 0u8..40), any::<u8>())
            .prop_map(|(port, vpi, vci, pti, clp, flip, fill)| Op::Cell { port, vpi, vci, pti, clp, flip, fill }),
        2 => (1u16..4, 0u8..20).prop_map(|(p, n)| Op::Poll(p, n)),
        1 => (0u32..3_000_000).prop_map(Op::Advance),
        1 => (1u16..4, any::<bool>()).prop_map(|(p, u)| Op::PortUp(p, u)),
        1 => (0u8..8).prop_map(Op::Reconnect),
        1 => (0u16..4, any::<u8>()).prop_map(|(p, f)| Op::Signal(p, f)),
        1 => (0u16..4, 0u8..20).prop_map(|(p, n)| Op::Drain(p, n)),
    ]
}

/// Small VPI/VCI sets: VPI 0..4 → {0, 1, 2, 7}, VCI 0..7 → {0, 3, 4, 5, 32, 33, 34}.
fn ids(vpi: u8, vci: u8) -> (u32, u32) {
    (
        [0, 1, 2, 7][usize::from(vpi)],
        [0, 3, 4, 5, 32, 33, 34][usize::from(vci)],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_cells_never_panic_and_are_conserved(ops in proptest::collection::vec(op(), 1..300)) {
        let (mut sw, xcs, mut live) = fixture::connected();
        let mut now = Instant::ZERO;
        let mut out = [[0u8; 53]; 20];
        for op in ops {
            match op {
                Op::Raw(port, bytes) => {
                    let c: [u8; 53] = bytes.try_into().expect("53 bytes");
                    sw.handle_cell(now, PortId(port), &c);
                }
                Op::Cell { port, vpi, vci, pti, clp, flip, fill } => {
                    let (vpi, vci) = ids(vpi, vci);
                    let w = vpi << 20 | vci << 4 | u32::from(pti) << 1 | u32::from(clp);
                    let mut c = [fill; 53];
                    c[..4].copy_from_slice(&w.to_be_bytes());
                    c[4] = hec(w.to_be_bytes());
                    if let Some(bit) = flip {
                        c[usize::from(bit / 8)] ^= 0x80 >> (bit % 8);
                    }
                    sw.handle_cells(now, PortId(port), &[c, c]);
                }
                Op::Poll(port, n) => {
                    let n = sw.poll_transmit(now, PortId(port), &mut out[..usize::from(n)]);
                    for c in &out[..n] {
                        prop_assert_eq!(c[4], hec([c[0], c[1], c[2], c[3]]));
                    }
                }
                Op::Advance(ns) => {
                    now += Duration::from_nanos(u64::from(ns));
                    sw.handle_timeout(now);
                    // Nothing a timeout does is left overdue.
                    if let Some(t) = sw.poll_timeout() {
                        prop_assert!(t > now || sw.port_counters(PortId(3)).is_some_and(|c| c.queued() > 0));
                    }
                }
                Op::PortUp(port, up) => sw.set_port_up(now, PortId(port), up).expect("port"),
                Op::Signal(port, fill) => {
                    let r = sw.send_signalling(now, PortId(port), &[fill; 53]);
                    prop_assert!(r.is_ok() || port == 0 || port == 2 || !sw.port_counters(PortId(port)).is_some_and(|c| c.up));
                }
                Op::Drain(port, n) => {
                    let n = sw.poll_signalling(PortId(port), &mut out[..usize::from(n)]);
                    for c in &out[..n] {
                        prop_assert_eq!(c[4], hec([c[0], c[1], c[2], c[3]]));
                        prop_assert_eq!(u32::from_be_bytes([c[0], c[1], c[2], c[3]]) & 0x0FFF_FFF8, 5 << 4);
                    }
                }
                Op::Reconnect(i) => {
                    let i = usize::from(i) % xcs.len();
                    match live[i].take() {
                        Some(id) => {
                            prop_assert_eq!(sw.disconnect(id), Ok(xcs[i]));
                        }
                        None => live[i] = Some(sw.connect(now, &xcs[i]).expect("endpoints free")),
                    }
                }
            }
            fixture::assert_conserved(&sw);
            // The per-port timeouts a driver may queue give the switch's.
            let per_port = (0..8).filter_map(|p| sw.port_timeout(PortId(p))).min();
            prop_assert_eq!(per_port, sw.poll_timeout());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Cells of one connection leave in the order they came, whatever is dropped, whatever
    /// the categories, weights and batch sizes.
    #[test]
    fn a_connection_is_never_reordered(
        steps in proptest::collection::vec((0u8..6, 1u8..12, 0u8..40), 1..200),
    ) {
        let small = PortConfig { queue_cells: [4, 6, 8, 30], epd_percent: 60, ..PortConfig::default() };
        let mut sw = Switch::new(SwitchConfig::default());
        sw.add_port(PortId(1), PortConfig::default()).expect("port");
        sw.add_port(PortId(2), small).expect("port");
        let kinds = [
            (qos("ubr"), None, 1),
            (qos("ubr,aal5"), None, 2),
            (qos("ubr"), None, 5),
            (qos("cbr:max_pcr=1000"), None, 1),
            (qos("vbr:pcr=1000,scr=500,mbs=10"), Some(Category::RtVbr), 1),
            (qos("vbr:pcr=1000,scr=500,mbs=10"), None, 1),
        ];
        for (v, (q, category, weight)) in kinds.into_iter().enumerate() {
            let xc = CrossConnect {
                category,
                weight,
                ..CrossConnect::new(Endpoint::vc(1, 0, 40 + v as u16), Endpoint::vc(2, 0, 40 + v as u16), q)
            };
            sw.connect(Instant::ZERO, &xc).expect("admitted");
        }
        let mut seq = [0u16; 6];
        let mut last = [None::<u16>; 6];
        let mut out = [[0u8; 53]; 40];
        for (v, burst, poll) in steps {
            let v = usize::from(v);
            let cells: Vec<[u8; 53]> = (0..burst)
                .map(|i| {
                    let w = (40 + v as u32) << 4 | u32::from(i + 1 == burst) << 1;
                    let mut c = [0u8; 53];
                    c[..4].copy_from_slice(&w.to_be_bytes());
                    c[4] = hec(w.to_be_bytes());
                    c[5..7].copy_from_slice(&seq[v].to_be_bytes());
                    seq[v] += 1;
                    c
                })
                .collect();
            sw.handle_cells(Instant::ZERO, PortId(1), &cells);
            let n = sw.poll_transmit(Instant::ZERO, PortId(2), &mut out[..usize::from(poll)]);
            for c in &out[..n] {
                let w = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
                let v = ((w >> 4) & 0xFFFF) as usize - 40;
                let s = u16::from_be_bytes([c[5], c[6]]);
                prop_assert!(last[v].is_none_or(|l| s > l), "VC {} sent {} after {:?}", v, s, last[v]);
                last[v] = Some(s);
            }
        }
    }
}

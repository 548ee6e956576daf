//! natm-switch: arbitrary operations (cells of any bytes, cells with headers of connected
//! VCs and one bit maybe flipped, polls of any batch size, passing time, ports going down
//! and up, cross-connects removed and made again) on a three-port switch with VC and VP
//! cross-connects, UPC, AAL5 frame discard, small queues and a rated port. It must never
//! panic, every cell it sends must carry a correct HEC, and cells must be conserved: what
//! came in plus the AIS it made equals what it sent, dropped (by a counted reason) and
//! still holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_core::{Duration, HeaderFormat, Instant, Qos};
use natm_switch::{
    Category, CrossConnect, Endpoint, PortConfig, PortId, PortRate, Switch, SwitchConfig, Upc, XcId,
};
use natm_wire::cell::{CELL_LEN, hec};

fn qos(s: &str) -> Qos {
    s.parse().expect("valid QoS text")
}

fn cross_connects() -> Vec<CrossConnect> {
    let kinds = [
        (qos("ubr,aal5"), None, Upc::Off, 1),
        (qos("cbr:max_pcr=2000"), None, Upc::Discard, 1),
        (
            qos("vbr:pcr=3000,scr=1000,mbs=4"),
            Some(Category::RtVbr),
            Upc::Tag,
            1,
        ),
        (qos("ubr:max_pcr=5000"), None, Upc::Tag, 3),
    ];
    let mut v = Vec::new();
    for (i, vci) in [32u16, 33, 34].into_iter().enumerate() {
        for (j, (a, b)) in [(1u16, 2u16), (2, 3), (3, 1)].into_iter().enumerate() {
            let (q, category, upc, weight) = kinds[(i + j) % kinds.len()];
            v.push(CrossConnect {
                category,
                upc,
                weight,
                aal5: (i + j) % 2 == 0,
                ..CrossConnect::new(Endpoint::vc(a, 0, vci), Endpoint::vc(b, 1, vci), q)
            });
        }
    }
    v.push(CrossConnect::new(
        Endpoint::vp(1, 7),
        Endpoint::vp(3, 7),
        qos("ubr"),
    ));
    v
}

fn conserved(sw: &Switch) {
    let (mut lhs, mut rhs) = (0u64, 0u64);
    for p in 1..4 {
        let c = sw.port_counters(PortId(p)).expect("port");
        lhs += c.cells_in + c.ais_sent;
        rhs += c.cells_out + c.dropped() + c.queued();
    }
    assert_eq!(lhs, rhs, "cells conserved");
}

fuzz_target!(|data: &[u8]| {
    let mut sw = Switch::new(SwitchConfig::default());
    let small = PortConfig {
        queue_cells: [3, 3, 5, 8],
        epd_percent: 50,
        ..PortConfig::default()
    };
    sw.add_port(PortId(1), small).expect("port");
    let nni = PortConfig {
        format: HeaderFormat::Nni,
        ..small
    };
    sw.add_port(PortId(2), nni).expect("port");
    let rated = PortConfig {
        rate: PortRate::CellsPerSecond(10_000),
        ..small
    };
    sw.add_port(PortId(3), rated).expect("port");
    let xcs = cross_connects();
    let mut live: Vec<Option<XcId>> = xcs
        .iter()
        .map(|xc| Some(sw.connect(Instant::ZERO, xc).expect("admitted")))
        .collect();
    let mut now = Instant::ZERO;
    let mut out = [[0u8; CELL_LEN]; 32];
    let mut rest = data;
    while let Some((&op, tail)) = rest.split_first() {
        rest = tail;
        let arg = op >> 3;
        let port = PortId(u16::from(arg % 4));
        match op & 7 {
            0 => {
                let Some((cell, tail)) = rest.split_first_chunk::<CELL_LEN>() else {
                    return;
                };
                rest = tail;
                sw.handle_cell(now, port, cell);
            }
            1 | 2 => {
                // A cell of a connected (or nearly connected) VC, one bit maybe flipped.
                let Some((&[sel, flip], tail)) = rest.split_first_chunk::<2>() else {
                    return;
                };
                rest = tail;
                let vpi = [0u32, 1, 2, 7][usize::from(sel & 3)];
                let vci = [3u32, 4, 32, 33, 34, 35][usize::from(sel >> 2) % 6];
                let w = vpi << 20 | vci << 4 | u32::from(sel >> 5) << 1 | u32::from(flip & 1);
                let mut c = [flip; CELL_LEN];
                c[..4].copy_from_slice(&w.to_be_bytes());
                c[4] = hec(w.to_be_bytes());
                if flip & 0x80 != 0 {
                    let bit = usize::from(flip & 0x3F) % 40;
                    c[bit / 8] ^= 0x80 >> (bit % 8);
                }
                sw.handle_cells(now, port, &[c, c, c]);
            }
            3 => {
                let n = sw.poll_transmit(now, port, &mut out[..usize::from(arg)]);
                for c in &out[..n] {
                    assert_eq!(c[4], hec([c[0], c[1], c[2], c[3]]), "HEC of a sent cell");
                }
            }
            4 => {
                now += Duration::from_micros(u64::from(arg) * u64::from(arg) * 1000);
                sw.handle_timeout(now);
            }
            5 => {
                let _ = sw.set_port_up(now, port, arg & 4 == 0);
            }
            6 => {
                let i = usize::from(arg) % xcs.len();
                match live[i].take() {
                    Some(id) => assert_eq!(sw.disconnect(id), Ok(xcs[i])),
                    None => live[i] = Some(sw.connect(now, &xcs[i]).expect("endpoints free")),
                }
            }
            _ => {
                if let Some(t) = sw.poll_timeout() {
                    now = now.max(t);
                    sw.handle_timeout(now);
                }
            }
        }
        conserved(&sw);
    }
});

//! Forwarding through the switch: translation, VP cross-connects, HEC, unknown VCs.

use natm_core::{HeaderFormat, Instant, Qos, VcId};
use natm_switch::{CrossConnect, Endpoint, PortConfig, PortId};
use natm_wire::cell::{CellHeader, Pti};

mod common;
use common::{cell, drain, header, two_ports};

const T0: Instant = Instant::ZERO;

fn ubr() -> Qos {
    common::qos("ubr")
}

#[test]
fn vc_translation_both_directions() {
    let mut sw = two_ports();
    let xc = CrossConnect::new(Endpoint::vc(1, 0, 100), Endpoint::vc(2, 5, 200), ubr());
    let id = sw.connect(T0, &xc).expect("connects");
    sw.handle_cell(T0, PortId(1), &cell(0, 100, 1, true, 0xAB));
    sw.handle_cell(T0, PortId(2), &cell(5, 200, 0, false, 0xCD));
    let out2 = drain(&mut sw, 2);
    let out1 = drain(&mut sw, 1);
    assert_eq!(out2.len(), 1);
    assert_eq!(header(&out2[0]), (5, 200, 1, true), "PTI and CLP kept");
    assert_eq!(out2[0][5..], [0xAB; 48]);
    assert_eq!(out1.len(), 1);
    assert_eq!(header(&out1[0]), (0, 100, 0, false));
    assert_eq!(out1[0][5..], [0xCD; 48]);
    let (_, c) = sw.connection(id).expect("exists");
    assert_eq!((c.a_to_b.cells_in, c.a_to_b.cells_out), (1, 1));
    assert_eq!((c.b_to_a.cells_in, c.b_to_a.cells_out), (1, 1));
}

#[test]
fn vp_cross_connect_keeps_vci_and_owns_f4_e2e() {
    let mut sw = two_ports();
    let xc = CrossConnect::new(Endpoint::vp(1, 7), Endpoint::vp(2, 9), ubr());
    sw.connect(T0, &xc).expect("connects");
    sw.handle_cell(T0, PortId(1), &cell(7, 1234, 0, false, 1));
    sw.handle_cell(T0, PortId(1), &cell(7, 4, 0, false, 2)); // F4 end-to-end: forwarded
    sw.handle_cell(T0, PortId(1), &cell(7, 99, 5, false, 3)); // F5 inside the VP: forwarded
    let out = drain(&mut sw, 2);
    let hs: Vec<_> = out.iter().map(header).collect();
    assert_eq!(
        hs,
        [(9, 1234, 0, false), (9, 4, 0, false), (9, 99, 5, false)]
    );
}

#[test]
fn nni_port_translates_twelve_bit_vpi() {
    let mut sw = two_ports();
    let nni = PortConfig {
        format: HeaderFormat::Nni,
        ..PortConfig::default()
    };
    sw.add_port(PortId(3), nni).expect("port 3");
    let xc = CrossConnect::new(Endpoint::vc(1, 1, 40), Endpoint::vc(3, 4000, 41), ubr());
    sw.connect(T0, &xc).expect("connects");
    sw.handle_cell(T0, PortId(1), &cell(1, 40, 0, false, 0));
    let out = drain(&mut sw, 3);
    let h = CellHeader::parse(
        &natm_wire::cell::Cell::new_unchecked(&out[0][..]),
        HeaderFormat::Nni,
    )
    .expect("valid header");
    assert_eq!(
        h.vc,
        VcId::new(
            natm_core::Vpi::nni(4000).unwrap(),
            natm_core::Vci::from_u16(41)
        )
    );
    assert_eq!(h.pti, Pti::DATA);
}

#[test]
fn hec_single_bit_corrected_multi_bit_discarded_unknown_and_idle_counted() {
    let mut sw = two_ports();
    let xc = CrossConnect::new(Endpoint::vc(1, 0, 100), Endpoint::vc(2, 0, 101), ubr());
    sw.connect(T0, &xc).expect("connects");
    let mut one = cell(0, 100, 0, false, 0);
    one[2] ^= 0x01; // a VCI bit: corrected back to VCI 100
    let mut two = cell(0, 100, 0, false, 0);
    two[2] ^= 0x03;
    sw.handle_cell(T0, PortId(1), &one);
    sw.handle_cell(T0, PortId(1), &two); // detection mode now: discarded
    sw.handle_cell(T0, PortId(1), &cell(0, 100, 0, false, 0)); // good: back to correction
    sw.handle_cell(T0, PortId(1), &cell(0, 55, 0, false, 0)); // unknown VC
    sw.handle_cell(T0, PortId(1), &cell(0, 0, 0, false, 0)); // unassigned
    let mut idle = [0x6A; 53];
    idle[..5].copy_from_slice(&[0, 0, 0, 1, 0x52]);
    sw.handle_cell(T0, PortId(1), &idle);
    let c = sw.port_counters(PortId(1)).expect("port");
    assert_eq!(c.cells_in, 6);
    assert_eq!(c.hec_corrected, 1);
    assert_eq!(c.hec_discarded, 1);
    assert_eq!(c.unknown_vc, 1);
    assert_eq!(c.idle, 2);
    let out = drain(&mut sw, 2);
    assert_eq!(out.len(), 2);
    assert!(out.iter().all(|c| header(c) == (0, 101, 0, false)));
}

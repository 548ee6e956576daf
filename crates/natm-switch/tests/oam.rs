//! OAM at the switch (I.610): segment loopback answered, end-to-end OAM forwarded, AIS while
//! a port is down.

mod common;

use common::{cell, drain, drain_at, header, qos, two_ports};
use natm_core::{Duration, Instant, VcId};
use natm_switch::{CrossConnect, Endpoint, PortId};
use natm_wire::oam::{Loopback, OamCell, OamFlow, OamRepr};

const T0: Instant = Instant::ZERO;

fn oam_cell(repr: &OamRepr, flow: OamFlow, vpi: u32, vci: u32) -> [u8; 53] {
    repr.to_cell(flow, VcId::uni(vpi, vci).expect("vc"))
}

fn parse(c: &[u8; 53]) -> OamRepr {
    OamRepr::parse(&OamCell::new_unchecked(&c[5..])).expect("CRC-10 good")
}

fn connected() -> natm_switch::Switch {
    let mut sw = two_ports();
    let vc = CrossConnect::new(Endpoint::vc(1, 0, 100), Endpoint::vc(2, 0, 200), qos("ubr"));
    sw.connect(T0, &vc).expect("vc");
    let vp = CrossConnect::new(Endpoint::vp(1, 7), Endpoint::vp(2, 9), qos("ubr"));
    sw.connect(T0, &vp).expect("vp");
    sw
}

#[test]
fn f5_segment_loopback_answered_on_the_same_port() {
    let mut sw = connected();
    let req = OamRepr::Loopback(Loopback::request(0xC0FFEE));
    sw.handle_cell(T0, PortId(1), &oam_cell(&req, OamFlow::F5Segment, 0, 100));
    assert!(
        drain(&mut sw, 2).is_empty(),
        "a segment flow is not forwarded"
    );
    let back = drain(&mut sw, 1);
    assert_eq!(back.len(), 1);
    assert_eq!(header(&back[0]), (0, 100, 0b100, false));
    match parse(&back[0]) {
        OamRepr::Loopback(l) => {
            assert!(!l.request, "indication cleared");
            assert_eq!(l.correlation_tag, 0xC0FFEE);
        }
        other => panic!("not a loopback: {other:?}"),
    }
    assert_eq!(sw.port_counters(PortId(1)).expect("port").oam_answered, 1);
    // The reply itself, or a cell with a bad CRC-10, is not answered.
    sw.handle_cell(T0, PortId(1), &back[0]);
    let mut bad = oam_cell(&req, OamFlow::F5Segment, 0, 100);
    bad[20] ^= 1;
    sw.handle_cell(T0, PortId(1), &bad);
    assert!(drain(&mut sw, 1).is_empty());
    let c = sw.port_counters(PortId(1)).expect("port");
    assert_eq!((c.oam_answered, c.oam_terminated), (1, 2));
    // A request for another location is not ours; the all-zeros "segment end point" is.
    let other = Loopback {
        location_id: [0x42; 16],
        ..Loopback::request(1)
    };
    let zeros = Loopback {
        location_id: [0; 16],
        ..Loopback::request(2)
    };
    for l in [other, zeros] {
        let c = oam_cell(&OamRepr::Loopback(l), OamFlow::F5Segment, 0, 100);
        sw.handle_cell(T0, PortId(1), &c);
    }
    let back = drain(&mut sw, 1);
    assert_eq!(back.len(), 1);
    assert!(matches!(parse(&back[0]), OamRepr::Loopback(l) if l.correlation_tag == 2));
    let c = sw.port_counters(PortId(1)).expect("port");
    assert_eq!((c.oam_answered, c.oam_terminated), (2, 3));
}

#[test]
fn f4_segment_loopback_answered_for_vp_and_vc_connections() {
    let mut sw = connected();
    let req = OamRepr::Loopback(Loopback::request(7));
    // VPI 7 is a VP cross-connect; VPI 0 holds a VC cross-connect; VPI 5 holds nothing.
    sw.handle_cell(T0, PortId(1), &oam_cell(&req, OamFlow::F4Segment, 7, 3));
    sw.handle_cell(T0, PortId(1), &oam_cell(&req, OamFlow::F4Segment, 0, 3));
    sw.handle_cell(T0, PortId(1), &oam_cell(&req, OamFlow::F4Segment, 5, 3));
    let back = drain(&mut sw, 1);
    let hs: Vec<_> = back.iter().map(header).collect();
    assert_eq!(hs, [(7, 3, 0, false), (0, 3, 0, false)]);
    assert!(
        back.iter()
            .all(|c| matches!(parse(c), OamRepr::Loopback(l) if !l.request))
    );
    let c = sw.port_counters(PortId(1)).expect("port");
    assert_eq!((c.oam_answered, c.unknown_vc), (2, 1));
    assert!(drain(&mut sw, 2).is_empty());
}

#[test]
fn end_to_end_oam_is_forwarded_with_the_connection() {
    let mut sw = connected();
    let req = OamRepr::Loopback(Loopback::request(9));
    let f5 = oam_cell(&req, OamFlow::F5EndToEnd, 0, 100);
    let f4 = oam_cell(&req, OamFlow::F4EndToEnd, 7, 4);
    sw.handle_cell(T0, PortId(1), &f5);
    sw.handle_cell(T0, PortId(1), &f4);
    let out = drain(&mut sw, 2);
    let hs: Vec<_> = out.iter().map(header).collect();
    assert_eq!(hs, [(0, 200, 0b101, false), (9, 4, 0, false)]);
    assert_eq!(out[0][5..], f5[5..], "payload untouched");
    assert_eq!(out[1][5..], f4[5..]);
    assert!(drain(&mut sw, 1).is_empty());
}

#[test]
fn ais_once_per_second_while_down_and_stopped_when_up() {
    let mut sw = connected();
    let s = |n: u64| Instant::from_nanos(n * 1_000_000_000);
    sw.set_port_up(T0, PortId(1), false).expect("port");
    let ais = |sw: &mut natm_switch::Switch, now: Instant| {
        sw.handle_timeout(now);
        drain_at(sw, now, 2)
    };
    let first = ais(&mut sw, T0);
    let hs: Vec<_> = first.iter().map(header).collect();
    assert_eq!(
        hs,
        [(0, 200, 0b101, false), (9, 4, 0, false)],
        "F5 on the VC, F4 on the VP"
    );
    assert!(first.iter().all(|c| matches!(parse(c), OamRepr::Ais(_))));
    assert_eq!(sw.poll_timeout(), Some(s(1)));
    assert!(ais(&mut sw, Instant::from_nanos(999_999_999)).is_empty());
    assert_eq!(ais(&mut sw, s(1)).len(), 2);
    // A late call sends one AIS per leg, not the missed ones.
    assert_eq!(ais(&mut sw, s(3) + Duration::from_millis(500)).len(), 2);
    assert_eq!(sw.poll_timeout(), Some(s(4)));
    // Cells arriving on the down port are dropped; it sends nothing.
    sw.handle_cell(s(4), PortId(1), &cell(0, 100, 0, false, 0));
    assert!(drain(&mut sw, 1).is_empty());
    sw.set_port_up(s(4), PortId(1), true).expect("port");
    assert_eq!(sw.poll_timeout(), None);
    assert!(ais(&mut sw, s(5)).is_empty());
    let c2 = sw.port_counters(PortId(2)).expect("port");
    assert_eq!(c2.ais_sent, 6);
    let c1 = sw.port_counters(PortId(1)).expect("port");
    assert_eq!((c1.port_down, c1.up), (1, true));
    // Traffic flows again.
    sw.handle_cell(s(5), PortId(1), &cell(0, 100, 0, false, 0));
    assert_eq!(drain(&mut sw, 2).len(), 1);
}

#[test]
fn a_down_output_port_drops_and_flushes() {
    let mut sw = connected();
    for _ in 0..3 {
        sw.handle_cell(T0, PortId(1), &cell(0, 100, 0, false, 0));
    }
    sw.set_port_up(T0, PortId(2), false).expect("port");
    sw.handle_cell(T0, PortId(1), &cell(0, 100, 0, false, 0));
    let c = sw.port_counters(PortId(2)).expect("port");
    assert_eq!((c.port_down, c.queue_depth), (4, [0; 4]));
    assert_eq!(sw.poll_transmit(T0, PortId(2), &mut [[0; 53]; 4]), 0);
}

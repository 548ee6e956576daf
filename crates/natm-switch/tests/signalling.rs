//! VC 0.5 ended on signalling ports: received cells go to the owner's queue, the owner's
//! cells leave ahead of CBR under the port's pacing, both queues are bounded and counted,
//! and a port going down empties them.

use natm_core::{Duration, Instant, LineRate};
use natm_switch::{
    CrossConnect, Endpoint, PortConfig, PortId, SIGNALLING_QUEUE_CELLS, SignallingError, Switch,
    SwitchConfig, SwitchError,
};
use natm_wire::cell::hec;

const T0: Instant = Instant::ZERO;

fn cell(vpi: u32, vci: u32, pti: u32, fill: u8) -> [u8; 53] {
    let w = vpi << 20 | vci << 4 | pti << 1;
    let mut c = [fill; 53];
    c[..4].copy_from_slice(&w.to_be_bytes());
    c[4] = hec(w.to_be_bytes());
    c
}

/// Port 1 signals, port 2 does not; both unrated.
fn switch(rate: LineRate) -> Switch {
    let mut sw = Switch::new(SwitchConfig::default());
    let sig = PortConfig {
        signalling: true,
        rate,
        ..PortConfig::default()
    };
    sw.add_port(PortId(1), sig).unwrap();
    sw.add_port(PortId(2), PortConfig::default()).unwrap();
    sw
}

fn conserved(sw: &Switch) {
    let (mut lhs, mut rhs) = (0, 0);
    for (p, _) in sw.ports() {
        let c = sw.port_counters(p).unwrap();
        lhs += c.cells_in + c.ais_sent + c.signalling_out;
        rhs += c.cells_out + c.dropped() + c.queued() + c.signalling_in;
    }
    assert_eq!(lhs, rhs);
}

#[test]
fn cells_on_0_5_go_to_the_owner_on_a_signalling_port_only() {
    let mut sw = switch(LineRate::Unlimited);
    assert!(!sw.has_signalling());
    // A corrected single-bit error is delivered with its header repaired.
    let mut damaged = cell(0, 5, 0, 2);
    damaged[3] ^= 0x10;
    sw.handle_cells(
        T0,
        PortId(1),
        &[cell(0, 5, 0, 1), damaged, cell(0, 5, 0b100, 3)],
    );
    sw.handle_cells(T0, PortId(2), &[cell(0, 5, 0, 4)]);
    assert!(sw.has_signalling());
    let mut out = [[0u8; 53]; 8];
    assert_eq!(sw.poll_signalling(PortId(2), &mut out), 0);
    assert_eq!(sw.poll_signalling(PortId(1), &mut out), 2);
    assert_eq!(out[0], cell(0, 5, 0, 1));
    assert_eq!(out[1], cell(0, 5, 0, 2));
    assert!(!sw.has_signalling());
    let c1 = sw.port_counters(PortId(1)).unwrap();
    assert_eq!(
        (c1.signalling_in, c1.hec_corrected, c1.oam_terminated),
        (2, 1, 1)
    );
    assert_eq!(sw.port_counters(PortId(2)).unwrap().unknown_vc, 1);
    conserved(&sw);
}

#[test]
fn zero_five_and_vp_0_cannot_be_connected_on_a_signalling_port() {
    let mut sw = switch(LineRate::Unlimited);
    let q = "ubr".parse().unwrap();
    for a in [Endpoint::vc(1, 0, 5), Endpoint::vp(1, 0)] {
        let b = if a.vci.is_some() {
            Endpoint::vc(2, 0, 5)
        } else {
            Endpoint::vp(2, 0)
        };
        let r = sw.connect(T0, &CrossConnect::new(a, b, q));
        assert!(matches!(r, Err(SwitchError::BadEndpoint { .. })), "{r:?}");
    }
    // On the port that does not signal, 0.5 is an ordinary VC.
    let xc = CrossConnect::new(Endpoint::vc(2, 0, 5), Endpoint::vc(1, 0, 100), q);
    sw.connect(T0, &xc).unwrap();
}

#[test]
fn owner_cells_leave_first_with_their_hec_and_0_5_header() {
    let mut sw = switch(LineRate::Unlimited);
    let q = "cbr:max_pcr=1000".parse().unwrap();
    sw.connect(
        T0,
        &CrossConnect::new(Endpoint::vc(2, 0, 100), Endpoint::vc(1, 0, 100), q),
    )
    .unwrap();
    sw.handle_cells(T0, PortId(2), &[cell(0, 100, 0, 9)]);
    // Whatever header the owner gives, 0.5 leaves (PTI and CLP kept: end of an AAL5 frame).
    let mut c = cell(3, 77, 0b001, 7);
    c[4] = 0;
    sw.send_signalling(T0, PortId(1), &c).unwrap();
    assert_eq!(
        sw.send_signalling(T0, PortId(2), &c),
        Err(SignallingError::NotSignalling(PortId(2)))
    );
    assert_eq!(
        sw.send_signalling(T0, PortId(9), &c),
        Err(SignallingError::UnknownPort(PortId(9)))
    );
    assert_eq!(sw.port_counters(PortId(1)).unwrap().queued(), 2);
    let mut out = [[0u8; 53]; 8];
    assert_eq!(sw.poll_transmit(T0, PortId(1), &mut out), 2);
    assert_eq!(out[0], cell(0, 5, 0b001, 7));
    assert_eq!(out[1], cell(0, 100, 0, 9));
    let c1 = sw.port_counters(PortId(1)).unwrap();
    assert_eq!(
        (c1.signalling_out, c1.signalling_queued, c1.cells_out),
        (1, 0, 2)
    );
    conserved(&sw);
}

#[test]
fn owner_cells_are_paced_by_the_port() {
    let mut sw = switch(LineRate::cells(1000).unwrap());
    for i in 0..3 {
        sw.send_signalling(T0, PortId(1), &cell(0, 5, 0, i))
            .unwrap();
    }
    assert_eq!(sw.poll_timeout(), Some(T0));
    let mut out = [[0u8; 53]; 8];
    assert_eq!(sw.poll_transmit(T0, PortId(1), &mut out), 1);
    let next = sw.poll_timeout().unwrap();
    assert_eq!(next, T0 + Duration::from_millis(1));
    assert_eq!(
        sw.poll_transmit(
            Instant::from_nanos(next.as_nanos() - 1),
            PortId(1),
            &mut out
        ),
        0
    );
    assert_eq!(sw.poll_transmit(next, PortId(1), &mut out), 1);
    assert_eq!(out[0][5], 1);
    let t = next + Duration::from_millis(5);
    assert_eq!(sw.poll_transmit(t, PortId(1), &mut out), 1);
    assert_eq!(sw.poll_timeout(), None);
    conserved(&sw);
}

#[test]
fn full_queues_drop_on_input_and_refuse_on_output() {
    let mut sw = switch(LineRate::Unlimited);
    let c = cell(0, 5, 0, 1);
    let cells = vec![c; SIGNALLING_QUEUE_CELLS + 3];
    sw.handle_cells(T0, PortId(1), &cells);
    let c1 = sw.port_counters(PortId(1)).unwrap();
    assert_eq!(c1.signalling_in, SIGNALLING_QUEUE_CELLS as u64);
    assert_eq!(c1.signalling_dropped, 3);
    for _ in 0..SIGNALLING_QUEUE_CELLS {
        sw.send_signalling(T0, PortId(1), &c).unwrap();
    }
    assert_eq!(
        sw.send_signalling(T0, PortId(1), &c),
        Err(SignallingError::Full(PortId(1)))
    );
    conserved(&sw);
    let mut out = vec![[0u8; 53]; SIGNALLING_QUEUE_CELLS + 10];
    assert_eq!(
        sw.poll_signalling(PortId(1), &mut out),
        SIGNALLING_QUEUE_CELLS
    );
    assert_eq!(
        sw.poll_transmit(T0, PortId(1), &mut out),
        SIGNALLING_QUEUE_CELLS
    );
    sw.send_signalling(T0, PortId(1), &c).unwrap();
    conserved(&sw);
}

#[test]
fn a_port_going_down_empties_both_queues_and_refuses() {
    let mut sw = switch(LineRate::Unlimited);
    let c = cell(0, 5, 0, 1);
    sw.handle_cells(T0, PortId(1), &[c, c]);
    sw.send_signalling(T0, PortId(1), &c).unwrap();
    sw.set_port_up(T0, PortId(1), false).unwrap();
    assert!(!sw.has_signalling());
    assert_eq!(
        sw.send_signalling(T0, PortId(1), &c),
        Err(SignallingError::PortDown(PortId(1)))
    );
    sw.handle_cells(T0, PortId(1), &[c]);
    let mut out = [[0u8; 53]; 4];
    assert_eq!(sw.poll_signalling(PortId(1), &mut out), 0);
    let c1 = sw.port_counters(PortId(1)).unwrap();
    assert_eq!((c1.signalling_in, c1.port_down, c1.queued()), (2, 2, 0));
    conserved(&sw);
    sw.set_port_up(T0, PortId(1), true).unwrap();
    sw.handle_cells(T0, PortId(1), &[c]);
    sw.send_signalling(T0, PortId(1), &c).unwrap();
    assert_eq!(sw.poll_signalling(PortId(1), &mut out), 1);
    assert_eq!(sw.poll_transmit(T0, PortId(1), &mut out), 1);
    // Removing a port with cells waiting leaves nothing pending.
    sw.handle_cells(T0, PortId(1), &[c]);
    sw.remove_port(T0, PortId(1)).unwrap();
    assert!(!sw.has_signalling());
}

#[test]
fn assess_says_what_connect_would_without_booking() {
    let mut sw = Switch::new(SwitchConfig::default());
    let slow = PortConfig {
        rate: LineRate::cells(1000).unwrap(),
        ..PortConfig::default()
    };
    sw.add_port(PortId(1), slow).unwrap();
    sw.add_port(PortId(2), slow).unwrap();
    let q = |t: &str| t.parse().unwrap();
    let fits = CrossConnect::new(
        Endpoint::vc(1, 0, 40),
        Endpoint::vc(2, 0, 40),
        q("cbr:max_pcr=600"),
    );
    sw.assess(&fits).unwrap();
    assert_eq!(sw.port_cac(PortId(2)).unwrap().free(), 1000);
    sw.connect(T0, &fits).unwrap();
    let more = CrossConnect::new(
        Endpoint::vc(1, 0, 41),
        Endpoint::vc(2, 0, 41),
        q("cbr:max_pcr=600"),
    );
    assert!(matches!(sw.assess(&more), Err(SwitchError::Admission(_))));
    assert_eq!(sw.connect(T0, &more).map(|_| ()), sw.assess(&more));
}

//! The three-port switch that the property test (`tests/props.rs`) and the fuzz target
//! (`fuzz/fuzz_targets/switch.rs`, which includes this file by path) drive with arbitrary
//! cells and commands, and the conservation check both make after every step. Depends on
//! natm-core and natm-switch only.

use natm_core::{HeaderFormat, Instant, LineRate, Qos};
use natm_switch::{
    Category, CrossConnect, Endpoint, PortConfig, PortId, Switch, SwitchConfig, Upc, XcId,
};

fn qos(text: &str) -> Qos {
    text.parse().expect("QoS text parses")
}

/// Ports 1 (UNI, signalling), 2 (NNI) and 3 (UNI, 10,000 cells/s, signalling), with small
/// queues (3, 3, 5, 8) and EPD at 50%.
pub fn three_ports() -> Switch {
    let mut sw = Switch::new(SwitchConfig::default());
    let small = PortConfig {
        queue_cells: [3, 3, 5, 8],
        epd_percent: 50,
        ..PortConfig::default()
    };
    let nni = PortConfig {
        format: HeaderFormat::Nni,
        ..small
    };
    let rated = PortConfig {
        rate: LineRate::cells(10_000).unwrap(),
        ..small
    };
    let signalling = PortConfig {
        signalling: true,
        ..small
    };
    let rated = PortConfig {
        signalling: true,
        ..rated
    };
    for (id, config) in [(1, signalling), (2, nni), (3, rated)] {
        sw.add_port(PortId(id), config).expect("port");
    }
    sw
}

/// VCs 0.32, 0.33 and 0.34 from each port to VPI 1 (same VCI) on the next, of every kind
/// (UBR AAL5, CBR policed, rt-VBR tagged, UBR tagged with weight 3; AAL5 frame discard on
/// every other one), and the VP 7 between ports 1 and 3.
pub fn cross_connects() -> Vec<CrossConnect> {
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

/// [`three_ports`] with every one of [`cross_connects`] made at time zero: the switch, the
/// cross-connects and their handles (`None` once the driver disconnects one).
pub fn connected() -> (Switch, Vec<CrossConnect>, Vec<Option<XcId>>) {
    let mut sw = three_ports();
    let xcs = cross_connects();
    let live = xcs
        .iter()
        .map(|xc| Some(sw.connect(Instant::ZERO, xc).expect("admitted")))
        .collect();
    (sw, xcs, live)
}

/// Cells are conserved: over ports 1..=3, cells in + AIS + signalling out = out + dropped +
/// queued + signalling in, and per connection direction, in = out + dropped + queued.
pub fn assert_conserved(sw: &Switch) {
    let (mut lhs, mut rhs) = (0u64, 0u64);
    for p in 1..4 {
        let c = sw.port_counters(PortId(p)).expect("port");
        lhs += c.cells_in + c.ais_sent + c.signalling_out;
        rhs += c.cells_out + c.dropped() + c.queued() + c.signalling_in;
    }
    assert_eq!(
        lhs, rhs,
        "cells in + AIS + signalling out = out + dropped + queued + signalling in"
    );
    for (id, _) in sw.connections() {
        let (_, c) = sw.connection(id).expect("listed");
        for d in [c.a_to_b, c.b_to_a] {
            assert_eq!(d.cells_in, d.cells_out + d.dropped + u64::from(d.queued));
        }
    }
}

//! Commands: ports, connect refusals (CAC and checks), disconnect, scale, text forms.

mod common;

use common::{cell, drain, header, qos, switch_with, two_ports};
use natm_core::{HeaderFormat, Instant, LineRate};
use natm_switch::{
    Category, CrossConnect, Endpoint, PortConfig, PortId, Switch, SwitchConfig, SwitchError, Upc,
    XcId,
};
use natm_traffic::cac::Refusal;

const T0: Instant = Instant::ZERO;

fn vc(a: Endpoint, b: Endpoint) -> CrossConnect {
    CrossConnect::new(a, b, qos("ubr"))
}

#[test]
fn cac_refuses_with_the_binding_constraint() {
    let slow = PortConfig {
        rate: LineRate::cells(1000).unwrap(),
        ..PortConfig::default()
    };
    let mut sw = switch_with(&[(1, PortConfig::default()), (2, slow)]);
    let cbr = |vci| {
        CrossConnect::new(
            Endpoint::vc(1, 0, vci),
            Endpoint::vc(2, 0, vci),
            qos("cbr:max_pcr=600"),
        )
    };
    let first = sw.connect(T0, &cbr(40)).expect("600 of 1000 fits");
    let err = sw.connect(T0, &cbr(41)).expect_err("600 more does not");
    assert!(matches!(
        err,
        SwitchError::Admission(Refusal::Bandwidth {
            needed: 600,
            free: 400,
            ..
        })
    ));
    let text = err.to_string();
    assert!(text.contains("port 2"), "{text}");
    assert!(text.contains("400 of 1000 cells/s free"), "{text}");
    assert!(sw.connections().count() == 1, "nothing half-made");
    // Disconnecting gives the bandwidth back.
    sw.disconnect(first).expect("live");
    sw.connect(T0, &cbr(41)).expect("fits again");
}

#[test]
fn connect_refusals_name_what_was_wrong() {
    let nni = PortConfig {
        format: HeaderFormat::Nni,
        ..PortConfig::default()
    };
    let mut sw = switch_with(&[
        (1, PortConfig::default()),
        (2, PortConfig::default()),
        (3, nni),
    ]);
    let id = sw
        .connect(T0, &vc(Endpoint::vc(1, 0, 40), Endpoint::vc(2, 0, 40)))
        .expect("first");
    let cases: Vec<(CrossConnect, &str)> = vec![
        (
            vc(Endpoint::vc(1, 0, 40), Endpoint::vc(2, 0, 41)),
            "endpoint 1:0.40 is in use by connection 0.0",
        ),
        (
            vc(Endpoint::vp(1, 0), Endpoint::vp(2, 1)),
            "endpoint 1:0 is in use by connection 0.0",
        ),
        (
            vc(Endpoint::vc(1, 0, 41), Endpoint::vp(2, 1)),
            "both ends must be VCs",
        ),
        (
            vc(Endpoint::vc(1, 0, 3), Endpoint::vc(2, 0, 41)),
            "VCIs 3 and 4 carry the VP's F4 OAM flows",
        ),
        (
            vc(Endpoint::vc(1, 0, 0), Endpoint::vc(2, 0, 41)),
            "VCI 0 is the unassigned cell",
        ),
        (
            vc(Endpoint::vc(1, 256, 41), Endpoint::vc(2, 0, 41)),
            "VPI above 255 on a UNI port",
        ),
        (
            vc(Endpoint::vc(9, 0, 41), Endpoint::vc(2, 0, 41)),
            "no port 9",
        ),
        (
            vc(Endpoint::vc(1, 0, 41), Endpoint::vc(1, 0, 41)),
            "used by both ends",
        ),
        (
            CrossConnect {
                weight: 0,
                ..vc(Endpoint::vc(1, 0, 41), Endpoint::vc(2, 0, 41))
            },
            "weight must be at least 1",
        ),
        (
            CrossConnect::new(Endpoint::vc(1, 0, 41), Endpoint::vc(2, 0, 41), qos("abr")),
            "class abr has no output category",
        ),
        (
            CrossConnect {
                upc: Upc::Discard,
                category: Some(Category::Cbr),
                ..CrossConnect::new(
                    Endpoint::vc(1, 0, 41),
                    Endpoint::vc(2, 0, 41),
                    qos("vbr:pcr=1000,scr=500,mbs=10"),
                )
            },
            "contract of direction a→b (tx): scr= is given but CBR.1 does not use it",
        ),
    ];
    for (xc, want) in cases {
        let err = sw.connect(T0, &xc).expect_err(want);
        assert!(
            err.to_string().contains(want),
            "{err} does not say {want:?}"
        );
    }
    // An NNI port takes VPI 4095, a UNI port does not.
    sw.connect(T0, &vc(Endpoint::vc(3, 4095, 40), Endpoint::vc(2, 5, 40)))
        .expect("NNI VPI");
    assert_eq!(sw.connections().count(), 2);
    assert!(sw.connection(id).is_some());
}

#[test]
fn ports_add_remove_and_refusals() {
    let mut sw = two_ports();
    assert_eq!(
        sw.add_port(PortId(1), PortConfig::default()),
        Err(SwitchError::PortExists(PortId(1)))
    );
    let bad = PortConfig {
        queue_cells: [0, 1, 1, 1],
        ..PortConfig::default()
    };
    assert!(matches!(
        sw.add_port(PortId(3), bad),
        Err(SwitchError::BadPortConfig { .. })
    ));
    let ids: Vec<_> = sw.ports().map(|(id, _)| id).collect();
    assert_eq!(ids, [PortId(1), PortId(2)]);
    let id = sw
        .connect(T0, &vc(Endpoint::vc(1, 0, 40), Endpoint::vc(2, 0, 40)))
        .expect("xc");
    sw.handle_cell(T0, PortId(1), &cell(0, 40, 0, false, 0));
    sw.remove_port(T0, PortId(2)).expect("removed");
    assert!(sw.connection(id).is_none(), "its connections went with it");
    assert_eq!(sw.port_counters(PortId(2)), None);
    assert_eq!(
        sw.remove_port(T0, PortId(2)),
        Err(SwitchError::UnknownPort(PortId(2)))
    );
    assert_eq!(
        sw.set_port_up(T0, PortId(2), false),
        Err(SwitchError::UnknownPort(PortId(2)))
    );
    sw.add_port(PortId(2), PortConfig::default()).expect("back");
    sw.connect(T0, &vc(Endpoint::vc(1, 0, 40), Endpoint::vc(2, 0, 40)))
        .expect("endpoint free again");
}

#[test]
fn disconnect_frees_everything_and_a_reused_endpoint_starts_at_zero() {
    let mut sw = two_ports();
    let mut xc = vc(Endpoint::vc(1, 0, 40), Endpoint::vc(2, 0, 41));
    xc.upc = Upc::Tag;
    let id = sw.connect(T0, &xc).expect("xc");
    for _ in 0..5 {
        sw.handle_cell(T0, PortId(1), &cell(0, 40, 0, false, 0));
    }
    let (_, c) = sw.connection(id).expect("live");
    assert_eq!((c.a_to_b.cells_in, c.a_to_b.queued), (5, 5));
    assert_eq!(sw.disconnect(id), Ok(xc));
    assert_eq!(sw.disconnect(id), Err(SwitchError::UnknownConnection(id)));
    assert!(sw.connection(id).is_none());
    let p2 = sw.port_counters(PortId(2)).expect("port");
    assert_eq!((p2.flushed, p2.queue_depth), (5, [0; 4]));
    // Cells for the old VC are now unknown.
    sw.handle_cell(T0, PortId(1), &cell(0, 40, 0, false, 0));
    assert_eq!(sw.port_counters(PortId(1)).expect("port").unknown_vc, 1);
    // The same endpoints again: a new handle, counters from zero, traffic flows.
    let again = sw.connect(T0, &xc).expect("xc");
    assert_ne!(again, id);
    assert_eq!(again.index(), id.index(), "the slot is reused");
    let (_, c) = sw.connection(again).expect("live");
    assert_eq!(c, Default::default());
    sw.handle_cell(T0, PortId(1), &cell(0, 40, 0, false, 0));
    assert_eq!(drain(&mut sw, 2).len(), 1);
    let (_, c) = sw.connection(again).expect("live");
    assert_eq!((c.a_to_b.cells_in, c.a_to_b.cells_out), (1, 1));
}

#[test]
fn too_many_connections_refused() {
    let mut sw = Switch::new(SwitchConfig { max_connections: 2 });
    sw.add_port(PortId(1), PortConfig::default()).expect("port");
    for vci in 40..42 {
        sw.connect(T0, &vc(Endpoint::vc(1, 0, vci), Endpoint::vc(1, 1, vci)))
            .expect("xc");
    }
    let err = sw.connect(T0, &vc(Endpoint::vc(1, 0, 50), Endpoint::vc(1, 1, 50)));
    assert_eq!(err, Err(SwitchError::TooMany { max: 2 }));
}

#[test]
fn state_per_connection_is_at_most_256_bytes() {
    let n = Switch::state_bytes_per_connection();
    assert!(n <= 256, "{n} bytes per connection");
}

#[test]
fn sixty_five_thousand_cross_connects_still_forward() {
    let mut sw = two_ports();
    let n = 65_536u32;
    let ends = |i: u32| {
        let (vpi, vci) = ((i / 512) as u16, (32 + i % 512) as u16);
        (
            Endpoint::vc(1, vpi, vci),
            Endpoint::vc(2, vpi + 100, vci + 7),
        )
    };
    for i in 0..n {
        let (a, b) = ends(i);
        sw.connect(T0, &vc(a, b)).expect("admitted");
    }
    assert_eq!(sw.connection_count(), n);
    for i in (0..n).step_by(997) {
        let (a, b) = ends(i);
        sw.handle_cell(
            T0,
            PortId(1),
            &cell(u32::from(a.vpi), u32::from(a.vci.unwrap()), 0, false, 0),
        );
        sw.handle_cell(
            T0,
            PortId(2),
            &cell(u32::from(b.vpi), u32::from(b.vci.unwrap()), 1, false, 0),
        );
        let to_b = drain(&mut sw, 2);
        let to_a = drain(&mut sw, 1);
        assert_eq!(
            to_b.iter().map(header).collect::<Vec<_>>(),
            [(u32::from(b.vpi), u32::from(b.vci.unwrap()), 0, false)]
        );
        assert_eq!(
            to_a.iter().map(header).collect::<Vec<_>>(),
            [(u32::from(a.vpi), u32::from(a.vci.unwrap()), 1, false)]
        );
    }
    assert_eq!(sw.port_counters(PortId(1)).expect("port").unknown_vc, 0);
}

#[test]
fn text_forms_round_trip() {
    for s in ["1:0.100", "1:7", "65535:4095.65535"] {
        let e: Endpoint = s.parse().expect(s);
        assert_eq!(e.to_string(), s);
    }
    assert_eq!("1:0.100".parse(), Ok(Endpoint::vc(1, 0, 100)));
    assert_eq!("2:7".parse(), Ok(Endpoint::vp(2, 7)));
    for bad in [
        "",
        "1",
        "1:",
        "1:0.",
        "x:1",
        "1:0.100.3",
        "1:-1",
        "70000:1",
        "1:0.70000",
    ] {
        let err = bad.parse::<Endpoint>().expect_err(bad);
        assert!(err.to_string().starts_with("expected an endpoint"), "{err}");
    }
    for (s, u) in [
        ("off", Upc::Off),
        ("tag", Upc::Tag),
        ("discard", Upc::Discard),
    ] {
        assert_eq!(s.parse(), Ok(u));
        assert_eq!(u.to_string(), s);
    }
    assert!("police".parse::<Upc>().is_err());
    let id: XcId = "17.2".parse().expect("id");
    assert_eq!(
        (id.index(), id.generation(), id.to_string()),
        (17, 2, "17.2".to_string())
    );
    assert_eq!(PortId(3).to_string(), "3");
}

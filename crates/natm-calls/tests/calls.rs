//! Calls through one switch and across two, in virtual time: set-up, data through the
//! cross-connect, release from either side, refusals with their cause and explanation,
//! ports going down, RESTART, and lossy signalling links that leak nothing.

mod common;

use common::{Net, cells_of, host_address, host_route, prefix};
use natm_calls::{CallControl, Phase};
use natm_core::{Duration, LineRate, VcId};
use natm_sig::{CallEvent, CauseValue, Location, ReleaseOrigin};
use natm_switch::PortId;

const SEC: Duration = Duration::from_secs(1);

fn rate(c: u32) -> LineRate {
    LineRate::cells(c).unwrap()
}

/// One switch, hosts on ports 1 and 2 (port 2's line at 10,000 cells/s).
fn one_switch() -> Net {
    let mut net = Net::new();
    net.switch(&[(host_route(1, 1), 1), (host_route(1, 2), 2)]);
    net.host(0, 1, LineRate::Unlimited);
    net.host(0, 2, rate(10_000));
    net.run_for(SEC);
    net
}

#[test]
fn a_call_carries_data_and_is_released_by_either_side() {
    let mut net = one_switch();
    for p in net.nodes[0].cc.ports() {
        assert!(p.link_up, "port {} SAAL up", p.port);
        assert_eq!(p.establishments, 1);
    }
    for release_by_caller in [true, false] {
        let call = net.call(0, 1, host_address(1, 2), "aal5,cbr:max_pcr=1000");
        net.step();
        let (incoming, conn_b) = net.incoming(0, 2).expect("SETUP at the called host");
        let conn_b = conn_b.expect("the switch names the VC");
        assert!(conn_b.vci >= 32768);
        net.accept(0, 2, incoming);
        net.step();
        let events = net.take_events(0, 1);
        let conn_a = events
            .iter()
            .find_map(|e| match e {
                CallEvent::Connected { call: c, conn } if *c == call => *conn,
                _ => None,
            })
            .expect("the caller is connected");
        let calls: Vec<_> = net.nodes[0].cc.calls(net.now).collect();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].phase, Phase::Active);
        assert_eq!(calls[0].a.unwrap().vci, Some(conn_a.vci));
        assert_eq!(calls[0].b.unwrap().vci, Some(conn_b.vci));
        assert_eq!(
            net.nodes[0].cc.counters().connected,
            1 + u64::from(!release_by_caller)
        );
        // Data both ways through the cross-connect.
        net.send_data(0, 1, conn_a.vci, 3);
        net.send_data(0, 2, conn_b.vci, 2);
        assert_eq!(std::mem::take(&mut net.h(0, 2).data).len(), 3);
        assert_eq!(std::mem::take(&mut net.h(0, 1).data).len(), 2);
        assert!(net.nodes[0].sw.port_cac(PortId(2)).unwrap().reserved_cbr() > 0);
        let cause = natm_sig::Cause::new(Location::User, CauseValue::NormalCallClearing);
        let (releaser, other, id) = if release_by_caller {
            (1, 2, call)
        } else {
            (2, 1, incoming)
        };
        let now = net.now;
        net.h(0, releaser)
            .sig
            .release(now, id, cause.clone())
            .unwrap();
        net.step();
        let events = net.take_events(0, other);
        let got = events
            .iter()
            .find_map(|e| match e {
                CallEvent::Released { cause, by, .. } => Some((cause.clone(), *by)),
                _ => None,
            })
            .expect("the other side is released");
        assert_eq!(
            got,
            (cause, ReleaseOrigin::Peer),
            "the same cause passes through"
        );
        net.take_events(0, releaser);
        net.assert_nothing_leaked();
    }
}

#[test]
fn cac_refuses_with_cause_37_and_an_explanation() {
    let mut net = one_switch();
    // Port 2 is 10,000 cells/s: 6,000 fits once.
    let first = net.call(0, 1, host_address(1, 2), "aal5,cbr:max_pcr=6000");
    net.step();
    let (incoming, _) = net.incoming(0, 2).unwrap();
    net.accept(0, 2, incoming);
    net.step();
    let second = net.call(0, 1, host_address(1, 2), "aal5,cbr:max_pcr=6000");
    net.step();
    let events = net.take_events(0, 1);
    let cause = Net::released(&events, second).expect("refused");
    assert_eq!(cause.value, CauseValue::UserCellRateNotAvailable);
    assert_eq!(cause.location, Location::PrivateLocal);
    assert_eq!(cause.diagnostics, b"s1 p2: 4000 c/s free");
    assert!(Net::released(&events, first).is_none());
    assert!(
        net.incoming(0, 2).is_none(),
        "nothing reached the called host"
    );
    let line = net
        .logs
        .iter()
        .find(|l| l.contains("cause 37"))
        .expect("logged");
    assert!(
        line.contains("p1 cref") && line.contains("4000 of 10000 cells/s free"),
        "{line}"
    );
    assert_eq!(net.nodes[0].cc.counters().refused, 1);
}

#[test]
fn the_forwarded_setup_keeps_the_parties_qos_blli_and_bhli() {
    use natm_wire::q2931::{Bhli, BhliType, Blli};
    let mut net = one_switch();
    let params = natm_sig::SetupParams {
        called: natm_sig::PartyNumber::aesa(host_address(1, 2)),
        called_sub: None,
        calling: Some(natm_sig::PartyNumber::aesa(host_address(1, 1))),
        calling_sub: None,
        qos: common::qos("aal5,cbr:max_pcr=1000,max_sdu=9180"),
        blli: Some(Blli::llc()),
        bhli: Some(Bhli {
            kind: BhliType::User,
            info: vec![1, 2, 3],
        }),
        conn: None,
    };
    let now = net.now;
    net.h(0, 1).sig.setup(now, &params).unwrap();
    net.step();
    let setup = net
        .take_events(0, 2)
        .into_iter()
        .find_map(|e| match e {
            CallEvent::Setup { setup, .. } => Some(setup),
            _ => None,
        })
        .expect("SETUP forwarded");
    assert!(setup.qos_mapped);
    assert_eq!(setup.params.called, params.called);
    assert_eq!(setup.params.calling, params.calling);
    assert_eq!(setup.params.qos, params.qos);
    assert_eq!(setup.params.blli, params.blli);
    assert_eq!(setup.params.bhli, params.bhli);
    let conn = setup.params.conn.expect("the network side names the VC");
    assert_eq!((conn.vpci, conn.vci), (0, 32768));
}

#[test]
fn a_uni_3_1_caller_is_refused_with_51() {
    let mut net = Net::new();
    net.switch(&[(host_route(1, 1), 1), (host_route(1, 2), 2)]);
    net.host_version(0, 1, LineRate::Unlimited, natm_sig::UniVersion::Uni31);
    net.host(0, 2, rate(10_000));
    net.run_for(SEC);
    let call = net.call(0, 1, host_address(1, 2), "aal5,cbr:max_pcr=12000");
    net.step();
    let cause = Net::released(&net.take_events(0, 1), call).expect("refused");
    assert_eq!(cause.value, CauseValue::UserCellRateNotAvailable31);
    assert_eq!(cause.diagnostics, b"s1 p2: 10000 c/s free");
    net.assert_nothing_leaked();
}

#[test]
fn unknown_addresses_are_refused_with_1_or_3() {
    let mut net = one_switch();
    let own = prefix(1).address(natm_core::addr::Esi([9; 6]), 0).unwrap();
    let foreign = prefix(7).address(natm_core::addr::Esi([9; 6]), 0).unwrap();
    let a = net.call(0, 1, own, "aal5,ubr");
    let b = net.call(0, 1, foreign, "aal5,ubr");
    net.step();
    let events = net.take_events(0, 1);
    let ca = Net::released(&events, a).unwrap();
    let cb = Net::released(&events, b).unwrap();
    assert_eq!(ca.value, CauseValue::UnallocatedNumber);
    assert_eq!(ca.diagnostics, b"s1 unallocated");
    assert_eq!(cb.value, CauseValue::NoRouteToDestination);
    assert_eq!(cb.diagnostics, b"s1 no route");
    net.assert_nothing_leaked();
}

/// s1 (hosts on 1, 2) ─ port 3 (network) ══ port 3 (user) ─ s2 (host on 1), 10,000 c/s.
fn two_switches() -> Net {
    let mut net = Net::new();
    net.switch(&[(host_route(1, 1), 1), (host_route(1, 2), 2), (prefix(2), 3)]);
    net.switch(&[(host_route(2, 1), 1), (prefix(1), 3)]);
    net.host(0, 1, LineRate::Unlimited);
    net.host(0, 2, LineRate::Unlimited);
    net.host(1, 1, LineRate::Unlimited);
    net.trunk(0, 3, 1, 3, rate(10_000));
    net.run_for(SEC);
    net
}

#[test]
fn a_call_crosses_a_trunk_and_refusals_come_back_from_the_far_switch() {
    let mut net = two_switches();
    let call = net.call(0, 1, host_address(2, 1), "aal5,cbr:max_pcr=3000");
    net.step();
    let (incoming, conn) = net.incoming(1, 1).expect("SETUP across the trunk");
    assert!(conn.is_some());
    net.accept(1, 1, incoming);
    net.step();
    let conn_a = net
        .take_events(0, 1)
        .iter()
        .find_map(|e| match e {
            CallEvent::Connected { call: c, conn } if *c == call => *conn,
            _ => None,
        })
        .expect("connected across two switches");
    // Data from s1's host reaches s2's.
    net.send_data(0, 1, conn_a.vci, 4);
    assert_eq!(net.h(1, 1).data.len(), 4);
    // The trunk's 10,000 c/s hold 3,000 + 6,000 but not 3,000 more: s1 refuses at its
    // trunk port (p3).
    let second = net.call(0, 2, host_address(2, 1), "aal5,cbr:max_pcr=6000");
    net.step();
    let (inc2, _) = net.incoming(1, 1).unwrap();
    net.accept(1, 1, inc2);
    net.step();
    let third = net.call(0, 2, host_address(2, 1), "aal5,cbr:max_pcr=3000");
    net.step();
    let cause = Net::released(&net.take_events(0, 2), third).expect("refused");
    assert_eq!(cause.value, CauseValue::UserCellRateNotAvailable);
    assert_eq!(cause.diagnostics, b"s1 p3: 1000 c/s free");
    // Backward: s2's host calls s1's with more than s2's trunk port has left.
    let back = net.call(1, 1, host_address(1, 1), "aal5,cbr:max_pcr=2000");
    net.step();
    let cause = Net::released(&net.take_events(1, 1), back).expect("refused");
    assert_eq!(cause.diagnostics, b"s2 p3: 1000 c/s free");
    // An address unknown at s2 is refused there and the cause passes back through s1.
    let far = net.call(
        0,
        1,
        prefix(2).address(natm_core::addr::Esi([7; 6]), 0).unwrap(),
        "aal5,ubr",
    );
    net.step();
    let cause = Net::released(&net.take_events(0, 1), far).expect("refused by s2");
    assert_eq!(cause.value, CauseValue::UnallocatedNumber);
    assert_eq!(cause.diagnostics, b"s2 unallocated");
    // Release everything: nothing leaks on either switch.
    let now = net.now;
    let normal = natm_sig::Cause::new(Location::User, CauseValue::NormalCallClearing);
    net.h(0, 1).sig.release(now, call, normal.clone()).unwrap();
    net.h(0, 2).sig.release(now, second, normal).unwrap();
    net.step();
    net.run_for(SEC);
    net.assert_nothing_leaked();
}

#[test]
fn a_port_going_down_clears_its_calls_and_returns_the_bandwidth() {
    let mut net = one_switch();
    let call = net.call(0, 1, host_address(1, 2), "aal5,cbr:max_pcr=6000");
    net.step();
    let (incoming, _) = net.incoming(0, 2).unwrap();
    net.accept(0, 2, incoming);
    net.step();
    net.take_events(0, 1);
    let now = net.now;
    let node = &mut net.nodes[0];
    node.sw.set_port_up(now, PortId(2), false).unwrap();
    node.cc.port_down(now, PortId(2), &mut node.sw).unwrap();
    net.step();
    let cause = Net::released(&net.take_events(0, 1), call).expect("cleared");
    assert_eq!(cause.value, CauseValue::DestinationOutOfOrder);
    assert_eq!(cause.diagnostics, b"s1 p2 port down");
    assert_eq!(net.nodes[0].cc.counters().cleared_by_port, 1);
    net.assert_nothing_leaked();
    // The link comes back: the host's calls were lost with it, RESTART says so.
    let node = &mut net.nodes[0];
    node.sw.set_port_up(now, PortId(2), true).unwrap();
    node.cc.port_up(now, PortId(2), &mut node.sw).unwrap();
    net.run_for(Duration::from_secs(20));
    let events = net.take_events(0, 2);
    assert!(
        events.iter().any(|e| matches!(
            e,
            CallEvent::Restarted {
                what: natm_sig::Restart::All
            }
        )),
        "RESTART (all) after port up: {events:?}"
    );
    assert!(net.nodes[0].cc.ports().all(|p| p.link_up));
    // A second identical call succeeds.
    let again = net.call(0, 1, host_address(1, 2), "aal5,cbr:max_pcr=6000");
    net.step();
    let (incoming, _) = net.incoming(0, 2).expect("SETUP after the port came back");
    net.accept(0, 2, incoming);
    net.step();
    assert!(
        net.take_events(0, 1)
            .iter()
            .any(|e| matches!(e, CallEvent::Connected { call, .. } if *call == again))
    );
}

#[test]
fn a_lost_saal_clears_the_port_s_calls_and_restarts_when_it_is_back() {
    let mut net = one_switch();
    let call = net.call(0, 1, host_address(1, 2), "aal5,cbr:max_pcr=6000");
    net.step();
    let (incoming, _) = net.incoming(0, 2).unwrap();
    net.accept(0, 2, incoming);
    net.step();
    net.take_events(0, 1);
    // Host 2's signalling link is cut: SSCOP's NO-RESPONSE timer ends the SAAL.
    net.cut.insert((0, 2));
    net.run_for(Duration::from_secs(10));
    let cause = Net::released(&net.take_events(0, 1), call).expect("cleared");
    assert_eq!(cause.value, CauseValue::DestinationOutOfOrder);
    assert_eq!(cause.diagnostics, b"s1 p2 SAAL lost");
    assert!(
        net.logs
            .iter()
            .any(|l| l.contains("p2: SAAL lost: 1 calls cleared"))
    );
    net.assert_nothing_leaked();
    // Back: the fresh entity establishes and restarts; host 2's call goes.
    net.cut.clear();
    net.run_for(Duration::from_secs(20));
    let events = net.take_events(0, 2);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, CallEvent::Released { call, .. } if *call == incoming)),
        "host 2's call is cleared: {events:?}"
    );
    let p2 = net.nodes[0]
        .cc
        .ports()
        .find(|p| p.port == PortId(2))
        .unwrap();
    assert!(p2.link_up && p2.establishments >= 2, "{p2:?}");
    assert_eq!(net.h(0, 2).sig.uni().call_count(), 0);
    // And a new call gets through.
    let again = net.call(0, 1, host_address(1, 2), "aal5,cbr:max_pcr=6000");
    net.step();
    let (incoming, _) = net.incoming(0, 2).expect("SETUP after the SAAL came back");
    net.accept(0, 2, incoming);
    net.step();
    assert!(
        net.take_events(0, 1)
            .iter()
            .any(|e| matches!(e, CallEvent::Connected { call, .. } if *call == again))
    );
}

#[test]
fn lossy_duplicating_signalling_links_leak_nothing() {
    for seed in 1..=8 {
        let mut net = two_switches();
        net.rng = common::Rng::new(seed);
        net.loss = 5;
        net.dup = 5;
        let targets = [host_address(1, 2), host_address(2, 1), host_address(1, 1)];
        let hosts = [(0usize, 1u16), (0, 2), (1, 1)];
        for round in 0..60u64 {
            let (s, p) = hosts[(round % 3) as usize];
            let mut k = (round + seed) as usize % 3;
            if targets[k] == net.h(s, p).address {
                k = (k + 1) % 3;
            }
            net.call(s, p, targets[k], "aal5,ubr");
            net.run_for(Duration::from_millis(200));
            // Every host answers what reaches it, and releases what connected, at random.
            for &(s, p) in &hosts {
                let now = net.now;
                let events = net.take_events(s, p);
                for e in events {
                    match e {
                        CallEvent::Setup { call, .. } => {
                            let h = net.h(s, p);
                            if net_chance(seed, round) {
                                let _ = h.sig.connect(now, call, None);
                            } else {
                                let c =
                                    natm_sig::Cause::new(Location::User, CauseValue::CallRejected);
                                let _ = h.sig.release(now, call, c);
                            }
                        }
                        CallEvent::Connected { call, .. } => {
                            let c = natm_sig::Cause::new(
                                Location::User,
                                CauseValue::NormalCallClearing,
                            );
                            let _ = net.h(s, p).sig.release(now, call, c);
                        }
                        _ => {}
                    }
                }
            }
        }
        // Quiet: no loss, every call released, timers run out.
        net.loss = 0;
        net.dup = 0;
        for &(s, p) in &hosts {
            let now = net.now;
            let calls: Vec<_> = net.h(s, p).sig.uni().calls().map(|(c, _)| c).collect();
            for c in calls {
                let cause = natm_sig::Cause::new(Location::User, CauseValue::NormalCallClearing);
                let _ = net.h(s, p).sig.release(now, c, cause);
            }
        }
        net.run_for(Duration::from_secs(120));
        let connected: u64 = net.nodes.iter().map(|n| n.cc.counters().connected).sum();
        assert!(connected > 3, "seed {seed}: {connected} calls connected");
        net.assert_nothing_leaked();
    }
}

fn net_chance(seed: u64, round: u64) -> bool {
    !(seed + round).is_multiple_of(4)
}

#[test]
fn state_per_call_is_at_most_a_kibibyte() {
    let n = CallControl::state_bytes_per_call();
    eprintln!("state per call: {n} bytes");
    assert!(n > 0 && n <= 1024, "{n} bytes per call");
}

#[test]
fn a_release_waits_for_the_cells_queued_toward_the_other_side() {
    // Port 2's line carries 10,000 cells/s: 40 cells sent at once take 4 ms to leave,
    // and the RELEASE that follows them would go first (0.5 is sent ahead of the queues)
    // and the disconnect drop what is queued.
    let mut net = one_switch();
    let call = net.call(0, 1, host_address(1, 2), "aal5,ubr");
    net.step();
    let (incoming, _) = net.incoming(0, 2).expect("SETUP at the called host");
    net.accept(0, 2, incoming);
    net.step();
    let conn_a = net
        .take_events(0, 1)
        .iter()
        .find_map(|e| match e {
            CallEvent::Connected { call: c, conn } if *c == call => *conn,
            _ => None,
        })
        .expect("the caller is connected");
    let now = net.now;
    let vc = VcId::uni(0, u32::from(conn_a.vci)).unwrap();
    for i in 0..40u8 {
        let cells = cells_of(vc, &[i; 40]);
        net.nodes[0].sw.handle_cells(now, PortId(1), &cells);
    }
    let cause = natm_sig::Cause::new(Location::User, CauseValue::NormalCallClearing);
    net.h(0, 1).sig.release(now, call, cause.clone()).unwrap();
    // The called host sees its release only after every cell.
    let mut released = None;
    for _ in 0..200 {
        net.run_for(Duration::from_micros(500));
        let events = net.take_events(0, 2);
        if let Some(e) = events
            .iter()
            .find(|e| matches!(e, CallEvent::Released { .. }))
        {
            released = Some((e.clone(), net.h(0, 2).data.len()));
            break;
        }
    }
    let (event, cells_before) = released.expect("the called host is released");
    assert!(
        matches!(&event, CallEvent::Released { cause: c, .. } if *c == cause),
        "{event:?}"
    );
    assert_eq!(cells_before, 40, "every cell arrived before the release");
    assert_eq!(net.nodes[0].cc.call_count(), 0);
    net.take_events(0, 1);
    net.assert_nothing_leaked();
}

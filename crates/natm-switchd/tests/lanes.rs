//! Lanes through the pure [`Fabric`]: an application's own rings on a port carry the
//! user data of its VCs both ways, cells on any other VC are refused and counted, OAM
//! stays on the main link (hostd is the OAM end point), a lane that fails or whose port
//! loses its main link is removed, and the port's traffic falls back to the main link.
//!
//! Two UNI ports, 1:0.100 ↔ 2:0.100 and 1:0.101 ↔ 2:0.101 (UBR), shared-memory main
//! links whose host ends the test keeps, and a lane for 0.100 on each port.

use std::os::unix::net::UnixStream;

use natm_core::HeaderFormat;
use natm_link::lane::LaneVc;
use natm_link::shm::{PEER_POLL, ShmLink};
use natm_link::{CellBytes, CellLink};
use natm_switch::{PortConfig, PortId};
use natm_switchd::fabric::Fabric;
use natm_wire::cell::{Cell as CellView, CellHeader, Pti};
use natm_wire::oam::{Loopback, OamFlow, OamRepr};

#[path = "support/mod.rs"]
mod support;
use support::*;

/// A lane for `vcs` on port index `i`; the application's end.
fn lane(f: &mut Fabric, i: usize, vcs: &[u16]) -> ShmLink {
    let (sw, app) = ShmLink::pair(RING).unwrap();
    f.ports[i]
        .add_lane(vcs.iter().map(|&v| lane_vc(v)).collect(), 1, Box::new(sw))
        .expect("lane taken");
    app
}

/// A lane whose switch side watches a socket: dropping the returned socket is the
/// application's end going away.
fn watched_lane(f: &mut Fabric, i: usize, vcs: &[u16]) -> (ShmLink, UnixStream) {
    let (sw_sock, app_sock) = UnixStream::pair().unwrap();
    let (mut sw, app) = ShmLink::pair(RING).unwrap();
    sw.watch_peer(sw_sock).unwrap();
    f.ports[i]
        .add_lane(vcs.iter().map(|&v| lane_vc(v)).collect(), 1, Box::new(sw))
        .expect("lane taken");
    (app, app_sock)
}

/// A watched lane's application goes away (its socket and rings dropped); the fabric steps
/// once its peer check has had time to look.
fn app_goes_away(f: &mut Fabric, app_sock: UnixStream, app: ShmLink) {
    drop((app_sock, app));
    std::thread::sleep(PEER_POLL * 5);
    steps(f, 3);
}

#[test]
fn user_data_goes_lane_to_lane_and_other_vcs_stay_on_the_main_links() {
    let (mut f, mut h1, mut h2) = fabric();
    let mut l1 = lane(&mut f, 0, &[100]);
    let mut l2 = lane(&mut f, 1, &[100]);
    assert_eq!(f.ports[0].stats.lanes_attached, 1);
    assert_eq!(f.ports[0].lanes[0].vcs, vec![lane_vc(100)]);

    // (a) Lane to lane, both ways; nothing on the main links.
    send(&mut l1, &[data_cell(100, 1), data_cell(100, 2)]);
    steps(&mut f, 3);
    let got = drain(&mut l2);
    assert_eq!(got.len(), 2, "port 2's lane has both cells");
    for (c, tag) in got.iter().zip([1u8, 2]) {
        let h = header(c);
        assert_eq!(h.vc, vc(100), "as cross-connected");
        assert!(h.pti.is_user_data() && h.pti.is_end_of_frame());
        assert!(c[5..].iter().all(|&b| b == tag), "payload kept, in order");
    }
    assert!(drain(&mut h2).is_empty(), "not on port 2's main link");
    send(&mut l2, &[data_cell(100, 3)]);
    steps(&mut f, 3);
    let got = drain(&mut l1);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0][5], 3);
    assert!(drain(&mut h1).is_empty(), "not on port 1's main link");
    assert_eq!(f.ports[0].lanes[0].stats.rx, 2);
    assert_eq!(f.ports[0].lanes[0].stats.tx, 1);
    assert_eq!(f.ports[1].lanes[0].stats.rx, 1);
    assert_eq!(f.ports[1].lanes[0].stats.tx, 2);

    // From hostd's main link into the far application's lane as well.
    send(&mut h1, &[data_cell(100, 4)]);
    steps(&mut f, 3);
    let got = drain(&mut l2);
    assert_eq!(got.len(), 1, "main link → lane");
    assert_eq!(got[0][5], 4);
    assert!(drain(&mut h2).is_empty());

    // 0.101 has no lane: it stays on the main links.
    send(&mut h1, &[data_cell(101, 5)]);
    steps(&mut f, 3);
    let got = user_data(drain(&mut h2));
    assert_eq!(got.len(), 1);
    assert_eq!(header(&got[0]).vc, vc(101));
    assert!(drain(&mut l2).is_empty(), "0.101 is not the lane's");

    // (b) A lane may only send on its own VCs: a cell on 0.101 (cross-connected, so it
    // would come out of port 2 if taken) is refused and counted.
    send(&mut l1, &[data_cell(101, 6), data_cell(100, 7)]);
    steps(&mut f, 3);
    assert_eq!(f.ports[0].stats.lane_refused, 1);
    assert_eq!(f.ports[1].stats.lane_refused, 0);
    assert!(
        drain(&mut h2).is_empty(),
        "the refused cell was not forwarded"
    );
    let got = drain(&mut l2);
    assert_eq!(got.len(), 1, "the lane's own cell still went");
    assert_eq!(got[0][5], 7);
    assert_eq!(f.ports[0].lanes[0].stats.rx, 3, "refused cells are not rx");
}

#[test]
fn interleaved_runs_of_vcs_are_sorted_cell_by_cell_in_order() {
    // The fabric looks a VC up once per run of equal headers: runs of own and foreign
    // cells, and an OAM cell inside a run of its VC's user data, must each still go
    // their own way, in order.
    let (mut f, mut h1, mut h2) = fabric();
    let mut l1 = lane(&mut f, 0, &[100]);
    let mut l2 = lane(&mut f, 1, &[100]);
    let from_lane = [
        data_cell(100, 1),
        data_cell(100, 2),
        data_cell(101, 50),
        data_cell(101, 51),
        data_cell(100, 3),
        data_cell(101, 52),
        data_cell(100, 4),
    ];
    send(&mut l1, &from_lane);
    steps(&mut f, 3);
    let tags = |cells: Vec<CellBytes>| cells.iter().map(|c| c[5]).collect::<Vec<_>>();
    assert_eq!(
        tags(drain(&mut l2)),
        [1, 2, 3, 4],
        "the lane's own, in order"
    );
    assert_eq!(f.ports[0].stats.lane_refused, 3, "the three foreign cells");
    assert!(drain(&mut h2).is_empty(), "no refused cell was forwarded");

    // Out of port 2, cells of the lane's VC go to the lane and the rest, an OAM cell on
    // the lane's own VC included, to the main link.
    let from_main = [
        data_cell(100, 5),
        data_cell(101, 60),
        data_cell(100, 6),
        data_cell(100, 7),
        oam_cell(100, OamFlow::F5EndToEnd, 0x33),
        data_cell(100, 8),
        data_cell(101, 61),
        data_cell(101, 62),
    ];
    send(&mut h1, &from_main);
    steps(&mut f, 3);
    assert_eq!(tags(drain(&mut l2)), [5, 6, 7, 8]);
    let main = drain(&mut h2);
    assert_eq!(main.len(), 4, "three cells of 0.101 and the OAM cell");
    let oam: Vec<CellHeader> = main
        .iter()
        .map(header)
        .filter(|h| h.pti == Pti::EndToEndF5)
        .collect();
    assert_eq!(oam.len(), 1, "the OAM cell");
    assert_eq!(oam[0].vc, vc(100));
    // Two VCs share the port's UBR round robin: order holds within each.
    assert_eq!(tags(user_data(main)), [60, 61, 62]);
}

#[test]
fn a_frame_reaches_its_lane_in_one_publication() {
    // Every publication may wake a reader asleep on the lane: a frame's cells and its
    // last cell (another header) must not go in two.
    let (mut f, _h1, _h2) = fabric();
    let mut l1 = lane(&mut f, 0, &[100]);
    let mut l2 = lane(&mut f, 1, &[100]);
    let mut frame: Vec<CellBytes> = (0..3)
        .map(|k| {
            let mut c = data_cell(100, k);
            CellHeader::data(vc(100), false)
                .emit(&mut CellView::new_unchecked(&mut c[..]), HeaderFormat::Uni)
                .expect("a UNI header");
            c
        })
        .collect();
    frame.push(data_cell(100, 3));
    send(&mut l1, &frame);
    steps(&mut f, 1);
    let c = f.ports[1].lanes[0].link.counters();
    assert_eq!(
        (c.tx_cells, c.tx_batches),
        (4, 1),
        "one publication of 4 cells"
    );
    let got: Vec<u8> = drain(&mut l2).iter().map(|c| c[5]).collect();
    assert_eq!(got, [0, 1, 2, 3]);
}

#[test]
fn oam_cells_go_to_the_main_link() {
    let (mut f, mut h1, mut h2) = fabric();
    let mut l1 = lane(&mut f, 0, &[100]);
    let mut l2 = lane(&mut f, 1, &[100]);

    // (c) An F5 end-to-end cell (PTI 5) on 0.100 from port 1 leaves port 2 by its main
    // link: hostd is the VC's OAM end point. Both from hostd's link and from the lane.
    for (from, tag) in [(&mut h1, 0x11), (&mut l1, 0x22)] {
        send(from, &[oam_cell(100, OamFlow::F5EndToEnd, tag)]);
        steps(&mut f, 3);
        let got = drain(&mut h2);
        assert_eq!(got.len(), 1, "on port 2's main link");
        let h = header(&got[0]);
        assert_eq!((h.vc, h.pti), (vc(100), Pti::EndToEndF5));
        assert_eq!(
            OamRepr::parse_unverified(got[0][5..].try_into().unwrap()),
            OamRepr::Loopback(Loopback::request(tag))
        );
        assert!(drain(&mut l2).is_empty(), "not into port 2's lane");
    }

    // A segment loopback (PTI 4) sent into a lane is answered by the switch port, and the
    // answer goes out of the main link, not the lane.
    send(&mut l1, &[oam_cell(100, OamFlow::F5Segment, 0x33)]);
    steps(&mut f, 3);
    let got = drain(&mut h1);
    assert_eq!(got.len(), 1, "the switch's answer is on port 1's main link");
    assert_eq!(header(&got[0]).pti, Pti::SegmentF5);
    assert_eq!(
        OamRepr::parse_unverified(got[0][5..].try_into().unwrap()),
        OamRepr::Loopback(Loopback::request(0x33).reply())
    );
    assert!(drain(&mut l1).is_empty());
    assert!(
        drain(&mut h2).is_empty(),
        "a segment flow ends at the switch"
    );

    // User data still takes the lane.
    send(&mut h1, &[data_cell(100, 9)]);
    steps(&mut f, 3);
    assert_eq!(drain(&mut l2).len(), 1);
    assert!(drain(&mut h2).is_empty());
}

#[test]
fn lanes_that_cannot_be_are_refused_with_the_reason() {
    let (mut f, _h1, _h2) = fabric();
    f.add_port(PortId(3), PortConfig::default()).unwrap();
    let _l1 = lane(&mut f, 0, &[100, 200]);

    // (d) A VC another lane of the port has.
    let (sw, _app) = ShmLink::pair(RING).unwrap();
    let e = f.ports[0]
        .add_lane(vec![lane_vc(300), lane_vc(200)], 1, Box::new(sw))
        .unwrap_err();
    assert!(e.contains("0.200"), "names the VC: {e}");
    assert!(!e.contains("0.300"), "only the one taken: {e}");
    // The same VC on the other port is fine: lanes are per port.
    let _l2 = lane(&mut f, 1, &[200]);

    // A port with no link.
    let (sw, _app) = ShmLink::pair(RING).unwrap();
    let e = f.ports[2]
        .add_lane(vec![lane_vc(100)], 1, Box::new(sw))
        .unwrap_err();
    assert!(e.contains("no link"), "{e}");
    assert!(f.ports[2].lanes.is_empty());

    // A VPI that a UNI header cannot carry.
    let (sw, _app) = ShmLink::pair(RING).unwrap();
    let e = f.ports[0]
        .add_lane(vec![LaneVc { vpi: 256, vci: 100 }], 1, Box::new(sw))
        .unwrap_err();
    assert!(e.contains("VPI 256"), "{e}");

    // Nothing refused was attached.
    assert_eq!(f.ports[0].lanes.len(), 1);
    assert_eq!(f.ports[0].stats.lanes_attached, 1);
    assert_eq!(f.ports[1].stats.lanes_attached, 1);
    assert_eq!(f.ports[2].stats.lanes_attached, 0);
}

#[test]
fn a_lane_whose_application_left_is_removed_and_the_main_link_carries_its_vcs() {
    let (mut f, mut h1, mut h2) = fabric();
    let mut l1 = lane(&mut f, 0, &[100]);
    let (mut l2, app_sock) = watched_lane(&mut f, 1, &[100]);
    send(&mut l1, &[data_cell(100, 1)]);
    steps(&mut f, 3);
    assert_eq!(drain(&mut l2).len(), 1, "the lane works first");

    // (e) The application's end goes away.
    app_goes_away(&mut f, app_sock, l2);
    assert!(f.ports[1].lanes.is_empty(), "the lane was removed");
    assert_eq!(f.ports[1].stats.lanes_removed, 1);
    assert_eq!(f.ports[0].lanes.len(), 1, "the other port's lane stays");
    assert_eq!(f.ports[0].stats.lanes_removed, 0);
    assert!(f.ports[1].link.is_some(), "the main link stays");

    // 0.100's cells for port 2 take the main link again, from the lane and from hostd.
    send(&mut l1, &[data_cell(100, 2)]);
    send(&mut h1, &[data_cell(100, 3)]);
    steps(&mut f, 3);
    let got = user_data(drain(&mut h2));
    let mut tags: Vec<u8> = got.iter().map(|c| c[5]).collect();
    // A step reads the main link before the lanes.
    tags.sort_unstable();
    assert_eq!(tags, [2, 3], "on port 2's main link");
    // And the way back reaches the application still on port 1's lane.
    send(&mut h2, &[data_cell(100, 4)]);
    steps(&mut f, 3);
    let got = drain(&mut l1);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0][5], 4);

    // The VC is free for a new lane on the port.
    let mut l2 = lane(&mut f, 1, &[100]);
    send(&mut l1, &[data_cell(100, 5)]);
    steps(&mut f, 3);
    assert_eq!(drain(&mut l2).len(), 1);
    assert!(drain(&mut h2).is_empty());
}

#[test]
fn a_lane_that_fails_while_cells_wait_for_it_is_removed() {
    let (mut f, mut h1, _h2) = fabric();
    let (l2, app_sock) = watched_lane(&mut f, 1, &[100]);
    // Fill the lane's ring (nobody reads it), then more: the fabric holds the rest.
    let cells: Vec<CellBytes> = (0..2 * RING as u8).map(|k| data_cell(100, k)).collect();
    for chunk in cells.chunks(16) {
        send(&mut h1, chunk);
        steps(&mut f, 2);
    }
    assert!(f.ports[1].lanes[0].held() > 0, "cells wait for the lane");
    app_goes_away(&mut f, app_sock, l2);
    assert!(
        f.ports[1].lanes.is_empty(),
        "a full lane's failure is seen too"
    );
    assert_eq!(f.ports[1].stats.lanes_removed, 1);
    assert!(
        f.ports[1].stats.tx_lost > 0,
        "the cells held for the lane are counted lost, not dropped silently"
    );
}

#[test]
fn a_backed_up_main_link_does_not_stop_the_ports_lanes() {
    let (mut f, mut h1, _h2) = fabric();
    let mut l2 = lane(&mut f, 1, &[100]);
    // Port 2's main link fills with 0.101 cells nobody reads, and backs up.
    let stuck: Vec<CellBytes> = (0..2 * RING as u8).map(|k| data_cell(101, k)).collect();
    for chunk in stuck.chunks(16) {
        send(&mut h1, chunk);
        steps(&mut f, 2);
    }
    assert!(f.ports[1].held() > 0, "the main link is backed up");
    send(&mut h1, &[data_cell(100, 0xaa)]);
    steps(&mut f, 3);
    let got = user_data(drain(&mut l2));
    assert_eq!(
        got.len(),
        1,
        "the lane's cell went past the backed-up main link"
    );
    assert_eq!(got[0][5], 0xaa);
}

#[test]
fn detaching_the_main_link_removes_the_ports_lanes() {
    let (mut f, mut h1, h2) = fabric();
    let mut l1 = lane(&mut f, 0, &[100]);
    let _l2a = lane(&mut f, 1, &[100]);
    let _l2b = lane(&mut f, 1, &[101]);
    assert_eq!(f.ports[1].lanes.len(), 2);

    // (f) The port's main link goes: its lanes go with it.
    f.detach(1, "test".into());
    assert!(f.ports[1].lanes.is_empty());
    assert_eq!(f.ports[1].stats.lanes_removed, 2);
    assert_eq!(f.ports[0].lanes.len(), 1, "port 1 keeps its lane");
    steps(&mut f, 3);
    // A lane cannot be added until a link is back.
    let (sw, _app) = ShmLink::pair(RING).unwrap();
    assert!(
        f.ports[1]
            .add_lane(vec![lane_vc(100)], 1, Box::new(sw))
            .is_err()
    );

    // A new main link: 0.100's cells from the lane on port 1 reach it (no lane now).
    drop(h2);
    let (sw2, mut h2) = ShmLink::pair(RING).unwrap();
    f.attach(1, Box::new(sw2));
    steps(&mut f, 3);
    drain(&mut h2);
    send(&mut l1, &[data_cell(100, 8)]);
    steps(&mut f, 3);
    let got = user_data(drain(&mut h2));
    assert_eq!(got.len(), 1, "on port 2's new main link");
    assert_eq!(got[0][5], 8);
    // And a lane can be asked for again.
    let mut l2 = lane(&mut f, 1, &[100]);
    send(&mut h1, &[data_cell(100, 9)]);
    steps(&mut f, 3);
    assert_eq!(drain(&mut l2).len(), 1);

    // A main link that fails (its host's end dropped, peer watched) takes the lanes too.
    f.detach(1, "test".into());
    drop((h2, l2));
    let (sock_sw, sock_host) = UnixStream::pair().unwrap();
    let (mut sw2, h2b) = ShmLink::pair(RING).unwrap();
    sw2.watch_peer(sock_sw).unwrap();
    f.attach(1, Box::new(sw2));
    let _l2 = lane(&mut f, 1, &[100]);
    let removed = f.ports[1].stats.lanes_removed;
    drop(sock_host);
    drop(h2b);
    std::thread::sleep(PEER_POLL * 5);
    steps(&mut f, 3);
    assert!(
        f.ports[1].link.is_none(),
        "the failed main link was detached"
    );
    assert!(f.ports[1].lanes.is_empty());
    assert!(f.ports[1].stats.lanes_removed > removed);
}

#[test]
fn a_paused_lane_whose_application_left_is_removed() {
    use natm_switchd::fabric::LANE_PAUSE;

    let (mut f, _h1, _h2) = fabric();
    let (mut l1, app_sock) = watched_lane(&mut f, 0, &[100]);
    // Port 2's lane is never read: it backs up until its feeder is paused.
    let _l2 = lane(&mut f, 1, &[100]);
    let chunk: Vec<CellBytes> = (0..RING as u8).map(|k| data_cell(100, k)).collect();
    let mut rounds = 0;
    while !f.ports[0].lanes[0].paused() {
        assert!(rounds < 4 * LANE_PAUSE, "the feeding lane was never paused");
        let n = l1.send_cells(&chunk).expect("send");
        assert!(n > 0 || rounds > 0, "the lane takes cells");
        steps(&mut f, 1);
        rounds += 1;
    }
    assert!(f.ports[1].lanes[0].held() > LANE_PAUSE);

    // The paused lane's application goes away: the switch sees it without reading it.
    app_goes_away(&mut f, app_sock, l1);
    assert!(f.ports[0].lanes.is_empty(), "the paused lane was removed");
    assert_eq!(f.ports[0].stats.lanes_removed, 1);
    assert_eq!(f.ports[1].lanes.len(), 1, "the lane it fed stays");
}

#[test]
fn lane_to_lane_cells_are_counted_and_captured_like_queued_ones() {
    // Lane to lane, a run of one VC passes the switch's queues (the express path); the
    // counters and a capture must not tell the difference.
    let (mut f, _h1, _h2) = fabric();
    let mut l1 = lane(&mut f, 0, &[100]);
    let mut l2 = lane(&mut f, 1, &[100]);
    let frame: Vec<CellBytes> = (0..40).map(|k| data_cell(100, k)).collect();
    send(&mut l1, &frame);
    steps(&mut f, 1);
    let got = drain(&mut l2);
    assert_eq!(
        got.iter().map(|c| c[5]).collect::<Vec<_>>(),
        (0..40).collect::<Vec<u8>>()
    );
    assert!(got.iter().all(|c| header(c).vc == vc(100)));
    let out = f.switch.port_counters(PortId(2)).expect("port 2");
    let inn = f.switch.port_counters(PortId(1)).expect("port 1");
    assert_eq!((inn.cells_in, out.cells_out, out.queued()), (40, 40, 0));
    let (id, _) = f.switch.connections().next().expect("a connection");
    let (_, c) = f.switch.connection(id).expect("listed");
    assert_eq!((c.a_to_b.cells_in, c.a_to_b.cells_out), (40, 40));

    // Captured on both ports: every cell is seen going in and going out.
    f.tap_ports = vec![PortId(1), PortId(2)];
    send(&mut l1, &frame[..5]);
    steps(&mut f, 1);
    assert_eq!(drain(&mut l2).len(), 5);
    let seen = |out: bool| f.tapped.iter().filter(|t| t.out == out).count();
    assert_eq!((seen(false), seen(true)), (5, 5));
}

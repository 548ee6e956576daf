//! Spliced lanes through the pure [`Fabric`] (natm-link's `lane` module has the protocol):
//! the second lane of a point-to-point cross-connect takes the first lane's switch side,
//! cells keep their order across the handover, a released side is taken back (relabelled
//! when the label is not the remaining holder's VC), a holder whose hostd went away keeps
//! its side and rejoins, a restarted switch learns a splice from the region, and what the
//! switch would have to act on is never spliced.
//!
//! Two UNI ports with 1:0.100 ↔ 2:0.101, so the region's label (0.100, the first lane's
//! VC) differs from the second holder's VC.

use std::os::unix::net::UnixStream;

use natm_core::HeaderFormat;
use natm_link::CellBytes;
use natm_link::lane::LaneVc;
use natm_link::shm::{ShmHandover, ShmLink, ShmWait, Side, SpliceWord};
use natm_switchd::fabric::{Fabric, SpliceKeep};

#[path = "support/mod.rs"]
mod support;
use support::*;

fn xc() -> (Fabric, ShmLink, ShmLink) {
    fabric_with(&[("1:0.100", "2:0.101")])
}

/// A lane requested by a hostd at port index `i` for 0.`vci`, as switchd takes one: the
/// application's side A, the hostd's socket end, and side B's descriptors (what hostd
/// keeps).
fn hostd_lane(f: &mut Fabric, i: usize, vci: u16) -> (ShmLink, UnixStream, ShmHandover) {
    let (a, b) = ShmLink::create_detached(RING).unwrap();
    let (sw_sock, hostd_sock) = UnixStream::pair().unwrap();
    let mut sw = ShmLink::open(ShmLink::dup_handover(&b).unwrap(), ShmWait::EventFd).unwrap();
    let keep = SpliceKeep::new(
        ShmLink::dup_handover(&b).unwrap(),
        sw.splice_word(),
        Side::B,
        lane_vc(vci),
        Some(sw_sock.try_clone().unwrap()),
    )
    .unwrap();
    sw.watch_peer(sw_sock).unwrap();
    f.ports[i]
        .add_lane_kept(vec![lane_vc(vci)], 1, Box::new(sw), Some(keep))
        .expect("lane taken");
    (ShmLink::open_a(a, ShmWait::EventFd).unwrap(), hostd_sock, b)
}

/// The second requester at port index `i` for 0.`vci`: the side it was handed (opened
/// as its application would), its label, and its hostd's socket end.
fn splice(f: &mut Fabric, i: usize, vci: u16) -> Option<(ShmLink, Side, LaneVc, UnixStream)> {
    let (sw_sock, hostd_sock) = UnixStream::pair().unwrap();
    let (side, label, h) = f.splice(i, lane_vc(vci), &sw_sock)?;
    let app = ShmLink::open_side(h, side, ShmWait::EventFd).unwrap();
    Some((app, side, label, hostd_sock))
}

fn vci_of(c: &CellBytes) -> u16 {
    header(c).vc.vci.get()
}

fn payload_tags(cells: &[CellBytes]) -> Vec<u8> {
    cells.iter().map(|c| c[5]).collect()
}

#[test]
fn the_second_lane_takes_the_first_ones_switch_side_and_cells_keep_their_order() {
    let (mut f, _h1, mut h2) = xc();
    let (mut app1, _hostd1, b) = hostd_lane(&mut f, 0, 100);
    // Before the splice: through the switch, relabelled by the cross-connect.
    send(&mut app1, &[data_cell(100, 1)]);
    steps(&mut f, 3);
    let got = user_data(drain(&mut h2));
    assert_eq!((got.len(), vci_of(&got[0])), (1, 101));
    // A cell the switch has not read yet when the splice comes.
    send(&mut app1, &[data_cell(100, 2)]);
    let (mut app2, side, label, _hostd2) = splice(&mut f, 1, 101).expect("spliced");
    assert_eq!((side, label), (Side::B, lane_vc(100)));
    assert!(
        f.ports[0].lanes.is_empty(),
        "the switch serves neither side"
    );
    assert_eq!(f.splices.len(), 1);
    assert_ne!(SpliceWord::of(&b).unwrap().bits() & SpliceWord::HELD_B, 0);
    send(&mut app1, &[data_cell(100, 3)]);
    steps(&mut f, 3);
    let got = drain(&mut app2);
    assert_eq!(payload_tags(&got), [2, 3], "in order across the handover");
    assert!(
        got.iter().all(|c| vci_of(c) == 100),
        "cells carry the label"
    );
    send(&mut app2, &[data_cell(100, 4)]);
    steps(&mut f, 3);
    assert_eq!(payload_tags(&drain(&mut app1)), [4]);
    assert!(
        user_data(drain(&mut h2)).is_empty(),
        "nothing through the switch"
    );
    // Splicing is once per region: a third requester gets nothing to splice with.
    assert!(splice(&mut f, 1, 101).is_none());
}

#[test]
fn a_released_side_is_taken_back_relabelled_and_handed_to_the_next_requester() {
    let (mut f, mut h1, mut h2) = xc();
    let (mut app1, hostd1, b) = hostd_lane(&mut f, 0, 100);
    let (app2, _, _, hostd2) = splice(&mut f, 1, 101).unwrap();
    let word = SpliceWord::of(&b).unwrap();

    // Side B's holder goes: the switch serves side B as port 1's lane again.
    word.update(SpliceWord::RELEASED_B, 0);
    drop((app2, hostd2));
    assert!(f.watch_splices());
    assert!(f.splices.is_empty());
    assert_eq!(f.ports[0].lanes[0].vcs, [lane_vc(100)]);
    assert_eq!(word.bits() & SpliceWord::HELD_B, 0);
    send(&mut app1, &[data_cell(100, 5)]);
    steps(&mut f, 3);
    let got = user_data(drain(&mut h2));
    assert_eq!((payload_tags(&got), vci_of(&got[0])), (vec![5], 101));

    // Spliced again; now side A's holder goes. The switch serves side A as port 2's lane,
    // its cells carrying 0.100 in the ring and 0.101 at the port.
    let (mut app2, side, _, _hostd2) = splice(&mut f, 1, 101).unwrap();
    assert_eq!(side, Side::B);
    assert_eq!(word.bits() & SpliceWord::RELEASED_B, 0, "the new holder's");
    word.update(SpliceWord::RELEASED_A, 0);
    drop((app1, hostd1));
    assert!(f.watch_splices());
    assert!(f.splices.is_empty());
    assert_eq!(f.ports[1].lanes[0].vcs, [lane_vc(101)]);
    send(&mut h1, &[data_cell(100, 6)]);
    steps(&mut f, 3);
    let got = drain(&mut app2);
    assert_eq!((payload_tags(&got), vci_of(&got[0])), (vec![6], 100));
    send(&mut app2, &[data_cell(100, 7)]);
    steps(&mut f, 3);
    let got = user_data(drain(&mut h1));
    assert_eq!((payload_tags(&got), vci_of(&got[0])), (vec![7], 100));
    assert_eq!(
        f.ports[1].lanes[0].stats.rx, 1,
        "taken in as port 2's 0.101"
    );

    // A new application on port 1's 0.100 is handed side A, with its own VC as label.
    let (mut app1, side, label, _hostd1) = splice(&mut f, 0, 100).expect("spliced again");
    assert_eq!((side, label), (Side::A, lane_vc(100)));
    assert!(f.ports[1].lanes.is_empty());
    assert_eq!(word.bits() & SpliceWord::RELEASED_A, 0);
    send(&mut app1, &[data_cell(100, 8)]);
    assert_eq!(payload_tags(&drain(&mut app2)), [8]);
}

#[test]
fn a_holder_whose_hostd_went_keeps_its_side_and_rejoins() {
    let (mut f, _h1, _h2) = xc();
    let (mut app1, hostd1, b) = hostd_lane(&mut f, 0, 100);
    let (mut app2, _, _, _hostd2) = splice(&mut f, 1, 101).unwrap();
    // hostd 1 lost its link (or died): its socket closes, its application runs on.
    drop(hostd1);
    f.watch_splices();
    assert_eq!(f.splices.len(), 1, "not taken back: nothing was released");
    assert!(f.ports[0].lanes.is_empty() && f.ports[1].lanes.is_empty());
    assert!(f.splices[0].holders[0].sock.is_none(), "away");
    send(&mut app1, &[data_cell(100, 1)]);
    assert_eq!(payload_tags(&drain(&mut app2)), [1]);
    // It asks again for its region: taken, nothing served.
    let (sw_sock, hostd1) = UnixStream::pair().unwrap();
    f.rejoin(0, lane_vc(100), &b, &sw_sock).unwrap();
    assert!(f.splices[0].holders[0].sock.is_some());
    assert!(f.ports[0].lanes.is_empty());
    // Another VC asking for this region is refused.
    let e = f.rejoin(0, lane_vc(102), &b, &sw_sock).unwrap_err();
    assert!(e.contains("other VCs"), "{e}");
    // Side B released: served again, watching the socket it rejoined with.
    SpliceWord::of(&b)
        .unwrap()
        .update(SpliceWord::RELEASED_B, 0);
    drop(app2);
    f.watch_splices();
    assert_eq!(f.ports[0].lanes.len(), 1);
    drop(hostd1);
    std::thread::sleep(natm_link::shm::PEER_POLL * 5);
    steps(&mut f, 3);
    assert!(
        f.ports[0].lanes.is_empty(),
        "the lane goes with its hostd's socket"
    );
}

#[test]
fn a_restarted_switch_learns_the_splice_from_the_region() {
    let (f, _h1, _h2) = xc();
    let mut f = f;
    let (mut app1, _hostd1, b) = hostd_lane(&mut f, 0, 100);
    let (mut app2, _, _, _hostd2) = splice(&mut f, 1, 101).unwrap();
    drop(f);
    // The new switch: hostd 1 asks again for its lane; the region says side B is held.
    let (mut f, _h1, _h2b) = xc();
    let (sw_sock, _hostd1) = UnixStream::pair().unwrap();
    f.rejoin(0, lane_vc(100), &b, &sw_sock).unwrap();
    assert_eq!(f.splices.len(), 1);
    assert!(
        f.splices[0].holders[1].sock.is_none(),
        "side B's hostd did not ask"
    );
    send(&mut app1, &[data_cell(100, 1)]);
    assert_eq!(payload_tags(&drain(&mut app2)), [1], "still spliced");
    // Side A's holder goes: the switch serves side A for side B's holder, whose hostd it
    // does not know; the lane goes when that holder releases its side.
    SpliceWord::of(&b)
        .unwrap()
        .update(SpliceWord::RELEASED_A, 0);
    drop(app1);
    f.watch_splices();
    assert_eq!(f.ports[1].lanes[0].vcs, [lane_vc(101)]);
    send(&mut app2, &[data_cell(100, 2)]);
    steps(&mut f, 3);
    assert_eq!(f.ports[1].lanes[0].stats.rx, 1);
    // Its holder releases it after a last cell: the lane stays until a look finds its
    // ring quiet (the last cell is forwarded), then goes.
    send(&mut app2, &[data_cell(100, 3)]);
    SpliceWord::of(&b)
        .unwrap()
        .update(SpliceWord::RELEASED_B, 0);
    drop(app2);
    f.watch_splices();
    assert_eq!(f.ports[1].lanes.len(), 1, "not before its cells are read");
    steps(&mut f, 3);
    assert_eq!(
        f.ports[1].lanes[0].stats.rx, 2,
        "the last cell went through"
    );
    f.watch_splices();
    assert_eq!(f.ports[1].lanes.len(), 1, "cells came since the last look");
    f.watch_splices();
    assert!(f.ports[1].lanes.is_empty());
}

#[test]
fn what_the_switch_acts_on_is_not_spliced() {
    // A policed leg.
    let (mut f, _h1, _h2) = fabric_with(&[]);
    let now = f.now();
    let mut policed = natm_switch::CrossConnect::new(
        "1:0.100".parse().unwrap(),
        "2:0.101".parse().unwrap(),
        "cbr:pcr=1000".parse().unwrap(),
    );
    policed.upc = natm_switch::Upc::Discard;
    f.switch.connect(now, &policed).unwrap();
    let _l = hostd_lane(&mut f, 0, 100);
    assert!(splice(&mut f, 1, 101).is_none(), "policed");
    assert_eq!(f.ports[0].lanes.len(), 1, "unchanged");

    // A captured port.
    let (mut f, _h1, _h2) = xc();
    let _l = hostd_lane(&mut f, 0, 100);
    f.tap_ports.push(natm_switch::PortId(2));
    assert!(splice(&mut f, 1, 101).is_none(), "captured");
    f.tap_ports.clear();

    // Not the other end of the lane's cross-connect, or no cross-connect at all.
    assert!(splice(&mut f, 1, 100).is_none());
    assert!(splice(&mut f, 0, 100).is_none(), "the same port");
    assert!(splice(&mut f, 1, 101).is_some());
}

#[test]
fn relabelling_keeps_gfc_pti_clp_and_a_good_hec() {
    let mut c = data_cell(100, 9);
    c[3] |= 1; // CLP
    c[0] |= 0x50; // GFC
    natm_switchd::fabric::relabel(&mut c, HeaderFormat::Uni, LaneVc { vpi: 7, vci: 333 });
    let h = header(&c);
    assert_eq!((h.vc.vpi.get(), h.vc.vci.get()), (7, 333));
    assert!(h.clp && h.pti.is_end_of_frame());
    assert_eq!(c[0] >> 4, 5, "GFC kept");
}

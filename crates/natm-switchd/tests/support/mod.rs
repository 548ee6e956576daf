//! What the fabric's lane tests share: cells, draining, stepping, a two-port fabric.

#![allow(dead_code)]

use natm_core::{HeaderFormat, VcId};
use natm_link::lane::LaneVc;
use natm_link::shm::ShmLink;
use natm_link::{CELL_LEN, CellBytes, CellLink};
use natm_switch::{CrossConnect, PortConfig, PortId, SwitchConfig};
use natm_switchd::fabric::Fabric;
use natm_wire::cell::{Cell as CellView, CellHeader};
use natm_wire::oam::{Loopback, OamFlow, OamRepr};

pub const RING: u32 = 64;

pub fn vc(vci: u32) -> VcId {
    VcId::uni(0, vci).expect("a UNI VC")
}

pub fn lane_vc(vci: u16) -> LaneVc {
    LaneVc { vpi: 0, vci }
}

/// An AAL5 user-data cell on 0.`vci` (end of frame), its payload marked with `tag`.
pub fn data_cell(vci: u32, tag: u8) -> CellBytes {
    let mut c = [0u8; CELL_LEN];
    CellHeader::data(vc(vci), true)
        .emit(&mut CellView::new_unchecked(&mut c[..]), HeaderFormat::Uni)
        .expect("a UNI header");
    c[5..].fill(tag);
    c
}

/// An F5 OAM loopback request on 0.`vci` (PTI 5 end to end, PTI 4 segment).
pub fn oam_cell(vci: u32, flow: OamFlow, tag: u32) -> CellBytes {
    OamRepr::Loopback(Loopback::request(tag)).to_cell(flow, vc(vci))
}

pub fn header(c: &CellBytes) -> CellHeader {
    CellHeader::parse(&CellView::new_unchecked(&c[..]), HeaderFormat::Uni)
        .expect("a cell the switch sent has a good HEC")
}

/// Everything waiting on `link` now.
pub fn drain(link: &mut ShmLink) -> Vec<CellBytes> {
    let mut out = Vec::new();
    let mut buf = [[0u8; CELL_LEN]; 32];
    loop {
        let n = link.recv_cells(&mut buf).expect("recv");
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// User-data cells only (a port going down makes the switch send AIS, PTI 5).
pub fn user_data(cells: Vec<CellBytes>) -> Vec<CellBytes> {
    cells
        .into_iter()
        .filter(|c| header(c).pti.is_user_data())
        .collect()
}

pub fn steps(fabric: &mut Fabric, n: usize) {
    for _ in 0..n {
        let now = fabric.now();
        fabric.step(now);
    }
}

pub fn send(link: &mut ShmLink, cells: &[CellBytes]) {
    assert_eq!(link.send_cells(cells).expect("send"), cells.len());
}

/// The fabric with its two ports' main links attached; the host ends of the main links.
pub fn fabric() -> (Fabric, ShmLink, ShmLink) {
    fabric_with(&[("1:0.100", "2:0.100"), ("1:0.101", "2:0.101")])
}

/// [`fabric`] with these UBR cross-connects.
pub fn fabric_with(xcs: &[(&str, &str)]) -> (Fabric, ShmLink, ShmLink) {
    let mut f = Fabric::new(SwitchConfig::default());
    f.add_port(PortId(1), PortConfig::default()).unwrap();
    f.add_port(PortId(2), PortConfig::default()).unwrap();
    let (sw1, h1) = ShmLink::pair(RING).unwrap();
    let (sw2, h2) = ShmLink::pair(RING).unwrap();
    f.attach(0, Box::new(sw1));
    f.attach(1, Box::new(sw2));
    let now = f.now();
    for &(a, b) in xcs {
        let xc = CrossConnect::new(
            a.parse().unwrap(),
            b.parse().unwrap(),
            "ubr".parse().unwrap(),
        );
        f.switch.connect(now, &xc).unwrap();
    }
    (f, h1, h2)
}

//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod fixture;

use natm_core::{Instant, Qos};
use natm_switch::{PortConfig, PortId, Switch, SwitchConfig};
use natm_wire::cell::hec;

pub fn qos(text: &str) -> Qos {
    text.parse().expect("QoS text parses")
}

pub fn switch_with(ports: &[(u16, PortConfig)]) -> Switch {
    let mut sw = Switch::new(SwitchConfig::default());
    for &(id, config) in ports {
        sw.add_port(PortId(id), config).expect("port added");
    }
    sw
}

pub fn two_ports() -> Switch {
    switch_with(&[(1, PortConfig::default()), (2, PortConfig::default())])
}

/// A UNI cell with a good HEC and a payload of `fill`.
pub fn cell(vpi: u32, vci: u32, pti: u8, clp: bool, fill: u8) -> [u8; 53] {
    let mut c = [fill; 53];
    let w = vpi << 20 | vci << 4 | u32::from(pti) << 1 | u32::from(clp);
    c[..4].copy_from_slice(&w.to_be_bytes());
    c[4] = hec(w.to_be_bytes());
    c
}

/// VPI, VCI, PTI, CLP of a UNI cell, asserting its HEC.
pub fn header(c: &[u8; 53]) -> (u32, u32, u8, bool) {
    let w = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
    assert_eq!(c[4], hec([c[0], c[1], c[2], c[3]]), "HEC recomputed");
    (
        (w >> 20) & 0xFF,
        (w >> 4) & 0xFFFF,
        ((w >> 1) & 7) as u8,
        w & 1 == 1,
    )
}

/// Everything `port` sends at `now`, in batches of 64.
pub fn drain_at(sw: &mut Switch, now: Instant, port: u16) -> Vec<[u8; 53]> {
    let mut out = vec![[0u8; 53]; 64];
    let mut all = Vec::new();
    loop {
        let n = sw.poll_transmit(now, PortId(port), &mut out);
        all.extend_from_slice(&out[..n]);
        if n < out.len() {
            return all;
        }
    }
}

pub fn drain(sw: &mut Switch, port: u16) -> Vec<[u8; 53]> {
    drain_at(sw, Instant::ZERO, port)
}

/// Exactly `n` cells from `port` (fewer if it has fewer).
pub fn take(sw: &mut Switch, port: u16, n: usize) -> Vec<[u8; 53]> {
    let mut out = vec![[0u8; 53]; n];
    let got = sw.poll_transmit(Instant::ZERO, PortId(port), &mut out);
    out.truncate(got);
    out
}

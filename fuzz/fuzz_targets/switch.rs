//! natm-switch: arbitrary operations (cells of any bytes, cells with headers of connected
//! VCs and one bit maybe flipped, through the queues or the express path first, polls of any batch size, passing time, ports going down
//! and up, cross-connects removed and made again) on a three-port switch with VC and VP
//! cross-connects, UPC, AAL5 frame discard, small queues and a rated port. It must never
//! panic, every cell it sends must carry a correct HEC, and cells must be conserved: what
//! came in plus the AIS it made equals what it sent, dropped (by a counted reason) and
//! still holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_core::{Duration, Instant};
use natm_switch::PortId;
use natm_wire::cell::{CELL_LEN, hec};

/// The switch, cross-connects and conservation check the property test uses too.
#[path = "../../crates/natm-switch/tests/common/fixture.rs"]
mod fixture;

fuzz_target!(|data: &[u8]| {
    let (mut sw, xcs, mut live) = fixture::connected();
    let mut now = Instant::ZERO;
    let mut out = [[0u8; CELL_LEN]; 32];
    let mut rest = data;
    while let Some((&op, tail)) = rest.split_first() {
        rest = tail;
        let arg = op >> 3;
        let port = PortId(u16::from(arg % 4));
        match op & 7 {
            0 => {
                let Some((cell, tail)) = rest.split_first_chunk::<CELL_LEN>() else {
                    return;
                };
                rest = tail;
                sw.handle_cell(now, port, cell);
            }
            1 | 2 => {
                // A cell of a connected (or nearly connected) VC, one bit maybe flipped.
                let Some((&[sel, flip], tail)) = rest.split_first_chunk::<2>() else {
                    return;
                };
                rest = tail;
                let vpi = [0u32, 1, 2, 7][usize::from(sel & 3)];
                let vci = [3u32, 4, 32, 33, 34, 35][usize::from(sel >> 2) % 6];
                let w = vpi << 20 | vci << 4 | u32::from(sel >> 5) << 1 | u32::from(flip & 1);
                let mut c = [flip; CELL_LEN];
                c[..4].copy_from_slice(&w.to_be_bytes());
                c[4] = hec(w.to_be_bytes());
                if flip & 0x80 != 0 {
                    let bit = usize::from(flip & 0x3F) % 40;
                    c[bit / 8] ^= 0x80 >> (bit % 8);
                }
                let mut cells = [c, c, c];
                let mut from = 0;
                if op & 7 == 2 {
                    // As switchd passes a lane's cells: the express path first.
                    while let Some((_, k)) = sw.express(port, &mut cells[from..], |_, _| true) {
                        for c in &cells[from..from + k] {
                            assert_eq!(c[4], hec([c[0], c[1], c[2], c[3]]), "HEC of a sent cell");
                        }
                        from += k;
                    }
                }
                sw.handle_cells(now, port, &cells[from..]);
            }
            3 => {
                let n = sw.poll_transmit(now, port, &mut out[..usize::from(arg)]);
                for c in &out[..n] {
                    assert_eq!(c[4], hec([c[0], c[1], c[2], c[3]]), "HEC of a sent cell");
                }
            }
            4 => {
                now += Duration::from_micros(u64::from(arg) * u64::from(arg) * 1000);
                sw.handle_timeout(now);
            }
            5 => {
                let _ = sw.set_port_up(now, port, arg & 4 == 0);
            }
            6 => {
                let i = usize::from(arg) % xcs.len();
                match live[i].take() {
                    Some(id) => assert_eq!(sw.disconnect(id), Ok(xcs[i])),
                    None => live[i] = Some(sw.connect(now, &xcs[i]).expect("endpoints free")),
                }
            }
            _ => {
                if let Some(t) = sw.poll_timeout() {
                    now = now.max(t);
                    sw.handle_timeout(now);
                }
            }
        }
        fixture::assert_conserved(&sw);
    }
});

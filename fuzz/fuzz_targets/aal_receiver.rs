//! natm-aal's receiver: arbitrary cells on a handful of VCs (AAL5 and AAL0), interleaved
//! with whole SDUs segmented by the transmit queue (so frames get past the CRC), bit flips,
//! passing time, timeouts, and VCs closed and reopened. Cells pass the link's HEC receiver
//! first, as in natm. The receiver must never panic, never hold more than its byte limits,
//! and deliver on a VC only an SDU that a CRC-valid PDU made of that VC's received cells
//! carries (any suffix of whole cells since the last end-of-frame cell, since timeouts and
//! limits drop the start of a frame).
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_aal::{Event, Receiver, ReceiverConfig, TxConfig, TxQueue, VcConfig};
use natm_core::{Duration, HeaderFormat, Instant, VcId};
use natm_wire::aal5::{Pdu, pdu_len};
use natm_wire::cell::{CELL_LEN, Cell, HEADER_LEN, HecReceiver, HecVerdict};

/// VCs 1.32..=1.34 are AAL5 (max_sdu 1000), 1.35 is AAL0; 1.36 is never opened.
const AAL5_VCS: u32 = 3;

fn vc(i: u32) -> VcId {
    VcId::uni(1, 32 + i).expect("small VCI")
}

fuzz_target!(|data: &[u8]| {
    let Some((&[a, b, q], mut rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let receiver_limit = usize::from(u16::from_le_bytes([a, b]));
    let mut rx = Receiver::new(ReceiverConfig {
        buffer_limit: receiver_limit,
        event_queue_max: usize::from(q % 16),
        ..ReceiverConfig::default()
    });
    let vc_limit = 3000;
    for i in 0..AAL5_VCS {
        let config = VcConfig::aal5(1000)
            .with_timeout(Some(Duration::from_micros(500)))
            .with_buffer_limit(vc_limit);
        rx.open_vc(vc(i), config).expect("valid config");
    }
    rx.open_vc(vc(AAL5_VCS), VcConfig::aal0())
        .expect("valid config");
    // Per AAL5 VC: user-data payloads since its last end-of-frame cell, and the SDUs that
    // a delivery may be (those of CRC-valid PDUs that ended there).
    let mut frames: Vec<Vec<u8>> = vec![Vec::new(); AAL5_VCS as usize];
    let mut valid: Vec<Vec<Vec<u8>>> = vec![Vec::new(); AAL5_VCS as usize];
    let mut hec = HecReceiver::new();
    let mut now = Instant::ZERO;
    let mut feed = |rx: &mut Receiver, now: Instant, cell: &[u8; CELL_LEN]| {
        let mut cell = *cell;
        if let HecVerdict::Discarded { .. } = hec.receive(&mut Cell::new_unchecked(&mut cell[..])) {
            return;
        }
        // The VC and PTI as the receiver reads them (a UNI header: GFC ignored).
        let view = Cell::new_unchecked(&cell[..]);
        let (v, pti) = (view.vc(HeaderFormat::Uni), view.pti());
        let vci = u32::from(v.vci.get());
        if v.vpi.get() == 1 && (32..32 + AAL5_VCS).contains(&vci) && pti.is_user_data() {
            let i = (vci - 32) as usize;
            frames[i].extend_from_slice(&cell[HEADER_LEN..]);
            if pti.is_end_of_frame() {
                let f = &frames[i];
                let longest = pdu_len(1000);
                let first = f.len().saturating_sub(longest);
                for start in (first..f.len()).filter(|k| (f.len() - k) % 48 == 0) {
                    let pdu = Pdu::new_unchecked(&f[start..]);
                    if let Ok(n) = pdu.check(1000) {
                        valid[i].push(f[start..start + n].to_vec());
                    }
                }
                frames[i].clear();
            }
        }
        rx.handle_cell(now, &cell);
        assert!(rx.held_bytes() <= receiver_limit);
        for i in 0..=AAL5_VCS {
            let held = rx.vc_held_bytes(vc(i)).expect("open");
            assert!(
                held <= if i < AAL5_VCS {
                    vc_limit
                } else {
                    64 * CELL_LEN
                }
            );
        }
        if cell[2] & 1 == 0 {
            return;
        }
        while let Some(e) = rx.poll_event() {
            if let Event::Sdu { vc: v, sdu } = e {
                let i = usize::from(v.vci.get()) - 32;
                assert!(
                    valid[i].contains(&sdu),
                    "delivered on {v} an SDU no valid PDU carried"
                );
            }
        }
    };
    while let Some((&op, tail)) = rest.split_first() {
        rest = tail;
        match op % 4 {
            0 => {
                let Some((cell, tail)) = rest.split_first_chunk::<CELL_LEN>() else {
                    return;
                };
                rest = tail;
                feed(&mut rx, now, cell);
            }
            1 => {
                // A whole SDU on an AAL5 VC, maybe with one bit flipped in one cell.
                let Some((&[len_lo, len_hi, flip], tail)) = rest.split_first_chunk::<3>() else {
                    return;
                };
                let len =
                    (usize::from(u16::from_le_bytes([len_lo, len_hi])) % 1200).min(tail.len());
                let (sdu, tail) = tail.split_at(len);
                rest = tail;
                let i = u32::from(op >> 2) % AAL5_VCS;
                let mut tx: TxQueue<&[u8]> =
                    TxQueue::new(vc(i), HeaderFormat::Uni, TxConfig::aal5(65_535)).expect("valid");
                if tx.send(sdu).is_err() {
                    continue;
                }
                let mut cell = [0u8; CELL_LEN];
                let mut n = 0usize;
                while tx.next_cell(&mut cell) {
                    if op & 0x40 != 0 && n == usize::from(flip >> 3) {
                        cell[usize::from(flip) % CELL_LEN] ^= 1 << (flip % 8);
                    }
                    n += 1;
                    feed(&mut rx, now, &cell);
                }
            }
            2 => {
                now += Duration::from_micros(u64::from(op >> 2) * 20);
                rx.handle_timeout(now);
                if let Some(t) = rx.poll_timeout() {
                    assert!(t > now);
                }
            }
            _ => {
                let v = vc(u32::from(op >> 2) % 5);
                if rx.close_vc(v).is_ok() {
                    let config = if v == vc(AAL5_VCS) {
                        VcConfig::aal0()
                    } else {
                        VcConfig::aal5(1000).with_buffer_limit(vc_limit)
                    };
                    rx.open_vc(v, config).expect("just closed");
                }
            }
        }
    }
});

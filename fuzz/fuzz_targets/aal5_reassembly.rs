//! AAL5 reassembly: a sequence of cells, some arbitrary, some segmented from arbitrary SDUs
//! (so that whole frames get through the CRC), some of those with a bit flipped. The
//! reassembler must never panic, never deliver a frame whose CRC or Length is wrong, and
//! never hold more than its buffer limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_core::VcId;
use natm_wire::aal5::{Pdu, Reassembler, Reassembly, Segmenter};
use natm_wire::cell::{CELL_LEN, HEADER_LEN, PAYLOAD_LEN};

fuzz_target!(|data: &[u8]| {
    let Some((&[a, b], mut rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let max_sdu = usize::from(u16::from_le_bytes([a, b]));
    let mut r = Reassembler::new(max_sdu);
    // The payloads since the last end-of-frame cell: what a delivered frame must be.
    let mut frame: Vec<u8> = Vec::new();
    let push = |r: &mut Reassembler, frame: &mut Vec<u8>, cell: &[u8; CELL_LEN]| {
        let user_data = cell[3] & 0x08 == 0;
        let eof = user_data && cell[3] & 0x02 != 0;
        let verdict = r.push_cell(cell);
        assert!(r.pending() <= r.buffer_limit());
        if user_data {
            frame.extend_from_slice(&cell[HEADER_LEN..]);
        }
        if let Reassembly::Complete(n) = verdict {
            assert!(eof);
            assert!(n <= r.max_sdu());
            let pdu = Pdu::new_checked(&frame[..]).expect("whole cells");
            assert!(pdu.verify_crc(), "delivered a frame with a bad CRC");
            assert_eq!(pdu.check(r.max_sdu()), Ok(n));
            assert_eq!(r.sdu(), &frame[..n]);
        } else {
            assert!(!matches!(verdict, Reassembly::Complete(_)));
        }
        if eof {
            frame.clear();
        }
    };
    while let Some((&op, tail)) = rest.split_first() {
        rest = tail;
        if op & 1 == 0 {
            // One arbitrary cell.
            let Some((cell, tail)) = rest.split_first_chunk::<CELL_LEN>() else {
                return;
            };
            rest = tail;
            push(&mut r, &mut frame, cell);
        } else {
            // A whole segmented SDU of up to 255 bytes, maybe with one bit flipped.
            let Some((&len, tail)) = rest.split_first() else {
                return;
            };
            let len = usize::from(len).min(tail.len());
            let (sdu, tail) = tail.split_at(len);
            rest = tail;
            let Ok(seg) = Segmenter::uni(VcId::uni(0, 32).unwrap(), sdu) else {
                continue;
            };
            let total = seg.total_cells();
            for (i, mut cell) in seg.enumerate() {
                if op & 2 != 0 && i == usize::from(op >> 2) % total {
                    cell[HEADER_LEN + usize::from(op) % PAYLOAD_LEN] ^= 1 << (op % 8);
                }
                push(&mut r, &mut frame, &cell);
            }
        }
    }
});

//! AAL5 reassembly (natm-adapter's receive path, one VC through its `Reassembler`): a
//! sequence of cells, some arbitrary, some segmented from arbitrary SDUs (so that whole
//! frames get through the CRC), some of those with a bit flipped. It must never panic and
//! never deliver a frame whose CRC or Length is wrong or that the VC's max_sdu refuses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_adapter::{Reassembler, Reassembly};
use natm_core::{HeaderFormat, VcId};
use natm_wire::aal5::{Pdu, Segmenter};
use natm_wire::cell::{CELL_LEN, Cell, HEADER_LEN, PAYLOAD_LEN};

fuzz_target!(|data: &[u8]| {
    let Some((&[a, b], mut rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let max_sdu = usize::from(u16::from_le_bytes([a, b])).max(1);
    let vc = VcId::uni(0, 32).unwrap();
    let mut r = Reassembler::new(vc, max_sdu).expect("max_sdu is 1..=65535");
    // The VC's payloads since its last end-of-frame cell: what a delivered frame must be.
    let mut frame: Vec<u8> = Vec::new();
    let push = |r: &mut Reassembler, frame: &mut Vec<u8>, cell: &[u8; CELL_LEN]| {
        let view = Cell::new_unchecked(&cell[..]);
        let ours = view.vc(HeaderFormat::Uni) == vc && view.pti().is_user_data();
        let eof = ours && view.pti().is_end_of_frame();
        let verdict = r.push_cell(cell);
        if ours {
            frame.extend_from_slice(&cell[HEADER_LEN..]);
        }
        if let Reassembly::Complete(n) = verdict {
            assert!(eof);
            assert!(n <= max_sdu);
            let pdu = Pdu::new_checked(&frame[..]).expect("whole cells");
            assert!(pdu.verify_crc(), "delivered a frame with a bad CRC");
            assert_eq!(pdu.check(max_sdu), Ok(n));
            assert_eq!(r.sdu(), &frame[..n]);
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
            let Ok(seg) = Segmenter::uni(vc, sdu) else {
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

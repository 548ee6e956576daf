//! AAL5 reassembly of runs of cells (`Reassembler::push_cells`, natm-clmul's gather with the
//! CRC folded into the copy) against the same cells pushed one at a time: the same
//! outcomes at the same cells and the same SDUs, whatever the cells and the batch sizes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_core::VcId;
use natm_wire::aal5::{Reassembler, Reassembly, Segmenter};
use natm_wire::cell::CELL_LEN;

fuzz_target!(|data: &[u8]| {
    let Some((&[a, b, batch], mut rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let max_sdu = usize::from(u16::from_le_bytes([a, b]));
    // Arbitrary cells and segmented SDUs (so that frames pass the CRC), interleaved.
    let mut stream = Vec::new();
    while let Some((&op, tail)) = rest.split_first() {
        rest = tail;
        if op & 1 == 0 {
            let Some((cell, tail)) = rest.split_first_chunk::<CELL_LEN>() else {
                break;
            };
            rest = tail;
            stream.extend_from_slice(cell);
        } else {
            let len = usize::from(op) * 8;
            let sdu: Vec<u8> = rest.iter().copied().cycle().take(len).collect();
            if let Ok(seg) = Segmenter::uni(VcId::uni(0, 32).unwrap(), &sdu) {
                stream.extend(seg.flatten());
            }
        }
    }

    let mut one = Reassembler::new(max_sdu);
    let mut want = Vec::new();
    for (i, cell) in stream.chunks_exact(CELL_LEN).enumerate() {
        let outcome = one.push_cell(cell.try_into().unwrap());
        if outcome != Reassembly::Incomplete {
            want.push((i, outcome, one.sdu().to_vec()));
        }
    }

    let mut runs = Reassembler::new(max_sdu);
    let mut got = Vec::new();
    let batch = usize::from(batch % 64) + 1;
    let mut at = 0;
    for chunk in stream.chunks(batch * CELL_LEN) {
        let mut chunk = chunk;
        while chunk.len() >= CELL_LEN {
            let (taken, outcome) = runs.push_cells(chunk);
            assert!(taken > 0);
            assert!(runs.pending() <= runs.buffer_limit());
            at += taken;
            if outcome != Reassembly::Incomplete {
                got.push((at - 1, outcome, runs.sdu().to_vec()));
            }
            chunk = &chunk[taken * CELL_LEN..];
        }
    }
    assert_eq!(got, want);
});

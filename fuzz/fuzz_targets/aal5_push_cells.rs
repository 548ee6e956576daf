//! AAL5 reassembly of batches of cells (natm-adapter's `Reassembler::push_cells`, where a
//! frame's middle cells take the adapter's run path) against the same cells pushed one at a
//! time: after every batch, the outcome of the last frame that ended in it, the last SDU and
//! the counters are the same, whatever the cells and the batch sizes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_adapter::{Reassembler, Reassembly};
use natm_core::VcId;
use natm_wire::aal5::Segmenter;
use natm_wire::cell::CELL_LEN;

fuzz_target!(|data: &[u8]| {
    let Some((&[a, b, batch], mut rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let max_sdu = usize::from(u16::from_le_bytes([a, b])).max(1);
    let vc = VcId::uni(0, 32).unwrap();
    // Arbitrary cells and segmented SDUs (so that frames pass the CRC), interleaved.
    let mut stream: Vec<[u8; CELL_LEN]> = Vec::new();
    while let Some((&op, tail)) = rest.split_first() {
        rest = tail;
        if op & 1 == 0 {
            let Some((cell, tail)) = rest.split_first_chunk::<CELL_LEN>() else {
                break;
            };
            rest = tail;
            stream.push(*cell);
        } else {
            let len = usize::from(op) * 8;
            let sdu: Vec<u8> = rest.iter().copied().cycle().take(len).collect();
            if let Ok(seg) = Segmenter::uni(vc, &sdu) {
                stream.extend(seg);
            }
        }
    }

    let mut one = Reassembler::new(vc, max_sdu).expect("max_sdu is 1..=65535");
    let mut runs = Reassembler::new(vc, max_sdu).expect("max_sdu is 1..=65535");
    for chunk in stream.chunks(usize::from(batch % 64) + 1) {
        let (mut want, mut want_sdu) = (Reassembly::Incomplete, Vec::new());
        for cell in chunk {
            let outcome = one.push_cell(cell);
            if outcome != Reassembly::Incomplete {
                want = outcome;
            }
            if let Reassembly::Complete(_) = outcome {
                want_sdu = one.sdu().to_vec();
            }
        }
        assert_eq!(runs.push_cells(chunk), want);
        assert_eq!(runs.sdu(), &want_sdu[..]);
    }
    assert_eq!(runs.counters(), one.counters());
});

//! Cell headers: arbitrary 53-byte cells through the checked view, the header parser and
//! the I.432 HEC receiver. What parses must emit back to the same five header bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_core::HeaderFormat;
use natm_wire::cell::{CELL_LEN, Cell, CellHeader, HecReceiver, HecVerdict};

fuzz_target!(|data: &[u8]| {
    let Ok(cell) = Cell::new_checked(data) else {
        assert!(data.len() < CELL_LEN);
        return;
    };
    let bytes: [u8; CELL_LEN] = data[..CELL_LEN].try_into().unwrap();
    for format in [HeaderFormat::Uni, HeaderFormat::Nni] {
        let _ = (
            cell.gfc(format),
            cell.vc(format),
            cell.pti(),
            cell.clp(),
            cell.payload(),
        );
        match CellHeader::parse(&cell, format) {
            Ok(header) => {
                assert!(cell.verify_hec());
                let mut out = [0xa5u8; CELL_LEN];
                header
                    .emit(&mut Cell::new_unchecked(&mut out[..]), format)
                    .unwrap();
                assert_eq!(
                    out[..5],
                    bytes[..5],
                    "{format:?} emit differs from the parsed bytes"
                );
                let again = CellHeader::parse(&Cell::new_checked(&out[..]).unwrap(), format);
                assert_eq!(again, Ok(header));
            }
            Err(_) => assert!(!cell.verify_hec()),
        }
    }
    let mut copy = bytes;
    let verdict = HecReceiver::new().receive(&mut Cell::new_unchecked(&mut copy[..]));
    match verdict {
        HecVerdict::Valid => assert_eq!(copy, bytes),
        HecVerdict::Corrected { bit } => {
            assert!(Cell::new_unchecked(&copy[..]).verify_hec());
            let mut flipped = copy;
            flipped[usize::from(bit / 8)] ^= 0x80 >> (bit % 8);
            assert_eq!(flipped, bytes, "exactly one bit corrected");
        }
        HecVerdict::Discarded { syndrome } => {
            assert_ne!(syndrome, 0);
            assert_eq!(copy, bytes);
        }
    }
});

//! OAM cells: parse arbitrary payloads; what parses must emit a payload that parses back to
//! the same thing with a correct CRC-10.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_wire::cell::PAYLOAD_LEN;
use natm_wire::oam::{OamCell, OamRepr};

fuzz_target!(|data: &[u8]| {
    let Ok(cell) = OamCell::new_checked(data) else {
        assert!(data.len() < PAYLOAD_LEN);
        return;
    };
    let _ = (
        cell.oam_type(),
        cell.function_type(),
        cell.crc10(),
        cell.reserved_bits(),
    );
    let payload: &[u8; PAYLOAD_LEN] = data[..PAYLOAD_LEN].try_into().unwrap();
    let checked = OamRepr::parse(&cell);
    assert_eq!(checked.is_ok(), cell.verify_crc10());
    let repr = OamRepr::parse_unverified(payload);
    if let Ok(r) = checked {
        assert_eq!(r, repr);
    }
    let emitted = repr.to_payload();
    let again = OamCell::new_checked(&emitted[..]).unwrap();
    assert!(again.verify_crc10());
    assert_eq!(again.reserved_bits(), 0);
    assert_eq!(OamRepr::parse(&again), Ok(repr));
    let _ = repr.to_string();
});

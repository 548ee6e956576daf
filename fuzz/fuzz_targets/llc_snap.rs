//! RFC 2684 LLC headers: parse arbitrary SDUs; what parses must emit back to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_wire::llc::{Encapsulation, LlcHeader, guess};

fuzz_target!(|sdu: &[u8]| {
    let _ = guess(sdu);
    for enc in [
        Encapsulation::Llc,
        Encapsulation::VcMuxRouted,
        Encapsulation::VcMuxBridged,
    ] {
        let _ = enc.decapsulate(sdu);
    }
    if let Ok((header, offset)) = LlcHeader::parse(sdu) {
        assert_eq!(offset, header.buffer_len());
        let mut again = vec![0u8; offset];
        header.emit(&mut again);
        assert_eq!(LlcHeader::parse(&again), Ok((header, offset)));
    }
});

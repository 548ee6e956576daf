//! ATMARP packets: parse arbitrary bytes; parse → emit → parse must agree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_wire::atmarp::AtmArpRepr;

fuzz_target!(|data: &[u8]| {
    if let Ok(repr) = AtmArpRepr::parse(data) {
        let mut out = Vec::new();
        repr.emit(&mut out)
            .expect("a parsed packet fits its own length fields");
        assert_eq!(out.len(), repr.buffer_len());
        assert_eq!(AtmArpRepr::parse(&out), Ok(repr));
    }
});

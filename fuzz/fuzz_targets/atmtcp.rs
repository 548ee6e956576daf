//! atmtcp streams: decode frames from arbitrary bytes, and control messages from every body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_wire::atmtcp::{Control, decode};

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Ok(Some((frame, used))) = decode(rest) {
        assert!(used <= rest.len() && used >= 8);
        if frame.header.is_control() {
            if let Ok(c) = Control::parse(frame.body) {
                assert_eq!(Control::parse(c.to_text().as_bytes()), Ok(c));
            }
        }
        rest = &rest[used..];
    }
    let _ = Control::parse(data);
});

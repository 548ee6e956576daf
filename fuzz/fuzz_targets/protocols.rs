//! The daemons' socket protocols (natm-proto): any bytes as hostd's frames and as switchd's
//! request and reply lines never panic; what decodes encodes to something that decodes to
//! the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_proto::{host, switchd};

fuzz_target!(|data: &[u8]| {
    // hostd: split frames off the buffer as the daemon does, decode each as a request and
    // as a response.
    let mut rest = data;
    while let Ok(Some((body, used))) = host::split_frame(rest) {
        if let Ok(host::Frame::Control(r)) = host::decode::<host::Request>(body) {
            let again = host::control_frame(&r);
            let (b, _) = host::split_frame(&again).unwrap().unwrap();
            match host::decode::<host::Request>(b).unwrap() {
                host::Frame::Control(r2) => assert_eq!(r, r2),
                f => panic!("a control frame came back as {f:?}"),
            }
        }
        let _ = host::decode::<host::Response>(body);
        rest = &rest[used.min(rest.len())..];
        if used == 0 {
            break;
        }
    }
    // switchd: one line each way.
    if let Ok(r) = switchd::decode_request(data) {
        let line = switchd::encode_request(&r);
        assert_eq!(switchd::decode_request(line.as_bytes()).unwrap(), r);
    }
    let _ = switchd::decode_response(data);
});

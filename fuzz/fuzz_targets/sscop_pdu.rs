//! SSCOP PDUs: parse arbitrary bytes (view and `Repr`); parse → emit → parse must agree, and
//! the emitted bytes are as long as `buffer_len` says.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_wire::sscop::{Pdu, Repr};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = Pdu::new_checked(data) {
        let _ = (p.n_s(), p.n_r(), p.n_mr(), p.n_ps(), p.n_sq(), p.source());
        let _ = p.payload();
        for i in 0..=p.list_len() {
            let _ = p.list_item(i);
        }
    }
    if let Ok(repr) = Repr::parse(data) {
        let out = repr.to_vec().expect("a parsed PDU emits");
        assert_eq!(out.len(), repr.buffer_len());
        assert_eq!(out.len() % 4, 0);
        assert_eq!(Repr::parse(&out).as_ref(), Ok(&repr));
        let _ = repr.to_string();
    }
});

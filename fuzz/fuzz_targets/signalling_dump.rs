//! `natm dump`'s signalling decoding (natm_capture::signalling): arbitrary bytes as an SSCOP
//! PDU, as a bare Q.2931 message, as the information of an SD, and as a SunATM signalling
//! record and an AAL5 PDU on VC 0.5 through `summarize`. Nothing may panic; an SD always
//! decodes as an SD, and the message inside it is decoded exactly as it is bare.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_capture::signalling::Signalling;
use natm_capture::{Direction, Record, RecordKind, SunAtmType, summarize};
use natm_core::{Instant, VcId};
use natm_wire::sscop::Repr;

fuzz_target!(|data: &[u8]| {
    let _ = Signalling::from_sscop(data).to_string();
    let bare = Signalling::from_q2931(data);
    let _ = bare.to_string();
    if let Ok(sd) = (Repr::Sd { n_s: 7, info: data }).to_vec() {
        let s = Signalling::from_sscop(&sd);
        let sscop = s.sscop.as_ref().expect("an SD decodes");
        assert_eq!((sscop.pdu_type, sscop.n_s), ("SD", Some(7)));
        assert_eq!(s.q2931, bare.q2931);
        assert_eq!(s.error, bare.error);
        let _ = s.to_string();
    }
    let vc = VcId::uni(0, 5).unwrap();
    let time = Instant::from_nanos(1_000_000_000);
    let sun = Record {
        time,
        kind: RecordKind::SunAtm {
            vc,
            kind: SunAtmType::Qsaal,
            direction: Direction::DteToDce,
            sdu: data.to_vec(),
        },
    };
    let _ = summarize(&sun).to_string();
    let mut pdu = Vec::new();
    if natm_wire::aal5::encode_pdu(data, 0, 0, &mut pdu).is_ok() {
        let aal5 = Record {
            time,
            kind: RecordKind::Aal5Pdu { vc, pdu },
        };
        let _ = summarize(&aal5).to_string();
    }
});

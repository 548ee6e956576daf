//! Q.2931 messages: parse arbitrary bytes (never panics); whatever parses re-emits and
//! re-parses to the same message, with only unrecognised or missing IEs left to report;
//! its one-line dump never panics; and the QoS it carries, when natm can read one, maps
//! back to the same IEs' meaning.
//!
//! The first byte chooses whether the input is used as is or behind a valid header (so
//! that most inputs reach the IE decoders).
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_wire::q2931::qos::QosIes;
use natm_wire::q2931::{IeProblem, Message};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = if mode & 1 == 0 || rest.len() < 2 {
        rest.to_vec()
    } else {
        // A header with type `rest[0]`, call reference `mode`, then `rest[1..]` as IEs.
        let ies = &rest[1..];
        let len = ies.len().min(usize::from(u16::MAX));
        let mut b = vec![0x09, 0x03, mode >> 1, 0, mode, rest[0], 0x80];
        b.extend((len as u16).to_be_bytes());
        b.extend(&ies[..len]);
        b
    };
    let Ok(parsed) = Message::parse(&bytes) else {
        return;
    };
    let m = parsed.message;
    let _ = m.to_string();
    let out = m.to_vec();
    assert_eq!(out.len(), m.buffer_len());
    let again = Message::parse(&out).expect("an emitted message parses");
    assert_eq!(again.message, m);
    assert!(
        again.problems.iter().all(|p| matches!(
            p,
            IeProblem::Unrecognised { .. } | IeProblem::MandatoryMissing { .. }
        )),
        "{:?}",
        again.problems
    );
    if let Ok(ies) = QosIes::from_message(&m)
        && let Ok(q) = ies.to_qos()
    {
        assert_eq!(q.validate(), Ok(()));
        if let Ok(ies2) = QosIes::from_qos(&q) {
            assert_eq!(ies2.to_qos(), Ok(q));
        }
    }
});

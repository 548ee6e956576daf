//! QoS text (libatm's text2qos form): parse arbitrary text; an accepted value must pass
//! `validate` and survive Display → parse unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_core::qos::Qos;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(q) = text.parse::<Qos>() {
        assert_eq!(q.validate(), Ok(()), "{text:?}");
        let shown = q.to_string();
        assert_eq!(shown.parse::<Qos>(), Ok(q), "{text:?} printed as {shown:?}");
    }
});

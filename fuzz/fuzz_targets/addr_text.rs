//! ATM address text (libatm's text2atm form): parse arbitrary text with each syntax and
//! as each address type; an accepted value must pass `validate` and survive Display →
//! parse unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_core::addr::{AddrSyntax, Aesa, AtmAddr, E164, PvcAddr, SvcAddr};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let nni = AddrSyntax {
        nni: true,
        ..AddrSyntax::DEFAULT
    };
    for syntax in [AddrSyntax::DEFAULT, AddrSyntax::EXACT, nni] {
        if let Ok(a) = AtmAddr::parse_with(&text, syntax) {
            assert_eq!(a.validate(syntax), Ok(()), "{text:?}");
            let shown = a.to_string();
            assert_eq!(
                AtmAddr::parse_with(&shown, syntax),
                Ok(a),
                "{text:?} printed as {shown:?}"
            );
        }
        if let Ok(a) = PvcAddr::parse_with(&text, syntax) {
            assert_eq!(
                PvcAddr::parse_with(&a.to_string(), syntax),
                Ok(a),
                "{text:?}"
            );
        }
        if let Ok(a) = SvcAddr::parse_with(&text, syntax) {
            assert_eq!(
                SvcAddr::parse_with(&a.to_string(), syntax),
                Ok(a),
                "{text:?}"
            );
        }
    }
    if let Ok(a) = text.parse::<Aesa>() {
        assert_eq!(a.to_string().parse::<Aesa>(), Ok(a), "{text:?}");
    }
    if let Ok(e) = text.parse::<E164>() {
        assert_eq!(e.to_string().parse::<E164>(), Ok(e), "{text:?}");
    }
});

//! Property tests of the text forms: every value the text can express survives
//! `Display` → `FromStr`, and no input makes a parser panic.

use natm_core::addr::{AddrSyntax, Aesa, AtmAddr, E164, PvcAddr, Sel, SvcAddr};
use natm_core::qos::{Aal, Pcr, Qos, TrafficClass, TrafficParams};
use natm_core::{Itf, Vci, Vpi};
use proptest::prelude::*;

const INT_MAX: u32 = i32::MAX as u32;

/// A field value: mostly "not given", sometimes small, sometimes anywhere in range.
fn count() -> impl Strategy<Value = u32> {
    prop_oneof![3 => Just(0u32), 2 => 0u32..100_000, 1 => 0..=INT_MAX]
}

fn rate() -> impl Strategy<Value = Pcr> {
    prop_oneof![1 => Just(Pcr::Max), 4 => count().prop_map(Pcr::Cps)]
}

fn params(class: TrafficClass, vbr: bool) -> impl Strategy<Value = TrafficParams> {
    let ext = if vbr {
        (count(), count(), count()).boxed()
    } else {
        Just((0, 0, 0)).boxed()
    };
    (rate(), rate(), count(), count(), ext).prop_map(
        move |(max_pcr, pcr, min_pcr, max_sdu, (scr, mbs, cdvt))| TrafficParams {
            class,
            max_pcr,
            pcr,
            min_pcr,
            max_cdv: 0,
            max_sdu,
            scr,
            mbs,
            cdvt,
        },
    )
}

/// Every value `text2qos` (plus the VBR extension) can produce.
fn qos() -> impl Strategy<Value = Qos> {
    let class = prop_oneof![
        Just(TrafficClass::Ubr),
        Just(TrafficClass::Cbr),
        Just(TrafficClass::Abr),
        Just(TrafficClass::Vbr)
    ];
    let aal = prop_oneof![Just(Aal::None), Just(Aal::Aal0), Just(Aal::Aal5)];
    (class, aal, any::<bool>(), any::<bool>()).prop_flat_map(|(class, aal, tx_none, rx_none)| {
        let vbr = class == TrafficClass::Vbr;
        let pick = |none: bool| if none { TrafficClass::None } else { class };
        (params(pick(tx_none), vbr), params(pick(rx_none), vbr)).prop_map(move |(tx, mut rx)| {
            if tx_none && rx_none {
                // Without a class, only the common parameters can set them.
                rx = TrafficParams {
                    class: TrafficClass::None,
                    ..tx
                };
            }
            Qos { tx, rx, aal }
        })
    })
}

fn sel<T: Clone + core::fmt::Debug + 'static>(
    v: impl Strategy<Value = T> + 'static,
    any_ok: bool,
    unspec_ok: bool,
) -> BoxedStrategy<Sel<T>> {
    let mut options = vec![(8, v.prop_map(Sel::Is).boxed())];
    if any_ok {
        options.push((1, Just(Sel::Any).boxed()));
    }
    if unspec_ok {
        options.push((1, Just(Sel::Unspecified).boxed()));
    }
    proptest::strategy::Union::new_weighted(options).boxed()
}

fn pvc(nni: bool) -> impl Strategy<Value = PvcAddr> {
    let max_vpi = if nni { Vpi::MAX_NNI } else { Vpi::MAX_UNI };
    (
        sel(
            (0..=Itf::MAX).prop_map(|v| Itf::new(v.into()).unwrap()),
            true,
            false,
        ),
        sel(
            (0..=max_vpi).prop_map(|v| Vpi::nni(v.into()).unwrap()),
            true,
            true,
        ),
        sel(any::<u16>().prop_map(Vci::from_u16), true, true),
    )
        .prop_map(|(itf, vpi, vci)| PvcAddr { itf, vpi, vci })
}

fn aesa() -> impl Strategy<Value = Aesa> {
    let afi = prop_oneof![
        Just(0x39u8),
        Just(0x45),
        Just(0x47),
        Just(0x49),
        Just(0xc3),
        Just(0xbd),
        1u8..=255
    ];
    (afi, any::<[u8; 20]>(), any::<bool>()).prop_map(|(afi, mut b, e164_digits)| {
        b[0] = afi;
        if afi == 0x45 && e164_digits {
            // A well-formed E.164 AESA: BCD digits, F pad.
            for byte in &mut b[1..9] {
                *byte = (((*byte >> 4) % 10) << 4) | ((*byte & 0x0f) % 10);
            }
            b[8] |= 0x0f;
        }
        Aesa(b)
    })
}

fn e164() -> impl Strategy<Value = E164> {
    "[0-9]{1,12}".prop_map(|s| E164::new(&s).unwrap())
}

/// SVC addresses, with prefix lengths from the whole range; `validate` filters out the
/// ones the text cannot carry.
fn svc() -> impl Strategy<Value = SvcAddr> {
    let prefix = prop_oneof![3 => Just(None), 1 => (0u8..=160).prop_map(Some)];
    (
        proptest::option::of(aesa()),
        proptest::option::of(e164()),
        prefix,
        any::<bool>(),
    )
        .prop_map(|(prv, pub_, prefix_len, zero)| {
            // The zero AESA only exists as a short prefix ("0/4").
            let prv = if zero && prefix_len.is_some_and(|l| l <= 4) {
                Some(Aesa([0; 20]))
            } else {
                prv
            };
            SvcAddr {
                prv,
                pub_,
                prefix_len: prv.and(prefix_len),
            }
        })
        .prop_filter("expressible in text", |a| {
            a.validate(AddrSyntax::DEFAULT).is_ok()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn qos_round_trips(q in qos()) {
        prop_assert_eq!(q.validate(), Ok(()));
        let text = q.to_string();
        prop_assert_eq!(text.parse::<Qos>(), Ok(q), "via {:?}", text);
    }

    #[test]
    fn pvc_round_trips(a in pvc(false)) {
        prop_assert_eq!(a.validate(AddrSyntax::DEFAULT), Ok(()));
        let text = a.to_string();
        prop_assert_eq!(text.parse::<PvcAddr>(), Ok(a), "via {:?}", text);
        prop_assert_eq!(text.parse::<AtmAddr>(), Ok(AtmAddr::Pvc(a)), "via {:?}", text);
    }

    #[test]
    fn nni_pvc_round_trips(a in pvc(true)) {
        let nni = AddrSyntax { nni: true, ..AddrSyntax::DEFAULT };
        let text = a.to_string();
        prop_assert_eq!(AtmAddr::parse_with(&text, nni), Ok(AtmAddr::Pvc(a)), "via {:?}", text);
    }

    #[test]
    fn svc_round_trips(a in svc()) {
        let text = a.to_string();
        prop_assert_eq!(text.parse::<SvcAddr>(), Ok(a), "via {:?}", text);
        prop_assert_eq!(text.parse::<AtmAddr>(), Ok(AtmAddr::Svc(a)), "via {:?}", text);
        if let (Some(prv), None) = (a.prv, a.prefix_len) {
            prop_assert_eq!(prv.to_string().parse::<Aesa>(), Ok(prv));
        }
    }

    #[test]
    fn qos_text_never_panics(s in "[ubrcavxtspmindkMG0-9.,:=+ _-]{0,40}") {
        if let Ok(q) = s.parse::<Qos>() {
            prop_assert_eq!(q.to_string().parse::<Qos>(), Ok(q));
        }
    }

    #[test]
    fn addr_text_never_panics(s in "[0-9a-fA-F.:+*?/ x]{0,50}") {
        if let Ok(a) = s.parse::<AtmAddr>() {
            prop_assert_eq!(a.to_string().parse::<AtmAddr>(), Ok(a));
        }
    }
}

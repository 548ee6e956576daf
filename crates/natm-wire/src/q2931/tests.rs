//! Vectors from atm-facts §5.5 (each decoded by Wireshark), malformed input per problem
//! kind, and round-trip properties over the random messages of [`super::sample`].

use alloc::string::ToString;
use alloc::vec::Vec;

use proptest::prelude::*;

use super::sample::{self, Sampler};
use super::*;

/// A random valid message from a proptest-drawn seed.
fn any_message() -> impl Strategy<Value = Message> {
    any::<u64>().prop_map(|seed| sample::message(&mut Sampler::new(seed)))
}

fn hex(s: &str) -> Vec<u8> {
    let s: alloc::string::String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Parses `bytes`, checks there is no problem and that emission gives the same bytes.
fn exact(bytes: &[u8]) -> Message {
    let p = Message::parse(bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.problems, []);
    assert_eq!(p.message.buffer_len(), bytes.len());
    let mut buf = alloc::vec![0xa5; bytes.len()];
    assert_eq!(p.message.emit(&mut buf), bytes.len());
    assert_eq!(buf, bytes);
    p.message
}

static SETUP: &str = "09 03 00 00 01 05 80 00 5c
    58 80 00 07 05 8c 23 e4 81 23 e4
    59 80 00 09 84 05 63 b7 85 05 63 b7 be
    5e 80 00 03 10 80 80
    70 80 00 15 82 47 00 05 80 ff e1 00 00 00 f2 1a 3d 5c 00 20 48 1a 3d 5c 00
    6c 80 00 15 82 47 00 05 80 ff e1 00 00 00 f2 1a 3d 5c 00 20 48 1b 00 01 00
    5f 80 00 01 cc
    5c 80 00 02 00 00";

fn aesa(s: &str) -> natm_core::Aesa {
    s.parse().unwrap()
}

#[test]
fn setup_vector() {
    let b = hex(SETUP);
    assert_eq!(b.len(), 101);
    let m = exact(&b);
    assert_eq!(
        m.header,
        Header::new(MsgType::Setup, CallRef::new(1, false))
    );
    assert_eq!(m.aal, Some(AalParams::aal5(9188, 9188)));
    assert_eq!(m.traffic, Some(TrafficDescriptor::ubr(353_207, 353_207)));
    assert_eq!(m.bearer, Some(BearerCapability::UBR_31));
    assert_eq!(
        m.called,
        Some(PartyNumber::aesa(aesa(
            "47.0005.80ffe1000000f21a3d5c.0020481a3d5c.00"
        )))
    );
    assert_eq!(m.blli, [Blli::llc()]);
    assert_eq!(m.qos, Some(QosParam::UNSPECIFIED));
    assert_eq!(
        m.to_string(),
        "SETUP cr=1 flag=0 aal=[aal5 fwd_sdu=9188 bwd_sdu=9188] \
         td=[fwd pcr01=353207 bwd pcr01=353207 best-effort] bbc=[BCOB-X atc=NoIndication p2p] \
         called=47.0005.80FFE1000000F21A3D5C.0020481A3D5C.00 \
         calling=47.0005.80FFE1000000F21A3D5C.0020481B0001.00 blli=[l2=0x0c(llc)] qos=[class 0/0]"
    );
}

#[test]
fn other_vectors() {
    let cp = exact(&hex(
        "09 03 80 00 01 02 80 00 09 5a 80 00 05 88 00 00 00 20",
    ));
    assert_eq!(cp.header.msg_type, MsgType::CallProceeding);
    assert_eq!(cp.header.call_ref, CallRef::new(1, true));
    assert_eq!(cp.connection_id, Some(ConnectionId::exclusive(0, 32)));
    assert_eq!(
        cp.to_string(),
        "CALL PROCEEDING cr=1 flag=1 conn=[vpci=0 vci=32]"
    );

    let c = exact(&hex(
        "09 03 80 00 01 07 80 00 09 5a 80 00 05 88 00 00 00 20",
    ));
    assert_eq!(c.header.msg_type, MsgType::Connect);

    let ack = exact(&hex("09 03 00 00 01 0f 80 00 00"));
    assert_eq!(ack.to_string(), "CONNECT ACK cr=1 flag=0");

    let rel = exact(&hex("09 03 00 00 01 4d 80 00 06 08 80 00 02 80 90"));
    assert_eq!(
        rel.cause,
        [Cause::new(Location::User, CauseValue::NormalCallClearing)]
    );

    let rc = exact(&hex("09 03 80 00 01 5a 80 00 06 08 80 00 02 82 af"));
    assert_eq!(rc.cause[0].location, Location::PublicLocal);
    assert_eq!(rc.cause[0].value, CauseValue::ResourceUnavailable);
    assert_eq!(
        rc.to_string(),
        "RELEASE COMPLETE cr=1 flag=1 cause=[47 (resource unavailable, unspecified) at LN]"
    );

    exact(&hex("09 03 00 00 01 75 80 00 00"));

    let st = exact(&hex(
        "09 03 80 00 01 7d 80 00 0b 08 80 00 02 80 9e 14 80 00 01 0a",
    ));
    assert_eq!(st.call_state, Some(CallState::Active));
    assert_eq!(
        st.to_string(),
        "STATUS cr=1 flag=1 cause=[30 (response to STATUS ENQUIRY) at U] state=10 (Active)"
    );

    let rs = exact(&hex("09 03 00 00 00 46 80 00 05 79 80 00 01 82"));
    assert!(rs.header.call_ref.is_global());
    assert_eq!(rs.restart.map(|r| r.class), Some(RestartClass::AllVcs));
    let ra = exact(&hex("09 03 80 00 00 4e 80 00 05 79 80 00 01 82"));
    assert_eq!(ra.to_string(), "RESTART ACK cr=0 flag=1 restart=[all VCs]");
}

#[test]
fn cause_names() {
    assert_eq!(
        CauseValue::NormalCallClearing.to_string(),
        "16 (normal call clearing)"
    );
    assert_eq!(
        CauseValue::from_code(102),
        CauseValue::RecoveryOnTimerExpiry
    );
    assert_eq!(CauseValue::from_code(5).to_string(), "5 (unknown)");
    let mut c = Cause::new(Location::User, CauseValue::RecoveryOnTimerExpiry);
    c.diagnostics = b"303".to_vec();
    assert_eq!(
        c.to_string(),
        "102 (recovery on timer expiry) at U diag \"303\""
    );
    for v in 0..128u8 {
        assert_eq!(CauseValue::from_code(v).code(), v);
    }
}

#[test]
fn message_errors() {
    let ok = hex("09 03 00 00 01 4d 80 00 06 08 80 00 02 80 90");
    assert_eq!(Message::parse(&[]), Err(ParseError::TooShort { len: 0 }));
    assert_eq!(
        Message::parse(&ok[..8]),
        Err(ParseError::TooShort { len: 8 })
    );
    let mut b = ok.clone();
    b[0] = 0xf0;
    assert_eq!(
        Message::parse(&b),
        Err(ParseError::ProtocolDiscriminator(0xf0))
    );
    let mut b = ok.clone();
    b[1] = 0x02;
    assert_eq!(Message::parse(&b), Err(ParseError::CallRefLength(2)));
    let mut b = ok.clone();
    b[8] = 7;
    assert_eq!(
        Message::parse(&b),
        Err(ParseError::LengthMismatch {
            declared: 7,
            actual: 6
        })
    );
    let mut b = ok.clone();
    b.push(0);
    assert!(matches!(
        Message::parse(&b),
        Err(ParseError::LengthMismatch { .. })
    ));
    // The cause IE says 3 bytes of contents, 2 follow.
    let mut b = ok.clone();
    b[12] = 3;
    assert_eq!(
        Message::parse(&b),
        Err(ParseError::IeTruncated { offset: 9 })
    );
    // An IE header cut short.
    let b = hex("09 03 00 00 01 4d 80 00 03 08 80 00");
    assert_eq!(
        Message::parse(&b),
        Err(ParseError::IeTruncated { offset: 9 })
    );
    assert!(ParseError::CallRefLength(2).to_string().contains("not 3"));
}

#[test]
fn unrecognised_ie_keeps_its_action() {
    // RELEASE with an unknown IE 0x3f, flag set, action "discard and report" (0x92).
    let b = hex("09 03 00 00 01 4d 80 00 0c 08 80 00 02 80 90 3f 92 00 02 aa bb");
    let p = Message::parse(&b).unwrap();
    assert_eq!(
        p.problems,
        [IeProblem::Unrecognised {
            id: IeId::Unknown(0x3f),
            flags: IeFlags {
                coding: CodingStandard::Itu,
                flag: true,
                pass_along: false,
                action: IeAction::DiscardReport,
            },
        }]
    );
    assert_eq!(p.problems[0].cause(), Some(CauseValue::IeNonExistent));
    assert_eq!(p.message.unknown[0].contents, [0xaa, 0xbb]);
    // Kept raw, it is emitted again as received.
    assert_eq!(p.message.to_vec(), b);
}

#[test]
fn content_errors_mandatory_or_not() {
    // RELEASE whose cause lacks octet 6: mandatory, so flagged as such.
    let b = hex("09 03 00 00 01 4d 80 00 05 08 80 00 01 80");
    let p = Message::parse(&b).unwrap();
    assert_eq!(
        p.problems,
        [IeProblem::ContentError {
            id: IeId::Cause,
            mandatory: true,
            error: IeErrorKind::Truncated,
        }]
    );
    assert!(p.message.cause.is_empty());
    // CONNECT with a 4-byte connection identifier: not mandatory there.
    let b = hex("09 03 80 00 01 07 80 00 08 5a 80 00 04 88 00 00 00");
    let p = Message::parse(&b).unwrap();
    assert_eq!(
        p.problems,
        [IeProblem::ContentError {
            id: IeId::ConnectionId,
            mandatory: false,
            error: IeErrorKind::Truncated,
        }]
    );
    assert_eq!(p.problems[0].cause(), Some(CauseValue::InvalidIeContents));
    // QoS class 1 with ITU-T coding.
    let b = hex("09 03 80 00 01 07 80 00 06 5c 80 00 02 01 00");
    let p = Message::parse(&b).unwrap();
    assert!(matches!(
        p.problems[..],
        [IeProblem::ContentError {
            id: IeId::QosParam,
            ..
        }]
    ));
    // ... which network-specific coding allows.
    let b = hex("09 03 80 00 01 07 80 00 06 5c e0 00 02 01 00");
    let p = Message::parse(&b).unwrap();
    assert_eq!(p.problems, []);
    assert_eq!(p.message.to_vec(), b);
    // An unknown AAL5 subfield, a traffic descriptor subfield twice.
    let b = hex("09 03 80 00 01 07 80 00 06 58 80 00 02 05 99");
    let p = Message::parse(&b).unwrap();
    assert_eq!(
        p.problems[0],
        IeProblem::ContentError {
            id: IeId::AalParams,
            mandatory: false,
            error: IeErrorKind::UnknownSubfield(0x99)
        }
    );
    let b = hex("09 03 80 00 01 07 80 00 0c 59 80 00 08 84 00 00 01 84 00 00 02");
    let p = Message::parse(&b).unwrap();
    assert_eq!(
        p.problems[0],
        IeProblem::ContentError {
            id: IeId::TrafficDescriptor,
            mandatory: false,
            error: IeErrorKind::RepeatedSubfield(0x84)
        }
    );
    // An AESA of 19 bytes, E.164 digits that are not digits.
    let b = hex(
        "09 03 80 00 01 07 80 00 18 70 80 00 14 82 47 00 05 80 ff e1 00 00 00 f2 1a 3d 5c 00 20 48 1a 3d 5c",
    );
    let p = Message::parse(&b).unwrap();
    assert_eq!(
        p.problems[0],
        IeProblem::ContentError {
            id: IeId::CalledNumber,
            mandatory: false,
            error: IeErrorKind::Invalid("AESA length")
        }
    );
    let b = hex("09 03 80 00 01 07 80 00 07 70 80 00 03 91 31 41");
    let p = Message::parse(&b).unwrap();
    assert_eq!(
        p.problems[0],
        IeProblem::ContentError {
            id: IeId::CalledNumber,
            mandatory: false,
            error: IeErrorKind::Invalid("E.164 digits")
        }
    );
    let b = hex("09 03 80 00 01 07 80 00 07 70 80 00 03 91 31 32");
    let p = Message::parse(&b).unwrap();
    assert_eq!(p.problems, []);
    assert_eq!(p.message.called.as_ref().unwrap().to_string(), "+12");
}

#[test]
fn mandatory_missing_and_repeated() {
    // SETUP with only a bearer capability.
    let b = hex("09 03 00 00 01 05 80 00 07 5e 80 00 03 10 80 80");
    let p = Message::parse(&b).unwrap();
    assert_eq!(
        p.problems,
        [
            IeProblem::MandatoryMissing {
                id: IeId::TrafficDescriptor
            },
            IeProblem::MandatoryMissing {
                id: IeId::CalledNumber
            },
        ]
    );
    assert_eq!(p.problems[0].cause(), Some(CauseValue::MandatoryIeMissing));
    // STATUS without call state; RESTART without restart indicator.
    let b = hex("09 03 80 00 01 7d 80 00 06 08 80 00 02 80 9e");
    assert_eq!(
        Message::parse(&b).unwrap().problems,
        [IeProblem::MandatoryMissing {
            id: IeId::CallState
        }]
    );
    let b = hex("09 03 00 00 00 46 80 00 00");
    assert_eq!(
        Message::parse(&b).unwrap().problems,
        [IeProblem::MandatoryMissing {
            id: IeId::RestartIndicator
        }]
    );
    // A repeated restart indicator: the first counts.
    let b = hex("09 03 00 00 00 46 80 00 0a 79 80 00 01 82 79 80 00 01 80");
    let p = Message::parse(&b).unwrap();
    assert_eq!(
        p.problems,
        [IeProblem::Repeated {
            id: IeId::RestartIndicator
        }]
    );
    assert_eq!(p.problems[0].cause(), None);
    assert_eq!(p.message.restart.unwrap().class, RestartClass::AllVcs);
    // Four BLLIs: the fourth is a repetition too many.
    let mut b = hex("09 03 80 00 01 07 80 00 14");
    for _ in 0..4 {
        b.extend(hex("5f 80 00 01 cc"));
    }
    let p = Message::parse(&b).unwrap();
    assert_eq!(p.message.blli.len(), 3);
    assert_eq!(p.problems, [IeProblem::Repeated { id: IeId::Blli }]);
}

#[test]
fn unknown_message_type_parses() {
    let b = hex("09 03 00 00 07 99 90 00 05 08 80 00 01 80");
    let p = Message::parse(&b).unwrap();
    assert_eq!(p.message.header.msg_type, MsgType::Unknown(0x99));
    assert_eq!(
        p.message.header.instruction,
        MsgInstruction {
            flag: true,
            pass_along: false,
            action: MsgAction::ClearCall
        }
    );
    assert!(
        p.message
            .to_string()
            .starts_with("message type 0x99 cr=7 flag=0 instr=0x90")
    );
}

#[test]
fn blli_layers() {
    // Layer 3 TR 9577 with IPI SNAP (0x80), then the SNAP octet: RFC 1755's bridged form.
    let c = hex("6b 40 80 80 00 80 c2 00 07");
    let b = Blli::parse_contents(&c).unwrap();
    assert_eq!(b.layer3.as_ref().unwrap().ipi(), Some(0x80));
    assert_eq!(b.snap, Some([0x00, 0x80, 0xc2, 0x00, 0x07]));
    let mut out = alloc::vec![0; b.contents_len()];
    b.emit_contents(&mut out);
    assert_eq!(out, c);
    assert_eq!(b.to_string(), "l3=0x0b(ipi=0x80) snap=0080c2/0007");
    assert_eq!(
        Blli::parse_contents(&hex("cc a1")),
        Err(IeErrorKind::Invalid("layer order"))
    );
    assert_eq!(
        Blli::parse_contents(&hex("4b")),
        Err(IeErrorKind::Truncated)
    );
}

#[test]
fn calling_party_screening() {
    let mut c = hex("02 a3");
    c.extend(aesa("47.0005.80ffe1000000f21a3d5c.0020481a3d5c.00").0);
    let mut b = hex("09 03 00 00 01 05 80 00 1a 6c 80 00 16");
    b.extend(&c);
    let p = Message::parse(&b).unwrap();
    let n = p.message.calling.clone().unwrap();
    assert_eq!(
        n.screening,
        Some((Presentation::Restricted, Screening::Network))
    );
    assert_eq!(p.message.to_vec(), b);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn message_round_trip(m in any_message()) {
        let bytes = m.to_vec();
        prop_assert_eq!(bytes.len(), m.buffer_len());
        let p = Message::parse(&bytes).unwrap();
        let unknown = p.problems.iter().filter(|x| matches!(x, IeProblem::Unrecognised { .. })).count();
        prop_assert_eq!(unknown, m.unknown.len());
        prop_assert!(p.problems.iter().all(|x| matches!(
            x,
            IeProblem::Unrecognised { .. } | IeProblem::MandatoryMissing { .. }
        )), "{:?}", p.problems);
        prop_assert_eq!(p.message, m);
    }

    #[test]
    fn every_type_round_trips(t in proptest::sample::select(MsgType::ALL.to_vec()), m in any_message()) {
        let mut m = m;
        m.header.msg_type = t;
        let p = Message::parse(&m.to_vec()).unwrap();
        prop_assert_eq!(p.message, m);
    }

    #[test]
    fn parse_never_panics_and_reparses(b in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(p) = Message::parse(&b) {
            let again = Message::parse(&p.message.to_vec()).unwrap();
            prop_assert_eq!(again.message, p.message);
        }
    }

    #[test]
    fn mutated_messages_never_panic(m in any_message(), at in any::<prop::sample::Index>(), x in any::<u8>()) {
        let mut b = m.to_vec();
        let i = at.index(b.len());
        b[i] ^= x;
        if let Ok(p) = Message::parse(&b) {
            let again = Message::parse(&p.message.to_vec()).unwrap();
            prop_assert_eq!(again.message, p.message);
        }
    }
}

/// Each IE alone, through its own codec.
fn ie_round_trip<T: IeCodec + PartialEq + core::fmt::Debug>(v: &T) -> Result<(), TestCaseError> {
    let mut buf = alloc::vec![0xa5; v.buffer_len()];
    prop_assert_eq!(v.emit(&mut buf), buf.len());
    prop_assert_eq!(buf[0], T::ID.code());
    let back = T::parse_contents(&buf[4..]).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&back, v);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn ies_round_trip(seed in any::<u64>()) {
        let s = &mut Sampler::new(seed);
        ie_round_trip(&sample::aal(s))?;
        ie_round_trip(&sample::traffic(s))?;
        ie_round_trip(&sample::bearer(s))?;
        ie_round_trip(&sample::bhli(s))?;
        ie_round_trip(&sample::blli(s))?;
        ie_round_trip(&sample::connection_id(s))?;
        ie_round_trip(&sample::ext_qos(s))?;
        ie_round_trip(&sample::transit_delay(s))?;
        ie_round_trip(&sample::cause(s))?;
        ie_round_trip(&sample::call_state(s))?;
        ie_round_trip(&sample::restart(s))?;
        ie_round_trip(&sample::notification(s))?;
    }
}

/// Messages linux-atm's atmsigd 2.5.1 sent in the interop part's runs (recorded in
/// crates/natm-interop/src/vectors.rs): each parses without an IE problem and re-emits to
/// the same bytes, except that natm puts the cause before the call state (Q.2931 lets IEs
/// come in any order; atm-facts §5.5's STATUS has natm's order).
#[test]
fn atmsigd_messages() {
    let same = [
        // CONNECT with AAL5 9188/9188, SSCS null.
        "09 03 80 00 05 07 80 00 0d 58 80 00 09 05 8c 23 e4 81 23 e4 84 00",
        // RELEASE COMPLETE without a cause.
        "09 03 80 00 05 5a 80 00 00",
        // -m user's SETUP: bearer BCOB-X without octet 5a.
        "09 03 00 00 01 05 80 00 58 58 80 00 09 05 8c 23 e4 81 23 e4 84 00 59 80 00 09 84 05
         63 b7 85 05 63 b7 be 5e 80 00 02 90 80 70 80 00 15 82 47 00 05 80 ff e1 00 00 00 f2
         1a 3d 5c 00 20 48 1a 3d 5c 00 6c 80 00 15 82 47 00 05 80 ff e1 00 00 00 f2 1a 3d 5c
         00 20 48 1b 00 01 00 5c 80 00 02 00 00",
        // RESTART ACK of VC 0.32, RELEASE COMPLETE cause 81.
        "09 03 80 00 00 4e 80 00 0e 5a 80 00 05 88 00 00 00 20 79 80 00 01 80",
        "09 03 80 00 0a 5a 80 00 06 08 80 00 02 80 d1",
    ];
    for v in same {
        exact(&hex(v));
    }
    let setup = exact(&hex(same[2]));
    let q = qos::QosIes::from_message(&setup).unwrap().to_qos().unwrap();
    assert_eq!(q.to_string(), "ubr,aal5:max_pcr=353207,max_sdu=9188");
    assert_eq!(
        setup.aal,
        Some(AalParams::Aal5 {
            fwd_max_sdu: Some(9188),
            bwd_max_sdu: Some(9188),
            mode: None,
            sscs: Some(SscsType::Null),
        })
    );
    // STATUS with the call state first; the second answers a RESTART of an unknown VC
    // with cause 100 and the connection identifier's IE as diagnostic.
    for (v, cause) in [
        (
            "09 03 80 00 09 7d 80 00 0b 14 80 00 01 00 08 80 00 02 80 9e",
            "30 (response to STATUS ENQUIRY) at U",
        ),
        (
            "09 03 80 00 00 7d 80 00 0c 14 80 00 01 00 08 80 00 03 80 e4 5a",
            "100 (invalid information element contents) at U diag ie 5a",
        ),
    ] {
        let b = hex(v);
        let p = Message::parse(&b).unwrap();
        assert_eq!(p.problems, []);
        assert_eq!(p.message.call_state, Some(CallState::Null));
        assert_eq!(p.message.cause[0].to_string(), cause);
        assert_eq!(p.message.buffer_len(), b.len());
        assert_eq!(
            Message::parse(&p.message.to_vec()).unwrap().message,
            p.message
        );
    }
}

/// The one-line form `natm dump` prints, with every kind of IE.
#[test]
fn display_every_ie() {
    let mut m = Message::new(Header::new(MsgType::Setup, CallRef::new(0x12345, true)));
    m.aal = Some(AalParams::aal5(9188, 1500));
    let mut td = TrafficDescriptor::default();
    td.fwd.pcr01 = Some(10_000);
    td.fwd.scr01 = Some(5_000);
    td.fwd.mbs01 = Some(100);
    td.bwd.pcr0 = Some(0);
    td.bwd.pcr01 = Some(0);
    td.options = Some(TmOptions(
        TmOptions::FWD_TAGGING | TmOptions::BWD_FRAME_DISCARD,
    ));
    m.traffic = Some(td);
    m.alt_traffic = Some(TrafficDescriptor::ubr(8_000, 0));
    m.bearer = Some(BearerCapability {
        atc: Some(Atc::NrtVbr),
        ..BearerCapability::UBR_31
    });
    m.bhli = Some(Bhli {
        kind: BhliType::Vendor,
        info: alloc::vec![0, 0xa0, 0x3e, 0, 0, 0, 1],
    });
    m.called = Some(PartyNumber {
        number: Number::E164(b"41215551234".to_vec()),
        screening: None,
    });
    m.called_sub = Some(Subaddress {
        kind: SubaddressType::Aesa,
        odd: false,
        info: aesa("39.840f.80ffe1000000f21a3502.0020481a3502.00")
            .0
            .to_vec(),
    });
    m.calling = Some(PartyNumber {
        number: Number::Aesa(aesa("47.0005.80ffe1000000f21a3d5c.0020481b0001.00")),
        screening: Some((Presentation::Allowed, Screening::UserPassed)),
    });
    m.blli.push(Blli::llc());
    m.connection_id = Some(ConnectionId::exclusive(0, 100));
    m.qos = Some(QosParam::UNSPECIFIED);
    m.ext_qos = Some(ExtQos {
        fwd_cdv: Some(250),
        ..ExtQos::default()
    });
    m.transit_delay = Some(TransitDelay {
        cumulative: Some(10),
        maximum: None,
        network_generated: false,
    });
    m.cause.push(Cause {
        location: Location::PublicLocal,
        value: CauseValue::RecoveryOnTimerExpiry,
        diagnostics: b"303".to_vec(),
    });
    m.call_state = Some(CallState::CallInitiated);
    assert_eq!(
        m.to_string(),
        "SETUP cr=74565 flag=1 aal=[aal5 fwd_sdu=9188 bwd_sdu=1500] \
         td=[fwd pcr01=10000 scr01=5000 mbs01=100 bwd pcr0=0 pcr01=0 options=0x41,fwd-tag,bwd-fd] \
         alt_td=[fwd pcr01=8000 bwd pcr01=0 best-effort] bbc=[BCOB-X atc=NrtVbr p2p] \
         bhli=[Vendor 00a03e00000001] called=+41215551234 \
         called_sub=39.840F.80FFE1000000F21A3502.0020481A3502.00 \
         calling=47.0005.80FFE1000000F21A3D5C.0020481B0001.00 (Allowed, UserPassed) \
         blli=[l2=0x0c(llc)] conn=[vpci=0 vci=100] qos=[class 0/0] ext_qos=[origin=0 fwd_cdv=250us] \
         transit_delay=[cumulative=10ms] cause=[102 (recovery on timer expiry) at LN diag \"303\"] \
         state=1 (CallInitiated)"
    );
    let p = Message::parse(&m.to_vec()).unwrap();
    assert_eq!(p.problems, []);
    assert_eq!(p.message, m);
}

#[test]
fn view_walks_ies_in_wire_order() {
    let b = hex("09 03 80 00 09 7d 80 00 0b 14 80 00 01 00 08 80 00 02 80 9e");
    let v = MessageView::new_checked(&b[..]).unwrap();
    assert_eq!(v.call_ref(), CallRef::new(9, true));
    assert_eq!(v.msg_type(), MsgType::Status);
    assert_eq!(v.instruction(), MsgInstruction::NONE);
    assert_eq!(v.message_len(), 11);
    let ies: Vec<_> = v.ies().map(Result::unwrap).collect();
    assert_eq!(
        ies.iter()
            .map(|i| (i.id, i.offset, i.contents.len()))
            .collect::<Vec<_>>(),
        [(IeId::CallState, 9, 1), (IeId::Cause, 14, 2)]
    );
    assert_eq!(ies[1].range(), 14..20);
    // An IE that runs past the end ends the walk.
    let b = hex("09 03 00 00 01 4d 80 00 07 08 80 00 02 80 90 27");
    let v = MessageView::new_checked(&b[..]).unwrap();
    let mut it = v.ies();
    assert!(matches!(
        it.next(),
        Some(Ok(IeRef {
            id: IeId::Cause,
            ..
        }))
    ));
    assert_eq!(it.next(), Some(Err(ParseError::IeTruncated { offset: 15 })));
    assert_eq!(it.next(), None);
    // Setters.
    let mut b = hex("09 03 00 00 01 0f 80 00 00");
    let mut v = MessageView::new_unchecked(&mut b[..]);
    v.set_call_ref(CallRef::new(0x7f_ffff, true));
    assert_eq!(v.call_ref(), CallRef::new(CallRef::MAX, true));
    v.set_header(&Header::new(MsgType::StatusEnquiry, CallRef::new(2, false)));
    assert_eq!(b, hex("09 03 00 00 02 75 80 00 00"));
    assert_eq!(
        MessageView::new_checked(&[0x09u8][..]),
        Err(ParseError::TooShort { len: 1 })
    );
}

//! proptest strategies for random **valid** Q.2931 messages and IEs: everything they
//! generate emits, and parses back to the same value with no IE problem other than
//! [`IeProblem::Unrecognised`](super::IeProblem::Unrecognised) for the raw IEs and
//! [`IeProblem::MandatoryMissing`](super::IeProblem::MandatoryMissing).
//!
//! Compiled for this crate's tests and, for other crates (the `natm dump` / tshark test of
//! random messages), behind natm-wire's `proptest` feature:
//! `natm-wire = { workspace = true, features = ["proptest"] }` in their
//! `[dev-dependencies]`.
//!
//! [`message`] draws any message type (named or not) and any subset of IEs with random
//! contents; [`message_of`] fixes the type. Unknown IEs use identifiers natm does not
//! decode. For the tshark test, [`wireshark_message`] leaves out what Wireshark 4.0's
//! q2931 dissector does not know (UNI 4.0's 0x81/0x82/0xEC IEs, raw IEs) so that its
//! decode is clean.

use alloc::vec::Vec;

use natm_core::Aesa;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

use super::*;

/// A 24-bit value.
fn u24() -> impl Strategy<Value = u32> {
    0u32..=0xFF_FFFF
}

/// AAL parameters: AAL5 with any subset of its subfields, or another AAL type, raw.
pub fn aal() -> impl Strategy<Value = AalParams> {
    let aal5 = (
        option::of(any::<u16>()),
        option::of(any::<u16>()),
        option::of(1u8..=2),
        option::of(any::<u8>().prop_map(SscsType::from_code)),
    )
        .prop_map(|(f, b, mode, sscs)| AalParams::Aal5 {
            fwd_max_sdu: f,
            bwd_max_sdu: b,
            mode,
            sscs,
        });
    let other = (
        any::<u8>().prop_filter("not AAL5", |&t| t != AalType::Aal5.code()),
        vec(any::<u8>(), 0..12),
    )
        .prop_map(|(t, rest)| AalParams::Other {
            aal_type: AalType::from_code(t),
            rest,
        });
    prop_oneof![3 => aal5, 1 => other]
}

fn direction() -> impl Strategy<Value = TrafficDirection> {
    (
        option::of(u24()),
        option::of(u24()),
        option::of(u24()),
        option::of(u24()),
        option::of(u24()),
        option::of(u24()),
        option::of(u24()),
    )
        .prop_map(
            |(pcr0, pcr01, scr0, scr01, abr_mcr, mbs0, mbs01)| TrafficDirection {
                pcr0,
                pcr01,
                scr0,
                scr01,
                abr_mcr,
                mbs0,
                mbs01,
            },
        )
}

/// An ATM traffic descriptor with any subset of subfields (CBR, VBR, UBR, ABR and
/// combinations no contract uses).
pub fn traffic() -> impl Strategy<Value = TrafficDescriptor> {
    (
        direction(),
        direction(),
        any::<bool>(),
        option::of(any::<u8>().prop_map(TmOptions)),
    )
        .prop_map(|(fwd, bwd, best_effort, options)| TrafficDescriptor {
            fwd,
            bwd,
            best_effort,
            options,
        })
}

/// A traffic descriptor as a contract has one: CBR (PCR), VBR (PCR, SCR, MBS) or UBR
/// (PCR, best effort), with or without tagging and frame discard.
pub fn contract_traffic() -> impl Strategy<Value = TrafficDescriptor> {
    (
        0u8..3,
        u24(),
        u24(),
        u24(),
        u24(),
        u24(),
        u24(),
        any::<bool>(),
    )
        .prop_map(|(kind, fp, bp, fs, bs, fm, bm, opts)| {
            let mut td = TrafficDescriptor::default();
            td.fwd.pcr01 = Some(fp);
            td.bwd.pcr01 = Some(bp);
            match kind {
                0 => {}
                1 => {
                    td.fwd.scr01 = Some(fs);
                    td.bwd.scr01 = Some(bs);
                    td.fwd.mbs01 = Some(fm);
                    td.bwd.mbs01 = Some(bm);
                }
                _ => td.best_effort = true,
            }
            if opts {
                td.options = Some(TmOptions(
                    TmOptions::FWD_TAGGING | TmOptions::FWD_FRAME_DISCARD,
                ));
            }
            td
        })
}

/// A broadband bearer capability.
pub fn bearer() -> impl Strategy<Value = BearerCapability> {
    (0u8..32, option::of(0u8..128), any::<bool>(), 0u8..4).prop_map(|(class, atc, clipping, up)| {
        BearerCapability {
            class: BearerClass::from_code(class),
            atc: atc.map(Atc::from_code),
            clipping,
            user_plane: UserPlane::from_code(up),
        }
    })
}

/// BHLI.
pub fn bhli() -> impl Strategy<Value = Bhli> {
    (0u8..128, vec(any::<u8>(), 0..=8)).prop_map(|(k, info)| Bhli {
        kind: BhliType::from_code(k),
        info,
    })
}

fn layer() -> impl Strategy<Value = BlliLayer> {
    (0u8..32, vec(0u8..128, 0..3), 0u8..128).prop_map(|(protocol, mut more, last)| {
        if !more.is_empty() {
            let n = more.len();
            more[n - 1] = last | 0x80;
        }
        BlliLayer { protocol, more }
    })
}

/// BLLI with any subset of layers 1–3 and SNAP.
pub fn blli() -> impl Strategy<Value = Blli> {
    (
        option::of(0u8..32),
        option::of(layer()),
        option::of(layer()),
        option::of(any::<[u8; 5]>()),
    )
        .prop_map(|(layer1, layer2, layer3, snap)| Blli {
            layer1,
            layer2,
            layer3,
            snap,
        })
}

/// An AESA.
pub fn aesa() -> impl Strategy<Value = Aesa> {
    any::<[u8; 20]>().prop_map(Aesa)
}

/// A party number: AESA, E.164 (1–15 digits) or another plan; `screening` allows octet 5a.
pub fn party_number(screening: bool) -> impl Strategy<Value = PartyNumber> {
    let number = prop_oneof![
        4 => aesa().prop_map(Number::Aesa),
        2 => vec(b'0'..=b'9', 1..=15).prop_map(Number::E164),
        1 => (0u8..8, 0u8..16, vec(any::<u8>(), 0..20))
            .prop_filter("not the AESA or E.164 forms", |(t, p, _)| {
                !matches!((t, p), (0, 2) | (1, 1))
            })
            .prop_map(|(ton, plan, digits)| Number::Other { ton, plan, digits }),
    ];
    let scr =
        (0u8..4, 0u8..4).prop_map(|(p, s)| (Presentation::from_code(p), Screening::from_code(s)));
    (number, option::of(scr)).prop_map(move |(number, s)| PartyNumber {
        number,
        screening: if screening { s } else { None },
    })
}

/// A subaddress.
pub fn subaddress() -> impl Strategy<Value = Subaddress> {
    (0u8..8, any::<bool>(), vec(any::<u8>(), 0..=20)).prop_map(|(k, odd, info)| Subaddress {
        kind: SubaddressType::from_code(k),
        odd,
        info,
    })
}

/// A connection identifier.
pub fn connection_id() -> impl Strategy<Value = ConnectionId> {
    (0u8..4, 0u8..8, any::<u16>(), any::<u16>()).prop_map(|(a, p, vpci, vci)| ConnectionId {
        vp_assoc: VpAssoc::from_code(a),
        pref_excl: PrefExcl::from_code(p),
        vpci,
        vci,
    })
}

/// A QoS parameter: class 0 with ITU-T coding, any classes with network-specific coding.
pub fn qos_param() -> impl Strategy<Value = QosParam> {
    prop_oneof![
        Just(QosParam::UNSPECIFIED),
        (0u8..=4, 0u8..=4).prop_map(|(f, b)| QosParam {
            coding: CodingStandard::NetworkSpecific,
            fwd: QosClass::from_code(f),
            bwd: QosClass::from_code(b),
        }),
    ]
}

/// Extended QoS parameters.
pub fn ext_qos() -> impl Strategy<Value = ExtQos> {
    (
        0u8..2,
        option::of(u24()),
        option::of(u24()),
        option::of(u24()),
        option::of(u24()),
        option::of(any::<u8>()),
        option::of(any::<u8>()),
    )
        .prop_map(|(origin, a, b, c, d, e, f)| ExtQos {
            origin,
            fwd_cdv: a,
            bwd_cdv: b,
            fwd_cum_cdv: c,
            bwd_cum_cdv: d,
            fwd_clr: e,
            bwd_clr: f,
        })
}

/// End-to-end transit delay.
pub fn transit_delay() -> impl Strategy<Value = TransitDelay> {
    (
        option::of(any::<u16>()),
        option::of(any::<u16>()),
        any::<bool>(),
    )
        .prop_map(|(cumulative, maximum, network_generated)| TransitDelay {
            cumulative,
            maximum,
            network_generated,
        })
}

/// A cause: any location (Q.850's and unassigned), any value, up to 28 bytes of
/// diagnostics.
pub fn cause() -> impl Strategy<Value = Cause> {
    (
        0u8..16,
        0u8..128,
        vec(any::<u8>(), 0..=cause::MAX_DIAGNOSTICS),
    )
        .prop_map(|(l, v, diagnostics)| Cause {
            location: Location::from_code(l),
            value: CauseValue::from_code(v),
            diagnostics,
        })
}

/// A call state (6 bits).
pub fn call_state() -> impl Strategy<Value = CallState> {
    (0u8..64).prop_map(CallState::from_code)
}

/// A restart indicator.
pub fn restart() -> impl Strategy<Value = RestartIndicator> {
    (0u8..8).prop_map(|c| RestartIndicator {
        class: RestartClass::from_code(c),
    })
}

/// A notification indicator.
pub fn notification() -> impl Strategy<Value = Notification> {
    vec(any::<u8>(), 1..8).prop_map(|description| Notification { description })
}

/// Identifiers natm keeps raw (named ones it does not decode, and unassigned ones).
const RAW_IDS: [u8; 12] = [
    0x4C, 0x4D, 0x54, 0x55, 0x60, 0x78, 0x7E, 0x84, 0xE4, 0x01, 0x3F, 0xF0,
];

/// An IE natm does not decode.
pub fn raw_ie() -> impl Strategy<Value = RawIe> {
    (
        proptest::sample::select(&RAW_IDS[..]),
        any::<u8>(),
        vec(any::<u8>(), 0..16),
    )
        .prop_map(|(id, f, contents)| RawIe {
            id: IeId::from_code(id),
            flags: IeFlags::from_octet(f),
            contents,
        })
}

/// A header with any message type (mostly named ones).
pub fn header() -> impl Strategy<Value = Header> {
    let t = prop_oneof![
        4 => proptest::sample::select(MsgType::ALL.to_vec()),
        1 => any::<u8>().prop_map(MsgType::from_code),
    ];
    (t, 0u32..=CallRef::MAX, any::<bool>(), any::<u8>()).prop_map(|(t, v, flag, i)| Header {
        call_ref: CallRef::new(v, flag),
        msg_type: t,
        instruction: MsgInstruction::from_octet(i),
    })
}

/// A message of any type with any subset of IEs.
pub fn message() -> impl Strategy<Value = Message> {
    header().prop_flat_map(message_of)
}

/// The IE fields of a message, drawn in two groups (tuples are at most 12 wide).
type Group1 = (
    Option<AalParams>,
    Option<TrafficDescriptor>,
    Option<TrafficDescriptor>,
    Option<TrafficDescriptor>,
    Option<BearerCapability>,
    Option<Bhli>,
    Option<PartyNumber>,
    Option<Subaddress>,
    Option<PartyNumber>,
    Option<Subaddress>,
    Option<RepeatIndicator>,
    Vec<Blli>,
);

fn group1() -> impl Strategy<Value = Group1> {
    (
        option::of(aal()),
        option::of(prop_oneof![contract_traffic(), traffic()]),
        option::of(traffic()),
        option::of(traffic()),
        option::of(bearer()),
        option::of(bhli()),
        option::of(party_number(false)),
        option::of(subaddress()),
        option::of(party_number(true)),
        option::of(subaddress()),
        option::of((0u8..16).prop_map(|indication| RepeatIndicator { indication })),
        vec(blli(), 0..=MAX_BLLI),
    )
}

/// A message of type `header.msg_type` with any subset of IEs.
pub fn message_of(header: Header) -> impl Strategy<Value = Message> {
    let group2 = (
        option::of(connection_id()),
        option::of(qos_param()),
        option::of(ext_qos()),
        option::of(transit_delay()),
        any::<bool>(),
        vec(cause(), 0..=MAX_CAUSE),
        option::of(call_state()),
        option::of(restart()),
        option::of(notification()),
        vec(raw_ie(), 0..3),
    );
    (group1(), group2).prop_map(move |(g1, g2)| {
        let (
            aal,
            traffic,
            min_traffic,
            alt_traffic,
            bearer,
            bhli,
            called,
            called_sub,
            calling,
            calling_sub,
            repeat,
            blli,
        ) = g1;
        let (
            connection_id,
            qos,
            ext_qos,
            transit_delay,
            sending_complete,
            cause,
            call_state,
            restart,
            notification,
            unknown,
        ) = g2;
        Message {
            header,
            aal,
            traffic,
            min_traffic,
            alt_traffic,
            bearer,
            bhli,
            called,
            called_sub,
            calling,
            calling_sub,
            repeat,
            blli,
            connection_id,
            qos,
            ext_qos,
            transit_delay,
            sending_complete,
            cause,
            call_state,
            restart,
            notification,
            unknown,
        }
    })
}

/// A message of a named type whose IEs Wireshark 4.0's q2931 dissector knows: no UNI 4.0
/// traffic descriptors or extended QoS, no raw IEs, no explicit instructions.
pub fn wireshark_message() -> impl Strategy<Value = Message> {
    (
        proptest::sample::select(MsgType::ALL.to_vec()),
        0u32..=CallRef::MAX,
        any::<bool>(),
    )
        .prop_flat_map(|(t, v, flag)| message_of(Header::new(t, CallRef::new(v, flag))))
        .prop_map(|mut m| {
            m.min_traffic = None;
            m.alt_traffic = None;
            m.ext_qos = None;
            m.unknown.clear();
            m
        })
}

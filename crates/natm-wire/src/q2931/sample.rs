//! Random **valid** Q.2931 messages and IEs from a seed, for tests elsewhere (round trips,
//! `natm dump`): everything drawn here emits, and parses back to the
//! same value with no IE problem other than
//! [`IeProblem::Unrecognised`] for the raw IEs and
//! [`IeProblem::MandatoryMissing`].
//!
//! Behind natm-wire's `sample` feature, which adds no dependency (a proptest-based module
//! would have made natm-wire reach proptest's OS crates in `cargo metadata`, which the
//! architecture test forbids). With proptest, draw a seed and map it:
//! `any::<u64>().prop_map(|s| sample::message(&mut Sampler::new(s)))`; a failure's seed
//! reproduces it. The generator is deterministic (SplitMix64).
//!
//! [`message`] draws any message type (mostly named ones) and any subset of IEs with random
//! contents; [`message_of`] fixes the header. Raw IEs use identifiers natm does not decode.
//! (The tshark check, natm-cli's `tests/tshark.rs`, draws its own messages: valid per
//! message type, which these need not be.)

use alloc::vec::Vec;

use natm_core::Aesa;

use super::*;

/// A deterministic generator (SplitMix64).
#[derive(Clone, Debug)]
pub struct Sampler(u64);

impl Sampler {
    /// A generator from `seed`.
    pub const fn new(seed: u64) -> Sampler {
        Sampler(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// A byte below `n` (1..=256).
    fn byte_below(&mut self, n: u16) -> u8 {
        self.below(u64::from(n)) as u8
    }

    fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }

    fn u16(&mut self) -> u16 {
        self.next_u64() as u16
    }

    fn u24(&mut self) -> u32 {
        (self.next_u64() as u32) & 0xFF_FFFF
    }

    /// True with probability 1/2.
    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }

    fn maybe<T>(&mut self, f: impl FnOnce(&mut Sampler) -> T) -> Option<T> {
        if self.coin() { Some(f(self)) } else { None }
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = self.below(max as u64 + 1) as usize;
        (0..n).map(|_| self.byte()).collect()
    }
}

/// AAL parameters: AAL5 with any subset of its subfields, or another AAL type, raw.
pub fn aal(s: &mut Sampler) -> AalParams {
    if s.below(4) == 0 {
        let mut t = s.byte();
        if t == AalType::Aal5.code() {
            t = AalType::Aal1.code();
        }
        return AalParams::Other {
            aal_type: AalType::from_code(t),
            rest: s.bytes(11),
        };
    }
    AalParams::Aal5 {
        fwd_max_sdu: s.maybe(Sampler::u16),
        bwd_max_sdu: s.maybe(Sampler::u16),
        mode: s.maybe(|s| 1 + s.byte_below(2)),
        sscs: s.maybe(|s| SscsType::from_code(s.byte())),
    }
}

fn direction(s: &mut Sampler) -> TrafficDirection {
    TrafficDirection {
        pcr0: s.maybe(Sampler::u24),
        pcr01: s.maybe(Sampler::u24),
        scr0: s.maybe(Sampler::u24),
        scr01: s.maybe(Sampler::u24),
        abr_mcr: s.maybe(Sampler::u24),
        mbs0: s.maybe(Sampler::u24),
        mbs01: s.maybe(Sampler::u24),
    }
}

/// An ATM traffic descriptor with any subset of subfields.
pub fn traffic(s: &mut Sampler) -> TrafficDescriptor {
    TrafficDescriptor {
        fwd: direction(s),
        bwd: direction(s),
        best_effort: s.coin(),
        options: s.maybe(|s| TmOptions(s.byte())),
    }
}

/// A traffic descriptor as a contract has one: CBR (PCR), VBR (PCR, SCR, MBS) or UBR
/// (PCR, best effort), with or without tagging and frame discard.
pub fn contract_traffic(s: &mut Sampler) -> TrafficDescriptor {
    let mut td = TrafficDescriptor::default();
    td.fwd.pcr01 = Some(s.u24());
    td.bwd.pcr01 = Some(s.u24());
    match s.below(3) {
        0 => {}
        1 => {
            td.fwd.scr01 = Some(s.u24());
            td.bwd.scr01 = Some(s.u24());
            td.fwd.mbs01 = Some(s.u24());
            td.bwd.mbs01 = Some(s.u24());
        }
        _ => td.best_effort = true,
    }
    if s.coin() {
        td.options = Some(TmOptions(
            TmOptions::FWD_TAGGING | TmOptions::FWD_FRAME_DISCARD,
        ));
    }
    td
}

/// A broadband bearer capability.
pub fn bearer(s: &mut Sampler) -> BearerCapability {
    BearerCapability {
        class: BearerClass::from_code(s.byte_below(32)),
        atc: s.maybe(|s| Atc::from_code(s.byte_below(128))),
        clipping: s.coin(),
        user_plane: UserPlane::from_code(s.byte_below(4)),
    }
}

/// BHLI.
pub fn bhli(s: &mut Sampler) -> Bhli {
    Bhli {
        kind: BhliType::from_code(s.byte_below(128)),
        info: s.bytes(8),
    }
}

fn layer(s: &mut Sampler) -> BlliLayer {
    let protocol = s.byte_below(32);
    let n = s.below(3) as usize;
    let mut more: Vec<u8> = (0..n).map(|_| s.byte_below(128)).collect();
    if let Some(last) = more.last_mut() {
        *last |= 0x80;
    }
    BlliLayer { protocol, more }
}

/// BLLI with any subset of layers 1–3 and SNAP.
pub fn blli(s: &mut Sampler) -> Blli {
    Blli {
        layer1: s.maybe(|s| s.byte_below(32)),
        layer2: s.maybe(layer),
        layer3: s.maybe(layer),
        snap: s.maybe(|s| [s.byte(), s.byte(), s.byte(), s.byte(), s.byte()]),
    }
}

/// Any 20 bytes as an AESA.
pub fn aesa(s: &mut Sampler) -> Aesa {
    let mut a = [0u8; 20];
    a.iter_mut().for_each(|b| *b = s.byte());
    Aesa(a)
}

/// A party number: AESA, E.164 (1–15 digits) or another plan; `screening` allows octet 5a.
pub fn party_number(s: &mut Sampler, screening: bool) -> PartyNumber {
    let number = match s.below(7) {
        0..=3 => Number::Aesa(aesa(s)),
        4 | 5 => {
            let n = 1 + s.below(15) as usize;
            Number::E164((0..n).map(|_| b'0' + s.byte_below(10)).collect())
        }
        _ => {
            let (mut ton, plan) = (s.byte_below(8), s.byte_below(16));
            if matches!((ton, plan), (0, 2) | (1, 1)) {
                ton = 2;
            }
            Number::Other {
                ton,
                plan,
                digits: s.bytes(19),
            }
        }
    };
    let scr = s.maybe(|s| {
        (
            Presentation::from_code(s.byte_below(4)),
            Screening::from_code(s.byte_below(4)),
        )
    });
    PartyNumber {
        number,
        screening: if screening { scr } else { None },
    }
}

/// A subaddress.
pub fn subaddress(s: &mut Sampler) -> Subaddress {
    Subaddress {
        kind: SubaddressType::from_code(s.byte_below(8)),
        odd: s.coin(),
        info: s.bytes(20),
    }
}

/// A connection identifier.
pub fn connection_id(s: &mut Sampler) -> ConnectionId {
    ConnectionId {
        vp_assoc: VpAssoc::from_code(s.byte_below(4)),
        pref_excl: PrefExcl::from_code(s.byte_below(8)),
        vpci: s.u16(),
        vci: s.u16(),
    }
}

/// A QoS parameter: class 0 with ITU-T coding, any classes with network-specific coding.
pub fn qos_param(s: &mut Sampler) -> QosParam {
    if s.coin() {
        return QosParam::UNSPECIFIED;
    }
    QosParam {
        coding: CodingStandard::NetworkSpecific,
        fwd: QosClass::from_code(s.byte_below(5)),
        bwd: QosClass::from_code(s.byte_below(5)),
    }
}

/// Extended QoS parameters.
pub fn ext_qos(s: &mut Sampler) -> ExtQos {
    ExtQos {
        origin: s.byte_below(2),
        fwd_cdv: s.maybe(Sampler::u24),
        bwd_cdv: s.maybe(Sampler::u24),
        fwd_cum_cdv: s.maybe(Sampler::u24),
        bwd_cum_cdv: s.maybe(Sampler::u24),
        fwd_clr: s.maybe(Sampler::byte),
        bwd_clr: s.maybe(Sampler::byte),
    }
}

/// End-to-end transit delay.
pub fn transit_delay(s: &mut Sampler) -> TransitDelay {
    TransitDelay {
        cumulative: s.maybe(Sampler::u16),
        maximum: s.maybe(Sampler::u16),
        network_generated: s.coin(),
    }
}

/// A cause: any location (Q.850's and unassigned), any value, up to 28 bytes of
/// diagnostics.
pub fn cause(s: &mut Sampler) -> Cause {
    Cause {
        location: Location::from_code(s.byte_below(16)),
        value: CauseValue::from_code(s.byte_below(128)),
        diagnostics: s.bytes(cause::MAX_DIAGNOSTICS),
    }
}

/// A call state (6 bits).
pub fn call_state(s: &mut Sampler) -> CallState {
    CallState::from_code(s.byte_below(64))
}

/// A restart indicator.
pub fn restart(s: &mut Sampler) -> RestartIndicator {
    RestartIndicator {
        class: RestartClass::from_code(s.byte_below(8)),
    }
}

/// A notification indicator.
pub fn notification(s: &mut Sampler) -> Notification {
    let mut description = s.bytes(6);
    description.push(s.byte());
    Notification { description }
}

/// Identifiers natm keeps raw (named ones it does not decode, and unassigned ones).
const RAW_IDS: [u8; 12] = [
    0x4C, 0x4D, 0x54, 0x55, 0x60, 0x78, 0x7E, 0x84, 0xE4, 0x01, 0x3F, 0xF0,
];

/// An IE natm does not decode.
pub fn raw_ie(s: &mut Sampler) -> RawIe {
    RawIe {
        id: IeId::from_code(RAW_IDS[s.below(RAW_IDS.len() as u64) as usize]),
        flags: IeFlags::from_octet(s.byte()),
        contents: s.bytes(15),
    }
}

/// A header with any message type (mostly named ones) and compatibility instruction.
pub fn header(s: &mut Sampler) -> Header {
    let msg_type = if s.below(5) == 0 {
        MsgType::from_code(s.byte())
    } else {
        MsgType::ALL[s.below(MsgType::ALL.len() as u64) as usize]
    };
    Header {
        call_ref: CallRef::new(s.next_u64() as u32 & CallRef::MAX, s.coin()),
        msg_type,
        instruction: MsgInstruction::from_octet(s.byte()),
    }
}

/// A message of any type with any subset of IEs.
pub fn message(s: &mut Sampler) -> Message {
    let h = header(s);
    message_of(s, h)
}

/// A message with `header` and any subset of IEs.
pub fn message_of(s: &mut Sampler, header: Header) -> Message {
    let n_blli = s.below(MAX_BLLI as u64 + 1) as usize;
    let n_cause = s.below(MAX_CAUSE as u64 + 1) as usize;
    let n_raw = s.below(3) as usize;
    Message {
        header,
        aal: s.maybe(aal),
        traffic: s.maybe(|s| {
            if s.coin() {
                contract_traffic(s)
            } else {
                traffic(s)
            }
        }),
        min_traffic: s.maybe(traffic),
        alt_traffic: s.maybe(traffic),
        bearer: s.maybe(bearer),
        bhli: s.maybe(bhli),
        called: s.maybe(|s| party_number(s, false)),
        called_sub: s.maybe(subaddress),
        calling: s.maybe(|s| party_number(s, true)),
        calling_sub: s.maybe(subaddress),
        repeat: s.maybe(|s| RepeatIndicator {
            indication: s.byte_below(16),
        }),
        blli: (0..n_blli).map(|_| blli(s)).collect(),
        connection_id: s.maybe(connection_id),
        qos: s.maybe(qos_param),
        ext_qos: s.maybe(ext_qos),
        transit_delay: s.maybe(transit_delay),
        sending_complete: s.coin(),
        cause: (0..n_cause).map(|_| cause(s)).collect(),
        call_state: s.maybe(call_state),
        restart: s.maybe(restart),
        notification: s.maybe(notification),
        unknown: (0..n_raw).map(|_| raw_ie(s)).collect(),
    }
}

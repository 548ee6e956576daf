//! Signalling records decoded for `natm dump`: the SSCOP PDU (Q.2110) of one AAL5 SDU on
//! the signalling VC and, inside an SD or UD (or the user-to-user field of BGN, BGAK,
//! BGREJ, END and RS, where SSCF-UNI puts none but a peer may), the Q.2931 message.
//!
//! [`Signalling`] holds both layers in a form serde writes as JSON (`natm dump --json`)
//! and whose `Display` is the text line: the codecs' own one-line forms
//! ([`natm_wire::sscop::Repr`] and [`natm_wire::q2931::Message`]), joined by `: `. A PDU or
//! message that does not decode carries the codec's typed error ([`DecodeError`]); IE
//! problems (Q.2931 §5.6) are listed with the message that parsed around them.
//!
//! Not here: reassembly across records, SSCOP connection state (each PDU is decoded on its
//! own), and point-to-multipoint IEs (kept raw by the codec, shown as `unknown`).

use core::fmt;

use natm_wire::q2931::{
    AalParams, BearerCapability, BearerClass, Cause, ConnectionId, IeProblem, Message, Number,
    ParseError, PartyNumber, RawIe, TrafficDescriptor, TrafficDirection,
};
use natm_wire::sscop::{self, Repr, Source, SscopPduError};
use serde::Serialize;

/// A signalling record decoded: SSCOP, then Q.2931 where the PDU carries a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Signalling {
    /// The SSCOP PDU; absent when the record is a bare Q.2931 message (an exported PDU for
    /// Wireshark's `q2931` dissector) or when SSCOP did not decode (see `error`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sscop: Option<SscopPdu>,
    /// The Q.2931 message carried, if any and if it parsed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub q2931: Option<Q2931>,
    /// Why a layer did not decode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<DecodeError>,
}

/// Why a signalling record did not decode, from the codecs' typed errors.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "layer", rename_all = "lowercase")]
pub enum DecodeError {
    /// The SSCOP PDU is malformed.
    Sscop {
        /// The codec's error.
        #[serde(serialize_with = "display")]
        error: SscopPduError,
    },
    /// The Q.2931 message is malformed as a whole (Q.2931 §5.6.1–5.6.3).
    Q2931 {
        /// The codec's error.
        #[serde(serialize_with = "display")]
        error: ParseError,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Sscop { error } => write!(f, "sscop: {error}"),
            DecodeError::Q2931 { error } => write!(f, "q2931: {error}"),
        }
    }
}

fn display<T: fmt::Display, S: serde::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// An SSCOP PDU's type and fields, named as in Q.2110 (absent when the type has none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SscopPdu {
    /// `BGN`, `SD`, `STAT`, ….
    #[serde(rename = "type")]
    pub pdu_type: &'static str,
    /// N(S): SD, POLL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_s: Option<u32>,
    /// N(R): STAT, USTAT.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_r: Option<u32>,
    /// N(MR): BGN, BGAK, RS, RSAK, ER, ERAK, STAT, USTAT.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_mr: Option<u32>,
    /// N(PS): POLL, STAT.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_ps: Option<u32>,
    /// N(SQ): BGN, RS, ER.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_sq: Option<u8>,
    /// The list: STAT, USTAT.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list: Option<Vec<u32>>,
    /// END's S bit: `user` or `sscop`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'static str>,
    /// Bytes of information (SD, UD, MD) or user-to-user information (BGN, BGAK, BGREJ,
    /// END, RS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub len: Option<usize>,
    /// The codec's one-line form (`SD N(S)=5 len=101`).
    pub text: String,
}

impl SscopPdu {
    /// The fields of a parsed PDU, and its payload (information or UU) if it has one.
    fn from_repr<'a>(r: &Repr<'a>) -> (SscopPdu, Option<&'a [u8]>) {
        let mut p = SscopPdu {
            pdu_type: r.pdu_type().name(),
            n_s: None,
            n_r: None,
            n_mr: None,
            n_ps: None,
            n_sq: None,
            list: None,
            source: None,
            len: None,
            text: r.to_string(),
        };
        let payload = match *r {
            Repr::Bgn { n_sq, n_mr, uu } | Repr::Rs { n_sq, n_mr, uu } => {
                (p.n_sq, p.n_mr) = (Some(n_sq), Some(n_mr));
                Some(uu)
            }
            Repr::Bgak { n_mr, uu } => {
                p.n_mr = Some(n_mr);
                Some(uu)
            }
            Repr::Bgrej { uu } => Some(uu),
            Repr::End { source, uu } => {
                p.source = Some(match source {
                    Source::User => "user",
                    Source::Sscop => "sscop",
                });
                Some(uu)
            }
            Repr::Endak => None,
            Repr::Rsak { n_mr } | Repr::Erak { n_mr } => {
                p.n_mr = Some(n_mr);
                None
            }
            Repr::Er { n_sq, n_mr } => {
                (p.n_sq, p.n_mr) = (Some(n_sq), Some(n_mr));
                None
            }
            Repr::Sd { n_s, info } => {
                p.n_s = Some(n_s);
                Some(info)
            }
            Repr::Poll { n_ps, n_s } => {
                (p.n_ps, p.n_s) = (Some(n_ps), Some(n_s));
                None
            }
            Repr::Stat {
                n_r,
                n_mr,
                n_ps,
                ref list,
            } => {
                (p.n_r, p.n_mr, p.n_ps) = (Some(n_r), Some(n_mr), Some(n_ps));
                p.list = Some(list.clone());
                None
            }
            Repr::Ustat { n_r, n_mr, list } => {
                (p.n_r, p.n_mr) = (Some(n_r), Some(n_mr));
                p.list = Some(list.to_vec());
                None
            }
            Repr::Ud { info } | Repr::Md { info } => Some(info),
        };
        p.len = payload.map(<[u8]>::len);
        (p, payload)
    }
}

/// A Q.2931 message: header fields, each IE decoded, and the IE problems (§5.6).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Q2931 {
    /// `SETUP`, `RELEASE COMPLETE`, … or `message type 0x..` for an unknown type.
    pub message_type: String,
    /// The message type code.
    pub message_type_code: u8,
    /// The call reference value (23 bits).
    pub call_ref: u32,
    /// The call reference flag: `false` from the side that allocated the call reference,
    /// `true` towards it.
    pub call_ref_flag: bool,
    /// Octet 6, the message's compatibility instruction (0x80: none).
    pub instruction: u8,
    /// Bytes of the message.
    pub len: usize,
    /// The IEs, in the codec's order (which is emission order, not necessarily the
    /// order received).
    pub ies: Vec<Ie>,
    /// IE problems: unrecognised, content error, mandatory missing, repeated.
    pub problems: Vec<String>,
    /// The codec's one-line form.
    pub text: String,
}

impl Q2931 {
    /// Decode a message: `Err` only for the errors Q.2931 ignores whole messages for.
    pub fn parse(bytes: &[u8]) -> Result<Q2931, ParseError> {
        let parsed = Message::parse(bytes)?;
        let m = &parsed.message;
        let mut text = m.to_string();
        for p in &parsed.problems {
            text.push_str(&format!(" problem=[{p}]"));
        }
        Ok(Q2931 {
            message_type: m.header.msg_type.to_string(),
            message_type_code: m.header.msg_type.code(),
            call_ref: m.header.call_ref.value,
            call_ref_flag: m.header.call_ref.flag,
            instruction: m.header.instruction.to_octet(),
            len: bytes.len(),
            ies: ies(m),
            problems: parsed.problems.iter().map(IeProblem::to_string).collect(),
            text,
        })
    }
}

/// One IE: its identifier, the codec's text, and its fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Ie {
    /// The identifier.
    pub id: u8,
    /// The codec's form of the contents.
    pub text: String,
    /// The fields, tagged with the IE's name.
    #[serde(flatten)]
    pub fields: IeFields,
}

/// The fields of one IE, tagged `"ie": name` in JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "ie", rename_all = "snake_case")]
#[allow(missing_docs)] // Each field is named as in the codec's type, which documents it.
pub enum IeFields {
    /// AAL parameters (0x58).
    Aal {
        aal_type: u8,
        fwd_max_sdu: Option<u16>,
        bwd_max_sdu: Option<u16>,
        mode: Option<u8>,
        sscs_type: Option<u8>,
    },
    /// ATM traffic descriptor (0x59); cell rates in cells/s, burst sizes in cells.
    TrafficDescriptor(Traffic),
    /// Minimum acceptable traffic descriptor (0x81).
    MinTrafficDescriptor(Traffic),
    /// Alternative traffic descriptor (0x82).
    AltTrafficDescriptor(Traffic),
    /// Broadband bearer capability (0x5E).
    BearerCapability {
        /// `BCOB-A`, `BCOB-C`, `BCOB-X`, `BCOB-VP`, or `class-0x..`.
        bearer_class: String,
        bearer_class_code: u8,
        atc: Option<u8>,
        clipping: bool,
        user_plane: u8,
    },
    /// BHLI (0x5D).
    Bhli { kind: u8, info: String },
    /// Called party number (0x70).
    CalledNumber(PartyFields),
    /// Called party subaddress (0x71).
    CalledSubaddress { kind: u8, odd: bool, info: String },
    /// Calling party number (0x6C).
    CallingNumber(PartyFields),
    /// Calling party subaddress (0x6D).
    CallingSubaddress { kind: u8, odd: bool, info: String },
    /// Broadband repeat indicator (0x63).
    RepeatIndicator { indication: u8 },
    /// BLLI (0x5F).
    Blli {
        layer1: Option<u8>,
        layer2: Option<u8>,
        layer3: Option<u8>,
    },
    /// Connection identifier (0x5A).
    ConnectionId {
        vpci: u16,
        vci: u16,
        vp_assoc: u8,
        pref_excl: u8,
    },
    /// QoS parameter (0x5C).
    QosParam {
        coding: u8,
        fwd_class: u8,
        bwd_class: u8,
    },
    /// Extended QoS parameters (0xEC).
    ExtQos {
        origin: u8,
        fwd_cdv: Option<u32>,
        bwd_cdv: Option<u32>,
        fwd_cum_cdv: Option<u32>,
        bwd_cum_cdv: Option<u32>,
        fwd_clr: Option<u8>,
        bwd_clr: Option<u8>,
    },
    /// End-to-end transit delay (0x42), milliseconds.
    TransitDelay {
        cumulative: Option<u16>,
        maximum: Option<u16>,
        network_generated: bool,
    },
    /// Broadband sending complete (0x62).
    SendingComplete {},
    /// Cause (0x08).
    Cause {
        location: u8,
        /// Q.850's abbreviation (`U`, `LN`, …; `?` for an unknown code).
        location_name: &'static str,
        value: u8,
        /// The cause's name, `null` for a value without one.
        name: Option<&'static str>,
        /// Diagnostics, hex.
        diagnostics: String,
    },
    /// Call state (0x14).
    CallState { value: u8 },
    /// Restart indicator (0x79).
    RestartIndicator { class: u8 },
    /// Notification indicator (0x27).
    Notification { description: String },
    /// An IE the codec does not decode.
    Unknown { flags: u8, contents: String },
}

/// A traffic descriptor's subfields, as in Q.2931 §4.5.6.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Traffic {
    /// Forward direction.
    pub fwd: Rates,
    /// Backward direction.
    pub bwd: Rates,
    /// The best-effort indicator (UBR).
    pub best_effort: bool,
    /// The traffic-management options octet (tagging, frame discard), if present.
    pub options: Option<u8>,
    /// Forward tagging requested.
    pub fwd_tagging: bool,
    /// Backward tagging requested.
    pub bwd_tagging: bool,
}

/// One direction's cell rates (cells/s) and burst sizes (cells).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[allow(missing_docs)] // Named as natm_wire::q2931::TrafficDirection's fields.
pub struct Rates {
    pub pcr0: Option<u32>,
    pub pcr01: Option<u32>,
    pub scr0: Option<u32>,
    pub scr01: Option<u32>,
    pub mbs0: Option<u32>,
    pub mbs01: Option<u32>,
    pub abr_mcr: Option<u32>,
}

/// A called or calling party number.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PartyFields {
    /// The number: an AESA in `atm2text` form, `+digits` for E.164, else
    /// `tonN/planN:hex`.
    pub number: String,
    /// Type of number (3 bits).
    pub type_of_number: u8,
    /// Numbering plan (4 bits).
    pub plan: u8,
    /// Presentation indicator (calling party octet 5a).
    pub presentation: Option<u8>,
    /// Screening indicator (calling party octet 5a).
    pub screening: Option<u8>,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn traffic(t: &TrafficDescriptor) -> Traffic {
    let rates = |d: &TrafficDirection| Rates {
        pcr0: d.pcr0,
        pcr01: d.pcr01,
        scr0: d.scr0,
        scr01: d.scr01,
        mbs0: d.mbs0,
        mbs01: d.mbs01,
        abr_mcr: d.abr_mcr,
    };
    Traffic {
        fwd: rates(&t.fwd),
        bwd: rates(&t.bwd),
        best_effort: t.best_effort,
        options: t.options.map(|o| o.0),
        fwd_tagging: t.options.is_some_and(|o| o.fwd_tagging()),
        bwd_tagging: t.options.is_some_and(|o| o.bwd_tagging()),
    }
}

fn party(p: &PartyNumber) -> PartyFields {
    // Q.2931 §4.5.11: type of number 0 / plan 2 for an AESA, 1 / 1 for native E.164.
    let (type_of_number, plan) = match &p.number {
        Number::Aesa(_) => (0, 2),
        Number::E164(_) => (1, 1),
        Number::Other { ton, plan, .. } => (*ton & 7, *plan & 0x0F),
    };
    PartyFields {
        number: p.number.to_string(),
        type_of_number,
        plan,
        presentation: p.screening.map(|(pr, _)| pr.code()),
        screening: p.screening.map(|(_, s)| s.code()),
    }
}

fn bearer_class(b: &BearerCapability) -> String {
    match b.class {
        BearerClass::A => "BCOB-A".into(),
        BearerClass::C => "BCOB-C".into(),
        BearerClass::X => "BCOB-X".into(),
        BearerClass::Vp => "BCOB-VP".into(),
        BearerClass::Unknown(v) => format!("class-0x{v:02x}"),
    }
}

fn aal(a: &AalParams) -> IeFields {
    match a {
        AalParams::Aal5 {
            fwd_max_sdu,
            bwd_max_sdu,
            mode,
            sscs,
        } => IeFields::Aal {
            aal_type: a.aal_type().code(),
            fwd_max_sdu: *fwd_max_sdu,
            bwd_max_sdu: *bwd_max_sdu,
            mode: *mode,
            sscs_type: sscs.map(|s| s.code()),
        },
        AalParams::Other { aal_type, .. } => IeFields::Aal {
            aal_type: aal_type.code(),
            fwd_max_sdu: None,
            bwd_max_sdu: None,
            mode: None,
            sscs_type: None,
        },
    }
}

fn cause(c: &Cause) -> IeFields {
    IeFields::Cause {
        location: c.location.code(),
        location_name: c.location.abbrev(),
        value: c.value.code(),
        name: c.value.name(),
        diagnostics: hex(&c.diagnostics),
    }
}

fn conn(c: &ConnectionId) -> IeFields {
    IeFields::ConnectionId {
        vpci: c.vpci,
        vci: c.vci,
        vp_assoc: c.vp_assoc.code(),
        pref_excl: c.pref_excl.code(),
    }
}

fn unknown(r: &RawIe) -> IeFields {
    IeFields::Unknown {
        flags: r.flags.to_octet(),
        contents: hex(&r.contents),
    }
}

/// Every IE of a message, in the codec's order.
fn ies(m: &Message) -> Vec<Ie> {
    use natm_wire::q2931::IeId;
    let mut out = Vec::new();
    let mut push = |id: IeId, text: String, fields: IeFields| {
        out.push(Ie {
            id: id.code(),
            text,
            fields,
        });
    };
    if let Some(v) = &m.aal {
        push(IeId::AalParams, v.to_string(), aal(v));
    }
    if let Some(v) = &m.traffic {
        let f = IeFields::TrafficDescriptor(traffic(v));
        push(IeId::TrafficDescriptor, v.to_string(), f);
    }
    if let Some(v) = &m.min_traffic {
        let f = IeFields::MinTrafficDescriptor(traffic(v));
        push(IeId::MinTraffic, v.to_string(), f);
    }
    if let Some(v) = &m.alt_traffic {
        let f = IeFields::AltTrafficDescriptor(traffic(v));
        push(IeId::AltTraffic, v.to_string(), f);
    }
    if let Some(v) = &m.bearer {
        let f = IeFields::BearerCapability {
            bearer_class: bearer_class(v),
            bearer_class_code: v.class.code(),
            atc: v.atc.map(|a| a.code()),
            clipping: v.clipping,
            user_plane: v.user_plane.code(),
        };
        push(IeId::BearerCapability, v.to_string(), f);
    }
    if let Some(v) = &m.bhli {
        let f = IeFields::Bhli {
            kind: v.kind.code(),
            info: hex(&v.info),
        };
        push(IeId::Bhli, v.to_string(), f);
    }
    if let Some(v) = &m.called {
        push(
            IeId::CalledNumber,
            v.to_string(),
            IeFields::CalledNumber(party(v)),
        );
    }
    if let Some(v) = &m.called_sub {
        let f = IeFields::CalledSubaddress {
            kind: v.kind.code(),
            odd: v.odd,
            info: hex(&v.info),
        };
        push(IeId::CalledSubaddress, v.to_string(), f);
    }
    if let Some(v) = &m.calling {
        push(
            IeId::CallingNumber,
            v.to_string(),
            IeFields::CallingNumber(party(v)),
        );
    }
    if let Some(v) = &m.calling_sub {
        let f = IeFields::CallingSubaddress {
            kind: v.kind.code(),
            odd: v.odd,
            info: hex(&v.info),
        };
        push(IeId::CallingSubaddress, v.to_string(), f);
    }
    if let Some(v) = &m.repeat {
        let f = IeFields::RepeatIndicator {
            indication: v.indication,
        };
        push(IeId::RepeatIndicator, v.indication.to_string(), f);
    }
    for v in &m.blli {
        let f = IeFields::Blli {
            layer1: v.layer1,
            layer2: v.layer2.as_ref().map(|l| l.protocol),
            layer3: v.layer3.as_ref().map(|l| l.protocol),
        };
        push(IeId::Blli, v.to_string(), f);
    }
    if let Some(v) = &m.connection_id {
        push(IeId::ConnectionId, v.to_string(), conn(v));
    }
    if let Some(v) = &m.qos {
        let f = IeFields::QosParam {
            coding: v.coding.code(),
            fwd_class: v.fwd.code(),
            bwd_class: v.bwd.code(),
        };
        push(IeId::QosParam, v.to_string(), f);
    }
    if let Some(v) = &m.ext_qos {
        let f = IeFields::ExtQos {
            origin: v.origin,
            fwd_cdv: v.fwd_cdv,
            bwd_cdv: v.bwd_cdv,
            fwd_cum_cdv: v.fwd_cum_cdv,
            bwd_cum_cdv: v.bwd_cum_cdv,
            fwd_clr: v.fwd_clr,
            bwd_clr: v.bwd_clr,
        };
        push(IeId::ExtQos, v.to_string(), f);
    }
    if let Some(v) = &m.transit_delay {
        let f = IeFields::TransitDelay {
            cumulative: v.cumulative,
            maximum: v.maximum,
            network_generated: v.network_generated,
        };
        push(IeId::TransitDelay, v.to_string(), f);
    }
    if m.sending_complete {
        push(
            IeId::SendingComplete,
            "sending complete".into(),
            IeFields::SendingComplete {},
        );
    }
    for v in &m.cause {
        push(IeId::Cause, v.to_string(), cause(v));
    }
    if let Some(v) = &m.call_state {
        let f = IeFields::CallState { value: v.code() };
        push(IeId::CallState, v.to_string(), f);
    }
    if let Some(v) = &m.restart {
        let f = IeFields::RestartIndicator {
            class: v.class.code(),
        };
        push(IeId::RestartIndicator, v.to_string(), f);
    }
    if let Some(v) = &m.notification {
        let f = IeFields::Notification {
            description: hex(&v.description),
        };
        push(IeId::Notification, v.to_string(), f);
    }
    for v in &m.unknown {
        push(v.id, v.to_string(), unknown(v));
    }
    out
}

impl Signalling {
    /// Decode one SSCOP PDU (an AAL5 SDU of the signalling VC) and the Q.2931 message its
    /// payload carries: the information of SD and UD, and a non-empty user-to-user field
    /// of BGN, BGAK, BGREJ, END or RS. MD carries layer management data, not Q.2931.
    /// Never panics.
    pub fn from_sscop(pdu: &[u8]) -> Signalling {
        let repr = match Repr::parse(pdu) {
            Ok(r) => r,
            Err(error) => {
                return Signalling {
                    sscop: None,
                    q2931: None,
                    error: Some(DecodeError::Sscop { error }),
                };
            }
        };
        let (sscop, payload) = SscopPdu::from_repr(&repr);
        let carries = match repr.pdu_type() {
            sscop::PduType::Sd | sscop::PduType::Ud => true,
            sscop::PduType::Md => false,
            _ => payload.is_some_and(|p| !p.is_empty()),
        };
        let mut s = match payload.filter(|_| carries) {
            Some(msg) => Signalling::from_q2931(msg),
            None => Signalling {
                sscop: None,
                q2931: None,
                error: None,
            },
        };
        s.sscop = Some(sscop);
        s
    }

    /// Decode a bare Q.2931 message. Never panics.
    pub fn from_q2931(msg: &[u8]) -> Signalling {
        let (q2931, error) = match Q2931::parse(msg) {
            Ok(m) => (Some(m), None),
            Err(error) => (None, Some(DecodeError::Q2931 { error })),
        };
        Signalling {
            sscop: None,
            q2931,
            error,
        }
    }
}

impl fmt::Display for Signalling {
    /// `SD N(S)=0 len=101: SETUP cr=1 flag=0 aal=[…] …`, or the error.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        if let Some(s) = &self.sscop {
            f.write_str(&s.text)?;
            sep = ": ";
        }
        if let Some(q) = &self.q2931 {
            write!(f, "{sep}{}", q.text)?;
            sep = ": ";
        }
        if let Some(e) = &self.error {
            write!(f, "{sep}error: {e}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Record, RecordKind};
    use crate::sunatm::{Direction, SunAtmType};
    use crate::{LinkType, Reader, Writer, exported_pdu, summarize};
    use natm_core::{Instant, VcId};
    use natm_wire::aal5;
    use proptest::prelude::*;

    /// atm-facts.md §5.5: the minimal SETUP Wireshark decodes IE by IE (101 bytes).
    pub(crate) const SETUP: [u8; 101] = [
        0x09, 0x03, 0x00, 0x00, 0x01, 0x05, 0x80, 0x00, 0x5c, // header
        0x58, 0x80, 0x00, 0x07, 0x05, 0x8c, 0x23, 0xe4, 0x81, 0x23, 0xe4, // AAL5
        0x59, 0x80, 0x00, 0x09, 0x84, 0x05, 0x63, 0xb7, 0x85, 0x05, 0x63, 0xb7, 0xbe, // td
        0x5e, 0x80, 0x00, 0x03, 0x10, 0x80, 0x80, // bearer
        0x70, 0x80, 0x00, 0x15, 0x82, 0x47, 0x00, 0x05, 0x80, 0xff, 0xe1, 0x00, 0x00, 0x00, 0xf2,
        0x1a, 0x3d, 0x5c, 0x00, 0x20, 0x48, 0x1a, 0x3d, 0x5c, 0x00, // called
        0x6c, 0x80, 0x00, 0x15, 0x82, 0x47, 0x00, 0x05, 0x80, 0xff, 0xe1, 0x00, 0x00, 0x00, 0xf2,
        0x1a, 0x3d, 0x5c, 0x00, 0x20, 0x48, 0x1b, 0x00, 0x01, 0x00, // calling
        0x5f, 0x80, 0x00, 0x01, 0xcc, // BLLI
        0x5c, 0x80, 0x00, 0x02, 0x00, 0x00, // QoS
    ];

    /// atm-facts.md §6: the SETUP in an SD with N(S) 0: 3 pad bytes and `c8 00 00 00`.
    pub(crate) fn sd_setup() -> Vec<u8> {
        let mut sd = SETUP.to_vec();
        sd.extend_from_slice(&[0, 0, 0, 0xc8, 0, 0, 0]);
        sd
    }

    fn t() -> Instant {
        Instant::from_nanos(1_000_000_000_000)
    }

    fn sig() -> VcId {
        VcId::uni(0, 5).unwrap()
    }

    const SETUP_TEXT: &str = "SD N(S)=0 len=101: SETUP cr=1 flag=0 \
        aal=[aal5 fwd_sdu=9188 bwd_sdu=9188] td=[fwd pcr01=353207 bwd pcr01=353207 best-effort] \
        bbc=[BCOB-X atc=NoIndication p2p] called=47.0005.80FFE1000000F21A3D5C.0020481A3D5C.00 \
        calling=47.0005.80FFE1000000F21A3D5C.0020481B0001.00 blli=[l2=0x0c(llc)] qos=[class 0/0]";

    #[test]
    fn setup_in_sunatm() {
        let record = Record {
            time: t(),
            kind: RecordKind::SunAtm {
                vc: sig(),
                kind: SunAtmType::Qsaal,
                direction: Direction::DteToDce,
                sdu: sd_setup(),
            },
        };
        let s = summarize(&record);
        assert_eq!(
            s.to_string(),
            format!(
                "1000.000000000 0.5 sunatm len=108 sscop signalling {SETUP_TEXT} (sunatm qsaal dte->dce)"
            )
        );
        let j = serde_json::to_value(&s).unwrap();
        let sig = &j["signalling"];
        assert_eq!(sig["sscop"]["type"], "SD");
        assert_eq!(sig["sscop"]["n_s"], 0);
        assert_eq!(sig["sscop"]["len"], 101);
        let q = &sig["q2931"];
        assert_eq!(q["message_type"], "SETUP");
        assert_eq!(q["message_type_code"], 5);
        assert_eq!(
            (&q["call_ref"], &q["call_ref_flag"]),
            (&1.into(), &false.into())
        );
        assert_eq!(q["problems"], serde_json::json!([]));
        let ies = q["ies"].as_array().unwrap();
        let names: Vec<_> = ies.iter().map(|i| i["ie"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "aal",
                "traffic_descriptor",
                "bearer_capability",
                "called_number",
                "calling_number",
                "blli",
                "qos_param"
            ]
        );
        assert_eq!(ies[0]["id"], 0x58);
        assert_eq!(ies[0]["aal_type"], 5);
        assert_eq!(ies[0]["fwd_max_sdu"], 9188);
        assert_eq!(ies[1]["fwd"]["pcr01"], 353_207);
        assert_eq!(ies[1]["bwd"]["pcr01"], 353_207);
        assert_eq!(ies[1]["best_effort"], true);
        assert_eq!(ies[2]["bearer_class"], "BCOB-X");
        assert_eq!(
            ies[3]["number"],
            "47.0005.80FFE1000000F21A3D5C.0020481A3D5C.00"
        );
        assert_eq!(
            (&ies[3]["type_of_number"], &ies[3]["plan"]),
            (&0.into(), &2.into())
        );
        assert_eq!(ies[5]["layer2"], 0x0c);
        assert_eq!(
            (&ies[6]["fwd_class"], &ies[6]["coding"]),
            (&0.into(), &0.into())
        );
    }

    #[test]
    fn setup_in_erf_aal5() {
        // atm-facts.md §6: the 108-byte SD in three cells, trailer 00 00 00 6c 87 52 1b 8b.
        let mut pdu = Vec::new();
        aal5::encode_pdu(&sd_setup(), 0, 0, &mut pdu).unwrap();
        assert_eq!(pdu.len(), 144);
        assert_eq!(pdu[136..], [0x00, 0x00, 0x00, 0x6c, 0x87, 0x52, 0x1b, 0x8b]);
        let record = Record {
            time: t(),
            kind: RecordKind::Aal5Pdu { vc: sig(), pdu },
        };
        // Through a file and back, as `natm dump` reads it.
        let mut w = Writer::new(Vec::new(), LinkType::Erf).unwrap();
        w.write(&record).unwrap();
        let file = w.into_inner().unwrap();
        let back = Reader::new(&file[..]).unwrap().next().unwrap().unwrap();
        let s = summarize(&back);
        assert_eq!(
            s.to_string(),
            format!(
                "1000.000000000 0.5 aal5 len=144 aal5=ok sdu=108 cells=3 sscop signalling {SETUP_TEXT}"
            )
        );
        // A CRC error: no decoding of a PDU a receiver would drop.
        let RecordKind::Aal5Pdu { mut pdu, vc } = record.kind else {
            unreachable!()
        };
        pdu[10] ^= 0x40;
        let s = summarize(&Record {
            time: t(),
            kind: RecordKind::Aal5Pdu { vc, pdu },
        });
        assert!(matches!(
            s.aal5,
            Some(crate::summary::Aal5Check::Crc { .. })
        ));
        assert_eq!(s.signalling, None);
    }

    #[test]
    fn sscop_pdus_and_errors() {
        let line = |b: &[u8]| Signalling::from_sscop(b).to_string();
        // atm-facts.md §6 vectors.
        assert_eq!(
            line(&[0, 0, 0, 1, 0x01, 0, 0, 0x80]),
            "BGN N(SQ)=1 N(MR)=128 uu=0"
        );
        assert_eq!(line(&[0, 0, 0, 0, 0x13, 0, 0, 0]), "END S=1 uu=0");
        let stat = [
            0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0x80, 0x0b, 0, 0, 3,
        ];
        let s = Signalling::from_sscop(&stat);
        assert_eq!(s.to_string(), "STAT N(R)=3 N(MR)=128 N(PS)=1 list=[3,4]");
        let j = serde_json::to_value(&s).unwrap();
        assert_eq!(
            j,
            serde_json::json!({"sscop": {"type": "STAT", "n_r": 3, "n_mr": 128, "n_ps": 1,
                "list": [3, 4], "text": "STAT N(R)=3 N(MR)=128 N(PS)=1 list=[3,4]"}})
        );
        // UD "abcde" is SSCOP-valid but not Q.2931: the message's typed error.
        let ud = [0x61, 0x62, 0x63, 0x64, 0x65, 0, 0, 0, 0xcd, 0, 0, 0];
        let s = Signalling::from_sscop(&ud);
        assert_eq!(
            s.to_string(),
            "UD len=5: error: q2931: protocol discriminator 0x61, not Q.2931's 0x09"
        );
        let j = serde_json::to_value(&s).unwrap();
        assert_eq!(j["error"]["layer"], "q2931");
        // Not SSCOP at all.
        let s = Signalling::from_sscop(&[1, 2, 3]);
        assert_eq!(s.sscop, None);
        assert_eq!(
            s.to_string(),
            "error: sscop: SSCOP PDU of 3 bytes is not a multiple of 4"
        );
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            serde_json::json!({"error": {"layer": "sscop",
                "error": "SSCOP PDU of 3 bytes is not a multiple of 4"}})
        );
    }

    #[test]
    fn release_cause_and_connection_id() {
        // atm-facts.md §5.5: RELEASE COMPLETE cause 47 at LN; CALL PROCEEDING VPCI 0 VCI 32.
        let rc = [
            0x09, 0x03, 0x80, 0x00, 0x01, 0x5a, 0x80, 0x00, 0x06, 0x08, 0x80, 0x00, 0x02, 0x82,
            0xaf,
        ];
        let s = Signalling::from_q2931(&rc);
        assert_eq!(
            s.to_string(),
            "RELEASE COMPLETE cr=1 flag=1 cause=[47 (resource unavailable, unspecified) at LN]"
        );
        let j = serde_json::to_value(&s).unwrap();
        let c = &j["q2931"]["ies"][0];
        assert_eq!(c["ie"], "cause");
        assert_eq!((&c["value"], &c["location"]), (&47.into(), &2.into()));
        assert_eq!(c["location_name"], "LN");
        assert_eq!(c["name"], "resource unavailable, unspecified");
        let cp = [
            0x09, 0x03, 0x80, 0x00, 0x01, 0x02, 0x80, 0x00, 0x09, 0x5a, 0x80, 0x00, 0x05, 0x88,
            0x00, 0x00, 0x00, 0x20,
        ];
        let j = serde_json::to_value(Signalling::from_q2931(&cp)).unwrap();
        let c = &j["q2931"]["ies"][0];
        assert_eq!(c["ie"], "connection_id");
        assert_eq!((&c["vpci"], &c["vci"]), (&0.into(), &32.into()));
        // An IE problem is listed, and the rest of the message still shown.
        let mut bad = cp.to_vec();
        bad[13] = 0x08; // extension bit of octet 5 clear
        let s = Signalling::from_q2931(&bad);
        assert_eq!(s.q2931.as_ref().unwrap().problems.len(), 1);
        assert!(
            s.to_string()
                .starts_with("CALL PROCEEDING cr=1 flag=1 problem=["),
            "{s}"
        );
    }

    #[test]
    fn exported_pdus() {
        for (name, data, text) in [
            ("sscop", sd_setup(), SETUP_TEXT.to_string()),
            (
                "q2931",
                SETUP.to_vec(),
                SETUP_TEXT["SD N(S)=0 len=101: ".len()..].to_string(),
            ),
        ] {
            let mut bytes = Vec::new();
            exported_pdu::encode(name, &data, &mut bytes);
            let s = summarize(&Record {
                time: t(),
                kind: RecordKind::Other {
                    linktype: LinkType::ExportedPdu,
                    bytes,
                },
            });
            assert_eq!(s.decoded.as_deref(), Some(name));
            assert_eq!(s.signalling.unwrap().to_string(), text);
        }
    }

    /// IEs in an emitted message.
    fn ie_count(msg: &[u8]) -> usize {
        let (mut at, mut n) = (natm_wire::q2931::HEADER_LEN, 0);
        while at + 4 <= msg.len() {
            at += 4 + usize::from(u16::from_be_bytes([msg[at + 2], msg[at + 3]]));
            n += 1;
        }
        n
    }

    /// Whatever the codec emits, natm dump decodes: the SD, then the same message with
    /// every IE shown (raw ones as `unknown`) and the codec's own problems only.
    #[test]
    fn every_message_the_codec_samples() {
        use natm_wire::q2931::sample::{Sampler, message};
        for seed in 0..2000u64 {
            let m = message(&mut Sampler::new(seed));
            let bytes = m.to_vec();
            let n_s = (seed * 7919) as u32 & 0xFF_FFFF;
            let sd = Repr::Sd { n_s, info: &bytes }.to_vec().unwrap();
            let s = Signalling::from_sscop(&sd);
            assert_eq!(s.error, None, "seed {seed}: {m}");
            assert_eq!(s.sscop.as_ref().unwrap().n_s, Some(n_s));
            let q = s.q2931.as_ref().unwrap();
            let parsed = Message::parse(&bytes).unwrap();
            assert_eq!(q.message_type_code, m.header.msg_type.code());
            assert_eq!(
                (q.call_ref, q.call_ref_flag),
                (m.header.call_ref.value, m.header.call_ref.flag)
            );
            assert_eq!(q.problems.len(), parsed.problems.len(), "seed {seed}");
            assert_eq!(q.ies.len(), ie_count(&bytes), "seed {seed}: {m}");
            assert_eq!(q.text.split(" problem=[").next(), Some(&*m.to_string()));
            serde_json::to_string(&s).unwrap();
        }
    }

    proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), q in any::<bool>()) {
            let s = if q { Signalling::from_q2931(&bytes) } else { Signalling::from_sscop(&bytes) };
            let _ = s.to_string();
            serde_json::to_string(&s).unwrap();
        }

        #[test]
        fn corrupted_setup_never_panics(at in 0usize..108, xor in 1u8..=255) {
            let mut sd = sd_setup();
            sd[at] ^= xor;
            let s = Signalling::from_sscop(&sd);
            let _ = s.to_string();
            serde_json::to_string(&s).unwrap();
        }
    }
}

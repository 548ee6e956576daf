//! natm's [`Qos`] ⇄ the signalling IEs that carry it: AAL parameters, ATM traffic
//! descriptor (and UNI 4.0's alternative and minimum acceptable descriptors), broadband
//! bearer capability, QoS parameter and extended QoS parameters.
//!
//! It lives here, beside the IEs, because it is a pure function of their values and of
//! natm-core's `Qos` (which natm-wire already depends on); call control, `natm dump` and
//! the switch's admission all need it, and none of them should own it.
//!
//! # The mapping
//!
//! The IEs describe the call as the **calling** party sees it: *forward* is the calling
//! party's transmit direction. [`QosIes::from_qos`] takes the caller's `Qos` (forward =
//! `tx`); the called party turns what [`QosIes::to_qos`] gives back around with
//! [`swap_directions`].
//!
//! | `Qos` (per direction) | IE and subfield (forward / backward) |
//! |---|---|
//! | class `ubr` | bearer BCOB-X, octet 5a 0x00 ("no indication", UNI 3.1's UBR), traffic descriptor best effort (0xBE) |
//! | class `cbr` | bearer BCOB-X, ATC 0x05 (CBR) |
//! | class `vbr` | bearer BCOB-X, ATC 0x0A (nrt-VBR) |
//! | class `abr` | bearer BCOB-X, ATC 0x0C (ABR) |
//! | class `none` in one direction | traffic descriptor PCR(CLP=0+1) = 0 in that direction, nothing else |
//! | `max_pcr` | traffic descriptor PCR(CLP=0+1) (0x84 / 0x85): the contract's peak |
//! | `pcr` | alternative ATM traffic descriptor (0x82) PCR(CLP=0+1) |
//! | `min_pcr` | minimum acceptable ATM traffic descriptor (0x81) PCR(CLP=0+1) |
//! | `scr`, `mbs` | traffic descriptor SCR(CLP=0+1) (0x90 / 0x91), MBS(CLP=0+1) (0xB0 / 0xB1) |
//! | `cdvt` | extended QoS parameters (0xEC), acceptable peak-to-peak CDV (0x94 / 0x95), µs |
//! | `max_sdu` | AAL5 forward / backward maximum CPCS-SDU size (0x8C / 0x81) |
//! | `aal5` / `aal0` / no AAL | AAL parameters type 5 / type 0 / no AAL parameters IE |
//! | (always) | QoS parameter class 0/0, ITU-T coding |
//!
//! A field that is 0 ("not given", as in libatm) is left out; an IE left with nothing to
//! say is left out. `max_pcr` is UNI's peak cell rate (the most the VC may send); natm's
//! `pcr` ("the rate wanted") and `min_pcr` ("the least acceptable") become UNI 4.0's
//! traffic-negotiation descriptors. A peer that knows only UNI 3.1 sees the peak, the
//! class, the SCR/MBS and the SDU sizes; call control that talks to one should put the
//! rate in `max_pcr` (natm's admission reads `pcr`, else `max_pcr`).
//!
//! Both directions are lossless: for every `q` with `q.validate()` passing and
//! `QosIes::from_qos(&q)` succeeding, `from_qos(&q)?.to_qos()? == q`; and the IEs
//! `from_qos` makes come back the same from `from_qos(&to_qos()?)` (the proptests below).
//!
//! # What signalling cannot carry ([`QosMapError`])
//!
//! `max` for a rate (resolve it against the line rate first: [`resolve_max`]); rates,
//! bursts and CDVT above 2²⁴−1 (the IE fields are 24 bits); SDU sizes above 65535;
//! `max_sdu` without AAL5. Values [`Qos::validate`] rejects are rejected too.
//!
//! IEs from elsewhere that use fields outside the table (PCR/SCR/MBS for CLP=0, ABR MCR,
//! tagging and frame-discard options, QoS classes 1–4, other AAL types) are read as far as
//! `Qos` can say them: CLP=0 SCR/MBS stand in for CLP=0+1 ones when those are absent, the
//! rest is ignored; a lone PCR(CLP=0+1) = 0 is a `none` direction, as for natm's own.
//! [`QosIeError`] says why IEs give no `Qos` at all.

use core::fmt;

use natm_core::qos::{Aal, Pcr, Qos, QosValueError, TrafficClass, TrafficParams};

use super::Message;
use super::ie::{
    AalParams, AalType, Atc, BearerCapability, BearerClass, ExtQos, QosParam, TrafficDescriptor,
    TrafficDirection, UserPlane,
};

/// The largest cell rate, burst size or CDV an IE field holds.
pub const MAX_FIELD: u32 = 0xFF_FFFF;

/// Why a [`Qos`] cannot be signalled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QosMapError {
    /// [`Qos::validate`] rejects it.
    Invalid(QosValueError),
    /// A rate is `max`: signalling carries cells per second ([`resolve_max`]).
    MaxRate {
        /// The field's name.
        field: &'static str,
    },
    /// A value above 2²⁴−1 ([`MAX_FIELD`]).
    OutOfRange {
        /// The field's name.
        field: &'static str,
        /// Its value.
        value: u32,
    },
    /// `max_sdu` above 65535.
    SduTooLarge {
        /// Its value.
        value: u32,
    },
    /// `max_sdu` is set but the AAL is not AAL5 (only AAL5 has an SDU size subfield).
    SduWithoutAal5,
    /// The field needs a UNI 4.0 IE (`pcr`, `min_pcr`, `cdvt`) and the peer speaks UNI 3.1.
    NeedsUni40 {
        /// The field's name.
        field: &'static str,
    },
}

impl fmt::Display for QosMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QosMapError::Invalid(e) => write!(f, "invalid QoS: {e}"),
            QosMapError::MaxRate { field } => write!(
                f,
                "{field}=max cannot be signalled: resolve it against the line rate first"
            ),
            QosMapError::OutOfRange { field, value } => write!(
                f,
                "{field}={value} does not fit the 24-bit signalling field (at most {MAX_FIELD})"
            ),
            QosMapError::SduTooLarge { value } => {
                write!(f, "max_sdu={value} does not fit AAL5's 16-bit SDU size")
            }
            QosMapError::SduWithoutAal5 => f.write_str("max_sdu can only be signalled with aal5"),
            QosMapError::NeedsUni40 { field } => {
                write!(
                    f,
                    "{field} needs UNI 4.0 signalling (the peer speaks UNI 3.1)"
                )
            }
        }
    }
}

impl core::error::Error for QosMapError {}

/// Why IEs give no [`Qos`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QosIeError {
    /// The message has no ATM traffic descriptor.
    NoTrafficDescriptor,
    /// The message has no broadband bearer capability.
    NoBearerCapability,
    /// The bearer capability and traffic descriptor name no class natm knows.
    UnknownClass {
        /// The bearer class.
        class: BearerClass,
        /// Octet 5a.
        atc: Option<Atc>,
    },
    /// Point-to-multipoint: natm's VCs are point-to-point.
    PointToMultipoint,
    /// An AAL natm does not have (AAL1, AAL2, AAL3/4, user-defined).
    UnsupportedAal(AalType),
    /// Both directions without traffic but with different parameters: a `Qos` the text
    /// form cannot express ([`Qos::validate`]).
    Inexpressible,
}

impl fmt::Display for QosIeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QosIeError::NoTrafficDescriptor => f.write_str("no ATM traffic descriptor"),
            QosIeError::NoBearerCapability => f.write_str("no broadband bearer capability"),
            QosIeError::UnknownClass { class, atc } => {
                write!(
                    f,
                    "no traffic class for bearer class 0x{:02x}",
                    class.code()
                )?;
                if let Some(a) = atc {
                    write!(f, " with octet 5a 0x{:02x}", a.code())?;
                }
                Ok(())
            }
            QosIeError::PointToMultipoint => f.write_str("point-to-multipoint bearer"),
            QosIeError::UnsupportedAal(t) => write!(f, "AAL type 0x{:02x} not supported", t.code()),
            QosIeError::Inexpressible => {
                f.write_str("both directions without traffic, with different parameters")
            }
        }
    }
}

impl core::error::Error for QosIeError {}

/// The UNI version of the peer, for [`QosIes::from_qos_for`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UniVersion {
    /// UNI 3.1: no alternative or minimum traffic descriptor, no extended QoS.
    Uni31,
    /// UNI 4.0.
    Uni40,
}

/// The IEs that carry a [`Qos`], as the calling party sends them in SETUP.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct QosIes {
    /// AAL parameters.
    pub aal: Option<AalParams>,
    /// ATM traffic descriptor.
    pub traffic: TrafficDescriptor,
    /// Alternative ATM traffic descriptor (UNI 4.0).
    pub alt_traffic: Option<TrafficDescriptor>,
    /// Minimum acceptable ATM traffic descriptor (UNI 4.0).
    pub min_traffic: Option<TrafficDescriptor>,
    /// Broadband bearer capability.
    pub bearer: BearerCapability,
    /// QoS parameter.
    pub qos: QosParam,
    /// Extended QoS parameters (UNI 4.0).
    pub ext_qos: Option<ExtQos>,
}

/// The same QoS seen from the other end: `tx` and `rx` exchanged.
pub fn swap_directions(q: &Qos) -> Qos {
    Qos {
        tx: q.rx,
        rx: q.tx,
        aal: q.aal,
    }
}

/// `q` with every `max` rate replaced by `line_pcr` cells/s (linux-atm's sigd does the
/// same with the interface's rate before signalling).
pub fn resolve_max(q: &Qos, line_pcr: u32) -> Qos {
    let fix = |p: Pcr| match p {
        Pcr::Max => Pcr::Cps(line_pcr),
        other => other,
    };
    let dir = |t: TrafficParams| TrafficParams {
        max_pcr: fix(t.max_pcr),
        pcr: fix(t.pcr),
        ..t
    };
    Qos {
        tx: dir(q.tx),
        rx: dir(q.rx),
        aal: q.aal,
    }
}

fn field(name: &'static str, v: u32) -> Result<Option<u32>, QosMapError> {
    match v {
        0 => Ok(None),
        v if v > MAX_FIELD => Err(QosMapError::OutOfRange {
            field: name,
            value: v,
        }),
        v => Ok(Some(v)),
    }
}

fn rate(name: &'static str, p: Pcr) -> Result<Option<u32>, QosMapError> {
    match p {
        Pcr::Max => Err(QosMapError::MaxRate { field: name }),
        Pcr::Cps(v) => field(name, v),
    }
}

fn sdu(v: u32) -> Result<Option<u16>, QosMapError> {
    match v {
        0 => Ok(None),
        v => u16::try_from(v)
            .map(Some)
            .map_err(|_| QosMapError::SduTooLarge { value: v }),
    }
}

/// What one direction contributes to each IE.
struct DirIes {
    main: TrafficDirection,
    alt: Option<u32>,
    min: Option<u32>,
    cdv: Option<u32>,
}

fn direction(t: &TrafficParams) -> Result<DirIes, QosMapError> {
    let none = t.class == TrafficClass::None;
    let max_pcr = rate("max_pcr", t.max_pcr)?;
    Ok(DirIes {
        main: TrafficDirection {
            // A direction without traffic: PCR(CLP=0) = 0, and PCR(CLP=0+1) = 0 unless
            // the (unused) max_pcr says otherwise.
            pcr0: none.then_some(0),
            pcr01: if none {
                Some(max_pcr.unwrap_or(0))
            } else {
                max_pcr
            },
            scr01: field("scr", t.scr)?,
            mbs01: field("mbs", t.mbs)?,
            ..TrafficDirection::default()
        },
        alt: rate("pcr", t.pcr)?,
        min: field("min_pcr", t.min_pcr)?,
        cdv: field("cdvt", t.cdvt)?,
    })
}

/// Whether a descriptor direction says "no traffic": natm's PCR(CLP=0) = 0, or a lone
/// PCR(CLP=0+1) = 0 as other implementations send it.
fn is_none(d: &TrafficDirection) -> bool {
    d.pcr0 == Some(0)
        || *d
            == (TrafficDirection {
                pcr01: Some(0),
                ..TrafficDirection::default()
            })
}

/// A descriptor with only PCR(CLP=0+1), or `None` if neither direction has one.
fn pcr_only(fwd: Option<u32>, bwd: Option<u32>) -> Option<TrafficDescriptor> {
    if fwd.is_none() && bwd.is_none() {
        return None;
    }
    let mut td = TrafficDescriptor::default();
    td.fwd.pcr01 = fwd;
    td.bwd.pcr01 = bwd;
    Some(td)
}

impl QosIes {
    /// The IEs for the calling party's `q` (forward = `q.tx`).
    pub fn from_qos(q: &Qos) -> Result<QosIes, QosMapError> {
        q.validate().map_err(QosMapError::Invalid)?;
        // With neither direction carrying traffic, `Qos` has no class to keep: any will do.
        let class = match (q.tx.class, q.rx.class) {
            (TrafficClass::None, TrafficClass::None) => TrafficClass::Ubr,
            (TrafficClass::None, c) | (c, _) => c,
        };
        let (fwd, bwd) = (direction(&q.tx)?, direction(&q.rx)?);
        let aal = match q.aal {
            Aal::Aal5 => Some(AalParams::Aal5 {
                fwd_max_sdu: sdu(q.tx.max_sdu)?,
                bwd_max_sdu: sdu(q.rx.max_sdu)?,
                mode: None,
                sscs: None,
            }),
            other => {
                if q.tx.max_sdu != 0 || q.rx.max_sdu != 0 {
                    return Err(QosMapError::SduWithoutAal5);
                }
                match other {
                    Aal::Aal0 => Some(AalParams::Other {
                        aal_type: AalType::Aal0,
                        rest: alloc::vec::Vec::new(),
                    }),
                    _ => None,
                }
            }
        };
        let atc = match class {
            TrafficClass::Cbr => Atc::Cbr,
            TrafficClass::Vbr => Atc::NrtVbr,
            TrafficClass::Abr => Atc::Abr,
            _ => Atc::NoIndication,
        };
        let ext_qos = (fwd.cdv.is_some() || bwd.cdv.is_some()).then_some(ExtQos {
            fwd_cdv: fwd.cdv,
            bwd_cdv: bwd.cdv,
            ..ExtQos::default()
        });
        Ok(QosIes {
            aal,
            traffic: TrafficDescriptor {
                fwd: fwd.main,
                bwd: bwd.main,
                best_effort: class == TrafficClass::Ubr,
                options: None,
            },
            alt_traffic: pcr_only(fwd.alt, bwd.alt),
            min_traffic: pcr_only(fwd.min, bwd.min),
            bearer: BearerCapability {
                class: BearerClass::X,
                atc: Some(atc),
                clipping: false,
                user_plane: UserPlane::P2p,
            },
            qos: QosParam::UNSPECIFIED,
            ext_qos,
        })
    }

    /// [`QosIes::from_qos`], refusing what a peer of `version` cannot receive: to a UNI 3.1
    /// peer only `max_pcr`, `scr`, `mbs` and `max_sdu` travel ([`QosMapError::NeedsUni40`]
    /// names the first other field set).
    pub fn from_qos_for(q: &Qos, version: UniVersion) -> Result<QosIes, QosMapError> {
        if version == UniVersion::Uni31 {
            for t in [&q.tx, &q.rx] {
                let field = if !t.pcr.is_zero() {
                    "pcr"
                } else if t.min_pcr != 0 {
                    "min_pcr"
                } else if t.cdvt != 0 {
                    "cdvt"
                } else {
                    continue;
                };
                return Err(QosMapError::NeedsUni40 { field });
            }
        }
        QosIes::from_qos(q)
    }

    /// The QoS IEs of a message (a SETUP, as received).
    pub fn from_message(m: &Message) -> Result<QosIes, QosIeError> {
        Ok(QosIes {
            aal: m.aal.clone(),
            traffic: m.traffic.ok_or(QosIeError::NoTrafficDescriptor)?,
            alt_traffic: m.alt_traffic,
            min_traffic: m.min_traffic,
            bearer: m.bearer.ok_or(QosIeError::NoBearerCapability)?,
            qos: m.qos.unwrap_or(QosParam::UNSPECIFIED),
            ext_qos: m.ext_qos,
        })
    }

    /// Puts the IEs into `m`'s fields.
    pub fn apply(&self, m: &mut Message) {
        m.aal = self.aal.clone();
        m.traffic = Some(self.traffic);
        m.alt_traffic = self.alt_traffic;
        m.min_traffic = self.min_traffic;
        m.bearer = Some(self.bearer);
        m.qos = Some(self.qos);
        m.ext_qos = self.ext_qos;
    }

    /// The class the bearer capability and the best-effort indicator name.
    fn class(&self) -> Result<TrafficClass, QosIeError> {
        let b = &self.bearer;
        if b.user_plane != UserPlane::P2p {
            return Err(QosIeError::PointToMultipoint);
        }
        if self.traffic.best_effort {
            return Ok(TrafficClass::Ubr);
        }
        let unknown = QosIeError::UnknownClass {
            class: b.class,
            atc: b.atc,
        };
        match b.atc {
            Some(Atc::Abr) => Ok(TrafficClass::Abr),
            Some(a) if a.traffic_type() == 1 => Ok(TrafficClass::Cbr),
            Some(a) if a.traffic_type() == 2 => Ok(TrafficClass::Vbr),
            Some(Atc::RtVbrClr) => Ok(TrafficClass::Vbr),
            Some(a) if a.traffic_type() != 0 => Err(unknown),
            _ => match b.class {
                BearerClass::A => Ok(TrafficClass::Cbr),
                BearerClass::C => Ok(TrafficClass::Vbr),
                _ => Err(unknown),
            },
        }
    }

    /// The calling party's [`Qos`] (forward = `tx`).
    pub fn to_qos(&self) -> Result<Qos, QosIeError> {
        let class = self.class()?;
        let aal = match &self.aal {
            None => Aal::None,
            Some(AalParams::Aal5 { .. }) => Aal::Aal5,
            Some(AalParams::Other {
                aal_type: AalType::Aal0,
                ..
            }) => Aal::Aal0,
            Some(AalParams::Other { aal_type, .. }) => {
                return Err(QosIeError::UnsupportedAal(*aal_type));
            }
        };
        let (fwd_sdu, bwd_sdu) = match &self.aal {
            Some(AalParams::Aal5 {
                fwd_max_sdu,
                bwd_max_sdu,
                ..
            }) => (*fwd_max_sdu, *bwd_max_sdu),
            _ => (None, None),
        };
        let pick = |td: &Option<TrafficDescriptor>, fwd: bool| {
            td.and_then(|t| if fwd { t.fwd.pcr01 } else { t.bwd.pcr01 })
        };
        let cdv = |fwd: bool| {
            self.ext_qos
                .and_then(|e| if fwd { e.fwd_cdv } else { e.bwd_cdv })
        };
        let dir = |d: &TrafficDirection, fwd: bool, sdu: Option<u16>| TrafficParams {
            class: if is_none(d) {
                TrafficClass::None
            } else {
                class
            },
            max_pcr: Pcr::Cps(d.pcr01.unwrap_or(0)),
            pcr: Pcr::Cps(pick(&self.alt_traffic, fwd).unwrap_or(0)),
            min_pcr: pick(&self.min_traffic, fwd).unwrap_or(0),
            max_cdv: 0,
            max_sdu: sdu.map_or(0, u32::from),
            scr: d.scr01.or(d.scr0).unwrap_or(0),
            mbs: d.mbs01.or(d.mbs0).unwrap_or(0),
            cdvt: cdv(fwd).unwrap_or(0),
        };
        let mut q = Qos {
            tx: dir(&self.traffic.fwd, true, fwd_sdu),
            rx: dir(&self.traffic.bwd, false, bwd_sdu),
            aal,
        };
        // The text form has no VBR fields for other classes: drop what a foreign
        // descriptor gave them, so that the result always validates.
        let none = TrafficClass::None;
        if class != TrafficClass::Vbr && (q.tx.class, q.rx.class) != (none, none) {
            for t in [&mut q.tx, &mut q.rx] {
                (t.scr, t.mbs, t.cdvt) = (0, 0, 0);
            }
        }
        // Both directions none with different parameters: the text cannot say that.
        if q.validate().is_err() {
            return Err(QosIeError::Inexpressible);
        }
        Ok(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use proptest::prelude::*;

    fn q(s: &str) -> Qos {
        s.parse().unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    #[test]
    fn ubr_like_linux_atm() {
        let ies = QosIes::from_qos(&q("ubr,aal5:max_pcr=353207,sdu=9188")).unwrap();
        let mut m = Message::new(super::super::Header::new(
            super::super::MsgType::Setup,
            super::super::CallRef::new(1, false),
        ));
        ies.apply(&mut m);
        // The first three IEs of atm-facts §5.5's SETUP, and its QoS parameter.
        let b = m.to_vec();
        assert_eq!(
            &b[9..],
            [
                0x58, 0x80, 0, 7, 5, 0x8c, 0x23, 0xe4, 0x81, 0x23, 0xe4, //
                0x59, 0x80, 0, 9, 0x84, 0x05, 0x63, 0xb7, 0x85, 0x05, 0x63, 0xb7, 0xbe, //
                0x5e, 0x80, 0, 3, 0x10, 0x80, 0x80, //
                0x5c, 0x80, 0, 2, 0, 0
            ]
        );
        assert_eq!(ies.to_qos().unwrap(), q("ubr,aal5:max_pcr=353207,sdu=9188"));
    }

    #[test]
    fn vbr_with_cdvt_and_directions() {
        let v = q(
            "vbr,aal5:max_pcr=20000,pcr=15000,min_pcr=1000,scr=5000,mbs=100,cdvt=250,tx:sdu=1500,rx:none",
        );
        let ies = QosIes::from_qos(&v).unwrap();
        assert_eq!(ies.bearer.atc, Some(Atc::NrtVbr));
        assert_eq!(ies.traffic.fwd.scr01, Some(5000));
        assert_eq!(ies.traffic.bwd.pcr0, Some(0)); // rx:none
        assert_eq!(ies.traffic.bwd.pcr01, Some(20000)); // libatm keeps the shared max_pcr
        assert_eq!(ies.alt_traffic.unwrap().fwd.pcr01, Some(15000));
        assert_eq!(ies.min_traffic.unwrap().fwd.pcr01, Some(1000));
        assert_eq!(ies.ext_qos.unwrap().fwd_cdv, Some(250));
        assert_eq!(ies.to_qos().unwrap(), v);
        assert_eq!(swap_directions(&swap_directions(&v)), v);
    }

    #[test]
    fn what_signalling_cannot_carry() {
        let e = |s: &str| QosIes::from_qos(&q(s)).unwrap_err();
        assert_eq!(
            e("cbr:max_pcr=max"),
            QosMapError::MaxRate { field: "max_pcr" }
        );
        assert_eq!(
            e("cbr:pcr=16777216"),
            QosMapError::OutOfRange {
                field: "pcr",
                value: 16_777_216
            }
        );
        assert_eq!(
            e("ubr,aal5:sdu=65536"),
            QosMapError::SduTooLarge { value: 65536 }
        );
        assert_eq!(e("ubr,aal0:sdu=100"), QosMapError::SduWithoutAal5);
        for s in [
            "ubr:pcr=1,tx:pcr=2,rx:none",
            "ubr:pcr=5,tx:none,rx:none",
            "cbr:max_pcr=9,rx:none",
        ] {
            let v = q(s);
            assert_eq!(QosIes::from_qos(&v).unwrap().to_qos().unwrap(), v, "{s}");
        }
        assert_eq!(
            e("cbr:max_pcr=max").to_string(),
            "max_pcr=max cannot be signalled: resolve it against the line rate first"
        );
        assert_eq!(
            QosIes::from_qos_for(&q("ubr:pcr=5"), UniVersion::Uni31),
            Err(QosMapError::NeedsUni40 { field: "pcr" })
        );
        let v = q("vbr:max_pcr=9,scr=5,mbs=3,rx:none");
        let ies = QosIes::from_qos_for(&v, UniVersion::Uni31).unwrap();
        assert_eq!(
            (ies.alt_traffic, ies.min_traffic, ies.ext_qos),
            (None, None, None)
        );
        let r = resolve_max(&q("cbr:max_pcr=max"), 353_207);
        assert_eq!(r, q("cbr:max_pcr=353207"));
        let mut bad = q("ubr");
        bad.rx.class = TrafficClass::Cbr;
        assert!(matches!(
            QosIes::from_qos(&bad),
            Err(QosMapError::Invalid(QosValueError::ClassMismatch { .. }))
        ));
    }

    #[test]
    fn foreign_ies() {
        // UNI 3.1 CBR: BCOB-A without octet 5a, PCR(CLP=0+1) both ways.
        let mut td = TrafficDescriptor::default();
        td.fwd.pcr01 = Some(1000);
        td.bwd.pcr01 = Some(2000);
        let ies = QosIes {
            aal: None,
            traffic: td,
            alt_traffic: None,
            min_traffic: None,
            bearer: BearerCapability {
                class: BearerClass::A,
                atc: None,
                clipping: false,
                user_plane: UserPlane::P2p,
            },
            qos: QosParam::UNSPECIFIED,
            ext_qos: None,
        };
        assert_eq!(
            ies.to_qos().unwrap(),
            q("cbr:tx:max_pcr=1000,rx:max_pcr=2000")
        );
        let mut x = ies.clone();
        x.bearer.class = BearerClass::X;
        assert!(matches!(x.to_qos(), Err(QosIeError::UnknownClass { .. })));
        let mut x = ies.clone();
        x.aal = Some(AalParams::Other {
            aal_type: AalType::Aal1,
            rest: alloc::vec::Vec::new(),
        });
        assert_eq!(x.to_qos(), Err(QosIeError::UnsupportedAal(AalType::Aal1)));
        let mut x = ies;
        x.bearer.user_plane = UserPlane::P2mp;
        assert_eq!(x.to_qos(), Err(QosIeError::PointToMultipoint));
        let m = Message::new(super::super::Header::new(
            super::super::MsgType::Setup,
            super::super::CallRef::new(1, false),
        ));
        assert_eq!(
            QosIes::from_message(&m),
            Err(QosIeError::NoTrafficDescriptor)
        );
    }

    fn rate() -> impl Strategy<Value = u32> {
        prop_oneof![Just(0u32), 1u32..=MAX_FIELD]
    }

    fn params(class: TrafficClass) -> impl Strategy<Value = TrafficParams> {
        let vbr = class == TrafficClass::Vbr;
        (
            rate(),
            rate(),
            rate(),
            prop_oneof![Just(0u32), 1u32..=65535],
            rate(),
            rate(),
            rate(),
        )
            .prop_map(move |(max_pcr, pcr, min_pcr, max_sdu, scr, mbs, cdvt)| {
                let (scr, mbs, cdvt) = if vbr { (scr, mbs, cdvt) } else { (0, 0, 0) };
                TrafficParams {
                    class,
                    max_pcr: Pcr::Cps(max_pcr),
                    pcr: Pcr::Cps(pcr),
                    min_pcr,
                    max_cdv: 0,
                    max_sdu,
                    scr,
                    mbs,
                    cdvt,
                }
            })
    }

    /// Every `Qos` natm accepts that signalling can carry: any class, either or both
    /// directions none (with parameters), every field 0 or in range, any AAL (SDU sizes
    /// only with AAL5).
    fn signalable() -> impl Strategy<Value = Qos> {
        use TrafficClass as C;
        let class = proptest::sample::select(alloc::vec![C::Ubr, C::Cbr, C::Vbr, C::Abr]);
        let aal = proptest::sample::select(alloc::vec![Aal::None, Aal::Aal0, Aal::Aal5]);
        (class, aal, 0u8..4).prop_flat_map(|(c, aal, none)| {
            (params(c), params(c)).prop_map(move |(mut tx, mut rx)| {
                if aal != Aal::Aal5 {
                    tx.max_sdu = 0;
                    rx.max_sdu = 0;
                }
                match none {
                    1 => tx.class = C::None,
                    2 => rx.class = C::None,
                    3 => {
                        tx.class = C::None;
                        rx = tx;
                    }
                    _ => {}
                }
                Qos { tx, rx, aal }
            })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn qos_round_trip(v in signalable()) {
            prop_assert_eq!(v.validate(), Ok(()));
            let ies = QosIes::from_qos(&v).unwrap();
            prop_assert_eq!(ies.to_qos().unwrap(), v);
            // Through a whole SETUP on the wire, too.
            let mut m = Message::new(super::super::Header::new(
                super::super::MsgType::Setup,
                super::super::CallRef::new(7, false),
            ));
            ies.apply(&mut m);
            let back = Message::parse(&m.to_vec()).unwrap().message;
            let ies2 = QosIes::from_message(&back).unwrap();
            prop_assert_eq!(&ies2, &ies);
            prop_assert_eq!(QosIes::from_qos(&ies2.to_qos().unwrap()).unwrap(), ies);
        }

        #[test]
        fn text_round_trip(v in signalable()) {
            // Through the qos(7) text as well: what a user types is what the peer gets.
            let t: Qos = v.to_string().parse().unwrap();
            prop_assert_eq!(QosIes::from_qos(&t).unwrap().to_qos().unwrap(), t);
        }

        #[test]
        fn any_ies_give_a_valid_qos_or_an_error(seed in any::<u64>()) {
            use super::super::sample::{self, Sampler};
            let s = &mut Sampler::new(seed);
            let td = sample::traffic(s);
            let alt = s.coin().then(|| sample::traffic(s));
            let min = s.coin().then(|| sample::traffic(s));
            let bearer = sample::bearer(s);
            let aal = s.coin().then(|| sample::aal(s));
            let ext = s.coin().then(|| sample::ext_qos(s));
            let ies = QosIes {
                aal,
                traffic: td,
                alt_traffic: alt,
                min_traffic: min,
                bearer,
                qos: QosParam::UNSPECIFIED,
                ext_qos: ext,
            };
            if let Ok(v) = ies.to_qos() {
                prop_assert_eq!(v.validate(), Ok(()));
                // What natm derives from foreign IEs it can signal again, unchanged.
                if let Ok(again) = QosIes::from_qos(&v) {
                    prop_assert_eq!(again.to_qos().unwrap(), v);
                }
            }
        }
    }
}

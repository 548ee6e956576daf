//! AAL parameters (0x58; Q.2931 §4.5.5, UNI 3.1 §5.4.5.5, atm-facts §5.3).
//!
//! AAL5 is decoded field by field; the other AAL types natm does not carry (AAL1, AAL2,
//! AAL3/4, user-defined) keep their subfields raw.

use alloc::vec::Vec;
use core::fmt;

use super::{IeCodec, IeErrorKind, IeId, Reader, Writer, hex, once, open_enum};

open_enum! {
    /// Octet 5: the AAL type.
    pub enum AalType: u8 {
        /// AAL type 0 (as ngatm sends it).
        Aal0 = 0x00,
        /// AAL 1.
        Aal1 = 0x01,
        /// AAL 2.
        Aal2 = 0x02,
        /// AAL 3/4.
        Aal34 = 0x03,
        /// AAL 5.
        Aal5 = 0x05,
        /// User-defined AAL (0x10; Wireshark expects 0x40, atm-facts §10).
        UserDefined = 0x10,
    }
}

open_enum! {
    /// Subfield 0x84: the service-specific convergence sublayer of AAL5.
    pub enum SscsType: u8 {
        /// Null SSCS (0).
        Null = 0,
        /// SSCOP, assured operation (1).
        SscopAssured = 1,
        /// SSCOP, non-assured operation (2).
        SscopNonAssured = 2,
        /// Frame relay SSCS (4).
        FrameRelay = 4,
    }
}

/// Subfield identifiers of AAL5.
const FWD_SDU: u8 = 0x8C;
const BWD_SDU: u8 = 0x81;
const MODE: u8 = 0x83;
const SSCS: u8 = 0x84;

/// The AAL parameters IE.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AalParams {
    /// AAL5 with its optional subfields.
    Aal5 {
        /// Forward maximum CPCS-SDU size (0x8C), bytes.
        fwd_max_sdu: Option<u16>,
        /// Backward maximum CPCS-SDU size (0x81), bytes.
        bwd_max_sdu: Option<u16>,
        /// Mode (0x83: 1 message, 2 streaming). UNI 3.0 only: natm accepts it and keeps
        /// it, and never sets it itself (ngatm rejects it, atm-facts §5.3).
        mode: Option<u8>,
        /// SSCS type (0x84).
        sscs: Option<SscsType>,
    },
    /// Any other AAL type, with its subfields undecoded.
    Other {
        /// The AAL type (never [`AalType::Aal5`]).
        aal_type: AalType,
        /// The octets after the AAL type.
        rest: Vec<u8>,
    },
}

impl AalParams {
    /// AAL5 with both maximum SDU sizes, as linux-atm and natm send it.
    pub const fn aal5(fwd_max_sdu: u16, bwd_max_sdu: u16) -> AalParams {
        AalParams::Aal5 {
            fwd_max_sdu: Some(fwd_max_sdu),
            bwd_max_sdu: Some(bwd_max_sdu),
            mode: None,
            sscs: None,
        }
    }

    /// The AAL type.
    pub fn aal_type(&self) -> AalType {
        match self {
            AalParams::Aal5 { .. } => AalType::Aal5,
            AalParams::Other { aal_type, .. } => *aal_type,
        }
    }
}

impl IeCodec for AalParams {
    const ID: IeId = IeId::AalParams;

    fn parse_contents(b: &[u8]) -> Result<AalParams, IeErrorKind> {
        let mut r = Reader::new(b);
        let aal_type = AalType::from_code(r.u8()?);
        if aal_type != AalType::Aal5 {
            return Ok(AalParams::Other {
                aal_type,
                rest: r.rest().to_vec(),
            });
        }
        let (mut fwd, mut bwd, mut mode, mut sscs) = (None, None, None, None);
        while let Some(id) = r.peek() {
            r.u8()?;
            match id {
                FWD_SDU => once(&mut fwd, id, r.u16()?)?,
                BWD_SDU => once(&mut bwd, id, r.u16()?)?,
                MODE => once(&mut mode, id, r.u8()?)?,
                SSCS => once(&mut sscs, id, SscsType::from_code(r.u8()?))?,
                other => return Err(IeErrorKind::UnknownSubfield(other)),
            }
        }
        Ok(AalParams::Aal5 {
            fwd_max_sdu: fwd,
            bwd_max_sdu: bwd,
            mode,
            sscs,
        })
    }

    fn contents_len(&self) -> usize {
        match self {
            AalParams::Aal5 {
                fwd_max_sdu,
                bwd_max_sdu,
                mode,
                sscs,
            } => {
                1 + 3 * usize::from(fwd_max_sdu.is_some())
                    + 3 * usize::from(bwd_max_sdu.is_some())
                    + 2 * usize::from(mode.is_some())
                    + 2 * usize::from(sscs.is_some())
            }
            AalParams::Other { rest, .. } => 1 + rest.len(),
        }
    }

    fn emit_contents(&self, buf: &mut [u8]) {
        let mut w = Writer::new(buf);
        w.u8(self.aal_type().code());
        match self {
            AalParams::Aal5 {
                fwd_max_sdu,
                bwd_max_sdu,
                mode,
                sscs,
            } => {
                if let Some(v) = fwd_max_sdu {
                    w.u8(FWD_SDU);
                    w.u16(*v);
                }
                if let Some(v) = bwd_max_sdu {
                    w.u8(BWD_SDU);
                    w.u16(*v);
                }
                if let Some(v) = mode {
                    w.u8(MODE);
                    w.u8(*v);
                }
                if let Some(v) = sscs {
                    w.u8(SSCS);
                    w.u8(v.code());
                }
            }
            AalParams::Other { rest, .. } => w.bytes(rest),
        }
    }
}

impl fmt::Display for AalParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AalParams::Aal5 {
                fwd_max_sdu,
                bwd_max_sdu,
                mode,
                sscs,
            } => {
                f.write_str("aal5")?;
                if let Some(v) = fwd_max_sdu {
                    write!(f, " fwd_sdu={v}")?;
                }
                if let Some(v) = bwd_max_sdu {
                    write!(f, " bwd_sdu={v}")?;
                }
                if let Some(v) = mode {
                    write!(f, " mode={v}")?;
                }
                match sscs {
                    Some(SscsType::Unknown(v)) => write!(f, " sscs={v}")?,
                    Some(s) => write!(f, " sscs={s:?}")?,
                    None => {}
                }
                Ok(())
            }
            AalParams::Other { aal_type, rest } => {
                match aal_type {
                    AalType::Unknown(v) => write!(f, "aal-type-0x{v:02x}")?,
                    t => write!(f, "{t:?}")?,
                }
                if !rest.is_empty() {
                    f.write_str(" [")?;
                    hex(f, rest)?;
                    f.write_str("]")?;
                }
                Ok(())
            }
        }
    }
}

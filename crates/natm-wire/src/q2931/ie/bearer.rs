//! Broadband bearer capability (0x5E; Q.2931 §4.5.7, UNI 3.1 §5.4.5.7, UNI 4.0 §4.5,
//! atm-facts §5.3).
//!
//! ```text
//! 5   ext | spare (2) | bearer class (5)          ext = 0 when octet 5a follows
//! 5a  1 | ATC (7)  (UNI 3.1: spare (2) | traffic type (3) | timing requirements (2))
//! 6   1 | susceptibility to clipping (2) | spare (3) | user-plane connection config (2)
//! ```

use core::fmt;

use super::{IeCodec, IeErrorKind, IeId, Reader, Writer, open_enum};

open_enum! {
    /// Bearer class (octet 5, 5 bits).
    pub enum BearerClass: u8 {
        /// BCOB-A (0x01).
        A = 0x01,
        /// BCOB-C (0x03).
        C = 0x03,
        /// BCOB-X (0x10).
        X = 0x10,
        /// Transparent VP service (0x18, as Wireshark; atm-facts §10).
        Vp = 0x18,
    }
}

open_enum! {
    /// ATM transfer capability (UNI 4.0 octet 5a, 7 bits). UNI 3.1 read the same octet as
    /// traffic type and timing requirements; the UNI 4.0 values were chosen to agree
    /// ([`Atc::traffic_type`], [`Atc::timing`]).
    pub enum Atc: u8 {
        /// No indication (0x00; the UNI 3.1 octet linux-atm sends for UBR).
        NoIndication = 0x00,
        /// CBR (0x05; UNI 3.1: CBR, end-to-end timing required).
        Cbr = 0x05,
        /// CBR with CLR commitment on CLP=0+1 (0x07).
        CbrClr = 0x07,
        /// Real-time VBR (0x09; UNI 3.1: VBR, timing required).
        RtVbr = 0x09,
        /// Non-real-time VBR (0x0A; UNI 3.1: VBR, timing not required).
        NrtVbr = 0x0A,
        /// Non-real-time VBR with CLR commitment (0x0B).
        NrtVbrClr = 0x0B,
        /// ABR (0x0C).
        Abr = 0x0C,
        /// Real-time VBR with CLR commitment (0x13).
        RtVbrClr = 0x13,
    }
}

impl Atc {
    /// The UNI 3.1 traffic type (bits 5-3): 0 none, 1 CBR, 2 VBR.
    pub const fn traffic_type(self) -> u8 {
        (self.code() >> 2) & 7
    }

    /// The UNI 3.1 timing requirement (bits 2-1): 0 none, 1 required, 2 not required.
    pub const fn timing(self) -> u8 {
        self.code() & 3
    }
}

open_enum! {
    /// User-plane connection configuration (octet 6 bits 2-1).
    pub enum UserPlane: u8 {
        /// Point-to-point (0).
        P2p = 0,
        /// Point-to-multipoint (1).
        P2mp = 1,
    }
}

/// The broadband bearer capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BearerCapability {
    /// Bearer class.
    pub class: BearerClass,
    /// Octet 5a, when present: the ATC (UNI 4.0) or traffic type and timing (UNI 3.1).
    pub atc: Option<Atc>,
    /// Susceptible to clipping.
    pub clipping: bool,
    /// User-plane connection configuration.
    pub user_plane: UserPlane,
}

impl BearerCapability {
    /// BCOB-X with octet 5a = 0x80, not susceptible to clipping, point-to-point: the UNI 3.1
    /// UBR bearer (`5e 80 00 03 10 80 80`).
    pub const UBR_31: BearerCapability = BearerCapability {
        class: BearerClass::X,
        atc: Some(Atc::NoIndication),
        clipping: false,
        user_plane: UserPlane::P2p,
    };
}

impl IeCodec for BearerCapability {
    const ID: IeId = IeId::BearerCapability;

    fn parse_contents(b: &[u8]) -> Result<BearerCapability, IeErrorKind> {
        let mut r = Reader::new(b);
        let o5 = r.u8()?;
        let atc = if o5 & 0x80 == 0 {
            let a = r.u8()?;
            if a & 0x80 == 0 {
                return Err(IeErrorKind::Invalid("octet 5a extension bit"));
            }
            Some(Atc::from_code(a & 0x7F))
        } else {
            None
        };
        let o6 = r.u8()?;
        if o6 & 0x80 == 0 {
            return Err(IeErrorKind::Invalid("octet 6 extension bit"));
        }
        let clipping = match (o6 >> 5) & 3 {
            0 => false,
            1 => true,
            _ => return Err(IeErrorKind::Invalid("susceptibility to clipping")),
        };
        r.end()?;
        Ok(BearerCapability {
            class: BearerClass::from_code(o5 & 0x1F),
            atc,
            clipping,
            user_plane: UserPlane::from_code(o6 & 3),
        })
    }

    fn contents_len(&self) -> usize {
        2 + usize::from(self.atc.is_some())
    }

    fn emit_contents(&self, buf: &mut [u8]) {
        let mut w = Writer::new(buf);
        let ext = if self.atc.is_some() { 0 } else { 0x80 };
        w.u8(ext | (self.class.code() & 0x1F));
        if let Some(a) = self.atc {
            w.u8(0x80 | (a.code() & 0x7F));
        }
        w.u8(0x80 | (u8::from(self.clipping) << 5) | (self.user_plane.code() & 3));
    }
}

impl fmt::Display for BearerCapability {
    /// `BCOB-X atc=0x00 p2p`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.class {
            BearerClass::A => f.write_str("BCOB-A")?,
            BearerClass::C => f.write_str("BCOB-C")?,
            BearerClass::X => f.write_str("BCOB-X")?,
            BearerClass::Vp => f.write_str("BCOB-VP")?,
            BearerClass::Unknown(v) => write!(f, "class-0x{v:02x}")?,
        }
        if let Some(a) = self.atc {
            match a {
                Atc::Unknown(v) => write!(f, " atc=0x{v:02x}")?,
                a => write!(f, " atc={a:?}")?,
            }
        }
        if self.clipping {
            f.write_str(" clipping")?;
        }
        match self.user_plane {
            UserPlane::P2p => f.write_str(" p2p"),
            UserPlane::P2mp => f.write_str(" p2mp"),
            UserPlane::Unknown(v) => write!(f, " upcc={v}"),
        }
    }
}

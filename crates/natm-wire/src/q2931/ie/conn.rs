//! Connection identifier (0x5A; Q.2931 §4.5.16), QoS parameter (0x5C; Q.2931 §4.5.18),
//! extended QoS parameters (0xEC; UNI 4.0 §4.7) and end-to-end transit delay (0x42;
//! Q.2931 §4.5.17, UNI 4.0 §4.6).

use core::fmt;

use super::{CodingStandard, IeCodec, IeErrorKind, IeFlags, IeId, Reader, Writer, once, open_enum};

open_enum! {
    /// VP-associated signalling (connection identifier octet 5 bits 5-4).
    pub enum VpAssoc: u8 {
        /// VP-associated signalling (0).
        Associated = 0,
        /// Explicit indication of VPCI (1), the UNI's case.
        Explicit = 1,
    }
}

open_enum! {
    /// Preferred/exclusive (connection identifier octet 5 bits 3-1).
    pub enum PrefExcl: u8 {
        /// Exclusive VPCI, exclusive VCI (0).
        Exclusive = 0,
        /// Exclusive VPCI, any VCI (1).
        AnyVci = 1,
        /// Exclusive VPCI, no VCI: a VP connection (4).
        NoVci = 4,
    }
}

/// The connection identifier: the VPCI and VCI of the call's VC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnectionId {
    /// VP-associated signalling.
    pub vp_assoc: VpAssoc,
    /// Preferred/exclusive.
    pub pref_excl: PrefExcl,
    /// Virtual path connection identifier (the VPI on a UNI without VP multiplexing).
    pub vpci: u16,
    /// Virtual channel identifier.
    pub vci: u16,
}

impl ConnectionId {
    /// Explicit VPCI, exclusive VPCI and VCI (`88 vpci vci`), as the network assigns one.
    pub const fn exclusive(vpci: u16, vci: u16) -> ConnectionId {
        ConnectionId {
            vp_assoc: VpAssoc::Explicit,
            pref_excl: PrefExcl::Exclusive,
            vpci,
            vci,
        }
    }
}

impl IeCodec for ConnectionId {
    const ID: IeId = IeId::ConnectionId;

    fn parse_contents(b: &[u8]) -> Result<ConnectionId, IeErrorKind> {
        let mut r = Reader::new(b);
        let o5 = r.u8()?;
        if o5 & 0x80 == 0 {
            return Err(IeErrorKind::Invalid("octet 5 extension bit"));
        }
        let id = ConnectionId {
            vp_assoc: VpAssoc::from_code((o5 >> 3) & 3),
            pref_excl: PrefExcl::from_code(o5 & 7),
            vpci: r.u16()?,
            vci: r.u16()?,
        };
        r.end()?;
        Ok(id)
    }

    fn contents_len(&self) -> usize {
        5
    }

    fn emit_contents(&self, buf: &mut [u8]) {
        let mut w = Writer::new(buf);
        w.u8(0x80 | ((self.vp_assoc.code() & 3) << 3) | (self.pref_excl.code() & 7));
        w.u16(self.vpci);
        w.u16(self.vci);
    }
}

impl fmt::Display for ConnectionId {
    /// `vpci=0 vci=32`, plus the indicators when they are not the usual explicit/exclusive.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "vpci={} vci={}", self.vpci, self.vci)?;
        if self.vp_assoc != VpAssoc::Explicit {
            write!(f, " vp-assoc={}", self.vp_assoc.code())?;
        }
        match self.pref_excl {
            PrefExcl::Exclusive => Ok(()),
            PrefExcl::AnyVci => f.write_str(" any-vci"),
            PrefExcl::NoVci => f.write_str(" no-vci"),
            PrefExcl::Unknown(v) => write!(f, " pref-excl={v}"),
        }
    }
}

open_enum! {
    /// A QoS class (Q.2931 QoS parameter octets 5 and 6).
    pub enum QosClass: u8 {
        /// Unspecified QoS class (0): UBR, ABR.
        Unspecified = 0,
        /// QoS class 1 (network-specific coding only).
        Class1 = 1,
        /// QoS class 2.
        Class2 = 2,
        /// QoS class 3.
        Class3 = 3,
        /// QoS class 4.
        Class4 = 4,
    }
}

/// The QoS parameter: a QoS class for each direction.
///
/// With ITU-T coding only class 0 is legal (ngatm enforces this, atm-facts §5.3); classes
/// 1–4 need network-specific coding. natm reports any other combination as a content error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QosParam {
    /// The IE's coding standard.
    pub coding: CodingStandard,
    /// Forward QoS class.
    pub fwd: QosClass,
    /// Backward QoS class.
    pub bwd: QosClass,
}

impl QosParam {
    /// Class 0 in both directions, ITU-T coding (`5c 80 00 02 00 00`).
    pub const UNSPECIFIED: QosParam = QosParam {
        coding: CodingStandard::Itu,
        fwd: QosClass::Unspecified,
        bwd: QosClass::Unspecified,
    };

    /// Parses the contents under the header's coding standard.
    pub fn parse_with(coding: CodingStandard, b: &[u8]) -> Result<QosParam, IeErrorKind> {
        let mut r = Reader::new(b);
        let q = QosParam {
            coding,
            fwd: QosClass::from_code(r.u8()?),
            bwd: QosClass::from_code(r.u8()?),
        };
        r.end()?;
        if coding == CodingStandard::Itu
            && (q.fwd != QosClass::Unspecified || q.bwd != QosClass::Unspecified)
        {
            return Err(IeErrorKind::Invalid("QoS class with ITU-T coding"));
        }
        Ok(q)
    }
}

impl IeCodec for QosParam {
    const ID: IeId = IeId::QosParam;

    /// Assumes ITU-T coding; [`QosParam::parse_with`] takes the header's.
    fn parse_contents(b: &[u8]) -> Result<QosParam, IeErrorKind> {
        QosParam::parse_with(CodingStandard::Itu, b)
    }

    fn contents_len(&self) -> usize {
        2
    }

    fn emit_contents(&self, buf: &mut [u8]) {
        buf[0] = self.fwd.code();
        buf[1] = self.bwd.code();
    }

    fn flags(&self) -> IeFlags {
        IeFlags {
            coding: self.coding,
            ..IeFlags::ITU
        }
    }
}

impl fmt::Display for QosParam {
    /// `class 0/0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "class {}/{}", self.fwd.code(), self.bwd.code())?;
        if self.coding != CodingStandard::Itu {
            write!(f, " coding={}", self.coding.code())?;
        }
        Ok(())
    }
}

/// Extended QoS parameters (UNI 4.0): acceptable and cumulative peak-to-peak cell delay
/// variation (µs, 24 bits) and acceptable cell loss ratio (the exponent n of 10⁻ⁿ).
/// Emitted with network-specific (ATM Forum) coding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExtQos {
    /// Origin of the IE (octet 5): 0 originating user, 1 intermediate network.
    pub origin: u8,
    /// Acceptable forward peak-to-peak CDV (0x94).
    pub fwd_cdv: Option<u32>,
    /// Acceptable backward peak-to-peak CDV (0x95).
    pub bwd_cdv: Option<u32>,
    /// Cumulative forward peak-to-peak CDV (0x96).
    pub fwd_cum_cdv: Option<u32>,
    /// Cumulative backward peak-to-peak CDV (0x97).
    pub bwd_cum_cdv: Option<u32>,
    /// Acceptable forward CLR (0xA2).
    pub fwd_clr: Option<u8>,
    /// Acceptable backward CLR (0xA3).
    pub bwd_clr: Option<u8>,
}

impl IeCodec for ExtQos {
    const ID: IeId = IeId::ExtQos;

    fn parse_contents(b: &[u8]) -> Result<ExtQos, IeErrorKind> {
        let mut r = Reader::new(b);
        let mut q = ExtQos {
            origin: r.u8()?,
            ..ExtQos::default()
        };
        while let Some(id) = r.peek() {
            r.u8()?;
            match id {
                0x94 => once(&mut q.fwd_cdv, id, r.u24()?)?,
                0x95 => once(&mut q.bwd_cdv, id, r.u24()?)?,
                0x96 => once(&mut q.fwd_cum_cdv, id, r.u24()?)?,
                0x97 => once(&mut q.bwd_cum_cdv, id, r.u24()?)?,
                0xA2 => once(&mut q.fwd_clr, id, r.u8()?)?,
                0xA3 => once(&mut q.bwd_clr, id, r.u8()?)?,
                other => return Err(IeErrorKind::UnknownSubfield(other)),
            }
        }
        Ok(q)
    }

    fn contents_len(&self) -> usize {
        let cdv = [
            self.fwd_cdv,
            self.bwd_cdv,
            self.fwd_cum_cdv,
            self.bwd_cum_cdv,
        ];
        1 + 4 * cdv.iter().filter(|v| v.is_some()).count()
            + 2 * [self.fwd_clr, self.bwd_clr]
                .iter()
                .filter(|v| v.is_some())
                .count()
    }

    fn emit_contents(&self, buf: &mut [u8]) {
        let mut w = Writer::new(buf);
        w.u8(self.origin);
        for (id, v) in [
            (0x94, self.fwd_cdv),
            (0x95, self.bwd_cdv),
            (0x96, self.fwd_cum_cdv),
            (0x97, self.bwd_cum_cdv),
        ] {
            if let Some(v) = v {
                w.u8(id);
                w.u24(v);
            }
        }
        for (id, v) in [(0xA2, self.fwd_clr), (0xA3, self.bwd_clr)] {
            if let Some(v) = v {
                w.u8(id);
                w.u8(v);
            }
        }
    }

    fn flags(&self) -> IeFlags {
        IeFlags::NETWORK
    }
}

impl fmt::Display for ExtQos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "origin={}", self.origin)?;
        for (n, v) in [
            ("fwd_cdv", self.fwd_cdv),
            ("bwd_cdv", self.bwd_cdv),
            ("fwd_cum_cdv", self.fwd_cum_cdv),
            ("bwd_cum_cdv", self.bwd_cum_cdv),
        ] {
            if let Some(v) = v {
                write!(f, " {n}={v}us")?;
            }
        }
        for (n, v) in [("fwd_clr", self.fwd_clr), ("bwd_clr", self.bwd_clr)] {
            if let Some(v) = v {
                write!(f, " {n}=1e-{v}")?;
            }
        }
        Ok(())
    }
}

/// End-to-end transit delay, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TransitDelay {
    /// Cumulative transit delay (0x01).
    pub cumulative: Option<u16>,
    /// Maximum end-to-end transit delay (0x03).
    pub maximum: Option<u16>,
    /// Network-generated indicator (0x0A, no value).
    pub network_generated: bool,
}

impl IeCodec for TransitDelay {
    const ID: IeId = IeId::TransitDelay;

    fn parse_contents(b: &[u8]) -> Result<TransitDelay, IeErrorKind> {
        let mut r = Reader::new(b);
        let (mut cum, mut max, mut net) = (None, None, None);
        while let Some(id) = r.peek() {
            r.u8()?;
            match id {
                0x01 => once(&mut cum, id, r.u16()?)?,
                0x03 => once(&mut max, id, r.u16()?)?,
                0x0A => once(&mut net, id, ())?,
                other => return Err(IeErrorKind::UnknownSubfield(other)),
            }
        }
        Ok(TransitDelay {
            cumulative: cum,
            maximum: max,
            network_generated: net.is_some(),
        })
    }

    fn contents_len(&self) -> usize {
        3 * usize::from(self.cumulative.is_some())
            + 3 * usize::from(self.maximum.is_some())
            + usize::from(self.network_generated)
    }

    fn emit_contents(&self, buf: &mut [u8]) {
        let mut w = Writer::new(buf);
        if let Some(v) = self.cumulative {
            w.u8(0x01);
            w.u16(v);
        }
        if let Some(v) = self.maximum {
            w.u8(0x03);
            w.u16(v);
        }
        if self.network_generated {
            w.u8(0x0A);
        }
    }
}

impl fmt::Display for TransitDelay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        if let Some(v) = self.cumulative {
            write!(f, "cumulative={v}ms")?;
            sep = " ";
        }
        if let Some(v) = self.maximum {
            write!(f, "{sep}max={v}ms")?;
            sep = " ";
        }
        if self.network_generated {
            write!(f, "{sep}network-generated")?;
        }
        Ok(())
    }
}

//! Broadband high-layer information (0x5D; Q.2931 §4.5.8) and broadband low-layer
//! information (0x5F; Q.2931 §4.5.9, UNI 3.1 §5.4.5.9, atm-facts §5.3).
//!
//! BLLI octets come in groups: a layer octet `ext | layer (2) | protocol (5)` (layer 1, 2
//! or 3) followed, while its extension bit is 0, by more octets up to one whose extension
//! bit is 1; then optionally the SNAP octet 0x80 with the OUI (3) and PID (2).

use alloc::vec::Vec;
use core::fmt;

use super::{IeCodec, IeErrorKind, IeId, Reader, Writer, hex, open_enum};

open_enum! {
    /// BHLI octet 5: the kind of high-layer information.
    pub enum BhliType: u8 {
        /// ISO (0).
        Iso = 0,
        /// User-specific (1).
        User = 1,
        /// High-layer profile (2, UNI 3.0).
        Profile = 2,
        /// Vendor-specific application identifier (3).
        Vendor = 3,
    }
}

/// Broadband high-layer information.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Bhli {
    /// The kind.
    pub kind: BhliType,
    /// The information, at most 8 bytes (vendor: OUI 3 + application id 4).
    pub info: Vec<u8>,
}

/// Most bytes of BHLI information.
const BHLI_MAX: usize = 8;

impl IeCodec for Bhli {
    const ID: IeId = IeId::Bhli;

    fn parse_contents(b: &[u8]) -> Result<Bhli, IeErrorKind> {
        let mut r = Reader::new(b);
        let o5 = r.u8()?;
        if o5 & 0x80 == 0 {
            return Err(IeErrorKind::Invalid("octet 5 extension bit"));
        }
        let info = r.rest();
        if info.len() > BHLI_MAX {
            return Err(IeErrorKind::BadLength);
        }
        Ok(Bhli {
            kind: BhliType::from_code(o5 & 0x7F),
            info: info.to_vec(),
        })
    }

    fn contents_len(&self) -> usize {
        1 + self.info.len()
    }

    fn emit_contents(&self, buf: &mut [u8]) {
        let mut w = Writer::new(buf);
        w.u8(0x80 | (self.kind.code() & 0x7F));
        w.bytes(&self.info);
    }
}

impl fmt::Display for Bhli {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            BhliType::Unknown(v) => write!(f, "type-{v}")?,
            k => write!(f, "{k:?}")?,
        }
        f.write_str(" ")?;
        hex(f, &self.info)
    }
}

/// One BLLI layer: its protocol and the extension octets after the layer octet.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlliLayer {
    /// User information layer protocol (5 bits): e.g. layer 2 0x0C is ISO 8802/2 LLC,
    /// layer 3 0x0B is ISO/IEC TR 9577.
    pub protocol: u8,
    /// The octets after the layer octet (6a, 6b, … or 7a, 7b, …), as received: every one
    /// but the last has the extension bit clear, the last has it set. Empty when the layer
    /// octet is alone.
    pub more: Vec<u8>,
}

impl BlliLayer {
    /// A layer with no extension octets.
    pub const fn new(protocol: u8) -> BlliLayer {
        BlliLayer {
            protocol,
            more: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        1 + self.more.len()
    }

    fn emit(&self, w: &mut Writer<'_>, layer: u8) {
        let ext = if self.more.is_empty() { 0x80 } else { 0 };
        w.u8(ext | (layer << 5) | (self.protocol & 0x1F));
        w.bytes(&self.more);
    }

    /// For layer 3 ISO/IEC TR 9577 (0x0B): the initial protocol identifier from octets
    /// 7a and 7b.
    pub fn ipi(&self) -> Option<u8> {
        match self.more[..] {
            [a, b] if self.protocol == 0x0B => Some((a << 1) | ((b >> 6) & 1)),
            _ => None,
        }
    }
}

/// Broadband low-layer information (up to three in a SETUP).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Blli {
    /// Layer 1 protocol (5 bits).
    pub layer1: Option<u8>,
    /// Layer 2.
    pub layer2: Option<BlliLayer>,
    /// Layer 3.
    pub layer3: Option<BlliLayer>,
    /// SNAP OUI (3) and PID (2) of octet 8.
    pub snap: Option<[u8; 5]>,
}

impl Blli {
    /// Layer 2 ISO 8802/2 LLC alone (`5f 80 00 01 cc`), as RFC 1755 classical IP uses.
    pub fn llc() -> Blli {
        Blli {
            layer2: Some(BlliLayer::new(0x0C)),
            ..Blli::default()
        }
    }
}

impl IeCodec for Blli {
    const ID: IeId = IeId::Blli;

    fn parse_contents(b: &[u8]) -> Result<Blli, IeErrorKind> {
        let mut r = Reader::new(b);
        let mut out = Blli::default();
        let mut stage = 0u8;
        while let Some(first) = r.peek() {
            r.u8()?;
            let layer = (first >> 5) & 3;
            if layer == 0 {
                if first != 0x80 || out.snap.is_some() {
                    return Err(IeErrorKind::Invalid("octet 8 (SNAP)"));
                }
                let s = r.bytes(5)?;
                out.snap = Some([s[0], s[1], s[2], s[3], s[4]]);
                stage = 4;
                continue;
            }
            if layer <= stage {
                return Err(IeErrorKind::Invalid("layer order"));
            }
            stage = layer;
            let mut more = Vec::new();
            let mut ext = first & 0x80 != 0;
            while !ext {
                let o = r.u8()?;
                more.push(o);
                ext = o & 0x80 != 0;
            }
            let l = BlliLayer {
                protocol: first & 0x1F,
                more,
            };
            match layer {
                1 if l.more.is_empty() => out.layer1 = Some(l.protocol),
                1 => return Err(IeErrorKind::Invalid("layer 1 extension")),
                2 => out.layer2 = Some(l),
                _ => out.layer3 = Some(l),
            }
        }
        Ok(out)
    }

    fn contents_len(&self) -> usize {
        usize::from(self.layer1.is_some())
            + self.layer2.as_ref().map_or(0, BlliLayer::len)
            + self.layer3.as_ref().map_or(0, BlliLayer::len)
            + 6 * usize::from(self.snap.is_some())
    }

    fn emit_contents(&self, buf: &mut [u8]) {
        let mut w = Writer::new(buf);
        if let Some(p) = self.layer1 {
            w.u8(0x80 | (1 << 5) | (p & 0x1F));
        }
        if let Some(l) = &self.layer2 {
            l.emit(&mut w, 2);
        }
        if let Some(l) = &self.layer3 {
            l.emit(&mut w, 3);
        }
        if let Some(s) = &self.snap {
            w.u8(0x80);
            w.bytes(s);
        }
    }
}

impl fmt::Display for Blli {
    /// `l2=0x0c(llc) l3=0x0b[...] snap=00000008 00`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        if let Some(p) = self.layer1 {
            write!(f, "l1=0x{p:02x}")?;
            sep = " ";
        }
        for (n, l) in [(2, &self.layer2), (3, &self.layer3)] {
            if let Some(l) = l {
                write!(f, "{sep}l{n}=0x{:02x}", l.protocol)?;
                if n == 2 && l.protocol == 0x0C {
                    f.write_str("(llc)")?;
                }
                if let Some(ipi) = l.ipi() {
                    write!(f, "(ipi=0x{ipi:02x})")?;
                } else if !l.more.is_empty() {
                    f.write_str("[")?;
                    hex(f, &l.more)?;
                    f.write_str("]")?;
                }
                sep = " ";
            }
        }
        if let Some(s) = &self.snap {
            write!(f, "{sep}snap=")?;
            hex(f, &s[..3])?;
            f.write_str("/")?;
            hex(f, &s[3..])?;
            sep = " ";
        }
        if sep.is_empty() {
            f.write_str("empty")?;
        }
        Ok(())
    }
}

//! ATM traffic descriptor (0x59; Q.2931 §4.5.6, UNI 3.1 §5.4.5.6, UNI 4.0 §4.4), also the
//! contents format of the minimum acceptable (0x81) and alternative (0x82) ATM traffic
//! descriptors of UNI 4.0.
//!
//! Each subfield is an identifier and a 3-byte cell rate (cells/s) or burst size (cells),
//! except best effort (0xBE, no value) and the traffic-management options (0xBF, 1 byte).
//! natm emits the subfields in ascending identifier order.

use core::fmt;

use super::{IeCodec, IeErrorKind, IeId, Reader, Writer, once};

/// One direction's cell rates (cells/s) and burst sizes (cells), each a 24-bit value.
/// Values above 2²⁴−1 are emitted as their low 24 bits; keep them in range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TrafficDirection {
    /// Peak cell rate for CLP=0 (0x82 / 0x83).
    pub pcr0: Option<u32>,
    /// Peak cell rate for CLP=0+1 (0x84 / 0x85).
    pub pcr01: Option<u32>,
    /// Sustainable cell rate for CLP=0 (0x88 / 0x89).
    pub scr0: Option<u32>,
    /// Sustainable cell rate for CLP=0+1 (0x90 / 0x91).
    pub scr01: Option<u32>,
    /// ABR minimum cell rate (0x92 / 0x93).
    pub abr_mcr: Option<u32>,
    /// Maximum burst size for CLP=0 (0xA0 / 0xA1).
    pub mbs0: Option<u32>,
    /// Maximum burst size for CLP=0+1 (0xB0 / 0xB1).
    pub mbs01: Option<u32>,
}

impl TrafficDirection {
    /// The forward subfield identifiers, in emission order; backward is each plus one.
    const IDS: [u8; 7] = [0x82, 0x84, 0x88, 0x90, 0x92, 0xA0, 0xB0];
    const NAMES: [&'static str; 7] = ["pcr0", "pcr01", "scr0", "scr01", "mcr", "mbs0", "mbs01"];

    fn fields(&self) -> [Option<u32>; 7] {
        [
            self.pcr0,
            self.pcr01,
            self.scr0,
            self.scr01,
            self.abr_mcr,
            self.mbs0,
            self.mbs01,
        ]
    }

    fn field_mut(&mut self, i: usize) -> Option<&mut Option<u32>> {
        Some(match i {
            0 => &mut self.pcr0,
            1 => &mut self.pcr01,
            2 => &mut self.scr0,
            3 => &mut self.scr01,
            4 => &mut self.abr_mcr,
            5 => &mut self.mbs0,
            6 => &mut self.mbs01,
            _ => return None,
        })
    }

    fn count(&self) -> usize {
        self.fields().iter().filter(|v| v.is_some()).count()
    }
}

/// Traffic-management options (subfield 0xBF), kept as the octet so that bits natm does
/// not name survive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TmOptions(pub u8);

impl TmOptions {
    /// Forward tagging requested.
    pub const FWD_TAGGING: u8 = 0x01;
    /// Backward tagging requested.
    pub const BWD_TAGGING: u8 = 0x02;
    /// Forward frame discard allowed.
    pub const FWD_FRAME_DISCARD: u8 = 0x80;
    /// Backward frame discard allowed.
    pub const BWD_FRAME_DISCARD: u8 = 0x40;

    /// Whether forward tagging is requested.
    pub const fn fwd_tagging(self) -> bool {
        self.0 & Self::FWD_TAGGING != 0
    }
    /// Whether backward tagging is requested.
    pub const fn bwd_tagging(self) -> bool {
        self.0 & Self::BWD_TAGGING != 0
    }
    /// Whether forward frame discard is allowed.
    pub const fn fwd_frame_discard(self) -> bool {
        self.0 & Self::FWD_FRAME_DISCARD != 0
    }
    /// Whether backward frame discard is allowed.
    pub const fn bwd_frame_discard(self) -> bool {
        self.0 & Self::BWD_FRAME_DISCARD != 0
    }
}

/// The ATM traffic descriptor: forward (calling to called) and backward parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TrafficDescriptor {
    /// Forward direction.
    pub fwd: TrafficDirection,
    /// Backward direction.
    pub bwd: TrafficDirection,
    /// Best-effort indicator (0xBE): UBR.
    pub best_effort: bool,
    /// Traffic-management options (0xBF): tagging and frame discard.
    pub options: Option<TmOptions>,
}

const BEST_EFFORT: u8 = 0xBE;
const OPTIONS: u8 = 0xBF;

impl TrafficDescriptor {
    /// The UBR descriptor linux-atm sends: both PCR(CLP=0+1) and best effort.
    pub fn ubr(fwd_pcr01: u32, bwd_pcr01: u32) -> TrafficDescriptor {
        let mut td = TrafficDescriptor {
            best_effort: true,
            ..TrafficDescriptor::default()
        };
        td.fwd.pcr01 = Some(fwd_pcr01);
        td.bwd.pcr01 = Some(bwd_pcr01);
        td
    }
}

impl IeCodec for TrafficDescriptor {
    const ID: IeId = IeId::TrafficDescriptor;

    fn parse_contents(b: &[u8]) -> Result<TrafficDescriptor, IeErrorKind> {
        let mut td = TrafficDescriptor::default();
        let mut r = Reader::new(b);
        let mut best_effort = None;
        while let Some(id) = r.peek() {
            r.u8()?;
            match id {
                BEST_EFFORT => once(&mut best_effort, id, ())?,
                OPTIONS => once(&mut td.options, id, TmOptions(r.u8()?))?,
                _ => {
                    let i = TrafficDirection::IDS
                        .iter()
                        .position(|&f| f == id & !1)
                        .ok_or(IeErrorKind::UnknownSubfield(id))?;
                    let dir = if id & 1 == 0 {
                        &mut td.fwd
                    } else {
                        &mut td.bwd
                    };
                    let slot = dir.field_mut(i).ok_or(IeErrorKind::UnknownSubfield(id))?;
                    once(slot, id, r.u24()?)?;
                }
            }
        }
        td.best_effort = best_effort.is_some();
        Ok(td)
    }

    fn contents_len(&self) -> usize {
        4 * (self.fwd.count() + self.bwd.count())
            + usize::from(self.best_effort)
            + 2 * usize::from(self.options.is_some())
    }

    fn emit_contents(&self, buf: &mut [u8]) {
        let mut w = Writer::new(buf);
        let (f, b) = (self.fwd.fields(), self.bwd.fields());
        for (i, id) in TrafficDirection::IDS.iter().enumerate() {
            for (v, id) in [(f[i], *id), (b[i], id + 1)] {
                if let Some(v) = v {
                    w.u8(id);
                    w.u24(v);
                }
            }
        }
        if self.best_effort {
            w.u8(BEST_EFFORT);
        }
        if let Some(o) = self.options {
            w.u8(OPTIONS);
            w.u8(o.0);
        }
    }
}

impl fmt::Display for TrafficDescriptor {
    /// `fwd pcr01=353207 bwd pcr01=353207 best-effort`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (name, dir) in [("fwd", &self.fwd), ("bwd", &self.bwd)] {
            if dir.count() == 0 {
                continue;
            }
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            f.write_str(name)?;
            for (field, v) in TrafficDirection::NAMES.iter().zip(dir.fields()) {
                if let Some(v) = v {
                    write!(f, " {field}={v}")?;
                }
            }
        }
        let mut sep = |f: &mut fmt::Formatter<'_>| {
            let s = if first { "" } else { " " };
            first = false;
            f.write_str(s)
        };
        if self.best_effort {
            sep(f)?;
            f.write_str("best-effort")?;
        }
        if let Some(o) = self.options {
            sep(f)?;
            write!(f, "options=0x{:02x}", o.0)?;
            for (on, name) in [
                (o.fwd_tagging(), "fwd-tag"),
                (o.bwd_tagging(), "bwd-tag"),
                (o.fwd_frame_discard(), "fwd-fd"),
                (o.bwd_frame_discard(), "bwd-fd"),
            ] {
                if on {
                    write!(f, ",{name}")?;
                }
            }
        }
        if first {
            f.write_str("empty")?;
        }
        Ok(())
    }
}

//! SunATM records (`LINKTYPE_SUNATM`, 123): a 4-byte pseudo-header, then one reassembled
//! AAL SDU, without AAL5 pad or trailer.
//!
//! ```text
//! flags (bit 7 direction, bits 3..0 traffic type) | VPI (8 bits) | VCI (BE16)
//! ```
//!
//! This is the format of SunATM DLPI captures and of the FreeBSD `atmdump` (a modified
//! tcpdump). Traffic types, as Wireshark's `wiretap/pcap-common.c` maps them and as checked
//! with tshark 4.0: 1 LANE, 2 RFC 2684 LLC, 5 ILMI, 6 signalling (SSCOP carrying Q.2931),
//! 3 MARS and 4 IFMP (both dissected as plain AAL5); 0 means "guess", which tshark resolves
//! to signalling on VPI 0 / VCI 5 and otherwise to AAL5 with a look at the first bytes
//! (`AA AA 03` is LLC). Direction: tshark shows bit 7 set as "DTE->DCE" and clear as
//! "DCE->DTE".
//!
//! Not here: bits 6..4 of the flags byte, which no tool assigns; the reader drops them.

use core::fmt;

/// Bytes in the pseudo-header.
pub const HEADER_LEN: usize = 4;
/// The direction bit of the flags byte.
pub const DIRECTION_BIT: u8 = 0x80;

/// The traffic type in the low four bits of the flags byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SunAtmType {
    /// 0: unspecified; readers guess from the VC and the first bytes.
    Guess,
    /// 1: LAN emulation.
    Lane,
    /// 2: RFC 2684 LLC-multiplexed traffic.
    Llc,
    /// 3: MARS (RFC 2022).
    Mars,
    /// 4: IFMP (RFC 1954).
    Ifmp,
    /// 5: ILMI.
    Ilmi,
    /// 6: the signalling AAL: SSCOP carrying Q.2931.
    Qsaal,
    /// 7..=15, unassigned.
    Unknown(u8),
}

impl SunAtmType {
    /// From the low four bits of the flags byte (higher bits ignored).
    pub const fn from_bits(bits: u8) -> SunAtmType {
        match bits & 0x0F {
            0 => SunAtmType::Guess,
            1 => SunAtmType::Lane,
            2 => SunAtmType::Llc,
            3 => SunAtmType::Mars,
            4 => SunAtmType::Ifmp,
            5 => SunAtmType::Ilmi,
            6 => SunAtmType::Qsaal,
            b => SunAtmType::Unknown(b),
        }
    }

    /// The four bits (an `Unknown` value is masked to four bits).
    pub const fn bits(self) -> u8 {
        match self {
            SunAtmType::Guess => 0,
            SunAtmType::Lane => 1,
            SunAtmType::Llc => 2,
            SunAtmType::Mars => 3,
            SunAtmType::Ifmp => 4,
            SunAtmType::Ilmi => 5,
            SunAtmType::Qsaal => 6,
            SunAtmType::Unknown(b) => b & 0x0F,
        }
    }
}

impl fmt::Display for SunAtmType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SunAtmType::Guess => f.write_str("guess"),
            SunAtmType::Lane => f.write_str("lane"),
            SunAtmType::Llc => f.write_str("llc"),
            SunAtmType::Mars => f.write_str("mars"),
            SunAtmType::Ifmp => f.write_str("ifmp"),
            SunAtmType::Ilmi => f.write_str("ilmi"),
            SunAtmType::Qsaal => f.write_str("qsaal"),
            SunAtmType::Unknown(b) => write!(f, "type {b}"),
        }
    }
}

/// Which way a SunATM record went, from bit 7 of the flags byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Bit 7 clear; tshark shows "DCE->DTE" (towards this host).
    #[default]
    DceToDte,
    /// Bit 7 set; tshark shows "DTE->DCE" (from this host).
    DteToDce,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::DceToDte => "dce->dte",
            Direction::DteToDce => "dte->dce",
        })
    }
}

/// The flags byte for a type and direction.
pub const fn flags(kind: SunAtmType, direction: Direction) -> u8 {
    let dir = match direction {
        Direction::DceToDte => 0,
        Direction::DteToDce => DIRECTION_BIT,
    };
    dir | kind.bits()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_codes() {
        for b in 0..16 {
            assert_eq!(SunAtmType::from_bits(b).bits(), b);
        }
        assert_eq!(SunAtmType::from_bits(0x86), SunAtmType::Qsaal);
        assert_eq!(flags(SunAtmType::Llc, Direction::DteToDce), 0x82);
        assert_eq!(flags(SunAtmType::Unknown(0x1F), Direction::DceToDte), 0x0F);
    }
}

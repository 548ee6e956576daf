//! RFC 2684 (formerly RFC 1483) multiprotocol encapsulation over AAL5.
//!
//! Two methods: **LLC encapsulation**, where an IEEE 802.2 LLC header (usually LLC/SNAP
//! `AA AA 03` + OUI + PID) names the protocol of each SDU, and **VC multiplexing**, where the
//! VC itself names it (routed: the bare packet; bridged: two pad bytes, then the frame).
//! [`LlcHeader`] parses and emits the LLC forms; [`Encapsulation`] applies either method to an
//! SDU. VC-mux cannot be recognised from the bytes alone: it is configuration.
//!
//! Not here: IP forwarding, ATMARP tables (natm-ipoa).

use core::fmt;

use crate::cell::Truncated;

/// The LLC header of a SNAP PDU.
pub const LLC_SNAP: [u8; 3] = [0xAA, 0xAA, 0x03];
/// The LLC header of routed ISO PDUs (followed by an NLPID).
pub const LLC_ISO: [u8; 3] = [0xFE, 0xFE, 0x03];
/// OUI for routed protocols identified by EtherType.
pub const OUI_ETHERTYPE: [u8; 3] = [0x00, 0x00, 0x00];
/// OUI for bridged media (IEEE 802.1).
pub const OUI_8021: [u8; 3] = [0x00, 0x80, 0xC2];

/// EtherType values natm names.
pub mod ethertype {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// ARP (and ATMARP, RFC 2225).
    pub const ARP: u16 = 0x0806;
    /// IPv6.
    pub const IPV6: u16 = 0x86DD;
}

/// Bridged-media PIDs under OUI 00-80-C2 (RFC 2684 §5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BridgedPid {
    /// 802.3 / Ethernet; `fcs` tells whether the frame keeps its FCS (PID 0x0001 vs 0x0007).
    Ethernet {
        /// The LAN FCS is preserved.
        fcs: bool,
    },
    /// 802.4 (0x0002 / 0x0008).
    TokenBus {
        /// The LAN FCS is preserved.
        fcs: bool,
    },
    /// 802.5 (0x0003 / 0x0009).
    TokenRing {
        /// The LAN FCS is preserved.
        fcs: bool,
    },
    /// FDDI (0x0004 / 0x000A).
    Fddi {
        /// The LAN FCS is preserved.
        fcs: bool,
    },
    /// 802.6 (0x0005 / 0x000B).
    Dqdb {
        /// The LAN FCS is preserved.
        fcs: bool,
    },
    /// 802.6 fragments (0x000D).
    Fragments,
    /// 802.1D BPDU (0x000E).
    Bpdu,
    /// Source-routing BPDU (0x000F).
    SrBpdu,
    /// Any other PID.
    Unknown(u16),
}

impl BridgedPid {
    /// From the PID value.
    pub fn from_u16(pid: u16) -> BridgedPid {
        match pid {
            0x0001 | 0x0007 => BridgedPid::Ethernet { fcs: pid == 0x0001 },
            0x0002 | 0x0008 => BridgedPid::TokenBus { fcs: pid == 0x0002 },
            0x0003 | 0x0009 => BridgedPid::TokenRing { fcs: pid == 0x0003 },
            0x0004 | 0x000A => BridgedPid::Fddi { fcs: pid == 0x0004 },
            0x0005 | 0x000B => BridgedPid::Dqdb { fcs: pid == 0x0005 },
            0x000D => BridgedPid::Fragments,
            0x000E => BridgedPid::Bpdu,
            0x000F => BridgedPid::SrBpdu,
            other => BridgedPid::Unknown(other),
        }
    }

    /// The PID value.
    pub fn to_u16(self) -> u16 {
        let pick = |fcs: bool, with: u16, without: u16| if fcs { with } else { without };
        match self {
            BridgedPid::Ethernet { fcs } => pick(fcs, 0x0001, 0x0007),
            BridgedPid::TokenBus { fcs } => pick(fcs, 0x0002, 0x0008),
            BridgedPid::TokenRing { fcs } => pick(fcs, 0x0003, 0x0009),
            BridgedPid::Fddi { fcs } => pick(fcs, 0x0004, 0x000A),
            BridgedPid::Dqdb { fcs } => pick(fcs, 0x0005, 0x000B),
            BridgedPid::Fragments => 0x000D,
            BridgedPid::Bpdu => 0x000E,
            BridgedPid::SrBpdu => 0x000F,
            BridgedPid::Unknown(p) => p,
        }
    }

    /// Pad bytes between the PID and the bridged frame (RFC 2684 §5.2 figures): 2 before
    /// an 802.3 frame, 1 before 802.4/802.5 (which then start with frame control), 3 before
    /// FDDI, none otherwise.
    pub fn pad_len(self) -> usize {
        match self {
            BridgedPid::Ethernet { .. } => 2,
            BridgedPid::TokenBus { .. } | BridgedPid::TokenRing { .. } => 1,
            BridgedPid::Fddi { .. } => 3,
            _ => 0,
        }
    }
}

/// A parsed RFC 2684 LLC header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LlcHeader {
    /// Routed non-ISO protocol: `AA AA 03 00 00 00` + EtherType.
    Routed {
        /// The EtherType.
        ethertype: u16,
    },
    /// Bridged medium: `AA AA 03 00 80 C2` + PID + pad.
    Bridged {
        /// The medium.
        pid: BridgedPid,
    },
    /// Routed ISO protocol: `FE FE 03` + NLPID.
    Iso {
        /// Network layer protocol ID (e.g. 0x81 CLNP).
        nlpid: u8,
    },
    /// SNAP with another OUI.
    Snap {
        /// Organisation.
        oui: [u8; 3],
        /// Protocol within it.
        pid: u16,
    },
}

/// An SDU that does not start with a header natm understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlcError {
    /// Too short for the header it starts.
    Truncated(Truncated),
    /// Neither LLC/SNAP (`AA AA 03`) nor ISO (`FE FE 03`).
    NotLlc {
        /// The first (up to) three bytes.
        start: [u8; 3],
    },
}

impl fmt::Display for LlcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LlcError::Truncated(t) => write!(f, "LLC header {t}"),
            LlcError::NotLlc { start } => {
                write!(
                    f,
                    "not an RFC 2684 LLC header: starts {:02x} {:02x} {:02x}",
                    start[0], start[1], start[2]
                )
            }
        }
    }
}

impl core::error::Error for LlcError {}

impl LlcHeader {
    /// LLC/SNAP routed IPv4.
    pub const IPV4: LlcHeader = LlcHeader::Routed {
        ethertype: ethertype::IPV4,
    };
    /// LLC/SNAP routed IPv6.
    pub const IPV6: LlcHeader = LlcHeader::Routed {
        ethertype: ethertype::IPV6,
    };
    /// LLC/SNAP ATMARP.
    pub const ARP: LlcHeader = LlcHeader::Routed {
        ethertype: ethertype::ARP,
    };

    /// Parse the header at the start of `sdu`; returns it and the offset of the payload.
    pub fn parse(sdu: &[u8]) -> Result<(LlcHeader, usize), LlcError> {
        let need = |n: usize| {
            if sdu.len() < n {
                Err(LlcError::Truncated(Truncated {
                    needed: n,
                    got: sdu.len(),
                }))
            } else {
                Ok(())
            }
        };
        need(3)?;
        let start = [sdu[0], sdu[1], sdu[2]];
        if start == LLC_ISO {
            need(4)?;
            return Ok((LlcHeader::Iso { nlpid: sdu[3] }, 4));
        }
        if start != LLC_SNAP {
            return Err(LlcError::NotLlc { start });
        }
        need(8)?;
        let oui = [sdu[3], sdu[4], sdu[5]];
        let pid = u16::from_be_bytes([sdu[6], sdu[7]]);
        let header = match oui {
            OUI_ETHERTYPE => LlcHeader::Routed { ethertype: pid },
            OUI_8021 => LlcHeader::Bridged {
                pid: BridgedPid::from_u16(pid),
            },
            _ => LlcHeader::Snap { oui, pid },
        };
        let len = header.buffer_len();
        need(len)?;
        Ok((header, len))
    }

    /// Bytes of header, pad included.
    pub fn buffer_len(&self) -> usize {
        match self {
            LlcHeader::Iso { .. } => 4,
            LlcHeader::Bridged { pid } => 8 + pid.pad_len(),
            LlcHeader::Routed { .. } | LlcHeader::Snap { .. } => 8,
        }
    }

    /// Write the header into the start of `buf` (at least [`buffer_len`](Self::buffer_len)
    /// bytes; panics otherwise). Pad bytes are zero.
    pub fn emit(&self, buf: &mut [u8]) {
        let (oui, pid) = match *self {
            LlcHeader::Iso { nlpid } => {
                buf[..3].copy_from_slice(&LLC_ISO);
                buf[3] = nlpid;
                return;
            }
            LlcHeader::Routed { ethertype } => (OUI_ETHERTYPE, ethertype),
            LlcHeader::Bridged { pid } => (OUI_8021, pid.to_u16()),
            LlcHeader::Snap { oui, pid } => (oui, pid),
        };
        buf[..3].copy_from_slice(&LLC_SNAP);
        buf[3..6].copy_from_slice(&oui);
        buf[6..8].copy_from_slice(&pid.to_be_bytes());
        buf[8..self.buffer_len()].fill(0);
    }
}

impl fmt::Display for LlcHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LlcHeader::Routed {
                ethertype: ethertype::IPV4,
            } => f.write_str("llc ipv4"),
            LlcHeader::Routed {
                ethertype: ethertype::IPV6,
            } => f.write_str("llc ipv6"),
            LlcHeader::Routed {
                ethertype: ethertype::ARP,
            } => f.write_str("llc arp"),
            LlcHeader::Routed { ethertype } => write!(f, "llc ethertype {ethertype:#06x}"),
            LlcHeader::Bridged {
                pid: BridgedPid::Ethernet { fcs },
            } => {
                write!(f, "llc bridged 802.3{}", if fcs { " with fcs" } else { "" })
            }
            LlcHeader::Bridged { pid } => write!(f, "llc bridged pid {:#06x}", pid.to_u16()),
            LlcHeader::Iso { nlpid } => write!(f, "llc iso nlpid {nlpid:#04x}"),
            LlcHeader::Snap { oui, pid } => {
                write!(
                    f,
                    "llc snap oui {:02x}{:02x}{:02x} pid {pid:#06x}",
                    oui[0], oui[1], oui[2]
                )
            }
        }
    }
}

/// How a VC carries packets (RFC 2684 §5 and §6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Encapsulation {
    /// LLC encapsulation: every SDU starts with an LLC header (the default for IP, RFC 2225).
    #[default]
    Llc,
    /// VC multiplexing of one routed protocol: the SDU is the packet.
    VcMuxRouted,
    /// VC multiplexing of bridged 802.3: two zero pad bytes, then the frame.
    VcMuxBridged,
}

/// What an SDU carries once decapsulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decapsulated<'a> {
    /// The LLC header, for LLC encapsulation.
    pub header: Option<LlcHeader>,
    /// The packet or frame.
    pub payload: &'a [u8],
}

impl Encapsulation {
    /// Header bytes this method puts in front of a packet with `header` (ignored for VC-mux).
    pub fn overhead(self, header: LlcHeader) -> usize {
        match self {
            Encapsulation::Llc => header.buffer_len(),
            Encapsulation::VcMuxRouted => 0,
            Encapsulation::VcMuxBridged => 2,
        }
    }

    /// Split an SDU into its header and payload.
    pub fn decapsulate(self, sdu: &[u8]) -> Result<Decapsulated<'_>, LlcError> {
        match self {
            Encapsulation::Llc => {
                let (h, off) = LlcHeader::parse(sdu)?;
                Ok(Decapsulated {
                    header: Some(h),
                    payload: &sdu[off..],
                })
            }
            Encapsulation::VcMuxRouted => Ok(Decapsulated {
                header: None,
                payload: sdu,
            }),
            Encapsulation::VcMuxBridged => match sdu.get(2..) {
                Some(p) => Ok(Decapsulated {
                    header: None,
                    payload: p,
                }),
                None => Err(LlcError::Truncated(Truncated {
                    needed: 2,
                    got: sdu.len(),
                })),
            },
        }
    }

    /// Append the encapsulated packet to `out`: header (for LLC), pad, then `payload`.
    pub fn encapsulate(self, header: LlcHeader, payload: &[u8], out: &mut alloc::vec::Vec<u8>) {
        let start = out.len();
        let n = self.overhead(header);
        out.resize(start + n, 0);
        if self == Encapsulation::Llc {
            header.emit(&mut out[start..]);
        }
        out.extend_from_slice(payload);
    }
}

/// What Wireshark would guess an SDU to be when the VC's encapsulation is unknown:
/// `AA AA 03`/`FE FE 03` is LLC, a first 16 bits of zero is VC-mux bridged, and a first
/// nibble of 4 or 6 is a raw IP packet (VC-mux routed).
pub fn guess(sdu: &[u8]) -> Option<Encapsulation> {
    match sdu {
        [0xAA, 0xAA, 0x03, ..] | [0xFE, 0xFE, 0x03, ..] => Some(Encapsulation::Llc),
        [0, 0, ..] => Some(Encapsulation::VcMuxBridged),
        [b, ..] if b >> 4 == 4 || b >> 4 == 6 => Some(Encapsulation::VcMuxRouted),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    /// The 28-byte IPv4 ICMP echo 192.168.0.1 → 192.168.0.2 behind the fact sheet's vectors.
    const ICMP_ECHO: [u8; 28] = [
        0x45, 0x00, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x01, 0xf9, 0x8c, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0x02, 0x08, 0x00, 0xf7, 0xff, 0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn routed_icmp_vector() {
        // atm-facts.md §2.3/§7.1: LLC/SNAP routed IPv4, a 36-byte SDU with trailer 00 00 00 24 d5 a2 67 cd.
        let mut sdu = Vec::new();
        Encapsulation::Llc.encapsulate(LlcHeader::IPV4, &ICMP_ECHO, &mut sdu);
        assert_eq!(sdu.len(), 36);
        assert_eq!(
            crate::aal5::trailer_for(&sdu, 0, 0).unwrap().to_bytes(),
            [0, 0, 0, 0x24, 0xd5, 0xa2, 0x67, 0xcd]
        );
        let d = Encapsulation::Llc.decapsulate(&sdu).unwrap();
        assert_eq!(
            (d.header, d.payload),
            (Some(LlcHeader::IPV4), &ICMP_ECHO[..])
        );
    }

    #[test]
    fn header_vectors() {
        // atm-facts.md §7.1.
        let cases: &[(LlcHeader, &[u8])] = &[
            (LlcHeader::IPV4, &[0xAA, 0xAA, 0x03, 0, 0, 0, 0x08, 0x00]),
            (LlcHeader::IPV6, &[0xAA, 0xAA, 0x03, 0, 0, 0, 0x86, 0xDD]),
            (LlcHeader::ARP, &[0xAA, 0xAA, 0x03, 0, 0, 0, 0x08, 0x06]),
            (LlcHeader::Iso { nlpid: 0x81 }, &[0xFE, 0xFE, 0x03, 0x81]),
            (
                LlcHeader::Bridged {
                    pid: BridgedPid::Ethernet { fcs: false },
                },
                &[0xAA, 0xAA, 0x03, 0x00, 0x80, 0xC2, 0x00, 0x07, 0x00, 0x00],
            ),
            (
                LlcHeader::Bridged {
                    pid: BridgedPid::Ethernet { fcs: true },
                },
                &[0xAA, 0xAA, 0x03, 0x00, 0x80, 0xC2, 0x00, 0x01, 0x00, 0x00],
            ),
        ];
        for &(h, bytes) in cases {
            let mut buf = vec![0xa5; h.buffer_len()];
            h.emit(&mut buf);
            assert_eq!(buf, bytes, "{h}");
            assert_eq!(LlcHeader::parse(bytes), Ok((h, bytes.len())));
        }
    }

    #[test]
    fn bridged_pids() {
        for (with, without) in [(1, 7), (2, 8), (3, 9), (4, 0xA), (5, 0xB)] {
            assert_eq!(BridgedPid::from_u16(with).to_u16(), with);
            assert_eq!(BridgedPid::from_u16(without).to_u16(), without);
        }
        assert_eq!(BridgedPid::from_u16(0x000E), BridgedPid::Bpdu);
        assert_eq!(BridgedPid::from_u16(0x1234), BridgedPid::Unknown(0x1234));
    }

    #[test]
    fn bridged_ethernet_sdu_vectors() {
        // atm-facts.md §7.1: a 60-byte Ethernet frame (02:00:00:00:00:01 → :02 carrying the
        // §2.3 ICMP echo, zero-padded) is a 70-byte LLC SDU with AAL5 CRC 0x7743AFAA and a
        // 62-byte VC-mux bridged SDU with CRC 0xF7A7B5C4.
        let mut frame = Vec::new();
        frame.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
        frame.extend_from_slice(&ICMP_ECHO);
        frame.resize(60, 0);
        let mut llc = Vec::new();
        Encapsulation::Llc.encapsulate(
            LlcHeader::Bridged {
                pid: BridgedPid::Ethernet { fcs: false },
            },
            &frame,
            &mut llc,
        );
        assert_eq!(llc.len(), 70);
        assert_eq!(
            crate::aal5::trailer_for(&llc, 0, 0).unwrap().crc,
            0x7743_AFAA
        );
        assert_eq!(
            Encapsulation::Llc.decapsulate(&llc).unwrap().payload,
            &frame[..]
        );
        let mut mux = Vec::new();
        Encapsulation::VcMuxBridged.encapsulate(LlcHeader::IPV4, &frame, &mut mux);
        assert_eq!(mux.len(), 62);
        assert_eq!(
            crate::aal5::trailer_for(&mux, 0, 0).unwrap().crc,
            0xF7A7_B5C4
        );
        assert_eq!(&mux[..2], &[0, 0]);
        assert_eq!(guess(&mux), Some(Encapsulation::VcMuxBridged));
        assert_eq!(guess(&llc), Some(Encapsulation::Llc));
        assert_eq!(guess(&[0x45, 0]), Some(Encapsulation::VcMuxRouted));
        assert_eq!(guess(&[0x60]), Some(Encapsulation::VcMuxRouted));
        assert_eq!(guess(&[0x12]), None);
    }

    #[test]
    fn malformed() {
        assert_eq!(
            LlcHeader::parse(&[0xAA, 0xAA]),
            Err(LlcError::Truncated(Truncated { needed: 3, got: 2 }))
        );
        assert_eq!(
            LlcHeader::parse(&[0xAA, 0xAA, 0x03, 0, 0]),
            Err(LlcError::Truncated(Truncated { needed: 8, got: 5 }))
        );
        assert_eq!(
            LlcHeader::parse(&[0xAA, 0xAA, 0x03, 0x00, 0x80, 0xC2, 0x00, 0x07, 0x00]),
            Err(LlcError::Truncated(Truncated { needed: 10, got: 9 }))
        );
        assert_eq!(
            LlcHeader::parse(&[0x45, 0x00, 0x00, 0x1c]),
            Err(LlcError::NotLlc {
                start: [0x45, 0, 0]
            })
        );
        assert!(Encapsulation::VcMuxBridged.decapsulate(&[0]).is_err());
        assert_eq!(
            LlcError::NotLlc {
                start: [0x45, 0, 0]
            }
            .to_string(),
            "not an RFC 2684 LLC header: starts 45 00 00"
        );
    }

    proptest! {
        #[test]
        fn round_trip(kind in 0u8..4, ethertype: u16, pid: u16, nlpid: u8, oui: [u8; 3], payload in proptest::collection::vec(any::<u8>(), 0..64)) {
            let h = match kind {
                0 => LlcHeader::Routed { ethertype },
                1 => LlcHeader::Bridged { pid: BridgedPid::from_u16(pid) },
                2 => LlcHeader::Iso { nlpid },
                _ if oui != OUI_ETHERTYPE && oui != OUI_8021 => LlcHeader::Snap { oui, pid },
                _ => LlcHeader::IPV6,
            };
            let mut sdu = Vec::new();
            Encapsulation::Llc.encapsulate(h, &payload, &mut sdu);
            let d = Encapsulation::Llc.decapsulate(&sdu).unwrap();
            prop_assert_eq!(d.header, Some(h));
            prop_assert_eq!(d.payload, &payload[..]);
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..16)) {
            if let Ok((h, off)) = LlcHeader::parse(&bytes) {
                prop_assert!(off <= bytes.len());
                prop_assert_eq!(off, h.buffer_len());
            }
        }
    }
}

//! ATMARP and InATMARP packets of classical IP over ATM (RFC 2225 §8.7, RFC 2390).
//!
//! ```text
//! ar$hrd 2 (0x0013)  ar$pro 2 (0x0800)  ar$shtl 1  ar$sstl 1  ar$op 2
//! ar$spln 1  ar$thtl 1  ar$tstl 1  ar$tpln 1
//! ar$sha  ar$ssa  ar$spa  ar$tha  ar$tsa  ar$tpa   (each as long as its length field says)
//! ```
//! A "type & length" byte holds the number's kind in bit 6 (0 ATM Forum NSAPA, 1 E.164) and
//! its length in bits 5..0. The packet travels behind the LLC/SNAP header
//! `AA AA 03 00 00 00 08 06` ([`crate::llc::LlcHeader::ARP`]).
//!
//! Not here: the ATMARP client and server state (natm-ipoa).

use alloc::vec::Vec;
use core::fmt;

use crate::cell::Truncated;

/// ar$hrd for ATM (ARPHRD_ATM2225).
pub const HRD_ATM: u16 = 0x0013;
/// Bytes before the variable fields.
pub const FIXED_LEN: usize = 12;

/// The operation (ar$op); an open set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// ATMARP request (1).
    Request,
    /// ATMARP reply (2).
    Reply,
    /// InATMARP request (8).
    InRequest,
    /// InATMARP reply (9).
    InReply,
    /// ATMARP NAK (10): the request sent back, address unknown.
    Nak,
    /// Any other code.
    Unknown(u16),
}

impl Op {
    /// From ar$op.
    pub fn from_u16(v: u16) -> Op {
        match v {
            1 => Op::Request,
            2 => Op::Reply,
            8 => Op::InRequest,
            9 => Op::InReply,
            10 => Op::Nak,
            v => Op::Unknown(v),
        }
    }

    /// ar$op.
    pub fn to_u16(self) -> u16 {
        match self {
            Op::Request => 1,
            Op::Reply => 2,
            Op::InRequest => 8,
            Op::InReply => 9,
            Op::Nak => 10,
            Op::Unknown(v) => v,
        }
    }
}

/// An ATM number or subaddress field: its kind and bytes (up to 63).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct AtmNumber {
    /// `true` for E.164, `false` for an ATM Forum NSAP address.
    pub e164: bool,
    /// The address bytes; empty when the field is absent.
    pub bytes: Vec<u8>,
}

impl AtmNumber {
    /// An NSAP-format address.
    pub fn nsap(bytes: &[u8]) -> AtmNumber {
        AtmNumber {
            e164: false,
            bytes: bytes.to_vec(),
        }
    }

    fn type_len(&self) -> Result<u8, AtmArpError> {
        let n = self.bytes.len();
        if n > 0x3F {
            return Err(AtmArpError::FieldTooLong { len: n, max: 0x3F });
        }
        Ok((u8::from(self.e164) << 6) | n as u8)
    }
}

/// A parsed ATMARP packet.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AtmArpRepr {
    /// ar$pro (0x0800 for IPv4).
    pub protocol: u16,
    /// ar$op.
    pub op: Op,
    /// Source ATM number.
    pub sha: AtmNumber,
    /// Source ATM subaddress.
    pub ssa: AtmNumber,
    /// Source protocol address.
    pub spa: Vec<u8>,
    /// Target ATM number.
    pub tha: AtmNumber,
    /// Target ATM subaddress.
    pub tsa: AtmNumber,
    /// Target protocol address.
    pub tpa: Vec<u8>,
}

/// Why an ATMARP packet was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtmArpError {
    /// Shorter than its length fields say.
    Truncated(Truncated),
    /// ar$hrd is not ATM.
    Hardware(u16),
    /// Bit 7 of a type & length byte is set (reserved).
    ReservedBit {
        /// Offset of the byte.
        offset: usize,
    },
    /// A field is longer than its length byte can say (emit).
    FieldTooLong {
        /// Bytes given.
        len: usize,
        /// The limit.
        max: usize,
    },
}

impl fmt::Display for AtmArpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AtmArpError::Truncated(t) => write!(f, "ATMARP packet {t}"),
            AtmArpError::Hardware(h) => {
                write!(f, "ATMARP hardware type {h:#06x} is not ATM (0x0013)")
            }
            AtmArpError::ReservedBit { offset } => {
                write!(
                    f,
                    "ATMARP type & length byte at offset {offset} has the reserved bit set"
                )
            }
            AtmArpError::FieldTooLong { len, max } => {
                write!(f, "ATMARP address field of {len} bytes exceeds {max}")
            }
        }
    }
}

impl core::error::Error for AtmArpError {}

impl AtmArpRepr {
    /// Parse a packet (the bytes after the LLC/SNAP header). Trailing bytes are ignored.
    pub fn parse(b: &[u8]) -> Result<AtmArpRepr, AtmArpError> {
        let truncated = |needed| {
            AtmArpError::Truncated(Truncated {
                needed,
                got: b.len(),
            })
        };
        if b.len() < FIXED_LEN {
            return Err(truncated(FIXED_LEN));
        }
        let hrd = u16::from_be_bytes([b[0], b[1]]);
        if hrd != HRD_ATM {
            return Err(AtmArpError::Hardware(hrd));
        }
        let tl = |offset: usize| -> Result<(bool, usize), AtmArpError> {
            let v = b[offset];
            if v & 0x80 != 0 {
                return Err(AtmArpError::ReservedBit { offset });
            }
            Ok((v & 0x40 != 0, usize::from(v & 0x3F)))
        };
        let (sh_e164, shl) = tl(4)?;
        let (ss_e164, ssl) = tl(5)?;
        let spl = usize::from(b[8]);
        let (th_e164, thl) = tl(9)?;
        let (ts_e164, tsl) = tl(10)?;
        let tpl = usize::from(b[11]);
        let total = FIXED_LEN + shl + ssl + spl + thl + tsl + tpl;
        if b.len() < total {
            return Err(truncated(total));
        }
        let mut at = FIXED_LEN;
        let mut take = |n: usize| {
            let v = b[at..at + n].to_vec();
            at += n;
            v
        };
        Ok(AtmArpRepr {
            protocol: u16::from_be_bytes([b[2], b[3]]),
            op: Op::from_u16(u16::from_be_bytes([b[6], b[7]])),
            sha: AtmNumber {
                e164: sh_e164,
                bytes: take(shl),
            },
            ssa: AtmNumber {
                e164: ss_e164,
                bytes: take(ssl),
            },
            spa: take(spl),
            tha: AtmNumber {
                e164: th_e164,
                bytes: take(thl),
            },
            tsa: AtmNumber {
                e164: ts_e164,
                bytes: take(tsl),
            },
            tpa: take(tpl),
        })
    }

    /// Bytes of the encoded packet.
    pub fn buffer_len(&self) -> usize {
        FIXED_LEN
            + self.sha.bytes.len()
            + self.ssa.bytes.len()
            + self.spa.len()
            + self.tha.bytes.len()
            + self.tsa.bytes.len()
            + self.tpa.len()
    }

    /// Append the encoded packet to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) -> Result<(), AtmArpError> {
        let plen = |v: &Vec<u8>| {
            u8::try_from(v.len()).map_err(|_| AtmArpError::FieldTooLong {
                len: v.len(),
                max: 255,
            })
        };
        let fixed = [
            HRD_ATM.to_be_bytes(),
            self.protocol.to_be_bytes(),
            [self.sha.type_len()?, self.ssa.type_len()?],
            self.op.to_u16().to_be_bytes(),
            [plen(&self.spa)?, self.tha.type_len()?],
            [self.tsa.type_len()?, plen(&self.tpa)?],
        ];
        out.reserve(self.buffer_len());
        for pair in fixed {
            out.extend_from_slice(&pair);
        }
        for field in [
            &self.sha.bytes,
            &self.ssa.bytes,
            &self.spa,
            &self.tha.bytes,
            &self.tsa.bytes,
            &self.tpa,
        ] {
            out.extend_from_slice(field);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llc::{Encapsulation, LlcHeader};
    use proptest::prelude::*;

    const AESA: [u8; 20] = [
        0x47, 0x00, 0x05, 0x80, 0xff, 0xe1, 0x00, 0x00, 0x00, 0xf2, 0x1a, 0x3d, 0x5c, 0x00, 0x20,
        0x48, 0x1b, 0x00, 0x01, 0x00,
    ];

    #[test]
    fn request_vector() {
        // atm-facts.md §7.2, decoded by Wireshark as "ATM Address Resolution Protocol (request)";
        // a 48-byte SDU with AAL5 trailer 00 00 00 30 f3 45 d2 6d.
        let repr = AtmArpRepr {
            protocol: 0x0800,
            op: Op::Request,
            sha: AtmNumber::nsap(&AESA),
            ssa: AtmNumber::default(),
            spa: vec![10, 0, 0, 1],
            tha: AtmNumber::default(),
            tsa: AtmNumber::default(),
            tpa: vec![10, 0, 0, 2],
        };
        let mut packet = Vec::new();
        repr.emit(&mut packet).unwrap();
        assert_eq!(
            &packet[..12],
            &[
                0x00, 0x13, 0x08, 0x00, 0x14, 0x00, 0x00, 0x01, 0x04, 0x00, 0x00, 0x04
            ]
        );
        let mut sdu = Vec::new();
        Encapsulation::Llc.encapsulate(LlcHeader::ARP, &packet, &mut sdu);
        assert_eq!(sdu.len(), 48);
        assert_eq!(&sdu[..8], &[0xaa, 0xaa, 0x03, 0x00, 0x00, 0x00, 0x08, 0x06]);
        assert_eq!(
            crate::aal5::trailer_for(&sdu, 0, 0).unwrap().to_bytes(),
            [0, 0, 0, 0x30, 0xf3, 0x45, 0xd2, 0x6d]
        );
        assert_eq!(AtmArpRepr::parse(&packet), Ok(repr));
    }

    #[test]
    fn malformed() {
        assert!(matches!(
            AtmArpRepr::parse(&[0; 11]),
            Err(AtmArpError::Truncated(_))
        ));
        let mut p = vec![0x00, 0x01, 0x08, 0x00, 0, 0, 0, 1, 4, 0, 0, 4];
        assert_eq!(AtmArpRepr::parse(&p), Err(AtmArpError::Hardware(1)));
        p[1] = 0x13;
        assert_eq!(
            AtmArpRepr::parse(&p),
            Err(AtmArpError::Truncated(Truncated {
                needed: 20,
                got: 12
            }))
        );
        p[4] = 0x80;
        assert_eq!(
            AtmArpRepr::parse(&p),
            Err(AtmArpError::ReservedBit { offset: 4 })
        );
        let long = AtmArpRepr {
            sha: AtmNumber::nsap(&[0; 64]),
            ..AtmArpRepr::parse(&[0, 0x13, 8, 0, 0, 0, 0, 1, 0, 0, 0, 0]).unwrap()
        };
        assert_eq!(
            long.emit(&mut Vec::new()),
            Err(AtmArpError::FieldTooLong { len: 64, max: 63 })
        );
    }

    proptest! {
        #[test]
        fn round_trip(op: u16, pro: u16, e: [bool; 4], sha in proptest::collection::vec(any::<u8>(), 0..=63), ssa in proptest::collection::vec(any::<u8>(), 0..=20),
                      spa in proptest::collection::vec(any::<u8>(), 0..=16), tha in proptest::collection::vec(any::<u8>(), 0..=63), tpa in proptest::collection::vec(any::<u8>(), 0..=16)) {
            let r = AtmArpRepr {
                protocol: pro,
                op: Op::from_u16(op),
                sha: AtmNumber { e164: e[0], bytes: sha },
                ssa: AtmNumber { e164: e[1], bytes: ssa },
                spa,
                tha: AtmNumber { e164: e[2], bytes: tha },
                tsa: AtmNumber { e164: e[3], bytes: vec![] },
                tpa,
            };
            let mut b = Vec::new();
            r.emit(&mut b).unwrap();
            prop_assert_eq!(b.len(), r.buffer_len());
            prop_assert_eq!(AtmArpRepr::parse(&b), Ok(r));
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = AtmArpRepr::parse(&b);
        }
    }
}

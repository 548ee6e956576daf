//! SSCOP PDUs (ITU-T Q.2110): the service specific connection oriented protocol that
//! carries UNI signalling over AAL5 on VPI 0 / VCI 5.
//!
//! Every SSCOP PDU is a multiple of 4 bytes and keeps its fields in a **trailer**: the last
//! 32-bit word is
//!
//! ```text
//! PL (2 bits, pad length) | reserved (1) | S (1, END only) | type (4) | N(x) (24)
//! ```
//!
//! and the words before it depend on the type (atm-facts.md §6, Q.2110's PDU formats):
//!
//! | PDU | code | before the last word | N(x) in the last word |
//! |---|---|---|---|
//! | BGN | 1 | UU + pad, `rsvd24 N(SQ)8` | N(MR) |
//! | BGAK | 2 | UU + pad, `rsvd` | N(MR) |
//! | END | 3 | UU + pad, `rsvd` | reserved (S bit set: SSCOP-originated) |
//! | ENDAK | 4 | `rsvd` | reserved |
//! | RS | 5 | UU + pad, `rsvd24 N(SQ)8` | N(MR) |
//! | RSAK | 6 | `rsvd` | N(MR) |
//! | BGREJ | 7 | UU + pad, `rsvd` | reserved |
//! | SD | 8 | information + pad | N(S) |
//! | ER | 9 | `rsvd24 N(SQ)8` | N(MR) |
//! | POLL | A | `rsvd8 N(PS)24` | N(S) |
//! | STAT | B | list of N(x), `N(PS)`, `N(MR)` | N(R) |
//! | USTAT | C | two list elements, `N(MR)` | N(R) |
//! | UD | D | information + pad | reserved |
//! | MD | E | information + pad | reserved |
//! | ERAK | F | `rsvd` | N(MR) |
//!
//! Sequence numbers are 24-bit (modulo 2^24, [`SEQ_MOD`]); N(SQ) is 8-bit. Reserved bits are
//! ignored when parsing and sent as zero.
//!
//! [`Pdu`] is the zero-copy view: [`Pdu::new_checked`] validates everything the getters
//! rely on (length a multiple of 4, long enough for its type, the exact length of the
//! fixed-size PDUs, a pad length that fits), after which no getter panics. [`Repr`] is the
//! parsed form with `parse`/`emit`/`buffer_len`; its `Display` is one line for `natm dump`
//! (`SD N(S)=5 len=101`).
//!
//! Not here: the state machine (natm-sscop), and limits that are a connection's
//! configuration rather than the format (MaxK, MaxJ, MaxSTAT).

use alloc::vec::Vec;
use core::fmt;

/// Sequence numbers are counted modulo 2^24.
pub const SEQ_MOD: u32 = 1 << 24;
/// The largest 24-bit sequence number.
pub const SEQ_MAX: u32 = SEQ_MOD - 1;
/// The longest STAT list the format allows in one AAL5 SDU (65,535 bytes at most).
pub const MAX_STAT_LIST: usize = (65532 - 12) / 4;

/// Bit layout of the trailer's last word.
pub mod field {
    /// Pad length (bits 31..30).
    pub const PL_SHIFT: u32 = 30;
    /// The S bit of END (bit 28): 1 when SSCOP itself released.
    pub const S_BIT: u32 = 1 << 28;
    /// PDU type (bits 27..24).
    pub const TYPE_SHIFT: u32 = 24;
    /// A 24-bit sequence number field.
    pub const N_MASK: u32 = 0x00FF_FFFF;
    /// N(SQ) in the word before the last of BGN, RS and ER.
    pub const SQ_MASK: u32 = 0xFF;
}

/// The PDU type code (Q.2110); an open set over the 4-bit field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PduType {
    /// Begin (1): request initialisation.
    Bgn,
    /// Begin acknowledge (2).
    Bgak,
    /// End (3): disconnect command.
    End,
    /// End acknowledge (4).
    Endak,
    /// Resynchronisation command (5).
    Rs,
    /// Resynchronisation acknowledge (6).
    Rsak,
    /// Begin reject (7).
    Bgrej,
    /// Sequenced data (8).
    Sd,
    /// Error recovery command (9).
    Er,
    /// Poll (A): transmitter state, asks for the receiver's.
    Poll,
    /// Solicited status (B).
    Stat,
    /// Unsolicited status (C).
    Ustat,
    /// Unnumbered user data (D).
    Ud,
    /// Unnumbered management data (E).
    Md,
    /// Error recovery acknowledge (F).
    Erak,
    /// Any other code (only 0 is left in the 4-bit field).
    Unknown(u8),
}

impl PduType {
    /// From the 4-bit type field.
    pub fn from_u8(v: u8) -> PduType {
        match v {
            0x1 => PduType::Bgn,
            0x2 => PduType::Bgak,
            0x3 => PduType::End,
            0x4 => PduType::Endak,
            0x5 => PduType::Rs,
            0x6 => PduType::Rsak,
            0x7 => PduType::Bgrej,
            0x8 => PduType::Sd,
            0x9 => PduType::Er,
            0xA => PduType::Poll,
            0xB => PduType::Stat,
            0xC => PduType::Ustat,
            0xD => PduType::Ud,
            0xE => PduType::Md,
            0xF => PduType::Erak,
            v => PduType::Unknown(v),
        }
    }

    /// The type field's value.
    pub fn to_u8(self) -> u8 {
        match self {
            PduType::Bgn => 0x1,
            PduType::Bgak => 0x2,
            PduType::End => 0x3,
            PduType::Endak => 0x4,
            PduType::Rs => 0x5,
            PduType::Rsak => 0x6,
            PduType::Bgrej => 0x7,
            PduType::Sd => 0x8,
            PduType::Er => 0x9,
            PduType::Poll => 0xA,
            PduType::Stat => 0xB,
            PduType::Ustat => 0xC,
            PduType::Ud => 0xD,
            PduType::Md => 0xE,
            PduType::Erak => 0xF,
            PduType::Unknown(v) => v,
        }
    }

    /// The name Q.2110 gives the PDU.
    pub fn name(self) -> &'static str {
        match self {
            PduType::Bgn => "BGN",
            PduType::Bgak => "BGAK",
            PduType::End => "END",
            PduType::Endak => "ENDAK",
            PduType::Rs => "RS",
            PduType::Rsak => "RSAK",
            PduType::Bgrej => "BGREJ",
            PduType::Sd => "SD",
            PduType::Er => "ER",
            PduType::Poll => "POLL",
            PduType::Stat => "STAT",
            PduType::Ustat => "USTAT",
            PduType::Ud => "UD",
            PduType::Md => "MD",
            PduType::Erak => "ERAK",
            PduType::Unknown(_) => "unknown",
        }
    }

    /// How the PDU is laid out: trailer words, and whether a padded payload precedes them.
    fn shape(self) -> Option<Shape> {
        use Shape::*;
        Some(match self {
            PduType::Bgn | PduType::Bgak | PduType::End | PduType::Rs | PduType::Bgrej => Padded(8),
            PduType::Sd | PduType::Ud | PduType::Md => Padded(4),
            PduType::Endak | PduType::Rsak | PduType::Er | PduType::Poll | PduType::Erak => {
                Fixed(8)
            }
            PduType::Ustat => Fixed(16),
            PduType::Stat => List,
            PduType::Unknown(_) => return None,
        })
    }
}

impl fmt::Display for PduType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PduType::Unknown(v) => write!(f, "type {v:#x}"),
            t => f.write_str(t.name()),
        }
    }
}

#[derive(Clone, Copy)]
enum Shape {
    /// A padded payload (UU or information) before this many trailer bytes.
    Padded(usize),
    /// Exactly this many bytes.
    Fixed(usize),
    /// STAT: list words before 12 trailer bytes.
    List,
}

/// Who released the connection, the S bit of END.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// The SSCOP user asked for it (S = 0).
    User,
    /// SSCOP itself released (S = 1), e.g. after Timer_NO_RESPONSE.
    Sscop,
}

/// Why bytes are not an SSCOP PDU, or a [`Repr`] cannot be emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SscopPduError {
    /// The length is not a multiple of 4 (every PDU is whole words).
    NotWordAligned {
        /// Bytes given.
        len: usize,
    },
    /// Shorter than a trailer word (0 bytes).
    Empty,
    /// The type field holds a code Q.2110 does not define.
    UnknownType(u8),
    /// Shorter than its type's trailer.
    TooShort {
        /// The type.
        pdu: PduType,
        /// Bytes given.
        len: usize,
        /// The least this type needs.
        min: usize,
    },
    /// A fixed-size PDU (ENDAK, RSAK, ER, ERAK, POLL) of the wrong size.
    WrongLength {
        /// The type.
        pdu: PduType,
        /// Bytes given.
        len: usize,
        /// Its size.
        expected: usize,
    },
    /// A USTAT whose list is not exactly two elements.
    UstatList {
        /// List elements present.
        elements: usize,
    },
    /// The pad length is more than the payload bytes before the trailer.
    PadLength {
        /// The PL field.
        pad: u8,
        /// Payload bytes (payload plus pad) available.
        available: usize,
    },
    /// A STAT list longer than one AAL5 SDU can carry ([`MAX_STAT_LIST`]).
    StatListTooLong {
        /// Elements.
        elements: usize,
    },
    /// A sequence number above 24 bits (emit).
    SeqOutOfRange {
        /// The field's Q.2110 name.
        field: &'static str,
        /// The value.
        value: u32,
    },
    /// The output buffer is too small (emit).
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
}

impl fmt::Display for SscopPduError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SscopPduError::NotWordAligned { len } => {
                write!(f, "SSCOP PDU of {len} bytes is not a multiple of 4")
            }
            SscopPduError::Empty => f.write_str("SSCOP PDU is empty"),
            SscopPduError::UnknownType(t) => write!(f, "SSCOP PDU type {t:#x} is unknown"),
            SscopPduError::TooShort { pdu, len, min } => {
                write!(f, "SSCOP {pdu} of {len} bytes is shorter than {min}")
            }
            SscopPduError::WrongLength { pdu, len, expected } => {
                write!(f, "SSCOP {pdu} of {len} bytes must be {expected}")
            }
            SscopPduError::UstatList { elements } => {
                write!(f, "SSCOP USTAT list has {elements} elements, not 2")
            }
            SscopPduError::PadLength { pad, available } => write!(
                f,
                "SSCOP pad length {pad} exceeds the {available} payload bytes"
            ),
            SscopPduError::StatListTooLong { elements } => write!(
                f,
                "SSCOP STAT list of {elements} elements exceeds {MAX_STAT_LIST}"
            ),
            SscopPduError::SeqOutOfRange { field, value } => {
                write!(f, "SSCOP {field} = {value} does not fit 24 bits")
            }
            SscopPduError::BufferTooSmall { needed, got } => {
                write!(f, "SSCOP PDU needs {needed} bytes, buffer has {got}")
            }
        }
    }
}

impl core::error::Error for SscopPduError {}

/// A zero-copy view of an SSCOP PDU.
///
/// Use [`Pdu::new_checked`] on received bytes: afterwards no getter panics. The getters for
/// fields a type does not have return `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pdu<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Pdu<T> {
    /// Wrap bytes without checking them (getters may panic on bad bytes).
    pub const fn new_unchecked(buffer: T) -> Self {
        Pdu { buffer }
    }

    /// Wrap bytes after [`Pdu::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self, SscopPduError> {
        let pdu = Pdu { buffer };
        pdu.check_len()?;
        Ok(pdu)
    }

    /// Check everything the getters rely on.
    pub fn check_len(&self) -> Result<(), SscopPduError> {
        let b = self.buffer.as_ref();
        let len = b.len();
        if len == 0 {
            return Err(SscopPduError::Empty);
        }
        if len % 4 != 0 {
            return Err(SscopPduError::NotWordAligned { len });
        }
        let pdu = self.pdu_type();
        let shape = pdu.shape().ok_or(SscopPduError::UnknownType(pdu.to_u8()))?;
        match shape {
            Shape::Padded(trailer) => {
                if len < trailer {
                    return Err(SscopPduError::TooShort {
                        pdu,
                        len,
                        min: trailer,
                    });
                }
                let pad = self.pad_len();
                if usize::from(pad) > len - trailer {
                    return Err(SscopPduError::PadLength {
                        pad,
                        available: len - trailer,
                    });
                }
            }
            Shape::Fixed(16) if len != 16 => {
                if len < 8 {
                    return Err(SscopPduError::TooShort { pdu, len, min: 16 });
                }
                return Err(SscopPduError::UstatList {
                    elements: (len - 8) / 4,
                });
            }
            Shape::Fixed(n) if len != n => {
                return Err(SscopPduError::WrongLength {
                    pdu,
                    len,
                    expected: n,
                });
            }
            Shape::Fixed(_) => {}
            Shape::List => {
                if len < 12 {
                    return Err(SscopPduError::TooShort { pdu, len, min: 12 });
                }
                if (len - 12) / 4 > MAX_STAT_LIST {
                    return Err(SscopPduError::StatListTooLong {
                        elements: (len - 12) / 4,
                    });
                }
            }
        }
        Ok(())
    }

    /// The underlying bytes.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Bytes in the PDU.
    pub fn len(&self) -> usize {
        self.buffer.as_ref().len()
    }

    /// `true` for no bytes at all (never after `new_checked`).
    pub fn is_empty(&self) -> bool {
        self.buffer.as_ref().is_empty()
    }

    /// The 32-bit word `back` words before the end (1 = the last word).
    fn word_back(&self, back: usize) -> u32 {
        let b = self.buffer.as_ref();
        let at = b.len() - 4 * back;
        u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
    }

    /// The last word of the trailer.
    pub fn trailer(&self) -> u32 {
        self.word_back(1)
    }

    /// The type field.
    pub fn pdu_type(&self) -> PduType {
        PduType::from_u8(((self.trailer() >> field::TYPE_SHIFT) & 0xF) as u8)
    }

    /// The pad length field (PL), 0..=3.
    pub fn pad_len(&self) -> u8 {
        (self.trailer() >> field::PL_SHIFT) as u8
    }

    /// The 24-bit N(x) field of the last word, whatever the type calls it.
    pub fn n_last(&self) -> u32 {
        self.trailer() & field::N_MASK
    }

    /// The S bit of an END.
    pub fn source(&self) -> Option<Source> {
        (self.pdu_type() == PduType::End).then(|| {
            if self.trailer() & field::S_BIT != 0 {
                Source::Sscop
            } else {
                Source::User
            }
        })
    }

    /// N(S) of SD and POLL.
    pub fn n_s(&self) -> Option<u32> {
        matches!(self.pdu_type(), PduType::Sd | PduType::Poll).then(|| self.n_last())
    }

    /// N(R) of STAT and USTAT.
    pub fn n_r(&self) -> Option<u32> {
        matches!(self.pdu_type(), PduType::Stat | PduType::Ustat).then(|| self.n_last())
    }

    /// N(MR) of BGN, BGAK, RS, RSAK, ER, ERAK, STAT and USTAT.
    pub fn n_mr(&self) -> Option<u32> {
        match self.pdu_type() {
            PduType::Bgn
            | PduType::Bgak
            | PduType::Rs
            | PduType::Rsak
            | PduType::Er
            | PduType::Erak => Some(self.n_last()),
            PduType::Stat | PduType::Ustat => Some(self.word_back(2) & field::N_MASK),
            _ => None,
        }
    }

    /// N(PS) of POLL and STAT.
    pub fn n_ps(&self) -> Option<u32> {
        match self.pdu_type() {
            PduType::Poll => Some(self.word_back(2) & field::N_MASK),
            PduType::Stat => Some(self.word_back(3) & field::N_MASK),
            _ => None,
        }
    }

    /// N(SQ) of BGN, RS and ER.
    pub fn n_sq(&self) -> Option<u8> {
        matches!(self.pdu_type(), PduType::Bgn | PduType::Rs | PduType::Er)
            .then(|| (self.word_back(2) & field::SQ_MASK) as u8)
    }

    /// Elements in the list of STAT or USTAT (0 for other types).
    pub fn list_len(&self) -> usize {
        match self.pdu_type() {
            PduType::Stat => (self.len() - 12) / 4,
            PduType::Ustat => 2,
            _ => 0,
        }
    }

    /// List element `i` (in wire order) of STAT or USTAT.
    pub fn list_item(&self, i: usize) -> Option<u32> {
        let n = self.list_len();
        let trailer = if self.pdu_type() == PduType::Stat {
            3
        } else {
            2
        };
        (i < n).then(|| self.word_back(trailer + n - i) & field::N_MASK)
    }

    /// The UU field of BGN, BGAK, END, RS and BGREJ, or the information field of SD, UD
    /// and MD, without its pad; empty for the other types.
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        match self.pdu_type().shape() {
            Some(Shape::Padded(trailer)) => {
                let end = (b.len() - trailer).saturating_sub(usize::from(self.pad_len()));
                &b[..end]
            }
            _ => &[],
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Pdu<T> {
    /// Set the last word of the trailer.
    pub fn set_trailer(&mut self, word: u32) {
        let b = self.buffer.as_mut();
        let at = b.len() - 4;
        b[at..].copy_from_slice(&word.to_be_bytes());
    }
}

/// A parsed SSCOP PDU, its fields named as in Q.2110.
///
/// Payloads (`uu`, `info`) borrow the parsed bytes; the STAT list is owned.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Repr<'a> {
    /// BGN: request initialisation.
    Bgn {
        /// N(SQ), the connection sequence number (8 bits).
        n_sq: u8,
        /// N(MR), the sender's receive window edge.
        n_mr: u32,
        /// User-to-user information.
        uu: &'a [u8],
    },
    /// BGAK: initialisation acknowledged.
    Bgak {
        /// N(MR).
        n_mr: u32,
        /// User-to-user information.
        uu: &'a [u8],
    },
    /// BGREJ: initialisation rejected.
    Bgrej {
        /// User-to-user information.
        uu: &'a [u8],
    },
    /// END: release.
    End {
        /// Who released.
        source: Source,
        /// User-to-user information.
        uu: &'a [u8],
    },
    /// ENDAK: release acknowledged.
    Endak,
    /// RS: resynchronisation command.
    Rs {
        /// N(SQ).
        n_sq: u8,
        /// N(MR).
        n_mr: u32,
        /// User-to-user information.
        uu: &'a [u8],
    },
    /// RSAK: resynchronisation acknowledged.
    Rsak {
        /// N(MR).
        n_mr: u32,
    },
    /// ER: error recovery command.
    Er {
        /// N(SQ).
        n_sq: u8,
        /// N(MR).
        n_mr: u32,
    },
    /// ERAK: error recovery acknowledged.
    Erak {
        /// N(MR).
        n_mr: u32,
    },
    /// SD: sequenced data.
    Sd {
        /// N(S), this SD's sequence number.
        n_s: u32,
        /// The information field.
        info: &'a [u8],
    },
    /// POLL: the sender's state, asking for a STAT.
    Poll {
        /// N(PS), the poll sequence number.
        n_ps: u32,
        /// N(S), the sender's next new N(S) (VT(S)).
        n_s: u32,
    },
    /// STAT: solicited receiver state.
    Stat {
        /// N(R), the receiver's next in-sequence N(S) (VR(R)).
        n_r: u32,
        /// N(MR), the receive window edge.
        n_mr: u32,
        /// N(PS) of the POLL answered.
        n_ps: u32,
        /// Alternating starts of missing and received runs, in wire order.
        list: Vec<u32>,
    },
    /// USTAT: unsolicited receiver state, one gap.
    Ustat {
        /// N(R).
        n_r: u32,
        /// N(MR).
        n_mr: u32,
        /// The first missing N(S) and the first received after the gap.
        list: [u32; 2],
    },
    /// UD: unnumbered user data.
    Ud {
        /// The information field.
        info: &'a [u8],
    },
    /// MD: unnumbered management data.
    Md {
        /// The information field.
        info: &'a [u8],
    },
}

fn pad_of(len: usize) -> usize {
    (4 - len % 4) % 4
}

fn check_seq(field: &'static str, value: u32) -> Result<u32, SscopPduError> {
    if value > SEQ_MAX {
        Err(SscopPduError::SeqOutOfRange { field, value })
    } else {
        Ok(value)
    }
}

impl<'a> Repr<'a> {
    /// Parse a PDU (one AAL5 SDU).
    pub fn parse(bytes: &'a [u8]) -> Result<Repr<'a>, SscopPduError> {
        let p = Pdu::new_checked(bytes)?;
        Ok(Repr::from_pdu(&p))
    }

    /// The representation of a checked view.
    pub fn from_pdu(p: &Pdu<&'a [u8]>) -> Repr<'a> {
        let b: &'a [u8] = p.buffer;
        let n = p.n_last();
        let w2 = || p.word_back(2) & field::N_MASK;
        let sq = || (p.word_back(2) & field::SQ_MASK) as u8;
        let payload = || {
            let trailer = if matches!(p.pdu_type(), PduType::Sd | PduType::Ud | PduType::Md) {
                4
            } else {
                8
            };
            &b[..b.len() - trailer - usize::from(p.pad_len())]
        };
        match p.pdu_type() {
            PduType::Bgn => Repr::Bgn {
                n_sq: sq(),
                n_mr: n,
                uu: payload(),
            },
            PduType::Bgak => Repr::Bgak {
                n_mr: n,
                uu: payload(),
            },
            PduType::Bgrej => Repr::Bgrej { uu: payload() },
            PduType::End => Repr::End {
                source: p.source().unwrap_or(Source::User),
                uu: payload(),
            },
            PduType::Endak => Repr::Endak,
            PduType::Rs => Repr::Rs {
                n_sq: sq(),
                n_mr: n,
                uu: payload(),
            },
            PduType::Rsak => Repr::Rsak { n_mr: n },
            PduType::Er => Repr::Er {
                n_sq: sq(),
                n_mr: n,
            },
            PduType::Erak => Repr::Erak { n_mr: n },
            PduType::Sd => Repr::Sd {
                n_s: n,
                info: payload(),
            },
            PduType::Poll => Repr::Poll { n_ps: w2(), n_s: n },
            PduType::Stat => Repr::Stat {
                n_r: n,
                n_mr: w2(),
                n_ps: p.word_back(3) & field::N_MASK,
                list: (0..p.list_len()).filter_map(|i| p.list_item(i)).collect(),
            },
            PduType::Ustat => Repr::Ustat {
                n_r: n,
                n_mr: w2(),
                list: [
                    p.word_back(4) & field::N_MASK,
                    p.word_back(3) & field::N_MASK,
                ],
            },
            PduType::Ud => Repr::Ud { info: payload() },
            PduType::Md => Repr::Md { info: payload() },
            // new_checked refuses unknown types; an unchecked view of one reads as MD-less
            // nothing rather than panicking.
            PduType::Unknown(_) => Repr::Endak,
        }
    }

    /// The PDU type.
    pub fn pdu_type(&self) -> PduType {
        match self {
            Repr::Bgn { .. } => PduType::Bgn,
            Repr::Bgak { .. } => PduType::Bgak,
            Repr::Bgrej { .. } => PduType::Bgrej,
            Repr::End { .. } => PduType::End,
            Repr::Endak => PduType::Endak,
            Repr::Rs { .. } => PduType::Rs,
            Repr::Rsak { .. } => PduType::Rsak,
            Repr::Er { .. } => PduType::Er,
            Repr::Erak { .. } => PduType::Erak,
            Repr::Sd { .. } => PduType::Sd,
            Repr::Poll { .. } => PduType::Poll,
            Repr::Stat { .. } => PduType::Stat,
            Repr::Ustat { .. } => PduType::Ustat,
            Repr::Ud { .. } => PduType::Ud,
            Repr::Md { .. } => PduType::Md,
        }
    }

    /// The padded payload, if the type has one.
    fn payload(&self) -> Option<&'a [u8]> {
        match *self {
            Repr::Bgn { uu, .. }
            | Repr::Bgak { uu, .. }
            | Repr::Bgrej { uu }
            | Repr::End { uu, .. }
            | Repr::Rs { uu, .. } => Some(uu),
            Repr::Sd { info, .. } | Repr::Ud { info } | Repr::Md { info } => Some(info),
            _ => None,
        }
    }

    /// Bytes of the encoded PDU.
    pub fn buffer_len(&self) -> usize {
        match self {
            Repr::Stat { list, .. } => 12 + 4 * list.len(),
            Repr::Ustat { .. } => 16,
            Repr::Sd { info, .. } | Repr::Ud { info } | Repr::Md { info } => {
                info.len() + pad_of(info.len()) + 4
            }
            r => match r.payload() {
                Some(uu) => uu.len() + pad_of(uu.len()) + 8,
                None => 8,
            },
        }
    }

    /// Encode into the first [`Repr::buffer_len`] bytes of `out`.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), SscopPduError> {
        let len = self.buffer_len();
        if out.len() < len {
            return Err(SscopPduError::BufferTooSmall {
                needed: len,
                got: out.len(),
            });
        }
        if let Repr::Stat { list, .. } = self
            && list.len() > MAX_STAT_LIST
        {
            return Err(SscopPduError::StatListTooLong {
                elements: list.len(),
            });
        }
        let out = &mut out[..len];
        let mut pl = 0u32;
        let mut at = 0;
        if let Some(data) = self.payload() {
            out[..data.len()].copy_from_slice(data);
            let pad = pad_of(data.len());
            out[data.len()..data.len() + pad].fill(0);
            pl = pad as u32;
            at = data.len() + pad;
        }
        let mut put = |w: u32| {
            out[at..at + 4].copy_from_slice(&w.to_be_bytes());
            at += 4;
        };
        let last = |t: PduType, n: u32| (pl << field::PL_SHIFT) | (u32::from(t.to_u8()) << 24) | n;
        match *self {
            Repr::Bgn { n_sq, n_mr, .. } | Repr::Rs { n_sq, n_mr, .. } => {
                let n_mr = check_seq("N(MR)", n_mr)?;
                put(u32::from(n_sq));
                put(last(self.pdu_type(), n_mr));
            }
            Repr::Er { n_sq, n_mr } => {
                let n_mr = check_seq("N(MR)", n_mr)?;
                put(u32::from(n_sq));
                put(last(PduType::Er, n_mr));
            }
            Repr::Bgak { n_mr, .. } => {
                put(0);
                put(last(PduType::Bgak, check_seq("N(MR)", n_mr)?));
            }
            Repr::Rsak { n_mr } | Repr::Erak { n_mr } => {
                put(0);
                put(last(self.pdu_type(), check_seq("N(MR)", n_mr)?));
            }
            Repr::Bgrej { .. } | Repr::Endak => {
                put(0);
                put(last(self.pdu_type(), 0));
            }
            Repr::End { source, .. } => {
                put(0);
                let s = if source == Source::Sscop {
                    field::S_BIT
                } else {
                    0
                };
                put(last(PduType::End, 0) | s);
            }
            Repr::Sd { n_s, .. } => put(last(PduType::Sd, check_seq("N(S)", n_s)?)),
            Repr::Ud { .. } | Repr::Md { .. } => put(last(self.pdu_type(), 0)),
            Repr::Poll { n_ps, n_s } => {
                put(check_seq("N(PS)", n_ps)?);
                put(last(PduType::Poll, check_seq("N(S)", n_s)?));
            }
            Repr::Stat {
                n_r,
                n_mr,
                n_ps,
                ref list,
            } => {
                for &x in list {
                    put(check_seq("list element", x)?);
                }
                put(check_seq("N(PS)", n_ps)?);
                put(check_seq("N(MR)", n_mr)?);
                put(last(PduType::Stat, check_seq("N(R)", n_r)?));
            }
            Repr::Ustat { n_r, n_mr, list } => {
                put(check_seq("list element", list[0])?);
                put(check_seq("list element", list[1])?);
                put(check_seq("N(MR)", n_mr)?);
                put(last(PduType::Ustat, check_seq("N(R)", n_r)?));
            }
        }
        Ok(())
    }

    /// Encode into a new vector.
    pub fn to_vec(&self) -> Result<Vec<u8>, SscopPduError> {
        let mut v = alloc::vec![0; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }
}

impl fmt::Display for Repr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Repr::Bgn { n_sq, n_mr, uu } | Repr::Rs { n_sq, n_mr, uu } => write!(
                f,
                "{} N(SQ)={n_sq} N(MR)={n_mr} uu={}",
                self.pdu_type(),
                uu.len()
            ),
            Repr::Bgak { n_mr, uu } => write!(f, "BGAK N(MR)={n_mr} uu={}", uu.len()),
            Repr::Bgrej { uu } => write!(f, "BGREJ uu={}", uu.len()),
            Repr::End { source, uu } => write!(
                f,
                "END S={} uu={}",
                u8::from(*source == Source::Sscop),
                uu.len()
            ),
            Repr::Endak => f.write_str("ENDAK"),
            Repr::Rsak { n_mr } | Repr::Erak { n_mr } => {
                write!(f, "{} N(MR)={n_mr}", self.pdu_type())
            }
            Repr::Er { n_sq, n_mr } => write!(f, "ER N(SQ)={n_sq} N(MR)={n_mr}"),
            Repr::Sd { n_s, info } => write!(f, "SD N(S)={n_s} len={}", info.len()),
            Repr::Poll { n_ps, n_s } => write!(f, "POLL N(PS)={n_ps} N(S)={n_s}"),
            Repr::Stat {
                n_r,
                n_mr,
                n_ps,
                list,
            } => {
                write!(f, "STAT N(R)={n_r} N(MR)={n_mr} N(PS)={n_ps} list=[")?;
                for (i, x) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str("]")
            }
            Repr::Ustat { n_r, n_mr, list } => write!(
                f,
                "USTAT N(R)={n_r} N(MR)={n_mr} list=[{},{}]",
                list[0], list[1]
            ),
            Repr::Ud { info } => write!(f, "UD len={}", info.len()),
            Repr::Md { info } => write!(f, "MD len={}", info.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;
    use proptest::prelude::*;

    fn check(bytes: &[u8], repr: Repr<'_>) {
        assert_eq!(Repr::parse(bytes), Ok(repr.clone()), "parse {bytes:02x?}");
        let mut out = vec![0xa5; repr.buffer_len()];
        repr.emit(&mut out).unwrap();
        assert_eq!(out, bytes, "emit {repr}");
    }

    // atm-facts.md §6: every vector decoded by Wireshark 4.0.
    #[test]
    fn facts_vectors() {
        check(
            &[0, 0, 0, 1, 0x01, 0, 0, 0x80],
            Repr::Bgn {
                n_sq: 1,
                n_mr: 128,
                uu: &[],
            },
        );
        check(
            &[0, 0, 0, 0, 0x02, 0, 0, 0x80],
            Repr::Bgak { n_mr: 128, uu: &[] },
        );
        check(
            &[0, 0, 0, 0, 0x13, 0, 0, 0],
            Repr::End {
                source: Source::Sscop,
                uu: &[],
            },
        );
        check(&[0, 0, 0, 0, 0x04, 0, 0, 0], Repr::Endak);
        check(&[0, 0, 0, 1, 0x0a, 0, 0, 5], Repr::Poll { n_ps: 1, n_s: 5 });
        check(
            &[
                0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0x80, 0x0b, 0, 0, 3,
            ],
            Repr::Stat {
                n_r: 3,
                n_mr: 128,
                n_ps: 1,
                list: vec![3, 4],
            },
        );
        check(
            &[0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0x80, 0x0c, 0, 0, 3],
            Repr::Ustat {
                n_r: 3,
                n_mr: 128,
                list: [3, 4],
            },
        );
        check(
            &[0x61, 0x62, 0x63, 0x64, 0x65, 0, 0, 0, 0xcd, 0, 0, 0],
            Repr::Ud { info: b"abcde" },
        );
    }

    #[test]
    fn sd_carrying_101_bytes() {
        // atm-facts §6: the 101-byte SETUP + 3 pad + c8 00 00 00, a 108-byte SDU.
        let setup = [0x09u8; 101];
        let r = Repr::Sd {
            n_s: 0,
            info: &setup,
        };
        let b = r.to_vec().unwrap();
        assert_eq!(b.len(), 108);
        assert_eq!(&b[101..], &[0, 0, 0, 0xc8, 0, 0, 0]);
        assert_eq!(r.to_string(), "SD N(S)=0 len=101");
        let p = Pdu::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.pdu_type(), p.pad_len(), p.n_s()),
            (PduType::Sd, 3, Some(0))
        );
        assert_eq!(p.payload(), &setup[..]);
    }

    #[test]
    fn view_getters() {
        let b = [
            0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0x80, 0x0b, 0, 0, 3,
        ];
        let p = Pdu::new_checked(&b[..]).unwrap();
        assert_eq!(p.n_r(), Some(3));
        assert_eq!(p.n_mr(), Some(128));
        assert_eq!(p.n_ps(), Some(1));
        assert_eq!(p.n_s(), None);
        assert_eq!(
            (p.list_len(), p.list_item(0), p.list_item(1)),
            (2, Some(3), Some(4))
        );
        assert_eq!(p.list_item(2), None);
        assert!(p.payload().is_empty());
        let bgn = Pdu::new_checked(&[0xaau8, 0xbb, 0, 0, 0, 0, 0, 7, 0x81, 0, 1, 0][..]).unwrap();
        assert_eq!((bgn.n_sq(), bgn.n_mr()), (Some(7), Some(256)));
        assert_eq!(bgn.payload(), &[0xaa, 0xbb]);
    }

    #[test]
    fn display_one_line() {
        let stat = Repr::Stat {
            n_r: 3,
            n_mr: 128,
            n_ps: 1,
            list: vec![3, 4],
        };
        assert_eq!(stat.to_string(), "STAT N(R)=3 N(MR)=128 N(PS)=1 list=[3,4]");
        assert_eq!(
            Repr::Bgn {
                n_sq: 1,
                n_mr: 128,
                uu: b"xy"
            }
            .to_string(),
            "BGN N(SQ)=1 N(MR)=128 uu=2"
        );
        assert_eq!(
            Repr::End {
                source: Source::User,
                uu: &[]
            }
            .to_string(),
            "END S=0 uu=0"
        );
    }

    #[test]
    fn malformed() {
        use SscopPduError as E;
        assert_eq!(Repr::parse(&[]), Err(E::Empty));
        assert_eq!(
            Repr::parse(&[0, 0, 0, 0, 0x08]),
            Err(E::NotWordAligned { len: 5 })
        );
        assert_eq!(Repr::parse(&[0, 0, 0, 0]), Err(E::UnknownType(0)));
        assert_eq!(
            Repr::parse(&[0x01, 0, 0, 0]),
            Err(E::TooShort {
                pdu: PduType::Bgn,
                len: 4,
                min: 8
            })
        );
        assert_eq!(
            Repr::parse(&[0, 0, 0, 0, 0, 0, 0, 0, 0x0a, 0, 0, 0]),
            Err(E::WrongLength {
                pdu: PduType::Poll,
                len: 12,
                expected: 8
            })
        );
        assert_eq!(
            Repr::parse(&[0, 0, 0, 0, 0, 0, 0, 0, 0x0c, 0, 0, 0]),
            Err(E::UstatList { elements: 1 })
        );
        assert_eq!(
            Repr::parse(&[0x0c, 0, 0, 0]),
            Err(E::TooShort {
                pdu: PduType::Ustat,
                len: 4,
                min: 16
            })
        );
        assert_eq!(
            Repr::parse(&[0, 0, 0, 0, 0x0b, 0, 0, 0]),
            Err(E::TooShort {
                pdu: PduType::Stat,
                len: 8,
                min: 12
            })
        );
        // SD of 4 bytes claiming 3 pad bytes.
        assert_eq!(
            Repr::parse(&[0xc8, 0, 0, 0]),
            Err(E::PadLength {
                pad: 3,
                available: 0
            })
        );
        assert_eq!(
            Repr::parse(&[0, 0, 0, 0, 0x81, 0, 0, 0]),
            Err(E::PadLength {
                pad: 2,
                available: 0
            })
        );
        // Emit errors.
        assert_eq!(
            Repr::Sd {
                n_s: SEQ_MOD,
                info: &[]
            }
            .to_vec(),
            Err(E::SeqOutOfRange {
                field: "N(S)",
                value: SEQ_MOD
            })
        );
        assert_eq!(
            Repr::Endak.emit(&mut [0; 7]),
            Err(E::BufferTooSmall { needed: 8, got: 7 })
        );
        // Reserved bits are ignored on parse.
        assert_eq!(
            Repr::parse(&[0xff, 0xff, 0xff, 0xff, 0x24, 0xff, 0xff, 0xff]),
            Ok(Repr::Endak)
        );
        for e in [E::Empty, E::UstatList { elements: 3 }] {
            assert!(!e.to_string().is_empty());
        }
    }

    fn seq() -> impl Strategy<Value = u32> {
        0..SEQ_MOD
    }

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(any::<u8>(), 0..40)
    }

    proptest! {
        #[test]
        fn round_trip_every_pdu(data in bytes(), t in 0u8..15, n_sq: u8, a in seq(), b in seq(), c in seq(), s: bool, list in proptest::collection::vec(seq(), 0..8)) {
            let r = match t {
                0 => Repr::Bgn { n_sq, n_mr: a, uu: &data },
                1 => Repr::Bgak { n_mr: a, uu: &data },
                2 => Repr::Bgrej { uu: &data },
                3 => Repr::End { source: if s { Source::Sscop } else { Source::User }, uu: &data },
                4 => Repr::Endak,
                5 => Repr::Rs { n_sq, n_mr: a, uu: &data },
                6 => Repr::Rsak { n_mr: a },
                7 => Repr::Er { n_sq, n_mr: a },
                8 => Repr::Erak { n_mr: a },
                9 => Repr::Sd { n_s: a, info: &data },
                10 => Repr::Poll { n_ps: a, n_s: b },
                11 => Repr::Stat { n_r: a, n_mr: b, n_ps: c, list },
                12 => Repr::Ustat { n_r: a, n_mr: b, list: [c, a ^ b] },
                13 => Repr::Ud { info: &data },
                _ => Repr::Md { info: &data },
            };
            let bytes = r.to_vec().unwrap();
            prop_assert_eq!(bytes.len(), r.buffer_len());
            prop_assert_eq!(bytes.len() % 4, 0);
            prop_assert_eq!(Repr::parse(&bytes), Ok(r.clone()));
            prop_assert!(!r.to_string().contains('\n'));
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(r) = Repr::parse(&b) {
                let again = r.to_vec().unwrap();
                prop_assert_eq!(Repr::parse(&again), Ok(r));
            }
            let p = Pdu::new_unchecked(&b[..]);
            if p.check_len().is_ok() {
                let _ = (p.n_s(), p.n_r(), p.n_mr(), p.n_ps(), p.n_sq(), p.source(), p.payload());
                for i in 0..p.list_len() + 1 { let _ = p.list_item(i); }
            }
        }
    }
}

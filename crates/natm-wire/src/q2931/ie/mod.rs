//! Information elements (Q.2931 §4.5, UNI 3.1 §5.4.5, UNI 4.0 §4): the common IE header,
//! the identifiers, the contents codec every typed IE implements, and unknown IEs kept raw.
//!
//! ```text
//! 0    identifier
//! 1    1 | coding standard (2) | flag (1) | pass-along (1) | action indicator (3)
//! 2-3  length of the contents (big-endian)
//! 4..  contents
//! ```
//! One file per group of IEs; every typed IE implements [`IeCodec`] over its contents
//! (the bytes after the 4-byte header).

mod aal;
mod bearer;
mod conn;
mod layer;
mod misc;
pub(crate) mod number;
mod traffic;

use alloc::vec::Vec;
use core::fmt;

pub use aal::{AalParams, AalType, SscsType};
pub use bearer::{Atc, BearerCapability, BearerClass, UserPlane};
pub use conn::{ConnectionId, ExtQos, PrefExcl, QosClass, QosParam, TransitDelay, VpAssoc};
pub use layer::{Bhli, BhliType, Blli, BlliLayer};
pub use misc::{CallState, Notification, RepeatIndicator, RestartClass, RestartIndicator};
pub use number::{Number, PartyNumber, Presentation, Screening, Subaddress, SubaddressType};
pub use traffic::{TmOptions, TrafficDescriptor, TrafficDirection};

/// Length of the IE header.
pub const IE_HEADER_LEN: usize = 4;

macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident: $ty:ty {
            $( $(#[$vmeta:meta])* $variant:ident = $value:expr, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// Any other code point.
            Unknown($ty),
        }

        impl $name {
            /// From the code point.
            pub const fn from_code(v: $ty) -> $name {
                match v {
                    $( $value => $name::$variant, )*
                    other => $name::Unknown(other),
                }
            }

            /// The code point.
            pub const fn code(self) -> $ty {
                match self {
                    $( $name::$variant => $value, )*
                    $name::Unknown(other) => other,
                }
            }
        }

        impl From<$ty> for $name {
            fn from(v: $ty) -> $name {
                $name::from_code(v)
            }
        }
    };
}
pub(crate) use open_enum;

open_enum! {
    /// An IE identifier (octet 1 of the IE; atm-facts §5.2).
    pub enum IeId: u8 {
        /// Cause (0x08).
        Cause = 0x08,
        /// Call state (0x14).
        CallState = 0x14,
        /// Notification indicator (0x27, UNI 4.0).
        Notification = 0x27,
        /// End-to-end transit delay (0x42).
        TransitDelay = 0x42,
        /// Connected number (0x4C).
        ConnectedNumber = 0x4C,
        /// Connected subaddress (0x4D).
        ConnectedSubaddress = 0x4D,
        /// Endpoint reference (0x54).
        EndpointReference = 0x54,
        /// Endpoint state (0x55).
        EndpointState = 0x55,
        /// AAL parameters (0x58).
        AalParams = 0x58,
        /// ATM traffic descriptor (0x59).
        TrafficDescriptor = 0x59,
        /// Connection identifier (0x5A).
        ConnectionId = 0x5A,
        /// QoS parameter (0x5C).
        QosParam = 0x5C,
        /// Broadband high-layer information (0x5D).
        Bhli = 0x5D,
        /// Broadband bearer capability (0x5E).
        BearerCapability = 0x5E,
        /// Broadband low-layer information (0x5F).
        Blli = 0x5F,
        /// Broadband locking shift (0x60).
        LockingShift = 0x60,
        /// Broadband non-locking shift (0x61).
        NonLockingShift = 0x61,
        /// Broadband sending complete (0x62).
        SendingComplete = 0x62,
        /// Broadband repeat indicator (0x63).
        RepeatIndicator = 0x63,
        /// Calling party number (0x6C).
        CallingNumber = 0x6C,
        /// Calling party subaddress (0x6D).
        CallingSubaddress = 0x6D,
        /// Called party number (0x70).
        CalledNumber = 0x70,
        /// Called party subaddress (0x71).
        CalledSubaddress = 0x71,
        /// Transit network selection (0x78).
        TransitNetwork = 0x78,
        /// Restart indicator (0x79).
        RestartIndicator = 0x79,
        /// User-user (0x7E, UNI 4.0).
        UserUser = 0x7E,
        /// Generic identifier transport (0x7F).
        GenericId = 0x7F,
        /// Minimum acceptable ATM traffic descriptor (0x81, UNI 4.0).
        MinTraffic = 0x81,
        /// Alternative ATM traffic descriptor (0x82, UNI 4.0).
        AltTraffic = 0x82,
        /// ABR setup parameters (0x84).
        AbrSetup = 0x84,
        /// ABR additional parameters (0xE4).
        AbrAdditional = 0xE4,
        /// Extended QoS parameters (0xEC, UNI 4.0).
        ExtQos = 0xEC,
    }
}

open_enum! {
    /// Coding standard of an IE (octet 2 bits 7-6).
    pub enum CodingStandard: u8 {
        /// ITU-T (00).
        Itu = 0,
        /// ISO/IEC (01).
        Iso = 1,
        /// National (10).
        National = 2,
        /// Network-specific, used for ATM Forum coding (11).
        NetworkSpecific = 3,
    }
}

open_enum! {
    /// IE action indicator (octet 2 bits 3-1), which Q.2931 §5.6.8.1 applies to an
    /// unrecognised IE whose flag is set.
    pub enum IeAction: u8 {
        /// Clear call (0).
        ClearCall = 0,
        /// Discard the IE and proceed (1).
        DiscardProceed = 1,
        /// Discard the IE, proceed and report status (2).
        DiscardReport = 2,
        /// Discard the message and ignore (5).
        DiscardMessage = 5,
        /// Discard the message and report status (6).
        DiscardMessageReport = 6,
    }
}

/// Octet 2 of an IE header: coding standard and instruction field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IeFlags {
    /// Coding standard.
    pub coding: CodingStandard,
    /// Whether the instruction field is to be followed ("explicit instruction").
    pub flag: bool,
    /// PNNI pass-along request (bit 4).
    pub pass_along: bool,
    /// Action indicator (meaningful when `flag` is set).
    pub action: IeAction,
}

impl IeFlags {
    /// ITU-T coding, no explicit instruction (0x80).
    pub const ITU: IeFlags = IeFlags {
        coding: CodingStandard::Itu,
        flag: false,
        pass_along: false,
        action: IeAction::ClearCall,
    };
    /// Network-specific (ATM Forum) coding, no explicit instruction (0xE0).
    pub const NETWORK: IeFlags = IeFlags {
        coding: CodingStandard::NetworkSpecific,
        flag: false,
        pass_along: false,
        action: IeAction::ClearCall,
    };

    /// From octet 2.
    pub const fn from_octet(b: u8) -> IeFlags {
        IeFlags {
            coding: CodingStandard::from_code((b >> 5) & 3),
            flag: b & 0x10 != 0,
            pass_along: b & 0x08 != 0,
            action: IeAction::from_code(b & 7),
        }
    }

    /// Octet 2.
    pub const fn to_octet(self) -> u8 {
        0x80 | ((self.coding.code() & 3) << 5)
            | if self.flag { 0x10 } else { 0 }
            | if self.pass_along { 0x08 } else { 0 }
            | (self.action.code() & 7)
    }
}

/// What was wrong inside an IE's contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IeErrorKind {
    /// The contents end before a field.
    Truncated,
    /// Bytes after the last field.
    Trailing,
    /// A subfield identifier this IE does not define.
    UnknownSubfield(u8),
    /// A subfield given twice.
    RepeatedSubfield(u8),
    /// A field's value is not allowed; names the field.
    Invalid(&'static str),
    /// A length the IE does not allow.
    BadLength,
}

impl fmt::Display for IeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IeErrorKind::Truncated => f.write_str("contents too short"),
            IeErrorKind::Trailing => f.write_str("bytes after the last field"),
            IeErrorKind::UnknownSubfield(id) => write!(f, "unknown subfield 0x{id:02x}"),
            IeErrorKind::RepeatedSubfield(id) => write!(f, "subfield 0x{id:02x} repeated"),
            IeErrorKind::Invalid(what) => write!(f, "invalid {what}"),
            IeErrorKind::BadLength => f.write_str("length not allowed"),
        }
    }
}

impl core::error::Error for IeErrorKind {}

/// The contents codec of one typed IE: what follows its 4-byte header.
///
/// `parse_contents` never panics; `emit_contents` writes exactly `contents_len()` bytes
/// and panics if `buf` is shorter (an emission buffer is the caller's to size).
pub trait IeCodec: Sized {
    /// The identifier.
    const ID: IeId;
    /// Parses the contents.
    fn parse_contents(b: &[u8]) -> Result<Self, IeErrorKind>;
    /// Length of the contents.
    fn contents_len(&self) -> usize;
    /// Writes the contents.
    fn emit_contents(&self, buf: &mut [u8]);
    /// Octet 2 of the header to emit (ITU-T coding unless the IE says otherwise).
    fn flags(&self) -> IeFlags {
        IeFlags::ITU
    }

    /// Header plus contents.
    fn buffer_len(&self) -> usize {
        IE_HEADER_LEN + self.contents_len()
    }

    /// Writes header and contents; returns the bytes written. Panics if `buf` is shorter
    /// than [`IeCodec::buffer_len`].
    fn emit(&self, buf: &mut [u8]) -> usize {
        let n = self.contents_len();
        buf[0] = Self::ID.code();
        buf[1] = self.flags().to_octet();
        // Contents are bounded well below 64 KiB by each IE's own limits.
        buf[2..4].copy_from_slice(&(n as u16).to_be_bytes());
        self.emit_contents(&mut buf[4..4 + n]);
        4 + n
    }
}

/// An IE natm does not decode (or one not allowed where it was found), kept as received.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawIe {
    /// The identifier.
    pub id: IeId,
    /// Octet 2 of its header.
    pub flags: IeFlags,
    /// The contents (at most 65535 bytes).
    pub contents: Vec<u8>,
}

impl RawIe {
    /// Header plus contents (contents cut at 65535 bytes, as `emit` does).
    pub fn buffer_len(&self) -> usize {
        IE_HEADER_LEN + self.contents.len().min(usize::from(u16::MAX))
    }

    /// Writes the IE; panics if `buf` is shorter than `buffer_len()`. Contents longer than
    /// 65535 bytes are cut there.
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let c = &self.contents[..self.contents.len().min(usize::from(u16::MAX))];
        buf[0] = self.id.code();
        buf[1] = self.flags.to_octet();
        buf[2..4].copy_from_slice(&(c.len() as u16).to_be_bytes());
        buf[4..4 + c.len()].copy_from_slice(c);
        4 + c.len()
    }
}

impl fmt::Display for RawIe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ie 0x{:02x} flags 0x{:02x} [",
            self.id.code(),
            self.flags.to_octet()
        )?;
        hex(f, &self.contents)?;
        f.write_str("]")
    }
}

/// Lower-case hex without separators.
pub(crate) fn hex(f: &mut fmt::Formatter<'_>, b: &[u8]) -> fmt::Result {
    for x in b {
        write!(f, "{x:02x}")?;
    }
    Ok(())
}

/// A cursor over IE contents that never panics.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    pub(crate) fn u8(&mut self) -> Result<u8, IeErrorKind> {
        let b = *self.buf.get(self.pos).ok_or(IeErrorKind::Truncated)?;
        self.pos += 1;
        Ok(b)
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], IeErrorKind> {
        let end = self.pos.checked_add(n).ok_or(IeErrorKind::Truncated)?;
        let s = self.buf.get(self.pos..end).ok_or(IeErrorKind::Truncated)?;
        self.pos = end;
        Ok(s)
    }

    pub(crate) fn u16(&mut self) -> Result<u16, IeErrorKind> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub(crate) fn u24(&mut self) -> Result<u32, IeErrorKind> {
        let b = self.bytes(3)?;
        Ok(u32::from_be_bytes([0, b[0], b[1], b[2]]))
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let s = self.buf.get(self.pos..).unwrap_or(&[]);
        self.pos = self.buf.len();
        s
    }

    pub(crate) fn end(&self) -> Result<(), IeErrorKind> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(IeErrorKind::Trailing)
        }
    }
}

/// A cursor for emission; panics when the buffer is too short (the caller sized it).
pub(crate) struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Writer<'a> {
        Writer { buf, pos: 0 }
    }

    pub(crate) fn u8(&mut self, v: u8) {
        self.buf[self.pos] = v;
        self.pos += 1;
    }

    pub(crate) fn bytes(&mut self, v: &[u8]) {
        self.buf[self.pos..self.pos + v.len()].copy_from_slice(v);
        self.pos += v.len();
    }

    pub(crate) fn u16(&mut self, v: u16) {
        self.bytes(&v.to_be_bytes());
    }

    /// The low 24 bits of `v`.
    pub(crate) fn u24(&mut self, v: u32) {
        self.bytes(&v.to_be_bytes()[1..]);
    }
}

/// Sets `slot` once; a second value is a repeated subfield.
pub(crate) fn once<T>(slot: &mut Option<T>, id: u8, v: T) -> Result<(), IeErrorKind> {
    if slot.is_some() {
        return Err(IeErrorKind::RepeatedSubfield(id));
    }
    *slot = Some(v);
    Ok(())
}

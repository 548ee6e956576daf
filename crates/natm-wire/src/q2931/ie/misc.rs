//! Restart indicator (0x79; Q.2931 §4.5.21), call state (0x14; §4.5.10), notification
//! indicator (0x27; UNI 4.0 §4.8) and broadband repeat indicator (0x63; §4.5.19).

use alloc::vec::Vec;
use core::fmt;

use super::{IeCodec, IeErrorKind, IeId, Reader, Writer, hex, open_enum};

open_enum! {
    /// Restart class (octet 5 bits 3-1).
    pub enum RestartClass: u8 {
        /// The VC in the connection identifier (0).
        IndicatedVc = 0,
        /// All VCs in the VPC of the connection identifier (1).
        AllVcsInVpc = 1,
        /// All VCs of the interface (2).
        AllVcs = 2,
    }
}

/// The restart indicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RestartIndicator {
    /// What is restarted.
    pub class: RestartClass,
}

impl IeCodec for RestartIndicator {
    const ID: IeId = IeId::RestartIndicator;

    fn parse_contents(b: &[u8]) -> Result<RestartIndicator, IeErrorKind> {
        let mut r = Reader::new(b);
        let o5 = r.u8()?;
        r.end()?;
        if o5 & 0x80 == 0 {
            return Err(IeErrorKind::Invalid("octet 5 extension bit"));
        }
        Ok(RestartIndicator {
            class: RestartClass::from_code(o5 & 7),
        })
    }

    fn contents_len(&self) -> usize {
        1
    }

    fn emit_contents(&self, buf: &mut [u8]) {
        buf[0] = 0x80 | (self.class.code() & 7);
    }
}

impl fmt::Display for RestartIndicator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.class {
            RestartClass::IndicatedVc => f.write_str("indicated VC"),
            RestartClass::AllVcsInVpc => f.write_str("all VCs in the VPC"),
            RestartClass::AllVcs => f.write_str("all VCs"),
            RestartClass::Unknown(v) => write!(f, "class {v}"),
        }
    }
}

open_enum! {
    /// A call state (6 bits; Q.2931 §2.1, user-side names: the network side's N-states
    /// share the numbers). Discriminants are the spec's numbers.
    pub enum CallState: u8 {
        /// U0/N0 Null.
        Null = 0,
        /// U1/N1 Call initiated.
        CallInitiated = 1,
        /// U3/N3 Outgoing call proceeding.
        OutgoingCallProceeding = 3,
        /// U4/N4 Call delivered.
        CallDelivered = 4,
        /// U6/N6 Call present.
        CallPresent = 6,
        /// U7/N7 Call received.
        CallReceived = 7,
        /// U8/N8 Connect request.
        ConnectRequest = 8,
        /// U9/N9 Incoming call proceeding.
        IncomingCallProceeding = 9,
        /// U10/N10 Active.
        Active = 10,
        /// U11/N11 Release request.
        ReleaseRequest = 11,
        /// U12/N12 Release indication.
        ReleaseIndication = 12,
        /// REST1 Restart request (global call reference).
        RestartRequest = 0x3D,
        /// REST2 Restart (global call reference).
        Restart = 0x3E,
    }
}

impl IeCodec for CallState {
    const ID: IeId = IeId::CallState;

    fn parse_contents(b: &[u8]) -> Result<CallState, IeErrorKind> {
        let mut r = Reader::new(b);
        let o5 = r.u8()?;
        r.end()?;
        Ok(CallState::from_code(o5 & 0x3F))
    }

    fn contents_len(&self) -> usize {
        1
    }

    fn emit_contents(&self, buf: &mut [u8]) {
        buf[0] = self.code() & 0x3F;
    }
}

impl fmt::Display for CallState {
    /// `U10 (active)`-style: the number and the name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallState::Unknown(v) => write!(f, "{v} (unknown)"),
            s => write!(f, "{} ({s:?})", s.code()),
        }
    }
}

/// The notification indicator: its notification description, undecoded.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Notification {
    /// The contents (at least one byte).
    pub description: Vec<u8>,
}

impl IeCodec for Notification {
    const ID: IeId = IeId::Notification;

    fn parse_contents(b: &[u8]) -> Result<Notification, IeErrorKind> {
        if b.is_empty() {
            return Err(IeErrorKind::Truncated);
        }
        Ok(Notification {
            description: b.to_vec(),
        })
    }

    fn contents_len(&self) -> usize {
        self.description.len()
    }

    fn emit_contents(&self, buf: &mut [u8]) {
        Writer::new(buf).bytes(&self.description);
    }
}

impl fmt::Display for Notification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        hex(f, &self.description)
    }
}

/// The broadband repeat indicator (before repeated BLLIs in Q.2931).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RepeatIndicator {
    /// Repeat indication (4 bits): 2 = prioritised list for selecting one possibility.
    pub indication: u8,
}

impl IeCodec for RepeatIndicator {
    const ID: IeId = IeId::RepeatIndicator;

    fn parse_contents(b: &[u8]) -> Result<RepeatIndicator, IeErrorKind> {
        let mut r = Reader::new(b);
        let o5 = r.u8()?;
        r.end()?;
        if o5 & 0x80 == 0 {
            return Err(IeErrorKind::Invalid("octet 5 extension bit"));
        }
        Ok(RepeatIndicator {
            indication: o5 & 0x0F,
        })
    }

    fn contents_len(&self) -> usize {
        1
    }

    fn emit_contents(&self, buf: &mut [u8]) {
        buf[0] = 0x80 | (self.indication & 0x0F);
    }
}

//! Q.2931 / UNI 3.1 / UNI 4.0 signalling messages and information elements (point to
//! point), as natm's call control and `natm dump` see them.
//!
//! A [`Message`] is the [`Header`] (call reference and flag, message type, compatibility
//! instruction) and its IEs in typed form: one field per kind of IE (AAL parameters, ATM
//! traffic descriptor, bearer capability, BHLI, up to three BLLI, called and calling party
//! numbers and subaddresses, connection identifier, QoS parameter, cause, end-to-end
//! transit delay, restart indicator, call state, notification indicator, and the UNI 4.0
//! minimum/alternative traffic descriptors and extended QoS parameters), plus the IEs natm
//! does not decode, kept raw.
//!
//! ```
//! use natm_wire::q2931::{CallRef, Cause, CauseValue, Header, Location, Message, MsgType};
//!
//! let mut release = Message::new(Header::new(MsgType::Release, CallRef::new(1, false)));
//! release.cause.push(Cause::new(Location::User, CauseValue::NormalCallClearing));
//! let bytes = release.to_vec();
//! assert_eq!(bytes, [0x09, 0x03, 0, 0, 1, 0x4d, 0x80, 0, 6, 0x08, 0x80, 0, 2, 0x80, 0x90]);
//!
//! let parsed = Message::parse(&bytes).unwrap();
//! assert!(parsed.problems.is_empty());
//! assert_eq!(parsed.message, release);
//! assert_eq!(
//!     parsed.message.to_string(),
//!     "RELEASE cr=1 flag=0 cause=[16 (normal call clearing) at U]"
//! );
//! ```
//!
//! # Errors, and what Q.2931 §5.6 asks of call control
//!
//! [`Message::parse`] never panics. It fails with a [`ParseError`] only for the messages
//! §5.6.1–5.6.3 ignore as a whole: too short, protocol discriminator not 0x09, call
//! reference length not 3, message length inconsistent with the bytes, an IE running past
//! the end. Otherwise it returns the message with every IE that parsed, and a list of
//! [`IeProblem`]s, the distinctions §5.6.7–5.6.8 act on:
//!
//! * [`IeProblem::Unrecognised`]: an IE natm does not decode (kept raw in
//!   [`Message::unknown`]) with its header's flag and action indicator (§5.6.8.1);
//! * [`IeProblem::ContentError`]: an IE whose contents are wrong, marked mandatory or not
//!   for this message type (§5.6.7.2, §5.6.8.2); the IE is left out of the message;
//! * [`IeProblem::MandatoryMissing`]: per [`Message::mandatory`] (§5.6.7.1);
//! * [`IeProblem::Repeated`]: a non-repeatable IE seen again; the first is kept (§5.6.8.4).
//!
//! The message type itself is an open enum: an unknown type parses (IEs included) as
//! [`MsgType::Unknown`], for call control's §5.6.4. Whether an IE belongs in a message
//! type is not checked here, nor is anything that depends on the call's state.
//!
//! # What this module is not
//!
//! Not call control (natm-sig), not SSCOP, no point-to-multipoint (ADD PARTY and its IEs
//! parse as an unknown message type with unrecognised IEs), no PNNI. AAL types other than
//! AAL5 keep their subfields raw.
//!
//! [`qos`] maps natm's [`Qos`](natm_core::Qos) to and from the IEs that carry it.
//! [`view::MessageView`] reads the header in place and walks the IEs undecoded (for a
//! dump that shows them in wire order, or a quick look at the call reference).
//!
//! Byte layouts are in atm-facts §5; each IE's file names its standard section.

pub mod cause;
mod header;
pub mod ie;
mod message;
pub mod qos;
pub mod view;

#[cfg(any(test, feature = "sample"))]
pub mod sample;

use core::fmt;

pub use cause::{Cause, CauseValue, Location};
pub use header::{
    CALL_REF_LEN, CallRef, HEADER_LEN, Header, MsgAction, MsgInstruction, MsgType,
    PROTOCOL_DISCRIMINATOR,
};
pub use ie::{
    AalParams, AalType, Atc, BearerCapability, BearerClass, Bhli, BhliType, Blli, BlliLayer,
    CallState, CodingStandard, ConnectionId, ExtQos, IeAction, IeCodec, IeErrorKind, IeFlags, IeId,
    Notification, Number, PartyNumber, PrefExcl, Presentation, QosClass, QosParam, RawIe,
    RepeatIndicator, RestartClass, RestartIndicator, Screening, SscsType, Subaddress,
    SubaddressType, TmOptions, TrafficDescriptor, TrafficDirection, TransitDelay, UserPlane,
    VpAssoc,
};
pub use message::{MAX_BLLI, MAX_CAUSE, Message, Parsed};
pub use view::{IeIter, IeRef, MessageView};

/// Why a whole message was rejected (Q.2931 §5.6.1–5.6.3: such messages are ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParseError {
    /// Shorter than the 9-byte header.
    TooShort {
        /// Bytes given.
        len: usize,
    },
    /// The protocol discriminator is not 0x09.
    ProtocolDiscriminator(u8),
    /// The call reference length byte is not 3.
    CallRefLength(u8),
    /// The message length field does not match the bytes after the header.
    LengthMismatch {
        /// What the length field says.
        declared: usize,
        /// Bytes after the header.
        actual: usize,
    },
    /// An IE header or its contents run past the end of the message.
    IeTruncated {
        /// Offset of the IE's first byte.
        offset: usize,
    },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::TooShort { len } => {
                write!(
                    f,
                    "Q.2931 message too short: {len} bytes, the header has {HEADER_LEN}"
                )
            }
            ParseError::ProtocolDiscriminator(b) => {
                write!(f, "protocol discriminator 0x{b:02x}, not Q.2931's 0x09")
            }
            ParseError::CallRefLength(b) => {
                write!(f, "call reference length byte 0x{b:02x}, not 3")
            }
            ParseError::LengthMismatch { declared, actual } => write!(
                f,
                "message length field says {declared} bytes, {actual} follow the header"
            ),
            ParseError::IeTruncated { offset } => {
                write!(f, "information element at byte {offset} runs past the end")
            }
        }
    }
}

impl core::error::Error for ParseError {}

/// One IE problem of a parsed message (Q.2931 §5.6.7–5.6.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IeProblem {
    /// An IE natm does not decode; kept in [`Message::unknown`]. Q.2931 §5.6.8.1 applies
    /// `flags.action` when `flags.flag` is set.
    Unrecognised {
        /// The identifier.
        id: IeId,
        /// Its header octet 2: coding, flag and action indicator.
        flags: IeFlags,
    },
    /// An IE with wrong contents, left out of the message.
    ContentError {
        /// The identifier.
        id: IeId,
        /// Whether the IE is mandatory in this message type ([`Message::mandatory`]).
        mandatory: bool,
        /// What was wrong.
        error: IeErrorKind,
    },
    /// A mandatory IE is absent.
    MandatoryMissing {
        /// The identifier.
        id: IeId,
    },
    /// An IE repeated where it may not be (or a BLLI beyond the third, a cause beyond the
    /// second); the first ones are kept.
    Repeated {
        /// The identifier.
        id: IeId,
    },
}

impl IeProblem {
    /// The IE concerned.
    pub const fn id(&self) -> IeId {
        match *self {
            IeProblem::Unrecognised { id, .. }
            | IeProblem::ContentError { id, .. }
            | IeProblem::MandatoryMissing { id }
            | IeProblem::Repeated { id } => id,
        }
    }

    /// The cause a STATUS or RELEASE COMPLETE reporting it carries (99, 100, 96), with the
    /// IE identifier as diagnostic; `None` for a repeated IE (ignored silently).
    pub const fn cause(&self) -> Option<CauseValue> {
        match self {
            IeProblem::Unrecognised { .. } => Some(CauseValue::IeNonExistent),
            IeProblem::ContentError { .. } => Some(CauseValue::InvalidIeContents),
            IeProblem::MandatoryMissing { .. } => Some(CauseValue::MandatoryIeMissing),
            IeProblem::Repeated { .. } => None,
        }
    }
}

impl fmt::Display for IeProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IeProblem::Unrecognised { id, flags } => {
                write!(f, "unrecognised IE 0x{:02x}", id.code())?;
                if flags.flag {
                    write!(f, " (action {:?})", flags.action)?;
                }
                Ok(())
            }
            IeProblem::ContentError {
                id,
                mandatory,
                error,
            } => write!(
                f,
                "{}IE 0x{:02x}: {error}",
                if *mandatory { "mandatory " } else { "" },
                id.code()
            ),
            IeProblem::MandatoryMissing { id } => {
                write!(f, "mandatory IE 0x{:02x} missing", id.code())
            }
            IeProblem::Repeated { id } => write!(f, "IE 0x{:02x} repeated", id.code()),
        }
    }
}

#[cfg(test)]
mod tests;

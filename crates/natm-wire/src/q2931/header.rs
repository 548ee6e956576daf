//! The message header (Q.2931 §4.1–4.4, atm-facts §5.1).
//!
//! ```text
//! 0     protocol discriminator 0x09
//! 1     0000 | call reference length (3)
//! 2-4   flag | call reference value (23 bits)
//! 5     message type
//! 6     1 | spare (2) | flag | pass-along | spare | action indicator (2)
//! 7-8   message length: bytes after byte 8
//! ```

use core::fmt;

use super::ParseError;
use super::ie::open_enum;
use super::view::MessageView;

/// Q.2931 / UNI protocol discriminator.
pub const PROTOCOL_DISCRIMINATOR: u8 = 0x09;
/// Bytes before the first IE.
pub const HEADER_LEN: usize = 9;
/// The only call reference length UNI signalling uses.
pub const CALL_REF_LEN: u8 = 3;

/// A call reference: a 23-bit value and the flag.
///
/// The flag is `false` in messages from the side that allocated the reference and `true`
/// in messages to it. Value 0 is the global call reference (RESTART, RESTART ACK).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallRef {
    /// The value, below 2²³ (emission keeps the low 23 bits).
    pub value: u32,
    /// `true` in messages sent to the side that allocated the value.
    pub flag: bool,
}

impl CallRef {
    /// The largest value.
    pub const MAX: u32 = 0x7F_FFFF;
    /// The global call reference, from its allocator.
    pub const GLOBAL: CallRef = CallRef {
        value: 0,
        flag: false,
    };

    /// A call reference.
    pub const fn new(value: u32, flag: bool) -> CallRef {
        CallRef { value, flag }
    }

    /// Whether this is the global call reference.
    pub const fn is_global(self) -> bool {
        self.value == 0
    }

    /// The same value with the flag flipped: how the peer's answer names it.
    pub const fn reply(self) -> CallRef {
        CallRef {
            value: self.value,
            flag: !self.flag,
        }
    }
}

impl fmt::Display for CallRef {
    /// `cr=1 flag=0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cr={} flag={}", self.value, u8::from(self.flag))
    }
}

open_enum! {
    /// The message type (Q.2931 §4.4, UNI 4.0 additions).
    pub enum MsgType: u8 {
        /// ALERTING (0x01, UNI 4.0).
        Alerting = 0x01,
        /// CALL PROCEEDING (0x02).
        CallProceeding = 0x02,
        /// SETUP (0x05).
        Setup = 0x05,
        /// CONNECT (0x07).
        Connect = 0x07,
        /// CONNECT ACKNOWLEDGE (0x0F).
        ConnectAck = 0x0F,
        /// RESTART (0x46).
        Restart = 0x46,
        /// RELEASE (0x4D).
        Release = 0x4D,
        /// RESTART ACKNOWLEDGE (0x4E).
        RestartAck = 0x4E,
        /// RELEASE COMPLETE (0x5A).
        ReleaseComplete = 0x5A,
        /// NOTIFY (0x6E, UNI 4.0).
        Notify = 0x6E,
        /// STATUS ENQUIRY (0x75).
        StatusEnquiry = 0x75,
        /// STATUS (0x7D).
        Status = 0x7D,
    }
}

impl MsgType {
    /// Every named type.
    pub const ALL: [MsgType; 12] = [
        MsgType::Alerting,
        MsgType::CallProceeding,
        MsgType::Setup,
        MsgType::Connect,
        MsgType::ConnectAck,
        MsgType::Restart,
        MsgType::Release,
        MsgType::RestartAck,
        MsgType::ReleaseComplete,
        MsgType::Notify,
        MsgType::StatusEnquiry,
        MsgType::Status,
    ];

    /// The standard's name (`CALL PROCEEDING`), or `None` for an unknown type.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self {
            MsgType::Alerting => "ALERTING",
            MsgType::CallProceeding => "CALL PROCEEDING",
            MsgType::Setup => "SETUP",
            MsgType::Connect => "CONNECT",
            MsgType::ConnectAck => "CONNECT ACK",
            MsgType::Restart => "RESTART",
            MsgType::Release => "RELEASE",
            MsgType::RestartAck => "RESTART ACK",
            MsgType::ReleaseComplete => "RELEASE COMPLETE",
            MsgType::Notify => "NOTIFY",
            MsgType::StatusEnquiry => "STATUS ENQUIRY",
            MsgType::Status => "STATUS",
            MsgType::Unknown(_) => return None,
        })
    }
}

impl fmt::Display for MsgType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "message type 0x{:02x}", self.code()),
        }
    }
}

open_enum! {
    /// The message action indicator (byte 6 bits 2-1), applied to an unrecognised message
    /// whose flag is set (Q.2931 §5.6.4).
    pub enum MsgAction: u8 {
        /// Clear call (0).
        ClearCall = 0,
        /// Discard and ignore (1).
        DiscardIgnore = 1,
        /// Discard and report status (2).
        DiscardReport = 2,
    }
}

/// Byte 6: the message compatibility instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MsgInstruction {
    /// Whether the action indicator is to be followed (0x10).
    pub flag: bool,
    /// PNNI pass-along request (0x08).
    pub pass_along: bool,
    /// The action indicator.
    pub action: MsgAction,
}

impl MsgInstruction {
    /// "No explicit instruction" (0x80), what UNI 3.1 always sends.
    pub const NONE: MsgInstruction = MsgInstruction {
        flag: false,
        pass_along: false,
        action: MsgAction::ClearCall,
    };

    /// From byte 6.
    pub const fn from_octet(b: u8) -> MsgInstruction {
        MsgInstruction {
            flag: b & 0x10 != 0,
            pass_along: b & 0x08 != 0,
            action: MsgAction::from_code(b & 3),
        }
    }

    /// Byte 6.
    pub const fn to_octet(self) -> u8 {
        0x80 | if self.flag { 0x10 } else { 0 }
            | if self.pass_along { 0x08 } else { 0 }
            | (self.action.code() & 3)
    }
}

impl Default for MsgInstruction {
    fn default() -> MsgInstruction {
        MsgInstruction::NONE
    }
}

/// The message header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// The call reference.
    pub call_ref: CallRef,
    /// The message type.
    pub msg_type: MsgType,
    /// The message compatibility instruction.
    pub instruction: MsgInstruction,
}

impl Header {
    /// A header with no explicit instruction.
    pub const fn new(msg_type: MsgType, call_ref: CallRef) -> Header {
        Header {
            call_ref,
            msg_type,
            instruction: MsgInstruction::NONE,
        }
    }

    /// Parses the header of `b` and checks the message length against `b`'s: returns the
    /// header and the IE bytes. Never panics.
    pub fn parse(b: &[u8]) -> Result<(Header, &[u8]), ParseError> {
        let v = MessageView::new_checked(b)?;
        Ok((v.header(), &b[HEADER_LEN..]))
    }

    /// Writes the header with message length `len`; panics if `buf` is shorter than
    /// [`HEADER_LEN`].
    pub fn emit(&self, buf: &mut [u8], len: u16) {
        let cr = (self.call_ref.value & CallRef::MAX).to_be_bytes();
        buf[0] = PROTOCOL_DISCRIMINATOR;
        buf[1] = CALL_REF_LEN;
        buf[2] = cr[1] | if self.call_ref.flag { 0x80 } else { 0 };
        buf[3] = cr[2];
        buf[4] = cr[3];
        buf[5] = self.msg_type.code();
        buf[6] = self.instruction.to_octet();
        buf[7..9].copy_from_slice(&len.to_be_bytes());
    }
}

impl fmt::Display for Header {
    /// `SETUP cr=1 flag=0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.msg_type, self.call_ref)?;
        if self.instruction != MsgInstruction::NONE {
            write!(f, " instr=0x{:02x}", self.instruction.to_octet())?;
        }
        Ok(())
    }
}

//! The cause IE (0x08; Q.2931 §4.5.15, Q.850, UNI 3.1 §5.4.5.15, atm-facts §5.3): where a
//! call was cleared, why, and the diagnostics.
//!
//! ```text
//! 5   1 | spare (3) | location (4)       Q.850 codes (Wireshark's; ngatm's differ, §10)
//! 6   1 | cause value (7)
//! 7.. diagnostics (at most 28 bytes)
//! ```

use alloc::vec::Vec;
use core::fmt;

use super::ie::{IeCodec, IeErrorKind, IeId, Reader, Writer, hex, open_enum};

open_enum! {
    /// Where the cause was generated (Q.850 §2.2.3).
    pub enum Location: u8 {
        /// User (U, 0).
        User = 0,
        /// Private network serving the local user (LPN, 1).
        PrivateLocal = 1,
        /// Public network serving the local user (LN, 2).
        PublicLocal = 2,
        /// Transit network (TN, 3).
        Transit = 3,
        /// Public network serving the remote user (RLN, 4).
        PublicRemote = 4,
        /// Private network serving the remote user (RPN, 5).
        PrivateRemote = 5,
        /// International network (INTL, 7).
        International = 7,
        /// Network beyond the interworking point (BI, 10).
        BeyondInterworking = 10,
    }
}

impl Location {
    /// Q.850's abbreviation (`U`, `LPN`, `LN`, `TN`, `RLN`, `RPN`, `INTL`, `BI`).
    pub const fn abbrev(self) -> &'static str {
        match self {
            Location::User => "U",
            Location::PrivateLocal => "LPN",
            Location::PublicLocal => "LN",
            Location::Transit => "TN",
            Location::PublicRemote => "RLN",
            Location::PrivateRemote => "RPN",
            Location::International => "INTL",
            Location::BeyondInterworking => "BI",
            Location::Unknown(_) => "?",
        }
    }
}

macro_rules! causes {
    ($( $(#[$m:meta])* $v:ident = $n:expr, $name:expr; )*) => {
        /// A cause value (7 bits): an open enum whose discriminants are Q.850 / Q.2931 /
        /// UNI 3.1 numbers. `Display` writes `16 (normal call clearing)`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum CauseValue {
            $( $(#[$m])* #[doc = $name] $v, )*
            /// A value with no name here.
            Unknown(u8),
        }

        impl CauseValue {
            /// From the 7-bit value.
            pub const fn from_code(v: u8) -> CauseValue {
                match v {
                    $( $n => CauseValue::$v, )*
                    other => CauseValue::Unknown(other),
                }
            }

            /// The 7-bit value.
            pub const fn code(self) -> u8 {
                match self {
                    $( CauseValue::$v => $n, )*
                    CauseValue::Unknown(v) => v,
                }
            }

            /// The standard's name, or `None` for an unknown value.
            pub const fn name(self) -> Option<&'static str> {
                match self {
                    $( CauseValue::$v => Some($name), )*
                    CauseValue::Unknown(_) => None,
                }
            }
        }
    };
}

causes! {
    UnallocatedNumber = 1, "unallocated (unassigned) number";
    NoRouteToTransitNetwork = 2, "no route to specified transit network";
    NoRouteToDestination = 3, "no route to destination";
    VpciVciUnacceptable = 10, "VPCI/VCI unacceptable";
    NormalCallClearing = 16, "normal call clearing";
    UserBusy = 17, "user busy";
    NoUserResponding = 18, "no user responding";
    CallRejected = 21, "call rejected";
    NumberChanged = 22, "number changed";
    ClirRejected = 23, "user rejects calls with calling line identification restriction";
    DestinationOutOfOrder = 27, "destination out of order";
    InvalidNumberFormat = 28, "invalid number format (address incomplete)";
    ResponseToStatusEnquiry = 30, "response to STATUS ENQUIRY";
    NormalUnspecified = 31, "normal, unspecified";
    VpciVciNotAvailable = 35, "requested VPCI/VCI not available";
    VpciVciAssignmentFailure = 36, "VPCI/VCI assignment failure";
    UserCellRateNotAvailable = 37, "user cell rate not available";
    NetworkOutOfOrder = 38, "network out of order";
    TemporaryFailure = 41, "temporary failure";
    AccessInfoDiscarded = 43, "access information discarded";
    NoVpciVciAvailable = 45, "no VPCI/VCI available";
    ResourceUnavailable = 47, "resource unavailable, unspecified";
    QosUnavailable = 49, "quality of service unavailable";
    UserCellRateNotAvailable31 = 51, "user cell rate not available (UNI 3.1)";
    BearerCapNotAuthorised = 57, "bearer capability not authorized";
    BearerCapNotAvailable = 58, "bearer capability not presently available";
    ServiceNotAvailable = 63, "service or option not available, unspecified";
    BearerCapNotImplemented = 65, "bearer capability not implemented";
    UnsupportedTrafficParams = 73, "unsupported combination of traffic parameters";
    AalParamsNotSupported31 = 78, "AAL parameters cannot be supported (UNI 3.1)";
    InvalidCallRef = 81, "invalid call reference value";
    ChannelDoesNotExist = 82, "identified channel does not exist";
    IncompatibleDestination = 88, "incompatible destination";
    InvalidEndpointRef = 89, "invalid endpoint reference";
    InvalidTransitNetwork = 91, "invalid transit network selection";
    TooManyAddParty = 92, "too many pending add party requests";
    AalParamsNotSupported = 93, "AAL parameters cannot be supported";
    MandatoryIeMissing = 96, "mandatory information element is missing";
    MessageTypeNonExistent = 97, "message type non-existent or not implemented";
    IeNonExistent = 99, "information element non-existent or not implemented";
    InvalidIeContents = 100, "invalid information element contents";
    MessageNotCompatible = 101, "message not compatible with call state";
    RecoveryOnTimerExpiry = 102, "recovery on timer expiry";
    IncorrectMessageLength = 104, "incorrect message length";
    ProtocolError = 111, "protocol error, unspecified";
    Interworking = 127, "interworking, unspecified";
}

impl From<u8> for CauseValue {
    fn from(v: u8) -> CauseValue {
        CauseValue::from_code(v)
    }
}

impl fmt::Display for CauseValue {
    /// `16 (normal call clearing)`; `5 (unknown)` for a value without a name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.code(), self.name().unwrap_or("unknown"))
    }
}

/// Most diagnostic bytes (the cause IE is at most 34 bytes long).
pub const MAX_DIAGNOSTICS: usize = 28;

/// The cause IE.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Cause {
    /// Where the cause was generated.
    pub location: Location,
    /// Why.
    pub value: CauseValue,
    /// Diagnostics, at most [`MAX_DIAGNOSTICS`] bytes (for cause 102 the timer's number
    /// in IA5 digits, e.g. `b"303"`; for 96, 99 and 100 the IE identifiers).
    pub diagnostics: Vec<u8>,
}

impl Cause {
    /// A cause without diagnostics.
    pub const fn new(location: Location, value: CauseValue) -> Cause {
        Cause {
            location,
            value,
            diagnostics: Vec::new(),
        }
    }
}

impl IeCodec for Cause {
    const ID: IeId = IeId::Cause;

    fn parse_contents(b: &[u8]) -> Result<Cause, IeErrorKind> {
        let mut r = Reader::new(b);
        let o5 = r.u8()?;
        if o5 & 0x80 == 0 {
            return Err(IeErrorKind::Invalid("octet 5 extension bit"));
        }
        let o6 = r.u8()?;
        if o6 & 0x80 == 0 {
            return Err(IeErrorKind::Invalid("octet 6 extension bit"));
        }
        let diagnostics = r.rest();
        if diagnostics.len() > MAX_DIAGNOSTICS {
            return Err(IeErrorKind::BadLength);
        }
        Ok(Cause {
            location: Location::from_code(o5 & 0x0F),
            value: CauseValue::from_code(o6 & 0x7F),
            diagnostics: diagnostics.to_vec(),
        })
    }

    fn contents_len(&self) -> usize {
        2 + self.diagnostics.len()
    }

    fn emit_contents(&self, buf: &mut [u8]) {
        let mut w = Writer::new(buf);
        w.u8(0x80 | (self.location.code() & 0x0F));
        w.u8(0x80 | (self.value.code() & 0x7F));
        w.bytes(&self.diagnostics);
    }
}

impl fmt::Display for Cause {
    /// `16 (normal call clearing) at U`, then the diagnostics: IE identifiers for causes
    /// 43, 88, 96, 99 and 100 (`diag ie 5c,59`), the message type for 97 and 101
    /// (`diag msg 0x05`), otherwise the text when it is printable (cause 102's timer:
    /// `diag "303"`) or hex (`diag 5c00`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at ", self.value)?;
        match self.location {
            Location::Unknown(v) => write!(f, "location {v}")?,
            l => f.write_str(l.abbrev())?,
        }
        let d = &self.diagnostics;
        if d.is_empty() {
            return Ok(());
        }
        match self.value.code() {
            43 | 88 | 96 | 99 | 100 => {
                f.write_str(" diag ie ")?;
                for (i, id) in d.iter().enumerate() {
                    let sep = if i == 0 { "" } else { "," };
                    write!(f, "{sep}{id:02x}")?;
                }
                Ok(())
            }
            97 | 101 if d.len() == 1 => write!(f, " diag msg 0x{:02x}", d[0]),
            _ if d.iter().all(|c| c.is_ascii_graphic()) => {
                f.write_str(" diag \"")?;
                for &c in d {
                    write!(f, "{}", char::from(c))?;
                }
                f.write_str("\"")
            }
            _ => {
                f.write_str(" diag ")?;
                hex(f, d)
            }
        }
    }
}

//! The TPDU header: what one AAL5 frame of the transport carries before its payload.
//!
//! A TPDU is one AAL5 CPCS-SDU: this header, then (for data) up to
//! [`Config::tpdu_size`](crate::Config::tpdu_size) payload bytes. AAL5's CRC-32 already drops
//! corrupt frames, so there is no checksum here; AAL5's length field delimits the frame, so
//! there is no length either. All integers are big-endian.
//!
//! ```text
//! data TPDU (12 bytes; 25 or 33 with an ack riding on it; then the payload)
//!  0         1         2         3         4               8               12
//! +----+----+---------+---------+---------+---------------+---------------+---------
//! |ver |kind| service |  flags  |   tx    |      seq      |      msg      | payload…
//! +----+----+---------+---------+---------+---------------+---------------+---------
//!   flags: 0x80 FIRST (first TPDU of its message), 0x40 LAST (last TPDU of its message),
//!          0x20 ACK (an ack rides on this TPDU: its fields follow the 12 bytes, before
//!          the payload), 0x10 BITMAP (the riding ack's bitmap follows them; without it
//!          the bitmap is 0), 0x08 NO_TRIGGER (the riding ack has no trigger)
//!
//! the ack riding on a data TPDU (13 bytes, 21 with BITMAP), at byte 12
//!  12        13        17        21        25                  33
//! +---------+---------+---------+---------+-------------------+
//! |  echo   |   cum   | trigger | window  | bitmap (if BITMAP)|
//! +---------+---------+---------+---------+-------------------+
//!
//! ack TPDU (24 bytes, nothing after)
//!  0         1         2         3         4         8         12        16                  24
//! +----+----+---------+---------+---------+---------+---------+---------+-------------------+
//! |ver |kind| service |  flags  |  echo   |   cum   | trigger | window  |      bitmap       |
//! +----+----+---------+---------+---------+---------+---------+---------+-------------------+
//!   flags: 0x80 NO_TRIGGER (no data TPDU caused this ack: a window update, or the answer to
//!          a TPDU dropped beyond the window; `trigger` and `echo` are 0 and mean nothing)
//! ```
//!
//! * `ver` is [`VERSION`] (1) in the high nibble of byte 0; `kind` is 0 for data, 1 for ack.
//! * `service` is the channel's [`ServiceKind`]: 0 reliable, 1 best effort, 2 guaranteed.
//! * `seq` numbers TPDUs, `msg` numbers messages; both are 32-bit and wrap (serial-number
//!   arithmetic). Every TPDU of one message carries the message's `msg`.
//! * `cum` is the cumulative ack: every `seq` before it has been received. `trigger` is the
//!   `seq` of the data TPDU that caused this ack (SMART, Keshav & Morgan): with it the sender
//!   learns exactly which TPDU got through, and resends the older ones still missing.
//! * `window` is the advertised receive window in TPDUs: the sender may have TPDUs up to
//!   `cum + window` (exclusive) outstanding.
//! * `tx` counts the transmissions of this `seq` before this one (0 the first time, mod
//!   256); the ack's `echo` repeats the trigger's `tx`. With it the sender knows which
//!   transmission of a resent TPDU got through, so SMART's "was this sent before the
//!   trigger?" has an exact answer for resends too (a TPDU resent after the trigger's first
//!   transmission but before its resend is then known lost).
//! * `bitmap` bit `i` (bit 0 the least significant) set: TPDU `cum + 1 + i` has been
//!   received too (`cum` itself is the first one missing). It repairs what lost acks hid.
//! * An ack rides on a data TPDU going the other way when one leaves at the same time and
//!   has room for it (the frame stays within the channel's largest): a request and its
//!   reply then move one frame each way, as raw AAL5 does, instead of two. A riding ack
//!   means what the same ack alone would; with its bitmap left out when it is zero, an
//!   8-byte message and its ack fit one cell. A riding ack is of the TPDU's service.
//!
//! Unknown flag bits must be zero: a frame that sets them was made by something else, and
//! is refused with a [`HeaderError`] that says which field. Parsing never panics.
//!
//! # Fuzzing
//!
//! `fuzz/fuzz_targets/transport_rx.rs` feeds arbitrary bytes to [`Repr::parse`] (and
//! re-emits what parses) and to an endpoint's receive path.

use core::fmt;

/// The header's version.
pub const VERSION: u8 = 1;

/// Byte ranges of the header's fields.
pub mod field {
    /// A byte range of the header.
    pub type Field = core::ops::Range<usize>;
    /// Version (high nibble) and kind (low nibble).
    pub const VER_KIND: usize = 0;
    /// The service.
    pub const SERVICE: usize = 1;
    /// The flags.
    pub const FLAGS: usize = 2;
    /// Data: the transmission number; ack: the trigger's, echoed.
    pub const TX: usize = 3;
    /// Data: the TPDU's sequence number.
    pub const SEQ: Field = 4..8;
    /// Data: the message's sequence number.
    pub const MSG: Field = 8..12;
    /// Data: the payload.
    pub const PAYLOAD: usize = 12;
    /// Ack: the cumulative ack.
    pub const CUM: Field = 4..8;
    /// Ack: the seq of the data TPDU that caused the ack.
    pub const TRIGGER: Field = 8..12;
    /// Ack: the advertised window, TPDUs.
    pub const WINDOW: Field = 12..16;
    /// Ack: the received-above-`cum` bitmap.
    pub const BITMAP: Field = 16..24;
    /// Ack: its whole length.
    pub const ACK_LEN: usize = 24;
    /// Data with an ack riding: the trigger's `tx`, echoed.
    pub const RIDE_ECHO: usize = 12;
    /// Data with an ack riding: its cumulative ack.
    pub const RIDE_CUM: Field = 13..17;
    /// Data with an ack riding: its trigger.
    pub const RIDE_TRIGGER: Field = 17..21;
    /// Data with an ack riding: its window.
    pub const RIDE_WINDOW: Field = 21..25;
    /// Data with an ack riding and `BITMAP`: its bitmap.
    pub const RIDE_BITMAP: Field = 25..33;
}

/// The length of a data TPDU's header.
pub const DATA_HEADER_LEN: usize = field::PAYLOAD;
/// The length of an ack TPDU.
pub const ACK_LEN: usize = field::ACK_LEN;

/// Data flag: the first TPDU of its message.
pub const FLAG_FIRST: u8 = 0x80;
/// Data flag: the last TPDU of its message.
pub const FLAG_LAST: u8 = 0x40;
/// Ack flag: no data TPDU caused this ack.
pub const FLAG_NO_TRIGGER: u8 = 0x80;
/// Data flag: an ack rides on this TPDU.
pub const FLAG_ACK: u8 = 0x20;
/// Data flag: the riding ack's bitmap is there (it is not zero).
pub const FLAG_ACK_BITMAP: u8 = 0x10;
/// Data flag: the riding ack has no trigger.
pub const FLAG_ACK_NO_TRIGGER: u8 = 0x08;

/// The bytes an ack adds to the data TPDU it rides on: 13, or 21 with its bitmap.
pub const fn ride_len(ack: &Ack) -> usize {
    if ack.bitmap == 0 { 13 } else { 21 }
}

const KIND_DATA: u8 = 0;
const KIND_ACK: u8 = 1;

/// The service a channel gives, as carried in every TPDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServiceKind {
    /// Reliable: SMART acks and retransmission, a window.
    Reliable = 0,
    /// Best effort: no acks, losses reported.
    BestEffort = 1,
    /// Guaranteed: a rate, no retransmission, losses reported.
    Guaranteed = 2,
}

impl ServiceKind {
    fn from_u8(v: u8) -> Option<ServiceKind> {
        match v {
            0 => Some(ServiceKind::Reliable),
            1 => Some(ServiceKind::BestEffort),
            2 => Some(ServiceKind::Guaranteed),
            _ => None,
        }
    }
}

impl fmt::Display for ServiceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ServiceKind::Reliable => "reliable",
            ServiceKind::BestEffort => "best-effort",
            ServiceKind::Guaranteed => "guaranteed",
        })
    }
}

/// What was wrong with a frame that is not a TPDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Shorter than its header.
    Truncated {
        /// Bytes its kind needs.
        need: usize,
        /// Bytes there were.
        have: usize,
    },
    /// Another version of the header.
    Version(u8),
    /// A kind that is neither data nor ack.
    Kind(u8),
    /// A service code that is none of the three.
    Service(u8),
    /// Flag bits that this kind does not define.
    Flags(u8),

    /// An ack with bytes after its 24.
    AckLength(usize),
    /// An ack that says no data TPDU caused it but names one (or echoes its `tx`).
    TriggerWithoutCause(u32),
    /// A data TPDU whose flags say its riding ack's bitmap is there, but it is zero (a
    /// zero bitmap is left out).
    ZeroBitmap,
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::Truncated { need, have } => {
                write!(f, "TPDU of {have} bytes, its header needs {need}")
            }
            HeaderError::Version(v) => write!(f, "TPDU version {v}, expected {VERSION}"),
            HeaderError::Kind(k) => write!(f, "TPDU kind {k} is neither data (0) nor ack (1)"),
            HeaderError::Service(s) => write!(f, "TPDU service {s} is unknown"),
            HeaderError::Flags(b) => write!(f, "TPDU flags {b:#04x} set undefined bits"),
            HeaderError::AckLength(n) => write!(f, "ack TPDU of {n} bytes, expected {ACK_LEN}"),
            HeaderError::TriggerWithoutCause(t) => {
                write!(f, "ack flagged NO_TRIGGER names trigger {t} or echoes a tx")
            }
            HeaderError::ZeroBitmap => {
                f.write_str("riding ack flagged BITMAP has a zero bitmap (left out when zero)")
            }
        }
    }
}

impl core::error::Error for HeaderError {}

/// A data TPDU's header fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DataHeader {
    /// The channel's service.
    pub service: ServiceKind,
    /// The first TPDU of its message.
    pub first: bool,
    /// The last TPDU of its message.
    pub last: bool,
    /// The TPDU's sequence number.
    pub seq: u32,
    /// Its message's sequence number.
    pub msg: u32,
    /// Transmissions of this `seq` before this one (mod 256).
    pub tx: u8,
}

/// An ack TPDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ack {
    /// The channel's service.
    pub service: ServiceKind,
    /// Every TPDU before this one has been received.
    pub cum: u32,
    /// The data TPDU that caused this ack; `None` for a window update or the answer to a
    /// TPDU dropped beyond the window.
    pub trigger: Option<u32>,
    /// The trigger's `tx` (0 without trigger).
    pub echo: u8,
    /// The receive window beyond `cum`, TPDUs.
    pub window: u32,
    /// Bit `i`: TPDU `cum + 1 + i` received.
    pub bitmap: u64,
}

/// A parsed TPDU, borrowing the payload from the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Repr<'a> {
    /// Data: a header, perhaps an ack riding on it, and (part of) a message.
    Data {
        /// The header.
        header: DataHeader,
        /// An ack riding on the TPDU (of the TPDU's service).
        ack: Option<Ack>,
        /// The payload.
        payload: &'a [u8],
    },
    /// An acknowledgement.
    Ack(Ack),
}

fn be32(b: &[u8], r: field::Field) -> u32 {
    let mut a = [0; 4];
    a.copy_from_slice(&b[r]);
    u32::from_be_bytes(a)
}

/// An ack's trigger: none if flagged NO_TRIGGER (then its trigger and echo fields must be 0).
fn trigger(no_trigger: bool, trigger: u32, echo: u8) -> Result<Option<u32>, HeaderError> {
    match (no_trigger, trigger, echo) {
        (false, t, _) => Ok(Some(t)),
        (true, 0, 0) => Ok(None),
        (true, t, _) => Err(HeaderError::TriggerWithoutCause(t)),
    }
}

impl<'a> Repr<'a> {
    /// Parses one frame (an AAL5 SDU that passed its CRC).
    pub fn parse(frame: &'a [u8]) -> Result<Repr<'a>, HeaderError> {
        if frame.len() < DATA_HEADER_LEN {
            return Err(HeaderError::Truncated {
                need: DATA_HEADER_LEN,
                have: frame.len(),
            });
        }
        let vk = frame[field::VER_KIND];
        if vk >> 4 != VERSION {
            return Err(HeaderError::Version(vk >> 4));
        }
        let service = frame[field::SERVICE];
        let service = ServiceKind::from_u8(service).ok_or(HeaderError::Service(service))?;
        let flags = frame[field::FLAGS];
        let tx = frame[field::TX];
        match vk & 0x0f {
            KIND_DATA => {
                let known =
                    FLAG_FIRST | FLAG_LAST | FLAG_ACK | FLAG_ACK_BITMAP | FLAG_ACK_NO_TRIGGER;
                let ride_flags = FLAG_ACK_BITMAP | FLAG_ACK_NO_TRIGGER;
                if flags & !known != 0 || (flags & FLAG_ACK == 0 && flags & ride_flags != 0) {
                    return Err(HeaderError::Flags(flags));
                }
                let mut payload = DATA_HEADER_LEN;
                let ack = if flags & FLAG_ACK != 0 {
                    let end = if flags & FLAG_ACK_BITMAP != 0 {
                        field::RIDE_BITMAP.end
                    } else {
                        field::RIDE_WINDOW.end
                    };
                    if frame.len() < end {
                        return Err(HeaderError::Truncated {
                            need: end,
                            have: frame.len(),
                        });
                    }
                    payload = end;
                    let bitmap = if flags & FLAG_ACK_BITMAP != 0 {
                        let mut bm = [0; 8];
                        bm.copy_from_slice(&frame[field::RIDE_BITMAP]);
                        match u64::from_be_bytes(bm) {
                            0 => return Err(HeaderError::ZeroBitmap),
                            b => b,
                        }
                    } else {
                        0
                    };
                    let echo = frame[field::RIDE_ECHO];
                    let trigger = trigger(
                        flags & FLAG_ACK_NO_TRIGGER != 0,
                        be32(frame, field::RIDE_TRIGGER),
                        echo,
                    )?;
                    Some(Ack {
                        service,
                        cum: be32(frame, field::RIDE_CUM),
                        trigger,
                        echo,
                        window: be32(frame, field::RIDE_WINDOW),
                        bitmap,
                    })
                } else {
                    None
                };
                Ok(Repr::Data {
                    header: DataHeader {
                        service,
                        first: flags & FLAG_FIRST != 0,
                        last: flags & FLAG_LAST != 0,
                        seq: be32(frame, field::SEQ),
                        msg: be32(frame, field::MSG),
                        tx,
                    },
                    ack,
                    payload: &frame[payload..],
                })
            }
            KIND_ACK => {
                if frame.len() < ACK_LEN {
                    return Err(HeaderError::Truncated {
                        need: ACK_LEN,
                        have: frame.len(),
                    });
                }
                if frame.len() > ACK_LEN {
                    return Err(HeaderError::AckLength(frame.len()));
                }
                if flags & !FLAG_NO_TRIGGER != 0 {
                    return Err(HeaderError::Flags(flags));
                }
                let trigger = trigger(
                    flags & FLAG_NO_TRIGGER != 0,
                    be32(frame, field::TRIGGER),
                    tx,
                )?;
                let mut bm = [0; 8];
                bm.copy_from_slice(&frame[field::BITMAP]);
                Ok(Repr::Ack(Ack {
                    service,
                    cum: be32(frame, field::CUM),
                    trigger,
                    echo: tx,
                    window: be32(frame, field::WINDOW),
                    bitmap: u64::from_be_bytes(bm),
                }))
            }
            k => Err(HeaderError::Kind(k)),
        }
    }

    /// The frame's length.
    pub fn buffer_len(&self) -> usize {
        match self {
            Repr::Data { ack, payload, .. } => {
                DATA_HEADER_LEN + ack.as_ref().map_or(0, ride_len) + payload.len()
            }
            Repr::Ack(_) => ACK_LEN,
        }
    }

    /// Writes the frame into `buf[..self.buffer_len()]`. `buf` must be at least that long
    /// (a caller's bug otherwise: this panics).
    pub fn emit(&self, buf: &mut [u8]) {
        match self {
            Repr::Data {
                header,
                ack,
                payload,
            } => {
                let at = emit_data_header(header, ack.as_ref(), buf);
                buf[at..at + payload.len()].copy_from_slice(payload);
            }
            Repr::Ack(ack) => emit_ack(ack, buf),
        }
    }
}

/// Writes a data header, with `ack` riding on it if given, into `buf`; returns its length
/// (where the payload goes): [`DATA_HEADER_LEN`], plus [`ride_len`] of the ack.
pub fn emit_data_header(h: &DataHeader, ack: Option<&Ack>, buf: &mut [u8]) -> usize {
    buf[field::VER_KIND] = VERSION << 4 | KIND_DATA;
    buf[field::SERVICE] = h.service as u8;
    let mut flags = if h.first { FLAG_FIRST } else { 0 } | if h.last { FLAG_LAST } else { 0 };
    buf[field::TX] = h.tx;
    buf[field::SEQ].copy_from_slice(&h.seq.to_be_bytes());
    buf[field::MSG].copy_from_slice(&h.msg.to_be_bytes());
    let Some(a) = ack else {
        buf[field::FLAGS] = flags;
        return DATA_HEADER_LEN;
    };
    flags |= FLAG_ACK;
    if a.trigger.is_none() {
        flags |= FLAG_ACK_NO_TRIGGER;
    }
    buf[field::RIDE_ECHO] = if a.trigger.is_some() { a.echo } else { 0 };
    buf[field::RIDE_CUM].copy_from_slice(&a.cum.to_be_bytes());
    buf[field::RIDE_TRIGGER].copy_from_slice(&a.trigger.unwrap_or(0).to_be_bytes());
    buf[field::RIDE_WINDOW].copy_from_slice(&a.window.to_be_bytes());
    if a.bitmap != 0 {
        flags |= FLAG_ACK_BITMAP;
        buf[field::RIDE_BITMAP].copy_from_slice(&a.bitmap.to_be_bytes());
    }
    buf[field::FLAGS] = flags;
    DATA_HEADER_LEN + ride_len(a)
}

/// Writes an ack into `buf[..ACK_LEN]`.
pub fn emit_ack(a: &Ack, buf: &mut [u8]) {
    buf[field::VER_KIND] = VERSION << 4 | KIND_ACK;
    buf[field::SERVICE] = a.service as u8;
    buf[field::FLAGS] = if a.trigger.is_none() {
        FLAG_NO_TRIGGER
    } else {
        0
    };
    buf[field::TX] = if a.trigger.is_some() { a.echo } else { 0 };
    buf[field::CUM].copy_from_slice(&a.cum.to_be_bytes());
    buf[field::TRIGGER].copy_from_slice(&a.trigger.unwrap_or(0).to_be_bytes());
    buf[field::WINDOW].copy_from_slice(&a.window.to_be_bytes());
    buf[field::BITMAP].copy_from_slice(&a.bitmap.to_be_bytes());
}

impl fmt::Display for Repr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Repr::Data {
                header: h,
                ack,
                payload,
            } => {
                write!(f, "DATA {} seq={} msg={}", h.service, h.seq, h.msg)?;
                if h.tx > 0 {
                    write!(f, " tx={}", h.tx)?;
                }
                if h.first {
                    f.write_str(" FIRST")?;
                }
                if h.last {
                    f.write_str(" LAST")?;
                }
                write!(f, " len={}", payload.len())?;
                if let Some(a) = ack {
                    f.write_str(" +")?;
                    fmt_ack(a, f)?;
                }
                Ok(())
            }
            Repr::Ack(a) => {
                write!(f, "ACK {}", a.service)?;
                fmt_ack(a, f)
            }
        }
    }
}

fn fmt_ack(a: &Ack, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(f, " cum={}", a.cum)?;
    match a.trigger {
        Some(t) => write!(f, " trigger={t} echo={}", a.echo)?,
        None => f.write_str(" no-trigger")?,
    }
    write!(f, " window={} bitmap={:#x}", a.window, a.bitmap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;
    use proptest::prelude::*;

    static DATA: [u8; 15] = [
        0x10, 0x00, 0xc0, 0x02, // v1 data, reliable, FIRST|LAST, third transmission
        0xff, 0xff, 0xff, 0xfe, // seq
        0x00, 0x00, 0x00, 0x07, // msg
        b'a', b'b', b'c',
    ];

    /// An 8-byte reply carrying the request's ack: one cell with AAL5's trailer.
    static DATA_ACK: [u8; 33] = [
        0x10, 0x00, 0xe8, 0x00, // v1 data, reliable, FIRST|LAST|ACK|ACK_NO_TRIGGER
        0x00, 0x00, 0x00, 0x10, // seq
        0x00, 0x00, 0x00, 0x03, // msg
        0x00, // echo
        0x00, 0x00, 0x00, 0x21, // cum
        0x00, 0x00, 0x00, 0x00, // trigger
        0x00, 0x00, 0x02, 0x00, // window 512
        b'r', b'e', b'p', b'l', b'y', b' ', b'#', b'1',
    ];

    /// A data TPDU carrying an ack with a trigger and a bitmap.
    static DATA_ACK_BITMAP: [u8; 34] = [
        0x10, 0x00, 0x30, 0x00, // v1 data, reliable, ACK|ACK_BITMAP, first transmission
        0x00, 0x00, 0x00, 0x11, // seq
        0x00, 0x00, 0x00, 0x03, // msg
        0x02, // echo: the trigger's third transmission
        0x00, 0x00, 0x00, 0x21, // cum
        0x00, 0x00, 0x00, 0x24, // trigger
        0x00, 0x00, 0x01, 0x00, // window 256
        0, 0, 0, 0, 0, 0, 0, 0b100, // bitmap: cum+3
        b'!',
    ];

    static ACK: [u8; 24] = [
        0x11, 0x00, 0x00, 0x01, // v1 ack, reliable, echo 1
        0x00, 0x00, 0x00, 0x05, // cum
        0x00, 0x00, 0x00, 0x09, // trigger
        0x00, 0x00, 0x01, 0x00, // window 256
        0, 0, 0, 0, 0, 0, 0, 0b1010, // bitmap: cum+2, cum+4
    ];

    #[test]
    fn test_parse_data() {
        let r = Repr::parse(&DATA).unwrap();
        assert_eq!(
            r,
            Repr::Data {
                header: DataHeader {
                    service: ServiceKind::Reliable,
                    first: true,
                    last: true,
                    seq: 0xffff_fffe,
                    msg: 7,
                    tx: 2
                },
                ack: None,
                payload: b"abc"
            }
        );
        assert_eq!(
            r.to_string(),
            "DATA reliable seq=4294967294 msg=7 tx=2 FIRST LAST len=3"
        );
    }

    #[test]
    fn test_emit_data() {
        let r = Repr::parse(&DATA).unwrap();
        let mut buf = vec![0xa5; r.buffer_len()];
        r.emit(&mut buf);
        assert_eq!(buf, DATA);
    }

    #[test]
    fn test_parse_emit_ack() {
        let r = Repr::parse(&ACK).unwrap();
        assert_eq!(
            r,
            Repr::Ack(Ack {
                service: ServiceKind::Reliable,
                cum: 5,
                trigger: Some(9),
                echo: 1,
                window: 256,
                bitmap: 0b1010
            })
        );
        let mut buf = vec![0xa5; ACK_LEN];
        r.emit(&mut buf);
        assert_eq!(buf, ACK);
        assert_eq!(
            r.to_string(),
            "ACK reliable cum=5 trigger=9 echo=1 window=256 bitmap=0xa"
        );
    }

    #[test]
    fn test_parse_emit_riding_acks() {
        let r = Repr::parse(&DATA_ACK).unwrap();
        let ack = Ack {
            service: ServiceKind::Reliable,
            cum: 0x21,
            trigger: None,
            echo: 0,
            window: 512,
            bitmap: 0,
        };
        assert_eq!(
            r,
            Repr::Data {
                header: DataHeader {
                    service: ServiceKind::Reliable,
                    first: true,
                    last: true,
                    seq: 0x10,
                    msg: 3,
                    tx: 0
                },
                ack: Some(ack),
                payload: b"reply #1"
            }
        );
        // An 8-byte message and its ack in one cell: 33 bytes and AAL5's 8-byte trailer.
        assert_eq!(r.buffer_len(), 33);
        assert!(r.buffer_len() + 8 <= 48);
        let mut buf = vec![0xa5; r.buffer_len()];
        r.emit(&mut buf);
        assert_eq!(buf, DATA_ACK);
        assert_eq!(
            r.to_string(),
            "DATA reliable seq=16 msg=3 FIRST LAST len=8 + cum=33 no-trigger window=512 bitmap=0x0"
        );

        let r = Repr::parse(&DATA_ACK_BITMAP).unwrap();
        let Repr::Data { ack, payload, .. } = r else {
            panic!("not data: {r:?}");
        };
        assert_eq!(
            ack,
            Some(Ack {
                service: ServiceKind::Reliable,
                cum: 0x21,
                trigger: Some(0x24),
                echo: 2,
                window: 256,
                bitmap: 0b100,
            })
        );
        assert_eq!(payload, b"!");
        let mut buf = vec![0xa5; r.buffer_len()];
        r.emit(&mut buf);
        assert_eq!(buf, DATA_ACK_BITMAP);
    }

    #[test]
    fn test_parse_malformed_riding_acks() {
        let err = |f: &[u8]| Repr::parse(f).unwrap_err();
        // The ack's fields cut short; its bitmap cut short.
        assert_eq!(
            err(&DATA_ACK[..24]),
            HeaderError::Truncated { need: 25, have: 24 }
        );
        assert_eq!(
            err(&DATA_ACK_BITMAP[..32]),
            HeaderError::Truncated { need: 33, have: 32 }
        );
        // BITMAP or NO_TRIGGER without ACK.
        let mut f = DATA;
        f[2] = 0x10;
        assert_eq!(err(&f), HeaderError::Flags(0x10));
        f[2] = 0x08;
        assert_eq!(err(&f), HeaderError::Flags(0x08));
        // Bits no kind defines.
        let mut f = DATA_ACK;
        f[2] = 0xe9;
        assert_eq!(err(&f), HeaderError::Flags(0xe9));
        // A bitmap said to be there but zero.
        let mut f = DATA_ACK_BITMAP;
        f[32] = 0;
        assert_eq!(err(&f), HeaderError::ZeroBitmap);
        // NO_TRIGGER with a trigger, or with an echo.
        let mut f = DATA_ACK;
        f[20] = 1;
        assert_eq!(err(&f), HeaderError::TriggerWithoutCause(1));
        let mut f = DATA_ACK;
        f[12] = 1;
        assert_eq!(err(&f), HeaderError::TriggerWithoutCause(0));
    }

    #[test]
    fn test_parse_malformed() {
        let err = |f: &[u8]| Repr::parse(f).unwrap_err();
        assert_eq!(
            err(&DATA[..11]),
            HeaderError::Truncated { need: 12, have: 11 }
        );
        assert_eq!(
            err(&ACK[..23]),
            HeaderError::Truncated { need: 24, have: 23 }
        );
        let mut f = DATA;
        f[0] = 0x20;
        assert_eq!(err(&f), HeaderError::Version(2));
        f = DATA;
        f[0] = 0x12;
        assert_eq!(err(&f), HeaderError::Kind(2));
        f = DATA;
        f[1] = 3;
        assert_eq!(err(&f), HeaderError::Service(3));
        f = DATA;
        f[2] = 0xc1;
        assert_eq!(err(&f), HeaderError::Flags(0xc1));
        let mut a = ACK;
        a[2] = 0x40;
        assert_eq!(err(&a), HeaderError::Flags(0x40));
        a = ACK;
        a[2] = 0x80;
        assert_eq!(err(&a), HeaderError::TriggerWithoutCause(9));
        a[8..12].copy_from_slice(&[0; 4]);
        assert_eq!(err(&a), HeaderError::TriggerWithoutCause(0));
        let mut long = ACK.to_vec();
        long.push(0);
        assert_eq!(err(&long), HeaderError::AckLength(25));
        assert_eq!(
            HeaderError::Truncated { need: 12, have: 3 }.to_string(),
            "TPDU of 3 bytes, its header needs 12"
        );
    }

    #[test]
    fn test_ack_without_trigger() {
        let a = Ack {
            service: ServiceKind::BestEffort,
            cum: 1,
            trigger: None,
            echo: 0,
            window: 0,
            bitmap: 0,
        };
        let mut buf = [0xa5; ACK_LEN];
        emit_ack(&a, &mut buf);
        assert_eq!(buf[2], FLAG_NO_TRIGGER);
        assert_eq!(Repr::parse(&buf), Ok(Repr::Ack(a)));
    }

    fn service() -> impl Strategy<Value = ServiceKind> {
        prop_oneof![
            Just(ServiceKind::Reliable),
            Just(ServiceKind::BestEffort),
            Just(ServiceKind::Guaranteed)
        ]
    }

    proptest! {
        #[test]
        fn data_round_trips(
            service in service(), first: bool, last: bool, seq: u32, msg: u32, tx: u8,
            ack in proptest::option::of((any::<u32>(), any::<Option<u32>>(), any::<u8>(), any::<u32>(), any::<u64>())),
            payload in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let ack = ack.map(|(cum, trigger, echo, window, bitmap)| Ack {
                service,
                cum,
                trigger,
                echo: if trigger.is_some() { echo } else { 0 },
                window,
                bitmap,
            });
            let r = Repr::Data { header: DataHeader { service, first, last, seq, msg, tx }, ack, payload: &payload };
            let mut buf = vec![0xa5; r.buffer_len()];
            r.emit(&mut buf);
            prop_assert_eq!(Repr::parse(&buf), Ok(r));
        }

        #[test]
        fn ack_round_trips(service in service(), cum: u32, trigger: Option<u32>, echo: u8, window: u32, bitmap: u64) {
            let echo = if trigger.is_some() { echo } else { 0 };
            let r = Repr::Ack(Ack { service, cum, trigger, echo, window, bitmap });
            let mut buf = vec![0xa5; r.buffer_len()];
            r.emit(&mut buf);
            prop_assert_eq!(Repr::parse(&buf), Ok(r));
        }

        /// Whatever parses re-emits to the same bytes; nothing panics.
        #[test]
        fn arbitrary_bytes_never_panic(frame in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(r) = Repr::parse(&frame) {
                let mut buf = vec![0; r.buffer_len()];
                r.emit(&mut buf);
                prop_assert_eq!(buf, frame);
            }
        }
    }
}

//! The framing of linux-atm's `atmtcp` between two daemons over TCP (default port 2812).
//!
//! Every frame is an 8-byte header in network byte order, `vpi: u16, vci: u16, length: u32`,
//! followed by `length` bytes: one whole AAL SDU (atmtcp does no SAR). A frame on VPI 0 /
//! VCI 0 is a control message in ASCII without a NUL:
//!
//! * `O <vpi>.<vci> <addr> <qos>` opens a VC; the peer parses it as `sscanf("O %d.%d %s %s")`
//!   and then `text2atm`/`text2qos` on the two words.
//! * `C <vpi>.<vci>` closes a VC.
//!
//! `atmtcp` aborts on a frame longer than 65535 bytes ("giant PDU"), and so does
//! [`decode`]. The kernel-to-daemon `struct atmtcp_control` (host byte order, never on the
//! wire) is not implemented: natm has no kernel side.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Bytes in a frame header.
pub const HEADER_LEN: usize = 8;
/// The TCP port `atmtcp` uses by default.
pub const DEFAULT_PORT: u16 = 2812;
/// The largest frame body `atmtcp` accepts.
pub const MAX_LEN: u32 = 65_535;

/// A frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// VPI (0 with VCI 0: control).
    pub vpi: u16,
    /// VCI.
    pub vci: u16,
    /// Bytes that follow.
    pub length: u32,
}

impl Header {
    /// Parse eight bytes.
    pub fn from_bytes(b: [u8; HEADER_LEN]) -> Header {
        Header {
            vpi: u16::from_be_bytes([b[0], b[1]]),
            vci: u16::from_be_bytes([b[2], b[3]]),
            length: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    /// The eight bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..2].copy_from_slice(&self.vpi.to_be_bytes());
        b[2..4].copy_from_slice(&self.vci.to_be_bytes());
        b[4..].copy_from_slice(&self.length.to_be_bytes());
        b
    }

    /// Whether the frame carries a control message (VC 0.0).
    pub fn is_control(&self) -> bool {
        self.vpi == 0 && self.vci == 0
    }
}

/// One decoded frame, borrowing its body from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The header.
    pub header: Header,
    /// The body (`header.length` bytes).
    pub body: &'a [u8],
}

/// A framing error; the connection cannot continue after one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AtmtcpError {
    /// A frame longer than 65535 bytes.
    GiantPdu {
        /// The length field.
        length: u32,
    },
    /// A data frame's body is longer than the caller's limit (encode).
    BodyTooLong {
        /// Bytes given.
        len: usize,
    },
    /// Data cannot be sent on VC 0.0, which carries control.
    DataOnControlVc,
    /// A control message that is not `O vpi.vci addr qos` or `C vpi.vci`.
    BadControl {
        /// What was wrong.
        reason: &'static str,
        /// The message, lossily decoded.
        text: String,
    },
}

impl fmt::Display for AtmtcpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AtmtcpError::GiantPdu { length } => {
                write!(f, "atmtcp giant PDU: length {length} exceeds {MAX_LEN}")
            }
            AtmtcpError::BodyTooLong { len } => {
                write!(f, "atmtcp frame body of {len} bytes exceeds {MAX_LEN}")
            }
            AtmtcpError::DataOnControlVc => f.write_str("atmtcp data cannot use VC 0.0 (control)"),
            AtmtcpError::BadControl { reason, text } => {
                write!(f, "atmtcp control message {text:?}: {reason}")
            }
        }
    }
}

impl core::error::Error for AtmtcpError {}

/// Decode one frame from the start of a byte stream. `Ok(None)` means more bytes are
/// needed; `Ok(Some((frame, consumed)))` gives the frame and how many bytes it took.
pub fn decode(buf: &[u8]) -> Result<Option<(Frame<'_>, usize)>, AtmtcpError> {
    let Some(head) = buf.first_chunk::<HEADER_LEN>() else {
        return Ok(None);
    };
    let header = Header::from_bytes(*head);
    if header.length > MAX_LEN {
        return Err(AtmtcpError::GiantPdu {
            length: header.length,
        });
    }
    let end = HEADER_LEN + header.length as usize;
    match buf.get(HEADER_LEN..end) {
        Some(body) => Ok(Some((Frame { header, body }, end))),
        None => Ok(None),
    }
}

/// Append a data frame for `(vpi, vci)` to `out`.
pub fn encode_data(vpi: u16, vci: u16, body: &[u8], out: &mut Vec<u8>) -> Result<(), AtmtcpError> {
    if vpi == 0 && vci == 0 {
        return Err(AtmtcpError::DataOnControlVc);
    }
    encode_raw(vpi, vci, body, out)
}

fn encode_raw(vpi: u16, vci: u16, body: &[u8], out: &mut Vec<u8>) -> Result<(), AtmtcpError> {
    let length = u32::try_from(body.len())
        .ok()
        .filter(|&l| l <= MAX_LEN)
        .ok_or(AtmtcpError::BodyTooLong { len: body.len() })?;
    out.extend_from_slice(&Header { vpi, vci, length }.to_bytes());
    out.extend_from_slice(body);
    Ok(())
}

/// A control message on VC 0.0.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Control {
    /// Open a VC; `addr` and `qos` are linux-atm text (`text2atm`, `text2qos`) as sent.
    Open {
        /// VPI.
        vpi: u16,
        /// VCI.
        vci: u16,
        /// The PVC address in text form.
        addr: String,
        /// The QoS in qos(7) text form.
        qos: String,
    },
    /// Close a VC.
    Close {
        /// VPI.
        vpi: u16,
        /// VCI.
        vci: u16,
    },
}

impl Control {
    /// Parse a control body as `atmtcp` does: a leading `O` or `C`, then `%d.%d`, then for
    /// `O` two whitespace-separated words. Values that do not fit a VPI/VCI are refused.
    pub fn parse(body: &[u8]) -> Result<Control, AtmtcpError> {
        let text = core::str::from_utf8(body).map_err(|_| bad("not ASCII text", body))?;
        let (kind, rest) = match text.as_bytes().first() {
            Some(b'O') => ('O', &text[1..]),
            Some(b'C') => ('C', &text[1..]),
            _ => return Err(bad("does not start with O or C", body)),
        };
        let rest = rest.trim_start_matches(is_c_space);
        let (vpi, rest) = scan_int(rest).ok_or_else(|| bad("expected <vpi>.<vci>", body))?;
        let rest = rest
            .strip_prefix('.')
            .ok_or_else(|| bad("expected <vpi>.<vci>", body))?;
        let (vci, rest) = scan_int(rest.trim_start_matches(is_c_space))
            .ok_or_else(|| bad("expected <vpi>.<vci>", body))?;
        let vpi = u16::try_from(vpi).map_err(|_| bad("VPI out of range", body))?;
        let vci = u16::try_from(vci).map_err(|_| bad("VCI out of range", body))?;
        if kind == 'C' {
            return Ok(Control::Close { vpi, vci });
        }
        let mut words = rest.split(is_c_space).filter(|w| !w.is_empty());
        match (words.next(), words.next()) {
            (Some(addr), Some(qos)) => Ok(Control::Open {
                vpi,
                vci,
                addr: addr.into(),
                qos: qos.into(),
            }),
            _ => Err(bad("OPEN needs an address and a QoS", body)),
        }
    }

    /// The control message body.
    pub fn to_text(&self) -> String {
        match self {
            Control::Open {
                vpi,
                vci,
                addr,
                qos,
            } => alloc::format!("O {vpi}.{vci} {addr} {qos}"),
            Control::Close { vpi, vci } => alloc::format!("C {vpi}.{vci}"),
        }
    }

    /// Append the whole control frame (header on VC 0.0 and body) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), AtmtcpError> {
        encode_raw(0, 0, self.to_text().as_bytes(), out)
    }
}

fn bad(reason: &'static str, body: &[u8]) -> AtmtcpError {
    AtmtcpError::BadControl {
        reason,
        text: String::from_utf8_lossy(body).into_owned(),
    }
}

/// C's `isspace` in the "C" locale.
fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// `%d`: optional sign, decimal digits; `None` if no digits or it overflows an `i32`.
fn scan_int(s: &str) -> Option<(i64, &str)> {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let n = digits.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return None;
    }
    let v: i64 = digits[..n].parse::<i32>().ok()?.into();
    Some((if neg { -v } else { v }, &digits[n..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn data_vector() {
        // atm-facts.md §8.3: "hello" on 0.100.
        let mut out = Vec::new();
        encode_data(0, 100, b"hello", &mut out).unwrap();
        assert_eq!(
            out,
            [0, 0, 0, 0x64, 0, 0, 0, 5, b'h', b'e', b'l', b'l', b'o']
        );
        let (frame, used) = decode(&out).unwrap().unwrap();
        assert_eq!(used, 13);
        assert_eq!(
            frame.header,
            Header {
                vpi: 0,
                vci: 100,
                length: 5
            }
        );
        assert_eq!(frame.body, b"hello");
        assert!(!frame.header.is_control());
    }

    #[test]
    fn close_vector() {
        // atm-facts.md §8.3: "C 0.100".
        let mut out = Vec::new();
        Control::Close { vpi: 0, vci: 100 }
            .encode(&mut out)
            .unwrap();
        assert_eq!(
            out,
            [
                0, 0, 0, 0, 0, 0, 0, 7, b'C', b' ', b'0', b'.', b'1', b'0', b'0'
            ]
        );
        let (frame, _) = decode(&out).unwrap().unwrap();
        assert!(frame.header.is_control());
        assert_eq!(
            Control::parse(frame.body),
            Ok(Control::Close { vpi: 0, vci: 100 })
        );
    }

    #[test]
    fn open_parses_like_sscanf() {
        let want = Control::Open {
            vpi: 1,
            vci: 42,
            addr: "0.1.42".into(),
            qos: "ubr,aal5:max_pcr=0,max_sdu=8192".into(),
        };
        assert_eq!(
            Control::parse(b"O 1.42 0.1.42 ubr,aal5:max_pcr=0,max_sdu=8192"),
            Ok(want.clone())
        );
        assert_eq!(Control::parse(want.to_text().as_bytes()), Ok(want));
        // sscanf skips whitespace before %d and around words, and needs none after the O.
        assert!(matches!(
            Control::parse(b"O1.42\t a  q\n"),
            Ok(Control::Open {
                vpi: 1,
                vci: 42,
                ..
            })
        ));
        assert!(matches!(
            Control::parse(b"C 1. 7"),
            Ok(Control::Close { vpi: 1, vci: 7 })
        ));
    }

    #[test]
    fn bad_control() {
        for (body, reason) in [
            (&b"X 1.2"[..], "does not start with O or C"),
            (b"O 1.42 addr", "OPEN needs an address and a QoS"),
            (b"C 1", "expected <vpi>.<vci>"),
            (b"C .5", "expected <vpi>.<vci>"),
            (b"C 70000.1", "VPI out of range"),
            (b"C 1.-1", "VCI out of range"),
            (b"C 99999999999.1", "expected <vpi>.<vci>"),
            (b"", "does not start with O or C"),
            (b"O \xff", "not ASCII text"),
        ] {
            match Control::parse(body) {
                Err(AtmtcpError::BadControl { reason: r, .. }) => assert_eq!(r, reason, "{body:?}"),
                other => panic!("{body:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn stream_decoding() {
        let mut s = Vec::new();
        encode_data(1, 2, &[9; 10], &mut s).unwrap();
        encode_data(3, 4, &[], &mut s).unwrap();
        for cut in 0..HEADER_LEN + 10 {
            assert_eq!(decode(&s[..cut]), Ok(None), "cut {cut}");
        }
        let (f1, n1) = decode(&s).unwrap().unwrap();
        assert_eq!(f1.body, &[9; 10]);
        let (f2, n2) = decode(&s[n1..]).unwrap().unwrap();
        assert_eq!((f2.header.vpi, f2.header.vci, f2.body.len()), (3, 4, 0));
        assert_eq!(n1 + n2, s.len());
        let giant = Header {
            vpi: 0,
            vci: 5,
            length: 65_536,
        }
        .to_bytes();
        assert_eq!(
            decode(&giant),
            Err(AtmtcpError::GiantPdu { length: 65_536 })
        );
        assert_eq!(
            encode_data(0, 0, b"x", &mut Vec::new()),
            Err(AtmtcpError::DataOnControlVc)
        );
        assert_eq!(
            encode_data(0, 5, &[0; 65_536], &mut Vec::new()),
            Err(AtmtcpError::BodyTooLong { len: 65_536 })
        );
    }

    proptest! {
        #[test]
        fn data_round_trip(vpi: u16, vci in 1u16.., body in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut s = Vec::new();
            encode_data(vpi, vci, &body, &mut s).unwrap();
            let (f, n) = decode(&s).unwrap().unwrap();
            prop_assert_eq!(n, s.len());
            prop_assert_eq!((f.header.vpi, f.header.vci, f.body), (vpi, vci, &body[..]));
        }

        #[test]
        fn control_round_trip(vpi: u16, vci: u16, addr in "[!-~]{1,20}", qos in "[!-~]{1,40}", open: bool) {
            let c = if open { Control::Open { vpi, vci, addr, qos } } else { Control::Close { vpi, vci } };
            prop_assert_eq!(Control::parse(c.to_text().as_bytes()), Ok(c));
        }

        #[test]
        fn decode_never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(Some((f, n))) = decode(&b) {
                prop_assert!(n <= b.len());
                let _ = Control::parse(f.body);
            }
        }
    }
}

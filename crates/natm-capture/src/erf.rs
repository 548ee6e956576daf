//! Endace ERF records as pcap carries them (`LINKTYPE_ERF`, 197): the 16-byte ERF header,
//! optional 8-byte extension headers, then the record body.
//!
//! ```text
//! ts (LE u64, 32.32 fixed-point seconds) | type | flags | rlen (BE16) | lctr (BE16) | wlen (BE16)
//! ```
//!
//! Type codes are those of Wireshark's `wiretap/erf_record.h` and the Endace ERF types
//! document: 3 = ATM cell (a 4-byte header without HEC, then the 48-byte payload), 4 = AAL5
//! (the 4-byte header of the VC, then the whole CPCS-PDU, trailer included). Bit 7 of the
//! type says extension headers follow; bit 2 of the flags (`vlen`) marks variable-length
//! records.
//!
//! Length semantics, checked against tshark 4.0: `rlen` is the whole record, header
//! included, and tshark ignores it inside pcap; `wlen` counts the body (the 4-byte ATM header
//! plus the PDU) and tshark **cuts the frame at `wlen`**, so a `wlen` of the PDU alone loses
//! the last four bytes and with them the AAL5 trailer. Both fields are 16 bits, which caps an
//! AAL5 record at 65 472 PDU bytes (1364 cells, SDUs up to 65 464 bytes): see
//! [`MAX_AAL5_PDU`].
//!
//! Not here: the multichannel types (7, 9) and every non-ATM type, which the reader keeps
//! as raw records.

use natm_core::Instant;

use crate::error::CaptureError;

/// Bytes in the ERF header.
pub const HEADER_LEN: usize = 16;
/// Bytes in one extension header.
pub const EXT_HEADER_LEN: usize = 8;
/// Bytes of ATM header (no HEC) in front of a cell payload or an AAL5 PDU.
pub const ATM_HEADER_LEN: usize = 4;
/// Bytes in the body of a cell record.
pub const CELL_BODY_LEN: usize = ATM_HEADER_LEN + natm_wire::PAYLOAD_LEN;
/// The longest body whose record length still fits the 16-bit `rlen`.
pub const MAX_BODY: usize = u16::MAX as usize - HEADER_LEN;
/// The longest AAL5 PDU one ERF record can carry: whole cells within [`MAX_BODY`].
pub const MAX_AAL5_PDU: usize =
    (MAX_BODY - ATM_HEADER_LEN) / natm_wire::PAYLOAD_LEN * natm_wire::PAYLOAD_LEN;
/// The longest SDU whose PDU fits one ERF AAL5 record.
pub const MAX_AAL5_SDU: usize = MAX_AAL5_PDU - natm_wire::aal5::TRAILER_LEN;

/// ERF record type codes (the low 7 bits of the type byte).
pub mod record_type {
    /// One ATM cell.
    pub const ATM: u8 = 3;
    /// One AAL5 PDU.
    pub const AAL5: u8 = 4;
    /// Padding (no packet).
    pub const PAD: u8 = 48;
    /// The type byte's "extension header follows" bit.
    pub const EXT_HEADER: u8 = 0x80;
}

/// ERF flag bits.
pub mod flags {
    /// Variable-length record; set on every record natm writes.
    pub const VLEN: u8 = 0x04;
    /// The record was truncated by the capture.
    pub const TRUNC: u8 = 0x08;
    /// A receive error on the link.
    pub const RX_ERROR: u8 = 0x10;
    /// An internal (data-stream) error in the capture card.
    pub const DS_ERROR: u8 = 0x20;
}

/// A parsed ERF header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErfHeader {
    /// Timestamp, 32.32 fixed-point seconds since the Unix epoch.
    pub ts: u64,
    /// Type byte, extension bit included.
    pub rtype: u8,
    /// Flags.
    pub flags: u8,
    /// Record length, header included.
    pub rlen: u16,
    /// Loss counter: records dropped before this one.
    pub lctr: u16,
    /// Wire length of the body.
    pub wlen: u16,
}

impl ErfHeader {
    /// Parse the first 16 bytes; `None` if there are fewer.
    pub fn parse(b: &[u8]) -> Option<ErfHeader> {
        let b: &[u8; HEADER_LEN] = b.get(..HEADER_LEN)?.try_into().ok()?;
        let be16 = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        Some(ErfHeader {
            ts: u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            rtype: b[8],
            flags: b[9],
            rlen: be16(10),
            lctr: be16(12),
            wlen: be16(14),
        })
    }

    /// The 16 header bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&self.ts.to_le_bytes());
        b[8] = self.rtype;
        b[9] = self.flags;
        b[10..12].copy_from_slice(&self.rlen.to_be_bytes());
        b[12..14].copy_from_slice(&self.lctr.to_be_bytes());
        b[14..16].copy_from_slice(&self.wlen.to_be_bytes());
        b
    }

    /// The record type without the extension bit.
    pub fn record_type(&self) -> u8 {
        self.rtype & !record_type::EXT_HEADER
    }

    /// The header natm writes for a body of `body_len` bytes: flags `vlen`, `lctr` 0,
    /// `rlen` = 16 + body, `wlen` = body.
    pub fn for_body(
        rtype: u8,
        time: Instant,
        body_len: usize,
        what: &'static str,
    ) -> Result<ErfHeader, CaptureError> {
        if body_len > MAX_BODY {
            return Err(CaptureError::TooLong {
                what,
                len: body_len,
                max: MAX_BODY,
            });
        }
        Ok(ErfHeader {
            ts: timestamp(time)?,
            rtype,
            flags: flags::VLEN,
            rlen: (HEADER_LEN + body_len) as u16,
            lctr: 0,
            wlen: body_len as u16,
        })
    }
}

/// An ERF timestamp for `time`: seconds in the high 32 bits, the binary fraction of the
/// second (rounded to the nearest 2^-32 s) in the low 32.
pub fn timestamp(time: Instant) -> Result<u64, CaptureError> {
    let nanos = time.as_nanos();
    let secs = nanos / 1_000_000_000;
    if secs > u64::from(u32::MAX) {
        return Err(CaptureError::TimeOutOfRange { time });
    }
    let sub = nanos % 1_000_000_000;
    let frac = ((sub << 32) + 500_000_000) / 1_000_000_000;
    // `frac` can round up to 2^32 only for sub >= 999_999_999.9, which no integer reaches.
    Ok((secs << 32) + frac)
}

/// The time of an ERF timestamp, rounded to the nearest nanosecond (exact for timestamps
/// written by [`timestamp`]).
pub fn time(ts: u64) -> Instant {
    let secs = ts >> 32;
    let frac = ts & 0xFFFF_FFFF;
    let sub = (frac * 1_000_000_000 + (1 << 31)) >> 32;
    Instant::from_nanos(secs * 1_000_000_000 + sub)
}

/// Why an ERF record could not be taken apart (the reader keeps such records raw).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErfError {
    /// Fewer than 16 bytes.
    ShortHeader {
        /// Bytes present.
        len: usize,
    },
    /// The extension headers run past the record.
    ShortExtHeaders {
        /// Extension headers announced so far.
        count: usize,
    },
}

impl core::fmt::Display for ErfError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ErfError::ShortHeader { len } => {
                write!(
                    f,
                    "ERF record of {len} bytes, shorter than its 16-byte header"
                )
            }
            ErfError::ShortExtHeaders { count } => {
                write!(f, "ERF extension header {count} runs past the record")
            }
        }
    }
}

/// Split a record into its header and body, skipping extension headers. The body is cut at
/// `wlen` as tshark does, for AAL5 records only: for a cell record tshark always takes the
/// first 52 bytes.
pub fn split(record: &[u8]) -> Result<(ErfHeader, &[u8]), ErfError> {
    let header = ErfHeader::parse(record).ok_or(ErfError::ShortHeader { len: record.len() })?;
    let mut at = HEADER_LEN;
    let mut more = header.rtype & record_type::EXT_HEADER != 0;
    let mut count = 0;
    while more {
        count += 1;
        let ext = record
            .get(at..at + EXT_HEADER_LEN)
            .ok_or(ErfError::ShortExtHeaders { count })?;
        more = ext[0] & 0x80 != 0;
        at += EXT_HEADER_LEN;
    }
    let body = &record[at..];
    let body = match header.record_type() {
        record_type::AAL5 => &body[..body.len().min(usize::from(header.wlen))],
        _ => body,
    };
    Ok((header, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        assert_eq!(MAX_BODY, 65_519);
        assert_eq!(MAX_AAL5_PDU, 65_472);
        assert_eq!(MAX_AAL5_PDU / 48, 1364);
        assert_eq!(MAX_AAL5_SDU, 65_464);
    }

    #[test]
    fn timestamps_round_trip_nanoseconds() {
        for n in [
            0u64,
            1,
            999_999_999,
            1_000_000_000,
            1_700_000_000_123_456_789,
            (u64::from(u32::MAX) + 1) * 1_000_000_000 - 1,
        ] {
            let t = Instant::from_nanos(n);
            assert_eq!(time(timestamp(t).unwrap()), t, "{n}");
        }
        assert_eq!(
            timestamp(Instant::from_nanos(1_000_000_000)).unwrap(),
            1 << 32
        );
        assert_eq!(
            timestamp(Instant::from_nanos(500_000_000)).unwrap(),
            1 << 31
        );
        assert!(timestamp(Instant::from_nanos(u64::MAX)).is_err());
    }

    #[test]
    fn header_layout() {
        // atm-facts.md §9: LE timestamp, type, flags 0x04, rlen = 16 + body, lctr 0, wlen = body.
        let h = ErfHeader::for_body(
            record_type::AAL5,
            Instant::from_nanos(1_000_000_000_000),
            52,
            "x",
        )
        .unwrap();
        assert_eq!(
            h.to_bytes(),
            [0, 0, 0, 0, 0xe8, 3, 0, 0, 4, 4, 0, 68, 0, 0, 0, 52]
        );
        assert_eq!(ErfHeader::parse(&h.to_bytes()), Some(h));
        assert!(ErfHeader::for_body(record_type::AAL5, Instant::ZERO, MAX_BODY + 1, "x").is_err());
    }

    #[test]
    fn split_skips_extension_headers_and_cuts_at_wlen() {
        let mut r = ErfHeader {
            ts: 0,
            rtype: record_type::AAL5 | record_type::EXT_HEADER,
            flags: flags::VLEN,
            rlen: 0,
            lctr: 0,
            wlen: 6,
        }
        .to_bytes()
        .to_vec();
        r.extend_from_slice(&[0x80, 0, 0, 0, 0, 0, 0, 0]); // more follow
        r.extend_from_slice(&[0x03, 0, 0, 0, 0, 0, 0, 0]); // last
        r.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let (h, body) = split(&r).unwrap();
        assert_eq!(h.record_type(), record_type::AAL5);
        assert_eq!(body, &[1, 2, 3, 4, 5, 6]);
        assert_eq!(split(&r[..30]), Err(ErfError::ShortExtHeaders { count: 2 }));
        assert_eq!(split(&r[..3]), Err(ErfError::ShortHeader { len: 3 }));
    }
}

//! The one error type of this crate: what was wrong with a file or a record, and where.

use std::io;

use natm_core::Instant;

use crate::pcap::LinkType;

/// Why a capture could not be read or written.
///
/// Read errors carry the byte offset in the file where the problem starts; after one, a
/// [`Reader`](crate::Reader) yields nothing more, because the record framing is lost.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The underlying reader or writer failed.
    #[error("I/O error at byte {offset}: {source}")]
    Io {
        /// Bytes read or written before the failure.
        offset: u64,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The file is shorter than the 24-byte pcap file header.
    #[error("truncated pcap file header: {got} of 24 bytes")]
    TruncatedFileHeader {
        /// Bytes present.
        got: usize,
    },
    /// The first four bytes are not a pcap magic number.
    #[error("not a pcap file: magic {magic:#010x} at byte 0")]
    BadMagic {
        /// The first four bytes, big-endian.
        magic: u32,
    },
    /// The file is pcapng, which this crate does not read.
    #[error("a pcapng file, not classic pcap (convert it with `editcap -F pcap IN OUT`)")]
    Pcapng,
    /// A pcap version other than 2.x.
    #[error("unsupported pcap version {major}.{minor} (only 2.x)")]
    UnsupportedVersion {
        /// Major version.
        major: u16,
        /// Minor version.
        minor: u16,
    },
    /// The file ends inside a 16-byte record header.
    #[error("truncated record header at byte {offset}: {got} of 16 bytes")]
    TruncatedRecordHeader {
        /// Offset of the record header.
        offset: u64,
        /// Bytes present.
        got: usize,
    },
    /// The file ends inside a record's data.
    #[error(
        "truncated record at byte {offset}: its header says {needed} bytes, the file has {got}"
    )]
    TruncatedRecord {
        /// Offset of the record header.
        offset: u64,
        /// Bytes the record header announces.
        needed: u32,
        /// Bytes present.
        got: usize,
    },
    /// A record header announces more data than the file's limit allows.
    #[error(
        "record at byte {offset} claims {len} bytes, more than the limit of {limit} (snaplen {snaplen})"
    )]
    RecordTooLong {
        /// Offset of the record header.
        offset: u64,
        /// The announced length.
        len: u32,
        /// The limit applied.
        limit: u32,
        /// The file header's snaplen.
        snaplen: u32,
    },
    /// A record of this kind has no encoding in the file's link type.
    #[error("a {kind} record cannot be written to a {link} file")]
    WrongLinkType {
        /// The record kind.
        kind: &'static str,
        /// The file's link type.
        link: LinkType,
    },
    /// A record is too long for its encoding.
    #[error("{what} of {len} bytes is too long: at most {max}")]
    TooLong {
        /// What was too long.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The most the encoding holds.
        max: usize,
    },
    /// A VPI above 255, which ERF and SunATM headers cannot carry.
    #[error("VPI {vpi} does not fit the 8-bit VPI of a {link} record")]
    VpiTooLarge {
        /// The VPI.
        vpi: u16,
        /// The file's link type.
        link: LinkType,
    },
    /// A time at or after 2106-02-07, past the 32-bit seconds of pcap and ERF.
    #[error("time {time} is past the 32-bit seconds of pcap and ERF timestamps")]
    TimeOutOfRange {
        /// The time.
        time: Instant,
    },
}

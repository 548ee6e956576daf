//! Classic pcap framing: the 24-byte file header and the 16-byte record header.
//!
//! Format: libpcap's savefile format, as documented in pcap-savefile(5) and
//! draft-ietf-opsawg-pcap. The file header is magic, version 2.4, two unused 32-bit fields,
//! snaplen and link type; each record is `ts_sec, ts_frac, incl_len, orig_len` followed by
//! `incl_len` bytes. The magic tells byte order (as written on the host that wrote it) and
//! timestamp resolution: `a1b2c3d4` microseconds, `a1b23c4d` nanoseconds.
//!
//! Not here: pcapng (recognised and refused with a hint), and the "modified" pcap variants
//! with longer record headers (magic `a1b2cd34`), which are refused as a bad magic.
//!
//! Why not the `pcap-file` crate: version 2 rejects records whose `orig_len` exceeds the
//! snaplen (normal in any capture taken with a short snaplen), reports no byte offsets, and
//! reads through an 8 MB buffer that turns a long record into a misleading end-of-file
//! error. The framing is 40 bytes of layout, so it is written here, with typed errors.

use core::fmt;

use natm_core::Instant;

use crate::error::CaptureError;

/// Bytes in the file header.
pub const FILE_HEADER_LEN: usize = 24;
/// Bytes in a record header.
pub const RECORD_HEADER_LEN: usize = 16;
/// Magic of a file with microsecond timestamps, as a number.
pub const MAGIC_MICROS: u32 = 0xA1B2_C3D4;
/// Magic of a file with nanosecond timestamps, as a number.
pub const MAGIC_NANOS: u32 = 0xA1B2_3C4D;
/// The first block type of a pcapng file (the same in both byte orders).
pub const PCAPNG_MAGIC: u32 = 0x0A0D_0D0A;
/// The snaplen natm writes: libpcap's maximum, 256 KiB.
pub const DEFAULT_SNAPLEN: u32 = 262_144;
/// The largest record the reader accepts whatever the snaplen says, so a corrupt length
/// cannot make it allocate gigabytes.
pub const MAX_RECORD_LEN: u32 = 64 << 20;

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// The link type of a file: what every record's bytes start with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// `LINKTYPE_SUNATM` (123): a 4-byte pseudo-header, then a reassembled SDU.
    SunAtm,
    /// `LINKTYPE_ERF` (197): Endace ERF records.
    Erf,
    /// `LINKTYPE_WIRESHARK_UPPER_PDU` (252): Wireshark's exported PDUs, tagged with the
    /// dissector that decodes them.
    ExportedPdu,
    /// Any other link type, kept as a number.
    Other(u32),
}

impl LinkType {
    /// From the file header's link-type field.
    pub const fn from_u32(v: u32) -> LinkType {
        match v {
            123 => LinkType::SunAtm,
            197 => LinkType::Erf,
            252 => LinkType::ExportedPdu,
            v => LinkType::Other(v),
        }
    }

    /// The number in the file header.
    pub const fn to_u32(self) -> u32 {
        match self {
            LinkType::SunAtm => 123,
            LinkType::Erf => 197,
            LinkType::ExportedPdu => 252,
            LinkType::Other(v) => v,
        }
    }
}

impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkType::SunAtm => f.write_str("SunATM (123)"),
            LinkType::Erf => f.write_str("ERF (197)"),
            LinkType::ExportedPdu => f.write_str("exported-PDU (252)"),
            LinkType::Other(v) => write!(f, "link type {v}"),
        }
    }
}

/// Timestamp resolution of a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TsResolution {
    /// Microseconds (magic `a1b2c3d4`), the classic format.
    #[default]
    Micros,
    /// Nanoseconds (magic `a1b23c4d`).
    Nanos,
}

/// Byte order of a file's headers (record data is never swapped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// Little-endian, as written on x86 and most ARM hosts.
    #[default]
    Little,
    /// Big-endian.
    Big,
}

impl ByteOrder {
    fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            ByteOrder::Little => u16::from_le_bytes(b),
            ByteOrder::Big => u16::from_be_bytes(b),
        }
    }

    fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            ByteOrder::Little => u32::from_le_bytes(b),
            ByteOrder::Big => u32::from_be_bytes(b),
        }
    }

    fn put_u16(self, v: u16) -> [u8; 2] {
        match self {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        }
    }

    fn put_u32(self, v: u32) -> [u8; 4] {
        match self {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        }
    }
}

fn word(b: &[u8], at: usize) -> [u8; 4] {
    [b[at], b[at + 1], b[at + 2], b[at + 3]]
}

/// The pcap file header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileHeader {
    /// Major version (2).
    pub version_major: u16,
    /// Minor version (4).
    pub version_minor: u16,
    /// The largest record the writer meant to store.
    pub snaplen: u32,
    /// What the records contain.
    pub link_type: LinkType,
    /// Timestamp resolution.
    pub resolution: TsResolution,
    /// Byte order of the headers.
    pub byte_order: ByteOrder,
}

impl FileHeader {
    /// The header natm writes: version 2.4, little-endian, snaplen 256 KiB.
    pub fn new(link_type: LinkType, resolution: TsResolution) -> FileHeader {
        FileHeader {
            version_major: 2,
            version_minor: 4,
            snaplen: DEFAULT_SNAPLEN,
            link_type,
            resolution,
            byte_order: ByteOrder::Little,
        }
    }

    /// Parse the first 24 bytes of a file.
    pub fn parse(b: &[u8; FILE_HEADER_LEN]) -> Result<FileHeader, CaptureError> {
        let magic_be = u32::from_be_bytes(word(b, 0));
        let (byte_order, resolution) = match (magic_be, magic_be.swap_bytes()) {
            (MAGIC_MICROS, _) => (ByteOrder::Big, TsResolution::Micros),
            (MAGIC_NANOS, _) => (ByteOrder::Big, TsResolution::Nanos),
            (_, MAGIC_MICROS) => (ByteOrder::Little, TsResolution::Micros),
            (_, MAGIC_NANOS) => (ByteOrder::Little, TsResolution::Nanos),
            (PCAPNG_MAGIC, _) => return Err(CaptureError::Pcapng),
            _ => return Err(CaptureError::BadMagic { magic: magic_be }),
        };
        let version_major = byte_order.u16([b[4], b[5]]);
        let version_minor = byte_order.u16([b[6], b[7]]);
        if version_major != 2 {
            return Err(CaptureError::UnsupportedVersion {
                major: version_major,
                minor: version_minor,
            });
        }
        // Bytes 8..16 (time zone and accuracy) are always 0 in practice and ignored.
        let snaplen = byte_order.u32(word(b, 16));
        // The top bits of the link-type field carry FCS information (pcap-linktype(7)).
        let link_type = LinkType::from_u32(byte_order.u32(word(b, 20)) & 0x03FF_FFFF);
        Ok(FileHeader {
            version_major,
            version_minor,
            snaplen,
            link_type,
            resolution,
            byte_order,
        })
    }

    /// The 24 header bytes.
    pub fn to_bytes(&self) -> [u8; FILE_HEADER_LEN] {
        let o = self.byte_order;
        let magic = match self.resolution {
            TsResolution::Micros => MAGIC_MICROS,
            TsResolution::Nanos => MAGIC_NANOS,
        };
        let mut b = [0u8; FILE_HEADER_LEN];
        b[0..4].copy_from_slice(&o.put_u32(magic));
        b[4..6].copy_from_slice(&o.put_u16(self.version_major));
        b[6..8].copy_from_slice(&o.put_u16(self.version_minor));
        b[16..20].copy_from_slice(&o.put_u32(self.snaplen));
        b[20..24].copy_from_slice(&o.put_u32(self.link_type.to_u32()));
        b
    }

    /// The longest record the reader accepts: the snaplen, but never less than libpcap's
    /// 256 KiB (writers often record a smaller snaplen than they use, and Wireshark accepts
    /// up to that) and never more than [`MAX_RECORD_LEN`].
    pub fn record_limit(&self) -> u32 {
        self.snaplen.clamp(DEFAULT_SNAPLEN, MAX_RECORD_LEN)
    }

    /// Parse a 16-byte record header.
    pub fn parse_record_header(&self, b: &[u8; RECORD_HEADER_LEN]) -> RecordHeader {
        let o = self.byte_order;
        let secs = u64::from(o.u32(word(b, 0)));
        let frac = u64::from(o.u32(word(b, 4)));
        // A fraction of a second too large is not refused: it just carries into the
        // seconds, as Wireshark shows it. u32 seconds and fractions cannot overflow u64.
        let frac_nanos = match self.resolution {
            TsResolution::Micros => frac * 1_000,
            TsResolution::Nanos => frac,
        };
        RecordHeader {
            time: Instant::from_nanos(secs * NANOS_PER_SEC + frac_nanos),
            incl_len: o.u32(word(b, 8)),
            orig_len: o.u32(word(b, 12)),
        }
    }

    /// The 16-byte header of a record of `len` bytes at `time` (truncated to the file's
    /// resolution).
    pub fn record_header(
        &self,
        time: Instant,
        len: u32,
    ) -> Result<[u8; RECORD_HEADER_LEN], CaptureError> {
        let nanos = time.as_nanos();
        let secs = u32::try_from(nanos / NANOS_PER_SEC)
            .map_err(|_| CaptureError::TimeOutOfRange { time })?;
        let sub = (nanos % NANOS_PER_SEC) as u32;
        let frac = match self.resolution {
            TsResolution::Micros => sub / 1_000,
            TsResolution::Nanos => sub,
        };
        let o = self.byte_order;
        let mut b = [0u8; RECORD_HEADER_LEN];
        b[0..4].copy_from_slice(&o.put_u32(secs));
        b[4..8].copy_from_slice(&o.put_u32(frac));
        b[8..12].copy_from_slice(&o.put_u32(len));
        b[12..16].copy_from_slice(&o.put_u32(len));
        Ok(b)
    }
}

/// A parsed record header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecordHeader {
    /// The record's time.
    pub time: Instant,
    /// Bytes stored in the file.
    pub incl_len: u32,
    /// Bytes the packet had on the wire (may exceed `incl_len` when the capture truncated it).
    pub orig_len: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_bytes_and_both_orders() {
        let h = FileHeader::new(LinkType::Erf, TsResolution::Micros);
        let b = h.to_bytes();
        assert_eq!(
            b,
            [
                0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 197, 0, 0,
                0
            ]
        );
        assert_eq!(FileHeader::parse(&b).unwrap(), h);
        for order in [ByteOrder::Little, ByteOrder::Big] {
            for res in [TsResolution::Micros, TsResolution::Nanos] {
                let h = FileHeader {
                    byte_order: order,
                    resolution: res,
                    ..FileHeader::new(LinkType::SunAtm, res)
                };
                assert_eq!(FileHeader::parse(&h.to_bytes()).unwrap(), h);
            }
        }
    }

    #[test]
    fn bad_headers() {
        let mut b = FileHeader::new(LinkType::Erf, TsResolution::Micros).to_bytes();
        b[0] = 0;
        assert!(matches!(
            FileHeader::parse(&b),
            Err(CaptureError::BadMagic { magic: 0x00c3b2a1 })
        ));
        b[..4].copy_from_slice(&[0x0a, 0x0d, 0x0d, 0x0a]);
        assert!(matches!(FileHeader::parse(&b), Err(CaptureError::Pcapng)));
        let mut b = FileHeader::new(LinkType::Erf, TsResolution::Micros).to_bytes();
        b[4] = 1;
        assert!(matches!(
            FileHeader::parse(&b),
            Err(CaptureError::UnsupportedVersion { major: 1, minor: 4 })
        ));
    }

    #[test]
    fn link_type_masks_fcs_bits() {
        let mut b = FileHeader::new(LinkType::Erf, TsResolution::Micros).to_bytes();
        b[23] = 0x10; // an FCS-length hint in the top bits
        assert_eq!(FileHeader::parse(&b).unwrap().link_type, LinkType::Erf);
    }

    #[test]
    fn record_limit_clamps() {
        let mut h = FileHeader::new(LinkType::Erf, TsResolution::Micros);
        h.snaplen = 96;
        assert_eq!(h.record_limit(), DEFAULT_SNAPLEN);
        h.snaplen = u32::MAX;
        assert_eq!(h.record_limit(), MAX_RECORD_LEN);
    }

    #[test]
    fn record_times() {
        let h = FileHeader::new(LinkType::Erf, TsResolution::Micros);
        let t = Instant::from_nanos(1_000 * NANOS_PER_SEC + 123_456_789);
        let b = h.record_header(t, 52).unwrap();
        let r = h.parse_record_header(&b);
        assert_eq!(
            r.time,
            Instant::from_nanos(1_000 * NANOS_PER_SEC + 123_456_000)
        );
        assert_eq!((r.incl_len, r.orig_len), (52, 52));
        let n = FileHeader::new(LinkType::Erf, TsResolution::Nanos);
        assert_eq!(
            n.parse_record_header(&n.record_header(t, 1).unwrap()).time,
            t
        );
        let late = Instant::from_nanos((1u64 << 32) * NANOS_PER_SEC);
        assert!(matches!(
            h.record_header(late, 1),
            Err(CaptureError::TimeOutOfRange { .. })
        ));
    }
}

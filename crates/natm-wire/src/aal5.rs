//! AAL5 (ITU-T I.363.5): the CPCS-PDU, its trailer and CRC-32, its receive rules, and
//! segmentation into cells.
//!
//! ```text
//! | CPCS-SDU 1..65535 | PAD 0..47 | UU | CPI | Length (BE16) | CRC-32 (BE32) |
//!  <--------- a multiple of 48 bytes; the trailer ends the last cell ---------->
//! ```
//!
//! * [`Pdu`] is a zero-copy view of a whole CPCS-PDU, with [`Pdu::check`] applying the
//!   receive rules of I.363.5 §10.4 ([`check_length`] for those on the Length, which a
//!   receiver that checks the CRC as the cells come applies alone), giving an [`Aal5Error`]
//!   that says which rule failed.
//! * [`Segmenter`] produces the cells of one SDU lazily, straight from the caller's buffer;
//!   only the last cell marks end of frame (PTI SDU-type 1).
//!
//! Policy (strict I.363.5, a recorded decision): a PDU is discarded when its CRC is wrong,
//! its Length is 0 (the abort indication), its Length does not fit the PDU (Length > PDU − 8,
//! or more than 47 bytes of pad), or its Length exceeds the negotiated maximum SDU. Linux
//! usbatm instead salvages the trailing frame after a lost end cell and delivers Length-0
//! PDUs; natm does neither. A zero-length SDU therefore cannot be sent.
//!
//! Not here: reassembly. natm's one AAL5 receiver is natm-adapter's (per-VC state, timers,
//! buffer pools and OAM dispatch, frames written into the application's buffers; its
//! `Reassembler` takes one VC's cells).

use alloc::vec::Vec;
use core::fmt;

use natm_core::{HeaderFormat, VcId};

use crate::cell::{CELL_LEN, CellHeader, HEADER_LEN, HeaderError, PAYLOAD_LEN, Pti};
use crate::crc32::{Crc32, RESIDUE};

/// Bytes in the CPCS-PDU trailer.
pub const TRAILER_LEN: usize = 8;
/// The largest CPCS-SDU (the Length field is 16 bits).
pub const MAX_SDU: usize = 65_535;
/// Cells in the largest PDU.
pub const MAX_CELLS: usize = cell_count(MAX_SDU);

/// Byte offsets within the 8-byte trailer.
pub mod field {
    use core::ops::Range;
    /// CPCS user-to-user indication.
    pub const UU: usize = 0;
    /// Common part indicator.
    pub const CPI: usize = 1;
    /// SDU length, big-endian.
    pub const LENGTH: Range<usize> = 2..4;
    /// CRC-32, big-endian.
    pub const CRC: Range<usize> = 4..8;
}

/// Cells needed for an SDU of `sdu_len` bytes.
pub const fn cell_count(sdu_len: usize) -> usize {
    (sdu_len + TRAILER_LEN).div_ceil(PAYLOAD_LEN)
}

/// Bytes of the CPCS-PDU for an SDU of `sdu_len` bytes.
pub const fn pdu_len(sdu_len: usize) -> usize {
    cell_count(sdu_len) * PAYLOAD_LEN
}

/// Pad bytes between an SDU of `sdu_len` bytes and the trailer (0..=47).
pub const fn pad_len(sdu_len: usize) -> usize {
    pdu_len(sdu_len) - sdu_len - TRAILER_LEN
}

/// Why a PDU was discarded or an SDU could not be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aal5Error {
    /// The PDU is not a whole number of cells (a view over bytes from a file or a peer).
    NotCellMultiple {
        /// Bytes present.
        len: usize,
    },
    /// The CRC-32 does not match.
    Crc {
        /// CRC computed over the PDU.
        computed: u32,
        /// CRC carried in the trailer.
        received: u32,
    },
    /// Length = 0: the sender aborted the PDU.
    Abort,
    /// The Length field does not fit the PDU (Length > PDU − 8, or pad > 47).
    Length {
        /// The Length field.
        length: u16,
        /// Bytes of PDU received.
        pdu_len: usize,
    },
    /// The SDU is longer than the negotiated maximum (on receive: Length or the cells
    /// collected exceed it).
    Oversize {
        /// Bytes (SDU length, or PDU bytes collected so far).
        len: usize,
        /// The maximum SDU size.
        max_sdu: usize,
    },
    /// A zero-length SDU cannot be sent: Length 0 means abort.
    EmptySdu,
}

impl fmt::Display for Aal5Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Aal5Error::NotCellMultiple { len } => {
                write!(
                    f,
                    "AAL5 PDU of {len} bytes is not a whole number of 48-byte cells"
                )
            }
            Aal5Error::Crc { computed, received } => {
                write!(
                    f,
                    "AAL5 CRC error: computed {computed:#010x}, trailer has {received:#010x}"
                )
            }
            Aal5Error::Abort => f.write_str("AAL5 abort (Length = 0)"),
            Aal5Error::Length { length, pdu_len } => {
                write!(
                    f,
                    "AAL5 length error: Length {length} does not fit a {pdu_len}-byte PDU"
                )
            }
            Aal5Error::Oversize { len, max_sdu } => {
                write!(
                    f,
                    "AAL5 oversize: {len} bytes exceeds the maximum SDU of {max_sdu}"
                )
            }
            Aal5Error::EmptySdu => {
                f.write_str("an AAL5 SDU must be 1..=65535 bytes (Length 0 means abort)")
            }
        }
    }
}

impl core::error::Error for Aal5Error {}

/// The CPCS-PDU trailer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Trailer {
    /// CPCS user-to-user indication, carried transparently (RFC 2684: 0).
    pub uu: u8,
    /// Common part indicator (0; it only aligns the trailer).
    pub cpi: u8,
    /// SDU length in bytes; 0 is the abort indication.
    pub length: u16,
    /// CRC-32/BZIP2 over everything before this field.
    pub crc: u32,
}

impl Trailer {
    /// Parse the last eight bytes of a PDU.
    pub fn from_bytes(b: [u8; TRAILER_LEN]) -> Trailer {
        Trailer {
            uu: b[field::UU],
            cpi: b[field::CPI],
            length: u16::from_be_bytes([b[2], b[3]]),
            crc: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    /// The eight trailer bytes.
    pub fn to_bytes(&self) -> [u8; TRAILER_LEN] {
        let l = self.length.to_be_bytes();
        let c = self.crc.to_be_bytes();
        [self.uu, self.cpi, l[0], l[1], c[0], c[1], c[2], c[3]]
    }
}

impl fmt::Display for Trailer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "uu={:#04x} cpi={:#04x} len={} crc={:#010x}",
            self.uu, self.cpi, self.length, self.crc
        )
    }
}

/// A zero-copy view of a complete CPCS-PDU (payloads of all its cells, trailer included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pdu<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Pdu<T> {
    /// A view without checks; getters may panic unless the buffer is a non-empty multiple
    /// of 48 bytes.
    pub const fn new_unchecked(buffer: T) -> Pdu<T> {
        Pdu { buffer }
    }

    /// A view checked to be a non-empty whole number of cells.
    pub fn new_checked(buffer: T) -> Result<Pdu<T>, Aal5Error> {
        let len = buffer.as_ref().len();
        if len == 0 || len % PAYLOAD_LEN != 0 {
            return Err(Aal5Error::NotCellMultiple { len });
        }
        Ok(Pdu { buffer })
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Bytes in the PDU.
    pub fn len(&self) -> usize {
        self.buffer.as_ref().len()
    }

    /// Whether the PDU is empty (never true for a checked view).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The trailer.
    pub fn trailer(&self) -> Trailer {
        let b = self.buffer.as_ref();
        let mut t = [0u8; TRAILER_LEN];
        t.copy_from_slice(&b[b.len() - TRAILER_LEN..]);
        Trailer::from_bytes(t)
    }

    /// The CRC computed over the PDU, for comparison with [`Trailer::crc`].
    pub fn computed_crc(&self) -> u32 {
        let b = self.buffer.as_ref();
        let mut c = Crc32::new();
        c.update(&b[..b.len() - 4]);
        c.finish()
    }

    /// Whether the CRC is right (the residue check both Wireshark and Linux use).
    pub fn verify_crc(&self) -> bool {
        let mut c = Crc32::new();
        c.update(self.buffer.as_ref());
        c.register() == RESIDUE
    }

    /// Apply the receive rules and return the SDU length, or why the PDU is discarded.
    pub fn check(&self, max_sdu: usize) -> Result<usize, Aal5Error> {
        let t = self.trailer();
        let computed = self.computed_crc();
        if computed != t.crc {
            return Err(Aal5Error::Crc {
                computed,
                received: t.crc,
            });
        }
        check_length(t.length, self.len(), max_sdu)
    }

    /// The SDU, after [`check`](Self::check) passed; panics if Length exceeds the PDU.
    pub fn sdu(&self) -> &[u8] {
        &self.buffer.as_ref()[..usize::from(self.trailer().length)]
    }
}

/// The receive rules of I.363.5 §10.4 on the trailer's Length, once the CRC is right: the SDU
/// length, or [`Aal5Error::Abort`] for Length 0, [`Aal5Error::Length`] if it does not fit a
/// PDU of `pdu_len` bytes (Length > PDU − 8, or more than 47 bytes of pad), and
/// [`Aal5Error::Oversize`] above `max_sdu`, in that order.
pub fn check_length(length: u16, pdu_len: usize, max_sdu: usize) -> Result<usize, Aal5Error> {
    let n = usize::from(length);
    if n == 0 {
        return Err(Aal5Error::Abort);
    }
    if n + TRAILER_LEN > pdu_len || pdu_len - n - TRAILER_LEN >= PAYLOAD_LEN {
        return Err(Aal5Error::Length { length, pdu_len });
    }
    if n > max_sdu {
        return Err(Aal5Error::Oversize { len: n, max_sdu });
    }
    Ok(n)
}

/// Build the CPCS-PDU of `sdu` into `out` (appended): SDU, zero pad, trailer with CRC.
pub fn encode_pdu(sdu: &[u8], uu: u8, cpi: u8, out: &mut Vec<u8>) -> Result<Trailer, Aal5Error> {
    let trailer = trailer_for(sdu, uu, cpi)?;
    out.reserve(pdu_len(sdu.len()));
    out.extend_from_slice(sdu);
    out.resize(out.len() + pad_len(sdu.len()), 0);
    out.extend_from_slice(&trailer.to_bytes());
    Ok(trailer)
}

/// The trailer for `sdu`, computing the CRC in one pass over the caller's bytes.
pub fn trailer_for(sdu: &[u8], uu: u8, cpi: u8) -> Result<Trailer, Aal5Error> {
    let length = match sdu.len() {
        0 => return Err(Aal5Error::EmptySdu),
        n if n > MAX_SDU => {
            return Err(Aal5Error::Oversize {
                len: n,
                max_sdu: MAX_SDU,
            });
        }
        n => n as u16,
    };
    // The SDU's whole 64-byte blocks, then its rest, the padding and the trailer's first
    // four bytes from one buffer: two CRC calls, not four (most of the cost of a short SDU).
    let split = sdu.len() - sdu.len() % 64;
    let mut end = [0u8; 64 + PAYLOAD_LEN + 4];
    let rest = sdu.len() - split;
    end[..rest].copy_from_slice(&sdu[split..]);
    let n = rest + pad_len(sdu.len());
    let l = length.to_be_bytes();
    end[n..n + 4].copy_from_slice(&[uu, cpi, l[0], l[1]]);
    let mut c = Crc32::new();
    c.update(&sdu[..split]);
    c.update(&end[..n + 4]);
    Ok(Trailer {
        uu,
        cpi,
        length,
        crc: c.finish(),
    })
}

/// Produces the cells of one SDU, lazily and without copying the SDU first.
///
/// All cells but the last carry PTI 000 (user data, SDU-type 0); the last carries 001.
#[derive(Clone, Debug)]
pub struct Segmenter<'a> {
    sdu: &'a [u8],
    trailer: [u8; TRAILER_LEN],
    header: [u8; HEADER_LEN],
    last_header: [u8; HEADER_LEN],
    next: usize,
    total: usize,
}

impl<'a> Segmenter<'a> {
    /// Segment `sdu` onto `header.vc`; `header.pti` is replaced by user-data PTIs (its EFCI
    /// bit is kept), and CLP and GFC are kept.
    pub fn new(
        header: CellHeader,
        format: HeaderFormat,
        sdu: &'a [u8],
        uu: u8,
        cpi: u8,
    ) -> Result<Segmenter<'a>, SegmentError> {
        let trailer = trailer_for(sdu, uu, cpi).map_err(SegmentError::Sdu)?;
        let congestion = matches!(
            header.pti,
            Pti::UserData {
                congestion: true,
                ..
            }
        );
        let mid = CellHeader {
            pti: Pti::UserData {
                congestion,
                end_of_frame: false,
            },
            ..header
        };
        let last = CellHeader {
            pti: Pti::UserData {
                congestion,
                end_of_frame: true,
            },
            ..header
        };
        Ok(Segmenter {
            sdu,
            trailer: trailer.to_bytes(),
            header: mid.to_bytes(format).map_err(SegmentError::Header)?,
            last_header: last.to_bytes(format).map_err(SegmentError::Header)?,
            next: 0,
            total: cell_count(sdu.len()),
        })
    }

    /// Segment `sdu` onto a UNI VC with GFC 0, CLP 0, UU 0 and CPI 0.
    pub fn uni(vc: VcId, sdu: &'a [u8]) -> Result<Segmenter<'a>, SegmentError> {
        Segmenter::new(CellHeader::data(vc, false), HeaderFormat::Uni, sdu, 0, 0)
    }

    /// Cells in this SDU.
    pub fn total_cells(&self) -> usize {
        self.total
    }

    /// Cells not yet produced.
    pub fn remaining(&self) -> usize {
        self.total - self.next
    }

    /// The trailer the last cell carries.
    pub fn trailer(&self) -> Trailer {
        Trailer::from_bytes(self.trailer)
    }

    /// Write the next cell into `out`; `false` when all cells have been produced.
    #[inline]
    pub fn next_cell(&mut self, out: &mut [u8; CELL_LEN]) -> bool {
        if self.next == self.total {
            return false;
        }
        let start = self.next * PAYLOAD_LEN;
        self.next += 1;
        let (header, payload) = out.split_at_mut(HEADER_LEN);
        // Fast path: a cell filled entirely with SDU bytes (every cell but the last one or two).
        if self.next != self.total
            && let Some(chunk) = self.sdu.get(start..start + PAYLOAD_LEN)
        {
            header.copy_from_slice(&self.header);
            payload.copy_from_slice(chunk);
            return true;
        }
        let last = self.next == self.total;
        header.copy_from_slice(if last {
            &self.last_header
        } else {
            &self.header
        });
        let data = self.sdu.get(start..).unwrap_or(&[]);
        let n = data.len().min(PAYLOAD_LEN);
        payload[..n].copy_from_slice(&data[..n]);
        payload[n..].fill(0);
        if last {
            payload[PAYLOAD_LEN - TRAILER_LEN..].copy_from_slice(&self.trailer);
        }
        true
    }

    /// Fill `out` with as many whole cells as fit; returns the number written.
    pub fn write_cells(&mut self, out: &mut [u8]) -> usize {
        // Cells wholly filled with SDU bytes, in one tight copy: the bulk of a long SDU.
        let full = (self.sdu.len() / PAYLOAD_LEN).min(self.total - 1);
        let mut n = 0;
        if self.next < full {
            let sdu = &self.sdu[self.next * PAYLOAD_LEN..full * PAYLOAD_LEN];
            n = natm_clmul::scatter_cells(&self.header, sdu, out);
            self.next += n;
        }
        let out = out[n * CELL_LEN..].chunks_exact_mut(CELL_LEN);
        // The last one or two cells (pad and trailer), and whatever `next_cell` is left.
        for chunk in out {
            let cell: &mut [u8; CELL_LEN] = chunk.try_into().expect("chunks_exact gives CELL_LEN");
            if !self.next_cell(cell) {
                break;
            }
            n += 1;
        }
        n
    }
}

impl Segmenter<'_> {
    /// The position, without the borrow of the SDU: for a queue that owns its SDU buffers
    /// and produces one cell at a time (a `Segmenter` cannot be stored beside the buffer it
    /// borrows). Resume with [`PausedSegmenter::resume`] over the same bytes.
    pub fn pause(&self) -> PausedSegmenter {
        PausedSegmenter {
            sdu_len: self.sdu.len(),
            trailer: self.trailer,
            header: self.header,
            last_header: self.last_header,
            next: self.next,
            total: self.total,
        }
    }
}

/// A [`Segmenter`] paused between cells ([`Segmenter::pause`]); it keeps the trailer (CRC
/// already computed) and the position, not the SDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PausedSegmenter {
    sdu_len: usize,
    trailer: [u8; TRAILER_LEN],
    header: [u8; HEADER_LEN],
    last_header: [u8; HEADER_LEN],
    next: usize,
    total: usize,
}

impl PausedSegmenter {
    /// Continue over `sdu`, which must be the bytes the segmenter was made from; `None` if
    /// its length differs (other bytes of the same length would get the old trailer and so
    /// a wrong CRC: the caller must hand back the same buffer).
    #[inline]
    pub fn resume(self, sdu: &[u8]) -> Option<Segmenter<'_>> {
        (sdu.len() == self.sdu_len).then_some(Segmenter {
            sdu,
            trailer: self.trailer,
            header: self.header,
            last_header: self.last_header,
            next: self.next,
            total: self.total,
        })
    }

    /// Cells not yet produced.
    pub fn remaining(&self) -> usize {
        self.total - self.next
    }
}

impl Iterator for Segmenter<'_> {
    type Item = [u8; CELL_LEN];

    fn next(&mut self) -> Option<[u8; CELL_LEN]> {
        let mut c = [0u8; CELL_LEN];
        self.next_cell(&mut c).then_some(c)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining(), Some(self.remaining()))
    }
}

impl ExactSizeIterator for Segmenter<'_> {}

/// Why an SDU could not be segmented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentError {
    /// The SDU is empty or too long.
    Sdu(Aal5Error),
    /// The header does not fit the format.
    Header(HeaderError),
}

impl fmt::Display for SegmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SegmentError::Sdu(e) => e.fmt(f),
            SegmentError::Header(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for SegmentError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::Cell;
    use proptest::prelude::*;

    fn vc(vpi: u32, vci: u32) -> VcId {
        VcId::uni(vpi, vci).unwrap()
    }

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn cell_counts() {
        // atm-facts.md §2.1.
        assert_eq!(cell_count(1), 1);
        assert_eq!(cell_count(40), 1);
        assert_eq!(cell_count(41), 2);
        assert_eq!(cell_count(88), 2);
        assert_eq!(cell_count(89), 3);
        assert_eq!(cell_count(136), 3);
        assert_eq!(MAX_CELLS, 1366);
        assert_eq!(pad_len(5), 35);
        assert_eq!(pad_len(40), 0);
        // §2.5 efficiency table: SDU sizes and cells.
        for (sdu, cells) in [(40, 1), (48, 2), (1508, 32), (1524, 32), (9188, 192)] {
            assert_eq!(cell_count(sdu), cells, "{sdu}");
        }
    }

    #[test]
    fn hello_vector() {
        // atm-facts.md §2.3, Wireshark "AAL5 CRC correct".
        let mut pdu = Vec::new();
        let t = encode_pdu(b"hello", 0, 0, &mut pdu).unwrap();
        assert_eq!(t.crc, 0x7f4c_d5de);
        assert_eq!(&pdu[40..], &[0, 0, 0, 5, 0x7f, 0x4c, 0xd5, 0xde]);
        let cells: Vec<_> = Segmenter::uni(vc(1, 100), b"hello").unwrap().collect();
        assert_eq!(cells.len(), 1);
        let mut want = unhex("00 10 06 42 40 68 65 6c 6c 6f");
        want.resize(45, 0);
        want.extend_from_slice(&unhex("00 00 00 05 7f 4c d5 de"));
        assert_eq!(&cells[0][..], &want[..]);
    }

    #[test]
    fn trailer_vectors() {
        // atm-facts.md §2.3.
        let forty: Vec<u8> = (0..40).collect();
        assert_eq!(
            trailer_for(&forty, 0, 0).unwrap().to_bytes(),
            [0, 0, 0, 0x28, 0xa6, 0xae, 0xfa, 0x48]
        );
        assert_eq!(
            trailer_for(b"123456789", 0, 0).unwrap().to_bytes(),
            [0, 0, 0, 9, 0xfb, 0xb9, 0x71, 0x24]
        );
        // The abort PDU (Length 0): 40 zero bytes and trailer 00 00 00 00 38 66 24 c1.
        let mut abort = [0u8; 48];
        abort[44..].copy_from_slice(&[0x38, 0x66, 0x24, 0xc1]);
        let pdu = Pdu::new_checked(&abort[..]).unwrap();
        assert!(pdu.verify_crc());
        assert_eq!(pdu.check(MAX_SDU), Err(Aal5Error::Abort));
        assert_eq!(trailer_for(b"", 0, 0), Err(Aal5Error::EmptySdu));
    }

    #[test]
    fn forty_one_bytes_two_cells() {
        // atm-facts.md §2.3: cell 1 PTI 0, cell 2 PTI 1 with trailer 00 00 00 29 4e b3 b0 e7.
        let sdu: Vec<u8> = (0..41).collect();
        let cells: Vec<_> = Segmenter::uni(vc(1, 100), &sdu).unwrap().collect();
        assert_eq!(cells.len(), 2);
        let mut c1 = unhex("00 10 06 40 4e");
        c1.extend_from_slice(&sdu);
        c1.resize(53, 0);
        assert_eq!(&cells[0][..], &c1[..]);
        let mut c2 = unhex("00 10 06 42 40");
        c2.resize(45, 0);
        c2.extend_from_slice(&unhex("00 00 00 29 4e b3 b0 e7"));
        assert_eq!(&cells[1][..], &c2[..]);
    }

    #[test]
    fn llc_icmp_vector() {
        // atm-facts.md §2.3 / §7.1: LLC/SNAP + 28-byte IPv4 ICMP echo, trailer 00 00 00 24 d5 a2 67 cd.
        let sdu = unhex(
            "aa aa 03 00 00 00 08 00 45 00 00 1c 00 01 00 00 40 01 f9 8c c0 a8 00 01 c0 a8 00 02 08 00 f7 ff 00 00 00 00",
        );
        assert_eq!(sdu.len(), 36);
        let t = trailer_for(&sdu, 0, 0).unwrap();
        assert_eq!(t.to_bytes(), [0, 0, 0, 0x24, 0xd5, 0xa2, 0x67, 0xcd]);
    }

    #[test]
    fn signalling_sd_vector() {
        // atm-facts.md §6: a 108-byte SDU on 0/5 in 3 cells, trailer 00 00 00 6c 87 52 1b 8b,
        // headers 00 00 00 50 e2 (twice) and 00 00 00 52 ec. Only the framing is checked here.
        let headers: Vec<[u8; 5]> = Segmenter::uni(vc(0, 5), &[0u8; 108])
            .unwrap()
            .map(|c| c[..5].try_into().unwrap())
            .collect();
        assert_eq!(
            headers,
            vec![
                [0, 0, 0, 0x50, 0xe2],
                [0, 0, 0, 0x50, 0xe2],
                [0, 0, 0, 0x52, 0xec]
            ]
        );
    }

    #[test]
    fn segmenter_keeps_efci_and_clp() {
        let h = CellHeader {
            pti: Pti::UserData {
                congestion: true,
                end_of_frame: false,
            },
            clp: true,
            ..CellHeader::data(vc(1, 100), false)
        };
        let cells: Vec<_> = Segmenter::new(h, HeaderFormat::Uni, &[1u8; 60], 0, 0)
            .unwrap()
            .collect();
        assert_eq!(cells[0][3] & 0x0f, 0b0101);
        assert_eq!(cells[1][3] & 0x0f, 0b0111);
    }

    #[test]
    fn pdu_view_rejects_partial_cells() {
        assert_eq!(
            Pdu::new_checked(&[0u8; 47][..]),
            Err(Aal5Error::NotCellMultiple { len: 47 })
        );
        assert_eq!(
            Pdu::new_checked(&[0u8; 0][..]),
            Err(Aal5Error::NotCellMultiple { len: 0 })
        );
    }

    proptest! {
        #[test]
        fn round_trip(sdu in proptest::collection::vec(any::<u8>(), 1..3000), uu: u8, cpi: u8) {
            // Reassembly of the cells is natm-adapter's (its `Reassembler` has this test too).
            let h = CellHeader::data(vc(3, 77), false);
            let seg = Segmenter::new(h, HeaderFormat::Uni, &sdu, uu, cpi).unwrap();
            prop_assert_eq!(seg.total_cells(), cell_count(sdu.len()));
            let mut payloads = Vec::new();
            for c in seg {
                prop_assert!(Cell::new_checked(&c[..]).unwrap().verify_hec());
                payloads.extend_from_slice(&c[HEADER_LEN..]);
            }
            let mut pdu = Vec::new();
            let t = encode_pdu(&sdu, uu, cpi, &mut pdu).unwrap();
            prop_assert_eq!(&payloads, &pdu);
            let view = Pdu::new_checked(&pdu[..]).unwrap();
            prop_assert!(view.verify_crc());
            prop_assert_eq!(view.trailer(), t);
            prop_assert_eq!(view.check(MAX_SDU), Ok(sdu.len()));
            prop_assert_eq!(view.sdu(), &sdu[..]);
        }

        #[test]
        fn paused_and_resumed_equals_iterator(sdu in proptest::collection::vec(any::<u8>(), 1..300)) {
            let want: Vec<[u8; CELL_LEN]> = Segmenter::uni(vc(1, 2), &sdu).unwrap().collect();
            let mut paused = Segmenter::uni(vc(1, 2), &sdu).unwrap().pause();
            let mut got = Vec::new();
            while paused.remaining() > 0 {
                let mut seg = paused.resume(&sdu).unwrap();
                got.push(seg.next().unwrap());
                paused = seg.pause();
            }
            prop_assert_eq!(got, want);
            prop_assert!(paused.resume(&sdu[1..]).is_none());
        }

        #[test]
        fn write_cells_in_pieces_equals_iterator(sdu in proptest::collection::vec(any::<u8>(), 1..2000), pieces in proptest::collection::vec(0usize..5, 1..50)) {
            let want: Vec<u8> = Segmenter::uni(vc(1, 2), &sdu).unwrap().flatten().collect();
            let mut seg = Segmenter::uni(vc(1, 2), &sdu).unwrap();
            let mut got = Vec::new();
            for &cells in pieces.iter().cycle().take(pieces.len() + seg.total_cells()) {
                // Room for `cells` cells plus a partial one, which must stay untouched.
                let mut buf = vec![0xa5u8; cells * CELL_LEN + 7];
                let n = seg.write_cells(&mut buf);
                prop_assert!(n <= cells);
                prop_assert!(buf[n * CELL_LEN..].iter().all(|&b| b == 0xa5));
                got.extend_from_slice(&buf[..n * CELL_LEN]);
            }
            // Whatever is left, in one go.
            let mut rest = vec![0u8; seg.remaining() * CELL_LEN];
            let n = seg.write_cells(&mut rest);
            prop_assert_eq!(n * CELL_LEN, rest.len());
            got.extend_from_slice(&rest);
            prop_assert_eq!(seg.remaining(), 0);
            prop_assert_eq!(got, want);
        }
    }
}

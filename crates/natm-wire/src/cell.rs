//! The 53-byte ATM cell: header layout, PTI, CLP and the HEC (ITU-T I.361 §2.2, I.432.1 §4.3).
//!
//! [`Cell`] is a zero-copy view over a 53-byte buffer in the manner of smoltcp's `wire`
//! module; [`CellHeader`] is the parsed representation with [`CellHeader::parse`] and
//! [`CellHeader::emit`]. [`HecReceiver`] is the I.432 receiver that corrects single-bit header
//! errors in correction mode and discards in detection mode.
//!
//! Rule for views (from smoltcp): parse untrusted bytes with [`Cell::new_checked`]; build
//! cells to send with [`Cell::new_unchecked`] over a buffer you sized yourself. Getters on a
//! checked view never panic.
//!
//! What this is not: cell delineation on an unframed bit stream (HUNT/PRESYNC/SYNC). natm's
//! links carry whole cells, so only the HEC check and correction apply.

use core::fmt;

use natm_core::{HeaderFormat, VcId, Vci, Vpi};

/// Bytes in a cell.
pub const CELL_LEN: usize = 53;

/// A cell as it travels: 53 bytes, the header (HEC included) first. [`Cell`] is a view of
/// one; this is the array links, rings and adapters move.
pub type CellBytes = [u8; CELL_LEN];
/// Bytes in a cell header, HEC included.
pub const HEADER_LEN: usize = 5;
/// Bytes in a cell payload.
pub const PAYLOAD_LEN: usize = 48;

/// Byte ranges of the cell.
pub mod field {
    use core::ops::Range;
    /// The four header bytes the HEC covers.
    pub const HEADER: Range<usize> = 0..4;
    /// Header error control byte.
    pub const HEC: usize = 4;
    /// The 48-byte payload.
    pub const PAYLOAD: Range<usize> = 5..53;
}

/// A cell buffer was too short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Truncated {
    /// Bytes needed.
    pub needed: usize,
    /// Bytes present.
    pub got: usize,
}

impl fmt::Display for Truncated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "truncated: need {} bytes, got {}", self.needed, self.got)
    }
}

impl core::error::Error for Truncated {}

/// Payload type identifier, the three PTI bits (I.361 table 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pti {
    /// User data (PTI 0xx).
    UserData {
        /// Explicit forward congestion indication (bit 1).
        congestion: bool,
        /// ATM-user-to-ATM-user indication (bit 0); AAL5 marks the last cell of a PDU with it.
        end_of_frame: bool,
    },
    /// Segment OAM F5 cell (100).
    SegmentF5,
    /// End-to-end OAM F5 cell (101).
    EndToEndF5,
    /// Resource management cell (110).
    ResourceMgmt,
    /// Reserved for future functions (111).
    Reserved,
}

impl Pti {
    /// User data, neither congested nor last.
    pub const DATA: Pti = Pti::UserData {
        congestion: false,
        end_of_frame: false,
    };
    /// User data, the last cell of an AAL5 PDU.
    pub const DATA_END: Pti = Pti::UserData {
        congestion: false,
        end_of_frame: true,
    };

    /// The PTI from its three bits (higher bits ignored).
    pub const fn from_bits(bits: u8) -> Pti {
        match bits & 0b111 {
            b @ 0..=3 => Pti::UserData {
                congestion: b & 0b10 != 0,
                end_of_frame: b & 1 != 0,
            },
            4 => Pti::SegmentF5,
            5 => Pti::EndToEndF5,
            6 => Pti::ResourceMgmt,
            _ => Pti::Reserved,
        }
    }

    /// The three bits.
    pub const fn bits(self) -> u8 {
        match self {
            Pti::UserData {
                congestion,
                end_of_frame,
            } => ((congestion as u8) << 1) | end_of_frame as u8,
            Pti::SegmentF5 => 4,
            Pti::EndToEndF5 => 5,
            Pti::ResourceMgmt => 6,
            Pti::Reserved => 7,
        }
    }

    /// Whether this is a user-data cell.
    pub const fn is_user_data(self) -> bool {
        matches!(self, Pti::UserData { .. })
    }

    /// Whether this is a user-data cell that ends an AAL5 PDU (`pti & 0b101 == 0b001`).
    pub const fn is_end_of_frame(self) -> bool {
        matches!(
            self,
            Pti::UserData {
                end_of_frame: true,
                ..
            }
        )
    }

    /// Whether this is an F5 OAM cell (segment or end-to-end).
    pub const fn is_f5_oam(self) -> bool {
        matches!(self, Pti::SegmentF5 | Pti::EndToEndF5)
    }
}

impl fmt::Display for Pti {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Pti::UserData {
                congestion,
                end_of_frame,
            } => {
                f.write_str("data")?;
                if congestion {
                    f.write_str("+efci")?;
                }
                if end_of_frame {
                    f.write_str("+eof")?;
                }
                Ok(())
            }
            Pti::SegmentF5 => f.write_str("f5-seg"),
            Pti::EndToEndF5 => f.write_str("f5-e2e"),
            Pti::ResourceMgmt => f.write_str("rm"),
            Pti::Reserved => f.write_str("reserved"),
        }
    }
}

// A `static`, so the 256-byte table exists once; the `const` is for compile-time tables only
// (a `const` used at run time may be rebuilt at every use site).
const HEC_ALGORITHM: crc::Crc<u8> = crc::Crc::<u8>::new(&crc::CRC_8_I_432_1);
static HEC_CRC: crc::Crc<u8> = HEC_ALGORITHM;

/// The HEC of four header bytes: CRC-8 (x^8+x^2+x+1) XOR the coset 0x55 (I.432.1 §4.3.2).
#[inline]
pub fn hec(header: [u8; 4]) -> u8 {
    HEC_CRC.checksum(&header)
}

/// The HEC syndrome of a five-byte header: 0 when the header is error-free.
#[inline]
pub fn hec_syndrome(header: [u8; 5]) -> u8 {
    hec([header[0], header[1], header[2], header[3]]) ^ header[4]
}

/// For each syndrome, the single bit (0 = MSB of byte 0 … 39 = LSB of the HEC) whose flip
/// produces it, or 0xFF where no single-bit error does.
const SYNDROME_BIT: [u8; 256] = {
    let mut table = [0xFFu8; 256];
    let mut p = 0;
    while p < 40 {
        // Syndromes are linear: flipping bit p of any valid header gives the same one.
        let mut h = [0u8; 5];
        h[4] = HEC_ALGORITHM.checksum(&[0, 0, 0, 0]);
        h[p / 8] ^= 0x80 >> (p % 8);
        let syndrome = HEC_ALGORITHM.checksum(&[h[0], h[1], h[2], h[3]]) ^ h[4];
        table[syndrome as usize] = p as u8;
        p += 1;
    }
    table
};

/// The bit position (0 = MSB of byte 0, 39 = LSB of the HEC byte) of the single-bit error that
/// explains `syndrome`, or `None` if no single-bit error does.
pub const fn syndrome_bit(syndrome: u8) -> Option<u8> {
    match SYNDROME_BIT[syndrome as usize] {
        0xFF => None,
        p => Some(p),
    }
}

/// A zero-copy view of a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Cell<T> {
    /// A view without a length check; getters may panic on a buffer shorter than 53 bytes.
    pub const fn new_unchecked(buffer: T) -> Cell<T> {
        Cell { buffer }
    }

    /// A view of a buffer checked to hold at least one cell.
    pub fn new_checked(buffer: T) -> Result<Cell<T>, Truncated> {
        let cell = Cell::new_unchecked(buffer);
        cell.check_len()?;
        Ok(cell)
    }

    /// Whether the buffer holds a whole cell.
    pub fn check_len(&self) -> Result<(), Truncated> {
        let got = self.buffer.as_ref().len();
        if got < CELL_LEN {
            Err(Truncated {
                needed: CELL_LEN,
                got,
            })
        } else {
            Ok(())
        }
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The four header bytes the HEC covers, as one big-endian word.
    pub fn header_word(&self) -> u32 {
        let b = self.buffer.as_ref();
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// The five header bytes.
    pub fn header_bytes(&self) -> [u8; 5] {
        let b = self.buffer.as_ref();
        [b[0], b[1], b[2], b[3], b[4]]
    }

    /// Generic flow control (UNI only; `None` at the NNI).
    pub fn gfc(&self, format: HeaderFormat) -> Option<u8> {
        match format {
            HeaderFormat::Uni => Some((self.header_word() >> 28) as u8),
            HeaderFormat::Nni => None,
        }
    }

    /// The VPI, 8 bits at the UNI and 12 at the NNI.
    pub fn vpi(&self, format: HeaderFormat) -> Vpi {
        let w = self.header_word();
        let (bits, fmt) = match format {
            HeaderFormat::Uni => ((w >> 20) & 0xFF, HeaderFormat::Uni),
            HeaderFormat::Nni => ((w >> 20) & 0xFFF, HeaderFormat::Nni),
        };
        Vpi::new(bits, fmt).expect("masked to the format's width")
    }

    /// The VCI.
    pub fn vci(&self) -> Vci {
        Vci::from_u16((self.header_word() >> 4) as u16)
    }

    /// VPI and VCI together.
    pub fn vc(&self, format: HeaderFormat) -> VcId {
        VcId::new(self.vpi(format), self.vci())
    }

    /// The payload type.
    pub fn pti(&self) -> Pti {
        Pti::from_bits((self.header_word() >> 1) as u8)
    }

    /// Cell loss priority: `true` means the cell may be discarded first ("tagged").
    pub fn clp(&self) -> bool {
        self.header_word() & 1 != 0
    }

    /// The HEC byte as received.
    pub fn hec(&self) -> u8 {
        self.buffer.as_ref()[field::HEC]
    }

    /// The HEC syndrome; zero when the header is intact.
    pub fn hec_syndrome(&self) -> u8 {
        hec_syndrome(self.header_bytes())
    }

    /// Whether the HEC matches the header.
    pub fn verify_hec(&self) -> bool {
        self.hec_syndrome() == 0
    }

    /// The 48 payload bytes.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Cell<T> {
    fn set_header_word(&mut self, w: u32) {
        self.buffer.as_mut()[field::HEADER].copy_from_slice(&w.to_be_bytes());
    }

    /// Set GFC (UNI) — ignored at the NNI, where those bits belong to the VPI.
    pub fn set_gfc(&mut self, format: HeaderFormat, gfc: u8) {
        if format == HeaderFormat::Uni {
            let w = self.header_word();
            self.set_header_word((w & 0x0FFF_FFFF) | (u32::from(gfc & 0xF) << 28));
        }
    }

    /// Set the VPI. At the UNI only the low 8 bits are written, so the caller checks
    /// [`Vpi::fits`] first.
    pub fn set_vpi(&mut self, format: HeaderFormat, vpi: Vpi) {
        let w = self.header_word();
        let (mask, v) = match format {
            HeaderFormat::Uni => (0x0FF0_0000, u32::from(vpi.get() & 0xFF)),
            HeaderFormat::Nni => (0xFFF0_0000, u32::from(vpi.get())),
        };
        self.set_header_word((w & !mask) | (v << 20));
    }

    /// Set the VCI.
    pub fn set_vci(&mut self, vci: Vci) {
        let w = self.header_word();
        self.set_header_word((w & !0x000F_FFF0) | (u32::from(vci.get()) << 4));
    }

    /// Set the payload type.
    pub fn set_pti(&mut self, pti: Pti) {
        let w = self.header_word();
        self.set_header_word((w & !0b1110) | (u32::from(pti.bits()) << 1));
    }

    /// Set the cell loss priority.
    pub fn set_clp(&mut self, clp: bool) {
        let w = self.header_word();
        self.set_header_word((w & !1) | u32::from(clp));
    }

    /// Compute and store the HEC; call after every header change.
    pub fn fill_hec(&mut self) {
        let h = hec(self.header_word().to_be_bytes());
        self.buffer.as_mut()[field::HEC] = h;
    }

    /// The payload, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// A parsed cell header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CellHeader {
    /// Generic flow control; always 0 at the NNI.
    pub gfc: u8,
    /// The virtual channel.
    pub vc: VcId,
    /// Payload type.
    pub pti: Pti,
    /// Cell loss priority.
    pub clp: bool,
}

/// Why a header could not be emitted or parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// The buffer is shorter than a cell.
    Truncated(Truncated),
    /// The HEC does not match (parse only; see [`HecReceiver`] for correction).
    BadHec {
        /// The non-zero syndrome.
        syndrome: u8,
    },
    /// The VPI does not fit the header format (emit only).
    VpiTooLarge {
        /// The VPI.
        vpi: u16,
        /// The format's limit.
        max: u16,
    },
    /// GFC is 4 bits, and absent at the NNI (emit only).
    BadGfc {
        /// The value given.
        gfc: u8,
    },
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HeaderError::Truncated(t) => write!(f, "cell {t}"),
            HeaderError::BadHec { syndrome } => {
                write!(f, "header error: HEC syndrome {syndrome:#04x}")
            }
            HeaderError::VpiTooLarge { vpi, max } => {
                write!(f, "VPI {vpi} does not fit the header (max {max})")
            }
            HeaderError::BadGfc { gfc } => write!(f, "GFC {gfc} invalid for this header format"),
        }
    }
}

impl core::error::Error for HeaderError {}

impl From<Truncated> for HeaderError {
    fn from(t: Truncated) -> Self {
        HeaderError::Truncated(t)
    }
}

impl CellHeader {
    /// A UNI user-data header with GFC 0 and CLP 0.
    pub const fn data(vc: VcId, end_of_frame: bool) -> CellHeader {
        CellHeader {
            gfc: 0,
            vc,
            pti: Pti::UserData {
                congestion: false,
                end_of_frame,
            },
            clp: false,
        }
    }

    /// Parse a cell's header, requiring a correct HEC.
    pub fn parse<T: AsRef<[u8]>>(
        cell: &Cell<T>,
        format: HeaderFormat,
    ) -> Result<CellHeader, HeaderError> {
        cell.check_len()?;
        let syndrome = cell.hec_syndrome();
        if syndrome != 0 {
            return Err(HeaderError::BadHec { syndrome });
        }
        Ok(CellHeader::parse_unverified(cell, format))
    }

    /// Parse the header fields without looking at the HEC.
    ///
    /// Panics if the view is shorter than a header; use on checked views.
    pub fn parse_unverified<T: AsRef<[u8]>>(cell: &Cell<T>, format: HeaderFormat) -> CellHeader {
        CellHeader {
            gfc: cell.gfc(format).unwrap_or(0),
            vc: cell.vc(format),
            pti: cell.pti(),
            clp: cell.clp(),
        }
    }

    /// The header as four bytes (without HEC).
    pub fn to_word(&self, format: HeaderFormat) -> Result<u32, HeaderError> {
        let max = format.max_vpi();
        let vpi = self.vc.vpi.get();
        if vpi > max {
            return Err(HeaderError::VpiTooLarge { vpi, max });
        }
        let gfc = match format {
            HeaderFormat::Uni if self.gfc <= 0xF => u32::from(self.gfc) << 28,
            HeaderFormat::Nni if self.gfc == 0 => 0,
            _ => return Err(HeaderError::BadGfc { gfc: self.gfc }),
        };
        Ok(gfc
            | (u32::from(vpi) << 20)
            | (u32::from(self.vc.vci.get()) << 4)
            | (u32::from(self.pti.bits()) << 1)
            | u32::from(self.clp))
    }

    /// The five header bytes, HEC included.
    pub fn to_bytes(&self, format: HeaderFormat) -> Result<[u8; 5], HeaderError> {
        let w = self.to_word(format)?.to_be_bytes();
        Ok([w[0], w[1], w[2], w[3], hec(w)])
    }

    /// Write the header and its HEC into a cell buffer; the payload is left alone.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        cell: &mut Cell<T>,
        format: HeaderFormat,
    ) -> Result<(), HeaderError> {
        cell.check_len()?;
        let bytes = self.to_bytes(format)?;
        cell.buffer.as_mut()[..HEADER_LEN].copy_from_slice(&bytes);
        Ok(())
    }
}

impl fmt::Display for CellHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} pti={} clp={}", self.vc, self.pti, u8::from(self.clp))?;
        if self.gfc != 0 {
            write!(f, " gfc={}", self.gfc)?;
        }
        Ok(())
    }
}

/// The I.432.1 receiver mode (§4.3.3, figure 6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HecMode {
    /// Single-bit errors are corrected (the default state).
    #[default]
    Correction,
    /// Any header error discards the cell; an error-free header returns to correction.
    Detection,
}

/// What the receiver did with one cell header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HecVerdict {
    /// No error.
    Valid,
    /// A single-bit error at this position (0 = MSB of byte 0) was corrected.
    Corrected {
        /// The corrected bit.
        bit: u8,
    },
    /// The cell must be discarded.
    Discarded {
        /// The non-zero syndrome.
        syndrome: u8,
    },
}

/// Counters of an [`HecReceiver`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HecStats {
    /// Headers with no error.
    pub valid: u64,
    /// Headers corrected.
    pub corrected: u64,
    /// Cells discarded.
    pub discarded: u64,
}

/// The I.432 header-error receiver: corrects one bit in correction mode, then drops to
/// detection mode until an error-free header arrives. This is natm's one implementation of
/// it (the switch, the host daemon and the adapter run it).
///
/// It keeps the last header it found valid: a header equal to it is valid without computing
/// a syndrome, since cells of a VC come in runs. [`check`](Self::check) takes a bare header;
/// [`valid_run`](Self::valid_run) lets a caller that compared a run of headers with
/// [`last_valid`](Self::last_valid) itself count them.
#[derive(Clone, Debug)]
pub struct HecReceiver {
    mode: HecMode,
    /// Whether single-bit errors are corrected in correction mode ([`detect_only`]
    /// discards every errored header).
    ///
    /// [`detect_only`]: Self::detect_only
    corrects: bool,
    last_valid: [u8; HEADER_LEN],
    stats: HecStats,
}

impl Default for HecReceiver {
    fn default() -> Self {
        Self::new()
    }
}

impl HecReceiver {
    /// A receiver in correction mode.
    pub fn new() -> Self {
        HecReceiver {
            mode: HecMode::Correction,
            corrects: true,
            // The unassigned cell's header: a valid one.
            last_valid: [0, 0, 0, 0, hec([0; 4])],
            stats: HecStats::default(),
        }
    }

    /// A receiver that corrects nothing: any header error discards the cell (the modes
    /// still change as I.432 says, so [`mode`](Self::mode) reads as for [`new`](Self::new)).
    pub fn detect_only() -> Self {
        HecReceiver {
            corrects: false,
            ..Self::new()
        }
    }

    /// The current mode.
    pub fn mode(&self) -> HecMode {
        self.mode
    }

    /// Counters so far.
    pub fn stats(&self) -> HecStats {
        self.stats
    }

    /// The last header found valid.
    #[inline]
    pub fn last_valid(&self) -> [u8; HEADER_LEN] {
        self.last_valid
    }

    /// Check (and if allowed, correct in place) the header of `cell`.
    pub fn receive<T: AsRef<[u8]> + AsMut<[u8]>>(&mut self, cell: &mut Cell<T>) -> HecVerdict {
        let mut header = cell.header_bytes();
        let verdict = self.check(&mut header);
        if let HecVerdict::Corrected { .. } = verdict {
            cell.buffer.as_mut()[..HEADER_LEN].copy_from_slice(&header);
        }
        verdict
    }

    /// Check (and if allowed, correct in place) a bare header.
    #[inline]
    pub fn check(&mut self, header: &mut [u8; HEADER_LEN]) -> HecVerdict {
        if *header == self.last_valid {
            self.valid_run(1);
            return HecVerdict::Valid;
        }
        let syndrome = hec_syndrome(*header);
        let verdict = match (syndrome, self.mode) {
            (0, _) => {
                self.mode = HecMode::Correction;
                self.last_valid = *header;
                HecVerdict::Valid
            }
            (s, HecMode::Correction) => {
                self.mode = HecMode::Detection;
                match syndrome_bit(s).filter(|_| self.corrects) {
                    Some(bit) => {
                        header[usize::from(bit / 8)] ^= 0x80 >> (bit % 8);
                        HecVerdict::Corrected { bit }
                    }
                    None => HecVerdict::Discarded { syndrome: s },
                }
            }
            (s, HecMode::Detection) => HecVerdict::Discarded { syndrome: s },
        };
        match verdict {
            HecVerdict::Valid => self.stats.valid += 1,
            HecVerdict::Corrected { .. } => self.stats.corrected += 1,
            HecVerdict::Discarded { .. } => self.stats.discarded += 1,
        }
        verdict
    }

    /// `n` more headers equal to [`last_valid`](Self::last_valid) arrived (the caller
    /// compared them): they are valid.
    #[inline]
    pub fn valid_run(&mut self, n: u64) {
        self.mode = HecMode::Correction;
        self.stats.valid += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// atm-facts.md §1.4: every header checked as "correct" by Wireshark.
    const HEC_VECTORS: &[([u8; 4], u8)] = &[
        ([0x00, 0x00, 0x00, 0x01], 0x52), // idle cell
        ([0x00, 0x00, 0x00, 0x00], 0x55), // unassigned
        ([0x00, 0x00, 0x00, 0x09], 0x6A), // physical-layer OAM
        ([0x00, 0x00, 0x00, 0x50], 0xE2), // 0/5 signalling
        ([0x00, 0x00, 0x00, 0x52], 0xEC), // 0/5 last cell
        ([0x00, 0x00, 0x01, 0x00], 0x40), // 0/16 ILMI
        ([0x00, 0x00, 0x02, 0x00], 0x7F), // 0/32
        ([0x00, 0x10, 0x06, 0x40], 0x4E), // 1/100 PTI 0
        ([0x00, 0x10, 0x06, 0x42], 0x40), // 1/100 PTI 1
        ([0x00, 0x10, 0x06, 0x48], 0x76), // 1/100 F5 segment
        ([0x00, 0x10, 0x06, 0x4A], 0x78), // 1/100 F5 end-to-end
        ([0x00, 0x10, 0x00, 0x30], 0x67), // 1/3 F4 segment
        ([0x00, 0x10, 0x00, 0x40], 0x30), // 1/4 F4 end-to-end
        ([0xFF, 0xFF, 0xFF, 0xFF], 0x8B), // all ones
        ([0xFF, 0xFF, 0xFF, 0xF0], 0xA6), // NNI 4095/65535
    ];

    fn cell_with_header(h: [u8; 5]) -> [u8; CELL_LEN] {
        let mut c = [0u8; CELL_LEN];
        c[..5].copy_from_slice(&h);
        c
    }

    #[test]
    fn hec_vectors() {
        for &(h, want) in HEC_VECTORS {
            assert_eq!(hec(h), want, "header {h:02x?}");
        }
        // The classic bug: forgetting the coset gives 0xB7 for 0/5.
        assert_ne!(hec([0, 0, 0, 0x50]), 0xB7);
    }

    #[test]
    fn syndrome_positions() {
        // atm-facts.md §1.4, positions counted from the MSB of byte 0.
        let known = [
            (39, 0x01),
            (38, 0x02),
            (32, 0x80),
            (31, 0x07),
            (28, 0x38),
            (24, 0x89),
            (23, 0x15),
            (8, 0x0B),
            (7, 0x16),
            (1, 0x9B),
            (0, 0x31),
        ];
        for (bit, syn) in known {
            assert_eq!(syndrome_bit(syn), Some(bit), "syndrome {syn:#04x}");
        }
        let distinct = (0..=255u8).filter(|&s| syndrome_bit(s).is_some()).count();
        assert_eq!(distinct, 40);
        assert_eq!(syndrome_bit(0), None);
    }

    #[test]
    fn deconstruct_uni() {
        let c = cell_with_header([0x00, 0x10, 0x06, 0x42, 0x40]);
        let cell = Cell::new_checked(&c[..]).unwrap();
        assert_eq!(cell.gfc(HeaderFormat::Uni), Some(0));
        assert_eq!(cell.vc(HeaderFormat::Uni), VcId::uni(1, 100).unwrap());
        assert_eq!(cell.pti(), Pti::DATA_END);
        assert!(!cell.clp());
        assert!(cell.verify_hec());
    }

    #[test]
    fn deconstruct_nni_and_gfc() {
        let c = cell_with_header([0xFF, 0xFF, 0xFF, 0xF0, 0xA6]);
        let cell = Cell::new_checked(&c[..]).unwrap();
        assert_eq!(cell.vpi(HeaderFormat::Nni).get(), 4095);
        assert_eq!(cell.gfc(HeaderFormat::Nni), None);
        assert_eq!(cell.vpi(HeaderFormat::Uni).get(), 255);
        assert_eq!(cell.gfc(HeaderFormat::Uni), Some(15));
        assert_eq!(cell.vci().get(), 65535);
        assert!(cell.verify_hec());
    }

    #[test]
    fn construct_uni() {
        let mut buf = [0xa5u8; CELL_LEN];
        let mut cell = Cell::new_unchecked(&mut buf[..]);
        let h = CellHeader {
            gfc: 0,
            vc: VcId::uni(1, 100).unwrap(),
            pti: Pti::EndToEndF5,
            clp: false,
        };
        h.emit(&mut cell, HeaderFormat::Uni).unwrap();
        assert_eq!(&buf[..5], &[0x00, 0x10, 0x06, 0x4A, 0x78]);
        assert!(buf[5..].iter().all(|&b| b == 0xa5), "payload untouched");
    }

    #[test]
    fn setters_then_fill_hec() {
        let mut buf = [0u8; CELL_LEN];
        let mut cell = Cell::new_unchecked(&mut buf[..]);
        cell.set_vpi(HeaderFormat::Uni, Vpi::uni(1).unwrap());
        cell.set_vci(Vci::from_u16(100));
        cell.set_pti(Pti::DATA);
        cell.fill_hec();
        assert_eq!(cell.header_bytes(), [0x00, 0x10, 0x06, 0x40, 0x4E]);
        cell.set_clp(true);
        cell.set_gfc(HeaderFormat::Uni, 0xF);
        cell.fill_hec();
        assert!(cell.verify_hec());
        assert_eq!(cell.header_word(), 0xF010_0641);
    }

    #[test]
    fn emit_rejects_what_does_not_fit() {
        let h = CellHeader {
            gfc: 0,
            vc: VcId::new(Vpi::nni(300).unwrap(), Vci::from_u16(40)),
            pti: Pti::DATA,
            clp: false,
        };
        assert_eq!(
            h.to_bytes(HeaderFormat::Uni),
            Err(HeaderError::VpiTooLarge { vpi: 300, max: 255 })
        );
        assert!(h.to_bytes(HeaderFormat::Nni).is_ok());
        let g = CellHeader {
            gfc: 16,
            ..CellHeader::data(VcId::uni(0, 32).unwrap(), false)
        };
        assert_eq!(
            g.to_bytes(HeaderFormat::Uni),
            Err(HeaderError::BadGfc { gfc: 16 })
        );
        let g1 = CellHeader { gfc: 1, ..g };
        assert_eq!(
            g1.to_bytes(HeaderFormat::Nni),
            Err(HeaderError::BadGfc { gfc: 1 })
        );
    }

    #[test]
    fn parse_malformed() {
        assert_eq!(
            Cell::new_checked(&[0u8; 52][..]),
            Err(Truncated {
                needed: 53,
                got: 52
            })
        );
        let mut c = cell_with_header([0x00, 0x10, 0x06, 0x40, 0x4E]);
        c[2] ^= 1; // bit 23
        let cell = Cell::new_checked(&c[..]).unwrap();
        assert_eq!(
            CellHeader::parse(&cell, HeaderFormat::Uni),
            Err(HeaderError::BadHec { syndrome: 0x15 })
        );
    }

    #[test]
    fn pti_end_of_frame_ignores_efci() {
        assert!(Pti::from_bits(0b001).is_end_of_frame());
        assert!(Pti::from_bits(0b011).is_end_of_frame());
        assert!(!Pti::from_bits(0b101).is_end_of_frame());
        assert!(!Pti::from_bits(0b010).is_end_of_frame());
        for b in 0..8 {
            assert_eq!(Pti::from_bits(b).bits(), b);
        }
    }

    #[test]
    fn receiver_corrects_then_detects() {
        let good = cell_with_header([0x00, 0x10, 0x06, 0x40, 0x4E]);
        let mut rx = HecReceiver::new();
        // A single-bit error in correction mode is corrected and moves to detection mode.
        let mut c = good;
        c[2] ^= 1;
        assert_eq!(
            rx.receive(&mut Cell::new_unchecked(&mut c[..])),
            HecVerdict::Corrected { bit: 23 }
        );
        assert_eq!(c, good);
        assert_eq!(rx.mode(), HecMode::Detection);
        // In detection mode the same single-bit error is discarded.
        let mut c = good;
        c[0] ^= 0x80;
        assert_eq!(
            rx.receive(&mut Cell::new_unchecked(&mut c[..])),
            HecVerdict::Discarded { syndrome: 0x31 }
        );
        assert_eq!(rx.mode(), HecMode::Detection);
        // An error-free header returns to correction mode.
        let mut c = good;
        assert_eq!(
            rx.receive(&mut Cell::new_unchecked(&mut c[..])),
            HecVerdict::Valid
        );
        assert_eq!(rx.mode(), HecMode::Correction);
        // A multi-bit error in correction mode is discarded and moves to detection mode.
        let mut c = good;
        c[0] ^= 0xC0;
        assert!(matches!(
            rx.receive(&mut Cell::new_unchecked(&mut c[..])),
            HecVerdict::Discarded { .. }
        ));
        assert_eq!(rx.mode(), HecMode::Detection);
        assert_eq!(
            rx.stats(),
            HecStats {
                valid: 1,
                corrected: 1,
                discarded: 2
            }
        );
    }

    #[test]
    fn detect_only_discards_every_error() {
        let good = [0x00, 0x10, 0x06, 0x40, 0x4E];
        let mut rx = HecReceiver::detect_only();
        let mut one_bit = [0x00, 0x10, 0x07, 0x40, 0x4E];
        assert!(matches!(
            rx.check(&mut one_bit),
            HecVerdict::Discarded { .. }
        ));
        assert_eq!((one_bit[2], rx.mode()), (0x07, HecMode::Detection));
        assert_eq!(rx.check(&mut good.clone()), HecVerdict::Valid);
        assert_eq!(rx.mode(), HecMode::Correction);
        assert_eq!((rx.stats().corrected, rx.stats().discarded), (0, 1));
    }

    #[test]
    fn the_last_valid_header_and_runs_of_it() {
        let mut rx = HecReceiver::new();
        let mut h = [0x00, 0x10, 0x06, 0x40, 0x4E];
        assert_eq!(rx.check(&mut h), HecVerdict::Valid);
        assert_eq!(rx.last_valid(), h);
        // An errored header does not replace it; a run of it returns to correction mode.
        let mut bad = [0x00, 0x10, 0x06, 0x40, 0x4F];
        assert_eq!(rx.check(&mut bad), HecVerdict::Corrected { bit: 39 });
        assert_eq!(rx.last_valid(), h);
        assert_eq!(rx.mode(), HecMode::Detection);
        rx.valid_run(3);
        assert_eq!(rx.mode(), HecMode::Correction);
        assert_eq!(rx.check(&mut h), HecVerdict::Valid);
        assert_eq!(rx.stats().valid, 5);
    }

    proptest! {
        #[test]
        fn header_round_trip(gfc in 0u8..16, vpi in 0u32..=255, vci: u16, pti in 0u8..8, clp: bool) {
            let h = CellHeader { gfc, vc: VcId::new(Vpi::uni(vpi).unwrap(), Vci::from_u16(vci)), pti: Pti::from_bits(pti), clp };
            let mut buf = [0u8; CELL_LEN];
            h.emit(&mut Cell::new_unchecked(&mut buf[..]), HeaderFormat::Uni).unwrap();
            let parsed = CellHeader::parse(&Cell::new_checked(&buf[..]).unwrap(), HeaderFormat::Uni).unwrap();
            prop_assert_eq!(parsed, h);
        }

        #[test]
        fn nni_round_trip(vpi in 0u32..=4095, vci: u16, pti in 0u8..8, clp: bool) {
            let h = CellHeader { gfc: 0, vc: VcId::new(Vpi::nni(vpi).unwrap(), Vci::from_u16(vci)), pti: Pti::from_bits(pti), clp };
            let bytes = h.to_bytes(HeaderFormat::Nni).unwrap();
            let mut buf = [0u8; CELL_LEN];
            buf[..5].copy_from_slice(&bytes);
            let parsed = CellHeader::parse(&Cell::new_checked(&buf[..]).unwrap(), HeaderFormat::Nni).unwrap();
            prop_assert_eq!(parsed, h);
        }

        #[test]
        fn every_single_bit_error_is_corrected(word: u32, bit in 0u8..40) {
            let w = word.to_be_bytes();
            let good = cell_with_header([w[0], w[1], w[2], w[3], hec(w)]);
            let mut c = good;
            c[usize::from(bit / 8)] ^= 0x80 >> (bit % 8);
            let mut rx = HecReceiver::new();
            prop_assert_eq!(rx.receive(&mut Cell::new_unchecked(&mut c[..])), HecVerdict::Corrected { bit });
            prop_assert_eq!(c, good);
        }
    }
}

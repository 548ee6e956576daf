//! The region header and its validation.
//!
//! A region starts with a 128-byte [`RegionHeader`]: magic, version, kind, sizes and
//! offsets of every part. The side that creates a region writes it; the side that maps a
//! region it received checks it with [`Layout::validate`] before touching anything else.
//! The header comes from another process, so a bad header is a [`LayoutError`], never a
//! panic; and it is read once: every later access uses the validated local [`Layout`], so
//! a peer that rewrites the header afterwards changes nothing.
//!
//! ```text
//! offset            part
//! 0                 RegionHeader (128 bytes)
//! rings[i].offset   ring i: control (3 cache lines: producer index, consumer index,
//!                   the two waiting flags), then entries × slot_size bytes of slots
//!                   (bytes 120..128 of the header: a channel's state word, see
//!                   [`STATE_OFFSET`]; read live, not validated)
//! counters_offset   counters_count little-endian u64 counters
//! buffers_offset    buffer_count buffers of buffer_size bytes
//! ```

use core::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::shm::{CACHE_LINE, MAX_REGION_BYTES, SharedMem};

/// "NATMSHM" and a zero byte, read as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"NATMSHM\0");
/// The layout version this crate writes and reads.
pub const VERSION: u32 = 1;
/// Size of [`RegionHeader`].
pub const HEADER_BYTES: usize = 128;
/// Bytes of a ring's control block: producer index, consumer index and the waiting
/// flags (consumer's, then producer's, in one line), each on its own cache line.
pub const RING_CONTROL_BYTES: usize = 3 * CACHE_LINE;
/// Most entries in one ring.
pub const MAX_RING_ENTRIES: u32 = 1 << 20;
/// Largest buffer.
pub const MAX_BUFFER_BYTES: u32 = 1 << 20;
/// Most buffers in a channel.
pub const MAX_BUFFERS: u32 = 1 << 16;
/// Number of rings a header describes.
pub const RINGS: usize = 3;

/// A little-endian u16 as it lies in shared memory.
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Le16(pub [u8; 2]);
/// A little-endian u32 as it lies in shared memory.
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Le32(pub [u8; 4]);
/// A little-endian u64 as it lies in shared memory.
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Le64(pub [u8; 8]);

macro_rules! le {
    ($t:ident, $n:ty) => {
        impl $t {
            /// Encodes a value.
            pub const fn new(v: $n) -> Self {
                Self(v.to_le_bytes())
            }
            /// Decodes the value.
            pub const fn get(self) -> $n {
                <$n>::from_le_bytes(self.0)
            }
        }
    };
}
le!(Le16, u16);
le!(Le32, u32);
le!(Le64, u64);

/// Where one ring lies: 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct RingDesc {
    /// Byte offset of the ring's control block from the start of the region.
    pub offset: Le32,
    /// Number of slots, a power of two; 0 when the region kind has no such ring.
    pub entries: Le32,
    /// Bytes per slot.
    pub slot_size: Le32,
    /// Zero.
    pub reserved: Le32,
}

/// The first 128 bytes of every region.
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct RegionHeader {
    /// [`MAGIC`].
    pub magic: Le64,
    /// [`VERSION`].
    pub version: Le32,
    /// [`RegionKind`] code.
    pub kind: Le32,
    /// [`HEADER_BYTES`].
    pub header_size: Le32,
    /// Zero.
    pub reserved0: Le32,
    /// Length of the whole region in bytes; must equal the mapping's.
    pub region_size: Le64,
    /// The rings; their meaning depends on the kind.
    pub rings: [RingDesc; RINGS],
    /// Byte offset of the counters.
    pub counters_offset: Le32,
    /// Number of u64 counters.
    pub counters_count: Le32,
    /// Byte offset of the buffer area.
    pub buffers_offset: Le32,
    /// Bytes per buffer (a multiple of 64).
    pub buffer_size: Le32,
    /// Number of buffers.
    pub buffer_count: Le32,
    /// Zero when written. In a channel region its last 8 bytes (offset
    /// [`STATE_OFFSET`]) are the live channel state word, which validation ignores.
    pub reserved1: [u8; 28],
}

/// Byte offset of a channel's state word (the last 8 bytes of the header, inside
/// `reserved1`): 0 while the channel is serviced, written by the side that services it
/// (hostd) and read by the application at every operation. Regions written before the word
/// existed hold 0 there, so they read as live: the addition is backwards compatible.
pub const STATE_OFFSET: usize = 120;

/// Byte offsets of a cell link's two line-weight words (8 bytes each inside `reserved1`,
/// before the channel state word's place), side A's then side B's: each side's weight on
/// a line it shares with other senders into its peer (hostd's main link beside the
/// switch port's lanes), written by that side and read by the other at any time; 0 means
/// unsaid. Validation ignores them, as it ignores the state word.
pub const LINE_WEIGHT_OFFSETS: [usize; 2] = [104, 112];

/// Byte offset of a cell link's splice word (the channel state word's place, which a cell
/// link does not use): bit flags, [`SPLICE_HELD_B`], [`SPLICE_RELEASED_A`],
/// [`SPLICE_RELEASED_B`]; 0 in a fresh region. Validation ignores it.
pub const SPLICE_OFFSET: usize = STATE_OFFSET;
/// Splice word: a switch handed side B to another application than the one its creator asked
/// for (natm-link's spliced lanes): a restarted switch must not serve it.
pub const SPLICE_HELD_B: u64 = 1;
/// Splice word: the application holding side A let it go (closed or died).
pub const SPLICE_RELEASED_A: u64 = 2;
/// Splice word: the application holding side B let it go.
pub const SPLICE_RELEASED_B: u64 = 4;

const _: () = assert!(size_of::<RegionHeader>() == HEADER_BYTES);
const _: () = assert!(size_of::<RingDesc>() == 16);

impl RingDesc {
    fn new(offset: u32, entries: u32, slot_size: u32) -> Self {
        RingDesc {
            offset: Le32::new(offset),
            entries: Le32::new(entries),
            slot_size: Le32::new(slot_size),
            reserved: Le32::default(),
        }
    }
}

impl RegionHeader {
    /// A header of `kind` with its fixed fields set and everything else zero.
    fn new(kind: RegionKind) -> Self {
        RegionHeader {
            magic: Le64::new(MAGIC),
            version: Le32::new(VERSION),
            kind: Le32::new(kind.code()),
            header_size: Le32::new(HEADER_BYTES as u32),
            ..RegionHeader::default()
        }
    }

    /// The header's bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_BYTES] {
        // SAFETY: RegionHeader is repr(C), made only of byte arrays (alignment 1, so no
        // padding anywhere), and exactly HEADER_BYTES long (asserted at compile time), so
        // its memory is HEADER_BYTES initialized bytes and reading them as an array is valid.
        unsafe { core::ptr::read_unaligned(core::ptr::from_ref(self).cast::<[u8; HEADER_BYTES]>()) }
    }

    /// A header from bytes; any bytes make a header (validation comes after).
    pub fn from_bytes(bytes: &[u8; HEADER_BYTES]) -> Self {
        // SAFETY: RegionHeader is repr(C), HEADER_BYTES long, and made only of byte arrays,
        // for which every bit pattern is valid; read_unaligned needs no alignment.
        unsafe { core::ptr::read_unaligned(bytes.as_ptr().cast::<RegionHeader>()) }
    }

    /// Reads the header from the first 16 words of a region (Acquire: whatever the creator
    /// wrote before publishing the header is visible after).
    pub(crate) fn load(words: &[AtomicU64]) -> Option<Self> {
        let src = words.get(..HEADER_BYTES / 8)?;
        let mut bytes = [0u8; HEADER_BYTES];
        for (chunk, w) in bytes.chunks_exact_mut(8).zip(src) {
            chunk.copy_from_slice(&w.load(Ordering::Acquire).to_ne_bytes());
        }
        Some(Self::from_bytes(&bytes))
    }

    /// Writes the header into the first 16 words, the magic last with Release, so a
    /// reader that sees the magic sees the rest.
    pub(crate) fn store(&self, words: &[AtomicU64]) {
        let bytes = self.to_bytes();
        for (i, chunk) in bytes.chunks_exact(8).enumerate().skip(1) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            words[i].store(u64::from_ne_bytes(b), Ordering::Release);
        }
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[..8]);
        words[0].store(u64::from_ne_bytes(b), Ordering::Release);
    }
}

/// What a region is for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RegionKind {
    /// An application's channel to the adapter: ring 0 transmit descriptors, ring 1 free
    /// receive buffers, ring 2 completions; counters; buffers.
    Channel,
    /// A shared-memory link: ring 0 cells from side A to B, ring 1 from B to A.
    CellLink,
}

impl RegionKind {
    /// The code in the header.
    pub const fn code(self) -> u32 {
        match self {
            RegionKind::Channel => 1,
            RegionKind::CellLink => 2,
        }
    }

    fn slot_sizes(self) -> [u32; RINGS] {
        match self {
            RegionKind::Channel => [16, 16, 16],
            RegionKind::CellLink => [64, 64, 0],
        }
    }
}

/// A part of a region, named in errors.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Part {
    /// The header.
    Header,
    /// Ring `i`.
    Ring(u8),
    /// The counters.
    Counters,
    /// The buffer area.
    Buffers,
}

/// Why a region's header was refused.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum LayoutError {
    /// The region is shorter than a header.
    #[error("region of {len} bytes is shorter than the header")]
    TooShort {
        /// Region length.
        len: usize,
    },
    /// Not a natm region.
    #[error("bad magic {found:#018x}")]
    BadMagic {
        /// What was there.
        found: u64,
    },
    /// A version this crate does not read.
    #[error("unsupported layout version {0}")]
    UnsupportedVersion(u32),
    /// The region is of another kind.
    #[error("region kind {found} where {expected:?} was expected")]
    WrongKind {
        /// What the caller wanted.
        expected: RegionKind,
        /// The code found.
        found: u32,
    },
    /// Header size is not [`HEADER_BYTES`].
    #[error("header size {0}")]
    BadHeaderSize(u32),
    /// The header's region size is not the mapping's length.
    #[error("header says {header} bytes, mapping has {mapped}")]
    SizeMismatch {
        /// From the header.
        header: u64,
        /// Mapped.
        mapped: usize,
    },
    /// A part does not start on a cache line.
    #[error("{part:?} at offset {offset} is not cache-line aligned")]
    Misaligned {
        /// The part.
        part: Part,
        /// Its offset.
        offset: u32,
    },
    /// Ring entries not a power of two in range (or not 0 for an absent ring).
    #[error("{part:?} has {entries} entries")]
    BadEntries {
        /// The ring.
        part: Part,
        /// Entries found.
        entries: u32,
    },
    /// Slot size not the kind's.
    #[error("{part:?} has {slot_size}-byte slots")]
    BadSlotSize {
        /// The ring.
        part: Part,
        /// Found.
        slot_size: u32,
    },
    /// A part reaches past the end of the region.
    #[error("{part:?} reaches past the end of the region")]
    OutOfBounds {
        /// The part.
        part: Part,
    },
    /// Two parts overlap.
    #[error("{a:?} overlaps {b:?}")]
    Overlap {
        /// One part.
        a: Part,
        /// The other.
        b: Part,
    },
    /// Buffer size or count out of range.
    #[error("{count} buffers of {size} bytes")]
    BadBuffers {
        /// Bytes per buffer.
        size: u32,
        /// Buffers.
        count: u32,
    },
    /// Counter count not the kind's.
    #[error("{0} counters")]
    BadCounters(u32),
    /// The completion ring cannot hold every outstanding transmit and receive descriptor.
    #[error("completion ring of {completion} entries for {outstanding} outstanding descriptors")]
    CompletionTooSmall {
        /// Completion entries.
        completion: u32,
        /// Transmit plus receive entries.
        outstanding: u64,
    },
}

/// A validated ring position.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RingGeom {
    /// Byte offset of the control block.
    pub offset: usize,
    /// Slots (a power of two).
    pub entries: u32,
    /// Bytes per slot (a multiple of 8).
    pub slot_size: u32,
}

impl RingGeom {
    /// Bytes the ring spans.
    pub fn span(&self) -> usize {
        RING_CONTROL_BYTES + self.entries as usize * self.slot_size as usize
    }
}

/// A validated buffer area.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BufferGeom {
    /// Byte offset of buffer 0.
    pub offset: usize,
    /// Bytes per buffer (a multiple of 64).
    pub size: u32,
    /// Buffers.
    pub count: u32,
}

/// A validated region layout: every offset in bounds, aligned, parts disjoint. Built by the
/// creator from a configuration or by the mapper from the header; never re-read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Layout {
    /// What the region is for.
    pub kind: RegionKind,
    /// Region length in bytes.
    pub region_size: usize,
    /// The rings (None where the kind has none).
    pub rings: [Option<RingGeom>; RINGS],
    /// Byte offset and number of counters (Channel only).
    pub counters: Option<(usize, u32)>,
    /// The buffer area (Channel only).
    pub buffers: Option<BufferGeom>,
}

/// Number of counters in a channel region.
pub const CHANNEL_COUNTERS: u32 = crate::channel::Counter::ALL.len() as u32;

fn align_up(x: usize) -> usize {
    x.div_ceil(CACHE_LINE) * CACHE_LINE
}

impl Layout {
    /// A channel's layout: rings, counters and buffers packed after the header.
    pub fn channel(
        tx_entries: u32,
        rx_entries: u32,
        completion_entries: u32,
        buffer_size: u32,
        buffer_count: u32,
    ) -> Result<Layout, LayoutError> {
        let mut h = RegionHeader::new(RegionKind::Channel);
        let mut at = HEADER_BYTES;
        for (i, entries) in [tx_entries, rx_entries, completion_entries]
            .into_iter()
            .enumerate()
        {
            if !entries.is_power_of_two() || entries > MAX_RING_ENTRIES {
                return Err(LayoutError::BadEntries {
                    part: Part::Ring(i as u8),
                    entries,
                });
            }
            let offset = u32::try_from(at).map_err(|_| too_big(Part::Ring(i as u8)))?;
            h.rings[i] = RingDesc::new(offset, entries, 16);
            at = align_up(at + RING_CONTROL_BYTES + entries as usize * 16);
        }
        h.counters_offset = Le32::new(u32::try_from(at).map_err(|_| too_big(Part::Counters))?);
        h.counters_count = Le32::new(CHANNEL_COUNTERS);
        at = align_up(at + CHANNEL_COUNTERS as usize * 8);
        h.buffers_offset = Le32::new(u32::try_from(at).map_err(|_| too_big(Part::Buffers))?);
        h.buffer_size = Le32::new(buffer_size);
        h.buffer_count = Le32::new(buffer_count);
        let end = (at as u64).saturating_add(u64::from(buffer_size) * u64::from(buffer_count));
        h.region_size = Le64::new(end);
        let len = usize::try_from(end).map_err(|_| too_big(Part::Buffers))?;
        Layout::validate(&h, len, RegionKind::Channel)
    }

    /// A cell link's layout: two rings of `entries` 64-byte slots.
    pub fn cell_link(entries: u32) -> Result<Layout, LayoutError> {
        let mut h = RegionHeader::new(RegionKind::CellLink);
        let mut at = HEADER_BYTES;
        for i in 0..2 {
            if !entries.is_power_of_two() || entries > MAX_RING_ENTRIES {
                return Err(LayoutError::BadEntries {
                    part: Part::Ring(i as u8),
                    entries,
                });
            }
            h.rings[i] = RingDesc::new(at as u32, entries, 64);
            at += RING_CONTROL_BYTES + entries as usize * 64;
        }
        h.region_size = Le64::new(at as u64);
        Layout::validate(&h, at, RegionKind::CellLink)
    }

    /// The header describing this layout.
    pub fn header(&self) -> RegionHeader {
        let mut h = RegionHeader::new(self.kind);
        h.region_size = Le64::new(self.region_size as u64);
        for (d, r) in h.rings.iter_mut().zip(&self.rings) {
            if let Some(r) = r {
                *d = RingDesc::new(r.offset as u32, r.entries, r.slot_size);
            }
        }
        if let Some((off, n)) = self.counters {
            h.counters_offset = Le32::new(off as u32);
            h.counters_count = Le32::new(n);
        }
        if let Some(b) = self.buffers {
            h.buffers_offset = Le32::new(b.offset as u32);
            h.buffer_size = Le32::new(b.size);
            h.buffer_count = Le32::new(b.count);
        }
        h
    }

    /// Zeroes a fresh region of this layout's size and writes the header (its magic last).
    pub(crate) fn init_region(&self, mem: &dyn SharedMem) {
        debug_assert_eq!(mem.len_bytes(), self.region_size, "callers check the size");
        for w in mem.words() {
            w.store(0, Ordering::Relaxed);
        }
        self.header().store(mem.words());
    }

    /// Reads the header of a region another process created and validates it.
    pub(crate) fn load(mem: &dyn SharedMem, expected: RegionKind) -> Result<Layout, LayoutError> {
        let h = RegionHeader::load(mem.words()).ok_or(LayoutError::TooShort {
            len: mem.len_bytes(),
        })?;
        Layout::validate(&h, mem.len_bytes(), expected)
    }

    /// Checks a header read from a region of `mapped` bytes. Never panics: every field
    /// is checked with checked arithmetic before it is used.
    pub fn validate(
        h: &RegionHeader,
        mapped: usize,
        expected: RegionKind,
    ) -> Result<Layout, LayoutError> {
        if mapped < HEADER_BYTES {
            return Err(LayoutError::TooShort { len: mapped });
        }
        if h.magic.get() != MAGIC {
            return Err(LayoutError::BadMagic {
                found: h.magic.get(),
            });
        }
        if h.version.get() != VERSION {
            return Err(LayoutError::UnsupportedVersion(h.version.get()));
        }
        if h.kind.get() != expected.code() {
            return Err(LayoutError::WrongKind {
                expected,
                found: h.kind.get(),
            });
        }
        if h.header_size.get() != HEADER_BYTES as u32 {
            return Err(LayoutError::BadHeaderSize(h.header_size.get()));
        }
        if h.region_size.get() != mapped as u64 || mapped > MAX_REGION_BYTES {
            return Err(LayoutError::SizeMismatch {
                header: h.region_size.get(),
                mapped,
            });
        }
        // Every part as [start, end) for the overlap check; the header first.
        let mut spans: Vec<(Part, u64, u64)> = vec![(Part::Header, 0, HEADER_BYTES as u64)];
        let mut rings = [None; RINGS];
        for (i, (d, slot)) in h.rings.iter().zip(expected.slot_sizes()).enumerate() {
            let part = Part::Ring(i as u8);
            let entries = d.entries.get();
            if slot == 0 {
                if *d != RingDesc::default() {
                    return Err(LayoutError::BadEntries { part, entries });
                }
                continue;
            }
            if !entries.is_power_of_two() || entries > MAX_RING_ENTRIES {
                return Err(LayoutError::BadEntries { part, entries });
            }
            if d.slot_size.get() != slot {
                return Err(LayoutError::BadSlotSize {
                    part,
                    slot_size: d.slot_size.get(),
                });
            }
            let offset = d.offset.get();
            spans.push(aligned_span(
                part,
                offset,
                RING_CONTROL_BYTES as u64 + u64::from(entries) * u64::from(slot),
            )?);
            rings[i] = Some(RingGeom {
                offset: offset as usize,
                entries,
                slot_size: slot,
            });
        }
        let (mut counters, mut buffers) = (None, None);
        match expected {
            RegionKind::Channel => {
                let (tx, rx, cq) = (
                    h.rings[0].entries.get(),
                    h.rings[1].entries.get(),
                    h.rings[2].entries.get(),
                );
                let outstanding = u64::from(tx) + u64::from(rx);
                if u64::from(cq) < outstanding {
                    return Err(LayoutError::CompletionTooSmall {
                        completion: cq,
                        outstanding,
                    });
                }
                let (off, n) = (h.counters_offset.get(), h.counters_count.get());
                if n != CHANNEL_COUNTERS {
                    return Err(LayoutError::BadCounters(n));
                }
                spans.push(aligned_span(Part::Counters, off, u64::from(n) * 8)?);
                counters = Some((off as usize, n));
                let (off, size, count) = (
                    h.buffers_offset.get(),
                    h.buffer_size.get(),
                    h.buffer_count.get(),
                );
                if size == 0
                    || !size.is_multiple_of(CACHE_LINE as u32)
                    || size > MAX_BUFFER_BYTES
                    || count == 0
                    || count > MAX_BUFFERS
                {
                    return Err(LayoutError::BadBuffers { size, count });
                }
                spans.push(aligned_span(
                    Part::Buffers,
                    off,
                    u64::from(size) * u64::from(count),
                )?);
                buffers = Some(BufferGeom {
                    offset: off as usize,
                    size,
                    count,
                });
            }
            RegionKind::CellLink => {
                if h.counters_offset.get() != 0 || h.counters_count.get() != 0 {
                    return Err(LayoutError::BadCounters(h.counters_count.get()));
                }
                if h.buffers_offset.get() != 0
                    || h.buffer_size.get() != 0
                    || h.buffer_count.get() != 0
                {
                    return Err(LayoutError::BadBuffers {
                        size: h.buffer_size.get(),
                        count: h.buffer_count.get(),
                    });
                }
            }
        }
        for &(part, _, end) in &spans {
            if end > mapped as u64 {
                return Err(LayoutError::OutOfBounds { part });
            }
        }
        spans.sort_by_key(|&(_, start, _)| start);
        for pair in spans.windows(2) {
            if pair[1].1 < pair[0].2 {
                return Err(LayoutError::Overlap {
                    a: pair[0].0,
                    b: pair[1].0,
                });
            }
        }
        Ok(Layout {
            kind: expected,
            region_size: mapped,
            rings,
            counters,
            buffers,
        })
    }
}

/// `part` as `(part, start, end)` for the bounds and overlap checks, refused unless its
/// `offset` is on a cache line.
fn aligned_span(part: Part, offset: u32, len: u64) -> Result<(Part, u64, u64), LayoutError> {
    if !offset.is_multiple_of(CACHE_LINE as u32) {
        return Err(LayoutError::Misaligned { part, offset });
    }
    Ok((part, u64::from(offset), u64::from(offset) + len))
}

fn too_big(part: Part) -> LayoutError {
    LayoutError::OutOfBounds { part }
}

/// Field offsets pinned by tests (and used by tools that read regions).
pub const fn header_offsets() -> [(&'static str, usize); 12] {
    [
        ("magic", offset_of!(RegionHeader, magic)),
        ("version", offset_of!(RegionHeader, version)),
        ("kind", offset_of!(RegionHeader, kind)),
        ("header_size", offset_of!(RegionHeader, header_size)),
        ("region_size", offset_of!(RegionHeader, region_size)),
        ("rings", offset_of!(RegionHeader, rings)),
        ("counters_offset", offset_of!(RegionHeader, counters_offset)),
        ("counters_count", offset_of!(RegionHeader, counters_count)),
        ("buffers_offset", offset_of!(RegionHeader, buffers_offset)),
        ("buffer_size", offset_of!(RegionHeader, buffer_size)),
        ("buffer_count", offset_of!(RegionHeader, buffer_count)),
        ("reserved1", offset_of!(RegionHeader, reserved1)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn header_layout_is_pinned() {
        assert_eq!(size_of::<RegionHeader>(), 128);
        assert_eq!(size_of::<RingDesc>(), 16);
        assert_eq!(core::mem::align_of::<RegionHeader>(), 1);
        assert_eq!(
            header_offsets(),
            [
                ("magic", 0),
                ("version", 8),
                ("kind", 12),
                ("header_size", 16),
                ("region_size", 24),
                ("rings", 32),
                ("counters_offset", 80),
                ("counters_count", 84),
                ("buffers_offset", 88),
                ("buffer_size", 92),
                ("buffer_count", 96),
                ("reserved1", 100),
            ]
        );
        assert_eq!(offset_of!(RingDesc, offset), 0);
        assert_eq!(offset_of!(RingDesc, entries), 4);
        assert_eq!(offset_of!(RingDesc, slot_size), 8);
        assert_eq!(offset_of!(RingDesc, reserved), 12);
        assert_eq!(RING_CONTROL_BYTES, 192);
    }

    #[test]
    fn header_bytes_are_little_endian() {
        let l = Layout::channel(8, 8, 16, 256, 4).unwrap();
        let b = l.header().to_bytes();
        assert_eq!(&b[0..8], b"NATMSHM\0");
        assert_eq!(&b[8..12], &[1, 0, 0, 0]);
        assert_eq!(&b[12..16], &[1, 0, 0, 0]);
        assert_eq!(&b[16..20], &[128, 0, 0, 0]);
        assert_eq!(u32::from_le_bytes(b[32..36].try_into().unwrap()), 128);
        assert_eq!(RegionHeader::from_bytes(&b), l.header());
    }

    #[test]
    fn channel_layout_offsets() {
        let l = Layout::channel(8, 8, 16, 256, 4).unwrap();
        let r: Vec<_> = l.rings.iter().map(|r| r.unwrap().offset).collect();
        // 128 header; tx 192 + 8*16 = 320; rx 320; completion 192 + 16*16 = 448.
        assert_eq!(r, [128, 448, 768]);
        // Counters: 1216 + 10 * 8 = 1296, buffers at the next line.
        assert_eq!(l.counters, Some((1216, CHANNEL_COUNTERS)));
        assert_eq!(CHANNEL_COUNTERS, 10);
        assert_eq!(l.buffers.unwrap().offset, 1344);
        assert_eq!(l.region_size, 1344 + 1024);
        assert_eq!(
            Layout::validate(&l.header(), l.region_size, RegionKind::Channel),
            Ok(l)
        );
    }

    #[test]
    fn each_bad_field_has_its_error() {
        let l = Layout::channel(8, 8, 16, 256, 4).unwrap();
        let n = l.region_size;
        let good = l.header();
        let check = |f: &dyn Fn(&mut RegionHeader), mapped: usize| {
            let mut h = good;
            f(&mut h);
            Layout::validate(&h, mapped, RegionKind::Channel)
        };
        assert_eq!(check(&|_| {}, 64), Err(LayoutError::TooShort { len: 64 }));
        assert!(matches!(
            check(&|h| h.magic = Le64::new(1), n),
            Err(LayoutError::BadMagic { found: 1 })
        ));
        assert_eq!(
            check(&|h| h.version = Le32::new(2), n),
            Err(LayoutError::UnsupportedVersion(2))
        );
        assert!(matches!(
            check(&|h| h.kind = Le32::new(2), n),
            Err(LayoutError::WrongKind { found: 2, .. })
        ));
        assert_eq!(
            check(&|h| h.header_size = Le32::new(64), n),
            Err(LayoutError::BadHeaderSize(64))
        );
        assert!(matches!(
            check(&|_| {}, n + 64),
            Err(LayoutError::SizeMismatch { .. })
        ));
        assert_eq!(
            check(&|h| h.rings[1].entries = Le32::new(6), n),
            Err(LayoutError::BadEntries {
                part: Part::Ring(1),
                entries: 6
            })
        );
        assert_eq!(
            check(&|h| h.rings[0].slot_size = Le32::new(8), n),
            Err(LayoutError::BadSlotSize {
                part: Part::Ring(0),
                slot_size: 8
            })
        );
        assert_eq!(
            check(&|h| h.rings[2].offset = Le32::new(770), n),
            Err(LayoutError::Misaligned {
                part: Part::Ring(2),
                offset: 770
            })
        );
        assert_eq!(
            check(&|h| h.rings[2].offset = Le32::new(u32::MAX - 63), n),
            Err(LayoutError::OutOfBounds {
                part: Part::Ring(2)
            })
        );
        assert_eq!(
            check(&|h| h.rings[1].offset = Le32::new(192), n),
            Err(LayoutError::Overlap {
                a: Part::Ring(0),
                b: Part::Ring(1)
            })
        );
        assert_eq!(
            check(&|h| h.counters_count = Le32::new(3), n),
            Err(LayoutError::BadCounters(3))
        );
        assert_eq!(
            check(&|h| h.buffer_size = Le32::new(100), n),
            Err(LayoutError::BadBuffers {
                size: 100,
                count: 4
            })
        );
        assert_eq!(
            check(&|h| h.buffer_count = Le32::new(5), n),
            Err(LayoutError::OutOfBounds {
                part: Part::Buffers
            })
        );
        assert!(matches!(
            check(&|h| h.rings[2].entries = Le32::new(8), n),
            Err(LayoutError::CompletionTooSmall {
                completion: 8,
                outstanding: 16
            })
        ));
        let c = Layout::cell_link(16).unwrap();
        let mut h = c.header();
        h.rings[2].entries = Le32::new(4);
        assert!(matches!(
            Layout::validate(&h, c.region_size, RegionKind::CellLink),
            Err(LayoutError::BadEntries {
                part: Part::Ring(2),
                ..
            })
        ));
    }

    fn check_sane(l: &Layout, mapped: usize) {
        assert_eq!(l.region_size, mapped);
        for r in l.rings.iter().flatten() {
            assert!(r.offset >= HEADER_BYTES && r.offset + r.span() <= mapped);
            assert!(r.entries.is_power_of_two());
        }
        if let Some(b) = l.buffers {
            assert!(b.offset + b.size as usize * b.count as usize <= mapped);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Random header bytes never panic; whatever validates is in bounds.
        #[test]
        fn random_headers_never_panic(bytes in proptest::collection::vec(any::<u8>(), HEADER_BYTES), mapped in 0usize..1 << 20) {
            let h = RegionHeader::from_bytes(&bytes.try_into().unwrap());
            for kind in [RegionKind::Channel, RegionKind::CellLink] {
                if let Ok(l) = Layout::validate(&h, mapped, kind) {
                    check_sane(&l, mapped);
                }
            }
        }

        /// A valid header with a few random bytes changed: never a panic, and anything
        /// accepted is in bounds and disjoint.
        #[test]
        fn mutated_headers_never_panic(edits in proptest::collection::vec((0usize..HEADER_BYTES, any::<u8>()), 1..6)) {
            for (l, kind) in [(Layout::channel(8, 8, 16, 256, 4).unwrap(), RegionKind::Channel), (Layout::cell_link(32).unwrap(), RegionKind::CellLink)] {
                let mut b = l.header().to_bytes();
                for &(i, v) in &edits { b[i] = v; }
                if let Ok(v) = Layout::validate(&RegionHeader::from_bytes(&b), l.region_size, kind) {
                    check_sane(&v, l.region_size);
                }
            }
        }
    }
}

//! Memory backends: a region of memory shared with another process, seen only as 64-bit
//! atomic words.
//!
//! Every access to a region goes through [`AtomicU64`]: the other process is untrusted
//! and may write any word at any time, and with atomic accesses such a race is defined
//! behaviour (the reader just sees some value) instead of a data race. Relaxed atomic loads
//! and stores compile to plain moves on x86-64 and AArch64, so this costs nothing on the
//! fast path. Values that mean numbers are stored little-endian (`to_le`/`from_le`), so the
//! layout is the same on every host; byte payloads (cells, buffers) are copied word by word
//! with `from_ne_bytes`/`to_ne_bytes`, which keeps the bytes in memory in their order.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes in a cache line: rings keep their producer and consumer indices on separate lines.
pub const CACHE_LINE: usize = 64;
/// 64-bit words in a cache line.
pub const WORDS_PER_LINE: usize = CACHE_LINE / 8;
/// The largest region natm maps (offsets in the header are 32-bit).
pub const MAX_REGION_BYTES: usize = 1 << 31;

/// A region of shared memory.
///
/// Implementations hand out the whole region as a slice of atomic words, valid for as long
/// as `self` lives. The region's length is a multiple of [`CACHE_LINE`]. Layout validation
/// is relative to the start of the region, so correctness does not depend on its
/// alignment beyond 8 bytes; the memfd backend is page aligned, which keeps the rings'
/// cache-line separation real.
pub trait SharedMem: Send + Sync {
    /// The region as 64-bit words.
    fn words(&self) -> &[AtomicU64];

    /// The region's length in bytes.
    fn len_bytes(&self) -> usize {
        self.words().len() * 8
    }
}

/// A shared handle on a region: what rings and endpoints hold.
pub type Region = Arc<dyn SharedMem>;

/// Errors creating or mapping a region.
#[derive(Debug, thiserror::Error)]
pub enum MemError {
    /// The length is zero, not a multiple of 64 bytes, or above [`MAX_REGION_BYTES`].
    #[error("region length {len} is not a non-zero multiple of 64 bytes up to 2 GiB")]
    BadLength {
        /// The length asked for or found.
        len: u64,
    },
    /// A memfd handed over is not sealed against shrinking: the peer could truncate it
    /// under our mapping and turn every access into SIGBUS.
    #[error("memfd is not sealed against shrinking and growing")]
    NotSealed,
    /// A system call failed.
    #[error("{call}: {source}")]
    Os {
        /// The call.
        call: &'static str,
        /// What the kernel said.
        source: std::io::Error,
    },
}

/// The in-memory stand-in: ordinary heap memory, no OS involved. For tests, the
/// simulator and doctests; two endpoints in one process share it through [`Region`].
pub struct HeapMem {
    words: Box<[AtomicU64]>,
}

impl HeapMem {
    /// A zeroed region of `len_bytes` (a non-zero multiple of 64).
    pub fn new(len_bytes: usize) -> Result<Self, MemError> {
        check_len(len_bytes as u64)?;
        let words = (0..len_bytes / 8).map(|_| AtomicU64::new(0)).collect();
        Ok(Self { words })
    }
}

impl SharedMem for HeapMem {
    #[inline(always)]
    fn words(&self) -> &[AtomicU64] {
        &self.words
    }
}

pub(crate) fn check_len(len: u64) -> Result<(), MemError> {
    if len == 0 || !len.is_multiple_of(CACHE_LINE as u64) || len > MAX_REGION_BYTES as u64 {
        return Err(MemError::BadLength { len });
    }
    Ok(())
}

/// Loads a little-endian number.
#[inline(always)]
pub(crate) fn load_le(word: &AtomicU64, order: Ordering) -> u64 {
    u64::from_le(word.load(order))
}

/// Stores a number little-endian.
#[inline(always)]
pub(crate) fn store_le(word: &AtomicU64, value: u64, order: Ordering) {
    word.store(value.to_le(), order);
}

/// Copies `bytes` into consecutive words, the last one padded with zeros.
#[inline(always)]
pub(crate) fn write_bytes(words: &[AtomicU64], bytes: &[u8]) {
    let mut chunks = bytes.chunks_exact(8);
    for (word, chunk) in words.iter().zip(&mut chunks) {
        let mut b = [0u8; 8];
        b.copy_from_slice(chunk);
        word.store(u64::from_ne_bytes(b), Ordering::Relaxed);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        if let Some(word) = words.get(bytes.len() / 8) {
            word.store(u64::from_ne_bytes(b), Ordering::Relaxed);
        }
    }
}

/// Copies consecutive words into `bytes`.
#[inline(always)]
pub(crate) fn read_bytes(words: &[AtomicU64], bytes: &mut [u8]) {
    let len = bytes.len();
    let mut chunks = bytes.chunks_exact_mut(8);
    for (word, chunk) in words.iter().zip(&mut chunks) {
        chunk.copy_from_slice(&word.load(Ordering::Relaxed).to_ne_bytes());
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty()
        && let Some(word) = words.get(len / 8)
    {
        let b = word.load(Ordering::Relaxed).to_ne_bytes();
        let n = rest.len();
        rest.copy_from_slice(&b[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_lengths() {
        assert!(matches!(
            HeapMem::new(0),
            Err(MemError::BadLength { len: 0 })
        ));
        assert!(matches!(
            HeapMem::new(100),
            Err(MemError::BadLength { len: 100 })
        ));
        let m = HeapMem::new(4096).unwrap();
        assert_eq!(m.len_bytes(), 4096);
        assert!(m.words().iter().all(|w| w.load(Ordering::Relaxed) == 0));
    }

    #[test]
    fn bytes_round_trip_keeps_byte_order() {
        let m = HeapMem::new(64).unwrap();
        let data: Vec<u8> = (1..=13).collect();
        write_bytes(m.words(), &data);
        // Bytes land in memory in order whatever the host's endianness.
        assert_eq!(
            m.words()[0].load(Ordering::Relaxed).to_ne_bytes(),
            [1, 2, 3, 4, 5, 6, 7, 8]
        );
        assert_eq!(
            m.words()[1].load(Ordering::Relaxed).to_ne_bytes(),
            [9, 10, 11, 12, 13, 0, 0, 0]
        );
        let mut back = [0u8; 13];
        read_bytes(m.words(), &mut back);
        assert_eq!(&back[..], &data[..]);
        store_le(&m.words()[2], 0x0102_0304, Ordering::Relaxed);
        assert_eq!(
            m.words()[2].load(Ordering::Relaxed).to_ne_bytes(),
            [4, 3, 2, 1, 0, 0, 0, 0]
        );
        assert_eq!(load_le(&m.words()[2], Ordering::Relaxed), 0x0102_0304);
    }
}

//! The application's buffers, which the adapter reads and writes but does not own.
//!
//! In production the buffers are a shared-memory region (natm-nic), reached only through
//! atomic 64-bit words with bounds checks; in tests, benches and the simulator they are
//! [`VecBuffers`]. The adapter reaches them only through [`BufferMemory`], and only while
//! the buffer is posted to it: a transmit buffer is read while it is queued, a receive
//! buffer written while it is posted (free or being filled). Offsets the adapter uses are
//! multiples of 48 (a cell payload, itself six 8-byte words), so a word-based
//! implementation copies whole words except at the tail of an SDU.

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

/// A buffer of the application's memory: an index, `0..AdapterConfig::buffers`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BufferId(pub u32);

impl fmt::Display for BufferId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "buffer {}", self.0)
    }
}

/// Why a buffer access was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryError {
    /// No such buffer.
    UnknownBuffer(BufferId),
    /// The access reaches past the end of the buffer.
    OutOfBounds {
        /// The buffer.
        id: BufferId,
        /// Where the access starts.
        offset: usize,
        /// Bytes asked for.
        len: usize,
        /// The buffer's size.
        size: usize,
    },
    /// The implementation refused for its own reason (e.g. the region's owner check).
    Refused(BufferId),
}

impl fmt::Display for MemoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MemoryError::UnknownBuffer(id) => write!(f, "{id} does not exist"),
            MemoryError::OutOfBounds {
                id,
                offset,
                len,
                size,
            } => write!(
                f,
                "{len} bytes at offset {offset} of {id} reach past its {size} bytes"
            ),
            MemoryError::Refused(id) => write!(f, "access to {id} refused"),
        }
    }
}

impl core::error::Error for MemoryError {}

/// Memory that holds the application's buffers.
///
/// Contract for implementations: an access either moves every byte asked for or none, and
/// reports why not; it never panics on any id, offset or length.
pub trait BufferMemory {
    /// Copy `out.len()` bytes of buffer `id` from `offset` into `out`.
    fn read(&self, id: BufferId, offset: usize, out: &mut [u8]) -> Result<(), MemoryError>;
    /// Copy `data` into buffer `id` at `offset`.
    fn write(&mut self, id: BufferId, offset: usize, data: &[u8]) -> Result<(), MemoryError>;
}

/// `count` buffers of `size` bytes each in one ordinary allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VecBuffers {
    size: usize,
    count: u32,
    bytes: Vec<u8>,
}

impl VecBuffers {
    /// `count` zeroed buffers of `size` bytes. Panics if `count × size` overflows `usize`.
    pub fn new(count: u32, size: usize) -> VecBuffers {
        let total = size
            .checked_mul(count as usize)
            .expect("count × size fits in memory");
        VecBuffers {
            size,
            count,
            bytes: vec![0; total],
        }
    }

    /// Bytes per buffer.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Number of buffers.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// A buffer's bytes.
    pub fn buffer(&self, id: BufferId) -> Option<&[u8]> {
        let start = self.start(id)?;
        Some(&self.bytes[start..start + self.size])
    }

    /// A buffer's bytes, writable (the application's side).
    pub fn buffer_mut(&mut self, id: BufferId) -> Option<&mut [u8]> {
        let start = self.start(id)?;
        Some(&mut self.bytes[start..start + self.size])
    }

    fn start(&self, id: BufferId) -> Option<usize> {
        (id.0 < self.count).then(|| id.0 as usize * self.size)
    }

    /// The byte range of an access, checked.
    #[inline]
    fn range(
        &self,
        id: BufferId,
        offset: usize,
        len: usize,
    ) -> Result<core::ops::Range<usize>, MemoryError> {
        let start = self.start(id).ok_or(MemoryError::UnknownBuffer(id))?;
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(start + offset..start + end),
            _ => Err(MemoryError::OutOfBounds {
                id,
                offset,
                len,
                size: self.size,
            }),
        }
    }
}

impl BufferMemory for VecBuffers {
    #[inline]
    fn read(&self, id: BufferId, offset: usize, out: &mut [u8]) -> Result<(), MemoryError> {
        let r = self.range(id, offset, out.len())?;
        out.copy_from_slice(&self.bytes[r]);
        Ok(())
    }

    #[inline]
    fn write(&mut self, id: BufferId, offset: usize, data: &[u8]) -> Result<(), MemoryError> {
        let r = self.range(id, offset, data.len())?;
        self.bytes[r].copy_from_slice(data);
        Ok(())
    }
}

/// A borrowed memory is memory: a driver can lend its buffers for one call.
impl<T: BufferMemory + ?Sized> BufferMemory for &mut T {
    fn read(&self, id: BufferId, offset: usize, out: &mut [u8]) -> Result<(), MemoryError> {
        (**self).read(id, offset, out)
    }

    fn write(&mut self, id: BufferId, offset: usize, data: &[u8]) -> Result<(), MemoryError> {
        (**self).write(id, offset, data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vec_buffers_bounds() {
        let mut m = VecBuffers::new(2, 100);
        m.write(BufferId(1), 96, &[1, 2, 3, 4]).unwrap();
        let mut out = [0u8; 4];
        m.read(BufferId(1), 96, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
        assert_eq!(m.buffer(BufferId(0)).unwrap(), &[0u8; 100][..], "no spill");
        assert!(matches!(
            m.write(BufferId(1), 97, &[0; 4]),
            Err(MemoryError::OutOfBounds { offset: 97, .. })
        ));
        assert!(matches!(
            m.read(BufferId(0), usize::MAX, &mut out),
            Err(MemoryError::OutOfBounds { .. })
        ));
        assert_eq!(
            m.read(BufferId(2), 0, &mut out),
            Err(MemoryError::UnknownBuffer(BufferId(2)))
        );
        assert!(m.buffer(BufferId(2)).is_none());
        for e in [
            MemoryError::UnknownBuffer(BufferId(2)),
            MemoryError::Refused(BufferId(0)),
        ] {
            assert!(!e.to_string().is_empty());
        }
    }
}

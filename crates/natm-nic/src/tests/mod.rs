//! The acceptance suite, run on both backends (heap stand-in and memfd).

mod cells;
mod channel;
pub(crate) mod dying_peer;
mod notify;

use std::sync::Arc;

use crate::memfd::MemfdMem;
use crate::shm::{HeapMem, Region};

/// Makes a zeroed region of the given length.
pub(crate) type Backend = (&'static str, fn(usize) -> Region);

pub(crate) const BACKENDS: [Backend; 2] = [
    ("heap", |n| {
        Arc::new(HeapMem::new(n).expect("test length is valid"))
    }),
    ("memfd", |n| {
        Arc::new(MemfdMem::create("natm-test", n).expect("memfd available"))
    }),
];

/// A cell whose every byte derives from `seq`, so a torn cell is detectable.
pub(crate) fn cell(seq: u64) -> crate::cells::CellBytes {
    let mut c = [0u8; 53];
    c[..8].copy_from_slice(&seq.to_le_bytes());
    for (i, b) in c[8..].iter_mut().enumerate() {
        *b = (seq as u8).wrapping_mul(31).wrapping_add(i as u8);
    }
    c
}

/// The sequence number of a cell made by [`cell`], or None if it is torn.
pub(crate) fn check_cell(c: &crate::cells::CellBytes) -> Option<u64> {
    let seq = u64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
    (cell(seq) == *c).then_some(seq)
}

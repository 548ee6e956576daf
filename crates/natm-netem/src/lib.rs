//! Seeded link emulation for ATM cells (issue 4): being written.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

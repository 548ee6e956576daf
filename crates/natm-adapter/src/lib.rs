//! The user-level adapter model (issue 4): skeleton, filled in by the adapter work.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

//! ATM adaptation layers per VC (ITU-T I.363.5 AAL5, and AAL0 raw cells).
//!
//! Work in progress (issue 3): the per-VC engines are being written.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

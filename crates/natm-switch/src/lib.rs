//! The ATM switch fabric (issue 5), as a pure state machine. Being written.
#![no_std]
#![forbid(unsafe_code)]
extern crate alloc;

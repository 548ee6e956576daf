//! The signalling AAL's protocol cores: SSCOP (ITU-T Q.2110) and SSCF-UNI (Q.2130).
//!
//! * [`Sscop`]: one SSCOP connection, the Q.2110 state machine (skeleton: the behaviour
//!   follows in the next commits).
//! * [`sscf::Sscf`]: SSCF-UNI over an [`Sscop`], what Q.2931 signalling drives.
//!
//! This crate is pure: no I/O, clocks or randomness, no `unsafe`, and it builds without
//! `std`. Time comes in as [`natm_core::Instant`].
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod sscf;
mod sscop;

pub use sscop::{Config, Event, Sscop, State};

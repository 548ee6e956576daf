//! Traffic contracts in action: the pure core of ATM traffic management.
//!
//! What a VC's contract says (its [`TrafficParams`](natm_core::TrafficParams): PCR, SCR,
//! MBS, CDVT) becomes arithmetic here:
//!
//! * [`gcra`]: the Generic Cell Rate Algorithm GCRA(I, L) of ITU-T I.371 §4.4.3.2 / ATM
//!   Forum TM 4.1 §4.4.3 (annex C), in both equivalent forms (virtual scheduling and the
//!   continuous-state leaky bucket), in exact integer time: no floats, no rounding of 1/PCR.
//! * [`policer`]: the conformance definitions of TM 4.1 §4.5 (CBR.1, VBR.1/2/3, UBR.1/2)
//!   and a usage parameter control (UPC) that passes, tags or discards each cell.
//! * [`cac`]: connection admission control for one link, with books that balance.
//!
//! This crate is pure: no I/O, no clocks, no randomness, no `unsafe`, and it builds without
//! `std`. Every time-dependent call takes `now` ([`Instant`](natm_core::Instant), u64 ns)
//! from the caller; nothing here reads a clock. It is **not** a shaper or a scheduler (that
//! is the next part of issue 3) and does not touch cells' bytes: the caller sets the CLP
//! bit of a cell the policer tags.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod cac;
pub mod gcra;
pub mod policer;

//! The signalling AAL's protocol cores: SSCOP (ITU-T Q.2110) and SSCF-UNI (Q.2130).
//!
//! * [`Sscop`]: one SSCOP connection, every state of Q.2110's state machine with its
//!   timers, selective retransmission, credit, resynchronisation and recovery.
//! * [`sscf::Sscf`]: SSCF-UNI over an [`Sscop`], what Q.2931 signalling drives on VC 0.5.
//! * `mutants` (test-only feature `mutants`): planted bugs for natm-sim's meta-test.
//!
//! Q.2110 primitives and their Rust form:
//!
//! | Q.2110 | [`Sscop`] |
//! |---|---|
//! | AA-ESTABLISH.request / .response | [`Sscop::establish_request`] / [`Sscop::establish_response`] |
//! | AA-ESTABLISH.indication / .confirm | [`Event::EstablishIndication`] / [`Event::EstablishConfirm`] |
//! | AA-RELEASE.request | [`Sscop::release_request`] |
//! | AA-RELEASE.indication / .confirm | [`Event::ReleaseIndication`] / [`Event::ReleaseConfirm`] |
//! | AA-DATA.request / .indication | [`Sscop::data_request`] / [`Event::Data`] |
//! | AA-UNITDATA.request / .indication | [`Sscop::unitdata_request`] / [`Event::UnitData`] |
//! | AA-RESYNC.request / .response | [`Sscop::resync_request`] / [`Sscop::resync_response`] |
//! | AA-RESYNC.indication / .confirm | [`Event::ResyncIndication`] / [`Event::ResyncConfirm`] |
//! | AA-RECOVER.indication / .response | [`Event::RecoverIndication`] / [`Sscop::recover_response`] |
//! | MAA-UNITDATA.request / .indication | [`Sscop::mdata_request`] / [`Event::ManagementData`] |
//! | MAA-ERROR.indication | [`Event::ManagementError`] ([`MaaError`]) |
//! | AA-RETRIEVE | not implemented (SSCF-UNI releases buffers, BR = yes) |
//!
//! Two endpoints in virtual time:
//!
//! ```
//! use natm_core::Instant;
//! use natm_sscop::{Config, Event, Sscop, State};
//!
//! let now = Instant::ZERO;
//! let (mut a, mut b) = (Sscop::new(Config::default()), Sscop::new(Config::default()));
//! let carry = |from: &mut Sscop, to: &mut Sscop| {
//!     while let Some(pdu) = from.poll_transmit() {
//!         to.handle_pdu(now, &pdu);
//!     }
//! };
//! a.establish_request(now, b"hello".to_vec(), true);
//! carry(&mut a, &mut b); // BGN
//! assert_eq!(b.poll_event(), Some(Event::EstablishIndication { uu: b"hello".to_vec() }));
//! b.establish_response(now, Vec::new(), true);
//! carry(&mut b, &mut a); // BGAK
//! assert_eq!(a.state(), State::DataTransferReady);
//! a.data_request(now, b"SETUP".to_vec());
//! carry(&mut a, &mut b); // SD
//! assert_eq!(b.poll_event(), Some(Event::Data { n_s: 0, data: b"SETUP".to_vec() }));
//! ```
//!
//! This crate is pure: no I/O, clocks or randomness, no `unsafe`, and it builds without
//! `std`. Time comes in as [`natm_core::Instant`] (u64 nanoseconds).
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

#[cfg(feature = "mutants")]
pub mod mutants;
pub mod sscf;
mod sscop;
#[cfg(test)]
mod tests;

pub use sscop::{Config, Counters, Event, MaaError, Sscop, State, Timer};

#[cfg(feature = "mutants")]
use mutants::ignore_ustat;

#[cfg(not(feature = "mutants"))]
fn ignore_ustat() -> bool {
    false
}

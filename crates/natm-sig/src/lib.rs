//! UNI signalling call control: ITU-T Q.2931 as the ATM Forum's UNI 3.1 profiles it, with
//! UNI 4.0's point-to-point differences, for the user side and the network side of an
//! interface; and [`Signalling`], which puts it over SSCF-UNI and SSCOP (natm-sscop).
//!
//! * [`Uni`]: the call control of one interface (one signalling VC). Calls are set up and
//!   cleared through typed commands and reported as [`CallEvent`]s; it talks to the SAAL
//!   through [`SaalRequest`] / [`SaalEvent`]. It keeps the call states U0–U12 / N0–N12
//!   ([`CallState`]), the restart states REST0–REST2 ([`RestartState`]), the timers T303,
//!   T308, T309, T310, T313, T316, T317 and T322 ([`Timer`], values in [`Config`]), and the
//!   interface's call references (23 bits, flag 0 from the side that allocated them).
//! * [`Signalling`]: `Sscf` + `Uni` behind `handle_pdu` / `poll_transmit` / `poll_event` /
//!   `poll_timeout` / `handle_timeout` and the call commands: what hostd, switchd,
//!   natm-sim and the atmsigd interop tests drive.
//!
//! This crate is pure: no I/O, clocks or randomness, no `unsafe`, and it builds without
//! `std`. Time comes in as [`natm_core::Instant`].
//!
//! What it is not: no message codec (that is `natm_wire::q2931`, which also maps IEs to
//! natm's `Qos`), no SSCOP (natm-sscop), no VPI/VCI allocation (the network side's owner
//! passes connection identifiers in), no point-to-multipoint (ADD PARTY and the rest are
//! answered as unimplemented messages), no overlap sending, no UNI 4.0 ALERTING states of
//! their own (ALERTING is taken as CALL PROCEEDING would be: U4/N7 behave as U3/N9).
//!
//! # What the standard says, and where it is done
//!
//! * Q.2931 §5.1–5.3 (call establishment at the originating and destination interface,
//!   the user side's Annex/SDL state tables and the network side's): `uni.rs`,
//!   `Uni::setup`/`proceed`/`connect` and `transition`. U8 → U10 on CONNECT ACKNOWLEDGE;
//!   the network goes N8 → N10 at once (it acknowledges CONNECT itself).
//! * §5.4 (call clearing, clear collision): `release`, `rx_release`,
//!   `rx_release_complete`. U12/N12 are passed through: RELEASE is answered with RELEASE
//!   COMPLETE in the same step (the owner is told `Released`), as atmsigd does.
//! * §5.5 (restart procedures, global call reference, T316/T317): `restart`,
//!   `rx_restart`, `restart_response`.
//! * §5.6 (error handling): 5.6.1–5.6.2 (protocol discriminator, too short, call reference
//!   format: dropped, counted); 5.6.3 (call reference procedures: unknown references,
//!   `handle_unknown_cref`; the global reference, `handle_global`); 5.6.4–5.6.5 (message
//!   type and sequence errors: STATUS with cause 97 or 101 unless the message's action
//!   indicator says to clear or ignore); 5.6.7 (mandatory IE missing 96 / content error
//!   100); 5.6.8 (unrecognised IE 99 / non-mandatory content error 100 by the IE's
//!   action indicator); 5.6.9 (SAAL failure and T309); 5.6.10–5.6.11 (STATUS ENQUIRY,
//!   T322, STATUS). Nothing the peer sends can make it panic (fuzz target `uni_machine`).
//!
//! # Tests, and which tables they cover
//!
//! * `tests::user`: the user side's state table (Q.2931 §5.1–5.4 for U0, U1, U3, U6, U8,
//!   U9, U10, U11, U12): every message in every state (a valid transition, STATUS 101, or
//!   the release rows), every command in every state, each timer's expiry.
//! * `tests::network`: the same for N0, N1, N3, N6, N8, N9, N10, N11, N12.
//! * `tests::errors`: §5.6 row by row: unknown call references per message type, the
//!   global reference, message action indicators, mandatory IE missing / bad, unrecognised
//!   IEs by action indicator, malformed messages.
//! * `tests::timers`: T303 (resent once, then RELEASE COMPLETE 102 "303"), T308 (twice,
//!   then local release and RESTART of the VC), T309 (SAAL back in time: STATUS ENQUIRY;
//!   not: cleared with 27), T310, T313, T316 (twice, then `RestartFailed`), T317, T322.
//! * `tests::restart`: REST0/REST1/REST2 on both sides, each class.
//! * `tests::pair`: a user and a network entity over a SAAL that loses, delays and breaks,
//!   in virtual time, with random commands: every call ends connected at both ends or
//!   released at both ends with a cause, and no call reference leaks; the same over real
//!   `Signalling` pairs; and the planted mutant caught.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod config;
mod msg;
#[cfg(feature = "mutants")]
pub mod mutants;
pub mod saal;
mod signalling;
pub mod state;
mod types;
mod uni;

#[cfg(test)]
mod tests;

pub use config::{Config, RestartResponse, Role, Timer};
pub use saal::{SaalEvent, SaalRequest};
pub use signalling::Signalling;
pub use state::{CallState, RestartState};
pub use types::{
    CallEvent, CallId, CommandError, ConnId, IncomingSetup, Origin, ReleaseOrigin, Restart,
    SetupParams,
};
pub use uni::{Counters, Uni};

/// The codec's types that appear in this crate's API.
pub use natm_wire::q2931::qos::QosMapError;
pub use natm_wire::q2931::{
    Bhli, Blli, Cause, CauseValue, Location, Message, PartyNumber, Subaddress,
};

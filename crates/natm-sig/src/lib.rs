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
//!   COMPLETE in the same step (the owner is told `Released`).
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
//! # Where the standard leaves a choice, and what this crate chose
//!
//! * Causes of its own: location U (user side) or LPN (network side, a private switch's
//!   port); calls cleared by a restart report 41 (temporary failure), by the SAAL's loss or
//!   T309 27 (destination out of order), by T322's last expiry 41; timer expiries 102 with
//!   the timer's digits; 96/99/100 name the IE, 97/101 the message type.
//! * A restart of all VCs (class 2) clears the calls that have a VC; a call whose SETUP
//!   has not yet been given one is on no VC and goes on (a network restarts everything
//!   when its SAAL comes up, and a user's first SETUP may cross that RESTART).
//! * T308's last expiry: local release, then RESTART of the call's VC (the "maintenance
//!   condition"), so that a peer that never heard RELEASE cannot keep the call
//!   (`Config::restart_after_t308`).
//! * STATUS compatibility (§5.6.11 leaves it open): a peer state is compatible when it is
//!   one the peer can be in with messages still crossing (`CallState::compatible_with`);
//!   otherwise RELEASE with 101. A STATUS without a call state is ignored (answering it
//!   could loop).
//! * AAL-ESTABLISH.indication/confirm while established (SSCOP resynchronised or
//!   recovered): handled as a loss and re-establishment in one step, without asking for
//!   another establishment.
//! * After the SAAL is lost it is asked to establish again at once; a failed attempt is
//!   retried while T309 runs, otherwise when there is something to send.
//!
//! # Tests, and which tables they cover
//!
//! The standard's state tables are Q.2931 §5.1–5.4's procedures for the user side
//! (states U0, U1, U3, U6, U8, U9, U10, U11, U12) and the network side (N0, N1, N3, N6,
//! N8, N9, N10, N11, N12), the restart procedures' REST0–REST2 (§5.5, §2.3), and §5.6's
//! error rows. Each group below is a `src/tests/` module (`send!`/`recv!`/`event!` helpers
//! in `tests/mod.rs`, virtual time):
//!
//! * `user::messages_in_every_state`, `network::messages_in_every_state`: one row per
//!   state, one column per message the peer can send (CALL PROCEEDING, ALERTING, CONNECT,
//!   CONNECT ACK, RELEASE, RELEASE COMPLETE, STATUS ENQUIRY, SETUP, NOTIFY, an
//!   unimplemented type), each cell checked: what is sent, the next state, the event.
//!   `*::commands_in_every_state`: `proceed`, `connect`, `release` in every state.
//!   U12/N12 are passed through and U8/N8 as the tables say, so they appear as the
//!   RELEASE and CONNECT cells.
//! * `timers`: T303 (resent once, then RELEASE COMPLETE cause 102 diagnostic "303"), T308
//!   (RELEASE resent once, then local release and RESTART of the VC), T309 (SAAL back in
//!   time: STATUS ENQUIRY for active calls; not back: cleared with cause 27), T310 and T313
//!   (RELEASE with 102), T316 (twice, then `RestartFailed`), T317, T322 (twice, then RELEASE
//!   with 41); SAAL loss and STATUS (peer Null / compatible / far off) in every state; a
//!   SAAL resynchronised under an established link.
//! * `restart`: REST1 (own RESTART, all and one VC), REST2 (owner-confirmed), received
//!   RESTART of each class, a RESTART missing its IEs.
//! * `errors`: §5.6.1–5.6.2 (dropped headers), 5.6.3 (each message type on an unknown call
//!   reference, STATUS on one, SETUP with the wrong flag, the global reference), 5.6.4
//!   (message action indicators), 5.6.7 (mandatory IE missing 96 / bad 100, in SETUP,
//!   RELEASE, STATUS, the network's first answer), 5.6.8 (unrecognised IE by each action
//!   indicator, optional IE with bad contents), 5.6.10–5.6.11 (STATUS ENQUIRY in every
//!   state, STATUS compatibility).
//! * `pair`: a user and a network entity over a simulated SAAL that loses messages, delays
//!   them and breaks, with owners that start, answer, release and restart calls at random
//!   (24 seeds × 600 s), then a quiet phase with an audit (STATUS ENQUIRY of each active
//!   call): every call ends connected at both ends or released at both ends with a cause,
//!   and after releasing everything no call reference is left. The same over whole
//!   [`Signalling`] pairs (natm-sscop's SSCOP on a lossy, breaking AAL5 link, 8 seeds).
//!   With the `mutants` feature, the planted bug
//!   `mutants::set_no_release_complete_after_t308` is caught by a targeted T308 scenario
//!   and by the random campaign.
//!
//! Fuzz targets (in `/fuzz`): `uni_machine` feeds a `Uni` of each role random raw and
//! well-formed messages, commands, SAAL events and time; `signalling_pair` joins two
//! `Signalling` entities by a link that loses, duplicates and corrupts SDUs.
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
pub use natm_wire::q2931::qos::{QosMapError, UniVersion};
pub use natm_wire::q2931::{
    Bhli, Blli, Cause, CauseValue, Location, Message, PartyNumber, Subaddress,
};

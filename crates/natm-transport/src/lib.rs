//! The native-mode transport: messages over AAL5 with a service the application chose.
//!
//! Jain & Keshav's native-mode ATM stack (Ahuja, Keshav and Saran, INFOCOM '96) gives an
//! application a *service* on an ATM channel instead of IP's one best effort. This crate is
//! its transport, as a pure core:
//!
//! * [`Endpoint`]: one end of a duplex channel built from two simplex VCs. It segments
//!   messages (up to [`Config::max_message`], 1 MiB by default) into TPDUs of
//!   [`Config::tpdu_size`] payload bytes, one AAL5 frame each ([`header`] documents the
//!   format), and delivers them whole, in order, byte-exact, with the [`Service`] asked for:
//!   * [`Service::Reliable`]: SMART acknowledgements (Keshav & Morgan: every ack carries the
//!     cumulative ack, the sequence number of the TPDU that caused it, and a bitmap), so the
//!     sender resends exactly what is missing at once; a window like TCP Reno's;
//!     Jacobson/Karels round-trip estimation with Karn's rule (the ack's echo of the
//!     transmission that arrived makes resends measurable too) and a floor on the timeout
//!     (the seed's 50 ms lesson); receive-window flow control with a persist timer.
//!     `send.rs` and `recv.rs` say what is done and why.
//!   * [`Service::BestEffort`]: no acks, no retransmission; every lost message is reported
//!     to the receiver by its message sequence numbers ([`Event::Lost`]).
//!   * [`Service::Guaranteed`]: best effort released by a leaky bucket at the rate
//!     (`natm_traffic::smooth`), with the seed's adaptive spacing factor
//!     ([`spacing_factor`]). No retransmission, as in the seed: a resent TPDU would come a
//!     round trip late, and a rate service's data is worth little late.
//! * Scheduling is not here: the channels of a host are served by weighted round robin
//!   (`natm_traffic::wrr`) in the host core's transmit round, each by its VCs' weights.
//! * [`tpdu_size`]: the TPDU size that maximises expected goodput for a measured cell loss.
//! * `testing` (feature `testing`): a seeded lossy wire and a pair of endpoints in virtual
//!   time.
//! * `mutants` (test-only feature `mutants`): planted bugs for the mutation meta-test.
//!
//! What it is not: it opens no VC and owns no link (the driver does), it does no admission
//! (the host core's CAC does), and it does not shape cells (the cell scheduler does: the
//! guaranteed bucket works on whole TPDUs).
//!
//! # From the seed papers
//!
//! Followed: a TPDU is one AAL5 frame and a channel two simplex VCs (Ahuja, Keshav and
//! Saran); SMART's ack — cumulative ack plus the sequence number of the TPDU that caused
//! it — and its rule: resend what the trigger shows missing at once, once per round trip,
//! and keep the timeout for when acks stop (Keshav and Morgan); a TCP-like window, in
//! TPDUs; a floor under the timeout (the seed's 50 ms: its timer was coarse and a timeout
//! from tiny round trips collapsed the window); best effort that reports what it lost;
//! guaranteed service as a leaky bucket with a spacing factor X that grows with the data
//! queued, no retransmission; work units served by weighted round robin.
//!
//! Added here, each said where it is done: a 64-bit bitmap of what came above the
//! cumulative ack (it repairs what lost acks hide); the ack's echo of which transmission
//! of its trigger arrived, so the once-per-round-trip rule is exact for resent TPDUs; a
//! loss probe (RACK-TLP's idea) so that a whole lost flight costs a probe time (two round
//! trips, at least `min_probe`) and not the timeout; the persist timer of receive-window
//! flow control; a TPDU size that follows the measured cell loss.
//!
//! Limits: acks are TPDUs of their own (not piggybacked on data), one per data TPDU, one
//! cell each; the receive buffer counts TPDUs, so a small message holds a whole TPDU's
//! place; Reno's halving takes random cell loss for congestion, so a fixed TPDU size is
//! bounded by Reno's window under random loss (about 1.2/√(frame loss) TPDUs per round
//! trip): at 1 % cell loss a 1,500-byte TPDU keeps a window of 2–3 and fills a LAN's pipe
//! but not a longer one, and on a 1 ms path even 0.1 % keeps 1,500-byte TPDUs at a third
//! of the ideal. The adaptive TPDU size, with the window growing by a full-size TPDU per
//! round trip, does better on every path tried; the efficiency tests give the figures.
//!
//! Initial sequence numbers come from the driver ([`Isn`]), which seeds them; both ends of
//! one direction must be given the same.
//!
//! ```
//! use natm_core::Instant;
//! use natm_transport::{Config, Endpoint, Event, Isn, MsgSeq, Payload};
//!
//! let now = Instant::ZERO;
//! let (ab, ba) = (Isn { seq: 7, msg: 0 }, Isn { seq: u32::MAX, msg: 9 });
//! let mut a = Endpoint::new(Config::default(), ab, ba).unwrap();
//! let mut b = Endpoint::new(Config::default(), ba, ab).unwrap();
//! a.send_message(now, b"hello").unwrap();
//! let mut frame = vec![0; Config::default().max_frame_len()];
//! // Carry frames both ways until neither has anything to send.
//! loop {
//!     let mut moved = false;
//!     while let Some(n) = a.poll_transmit(now, &mut frame) {
//!         b.handle_tpdu(now, &frame[..n]).unwrap();
//!         moved = true;
//!     }
//!     while let Some(n) = b.poll_transmit(now, &mut frame) {
//!         a.handle_tpdu(now, &frame[..n]).unwrap();
//!         moved = true;
//!     }
//!     if !moved {
//!         break;
//!     }
//! }
//! assert_eq!(b.poll_event(), Some(Event::Message { msg: MsgSeq(0), data: Payload::new(b"hello") }));
//! assert!(a.send_idle());
//! ```
//!
//! This crate is pure: no I/O, no clock, no randomness, no `unsafe`, and it builds without
//! `std`. Time comes in as [`natm_core::Instant`] (u64 nanoseconds).
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

mod config;
mod endpoint;
pub mod header;
#[cfg(feature = "mutants")]
pub mod mutants;
mod payload;
mod recv;
mod rtt;
mod send;
mod seq;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod tpdu_size;

#[cfg(test)]
mod tests;

pub use config::{AAL5_MAX_SDU, Config, ConfigError, Service, frame_cells};
pub use endpoint::{Endpoint, Event, Isn, MsgSeq, RxError, SendError, Stats};
pub use payload::Payload;
pub use send::{BUCKET_TPDUS, X_MAX, spacing_factor};

#[cfg(feature = "mutants")]
use mutants::{ack_without_trigger, window_never_halves};

#[cfg(not(feature = "mutants"))]
fn ack_without_trigger() -> bool {
    false
}

#[cfg(not(feature = "mutants"))]
fn window_never_halves() -> bool {
    false
}

//! Seeded link emulation for ATM cells (issue 4): a line rate, a transmit queue and
//! impairments, as a sans-IO core that natm's real links and the simulator both drive.
//!
//! [`Netem`] is one direction of a link. Cells go in with [`Netem::handle_cell`] at the
//! caller's `now` and come out of [`Netem::poll_transmit`] at the instant they finish
//! crossing the line; [`Netem::poll_timeout`] says when the next one does. Its type doc has
//! the call contract and the drain rule. [`Config`] chooses the rate (natm-core's
//! [`LineRate`](natm_core::LineRate)), the queue
//! and the [`Impairments`], which also have a text form for the command line (see
//! [`config`](crate::config) for the syntax):
//!
//! ```
//! use natm_core::Instant;
//! use natm_netem::{Config, Netem};
//!
//! let config = Config {
//!     rate: "oc3".parse().unwrap(),
//!     impairments: "delay=100us,jitter=20us,loss=1%,seed=7".parse().unwrap(),
//!     ..Config::default()
//! };
//! let mut link = Netem::new(&config);
//! link.handle_cell(Instant::ZERO, [0; 53]);
//! while let Some(t) = link.poll_timeout() {
//!     while let Some(tx) = link.poll_transmit(t) {
//!         // Deliver tx.cell at tx.at: one cell time (2831.2 ns, out at the next whole
//!         // ns) plus 100 ± 20 µs.
//!         assert!((82_832..=122_832).contains(&tx.at.as_nanos()));
//!     }
//! }
//! ```
//!
//! # The models
//!
//! * **Line rate.** Cells are serialised one after another at the rate exactly: the line
//!   counts in ticks of 1/`num` ns for a rate of `num/den` cells/s (natm-core's
//!   [`PhyRate`](natm_core::PhyRate) fractions), so one cell lasts exactly
//!   `den · 10⁹` ticks and a long busy period has exactly ⌊t · rate⌋ cells out by time t,
//!   with no drift. A cell leaves at the first whole ns at or after its last bit. A cell
//!   offered while the line is busy waits in a FIFO transmit queue of `queue_cells`;
//!   beyond it, the cell is tail-dropped. At [`LineRate::Unlimited`](natm_core::LineRate::Unlimited) cells leave when offered.
//! * **Random loss**: each cell carried is lost with probability `loss` (Bernoulli).
//! * **Burst loss**: Gilbert's two-state Markov chain (E. N. Gilbert, "Capacity of a
//!   burst-noise channel", BSTJ 39, 1960; the general form with loss in both states is
//!   Elliott's, BSTJ 42, 1963), as Linux netem's `loss gemodel p r` with 1−h = 100 %
//!   and 1−k = 0 % (tc-netem(8); G. Hasslinger and O. Hohlfeld, "The Gilbert-Elliott model
//!   for packet loss in real time services on the Internet", MMB 2008). The chain steps
//!   once per cell: in Bad the cell is lost. Mean loss π = p/(p + r), mean burst length
//!   1/r cells (bursts are geometric). It can be given as `burst=π/L` or `ge=p/r`.
//! * **Header errors**: per cell, with probability `hec` one of the 40 header bits (HEC
//!   included) is flipped, uniformly: natm-wire's I.432 `HecReceiver` corrects it (in
//!   correction mode). With probability `hec2` two distinct bits are flipped: the HEC
//!   detects every double error and corrects none, so the receiver discards the cell.
//! * **Payload errors**: every one of the 384 payload bits flips independently with the bit
//!   error rate `ber` (drawn as geometric gaps between errors, one draw per error-free
//!   cell). The AAL5 CRC-32 is what should notice.
//! * **Delay**: a fixed `delay`, plus `jitter` drawn per cell either uniformly within
//!   `delay ± jitter` (netem's `delay D J`) or exponentially with mean `jitter` on top of
//!   `delay`. Delay **never reorders a VC**: a cell leaves no earlier than the previous cell
//!   of its VC ([`Counters::held_for_order`] counts the cells held back for that), because
//!   ATM keeps cell sequence integrity (I.150). Cells of different VCs may pass each other.
//!
//! Each impairment draws from its own stream of a xoshiro256++ generator forked from
//! [`Impairments::seed`], so one seed reproduces a run and turning one impairment on does
//! not change what another does. Loss, errors and delay are decided when a cell is offered
//! (lost cells still use their line slot; dropped cells do not).
//!
//! # What this is not
//!
//! No I/O, clock, threads or OS randomness: this crate is pure, builds without `std` and
//! forbids `unsafe`; natm-link and the simulator own the sockets and the time. It does not
//! check or fix HECs (the receiver does), does not duplicate cells, and never reorders a VC
//! (reordering would be an explicit fault, not a delay). It models one direction; a link is
//! two.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod config;
mod math;
mod netem;

pub use config::{BurstLoss, Impairments, Jitter, ParseError, ParseErrorKind, Probability};
pub use netem::{Config, Counters, DEFAULT_IN_FLIGHT_CELLS, DEFAULT_QUEUE_CELLS, Netem, Transmit};

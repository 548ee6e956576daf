//! The user-level adapter model (issue 4): what an ATM adapter does between an
//! application's buffers and a link's cells, as a pure state machine.
//!
//! * **Transmit.** The application posts descriptors (a buffer, a length, a VC handle).
//!   The adapter queues them per VC, decides which VC sends in each cell slot (natm-traffic's
//!   [`Scheduler`](natm_traffic::sched::Scheduler) on a link with a rate; on an unlimited
//!   one, each VC's own GCRA shaper, or round robin a burst at a time for UBR VCs without
//!   a rate), and segments each SDU into AAL5 cells per
//!   I.363.5 §10 (CPCS-PDU: SDU, pad, trailer with CPCS-UU 0, CPI 0, Length and CRC-32; PTI
//!   SDU-type 1 on the last cell; HEC per I.432 filled) straight from the application's
//!   buffer, through [`BufferMemory::read`]. A descriptor's buffer comes back as a
//!   [`Completion`] when its last cell has been handed out.
//! * **Receive.** The application posts free buffers. Cells are checked (HEC per I.432
//!   §4.3 by natm-wire's [`HecReceiver`](natm_wire::cell::HecReceiver): correction or
//!   detection, or not at all when the link did it), matched to their VC,
//!   optionally policed (I.371 §5.4 UPC, natm-traffic's
//!   [`Policer`](natm_traffic::policer::Policer)), and AAL5 frames are reassembled straight
//!   into a posted buffer through [`BufferMemory::write`], payload `k` at offset 48·k. The
//!   strict receive rules of I.363.5 §10 apply at the last cell (CRC-32, Length 0 = abort,
//!   Length against the cell count, oversize). A good frame hands the buffer back as a
//!   completion with the SDU length; a bad one puts the buffer back in the free pool and is
//!   counted by reason. OAM F5 (PTI 100/101) and RM (PTI 110) cells on a VC, and every cell
//!   of the F4 flows (VCI 3/4, which I.361 reserves for F4 whatever their PTI), are not
//!   reassembled: they are passed aside as [`Event`]s (I.610 is the caller's business).
//!   This is natm's one AAL5 receive path; [`Reassembler`] is it for one VC's cells, each
//!   SDU handed back as bytes (for tests, tools and demonstrations).
//!
//! What it is not: no I/O, no threads, no clock (time is an argument, a
//! [`natm_core::Instant`]), no randomness, no `unsafe`; `no_std` with `alloc`. It does not
//! own the buffers' memory ([`BufferMemory`]), does not answer OAM, and does no signalling.
//! It speaks AAL5 only.
//! The test-only feature `mutants` plants bugs for natm-sim's meta-test (`mutants`).
//!
//! # Call contract (sans-IO)
//!
//! * Commands: [`open_vc`](Adapter::open_vc), [`close_vc`](Adapter::close_vc),
//!   [`post_tx`](Adapter::post_tx), [`post_rx_buffer`](Adapter::post_rx_buffer).
//! * Input: [`handle_cells`](Adapter::handle_cells) (or `handle_cell`) with the cells of
//!   the link in arrival order, [`handle_timeout`](Adapter::handle_timeout).
//! * Output: [`poll_transmit`](Adapter::poll_transmit) fills a batch of cells;
//!   [`poll_completion`](Adapter::poll_completion) and [`poll_event`](Adapter::poll_event)
//!   hand buffers and passed-aside cells back; [`poll_timeout`](Adapter::poll_timeout) says
//!   when to call again.
//! * Drain rule: after any command or input, drain `poll_transmit`, `poll_completion` and
//!   `poll_event` until they give nothing, then wait until `poll_timeout` and call
//!   `handle_timeout` and `poll_transmit` then.
//!
//! # Buffer ownership
//!
//! Every buffer id `0..AdapterConfig::buffers` is the application's until posted. The
//! adapter tracks each one's state in its own memory and reads a buffer only while it holds
//! it for transmission, writes one only while it holds it for reception; a buffer goes back
//! to the application exactly once, through a completion, when the completion is polled.
//! Nothing is lost: a refused descriptor (unknown VC, length 0 or above 65535, queue full)
//! comes back as a completion whose [`Status`] names the reason, [`close_vc`] returns what
//! the VC held with [`Status::Aborted`], and [`reclaim_rx_buffers`] returns the free pool.
//! A post naming a buffer the adapter does not know or already holds is refused with a
//! completion that does not transfer ownership (there is nothing to give back).
//!
//! [`close_vc`]: Adapter::close_vc
//! [`reclaim_rx_buffers`]: Adapter::reclaim_rx_buffers
//!
//! # Design decisions
//!
//! * **Staging.** Cell payloads are gathered in one fixed array of [`STAGE_CELLS`] cells
//!   (3,072 bytes) on both sides: on transmit the adapter reads up to that many cells' worth
//!   of SDU in one `read` and computes their CRC-32 in one update (carry-less multiply from
//!   128 bytes up), then cuts cells from it; on receive it copies payloads in, and writes and
//!   CRCs them in one go when the stage is full, the frame ends, another VC's cell comes, or
//!   the call returns. Per-cell 48-byte CRC updates would take natm-wire's table path
//!   (below its 128-byte carry-less threshold). Every CRC update ends in a short table
//!   step, so fewer, longer updates pay (the measurements are in NOTES.md and the
//!   README's adapter table). Nothing is staged between calls.
//! * **VC state is boxed**, so that checking a slot is open reads a pointer no cell
//!   writes. Inline, that check read bytes of the receive state each cell had just
//!   written, a wider load over a narrower store still in flight, and every cell waited
//!   for the previous one's store.
//! * **Unlimited links** have no line rate to share, so no scheduler, but a contract with a
//!   finite rate still holds: every VC with one (CBR PCR; VBR PCR, SCR and MBS; UBR with a
//!   PCR below [`UBR_UNSHAPED_PCR`]) is shaped at CDVT 0 as the scheduler would shape it
//!   (TM 4.1 §4.4.3, I.371 §4.4.3.2): one cell at a time, only at an instant where its
//!   GCRA(1/PCR, 0) and, for VBR, GCRA(1/SCR, BT) conform, so its output passes a CDVT-0
//!   UPC for its contract. Shaped VCs wait in a set ordered by the instant they may send
//!   next (natm-traffic's `Gcra::next_conforming`), which
//!   [`poll_timeout`](Adapter::poll_timeout) reports. A driver in real time wakes late;
//!   with CDVT-0 shaping a late call loses the departures it missed (and the VC its rate),
//!   so [`AdapterConfig::shaper_cdv`] (1 ms from [`AdapterConfig::new`]) lets cells that
//!   were due up to that long ago leave together, counted at the instants they were due:
//!   the rate holds and the output conforms to GCRA(1/PCR, τ) instead (a VC gains no
//!   credit while idle). A driver that calls at `poll_timeout` sees CDVT-0 spacing. Those due go
//!   first in each
//!   [`poll_transmit`](Adapter::poll_transmit); then UBR VCs without a rate share the rest
//!   round robin, a burst of up to [`STAGE_CELLS`] cells of one SDU per turn, untouched by
//!   any shaper (that path costs one emptiness check more than before shaping existed).
//!   The alternative of running the scheduler at a large virtual link rate was not taken:
//!   a virtual rate is either a cap the link does not have or so fine that every cell pays
//!   the wheel.
//! * **Rated links** ask the scheduler for each cell: at most one cell per link slot, leaving
//!   within the slot of `now` (the scheduler's `Transmit::at`, a few ns later at most). A
//!   batch therefore usually holds one cell; the next comes at `poll_timeout`.
//! * **Read faults.** If a transmit buffer cannot be read (the memory refuses), the
//!   descriptor completes with [`Status::MemoryFault`]; if cells of its SDU were already
//!   sent, an I.363.5 abort cell (Length 0, CRC correct) ends the frame so the receiver
//!   drops it. A receive buffer that cannot be written completes with the same status and is
//!   not reused.
//! * **Timers.** The reassembly timeout is one value for the adapter and time never goes
//!   back (an earlier `now` is taken as the latest seen), so frames expire in the order they
//!   started: the timers are an intrusive FIFO over the VC slots (O(1), no allocation),
//!   not a sorted set.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

mod adapter;
pub mod memory;
#[cfg(feature = "mutants")]
pub mod mutants;
mod reassembler;

#[cfg(test)]
mod props;
#[cfg(test)]
mod rx_model;
#[cfg(test)]
mod tests;

pub use adapter::Completion;
pub use adapter::{
    Adapter, AdapterConfig, ConfigError, Counters, DEFAULT_SHAPER_CDV, Direction, Event, FrameDrop,
    HecCheck, MAX_BUFFERS, MAX_VCS, OamKind, OpenError, RxVcConfig, STAGE_CELLS, Status,
    UBR_UNSHAPED_PCR, UnknownHandle, VcCounters,
};
pub use memory::{BufferId, BufferMemory, MemoryError, VecBuffers};
pub use reassembler::{Reassembler, Reassembly};

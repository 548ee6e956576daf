//! The ATM switch fabric (issue 5) as a pure state machine: ports, VP and VC
//! cross-connects with header translation, usage parameter control, per-category output
//! queues with EPD/PPD, output pacing, and the OAM a switch port owes its neighbours.
//!
//! * **Input (I.432 §4.3, I.361 §2.2).** Every cell's HEC is checked by the port's I.432
//!   receiver: a single-bit error is corrected (then detection mode until a good header),
//!   worse is discarded and counted. Idle and unassigned cells (VPI 0, VCI 0) are dropped
//!   and counted. The port's table maps the header to a *leg* (one direction of a
//!   cross-connect): a VP leg takes every VCI of its VPI except VCI 3 (the F4 segment flow,
//!   which ends at the switch); a VC leg takes one VPI/VCI, and VCIs 3 and 4 of a VPI with
//!   VC legs are that VP's F4 flows, which end at the switch (the VP ends here). Cells for
//!   no leg are counted as unknown VC.
//! * **UPC (I.371 §5.4, ATM Forum TM 4.1 §4.5).** A leg with [`Upc::Tag`] or
//!   [`Upc::Discard`] polices its cells with natm-traffic's
//!   [`Policer`](natm_traffic::policer::Policer) against its direction's contract (a→b:
//!   `qos.tx`, b→a: `qos.rx`) under its category's conformance definition (CBR.1, VBR.1,
//!   UBR.1). A non-conforming cell is discarded, or under `Tag` forwarded with CLP = 1 if
//!   it had CLP = 0. A UBR direction that gives no PCR is not policed; a direction of
//!   class `none` carries nothing (its cells count as policed).
//! * **Translation.** The output header gets the far end's VPI (and VCI for a VC leg); PTI
//!   and CLP are kept (but for UPC tagging), a VP leg keeps the VCI, GFC is 0, and the HEC
//!   is recomputed when the cell leaves.
//! * **Output (TM 4.1 §5.8 frame discard).** Each port has a queue per category with a limit
//!   in cells: CBR, rt-VBR and nrt-VBR are FIFOs served in strict priority, and UBR cells
//!   queue per connection and are served by weighted round robin, `weight` cells per turn.
//!   AAL5 legs get early and partial packet discard (natm-traffic's
//!   [`FrameDiscard`](natm_traffic::discard::FrameDiscard)); other cells tail drop. A port
//!   with a rate sends at most one cell per slot of `1/rate` (slot `k` at
//!   `epoch + ⌈k·10⁹/rate⌉` ns, exact in virtual time; unused slots are not saved while the
//!   queues are empty, and a caller that polls late gets at most the last 10 ms'
//!   slots at once).
//! * **OAM (I.610).** The switch port is a segment end point: an F5 segment loopback
//!   request (PTI 100) on a connected VC, or an F4 one (VCI 3) on a VPI with a connection,
//!   is answered out of the same port with the loopback indication cleared; other segment
//!   OAM cells end here. End-to-end OAM (PTI 101, VCI 4 of a VP leg) is forwarded with the
//!   connection. While a port is down, every connection whose input it is sends an
//!   end-to-end AIS cell downstream (F5 PTI 101, or F4 VCI 4 for a VP) at once and then once
//!   per second (I.610 VP-AIS and VC-AIS), until the port is up again.
//! * **CAC.** [`Switch::connect`] admits each direction on its output port with
//!   natm-traffic's [`Cac`](natm_traffic::cac::Cac) (CBR at PCR, VBR at its equivalent
//!   bandwidth; UBR books nothing and is limited by [`SwitchConfig::max_connections`]).
//!
//! * **Signalling (VC 0.5).** On a port with [`PortConfig::signalling`], user-data cells
//!   on VPI 0 / VCI 5 that pass the HEC receiver are not looked up: they go to the port's
//!   receive queue, which the owner drains with [`Switch::poll_signalling`]
//!   ([`Switch::has_signalling`] is the cheap check). The owner queues cells for 0.5 with
//!   [`Switch::send_signalling`]; they leave ahead of CBR, under the port's pacing, with
//!   their HEC computed on output. Both queues hold [`SIGNALLING_QUEUE_CELLS`]: a full
//!   receive queue drops and counts, a full send queue refuses. OAM cells on 0.5 end here.
//!   0.5 and VP 0 cannot be cross-connected on such a port.
//!
//! What it is not: no I/O, no threads, no clock (time is an argument), no randomness, no
//! `unsafe`; `no_std` with `alloc`. The switch does not signal: it ends 0.5 and moves its
//! cells, and the owner (natm-calls' call control) runs the protocol and programs the
//! cross-connects. No ABR, no continuity check or RDI generation, no multicast.
//! The test-only feature `mutants` plants a bug for natm-sim's meta-test (`mutants`).
//!
//! # Call contract (sans-IO)
//!
//! * Commands: [`add_port`](Switch::add_port), [`remove_port`](Switch::remove_port),
//!   [`set_port_up`](Switch::set_port_up), [`connect`](Switch::connect),
//!   [`disconnect`](Switch::disconnect), [`send_signalling`](Switch::send_signalling).
//! * Input: [`handle_cells`](Switch::handle_cells) (or `handle_cell`) with a port's cells
//!   in arrival order, [`handle_timeout`](Switch::handle_timeout).
//! * Output: [`poll_transmit`](Switch::poll_transmit) per port fills a batch;
//!   [`poll_signalling`](Switch::poll_signalling) per signalling port drains what arrived
//!   on 0.5 (when [`has_signalling`](Switch::has_signalling));
//!   [`poll_timeout`](Switch::poll_timeout) says when to call `handle_timeout` and
//!   `poll_transmit` again without input.
//! * Drain rule: after input or a command, call `poll_transmit` on every port until it
//!   returns less than asked (a rated port may hold cells until its next slot); at
//!   `poll_timeout`, call `handle_timeout` then `poll_transmit` again.
//! * `now` never goes backwards (an earlier one is treated as the latest seen by the
//!   policers; pacing uses it as given). Nothing here panics on any cell bytes.
//!
//! ```
//! use natm_core::Instant;
//! use natm_switch::{CrossConnect, Endpoint, PortConfig, PortId, Switch, SwitchConfig};
//!
//! let mut sw = Switch::new(SwitchConfig::default());
//! sw.add_port(PortId(1), PortConfig::default())?;
//! sw.add_port(PortId(2), PortConfig::default())?;
//! let xc = CrossConnect::new("1:0.100".parse()?, "2:5.200".parse()?, "ubr".parse()?);
//! let id = sw.connect(Instant::ZERO, &xc)?;
//!
//! // A cell on 0.100 at port 1 (HEC 0xEC) leaves port 2 as 5.200 (HEC 0x04).
//! let mut cell = [0u8; 53];
//! cell[..5].copy_from_slice(&[0x00, 0x00, 0x06, 0x40, 0xEC]);
//! sw.handle_cells(Instant::ZERO, PortId(1), &[cell]);
//! let mut out = [[0u8; 53]; 8];
//! assert_eq!(sw.poll_transmit(Instant::ZERO, PortId(2), &mut out), 1);
//! assert_eq!(out[0][..5], [0x00, 0x50, 0x0C, 0x80, 0x04]);
//! assert_eq!(sw.connection(id).map(|(_, c)| c.a_to_b.cells_out), Some(1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Counters and conservation
//!
//! [`PortCounters`] count per port and per drop reason; [`XcCounters`] per connection
//! direction. Over the switch, `Σ cells_in + Σ ais_sent + Σ signalling_out = Σ cells_out +
//! Σ dropped() + Σ queued() + Σ signalling_in` (signalling cells come from the owner or
//! end at it), and per direction `cells_in = cells_out + dropped + queued`.
//!
//! # Memory
//!
//! A cross-connect costs [`Switch::state_bytes_per_connection`] bytes beyond its queued
//! cells (a policed direction adds [`Switch::policer_bytes`]). Queued cells take 64 bytes
//! each (header word, 48-byte payload, list link, leg, aligned to a cache line) in one
//! pool shared by all ports; the pool keeps its high-water mark.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

mod hec;
#[cfg(feature = "mutants")]
pub mod mutants;
mod switch;
mod types;

/// Re-exported so callers name categories without depending on natm-traffic.
pub use natm_traffic::sched::Category;
pub use switch::{SIGNALLING_QUEUE_CELLS, Switch};
pub use types::{
    CATEGORIES, CrossConnect, DirCounters, Direction, Endpoint, ParseError, PortConfig,
    PortCounters, PortId, SignallingError, SwitchConfig, SwitchError, Upc, XcCounters, XcId,
    category_index,
};

//! ATM adaptation layers per VC: AAL5 (ITU-T I.363.5) reassembly and transmit queues, and
//! AAL0 (raw cells), for every VC of a link.
//!
//! * [`Receiver`] takes the cells of one link, finds each cell's VC, and reassembles AAL5
//!   PDUs with natm-wire's [`Reassembler`](natm_wire::aal5::Reassembler) under the strict
//!   receive rules of I.363.5 §10 (discard on CRC-32 error, Length 0 abort, Length/pad
//!   mismatch, oversize), plus what the standard leaves to the implementation: a
//!   reassembly timeout, a buffer limit per VC and one for the whole receiver, and counters.
//!   OAM F5 cells (PTI 100/101) and RM cells (PTI 110) on a user VC, and F4 OAM cells (VCI
//!   3/4), are passed aside as events carrying the cell, never reassembled (I.610's F4 and
//!   F5 flows). AAL0
//!   VCs deliver every cell as it came.
//! * [`TxQueue`] holds one VC's outgoing buffers (any `B: AsRef<[u8]>`) and produces their
//!   cells one at a time, straight from the buffers (natm-wire's
//!   [`Segmenter`](natm_wire::aal5::Segmenter), paused between cells), handing each buffer
//!   back when its last cell is out.
//!
//! What this crate is not: it does not check the HEC (the link does, with natm-wire's
//! `HecReceiver`), does not answer OAM (it hands OAM cells up), does not decide when a cell
//! may be sent (the shaper of natm-traffic does), and does no I/O. It is pure: no clock (time
//! is an argument), no randomness, no `unsafe`, `no_std` with `alloc`.
//!
//! Call contract (sans-IO, STYLE practice 2): on the receive side `handle_cell(now, cell)`,
//! then drain `poll_event()`, then wait until `poll_timeout()` and call
//! `handle_timeout(now)`; on the transmit side `send(buffer)`, `next_cell(&mut cell)` per
//! cell slot, and `poll_completion()` for the buffers. Nothing panics on any cell bytes or
//! on any caller input: bad configurations and unknown VCs are typed errors.
//!
//! # Why delivered SDUs are owned buffers
//!
//! [`Event::Sdu`] hands the application a `Vec<u8>` of exactly the SDU, rather than lending
//! a slice of the reassembly buffer. A lent slice would tie every `poll_event` to the next
//! `handle_cell` (the next cell on that VC would overwrite it) and leave no way to queue two
//! SDUs; an owned buffer can wait in the event queue, and its bytes are counted against the
//! buffer limits until it is drained, so "never holds more than the limit" covers undrained
//! data too. It is also the shape of the next step: when the application posts its own
//! buffers, reassembly writes into one of them and the same event hands it back, with no copy.
//! Today the SDU is copied once out of the VC's reassembly buffer (a few ns per cell at
//! 1,500-byte SDUs; see the benchmark).
//!
//! # Example
//!
//! ```
//! use natm_aal::{Event, Receiver, ReceiverConfig, TxConfig, TxQueue, VcConfig};
//! use natm_core::{HeaderFormat, Instant, VcId};
//!
//! let vc = VcId::uni(1, 100).unwrap();
//! let mut tx: TxQueue<Vec<u8>> = TxQueue::new(vc, HeaderFormat::Uni, TxConfig::aal5(9180)).unwrap();
//! let mut rx = Receiver::new(ReceiverConfig::default());
//! rx.open_vc(vc, VcConfig::aal5(9180)).unwrap();
//!
//! tx.send(b"hello, natm".to_vec()).unwrap();
//! let mut cell = [0u8; 53];
//! while tx.next_cell(&mut cell) {
//!     rx.handle_cell(Instant::ZERO, &cell);
//! }
//! assert_eq!(tx.poll_completion(), Some(b"hello, natm".to_vec())); // the buffer comes back
//! assert_eq!(
//!     rx.poll_event(),
//!     Some(Event::Sdu { vc, sdu: b"hello, natm".to_vec() })
//! );
//! assert_eq!(rx.vc_counters(vc).unwrap().delivered, 1);
//! ```
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod rx;
pub mod tx;

#[cfg(test)]
mod props;

pub use rx::{
    CellKind, DEFAULT_REASSEMBLY_TIMEOUT, Discard, Event, OpenError, Receiver, ReceiverConfig,
    ReceiverCounters, UnknownVc, VcConfig, VcCounters,
};
pub use tx::{SendError, TxConfig, TxConfigError, TxCounters, TxQueue};

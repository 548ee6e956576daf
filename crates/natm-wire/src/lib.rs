//! ATM wire formats, as zero-copy views and parsed representations.
//!
//! Every format follows smoltcp's `wire` pattern: a view type over a byte buffer with
//! `new_unchecked`, `new_checked`, getters and setters, and a parsed representation with
//! `parse`/`emit`. Parse untrusted bytes with `new_checked`: then no getter can panic. Build
//! outgoing bytes with `new_unchecked` over a buffer you sized; never use `new_checked` on an
//! emission buffer.
//!
//! * [`cell`]: the 53-byte cell, UNI and NNI headers, PTI/CLP, HEC and the I.432 receiver.
//! * [`aal5`]: the AAL5 CPCS-PDU (I.363.5): trailer, CRC-32, receive rules, segmentation.
//! * [`oam`]: OAM F4/F5 cells (I.610): AIS, RDI, continuity check, loopback, CRC-10.
//! * [`rm`]: the ABR rate format of RM cells.
//! * [`llc`]: RFC 2684 encapsulations (LLC/SNAP routed and bridged, VC-mux).
//! * [`atmarp`]: RFC 2225 ATMARP packets.
//! * [`atmtcp`]: linux-atm's atmtcp framing (8-byte header, text control on VC 0.0).
//! * [`sscop`]: SSCOP PDUs (Q.2110), the signalling AAL's trailer-coded PDUs.
//! * [`q2931`]: UNI 3.1 / 4.0 signalling messages and IEs, and their mapping to natm QoS.
//!
//! ```
//! use natm_core::VcId;
//! use natm_wire::aal5::{Pdu, Segmenter, MAX_SDU};
//!
//! // Segment an SDU into cells on VC 1.100, then check the PDU its payloads make.
//! let vc = VcId::uni(1, 100).unwrap();
//! let cells: Vec<[u8; 53]> = Segmenter::uni(vc, b"hello").unwrap().collect();
//! assert_eq!(&cells[0][..5], &[0x00, 0x10, 0x06, 0x42, 0x40]); // PTI 001: last cell
//!
//! let pdu = Pdu::new_checked(&cells[0][5..]).unwrap();
//! assert_eq!(pdu.check(MAX_SDU), Ok(5));
//! assert_eq!(pdu.sdu(), b"hello");
//! ```
//!
//! Reassembly (per-VC state, timers, buffers) is natm-adapter's.
//!
//! This crate is pure: no I/O, clocks or randomness. It builds without `std` when the
//! default `std` feature is off (then the AAL5 CRC uses a table instead of carry-less
//! multiplication).
#![cfg_attr(not(any(test, feature = "std")), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod aal5;
pub mod atmarp;
pub mod atmtcp;
pub mod cell;
pub mod crc32;
pub mod llc;
pub mod oam;
pub mod q2931;
pub mod rm;
pub mod sscop;

pub use aal5::Segmenter;
pub use cell::{CELL_LEN, Cell, CellHeader, HEADER_LEN, HecReceiver, HecVerdict, PAYLOAD_LEN, Pti};
pub use oam::{OamFlow, OamRepr};

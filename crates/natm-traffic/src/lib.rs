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
//! * [`sched`]: the cell scheduler and shaper of one link: CBR and rt-VBR from a timing
//!   wheel, then nrt-VBR, then UBR by weighted round robin, every VC shaped to its contract
//!   at CDVT 0.
//! * [`smooth`]: packet-level smoothing, an SDU queue drained by a leaky bucket.
//! * [`discard`]: early and partial packet discard (EPD/PPD) for queues of AAL5 cells.
//! * [`wrr`]: weighted round robin over queues of work units (a host's channels, a
//!   transport task's channels), so one bulk queue cannot starve a weighted one.
//! * `mutants` (test-only feature `mutants`): planted bugs for natm-sim's meta-test.
//!
//! This crate is pure: no I/O, no clocks, no randomness, no `unsafe`, and it builds without
//! `std`. Every time-dependent call takes `now` ([`Instant`](natm_core::Instant), u64 ns)
//! from the caller; nothing here reads a clock. It does not touch cells' bytes: the caller
//! sets the CLP bit of a cell the policer tags, and makes each cell the scheduler says to
//! send.
//!
//! ```
//! use natm_core::{Instant, PhyRate, Qos};
//! use natm_traffic::cac::{Cac, CacConfig};
//! use natm_traffic::policer::{Conformance, Policer, Verdict};
//!
//! // atm-facts §4.3: PCR 1000, SCR 250, MBS 10 on an OC-3c link.
//! let qos: Qos = "vbr:pcr=1000,scr=250,mbs=10".parse().unwrap();
//! let mut upc = Policer::from_params(None, &qos.tx, PhyRate::OC3.cells_per_s()).unwrap();
//! assert_eq!(upc.definition(), Conformance::Vbr1);
//! let ms = |k: u64| Instant::from_nanos(k * 1_000_000);
//! // A back-to-back burst at PCR: 10 cells pass, the 11th is discarded.
//! assert!((0..10).all(|k| upc.police(ms(k), false) == Verdict::Pass));
//! assert_eq!(upc.police(ms(10), false), Verdict::Discard);
//!
//! let mut cac = Cac::new(CacConfig {
//!     link: "sw0:1".into(),
//!     capacity: PhyRate::OC3.cells_per_s(),
//!     buffer_cells: 0,
//!     max_ubr: 16,
//! });
//! let h = cac.admit(&qos.tx).unwrap(); // no buffer: VBR is booked at its PCR
//! assert_eq!(cac.reserved_vbr(), 1000);
//! assert_eq!(cac.release(h).unwrap().cells_per_s, 1000);
//! ```
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod cac;
pub mod discard;
pub mod gcra;
#[cfg(feature = "mutants")]
pub mod mutants;
pub mod policer;
pub mod sched;
pub mod smooth;
pub mod wrr;

//! natm's shared vocabulary: the types every other crate speaks.
//!
//! This crate is pure: no I/O, no clocks, no randomness, no `unsafe`. It builds without `std`
//! (with `alloc`), like every protocol core in natm.
//!
//! * [`time`]: [`Instant`] and [`Duration`] in nanoseconds. Time is always passed in by the
//!   caller; nothing here reads a clock.
//! * [`id`]: range-checked [`Vpi`], [`Vci`], [`VcId`] (which parses `vpi.vci`) and [`Itf`]
//!   newtypes, with the UNI and NNI limits of ITU-T I.361.
//! * [`qos`]: [`Qos`] (linux-atm's `struct atm_qos`) with the text form of libatm's
//!   `text2qos`/`qos2text` (qos(7)); a peak cell rate is a [`Pcr`].
//! * [`addr`]: PVC and SVC addresses ([`AtmAddr`]) with the text form of libatm's
//!   `text2atm`/`atm2text`.
//! * [`rate`]: a link's [`LineRate`] (OC-3c, a number of cells/s or unlimited) and the named
//!   physical layers' [`PhyRate`]s.
//! * [`idle`]: a daemon's [`IdleWait`] (adaptive, poll, yield).
//! * [`slotmap`]: [`SlotMap`](slotmap::SlotMap), the deterministic `u32` → slot table behind
//!   the per-cell VC lookups.
//!
//! With the `serde` feature, [`VcId`], [`Qos`] and [`IdleWait`] are read and written as their
//! text forms (daemons' configuration files, natm-proto's messages).
//!
//! What it is not: no formats on the wire (natm-wire), no traffic management (natm-traffic).
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod addr;
pub mod id;
pub mod idle;
mod planted;
pub mod qos;
pub mod rate;
#[cfg(feature = "serde")]
mod serde_text;
pub mod slotmap;
pub mod time;

pub use addr::{Aesa, AtmAddr, E164, PvcAddr, Sel, SvcAddr};
pub use id::{HeaderFormat, IdError, Itf, VcId, VcIdParseError, Vci, Vpi};
pub use idle::{IdleWait, UnknownIdleWait};
pub use qos::{Aal, Pcr, Qos, TrafficClass, TrafficParams};
pub use rate::{LineRate, PhyRate};
pub use time::{Duration, Instant};

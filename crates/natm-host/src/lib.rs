//! natm's host side: the runtime glue that runs the pure adapter model
//! ([`natm_adapter::Adapter`]) between an application's shared-memory channel
//! ([`natm_nic::channel`]) and a link ([`natm_link::CellLink`]).
//!
//! * [`driver`]: [`Driver`], one adapter between one channel and one link, polled.
//!
//! The protocol work is in the pure crates; this crate only moves descriptors, cells and
//! completions between them and reads the clock. Issue 5's host daemon builds on it.

pub mod driver;

pub use driver::{Driver, DriverCounters, DriverError, Progress};

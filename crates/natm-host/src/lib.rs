//! natm's host side: the host daemon and the runtime glue that runs the pure adapter
//! model ([`natm_adapter::Adapter`]) between applications' shared-memory channels
//! ([`natm_nic::channel`]) and a link ([`natm_link::CellLink`]).
//!
//! * [`hostd`]: the host daemon: one data-path loop that owns the host's one link and
//!   every application's channels (one adapter per channel), and the channel manager on
//!   a Unix socket (open, close, OAM loopback, status; clean-up when an application dies;
//!   link loss and reconnection).
//! * [`loopback`]: [`loopback::LoopLink`], a link that returns every cell to its sender.
//! * [`proto`]: the daemon's socket protocol, shared with the `natm` API crate and the CLI.
//! * [`driver`]: [`Driver`], one adapter between one channel and one link, polled; and
//!   [`LinkSide`], its link half, for an adapter over buffers of its own (the `natm`
//!   crate's lane path).
//!
//! The protocol work is in the pure crates; this crate only moves descriptors, cells and
//! completions between them, reads the clock and owns the sockets.

pub mod driver;
pub mod hostd;
pub mod loopback;
pub mod proto;

pub use driver::{Driver, DriverCounters, DriverError, LinkSide, Progress};

//! natm's measurement engines: the experiments behind `natm perf` (and the figures of
//! `natm demo`), each a typed plan in and a typed report out.
//!
//! # What it is
//!
//! One module per experiment ([`rr`], [`stream`], [`channel`] for `natm perf transport`, …). Each has a `Plan` (what to measure,
//! already checked: sizes, durations, CPUs, transports), a serde-serialisable `Report`
//! (what was measured, the shape of `natm perf … --json`), and
//! `run(&Plan) -> Result<Report, Error>`. The engines own the threads, the CPU pinning, the
//! child processes and the clocks of a measurement; [`stats`] is the one place quantiles,
//! medians and spreads are computed.
//!
//! # What it is not
//!
//! Not a command line: no argument parsing, no printing; that is `natm-cli`, which turns its
//! flags into a plan and prints a report as its table or as JSON. The PNG plots of the
//! reports are drawn here ([`plot`]), into files the caller names. Not a pure crate:
//! it opens sockets and shared memory, spawns threads and processes and reads the clock.
//!
//! # Call contract
//!
//! * A `Plan` is taken as checked: its constructor in the caller rejects bad input with the
//!   caller's own words (a flag's name). An engine given a plan outside the documented
//!   ranges may fail with an [`Error`], never with undefined results.
//! * `run` blocks for the measurement's length (seconds), pins the calling thread when the
//!   plan names CPUs (the pin stays after the call), and joins every thread it started
//!   before it returns, on success and on error.
//! * Engines that start processes (`memory`'s daemons, `wakeup`'s disturbers, the lab of
//!   `isolation`, `calibrate`'s and `paths`' own `natm perf` runs) take the `natm`
//!   executable to run from their plan, and end or wait for every child they started.
//! * [`demo`] holds the network steps of `natm demo` (no plan: each is one call).
//! * The only output is a progress bar on stderr ([`progress`]), drawn only when stderr is
//!   a terminal and the work has lasted a second.

pub mod baseline;
pub mod calibrate;
pub mod calls;
pub mod channel;
pub mod crowding;
pub mod demo;
pub mod forwarding;
pub mod histo;
pub mod isolation;
pub mod kernel;
pub mod link;
pub mod memory;
pub mod paths;
pub mod plot;
pub mod progress;
pub mod rr;
pub mod stats;
pub mod stream;
pub mod switch;
pub mod transport;
pub mod wakeup;

mod error;

pub use error::Error;

/// Pins the calling thread to `cpu` if one is given. Best effort: a refused pin (a container
/// may forbid it) leaves an unpinned run, which still measures, only more noisily.
pub fn pin(cpu: Option<usize>) {
    if let Some(cpu) = cpu {
        let _ = natm_nic::sched::pin_current_thread(cpu);
    }
}

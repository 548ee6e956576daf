//! The ATLAS event builder on the simulator (issue 6, point 4): a supervisor assigns events
//! to destinations, each destination asks every source for its fragment of the event, the
//! sources answer, and the destination has built the event when all fragments are in.
//!
//! The layer has three parts:
//! - the apps ([`Supervisor`], [`Destination`], [`Source`]): [`App`](crate::app::App)s that see whole SDUs,
//!   share their counts through one [`EbStats`], and can be driven directly with
//!   [`AppIo`](crate::app::AppIo) (no engine needed);
//! - [`EbConfig`] and [`EbReport`]: what a run is asked to do and what it measured, the
//!   report also as the table `natm sim eventbuilder` prints ([`EbReport::table`]);
//! - [`run`]: one switch with a port per host, every VC a PVC cross-connect, the world run
//!   in steps of `sample_interval` with queue depths and link counters sampled in between.
//!
//! It is not a model of the ATLAS trigger/DAQ software: there is no credit-based flow
//! control (least-loaded assignment is the only feedback) and no retransmission: an event
//! that misses a fragment is lost after the timeout. Host CPU time per message is the
//! simulator's ([`HostCosts`](crate::app::HostCosts), from a calibration), not the apps'.
//!
//! VCs (VPI 0 everywhere; VCI 32 + the peer's index on each host link):
//! - supervisor: `0.(32+d)` to destination `d`;
//! - destination: `0.32` to the supervisor, `0.(33+s)` to source `s`;
//! - source: `0.(32+d)` to destination `d`.
//!
//! Messages (integers big-endian):
//! - assignment, supervisor → destination: event number (8 bytes), the supervisor's send
//!   time in ns (8 bytes);
//! - request, destination → source: event number (8 bytes);
//! - fragment, source → destination: `fragment` bytes, the event number in the first 8;
//! - done, destination → supervisor: event number (8 bytes), then 1 = built, 2 = timed out.
//!
//! Accounting: every event the supervisor assigns ends as exactly one [`Outcome`]: built
//! (all fragments in before `assignment time + timeout`), timed out (the destination gave
//! up at that time), unanswered (no done reached the supervisor within twice the timeout,
//! and the destination had not decided either: the assignment was lost), or still pending
//! when the run stopped. Latency is build time − the supervisor's assignment send time.

mod apps;
mod config;
mod render;
mod report;
mod run;

use natm_core::{Duration, VcId, Vci};

pub use apps::{Destination, EbStats, Outcome, Source, Supervisor};
pub use config::{Arrivals, EbConfig, EbError, Policy};
pub use report::{
    Bucket, ConfigEcho, CostsEcho, Drops, EbReport, EventCounts, Latency, LinkOccupancy,
    QueueOccupancy, QueueSample,
};
pub use run::{destination_port, port_name, run, source_port, supervisor_port};

/// The first VCI the event builder uses on every host link.
pub const FIRST_VCI: u16 = 32;
/// Bytes of the event number at the start of every message.
pub const EVENT_BYTES: usize = 8;
/// Source–destination pairs (PVCs) one run may have: 1024 × 1024.
pub const MAX_PAIRS: usize = 1 << 20;
/// Length of an assignment SDU.
pub const ASSIGNMENT_LEN: usize = 16;
/// Length of a request SDU.
pub const REQUEST_LEN: usize = 8;
/// Length of a done SDU.
pub const DONE_LEN: usize = 9;
const DONE_BUILT: u8 = 1;
const DONE_TIMED_OUT: u8 = 2;
/// Timer token of the supervisor's next assignment (other tokens are event numbers).
const TICK: u64 = u64::MAX;

/// The VC with VCI [`FIRST_VCI`] + `index` on VPI 0.
///
/// The caller keeps `index` within `0..=65535 - 32` (checked by [`EbConfig::validate`]).
pub fn vc(index: usize) -> VcId {
    let vci = (usize::from(FIRST_VCI) + index).min(usize::from(u16::MAX)) as u16;
    VcId {
        vci: Vci::from_u16(vci),
        ..VcId::default()
    }
}

/// The supervisor's VC to destination `d` (and the source's VC to destination `d`).
pub fn to_destination(d: usize) -> VcId {
    vc(d)
}

/// A destination's VC to the supervisor.
pub fn to_supervisor() -> VcId {
    vc(0)
}

/// A destination's VC to source `s`.
pub fn to_source(s: usize) -> VcId {
    vc(1 + s)
}

fn secs(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e9
}

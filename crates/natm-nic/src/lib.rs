//! natm's user-level adapter memory (issue 4): the one natm crate allowed `unsafe`.
//!
//! - [`shm`]: regions of shared memory seen as atomic words, behind the [`shm::SharedMem`]
//!   trait: [`shm::HeapMem`], the in-memory stand-in for tests and the simulator, and
//!   [`memfd::MemfdMem`], memfd + mmap shared between processes.
//! - [`layout`]: the `repr(C)` region header, little-endian, validated when a region is
//!   mapped (a bad header from the other process is a [`layout::LayoutError`]).
//! - [`channel`]: an application's channel to the adapter: transmit descriptor ring,
//!   free receive buffer ring, completion ring, counters and buffers, with buffer
//!   ownership checked on both sides.
//! - [`cells`]: the shared-memory link: a pair of SPSC rings of 53-byte cells, batched.
//! - [`notify`] and [`signal`]: busy polling, adaptive polling, eventfd and real-time
//!   signal notification, with no system call on the fast path.
//! - [`procfs`]: a process's resident memory from `/proc`, for the daemons' status and the
//!   tools that measure them.
//!
//! Where `unsafe` lives: mapping and unmapping ([`memfd`]), viewing the header as bytes
//! ([`layout`]), the signal calls ([`signal`]), and a streaming cell producer's
//! non-temporal stores and store fence ([`cells::CellProducer::set_streaming`]).
//! Everything else reads and writes the region through `AtomicU64`, so a peer that
//! writes anything at any time causes wrong values, never undefined behaviour, and every
//! value from the peer is checked before it is used as an index. The streaming stores are
//! plain writes into slots the producer owns until it publishes them, and it never reads
//! them back: a peer writing the same words at the same time spoils only its own view.

pub mod cells;
pub mod channel;
pub mod layout;
pub mod memfd;
pub mod notify;
pub mod procfs;
mod ring;
pub mod sched;
pub mod shm;
pub mod signal;

pub use ring::RingFault;

#[cfg(test)]
mod tests;

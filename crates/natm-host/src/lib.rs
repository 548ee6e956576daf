//! natm's host daemon: the real-time driver of natm-host-core's [`natm_host_core::Host`]
//! (admission, demultiplexing, transmit order and OAM live there, shared with the
//! simulator), between applications' shared-memory channels ([`natm_nic::channel`]),
//! the channel manager's Unix socket (natm-proto's [`natm_proto::host`] protocol) and a link
//! ([`natm_link::CellLink`]).
//!
//! * [`hostd`]: the daemon: one loop that owns the host's one link and every application's
//!   channels (one adapter per channel), and the channel manager (open, close, OAM
//!   loopback, status; clean-up when an application dies; link loss and reconnection).
//! * [`loopback`]: [`loopback::LoopLink`], a link that returns every cell to its sender.
//!
//! What it is not: the protocol logic (natm-host-core and the pure crates), the protocol's
//! vocabulary (natm-proto, which the `natm` API uses without this crate), nor the adapter's
//! link driver (natm-link's [`natm_link::driver`], shared with the `natm` lane path). This
//! crate moves descriptors, cells and completions between them, reads the clock and owns
//! the sockets.

pub mod hostd;
pub mod loopback;

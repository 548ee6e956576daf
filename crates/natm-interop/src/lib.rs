//! natm's interoperability harness for linux-atm's `atmsigd` (Debian atm-tools 2.5.1), run
//! unmodified under `LD_PRELOAD` of `tools/atm_socket_shim.c`.
//!
//! What it is: test support that starts atmsigd in a private directory with its signalling
//! VC 0.5 on two FIFOs of framed SDUs and its "kernel" on a UNIX datagram socket
//! ([`atmsigd`]), speaks that kernel-side protocol (`struct atmsvc_msg`, [`kernel`]) so a
//! test can make atmsigd listen, accept, place and clear calls, and drives a natm signalling
//! entity against it in real time ([`atmsigd::AtmSigd::pump`]). [`vectors`] holds the bytes
//! atmsigd was seen to send.
//!
//! What it is not: a pure crate. It runs processes, FIFOs, sockets and threads, and reads the
//! wall clock (in one place, [`atmsigd::AtmSigd::now`]). No protocol logic lives here; the
//! natm side under test is `natm-sig`'s `Signalling`.
//!
//! The tests are in `tests/atmsigd.rs`; they skip when atmsigd or `cc` is missing unless
//! `NATM_REQUIRE_ATMSIGD=1` (set by `scripts/test`).

pub mod atmsigd;
pub mod kernel;
pub mod vectors;

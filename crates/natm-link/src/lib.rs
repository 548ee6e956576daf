//! Real links for natm (issue 4).
//!
//! * [`CellLink`]: the one trait for links that carry 53-byte cells, which the adapter and
//!   the switch drive. [`udp::UdpLink`] implements it (cells batched in datagrams); the
//!   shared-memory ring pair of natm-nic is meant to implement it too (see the trait doc).
//! * [`atmtcp::AtmtcpLink`]: TCP in linux-atm's atmtcp framing. atmtcp carries whole AAL
//!   SDUs per VC, not cells, so this is a frame-level endpoint with its own API (SDUs in,
//!   [`atmtcp::Event`]s out), interworking with linux-atm's `atmtcp` program.
//!
//! This is a driver crate: it owns sockets and reads the clock. No `unsafe`.

pub mod atmtcp;

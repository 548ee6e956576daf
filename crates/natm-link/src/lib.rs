//! Real links for natm (issue 4).
//!
//! * [`CellLink`]: the one trait for links that carry 53-byte cells, which the adapter and
//!   the switch drive (non-blocking batch send and receive, blocking forms with a timeout,
//!   an fd for epoll, counters). [`udp::UdpLink`] implements it, cells batched in datagrams,
//!   and [`shm::ShmLink`], natm-nic's shared-memory ring pair between threads or processes.
//! * [`emulated::Emulated`]: any `CellLink` behind an emulated line (natm-netem): a line
//!   rate paced on the real clock, seeded loss, bit errors and delay, with back-pressure.
//! * [`atmtcp::AtmtcpLink`]: TCP in linux-atm's atmtcp framing. atmtcp carries whole AAL
//!   SDUs per VC, not cells, so this is a frame-level endpoint with its own API (SDUs in,
//!   [`atmtcp::Event`]s out) that interworks with linux-atm's `atmtcp` program.
//! * [`tcpcell::TcpCellLink`]: a `CellLink` over TCP, one atmtcp frame per cell as Linux's
//!   atmtcp driver carries an AAL0 cell.
//! * [`endpoint::LinkConfig`]: a link as the daemons' TOML names it (shm, udp or tcp, with
//!   rate and impairments), made by listening (switch side) or connecting (host side).
//! * [`clock::Epoch`]: the one conversion between the real clock and the pure cores' time.
//! * [`driver`]: [`driver::Driver`], one natm-adapter between one application channel and
//!   one link, polled (hostd's channels, `natm perf link`); and [`driver::LinkSide`], its
//!   link half, for an adapter over buffers of its own (the `natm` crate's lane path).
//!
//! This is a driver crate: it owns sockets and reads the clock. No `unsafe` (`poll(2)` and
//! SCM_RIGHTS come from rustix, shared memory from natm-nic).

pub mod atmtcp;
pub mod cell;
pub mod clock;
pub mod driver;
pub mod emulated;
pub mod endpoint;
pub mod lane;
pub mod shm;
pub mod tcpcell;
pub mod udp;

pub use cell::{CELL_LEN, CellBytes, CellLink, LinkCounters};

//! natm's daemon socket protocols as types, shared by the daemons and their clients.
//!
//! A protocol here is its messages (serde types) and their encoding on the wire; for the
//! host protocol also the framed reads and writes on a Unix socket that both ends share
//! (descriptors passed with SCM_RIGHTS). No threads, clocks or daemon state. The daemon that serves a protocol and the tools
//! that speak to it both depend on this crate, so neither reaches into the other's
//! internals for the vocabulary, and a message is defined once.
//!
//! * [`switchd`]: the switch daemon's management socket (JSON lines): [`switchd::Request`],
//!   [`switchd::Response`] and the status it reports.
//! * [`host`]: the host daemon's channel-manager socket (framed JSON control messages and
//!   data frames, with the channel descriptors passed as SCM_RIGHTS): [`host::Request`],
//!   [`host::Response`], and the framing and descriptor passing both ends use.

#![forbid(unsafe_code)]

pub mod host;
pub mod switchd;

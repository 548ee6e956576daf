//! One module per `natm` subcommand.

pub mod aal5;
pub mod addr;
pub mod admit;
pub mod atmtcp;
pub mod demo;
pub mod dump;
pub mod perf;
pub mod qos;
pub mod qos_check;

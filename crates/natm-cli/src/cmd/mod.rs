//! One module per `natm` subcommand.

pub mod aal5;
pub mod addr;
pub mod admit;
pub mod atmtcp;
pub mod call;
pub mod capture;
pub mod daemon;
pub mod demo;
pub mod dump;
pub mod lab;
pub mod listen;
pub mod perf;
pub mod ping;
pub mod qos;
pub mod qos_check;
pub mod sim;
pub mod sim_eventbuilder;
pub mod stat;
pub mod transfer;

//! One module per `natm` subcommand.

pub mod aal5;
pub mod dump;

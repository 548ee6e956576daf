//! One module per `natm` subcommand.

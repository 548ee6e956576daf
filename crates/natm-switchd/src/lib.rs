//! natm's switch daemon (issue 5). Being written.

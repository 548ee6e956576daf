//! natm's user-level adapter memory (issue 4): being written.

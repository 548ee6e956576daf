//! natm's deterministic simulator (issue 6).

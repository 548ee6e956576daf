//! natm's application API (issue 5). Being written.

//! Real links for natm (issue 4): being written.

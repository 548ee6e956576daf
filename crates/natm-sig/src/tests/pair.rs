//! The user-network pair harness (below).

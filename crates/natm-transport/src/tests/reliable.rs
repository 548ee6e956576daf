//! Reliable state × event tests.

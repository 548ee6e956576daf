//! SD throughput between two SSCOP endpoints in virtual time (filled in with the machine).
fn main() {}

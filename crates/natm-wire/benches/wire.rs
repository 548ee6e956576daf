//! Wire-format benchmarks (filled in with the formats).
fn main() {}

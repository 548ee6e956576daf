//! What the CLI tests share: run `natm` as a user would and read what it printed.

use std::process::{Command, Output};

/// Runs the `natm` binary built for this test with `args`.
pub fn natm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_natm"))
        .args(args)
        .output()
        .expect("natm runs")
}

/// Its standard output, as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("natm prints UTF-8")
}

/// Its standard error, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("natm prints UTF-8")
}

//! The engines' progress bar: on stderr, shown only once its work has lasted a second, and
//! only when stderr is a terminal (so a piped or tested run prints nothing).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar on stderr that appears only once its work has lasted a second, and only
/// when stderr is a terminal.
pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    shown: bool,
    terminal: bool,
}

impl Progress {
    /// A bar of `len` units, labelled `what`.
    pub fn new(len: u64, what: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:40}] {percent}% ({eta})") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(what.to_string());
        Progress {
            bar,
            start: Instant::now(),
            shown: false,
            terminal: std::io::stderr().is_terminal(),
        }
    }

    /// Adds `n` units of work done.
    pub fn inc(&mut self, n: u64) {
        self.bar.inc(n);
        if !self.shown && self.terminal && self.start.elapsed() > Duration::from_secs(1) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
    }

    /// Relabels the bar.
    pub fn set_message(&self, what: String) {
        self.bar.set_message(what);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

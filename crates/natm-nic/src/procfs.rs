//! A process's memory from `/proc/<pid>/status` (Linux): the one place natm reads it.
//!
//! [`resident_bytes`] is `VmRSS` (hostd's and switchd's `status`, `natm perf memory` on
//! another process) and [`peak_resident_bytes`] is `VmHWM` (`natm sim eventbuilder`).
//! Both lines count kB; the functions answer in bytes.

use std::io;

/// Why a memory figure could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// The status file could not be read (no such process, no `/proc`).
    #[error("{path}: {source}")]
    Read {
        /// `/proc/self/status` or `/proc/PID/status`.
        path: String,
        /// What the read said.
        #[source]
        source: io::Error,
    },
    /// The file has no such line, or not a number of kB that fits a `u64` in bytes.
    #[error("{path}: no {field} line in kB")]
    NoField {
        /// `/proc/self/status` or `/proc/PID/status`.
        path: String,
        /// The line wanted, e.g. `VmRSS`.
        field: &'static str,
    },
}

/// The resident set (`VmRSS`) of process `pid` (`None`: this process), in bytes.
pub fn resident_bytes(pid: Option<u32>) -> Result<u64, StatusError> {
    status_bytes(pid, "VmRSS")
}

/// The peak resident set (`VmHWM`) of process `pid` (`None`: this process), in bytes.
pub fn peak_resident_bytes(pid: Option<u32>) -> Result<u64, StatusError> {
    status_bytes(pid, "VmHWM")
}

fn status_bytes(pid: Option<u32>, field: &'static str) -> Result<u64, StatusError> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_string(),
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => kb_line_bytes(&text, field).ok_or(StatusError::NoField { path, field }),
        Err(source) => Err(StatusError::Read { path, source }),
    }
}

/// The `field:` line of a status text (`VmRSS:\t  1234 kB`), in bytes.
fn kb_line_bytes(status: &str, field: &str) -> Option<u64> {
    let rest = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?;
    let mut words = rest.split_whitespace();
    let kb: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => kb.checked_mul(1024),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kb_line_is_read_in_bytes_and_a_bad_one_is_none() {
        let status = "Name:\tx\nVmHWM:\t  2000 kB\nVmRSS:\t  1234 kB\n";
        assert_eq!(kb_line_bytes(status, "VmRSS"), Some(1234 * 1024));
        assert_eq!(kb_line_bytes(status, "VmHWM"), Some(2000 * 1024));
        assert_eq!(kb_line_bytes(status, "VmSwap"), None);
        assert_eq!(kb_line_bytes("VmRSSx:\t1 kB\n", "VmRSS"), None);
        assert_eq!(
            kb_line_bytes("VmRSS:\t18446744073709551615 kB\n", "VmRSS"),
            None
        );
        assert_eq!(kb_line_bytes("VmRSS:\tlots kB\n", "VmRSS"), None);
        assert_eq!(kb_line_bytes("VmRSS:\t12\n", "VmRSS"), None);
        assert_eq!(kb_line_bytes("VmRSS:\n", "VmRSS"), None);
        assert_eq!(kb_line_bytes("", "VmRSS"), None);
    }

    #[test]
    fn this_process_has_a_resident_set() {
        let rss = resident_bytes(None).unwrap();
        assert!(rss > 0);
        assert!(peak_resident_bytes(None).unwrap() >= rss / 2);
        assert_eq!(
            resident_bytes(Some(std::process::id())).map(|b| b > 0).ok(),
            Some(true)
        );
    }

    #[test]
    fn no_such_process_names_the_file() {
        // PIDs are below 2^22 on Linux.
        let e = resident_bytes(Some(u32::MAX)).unwrap_err();
        assert!(
            e.to_string().starts_with("/proc/4294967295/status: "),
            "{e}"
        );
    }
}

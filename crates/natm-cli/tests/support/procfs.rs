//! What the lab tests read of a process in /proc.

/// How many memfds process `pid` holds open (0 when it is gone).
pub fn memfds(pid: u64) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    std::fs::read_link(e.path())
                        .is_ok_and(|t| t.to_string_lossy().starts_with("/memfd:"))
                })
                .count()
        })
        .unwrap_or(0)
}

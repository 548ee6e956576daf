//! The table of `natm perf memory`: [`Report::table`].

use std::fmt::Write as _;

use super::Report;

impl Report {
    /// The report as the table `natm perf memory` prints (one line per row, each ending in a
    /// newline).
    pub fn table(&self) -> String {
        let r = self;

        let mut t = String::new();
        let _ = writeln!(
            t,
            "{:<36} {:>12} {:>12} {:>8}",
            "memory", "goal", "figure", ""
        );
        for l in &r.lines {
            let _ = writeln!(
                t,
                "{:<36} {:>12} {:>12} {:>8}",
                l.what,
                l.goal_bytes
                    .map_or_else(|| "-".into(), |g| format!("<= {}", size(g))),
                size(l.bytes),
                match l.met {
                    Some(true) => "met",
                    Some(false) => "not met",
                    None => "",
                }
            );
        }
        let _ = writeln!(
            t,
            "per cross-connect (RSS difference / {}): {:.0} B; per hostd channel (/ {}): {:.0} B",
            r.xcs, r.switch_rss_per_xc, r.channels, r.hostd_rss_per_channel
        );
        let _ = writeln!(
            t,
            "switchd RSS read from /proc before any status request ({} cross-connects made over \
             the management socket in {:.2} s); its status's `memory` is read after the reply \
             listing every connection is built, so it counts that reply",
            r.xcs, r.switch_connect_seconds
        );
        t
    }
}

/// Bytes as MiB, KiB or bytes.
fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
    } else if bytes >= 1 << 10 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_in_units() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(2048), "2.0 KiB");
        assert_eq!(size(64 << 20), "64.0 MiB");
    }
}

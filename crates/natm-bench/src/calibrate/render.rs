//! The table of `natm perf calibrate`: [`Report::table`].

use std::fmt::Write as _;

use super::Report;

impl Report {
    /// The report as the table `natm perf calibrate` prints (one line per row, each ending
    /// in a newline).
    pub fn table(&self) -> String {
        let r = self;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "natm perf calibrate: {} ({:.1} s); CPU time per SDU, median of batches",
            r.measured_on, r.seconds
        );
        let _ = writeln!(
            s,
            "{:>6} {:>6} {:>8} {:>10} {:>10} {:>12} {:>12} {:>10} {:>10}",
            "size",
            "batch",
            "batches",
            "send ns",
            "recv ns",
            "send resid",
            "recv resid",
            "tpdu tx",
            "tpdu rx"
        );
        for row in &r.rows {
            let _ = writeln!(
                s,
                "{:>6} {:>6} {:>8} {:>10.1} {:>10.1} {:>12.1} {:>12.1} {:>10.1} {:>10.1}",
                row.size,
                row.batch,
                row.batches,
                row.send_ns,
                row.recv_ns,
                row.send_residual_ns,
                row.recv_residual_ns,
                row.tpdu_send_ns,
                row.tpdu_recv_ns
            );
        }
        let _ = writeln!(
            s,
            "send    = {} ns + {} ps/byte (rms residual {:.1} ns)",
            r.send_fixed_ns, r.send_per_byte_ps, r.send_rms_residual_ns
        );
        let _ = writeln!(
            s,
            "receive = {} ns + {} ps/byte (rms residual {:.1} ns)",
            r.recv_fixed_ns, r.recv_per_byte_ps, r.recv_rms_residual_ns
        );
        let _ = writeln!(
            s,
            "transport per TPDU frame: send {} ns + {} ps/byte, receive {} ns + {} ps/byte \
             (natm-transport's own work, beside the above)",
            r.tpdu_send_fixed_ns,
            r.tpdu_send_per_byte_ps,
            r.tpdu_recv_fixed_ns,
            r.tpdu_recv_per_byte_ps
        );
        let _ = writeln!(
            s,
            "wakeup  = {} ns (eventfd mode, median of {} samples)",
            r.wakeup_ns, r.wakeup_samples
        );
        let _ = writeln!(
            s,
            "(CPU clock read costs {} ns, taken off every batch)",
            r.clock_overhead_ns
        );
        if let Some(out) = &r.out {
            let _ = writeln!(s, "written to {out}");
        }
        s
    }
}

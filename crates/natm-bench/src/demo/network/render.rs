//! `natm demo`'s text: the narration of each step ([`Step::narration`]), the table
//! ([`Outcome::table`]) and its JSON ([`Outcome::json`]), so that every front end tells the
//! demo alike.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::{Outcome, Plan, RR_SIZE, RR_WARMUP, Row, STREAM_SIZE, Step, UBR_VC, ratios};
use crate::demo::{CBR_VC, Tshark};
use crate::transport::DataPath;

impl Step<'_> {
    /// The lines of explanation of this step of `plan`'s run, each ending in a newline.
    pub fn narration(&self, plan: &Plan) -> String {
        let mut t = String::new();
        let mut line = |s: &str| {
            t.push_str(s);
            t.push('\n');
        };
        let cbr_text = &plan.cbr.0;
        match self {
            Step::LabStarting => {
                line(&format!(
                    "1. The default lab: switch s1, hosts h1 and h2 on shared-memory links at rate {}, in {}",
                    plan.rate,
                    plan.dir.display()
                ));
                if plan.rate == "unlimited" {
                    line(
                        "   (links unpaced, to show what this machine can do; OC-3c's floor is in the table)",
                    );
                }
            }
            Step::LabUp(daemons) => {
                for d in daemons.iter() {
                    line(&format!("   {:<3} {:<6} pid {}", d.name, d.role, d.pid));
                }
            }
            Step::CbrStarting { .. } => {
                line(&format!(
                    "2. A CBR PVC {CBR_VC} ({cbr_text}, UPC {}) added through s1's management socket beside UBR {UBR_VC}",
                    plan.cbr_upc
                ));
                if plan.cbr_upc == "tag" {
                    line(
                        "   (UPC tag: s1's CBR.1 policer has CDVT 0 and cells reach it in batches, so it tags\n    \
                         cells above the PCR with CLP=1 rather than discarding them; --cbr-upc discard shows the loss)",
                    );
                }
            }
            Step::CbrConnected {
                ports: (p1, p2),
                id,
            } => line(&format!(
                "   s1 connected {p1}:{CBR_VC} - {p2}:{CBR_VC} (connection {id})"
            )),
            Step::Hello(text) => line(&format!(
                "   {text} opened on h1 and h2: one SDU h1 -> h2 and one back, both arrived whole"
            )),
            Step::CaptureStarting(p1) => line(&format!(
                "3. Capturing s1's port {p1} (h1's link) during the pings and request/response runs into {}",
                plan.pcap.display()
            )),
            Step::PingsStarting => line(&format!(
                "4. OAM F5 end-to-end loopback from h1, {} request(s) per PVC: h2's daemon answers each cell",
                plan.pings
            )),
            Step::Pinged(text, p) => line(&format!(
                "   {text}: {}/{} replies, RTT min/avg/max {:.1}/{:.1}/{:.1} µs",
                p.received,
                p.sent,
                us(p.min_ns),
                us(p.avg_ns),
                us(p.max_ns)
            )),
            Step::RrStarting(path) => {
                line(&format!(
                    "5. Request/response, {RR_SIZE}-byte requests and responses, {} transactions each (after {RR_WARMUP} unrecorded), h1 -> h2 and back; the kernel's UDP and TCP loopback take turns with natm",
                    plan.rr_count
                ));
                line(&match path {
                    DataPath::Lane => "   natm's applications on their own lanes to s1 (no daemon on the data path), sleeping on eventfds".to_string(),
                    _ => "   natm's applications on hostd's direct path, adaptive wait".to_string(),
                });
            }
            Step::Rr(row) => line(&format!(
                "   {:<15} p50 {:.1} µs, p99 {:.1} µs, {:.0} transactions/s{}",
                row.name,
                us(row.p50_ns.unwrap_or(0)),
                us(row.p99_ns.unwrap_or(0)),
                row.rr_per_sec.unwrap_or(0.0),
                if row.rr_lost > 0 {
                    format!(", {} lost", row.rr_lost)
                } else {
                    String::new()
                }
            )),
            Step::CaptureDone(p1, captured) => line(&format!(
                "   capture stopped: {} cells of s1:{p1} written{}",
                captured.cells,
                if captured.skipped > 0 {
                    format!(", {} damaged lines skipped", captured.skipped)
                } else {
                    String::new()
                }
            )),
            Step::StreamStarting => line(&format!(
                "6. One-way goodput, {STREAM_SIZE}-byte messages for {:.1} s each: natm on both PVCs, then kernel TCP",
                plan.stream_time.as_secs_f64()
            )),
            Step::Stream(row, received, sent) => line(&format!(
                "   {:<15} {:.1} Mbit/s ({received} of {sent} messages arrived)",
                row.name,
                row.stream_bps.unwrap_or(0.0) / 1e6,
            )),
            Step::Policed(p) => line(&format!(
                "   s1's policer on {CBR_VC}: {} cells in, {} tagged CLP=1, {} discarded",
                p.cells_in, p.tagged, p.dropped
            )),
            Step::TsharkStarting => line("7. tshark over the capture"),
            Step::Tshark(Tshark::Missing) => line("   tshark not installed"),
            Step::Tshark(Tshark::Failed(e)) => line(&format!("   tshark failed: {e}")),
            Step::Tshark(Tshark::Decoded { packets, errors }) => line(&format!(
                "   tshark: {packets} packets decoded, {errors} errors"
            )),
            Step::LabDown(stopped, seconds) => line(&format!(
                "8. Lab down: {stopped} daemons stopped, {} removed ({seconds:.1} s in all)",
                plan.dir.display()
            )),
        }
        t
    }
}

impl Outcome {
    /// The table of the run's figures beside the OC-3c floor (`floor_ns`, from
    /// [`crate::demo::oc3_floor_ns`]), its links having run at `rate`; one line per row,
    /// each ending in a newline.
    pub fn table(&self, floor_ns: u64, rate: &str) -> String {
        let rows = &self.rows;
        let mut t = String::new();
        let cell = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        let _ = writeln!(t);
        let _ = writeln!(
            t,
            "{:<16} {:>10} {:>10} {:>10} {:>11} {:>11}  ratio to kernel",
            "", "ping RTT", "rr p50", "rr p99", "rr rate", "stream"
        );
        // On a rated line natm is measured against the line: goodput as a share of the
        // AAL5 ceiling of 8 KiB SDUs at that rate, the round trip beside the floor.
        let ceiling_bps = rate
            .parse::<natm_core::LineRate>()
            .ok()
            .and_then(|r| r.cells_per_s())
            .map(|cps| aal5_ceiling_bps(f64::from(cps), STREAM_SIZE));
        let _ = writeln!(
            t,
            "{:<16} {:>10} {:>10} {:>10} {:>11} {:>11}  {}",
            "",
            "avg µs",
            "µs",
            "µs",
            "trans/s",
            "Mbit/s",
            match ceiling_bps {
                Some(_) => format!("(stream: of the AAL5 ceiling at {rate}; p50 vs the floor)"),
                None => "(p50 vs UDP, stream vs TCP)".into(),
            }
        );
        for r in rows {
            let (p50_ratio, stream_ratio) = ratios(r, rows);
            let ratio = match (r.name.as_str(), ceiling_bps) {
                ("kernel UDP", _) => "reference for p50".to_string(),
                ("kernel TCP", _) => {
                    format!("p50 {}; reference for stream", cell(p50_ratio.map(times)))
                }
                (_, Some(ceiling)) => format!(
                    "stream {}, p50 {}",
                    cell(
                        r.stream_bps
                            .map(|b| format!("{:.1} %", 100.0 * b / ceiling))
                    ),
                    cell(r.p50_ns.map(|n| format!(
                        "{} the floor",
                        times(n as f64 / floor_ns.max(1) as f64)
                    )))
                ),
                (_, None) => format!(
                    "p50 {}, stream {}",
                    cell(p50_ratio.map(times)),
                    cell(stream_ratio.map(times))
                ),
            };
            let _ = writeln!(
                t,
                "{:<16} {:>10} {:>10} {:>10} {:>11} {:>11}  {ratio}",
                r.name,
                cell(r.ping.map(|p| format!("{:.1}", us(p.avg_ns)))),
                cell(r.p50_ns.map(|n| format!("{:.1}", us(n)))),
                cell(r.p99_ns.map(|n| format!("{:.1}", us(n)))),
                cell(r.rr_per_sec.map(|x| format!("{x:.0}"))),
                cell(r.stream_bps.map(|b| format!("{:.1}", b / 1e6))),
            );
        }
        let floor = format!("{:.1}", us(floor_ns));
        let _ = writeln!(
            t,
            "{:<16} {:>10} {:>10} {:>10} {:>11} {:>11}  four OC-3c cell times",
            "OC-3c floor", floor, floor, floor, "", ""
        );
        let _ = writeln!(
            t,
            "\nThe OC-3c floor is what the wire alone takes for a one-cell request and a one-cell answer\n\
             over h1-s1-h2 and back; the links here ran at {rate}. Try: natm lab up, natm ping 0.100,\n\
             natm perf rr, natm capture --port s1:1 (see README.md); natm demo --layers walks the layers."
        );
        t
    }

    /// The table as JSON, with the plan's settings and the capture's and tshark's findings;
    /// `seconds` is the time since the run started.
    pub fn json(&self, plan: &Plan, floor_ns: u64) -> Value {
        let out = self;
        let rows = &out.rows;
        json!({
            "rate": plan.rate,
            "dir": plan.dir,
            "pids": out.pids,
            "daemons_stopped": out.stopped,
            "rr_size": RR_SIZE,
            "stream_size": STREAM_SIZE,
            "oc3_floor_us": floor_ns as f64 / 1e3,
            "cbr": {
                "qos": plan.cbr.0,
                "upc": plan.cbr_upc,
                "policed": out.policed.as_ref().map(|p| json!({
                    "cells_in": p.cells_in, "tagged": p.tagged, "dropped": p.dropped,
                })),
            },
            "rows": rows.iter().map(|r| row_json(r, rows)).collect::<Vec<_>>(),
            "pcap": {
                "path": plan.pcap,
                "cells": out.captured.cells,
                "skipped_lines": out.captured.skipped,
                "tshark": match &out.tshark {
                    Tshark::Missing => Value::Null,
                    Tshark::Failed(e) => json!({ "error": e }),
                    Tshark::Decoded { packets, errors } => json!({ "packets": packets, "errors": errors }),
                },
            },
            "seconds": out.started.elapsed().as_secs_f64(),
        })
    }
}

/// A ratio with two significant digits at least (natm's goodput may be 0.002× TCP's).
fn times(x: f64) -> String {
    let decimals = if x > 0.0 && x < 1.0 {
        (1.0 - x.log10().floor()).clamp(2.0, 6.0) as usize
    } else {
        2
    };
    format!("{x:.decimals$}×")
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

fn row_json(r: &Row, rows: &[Row]) -> Value {
    let (p50_ratio, stream_ratio) = ratios(r, rows);
    json!({
        "name": r.name,
        "ping_us": r.ping.map(|p| json!({
            "sent": p.sent, "received": p.received,
            "min": us(p.min_ns), "avg": us(p.avg_ns), "max": us(p.max_ns), "p50": us(p.p50_ns),
        })),
        "rr_p50_us": r.p50_ns.map(us),
        "rr_p99_us": r.p99_ns.map(us),
        "rr_per_sec": r.rr_per_sec,
        "rr_lost": r.rr_lost,
        "stream_mbit_s": r.stream_bps.map(|b| b / 1e6),
        "rr_p50_vs_kernel_udp": p50_ratio,
        "stream_vs_kernel_tcp": stream_ratio,
    })
}

/// The AAL5 goodput ceiling of `size`-byte SDUs on a line of `cells_per_s`: the SDU's
/// bits per its cells (the 8-byte trailer and the padding included) at the line's cell rate.
fn aal5_ceiling_bps(cells_per_s: f64, size: usize) -> f64 {
    let cells = (size + 8).div_ceil(48);
    cells_per_s * (size * 8) as f64 / cells as f64
}

#[cfg(test)]
mod tests {
    use super::times;

    #[test]
    fn small_ratios_keep_two_significant_digits() {
        assert_eq!(times(2.345), "2.35×");
        assert_eq!(times(0.5), "0.50×");
        assert_eq!(times(0.05), "0.050×");
        assert_eq!(times(0.00213), "0.0021×");
        assert_eq!(times(0.0), "0.00×");
    }

    #[test]
    fn the_aal5_ceiling_counts_the_trailer_and_the_padding() {
        // 8 KiB: 171 cells; at OC-3c's 353,207 cells/s, 135.37 Mbit/s.
        let c = super::aal5_ceiling_bps(353_207.0, 8192);
        assert!((c / 1e6 - 135.37).abs() < 0.01, "{c}");
        // 40 bytes and its trailer fill one cell exactly; 41 take two.
        assert_eq!(super::aal5_ceiling_bps(1000.0, 40), 320_000.0);
        assert_eq!(super::aal5_ceiling_bps(1000.0, 41), 164_000.0);
    }
}

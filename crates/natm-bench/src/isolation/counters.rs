//! The switch's side of `natm perf isolation`: each connection's counters (cells in and
//! out, policed, tagged, dropped in the queues) read from s1's management `status`.

use serde::Serialize;
use serde_json::{Value, json};

use natm_lab::OwnedLab;

use super::{CBR_VC, SWITCH_TIMEOUT, UBR_VC, VBR_VC};
use crate::Error;

/// One connection's switch counters (source to sink), as deltas over a phase.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct ConnCounters {
    /// Cells in at the source's port.
    pub cells_in: u64,
    /// Cells out at the sink's port.
    pub cells_out: u64,
    /// Discarded by the UPC at the source's port.
    pub policed: u64,
    /// Tagged (CLP set) by the UPC.
    pub tagged: u64,
    /// Dropped otherwise: queue full, EPD/PPD, port down.
    pub queue_dropped: u64,
}

impl ConnCounters {
    pub(super) fn plus(self, o: ConnCounters) -> ConnCounters {
        ConnCounters {
            cells_in: self.cells_in + o.cells_in,
            cells_out: self.cells_out + o.cells_out,
            policed: self.policed + o.policed,
            tagged: self.tagged + o.tagged,
            queue_dropped: self.queue_dropped + o.queue_dropped,
        }
    }

    pub(super) fn minus(self, o: ConnCounters) -> ConnCounters {
        ConnCounters {
            cells_in: self.cells_in.saturating_sub(o.cells_in),
            cells_out: self.cells_out.saturating_sub(o.cells_out),
            policed: self.policed.saturating_sub(o.policed),
            tagged: self.tagged.saturating_sub(o.tagged),
            queue_dropped: self.queue_dropped.saturating_sub(o.queue_dropped),
        }
    }
}

/// The three connections' counters from the switch's `status`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SwitchSnap {
    pub(super) cbr: ConnCounters,
    pub(super) vbr: ConnCounters,
    pub(super) ubr: ConnCounters,
}

fn field(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or(0)
}

/// The counters of the connection whose source end is `…:vc`.
fn conn(status: &Value, vc: &str) -> Result<ConnCounters, Error> {
    let missing = || Error::Traffic(format!("the switch's status has no connection {vc}"));
    let conns = status["connections"].as_array().ok_or_else(missing)?;
    let c = conns
        .iter()
        .find(|c| {
            c["a"]
                .as_str()
                .is_some_and(|a| a.ends_with(&format!(":{vc}")))
        })
        .ok_or_else(missing)?;
    let port: u64 = c["a"]
        .as_str()
        .and_then(|a| a.split(':').next())
        .and_then(|p| p.parse().ok())
        .ok_or_else(missing)?;
    // Each source host has its own port, carrying this one connection: the port's policed
    // count is the connection's.
    let policed = status["ports"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["id"].as_u64() == Some(port)))
        .map_or(0, |p| field(&p["counters"], "policed"));
    let d = &c["a_to_b"];
    Ok(ConnCounters {
        cells_in: field(d, "cells_in"),
        cells_out: field(d, "cells_out"),
        policed,
        tagged: field(d, "tagged"),
        queue_dropped: field(d, "dropped").saturating_sub(policed),
    })
}

pub(super) fn switch_snap(lab: &OwnedLab) -> Result<SwitchSnap, Error> {
    let v =
        natm_switchd::client::request(&lab.socket("s1")?, &json!({"op": "status"}), SWITCH_TIMEOUT)
            .map_err(|source| Error::Switchd {
                what: "switch s1 status".into(),
                source,
            })?;
    if v["ok"] != Value::Bool(true) {
        return Err(Error::Traffic(format!(
            "switch s1 status refused: {}",
            v["error"].as_str().unwrap_or("no reason")
        )));
    }
    Ok(SwitchSnap {
        cbr: conn(&v, CBR_VC)?,
        vbr: conn(&v, VBR_VC)?,
        ubr: conn(&v, UBR_VC)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_is_read_from_the_switch_status_by_its_source_vc() {
        let status = json!({
            "ports": [
                {"id": 2, "counters": {"policed": 7}},
                {"id": 4, "counters": {"policed": 0}},
            ],
            "connections": [
                {"a": "2:0.101", "b": "4:0.101",
                 "a_to_b": {"cells_in": 100, "cells_out": 80, "dropped": 20, "tagged": 1}},
            ],
        });
        let c = conn(&status, "0.101").unwrap();
        assert_eq!(
            c,
            ConnCounters {
                cells_in: 100,
                cells_out: 80,
                policed: 7,
                tagged: 1,
                queue_dropped: 13
            }
        );
        assert!(conn(&status, "0.100").is_err());
    }
}

//! The switch's side of `natm perf isolation`: each connection's counters (cells in and
//! out, policed, tagged, dropped in the queues) read from s1's management `status`.

use natm_switchd::client::{Client, SwitchStatus};
use serde::Serialize;

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

/// The counters of the connection whose source end is `…:vc`.
fn conn(status: &SwitchStatus, vc: &str) -> Result<ConnCounters, Error> {
    let missing = || Error::Traffic(format!("the switch's status has no connection {vc}"));
    let c = status
        .connections
        .iter()
        .find(|c| c.a.ends_with(&format!(":{vc}")))
        .ok_or_else(missing)?;
    let port: u16 =
        c.a.split(':')
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(missing)?;
    // Each source host has its own port, carrying this one connection: the port's policed
    // count is the connection's.
    let policed = status
        .ports
        .iter()
        .find(|p| p.id == port)
        .map_or(0, |p| p.counters.policed);
    let d = &c.a_to_b;
    Ok(ConnCounters {
        cells_in: d.cells_in,
        cells_out: d.cells_out,
        policed,
        tagged: d.tagged,
        queue_dropped: d.dropped.saturating_sub(policed),
    })
}

pub(super) fn switch_snap(lab: &OwnedLab) -> Result<SwitchSnap, Error> {
    let v = Client::new(lab.socket("s1")?, SWITCH_TIMEOUT)
        .status()
        .map_err(|source| Error::Switchd {
            what: "switch s1 status".into(),
            source,
        })?;
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
        use natm_switchd::client::{ConnectionStatus, DirCounters, PortCounters, PortStatus, Upc};
        let port = |id, policed| PortStatus {
            id,
            counters: PortCounters {
                policed,
                ..PortCounters::default()
            },
            ..PortStatus::default()
        };
        let status = SwitchStatus {
            ports: vec![port(2, 7), port(4, 0)],
            connections: vec![ConnectionStatus {
                id: "0.1".into(),
                a: "2:0.101".into(),
                b: "4:0.101".into(),
                qos: "ubr".into(),
                category: None,
                upc: Upc::Off,
                aal5: false,
                weight: 1,
                a_to_b: DirCounters {
                    cells_in: 100,
                    cells_out: 80,
                    dropped: 20,
                    tagged: 1,
                    queued: 0,
                },
                b_to_a: DirCounters::default(),
            }],
            ..SwitchStatus::default()
        };
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

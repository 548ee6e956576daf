//! The forwarding engine: the pure switch between real links, one step at a time.
//!
//! A step receives one batch from every port with a link, hands each batch to
//! [`Switch::handle_cells`], runs the switch's timer when due, then for every port sends
//! the cells it still holds from an earlier step (a link may refuse cells when its ring or
//! socket is full) and, only when it holds none, takes a new batch from
//! [`Switch::poll_transmit`]. So a slow link backs cells up into the switch's own
//! per-category queues (where priorities, EPD and the queue limits apply) and no cell a
//! link refused is ever dropped silently: cells held for a link that goes away are counted
//! in [`PortStats::tx_lost`].
//!
//! A link that fails (its peer left) is dropped and its port set down
//! ([`Switch::set_port_up`]), which makes the switch send AIS downstream; a new link on
//! the port sets it up again. The daemon loop ([`crate::run`]) and the benchmark
//! ([`crate::bench`]) both drive this.

use std::time::Instant as StdInstant;

use natm_core::Instant;
use natm_link::clock::Epoch;
use natm_link::endpoint::{EndpointLink, is_peer_gone};
use natm_link::{CELL_LEN, Cell};
use natm_switch::{PortConfig, PortId, Switch, SwitchConfig, SwitchError};

/// Cells moved per port per step at most.
pub const BATCH: usize = 256;

/// What the daemon counts per port beyond the switch's [`natm_switch::PortCounters`].
#[derive(Clone, Debug, Default)]
pub struct PortStats {
    /// Times a link was attached (a host connected).
    pub connects: u64,
    /// Times a link was dropped because it failed.
    pub disconnects: u64,
    /// Cells the switch sent that the link had not taken when it went away.
    pub tx_lost: u64,
    /// The last link error, as text.
    pub last_error: Option<String>,
}

/// One port's link state.
pub struct PortLink {
    /// The port.
    pub id: PortId,
    /// The link, while a peer is attached.
    pub link: Option<Box<dyn EndpointLink>>,
    /// Cells taken from the switch that the link has not accepted yet, from `held_from`.
    held: Vec<Cell>,
    held_from: usize,
    /// Counters.
    pub stats: PortStats,
}

impl PortLink {
    /// Cells held for the link.
    pub fn held(&self) -> usize {
        self.held.len() - self.held_from
    }
}

/// A cell seen on a captured port.
#[derive(Clone, Copy, Debug)]
pub struct Tapped {
    /// The port.
    pub port: PortId,
    /// `true`: sent out of the port; `false`: received on it.
    pub out: bool,
    /// When (the fabric's clock).
    pub at: Instant,
    /// The cell.
    pub cell: Cell,
}

/// The most tapped cells kept between two drains; more are counted, not kept.
pub const TAP_LIMIT: usize = 1 << 16;

/// The switch and its ports' links. See the [module documentation](self).
pub struct Fabric {
    /// The pure switch.
    pub switch: Switch,
    /// Ports in configuration order.
    pub ports: Vec<PortLink>,
    /// The clock the switch is driven on.
    pub epoch: Epoch,
    buf: Vec<Cell>,
    /// Ports whose cells are being captured.
    pub tap_ports: Vec<PortId>,
    /// Captured cells not yet drained.
    pub tapped: Vec<Tapped>,
    /// Captured cells not kept for want of room.
    pub tap_overflow: u64,
}

/// What a step did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// Cells received from links.
    pub received: usize,
    /// Cells links accepted.
    pub sent: usize,
    /// Whether some link still holds refused cells.
    pub holding: bool,
}

impl Fabric {
    /// A fabric with no ports, moving up to [`BATCH`] cells per port per step.
    pub fn new(config: SwitchConfig) -> Fabric {
        Fabric::with_batch(config, BATCH)
    }

    /// A fabric with no ports, moving up to `batch` cells (at least 1) per port per step.
    pub fn with_batch(config: SwitchConfig, batch: usize) -> Fabric {
        Fabric {
            switch: Switch::new(config),
            ports: Vec::new(),
            epoch: Epoch::now(),
            buf: vec![[0u8; CELL_LEN]; batch.max(1)],
            tap_ports: Vec::new(),
            tapped: Vec::new(),
            tap_overflow: 0,
        }
    }

    /// The fabric's present time.
    pub fn now(&self) -> Instant {
        self.epoch.elapsed()
    }

    /// A real instant of the fabric's time.
    pub fn to_std(&self, t: Instant) -> StdInstant {
        self.epoch.to_std(t)
    }

    /// Adds a port, down until a link is attached.
    pub fn add_port(&mut self, id: PortId, config: PortConfig) -> Result<(), SwitchError> {
        self.switch.add_port(id, config)?;
        let now = self.now();
        self.switch.set_port_up(now, id, false)?;
        self.ports.push(PortLink {
            id,
            link: None,
            held: Vec::new(),
            held_from: 0,
            stats: PortStats::default(),
        });
        Ok(())
    }

    /// The index of a port in [`Fabric::ports`].
    pub fn index(&self, id: PortId) -> Option<usize> {
        self.ports.iter().position(|p| p.id == id)
    }

    /// Attaches a link to port `i` and sets the port up.
    pub fn attach(&mut self, i: usize, link: Box<dyn EndpointLink>) {
        let now = self.now();
        let p = &mut self.ports[i];
        p.link = Some(link);
        p.stats.connects += 1;
        // The port exists (it was added through add_port): set_port_up cannot fail.
        let _ = self.switch.set_port_up(now, p.id, true);
    }

    /// Drops port `i`'s link (it failed with `why`) and sets the port down.
    pub fn detach(&mut self, i: usize, why: String) {
        let now = self.now();
        let p = &mut self.ports[i];
        p.link = None;
        p.stats.disconnects += 1;
        p.stats.tx_lost += p.held() as u64;
        p.held.clear();
        p.held_from = 0;
        p.stats.last_error = Some(why);
        let _ = self.switch.set_port_up(now, p.id, false);
    }

    /// Keeps `cells` for the capture clients, up to [`TAP_LIMIT`]; counts the rest.
    fn tap(
        tapped: &mut Vec<Tapped>,
        overflow: &mut u64,
        (port, out, at): (PortId, bool, Instant),
        cells: &[Cell],
    ) {
        let room = TAP_LIMIT.saturating_sub(tapped.len()).min(cells.len());
        tapped.extend(cells[..room].iter().map(|&cell| Tapped {
            port,
            out,
            at,
            cell,
        }));
        *overflow += (cells.len() - room) as u64;
    }

    /// One step at `now`: receive from every link, run the switch, send to every link.
    pub fn step(&mut self, now: Instant) -> Step {
        let mut step = Step::default();
        let mut failed: Vec<(usize, String)> = Vec::new();
        for i in 0..self.ports.len() {
            let p = &mut self.ports[i];
            let Some(link) = p.link.as_mut() else {
                continue;
            };
            match link.recv_cells(&mut self.buf) {
                Ok(0) => {}
                Ok(n) => {
                    step.received += n;
                    let id = p.id;
                    self.switch.handle_cells(now, id, &self.buf[..n]);
                    if self.tap_ports.contains(&id) {
                        let (tapped, overflow) = (&mut self.tapped, &mut self.tap_overflow);
                        Self::tap(tapped, overflow, (id, false, now), &self.buf[..n]);
                    }
                }
                Err(e) => failed.push((i, link_error(&e))),
            }
        }
        for (i, why) in failed.drain(..) {
            self.detach(i, why);
        }
        if self.switch.poll_timeout().is_some_and(|t| t <= now) {
            self.switch.handle_timeout(now);
        }
        for i in 0..self.ports.len() {
            let p = &mut self.ports[i];
            let Some(link) = p.link.as_mut() else {
                continue;
            };
            if p.held_from < p.held.len() {
                match link.send_cells(&p.held[p.held_from..]) {
                    Ok(k) => {
                        step.sent += k;
                        p.held_from += k;
                        if p.held_from == p.held.len() {
                            p.held.clear();
                            p.held_from = 0;
                        } else {
                            step.holding = true;
                            continue;
                        }
                    }
                    Err(e) => {
                        failed.push((i, link_error(&e)));
                        continue;
                    }
                }
            }
            let id = p.id;
            let n = self.switch.poll_transmit(now, id, &mut self.buf);
            let p = &mut self.ports[i];
            let Some(link) = p.link.as_mut() else {
                continue;
            };
            let result = if n > 0 {
                link.send_cells(&self.buf[..n])
            } else if link.next_due().is_some_and(|t| t <= StdInstant::now()) {
                // Cells or bytes the link holds leave on their own time.
                link.send_cells(&[])
            } else {
                Ok(0)
            };
            match result {
                Ok(k) => {
                    step.sent += k;
                    if k < n {
                        p.held.extend_from_slice(&self.buf[k..n]);
                        step.holding = true;
                    }
                }
                Err(e) => {
                    // The cells taken from the switch are lost with the link.
                    p.held.extend_from_slice(&self.buf[..n]);
                    failed.push((i, link_error(&e)));
                }
            }
            if n > 0 && self.tap_ports.contains(&id) {
                let (tapped, overflow) = (&mut self.tapped, &mut self.tap_overflow);
                Self::tap(tapped, overflow, (id, true, now), &self.buf[..n]);
            }
        }
        for (i, why) in failed {
            self.detach(i, why);
        }
        step
    }
}

fn link_error(e: &std::io::Error) -> String {
    if is_peer_gone(e) {
        format!("peer gone: {e}")
    } else {
        format!("link error: {e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taps_keep_up_to_the_limit_and_count_the_rest() {
        let (mut tapped, mut overflow) = (Vec::new(), 0);
        let at = Instant::from_nanos(3);
        let cells = vec![[7u8; CELL_LEN]; TAP_LIMIT - 1];
        Fabric::tap(&mut tapped, &mut overflow, (PortId(1), false, at), &cells);
        assert_eq!((tapped.len(), overflow), (TAP_LIMIT - 1, 0));
        Fabric::tap(
            &mut tapped,
            &mut overflow,
            (PortId(2), true, at),
            &cells[..3],
        );
        assert_eq!((tapped.len(), overflow), (TAP_LIMIT, 2));
        let last = tapped.last().unwrap();
        assert_eq!((last.port, last.out, last.at), (PortId(2), true, at));
    }
}

//! OAM and timers: AIS sent for down ports (I.610 VP-AIS and VC-AIS), segment loopback
//! answered, cells the switch generates queued, and the deadlines of
//! [`Switch::poll_timeout`].

use natm_core::{Duration, Instant};
use natm_wire::oam::{self, Defect, OamCell, OamRepr};

use super::{AIS_PERIOD, F_VP, NONE, Pool, Port, Switch};
use crate::types::PortId;

impl Switch {
    /// Generates one AIS cell on every leg entering port `slot`.
    pub(super) fn send_ais(&mut self, slot: u16) {
        let id = self.port(slot).id;
        let payload = OamRepr::Ais(Defect::default()).to_payload();
        for s in 0..self.xcs.len() {
            let Some(&xc) = self.xcs[s].xc() else {
                continue;
            };
            for (dir, input) in [(0usize, xc.a), (1, xc.b)] {
                if input.port != id {
                    continue;
                }
                let leg = self.legs[2 * s + dir];
                let word = if leg.flags & F_VP != 0 {
                    // F4 end-to-end: VCI 4, PTI 0.
                    leg.out_word | 4 << 4
                } else {
                    // F5 end-to-end: PTI 101.
                    leg.out_word | 0b101 << 1
                };
                let out = leg.out_port;
                let Switch { ports, pool, .. } = self;
                let Some(p) = ports[usize::from(out)].as_mut() else {
                    continue;
                };
                p.counters.ais_sent += 1;
                enqueue_oam(p, pool, word, &payload);
            }
        }
    }

    /// The next instant at which something happens without input: a rated port's next
    /// slot while it has cells queued, or the next AIS cell of a down port.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.ports
            .iter()
            .flatten()
            .filter_map(|p| p.timeout())
            .min()
    }

    /// [`poll_timeout`](Self::poll_timeout) for a driver that wakes for bursts, not for
    /// every slot: a rated port with several cells queued is due when the slot of its
    /// later cells comes, at most `window` after its next slot (one cell queued: that
    /// slot, exactly). [`poll_transmit`](Self::poll_transmit) then sends every slot that
    /// passed, so the slots (and the rate) stay exact while the driver sleeps between
    /// bursts; a cell leaves at most `window` after its slot, plus the wake-up.
    pub fn poll_timeout_within(&self, window: Duration) -> Option<Instant> {
        self.ports
            .iter()
            .flatten()
            .filter_map(|p| p.timeout_within(window))
            .min()
    }

    /// [`poll_timeout_within`](Self::poll_timeout_within) of one port (`None` also for an
    /// unknown port). A driver that calls [`poll_transmit`](Self::poll_transmit) on a port
    /// only once this has passed sends the port's cells in bursts however often it wakes.
    pub fn port_timeout_within(&self, port: PortId, window: Duration) -> Option<Instant> {
        self.ports[usize::from(self.slot(port).ok()?)]
            .as_ref()?
            .timeout_within(window)
    }

    /// [`poll_timeout`](Self::poll_timeout) of one port (`None` also for an unknown port):
    /// the minimum of these over the ports is the switch's, so a driver of many ports can
    /// keep them in its own timer queue and poll only the ports that are due.
    pub fn port_timeout(&self, port: PortId) -> Option<Instant> {
        self.ports[usize::from(self.slot(port).ok()?)]
            .as_ref()?
            .timeout()
    }

    /// Does what is due at `now`: AIS cells of down ports. (Rated ports' slots are used by
    /// [`poll_transmit`](Self::poll_transmit).)
    pub fn handle_timeout(&mut self, now: Instant) {
        for slot in 0..self.ports.len() {
            let Some(p) = &mut self.ports[slot] else {
                continue;
            };
            let Some(t) = p.next_ais else { continue };
            if t > now {
                continue;
            }
            // One AIS per period; a late call does not send the missed ones.
            let period = AIS_PERIOD.as_nanos();
            let missed = now.saturating_duration_since(t).as_nanos() / period;
            let next = Instant::from_nanos(
                t.as_nanos()
                    .saturating_add((missed + 1).saturating_mul(period)),
            );
            p.next_ais = Some(next);
            self.send_ais(slot as u16);
        }
    }
}

/// Queues a cell the switch generated (loopback reply, AIS) in `p`'s CBR queue.
fn enqueue_oam(p: &mut Port, pool: &mut Pool, word: u32, payload: &[u8; 48]) {
    if !p.up {
        p.counters.port_down += 1;
        return;
    }
    if p.counters.queue_depth[0] >= p.config.queue_cells[0] {
        p.counters.queue_full += 1;
        return;
    }
    let i = pool.alloc(word, payload, NONE);
    p.counters.queue_depth[0] += 1;
    pool.push(&mut p.fifos[0], i);
}

/// A segment OAM cell (F4 VCI 3, F5 PTI 100) arrived on `p` for a connection that passes
/// here: the switch port is the segment's end point (I.610 loopback). A loopback request
/// with a good CRC-10 whose location ID names the end point (all ones, as I.610 codes it;
/// or all zeros, which Intel's IXP400 OAM code also takes for the segment end point) is
/// answered out of the same port with the loopback indication cleared and the CRC-10
/// refilled; anything else ends here.
pub(super) fn segment_oam(p: &mut Port, pool: &mut Pool, word: u32, payload: &[u8; 48]) {
    let cell = OamCell::new_unchecked(&payload[..]);
    let location = &payload[6..22];
    let is_request = cell.verify_crc10()
        && payload[0] == oam::LOOPBACK
        && payload[1] & 1 == 1
        && (location == oam::ALL_ONES_ID || location == [0; 16]);
    if !is_request {
        p.counters.oam_terminated += 1;
        return;
    }
    let mut reply = *payload;
    reply[1] = 0;
    OamCell::new_unchecked(&mut reply[..]).fill_crc10();
    p.counters.oam_answered += 1;
    enqueue_oam(p, pool, word, &reply);
}

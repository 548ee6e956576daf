//! The cell output path: [`Switch::poll_transmit`] paces a rated port's slots and takes
//! cells off its queues, strict priority first, then the UBR round robin.

use natm_core::{Duration, Instant};

use super::{F_WEIGHT1, Leg, NONE, Pool, Port, Switch, UBR, XcSlot};
use crate::hec::hec;
use crate::types::PortId;

/// How late a rated port's slots may be used: a caller that polls late gets the slots of
/// at most the last 10 ms at once, so a long stall never turns into a long burst. A real
/// line loses no slot to its driver: a daemon descheduled for a few milliseconds on a busy
/// machine (1 ms was common on two CPUs) must catch up, or the cells its hosts' lines
/// delivered meanwhile pile up in its queues and overflow them.
const MAX_LAG: Duration = Duration::from_millis(10);

impl Switch {
    /// Fills `out` with cells to send on `port` at `now`, signalling cells first, then the
    /// highest category first (CBR and generated OAM, rt-VBR, nrt-VBR, then UBR by weighted
    /// round robin), at most one per
    /// open slot on a rated port; returns how many. A down or unknown port sends nothing.
    pub fn poll_transmit(&mut self, now: Instant, port: PortId, out: &mut [[u8; 53]]) -> usize {
        let Ok(slot) = self.slot(port) else {
            return 0;
        };
        let Switch {
            ports,
            legs,
            pool,
            xcs,
            taken,
            ..
        } = self;
        let Some(p) = ports[usize::from(slot)].as_mut() else {
            return 0;
        };
        if !p.up {
            return 0;
        }
        let budget = match &mut p.pacer {
            None => out.len(),
            Some(pacer) => {
                if pacer.slot() + MAX_LAG < now {
                    // Polled late: the slots of the last MAX_LAG may go at once, older
                    // ones are lost.
                    pacer.restart(Instant::from_nanos(
                        now.as_nanos().saturating_sub(MAX_LAG.as_nanos()),
                    ));
                }
                // One cell per open slot, and no more slots than cells queued: every slot
                // taken here is used below.
                let queued = p.counters.queued() as usize;
                let want = out.len().min(queued);
                let mut b = 0;
                while b < want && pacer.slot() <= now {
                    pacer.advance();
                    b += 1;
                }
                b
            }
        };
        // Two passes per chunk: take the cells off the queues (a chain of dependent loads),
        // then write them out.
        const CHUNK: usize = 64;
        // Scratch kept in the switch, not zeroed per call: most calls take one cell.
        taken.resize(CHUNK, 0);
        let mut n = 0;
        if !p.sig_tx.is_empty() {
            while n < budget {
                let Some((word, payload)) = p.sig_tx.pop_front() else {
                    break;
                };
                let o = &mut out[n];
                o[..4].copy_from_slice(&word.to_be_bytes());
                o[4] = hec(word);
                o[5..].copy_from_slice(&payload);
                n += 1;
            }
            p.counters.signalling_queued = p.sig_tx.len() as u32;
        }
        while n < budget {
            let want = (budget - n).min(CHUNK);
            let mut got = 0;
            while got < want {
                let Some(i) = dequeue(p, legs, pool, xcs) else {
                    break;
                };
                taken[got] = i;
                got += 1;
            }
            for (&i, o) in taken[..got].iter().zip(&mut out[n..n + got]) {
                let c = &pool.cells[i as usize];
                o[..4].copy_from_slice(&c.word.to_be_bytes());
                o[4] = hec(c.word);
                o[5..].copy_from_slice(&c.payload);
                pool.release(i);
            }
            n += got;
            if got < want {
                break;
            }
        }
        let idle = !p.has_output();
        if let Some(pacer) = &mut p.pacer {
            debug_assert_eq!(n, budget, "a rated port's budget is of queued cells");
            if idle && pacer.slot() <= now {
                // Idle: slots that passed unused are not saved up for a burst later.
                pacer.restart(now);
            }
        }
        p.counters.cells_out += n as u64;
        n
    }
}

/// The next cell to send from `p`: strict priority over the category FIFOs, then the UBR
/// ring, `weight` cells per turn.
#[inline]
fn dequeue(p: &mut Port, legs: &mut [Leg], pool: &mut Pool, xcs: &[XcSlot]) -> Option<u32> {
    for c in 0..UBR {
        if let Some(i) = pool.pop(&mut p.fifos[c]) {
            p.counters.queue_depth[c] -= 1;
            let li = pool.cells[i as usize].leg;
            if li != NONE {
                legs[li as usize].queued -= 1;
            }
            return Some(i);
        }
    }
    let &li = p.ring.front()?;
    let leg = &mut legs[li as usize];
    let i = pool.pop_ring(&mut leg.tail)?;
    leg.queued -= 1;
    p.counters.queue_depth[UBR] -= 1;
    p.served += 1;
    if leg.queued == 0 {
        p.ring.pop_front();
        p.served = 0;
    } else if leg.flags & F_WEIGHT1 != 0
        || p.served >= xcs[(li / 2) as usize].xc().map_or(1, |xc| xc.weight)
    {
        p.ring.pop_front();
        p.ring.push_back(li);
        p.served = 0;
    }
    Some(i)
}

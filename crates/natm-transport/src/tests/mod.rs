//! Tests of the endpoint: state × event tests of the reliable sender and receiver driven by
//! hand-made TPDUs (`reliable`), runs of two endpoints over the lossy wire of
//! [`crate::testing`] (`pair`), the guaranteed rate (`guaranteed`), goodput efficiency under
//! random cell loss (`efficiency`), two flows through one full queue (`sharing`), and the
//! planted mutants (`mutants`).

mod efficiency;
mod guaranteed;
#[cfg(feature = "mutants")]
mod mutants;
mod pair;
mod reliable;
mod sharing;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use natm_core::{Duration, Instant};

use crate::testing::{Pair, Wire, WireConfig, message};
use crate::{Config, Event, Isn, MsgSeq, SendError};

pub(crate) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub(crate) fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

pub(crate) fn at(d: Duration) -> Instant {
    Instant::ZERO + d
}

/// Messages one side has to send: their sizes, and how many were accepted.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outbox {
    pub(crate) seed: u64,
    pub(crate) sizes: Vec<usize>,
    pub(crate) offered: usize,
}

impl Outbox {
    pub(crate) fn new(seed: u64, sizes: Vec<usize>) -> Outbox {
        Outbox {
            seed,
            sizes,
            offered: 0,
        }
    }

    /// Offers what the endpoint takes.
    fn offer(&mut self, ep: &mut crate::Endpoint, now: Instant) {
        while self.offered < self.sizes.len() {
            let m = message(self.seed, self.offered as u64, self.sizes[self.offered]);
            match ep.send_message(now, &m) {
                Ok(_) => self.offered += 1,
                Err(SendError::QueueFull { .. }) => break,
                Err(e) => panic!("message {} refused: {e}", self.offered),
            }
        }
    }
}

/// Runs `p` until both outboxes are delivered (or `limit`), offering as room comes.
pub(crate) fn drive(p: &mut Pair, a: &mut Outbox, b: &mut Outbox, limit: Instant) {
    // Messages among the events scanned so far, per side: counted as they come, once.
    let (mut at_b, mut at_a) = ((0, 0), (0, 0));
    let count = |seen: &mut (usize, usize), events: &[(Instant, Event)]| {
        seen.1 += messages(&events[seen.0..]);
        seen.0 = events.len();
        seen.1
    };
    loop {
        a.offer(&mut p.a, p.now);
        b.offer(&mut p.b, p.now);
        let done = count(&mut at_b, &p.b_events) >= a.sizes.len()
            && count(&mut at_a, &p.a_events) >= b.sizes.len();
        if done || !p.step(limit) {
            break;
        }
    }
}

pub(crate) fn messages(events: &[(Instant, Event)]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e.1, Event::Message { .. }))
        .count()
}

/// Reliable: the events are exactly the outbox's messages, in order, byte-exact, no loss.
/// `complete`: all of them must be there.
pub(crate) fn check_reliable(
    events: &[(Instant, Event)],
    isn: Isn,
    out: &Outbox,
    complete: bool,
) -> Result<(), String> {
    for (k, (_, e)) in events.iter().enumerate() {
        let Event::Message { msg, data } = e else {
            return Err(format!("event {k} is {e:?}"));
        };
        if *msg != MsgSeq(isn.msg).add(k as u32) {
            return Err(format!("message {k} numbered {msg}"));
        }
        let size = *out.sizes.get(k).ok_or(format!("message {k} never sent"))?;
        if *data != message(out.seed, k as u64, size) {
            return Err(format!("message {k} ({size} B) differs"));
        }
    }
    if complete && events.len() != out.sizes.len() {
        return Err(format!(
            "{} of {} messages delivered",
            events.len(),
            out.sizes.len()
        ));
    }
    Ok(())
}

/// A pair over OC-3c wires of `delay` one way with `faults` both ways.
pub(crate) fn pair(config: Config, ab: Isn, ba: Isn, faults: &WireConfig, seed: u64) -> Pair {
    Pair::new(
        config,
        ab,
        ba,
        Wire::new(faults.clone(), seed),
        Wire::new(faults.clone(), seed ^ 0x5555),
    )
}

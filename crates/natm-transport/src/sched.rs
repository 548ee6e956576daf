//! Weighted round robin over channels' work units.
//!
//! The seed stack does transport work in tasks, each with work units per VC, served by
//! weight so that one bulk transfer cannot starve a guaranteed one on the same host. A work
//! unit is one TPDU's worth of work (segmenting and sending one, or taking one in). The
//! driver tells the scheduler how many units each channel has ready
//! ([`Wrr::add_work`]) and asks [`Wrr::next`](Iterator::next) which channel to serve for one unit.
//!
//! Rounds: in each round a channel with work is served up to its weight in units, then
//! the next one; a channel without work is skipped and keeps nothing (no credit is saved
//! for later, so an idle channel cannot come back with a burst). Over any stretch in which
//! a channel always has work, it gets at least `weight / Σ weights` of the units served,
//! to within one round.
//!
//! Weights are per unit, not per byte: a guaranteed channel's weight must cover its rate
//! in the units it sends. With TPDUs of `c_g` cells beside a bulk channel's of `c_b` at
//! weight 1, it gets `w·c_g / (w·c_g + c_b)` of a line the bulk channel keeps busy; a rate
//! of 20 % in 32-cell TPDUs beside 172-cell bulk TPDUs needs `w ≥ 2` (1 gives 15.7 %).
//!
//! Pure: no clock; the driver decides what a unit costs in time (the host's per-TPDU
//! budget from `natm perf calibrate`).

use alloc::vec::Vec;
use core::fmt;

/// A channel's handle in one [`Wrr`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChannelId(pub u32);

/// Why a channel cannot be added or used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedError {
    /// A weight of 0 would never be served.
    ZeroWeight,
    /// No such channel.
    Unknown(ChannelId),
}

impl fmt::Display for SchedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedError::ZeroWeight => f.write_str("a channel's weight is 0"),
            SchedError::Unknown(c) => write!(f, "no channel {}", c.0),
        }
    }
}

impl core::error::Error for SchedError {}

#[derive(Clone, Debug)]
struct Slot {
    weight: u32,
    work: u64,
    served: u64,
}

/// The scheduler of one host's (or one task's) channels.
#[derive(Clone, Debug, Default)]
pub struct Wrr {
    slots: Vec<Option<Slot>>,
    /// The channel being served in this round, and what it has left of its weight.
    cur: usize,
    credit: u32,
}

impl Wrr {
    /// A scheduler without channels.
    pub fn new() -> Wrr {
        Wrr::default()
    }

    /// Adds a channel of `weight` (units per round), with no work.
    pub fn add(&mut self, weight: u32) -> Result<ChannelId, SchedError> {
        if weight == 0 {
            return Err(SchedError::ZeroWeight);
        }
        let slot = Some(Slot {
            weight,
            work: 0,
            served: 0,
        });
        let i = match self.slots.iter().position(Option::is_none) {
            Some(i) => {
                self.slots[i] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                self.slots.len() - 1
            }
        };
        Ok(ChannelId(i as u32))
    }

    fn slot(&mut self, c: ChannelId) -> Result<&mut Slot, SchedError> {
        self.slots
            .get_mut(c.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(SchedError::Unknown(c))
    }

    /// Removes a channel and its work.
    pub fn remove(&mut self, c: ChannelId) -> Result<(), SchedError> {
        self.slot(c)?;
        self.slots[c.0 as usize] = None;
        if self.cur == c.0 as usize {
            self.credit = 0;
        }
        Ok(())
    }

    /// Changes a channel's weight (from its next turn on).
    pub fn set_weight(&mut self, c: ChannelId, weight: u32) -> Result<(), SchedError> {
        if weight == 0 {
            return Err(SchedError::ZeroWeight);
        }
        self.slot(c)?.weight = weight;
        Ok(())
    }

    /// `units` more units of work ready on `c`.
    pub fn add_work(&mut self, c: ChannelId, units: u64) -> Result<(), SchedError> {
        let s = self.slot(c)?;
        s.work = s.work.saturating_add(units);
        Ok(())
    }

    /// Units of work waiting on `c`.
    pub fn work(&self, c: ChannelId) -> Option<u64> {
        self.slots.get(c.0 as usize)?.as_ref().map(|s| s.work)
    }

    /// Units served to `c` so far.
    pub fn served(&self, c: ChannelId) -> Option<u64> {
        self.slots.get(c.0 as usize)?.as_ref().map(|s| s.served)
    }
}

/// The channel to serve for one unit of work (taken off its work), or `None` while none has
/// work (the iterator is not fused: add work and it yields again).
impl Iterator for Wrr {
    type Item = ChannelId;

    fn next(&mut self) -> Option<ChannelId> {
        let n = self.slots.len();
        if n == 0 {
            return None;
        }
        // The current channel, then one full turn: back to it with its weight afresh.
        for step in 0..=n {
            if step > 0 {
                self.cur = (self.cur + 1) % n;
                self.credit = self.slots[self.cur].as_ref().map_or(0, |s| s.weight);
            }
            if let Some(s) = self.slots[self.cur].as_mut()
                && s.work > 0
                && self.credit > 0
            {
                s.work -= 1;
                s.served += 1;
                self.credit -= 1;
                return Some(ChannelId(self.cur as u32));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use proptest::prelude::*;

    #[test]
    fn test_weights_share_rounds() {
        let mut w = Wrr::new();
        let bulk = w.add(1).unwrap();
        let rate = w.add(3).unwrap();
        w.add_work(bulk, 1000).unwrap();
        w.add_work(rate, 1000).unwrap();
        let order: Vec<u32> = (0..8).map(|_| w.next().unwrap().0).collect();
        assert_eq!(order, vec![1, 1, 1, 0, 1, 1, 1, 0]);
    }

    #[test]
    fn test_idle_channels_skipped_and_removed() {
        let mut w = Wrr::new();
        assert_eq!(w.next(), None);
        let a = w.add(2).unwrap();
        let b = w.add(2).unwrap();
        w.add_work(b, 3).unwrap();
        assert_eq!(
            (0..4).map(|_| w.next()).collect::<Vec<_>>(),
            vec![Some(b), Some(b), Some(b), None]
        );
        w.remove(a).unwrap();
        assert_eq!(w.add_work(a, 1), Err(SchedError::Unknown(a)));
        assert_eq!(w.add(0), Err(SchedError::ZeroWeight));
        // The freed slot is reused.
        assert_eq!(w.add(5).unwrap(), a);
        assert_eq!(w.served(b), Some(3));
    }

    proptest! {
        /// Channels that always have work share the units by weight, to within one round.
        #[test]
        fn backlogged_channels_share_by_weight(
            weights in proptest::collection::vec(1u32..8, 1..6),
            idle in proptest::collection::vec(any::<bool>(), 6),
            units in 1u64..2_000,
        ) {
            let mut w = Wrr::new();
            let ids: Vec<_> = weights.iter().map(|&x| w.add(x).unwrap()).collect();
            for (k, &c) in ids.iter().enumerate() {
                if k == 0 || !idle[k] {
                    w.add_work(c, u64::MAX / 2).unwrap();
                }
            }
            for _ in 0..units {
                prop_assert!(w.next().is_some());
            }
            let busy: Vec<usize> = (0..ids.len()).filter(|&k| k == 0 || !idle[k]).collect();
            let total: u64 = busy.iter().map(|&k| u64::from(weights[k])).sum();
            for &k in &busy {
                let fair = units * u64::from(weights[k]) / total;
                let got = w.served(ids[k]).unwrap();
                prop_assert!(got + u64::from(weights[k]) + 1 >= fair, "channel {} got {} of fair {}", k, got, fair);
            }
            for (k, &c) in ids.iter().enumerate() {
                if !busy.contains(&k) {
                    prop_assert_eq!(w.served(c), Some(0));
                }
            }
        }
    }
}

//! Weighted round robin over queues of work units.
//!
//! The seed stack does transport work in tasks, each with work units per VC, served by
//! weight so that one bulk transfer cannot starve a guaranteed one on the same host. Here
//! a unit is whatever the driver serves at once: natm-host-core's transmit round serves
//! its channels a batch of cells a unit (each channel at the sum of its VCs' weights);
//! natm-transport's tests serve channels a TPDU a unit.
//!
//! Two ways to say what is ready:
//!
//! * A driver that knows its queues tells the scheduler how many units each has
//!   ([`Wrr::add_work`], [`Wrr::set_work`]) and asks [`Wrr::next`](Iterator::next) which
//!   one to serve for one unit.
//! * A driver that finds out only by looking (the host core: a channel's adapter says
//!   whether it has cells when polled) starts each round with [`Wrr::new_round`], which
//!   offers every queue its weight in units, and ends a queue's turn early with
//!   `set_work(c, 0)` when a look finds nothing. `next` gives `None` when the round is over.
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
//! [`weight_for`] is that rule, and one more: a channel that releases its units in
//! batches (natm-transport's guaranteed bucket releases up to `BUCKET_TPDUS` TPDUs at
//! once, and one more at its rate while they are served) should get a batch in one turn,
//! since a burst served in one round waits for at most one unit of each other channel; a
//! weight below the batch leaves its tail a round behind (with weight 2 and batches of
//! 4, a TPDU waited 2.04 ms for the line where one bulk TPDU takes 1.72 ms).
//!
//! Pure: no clock; the driver decides what a unit is and what it costs in time.

use alloc::vec::Vec;
use core::fmt;

/// The weight of a channel of `rate` cells/s that sends units of `unit_cells` cells in
/// batches of up to `batch` units at once, on a line of `line` cells/s that the other
/// channels keep busy with `others` cells per round (the sum over them of weight × cells
/// per unit): the least `w` with `w·c / (w·c + others) ≥ rate / line`, i.e.
/// `⌈rate·others / (c·(line − rate))⌉`, so it keeps its rate; and at least `batch`, so a
/// batch goes in one round. `None` when no weight keeps the rate (the rate is the whole
/// line or more, beside other work) or a unit has no cells.
pub fn weight_for(rate: u32, unit_cells: u32, batch: u32, others: u64, line: u32) -> Option<u32> {
    if unit_cells == 0 {
        return None;
    }
    let for_rate = if others == 0 {
        1
    } else {
        let spare = u64::from(line)
            .checked_sub(u64::from(rate))
            .filter(|s| *s > 0)?;
        let need = u128::from(rate) * u128::from(others);
        let per = u128::from(unit_cells) * u128::from(spare);
        u32::try_from(need.div_ceil(per)).ok()?
    };
    Some(for_rate.max(batch).max(1))
}

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
    /// `None`: its turn has not started (it gets its weight when served).
    credit: Option<u32>,
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
            self.credit = None;
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

    /// Sets the units of work waiting on `c` (0 ends its turn in this round).
    pub fn set_work(&mut self, c: ChannelId, units: u64) -> Result<(), SchedError> {
        self.slot(c)?.work = units;
        Ok(())
    }

    /// Starts a round for a driver that cannot count its work ahead: every channel may
    /// have up to its weight in units. The round is over when [`next`](Iterator::next)
    /// gives `None`.
    ///
    /// The round starts with the channel after the one whose turn was under way, so that
    /// no channel gets two turns back to back across rounds.
    pub fn new_round(&mut self) {
        for s in self.slots.iter_mut().flatten() {
            s.work = u64::from(s.weight);
        }
        if self.credit.take().is_some() && !self.slots.is_empty() {
            self.cur = (self.cur + 1) % self.slots.len();
        }
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
        // Nothing to serve leaves the turn under way as it was.
        let (cur, credit) = (self.cur, self.credit);
        for _ in 0..=n {
            if let Some(s) = self.slots[self.cur].as_mut()
                && s.work > 0
            {
                let left = self.credit.get_or_insert(s.weight);
                if *left > 0 {
                    *left -= 1;
                    s.work -= 1;
                    s.served += 1;
                    return Some(ChannelId(self.cur as u32));
                }
            }
            self.cur = (self.cur + 1) % n;
            self.credit = None;
        }
        (self.cur, self.credit) = (cur, credit);
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
        assert_eq!(order, vec![0, 1, 1, 1, 0, 1, 1, 1]);
    }

    #[test]
    fn test_weight_for_covers_the_rate() {
        // The module docs' case: 20 % of the line in 32-cell units beside 172-cell bulk.
        assert_eq!(weight_for(20_000, 32, 1, 172, 100_000), Some(2));
        let share = |w: u32| f64::from(w * 32) / f64::from(w * 32 + 172);
        assert!(share(2) >= 0.2 && share(1) < 0.2);
        // Batches of 6 go in one round.
        assert_eq!(weight_for(20_000, 32, 6, 172, 100_000), Some(6));
        // Alone on the line: only the batch counts.
        assert_eq!(weight_for(99_000, 32, 1, 0, 100_000), Some(1));
        assert_eq!(weight_for(99_000, 32, 0, 0, 100_000), Some(1));
        assert_eq!(weight_for(100_000, 32, 1, 172, 100_000), None);
        assert_eq!(weight_for(1, 0, 1, 172, 100_000), None);
        // Big units need no more than 1.
        assert_eq!(weight_for(10_000, 172, 1, 172, 100_000), Some(1));
    }

    #[test]
    fn test_a_round_offers_each_its_weight_and_a_dry_look_ends_a_turn() {
        let mut w = Wrr::new();
        let a = w.add(1).unwrap();
        let b = w.add(3).unwrap();
        let c = w.add(2).unwrap();
        assert_eq!(w.next(), None, "no round started");
        w.new_round();
        let mut order = Vec::new();
        while let Some(x) = w.next() {
            order.push(x);
            if x == c {
                // The driver looked and c had nothing: the rest of its turn goes.
                w.set_work(c, 0).unwrap();
            }
        }
        assert_eq!(order, vec![a, b, b, b, c]);
        // The next round starts after c, whose turn was under way; each is offered its
        // weight again.
        w.new_round();
        let next: Vec<_> = core::iter::from_fn(|| w.next()).collect();
        assert_eq!(next, vec![a, b, b, b, c, c]);
        assert_eq!(
            w.set_work(ChannelId(9), 1),
            Err(SchedError::Unknown(ChannelId(9)))
        );
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
        /// The weight given covers the rate, and one less would not (unless it is 1).
        #[test]
        fn weight_for_is_the_least_that_covers(
            rate in 1u32..100_000,
            cells in 1u32..400,
            others in 1u64..10_000,
        ) {
            let line = 100_000u32;
            let w = weight_for(rate, cells, 1, others, line).unwrap();
            let share = |w: u32| (w as f64 * f64::from(cells)) / (w as f64 * f64::from(cells) + others as f64);
            prop_assert!(share(w) * f64::from(line) >= f64::from(rate) * (1.0 - 1e-12));
            if w > 1 {
                prop_assert!(share(w - 1) * f64::from(line) < f64::from(rate));
            }
        }

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

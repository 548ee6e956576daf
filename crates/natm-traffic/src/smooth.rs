//! Packet-level smoothing: an SDU queue drained by a leaky bucket.
//!
//! A guaranteed-service flow (a token bucket of rate `r` and depth `b`, as in RFC 2212,
//! carried over ATM as RFC 2381 describes) asks for a rate in cells/s and a bucket depth
//! in cells. A [`Smoother`] holds the VC's SDUs, each offered with its length
//! in cells, and releases a whole SDU into the VC's cell backlog (for instance
//! [`Scheduler::enqueue`](crate::sched::Scheduler::enqueue)) only when the bucket has room
//! for all its cells. The cell scheduler then spaces those cells at the VC's PCR; the
//! smoother bounds what reaches it to `depth + rate · t` cells in any interval of length
//! `t`.
//!
//! The bucket is a GCRA(1/rate, (depth − 1)/rate) in exact ticks
//! ([`GcraParams::new`](crate::gcra::GcraParams::new) with `rate` ticks per ns): `depth`
//! cells may go at once, and after that `rate` cells/s. An SDU of `n` cells at `t`
//! conforms iff all `n` of its cells would pass the GCRA back to back at `t`, that is iff
//! `max(TAT, t) + (n − 1) · I ≤ t + L`.
//!
//! It holds no bytes, reads no clock, and does not drop: an SDU that does not fit the
//! queue's limit is refused, and the caller decides.
//!
//! # Call contract
//!
//! [`offer`](Smoother::offer) an SDU's length; then, as for every core of natm, call
//! [`poll_release(now)`](Smoother::poll_release) until it returns `None` and wait until
//! [`poll_timeout`](Smoother::poll_timeout). SDUs leave in the order offered. `now` must
//! not go backwards (an earlier one is taken as the latest seen).

use alloc::collections::VecDeque;
use core::fmt;

use natm_core::Instant;

use crate::gcra::{Gcra, GcraParams, NS_PER_S};

/// A smoother's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SmootherConfig {
    /// The requested rate, cells/s (at least 1).
    pub rate: u32,
    /// The bucket depth, cells (at least 1): the largest SDU, and the largest burst.
    pub depth: u32,
    /// The most cells the queue holds (SDUs not yet released).
    pub queue_limit: u64,
}

/// Why a smoother cannot be built or an SDU was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmoothError {
    /// The rate is 0 cells/s.
    ZeroRate,
    /// The bucket depth is 0 cells.
    ZeroDepth,
    /// An SDU of 0 cells.
    EmptySdu,
    /// The SDU is longer than the bucket is deep: it could never be released whole.
    SduAboveDepth {
        /// The SDU's length, cells.
        cells: u32,
        /// The bucket depth, cells.
        depth: u32,
    },
    /// The queue would hold more than its limit.
    QueueFull {
        /// The limit, cells.
        limit: u64,
    },
}

impl fmt::Display for SmoothError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SmoothError::ZeroRate => f.write_str("smoothing rate is 0 cells/s"),
            SmoothError::ZeroDepth => f.write_str("bucket depth is 0 cells"),
            SmoothError::EmptySdu => f.write_str("SDU of 0 cells"),
            SmoothError::SduAboveDepth { cells, depth } => {
                write!(
                    f,
                    "SDU of {cells} cells is above the bucket depth of {depth}"
                )
            }
            SmoothError::QueueFull { limit } => {
                write!(f, "SDU queue would pass its limit of {limit} cells")
            }
        }
    }
}

impl core::error::Error for SmoothError {}

/// An SDU the bucket let through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Release {
    /// Its length, cells: add them to the VC's backlog.
    pub cells: u32,
    /// When it was released (`now`, clamped).
    pub at: Instant,
}

/// One VC's SDU queue and leaky bucket (see the module doc).
#[derive(Clone, Debug)]
pub struct Smoother {
    config: SmootherConfig,
    bucket: Gcra,
    queue: VecDeque<u32>,
    queued: u64,
    now: Instant,
    released: u64,
}

impl Smoother {
    /// A smoother with an empty queue and a full bucket.
    pub fn new(config: SmootherConfig) -> Result<Smoother, SmoothError> {
        if config.rate == 0 {
            return Err(SmoothError::ZeroRate);
        }
        if config.depth == 0 {
            return Err(SmoothError::ZeroDepth);
        }
        // I = 10⁹ ticks of 1/rate ns, L = (depth − 1) · I: exact, never rounded.
        let limit = u128::from(config.depth - 1) * NS_PER_S;
        let params = GcraParams::new(NS_PER_S, limit, u64::from(config.rate))
            .map_err(|_| SmoothError::ZeroRate)?;
        Ok(Smoother {
            config,
            bucket: Gcra::new(params),
            queue: VecDeque::new(),
            queued: 0,
            now: Instant::ZERO,
            released: 0,
        })
    }

    /// The settings.
    pub const fn config(&self) -> &SmootherConfig {
        &self.config
    }

    /// SDUs waiting.
    pub fn queued_sdus(&self) -> usize {
        self.queue.len()
    }

    /// Cells waiting.
    pub const fn queued_cells(&self) -> u64 {
        self.queued
    }

    /// Cells released so far.
    pub const fn released_cells(&self) -> u64 {
        self.released
    }

    /// Queues an SDU of `cells` cells behind the others.
    pub fn offer(&mut self, cells: u32) -> Result<(), SmoothError> {
        if cells == 0 {
            return Err(SmoothError::EmptySdu);
        }
        if cells > self.config.depth {
            return Err(SmoothError::SduAboveDepth {
                cells,
                depth: self.config.depth,
            });
        }
        let limit = self.config.queue_limit;
        match self.queued.checked_add(u64::from(cells)) {
            Some(q) if q <= limit => self.queued = q,
            _ => return Err(SmoothError::QueueFull { limit }),
        }
        self.queue.push_back(cells);
        Ok(())
    }

    /// The earliest instant at which an SDU of `n` cells passes the bucket: `TAT − L +
    /// (n − 1) · I` rounded up to a whole ns.
    fn release_time(&self, n: u32) -> Instant {
        let p = self.bucket.params();
        match self.bucket.tat() {
            None => Instant::ZERO,
            Some(tat) => {
                let need = tat.saturating_add(u128::from(n - 1) * p.increment());
                p.instant_at_or_after(need.saturating_sub(p.limit()))
            }
        }
    }

    /// Releases the head SDU if the bucket lets all its cells through at `now`.
    pub fn poll_release(&mut self, now: Instant) -> Option<Release> {
        let now = now.max(self.now);
        self.now = now;
        let &n = self.queue.front()?;
        if self.release_time(n) > now {
            return None;
        }
        debug_assert!(self.bucket.is_conforming(now));
        self.bucket.record_cells(now, n);
        self.queue.pop_front();
        self.queued -= u64::from(n);
        self.released += u64::from(n);
        Some(Release { cells: n, at: now })
    }

    /// When the head SDU can be released (never before the latest `now` seen); `None` if
    /// the queue is empty.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let &n = self.queue.front()?;
        Some(self.release_time(n).max(self.now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    fn ms(n: u64) -> Instant {
        Instant::from_nanos(n * 1_000_000)
    }

    fn smoother(rate: u32, depth: u32) -> Smoother {
        Smoother::new(SmootherConfig {
            rate,
            depth,
            queue_limit: 1_000,
        })
        .unwrap()
    }

    #[test]
    fn test_new_bad_config() {
        let c = |rate, depth| SmootherConfig {
            rate,
            depth,
            queue_limit: 10,
        };
        assert_eq!(Smoother::new(c(0, 5)).unwrap_err(), SmoothError::ZeroRate);
        assert_eq!(Smoother::new(c(5, 0)).unwrap_err(), SmoothError::ZeroDepth);
    }

    #[test]
    fn test_empty_poll() {
        let mut s = smoother(1000, 10);
        assert_eq!(s.poll_timeout(), None);
        assert_eq!(s.poll_release(ms(3)), None);
    }

    #[test]
    fn test_empty_offer_bad_sdu() {
        let mut s = Smoother::new(SmootherConfig {
            rate: 1000,
            depth: 10,
            queue_limit: 15,
        })
        .unwrap();
        assert_eq!(s.offer(0), Err(SmoothError::EmptySdu));
        assert_eq!(
            s.offer(11),
            Err(SmoothError::SduAboveDepth {
                cells: 11,
                depth: 10
            })
        );
        s.offer(10).unwrap();
        assert_eq!(s.offer(6), Err(SmoothError::QueueFull { limit: 15 }));
        s.offer(5).unwrap();
        assert_eq!((s.queued_sdus(), s.queued_cells()), (2, 15));
        assert_eq!(
            SmoothError::QueueFull { limit: 15 }.to_string(),
            "SDU queue would pass its limit of 15 cells"
        );
    }

    /// Rate 1000 cells/s, depth 10: a full bucket lets 10 cells go at once; then the next
    /// 4-cell SDU waits until 4 cells' worth has drained (4 ms).
    #[test]
    fn test_full_bucket_burst_then_rate() {
        let mut s = smoother(1000, 10);
        for n in [6, 4, 4, 1] {
            s.offer(n).unwrap();
        }
        assert_eq!(s.poll_timeout(), Some(Instant::ZERO));
        assert_eq!(s.poll_release(ms(0)).map(|r| r.cells), Some(6));
        assert_eq!(s.poll_release(ms(0)).map(|r| r.cells), Some(4));
        assert_eq!(s.poll_release(ms(0)), None);
        assert_eq!(s.poll_timeout(), Some(ms(4)));
        assert_eq!(s.poll_release(Instant::from_nanos(3_999_999)), None);
        assert_eq!(
            s.poll_release(ms(4)),
            Some(Release {
                cells: 4,
                at: ms(4)
            })
        );
        assert_eq!(s.poll_timeout(), Some(ms(5)));
        assert_eq!(s.poll_release(ms(9)).map(|r| r.cells), Some(1));
        assert_eq!(s.poll_timeout(), None);
        assert_eq!(s.released_cells(), 15);
    }

    /// An SDU is accounted in one step, however many cells it has.
    #[test]
    fn test_full_bucket_largest_sdu() {
        let mut s = Smoother::new(SmootherConfig {
            rate: 1,
            depth: u32::MAX,
            queue_limit: u64::MAX,
        })
        .unwrap();
        s.offer(u32::MAX).unwrap();
        s.offer(1).unwrap();
        assert_eq!(s.poll_release(ms(0)).map(|r| r.cells), Some(u32::MAX));
        // The bucket is full for 2³² − 1 s: the next cell goes 1 s after the first.
        assert_eq!(s.poll_timeout(), Some(ms(1_000)));
    }

    #[test]
    fn test_draining_time_backwards_clamped() {
        let mut s = smoother(1000, 2);
        s.offer(2).unwrap();
        s.offer(1).unwrap();
        assert!(s.poll_release(ms(10)).is_some());
        // 5 ms is taken as 10 ms; the bucket frees a cell at 11 ms.
        assert_eq!(s.poll_release(ms(5)), None);
        assert_eq!(s.poll_timeout(), Some(ms(11)));
        assert_eq!(s.poll_release(ms(11)).map(|r| r.at), Some(ms(11)));
    }

    /// The smoother feeding a scheduler, both driven in virtual time: SDUs of 8 cells
    /// offered at once leave the bucket at 1000 cells/s after a 16-cell burst, and the
    /// scheduler spaces each SDU's cells at the VC's PCR behind its release.
    #[test]
    fn test_full_bucket_release_into_scheduler() {
        use crate::policer::{Policer, Verdict};
        use crate::sched::{Scheduler, VcSpec};
        let mut sm = smoother(1000, 16);
        let mut s = Scheduler::new(natm_core::PhyRate::OC3.cells_per_s()).unwrap();
        let spec = VcSpec::rt_vbr(10_000, 2_000, 16);
        let vc = s.add_vc(spec).unwrap();
        let mut upc = Policer::new(spec.category.conformance(), &spec.contract()).unwrap();
        for _ in 0..6 {
            sm.offer(8).unwrap();
        }
        let (mut now, mut releases, mut sent) = (Instant::ZERO, Vec::new(), Vec::new());
        loop {
            while let Some(r) = sm.poll_release(now) {
                s.enqueue(vc, r.cells).unwrap();
                releases.push(r.at);
            }
            while let Some(tx) = s.poll_transmit(now) {
                assert_eq!(upc.police(tx.at, false), Verdict::Pass);
                sent.push(tx.at);
            }
            now = match (sm.poll_timeout(), s.poll_timeout()) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => break,
            };
        }
        // 16 cells at once, then 8 more every 8 ms.
        assert_eq!(releases, [ms(0), ms(0), ms(8), ms(16), ms(24), ms(32)]);
        assert_eq!(sent.len(), 48);
        for (k, t) in sent.iter().enumerate() {
            assert!(*t >= releases[k / 8], "cell {k} at {t} before its SDU");
        }
        // The first 16 at PCR (100 µs apart), as MBS allows.
        assert_eq!(sent[15], Instant::from_nanos(1_500_000));
    }

    proptest! {
        /// Released cells never exceed the bucket: over any interval of length t they are
        /// at most depth + rate · t; and every SDU leaves, in order, at its poll_timeout.
        #[test]
        fn releases_never_exceed_the_bucket(
            rate in 1u32..2_000_000,
            depth in 1u32..64,
            sdus in proptest::collection::vec((1u32..64, 0u64..5_000_000), 1..80),
        ) {
            let mut s = Smoother::new(SmootherConfig { rate, depth, queue_limit: u64::MAX }).unwrap();
            let mut offered = Vec::new();
            let mut arrivals: Vec<(u64, u32)> = Vec::new();
            let mut t = 0;
            for (n, gap) in sdus {
                t += gap;
                arrivals.push((t, n.min(depth)));
            }
            let mut released: Vec<(u64, u32)> = Vec::new();
            let mut next = 0;
            let mut now = 0u64;
            loop {
                while next < arrivals.len() && arrivals[next].0 <= now {
                    s.offer(arrivals[next].1).unwrap();
                    offered.push(arrivals[next].1);
                    next += 1;
                }
                if let Some(r) = s.poll_release(Instant::from_nanos(now)) {
                    prop_assert_eq!(r.at.as_nanos(), now);
                    released.push((now, r.cells));
                    continue;
                }
                let wake = s.poll_timeout().map(Instant::as_nanos);
                if let Some(w) = wake {
                    prop_assert!(w > now);
                }
                now = match (wake, arrivals.get(next).map(|a| a.0)) {
                    (Some(w), Some(a)) => w.min(a),
                    (Some(w), None) => w,
                    (None, Some(a)) => a,
                    (None, None) => break,
                };
            }
            let sizes: Vec<u32> = released.iter().map(|r| r.1).collect();
            prop_assert_eq!(sizes, offered);
            // Every window [released[i], released[j]]: cells ≤ depth + rate · span.
            for i in 0..released.len() {
                let mut cells = 0u128;
                for j in i..released.len() {
                    cells += u128::from(released[j].1);
                    let span = u128::from(released[j].0 - released[i].0);
                    prop_assert!(
                        cells * 1_000_000_000 <= u128::from(depth) * 1_000_000_000 + u128::from(rate) * span,
                        "{} cells in {} ns", cells, span
                    );
                }
            }
        }
    }
}

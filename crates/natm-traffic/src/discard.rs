//! Frame-aware discard for queues of AAL5 cells: early packet discard (EPD) and partial
//! packet discard (PPD).
//!
//! A queue that drops single cells of AAL5 frames wastes the link: one lost cell ruins the
//! whole frame at the receiver (its CRC fails), yet the frame's other cells still cross the
//! link. Romanow and Floyd ("Dynamics of TCP traffic over ATM networks", IEEE JSAC 13(4),
//! 1995) showed the cure that ATM Forum TM 4.1 §5.8 ("frame discard") and I.371 allow:
//!
//! * **EPD**: when the queue holds at least the EPD threshold, the *first* cell of a new
//!   frame is dropped, and so is every later cell of that frame, its last cell included.
//!   Whole frames are refused before the queue is full.
//! * **PPD**: when a cell of a frame already admitted must be dropped (the queue is full),
//!   the rest of that frame is dropped too, **except its last cell**, which is kept (if
//!   there is room) so that the receiver sees the frame boundary and the next frame does
//!   not merge with the remains of this one.
//!
//! [`FrameDiscard`] holds the thresholds and decides; [`VcFrameState`] is the few bytes of
//! state per VC that a queue keeps beside its VC entry (a switch port keeps it in its own
//! VC table); [`FrameQueue`] is a FIFO of cells of many VCs that applies both, for the
//! adapter, the simulator and tests. Cells of VCs that do not carry AAL5 (AAL0, OAM flows)
//! go through [`FrameDiscard::decide_cell`]: plain tail drop.
//!
//! Call contract: for each arriving cell, call [`FrameDiscard::decide`] with the VC's state,
//! the queue's occupancy in cells *before* the cell, and whether the cell ends its frame
//! (AAL5's PTI SDU-type 1); enqueue it only on [`Decision::Enqueue`]. No time is involved,
//! nothing here panics, and occupancy never exceeds the capacity if the caller follows the
//! decisions.

use alloc::collections::{BTreeMap, VecDeque};
use core::fmt;

/// Why a cell was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Early packet discard: its frame was refused at its first cell.
    Epd,
    /// Partial packet discard: an earlier cell of its frame was dropped.
    Ppd,
    /// The queue was full (tail drop); if the frame was under way, PPD follows.
    Full,
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DropReason::Epd => "early packet discard",
            DropReason::Ppd => "partial packet discard",
            DropReason::Full => "queue full",
        })
    }
}

/// What to do with an arriving cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Put it in the queue.
    Enqueue,
    /// Drop it.
    Drop(DropReason),
}

/// Where a VC is in its current frame, as the discard logic sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum VcFrameState {
    /// Between frames: the next cell starts a new frame.
    #[default]
    Idle,
    /// The frame's cells so far were enqueued.
    Accepting,
    /// The frame was refused at its first cell (EPD): drop the rest, last cell included.
    EarlyDiscard,
    /// A cell of the frame was dropped (PPD): drop the rest but keep the last cell.
    PartialDiscard,
}

impl VcFrameState {
    /// Dropping the rest of a frame (EPD or PPD): its cells must each go through
    /// [`FrameDiscard::decide`], and [`FrameDiscard::pass_through`] refuses them.
    pub const fn is_discarding(self) -> bool {
        matches!(
            self,
            VcFrameState::EarlyDiscard | VcFrameState::PartialDiscard
        )
    }
}

/// Cells counted per outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiscardCounters {
    /// Cells enqueued.
    pub enqueued: u64,
    /// Cells dropped by EPD (whole frames).
    pub epd_cells: u64,
    /// Frames refused by EPD.
    pub epd_frames: u64,
    /// Cells dropped by PPD after an earlier cell of their frame was dropped.
    pub ppd_cells: u64,
    /// Cells dropped because the queue was full.
    pub full_cells: u64,
    /// Last cells of PPD frames that had to be dropped too (no room): the receiver will
    /// merge the remains of that frame with the next one, and both fail their CRC.
    pub lost_boundaries: u64,
}

/// EPD/PPD thresholds are not usable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscardConfigError {
    /// A queue of 0 cells holds nothing.
    ZeroCapacity,
    /// The EPD threshold is 0 (every frame would be refused) or above the capacity.
    Threshold {
        /// The EPD threshold, cells.
        epd_threshold: u32,
        /// The capacity, cells.
        capacity: u32,
    },
}

impl fmt::Display for DiscardConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiscardConfigError::ZeroCapacity => f.write_str("a queue of 0 cells holds nothing"),
            DiscardConfigError::Threshold {
                epd_threshold,
                capacity,
            } => write!(
                f,
                "EPD threshold {epd_threshold} cells must be between 1 and the capacity \
                 {capacity} cells"
            ),
        }
    }
}

impl core::error::Error for DiscardConfigError {}

/// The frame-discard policy of one queue: its capacity and EPD threshold, and counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameDiscard {
    capacity: u32,
    epd_threshold: u32,
    counters: DiscardCounters,
}

impl FrameDiscard {
    /// A policy for a queue of `capacity` cells that refuses new frames once it holds
    /// `epd_threshold` cells (`epd_threshold == capacity`: PPD only).
    pub fn new(capacity: u32, epd_threshold: u32) -> Result<Self, DiscardConfigError> {
        if capacity == 0 {
            return Err(DiscardConfigError::ZeroCapacity);
        }
        if epd_threshold == 0 || epd_threshold > capacity {
            return Err(DiscardConfigError::Threshold {
                epd_threshold,
                capacity,
            });
        }
        Ok(FrameDiscard {
            capacity,
            epd_threshold,
            counters: DiscardCounters::default(),
        })
    }

    /// The queue's capacity, cells.
    pub const fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The EPD threshold, cells.
    pub const fn epd_threshold(&self) -> u32 {
        self.epd_threshold
    }

    /// Cells counted per outcome so far.
    pub const fn counters(&self) -> DiscardCounters {
        self.counters
    }

    /// Decides on a cell of an AAL5 VC in state `vc`, arriving at a queue that holds
    /// `occupancy` cells; `end_of_frame` is the cell's AAL5 end-of-frame mark. Updates
    /// `vc` and the counters.
    pub fn decide(
        &mut self,
        vc: &mut VcFrameState,
        occupancy: u32,
        end_of_frame: bool,
    ) -> Decision {
        let full = occupancy >= self.capacity;
        let c = &mut self.counters;
        let (decision, next) = match *vc {
            VcFrameState::Idle if occupancy >= self.epd_threshold => {
                c.epd_frames += 1;
                (Decision::Drop(DropReason::Epd), VcFrameState::EarlyDiscard)
            }
            VcFrameState::Idle | VcFrameState::Accepting if full => (
                Decision::Drop(DropReason::Full),
                VcFrameState::PartialDiscard,
            ),
            VcFrameState::Idle | VcFrameState::Accepting => {
                (Decision::Enqueue, VcFrameState::Accepting)
            }
            VcFrameState::EarlyDiscard => {
                (Decision::Drop(DropReason::Epd), VcFrameState::EarlyDiscard)
            }
            // The last cell of a PPD frame is kept so the receiver sees the boundary.
            VcFrameState::PartialDiscard if end_of_frame && !full => {
                (Decision::Enqueue, VcFrameState::Idle)
            }
            VcFrameState::PartialDiscard if end_of_frame => (
                Decision::Drop(DropReason::Full),
                VcFrameState::PartialDiscard,
            ),
            VcFrameState::PartialDiscard => (
                Decision::Drop(DropReason::Ppd),
                VcFrameState::PartialDiscard,
            ),
        };
        match decision {
            Decision::Enqueue => c.enqueued += 1,
            Decision::Drop(DropReason::Epd) => c.epd_cells += 1,
            Decision::Drop(DropReason::Ppd) => c.ppd_cells += 1,
            Decision::Drop(DropReason::Full) => c.full_cells += 1,
        }
        // A frame's last cell ends whatever state it was in.
        *vc = if end_of_frame {
            if next == VcFrameState::PartialDiscard {
                // The frame lost a cell and its last cell met a full queue too.
                c.lost_boundaries += 1;
            }
            VcFrameState::Idle
        } else {
            next
        };
        decision
    }

    /// Takes `cells` cells of an AAL5 VC in state `vc` into a queue that stays empty (they
    /// leave as they come), the last of them ending a frame if `last_ends_frame`: what
    /// [`decide`](Self::decide) with occupancy 0 does cell by cell, in one step. `false`,
    /// and nothing changed, when `vc` is discarding a frame (the cells must go through
    /// `decide`).
    pub fn pass_through(
        &mut self,
        vc: &mut VcFrameState,
        cells: u32,
        last_ends_frame: bool,
    ) -> bool {
        if vc.is_discarding() {
            return false;
        }
        if cells > 0 {
            // At occupancy 0 neither the EPD threshold (at least 1) nor the capacity is
            // reached: every cell is enqueued and the frame state follows the marks.
            self.counters.enqueued += u64::from(cells);
            *vc = if last_ends_frame {
                VcFrameState::Idle
            } else {
                VcFrameState::Accepting
            };
        }
        true
    }

    /// Decides on a cell of a VC without frames (AAL0, OAM): enqueue unless full.
    pub fn decide_cell(&mut self, occupancy: u32) -> Decision {
        if occupancy >= self.capacity {
            self.counters.full_cells += 1;
            Decision::Drop(DropReason::Full)
        } else {
            self.counters.enqueued += 1;
            Decision::Enqueue
        }
    }
}

/// A FIFO of cells of many VCs with EPD/PPD: the queue of an adapter or a switch port in
/// its simplest form. `K` names a VC, `T` is a cell (or a handle to one).
#[derive(Clone, Debug)]
pub struct FrameQueue<K: Ord + Copy, T> {
    policy: FrameDiscard,
    cells: VecDeque<(K, T)>,
    vcs: BTreeMap<K, VcFrameState>,
}

impl<K: Ord + Copy, T> FrameQueue<K, T> {
    /// An empty queue with this policy.
    pub fn new(policy: FrameDiscard) -> Self {
        FrameQueue {
            policy,
            cells: VecDeque::new(),
            vcs: BTreeMap::new(),
        }
    }

    /// Offers a cell of AAL5 VC `vc`; `end_of_frame` is its AAL5 end-of-frame mark.
    pub fn push_aal5(&mut self, vc: K, end_of_frame: bool, cell: T) -> Decision {
        let occupancy = self.len();
        let state = self.vcs.entry(vc).or_default();
        let d = self.policy.decide(state, occupancy, end_of_frame);
        if *state == VcFrameState::Idle {
            // Between frames there is nothing to remember for this VC.
            self.vcs.remove(&vc);
        }
        if d == Decision::Enqueue {
            self.cells.push_back((vc, cell));
        }
        d
    }

    /// Offers a cell of a VC without frames (tail drop only).
    pub fn push_cell(&mut self, vc: K, cell: T) -> Decision {
        let d = self.policy.decide_cell(self.len());
        if d == Decision::Enqueue {
            self.cells.push_back((vc, cell));
        }
        d
    }

    /// Takes the oldest cell.
    pub fn pop(&mut self) -> Option<(K, T)> {
        self.cells.pop_front()
    }

    /// Cells queued.
    pub fn len(&self) -> u32 {
        // The policy never lets the queue pass its u32 capacity.
        u32::try_from(self.cells.len()).unwrap_or(u32::MAX)
    }

    /// Whether no cell is queued.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The policy and its counters.
    pub fn policy(&self) -> &FrameDiscard {
        &self.policy
    }

    /// Where `vc` is in its current frame.
    pub fn vc_state(&self, vc: K) -> VcFrameState {
        self.vcs.get(&vc).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    use DropReason::*;
    use VcFrameState::*;

    fn policy() -> FrameDiscard {
        FrameDiscard::new(10, 6).unwrap()
    }

    /// One decision from a given state: (decision, state after).
    fn step(
        from: VcFrameState,
        occupancy: u32,
        eof: bool,
    ) -> (Decision, VcFrameState, DiscardCounters) {
        let mut p = policy();
        let mut s = from;
        let d = p.decide(&mut s, occupancy, eof);
        (d, s, p.counters())
    }

    #[test]
    fn test_config_errors() {
        assert_eq!(
            FrameDiscard::new(0, 0),
            Err(DiscardConfigError::ZeroCapacity)
        );
        let e = FrameDiscard::new(10, 11).unwrap_err();
        assert_eq!(
            e.to_string(),
            "EPD threshold 11 cells must be between 1 and the capacity 10 cells"
        );
        assert!(FrameDiscard::new(10, 0).is_err());
        assert!(FrameDiscard::new(10, 10).is_ok());
    }

    #[test]
    fn test_idle_first_cell_below_threshold() {
        assert_eq!(step(Idle, 5, false).0, Decision::Enqueue);
        assert_eq!(step(Idle, 5, false).1, Accepting);
        // A one-cell frame leaves the VC between frames.
        assert_eq!(step(Idle, 5, true).1, Idle);
    }

    #[test]
    fn test_idle_first_cell_at_threshold_is_epd() {
        let (d, s, c) = step(Idle, 6, false);
        assert_eq!((d, s), (Decision::Drop(Epd), EarlyDiscard));
        assert_eq!((c.epd_frames, c.epd_cells), (1, 1));
        // A one-cell frame refused by EPD: nothing more to drop.
        assert_eq!(step(Idle, 6, true).1, Idle);
    }

    #[test]
    fn test_early_discard_drops_to_the_last_cell_even_with_room() {
        assert_eq!(
            step(EarlyDiscard, 0, false),
            (
                Decision::Drop(Epd),
                EarlyDiscard,
                DiscardCounters {
                    epd_cells: 1,
                    ..Default::default()
                }
            )
        );
        let (d, s, _) = step(EarlyDiscard, 0, true);
        assert_eq!((d, s), (Decision::Drop(Epd), Idle));
    }

    #[test]
    fn test_accepting_continues_above_threshold() {
        // EPD acts only on first cells: a frame under way keeps going while there is room.
        assert_eq!(step(Accepting, 9, false).0, Decision::Enqueue);
        assert_eq!(
            step(Accepting, 9, true),
            (
                Decision::Enqueue,
                Idle,
                DiscardCounters {
                    enqueued: 1,
                    ..Default::default()
                }
            )
        );
    }

    #[test]
    fn test_accepting_full_starts_ppd() {
        let (d, s, c) = step(Accepting, 10, false);
        assert_eq!((d, s), (Decision::Drop(Full), PartialDiscard));
        assert_eq!(c.full_cells, 1);
    }

    #[test]
    fn test_accepting_full_on_last_cell_loses_the_boundary() {
        let (d, s, c) = step(Accepting, 10, true);
        assert_eq!((d, s), (Decision::Drop(Full), Idle));
        assert_eq!(c.lost_boundaries, 1);
    }

    #[test]
    fn test_partial_discard_drops_middle_cells_with_room() {
        let (d, s, c) = step(PartialDiscard, 0, false);
        assert_eq!((d, s), (Decision::Drop(Ppd), PartialDiscard));
        assert_eq!(c.ppd_cells, 1);
    }

    #[test]
    fn test_partial_discard_keeps_the_last_cell() {
        let (d, s, c) = step(PartialDiscard, 9, true);
        assert_eq!((d, s), (Decision::Enqueue, Idle));
        assert_eq!(c.enqueued, 1);
    }

    #[test]
    fn test_partial_discard_last_cell_without_room() {
        let (d, s, c) = step(PartialDiscard, 10, true);
        assert_eq!((d, s), (Decision::Drop(Full), Idle));
        assert_eq!((c.full_cells, c.lost_boundaries), (1, 1));
    }

    #[test]
    fn test_cell_without_frames_is_tail_dropped() {
        let mut p = policy();
        assert_eq!(p.decide_cell(9), Decision::Enqueue);
        assert_eq!(p.decide_cell(10), Decision::Drop(Full));
        assert_eq!(p.counters().full_cells, 1);
    }

    /// A queue filled by one VC's long frame: the frame under way is cut by PPD (its last
    /// cell kept), the next frame is refused whole by EPD.
    #[test]
    fn test_queue_ppd_then_epd() {
        let mut q: FrameQueue<u8, u32> = FrameQueue::new(FrameDiscard::new(4, 2).unwrap());
        let out: Vec<Decision> = (0..6).map(|i| q.push_aal5(1, i == 5, i)).collect();
        assert_eq!(
            out,
            [
                Decision::Enqueue,
                Decision::Enqueue,
                Decision::Enqueue,
                Decision::Enqueue,
                Decision::Drop(Full),
                Decision::Drop(Full), // the last cell finds the queue still full
            ]
        );
        assert_eq!(q.vc_state(1), Idle);
        q.pop();
        q.pop();
        // Two queued: the next frame meets the EPD threshold and is refused whole.
        assert_eq!(q.push_aal5(1, false, 10), Decision::Drop(Epd));
        q.pop();
        q.pop();
        assert_eq!(q.push_aal5(1, true, 11), Decision::Drop(Epd));
        // And the frame after it starts afresh on an empty queue.
        assert_eq!(q.push_aal5(1, true, 12), Decision::Enqueue);
        assert_eq!(q.pop(), Some((1, 12)));
        let c = q.policy().counters();
        assert_eq!((c.epd_frames, c.epd_cells, c.lost_boundaries), (1, 2, 1));
    }

    /// Frames of several VCs interleaved into a queue drained at random: check what a
    /// receiver would see.
    #[derive(Clone, Debug)]
    enum Op {
        /// A cell of VC `vc`'s current frame; `last` ends it.
        Cell { vc: u8, last: bool },
        /// The link takes `n` cells.
        Drain { n: u8 },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u8..4, prop::bool::weighted(0.2)).prop_map(|(vc, last)| Op::Cell { vc, last }),
            1 => (0u8..8).prop_map(|n| Op::Drain { n }),
        ]
    }

    proptest! {
        /// `pass_through` of a run is `decide` at occupancy 0 for each of its cells: every
        /// cell enqueued, the same counters and state after. From a frame being discarded
        /// it refuses and changes nothing.
        #[test]
        fn pass_through_is_decide_on_an_empty_queue(
            capacity in 1u32..20,
            threshold in 1u32..20,
            from in prop_oneof![Just(Idle), Just(Accepting), Just(EarlyDiscard), Just(PartialDiscard)],
            eofs in prop::collection::vec(any::<bool>(), 0..20),
        ) {
            let threshold = threshold.min(capacity);
            let mut one = FrameDiscard::new(capacity, threshold).unwrap();
            let mut s1 = from;
            // Every cell decided (no short cut: each decision moves the state).
            let decisions: Vec<Decision> = eofs.iter().map(|&e| one.decide(&mut s1, 0, e)).collect();
            let all_taken = decisions.iter().all(|&d| d == Decision::Enqueue);
            let mut run = FrameDiscard::new(capacity, threshold).unwrap();
            let mut s2 = from;
            let n = eofs.len() as u32;
            if run.pass_through(&mut s2, n, eofs.last().copied().unwrap_or(false)) {
                prop_assert!(all_taken);
                prop_assert_eq!((run.counters(), s2), (one.counters(), s1));
            } else {
                prop_assert_eq!((run.counters(), s2), (DiscardCounters::default(), from));
                prop_assert!(matches!(from, EarlyDiscard | PartialDiscard));
            }
        }
    }

    proptest! {
        /// The queue never passes its capacity; per VC, cells leave in the order they came;
        /// a frame refused by EPD sends nothing; a frame that lost a cell still sends its
        /// last cell unless that cell too met a full queue (counted as a lost boundary);
        /// every cell is counted exactly once.
        #[test]
        fn epd_ppd_invariants(
            capacity in 1u32..20,
            threshold_frac in 1u32..=100,
            ops in prop::collection::vec(op(), 1..400),
        ) {
            let threshold = (capacity * threshold_frac).div_ceil(100).max(1);
            let mut q: FrameQueue<u8, (u32, bool)> =
                FrameQueue::new(FrameDiscard::new(capacity, threshold).unwrap());
            // Per VC: (frame number, cells offered in this frame, any dropped, first dropped by EPD).
            let mut frame = [0u32; 4];
            let mut dropped_in_frame = [false; 4];
            let mut epd_frame = [false; 4];
            let mut offered = 0u64;
            let mut out: Vec<(u8, (u32, bool))> = Vec::new();
            let mut boundary_losses = 0u64;
            for op in ops {
                match op {
                    Op::Cell { vc, last } => {
                        let v = usize::from(vc);
                        let first = q.vc_state(vc) == Idle;
                        let d = q.push_aal5(vc, last, (frame[v], last));
                        offered += 1;
                        prop_assert!(q.len() <= capacity);
                        if first {
                            epd_frame[v] = d == Decision::Drop(Epd);
                            dropped_in_frame[v] = false;
                        }
                        if epd_frame[v] {
                            prop_assert_eq!(d, Decision::Drop(Epd));
                        } else if dropped_in_frame[v] && !last {
                            prop_assert_eq!(d, Decision::Drop(Ppd));
                        }
                        if d != Decision::Enqueue {
                            dropped_in_frame[v] = true;
                            if last && !epd_frame[v] {
                                boundary_losses += 1;
                            }
                        }
                        if last {
                            frame[v] += 1;
                        }
                    }
                    Op::Drain { n } => {
                        for _ in 0..n {
                            if let Some(c) = q.pop() {
                                out.push(c);
                            }
                        }
                    }
                }
            }
            while let Some(c) = q.pop() {
                out.push(c);
            }
            let c = q.policy().counters();
            prop_assert_eq!(
                c.enqueued + c.epd_cells + c.ppd_cells + c.full_cells,
                offered
            );
            prop_assert_eq!(c.enqueued, out.len() as u64);
            prop_assert_eq!(c.lost_boundaries, boundary_losses);
            for vc in 0..4u8 {
                let frames: Vec<u32> = out.iter().filter(|(v, _)| *v == vc).map(|(_, (f, _))| *f).collect();
                prop_assert!(frames.windows(2).all(|w| w[0] <= w[1]), "VC {} out of order", vc);
            }
        }
    }
}

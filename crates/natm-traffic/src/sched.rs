//! The cell scheduler and shaper of one link.
//!
//! A [`Scheduler`] decides which VC sends in each cell slot of a link. Each VC has a
//! category ([`Category`], a service category of ATM Forum TM 4.1, atm-facts §4.1), a
//! contract (PCR; SCR and MBS for VBR) and a backlog **counted in cells**: the caller keeps
//! the cells (or the SDU they will be cut from) and makes each one when told which VC sends,
//! so segmentation can stay lazy and zero-copy.
//!
//! What is sent, in each slot, in this order:
//!
//! 1. **CBR and rt-VBR**: VCs come off a timing wheel (a calendar with one bucket per link
//!    slot) at the slot in which their contract lets them send again, earliest first (to the
//!    resolution of one slot).
//! 2. **nrt-VBR**: VCs whose GCRAs allow, in the order they became eligible.
//! 3. **UBR**: by weighted round robin in the slots left: in each round a VC has a turn of
//!    its weight in cells, sent at its PCR while it heads the ring. Shares among
//!    backlogged UBR VCs are in proportion to their weights when the link, not their
//!    PCRs, holds them back; a VC its PCR holds back keeps the rest of its turn until the
//!    round ends, and the others take the slots it cannot use.
//!
//! Every VC, whatever its category, is **shaped to its own contract with CDVT = 0**: a cell
//! leaves only when the VC's peak-rate GCRA(1/PCR, 0) (TM 4.1 §4.4.3, I.371 §4.4.3.2) and,
//! for VBR, its sustainable-rate GCRA(1/SCR, BT) with BT = (MBS − 1)(1/SCR − 1/PCR) both
//! conform at the instant it leaves. So a burst is spaced at PCR (cell-level smoothing,
//! never back to back above PCR), at most MBS cells go at PCR before the SCR bucket
//! holds them to SCR, and the output passes a UPC ([`Policer`](crate::policer::Policer))
//! for the contract at CDVT = 0, which a property test checks on random mixes of VCs.
//! The standards define what the output must conform to; the order of service above is
//! natm's choice (as it is every switch's and adapter's).
//!
//! # Time
//!
//! Time is exact. Link slot `k` is the interval `[k/R, (k + 1)/R)` s of a link of `R`
//! cells/s, computed in integers (no rounding of 1/R), and carries at most one cell. The
//! GCRAs are those of [`gcra`](crate::gcra), in their exact ticks (no rounding of 1/PCR):
//! the SCR bucket is a [`Gcra`]; the PCR bucket, with L = 0 and a VC
//! that never sends before it allows, reduces to one exact number, `⌈10⁹/PCR⌉` ns from
//! each cell to the next allowed one (a test checks it against `Gcra` step by step).
//! A cell sent in slot `k` leaves at [`Transmit::at`]: `now`, or later within the same slot
//! if the VC's contract allows it only from that instant. Departures are whole
//! nanoseconds, so a VC whose 1/PCR is not a whole number of ns cannot be spaced exactly
//! 1/PCR apart at CDVT 0: consecutive cells are at least ⌈1/PCR⌉ ns apart, which is the
//! highest rate a CDVT-0 policer accepts on a nanosecond clock (see
//! [`policer`](crate::policer)'s module doc).
//!
//! # Not here
//!
//! No admission control (that is [`cac`](crate::cac): the scheduler serves an
//! over-booked link, late), no cell bytes, no ABR or GFR, no buffer limits or discard
//! policy (the backlog is the caller's queue; the scheduler only counts it), no CLP
//! tagging. Packet-level smoothing of SDUs is [`smooth`](crate::smooth).
//!
//! # Implementation
//!
//! A VC is in at most one intrusive list (index links in its slab entry, no allocation per
//! event): a wheel bucket, the real-time ready list (CBR, rt-VBR), the nrt-VBR ready list,
//! or the UBR ring. The wheel has 2¹⁴ buckets of one slot each and a bitmap of the
//! non-empty ones, so a jump over idle time costs a bitmap scan, not a walk; a VC due more
//! than one turn of the wheel ahead stays in its bucket until its turn comes round.

use alloc::vec::Vec;
use core::fmt;

use natm_core::{Duration, Instant};

use crate::gcra::Gcra;
use crate::policer::{Conformance, Contract, ContractError};

/// [`gcra`](crate::gcra)'s nanoseconds per second, as the `u64` slot arithmetic needs.
const NS_PER_S: u64 = crate::gcra::NS_PER_S as u64;
/// "No VC" in the intrusive links.
const NIL: u32 = u32::MAX;
/// Wheel buckets: 2¹⁴ slots, 46 ms at OC-3c; later VCs wait in their bucket for a turn.
const WHEEL_BITS: u32 = 14;
const WHEEL: usize = 1 << WHEEL_BITS;
const MASK: u64 = WHEEL as u64 - 1;

/// A service category as the scheduler serves it (TM 4.1 §2). natm-core's
/// [`TrafficClass`](natm_core::TrafficClass) follows linux-atm, which has one VBR class;
/// the scheduler needs real-time and non-real-time VBR apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// Constant bit rate: PCR, from the timing wheel first.
    Cbr,
    /// Real-time VBR: PCR, SCR, MBS, from the timing wheel with CBR.
    RtVbr,
    /// Non-real-time VBR: PCR, SCR, MBS, after the real-time categories.
    NrtVbr,
    /// Unspecified bit rate: PCR, by weighted round robin in the slots left.
    Ubr,
}

impl Category {
    /// The name as TM 4.1 writes it.
    pub const fn name(self) -> &'static str {
        match self {
            Category::Cbr => "CBR",
            Category::RtVbr => "rt-VBR",
            Category::NrtVbr => "nrt-VBR",
            Category::Ubr => "UBR",
        }
    }

    /// The conformance definition the scheduler shapes to: CBR.1, VBR.1 (both VBR
    /// categories: the SCR bucket tests every cell) or UBR.1.
    pub const fn conformance(self) -> Conformance {
        match self {
            Category::Cbr => Conformance::Cbr1,
            Category::RtVbr | Category::NrtVbr => Conformance::Vbr1,
            Category::Ubr => Conformance::Ubr1,
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a VC asks of the scheduler: its category and contract, in cells/s and cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VcSpec {
    /// The service category.
    pub category: Category,
    /// Peak cell rate, cells/s: 1 up to the link rate.
    pub pcr: u32,
    /// Sustainable cell rate, cells/s, for VBR (0 otherwise).
    pub scr: u32,
    /// Maximum burst size at PCR, cells, for VBR (0 otherwise).
    pub mbs: u32,
    /// Weighted-round-robin weight for UBR (cells per turn, at least 1); other categories
    /// ignore it.
    pub weight: u32,
}

impl VcSpec {
    /// A CBR VC at `pcr` cells/s.
    pub const fn cbr(pcr: u32) -> VcSpec {
        VcSpec {
            category: Category::Cbr,
            pcr,
            scr: 0,
            mbs: 0,
            weight: 1,
        }
    }

    /// An rt-VBR VC.
    pub const fn rt_vbr(pcr: u32, scr: u32, mbs: u32) -> VcSpec {
        VcSpec {
            category: Category::RtVbr,
            pcr,
            scr,
            mbs,
            weight: 1,
        }
    }

    /// An nrt-VBR VC.
    pub const fn nrt_vbr(pcr: u32, scr: u32, mbs: u32) -> VcSpec {
        VcSpec {
            category: Category::NrtVbr,
            pcr,
            scr,
            mbs,
            weight: 1,
        }
    }

    /// A UBR VC limited to `pcr` cells/s with round-robin weight `weight`.
    pub const fn ubr(pcr: u32, weight: u32) -> VcSpec {
        VcSpec {
            category: Category::Ubr,
            pcr,
            scr: 0,
            mbs: 0,
            weight,
        }
    }

    /// The contract the VC is shaped to: its rates with CDVT 0.
    pub const fn contract(&self) -> Contract {
        Contract {
            pcr: self.pcr,
            scr: self.scr,
            mbs: self.mbs,
            cdvt: Duration::ZERO,
        }
    }

    /// Whether a shaper may take the spec, whatever the link: its contract is well formed
    /// for its category's conformance definition ([`Contract::check`]) and a UBR weight is
    /// at least 1. [`Scheduler::add_vc`] checks this and, besides, the PCR against the link.
    pub fn check(&self) -> Result<(), SchedError> {
        self.contract()
            .check(self.category.conformance())
            .map_err(SchedError::Contract)?;
        if self.category == Category::Ubr && self.weight == 0 {
            return Err(SchedError::ZeroWeight);
        }
        Ok(())
    }
}

/// A VC of a [`Scheduler`]: an index into its table and a generation, so a handle kept
/// after [`Scheduler::remove_vc`] is refused rather than taken for a newer VC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VcHandle {
    index: u32,
    generation: u32,
}

impl VcHandle {
    /// The index in the scheduler's table: dense, reused after removal, handy for the
    /// caller's own per-VC tables.
    pub const fn index(self) -> usize {
        self.index as usize
    }
}

impl fmt::Display for VcHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "vc#{}.{}", self.index, self.generation)
    }
}

/// Why a scheduler call was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedError {
    /// The link rate is 0 or above 10⁹ cells/s (a slot must last at least 1 ns).
    LinkRate {
        /// The rate asked for, cells/s.
        rate: u32,
    },
    /// The PCR is above the link rate.
    PcrAboveLink {
        /// Peak cell rate, cells/s.
        pcr: u32,
        /// The link rate, cells/s.
        link: u32,
    },
    /// The contract is not well formed for the category's conformance definition.
    Contract(ContractError),
    /// A UBR VC has weight 0.
    ZeroWeight,
    /// The handle names no VC of this scheduler (never added, or removed).
    UnknownVc(VcHandle),
    /// The VC's backlog would pass 2⁶⁴ − 1 cells.
    BacklogOverflow(VcHandle),
    /// The table holds 2³² − 1 VCs already.
    TooManyVcs,
}

impl fmt::Display for SchedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedError::LinkRate { rate } => {
                write!(f, "link rate {rate} cells/s is not in 1..=1000000000")
            }
            SchedError::PcrAboveLink { pcr, link } => {
                write!(f, "PCR {pcr} cells/s is above the link's {link} cells/s")
            }
            SchedError::Contract(e) => e.fmt(f),
            SchedError::ZeroWeight => f.write_str("UBR weight is 0 (it must be at least 1)"),
            SchedError::UnknownVc(h) => write!(f, "no VC {h} on this scheduler"),
            SchedError::BacklogOverflow(h) => write!(f, "backlog of {h} would overflow"),
            SchedError::TooManyVcs => f.write_str("the scheduler holds too many VCs"),
        }
    }
}

impl core::error::Error for SchedError {}

/// One cell to send: which VC, when, in which slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// The VC whose next cell goes now; the caller makes that cell.
    pub vc: VcHandle,
    /// The departure instant: `now`, or a later ns of the same slot if the VC's contract
    /// allows the cell only from then. The cell conforms at this instant.
    pub at: Instant,
    /// The link slot that carries the cell (slot `k` is `[k/R, (k + 1)/R)` s): the slot
    /// of `at`, or with a [tolerance](Scheduler::set_tolerance) an earlier one a late call
    /// left unused.
    pub slot: u64,
    /// The VC's category.
    pub category: Category,
}

/// Where a VC is: its list, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Removed; the entry waits on the free list.
    Free,
    /// No backlog, in no list.
    Idle,
    /// In the wheel bucket of `due_slot`.
    Wheel,
    /// In the real-time ready list.
    Rt,
    /// In the nrt-VBR ready list.
    Nrt,
    /// In the UBR ring of this round (`ubr`) or, if it has spent this round's turn
    /// (`round` is the current one and `quantum` is 0), of the next (`ubr_next`).
    Ubr,
}

/// The part of a VC's entry that list walks touch, kept apart from the rest (24 bytes, so
/// the lists of 10,000 VCs stay in cache while their GCRAs need not).
#[derive(Clone, Copy, Debug)]
struct Link {
    /// The first slot in which the contract allows the VC's next cell.
    due_slot: u64,
    prev: u32,
    next: u32,
    place: Place,
    category: Category,
}

/// What sending a cell touches of a VC besides its [`Link`] (40 bytes; the SCR GCRA of
/// a VBR VC and the spec are kept apart, so CBR and UBR VCs touch nothing else).
#[derive(Clone, Copy, Debug)]
struct Vc {
    /// The first ns at which the contract allows its next cell.
    due_ns: u64,
    backlog: u64,
    /// The peak-rate GCRA(1/PCR, 0) in one number: ⌈10⁹ / PCR⌉ ns. A cell at `t` that the
    /// GCRA allowed (`t ≥ TAT`) sets `TAT = t + 1/PCR` exactly, so the next may go at
    /// `⌈t + 1/PCR⌉ = t + peak_step` (t is a whole ns); nothing else of that GCRA matters.
    peak_step: u64,
    /// UBR: cells left of its turn in round `round` (a turn is `weight` cells).
    quantum: u32,
    weight: u32,
    round: u32,
    generation: u32,
}

// The sizes the docs above promise (what a cell's decision pulls into cache; less where
// u64 is 4-aligned).
const _: () = assert!(core::mem::size_of::<Link>() <= 24);
const _: () = assert!(core::mem::size_of::<Vc>() <= 40);

/// An intrusive FIFO of VC indices.
#[derive(Clone, Copy, Debug)]
struct List {
    head: u32,
    tail: u32,
}

impl List {
    const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };

    const fn is_empty(&self) -> bool {
        self.head == NIL
    }
}

fn push_back(links: &mut [Link], l: &mut List, i: u32) {
    let v = &mut links[i as usize];
    v.prev = l.tail;
    v.next = NIL;
    if l.tail == NIL {
        l.head = i;
    } else {
        links[l.tail as usize].next = i;
    }
    l.tail = i;
}

fn unlink(links: &mut [Link], l: &mut List, i: u32) {
    let (p, n) = (links[i as usize].prev, links[i as usize].next);
    if p == NIL {
        l.head = n;
    } else {
        links[p as usize].next = n;
    }
    if n == NIL {
        l.tail = p;
    } else {
        links[n as usize].prev = p;
    }
    let v = &mut links[i as usize];
    v.prev = NIL;
    v.next = NIL;
}

/// `⌊t · r / 10⁹⌋` for `r ≤ 10⁹`, in `u64` without overflow (the result is at most `t`)
/// and with divisions by a constant only.
const fn slot_of_ns(t: u64, r: u64) -> u64 {
    (t / NS_PER_S) * r + (t % NS_PER_S) * r / NS_PER_S
}

/// The start of a slot in exact form: slot `k` starts at the ns `start = ⌈k · 10⁹ / R⌉`,
/// and `rem = start · R − k · 10⁹` (in `0..R`) says by how much that rounds up; the next
/// slot's start follows by addition, with no division.
#[derive(Clone, Copy, Debug)]
struct SlotStart {
    slot: u64,
    start: u64,
    rem: u64,
}

/// The cell scheduler of one link (see the module doc for what it serves in which order).
///
/// # Call contract
///
/// * Commands: [`add_vc`](Self::add_vc), [`remove_vc`](Self::remove_vc) and
///   [`enqueue`](Self::enqueue) (add cells to a VC's backlog) take no time: they act at
///   the latest `now` the scheduler has seen.
/// * Output: [`poll_transmit(now)`](Self::poll_transmit) hands out at most one cell per
///   link slot; [`poll_timeout`](Self::poll_timeout) says from when another could go.
///   The cell goes at [`Transmit::at`]: `now`, or a few ns later in the same slot when the
///   VC's contract allows it only then; a driver that paces cells by the clock holds it
///   until then (one that stamps cells stamps `at`).
/// * **Drain rule**: after any command, and when the time from `poll_timeout` comes, call
///   `poll_transmit(now)` until it returns `None`, then wait until `poll_timeout()`. Within
///   one slot the second call returns `None`; the next cell waits for the next slot.
/// * `now` must not go backwards; an earlier `now` is taken as the latest seen (clamped).
///
/// Nothing here panics on caller input: bad contracts and stale handles are
/// [`SchedError`]s.
#[derive(Clone, Debug)]
pub struct Scheduler {
    link: u32,
    /// `10⁹ = step_ns · R + step_rem`: one slot is `step_ns + step_rem / R` ns.
    step_ns: u64,
    step_rem: u64,
    links: Vec<Link>,
    vcs: Vec<Vc>,
    /// Each VBR VC's sustainable-rate GCRA (`None` for CBR and UBR).
    sustainable: Vec<Option<Gcra>>,
    specs: Vec<VcSpec>,
    free: Vec<u32>,
    active: usize,
    /// VCs with a backlog: each is in exactly one list.
    backlogged: usize,
    buckets: Vec<List>,
    /// Bit `b` set iff bucket `b` is non-empty.
    bitmap: Vec<u64>,
    wheel_len: usize,
    rt: List,
    nrt: List,
    /// UBR VCs that may send in this round (all due but perhaps the head) ...
    ubr: List,
    /// ... and the due ones that have spent their turn in this round.
    ubr_next: List,
    /// The UBR round.
    round: u32,
    /// The latest `now` seen.
    now: Instant,
    /// Every wheel entry due in a slot up to this one has been moved to its ready list.
    processed: u64,
    /// The first slot free for a cell (the one after the last cell sent), and its start.
    free_slot: SlotStart,
    sent: u64,
    /// How late a cell may leave and still count as leaving when it was due, ns (see
    /// [`Scheduler::set_tolerance`]); 0: CDVT-0 shaping.
    tolerance: u64,
    /// Each VC's first departure since its backlog last began (`None`: none yet): no
    /// credit before it. Enqueueing takes no `now`, so the first cell's is the start.
    since: Vec<Option<u64>>,
}

impl Scheduler {
    /// A scheduler for a link of `link_rate` cells/s (1 to 10⁹; OC-3c is 353 207).
    pub fn new(link_rate: u32) -> Result<Scheduler, SchedError> {
        if link_rate == 0 || u64::from(link_rate) > NS_PER_S {
            return Err(SchedError::LinkRate { rate: link_rate });
        }
        let r = u64::from(link_rate);
        Ok(Scheduler {
            link: link_rate,
            step_ns: NS_PER_S / r,
            step_rem: NS_PER_S % r,
            links: Vec::new(),
            vcs: Vec::new(),
            sustainable: Vec::new(),
            specs: Vec::new(),
            free: Vec::new(),
            active: 0,
            backlogged: 0,
            // The wheel (130 KiB) is made when a VC first waits in it: an adapter whose
            // VCs never wait for a slot (a switched VC's channel opened and closed per
            // call, unshaped) never zeroes it.
            buckets: Vec::new(),
            bitmap: Vec::new(),
            wheel_len: 0,
            rt: List::EMPTY,
            nrt: List::EMPTY,
            ubr: List::EMPTY,
            ubr_next: List::EMPTY,
            round: 0,
            now: Instant::ZERO,
            processed: 0,
            free_slot: SlotStart {
                slot: 0,
                start: 0,
                rem: 0,
            },
            sent: 0,
            tolerance: 0,
            since: Vec::new(),
        })
    }

    /// Lets a late caller keep the contracts' rates: a cell handed out up to `tolerance`
    /// after it was due counts, for its VC's GCRAs and for the link's slots, as leaving
    /// when it was due (no earlier than `now − tolerance`, nor before the first cell its
    /// VC sent since its backlog last began), so cells a late [`poll_transmit`](Self::poll_transmit) missed go together,
    /// one per unused slot, as a terminal's own cell delay variation. The output then
    /// conforms to GCRA(1/PCR, τ) and GCRA(1/SCR, BT + τ) for τ = `tolerance`, and a
    /// caller that calls at [`poll_timeout`](Self::poll_timeout) sees the same cells at
    /// the same instants as with none (unless its VCs contend for a slot, which makes the
    /// one that waits late). Zero (the default): CDVT-0 shaping, a late call
    /// loses the departures it missed.
    pub fn set_tolerance(&mut self, tolerance: Duration) {
        self.tolerance = tolerance.as_nanos();
    }

    /// The link rate, cells/s.
    pub const fn link_rate(&self) -> u32 {
        self.link
    }

    /// VCs added and not removed.
    pub const fn len(&self) -> usize {
        self.active
    }

    /// Whether no VC is added.
    pub const fn is_empty(&self) -> bool {
        self.active == 0
    }

    /// Cells handed out by [`poll_transmit`](Self::poll_transmit) so far.
    pub const fn sent(&self) -> u64 {
        self.sent
    }

    /// The slot that contains instant `t`: `⌊t · R / 10⁹⌋`.
    pub const fn slot_of(&self, t: Instant) -> u64 {
        slot_of_ns(t.as_nanos(), self.link as u64)
    }

    /// The first whole ns of slot `k`: `⌈k · 10⁹ / R⌉` (saturating at the end of time).
    pub const fn slot_start(&self, k: u64) -> Instant {
        let ns = (k as u128 * NS_PER_S as u128).div_ceil(self.link as u128);
        if ns > u64::MAX as u128 {
            Instant::from_nanos(u64::MAX)
        } else {
            Instant::from_nanos(ns as u64)
        }
    }

    /// Slot `k`'s start in exact form, by division.
    fn exact_start(&self, k: u64) -> SlotStart {
        let r = u128::from(self.link);
        let whole = u128::from(k) * u128::from(NS_PER_S);
        let start = whole.div_ceil(r);
        match u64::try_from(start) {
            Ok(s) => SlotStart {
                slot: k,
                start: s,
                rem: (start * r - whole) as u64,
            },
            // Past the end of time: no cell can go, and no slot starts.
            Err(_) => SlotStart {
                slot: k,
                start: u64::MAX,
                rem: 0,
            },
        }
    }

    /// Slot `s.slot + 1`'s start from slot `s.slot`'s, by addition.
    fn next_start(&self, s: SlotStart) -> SlotStart {
        let (start, rem) = if self.step_rem > s.rem {
            (
                s.start.saturating_add(self.step_ns + 1),
                u64::from(self.link) - (self.step_rem - s.rem),
            )
        } else {
            (s.start.saturating_add(self.step_ns), s.rem - self.step_rem)
        };
        let next = SlotStart {
            slot: s.slot + 1,
            start,
            rem,
        };
        debug_assert!(start == u64::MAX || start == self.slot_start(s.slot + 1).as_nanos());
        next
    }

    /// Adds a VC with no backlog. Its contract must be well formed for its category's
    /// conformance definition ([`Contract::check`]) with its PCR at most the link rate.
    pub fn add_vc(&mut self, spec: VcSpec) -> Result<VcHandle, SchedError> {
        spec.check()?;
        if spec.pcr > self.link {
            return Err(SchedError::PcrAboveLink {
                pcr: spec.pcr,
                link: self.link,
            });
        }
        let contract = spec.contract();
        let gcra_error = |e| SchedError::Contract(ContractError::Gcra(e));
        let peak = contract.peak_gcra().map_err(gcra_error)?;
        // The first ns at which a cell conforms after one at 0 (TAT = I): ⌈10⁹ / PCR⌉.
        let peak_step = peak.instant_at_or_after(peak.increment()).as_nanos();
        let sustainable = match spec.category {
            Category::RtVbr | Category::NrtVbr => {
                Some(Gcra::new(contract.sustainable_gcra().map_err(gcra_error)?))
            }
            Category::Cbr | Category::Ubr => None,
        };
        let weight = if spec.category == Category::Ubr {
            spec.weight
        } else {
            1
        };
        let fresh = |generation| Vc {
            due_ns: 0,
            backlog: 0,
            peak_step,
            quantum: weight,
            weight,
            round: self.round,
            generation,
        };
        let link = Link {
            due_slot: 0,
            prev: NIL,
            next: NIL,
            place: Place::Idle,
            category: spec.category,
        };
        let index = match self.free.pop() {
            Some(i) => {
                let generation = self.vcs[i as usize].generation;
                self.vcs[i as usize] = fresh(generation);
                self.links[i as usize] = link;
                self.sustainable[i as usize] = sustainable;
                self.specs[i as usize] = spec;
                self.since[i as usize] = None;
                i
            }
            None => {
                if self.vcs.len() >= NIL as usize {
                    return Err(SchedError::TooManyVcs);
                }
                self.vcs.push(fresh(0));
                self.links.push(link);
                self.sustainable.push(sustainable);
                self.specs.push(spec);
                self.since.push(None);
                (self.vcs.len() - 1) as u32
            }
        };
        self.active += 1;
        Ok(VcHandle {
            index,
            generation: self.vcs[index as usize].generation,
        })
    }

    /// Removes a VC and returns the cells of its backlog that were never sent (the caller
    /// drops them). The handle is refused from then on.
    pub fn remove_vc(&mut self, vc: VcHandle) -> Result<u64, SchedError> {
        let i = self.index(vc)?;
        self.detach(i);
        self.links[i as usize].place = Place::Free;
        let v = &mut self.vcs[i as usize];
        let dropped = v.backlog;
        if dropped > 0 {
            self.backlogged -= 1;
        }
        v.backlog = 0;
        v.generation = v.generation.wrapping_add(1);
        self.free.push(i);
        self.active -= 1;
        Ok(dropped)
    }

    /// The VC's spec.
    pub fn spec(&self, vc: VcHandle) -> Result<VcSpec, SchedError> {
        Ok(self.specs[self.index(vc)? as usize])
    }

    /// The VC's backlog, cells.
    pub fn backlog(&self, vc: VcHandle) -> Result<u64, SchedError> {
        Ok(self.vcs[self.index(vc)? as usize].backlog)
    }

    /// Adds `cells` to the VC's backlog and returns the new backlog. The caller keeps the
    /// cells; [`poll_transmit`](Self::poll_transmit) says when each one goes.
    pub fn enqueue(&mut self, vc: VcHandle, cells: u32) -> Result<u64, SchedError> {
        let i = self.index(vc)?;
        let v = &mut self.vcs[i as usize];
        let was = v.backlog;
        v.backlog = was
            .checked_add(u64::from(cells))
            .ok_or(SchedError::BacklogOverflow(vc))?;
        let backlog = v.backlog;
        if was == 0 && cells > 0 {
            self.since[i as usize] = None;
            self.backlogged += 1;
            self.place(i);
        }
        Ok(backlog)
    }

    /// The earliest instant at which [`poll_transmit`](Self::poll_transmit) could hand out
    /// a cell, never before the latest `now` seen; `None` if no VC has a backlog.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.backlogged == 0 {
            return None;
        }
        let ubr_ready = !self.ubr_next.is_empty()
            || (!self.ubr.is_empty()
                && (self.ubr.head != self.ubr.tail
                    || self.links[self.ubr.head as usize].due_slot <= self.processed));
        let start = if !self.rt.is_empty() || !self.nrt.is_empty() || ubr_ready {
            // Something may go in the first free slot, or now if that has begun.
            self.free_slot.start
        } else {
            let ubr = if self.ubr.is_empty() {
                u64::MAX
            } else {
                self.links[self.ubr.head as usize].due_slot
            };
            let due = ubr.min(self.wheel_min_slot().unwrap_or(u64::MAX));
            if due <= self.free_slot.slot {
                self.free_slot.start
            } else {
                self.slot_start(due).as_nanos()
            }
        };
        Some(Instant::from_nanos(start).max(self.now))
    }

    /// Hands out the cell that goes in the slot of `now`, if any: at most one per slot,
    /// real-time VCs first, then nrt-VBR, then UBR by weighted round robin.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let now = now.max(self.now);
        self.now = now;
        if now.as_nanos() < self.free_slot.start || self.backlogged == 0 {
            return None;
        }
        let s = self.slot_of(now);
        if s < self.free_slot.slot || s == u64::MAX {
            // Only at the end of time: the free slot's start saturated, or `s` is the last
            // slot of all (the last ns on a 10⁹ cells/s link), which no slot follows.
            return None;
        }
        self.advance(s);
        let free = self.free_slot.slot;
        let i = if !self.rt.is_empty() {
            let i = self.rt.head;
            unlink(&mut self.links, &mut self.rt, i);
            i
        } else if !self.nrt.is_empty() {
            let i = self.nrt.head;
            unlink(&mut self.links, &mut self.nrt, i);
            i
        } else {
            self.ubr_head(s)?
        };
        // A VC late for its cell takes the first slot left unused within the tolerance
        // (whatever VC it was due for: a late call serves categories in their order, not
        // by due time); with none, or for one due now, the slot of `now`.
        let mut c = s;
        if self.tolerance > 0 && self.links[i as usize].due_slot < s {
            let floor = self.slot_of(Instant::from_nanos(
                now.as_nanos().saturating_sub(self.tolerance),
            ));
            c = free.max(floor);
        }
        self.free_slot = if c == self.free_slot.slot {
            self.next_start(self.free_slot)
        } else {
            self.exact_start(c + 1)
        };
        Some(self.send(i, now, s, c))
    }

    /// The handle's index, if it names a live VC.
    fn index(&self, vc: VcHandle) -> Result<u32, SchedError> {
        match self.vcs.get(vc.index as usize) {
            Some(v)
                if v.generation == vc.generation
                    && self.links[vc.index as usize].place != Place::Free =>
            {
                Ok(vc.index)
            }
            _ => Err(SchedError::UnknownVc(vc)),
        }
    }

    /// Takes VC `i` out of whatever list it is in; it becomes idle.
    fn detach(&mut self, i: u32) {
        let l = &self.links[i as usize];
        match l.place {
            Place::Free | Place::Idle => {}
            Place::Wheel => {
                let b = (l.due_slot & MASK) as usize;
                unlink(&mut self.links, &mut self.buckets[b], i);
                self.wheel_len -= 1;
                if self.buckets[b].is_empty() {
                    self.bitmap[b / 64] &= !(1 << (b % 64));
                }
            }
            Place::Rt => unlink(&mut self.links, &mut self.rt, i),
            Place::Nrt => unlink(&mut self.links, &mut self.nrt, i),
            Place::Ubr => {
                let v = &self.vcs[i as usize];
                let list = if v.round == self.round && v.quantum == 0 {
                    &mut self.ubr_next
                } else {
                    &mut self.ubr
                };
                unlink(&mut self.links, list, i);
            }
        }
        self.links[i as usize].place = Place::Idle;
    }

    /// Puts a backlogged VC that is in no list where it belongs: its ready list if its
    /// due slot has been reached, else the wheel.
    fn place(&mut self, i: u32) {
        let l = &mut self.links[i as usize];
        debug_assert!(l.prev == NIL && l.next == NIL);
        if l.due_slot <= self.processed {
            self.make_ready(i);
        } else {
            let b = (l.due_slot & MASK) as usize;
            l.place = Place::Wheel;
            if self.buckets.is_empty() {
                self.buckets = alloc::vec![List::EMPTY; WHEEL];
                self.bitmap = alloc::vec![0; WHEEL / 64];
            }
            push_back(&mut self.links, &mut self.buckets[b], i);
            self.bitmap[b / 64] |= 1 << (b % 64);
            self.wheel_len += 1;
        }
    }

    fn make_ready(&mut self, i: u32) {
        let l = &mut self.links[i as usize];
        let (place, list) = match l.category {
            Category::Cbr | Category::RtVbr => (Place::Rt, &mut self.rt),
            Category::NrtVbr => (Place::Nrt, &mut self.nrt),
            Category::Ubr => {
                let v = &mut self.vcs[i as usize];
                if v.round != self.round {
                    v.round = self.round;
                    v.quantum = v.weight;
                }
                if v.quantum > 0 {
                    (Place::Ubr, &mut self.ubr)
                } else {
                    (Place::Ubr, &mut self.ubr_next)
                }
            }
        };
        l.place = place;
        push_back(&mut self.links, list, i);
    }

    /// The first non-empty bucket at cyclic offset `off..count` from bucket `start`.
    fn next_bucket(&self, start: usize, mut off: usize, count: usize) -> Option<usize> {
        while off < count {
            let pos = (start + off) & MASK as usize;
            let (word, bit) = (pos / 64, pos % 64);
            let w = self.bitmap[word] >> bit;
            if w != 0 {
                let found = off + w.trailing_zeros() as usize;
                return (found < count).then_some(found);
            }
            off += 64 - bit;
        }
        None
    }

    /// Moves every wheel entry due in a slot up to `s` to its ready list.
    fn advance(&mut self, s: u64) {
        if s <= self.processed {
            return;
        }
        let from = self.processed + 1;
        let count = (s - from).saturating_add(1).min(WHEEL as u64) as usize;
        let start = (from & MASK) as usize;
        let mut off = 0;
        while self.wheel_len > 0 {
            let Some(o) = self.next_bucket(start, off, count) else {
                break;
            };
            let b = (start + o) & MASK as usize;
            let mut i = self.buckets[b].head;
            while i != NIL {
                let l = &self.links[i as usize];
                let next = l.next;
                if l.due_slot <= s {
                    unlink(&mut self.links, &mut self.buckets[b], i);
                    self.wheel_len -= 1;
                    self.make_ready(i);
                }
                i = next;
            }
            if self.buckets[b].is_empty() {
                self.bitmap[b / 64] &= !(1 << (b % 64));
            }
            off = o + 1;
        }
        self.processed = s;
    }

    /// The earliest due slot in the wheel.
    fn wheel_min_slot(&self) -> Option<u64> {
        if self.wheel_len == 0 {
            return None;
        }
        let from = self.processed + 1;
        let start = (from & MASK) as usize;
        let mut off = 0;
        while let Some(o) = self.next_bucket(start, off, WHEEL) {
            // Entries of this turn of the wheel are due exactly in slot `from + o`.
            let slot = from + o as u64;
            let mut i = self.buckets[(start + o) & MASK as usize].head;
            while i != NIL {
                if self.links[i as usize].due_slot == slot {
                    return Some(slot);
                }
                i = self.links[i as usize].next;
            }
            off = o + 1;
        }
        // Everything is more than a turn ahead: look at every entry.
        let mut min = u64::MAX;
        let mut off = 0;
        while let Some(b) = self.next_bucket(0, off, WHEEL) {
            let mut i = self.buckets[b].head;
            while i != NIL {
                let l = &self.links[i as usize];
                min = min.min(l.due_slot);
                i = l.next;
            }
            off = b + 1;
        }
        Some(min)
    }

    /// The UBR VC that sends in slot `s`, by weighted round robin in rounds: in each round
    /// a VC has a turn of `weight` cells, sent back to back (at its PCR) while it is the
    /// ring's head. A head its PCR holds back waits in the wheel, keeping the rest of its
    /// turn, and rejoins the ring at the tail, so the ring never stalls on it. When no VC
    /// due has a turn left, a new round begins: the ring is the VCs that spent theirs.
    fn ubr_head(&mut self, s: u64) -> Option<u32> {
        loop {
            let i = self.ubr.head;
            if i == NIL {
                if self.ubr_next.is_empty() {
                    return None;
                }
                // Their `round` is now the previous one: each gets a new turn at its head.
                self.round = self.round.wrapping_add(1);
                self.ubr = self.ubr_next;
                self.ubr_next = List::EMPTY;
                continue;
            }
            let v = &mut self.vcs[i as usize];
            if v.round != self.round {
                v.round = self.round;
                v.quantum = v.weight;
            }
            if self.links[i as usize].due_slot <= s {
                return Some(i);
            }
            unlink(&mut self.links, &mut self.ubr, i);
            self.links[i as usize].place = Place::Idle;
            self.place(i);
        }
    }

    /// Sends one cell of VC `i` in slot `s`, at `now` or later in the slot, counted in
    /// slot `c` (`s`, or an earlier one a late call left unused).
    fn send(&mut self, i: u32, now: Instant, s: u64, c: u64) -> Transmit {
        let category = self.links[i as usize].category;
        let v = &mut self.vcs[i as usize];
        debug_assert!(self.links[i as usize].due_slot <= s && v.backlog > 0);
        let at = Instant::from_nanos(now.as_nanos().max(v.due_ns));
        // Counted as leaving when it was due, within the tolerance (at `at` without one).
        let counted = at
            .as_nanos()
            .saturating_sub(self.tolerance)
            .max(v.due_ns)
            .max(*self.since[i as usize].get_or_insert(at.as_nanos()));
        let mut due = counted.saturating_add(v.peak_step);
        if let Some(g) = &mut self.sustainable[i as usize] {
            debug_assert!(g.is_conforming(at));
            g.record(Instant::from_nanos(counted));
            due = due.max(g.next_conforming().as_nanos());
        }
        v.due_ns = due;
        v.backlog -= 1;
        let backlog = v.backlog;
        let handle = VcHandle {
            index: i,
            generation: v.generation,
        };
        self.sent += 1;
        self.links[i as usize].due_slot = slot_of_ns(due, u64::from(self.link));
        if category == Category::Ubr {
            // Still the ring's head: it keeps the slot until its turn is spent.
            v.quantum -= 1;
            if backlog == 0 || v.quantum == 0 {
                unlink(&mut self.links, &mut self.ubr, i);
                self.links[i as usize].place = Place::Idle;
                if backlog > 0 {
                    self.place(i);
                }
            }
        } else {
            self.links[i as usize].place = Place::Idle;
            if backlog > 0 {
                self.place(i);
            }
        }
        if backlog == 0 {
            self.backlogged -= 1;
        }
        Transmit {
            vc: handle,
            at,
            slot: c,
            category,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gcra::GcraParams;
    use crate::policer::{Policer, Verdict};
    use alloc::collections::VecDeque;
    use alloc::string::ToString;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    /// 10⁶ cells/s: slot `k` is `[k, k + 1)` µs, so the expected times read plainly.
    const MEGA: u32 = 1_000_000;
    /// OC-3c, where 1/R is not a whole number of ns.
    const OC3: u32 = natm_core::PhyRate::OC3.cells_per_s();

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    fn us(n: u64) -> Instant {
        Instant::from_nanos(n * 1_000)
    }

    /// Drives `s` in virtual time until it is idle or `until` passes, jumping to each
    /// `poll_timeout`; returns every transmit and checks the drain rule on the way.
    fn drive(s: &mut Scheduler, from: Instant, until: Instant) -> Vec<Transmit> {
        let mut out = Vec::new();
        let mut now = from;
        while now <= until {
            match s.poll_transmit(now) {
                Some(tx) => {
                    assert!(
                        s.poll_transmit(now).is_none(),
                        "two cells in slot {}",
                        tx.slot
                    );
                    out.push(tx);
                }
                None => match s.poll_timeout() {
                    Some(t) => {
                        assert!(t > now, "poll_timeout {t} promised a cell at {now}");
                        now = t;
                    }
                    None => break,
                },
            }
        }
        out
    }

    fn times(txs: &[Transmit]) -> Vec<u64> {
        txs.iter().map(|t| t.at.as_nanos()).collect()
    }

    #[test]
    fn test_empty_poll() {
        let mut s = Scheduler::new(OC3).unwrap();
        assert!(s.is_empty());
        assert_eq!(s.poll_timeout(), None);
        assert_eq!(s.poll_transmit(us(5)), None);
        let vc = s.add_vc(VcSpec::cbr(1000)).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s.poll_timeout(), None, "a VC without backlog wants nothing");
        assert_eq!(s.enqueue(vc, 0), Ok(0));
        assert_eq!(s.poll_timeout(), None);
    }

    #[test]
    fn test_new_bad_link_rate() {
        assert_eq!(
            Scheduler::new(0).unwrap_err(),
            SchedError::LinkRate { rate: 0 }
        );
        assert_eq!(
            Scheduler::new(1_000_000_001).unwrap_err(),
            SchedError::LinkRate {
                rate: 1_000_000_001
            }
        );
        assert!(Scheduler::new(1_000_000_000).is_ok());
    }

    #[test]
    fn test_empty_add_vc_bad_specs() {
        let mut s = Scheduler::new(MEGA).unwrap();
        assert_eq!(
            s.add_vc(VcSpec::cbr(0)),
            Err(SchedError::Contract(ContractError::NoPcr))
        );
        assert_eq!(
            s.add_vc(VcSpec::cbr(MEGA + 1)),
            Err(SchedError::PcrAboveLink {
                pcr: MEGA + 1,
                link: MEGA
            })
        );
        assert_eq!(
            s.add_vc(VcSpec::rt_vbr(100, 200, 4)),
            Err(SchedError::Contract(ContractError::ScrAbovePcr {
                scr: 200,
                pcr: 100
            }))
        );
        assert_eq!(
            s.add_vc(VcSpec::nrt_vbr(100, 50, 0)),
            Err(SchedError::Contract(ContractError::NoMbs(
                Conformance::Vbr1
            )))
        );
        assert_eq!(
            s.add_vc(VcSpec::nrt_vbr(100, 0, 3)),
            Err(SchedError::Contract(ContractError::NoScr(
                Conformance::Vbr1
            )))
        );
        let mut cbr_with_scr = VcSpec::cbr(100);
        cbr_with_scr.scr = 10;
        assert!(matches!(
            s.add_vc(cbr_with_scr),
            Err(SchedError::Contract(ContractError::NotInDefinition { .. }))
        ));
        assert_eq!(s.add_vc(VcSpec::ubr(100, 0)), Err(SchedError::ZeroWeight));
        assert!(s.is_empty());
        assert_eq!(
            SchedError::ZeroWeight.to_string(),
            "UBR weight is 0 (it must be at least 1)"
        );
    }

    /// A CBR VC at PCR 100 000 on a 10⁶ link: one cell every 10 µs, exactly.
    #[test]
    fn test_cbr_backlog_spacing() {
        let mut s = Scheduler::new(MEGA).unwrap();
        let vc = s.add_vc(VcSpec::cbr(100_000)).unwrap();
        s.enqueue(vc, 5).unwrap();
        assert_eq!(s.poll_timeout(), Some(Instant::ZERO));
        let txs = drive(&mut s, Instant::ZERO, us(1_000));
        assert_eq!(times(&txs), [0, 10_000, 20_000, 30_000, 40_000]);
        assert!(
            txs.iter()
                .all(|t| t.vc == vc && t.category == Category::Cbr)
        );
        assert_eq!(s.backlog(vc), Ok(0));
        assert_eq!(s.poll_timeout(), None);
        assert_eq!(s.sent(), 5);
    }

    /// A driver that wakes every 37 µs (and drains) at OC-3c, CBR and VBR VCs at
    /// 100,000 cells/s: cells sent between `from` and `until`, each VC's departures as
    /// the scheduler stamped them.
    fn late_driver(tolerance: Duration, specs: &[VcSpec], until: u64) -> Vec<Vec<Transmit>> {
        let mut s = Scheduler::new(OC3).unwrap();
        s.set_tolerance(tolerance);
        let vcs: Vec<VcHandle> = specs.iter().map(|&sp| s.add_vc(sp).unwrap()).collect();
        for &vc in &vcs {
            s.enqueue(vc, u32::MAX).unwrap();
        }
        let mut out = alloc::vec![Vec::new(); vcs.len()];
        let mut now = 0;
        while now < until {
            let mut slots = Vec::new();
            while let Some(t) = s.poll_transmit(Instant::from_nanos(now)) {
                assert!(!slots.contains(&t.slot), "two cells in slot {}", t.slot);
                assert!(s.slot_of(t.at) >= t.slot, "a cell counted before it left");
                slots.push(t.slot);
                let k = vcs.iter().position(|&v| v == t.vc).unwrap();
                out[k].push(t);
            }
            now += 37_000;
        }
        out
    }

    /// With a tolerance a late driver keeps each contract's rate, and the output conforms
    /// to GCRA(1/PCR, τ) (VBR: and GCRA(1/SCR, BT + τ)); without one it loses the
    /// departures it was late for.
    #[test]
    fn test_tolerance_keeps_the_rate_of_a_late_driver() {
        let specs = [VcSpec::cbr(100_000), VcSpec::nrt_vbr(100_000, 50_000, 32)];
        let second = 1_000_000_000;
        let tau = Duration::from_micros(100);
        let late = late_driver(tau, &specs, second);
        for (spec, txs) in specs.iter().zip(&late) {
            let rate = if spec.scr > 0 { spec.scr } else { spec.pcr };
            let n = txs.len() as u32;
            assert!(n <= rate + spec.mbs + 10, "{n} cells above {rate}/s");
            assert!(
                n >= rate - rate / 100,
                "{n} cells: not within 1% of {rate}/s"
            );
            // The stamps are when the cells left (late); they conform with CDVT τ.
            let contract = Contract {
                cdvt: tau,
                ..spec.contract()
            };
            let mut upc = Policer::new(spec.category.conformance(), &contract).unwrap();
            for t in txs {
                assert_eq!(upc.police(t.at, false), Verdict::Pass, "{t:?} of {spec:?}");
            }
        }
        let strict = late_driver(Duration::ZERO, &specs, second);
        assert!(
            (strict[0].len() as u32) < 100_000 * 9 / 10,
            "{} cells: a late CDVT-0 shaper cannot keep the rate",
            strict[0].len()
        );
    }

    /// A driver on time sees the same departures of a VC with a tolerance as without
    /// (VCs that contend for a slot are late for it: the tolerance serves them too).
    #[test]
    fn test_tolerance_changes_nothing_for_a_driver_on_time() {
        for spec in [
            VcSpec::cbr(OC3 / 4),
            VcSpec::cbr(100_000),
            VcSpec::nrt_vbr(OC3 / 2, OC3 / 8, 50),
            VcSpec::rt_vbr(100_000, 30_000, 10),
            VcSpec::ubr(OC3, 3),
        ] {
            let run = |tolerance| {
                let mut s = Scheduler::new(OC3).unwrap();
                s.set_tolerance(tolerance);
                let vc = s.add_vc(spec).unwrap();
                s.enqueue(vc, 3_000).unwrap();
                drive(&mut s, Instant::ZERO, Instant::from_nanos(u64::MAX))
            };
            assert_eq!(
                run(Duration::from_millis(1)),
                run(Duration::ZERO),
                "{spec:?}"
            );
        }
    }

    /// At OC-3c, PCR = 353 207 / 4: 1/PCR is not a whole ns; cells go at ⌈TAT⌉ and the
    /// run never drifts from what a CDVT-0 policer accepts.
    #[test]
    fn test_cbr_backlog_oc3_exact() {
        let mut s = Scheduler::new(OC3).unwrap();
        let spec = VcSpec::cbr(OC3 / 4);
        let vc = s.add_vc(spec).unwrap();
        s.enqueue(vc, 10_000).unwrap();
        let txs = drive(&mut s, Instant::ZERO, Instant::from_nanos(u64::MAX));
        assert_eq!(txs.len(), 10_000);
        let mut upc = Policer::new(Conformance::Cbr1, &spec.contract()).unwrap();
        let inc = 1_000_000_000u64.div_ceil(u64::from(OC3 / 4));
        for w in txs.windows(2) {
            assert_eq!(upc.police(w[0].at, false), Verdict::Pass);
            // Each gap is ⌈1/PCR⌉ ns, or one more where a slot boundary intervenes.
            let gap = w[1].at.as_nanos() - w[0].at.as_nanos();
            assert!((inc..=inc + 2_832).contains(&gap), "gap {gap}");
            assert_eq!(s.slot_of(w[0].at), w[0].slot);
        }
        // Mean spacing within 0.1% of ⌈1/PCR⌉: the cells are not held back slot by slot.
        let span = txs[9_999].at.as_nanos() - txs[0].at.as_nanos();
        assert!(span <= 9_999 * inc * 1001 / 1000, "span {span}");
    }

    #[test]
    fn test_idle_enqueue_after_long_pause() {
        let mut s = Scheduler::new(MEGA).unwrap();
        let vc = s.add_vc(VcSpec::cbr(1_000)).unwrap();
        s.enqueue(vc, 1).unwrap();
        assert_eq!(s.poll_transmit(Instant::ZERO).unwrap().at, Instant::ZERO);
        // 10 s later, far beyond a turn of the wheel: the cell goes at once.
        assert!(
            s.poll_transmit(Instant::from_nanos(10_000_000_000))
                .is_none()
        );
        s.enqueue(vc, 2).unwrap();
        assert_eq!(s.poll_timeout(), Some(Instant::from_nanos(10_000_000_000)));
        let tx = s
            .poll_transmit(Instant::from_nanos(10_000_000_000))
            .unwrap();
        assert_eq!(tx.at.as_nanos(), 10_000_000_000);
        // The next one is 1 ms on: 1000 slots, within a turn.
        assert_eq!(s.poll_timeout(), Some(Instant::from_nanos(10_001_000_000)));
    }

    #[test]
    fn test_backlogged_slow_vc_beyond_wheel_turn() {
        // PCR 10 cells/s on 10⁶: 100 000 slots apart, six turns of the wheel.
        let mut s = Scheduler::new(MEGA).unwrap();
        let slow = s.add_vc(VcSpec::cbr(10)).unwrap();
        s.enqueue(slow, 3).unwrap();
        let txs = drive(&mut s, Instant::ZERO, Instant::from_nanos(u64::MAX));
        assert_eq!(times(&txs), [0, 100_000_000, 200_000_000]);
    }

    #[test]
    fn test_backlogged_cbr_beats_ubr() {
        let mut s = Scheduler::new(MEGA).unwrap();
        let ubr = s.add_vc(VcSpec::ubr(MEGA, 1)).unwrap();
        let cbr = s.add_vc(VcSpec::cbr(250_000)).unwrap();
        s.enqueue(ubr, 100).unwrap();
        s.enqueue(cbr, 10).unwrap();
        let txs = drive(&mut s, Instant::ZERO, us(39));
        assert_eq!(txs.len(), 40, "every slot carries a cell");
        for (k, tx) in txs.iter().enumerate() {
            let want = if k % 4 == 0 { cbr } else { ubr };
            assert_eq!(tx.vc, want, "slot {k}");
            assert_eq!(tx.slot, k as u64);
        }
    }

    /// rt-VBR PCR 100 000, SCR 10 000, MBS 5: five cells at PCR (10 µs), then SCR
    /// (100 µs after the fifth); BT = 4 · 90 µs = 360 µs.
    #[test]
    fn test_backlogged_rt_vbr_burst_mbs_then_scr() {
        let mut s = Scheduler::new(MEGA).unwrap();
        let vc = s.add_vc(VcSpec::rt_vbr(100_000, 10_000, 5)).unwrap();
        s.enqueue(vc, 9).unwrap();
        let txs = drive(&mut s, Instant::ZERO, Instant::from_nanos(u64::MAX));
        let us_: Vec<u64> = times(&txs).iter().map(|t| t / 1_000).collect();
        assert_eq!(us_, [0, 10, 20, 30, 40, 140, 240, 340, 440]);
        assert!(txs.iter().all(|t| t.category == Category::RtVbr));
    }

    #[test]
    fn test_backlogged_rt_vbr_beats_nrt_vbr_beats_ubr() {
        let mut s = Scheduler::new(MEGA).unwrap();
        let u = s.add_vc(VcSpec::ubr(MEGA, 1)).unwrap();
        let n = s.add_vc(VcSpec::nrt_vbr(MEGA, MEGA, 1)).unwrap();
        let r = s.add_vc(VcSpec::rt_vbr(MEGA, MEGA, 1)).unwrap();
        for vc in [u, n, r] {
            s.enqueue(vc, 2).unwrap();
        }
        let order: Vec<VcHandle> = drive(&mut s, Instant::ZERO, us(100))
            .iter()
            .map(|t| t.vc)
            .collect();
        assert_eq!(order, [r, r, n, n, u, u]);
    }

    /// Three UBR VCs of weights 1, 2 and 3, all backlogged at the link rate: shares
    /// 1 : 2 : 3, and each turn is one burst of the VC's weight.
    #[test]
    fn test_backlogged_ubr_wrr_shares() {
        let mut s = Scheduler::new(MEGA).unwrap();
        let vcs: Vec<VcHandle> = (1..=3)
            .map(|w| s.add_vc(VcSpec::ubr(MEGA, w)).unwrap())
            .collect();
        for &vc in &vcs {
            s.enqueue(vc, 1_000).unwrap();
        }
        let txs = drive(&mut s, Instant::ZERO, us(599));
        assert_eq!(txs.len(), 600);
        let count = |vc| txs.iter().filter(|t| t.vc == vc).count();
        assert_eq!(
            [count(vcs[0]), count(vcs[1]), count(vcs[2])],
            [100, 200, 300]
        );
        let first: Vec<usize> = txs[..6].iter().map(|t| t.vc.index()).collect();
        assert_eq!(
            first,
            [
                vcs[0].index(),
                vcs[1].index(),
                vcs[1].index(),
                vcs[2].index(),
                vcs[2].index(),
                vcs[2].index()
            ]
        );
    }

    /// Weights 1, 2, 3 with each PCR half the link: the link is still the bottleneck, but
    /// a VC its PCR holds back keeps the rest of its turn only until the round ends, so
    /// the shares lean towards the weights without reaching 1 : 2 : 3, and none passes its
    /// PCR.
    #[test]
    fn test_backlogged_ubr_wrr_shares_under_pcr() {
        let mut s = Scheduler::new(MEGA).unwrap();
        let vcs: Vec<VcHandle> = (1..=3)
            .map(|w| s.add_vc(VcSpec::ubr(MEGA / 2, w)).unwrap())
            .collect();
        for &vc in &vcs {
            s.enqueue(vc, 100_000).unwrap();
        }
        let txs = drive(&mut s, Instant::ZERO, us(59_999));
        assert_eq!(txs.len(), 60_000, "the link is never idle");
        let n: Vec<usize> = vcs
            .iter()
            .map(|&vc| txs.iter().filter(|t| t.vc == vc).count())
            .collect();
        assert!(n[0] < n[1] && n[1] <= n[2], "{n:?}");
        assert!(n[2] <= 30_000, "{n:?} passes PCR");
        assert!(
            n[0] * 4 < 60_000,
            "{n:?}: weight 1 gets less than a quarter"
        );
    }

    /// A UBR VC never passes its PCR even when the link is free.
    #[test]
    fn test_backlogged_ubr_held_to_pcr() {
        let mut s = Scheduler::new(MEGA).unwrap();
        let vc = s.add_vc(VcSpec::ubr(200_000, 5)).unwrap();
        s.enqueue(vc, 4).unwrap();
        let txs = drive(&mut s, Instant::ZERO, Instant::from_nanos(u64::MAX));
        assert_eq!(times(&txs), [0, 5_000, 10_000, 15_000]);
    }

    #[test]
    fn test_backlogged_slot_carries_one_cell() {
        let mut s = Scheduler::new(OC3).unwrap();
        let a = s.add_vc(VcSpec::cbr(OC3)).unwrap();
        let b = s.add_vc(VcSpec::cbr(OC3)).unwrap();
        s.enqueue(a, 3).unwrap();
        s.enqueue(b, 3).unwrap();
        let tx = s.poll_transmit(at(0)).unwrap();
        assert_eq!(tx.slot, 0);
        // Later in the same slot (slot 0 is [0, 2831.2) ns), nothing.
        assert_eq!(s.poll_transmit(at(2_831)), None);
        assert_eq!(s.poll_timeout(), Some(at(2_832)));
        assert_eq!(s.poll_transmit(at(2_832)).unwrap().slot, 1);
        let txs = drive(&mut s, at(2_832), Instant::from_nanos(u64::MAX));
        let mut slots: Vec<u64> = txs.iter().map(|t| t.slot).collect();
        slots.dedup();
        assert_eq!(slots.len(), 4);
    }

    #[test]
    fn test_backlogged_remove_vc() {
        let mut s = Scheduler::new(MEGA).unwrap();
        let a = s.add_vc(VcSpec::cbr(100_000)).unwrap();
        let b = s.add_vc(VcSpec::ubr(MEGA, 1)).unwrap();
        s.enqueue(a, 10).unwrap();
        s.enqueue(b, 10).unwrap();
        assert_eq!(s.poll_transmit(at(0)).unwrap().vc, a);
        // `a` now waits in the wheel; `b` in the ring.
        assert_eq!(s.remove_vc(a), Ok(9));
        assert_eq!(s.remove_vc(b), Ok(10));
        assert_eq!(s.poll_timeout(), None);
        assert_eq!(s.poll_transmit(us(100)), None);
        assert!(s.is_empty());
        // The slot is reused with a new generation; the old handles stay dead.
        let c = s.add_vc(VcSpec::cbr(100_000)).unwrap();
        assert!(c.index() == a.index() || c.index() == b.index());
        assert_ne!(c, a);
        assert_ne!(c, b);
        assert_eq!(s.enqueue(a, 1), Err(SchedError::UnknownVc(a)));
        s.enqueue(c, 1).unwrap();
        assert_eq!(s.poll_transmit(us(100)).unwrap().vc, c);
    }

    #[test]
    fn test_idle_unknown_handle() {
        let mut s = Scheduler::new(MEGA).unwrap();
        let mut other = Scheduler::new(MEGA).unwrap();
        other.add_vc(VcSpec::cbr(1)).unwrap();
        let foreign = other.add_vc(VcSpec::cbr(1)).unwrap();
        assert_eq!(s.enqueue(foreign, 1), Err(SchedError::UnknownVc(foreign)));
        assert_eq!(s.remove_vc(foreign), Err(SchedError::UnknownVc(foreign)));
        assert_eq!(s.backlog(foreign), Err(SchedError::UnknownVc(foreign)));
        assert_eq!(s.spec(foreign), Err(SchedError::UnknownVc(foreign)));
        let vc = s.add_vc(VcSpec::cbr(1)).unwrap();
        s.remove_vc(vc).unwrap();
        assert_eq!(s.remove_vc(vc), Err(SchedError::UnknownVc(vc)));
        assert_eq!(
            SchedError::UnknownVc(vc).to_string(),
            "no VC vc#0.0 on this scheduler"
        );
    }

    #[test]
    fn test_backlogged_enqueue_overflow() {
        let mut s = Scheduler::new(MEGA).unwrap();
        let vc = s.add_vc(VcSpec::cbr(1)).unwrap();
        // 2³² enqueues of 2³² cells would take long: start near the top.
        s.enqueue(vc, 1).unwrap();
        s.vcs[vc.index()].backlog = u64::MAX - 3;
        assert_eq!(s.enqueue(vc, 4), Err(SchedError::BacklogOverflow(vc)));
        assert_eq!(s.backlog(vc), Ok(u64::MAX - 3));
        assert_eq!(s.enqueue(vc, 3), Ok(u64::MAX));
    }

    #[test]
    fn test_backlogged_time_backwards_clamped() {
        let mut s = Scheduler::new(MEGA).unwrap();
        let vc = s.add_vc(VcSpec::cbr(100_000)).unwrap();
        s.enqueue(vc, 3).unwrap();
        assert_eq!(s.poll_transmit(us(50)).unwrap().at, us(50));
        // Back to 0: taken as 50 µs; the slot is used, and the next cell is at 60 µs.
        assert_eq!(s.poll_transmit(us(0)), None);
        assert_eq!(s.poll_timeout(), Some(us(60)));
        assert_eq!(s.poll_transmit(us(20)), None);
        assert_eq!(s.poll_transmit(us(60)).unwrap().at, us(60));
        assert_eq!(s.poll_transmit(us(61)), None);
        let tx = s.poll_transmit(us(75)).unwrap();
        assert_eq!(tx.at, us(75));
    }

    #[test]
    fn test_backlogged_end_of_time() {
        let mut s = Scheduler::new(OC3).unwrap();
        let vc = s.add_vc(VcSpec::cbr(OC3)).unwrap();
        s.enqueue(vc, 3).unwrap();
        let end = Instant::from_nanos(u64::MAX);
        let tx = s.poll_transmit(end).unwrap();
        assert_eq!((tx.at, tx.slot), (end, s.slot_of(end)));
        // No slot starts after the end of time: nothing more, and no panic.
        assert_eq!(s.poll_transmit(end), None);
        assert_eq!(s.poll_timeout(), Some(end));
        assert_eq!(s.poll_transmit(end), None);
        assert_eq!(s.backlog(vc), Ok(2));
    }

    /// On a 10⁹ cells/s link the last ns is slot 2⁶⁴ − 1, which no slot follows: no cell
    /// goes in it, and no overflow.
    #[test]
    fn test_backlogged_end_of_time_gigacell_link() {
        let mut s = Scheduler::new(1_000_000_000).unwrap();
        let vc = s.add_vc(VcSpec::cbr(1_000_000_000)).unwrap();
        s.enqueue(vc, 3).unwrap();
        let end = Instant::from_nanos(u64::MAX);
        let tx = s.poll_transmit(at(u64::MAX - 1)).unwrap();
        assert_eq!(tx.slot, u64::MAX - 1);
        assert_eq!(s.slot_of(end), u64::MAX);
        assert_eq!(s.poll_transmit(end), None);
        assert_eq!(s.poll_timeout(), Some(end));
        assert_eq!(s.backlog(vc), Ok(2));
    }

    #[test]
    fn test_backlogged_mid_slot_departure() {
        // PCR = 2/3 of the link at 10⁶: due at 1.5 µs steps, which fall mid-slot; the cell
        // leaves at its due ns within the slot, so the VC gets its full PCR.
        let mut s = Scheduler::new(MEGA).unwrap();
        let vc = s.add_vc(VcSpec::cbr(666_666)).unwrap();
        s.enqueue(vc, 3_000).unwrap();
        let txs = drive(&mut s, Instant::ZERO, Instant::from_nanos(u64::MAX));
        assert_eq!(txs.len(), 3_000);
        assert_eq!(txs[1].at, at(1_501));
        assert!(txs[1].at > us(1) && txs[1].slot == 1);
        let span = txs[2_999].at.as_nanos();
        assert_eq!(span, 2_999 * 1_501, "every gap is ⌈1/PCR⌉ = 1501 ns");
    }

    proptest! {
        /// The peak GCRA(1/PCR, 0) of a VC that sends at or after its TAT is `peak_step`
        /// ns from each cell to the next allowed: `Gcra` agrees cell by cell.
        #[test]
        fn peak_step_is_the_gcra(
            pcr in 1u32..=1_000_000_000,
            lates in proptest::collection::vec(prop_oneof![Just(0u64), 0u64..5_000], 1..100),
        ) {
            let mut s = Scheduler::new(1_000_000_000).unwrap();
            let vc = s.add_vc(VcSpec::cbr(pcr)).unwrap();
            let step = s.vcs[vc.index()].peak_step;
            let mut g = Gcra::new(GcraParams::peak(pcr, Duration::ZERO).unwrap());
            let mut t = 0u64;
            for late in lates {
                prop_assert!(g.is_conforming(Instant::from_nanos(t)));
                g.record(Instant::from_nanos(t));
                prop_assert_eq!(g.next_conforming().as_nanos(), t + step);
                if step > 1 {
                    prop_assert!(!g.is_conforming(Instant::from_nanos(t + step - 1)));
                }
                t += step + late;
            }
        }
    }

    /// One VC's contract, policer and the enqueue time of each cell not yet sent.
    struct Check {
        policer: Policer,
        enqueued: VecDeque<u64>,
    }

    fn arb_spec(link: u32) -> impl Strategy<Value = VcSpec> {
        // PCRs from the link rate down to 2¹⁸ times slower (beyond a turn of the wheel).
        (0..4u8, 1..=link, 0u32..18, 1u32..=1000, 1u32..64, 1u32..6).prop_map(
            move |(cat, pcr, shift, scr_per_mille, mbs, weight)| {
                let pcr = (pcr >> shift).max(1);
                let scr = (u64::from(pcr) * u64::from(scr_per_mille) / 1000).max(1) as u32;
                match cat {
                    0 => VcSpec::cbr(pcr),
                    1 => VcSpec::rt_vbr(pcr, scr, mbs),
                    2 => VcSpec::nrt_vbr(pcr, scr, mbs),
                    _ => VcSpec::ubr(pcr, weight),
                }
            },
        )
    }

    fn arb_mix() -> impl Strategy<Value = (u32, Vec<VcSpec>, Vec<(u64, usize, u32)>)> {
        prop_oneof![Just(OC3), Just(MEGA), Just(96_000), Just(59_111)].prop_flat_map(|link| {
            (
                Just(link),
                proptest::collection::vec(arb_spec(link), 100..140),
                // (enqueue time ns, VC (mod the count), cells)
                proptest::collection::vec((0u64..20_000_000, any::<usize>(), 1u32..24), 1..400),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Random mixes of ≥ 100 VCs: every cell passes its VC's policer at CDVT 0, none
        /// leaves before it was enqueued, no slot carries two, and driven to idle every
        /// enqueued cell leaves.
        #[test]
        fn shaped_output_passes_every_policer((link, specs, mut arrivals) in arb_mix()) {
            let mut s = Scheduler::new(link).unwrap();
            let mut checks = Vec::new();
            let mut handles = Vec::new();
            for spec in &specs {
                handles.push(s.add_vc(*spec).unwrap());
                checks.push(Check {
                    policer: Policer::new(spec.category.conformance(), &spec.contract()).unwrap(),
                    enqueued: VecDeque::new(),
                });
            }
            arrivals.sort_unstable_by_key(|a| a.0);
            let total: u64 = arrivals.iter().map(|a| u64::from(a.2)).sum();
            let mut next = 0;
            let mut now = Instant::ZERO;
            let mut sent = 0u64;
            let mut last: Option<Transmit> = None;
            loop {
                while next < arrivals.len() && arrivals[next].0 <= now.as_nanos() {
                    let (t, k, cells) = arrivals[next];
                    let k = k % specs.len();
                    s.enqueue(handles[k], cells).unwrap();
                    checks[k].enqueued.extend(core::iter::repeat_n(t, cells as usize));
                    next += 1;
                }
                if let Some(tx) = s.poll_transmit(now) {
                    let k = handles.iter().position(|h| *h == tx.vc).unwrap();
                    let c = &mut checks[k];
                    let verdict = c.policer.police(tx.at, false);
                    prop_assert_eq!(verdict, Verdict::Pass, "{:?} of {:?}", tx, specs[k]);
                    let t = c.enqueued.pop_front().unwrap();
                    prop_assert!(tx.at >= now && tx.at.as_nanos() >= t);
                    prop_assert_eq!(s.slot_of(tx.at), tx.slot);
                    if let Some(p) = last {
                        prop_assert!(tx.slot > p.slot && tx.at > p.at);
                    }
                    last = Some(tx);
                    sent += 1;
                    continue;
                }
                let wake = s.poll_timeout();
                if let Some(w) = wake {
                    prop_assert!(w > now, "poll_timeout {} at {} gave nothing", w, now);
                }
                let arrival = arrivals.get(next).map(|a| Instant::from_nanos(a.0));
                now = match (wake, arrival) {
                    (Some(w), Some(a)) => w.min(a),
                    (Some(w), None) => w,
                    (None, Some(a)) => a,
                    (None, None) => break,
                };
            }
            prop_assert_eq!(sent, total);
            prop_assert_eq!(s.sent(), total);
            prop_assert!(checks.iter().all(|c| c.enqueued.is_empty()));
            for h in &handles {
                prop_assert_eq!(s.backlog(*h), Ok(0));
            }
        }
    }
}

//! The link emulator: [`Netem`].

use alloc::collections::{BTreeMap, BinaryHeap, VecDeque};
use alloc::vec::Vec;
use core::cmp::{Ordering, Reverse};

use natm_core::{Duration, Instant, LineRate};
use natm_wire::cell::{CELL_LEN, HEADER_LEN};

use crate::config::{Impairments, Jitter};
use crate::math::{BitErrors, Stream};

/// Nanoseconds per second.
const NS_PER_S: u128 = 1_000_000_000;

/// Bits of a cell header, HEC included.
const HEADER_BITS: u64 = HEADER_LEN as u64 * 8;

/// Default transmit queue, cells waiting for the line: about 2.9 ms of OC-3c.
pub const DEFAULT_QUEUE_CELLS: u32 = 1024;

/// Default limit on cells inside the emulator (queued, on the line or delayed): 1 Mi cells,
/// 100 ms of OC-12c with room to spare.
pub const DEFAULT_IN_FLIGHT_CELLS: u32 = 1 << 20;

/// Everything about one direction of a link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// The line rate.
    pub rate: LineRate,
    /// Cells that may wait for the line behind the one being sent; more are tail-dropped.
    /// Unused at [`LineRate::Unlimited`].
    pub queue_cells: u32,
    /// Cells the emulator holds at most, delayed ones included; more are dropped
    /// ([`Counters::overflow_drops`]). Bounds memory when a long delay meets a fast line.
    pub in_flight_cells: u32,
    /// Loss, bit errors and delay.
    pub impairments: Impairments,
}

impl Default for Config {
    /// OC-3c, a 1024-cell queue, no impairments.
    fn default() -> Config {
        Config {
            rate: LineRate::default(),
            queue_cells: DEFAULT_QUEUE_CELLS,
            in_flight_cells: DEFAULT_IN_FLIGHT_CELLS,
            impairments: Impairments::default(),
        }
    }
}

/// What the emulator has done, per impairment. Every offered cell is counted once in
/// `queue_drops`, `overflow_drops`, `lost_burst`, `lost_random`, or (eventually)
/// `delivered`; the rest are in flight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Cells given to [`Netem::handle_cell`] or [`Netem::handle_cells`].
    pub offered: u64,
    /// Cells refused because the transmit queue was full (tail drop).
    pub queue_drops: u64,
    /// Cells refused because the emulator held `in_flight_cells` already.
    pub overflow_drops: u64,
    /// Cells serialised onto the line (lost ones included: a lost cell used its slot).
    pub carried: u64,
    /// Cells lost in a Gilbert–Elliott burst.
    pub lost_burst: u64,
    /// Cells lost at random (not counted when the burst model lost the cell already).
    pub lost_random: u64,
    /// Cells given a single-bit header error.
    pub header_single: u64,
    /// Cells given a two-bit header error.
    pub header_multi: u64,
    /// Header bits flipped in all.
    pub header_bits_flipped: u64,
    /// Cells with at least one payload bit flipped.
    pub payload_errored: u64,
    /// Payload bits flipped in all.
    pub payload_bits_flipped: u64,
    /// Cells given a delay above zero (fixed or random).
    pub delayed: u64,
    /// Cells held later than their drawn delay so as not to pass an earlier cell of their VC.
    pub held_for_order: u64,
    /// Cells handed out by [`Netem::poll_transmit`] or [`Netem::poll_transmit_cells`].
    pub delivered: u64,
    /// Calls whose `now` was earlier than an earlier call's (clamped to it).
    pub clamped: u64,
}

/// A cell that has crossed the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// When it left the far end of the line (at or before the `now` it was polled at).
    pub at: Instant,
    /// The cell, with whatever bit errors it took.
    pub cell: [u8; CELL_LEN],
}

/// A cell inside the emulator.
#[derive(Clone, Debug)]
struct Entry {
    departure: Instant,
    /// Offer order: ties in departure go first in, first out.
    seq: u64,
    /// The VC as it was offered (before header errors).
    vc: u32,
    cell: [u8; CELL_LEN],
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.departure, self.seq).cmp(&(other.departure, other.seq))
    }
}

/// Cells in flight. Without jitter, departures never decrease in offer order, so a FIFO
/// holds them in order; jitter needs a heap.
#[derive(Clone, Debug)]
enum Flight {
    Fifo(VecDeque<Entry>),
    Heap(BinaryHeap<Reverse<Entry>>),
}

impl Flight {
    fn len(&self) -> usize {
        match self {
            Flight::Fifo(q) => q.len(),
            Flight::Heap(h) => h.len(),
        }
    }

    fn first(&self) -> Option<&Entry> {
        match self {
            Flight::Fifo(q) => q.front(),
            Flight::Heap(h) => h.peek().map(|r| &r.0),
        }
    }

    fn pop(&mut self) -> Option<Entry> {
        match self {
            Flight::Fifo(q) => q.pop_front(),
            Flight::Heap(h) => h.pop().map(|r| r.0),
        }
    }
}

/// The serialiser: cells at an exact rational rate. Time here is in ticks of 1/`num` ns,
/// so one cell lasts exactly `den · 10⁹` ticks and back-to-back cells never drift.
#[derive(Clone, Debug)]
struct Line {
    /// Ticks per ns (the rate's numerator, cells/s).
    num: u128,
    /// Ticks per cell (the rate's denominator × 10⁹).
    slot: u128,
    /// When the line finishes the last accepted cell, in ticks.
    free_at: u128,
}

impl Line {
    /// Whether a cell offered at `t` ticks finds the line idle or fewer than `queue` cells
    /// waiting: the busy period is back to back up to `free_at`, so the cells not yet
    /// finished are ⌈backlog/slot⌉, all but one of them waiting.
    fn has_room(&self, t: u128, queue: u128) -> bool {
        // ⌈backlog/slot⌉ − 1 < queue, without the division (a u128 one is a library call).
        self.free_at.saturating_sub(t) <= queue.saturating_mul(self.slot)
    }

    /// `ticks` in whole ns, rounded up (saturating at the end of time).
    fn ceil_ns(&self, ticks: u128) -> Instant {
        // A u64 division while the values fit: the u128 one is a library call, several
        // times slower, and this runs per cell.
        let ns = match (u64::try_from(ticks), u64::try_from(self.num)) {
            (Ok(t), Ok(n)) => t.div_ceil(n),
            _ => u64::try_from(ticks.div_ceil(self.num)).unwrap_or(u64::MAX),
        };
        Instant::from_nanos(ns)
    }
}

/// The random draws and their parameters.
#[derive(Clone, Debug)]
struct Draws {
    loss: f64,
    loss_rng: Stream,
    /// Gilbert's (p, r) and whether the chain is in the Bad state.
    burst: Option<(f64, f64)>,
    bad: bool,
    burst_rng: Stream,
    hec_single: f64,
    /// `hec_single + hec_multi`, at most 1.
    hec_any: f64,
    hec_rng: Stream,
    ber: Option<BitErrors>,
    ber_rng: Stream,
    delay: u64,
    jitter: Jitter,
    delay_rng: Stream,
}

/// Labels of the random streams forked from the seed.
mod label {
    pub const LOSS: u64 = 1;
    pub const BURST: u64 = 2;
    pub const HEC: u64 = 3;
    pub const BER: u64 = 4;
    pub const DELAY: u64 = 5;
}

impl Draws {
    /// Fresh streams and parameters for `imp`.
    fn new(imp: &Impairments) -> Draws {
        let seed = imp.seed;
        let jitter = match imp.jitter {
            Jitter::Uniform(d) | Jitter::Exponential(d) if d == Duration::ZERO => Jitter::None,
            j => j,
        };
        let hec_single = imp.hec_single.get();
        Draws {
            loss: imp.loss.get(),
            loss_rng: Stream::new(seed, label::LOSS),
            burst: imp.burst.map(|b| b.transitions()),
            bad: false,
            burst_rng: Stream::new(seed, label::BURST),
            hec_single,
            hec_any: (hec_single + imp.hec_multi.get()).min(1.0),
            hec_rng: Stream::new(seed, label::HEC),
            ber: (!imp.ber.is_zero()).then(|| BitErrors::new(imp.ber.get())),
            ber_rng: Stream::new(seed, label::BER),
            delay: imp.delay.as_nanos(),
            jitter,
            delay_rng: Stream::new(seed, label::DELAY),
        }
    }
}

/// One direction of an emulated ATM link: a line rate, a transmit queue, and seeded
/// impairments, as a sans-IO state machine.
///
/// # Call contract
///
/// * [`handle_cell(now, cell)`](Netem::handle_cell) offers a cell to the line at `now`.
///   It waits if the line is busy, is tail-dropped if the queue is full, then takes the
///   line for one cell time and the impairments, all decided at once (the line's future is
///   known when a cell is offered).
/// * [`poll_transmit(now)`](Netem::poll_transmit) hands out, one per call, each cell whose
///   departure is at or before `now`, earliest first, with its departure instant.
/// * [`poll_timeout()`](Netem::poll_timeout) is the next departure, if any cell is in
///   flight.
///
/// **Drain rule:** after `handle_cell`, and whenever the clock reaches `poll_timeout`, call
/// `poll_transmit(now)` until it returns `None`, then wait until `poll_timeout`. Stamping
/// output with [`Transmit::at`] rather than with `now` keeps exact spacing however late
/// the driver wakes.
///
/// Time is the caller's: `now` never comes from a clock here. A `now` earlier than one
/// already seen is clamped to it (and counted), so time never runs backwards inside.
///
/// # Order
///
/// The cells of one VC leave in the order they were offered: a cell's departure is at
/// least the departure of the previous cell of its VC (a VC is the 28 header bits above PTI
/// and CLP as offered, so UNI and NNI need no configuration; UNI's GFC counts as part of
/// it). Cells of *different* VCs may pass each other under jitter, as cells of different
/// VCs may in a switch. Cells with the same departure leave in offer order.
#[derive(Clone, Debug)]
pub struct Netem {
    line: Option<Line>,
    queue_cells: u128,
    in_flight_cells: usize,
    now: Instant,
    seq: u64,
    draws: Draws,
    flight: Flight,
    /// Per VC, the latest departure in flight (kept only under jitter: without it
    /// departures never decrease, so order holds by itself).
    last_departure: BTreeMap<u32, Instant>,
    counters: Counters,
}

impl Netem {
    /// An idle line at time zero.
    pub fn new(config: &Config) -> Netem {
        let imp = &config.impairments;
        let line = config.rate.exact().map(|(num, den)| Line {
            num: u128::from(num),
            slot: u128::from(den) * NS_PER_S,
            free_at: 0,
        });
        let draws = Draws::new(imp);
        let jitter = draws.jitter;
        let flight = if jitter == Jitter::None {
            Flight::Fifo(VecDeque::new())
        } else {
            Flight::Heap(BinaryHeap::new())
        };
        Netem {
            line,
            queue_cells: u128::from(config.queue_cells),
            in_flight_cells: config.in_flight_cells as usize,
            now: Instant::ZERO,
            seq: 0,
            draws,
            flight,
            last_departure: BTreeMap::new(),
            counters: Counters::default(),
        }
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Replaces the impairments (their seed included) for the cells offered from now on.
    /// Cells in flight keep the fate they were given when offered; the cells of one VC
    /// still leave in offer order, also when the new delay is shorter than the old. The
    /// line rate and the queue are unchanged.
    pub fn set_impairments(&mut self, impairments: &Impairments) {
        let draws = Draws::new(impairments);
        // A FIFO of departures stays ordered only if no new cell can leave before the
        // last one in flight: same delay or longer, and no jitter.
        let fifo_ok = draws.jitter == Jitter::None
            && (self.flight.len() == 0
                || (matches!(self.flight, Flight::Fifo(_)) && draws.delay >= self.draws.delay));
        self.draws = draws;
        if fifo_ok {
            if let Flight::Heap(h) = &mut self.flight {
                // Empty (fifo_ok holds only then for a heap): back to the cheap FIFO.
                debug_assert!(h.is_empty());
                self.flight = Flight::Fifo(VecDeque::new());
                self.last_departure.clear();
            }
            return;
        }
        if let Flight::Fifo(q) = &mut self.flight {
            let entries: Vec<Entry> = q.drain(..).collect();
            let mut heap = BinaryHeap::with_capacity(entries.len());
            for e in entries {
                // In departure order: the last one per VC is the latest.
                self.last_departure.insert(e.vc, e.departure);
                heap.push(Reverse(e));
            }
            self.flight = Flight::Heap(heap);
        }
    }

    /// Cells inside the emulator: waiting for the line, on it, or delayed.
    pub fn in_flight(&self) -> usize {
        self.flight.len()
    }

    /// `now`, or the latest time seen if `now` is earlier.
    fn advance(&mut self, now: Instant) -> Instant {
        if now < self.now {
            self.counters.clamped += 1;
        } else {
            self.now = now;
        }
        self.now
    }

    /// Whether a cell offered at `now` would get onto the line rather than be tail-dropped
    /// for a full transmit queue (always, at an unlimited rate). The in-flight limit is
    /// apart: see [`in_flight`](Netem::in_flight).
    pub fn has_room(&self, now: Instant) -> bool {
        let now = now.max(self.now);
        self.line
            .as_ref()
            .is_none_or(|l| l.has_room(u128::from(now.as_nanos()) * l.num, self.queue_cells))
    }

    /// The first instant from which [`has_room`](Netem::has_room) holds (until the next
    /// cell offered); `None` at an unlimited rate.
    pub fn room_at(&self) -> Option<Instant> {
        self.line
            .as_ref()
            .map(|l| l.ceil_ns(l.free_at.saturating_sub(self.queue_cells * l.slot)))
    }

    /// Whether at most `cells` cells wait for the line at `now` (behind the one on it):
    /// [`has_room`](Netem::has_room) is this with the configured queue. Always at an
    /// unlimited rate. A driver refilling the queue in batches waits for this with a low
    /// mark rather than topping it up a cell at a time.
    pub fn waiting_at_most(&self, now: Instant, cells: u32) -> bool {
        let now = now.max(self.now);
        self.line.as_ref().is_none_or(|l| {
            // Room for one more behind `cells` waiting is room for `cells + 1`.
            l.has_room(u128::from(now.as_nanos()) * l.num, u128::from(cells) + 1)
        })
    }

    /// The first instant from which [`waiting_at_most`](Netem::waiting_at_most)`(cells)`
    /// holds (until the next cell offered); `None` at an unlimited rate.
    pub fn waiting_at_most_at(&self, cells: u32) -> Option<Instant> {
        self.line.as_ref().map(|l| {
            l.ceil_ns(
                l.free_at
                    .saturating_sub((u128::from(cells) + 1).saturating_mul(l.slot)),
            )
        })
    }

    /// One cell's time on the line; `None` at an unlimited rate.
    pub fn cell_time(&self) -> Option<Duration> {
        self.line
            .as_ref()
            .map(|l| Duration::from_nanos(l.ceil_ns(l.slot).as_nanos()))
    }

    /// Offers `cell` to the line at `now`. Never panics; what happens to the cell shows in
    /// the counters and, unless it is dropped or lost, in a later
    /// [`poll_transmit`](Netem::poll_transmit).
    pub fn handle_cell(&mut self, now: Instant, cell: [u8; CELL_LEN]) {
        self.offer(now, &cell);
    }

    /// Offers `cells` at `now`, in order: [`handle_cell`](Netem::handle_cell) for each.
    pub fn handle_cells(&mut self, now: Instant, cells: &[[u8; CELL_LEN]]) {
        for cell in cells {
            self.offer(now, cell);
        }
    }

    fn offer(&mut self, now: Instant, cell: &[u8; CELL_LEN]) {
        let now = self.advance(now);
        self.counters.offered += 1;
        if self.flight.len() >= self.in_flight_cells {
            self.counters.overflow_drops += 1;
            return;
        }
        let off_line = match &mut self.line {
            None => now,
            Some(line) => {
                let t = u128::from(now.as_nanos()) * line.num;
                if !line.has_room(t, self.queue_cells) {
                    self.counters.queue_drops += 1;
                    return;
                }
                line.free_at = line.free_at.max(t) + line.slot;
                line.ceil_ns(line.free_at)
            }
        };
        self.counters.carried += 1;
        if self.lost() {
            return;
        }
        // The VC as offered: a header error must not let a cell escape its VC's order.
        let vc = u32::from_be_bytes([cell[0], cell[1], cell[2], cell[3]]) >> 4;
        // Each draw has its own stream, so drawing the delay before the bit errors changes
        // no outcome.
        let delay = self.draw_delay();
        if delay > 0 {
            self.counters.delayed += 1;
        }
        let mut departure = off_line + Duration::from_nanos(delay);
        let seq = self.seq;
        self.seq += 1;
        match &mut self.flight {
            Flight::Fifo(q) => {
                debug_assert!(q.back().is_none_or(|b| b.departure <= departure));
                // The cell is copied once, straight into its place, and damaged there: a
                // 53-byte value passed through temporaries costs store-forwarding stalls
                // on the simulator's hottest path.
                q.push_back(Entry {
                    departure,
                    seq,
                    vc,
                    cell: *cell,
                });
                if let Some(e) = q.back_mut() {
                    corrupt(&mut self.draws, &mut self.counters, &mut e.cell);
                }
            }
            Flight::Heap(h) => {
                let last = self.last_departure.entry(vc).or_insert(departure);
                if *last > departure {
                    departure = *last;
                    self.counters.held_for_order += 1;
                }
                *last = departure;
                let mut cell = *cell;
                corrupt(&mut self.draws, &mut self.counters, &mut cell);
                h.push(Reverse(Entry {
                    departure,
                    seq,
                    vc,
                    cell,
                }));
            }
        }
    }

    /// Hands out the next cell whose departure is at or before `now`, with its departure
    /// instant; `None` when no cell is due (see the drain rule on [`Netem`]).
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let now = self.advance(now);
        if self.flight.first()?.departure > now {
            return None;
        }
        let e = self.flight.pop()?;
        self.delivered(e.vc, e.departure);
        Some(Transmit {
            at: e.departure,
            cell: e.cell,
        })
    }

    /// Copies the cells due at `now` into `out`, up to its length, in the order
    /// [`poll_transmit`](Netem::poll_transmit) would hand them out (without their departure
    /// instants); returns how many. Fewer than `out.len()` means none is left due.
    pub fn poll_transmit_cells(&mut self, now: Instant, out: &mut [[u8; CELL_LEN]]) -> usize {
        let now = self.advance(now);
        let mut n = 0;
        while n < out.len() {
            let Some(e) = self.flight.first() else {
                break;
            };
            if e.departure > now {
                break;
            }
            // From the entry in place to `out`: one copy, no temporaries.
            out[n] = e.cell;
            n += 1;
            let (vc, departure) = (e.vc, e.departure);
            self.flight.pop();
            self.delivered(vc, departure);
        }
        n
    }

    fn delivered(&mut self, vc: u32, departure: Instant) {
        // Once a VC's latest cell has left, any later cell departs after `now` anyway.
        if self.last_departure.get(&vc) == Some(&departure) {
            self.last_departure.remove(&vc);
        }
        self.counters.delivered += 1;
    }

    /// The next departure, if any cell is in flight.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.flight.first().map(|e| e.departure)
    }

    /// Whether the cell just carried is lost, burst model first. The chain steps once per
    /// carried cell whatever else happens, so its statistics do not depend on `loss`.
    fn lost(&mut self) -> bool {
        let d = &mut self.draws;
        let burst = match d.burst {
            Some((p, r)) => {
                // Gilbert: Bad loses the cell; then the state moves for the next cell.
                let lost = d.bad;
                let flip = if d.bad { r } else { p };
                if d.burst_rng.bernoulli(flip) {
                    d.bad = !d.bad;
                }
                lost
            }
            None => false,
        };
        let random = d.loss > 0.0 && d.loss_rng.bernoulli(d.loss);
        if burst {
            self.counters.lost_burst += 1;
        } else if random {
            self.counters.lost_random += 1;
        }
        burst || random
    }

    /// This cell's delay in ns: fixed plus jitter.
    fn draw_delay(&mut self) -> u64 {
        let d = &mut self.draws;
        match d.jitter {
            Jitter::None => d.delay,
            Jitter::Uniform(j) => {
                let j = j.as_nanos();
                let low = d.delay.saturating_sub(j);
                let high = d.delay.saturating_add(j);
                // high − low + 1 values; at the full u64 span, any u64 will do.
                match (high - low).checked_add(1) {
                    Some(span) => low + d.delay_rng.below(span),
                    None => d.delay_rng.below(u64::MAX),
                }
            }
            Jitter::Exponential(mean) => {
                let extra = d.delay_rng.exponential(mean.as_nanos() as f64);
                // `as` saturates: a draw beyond u64 ns is the end of time.
                d.delay.saturating_add(extra as u64)
            }
        }
    }
}

/// Header and payload bit errors, drawn from `d`.
fn corrupt(d: &mut Draws, counters: &mut Counters, cell: &mut [u8; CELL_LEN]) {
    if d.hec_any > 0.0 {
        let u = d.hec_rng.unit();
        if u < d.hec_single {
            let bit = d.hec_rng.below(HEADER_BITS);
            flip(cell, bit);
            counters.header_single += 1;
            counters.header_bits_flipped += 1;
        } else if u < d.hec_any {
            // Two distinct bits: the HEC (distance 4) detects every double error and
            // corrects none, so I.432's receiver discards the cell.
            let a = d.hec_rng.below(HEADER_BITS);
            let mut b = d.hec_rng.below(HEADER_BITS - 1);
            if b >= a {
                b += 1;
            }
            flip(cell, a);
            flip(cell, b);
            counters.header_multi += 1;
            counters.header_bits_flipped += 2;
        }
    }
    if let Some(ber) = &d.ber {
        let n = ber.apply(&mut d.ber_rng, &mut cell[HEADER_LEN..]);
        if n > 0 {
            counters.payload_errored += 1;
            counters.payload_bits_flipped += u64::from(n);
        }
    }
}

/// Flips bit `bit` of `cell` (0 = MSB of byte 0).
fn flip(cell: &mut [u8; CELL_LEN], bit: u64) {
    cell[(bit / 8) as usize] ^= 0x80 >> (bit % 8);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BurstLoss, Probability};
    use natm_wire::cell::{Cell, HecReceiver, HecVerdict, hec};
    use proptest::prelude::*;

    const OC3: LineRate = LineRate::OC3;

    /// A cell of VC key `vc` (the 28 bits above PTI/CLP) with a valid HEC and `seq` in its
    /// first four payload bytes.
    fn cell(vc: u32, seq: u32) -> [u8; CELL_LEN] {
        let mut c = [0u8; CELL_LEN];
        c[..4].copy_from_slice(&(vc << 4).to_be_bytes());
        c[4] = hec([c[0], c[1], c[2], c[3]]);
        c[5..9].copy_from_slice(&seq.to_be_bytes());
        c
    }

    fn seq_of(c: &[u8; CELL_LEN]) -> u32 {
        u32::from_be_bytes([c[5], c[6], c[7], c[8]])
    }

    fn vc_of(c: &[u8; CELL_LEN]) -> u32 {
        u32::from_be_bytes([c[0], c[1], c[2], c[3]]) >> 4
    }

    fn ns(n: u64) -> Instant {
        Instant::from_nanos(n)
    }

    fn netem(rate: LineRate, imp: &str) -> Netem {
        Netem::new(&Config {
            rate,
            queue_cells: u32::MAX,
            impairments: imp.parse().expect("test config parses"),
            ..Config::default()
        })
    }

    /// Every cell still in flight, in departure order (the drain rule, driven by
    /// poll_timeout).
    fn drain(n: &mut Netem) -> Vec<Transmit> {
        let mut out = Vec::new();
        while let Some(t) = n.poll_timeout() {
            while let Some(tx) = n.poll_transmit(t) {
                out.push(tx);
            }
        }
        out
    }

    /// Offers cells 0..n, one every `gap` ns from t = 0, cell i on VC `i % vcs`, draining
    /// as it goes; returns (offer instant, transmit) for every delivered cell.
    fn run(link: &mut Netem, n: u32, gap: u64, vcs: u32) -> Vec<(Instant, Transmit)> {
        let mut out = Vec::new();
        for i in 0..n {
            let now = ns(u64::from(i) * gap);
            link.handle_cell(now, cell(i % vcs, i));
            while let Some(tx) = link.poll_transmit(now) {
                out.push(tx);
            }
        }
        out.extend(drain(link));
        out.into_iter()
            .map(|tx| (ns(u64::from(seq_of(&tx.cell)) * gap), tx))
            .collect()
    }

    /// |measured − expected| within `k` standard deviations `sd`.
    fn within(what: &str, measured: f64, expected: f64, sd: f64, k: f64) {
        eprintln!("{what}: measured {measured:.5e}, expected {expected:.5e}, sd {sd:.3e}");
        assert!(
            (measured - expected).abs() <= k * sd,
            "{what}: measured {measured}, expected {expected} ± {k}·{sd}"
        );
    }

    // ---- state × event, in virtual time ----

    #[test]
    fn batch_calls_give_what_single_calls_give() {
        // Jitter (the heap), loss and bit errors (damage in place), a slow line and an
        // unlimited one: offering a batch and polling into a short buffer must hand out
        // the same cells in the same order, and count the same, as one call per cell.
        for (rate, imp) in [
            (OC3, "loss=0.1,ber=1e-3,hec=0.05,seed=7"),
            (
                LineRate::Unlimited,
                "jitter=20us,delay=50us,loss=0.05,seed=3",
            ),
            (OC3, "jitter=5us:exp,ber=1e-4,seed=11"),
        ] {
            let mut one = netem(rate, imp);
            let mut batch = netem(rate, imp);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let mut out = [[0u8; CELL_LEN]; 3];
            for step in 0..200u32 {
                let now = ns(u64::from(step) * 7_000);
                let cells: Vec<_> = (0..5).map(|k| cell(k % 3, step * 5 + k)).collect();
                for c in &cells {
                    one.handle_cell(now, *c);
                }
                batch.handle_cells(now, &cells);
                while let Some(tx) = one.poll_transmit(now) {
                    a.push(tx.cell);
                }
                loop {
                    let n = batch.poll_transmit_cells(now, &mut out);
                    b.extend_from_slice(&out[..n]);
                    if n < out.len() {
                        break;
                    }
                }
            }
            a.extend(drain(&mut one).into_iter().map(|tx| tx.cell));
            while let Some(t) = batch.poll_timeout() {
                let n = batch.poll_transmit_cells(t, &mut out);
                b.extend_from_slice(&out[..n]);
            }
            assert!(a.len() > 500, "{imp}: too few cells to compare");
            assert_eq!(a, b, "{imp}");
            assert_eq!(one.counters(), batch.counters(), "{imp}");
        }
    }

    #[test]
    fn set_impairments_applies_from_now_and_keeps_order_per_vc() {
        // 1 ms delay, then none: later cells would pass earlier ones of their VC.
        let mut l = netem(LineRate::Unlimited, "delay=1ms");
        for i in 0..3 {
            l.handle_cell(ns(u64::from(i) * 100), cell(1, i));
        }
        l.handle_cell(ns(300), cell(2, 100));
        l.set_impairments(&Impairments::default());
        l.handle_cell(ns(400), cell(1, 3));
        l.handle_cell(ns(400), cell(3, 200));
        let out = drain(&mut l);
        let vc1: Vec<(u32, u64)> = out
            .iter()
            .filter(|t| vc_of(&t.cell) == 1)
            .map(|t| (seq_of(&t.cell), t.at.as_nanos()))
            .collect();
        // The cells in flight keep their 1 ms; VC 1's new cell waits behind them.
        assert_eq!(
            vc1,
            [
                (0, 1_000_000),
                (1, 1_000_100),
                (2, 1_000_200),
                (3, 1_000_200)
            ]
        );
        // Another VC is not held: its undelayed cell leaves at once, first of all.
        assert_eq!((vc_of(&out[0].cell), out[0].at), (3, ns(400)));
        assert_eq!(l.counters().delivered, 6);

        // Loss switched on applies to new cells only, and off again stops it.
        let mut l = netem(LineRate::Unlimited, "delay=10us");
        for i in 0..10 {
            l.handle_cell(ns(0), cell(1, i));
        }
        l.set_impairments(&"loss=100%".parse().unwrap());
        for i in 10..20 {
            l.handle_cell(ns(1), cell(1, i));
        }
        l.set_impairments(&Impairments::default());
        l.handle_cell(ns(2), cell(1, 20));
        let seqs: Vec<u32> = drain(&mut l).iter().map(|t| seq_of(&t.cell)).collect();
        assert_eq!(seqs, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 20]);
        assert_eq!(l.counters().lost_random, 10);

        // Jitter switched on over a FIFO in flight: order per VC still holds.
        let mut l = netem(LineRate::Unlimited, "delay=50us");
        for i in 0..50 {
            l.handle_cell(ns(u64::from(i)), cell(1, i));
        }
        l.set_impairments(&"delay=10us,jitter=10us,seed=3".parse().unwrap());
        for i in 50..100 {
            l.handle_cell(ns(100 + u64::from(i)), cell(1, i));
        }
        let seqs: Vec<u32> = drain(&mut l).iter().map(|t| seq_of(&t.cell)).collect();
        assert_eq!(seqs, (0..100).collect::<Vec<u32>>());
    }

    #[test]
    fn test_idle_line_cell() {
        let mut l = netem(OC3, "none");
        l.handle_cell(ns(1000), cell(1, 0));
        // One OC-3c cell: 424/149.76 µs = 2831.196 ns, out at the next whole ns.
        assert_eq!(l.poll_timeout(), Some(ns(3832)));
        assert_eq!(l.poll_transmit(ns(3831)), None);
        let tx = l.poll_transmit(ns(5000)).expect("due");
        assert_eq!((tx.at, tx.cell), (ns(3832), cell(1, 0)));
        assert_eq!(l.poll_transmit(ns(5000)), None);
        assert_eq!(l.poll_timeout(), None);
        let c = l.counters();
        assert_eq!((c.offered, c.carried, c.delivered), (1, 1, 1));
    }

    #[test]
    fn test_busy_line_cell() {
        let mut l = netem(OC3, "none");
        l.handle_cell(ns(0), cell(1, 0));
        l.handle_cell(ns(0), cell(1, 1));
        // Offered while the line is busy: waits its turn, no drift (3 · 2831.196).
        l.handle_cell(ns(1000), cell(2, 2));
        let at: Vec<u64> = drain(&mut l).iter().map(|t| t.at.as_nanos()).collect();
        assert_eq!(at, [2832, 5663, 8494]);
        // After an idle gap the line starts afresh at the offer.
        l.handle_cell(ns(100_000), cell(1, 3));
        assert_eq!(l.poll_timeout(), Some(ns(102_832)));
    }

    #[test]
    fn test_waiting_at_most_and_when() {
        let mut l = Netem::new(&Config {
            rate: OC3,
            queue_cells: 8,
            ..Config::default()
        });
        for i in 0..9 {
            l.handle_cell(ns(0), cell(1, i));
        }
        // One on the line, eight waiting: the queue is full.
        assert!(!l.has_room(ns(0)));
        assert!(l.waiting_at_most(ns(0), 8) && !l.waiting_at_most(ns(0), 7));
        // Four waiting (behind one on the line) once four have left: the fourth departure.
        let at = l.waiting_at_most_at(4).unwrap();
        assert_eq!(at, ns(11_325), "4 · 2831.196 ns, rounded up");
        assert!(l.waiting_at_most(at, 4));
        assert!(!l.waiting_at_most(ns(at.as_nanos() - 1), 4));
        assert_eq!(l.cell_time(), Some(Duration::from_nanos(2832)));
        let unlimited = netem(LineRate::Unlimited, "none");
        assert!(unlimited.waiting_at_most(ns(0), 0));
        assert_eq!(unlimited.waiting_at_most_at(0), None);
        assert_eq!(unlimited.cell_time(), None);
    }

    #[test]
    fn test_queue_full_cell() {
        let mut l = Netem::new(&Config {
            queue_cells: 2,
            ..Config::default()
        });
        for i in 0..5 {
            l.handle_cell(ns(0), cell(1, i));
        }
        // One on the line, two waiting, two tail-dropped.
        assert_eq!(l.counters().queue_drops, 2);
        assert_eq!(l.in_flight(), 3);
        // Once the first has gone, one place is free again.
        l.handle_cell(ns(2832), cell(1, 5));
        l.handle_cell(ns(2832), cell(1, 6));
        assert_eq!(l.counters().queue_drops, 3);
        let seqs: Vec<u32> = drain(&mut l).iter().map(|t| seq_of(&t.cell)).collect();
        assert_eq!(seqs, [0, 1, 2, 5]);
        // A zero queue takes a cell only on an idle line.
        let mut l = Netem::new(&Config {
            queue_cells: 0,
            ..Config::default()
        });
        l.handle_cell(ns(0), cell(1, 0));
        l.handle_cell(ns(2831), cell(1, 1));
        l.handle_cell(ns(2832), cell(1, 2));
        assert_eq!(l.counters().queue_drops, 1);
    }

    #[test]
    fn test_in_flight_limit_cell() {
        let mut l = Netem::new(&Config {
            rate: LineRate::Unlimited,
            in_flight_cells: 3,
            impairments: "delay=1ms".parse().unwrap(),
            ..Config::default()
        });
        for i in 0..5 {
            l.handle_cell(ns(u64::from(i)), cell(1, i));
        }
        assert_eq!(l.counters().overflow_drops, 2);
        assert_eq!(drain(&mut l).len(), 3);
    }

    #[test]
    fn test_unlimited_cell() {
        let mut l = netem(LineRate::Unlimited, "none");
        for i in 0..1000 {
            l.handle_cell(ns(7), cell(i, i));
        }
        let out = drain(&mut l);
        assert_eq!(out.len(), 1000);
        assert!(
            out.iter()
                .enumerate()
                .all(|(i, t)| t.at == ns(7) && seq_of(&t.cell) == i as u32)
        );
    }

    #[test]
    fn test_delay_cell() {
        let mut l = netem(OC3, "delay=100us");
        l.handle_cell(ns(0), cell(1, 0));
        l.handle_cell(ns(0), cell(1, 1));
        let at: Vec<u64> = drain(&mut l).iter().map(|t| t.at.as_nanos()).collect();
        assert_eq!(at, [102_832, 105_663]);
        assert_eq!(l.counters().delayed, 2);
    }

    #[test]
    fn test_jitter_one_vc_cell() {
        // Jitter ± 50 µs on cells 1 µs apart: drawn departures cross all the time, yet
        // the VC leaves in order.
        let mut l = netem(LineRate::Unlimited, "delay=60us,jitter=50us,seed=3");
        let out = run(&mut l, 10_000, 1000, 1);
        assert_eq!(out.len(), 10_000);
        for (k, w) in out.windows(2).enumerate() {
            assert!(w[0].1.at <= w[1].1.at);
            assert_eq!(seq_of(&w[0].1.cell), k as u32);
        }
        assert!(l.counters().held_for_order > 1000, "{:?}", l.counters());
        assert!(l.last_departure.is_empty());
    }

    #[test]
    fn test_jitter_many_vcs_cell() {
        // Different VCs pass each other; each VC on its own keeps order.
        let mut l = netem(LineRate::Unlimited, "delay=60us,jitter=50us:uniform,seed=4");
        let out = run(&mut l, 10_000, 1000, 7);
        let mut last = [None; 7];
        let mut passed = 0;
        for w in out.windows(2) {
            if seq_of(&w[1].1.cell) < seq_of(&w[0].1.cell) {
                passed += 1;
            }
        }
        for (_, tx) in &out {
            let v = vc_of(&tx.cell) as usize;
            assert!(last[v] < Some(seq_of(&tx.cell)));
            last[v] = Some(seq_of(&tx.cell));
        }
        assert!(passed > 100, "cells of different VCs passed {passed} times");
    }

    #[test]
    fn test_time_backwards_cell() {
        let mut l = netem(LineRate::Unlimited, "delay=1us");
        l.handle_cell(ns(10_000), cell(1, 0));
        // Earlier than already seen: clamped to 10 000, so it does not overtake.
        l.handle_cell(ns(5_000), cell(1, 1));
        assert_eq!(l.counters().clamped, 1);
        assert_eq!(l.poll_transmit(ns(10_999)), None);
        let at: Vec<u64> = drain(&mut l).iter().map(|t| t.at.as_nanos()).collect();
        assert_eq!(at, [11_000, 11_000]);
        // A poll in the past neither hands out future cells nor rewinds the clock.
        l.handle_cell(ns(20_000), cell(1, 2));
        assert_eq!(l.poll_transmit(ns(0)), None);
        assert_eq!(l.counters().clamped, 2);
    }

    #[test]
    fn test_end_of_time_cell() {
        let mut l = netem(OC3, "delay=1s");
        l.handle_cell(ns(u64::MAX - 10), cell(1, 0));
        let out = drain(&mut l);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].at, ns(u64::MAX));
    }

    // ---- line rate ----

    /// Cells out by `t` ns of a busy period from 0 at rate num/den: ⌊t·num/(den·10⁹)⌋.
    fn out_by(t: u64, (num, den): (u64, u64)) -> usize {
        (u128::from(t) * u128::from(num) / (u128::from(den) * NS_PER_S)) as usize
    }

    #[test]
    fn line_rate_is_exact() {
        let cases = [
            (OC3, 1_000_000_000, 353_207),
            (LineRate::OC12, 100_000_000, 141_283),
            (LineRate::ATM25, 1_000_000_000, 59_111),
            (LineRate::DS3, 10_000_000, 960),
            ("1000".parse().unwrap(), 1_000_000_000, 1000),
        ];
        for (rate, window, expect) in cases {
            let mut l = netem(rate, "none");
            for i in 0..expect as u32 + 10 {
                l.handle_cell(ns(0), cell(1, i));
            }
            let out = drain(&mut l);
            let n = out.iter().filter(|t| t.at <= ns(window)).count();
            assert_eq!(n, expect, "{rate}");
            assert_eq!(n, out_by(window, rate.exact().unwrap()));
        }
    }

    #[test]
    fn line_rate_has_no_drift_over_a_long_run() {
        // Two seconds of OC-3c back to back: exactly the cells the fraction allows in the
        // second second, and every gap is 2831 or 2832 ns.
        let rate = OC3.exact().unwrap();
        let mut l = netem(OC3, "none");
        let n = out_by(2_000_000_000, rate) as u32 + 5;
        for i in 0..n {
            l.handle_cell(ns(0), cell(1, i));
        }
        let out = drain(&mut l);
        let window = out
            .iter()
            .filter(|t| t.at > ns(1_000_000_000) && t.at <= ns(2_000_000_000))
            .count();
        assert_eq!(window, 353_208);
        assert_eq!(
            window,
            out_by(2_000_000_000, rate) - out_by(1_000_000_000, rate)
        );
        assert!(out.windows(2).all(|w| {
            let gap = w[1].at.as_nanos() - w[0].at.as_nanos();
            gap == 2831 || gap == 2832
        }));
    }

    // ---- statistics against configuration ----

    #[test]
    fn random_loss_rate() {
        let n = 1_000_000;
        let p = 0.01;
        let mut l = netem(LineRate::Unlimited, "loss=1%,seed=11");
        let out = run(&mut l, n, 10, 1);
        let c = l.counters();
        assert_eq!(c.lost_random + out.len() as u64, u64::from(n));
        assert_eq!(c.lost_burst, 0);
        // Binomial: sd = √(p(1−p)/n).
        let measured = c.lost_random as f64 / f64::from(n);
        within(
            "loss",
            measured,
            p,
            (p * (1.0 - p) / f64::from(n)).sqrt(),
            5.0,
        );
    }

    /// Loss rate and mean burst length (runs of consecutive lost sequence numbers) of a run.
    fn loss_runs(out: &[(Instant, Transmit)], n: u32) -> (f64, f64, usize) {
        let mut got = vec![false; n as usize];
        for (_, t) in out {
            got[seq_of(&t.cell) as usize] = true;
        }
        let lost = got.iter().filter(|g| !**g).count();
        let bursts = got.windows(2).filter(|w| w[0] && !w[1]).count() + usize::from(!got[0]);
        (
            lost as f64 / f64::from(n),
            lost as f64 / bursts as f64,
            bursts,
        )
    }

    /// Gilbert's chain: the loss rate's sd is the binomial one times √((1+λ)/(1−λ)),
    /// λ = 1 − p − r the chain's autocorrelation; burst lengths are geometric (sd √(1−r)/r).
    fn check_gilbert(imp: &str, p: f64, r: f64) {
        let n = 1_000_000;
        let mut l = netem(LineRate::Unlimited, imp);
        let out = run(&mut l, n, 10, 1);
        let (rate, mean_len, bursts) = loss_runs(&out, n);
        assert_eq!(l.counters().lost_burst, u64::from(n) - out.len() as u64);
        let pi = p / (p + r);
        let lambda = 1.0 - p - r;
        let rate_sd = (pi * (1.0 - pi) / f64::from(n) * (1.0 + lambda) / (1.0 - lambda)).sqrt();
        within(&format!("{imp} loss"), rate, pi, rate_sd, 5.0);
        let len_sd = (1.0 - r).sqrt() / r / (bursts as f64).sqrt();
        within(&format!("{imp} burst"), mean_len, 1.0 / r, len_sd, 5.0);
    }

    #[test]
    fn burst_loss_by_mean_and_length() {
        // 2 % lost in bursts of 4: r = 1/4, p = 0.02·0.25/0.98.
        let b = BurstLoss::mean(0.02, 4.0).unwrap();
        let (p, r) = b.transitions();
        assert!((r - 0.25).abs() < 1e-15 && (p - 0.005 / 0.98).abs() < 1e-15);
        check_gilbert("burst=2%/4,seed=12", p, r);
    }

    #[test]
    fn burst_loss_by_transitions() {
        check_gilbert("ge=0.01/0.5,seed=13", 0.01, 0.5);
    }

    #[test]
    fn burst_and_random_loss_together() {
        let n = 1_000_000;
        let mut l = netem(LineRate::Unlimited, "loss=1%,burst=2%/4,seed=14");
        let out = run(&mut l, n, 10, 1);
        let c = l.counters();
        assert_eq!(
            c.lost_random + c.lost_burst + out.len() as u64,
            u64::from(n)
        );
        // Random loss applies to cells the chain spared.
        let spared = f64::from(n) - c.lost_burst as f64;
        within(
            "random among spared",
            c.lost_random as f64 / spared,
            0.01,
            (0.01 * 0.99 / spared).sqrt(),
            5.0,
        );
    }

    #[test]
    fn header_errors_single_corrected_double_discarded() {
        let n = 1_000_000u32;
        let (p1, p2) = (1e-3, 5e-4);
        let mut l = netem(LineRate::Unlimited, "hec=1e-3,hec2=5e-4,seed=15");
        let out = run(&mut l, n, 10, 4096);
        assert_eq!(out.len(), n as usize);
        let (mut corrected, mut discarded) = (0u64, 0u64);
        let mut positions = [0u32; 40];
        for (_, tx) in &out {
            let want = cell(seq_of(&tx.cell) % 4096, seq_of(&tx.cell));
            let mut got = tx.cell;
            assert_eq!(got[5..], want[5..], "payload untouched");
            match HecReceiver::new().receive(&mut Cell::new_unchecked(&mut got[..])) {
                HecVerdict::Valid => assert_eq!(got, want),
                HecVerdict::Corrected { bit } => {
                    assert_eq!(got, want, "corrected back to the original");
                    positions[usize::from(bit)] += 1;
                    corrected += 1;
                }
                HecVerdict::Discarded { .. } => discarded += 1,
            }
        }
        let c = l.counters();
        assert_eq!((corrected, discarded), (c.header_single, c.header_multi));
        assert_eq!(c.header_bits_flipped, c.header_single + 2 * c.header_multi);
        let nf = f64::from(n);
        within(
            "hec",
            corrected as f64 / nf,
            p1,
            (p1 * (1.0 - p1) / nf).sqrt(),
            5.0,
        );
        within(
            "hec2",
            discarded as f64 / nf,
            p2,
            (p2 * (1.0 - p2) / nf).sqrt(),
            5.0,
        );
        // Every one of the 40 header bits is hit (25 expected each).
        assert!(positions.iter().all(|&k| k > 0), "{positions:?}");
    }

    #[test]
    fn payload_bit_error_rate() {
        let n = 200_000u32;
        let b = 1e-4;
        let mut l = netem(LineRate::Unlimited, "ber=1e-4,seed=16");
        let mut flips = 0u64;
        let mut errored = 0u64;
        let mut halves = [0u64; 2];
        for i in 0..n {
            l.handle_cell(ns(u64::from(i)), cell(1, 0));
            let tx = l
                .poll_transmit(ns(u64::from(i)))
                .expect("unlimited, no delay");
            assert_eq!(tx.cell[..5], cell(1, 0)[..5], "header untouched");
            let mut k = 0;
            for (j, (a, b)) in tx.cell[5..].iter().zip(&cell(1, 0)[5..]).enumerate() {
                let d = u64::from((a ^ b).count_ones());
                halves[j / 24] += d;
                k += d;
            }
            flips += k;
            errored += u64::from(k > 0);
        }
        let c = l.counters();
        assert_eq!(
            (flips, errored),
            (c.payload_bits_flipped, c.payload_errored)
        );
        let bits = f64::from(n) * 384.0;
        within(
            "ber",
            flips as f64 / bits,
            b,
            (b * (1.0 - b) / bits).sqrt(),
            5.0,
        );
        let q = 1.0 - (1.0 - b).powi(384);
        let nf = f64::from(n);
        within(
            "errored cells",
            errored as f64 / nf,
            q,
            (q * (1.0 - q) / nf).sqrt(),
            5.0,
        );
        // Both halves of the payload alike (each half binomial over n·192 bits).
        let half_sd = (bits / 2.0 * b * (1.0 - b)).sqrt();
        within(
            "halves",
            halves[0] as f64,
            halves[1] as f64,
            half_sd * 2f64.sqrt(),
            5.0,
        );
    }

    /// Mean and variance of the delays (departure − offer) of a run.
    fn delay_moments(out: &[(Instant, Transmit)]) -> (f64, f64, u64, u64) {
        let d: Vec<u64> = out
            .iter()
            .map(|(t0, tx)| tx.at.as_nanos() - t0.as_nanos())
            .collect();
        let n = d.len() as f64;
        let mean = d.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = d.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let (min, max) = (*d.iter().min().unwrap(), *d.iter().max().unwrap());
        (mean, var, min, max)
    }

    #[test]
    fn uniform_jitter_mean_and_spread() {
        // delay 100 µs ± 20 µs on 1000 VCs each sending every 1 ms: order never binds.
        let n = 100_000u32;
        let mut l = netem(LineRate::Unlimited, "delay=100us,jitter=20us,seed=17");
        let out = run(&mut l, n, 1000, 1000);
        assert_eq!(l.counters().held_for_order, 0);
        assert_eq!(l.counters().delayed, u64::from(n));
        let (mean, var, min, max) = delay_moments(&out);
        assert!(min >= 80_000 && max <= 120_000, "{min} {max}");
        // Uniform on 40 001 whole ns: variance ((2J+1)² − 1)/12 ≈ J²/3, μ₄ ≈ J⁴/5.
        let j = 20_000.0f64;
        let v = ((2.0 * j + 1.0).powi(2) - 1.0) / 12.0;
        let nf = f64::from(n);
        within("mean", mean, 100_000.0, (v / nf).sqrt(), 5.0);
        let var_sd = ((j.powi(4) / 5.0 - v * v) / nf).sqrt();
        within("variance", var, v, var_sd, 5.0);
    }

    #[test]
    fn exponential_jitter_mean_and_spread() {
        let n = 100_000u32;
        let mut l = netem(LineRate::Unlimited, "delay=100us,jitter=20us:exp,seed=18");
        let out = run(&mut l, n, 1000, 1000);
        assert_eq!(l.counters().held_for_order, 0);
        let (mean, var, min, _) = delay_moments(&out);
        assert!(min >= 100_000);
        // Exponential of mean m: sd m, var(s²) ≈ 8m⁴/n. Truncation to ns takes ~0.5 ns.
        let m = 20_000.0f64;
        let nf = f64::from(n);
        within("mean", mean - 100_000.0 + 0.5, m, m / nf.sqrt(), 5.0);
        within("variance", var, m * m, (8.0 / nf).sqrt() * m * m, 5.0);
    }

    #[test]
    fn seeds_fork_per_impairment() {
        // Adding jitter does not move which cells are lost.
        let lost = |imp: &str| {
            let mut l = netem(LineRate::Unlimited, imp);
            let mut seqs: Vec<u32> = run(&mut l, 5000, 1000, 1000)
                .iter()
                .map(|(_, t)| seq_of(&t.cell))
                .collect();
            seqs.sort_unstable();
            seqs
        };
        assert_eq!(
            lost("loss=5%,seed=9"),
            lost("loss=5%,jitter=10us,hec=0.1,seed=9")
        );
        assert_ne!(lost("loss=5%,seed=9"), lost("loss=5%,seed=10"));
    }

    #[test]
    fn probability_one_loses_everything() {
        let mut l = Netem::new(&Config {
            rate: LineRate::Unlimited,
            impairments: Impairments {
                loss: Probability::ONE,
                ..Impairments::default()
            },
            ..Config::default()
        });
        run(&mut l, 100, 1, 1);
        assert_eq!(l.counters().lost_random, 100);
    }

    // ---- properties ----

    fn rate_strategy() -> impl Strategy<Value = LineRate> {
        prop_oneof![
            Just(LineRate::Unlimited),
            Just(OC3),
            Just(LineRate::ATM25),
            (1u32..2_000_000).prop_map(|n| LineRate::cells(n).unwrap()),
        ]
    }

    fn jitter_strategy() -> impl Strategy<Value = Jitter> {
        prop_oneof![
            Just(Jitter::None),
            (0u64..100_000).prop_map(|j| Jitter::Uniform(Duration::from_nanos(j))),
            (0u64..100_000).prop_map(|j| Jitter::Exponential(Duration::from_nanos(j))),
        ]
    }

    /// Offers (gap, vc) cells, draining at each offer; returns (vc, seq, at) of each output.
    fn offer_all(l: &mut Netem, cells: &[(u64, u32)]) -> Vec<Transmit> {
        let mut now = 0u64;
        let mut out = Vec::new();
        for (i, &(gap, vc)) in cells.iter().enumerate() {
            now += gap;
            l.handle_cell(ns(now), cell(vc, i as u32));
            while let Some(tx) = l.poll_transmit(ns(now)) {
                out.push(tx);
            }
        }
        out.extend(drain(l));
        out
    }

    proptest! {
        /// `has_room` says exactly which offers the queue takes, and `room_at` is the
        /// first instant it holds.
        #[test]
        fn p_has_room_predicts_queue_drops(
            rate in rate_strategy(),
            queue_cells in 0u32..8,
            gaps in prop::collection::vec(0u64..5000, 1..300),
        ) {
            let mut l = Netem::new(&Config {
                rate,
                queue_cells,
                ..Config::default()
            });
            let mut now = 0u64;
            for (i, gap) in gaps.iter().enumerate() {
                now += gap;
                let t = ns(now);
                let room = l.has_room(t);
                match l.room_at() {
                    None => prop_assert!(room),
                    Some(r) => {
                        prop_assert_eq!(room, r <= t);
                        prop_assert!(l.has_room(r));
                        if !room {
                            // r > t: one ns before it is still after every `now` seen.
                            prop_assert!(!l.has_room(ns(r.as_nanos() - 1)));
                        }
                    }
                }
                let drops = l.counters().queue_drops;
                l.handle_cell(t, cell(1, i as u32));
                prop_assert_eq!(l.counters().queue_drops, drops + u64::from(!room));
                while l.poll_transmit(t).is_some() {}
            }
        }

        #[test]
        fn p_never_reorders_a_vc(
            rate in rate_strategy(),
            jitter in jitter_strategy(),
            delay in 0u64..50_000,
            loss in 0.0f64..0.3,
            seed: u64,
            cells in prop::collection::vec((0u64..5000, 0u32..4), 1..400),
        ) {
            let mut l = Netem::new(&Config {
                rate,
                queue_cells: 64,
                impairments: Impairments {
                    loss: Probability::new(loss).unwrap(),
                    delay: Duration::from_nanos(delay),
                    jitter,
                    hec_single: Probability::new(0.05).unwrap(),
                    seed,
                    ..Impairments::default()
                },
                ..Config::default()
            });
            let out = offer_all(&mut l, &cells);
            let mut last: [Option<u32>; 4] = [None; 4];
            for w in out.windows(2) {
                prop_assert!(w[0].at <= w[1].at);
            }
            for tx in &out {
                let s = seq_of(&tx.cell);
                let vc = cells[s as usize].1 as usize;
                prop_assert!(last[vc] < Some(s), "VC {} reordered: {:?} then {}", vc, last[vc], s);
                last[vc] = Some(s);
            }
            let c = l.counters();
            prop_assert_eq!(
                c.offered,
                c.queue_drops + c.overflow_drops + c.lost_random + c.lost_burst + c.delivered
            );
        }

        #[test]
        fn p_unimpaired_is_identity_at_line_spacing(
            rate in rate_strategy(),
            cells in prop::collection::vec(
                (0u64..10_000, prop::collection::vec(any::<u8>(), CELL_LEN)), 1..200),
        ) {
            let mut l = netem(rate, "none");
            let mut now = 0u64;
            let mut expect = Vec::new();
            let mut free: u128 = 0;
            for (gap, bytes) in &cells {
                now += gap;
                let c: [u8; CELL_LEN] = bytes.as_slice().try_into().unwrap();
                l.handle_cell(ns(now), c);
                // The reference line: start at max(offer, line free), one exact slot.
                let at = match rate.exact() {
                    None => now,
                    Some((num, den)) => {
                        let (num, den) = (u128::from(num), u128::from(den));
                        free = free.max(u128::from(now) * num) + den * NS_PER_S;
                        free.div_ceil(num) as u64
                    }
                };
                expect.push(Transmit { at: ns(at), cell: c });
            }
            prop_assert_eq!(drain(&mut l), expect);
        }

        #[test]
        fn p_same_seed_same_output(
            seed: u64,
            other: u64,
            cells in prop::collection::vec((0u64..3000, 0u32..8), 300..400),
        ) {
            let imp = |seed| Config {
                rate: OC3,
                impairments: format!(
                    "loss=10%,burst=5%/3,hec=0.05,hec2=0.05,ber=1e-3,delay=5us,jitter=20us,seed={seed}"
                )
                .parse()
                .unwrap(),
                ..Config::default()
            };
            let a = offer_all(&mut Netem::new(&imp(seed)), &cells);
            let b = offer_all(&mut Netem::new(&imp(seed)), &cells);
            prop_assert_eq!(&a, &b);
            prop_assume!(other != seed);
            let c = offer_all(&mut Netem::new(&imp(other)), &cells);
            prop_assert_ne!(a, c);
        }
    }
}

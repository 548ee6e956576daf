//! A virtual-time harness: a seeded lossy wire and a pair of endpoints over two of them.
//!
//! [`Wire`] is one simplex VC on a fixed-rate line: a frame's cells leave back to back at
//! the line's rate behind the frames before it, and arrive after the propagation delay
//! plus a jitter that never reorders (ATM keeps a VC's cells in sequence). On the way:
//!
//! * random cell loss and Gilbert–Elliott bursts (a good and a bad state, each cell may
//!   switch): a frame that lost a cell is lost, as AAL5 reassembly loses it;
//! * random frame loss;
//! * bit errors per cell: the AAL5 CRC drops the frame (counted apart);
//! * duplication (a frame delivered twice);
//! * link flaps: whatever is on the line during a down interval is lost;
//! * a finite queue: a frame that finds it full is dropped whole.
//!
//! [`Pair`] runs two [`Endpoint`]s over two wires: time jumps to the earliest of the
//! endpoints' timeouts and the wires' arrivals; after every step both endpoints' frames
//! and events are drained, as the call contract asks. Randomness is a SplitMix64 seeded by
//! the caller: one seed reproduces a run.

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;

use natm_core::{Duration, Instant};

use crate::config::{Config, frame_cells};
use crate::endpoint::{Endpoint, Event, Isn};

/// SplitMix64: small, seeded, good enough for fault injection.
#[derive(Clone, Debug)]
pub struct Rng(u64);

/// Parts per billion.
pub const PPB: u64 = 1_000_000_000;

impl Rng {
    /// A generator from `seed`.
    pub const fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// True with probability `ppb` parts per billion.
    pub fn chance(&mut self, ppb: u64) -> bool {
        ppb > 0 && self.below(PPB) < ppb
    }
}

/// Gilbert–Elliott burst loss, per cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GilbertElliott {
    /// Chance per cell of going from good to bad, ppb.
    pub to_bad: u64,
    /// Chance per cell of going from bad to good, ppb.
    pub to_good: u64,
    /// Cell loss in the bad state, ppb (the good state's is the wire's `cell_loss`).
    pub bad_loss: u64,
}

/// A wire's line and impairments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WireConfig {
    /// Line rate, cells/s (0: unlimited, frames take no time).
    pub rate: u64,
    /// Propagation delay.
    pub delay: Duration,
    /// Extra delay, uniform in `0..=jitter`, order kept.
    pub jitter: Duration,
    /// Random cell loss, ppb.
    pub cell_loss: u64,
    /// Burst loss on top of it.
    pub burst: Option<GilbertElliott>,
    /// Random frame loss, ppb.
    pub frame_loss: u64,
    /// Bit errors: chance per cell that one of its bits flips, ppb (the frame's CRC fails).
    pub bit_errors: u64,
    /// Chance a frame is delivered twice, ppb.
    pub duplicate: u64,
    /// Intervals (start, length) in which the line is down.
    pub flaps: Vec<(Instant, Duration)>,
    /// The line's queue, cells (0: unlimited): a frame that would wait behind more than
    /// this many cells is dropped whole, as a switch's full output queue discards a frame.
    pub queue_cells: u64,
}

impl WireConfig {
    /// OC-3c's payload rate (353,207 cells/s), `delay` one way, no impairment.
    pub fn oc3(delay: Duration) -> WireConfig {
        WireConfig {
            rate: 353_207,
            delay,
            ..WireConfig::default()
        }
    }
}

/// What a wire did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WireStats {
    /// Frames offered.
    pub frames: u64,
    /// The cells of those that went on the line (all but a full queue's drops): the line's
    /// busy time.
    pub cells: u64,
    /// Frames delivered (duplicates counted once more each).
    pub delivered: u64,
    /// Frames lost to cell or frame loss.
    pub lost: u64,
    /// Frames dropped by the CRC (bit errors).
    pub corrupt: u64,
    /// Frames lost to a flap.
    pub flapped: u64,
    /// Frames delivered twice.
    pub duplicated: u64,
    /// Frames dropped by a full queue.
    pub queue_drops: u64,
}

/// One simplex VC on a fixed-rate line (see the module doc).
#[derive(Clone, Debug)]
pub struct Wire {
    config: WireConfig,
    rng: Rng,
    busy_until: Instant,
    last_arrival: Instant,
    bad: bool,
    queue: VecDeque<(Instant, Vec<u8>)>,
    /// What it did.
    pub stats: WireStats,
}

impl Wire {
    /// A wire seeded with `seed`.
    pub fn new(config: WireConfig, seed: u64) -> Wire {
        Wire {
            config,
            rng: Rng::new(seed),
            busy_until: Instant::ZERO,
            last_arrival: Instant::ZERO,
            bad: false,
            queue: VecDeque::new(),
            stats: WireStats::default(),
        }
    }

    /// Changes the impairments from now on.
    pub fn set_config(&mut self, config: WireConfig) {
        self.config = config;
    }

    /// Puts a frame on the line at `now`.
    pub fn send(&mut self, now: Instant, frame: &[u8]) {
        let cells = frame_cells(frame.len());
        self.stats.frames += 1;
        if self.config.queue_cells > 0 && self.config.rate > 0 && self.busy_until > now {
            let wait = (self.busy_until - now).as_nanos();
            let ahead = (u128::from(wait) * u128::from(self.config.rate)).div_ceil(1_000_000_000);
            if ahead + u128::from(cells) > u128::from(self.config.queue_cells) {
                self.stats.queue_drops += 1;
                return;
            }
        }
        self.stats.cells += u64::from(cells);
        let start = now.max(self.busy_until);
        let end = match self.config.rate {
            0 => start,
            r => start + Duration::from_nanos((u64::from(cells) * 1_000_000_000).div_ceil(r)),
        };
        self.busy_until = end;
        let (mut lost, mut corrupt) = (false, false);
        for _ in 0..cells {
            if let Some(ge) = self.config.burst {
                let flip = if self.bad { ge.to_good } else { ge.to_bad };
                if self.rng.chance(flip) {
                    self.bad = !self.bad;
                }
                if self.bad && self.rng.chance(ge.bad_loss) {
                    lost = true;
                }
            }
            if self.rng.chance(self.config.cell_loss) {
                lost = true;
            }
            if self.rng.chance(self.config.bit_errors) {
                corrupt = true;
            }
        }
        if self.rng.chance(self.config.frame_loss) {
            lost = true;
        }
        let down = self
            .config
            .flaps
            .iter()
            .any(|&(at, len)| start < at + len && end >= at);
        if down {
            self.stats.flapped += 1;
            return;
        }
        if lost {
            self.stats.lost += 1;
            return;
        }
        if corrupt {
            self.stats.corrupt += 1;
            return;
        }
        let jitter = match self.config.jitter.as_nanos() {
            0 => 0,
            j => self.rng.below(j + 1),
        };
        let at = (end + self.config.delay + Duration::from_nanos(jitter)).max(self.last_arrival);
        self.last_arrival = at;
        self.queue.push_back((at, frame.to_vec()));
        self.stats.delivered += 1;
        if self.rng.chance(self.config.duplicate) {
            self.queue.push_back((at, frame.to_vec()));
            self.stats.delivered += 1;
            self.stats.duplicated += 1;
        }
    }

    /// When the next frame arrives.
    pub fn next_arrival(&self) -> Option<Instant> {
        self.queue.front().map(|f| f.0)
    }

    /// The next frame that has arrived by `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.next_arrival()? <= now {
            self.queue.pop_front().map(|f| f.1)
        } else {
            None
        }
    }

    /// Frames on the line.
    pub fn in_transit(&self) -> usize {
        self.queue.len()
    }
}

/// Two endpoints, `a` and `b`, over the wires `ab` and `ba`, in virtual time.
#[derive(Debug)]
pub struct Pair {
    /// One end.
    pub a: Endpoint,
    /// The other.
    pub b: Endpoint,
    /// From `a` to `b`.
    pub ab: Wire,
    /// From `b` to `a`.
    pub ba: Wire,
    /// Virtual time.
    pub now: Instant,
    /// Events `a` gave, with when.
    pub a_events: Vec<(Instant, Event)>,
    /// Events `b` gave, with when.
    pub b_events: Vec<(Instant, Event)>,
    /// Whether `a`'s application takes its events (false: they stay in `a`).
    pub a_reads: bool,
    /// Whether `b`'s application takes its events.
    pub b_reads: bool,
    /// Whether `a` holds the ack of a message for a reply ([`Endpoint::hold_acks`]) until
    /// its application's next call: the next step, with what was sent before it.
    pub a_holds: bool,
    /// Likewise for `b`.
    pub b_holds: bool,
    /// Frames an endpoint refused (should stay 0 over a wire that forges nothing).
    pub refused: u64,
    frame: Vec<u8>,
}

impl Pair {
    /// Endpoints configured alike, `a → b` numbered from `ab`, `b → a` from `ba`.
    pub fn new(config: Config, ab_isn: Isn, ba_isn: Isn, ab: Wire, ba: Wire) -> Pair {
        let a = Endpoint::new(config, ab_isn, ba_isn).expect("a valid config");
        let b = Endpoint::new(config, ba_isn, ab_isn).expect("a valid config");
        Pair {
            a,
            b,
            ab,
            ba,
            now: Instant::ZERO,
            a_events: Vec::new(),
            b_events: Vec::new(),
            a_reads: true,
            b_reads: true,
            a_holds: false,
            b_holds: false,
            refused: 0,
            frame: vec![0; config.max_frame_len()],
        }
    }

    /// Drains both endpoints' frames onto the wires and their events into the logs.
    pub fn pump(&mut self) {
        let now = self.now;
        self.a.hold_acks(self.a_holds);
        self.b.hold_acks(self.b_holds);
        while let Some(n) = next_frame(&mut self.a, now, &mut self.frame) {
            self.ab.send(now, &self.frame[..n]);
        }
        while let Some(n) = next_frame(&mut self.b, now, &mut self.frame) {
            self.ba.send(now, &self.frame[..n]);
        }
        if self.a_reads {
            while let Some(e) = self.a.poll_event() {
                self.a_events.push((now, e));
            }
        }
        if self.b_reads {
            while let Some(e) = self.b.poll_event() {
                self.b_events.push((now, e));
            }
        }
        // Reading may have opened a window: send what that asks for.
        while let Some(n) = next_frame(&mut self.a, now, &mut self.frame) {
            self.ab.send(now, &self.frame[..n]);
        }
        while let Some(n) = next_frame(&mut self.b, now, &mut self.frame) {
            self.ba.send(now, &self.frame[..n]);
        }
    }

    /// When something next happens.
    pub fn next_time(&self) -> Option<Instant> {
        [
            self.a.poll_timeout(),
            self.b.poll_timeout(),
            self.ab.next_arrival(),
            self.ba.next_arrival(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Moves to the next thing that happens at or before `limit` and does it; false if
    /// nothing does.
    pub fn step(&mut self, limit: Instant) -> bool {
        // The applications' next call: a held ack goes, on what they sent if it can.
        self.a.release_ack();
        self.b.release_ack();
        self.pump();
        let Some(next) = self.next_time() else {
            return false;
        };
        if next > limit {
            return false;
        }
        self.now = self.now.max(next);
        let now = self.now;
        while let Some(f) = self.ab.pop_due(now) {
            if self.b.handle_tpdu(now, &f).is_err() {
                self.refused += 1;
            }
        }
        while let Some(f) = self.ba.pop_due(now) {
            if self.a.handle_tpdu(now, &f).is_err() {
                self.refused += 1;
            }
        }
        if self.a.poll_timeout().is_some_and(|t| t <= now) {
            self.a.handle_timeout(now);
        }
        if self.b.poll_timeout().is_some_and(|t| t <= now) {
            self.b.handle_timeout(now);
        }
        self.pump();
        true
    }

    /// Runs until nothing happens before `limit` (then time is `limit`).
    pub fn run_until(&mut self, limit: Instant) {
        while self.step(limit) {}
        self.now = self.now.max(limit);
        self.pump();
    }

    /// Runs while `busy` holds, at most until `limit`; whether `busy` stopped holding.
    pub fn run_while(&mut self, limit: Instant, mut busy: impl FnMut(&Pair) -> bool) -> bool {
        while busy(self) {
            if !self.step(limit) {
                return !busy(self);
            }
        }
        true
    }
}

/// Message `k`'s bytes for a run: its length and content are fixed by `k` and `seed`, so a
/// receiver can check every byte.
pub fn message(seed: u64, k: u64, len: usize) -> Vec<u8> {
    let mut r = Rng::new(seed ^ k.wrapping_mul(0x2545_f491_4f6c_dd1d));
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        let w = r.next_u64().to_le_bytes();
        let n = (len - v.len()).min(8);
        v.extend_from_slice(&w[..n]);
    }
    v
}

/// `e`'s next frame at `now`, checking the promise a driver relies on: when
/// [`Endpoint::may_transmit`] says no, [`Endpoint::poll_transmit`] has nothing.
fn next_frame(e: &mut Endpoint, now: Instant, frame: &mut [u8]) -> Option<usize> {
    let may = e.may_transmit();
    let n = e.poll_transmit(now, frame);
    assert!(
        may || n.is_none(),
        "may_transmit said nothing to send, poll_transmit sent {n:?} bytes"
    );
    n
}

//! An emulated line in front of a real link: [`Emulated`] runs the cells a link sends
//! through natm-netem (line rate, loss, bit errors, delay) on the real clock.
//!
//! ```no_run
//! use natm_link::emulated::Emulated;
//! use natm_link::shm::ShmLink;
//! use natm_link::CellLink;
//! use natm_netem::Config;
//!
//! let (a, mut b) = ShmLink::pair(4096).unwrap();
//! let config = Config {
//!     rate: "oc3".parse().unwrap(),
//!     impairments: "loss=1%,delay=100us,jitter=20us,seed=7".parse().unwrap(),
//!     ..Config::default()
//! };
//! let mut a = Emulated::new(a, &config);
//! a.send_cells_timeout(&[[0; 53]; 100], None).unwrap();
//! a.finish(None).unwrap(); // nothing more to send: let the last cells leave
//! # let _ = b.recv_cells(&mut [[0; 53]; 100]);
//! ```
//!
//! # What it does
//!
//! Only the sending direction is emulated (each side of a link wraps its own end, with its
//! own configuration and seed); received cells pass through. A cell given to
//! [`send_cells`](CellLink::send_cells) is offered to the [`Netem`] at the current
//! instant, which decides its departure (after the line serialises it, the cells before it
//! and its delay) and its impairments; when the real clock reaches the departure the cell
//! goes to the inner link. Every call (send, receive, the waits) and [`Emulated::poll`]
//! first hands the inner link every cell due by now, in one batch, so a sender that
//! sleeps past several departures catches up at once and the rate holds on average:
//! departures are computed exactly from the line rate, never from when the driver woke.
//! A cell reaches the inner link up to one wake-up late (tens of µs on a loaded machine),
//! never early.
//!
//! # Back-pressure
//!
//! The emulator never drops a cell for lack of room; it refuses it instead.
//! `send_cells` takes a cell only while the line's transmit queue has room
//! ([`Config::queue_cells`] cells waiting behind the one on the line; the emulator keeps
//! its own copy of netem's serialiser arithmetic to know) and while fewer than
//! [`Config::in_flight_cells`] cells are inside (delayed, or due but not yet taken by the
//! inner link). So netem's `queue_drops` and `overflow_drops` stay 0, and
//! [`wait_send`](CellLink::wait_send) sleeps until the line frees a slot or the next cell
//! is due. A sender that keeps the link full therefore sees the line rate, and one that
//! stops must call [`Emulated::poll`] (or [`Emulated::finish`]) for the last cells to
//! leave.
//!
//! The time base is a `std::time::Instant` taken when the emulator is made, converted to
//! `natm_core::Instant` in [`Emulated::now`] and nowhere else.

use std::io;
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant as StdInstant};

use natm_core::Instant;
use natm_netem::{Config, Counters, Netem};

use crate::cell::{Cell, CellLink, LinkCounters};

/// netem's serialiser, mirrored to know whether the transmit queue has room: the same
/// exact-rational arithmetic (ticks of 1/`num` ns, `slot` ticks per cell).
#[derive(Clone, Debug)]
struct Line {
    num: u128,
    slot: u128,
    free_at: u128,
    queue: u128,
}

impl Line {
    fn backlog(&self, now: Instant) -> u128 {
        self.free_at
            .saturating_sub(u128::from(now.as_nanos()) * self.num)
    }

    /// Whether netem would queue (not drop) a cell offered at `now`.
    fn has_room(&self, now: Instant) -> bool {
        let backlog = self.backlog(now);
        backlog == 0 || backlog.div_ceil(self.slot) - 1 < self.queue
    }

    /// Accounts a cell offered at `now` (after `has_room`).
    fn take(&mut self, now: Instant) {
        self.free_at = self.free_at.max(u128::from(now.as_nanos()) * self.num) + self.slot;
    }

    /// The first instant at which `has_room` holds again.
    fn room_at(&self) -> Instant {
        let ticks = self.free_at.saturating_sub(self.queue * self.slot);
        Instant::from_nanos(u64::try_from(ticks.div_ceil(self.num)).unwrap_or(u64::MAX))
    }
}

/// A [`CellLink`] whose sent cells cross an emulated line first. See the
/// [module documentation](self).
#[derive(Debug)]
pub struct Emulated<L> {
    inner: L,
    netem: Netem,
    line: Option<Line>,
    in_flight_cells: usize,
    epoch: StdInstant,
    /// Cells that left the line and the inner link has not taken yet, from `due_from`.
    due: Vec<Cell>,
    due_from: usize,
}

impl<L: CellLink> Emulated<L> {
    /// `inner` behind a line configured by `config` (rate, queue, impairments and seed),
    /// idle from now.
    pub fn new(inner: L, config: &Config) -> Emulated<L> {
        let line = config.rate.exact().map(|(num, den)| Line {
            num: u128::from(num),
            slot: u128::from(den) * 1_000_000_000,
            free_at: 0,
            queue: u128::from(config.queue_cells),
        });
        Emulated {
            inner,
            netem: Netem::new(config),
            line,
            in_flight_cells: config.in_flight_cells.max(1) as usize,
            epoch: StdInstant::now(),
            due: Vec::new(),
            due_from: 0,
        }
    }

    /// The emulator's clock: time since it was made, as natm's `Instant`.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    fn to_std(&self, t: Instant) -> StdInstant {
        self.epoch + Duration::from_nanos(t.as_nanos())
    }

    /// The inner link.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// The inner link, mutably (sending on it directly bypasses the emulator).
    pub fn inner_mut(&mut self) -> &mut L {
        &mut self.inner
    }

    /// The inner link back; cells still inside the emulator are dropped.
    pub fn into_inner(self) -> L {
        self.inner
    }

    /// The emulator's counters (offered, lost, corrupted, delayed, delivered …). The
    /// inner link's are [`CellLink::counters`].
    pub fn emulator_counters(&self) -> Counters {
        self.netem.counters()
    }

    /// Cells inside: on the line, delayed, or due and not yet taken by the inner link.
    pub fn in_flight(&self) -> usize {
        self.netem.in_flight() + (self.due.len() - self.due_from)
    }

    /// When the next cell is due (now, if a due cell waits for the inner link), for a
    /// caller that sleeps in its own poll loop.
    pub fn poll_timeout(&self) -> Option<StdInstant> {
        if self.due_from < self.due.len() {
            return Some(StdInstant::now());
        }
        self.netem.poll_timeout().map(|t| self.to_std(t))
    }

    /// Hands the inner link every cell due by now; returns how many cells are still
    /// inside. A sender with nothing more to send calls this (or [`Emulated::finish`])
    /// until it returns 0.
    pub fn poll(&mut self) -> io::Result<usize> {
        let now = self.now();
        self.flush(now)?;
        Ok(self.in_flight())
    }

    /// Polls until nothing is inside, sleeping until each next departure (and waiting for
    /// the inner link's room); `false` if `timeout` passed first.
    pub fn finish(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        let deadline = timeout.map(|t| StdInstant::now() + t);
        loop {
            if self.poll()? == 0 {
                return Ok(true);
            }
            let left = deadline.map(|d| d.saturating_duration_since(StdInstant::now()));
            if left.is_some_and(|l| l.is_zero()) {
                return Ok(false);
            }
            self.sleep_until_due(left)?;
        }
    }

    /// Sleeps until the next departure or, while due cells wait, until the inner link
    /// may take them; at most `left`.
    fn sleep_until_due(&mut self, left: Option<Duration>) -> io::Result<()> {
        let cap = |d: Duration| left.map_or(d, |l| l.min(d));
        if self.due_from < self.due.len() {
            self.inner.wait_send(Some(cap(MAX_NAP)))?;
        } else if let Some(t) = self.netem.poll_timeout() {
            let d = self.to_std(t).saturating_duration_since(StdInstant::now());
            std::thread::sleep(cap(d));
        } else if let Some(l) = left {
            std::thread::sleep(l.min(MAX_NAP));
        }
        Ok(())
    }

    /// Moves the cells due by `now` out of the emulator and gives the inner link as many
    /// of them as it takes.
    fn flush(&mut self, now: Instant) -> io::Result<()> {
        if self.due_from == self.due.len() {
            self.due.clear();
            self.due_from = 0;
        }
        while let Some(t) = self.netem.poll_transmit(now) {
            self.due.push(t.cell);
        }
        while self.due_from < self.due.len() {
            let n = self.inner.send_cells(&self.due[self.due_from..])?;
            if n == 0 {
                break;
            }
            self.due_from += n;
        }
        Ok(())
    }

    fn has_room(&self, now: Instant) -> bool {
        self.in_flight() < self.in_flight_cells
            && self.line.as_ref().is_none_or(|l| l.has_room(now))
    }
}

/// The longest single sleep while waiting on something with no known instant.
const MAX_NAP: Duration = Duration::from_millis(1);

impl<L: CellLink> CellLink for Emulated<L> {
    fn send_cells(&mut self, cells: &[Cell]) -> io::Result<usize> {
        let now = self.now();
        self.flush(now)?;
        let mut taken = 0;
        for cell in cells {
            if !self.has_room(now) {
                break;
            }
            if let Some(line) = &mut self.line {
                line.take(now);
            }
            self.netem.handle_cell(now, *cell);
            taken += 1;
        }
        if taken > 0 {
            // At an unlimited rate without delay the cells are due already.
            self.flush(now)?;
        }
        Ok(taken)
    }

    fn recv_cells(&mut self, buf: &mut [Cell]) -> io::Result<usize> {
        let now = self.now();
        self.flush(now)?;
        self.inner.recv_cells(buf)
    }

    fn wait_recv(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        let deadline = timeout.map(|t| StdInstant::now() + t);
        loop {
            let now = self.now();
            self.flush(now)?;
            let left = deadline.map(|d| d.saturating_duration_since(StdInstant::now()));
            // Wake for the next departure too, to hand it on.
            let next = self.poll_timeout().map(|t| {
                t.saturating_duration_since(StdInstant::now())
                    .max(Duration::from_micros(1))
            });
            let slice = match (left, next) {
                (Some(l), Some(n)) => Some(l.min(n)),
                (l, None) => l,
                (None, n) => n,
            };
            if self.inner.wait_recv(slice)? {
                return Ok(true);
            }
            if left.is_some_and(|l| l <= slice.unwrap_or(l)) {
                return Ok(false);
            }
        }
    }

    fn wait_send(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        let deadline = timeout.map(|t| StdInstant::now() + t);
        loop {
            let now = self.now();
            self.flush(now)?;
            if self.has_room(now) {
                return Ok(true);
            }
            let left = deadline.map(|d| d.saturating_duration_since(StdInstant::now()));
            if left.is_some_and(|l| l.is_zero()) {
                return Ok(false);
            }
            let line_full = self.line.as_ref().is_some_and(|l| !l.has_room(now));
            if line_full && self.in_flight() < self.in_flight_cells {
                // Only the line holds us back: sleep until it frees a slot, or until the
                // next departure if that is sooner (to hand it on).
                let room = self.line.as_ref().map(|l| self.to_std(l.room_at()));
                let next = self.poll_timeout();
                let wake = match (room, next) {
                    (Some(r), Some(n)) => r.min(n),
                    (r, n) => r.or(n).unwrap_or_else(StdInstant::now),
                };
                let d = wake.saturating_duration_since(StdInstant::now());
                std::thread::sleep(left.map_or(d, |l| l.min(d)));
            } else {
                self.sleep_until_due(left)?;
            }
        }
    }

    fn poll_fd(&self) -> Option<BorrowedFd<'_>> {
        self.inner.poll_fd()
    }

    fn counters(&self) -> LinkCounters {
        self.inner.counters()
    }
}

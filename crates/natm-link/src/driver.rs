//! [`Driver`]: one adapter model between one application channel and one link; its link
//! half, [`LinkSide`], also serves an adapter whose buffers are in the caller's own memory.
//!
//! Data flow of one [`Driver::poll`] (each step moves what it can *now* and never waits):
//!
//! ```text
//!  application ── AppEnd ══ channel region ══ AdapterEnd ─┐
//!     tx descriptors, free rx buffers  ──────────────────►│ post_tx / post_rx_buffer
//!                                                          │
//!  link.recv_cells ──────────────────────────────────────►│ Adapter::handle_cells
//!                                  (payloads written into posted buffers in the region)
//!  link.send_cells ◄──────────────────────────────────────│ Adapter::poll_transmit
//!                                  (cells segmented straight from the region's buffers)
//!  completions ◄──────────────────────────────────────────┘ poll_completion
//! ```
//!
//! The driver holds the only copy of a batch the link refused (it sends it first next
//! time, before asking the adapter for more), and of a completion the completion ring had no
//! room for, so nothing the adapter produced is lost when the link or the application
//! falls behind. Descriptors the application got wrong (out of bounds, a buffer the adapter
//! holds) are refused by the channel, counted in [`DriverCounters::refused`], and skipped.
//!
//! What it is not: it does not wait (callers loop on `poll`, or sleep on the link's
//! `poll_fd` and the channel's notification), has no threads, and opens no VCs (the
//! caller does, on [`Driver::adapter_mut`]). The time base is a `std::time::Instant` taken
//! when the driver is made, given to the adapter as a `natm_core::Instant`.

use std::collections::VecDeque;
use std::io;
use std::time::Instant as StdInstant;

use crate::clock::Epoch;
use crate::{CellBytes, CellLink};
use natm_adapter::{Adapter, BufferId, BufferMemory, Completion, Direction, MemoryError, Status};
use natm_core::Instant;
use natm_nic::RingFault;
use natm_nic::channel::{self as nic, AdapterEnd, ChannelError, PollError, TxRequest};
use natm_wire::cell::Cell as WireCell;

/// Cells moved per link call.
pub const BATCH: usize = 64;

/// The status codes a completion carries in the channel (0 is success), one per
/// [`Status`]; an application reads them with [`status_from_code`].
pub fn status_code(status: Status) -> u16 {
    match status {
        Status::Ok => 0,
        Status::Aborted => 1,
        Status::UnknownVc => 2,
        Status::BadLength => 3,
        Status::QueueFull => 4,
        Status::UnknownBuffer => 5,
        Status::NotOwned => 6,
        Status::MemoryFault => 7,
    }
}

/// The [`Status`] of a channel completion's status code, if it is one.
pub fn status_from_code(code: u16) -> Option<Status> {
    Some(match code {
        0 => Status::Ok,
        1 => Status::Aborted,
        2 => Status::UnknownVc,
        3 => Status::BadLength,
        4 => Status::QueueFull,
        5 => Status::UnknownBuffer,
        6 => Status::NotOwned,
        7 => Status::MemoryFault,
        _ => return None,
    })
}

/// Takes everything the application posted in its channel: each transmit descriptor goes
/// to `tx`, each free receive buffer to the adapter; a post the channel refuses goes to
/// `refused` (with its direction) and is skipped. Stops at a broken ring. Returns how many
/// posts were taken. Shared by [`Driver`] and hostd's direct-path channels.
pub fn take_posts(
    end: &mut AdapterEnd,
    adapter: &mut Adapter,
    mut tx: impl FnMut(&mut Adapter, TxRequest),
    mut refused: impl FnMut(Direction),
) -> Result<usize, RingFault> {
    let mut posted = 0;
    loop {
        match end.poll_tx() {
            Ok(Some(req)) => {
                tx(adapter, req);
                posted += 1;
            }
            Ok(None) => break,
            Err(PollError::Refused(_)) => refused(Direction::Tx),
            Err(PollError::Fault(f)) => return Err(f),
        }
    }
    loop {
        match end.poll_rx_buffer() {
            Ok(Some(id)) => {
                adapter.post_rx_buffer(BufferId(id.0));
                posted += 1;
            }
            Ok(None) => return Ok(posted),
            Err(PollError::Refused(_)) => refused(Direction::Rx),
            Err(PollError::Fault(f)) => return Err(f),
        }
    }
}

/// Hands an adapter completion to the channel with status `code` (a receive one with its
/// length and handle). Shared by [`Driver`] and hostd's direct-path channels.
pub fn complete_to_channel(
    end: &mut AdapterEnd,
    c: &Completion,
    code: u16,
) -> Result<(), ChannelError> {
    let id = nic::BufferId(c.buffer.0);
    match c.direction {
        Direction::Tx => end.complete_tx(id, code),
        Direction::Rx => end.complete_rx(id, c.len as u32, c.handle.unwrap_or(u32::MAX), code),
    }
}

/// What the driver itself counts (the adapter and the link count the rest).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriverCounters {
    /// Calls to [`Driver::poll`].
    pub polls: u64,
    /// Descriptors the channel refused (the application's mistakes), skipped.
    pub refused: u64,
    /// Times the link took fewer cells than offered.
    pub link_full: u64,
    /// Times the completion ring was full and a completion waited in the driver.
    pub completions_deferred: u64,
    /// Completions the channel refused (a buffer it does not think the adapter holds): a
    /// disagreement between the two ownership books, which should never happen.
    pub completions_refused: u64,
}

/// What a call to [`Driver::poll`] moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Descriptors and free buffers taken from the channel.
    pub posted: usize,
    /// Cells received from the link.
    pub cells_in: usize,
    /// Cells handed to the link.
    pub cells_out: usize,
    /// Completions posted to the channel.
    pub completed: usize,
}

impl Progress {
    /// Whether anything moved.
    pub fn any(&self) -> bool {
        self.posted + self.cells_in + self.cells_out + self.completed > 0
    }
}

/// Why the driver stopped.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The application broke a ring of the channel (its indices make no sense).
    #[error("channel: {0}")]
    Channel(#[from] natm_nic::RingFault),
    /// The link failed.
    #[error("link: {0}")]
    Link(#[from] io::Error),
}

/// The channel's buffers as the adapter sees them: reads and writes go through the
/// channel's ownership checks, so the adapter can only touch what the channel handed it.
pub struct ChannelMemory<'a>(pub &'a mut AdapterEnd);

fn memory_error(
    id: BufferId,
    offset: usize,
    len: usize,
    size: usize,
) -> impl Fn(ChannelError) -> MemoryError {
    move |e| match e {
        ChannelError::NoSuchBuffer(_) => MemoryError::UnknownBuffer(id),
        ChannelError::TooLong { .. } => MemoryError::OutOfBounds {
            id,
            offset,
            len,
            size,
        },
        _ => MemoryError::Refused(id),
    }
}

impl BufferMemory for ChannelMemory<'_> {
    fn read(&self, id: BufferId, offset: usize, out: &mut [u8]) -> Result<(), MemoryError> {
        let size = self.0.buffer_size();
        self.0
            .read_buffer_at(nic::BufferId(id.0), offset, out)
            .map_err(memory_error(id, offset, out.len(), size))
    }

    fn write(&mut self, id: BufferId, offset: usize, data: &[u8]) -> Result<(), MemoryError> {
        let size = self.0.buffer_size();
        self.0
            .write_buffer_at(nic::BufferId(id.0), offset, data)
            .map_err(memory_error(id, offset, data.len(), size))
    }
}

/// The link side of an adapter: a link and the batches that move cells between it and an
/// [`Adapter`], with the one copy of a batch the link refused. [`Driver`] runs one between a
/// channel and its link; an application that keeps its buffers in its own memory (the
/// lane path of the `natm` crate) runs one over those buffers, with no channel between.
pub struct LinkSide<L> {
    link: L,
    /// Cells from the adapter the link has not taken yet: `out[sent..filled]`.
    out: Box<[CellBytes; BATCH]>,
    sent: usize,
    filled: usize,
    /// Cells from the link the adapter has not been given yet: `inbox[taken..got]`.
    inbox: Box<[CellBytes; BATCH]>,
    taken: usize,
    got: usize,
    /// The next cell given to the adapter begins an SDU (the last one ended one).
    at_sdu_start: bool,
    /// Times the link took fewer cells than offered.
    link_full: u64,
}

impl<L: CellLink> LinkSide<L> {
    /// The link side of `link`.
    pub fn new(link: L) -> LinkSide<L> {
        LinkSide {
            link,
            out: Box::new([[0; 53]; BATCH]),
            sent: 0,
            filled: 0,
            inbox: Box::new([[0; 53]; BATCH]),
            taken: 0,
            got: 0,
            at_sdu_start: true,
            link_full: 0,
        }
    }

    /// The link.
    pub fn link(&self) -> &L {
        &self.link
    }

    /// The link, to wait on it or flush it.
    pub fn link_mut(&mut self) -> &mut L {
        &mut self.link
    }

    /// Cells that wait here for the link to take them.
    pub fn backlog(&self) -> usize {
        self.filled - self.sent
    }

    /// Times the link took fewer cells than offered.
    pub fn link_full(&self) -> u64 {
        self.link_full
    }

    /// Gives the adapter one batch of cells from the link (it writes payloads into `mem`);
    /// how many cells.
    pub fn receive<M: BufferMemory + ?Sized>(
        &mut self,
        adapter: &mut Adapter,
        now: Instant,
        mem: &mut M,
    ) -> io::Result<usize> {
        self.receive_sdus(adapter, now, mem, usize::MAX)
    }

    /// Like [`LinkSide::receive`], but gives the adapter only cells of the next `starts`
    /// SDUs to begin (the one under way, if any, is not counted); the rest wait here for
    /// the next call, and none is taken from the link while some wait. With `starts` the
    /// adapter's free receive buffers and one VC on the link, no SDU is dropped for want of
    /// a buffer: each SDU begun takes one, and the one under way already has its own. A
    /// side read this way must be read only this way (it follows where SDUs begin).
    pub fn receive_sdus<M: BufferMemory + ?Sized>(
        &mut self,
        adapter: &mut Adapter,
        now: Instant,
        mem: &mut M,
        starts: usize,
    ) -> io::Result<usize> {
        if self.taken == self.got {
            if starts == 0 && self.at_sdu_start {
                return Ok(0);
            }
            self.got = self.link.recv_cells(&mut self.inbox[..])?;
            self.taken = 0;
        }
        let from = self.taken;
        let to = if starts == usize::MAX {
            self.got
        } else {
            let mut begun = 0;
            let mut to = from;
            while to < self.got {
                if self.at_sdu_start {
                    if begun == starts {
                        break;
                    }
                    begun += 1;
                }
                let cell = WireCell::new_unchecked(&self.inbox[to]);
                self.at_sdu_start = cell.pti().is_end_of_frame();
                to += 1;
            }
            to
        };
        if to > from {
            adapter.handle_cells(now, &self.inbox[from..to], mem);
        }
        self.taken = to;
        Ok(to - from)
    }

    /// Hands the link what the adapter has to send now (segmented from `mem`), until the
    /// adapter has nothing or the link is full; how many cells the link took.
    pub fn transmit<M: BufferMemory + ?Sized>(
        &mut self,
        adapter: &mut Adapter,
        now: Instant,
        mem: &M,
    ) -> io::Result<usize> {
        let mut out = 0;
        loop {
            if self.sent == self.filled {
                self.filled = adapter.poll_transmit(now, mem, &mut self.out[..]);
                self.sent = 0;
                if self.filled == 0 {
                    return Ok(out);
                }
            }
            let n = self.link.send_cells(&self.out[self.sent..self.filled])?;
            self.sent += n;
            out += n;
            if self.sent < self.filled {
                self.link_full += 1;
                return Ok(out);
            }
        }
    }
}

/// An adapter model driven between a channel and a link. See the [module
/// documentation](self).
pub struct Driver<L> {
    adapter: Adapter,
    end: AdapterEnd,
    side: LinkSide<L>,
    epoch: Epoch,
    deferred: VecDeque<Completion>,
    counters: DriverCounters,
}

impl<L: CellLink> Driver<L> {
    /// Drives `adapter` between the adapter end of a channel and `link`. The adapter's
    /// buffer ids are the channel's (configure it with the channel's buffer count and
    /// size).
    pub fn new(adapter: Adapter, end: AdapterEnd, link: L) -> Driver<L> {
        Driver {
            adapter,
            end,
            side: LinkSide::new(link),
            epoch: Epoch::now(),
            deferred: VecDeque::new(),
            counters: DriverCounters::default(),
        }
    }

    /// The adapter (VCs, counters).
    pub fn adapter(&self) -> &Adapter {
        &self.adapter
    }

    /// The adapter, to open and close VCs.
    pub fn adapter_mut(&mut self) -> &mut Adapter {
        &mut self.adapter
    }

    /// The link.
    pub fn link(&self) -> &L {
        self.side.link()
    }

    /// The link, to wait on it or flush it.
    pub fn link_mut(&mut self) -> &mut L {
        self.side.link_mut()
    }

    /// The driver's own counters.
    pub fn counters(&self) -> DriverCounters {
        DriverCounters {
            link_full: self.side.link_full(),
            ..self.counters
        }
    }

    /// The adapter's clock: time since the driver was made.
    pub fn now(&self) -> Instant {
        self.epoch.elapsed()
    }

    /// When the adapter next needs [`Driver::poll`] although nothing arrives (a reassembly
    /// timeout, a shaped VC's next cell), as a real instant.
    pub fn poll_timeout(&self) -> Option<StdInstant> {
        self.adapter.poll_timeout().map(|t| self.epoch.to_std(t))
    }

    /// Whether cells wait in the driver for the link to take them.
    pub fn link_backlog(&self) -> usize {
        self.side.backlog()
    }

    /// Moves everything that can move now, in the order of the module documentation.
    pub fn poll(&mut self) -> Result<Progress, DriverError> {
        self.counters.polls += 1;
        let mut progress = Progress::default();
        let now = self.now();
        if self.adapter.poll_timeout().is_some_and(|t| t <= now) {
            self.adapter.handle_timeout(now);
        }
        progress.posted = self.take_posts(now)?;
        let mut mem = ChannelMemory(&mut self.end);
        progress.cells_in = self.side.receive(&mut self.adapter, now, &mut mem)?;
        progress.cells_out = self.side.transmit(&mut self.adapter, now, &mem)?;
        progress.completed = self.complete()?;
        Ok(progress)
    }

    fn take_posts(&mut self, now: Instant) -> Result<usize, DriverError> {
        let refused = &mut self.counters.refused;
        Ok(take_posts(
            &mut self.end,
            &mut self.adapter,
            |adapter, req| {
                adapter.post_tx(now, BufferId(req.buffer.0), req.len as usize, req.handle)
            },
            |_| *refused += 1,
        )?)
    }

    fn complete(&mut self) -> Result<usize, DriverError> {
        let mut done = 0;
        loop {
            let Some(c) = self
                .deferred
                .pop_front()
                .or_else(|| self.adapter.poll_completion())
            else {
                return Ok(done);
            };
            match complete_to_channel(&mut self.end, &c, status_code(c.status)) {
                Ok(()) => done += 1,
                Err(ChannelError::Full) => {
                    self.counters.completions_deferred += 1;
                    self.deferred.push_front(c);
                    return Ok(done);
                }
                Err(ChannelError::Fault(f)) => {
                    // Kept: the caller sees the broken ring and decides what to do.
                    self.deferred.push_front(c);
                    return Err(f.into());
                }
                // Refusals of a post (unknown or already-held buffer) hand nothing back; the
                // channel has no record of holding them either.
                Err(_) => self.counters.completions_refused += 1,
            }
        }
    }
}

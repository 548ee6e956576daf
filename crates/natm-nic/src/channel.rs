//! An application's channel to the adapter: transmit descriptors, free receive buffers,
//! completions, counters and buffers in one region.
//!
//! Buffer ownership: every buffer starts owned by the application. Posting it for
//! transmission or as a free receive buffer hands it to the adapter; its completion hands
//! it back. Each side tracks ownership in its own private memory, never in the region, and
//! refuses (and counts) a descriptor from the peer that points outside the buffer area,
//! not at the start of a buffer, past the end of its buffer, or at a buffer the peer does
//! not hold. Only a buffer a side owns can be read or written through its end.
//!
//! Channel state: the word at [`STATE_OFFSET`] in the header says whether the side that
//! services the channel still does ([`ChannelState`]). The adapter side sets it with
//! [`AdapterEnd::set_state`], which also wakes a sleeping application, so an application
//! blocked on a channel that was revoked, or whose link went down, sees it at once
//! instead of waiting for a completion that will not come.
//!
//! Zero copy: [`AppEnd::buffer`] and [`AppEnd::buffer_mut`] give the application a plain
//! byte view of a buffer it owns. Unlike the rest of this module they rely on the peer
//! keeping the ownership protocol (never writing a buffer the application owns): the
//! application trusts the daemon that created its channel; the daemon never hands out such
//! views of memory the application can write.

use core::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::layout::{BufferGeom, Layout, LayoutError, Le16, Le32, RegionKind, STATE_OFFSET};
use crate::notify::{Wakeable, Waker};
use crate::ring::{Consumer, Producer, RingFault, RingRef};
use crate::shm::{Region, load_le, read_bytes, store_le, write_bytes};

/// A descriptor as it lies in a ring slot: 16 bytes, little-endian.
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct RawDescriptor {
    /// Byte offset of the buffer from the start of the buffer area.
    pub offset: Le32,
    /// Bytes of data in it.
    pub len: Le32,
    /// The VC handle the data belongs to.
    pub handle: Le32,
    /// [`Descriptor::flags`].
    pub flags: Le16,
    /// [`Descriptor::status`].
    pub status: Le16,
}

const _: () = assert!(size_of::<RawDescriptor>() == 16);

/// A descriptor, decoded.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Descriptor {
    /// Byte offset of the buffer in the buffer area.
    pub offset: u32,
    /// Data length.
    pub len: u32,
    /// VC handle.
    pub handle: u32,
    /// Flags: [`Descriptor::FLAG_RX`] on receive completions; the rest are the
    /// application's (e.g. end of SDU).
    pub flags: u16,
    /// Completion status (0 ok); zero in requests.
    pub status: u16,
}

impl Descriptor {
    /// On a completion: a filled receive buffer (clear: a transmitted one).
    pub const FLAG_RX: u16 = 1 << 15;

    /// The slot's bytes.
    pub fn to_raw(&self) -> RawDescriptor {
        RawDescriptor {
            offset: Le32::new(self.offset),
            len: Le32::new(self.len),
            handle: Le32::new(self.handle),
            flags: Le16::new(self.flags),
            status: Le16::new(self.status),
        }
    }

    /// From the slot's bytes.
    pub fn from_raw(r: &RawDescriptor) -> Self {
        Descriptor {
            offset: r.offset.get(),
            len: r.len.get(),
            handle: r.handle.get(),
            flags: r.flags.get(),
            status: r.status.get(),
        }
    }

    fn to_bytes(self) -> [u8; 16] {
        let r = self.to_raw();
        let mut b = [0u8; 16];
        b[offset_of!(RawDescriptor, offset)..][..4].copy_from_slice(&r.offset.0);
        b[offset_of!(RawDescriptor, len)..][..4].copy_from_slice(&r.len.0);
        b[offset_of!(RawDescriptor, handle)..][..4].copy_from_slice(&r.handle.0);
        b[offset_of!(RawDescriptor, flags)..][..2].copy_from_slice(&r.flags.0);
        b[offset_of!(RawDescriptor, status)..][..2].copy_from_slice(&r.status.0);
        b
    }

    fn from_bytes(b: &[u8; 16]) -> Self {
        let f4 = |o: usize| Le32([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let f2 = |o: usize| Le16([b[o], b[o + 1]]);
        Self::from_raw(&RawDescriptor {
            offset: f4(offset_of!(RawDescriptor, offset)),
            len: f4(offset_of!(RawDescriptor, len)),
            handle: f4(offset_of!(RawDescriptor, handle)),
            flags: f2(offset_of!(RawDescriptor, flags)),
            status: f2(offset_of!(RawDescriptor, status)),
        })
    }

    fn store(self, slot: &[AtomicU64]) {
        write_bytes(slot, &self.to_bytes());
    }

    fn load(slot: &[AtomicU64]) -> Self {
        let mut b = [0u8; 16];
        read_bytes(slot, &mut b);
        Self::from_bytes(&b)
    }
}

/// The channel's counters, in the region (u64, little-endian). Each has one writer: the
/// side named in its doc. They are statistics for tools; no decision reads them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Counter {
    /// App: transmit descriptors posted.
    TxPosted,
    /// App: free receive buffers posted.
    RxPosted,
    /// App: completions taken.
    CompletionsTaken,
    /// App: completions refused (bad buffer, or one the adapter did not hold).
    AppRefused,
    /// Adapter: transmit descriptors taken.
    TxTaken,
    /// Adapter: receive buffers taken.
    RxTaken,
    /// Adapter: completions posted.
    Completed,
    /// Adapter: descriptors pointing outside the buffer area or past their buffer.
    RefusedOutOfBounds,
    /// Adapter: descriptors not at the start of a buffer.
    RefusedMisaligned,
    /// Adapter: descriptors for a buffer the adapter already holds.
    RefusedNotOwned,
}

impl Counter {
    /// Every counter, in region order.
    pub const ALL: [Counter; 10] = [
        Counter::TxPosted,
        Counter::RxPosted,
        Counter::CompletionsTaken,
        Counter::AppRefused,
        Counter::TxTaken,
        Counter::RxTaken,
        Counter::Completed,
        Counter::RefusedOutOfBounds,
        Counter::RefusedMisaligned,
        Counter::RefusedNotOwned,
    ];
}

/// Whether the side that services a channel still does (the header's state word).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ChannelState {
    /// Serviced (0, also what regions made before the state word hold).
    Live,
    /// Serviced, but the link behind it is down: transmissions fail until it is back.
    LinkDown,
    /// Never serviced again (closed, or its owner is gone).
    Revoked,
    /// A value this crate does not know: treat as revoked.
    Unknown(u64),
}

impl ChannelState {
    /// The word's value.
    pub const fn code(self) -> u64 {
        match self {
            ChannelState::Live => 0,
            ChannelState::LinkDown => 1,
            ChannelState::Revoked => 2,
            ChannelState::Unknown(n) => n,
        }
    }

    /// The state of a word's value.
    pub const fn from_code(n: u64) -> ChannelState {
        match n {
            0 => ChannelState::Live,
            1 => ChannelState::LinkDown,
            2 => ChannelState::Revoked,
            n => ChannelState::Unknown(n),
        }
    }
}

/// Index of a buffer in the buffer area.
#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord, Hash)]
pub struct BufferId(pub u32);

/// Why a descriptor from the peer was refused.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum Refusal {
    /// Outside the buffer area, or longer than a buffer.
    #[error("descriptor outside the buffer area")]
    OutOfBounds,
    /// Not at the start of a buffer.
    #[error("descriptor not at the start of a buffer")]
    Misaligned,
    /// For a buffer the peer does not own.
    #[error("descriptor for a buffer the peer does not own")]
    NotOwned,
}

/// Why a local operation failed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum ChannelError {
    /// No such buffer.
    #[error("no buffer {0:?}")]
    NoSuchBuffer(BufferId),
    /// This side does not own the buffer now.
    #[error("buffer {0:?} is not ours")]
    NotOurs(BufferId),
    /// More bytes than a buffer holds.
    #[error("{len} bytes do not fit a {size}-byte buffer")]
    TooLong {
        /// Asked.
        len: usize,
        /// Buffer size.
        size: u32,
    },
    /// A buffer offset that is not a multiple of 8.
    #[error("buffer offset {offset} is not a multiple of 8")]
    Unaligned {
        /// Asked.
        offset: usize,
    },
    /// The ring is full.
    #[error("ring full")]
    Full,
    /// The peer broke a ring.
    #[error(transparent)]
    Fault(#[from] RingFault),
}

/// A channel region, validated.
#[derive(Clone)]
pub struct Channel {
    mem: Region,
    layout: Layout,
    /// `layout.buffers`, unwrapped.
    buffers: BufferGeom,
    /// Word index of the first counter.
    counters: usize,
}

/// Sizes of a new channel.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ChannelConfig {
    /// Transmit ring entries (a power of two).
    pub tx_entries: u32,
    /// Free-receive-buffer ring entries.
    pub rx_entries: u32,
    /// Completion ring entries (at least tx + rx, so completions never wait).
    pub completion_entries: u32,
    /// Bytes per buffer (a multiple of 64).
    pub buffer_size: u32,
    /// Buffers.
    pub buffer_count: u32,
}

impl ChannelConfig {
    /// The layout of a channel of this shape.
    pub fn layout(&self) -> Result<Layout, LayoutError> {
        Layout::channel(
            self.tx_entries,
            self.rx_entries,
            self.completion_entries,
            self.buffer_size,
            self.buffer_count,
        )
    }
}

impl Channel {
    /// Lays out a fresh region (exactly `config.layout()?.region_size` bytes), zeroes it and
    /// writes the header.
    pub fn create(mem: Region, config: &ChannelConfig) -> Result<Self, LayoutError> {
        let layout = config.layout()?;
        if mem.len_bytes() != layout.region_size {
            return Err(LayoutError::SizeMismatch {
                header: layout.region_size as u64,
                mapped: mem.len_bytes(),
            });
        }
        layout.init_region(&*mem);
        Ok(Channel::new(mem, layout))
    }

    /// Opens a region the other side created, validating its header.
    pub fn open(mem: Region) -> Result<Self, LayoutError> {
        let layout = Layout::load(&*mem, RegionKind::Channel)?;
        Ok(Channel::new(mem, layout))
    }

    /// Takes the parts every operation needs out of the validated layout, once.
    fn new(mem: Region, layout: Layout) -> Self {
        let (counters_offset, _) = layout.counters.expect("a validated channel has counters");
        Channel {
            buffers: layout.buffers.expect("a validated channel has buffers"),
            counters: counters_offset / 8,
            mem,
            layout,
        }
    }

    /// The validated layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The region.
    pub fn region(&self) -> Region {
        self.mem.clone()
    }

    fn ring(&self, i: usize) -> RingRef {
        RingRef::new(
            self.mem.clone(),
            &self.layout.rings[i].expect("a validated channel has three rings"),
        )
    }

    fn counter_word(&self, c: Counter) -> &AtomicU64 {
        &self.mem.words()[self.counters + c as usize]
    }

    fn state_word(&self) -> &AtomicU64 {
        &self.mem.words()[STATE_OFFSET / 8]
    }

    /// The channel's state word (Acquire).
    pub fn state(&self) -> ChannelState {
        ChannelState::from_code(load_le(self.state_word(), Ordering::Acquire))
    }

    /// Reads a counter.
    pub fn counter(&self, c: Counter) -> u64 {
        load_le(self.counter_word(c), Ordering::Relaxed)
    }

    /// The application's end.
    pub fn app(&self) -> Result<AppEnd, RingFault> {
        Ok(AppEnd {
            tx: Producer::attach(self.ring(0))?,
            rx: Producer::attach(self.ring(1))?,
            completions: Consumer::attach(self.ring(2))?,
            held_by_adapter: vec![false; self.buffers.count as usize],
            ch: self.clone(),
            waker: Waker::None,
        })
    }

    /// The adapter's end.
    pub fn adapter(&self) -> Result<AdapterEnd, RingFault> {
        Ok(AdapterEnd {
            tx: Consumer::attach(self.ring(0))?,
            rx: Consumer::attach(self.ring(1))?,
            completions: Producer::attach(self.ring(2))?,
            held: vec![None; self.buffers.count as usize],
            ch: self.clone(),
            waker: Waker::None,
        })
    }

    fn bump(&self, c: Counter) {
        let w = self.counter_word(c);
        // One writer per counter (see Counter), so load + store does not lose counts.
        store_le(
            w,
            load_le(w, Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
    }

    fn buffer_words(&self, id: BufferId) -> &[AtomicU64] {
        let g = self.buffers;
        let start = (g.offset + id.0 as usize * g.size as usize) / 8;
        &self.mem.words()[start..start + g.size as usize / 8]
    }

    /// Checks a descriptor against the buffer area (not ownership).
    fn locate(&self, d: &Descriptor) -> Result<BufferId, Refusal> {
        let g = self.buffers;
        let index = d.offset / g.size;
        if index >= g.count || d.len > g.size {
            return Err(Refusal::OutOfBounds);
        }
        if !d.offset.is_multiple_of(g.size) {
            return Err(Refusal::Misaligned);
        }
        Ok(BufferId(index))
    }

    fn check_local(&self, id: BufferId, len: usize) -> Result<(), ChannelError> {
        let g = self.buffers;
        if id.0 >= g.count {
            return Err(ChannelError::NoSuchBuffer(id));
        }
        if len > g.size as usize {
            return Err(ChannelError::TooLong { len, size: g.size });
        }
        Ok(())
    }
}

/// The end of `len` bytes from `offset`, if `offset` is word aligned.
fn checked_range(offset: usize, len: usize) -> Result<usize, ChannelError> {
    if !offset.is_multiple_of(8) {
        return Err(ChannelError::Unaligned { offset });
    }
    // A sum past usize::MAX is past every buffer: check_held refuses it as too long.
    Ok(offset.saturating_add(len))
}

/// Publishes one descriptor: [`ChannelError::Full`], or the ring's fault, when it cannot.
fn push_descriptor(ring: &mut Producer, d: Descriptor) -> Result<(), ChannelError> {
    if ring.push_with(1, |_, s| d.store(s)) == 0 {
        return Err(ring.fault().map_or(ChannelError::Full, ChannelError::Fault));
    }
    Ok(())
}

/// Takes one descriptor: `Ok(None)` when the ring is empty, the fault when it is broken.
fn pop_descriptor(ring: &mut Consumer) -> Result<Option<Descriptor>, PollError> {
    let mut d = None;
    ring.pop_with(1, |_, s| d = Some(Descriptor::load(s)));
    match (d, ring.fault()) {
        (None, Some(f)) => Err(PollError::Fault(f)),
        (d, _) => Ok(d),
    }
}

/// A completion handed back to the application.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Completion {
    /// The buffer, owned by the application again.
    pub buffer: BufferId,
    /// Bytes received (receive) or sent (transmit).
    pub len: u32,
    /// VC handle.
    pub handle: u32,
    /// Received data (true) or a finished transmission.
    pub rx: bool,
    /// Status from the adapter (0 ok).
    pub status: u16,
}

/// The application's end: posts transmit descriptors and free receive buffers, takes
/// completions.
pub struct AppEnd {
    ch: Channel,
    tx: Producer,
    rx: Producer,
    completions: Consumer,
    held_by_adapter: Vec<bool>,
    waker: Waker,
}

impl AppEnd {
    /// `id` names a buffer of at least `len` bytes that the application holds now.
    fn check_owned(&self, id: BufferId, len: usize) -> Result<(), ChannelError> {
        self.ch.check_local(id, len)?;
        if self.held_by_adapter[id.0 as usize] {
            return Err(ChannelError::NotOurs(id));
        }
        Ok(())
    }

    /// Writes `data` at the start of an application-owned buffer.
    pub fn write_buffer(&mut self, id: BufferId, data: &[u8]) -> Result<(), ChannelError> {
        self.check_owned(id, data.len())?;
        write_bytes(self.ch.buffer_words(id), data);
        Ok(())
    }

    /// Reads the first `out.len()` bytes of an application-owned buffer.
    pub fn read_buffer(&self, id: BufferId, out: &mut [u8]) -> Result<(), ChannelError> {
        self.check_owned(id, out.len())?;
        read_bytes(self.ch.buffer_words(id), out);
        Ok(())
    }

    /// The first `len` bytes of an application-owned buffer, in place (zero copy). See
    /// the module doc for what this trusts the peer with.
    pub fn buffer(&self, id: BufferId, len: usize) -> Result<&[u8], ChannelError> {
        self.check_owned(id, len)?;
        let words = self.ch.buffer_words(id);
        // SAFETY: `words` is this buffer's part of the live mapping (held by `self.ch`, so
        // it outlives the borrow of `self`), `len` is at most the buffer size (checked), and
        // u8 has no alignment or validity requirement. The application owns the buffer, so
        // by the channel's protocol the adapter side does not write it while the view lives;
        // this end only reads or writes it through `&mut self`, which the borrow excludes.
        Ok(unsafe { core::slice::from_raw_parts(words.as_ptr().cast::<u8>(), len) })
    }

    /// The first `len` bytes of an application-owned buffer, writable in place (zero copy).
    pub fn buffer_mut(&mut self, id: BufferId, len: usize) -> Result<&mut [u8], ChannelError> {
        self.check_owned(id, len)?;
        let words = self.ch.buffer_words(id);
        // SAFETY: as in `buffer`; `&mut self` makes this the only view this end hands out
        // while it lives, and AtomicU64 has interior mutability, so writing through the
        // pointer derived from the shared slice is allowed.
        Ok(unsafe { core::slice::from_raw_parts_mut(words.as_ptr().cast::<u8>().cast_mut(), len) })
    }

    /// The channel's state word.
    pub fn state(&self) -> ChannelState {
        self.ch.state()
    }

    /// Hands buffer `id` holding `len` bytes for `handle` to the adapter for transmission.
    pub fn post_tx(
        &mut self,
        id: BufferId,
        len: u32,
        handle: u32,
        flags: u16,
    ) -> Result<(), ChannelError> {
        self.check_owned(id, len as usize)?;
        let d = Descriptor {
            offset: id.0 * self.ch.buffers.size,
            len,
            handle,
            flags: flags & !Descriptor::FLAG_RX,
            status: 0,
        };
        push_descriptor(&mut self.tx, d)?;
        self.held_by_adapter[id.0 as usize] = true;
        self.ch.bump(Counter::TxPosted);
        self.waker.after_publish(self.tx.ring.waiting());
        Ok(())
    }

    /// Hands buffer `id` to the adapter as a free receive buffer.
    pub fn post_rx(&mut self, id: BufferId) -> Result<(), ChannelError> {
        self.check_owned(id, 0)?;
        let d = Descriptor {
            offset: id.0 * self.ch.buffers.size,
            len: self.ch.buffers.size,
            ..Descriptor::default()
        };
        push_descriptor(&mut self.rx, d)?;
        self.held_by_adapter[id.0 as usize] = true;
        self.ch.bump(Counter::RxPosted);
        Ok(())
    }

    /// Takes the next completion; `Ok(None)` when there is none. A completion for a buffer
    /// the adapter did not hold, or pointing anywhere but at a buffer, is counted
    /// ([`Counter::AppRefused`]), skipped and returned as the error of this call.
    pub fn poll_completion(&mut self) -> Result<Option<Completion>, PollError> {
        let Some(d) = pop_descriptor(&mut self.completions)? else {
            return Ok(None);
        };
        let id = match self.ch.locate(&d) {
            Ok(id) if self.held_by_adapter[id.0 as usize] => id,
            Ok(_) => return Err(self.refuse(Refusal::NotOwned)),
            Err(r) => return Err(self.refuse(r)),
        };
        self.held_by_adapter[id.0 as usize] = false;
        self.ch.bump(Counter::CompletionsTaken);
        Ok(Some(Completion {
            buffer: id,
            len: d.len,
            handle: d.handle,
            rx: d.flags & Descriptor::FLAG_RX != 0,
            status: d.status,
        }))
    }

    fn refuse(&self, r: Refusal) -> PollError {
        self.ch.bump(Counter::AppRefused);
        PollError::Refused(r)
    }

    /// Whether the adapter holds buffer `id` now.
    pub fn adapter_holds(&self, id: BufferId) -> bool {
        self.held_by_adapter
            .get(id.0 as usize)
            .copied()
            .unwrap_or(false)
    }

    /// How the adapter is woken after a transmit descriptor is posted.
    pub fn set_waker(&mut self, waker: Waker) {
        self.waker = waker;
    }

    /// The channel.
    pub fn channel(&self) -> &Channel {
        &self.ch
    }

    /// Staged but unpublished transmit descriptor: what an application killed between
    /// writing the slot and publishing the index leaves behind.
    #[cfg(test)]
    pub(crate) fn stage_tx(&mut self, d: Descriptor) {
        if self.tx.free(1) > 0 {
            self.tx.stage_with(1, &mut |_, s: &[AtomicU64]| d.store(s));
        }
    }
}

impl Wakeable for AppEnd {
    /// A completion, a broken ring, or a state other than live (so a sleeper wakes for
    /// a revocation or a link failure, not only for completions).
    fn ready(&mut self) -> bool {
        self.completions.available(1) > 0
            || self.completions.fault().is_some()
            || self.ch.state() != ChannelState::Live
    }

    fn waiting_flag(&self) -> &AtomicU64 {
        self.completions.ring.waiting()
    }
}

/// Why taking an entry from the peer failed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum PollError {
    /// The entry was refused and skipped; the next call takes the next one.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The peer broke the ring.
    #[error(transparent)]
    Fault(#[from] RingFault),
}

/// What the adapter holds a buffer for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Held {
    Tx { len: u32, handle: u32 },
    Rx,
}

/// A transmit request taken by the adapter.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TxRequest {
    /// The buffer, held by the adapter until [`AdapterEnd::complete_tx`].
    pub buffer: BufferId,
    /// Bytes to send.
    pub len: u32,
    /// VC handle.
    pub handle: u32,
    /// The application's flags.
    pub flags: u16,
}

/// The adapter's end: takes transmit descriptors and free buffers, posts completions.
pub struct AdapterEnd {
    ch: Channel,
    tx: Consumer,
    rx: Consumer,
    completions: Producer,
    held: Vec<Option<Held>>,
    waker: Waker,
}

impl AdapterEnd {
    fn take(&mut self, from_tx: bool) -> Result<Option<(BufferId, Descriptor)>, PollError> {
        let ring = if from_tx { &mut self.tx } else { &mut self.rx };
        let Some(d) = pop_descriptor(ring)? else {
            return Ok(None);
        };
        let refused = match self.ch.locate(&d) {
            Ok(id) if self.held[id.0 as usize].is_none() => return Ok(Some((id, d))),
            Ok(_) => Refusal::NotOwned,
            Err(r) => r,
        };
        self.ch.bump(match refused {
            Refusal::OutOfBounds => Counter::RefusedOutOfBounds,
            Refusal::Misaligned => Counter::RefusedMisaligned,
            Refusal::NotOwned => Counter::RefusedNotOwned,
        });
        Err(PollError::Refused(refused))
    }

    /// Takes the next transmit request; the adapter holds its buffer from now on.
    pub fn poll_tx(&mut self) -> Result<Option<TxRequest>, PollError> {
        let Some((id, d)) = self.take(true)? else {
            return Ok(None);
        };
        self.held[id.0 as usize] = Some(Held::Tx {
            len: d.len,
            handle: d.handle,
        });
        self.ch.bump(Counter::TxTaken);
        Ok(Some(TxRequest {
            buffer: id,
            len: d.len,
            handle: d.handle,
            flags: d.flags,
        }))
    }

    /// Takes the next free receive buffer.
    pub fn poll_rx_buffer(&mut self) -> Result<Option<BufferId>, PollError> {
        let Some((id, _)) = self.take(false)? else {
            return Ok(None);
        };
        self.held[id.0 as usize] = Some(Held::Rx);
        self.ch.bump(Counter::RxTaken);
        Ok(Some(id))
    }

    fn check_held(&self, id: BufferId, len: usize) -> Result<Held, ChannelError> {
        self.ch.check_local(id, len)?;
        self.held[id.0 as usize].ok_or(ChannelError::NotOurs(id))
    }

    /// Reads the first `out.len()` bytes of a held buffer.
    pub fn read_buffer(&self, id: BufferId, out: &mut [u8]) -> Result<(), ChannelError> {
        self.check_held(id, out.len())?;
        read_bytes(self.ch.buffer_words(id), out);
        Ok(())
    }

    /// Writes `data` into a held receive buffer.
    pub fn write_buffer(&mut self, id: BufferId, data: &[u8]) -> Result<(), ChannelError> {
        self.write_buffer_at(id, 0, data)
    }

    /// Reads `out.len()` bytes of a held buffer from byte `offset`, a multiple of 8 (the
    /// region is seen as 64-bit words).
    pub fn read_buffer_at(
        &self,
        id: BufferId,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), ChannelError> {
        let end = checked_range(offset, out.len())?;
        self.check_held(id, end)?;
        read_bytes(&self.ch.buffer_words(id)[offset / 8..], out);
        Ok(())
    }

    /// Writes `data` into a held receive buffer from byte `offset`, a multiple of 8. The
    /// bytes after `data` up to the next multiple of 8 are zeroed (whole words are written).
    pub fn write_buffer_at(
        &mut self,
        id: BufferId,
        offset: usize,
        data: &[u8],
    ) -> Result<(), ChannelError> {
        let end = checked_range(offset, data.len())?;
        match self.check_held(id, end)? {
            Held::Rx => {
                write_bytes(&self.ch.buffer_words(id)[offset / 8..], data);
                Ok(())
            }
            Held::Tx { .. } => Err(ChannelError::NotOurs(id)),
        }
    }

    /// The size of every buffer of the channel, in bytes.
    pub fn buffer_size(&self) -> usize {
        self.ch.buffers.size as usize
    }

    fn complete(&mut self, id: BufferId, d: Descriptor) -> Result<(), ChannelError> {
        push_descriptor(&mut self.completions, d)?;
        self.held[id.0 as usize] = None;
        self.ch.bump(Counter::Completed);
        self.waker.after_publish(self.completions.ring.waiting());
        Ok(())
    }

    /// Finishes a transmission: the buffer goes back to the application.
    pub fn complete_tx(&mut self, id: BufferId, status: u16) -> Result<(), ChannelError> {
        let Held::Tx { len, handle } = self.check_held(id, 0)? else {
            return Err(ChannelError::NotOurs(id));
        };
        let d = Descriptor {
            offset: id.0 * self.ch.buffers.size,
            len,
            handle,
            flags: 0,
            status,
        };
        self.complete(id, d)
    }

    /// Hands a filled receive buffer to the application.
    pub fn complete_rx(
        &mut self,
        id: BufferId,
        len: u32,
        handle: u32,
        status: u16,
    ) -> Result<(), ChannelError> {
        let Held::Rx = self.check_held(id, len as usize)? else {
            return Err(ChannelError::NotOurs(id));
        };
        let d = Descriptor {
            offset: id.0 * self.ch.buffers.size,
            len,
            handle,
            flags: Descriptor::FLAG_RX,
            status,
        };
        self.complete(id, d)
    }

    /// Whether the adapter holds buffer `id`.
    pub fn holds(&self, id: BufferId) -> bool {
        self.held.get(id.0 as usize).is_some_and(Option::is_some)
    }

    /// How the application is woken after a completion.
    pub fn set_waker(&mut self, waker: Waker) {
        self.waker = waker;
    }

    /// Sets the channel's state word (Release) and wakes the application if it sleeps,
    /// so that a blocked call sees the new state.
    pub fn set_state(&mut self, state: ChannelState) {
        store_le(self.ch.state_word(), state.code(), Ordering::Release);
        self.waker.after_publish(self.completions.ring.waiting());
    }

    /// The channel's state word.
    pub fn state(&self) -> ChannelState {
        self.ch.state()
    }
}

impl Wakeable for AdapterEnd {
    fn ready(&mut self) -> bool {
        self.tx.available(1) > 0 || self.tx.fault().is_some()
    }

    fn waiting_flag(&self) -> &AtomicU64 {
        self.tx.ring.waiting()
    }
}

/// A misbehaving application for tests: posts a raw transmit descriptor.
#[cfg(test)]
pub(crate) fn post_raw_tx(ch: &Channel, d: Descriptor) -> bool {
    let mut p = Producer::attach(ch.ring(0)).expect("test ring is sane");
    p.push_with(1, |_, s| d.store(s)) == 1
}

/// A misbehaving adapter for tests: posts a raw completion.
#[cfg(test)]
pub(crate) fn post_raw_completion(ch: &Channel, d: Descriptor) -> bool {
    let mut p = Producer::attach(ch.ring(2)).expect("test ring is sane");
    p.push_with(1, |_, s| d.store(s)) == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_layout_is_pinned() {
        assert_eq!(size_of::<RawDescriptor>(), 16);
        assert_eq!(offset_of!(RawDescriptor, offset), 0);
        assert_eq!(offset_of!(RawDescriptor, len), 4);
        assert_eq!(offset_of!(RawDescriptor, handle), 8);
        assert_eq!(offset_of!(RawDescriptor, flags), 12);
        assert_eq!(offset_of!(RawDescriptor, status), 14);
        let d = Descriptor {
            offset: 0x0403_0201,
            len: 0x0807_0605,
            handle: 0x0c0b_0a09,
            flags: 0x0e0d,
            status: 0x100f,
        };
        let b = d.to_bytes();
        assert_eq!(b, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
        assert_eq!(Descriptor::from_bytes(&b), d);
        assert_eq!(
            Counter::ALL
                .iter()
                .enumerate()
                .filter(|(i, c)| **c as usize != *i)
                .count(),
            0
        );
    }
}

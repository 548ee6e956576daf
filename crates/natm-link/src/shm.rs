//! A shared-memory link: natm-nic's pair of cell rings in a memfd region, with eventfd
//! notification, as a [`CellLink`].
//!
//! Side A sends on ring 0 and receives on ring 1, side B the reverse. Each side has one
//! eventfd it sleeps on; the peer writes it when it publishes cells while this side waits
//! to receive, or frees slots while this side waits to send. The eventfd is written only
//! when the sleeper announced its sleep in shared memory (natm-nic's Dekker handshake), so
//! a busy link makes no system call.
//!
//! # Making a link
//!
//! * In one process: [`ShmLink::pair`] (memfd) or [`ShmLink::heap_pair`] (heap memory,
//!   no file descriptor for the region).
//! * Across processes: the creator calls [`ShmLink::create`], which returns its end and an
//!   [`ShmHandover`] (the region's memfd and the two eventfds, as the other side needs
//!   them). The handover goes to the other process either inherited, or over a Unix socket
//!   with [`ShmHandover::send`] / [`ShmHandover::recv`] (SCM_RIGHTS); the other side calls
//!   [`ShmLink::open`]. [`ShmLink::offer`] and [`ShmLink::accept`] do both steps over a
//!   socket and keep it to notice the peer's death (see below).
//! * `open` trusts nothing it is handed: the memfd must be sealed against shrinking and
//!   growing and hold a valid cell-link header, and both eventfds are checked to be
//!   eventfds and made non-blocking ([`natm_nic::notify::check_eventfd`]). Any failure is
//!   an [`ShmError`]; a region whose ring indices the peer corrupts later makes
//!   `send_cells`/`recv_cells` fail with `InvalidData`.
//!
//! # Waiting
//!
//! [`ShmWait`] chooses how [`wait_recv`](CellLink::wait_recv) and
//! [`wait_send`](CellLink::wait_send) wait: spinning on the ring, natm-nic's adaptive
//! spin-then-block on the eventfd, or blocking in `poll` on the eventfd (the default). In eventfd mode
//! the eventfd is also [`poll_fd`](CellLink::poll_fd): a `recv_cells` that finds the ring
//! empty announces in shared memory that the reader may sleep, so the peer's next batch
//! makes the fd readable (one `write` by the peer and one `read` here per idle → busy
//! transition), and a `send_cells` that finds the ring full announces that the writer
//! waits for room, so the peer's next pop makes it readable too. A caller that sleeps on
//! the fd must therefore have seen `recv_cells` return 0 (and, to wait for room, a short
//! `send_cells`) since it last moved cells: a sleep after a pass that received cells is
//! announced to nobody and ends only at its timeout. The modes of the two sides are
//! independent. A caller that spins between its sleeps can stop the announcements while
//! it spins ([`ShmLink::set_spinning`]): each one costs the peer an eventfd write on its
//! next publish.
//!
//! # When the peer dies
//!
//! Cells the peer published before it died are delivered; a batch it was writing when it
//! died is never seen (the rings publish with one Release store per batch). With the Unix
//! socket kept (`offer`/`accept`, or [`ShmLink::watch_peer`]), a wait that finds the ring
//! empty (or full) and the socket closed returns an `io::ErrorKind::ConnectionAborted`
//! error at once, and so do `recv_cells` on an empty ring and `send_cells` on a full one
//! (they look at the socket at most once per [`PEER_POLL`] while nothing moves, so a busy
//! link makes no system call for it); without it, waits end at their timeout and the
//! non-blocking calls return 0.

use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use natm_nic::cells::{CellConsumer, CellLink as Rings, CellLinkError, CellProducer, LineWeight};
use natm_nic::memfd::MemfdMem;
use natm_nic::notify::{EventFdError, WaitOutcome, Waiter, Wakeable, check_eventfd};
use natm_nic::shm::{HeapMem, MemError, Region};
use rustix::event::{EventfdFlags, PollFd, PollFlags, Timespec, eventfd, poll};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, recvmsg, sendmsg,
};

pub use natm_nic::cells::Side;
pub use natm_nic::notify::AdaptivePolicy;

use crate::cell::{CellBytes, CellLink, LinkCounters};

/// How a side waits for cells to receive or room to send.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShmWait {
    /// Spin on the ring: the lowest latency, and a whole CPU while waiting.
    BusyPoll,
    /// Spin on the ring for the policy's time, then block on the eventfd (natm-nic's
    /// adaptive mode: no system call when the peer's cells come during the spin).
    Adaptive(AdaptivePolicy),
    /// Block in `poll` on the eventfd; the eventfd is the link's `poll_fd`.
    #[default]
    EventFd,
}

/// Why a shared-memory link could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ShmError {
    /// The region could not be created or mapped (an unsealed memfd, a bad length, …).
    #[error("region: {0}")]
    Mem(#[from] MemError),
    /// The region's header or ring indices were refused.
    #[error("cell rings: {0}")]
    Rings(#[from] CellLinkError),
    /// A file descriptor handed over as an eventfd is not a usable one.
    #[error("eventfd: {0}")]
    EventFd(#[from] EventFdError),
    /// The handover message on the Unix socket was not one.
    #[error("handover: {0}")]
    Handover(&'static str),
    /// A system call failed.
    #[error("{call}: {source}")]
    Os {
        /// The call.
        call: &'static str,
        /// What the kernel said.
        source: io::Error,
    },
}

fn os(call: &'static str) -> impl FnOnce(rustix::io::Errno) -> ShmError {
    move |e| ShmError::Os {
        call,
        source: e.into(),
    }
}

/// What one side hands the other: the region and the two eventfds, named from the
/// receiving side's point of view.
#[derive(Debug)]
pub struct ShmHandover {
    /// The memfd holding the rings (sealed).
    pub region: OwnedFd,
    /// The eventfd the receiving side sleeps on.
    pub wait: OwnedFd,
    /// The eventfd the receiving side writes to wake the creator.
    pub kick: OwnedFd,
}

/// The handover message's bytes (the fds travel beside them).
const HANDOVER_MAGIC: [u8; 8] = *b"NATMSHM\x01";

/// One message received with [`ShmHandover::recv_tagged`].
#[derive(Debug)]
pub struct Tagged {
    /// Bytes that came (0: the peer closed the socket).
    pub len: usize,
    /// The three descriptors as a handover, or what was wrong with what came beside the
    /// bytes (other ancillary data, other than three descriptors; those are closed).
    pub handover: Result<ShmHandover, &'static str>,
}

impl ShmHandover {
    /// Sends the three descriptors over a Unix stream socket (SCM_RIGHTS), with an 8-byte
    /// tag so the receiver can tell a handover from anything else.
    pub fn send(&self, sock: &UnixStream) -> Result<(), ShmError> {
        self.send_tagged(sock, &HANDOVER_MAGIC)
    }

    /// Sends `bytes` with the three descriptors in one `sendmsg` (the descriptors travel
    /// with the first byte): the building block of [`ShmHandover::send`] and of other
    /// messages that carry a handover (a [lane request](crate::lane)).
    pub fn send_tagged(&self, sock: &UnixStream, bytes: &[u8]) -> Result<(), ShmError> {
        let fds = [self.region.as_fd(), self.wait.as_fd(), self.kick.as_fd()];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err(ShmError::Handover("no room for three descriptors"));
        }
        let sent = sendmsg(
            sock,
            &[IoSlice::new(bytes)],
            &mut control,
            SendFlags::NOSIGNAL,
        )
        .map_err(os("sendmsg"))?;
        if sent != bytes.len() {
            return Err(ShmError::Handover("sent short"));
        }
        Ok(())
    }

    /// One `recvmsg` into `buf` (`flags`, e.g. `DONTWAIT`; the socket's own timeout
    /// applies): `None` if nothing came in time, else the byte count and the descriptors
    /// that came with them, checked to be exactly three and nothing else.
    pub fn recv_tagged(
        sock: &UnixStream,
        buf: &mut [u8],
        flags: RecvFlags,
    ) -> Result<Option<Tagged>, ShmError> {
        // Room for more than three, so a message with too many is seen whole and refused.
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(8))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let got = match recvmsg(
            sock,
            &mut [IoSliceMut::new(buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC | flags,
        ) {
            Ok(m) => m,
            Err(rustix::io::Errno::AGAIN) => return Ok(None),
            Err(e) => return Err(os("recvmsg")(e)),
        };
        let mut fds: Vec<OwnedFd> = Vec::new();
        let mut other = false;
        for msg in control.drain() {
            match msg {
                RecvAncillaryMessage::ScmRights(it) => fds.extend(it),
                _ => other = true,
            }
        }
        let handover = if other || got.flags.contains(rustix::net::ReturnFlags::CTRUNC) {
            Err("unexpected ancillary data")
        } else {
            let mut fds = fds.into_iter();
            match (fds.next(), fds.next(), fds.next(), fds.next()) {
                (Some(region), Some(wait), Some(kick), None) => {
                    Ok(ShmHandover { region, wait, kick })
                }
                _ => Err("not exactly three descriptors"),
            }
        };
        Ok(Some(Tagged {
            len: got.bytes,
            handover,
        }))
    }

    /// Receives a handover sent with [`ShmHandover::send`], waiting at most `timeout`.
    /// Anything else (other bytes, other than three descriptors, a closed socket) is a
    /// [`ShmError::Handover`]; descriptors that came with a refused message are closed.
    pub fn recv(sock: &UnixStream, timeout: Option<Duration>) -> Result<ShmHandover, ShmError> {
        let io = |call| move |e: io::Error| ShmError::Os { call, source: e };
        let before = sock.read_timeout().map_err(io("SO_RCVTIMEO"))?;
        sock.set_read_timeout(timeout.filter(|t| !t.is_zero()))
            .map_err(io("SO_RCVTIMEO"))?;
        let mut buf = [0u8; HANDOVER_MAGIC.len() + 1];
        let got = ShmHandover::recv_tagged(sock, &mut buf, RecvFlags::empty());
        sock.set_read_timeout(before).map_err(io("SO_RCVTIMEO"))?;
        let Some(got) = got? else {
            return Err(ShmError::Handover("none arrived in time"));
        };
        if got.len == 0 {
            return Err(ShmError::Handover("the socket closed"));
        }
        if got.len != HANDOVER_MAGIC.len() || buf[..HANDOVER_MAGIC.len()] != HANDOVER_MAGIC {
            return Err(ShmError::Handover("not a natm shared-memory handover"));
        }
        got.handover.map_err(ShmError::Handover)
    }
}

/// A cell-link region's splice word (natm-nic's `SPLICE_OFFSET`; [`crate::lane`] says what
/// it is for), over the region mapped once.
#[derive(Clone)]
pub struct SpliceWord(Rings);

impl std::fmt::Debug for SpliceWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SpliceWord({:#x})", self.bits())
    }
}

impl SpliceWord {
    /// Side B is held by another application than the one its creator asked for.
    pub const HELD_B: u64 = natm_nic::layout::SPLICE_HELD_B;
    /// The application holding side A let it go.
    pub const RELEASED_A: u64 = natm_nic::layout::SPLICE_RELEASED_A;
    /// The application holding side B let it go.
    pub const RELEASED_B: u64 = natm_nic::layout::SPLICE_RELEASED_B;

    /// The release bit of `side`.
    pub fn released(side: Side) -> u64 {
        match side {
            Side::A => SpliceWord::RELEASED_A,
            Side::B => SpliceWord::RELEASED_B,
        }
    }

    /// Maps the region a handover names (validating it) for its splice word.
    pub fn of(handover: &ShmHandover) -> Result<SpliceWord, ShmError> {
        let mem = MemfdMem::map(dup(handover.region.as_fd())?)?;
        Ok(SpliceWord(Rings::open(Arc::new(mem))?))
    }

    /// The word.
    pub fn bits(&self) -> u64 {
        self.0.splice_bits()
    }

    /// Sets `set` and clears `clear`, atomically.
    pub fn update(&self, set: u64, clear: u64) {
        self.0.update_splice_bits(set, clear);
    }

    /// Cells the region's side `side` sent and took since the region was made,
    /// `(sent, taken)` ([`Rings::side_counts`]: the rings' indices, read through the
    /// mapping this word keeps).
    pub fn cells(&self, side: Side) -> (u64, u64) {
        self.0.side_counts(side)
    }
}

/// Which region a handover names: the memfd's device and inode (the same for every
/// descriptor of it, in every process).
pub fn region_id(handover: &ShmHandover) -> Result<(u64, u64), ShmError> {
    let st = rustix::fs::fstat(&handover.region).map_err(os("fstat"))?;
    Ok((st.st_dev as u64, st.st_ino as u64))
}

/// Whether the peer of `sock`, a socket it only ever closes, has closed it (or the socket
/// failed): reads away whatever it sent without waiting, so a socket that keeps polling
/// readable with bytes in it is not taken for an open one forever.
pub fn peer_closed(sock: &UnixStream) -> bool {
    let mut scratch = [0u8; 64];
    loop {
        match rustix::net::recv(sock, &mut scratch, RecvFlags::DONTWAIT) {
            Ok((0, _)) => return true,
            Ok(_) | Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::AGAIN) => return false,
            Err(_) => return true,
        }
    }
}

/// What a shared-memory link counts beyond [`LinkCounters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShmCounters {
    /// The counters every link has (`rx_malformed` and `rx_lost` stay 0: the rings
    /// neither lose nor garble).
    pub link: LinkCounters,
    /// Eventfd writes made to wake the peer (cells for it, or room for it).
    pub kicks: u64,
    /// Of those, writes that failed (the peer's counter full, or its fd broken).
    pub kick_failures: u64,
    /// Times this side blocked in `poll` on its eventfd.
    pub sleeps: u64,
}

/// One end of a shared-memory cell link. See the [module documentation](self).
pub struct ShmLink {
    tx: CellProducer,
    rx: CellConsumer,
    /// This side's eventfd (kept in every mode: the peer may write it).
    efd: Arc<OwnedFd>,
    waiter: Waiter,
    mode: ShmWait,
    peer: Option<UnixStream>,
    peer_gone: bool,
    /// When `recv_cells`/`send_cells` last looked at the peer's socket ([`coarse_now`]).
    peer_checked: Option<Duration>,
    /// `send_cells` found the ring full and announced a wait for room (eventfd mode).
    space_armed: bool,
    /// The caller is spinning: `recv_cells` and `send_cells` announce no sleep.
    spinning: bool,
    counters: ShmCounters,
    /// Which side this is, and the region's line-weight words.
    side: Side,
    weight: LineWeight,
    /// The region (for its splice word).
    rings: Rings,
}

impl std::fmt::Debug for ShmLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmLink")
            .field("mode", &self.mode)
            .field("counters", &self.shm_counters())
            .finish_non_exhaustive()
    }
}

fn new_eventfd() -> Result<OwnedFd, ShmError> {
    eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).map_err(os("eventfd"))
}

fn dup(fd: BorrowedFd<'_>) -> Result<OwnedFd, ShmError> {
    fd.try_clone_to_owned().map_err(|e| ShmError::Os {
        call: "dup",
        source: e,
    })
}

impl ShmLink {
    /// Whether the peer has published cells this side has not taken (or broke the ring):
    /// one read of the ring's index, cheap enough for a waiter to spin on.
    pub fn rx_ready(&mut self) -> bool {
        self.rx.ready()
    }

    /// Both ends of a link in one process, over a memfd region with rings of `entries`
    /// cells (a power of two), waiting on eventfds.
    pub fn pair(entries: u32) -> Result<(ShmLink, ShmLink), ShmError> {
        ShmLink::pair_with(entries, ShmWait::EventFd)
    }

    /// [`ShmLink::pair`] with a wait mode for both ends.
    pub fn pair_with(entries: u32, wait: ShmWait) -> Result<(ShmLink, ShmLink), ShmError> {
        let (a, h) = ShmLink::create(entries, wait)?;
        Ok((a, ShmLink::open(h, wait)?))
    }

    /// Both ends over ordinary heap memory (no region fd; eventfds still notify).
    pub fn heap_pair(entries: u32, wait: ShmWait) -> Result<(ShmLink, ShmLink), ShmError> {
        let mem: Region = Arc::new(HeapMem::new(
            Rings::region_bytes(entries).map_err(|e| ShmError::Rings(CellLinkError::Layout(e)))?,
        )?);
        let rings = Rings::create(mem, entries)?;
        let (ea, eb) = (new_eventfd()?, new_eventfd()?);
        let kick_b = dup(ea.as_fd())?;
        let kick_a = dup(eb.as_fd())?;
        Ok((
            ShmLink::assemble(&rings, Side::A, ea, kick_a, wait)?,
            ShmLink::assemble(&rings, Side::B, eb, kick_b, wait)?,
        ))
    }

    /// Creates a region with rings of `entries` cells (a power of two) and two eventfds;
    /// returns side A and what side B needs, to hand to the other process.
    pub fn create(entries: u32, wait: ShmWait) -> Result<(ShmLink, ShmHandover), ShmError> {
        let bytes =
            Rings::region_bytes(entries).map_err(|e| ShmError::Rings(CellLinkError::Layout(e)))?;
        let mem = MemfdMem::create("natm-shm-link", bytes)?;
        let region = dup(mem.fd())?;
        let rings = Rings::create(Arc::new(mem), entries)?;
        let (ea, eb) = (new_eventfd()?, new_eventfd()?);
        let handover = ShmHandover {
            region,
            wait: dup(eb.as_fd())?,
            kick: dup(ea.as_fd())?,
        };
        Ok((ShmLink::assemble(&rings, Side::A, ea, eb, wait)?, handover))
    }

    /// Creates a region with rings of `entries` cells and two eventfds, and maps none of
    /// it: what side A and side B each need, for a process that only brokers the link
    /// (hostd makes a lane between an application and the switch this way).
    pub fn create_detached(entries: u32) -> Result<(ShmHandover, ShmHandover), ShmError> {
        let bytes =
            Rings::region_bytes(entries).map_err(|e| ShmError::Rings(CellLinkError::Layout(e)))?;
        let mem = MemfdMem::create("natm-shm-lane", bytes)?;
        let region = dup(mem.fd())?;
        // Writes the header; dropped (unmapped) at the end of this function.
        Rings::create(Arc::new(mem), entries)?;
        let (ea, eb) = (new_eventfd()?, new_eventfd()?);
        let b = ShmHandover {
            region: dup(region.as_fd())?,
            wait: dup(eb.as_fd())?,
            kick: dup(ea.as_fd())?,
        };
        let a = ShmHandover {
            region,
            wait: ea,
            kick: eb,
        };
        Ok((a, b))
    }

    /// Side A of a link from the first handover of [`ShmLink::create_detached`]; validates
    /// it as [`ShmLink::open`] does.
    pub fn open_a(handover: ShmHandover, wait: ShmWait) -> Result<ShmLink, ShmError> {
        ShmLink::open_side(handover, Side::A, wait)
    }

    /// `side`'s descriptors of the region whose side B `side_b` names (side A's are the
    /// same region with the eventfds swapped), every descriptor duplicated: what a switch
    /// keeps of a lane hands either side of it over (natm-link's spliced lanes).
    pub fn dup_side(side_b: &ShmHandover, side: Side) -> Result<ShmHandover, ShmError> {
        let (wait, kick) = match side {
            Side::B => (&side_b.wait, &side_b.kick),
            Side::A => (&side_b.kick, &side_b.wait),
        };
        Ok(ShmHandover {
            region: dup(side_b.region.as_fd())?,
            wait: dup(wait.as_fd())?,
            kick: dup(kick.as_fd())?,
        })
    }

    /// A copy of the handover (every descriptor duplicated), to hand over again later.
    pub fn dup_handover(h: &ShmHandover) -> Result<ShmHandover, ShmError> {
        Ok(ShmHandover {
            region: dup(h.region.as_fd())?,
            wait: dup(h.wait.as_fd())?,
            kick: dup(h.kick.as_fd())?,
        })
    }

    /// Side B of a link another process created, from its handover. Validates the region
    /// and both eventfds (see the module documentation); never panics on what it is given.
    pub fn open(handover: ShmHandover, wait: ShmWait) -> Result<ShmLink, ShmError> {
        ShmLink::open_side(handover, Side::B, wait)
    }

    /// Either side of a region from that side's handover, validated as [`ShmLink::open`]
    /// does. The side continues from the indices in the region: whoever held it before
    /// must have stopped (a spliced lane's side changing hands, [`crate::lane`]).
    pub fn open_side(
        handover: ShmHandover,
        side: Side,
        wait: ShmWait,
    ) -> Result<ShmLink, ShmError> {
        let mem = MemfdMem::map(handover.region)?;
        let rings = Rings::open(Arc::new(mem))?;
        ShmLink::assemble(&rings, side, handover.wait, handover.kick, wait)
    }

    /// Creates a link, sends side B's handover over `sock` and keeps the socket to notice
    /// the peer's death.
    pub fn offer(sock: UnixStream, entries: u32, wait: ShmWait) -> Result<ShmLink, ShmError> {
        let (mut link, handover) = ShmLink::create(entries, wait)?;
        handover.send(&sock)?;
        link.watch_peer(sock)?;
        Ok(link)
    }

    /// Receives a handover on `sock` (waiting at most `timeout`), opens side B and keeps
    /// the socket to notice the peer's death.
    pub fn accept(
        sock: UnixStream,
        wait: ShmWait,
        timeout: Option<Duration>,
    ) -> Result<ShmLink, ShmError> {
        let handover = ShmHandover::recv(&sock, timeout)?;
        let mut link = ShmLink::open(handover, wait)?;
        link.watch_peer(sock)?;
        Ok(link)
    }

    /// Says this side's weight on the line it shares with other senders into the peer
    /// (hostd's main link beside the switch port's lanes), in the region, where the peer
    /// reads it at any time.
    pub fn set_line_weight(&self, weight: u32) {
        self.weight.set(self.side, weight);
    }

    /// The weight the peer said, if it said one.
    pub fn peer_line_weight(&self) -> Option<u32> {
        let peer = match self.side {
            Side::A => Side::B,
            Side::B => Side::A,
        };
        self.weight.get(peer)
    }

    /// Eventfd mode: while `on`, `recv_cells` on an empty ring and `send_cells` on a full
    /// one announce nothing, so the peer publishes and pops without a system call for a
    /// caller that is spinning anyway. A caller that means to sleep on `poll_fd` turns it
    /// off and calls them once more first (the announcement is made by that call).
    pub fn set_spinning(&mut self, on: bool) {
        self.spinning = on;
    }

    /// Sends with non-temporal stores ([`CellProducer::set_streaming`]): for a side whose
    /// CPU is busier than its peer's.
    pub fn set_streaming_writes(&mut self, on: bool) {
        self.tx.set_streaming(on);
    }

    /// Keeps `sock`, a Unix socket whose other end the peer holds, to tell when the peer
    /// is gone: once it is closed, a wait on an empty (or full) ring fails with
    /// `ConnectionAborted`. The peer is not expected to send anything on it; bytes that
    /// come are read and ignored.
    pub fn watch_peer(&mut self, sock: UnixStream) -> Result<(), ShmError> {
        sock.set_nonblocking(true).map_err(|e| ShmError::Os {
            call: "fcntl(O_NONBLOCK)",
            source: e,
        })?;
        self.peer = Some(sock);
        self.peer_gone = false;
        self.peer_checked = None;
        Ok(())
    }

    fn assemble(
        rings: &Rings,
        side: Side,
        wait_fd: OwnedFd,
        kick_fd: OwnedFd,
        mode: ShmWait,
    ) -> Result<ShmLink, ShmError> {
        let (mut tx, mut rx) = rings.endpoint(side)?;
        let space_kick = dup(kick_fd.as_fd())?;
        tx.set_waker(Waiter::eventfd_waker(kick_fd)?);
        rx.set_space_waker(Waiter::eventfd_waker(space_kick)?);
        check_eventfd(&wait_fd)?;
        let efd = Arc::new(wait_fd);
        let waiter = match mode {
            ShmWait::BusyPoll => Waiter::BusyPoll,
            ShmWait::Adaptive(p) => Waiter::Adaptive(p.into(), efd.clone()),
            ShmWait::EventFd => Waiter::EventFd(efd.clone()),
        };
        Ok(ShmLink {
            tx,
            rx,
            efd,
            waiter,
            mode,
            peer: None,
            peer_gone: false,
            peer_checked: None,
            space_armed: false,
            spinning: false,
            counters: ShmCounters::default(),
            side,
            weight: rings.line_weight(),
            rings: rings.clone(),
        })
    }

    /// Which side of the region this is.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The region's splice word.
    pub fn splice_word(&self) -> SpliceWord {
        SpliceWord(self.rings.clone())
    }

    /// The wait mode.
    pub fn wait_mode(&self) -> ShmWait {
        self.mode
    }

    /// All the counters, the shared-memory ones included.
    pub fn shm_counters(&self) -> ShmCounters {
        let mut c = self.counters;
        c.kicks = self.tx.waker().kicks() + self.rx.space_waker().kicks();
        c.kick_failures = self.tx.waker().kick_failures() + self.rx.space_waker().kick_failures();
        c
    }

    /// Whether the peer's socket (see [`ShmLink::watch_peer`]) is closed. One non-blocking
    /// `read`; false when no socket is watched.
    pub fn peer_gone(&mut self) -> bool {
        if self.peer_gone {
            return true;
        }
        let Some(sock) = &self.peer else {
            return false;
        };
        self.peer_gone = peer_closed(sock);
        self.peer_gone
    }

    /// Reads the eventfd's count away (non-blocking; nothing to read is fine).
    fn drain(&self) {
        let mut b = [0u8; 8];
        let _ = rustix::io::read(&*self.efd, &mut b);
    }

    /// Waits on the receive ring (`space` false) or the transmit ring's free slots.
    fn wait_on(&mut self, space: bool, timeout: Option<Duration>) -> io::Result<bool> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let ready = if space {
                self.tx.space().ready()
            } else {
                self.rx.ready()
            };
            if ready {
                return Ok(true);
            }
            if self.peer_gone() {
                return Err(peer_gone_error());
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left.is_some_and(|l| l.is_zero()) {
                return Ok(false);
            }
            match self.mode {
                ShmWait::EventFd => {
                    let armed = if space {
                        self.waiter.prepare_to_sleep(&mut self.tx.space())
                    } else {
                        self.waiter.prepare_to_sleep(&mut self.rx)
                    };
                    if !armed {
                        return Ok(true);
                    }
                    self.counters.sleeps += 1;
                    let slept = self.sleep(left);
                    if space {
                        self.waiter.finish_sleep(&mut self.tx.space());
                    } else {
                        self.waiter.finish_sleep(&mut self.rx);
                    }
                    slept?;
                }
                ShmWait::BusyPoll | ShmWait::Adaptive(_) => {
                    // In slices, so a watched peer's death is noticed within one.
                    let slice = match (&self.peer, left) {
                        (Some(_), l) => l.unwrap_or(Duration::MAX).min(PEER_CHECK),
                        (None, l) => l.unwrap_or(Duration::MAX),
                    };
                    let out = if space {
                        self.waiter.wait(&mut self.tx.space(), slice)?
                    } else {
                        self.waiter.wait(&mut self.rx, slice)?
                    };
                    if out == WaitOutcome::Ready {
                        return Ok(true);
                    }
                }
            }
        }
    }

    /// Blocks in `poll` on the eventfd (and the peer's socket) for at most `left`.
    fn sleep(&self, left: Option<Duration>) -> io::Result<()> {
        let ts = left.and_then(|l| Timespec::try_from(l).ok());
        let mut fds = vec![PollFd::new(&*self.efd, PollFlags::IN)];
        if let Some(sock) = &self.peer {
            fds.push(PollFd::new(sock, PollFlags::IN));
        }
        match poll(&mut fds, ts.as_ref()) {
            Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// How often a polling wait looks at the peer's socket.
const PEER_CHECK: Duration = Duration::from_millis(20);

/// How often `recv_cells` on an empty ring or `send_cells` on a full one looks at the
/// peer's socket (one `read` each time), by [`coarse_now`]: at most once per kernel tick.
pub const PEER_POLL: Duration = Duration::from_millis(1);

/// The coarse monotonic clock, advancing once per kernel tick (4 ms at 250 Hz): read in
/// ~6 ns on the lab's VM against ~23 for the fine clock, and every empty look at a ring
/// reads it, so a spinning caller pays it at every turn.
fn coarse_now() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicCoarse);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn peer_gone_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "the shared-memory link's peer closed its end",
    )
}

impl ShmLink {
    /// For the non-blocking calls when nothing moved: the peer's death as an error,
    /// looking at its socket at most once per [`PEER_POLL`].
    pub(crate) fn idle_peer_check(&mut self) -> io::Result<()> {
        if self.peer.is_none() {
            return Ok(());
        }
        if !self.peer_gone {
            let now = coarse_now();
            if self
                .peer_checked
                .is_some_and(|t| now.saturating_sub(t) < PEER_POLL)
            {
                return Ok(());
            }
            self.peer_checked = Some(now);
        }
        if self.peer_gone() {
            return Err(peer_gone_error());
        }
        Ok(())
    }
}

fn corrupt(fault: natm_nic::RingFault) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, fault)
}

impl CellLink for ShmLink {
    fn send_cells(&mut self, cells: &[CellBytes]) -> io::Result<usize> {
        if cells.is_empty() {
            return Ok(0);
        }
        let mut n = self.tx.push_batch(cells);
        if n < cells.len()
            && self.tx.fault().is_none()
            && self.mode == ShmWait::EventFd
            && !self.spinning
        {
            // Full: announce that this side waits for room, so the peer's next pop kicks
            // the eventfd and a caller sleeping on poll_fd wakes when room comes. If room
            // came meanwhile, the announcement is withdrawn and the rest is pushed now.
            if self.waiter.prepare_to_sleep(&mut self.tx.space()) {
                self.space_armed = true;
            } else {
                n += self.tx.push_batch(&cells[n..]);
            }
        }
        if n > 0 {
            self.counters.link.tx_cells += n as u64;
            self.counters.link.tx_batches += 1;
        } else if let Some(f) = self.tx.fault() {
            return Err(corrupt(f));
        } else {
            self.idle_peer_check()?;
        }
        Ok(n)
    }

    fn recv_cells(&mut self, buf: &mut [CellBytes]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut n = self.rx.pop_batch(buf);
        if n == 0 {
            if let Some(f) = self.rx.fault() {
                return Err(corrupt(f));
            }
            let relaxed = std::sync::atomic::Ordering::Relaxed;
            // A room kick came (the peer took the announcement back): its count is
            // stale once this side runs, and a count left in the eventfd would make
            // every later poll return at once.
            let room_kicked = self.space_armed && self.tx.space().waiting_flag().load(relaxed) == 0;
            if self.mode == ShmWait::EventFd
                && !self.spinning
                && (room_kicked || self.rx.waiting_flag().load(relaxed) == 0)
            {
                // Arm the eventfd for a caller that sleeps on poll_fd: drain any earlier
                // kick first (so the fd is readable only for a new batch), then announce.
                // Draining a batch kick that raced in is harmless: the announcement
                // re-checks the ring.
                if room_kicked {
                    self.space_armed = false;
                }
                self.drain();
                if !self.waiter.prepare_to_sleep(&mut self.rx) {
                    n = self.rx.pop_batch(buf);
                }
            }
            if n == 0 {
                self.idle_peer_check()?;
            }
        }
        if n > 0 {
            self.counters.link.rx_cells += n as u64;
            self.counters.link.rx_batches += 1;
        }
        Ok(n)
    }

    fn wait_recv(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        self.wait_on(false, timeout)
    }

    fn wait_send(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        self.wait_on(true, timeout)
    }

    fn poll_fd(&self) -> Option<BorrowedFd<'_>> {
        (self.mode == ShmWait::EventFd).then(|| self.efd.as_fd())
    }

    fn counters(&self) -> LinkCounters {
        self.counters.link
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CELL_LEN;

    const T: Option<Duration> = Some(Duration::from_secs(10));
    const MODES: [ShmWait; 3] = [
        ShmWait::BusyPoll,
        ShmWait::Adaptive(AdaptivePolicy {
            spin: Duration::from_micros(20),
            yields: 0,
        }),
        ShmWait::EventFd,
    ];

    fn cell(i: u64) -> CellBytes {
        let mut c = [0u8; CELL_LEN];
        c[5..13].copy_from_slice(&i.to_le_bytes());
        for (k, b) in c[13..].iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(7).wrapping_add(k as u8);
        }
        c[..4].copy_from_slice(&(i as u32).to_be_bytes());
        c
    }

    /// Whether `l`'s poll fd turns readable within `ms`.
    fn readable(l: &ShmLink, ms: u64) -> bool {
        let mut fds = [PollFd::from_borrowed_fd(
            l.poll_fd().unwrap(),
            PollFlags::IN,
        )];
        let ts = Timespec::try_from(Duration::from_millis(ms)).unwrap();
        poll(&mut fds, Some(&ts)).unwrap() > 0
    }

    fn recv_exactly(l: &mut impl CellLink, n: usize) -> Vec<CellBytes> {
        let mut out = Vec::with_capacity(n);
        let mut buf = [[0u8; CELL_LEN]; 37];
        while out.len() < n {
            let want = (n - out.len()).min(buf.len());
            let got = l.recv_cells_timeout(&mut buf[..want], T).unwrap();
            assert!(got > 0, "timed out after {} of {n}", out.len());
            out.extend_from_slice(&buf[..got]);
        }
        out
    }

    #[test]
    fn pair_send_recv_both_ways_and_counters() {
        for backend in ["memfd", "heap"] {
            let (mut a, mut b) = match backend {
                "memfd" => ShmLink::pair(16).unwrap(),
                _ => ShmLink::heap_pair(16, ShmWait::EventFd).unwrap(),
            };
            let cells: Vec<CellBytes> = (0..10).map(cell).collect();
            assert_eq!(a.send_cells(&cells).unwrap(), 10);
            assert_eq!(recv_exactly(&mut b, 10), cells, "{backend}");
            assert_eq!(b.send_cells(&cells[..3]).unwrap(), 3);
            assert_eq!(recv_exactly(&mut a, 3), &cells[..3]);
            let (ca, cb) = (a.counters(), b.counters());
            assert_eq!((ca.tx_cells, ca.tx_batches, ca.rx_cells), (10, 1, 3));
            assert_eq!(
                (cb.tx_cells, cb.rx_cells, cb.rx_malformed, cb.rx_lost),
                (3, 10, 0, 0)
            );
            assert!(a.poll_fd().is_some(), "eventfd mode has a poll fd");
        }
    }

    #[test]
    fn full_and_empty_and_wrap_around() {
        let (mut a, mut b) = ShmLink::pair(8).unwrap();
        let mut buf = [[0u8; CELL_LEN]; 8];
        assert_eq!(b.recv_cells(&mut buf).unwrap(), 0, "empty");
        let cells: Vec<CellBytes> = (0..12).map(cell).collect();
        assert_eq!(a.send_cells(&cells).unwrap(), 8, "a prefix fits");
        assert_eq!(a.send_cells(&cells[8..]).unwrap(), 0, "full");
        assert!(!a.wait_send(Some(Duration::from_millis(10))).unwrap());
        assert_eq!(b.recv_cells(&mut buf[..3]).unwrap(), 3);
        assert_eq!(&buf[..3], &cells[..3]);
        assert!(a.wait_send(Some(Duration::from_millis(10))).unwrap());
        assert_eq!(a.send_cells(&cells[8..]).unwrap(), 3);
        // Many laps of an 8-slot ring in uneven batches.
        let mut next_tx = 11u64;
        let mut next_rx = 3u64;
        for lap in 0..500u64 {
            let batch: Vec<CellBytes> = (next_tx..next_tx + 1 + lap % 7).map(cell).collect();
            next_tx += a.send_cells(&batch).unwrap() as u64;
            let n = b.recv_cells(&mut buf[..1 + (lap % 5) as usize]).unwrap();
            for c in &buf[..n] {
                assert_eq!(*c, cell(next_rx));
                next_rx += 1;
            }
        }
        while next_rx < next_tx {
            let n = b.recv_cells(&mut buf).unwrap();
            assert!(n > 0);
            for c in &buf[..n] {
                assert_eq!(*c, cell(next_rx));
                next_rx += 1;
            }
        }
        assert_eq!(b.recv_cells(&mut buf).unwrap(), 0);
    }

    #[test]
    fn waits_time_out_in_every_mode() {
        for mode in MODES {
            let (mut a, mut b) = ShmLink::pair_with(4, mode).unwrap();
            let t0 = Instant::now();
            assert!(
                !b.wait_recv(Some(Duration::from_millis(30))).unwrap(),
                "{mode:?}"
            );
            let took = t0.elapsed();
            assert!(
                took >= Duration::from_millis(30) && took < Duration::from_secs(5),
                "{took:?}"
            );
            assert_eq!(a.send_cells(&[cell(0); 4]).unwrap(), 4);
            let t0 = Instant::now();
            assert!(
                !a.wait_send(Some(Duration::from_millis(30))).unwrap(),
                "{mode:?}"
            );
            assert!(t0.elapsed() >= Duration::from_millis(30));
            assert!(b.wait_recv(Some(Duration::ZERO)).unwrap(), "ready now");
            assert_eq!(a.poll_fd().is_some(), mode == ShmWait::EventFd);
        }
    }

    #[test]
    fn batches_larger_than_the_ring_flow_with_both_waits() {
        for mode in MODES {
            let (mut a, mut b) = ShmLink::pair_with(16, mode).unwrap();
            const N: u64 = 20_000;
            let sender = std::thread::spawn(move || {
                let cells: Vec<CellBytes> = (0..N).map(cell).collect();
                // 1000-cell batches into a 16-cell ring: partial sends and wait_send.
                for chunk in cells.chunks(1000) {
                    assert_eq!(a.send_cells_timeout(chunk, T).unwrap(), chunk.len());
                }
                a
            });
            let got = recv_exactly(&mut b, N as usize);
            let a = sender.join().unwrap();
            for (i, c) in got.iter().enumerate() {
                assert_eq!(*c, cell(i as u64), "{mode:?}");
            }
            let c = a.shm_counters();
            assert_eq!(c.link.tx_cells, N);
            assert!(c.link.tx_batches > N / 1000, "partial sends: {c:?}");
            assert_eq!(c.kick_failures, 0);
            if mode == ShmWait::EventFd {
                // Somebody slept on an eventfd and was kicked (wall-clock dependent
                // which side, but in 20,000 cells through 16 slots, one of them did).
                let cb = b.shm_counters();
                assert!(
                    c.sleeps + cb.sleeps > 0 && c.kicks + cb.kicks > 0,
                    "{c:?} {cb:?}"
                );
            }
        }
    }

    #[test]
    fn poll_fd_turns_readable_when_cells_arrive() {
        let (mut a, mut b) = ShmLink::pair(16).unwrap();
        let mut buf = [[0u8; CELL_LEN]; 4];
        // Drained to empty: the reader is armed and the fd is quiet.
        assert_eq!(b.recv_cells(&mut buf).unwrap(), 0);
        assert!(!readable(&b, 10));
        assert_eq!(a.send_cells(&[cell(1)]).unwrap(), 1);
        assert!(readable(&b, 1000), "the peer's batch makes the fd readable");
        assert_eq!(b.recv_cells(&mut buf).unwrap(), 1);
        assert_eq!(b.recv_cells(&mut buf).unwrap(), 0);
        assert!(!readable(&b, 10), "drained: quiet again");
        assert_eq!(a.send_cells(&[cell(2), cell(3)]).unwrap(), 2);
        assert!(readable(&b, 1000));
        assert_eq!(
            a.shm_counters().kicks,
            2,
            "one kick per idle-to-busy change"
        );
    }

    #[test]
    fn a_full_send_makes_poll_fd_readable_when_the_peer_makes_room() {
        let (mut a, mut b) = ShmLink::pair(8).unwrap();
        let mut buf = [[0u8; CELL_LEN]; 8];
        // A daemon's pass: receive (nothing: armed), send (the ring fills: armed too).
        assert_eq!(a.recv_cells(&mut buf).unwrap(), 0);
        assert_eq!(a.send_cells(&[cell(0); 12]).unwrap(), 8);
        assert_eq!(a.send_cells(&[cell(0); 4]).unwrap(), 0);
        assert!(!readable(&a, 10), "full, and nothing moved: quiet");
        assert_eq!(b.recv_cells(&mut buf[..3]).unwrap(), 3);
        assert!(readable(&a, 1000), "the peer's pop wakes the full sender");
        assert_eq!(b.shm_counters().kicks, 1, "one kick for the room");
        // The next pass takes the stale count away; a sleep then waits for news again.
        assert_eq!(a.recv_cells(&mut buf).unwrap(), 0);
        assert_eq!(a.send_cells(&[cell(1); 3]).unwrap(), 3);
        assert!(!readable(&a, 10), "nothing new: quiet again");
        assert_eq!(b.send_cells(&[cell(2)]).unwrap(), 1);
        assert!(readable(&a, 1000), "cells still wake it");
    }

    #[test]
    fn each_side_says_its_line_weight_and_the_peer_reads_it_through_the_region() {
        let (a, b) = ShmLink::pair(64).unwrap();
        assert_eq!((a.peer_line_weight(), b.peer_line_weight()), (None, None));
        a.set_line_weight(23);
        assert_eq!(
            (a.peer_line_weight(), b.peer_line_weight()),
            (None, Some(23))
        );
        // Through the endpoint trait and an emulated line in front of side B, as hostd has
        // its end of the switch port's link (the switch offers the region: side A).
        let line = crate::emulated::Emulated::new(b, &natm_netem::Config::default());
        let boxed: Box<dyn crate::endpoint::EndpointLink> = Box::new(line);
        assert!(boxed.set_line_weight(4));
        assert_eq!(crate::endpoint::EndpointLink::line_weight(&a), Some(4));
        assert_eq!(boxed.line_weight(), Some(23));
    }

    #[test]
    fn a_bad_handover_is_a_typed_error() {
        let (_a, h) = ShmLink::create(16, ShmWait::EventFd).unwrap();
        // A memfd that is not a cell-link region (zeroed: no magic).
        let blank = MemfdMem::create("natm-blank", 4096).unwrap();
        let bad = ShmHandover {
            region: blank.fd().try_clone_to_owned().unwrap(),
            wait: dup(h.wait.as_fd()).unwrap(),
            kick: dup(h.kick.as_fd()).unwrap(),
        };
        assert!(matches!(
            ShmLink::open(bad, ShmWait::EventFd),
            Err(ShmError::Rings(_))
        ));
        // A pipe where an eventfd should be.
        let (r, _w) = std::io::pipe().unwrap();
        let bad = ShmHandover {
            region: dup(h.region.as_fd()).unwrap(),
            wait: OwnedFd::from(r),
            kick: dup(h.kick.as_fd()).unwrap(),
        };
        assert!(matches!(
            ShmLink::open(bad, ShmWait::EventFd),
            Err(ShmError::EventFd(_))
        ));
        // A region fd that is not sealed (an ordinary file).
        let file: OwnedFd = std::fs::File::open("/proc/self/status").unwrap().into();
        let bad = ShmHandover {
            region: file,
            wait: dup(h.wait.as_fd()).unwrap(),
            kick: dup(h.kick.as_fd()).unwrap(),
        };
        assert!(matches!(
            ShmLink::open(bad, ShmWait::EventFd),
            Err(ShmError::Mem(_))
        ));
        // Over a socket: something that is not a handover, and a handover short of fds.
        let (s1, s2) = UnixStream::pair().unwrap();
        std::io::Write::write_all(&mut &s1, b"hello!!!").unwrap();
        assert!(matches!(
            ShmHandover::recv(&s2, T),
            Err(ShmError::Handover(_))
        ));
        let fds = [h.region.as_fd(), h.wait.as_fd()];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        assert!(control.push(SendAncillaryMessage::ScmRights(&fds)));
        sendmsg(
            &s1,
            &[IoSlice::new(&HANDOVER_MAGIC)],
            &mut control,
            SendFlags::empty(),
        )
        .unwrap();
        assert!(matches!(
            ShmHandover::recv(&s2, T),
            Err(ShmError::Handover(_))
        ));
        assert!(matches!(
            ShmHandover::recv(&s2, Some(Duration::from_millis(20))),
            Err(ShmError::Handover("none arrived in time"))
        ));
        drop(s1);
        assert!(matches!(
            ShmHandover::recv(&s2, T),
            Err(ShmError::Handover("the socket closed"))
        ));
        // The untouched handover still opens.
        assert!(ShmLink::open(h, ShmWait::EventFd).is_ok());
    }

    #[test]
    fn corrupt_indices_from_the_peer_are_an_error() {
        let (mut a, h) = ShmLink::create(8, ShmWait::EventFd).unwrap();
        let raw = Arc::new(MemfdMem::map(dup(h.region.as_fd()).unwrap()).unwrap());
        let mut b = ShmLink::open(h, ShmWait::EventFd).unwrap();
        assert_eq!(a.send_cells(&[cell(0)]).unwrap(), 1);
        // The peer writes a tail 1000 entries ahead on ring 0 (A → B).
        let rings = Rings::open(raw.clone()).unwrap();
        let tail = rings.layout().rings[0].unwrap().offset / 8;
        use natm_nic::shm::SharedMem;
        raw.words()[tail].store(1000u64.to_le(), std::sync::atomic::Ordering::Release);
        let mut buf = [[0u8; CELL_LEN]; 4];
        let e = b.recv_cells(&mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(
            b.wait_recv(Some(Duration::from_millis(10))).unwrap(),
            "a broken ring does not sleep"
        );
    }

    /// The environment variable that turns the test below into its own peer process.
    const CHILD_ENV: &str = "NATM_SHM_TEST_PEER";
    const GARBAGE: u64 = 0x5ca1_ab1e_dead_beef;

    /// The child: takes the handover, publishes three cells, writes half of a further
    /// batch into the slots beyond the tail without publishing it, and waits to be killed.
    fn dying_peer(name: &str) {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name).unwrap();
        let sock = UnixStream::connect_addr(&addr).unwrap();
        let h = ShmHandover::recv(&sock, T).unwrap();
        let raw = Arc::new(MemfdMem::map(dup(h.region.as_fd()).unwrap()).unwrap());
        let mut link = ShmLink::open(h, ShmWait::EventFd).unwrap();
        assert_eq!(link.send_cells(&[cell(0), cell(1), cell(2)]).unwrap(), 3);
        let rings = Rings::open(raw.clone()).unwrap();
        // Ring 1 carries B to A; its slots start 192 bytes into it, 8 words each.
        let slot3 = rings.layout().rings[1].unwrap().offset / 8 + 24 + 3 * 8;
        use natm_nic::shm::SharedMem;
        for w in &raw.words()[slot3..slot3 + 10] {
            w.store(GARBAGE, std::sync::atomic::Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_secs(30));
        std::process::exit(3);
    }

    #[test]
    fn a_peer_process_that_dies_with_a_batch_half_written() {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::UnixListener;
        if let Ok(name) = std::env::var(CHILD_ENV) {
            dying_peer(&name);
            return;
        }
        let name = format!("natm-shm-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&name).unwrap();
        let listener = UnixListener::bind_addr(&addr).unwrap();
        let (mut link, h) = ShmLink::create(16, ShmWait::EventFd).unwrap();
        let raw = Arc::new(MemfdMem::map(dup(h.region.as_fd()).unwrap()).unwrap());
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "shm::tests::a_peer_process_that_dies_with_a_batch_half_written",
                "--exact",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &name)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        listener.set_nonblocking(true).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let sock = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline, "the child never connected");
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) => panic!("accept: {e}"),
            }
        };
        sock.set_nonblocking(false).unwrap();
        h.send(&sock).unwrap();
        link.watch_peer(sock).unwrap();
        // Woken across processes by the child's kick.
        assert_eq!(recv_exactly(&mut link, 3), [cell(0), cell(1), cell(2)]);
        let rings = Rings::open(raw.clone()).unwrap();
        let slot3 = rings.layout().rings[1].unwrap().offset / 8 + 24 + 3 * 8;
        use natm_nic::shm::SharedMem;
        while raw.words()[slot3 + 9].load(std::sync::atomic::Ordering::Relaxed) != GARBAGE {
            assert!(
                Instant::now() < deadline,
                "the child never wrote its half batch"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        child.kill().unwrap();
        assert!(!child.wait().unwrap().success());
        let mut buf = [[0u8; CELL_LEN]; 16];
        // The half batch is never seen: an empty ring, and the peer's death as an error
        // (or, if the kernel has not closed the socket yet, nothing).
        match link.recv_cells(&mut buf) {
            Ok(n) => assert_eq!(n, 0, "the half batch is never seen"),
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::ConnectionAborted),
        }
        let t0 = Instant::now();
        let e = link.wait_recv(Some(Duration::from_secs(5))).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionAborted);
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "seen at once, not at the timeout"
        );
        // Sending: the ring fills, then the wait says the peer is gone.
        assert_eq!(link.send_cells(&[cell(9); 20]).unwrap(), 16);
        let e = link.wait_send(Some(Duration::from_secs(5))).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionAborted);
        // The non-blocking calls say so too, with nothing to move.
        assert_eq!(
            link.recv_cells(&mut buf).unwrap_err().kind(),
            io::ErrorKind::ConnectionAborted
        );
        assert_eq!(
            link.send_cells(&[cell(9)]).unwrap_err().kind(),
            io::ErrorKind::ConnectionAborted
        );
        // Without a watched socket the survivor's waits end at their timeout.
        let (mut a, b) = ShmLink::pair(8).unwrap();
        drop(b);
        assert!(!a.wait_recv(Some(Duration::from_millis(20))).unwrap());
        assert_eq!(a.recv_cells(&mut buf).unwrap(), 0);
    }
}

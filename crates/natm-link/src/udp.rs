//! A UDP link: real 53-byte cells, batched in datagrams, between machines or network
//! namespaces.
//!
//! # Datagram format (version 1)
//!
//! ```text
//! offset  size  field
//!      0     2  magic 0x4E 0x43 ("NC": natm cells)
//!      2     1  version, 1
//!      3     1  n, the number of cells, 1..=255
//!      4     4  sequence number, big-endian, +1 per datagram from this sender (wraps)
//!      8  53·n  n cells, each exactly as on the wire (5-byte header with HEC, 48 bytes)
//! ```
//!
//! A datagram is accepted only if all of it is right: its length is exactly `8 + 53·n`, the
//! magic and version match and `n ≥ 1`. Anything else is counted as malformed (by reason,
//! in [`UdpCounters`]) and dropped whole; nothing panics. The sequence number lets the
//! receiver count datagrams lost ([`LinkCounters::rx_lost`]) or arriving out of order
//! ([`UdpCounters::rx_reordered`]); cells of a late datagram are still delivered (the
//! AAL5 receiver will drop a frame they break). The HEC is carried, not checked.
//!
//! The socket is connected to the peer, so the kernel drops datagrams from anyone else.
//! A sender puts at most [`UdpConfig::cells_per_datagram`] cells in a datagram (26 by
//! default: 1386 bytes, under a 1500-byte MTU with IPv4 and UDP headers); a receiver
//! accepts any `n` up to 255.
//!
//! # Not losing cells to the kernel
//!
//! UDP has no flow control: a datagram that finds the receiver's socket buffer full is
//! dropped by the kernel (`RcvbufErrors` in `/proc/net/snmp`), and this link sees it only as
//! a gap in the sequence numbers ([`LinkCounters::rx_lost`]). So a link is given, at setup,
//! socket buffers that hold [`BUFFER_TIME`] of its line rate
//! ([`UdpConfig::for_rate`]): the time its receiver may be off the CPU (a daemon busy with
//! another port, or preempted on a loaded machine) without losing a cell. The size assumes
//! the worst case, one cell per datagram (an emulated line paced on a fast poll loop hands
//! the link one cell at a time), at what the kernel charges for such a datagram
//! ([`datagram_truesize`], measured on loopback). The kernel caps `SO_RCVBUF` at
//! `net.core.rmem_max`; when that is too small the link tries `SO_RCVBUFFORCE` (allowed
//! with `CAP_NET_ADMIN`) and otherwise keeps what it got and says so
//! ([`UdpLink::buffers`], [`SocketBuffers::shortfall`]), which the daemons log at setup.
//! A link without a rate (`unlimited`) asks for the largest buffer the kernel gives
//! without privilege: an unpaced sender can outrun any receiver, and no buffer size
//! changes that.
//!
//! # Batching
//!
//! `send_cells` packs the cells it is given into full datagrams and hands up to
//! [`SEND_BATCH`] datagrams to the kernel in one `sendmmsg(2)` call (rustix has it). What
//! the kernel charges per datagram (the IP and UDP work, the wake-up of the receiver)
//! dominates the cost of a cell, so the link never splits a batch into more datagrams than
//! it must.
//!
//! A paced line hands the link a few cells per call (an emulated OC-3c polled every
//! microsecond: one to three), which would make as many datagrams. With
//! [`UdpConfig::hold`] set (links made from configuration, [`UdpConfig::for_rate`]), the
//! link keeps the cells of a datagram not yet full while the last of them is a user cell in
//! the middle of an AAL5 frame (PTI 0 or 2: more of its frame follows), for at most that
//! long. The frame's last cell (or any other cell: OAM, RM, a frame end) sends them at
//! once, so an SDU completes no later than without holding; only cells in the middle of a
//! frame wait. The link reads the PTI bits for this and nothing else. A holding link asks
//! to be called again by [`UdpLink::next_due`]; any `send_cells` (`&[]` too) or
//! `recv_cells` then sends what waited too long. `send_cells` counts held cells as taken. There is no receive batching: rustix has no `recvmmsg(2)`, and the receiver
//! takes one datagram per `recv(2)` (only natm-nic may use `unsafe`, and one `recv` of up
//! to 26 cells costs less than the adapter's work on them). GSO (`UDP_SEGMENT`) would
//! need a control message rustix cannot build.

use std::io::{self, IoSlice};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use natm_core::LineRate;
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::net::{MMsgHdr, SendAncillaryBuffer, SendFlags};

use crate::cell::{CELL_LEN, CellBytes, CellLink, LinkCounters};

/// The datagram magic, "NC".
pub const MAGIC: [u8; 2] = *b"NC";
/// The datagram format version.
pub const VERSION: u8 = 1;
/// Bytes before the cells.
pub const HEADER_LEN: usize = 8;
/// The most cells one datagram can hold (the count is one byte).
pub const MAX_CELLS_PER_DATAGRAM: usize = 255;
/// The largest valid datagram.
pub const MAX_DATAGRAM: usize = HEADER_LEN + MAX_CELLS_PER_DATAGRAM * CELL_LEN;
/// Datagrams handed to the kernel in one `sendmmsg(2)` call at most.
pub const SEND_BATCH: usize = 32;
/// How much of its line rate a link's socket buffers hold: hostd's longest sleep, and
/// longer than the scheduling stalls seen on a loaded 2-CPU machine.
pub const BUFFER_TIME: Duration = Duration::from_millis(20);
/// The socket buffer asked for when the line has no rate: `net.core.rmem_max`'s usual
/// value, which the kernel grants without privilege.
const UNRATED_BUFFER: usize = 4 << 20;

/// The length of a datagram of `cells` cells.
pub const fn datagram_len(cells: usize) -> usize {
    HEADER_LEN + cells * CELL_LEN
}

/// What the kernel charges a socket buffer for one datagram of `len` bytes (its
/// `truesize`: the data rounded up to a power of two, and the socket buffer's own
/// structures). Measured on loopback (61 bytes: 832, 1,386: 2,304, 13,523: 16,644); a
/// little above each. A NIC driver's receive buffers may cost more.
pub fn datagram_truesize(len: usize) -> usize {
    (len + 384).next_power_of_two() + 320
}

/// How long a link made from configuration holds the cells of an unfinished frame for a
/// fuller datagram: more than a datagram of OC-3c (26 cells, 74 µs), far less than any
/// daemon's sleep.
pub const HOLD: Duration = Duration::from_micros(200);

/// How a UDP link sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpConfig {
    /// Cells per datagram at most, 1..=255.
    pub cells_per_datagram: usize,
    /// How long a datagram not yet full may wait for more cells of the frame under way
    /// (see the [module documentation](self)); `None`: every call sends what it is given.
    pub hold: Option<Duration>,
    /// Bytes the kernel should charge each socket buffer at most before it drops (the
    /// value `getsockopt(SO_RCVBUF)` reports, twice what `setsockopt` asks for). `None`:
    /// the kernel's default (212,992 bytes on most systems: 256 one-cell datagrams, too
    /// few for a receiver that is ever late). The default asks for what a link without a
    /// rate gets.
    pub buffer_bytes: Option<usize>,
}

impl Default for UdpConfig {
    fn default() -> UdpConfig {
        UdpConfig {
            cells_per_datagram: 26,
            hold: None,
            buffer_bytes: Some(UNRATED_BUFFER * 2),
        }
    }
}

impl UdpConfig {
    /// Default batching, cells of an unfinished frame held for [`HOLD`], socket buffers for
    /// [`BUFFER_TIME`] of `rate` in one-cell datagrams (see the
    /// [module documentation](self)).
    pub fn for_rate(rate: LineRate) -> UdpConfig {
        let bytes = match rate.cells_per_s() {
            Some(cps) => {
                let cells = (u128::from(cps) * BUFFER_TIME.as_micros()).div_ceil(1_000_000);
                let per_cell = datagram_truesize(HEADER_LEN + CELL_LEN) as u128;
                usize::try_from(cells * per_cell).unwrap_or(usize::MAX)
            }
            None => UdpConfig::default().buffer_bytes.unwrap_or(0),
        };
        UdpConfig {
            buffer_bytes: Some(bytes),
            hold: Some(HOLD),
            ..UdpConfig::default()
        }
    }
}

/// The socket buffers a link asked for and got (bytes as `getsockopt` reports them); the
/// TCP cell link uses it too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SocketBuffers {
    /// What [`UdpConfig::buffer_bytes`] asked for (0: nothing asked, the kernel default).
    pub wanted: usize,
    /// The receive buffer granted.
    pub recv: usize,
    /// The send buffer granted.
    pub send: usize,
    /// Whether `SO_RCVBUFFORCE`/`SO_SNDBUFFORCE` were needed and allowed.
    pub forced: bool,
}

impl SocketBuffers {
    /// A sentence saying what is missing, if either buffer is smaller than asked.
    pub fn shortfall(&self) -> Option<String> {
        if self.recv >= self.wanted && self.send >= self.wanted {
            return None;
        }
        Some(format!(
            "socket buffers smaller than the line rate needs: receive {} and send {} bytes of \
             {} wanted ({} ms of the line); net.core.rmem_max and \
             wmem_max cap them and SO_RCVBUFFORCE needs CAP_NET_ADMIN, so a receiver off \
             the CPU that long loses cells (counted in rx_lost)",
            self.recv,
            self.send,
            self.wanted,
            BUFFER_TIME.as_millis()
        ))
    }
}

/// Sizes the socket's buffers to `wanted` bytes: the ordinary option first (capped by the
/// sysctls), then the privileged one if that fell short.
pub(crate) fn size_buffers<Fd: AsFd>(
    socket: Fd,
    wanted: Option<usize>,
) -> io::Result<SocketBuffers> {
    let socket = socket.as_fd();
    use rustix::net::sockopt as so;
    let mut b = SocketBuffers::default();
    if let Some(wanted) = wanted {
        b.wanted = wanted;
        // The kernel doubles what it is given (its bookkeeping overhead).
        let ask = wanted.div_ceil(2).min(i32::MAX as usize / 2);
        so::set_socket_recv_buffer_size(socket, ask)?;
        so::set_socket_send_buffer_size(socket, ask)?;
        if so::socket_recv_buffer_size(socket)? < wanted {
            b.forced |= so::set_socket_recv_buffer_size_force(socket, ask).is_ok();
        }
        if so::socket_send_buffer_size(socket)? < wanted {
            b.forced |= so::set_socket_send_buffer_size_force(socket, ask).is_ok();
        }
    }
    b.recv = so::socket_recv_buffer_size(socket)?;
    b.send = so::socket_send_buffer_size(socket)?;
    Ok(b)
}

/// Why a datagram was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// Shorter than the 8-byte header.
    Short,
    /// The first two bytes are not "NC".
    BadMagic,
    /// A version other than 1.
    BadVersion(u8),
    /// A cell count of 0.
    NoCells,
    /// The length is not `8 + 53·n`.
    BadLength {
        /// Cells the header announced.
        cells: u8,
        /// Bytes received.
        len: usize,
    },
}

/// A datagram header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DatagramHeader {
    /// Cells that follow.
    pub cells: u8,
    /// The sender's sequence number.
    pub seq: u32,
}

impl DatagramHeader {
    /// The eight header bytes.
    pub fn to_bytes(self) -> [u8; HEADER_LEN] {
        let s = self.seq.to_be_bytes();
        [
            MAGIC[0], MAGIC[1], VERSION, self.cells, s[0], s[1], s[2], s[3],
        ]
    }
}

/// Whether a cell is a user cell in the middle of an AAL5 frame: PTI 0 or 2 (user data,
/// SDU-type 0), so more cells of its frame follow.
fn mid_frame(c: &CellBytes) -> bool {
    c[3] & 0b1010 == 0
}

/// Check a whole datagram; on success the header and the cell bytes (a multiple of 53).
pub fn parse_datagram(d: &[u8]) -> Result<(DatagramHeader, &[u8]), Malformed> {
    let Some(h) = d.first_chunk::<HEADER_LEN>() else {
        return Err(Malformed::Short);
    };
    if h[..2] != MAGIC {
        return Err(Malformed::BadMagic);
    }
    if h[2] != VERSION {
        return Err(Malformed::BadVersion(h[2]));
    }
    let cells = h[3];
    if cells == 0 {
        return Err(Malformed::NoCells);
    }
    if d.len() != HEADER_LEN + usize::from(cells) * CELL_LEN {
        return Err(Malformed::BadLength {
            cells,
            len: d.len(),
        });
    }
    let seq = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
    Ok((DatagramHeader { cells, seq }, &d[HEADER_LEN..]))
}

/// What only a UDP link counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdpCounters {
    /// The counters every link has.
    pub link: LinkCounters,
    /// Malformed: shorter than the header.
    pub rx_short: u64,
    /// Malformed: wrong magic.
    pub rx_bad_magic: u64,
    /// Malformed: wrong version.
    pub rx_bad_version: u64,
    /// Malformed: no cells, or a length that does not match the count.
    pub rx_bad_length: u64,
    /// Datagrams whose sequence number was behind the one expected (late or duplicated).
    pub rx_reordered: u64,
    /// ICMP "port unreachable" reports from the peer (nobody listening there yet).
    pub peer_unreachable: u64,
}

/// A UDP link to one peer. The socket is non-blocking; see [`CellLink`] for the contract.
#[derive(Debug)]
pub struct UdpLink {
    socket: UdpSocket,
    config: UdpConfig,
    tx_seq: u32,
    rx_next: Option<u32>,
    /// A received datagram's cells not yet handed out, and how many were.
    held: Vec<CellBytes>,
    held_from: usize,
    /// The datagrams of one `sendmmsg`, one full datagram's length apart; also the
    /// receive buffer.
    scratch: Vec<u8>,
    buffers: SocketBuffers,
    /// Cells taken and not sent yet (at most `SEND_BATCH` datagrams), and since when the
    /// oldest of them waits.
    tx_held: Vec<CellBytes>,
    tx_held_since: Option<Instant>,
    counters: UdpCounters,
}

impl UdpLink {
    /// Bind `local` and talk to `peer` only.
    pub fn bind(local: SocketAddr, peer: SocketAddr, config: UdpConfig) -> io::Result<UdpLink> {
        UdpLink::from_socket(UdpSocket::bind(local)?, peer, config)
    }

    /// A link over a bound socket, connected here to `peer`.
    pub fn from_socket(
        socket: UdpSocket,
        peer: SocketAddr,
        config: UdpConfig,
    ) -> io::Result<UdpLink> {
        if !(1..=MAX_CELLS_PER_DATAGRAM).contains(&config.cells_per_datagram) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "cells per datagram must be 1..={MAX_CELLS_PER_DATAGRAM}, not {}",
                    config.cells_per_datagram
                ),
            ));
        }
        socket.connect(peer)?;
        socket.set_nonblocking(true)?;
        let buffers = size_buffers(&socket, config.buffer_bytes)?;
        Ok(UdpLink {
            socket,
            config,
            tx_seq: 0,
            rx_next: None,
            held: Vec::new(),
            held_from: 0,
            scratch: vec![
                0;
                (SEND_BATCH * datagram_len(config.cells_per_datagram))
                    .max(MAX_DATAGRAM + 1)
            ],
            buffers,
            tx_held: Vec::with_capacity(SEND_BATCH * config.cells_per_datagram),
            tx_held_since: None,
            counters: UdpCounters::default(),
        })
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// When the caller must call the link again although it has nothing to send: cells
    /// held for a fuller datagram leave by then (`None`: none held).
    pub fn next_due(&self) -> Option<Instant> {
        let hold = self.config.hold.unwrap_or(Duration::ZERO);
        self.tx_held_since.map(|t| t + hold)
    }

    /// Sends the held cells that may go now: every full datagram, and the rest if its last
    /// cell ends a frame or it waited long enough. Keeps what the kernel refused.
    fn push_out(&mut self, now: Instant) -> io::Result<()> {
        let per = self.config.cells_per_datagram;
        let held = self.tx_held.len();
        if held > 0 && self.tx_held_since.is_none() {
            self.tx_held_since = Some(now);
        }
        let may_wait = self.tx_held.last().is_some_and(mid_frame)
            && self
                .next_due()
                .is_some_and(|due| due > now && self.config.hold.is_some());
        let ready = if may_wait { held / per * per } else { held };
        let mut sent = 0;
        while sent < ready {
            let n = self.send_batch_of(sent, ready)?;
            if n == 0 {
                break;
            }
            sent += n;
        }
        if sent > 0 {
            self.tx_held.drain(..sent);
            // What is left came after what left: it waits from now.
            self.tx_held_since = (!self.tx_held.is_empty()).then_some(now);
        }
        Ok(())
    }

    fn send_batch_of(&mut self, from: usize, to: usize) -> io::Result<usize> {
        let cells = std::mem::take(&mut self.tx_held);
        let r = self.send_batch(&cells[from..to]);
        self.tx_held = cells;
        r
    }

    /// The socket buffers asked for and granted at setup.
    pub fn buffers(&self) -> SocketBuffers {
        self.buffers
    }

    /// All the counters, the UDP-only ones included.
    pub fn udp_counters(&self) -> UdpCounters {
        self.counters
    }

    /// Sends up to [`SEND_BATCH`] datagrams of `cells` in one `sendmmsg`; returns the
    /// cells the kernel took (0 if the socket would block).
    fn send_batch(&mut self, cells: &[CellBytes]) -> io::Result<usize> {
        let per = self.config.cells_per_datagram;
        let stride = datagram_len(per);
        let chunks = cells.chunks(per).take(SEND_BATCH);
        let mut lens = [0usize; SEND_BATCH];
        let mut count = 0;
        for (i, chunk) in chunks.enumerate() {
            let n = u8::try_from(chunk.len()).expect("at most 255 cells per datagram (checked)");
            let seq = self.tx_seq.wrapping_add(i as u32);
            let buf = &mut self.scratch[i * stride..];
            buf[..HEADER_LEN].copy_from_slice(&DatagramHeader { cells: n, seq }.to_bytes());
            for (dst, c) in buf[HEADER_LEN..].chunks_exact_mut(CELL_LEN).zip(chunk) {
                dst.copy_from_slice(c);
            }
            lens[i] = datagram_len(chunk.len());
            count = i + 1;
        }
        let iovs: [IoSlice<'_>; SEND_BATCH] =
            std::array::from_fn(|i| IoSlice::new(&self.scratch[i * stride..i * stride + lens[i]]));
        let mut controls: [SendAncillaryBuffer<'_, '_, '_>; SEND_BATCH] =
            std::array::from_fn(|_| SendAncillaryBuffer::default());
        let mut msgs: Vec<MMsgHdr<'_>> = iovs[..count]
            .iter()
            .zip(controls.iter_mut())
            .map(|(iov, control)| MMsgHdr::new(std::slice::from_ref(iov), control))
            .collect();
        // An ICMP report for an earlier datagram fails this call once; the next try is the
        // real one.
        for _ in 0..2 {
            match rustix::net::sendmmsg(&self.socket, &mut msgs, SendFlags::empty()) {
                Ok(sent) => {
                    let carried: usize = lens[..sent]
                        .iter()
                        .map(|l| (l - HEADER_LEN) / CELL_LEN)
                        .sum();
                    self.tx_seq = self.tx_seq.wrapping_add(sent as u32);
                    self.counters.link.tx_batches += sent as u64;
                    self.counters.link.tx_cells += carried as u64;
                    return Ok(carried);
                }
                Err(rustix::io::Errno::AGAIN) => return Ok(0),
                Err(rustix::io::Errno::CONNREFUSED) => self.counters.peer_unreachable += 1,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(0)
    }

    /// Take one datagram into `held`; `Ok(false)` when none is waiting.
    fn take_datagram(&mut self) -> io::Result<bool> {
        loop {
            let len = match self.socket.recv(&mut self.scratch[..MAX_DATAGRAM + 1]) {
                Ok(len) => len,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    self.counters.peer_unreachable += 1;
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let c = &mut self.counters;
            match parse_datagram(&self.scratch[..len]) {
                Ok((h, body)) => {
                    if let Some(next) = self.rx_next {
                        let ahead = h.seq.wrapping_sub(next);
                        if ahead < 1 << 31 {
                            c.link.rx_lost += u64::from(ahead);
                        } else {
                            c.rx_reordered += 1;
                        }
                    }
                    if self.rx_next.is_none_or(|n| h.seq.wrapping_sub(n) < 1 << 31) {
                        self.rx_next = Some(h.seq.wrapping_add(1));
                    }
                    c.link.rx_batches += 1;
                    self.held.clear();
                    self.held_from = 0;
                    self.held.extend(
                        body.chunks_exact(CELL_LEN)
                            .map(|b| CellBytes::try_from(b).expect("chunks of 53")),
                    );
                    return Ok(true);
                }
                Err(m) => {
                    c.link.rx_malformed += 1;
                    match m {
                        Malformed::Short => c.rx_short += 1,
                        Malformed::BadMagic => c.rx_bad_magic += 1,
                        Malformed::BadVersion(_) => c.rx_bad_version += 1,
                        Malformed::NoCells | Malformed::BadLength { .. } => c.rx_bad_length += 1,
                    }
                }
            }
        }
    }

    fn wait(&self, flags: PollFlags, timeout: Option<Duration>) -> io::Result<bool> {
        // A wait too long for a timespec is a wait without limit.
        let ts = timeout.and_then(|t| Timespec::try_from(t).ok());
        let mut fds = [PollFd::new(&self.socket, flags)];
        loop {
            match rustix::event::poll(&mut fds, ts.as_ref()) {
                Ok(n) => return Ok(n > 0),
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl CellLink for UdpLink {
    fn send_cells(&mut self, cells: &[CellBytes]) -> io::Result<usize> {
        let room = SEND_BATCH * self.config.cells_per_datagram;
        let mut taken = 0;
        loop {
            let now = Instant::now();
            let take = (cells.len() - taken).min(room - self.tx_held.len());
            self.tx_held.extend_from_slice(&cells[taken..taken + take]);
            taken += take;
            let before = self.tx_held.len();
            self.push_out(now)?;
            // Done when all is taken, or the kernel took nothing more.
            if taken == cells.len() || self.tx_held.len() == before {
                return Ok(taken);
            }
        }
    }

    fn recv_cells(&mut self, buf: &mut [CellBytes]) -> io::Result<usize> {
        if self.next_due().is_some_and(|due| due <= Instant::now()) {
            self.push_out(Instant::now())?;
        }
        let mut got = 0;
        while got < buf.len() {
            if self.held_from == self.held.len() && !self.take_datagram()? {
                break;
            }
            let take = (self.held.len() - self.held_from).min(buf.len() - got);
            buf[got..got + take].copy_from_slice(&self.held[self.held_from..self.held_from + take]);
            self.held_from += take;
            got += take;
        }
        self.counters.link.rx_cells += got as u64;
        Ok(got)
    }

    fn wait_recv(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        if self.held_from < self.held.len() {
            return Ok(true);
        }
        self.wait(PollFlags::IN, timeout)
    }

    fn wait_send(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        self.wait(PollFlags::OUT, timeout)
    }

    fn poll_fd(&self) -> Option<BorrowedFd<'_>> {
        Some(self.socket.as_fd())
    }

    fn counters(&self) -> LinkCounters {
        self.counters.link
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cell(i: usize) -> CellBytes {
        let mut c = [0u8; CELL_LEN];
        c[..4].copy_from_slice(&(i as u32).to_be_bytes());
        for (k, b) in c[5..].iter_mut().enumerate() {
            *b = (i * 31 + k) as u8;
        }
        c
    }

    fn pair(cells_per_datagram: usize) -> (UdpLink, UdpLink) {
        let a_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (a_addr, b_addr) = (a_sock.local_addr().unwrap(), b_sock.local_addr().unwrap());
        let cfg = UdpConfig {
            cells_per_datagram,
            ..UdpConfig::default()
        };
        (
            UdpLink::from_socket(a_sock, b_addr, cfg).unwrap(),
            UdpLink::from_socket(b_sock, a_addr, cfg).unwrap(),
        )
    }

    const T: Option<Duration> = Some(Duration::from_secs(5));

    fn recv_all(l: &mut UdpLink, n: usize) -> Vec<CellBytes> {
        let mut out = Vec::new();
        let mut buf = [[0u8; CELL_LEN]; 7];
        while out.len() < n {
            let got = l.recv_cells_timeout(&mut buf, T).unwrap();
            assert!(got > 0, "timed out after {} of {n} cells", out.len());
            out.extend_from_slice(&buf[..got]);
        }
        out
    }

    #[test]
    fn round_trip_in_batches() {
        let (mut a, mut b) = pair(10);
        let cells: Vec<CellBytes> = (0..95).map(cell).collect();
        assert_eq!(a.send_cells_timeout(&cells, T).unwrap(), 95);
        // A buffer of 7 does not divide a datagram of 10: the rest waits for the next call.
        assert_eq!(recv_all(&mut b, 95), cells);
        let mut none = [[0u8; CELL_LEN]; 4];
        assert_eq!(b.recv_cells(&mut none).unwrap(), 0);
        assert!(!b.wait_recv(Some(Duration::from_millis(10))).unwrap());
        let ca = a.counters();
        assert_eq!((ca.tx_cells, ca.tx_batches), (95, 10));
        let cb = b.counters();
        assert_eq!(
            (cb.rx_cells, cb.rx_batches, cb.rx_malformed, cb.rx_lost),
            (95, 10, 0, 0)
        );
        // And back.
        assert_eq!(b.send_cells(&cells[..3]).unwrap(), 3);
        assert_eq!(recv_all(&mut a, 3), &cells[..3]);
        assert!(a.poll_fd().is_some());
    }

    #[test]
    fn malformed_datagrams_are_counted_and_dropped() {
        let (mut a, b) = pair(26);
        let raw = UdpSocket::bind("127.0.0.1:0").unwrap();
        // The link is connected to `b`; send from b's address by using b's socket itself.
        let to = a.local_addr().unwrap();
        let good = {
            let mut d = DatagramHeader { cells: 2, seq: 0 }.to_bytes().to_vec();
            d.extend_from_slice(&cell(1));
            d.extend_from_slice(&cell(2));
            d
        };
        let mut bad_magic = good.clone();
        bad_magic[0] = b'X';
        let mut bad_version = good.clone();
        bad_version[2] = 2;
        let mut zero = DatagramHeader { cells: 0, seq: 1 }.to_bytes().to_vec();
        zero.truncate(8);
        let bad_len = good[..good.len() - 1].to_vec();
        for d in [&b"NC"[..], &bad_magic, &bad_version, &zero, &bad_len, &good] {
            b.socket.send_to(d, to).unwrap();
        }
        // From a stranger: the connected socket never sees it.
        raw.send_to(&good, to).unwrap();
        let mut buf = [[0u8; CELL_LEN]; 8];
        assert_eq!(a.recv_cells_timeout(&mut buf, T).unwrap(), 2);
        assert_eq!(&buf[..2], &[cell(1), cell(2)]);
        let c = a.udp_counters();
        assert_eq!(
            (
                c.rx_short,
                c.rx_bad_magic,
                c.rx_bad_version,
                c.rx_bad_length
            ),
            (1, 1, 1, 2)
        );
        assert_eq!(c.link.rx_malformed, 5);
        assert_eq!((c.link.rx_batches, c.link.rx_cells), (1, 2));
        assert!(!a.wait_recv(Some(Duration::from_millis(20))).unwrap());
        assert_eq!(a.recv_cells(&mut buf).unwrap(), 0);
    }

    #[test]
    fn sequence_gaps_and_reordering_are_counted() {
        let (mut a, b) = pair(26);
        let to = a.local_addr().unwrap();
        for seq in [5u32, 6, 9, 7, 10] {
            let mut d = DatagramHeader { cells: 1, seq }.to_bytes().to_vec();
            d.extend_from_slice(&cell(seq as usize));
            b.socket.send_to(&d, to).unwrap();
        }
        let got = recv_all(&mut a, 5);
        assert_eq!(got, [5, 6, 9, 7, 10].map(cell));
        let c = a.udp_counters();
        assert_eq!((c.link.rx_lost, c.rx_reordered), (2, 1));
    }

    #[test]
    fn config_is_checked() {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let peer = s.local_addr().unwrap();
        for n in [0, 256] {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            let e = UdpLink::from_socket(
                s,
                peer,
                UdpConfig {
                    cells_per_datagram: n,
                    ..UdpConfig::default()
                },
            )
            .unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        }
        // 255 cells fit one datagram.
        let (mut a, mut b) = pair(255);
        let cells: Vec<CellBytes> = (0..300).map(cell).collect();
        assert_eq!(a.send_cells_timeout(&cells, T).unwrap(), 300);
        assert_eq!(recv_all(&mut b, 300), cells);
        assert_eq!(b.counters().rx_batches, 2);
    }

    #[test]
    fn more_than_one_sendmmsg_keeps_order_and_sequence() {
        let (mut a, mut b) = pair(3);
        // 3 × SEND_BATCH cells per call: the last call is a short batch with a short datagram.
        let n = 3 * SEND_BATCH * 2 + 2;
        let cells: Vec<CellBytes> = (0..n).map(cell).collect();
        assert_eq!(a.send_cells_timeout(&cells, T).unwrap(), n);
        assert_eq!(recv_all(&mut b, n), cells);
        let c = b.counters();
        assert_eq!((c.rx_batches, c.rx_lost), (n.div_ceil(3) as u64, 0));
        assert_eq!(a.counters().tx_batches, n.div_ceil(3) as u64);
    }

    /// A link pair that holds unfinished frames for `hold`.
    fn holding_pair(hold: Duration) -> (UdpLink, UdpLink) {
        let a_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (aa, ba) = (a_sock.local_addr().unwrap(), b_sock.local_addr().unwrap());
        let cfg = UdpConfig {
            hold: Some(hold),
            ..UdpConfig::default()
        };
        (
            UdpLink::from_socket(a_sock, ba, cfg).unwrap(),
            UdpLink::from_socket(b_sock, aa, cfg).unwrap(),
        )
    }

    /// Cell `i` of an AAL5 frame on VC 0.100; `last` sets the SDU-type bit.
    fn frame_cell(i: usize, last: bool) -> CellBytes {
        let mut c = [0u8; CELL_LEN];
        c[2] = 0x06; // VCI 100 is 0x064: its low nibble is the top of byte 3.
        c[3] = 0x40 | if last { 0x02 } else { 0 };
        c[5..13].copy_from_slice(&(i as u64).to_le_bytes());
        c
    }

    #[test]
    fn a_frame_leaves_in_full_datagrams_and_its_end_at_once() {
        let (mut a, mut b) = holding_pair(Duration::from_secs(60));
        let frame: Vec<CellBytes> = (0..60).map(|i| frame_cell(i, i == 59)).collect();
        // Cells one or two at a time, as a paced line hands them over.
        for pair in frame[..40].chunks(2) {
            assert_eq!(a.send_cells(pair).unwrap(), pair.len());
        }
        // One full datagram of 26 has left; 14 wait for more of their frame.
        assert_eq!(a.counters().tx_cells, 26);
        assert!(a.next_due().is_some());
        assert_eq!(recv_all(&mut b, 26), &frame[..26]);
        let mut buf = [[0u8; CELL_LEN]; 64];
        assert_eq!(b.recv_cells(&mut buf).unwrap(), 0);
        // The rest and the end of the frame: sent at once, nothing held.
        assert_eq!(a.send_cells(&frame[40..]).unwrap(), 20);
        assert_eq!(a.next_due(), None);
        assert_eq!(recv_all(&mut b, 34), &frame[26..]);
        assert_eq!(b.counters().rx_batches, 3);
        // A cell that is not mid-frame (OAM, PTI 4) is not held either.
        let mut oam = frame_cell(0, false);
        oam[3] |= 0x08;
        a.send_cells(&[oam]).unwrap();
        assert_eq!(recv_all(&mut b, 1), [oam]);
    }

    #[test]
    fn held_cells_leave_by_next_due_on_any_call() {
        let (mut a, mut b) = holding_pair(Duration::from_millis(1));
        let cells: Vec<CellBytes> = (0..3).map(|i| frame_cell(i, false)).collect();
        a.send_cells(&cells).unwrap();
        let due = a.next_due().expect("held");
        assert_eq!(a.counters().tx_cells, 0);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        // A receive is a call too.
        let mut buf = [[0u8; CELL_LEN]; 4];
        a.recv_cells(&mut buf).unwrap();
        assert_eq!(a.next_due(), None);
        assert_eq!(recv_all(&mut b, 3), cells);
        // And a send of nothing.
        a.send_cells(&cells[..1]).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        a.send_cells(&[]).unwrap();
        assert_eq!(recv_all(&mut b, 1), &cells[..1]);
    }

    #[test]
    fn buffers_are_sized_from_the_rate() {
        // 20 ms of OC-3c is 7,065 cells, at 832 bytes per one-cell datagram.
        let c = UdpConfig::for_rate(LineRate::OC3);
        assert_eq!(c.buffer_bytes, Some(7_065 * 832));
        assert_eq!(datagram_truesize(datagram_len(1)), 832);
        assert_eq!(datagram_truesize(datagram_len(26)), 2_368);
        let oc12 = UdpConfig::for_rate(LineRate::OC12).buffer_bytes.unwrap();
        assert!(oc12 > 4 * 5_800_000, "{oc12}");
        assert_eq!(
            UdpConfig::for_rate(LineRate::Unlimited).buffer_bytes,
            Some(8 << 20)
        );
        assert_eq!(UdpConfig::default().buffer_bytes, Some(8 << 20));
    }

    fn bound(buffer_bytes: Option<usize>) -> UdpLink {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let peer = s.local_addr().unwrap();
        let cfg = UdpConfig {
            buffer_bytes,
            ..UdpConfig::default()
        };
        UdpLink::from_socket(UdpSocket::bind("127.0.0.1:0").unwrap(), peer, cfg).unwrap()
    }

    #[test]
    fn a_buffer_the_kernel_refuses_is_reported() {
        // No kernel grants a terabyte: the shortfall is said, with both sizes.
        let b = bound(Some(1 << 40)).buffers();
        assert!(b.recv < b.wanted && b.send < b.wanted, "{b:?}");
        let text = b.shortfall().unwrap();
        assert!(text.contains(&b.recv.to_string()) && text.contains("1099511627776"));
        // 64 KiB is under every kernel's default maximum.
        let b = bound(Some(64 << 10)).buffers();
        assert!(b.recv >= 64 << 10 && b.send >= 64 << 10, "{b:?}");
        assert_eq!(b.shortfall(), None);
        // Nothing asked: the kernel's defaults, nothing to say.
        let b = bound(None).buffers();
        assert_eq!((b.wanted, b.shortfall()), (0, None));
        assert!(b.recv > 0);
    }

    #[test]
    fn a_receiver_away_for_the_buffer_time_loses_nothing() {
        // BUFFER_TIME of OC-3c in one-cell datagrams arrives while the receiver does not
        // read; every cell is still there after.
        let cfg = UdpConfig {
            cells_per_datagram: 1,
            ..UdpConfig::for_rate(LineRate::OC3)
        };
        let a_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (aa, ba) = (a_sock.local_addr().unwrap(), b_sock.local_addr().unwrap());
        let mut a = UdpLink::from_socket(a_sock, ba, cfg).unwrap();
        let mut b = UdpLink::from_socket(b_sock, aa, cfg).unwrap();
        if let Some(why) = b.buffers().shortfall() {
            // Not root, and a small rmem_max: what the link says is what this test checks.
            eprintln!("skipped: {why}");
            return;
        }
        let n = 7_065;
        let cells: Vec<CellBytes> = (0..n).map(cell).collect();
        assert_eq!(a.send_cells_timeout(&cells, T).unwrap(), n);
        assert_eq!(recv_all(&mut b, n), cells);
        assert_eq!(b.counters().rx_lost, 0);
    }

    #[test]
    fn nobody_listening_is_counted_not_fatal() {
        let gone = UdpSocket::bind("127.0.0.1:0").unwrap();
        let peer = gone.local_addr().unwrap();
        drop(gone);
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut l = UdpLink::from_socket(s, peer, UdpConfig::default()).unwrap();
        for _ in 0..3 {
            l.send_cells(&[cell(0)]).unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut buf = [[0u8; CELL_LEN]; 1];
        assert_eq!(l.recv_cells(&mut buf).unwrap(), 0);
        assert!(
            l.udp_counters().peer_unreachable >= 1,
            "{:?}",
            l.udp_counters()
        );
    }

    proptest! {
        #[test]
        fn parse_never_panics(d in proptest::collection::vec(any::<u8>(), 0..400)) {
            if let Ok((h, body)) = parse_datagram(&d) {
                prop_assert_eq!(body.len(), usize::from(h.cells) * CELL_LEN);
                prop_assert!(h.cells > 0);
            }
        }

        #[test]
        fn header_round_trip(cells in 1u8.., seq: u32) {
            let mut d = DatagramHeader { cells, seq }.to_bytes().to_vec();
            d.resize(HEADER_LEN + usize::from(cells) * CELL_LEN, 0x5a);
            prop_assert_eq!(parse_datagram(&d).map(|(h, _)| h), Ok(DatagramHeader { cells, seq }));
        }
    }
}

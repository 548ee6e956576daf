//! A TCP cell link: one linux-atm atmtcp frame per cell, as Linux's `atmtcp` driver
//! carries an AAL0 cell.
//!
//! # Framing
//!
//! ```text
//! offset  size  field
//!      0     2  VPI, big-endian     (natm-wire's atmtcp header)
//!      2     2  VCI, big-endian
//!      4     4  length, big-endian, always 52
//!      8     4  the cell's header bytes 1..=4 (GFC/VPI, VCI, PTI, CLP), without the HEC
//!     12    48  the payload
//! ```
//!
//! This is `ATM_AAL0_SDU` (52 bytes) in an atmtcp frame, the way Linux's atmtcp driver
//! hands an AAL0 VC's cells to the `atmtcp` daemon. The frame header's VPI is the header
//! word's top 12 bits (the NNI VPI; GFC and VPI at the UNI) and its VCI the 16 VCI bits.
//! The receiver rebuilds the 5-byte header from the body's 4 bytes and recomputes the HEC
//! (ITU-T I.432.1 §4.3.5), so a TCP link never carries a HEC error.
//!
//! A received frame whose length is not 52, or that is on VC 0.0 (atmtcp control), is
//! counted in [`LinkCounters::rx_malformed`] and skipped; a frame longer than atmtcp's
//! 65535-byte limit ends the link (`InvalidData`), as it ends `atmtcp`'s. A cell to send
//! on VC 0.0 (an unassigned or idle cell) cannot be told from control, so it is counted in
//! [`TcpCellCounters::tx_unassigned`] and not sent.
//!
//! # I/O
//!
//! The socket is non-blocking with `TCP_NODELAY`. `send_cells` appends frames to a write
//! buffer (taking cells while fewer than [`WRITE_BUFFER`] bytes wait) and writes what the
//! socket takes; bytes the socket did not take are written by the next call of any kind
//! (`send_cells(&[])` only flushes), so a caller that stops sending keeps calling until
//! [`TcpCellLink::pending_bytes`] is 0. `recv_cells` decodes whole frames from a read
//! buffer and reads the socket when it runs out. The end of the stream, a reset or a
//! broken pipe is an `io::Error` (`UnexpectedEof`, `ConnectionReset`, `BrokenPipe`) from
//! that call on; cells decoded before it are delivered first.
//!
//! TCP loses nothing, but a receiver off the CPU stops the sender once the socket buffers
//! fill, and a paced line behind it then falls behind its rate (a switch's queue for it
//! fills and drops). [`TcpCellLink::size_buffers`] gives a link of a given rate buffers
//! for [`BUFFER_TIME`] of its cells (twice the frame bytes: the kernel's bookkeeping), as
//! the UDP link does ([`crate::udp`]); a link without a rate keeps the kernel's
//! autotuning, which setting a size would turn off.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use natm_wire::atmtcp::{self as wire, AtmtcpError, HEADER_LEN};
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::net::{RecvFlags, SendFlags};

use crate::cell::{CELL_LEN, CellBytes, CellLink, LinkCounters};
use crate::udp::{BUFFER_TIME, SocketBuffers, size_buffers};

/// The body of one cell's frame: 4 header bytes and 48 payload bytes (`ATM_AAL0_SDU`).
pub const BODY_LEN: usize = 52;
/// One cell's whole frame.
pub const FRAME_LEN: usize = HEADER_LEN + BODY_LEN;
/// Bytes the write buffer holds before `send_cells` stops taking cells.
pub const WRITE_BUFFER: usize = 64 * 1024;
/// The read buffer: room for the largest frame atmtcp allows (which must be read whole to
/// be skipped) and as much again, allocated once.
const READ_BUFFER: usize = 2 * (HEADER_LEN + 65_535);

/// Appends the frame for `cell` to `out`; `false` (nothing appended) for a cell on VC 0.0.
pub fn encode_cell(cell: &CellBytes, out: &mut Vec<u8>) -> bool {
    let word = u32::from_be_bytes([cell[0], cell[1], cell[2], cell[3]]);
    let vpi = (word >> 20) as u16;
    let vci = (word >> 4) as u16;
    if vpi == 0 && vci == 0 {
        return false;
    }
    let header = wire::Header {
        vpi,
        vci,
        length: BODY_LEN as u32,
    };
    out.extend_from_slice(&header.to_bytes());
    out.extend_from_slice(&cell[..4]);
    out.extend_from_slice(&cell[5..]);
    true
}

/// The cell carried by one decoded frame, with its HEC recomputed; `None` if the frame is
/// not a cell frame (control, or a length other than 52).
pub fn decode_cell(frame: &wire::Frame<'_>) -> Option<CellBytes> {
    if frame.header.is_control() {
        return None;
    }
    let body: &[u8; BODY_LEN] = frame.body.try_into().ok()?;
    let mut cell = [0u8; CELL_LEN];
    cell[..4].copy_from_slice(&body[..4]);
    cell[4] = natm_wire::cell::hec([body[0], body[1], body[2], body[3]]);
    cell[5..].copy_from_slice(&body[4..]);
    Some(cell)
}

/// What a TCP cell link counts beyond [`LinkCounters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpCellCounters {
    /// The counters every link has (`rx_malformed` counts frames skipped: control or a
    /// length other than 52).
    pub link: LinkCounters,
    /// Cells on VC 0.0 given to `send_cells`, counted as sent but not carried.
    pub tx_unassigned: u64,
    /// Bytes written to the socket.
    pub tx_bytes: u64,
    /// Bytes read from the socket.
    pub rx_bytes: u64,
}

/// One end of a TCP cell link. See the [module documentation](self).
#[derive(Debug)]
pub struct TcpCellLink {
    stream: TcpStream,
    peer: SocketAddr,
    wbuf: Vec<u8>,
    wpos: usize,
    /// Received bytes: `rbuf[rpos..rend]` are not decoded yet.
    rbuf: Vec<u8>,
    rpos: usize,
    rend: usize,
    /// Set once the stream has ended or failed: every later call returns it again.
    dead: Option<(io::ErrorKind, String)>,
    buffers: SocketBuffers,
    counters: TcpCellCounters,
}

impl TcpCellLink {
    /// Connects to `addr`, waiting at most `timeout` for the connection.
    pub fn connect(addr: SocketAddr, timeout: Duration) -> io::Result<TcpCellLink> {
        TcpCellLink::from_stream(TcpStream::connect_timeout(&addr, timeout)?)
    }

    /// A link over a connected stream (made non-blocking here, with `TCP_NODELAY`).
    pub fn from_stream(stream: TcpStream) -> io::Result<TcpCellLink> {
        stream.set_nonblocking(true)?;
        stream.set_nodelay(true)?;
        let peer = stream.peer_addr()?;
        Ok(TcpCellLink {
            stream,
            peer,
            wbuf: Vec::with_capacity(WRITE_BUFFER + FRAME_LEN),
            wpos: 0,
            rbuf: vec![0; READ_BUFFER],
            rpos: 0,
            rend: 0,
            dead: None,
            buffers: SocketBuffers::default(),
            counters: TcpCellCounters::default(),
        })
    }

    /// Sizes the socket buffers for [`BUFFER_TIME`] of `rate` (nothing for an unlimited
    /// rate); returns what was asked and granted, which the link keeps for
    /// [`TcpCellLink::buffers`].
    pub fn size_buffers(&mut self, rate: natm_core::LineRate) -> io::Result<SocketBuffers> {
        let wanted = rate.cells_per_s().map(|cps| {
            let cells = (u128::from(cps) * BUFFER_TIME.as_micros()).div_ceil(1_000_000);
            usize::try_from(cells * 2 * FRAME_LEN as u128).unwrap_or(usize::MAX)
        });
        self.buffers = size_buffers(&self.stream, wanted)?;
        Ok(self.buffers)
    }

    /// The socket buffers asked for and granted (`wanted` 0: the kernel's own sizing).
    pub fn buffers(&self) -> SocketBuffers {
        self.buffers
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer
    }

    /// All the counters, the TCP-only ones included.
    pub fn tcp_counters(&self) -> TcpCellCounters {
        self.counters
    }

    /// Bytes of accepted cells not yet taken by the socket.
    pub fn pending_bytes(&self) -> usize {
        self.wbuf.len() - self.wpos
    }

    fn check_alive(&self) -> io::Result<()> {
        match &self.dead {
            Some((kind, text)) => Err(io::Error::new(*kind, text.clone())),
            None => Ok(()),
        }
    }

    fn die(&mut self, kind: io::ErrorKind, text: String) -> io::Error {
        self.dead = Some((kind, text.clone()));
        io::Error::new(kind, text)
    }

    /// Writes buffered bytes until the socket refuses more.
    fn flush(&mut self) -> io::Result<()> {
        while self.wpos < self.wbuf.len() {
            match rustix::net::send(&self.stream, &self.wbuf[self.wpos..], SendFlags::NOSIGNAL) {
                Ok(n) => {
                    self.wpos += n;
                    self.counters.tx_bytes += n as u64;
                }
                Err(rustix::io::Errno::AGAIN) => break,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    let e = io::Error::from(e);
                    let text = format!("tcp cell link to {}: send: {e}", self.peer);
                    return Err(self.die(e.kind(), text));
                }
            }
        }
        if self.wpos == self.wbuf.len() {
            self.wbuf.clear();
            self.wpos = 0;
        }
        Ok(())
    }

    /// Decodes whole frames from the read buffer into `buf`; returns cells written.
    fn decode_into(&mut self, buf: &mut [CellBytes]) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match wire::decode(&self.rbuf[self.rpos..self.rend]) {
                Ok(Some((frame, used))) => {
                    match decode_cell(&frame) {
                        Some(cell) => {
                            buf[n] = cell;
                            n += 1;
                        }
                        None => self.counters.link.rx_malformed += 1,
                    }
                    self.rpos += used;
                }
                Ok(None) => break,
                Err(AtmtcpError::GiantPdu { length }) => {
                    let text = format!(
                        "tcp cell link from {}: frame length {length} exceeds atmtcp's 65535",
                        self.peer
                    );
                    return Err(self.die(io::ErrorKind::InvalidData, text));
                }
                Err(e) => {
                    let text = format!("tcp cell link from {}: {e}", self.peer);
                    return Err(self.die(io::ErrorKind::InvalidData, text));
                }
            }
        }
        Ok(n)
    }

    /// Reads what the socket has (one read); `Ok(false)` if nothing was there.
    fn fill(&mut self) -> io::Result<bool> {
        if self.rpos == self.rend {
            self.rpos = 0;
            self.rend = 0;
        } else if self.rend == self.rbuf.len() {
            // What is left is less than one frame (decode_into took every whole one).
            self.rbuf.copy_within(self.rpos..self.rend, 0);
            self.rend -= self.rpos;
            self.rpos = 0;
        }
        if self.rend == self.rbuf.len() {
            // Cannot happen (the buffer holds two of the largest frames), but a full
            // buffer must not read as the end of the stream.
            let text = format!("tcp cell link from {}: read buffer full", self.peer);
            return Err(self.die(io::ErrorKind::InvalidData, text));
        }
        let got = loop {
            match rustix::net::recv(
                &self.stream,
                &mut self.rbuf[self.rend..],
                RecvFlags::empty(),
            ) {
                Ok((n, _)) => break Ok(n),
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => break Err(e),
            }
        };
        match got {
            Ok(0) => {
                let pending = self.rend - self.rpos;
                let text = if pending == 0 {
                    format!("tcp cell link: {} closed the connection", self.peer)
                } else {
                    format!(
                        "tcp cell link: {} closed the connection in the middle of a frame ({pending} bytes held)",
                        self.peer
                    )
                };
                Err(self.die(io::ErrorKind::UnexpectedEof, text))
            }
            Ok(n) => {
                self.rend += n;
                self.counters.rx_bytes += n as u64;
                Ok(true)
            }
            Err(rustix::io::Errno::AGAIN) => Ok(false),
            Err(e) => {
                let e = io::Error::from(e);
                let text = format!("tcp cell link from {}: recv: {e}", self.peer);
                Err(self.die(e.kind(), text))
            }
        }
    }

    /// Whether a whole frame waits in the read buffer.
    fn frame_buffered(&self) -> bool {
        matches!(
            wire::decode(&self.rbuf[self.rpos..self.rend]),
            Ok(Some(_)) | Err(_)
        )
    }

    fn poll_socket(&self, flags: PollFlags, timeout: Option<Duration>) -> io::Result<bool> {
        let ts = timeout.and_then(|t| Timespec::try_from(t).ok());
        let mut fds = [PollFd::new(&self.stream, flags)];
        match poll(&mut fds, ts.as_ref()) {
            Ok(n) => Ok(n > 0),
            Err(rustix::io::Errno::INTR) => Ok(true),
            Err(e) => Err(e.into()),
        }
    }
}

impl CellLink for TcpCellLink {
    fn send_cells(&mut self, cells: &[CellBytes]) -> io::Result<usize> {
        self.check_alive()?;
        self.flush()?;
        let mut taken = 0;
        let mut carried = 0;
        for cell in cells {
            if self.pending_bytes() >= WRITE_BUFFER {
                break;
            }
            if encode_cell(cell, &mut self.wbuf) {
                carried += 1;
            } else {
                self.counters.tx_unassigned += 1;
            }
            taken += 1;
        }
        if taken > 0 {
            self.counters.link.tx_cells += carried;
            self.counters.link.tx_batches += 1;
            self.flush()?;
        }
        Ok(taken)
    }

    fn recv_cells(&mut self, buf: &mut [CellBytes]) -> io::Result<usize> {
        if self.dead.is_some() {
            // Cells decoded before the end are still delivered.
            let n = self.decode_into(buf)?;
            if n > 0 {
                self.counters.link.rx_cells += n as u64;
                self.counters.link.rx_batches += 1;
                return Ok(n);
            }
            self.check_alive()?;
        }
        self.flush()?;
        let mut n = self.decode_into(buf)?;
        while n < buf.len() {
            match self.fill() {
                Ok(true) => n += self.decode_into(&mut buf[n..])?,
                Ok(false) => break,
                Err(e) if n == 0 => return Err(e),
                Err(_) => break,
            }
        }
        if n > 0 {
            self.counters.link.rx_cells += n as u64;
            self.counters.link.rx_batches += 1;
        }
        Ok(n)
    }

    fn wait_recv(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        if self.frame_buffered() || self.dead.is_some() {
            return Ok(true);
        }
        self.flush()?;
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            // While bytes wait to go out, wake when the socket takes them too.
            let flags = if self.pending_bytes() > 0 {
                PollFlags::IN | PollFlags::OUT
            } else {
                PollFlags::IN
            };
            let woke = self.poll_socket(flags, left)?;
            if !woke {
                return Ok(false);
            }
            self.flush()?;
            if flags == PollFlags::IN || self.poll_socket(PollFlags::IN, Some(Duration::ZERO))? {
                return Ok(true);
            }
        }
    }

    fn wait_send(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        self.check_alive()?;
        self.flush()?;
        if self.pending_bytes() < WRITE_BUFFER {
            return Ok(true);
        }
        self.poll_socket(PollFlags::OUT, timeout)
    }

    fn poll_fd(&self) -> Option<BorrowedFd<'_>> {
        Some(self.stream.as_fd())
    }

    fn counters(&self) -> LinkCounters {
        self.counters.link
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atmtcp::{Event, StreamDecoder, Vc};
    use std::net::TcpListener;

    const T: Option<Duration> = Some(Duration::from_secs(10));

    fn cell(i: u32) -> CellBytes {
        let mut c = [0u8; CELL_LEN];
        // VPI 1..=255, VCI 32.., PTI from i, CLP from i.
        let word = ((1 + i % 255) << 20) | ((32 + i % 1000) << 4) | (i % 16);
        c[..4].copy_from_slice(&word.to_be_bytes());
        c[4] = natm_wire::cell::hec([c[0], c[1], c[2], c[3]]);
        for (k, b) in c[5..].iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(31).wrapping_add(k as u8);
        }
        c
    }

    fn pair() -> (TcpCellLink, TcpCellLink) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpCellLink::connect(l.local_addr().unwrap(), Duration::from_secs(5)).unwrap();
        let (s, _) = l.accept().unwrap();
        (a, TcpCellLink::from_stream(s).unwrap())
    }

    #[test]
    fn buffers_are_sized_from_the_rate() {
        let (mut a, _b) = pair();
        // Unlimited: the kernel's autotuning is left alone.
        let before = a.size_buffers(natm_core::LineRate::Unlimited).unwrap();
        assert_eq!((before.wanted, before.shortfall()), (0, None));
        // 10,000 cells/s for 20 ms is 200 frames of 64 bytes, twice.
        let b = a
            .size_buffers(natm_core::LineRate::cells(10_000).unwrap())
            .unwrap();
        assert_eq!(b.wanted, 200 * 2 * FRAME_LEN);
        assert!(b.recv >= b.wanted && b.send >= b.wanted, "{b:?}");
        assert_eq!(a.buffers(), b);
        // 10⁹ cells/s would want 2.5 GB: not granted, and said.
        let b = a
            .size_buffers(natm_core::LineRate::cells(1_000_000_000).unwrap())
            .unwrap();
        assert!(b.shortfall().is_some(), "{b:?}");
    }

    #[test]
    fn frames_are_linux_aal0_cells_and_decode_one_byte_at_a_time() {
        let cells: Vec<CellBytes> = (0..300).map(cell).collect();
        let mut stream = Vec::new();
        for c in &cells {
            assert!(encode_cell(c, &mut stream));
        }
        assert_eq!(stream.len(), cells.len() * FRAME_LEN);
        // The first frame, byte by byte: header 1.32 length 52, then header without HEC.
        assert_eq!(&stream[..8], &[0, 1, 0, 32, 0, 0, 0, 52]);
        assert_eq!(&stream[8..12], &cells[0][..4]);
        assert_eq!(&stream[12..60], &cells[0][5..]);
        // natm-link's atmtcp decoder, fed one byte at a time, sees 52-byte SDUs per VC.
        let mut d = StreamDecoder::new();
        let mut sdus = Vec::new();
        for b in &stream {
            d.push(std::slice::from_ref(b));
            while let Some(ev) = d.next_event().unwrap() {
                sdus.push(ev);
            }
        }
        assert_eq!(sdus.len(), cells.len());
        for (ev, c) in sdus.iter().zip(&cells) {
            let Event::Data { vc, sdu } = ev else {
                panic!("not data: {ev:?}")
            };
            let word = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
            assert_eq!(*vc, Vc::new((word >> 20) as u16, (word >> 4) as u16));
            // Back to a cell: the HEC is recomputed and matches the original.
            let frame = wire::Frame {
                header: wire::Header {
                    vpi: vc.vpi,
                    vci: vc.vci,
                    length: 52,
                },
                body: sdu,
            };
            assert_eq!(decode_cell(&frame).as_ref(), Some(c));
        }
        // A cell on VC 0.0 is not framed.
        assert!(!encode_cell(&[0u8; CELL_LEN], &mut stream));
    }

    #[test]
    fn cells_cross_both_ways_byte_exact_in_any_split() {
        let (mut a, mut b) = pair();
        let cells: Vec<CellBytes> = (0..10_000).map(cell).collect();
        let sender = std::thread::spawn(move || {
            for chunk in cells.chunks(77) {
                assert_eq!(a.send_cells_timeout(chunk, T).unwrap(), chunk.len());
            }
            while a.pending_bytes() > 0 {
                a.wait_send(T).unwrap();
                a.send_cells(&[]).unwrap();
            }
            a
        });
        let mut got = Vec::new();
        let mut buf = [[0u8; CELL_LEN]; 50];
        while got.len() < 10_000 {
            let n = b.recv_cells_timeout(&mut buf, T).unwrap();
            assert!(n > 0, "timed out after {}", got.len());
            got.extend_from_slice(&buf[..n]);
        }
        let mut a = sender.join().unwrap();
        assert!(got.iter().enumerate().all(|(i, c)| *c == cell(i as u32)));
        assert_eq!(b.counters().rx_cells, 10_000);
        assert_eq!(a.counters().tx_cells, 10_000);
        // And back.
        assert_eq!(b.send_cells_timeout(&got[..10], T).unwrap(), 10);
        let n = a.recv_cells_timeout(&mut buf, T).unwrap();
        assert!(n > 0 && buf[..n] == got[..n]);
    }

    #[test]
    fn malformed_frames_are_counted_and_skipped_and_eof_is_an_error() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut raw = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let mut link = TcpCellLink::from_stream(s).unwrap();
        let mut bytes = Vec::new();
        // A control frame, a 10-byte data frame, then a good cell.
        crate::atmtcp::Event::Close { vc: Vc::new(1, 42) }
            .to_frame()
            .iter()
            .for_each(|b| bytes.push(*b));
        wire::encode_data(1, 42, &[0u8; 10], &mut bytes).unwrap();
        // The largest frame atmtcp allows, twice, then a good cell.
        wire::encode_data(1, 42, &[9u8; 65_535], &mut bytes).unwrap();
        wire::encode_data(1, 43, &[8u8; 65_535], &mut bytes).unwrap();
        assert!(encode_cell(&cell(7), &mut bytes));
        // Half a frame more, then the peer closes.
        bytes.extend_from_slice(&[0, 1, 0, 40, 0, 0]);
        // From another thread: more than a socket buffer may hold before the link reads.
        let writer = std::thread::spawn(move || {
            std::io::Write::write_all(&mut raw, &bytes).unwrap();
        });
        let mut buf = [[0u8; CELL_LEN]; 4];
        let n = link.recv_cells_timeout(&mut buf, T).unwrap();
        assert_eq!(&buf[..n], &[cell(7)]);
        assert_eq!(link.counters().rx_malformed, 4);
        writer.join().unwrap();
        let e = loop {
            match link.recv_cells(&mut buf) {
                Ok(0) => {
                    link.wait_recv(T).unwrap();
                }
                Ok(n) => panic!("{n} cells from nowhere"),
                Err(e) => break e,
            }
        };
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert!(e.to_string().contains("middle of a frame"), "{e}");
        // And stays dead.
        assert_eq!(
            link.recv_cells(&mut buf).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        assert!(link.send_cells(&[cell(1)]).is_err());
    }

    #[test]
    fn a_giant_frame_ends_the_link_and_unassigned_cells_are_not_sent() {
        let (mut a, mut b) = pair();
        assert_eq!(a.send_cells(&[[0u8; CELL_LEN], cell(3)]).unwrap(), 2);
        assert_eq!(a.tcp_counters().tx_unassigned, 1);
        let mut buf = [[0u8; CELL_LEN]; 4];
        let n = b.recv_cells_timeout(&mut buf, T).unwrap();
        assert_eq!(&buf[..n], &[cell(3)]);
        std::io::Write::write_all(
            &mut a.stream.try_clone().unwrap(),
            &[0, 1, 0, 1, 0, 1, 0, 0],
        )
        .unwrap();
        let e = loop {
            match b.recv_cells(&mut buf) {
                Ok(_) => {
                    b.wait_recv(T).unwrap();
                }
                Err(e) => break e,
            }
        };
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }
}

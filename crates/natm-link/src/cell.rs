//! The link trait: something that carries 53-byte cells, in batches, in both directions.
//!
//! # Call contract
//!
//! * [`send_cells`](CellLink::send_cells) and [`recv_cells`](CellLink::recv_cells) never
//!   wait. They move as many cells as the link takes or has *now* and say how many; `Ok(0)`
//!   means "full" or "nothing yet", not an error. Cells are whole: a link never splits one.
//! * [`wait_recv`](CellLink::wait_recv) and [`wait_send`](CellLink::wait_send) wait until
//!   the next call would make progress, or the timeout passes (`None`: no limit). They may
//!   wake early (a spurious `true`); callers loop.
//! * [`recv_cells_timeout`](CellLink::recv_cells_timeout) and
//!   [`send_cells_timeout`](CellLink::send_cells_timeout) are the blocking forms built from
//!   the two above.
//! * [`poll_fd`](CellLink::poll_fd) is the descriptor to hand to epoll (readable: cells may
//!   be waiting), where the link has one; a caller that uses it still drains with
//!   `recv_cells` until `Ok(0)`.
//! * A link carries cells as they are: it neither checks nor fills the HEC (the receiver
//!   runs natm-wire's `HecReceiver`) and preserves the order of the cells it delivers.
//!   It may lose cells (UDP can), and says so in its counters.
//!
//! # How the implementations fit
//!
//! * UDP ([`UdpLink`](crate::udp::UdpLink)): `send_cells` puts up to a configured number of
//!   cells in each datagram, up to 32 datagrams per `sendmmsg` (and, when configured to,
//!   holds the cells of an unfinished AAL5 frame briefly for a fuller datagram); `recv_cells` takes datagrams until the buffer is full (a
//!   datagram that does not fit is kept for the next call); the fd is the socket.
//! * Shared memory ([`ShmLink`](crate::shm::ShmLink)): natm-nic's ring pair in a memfd.
//!   `send_cells` copies into free slots of the transmit ring and publishes them with one
//!   release store, returning how many fit; `recv_cells` copies out of the receive ring;
//!   the waits block on an eventfd (or poll, by choice), which is also `poll_fd`. Nothing
//!   in the trait assumes a socket or a datagram.
//! * Emulation ([`Emulated`](crate::emulated::Emulated)) wraps any of them: cells sent
//!   cross a natm-netem line (rate, loss, bit errors, delay) before the inner link takes
//!   them.
//! * TCP in atmtcp framing is *not* a `CellLink`: atmtcp carries SDUs, not cells (see
//!   [`atmtcp`](crate::atmtcp)).

use std::io;
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

/// Bytes in a cell.
pub const CELL_LEN: usize = natm_wire::cell::CELL_LEN;

/// One cell: 5 header bytes (HEC included) and 48 payload bytes.
pub use natm_wire::cell::CellBytes;

/// What every link counts. Links with more to say keep their own counters as well.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Cells sent.
    pub tx_cells: u64,
    /// Batches sent (datagrams, ring publications).
    pub tx_batches: u64,
    /// Cells received and delivered.
    pub rx_cells: u64,
    /// Batches received and accepted.
    pub rx_batches: u64,
    /// Batches received and refused as malformed (nothing in them is delivered).
    pub rx_malformed: u64,
    /// Batches known lost on the way (from sequence gaps).
    pub rx_lost: u64,
}

/// A link that carries 53-byte cells. See the [module documentation](self) for the
/// contract.
pub trait CellLink {
    /// Send a prefix of `cells` without waiting; returns how many were sent (0: the link
    /// cannot take any now).
    fn send_cells(&mut self, cells: &[CellBytes]) -> io::Result<usize>;

    /// Receive up to `buf.len()` cells without waiting; returns how many were written to
    /// the front of `buf` (0: none waiting).
    fn recv_cells(&mut self, buf: &mut [CellBytes]) -> io::Result<usize>;

    /// Wait until cells may be waiting, at most `timeout`; `false` if the time ran out.
    fn wait_recv(&mut self, timeout: Option<Duration>) -> io::Result<bool>;

    /// Wait until the link may take cells, at most `timeout`; `false` if the time ran out.
    fn wait_send(&mut self, timeout: Option<Duration>) -> io::Result<bool>;

    /// The descriptor that becomes readable when cells arrive, for epoll, if there is one.
    fn poll_fd(&self) -> Option<BorrowedFd<'_>>;

    /// The counters so far.
    fn counters(&self) -> LinkCounters;

    /// Receive at least one cell, waiting at most `timeout`; 0 only if the time ran out.
    fn recv_cells_timeout(
        &mut self,
        buf: &mut [CellBytes],
        timeout: Option<Duration>,
    ) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let n = self.recv_cells(buf)?;
            if n > 0 {
                return Ok(n);
            }
            let left = remaining(deadline);
            if left.is_some_and(|l| l.is_zero()) || !self.wait_recv(left)? {
                return Ok(0);
            }
        }
    }

    /// Send all of `cells`, waiting at most `timeout` for room; returns how many were sent
    /// (fewer than `cells.len()` only if the time ran out).
    fn send_cells_timeout(
        &mut self,
        cells: &[CellBytes],
        timeout: Option<Duration>,
    ) -> io::Result<usize> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut sent = 0;
        while sent < cells.len() {
            let n = self.send_cells(&cells[sent..])?;
            sent += n;
            if n == 0 {
                let left = remaining(deadline);
                if left.is_some_and(|l| l.is_zero()) || !self.wait_send(left)? {
                    break;
                }
            }
        }
        Ok(sent)
    }
}

/// A boxed link is a link (so that an [`Emulated`](crate::emulated::Emulated) can wrap a
/// link chosen at run time): every call goes to the box's link.
impl<L: CellLink + ?Sized> CellLink for Box<L> {
    fn send_cells(&mut self, cells: &[CellBytes]) -> io::Result<usize> {
        (**self).send_cells(cells)
    }

    fn recv_cells(&mut self, buf: &mut [CellBytes]) -> io::Result<usize> {
        (**self).recv_cells(buf)
    }

    fn wait_recv(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        (**self).wait_recv(timeout)
    }

    fn wait_send(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        (**self).wait_send(timeout)
    }

    fn poll_fd(&self) -> Option<BorrowedFd<'_>> {
        (**self).poll_fd()
    }

    fn counters(&self) -> LinkCounters {
        (**self).counters()
    }

    fn recv_cells_timeout(
        &mut self,
        buf: &mut [CellBytes],
        timeout: Option<Duration>,
    ) -> io::Result<usize> {
        (**self).recv_cells_timeout(buf, timeout)
    }

    fn send_cells_timeout(
        &mut self,
        cells: &[CellBytes],
        timeout: Option<Duration>,
    ) -> io::Result<usize> {
        (**self).send_cells_timeout(cells, timeout)
    }
}

fn remaining(deadline: Option<Instant>) -> Option<Duration> {
    deadline.map(|d| d.saturating_duration_since(Instant::now()))
}

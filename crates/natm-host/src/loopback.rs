//! [`LoopLink`]: a link that hands every cell sent back to its own receiver, as a
//! loopback plug on a line card would. For tests, examples and `natm lab` setups with one
//! host: a host daemon on a `LoopLink` receives its own cells, so an application that
//! opens a VC reads back what it sends, and an end-to-end OAM loopback request comes back
//! to it and is answered by it.
//!
//! It holds at most `capacity` cells; `send_cells` takes what fits (0 when full), as every
//! link does. No descriptor to poll: callers that sleep wake on their own deadlines.

use std::collections::VecDeque;
use std::io;
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use natm_link::endpoint::EndpointLink;
use natm_link::{CellBytes, CellLink, LinkCounters};

/// A link whose transmit side feeds its receive side. See the [module docs](self).
pub struct LoopLink {
    cells: VecDeque<CellBytes>,
    capacity: usize,
    counters: LinkCounters,
}

impl LoopLink {
    /// A loopback holding up to `capacity` cells (at least 1).
    pub fn new(capacity: usize) -> LoopLink {
        LoopLink {
            cells: VecDeque::new(),
            capacity: capacity.max(1),
            counters: LinkCounters::default(),
        }
    }
}

impl CellLink for LoopLink {
    fn send_cells(&mut self, cells: &[CellBytes]) -> io::Result<usize> {
        let n = cells.len().min(self.capacity - self.cells.len());
        self.cells.extend(&cells[..n]);
        if n > 0 {
            self.counters.tx_cells += n as u64;
            self.counters.tx_batches += 1;
        }
        Ok(n)
    }

    fn recv_cells(&mut self, buf: &mut [CellBytes]) -> io::Result<usize> {
        let n = buf.len().min(self.cells.len());
        for (slot, c) in buf.iter_mut().zip(self.cells.drain(..n)) {
            *slot = c;
        }
        if n > 0 {
            self.counters.rx_cells += n as u64;
            self.counters.rx_batches += 1;
        }
        Ok(n)
    }

    fn wait_recv(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        // Nobody else feeds it: cells are there now or not until this side sends.
        if self.cells.is_empty() {
            if let Some(t) = timeout {
                std::thread::sleep(t.min(Duration::from_millis(1)));
            }
            return Ok(false);
        }
        Ok(true)
    }

    fn wait_send(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        let deadline = timeout.map(|t| Instant::now() + t);
        Ok(self.cells.len() < self.capacity || deadline.is_some_and(|d| d > Instant::now()))
    }

    fn poll_fd(&self) -> Option<BorrowedFd<'_>> {
        None
    }

    fn counters(&self) -> LinkCounters {
        self.counters
    }
}

impl EndpointLink for LoopLink {
    fn next_due(&self) -> Option<Instant> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_come_back_in_order_and_a_full_loop_refuses() {
        let mut l = LoopLink::new(3);
        let c = |i: u8| [i; 53];
        assert_eq!(l.send_cells(&[c(1), c(2), c(3), c(4)]).unwrap(), 3);
        assert_eq!(l.send_cells(&[c(4)]).unwrap(), 0);
        let mut buf = [[0u8; 53]; 2];
        assert_eq!(l.recv_cells(&mut buf).unwrap(), 2);
        assert_eq!(buf, [c(1), c(2)]);
        assert_eq!(l.send_cells(&[c(4)]).unwrap(), 1);
        assert_eq!(l.recv_cells(&mut buf).unwrap(), 2);
        assert_eq!(buf, [c(3), c(4)]);
        assert_eq!(l.counters().tx_cells, 4);
        assert_eq!(l.counters().rx_cells, 4);
    }
}

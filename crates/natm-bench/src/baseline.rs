//! The kernel baseline of `natm perf link`: TCP over loopback, one writer thread and one
//! reader thread, each writing or reading messages of the SDU size, for a fixed time.
//!
//! It is the same shape as `iperf3 -c 127.0.0.1 -l SIZE`: the writer loops on `write_all`
//! of one buffer (no per-message work of its own, as natm's sender reposts the same
//! buffers), the reader loops on `read` into one buffer of the same size. Both threads are
//! pinned the way natm's are, so the two figures differ by the path, not the placement.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use super::pin;

/// What one timed run moved.
#[derive(Clone, Copy, Debug)]
pub struct Moved {
    /// Bytes delivered to the receiving application.
    pub bytes: u64,
    /// From the first byte offered to the last byte delivered.
    pub elapsed: Duration,
}

impl Moved {
    /// Goodput in bits per second.
    pub fn bits_per_sec(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Runs kernel TCP over 127.0.0.1 for `time` with `size`-byte writes and reads; the
/// threads are placed on `cpus` (writer, reader) when given.
pub fn tcp_loopback(
    size: usize,
    time: Duration,
    cpus: Option<(usize, usize)>,
) -> io::Result<Moved> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let reader = thread::spawn(move || -> io::Result<(u64, Instant)> {
        pin(cpus.map(|c| c.1));
        let (mut stream, _) = listener.accept()?;
        let mut buf = vec![0u8; size];
        let mut total = 0u64;
        loop {
            match stream.read(&mut buf) {
                Ok(0) => return Ok((total, Instant::now())),
                Ok(n) => total += n as u64,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    });
    pin(cpus.map(|c| c.0));
    let mut writer = TcpStream::connect(addr)?;
    writer.set_nodelay(true)?;
    let buf = vec![0x5au8; size];
    let start = Instant::now();
    while start.elapsed() < time {
        // Check the clock every few writes: a syscall per write already dominates.
        for _ in 0..16 {
            writer.write_all(&buf)?;
        }
    }
    writer.shutdown(Shutdown::Write)?;
    let (bytes, end) = reader
        .join()
        .map_err(|_| io::Error::other("the TCP reader thread panicked"))??;
    Ok(Moved {
        bytes,
        elapsed: end.duration_since(start),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_baseline_delivers_everything_it_wrote() {
        let m = tcp_loopback(1000, Duration::from_millis(50), None).unwrap();
        // Whole batches of 16 writes of 1000 bytes, every one delivered.
        assert!(m.bytes > 0 && m.bytes.is_multiple_of(16_000), "{m:?}");
        assert!(m.bits_per_sec() > 0.0);
    }
}

//! The kernel's loopback transports, the baselines of `natm perf rr` and `natm perf stream`:
//!
//! * [`UdpTransport`]: connected UDP sockets on 127.0.0.1, one datagram per message;
//! * [`TcpTransport`]: TCP on 127.0.0.1 with `TCP_NODELAY`, each message behind a 4-byte
//!   big-endian length (a length of 0 is the end marker), read through a 64 KiB buffer so
//!   that small messages cost one `read` per batch, not two per message;
//! * [`SeqpacketTransport`]: a Unix `SOCK_SEQPACKET` socket pair, one record per message.
//!
//! Each is what an application would write with the sockets API and no tuning beyond
//! `TCP_NODELAY`: default socket buffers, blocking calls. They follow the call contract of
//! [`Transport`]; a datagram or record longer than the receive buffer is an error (detected
//! with `MSG_TRUNC`), as is a TCP length above the buffer.

use std::io::{self, BufReader, IoSlice, Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use rustix::net::{self as rnet, RecvFlags, SendFlags};

use super::transport::Transport;

/// A timeout as the engine sees it: the OS says `EAGAIN` for `SO_RCVTIMEO`.
fn timed_out(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::WouldBlock {
        io::Error::new(io::ErrorKind::TimedOut, "no message before the timeout")
    } else {
        e
    }
}

/// A message longer than the buffer offered for it.
fn too_long(len: usize, buf: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("a message of {len} bytes does not fit a {buf}-byte buffer"),
    )
}

/// `recv(2)` of one whole datagram or record, refusing a truncated one.
fn recv_whole(fd: impl AsFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match rnet::recv(&fd, &mut *buf, RecvFlags::TRUNC) {
            Ok((_, len)) if len > buf.len() => return Err(too_long(len, buf.len())),
            Ok((got, _)) => return Ok(got),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(timed_out(e.into())),
        }
    }
}

/// One end of a connected UDP pair.
pub struct UdpTransport {
    socket: UdpSocket,
}

/// Two UDP sockets on 127.0.0.1, each connected to the other.
pub fn udp_pair() -> io::Result<(UdpTransport, UdpTransport)> {
    let a = UdpSocket::bind("127.0.0.1:0")?;
    let b = UdpSocket::bind("127.0.0.1:0")?;
    a.connect(b.local_addr()?)?;
    b.connect(a.local_addr()?)?;
    Ok((UdpTransport { socket: a }, UdpTransport { socket: b }))
}

impl Transport for UdpTransport {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        loop {
            match self.socket.send(msg) {
                Ok(n) if n == msg.len() => return Ok(()),
                Ok(n) => {
                    return Err(io::Error::other(format!(
                        "UDP sent {n} of {} bytes",
                        msg.len()
                    )));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        recv_whole(&self.socket, buf)
    }

    fn set_recv_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.socket.set_read_timeout(timeout)
    }

    fn name(&self) -> String {
        "kernel UDP over 127.0.0.1".into()
    }
}

/// One end of a TCP connection carrying length-prefixed messages.
pub struct TcpTransport {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    /// A timeout cut a message short: the byte stream is out of step for good.
    broken: bool,
}

/// Buffer of the TCP reader.
const TCP_READ_BUFFER: usize = 64 * 1024;

/// A TCP connection over 127.0.0.1, `TCP_NODELAY` on both ends.
pub fn tcp_pair() -> io::Result<(TcpTransport, TcpTransport)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let a = TcpStream::connect(listener.local_addr()?)?;
    let (b, _) = listener.accept()?;
    Ok((TcpTransport::new(a)?, TcpTransport::new(b)?))
}

impl TcpTransport {
    fn new(stream: TcpStream) -> io::Result<TcpTransport> {
        stream.set_nodelay(true)?;
        let writer = stream.try_clone()?;
        Ok(TcpTransport {
            reader: BufReader::with_capacity(TCP_READ_BUFFER, stream),
            writer,
            broken: false,
        })
    }

    /// Reads exactly `buf`; a timeout here leaves the stream out of step.
    fn read_rest(&mut self, buf: &mut [u8]) -> io::Result<()> {
        let result = self.reader.read_exact(buf);
        if let Err(e) = &result
            && matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            )
        {
            self.broken = true;
        }
        result
    }
}

impl Transport for TcpTransport {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        let len = u32::try_from(msg.len())
            .map_err(|_| io::Error::other(format!("a {}-byte message", msg.len())))?;
        let header = len.to_be_bytes();
        // One writev for the header and the message, so that TCP_NODELAY does not send
        // the header in a segment of its own.
        let total = header.len() + msg.len();
        let mut done = 0;
        while done < total {
            let n = if done < header.len() {
                match self
                    .writer
                    .write_vectored(&[IoSlice::new(&header[done..]), IoSlice::new(msg)])
                {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            } else {
                match self.writer.write(&msg[done - header.len()..]) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            };
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            done += n;
        }
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.broken {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "an earlier timeout cut a TCP message short",
            ));
        }
        let mut header = [0u8; 4];
        // The first byte alone: a timeout before it consumed nothing.
        let first = loop {
            match self.reader.read(&mut header[..1]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(timed_out(e)),
            }
        };
        if first == 0 {
            return Ok(0);
        }
        self.read_rest(&mut header[1..])?;
        let len = u32::from_be_bytes(header) as usize;
        if len > buf.len() {
            self.broken = true;
            return Err(too_long(len, buf.len()));
        }
        self.read_rest(&mut buf[..len])?;
        Ok(len)
    }

    fn set_recv_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.reader.get_ref().set_read_timeout(timeout)
    }

    fn name(&self) -> String {
        "kernel TCP over 127.0.0.1 (length-prefixed, TCP_NODELAY)".into()
    }
}

/// One end of a Unix `SOCK_SEQPACKET` pair.
pub struct SeqpacketTransport {
    fd: OwnedFd,
}

/// A connected `SOCK_SEQPACKET` socket pair.
pub fn seqpacket_pair() -> io::Result<(SeqpacketTransport, SeqpacketTransport)> {
    let (a, b) = rnet::socketpair(
        rnet::AddressFamily::UNIX,
        rnet::SocketType::SEQPACKET,
        rnet::SocketFlags::CLOEXEC,
        None,
    )?;
    Ok((SeqpacketTransport { fd: a }, SeqpacketTransport { fd: b }))
}

impl Transport for SeqpacketTransport {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        loop {
            match rnet::send(&self.fd, msg, SendFlags::NOSIGNAL) {
                Ok(n) if n == msg.len() => return Ok(()),
                Ok(n) => {
                    return Err(io::Error::other(format!(
                        "SOCK_SEQPACKET sent {n} of {} bytes",
                        msg.len()
                    )));
                }
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        recv_whole(&self.fd, buf)
    }

    fn set_recv_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        rnet::sockopt::set_socket_timeout(&self.fd, rnet::sockopt::Timeout::Recv, timeout)?;
        Ok(())
    }

    fn name(&self) -> String {
        "kernel Unix SOCK_SEQPACKET pair".into()
    }
}

#[cfg(test)]
mod tests {
    use super::super::transport::{SEQPACKET_MAX, UDP_MAX};
    use super::*;

    fn pairs() -> Vec<(Box<dyn Transport>, Box<dyn Transport>)> {
        let (ua, ub) = udp_pair().unwrap();
        let (ta, tb) = tcp_pair().unwrap();
        let (sa, sb) = seqpacket_pair().unwrap();
        vec![
            (Box::new(ua), Box::new(ub)),
            (Box::new(ta), Box::new(tb)),
            (Box::new(sa), Box::new(sb)),
        ]
    }

    #[test]
    fn every_kernel_transport_keeps_message_boundaries() {
        for (mut a, mut b) in pairs() {
            let mut buf = vec![0u8; 100];
            for len in [1usize, 7, 100] {
                let msg: Vec<u8> = (0..len).map(|i| i as u8).collect();
                a.send(&msg).unwrap();
                assert_eq!(b.recv(&mut buf).unwrap(), len, "{}", a.name());
                assert_eq!(&buf[..len], &msg[..]);
            }
            // Both ways, and the empty end marker.
            b.send(b"back").unwrap();
            assert_eq!(a.recv(&mut buf).unwrap(), 4);
            a.send(&[]).unwrap();
            assert_eq!(b.recv(&mut buf).unwrap(), 0, "{}", a.name());
        }
    }

    #[test]
    fn a_message_longer_than_the_buffer_is_an_error_not_a_cut() {
        for (mut a, mut b) in pairs() {
            a.send(&[1u8; 50]).unwrap();
            let mut small = [0u8; 10];
            let e = b.recv(&mut small).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{}", a.name());
            assert!(e.to_string().contains("50 bytes"), "{e}");
        }
    }

    #[test]
    fn an_idle_receiver_times_out_and_stays_usable() {
        for (mut a, mut b) in pairs() {
            b.set_recv_timeout(Some(Duration::from_millis(20))).unwrap();
            let mut buf = [0u8; 16];
            let e = b.recv(&mut buf).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{}", a.name());
            a.send(b"after").unwrap();
            assert_eq!(b.recv(&mut buf).unwrap(), 5, "{}", a.name());
        }
    }

    #[test]
    fn the_largest_messages_each_kind_claims_go_through() {
        let (mut a, mut b) = udp_pair().unwrap();
        let mut buf = vec![0u8; SEQPACKET_MAX];
        a.send(&vec![3u8; UDP_MAX]).unwrap();
        assert_eq!(b.recv(&mut buf).unwrap(), UDP_MAX);
        let (mut a, mut b) = seqpacket_pair().unwrap();
        a.send(&vec![4u8; SEQPACKET_MAX]).unwrap();
        assert_eq!(b.recv(&mut buf).unwrap(), SEQPACKET_MAX);
    }

    #[test]
    fn a_closed_tcp_peer_reads_as_the_end() {
        let (a, mut b) = tcp_pair().unwrap();
        drop(a);
        assert_eq!(b.recv(&mut [0u8; 8]).unwrap(), 0);
    }
}

//! A TCP link in linux-atm's atmtcp framing: a frame-level endpoint that interworks with
//! linux-atm's `atmtcp` program (port 2812 by default).
//!
//! atmtcp carries whole AAL SDUs per VC, not cells: every frame is natm-wire's
//! [`atmtcp`](natm_wire::atmtcp) header (`vpi: BE16, vci: BE16, length: BE32`) and one SDU,
//! and VC 0.0 carries text control, `O vpi.vci addr qos` to open a VC and `C vpi.vci` to
//! close one. So this link is not a [`CellLink`](crate::CellLink): it sends SDUs
//! ([`AtmtcpLink::send_sdu`]) and hands back [`Event`]s ([`AtmtcpLink::recv`]).
//!
//! What linux-atm's `atmtcp` 2.5.1 does with these frames (checked against the program):
//! it prints or records data on any VC whether or not it was opened; it parses `O`/`C` with
//! `text2atm`/`text2qos`, logs them (with `-d`) and forwards them to a relay peer as
//! `O <itf.vpi.vci> <qos2text>`, e.g. `O 1.42 0.1.42 ubr,aal5:max_sdu=8192`; it never
//! answers an open; it ignores a control message it does not recognise
//! ("unrecognized control message"); and it drops the connection on a frame longer than
//! 65535 bytes ("giant PDU"). This endpoint behaves the same way: unknown control text is an
//! [`Event::BadControl`] (counted, the link goes on), a giant PDU or a peer closing in the
//! middle of a frame ends the link with a [`CloseReason`].
//!
//! The byte-stream decoding is [`StreamDecoder`], which does no I/O and can be fed any
//! split of the stream.

use std::collections::BTreeSet;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use natm_core::id::{VcId, Vci, Vpi};
use natm_wire::atmtcp::{self as wire, AtmtcpError, Control, HEADER_LEN, MAX_LEN};

/// A VC as atmtcp carries it: any 16-bit VPI and VCI (the header has 16 bits for each, wider
/// than an NNI VPI, so this is not [`VcId`]; convert with `From`/`TryFrom`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Vc {
    /// VPI.
    pub vpi: u16,
    /// VCI.
    pub vci: u16,
}

impl Vc {
    /// VC 0.0, which carries control and never data.
    pub const CONTROL: Vc = Vc { vpi: 0, vci: 0 };

    /// A VC from its numbers.
    pub const fn new(vpi: u16, vci: u16) -> Vc {
        Vc { vpi, vci }
    }
}

impl fmt::Display for Vc {
    /// linux-atm's `vpi.vci`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.vpi, self.vci)
    }
}

impl From<VcId> for Vc {
    fn from(id: VcId) -> Vc {
        Vc::new(id.vpi.get(), id.vci.get())
    }
}

impl TryFrom<Vc> for VcId {
    type Error = natm_core::id::IdError;
    fn try_from(vc: Vc) -> Result<VcId, Self::Error> {
        Ok(VcId::new(Vpi::nni(vc.vpi.into())?, Vci::from_u16(vc.vci)))
    }
}

/// What arrives on an atmtcp link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// One SDU on a VC (not 0.0).
    Data {
        /// The VC.
        vc: Vc,
        /// The SDU, byte for byte.
        sdu: Vec<u8>,
    },
    /// The peer opened a VC (`O vpi.vci addr qos`).
    Open {
        /// The VC.
        vc: Vc,
        /// The address word as sent (linux-atm `text2atm` text, e.g. `0.1.42`).
        addr: String,
        /// The QoS word as sent (qos(7) text, e.g. `ubr,aal5:max_sdu=8192`).
        qos: String,
    },
    /// The peer closed a VC (`C vpi.vci`).
    Close {
        /// The VC.
        vc: Vc,
    },
    /// A control frame that is neither `O` nor `C` in the expected form. `atmtcp` logs and
    /// ignores these; so may the caller. The link goes on.
    BadControl {
        /// Why it was not understood.
        reason: &'static str,
        /// The control body as received.
        body: Vec<u8>,
    },
}

impl Event {
    /// The body's length on the wire (SDU or control text), for printing.
    pub fn wire_len(&self) -> usize {
        self.to_frame().len() - HEADER_LEN
    }

    /// The whole frame this event was decoded from (header and body), re-encoded. `Open`
    /// and `Close` give back the text as natm-wire formats it (single spaces), which is what
    /// `atmtcp` sends; other spacing the peer may have used is not kept.
    pub fn to_frame(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let r = match self {
            Event::Data { vc, sdu } => wire::encode_data(vc.vpi, vc.vci, sdu, &mut out),
            Event::Open { vc, addr, qos } => Control::Open {
                vpi: vc.vpi,
                vci: vc.vci,
                addr: addr.clone(),
                qos: qos.clone(),
            }
            .encode(&mut out),
            Event::Close { vc } => Control::Close {
                vpi: vc.vpi,
                vci: vc.vci,
            }
            .encode(&mut out),
            Event::BadControl { body, .. } => {
                out.extend_from_slice(
                    &wire::Header {
                        vpi: 0,
                        vci: 0,
                        length: body.len() as u32,
                    }
                    .to_bytes(),
                );
                out.extend_from_slice(body);
                Ok(())
            }
        };
        debug_assert!(r.is_ok(), "a decoded event re-encodes");
        out
    }
}

/// Why an atmtcp link ended. After any of these the link sends and receives nothing more.
#[derive(Debug, thiserror::Error)]
pub enum CloseReason {
    /// The peer closed the connection between frames: a clean end.
    #[error("peer closed the connection")]
    PeerClosed,
    /// The peer closed the connection in the middle of a frame.
    #[error("peer closed the connection in the middle of a frame ({have} of {need} bytes)")]
    Truncated {
        /// Bytes of the frame received.
        have: usize,
        /// Bytes the frame needed (header included; 8 while the header itself is short).
        need: usize,
    },
    /// A frame longer than 65535 bytes, which `atmtcp` refuses too ("giant PDU").
    #[error("giant PDU: length {length} exceeds {MAX_LEN}")]
    GiantPdu {
        /// The header's length field.
        length: u32,
    },
    /// A framing error other than a giant PDU.
    #[error("{0}")]
    Framing(AtmtcpError),
    /// This end closed the link ([`AtmtcpLink::shutdown`]).
    #[error("link shut down locally")]
    Local,
    /// A socket error.
    #[error("socket error: {0}")]
    Io(#[from] io::Error),
}

/// An error from a send or receive.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The link has ended (now or earlier), for this reason.
    #[error("atmtcp link closed: {0}")]
    Closed(CloseReason),
    /// Data cannot be sent on VC 0.0.
    #[error("atmtcp data cannot use VC 0.0 (control)")]
    DataOnControlVc,
    /// An SDU (or a control text) longer than 65535 bytes.
    #[error("{len} bytes exceed atmtcp's limit of {MAX_LEN}")]
    TooLong {
        /// Bytes given.
        len: usize,
    },
    /// Another refusal of natm-wire's atmtcp encoder.
    #[error("{0}")]
    Encode(AtmtcpError),
    /// An address or QoS word for an open that would not survive the peer's
    /// `sscanf("O %d.%d %s %s")`: empty or containing white space.
    #[error("open of {vc}: {what} {text:?} must be one word")]
    BadWord {
        /// The VC.
        vc: Vc,
        /// `"address"` or `"qos"`.
        what: &'static str,
        /// The text given.
        text: String,
    },
}

impl From<AtmtcpError> for LinkError {
    /// What natm-wire's encoders refuse, in the link's terms.
    fn from(e: AtmtcpError) -> LinkError {
        match e {
            AtmtcpError::DataOnControlVc => LinkError::DataOnControlVc,
            AtmtcpError::BodyTooLong { len } => LinkError::TooLong { len },
            // The encoders report nothing else today; should they, pass it on unchanged.
            e => LinkError::Encode(e),
        }
    }
}

/// What a link has carried, for `natm stat` and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtmtcpCounters {
    /// Data frames sent.
    pub tx_sdus: u64,
    /// SDU bytes sent (headers not counted).
    pub tx_bytes: u64,
    /// Control frames sent (`O` and `C`).
    pub tx_control: u64,
    /// Data frames received.
    pub rx_sdus: u64,
    /// SDU bytes received.
    pub rx_bytes: u64,
    /// `O` and `C` frames received.
    pub rx_control: u64,
    /// Control frames received that were neither.
    pub rx_bad_control: u64,
}

/// The atmtcp byte stream, decoded: push bytes as they arrive, in any split, then take
/// events until it says more bytes are needed. No I/O; never panics on any input.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    buf: Vec<u8>,
    start: usize,
}

impl StreamDecoder {
    /// An empty decoder.
    pub fn new() -> StreamDecoder {
        StreamDecoder::default()
    }

    /// Append received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start >= 64 * 1024 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next event, `Ok(None)` when the next frame is not complete yet, or the giant PDU
    /// that ends the stream (every later call returns it again).
    pub fn next_event(&mut self) -> Result<Option<Event>, CloseReason> {
        let rest = &self.buf[self.start..];
        let (frame, used) = match wire::decode(rest) {
            Ok(Some(f)) => f,
            Ok(None) => return Ok(None),
            Err(AtmtcpError::GiantPdu { length }) => return Err(CloseReason::GiantPdu { length }),
            // natm-wire's decoder reports no other error today; if it ever does, the
            // stream ends with it rather than the process.
            Err(e) => return Err(CloseReason::Framing(e)),
        };
        let vc = Vc::new(frame.header.vpi, frame.header.vci);
        let event = if frame.header.is_control() {
            match Control::parse(frame.body) {
                Ok(Control::Open {
                    vpi,
                    vci,
                    addr,
                    qos,
                }) => Event::Open {
                    vc: Vc::new(vpi, vci),
                    addr,
                    qos,
                },
                Ok(Control::Close { vpi, vci }) => Event::Close {
                    vc: Vc::new(vpi, vci),
                },
                Err(e) => Event::BadControl {
                    reason: match e {
                        AtmtcpError::BadControl { reason, .. } => reason,
                        _ => "not a control message",
                    },
                    body: frame.body.to_vec(),
                },
            }
        } else {
            Event::Data {
                vc,
                sdu: frame.body.to_vec(),
            }
        };
        self.start += used;
        Ok(Some(event))
    }

    /// Bytes held of a frame not yet complete.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.start
    }

    /// What the end of the stream means here: a clean close between frames, or a frame cut
    /// short (call after [`next_event`](Self::next_event) returned `Ok(None)`).
    pub fn end(&self) -> CloseReason {
        let rest = &self.buf[self.start..];
        match rest.first_chunk::<HEADER_LEN>() {
            None if rest.is_empty() => CloseReason::PeerClosed,
            None => CloseReason::Truncated {
                have: rest.len(),
                need: HEADER_LEN,
            },
            Some(h) => CloseReason::Truncated {
                have: rest.len(),
                need: HEADER_LEN + wire::Header::from_bytes(*h).length as usize,
            },
        }
    }
}

/// One atmtcp connection: open and close VCs, send SDUs, receive [`Event`]s.
///
/// Sends are blocking writes of whole frames. [`recv`](Self::recv) waits up to a timeout;
/// [`try_recv`](Self::try_recv) does not wait. For an event loop, wait for
/// [`as_fd`](AsFd::as_fd) to be readable and then call `try_recv` until it returns `None`.
/// Once an error of the kind [`LinkError::Closed`] has been returned the link is dead and
/// every later call returns `Closed` again with the original reason's text.
#[derive(Debug)]
pub struct AtmtcpLink {
    stream: TcpStream,
    peer: SocketAddr,
    decoder: StreamDecoder,
    out: Vec<u8>,
    opened: BTreeSet<Vc>,
    counters: AtmtcpCounters,
    dead: Option<String>,
}

/// The QoS natm offers when the caller gives none: UBR over AAL5 with atmtcp's largest SDU.
pub const DEFAULT_QOS: &str = "ubr,aal5:max_sdu=65535";

impl AtmtcpLink {
    /// Connect to `addr` (one attempt per resolved address, each bounded by `timeout`).
    pub fn connect(addr: impl ToSocketAddrs, timeout: Duration) -> io::Result<AtmtcpLink> {
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address to connect to");
        for a in addr.to_socket_addrs()? {
            match TcpStream::connect_timeout(&a, timeout) {
                Ok(s) => return AtmtcpLink::from_stream(s),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Accept one connection on `listener` (blocking, as the listener is set).
    pub fn accept(listener: &TcpListener) -> io::Result<AtmtcpLink> {
        let (s, _) = listener.accept()?;
        AtmtcpLink::from_stream(s)
    }

    /// Accept one connection on `listener`, giving up at `deadline` (`None`: wait as long as
    /// it takes). The listener is left non-blocking when there is a deadline; giving up is
    /// an [`io::ErrorKind::TimedOut`] error.
    pub fn accept_until(
        listener: &TcpListener,
        deadline: Option<Instant>,
    ) -> io::Result<AtmtcpLink> {
        let Some(deadline) = deadline else {
            return AtmtcpLink::accept(listener);
        };
        listener.set_nonblocking(true)?;
        loop {
            match listener.accept() {
                Ok((s, _)) => return AtmtcpLink::from_stream(s),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "no connection before the timeout",
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Connect to `addrs`; with a `deadline`, a refused connection is retried until then
    /// (so the connecting end may start before the listener), without one each attempt is
    /// bounded by 10 s and a refusal is final.
    pub fn connect_until(
        addrs: &[SocketAddr],
        deadline: Option<Instant>,
    ) -> io::Result<AtmtcpLink> {
        loop {
            let attempt = deadline
                .map(|d| d.saturating_duration_since(Instant::now()))
                .unwrap_or(Duration::from_secs(10))
                .max(Duration::from_millis(1));
            match AtmtcpLink::connect(addrs, attempt) {
                Ok(l) => return Ok(l),
                Err(e)
                    if e.kind() == io::ErrorKind::ConnectionRefused
                        && deadline.is_some_and(|d| Instant::now() < d) =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// A link over a connected stream.
    pub fn from_stream(stream: TcpStream) -> io::Result<AtmtcpLink> {
        stream.set_nodelay(true)?;
        stream.set_nonblocking(false)?;
        let peer = stream.peer_addr()?;
        Ok(AtmtcpLink {
            stream,
            peer,
            decoder: StreamDecoder::new(),
            out: Vec::new(),
            opened: BTreeSet::new(),
            counters: AtmtcpCounters::default(),
            dead: None,
        })
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer
    }

    /// The counters so far.
    pub fn counters(&self) -> AtmtcpCounters {
        self.counters
    }

    /// The VCs this end has opened and not closed.
    pub fn opened(&self) -> impl Iterator<Item = Vc> + '_ {
        self.opened.iter().copied()
    }

    /// Open `vc`: send `O vpi.vci addr qos` as linux-atm's `atmtcp` does, with the address
    /// `0.vpi.vci` (interface 0) unless `addr` is given. The peer does not answer.
    pub fn open_vc(&mut self, vc: Vc, addr: Option<&str>, qos: &str) -> Result<(), LinkError> {
        if vc == Vc::CONTROL {
            return Err(LinkError::DataOnControlVc);
        }
        let addr = addr.map_or_else(|| format!("0.{vc}"), str::to_owned);
        for (what, text) in [("address", &addr), ("qos", &qos.to_owned())] {
            if text.is_empty() || text.chars().any(|c| c.is_ascii_whitespace()) {
                return Err(LinkError::BadWord {
                    vc,
                    what,
                    text: text.clone(),
                });
            }
        }
        self.send_control(&Control::Open {
            vpi: vc.vpi,
            vci: vc.vci,
            addr,
            qos: qos.to_owned(),
        })?;
        self.opened.insert(vc);
        Ok(())
    }

    /// Close `vc`: send `C vpi.vci`.
    pub fn close_vc(&mut self, vc: Vc) -> Result<(), LinkError> {
        if vc == Vc::CONTROL {
            return Err(LinkError::DataOnControlVc);
        }
        self.send_control(&Control::Close {
            vpi: vc.vpi,
            vci: vc.vci,
        })?;
        self.opened.remove(&vc);
        Ok(())
    }

    fn send_control(&mut self, c: &Control) -> Result<(), LinkError> {
        self.check_alive()?;
        self.out.clear();
        c.encode(&mut self.out).map_err(LinkError::from)?;
        self.write_out()?;
        self.counters.tx_control += 1;
        Ok(())
    }

    /// Send one SDU on `vc` (not 0.0), at most 65535 bytes. The VC need not have been
    /// opened: `atmtcp` forwards data on any VC.
    pub fn send_sdu(&mut self, vc: Vc, sdu: &[u8]) -> Result<(), LinkError> {
        self.check_alive()?;
        self.out.clear();
        wire::encode_data(vc.vpi, vc.vci, sdu, &mut self.out).map_err(LinkError::from)?;
        self.write_out()?;
        self.counters.tx_sdus += 1;
        self.counters.tx_bytes += sdu.len() as u64;
        Ok(())
    }

    fn write_out(&mut self) -> Result<(), LinkError> {
        let r = self.stream.write_all(&self.out);
        r.map_err(|e| self.kill(CloseReason::Io(e)))
    }

    fn check_alive(&self) -> Result<(), LinkError> {
        match &self.dead {
            None => Ok(()),
            Some(why) => Err(LinkError::Closed(CloseReason::Io(io::Error::other(
                why.clone(),
            )))),
        }
    }

    fn kill(&mut self, reason: CloseReason) -> LinkError {
        if self.dead.is_none() {
            self.dead = Some(reason.to_string());
            let _ = self.stream.shutdown(Shutdown::Both);
        }
        LinkError::Closed(reason)
    }

    /// Close the connection (after sending `C` for every VC still open if `close_vcs`).
    pub fn shutdown(&mut self, close_vcs: bool) -> Result<(), LinkError> {
        if close_vcs {
            let open: Vec<Vc> = self.opened.iter().copied().collect();
            for vc in open {
                self.close_vc(vc)?;
            }
        }
        self.check_alive()?;
        self.kill(CloseReason::Local);
        Ok(())
    }

    /// The next event, waiting at most `timeout` (`None`: as long as it takes). `Ok(None)`
    /// when the time ran out first.
    pub fn recv(&mut self, timeout: Option<Duration>) -> Result<Option<Event>, LinkError> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(ev) = self.take_event()? {
                return Ok(Some(ev));
            }
            let wait = match deadline {
                None => None,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return Ok(None),
                },
            };
            if !self.fill(wait)? {
                return Ok(None);
            }
        }
    }

    /// The next event if one can be had without waiting.
    pub fn try_recv(&mut self) -> Result<Option<Event>, LinkError> {
        if let Some(ev) = self.take_event()? {
            return Ok(Some(ev));
        }
        let _ = self.stream.set_nonblocking(true);
        let r = self.read_some();
        let _ = self.stream.set_nonblocking(false);
        if !r? {
            return Ok(None);
        }
        self.take_event()
    }

    fn take_event(&mut self) -> Result<Option<Event>, LinkError> {
        self.check_alive()?;
        match self.decoder.next_event() {
            Ok(Some(ev)) => {
                match &ev {
                    Event::Data { sdu, .. } => {
                        self.counters.rx_sdus += 1;
                        self.counters.rx_bytes += sdu.len() as u64;
                    }
                    Event::Open { .. } | Event::Close { .. } => self.counters.rx_control += 1,
                    Event::BadControl { .. } => self.counters.rx_bad_control += 1,
                }
                Ok(Some(ev))
            }
            Ok(None) => Ok(None),
            Err(reason) => Err(self.kill(reason)),
        }
    }

    /// Read once with the given wait; `false` when nothing arrived in time.
    fn fill(&mut self, wait: Option<Duration>) -> Result<bool, LinkError> {
        if let Err(e) = self.stream.set_read_timeout(wait) {
            return Err(self.kill(CloseReason::Io(e)));
        }
        self.read_some()
    }

    fn read_some(&mut self) -> Result<bool, LinkError> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    let reason = self.decoder.end();
                    return Err(self.kill(reason));
                }
                Ok(n) => {
                    self.decoder.push(&chunk[..n]);
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(false);
                }
                Err(e) => return Err(self.kill(CloseReason::Io(e))),
            }
        }
    }
}

impl AsFd for AtmtcpLink {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accept_until_gives_up_at_the_deadline_and_connect_until_retries_a_refusal() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let soon = Instant::now() + Duration::from_millis(30);
        let e = AtmtcpLink::accept_until(&l, Some(soon)).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(Instant::now() >= soon);
        // A port nothing listens on: refused at once without a deadline, retried until one.
        let addr = l.local_addr().unwrap();
        drop(l);
        let e = AtmtcpLink::connect_until(&[addr], None).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
        let l = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            let l = TcpListener::bind(addr).unwrap();
            AtmtcpLink::accept(&l).map(|_| ())
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        assert!(AtmtcpLink::connect_until(&[addr], Some(deadline)).is_ok());
        l.join().unwrap().unwrap();
    }

    fn stream() -> (Vec<u8>, Vec<Event>) {
        let events = vec![
            Event::Open {
                vc: Vc::new(1, 42),
                addr: "0.1.42".into(),
                qos: "ubr,aal5:max_sdu=8192".into(),
            },
            Event::Data {
                vc: Vc::new(0, 100),
                sdu: b"hello".to_vec(),
            },
            Event::Data {
                vc: Vc::new(1, 42),
                sdu: (0..=255).collect(),
            },
            Event::Data {
                vc: Vc::new(0, 101),
                sdu: vec![],
            },
            Event::BadControl {
                reason: "does not start with O or C",
                body: b"garbage".to_vec(),
            },
            Event::Close { vc: Vc::new(1, 42) },
        ];
        let bytes = events.iter().flat_map(Event::to_frame).collect();
        (bytes, events)
    }

    fn drain(d: &mut StreamDecoder, into: &mut Vec<Event>) {
        while let Some(ev) = d.next_event().expect("no giant PDU") {
            into.push(ev);
        }
    }

    #[test]
    fn byte_by_byte() {
        let (bytes, want) = stream();
        let mut d = StreamDecoder::new();
        let mut got = Vec::new();
        for b in &bytes {
            d.push(std::slice::from_ref(b));
            drain(&mut d, &mut got);
        }
        assert_eq!(got, want);
        assert!(matches!(d.end(), CloseReason::PeerClosed));
    }

    #[test]
    fn wire_vectors() {
        // atm-facts.md §8.3, and what atmtcp 2.5.1 sent when playing back a recording.
        let mut d = StreamDecoder::new();
        d.push(&[0, 0, 0, 0x64, 0, 0, 0, 5, b'h', b'e', b'l', b'l', b'o']);
        d.push(b"\0\0\0\0\0\0\0#O 1.42 0.1.42 ubr,aal5:max_sdu=8192");
        d.push(b"\0\0\0\0\0\0\0\x06C 1.42");
        let mut got = Vec::new();
        drain(&mut d, &mut got);
        assert_eq!(
            got,
            [
                Event::Data {
                    vc: Vc::new(0, 100),
                    sdu: b"hello".to_vec()
                },
                Event::Open {
                    vc: Vc::new(1, 42),
                    addr: "0.1.42".into(),
                    qos: "ubr,aal5:max_sdu=8192".into()
                },
                Event::Close { vc: Vc::new(1, 42) },
            ]
        );
        assert_eq!(got[0].wire_len(), 5);
        assert_eq!(got[1].wire_len(), 35);
    }

    #[test]
    fn giant_pdu_ends_the_stream() {
        let mut d = StreamDecoder::new();
        d.push(
            &Event::Data {
                vc: Vc::new(0, 5),
                sdu: vec![7; 3],
            }
            .to_frame(),
        );
        d.push(&[0, 0, 0, 5, 0, 1, 0, 0]); // length 65536
        assert!(matches!(d.next_event(), Ok(Some(Event::Data { .. }))));
        for _ in 0..2 {
            assert!(matches!(
                d.next_event(),
                Err(CloseReason::GiantPdu { length: 65_536 })
            ));
        }
        // 65535 is still allowed.
        let mut d = StreamDecoder::new();
        d.push(&[0, 0, 0, 5, 0, 0, 0xff, 0xff]);
        assert!(matches!(d.next_event(), Ok(None)));
        d.push(&vec![1; 65_535]);
        match d.next_event() {
            Ok(Some(Event::Data { vc, sdu })) => {
                assert_eq!((vc, sdu.len()), (Vc::new(0, 5), 65_535));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn peer_closing_mid_frame() {
        let mut d = StreamDecoder::new();
        d.push(&[0, 1, 0, 2, 0, 0]);
        assert!(matches!(d.next_event(), Ok(None)));
        assert!(matches!(
            d.end(),
            CloseReason::Truncated { have: 6, need: 8 }
        ));
        d.push(&[0, 10, 1, 2, 3]);
        assert!(matches!(d.next_event(), Ok(None)));
        assert!(matches!(
            d.end(),
            CloseReason::Truncated { have: 11, need: 18 }
        ));
        assert_eq!(d.pending(), 11);
    }

    #[test]
    fn over_tcp_both_ways() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let mut a = AtmtcpLink::connect(addr, Duration::from_secs(5)).unwrap();
        let mut b = AtmtcpLink::accept(&l).unwrap();
        a.open_vc(Vc::new(1, 42), None, "ubr").unwrap();
        a.send_sdu(Vc::new(1, 42), b"abc").unwrap();
        assert!(matches!(
            a.send_sdu(Vc::CONTROL, b"x"),
            Err(LinkError::DataOnControlVc)
        ));
        assert!(matches!(
            a.send_sdu(Vc::new(1, 42), &[0; 65_536]),
            Err(LinkError::TooLong { len: 65_536 })
        ));
        assert!(matches!(
            a.open_vc(Vc::new(1, 43), None, "ubr, x"),
            Err(LinkError::BadWord { what: "qos", .. })
        ));
        let t = Some(Duration::from_secs(5));
        assert_eq!(
            b.recv(t).unwrap(),
            Some(Event::Open {
                vc: Vc::new(1, 42),
                addr: "0.1.42".into(),
                qos: "ubr".into()
            })
        );
        assert_eq!(
            b.recv(t).unwrap(),
            Some(Event::Data {
                vc: Vc::new(1, 42),
                sdu: b"abc".to_vec()
            })
        );
        assert_eq!(b.try_recv().unwrap(), None);
        assert_eq!(b.recv(Some(Duration::from_millis(20))).unwrap(), None);
        b.send_sdu(Vc::new(2, 50), b"back").unwrap();
        assert_eq!(
            a.recv(t).unwrap(),
            Some(Event::Data {
                vc: Vc::new(2, 50),
                sdu: b"back".to_vec()
            })
        );
        a.shutdown(true).unwrap();
        assert_eq!(
            b.recv(t).unwrap(),
            Some(Event::Close { vc: Vc::new(1, 42) })
        );
        assert!(matches!(
            b.recv(t),
            Err(LinkError::Closed(CloseReason::PeerClosed))
        ));
        assert!(matches!(b.recv(t), Err(LinkError::Closed(_))));
        assert!(matches!(
            a.send_sdu(Vc::new(1, 42), b"x"),
            Err(LinkError::Closed(_))
        ));
        let c = a.counters();
        assert_eq!(
            (c.tx_sdus, c.tx_bytes, c.tx_control, c.rx_sdus),
            (1, 3, 2, 1)
        );
        let c = b.counters();
        assert_eq!(
            (c.rx_sdus, c.rx_bytes, c.rx_control, c.tx_sdus),
            (1, 3, 2, 1)
        );
    }

    #[test]
    fn peer_closing_mid_frame_over_tcp() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut raw = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let mut b = AtmtcpLink::accept(&l).unwrap();
        raw.write_all(&[0, 0, 0, 100, 0, 0, 0, 9, b'p', b'a'])
            .unwrap();
        drop(raw);
        match b.recv(Some(Duration::from_secs(5))) {
            Err(LinkError::Closed(CloseReason::Truncated { have: 10, need: 17 })) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn giant_pdu_over_tcp_closes_with_reason() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut raw = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let mut b = AtmtcpLink::accept(&l).unwrap();
        raw.write_all(&[0xff; 64]).unwrap();
        match b.recv(Some(Duration::from_secs(5))) {
            Err(LinkError::Closed(CloseReason::GiantPdu { length: u32::MAX })) => {}
            other => panic!("{other:?}"),
        }
        let mut rest = Vec::new();
        // The link shut the socket down: the peer sees the end of the stream.
        raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(raw.read_to_end(&mut rest).unwrap(), 0);
    }

    proptest! {
        #[test]
        fn any_split_decodes_the_same(cuts in proptest::collection::vec(0usize..400, 0..20)) {
            let (bytes, want) = stream();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            cuts.push(0);
            cuts.push(bytes.len());
            cuts.sort_unstable();
            let mut d = StreamDecoder::new();
            let mut got = Vec::new();
            for w in cuts.windows(2) {
                d.push(&bytes[w[0]..w[1]]);
                drain(&mut d, &mut got);
            }
            prop_assert_eq!(got, want);
        }

        #[test]
        fn garbage_never_panics(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..10)
        ) {
            let mut d = StreamDecoder::new();
            'feed: for c in &chunks {
                d.push(c);
                loop {
                    match d.next_event() {
                        Ok(Some(ev)) => prop_assert!(ev.wire_len() <= MAX_LEN as usize),
                        Ok(None) => break,
                        Err(CloseReason::GiantPdu { length }) => {
                            prop_assert!(length > MAX_LEN);
                            break 'feed;
                        }
                        Err(other) => prop_assert!(false, "{other}"),
                    }
                }
            }
            let _ = d.end();
        }
    }
}

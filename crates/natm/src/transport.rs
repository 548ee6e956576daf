//! Transport channels: natm-transport's [`Endpoint`] driven over a VC, so that an
//! application sends and receives whole messages with a [`Service`] (issue 25).
//!
//! A [`Channel`] is one end of a duplex transport channel. It owns one [`Vc`] (or two) and
//! one [`Endpoint`]: every TPDU is one AAL5 SDU.
//!
//! * **A VC's two directions, or two VCs.** The seed papers build a duplex channel from
//!   two simplex VCs. A natm VC is a pair of simplex connections already (a PVC is
//!   cross-connected both ways, a call is bidirectional), so by default one VC serves
//!   ([`Channel::over`]): each end sends its data and acks on it and receives the peer's
//!   on it. [`Channel::over_pair`] builds the seed's form from two VCs: each end sends
//!   everything on one and receives everything on the other, and the far end uses the
//!   same two crossed (so a bulk direction can have a CBR VC and the acks a UBR one). The
//!   sending VC's QoS ([`VcOptions::qos`], [`crate::CallOptions::qos`]) is the channel's traffic
//!   contract. A guaranteed channel is admitted only if that QoS reserves its rate and,
//!   with a [`HostBudget`] from `natm perf calibrate`, if the host's per-TPDU costs fit
//!   ([`admission`] has the rules; [`Error::NotAdmitted`] names which failed).
//! * **Every data path.** The channel only uses [`Vc`]'s own calls, so it runs on the
//!   daemon, direct, lane and auto paths alike, and over a PVC ([`Channel::open`]) or any
//!   open VC, a switched one included ([`Channel::over`]).
//! * **Initial sequence numbers: a handshake.** Each end draws its sending direction's
//!   [`Isn`] at random (std's per-process random hash keys and the clock) and the two ends
//!   exchange them in *hello* frames before any TPDU; see [`hello`](self#the-hello). So a
//!   TPDU left over from an earlier channel on the same VC is refused by the sequence
//!   numbers, and both ends learn that they agree on the service, the TPDU size and the
//!   largest message ([`Error::Handshake`] if not). The hello also makes a channel wait
//!   for its peer, as a connection does: [`Channel::open`] returns once both ends are up
//!   ([`TransportOptions::handshake_timeout`]).
//! * **Time** is std's monotonic clock, read at each call and mapped to
//!   [`natm_core::Instant`] by one [`Epoch`] per channel.
//! * **No thread.** The channel works only inside its own calls: each one takes what the
//!   VC received, runs the endpoint's timers, and hands the VC what the endpoint has to
//!   send; a blocking call waits on the VC until the next input or the endpoint's next
//!   timeout, whichever is first. So a blocked [`Channel::recv`] acknowledges and a blocked
//!   [`Channel::send`] retransmits, but an application that stops calling stops its
//!   channel: the peer's retransmissions go unanswered. Call [`Channel::poll`] now and
//!   then when busy elsewhere, [`Channel::flush`] before going quiet, and
//!   [`Channel::linger`] after the last message to answer the peer's last retransmissions
//!   (its lost final ack, as TCP's TIME-WAIT does). A thread would take these chores off
//!   the application, at the price of a lock on every call and a second waiter on the
//!   VC: not worth it while a channel has one user.
//! * **Waiting on a lane.** A blocked call whose reliable endpoint expects an ack soon
//!   (something in flight, a smoothed round trip of at most 3 µs: two applications on two
//!   CPUs) looks at the lane's ring without yielding until half a round trip past the ack's
//!   due time ([`Endpoint::ack_due`]), so that a reply is taken as it lands; otherwise, and
//!   after, it waits as the VC's [`crate::NotifyMode`] says (a raw VC, which cannot know when
//!   its input is due, yields between looks). Two applications sharing one CPU take longer
//!   than 3 µs for a round trip, so they keep yielding to each other.
//! * **Acks ride on replies.** A reliable channel holds the ack of a message it hands the
//!   application until the application's next call ([`Endpoint::hold_acks`]): if that call
//!   sends, the message carries the ack, so a request and its reply move one frame each
//!   way, as raw AAL5 does; any other call sends it alone. Dropping the channel sends it
//!   too. An application that stops calling for longer than the peer's timeout after a
//!   message costs the peer one retransmission (its timeout's floor, `min_rto`, is 50 ms).
//! * **Zero copy where cheap:** a received message is the endpoint's own reassembly
//!   buffer, handed over ([`Event::Message`]'s [`Payload`]: up to 32 bytes in place, no
//!   allocation); sending copies the message once, into the endpoint's send queue (it
//!   must hold it until it is acknowledged).
//!
//! # The hello
//!
//! One AAL5 SDU of 32 bytes (one cell), big-endian, told from a TPDU by its first byte
//! (version 1, kind 15: natm-transport refuses it as a TPDU):
//!
//! ```text
//!  0     1       2     3   4       8       12       16       20     24       28     32
//! +-----+-------+-----+---+-------+-------+--------+--------+------+--------+------+
//! |0x1F |service|flags| 0 |isn.seq|isn.msg|echo.seq|echo.msg| tpdu |max msg | rate |
//! +-----+-------+-----+---+-------+-------+--------+--------+------+--------+------+
//!   flags: 0x80 ECHO (echo is the peer's ISN as heard), 0x40 OPEN (the sender has both ISNs)
//! ```
//!
//! Each end sends its hello (its ISN, and the peer's once heard) every 50 ms, doubling up
//! to 1 s, until it is open. A hello that is not OPEN is answered at once with this end's
//! own. An end is open when it holds the peer's ISN and the peer has echoed its own (or a
//! TPDU came after the peer's ISN: the peer is open, so it had ours). An end that finds
//! the peer's settings differ sends its hello once more (so the peer finds it too) and
//! fails with [`Error::Handshake`]. An open end answers a late hello with an OPEN one, and
//! counts and ignores a hello with another ISN (a stale or foreign channel): a channel
//! does not restart.
//!
//! What it is not: no multiplexing of channels on one VC, no re-handshake after a peer
//! restarts (close both ends and open again), no host-wide admission (each channel is
//! checked on its own: [`admission`]), no async API.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{Duration, Instant as StdInstant};

use natm_core::Instant;
use natm_link::clock::Epoch;
pub use natm_transport::{Config, Event, Isn, MsgSeq, Payload, Service, Stats as EndpointStats};
use natm_transport::{Endpoint, SendError};

use crate::vc::Filled;
use crate::{Error, ErrorKind, Host, Vc, VcOptions};

pub mod admission;
pub use admission::{CostLine, HostBudget, Refusal};

/// The first byte of a hello: version 1, kind 15.
const HELLO: u8 = 0x1F;
/// How soon a channel built from two VCs looks again for room on its sending VC.
const PAIR_RETRY: Duration = Duration::from_micros(200);
/// A hello's length.
const HELLO_LEN: usize = 32;
/// Hello flag: `echo` holds the peer's ISN.
const ECHO: u8 = 0x80;
/// Hello flag: the sender holds both ISNs.
const OPEN: u8 = 0x40;
/// The first interval between hellos; it doubles up to [`HELLO_MAX`].
const HELLO_FIRST: Duration = Duration::from_millis(50);
/// The longest interval between hellos.
const HELLO_MAX: Duration = Duration::from_secs(1);
/// The longest a blocking call sleeps on the VC before it looks again (the endpoint's
/// timers and the caller's deadline are honoured within this).
const IDLE_SLICE: Duration = Duration::from_millis(200);
/// How late a blocked call may serve a reliable endpoint's timers ([`Channel::wait`]): past
/// the 4 ms tick of a 250 Hz kernel.
const TIMER_SLACK: Duration = Duration::from_millis(5);
/// The longest smoothed round trip that a blocked call on a lane spins through instead of
/// yielding ([`Channel::wait`]): an ack or reply due within it is looked for until half a
/// round trip past its due time, and taken as it lands rather than a yield later. Two
/// applications sharing one CPU take longer than this for a round trip (~4.7 µs here), so
/// they never spin and keep handing each other the CPU.
const SPIN_RTT_MAX: natm_core::Duration = natm_core::Duration::from_micros(3);
/// How long a dropped channel waits for the held ack it sends to leave.
const DROP_FLUSH: Duration = Duration::from_millis(100);
/// Frames taken from the VC per pass, so that a flood does not starve the sending side.
const RX_BATCH: usize = 64;

/// A channel's settings: natm-transport's [`Config`] (the service in it) and how long to
/// wait for the peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransportOptions {
    /// The endpoint's settings; both ends must agree on `service`, `tpdu_size` and
    /// `max_message` (the hello checks).
    pub config: Config,
    /// How long [`Channel::open`] waits for the peer's hello (default 10 s).
    pub handshake_timeout: Duration,
    /// The host's per-TPDU budget a guaranteed channel is admitted against (default
    /// none: no host check; [`admission`]).
    pub budget: Option<HostBudget>,
}

impl TransportOptions {
    /// natm-transport's defaults (8 KiB TPDUs, messages up to 1 MiB) with `service`.
    pub fn new(service: Service) -> TransportOptions {
        TransportOptions {
            config: Config {
                service,
                ..Config::default()
            },
            handshake_timeout: Duration::from_secs(10),
            budget: None,
        }
    }

    /// Payload bytes per TPDU (both ends alike).
    pub fn tpdu_size(mut self, size: usize) -> TransportOptions {
        self.config.tpdu_size = size;
        self
    }

    /// How long to wait for the peer.
    pub fn handshake_timeout(mut self, t: Duration) -> TransportOptions {
        self.handshake_timeout = t;
        self
    }

    /// The host's per-TPDU budget to admit a guaranteed channel against.
    pub fn budget(mut self, budget: HostBudget) -> TransportOptions {
        self.budget = Some(budget);
        self
    }

    /// The AAL5 SDU the VC must carry: one TPDU with its header.
    pub fn max_frame(&self) -> usize {
        self.config.max_frame_len()
    }

    /// A buffer count for the VC's channel: twice the receive buffer, since half of a
    /// channel's buffers receive. A full window of TPDUs (at the receiver) or of their acks
    /// (at the sender) then always finds a receive buffer: on the direct path hostd drops a
    /// frame that finds none, which cost a reliable 64 KiB stream at unlimited rate
    /// hundreds of resends and its window (710 Mbit/s with 256 buffers, 2,742 acks and 41
    /// TPDUs dropped in 2 s).
    pub fn buffers(&self) -> u32 {
        self.config.recv_buffer.saturating_mul(2)
    }

    /// A buffer size for the VC's channel that holds one TPDU: [`max_frame`] rounded up
    /// to the 64 bytes a channel's buffers come in.
    ///
    /// [`max_frame`]: TransportOptions::max_frame
    pub fn buffer_size(&self) -> u32 {
        u32::try_from(self.max_frame().next_multiple_of(64)).unwrap_or(u32::MAX)
    }
}

/// A channel's figures: the endpoint's ([`EndpointStats`]: window, threshold, round trip,
/// retransmissions, SMART losses, acks, lost messages) and the driver's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelStats {
    /// The endpoint's.
    pub endpoint: EndpointStats,
    /// This end's sending direction's initial sequence numbers.
    pub local: Isn,
    /// The peer's.
    pub remote: Isn,
    /// Hellos sent.
    pub hellos_sent: u64,
    /// Hellos received (the peer's, the stale ones included).
    pub hellos_received: u64,
    /// Hellos of another ISN than the peer's after the handshake (ignored).
    pub foreign_hellos: u64,
    /// Frames received before the handshake could place them (dropped).
    pub early_frames: u64,
    /// AAL5 SDUs handed to the VC.
    pub frames_sent: u64,
    /// AAL5 SDUs taken from the VC.
    pub frames_received: u64,
    /// Times a frame waited because the VC had no free transmit buffer (on the direct and
    /// lane paths, where frames are built in those buffers: times the channel, with data
    /// outstanding, found none free and waited for one).
    pub tx_blocked: u64,
}

/// One end of a transport channel over one VC ([module docs](self)).
///
/// ```no_run
/// use natm::transport::{Channel, Event, Service, TransportOptions};
/// use natm::{Host, VcOptions};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let host = Host::connect("h1")?;
/// let opts = TransportOptions::new(Service::Reliable);
/// let vc = VcOptions::new("0.100".parse()?)
///     .buffers(opts.buffers())
///     .buffer_size(opts.buffer_size());
/// let mut ch = Channel::open(&host, vc, opts)?; // waits for the far end's channel
/// ch.send(b"hello")?;
/// if let Event::Message { data, .. } = ch.recv()? {
///     println!("{} bytes", data.len());
/// }
/// ch.flush(std::time::Duration::from_secs(5))?; // everything acknowledged
/// println!("rtt {:?}", ch.stats().endpoint.srtt);
/// # Ok(())
/// # }
/// ```
pub struct Channel {
    /// The VC the channel receives on, and sends on unless `out` is set.
    vc: Vc,
    /// The VC the channel sends on, when it is built from two ([`Channel::over_pair`]).
    out: Option<Vc>,
    ep: Endpoint,
    epoch: Epoch,
    stats: ChannelStats,
    /// The transmit scratch: a frame the VC has not taken yet is `pending` bytes of it.
    /// On the direct and lane paths frames are built in the VC's transmit buffers instead
    /// (one copy of each TPDU fewer); only hello answers use it there.
    tx: Vec<u8>,
    pending: Option<usize>,
    /// The last pump found the sending VC with no free transmit buffer for a frame it
    /// would build in place (direct and lane paths): the wait watches for one.
    starved: bool,
    rx: Vec<u8>,
    /// When a frame last came (for [`Channel::linger`]).
    last_rx: StdInstant,
    /// The last clock reading converted to the endpoint's clock, and the result
    /// ([`Channel::at`]).
    last_at: (StdInstant, Instant),
}

/// What a hello says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hello {
    service: u8,
    flags: u8,
    isn: Isn,
    echo: Isn,
    tpdu: u32,
    max_message: u32,
    rate: u32,
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Hello {
    fn ours(config: &Config, isn: Isn, echo: Option<Isn>, open: bool) -> Hello {
        Hello {
            service: config.service.kind() as u8,
            flags: if echo.is_some() { ECHO } else { 0 } | if open { OPEN } else { 0 },
            isn,
            echo: echo.unwrap_or_default(),
            tpdu: u32::try_from(config.tpdu_size).unwrap_or(u32::MAX),
            max_message: u32::try_from(config.max_message).unwrap_or(u32::MAX),
            rate: match config.service {
                Service::Guaranteed { rate } => rate,
                _ => 0,
            },
        }
    }

    fn emit(&self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[0] = HELLO;
        b[1] = self.service;
        b[2] = self.flags;
        for (at, v) in [
            (4, self.isn.seq),
            (8, self.isn.msg),
            (12, self.echo.seq),
            (16, self.echo.msg),
            (20, self.tpdu),
            (24, self.max_message),
            (28, self.rate),
        ] {
            b[at..at + 4].copy_from_slice(&v.to_be_bytes());
        }
        b
    }

    /// A hello, or `None` for anything else (a TPDU).
    fn parse(b: &[u8]) -> Option<Hello> {
        if b.len() != HELLO_LEN || b[0] != HELLO || b[3] != 0 || b[2] & !(ECHO | OPEN) != 0 {
            return None;
        }
        Some(Hello {
            service: b[1],
            flags: b[2],
            isn: Isn {
                seq: be32(b, 4),
                msg: be32(b, 8),
            },
            echo: Isn {
                seq: be32(b, 12),
                msg: be32(b, 16),
            },
            tpdu: be32(b, 20),
            max_message: be32(b, 24),
            rate: be32(b, 28),
        })
    }

    fn echoes(&self, isn: Isn) -> bool {
        self.flags & ECHO != 0 && self.echo == isn
    }

    /// Why the peer's channel cannot talk to ours, if it cannot.
    fn mismatch(&self, ours: &Hello) -> Option<String> {
        let name = |code: u8| match code {
            0 => "reliable".to_string(),
            1 => "best-effort".to_string(),
            2 => "guaranteed".to_string(),
            n => format!("unknown service {n}"),
        };
        if self.service != ours.service || self.rate != ours.rate {
            let svc = |h: &Hello| match h.service {
                2 => format!("guaranteed at {} cells/s", h.rate),
                s => name(s),
            };
            return Some(format!(
                "the far end's channel is {}, this one {}",
                svc(self),
                svc(ours)
            ));
        }
        if self.tpdu != ours.tpdu {
            return Some(format!(
                "the far end's TPDU size is {} bytes, this one's {}",
                self.tpdu, ours.tpdu
            ));
        }
        if self.max_message != ours.max_message {
            return Some(format!(
                "the far end's largest message is {} bytes, this one's {}",
                self.max_message, ours.max_message
            ));
        }
        None
    }
}

/// A random ISN: std's random hash keys (drawn from the OS once per process and varied per
/// `RandomState`) over the clock.
fn random_isn() -> Isn {
    let h = RandomState::new().hash_one(StdInstant::now());
    Isn {
        seq: h as u32,
        msg: (h >> 32) as u32,
    }
}

fn handshake_error(message: impl Into<String>) -> Error {
    Error::Handshake(message.into())
}

impl Channel {
    /// Opens the PVC `vc` on `host` and makes a channel over it ([`Channel::over`]). The
    /// VC's channel should hold a TPDU per buffer ([`TransportOptions::buffer_size`]) and
    /// enough buffers for a window's worth on the direct path (a receiver out of buffers
    /// drops frames, which the reliable service then resends).
    pub fn open(host: &Host, vc: VcOptions, opts: TransportOptions) -> Result<Channel, Error> {
        Channel::over(host.open(vc)?, opts)
    }

    /// A channel over an open VC (a PVC, or a switched VC from [`Host::call`] or
    /// [`crate::Listener::accept`]): exchanges hellos with the far end, waiting at most
    /// `opts.handshake_timeout` ([`Error::Timeout`]). [`Error::Handshake`] when the far end's
    /// service, TPDU size or largest message differ; [`Error::TooLong`] when the VC cannot
    /// carry a TPDU; [`Error::Refused`] for settings natm-transport refuses;
    /// [`Error::NotAdmitted`] for a guaranteed rate the VC's QoS or the host's budget
    /// cannot honour ([`admission`]: checked before any hello, so the far end waits for
    /// its own timeout).
    pub fn over(vc: Vc, opts: TransportOptions) -> Result<Channel, Error> {
        Channel::handshake(vc, None, opts)
    }

    /// Opens the PVCs `send` and `recv` on `host` and makes a channel from the two
    /// ([`Channel::over_pair`]).
    pub fn open_pair(
        host: &Host,
        send: VcOptions,
        recv: VcOptions,
        opts: TransportOptions,
    ) -> Result<Channel, Error> {
        let send = host.open(send)?;
        Channel::over_pair(send, host.open(recv)?, opts)
    }

    /// A duplex channel from two VCs, as the seed papers build one: this end sends every
    /// frame (its data, its acks, its hellos) on `send` and takes the peer's from `recv`;
    /// the far end opens the same two VCs crossed (its `send` is this end's `recv`). A
    /// guaranteed rate is admitted against `send`'s QoS. Otherwise as [`Channel::over`];
    /// frames that come on `send` are left there unread.
    pub fn over_pair(send: Vc, recv: Vc, opts: TransportOptions) -> Result<Channel, Error> {
        Channel::handshake(recv, Some(send), opts)
    }

    /// [`Channel::over`] and [`Channel::over_pair`]: receives on `vc`, sends on `out` when
    /// given, else on `vc`.
    fn handshake(
        mut vc: Vc,
        mut out: Option<Vc>,
        opts: TransportOptions,
    ) -> Result<Channel, Error> {
        let config = opts.config;
        config.validate().map_err(|e| Error::Refused {
            kind: ErrorKind::BadRequest,
            message: format!("transport settings: {e}"),
        })?;
        let sender = out.as_ref().unwrap_or(&vc);
        admission::admit(&config, sender.qos(), opts.budget.as_ref())
            .map_err(Error::NotAdmitted)?;
        let frame = config.max_frame_len();
        let max = sender.max_sdu().min(vc.max_sdu());
        if frame > max {
            return Err(Error::TooLong { len: frame, max });
        }
        let local = random_isn();
        let mut stats = ChannelStats {
            local,
            ..ChannelStats::default()
        };
        let mut rx = vec![0u8; vc.max_sdu()];
        let start = StdInstant::now();
        let deadline = start + opts.handshake_timeout;
        let mut remote: Option<Isn> = None;
        let mut echoed = false;
        let mut interval = HELLO_FIRST;
        let mut next_hello = start;
        // Frames of the peer's TPDUs that came once its ISN was known: the peer is open.
        let mut first_tpdu: Option<Vec<u8>> = None;
        // The hello's round trip, when it is unambiguous (one hello sent, its echo back):
        // the endpoint's first round-trip sample, so that a lost first TPDU is found by
        // the loss probe rather than the initial timeout.
        let mut rtt_hint: Option<Duration> = None;
        loop {
            let now = StdInstant::now();
            if now >= next_hello {
                let h = Hello::ours(&config, local, remote, false);
                out_of(&mut vc, &mut out).send(&h.emit())?;
                stats.hellos_sent += 1;
                next_hello = now + interval;
                interval = (interval * 2).min(HELLO_MAX);
            }
            if now >= deadline {
                return Err(Error::Timeout);
            }
            let Some(n) = vc.wait_sdu(&mut rx, next_hello.min(deadline), false)? else {
                continue;
            };
            match Hello::parse(&rx[..n]) {
                Some(h) => {
                    stats.hellos_received += 1;
                    let ours = Hello::ours(&config, local, None, false);
                    if let Some(why) = h.mismatch(&ours) {
                        // The peer's VC is open (its hello came): ours tells it too.
                        let tx = out_of(&mut vc, &mut out);
                        let _ = tx.send(&Hello::ours(&config, local, Some(h.isn), false).emit());
                        let _ = tx.flush(Duration::from_millis(200));
                        return Err(handshake_error(why));
                    }
                    remote = Some(h.isn);
                    if !echoed && h.echoes(local) && stats.hellos_sent == 1 {
                        rtt_hint = Some(start.elapsed());
                    }
                    echoed |= h.echoes(local);
                    if h.flags & OPEN == 0 {
                        let answer = Hello::ours(&config, local, remote, echoed);
                        out_of(&mut vc, &mut out).send(&answer.emit())?;
                        stats.hellos_sent += 1;
                    }
                }
                None if remote.is_some() => {
                    echoed = true;
                    first_tpdu = Some(rx[..n].to_vec());
                }
                None => stats.early_frames += 1,
            }
            if let (Some(remote), true) = (remote, echoed) {
                stats.remote = remote;
                let mut ep = Endpoint::new(config, local, remote).map_err(|e| Error::Refused {
                    kind: ErrorKind::BadRequest,
                    message: format!("transport settings: {e}"),
                })?;
                if let Some(rtt) = rtt_hint {
                    ep.set_rtt_hint(natm_core::Duration::from_nanos(
                        u64::try_from(rtt.as_nanos()).unwrap_or(u64::MAX),
                    ));
                }
                ep.hold_acks(true);
                let epoch = Epoch::now();
                let start = StdInstant::now();
                let mut ch = Channel {
                    vc,
                    out,
                    ep,
                    epoch,
                    stats,
                    tx: vec![0u8; frame],
                    pending: None,
                    starved: false,
                    rx,
                    last_rx: start,
                    last_at: (start, epoch.at(start)),
                };
                if let Some(f) = first_tpdu {
                    ch.stats.frames_received += 1;
                    let now = ch.now();
                    // A refused frame changes nothing; the endpoint counts it.
                    let _ = ch.ep.handle_tpdu(now, &f);
                }
                ch.pump()?;
                return Ok(ch);
            }
        }
    }

    fn now(&self) -> Instant {
        self.epoch.elapsed()
    }

    /// `wall` on the endpoint's clock: a pass converts its one reading several times, and
    /// the last conversion is kept.
    fn at(&mut self, wall: StdInstant) -> Instant {
        if self.last_at.0 != wall {
            self.last_at = (wall, self.epoch.at(wall));
        }
        self.last_at.1
    }

    /// The VC the channel receives on (and sends on, unless it was built from two).
    pub fn vc(&self) -> &Vc {
        &self.vc
    }

    /// The VC the channel sends on: [`Channel::vc`], or the pair's sending VC.
    pub fn send_vc(&self) -> &Vc {
        self.out.as_ref().unwrap_or(&self.vc)
    }

    /// The service.
    pub fn service(&self) -> Service {
        self.ep.config().service
    }

    /// The endpoint's settings.
    pub fn config(&self) -> &Config {
        self.ep.config()
    }

    /// The figures now.
    pub fn stats(&self) -> ChannelStats {
        ChannelStats {
            endpoint: self.ep.stats(),
            ..self.stats
        }
    }

    /// Takes frame `self.rx[..n]`, which came by `wall` (a clock reading of this pass).
    fn take(&mut self, n: usize, wall: StdInstant) -> Result<(), Error> {
        self.stats.frames_received += 1;
        self.last_rx = wall;
        match Hello::parse(&self.rx[..n]) {
            Some(h) if h.isn == self.stats.remote => {
                self.stats.hellos_received += 1;
                if h.flags & OPEN == 0 {
                    let ours = Hello::ours(self.ep.config(), self.stats.local, Some(h.isn), true);
                    self.send_frame_now(&ours.emit())?;
                }
            }
            Some(_) => {
                self.stats.hellos_received += 1;
                self.stats.foreign_hellos += 1;
            }
            None => {
                // A refused frame changes nothing; the endpoint counts it.
                let now = self.at(wall);
                let _ = self.ep.handle_tpdu(now, &self.rx[..n]);
            }
        }
        Ok(())
    }

    /// Takes the frames the VC holds (at most `batch`), parsing TPDUs in place in the VC's
    /// receive buffers on the direct and lane paths (a hello is copied out: answering it
    /// needs the VC). All of them by `wall`, one clock reading for the batch. How many.
    /// With `look` false the VC is not looked at again: only what an earlier look of the
    /// pass collected is taken.
    fn take_frames(&mut self, batch: usize, wall: StdInstant, look: bool) -> Result<usize, Error> {
        let now = self.at(wall);
        let in_place = self.vc.direct.is_some();
        // A lane whose last look took cells in (typically the wait's, just now) is not
        // looked at again before what that look collected is taken.
        let look = look && !self.vc.lane_took_in();
        for taken in 0..batch {
            if !in_place {
                match self.vc.try_recv(&mut self.rx) {
                    Ok(n) => self.take(n, wall)?,
                    Err(Error::WouldBlock) => return Ok(taken),
                    Err(e) => return Err(e),
                }
                continue;
            }
            // The first look moves what can move; the rest take what it collected.
            if taken > 0 && self.vc.lane_ready_empty() {
                return Ok(taken);
            }
            let Some(sdu) = self.vc.try_recv_zero_copy_at(wall, look && taken == 0)? else {
                return Ok(taken);
            };
            if let Some(n) = Hello::parse(&sdu).map(|_| sdu.len()) {
                // A hello: taken as a copy (answering it needs the VC), the buffer back
                // first.
                self.rx[..n].copy_from_slice(&sdu);
                drop(sdu);
                self.take(n, wall)?;
                continue;
            }
            self.stats.frames_received += 1;
            self.last_rx = wall;
            // A refused frame changes nothing; the endpoint counts it.
            let _ = self.ep.handle_tpdu(now, &sdu);
        }
        Ok(batch)
    }

    /// Sends a hello answer, after the frame the VC has not taken yet.
    fn send_frame_now(&mut self, frame: &[u8]) -> Result<(), Error> {
        if let Some(n) = self.pending.take() {
            let pending = self.tx[..n].to_vec();
            out_of(&mut self.vc, &mut self.out).send(&pending)?;
            self.stats.frames_sent += 1;
        }
        out_of(&mut self.vc, &mut self.out).send(frame)?;
        self.stats.hellos_sent += 1;
        self.stats.frames_sent += 1;
        Ok(())
    }

    /// Frames taken per pass. Without acknowledgements only the VC holds a sender back:
    /// frames the endpoint has no room for stay in the VC (its buffers, the lane, the
    /// switch pausing the lane that feeds it) instead of being taken and lost as overruns
    /// while the application is still catching up (best effort and guaranteed at 64 B
    /// lost 0.1-0.5 %).
    fn rx_batch(&self) -> usize {
        match self.ep.config().service {
            Service::Reliable => RX_BATCH,
            _ => RX_BATCH.min(self.ep.receive_window() as usize),
        }
    }

    /// One pass without waiting: what the VC received, the timers due, what the endpoint
    /// has to send (until the VC has no free buffer).
    fn pump(&mut self) -> Result<(), Error> {
        self.pump_at(StdInstant::now())
    }

    /// [`Channel::pump`] with `wall` just read from the clock (or lent by the wait that
    /// ended on a look): the whole pass uses it.
    fn pump_at(&mut self, wall: StdInstant) -> Result<(), Error> {
        let batch = self.rx_batch();
        // One reading serves the frames, the timers and the sends: taking a batch takes
        // microseconds, far below any timer's grain.
        self.take_frames(batch, wall, true)?;
        let now = self.at(wall);
        if self.ep.poll_timeout().is_some_and(|t| t <= now) {
            self.ep.handle_timeout(now);
        }
        self.transmit(now, wall)
    }

    /// What the endpoint has to send at `now` (`wall`), until the VC has no free buffer.
    fn transmit(&mut self, now: Instant, wall: StdInstant) -> Result<(), Error> {
        let was_starved = std::mem::take(&mut self.starved);
        loop {
            // Nothing to send: no buffer taken and given back.
            if self.pending.is_none() && !self.ep.may_transmit() {
                return Ok(());
            }
            if self.pending.is_none() {
                match self.send_in_place(now, wall)? {
                    Filled::Sent => continue,
                    Filled::Empty => return Ok(()),
                    Filled::NoBuffer => {
                        // Counted once per wait for a buffer, as a pending frame is.
                        if !was_starved && !self.ep.send_idle() {
                            self.stats.tx_blocked += 1;
                        }
                        self.starved = true;
                        return Ok(());
                    }
                    Filled::Unavailable => {}
                }
            }
            let n = match self.pending {
                Some(n) => n,
                None => match self.ep.poll_transmit(now, &mut self.tx) {
                    Some(n) => n,
                    None => return Ok(()),
                },
            };
            match out_of(&mut self.vc, &mut self.out).try_send(&self.tx[..n]) {
                Ok(()) => {
                    self.pending = None;
                    self.stats.frames_sent += 1;
                }
                Err(Error::WouldBlock) => {
                    if self.pending.replace(n).is_none() {
                        self.stats.tx_blocked += 1;
                    }
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// On the direct and lane paths, builds the endpoint's next frame in a free transmit
    /// buffer of the sending VC and sends it.
    fn send_in_place(&mut self, now: Instant, wall: StdInstant) -> Result<Filled, Error> {
        let ep = &mut self.ep;
        let filled =
            out_of(&mut self.vc, &mut self.out)
                .send_filled_at(wall, self.tx.len(), |b| ep.poll_transmit(now, b))?;
        if matches!(filled, Filled::Sent) {
            self.stats.frames_sent += 1;
        }
        Ok(filled)
    }

    /// Waits on the VC until the next input, the endpoint's next timeout or `deadline`,
    /// whichever is first, after a pass at `now`. On the daemon path it takes what came;
    /// on the others the next pass takes it in place. A clock reading the next pass may
    /// use, if the wait ended on one (a lane's look that moved cells).
    fn wait(
        &mut self,
        deadline: Option<StdInstant>,
        now: StdInstant,
    ) -> Result<Option<StdInstant>, Error> {
        let mut wake = now + IDLE_SLICE;
        if let Some(d) = deadline {
            wake = wake.min(d);
        }
        if let Some(t) = self.ep.poll_timeout() {
            wake = wake.min(timer_wake(self.ep.config().service, self.epoch.to_std(t)));
        }
        // A frame waiting for room on the pair's sending VC: the receiving VC cannot say
        // when that room comes, so look again soon.
        let room = self.pending.is_some() || self.starved;
        if room && self.out.is_some() {
            wake = wake.min(now + PAIR_RETRY);
        }
        let tx_blocked = room && self.out.is_none();
        if self.vc.direct.is_some() {
            // Not while waiting for room to send, which the spin would not notice.
            let expect = if tx_blocked {
                None
            } else {
                self.reply_spin(now)
            };
            return self.vc.wait_in_place(now, wake, tx_blocked, expect);
        }
        if let Some(n) = self.vc.wait_sdu(&mut self.rx, wake, tx_blocked)? {
            self.take(n, StdInstant::now())?;
        }
        Ok(None)
    }

    /// Until when a wait after `now` looks for an ack (a reply) due soon without yielding
    /// ([`SPIN_RTT_MAX`]): half a round trip past its due time.
    fn reply_spin(&self, now: StdInstant) -> Option<StdInstant> {
        let (due, rtt) = self.ep.ack_due().filter(|&(_, rtt)| rtt <= SPIN_RTT_MAX)?;
        let until = self
            .epoch
            .to_std(due + natm_core::Duration::from_nanos(rtt.as_nanos() / 2));
        (until > now).then_some(until)
    }

    /// Runs the channel until `done` says so or `deadline` passes ([`Error::Timeout`]);
    /// the clock reading of its last pass. One reading per pass serves the pass, the
    /// deadline and the wait.
    fn drive(
        &mut self,
        deadline: Option<StdInstant>,
        mut done: impl FnMut(&mut Channel) -> bool,
    ) -> Result<StdInstant, Error> {
        let mut wall = StdInstant::now();
        loop {
            self.pump_at(wall)?;
            if done(self) {
                return Ok(wall);
            }
            if deadline.is_some_and(|d| wall >= d) {
                return Err(Error::Timeout);
            }
            // The look that ended the wait read the clock just before: that reading serves.
            wall = self.wait(deadline, wall)?.unwrap_or_else(StdInstant::now);
        }
    }

    /// Services the channel without waiting: takes what the VC received, runs the timers
    /// that are due, sends what can go. Call it now and then while doing something else.
    pub fn poll(&mut self) -> Result<(), Error> {
        self.ep.release_ack();
        self.pump()
    }

    /// When the channel next needs a call ([`Channel::poll`]) for its timers, if it does.
    pub fn next_timeout(&self) -> Option<StdInstant> {
        self.ep.poll_timeout().map(|t| self.epoch.to_std(t))
    }

    fn send_within(&mut self, msg: &[u8], deadline: Option<StdInstant>) -> Result<MsgSeq, Error> {
        // Queued before anything else is sent, the message carries the ack held since the
        // last message received (a reply and its request's ack: one frame).
        let mut wall = StdInstant::now();
        let now = self.at(wall);
        let first = self.ep.send_message(now, msg);
        self.ep.release_ack();
        let seq = match first {
            Ok(s) => s,
            Err(SendError::MessageTooLarge { len, max }) => {
                self.pump()?;
                return Err(Error::TooLong { len, max });
            }
            Err(SendError::QueueFull { .. }) => {
                let mut seq = None;
                wall = self.drive(deadline, |ch| {
                    seq = ch.ep.send_message(ch.now(), msg).ok();
                    seq.is_some()
                })?;
                seq.ok_or(Error::WouldBlock)?
            }
        };
        // Start sending it now, then take what came: a frame sent looked at the VC already
        // (on a lane, its pump), so only what that look collected is taken; if nothing
        // went, the VC is looked at (acks opening the window). A reply so goes with one
        // look at the lane instead of two.
        let now = self.at(wall);
        if self.ep.poll_timeout().is_some_and(|t| t <= now) {
            self.ep.handle_timeout(now);
        }
        let sent = self.stats.frames_sent;
        self.transmit(now, wall)?;
        let looked = self.stats.frames_sent != sent;
        if looked && self.vc.lane_ready_empty() && !self.vc.lane_took_in() {
            // Nothing collected and the send's pump took nothing in: nothing to take (a
            // request's reply is not there yet).
            return Ok(seq);
        }
        let batch = self.rx_batch();
        if self.take_frames(batch, wall, !looked)? > 0 {
            self.transmit(now, wall)?;
        }
        Ok(seq)
    }

    /// Sends one message (up to [`Config::max_message`] bytes, else [`Error::TooLong`]),
    /// waiting while the send queue is full (reliable: for acks); its message sequence
    /// number. `Ok` means queued: [`Channel::flush`] waits until it is delivered
    /// (reliable) or sent.
    pub fn send(&mut self, msg: &[u8]) -> Result<MsgSeq, Error> {
        self.send_within(msg, None)
    }

    /// Sends one message if the send queue has room now; [`Error::WouldBlock`] if not.
    pub fn try_send(&mut self, msg: &[u8]) -> Result<MsgSeq, Error> {
        match self.send_within(msg, Some(StdInstant::now())) {
            Err(Error::Timeout) => Err(Error::WouldBlock),
            r => r,
        }
    }

    /// Sends one message, waiting at most `timeout` for room ([`Error::Timeout`]).
    pub fn send_timeout(&mut self, msg: &[u8], timeout: Duration) -> Result<MsgSeq, Error> {
        self.send_within(msg, Some(StdInstant::now() + timeout))
    }

    fn recv_within(&mut self, deadline: Option<StdInstant>) -> Result<Event, Error> {
        self.ep.release_ack();
        let mut got = None;
        let wall = self.drive(deadline, |ch| {
            got = ch.ep.poll_event();
            got.is_some()
        })?;
        // Acks of what was just taken (the window it opened) go now; the newest waits for
        // the application's next call, to ride on a reply.
        let now = self.at(wall);
        self.transmit(now, wall)?;
        got.ok_or(Error::WouldBlock)
    }

    /// The next event, waiting for it: a whole message in order, or (best effort and
    /// guaranteed) messages that will never come.
    pub fn recv(&mut self) -> Result<Event, Error> {
        self.recv_within(None)
    }

    /// The next event if there is one now; [`Error::WouldBlock`] if not.
    pub fn try_recv(&mut self) -> Result<Event, Error> {
        match self.recv_within(Some(StdInstant::now())) {
            Err(Error::Timeout) => Err(Error::WouldBlock),
            r => r,
        }
    }

    /// The next event, waiting at most `timeout` ([`Error::Timeout`]).
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<Event, Error> {
        self.recv_within(Some(StdInstant::now() + timeout))
    }

    /// Waits at most `timeout` until everything sent so far has left: acknowledged on a
    /// reliable channel, handed to the link otherwise (on the daemon path: sent by hostd's
    /// adapter, which it asks) ([`Error::Timeout`]). Events that
    /// come meanwhile wait for [`Channel::recv`].
    pub fn flush(&mut self, timeout: Duration) -> Result<(), Error> {
        self.ep.release_ack();
        let deadline = StdInstant::now() + timeout;
        self.drive(Some(deadline), |ch| {
            ch.pending.is_none() && ch.ep.send_idle()
        })?;
        out_of(&mut self.vc, &mut self.out)
            .flush(deadline.saturating_duration_since(StdInstant::now()))
    }

    /// Keeps answering the peer (acks of its retransmissions, hellos) until nothing came
    /// for `quiet`, or for at most `max`, or until the far end releases the call of a
    /// switched VC: what an end does after the last message so that the peer's last
    /// retransmission finds it. Events that come meanwhile wait for
    /// [`Channel::recv`].
    pub fn linger(&mut self, quiet: Duration, max: Duration) -> Result<(), Error> {
        self.ep.release_ack();
        let start = StdInstant::now();
        self.last_rx = start;
        match self.drive(Some(start + max), |ch| ch.last_rx.elapsed() >= quiet) {
            Ok(_) | Err(Error::Timeout) => {}
            // The far end released the call: nobody is left to answer.
            Err(Error::Released(_)) => return Ok(()),
            Err(e) => return Err(e),
        }
        let _ = out_of(&mut self.vc, &mut self.out).flush(Duration::from_millis(500));
        Ok(())
    }
}

impl Drop for Channel {
    /// Sends an ack still held for a reply that did not come, waiting at most
    /// 100 ms (`DROP_FLUSH`) for it to leave (closing the VC drops what it has not sent). Best
    /// effort: the VC may be gone already.
    fn drop(&mut self) {
        if self.ep.ack_held() {
            self.ep.release_ack();
            if self.pump().is_ok() {
                let _ = out_of(&mut self.vc, &mut self.out).flush(DROP_FLUSH);
            }
        }
    }
}

/// When a blocked call wakes for the endpoint's timer due at `due`. A reliable endpoint's
/// timers (loss probe, retransmission, window probe) are served up to [`TIMER_SLACK`] late
/// when nothing else wakes the channel: a sleep whose timeout is near costs every wake-up
/// before it tens of µs on the lab's VM (arming and cancelling a near timer traps there),
/// which held the 8-byte round trip at 1.9-2.1x raw AAL5 (100 µs probe floor) against
/// 1.0x. The other services' timers keep time: a guaranteed channel's is its bucket's next
/// release (late by the slack, 8 KiB messages beside a bulk flow ran 24 % under the rate).
fn timer_wake(service: Service, due: StdInstant) -> StdInstant {
    match service {
        Service::Reliable => due + TIMER_SLACK,
        Service::BestEffort | Service::Guaranteed { .. } => due,
    }
}

/// The VC a channel sends on: `out` when it is built from two VCs, else `vc`.
fn out_of<'a>(vc: &'a mut Vc, out: &'a mut Option<Vc>) -> &'a mut Vc {
    out.as_mut().unwrap_or(vc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_round_trips_and_nothing_else_parses_as_one() {
        let c = Config {
            service: Service::Guaranteed { rate: 1000 },
            ..Config::default()
        };
        let h = Hello::ours(
            &c,
            Isn { seq: 7, msg: 9 },
            Some(Isn { seq: 1, msg: 2 }),
            true,
        );
        let b = h.emit();
        assert_eq!(b[0], HELLO);
        assert_eq!(Hello::parse(&b), Some(h));
        assert!(h.echoes(Isn { seq: 1, msg: 2 }));
        assert!(!h.echoes(Isn { seq: 1, msg: 3 }));
        // natm-transport refuses it as a TPDU.
        assert!(natm_transport::header::Repr::parse(&b).is_err());
        let mut bad = b;
        bad[2] |= 1;
        assert_eq!(Hello::parse(&bad), None, "unknown flag");
        assert_eq!(Hello::parse(&b[..31]), None, "short");
        bad = b;
        bad[0] = 0x10;
        assert_eq!(Hello::parse(&bad), None, "a data TPDU's first byte");
        let no_echo = Hello::ours(&c, Isn::default(), None, false);
        assert!(!no_echo.echoes(Isn::default()), "no ECHO flag, no echo");
    }

    #[test]
    fn a_peer_of_another_service_or_size_is_named() {
        let ours = Hello::ours(&Config::default(), Isn::default(), None, false);
        let theirs = |f: fn(&mut Config)| {
            let mut c = Config::default();
            f(&mut c);
            Hello::ours(&c, Isn::default(), None, false).mismatch(&ours)
        };
        assert_eq!(theirs(|_| {}), None);
        assert_eq!(
            theirs(|c| c.service = Service::BestEffort).as_deref(),
            Some("the far end's channel is best-effort, this one reliable")
        );
        assert_eq!(
            theirs(|c| c.service = Service::Guaranteed { rate: 5 }).as_deref(),
            Some("the far end's channel is guaranteed at 5 cells/s, this one reliable")
        );
        assert_eq!(
            theirs(|c| c.tpdu_size = 1024).as_deref(),
            Some("the far end's TPDU size is 1024 bytes, this one's 8192")
        );
        assert!(theirs(|c| c.max_message = 4096).is_some());
    }

    #[test]
    fn only_a_reliable_channel_serves_its_timers_late() {
        let due = StdInstant::now();
        assert_eq!(timer_wake(Service::Reliable, due), due + TIMER_SLACK);
        assert_eq!(timer_wake(Service::BestEffort, due), due);
        assert_eq!(timer_wake(Service::Guaranteed { rate: 100_000 }, due), due);
    }

    #[test]
    fn isns_differ_between_draws() {
        let a = random_isn();
        let b = random_isn();
        assert_ne!(a, b);
    }

    #[test]
    fn the_buffer_size_holds_a_tpdu_in_64_byte_units() {
        let o = TransportOptions::new(Service::Reliable);
        assert_eq!(o.max_frame(), 8204);
        assert_eq!(o.buffer_size(), 8256);
        assert_eq!(o.tpdu_size(52).buffer_size(), 64);
    }
}

//! One end of a duplex channel: the [`Endpoint`] and what it reports.

use core::fmt;

use natm_core::{Duration, Instant};

use crate::config::{Config, ConfigError};
use crate::header::{ACK_LEN, Ack, HeaderError, Repr, ServiceKind, emit_ack};
use crate::payload::Payload;
use crate::recv::Receiver;
use crate::send::Sender;

/// The initial sequence numbers of one direction, seeded by the driver (both ends must be
/// given the same for the same direction).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Isn {
    /// The first TPDU's sequence number.
    pub seq: u32,
    /// The first message's sequence number.
    pub msg: u32,
}

/// A message sequence number: messages are numbered from their direction's [`Isn::msg`],
/// one each, modulo 2³².
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MsgSeq(pub u32);

impl MsgSeq {
    /// The number `n` messages after this one (wrapping).
    pub const fn add(self, n: u32) -> MsgSeq {
        MsgSeq(self.0.wrapping_add(n))
    }

    /// How many messages from `earlier` to this one (wrapping).
    pub const fn since(self, earlier: MsgSeq) -> u32 {
        self.0.wrapping_sub(earlier.0)
    }
}

impl fmt::Display for MsgSeq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// What an endpoint hands to its application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A whole message, in order.
    Message {
        /// Its message sequence number.
        msg: MsgSeq,
        /// Its bytes (a short message's in place: no allocation).
        data: Payload,
    },
    /// Best effort and guaranteed: messages `first..=last` (serial order) will never come.
    Lost {
        /// The first lost message.
        first: MsgSeq,
        /// The last lost message.
        last: MsgSeq,
    },
}

/// Why a message was not accepted. Nothing accepted is ever dropped by the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendError {
    /// Longer than [`Config::max_message`].
    MessageTooLarge {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The send queue would pass [`Config::send_queue_limit`]: wait for acks (reliable) or
    /// for transmission, and try again.
    QueueFull {
        /// Bytes held now.
        queued: usize,
        /// The limit.
        limit: usize,
    },
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::MessageTooLarge { len, max } => {
                write!(f, "message of {len} bytes is above the limit of {max}")
            }
            SendError::QueueFull { queued, limit } => {
                write!(f, "send queue holds {queued} of {limit} bytes: no room")
            }
        }
    }
}

impl core::error::Error for SendError {}

/// Why a received frame was refused (it changed nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxError {
    /// Not a TPDU.
    Header(HeaderError),
    /// A TPDU of another service than the channel's.
    WrongService {
        /// The channel's.
        expected: ServiceKind,
        /// The TPDU's.
        got: ServiceKind,
    },
    /// A payload longer than [`Config::tpdu_size`].
    PayloadTooLong {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// An ack on a channel whose service has none.
    AckNotExpected,
    /// An ack of TPDUs never sent.
    AckBeyondSent {
        /// Its cumulative ack.
        cum: u32,
    },
    /// An ack triggered by a TPDU never sent.
    TriggerNotSent {
        /// Its trigger.
        trigger: u32,
    },
}

impl From<HeaderError> for RxError {
    fn from(e: HeaderError) -> Self {
        RxError::Header(e)
    }
}

impl fmt::Display for RxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RxError::Header(e) => e.fmt(f),
            RxError::WrongService { expected, got } => {
                write!(f, "{got} TPDU on a {expected} channel")
            }
            RxError::PayloadTooLong { len, max } => {
                write!(
                    f,
                    "TPDU payload of {len} bytes is above the TPDU size {max}"
                )
            }
            RxError::AckNotExpected => f.write_str("ack on a channel without acks"),
            RxError::AckBeyondSent { cum } => write!(f, "ack of {cum} acknowledges unsent TPDUs"),
            RxError::TriggerNotSent { trigger } => {
                write!(f, "ack triggered by unsent TPDU {trigger}")
            }
        }
    }
}

impl core::error::Error for RxError {}

/// An endpoint's figures: the reliable sender's state now, and counters since creation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Reliable: the congestion window, TPDUs.
    pub cwnd: u32,
    /// Reliable: the slow-start threshold, TPDUs.
    pub ssthresh: u32,
    /// Reliable: TPDUs in flight (sent, not known received or lost).
    pub flight: u32,
    /// Reliable: the peer's window from the oldest unacknowledged TPDU, TPDUs.
    pub peer_window: u32,
    /// Reliable: the smoothed round trip, once measured.
    pub srtt: Option<Duration>,
    /// Reliable: the least round trip measured (the path without queues), once measured.
    pub min_rtt: Option<Duration>,
    /// Reliable: its mean deviation.
    pub rttvar: Duration,
    /// Reliable: the retransmission timeout now (back-off included).
    pub rto: Duration,
    /// Messages accepted by `send_message`.
    pub msgs_sent: u64,
    /// Their bytes.
    pub bytes_sent: u64,
    /// Data TPDUs sent for the first time.
    pub tpdus_sent: u64,
    /// TPDUs found lost by SMART (each ack whose trigger shows them missing).
    pub smart_losses: u64,
    /// TPDUs resent because SMART found them lost.
    pub smart_resends: u64,
    /// TPDUs resent after a timeout.
    pub timeout_resends: u64,
    /// Loss probes sent.
    pub probes: u64,
    /// Window probes sent (a closed receive window with data waiting).
    pub window_probes: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Cuts of the window on losses found by SMART: halvings, and those counted below.
    pub window_cuts: u64,
    /// Of those, cuts by a fifth only: the loss looked random (no queue on the path, or
    /// the losses scattered rather than in runs).
    pub random_loss_cuts: u64,
    /// Acks sent (alone or riding on data).
    pub acks_sent: u64,
    /// Of those, acks that rode on a data TPDU.
    pub acks_carried: u64,
    /// Acks taken.
    pub acks_received: u64,
    /// Acks older than the cumulative ack already held (duplicated), ignored.
    pub acks_old: u64,
    /// Acks dropped because `poll_transmit` was not called for a long time.
    pub acks_dropped: u64,
    /// Acks without trigger sent because the application's reading opened the window.
    pub window_updates: u64,
    /// Data TPDUs taken (duplicates included).
    pub tpdus_received: u64,
    /// Data TPDUs received twice (dropped).
    pub duplicates: u64,
    /// Reliable: data TPDUs past the receive window (dropped).
    pub beyond_window: u64,
    /// Best effort: TPDUs of messages already delivered or reported lost (dropped).
    pub late: u64,
    /// Messages delivered.
    pub msgs_delivered: u64,
    /// Their bytes.
    pub bytes_delivered: u64,
    /// Best effort: messages reported lost.
    pub msgs_lost: u64,
    /// Best effort: `Lost` reports made.
    pub loss_reports: u64,
    /// Best effort: messages lost because the application left its messages in the buffer.
    pub overruns: u64,
    /// TPDUs that break the message structure (a broken peer): dropped.
    pub protocol_errors: u64,
    /// Frames refused by `handle_tpdu`.
    pub refused: u64,
    /// Guaranteed: releases of the leaky bucket (activations).
    pub activations: u64,
    /// Guaranteed: the spacing factor X of the last batch.
    pub spacing: u32,
    /// The payload size new messages are segmented with.
    pub tpdu_size: usize,
    /// Changes of it made by the sender itself ([`Config::adaptive_tpdu_size`]).
    pub tpdu_size_changes: u64,
}

/// One end of a duplex transport channel.
///
/// It sends data TPDUs and acks on its transmit VC and takes data TPDUs and acks from its
/// receive VC; the two VCs are the driver's business, each TPDU is one AAL5 frame.
///
/// # Call contract
///
/// * Commands: [`send_message`](Endpoint::send_message) copies a message into the send
///   queue (or refuses it, [`SendError`]).
/// * Input: [`handle_tpdu`](Endpoint::handle_tpdu) with each AAL5 SDU received on the
///   receive VC; [`handle_timeout`](Endpoint::handle_timeout) at or after
///   [`poll_timeout`](Endpoint::poll_timeout).
/// * Output: after any call, drain [`poll_transmit`](Endpoint::poll_transmit) (frames for
///   the transmit VC, in order; acks before data) and [`poll_event`](Endpoint::poll_event)
///   until `None`, then wait until [`poll_timeout`](Endpoint::poll_timeout) or the next
///   input. `poll_transmit` also answers "may a TPDU go now?": the window, the receive
///   window and the guaranteed rate's bucket are applied there, so a driver whose link is
///   busy simply calls it later.
/// * Time comes in as `now` and must not go backwards (an earlier `now` is taken as the
///   latest seen).
///
/// Nothing panics on peer input: a frame that is not a TPDU of this channel is refused
/// with an [`RxError`] and changes nothing.
#[derive(Debug)]
pub struct Endpoint {
    config: Config,
    tx: Sender,
    rx: Receiver,
    stats: Stats,
    now: Instant,
    /// Acks of TPDUs that give the application a message are held ([`Endpoint::hold_acks`]).
    hold_acks: bool,
    /// The newest ack waits for a data TPDU to ride on.
    held: bool,
}

impl Endpoint {
    /// An endpoint that numbers what it sends from `local` and expects the peer's TPDUs
    /// numbered from `remote`.
    pub fn new(config: Config, local: Isn, remote: Isn) -> Result<Endpoint, ConfigError> {
        config.validate()?;
        Ok(Endpoint {
            tx: Sender::new(&config, local.seq, local.msg),
            rx: Receiver::new(&config, remote.seq, remote.msg),
            config,
            stats: Stats::default(),
            now: Instant::ZERO,
            hold_acks: false,
            held: false,
        })
    }

    /// The settings.
    pub const fn config(&self) -> &Config {
        &self.config
    }

    fn clock(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now);
        self.now
    }

    /// Queues a message; returns its message sequence number.
    pub fn send_message(&mut self, now: Instant, data: &[u8]) -> Result<MsgSeq, SendError> {
        let now = self.clock(now);
        let msg = self.tx.send_message(data, &mut self.stats)?;
        self.tx.update_timers(now);
        Ok(MsgSeq(msg))
    }

    /// Takes one frame from the receive VC.
    pub fn handle_tpdu(&mut self, now: Instant, frame: &[u8]) -> Result<(), RxError> {
        let now = self.clock(now);
        let r = self.take(now, frame);
        if r.is_err() {
            self.stats.refused += 1;
        }
        r
    }

    fn take(&mut self, now: Instant, frame: &[u8]) -> Result<(), RxError> {
        let expected = self.config.service.kind();
        match Repr::parse(frame)? {
            Repr::Data {
                header,
                ack,
                payload,
            } => {
                if header.service != expected {
                    return Err(RxError::WrongService {
                        expected,
                        got: header.service,
                    });
                }
                if let Some(ack) = ack {
                    // Checked before the ack is taken: a refused frame changes nothing.
                    if payload.len() > self.config.tpdu_size {
                        return Err(RxError::PayloadTooLong {
                            len: payload.len(),
                            max: self.config.tpdu_size,
                        });
                    }
                    self.take_ack(now, &ack)?;
                }
                self.rx.on_data(now, &header, payload, &mut self.stats)?;
                if self.hold_acks && self.rx.has_events() {
                    self.held = true;
                }
                Ok(())
            }
            Repr::Ack(ack) => {
                if ack.service != expected {
                    return Err(RxError::WrongService {
                        expected,
                        got: ack.service,
                    });
                }
                self.take_ack(now, &ack)
            }
        }
    }

    fn take_ack(&mut self, now: Instant, ack: &Ack) -> Result<(), RxError> {
        if !self.config.service.acks() {
            return Err(RxError::AckNotExpected);
        }
        self.tx.on_ack(now, ack, &mut self.stats)
    }

    /// The next frame for the transmit VC, written into `buf`; its length. `buf` must hold
    /// [`Config::max_frame_len`] bytes (a shorter one gets nothing).
    ///
    /// Acks go before data, each alone, except the newest: it rides on the data TPDU that
    /// goes now if that has room, and goes alone otherwise (after that TPDU, if one went)
    /// unless [held](Endpoint::hold_acks).
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let now = self.clock(now);
        if buf.len() < self.config.max_frame_len() {
            return None;
        }
        if self.rx.acks_queued() > 1
            && let Some(ack) = self.rx.poll_ack()
        {
            return Some(self.send_ack(&ack, buf));
        }
        let newest = self.rx.peek_ack();
        let mut ride = newest;
        let n = self.tx.poll_transmit(now, buf, &mut ride, &mut self.stats);
        self.tx.update_timers(now);
        match (n, newest) {
            (Some(n), Some(_)) if ride.is_none() => {
                self.rx.poll_ack();
                self.stats.acks_sent += 1;
                self.stats.acks_carried += 1;
                self.held = false;
                Some(n)
            }
            (Some(n), Some(_)) => {
                // No room on it: the ack goes alone next, held or not.
                self.held = false;
                Some(n)
            }
            (Some(n), None) => Some(n),
            (None, Some(ack)) if !self.held => {
                self.rx.poll_ack();
                Some(self.send_ack(&ack, buf))
            }
            (None, _) => None,
        }
    }

    /// Whether [`poll_transmit`](Endpoint::poll_transmit) may have a frame now: false only
    /// when it surely has none, so that a driver which must find a buffer before asking
    /// can skip both.
    pub fn may_transmit(&self) -> bool {
        let acks = self.rx.acks_queued();
        acks > 1 || (acks == 1 && !self.held) || self.tx.may_transmit()
    }

    fn send_ack(&mut self, ack: &Ack, buf: &mut [u8]) -> usize {
        emit_ack(ack, buf);
        self.stats.acks_sent += 1;
        ACK_LEN
    }

    /// Holds acks back for a reply (off by default). While on, the ack of a data TPDU
    /// taken while the application has a message waiting ([`Endpoint::has_events`]) is
    /// not sent alone: it waits until a data TPDU carries it or the driver calls
    /// [`release_ack`](Endpoint::release_ack). Older acks still go at once.
    ///
    /// For a driver whose application is given messages by calls: it releases at the
    /// start of the application's next call, and a send releases after queueing its
    /// message, so that the message carries the ack. A request and its reply then move one
    /// frame each way, not two. The driver must release soon: a held ack delays the
    /// peer's window and, held past the peer's timeout, costs it a retransmission.
    pub fn hold_acks(&mut self, on: bool) {
        self.hold_acks = on;
        if !on {
            self.held = false;
        }
    }

    /// Whether the newest ack is held ([`hold_acks`](Endpoint::hold_acks)).
    pub fn ack_held(&self) -> bool {
        self.held && self.rx.acks_queued() > 0
    }

    /// Ends the hold of the newest ack ([`hold_acks`](Endpoint::hold_acks)): the next
    /// [`poll_transmit`](Endpoint::poll_transmit) sends it, on data if any goes.
    pub fn release_ack(&mut self) {
        self.held = false;
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.rx.poll_event(&mut self.stats)
    }

    /// When [`handle_timeout`](Endpoint::handle_timeout) is next due, if ever.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match (self.tx.poll_timeout(), self.rx.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.clock(now);
        self.tx.handle_timeout(now, &mut self.stats);
        self.rx.handle_timeout(now, &mut self.stats);
    }

    /// The figures now.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats;
        self.tx.fill(&mut s);
        s
    }

    /// Segments the messages sent from now on into TPDUs of `size` payload bytes (at most
    /// [`Config::tpdu_size`], which the receiver takes; for instance
    /// [`best_tpdu_size`](crate::tpdu_size::best_tpdu_size) of the measured loss). Refused
    /// if the longest message would then not fit the receive buffer.
    pub fn set_tpdu_size(&mut self, size: usize) -> Result<(), ConfigError> {
        let mut c = self.config;
        if size > c.tpdu_size {
            return Err(ConfigError::TpduSize {
                size,
                max: c.tpdu_size,
            });
        }
        c.tpdu_size = size;
        c.validate()?;
        self.tx.set_tpdu_size(size);
        Ok(())
    }

    /// Reliable: a round trip the driver measured on this channel's path before it
    /// carried TPDUs (its handshake's), taken as the first round-trip sample if none was
    /// measured yet (ignored after, and on other services). Without it the sender knows
    /// no round trip until an ack of a TPDU comes back: a first TPDU that is lost waits
    /// for the timeout (`initial_rto`, doubling while the loss repeats), where with it the
    /// loss probe finds the loss after max(2 round trips, `min_probe`).
    pub fn set_rtt_hint(&mut self, rtt: Duration) {
        self.tx.rtt_hint(rtt);
    }

    /// Message bytes the sender holds (queued, or not yet acknowledged on a reliable
    /// channel).
    pub fn queued_bytes(&self) -> usize {
        self.tx.queued_bytes()
    }

    /// Whether the sender holds nothing (all sent, and acknowledged if reliable).
    pub fn send_idle(&self) -> bool {
        self.tx.is_idle()
    }

    /// Reliable: when the next ack is due if nothing is lost (the last TPDU's transmission
    /// plus the smoothed round trip), and that round trip; `None` with nothing in flight
    /// or no round trip measured yet, and on other services. Not a timer: a driver that
    /// polls may look for input more eagerly until then.
    pub fn ack_due(&self) -> Option<(Instant, Duration)> {
        self.tx.ack_due()
    }

    /// Whether events wait for [`poll_event`](Endpoint::poll_event).
    pub fn has_events(&self) -> bool {
        self.rx.has_events()
    }

    /// The receive window this endpoint would advertise now, TPDUs.
    pub fn receive_window(&self) -> u32 {
        self.rx.window()
    }
}

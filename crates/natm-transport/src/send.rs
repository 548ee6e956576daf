//! The sending half of an endpoint: segmentation, and per service the release of TPDUs.
//!
//! * Reliable: SMART (Keshav & Morgan). Every ack names the TPDU that caused it (its
//!   trigger), so the sender knows each TPDU that got through. A TPDU still unaccounted for
//!   whose last transmission went before the trigger's (first) transmission was lost —
//!   ATM keeps a VC's frames in order, so it cannot still be on its way — and is resent at
//!   once, without a timeout. The rule compares transmission stamps, not sequence numbers
//!   (the ack echoes which transmission of its trigger arrived), so a resent TPDU is resent
//!   again only when an ack for something sent *after* the resend shows it missing: at most
//!   once per round trip, as SMART asks.
//! * The window is Reno's, in TPDUs: 1 at the start; +1 per ack of new data below the
//!   slow-start threshold (doubling per round trip), +1 per window of acks above it — one
//!   TPDU of the configured size per round trip: when the TPDUs in use are smaller (the
//!   adaptive size, or `set_tpdu_size`), +k of them, k the ratio of their cells, as TCP
//!   counts bytes and not segments (else a smaller TPDU would slow the growth and, under
//!   random loss, Reno's window in bytes would shrink with the TPDU), spread over the
//!   acks (k/cwnd each, as TCP's MSS²/cwnd). On a loss found by SMART, window and
//!   threshold halve (never below 2), at most once per window of data (the recovery
//!   point: a loss of a TPDU sent before the last cut does not cut again); on a timeout
//!   the threshold becomes half the flight and the window 1. SMART resends go at once
//!   (the lost TPDU has left the pipe: one out, one in); what a timeout found lost and
//!   new data go when the flight is below the window.
//! * Random loss is not congestion (not in the seed; TCP Veno's rule, Fu & Liew 2003):
//!   the cut is a fifth instead of a half when the loss does not look like a full
//!   queue's — the path holds less than three round trips' window growth in queues
//!   (Veno's backlog: the window times the share of the smoothed round trip above the
//!   least one), or the adaptive size's last estimate found losses scattered at a steady
//!   rate rather than in runs. A window halved at every random loss averages about 500
//!   cells at 0.1 % cell loss and 160 at 1 % on a 2 ms round trip, against a pipe of
//!   700 at OC-3c; cut by a fifth it fills the pipe. A full queue still halves it: its
//!   drops come in runs, and it holds more than the backlog allowed. The price: senders
//!   whose drops at a shared queue interleave may each see them scattered and back off by
//!   a fifth, not half — still additive increase and multiplicative decrease, so they
//!   converge, at a higher loss.
//! * Loss probe (not in the seed; RACK-TLP's idea): with TPDUs in flight and no ack for
//!   max(2·srtt, `min_probe`), the TPDU in flight sent last (or a new one) is sent. Its
//!   ack's trigger lets SMART find everything lost before it, so losing a whole flight —
//!   frequent at high loss with a small window — costs a probe time, not the timeout
//!   with its 50 ms floor and window of 1. Probes back off and never change the window.
//! * Receive window: never a TPDU at or past the highest `cum + window` advertised (that
//!   edge never moves back). When only the window holds data back and nothing is in flight,
//!   a persist timer (the RTO, backing off) sends the next TPDU as a window probe, so a lost
//!   window update never stalls the channel.
//! * TPDU size (optional, [`Config::adaptive_tpdu_size`]): the sender starts with one-cell
//!   TPDUs (the first 256; a TPDU sent keeps its size, and a large first one can be all
//!   but impossible to deliver at high loss), counts the TPDUs that got through and those
//!   SMART found lost, with their cells; every 256 outcomes (or 32 losses) it
//!   estimates the cell loss from them (losses that come in runs, as a full queue drops
//!   frames, count a run as one) and, when [`best_tpdu_size`] of it is expected to
//!   carry more than 2 % more than the size in use, segments the messages queued from then
//!   on with it — each message at no smaller a size than cuts it into the receive buffer's
//!   TPDUs, since the receiver holds a message whole. Messages queued of which nothing was
//!   sent are segmented again; a message partly sent keeps its TPDUs. Once the loss is
//!   estimated, each message is cut into even shares, as many as cost the fewest cells
//!   expected per message delivered ([`Sender::split`]), so no short tail costs a TPDU of
//!   the window.
//! * Best effort: TPDUs go as soon as asked for, once; nothing is kept.
//! * Guaranteed: as best effort, but released by a [`Smoother`] (a leaky bucket at the
//!   rate). Adaptive smoothing (the seed's spacing factor X): the head of the queue is
//!   offered to the bucket as a batch of X TPDUs, X growing with the TPDUs queued when the
//!   batch is formed (see [`spacing_factor`]); batches leave X·Δ apart (Δ one TPDU's time at
//!   the rate). A deep queue is a bulk sender: it gets fewer, larger activations (each a
//!   wake-up of the driver), a shallow one the smoothest spacing and the least delay. The
//!   bucket is [`BUCKET_TPDUS`] full TPDUs deep, one more than the largest batch: a driver
//!   in real time wakes a little late, and a bucket only as deep as the batch lost that
//!   lateness at every activation (1.5 % of the rate with 8 KiB TPDUs on the lab). The
//!   flow conforms to a token bucket (rate, 7 TPDUs), which is what admission has to
//!   reserve for.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use natm_core::{Duration, Instant};
use natm_traffic::smooth::{Smoother, SmootherConfig};

use crate::config::{Config, Service, frame_cells};
use crate::endpoint::{RxError, SendError, Stats};
use crate::header::{Ack, DATA_HEADER_LEN, DataHeader, ServiceKind, emit_data_header, ride_len};
use crate::payload::Payload;
use crate::rtt::Rtt;
use crate::seq::{HALF, before, dist};
use crate::tpdu_size::{best_tpdu_size, cell_loss_from_frames, goodput_ppm_of, survivals};

/// The largest spacing factor (TPDUs per activation of the guaranteed bucket).
pub const X_MAX: u32 = 6;

/// The guaranteed bucket's depth in full TPDUs: the largest batch and one TPDU of
/// tolerance for an activation that comes late.
pub const BUCKET_TPDUS: u32 = X_MAX + 1;

/// The spacing factor X for a batch formed with `queued` TPDUs waiting: 1 below 2, 2 below
/// 4, 3 below 8, 4 below 16, 5 below 32, else 6: one step per doubling of the backlog, so
/// a trickle stays smooth and only a real backlog is sent in batches.
pub const fn spacing_factor(queued: usize) -> u32 {
    match queued {
        0..2 => 1,
        2..4 => 2,
        4..8 => 3,
        8..16 => 4,
        16..32 => 5,
        _ => X_MAX,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TxState {
    Unsent,
    InFlight,
    /// Found lost by SMART, to resend at once.
    SmartLost,
    /// Found lost by a timeout (or dropped beyond the window), to resend as the window allows.
    TimeoutLost,
    Received,
}

#[derive(Debug)]
struct TxTpdu {
    msg: u32,
    first: bool,
    last: bool,
    payload: Payload,
    state: TxState,
    /// Transmission stamps (a counter): the first and the latest.
    first_stamp: u64,
    last_stamp: u64,
    sent_at: Instant,
    sends: u32,
}

#[derive(Debug)]
struct Gate {
    bucket: Smoother,
    /// TPDUs of the batch offered to the bucket and not yet released.
    offered: u32,
    /// TPDUs released and not yet sent.
    released: u32,
}

/// What the reliable sender runs.
#[derive(Debug)]
struct Control {
    cwnd: u32,
    ssthresh: u32,
    /// Acks counted toward the next +1 in congestion avoidance.
    acc: u32,
    max_window: u32,
    /// The highest `cum + window` advertised: never a TPDU at or past it.
    right_edge: u32,
    flight: u32,
    /// A SMART loss of a TPDU at or after this halves the window again.
    recovery: u32,
    smart_q: VecDeque<u32>,
    rto_q: VecDeque<u32>,
    rtt: Rtt,
    min_probe: Duration,
    rto_at: Option<Instant>,
    probe_at: Option<Instant>,
    persist_at: Option<Instant>,
    probes: u32,
    persist_backoff: u32,
    probe_pending: bool,
    persist_pending: bool,
    adapt: Option<Adapt>,
    /// Cells of a TPDU of the configured size: the window's growth in congestion
    /// avoidance, one such TPDU per round trip whatever the size in use.
    full_cells: u32,
    /// When the last TPDU was sent.
    last_sent_at: Instant,
}

impl Control {
    /// Whether the path holds less than [`QUEUE_GROWTHS`] round trips' window growth in
    /// queues (Veno's backlog, in cells: the window times the share of the smoothed round
    /// trip above the least one), so that a loss now is more likely random than a full
    /// queue's. `used`: cells of a TPDU of the size in use.
    fn queue_free(&self, used: u32) -> bool {
        let (Some(s), Some(l)) = (self.rtt.srtt(), self.rtt.least()) else {
            return false;
        };
        let s = s.as_nanos();
        let window = u64::from(self.cwnd) * u64::from(used);
        window.saturating_mul(s.saturating_sub(l.as_nanos()))
            <= (QUEUE_GROWTHS * u64::from(self.full_cells)).saturating_mul(s)
    }

    /// A loss SMART found past the recovery point: window and threshold halve, or lose a
    /// fifth if the loss looks random ([`Control::queue_free`] for a TPDU of `used` cells,
    /// or the loss estimate's [`Adapt::scattered`]); never below 2.
    fn cut(&mut self, used: u32, stats: &mut Stats) {
        let random = self.queue_free(used) || self.adapt.as_ref().is_some_and(|a| a.scattered);
        let cut = if random {
            stats.random_loss_cuts += 1;
            (u64::from(self.cwnd) * 4 / 5) as u32
        } else {
            self.cwnd / 2
        };
        self.ssthresh = cut.max(2);
        self.cwnd = self.cwnd.min(self.ssthresh);
        self.acc = 0;
        stats.window_cuts += 1;
    }

    /// An ack of new data with TPDUs of `used` cells in use: +1 below the threshold;
    /// above it one TPDU of the configured size per round trip, counted in TPDUs of the
    /// size in use (as TCP counts bytes: smaller segments, more of them), and spread over
    /// the acks, k/cwnd each, as TCP's MSS²/cwnd. A step only at the end of a window of
    /// acks was lost whenever a cut came first, as it does nearly every round trip at 1 %
    /// cell loss (the lab's window stayed at 60–100 seven-cell TPDUs, half the line).
    fn grow(&mut self, used: u32) {
        if self.cwnd < self.ssthresh {
            self.cwnd += 1;
        } else {
            // TPDUs of the configured size (the common case) need no division.
            let k = if used == self.full_cells {
                1
            } else {
                (self.full_cells / used).max(1)
            };
            self.acc = self.acc.saturating_add(k);
            while self.acc >= self.cwnd && self.cwnd < self.max_window {
                self.acc -= self.cwnd;
                self.cwnd += 1;
            }
            if self.cwnd >= self.max_window {
                // Nothing accrues at the ceiling (else `acc` would grow without bound).
                self.acc = 0;
            }
        }
        self.cwnd = self.cwnd.min(self.max_window);
    }
}

/// Veno's β, in round trips of congestion-avoidance growth (one TPDU of the configured
/// size each): a smaller backlog reads a loss as random.
const QUEUE_GROWTHS: u64 = 3;

/// The loss the reliable sender sees, for a TPDU size that follows it.
#[derive(Debug)]
struct Adapt {
    /// TPDUs that got through on a transmission, and that SMART found lost.
    ok: u64,
    lost: u64,
    /// The cells of both.
    cells: u64,
    /// Losses recorded right after a loss, and whether the last outcome was one
    /// ([`Adapt::in_runs`]).
    runs: u64,
    prev_lost: bool,
    /// The last estimate saw at least [`SCATTERED_LOSSES`] losses and they did not come in
    /// runs: random loss at a steady rate, not a full queue's drops.
    scattered: bool,
    /// The largest size (the receiver's).
    max: usize,
    /// The cell loss (ppb) `best` and `survival` were computed for.
    p: Option<u64>,
    /// From the last estimate: the best size for a stream, and `(1 − p)^c` for frames of
    /// `c` cells (index `c`, 62 fraction bits) up to the largest size's, for the split of
    /// each message ([`Sender::split`]). Empty before the first estimate.
    best: usize,
    survival: Vec<u64>,
}

/// [`expected_goodput_ppm`](crate::tpdu_size::expected_goodput_ppm) of a payload of `size`
/// bytes, from the table of `(1 − p)^c` ([`survivals`]) instead of its powers again.
fn goodput_ppm(survival: &[u64], size: usize) -> u64 {
    let c = frame_cells(DATA_HEADER_LEN + size);
    let s = survival.get(c as usize).copied().unwrap_or(0);
    goodput_ppm_of(u128::from(s), size, c)
}

/// Outcomes between two estimates.
const ADAPT_EVERY: u64 = 256;

/// The payload of a one-cell TPDU: the size the adaptive sender starts with.
const PROBE_SIZE: usize = 48 - DATA_HEADER_LEN - 8;

/// Losses that make an estimate sooner: at 1 % cell loss the first 8 KiB TPDUs are lost
/// 82 % of the time, and waiting for 256 outcomes of them cost the channel its first
/// half second (timeouts behind a head TPDU sent eight times).
const ADAPT_LOSSES: u64 = 32;

/// Losses an estimate needs to call them scattered ([`Adapt::scattered`]).
const SCATTERED_LOSSES: u64 = 8;

/// The expected goodput gain, %, that a new TPDU size must bring.
const ADAPT_GAIN_PCT: u64 = 2;

impl Adapt {
    fn record(&mut self, lost: bool, payload: usize) {
        if lost {
            self.lost += 1;
            self.runs += u64::from(self.prev_lost);
        } else {
            self.ok += 1;
        }
        self.prev_lost = lost;
        self.cells += u64::from(frame_cells(DATA_HEADER_LEN + payload));
    }

    /// Whether the losses came in runs, far more often one right after another than
    /// independent losses at their rate would (`lost · f` such pairs expected, `f` the
    /// frame loss, plus three standard deviations and two). A switch's queue drops the
    /// frames that find it full one after another whatever their size, and SMART finds a
    /// run of them lost at one ack; random cell loss hits a TPDU by its size, one here and
    /// one there. Integer arithmetic: both sides times `n²`.
    fn in_runs(lost: u64, runs: u64, n: u64) -> bool {
        let (lost, runs, n) = (u128::from(lost), u128::from(runs), u128::from(n));
        let excess = (runs * n).saturating_sub(lost * lost + 2 * n);
        excess * excess > 9 * lost * lost * (n - lost)
    }

    /// A new size once enough outcomes are in, if it is worth a change from `now`; the
    /// counts then halve, so the estimate follows a loss that changes while remembering
    /// some of the past.
    fn estimate(&mut self, now: usize) -> Option<usize> {
        let n = self.ok + self.lost;
        if n < ADAPT_EVERY && self.lost < ADAPT_LOSSES {
            return None;
        }
        // A run of losses is one event: congestion drops then do not shrink the TPDUs, which
        // would only add per-TPDU work (on the lab's direct path at unlimited rate the
        // switch's drops took the size to ~1 KiB and the goodput to 0.8 of a fixed 8 KiB).
        let in_runs = Self::in_runs(self.lost, self.runs, n);
        self.scattered = !in_runs && self.lost >= SCATTERED_LOSSES;
        let lost = if in_runs {
            self.lost.saturating_sub(self.runs)
        } else {
            self.lost
        };
        let p = cell_loss_from_frames(lost, n, self.cells / n);
        self.ok /= 2;
        self.lost /= 2;
        self.runs /= 2;
        self.cells /= 2;
        // The same loss as last time (no loss at all, typically): the same size and table.
        if self.p != Some(p) {
            self.p = Some(p);
            self.best = best_tpdu_size(p, self.max);
            let cells = frame_cells(DATA_HEADER_LEN + self.max) as usize;
            self.survival.clear();
            self.survival.extend(survivals(p).take(cells + 1));
        }
        let best = self.best;
        // Only for a gain of more than ADAPT_GAIN: a gain of a cell or so is the estimate's
        // noise, and each change segments the queue again.
        let gain = |size| goodput_ppm(&self.survival, size);
        (gain(best) > gain(now) + gain(now) * ADAPT_GAIN_PCT / 100).then_some(best)
    }
}

#[derive(Debug)]
pub(crate) struct Sender {
    kind: ServiceKind,
    tpdu_size: usize,
    /// Frame bytes after the data header: the payload, and an ack riding on it.
    room: usize,
    max_message: usize,
    /// The receive buffer, TPDUs: a message is never cut into more.
    recv_buffer: usize,
    /// Adaptive, before the first estimate: one-cell TPDUs still to cut ([`Sender::size_for`]).
    probe_left: usize,
    queue_limit: usize,
    /// From `una` on: sent ones (`..sent`), then unsent ones.
    buf: VecDeque<TxTpdu>,
    una: u32,
    sent: u32,
    next_msg: u32,
    queued_bytes: usize,
    stamp: u64,
    ctl: Option<Control>,
    gate: Option<Gate>,
}

impl Sender {
    pub(crate) fn new(c: &Config, seq: u32, msg: u32) -> Sender {
        let ctl = (c.service == Service::Reliable).then(|| Control {
            cwnd: 1,
            ssthresh: (c.max_window / 2).max(2),
            acc: 0,
            max_window: c.max_window,
            // One TPDU until the first ack says how much the receiver takes.
            right_edge: seq.wrapping_add(1),
            flight: 0,
            recovery: seq,
            smart_q: VecDeque::new(),
            rto_q: VecDeque::new(),
            rtt: Rtt::new(c),
            min_probe: c.min_probe,
            rto_at: None,
            probe_at: None,
            persist_at: None,
            probes: 0,
            persist_backoff: 0,
            probe_pending: false,
            persist_pending: false,
            adapt: c.adaptive_tpdu_size.then_some(Adapt {
                ok: 0,
                lost: 0,
                cells: 0,
                runs: 0,
                prev_lost: false,
                scattered: false,
                max: c.tpdu_size,
                p: None,
                best: c.tpdu_size,
                survival: Vec::new(),
            }),
            full_cells: frame_cells(DATA_HEADER_LEN + c.tpdu_size),
            last_sent_at: Instant::ZERO,
        });
        let gate = match c.service {
            Service::Guaranteed { rate } => {
                let depth = BUCKET_TPDUS * frame_cells(DATA_HEADER_LEN + c.tpdu_size);
                let bucket = Smoother::new(SmootherConfig {
                    rate,
                    depth,
                    queue_limit: u64::MAX,
                })
                .expect("a validated config has a rate of at least 1 and a TPDU of 1 cell");
                Some(Gate {
                    bucket,
                    offered: 0,
                    released: 0,
                })
            }
            _ => None,
        };
        Sender {
            kind: c.service.kind(),
            tpdu_size: c.tpdu_size,
            room: c.max_frame_len() - DATA_HEADER_LEN,
            max_message: c.max_message,
            recv_buffer: (c.recv_buffer as usize).max(1),
            probe_left: if ctl.as_ref().is_some_and(|c| c.adapt.is_some()) {
                ADAPT_EVERY as usize
            } else {
                0
            },
            queue_limit: c.send_queue_limit,
            buf: VecDeque::new(),
            una: seq,
            sent: 0,
            next_msg: msg,
            queued_bytes: 0,
            stamp: 0,
            ctl,
            gate,
        }
    }

    /// A round trip the driver measured before the channel carried TPDUs.
    pub(crate) fn rtt_hint(&mut self, rtt: Duration) {
        if let Some(ctl) = self.ctl.as_mut() {
            ctl.rtt.hint(rtt);
        }
    }

    /// Segments messages queued from now on into TPDUs of `size` payload bytes.
    pub(crate) fn set_tpdu_size(&mut self, size: usize) {
        self.tpdu_size = size;
    }

    pub(crate) fn queued_bytes(&self) -> usize {
        self.queued_bytes
    }

    /// Segments and queues one message; returns its message sequence number.
    pub(crate) fn send_message(
        &mut self,
        data: &[u8],
        stats: &mut Stats,
    ) -> Result<u32, SendError> {
        if data.len() > self.max_message {
            return Err(SendError::MessageTooLarge {
                len: data.len(),
                max: self.max_message,
            });
        }
        let n = self.split(data.len());
        // Far below half the sequence space, so that serial order is never ambiguous.
        let room = self.queued_bytes + data.len() <= self.queue_limit
            && self.buf.len() + n <= (HALF / 2) as usize;
        if !room {
            return Err(SendError::QueueFull {
                queued: self.queued_bytes,
                limit: self.queue_limit,
            });
        }
        let msg = self.next_msg;
        self.next_msg = msg.wrapping_add(1);
        self.segment(msg, data, n);
        self.queued_bytes += data.len();
        stats.msgs_sent += 1;
        stats.bytes_sent += data.len() as u64;
        Ok(msg)
    }

    /// The TPDU size for a message of `len` bytes: the current one, or the smallest that
    /// cuts it into no more TPDUs than the receive buffer holds (the receiver holds a
    /// message whole). Per message, so that a smaller size can serve the messages that
    /// fit it: a floor from the longest message allowed (1 MiB in 256 TPDUs: 4 KiB) kept
    /// 8 KiB messages at 10.5 Mbit/s under 1 % cell loss on the lab.
    ///
    /// The adaptive sender starts with one-cell TPDUs, the first [`ADAPT_EVERY`] of them,
    /// until its first estimate: a TPDU already sent keeps its size, and at 1 % cell loss an
    /// 8 KiB one gets through 18 % of the time, so a channel that began with them waited
    /// behind its first TPDU through timeouts backing off to a minute (lab runs of 400–645
    /// s). One-cell TPDUs get through at any loss a channel can live with, and their
    /// outcomes are the first estimate, which then cuts what is still unsent.
    fn size_for(&self, len: usize) -> usize {
        let size = if self.probe_left > 0 && self.estimated().is_none() {
            PROBE_SIZE.min(self.tpdu_size)
        } else {
            self.tpdu_size
        };
        size.max(len.div_ceil(self.recv_buffer))
    }

    /// How many TPDUs a message of `len` bytes is cut into.
    ///
    /// At a fixed size, or before the adaptive size has its first estimate: as many as
    /// [`Sender::size_for`] takes, the last one the rest. With the adaptive size's loss
    /// estimate: each TPDU an even share (the first ones a byte longer), and the count with
    /// the fewest cells expected to be sent per message delivered, `Σ cᵢ / (1 − p)^cᵢ`, from
    /// the fewest the largest size allows up to one more than the best size for a stream
    /// gives. The stream's size alone leaves a short tail that costs a TPDU of the window
    /// for a few bytes: a 1,500-byte message at 0.1 % cell loss and 1,372-byte TPDUs went
    /// as 1,372 + 128 B (33.9 cells expected); whole it is 33.0, so it stays whole, and at
    /// 1 % it goes as three of 500 B (36.9 against 44.1 whole).
    fn split(&self, len: usize) -> usize {
        let Some(a) = self.estimated() else {
            return len.div_ceil(self.size_for(len)).max(1);
        };
        let lo = len.div_ceil(a.max).max(1);
        if lo == 1 && frame_cells(DATA_HEADER_LEN + len) == 1 {
            // Whole in one cell: no cut can cost less.
            return 1;
        }
        let hi = (len.div_ceil(a.best.min(self.tpdu_size).max(1)) + 1)
            .min(self.recv_buffer)
            .min(len)
            .max(lo);
        let cost = |n: usize| -> u128 {
            let (q, r) = (len / n, len % n);
            let one = |bytes: usize| {
                let c = frame_cells(DATA_HEADER_LEN + bytes) as usize;
                let s = a.survival.get(c).copied().unwrap_or(0).max(1);
                // Cells × 2^32 ÷ (1 − p)^c: at most 2^11 · 2^94 before the division.
                (u128::from(c as u32) << 94) / u128::from(s)
            };
            one(q + 1) * r as u128 + one(q) * (n - r) as u128
        };
        let mut best = (lo, cost(lo));
        for n in lo + 1..=hi {
            let c = cost(n);
            if c < best.1 {
                best = (n, c);
            }
        }
        best.0
    }

    /// The adaptive size's state once it has a loss estimate.
    fn estimated(&self) -> Option<&Adapt> {
        let a = self.ctl.as_ref()?.adapt.as_ref()?;
        (!a.survival.is_empty()).then_some(a)
    }

    /// Queues message `msg` in `n` TPDUs ([`Sender::split`] of its length).
    fn segment(&mut self, msg: u32, data: &[u8], n: usize) {
        if n == 1 {
            // Whole: no share to compute (a request, a reply).
            self.probe_left = self.probe_left.saturating_sub(1);
            self.push_tpdu(msg, data, true, true);
            return;
        }
        let even = self.estimated().is_some();
        let size = self.size_for(data.len());
        let (q, r) = (data.len() / n, data.len() % n);
        self.probe_left = self.probe_left.saturating_sub(n);
        for k in 0..n {
            let part = if even {
                // The first r shares are a byte longer.
                let at = k * q + k.min(r);
                &data[at..at + q + usize::from(k < r)]
            } else {
                &data[k * size..data.len().min((k + 1) * size)]
            };
            self.push_tpdu(msg, part, k == 0, k + 1 == n);
        }
    }

    /// Queues one unsent TPDU of message `msg`.
    fn push_tpdu(&mut self, msg: u32, part: &[u8], first: bool, last: bool) {
        self.buf.push_back(TxTpdu {
            msg,
            first,
            last,
            payload: Payload::new(part),
            state: TxState::Unsent,
            first_stamp: 0,
            last_stamp: 0,
            sent_at: Instant::ZERO,
            sends: 0,
        });
    }

    /// Segments again, at the current TPDU size, the queued messages of which nothing was
    /// sent (a message partly sent keeps its TPDUs: their sequence numbers are taken).
    /// With a deep queue the new size would otherwise reach the line only after megabytes
    /// of TPDUs of the old one: 4 MiB of 8 KiB TPDUs at 1 % cell loss, 82 % of them lost.
    fn resegment(&mut self) {
        let sent = self.sent as usize;
        let Some(from) = (sent..self.buf.len()).find(|&i| self.buf[i].first) else {
            return;
        };
        let tail = self.buf.range(from..);
        let bytes: usize = tail.clone().map(|t| t.payload.len()).sum();
        let msgs = tail.filter(|t| t.first).count();
        // As in send_message: far below half the sequence space.
        if from + bytes / self.tpdu_size + msgs > (HALF / 2) as usize {
            return;
        }
        let mut data = Vec::new();
        for t in self.buf.drain(from..).collect::<Vec<_>>() {
            if t.first {
                data.clear();
            }
            data.extend_from_slice(&t.payload);
            if t.last {
                self.segment(t.msg, &data, self.split(data.len()));
            }
        }
    }

    /// Writes TPDU `i` of the buffer into `out`, with `ack` riding on it if it has room
    /// (then taken from `ack`); returns its length.
    fn write(&self, i: usize, ack: &mut Option<Ack>, out: &mut [u8]) -> usize {
        let t = &self.buf[i];
        let h = DataHeader {
            service: self.kind,
            first: t.first,
            last: t.last,
            seq: self.una.wrapping_add(i as u32),
            msg: t.msg,
            tx: t.sends as u8,
        };
        let ride = ack.take_if(|a| ride_len(a) + t.payload.len() <= self.room);
        let at = emit_data_header(&h, ride.as_ref(), out);
        let len = at + t.payload.len();
        out[at..len].copy_from_slice(&t.payload);
        len
    }

    /// The next TPDU to send, if any may go at `now`, with `ack` riding on it if it has
    /// room (then taken from `ack`). `out` holds the longest frame.
    pub(crate) fn poll_transmit(
        &mut self,
        now: Instant,
        out: &mut [u8],
        ack: &mut Option<Ack>,
        stats: &mut Stats,
    ) -> Option<usize> {
        match self.kind {
            ServiceKind::Reliable => self.poll_reliable(now, out, ack, stats),
            ServiceKind::BestEffort => self.pop_unreliable(out, stats),
            ServiceKind::Guaranteed => {
                let gate = self.gate.as_mut()?;
                if gate.released == 0 {
                    if gate.offered == 0 && !self.buf.is_empty() {
                        let x = spacing_factor(self.buf.len()).min(self.buf.len() as u32);
                        let cells = self
                            .buf
                            .iter()
                            .take(x as usize)
                            .map(|t| frame_cells(DATA_HEADER_LEN + t.payload.len()))
                            .sum();
                        // A batch is at most X_MAX full TPDUs: within the bucket's depth.
                        gate.bucket.offer(cells).ok()?;
                        gate.offered = x;
                        stats.spacing = x;
                    }
                    if gate.offered > 0 && gate.bucket.poll_release(now).is_some() {
                        gate.released = gate.offered;
                        gate.offered = 0;
                        stats.activations += 1;
                    }
                }
                if gate.released == 0 {
                    return None;
                }
                gate.released -= 1;
                self.pop_unreliable(out, stats)
            }
        }
    }

    fn pop_unreliable(&mut self, out: &mut [u8], stats: &mut Stats) -> Option<usize> {
        if self.buf.is_empty() {
            return None;
        }
        let len = self.write(0, &mut None, out);
        let t = self.buf.pop_front()?;
        self.queued_bytes -= t.payload.len();
        self.una = self.una.wrapping_add(1);
        stats.tpdus_sent += 1;
        Some(len)
    }

    fn poll_reliable(
        &mut self,
        now: Instant,
        out: &mut [u8],
        ack: &mut Option<Ack>,
        stats: &mut Stats,
    ) -> Option<usize> {
        let ctl = self.ctl.as_mut()?;
        // 1. SMART resends, at once.
        while let Some(seq) = ctl.smart_q.pop_front() {
            let i = dist(self.una, seq) as usize;
            if i < self.sent as usize && self.buf[i].state == TxState::SmartLost {
                stats.smart_resends += 1;
                return Some(self.transmit(i, now, ack, out));
            }
        }
        // 2. A loss probe: new data if the receiver takes it, else the TPDU in flight sent
        //    last (its ack then shows every other one in flight lost, or not).
        if ctl.probe_pending {
            ctl.probe_pending = false;
            let next = self.una.wrapping_add(self.sent);
            if (self.sent as usize) < self.buf.len() && before(next, ctl.right_edge) {
                let i = self.sent as usize;
                self.sent += 1;
                stats.tpdus_sent += 1;
                stats.probes += 1;
                return Some(self.transmit(i, now, ack, out));
            }
            let newest = (0..self.sent as usize)
                .filter(|&i| self.buf[i].state == TxState::InFlight)
                .max_by_key(|&i| self.buf[i].last_stamp);
            if let Some(i) = newest {
                stats.probes += 1;
                return Some(self.transmit(i, now, ack, out));
            }
        }
        // 3. A window probe: the next TPDU past a closed window.
        if ctl.persist_pending {
            ctl.persist_pending = false;
            let ctl = self.ctl.as_mut()?;
            while let Some(&seq) = ctl.rto_q.front() {
                let i = dist(self.una, seq) as usize;
                if i < self.sent as usize && self.buf[i].state == TxState::TimeoutLost {
                    break;
                }
                ctl.rto_q.pop_front();
            }
            let i = match ctl.rto_q.front() {
                Some(&seq) => Some(dist(self.una, seq) as usize),
                None => ((self.sent as usize) < self.buf.len()).then_some(self.sent as usize),
            };
            if let Some(i) = i {
                if i == self.sent as usize {
                    self.sent += 1;
                    stats.tpdus_sent += 1;
                } else {
                    ctl.rto_q.pop_front();
                }
                stats.window_probes += 1;
                return Some(self.transmit(i, now, ack, out));
            }
        }
        let ctl = self.ctl.as_mut()?;
        if ctl.flight >= ctl.cwnd {
            return None;
        }
        // 4. What a timeout found lost, in order.
        while let Some(&seq) = ctl.rto_q.front() {
            let i = dist(self.una, seq) as usize;
            if i >= self.sent as usize || self.buf[i].state != TxState::TimeoutLost {
                ctl.rto_q.pop_front();
                continue;
            }
            if !before(seq, ctl.right_edge) {
                return None;
            }
            ctl.rto_q.pop_front();
            stats.timeout_resends += 1;
            return Some(self.transmit(i, now, ack, out));
        }
        // 5. New data.
        let next = self.una.wrapping_add(self.sent);
        if (self.sent as usize) < self.buf.len() && before(next, ctl.right_edge) {
            let i = self.sent as usize;
            self.sent += 1;
            stats.tpdus_sent += 1;
            return Some(self.transmit(i, now, ack, out));
        }
        None
    }

    /// Whether [`Sender::poll_transmit`] may have a TPDU: false only when it surely has
    /// none (true may still find none: a stale SMART entry, a closed bucket).
    pub(crate) fn may_transmit(&self) -> bool {
        let Some(ctl) = &self.ctl else {
            return !self.buf.is_empty();
        };
        let unsent = (self.sent as usize) < self.buf.len()
            && before(self.una.wrapping_add(self.sent), ctl.right_edge);
        !ctl.smart_q.is_empty()
            || ctl.probe_pending
            || ctl.persist_pending
            || (ctl.flight < ctl.cwnd && (!ctl.rto_q.is_empty() || unsent))
    }

    /// Sends (or resends) buffer entry `i` of a reliable channel.
    fn transmit(&mut self, i: usize, now: Instant, ack: &mut Option<Ack>, out: &mut [u8]) -> usize {
        let len = self.write(i, ack, out);
        self.stamp += 1;
        let stamp = self.stamp;
        let Some(ctl) = self.ctl.as_mut() else {
            return len;
        };
        let t = &mut self.buf[i];
        if t.state != TxState::InFlight {
            ctl.flight += 1;
        }
        t.state = TxState::InFlight;
        if t.sends == 0 {
            t.first_stamp = stamp;
        }
        t.last_stamp = stamp;
        t.sends = t.sends.saturating_add(1);
        t.sent_at = now;
        ctl.last_sent_at = now;
        if ctl.rto_at.is_none() {
            ctl.rto_at = Some(now + ctl.rtt.rto());
        }
        if ctl.probe_at.is_none() {
            ctl.probe_at = Some(now + ctl.rtt.pto(ctl.min_probe));
        }
        len
    }

    /// An ack on a reliable channel.
    pub(crate) fn on_ack(
        &mut self,
        now: Instant,
        ack: &Ack,
        stats: &mut Stats,
    ) -> Result<(), RxError> {
        let Some(ctl) = self.ctl.as_mut() else {
            return Err(RxError::AckNotExpected);
        };
        let dc = dist(self.una, ack.cum);
        if dc > self.sent {
            if dc >= HALF {
                // Older than what is acked already (a duplicated ack): nothing new in it.
                stats.acks_old += 1;
                return Ok(());
            }
            return Err(RxError::AckBeyondSent { cum: ack.cum });
        }
        if let Some(t) = ack.trigger {
            let dt = dist(self.una, t);
            if dt >= self.sent && dt < HALF {
                return Err(RxError::TriggerNotSent { trigger: t });
            }
        }
        stats.acks_received += 1;
        let edge = ack.cum.wrapping_add(ack.window.min(HALF / 2));
        if before(ctl.right_edge, edge) {
            ctl.right_edge = edge;
        }
        // The trigger's first transmission, before the cumulative ack frees it.
        let mut trigger_stamp = None;
        if let Some(t) = ack.trigger {
            let dt = dist(self.una, t) as usize;
            if dt < self.sent as usize {
                let tp = &self.buf[dt];
                // The echo names the transmission that got through; if it is not the
                // latest (or cannot be told), the first is the safe guess: fewer TPDUs
                // are then taken as sent before it.
                let latest = tp.sends.wrapping_sub(1) as u8;
                let of_latest = tp.sends > 0 && tp.sends <= 256 && ack.echo == latest;
                if tp.state != TxState::Received && of_latest {
                    // Karn's ambiguity is gone when the echo names the latest transmission
                    // (as TCP's timestamps do): its round trip is measured, and the
                    // timeout's back-off ends. Without this, at high loss a backed-off
                    // timeout only grows (every resend's ack is ambiguous) up to max_rto.
                    ctl.rtt.sample(now - tp.sent_at);
                }
                trigger_stamp = Some(if of_latest {
                    tp.last_stamp
                } else {
                    tp.first_stamp
                });
            }
        }
        let mut newly = 0u32;
        for _ in 0..dc {
            let Some(t) = self.buf.pop_front() else { break };
            if t.state == TxState::InFlight {
                ctl.flight -= 1;
                if let Some(a) = ctl.adapt.as_mut() {
                    a.record(false, t.payload.len());
                }
            }
            if t.state != TxState::Received {
                newly += 1;
            }
            self.queued_bytes -= t.payload.len();
            self.sent -= 1;
            self.una = self.una.wrapping_add(1);
        }
        let mut received = |buf: &mut VecDeque<TxTpdu>, ctl: &mut Control, d: usize| {
            let t = &mut buf[d];
            if t.state == TxState::InFlight {
                ctl.flight -= 1;
                if let Some(a) = ctl.adapt.as_mut() {
                    a.record(false, t.payload.len());
                }
            }
            if t.state != TxState::Received {
                newly += 1;
                t.state = TxState::Received;
            }
        };
        if let Some(t) = ack.trigger {
            let d = dist(self.una, t) as usize;
            if d < self.sent as usize {
                received(&mut self.buf, ctl, d);
            }
        }
        // The bitmap's set bits only: most acks have none.
        let mut bits = ack.bitmap;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if i + 1 < self.sent as usize {
                received(&mut self.buf, ctl, i + 1);
            }
        }
        // SMART: what went before the trigger and is still unaccounted for is lost.
        if let (Some(t), Some(ts)) = (ack.trigger, trigger_stamp) {
            let upto = dist(self.una, t);
            if upto < HALF {
                for d in 0..upto as usize {
                    let tp = &mut self.buf[d];
                    if tp.state == TxState::InFlight && tp.last_stamp < ts {
                        tp.state = TxState::SmartLost;
                        ctl.flight -= 1;
                        let seq = self.una.wrapping_add(d as u32);
                        ctl.smart_q.push_back(seq);
                        stats.smart_losses += 1;
                        if let Some(a) = ctl.adapt.as_mut() {
                            a.record(true, tp.payload.len());
                        }
                        if !before(seq, ctl.recovery) && !crate::window_never_halves() {
                            ctl.cut(frame_cells(DATA_HEADER_LEN + tp.payload.len()), stats);
                            ctl.recovery = self.una.wrapping_add(self.sent);
                        }
                    }
                }
            }
        }
        // No trigger: what is in flight past this ack's edge was dropped there (a window
        // probe the receiver had no room for); it waits for the window, with no loss counted.
        if ack.trigger.is_none() {
            let mut moved = false;
            for d in 0..self.sent as usize {
                let seq = self.una.wrapping_add(d as u32);
                let tp = &mut self.buf[d];
                if tp.state == TxState::InFlight && !before(seq, edge) {
                    tp.state = TxState::TimeoutLost;
                    ctl.flight -= 1;
                    moved = true;
                }
            }
            if moved {
                self.rebuild_rto_q();
            }
        }
        let now_size = self.tpdu_size;
        let estimate = self
            .ctl
            .as_mut()
            .and_then(|c| c.adapt.as_mut()?.estimate(now_size));
        if let Some(size) = estimate {
            self.tpdu_size = size;
            self.resegment();
            stats.tpdu_size_changes += 1;
        }
        let Some(ctl) = self.ctl.as_mut() else {
            return Ok(());
        };
        if newly > 0 {
            ctl.grow(frame_cells(DATA_HEADER_LEN + self.tpdu_size));
            ctl.probes = 0;
            // With nothing left in flight `update_timers` stops both (a request's reply
            // acks all): not worth computing.
            if ctl.flight > 0 {
                ctl.rto_at = Some(now + ctl.rtt.rto());
                ctl.probe_at = Some(now + ctl.rtt.pto(ctl.min_probe));
            }
        }
        self.update_timers(now);
        Ok(())
    }

    fn rebuild_rto_q(&mut self) {
        let Some(ctl) = self.ctl.as_mut() else { return };
        ctl.rto_q.clear();
        for d in 0..self.sent as usize {
            if self.buf[d].state == TxState::TimeoutLost {
                ctl.rto_q.push_back(self.una.wrapping_add(d as u32));
            }
        }
    }

    /// Arms or stops the timers after any change.
    pub(crate) fn update_timers(&mut self, now: Instant) {
        let next_waiting = match self.ctl.as_ref().and_then(|c| c.rto_q.front()) {
            Some(&seq) => Some(seq),
            None => {
                ((self.sent as usize) < self.buf.len()).then(|| self.una.wrapping_add(self.sent))
            }
        };
        let Some(ctl) = self.ctl.as_mut() else { return };
        if ctl.flight == 0 {
            ctl.rto_at = None;
            ctl.probe_at = None;
            ctl.probes = 0;
        }
        let blocked = ctl.flight == 0
            && ctl.smart_q.is_empty()
            && !ctl.probe_pending
            && !ctl.persist_pending
            && next_waiting.is_some_and(|s| !before(s, ctl.right_edge));
        if blocked {
            if ctl.persist_at.is_none() {
                let backoff = 1u64 << ctl.persist_backoff.min(20);
                let t = Duration::from_nanos(ctl.rtt.rto().as_nanos().saturating_mul(backoff));
                ctl.persist_at = Some(now + t);
            }
        } else {
            ctl.persist_at = None;
            if next_waiting.is_none_or(|s| before(s, ctl.right_edge)) {
                ctl.persist_backoff = 0;
            }
        }
    }

    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        if let Some(g) = &self.gate {
            return if g.offered > 0 {
                g.bucket.poll_timeout()
            } else {
                None
            };
        }
        let ctl = self.ctl.as_ref()?;
        let earlier = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        earlier(earlier(ctl.rto_at, ctl.probe_at), ctl.persist_at)
    }

    pub(crate) fn handle_timeout(&mut self, now: Instant, stats: &mut Stats) {
        let nxt = self.una.wrapping_add(self.sent);
        let Some(ctl) = self.ctl.as_mut() else { return };
        if ctl.rto_at.is_some_and(|t| t <= now) && ctl.flight > 0 {
            stats.timeouts += 1;
            ctl.ssthresh = (ctl.flight / 2).max(2);
            ctl.cwnd = 1;
            ctl.acc = 0;
            for t in self.buf.iter_mut().take(self.sent as usize) {
                if t.state == TxState::InFlight {
                    t.state = TxState::TimeoutLost;
                }
            }
            ctl.flight = 0;
            ctl.rtt.back_off();
            ctl.recovery = nxt;
            ctl.rto_at = None;
            ctl.probe_at = None;
            ctl.probes = 0;
            ctl.probe_pending = false;
            self.rebuild_rto_q();
        } else if ctl.probe_at.is_some_and(|t| t <= now) && ctl.flight > 0 {
            ctl.probe_pending = true;
            ctl.probes = (ctl.probes + 1).min(20);
            let pto = ctl
                .rtt
                .pto(ctl.min_probe)
                .as_nanos()
                .saturating_mul(1 << ctl.probes);
            let at = now + Duration::from_nanos(pto);
            ctl.probe_at = ctl.rto_at.is_none_or(|r| at < r).then_some(at);
        }
        let Some(ctl) = self.ctl.as_mut() else { return };
        if ctl.persist_at.is_some_and(|t| t <= now) {
            ctl.persist_at = None;
            ctl.persist_pending = true;
            ctl.persist_backoff = (ctl.persist_backoff + 1).min(20);
        }
        self.update_timers(now);
    }

    /// The reliable sender's figures, into `stats`.
    pub(crate) fn fill(&self, stats: &mut Stats) {
        stats.tpdu_size = self.tpdu_size;
        if let Some(c) = &self.ctl {
            stats.cwnd = c.cwnd;
            stats.ssthresh = c.ssthresh;
            stats.flight = c.flight;
            stats.peer_window = dist(self.una, c.right_edge);
            stats.min_rtt = c.rtt.least();
            stats.srtt = c.rtt.srtt();
            stats.rttvar = c.rtt.rttvar();
            stats.rto = c.rtt.rto();
        }
    }

    /// Whether everything queued has been sent (and, on a reliable channel, acknowledged).
    pub(crate) fn is_idle(&self) -> bool {
        self.buf.is_empty()
    }

    /// Reliable, with TPDUs in flight and a round trip measured: when an ack is due if
    /// nothing is lost (the last transmission and the smoothed round trip), and that round
    /// trip.
    pub(crate) fn ack_due(&self) -> Option<(Instant, Duration)> {
        let ctl = self.ctl.as_ref().filter(|c| c.flight > 0)?;
        let srtt = ctl.rtt.srtt()?;
        Some((ctl.last_sent_at + srtt, srtt))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An adaptive sender (8 KiB TPDUs at most) whose first estimate saw `lost` of 256
    /// frames of 32 cells lost.
    fn estimated(lost: u64) -> Sender {
        let mut s = Sender::new(&Config::default(), 0, 0);
        let a = s.ctl.as_mut().and_then(|c| c.adapt.as_mut()).unwrap();
        a.ok = 256 - lost;
        a.lost = lost;
        a.cells = 32 * 256;
        if let Some(size) = a.estimate(s.tpdu_size) {
            s.tpdu_size = size;
        }
        s
    }

    /// At the largest window the growth's count stays put: a long transfer there must not
    /// overflow it (one-cell TPDUs add 171 an ack).
    #[test]
    fn growth_stops_accruing_at_the_largest_window() {
        let mut s = Sender::new(&Config::default(), 0, 0);
        let c = s.ctl.as_mut().unwrap();
        c.ssthresh = 2;
        c.cwnd = c.max_window - 1;
        for _ in 0..100_000 {
            c.grow(1);
        }
        assert_eq!((c.cwnd, c.acc), (c.max_window, 0));
    }

    /// The estimate tells losses scattered at a steady rate (random cell loss) from losses
    /// in runs (a full queue), and calls neither from a handful of losses.
    #[test]
    fn scattered_losses_are_told_from_runs() {
        let scattered = |outcomes: &mut dyn FnMut(u64) -> bool| {
            let mut s = Sender::new(&Config::default(), 0, 0);
            let a = s.ctl.as_mut().and_then(|c| c.adapt.as_mut()).unwrap();
            for i in 0..256 {
                a.record(outcomes(i), 1_000);
            }
            a.estimate(1_000);
            a.scattered
        };
        assert!(scattered(&mut |i| i % 16 == 0), "one in 16, spread out");
        assert!(!scattered(&mut |i| i % 64 < 4), "runs of 4");
        assert!(
            !scattered(&mut |i| i % 64 == 0),
            "4 losses: too few to tell"
        );
        assert!(!scattered(&mut |_| false), "no loss");
    }

    fn payloads(s: &mut Sender, len: usize) -> Vec<usize> {
        let from = s.buf.len();
        let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
        s.send_message(&data, &mut Stats::default()).unwrap();
        let got: Vec<u8> = s
            .buf
            .range(from..)
            .flat_map(|t| t.payload.to_vec())
            .collect();
        assert_eq!(got, data, "the shares make up the message");
        s.buf.range(from..).map(|t| t.payload.len()).collect()
    }

    /// At a fixed size: full TPDUs and the rest.
    #[test]
    fn at_a_fixed_size_a_message_is_cut_at_the_size() {
        let c = Config {
            adaptive_tpdu_size: false,
            ..Config::default()
        };
        let mut s = Sender::new(&c, 0, 0);
        assert_eq!(payloads(&mut s, 20_000), [8192, 8192, 3616]);
        assert_eq!(payloads(&mut s, 1_500), [1_500]);
    }

    /// Adaptive, before its first estimate: one-cell TPDUs, the first ADAPT_EVERY of them
    /// (and never more per message than the receive buffer holds), then the configured
    /// size.
    #[test]
    fn the_adaptive_sender_starts_with_one_cell_tpdus() {
        let mut s = Sender::new(&Config::default(), 0, 0);
        assert_eq!(payloads(&mut s, 100), [28, 28, 28, 16]);
        let p = payloads(&mut s, 20_000);
        assert_eq!(p.len(), 500, "40 B each: 20,000 B in at most 512");
        assert!(p.iter().all(|&n| n == 40));
        assert_eq!(payloads(&mut s, 20_000), [8192, 8192, 3616]);
        assert_eq!(frame_cells(DATA_HEADER_LEN + PROBE_SIZE), 1);
    }

    /// At about 0.1 % cell loss (8 of 256 frames of 32 cells) the stream's best size is
    /// below 1,500 B, yet a 1,500-byte message stays whole (33.0 cells expected against
    /// 33.9 as 1,372 + 128 B); at about 1 % (70 of 256) it goes as three even shares
    /// (36.9 against 44.1 whole and 37.6 in five).
    #[test]
    fn a_message_is_cut_into_the_cheapest_even_shares() {
        let mut s = estimated(8);
        assert!(s.tpdu_size < 1_500, "the stream's size {}", s.tpdu_size);
        assert_eq!(payloads(&mut s, 1_500), [1_500]);
        let mut s = estimated(70);
        assert_eq!(payloads(&mut s, 1_500), [500, 500, 500]);
        assert_eq!(payloads(&mut s, 1_001), [501, 500]);
        assert_eq!(payloads(&mut s, 1), [1]);
        // No loss seen: the fewest TPDUs, evenly.
        let mut s = estimated(0);
        assert_eq!(payloads(&mut s, 20_000), [6_667, 6_667, 6_666]);
    }

    /// The size an adaptive sender of 8 KiB TPDUs picks after 256 outcomes of 8 KiB
    /// TPDUs, `lost(i)` telling which were lost, in the order SMART found them.
    fn size_after(mut lost: impl FnMut(u64) -> bool) -> usize {
        let mut s = Sender::new(&Config::default(), 0, 0);
        let a = s.ctl.as_mut().and_then(|c| c.adapt.as_mut()).unwrap();
        for i in 0..256 {
            a.record(lost(i), 8192);
        }
        a.estimate(8192).unwrap_or(8192)
    }

    /// 24 of 256 TPDUs lost, as a queue drops them (three runs of 8) or scattered (one in
    /// ten): a run is one event, and the size stays; scattered, it is cell loss and the
    /// size shrinks.
    #[test]
    fn losses_in_runs_do_not_shrink_the_tpdus() {
        let runs = |i: u64| [40..48, 120..128, 200..208].iter().any(|r| r.contains(&i));
        assert_eq!(size_after(runs), 8192);
        let scattered = size_after(|i| i % 10 == 5 && i < 240);
        assert!(scattered < 2048, "{scattered}");
        // At high random loss runs are to be expected: 8 KiB TPDUs at 1 % cell loss
        // (82 % of them lost) still shrink.
        let mut x = 12345u64;
        let high = size_after(move |_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % 100 < 82
        });
        assert!(high < 512, "{high}");
        assert!(!Adapt::in_runs(0, 0, 256) && !Adapt::in_runs(210, 172, 256));
        assert!(Adapt::in_runs(24, 21, 256));
    }
}

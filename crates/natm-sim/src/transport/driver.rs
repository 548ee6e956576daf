//! A host's app: the driver of its natm-transport endpoints, one per channel, and the
//! oracles of invariants 1, 2, 4 and 5 that watch what they hand up and put on the wire;
//! the ledger the oracles share.

use super::*;

/// The bytes of message `i` of direction `key`: a function of both and the offset, so a
/// receiver checks each message byte for byte.
pub fn fill_message(key: u64, i: u64, buf: &mut [u8]) {
    let base = splitmix64(key ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    for (k, chunk) in buf.chunks_mut(8).enumerate() {
        let w = splitmix64(base ^ k as u64).to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
}

/// One direction of one channel as the oracles follow it.
#[derive(Clone, Debug, Default)]
pub(super) struct Flow {
    pub(super) service: Option<Service>,
    /// The direction's first message number.
    pub(super) msg0: u32,
    /// Lengths of the messages the sender accepted, in order.
    pub(super) sent: Vec<usize>,
    /// The next message number (from `msg0`) not yet delivered or reported lost.
    pub(super) next: u64,
    pub(super) delivered: u64,
    pub(super) lost: u64,
    pub(super) bytes: u64,
    /// Guaranteed: cells of data TPDUs received per rate window of the phase.
    pub(super) rx_cells: Vec<u64>,
    /// Guaranteed: instants the sender had nothing queued.
    pub(super) idle: Vec<u64>,
}

#[derive(Debug, Default)]
pub(super) struct Ledger {
    /// Per channel, per direction (0: h1 → h2).
    pub(super) flows: Vec<[Flow; 2]>,
    /// Per channel, per host: the endpoint's last figures.
    pub(super) stats: Vec<[Stats; 2]>,
    /// Per channel, per host: whether its sender holds nothing (`send_idle`).
    pub(super) send_idle: Vec<[bool; 2]>,
    pub(super) refused: u64,
    pub(super) sends_failed: u64,
}

pub(super) type Shared = Rc<RefCell<Ledger>>;

/// One end of one channel on a host.
pub(super) struct Chan {
    pub(super) vc: VcId,
    pub(super) ep: Endpoint,
    pub(super) service: Service,
    /// This end's transmit direction (0: h1 → h2).
    pub(super) dir: usize,
    pub(super) key: u64,
    pub(super) in_adapter: u32,
    pub(super) staged: VecDeque<Vec<u8>>,
    pub(super) schedule: Vec<(Instant, usize)>,
    pub(super) next_scheduled: usize,
    pub(super) pending: VecDeque<usize>,
    pub(super) accepted: u64,
    pub(super) armed: Option<Instant>,
    /// Reliable: SMART has found a loss of this end's TPDUs (the window oracle looks
    /// at the first only).
    pub(super) seen_loss: bool,
    /// The application's next call after it is handed a message, when acks are held.
    pub(super) reply_after: Option<Duration>,
    /// That call is on the timer.
    pub(super) reply_armed: bool,
}

/// Timer token kinds (low 2 bits; the channel index above).
const T_ENDPOINT: u64 = 0;
const T_MESSAGE: u64 = 1;
/// The application's next call, which ends a held ack's hold.
const T_RELEASE: u64 = 2;

/// A host's transport driver and oracles.
pub(super) struct TransportApp {
    pub(super) chans: Vec<Chan>,
    pub(super) ledger: Shared,
    pub(super) frame: Vec<u8>,
    pub(super) msg: Vec<u8>,
    pub(super) phase_end: Instant,
}

pub(super) fn flow_key(channel: usize, dir: usize) -> u64 {
    splitmix64((channel as u64) << 1 | dir as u64)
}

impl TransportApp {
    pub(super) fn new(host: usize, plan: &TransportPlan, ledger: Shared) -> TransportApp {
        let mut chans = Vec::new();
        let mut max = 0;
        for (c, p) in plan.channels.iter().enumerate() {
            let dir = host;
            let mut ep = Endpoint::new(p.config, p.isn[dir], p.isn[1 - dir])
                .expect("the plan's configurations are valid");
            ep.hold_acks(p.hold_acks.is_some());
            max = max.max(p.config.max_frame_len());
            chans.push(Chan {
                vc: VcId::uni(0, u32::from(FIRST_VCI) + c as u32).expect("a valid VCI"),
                ep,
                service: p.config.service,
                dir,
                key: flow_key(c, dir),
                in_adapter: 0,
                staged: VecDeque::new(),
                schedule: p.messages[dir].clone(),
                next_scheduled: 0,
                pending: VecDeque::new(),
                accepted: 0,
                armed: None,
                seen_loss: false,
                reply_after: p.hold_acks,
                reply_armed: false,
            });
        }
        TransportApp {
            chans,
            ledger,
            frame: vec![0; max],
            msg: Vec::new(),
            phase_end: at(PHASE.as_nanos()),
        }
    }

    /// Accepts what is due, moves frames to the adapter, hands events to the oracles and
    /// arms the endpoint's timer.
    fn pump(&mut self, ci: usize, now: Instant, io: &mut AppIo) {
        let c = &mut self.chans[ci];
        // Messages due, in order, while the send queue takes them; a message sent ends
        // the hold of an ack, which it carries if it can (as the API's send does).
        let accepted = c.accepted;
        while let Some(&len) = c.pending.front() {
            self.msg.resize(len, 0);
            fill_message(c.key, c.accepted, &mut self.msg);
            match c.ep.send_message(now, &self.msg) {
                Ok(_) => {
                    c.pending.pop_front();
                    c.accepted += 1;
                    self.ledger.borrow_mut().flows[ci][c.dir].sent.push(len);
                }
                Err(SendError::QueueFull { .. }) => break,
                Err(e) => {
                    io.fail("transport driver", format!("channel {ci}: {e}"));
                    c.pending.pop_front();
                }
            }
        }
        if c.accepted != accepted {
            c.ep.release_ack();
        }
        while c.in_adapter < SEND_LIMIT {
            if let Some(f) = c.staged.pop_front() {
                io.send(c.vc, &f);
                c.in_adapter += 1;
                continue;
            }
            match c.ep.poll_transmit(now, &mut self.frame) {
                Some(n) => {
                    io.send(c.vc, &self.frame[..n]);
                    c.in_adapter += 1;
                }
                None => break,
            }
        }
        if matches!(c.service, Service::Guaranteed { .. })
            && now < self.phase_end
            && c.ep.queued_bytes() == 0
        {
            let mut l = self.ledger.borrow_mut();
            let idle = &mut l.flows[ci][c.dir].idle;
            if idle.last() != Some(&now.as_nanos()) {
                idle.push(now.as_nanos());
            }
        }
        self.events(ci, io);
        let c = &mut self.chans[ci];
        if let Some(after) = c.reply_after
            && c.ep.ack_held()
            && !c.reply_armed
        {
            c.reply_armed = true;
            io.timer(now + after, (ci as u64) << 2 | T_RELEASE);
        }
        {
            let mut l = self.ledger.borrow_mut();
            l.stats[ci][c.dir] = c.ep.stats();
            l.send_idle[ci][c.dir] = c.ep.send_idle();
        }
        if let Some(t) = c.ep.poll_timeout()
            && c.armed.is_none_or(|a| t < a || a <= now)
        {
            c.armed = Some(t);
            io.timer(t, (ci as u64) << 2 | T_ENDPOINT);
        }
    }

    /// The events of channel `ci`'s endpoint, checked (invariants 1 and 2).
    fn events(&mut self, ci: usize, io: &mut AppIo) {
        let c = &mut self.chans[ci];
        let rx_dir = 1 - c.dir;
        let rx_key = flow_key(ci, rx_dir);
        let mut l = self.ledger.borrow_mut();
        let f = &mut l.flows[ci][rx_dir];
        let reliable = c.service == Service::Reliable;
        let inv = if reliable {
            "reliable in order, exactly once"
        } else {
            "best effort intact, losses reported"
        };
        while let Some(ev) = c.ep.poll_event() {
            match ev {
                Event::Message { msg, data } => {
                    let i = u64::from(msg.since(MsgSeq(f.msg0)));
                    if i != f.next {
                        let what = if i < f.next {
                            "delivered again or out of order"
                        } else {
                            "delivered with earlier messages neither delivered nor reported lost"
                        };
                        io.fail(
                            inv,
                            format!(
                                "channel {ci} ({:?}): message {i} (seq {msg}) {what}; next expected {}",
                                c.service, f.next
                            ),
                        );
                        return;
                    }
                    let Some(&len) = f.sent.get(i as usize) else {
                        io.fail(
                            inv,
                            format!("channel {ci}: message {i} delivered, never sent"),
                        );
                        return;
                    };
                    self.msg.resize(len, 0);
                    fill_message(rx_key, i, &mut self.msg);
                    if data != self.msg {
                        let at = data
                            .iter()
                            .zip(&self.msg)
                            .position(|(a, b)| a != b)
                            .unwrap_or(len.min(data.len()));
                        io.fail(
                            inv,
                            format!(
                                "channel {ci}: message {i} of {} bytes delivered with {} bytes, first difference at byte {at}",
                                len,
                                data.len()
                            ),
                        );
                        return;
                    }
                    f.next += 1;
                    f.delivered += 1;
                    f.bytes += len as u64;
                }
                Event::Lost { first, last } => {
                    let (a, b) = (
                        u64::from(first.since(MsgSeq(f.msg0))),
                        u64::from(last.since(MsgSeq(f.msg0))),
                    );
                    if reliable {
                        io.fail(
                            inv,
                            format!("channel {ci}: messages {a}..={b} reported lost"),
                        );
                        return;
                    }
                    if a != f.next || b < a || b as usize >= f.sent.len() {
                        io.fail(
                            inv,
                            format!(
                                "channel {ci}: loss of {a}..={b} reported; next expected {}, {} sent",
                                f.next,
                                f.sent.len()
                            ),
                        );
                        return;
                    }
                    f.lost += b - a + 1;
                    f.next = b + 1;
                }
            }
        }
    }

    /// Moves the messages whose time has come to the pending queue and sets the next.
    fn due(&mut self, ci: usize, now: Instant, io: &mut AppIo) {
        let c = &mut self.chans[ci];
        while let Some(&(t, len)) = c.schedule.get(c.next_scheduled) {
            if t > now {
                io.timer(t, (ci as u64) << 2 | T_MESSAGE);
                break;
            }
            c.pending.push_back(len);
            c.next_scheduled += 1;
        }
    }
}

impl App for TransportApp {
    fn start(&mut self, now: Instant, io: &mut AppIo) {
        for ci in 0..self.chans.len() {
            self.due(ci, now, io);
            self.pump(ci, now, io);
        }
    }

    fn on_sdu(&mut self, now: Instant, vc: VcId, sdu: &[u8], io: &mut AppIo) {
        let Some(ci) = self.chans.iter().position(|c| c.vc == vc) else {
            return;
        };
        let c = &mut self.chans[ci];
        let data = match Repr::parse(sdu) {
            Ok(Repr::Data { header, .. }) => Some(header),
            _ => None,
        };
        if let (Some(_), Service::Guaranteed { .. }) = (data, c.service)
            && now < self.phase_end
        {
            let w = (now.as_nanos() / RATE_WINDOW.as_nanos()) as usize;
            let mut l = self.ledger.borrow_mut();
            let cells = &mut l.flows[ci][1 - c.dir].rx_cells;
            if cells.len() <= w {
                cells.resize(w + 1, 0);
            }
            cells[w] += u64::from(frame_cells(sdu.len()));
        }
        let s0 = c.ep.stats();
        if c.ep.handle_tpdu(now, sdu).is_err() {
            self.ledger.borrow_mut().refused += 1;
        }
        let s1 = c.ep.stats();
        if c.service == Service::Reliable {
            // Invariant 5: the first loss SMART finds, before any timeout, halves.
            if !c.seen_loss && s1.smart_losses > 0 {
                c.seen_loss = true;
                if s0.timeouts == 0 && s1.ssthresh >= s0.ssthresh && s1.cwnd >= s0.cwnd {
                    io.fail(
                        "window halves on the first loss",
                        format!(
                            "channel {ci} direction {}: SMART found {} TPDUs lost, window {} → {}, threshold {} → {}",
                            c.dir, s1.smart_losses, s0.cwnd, s1.cwnd, s0.ssthresh, s1.ssthresh
                        ),
                    );
                }
            }
            // Invariant 4: a data TPDU taken in the window is acked at once, named.
            if let Some(h) = data
                && s1.beyond_window == s0.beyond_window
                && s1.refused == s0.refused
            {
                let mut named = false;
                while let Some(n) = c.ep.poll_transmit(now, &mut self.frame) {
                    let f = &self.frame[..n];
                    // Sent by the pump below, within the channel's share of the host's
                    // transmit buffers like every other frame: one-cell TPDUs bring an
                    // ack each.
                    c.staged.push_back(f.to_vec());
                    // Alone, or riding on a data TPDU (one with no room for it goes
                    // first, and the ack right after).
                    let a = match Repr::parse(f) {
                        Ok(Repr::Ack(a)) => a,
                        Ok(Repr::Data { ack: Some(a), .. }) => a,
                        Ok(Repr::Data { ack: None, .. }) => continue,
                        Err(_) => break,
                    };
                    named |= a.trigger == Some(h.seq) && a.echo == h.tx;
                    if named {
                        break;
                    }
                }
                // Or held for the application's next call, which sends it.
                if !named && !c.ep.ack_held() {
                    io.fail(
                        "every TPDU acked naming it",
                        format!(
                            "channel {ci}: data TPDU {} (transmission {}) taken, no ack names it",
                            h.seq, h.tx
                        ),
                    );
                }
            }
        }
        self.pump(ci, now, io);
    }

    fn on_timer(&mut self, now: Instant, token: u64, io: &mut AppIo) {
        let ci = (token >> 2) as usize;
        if ci >= self.chans.len() {
            return;
        }
        match token & 3 {
            T_ENDPOINT => {
                let c = &mut self.chans[ci];
                if c.armed.is_some_and(|a| a <= now) {
                    c.armed = None;
                }
                if c.ep.poll_timeout().is_some_and(|t| t <= now) {
                    c.ep.handle_timeout(now);
                }
            }
            T_MESSAGE => self.due(ci, now, io),
            T_RELEASE => {
                let c = &mut self.chans[ci];
                c.reply_armed = false;
                c.ep.release_ack();
            }
            _ => {}
        }
        self.pump(ci, now, io);
    }

    fn on_sent(&mut self, now: Instant, vc: VcId, _len: usize, ok: bool, io: &mut AppIo) {
        let Some(ci) = self.chans.iter().position(|c| c.vc == vc) else {
            return;
        };
        let c = &mut self.chans[ci];
        c.in_adapter = c.in_adapter.saturating_sub(1);
        if !ok {
            self.ledger.borrow_mut().sends_failed += 1;
        }
        self.pump(ci, now, io);
    }
}

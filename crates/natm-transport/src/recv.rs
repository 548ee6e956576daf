//! The receiving half of an endpoint: reassembly, delivery, acks and loss reports.
//!
//! * Reliable: TPDUs are placed by sequence number in a buffer that runs from the
//!   cumulative ack `cum` (the first missing) to the window's right edge; the in-order ones
//!   are reassembled into messages. Every data TPDU is answered with one ack (SMART): `cum`,
//!   the TPDU's own `seq` as the trigger, a bitmap of the 64 TPDUs after `cum`, and the
//!   window. A TPDU past the window is dropped and answered without a trigger. The window
//!   is the buffer less the message being reassembled and the messages not yet taken by
//!   the application, so its right edge never moves back; when the application's taking
//!   opens it far enough (from zero, or by a quarter of the buffer), an ack without trigger
//!   says so at once.
//! * Best effort and guaranteed: no acks. TPDUs come in order (ATM keeps a VC's frames in
//!   order) or not at all, so a gap in `seq` or a change of `msg` before `LAST` ends the
//!   message being reassembled as lost; a message never seen is found by the gap in
//!   message numbers; a partial message idle for `reassembly_timeout` is lost too. Each
//!   loss is one [`Event::Lost`] with the range of message numbers. A TPDU behind `seq`
//!   (a duplicate) or of a message already delivered or reported is dropped, so nothing
//!   is delivered twice; AAL5's CRC drops corrupt frames, so nothing corrupt is delivered.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use natm_core::Instant;

use crate::config::Config;
use crate::endpoint::{Event, MsgSeq, RxError, Stats};
use crate::header::{Ack, DataHeader, ServiceKind};
use crate::payload::Payload;
use crate::seq::{HALF, before, dist};

/// Acks kept for `poll_transmit` at most; older ones are dropped first (a newer ack
/// carries all the cumulative news, only its trigger is its own).
const ACK_QUEUE_LIMIT: usize = 1024;

#[derive(Debug)]
struct RxTpdu {
    msg: u32,
    first: bool,
    last: bool,
    payload: Vec<u8>,
}

#[derive(Debug)]
struct Asm {
    msg: u32,
    data: Vec<u8>,
    tpdus: u32,
    /// Best effort: the seq the next TPDU of this message must have.
    next_seq: u32,
    /// Best effort: when its last TPDU came.
    since: Instant,
}

#[derive(Debug)]
pub(crate) struct Receiver {
    kind: ServiceKind,
    tpdu_size: usize,
    max_message: usize,
    buffer: u32,
    reassembly_timeout: natm_core::Duration,
    /// Reliable: `cum`, the first TPDU missing. Best effort: the next seq expected.
    next_seq: u32,
    /// The first message neither delivered nor reported lost.
    next_msg: u32,
    /// Reliable: TPDUs from `next_seq` on, placed by offset.
    ooo: VecDeque<Option<RxTpdu>>,
    asm: Option<Asm>,
    /// Reliable: the rest of a malformed message is being dropped.
    skipping: bool,
    events: VecDeque<(Event, u32)>,
    /// TPDUs held by messages in `events`.
    undrained: u32,
    acks: VecDeque<Ack>,
    last_advertised: u32,
}

impl Receiver {
    pub(crate) fn new(c: &Config, seq: u32, msg: u32) -> Receiver {
        Receiver {
            kind: c.service.kind(),
            tpdu_size: c.tpdu_size,
            max_message: c.max_message,
            buffer: c.recv_buffer,
            reassembly_timeout: c.reassembly_timeout,
            next_seq: seq,
            next_msg: msg,
            ooo: VecDeque::new(),
            asm: None,
            skipping: false,
            events: VecDeque::new(),
            undrained: 0,
            acks: VecDeque::new(),
            last_advertised: c.recv_buffer,
        }
    }

    /// The reliable receive window, TPDUs past `cum`.
    pub(crate) fn window(&self) -> u32 {
        let asm = self.asm.as_ref().map_or(0, |a| a.tpdus);
        self.buffer
            .saturating_sub(asm)
            .saturating_sub(self.undrained)
    }

    pub(crate) fn on_data(
        &mut self,
        now: Instant,
        h: &DataHeader,
        payload: &[u8],
        stats: &mut Stats,
    ) -> Result<(), RxError> {
        if payload.len() > self.tpdu_size {
            return Err(RxError::PayloadTooLong {
                len: payload.len(),
                max: self.tpdu_size,
            });
        }
        stats.tpdus_received += 1;
        if self.kind == ServiceKind::Reliable {
            self.on_reliable(h, payload, stats);
        } else {
            self.on_unreliable(now, h, payload, stats);
        }
        Ok(())
    }

    fn on_reliable(&mut self, h: &DataHeader, payload: &[u8], stats: &mut Stats) {
        let d = dist(self.next_seq, h.seq);
        if d >= HALF {
            stats.duplicates += 1;
            self.ack(Some((h.seq, h.tx)), stats);
            return;
        }
        if d >= self.window() {
            stats.beyond_window += 1;
            self.ack(None, stats);
            return;
        }
        let d = d as usize;
        if d == 0 && self.ooo.is_empty() {
            // In order with nothing held: reassembled from the frame, never buffered.
            self.next_seq = self.next_seq.wrapping_add(1);
            self.reassemble(h.msg, h.first, h.last, payload, stats);
            self.ack(Some((h.seq, h.tx)), stats);
            return;
        }
        while self.ooo.len() <= d {
            self.ooo.push_back(None);
        }
        if self.ooo[d].is_some() {
            stats.duplicates += 1;
        } else {
            self.ooo[d] = Some(RxTpdu {
                msg: h.msg,
                first: h.first,
                last: h.last,
                payload: payload.to_vec(),
            });
        }
        while let Some(Some(_)) = self.ooo.front() {
            if let Some(Some(t)) = self.ooo.pop_front() {
                self.next_seq = self.next_seq.wrapping_add(1);
                self.reassemble(t.msg, t.first, t.last, &t.payload, stats);
            }
        }
        self.ack(Some((h.seq, h.tx)), stats);
    }

    /// The next in-order TPDU of a reliable channel: of message `msg`, its first and
    /// last or not.
    fn reassemble(&mut self, msg: u32, first: bool, last: bool, payload: &[u8], stats: &mut Stats) {
        if self.skipping {
            if !first {
                return;
            }
            self.skipping = false;
        }
        if first && self.asm.take().is_some() {
            // A new message before the last one's LAST: the peer is broken.
            stats.protocol_errors += 1;
        }
        if first && last {
            // A message of one TPDU is its payload, kept in place if short.
            if payload.len() > self.max_message {
                stats.protocol_errors += 1;
                return;
            }
            self.delivered(msg, stats);
            self.deliver(msg, Payload::new(payload), 1, stats);
            return;
        }
        if first {
            self.asm = Some(Asm {
                msg,
                data: Vec::with_capacity(payload.len()),
                tpdus: 0,
                next_seq: 0,
                since: Instant::ZERO,
            });
        }
        let Some(a) = self.asm.as_mut() else {
            stats.protocol_errors += 1;
            self.skipping = !last;
            return;
        };
        if a.msg != msg || a.data.len() + payload.len() > self.max_message {
            stats.protocol_errors += 1;
            self.asm = None;
            self.skipping = !last;
            return;
        }
        a.data.extend_from_slice(payload);
        a.tpdus += 1;
        if last && let Some(a) = self.asm.take() {
            self.delivered(a.msg, stats);
            self.deliver(a.msg, a.data.into(), a.tpdus, stats);
        }
    }

    /// Reliable: message `msg` is whole, and the next one is expected.
    fn delivered(&mut self, msg: u32, stats: &mut Stats) {
        if msg != self.next_msg {
            stats.protocol_errors += 1;
        }
        self.next_msg = msg.wrapping_add(1);
    }

    /// Hands message `msg` (its `data`, in `tpdus` TPDUs) to the application.
    fn deliver(&mut self, msg: u32, data: Payload, tpdus: u32, stats: &mut Stats) {
        stats.msgs_delivered += 1;
        stats.bytes_delivered += data.len() as u64;
        self.undrained += tpdus;
        self.events.push_back((
            Event::Message {
                msg: MsgSeq(msg),
                data,
            },
            tpdus,
        ));
    }

    /// Queues an ack; `trigger` is the seq and `tx` of the data TPDU that caused it.
    fn ack(&mut self, trigger: Option<(u32, u8)>, stats: &mut Stats) {
        let mut bitmap = 0u64;
        for (i, slot) in self
            .ooo
            .range(1.min(self.ooo.len())..self.ooo.len().min(65))
            .enumerate()
        {
            if slot.is_some() {
                bitmap |= 1 << i;
            }
        }
        let window = self.window();
        self.last_advertised = window;
        let trigger = if crate::ack_without_trigger() {
            None
        } else {
            trigger
        };
        self.acks.push_back(Ack {
            service: self.kind,
            cum: self.next_seq,
            trigger: trigger.map(|t| t.0),
            echo: trigger.map_or(0, |t| t.1),
            window,
            bitmap,
        });
        if self.acks.len() > ACK_QUEUE_LIMIT {
            self.acks.pop_front();
            stats.acks_dropped += 1;
        }
    }

    pub(crate) fn poll_ack(&mut self) -> Option<Ack> {
        self.acks.pop_front()
    }

    /// Acks waiting to be sent.
    pub(crate) fn acks_queued(&self) -> usize {
        self.acks.len()
    }

    /// The next ack to send, left queued.
    pub(crate) fn peek_ack(&self) -> Option<Ack> {
        self.acks.front().copied()
    }

    fn on_unreliable(&mut self, now: Instant, h: &DataHeader, payload: &[u8], stats: &mut Stats) {
        if dist(self.next_seq, h.seq) >= HALF {
            stats.duplicates += 1;
            return;
        }
        self.next_seq = h.seq.wrapping_add(1);
        if dist(self.next_msg, h.msg) >= HALF {
            // Of a message delivered or reported already.
            stats.late += 1;
            return;
        }
        if let Some(a) = &self.asm
            && (a.msg != h.msg || a.next_seq != h.seq || h.first)
        {
            let m = a.msg;
            self.asm = None;
            self.lose_through(m, stats);
            if dist(self.next_msg, h.msg) >= HALF {
                stats.late += 1;
                return;
            }
        }
        if before(self.next_msg, h.msg) {
            self.lose_through(h.msg.wrapping_sub(1), stats);
        }
        if self.asm.is_none() {
            if !h.first {
                // Its first TPDU is missing.
                self.lose_through(h.msg, stats);
                return;
            }
            self.asm = Some(Asm {
                msg: h.msg,
                data: Vec::new(),
                tpdus: 0,
                next_seq: h.seq,
                since: now,
            });
        }
        let Some(a) = self.asm.as_mut() else { return };
        if a.data.len() + payload.len() > self.max_message {
            stats.protocol_errors += 1;
            self.asm = None;
            self.lose_through(h.msg, stats);
            return;
        }
        a.data.extend_from_slice(payload);
        a.tpdus += 1;
        a.next_seq = h.seq.wrapping_add(1);
        a.since = now;
        if h.last
            && let Some(a) = self.asm.take()
        {
            if self.undrained + a.tpdus > self.buffer {
                // The application is not taking its messages: this one has no room.
                stats.overruns += 1;
                self.lose_through(a.msg, stats);
            } else {
                self.next_msg = a.msg.wrapping_add(1);
                self.deliver(a.msg, a.data.into(), a.tpdus, stats);
            }
        }
    }

    /// Reports every message from `next_msg` through `last` lost.
    fn lose_through(&mut self, last: u32, stats: &mut Stats) {
        let first = self.next_msg;
        if before(last, first) {
            return;
        }
        stats.msgs_lost += u64::from(dist(first, last)) + 1;
        stats.loss_reports += 1;
        self.next_msg = last.wrapping_add(1);
        if let Some((Event::Lost { last: l, .. }, _)) = self.events.back_mut()
            && l.0.wrapping_add(1) == first
        {
            *l = MsgSeq(last);
            return;
        }
        self.events.push_back((
            Event::Lost {
                first: MsgSeq(first),
                last: MsgSeq(last),
            },
            0,
        ));
    }

    pub(crate) fn poll_event(&mut self, stats: &mut Stats) -> Option<Event> {
        let (e, tpdus) = self.events.pop_front()?;
        self.undrained -= tpdus;
        if self.kind == ServiceKind::Reliable && tpdus > 0 {
            let w = self.window();
            let step = (self.buffer / 4).max(1);
            if (self.last_advertised == 0 && w > 0)
                || w >= self.last_advertised.saturating_add(step)
            {
                self.ack(None, stats);
                stats.window_updates += 1;
            }
        }
        Some(e)
    }

    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        match (&self.asm, self.kind) {
            (Some(a), ServiceKind::BestEffort | ServiceKind::Guaranteed) => {
                Some(a.since + self.reassembly_timeout)
            }
            _ => None,
        }
    }

    pub(crate) fn handle_timeout(&mut self, now: Instant, stats: &mut Stats) {
        if self.kind == ServiceKind::Reliable {
            return;
        }
        if let Some(a) = &self.asm
            && a.since + self.reassembly_timeout <= now
        {
            let m = a.msg;
            self.asm = None;
            self.lose_through(m, stats);
        }
    }

    pub(crate) fn has_events(&self) -> bool {
        !self.events.is_empty()
    }
}

//! What runs on a simulated host above its adapter: an [`App`], driven by the simulator
//! with SDUs and timers, answering with sends and new timers through [`AppIo`].
//!
//! An app is the simulated counterpart of a program using the `natm` API: it sees whole
//! SDUs on the VCs its host has open, never cells. It has no clock and no randomness of
//! its own: `now` is an argument, and an app that wants randomness is given a seeded
//! generator when it is made. The simulator charges the host's CPU for every send and
//! every received SDU ([`HostCosts`]), so an app sees an SDU when the host would have
//! finished receiving it, and its sends reach the adapter when the host would have
//! finished posting them.
//!
//! Call contract: [`App::start`] once when the host starts (and again after a simulated
//! crash and restart, with a fresh `AppIo`); [`App::on_sdu`] for each SDU received good;
//! [`App::on_timer`] when a timer set through [`AppIo::timer`] fires; [`App::on_sent`] when
//! a send's last cell has left the adapter or the send failed. Everything an app asks for
//! is collected in the `AppIo` and carried out by the simulator after the call returns, in
//! the order asked.
//!
//! On a host that signals (a scenario with `calls`), an app also places, answers and ends
//! switched calls through [`AppIo`] ([`call`](AppIo::call), [`accept`](AppIo::accept),
//! [`reject`](AppIo::reject), [`release`](AppIo::release)) and hears of them through
//! [`App::on_call`]: the simulator carries the commands out on the host core
//! (natm-host-core's `Host::call`, …) and hands its call events on, opening each call's VC
//! on the host's channel as hostd would (at `accept`, or when an outgoing call connects).

use core::ops::Range;

use natm_core::addr::Aesa;
use natm_core::{Duration, Instant, Qos, VcId};
use natm_host_core::{CallId, Cause, IncomingCall};

/// What happened to a call, as [`App::on_call`] hears it.
#[derive(Clone, Debug, PartialEq)]
pub enum CallNote {
    /// The outcome of [`AppIo::call`] with this token: the call, or the host's refusal at
    /// once (its text; nothing was sent).
    Placed {
        /// The token given to [`AppIo::call`].
        token: u64,
        /// The call, or why not.
        result: Result<CallId, String>,
    },
    /// A call is offered: answer with [`AppIo::accept`] or [`AppIo::reject`].
    Incoming(Box<IncomingCall>),
    /// A call is active on `vc` (open on the host: SDUs may be sent on it).
    Connected {
        /// The call.
        call: CallId,
        /// Its VC.
        vc: VcId,
    },
    /// A call ended (its VC, if open, is closed). Exactly one per call.
    Released {
        /// The call.
        call: CallId,
        /// Why.
        cause: Cause,
    },
    /// A call command was refused (the call had gone, or the phase did not allow it).
    Refused {
        /// The call.
        call: CallId,
        /// The host's words.
        reason: String,
    },
}

/// A call command an app asked for.
#[derive(Clone, Debug, PartialEq)]
pub enum CallCommand {
    /// Place a call to `called` with `qos`; `token` comes back in [`CallNote::Placed`];
    /// `tag` (5 bytes) rides in the SETUP's BLLI (SNAP octets) to the called host.
    Call {
        /// The app's token.
        token: u64,
        /// Whom to call.
        called: Aesa,
        /// The QoS (`tx` is what this host sends).
        qos: Qos,
        /// Carried to the called side.
        tag: Option<[u8; 5]>,
    },
    /// Accept an offered call (its VC is opened at once).
    Accept(CallId),
    /// Reject an offered call with a cause.
    Reject(CallId, Cause),
    /// Release a call in any phase.
    Release(CallId, Cause),
}

/// A simulated application.
pub trait App {
    /// The host has started (or restarted after a crash): set the first timers.
    fn start(&mut self, now: Instant, io: &mut AppIo);

    /// An SDU arrived good on `vc` (its AAL5 CRC and length checked by the adapter).
    fn on_sdu(&mut self, now: Instant, vc: VcId, sdu: &[u8], io: &mut AppIo);

    /// A timer set with [`AppIo::timer`] fired.
    fn on_timer(&mut self, now: Instant, token: u64, io: &mut AppIo);

    /// A send on `vc` of `len` bytes is done: `ok` if every cell left the adapter, else it
    /// was refused or aborted (VC closed, queue full, host crashed).
    fn on_sent(&mut self, now: Instant, vc: VcId, len: usize, ok: bool, io: &mut AppIo) {
        let _ = (now, vc, len, ok, io);
    }

    /// Something happened to a call (hosts that signal only).
    fn on_call(&mut self, now: Instant, note: &CallNote, io: &mut AppIo) {
        let _ = (now, note, io);
    }
}

/// What an app asks the simulator to do, collected during one call.
///
/// Sends are copied into one byte arena that is reused from call to call, so a steady
/// load allocates nothing.
#[derive(Debug, Default)]
pub struct AppIo {
    bytes: Vec<u8>,
    sends: Vec<(VcId, Range<usize>)>,
    timers: Vec<(Instant, u64)>,
    calls: Vec<CallCommand>,
    failure: Option<(&'static str, String)>,
}

impl AppIo {
    /// An empty request list.
    pub fn new() -> AppIo {
        AppIo::default()
    }

    /// Send `sdu` (1..=65535 bytes) on `vc`. A send on a VC the host has not open, or of a
    /// bad length, comes back through [`App::on_sent`] with `ok = false`.
    pub fn send(&mut self, vc: VcId, sdu: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(sdu);
        self.sends.push((vc, start..self.bytes.len()));
    }

    /// Send an SDU of `len` bytes on `vc`, written in place by `fill`.
    pub fn send_with(&mut self, vc: VcId, len: usize, fill: impl FnOnce(&mut [u8])) {
        let start = self.bytes.len();
        self.bytes.resize(start + len, 0);
        fill(&mut self.bytes[start..]);
        self.sends.push((vc, start..self.bytes.len()));
    }

    /// Call [`App::on_timer`] with `token` at `at` (at once if `at` has passed).
    pub fn timer(&mut self, at: Instant, token: u64) {
        self.timers.push((at, token));
    }

    /// Call [`App::on_timer`] with `token` after `after`.
    pub fn timer_after(&mut self, now: Instant, after: Duration, token: u64) {
        let at = now
            .checked_add(after)
            .unwrap_or(Instant::from_nanos(u64::MAX));
        self.timers.push((at, token));
    }

    /// Place a call (see [`CallCommand::Call`]).
    pub fn call(&mut self, token: u64, called: Aesa, qos: Qos, tag: Option<[u8; 5]>) {
        self.calls.push(CallCommand::Call {
            token,
            called,
            qos,
            tag,
        });
    }

    /// Accept an offered call.
    pub fn accept(&mut self, call: CallId) {
        self.calls.push(CallCommand::Accept(call));
    }

    /// Reject an offered call with `cause`.
    pub fn reject(&mut self, call: CallId, cause: Cause) {
        self.calls.push(CallCommand::Reject(call, cause));
    }

    /// Release a call with `cause`.
    pub fn release(&mut self, call: CallId, cause: Cause) {
        self.calls.push(CallCommand::Release(call, cause));
    }

    /// The app saw an invariant broken (an oracle in an app, such as a byte check of what
    /// arrived): the run stops with it.
    pub fn fail(&mut self, invariant: &'static str, detail: String) {
        if self.failure.is_none() {
            self.failure = Some((invariant, detail));
        }
    }

    /// The call commands asked for, in order.
    pub fn call_commands(&self) -> &[CallCommand] {
        &self.calls
    }

    pub(crate) fn take_failure(&mut self) -> Option<(&'static str, String)> {
        self.failure.take()
    }

    /// The sends asked for, in order: the VC and the SDU.
    pub fn sends(&self) -> impl Iterator<Item = (VcId, &[u8])> + '_ {
        self.sends
            .iter()
            .map(|(vc, r)| (*vc, &self.bytes[r.clone()]))
    }

    /// The timers asked for, in order.
    pub fn timers(&self) -> &[(Instant, u64)] {
        &self.timers
    }

    /// Whether nothing was asked.
    pub fn is_empty(&self) -> bool {
        self.sends.is_empty() && self.timers.is_empty() && self.calls.is_empty()
    }

    /// Forget everything asked, keeping the arena's memory.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.sends.clear();
        self.timers.clear();
        self.calls.clear();
    }
}

/// What a host's CPU spends per message, from a calibration measured on the real adapter
/// (natm-sim's `calib` module reads the file `natm perf calibrate` writes).
///
/// The host is one server: a send occupies it for `send_fixed + len · send_per_byte`
/// before the SDU is posted to the adapter; an SDU received occupies it for
/// `recv_fixed + len · recv_per_byte` after its last cell, and the app sees it then. Work
/// queues in arrival order. `wakeup` is added once when the host was idle (a sleeping
/// receiver woken by an interrupt or eventfd).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostCosts {
    /// Fixed cost of one send.
    pub send_fixed: Duration,
    /// Cost of one send per byte, in picoseconds.
    pub send_per_byte_ps: u64,
    /// Fixed cost of one SDU received.
    pub recv_fixed: Duration,
    /// Cost of one SDU received per byte, in picoseconds.
    pub recv_per_byte_ps: u64,
    /// Wake-up latency of an idle host.
    pub wakeup: Duration,
}

impl HostCosts {
    /// A host that costs nothing: SDUs move at the adapter's and links' speed only.
    pub const FREE: HostCosts = HostCosts {
        send_fixed: Duration::ZERO,
        send_per_byte_ps: 0,
        recv_fixed: Duration::ZERO,
        recv_per_byte_ps: 0,
        wakeup: Duration::ZERO,
    };

    /// The CPU time of sending `len` bytes.
    pub fn send(&self, len: usize) -> Duration {
        Duration::from_nanos(
            self.send_fixed
                .as_nanos()
                .saturating_add(self.send_per_byte_ps.saturating_mul(len as u64) / 1000),
        )
    }

    /// The CPU time of receiving `len` bytes.
    pub fn recv(&self, len: usize) -> Duration {
        Duration::from_nanos(
            self.recv_fixed
                .as_nanos()
                .saturating_add(self.recv_per_byte_ps.saturating_mul(len as u64) / 1000),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_keep_their_order_and_bytes_and_clear_keeps_nothing() {
        let vc = VcId::uni(0, 100).unwrap();
        let mut io = AppIo::new();
        io.send(vc, b"abc");
        io.send_with(vc, 4, |b| b.copy_from_slice(b"wxyz"));
        io.timer(Instant::from_nanos(5), 7);
        let sends: Vec<_> = io.sends().map(|(v, b)| (v, b.to_vec())).collect();
        assert_eq!(sends, [(vc, b"abc".to_vec()), (vc, b"wxyz".to_vec())]);
        assert_eq!(io.timers(), [(Instant::from_nanos(5), 7)]);
        io.clear();
        assert!(io.is_empty());
        assert_eq!(io.sends().count(), 0);
    }

    #[test]
    fn costs_grow_with_length() {
        let c = HostCosts {
            send_fixed: Duration::from_nanos(1000),
            send_per_byte_ps: 500,
            recv_fixed: Duration::from_nanos(2000),
            recv_per_byte_ps: 250,
            wakeup: Duration::ZERO,
        };
        assert_eq!(c.send(1000).as_nanos(), 1500);
        assert_eq!(c.recv(4000).as_nanos(), 3000);
        assert_eq!(HostCosts::FREE.send(65535), Duration::ZERO);
    }
}

//! Call churn (issue 24): the app a host runs in a scenario with `calls = true`, placing
//! switched calls to the other hosts' addresses, answering the calls it is offered,
//! sending checkable SDUs on each connected call and releasing it.
//!
//! Each host's [`CallApp`] (seeded from the run's seed and the host's name):
//!
//! * calls a random other host's address every [`CALL_GAP`] on average (exponential
//!   gaps) until the load phase ends, with a QoS drawn from [`QOS_SET`] (UBR, a small CBR,
//!   and a CBR larger than the scenario's trunks hold: the network refuses it with 37 on a
//!   trunk and admits it between two hosts of one switch); a 5-byte tag (host, serial) in
//!   the SETUP's BLLI lets the world's ledger match the two ends of a call;
//! * accepts 85 % of the calls it is offered and rejects the rest with cause 21 (call
//!   rejected) or 17 (user busy); after the load phase it rejects every call;
//! * on each connected call sends 1–4 SDUs (20–400 bytes) built by
//!   [`check::build_sdu`](crate::check::build_sdu) under a flow number of the call and
//!   direction, and checks every SDU it receives on a call byte for byte
//!   ([`check::verify_sdu`](crate::check::verify_sdu)), that it is of the call's flow and
//!   that SDU numbers never go back (invariant "data on calls byte-exact");
//! * holds a call it placed for 5–100 ms, then releases it (cause 16); releases a call it
//!   accepted itself in a third of them; at the end of the load phase releases every call
//!   it has;
//! * forgets its calls when its host restarts after a crash (the host core lost them).
//!
//! [`Both`] runs a PVC load ([`crate::load::LoadApp`]) beside it on the same host.

use std::collections::BTreeMap;

use natm_core::addr::Aesa;
use natm_core::{Duration, Instant, Qos, VcId};
use natm_host_core::{CallId, CauseValue, user_cause};

use crate::app::{App, AppIo, CallNote};
use crate::check::{build_sdu, serials_of, verify_sdu};
use crate::seed::Rng;

/// The mean gap between a host's calls.
pub const CALL_GAP: Duration = Duration::from_millis(25);

/// The QoS a call is drawn from: UBR, a small CBR, and a CBR above the calls scenario's
/// trunks (20,000 cells/s) and below its host links (OC-3c).
pub const QOS_SET: [&str; 3] = ["ubr", "cbr:pcr=1000", "cbr:pcr=30000"];

/// Timer tokens of the call app have this bit (a [`Both`]'s other app gets the rest).
pub const TOKEN_BIT: u64 = 1 << 62;
/// The next call.
const NEXT_CALL: u64 = TOKEN_BIT;
/// The end of the load phase.
const STOP: u64 = TOKEN_BIT | 1;
/// Release the call of the low bits.
const HANG_UP: u64 = TOKEN_BIT | 1 << 61;

/// The first SVC VCI: a VC at or above it is a call's (the PVCs' are below).
pub const FIRST_SVC_VCI: u32 = 32768;

#[derive(Clone, Debug)]
struct Call {
    /// This end's flow (what it sends) and the far end's (what it receives).
    tx_flow: u32,
    rx_flow: u32,
    vc: Option<VcId>,
    connected: bool,
    next_sdu: u32,
    next_serial: u32,
    last_rx: Option<u32>,
    /// The tag of a call offered to this host.
    tag: Option<[u8; 5]>,
}

/// The flow of a call's tag in one direction: bit 30 set (the PVC load's flows are small
/// numbers), bit 29 the direction (1: called → caller), bits 22..29 the caller's host
/// index, the low 22 bits its call serial.
fn flow_of(tag: [u8; 5], back: bool) -> u32 {
    let serial = u32::from_be_bytes([tag[1], tag[2], tag[3], tag[4]]) & 0x003f_ffff;
    1 << 30 | u32::from(back) << 29 | u32::from(tag[0] & 0x7f) << 22 | serial
}

/// One host's call churn. See the [module documentation](self).
pub struct CallApp {
    index: u8,
    peers: Vec<Aesa>,
    qos: Vec<Qos>,
    rng: Rng,
    stop: Instant,
    stopped: bool,
    serial: u32,
    calls: BTreeMap<CallId, Call>,
    /// Placed calls not yet given an id: token → tag.
    placing: BTreeMap<u64, [u8; 5]>,
    scratch: Vec<u8>,
    /// Per call offered (by tag): the next SDU number and cell serial of its flow back. A
    /// call may be offered again (after this host's crash, or a SETUP a crashed switch
    /// took comes again from SSCOP once it restarts): its flow goes on from there, so the
    /// far end and the order check see one flow. Kept across the host's crashes (it is the
    /// oracle's bookkeeping, not the program's).
    offered: BTreeMap<[u8; 5], (u32, u32)>,
}

impl CallApp {
    /// The app of host number `index` (below 128), calling `peers` (the other hosts'
    /// addresses) until `stop`, drawing from `rng`.
    pub fn new(index: u8, peers: Vec<Aesa>, stop: Instant, rng: Rng) -> CallApp {
        let qos = QOS_SET
            .iter()
            .map(|q| q.parse().expect("the QoS set parses"))
            .collect();
        CallApp {
            index,
            peers,
            qos,
            rng,
            stop,
            stopped: false,
            serial: 0,
            calls: BTreeMap::new(),
            placing: BTreeMap::new(),
            scratch: Vec::new(),
            offered: BTreeMap::new(),
        }
    }

    fn gap(&mut self) -> Duration {
        let mean = CALL_GAP.as_nanos() as f64;
        let u = self.rng.unit().max(1e-9);
        Duration::from_nanos((-u.ln() * mean) as u64 + 1)
    }

    fn send_some(&mut self, call: CallId, io: &mut AppIo) {
        let n = self.rng.range(1, 4);
        let Some(c) = self.calls.get_mut(&call) else {
            return;
        };
        let Some(vc) = c.vc else { return };
        for _ in 0..n {
            let len = self.rng.range(20, 400) as usize;
            let (flow, sdu, serial) = (c.tx_flow, c.next_sdu, c.next_serial);
            io.send_with(vc, len, |b| build_sdu(flow, sdu, serial, b));
            c.next_sdu += 1;
            c.next_serial = c.next_serial.wrapping_add(serials_of(len));
        }
        if let Some(tag) = c.tag {
            self.offered.insert(tag, (c.next_sdu, c.next_serial));
        }
    }

    fn release_all(&mut self, io: &mut AppIo) {
        let cause = user_cause(CauseValue::NormalCallClearing, b"");
        for &id in self.calls.keys() {
            io.release(id, cause.clone());
        }
    }
}

impl App for CallApp {
    fn start(&mut self, now: Instant, io: &mut AppIo) {
        // A restart: the host's calls went with the crash.
        self.calls.clear();
        self.placing.clear();
        self.stopped = now >= self.stop;
        if !self.stopped {
            let g = self.gap();
            io.timer_after(now, g, NEXT_CALL);
            io.timer(self.stop, STOP);
        }
    }

    fn on_sdu(&mut self, _now: Instant, vc: VcId, sdu: &[u8], io: &mut AppIo) {
        let Some((id, c)) = self.calls.iter_mut().find(|(_, c)| c.vc == Some(vc)) else {
            // The call ended while the SDU waited for the CPU.
            return;
        };
        match verify_sdu(sdu, &mut self.scratch) {
            Err(e) => io.fail("data on calls byte-exact", format!("{id} on {vc}: {e}")),
            Ok((flow, n)) => {
                if flow != c.rx_flow {
                    io.fail(
                        "data on calls byte-exact",
                        format!(
                            "{id} on {vc}: SDU {n} of flow {flow:#x}, the call's is {:#x}",
                            c.rx_flow
                        ),
                    );
                } else if c.last_rx.is_some_and(|l| n < l) {
                    io.fail(
                        "data on calls byte-exact",
                        format!("{id} on {vc}: SDU {n} after SDU {:?}", c.last_rx),
                    );
                }
                c.last_rx = Some(n);
            }
        }
    }

    fn on_timer(&mut self, now: Instant, token: u64, io: &mut AppIo) {
        if token & HANG_UP == HANG_UP {
            let id = CallId(token & !HANG_UP);
            if self.calls.contains_key(&id) {
                io.release(id, user_cause(CauseValue::NormalCallClearing, b""));
            }
            return;
        }
        match token {
            NEXT_CALL if !self.stopped && !self.peers.is_empty() => {
                let to = self.peers[self.rng.below(self.peers.len() as u64) as usize];
                let qos = self.qos[self.rng.below(self.qos.len() as u64) as usize];
                self.serial += 1;
                let s = self.serial.to_be_bytes();
                let tag = [self.index, s[0], s[1], s[2], s[3]];
                let token = u64::from(self.serial);
                self.placing.insert(token, tag);
                io.call(token, to, qos, Some(tag));
                let g = self.gap();
                io.timer_after(now, g, NEXT_CALL);
            }
            STOP => {
                self.stopped = true;
                self.release_all(io);
            }
            _ => {}
        }
    }

    fn on_call(&mut self, now: Instant, note: &CallNote, io: &mut AppIo) {
        match note {
            CallNote::Placed { token, result } => {
                let tag = self.placing.remove(token);
                if let (Ok(id), Some(tag)) = (result, tag) {
                    self.calls.insert(
                        *id,
                        Call {
                            tx_flow: flow_of(tag, false),
                            rx_flow: flow_of(tag, true),
                            vc: None,
                            connected: false,
                            next_sdu: 0,
                            next_serial: 0,
                            last_rx: None,
                            tag: None,
                        },
                    );
                    if self.stopped {
                        io.release(*id, user_cause(CauseValue::NormalCallClearing, b""));
                    }
                }
            }
            CallNote::Incoming(ic) => {
                let tag = ic.blli.as_ref().and_then(|b| b.snap);
                let accept = !self.stopped && tag.is_some() && self.rng.chance(0.85);
                if !accept {
                    let value = if self.rng.chance(0.5) {
                        CauseValue::CallRejected
                    } else {
                        CauseValue::UserBusy
                    };
                    io.reject(ic.call, user_cause(value, b"sim"));
                    return;
                }
                let tag = tag.expect("checked above");
                self.calls.insert(
                    ic.call,
                    Call {
                        tx_flow: flow_of(tag, true),
                        rx_flow: flow_of(tag, false),
                        vc: Some(ic.vc),
                        connected: false,
                        next_sdu: self.offered.get(&tag).map_or(0, |o| o.0),
                        next_serial: self.offered.get(&tag).map_or(0, |o| o.1),
                        last_rx: None,
                        tag: Some(tag),
                    },
                );
                io.accept(ic.call);
                if self.rng.chance(0.33) {
                    let hold = self.rng.range(5_000_000, 150_000_000);
                    io.timer_after(now, Duration::from_nanos(hold), HANG_UP | ic.call.0);
                }
            }
            CallNote::Connected { call, vc } => {
                let outgoing = match self.calls.get_mut(call) {
                    Some(c) => {
                        let outgoing = c.vc.is_none();
                        c.vc = Some(*vc);
                        c.connected = true;
                        outgoing
                    }
                    None => return,
                };
                if self.stopped {
                    io.release(*call, user_cause(CauseValue::NormalCallClearing, b""));
                    return;
                }
                self.send_some(*call, io);
                if outgoing {
                    let hold = self.rng.range(5_000_000, 100_000_000);
                    io.timer_after(now, Duration::from_nanos(hold), HANG_UP | call.0);
                }
            }
            CallNote::Released { call, .. } => {
                self.calls.remove(call);
            }
            CallNote::Refused { .. } => {}
        }
    }
}

/// Two apps on one host: `load` gets the PVCs' SDUs and its timers, `calls` the calls'
/// (VCIs from [`FIRST_SVC_VCI`], timer tokens with [`TOKEN_BIT`]) and every call note.
pub struct Both<A, B> {
    /// The PVC load.
    pub load: A,
    /// The call churn.
    pub calls: B,
}

impl<A: App, B: App> App for Both<A, B> {
    fn start(&mut self, now: Instant, io: &mut AppIo) {
        self.load.start(now, io);
        self.calls.start(now, io);
    }

    fn on_sdu(&mut self, now: Instant, vc: VcId, sdu: &[u8], io: &mut AppIo) {
        if u32::from(vc.vci.get()) >= FIRST_SVC_VCI {
            self.calls.on_sdu(now, vc, sdu, io);
        } else {
            self.load.on_sdu(now, vc, sdu, io);
        }
    }

    fn on_timer(&mut self, now: Instant, token: u64, io: &mut AppIo) {
        if token & TOKEN_BIT != 0 && token != u64::MAX && token != u64::MAX - 1 {
            self.calls.on_timer(now, token, io);
        } else {
            self.load.on_timer(now, token, io);
        }
    }

    fn on_sent(&mut self, now: Instant, vc: VcId, len: usize, ok: bool, io: &mut AppIo) {
        if u32::from(vc.vci.get()) >= FIRST_SVC_VCI {
            self.calls.on_sent(now, vc, len, ok, io);
        } else {
            self.load.on_sent(now, vc, len, ok, io);
        }
    }

    fn on_call(&mut self, now: Instant, note: &CallNote, io: &mut AppIo) {
        self.calls.on_call(now, note, io);
    }
}

//! Switched VCs in the world: a host's signalling (natm-host-core's user side, made with
//! [`World::enable_signalling`]) and a switch's call control (natm-calls' [`CallControl`]
//! beside the [`Switch`], [`World::enable_calls`]), driven as hostd and switchd drive them:
//! the switch's signalling cells to [`CallControl::handle`] after each input, its timers as
//! events of their own, link down/up as `port_down`/`port_up` and `Host::link_down`/
//! `link_up`; a crashed switch loses its call control and the cross-connects it made (a
//! fresh one on restart), a crashed host its calls.
//!
//! The world keeps a ledger of every call a host placed or was offered ([`CallRecord`]),
//! filled from the host core's events, for the end checks ([`World::calls_settled`],
//! [`World::check_calls_end`]).

use std::collections::BTreeSet;

use natm_host_core::{CallError, CallParams, Cause, Event as CoreEvent, ReleaseOrigin};
use natm_sig::Blli;
use natm_switch::XcId;

use super::*;
use crate::app::CallCommand;

/// How one end of a call ended.
#[derive(Clone, Debug, PartialEq)]
pub struct CallEnd {
    /// Whether it was active at this end.
    pub connected: bool,
    /// Whether this end accepted it (incoming calls).
    pub accepted: bool,
    /// The cause it ended with, once it ended.
    pub released: Option<Cause>,
    /// Who ended it.
    pub by: Option<ReleaseOrigin>,
    /// The host crashed under it (the end has no release event).
    pub crashed: bool,
}

/// A call as the hosts saw it, keyed by the caller's tag (host, serial).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallRecord {
    /// The caller's end: (host, call id, end).
    pub caller: Option<(u32, CallId, CallEnd)>,
    /// The called end, if the call reached it.
    pub called: Option<(u32, CallId, CallEnd)>,
}

/// Every call, by tag; and each host call's tag.
#[derive(Default)]
pub(crate) struct Ledger {
    pub(crate) calls: BTreeMap<[u8; 5], CallRecord>,
    by_host: BTreeMap<(u32, CallId), [u8; 5]>,
    /// Host calls whose SETUP carried no tag (not from a calls app), by host.
    untagged: u64,
}

impl Ledger {
    fn end_mut(&mut self, h: u32, call: CallId) -> Option<&mut CallEnd> {
        let tag = self.by_host.get(&(h, call))?;
        let r = self.calls.get_mut(tag)?;
        for (host, id, end) in [r.caller.as_mut(), r.called.as_mut()].into_iter().flatten() {
            if (*host, *id) == (h, call) {
                return Some(end);
            }
        }
        None
    }
}

fn fresh_end() -> CallEnd {
    CallEnd {
        connected: false,
        accepted: false,
        released: None,
        by: None,
        crashed: false,
    }
}

/// A 5-byte tag in a BLLI's SNAP octets.
fn tag_blli(tag: [u8; 5]) -> Blli {
    Blli {
        layer1: None,
        layer2: None,
        layer3: None,
        snap: Some(tag),
    }
}

impl World {
    /// Gives host `h` the UNI user side with `config` (its address): its core is remade
    /// with it. Before its VCs are opened.
    pub fn enable_signalling(
        &mut self,
        h: HostId,
        config: SignallingConfig,
    ) -> Result<(), SimError> {
        self.host_ref(h)?;
        let host = &mut self.hosts[h.0 as usize];
        if !host.vcs.is_empty() {
            return Err(SimError::Host {
                host: host.name.clone(),
                reason: "signalling is enabled before VCs are opened".into(),
            });
        }
        let cps = host.core.config().link_rate;
        host.sig = Some(config);
        (host.core, host.channel) = make_core(&host.name, &host.config, cps, host.sig.clone())
            .map_err(|reason| SimError::Host {
                host: host.name.clone(),
                reason,
            })?;
        Ok(())
    }

    /// Gives switch `s` call control with `config` on the ports of `sides` (each added with
    /// `PortConfig::signalling`), the switch's side on each.
    pub fn enable_calls(
        &mut self,
        s: SwitchId,
        config: natm_calls::Config,
        sides: Vec<(PortId, Side)>,
    ) -> Result<(), SimError> {
        self.switch_ref(s)?;
        let node = &self.switches[s.0 as usize];
        for (p, _) in &sides {
            if !node.port(*p).is_some_and(|r| r.config.signalling) {
                return Err(SimError::Switch {
                    switch: node.name.clone(),
                    reason: format!("port {p} has no signalling"),
                });
            }
        }
        self.switches[s.0 as usize].calls = Some(CallsRec {
            config,
            sides,
            cc: None,
            armed: IDLE,
            starts: 0,
        });
        if self.switches[s.0 as usize].up {
            self.fresh_calls(s.0);
        }
        Ok(())
    }

    /// A fresh call control on switch `s` (added, or restarted), its ports down where their
    /// links are.
    pub(super) fn fresh_calls(&mut self, s: u32) {
        let now = self.now;
        let links = &self.links;
        let node = &mut self.switches[s as usize];
        let Some(rec) = node.calls.as_mut() else {
            return;
        };
        // A restarted switch's SSCOPs must not begin at the N(SQ) its peers last saw, or
        // a peer still established takes the first BGN for a retransmission (Q.2110
        // §7.3): switchd seeds it from its clock, the world from its seed.
        let mut config = rec.config.clone();
        let salt = crate::seed::sub_seed(self.seed, &node.name);
        config.sscop.first_sq = crate::seed::splitmix64(salt ^ u64::from(rec.starts)) as u8;
        rec.starts = rec.starts.wrapping_add(1);
        let mut cc = CallControl::new(config);
        for &(p, side) in &rec.sides {
            // The ports were checked when call control was enabled.
            let _ = cc.add_port(now, p, side);
            if let Some(pr) = node.ports.iter().find(|r| r.id == p)
                && !links[pr.link as usize].up
            {
                let _ = cc.port_down(now, p, &mut node.sw);
            }
        }
        rec.cc = Some(cc);
        rec.armed = IDLE;
        self.after_calls(s);
    }

    /// After call control ran on switch `s`: its log into the trace, its cells out, its
    /// timer armed.
    pub(super) fn after_calls(&mut self, s: u32) {
        let mut lines = Vec::new();
        let timeout = {
            let node = &mut self.switches[s as usize];
            let Some(cc) = node.calls.as_mut().and_then(|r| r.cc.as_mut()) else {
                return;
            };
            while let Some(l) = cc.poll_log() {
                lines.push(l);
            }
            cc.poll_timeout()
        };
        for l in lines {
            let name = self.switches[s as usize].name.clone();
            self.trace_note(&format!("{name}: {l}"));
        }
        self.drain_switch(s);
        self.arm_at(Target::new(kind::CALLS, s), timeout);
    }

    /// Runs call control on the signalling cells switch `s` holds, if any: whether it ran.
    pub(super) fn calls_input(&mut self, s: u32) -> bool {
        let now = self.now;
        let node = &mut self.switches[s as usize];
        if !node.sw.has_signalling() {
            return false;
        }
        let Some(cc) = node.calls.as_mut().and_then(|r| r.cc.as_mut()) else {
            return false;
        };
        cc.handle(now, &mut node.sw);
        self.after_calls(s);
        true
    }

    /// The call control timer event of switch `s`.
    pub(super) fn calls_timeout(&mut self, s: u32) -> u64 {
        let now = self.now;
        let node = &mut self.switches[s as usize];
        if !node.up {
            return 0;
        }
        let Some(cc) = node.calls.as_mut().and_then(|r| r.cc.as_mut()) else {
            return 0;
        };
        cc.handle_timeout(now, &mut node.sw);
        self.after_calls(s);
        1
    }

    /// A switch port's link went down or came up: call control hears of it.
    pub(super) fn calls_port(&mut self, s: u32, p: PortId, up: bool) {
        let now = self.now;
        let node = &mut self.switches[s as usize];
        let Some(cc) = node.calls.as_mut().and_then(|r| r.cc.as_mut()) else {
            return;
        };
        // A port without signalling is not call control's.
        let _ = if up {
            cc.port_up(now, p, &mut node.sw)
        } else {
            cc.port_down(now, p, &mut node.sw)
        };
        self.after_calls(s);
    }

    /// A host's link went down or came up: its core hears of it (hosts that signal).
    pub(super) fn host_link(&mut self, h: u32, up: bool) {
        let host = &mut self.hosts[h as usize];
        if host.sig.is_none() || !host.up || host.core.is_link_up() == up {
            return;
        }
        if up {
            host.core.link_up();
        } else {
            host.core.link_down();
        }
        self.drain_host(h);
    }

    /// The host crashed: its calls are gone (no events for the app, which restarts).
    pub(super) fn host_crash_calls(&mut self, h: u32) {
        let host = &mut self.hosts[h as usize];
        if host.sig.is_none() {
            return;
        }
        host.core.link_down();
        let mut gone = Vec::new();
        let mut keep = Vec::new();
        while let Some(e) = host.core.poll_event() {
            match e {
                CoreEvent::CallReleased { call, .. } => gone.push(call),
                CoreEvent::PingReply { .. }
                | CoreEvent::PingTimeout { .. }
                | CoreEvent::PingFailed { .. } => keep.push(e),
                _ => {}
            }
        }
        host.core_events.extend(keep);
        host.call_notes.clear();
        // Every offer this host had is gone with it (the network may offer it again).
        for r in self.ledger.calls.values_mut() {
            if let Some((ch, _, end)) = r.called.as_mut()
                && *ch == h
            {
                end.crashed = true;
            }
        }
        for call in gone {
            // The crash takes every buffer too: not a leak.
            self.forget_call_vc(h, call, false);
            if let Some(end) = self.ledger.end_mut(h, call) {
                end.crashed = true;
            }
        }
        // Calls the ledger holds open at this host (none should remain).
        let host = &self.hosts[h as usize];
        let left = host.core.calls().next().map(|(id, _)| id);
        if let Some(id) = left {
            let detail = format!("host {}: {id} outlived the host's crash", host.name);
            self.violate("no call left after release", detail);
        }
    }

    /// The host restarted: its link comes up in its core if the link is up.
    pub(super) fn host_restart_calls(&mut self, h: u32) {
        let host = &self.hosts[h as usize];
        if host.sig.is_none() {
            return;
        }
        if let Some((l, _)) = host.link
            && self.links[l as usize].up
        {
            self.hosts[h as usize].core.link_up();
        }
    }

    /// Removes a call's VC from the host's record (the host core closed it).
    fn forget_call_vc(&mut self, h: u32, call: CallId, check: bool) {
        let host = &mut self.hosts[h as usize];
        let Some(vc) = host.call_vcs.remove(&call) else {
            return;
        };
        let Some(rec) = host.vcs.remove(&vc) else {
            return;
        };
        if let Some(handle) = rec.handle {
            host.by_handle.remove(&handle);
            if !check {
                return;
            }
            if let Some(i) = host
                .bufs
                .iter()
                .position(|b| *b == Buf::Adapter(Some(handle)))
            {
                let detail = format!(
                    "host {}: buffer {i} posted on {vc} did not come back when {call} ended",
                    host.name
                );
                self.violate("nothing leaked after release", detail);
            }
        }
    }

    /// Opens a call's VC on the host's channel and records it.
    fn open_call_vc(&mut self, h: u32, call: CallId) -> Result<VcId, CallError> {
        let host = &mut self.hosts[h as usize];
        let handle = host.core.open_call_vc(call, host.channel)?;
        let info = host
            .core
            .call_info(call)
            .expect("a call whose VC was just opened");
        let (vc, qos) = (info.vc.expect("an open call VC has its VC"), info.qos);
        let up = host.up;
        host.vcs.insert(
            vc,
            VcRec {
                qos,
                options: VcOptions::default(),
                handle: up.then_some(handle.0),
                core: handle,
            },
        );
        if up {
            host.by_handle.insert(handle.0, vc);
        }
        host.call_vcs.insert(call, vc);
        Ok(vc)
    }

    /// A call event of host `h`'s core (from `drain_host`).
    pub(super) fn host_call_event(&mut self, h: u32, e: CoreEvent) {
        match e {
            CoreEvent::IncomingCall(ic) => {
                let tag = ic.blli.as_ref().and_then(|b| b.snap);
                match tag {
                    Some(tag) => {
                        let r = self.ledger.calls.entry(tag).or_default();
                        // An offer that ended (released, or its host crashed) may be made
                        // again: the network's T303 resends SETUP, and a SETUP a crashed
                        // switch took but never acknowledged comes again from SSCOP after
                        // the switch's restart. Two live offers of one call are a double.
                        let twice = r
                            .called
                            .as_ref()
                            .filter(|(_, _, e)| !e.crashed && e.released.is_none())
                            .map(|(ph, pc, _)| (*ph, *pc));
                        // An earlier life's acceptance stands (the caller may be active).
                        let accepted = r.called.as_ref().is_some_and(|(_, _, e)| e.accepted);
                        let mut end = fresh_end();
                        end.accepted = accepted;
                        r.called = Some((h, ic.call, end));
                        if let Some((ph, pc)) = twice {
                            let detail = format!(
                                "call tag {tag:02x?} offered twice: to host {ph} as {pc} and to host {h} as {}",
                                ic.call
                            );
                            self.violate("every call ends once, alike at both ends", detail);
                        }
                        self.ledger.by_host.insert((h, ic.call), tag);
                    }
                    None => self.ledger.untagged += 1,
                }
                self.hosts[h as usize]
                    .call_notes
                    .push_back(CallNote::Incoming(ic));
            }
            CoreEvent::CallConnected { call, vc } => {
                let host = &self.hosts[h as usize];
                let opened = host.call_vcs.contains_key(&call);
                if !opened && let Err(e) = self.open_call_vc(h, call) {
                    let now = self.now;
                    let name = self.hosts[h as usize].name.clone();
                    self.trace_note(&format!("{name}: {call} VC not opened: {e}"));
                    let cause = natm_host_core::user_cause(
                        natm_host_core::CauseValue::ResourceUnavailable,
                        b"VC not opened",
                    );
                    let _ = self.hosts[h as usize].core.release(now, call, cause);
                    return;
                }
                let late = self.ledger.end_mut(h, call).is_some_and(|end| {
                    end.connected = true;
                    end.released.is_some()
                });
                if late {
                    let detail = format!("host {h}: {call} connected after it was released");
                    self.violate("every call ends once, alike at both ends", detail);
                }
                self.hosts[h as usize]
                    .call_notes
                    .push_back(CallNote::Connected { call, vc });
            }
            CoreEvent::CallReleased { call, cause, by } => {
                self.forget_call_vc(h, call, true);
                let twice = self.ledger.end_mut(h, call).is_some_and(|end| {
                    let twice = end.released.is_some();
                    end.released = Some(cause.clone());
                    end.by = Some(by);
                    twice
                });
                if twice {
                    let detail = format!("host {h}: {call} released twice");
                    self.violate("every call ends once, alike at both ends", detail);
                }
                self.hosts[h as usize]
                    .call_notes
                    .push_back(CallNote::Released { call, cause });
            }
            other => self.hosts[h as usize].core_events.push(other),
        }
    }

    /// Carries out the call commands of the last app call on host `h`.
    pub(super) fn carry_out_calls(&mut self, h: u32, commands: &[CallCommand]) {
        let now = self.now;
        for c in commands {
            let host = &mut self.hosts[h as usize];
            if !host.up {
                break;
            }
            match c {
                CallCommand::Call {
                    token,
                    called,
                    qos,
                    tag,
                } => {
                    let mut params = CallParams::new(*called, *qos);
                    params.blli = tag.map(tag_blli);
                    let result = host.core.call(now, &params);
                    if let Err(CallError::Command(e)) = &result {
                        let detail =
                            format!("host {}: QoS {qos} refused by call control: {e}", host.name);
                        self.violate("every QoS natm accepts has its IEs", detail);
                    }
                    if let (Ok(id), Some(tag)) = (&result, tag) {
                        self.ledger.calls.insert(
                            *tag,
                            CallRecord {
                                caller: Some((h, *id, fresh_end())),
                                called: None,
                            },
                        );
                        self.ledger.by_host.insert((h, *id), *tag);
                    }
                    self.hosts[h as usize]
                        .call_notes
                        .push_back(CallNote::Placed {
                            token: *token,
                            result: result.map_err(|e| e.to_string()),
                        });
                }
                CallCommand::Accept(call) => {
                    let r = host
                        .core
                        .accept(now, *call)
                        .and_then(|()| self.open_call_vc(h, *call).map(|_| ()));
                    match r {
                        Ok(()) => {
                            if let Some(end) = self.ledger.end_mut(h, *call) {
                                end.accepted = true;
                            }
                        }
                        Err(e) => self.refused(h, *call, e),
                    }
                }
                CallCommand::Reject(call, cause) => {
                    if let Err(e) = host.core.reject(now, *call, cause.clone()) {
                        self.refused(h, *call, e);
                    }
                }
                CallCommand::Release(call, cause) => {
                    if let Err(e) = host.core.release(now, *call, cause.clone()) {
                        self.refused(h, *call, e);
                    }
                }
            }
        }
    }

    fn refused(&mut self, h: u32, call: CallId, e: CallError) {
        self.hosts[h as usize]
            .call_notes
            .push_back(CallNote::Refused {
                call,
                reason: e.to_string(),
            });
    }

    /// Hands the queued call notes to host `h`'s app, in order.
    pub(super) fn pump_calls(&mut self, h: u32) {
        while let Some(note) = self.hosts[h as usize].call_notes.pop_front() {
            self.call_app(h, |app, now, io| app.on_call(now, &note, io));
        }
    }

    // ------------------------------------------------------------------ end checks

    /// What still holds a call anywhere (a host, a switch's call control or a switched
    /// cross-connect), or `None` when nothing does.
    pub fn calls_settled(&self) -> Option<String> {
        for host in &self.hosts {
            if let Some((id, c)) = host.core.calls().next() {
                return Some(format!("host {}: {id} is {:?}", host.name, c.phase));
            }
        }
        for node in &self.switches {
            let Some(cc) = node.calls.as_ref().and_then(|r| r.cc.as_ref()) else {
                continue;
            };
            if cc.call_count() > 0 {
                let c = cc.calls(self.now).next();
                return Some(format!(
                    "switch {}: {} calls in call control (first: {c:?})",
                    node.name,
                    cc.call_count()
                ));
            }
        }
        None
    }

    /// The end checks of a run with calls, once every call is gone: nothing left in any
    /// call control, signalling entity or host; no VCI allocated and no bandwidth booked
    /// beyond the PVCs' on any switch port or host link; every call ended at both ends
    /// (exactly once, with a cause), and a call active at its caller was accepted by the
    /// called host.
    pub fn check_calls_end(&mut self) -> Result<(), Violation> {
        if let Some(what) = self.calls_settled() {
            self.violate("no call left after release", what);
        }
        for (invariant, detail) in self.call_leaks() {
            self.violate(invariant, detail);
        }
        match self.violation.take() {
            Some(v) => Err(v),
            None => Ok(()),
        }
    }

    /// What [`check_calls_end`](World::check_calls_end) finds left over or inconsistent,
    /// each with the invariant it breaks, in the order checked.
    fn call_leaks(&self) -> Vec<(&'static str, String)> {
        const LEAK: &str = "no VCI or bandwidth leaked";
        const CREF: &str = "no call reference leaks";
        // Calls and call references a signalling entity still holds.
        let holds = |sig: &natm_sig::Signalling| {
            let (calls, refs) = (sig.uni().call_count(), sig.uni().call_refs_allocated());
            (calls > 0 || refs > 0)
                .then(|| format!("its signalling holds {calls} calls, {refs} call references"))
        };
        let mut found = Vec::new();
        for node in &self.switches {
            let Some(cc) = node.calls.as_ref().and_then(|r| r.cc.as_ref()) else {
                continue;
            };
            for p in cc.ports() {
                if p.vcis > 0 || p.calls > 0 {
                    found.push((
                        LEAK,
                        format!(
                            "switch {} port {}: {} VCIs allocated, {} call legs with no call left",
                            node.name, p.port, p.vcis, p.calls
                        ),
                    ));
                }
                if let Some(what) = cc.signalling(p.port).and_then(holds) {
                    found.push((
                        CREF,
                        format!("switch {} port {}: {what}", node.name, p.port),
                    ));
                }
            }
            let recorded = node.xcs.values().filter(|r| r.live.is_some()).count() as u32;
            if node.up && node.sw.connection_count() != recorded {
                found.push((
                    LEAK,
                    format!(
                        "switch {}: {} cross-connects, {recorded} PVC legs: switched ones left",
                        node.name,
                        node.sw.connection_count()
                    ),
                ));
            }
        }
        for host in self.hosts.iter().filter(|h| h.sig.is_some()) {
            if let Some(what) = host.core.signalling().and_then(holds) {
                found.push((CREF, format!("host {}: {what}", host.name)));
            }
            let booked = host.core.cac().reservations().count();
            let pvcs = host.vcs.len();
            if booked != pvcs || !host.call_vcs.is_empty() {
                found.push((
                    LEAK,
                    format!(
                        "host {}: {booked} bookings on its link, {pvcs} PVCs open, {} call VCs \
                         recorded",
                        host.name,
                        host.call_vcs.len()
                    ),
                ));
            }
        }
        let mut bad = None;
        for (tag, r) in &self.ledger.calls {
            for (host, id, end) in [r.caller.as_ref(), r.called.as_ref()].into_iter().flatten() {
                if end.released.is_none() && !end.crashed {
                    bad.get_or_insert(format!(
                        "call {tag:02x?}: host {host} {id} has no release (its end: {end:?})"
                    ));
                }
            }
            if let (Some((ch, cid, ce)), called) = (&r.caller, &r.called)
                && ce.connected
                && !called.as_ref().is_some_and(|(_, _, e)| e.accepted)
            {
                bad.get_or_insert(format!(
                    "call {tag:02x?}: active at its caller (host {ch} {cid}) but never accepted by \
                     the called host ({called:?})"
                ));
            }
        }
        if let Some(detail) = bad {
            found.push(("every call ends once, alike at both ends", detail));
        }
        found
    }

    /// The ledger of calls (for reports and tests).
    pub fn call_records(&self) -> impl Iterator<Item = &CallRecord> {
        self.ledger.calls.values()
    }

    /// The switched cross-connects of switch `s` (not in the world's record).
    pub(crate) fn switched(node: &SwitchNode) -> Vec<(XcId, CrossConnect)> {
        let recorded: BTreeSet<XcId> = node.xcs.values().filter_map(|r| r.live).collect();
        node.sw
            .connections()
            .filter(|(id, _)| !recorded.contains(id))
            .map(|(id, xc)| (id, *xc))
            .collect()
    }
}

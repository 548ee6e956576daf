//! natm's signalling (`natm_sig::Signalling`) against linux-atm's atmsigd, unmodified,
//! through `tools/atm_socket_shim.c` (see the crate docs and `natm_interop::atmsigd`).
//!
//! Both ways: natm's user side against `atmsigd -m network` (`user_*` tests) and natm's
//! network side against `atmsigd -m user` (`network_*` tests). atmsigd is made to listen,
//! accept, call and hang up through its kernel-side socket (`struct atmsvc_msg`).
//!
//! Timers: atmsigd's are compiled in (atmsigd.conf has no timer options): Timer_CC 1 s,
//! MaxCC 4, Timer_POLL 750 ms, Timer_IDLE 15 s. natm's SSCOP keeps the defaults except in
//! the keep-alive tests, which set natm's Timer_IDLE to 1 s so that natm polls atmsigd
//! every second while idle.
//!
//! Each test prints `INTEROP | scenario | direction | result | causes` lines (run with
//! `--nocapture` to see them) and the whole exchange, decoded. Skips with a message when
//! atmsigd or cc is missing, unless `NATM_REQUIRE_ATMSIGD=1` (set by scripts/test). Every
//! scenario is bounded (< 20 s of wall clock); every atmsigd is killed, reaped and its
//! directory removed when the test ends, passed or failed.

use std::time::Duration;

use natm_core::Instant;
use natm_core::addr::Aesa;
use natm_interop::atmsigd::{AtmSigd, Dir, Mode, Options, SaalEndpoint, Uni};
use natm_interop::kernel::{KernelMsg, MsgType, Pvc, Qos as KQos};
use natm_interop::vectors;
use natm_sig::{
    CallEvent, CallId, Cause, CauseValue, Config, ConnId, Location, PartyNumber, ReleaseOrigin,
    Restart, Role, SetupParams, Signalling,
};
use natm_wire::q2931::{Message, MsgType as MsgType2931};
use natm_wire::sscop::{PduType, Repr};

/// atmsigd's own address (the shim's ATM_GETADDR).
const SIGD_ADDR: [u8; 20] = [
    0x47, 0x00, 0x05, 0x80, 0xff, 0xe1, 0x00, 0x00, 0x00, 0xf2, 0x1a, 0x3d, 0x5c, 0x00, 0x20, 0x48,
    0x1a, 0x3d, 0x5c, 0x00,
];
/// natm's address.
const NATM_ADDR: [u8; 20] = [
    0x47, 0x00, 0x05, 0x80, 0xff, 0xe1, 0x00, 0x00, 0x00, 0xf2, 0x1a, 0x3d, 0x5c, 0x00, 0x20, 0x48,
    0x1b, 0x00, 0x01, 0x00,
];
/// Kernel-side socket tags.
const LISTENER: u64 = 0x1111;
const LIMIT: Duration = Duration::from_secs(5);

/// natm's signalling entity as the harness drives it, with the events it reported.
struct Natm {
    sig: Signalling,
    events: Vec<CallEvent>,
}

impl Natm {
    fn drain(&mut self) {
        while let Some(e) = self.sig.poll_event() {
            match &e {
                CallEvent::Setup { call, setup } => {
                    eprintln!("  natm event: Setup {{ {call}: {} }}", setup.message);
                }
                e => eprintln!("  natm event: {e:?}"),
            }
            self.events.push(e);
        }
    }

    /// Removes and returns the first event `pred` accepts.
    fn take(&mut self, pred: &impl Fn(&CallEvent) -> bool) -> Option<CallEvent> {
        self.drain();
        let i = self.events.iter().position(pred)?;
        Some(self.events.remove(i))
    }
}

impl SaalEndpoint for Natm {
    fn handle_pdu(&mut self, now: Instant, sdu: &[u8]) {
        self.sig.handle_pdu(now, sdu);
        self.drain();
    }
    fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.sig.poll_transmit()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.sig.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.sig.handle_timeout(now);
        self.drain();
    }
}

/// One scenario: atmsigd in `mode`, natm on the other side.
struct Run {
    sigd: AtmSigd,
    natm: Natm,
    name: &'static str,
}

impl Run {
    fn start(name: &'static str, mode: Mode, saal: natm_sscop::Config) -> Option<Run> {
        Run::start_uni(name, mode, Uni::Uni31, saal)
    }

    fn start_uni(
        name: &'static str,
        mode: Mode,
        uni: Uni,
        saal: natm_sscop::Config,
    ) -> Option<Run> {
        let opts = Options {
            uni,
            ..Options::new(mode, Some(SIGD_ADDR))
        };
        let sigd = AtmSigd::spawn_or_skip(name, &opts)?;
        let role = match mode {
            Mode::Network => Role::User,
            Mode::User => Role::Network,
        };
        let sig = Signalling::new(sigd.now(), Config::new(role), saal);
        let mut run = Run {
            sigd,
            natm: Natm {
                sig,
                events: Vec::new(),
            },
            name,
        };
        run.event(|e| matches!(e, CallEvent::LinkUp));
        // natm may be up before atmsigd is (BGN collision: each side's BGAK in flight).
        // atmsigd reads its kernel socket before the signalling VC and drops a SETUP made
        // while its SAAL is down, so wait for a sign that atmsigd is established.
        let up = run.sigd.pump(&mut run.natm, LIMIT, |_, s| {
            s.from_sigd().any(|p| {
                matches!(
                    pdu_type(p),
                    Some(PduType::Bgak | PduType::Poll | PduType::Stat | PduType::Sd)
                )
            })
        });
        if !up {
            run.fail("sign of atmsigd's SSCOP being established");
        }
        Some(run)
    }

    fn now(&self) -> Instant {
        self.sigd.now()
    }

    /// Pumps until natm reports an event `pred` accepts.
    fn event(&mut self, pred: impl Fn(&CallEvent) -> bool) -> CallEvent {
        let mut got = None;
        self.sigd.pump(&mut self.natm, LIMIT, |n, _| {
            got = n.take(&pred);
            got.is_some()
        });
        match got {
            Some(e) => e,
            None => self.fail("natm event"),
        }
    }

    /// Pumps until atmsigd's kernel side says `kind`.
    fn kernel(&mut self, kind: MsgType) -> KernelMsg {
        let mut got = None;
        self.sigd.pump(&mut self.natm, LIMIT, |_, s| {
            let inbox = s.kernel_inbox();
            if let Some(i) = inbox.iter().position(|m| m.kind == kind) {
                got = inbox.remove(i);
            }
            got.is_some()
        });
        match got {
            Some(m) => {
                eprintln!("  atmsigd kernel: {m:?}");
                m
            }
            None => self.fail(&format!("kernel {kind:?}")),
        }
    }

    /// Pumps for `d` whatever happens.
    fn idle(&mut self, d: Duration) {
        self.sigd.pump(&mut self.natm, d, |_, _| false);
    }

    fn fail(&self, what: &str) -> ! {
        self.dump();
        panic!("{}: no {what} within {LIMIT:?}", self.name);
    }

    /// Prints the exchange, decoded.
    fn dump(&self) {
        eprintln!("--- {}: signalling VC ---", self.name);
        for s in &self.sigd.trace {
            let arrow = match s.dir {
                Dir::ToSigd => "natm -> atmsigd",
                Dir::FromSigd => "atmsigd -> natm",
            };
            let lost = if s.dropped { " (LOST)" } else { "" };
            eprintln!("{:>8.3} {arrow}{lost} {}", secs(s.at), describe(&s.sdu));
            if s.dir == Dir::FromSigd {
                // atmsigd's bytes, for the record (natm_interop::vectors).
                eprintln!("{:>8} {}", "", natm_interop::atmsigd::hex(&s.sdu));
            }
        }
    }

    /// Q.2931 messages atmsigd sent, decoded.
    /// Each SD once: a retransmission (same N(S)) is left out.
    fn sigd_messages(&self) -> Vec<Message> {
        let mut seen = std::collections::BTreeSet::new();
        self.sigd
            .from_sigd()
            .filter(|p| match Repr::parse(p) {
                Ok(Repr::Sd { n_s, .. }) => seen.insert(n_s),
                _ => false,
            })
            .filter_map(q2931)
            .collect()
    }

    fn listen(&mut self) {
        let mut m = KernelMsg::new(MsgType::Listen, LISTENER);
        m.svc = Some([0; 20]);
        m.qos = Some(KQos::ubr(9188));
        self.sigd.kernel_send(&m);
        self.kernel(MsgType::Okay);
    }

    fn setup_params(&self, conn: Option<ConnId>) -> SetupParams {
        SetupParams {
            called: PartyNumber::aesa(Aesa(SIGD_ADDR)),
            called_sub: None,
            calling: Some(PartyNumber::aesa(Aesa(NATM_ADDR))),
            calling_sub: None,
            qos: "ubr,aal5:max_pcr=353207,sdu=9188".parse().expect("qos"),
            blli: None,
            bhli: None,
            conn,
        }
    }

    fn ktell(&mut self, kind: MsgType, vcc: u64) {
        self.sigd.kernel_send(&KernelMsg::new(kind, vcc));
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.dump();
            // What atmsigd itself found worth saying (its -d log has every PDU besides).
            let log = self.sigd.log();
            let notable = log.lines().filter(|l| {
                ["error", "warn", "incompatible", "Bad", "Cause", "can't"]
                    .iter()
                    .any(|w| l.contains(w))
            });
            for l in notable {
                eprintln!("  atmsigd log: {l}");
            }
        }
    }
}

fn secs(t: Instant) -> f64 {
    t.as_nanos() as f64 / 1e9
}

fn q2931(sdu: &[u8]) -> Option<Message> {
    match Repr::parse(sdu) {
        Ok(Repr::Sd { info, .. }) => Message::parse(info).ok().map(|p| p.message),
        _ => None,
    }
}

fn describe(sdu: &[u8]) -> String {
    match Repr::parse(sdu) {
        Ok(r) => match q2931(sdu) {
            Some(m) => format!("{r} | {m}"),
            None => format!("{r}"),
        },
        Err(e) => format!("undecodable {e:?}: {sdu:02x?}"),
    }
}

fn pdu_type(sdu: &[u8]) -> Option<PduType> {
    Repr::parse(sdu).ok().map(|r| r.pdu_type())
}

fn causes(ms: &[Message]) -> String {
    let mut out = Vec::new();
    for m in ms {
        for c in &m.cause {
            out.push(format!("{} in {:?}", c.value.code(), m.header.msg_type));
        }
    }
    if out.is_empty() {
        "none".into()
    } else {
        out.join(", ")
    }
}

fn report(scenario: &str, direction: &str, result: &str, causes: &str) {
    eprintln!("INTEROP | {scenario} | {direction} | {result} | {causes}");
}

fn direction_uni(mode: Mode, uni: Uni) -> String {
    match uni {
        Uni::Uni31 => direction(mode).to_string(),
        Uni::Uni40 => format!("{} -u uni40", direction(mode)),
    }
}

fn normal() -> Cause {
    Cause::new(Location::User, CauseValue::NormalCallClearing)
}

fn direction(mode: Mode) -> &'static str {
    match mode {
        Mode::Network => "natm user ↔ atmsigd -m network",
        Mode::User => "natm network ↔ atmsigd -m user",
    }
}

// --- SSCOP ----------------------------------------------------------------------------

/// Establishment, then 16.5 s idle: atmsigd's POLLs (750 ms after establishment, then every
/// Timer_IDLE, 15 s) answered by natm's STATs, natm's (every second with Timer_IDLE 1 s)
/// by atmsigd's, and nobody re-establishes.
fn keep_alive(mode: Mode) {
    let saal = natm_sscop::Config {
        timer_idle: natm_core::Duration::from_secs(1),
        ..natm_sscop::Config::default()
    };
    let Some(mut run) = Run::start("keepalive", mode, saal) else {
        return;
    };
    let up = run.now();
    run.idle(Duration::from_millis(16_500));
    let after: Vec<_> = run.sigd.trace.iter().filter(|s| s.at >= up).collect();
    let count = |dir: Dir, ty: PduType| {
        after
            .iter()
            .filter(|s| s.dir == dir && pdu_type(&s.sdu) == Some(ty))
            .count()
    };
    let (sigd_polls, natm_stats) = (
        count(Dir::FromSigd, PduType::Poll),
        count(Dir::ToSigd, PduType::Stat),
    );
    let (natm_polls, sigd_stats) = (
        count(Dir::ToSigd, PduType::Poll),
        count(Dir::FromSigd, PduType::Stat),
    );
    let restarts = after
        .iter()
        .filter(|s| {
            matches!(
                pdu_type(&s.sdu),
                Some(PduType::Bgn | PduType::End | PduType::Rs | PduType::Er)
            )
        })
        .count();
    assert!(sigd_polls >= 2, "atmsigd polled {sigd_polls} times");
    assert!(
        natm_stats >= sigd_polls,
        "natm answered {natm_stats} of {sigd_polls} POLLs"
    );
    assert!(natm_polls >= 10, "natm polled {natm_polls} times");
    assert!(
        sigd_stats >= natm_polls - 1,
        "atmsigd answered {sigd_stats} of {natm_polls}"
    );
    assert_eq!(
        restarts, 0,
        "the link was re-established or released while idle"
    );
    assert!(run.natm.sig.uni().link_up());
    report(
        "SSCOP establishment + keep-alive (16.5 s idle)",
        direction(mode),
        &format!(
            "ok: atmsigd POLL×{sigd_polls}/natm STAT×{natm_stats}, natm POLL×{natm_polls}/atmsigd STAT×{sigd_stats}"
        ),
        "-",
    );
}

#[test]
fn user_keep_alive() {
    keep_alive(Mode::Network);
}

#[test]
fn network_keep_alive() {
    keep_alive(Mode::User);
}

/// natm sends two SETUPs back to back and the first SD is lost: atmsigd's USTAT, natm's
/// retransmission. atmsigd answers both (no listener: RELEASE COMPLETE) and its first answer
/// is lost: natm's USTAT, atmsigd's retransmission.
fn lost_sd(mode: Mode) {
    let Some(mut run) = Run::start("lostsd", mode, natm_sscop::Config::default()) else {
        return;
    };
    let (mut lost_out, mut lost_in) = (false, false);
    run.sigd.set_filter(move |dir, sdu| {
        if pdu_type(sdu) != Some(PduType::Sd) {
            return false;
        }
        let lost = match dir {
            Dir::ToSigd => &mut lost_out,
            Dir::FromSigd => &mut lost_in,
        };
        !std::mem::replace(lost, true)
    });
    let conn = |vci| (mode == Mode::User).then_some(ConnId { vpci: 0, vci });
    let now = run.now();
    let p1 = run.setup_params(conn(40));
    let p2 = run.setup_params(conn(41));
    let a = run.natm.sig.setup(now, &p1).expect("setup 1");
    let b = run.natm.sig.setup(now, &p2).expect("setup 2");
    let mut released = Vec::new();
    for _ in 0..2 {
        match run.event(|e| matches!(e, CallEvent::Released { .. })) {
            CallEvent::Released { call, cause, by } => released.push((call, cause, by)),
            _ => unreachable!(),
        }
    }
    released.sort_by_key(|r| r.0);
    assert_eq!(
        released.iter().map(|r| r.0).collect::<Vec<CallId>>(),
        vec![a, b]
    );
    let sscop = run.natm.sig.sscf().sscop().counters();
    let sent = |dir, ty| {
        run.sigd
            .trace
            .iter()
            .filter(|s| s.dir == dir && !s.dropped && pdu_type(&s.sdu) == Some(ty))
            .count()
    };
    let sigd_ustat = sent(Dir::FromSigd, PduType::Ustat);
    let natm_ustat = sent(Dir::ToSigd, PduType::Ustat);
    assert!(sigd_ustat >= 1, "atmsigd sent no USTAT for the lost SD");
    assert!(sscop.sd_retransmitted >= 1, "natm retransmitted nothing");
    assert!(natm_ustat >= 1, "natm sent no USTAT for atmsigd's lost SD");
    let ms = run.sigd_messages();
    let rc: Vec<u8> = released.iter().map(|r| r.1.value.code()).collect();
    report(
        "lost SD (one each way)",
        direction(mode),
        &format!(
            "ok: atmsigd USTAT×{sigd_ustat} → natm retransmitted {}; natm USTAT×{natm_ustat} → atmsigd retransmitted",
            sscop.sd_retransmitted
        ),
        &causes(&ms),
    );
    report(
        "natm SETUP, atmsigd not listening",
        direction(mode),
        &format!("RELEASE COMPLETE, natm released by {:?}", released[0].2),
        &format!("{rc:?}"),
    );
}

/// One SD lost each way when nothing follows it: the gap shows only at the sender's next
/// POLL (Timer_POLL, 750 ms), whose STAT lists it, and the sender retransmits.
fn lost_sd_alone(mode: Mode) {
    let Some(mut run) = Run::start("lostsdalone", mode, natm_sscop::Config::default()) else {
        return;
    };
    let (mut lost_out, mut lost_in) = (false, false);
    run.sigd.set_filter(move |dir, sdu| {
        if pdu_type(sdu) != Some(PduType::Sd) {
            return false;
        }
        let lost = match dir {
            Dir::ToSigd => &mut lost_out,
            Dir::FromSigd => &mut lost_in,
        };
        !std::mem::replace(lost, true)
    });
    let conn = (mode == Mode::User).then_some(ConnId { vpci: 0, vci: 40 });
    let now = run.now();
    let p = run.setup_params(conn);
    let call = run.natm.sig.setup(now, &p).expect("setup");
    let cause = match run.event(|e| matches!(e, CallEvent::Released { call: c, .. } if *c == call))
    {
        CallEvent::Released { cause, .. } => cause,
        _ => unreachable!(),
    };
    let stat_with_gap = |dir| {
        run.sigd.trace.iter().any(|s| {
            s.dir == dir
                && matches!(Repr::parse(&s.sdu), Ok(Repr::Stat { ref list, .. }) if !list.is_empty())
        })
    };
    assert!(stat_with_gap(Dir::FromSigd), "atmsigd's STAT listed no gap");
    assert!(stat_with_gap(Dir::ToSigd), "natm's STAT listed no gap");
    let retransmitted = run.natm.sig.sscf().sscop().counters().sd_retransmitted;
    assert!(retransmitted >= 1, "natm retransmitted nothing");
    report(
        "lost SD, nothing after it (POLL/STAT recovery)",
        direction(mode),
        "ok: each side's POLL → STAT with the gap → retransmission",
        &format!("{} in RELEASE COMPLETE", cause.value.code()),
    );
}

#[test]
fn user_lost_sd_alone() {
    lost_sd_alone(Mode::Network);
}

#[test]
fn network_lost_sd_alone() {
    lost_sd_alone(Mode::User);
}

#[test]
fn user_lost_sd() {
    lost_sd(Mode::Network);
}

#[test]
fn network_lost_sd() {
    lost_sd(Mode::User);
}

// --- Q.2931 ---------------------------------------------------------------------------

/// natm calls atmsigd (which listens and accepts), natm hangs up; atmsigd calls natm (which
/// accepts), atmsigd hangs up.
fn calls(mode: Mode, uni: Uni) {
    let Some(mut run) = Run::start_uni("calls", mode, uni, natm_sscop::Config::default()) else {
        return;
    };
    run.listen();

    // natm → atmsigd.
    let now = run.now();
    let conn = (mode == Mode::User).then_some(ConnId { vpci: 0, vci: 40 });
    let p = run.setup_params(conn);
    let call = run.natm.sig.setup(now, &p).expect("setup");
    let ind = run.kernel(MsgType::Indicate);
    assert_eq!(ind.listen_vcc, LISTENER);
    assert_eq!(ind.svc, Some(NATM_ADDR), "calling party as atmsigd saw it");
    let mut acc = KernelMsg::new(MsgType::Accept, 0x2222);
    acc.listen_vcc = LISTENER;
    run.sigd.kernel_send(&acc);
    let conn_in =
        match run.event(|e| matches!(e, CallEvent::Connected { call: c, .. } if *c == call)) {
            CallEvent::Connected { conn, .. } => conn,
            _ => unreachable!(),
        };
    run.kernel(MsgType::Okay);
    report(
        "natm SETUP answered by atmsigd",
        &direction_uni(mode, uni),
        &format!("CONNECT, active on {conn_in:?}"),
        "-",
    );

    // STATUS ENQUIRY on the active call.
    let now = run.now();
    run.natm
        .sig
        .status_enquiry(now, call)
        .expect("status enquiry");
    let (cause, peer_state) = match run.event(|e| matches!(e, CallEvent::Status { .. })) {
        CallEvent::Status {
            cause, peer_state, ..
        } => (cause, peer_state),
        _ => unreachable!(),
    };
    assert_eq!(cause.value, CauseValue::ResponseToStatusEnquiry);
    assert_eq!(peer_state, 10, "atmsigd's call state (active)");
    report(
        "STATUS ENQUIRY by natm (active call)",
        &direction_uni(mode, uni),
        &format!("STATUS, call state {peer_state}"),
        &format!("{}", cause.value.code()),
    );

    let now = run.now();
    run.natm.sig.release(now, call, normal()).expect("release");
    run.kernel(MsgType::Close);
    // atmsigd sends RELEASE COMPLETE only once its kernel closes too.
    run.ktell(MsgType::Close, 0x2222);
    let by = match run.event(|e| matches!(e, CallEvent::Released { call: c, .. } if *c == call)) {
        CallEvent::Released { by, .. } => by,
        _ => unreachable!(),
    };
    let rc: Vec<Message> = run
        .sigd_messages()
        .into_iter()
        .filter(|m| m.header.msg_type == MsgType2931::ReleaseComplete)
        .collect();
    report(
        "RELEASE by natm",
        &direction_uni(mode, uni),
        &format!("RELEASE COMPLETE after atmsigd's kernel closed; natm released by {by:?}"),
        &format!("natm sent 16; RELEASE COMPLETE: {}", causes(&rc)),
    );

    // atmsigd → natm.
    let mut c = KernelMsg::new(MsgType::Connect, 0x3333);
    c.svc = Some(NATM_ADDR);
    c.qos = Some(KQos::ubr(9188));
    run.sigd.kernel_send(&c);
    let (call, setup) = match run.event(|e| matches!(e, CallEvent::Setup { .. })) {
        CallEvent::Setup { call, setup } => (call, setup),
        _ => unreachable!(),
    };
    assert!(setup.qos_mapped, "atmsigd's SETUP maps to a natm Qos");
    let now = run.now();
    match mode {
        Mode::User => {
            // natm is the network: it names the VC.
            let vc = Some(ConnId { vpci: 0, vci: 41 });
            run.natm.sig.proceed(now, call, vc).expect("proceed");
            run.natm.sig.connect(now, call, None).expect("connect");
        }
        Mode::Network => run.natm.sig.connect(now, call, None).expect("connect"),
    }
    run.event(|e| matches!(e, CallEvent::Connected { call: c, .. } if *c == call));
    let ok = run.kernel(MsgType::Okay);
    assert_eq!(ok.reply, 0);
    report(
        "atmsigd SETUP answered by natm",
        &direction_uni(mode, uni),
        &format!("CONNECT; atmsigd active on {:?}", ok.pvc),
        "-",
    );

    run.ktell(MsgType::Close, 0x3333);
    let (cause, by) =
        match run.event(|e| matches!(e, CallEvent::Released { call: c, .. } if *c == call)) {
            CallEvent::Released { cause, by, .. } => (cause, by),
            _ => unreachable!(),
        };
    assert_eq!(by, ReleaseOrigin::Peer);
    run.kernel(MsgType::Close);
    report(
        "RELEASE by atmsigd",
        &direction_uni(mode, uni),
        "natm answered RELEASE COMPLETE; atmsigd's kernel told",
        &format!("{} in RELEASE", cause.value.code()),
    );

    // natm → atmsigd, refused by atmsigd's owner (as_reject).
    let now = run.now();
    let conn = (mode == Mode::User).then_some(ConnId { vpci: 0, vci: 42 });
    let p = run.setup_params(conn);
    let call = run.natm.sig.setup(now, &p).expect("setup");
    run.kernel(MsgType::Indicate);
    let mut rej = KernelMsg::new(MsgType::Reject, 0x5555);
    rej.listen_vcc = LISTENER;
    run.sigd.kernel_send(&rej);
    let (cause, by) =
        match run.event(|e| matches!(e, CallEvent::Released { call: c, .. } if *c == call)) {
            CallEvent::Released { cause, by, .. } => (cause, by),
            _ => unreachable!(),
        };
    assert_eq!(by, ReleaseOrigin::Peer);
    let how = match mode {
        // -m network has sent CALL PROCEEDING already: it clears with RELEASE.
        Mode::Network => "RELEASE (after CALL PROCEEDING), natm answered RELEASE COMPLETE",
        Mode::User => "RELEASE COMPLETE",
    };
    report(
        "natm SETUP rejected by atmsigd's owner (as_reject)",
        &direction_uni(mode, uni),
        how,
        &format!("{}", cause.value.code()),
    );
    assert!(run.natm.sig.uni().call_count() == 0, "calls left");
}

#[test]
fn user_calls() {
    calls(Mode::Network, Uni::Uni31);
}

#[test]
fn network_calls() {
    calls(Mode::User, Uni::Uni31);
}

/// The same against `atmsigd -u uni40` (natm's messages are the same; so are atmsigd's).
#[test]
fn user_calls_uni40() {
    calls(Mode::Network, Uni::Uni40);
}

#[test]
fn network_calls_uni40() {
    calls(Mode::User, Uni::Uni40);
}

/// RESTART from natm: of the indicated VC of an active call, then of all VCs with a call
/// active, then of a VC atmsigd does not know.
fn restart(mode: Mode) {
    let Some(mut run) = Run::start("restart", mode, natm_sscop::Config::default()) else {
        return;
    };
    let mut results = Vec::new();
    for (i, what) in ["VC", "all", "unknown VC"].into_iter().enumerate() {
        let vcc = 0x4000 + i as u64;
        let mut vc = ConnId { vpci: 0, vci: 999 };
        if what != "unknown VC" {
            let mut c = KernelMsg::new(MsgType::Connect, vcc);
            c.svc = Some(NATM_ADDR);
            c.qos = Some(KQos::ubr(9188));
            if mode == Mode::Network {
                c.pvc = None;
            }
            run.sigd.kernel_send(&c);
            let call = match run.event(|e| matches!(e, CallEvent::Setup { .. })) {
                CallEvent::Setup { call, .. } => call,
                _ => unreachable!(),
            };
            let now = run.now();
            let mine = ConnId {
                vpci: 0,
                vci: 50 + i as u16,
            };
            match mode {
                Mode::User => run
                    .natm
                    .sig
                    .connect(now, call, Some(mine))
                    .expect("connect"),
                Mode::Network => run.natm.sig.connect(now, call, None).expect("connect"),
            }
            let conn = match run
                .event(|e| matches!(e, CallEvent::Connected { call: c, .. } if *c == call))
            {
                CallEvent::Connected { conn, .. } => conn,
                _ => unreachable!(),
            };
            let ok = run.kernel(MsgType::Okay);
            vc = conn
                .or_else(|| {
                    ok.pvc.map(|p: Pvc| ConnId {
                        vpci: p.vpi as u16,
                        vci: p.vci as u16,
                    })
                })
                .expect("a VC");
        }
        let r = match what {
            "all" => Restart::All,
            _ => Restart::Vc {
                vpci: vc.vpci,
                vci: vc.vci,
            },
        };
        let before = run.sigd_messages().len();
        let now = run.now();
        run.natm.sig.restart(now, r).expect("restart");
        if what == "unknown VC" {
            run.idle(Duration::from_millis(1500));
            let answer: Vec<Message> = run.sigd_messages().split_off(before);
            eprintln!(
                "  atmsigd answered: {}",
                answer
                    .iter()
                    .map(|m| m.to_string())
                    .collect::<Vec<_>>()
                    .join(" / ")
            );
            results.push(format!("{what}: {}", causes(&answer)));
        } else {
            run.event(|e| matches!(e, CallEvent::RestartDone { .. }));
            let closed = run.kernel(MsgType::Close);
            let released = run.event(|e| matches!(e, CallEvent::Released { .. }));
            eprintln!("  natm: {released:?}");
            results.push(format!(
                "{what}: RESTART ACK, atmsigd closed its call (reply {})",
                closed.reply
            ));
        }
    }
    report(
        "RESTART by natm",
        direction(mode),
        &results.join("; "),
        "see result",
    );
}

#[test]
fn user_restart() {
    restart(Mode::Network);
}

#[test]
fn network_restart() {
    restart(Mode::User);
}

/// Which side notices first that the signalling VC is dead.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Detects {
    /// natm (its Timer_NO_RESPONSE shortened to 2 s).
    Natm,
    /// atmsigd (its own Timer_NO_RESPONSE; natm's lengthened to 30 s).
    Atmsigd,
}

/// An active call, then the signalling VC goes dead both ways until one side's SSCOP gives
/// up (END) and re-establishes; then the VC comes back. Q.2931 §5.5.6.11: T309 runs, and
/// the call survives at both ends, checked with STATUS ENQUIRY.
fn saal_lost(mode: Mode, who: Detects) {
    let saal = match who {
        Detects::Natm => natm_sscop::Config {
            timer_keep_alive: natm_core::Duration::from_millis(500),
            timer_idle: natm_core::Duration::from_millis(500),
            timer_no_response: natm_core::Duration::from_secs(2),
            ..natm_sscop::Config::default()
        },
        Detects::Atmsigd => natm_sscop::Config {
            timer_no_response: natm_core::Duration::from_secs(30),
            ..natm_sscop::Config::default()
        },
    };
    let Some(mut run) = Run::start("saallost", mode, saal) else {
        return;
    };
    let mut c = KernelMsg::new(MsgType::Connect, 0x6666);
    c.svc = Some(NATM_ADDR);
    c.qos = Some(KQos::ubr(9188));
    run.sigd.kernel_send(&c);
    let call = match run.event(|e| matches!(e, CallEvent::Setup { .. })) {
        CallEvent::Setup { call, .. } => call,
        _ => unreachable!(),
    };
    let now = run.now();
    let vc = (mode == Mode::User).then_some(ConnId { vpci: 0, vci: 60 });
    run.natm.sig.connect(now, call, vc).expect("connect");
    run.event(|e| matches!(e, CallEvent::Connected { .. }));
    run.kernel(MsgType::Okay);

    let cut = run.now();
    run.sigd.set_filter(|_, _| true);
    let gave_up = |dir: Dir| {
        move |_: &mut Natm, s: &mut AtmSigd| {
            s.trace
                .iter()
                .any(|x| x.at > cut && x.dir == dir && pdu_type(&x.sdu) == Some(PduType::End))
        }
    };
    let ended = match who {
        Detects::Natm => run.sigd.pump(&mut run.natm, LIMIT, gave_up(Dir::ToSigd)),
        Detects::Atmsigd => run.sigd.pump(
            &mut run.natm,
            Duration::from_secs(12),
            gave_up(Dir::FromSigd),
        ),
    };
    assert!(ended, "{who:?} never gave up on the dead VC");
    run.idle(Duration::from_millis(300));
    run.sigd.clear_filter();
    let back = run.now();
    run.idle(Duration::from_secs(2));
    let after: Vec<String> = run
        .sigd
        .trace
        .iter()
        .filter(|s| s.at >= back)
        .filter_map(|s| q2931(&s.sdu).map(|m| format!("{:?}: {m}", s.dir)))
        .collect();
    let natm_state = run.natm.sig.uni().call_state(call);
    let closed = run
        .sigd
        .kernel_inbox()
        .iter()
        .any(|m| m.kind == MsgType::Close);
    let released = run.natm.take(&|e| matches!(e, CallEvent::Released { .. }));
    let status: Vec<Message> = run
        .sigd_messages()
        .into_iter()
        .filter(|m| m.header.msg_type == MsgType2931::Status)
        .collect();
    eprintln!(
        "  after the cut ({:.1} s): {after:#?}",
        secs(back) - secs(cut)
    );
    report(
        &format!("SAAL lost with a call active ({who:?} detects), then back within T309"),
        direction(mode),
        &format!(
            "natm call {} ({natm_state:?}); atmsigd {}; after: {}",
            if released.is_some() {
                "released"
            } else {
                "kept"
            },
            if closed {
                "closed its call"
            } else {
                "kept its call"
            },
            after.join(" / ")
        ),
        &causes(&status),
    );
    assert!(released.is_none(), "natm released the call: {released:?}");
    assert!(!closed, "atmsigd closed the call");
    assert!(run.natm.sig.uni().link_up());
}

#[test]
fn user_saal_lost_natm_detects() {
    saal_lost(Mode::Network, Detects::Natm);
}

#[test]
fn network_saal_lost_natm_detects() {
    saal_lost(Mode::User, Detects::Natm);
}

#[test]
fn user_saal_lost_atmsigd_detects() {
    saal_lost(Mode::Network, Detects::Atmsigd);
}

#[test]
fn network_saal_lost_atmsigd_detects() {
    saal_lost(Mode::User, Detects::Atmsigd);
}

// --- What atmsigd sends ---------------------------------------------------------------

/// Unanswered, atmsigd repeats its BGN every second (Timer_CC), in both modes.
#[test]
fn atmsigd_starts_with_bgn_in_both_modes() {
    struct Silent;
    impl SaalEndpoint for Silent {
        fn handle_pdu(&mut self, _: Instant, _: &[u8]) {}
        fn poll_transmit(&mut self) -> Option<Vec<u8>> {
            None
        }
        fn poll_timeout(&self) -> Option<Instant> {
            None
        }
        fn handle_timeout(&mut self, _: Instant) {}
    }
    for mode in [Mode::User, Mode::Network] {
        let Some(mut sigd) = AtmSigd::spawn_or_skip("bgn", &Options::new(mode, None)) else {
            return;
        };
        let ok = sigd.pump(&mut Silent, Duration::from_millis(2500), |_, s| {
            s.from_sigd().count() >= 2
        });
        let seen: Vec<&[u8]> = sigd.from_sigd().collect();
        assert!(ok, "{mode:?}: expected two BGNs, saw {seen:02x?}");
        assert_eq!(seen[0], vectors::BGN, "{mode:?}");
        assert_eq!(seen[1], vectors::BGN, "{mode:?}");
        let gap = sigd.trace[1].at.saturating_duration_since(sigd.trace[0].at);
        assert!(
            (900..1500).contains(&(gap.as_nanos() / 1_000_000)),
            "{mode:?}: BGN repeated after {gap:?}"
        );
    }
}

/// natm's codecs read every recorded atmsigd vector without a problem.
#[test]
fn recorded_vectors_decode() {
    for pdu in [
        &vectors::BGN[..],
        &vectors::BGN_UNI30[..],
        &vectors::END_MAXCC[..],
        &vectors::FIRST_POLL[..],
        &vectors::USTAT_LOST_0[..],
        &vectors::STAT_LOST_0[..],
        &vectors::STAT_NONE_MISSING[..],
    ] {
        let r = Repr::parse(pdu).unwrap_or_else(|e| panic!("{pdu:02x?}: {e:?}"));
        let mut out = vec![0; r.buffer_len()];
        r.emit(&mut out).expect("emit");
        assert_eq!(out, pdu, "{r}");
    }
    for (name, m) in vectors::Q2931 {
        let p = Message::parse(m).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert!(p.problems.is_empty(), "{name}: {:?}", p.problems);
        let again = p.message.to_vec();
        if name.starts_with("STATUS") {
            // atmsigd puts call state (0x14) before cause (0x08); natm emits Q.2931's order.
            assert_eq!(
                Message::parse(&again).map(|q| q.message),
                Ok(p.message),
                "{name}"
            );
        } else {
            assert_eq!(&again[..], *m, "{name} re-encodes byte for byte");
        }
    }
}

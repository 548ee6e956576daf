//! The host's UNI user side against a network-side `natm_sig::Signalling` (a switch port),
//! the cells moved by hand in virtual time: VC 0.5's SDUs through AAL5 both ways, the
//! calls' VCs looped back by the "switch".

use alloc::boxed::Box;
use alloc::vec::Vec;

use natm_adapter::{
    AdapterConfig, BufferId, Direction as AdDir, Reassembler, Reassembly, Status, VecBuffers,
};
use natm_core::addr::Aesa;
use natm_core::{Duration, HeaderFormat, Instant, Qos, VcId};
use natm_sig::{CallEvent, ConnId, PartyNumber, Restart, Role, SetupParams, Signalling};
use natm_wire::aal5::Segmenter;
use natm_wire::cell::{Cell as WireCell, CellHeader};

use super::*;

const BUFS: u32 = 16;
const SIZE: usize = 9216;

fn me() -> Aesa {
    let mut a = Aesa([0x47; 20]);
    a.0[19] = 0;
    a
}

fn far() -> Aesa {
    Aesa([0x39; 20])
}

fn qos(text: &str) -> Qos {
    text.parse().expect("a QoS")
}

fn conn(vci: u16) -> ConnId {
    ConnId { vpci: 0, vci }
}

fn vcid(vci: u16) -> VcId {
    VcId::uni(0, u32::from(vci)).expect("a VC")
}

/// A tiny seeded generator for the lossy runs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A host, a switch port's signalling entity, and the link between them.
struct Bench {
    host: Host<VecBuffers>,
    net: Signalling,
    now: Instant,
    /// Host → network reassembly of 0.5.
    rx: Reassembler,
    /// Drop each signalling SDU with probability 1/2.
    loss: Option<Rng>,
    /// Loop the cells of other VCs back to the host.
    loopback: bool,
    events: Vec<Event>,
    net_events: Vec<CallEvent>,
    dropped: u64,
}

impl Bench {
    fn new(link_rate: Option<u32>) -> Bench {
        let mut config = HostConfig::new("h", link_rate);
        config.signalling = Some(SignallingConfig::new(me()));
        let mut host = Host::new(config);
        host.link_up();
        let now = Instant::from_nanos(1_000_000);
        let net = Signalling::new(
            now,
            natm_sig::Config::new(Role::Network),
            natm_sscop::Config::default(),
        );
        let mut b = Bench {
            host,
            net,
            now,
            rx: Reassembler::new(SIGNALLING_VC, 8192).expect("0.5"),
            loss: None,
            loopback: true,
            events: Vec::new(),
            net_events: Vec::new(),
            dropped: 0,
        };
        b.run(Duration::from_millis(10));
        b
    }

    fn lose(&mut self) -> bool {
        let lost = self.loss.as_mut().is_some_and(|r| r.next() % 2 == 0);
        self.dropped += u64::from(lost);
        lost
    }

    /// One exchange both ways; whether anything moved.
    fn step(&mut self) -> bool {
        let now = self.now;
        let mut moved = false;
        let mut back: Vec<CellBytes> = Vec::new();
        while let Some(cells) = self.host.poll_transmit(now) {
            let cells: Vec<CellBytes> = cells.to_vec();
            self.host.transmitted(cells.len());
            moved = true;
            for cell in cells {
                let h = CellHeader::parse_unverified(
                    &WireCell::new_unchecked(&cell[..]),
                    HeaderFormat::Uni,
                );
                if h.vc == SIGNALLING_VC {
                    if let Reassembly::Complete(_) = self.rx.push_cell(&cell) {
                        let sdu = self.rx.sdu().to_vec();
                        if !self.lose() {
                            self.net.handle_pdu(now, &sdu);
                        }
                    }
                } else if self.loopback {
                    back.push(cell);
                }
            }
        }
        while let Some(sdu) = self.net.poll_transmit() {
            moved = true;
            if self.lose() {
                continue;
            }
            let mut seg = Segmenter::uni(SIGNALLING_VC, &sdu).expect("an SDU");
            let mut cell = [0u8; 53];
            while seg.next_cell(&mut cell) {
                back.push(cell);
            }
        }
        let mut at = 0;
        while at < back.len() {
            at += self.host.handle_cells(now, &mut back[at..]);
        }
        while let Some(e) = self.net.poll_event() {
            moved = true;
            self.net_events.push(e);
        }
        while let Some(e) = self.host.poll_event() {
            moved = true;
            self.events.push(e);
        }
        moved
    }

    fn settle(&mut self) {
        for _ in 0..1000 {
            if !self.step() {
                return;
            }
        }
        panic!("the link never went quiet");
    }

    /// Runs `d` of virtual time, timers included.
    fn run(&mut self, d: Duration) {
        let end = self.now.checked_add(d).expect("no overflow");
        loop {
            self.settle();
            let next = [self.host.poll_timeout(), self.net.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            match next {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    self.host.handle_timeout(self.now);
                    self.net.handle_timeout(self.now);
                }
                _ => break,
            }
        }
        self.now = end;
        self.host.handle_timeout(self.now);
        self.net.handle_timeout(self.now);
        self.settle();
    }

    fn take_events(&mut self) -> Vec<Event> {
        core::mem::take(&mut self.events)
    }

    /// The SETUP the network saw last.
    fn net_setup(&mut self) -> Option<(natm_sig::CallId, Box<natm_sig::IncomingSetup>)> {
        let i = self
            .net_events
            .iter()
            .rposition(|e| matches!(e, CallEvent::Setup { .. }))?;
        match self.net_events.remove(i) {
            CallEvent::Setup { call, setup } => Some((call, setup)),
            _ => unreachable!(),
        }
    }

    fn net_released(&mut self) -> Vec<(natm_sig::CallId, Cause)> {
        let mut out = Vec::new();
        self.net_events.retain(|e| match e {
            CallEvent::Released { call, cause, .. } => {
                out.push((*call, cause.clone()));
                false
            }
            _ => true,
        });
        out
    }

    fn channel(&mut self) -> ChannelId {
        let ch = self
            .host
            .open_channel(AdapterConfig::new(BUFS, SIZE), VecBuffers::new(BUFS, SIZE))
            .expect("a channel");
        let (adapter, _) = self.host.channel_mut(ch).expect("open");
        for b in 0..BUFS / 2 {
            adapter.post_rx_buffer(BufferId(b));
        }
        ch
    }

    fn send(&mut self, ch: ChannelId, handle: VcHandle, buf: u32, sdu: &[u8]) {
        let now = self.now;
        let (adapter, mem) = self.host.channel_mut(ch).expect("open");
        mem.buffer_mut(BufferId(buf)).expect("a buffer")[..sdu.len()].copy_from_slice(sdu);
        adapter.post_tx(now, BufferId(buf), sdu.len(), handle.0);
    }

    fn received(&mut self, ch: ChannelId) -> Vec<Vec<u8>> {
        let (adapter, mem) = self.host.channel_mut(ch).expect("open");
        let mut got = Vec::new();
        while let Some(c) = adapter.poll_completion() {
            if c.direction == AdDir::Rx && c.status == Status::Ok {
                got.push(mem.buffer(c.buffer).expect("a buffer")[..c.len].to_vec());
                adapter.post_rx_buffer(c.buffer);
            }
        }
        got
    }

    /// An outgoing call the network connects on `vci`.
    fn connected_call(&mut self, q: &str, vci: u16) -> CallId {
        let call = self
            .host
            .call(self.now, &CallParams::new(far(), qos(q)))
            .expect("admitted");
        self.settle();
        let (ncall, setup) = self.net_setup().expect("the network saw SETUP");
        assert_eq!(
            setup.params.calling,
            Some(PartyNumber::aesa(me())),
            "the host's address calls"
        );
        self.net
            .connect(self.now, ncall, Some(conn(vci)))
            .expect("connect");
        self.run(Duration::from_millis(5));
        let events = self.take_events();
        assert!(
            events.contains(&Event::CallConnected {
                call,
                vc: vcid(vci)
            }),
            "{events:?}"
        );
        call
    }

    /// An incoming call from the network on `vci`.
    fn offer(&mut self, q: &str, vci: u16) -> (natm_sig::CallId, Box<IncomingCall>) {
        let params = SetupParams {
            called: PartyNumber::aesa(me()),
            called_sub: None,
            calling: Some(PartyNumber::aesa(far())),
            calling_sub: None,
            qos: qos(q),
            blli: None,
            bhli: None,
            conn: Some(conn(vci)),
        };
        let ncall = self.net.setup(self.now, &params).expect("setup");
        self.run(Duration::from_millis(5));
        let offered = self
            .take_events()
            .into_iter()
            .find_map(|e| match e {
                Event::IncomingCall(i) => Some(i),
                _ => None,
            })
            .expect("the host was offered the call");
        (ncall, offered)
    }
}

fn released(events: &[Event], call: CallId) -> Option<Cause> {
    events.iter().find_map(|e| match e {
        Event::CallReleased { call: c, cause, .. } if *c == call => Some(cause.clone()),
        _ => None,
    })
}

#[test]
fn signalling_comes_up_with_the_link() {
    let mut b = Bench::new(None);
    assert!(b.host.is_signalling_up());
    assert!(b.net.uni().link_up());
    assert!(b.take_events().contains(&Event::SignallingUp));
    assert_eq!(b.host.address(), Some(me()));
}

#[test]
fn an_outgoing_call_connects_carries_data_and_is_released_by_the_host() {
    let mut b = Bench::new(None);
    let call = b.connected_call("aal5,cbr:pcr=10000,max_sdu=9180", 40);
    assert_eq!(b.host.cac().reserved_cbr(), 10_000, "booked at call time");
    let ch = b.channel();
    let h = b.host.open_call_vc(call, ch).expect("the VC opens");
    assert_eq!(b.host.vc(h).and_then(VcInfo::call), Some(call));
    assert_eq!(b.host.cac().reserved_cbr(), 10_000, "booked once");
    b.send(ch, h, BUFS - 1, b"hello over a switched VC");
    b.run(Duration::from_millis(20));
    assert_eq!(b.received(ch), [b"hello over a switched VC".to_vec()]);

    let info = b.host.call_info(call).expect("the call");
    assert_eq!(info.phase, CallPhase::Connected);
    assert_eq!(info.remote, Some(far()));
    b.host
        .release(b.now, call, user_cause(CauseValue::NormalCallClearing, b""))
        .expect("release");
    assert!(b.host.vc(h).is_none(), "the VC closed at once");
    assert_eq!(b.host.cac().reserved_cbr(), 0);
    b.run(Duration::from_millis(5));
    let events = b.take_events();
    assert_eq!(
        released(&events, call).map(|c| c.value),
        Some(CauseValue::NormalCallClearing)
    );
    assert_eq!(b.net_released().len(), 1);
    assert_eq!(b.host.calls().count(), 0);
    assert_eq!(b.host.cac().reserved_cbr(), 0, "returned once");
}

#[test]
fn a_release_from_the_network_closes_the_vc_and_returns_the_bandwidth() {
    let mut b = Bench::new(None);
    let call = b.connected_call("cbr:pcr=5000", 41);
    let ch = b.channel();
    let h = b.host.open_call_vc(call, ch).expect("opens");
    let (ncall, _) = b.net.uni().calls().next().expect("the network's call");
    let mut cause = Cause::new(Location::PrivateLocal, CauseValue::NormalCallClearing);
    cause.diagnostics = b"far end".to_vec();
    b.net.release(b.now, ncall, cause.clone()).expect("release");
    b.run(Duration::from_millis(5));
    let events = b.take_events();
    assert_eq!(released(&events, call), Some(cause));
    assert!(b.host.vc(h).is_none());
    assert_eq!(b.host.cac().reserved_cbr(), 0);
    assert_eq!(b.host.calls().count(), 0);
    // Closing the channel afterwards finds nothing more to return.
    b.host.close_channel(ch);
    assert_eq!(b.host.cac().reserved_cbr(), 0);
}

#[test]
fn a_call_refused_by_the_network_is_released_with_its_cause_and_its_booking_returned() {
    let mut b = Bench::new(None);
    let call = b
        .host
        .call(b.now, &CallParams::new(far(), qos("cbr:pcr=20000")))
        .expect("admitted here");
    b.settle();
    let (ncall, _) = b.net_setup().expect("SETUP");
    let mut cause = Cause::new(Location::PrivateLocal, CauseValue::NoRouteToDestination);
    cause.diagnostics = b"s1: no route".to_vec();
    b.net.release(b.now, ncall, cause.clone()).expect("refuse");
    b.run(Duration::from_millis(5));
    assert_eq!(released(&b.take_events(), call), Some(cause));
    assert_eq!(b.host.cac().reserved_cbr(), 0);
}

#[test]
fn closing_a_call_vc_first_returns_the_bandwidth_once() {
    let mut b = Bench::new(None);
    let call = b.connected_call("cbr:pcr=5000", 42);
    let ch = b.channel();
    b.host.open_call_vc(call, ch).expect("opens");
    b.host.close_channel(ch);
    assert_eq!(b.host.cac().reserved_cbr(), 0);
    assert!(
        b.host.call_info(call).is_some(),
        "the call stays until released"
    );
    b.host
        .release(b.now, call, user_cause(CauseValue::NormalCallClearing, b""))
        .expect("release");
    b.run(Duration::from_millis(5));
    assert!(released(&b.take_events(), call).is_some());
    assert_eq!(b.host.cac().reserved_cbr(), 0);
}

#[test]
fn a_qos_the_link_cannot_fit_is_refused_here_with_37_and_nothing_is_sent() {
    let mut b = Bench::new(Some(10_000));
    let ch = b.channel();
    b.host
        .open_vc(ch, vcid(100), &qos("cbr:pcr=8000"))
        .expect("a PVC");
    let err = b
        .host
        .call(b.now, &CallParams::new(far(), qos("cbr:pcr=5000")))
        .expect_err("refused");
    let CallError::Refused { cause, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(cause.value, CauseValue::UserCellRateNotAvailable);
    assert_eq!(cause.location, Location::User);
    assert_eq!(cause.diagnostics, b"h:link: 2000 c/s free");
    assert!(
        err.to_string().contains("5000 cells/s refused on h:link"),
        "{err}"
    );
    b.settle();
    assert!(b.net_setup().is_none(), "nothing was sent");
    assert_eq!(b.host.calls().count(), 0);
}

#[test]
fn an_incoming_call_is_offered_in_the_host_view_and_accepted() {
    let mut b = Bench::new(None);
    let (ncall, offered) = b.offer("aal5,cbr:pcr=3000,max_sdu=4000", 50);
    assert_eq!(offered.calling, Some(far()));
    assert_eq!(offered.called, me());
    assert_eq!(offered.vc, vcid(50));
    let theirs = qos("aal5,cbr:pcr=3000,max_sdu=4000");
    assert_eq!(offered.qos.rx, theirs.tx, "the caller's tx is our rx");
    let call = offered.call;
    b.host.accept(b.now, call).expect("accept");
    let ch = b.channel();
    let h = b.host.open_call_vc(call, ch).expect("opens after accept");
    b.run(Duration::from_millis(5));
    let events = b.take_events();
    assert!(
        events.contains(&Event::CallConnected { call, vc: vcid(50) }),
        "{events:?}"
    );
    assert!(b.net_events.iter().any(|e| *e
        == CallEvent::Connected {
            call: ncall,
            conn: Some(conn(50))
        }));
    b.send(ch, h, BUFS - 1, b"answer");
    b.run(Duration::from_millis(5));
    assert_eq!(b.received(ch), [b"answer".to_vec()]);
    b.net
        .release(
            b.now,
            ncall,
            Cause::new(Location::PrivateLocal, CauseValue::NormalCallClearing),
        )
        .expect("release");
    b.run(Duration::from_millis(5));
    assert!(released(&b.take_events(), call).is_some());
    assert!(b.host.vc(h).is_none());
}

#[test]
fn an_incoming_call_rejected_reaches_the_network_with_the_cause() {
    let mut b = Bench::new(None);
    let (ncall, offered) = b.offer("ubr", 51);
    b.host
        .reject(
            b.now,
            offered.call,
            user_cause(CauseValue::UserBusy, b"busy"),
        )
        .expect("reject");
    b.run(Duration::from_millis(5));
    let net = b.net_released();
    assert_eq!(net.len(), 1);
    assert_eq!(net[0].0, ncall);
    assert_eq!(net[0].1.value, CauseValue::UserBusy);
    assert_eq!(net[0].1.diagnostics, b"busy");
    assert!(released(&b.take_events(), offered.call).is_some());
    assert_eq!(b.host.calls().count(), 0);
}

#[test]
fn an_unanswered_incoming_call_is_released_with_18() {
    let mut b = Bench::new(None);
    let (_, offered) = b.offer("ubr", 52);
    b.run(Duration::from_secs(5));
    let net = b.net_released();
    assert_eq!(net.len(), 1);
    assert_eq!(net[0].1.value, CauseValue::NoUserResponding);
    assert!(released(&b.take_events(), offered.call).is_some());
}

#[test]
fn a_setup_to_another_address_or_an_open_vc_is_refused() {
    let mut b = Bench::new(None);
    let mut params = SetupParams {
        called: PartyNumber::aesa(far()),
        called_sub: None,
        calling: None,
        calling_sub: None,
        qos: qos("ubr"),
        blli: None,
        bhli: None,
        conn: Some(conn(60)),
    };
    b.net.setup(b.now, &params).expect("setup");
    b.run(Duration::from_millis(5));
    let net = b.net_released();
    assert_eq!(net[0].1.value, CauseValue::UnallocatedNumber);
    // A PVC holds 0.61.
    let ch = b.channel();
    b.host.open_vc(ch, vcid(61), &qos("ubr")).expect("a PVC");
    params.called = PartyNumber::aesa(me());
    params.conn = Some(conn(61));
    b.net.setup(b.now, &params).expect("setup");
    b.run(Duration::from_millis(5));
    let net = b.net_released();
    assert_eq!(net[0].1.value, CauseValue::VpciVciNotAvailable);
    assert!(
        !b.take_events()
            .iter()
            .any(|e| matches!(e, Event::IncomingCall(_)))
    );
}

#[test]
fn link_down_clears_every_call_at_once_and_signalling_comes_back_on_link_up() {
    let mut b = Bench::new(None);
    let out = b.connected_call("cbr:pcr=1000", 40);
    let ch = b.channel();
    b.host.open_call_vc(out, ch).expect("opens");
    let (_, offered) = b.offer("cbr:pcr=2000", 41);
    b.host.accept(b.now, offered.call).expect("accept");
    let pvc = b
        .host
        .open_vc(ch, vcid(100), &qos("cbr:pcr=500"))
        .expect("a PVC");
    b.run(Duration::from_millis(5));
    b.take_events();
    assert_eq!(b.host.cac().reserved_cbr(), 3500);

    b.host.link_down();
    let events = b.take_events_now();
    for call in [out, offered.call] {
        let cause = released(&events, call).expect("released at once");
        assert_eq!(cause.value, CauseValue::DestinationOutOfOrder);
        assert_eq!(cause.location, Location::User);
    }
    assert!(events.contains(&Event::SignallingDown));
    assert_eq!(b.host.calls().count(), 0);
    assert!(b.host.vc(pvc).is_some(), "PVCs stay");
    assert_eq!(b.host.cac().reserved_cbr(), 500);
    assert!(matches!(
        b.host.call(b.now, &CallParams::new(far(), qos("ubr"))),
        Err(CallError::LinkDown)
    ));

    // The switch's side sees its SAAL go and comes back fresh too.
    b.net = Signalling::new(
        b.now,
        natm_sig::Config::new(Role::Network),
        natm_sscop::Config::default(),
    );
    b.rx = Reassembler::new(SIGNALLING_VC, 8192).expect("0.5");
    b.host.link_up();
    b.run(Duration::from_millis(10));
    assert!(b.take_events().contains(&Event::SignallingUp));
    assert!(b.host.is_signalling_up());
    b.connected_call("ubr", 42);
}

#[test]
fn a_restart_from_the_network_clears_the_calls_and_is_acknowledged() {
    let mut b = Bench::new(None);
    let call = b.connected_call("cbr:pcr=1000", 40);
    b.net.restart(b.now, Restart::All).expect("restart");
    b.run(Duration::from_millis(5));
    assert!(released(&b.take_events(), call).is_some());
    assert!(
        b.net_events
            .iter()
            .any(|e| matches!(e, CallEvent::RestartDone { what: Restart::All })),
        "{:?}",
        b.net_events
    );
    assert_eq!(b.host.cac().reserved_cbr(), 0);
}

#[test]
fn a_lossy_signalling_link_ends_every_call_connected_or_released_and_leaks_nothing() {
    for seed in [1u64, 7, 42, 1234] {
        let mut b = Bench::new(None);
        b.loss = Some(Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1));
        let mut calls = Vec::new();
        for i in 0..4u16 {
            if let Ok(c) = b
                .host
                .call(b.now, &CallParams::new(far(), qos("cbr:pcr=1000")))
            {
                calls.push(c);
            }
            b.run(Duration::from_millis(200));
            while let Some((ncall, _)) = b.net_setup() {
                let _ = b.net.connect(b.now, ncall, Some(conn(40 + i)));
            }
        }
        b.run(Duration::from_secs(60));
        let events = b.take_events();
        for c in &calls {
            let connected = events
                .iter()
                .any(|e| matches!(e, Event::CallConnected { call, .. } if call == c));
            let gone = released(&events, *c).is_some();
            assert!(
                connected || gone,
                "seed {seed}: {c} neither connected nor released"
            );
            if !gone {
                b.host
                    .release(b.now, *c, user_cause(CauseValue::NormalCallClearing, b""))
                    .expect("release");
            }
        }
        b.run(Duration::from_secs(120));
        assert_eq!(b.host.calls().count(), 0, "seed {seed}");
        assert_eq!(b.host.cac().reserved_cbr(), 0, "seed {seed}");
        assert!(b.dropped > 0, "seed {seed}: the link lost nothing");
    }
}

impl Bench {
    /// The host's events now, without moving anything.
    fn take_events_now(&mut self) -> Vec<Event> {
        while let Some(e) = self.host.poll_event() {
            self.events.push(e);
        }
        self.take_events()
    }
}

#[test]
fn calls_share_one_channel_as_the_simulator_uses_them() {
    let mut b = Bench::new(None);
    let ch = b.channel();
    let one = b.connected_call("cbr:pcr=1000", 40);
    let two = b.connected_call("cbr:pcr=2000", 41);
    let h1 = b.host.open_call_vc(one, ch).expect("opens");
    let h2 = b
        .host
        .open_call_vc(two, ch)
        .expect("opens on the same channel");
    assert!(matches!(
        b.host.open_call_vc(one, ch),
        Err(CallError::WrongPhase(..))
    ));
    b.send(ch, h1, BUFS - 1, b"one");
    b.send(ch, h2, BUFS - 2, b"two");
    b.run(Duration::from_millis(10));
    let mut got = b.received(ch);
    got.sort();
    assert_eq!(got, [b"one".to_vec(), b"two".to_vec()]);
    b.host
        .release(b.now, one, user_cause(CauseValue::NormalCallClearing, b""))
        .expect("release");
    b.run(Duration::from_millis(5));
    assert!(b.host.vc(h1).is_none());
    assert!(b.host.vc(h2).is_some(), "the other call's VC stays");
    assert_eq!(b.host.cac().reserved_cbr(), 2000);
}

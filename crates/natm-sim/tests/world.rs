//! The world's builder and event loop on a small network: h1 — s1 — h2.

use std::cell::RefCell;
use std::rc::Rc;

use natm_core::{Duration, Instant, Qos, VcId};
use natm_sim::{
    Action, App, AppIo, End, HostConfig, HostCosts, LinkConfig, SimError, VcOptions, World,
};
use natm_switch::{CrossConnect, PortConfig, PortId, SwitchConfig, Upc};

/// Sends `count` SDUs of `len` bytes, one every `gap`, and records what it receives.
struct Pinger {
    vc: VcId,
    count: u32,
    len: usize,
    gap: Duration,
    sent: u32,
    got: Got,
}

impl App for Pinger {
    fn start(&mut self, now: Instant, io: &mut AppIo) {
        if self.count > 0 {
            io.timer(now, 0);
        }
    }
    fn on_sdu(&mut self, now: Instant, _vc: VcId, sdu: &[u8], _io: &mut AppIo) {
        self.got.borrow_mut().push((now, sdu.to_vec()));
    }
    fn on_timer(&mut self, now: Instant, _token: u64, io: &mut AppIo) {
        let n = self.sent;
        io.send_with(self.vc, self.len, |b| b.fill(n as u8));
        self.sent += 1;
        if self.sent < self.count {
            io.timer_after(now, self.gap, 0);
        }
    }
}

type Got = Rc<RefCell<Vec<(Instant, Vec<u8>)>>>;

/// h1 — s1 — h2 (ports 1 and 2, both with `port`, OC-3c links) running `apps`, and VC 0.100
/// between them under `qos`, policed with `upc`, h1 shaping at `greedy` times its contract.
/// Not started. Returns s1, h1 and h1's link.
fn h1_s1_h2(
    w: &mut World,
    hc: HostConfig,
    apps: [Box<dyn App>; 2],
    port: PortConfig,
    (qos, upc, greedy): (&str, Upc, f64),
) -> (natm_sim::SwitchId, natm_sim::HostId, natm_sim::LinkId) {
    let vc = VcId::uni(0, 100).unwrap();
    let s1 = w.add_switch("s1", SwitchConfig::default());
    let [a, b] = apps;
    let h1 = w.add_host("h1", hc, a).unwrap();
    let h2 = w.add_host("h2", hc, b).unwrap();
    let l1 = w
        .add_link(
            End::Host(h1),
            End::Port(s1, PortId(1), port),
            LinkConfig::default(),
        )
        .unwrap();
    w.add_link(
        End::Host(h2),
        End::Port(s1, PortId(2), port),
        LinkConfig::default(),
    )
    .unwrap();
    let qos: Qos = qos.parse().unwrap();
    let mut xc = CrossConnect::new("1:0.100".parse().unwrap(), "2:0.100".parse().unwrap(), qos);
    xc.upc = upc;
    w.connect(s1, &xc).unwrap();
    w.open_vc_with(h1, vc, &qos, VcOptions { greedy }).unwrap();
    w.open_vc(h2, vc, &qos).unwrap();
    (s1, h1, l1)
}

/// A port with a 1 ms CDVT (cells shaped exactly to a PCR still bunch in batches).
fn cdvt_1ms() -> PortConfig {
    PortConfig {
        cdvt: Duration::from_millis(1),
        ..PortConfig::default()
    }
}

fn net(seed: u64, costs: HostCosts, count: u32) -> (World, Got, natm_sim::LinkId) {
    let vc = VcId::uni(0, 100).unwrap();
    let got: Got = Rc::default();
    let mut w = World::new(seed);
    let mut hc = HostConfig::new(64, 2048);
    hc.costs = costs;
    let sender = Pinger {
        vc,
        count,
        len: 1000,
        gap: Duration::from_micros(100),
        sent: 0,
        got: Rc::default(),
    };
    let receiver = Pinger {
        vc,
        count: 0,
        len: 0,
        gap: Duration::ZERO,
        sent: 0,
        got: got.clone(),
    };
    let (_, _, l1) = h1_s1_h2(
        &mut w,
        hc,
        [Box::new(sender), Box::new(receiver)],
        cdvt_1ms(),
        ("ubr", Upc::Off, 1.0),
    );
    w.start();
    (w, got, l1)
}

#[test]
fn sdus_cross_a_switch_in_order_at_line_rate_and_the_cpu_costs_show() {
    let (mut w, got, _) = net(1, HostCosts::FREE, 10);
    w.run_until(Instant::from_nanos(10_000_000)).unwrap();
    let got = got.borrow();
    assert_eq!(got.len(), 10);
    for (i, (_, b)) in got.iter().enumerate() {
        assert_eq!(b.len(), 1000);
        assert!(b.iter().all(|&x| x == i as u8));
    }
    // 1000 bytes are 21 cells at 2.83 µs each on OC-3c; the switch forwards each cell as it
    // comes, so the last cell is out of the second link one cell time after the first.
    let first = got[0].0.as_nanos();
    assert!((22 * 2831..22 * 2831 + 2000).contains(&first), "{first}");
    let s = w.stats();
    assert_eq!((s.sdus_sent, s.sdus_delivered), (10, 10));
    // Four cell events per cell and hop (adapter out, link, switch in, link, adapter in).
    assert_eq!(s.cell_events, 10 * 21 * 5);
    drop(got);

    let costs = HostCosts {
        recv_fixed: Duration::from_micros(50),
        ..HostCosts::FREE
    };
    let (mut w2, got2, _) = net(1, costs, 10);
    w2.run_until(Instant::from_nanos(10_000_000)).unwrap();
    assert_eq!(got2.borrow()[0].0.as_nanos(), first + 50_000);
    assert!(w2.busy().is_none());
}

#[test]
fn a_link_down_drops_cells_and_up_again_delivers() {
    let (mut w, got, l1) = net(2, HostCosts::FREE, 100);
    w.schedule(Instant::from_nanos(1_000_000), Action::LinkUp(l1, false));
    w.schedule(Instant::from_nanos(3_000_000), Action::LinkUp(l1, true));
    w.run_until(Instant::from_nanos(20_000_000)).unwrap();
    let n = got.borrow().len();
    assert!((70..=85).contains(&n), "{n} of 100 delivered");
    assert!(w.stats().dropped_link_down > 0);
    assert!(w.busy().is_none());
    w.audit_all().unwrap();
}

#[test]
fn builder_refusals_name_the_problem() {
    let mut w = World::new(0);
    let s1 = w.add_switch("s1", SwitchConfig::default());
    let h1 = w
        .add_host("h1", HostConfig::default(), Box::new(NoApp))
        .unwrap();
    let vc = VcId::uni(0, 100).unwrap();
    let e = w.open_vc(h1, vc, &"ubr".parse().unwrap()).unwrap_err();
    assert_eq!(e, SimError::NoLink("h1".into()));
    w.add_link(
        End::Host(h1),
        End::Port(s1, PortId(1), PortConfig::default()),
        LinkConfig::default(),
    )
    .unwrap();
    let e = w
        .add_link(
            End::Host(h1),
            End::Port(s1, PortId(2), PortConfig::default()),
            LinkConfig::default(),
        )
        .unwrap_err();
    assert_eq!(e.to_string(), "host h1 has a link already");
    let e = w
        .open_vc(h1, vc, &"cbr:pcr=400000".parse().unwrap())
        .unwrap_err();
    assert!(e.to_string().starts_with("host h1: "), "{e}");
    let xc = CrossConnect::new(
        "1:0.100".parse().unwrap(),
        "9:0.100".parse().unwrap(),
        "ubr".parse().unwrap(),
    );
    let e = w.connect(s1, &xc).unwrap_err();
    assert!(e.to_string().contains("s1"), "{e}");
}

struct NoApp;
impl App for NoApp {
    fn start(&mut self, _: Instant, _: &mut AppIo) {}
    fn on_sdu(&mut self, _: Instant, _: VcId, _: &[u8], _: &mut AppIo) {}
    fn on_timer(&mut self, _: Instant, _: u64, _: &mut AppIo) {}
}

/// Sends a burst of `n` SDUs at start and counts what `on_sent` says.
struct Burst {
    vc: VcId,
    n: usize,
    sent: Rc<RefCell<(u32, u32, u32)>>,
}

impl App for Burst {
    fn start(&mut self, _: Instant, io: &mut AppIo) {
        self.sent.borrow_mut().2 += 1;
        for _ in 0..self.n {
            io.send(self.vc, &[7u8; 9000]);
        }
    }
    fn on_sdu(&mut self, _: Instant, _: VcId, _: &[u8], _: &mut AppIo) {}
    fn on_timer(&mut self, _: Instant, _: u64, _: &mut AppIo) {}
    fn on_sent(&mut self, _: Instant, _: VcId, _: usize, ok: bool, _: &mut AppIo) {
        let mut s = self.sent.borrow_mut();
        if ok {
            s.0 += 1;
        } else {
            s.1 += 1;
        }
    }
}

#[test]
fn sends_lost_to_a_crash_or_a_close_are_told_to_the_app_and_no_buffer_leaks() {
    let vc = VcId::uni(0, 100).unwrap();
    for close in [false, true] {
        let sent = Rc::new(RefCell::new((0, 0, 0)));
        let mut w = World::new(3);
        let app = Burst {
            vc,
            n: 20,
            sent: sent.clone(),
        };
        let (_, h1, _) = h1_s1_h2(
            &mut w,
            HostConfig::new(64, 9216),
            [Box::new(app), Box::new(NoApp)],
            PortConfig::default(),
            ("ubr", Upc::Off, 1.0),
        );
        w.start();
        // 20 SDUs of 188 cells take 10.6 ms on OC-3c: act after 2 ms.
        let t = Instant::from_nanos(2_000_000);
        if close {
            w.schedule(t, Action::CloseVc(h1, vc));
        } else {
            w.schedule(t, Action::CrashHost(h1));
            w.schedule(Instant::from_nanos(3_000_000), Action::RestartHost(h1));
        }
        w.run_until(Instant::from_nanos(60_000_000)).unwrap();
        w.audit_all().unwrap();
        let (ok, failed, starts) = *sent.borrow();
        if close {
            assert_eq!((ok + failed, starts), (20, 1), "ok {ok} failed {failed}");
            assert!(failed > 10 && ok >= 1, "ok {ok} failed {failed}");
        } else {
            // Started again after the restart, sending 20 more.
            assert_eq!(starts, 2);
            assert_eq!(ok + failed, 40, "ok {ok} failed {failed}");
            assert!(failed > 10, "ok {ok} failed {failed}");
        }
        assert!(w.busy().is_none());
    }
}

/// A source shaped at twice its CBR contract: the switch tags the excess, and the
/// policing checks (the bound on untagged cells, conforming traffic never policed) hold.
#[test]
fn a_greedy_source_is_policed_and_the_policing_checks_hold() {
    let vc = VcId::uni(0, 100).unwrap();
    for (upc, greedy) in [(Upc::Tag, 2.0), (Upc::Discard, 3.0), (Upc::Tag, 1.0)] {
        let mut w = World::new(4);
        let sender = Pinger {
            vc,
            count: 400,
            len: 480,
            // 11 cells per SDU: 110,000 cells/s, or 36,667 within the 50,000 contract.
            gap: Duration::from_micros(if greedy > 1.0 { 100 } else { 300 }),
            sent: 0,
            got: Rc::default(),
        };
        let got: Got = Rc::default();
        let receiver = Pinger {
            vc,
            count: 0,
            len: 0,
            gap: Duration::ZERO,
            sent: 0,
            got: got.clone(),
        };
        let (s1, _, _) = h1_s1_h2(
            &mut w,
            HostConfig::new(512, 2048),
            [Box::new(sender), Box::new(receiver)],
            cdvt_1ms(),
            ("cbr:pcr=50000", upc, greedy),
        );
        w.start();
        w.run_until(Instant::from_nanos(150_000_000))
            .unwrap_or_else(|v| panic!("{upc} ×{greedy}: {v}"));
        let c = w.switch(s1).port_counters(PortId(1)).unwrap();
        if greedy > 1.0 {
            assert!(c.tagged + c.policed > 100, "{upc} ×{greedy}: {c:?}");
        } else {
            // Within contract: nothing policed, every SDU through.
            assert_eq!((c.tagged, c.policed), (0, 0), "{c:?}");
            assert_eq!(got.borrow().len(), 400);
        }
    }
}

#[test]
fn a_port_down_for_seconds_sends_ais_each_second_and_every_cell_leaves() {
    // The switch's timeouts poll only its due ports; a down input port's AIS is a timeout
    // that queues cells on another port, which must go out too, as when all are polled.
    let run = |poll_all: bool| {
        let (mut w, got, l1) = net(3, HostCosts::FREE, 5);
        w.set_poll_all_ports(poll_all);
        w.schedule(Instant::from_nanos(1_000_000), Action::LinkUp(l1, false));
        w.schedule(Instant::from_nanos(2_500_000_000), Action::LinkUp(l1, true));
        w.run_until(Instant::from_nanos(2_600_000_000)).unwrap();
        let out = w
            .switch(natm_sim::SwitchId(0))
            .port_counters(PortId(2))
            .unwrap();
        // At 1 ms, 1.001 s and 2.001 s, on the one connection from port 1.
        assert_eq!(out.ais_sent, 3);
        assert_eq!(out.queued(), 0);
        assert!(w.busy().is_none(), "{:?}", w.busy());
        w.audit_all().unwrap();
        assert_eq!(got.borrow().len(), 5);
        (w.stats(), out)
    };
    assert_eq!(run(false), run(true));
}

#[test]
fn connect_all_makes_every_cross_connect_and_stops_at_a_refusal() {
    let mut w = World::new(1);
    let s1 = w.add_switch("s1", SwitchConfig::default());
    let port = PortConfig::default();
    for p in 1..=2 {
        let h = w
            .add_host(&format!("h{p}"), HostConfig::new(8, 2048), Box::new(Idle))
            .unwrap();
        w.add_link(
            End::Host(h),
            End::Port(s1, PortId(p), port),
            LinkConfig::default(),
        )
        .unwrap();
    }
    let xc = |vci: u16, qos: &str| {
        CrossConnect::new(
            format!("1:0.{vci}").parse().unwrap(),
            format!("2:0.{vci}").parse().unwrap(),
            qos.parse().unwrap(),
        )
    };
    let ids = w
        .connect_all(s1, &[xc(100, "ubr"), xc(101, "cbr:pcr=1000")])
        .unwrap();
    assert_eq!(ids.len(), 2);
    assert_eq!(w.switch(s1).connection_count(), 2);
    // The second asks more than the link has: refused by index, the first stays made.
    let err = w
        .connect_all(
            s1,
            &[xc(102, "ubr"), xc(103, "cbr:pcr=900000000"), xc(104, "ubr")],
        )
        .unwrap_err();
    assert_eq!(err.0, 1, "{}", err.1);
    assert_eq!(w.switch(s1).connection_count(), 3);
    w.start();
    w.run_until(Instant::from_nanos(1_000_000)).unwrap();
}

/// An application that does nothing.
struct Idle;

impl App for Idle {
    fn start(&mut self, _now: Instant, _io: &mut AppIo) {}
    fn on_sdu(&mut self, _now: Instant, _vc: VcId, _sdu: &[u8], _io: &mut AppIo) {}
    fn on_timer(&mut self, _now: Instant, _token: u64, _io: &mut AppIo) {}
}

/// Issue 21: a simulated host is the host core hostd runs, so it answers OAM: an
/// end-to-end loopback from h1 is answered by h2 (two OC-3c hops each way), a segment one
/// by the switch, and one on a VC the switch does not carry times out.
#[test]
fn simulated_hosts_answer_loopbacks_and_time_their_pings() {
    use natm_host_core::Event;
    let (mut w, _, _) = net(3, HostCosts::FREE, 0);
    let (h1, h2) = (natm_sim::HostId(0), natm_sim::HostId(1));
    let vc = VcId::uni(0, 100).unwrap();
    w.run_until(Instant::from_nanos(1_000_000)).unwrap();
    let ms = Duration::from_millis(1);
    let e2e = w.ping(h1, vc, false, 7, ms).unwrap();
    w.run_until(Instant::from_nanos(2_000_000)).unwrap();
    let events = w.take_host_events(h1);
    let [Event::PingReply { ping, rtt }] = events[..] else {
        panic!("{events:?}");
    };
    assert_eq!(ping, e2e);
    // Four cell times on OC-3c, and nothing else in the way.
    assert!(
        (4 * 2831..4 * 2831 + 2000).contains(&rtt.as_nanos()),
        "{rtt}"
    );
    assert_eq!(w.host_counters(h2).0.loopbacks_answered, 1);
    assert_eq!(w.host_counters(h1).0.loopbacks_answered, 0);

    let seg = w.ping(h1, vc, true, 8, ms).unwrap();
    w.run_until(Instant::from_nanos(3_000_000)).unwrap();
    let events = w.take_host_events(h1);
    assert!(
        matches!(events[..], [Event::PingReply { ping, .. }] if ping == seg),
        "{events:?}"
    );
    assert_eq!(
        w.host_counters(h2).0.loopbacks_answered,
        1,
        "the switch answered"
    );

    let nowhere = VcId::uni(0, 200).unwrap();
    let lost = w.ping(h1, nowhere, false, 9, ms).unwrap();
    w.run_until(Instant::from_nanos(5_000_000)).unwrap();
    let events = w.take_host_events(h1);
    assert_eq!(
        events,
        [Event::PingTimeout {
            ping: lost,
            vc: nowhere,
            segment: false
        }]
    );
}

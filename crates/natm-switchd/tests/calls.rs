//! Switched VCs through the daemon: a switch with a prefix and two shm ports with
//! signalling, whose peers are user-side `natm_sig::Signalling`s over natm-link endpoints
//! (driven by a thread of the test each). A call is set up, carries data and is released;
//! `status` shows it; a CAC refusal's cause and explanation and an unknown address's
//! cause come back to the caller.

mod common;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant as StdInstant};

use natm_adapter::{Reassembler, Reassembly};
use natm_core::addr::{Aesa, AesaPrefix, Esi};
use natm_core::{Instant, VcId};
use natm_link::endpoint::{EndpointLink, LinkConfig};
use natm_link::{CELL_LEN, CellBytes};
use natm_sig::{
    CallEvent, CallId, Cause, CauseValue, Location, PartyNumber, Role, SetupParams, Signalling,
};
use natm_wire::aal5::Segmenter;

use common::{Daemon, T, TempDir};

const PREFIX: &str = "47.0005.80ffe1000000f21a3501";

fn address(n: u8) -> Aesa {
    PREFIX
        .parse::<AesaPrefix>()
        .unwrap()
        .address(Esi([0, 0, 0, 0, 0, n]), 0)
        .unwrap()
}

/// What the test asks a host thread to do.
enum Command {
    Call(Aesa, &'static str),
    Accept,
    Release(CallId),
    /// Sends `n` cells on this VCI.
    Data(u16, u8),
    Stop,
}

/// A host: a user-side `Signalling` over its link, in a thread; events (and data cells'
/// counts, as `None`) go back over a channel.
fn host(link: Box<dyn EndpointLink>, me: Aesa) -> (mpsc::Sender<Command>, mpsc::Receiver<Report>) {
    let (ctx, crx) = mpsc::channel::<Command>();
    let (rtx, rrx) = mpsc::channel::<Report>();
    thread::spawn(move || {
        let mut link = link;
        let start = StdInstant::now();
        let clock = || Instant::from_nanos(start.elapsed().as_nanos() as u64);
        let sig_vc = VcId::uni(0, 5).unwrap();
        let mut sig = Signalling::new(
            clock(),
            natm_sig::Config::new(Role::User),
            natm_sscop::Config::default(),
        );
        let mut rx = Reassembler::new(sig_vc, 8192).unwrap();
        let mut pending: Vec<CallId> = Vec::new();
        let mut buf = [[0u8; CELL_LEN]; 64];
        loop {
            let now = clock();
            match crx.try_recv() {
                Ok(Command::Stop) | Err(mpsc::TryRecvError::Disconnected) => return,
                Ok(Command::Call(to, qos)) => {
                    let params = SetupParams {
                        called: PartyNumber::aesa(to),
                        called_sub: None,
                        calling: Some(PartyNumber::aesa(me)),
                        calling_sub: None,
                        qos: qos.parse().unwrap(),
                        blli: None,
                        bhli: None,
                        conn: None,
                    };
                    let call = sig.setup(now, &params).unwrap();
                    let _ = rtx.send(Report::Calling(call));
                }
                Ok(Command::Accept) => {
                    if let Some(c) = pending.pop() {
                        sig.connect(now, c, None).unwrap();
                    }
                }
                Ok(Command::Release(c)) => {
                    let cause = Cause::new(Location::User, CauseValue::NormalCallClearing);
                    sig.release(now, c, cause).unwrap();
                }
                Ok(Command::Data(vci, n)) => {
                    let vc = VcId::uni(0, u32::from(vci)).unwrap();
                    for i in 0..n {
                        send(&mut link, vc, &[i; 40]);
                    }
                }
                Err(mpsc::TryRecvError::Empty) => {}
            }
            if sig.poll_timeout().is_some_and(|t| t <= now) {
                sig.handle_timeout(now);
            }
            while let Some(sdu) = sig.poll_transmit() {
                send(&mut link, sig_vc, &sdu);
            }
            let n = link
                .recv_cells_timeout(&mut buf, Some(Duration::from_millis(2)))
                .unwrap_or(0);
            for c in &buf[..n] {
                let word = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
                if (word >> 4) & 0xFFFF == 5 {
                    if let Reassembly::Complete(_) = rx.push_cell(c) {
                        sig.handle_pdu(clock(), rx.sdu());
                    }
                } else {
                    let _ = rtx.send(Report::Data);
                }
            }
            while let Some(e) = sig.poll_event() {
                if let CallEvent::Setup { call, .. } = &e {
                    pending.push(*call);
                }
                let _ = rtx.send(Report::Event(e));
            }
        }
    });
    (ctx, rrx)
}

enum Report {
    Calling(CallId),
    Event(CallEvent),
    Data,
}

fn send(link: &mut Box<dyn EndpointLink>, vc: VcId, sdu: &[u8]) {
    let mut seg = Segmenter::uni(vc, sdu).unwrap();
    let mut cells: Vec<CellBytes> = Vec::new();
    let mut c = [0u8; CELL_LEN];
    while seg.next_cell(&mut c) {
        cells.push(c);
    }
    link.send_cells_timeout(&cells, Some(T)).unwrap();
}

/// Waits for a report that `want` picks.
fn wait<R>(
    rx: &mpsc::Receiver<Report>,
    what: &str,
    mut want: impl FnMut(Report) -> Option<R>,
) -> R {
    let deadline = StdInstant::now() + T;
    loop {
        let left = deadline.saturating_duration_since(StdInstant::now());
        let r = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no {what}"));
        if let Some(x) = want(r) {
            return x;
        }
    }
}

fn released(rx: &mpsc::Receiver<Report>, call: CallId) -> Cause {
    wait(rx, "release", |r| match r {
        Report::Event(CallEvent::Released { call: c, cause, .. }) if c == call => Some(cause),
        _ => None,
    })
}

fn calling(rx: &mpsc::Receiver<Report>) -> CallId {
    wait(rx, "call id", |r| match r {
        Report::Calling(c) => Some(c),
        _ => None,
    })
}

#[test]
fn a_call_through_the_daemon_is_set_up_shown_released_and_refused_with_a_cause() {
    let dir = TempDir::new("calls");
    let p = |n: u32| {
        format!(
            "kind = \"shm\"\npath = {:?}",
            dir.0.join(format!("p{n}.sock"))
        )
    };
    let route = |n: u8| AesaPrefix::of(&address(n), 152);
    let text = format!(
        "name = \"s1\"\nmanagement = {:?}\nprefix = \"{PREFIX}\"\n\n\
         [[port]]\nid = 1\n{}\nsignalling = \"network\"\n\n\
         [[port]]\nid = 2\n{}\nrate = \"10000\"\nsignalling = \"network\"\n\n\
         [[route]]\nprefix = \"{}\"\nport = 1\n\n[[route]]\nprefix = \"{}\"\nport = 2\n",
        dir.0.join("mgmt.sock"),
        p(1),
        p(2),
        route(1),
        route(2),
    );
    let daemon = Daemon::start(&text);
    let link = |n| LinkConfig::from_toml(&p(n)).unwrap().connect(T).unwrap();
    let (h1, r1) = host(link(1), address(1));
    let (h2, r2) = host(link(2), address(2));
    for r in [&r1, &r2] {
        wait(r, "SAAL up", |e| {
            matches!(e, Report::Event(CallEvent::LinkUp)).then_some(())
        });
    }
    // A host is up when it acknowledged the switch's BGN, the switch only when that
    // acknowledgement arrives: until then a call toward the port is refused with 27.
    let deadline = StdInstant::now() + T;
    while !daemon
        .status()
        .signalling
        .is_some_and(|s| s.ports.iter().all(|p| p.link_up))
    {
        assert!(
            StdInstant::now() < deadline,
            "the switch's SAALs never came up"
        );
        thread::sleep(Duration::from_millis(2));
    }
    // A call, accepted.
    h1.send(Command::Call(address(2), "aal5,cbr:max_pcr=4000"))
        .unwrap();
    let call = calling(&r1);
    wait(&r2, "SETUP", |e| {
        matches!(e, Report::Event(CallEvent::Setup { .. })).then_some(())
    });
    h2.send(Command::Accept).unwrap();
    let conn = wait(&r1, "CONNECT", |e| match e {
        Report::Event(CallEvent::Connected { call: c, conn }) if c == call => conn,
        _ => None,
    });
    // Data through the switched VC.
    h1.send(Command::Data(conn.vci, 3)).unwrap();
    for _ in 0..3 {
        wait(&r2, "data", |e| matches!(e, Report::Data).then_some(()));
    }
    // The status shows the call and the ports.
    let sig = daemon.status().signalling.expect("the switch signals");
    assert_eq!(sig.calls_active, 1);
    assert_eq!(sig.calls_connected, 1);
    assert!(sig.state_bytes_per_call > 0 && sig.state_bytes_per_call <= 1024);
    assert_eq!(sig.calls.len(), 1);
    assert_eq!(sig.calls[0].state, "active");
    assert_eq!(sig.calls[0].a, format!("1:0.{}", conn.vci));
    assert_eq!(sig.calls[0].called, address(2).to_string());
    assert_eq!(sig.ports.len(), 2);
    assert!(sig.ports.iter().all(|p| p.link_up && p.side == "network"));
    assert!(sig.ports.iter().all(|p| p.sscop == "data-transfer-ready"));
    // Released by the caller: the called side hears the same cause.
    h1.send(Command::Release(call)).unwrap();
    let cause = wait(&r2, "release", |e| match e {
        Report::Event(CallEvent::Released { cause, .. }) => Some(cause),
        _ => None,
    });
    assert_eq!(cause.value, CauseValue::NormalCallClearing);
    released(&r1, call);
    let deadline = StdInstant::now() + T;
    while daemon.status().signalling.unwrap().calls_active != 0 {
        assert!(
            StdInstant::now() < deadline,
            "the call never left the status"
        );
        thread::sleep(Duration::from_millis(5));
    }
    // More than port 2's 10,000 cells/s: refused with 37 and the explanation.
    h1.send(Command::Call(address(2), "aal5,cbr:max_pcr=20000"))
        .unwrap();
    let call = calling(&r1);
    let cause = released(&r1, call);
    assert_eq!(cause.value, CauseValue::UserCellRateNotAvailable);
    assert_eq!(cause.location, Location::PrivateLocal);
    assert_eq!(
        String::from_utf8_lossy(&cause.diagnostics),
        "s1 p2: 10000 c/s free"
    );
    // An address under the prefix that nobody has: cause 1.
    h1.send(Command::Call(address(9), "aal5,ubr")).unwrap();
    let call = calling(&r1);
    assert_eq!(released(&r1, call).value, CauseValue::UnallocatedNumber);
    let sig = daemon.status().signalling.unwrap();
    assert_eq!(sig.calls_refused, 2);
    assert_eq!(
        daemon.status().connections.len(),
        0,
        "no cross-connect left"
    );
    for h in [h1, h2] {
        let _ = h.send(Command::Stop);
    }
    daemon.stop();
}

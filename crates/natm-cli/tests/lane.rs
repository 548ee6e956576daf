//! The lane path in the lab with its real daemons (`natm lab up`): two applications on
//! their own lanes to the switch exchange SDUs byte-exact, `natm stat` shows the lanes on
//! both host ports and the channels' path, OAM still goes through hostd, a lane VC that
//! would wait for signals is refused, closing the VCs takes the lanes away, lanes work on
//! paced links and are the default path there, and a link with impairments has none.

mod common;
#[path = "support/lab.rs"]
mod lab;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{natm, stderr, stdout};
use lab::{Lab, exchange};
use natm::{DataPath, Error, Host, NotifyMode, OamScope, VcOptions};
use serde_json::Value;

fn lane_options(vc: &str, notify: NotifyMode) -> VcOptions {
    VcOptions::new(vc.parse().expect("vc"))
        .qos("ubr".parse().expect("qos"))
        .notify(notify)
        .path(DataPath::Lane)
}

/// A lane VC on 0.100 on each host (eventfd notification): h1's, then h2's.
fn lanes_on_0_100(h1: &Host, h2: &Host) -> (natm::Vc, natm::Vc) {
    let open = |h: &Host, name: &str| {
        h.open(lane_options("0.100", NotifyMode::EventFd))
            .unwrap_or_else(|e| panic!("open 0.100 on {name}: {e}"))
    };
    (open(h1, "h1"), open(h2, "h2"))
}

/// The switch's ports that have lanes: each one's lanes' VC lists.
fn switch_lanes(stat: &Value) -> Vec<Vec<Vec<String>>> {
    let ports = stat["switches"][0]["status"]["ports"]
        .as_array()
        .unwrap_or_else(|| panic!("switch ports in {stat}"));
    ports
        .iter()
        .map(|p| {
            p["lanes"]
                .as_array()
                .unwrap_or_else(|| panic!("lanes of port {p}"))
                .iter()
                .map(|l| {
                    l["vcs"]
                        .as_array()
                        .expect("a lane's vcs")
                        .iter()
                        .map(|v| v.as_str().expect("VC text").to_string())
                        .collect()
                })
                .collect::<Vec<Vec<String>>>()
        })
        .filter(|lanes| !lanes.is_empty())
        .collect()
}

#[test]
fn applications_on_their_own_lanes_exchange_sdus_and_oam_still_goes_through_hostd() {
    let lab = Lab::up("lane-default", "unlimited", None);
    let (h1, h2) = (lab.host("h1"), lab.host("h2"));
    let (mut a, mut b) = lanes_on_0_100(&h1, &h2);
    exchange(&mut a, &mut b, "lanes");

    // The switch lists 0.100 on both host ports: the two lanes of the cross-connect are
    // spliced (`two_lanes_of_one_vc_are_spliced_and_either_end_may_leave`); the hosts'
    // channels are lanes.
    let stat = lab.stat();
    assert_eq!(
        switch_lanes(&stat),
        vec![vec![vec!["0.100".to_string()]]; 2],
        "{stat}"
    );
    assert_eq!(
        port_lanes(&stat, 0),
        [(vec!["0.100".to_string()], Some("2:0.100".to_string()))]
    );
    let ports = stat["switches"][0]["status"]["ports"].as_array().unwrap();
    for p in ports {
        assert_eq!(p["lane_refused"].as_u64(), Some(0), "{p}");
    }
    let hosts = stat["hosts"].as_array().expect("hosts");
    assert_eq!(hosts.len(), 2, "{stat}");
    for h in hosts {
        let channels = h["status"]["channels"].as_array().expect("channels");
        assert_eq!(channels.len(), 1, "{h}");
        assert_eq!(channels[0]["vc"].as_str(), Some("0.100"), "{h}");
        assert_eq!(channels[0]["path"].as_str(), Some("lane"), "{h}");
    }

    // OAM on the VC goes through hostd (the main link) while the lanes carry its data.
    let o = natm(&[
        "ping",
        "--dir",
        lab.arg(),
        "-c",
        "3",
        "-i",
        "0.05",
        "--json",
        "0.100",
    ]);
    assert!(o.status.success(), "ping: {}{}", stdout(&o), stderr(&o));
    let ping: Value = serde_json::from_str(&stdout(&o)).expect("ping JSON");
    assert_eq!(ping["received"].as_u64(), Some(3), "{ping}");
    h2.ping(
        "0.100".parse().unwrap(),
        OamScope::EndToEnd,
        Duration::from_secs(2),
    )
    .expect("an end-to-end loopback from h2 is answered by h1's hostd");
    h1.ping(
        "0.100".parse().unwrap(),
        OamScope::Segment,
        Duration::from_secs(2),
    )
    .expect("a segment loopback is answered by the switch");
    // And the data path still works after the OAM.
    exchange(&mut a, &mut b, "lanes");

    // A lane VC cannot wait for hostd's signals: refused, not a hang.
    let (tx, rx) = mpsc::channel();
    let socket = lab.socket("h1");
    std::thread::spawn(move || {
        let h = Host::connect_path(socket).expect("host answers");
        let _ = tx.send(
            h.open(lane_options("0.101", NotifyMode::Signal))
                .map(|_| ()),
        );
    });
    let got = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the open returned");
    match got {
        Err(Error::Refused { message: why, .. }) => assert!(why.contains("signal"), "{why}"),
        other => panic!("a lane VC with NotifyMode::Signal: {other:?}"),
    }
    assert_eq!(
        h1.status().expect("status").channels.len(),
        1,
        "nothing left of the refused VC"
    );

    // Closing the VCs takes the lanes away.
    drop(a);
    drop(b);
    let closed = Instant::now();
    loop {
        let stat = lab.stat();
        if switch_lanes(&stat).is_empty() {
            // Every lane the switch attached went. How many it attached depends on
            // the order it saw the two releases: the kept lane alone when it saw both at
            // once, plus a taken-back side when it saw one first.
            let ports = stat["switches"][0]["status"]["ports"].as_array().unwrap();
            let sum =
                |key: &str| -> u64 { ports.iter().map(|p| p[key].as_u64().unwrap_or(0)).sum() };
            assert!(sum("lanes_attached") >= 1, "{stat}");
            assert_eq!(sum("lanes_removed"), sum("lanes_attached"), "{stat}");
            break;
        }
        assert!(
            closed.elapsed() < Duration::from_secs(1),
            "lanes still there a second after the VCs closed: {stat}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for h in [&h1, &h2] {
        assert!(h.status().expect("status").channels.is_empty());
    }
    // The VC can be had on the lane path again.
    let (mut a, mut b) = lanes_on_0_100(&h1, &h2);
    exchange(&mut a, &mut b, "lanes");
}

/// The lane path runs the adapter in the application over its own buffers: every wait
/// mode, zero copy, non-blocking calls, a CBR VC the adapter shapes, and bursts deeper
/// than the transmit buffers.
#[test]
fn lanes_carry_data_in_every_wait_mode_zero_copy_shaped_and_in_bursts() {
    let lab = Lab::up("lane-modes", "unlimited", None);
    let (h1, h2) = (lab.host("h1"), lab.host("h2"));
    for (vc, notify) in [
        ("0.101", NotifyMode::Poll),
        ("0.102", NotifyMode::Adaptive),
        ("0.103", NotifyMode::EventFd),
    ] {
        let mut a = h1.open(lane_options(vc, notify)).expect("open on h1");
        let mut b = h2.open(lane_options(vc, notify)).expect("open on h2");
        exchange(&mut a, &mut b, &format!("{vc} {notify:?}"));

        // Zero copy: filled in place, read in place.
        let mut t = a.tx_buffer().expect("a transmit buffer");
        t[..3].copy_from_slice(b"abc");
        t.send(3).expect("send in place");
        assert_eq!(&*b.recv_zero_copy().expect("in place"), b"abc");

        // Non-blocking: nothing there yet is WouldBlock, then the SDU.
        assert!(matches!(b.try_recv(&mut [0; 64]), Err(Error::WouldBlock)));
        a.try_send(b"xyz").expect("a free transmit buffer");
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut buf = [0u8; 64];
        let n = loop {
            match b.try_recv(&mut buf) {
                Ok(n) => break n,
                Err(Error::WouldBlock) => assert!(Instant::now() < deadline, "{vc}: nothing"),
                Err(e) => panic!("{vc}: try_recv: {e}"),
            }
        };
        assert_eq!(&buf[..n], b"xyz");

        // A burst of 100 SDUs (more than the 16 transmit buffers) arrives whole, in order.
        let sender = std::thread::spawn(move || {
            for k in 0..100u8 {
                a.send(&lab::sdu(1000, k)).expect("burst send");
            }
            a.flush(Duration::from_secs(5)).expect("flushed");
            a
        });
        let mut buf = vec![0u8; 1000];
        for k in 0..100u8 {
            let n = b
                .recv_timeout(&mut buf, Duration::from_secs(5))
                .unwrap_or_else(|e| panic!("{vc}: burst SDU {k}: {e}"));
            assert!(buf[..n] == lab::sdu(1000, k)[..], "{vc}: burst SDU {k}");
        }
        let a = sender.join().expect("sender");
        let (ca, cb) = (a.counters().expect("a"), b.counters().expect("b"));
        assert!(ca.sdus_sent >= 103, "{vc}: {ca:?}");
        assert_eq!(cb.sdus_received, ca.sdus_sent, "{vc}: {cb:?}");
    }

    // CBR at 2,000 cells/s: the adapter paces, so 40 one-cell SDUs take about 20 ms and
    // none is policed at the switch.
    let cbr = |vc: &str| {
        VcOptions::new(vc.parse().expect("vc"))
            .qos("cbr,aal5:max_pcr=2000".parse().expect("qos"))
            .notify(NotifyMode::Adaptive)
            .path(DataPath::Lane)
    };
    let mut a = h1.open(cbr("0.104")).expect("CBR on h1");
    let mut b = h2.open(cbr("0.104")).expect("CBR on h2");
    let start = Instant::now();
    for k in 0..40u8 {
        a.send(&[k; 40]).expect("CBR send");
    }
    // Only this thread's calls move a's cells; b reads nothing meanwhile, so its lane
    // holds what its 16 receive buffers cannot take, and nothing is lost.
    a.flush(Duration::from_secs(5)).expect("CBR flushed");
    let mut buf = [0u8; 64];
    for k in 0..40u8 {
        let n = b
            .recv_timeout(&mut buf, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("CBR SDU {k}: {e}"));
        assert_eq!(&buf[..n], &[k; 40][..], "CBR SDU {k}");
    }
    assert!(
        start.elapsed() >= Duration::from_millis(15),
        "40 cells at 2,000 cells/s came in {:?}: not paced",
        start.elapsed()
    );
}

#[test]
fn lanes_work_on_paced_links_and_are_the_default_path() {
    let lab = Lab::up("lane-oc3", "oc3", None);
    let (h1, h2) = (lab.host("h1"), lab.host("h2"));
    // Asked for, and by default: the lane is the path hostd takes on a shm link.
    let mut a = h1
        .open(lane_options("0.100", NotifyMode::EventFd))
        .expect("a lane on an OC-3c link");
    let mut b = h2
        .open(
            VcOptions::new("0.100".parse().unwrap())
                .qos("ubr".parse().unwrap())
                .notify(NotifyMode::EventFd),
        )
        .expect("the default path");
    for host in [&h1, &h2] {
        let status = host.status().expect("status");
        assert_eq!(status.channels.len(), 1);
        assert_eq!(status.channels[0].path, DataPath::Lane, "{status:?}");
    }
    exchange(&mut a, &mut b, "lanes on an OC-3c link");
    // Signals are the direct path's: the default takes it then.
    drop((a, b));
    let _c = h1
        .open(
            VcOptions::new("0.101".parse().unwrap())
                .qos("ubr".parse().unwrap())
                .notify(NotifyMode::EventFd)
                .path(DataPath::Direct),
        )
        .expect("a direct-path VC");
}

#[test]
fn a_link_with_impairments_has_no_lanes_and_the_default_is_direct() {
    let lab = Lab::up(
        "lane-impaired",
        "oc3",
        Some(
            "switch = [{ name = \"s1\" }]\nhost = [{ name = \"h1\" }, { name = \"h2\" }]\n\
             link = [{ a = \"h1\", b = \"s1\", impair = \"delay=10us\" }, { a = \"h2\", b = \"s1\" }]\n\
             pvc = [{ a = \"h1\", b = \"h2\", vc = \"0.100\" }]\n",
        ),
    );
    let h1 = lab.host("h1");
    match h1.open(lane_options("0.100", NotifyMode::EventFd)) {
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains("without emulated impairments"), "{text}");
        }
        Ok(_) => panic!("a lane that would bypass the link's impairments"),
    }
    assert!(h1.status().expect("status").channels.is_empty());
    let _vc = h1
        .open(
            VcOptions::new("0.100".parse().unwrap())
                .qos("ubr".parse().unwrap())
                .notify(NotifyMode::EventFd),
        )
        .expect("the default path");
    let status = h1.status().expect("status");
    assert_eq!(status.channels[0].path, DataPath::Direct, "{status:?}");
}

#[test]
fn a_host_impaired_at_run_time_opens_no_lane_and_an_open_lane_refuses_the_impairment() {
    let lab = Lab::up("lane-run-time-impair", "unlimited", None);
    let h1 = lab.host("h1");
    let default_path = |vc: &str| {
        VcOptions::new(vc.parse().unwrap())
            .qos("ubr".parse().unwrap())
            .notify(NotifyMode::EventFd)
    };
    // A lane open: its cells would bypass the impairment, so hostd refuses it.
    let lane = h1
        .open(lane_options("0.100", NotifyMode::EventFd))
        .expect("a lane");
    match h1.set_impairments("loss=1%") {
        Err(Error::Refused { message, .. }) => {
            assert!(message.contains("1 lane-path VC(s) open"), "{message}")
        }
        r => panic!("impaired beside an open lane: {r:?}"),
    }
    drop(lane);
    // Closed: impaired now, and no lane until cleared; the default is the direct path.
    assert_eq!(h1.set_impairments("loss=1%").expect("impair"), "loss=0.01");
    match h1.open(lane_options("0.101", NotifyMode::EventFd)) {
        Err(e) => assert!(e.to_string().contains("impaired (loss=0.01)"), "{e}"),
        Ok(_) => panic!("a lane that bypasses the run-time impairment"),
    }
    let vc = h1.open(default_path("0.102")).expect("the default path");
    let status = h1.status().expect("status");
    assert_eq!(status.channels[0].path, DataPath::Direct, "{status:?}");
    assert_eq!(status.link.impair, "loss=0.01");
    drop(vc);
    assert_eq!(h1.set_impairments("").expect("clear"), "");
    let _lane = h1.open(default_path("0.103")).expect("the default path");
    let status = h1.status().expect("status");
    assert_eq!(status.channels[0].path, DataPath::Lane, "{status:?}");
}

#[test]
fn lanes_come_back_after_a_switch_restart() {
    let lab = Lab::up("lane-restart", "unlimited", None);
    let (h1, h2) = (lab.host("h1"), lab.host("h2"));
    let (mut a, mut b) = lanes_on_0_100(&h1, &h2);
    exchange(&mut a, &mut b, "lanes");
    let o = natm(&[
        "lab",
        "restart",
        "s1",
        "--kill",
        "--pause-ms",
        "300",
        "--dir",
        lab.arg(),
    ]);
    assert!(o.status.success(), "lab restart: {}", stderr(&o));
    // Spliced, the applications' rings do not need the switch, but a host whose link is
    // down says so to its applications on every path: wait for both links.
    let deadline = Instant::now() + Duration::from_secs(10);
    while ![&h1, &h2]
        .iter()
        .all(|h| h.status().expect("status").link.up)
    {
        assert!(Instant::now() < deadline, "links down: {}", lab.stat());
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut buf = [0u8; 100];
    loop {
        let _ = a.send(b"after");
        match b.recv_timeout(&mut buf, Duration::from_millis(200)) {
            Ok(n) => {
                assert_eq!(&buf[..n], b"after");
                break;
            }
            Err(e) => assert!(
                Instant::now() < deadline,
                "no data after the restart: {e}; {}",
                lab.stat()
            ),
        }
    }
    // Drain what else came, then exchange again both ways.
    while b.recv_timeout(&mut buf, Duration::from_millis(100)).is_ok() {}
    // This exchange failed once in CI (h2's channel said its link was down after data
    // had flowed): on failure, show what the daemons counted (reconnects, lane failures,
    // the switch's last error per port).
    let exchanged = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        exchange(&mut a, &mut b, "lanes")
    }));
    if let Err(e) = exchanged {
        eprintln!("the lab after the restart: {}", lab.stat());
        std::panic::resume_unwind(e);
    }
    assert_eq!(
        switch_lanes(&lab.stat()),
        vec![vec![vec!["0.100".to_string()]]; 2]
    );
}

/// The lane entries of port index `i` in `natm stat --json`: `(vcs, spliced_with)`.
fn port_lanes(stat: &Value, i: usize) -> Vec<(Vec<String>, Option<String>)> {
    stat["switches"][0]["status"]["ports"][i]["lanes"]
        .as_array()
        .unwrap_or_else(|| panic!("lanes of port {i} in {stat}"))
        .iter()
        .map(|l| {
            let vcs = l["vcs"]
                .as_array()
                .expect("a lane's vcs")
                .iter()
                .map(|v| v.as_str().expect("VC text").to_string())
                .collect();
            (vcs, l["spliced_with"].as_str().map(str::to_string))
        })
        .collect()
}

/// Waits up to a second for `natm stat` to show `want` as port index `i`'s lanes.
fn wait_port_lanes(lab: &Lab, i: usize, want: &[(&str, Option<&str>)], what: &str) {
    let want: Vec<(Vec<String>, Option<String>)> = want
        .iter()
        .map(|(v, s)| (vec![v.to_string()], s.map(str::to_string)))
        .collect();
    let since = Instant::now();
    loop {
        let stat = lab.stat();
        if port_lanes(&stat, i) == want {
            return;
        }
        assert!(
            since.elapsed() < Duration::from_secs(1),
            "{what}: port index {i}'s lanes are not {want:?}: {stat}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn direct_options(vc: &str) -> VcOptions {
    lane_options(vc, NotifyMode::EventFd).path(DataPath::Direct)
}

#[test]
fn two_lanes_of_one_vc_are_spliced_and_either_end_may_leave() {
    let lab = Lab::up("lane-splice", "unlimited", None);
    let (h1, h2) = (lab.host("h1"), lab.host("h2"));
    let (mut a, mut b) = lanes_on_0_100(&h1, &h2);
    exchange(&mut a, &mut b, "spliced");
    // The applications share one ring pair: the switch counted next to nothing of the
    // ~3,500 cells exchanged (the lane's first cells, before the splice, at most).
    wait_port_lanes(&lab, 0, &[("0.100", Some("2:0.100"))], "spliced");
    wait_port_lanes(&lab, 1, &[("0.100", Some("1:0.100"))], "spliced");
    let stat = lab.stat();
    let xc = &stat["switches"][0]["status"]["connections"][0];
    let through = xc["a_to_b"]["cells_in"].as_u64().unwrap_or(0)
        + xc["b_to_a"]["cells_in"].as_u64().unwrap_or(0);
    assert!(through < 100, "{through} cells through the switch: {xc}");
    // Each port's spliced lane, `(cells in, cells out)`: what the switch did not carry it
    // reads from the rings. 1,596 cells each way (the AAL5 frames of 1, 40, 48, 49,
    // 1,500, 9,180 and 65,535 bytes), every one taken.
    let cells = |stat: &Value| -> Vec<(Option<u64>, Option<u64>)> {
        (0..2)
            .map(|i| {
                let l = &stat["switches"][0]["status"]["ports"][i]["lanes"][0];
                (l["rx"].as_u64(), l["tx"].as_u64())
            })
            .collect()
    };
    let all = Some(1596);
    assert_eq!(cells(&stat), [(all, all), (all, all)], "{stat}");
    // One more cell from h1's application, not yet taken by h2's: the counts are each
    // side's own.
    a.send(b"1").expect("one more SDU a→b");
    let stat = lab.stat();
    assert_eq!(cells(&stat), [(Some(1597), all), (all, all)], "{stat}");
    // Each hostd sees the same of its own application's lane, and that it is spliced.
    let host_view = |stat: &Value| -> Vec<(Option<u64>, Option<u64>, Option<bool>)> {
        (0..2)
            .map(|i| {
                let c = &stat["hosts"][i]["status"]["channels"][0];
                let k = &c["counters"];
                (
                    k["cells_sent"].as_u64(),
                    k["cells_received"].as_u64(),
                    c["spliced"].as_bool(),
                )
            })
            .collect()
    };
    let spliced = Some(true);
    assert_eq!(
        host_view(&stat),
        [(Some(1597), all, spliced), (all, all, spliced)],
        "{stat}"
    );
    let mut one = [0u8; 8];
    let got = b.recv_timeout(&mut one, Duration::from_secs(5));
    assert_eq!(got.ok(), Some(1), "the one more SDU");
    let text = stdout(&natm(&["stat", "--dir", lab.arg()]));
    assert!(
        text.contains("spliced with 2:0.100: the applications share its rings, the switch is off its data path; 1597 cells in, 1596 out"),
        "{text}"
    );
    assert!(
        text.contains("lane: 1597 cells out, 1596 in; spliced to another application's lane"),
        "{text}"
    );
    // A capture of the spliced VC cannot see its cells, and says so.
    let pcap = std::path::Path::new(lab.arg()).join("spliced.pcap");
    let pcap = pcap.to_str().expect("utf-8 path");
    let args = ["--vc", "0.100", "--seconds", "0.1", "--out", pcap];
    let o = natm(
        &[
            &["capture", "--host", "h1"][..],
            &args,
            &["--dir", lab.arg()],
        ]
        .concat(),
    );
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains("natm capture: VC 0.100 on s1:") && e.contains("is spliced between two"),
        "{e}"
    );

    // The second holder (side B) leaves: the switch serves h1's lane again, and h2's VC
    // on the direct path reaches it through the switch.
    drop(b);
    wait_port_lanes(&lab, 0, &[("0.100", None)], "side B taken back");
    // Whether host index `i`'s one lane VC says it is spliced.
    let host_spliced = |i: usize| {
        let stat = lab.stat();
        let spliced = stat["hosts"][i]["status"]["channels"][0]["spliced"].as_bool();
        (spliced, stat)
    };
    let (spliced, stat) = host_spliced(0);
    assert_eq!(spliced, Some(false), "h1 after side B left: {stat}");
    let mut b = h2.open(direct_options("0.100")).expect("h2 direct");
    exchange(&mut a, &mut b, "lane ↔ direct after side B left");

    // Spliced again with a new lane on h2; then the first holder (side A) leaves: the
    // switch serves side A as h2's lane, and h1's VC on the direct path reaches it.
    drop(b);
    let mut b = h2
        .open(lane_options("0.100", NotifyMode::EventFd))
        .expect("h2 lane again");
    wait_port_lanes(&lab, 0, &[("0.100", Some("2:0.100"))], "spliced again");
    exchange(&mut a, &mut b, "spliced again");
    drop(a);
    wait_port_lanes(&lab, 1, &[("0.100", None)], "side A taken back");
    let (spliced, stat) = host_spliced(1);
    assert_eq!(spliced, Some(false), "h2 after side A left: {stat}");
    wait_port_lanes(&lab, 0, &[], "h1 has no lane");
    let mut a = h1.open(direct_options("0.100")).expect("h1 direct");
    exchange(&mut a, &mut b, "direct ↔ lane after side A left");
    // Both gone: nothing is left.
    drop((a, b));
    wait_port_lanes(&lab, 1, &[], "all closed");
}

/// Not a test on its own: the application the next test kills (run as a child process).
#[test]
fn child_lane_application() {
    let Ok(socket) = std::env::var("NATM_TEST_LANE_APP_SOCKET") else {
        return;
    };
    let host = Host::connect_path(socket).expect("hostd");
    let mut vc = host
        .open(lane_options("0.100", NotifyMode::EventFd))
        .expect("open a lane VC");
    println!("ready {}", vc.handle());
    let m = vec![7u8; 9000];
    loop {
        let _ = vc.send(&m);
    }
}

#[test]
fn an_application_killed_on_its_lane_leaves_no_lane_behind() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let lab = Lab::up("lane-kill", "unlimited", None);
    let (h1, h2) = (lab.host("h1"), lab.host("h2"));
    let mut b = h2
        .open(lane_options("0.100", NotifyMode::EventFd))
        .expect("open on h2");
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "child_lane_application",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("NATM_TEST_LANE_APP_SOCKET", lab.socket("h1"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("child runs");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    lines
        .find_map(|l| l.ok().filter(|l| l.contains("ready ")))
        .expect("the child opened its VC");
    let mut buf = vec![0u8; 65_535];
    let n = b
        .recv_timeout(&mut buf, Duration::from_secs(5))
        .expect("the child's SDUs arrive on h2's lane");
    assert_eq!(n, 9000);

    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let killed = Instant::now();
    loop {
        let stat = lab.stat();
        let port1 = &stat["switches"][0]["status"]["ports"][0];
        // The child's lane was spliced with h2's (it opened second): its side goes back
        // to the switch, which serves h2's lane again.
        if port1["lanes"].as_array().is_some_and(Vec::is_empty)
            && h1.status().expect("status").channels.is_empty()
            && port_lanes(&stat, 1) == [(vec!["0.100".to_string()], None)]
        {
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(1),
            "the killed application's lane is still there: {stat}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // h2's lane is untouched, and another application can have 0.100 on h1.
    assert_eq!(
        switch_lanes(&lab.stat()),
        vec![vec![vec!["0.100".to_string()]]]
    );
    let mut a = h1
        .open(lane_options("0.100", NotifyMode::EventFd))
        .expect("reopen on h1");
    // The child may have died in the middle of an SDU: h2's reassembly drops the frame
    // the next cells complete, so the first SDUs may be lost.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        a.send(b"again").expect("send");
        match b.recv_timeout(&mut buf, Duration::from_millis(200)) {
            Ok(n) if buf[..n] == b"again"[..] => break,
            Ok(_) => {}
            Err(e) => assert!(Instant::now() < deadline, "nothing from the new VC: {e}"),
        }
    }
    while b.recv_timeout(&mut buf, Duration::from_millis(50)).is_ok() {}
    exchange(&mut a, &mut b, "lanes");
}

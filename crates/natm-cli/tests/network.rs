//! The network with its real daemons (`natm lab up`): data end to end through the switch
//! on every link kind, a switch restart survived by the hosts, and an application killed
//! with SIGKILL leaving nothing behind.

mod common;
#[path = "support/lab.rs"]
mod lab;
#[path = "support/procfs.rs"]
mod procfs;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{natm, stderr};
use lab::{Lab, exchange};
use natm::{DataPath, Error, Host, NotifyMode, VcOptions};

fn open(host: &Host, vc: &str, qos: &str) -> natm::Vc {
    host.open(
        VcOptions::new(vc.parse().expect("vc"))
            .qos(qos.parse().expect("qos"))
            .notify(NotifyMode::Adaptive)
            .path(DataPath::Direct),
    )
    .expect("open")
}

#[test]
fn sdus_cross_the_switch_byte_exact_on_every_link_kind() {
    let lab = Lab::up(
        "net-kinds",
        "unlimited",
        Some(
            r#"
            switch = [{ name = "s1" }]
            host = [{ name = "a" }, { name = "b" }, { name = "c" }]
            link = [
                { a = "a", b = "s1", kind = "shm" },
                { a = "b", b = "s1", kind = "udp" },
                { a = "c", b = "s1", kind = "tcp" },
            ]
            pvc = [
                { a = "a", b = "b", vc = "0.100" },
                { a = "b", b = "c", vc = "0.101" },
                { a = "c", b = "a", vc = "0.102" },
            ]
            "#,
        ),
    );
    let (a, b, c) = (lab.host("a"), lab.host("b"), lab.host("c"));
    let mut ab = (open(&a, "0.100", "ubr"), open(&b, "0.100", "ubr"));
    exchange(&mut ab.0, &mut ab.1, "shm ↔ udp");
    let mut bc = (open(&b, "0.101", "ubr"), open(&c, "0.101", "ubr"));
    exchange(&mut bc.0, &mut bc.1, "udp ↔ tcp");
    let mut ca = (open(&c, "0.102", "ubr"), open(&a, "0.102", "ubr"));
    exchange(&mut ca.0, &mut ca.1, "tcp ↔ shm");

    // The switch counted the cells of each cross-connect, and dropped none.
    let stat = lab.stat();
    let xcs = stat["switches"][0]["status"]["connections"]
        .as_array()
        .expect("connections");
    assert_eq!(xcs.len(), 3);
    for x in xcs {
        for dir in ["a_to_b", "b_to_a"] {
            assert!(x[dir]["cells_out"].as_u64() > Some(700), "{x}");
            assert_eq!(x[dir]["dropped"].as_u64(), Some(0), "{x}");
        }
    }
}

#[test]
fn hosts_survive_a_switch_restart() {
    let lab = Lab::up("net-restart", "unlimited", None);
    let (h1, h2) = (lab.host("h1"), lab.host("h2"));
    let mut a = open(&h1, "0.100", "ubr");
    let mut b = open(&h2, "0.100", "ubr");
    let mut buf = [0u8; 100];
    a.send(b"before").expect("send");
    assert_eq!(
        b.recv_timeout(&mut buf, Duration::from_secs(5))
            .expect("recv"),
        6
    );

    // Crash the switch and keep it away for a while: a blocked receive ends with an error.
    let restarter = {
        let dir = lab.0.clone();
        std::thread::spawn(move || {
            natm(&[
                "lab",
                "restart",
                "s1",
                "--kill",
                "--pause-ms",
                "700",
                "--dir",
                dir.to_str().expect("utf-8"),
            ])
        })
    };
    let started = Instant::now();
    let err = b
        .recv_timeout(&mut buf, Duration::from_secs(10))
        .expect_err("no data can arrive while the switch is down");
    assert!(matches!(err, Error::LinkDown), "got {err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the error came late"
    );
    let o = restarter.join().expect("restart thread");
    assert!(o.status.success(), "lab restart: {}", stderr(&o));

    // The PVCs came back with the switch: the same VCs carry data again.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let _ = a.send(b"after");
        match b.recv_timeout(&mut buf, Duration::from_millis(200)) {
            Ok(n) => {
                assert_eq!(&buf[..n], b"after");
                break;
            }
            Err(e) => assert!(Instant::now() < deadline, "no data after the restart: {e}"),
        }
    }
}

/// Not a test on its own: the application the next test kills (run as a child process).
#[test]
fn child_application() {
    let Ok(socket) = std::env::var("NATM_TEST_APP_SOCKET") else {
        return;
    };
    let host = Host::connect_path(socket).expect("hostd");
    let mut vc = open(&host, "0.100", "cbr:pcr=10000");
    println!("ready {}", vc.handle());
    let m = vec![7u8; 9000];
    loop {
        let _ = vc.send(&m);
    }
}

#[test]
fn an_application_killed_mid_transfer_leaves_nothing_behind() {
    let lab = Lab::up("net-kill", "unlimited", None);
    let h1 = lab.host("h1");
    let hostd_pid = u64::from(h1.status().expect("status").pid);
    let memfds_before = procfs::memfds(hostd_pid);
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "child_application",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("NATM_TEST_APP_SOCKET", lab.0.join("h1.sock"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("child runs");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let ready = lines
        .find_map(|l| l.ok().filter(|l| l.contains("ready ")))
        .expect("the child opened its VC");
    // libtest prints the test's name on the same line first.
    assert!(ready.ends_with(|c: char| c.is_ascii_digit()), "{ready}");
    std::thread::sleep(Duration::from_millis(200));
    let s = h1.status().expect("status");
    assert_eq!(s.channels.len(), 1, "{s:?}");
    assert!(
        s.channels[0].counters.sdus_sent > 0,
        "the child was sending"
    );
    assert!(s.cac.cbr > 0, "its CBR reservation is booked: {:?}", s.cac);

    child.kill().expect("SIGKILL");
    let killed = Instant::now();
    let _ = child.wait();
    loop {
        let s = h1.status().expect("status");
        if s.channels.is_empty() && s.cac.cbr == 0 {
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_millis(100),
            "not reclaimed within 100 ms: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // What `natm stat --json` shows, and hostd's memfds back where they were.
    let stat = lab.stat();
    let h1_stat = &stat["hosts"][0]["status"];
    assert_eq!(
        h1_stat["channels"].as_array().map(Vec::len),
        Some(0),
        "{stat}"
    );
    assert_eq!(procfs::memfds(hostd_pid), memfds_before);
    // Another application can have the VC now.
    let _vc = open(&h1, "0.100", "cbr:pcr=10000");
    assert!(Path::new(&lab.0).exists());
}

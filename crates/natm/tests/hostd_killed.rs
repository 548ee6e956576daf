//! hostd killed with SIGKILL under an application blocked on its channel: the application
//! gets an error, not a hang, although nobody marked the channel revoked.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::TempDir;
use natm::{DataPath, Error, Host, NotifyMode, VcOptions};
use natm_host::hostd::{HostdOptions, HostdThread, IdleWait};
use natm_host::loopback::LoopLink;

const CHILD_ENV: &str = "NATM_TEST_HOSTD_SOCKET";

/// Run only as the child of `an_application_outlives_a_killed_hostd`: a hostd on a
/// loopback link at the socket the environment names, until killed.
#[test]
#[ignore = "the child half of a test; runs only when that test starts it"]
fn child_runs_hostd() {
    let socket = std::env::var(CHILD_ENV).expect("started by the parent test");
    let _d = HostdThread::spawn(
        HostdOptions {
            name: "doomed".into(),
            socket: socket.into(),
            wait: IdleWait::Adaptive,
            link_description: "loopback".into(),
            link_rate: natm_core::LineRate::Unlimited,
            lanes: None,
            address: None,
        },
        Box::new(|| Ok(Box::new(LoopLink::new(1024)) as _)),
    )
    .unwrap();
    println!("LISTENING");
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn an_application_outlives_a_killed_hostd() {
    let dir = TempDir::new();
    let socket = dir.0.join("doomed.sock");
    for notify in [
        NotifyMode::Poll,
        NotifyMode::Adaptive,
        NotifyMode::EventFd,
        NotifyMode::Signal,
    ] {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "child_runs_hostd", "--nocapture"])
            .env(CHILD_ENV, &socket)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        while lines.next().expect("the child says LISTENING").unwrap() != "LISTENING" {}
        let host = Host::connect_path(&socket).unwrap();
        let mut vc = host
            .open(
                VcOptions::new("0.100".parse().unwrap())
                    .notify(notify)
                    .path(DataPath::Direct),
            )
            .unwrap();
        vc.send(b"loop").unwrap();
        let mut buf = [0u8; 16];
        let n = vc.recv_timeout(&mut buf, Duration::from_secs(10)).unwrap();
        assert_eq!(&buf[..n], b"loop");
        let killer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            child.kill().unwrap(); // SIGKILL: hostd revokes nothing
            let at = Instant::now();
            child.wait().unwrap();
            at
        });
        let r = vc.recv(&mut buf);
        let woke = Instant::now();
        let killed = killer.join().unwrap();
        assert!(matches!(r, Err(Error::Revoked)), "{notify:?}: {r:?}");
        let after = woke.saturating_duration_since(killed);
        assert!(
            after < Duration::from_millis(500),
            "{notify:?}: after {after:?}"
        );
        let _ = std::fs::remove_file(&socket);
    }
}

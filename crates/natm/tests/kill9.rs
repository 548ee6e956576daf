//! An application killed with SIGKILL in the middle of a transfer: hostd reclaims its
//! channel, VC, buffers, reservation and mapping at once. Alone in its test binary, so
//! that no other test's channel is mapped in this process while it counts mappings.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::TwoHosts;
use natm::{Host, VcOptions};
use natm_host::hostd::IdleWait;

const T: Duration = Duration::from_secs(10);

/// Channel regions (memfds named natm-channel) mapped in this process.
fn channel_mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| l.contains("memfd:natm-channel"))
        .count()
}

const CHILD_ENV: &str = "NATM_TEST_CHILD_SOCKET";

/// Run only as the child of `kill_9_mid_transfer_reclaims_everything_at_once`: opens 0.100
/// on the daemon named by the environment, says so, and sends until killed.
#[test]
#[ignore = "the child half of a test; runs only when that test starts it"]
fn child_sends_until_killed() {
    let socket = std::env::var(CHILD_ENV).expect("started by the parent test");
    let host = Host::connect_path(socket).unwrap();
    let mut vc = host
        .open(VcOptions::new("0.100".parse().unwrap()).qos("cbr:pcr=1000".parse().unwrap()))
        .unwrap();
    println!("OPEN {}", std::process::id());
    let sdu = vec![0x5a; 9180];
    loop {
        let _ = vc.send(&sdu);
    }
}

#[test]
fn kill_9_mid_transfer_reclaims_everything_at_once() {
    let hosts = TwoHosts::new(IdleWait::Adaptive);
    let ha = Host::connect_path(hosts.a.socket()).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_sends_until_killed",
            "--nocapture",
        ])
        .env(CHILD_ENV, hosts.a.socket())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let pid: i32 = loop {
        let line = lines.next().expect("the child says OPEN").unwrap();
        if let Some(p) = line.strip_prefix("OPEN ") {
            break p.trim().parse().unwrap();
        }
    };
    // It is transferring: its channel is there, with its pid, and cells go out.
    let deadline = Instant::now() + T;
    loop {
        let s = ha.status().unwrap();
        let c = &s.channels[0];
        assert_eq!(c.owner_pid, pid);
        assert_eq!(s.cac.cbr, 1000, "the CBR reservation is booked");
        if c.counters.sdus_sent > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the child sends nothing");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(channel_mappings(), 1, "hostd maps the child's channel");
    child.kill().unwrap(); // SIGKILL
    let killed = Instant::now();
    child.wait().unwrap();
    let gone = loop {
        let s = ha.status().unwrap();
        if s.channels.is_empty() {
            assert_eq!(
                (s.cac.cbr, s.cac.vbr, s.cac.ubr),
                (0, 0, 0),
                "reservation released"
            );
            break killed.elapsed();
        }
        assert!(killed.elapsed() < T, "the channel outlived its owner");
        std::thread::sleep(Duration::from_millis(1));
    };
    assert!(
        gone < Duration::from_millis(100),
        "reclaimed after {gone:?}"
    );
    // hostd (this process) unmapped the dead application's channel region.
    assert_eq!(channel_mappings(), 0, "a channel region is still mapped");
    // The VC is free for another application.
    let vc = ha
        .open(VcOptions::new("0.100".parse().unwrap()).qos("cbr:pcr=1000".parse().unwrap()))
        .unwrap();
    assert_eq!(ha.status().unwrap().channels[0].handle, vc.handle());
}

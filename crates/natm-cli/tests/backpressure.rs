//! Back-pressure instead of loss at the source (issue 22): on the default OC-3c lab, a
//! sender that offers its CBR VC ten times the contract or more is slowed to the contract
//! by its own sends (they wait for a buffer) and loses nothing on its host, on the lane
//! path (the default) and on the direct path.
//!
//! Only upper bounds on speed are asserted (a loaded machine makes everything slower, never
//! faster); "nothing lost" is counted exactly.

mod common;
#[path = "support/lab.rs"]
mod lab;

use std::time::{Duration, Instant};

use natm::{DataPath, NotifyMode, VcOptions};

use lab::Lab;

/// The contract: 20,000 cells/s; each SDU of 40 bytes is one cell.
const PCR: u64 = 20_000;
const SDU: usize = 40;
/// How long the sender offers SDUs as fast as its sends return.
const OFFER: Duration = Duration::from_millis(500);

fn sender_is_slowed_to_its_contract_and_loses_nothing(path: DataPath, tag: &str) {
    let lab = Lab::up(tag, "oc3", None);
    let (h1, h2) = (lab.host("h1"), lab.host("h2"));
    let qos = format!("cbr:pcr={PCR}").parse().expect("qos");
    let mut tx = h1
        .open(
            VcOptions::new("0.100".parse().unwrap())
                .qos(qos)
                .notify(NotifyMode::Adaptive)
                .path(path),
        )
        .expect("the sender's VC");
    // The receiver on its lane: a slow reader holds cells back in the lane, not dropped.
    let mut rx = h2
        .open(
            VcOptions::new("0.100".parse().unwrap())
                .qos(format!("cbr:pcr={PCR}").parse().unwrap())
                .notify(NotifyMode::Adaptive)
                .buffers(512)
                .buffer_size(64),
        )
        .expect("the receiver's VC");
    let receiver = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        let mut got = 0u64;
        loop {
            match rx.recv_timeout(&mut buf, Duration::from_secs(3)) {
                Ok(n) => {
                    assert_eq!(n, SDU, "SDU {got} whole");
                    assert_eq!(buf[..8], got.to_le_bytes(), "SDU {got} in order");
                    got += 1;
                }
                Err(natm::Error::Timeout) => return got,
                Err(e) => panic!("receive after {got} SDUs: {e}"),
            }
        }
    });
    let mut sdu = [0u8; SDU];
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed() < OFFER {
        sdu[..8].copy_from_slice(&sent.to_le_bytes());
        tx.send(&sdu)
            .expect("a send waits for a buffer, it does not fail");
        sent += 1;
    }
    let offered_for = start.elapsed();
    tx.flush(Duration::from_secs(10))
        .expect("what was sent leaves");
    // The sends returned no faster than the contract lets cells go, beyond what the VC
    // queues (its transmit buffers) and the shaper's tolerance (1 ms of cells).
    let allowed = PCR * offered_for.as_micros() as u64 / 1_000_000 + 512 + PCR / 1000 + 1;
    assert!(
        sent <= allowed,
        "{sent} SDUs accepted in {offered_for:?}: the contract allows {allowed}"
    );
    // At 10x the contract the sender would have offered far more: it was held back.
    let c = tx.counters().expect("counters");
    assert_eq!(c.sdus_sent, sent, "every SDU accepted was sent");
    assert_eq!(c.tx_failed, 0, "no send failed");
    let got = receiver.join().expect("receiver");
    assert_eq!(got, sent, "every SDU sent arrived");
    let stat = lab.stat();
    for host in stat["hosts"].as_array().expect("hosts") {
        let closed = &host["status"]["closed"];
        for key in ["drops_no_buffer", "tx_failed", "drops_policed"] {
            assert!(
                closed[key].as_u64().unwrap_or(0) == 0,
                "{key} at {}: {host}",
                host["name"]
            );
        }
    }
    for port in stat["switches"][0]["status"]["ports"]
        .as_array()
        .expect("ports")
    {
        assert_eq!(
            port["counters"]["dropped"].as_u64().unwrap_or(0),
            0,
            "{port}"
        );
        assert_eq!(
            port["counters"]["policed"].as_u64().unwrap_or(0),
            0,
            "{port}"
        );
    }
}

#[test]
fn a_lane_sender_is_slowed_to_its_contract_and_loses_nothing() {
    sender_is_slowed_to_its_contract_and_loses_nothing(DataPath::Auto, "bp-lane");
}

#[test]
fn a_direct_path_sender_is_slowed_to_its_contract_and_loses_nothing() {
    sender_is_slowed_to_its_contract_and_loses_nothing(DataPath::Direct, "bp-direct");
}

//! The direct (shared-memory channel) path against the daemon (socket) path, as the ATLAS
//! DAQ study compared a user-level NIC interface with the kernel driver's: two host
//! daemons in this process joined by a shared-memory link, one VC, request/response
//! latency of 64-byte SDUs and one-way goodput of 9,180-byte SDUs on each path (and the share the receiver dropped
//! for want of a free buffer: ATM has no flow control).
//!
//! `cargo run --release -p natm --example paths [ROUNDS]` (default 2,000 round trips and
//! 20,000 SDUs). Figures depend on the machine and what else runs on it.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use natm::{DataPath, Host, NotifyMode, VcOptions};
use natm_host::hostd::{HostdOptions, HostdThread, IdleWait};
use natm_link::endpoint::EndpointLink;
use natm_link::shm::ShmLink;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(2000);
    let dir = std::env::temp_dir().join(format!("natm-paths-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (la, lb) = ShmLink::pair(8192)?;
    let spawn = |name: &str, link: ShmLink| -> Result<HostdThread, Box<dyn std::error::Error>> {
        let slot = Arc::new(Mutex::new(Some(link)));
        Ok(HostdThread::spawn(
            HostdOptions {
                name: name.into(),
                socket: dir.join(format!("{name}.sock")),
                wait: IdleWait::Adaptive,
                link_description: "shm pair".into(),
                link_rate: natm_core::LineRate::Unlimited,
                lanes: None,
                address: None,
            },
            Box::new(move || {
                slot.lock()
                    .map_err(|_| io::Error::other("poisoned"))?
                    .take()
                    .map(|l| Box::new(l) as Box<dyn EndpointLink>)
                    .ok_or_else(|| io::Error::other("the link is made once"))
            }),
        )?)
    };
    let da = spawn("a", la)?;
    let db = spawn("b", lb)?;
    let ha = Host::connect_path(da.socket())?;
    let hb = Host::connect_path(db.socket())?;
    println!("path            rr_64B_median_us  rr_64B_p99_us  stream_9180B_MBps  stream_lost_%");
    let rows = [
        ("direct/adaptive", DataPath::Direct, NotifyMode::Adaptive),
        ("direct/eventfd", DataPath::Direct, NotifyMode::EventFd),
        ("daemon", DataPath::Daemon, NotifyMode::EventFd),
    ];
    for (name, path, notify) in rows {
        let opts = || {
            VcOptions::new("0.100".parse().expect("a PVC"))
                .notify(notify)
                .path(path)
                .buffers(64)
                .buffer_size(16384)
        };
        let mut a = ha.open(opts())?;
        let mut b = hb.open(opts())?;
        let mut buf = vec![0u8; 16384];
        let req = [0x42u8; 64];
        let mut rtts = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let t = Instant::now();
            a.send(&req)?;
            let n = b.recv(&mut buf)?;
            b.send(&buf[..n])?;
            a.recv(&mut buf)?;
            rtts.push(t.elapsed());
        }
        rtts.sort();
        let median = rtts[rtts.len() / 2];
        let p99 = rtts[rtts.len() * 99 / 100];

        // ATM has no flow control: a receiver without a free buffer drops the frame, so
        // the receiver counts what arrives until the line is quiet.
        let count = rounds * 10;
        let sdu = vec![0x17u8; 9180];
        let receiver =
            std::thread::spawn(move || -> Result<(natm::Vc, usize, Instant), natm::Error> {
                let mut buf = vec![0u8; 16384];
                let (mut got, mut last) = (0, Instant::now());
                loop {
                    match b.recv_timeout(&mut buf, Duration::from_millis(300)) {
                        Ok(_) => {
                            got += 1;
                            last = Instant::now();
                        }
                        Err(natm::Error::Timeout) if got > 0 => return Ok((b, got, last)),
                        Err(natm::Error::Timeout) => {}
                        Err(e) => return Err(e),
                    }
                }
            });
        let t = Instant::now();
        for _ in 0..count {
            a.send(&sdu)?;
        }
        let (_b, got, last) = receiver
            .join()
            .map_err(|_| io::Error::other("receiver panicked"))??;
        let secs = last.duration_since(t).as_secs_f64();
        let mbps = (got * sdu.len()) as f64 / secs / 1e6;
        let lost = 100.0 * (count - got) as f64 / count as f64;
        println!(
            "{name:15} {:16.1} {:14.1} {:18.1} {:14.2}",
            median.as_secs_f64() * 1e6,
            p99.as_secs_f64() * 1e6,
            mbps,
            lost
        );
    }
    drop((ha, hb));
    da.stop()?;
    db.stop()?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

//! Two daemons started from configuration (`hostd::run`) with shared-memory links to a
//! stand-in switch that relays cells between its two ports; the switch restarts and the
//! hosts reconnect by themselves.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::TempDir;
use natm::{Error, Host, OamScope, VcOptions};
use natm_host::hostd::{HostdConfig, run};
use natm_link::endpoint::LinkConfig;

const T: Duration = Duration::from_secs(10);

/// A two-port "switch": accepts one shm link per port and copies cells across.
fn switch(dir: &TempDir, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    let port = |n: u32| {
        LinkConfig::from_toml(&format!(
            "kind = \"shm\"\npath = \"{}\"",
            dir.0.join(format!("sw-p{n}.sock")).display()
        ))
        .unwrap()
        .listen()
        .unwrap()
    };
    let (mut l1, mut l2) = (port(1), port(2));
    std::thread::spawn(move || {
        let accept = |l: &mut natm_link::endpoint::LinkListener, stop: &AtomicBool| loop {
            if let Some(link) = l.accept(Some(Duration::from_millis(20))).unwrap() {
                return Some(link);
            }
            if stop.load(Ordering::Relaxed) {
                return None;
            }
        };
        let Some(mut a) = accept(&mut l1, &stop) else {
            return;
        };
        let Some(mut b) = accept(&mut l2, &stop) else {
            return;
        };
        let mut buf = vec![[0u8; 53]; 256];
        while !stop.load(Ordering::Relaxed) {
            let mut idle = true;
            for dir in 0..2 {
                let (from, to) = if dir == 0 {
                    (&mut a, &mut b)
                } else {
                    (&mut b, &mut a)
                };
                let n = from.recv_cells(&mut buf).unwrap_or(0);
                if n > 0 {
                    idle = false;
                    let _ = to.send_cells_timeout(&buf[..n], Some(T));
                }
            }
            if idle {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    })
}

fn host(dir: &TempDir, name: &str, port: u32) -> HostdConfig {
    HostdConfig::from_toml(&format!(
        "name = \"{name}\"\nsocket = \"{}\"\n[link]\nkind = \"shm\"\npath = \"{}\"\nwait = \"adaptive\"\n",
        dir.0.join(format!("{name}.sock")).display(),
        dir.0.join(format!("sw-p{port}.sock")).display()
    ))
    .unwrap()
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + T;
    while !ok() {
        assert!(Instant::now() < deadline, "waited in vain for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn hosts_ride_out_a_switch_restart() {
    let dir = TempDir::new();
    let sw_stop = Arc::new(AtomicBool::new(false));
    let sw = switch(&dir, sw_stop.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let daemons: Vec<_> = [host(&dir, "h1", 1), host(&dir, "h2", 2)]
        .into_iter()
        .map(|c| {
            assert!(c.effective_link().describe().contains("wait eventfd"));
            let stop = stop.clone();
            std::thread::spawn(move || run(c, stop))
        })
        .collect();
    wait_for("the sockets", || {
        dir.0.join("h1.sock").exists() && dir.0.join("h2.sock").exists()
    });
    let h1 = Host::connect_path(dir.0.join("h1.sock")).unwrap();
    let h2 = Host::connect_path(dir.0.join("h2.sock")).unwrap();
    wait_for("both links", || {
        h1.status().unwrap().link.up && h2.status().unwrap().link.up
    });
    let mut a = h1.open(VcOptions::new("0.100".parse().unwrap())).unwrap();
    let mut b = h2.open(VcOptions::new("0.100".parse().unwrap())).unwrap();
    let mut buf = [0u8; 100];
    a.send(b"through the switch").unwrap();
    let n = b.recv_timeout(&mut buf, T).unwrap();
    assert_eq!(&buf[..n], b"through the switch");
    let rtt = h1
        .ping("0.100".parse().unwrap(), OamScope::EndToEnd, T)
        .unwrap();
    assert!(rtt > Duration::ZERO);

    // The switch goes away: a blocked receiver hears of it.
    sw_stop.store(true, Ordering::Relaxed);
    sw.join().unwrap();
    let start = Instant::now();
    assert!(matches!(b.recv(&mut buf), Err(Error::LinkDown)));
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    wait_for("h1 to see the link down", || !h1.status().unwrap().link.up);

    // It comes back; the hosts reconnect and the same VCs carry data again.
    let sw_stop = Arc::new(AtomicBool::new(false));
    let sw = switch(&dir, sw_stop.clone());
    wait_for("both links again", || {
        h1.status().unwrap().link.up && h2.status().unwrap().link.up
    });
    a.send(b"again").unwrap();
    let n = b.recv_timeout(&mut buf, T).unwrap();
    assert_eq!(&buf[..n], b"again");
    assert_eq!(h1.status().unwrap().link.reconnects, 1);

    drop((a, b, h1, h2));
    stop.store(true, Ordering::Relaxed);
    for d in daemons {
        d.join().unwrap().unwrap();
    }
    sw_stop.store(true, Ordering::Relaxed);
    sw.join().unwrap();
}

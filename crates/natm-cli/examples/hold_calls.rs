//! Holds N switched VCs between two hosts of a running lab, for measuring a switch's memory
//! per call: `cargo run --release --example hold_calls -- DIR N [CALLER CALLED SECONDS]`.
//!
//! A listener on CALLED (default h2) accepts every call on the daemon path (no channel
//! memory per call), a loop on CALLER (default h1) places N UBR calls to it (UBR, so
//! admission control does not refuse them), both keep every VC; once all are up it prints
//! `held N calls` and waits SECONDS (default 30) before dropping them. Stop it early with
//! Ctrl-C: hostd releases the calls of an application that is gone.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use natm::{CallOptions, ChannelOptions, DataPath, Host};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(
        args.get(1)
            .expect("usage: hold_calls DIR N [CALLER CALLED S]"),
    );
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let caller = args.get(3).map_or("h1", String::as_str);
    let called = args.get(4).map_or("h2", String::as_str);
    let hold: u64 = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(30);

    let far = Host::connect_path(dir.join(format!("{called}.sock"))).expect("called host");
    let address = far.status().expect("status").address.expect("an address");
    let listener = far.listen(None).expect("listen");
    let acceptor = std::thread::spawn(move || {
        let opts = ChannelOptions::default().path(DataPath::Daemon);
        let mut vcs = Vec::with_capacity(n);
        while vcs.len() < n {
            match listener
                .next_call(Some(Duration::from_secs(10)))
                .and_then(|c| listener.accept_call(c, &opts))
            {
                Ok(vc) => vcs.push(vc),
                Err(e) => {
                    eprintln!("accept {}: {e}", vcs.len());
                    break;
                }
            }
        }
        (listener, vcs)
    });
    let near = Host::connect_path(dir.join(format!("{caller}.sock"))).expect("caller host");
    let started = Instant::now();
    let mut vcs = Vec::with_capacity(n);
    for i in 0..n {
        let opts = CallOptions::new().path(DataPath::Daemon);
        match near.call(&address, opts) {
            Ok(vc) => vcs.push(vc),
            Err(e) => {
                eprintln!("call {i}: {e}");
                break;
            }
        }
        if (i + 1) % 1000 == 0 {
            eprintln!(
                "{} calls up after {:.1} s",
                i + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    let (_listener, accepted) = acceptor.join().expect("acceptor");
    println!(
        "held {} calls ({} accepted) in {:.1} s",
        vcs.len(),
        accepted.len(),
        started.elapsed().as_secs_f64()
    );
    std::thread::sleep(Duration::from_secs(hold));
}

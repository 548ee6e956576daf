//! SIGTERM and SIGINT stop a running daemon through `install_signal_stop` (its own test
//! binary: the handlers are process-wide).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use natm_switchd::SwitchdConfig;

#[test]
fn sigterm_and_sigint_stop_the_daemon_and_its_socket_goes() {
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        let dir =
            std::env::temp_dir().join(format!("natm-switchd-sig{signal}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mgmt = dir.join("m.sock");
        let config = SwitchdConfig::from_toml(&format!(
            "name = \"s\"\nmanagement = {mgmt:?}\n[[port]]\nid = 1\nkind = \"shm\"\npath = {:?}\n",
            dir.join("p1.sock")
        ))
        .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        natm_switchd::install_signal_stop(&stop).unwrap();
        let s = stop.clone();
        let daemon = std::thread::spawn(move || natm_switchd::run(config, s));
        let deadline = Instant::now() + Duration::from_secs(10);
        while !mgmt.exists() {
            assert!(
                Instant::now() < deadline,
                "the daemon never bound its socket"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        signal_hook::low_level::raise(signal).unwrap();
        assert!(stop.load(Ordering::Acquire), "the handler set the flag");
        daemon.join().unwrap().unwrap();
        assert!(!mgmt.exists() && !dir.join("p1.sock").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! SIGTERM and SIGINT stop a running daemon through `install_signal_stop` (its own test
//! binary: the handlers are process-wide).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{Daemon, TempDir};

#[test]
fn sigterm_and_sigint_stop_the_daemon_and_its_socket_goes() {
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        let dir = TempDir::new(&format!("sig{signal}"));
        let mgmt = dir.0.join("m.sock");
        let text = format!(
            "name = \"s\"\nmanagement = {mgmt:?}\n[[port]]\nid = 1\nkind = \"shm\"\npath = {:?}\n",
            dir.0.join("p1.sock")
        );
        let stop = Arc::new(AtomicBool::new(false));
        natm_switchd::install_signal_stop(&stop).unwrap();
        let daemon = Daemon::start_with(&text, stop.clone());
        signal_hook::low_level::raise(signal).unwrap();
        assert!(stop.load(Ordering::Acquire), "the handler set the flag");
        daemon.stop();
        assert!(!mgmt.exists() && !dir.0.join("p1.sock").exists());
    }
}

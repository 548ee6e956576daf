//! Helpers shared by the daemon's integration tests: a temporary directory for socket
//! files and a daemon running in a thread.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use natm_switchd::client::{Client, PortStatus, SwitchStatus};
use natm_switchd::{SwitchdConfig, SwitchdError};

/// How long a test waits for anything.
pub const T: Duration = Duration::from_secs(10);

/// A UNI cell on VPI 0, VCI 100 (PTI 0) whose payload starts with `i`, little-endian.
pub fn cell(i: u64) -> [u8; 53] {
    let mut c = [0u8; 53];
    c[..4].copy_from_slice(&[0x00, 0x00, 0x06, 0x40]);
    c[4] = natm_wire::cell::hec([c[0], c[1], c[2], c[3]]);
    c[5..13].copy_from_slice(&i.to_le_bytes());
    c
}

/// A temporary directory `natm-switchd-NAME-PID` for socket files, removed at the end.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("natm-switchd-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A daemon running in a thread; stopped (and joined) when dropped.
pub struct Daemon {
    pub stop: Arc<AtomicBool>,
    pub thread: Option<JoinHandle<Result<(), SwitchdError>>>,
    pub mgmt: PathBuf,
}

impl Daemon {
    /// Starts a daemon from configuration text and waits until it answers `status`.
    pub fn start(text: &str) -> Daemon {
        Daemon::start_with(text, Arc::new(AtomicBool::new(false)))
    }

    /// [`Daemon::start`] with a stop flag of the caller's.
    pub fn start_with(text: &str, stop: Arc<AtomicBool>) -> Daemon {
        let config = SwitchdConfig::from_toml(text).unwrap();
        let mgmt = config.management.clone();
        let s = stop.clone();
        let thread = std::thread::spawn(move || natm_switchd::run(config, s));
        let deadline = Instant::now() + T;
        while Client::new(&mgmt, T).status().is_err() {
            assert!(!thread.is_finished(), "the daemon ended at start");
            assert!(Instant::now() < deadline, "the daemon never answered");
            std::thread::sleep(Duration::from_millis(5));
        }
        Daemon {
            stop,
            thread: Some(thread),
            mgmt,
        }
    }

    /// The daemon's management client.
    pub fn client(&self) -> Client {
        Client::new(&self.mgmt, T)
    }

    pub fn status(&self) -> SwitchStatus {
        self.client().status().unwrap()
    }

    pub fn port(&self, id: u16) -> PortStatus {
        self.status()
            .ports
            .into_iter()
            .find(|p| p.id == id)
            .unwrap()
    }

    /// Waits until port `id`'s `up` is `up`.
    pub fn wait_port(&self, id: u16, up: bool) {
        let deadline = Instant::now() + T;
        while self.port(id).up != up {
            assert!(Instant::now() < deadline, "port {id} never went up={up}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits until every port is up (its host attached).
    pub fn wait_all_up(&self) {
        let deadline = Instant::now() + T;
        loop {
            if self.status().ports.iter().all(|p| p.up) {
                return;
            }
            assert!(Instant::now() < deadline, "hosts never attached");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops the daemon; it must end without an error.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        self.thread.take().unwrap().join().unwrap().unwrap();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

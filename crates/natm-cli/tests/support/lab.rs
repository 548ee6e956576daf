//! A lab of real daemons for one test (`natm lab up` in a fresh directory, taken down on
//! drop), and the byte-exact SDU exchange the network tests run over it. The including
//! test declares `mod common;` first.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use natm::Host;
use serde_json::Value;

use crate::common::{natm, stderr, stdout};

/// A running lab in its own directory.
pub struct Lab(pub PathBuf);

impl Lab {
    /// `natm lab up --rate RATE` in a directory named after this process and `tag`, with
    /// the default topology or `topology`'s text.
    pub fn up(tag: &str, rate: &str, topology: Option<&str>) -> Lab {
        let dir = std::env::temp_dir().join(format!("natm-lab-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let lab = Lab(dir);
        let mut args = vec!["lab", "up", "--rate", rate, "--dir", lab.arg()];
        let topo = lab.0.with_extension("toml");
        if let Some(t) = topology {
            std::fs::write(&topo, t).expect("write topology");
            args.extend(["--topology", topo.to_str().expect("utf-8")]);
        }
        let o = natm(&args);
        assert!(o.status.success(), "lab up: {}", stderr(&o));
        lab
    }

    /// The directory, as a command-line argument.
    pub fn arg(&self) -> &str {
        self.0.to_str().expect("utf-8 temp dir")
    }

    /// A daemon's socket.
    pub fn socket(&self, name: &str) -> PathBuf {
        self.0.join(format!("{name}.sock"))
    }

    /// A connection to host `name`'s daemon.
    pub fn host(&self, name: &str) -> Host {
        Host::connect_path(self.socket(name)).expect("host answers")
    }

    /// `natm stat --json` of the lab.
    pub fn stat(&self) -> Value {
        let o = natm(&["stat", "--json", "--dir", self.arg()]);
        assert!(o.status.success(), "stat: {}", stderr(&o));
        serde_json::from_str(&stdout(&o)).expect("stat JSON")
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = natm(&["lab", "down", "--dir", self.arg()]);
        let _ = std::fs::remove_dir_all(&self.0);
        let _ = std::fs::remove_file(self.0.with_extension("toml"));
    }
}

/// A deterministic SDU of `n` bytes, different for every (n, seed).
pub fn sdu(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[1] ^ seed)
        .collect()
}

/// SDUs of 1 to 65,535 bytes from `a` to `b` and different ones back, each checked whole.
pub fn exchange(a: &mut natm::Vc, b: &mut natm::Vc, what: &str) {
    let mut buf = vec![0u8; 65_535];
    for (k, n) in [1, 40, 48, 49, 1500, 9180, 65_535].into_iter().enumerate() {
        let m = sdu(n, k as u8);
        a.send(&m).expect("send a→b");
        let got = b
            .recv_timeout(&mut buf, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{what}: {n} bytes a→b: {e}"));
        assert_eq!(got, n, "{what}: {n} bytes a→b: length");
        assert!(buf[..got] == m[..], "{what}: {n} bytes a→b differ");
        let back = sdu(n, !(k as u8));
        b.send(&back).expect("send b→a");
        let got = a
            .recv_timeout(&mut buf, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{what}: {n} bytes b→a: {e}"));
        assert_eq!(got, n, "{what}: {n} bytes b→a: length");
        assert!(buf[..got] == back[..], "{what}: {n} bytes b→a differ");
    }
}

//! What the natm perf tests share: two host daemons joined by a shared-memory link.

/// Two natm host daemons in this test process, joined by a shared-memory link (host to
/// host, no switch), their sockets in a fresh directory; the `natm` binary under test
/// reaches them by socket path.
pub struct Lab {
    hosts: Vec<natm_host::hostd::HostdThread>,
    dir: std::path::PathBuf,
}

impl Lab {
    pub fn new(tag: &str) -> Lab {
        use natm_host::hostd::{HostdOptions, HostdThread, IdleWait};
        let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("perf-lab-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = natm_link::shm::ShmLink::pair(4096).unwrap();
        let mut hosts = Vec::new();
        for (name, link) in [("h1", a), ("h2", b)] {
            let mut link = Some(link);
            let opts = HostdOptions {
                name: name.into(),
                socket: dir.join(format!("{name}.sock")),
                wait: IdleWait::Adaptive,
                link_description: "shm pair".into(),
                link_rate: natm_core::LineRate::Unlimited,
                lanes: None,
                address: None,
            };
            let connector = Box::new(move || {
                link.take()
                    .map(|l| Box::new(l) as Box<dyn natm_link::endpoint::EndpointLink>)
                    .ok_or_else(|| std::io::Error::other("the test's link was taken"))
            });
            hosts.push(HostdThread::spawn(opts, connector).unwrap());
        }
        Lab { hosts, dir }
    }

    pub fn socket(&self, i: usize) -> String {
        self.hosts[i].socket().to_str().unwrap().to_string()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for h in self.hosts.drain(..) {
            let _ = h.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

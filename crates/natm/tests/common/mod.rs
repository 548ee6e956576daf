//! Two host daemons in this process, joined by a shared-memory link (host to host, no
//! switch), with sockets in a fresh temporary directory.

#![allow(dead_code)]

use std::io;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use natm_host::hostd::{HostdOptions, HostdThread, IdleWait};
use natm_link::endpoint::EndpointLink;
use natm_link::shm::ShmLink;
use natm_link::{CellBytes, CellLink, LinkCounters};

static DIRS: AtomicU32 = AtomicU32::new(0);

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "natm-test-{}-{}",
            std::process::id(),
            DIRS.fetch_add(1, Ordering::Relaxed)
        ));
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

/// A link the test can cut: every call fails while `cut` is set.
pub struct Cuttable {
    inner: ShmLink,
    cut: Arc<AtomicBool>,
}

fn aborted() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "cut by the test")
}

impl CellLink for Cuttable {
    fn send_cells(&mut self, cells: &[CellBytes]) -> io::Result<usize> {
        if self.cut.load(Ordering::Relaxed) {
            return Err(aborted());
        }
        self.inner.send_cells(cells)
    }
    fn recv_cells(&mut self, buf: &mut [CellBytes]) -> io::Result<usize> {
        if self.cut.load(Ordering::Relaxed) {
            return Err(aborted());
        }
        self.inner.recv_cells(buf)
    }
    fn wait_recv(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        if self.cut.load(Ordering::Relaxed) {
            return Err(aborted());
        }
        self.inner.wait_recv(timeout)
    }
    fn wait_send(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        self.inner.wait_send(timeout)
    }
    fn poll_fd(&self) -> Option<BorrowedFd<'_>> {
        self.inner.poll_fd()
    }
    fn counters(&self) -> LinkCounters {
        self.inner.counters()
    }
}

impl EndpointLink for Cuttable {
    fn next_due(&self) -> Option<std::time::Instant> {
        self.inner.next_due()
    }
}

/// Where each host's connector takes its next link from.
pub type Slot = Arc<Mutex<Option<ShmLink>>>;

pub struct TwoHosts {
    pub a: HostdThread,
    pub b: HostdThread,
    pub slots: [Slot; 2],
    pub cut: Arc<AtomicBool>,
    pub dir: TempDir,
}

impl TwoHosts {
    pub fn new(wait: IdleWait) -> TwoHosts {
        TwoHosts::with_rate(wait, natm_core::LineRate::Unlimited)
    }

    pub fn with_rate(wait: IdleWait, link_rate: natm_core::LineRate) -> TwoHosts {
        let dir = TempDir::new();
        let (la, lb) = ShmLink::pair(4096).unwrap();
        let slots: [Slot; 2] = [
            Arc::new(Mutex::new(Some(la))),
            Arc::new(Mutex::new(Some(lb))),
        ];
        let cut = Arc::new(AtomicBool::new(false));
        let spawn = |name: &str, slot: &Slot| {
            let slot = slot.clone();
            let cut = cut.clone();
            let opts = HostdOptions {
                name: name.into(),
                socket: dir.0.join(format!("{name}.sock")),
                wait,
                link_description: "shm pair".into(),
                link_rate,
                lanes: None,
                address: None,
            };
            HostdThread::spawn(
                opts,
                Box::new(move || {
                    let inner = slot
                        .lock()
                        .unwrap()
                        .take()
                        .ok_or_else(|| io::Error::other("no link in the slot"))?;
                    Ok(Box::new(Cuttable {
                        inner,
                        cut: cut.clone(),
                    }) as Box<dyn EndpointLink>)
                }),
            )
            .unwrap()
        };
        let a = spawn("a", &slots[0]);
        let b = spawn("b", &slots[1]);
        TwoHosts {
            a,
            b,
            slots,
            cut,
            dir,
        }
    }

    /// Cuts the link under both hosts.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::Relaxed);
    }

    /// Gives both hosts a new link; they pick it up at their next reconnect.
    pub fn reconnect(&self) {
        let (la, lb) = ShmLink::pair(4096).unwrap();
        *self.slots[0].lock().unwrap() = Some(la);
        *self.slots[1].lock().unwrap() = Some(lb);
        self.cut.store(false, Ordering::Relaxed);
    }
}

/// Bytes that differ per size and per direction.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[1] ^ seed)
        .collect()
}

pub const SIZES: [usize; 6] = [1, 40, 48, 1500, 9180, 65535];

//! One unmodified linux-atm `atmsigd` in a private directory, its signalling VC on two FIFOs.
//!
//! [`AtmSigd::spawn`] builds `tools/atm_socket_shim.c` with `cc`, makes two FIFOs of framed
//! SDUs (be32 length + bytes; the shim's format), and starts
//!
//! ```text
//! LD_PRELOAD=shim.so ATMSHIM_IN=to_sigd ATMSHIM_OUT=from_sigd [ATMSHIM_LOCAL=<aesa>] \
//!   atmsigd -c atmsigd.conf -l stderr -d -D DIR -m user|network -u uni31|uni40 0.0.5 DIR/atmsigd.sock
//! ```
//!
//! The FIFOs are opened read-write here before atmsigd starts, so neither side's `open`
//! blocks on the other. `DIR/atmsigd.sock` is atmsigd's end of the kernel-side protocol
//! ([`crate::kernel`]); ours is `DIR/natm.sock`. atmsigd's stderr (with `-d`: every PDU in
//! hex) goes to `DIR/atmsigd.log`, shown when a test fails. Dropping the value kills and reaps
//! atmsigd, stops the reader threads and removes the directory.
//!
//! [`AtmSigd::pump`] drives a natm signalling entity (anything [`SaalEndpoint`]) against
//! atmsigd in real time; [`AtmSigd::now`] is the one place the wall clock becomes a
//! `natm_core::Instant`.

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use natm_core::Instant;

use crate::bridge::{Bridge, BridgeStats};
use crate::kernel::{KernelMsg, MSG_LEN};

/// The environment variable that turns a missing atmsigd or C compiler into a failure.
pub const REQUIRE_ENV: &str = "NATM_REQUIRE_ATMSIGD";

/// Which side of the UNI atmsigd plays (`-m`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `-m user`: natm plays the network.
    User,
    /// `-m network`: natm plays the user.
    Network,
}

/// Signalling version (`-u`). Without `-u`, Debian's build runs UNI 3.0 with the old Q.SAAL
/// SSCOP, so the harness always passes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Uni {
    /// `-u uni31`
    Uni31,
    /// `-u uni40`
    Uni40,
}

/// How to start atmsigd.
#[derive(Clone, Debug)]
pub struct Options {
    /// `-m`.
    pub mode: Mode,
    /// `-u`.
    pub uni: Uni,
    /// atmsigd's local AESA (the shim's `ATMSHIM_LOCAL`). Without one atmsigd accepts calls
    /// (user mode) but places none.
    pub local: Option<[u8; 20]>,
    /// First VCI the shim hands out when network-mode atmsigd allocates one (`ATMSHIM_VCI`).
    pub first_vci: u16,
}

impl Options {
    /// `mode`, UNI 3.1, the given local address, VCIs from 32.
    pub fn new(mode: Mode, local: Option<[u8; 20]>) -> Options {
        Options {
            mode,
            uni: Uni::Uni31,
            local,
            first_vci: 32,
        }
    }
}

/// Why atmsigd did not start.
#[derive(Debug)]
pub enum SpawnError {
    /// A program the harness needs is not installed (the test should skip, unless
    /// [`REQUIRE_ENV`] is `1`).
    Missing(String),
    /// Anything else (a failure).
    Setup(String),
}

/// The natm side as the pump drives it: the `handle_pdu / poll_transmit / poll_timeout /
/// handle_timeout` face of `natm_sig::Signalling` (and of `natm_sscop::sscf::Sscf`).
pub trait SaalEndpoint {
    /// One AAL5 SDU from VC 0.5.
    fn handle_pdu(&mut self, now: Instant, sdu: &[u8]);
    /// One AAL5 SDU for VC 0.5.
    fn poll_transmit(&mut self) -> Option<Vec<u8>>;
    /// When [`SaalEndpoint::handle_timeout`] is next due.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Runs the timers due at `now`.
    fn handle_timeout(&mut self, now: Instant);
}

/// Direction of an SDU on the signalling VC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// natm → atmsigd.
    ToSigd,
    /// atmsigd → natm.
    FromSigd,
}

/// One SDU seen on the signalling VC.
#[derive(Clone, Debug)]
pub struct Seen {
    /// When (the harness's clock).
    pub at: Instant,
    /// Which way.
    pub dir: Dir,
    /// The SDU (SSCOP PDU).
    pub sdu: Vec<u8>,
    /// Whether the filter dropped it on the way.
    pub dropped: bool,
}

/// Decides, per SDU, whether it is lost on the way (`true` = drop).
pub type Filter = Box<dyn FnMut(Dir, &[u8]) -> bool>;

/// What atmsigd's readers (and a bridge) hand the harness.
pub(crate) enum Incoming {
    /// An SDU atmsigd wrote to its signalling VC.
    Sdu(Vec<u8>),
    /// A kernel-side message from atmsigd.
    Kernel(KernelMsg),
    /// An SDU a bridge carried, for the trace.
    Traced(Seen),
}

/// A running atmsigd (see the module docs).
pub struct AtmSigd {
    dir: PathBuf,
    child: Option<Child>,
    to_sigd: File,
    from_sigd: File,
    kernel: Option<UnixDatagram>,
    rx: Receiver<Incoming>,
    threads: Vec<JoinHandle<()>>,
    epoch: std::time::Instant,
    kernel_inbox: VecDeque<KernelMsg>,
    filter: Option<Filter>,
    bridge: Option<Bridge>,
    /// Every SDU that crossed (or was dropped on) the signalling VC, in order.
    pub trace: Vec<Seen>,
}

static SERIAL: AtomicU32 = AtomicU32::new(0);

/// `name` in `PATH`, `/usr/sbin` or `/sbin`.
fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d: PathBuf| d.join(name))
        .find(|p| p.is_file())
}

/// The shim's source in this repository.
pub fn shim_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/atm_socket_shim.c")
}

fn setup<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> SpawnError + '_ {
    move |e| SpawnError::Setup(format!("{what}: {e}"))
}

impl AtmSigd {
    /// Starts atmsigd as `opts` says; `name` labels the private directory.
    pub fn spawn(name: &str, opts: &Options) -> Result<AtmSigd, SpawnError> {
        let atmsigd = find_program("atmsigd").ok_or_else(|| {
            SpawnError::Missing("linux-atm's atmsigd (apt-get install atm-tools)".into())
        })?;
        // `CC` as make reads it: a path, or a name looked up in PATH.
        let cc_name = std::env::var_os("CC").map_or_else(|| PathBuf::from("cc"), PathBuf::from);
        let cc = if cc_name.components().count() > 1 {
            cc_name.is_file().then_some(cc_name)
        } else {
            find_program(&cc_name.to_string_lossy())
        }
        .ok_or_else(|| SpawnError::Missing("a C compiler (cc) to build the shim".into()))?;
        let mkfifo = find_program("mkfifo")
            .ok_or_else(|| SpawnError::Missing("mkfifo (coreutils)".into()))?;

        let dir = std::env::temp_dir().join(format!(
            "natm-atmsigd-{name}-{}-{}",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).map_err(setup("temp dir"))?;
        // From here on, a failure removes the directory through `Cleanup`.
        let cleanup = Cleanup(dir.clone());

        let shim = dir.join("atm_socket_shim.so");
        let out = Command::new(&cc)
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&shim)
            .arg(shim_source())
            .arg("-ldl")
            .output()
            .map_err(setup("cc"))?;
        if !out.status.success() {
            return Err(SpawnError::Setup(format!(
                "building the shim failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        let (to_path, from_path) = (dir.join("to_sigd"), dir.join("from_sigd"));
        let st = Command::new(mkfifo)
            .arg(&to_path)
            .arg(&from_path)
            .status()
            .map_err(setup("mkfifo"))?;
        if !st.success() {
            return Err(SpawnError::Setup("mkfifo failed".into()));
        }
        // Read-write on our side: atmsigd's opens never wait for us, and ours never for it.
        let rw = |p: &Path| OpenOptions::new().read(true).write(true).open(p);
        let to_sigd = rw(&to_path).map_err(setup("open to_sigd"))?;
        let from_sigd = rw(&from_path).map_err(setup("open from_sigd"))?;

        let conf = dir.join("atmsigd.conf");
        // An own (empty) file keeps /etc/atmsigd.conf (syslog, `entity 0.0.5`) out.
        fs::write(
            &conf,
            "# natm interop: defaults, logging from the command line\n",
        )
        .map_err(setup("config"))?;
        let log = File::create(dir.join("atmsigd.log")).map_err(setup("log"))?;
        let sigd_sock = dir.join("atmsigd.sock");
        let mut cmd = Command::new(atmsigd);
        cmd.arg("-c")
            .arg(&conf)
            .args(["-l", "stderr", "-d", "-D"])
            .arg(&dir)
            .arg("-m")
            .arg(match opts.mode {
                Mode::User => "user",
                Mode::Network => "network",
            })
            .arg("-u")
            .arg(match opts.uni {
                Uni::Uni31 => "uni31",
                Uni::Uni40 => "uni40",
            })
            .arg("0.0.5")
            .arg(&sigd_sock)
            .env("LD_PRELOAD", &shim)
            .env("ATMSHIM_IN", &to_path)
            .env("ATMSHIM_OUT", &from_path)
            .env("ATMSHIM_VCI", opts.first_vci.to_string())
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(setup("log"))?)
            .stderr(log);
        match opts.local {
            Some(a) => cmd.env("ATMSHIM_LOCAL", hex(&a)),
            None => cmd.env_remove("ATMSHIM_LOCAL"),
        };
        let child = cmd.spawn().map_err(setup("spawn atmsigd"))?;

        let (tx, rx) = channel();
        let mut me = AtmSigd {
            dir: dir.clone(),
            child: Some(child),
            to_sigd,
            from_sigd,
            kernel: None,
            rx,
            threads: Vec::new(),
            epoch: std::time::Instant::now(),
            kernel_inbox: VecDeque::new(),
            filter: None,
            bridge: None,
            trace: Vec::new(),
        };
        std::mem::forget(cleanup); // `me` owns the directory now
        let reader = me.from_sigd.try_clone().map_err(setup("dup from_sigd"))?;
        let t = tx.clone();
        me.threads
            .push(std::thread::spawn(move || read_frames(reader, t)));

        // atmsigd creates its socket before it opens the signalling VC.
        let end = std::time::Instant::now() + Duration::from_secs(5);
        while !sigd_sock.exists() {
            if let Some(st) = me.exited() {
                return Err(SpawnError::Setup(format!(
                    "atmsigd exited ({st}) before creating its socket:\n{}",
                    me.log()
                )));
            }
            if std::time::Instant::now() > end {
                return Err(SpawnError::Setup(format!(
                    "atmsigd made no socket within 5 s:\n{}",
                    me.log()
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let ours = dir.join("natm.sock");
        let k = UnixDatagram::bind(&ours).map_err(setup("bind natm.sock"))?;
        k.connect(&sigd_sock)
            .map_err(setup("connect atmsigd.sock"))?;
        let kr = k.try_clone().map_err(setup("dup kernel socket"))?;
        me.threads
            .push(std::thread::spawn(move || read_kernel(kr, tx)));
        me.kernel = Some(k);
        Ok(me)
    }

    /// [`AtmSigd::spawn`], or `None` after saying why when a program is missing, unless
    /// `NATM_REQUIRE_ATMSIGD=1`, which makes that a failure. Other failures panic.
    pub fn spawn_or_skip(name: &str, opts: &Options) -> Option<AtmSigd> {
        match AtmSigd::spawn(name, opts) {
            Ok(s) => Some(s),
            Err(SpawnError::Missing(what)) => {
                assert!(
                    std::env::var_os(REQUIRE_ENV).is_none_or(|v| v != "1"),
                    "{REQUIRE_ENV}=1 but {what} is missing"
                );
                eprintln!("skipped: {what} is missing");
                None
            }
            Err(SpawnError::Setup(e)) => panic!("starting atmsigd: {e}"),
        }
    }

    /// The harness's clock: the wall clock since spawn, as a `natm_core::Instant`. The only
    /// place wall time becomes protocol time.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    fn wall(&self, t: Instant) -> std::time::Instant {
        self.epoch + Duration::from_nanos(t.as_nanos())
    }

    /// Everything atmsigd wrote to stderr so far.
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.join("atmsigd.log")).unwrap_or_default()
    }

    /// The private directory (atmsigd's dumps land here too).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// atmsigd's exit status, if it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// Loses SDUs on the way for which `f` returns `true` (in either direction).
    pub fn set_filter(&mut self, f: impl FnMut(Dir, &[u8]) -> bool + 'static) {
        self.filter = Some(Box::new(f));
    }

    /// Stops losing SDUs.
    pub fn clear_filter(&mut self) {
        self.filter = None;
    }

    fn pass(&mut self, dir: Dir, sdu: &[u8]) -> bool {
        let dropped = self.filter.as_mut().is_some_and(|f| f(dir, sdu));
        self.trace.push(Seen {
            at: self.now(),
            dir,
            sdu: sdu.to_vec(),
            dropped,
        });
        !dropped
    }

    /// Writes one SDU to atmsigd's signalling VC, through the filter.
    pub fn send_sdu(&mut self, sdu: &[u8]) {
        if !self.pass(Dir::ToSigd, sdu) {
            return;
        }
        self.write_frame(sdu);
    }

    fn write_frame(&mut self, sdu: &[u8]) {
        write_frame(&mut self.to_sigd, sdu).expect("write to atmsigd's FIFO");
    }

    /// Sends one message on atmsigd's kernel-side socket.
    pub fn kernel_send(&mut self, m: &KernelMsg) {
        let k = self.kernel.as_ref().expect("kernel socket");
        k.send(&m.emit()).expect("send to atmsigd's kernel socket");
    }

    /// The next kernel-side message atmsigd sent, pumping `peer` meanwhile, waiting at most
    /// `limit`.
    pub fn kernel_recv<P: SaalEndpoint>(
        &mut self,
        peer: &mut P,
        limit: Duration,
    ) -> Option<KernelMsg> {
        self.pump(peer, limit, |_, s| !s.kernel_inbox.is_empty());
        self.kernel_inbox.pop_front()
    }

    /// Kernel-side messages received and not yet taken.
    pub fn kernel_inbox(&mut self) -> &mut VecDeque<KernelMsg> {
        &mut self.kernel_inbox
    }

    /// Runs `peer` against atmsigd in real time until `done` says so (then `true`) or `limit`
    /// has passed (`false`). Each round: timers due, then everything `peer` transmits, then
    /// `done`, then wait for the next SDU or kernel message or the peer's next timeout.
    pub fn pump<P: SaalEndpoint>(
        &mut self,
        peer: &mut P,
        limit: Duration,
        mut done: impl FnMut(&mut P, &mut AtmSigd) -> bool,
    ) -> bool {
        let end = std::time::Instant::now() + limit;
        loop {
            let now = self.now();
            if peer.poll_timeout().is_some_and(|t| t <= now) {
                peer.handle_timeout(now);
            }
            while let Some(sdu) = peer.poll_transmit() {
                self.send_sdu(&sdu);
            }
            if done(peer, self) {
                return true;
            }
            let mut wake = end;
            if let Some(t) = peer.poll_timeout() {
                wake = wake.min(self.wall(t));
            }
            let wait = wake.saturating_duration_since(std::time::Instant::now());
            match self.rx.recv_timeout(wait) {
                Ok(Incoming::Sdu(sdu)) => {
                    if self.pass(Dir::FromSigd, &sdu) {
                        let now = self.now();
                        peer.handle_pdu(now, &sdu);
                    }
                }
                Ok(Incoming::Kernel(m)) => self.kernel_inbox.push_back(m),
                Ok(Incoming::Traced(seen)) => self.trace.push(seen),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => panic!("atmsigd's readers stopped"),
            }
            if std::time::Instant::now() >= end {
                return done(peer, self);
            }
            if let Some(st) = self.exited() {
                panic!("atmsigd exited ({st}):\n{}", self.log());
            }
        }
    }

    /// The SDUs atmsigd sent so far (not dropped ones), oldest first.
    pub fn from_sigd(&self) -> impl Iterator<Item = &[u8]> {
        self.trace
            .iter()
            .filter(|s| s.dir == Dir::FromSigd)
            .map(|s| s.sdu.as_slice())
    }
}

impl AtmSigd {
    /// Hands the signalling VC to a [bridge](crate::bridge) over `link` (an atmtcp cell
    /// link, natm-link's `kind = "tcp"`), in a thread of its own, until this value is
    /// dropped. From then on the SDUs cross the link instead of going to a
    /// [`SaalEndpoint`]; wait for kernel messages and the trace with [`AtmSigd::wait`] or
    /// [`AtmSigd::kernel_wait`]. A second call replaces nothing (`false`).
    pub fn bridge(&mut self, link: Box<dyn natm_link::endpoint::EndpointLink>) -> bool {
        if self.bridge.is_some() {
            return false;
        }
        let (Ok(to_sigd), (tx, rx)) = (self.to_sigd.try_clone(), channel()) else {
            return false;
        };
        let from_readers = std::mem::replace(&mut self.rx, rx);
        self.bridge = Some(Bridge::start(link, from_readers, tx, to_sigd, self.epoch));
        true
    }

    /// Sends one SDU as AAL5 on `vpi.vci` over the bridge's link, as atmsigd's owner would
    /// on a call's VC (`false`: no bridge, or not a UNI VC).
    pub fn send_data(&mut self, vpi: u32, vci: u32, sdu: &[u8]) -> bool {
        match (&self.bridge, natm_core::VcId::uni(vpi, vci)) {
            (Some(b), Ok(vc)) => {
                b.send_data(vc, sdu.to_vec());
                true
            }
            _ => false,
        }
    }

    /// What the bridge carried so far (`None` without one).
    pub fn bridge_stats(&self) -> Option<BridgeStats> {
        self.bridge.as_ref().map(Bridge::stats)
    }

    /// Waits until `done` says so (`true`) or `limit` has passed (`false`), taking kernel
    /// messages and the trace meanwhile; for a bridged atmsigd (nothing is pumped).
    pub fn wait(&mut self, limit: Duration, mut done: impl FnMut(&mut AtmSigd) -> bool) -> bool {
        self.pump(&mut Nobody, limit, |_, s| done(s))
    }

    /// Takes every kernel message and trace entry the bridge has passed on so far, without
    /// waiting: after it, the trace holds everything that crossed the bridge before the
    /// call. For a bridged atmsigd (an SDU for a natm entity would be lost here).
    pub fn sync(&mut self) {
        while let Ok(m) = self.rx.try_recv() {
            match m {
                Incoming::Kernel(m) => self.kernel_inbox.push_back(m),
                Incoming::Traced(seen) => self.trace.push(seen),
                Incoming::Sdu(_) => {}
            }
        }
    }

    /// The first kernel-side message of `kind` atmsigd sent (taken from the inbox), waiting
    /// at most `limit`; for a bridged atmsigd.
    pub fn kernel_wait(
        &mut self,
        kind: crate::kernel::MsgType,
        limit: Duration,
    ) -> Option<KernelMsg> {
        let mut got = None;
        self.wait(limit, |s| {
            if let Some(i) = s.kernel_inbox.iter().position(|m| m.kind == kind) {
                got = s.kernel_inbox.remove(i);
            }
            got.is_some()
        });
        got
    }
}

/// No natm entity: what [`AtmSigd::wait`] pumps.
struct Nobody;

impl SaalEndpoint for Nobody {
    fn handle_pdu(&mut self, _: Instant, _: &[u8]) {}
    fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        None
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _: Instant) {}
}

impl Drop for AtmSigd {
    fn drop(&mut self) {
        if let Some(mut b) = self.bridge.take() {
            b.stop();
        }
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if std::thread::panicking() {
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(120).collect();
            eprintln!("--- atmsigd log (last {} lines) ---", tail.len());
            for l in tail.iter().rev() {
                eprintln!("{l}");
            }
        }
        // Wake both readers: a stop frame in the FIFO we also hold open; shutting our socket
        // down (it is connected to atmsigd's, so nobody else could send to it).
        let _ = self.from_sigd.write_all(&STOP.to_be_bytes());
        if let Some(k) = &self.kernel {
            let _ = k.shutdown(std::net::Shutdown::Both);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Writes one SDU to a FIFO in the shim's framing (be32 length + bytes), in one write: a
/// FIFO keeps writes up to PIPE_BUF whole.
pub(crate) fn write_frame(f: &mut File, sdu: &[u8]) -> std::io::Result<()> {
    let mut frame = Vec::with_capacity(4 + sdu.len());
    frame.extend_from_slice(&u32::try_from(sdu.len()).unwrap_or(u32::MAX).to_be_bytes());
    frame.extend_from_slice(sdu);
    f.write_all(&frame)
}

/// A frame length that ends the FIFO reader.
const STOP: u32 = u32::MAX;

fn read_frames(mut f: File, tx: Sender<Incoming>) {
    loop {
        let mut len = [0u8; 4];
        if f.read_exact(&mut len).is_err() {
            return;
        }
        let len = u32::from_be_bytes(len);
        if len == STOP {
            return;
        }
        let mut sdu = vec![0; len as usize];
        if f.read_exact(&mut sdu).is_err() || tx.send(Incoming::Sdu(sdu)).is_err() {
            return;
        }
    }
}

fn read_kernel(s: UnixDatagram, tx: Sender<Incoming>) {
    let mut buf = [0u8; MSG_LEN + 1];
    loop {
        match s.recv(&mut buf) {
            Ok(MSG_LEN) => {
                let Ok(m) = KernelMsg::parse(&buf[..MSG_LEN]) else {
                    continue;
                };
                if tx.send(Incoming::Kernel(m)).is_err() {
                    return;
                }
            }
            _ => return,
        }
    }
}

/// Removes a directory unless forgotten.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Lower-case hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

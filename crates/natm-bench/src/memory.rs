//! The engine of `natm perf memory`: issue 5's memory goals, measured on real daemon processes.
//!
//! * **Switch**: `natm switchd` (the plan's executable) is started with two shared-memory ports
//!   nobody attaches to and no cross-connect; its VmRSS is read from `/proc/PID/status`,
//!   then `--xcs` UBR cross-connects (default 65,536; `1:VPI.VCI ↔ 2:VPI.VCI`, VPI 0
//!   upward, VCI 32 … 1055) are made over the management socket and VmRSS is read again,
//!   queues empty. Goal: ≤ 64 MiB with 65,536. The difference over the count is the
//!   resident cost per cross-connect. The `memory` of the daemon's `status` is reported
//!   too, but apart: the daemon reads VmRSS after building a reply that lists every
//!   connection (about 2.6 KiB each as JSON values), so with 65,536 connections that
//!   figure measures the reply, not the switch.
//! * **Host**: `natm hostd` is started on a UDP link to a loopback port this process holds
//!   and never reads (no peer needed, nothing ever bounces). Its `vm_rss_bytes` comes from
//!   `status` with no channel open and then with `--channels` direct-path VCs (default
//!   1,000) opened by this process, 2 buffers of 1 KiB each.
//! * **Per-VC state** of the switch core: [`natm_switch::Switch::state_bytes_per_connection`]
//!   (its own accounting of a connection's table entries). Goal: ≤ 256 bytes.
//!
//! Every daemon runs from a private directory under the temporary directory and is stopped
//! (a `shutdown` request or SIGTERM, then SIGKILL after [`STOP_WAIT`]) and the directory
//! removed before the command returns, on success or failure.
//!
//! Cross-connects are made over the socket rather than in the configuration file because
//! the parsed TOML of 65,536 entries, freed after start-up, stays resident in the
//! allocator (about 30 MiB) and would be counted as the switch's.

mod render;

use std::fs;
use std::io::{BufRead, BufReader, BufWriter, Write as _};
use std::net::{SocketAddr, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use natm_core::LineRate;
use natm_core::PvcAddr;
use natm_core::addr::AddrSyntax;
use natm_host::hostd::HostdConfig;
use natm_link::endpoint::{DEFAULT_RING_CELLS, LinkConfig, LinkKind, WaitConfig};
use natm_netem::Impairments;
use natm_switchd::client::{
    Client, Connect, Request, Response, SwitchStatus, decode_response, encode_request,
};
use natm_switchd::config::{ConfigFile, PortFile};
use serde::Serialize;

use crate::Error;

/// Issue 5's goal for the switch with 65,536 cross-connects.
pub const SWITCH_GOAL_BYTES: u64 = 64 << 20;
/// Issue 5's goal for the switch core's state per VC.
pub const STATE_GOAL_BYTES: u64 = 256;
/// How long a daemon has to come up.
const START_WAIT: Duration = Duration::from_secs(60);
/// How long a daemon has to exit once asked.
pub const STOP_WAIT: Duration = Duration::from_secs(3);
/// VCIs per VPI in the generated cross-connects (VCI 32 upward).
pub const VCI_PER_VPI: u32 = 1024;
/// Most cross-connects: 256 UNI VPIs of [`VCI_PER_VPI`].
pub const MAX_XCS: u32 = 256 * VCI_PER_VPI;

/// One goal's line.
#[derive(Debug, Serialize)]
pub struct Line {
    /// What is measured.
    pub what: String,
    /// The goal in bytes, if the issue sets one.
    pub goal_bytes: Option<u64>,
    /// The figure in bytes.
    pub bytes: u64,
    /// Whether the goal is met (`None`: no goal).
    pub met: Option<bool>,
}

/// What `natm perf memory` reports.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Cross-connects in the loaded switch.
    pub xcs: u32,
    /// Switch RSS with no cross-connect.
    pub switch_rss_empty: u64,
    /// Switch RSS with `xcs` cross-connects.
    pub switch_rss_loaded: u64,
    /// (loaded − empty) ÷ xcs.
    pub switch_rss_per_xc: f64,
    /// Switch RSS (its status's `memory`) once it has answered a status request, whose
    /// reply lists every cross-connect.
    pub switch_rss_after_status: u64,
    /// Seconds to make the cross-connects over the management socket.
    pub switch_connect_seconds: f64,
    /// Channels opened on the host daemon.
    pub channels: u32,
    /// hostd RSS with no channel.
    pub hostd_rss_empty: u64,
    /// hostd RSS with `channels` channels.
    pub hostd_rss_loaded: u64,
    /// (loaded − empty) ÷ channels.
    pub hostd_rss_per_channel: f64,
    /// The switch core's own count of state bytes per connection.
    pub state_bytes_per_connection: u64,
    /// Goals and figures.
    pub lines: Vec<Line>,
}

/// A private directory and the daemons started in it; dropping it stops them and removes
/// the directory.
struct Scratch {
    dir: PathBuf,
    natm: PathBuf,
    children: Vec<(Child, Option<PathBuf>)>,
}

impl Scratch {
    fn new(natm: PathBuf) -> Result<Scratch, Error> {
        let dir = std::env::temp_dir().join(format!(
            "natm-perf-memory-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        ));
        fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o700));
        Ok(Scratch {
            dir,
            natm,
            children: Vec::new(),
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Starts `natm VERB --config FILE` with `config`; its output goes to `NAME.log`.
    fn spawn(&mut self, verb: &str, name: &str, config: &str) -> Result<usize, Error> {
        let file = self.path(&format!("{name}.toml"));
        fs::write(&file, config)
            .map_err(|e| Error::io(format!("cannot write {}", file.display()), e))?;
        let log = self.path(&format!("{name}.log"));
        let out = fs::File::create(&log)
            .map_err(|e| Error::io(format!("cannot create {}", log.display()), e))?;
        let err = out
            .try_clone()
            .map_err(|e| Error::io(log.display().to_string(), e))?;
        let child = Command::new(&self.natm)
            .arg(verb)
            .arg("--config")
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| Error::io(format!("cannot start natm {verb}"), e))?;
        self.children.push((child, Some(log)));
        Ok(self.children.len() - 1)
    }

    /// Fails with the daemon's log if it has exited.
    fn check_alive(&mut self, i: usize, what: &str) -> Result<(), Error> {
        let (child, log) = &mut self.children[i];
        if let Ok(Some(status)) = child.try_wait() {
            let text = log
                .as_ref()
                .and_then(|l| fs::read_to_string(l).ok())
                .unwrap_or_default();
            return Err(Error::Exited {
                what: what.to_string(),
                status,
                log: text.trim().to_string(),
            });
        }
        Ok(())
    }

    /// Stops daemon `i`: SIGTERM, then SIGKILL after [`STOP_WAIT`]; waits for it.
    fn stop(&mut self, i: usize) {
        let (child, _) = &mut self.children[i];
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let until = Instant::now() + STOP_WAIT;
        while Instant::now() < until {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for i in 0..self.children.len() {
            self.stop(i);
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The switch daemon's configuration: two shm ports nobody attaches to, no cross-connect.
fn switch_config(scratch: &Scratch, name: &str) -> String {
    let port = |id: u16| PortFile {
        id,
        link: link_config(LinkKind::Shm {
            path: scratch.path(&format!("{name}-p{id}.sock")),
        }),
        role: None,
        signalling: None,
    };
    let config = ConfigFile {
        name: name.to_string(),
        wait: None,
        cpu: None,
        management: scratch.path(&format!("{name}.sock")),
        prefix: None,
        ports: vec![port(1), port(2)],
        xcs: Vec::new(),
        routes: Vec::new(),
    };
    toml::to_string(&config).expect("a switchd configuration serialises")
}

/// The host daemon's configuration: a UDP link to `peer`, nothing listening there.
fn hostd_config(socket: &Path, peer: SocketAddr) -> String {
    let config = HostdConfig {
        name: "perf-memory".into(),
        socket: Some(socket.to_path_buf()),
        wait: Default::default(),
        address: None,
        link: link_config(LinkKind::Udp {
            local: SocketAddr::from(([127, 0, 0, 1], 0)),
            peer,
        }),
    };
    toml::to_string(&config).expect("a hostd configuration serialises")
}

/// A link of `kind` with every other setting at its default (unlimited, unimpaired).
fn link_config(kind: LinkKind) -> LinkConfig {
    LinkConfig {
        kind,
        rate: LineRate::Unlimited,
        impair: Impairments::default(),
        wait: WaitConfig::default(),
        ring_cells: DEFAULT_RING_CELLS,
    }
}

/// The management request that makes cross-connect `i` (`1:VPI.VCI ↔ 2:VPI.VCI`, UBR).
fn xc_request(i: u32) -> Connect {
    let (vpi, vci) = (i / VCI_PER_VPI, 32 + i % VCI_PER_VPI);
    Connect {
        a: format!("1:{vpi}.{vci}"),
        b: format!("2:{vpi}.{vci}"),
        qos: "ubr".into(),
        ..Connect::default()
    }
}

/// A process's resident bytes (VmRSS), read from `/proc` without asking it anything.
fn proc_rss(pid: u32) -> Result<u64, Error> {
    natm_nic::procfs::resident_bytes(Some(pid)).map_err(|e| Error::Daemon(e.to_string()))
}

/// The switch's status; a refusal is an error.
fn switch_status(socket: &Path) -> Result<SwitchStatus, Error> {
    Client::new(socket, Duration::from_secs(10))
        .status()
        .map_err(|source| Error::Switchd {
            what: format!("switchd {} status", socket.display()),
            source,
        })
}

/// Sends `n` connect requests on one management connection, a reader thread taking the
/// replies as they come (the daemon answers in order); fails on the first refusal.
fn make_xcs(socket: &Path, n: u32) -> Result<(), Error> {
    let fail = |e: std::io::Error| Error::io(format!("switchd {}", socket.display()), e);
    let stream = UnixStream::connect(socket).map_err(fail)?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(fail)?;
    let reader = stream.try_clone().map_err(fail)?;
    let replies = std::thread::spawn(move || -> Result<(), String> {
        let mut lines = BufReader::new(reader).lines();
        for i in 0..n {
            let line = match lines.next() {
                Some(Ok(l)) => l,
                Some(Err(e)) => return Err(format!("reply {}: {e}", i + 1)),
                None => return Err(format!("closed after {i} replies")),
            };
            match decode_response(line.as_bytes()) {
                Ok(Response::Connected { .. }) => {}
                Ok(Response::Error(e)) => {
                    return Err(format!("cross-connect {} refused: {e}", i + 1));
                }
                Ok(other) => return Err(format!("reply {}: a {} response", i + 1, other.op())),
                Err(e) => return Err(format!("reply {}: {e}", i + 1)),
            }
        }
        Ok(())
    });
    let mut writer = BufWriter::new(&stream);
    for i in 0..n {
        let line = encode_request(&Request::Connect(xc_request(i)));
        if let Err(e) = writer.write_all(line.as_bytes()) {
            // The reader says why the daemon stopped listening, if it knows.
            let why = replies.join().ok().and_then(Result::err);
            return Err(Error::Daemon(format!(
                "switchd {}: {}",
                socket.display(),
                why.unwrap_or_else(|| e.to_string())
            )));
        }
    }
    writer.flush().map_err(fail)?;
    drop(writer);
    replies
        .join()
        .map_err(|_| Error::Panicked("the reply reader".into()))?
        .map_err(|e| Error::Daemon(format!("switchd {}: {e}", socket.display())))
}

/// What one switch daemon measured.
struct SwitchFigures {
    /// VmRSS with no cross-connect.
    empty: u64,
    /// VmRSS with `xcs` cross-connects, before any status request.
    loaded: u64,
    /// The `memory` of the status reply that lists them all.
    status: u64,
    /// Seconds to make them over the management socket.
    connect_seconds: f64,
}

/// Starts a switch, reads its resident size from `/proc` with no cross-connect and after
/// making `xcs` over the management socket, then the `memory` of its status; stops it.
fn measure_switch(scratch: &mut Scratch, xcs: u32) -> Result<SwitchFigures, Error> {
    let name = "switch";
    let config = switch_config(scratch, name);
    let socket = scratch.path(&format!("{name}.sock"));
    let t0 = Instant::now();
    let i = scratch.spawn("switchd", name, &config)?;
    let pid = scratch.children[i].0.id();
    loop {
        scratch.check_alive(i, "natm switchd")?;
        if socket.exists() && switch_status(&socket).is_ok() {
            break;
        }
        if t0.elapsed() > START_WAIT {
            return Err(Error::Daemon(format!(
                "natm switchd did not answer within {START_WAIT:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let empty = proc_rss(pid)?;
    let t1 = Instant::now();
    make_xcs(&socket, xcs)?;
    let connect_seconds = t1.elapsed().as_secs_f64();
    let loaded = proc_rss(pid)?;
    let status = switch_status(&socket)?;
    let n = status.connections.len();
    if n != xcs as usize {
        return Err(Error::Daemon(format!(
            "natm switchd holds {n} cross-connects, {xcs} were made"
        )));
    }
    let memory = status.memory.ok_or_else(|| {
        Error::Daemon("switchd's status has no `memory` (VmRSS not readable)".into())
    })?;
    let _ = Client::new(&socket, Duration::from_secs(10)).shutdown();
    scratch.stop(i);
    Ok(SwitchFigures {
        empty,
        loaded,
        status: memory,
        connect_seconds,
    })
}

/// Starts a host daemon, reads its RSS with no channel and with `channels` open; stops it.
fn measure_hostd(scratch: &mut Scratch, channels: u32) -> Result<(u64, u64), Error> {
    // The link's peer: a port this process holds and never reads, so nothing bounces.
    let peer = UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr().map(|a| (s, a)))
        .map_err(|e| Error::io("cannot bind a loopback UDP port", e))?;
    let socket = scratch.path("host.sock");
    let config = hostd_config(&socket, peer.1);
    let i = scratch.spawn("hostd", "host", &config)?;
    let t0 = Instant::now();
    let host = loop {
        scratch.check_alive(i, "natm hostd")?;
        if socket.exists()
            && let Ok(h) = natm::Host::connect_path(&socket)
        {
            break h;
        }
        if t0.elapsed() > START_WAIT {
            return Err(Error::Daemon(format!(
                "natm hostd did not answer within {START_WAIT:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let rss = |host: &natm::Host| {
        host.status()
            .map(|s| s.vm_rss_bytes)
            .map_err(|source| Error::Natm {
                what: "hostd status".into(),
                source,
            })
    };
    let empty = rss(&host)?;
    let mut open = Vec::with_capacity(channels as usize);
    for k in 0..channels {
        let text = format!("0.{}.{}", k / VCI_PER_VPI, 32 + k % VCI_PER_VPI);
        let addr = PvcAddr::parse_with(&text, AddrSyntax::EXACT)
            .map_err(|e| Error::Daemon(format!("VC {text}: {e}")))?;
        let vc = host
            .open(
                natm::VcOptions::new(addr)
                    .buffers(2)
                    .buffer_size(1024)
                    .notify(natm::NotifyMode::EventFd),
            )
            .map_err(|source| Error::Natm {
                what: format!("opening channel {} ({text})", k + 1),
                source,
            })?;
        open.push(vc);
    }
    let loaded = rss(&host)?;
    drop(open);
    drop(host);
    drop(peer);
    scratch.stop(i);
    Ok((empty, loaded))
}

/// A `natm perf memory` run: what [`run`] does.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Cross-connects made in the switch, at most [`MAX_XCS`].
    pub xcs: u32,
    /// Channels opened on the host daemon, at most hostd's `MAX_CHANNELS`.
    pub channels: u32,
    /// The `natm` executable whose `switchd` and `hostd` subcommands run the daemons.
    pub natm: PathBuf,
}

/// Starts the daemons of `plan`, measures them, stops them and returns the report
/// (prints nothing).
pub fn run(args: &Plan) -> Result<Report, Error> {
    let mut scratch = Scratch::new(args.natm.clone())?;
    let sw = measure_switch(&mut scratch, args.xcs)?;
    let (switch_empty, switch_loaded) = (sw.empty, sw.loaded);
    let (hostd_empty, hostd_loaded) = measure_hostd(&mut scratch, args.channels)?;
    drop(scratch);
    let state = natm_switch::Switch::state_bytes_per_connection() as u64;
    let per = |a: u64, b: u64, n: u32| {
        if n == 0 {
            0.0
        } else {
            (b as f64 - a as f64) / f64::from(n)
        }
    };
    let lines = vec![
        Line {
            what: format!("switchd RSS, {} cross-connects", args.xcs),
            goal_bytes: Some(SWITCH_GOAL_BYTES),
            bytes: switch_loaded,
            met: Some(switch_loaded <= SWITCH_GOAL_BYTES),
        },
        Line {
            what: "  after a status reply listing them".into(),
            goal_bytes: None,
            bytes: sw.status,
            met: None,
        },
        Line {
            what: "switchd RSS, no cross-connect".into(),
            goal_bytes: None,
            bytes: switch_empty,
            met: None,
        },
        Line {
            what: format!("hostd RSS, {} channels", args.channels),
            goal_bytes: None,
            bytes: hostd_loaded,
            met: None,
        },
        Line {
            what: "hostd RSS, no channel".into(),
            goal_bytes: None,
            bytes: hostd_empty,
            met: None,
        },
        Line {
            what: "switch core state per VC".into(),
            goal_bytes: Some(STATE_GOAL_BYTES),
            bytes: state,
            met: Some(state <= STATE_GOAL_BYTES),
        },
    ];
    Ok(Report {
        xcs: args.xcs,
        switch_rss_empty: switch_empty,
        switch_rss_loaded: switch_loaded,
        switch_rss_per_xc: per(switch_empty, switch_loaded, args.xcs),
        switch_rss_after_status: sw.status,
        switch_connect_seconds: sw.connect_seconds,
        channels: args.channels,
        hostd_rss_empty: hostd_empty,
        hostd_rss_loaded: hostd_loaded,
        hostd_rss_per_channel: per(hostd_empty, hostd_loaded, args.channels),
        state_bytes_per_connection: state,
        lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_switch_config_and_requests() {
        let s = Scratch::new(PathBuf::from("natm")).unwrap();
        let c = natm_switchd::SwitchdConfig::from_toml(&switch_config(&s, "t")).unwrap();
        assert_eq!(c.ports.len(), 2);
        assert!(c.xcs.is_empty());
        let r = xc_request(2048);
        assert_eq!((r.a.as_str(), r.b.as_str()), ("1:2.32", "2:2.32"));
        assert_eq!(xc_request(1).a, "1:0.33");
        let peer = SocketAddr::from(([127, 0, 0, 1], 9));
        let h = HostdConfig::from_toml(&hostd_config(&s.path("h.sock"), peer)).unwrap();
        assert_eq!(h.socket_path(), s.path("h.sock"));
        assert!(proc_rss(std::process::id()).unwrap() > 0);
    }
}

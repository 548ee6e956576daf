//! Starting, restarting and stopping a lab's daemons.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::Error;
use crate::state::{Daemon, LabState, is_our_daemon, load_state, write_state};
use crate::topology::{self, Addresses, LinkKind, Topology};

fn free_port(udp: bool) -> Result<u16, Error> {
    let r = if udp {
        std::net::UdpSocket::bind("127.0.0.1:0").and_then(|s| s.local_addr())
    } else {
        std::net::TcpListener::bind("127.0.0.1:0").and_then(|s| s.local_addr())
    };
    r.map(|a| a.port()).map_err(Error::NoPort)
}

/// Starts the daemons of `topo` (parsed from `text`, with the `rate` override) in the
/// runtime directory `dir`, each daemon run by the executable `natm`, and waits until each
/// answers and every host's link is up; `natm lab up` without the printing. A lab already
/// running in `dir` is an error; when a daemon or a host's link does not come up, the
/// daemons started so far are stopped again and the directory removed.
pub fn start(
    dir: &Path,
    topo: &Topology,
    text: String,
    rate: Option<String>,
    natm: &Path,
) -> Result<LabState, Error> {
    let dir = dir.to_path_buf();
    if let Ok(state) = load_state(&dir) {
        if state
            .daemons
            .iter()
            .any(|d| is_our_daemon(d.pid, &d.config))
        {
            return Err(Error::AlreadyUp { dir });
        }
        // A lab that died without `down`: clear its leftovers.
        remove_lab_files(&dir, &state);
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|source| Error::CreateDir {
            dir: dir.clone(),
            source,
        })?;
    let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o700));

    let mut addrs = Addresses::default();
    for (i, l) in topo.links.iter().enumerate() {
        match l.kind {
            LinkKind::Shm => {}
            LinkKind::Udp => {
                let a = format!("127.0.0.1:{}", free_port(true)?);
                let b = format!("127.0.0.1:{}", free_port(true)?);
                addrs.udp.insert(i, (a, b));
            }
            LinkKind::Tcp => {
                addrs
                    .tcp
                    .insert(i, format!("127.0.0.1:{}", free_port(false)?));
            }
        }
    }

    let mut state = LabState {
        dir: dir.clone(),
        daemons: Vec::new(),
        topology: text,
        rate,
    };
    let nodes = topo
        .switches
        .iter()
        .map(|s| (s.as_str(), "switch"))
        .chain(topo.hosts.iter().map(|h| (h.as_str(), "host")));
    // Every configuration first, so that one the daemons' types refuse starts nothing.
    let mut configs = Vec::new();
    for (name, role) in nodes {
        let (config_text, verb) = if role == "switch" {
            let c = topology::switch_config(topo, name, &dir, &addrs)?;
            (topology::to_toml(&c)?, "switchd")
        } else {
            let c = topology::host_config(topo, name, &dir, &addrs)?;
            (topology::to_toml(&c)?, "hostd")
        };
        configs.push((name, role, config_text, verb));
    }
    for (name, role, config_text, verb) in configs {
        let config = topology::path_in(&dir, name, ".toml");
        fs::write(&config, config_text).map_err(|source| Error::File {
            path: config.clone(),
            source,
        })?;
        let (mut daemon, mut child) = spawn(natm, &dir, name, role, verb)?;
        daemon.address = topo.address_of(name);
        daemon.prefix = topo.prefix_of(name);
        state.daemons.push(daemon.clone());
        write_state(&state)?;
        if let Err(e) = wait_ready(&daemon, &mut child, Duration::from_secs(10)) {
            let _ = down(&dir);
            return Err(e);
        }
    }
    if let Err(e) = wait_links_up(&state, Duration::from_secs(10)) {
        let _ = down(&dir);
        return Err(e);
    }
    Ok(state)
}

/// Waits until every host reports its link to the switch up, so that a command run right
/// after `natm lab up` finds the lab ready (on a loaded machine a host's link can take a
/// few hundred milliseconds to connect after its socket answers).
fn wait_links_up(state: &LabState, timeout: Duration) -> Result<(), Error> {
    let deadline = Instant::now() + timeout;
    for d in state.daemons.iter().filter(|d| d.role == "host") {
        loop {
            let what = match natm::Host::connect_path(&d.socket).and_then(|h| h.status()) {
                Ok(s) if s.link.up => break,
                Ok(s) => format!("{}: down", s.link.description),
                Err(e) => e.to_string(),
            };
            if Instant::now() >= deadline {
                return Err(Error::LinkNotUp {
                    name: d.name.clone(),
                    timeout,
                    what,
                    log: log_tail(&d.log),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    Ok(())
}

/// A lab this process started with [`start`] (its daemons are this process's children),
/// taken down when dropped: on an error, a panic or an interruption too.
pub struct OwnedLab {
    /// What `lab.json` records.
    pub state: LabState,
    /// Names the command in the message printed when a drop takes the lab down.
    who: &'static str,
    up: bool,
}

impl OwnedLab {
    /// [`start`]s the lab; `who` names the command in the message a drop prints.
    pub fn start(
        who: &'static str,
        dir: &Path,
        topo: &Topology,
        text: String,
        rate: Option<String>,
        natm: &Path,
    ) -> Result<OwnedLab, Error> {
        let state = start(dir, topo, text, rate, natm)?;
        Ok(OwnedLab {
            state,
            who,
            up: true,
        })
    }

    /// A daemon's socket by node name.
    pub fn socket(&self, name: &str) -> Result<PathBuf, Error> {
        self.daemon(name).map(|d| d.socket.clone())
    }

    /// A daemon's process id by node name.
    pub fn pid(&self, name: &str) -> Result<i32, Error> {
        self.daemon(name).map(|d| d.pid)
    }

    fn daemon(&self, name: &str) -> Result<&Daemon, Error> {
        self.state
            .daemons
            .iter()
            .find(|d| d.name == name)
            .ok_or_else(|| Error::NoNode {
                who: self.who,
                name: name.to_string(),
            })
    }

    /// Stops the daemons and removes what the lab made; returns how many were running.
    pub fn down(&mut self) -> Result<usize, Error> {
        self.up = false;
        let stopped = down(&self.state.dir);
        self.reap();
        stopped
    }

    /// Collects the exit status of the daemons, which are this process's children, so
    /// that none stays behind as a zombie while the command runs on.
    fn reap(&self) {
        for d in &self.state.daemons {
            if let Some(pid) = rustix::process::Pid::from_raw(d.pid) {
                let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
            }
        }
    }
}

impl Drop for OwnedLab {
    fn drop(&mut self) {
        if self.up {
            match self.down() {
                Ok(n) => eprintln!("{}: lab taken down ({n} daemons stopped)", self.who),
                Err(e) => eprintln!("{}: taking the lab down: {e}", self.who),
            }
        }
    }
}

/// Starts one daemon from its configuration file in the runtime directory; its output
/// goes to `NAME.log` (appended, so a restart keeps the earlier run's lines).
fn spawn(
    exe: &Path,
    dir: &Path,
    name: &str,
    role: &str,
    verb: &str,
) -> Result<(Daemon, std::process::Child), Error> {
    let config = topology::path_in(dir, name, ".toml");
    let log = topology::path_in(dir, name, ".log");
    let socket = topology::path_in(dir, name, ".sock");
    let log_file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .map_err(|source| Error::File {
            path: log.clone(),
            source,
        })?;
    let log_err = log_file.try_clone().map_err(|source| Error::File {
        path: log.clone(),
        source,
    })?;
    let child = Command::new(exe)
        .arg(verb)
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err)
        .process_group(0)
        .spawn()
        .map_err(|source| Error::Spawn {
            name: name.to_string(),
            source,
        })?;
    let daemon = Daemon {
        name: name.to_string(),
        role: role.to_string(),
        pid: child.id() as i32,
        socket,
        config,
        log,
        address: None,
        prefix: None,
    };
    Ok((daemon, child))
}

/// Stops daemon `node` of the lab in `dir` (SIGKILL when `kill`, as a crash would, else
/// SIGTERM), waits `pause`, and starts it again with `natm` from the same configuration;
/// the others keep running. Returns the old process id and the new daemon.
pub fn restart(
    dir: &Path,
    node: &str,
    kill: bool,
    pause: Duration,
    natm: &Path,
) -> Result<(i32, Daemon), Error> {
    let mut state = load_state(dir)?;
    let Some(i) = state.daemons.iter().position(|d| d.name == node) else {
        return Err(Error::NoSuchNode {
            node: node.to_string(),
            nodes: state.daemons.iter().map(|d| d.name.clone()).collect(),
        });
    };
    let old = state.daemons[i].clone();
    if is_our_daemon(old.pid, &old.config)
        && let Some(pid) = rustix::process::Pid::from_raw(old.pid)
    {
        let sig = if kill {
            rustix::process::Signal::KILL
        } else {
            rustix::process::Signal::TERM
        };
        let _ = rustix::process::kill_process(pid, sig);
        let deadline = Instant::now() + Duration::from_secs(3);
        while is_our_daemon(old.pid, &old.config) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if is_our_daemon(old.pid, &old.config) {
            return Err(Error::DidNotStop {
                name: old.name,
                pid: old.pid,
            });
        }
    }
    // A killed daemon leaves its socket file behind; the new one must not connect to it.
    let _ = fs::remove_file(&old.socket);
    std::thread::sleep(pause);
    let verb = if old.role == "switch" {
        "switchd"
    } else {
        "hostd"
    };
    let (mut daemon, mut child) = spawn(natm, dir, &old.name, &old.role, verb)?;
    daemon.address = old.address;
    daemon.prefix = old.prefix;
    state.daemons[i] = daemon.clone();
    write_state(&state)?;
    wait_ready(&daemon, &mut child, Duration::from_secs(10))?;
    Ok((old.pid, daemon))
}

fn log_tail(log: &Path) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// Waits until the daemon's socket accepts a connection.
fn wait_ready(d: &Daemon, child: &mut std::process::Child, timeout: Duration) -> Result<(), Error> {
    let deadline = Instant::now() + timeout;
    loop {
        if UnixStream::connect(&d.socket).is_ok() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Error::Exited {
                name: d.name.clone(),
                role: d.role.clone(),
                status,
                log: log_tail(&d.log),
            });
        }
        if Instant::now() >= deadline {
            return Err(Error::NotReady {
                name: d.name.clone(),
                role: d.role.clone(),
                socket: d.socket.clone(),
                timeout,
                log: log_tail(&d.log),
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Stops a lab's daemons and removes its directory; returns how many were running.
pub fn down(dir: &Path) -> Result<usize, Error> {
    let state = load_state(dir)?;
    let live: Vec<&Daemon> = state
        .daemons
        .iter()
        .filter(|d| is_our_daemon(d.pid, &d.config))
        .collect();
    // Hosts first, so that no switch port sees a host vanish after the switch is gone.
    for d in live.iter().rev() {
        if let Some(pid) = rustix::process::Pid::from_raw(d.pid) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    while live.iter().any(|d| is_our_daemon(d.pid, &d.config)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    for d in &live {
        if is_our_daemon(d.pid, &d.config)
            && let Some(pid) = rustix::process::Pid::from_raw(d.pid)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while live.iter().any(|d| is_our_daemon(d.pid, &d.config)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    if let Some(d) = live.iter().find(|d| is_our_daemon(d.pid, &d.config)) {
        return Err(Error::Kept {
            name: d.name.clone(),
            pid: d.pid,
            dir: dir.to_path_buf(),
        });
    }
    remove_lab_files(dir, &state);
    match fs::remove_dir(dir) {
        Ok(()) => {}
        // Files the lab did not make stay, and so does the directory holding them.
        Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => {}
        Err(source) => {
            return Err(Error::RemoveDir {
                dir: dir.to_path_buf(),
                source,
            });
        }
    }
    Ok(live.len())
}

/// Removes what a lab made in `dir` — its daemons' configurations, logs and sockets, the
/// link sockets and `lab.json` — and nothing else, so that `--dir` pointing at a directory
/// with other files in it never loses them.
fn remove_lab_files(dir: &Path, state: &LabState) {
    for d in &state.daemons {
        for f in [&d.config, &d.log, &d.socket] {
            if f.parent() == Some(dir) {
                let _ = fs::remove_file(f);
            }
        }
    }
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("link") && name.ends_with(".sock") {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    let _ = fs::remove_file(dir.join("lab.json"));
}

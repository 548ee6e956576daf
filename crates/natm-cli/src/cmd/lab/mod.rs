//! `natm lab up|status|down`: an ATM network of switch and host daemons on this machine.
//!
//! `up` reads a topology ([`topology`]; the default is one switch `s1`, hosts `h1` and `h2`
//! on OC-3c shared-memory links, UBR PVCs 0.100–0.109), writes each daemon's configuration
//! into the runtime directory, starts `natm switchd` for every switch and then `natm hostd`
//! for every host as background processes (their own process groups, output in
//! `NAME.log`), waits until each answers on its socket, and records them in `lab.json`.
//! `status` asks each daemon for its state; `down` stops them (SIGTERM, then SIGKILL after
//! 3 s) and removes what it made in the runtime directory (the directory too, unless it
//! holds files of someone else's). Shared memory is memfd-backed, so it goes with
//! the processes: nothing is left in /dev/shm.
//!
//! The runtime directory is `--dir`, else `$NATM_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/natm`,
//! else `/tmp/natm-UID` — the same rule the `natm` API uses to find a host's socket, so
//! applications reach the lab's hosts by name.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{CliError, CmdResult};

pub mod topology;

use topology::{Addresses, LinkKind, Topology};

/// `natm lab …`
#[derive(Subcommand)]
pub enum LabCommand {
    /// Start the lab's daemons in the background.
    Up(UpArgs),
    /// Show the lab's daemons and what they carry.
    Status(StatusArgs),
    /// Stop the lab's daemons and remove what the lab made in its runtime directory.
    Down(DirArgs),
    /// Stop one daemon and start it again from the same configuration.
    Restart(RestartArgs),
}

/// Options of `natm lab restart`.
#[derive(Args, Debug)]
pub struct RestartArgs {
    /// The switch or host to restart.
    pub node: String,
    /// Kill it with SIGKILL (a crash) instead of stopping it with SIGTERM.
    #[arg(long)]
    pub kill: bool,
    /// Milliseconds to wait before starting it again.
    #[arg(long, default_value_t = 0)]
    pub pause_ms: u64,
    #[command(flatten)]
    pub dir: DirArgs,
}

/// Where the lab lives.
#[derive(Args, Debug, Clone)]
pub struct DirArgs {
    /// Runtime directory (default: $NATM_RUNTIME_DIR, $XDG_RUNTIME_DIR/natm or /tmp/natm-UID).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// Options of `natm lab up`.
#[derive(Args, Debug)]
pub struct UpArgs {
    /// Topology file (TOML); default: one switch, two hosts, OC-3c shm links, UBR PVCs
    /// 0.100-0.109.
    #[arg(long)]
    pub topology: Option<PathBuf>,
    /// Replace every link's line rate: unlimited, oc3, oc12, 25m, ds3 or cells/s.
    #[arg(long)]
    pub rate: Option<String>,
    /// Print the lab as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub dir: DirArgs,
}

/// Options of `natm lab status`.
#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub dir: DirArgs,
}

/// One daemon of a running lab, as `lab.json` records it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Daemon {
    /// Node name.
    pub name: String,
    /// "switch" or "host".
    pub role: String,
    /// Process id.
    pub pid: i32,
    /// Its socket (management for a switch, channel manager for a host).
    pub socket: PathBuf,
    /// Its configuration file.
    pub config: PathBuf,
    /// Its log.
    pub log: PathBuf,
}

/// `lab.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LabState {
    /// The runtime directory.
    pub dir: PathBuf,
    /// The daemons, switches first.
    pub daemons: Vec<Daemon>,
    /// The topology text the lab was made from.
    pub topology: String,
    /// The `--rate` override, if any.
    pub rate: Option<String>,
}

/// The runtime directory by the documented rule.
pub fn runtime_dir(explicit: Option<&Path>) -> PathBuf {
    if let Some(d) = explicit {
        return d.to_path_buf();
    }
    if let Some(d) = std::env::var_os("NATM_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("natm");
    }
    PathBuf::from(format!("/tmp/natm-{}", rustix::process::getuid().as_raw()))
}

/// Runs a `natm lab` subcommand.
pub fn run(command: LabCommand) -> CmdResult {
    match command {
        LabCommand::Up(args) => up(args),
        LabCommand::Status(args) => status(args),
        LabCommand::Restart(args) => restart(args),
        LabCommand::Down(args) => down(&runtime_dir(args.dir.as_deref())).map(|stopped| {
            println!("lab down: stopped {stopped} daemon(s)");
        }),
    }
}

/// Reads `lab.json` of a running lab.
pub fn load_state(dir: &Path) -> Result<LabState, CliError> {
    let path = dir.join("lab.json");
    let text = fs::read_to_string(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            CliError::failure(format!(
                "no lab is up in {} (start one with `natm lab up`)",
                dir.display()
            ))
        } else {
            CliError::failure(format!("{}: {e}", path.display()))
        }
    })?;
    serde_json::from_str(&text)
        .map_err(|e| CliError::failure(format!("{}: not a lab state file: {e}", path.display())))
}

/// Whether `pid` is a live `natm` daemon started with `config` (guards against pid reuse).
fn is_our_daemon(pid: i32, config: &Path) -> bool {
    let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    // A zombie has an empty command line: it is gone for our purposes.
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let config = config.as_os_str().as_encoded_bytes();
    !cmdline.is_empty() && args.contains(&config)
}

fn free_port(udp: bool) -> Result<u16, CliError> {
    let r = if udp {
        std::net::UdpSocket::bind("127.0.0.1:0").and_then(|s| s.local_addr())
    } else {
        std::net::TcpListener::bind("127.0.0.1:0").and_then(|s| s.local_addr())
    };
    r.map(|a| a.port())
        .map_err(|e| CliError::failure(format!("cannot find a free loopback port: {e}")))
}

fn up(args: UpArgs) -> CmdResult {
    let dir = runtime_dir(args.dir.dir.as_deref());
    let text = match &args.topology {
        Some(p) => fs::read_to_string(p)
            .map_err(|e| CliError::usage(format!("--topology {}: {e}", p.display())))?,
        None => topology::DEFAULT_TOPOLOGY.to_string(),
    };
    let topo = Topology::parse(&text, args.rate.as_deref()).map_err(|e| {
        CliError::usage(match &args.topology {
            Some(p) => format!("--topology {}: {e}", p.display()),
            None => e.to_string(),
        })
    })?;
    let state = start(&dir, &topo, text, args.rate.clone())?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&state_json(&state)).unwrap_or_default()
        );
        return Ok(());
    }
    println!("lab up in {}", dir.display());
    for d in &state.daemons {
        println!(
            "  {:<6} {:<6} pid {:<7} socket {}",
            d.name,
            d.role,
            d.pid,
            d.socket.display()
        );
    }
    println!("PVCs: {}", summarize_pvcs(&topo));
    println!("try: natm ping 0.100   natm perf rr   natm stat   natm lab down");
    Ok(())
}

/// Starts the daemons of `topo` (parsed from `text`, with the `rate` override) in the
/// runtime directory `dir` and waits until each answers; `natm lab up` without the
/// printing. A lab already running in `dir` is an error; when a daemon does not come up,
/// the ones started so far are stopped again and the directory removed.
pub fn start(
    dir: &Path,
    topo: &Topology,
    text: String,
    rate: Option<String>,
) -> Result<LabState, CliError> {
    let dir = dir.to_path_buf();
    if let Ok(state) = load_state(&dir) {
        if state
            .daemons
            .iter()
            .any(|d| is_our_daemon(d.pid, &d.config))
        {
            return Err(CliError::failure(format!(
                "a lab is already up in {} (`natm lab down` first)",
                dir.display()
            )));
        }
        // A lab that died without `down`: clear its leftovers.
        remove_lab_files(&dir, &state);
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| CliError::failure(format!("cannot create {}: {e}", dir.display())))?;
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

    let exe = std::env::current_exe()
        .map_err(|e| CliError::failure(format!("cannot find the natm binary: {e}")))?;
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
    for (name, role) in nodes {
        let (config_text, verb) = if role == "switch" {
            (topology::switch_config(topo, name, &dir, &addrs), "switchd")
        } else {
            (topology::host_config(topo, name, &dir, &addrs), "hostd")
        };
        let config = topology::path_in(&dir, name, ".toml");
        fs::write(&config, config_text)
            .map_err(|e| CliError::failure(format!("{}: {e}", config.display())))?;
        let (daemon, mut child) = spawn(&exe, &dir, name, role, verb)?;
        state.daemons.push(daemon.clone());
        write_state(&state)?;
        if let Err(e) = wait_ready(&daemon, &mut child, Duration::from_secs(10)) {
            let _ = down(&dir);
            return Err(e);
        }
    }
    Ok(state)
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
    ) -> Result<OwnedLab, CliError> {
        let state = start(dir, topo, text, rate)?;
        Ok(OwnedLab {
            state,
            who,
            up: true,
        })
    }

    /// A daemon's socket by node name.
    pub fn socket(&self, name: &str) -> Result<PathBuf, CliError> {
        self.daemon(name).map(|d| d.socket.clone())
    }

    /// A daemon's process id by node name.
    pub fn pid(&self, name: &str) -> Result<i32, CliError> {
        self.daemon(name).map(|d| d.pid)
    }

    fn daemon(&self, name: &str) -> Result<&Daemon, CliError> {
        self.state
            .daemons
            .iter()
            .find(|d| d.name == name)
            .ok_or_else(|| CliError::failure(format!("the {} lab has no {name}", self.who)))
    }

    /// Stops the daemons and removes what the lab made; returns how many were running.
    pub fn down(&mut self) -> Result<usize, CliError> {
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
                Err(e) => eprintln!("{}: taking the lab down: {}", self.who, e.message),
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
) -> Result<(Daemon, std::process::Child), CliError> {
    let config = topology::path_in(dir, name, ".toml");
    let log = topology::path_in(dir, name, ".log");
    let socket = topology::path_in(dir, name, ".sock");
    let log_file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .map_err(|e| CliError::failure(format!("{}: {e}", log.display())))?;
    let log_err = log_file
        .try_clone()
        .map_err(|e| CliError::failure(format!("{}: {e}", log.display())))?;
    let child = Command::new(exe)
        .arg(verb)
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err)
        .process_group(0)
        .spawn()
        .map_err(|e| CliError::failure(format!("cannot start {name}: {e}")))?;
    let daemon = Daemon {
        name: name.to_string(),
        role: role.to_string(),
        pid: child.id() as i32,
        socket,
        config,
        log,
    };
    Ok((daemon, child))
}

/// `natm lab restart NODE`: stops one daemon (SIGKILL with `--kill`, as a crash would) and
/// starts it again from the same configuration; the others keep running.
fn restart(args: RestartArgs) -> CmdResult {
    let dir = runtime_dir(args.dir.dir.as_deref());
    let mut state = load_state(&dir)?;
    let Some(i) = state.daemons.iter().position(|d| d.name == args.node) else {
        let names: Vec<&str> = state.daemons.iter().map(|d| d.name.as_str()).collect();
        return Err(CliError::usage(format!(
            "{}: the lab's nodes are {}",
            args.node,
            names.join(", ")
        )));
    };
    let old = state.daemons[i].clone();
    if is_our_daemon(old.pid, &old.config)
        && let Some(pid) = rustix::process::Pid::from_raw(old.pid)
    {
        let sig = if args.kill {
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
            return Err(CliError::failure(format!(
                "{} (pid {}) did not stop",
                old.name, old.pid
            )));
        }
    }
    // A killed daemon leaves its socket file behind; the new one must not connect to it.
    let _ = fs::remove_file(&old.socket);
    std::thread::sleep(Duration::from_millis(args.pause_ms));
    let exe = std::env::current_exe()
        .map_err(|e| CliError::failure(format!("cannot find the natm binary: {e}")))?;
    let verb = if old.role == "switch" {
        "switchd"
    } else {
        "hostd"
    };
    let (daemon, mut child) = spawn(&exe, &dir, &old.name, &old.role, verb)?;
    state.daemons[i] = daemon.clone();
    write_state(&state)?;
    wait_ready(&daemon, &mut child, Duration::from_secs(10))?;
    println!(
        "{} restarted: pid {} -> {}",
        daemon.name, old.pid, daemon.pid
    );
    Ok(())
}

fn summarize_pvcs(topo: &Topology) -> String {
    let mut groups: Vec<(String, String, String, Vec<u16>)> = Vec::new();
    for p in &topo.pvcs {
        match groups.last_mut() {
            Some((a, b, q, v)) if *a == p.a && *b == p.b && *q == p.qos => v.push(p.vc.vci.get()),
            _ => groups.push((
                p.a.clone(),
                p.b.clone(),
                p.qos.clone(),
                vec![p.vc.vci.get()],
            )),
        }
    }
    if groups.is_empty() {
        return "none".into();
    }
    groups
        .iter()
        .map(|(a, b, q, v)| {
            let range = match (v.first(), v.last()) {
                (Some(f), Some(l)) if f != l => format!("0.{f}-0.{l}"),
                (Some(f), _) => format!("0.{f}"),
                _ => String::new(),
            };
            format!("{a} <-> {b} {range} {q}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn write_state(state: &LabState) -> CmdResult {
    let path = state.dir.join("lab.json");
    let text = serde_json::to_string_pretty(state)
        .map_err(|e| CliError::failure(format!("lab state: {e}")))?;
    let mut f = fs::File::create(&path)
        .map_err(|e| CliError::failure(format!("{}: {e}", path.display())))?;
    f.write_all(text.as_bytes())
        .map_err(|e| CliError::failure(format!("{}: {e}", path.display())))
}

fn log_tail(log: &Path) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// Waits until the daemon's socket accepts a connection.
fn wait_ready(d: &Daemon, child: &mut std::process::Child, timeout: Duration) -> CmdResult {
    let deadline = Instant::now() + timeout;
    loop {
        if UnixStream::connect(&d.socket).is_ok() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(CliError::failure(format!(
                "{} ({}) exited while starting ({status}): {}",
                d.name,
                d.role,
                log_tail(&d.log)
            )));
        }
        if Instant::now() >= deadline {
            return Err(CliError::failure(format!(
                "{} ({}) did not open {} within {timeout:?}: {}",
                d.name,
                d.role,
                d.socket.display(),
                log_tail(&d.log)
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn state_json(state: &LabState) -> Value {
    json!({
        "dir": state.dir,
        "daemons": state.daemons.iter().map(|d| json!({
            "name": d.name,
            "role": d.role,
            "pid": d.pid,
            "alive": is_our_daemon(d.pid, &d.config),
            "socket": d.socket,
            "log": d.log,
        })).collect::<Vec<_>>(),
    })
}

fn status(args: StatusArgs) -> CmdResult {
    let dir = runtime_dir(args.dir.dir.as_deref());
    let state = load_state(&dir)?;
    let mut out = state_json(&state);
    let mut details = Vec::new();
    for d in &state.daemons {
        details.push(crate::cmd::stat::daemon_status(d));
    }
    out["status"] = Value::Array(
        details
            .iter()
            .map(|r| match r {
                Ok(v) => v.clone(),
                Err(e) => json!({ "error": e }),
            })
            .collect(),
    );
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return Ok(());
    }
    println!("lab in {}", dir.display());
    for (d, r) in state.daemons.iter().zip(&details) {
        let alive = if is_our_daemon(d.pid, &d.config) {
            "running"
        } else {
            "NOT RUNNING"
        };
        let summary = match r {
            Ok(v) => crate::cmd::stat::one_line(&d.role, v),
            Err(e) => format!("no answer: {e}"),
        };
        println!(
            "  {:<6} {:<6} pid {:<7} {alive:<11} {summary}",
            d.name, d.role, d.pid
        );
    }
    Ok(())
}

/// Stops a lab's daemons and removes its directory; returns how many were running.
pub fn down(dir: &Path) -> Result<usize, CliError> {
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
        return Err(CliError::failure(format!(
            "{} (pid {}) did not stop; {} kept",
            d.name,
            d.pid,
            dir.display()
        )));
    }
    remove_lab_files(dir, &state);
    match fs::remove_dir(dir) {
        Ok(()) => {}
        // Files the lab did not make stay, and so does the directory holding them.
        Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => {}
        Err(e) => {
            return Err(CliError::failure(format!(
                "cannot remove {}: {e}",
                dir.display()
            )));
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

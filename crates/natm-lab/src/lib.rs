//! natm's lab: an ATM network of switch and host daemons on this machine, started from a
//! topology, looked at, restarted and stopped.
//!
//! # What it is
//!
//! [`start`] reads a checked [`Topology`](topology::Topology), writes each daemon's
//! configuration into the runtime directory (natm-switchd's and natm-host's own
//! configuration types, serialised with `toml::to_string`: [`topology`]), starts the
//! `natm` executable's `switchd` for every switch and then its `hostd` for every host as
//! background processes (their own process groups, output in `NAME.log`), waits until
//! each answers on its socket, and records them in `lab.json` ([`LabState`]). [`down`]
//! stops them (SIGTERM, then SIGKILL after 3 s) and removes what the lab made in the
//! directory (the directory too, unless it holds someone else's files); [`restart`] stops
//! one daemon and starts it again from the same file; [`OwnedLab`] is a lab a command
//! started for itself and takes down when dropped. Shared memory is memfd-backed, so it
//! goes with the processes: nothing is left in /dev/shm.
//!
//! The runtime directory is, by [`runtime_dir`]'s rule, the one given, else
//! `$NATM_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/natm`, else `/tmp/natm-UID`: the same rule
//! the `natm` API uses to find a host's socket, so applications reach the lab's hosts by
//! name.
//!
//! # What it is not
//!
//! Not a command line (no options, no printing: that is `natm lab` and `natm stat` in
//! natm-cli, which print a daemon's status as [`DaemonStatus::one_line`] or
//! [`DaemonStatus::table`] renders it), not the daemons (natm-switchd, natm-host), and not the topology's parser
//! (natm-topology). It asks a daemon only whether its socket accepts a connection and,
//! from [`Daemon::status`], for its status.
//!
//! # Call contract
//!
//! * The caller names the `natm` executable whose `switchd` and `hostd` subcommands run
//!   the daemons (`natm` itself passes `std::env::current_exe()`).
//! * [`start`] refuses a directory where a lab is up; when a daemon does not come up it
//!   takes down the ones it started before it returns the error.
//! * Every call blocks until its daemons are up or gone (seconds at most); nothing runs in
//!   the background of this process after a call returns, except the daemons themselves.
//! * [`OwnedLab`]'s drop prints one line on stderr when it takes the lab down; nothing
//!   else here prints.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

mod calls;
mod lab;
mod render;
mod state;
pub mod topology;

pub use calls::calls_table;
pub use lab::{OwnedLab, down, restart, start};
pub use render::{stat_json, stat_table};
pub use state::{
    Daemon, DaemonStatus, LabState, StatusError, is_our_daemon, load_state, runtime_dir,
};

/// Why a lab could not be started, looked at or stopped. Its `Display` is one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No `lab.json` in the directory.
    #[error("no lab is up in {} (start one with `natm lab up`)", dir.display())]
    NotUp {
        /// The runtime directory.
        dir: PathBuf,
    },
    /// A lab is already up in the directory.
    #[error("a lab is already up in {} (`natm lab down` first)", dir.display())]
    AlreadyUp {
        /// The runtime directory.
        dir: PathBuf,
    },
    /// A file of the lab could not be read, written or removed.
    #[error("{}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `lab.json` is not a lab state file.
    #[error("{}: not a lab state file: {source}", path.display())]
    BadState {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The lab state could not be written as JSON.
    #[error("lab state: {0}")]
    State(#[source] serde_json::Error),
    /// The runtime directory could not be made.
    #[error("cannot create {}: {source}", dir.display())]
    CreateDir {
        /// The runtime directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The runtime directory could not be removed.
    #[error("cannot remove {}: {source}", dir.display())]
    RemoveDir {
        /// The runtime directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No free loopback port for a UDP or TCP link.
    #[error("cannot find a free loopback port: {0}")]
    NoPort(#[source] std::io::Error),
    /// A daemon's configuration could not be made from the topology.
    #[error("{node}'s configuration: {why}")]
    Config {
        /// The node.
        node: String,
        /// What the daemon's configuration type refused.
        why: String,
    },
    /// A daemon's configuration could not be written as TOML.
    #[error("daemon configuration: {0}")]
    Toml(#[source] toml::ser::Error),
    /// A daemon could not be started.
    #[error("cannot start {name}: {source}")]
    Spawn {
        /// The node.
        name: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A daemon exited while it was starting.
    #[error("{name} ({role}) exited while starting ({status}): {log}")]
    Exited {
        /// The node.
        name: String,
        /// "switch" or "host".
        role: String,
        /// How it ended.
        status: ExitStatus,
        /// The last lines of its log.
        log: String,
    },
    /// A host's link to its switch did not come up in time after the lab started.
    #[error("{name}'s link did not come up within {timeout:?} ({what}): {log}")]
    LinkNotUp {
        /// The host.
        name: String,
        /// How long it was given.
        timeout: Duration,
        /// The link as the host last reported it, or why it could not be asked.
        what: String,
        /// The last lines of its log.
        log: String,
    },
    /// A daemon did not open its socket in time.
    #[error("{name} ({role}) did not open {} within {timeout:?}: {log}", socket.display())]
    NotReady {
        /// The node.
        name: String,
        /// "switch" or "host".
        role: String,
        /// Its socket.
        socket: PathBuf,
        /// How long it was given.
        timeout: Duration,
        /// The last lines of its log.
        log: String,
    },
    /// A daemon did not stop.
    #[error("{name} (pid {pid}) did not stop")]
    DidNotStop {
        /// The node.
        name: String,
        /// Its process id.
        pid: i32,
    },
    /// A daemon did not stop, so the lab's directory was kept.
    #[error("{name} (pid {pid}) did not stop; {} kept", dir.display())]
    Kept {
        /// The node.
        name: String,
        /// Its process id.
        pid: i32,
        /// The runtime directory.
        dir: PathBuf,
    },
    /// The lab has no node of that name (the caller's input).
    #[error("{node}: the lab's nodes are {}", nodes.join(", "))]
    NoSuchNode {
        /// The name asked for.
        node: String,
        /// The lab's nodes.
        nodes: Vec<String>,
    },
    /// An [`OwnedLab`] has no node of that name.
    #[error("the {who} lab has no {name}")]
    NoNode {
        /// The command that owns the lab.
        who: &'static str,
        /// The name asked for.
        name: String,
    },
}

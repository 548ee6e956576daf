//! What `lab.json` records, and where the lab lives.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use natm_core::addr::{Aesa, AesaPrefix};
use natm_switchd::client::{Client, SwitchStatus};
use serde::{Deserialize, Serialize};

use crate::Error;

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
    /// A host's ATM address (`atm2text` form in `lab.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<Aesa>,
    /// A switch's 13-byte prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<AesaPrefix>,
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

/// Reads `lab.json` of a running lab.
pub fn load_state(dir: &Path) -> Result<LabState, Error> {
    let path = dir.join("lab.json");
    let text = fs::read_to_string(&path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            Error::NotUp {
                dir: dir.to_path_buf(),
            }
        } else {
            Error::File {
                path: path.clone(),
                source,
            }
        }
    })?;
    serde_json::from_str(&text).map_err(|source| Error::BadState { path, source })
}

/// Whether `pid` is a live `natm` daemon started with `config` (guards against pid reuse).
pub fn is_our_daemon(pid: i32, config: &Path) -> bool {
    let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    // A zombie has an empty command line: it is gone for our purposes.
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let config = config.as_os_str().as_encoded_bytes();
    !cmdline.is_empty() && args.contains(&config)
}

/// Writes `lab.json`.
pub(crate) fn write_state(state: &LabState) -> Result<(), Error> {
    let path = state.dir.join("lab.json");
    let text = serde_json::to_string_pretty(state).map_err(Error::State)?;
    let mut f = fs::File::create(&path).map_err(|source| Error::File {
        path: path.clone(),
        source,
    })?;
    f.write_all(text.as_bytes())
        .map_err(|source| Error::File { path, source })
}

/// Why a daemon's status could not be had.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// The switch's management socket failed.
    #[error(transparent)]
    Switch(#[from] natm_switchd::client::ClientError),
    /// The host daemon failed.
    #[error(transparent)]
    Host(#[from] natm::Error),
}

/// A daemon's status: a switch's management `status` reply, a host daemon's
/// `Host::status`.
#[derive(Clone, Debug, PartialEq)]
pub enum DaemonStatus {
    /// A switch's.
    Switch(SwitchStatus),
    /// A host's.
    Host(natm::HostStatus),
}

/// As `natm stat --json` and `natm lab status --json` have always printed it: the status
/// object itself, a switch's with the `"ok": true` of its reply.
impl Serialize for DaemonStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Reply<'a> {
            ok: bool,
            #[serde(flatten)]
            status: &'a SwitchStatus,
        }
        match self {
            DaemonStatus::Switch(status) => Reply { ok: true, status }.serialize(s),
            DaemonStatus::Host(status) => status.serialize(s),
        }
    }
}

impl Daemon {
    /// The daemon's status; a switch waits at most `timeout`.
    pub fn status(&self, timeout: std::time::Duration) -> Result<DaemonStatus, StatusError> {
        if self.role == "switch" {
            Ok(DaemonStatus::Switch(
                Client::new(&self.socket, timeout).status()?,
            ))
        } else {
            let host = natm::Host::connect_path(&self.socket)?;
            Ok(DaemonStatus::Host(host.status()?))
        }
    }
}

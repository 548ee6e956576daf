//! hostd's configuration: the file, the options it means, the daemon's entry point.

use natm_core::LineRate;
use natm_core::addr::Aesa;

use super::*;

/// What the daemon core needs besides its link.
#[derive(Clone, Debug)]
pub struct HostdOptions {
    /// The host's name (status).
    pub name: String,
    /// The Unix socket's path.
    pub socket: PathBuf,
    /// How to wait.
    pub wait: IdleWait,
    /// The link, for status.
    pub link_description: String,
    /// The link's rate (unlimited: admitted as [`NOMINAL_RATE`]).
    pub link_rate: LineRate,
    /// The switch port's socket, where lanes are asked for ([`natm_link::lane`]); `None`:
    /// no lane path (the link is not shared memory).
    pub lanes: Option<PathBuf>,
    /// The host's ATM address: with one, hostd runs the user side of UNI signalling on
    /// VC 0.5 of its link (switched VCs, issue 24); without, PVCs only.
    pub address: Option<Aesa>,
}

/// Makes (or remakes) the link: called at start and every [`RECONNECT`] while it is down.
/// It should not block for long: the loop serves nobody while it runs.
pub type Connector = Box<dyn FnMut() -> io::Result<Box<dyn EndpointLink>> + Send>;

/// How long [`run`] lets the link's connect wait for the switch each time.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(20);

/// hostd's configuration file (TOML):
///
/// ```toml
/// name = "h1"
/// socket = "/run/natm/h1.sock"   # optional: natm_proto::host::default_socket(name)
/// wait = "adaptive"              # or "poll", or "yield"; optional, adaptive by default
/// address = "47.0005.80ffe1000000f21a3599.0020481a3599.00"   # optional: signal (SVCs)
/// [link]                         # natm_link::endpoint::LinkConfig
/// kind = "shm"
/// path = "/run/natm/s1-p1.sock"
/// rate = "oc3"
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostdConfig {
    /// The host's name.
    pub name: String,
    /// The channel manager's socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<PathBuf>,
    /// How the loop waits.
    #[serde(default)]
    pub wait: IdleWait,
    /// The host's ATM address (`atm2text` form); absent: no signalling, PVCs only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<Aesa>,
    /// The link to the switch.
    pub link: LinkConfig,
}

impl HostdConfig {
    /// Parses the TOML text; errors name the key and what was wrong.
    pub fn from_toml(text: &str) -> Result<HostdConfig, HostdError> {
        toml::from_str(text).map_err(|e| HostdError::Config(e.to_string()))
    }

    /// Reads and parses a configuration file.
    pub fn load(path: &Path) -> Result<HostdConfig, HostdError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| HostdError::Config(format!("{}: {e}", path.display())))?;
        HostdConfig::from_toml(&text)
            .map_err(|e| HostdError::Config(format!("{}: {e}", path.display())))
    }

    /// The socket's path: `socket`, or the default for the name.
    pub fn socket_path(&self) -> PathBuf {
        self.socket
            .clone()
            .unwrap_or_else(|| proto::default_socket(&self.name))
    }

    /// The link as hostd makes it: a shared-memory link waits the way the loop does
    /// (`eventfd` under an adaptive loop, which spins itself and then sleeps in `poll(2)` on
    /// the link's descriptor; `poll` under a polling loop), whatever its `wait` says.
    pub fn effective_link(&self) -> LinkConfig {
        let mut link = self.link.clone();
        if let LinkKind::Shm { .. } = link.kind {
            link.wait = match self.wait {
                IdleWait::Adaptive => WaitConfig::EventFd,
                IdleWait::Poll | IdleWait::Yield => WaitConfig::Poll,
            };
        }
        link
    }

    /// The daemon options this configuration means.
    pub fn options(&self) -> HostdOptions {
        HostdOptions {
            name: self.name.clone(),
            socket: self.socket_path(),
            wait: self.wait,
            link_description: self.effective_link().describe(),
            link_rate: self.link.rate,
            // A lane bypasses hostd's emulated line: on a rated link the application runs
            // one of its own (the rate), but impairments stay hostd's alone.
            lanes: match &self.link.kind {
                LinkKind::Shm { path } if self.link.impair == Default::default() => {
                    Some(path.clone())
                }
                _ => None,
            },
            address: self.address,
        }
    }

    /// A connector that makes the configured link, waiting at most [`CONNECT_TIMEOUT`];
    /// what the link says at setup (socket buffers too small for its rate) goes to the
    /// daemon's log, stderr.
    pub fn connector(&self) -> Connector {
        let link = self.effective_link();
        Box::new(move || {
            let l = link.connect(CONNECT_TIMEOUT).map_err(io::Error::other)?;
            if let Some(w) = l.setup_warning() {
                eprintln!("natm hostd: link {}: {w}", link.target());
            }
            Ok(l)
        })
    }
}

/// Runs host daemon `config` until `stop` is set: binds the socket, connects the link
/// (retrying every [`RECONNECT`] while the switch is not there), serves. Returns when
/// stopped, with every channel revoked and the socket removed.
pub fn run(config: HostdConfig, stop: Arc<AtomicBool>) -> Result<(), HostdError> {
    let mut d = Hostd::new(config.options(), config.connector())?;
    d.run(&stop)?;
    Ok(())
}

/// Whether a peer with `peer_uid` may use a daemon running as `own_uid`: the same user,
/// or root.
pub fn peer_allowed(peer_uid: u32, own_uid: u32) -> bool {
    peer_uid == own_uid || peer_uid == 0
}

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum HostdError {
    /// Another daemon listens on the socket.
    #[error("{0}: another hostd is listening there")]
    InUse(PathBuf),
    /// The socket could not be made.
    #[error("{path}: {source}")]
    Socket {
        /// The path.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The configuration was refused.
    #[error("hostd configuration: {0}")]
    Config(String),
    /// The loop failed.
    #[error("hostd: {0}")]
    Io(#[from] io::Error),
}

//! The transport options of `natm perf rr` and `natm perf stream` (which transports, the
//! natm side's VC, QoS, wait mode, data path and hosts, the CPUs), checked into natm-bench's
//! [`Targets`] and [`Placement`].

use clap::Args;
use natm_bench::transport::{DataPath, Kind, NatmTarget, NotifyMode, Placement, Targets};
use natm_core::addr::{AddrSyntax, PvcAddr};
use natm_core::qos::Qos;

use crate::CliError;

/// Parses one name; `what` is the option it came from, for the error.
pub fn parse_kind(text: &str, what: &str, allow_natm: bool) -> Result<Kind, CliError> {
    match text.trim() {
        "natm" if allow_natm => Ok(Kind::Natm),
        "udp" => Ok(Kind::Udp),
        "tcp" => Ok(Kind::Tcp),
        "unix" => Ok(Kind::Unix),
        other => Err(CliError::usage(format!(
            "{what} {other:?}: expected {}udp, tcp or unix",
            if allow_natm { "natm, " } else { "" }
        ))),
    }
}

/// The CPU options shared by `rr` and `stream`.
#[derive(Args, Debug, Clone)]
pub struct CpuArgs {
    /// CPU of the client (sender) thread; default: the first CPU this process may use.
    #[arg(long)]
    cpu_client: Option<usize>,
    /// CPU of the server (receiver) thread; default: the second CPU this process may use.
    #[arg(long)]
    cpu_server: Option<usize>,
    /// Put the client and the server on the same CPU (the client's).
    #[arg(long, conflicts_with = "cpu_server")]
    same_core: bool,
}

impl CpuArgs {
    /// Checks the CPUs against the ones this process may use and fills in the defaults
    /// ([`Placement::choose`]).
    pub fn placement(&self) -> Result<Placement, CliError> {
        Placement::choose(self.cpu_client, self.cpu_server, self.same_core)
            .map_err(|e| CliError::usage(e.to_string()))
    }
}

/// Which transports a `natm perf rr|stream` run measures, and the natm side's options.
#[derive(Args, Debug, Clone)]
pub struct TargetArgs {
    /// What to measure: natm (over a running lab), udp, tcp or unix.
    #[arg(long, default_value = "natm")]
    kind: String,
    /// Kernel baselines measured in the same run, comma separated (udp, tcp, unix).
    #[arg(long, default_value = "udp,tcp")]
    baseline: String,
    /// Measure no baseline.
    #[arg(long)]
    no_baseline: bool,
    /// The natm VC, `[itf.]vpi.vci`.
    #[arg(long, default_value = "0.100")]
    vc: String,
    /// The natm VC's QoS in qos(7) form.
    #[arg(long, default_value = "ubr")]
    qos: String,
    /// How the natm application waits: poll, adaptive, eventfd or signal.
    #[arg(long, default_value = "adaptive")]
    mode: String,
    /// natm's data path: auto (the fastest the link allows: lane on shm links, else
    /// direct), direct (application ↔ adapter in hostd), daemon (through the host daemon's
    /// socket) or lane (the application's own rings to the switch; shm links).
    #[arg(long, default_value = "auto")]
    path: String,
    /// The natm client's host: a host name (its daemon's default socket) or a socket path.
    #[arg(long, default_value = "h1")]
    client_host: String,
    /// The natm server's host, likewise.
    #[arg(long, default_value = "h2")]
    server_host: String,
    /// Measure a switched VC instead of the PVC --vc: the server's host listens, the
    /// client's host calls its address with --qos, and the network gives the VC (the lab's
    /// daemons must signal).
    #[arg(long)]
    svc: bool,
}

impl TargetArgs {
    /// Checks the options.
    pub fn targets(&self) -> Result<Targets, CliError> {
        let main = parse_kind(&self.kind, "--kind", true)?;
        let mut kinds = vec![main];
        if !self.no_baseline {
            for part in self.baseline.split(',').filter(|p| !p.trim().is_empty()) {
                let k = parse_kind(part, "--baseline", false)?;
                if !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
        }
        let vc = PvcAddr::parse_with(&self.vc, AddrSyntax::EXACT)
            .map_err(|e| CliError::usage(format!("--vc {:?}: {e}", self.vc)))?;
        let qos: Qos = self
            .qos
            .parse()
            .map_err(|e| CliError::usage(format!("--qos {:?}: {e}", self.qos)))?;
        let Some(mode) = NotifyMode::ALL.into_iter().find(|m| m.name() == self.mode) else {
            return Err(CliError::usage(format!(
                "--mode {:?}: expected poll, adaptive, eventfd or signal",
                self.mode
            )));
        };
        let Some(path) = [DataPath::Auto]
            .into_iter()
            .chain(DataPath::ALL)
            .find(|p| p.name() == self.path)
        else {
            return Err(CliError::usage(format!(
                "--path {:?}: expected auto, direct, daemon or lane",
                self.path
            )));
        };
        Ok(Targets {
            kinds,
            natm: Some(NatmTarget {
                vc,
                qos,
                mode,
                path,
                client_host: self.client_host.clone(),
                server_host: self.server_host.clone(),
                svc: self.svc,
            }),
        })
    }
}

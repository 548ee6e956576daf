//! Why a measurement could not be made.

use std::io;
use std::process::ExitStatus;

/// Why a measurement could not be made. Its `Display` is one line, without the program's
/// name: what failed, then why.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operation of the measurement failed; `what` names the operation and what it
    /// worked on (a transport, a size, a file).
    #[error("{what}: {source}")]
    Io {
        /// The operation.
        what: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A switch forwarding benchmark could not run; `what` names it.
    #[error("{what}: {source}")]
    Switch {
        /// The benchmark.
        what: &'static str,
        /// Why.
        #[source]
        source: crate::forwarding::BenchError,
    },
    /// A daemon the measurement started, or talks to, failed or refused; the text says
    /// which and why.
    #[error("{0}")]
    Daemon(String),
    /// The CPUs or scheduling of this process could not be read or set.
    #[error("{0}")]
    Sched(#[source] natm_nic::sched::SchedError),
    /// The plan's settings make no measurement (the caller's input; the text names the
    /// setting as the command line does).
    #[error("{0}")]
    Plan(String),
    /// A call of the `natm` API failed; `what` names the host or VC.
    #[error("{what}: {source}")]
    Natm {
        /// The host or VC.
        what: String,
        /// Why.
        #[source]
        source: natm::Error,
    },
    /// The measurement's traffic failed: a VC, a sending or receiving thread, the switch's
    /// counters; the text says which and why.
    #[error("{0}")]
    Traffic(String),
    /// The measurement's lab could not be started or stopped.
    #[error(transparent)]
    Lab(#[from] natm_lab::Error),
    /// The lab has no host of that name (no socket in its directory).
    #[error("no host {host:?} in {}: start a lab first (natm lab up --dir {0})", dir.display())]
    NoHost {
        /// The host.
        host: String,
        /// The lab's runtime directory.
        dir: std::path::PathBuf,
    },
    /// A `natm perf` child process failed or its report could not be read.
    #[error("natm perf {args}: {why}")]
    Perf {
        /// Its arguments.
        args: String,
        /// Its stderr, or what was wrong with its report.
        why: String,
    },
    /// A run on the lane path failed: what a lane needs, after why.
    #[error(
        "{0} (lanes need shared-memory links without impairments; `--paths direct,daemon` leaves them out)"
    )]
    Lane(Box<Error>),
    /// SIGINT or SIGTERM came during the measurement.
    #[error("interrupted (the lab is taken down, nothing is left running)")]
    Interrupted,
    /// A request to a switch daemon's management socket failed; `what` names it.
    #[error("{what}: {source}")]
    Switchd {
        /// The request, or the switch.
        what: String,
        /// Why.
        #[source]
        source: natm_switchd::client::ClientError,
    },
    /// A daemon the measurement started exited before it was done with it.
    #[error("{what} exited ({status}): {log}")]
    Exited {
        /// The daemon.
        what: String,
        /// How it ended.
        status: ExitStatus,
        /// Its log.
        log: String,
    },
    /// A thread of the measurement panicked; the text names it.
    #[error("{0} panicked")]
    Panicked(String),
    /// The measurement itself failed (its own words say where).
    #[error("{0}")]
    Measurement(#[source] io::Error),
    /// The measurement ran but gave nothing to report; the text says what is missing.
    #[error("{0}")]
    NoResult(&'static str),
    /// Something the engine produced or was given is refused, and why.
    #[error("{what}: {why}")]
    Refused {
        /// What was refused.
        what: &'static str,
        /// Why.
        why: String,
    },
    /// A child process the engine ran failed.
    #[error("{what} failed ({status}): {stderr}")]
    Child {
        /// What it was asked to do.
        what: &'static str,
        /// How it ended.
        status: ExitStatus,
        /// What it said on stderr.
        stderr: String,
    },
}

impl Error {
    /// An [`Error::Io`] for `what`.
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}

//! What an event-builder run is asked to do: [`EbConfig`] (with [`Arrivals`] and [`Policy`]),
//! its validation, and [`EbError`].

use std::fmt;

use natm_core::{Aal, Duration, LineRate, Qos, TrafficClass, TrafficParams};

use crate::app::HostCosts;

use super::{ConfigEcho, CostsEcho, EVENT_BYTES, FIRST_VCI, MAX_PAIRS, secs};

/// When the supervisor assigns events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrivals {
    /// Event `n` at `start + n / rate`.
    Periodic,
    /// Exponential gaps of mean `1 / rate`, drawn from a generator seeded with `seed`.
    Poisson {
        /// The generator's seed.
        seed: u64,
    },
}

impl fmt::Display for Arrivals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arrivals::Periodic => f.write_str("periodic"),
            Arrivals::Poisson { seed } => write!(f, "poisson (seed {seed})"),
        }
    }
}

/// Which destination gets the next event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Event `n` to destination `n mod D`.
    RoundRobin,
    /// The destination with the fewest events assigned and not yet done (lowest index on
    /// a tie).
    LeastLoaded,
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::RoundRobin => "round-robin",
            Policy::LeastLoaded => "least-loaded",
        })
    }
}

/// What an event-builder run is asked to do.
#[derive(Clone, Debug)]
pub struct EbConfig {
    /// Sources (readout buffers), ≥ 1.
    pub sources: usize,
    /// Destinations (event-building nodes), ≥ 1.
    pub destinations: usize,
    /// Events assigned per second (finite, > 0).
    pub rate_hz: f64,
    /// Periodic or Poisson assignments.
    pub arrivals: Arrivals,
    /// How the supervisor picks a destination.
    pub policy: Policy,
    /// Bytes of each fragment ([`EVENT_BYTES`]..=65535).
    pub fragment: usize,
    /// The QoS of the data VCs (source ↔ destination); AAL5 is implied.
    pub qos: Qos,
    /// Every link's line rate.
    pub link: LineRate,
    /// Per-message host overheads (from a calibration).
    pub costs: HostCosts,
    /// How long the supervisor assigns events; the run goes on for twice the timeout after
    /// it so that every event is decided.
    pub duration: Duration,
    /// The seed of the whole run.
    pub seed: u64,
    /// An event not built this long after its assignment is lost.
    pub timeout: Duration,
    /// How often queues and links are sampled.
    pub sample_interval: Duration,
}

impl EbConfig {
    /// `sources` × `destinations` at `rate_hz` with `fragment`-byte fragments; UBR data VCs
    /// on OC-3c links, free hosts, periodic round-robin assignment for 1 s, seed 1, 100 ms
    /// timeout, 1 ms samples.
    pub fn new(sources: usize, destinations: usize, rate_hz: f64, fragment: usize) -> EbConfig {
        EbConfig {
            sources,
            destinations,
            rate_hz,
            arrivals: Arrivals::Periodic,
            policy: Policy::RoundRobin,
            fragment,
            qos: Qos {
                tx: TrafficParams {
                    class: TrafficClass::Ubr,
                    ..TrafficParams::default()
                },
                rx: TrafficParams {
                    class: TrafficClass::Ubr,
                    ..TrafficParams::default()
                },
                aal: Aal::Aal5,
            },
            link: LineRate::default(),
            costs: HostCosts::FREE,
            duration: Duration::from_secs(1),
            seed: 1,
            timeout: Duration::from_millis(100),
            sample_interval: Duration::from_millis(1),
        }
    }

    /// Checks every constraint [`run`](super::run()) relies on, naming the one that fails.
    ///
    /// At most [`MAX_PAIRS`] source–destination pairs, 65,535 switch ports, 10⁸ events.
    pub fn validate(&self) -> Result<(), EbError> {
        if self.sources == 0 {
            return Err(EbError::Config("sources must be at least 1".into()));
        }
        if self.destinations == 0 {
            return Err(EbError::Config("destinations must be at least 1".into()));
        }
        // VCIs 32 + index on each host link; a port per host on one switch.
        let max_peers = usize::from(u16::MAX) - usize::from(FIRST_VCI);
        if self.sources > max_peers || self.destinations > max_peers {
            return Err(EbError::Config(format!(
                "at most {max_peers} sources and {max_peers} destinations: VCI 32 + peer index must fit 16 bits"
            )));
        }
        if self.sources + self.destinations + 1 > usize::from(u16::MAX) {
            return Err(EbError::Config(format!(
                "sources + destinations + 1 = {} switch ports: at most 65535",
                self.sources + self.destinations + 1
            )));
        }
        // Each source–destination pair is a PVC with its state in both adapters and the
        // switch (about 6.5 KiB in all: 421 MiB at 256 × 256); larger runs would exhaust
        // memory long after starting instead of being refused here.
        let pairs = self.sources * self.destinations;
        if pairs > MAX_PAIRS {
            return Err(EbError::Config(format!(
                "sources × destinations = {pairs} connections: at most {MAX_PAIRS} \
                 (1024 × 1024; each holds about 6.5 KiB of simulator state)"
            )));
        }
        if !(EVENT_BYTES..=65_535).contains(&self.fragment) {
            return Err(EbError::Config(format!(
                "fragment must be {EVENT_BYTES}..=65535 bytes (an AAL5 SDU that holds the 8-byte event number), not {}",
                self.fragment
            )));
        }
        if !(self.rate_hz.is_finite() && self.rate_hz > 0.0) {
            return Err(EbError::Config(format!(
                "rate must be a positive number of events per second, not {}",
                self.rate_hz
            )));
        }
        let events = self.rate_hz * self.duration.as_nanos() as f64 / 1e9;
        // One outcome byte per event is kept for the whole run.
        if events > 1e8 {
            return Err(EbError::Config(format!(
                "rate × duration = {events:.0} events: at most 10^8 in one run"
            )));
        }
        for (what, d) in [
            ("duration", self.duration),
            ("timeout", self.timeout),
            ("sample interval", self.sample_interval),
        ] {
            if d == Duration::ZERO {
                return Err(EbError::Config(format!("{what} must be more than 0")));
            }
        }
        if self.qos.tx.class == TrafficClass::None || self.qos.rx.class == TrafficClass::None {
            return Err(EbError::Config(
                "qos: the data VCs carry fragments (tx) and requests (rx): neither may be none"
                    .into(),
            ));
        }
        if self.qos.aal == Aal::Aal0 {
            return Err(EbError::Config(
                "qos: the event builder's VCs carry AAL5 SDUs, not aal0".into(),
            ));
        }
        Ok(())
    }

    pub(super) fn echo(&self) -> ConfigEcho {
        ConfigEcho {
            sources: self.sources,
            destinations: self.destinations,
            rate_hz: self.rate_hz,
            arrivals: self.arrivals.to_string(),
            policy: self.policy.to_string(),
            fragment: self.fragment,
            qos: self.qos.to_string(),
            link: self.link.to_string(),
            costs_ns: CostsEcho {
                send_fixed: self.costs.send_fixed.as_nanos(),
                send_per_byte: self.costs.send_per_byte_ps as f64 / 1000.0,
                recv_fixed: self.costs.recv_fixed.as_nanos(),
                recv_per_byte: self.costs.recv_per_byte_ps as f64 / 1000.0,
                wakeup: self.costs.wakeup.as_nanos(),
            },
            duration_s: secs(self.duration),
            seed: self.seed,
            timeout_s: secs(self.timeout),
            sample_interval_s: secs(self.sample_interval),
        }
    }
}

/// Why an event-builder run could not be made or run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EbError {
    /// A configuration value is out of range (the message names the constraint).
    Config(String),
    /// The network refused to be built: a port, a cross-connect (CAC names the binding
    /// constraint) or a VC.
    Network(String),
    /// The simulator found a core breaking an invariant (a bug in natm, not in the input).
    Invariant(String),
}

impl fmt::Display for EbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EbError::Config(m) => write!(f, "event builder: {m}"),
            EbError::Network(m) => write!(f, "event builder network: {m}"),
            EbError::Invariant(m) => write!(f, "event builder: the simulator stopped: {m}"),
        }
    }
}

impl std::error::Error for EbError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_names_the_constraint() {
        let ok = EbConfig::new(4, 4, 1000.0, 128);
        assert_eq!(ok.validate(), Ok(()));
        let msg = |c: EbConfig| c.validate().unwrap_err().to_string();
        assert!(msg(EbConfig::new(0, 4, 1000.0, 128)).contains("sources"));
        assert!(msg(EbConfig::new(4, 0, 1000.0, 128)).contains("destinations"));
        assert!(msg(EbConfig::new(4, 4, 1000.0, 0)).contains("fragment"));
        assert!(msg(EbConfig::new(4, 4, 1000.0, 65_536)).contains("fragment"));
        assert!(msg(EbConfig::new(4, 4, 0.0, 128)).contains("rate"));
        assert!(msg(EbConfig::new(4, 4, f64::NAN, 128)).contains("rate"));
        assert!(msg(EbConfig::new(40_000, 40_000, 1.0, 128)).contains("ports"));
        assert!(msg(EbConfig::new(1025, 1024, 1.0, 128)).contains("at most 1048576"));
        assert_eq!(EbConfig::new(1024, 1024, 1.0, 128).validate(), Ok(()));
        let mut c = ok.clone();
        c.timeout = Duration::ZERO;
        assert!(msg(c).contains("timeout"));
        let mut c = ok.clone();
        c.qos = "ubr:tx:none".parse().unwrap();
        assert!(msg(c).contains("neither may be none"));
        let mut c = ok.clone();
        c.qos = "aal0,ubr".parse().unwrap();
        assert!(msg(c).contains("AAL5"));
    }
}

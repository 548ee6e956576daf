//! Fault plans: which faults a run suffers, when, and for how long.
//!
//! A [`FaultPlan`] is a list of [`Fault`]s, each a kind, a start and a length, all within
//! the load phase (every fault is over by its end, so the liveness phase starts clean).
//! Plans are listed in a scenario file or drawn from a seed ([`FaultPlan::swarm`]): each
//! kind is on with some probability and its intensity is drawn from a range, so that over
//! many seeds every kind occurs alone and in company. Payload bit errors, CBR/VBR PVC churn
//! and several impairments occur in most seeds, because they are what the planted bugs of
//! the meta-test need to show.
//!
//! The scenario turns a plan into the world's [`Action`](crate::world::Action)s (its
//! module knows the ids); this module only draws and describes.

use core::fmt;

use natm_core::{Duration, TrafficClass};
use natm_netem::{BurstLoss, Impairments, Jitter, Probability};
use natm_topology::Topology;

use crate::seed::Rng;

/// What goes wrong.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultKind {
    /// Impairments on a link (topology link index), both directions, then back to the
    /// link's own.
    Impair {
        /// The link.
        link: usize,
        /// What it suffers meanwhile.
        impairments: Impairments,
    },
    /// The link goes down, then up.
    LinkDown {
        /// The link.
        link: usize,
    },
    /// The switch crashes (all state lost), then restarts from its configuration.
    SwitchCrash {
        /// The switch (topology index).
        switch: usize,
    },
    /// The host crashes, then restarts (VCs reopened, app started again).
    HostCrash {
        /// The host (topology index).
        host: usize,
    },
    /// A switch port stops sending (its queues fill and drop), then resumes.
    Clog {
        /// The switch.
        switch: usize,
        /// The port.
        port: u16,
    },
    /// The PVC is torn down (cross-connects on its path, VCs at both hosts) and set up
    /// again.
    Churn {
        /// The PVC (topology index, ranges expanded).
        pvc: usize,
    },
    /// Whole frames of VC 0.5 on the link are duplicated with probability `p` each (both
    /// directions), then no more (calls scenarios: [`FaultPlan::calls_swarm`]).
    DuplicateSignalling {
        /// The link.
        link: usize,
        /// Per frame.
        p: f64,
    },
}

/// One fault: from `at` (since the run's start) for `length`.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    /// When it starts.
    pub at: Duration,
    /// How long it lasts.
    pub length: Duration,
    /// What it is.
    pub kind: FaultKind,
}

/// The faults of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultPlan {
    /// In the order drawn or listed.
    pub faults: Vec<Fault>,
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::Impair { link, impairments } => {
                write!(f, "impair link {link}: {impairments:?}")
            }
            FaultKind::LinkDown { link } => write!(f, "link {link} down"),
            FaultKind::SwitchCrash { switch } => write!(f, "switch {switch} crash"),
            FaultKind::HostCrash { host } => write!(f, "host {host} crash"),
            FaultKind::Clog { switch, port } => write!(f, "switch {switch} port {port} clogged"),
            FaultKind::Churn { pvc } => write!(f, "pvc {pvc} churn"),
            FaultKind::DuplicateSignalling { link, p } => {
                write!(f, "link {link} duplicates 0.5's frames with p = {p}")
            }
        }
    }
}

fn prob(p: f64) -> Probability {
    Probability::new(p.clamp(0.0, 1.0)).unwrap_or(Probability::ZERO)
}

fn ns(x: u64) -> Duration {
    Duration::from_nanos(x)
}

impl FaultPlan {
    /// No faults.
    pub fn none() -> FaultPlan {
        FaultPlan::default()
    }

    /// The faults a calls scenario adds to [`swarm`](Self::swarm)'s, drawn from their own
    /// stream of `seed`: on each link, with probability 0.4, a window (1–10 % of the phase)
    /// in which VC 0.5's
    /// frames are duplicated, with p = 0.5 in a third of them and between 0.01 and 0.2 in
    /// the rest.
    pub fn calls_swarm(seed: u64, topo: &Topology, phase: Duration) -> Vec<Fault> {
        let mut rng = Rng::for_component(seed, "calls faults");
        let total = phase.as_nanos().max(1);
        let mut faults = Vec::new();
        for link in 0..topo.links.len() {
            if !rng.chance(0.4) {
                continue;
            }
            let at = rng.range(0, total * 8 / 10);
            // Short: under duplication SSCOP recovers (ER/ERAK) again and again, and the
            // recoveries' own frames are duplicated too (costly, not wrong).
            let len = rng.range(total / 100, total / 10).max(1);
            let p = if rng.chance(1.0 / 3.0) {
                0.5
            } else {
                rng.log_uniform(0.01, 0.2)
            };
            faults.push(Fault {
                at: ns(at),
                length: ns(len),
                kind: FaultKind::DuplicateSignalling { link, p },
            });
        }
        faults
    }

    /// A plan drawn from `seed` for `topo` over a load phase of `phase`.
    pub fn swarm(seed: u64, topo: &Topology, phase: Duration) -> FaultPlan {
        let mut rng = Rng::for_component(seed, "faults");
        let total = phase.as_nanos().max(1);
        let mut faults = Vec::new();
        // A window inside the phase: start in the first 80 %, length up to `max_frac`.
        let window = |rng: &mut Rng, max_frac: f64| -> (Duration, Duration) {
            let at = rng.range(0, total * 8 / 10);
            let max_len = ((total as f64 * max_frac) as u64).clamp(1, total - at);
            let len = rng.range(max_len / 10, max_len).max(1);
            (ns(at), ns(len))
        };
        let links = topo.links.len();
        // Impairments: per link, a few kinds at once.
        for link in 0..links {
            if !rng.chance(0.6) {
                continue;
            }
            let mut imp = Impairments::default();
            if rng.chance(0.5) {
                imp.loss = prob(rng.log_uniform(1e-4, 2e-2));
            }
            if rng.chance(0.3) {
                let loss = rng.log_uniform(1e-3, 2e-2);
                let len = rng.real(1.5, 8.0);
                imp.burst = BurstLoss::mean(loss, len).ok();
            }
            if rng.chance(0.4) {
                imp.hec_single = prob(rng.log_uniform(1e-4, 1e-2));
            }
            if rng.chance(0.3) {
                imp.hec_multi = prob(rng.log_uniform(1e-4, 5e-3));
            }
            if rng.chance(0.4) {
                imp.delay = ns(rng.range(1_000, 300_000));
                if rng.chance(0.6) {
                    imp.jitter = Jitter::Uniform(ns(rng.range(1_000, 200_000)));
                }
            }
            if imp.is_none() {
                continue;
            }
            let (at, length) = if rng.chance(0.5) {
                (Duration::ZERO, phase)
            } else {
                window(&mut rng, 0.6)
            };
            faults.push(Fault {
                at,
                length,
                kind: FaultKind::Impair {
                    link,
                    impairments: imp,
                },
            });
        }
        // Payload bit errors on one link in most seeds: what a reassembler's CRC is for.
        if links > 0 && rng.chance(0.9) {
            let link = rng.below(links as u64) as usize;
            let imp = Impairments {
                ber: prob(rng.log_uniform(2e-6, 2e-5)),
                ..Impairments::default()
            };
            faults.push(Fault {
                at: Duration::ZERO,
                length: phase,
                kind: FaultKind::Impair {
                    link,
                    impairments: imp,
                },
            });
        }
        if links > 0 && rng.chance(0.3) {
            for _ in 0..rng.range(1, 2) {
                let link = rng.below(links as u64) as usize;
                let (at, length) = window(&mut rng, 0.1);
                faults.push(Fault {
                    at,
                    length,
                    kind: FaultKind::LinkDown { link },
                });
            }
        }
        if !topo.switches.is_empty() && rng.chance(0.2) {
            let switch = rng.below(topo.switches.len() as u64) as usize;
            let (at, length) = window(&mut rng, 0.1);
            faults.push(Fault {
                at,
                length,
                kind: FaultKind::SwitchCrash { switch },
            });
        }
        if !topo.hosts.is_empty() && rng.chance(0.25) {
            let host = rng.below(topo.hosts.len() as u64) as usize;
            let (at, length) = window(&mut rng, 0.1);
            faults.push(Fault {
                at,
                length,
                kind: FaultKind::HostCrash { host },
            });
        }
        if !topo.switches.is_empty() && rng.chance(0.3) {
            let switch = rng.below(topo.switches.len() as u64) as usize;
            let ports = topo.neighbours(&topo.switches[switch]).count() as u64;
            if ports > 0 {
                let port = rng.range(1, ports) as u16;
                let (at, length) = window(&mut rng, 0.05);
                faults.push(Fault {
                    at,
                    length,
                    kind: FaultKind::Clog { switch, port },
                });
            }
        }
        faults.extend(Self::churn(&mut rng, topo, phase, 0.85));
        FaultPlan { faults }
    }

    /// PVC churn drawn from `rng`: with probability `p`, one to three PVCs (CBR and VBR
    /// ones first, whose CAC bookings churn exercises) are torn down and set up again.
    pub fn churn(rng: &mut Rng, topo: &Topology, phase: Duration, p: f64) -> Vec<Fault> {
        let mut out = Vec::new();
        if topo.pvcs.is_empty() || !rng.chance(p) {
            return out;
        }
        let booked: Vec<usize> = topo
            .pvcs
            .iter()
            .enumerate()
            .filter(|(_, v)| {
                [v.qos.tx.class, v.qos.rx.class]
                    .iter()
                    .any(|c| matches!(c, TrafficClass::Cbr | TrafficClass::Vbr))
            })
            .map(|(i, _)| i)
            .collect();
        let total = phase.as_nanos().max(1);
        for _ in 0..rng.range(1, 3) {
            let pvc = if !booked.is_empty() && rng.chance(0.8) {
                booked[rng.below(booked.len() as u64) as usize]
            } else {
                rng.below(topo.pvcs.len() as u64) as usize
            };
            let at = rng.range(0, total * 7 / 10);
            let len = rng.range(total / 50, total / 5).clamp(1, total - at);
            out.push(Fault {
                at: ns(at),
                length: ns(len),
                kind: FaultKind::Churn { pvc },
            });
        }
        out
    }

    /// The latest instant a fault ends.
    pub fn end(&self) -> Duration {
        self.faults
            .iter()
            .map(|f| ns(f.at.as_nanos().saturating_add(f.length.as_nanos())))
            .max()
            .unwrap_or(Duration::ZERO)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swarm_plans_are_a_function_of_the_seed_and_stay_in_the_phase() {
        let topo = Topology::parse(natm_topology::DEFAULT_TOPOLOGY, None).unwrap();
        let phase = Duration::from_millis(50);
        assert_eq!(
            FaultPlan::swarm(3, &topo, phase),
            FaultPlan::swarm(3, &topo, phase)
        );
        let plans: Vec<FaultPlan> = (0..200)
            .map(|s| FaultPlan::swarm(s, &topo, phase))
            .collect();
        assert!(plans.windows(2).any(|w| w[0] != w[1]));
        let mut ber = 0;
        let mut churn = 0;
        for p in &plans {
            assert!(p.end() <= phase, "{p:?}");
            ber += p.faults.iter().any(|f| {
                matches!(&f.kind, FaultKind::Impair { impairments, .. } if !impairments.ber.is_zero())
            }) as u32;
            churn += p
                .faults
                .iter()
                .any(|f| matches!(f.kind, FaultKind::Churn { .. })) as u32;
        }
        assert!(ber > 150 && churn > 150, "ber {ber} churn {churn} of 200");
    }
}

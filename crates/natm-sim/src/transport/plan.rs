//! What a seed draws: the channels, their messages and the faults ([`TransportPlan`]).

use super::*;

/// One channel's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelPlan {
    /// Its endpoints' configuration (both alike).
    pub config: Config,
    /// Initial sequence numbers: `[h1 → h2, h2 → h1]`.
    pub isn: [Isn; 2],
    /// The messages of each direction: (when, length).
    pub messages: [Vec<(Instant, usize)>; 2],
    /// Reliable: the endpoints hold the ack of a message they hand up for their
    /// application's next call ([`Endpoint::hold_acks`]), which comes this long after (or
    /// sooner, with a message of its own to send, which carries the ack).
    pub hold_acks: Option<Duration>,
}

/// What a seed draws.
#[derive(Clone, Debug, PartialEq)]
pub struct TransportPlan {
    /// The channels, in VCI order.
    pub channels: Vec<ChannelPlan>,
    /// The faults, in the simulator's vocabulary: `Impair` and `LinkDown` on link 0
    /// (h1–s1) or 1 (h2–s1), `SwitchCrash` and `Clog` (port 1 towards h1, 2 towards h2)
    /// of switch 0; never a host crash (it would lose the endpoints) nor PVC churn.
    pub faults: Vec<Fault>,
}

pub(super) fn prob(p: f64) -> Probability {
    Probability::new(p.clamp(0.0, 1.0)).unwrap_or(Probability::ZERO)
}

pub(super) fn ns(x: u64) -> Duration {
    Duration::from_nanos(x)
}

pub(super) fn at(x: u64) -> Instant {
    Instant::from_nanos(x)
}

/// Data TPDU cells of a payload of `n` bytes.
pub(super) fn tpdu_cells(n: usize) -> u32 {
    frame_cells(natm_transport::header::DATA_HEADER_LEN + n)
}

impl TransportPlan {
    /// The plan of `seed` (see the [module documentation](self)).
    pub fn draw(seed: u64) -> TransportPlan {
        let mut rng = Rng::for_component(seed, "transport plan");
        // Its own stream, so that the other draws of a seed stay what they were.
        let mut holds = Rng::for_component(seed, "transport holds");
        let phase = PHASE.as_nanos();
        let n = rng.range(3, 5) as usize;
        let mut channels = Vec::new();
        for c in 0..n {
            let kind = match c {
                0 => 0,
                1 => 1,
                2 => 2,
                _ => rng.below(3),
            };
            let mut config = Config::default();
            let mut messages = [Vec::new(), Vec::new()];
            match kind {
                0 => {
                    config.service = Service::Reliable;
                    config.tpdu_size = [8192, 4096, 1500, 9000][rng.below(4) as usize];
                    let big = rng.chance(1.0 / 3.0).then(|| rng.below(2) as usize);
                    for (d, list) in messages.iter_mut().enumerate() {
                        let k = rng.range(3, 25);
                        for _ in 0..k {
                            let len = rng.log_uniform(1.0, 40_000.0) as usize;
                            list.push((at(rng.range(0, phase * 9 / 10)), len));
                        }
                        if big == Some(d) {
                            list.push((at(rng.range(0, phase / 3)), MAX_MESSAGE));
                        }
                    }
                }
                1 => {
                    config.service = Service::BestEffort;
                    config.tpdu_size = [8192, 4096, 1500, 512][rng.below(4) as usize];
                    config.reassembly_timeout = ns(rng.range(5_000_000, 100_000_000));
                    for list in messages.iter_mut() {
                        let k = rng.range(5, 40);
                        for _ in 0..k {
                            let len = if rng.chance(0.05) {
                                rng.range(100_000, MAX_MESSAGE as u64) as usize
                            } else {
                                rng.log_uniform(1.0, 20_000.0) as usize
                            };
                            list.push((at(rng.range(0, phase * 9 / 10)), len));
                        }
                    }
                }
                _ => {
                    let rate = rng.range(10_000, 30_000) as u32;
                    config.service = Service::Guaranteed { rate };
                    config.tpdu_size = [512, 1024, 1500][rng.below(3) as usize];
                    config.reassembly_timeout = ns(rng.range(5_000_000, 100_000_000));
                    // Offered at about twice the rate: the bucket always has work.
                    for list in messages.iter_mut() {
                        let mut t = 0u64;
                        while t < phase {
                            let len = rng.range(1, 6_000) as usize;
                            list.push((at(t), len));
                            let cells = len.div_ceil(config.tpdu_size) as u64
                                * u64::from(tpdu_cells(config.tpdu_size));
                            t += cells * 1_000_000_000 / (u64::from(rate) * 2);
                        }
                    }
                }
            }
            config.recv_buffer = (config.tpdus_of(config.max_message) as u32).max(256);
            for list in messages.iter_mut() {
                list.sort_by_key(|m| m.0);
            }
            let isn = [0, 1].map(|_| Isn {
                seq: rng.next_u64() as u32,
                msg: rng.next_u64() as u32,
            });
            let hold_acks = (config.service == Service::Reliable && holds.chance(0.5))
                .then(|| ns(holds.log_uniform(1_000.0, 100_000_000.0) as u64));
            channels.push(ChannelPlan {
                config,
                isn,
                messages,
                hold_acks,
            });
        }
        let mut faults = Vec::new();
        let window = |rng: &mut Rng, max_frac: f64| -> (Duration, Duration) {
            let a = rng.range(0, phase * 8 / 10);
            let max_len = ((phase as f64 * max_frac) as u64).clamp(1, phase - a);
            (ns(a), ns(rng.range(max_len / 10, max_len).max(1)))
        };
        for link in 0..2 {
            if rng.chance(0.7) {
                let mut imp = Impairments::default();
                if rng.chance(0.6) {
                    imp.loss = prob(rng.log_uniform(1e-5, 0.2));
                }
                if rng.chance(0.3) {
                    imp.burst =
                        BurstLoss::mean(rng.log_uniform(1e-4, 1e-2), rng.real(1.5, 8.0)).ok();
                }
                if rng.chance(0.3) {
                    imp.hec_single = prob(rng.log_uniform(1e-4, 1e-2));
                }
                if rng.chance(0.2) {
                    imp.hec_multi = prob(rng.log_uniform(1e-4, 5e-3));
                }
                if rng.chance(0.4) {
                    imp.ber = prob(rng.log_uniform(1e-7, 1e-5));
                }
                if rng.chance(0.4) {
                    imp.delay = ns(rng.range(1_000, 2_000_000));
                    if rng.chance(0.6) {
                        imp.jitter = Jitter::Uniform(ns(rng.range(1_000, 500_000)));
                    }
                }
                if !imp.is_none() {
                    let (a, length) = if rng.chance(0.3) {
                        (Duration::ZERO, PHASE)
                    } else {
                        window(&mut rng, 0.5)
                    };
                    faults.push(Fault {
                        at: a,
                        length,
                        kind: FaultKind::Impair {
                            link,
                            impairments: imp,
                        },
                    });
                }
            }
            if rng.chance(0.3) {
                let (a, length) = window(&mut rng, 0.1);
                faults.push(Fault {
                    at: a,
                    length,
                    kind: FaultKind::LinkDown { link },
                });
            }
        }
        // The switch: a crash (every cell in it lost, the PVCs back from its
        // configuration on restart), and a clogged port (its queues fill and drop).
        if rng.chance(0.15) {
            let (a, length) = window(&mut rng, 0.1);
            faults.push(Fault {
                at: a,
                length,
                kind: FaultKind::SwitchCrash { switch: 0 },
            });
        }
        if rng.chance(0.25) {
            let port = rng.range(1, 2) as u16;
            let (a, length) = window(&mut rng, 0.05);
            faults.push(Fault {
                at: a,
                length,
                kind: FaultKind::Clog { switch: 0, port },
            });
        }
        TransportPlan { channels, faults }
    }
}

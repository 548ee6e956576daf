//! Swarm: one scenario over many seeds, each an independent run, spread over the cores.
//!
//! Seeds `from..from + n` run on `std::thread::scope` workers taking the next seed from a
//! shared counter; each run builds its own world in its thread, so the outcome of a seed
//! does not depend on which thread ran it or what ran beside it. Outcomes come back in seed
//! order. A failure's text names the seed, the invariant, the virtual time and the exact
//! command that replays it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::scenario::{RunReport, Scenario, run};
use crate::world::Violation;

/// What one seed did: `R` is the campaign's report (a scenario's [`RunReport`] by default;
/// the signalling campaign's is `signalling::SigReport`, the transport campaign's
/// `transport::TransportReport`).
#[derive(Clone, Debug, PartialEq)]
pub struct SeedOutcome<R = RunReport> {
    /// The seed.
    pub seed: u64,
    /// Its report, or the invariant it broke.
    pub result: Result<R, Violation>,
}

impl<R> SeedOutcome<R> {
    /// One line for a failure: seed, invariant, time, detail and `replay`, the command
    /// that replays it.
    pub fn failure_line(&self, replay: &str) -> Option<String> {
        let v = self.result.as_ref().err()?;
        Some(format!(
            "seed {}: {} at {} ns: {} — replay: {replay}",
            self.seed,
            v.invariant,
            v.at.as_nanos(),
            v.detail,
        ))
    }
}

impl SeedOutcome {
    /// [`failure_line`](Self::failure_line) with the scenario's replay command.
    pub fn failure_text(&self, scenario: &Scenario) -> Option<String> {
        self.failure_line(&scenario.replay(self.seed))
    }
}

/// A swarm's outcomes.
#[derive(Clone, Debug, PartialEq)]
pub struct SwarmReport<R = RunReport> {
    /// One per seed run, in seed order.
    pub outcomes: Vec<SeedOutcome<R>>,
    /// Wall-clock time of the whole swarm.
    pub wall: std::time::Duration,
}

impl<R> SwarmReport<R> {
    /// The failed seeds' outcomes.
    pub fn failures(&self) -> impl Iterator<Item = &SeedOutcome<R>> {
        self.outcomes.iter().filter(|o| o.result.is_err())
    }

    /// The report of seeds' results as [`seeds`] gives them.
    pub fn from_seeds((outcomes, wall): (Vec<SeedResult<R>>, std::time::Duration)) -> Self {
        SwarmReport {
            outcomes: outcomes
                .into_iter()
                .map(|(seed, result)| SeedOutcome { seed, result })
                .collect(),
            wall,
        }
    }
}

/// Runs seeds `from..from + n` of `scenario` on up to `threads` threads (0: the cores
/// available). With `stop_at_failure`, no new seed starts once one has failed (the
/// outcomes then hold the seeds that ran).
pub fn swarm(
    scenario: &Scenario,
    from: u64,
    n: u64,
    threads: usize,
    stop_at_failure: bool,
) -> SwarmReport {
    SwarmReport::from_seeds(seeds(from, n, threads, stop_at_failure, |seed| {
        run(scenario, seed, None)
    }))
}

/// One seed and what its run gave.
pub type SeedResult<R> = (u64, Result<R, Violation>);

/// Runs `one` for seeds `from..from + n` on up to `threads` threads (0: the cores
/// available), as [`swarm()`] does for a scenario: the outcomes in seed order, and the
/// wall-clock time. Any campaign's swarm is this with its own run.
pub fn seeds<R: Send>(
    from: u64,
    n: u64,
    threads: usize,
    stop_at_failure: bool,
    one: impl Fn(u64) -> Result<R, Violation> + Sync,
) -> (Vec<SeedResult<R>>, std::time::Duration) {
    let wall = std::time::Instant::now();
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        t => t,
    }
    .min(n.max(1) as usize);
    let next = AtomicU64::new(from);
    let failed = AtomicBool::new(false);
    let end = from.saturating_add(n);
    let out = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    if stop_at_failure && failed.load(Ordering::Relaxed) {
                        break;
                    }
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= end {
                        break;
                    }
                    let result = one(seed);
                    if result.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    // A poisoned lock means another worker panicked; its panic is the news.
                    if let Ok(mut o) = out.lock() {
                        o.push((seed, result));
                    }
                }
            });
        }
    });
    let mut outcomes = out.into_inner().unwrap_or_default();
    outcomes.sort_by_key(|o| o.0);
    (outcomes, wall.elapsed())
}

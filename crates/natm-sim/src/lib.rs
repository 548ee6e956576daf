//! natm's deterministic simulator (issue 6): the production switch, adapter and link cores
//! driven through virtual time, under seeded loads and faults, with invariants checked
//! after every event.
//!
//! What it is: a discrete-event driver ([`world::World`]) for natm-switch's
//! [`Switch`](natm_switch::Switch), natm-adapter's [`Adapter`](natm_adapter::Adapter) and
//! natm-netem's [`Netem`](natm_netem::Netem), unchanged: the simulator holds no copy of
//! protocol logic, only the glue the daemons have (hostd's VC shaping from a QoS,
//! switchd's port rates and CDVT) and oracles that check the cores' results
//! ([`check`]). Scenarios ([`scenario`]) are natm-topology files, the ones `natm lab up`
//! takes, with an optional `[sim]` table; [`faults`] draws fault plans from a seed and
//! [`swarm()`] runs many seeds.
//!
//! A second campaign, [`signalling`], runs natm-sig's UNI signalling entities (Q.2931 over
//! SSCF-UNI and SSCOP) over an impaired AAL5 link on VC 0.5 with its own invariants
//! (`natm sim swarm --signalling`).
//!
//! Switched VCs run in the cell network when a scenario says `calls = true` (the calls
//! scenario, [`CALLS_SCENARIO`], is `natm sim run|swarm --calls`): natm-host-core's
//! signalling in every host and natm-calls' [`CallControl`](natm_calls::CallControl) beside
//! every switch, driven by the world as hostd and switchd drive them, with hosts churning
//! calls ([`calls`]) and the end checks of [`scenario`]'s "Calls".
//!
//! A third campaign, [`transport`], runs natm-transport's endpoints as the applications
//! of two hosts, their TPDUs as AAL5 frames over PVCs through a switch under seeded link
//! faults, with the transport's invariants (`natm sim run|swarm --transport`).
//!
//! What it is not: no real time, threads, sockets or OS randomness on the path of a run;
//! no model of the daemons' own scheduling beyond a per-host CPU cost
//! ([`app::HostCosts`]).
//!
//! # Determinism
//!
//! One master seed per run. Every component draws from its own stream, seeded by
//! [`seed::sub_seed`] of the master seed and the component's name. Events run in (time,
//! sequence) order, so ties are broken the same way every time. The same seed gives the
//! same [`World::digest`](world::World::digest) and a byte-identical trace.
//!
//! # Call contract
//!
//! Build a [`world::World`] (switches, hosts with their [`app::App`], links,
//! cross-connects, VCs), [`start`](world::World::start) it, schedule
//! [`Action`]s, then [`run_until`](world::World::run_until) a virtual time;
//! it stops early with a [`Violation`] if an invariant breaks. Or call
//! [`run`] with a [`Scenario`] and a seed, as `natm sim run` does.
//!
//! # Speed
//!
//! The unit is the *cell event*: one cell handled by one component (an adapter sending
//! it, a link direction taking it, a switch port taking it, an adapter receiving it).
//! `cargo test --release -p natm-sim --test perf -- --ignored --nocapture` measures cell
//! events per second of wall-clock time on one core, with every check on and with the
//! per-cell checks off ([`scenario::run_unchecked`]).

pub mod app;
pub mod calib;
pub mod calls;
pub mod check;
pub mod eventbuilder;
pub mod faults;
pub mod load;
#[cfg(feature = "mutants")]
pub mod mutants;
pub mod queue;
mod render;
pub mod scenario;
pub mod seed;
pub mod signalling;
pub mod swarm;
pub mod transport;
pub mod units;
pub mod world;

pub use app::{App, AppIo, CallNote, HostCosts};
pub use scenario::{
    CALLS_SCENARIO, CallCounts, DEFAULT_SCENARIO, RunReport, Scenario, ScenarioError, run,
};
pub use swarm::{SeedOutcome, SwarmReport, seeds, swarm};
pub use world::{
    Action, ConnId, Dirs, End, HostConfig, HostId, LinkConfig, LinkId, SimError, Stats, SwitchId,
    VcOptions, Violation, World,
};

//! `natm perf calls`: switched-VC set-up latency and the set-up + release rate between two
//! hosts of a running lab, beside a baseline measured in the same run.
//!
//! The server's host registers one listener (selector 1 of its address) that accepts by
//! itself as a TCP listener does ([`natm::Host::listen_accepting`]), served by a thread
//! that takes the calls and drops a VC once the caller released it, as a server's accept
//! loop would. The client's host places calls to it from `depth` threads, each on its own
//! connection to hostd, so `depth` calls are outstanding at once and the rate measures the network's call handling rather than
//! one round trip. A call is: [`natm::Host::call`] until its VC is open (the set-up latency,
//! as the application sees it; hostd's own figure, from its request to the network's
//! CONNECT, is reported beside it), then dropping the VC, which hands hostd the release
//! (as a socket's close(2) does). The rate is the calls of the measured phase over its
//! wall time, which ends once neither host holds a call any more (every release done at
//! both ends), after `warmup` calls unrecorded (and released).
//!
//! The baseline is a TCP connect + accept + close on loopback with as many connections
//! outstanding (a client thread and an accepting thread each; a connection counts once the
//! accepting side answered it, as a call counts once the callee did): the kernel's own
//! connection set-up and teardown between two sockets of this machine, the cost floor of
//! any connection set-up here with no network between. (A PVC open + close through
//! hostd measures the channel manager, which a call crosses too; TCP is what an
//! application would otherwise use, and needs no lab.)
//!
//! [`host_pair`] picks the two hosts from the lab's topology: two hosts of one switch by
//! default, or the pair with the most switches between them.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::{TcpListener, TcpStream};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use natm::{Aesa, CallOptions, ChannelOptions, DataPath, Qos};
use natm_lab::topology::Topology;
use serde::Serialize;

use crate::Error;
use crate::stats::quantile;

/// What to measure.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The calling host: a name (its daemon's default socket) or a socket path (holds `/`).
    pub client: String,
    /// The called host, likewise.
    pub server: String,
    /// The two hosts as the report names them (e.g. the lab's names of the sockets).
    pub names: (String, String),
    /// Switches between them, when the caller knows (for the report).
    pub switches: Option<usize>,
    /// The calls' QoS.
    pub qos: Qos,
    /// The VCs' data path (the daemon path by default: no channel memory per call).
    pub path: DataPath,
    /// Calls outstanding (threads on each side), 1..=[`MAX_DEPTH`].
    pub depth: u32,
    /// Calls recorded.
    pub count: u64,
    /// Calls before recording starts.
    pub warmup: u64,
    /// Measure the TCP baseline too.
    pub baseline: bool,
    /// How long hostd waits for the network's answer to a call.
    pub timeout: Duration,
}

/// The most calls outstanding.
pub const MAX_DEPTH: u32 = 64;

/// The selector of the server's listener.
const SELECTOR: u8 = 1;

/// Quantiles of a latency, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Quantiles {
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
}

impl Quantiles {
    /// Of `samples` (sorted here).
    pub fn of(samples: &mut [u64]) -> Quantiles {
        samples.sort_unstable();
        Quantiles {
            p50: quantile(samples, 0.5),
            p90: quantile(samples, 0.9),
            p99: quantile(samples, 0.99),
            max: samples.last().copied().unwrap_or(0),
        }
    }
}

/// The baseline's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Baseline {
    /// What it is.
    pub name: &'static str,
    /// Connections set up and closed per second.
    pub per_s: f64,
    /// Connect latency, ns.
    pub setup_ns: Quantiles,
    /// Connections measured (at most [`BASELINE_MAX`]: closed TCP connections wait in
    /// TIME_WAIT holding a port).
    pub count: u64,
}

/// The most TCP connections the baseline makes.
pub const BASELINE_MAX: u64 = 20_000;

/// What was measured: `natm perf calls --json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The calling host.
    pub client: String,
    /// The called host.
    pub server: String,
    /// Switches between them, when known.
    pub switches: Option<usize>,
    /// The called address (the first listener's).
    pub called: String,
    /// The calls' QoS.
    pub qos: String,
    /// The VCs' data path.
    pub path: &'static str,
    /// Calls outstanding.
    pub depth: u32,
    /// Calls completed in the measured phase.
    pub calls: u64,
    /// Warm-up calls.
    pub warmup: u64,
    /// Set-up + release rate: calls completed per second of the measured phase.
    pub calls_per_s: f64,
    /// Set-up latency as the application saw it (call to open VC), ns.
    pub setup_ns: Quantiles,
    /// Set-up latency as hostd measured it (its request to the network's CONNECT), ns.
    pub hostd_setup_ns: Quantiles,
    /// Calls that failed in the measured phase.
    pub failures: u64,
    /// The first failure's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
    /// The baseline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
    /// `calls_per_s` over the baseline's rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
}

/// The switches a call from host `a` to host `b` of `topo` crosses (both hosts' own
/// counted), by the fewest trunks; `None` when either host has no switch or none joins
/// them.
pub fn switches_between(topo: &Topology, a: &str, b: &str) -> Option<usize> {
    let is_switch = |n: &str| topo.switches.iter().any(|s| s == n);
    let switch_of = |h: &str| {
        topo.links.iter().find_map(|l| match (l.a == h, l.b == h) {
            (true, _) if is_switch(&l.b) => Some(l.b.as_str()),
            (_, true) if is_switch(&l.a) => Some(l.a.as_str()),
            _ => None,
        })
    };
    let (from, to) = (switch_of(a)?, switch_of(b)?);
    let mut dist = BTreeMap::from([(from, 1usize)]);
    let mut queue = VecDeque::from([from]);
    while let Some(s) = queue.pop_front() {
        let d = dist[s];
        for l in &topo.links {
            let next = match (l.a == s, l.b == s) {
                (true, _) => l.b.as_str(),
                (_, true) => l.a.as_str(),
                _ => continue,
            };
            if is_switch(next) && !dist.contains_key(next) {
                dist.insert(next, d + 1);
                queue.push_back(next);
            }
        }
    }
    dist.get(to).copied()
}

/// Two hosts of `topo` and the switches between them: by default the first two hosts (in
/// file order) on one switch, else the closest pair; with `farthest`, the pair with the
/// most switches between them. `None` when the topology has no two hosts joined by
/// switches.
pub fn host_pair(topo: &Topology, farthest: bool) -> Option<(String, String, usize)> {
    let mut best: Option<(String, String, usize)> = None;
    for (i, a) in topo.hosts.iter().enumerate() {
        for b in &topo.hosts[i + 1..] {
            let Some(n) = switches_between(topo, a, b) else {
                continue;
            };
            let better = match &best {
                None => true,
                Some((_, _, m)) if farthest => n > *m,
                Some((_, _, m)) => n < *m,
            };
            if better {
                best = Some((a.clone(), b.clone(), n));
            }
        }
    }
    best
}

fn connect(host: &str) -> Result<natm::Host, Error> {
    if host.contains('/') {
        natm::Host::connect_path(host)
    } else {
        natm::Host::connect(host)
    }
    .map_err(|source| Error::Natm {
        what: format!("host {host}"),
        source,
    })
}

/// How long a listener's thread waits for a call before it looks at its stop flag.
const ACCEPT_SLICE: Duration = Duration::from_millis(20);
/// The most accepted VCs a listener's thread holds waiting for their release.
const HELD: usize = 256;

/// A listener's thread: takes every call hostd accepted for it, holds each VC until the
/// caller's release reaches it (or more than [`HELD`] are held), until `stop`.
fn serve(listener: &natm::Listener, stop: &AtomicBool) {
    let mut held: VecDeque<natm::Vc> = VecDeque::new();
    while !stop.load(Ordering::Acquire) {
        if let Ok((vc, _, _)) = listener.accept_within(Some(ACCEPT_SLICE)) {
            held.push_back(vc);
        }
        // Released VCs go (their notices were read with the arrivals); the rest stay.
        held.retain(|vc| vc.released().is_none());
        while held.len() > HELD {
            held.pop_front();
        }
    }
}

/// How long the calls placed may take to be released at both ends.
const RELEASE_WAIT: Duration = Duration::from_secs(10);

/// Waits until `hosts` hold no call.
fn released(hosts: &[&natm::Host]) -> Result<(), Error> {
    let deadline = Instant::now() + RELEASE_WAIT;
    for h in hosts {
        loop {
            let left = h
                .status()
                .map_err(|source| Error::Natm {
                    what: "a host's status".into(),
                    source,
                })?
                .calls
                .len();
            if left == 0 {
                break;
            }
            if Instant::now() > deadline {
                return Err(Error::Traffic(format!(
                    "{left} calls still held {} s after the last was placed",
                    RELEASE_WAIT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    Ok(())
}

/// What the calling threads gathered.
#[derive(Default)]
struct Gathered {
    setup: Vec<u64>,
    hostd: Vec<u64>,
    failures: u64,
    first_failure: Option<String>,
}

/// Places `total` calls from `hosts` (one thread each) to `called` (the same index);
/// records them when `record`. Stops early when failures pass a bound.
fn place(
    hosts: &[natm::Host],
    called: &[Aesa],
    opts: &CallOptions,
    total: u64,
    record: bool,
) -> Result<Gathered, Error> {
    let next = AtomicU64::new(0);
    let gathered = Mutex::new(Gathered::default());
    // Every call failing is a network that does not signal, not a measurement.
    let give_up = (total / 10).max(20);
    std::thread::scope(|s| {
        for (host, to) in hosts.iter().zip(called) {
            let (next, gathered) = (&next, &gathered);
            s.spawn(move || {
                let mut mine = Gathered::default();
                while next.fetch_add(1, Ordering::Relaxed) < total {
                    let t0 = Instant::now();
                    match host.call(to, opts.clone()) {
                        Ok(vc) => {
                            let setup = t0.elapsed().as_nanos() as u64;
                            let hostd = vc.call().map_or(0, |c| c.setup_ns);
                            drop(vc);
                            if record {
                                mine.setup.push(setup);
                                mine.hostd.push(hostd);
                            }
                        }
                        Err(e) => {
                            mine.failures += 1;
                            mine.first_failure.get_or_insert_with(|| e.to_string());
                            if mine.failures >= give_up {
                                next.store(total, Ordering::Relaxed);
                            }
                        }
                    }
                }
                let mut g = gathered.lock().unwrap_or_else(|p| p.into_inner());
                g.setup.append(&mut mine.setup);
                g.hostd.append(&mut mine.hostd);
                g.failures += mine.failures;
                if g.first_failure.is_none() {
                    g.first_failure = mine.first_failure;
                }
            });
        }
    });
    let g = gathered.into_inner().unwrap_or_else(|p| p.into_inner());
    if g.setup.is_empty() && record {
        return Err(Error::Traffic(format!(
            "no call was set up: {}",
            g.first_failure.as_deref().unwrap_or("no call was placed")
        )));
    }
    Ok(g)
}

/// Runs the measurement of `plan`.
pub fn run(plan: &Plan) -> Result<Report, Error> {
    if !(1..=MAX_DEPTH).contains(&plan.depth) || plan.count == 0 {
        return Err(Error::Plan(format!(
            "depth {} and count {}: expected 1 to {MAX_DEPTH} calls outstanding and at least one call",
            plan.depth, plan.count
        )));
    }
    let server = connect(&plan.server)?;
    let ch = ChannelOptions::default()
        .path(plan.path)
        .buffers(2)
        .buffer_size(4096);
    let listener = server
        .listen_accepting(Some(SELECTOR), ch.clone())
        .map_err(|source| Error::Natm {
            what: format!("listening on host {} (selector {SELECTOR})", plan.server),
            source,
        })?;
    let called = vec![*listener.address(); plan.depth as usize];
    let hosts = (0..plan.depth)
        .map(|_| connect(&plan.client))
        .collect::<Result<Vec<_>, _>>()?;
    let opts = CallOptions::new()
        .qos(plan.qos)
        .channel(ch.clone())
        .timeout(plan.timeout);
    let stop = AtomicBool::new(false);
    let measured = std::thread::scope(|s| {
        let (l, stop) = (&listener, &stop);
        s.spawn(move || serve(l, stop));
        let r = (|| -> Result<(Gathered, Duration), Error> {
            if plan.warmup > 0 {
                place(&hosts, &called, &opts, plan.warmup, false)?;
                released(&[&hosts[0], &server])?;
            }
            let start = Instant::now();
            let g = place(&hosts, &called, &opts, plan.count, true)?;
            // A call counts once released at both ends: the callers' drops only handed
            // the releases to hostd.
            released(&[&hosts[0], &server])?;
            Ok((g, start.elapsed()))
        })();
        stop.store(true, Ordering::Release);
        r
    });
    let (mut g, elapsed) = measured?;
    drop(listener);
    let calls = g.setup.len() as u64;
    let calls_per_s = calls as f64 / elapsed.as_secs_f64().max(1e-9);
    let baseline = if plan.baseline {
        Some(tcp_baseline(plan.depth, plan.count.min(BASELINE_MAX)).map_err(Error::Measurement)?)
    } else {
        None
    };
    Ok(Report {
        client: plan.names.0.clone(),
        server: plan.names.1.clone(),
        switches: plan.switches,
        called: called[0].to_string(),
        qos: plan.qos.to_string(),
        path: plan.path.name(),
        depth: plan.depth,
        calls,
        warmup: plan.warmup,
        calls_per_s,
        setup_ns: Quantiles::of(&mut g.setup),
        hostd_setup_ns: Quantiles::of(&mut g.hostd),
        failures: g.failures,
        first_failure: g.first_failure,
        ratio: baseline
            .as_ref()
            .filter(|b| b.per_s > 0.0)
            .map(|b| calls_per_s / b.per_s),
        baseline,
    })
}

/// TCP connect + close on loopback, `depth` at a time, `count` in all: a connection counts
/// once the server side accepted it (it writes one byte, which the client waits for, as a
/// caller waits for the callee's answer), and `depth` threads accept. (Without the byte a
/// client's connect completes before any accept, its connections pile up in the listen
/// backlog, and once that is full SYNs are dropped and retried after a second.)
pub fn tcp_baseline(depth: u32, count: u64) -> io::Result<Baseline> {
    use std::io::{Read as _, Write as _};
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let next = AtomicU64::new(0);
    let accepts = AtomicU64::new(0);
    let samples = Mutex::new(Vec::with_capacity(count as usize));
    let failed: Mutex<Option<io::Error>> = Mutex::new(None);
    let start = Instant::now();
    std::thread::scope(|s| {
        let (listener, accepts) = (&listener, &accepts);
        for _ in 0..depth {
            // Exactly `count` accepts in all: none waits for a connection that never comes
            // (a failed client makes up its share below).
            s.spawn(move || {
                while accepts.fetch_add(1, Ordering::Relaxed) < count {
                    if let Ok((mut c, _)) = listener.accept() {
                        let _ = c.write_all(b"!");
                    }
                }
            });
        }
        let clients: Vec<_> = (0..depth)
            .map(|_| {
                let (next, samples, failed) = (&next, &samples, &failed);
                s.spawn(move || {
                    let mut mine = Vec::new();
                    let mut byte = [0u8; 1];
                    while next.fetch_add(1, Ordering::Relaxed) < count {
                        let t0 = Instant::now();
                        let r = TcpStream::connect(addr).and_then(|mut c| c.read_exact(&mut byte));
                        match r {
                            Ok(()) => mine.push(t0.elapsed().as_nanos() as u64),
                            Err(e) => {
                                *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                                break;
                            }
                        }
                    }
                    let n = mine.len();
                    samples
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .append(&mut mine);
                    n
                })
            })
            .collect();
        let done: usize = clients.into_iter().map(|c| c.join().unwrap_or(0)).sum();
        // Wake the acceptors still waiting for the connections that failed.
        for _ in done as u64..count {
            let _ = TcpStream::connect(addr);
        }
    });
    let elapsed = start.elapsed();
    if let Some(e) = failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(io::Error::new(e.kind(), format!("TCP baseline: {e}")));
    }
    let mut samples = samples.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(Baseline {
        name: "tcp connect+accept+close (loopback)",
        per_s: samples.len() as f64 / elapsed.as_secs_f64().max(1e-9),
        count: samples.len() as u64,
        setup_ns: Quantiles::of(&mut samples),
    })
}

impl Report {
    /// The report as `natm perf calls` prints it.
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut t = String::new();
        let through = self.switches.map_or_else(String::new, |n| {
            format!(" through {n} switch{}", if n == 1 { "" } else { "es" })
        });
        let _ = writeln!(
            t,
            "natm perf calls: {} → {}{through}, QoS {}, {} path, {} outstanding, {} calls after {} warm-up",
            self.client, self.server, self.qos, self.path, self.depth, self.calls, self.warmup
        );
        let _ = writeln!(
            t,
            "set-up latency in µs; rate in set-ups + releases per second"
        );
        let _ = writeln!(
            t,
            "{:<36} {:>9} {:>9} {:>9} {:>9} {:>12}",
            "", "p50", "p90", "p99", "max", "rate"
        );
        let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
        let row = |t: &mut String, name: &str, q: &Quantiles, rate: Option<f64>| {
            let _ = writeln!(
                t,
                "{:<36} {:>9} {:>9} {:>9} {:>9} {:>12}",
                name,
                us(q.p50),
                us(q.p90),
                us(q.p99),
                us(q.max),
                rate.map_or_else(|| "-".into(), |r| format!("{r:.0}"))
            );
        };
        row(
            &mut t,
            "natm call (application)",
            &self.setup_ns,
            Some(self.calls_per_s),
        );
        row(
            &mut t,
            "natm call (hostd's set-up)",
            &self.hostd_setup_ns,
            None,
        );
        if let Some(b) = &self.baseline {
            row(&mut t, b.name, &b.setup_ns, Some(b.per_s));
        }
        if let Some(r) = self.ratio {
            let _ = writeln!(t, "natm calls/s over the baseline's: {r:.2}");
        }
        if self.failures > 0 {
            let _ = writeln!(
                t,
                "{} calls failed; the first: {}",
                self.failures,
                self.first_failure.as_deref().unwrap_or("")
            );
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(text: &str) -> Topology {
        Topology::parse(text, None).unwrap()
    }

    const THREE: &str = r#"
[[switch]]
name = "s1"
[[switch]]
name = "s2"
[[switch]]
name = "s3"
[[host]]
name = "h1"
[[host]]
name = "h2"
[[host]]
name = "h3"
[[host]]
name = "h4"
[[link]]
a = "s1"
b = "s2"
[[link]]
a = "s2"
b = "s3"
[[link]]
a = "h1"
b = "s1"
[[link]]
a = "h2"
b = "s2"
[[link]]
a = "h3"
b = "s3"
[[link]]
a = "h4"
b = "s1"
"#;

    #[test]
    fn the_pair_is_two_hosts_of_one_switch_or_the_farthest() {
        let t = topo(THREE);
        assert_eq!(host_pair(&t, false), Some(("h1".into(), "h4".into(), 1)));
        assert_eq!(host_pair(&t, true), Some(("h1".into(), "h3".into(), 3)));
        assert_eq!(switches_between(&t, "h2", "h3"), Some(2));
        assert_eq!(switches_between(&t, "h2", "nobody"), None);
        // The lab's default: two hosts on one switch, whichever way it is asked.
        let d = topo(natm_lab::topology::DEFAULT_TOPOLOGY);
        assert_eq!(host_pair(&d, false), Some(("h1".into(), "h2".into(), 1)));
        assert_eq!(host_pair(&d, true), host_pair(&d, false));
    }

    #[test]
    fn the_baseline_connects_and_closes_as_many_as_asked() {
        let b = tcp_baseline(2, 50).unwrap();
        assert_eq!(b.count, 50);
        assert!(b.per_s > 0.0);
        assert!(b.setup_ns.p50 <= b.setup_ns.p99 && b.setup_ns.p99 <= b.setup_ns.max);
    }

    #[test]
    fn the_json_has_calls_per_s_and_the_latency_quantiles() {
        let r = Report {
            client: "h1".into(),
            server: "h2".into(),
            switches: Some(1),
            called: "47.0005.80ffe1000000f21a3599.0020481a3599.01".into(),
            qos: "ubr".into(),
            path: "daemon",
            depth: 8,
            calls: 1000,
            warmup: 100,
            calls_per_s: 5000.0,
            setup_ns: Quantiles {
                p50: 100_000,
                p90: 150_000,
                p99: 200_000,
                max: 300_000,
            },
            hostd_setup_ns: Quantiles::default(),
            failures: 0,
            first_failure: None,
            baseline: Some(Baseline {
                name: "tcp connect+accept+close (loopback)",
                per_s: 20000.0,
                setup_ns: Quantiles::default(),
                count: 1000,
            }),
            ratio: Some(0.25),
        };
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["calls_per_s"], 5000.0);
        assert_eq!(j["setup_ns"]["p50"], 100_000);
        assert_eq!(j["setup_ns"]["p99"], 200_000);
        assert_eq!(j["baseline"]["per_s"], 20000.0);
        assert!(j.get("first_failure").is_none());
        let t = r.table();
        assert!(t.contains("h1 → h2 through 1 switch,"), "{t}");
        assert!(t.contains("natm call (application)"), "{t}");
        assert!(t.contains("0.25"), "{t}");
    }
}

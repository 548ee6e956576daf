//! Running the event builder: the switch and host layout ([`port_name`] and the port
//! numbers), the queue and link sampler, and [`run`].

use std::fmt;

use natm_core::{Aal, Duration, Instant, Qos, TrafficClass, TrafficParams, VcId};

use natm_switch::{CrossConnect, Endpoint, PortConfig, PortId, SwitchConfig};

use crate::app::{App, HostCosts};
use crate::world::{End, HostConfig, HostId, LinkConfig, World};

use super::{
    ASSIGNMENT_LEN, Destination, Drops, EbConfig, EbError, EbReport, EbStats, EventCounts,
    FIRST_VCI, Latency, LinkOccupancy, QueueOccupancy, QueueSample, Source, Supervisor, secs,
    to_destination, to_source, to_supervisor,
};

/// The name of switch port `p` (1-based): `sup`, `src0`…, `dst0`….
pub fn port_name(p: u16, sources: usize) -> String {
    let i = usize::from(p);
    match i {
        0 => "none".into(),
        1 => "sup".into(),
        _ if i < 2 + sources => format!("src{}", i - 2),
        _ => format!("dst{}", i - 2 - sources),
    }
}

/// Switch port numbers: the supervisor's, source `s`'s, destination `d`'s.
pub fn supervisor_port() -> u16 {
    1
}

/// Switch port of source `s`.
pub fn source_port(s: usize) -> u16 {
    (2 + s) as u16
}

/// Switch port of destination `d`.
pub fn destination_port(d: usize, sources: usize) -> u16 {
    (2 + sources + d) as u16
}

/// Accumulates per-port samples into link and queue occupancy.
struct Sampler {
    /// Cells per second of each line; `None` when unlimited.
    line_cps: Option<f64>,
    ports: usize,
    last_t: u64,
    last_in: Vec<u64>,
    last_out: Vec<u64>,
    /// Per link (2 per port: in = host→switch, out = switch→host): sum and max occupancy.
    occ_sum: Vec<f64>,
    occ_max: Vec<f64>,
    intervals: u64,
    queue_max: Vec<u32>,
    queue_sum: f64,
    samples: Vec<QueueSample>,
}

impl Sampler {
    fn new(ports: usize, line_cps: Option<f64>) -> Sampler {
        Sampler {
            line_cps,
            ports,
            last_t: 0,
            last_in: vec![0; ports],
            last_out: vec![0; ports],
            occ_sum: vec![0.0; 2 * ports],
            occ_max: vec![0.0; 2 * ports],
            intervals: 0,
            queue_max: vec![0; ports],
            queue_sum: 0.0,
            samples: Vec::new(),
        }
    }

    /// One sample at `t_ns`: per port, cumulative cells in and out and cells queued. Link
    /// occupancy counts only when `links` (the draining after the load is left out).
    fn sample(&mut self, t_ns: u64, links: bool, ports: impl Iterator<Item = (u64, u64, u32)>) {
        let dt = t_ns.saturating_sub(self.last_t);
        let capacity = self
            .line_cps
            .filter(|_| links)
            .map(|cps| cps * dt as f64 / 1e9);
        let (mut qmax, mut qsum) = (0u32, 0u64);
        for (i, (cin, cout, q)) in ports.enumerate().take(self.ports) {
            if let Some(cap) = capacity.filter(|&c| c > 0.0) {
                for (k, d) in [
                    (2 * i, cin.saturating_sub(self.last_in[i])),
                    (2 * i + 1, cout.saturating_sub(self.last_out[i])),
                ] {
                    let occ = d as f64 / cap;
                    self.occ_sum[k] += occ;
                    self.occ_max[k] = self.occ_max[k].max(occ);
                }
            }
            self.last_in[i] = cin;
            self.last_out[i] = cout;
            self.queue_max[i] = self.queue_max[i].max(q);
            qmax = qmax.max(q);
            qsum += u64::from(q);
        }
        if dt > 0 && links {
            self.intervals += 1;
        }
        self.last_t = t_ns;
        let mean = qsum as f64 / self.ports.max(1) as f64;
        self.queue_sum += mean;
        self.samples.push(QueueSample {
            t_s: t_ns as f64 / 1e9,
            max_cells: qmax,
            mean_cells: mean,
        });
    }

    fn links(&self, sources: usize) -> Option<LinkOccupancy> {
        self.line_cps?;
        if self.intervals == 0 || self.ports == 0 {
            return None;
        }
        let n = self.intervals as f64;
        let means: Vec<f64> = self.occ_sum.iter().map(|s| s / n).collect();
        let (worst, &worst_mean) = means
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))?;
        let port = port_name((worst / 2 + 1) as u16, sources);
        Some(LinkOccupancy {
            mean: means.iter().sum::<f64>() / means.len() as f64,
            max: self.occ_max.iter().copied().fold(0.0, f64::max),
            worst_link: if worst % 2 == 0 {
                format!("{port}→s1")
            } else {
                format!("s1→{port}")
            },
            worst_link_mean: worst_mean,
            worst_link_max: self.occ_max[worst],
        })
    }

    fn queues(self, sources: usize) -> QueueOccupancy {
        let (worst, max) = self
            .queue_max
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
            .map_or((0, 0), |(i, &m)| (i, m));
        QueueOccupancy {
            worst_port: port_name((worst + 1) as u16, sources),
            worst_port_max_cells: max,
            mean_cells: self.queue_sum / self.samples.len().max(1) as f64,
            samples: self.samples,
        }
    }
}

/// Buffer memory one host may reserve (its buffers are allocated zeroed, so only the ones
/// used become resident).
const HOST_BUFFER_BYTES: usize = 256 << 20;

/// A host's make-up for `peers` VCs: buffers the size of the largest SDU it handles, four
/// per VC each way (at least 32), within [`HOST_BUFFER_BYTES`].
fn host_config(peers: usize, largest: usize, costs: HostCosts) -> HostConfig {
    let per_side = (4 * peers).max(32);
    let cap = (HOST_BUFFER_BYTES / largest.max(1) / 2).max(1);
    let buffers = (2 * per_side.min(cap)) as u32;
    let mut c = HostConfig::new(buffers, largest);
    c.adapter.max_vcs = peers.max(1);
    c.costs = costs;
    c
}

fn network(e: impl fmt::Display) -> EbError {
    EbError::Network(e.to_string())
}

/// Runs the event builder `config` describes and reports what it measured.
///
/// One switch `s1`; port 1 the supervisor's, ports 2.. the sources', then the
/// destinations'; each host on its own link at `config.link`. Every VC is a PVC
/// cross-connect: UBR for the supervisor's, `config.qos` for the data VCs (`tx` the
/// fragments' direction, booked by CAC on the destination's port; `rx` the requests').
/// The supervisor assigns events for `config.duration`; the run goes on for twice the
/// timeout more so that every event is decided. Queues and links are sampled every
/// `config.sample_interval`.
pub fn run(config: &EbConfig) -> Result<EbReport, EbError> {
    config.validate()?;
    let wall = std::time::Instant::now();
    let (ns, nd) = (config.sources, config.destinations);
    let stats = EbStats::shared(nd);
    let data_qos = Qos {
        aal: Aal::Aal5,
        ..config.qos
    };
    let ubr = TrafficParams {
        class: TrafficClass::Ubr,
        ..TrafficParams::default()
    };
    let control_qos = Qos {
        tx: ubr,
        rx: ubr,
        aal: Aal::Aal5,
    };
    let swapped = |q: Qos| Qos {
        tx: q.rx,
        rx: q.tx,
        aal: q.aal,
    };

    let mut world = World::new(config.seed);
    let sw = world.add_switch(
        "s1",
        SwitchConfig {
            max_connections: u32::try_from(ns * nd + nd)
                .map_err(|_| EbError::Config("too many connections for one switch".into()))?,
        },
    );
    let link = LinkConfig {
        rate: config.link,
        ..LinkConfig::default()
    };
    let largest = config.fragment.max(ASSIGNMENT_LEN);
    let stop_at = Instant::ZERO
        .checked_add(config.duration)
        .ok_or_else(|| EbError::Config("duration too long".into()))?;
    let mut hosts = Vec::with_capacity(1 + ns + nd);
    let mut links = Vec::with_capacity(1 + ns + nd);
    let mut add = |world: &mut World, name: String, port: u16, peers: usize, app: Box<dyn App>| {
        let h = world
            .add_host(&name, host_config(peers, largest, config.costs), app)
            .map_err(network)?;
        let l = world
            .add_link(
                End::Host(h),
                End::Port(sw, PortId(port), PortConfig::default()),
                link,
            )
            .map_err(network)?;
        hosts.push(h);
        links.push(l);
        Ok::<HostId, EbError>(h)
    };
    let sup = add(
        &mut world,
        "sup".into(),
        supervisor_port(),
        nd,
        Box::new(Supervisor::new(
            nd,
            config.rate_hz,
            config.arrivals,
            config.policy,
            stop_at,
            config.timeout,
            stats.clone(),
        )),
    )?;
    let mut srcs = Vec::with_capacity(ns);
    for s in 0..ns {
        let app = Box::new(Source::new(config.fragment, stats.clone()));
        srcs.push(add(&mut world, format!("src{s}"), source_port(s), nd, app)?);
    }
    let mut dsts = Vec::with_capacity(nd);
    for d in 0..nd {
        let app = Box::new(Destination::new(d, ns, config.timeout, stats.clone()));
        let port = destination_port(d, ns);
        dsts.push(add(&mut world, format!("dst{d}"), port, ns + 1, app)?);
    }

    // Cross-connects, made together and audited once; a refusal (CAC) names the pair and
    // the binding constraint.
    let vci = |i: usize| FIRST_VCI + i as u16;
    let mut xcs = Vec::with_capacity(nd + ns * nd);
    for d in 0..nd {
        let a = Endpoint::vc(supervisor_port(), 0, vci(d));
        let b = Endpoint::vc(destination_port(d, ns), 0, vci(0));
        xcs.push((
            "sup".to_string(),
            format!("dst{d}"),
            CrossConnect::new(a, b, control_qos),
        ));
    }
    for s in 0..ns {
        for d in 0..nd {
            let a = Endpoint::vc(source_port(s), 0, vci(d));
            let b = Endpoint::vc(destination_port(d, ns), 0, vci(1 + s));
            xcs.push((
                format!("src{s}"),
                format!("dst{d}"),
                CrossConnect::new(a, b, data_qos),
            ));
        }
    }
    let all: Vec<CrossConnect> = xcs.iter().map(|(_, _, xc)| *xc).collect();
    world.connect_all(sw, &all).map_err(|(i, e)| {
        let (a, b, xc) = &xcs[i];
        EbError::Network(format!(
            "cross-connect {a} ↔ {b} ({} ↔ {}, qos {}): {e}",
            xc.a, xc.b, xc.qos
        ))
    })?;
    let name_of = |world: &World, h: HostId| world.host_name(h).to_string();
    let open = |world: &mut World, h: HostId, vc: VcId, q: &Qos| {
        world
            .open_vc(h, vc, q)
            .map_err(|e| EbError::Network(format!("VC {vc} at {}: {e}", name_of(world, h))))
    };
    for (d, &h) in dsts.iter().enumerate() {
        open(&mut world, sup, to_destination(d), &control_qos)?;
        open(&mut world, h, to_supervisor(), &control_qos)?;
        for (s, &src) in srcs.iter().enumerate() {
            open(&mut world, src, to_destination(d), &data_qos)?;
            open(&mut world, h, to_source(s), &swapped(data_qos))?;
        }
    }

    world.start();
    let grace = Duration::from_nanos(config.timeout.as_nanos().saturating_mul(2));
    let end = stop_at
        .checked_add(grace)
        .and_then(|t| t.checked_add(config.sample_interval))
        .ok_or_else(|| EbError::Config("duration + twice the timeout is too long".into()))?;
    let line_cps = config.link.exact().map(|(n, d)| n as f64 / d.max(1) as f64);
    let mut sampler = Sampler::new(hosts.len(), line_cps);
    let step = config.sample_interval.as_nanos();
    let mut t = 0u64;
    while t < end.as_nanos() {
        t = t.saturating_add(step).min(end.as_nanos());
        world
            .run_until(Instant::from_nanos(t))
            .map_err(|v| EbError::Invariant(v.to_string()))?;
        let switch = world.switch(sw);
        let ports = hosts.iter().zip(&links).enumerate().map(|(i, (_, &l))| {
            let [up, down] = world.link_counters(l);
            let q = switch
                .port_counters(PortId(i as u16 + 1))
                .map_or(0, |c| c.queued().min(u64::from(u32::MAX)) as u32);
            (up.carried, down.carried, q)
        });
        sampler.sample(t, t <= stop_at.as_nanos(), ports);
    }

    let mut drops = Vec::new();
    let mut add_drop = |place: &str, reason: &str, count: u64, unit: &str| {
        if count > 0 {
            drops.push(Drops {
                place: place.to_string(),
                reason: reason.to_string(),
                count,
                unit: unit.to_string(),
            });
        }
    };
    let switch = world.switch(sw);
    for (i, (&h, &l)) in hosts.iter().zip(&links).enumerate() {
        let name = world.host_name(h).to_string();
        if let Some(c) = switch.port_counters(PortId(i as u16 + 1)) {
            let place = format!("s1 port {} ({name})", i + 1);
            for (reason, n) in [
                ("output queue full", c.queue_full),
                ("early packet discard", c.epd),
                ("partial packet discard", c.ppd),
                ("policed (input)", c.policed),
                ("unknown VC (input)", c.unknown_vc),
                ("header error (input)", c.hec_discarded),
                ("port down", c.port_down),
                ("flushed", c.flushed),
            ] {
                add_drop(&place, reason, n, "cells");
            }
        }
        let [up, down] = world.link_counters(l);
        for (dir, c) in [
            (format!("link {name}→s1"), up),
            (format!("link s1→{name}"), down),
        ] {
            add_drop(
                &dir,
                "line queue full",
                c.queue_drops + c.overflow_drops,
                "cells",
            );
            add_drop(
                &dir,
                "lost on the line",
                c.lost_random + c.lost_burst,
                "cells",
            );
        }
        let a = world.adapter(h).counters();
        let place = format!("host {name} adapter");
        for (reason, n) in [
            ("no receive buffer", a.no_buffer),
            ("bad CRC", a.crc),
            ("oversize", a.oversize),
            ("bad length", a.length),
            ("reassembly timeout", a.timeout),
            ("transmit refused", a.tx_refused),
        ] {
            add_drop(&place, reason, n, "frames");
        }
    }
    let ws = world.stats();
    add_drop("hosts", "sends refused", ws.sends_refused, "SDUs");
    let cells_dropped = drops
        .iter()
        .filter(|d| d.unit == "cells")
        .map(|d| d.count)
        .sum();

    let st = stats.borrow();
    let per_dest = &st.built_per_destination;
    let wall_seconds = wall.elapsed().as_secs_f64();
    Ok(EbReport {
        config: config.echo(),
        events: EventCounts {
            assigned: st.assigned,
            built: st.built,
            lost: st.timed_out + st.unanswered,
            timed_out: st.timed_out,
            unanswered: st.unanswered,
            pending: st.pending(),
            achieved_rate_hz: st.built as f64 / secs(config.duration),
            late_fragments: st.late_fragments,
            malformed: st.malformed,
            send_failures: st.send_failures,
            built_per_destination_min_max: (
                per_dest.iter().copied().min().unwrap_or(0),
                per_dest.iter().copied().max().unwrap_or(0),
            ),
        },
        latency: Latency::of(&st.latency),
        links: sampler.links(ns),
        queues: sampler.queues(ns),
        drops,
        cells_dropped,
        sim_seconds: world.now().as_nanos() as f64 / 1e9,
        wall_seconds,
        cell_events: ws.cell_events,
        cell_events_per_s: ws.cell_events as f64 / wall_seconds.max(1e-9),
        peak_rss_bytes: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn sampler_divides_cells_by_line_capacity_and_names_the_worst() {
        // 2 ports at 1,000,000 cells/s, 1 ms samples: capacity 1000 cells per sample.
        let mut sm = Sampler::new(2, Some(1e6));
        sm.sample(MS, true, [(100, 500, 3), (0, 0, 0)].into_iter());
        sm.sample(2 * MS, true, [(300, 1500, 9), (50, 0, 1)].into_iter());
        let l = sm.links(0).unwrap();
        // Port 1 out: 500 then 1000 cells of 1000.
        assert_eq!(l.worst_link, "s1→sup");
        assert!((l.worst_link_mean - 0.75).abs() < 1e-12);
        assert!((l.worst_link_max - 1.0).abs() < 1e-12);
        assert!((l.max - 1.0).abs() < 1e-12);
        // (0.1 + 0.2) + (0.5 + 1.0) + 0 + 0.05, over 4 links × 2 samples.
        assert!((l.mean - 1.85 / 8.0).abs() < 1e-12);
        let q = sm.queues(0);
        assert_eq!((q.worst_port.as_str(), q.worst_port_max_cells), ("sup", 9));
        assert_eq!(q.samples.len(), 2);
        assert_eq!(q.samples[1].max_cells, 9);
        assert!((q.samples[1].mean_cells - 5.0).abs() < 1e-12);
        assert!(Sampler::new(2, None).links(0).is_none());
    }

    #[test]
    fn port_names_follow_the_layout() {
        assert_eq!(port_name(supervisor_port(), 3), "sup");
        assert_eq!(port_name(source_port(2), 3), "src2");
        assert_eq!(port_name(destination_port(0, 3), 3), "dst0");
    }
}

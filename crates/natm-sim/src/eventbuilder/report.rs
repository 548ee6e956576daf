//! What an event-builder run measured: [`EbReport`] and its parts (serialized as the
//! `--json` report).

use hdrhistogram::Histogram;
use serde::Serialize;

/// [`EbConfig`](super::EbConfig) as the report repeats it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConfigEcho {
    /// Sources.
    pub sources: usize,
    /// Destinations.
    pub destinations: usize,
    /// Events assigned per second.
    pub rate_hz: f64,
    /// `periodic` or `poisson (seed N)`.
    pub arrivals: String,
    /// `round-robin` or `least-loaded`.
    pub policy: String,
    /// Fragment bytes.
    pub fragment: usize,
    /// The data VCs' QoS, linux-atm text.
    pub qos: String,
    /// Line rate of every link.
    pub link: String,
    /// Host costs in ns (per byte: ns per byte).
    pub costs_ns: CostsEcho,
    /// Seconds of assignments.
    pub duration_s: f64,
    /// The run's seed.
    pub seed: u64,
    /// Event timeout in seconds.
    pub timeout_s: f64,
    /// Sampling interval in seconds.
    pub sample_interval_s: f64,
}

/// [`HostCosts`](crate::app::HostCosts) in ns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CostsEcho {
    /// Fixed cost of a send.
    pub send_fixed: u64,
    /// Per byte sent.
    pub send_per_byte: f64,
    /// Fixed cost of a receive.
    pub recv_fixed: u64,
    /// Per byte received.
    pub recv_per_byte: f64,
    /// Wake-up of an idle host.
    pub wakeup: u64,
}

/// What happened to the events.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EventCounts {
    /// Assigned by the supervisor.
    pub assigned: u64,
    /// Built.
    pub built: u64,
    /// Lost: timed out plus unanswered.
    pub lost: u64,
    /// A destination gave up on them at the timeout.
    pub timed_out: u64,
    /// No destination decided them within twice the timeout (assignment lost).
    pub unanswered: u64,
    /// Not decided when the run stopped.
    pub pending: u64,
    /// Built per simulated second of assignments.
    pub achieved_rate_hz: f64,
    /// Fragments that came after their event was given up.
    pub late_fragments: u64,
    /// SDUs an app could not read.
    pub malformed: u64,
    /// Sends refused or aborted by a host.
    pub send_failures: u64,
    /// Fewest and most events one destination built.
    pub built_per_destination_min_max: (u64, u64),
}

/// Event-building latency in µs; `None` when nothing was built.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Latency {
    /// Smallest.
    pub min_us: f64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest.
    pub max_us: f64,
    /// Histogram for the plot: 60 equal buckets from the smallest latency to the largest.
    pub histogram: Vec<Bucket>,
}

/// One bar of the latency histogram.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bucket {
    /// Lower edge in µs (inclusive).
    pub from_us: f64,
    /// Upper edge in µs (exclusive).
    pub to_us: f64,
    /// Events built with a latency in the bucket.
    pub events: u64,
}

impl Latency {
    pub(super) fn of(h: &Histogram<u64>) -> Option<Latency> {
        if h.is_empty() {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        let (min, max) = (h.min(), h.max());
        const BUCKETS: u64 = 60;
        let width = (max - min) / BUCKETS + 1;
        let mut histogram: Vec<Bucket> = (0..BUCKETS)
            .map(|i| Bucket {
                from_us: us(min + i * width),
                to_us: us(min + (i + 1) * width),
                events: 0,
            })
            .collect();
        for v in h.iter_recorded() {
            // hdrhistogram's bucket values may stray a little past the exact min and max.
            let i = (v.value_iterated_to().clamp(min, max) - min) / width;
            histogram[i.min(BUCKETS - 1) as usize].events += v.count_at_value();
        }
        Some(Latency {
            min_us: us(min),
            mean_us: h.mean() / 1000.0,
            p50_us: us(h.value_at_quantile(0.5)),
            p90_us: us(h.value_at_quantile(0.9)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(max),
            histogram,
        })
    }
}

/// Link occupancy: cells carried / cells the line could carry, per sample interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkOccupancy {
    /// Mean over links and samples.
    pub mean: f64,
    /// Largest over links and samples.
    pub max: f64,
    /// The link with the largest mean, e.g. `s1→dst3`.
    pub worst_link: String,
    /// That link's mean.
    pub worst_link_mean: f64,
    /// That link's largest sample.
    pub worst_link_max: f64,
}

/// One sample of the switch's output queues.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueSample {
    /// Simulated time in seconds.
    pub t_s: f64,
    /// Cells queued at the fullest port.
    pub max_cells: u32,
    /// Mean cells queued over ports.
    pub mean_cells: f64,
}

/// Switch output-queue occupancy over the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueOccupancy {
    /// The port whose queue held the most cells in any sample, e.g. `dst3`.
    pub worst_port: String,
    /// Those cells.
    pub worst_port_max_cells: u32,
    /// Mean over ports and samples.
    pub mean_cells: f64,
    /// One entry per sample.
    pub samples: Vec<QueueSample>,
}

/// What was dropped at one place for one reason.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Drops {
    /// Where, e.g. `s1 port 7 (dst3)`, `link src1→s1`, `host dst0 adapter`.
    pub place: String,
    /// Why: `output queue full`, `early packet discard`, `no receive buffer`, …
    pub reason: String,
    /// How many.
    pub count: u64,
    /// Of what: `cells`, `frames` or `SDUs`.
    pub unit: String,
}

/// What an event-builder run measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EbReport {
    /// The configuration.
    pub config: ConfigEcho,
    /// Event counts and rate.
    pub events: EventCounts,
    /// Latency; `None` if nothing was built.
    pub latency: Option<Latency>,
    /// Link occupancy; `None` on unlimited links.
    pub links: Option<LinkOccupancy>,
    /// Queue occupancy.
    pub queues: QueueOccupancy,
    /// Cells dropped, per place and reason (only where some were).
    pub drops: Vec<Drops>,
    /// Sum of the `drops` counted in cells.
    pub cells_dropped: u64,
    /// Simulated seconds run (assignments, then draining).
    pub sim_seconds: f64,
    /// Wall-clock seconds the run took (not deterministic).
    pub wall_seconds: f64,
    /// Cell events the engine processed.
    pub cell_events: u64,
    /// Cell events per wall-clock second (not deterministic).
    pub cell_events_per_s: f64,
    /// Peak resident memory of this process in bytes (`VmHWM`), if the system says. [`run`](super::run())
    /// reads no `/proc` and leaves it `None`; the caller that runs it in a process of its own
    /// fills it in (`natm sim eventbuilder` does, with `natm_nic::procfs`).
    pub peak_rss_bytes: Option<u64>,
}

impl EbReport {
    /// The report without what differs between two runs of one seed (wall time, rate of
    /// the engine, memory).
    pub fn deterministic(&self) -> EbReport {
        EbReport {
            wall_seconds: 0.0,
            cell_events_per_s: 0.0,
            peak_rss_bytes: None,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eventbuilder::EbStats;

    #[test]
    fn latency_percentiles_and_histogram_count_every_event() {
        let mut h = EbStats::new(1).latency;
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let l = Latency::of(&h).unwrap();
        assert!((l.p50_us - 500.0).abs() < 1.0, "{}", l.p50_us);
        assert!((l.p99_us - 990.0).abs() < 1.0, "{}", l.p99_us);
        assert!((l.max_us - 1000.0).abs() < 1.0);
        assert_eq!(l.histogram.iter().map(|b| b.events).sum::<u64>(), 1000);
        assert_eq!(l.histogram.len(), 60);
        assert_eq!(l.histogram[0].from_us, l.min_us);
        assert!(l.histogram[59].to_us > l.max_us);
        // Equal buckets over a uniform spread: about 1000 / 60 each.
        assert!(l.histogram.iter().all(|b| (10..=25).contains(&b.events)));
        assert!(Latency::of(&EbStats::new(1).latency).is_none());
    }
}

//! `natm perf transport --rr`: the 8-byte round trip of a reliable channel beside the raw
//! AAL5 round trip on the same PVC and data path, in the same run (issue 25: the channel's
//! at most 1.2× the raw one).
//!
//! Each run opens the PVC on both hosts twice, one after the other: raw (the `natm` API's
//! [`natm::Vc`] through [`crate::transport`]'s natm transport, as `natm perf rr` opens it)
//! and as a reliable [`natm::transport::Channel`]. In each, a client thread (the sender's
//! host) sends an 8-byte request carrying its sequence number, the server thread (the
//! receiver's host) echoes it, and the client times each exchange from just before the
//! send to the receipt of the matching response; `warmup` exchanges come first and are not
//! recorded. The runs alternate raw, channel, raw, channel…
//!
//! A raw request or response may be lost: after [`RESPONSE_TIMEOUT`] the request is
//! counted lost and the next one sent (a late response is recognised by its number and
//! skipped). A channel loses nothing: a timeout there fails the run.
//!
//! What it is not: no pipelining (one request in flight), no other size, no kernel
//! baseline (`natm perf rr` has those for raw VCs).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use natm::NotifyMode;
use natm::transport::{Channel, Event, Service};
use serde::Serialize;

use super::{Target, open_channel};
use crate::progress::Progress;
use crate::stats::{Spread, quantile};
use crate::transport::{self, Kind, NatmTarget, Placement, Transport};
use crate::{Error, pin};

/// The message size.
pub const SIZE: usize = 8;
/// Longest wait of the client for a response.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);
/// How often an idle server looks whether the run has ended.
const SERVER_POLL: Duration = Duration::from_millis(100);
/// How long each side waits for the other to be ready.
const READY: Duration = Duration::from_secs(15);

/// A round-trip run: what [`run`] does.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The hosts, the PVC and the path (the service is reliable).
    pub target: Target,
    /// Exchanges recorded per run and kind.
    pub count: u64,
    /// Unrecorded exchanges first.
    pub warmup: u64,
    /// Runs of each kind, alternating.
    pub runs: u32,
    /// Where the client and server threads run.
    pub placement: Placement,
}

/// One kind's round trips.
#[derive(Clone, Debug, Serialize)]
pub struct Trips {
    /// The median round trip of each run, µs: median, least, greatest.
    pub p50_us: Spread,
    /// The 99th percentile of each run, µs.
    pub p99_us: Spread,
    /// Exchanges recorded over all runs.
    pub count: u64,
    /// Requests whose response never came (raw only).
    pub lost: u64,
}

/// What a round-trip run reports (`natm perf transport --rr --json`).
#[derive(Debug, Serialize)]
pub struct Report {
    /// The PVC.
    pub vc: String,
    /// Its QoS.
    pub qos: String,
    /// The data path.
    pub path: String,
    /// Message size, bytes.
    pub size: usize,
    /// Runs of each kind.
    pub runs: u32,
    /// The raw AAL5 round trip (the `natm` API's VC).
    pub raw: Trips,
    /// The reliable channel's.
    pub channel: Trips,
    /// Channel ÷ raw, of the median p50s.
    pub ratio_p50: f64,
    /// Channel ÷ raw, of the median p99s.
    pub ratio_p99: f64,
    /// Why the placement may not give a meaningful figure.
    pub warnings: Vec<String>,
}

/// One end: a raw VC or a channel.
enum End {
    Raw(Box<dyn Transport>),
    Channel(Option<Box<Channel>>),
}

/// What a run of one kind measured.
struct Measured {
    nanos: Vec<u64>,
    lost: u64,
}

/// Runs the round trips of `plan` and returns the report (prints nothing).
pub fn run(plan: &Plan) -> Result<Report, Error> {
    let warnings = crate::crowding::for_run(&plan.placement, None);
    let runs = plan.runs.max(1);
    let mut progress = Progress::new(u64::from(runs) * 2, "transport rr");
    let (mut raw, mut chan) = (Vec::new(), Vec::new());
    for i in 1..=runs {
        for channel in [false, true] {
            let what = if channel { "channel" } else { "raw" };
            progress.set_message(format!("transport rr {what}, run {i}"));
            let m = one(plan, channel)
                .map_err(|e| Error::io(format!("the {what} round trip, run {i}"), e))?;
            if channel { &mut chan } else { &mut raw }.push(m);
            progress.inc(1);
        }
    }
    drop(progress);
    let (raw, channel) = (trips(raw), trips(chan));
    let t = &plan.target;
    Ok(Report {
        vc: t.vc.to_string(),
        qos: t.qos.to_string(),
        path: t.path.name().to_string(),
        size: SIZE,
        runs,
        ratio_p50: channel.p50_us.median / raw.p50_us.median,
        ratio_p99: channel.p99_us.median / raw.p99_us.median,
        raw,
        channel,
        warnings,
    })
}

/// The figures of one kind's runs.
fn trips(runs: Vec<Measured>) -> Trips {
    let mut p50 = Vec::new();
    let mut p99 = Vec::new();
    let (mut count, mut lost) = (0, 0);
    for mut m in runs {
        m.nanos.sort_unstable();
        p50.push(quantile(&m.nanos, 0.5) as f64 / 1e3);
        p99.push(quantile(&m.nanos, 0.99) as f64 / 1e3);
        count += m.nanos.len() as u64;
        lost += m.lost;
    }
    Trips {
        p50_us: Spread::of(p50),
        p99_us: Spread::of(p99),
        count,
        lost,
    }
}

impl End {
    /// The two ends of one kind: (client, server).
    fn pair(target: &Target, channel: bool) -> io::Result<(End, End)> {
        if channel {
            return Ok((End::Channel(None), End::Channel(None)));
        }
        let natm = NatmTarget {
            vc: target.vc,
            qos: target.qos,
            // The channel's VC waits as the API's default does.
            mode: NotifyMode::Adaptive,
            path: target.path,
            client_host: target.sender_host.clone(),
            server_host: target.receiver_host.clone(),
            svc: false,
        };
        let (c, s) = transport::pair(Kind::Natm, Some(&natm), SIZE)?;
        Ok((End::Raw(c), End::Raw(s)))
    }

    /// Opens the end on `host`, on the calling thread.
    fn ready(&mut self, host: &str, target: &Target) -> io::Result<()> {
        match self {
            End::Raw(t) => t.ready(),
            End::Channel(ch) => {
                let opened =
                    open_channel(host, Service::Reliable, target.vc, target.qos, target.path)?;
                *ch = Some(Box::new(opened));
                Ok(())
            }
        }
    }

    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        match self {
            End::Raw(t) => t.send(msg),
            End::Channel(ch) => opened(ch)?
                .send(msg)
                .map(|_| ())
                .map_err(|e| io::Error::other(format!("sending: {e}"))),
        }
    }

    /// The next message, or `TimedOut` after `timeout`.
    fn recv(&mut self, buf: &mut [u8; SIZE], timeout: Duration) -> io::Result<usize> {
        match self {
            End::Raw(t) => {
                t.set_recv_timeout(Some(timeout))?;
                t.recv(buf)
            }
            End::Channel(ch) => {
                let ch = opened(ch)?;
                let until = Instant::now() + timeout;
                loop {
                    let left = until.saturating_duration_since(Instant::now());
                    match ch.recv_timeout(left) {
                        Ok(Event::Message { data, .. }) if data.len() == SIZE => {
                            buf.copy_from_slice(&data);
                            return Ok(SIZE);
                        }
                        Ok(Event::Message { data, .. }) => {
                            return Err(io::Error::other(format!(
                                "a {}-byte message, not the run's",
                                data.len()
                            )));
                        }
                        Ok(Event::Lost { .. }) => continue,
                        Err(natm::Error::Timeout) => {
                            return Err(io::Error::new(io::ErrorKind::TimedOut, "no message"));
                        }
                        Err(e) => return Err(io::Error::other(format!("receiving: {e}"))),
                    }
                }
            }
        }
    }

    /// Ends the session: a channel's sends acknowledged (client) or the peer's last
    /// retransmissions answered (server).
    fn finish(&mut self, client: bool) -> io::Result<()> {
        match self {
            End::Raw(_) => Ok(()),
            End::Channel(ch) => {
                let ch = opened(ch)?;
                let r = if client {
                    ch.flush(Duration::from_secs(5))
                } else {
                    ch.linger(Duration::from_millis(100), Duration::from_secs(1))
                };
                r.map_err(|e| io::Error::other(format!("closing: {e}")))
            }
        }
    }
}

fn opened(ch: &mut Option<Box<Channel>>) -> io::Result<&mut Channel> {
    ch.as_deref_mut()
        .ok_or_else(|| io::Error::other("the channel is not open"))
}

/// One run of one kind.
fn one(plan: &Plan, channel: bool) -> io::Result<Measured> {
    let (mut client, mut server) = End::pair(&plan.target, channel)?;
    let done = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::sync_channel::<io::Result<()>>(1);
    let srv = {
        let done = done.clone();
        let target = plan.target.clone();
        let cpu = plan.placement.server;
        thread::Builder::new()
            .name("transport-rr-server".into())
            .spawn(move || -> io::Result<()> {
                pin(cpu);
                let opened = server.ready(&target.receiver_host, &target);
                let failed = opened.as_ref().err().map(|e| e.to_string());
                let _ = ready_tx.send(opened);
                if let Some(e) = failed {
                    return Err(io::Error::other(e));
                }
                let mut buf = [0u8; SIZE];
                while !done.load(Ordering::Acquire) {
                    match server.recv(&mut buf, SERVER_POLL) {
                        Ok(SIZE) => server.send(&buf)?,
                        Ok(n) => return Err(io::Error::other(format!("a {n}-byte request"))),
                        Err(e) if e.kind() == io::ErrorKind::TimedOut => {}
                        Err(e) => return Err(e),
                    }
                }
                server.finish(false)
            })?
    };
    pin(plan.placement.client);
    let measured = (|| -> io::Result<Measured> {
        client.ready(&plan.target.sender_host, &plan.target)?;
        match ready_rx.recv_timeout(READY) {
            Ok(r) => r?,
            Err(_) => return Err(io::Error::other("the server end did not open")),
        }
        let mut m = Measured {
            nanos: Vec::with_capacity(plan.count as usize),
            lost: 0,
        };
        let mut seq = 0u64;
        let mut buf = [0u8; SIZE];
        while (m.nanos.len() as u64) < plan.count {
            seq += 1;
            let t0 = Instant::now();
            client.send(&seq.to_be_bytes())?;
            let deadline = t0 + RESPONSE_TIMEOUT;
            let answered = loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match client.recv(&mut buf, left) {
                    Ok(SIZE) if u64::from_be_bytes(buf) == seq => break true,
                    // A late answer to an earlier request.
                    Ok(SIZE) => continue,
                    Ok(n) => return Err(io::Error::other(format!("a {n}-byte response"))),
                    Err(e) if e.kind() == io::ErrorKind::TimedOut => break false,
                    Err(e) => return Err(e),
                }
            };
            if !answered {
                if channel {
                    return Err(io::Error::other(format!(
                        "no response within {} s on a reliable channel",
                        RESPONSE_TIMEOUT.as_secs()
                    )));
                }
                m.lost += 1;
                continue;
            }
            if seq > plan.warmup {
                m.nanos.push(t0.elapsed().as_nanos() as u64);
            }
        }
        client.finish(true)?;
        Ok(m)
    })();
    done.store(true, Ordering::Release);
    let served = srv
        .join()
        .map_err(|_| io::Error::other("the server thread panicked"))?;
    let m = measured?;
    served?;
    Ok(m)
}

//! The engine of `natm perf rr`: request/response latency and transaction rate over a [`Transport`], the
//! measured transport beside kernel baselines in the same run (issue 5).
//!
//! # What is measured
//!
//! For each transport a client thread (this one, pinned to `--cpu-client`) and a server
//! thread (pinned to `--cpu-server`) hold the two ends of a connected pair. The client
//! sends `--depth` requests of `--size` bytes, then one more for each response, until the
//! round's transactions are done; it then waits for the last responses. The server answers
//! every request with a response of `--response-size` bytes (default: the request's size).
//! A request carries its sequence number in its first 8 bytes (when it has 8), and the
//! response echoes them, so that a lost or misordered response is seen.
//!
//! Each transaction's round-trip time, from just before its request is sent to just after
//! its response is received, goes into an HdrHistogram ([`histo`](super::histo)); the rate
//! is transactions over the time the rounds lasted (each round from its first request to
//! its last response).
//!
//! Transports take turns in rounds of [`ROUND`] transactions (or 100 ms with `--seconds`),
//! in an order that rotates every round, so a change of the machine's load touches all of
//! them alike. `--warmup` transactions per transport come first and are not recorded.
//!
//! A lossy transport (UDP, natm) may drop a request or a response: a request whose
//! response is overtaken by a later one's is counted as `lost` and another sent in its
//! place, so the recorded count is still what was asked. When no response comes for
//! [`RESPONSE_TIMEOUT`], every request in flight is taken as lost and the pipeline
//! refilled (a late answer is recognised and ignored); after three such timeouts in a row
//! the run fails. Requests or responses under 8 bytes carry no sequence number, so there
//! the first timeout fails the run.

mod render;

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::histo::{Latencies, LatencySummary};
use crate::progress::Progress;
use crate::transport::{self, Kind, NatmTarget, Placement, Transport};
use crate::{Error, pin};

/// Transactions of one transport before the next takes its turn.
pub const ROUND: u64 = 10_000;
/// Length of a round with `--seconds`.
const ROUND_TIME: Duration = Duration::from_millis(100);
/// Longest wait of the client for a response.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest wait for the other end's thread to be ready (a natm VC is opened then).
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// Timeouts in a row after which the client gives up.
const GIVE_UP_AFTER: u32 = 3;
/// How often an idle server looks whether the run has ended.
const SERVER_POLL: Duration = Duration::from_millis(200);
/// Bytes of the sequence number at the head of requests and responses.
const SEQ_LEN: usize = 8;

/// How long each transport runs.
#[derive(Clone, Copy, Debug)]
pub enum Budget {
    /// This many transactions recorded per transport.
    Count(u64),
    /// Rounds until each transport has run this long.
    Time(Duration),
}

/// A request/response run: what [`run`] does.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Request size in bytes, 1 to what every transport of `kinds` carries.
    pub size: usize,
    /// Response size in bytes, likewise.
    pub response_size: usize,
    /// How long each transport runs.
    pub budget: Budget,
    /// Requests in flight, at least 1.
    pub depth: u32,
    /// Transactions per transport before recording starts.
    pub warmup: u64,
    /// Where the client and server threads run.
    pub placement: Placement,
    /// Transports measured, the measured one first.
    pub kinds: Vec<Kind>,
    /// Baselines left out because they cannot carry the sizes (reported as given).
    pub skipped: Vec<String>,
    /// natm's options, needed when `kinds` holds [`Kind::Natm`].
    pub natm: Option<NatmTarget>,
}

/// One transport's result.
#[derive(Debug, Serialize)]
pub struct KindResult {
    /// The transport.
    pub kind: Kind,
    /// Its description.
    pub name: String,
    /// Round-trip quantiles; `count` is the transactions recorded.
    pub latency: Option<LatencySummary>,
    /// Recorded transactions per second.
    pub transactions_per_sec: f64,
    /// Time the recorded rounds lasted.
    pub seconds: f64,
    /// Transactions whose response never came (a lossy transport dropped something).
    pub lost: u64,
}

/// The measured transport against one baseline.
#[derive(Debug, Serialize)]
pub struct Ratio {
    /// The baseline.
    pub baseline: Kind,
    /// Measured ÷ baseline, for the median round trip.
    pub p50: Option<f64>,
    /// Likewise for the 99th percentile round trip.
    pub p99: Option<f64>,
    /// Measured ÷ baseline transactions/s.
    pub rate: f64,
}

/// What a request/response run reports (`natm perf rr --json`).
#[derive(Debug, Serialize)]
pub struct Report {
    /// Request size in bytes.
    pub size: usize,
    /// Response size in bytes.
    pub response_size: usize,
    /// Requests in flight.
    pub depth: u32,
    /// Warm-up transactions per transport.
    pub warmup: u64,
    /// Transactions asked for per transport (`null` with a time budget).
    pub count: Option<u64>,
    /// Seconds asked for per transport (`null` with a count budget).
    pub seconds: Option<f64>,
    /// Where the threads ran.
    pub placement: Placement,
    /// One per transport, the measured one first.
    pub results: Vec<KindResult>,
    /// The measured transport against each baseline.
    pub ratios: Vec<Ratio>,
    /// Baselines not measured, and why.
    pub skipped: Vec<String>,
    /// Why the placement may not give a meaningful figure ([`crowding`](crate::crowding)).
    pub warnings: Vec<String>,
}

/// Runs the measurement of `plan` and returns its report (prints nothing).
pub fn run(plan: &Plan) -> Result<Report, Error> {
    let warnings = crate::crowding::for_run(&plan.placement, plan.natm.as_ref());
    let mut sessions = Vec::new();
    for &kind in &plan.kinds {
        let s = Session::start(kind, plan)
            .map_err(|e| Error::io(format!("opening the {kind} pair"), e))?;
        sessions.push(s);
    }
    let n = sessions.len() as u64;
    let mut progress = match plan.budget {
        Budget::Count(c) => Progress::new((c + plan.warmup) * n, "rr"),
        Budget::Time(t) => Progress::new(t.as_millis() as u64 * n, "rr"),
    };
    // Warm-up, unrecorded.
    for s in &mut sessions {
        progress.set_message(format!("rr warm-up {}", s.kind));
        let mut left = plan.warmup;
        while left > 0 {
            let step = left.min(ROUND);
            s.round(plan, Target::Count(step), false)
                .map_err(|e| s.failure(e))?;
            left -= step;
            if matches!(plan.budget, Budget::Count(_)) {
                progress.inc(step);
            }
        }
    }
    progress.set_message("rr".into());
    let mut round = 0usize;
    loop {
        let mut any = false;
        let n = sessions.len();
        for i in 0..n {
            let s = &mut sessions[(round + i) % n];
            let target = match plan.budget {
                Budget::Count(c) => {
                    let done = s.latencies.len();
                    if done >= c {
                        continue;
                    }
                    Target::Count((c - done).min(ROUND))
                }
                Budget::Time(t) => {
                    if s.busy >= t {
                        continue;
                    }
                    Target::Time((t - s.busy).min(ROUND_TIME))
                }
            };
            any = true;
            let before = (s.latencies.len(), s.busy);
            s.round(plan, target, true).map_err(|e| s.failure(e))?;
            match plan.budget {
                Budget::Count(_) => progress.inc(s.latencies.len() - before.0),
                Budget::Time(_) => progress.inc((s.busy - before.1).as_millis() as u64),
            }
        }
        if !any {
            break;
        }
        round += 1;
    }
    drop(progress);
    let mut results = Vec::new();
    for mut s in sessions {
        results.push(s.finish()?);
    }
    let ratios = ratios(&results);
    Ok(Report {
        size: plan.size,
        response_size: plan.response_size,
        depth: plan.depth,
        warmup: plan.warmup,
        count: match plan.budget {
            Budget::Count(c) => Some(c),
            Budget::Time(_) => None,
        },
        seconds: match plan.budget {
            Budget::Count(_) => None,
            Budget::Time(t) => Some(t.as_secs_f64()),
        },
        placement: plan.placement,
        results,
        ratios,
        skipped: plan.skipped.clone(),
        warnings,
    })
}

/// The first result against each of the others.
fn ratios(results: &[KindResult]) -> Vec<Ratio> {
    let Some((main, rest)) = results.split_first() else {
        return Vec::new();
    };
    let q = |a: Option<LatencySummary>,
             b: Option<LatencySummary>,
             f: fn(&LatencySummary) -> u64| {
        match (a, b) {
            (Some(a), Some(b)) if f(&b) > 0 => Some(f(&a) as f64 / f(&b) as f64),
            _ => None,
        }
    };
    rest.iter()
        .map(|b| Ratio {
            baseline: b.kind,
            p50: q(main.latency, b.latency, |s| s.p50_ns),
            p99: q(main.latency, b.latency, |s| s.p99_ns),
            rate: main.transactions_per_sec / b.transactions_per_sec.max(f64::MIN_POSITIVE),
        })
        .collect()
}

/// How much one round does.
#[derive(Clone, Copy, Debug)]
enum Target {
    Count(u64),
    Time(Duration),
}

/// One transport's client end, its server thread and what was recorded so far.
struct Session {
    kind: Kind,
    name: String,
    client: Box<dyn Transport>,
    server: Option<JoinHandle<io::Result<u64>>>,
    stop: Arc<AtomicBool>,
    request: Vec<u8>,
    response: Vec<u8>,
    next_seq: u64,
    in_flight: VecDeque<(u64, Instant)>,
    latencies: Latencies,
    lost: u64,
    busy: Duration,
    /// The client's wait for a response.
    timeout: Duration,
}

impl Session {
    fn start(kind: Kind, plan: &Plan) -> io::Result<Session> {
        let message = plan.size.max(plan.response_size);
        let (client, server_end) = transport::pair(kind, plan.natm.as_ref(), message)?;
        Session::over(kind, client, server_end, plan)
    }

    /// A session over an opened pair: the server thread starts on `server_end`.
    fn over(
        kind: Kind,
        mut client: Box<dyn Transport>,
        server_end: Box<dyn Transport>,
        plan: &Plan,
    ) -> io::Result<Session> {
        client.set_recv_timeout(Some(RESPONSE_TIMEOUT))?;
        let timeout = RESPONSE_TIMEOUT;
        let name = client.name();
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let server = {
            let stop = stop.clone();
            let (size, response_size, cpu) = (plan.size, plan.response_size, plan.placement.server);
            thread::Builder::new()
                .name(format!("rr-server-{kind}"))
                .spawn(move || serve(server_end, size, response_size, cpu, &stop, ready_tx))?
        };
        wait_ready(&ready_rx, "server")?;
        pin(plan.placement.client);
        client.ready()?;
        Ok(Session {
            kind,
            name,
            client,
            server: Some(server),
            stop,
            request: (0..plan.size).map(|i| (i % 251) as u8).collect(),
            response: vec![0u8; plan.response_size],
            next_seq: 0,
            in_flight: VecDeque::with_capacity(plan.depth as usize),
            latencies: Latencies::new(),
            lost: 0,
            busy: Duration::ZERO,
            timeout,
        })
    }

    /// Bounds the client's wait for a response (tests shorten it).
    #[cfg(test)]
    fn set_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        self.client.set_recv_timeout(Some(timeout))?;
        self.timeout = timeout;
        Ok(())
    }

    fn failure(&self, e: io::Error) -> Error {
        Error::io(format!("{} ({})", self.kind, self.name), e)
    }

    fn send_one(&mut self) -> io::Result<()> {
        let seq = self.next_seq;
        self.next_seq += 1;
        if self.request.len() >= SEQ_LEN {
            self.request[..SEQ_LEN].copy_from_slice(&seq.to_le_bytes());
        }
        let at = Instant::now();
        self.client.send(&self.request)?;
        self.in_flight.push_back((seq, at));
        Ok(())
    }

    /// Runs one round: `target` transactions (or until its time is up), then waits for
    /// every response in flight.
    fn round(&mut self, plan: &Plan, target: Target, record: bool) -> io::Result<()> {
        let start = Instant::now();
        let mut done = 0u64;
        let more = |done: u64, in_flight: usize| match target {
            Target::Count(n) => done + (in_flight as u64) < n,
            Target::Time(t) => start.elapsed() < t,
        };
        let seq_checked = self.request.len() >= SEQ_LEN && self.response.len() >= SEQ_LEN;
        let mut timeouts = 0u32;
        loop {
            while self.in_flight.len() < plan.depth as usize && more(done, self.in_flight.len()) {
                self.send_one()?;
            }
            if self.in_flight.is_empty() {
                break;
            }
            let n = match self.client.recv(&mut self.response) {
                Ok(n) => {
                    timeouts = 0;
                    n
                }
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                    timeouts += 1;
                    if !seq_checked || timeouts >= GIVE_UP_AFTER {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!(
                                "no response in {:?} with {} request(s) in flight",
                                self.timeout,
                                self.in_flight.len()
                            ),
                        ));
                    }
                    // The ones in flight are taken as lost; a late answer to one of them
                    // is recognised by its sequence number and ignored.
                    if record {
                        self.lost += self.in_flight.len() as u64;
                    }
                    self.in_flight.clear();
                    continue;
                }
                Err(e) => return Err(e),
            };
            let now = Instant::now();
            if n != self.response.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a response of {n} bytes, expected {}", self.response.len()),
                ));
            }
            let sent_at = if seq_checked {
                let mut head = [0u8; SEQ_LEN];
                head.copy_from_slice(&self.response[..SEQ_LEN]);
                let seq = u64::from_le_bytes(head);
                match self.in_flight.iter().position(|&(s, _)| s == seq) {
                    Some(i) => {
                        // The ones before it will not be answered any more; requests
                        // sent in their place keep the count asked for.
                        for _ in 0..i {
                            self.in_flight.pop_front();
                            if record {
                                self.lost += 1;
                            }
                        }
                        self.in_flight.pop_front().map(|(_, at)| at)
                    }
                    // A late answer to a request already taken as lost.
                    None if seq < self.in_flight.front().map_or(self.next_seq, |f| f.0) => {
                        continue;
                    }
                    None => {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("a response to request {seq}, which was never sent"),
                        ));
                    }
                }
            } else {
                self.in_flight.pop_front().map(|(_, at)| at)
            };
            if let Some(at) = sent_at {
                if record {
                    self.latencies.record(
                        u64::try_from(now.duration_since(at).as_nanos()).unwrap_or(u64::MAX),
                    );
                }
                done += 1;
            }
        }
        if record {
            self.busy += start.elapsed();
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<KindResult, Error> {
        self.stop.store(true, Ordering::Release);
        // The end marker; a lossy transport may drop it, and the server then sees `stop`
        // at its next timeout.
        let _ = self.client.send(&[]);
        if let Some(h) = self.server.take() {
            h.join()
                .map_err(|_| Error::Panicked(format!("{}: the server thread", self.kind)))?
                .map_err(|e| Error::io(format!("{} server", self.kind), e))?;
        }
        let latency = self.latencies.summary();
        let count = self.latencies.len();
        Ok(KindResult {
            kind: self.kind,
            name: self.name.clone(),
            latency,
            transactions_per_sec: count as f64 / self.busy.as_secs_f64().max(1e-9),
            seconds: self.busy.as_secs_f64(),
            lost: self.lost,
        })
    }
}

impl Drop for Session {
    /// A run that failed half-way still lets its server thread end.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Tells the starting thread whether this end is ready (its own copy of the error).
pub fn tell_ready(ready: &mpsc::SyncSender<io::Result<()>>, result: &io::Result<()>) {
    let copy = match result {
        Ok(()) => Ok(()),
        Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
    };
    // The starting thread may have given up waiting; nothing else to tell.
    let _ = ready.send(copy);
}

/// Waits for the other end's thread to be ready.
pub fn wait_ready(ready: &mpsc::Receiver<io::Result<()>>, what: &str) -> io::Result<()> {
    match ready.recv_timeout(READY_TIMEOUT) {
        Ok(result) => result.map_err(|e| io::Error::new(e.kind(), format!("the {what} end: {e}"))),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the {what} end was not ready in {READY_TIMEOUT:?}"),
        )),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(io::Error::other(format!(
            "the {what} thread ended before it was ready"
        ))),
    }
}

/// The server: answers each request until the end marker, or until `stop` is set while it
/// waits. Returns the requests answered.
fn serve(
    mut end: Box<dyn Transport>,
    size: usize,
    response_size: usize,
    cpu: Option<usize>,
    stop: &AtomicBool,
    ready: mpsc::SyncSender<io::Result<()>>,
) -> io::Result<u64> {
    pin(cpu);
    let set_up = end
        .ready()
        .and_then(|()| end.set_recv_timeout(Some(SERVER_POLL)));
    tell_ready(&ready, &set_up);
    set_up?;
    let mut request = vec![0u8; size.max(1)];
    let mut response: Vec<u8> = (0..response_size).map(|i| (i % 241) as u8).collect();
    let echo = SEQ_LEN.min(size).min(response_size);
    let mut answered = 0u64;
    loop {
        match end.recv(&mut request) {
            Ok(0) => return Ok(answered),
            Ok(n) => {
                let head = echo.min(n);
                response[..head].copy_from_slice(&request[..head]);
                end.send(&response)?;
                answered += 1;
            }
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                if stop.load(Ordering::Acquire) {
                    return Ok(answered);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};

    use super::*;

    /// An in-process message channel that drops every `drop_every`-th message it sends.
    struct Lossy {
        tx: Sender<Vec<u8>>,
        rx: Receiver<Vec<u8>>,
        timeout: Option<Duration>,
        sent: u64,
        drop_every: u64,
    }

    fn lossy_pair(drop_every: u64) -> (Lossy, Lossy) {
        let (a_tx, b_rx) = channel();
        let (b_tx, a_rx) = channel();
        let end = |tx, rx, drop_every| Lossy {
            tx,
            rx,
            timeout: None,
            sent: 0,
            drop_every,
        };
        (end(a_tx, a_rx, drop_every), end(b_tx, b_rx, 0))
    }

    impl Transport for Lossy {
        fn send(&mut self, msg: &[u8]) -> io::Result<()> {
            self.sent += 1;
            if self.drop_every > 0 && !msg.is_empty() && self.sent.is_multiple_of(self.drop_every) {
                return Ok(());
            }
            self.tx
                .send(msg.to_vec())
                .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let msg = match self.timeout {
                None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(t) => self.rx.recv_timeout(t),
            };
            match msg {
                Ok(m) if m.len() > buf.len() => Err(io::ErrorKind::InvalidData.into()),
                Ok(m) => {
                    buf[..m.len()].copy_from_slice(&m);
                    Ok(m.len())
                }
                Err(RecvTimeoutError::Timeout) => Err(io::ErrorKind::TimedOut.into()),
                Err(RecvTimeoutError::Disconnected) => Ok(0),
            }
        }
        fn set_recv_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
            self.timeout = timeout;
            Ok(())
        }
        fn name(&self) -> String {
            "lossy test channel".into()
        }
    }

    fn test_plan(size: usize, depth: u32) -> Plan {
        Plan {
            size,
            response_size: size,
            budget: Budget::Count(0),
            depth,
            warmup: 0,
            placement: Placement {
                client: None,
                server: None,
            },
            kinds: vec![Kind::Udp],
            skipped: Vec::new(),
            natm: None,
        }
    }

    #[test]
    fn lost_requests_are_counted_and_replaced_so_the_count_is_kept() {
        for depth in [1, 8] {
            let plan = test_plan(32, depth);
            let (client, server) = lossy_pair(10);
            let mut s =
                Session::over(Kind::Udp, Box::new(client), Box::new(server), &plan).unwrap();
            // A loss with nothing after it in flight is seen only by the timeout.
            s.set_timeout(Duration::from_millis(20)).unwrap();
            s.round(&plan, Target::Count(200), true).unwrap();
            let r = s.finish().unwrap();
            assert_eq!(r.latency.unwrap().count, 200, "depth {depth}");
            // Every 10th request is dropped: 200 answered took about 222 sent.
            assert!((20..=23).contains(&r.lost), "depth {depth}: {r:?}");
            assert!(s.in_flight.is_empty());
        }
    }

    #[test]
    fn a_loss_without_sequence_numbers_ends_in_a_named_timeout() {
        let plan = test_plan(4, 1);
        let (client, server) = lossy_pair(3);
        let mut s = Session::over(Kind::Udp, Box::new(client), Box::new(server), &plan).unwrap();
        s.set_timeout(Duration::from_millis(20)).unwrap();
        let e = s.round(&plan, Target::Count(10), true).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(
            e.to_string()
                .contains("no response in 20ms with 1 request(s) in flight"),
            "{e}"
        );
        assert_eq!(
            s.latencies.len(),
            2,
            "two answered before the third was lost"
        );
    }

    #[test]
    fn a_silent_peer_fails_the_run_after_three_timeouts() {
        let plan = test_plan(32, 4);
        let (client, server) = lossy_pair(1);
        let mut s = Session::over(Kind::Udp, Box::new(client), Box::new(server), &plan).unwrap();
        s.set_timeout(Duration::from_millis(10)).unwrap();
        let e = s.round(&plan, Target::Count(10), true).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert_eq!(s.latencies.len(), 0);
        assert_eq!(s.lost, 8, "two timeouts took 4 in flight each as lost: {e}");
    }

    #[test]
    fn ratios_divide_the_measured_by_each_baseline() {
        let summary = |p50: u64| LatencySummary {
            count: 1,
            min_ns: p50,
            mean_ns: p50 as f64,
            p50_ns: p50,
            p90_ns: p50,
            p99_ns: 2 * p50,
            p999_ns: 2 * p50,
            max_ns: 2 * p50,
            clamped: 0,
        };
        let result = |kind, p50, rate| KindResult {
            kind,
            name: String::new(),
            latency: Some(summary(p50)),
            transactions_per_sec: rate,
            seconds: 1.0,
            lost: 0,
        };
        let r = ratios(&[
            result(Kind::Natm, 30, 1000.0),
            result(Kind::Udp, 60, 500.0),
            result(Kind::Tcp, 10, 4000.0),
        ]);
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[0].baseline, r[0].p50, r[0].p99, r[0].rate),
            (Kind::Udp, Some(0.5), Some(0.5), 2.0)
        );
        assert_eq!(
            (r[1].baseline, r[1].p50, r[1].rate),
            (Kind::Tcp, Some(3.0), 0.25)
        );
    }
}

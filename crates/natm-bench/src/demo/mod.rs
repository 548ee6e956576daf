//! `natm demo`'s engines. [`network`] is the network run, step by step; this module holds
//! the steps that touch the network: the CBR PVC added through the switch's management
//! socket, one SDU each way, OAM F5 loopbacks, the switch's policing counters, a capture
//! of a switch port into a pcap file and tshark's reading of it. [`layers`] is the
//! `--layers` walk's work without a network. The request/response and goodput figures are
//! [`crate::rr`]'s and [`crate::stream`]'s; the narration, the table and the JSON are
//! rendered by [`network`] and printed by natm-cli.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use natm_adapter::Reassembler;
use natm_capture::{CellRecord, LinkType, Record, RecordKind, Writer};
use natm_core::qos::Qos;
use natm_core::{PvcAddr, VcId};
use natm_switchd::client::{Client, ClientError, Connect};
use natm_wire::aal5::{self, MAX_SDU, Segmenter};

use crate::Error;
use crate::stats::{Spread, quantile};

pub mod layers;
pub mod network;

/// The CBR PVC the demo adds.
pub const CBR_VC: &str = "0.200";
/// The most cells the capture keeps (a bound on the file, about 100 bytes a cell).
const CAPTURE_MAX: u64 = 200_000;
/// How long the capture waits for more lines once it is told to stop.
const CAPTURE_QUIET: Duration = Duration::from_millis(50);
/// Wait for each OAM loopback reply, and between requests.
const PING_TIMEOUT: Duration = Duration::from_secs(1);
const PING_INTERVAL: Duration = Duration::from_millis(10);
/// tshark's expert severity "error" (`PI_ERROR`), as `-T fields` prints it.
const PI_ERROR: &str = "8388608";

/// One PVC's OAM loopback round trips.
#[derive(Clone, Copy, Debug)]
pub struct PingSummary {
    /// Requests sent.
    pub sent: u32,
    /// Replies received.
    pub received: u32,
    /// Least round trip.
    pub min_ns: u64,
    /// Mean round trip.
    pub avg_ns: u64,
    /// Greatest round trip.
    pub max_ns: u64,
    /// Median round trip (nearest rank).
    pub p50_ns: u64,
}

/// Adds the CBR PVC between `ports` of the switch at `s1`; returns the connection's id.
pub fn connect_cbr(s1: &Path, ports: (u16, u16), qos: &str, upc: &str) -> Result<String, Error> {
    Client::new(s1, Duration::from_secs(2))
        .connect(&Connect {
            a: format!("{}:{CBR_VC}", ports.0),
            b: format!("{}:{CBR_VC}", ports.1),
            qos: qos.into(),
            upc: Some(upc.into()),
            ..Connect::default()
        })
        .map_err(|source| match source.refusal() {
            Some(r) => Error::Daemon(format!("s1 refused the CBR PVC: {r}")),
            None => Error::Switchd {
                what: "s1".into(),
                source,
            },
        })
}

/// Opens `vc` on both hosts and sends one SDU each way.
pub fn hello(h1: &Path, h2: &Path, vc: PvcAddr, qos: Qos) -> Result<(), Error> {
    let fail = |what: &str, e: natm::Error| Error::Natm {
        what: format!("{vc} {what}"),
        source: e,
    };
    let a = natm::Host::connect_path(h1).map_err(|e| fail("h1", e))?;
    let b = natm::Host::connect_path(h2).map_err(|e| fail("h2", e))?;
    let options = natm::VcOptions::new(vc).qos(qos);
    let mut va = a.open(options.clone()).map_err(|e| fail("open on h1", e))?;
    let mut vb = b.open(options).map_err(|e| fail("open on h2", e))?;
    let mut buf = vec![0u8; 256];
    for forth in [true, false] {
        let (from, to, name) = if forth {
            ("h1", "h2", &b"hello from h1"[..])
        } else {
            ("h2", "h1", &b"hello from h2"[..])
        };
        let (tx, rx) = if forth {
            (&mut va, &mut vb)
        } else {
            (&mut vb, &mut va)
        };
        tx.send(name)
            .map_err(|e| fail(&format!("send on {from}"), e))?;
        let n = rx
            .recv_timeout(&mut buf, Duration::from_secs(2))
            .map_err(|e| fail(&format!("receive on {to}"), e))?;
        if &buf[..n] != name {
            return Err(Error::Traffic(format!(
                "{vc}: {to} received {n} bytes that are not what {from} sent"
            )));
        }
    }
    Ok(())
}

/// `count` OAM F5 end-to-end loopbacks on `vc` from the host at `socket`.
pub fn ping(
    socket: &Path,
    vc: PvcAddr,
    count: u32,
    stop: &AtomicBool,
) -> Result<PingSummary, Error> {
    let host = natm::Host::connect_path(socket).map_err(|source| Error::Natm {
        what: "h1".into(),
        source,
    })?;
    let mut rtts = Vec::new();
    let mut last_error = String::new();
    for i in 0..count {
        if stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
        match host.ping(vc, natm::OamScope::EndToEnd, PING_TIMEOUT) {
            Ok(rtt) => rtts.push(rtt.as_nanos() as u64),
            Err(e) => last_error = e.to_string(),
        }
        if i + 1 < count {
            std::thread::sleep(PING_INTERVAL);
        }
    }
    if rtts.is_empty() {
        return Err(Error::Traffic(format!(
            "OAM loopback on {vc}: no reply to {count} request(s): {last_error}"
        )));
    }
    rtts.sort_unstable();
    Ok(PingSummary {
        sent: count,
        received: rtts.len() as u32,
        min_ns: rtts[0],
        avg_ns: rtts.iter().sum::<u64>() / rtts.len() as u64,
        max_ns: rtts[rtts.len() - 1],
        p50_ns: quantile(&rtts, 0.5),
    })
}

/// A connection's policing counters, both directions together.
pub struct Policing {
    /// Cells in.
    pub cells_in: u64,
    /// Cells tagged CLP=1.
    pub tagged: u64,
    /// Cells discarded.
    pub dropped: u64,
}

/// The counters of the connection whose end `a` is `end` (`PORT:VPI.VCI`), from the
/// switch's status; `None` when the switch does not say.
pub fn policing(switch: &Path, end: &str) -> Option<Policing> {
    let status = Client::new(switch, Duration::from_secs(2)).status().ok()?;
    let xc = status.connections.iter().find(|c| c.a == end)?;
    let (ab, ba) = (&xc.a_to_b, &xc.b_to_a);
    Some(Policing {
        cells_in: ab.cells_in + ba.cells_in,
        tagged: ab.tagged + ba.tagged,
        dropped: ab.dropped + ba.dropped,
    })
}

/// What the capture wrote.
pub struct Captured {
    /// Cells written.
    pub cells: u64,
    /// Lines of the capture stream that were not a cell (cut by a read timeout).
    pub skipped: u64,
}

/// A capture of one switch port into a pcap file, on a thread of its own.
pub struct CaptureRun {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Result<Captured, String>>,
}

impl CaptureRun {
    /// Starts capturing `port` of the switch at `switch` into the pcap file `path`.
    pub fn start(switch: &Path, port: u16, path: &Path) -> Result<CaptureRun, Error> {
        let file = File::create(path).map_err(|e| Error::io(path.display().to_string(), e))?;
        let mut writer = Writer::new(BufWriter::new(file), LinkType::Erf)
            .map_err(|e| Error::Traffic(format!("{}: {e}", path.display())))?;
        let mut capture = Client::new(switch, CAPTURE_QUIET)
            .capture(port, None)
            .map_err(|source| Error::Switchd {
                what: format!("capture on s1:{port}"),
                source,
            })?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let name = path.display().to_string();
        let handle = std::thread::Builder::new()
            .name("demo-capture".into())
            .spawn(move || {
                let mut got = Captured {
                    cells: 0,
                    skipped: 0,
                };
                // Once told to stop, it reads on until the stream is quiet, so the cells
                // of the last run are in the file.
                while got.cells < CAPTURE_MAX {
                    match capture.next_cell() {
                        Ok(c) => {
                            let record = Record {
                                time: natm_core::Instant::from_nanos(c.t_ns),
                                kind: RecordKind::Cell(CellRecord::from_cell(&c.cell)),
                            };
                            writer.write(&record).map_err(|e| format!("{name}: {e}"))?;
                            got.cells += 1;
                        }
                        Err(ClientError::Io { source, .. })
                            if matches!(
                                source.kind(),
                                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                            ) =>
                        {
                            if flag.load(Ordering::Relaxed) {
                                break;
                            }
                        }
                        Err(ClientError::BadReply { .. }) => got.skipped += 1,
                        Err(e) => return Err(e.to_string()),
                    }
                }
                writer.flush().map_err(|e| format!("{name}: {e}"))?;
                Ok(got)
            })
            .map_err(|e| Error::io("cannot start the capture thread", e))?;
        Ok(CaptureRun { stop, handle })
    }

    /// Stops the capture once the stream is quiet; what it wrote.
    pub fn finish(self) -> Result<Captured, Error> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .join()
            .map_err(|_| Error::Panicked("the capture thread".into()))?
            .map_err(|e| Error::Traffic(format!("capture: {e}")))
    }
}

/// What tshark made of the capture.
pub enum Tshark {
    /// tshark is not installed.
    Missing,
    /// It failed, and said this.
    Failed(String),
    /// It decoded the file.
    Decoded {
        /// Packets decoded.
        packets: u64,
        /// Error-level expert infos.
        errors: u64,
    },
}

/// Runs tshark over `path` and counts packets and error-level expert infos (malformed
/// packets included: tshark reports each as one).
pub fn tshark_check(path: &Path) -> Tshark {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-o", "erf.aal5_type:unspecified", "-T", "fields"])
        .args(["-e", "frame.number", "-e", "_ws.expert.severity"])
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Tshark::Missing,
        Err(e) => return Tshark::Failed(e.to_string()),
    };
    if !out.status.success() {
        return Tshark::Failed(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut packets, mut errors) = (0u64, 0u64);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        packets += 1;
        let severities = line.split('\t').nth(1).unwrap_or("");
        errors += severities.split(',').filter(|s| *s == PI_ERROR).count() as u64;
    }
    Tshark::Decoded { packets, errors }
}

/// Four cell times at OC-3c: a one-cell request over two links and its one-cell answer
/// back over two, without any processing.
pub fn oc3_floor_ns() -> u64 {
    let (n, d) = natm_core::PhyRate::OC3.exact();
    (4 * d as u128 * 1_000_000_000 / n as u128) as u64
}

/// Alternate rounds of memcpy and segment+reassemble of 9,180-byte SDUs (the classical-IP
/// MTU plus LLC), so both see the same machine load: the spread of each one's rounds, in
/// GB/s (memcpy, then AAL5).
pub fn copy_vs_aal5() -> (Spread, Spread) {
    const N: usize = 9180;
    const ROUNDS: usize = 7;
    let sdu: Vec<u8> = (0..N).map(|i| i as u8).collect();
    let mut dst = vec![0u8; N];
    let mut cells = vec![0u8; aal5::cell_count(N) * 53];
    let vc = VcId::uni(0, 100).expect("valid VC");
    let mut rx = Reassembler::new(vc, MAX_SDU).expect("a valid max_sdu");
    let mut copy_rates = Vec::new();
    let mut aal5_rates = Vec::new();
    let round = Duration::from_millis(60);
    for _ in 0..ROUNDS {
        copy_rates.push(rate(N, round, || {
            dst.copy_from_slice(std::hint::black_box(&sdu));
            std::hint::black_box(&dst);
        }));
        aal5_rates.push(rate(N, round, || {
            let mut seg = Segmenter::uni(vc, std::hint::black_box(&sdu)).expect("valid SDU");
            let n = seg.write_cells(&mut cells);
            let (whole, _) = cells[..n * 53].as_chunks::<53>();
            std::hint::black_box(rx.push_cells(whole));
        }));
    }
    (Spread::of(copy_rates), Spread::of(aal5_rates))
}

fn rate(bytes: usize, budget: Duration, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < budget {
        for _ in 0..64 {
            f();
        }
        n += 64;
    }
    (bytes as f64 * n as f64) / start.elapsed().as_nanos() as f64
}

#[cfg(test)]
mod tests {
    use super::oc3_floor_ns;

    #[test]
    fn the_oc3_floor_is_four_cell_times() {
        // 53 bytes × 8 bits at 149.76 Mbit/s of cell payload rate: 2.831 µs a cell.
        assert_eq!(oc3_floor_ns(), 11_324);
    }
}

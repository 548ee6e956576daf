//! `natm capture --port s1:1|--host h1 [--vc 0.100] --out FILE`: the cells crossing a switch
//! port, as a pcap that Wireshark and tshark read.
//!
//! The switch streams every cell it receives on or sends out of the port (natm-switchd's
//! `capture` request); this writes each as an ERF type 3 record (ATM cell without HEC,
//! link type 197), which Wireshark decodes as ATM, OAM F4/F5 included (CRC-10 checked).
//! `--host h1` captures at the switch port the host's link is plugged into (the same cells;
//! "in" is then what the host sent). Stops after `--count` cells, after `--seconds`, or on
//! SIGINT/SIGTERM, and always leaves a complete file.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use natm_capture::{CellRecord, LinkType, Record, RecordKind, Writer};
use natm_switchd::client::{Client, ClientError};

use super::lab::topology::Topology;
use super::lab::{self, DirArgs};
use crate::{CliError, CmdResult};

/// Options of `natm capture`.
#[derive(Args, Debug)]
pub struct CaptureArgs {
    /// A switch port, SWITCH:PORT (e.g. s1:1).
    #[arg(long, conflicts_with = "host", required_unless_present = "host")]
    pub port: Option<String>,
    /// A host: capture at the switch port its link is plugged into.
    #[arg(long)]
    pub host: Option<String>,
    /// Only this VC (VPI.VCI).
    #[arg(long)]
    pub vc: Option<String>,
    /// The pcap file to write.
    #[arg(long)]
    pub out: PathBuf,
    /// Stop after this many cells.
    #[arg(long)]
    pub count: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long)]
    pub seconds: Option<f64>,
    #[command(flatten)]
    pub dir: DirArgs,
}

/// Which switch and port to capture on: `--port` as given, or the port `--host` uses.
fn resolve(args: &CaptureArgs, state: &lab::LabState) -> Result<(String, u16), CliError> {
    if let Some(p) = &args.port {
        let (sw, port) = p
            .split_once(':')
            .ok_or_else(|| CliError::usage(format!("--port {p:?}: use SWITCH:PORT, e.g. s1:1")))?;
        let port: u16 =
            port.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                CliError::usage(format!("--port {p:?}: the port is a number from 1"))
            })?;
        return Ok((sw.to_string(), port));
    }
    let host = args.host.as_deref().unwrap_or_default();
    let topo = Topology::parse(&state.topology, state.rate.as_deref())
        .map_err(|e| CliError::failure(format!("the lab's topology: {e}")))?;
    let (li, link) = topo
        .host_link(host)
        .ok_or_else(|| CliError::usage(format!("--host {host}: the lab has no such host")))?;
    let sw = if link.a == host { &link.b } else { &link.a };
    let port = topo
        .port_of(sw, li)
        .ok_or_else(|| CliError::failure(format!("--host {host}: no switch port found")))?;
    Ok((sw.clone(), port))
}

/// `--seconds` as a duration: a positive number of seconds that a `Duration` holds.
fn capture_time(s: f64) -> Result<Duration, CliError> {
    Duration::try_from_secs_f64(s)
        .ok()
        .filter(|_| s > 0.0)
        .ok_or_else(|| CliError::usage(format!("--seconds {s}: must be a positive number")))
}

/// Runs `natm capture`.
pub fn run(args: CaptureArgs) -> CmdResult {
    let time = args.seconds.map(capture_time).transpose()?;
    if let Some(vc) = &args.vc {
        vc.parse::<natm_core::PvcAddr>()
            .map_err(|e| CliError::usage(format!("--vc {vc:?}: {e}")))?;
    }
    let rt = lab::runtime_dir(args.dir.dir.as_deref());
    let state = lab::load_state(&rt)?;
    let (sw, port) = resolve(&args, &state)?;
    let daemon = state
        .daemons
        .iter()
        .find(|d| d.name == sw && d.role == "switch")
        .ok_or_else(|| {
            CliError::usage(format!("--port {sw}:{port}: the lab has no switch {sw}"))
        })?;
    let file = File::create(&args.out)
        .map_err(|e| CliError::failure(format!("{}: {e}", args.out.display())))?;
    let mut writer = Writer::new(BufWriter::new(file), LinkType::Erf)
        .map_err(|e| CliError::failure(format!("{}: {e}", args.out.display())))?;
    let mut stream = Client::new(&daemon.socket, Duration::from_millis(200))
        .capture(port, args.vc.as_deref())
        .map_err(|e| CliError::failure(format!("{sw}:{port}: {e}")))?;
    let stop = Arc::new(AtomicBool::new(false));
    natm_switchd::install_signal_stop(&stop)
        .map_err(|e| CliError::failure(format!("cannot install signal handlers: {e}")))?;
    // A time too long for the clock is no deadline.
    let deadline = time.and_then(|t| Instant::now().checked_add(t));
    eprintln!(
        "capturing on {sw}:{port}{} into {}",
        args.vc
            .as_deref()
            .map(|v| format!(" vc {v}"))
            .unwrap_or_default(),
        args.out.display()
    );
    for vc in stream.unseen() {
        eprintln!(
            "natm capture: VC {vc} on {sw}:{port} is spliced between two applications' lanes: \
             its cells bypass the switch and are not captured until the splice ends"
        );
    }
    let mut cells = 0u64;
    while !stop.load(Ordering::Relaxed)
        && args.count.is_none_or(|c| cells < c)
        && deadline.is_none_or(|d| Instant::now() < d)
    {
        match stream.next_cell() {
            Ok(c) => {
                let record = Record {
                    time: natm_core::Instant::from_nanos(c.t_ns),
                    kind: RecordKind::Cell(CellRecord::from_cell(&c.cell)),
                };
                writer
                    .write(&record)
                    .map_err(|e| CliError::failure(format!("{}: {e}", args.out.display())))?;
                cells += 1;
            }
            Err(ClientError::Io { source, .. })
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => {
                writer.flush().ok();
                return Err(CliError::failure(format!(
                    "{sw}:{port}: {e} ({cells} cells written)"
                )));
            }
        }
    }
    writer
        .flush()
        .map_err(|e| CliError::failure(format!("{}: {e}", args.out.display())))?;
    eprintln!("{cells} cells written to {}", args.out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_time_refuses_what_a_duration_cannot_hold() {
        assert_eq!(capture_time(1.5).unwrap(), Duration::from_millis(1500));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e300] {
            let e = capture_time(bad).unwrap_err();
            assert_eq!(e.code, 2, "{bad}");
            assert!(e.message.starts_with("--seconds "), "{bad}: {}", e.message);
        }
        // Longer than the clock reaches: no deadline rather than an overflow.
        let long = capture_time(1.8e19).unwrap();
        assert!(Instant::now().checked_add(long).is_none());
    }
}

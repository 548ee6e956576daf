//! `natm atmtcp listen PORT` / `natm atmtcp connect HOST:PORT`: a standalone atmtcp endpoint
//! that talks to linux-atm's `atmtcp` program (natm-link's [`AtmtcpLink`]).
//!
//! In order, the command: connects (or accepts one connection, as `atmtcp listen` does);
//! opens every `--vc` by sending `O vpi.vci 0.vpi.vci qos`; sends the `--text` or `--input`
//! bytes as one SDU on every `--vc`, in the order given; then prints every frame it receives,
//! one line each, until `--count` frames have arrived, `--timeout` has passed since the
//! start, or the peer closes; and last sends `C vpi.vci` for every VC it opened and closes
//! the connection.
//!
//! Each received frame is one line, `VPI.VCI LENGTH HEX` (`-` for an empty body). Control
//! frames are on VC 0.0 and the line goes on with what they say:
//! `0.0 35 4f20…3932 open 1.42 0.1.42 ubr,aal5:max_sdu=8192`, `0.0 6 4320312e3432 close
//! 1.42`, or `… bad-control REASON`. `--json` prints one object per frame instead.
//!
//! Exit status: 0 when it ended as asked (count reached, or the peer closed or the time ran
//! out with no `--count`); 1 when the link failed (refused, giant PDU, peer gone mid-frame)
//! or `--count` frames did not arrive; 2 on bad input.

use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use natm_core::qos::Qos;
use natm_core::{VcId, VcIdParseError, Vci, Vpi};
use natm_link::atmtcp::{AtmtcpLink, CloseReason, Event, LinkError, Vc};
use serde_json::json;

use crate::{CliError, CmdResult};

/// `natm atmtcp …`
#[derive(Subcommand)]
pub enum AtmtcpCommand {
    /// Accept one atmtcp connection on PORT (0: any free port, printed on stderr).
    Listen {
        /// TCP port (linux-atm's default is 2812).
        port: u16,
        /// Address to listen on (`0.0.0.0` to accept other machines).
        #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
        bind: std::net::IpAddr,
        #[command(flatten)]
        common: Common,
    },
    /// Connect to an atmtcp endpoint at HOST:PORT.
    Connect {
        /// Where to connect, e.g. 127.0.0.1:2812.
        target: String,
        #[command(flatten)]
        common: Common,
    },
}

/// The options both ends share.
#[derive(Args)]
pub struct Common {
    /// Open this VC (`O` control message); repeat for more. Data goes on every one.
    #[arg(long = "vc", value_name = "VPI.VCI", value_parser = parse_vc)]
    vcs: Vec<Vc>,
    /// The QoS announced for the VCs (qos(7) text, sent in qos2text's canonical form).
    #[arg(
        long,
        value_name = "Q",
        default_value = "ubr,aal5:max_sdu=65535",
        allow_hyphen_values = true
    )]
    qos: String,
    /// Send these bytes as one SDU on every --vc.
    #[arg(long, value_name = "STR", conflicts_with = "input")]
    text: Option<String>,
    /// Send this file's bytes as one SDU on every --vc (`-`: standard input).
    #[arg(long, value_name = "FILE")]
    input: Option<PathBuf>,
    /// Stop after receiving N frames (control frames count; 0: stop right after sending).
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Stop SECS seconds after starting (connecting or listening included).
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    timeout: Option<Duration>,
    /// Print one JSON object per frame.
    #[arg(long)]
    json: bool,
}

fn parse_vc(s: &str) -> Result<Vc, String> {
    let vc: VcId = s.parse().map_err(|e| match e {
        VcIdParseError::VpiNotDecimal | VcIdParseError::VpiRange { .. } => {
            format!("{s:?}: VPI must be 0..={}", Vpi::MAX_NNI)
        }
        VcIdParseError::VciNotDecimal | VcIdParseError::VciRange => {
            format!("{s:?}: VCI must be 0..={}", Vci::MAX)
        }
        VcIdParseError::NoDot => format!("{s:?}: {e}"),
    })?;
    if vc == VcId::default() {
        return Err("VC 0.0 carries atmtcp's control messages, not data".into());
    }
    Ok(Vc::new(vc.vpi.get(), vc.vci.get()))
}

fn parse_secs(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0 && *v <= 1e9)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{s:?}: expected a number of seconds"))
}

fn hex(b: &[u8]) -> String {
    if b.is_empty() {
        return "-".into();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The line (or JSON object) for one received frame.
fn frame_line(ev: &Event, as_json: bool) -> String {
    let frame = ev.to_frame();
    let body = &frame[natm_wire::atmtcp::HEADER_LEN..];
    let vc = match ev {
        Event::Data { vc, .. } => *vc,
        _ => Vc::CONTROL,
    };
    if as_json {
        let control = match ev {
            Event::Data { .. } => serde_json::Value::Null,
            Event::Open { vc, addr, qos } => {
                json!({"type": "open", "vc": vc.to_string(), "addr": addr, "qos": qos})
            }
            Event::Close { vc } => json!({"type": "close", "vc": vc.to_string()}),
            Event::BadControl { reason, .. } => json!({"type": "bad", "reason": reason}),
        };
        return json!({
            "vpi": vc.vpi, "vci": vc.vci, "length": body.len(),
            "hex": if body.is_empty() { String::new() } else { hex(body) },
            "control": control,
        })
        .to_string();
    }
    let head = format!("{vc} {} {}", body.len(), hex(body));
    match ev {
        Event::Data { .. } => head,
        Event::Open { vc, addr, qos } => format!("{head} open {vc} {addr} {qos}"),
        Event::Close { vc } => format!("{head} close {vc}"),
        Event::BadControl { reason, .. } => format!("{head} bad-control {reason}"),
    }
}

fn link_failure(e: LinkError) -> CliError {
    CliError::failure(format!("atmtcp: {e}"))
}

/// Runs `natm atmtcp`.
pub fn run(cmd: AtmtcpCommand) -> CmdResult {
    let start = Instant::now();
    let common = match &cmd {
        AtmtcpCommand::Listen { common, .. } | AtmtcpCommand::Connect { common, .. } => common,
    };
    let qos: Qos = common
        .qos
        .parse()
        .map_err(|e| CliError::usage(format!("--qos {:?}: {e}", common.qos)))?;
    let qos = qos.to_string();
    let sdu = match (&common.text, &common.input) {
        (Some(t), _) => Some(t.clone().into_bytes()),
        (None, Some(p)) if p.as_os_str() == "-" => {
            let mut b = Vec::new();
            io::Read::read_to_end(&mut io::stdin(), &mut b)
                .map_err(|e| CliError::usage(format!("--input -: {e}")))?;
            Some(b)
        }
        (None, Some(p)) => Some(
            std::fs::read(p)
                .map_err(|e| CliError::usage(format!("--input {}: {e}", p.display())))?,
        ),
        (None, None) => None,
    };
    if let Some(b) = &sdu {
        if b.len() > natm_wire::atmtcp::MAX_LEN as usize {
            return Err(CliError::usage(format!(
                "the SDU has {} bytes; atmtcp carries at most {}",
                b.len(),
                natm_wire::atmtcp::MAX_LEN
            )));
        }
        if common.vcs.is_empty() {
            return Err(CliError::usage("--text/--input need a --vc to send on"));
        }
    }
    let deadline = common.timeout.map(|t| start + t);
    let left = || deadline.map(|d| d.saturating_duration_since(Instant::now()));

    let mut link = match &cmd {
        AtmtcpCommand::Listen { port, bind, .. } => {
            let l = TcpListener::bind((*bind, *port))
                .map_err(|e| CliError::failure(format!("listen on {bind}:{port}: {e}")))?;
            let local = l
                .local_addr()
                .map_err(|e| CliError::failure(e.to_string()))?;
            eprintln!("natm atmtcp: listening on {local}");
            AtmtcpLink::accept_until(&l, deadline).map_err(|e| {
                CliError::failure(if e.kind() == io::ErrorKind::TimedOut {
                    format!("atmtcp: {e}")
                } else {
                    format!("accept: {e}")
                })
            })?
        }
        AtmtcpCommand::Connect { target, .. } => {
            let addrs: Vec<SocketAddr> = target
                .to_socket_addrs()
                .map_err(|e| CliError::usage(format!("{target:?}: expected HOST:PORT ({e})")))?
                .collect();
            AtmtcpLink::connect_until(&addrs, deadline)
                .map_err(|e| CliError::failure(format!("connect to {target}: {e}")))?
        }
    };
    eprintln!("natm atmtcp: connected to {}", link.peer_addr());

    for vc in &common.vcs {
        link.open_vc(*vc, None, &qos).map_err(link_failure)?;
    }
    if let Some(b) = &sdu {
        for vc in &common.vcs {
            link.send_sdu(*vc, b).map_err(link_failure)?;
        }
    }

    let mut received = 0u64;
    let mut out = io::stdout().lock();
    let ended = loop {
        if common.count.is_some_and(|n| received >= n) {
            break None;
        }
        let wait = left();
        if wait.is_some_and(|w| w.is_zero()) {
            break None;
        }
        match link.recv(wait) {
            Ok(Some(ev)) => {
                received += 1;
                writeln!(out, "{}", frame_line(&ev, common.json))
                    .and_then(|()| out.flush())
                    .map_err(|e| CliError::failure(format!("stdout: {e}")))?;
            }
            Ok(None) => break None,
            Err(LinkError::Closed(CloseReason::PeerClosed)) => break Some(None),
            Err(LinkError::Closed(reason)) => break Some(Some(reason)),
            Err(e) => return Err(link_failure(e)),
        }
    };
    match ended {
        None => link.shutdown(true).map_err(link_failure)?,
        Some(None) => eprintln!("natm atmtcp: peer closed the connection"),
        Some(Some(reason)) => return Err(CliError::failure(format!("atmtcp: {reason}"))),
    }
    match common.count {
        Some(n) if received < n => Err(CliError::failure(format!(
            "atmtcp: received {received} of {n} frames"
        ))),
        _ => Ok(()),
    }
}

//! `natm send [--host H] (--vc V [--return-vc W] | --to ADDR) --service S [--qos Q] < FILE`
//! and `natm recv [--host H] (--vc V [--return-vc W] | --listen [--selector N]) --service S >
//! FILE`: a netcat for natm, a byte stream over a transport channel
//! (`natm::transport::Channel`) on a PVC, on two PVCs (the stream on V, its
//! acknowledgements back on W: the seed's duplex channel from two simplex VCs) or on a
//! switched VC.
//!
//! Both ends open the PVC V on their host (or `natm recv --listen` takes one call to its
//! host's address, which its first line on standard error names, and `natm send --to`
//! places it with the QoS) and exchange the channel's hello (the service, the TPDU size
//! and the largest message must agree; `--timeout` bounds the wait for the other end, so
//! on a PVC either may start first). `natm send` reads standard input in messages of
//! `--message-size` bytes and sends them; `natm recv` writes what arrives to standard
//! output, in order.
//!
//! # The stream's framing
//!
//! Every message starts with one type byte:
//!
//! * `0x00` data: the next 1 to `--message-size` bytes of the stream (only the last one
//!   shorter).
//! * `0x01` end of stream: the stream's length in bytes and its number of data messages,
//!   each a big-endian u64 (17 bytes in all). A reliable channel sends it once; best
//!   effort and guaranteed send it four times, 0, 50, 150 and 350 ms after the data has
//!   left (it may be lost like any message, and a receiver behind on its buffers drops
//!   what comes meanwhile), and the receiver takes the first that comes.
//!
//! The receiver knows the whole stream arrived when the end of stream came and the bytes
//! and data messages it took are what the end says.
//!
//! Once the end is sent, `natm send` waits until everything is acknowledged (reliable) or
//! sent, then exits; `natm recv`, having the end, lingers until the sender is quiet for
//! 0.5 s (at most 5 s) so that a lost final ack is answered.
//!
//! One line on standard error sums up each end: `natm send: 4194304 bytes in 64 messages,
//! 0.512 s, 65.5 Mbit/s, 3 resent (2 SMART, 1 after a timeout), 2 loss probes, rtt 0.41
//! ms, window 24` and `natm recv: 4194304 bytes in 64 messages, 0.515 s, 65.2 Mbit/s, 0
//! messages lost` (printed also when the end of stream never came).
//!
//! # Admission of a guaranteed channel
//!
//! `--service guaranteed:RATE` is admitted (`natm::transport::admission`) only when the
//! VC's QoS reserves RATE cells/s in this end's sending direction (the default QoS,
//! `cbr:pcr=RATE×1.25`, does; `ubr` never does) and, with a calibration, when the host's
//! per-TPDU costs at RATE fit half a CPU. The calibration is `--calibration FILE`, else
//! [`default_calibration`] when that file exists (`$NATM_CALIBRATION`, else
//! `$XDG_CONFIG_HOME/natm/calibration.toml`, else `~/.config/natm/calibration.toml`:
//! write it with `natm perf calibrate --out` that path); without one, or with
//! `--calibration none`, there is no host check. The per-TPDU cost is the data path's
//! send (receive) cost of the TPDU's frame plus natm-transport's own (the file's
//! `[transport]` table, when it was measured). A refusal exits 1 with one line naming
//! `link` or `host` and both figures.
//!
//! Exit status: 0 when the whole stream was sent (send: and acknowledged on a reliable
//! channel) or arrived (recv); 1 when it did not (a best-effort message lost, no end of
//! stream within `--timeout` of the last message, the other end gone, its channel of
//! another service), or anything else failed; 2 on bad input (a VC, service, QoS, path or
//! size that does not parse).

use std::io::{self, BufWriter, Read, Write};
use std::time::{Duration, Instant};

use std::path::PathBuf;

use clap::Args;
use natm::transport::{
    Channel, ChannelStats, CostLine, Event, HostBudget, Service, TransportOptions,
};
use natm::{Aesa, CallOptions, ChannelOptions, Listener, PvcAddr, Qos, VcOptions};
use natm_sim::calib::Calibration;

use super::call::{call_error, parse_aesa, parse_path, parse_qos};
use super::lab::DirArgs;
use super::ping::connect_host;
use crate::{CliError, CmdResult};

/// A data message's type byte.
pub const DATA: u8 = 0x00;
/// The end of stream's type byte.
pub const END: u8 = 0x01;
/// The end of stream's length.
pub const END_LEN: usize = 17;
/// When the copies of the end of stream go on a channel without retransmission, after
/// the data has left.
pub const END_COPIES_MS: [u64; 4] = [0, 50, 150, 350];
/// How long `natm recv` answers the sender after the end of stream: until it is quiet
/// this long, and at most [`LINGER_MAX`].
const LINGER_QUIET: Duration = Duration::from_millis(500);
const LINGER_MAX: Duration = Duration::from_secs(5);

/// What both ends take.
#[derive(Args, Debug)]
pub struct ChannelArgs {
    /// The host to use.
    #[arg(long, default_value = "h1")]
    pub host: String,
    /// The PVC (`vpi.vci` or `itf.vpi.vci`); or a switched VC with `natm send --to` and
    /// `natm recv --listen`.
    #[arg(long)]
    pub vc: Option<String>,
    /// With `--vc`: build the channel from two PVCs, as the seed papers do: the stream
    /// goes on `--vc` and the acknowledgements come back on this one (both ends give the
    /// same two; both VCs get `--qos`).
    #[arg(long, requires = "vc")]
    pub return_vc: Option<String>,
    /// The service: reliable, best-effort or guaranteed:RATE (cells/s). Both ends alike.
    #[arg(long)]
    pub service: String,
    /// The VC's QoS in qos(7) form (default ubr; for guaranteed:RATE cbr:pcr=RATE×1.25, the
    /// headroom the channel's bucket needs to keep its rate).
    #[arg(long)]
    pub qos: Option<String>,
    /// The data path: auto, direct, daemon or lane.
    #[arg(long, default_value = "auto")]
    pub path: String,
    /// Payload bytes per TPDU (both ends alike).
    #[arg(long, default_value_t = 8192)]
    pub tpdu_size: usize,
    /// Seconds to wait for the other end, and for the stream to move.
    #[arg(long, default_value_t = 10.0)]
    pub timeout: f64,
    /// The host's calibration (`natm perf calibrate`) a guaranteed channel is admitted
    /// against, or `none` for no host check (default: $NATM_CALIBRATION,
    /// $XDG_CONFIG_HOME/natm/calibration.toml or ~/.config/natm/calibration.toml, if it
    /// exists).
    #[arg(long)]
    pub calibration: Option<String>,
    #[command(flatten)]
    pub dir: DirArgs,
}

/// Options of `natm send`.
#[derive(Args, Debug)]
pub struct SendArgs {
    #[command(flatten)]
    pub channel: ChannelArgs,
    /// Call this ATM address (AESA) instead of a PVC: the stream goes on the switched VC
    /// (`natm recv --listen` takes the call).
    #[arg(long, conflicts_with = "vc")]
    pub to: Option<String>,
    /// Bytes of the stream per message.
    #[arg(long, default_value_t = 65_536)]
    pub message_size: usize,
}

/// Options of `natm recv`.
#[derive(Args, Debug)]
pub struct RecvArgs {
    #[command(flatten)]
    pub channel: ChannelArgs,
    /// Take the stream on a switched VC: accept one call to the host's address (the
    /// first line on standard error names it) instead of a PVC.
    #[arg(long, conflicts_with = "vc")]
    pub listen: bool,
    /// With `--listen`: take only calls to this selector (the address's last byte).
    #[arg(long, requires = "listen")]
    pub selector: Option<u8>,
}

/// Parses `--service` (exit 2 naming it).
pub fn parse_service(text: &str) -> Result<Service, CliError> {
    let bad = || {
        CliError::usage(format!(
            "--service {text:?}: expected reliable, best-effort or guaranteed:RATE (cells/s, at least 1)"
        ))
    };
    match text {
        "reliable" => Ok(Service::Reliable),
        "best-effort" => Ok(Service::BestEffort),
        _ => {
            let rate = text.strip_prefix("guaranteed:").ok_or_else(bad)?;
            match rate.parse::<u32>() {
                Ok(rate) if rate > 0 => Ok(Service::Guaranteed { rate }),
                _ => Err(bad()),
            }
        }
    }
}

/// The VC's QoS for a channel of `service`: `--qos` when given (exit 2 naming it if it does
/// not parse), else UBR, or CBR at the guaranteed rate and its headroom
/// ([`Service::vc_pcr`]).
pub fn channel_qos(given: Option<&str>, service: Service) -> Result<Qos, CliError> {
    match (given, service.vc_pcr()) {
        (Some(q), _) => parse_qos(q, "--qos"),
        (None, Some(pcr)) => parse_qos(&format!("cbr:pcr={pcr}"), "--qos"),
        (None, None) => parse_qos("ubr", "--qos"),
    }
}

/// The service's name as `--service` takes it.
pub fn service_name(s: Service) -> String {
    match s {
        Service::Reliable => "reliable".into(),
        Service::BestEffort => "best-effort".into(),
        Service::Guaranteed { rate } => format!("guaranteed:{rate}"),
    }
}

/// Which VC the channel goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// A PVC.
    Pvc(PvcAddr),
    /// Two PVCs: the stream's and the acknowledgements'.
    Pair(PvcAddr, PvcAddr),
    /// A call to an address.
    Call(Aesa),
    /// One call accepted (to this selector).
    Listen(Option<u8>),
}

/// What a channel is opened with, checked.
struct Plan {
    target: Target,
    qos: Qos,
    opts: TransportOptions,
    path: natm::DataPath,
    timeout: Duration,
}

fn plan(a: &ChannelArgs, to: Option<&str>, listen: Option<Option<u8>>) -> Result<Plan, CliError> {
    let pvc = |flag: &str, text: &str| -> Result<PvcAddr, CliError> {
        text.parse()
            .map_err(|e| CliError::usage(format!("{flag} {text:?}: {e}")))
    };
    let target = match (&a.vc, to, listen) {
        (Some(vc), None, None) => match &a.return_vc {
            None => Target::Pvc(pvc("--vc", vc)?),
            Some(text) => {
                let (vc, back) = (pvc("--vc", vc)?, pvc("--return-vc", text)?);
                if vc == back {
                    return Err(CliError::usage(format!(
                        "--return-vc {text}: must differ from --vc"
                    )));
                }
                Target::Pair(vc, back)
            }
        },
        (None, Some(to), None) => Target::Call(parse_aesa(to)?),
        (None, None, Some(sel)) => Target::Listen(sel),
        (None, None, None) => {
            return Err(CliError::usage(
                "give the VC: --vc V (a PVC), or --to ADDR (send) / --listen (recv)",
            ));
        }
        _ => return Err(CliError::usage("give one VC: --vc, --to or --listen")),
    };
    let service = parse_service(&a.service)?;
    let qos = channel_qos(a.qos.as_deref(), service)?;
    let path = parse_path(&a.path)?;
    if !(a.timeout.is_finite() && a.timeout > 0.0 && a.timeout <= 3600.0) {
        return Err(CliError::usage(format!(
            "--timeout {}: must be above 0 and at most 3600 seconds",
            a.timeout
        )));
    }
    let timeout = Duration::from_secs_f64(a.timeout);
    let mut opts = TransportOptions::new(service)
        .tpdu_size(a.tpdu_size)
        .handshake_timeout(timeout);
    // Small TPDUs: a receive buffer that still holds the largest message (both ends
    // compute the same from the same TPDU size).
    if a.tpdu_size > 0 {
        let need = opts.config.tpdus_of(opts.config.max_message);
        opts.config.recv_buffer = opts
            .config
            .recv_buffer
            .max(u32::try_from(need).unwrap_or(u32::MAX));
    }
    opts.config
        .validate()
        .map_err(|e| CliError::usage(format!("--tpdu-size {}: {e}", a.tpdu_size)))?;
    // Only a guaranteed channel is held to the host's budget.
    if matches!(service, Service::Guaranteed { .. })
        && let Some(budget) = host_budget(a.calibration.as_deref(), default_calibration())?
    {
        opts = opts.budget(budget);
    }
    Ok(Plan {
        target,
        qos,
        opts,
        path,
        timeout,
    })
}

/// The default calibration file: `$NATM_CALIBRATION`, else
/// `$XDG_CONFIG_HOME/natm/calibration.toml`, else `$HOME/.config/natm/calibration.toml`
/// (`None` when none of those variables is set).
pub fn default_calibration() -> Option<PathBuf> {
    let var = |k| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = var("NATM_CALIBRATION") {
        return Some(PathBuf::from(p));
    }
    let config = var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(config.join("natm").join("calibration.toml"))
}

/// The host budget of a calibration: the data path's per-SDU cost of a TPDU's frame plus
/// natm-transport's own per TPDU, each way.
pub fn budget_of(cal: &Calibration) -> HostBudget {
    let c = &cal.costs;
    let t = cal.transport.unwrap_or_default();
    HostBudget::new(
        CostLine {
            fixed_ns: c.send_fixed.as_nanos().saturating_add(t.send_fixed_ns),
            per_byte_ps: c.send_per_byte_ps.saturating_add(t.send_per_byte_ps),
        },
        CostLine {
            fixed_ns: c.recv_fixed.as_nanos().saturating_add(t.recv_fixed_ns),
            per_byte_ps: c.recv_per_byte_ps.saturating_add(t.recv_per_byte_ps),
        },
    )
}

/// The budget `--calibration` asks for: its file (exit 2 if it cannot be read), none
/// (`none`), or the default file when it exists (exit 1 if it is broken: it is not
/// this command's input, and `--calibration none` gets past it).
fn host_budget(
    arg: Option<&str>,
    default: Option<PathBuf>,
) -> Result<Option<HostBudget>, CliError> {
    match arg {
        Some("none") => Ok(None),
        Some(file) => Calibration::load(file)
            .map(|c| Some(budget_of(&c)))
            .map_err(|e| CliError::usage(format!("--calibration {file}: {e}"))),
        None => match default.filter(|p| p.exists()) {
            None => Ok(None),
            Some(p) => Calibration::load(&p)
                .map(|c| Some(budget_of(&c)))
                .map_err(|e| {
                    CliError::failure(format!(
                        "the default calibration {}: {e} (--calibration none skips the host check)",
                        p.display()
                    ))
                }),
        },
    }
}

/// Opens the channel: the PVC on the host (or the call, placed or taken), the hello with
/// the other end. A listener is kept while the channel lives.
/// `sender`: this end sends the stream (on a pair, it sends on the stream's VC).
fn open(a: &ChannelArgs, p: &Plan, sender: bool) -> Result<(Channel, Option<Listener>), CliError> {
    let host = connect_host(&a.dir, &a.host)?;
    let channel = ChannelOptions::default()
        .path(p.path)
        .buffers(p.opts.buffers())
        .buffer_size(p.opts.buffer_size());
    // Each PVC named as the user wrote it.
    let open_pvc = |addr: PvcAddr, text: Option<&String>| {
        let vc = VcOptions::new(addr)
            .qos(p.qos)
            .path(p.path)
            .buffers(p.opts.buffers())
            .buffer_size(p.opts.buffer_size());
        let what = format!("VC {}", text.map_or("", String::as_str));
        host.open(vc)
            .map_err(|e| CliError::failure(format!("{what} on {}: {e}", a.host)))
            .map(|vc| (vc, what))
    };
    let (vc, listener, what) = match p.target {
        Target::Pvc(addr) => {
            let (vc, what) = open_pvc(addr, a.vc.as_ref())?;
            (vc, None, what)
        }
        Target::Pair(stream, back) => {
            let (stream, what) = open_pvc(stream, a.vc.as_ref())?;
            let (back, back_what) = open_pvc(back, a.return_vc.as_ref())?;
            let what = format!("{what} (the stream) and {back_what} (its acknowledgements)");
            let (out, inn) = if sender {
                (stream, back)
            } else {
                (back, stream)
            };
            let ch =
                Channel::over_pair(out, inn, p.opts).map_err(|e| channel_error(a, p, &what, e))?;
            return Ok((ch, None));
        }
        Target::Call(to) => {
            let opts = CallOptions::new()
                .qos(p.qos)
                .channel(channel)
                .timeout(p.timeout.min(Duration::from_secs(60)));
            let vc = host.call(&to, opts).map_err(|e| call_error(&to, e))?;
            let what = vc.call().map_or_else(
                || format!("the call to {to}"),
                |c| format!("VC {} (a call to {to})", c.vc),
            );
            (vc, None, what)
        }
        Target::Listen(selector) => {
            let listener = host
                .listen(selector)
                .map_err(|e| CliError::failure(format!("listening on {}: {e}", a.host)))?;
            eprintln!("natm recv: listening on {}", listener.address());
            let call = listener.next_call(Some(p.timeout)).map_err(|e| match e {
                natm::Error::Timeout => CliError::failure(format!(
                    "no call came within {:.1} s",
                    p.timeout.as_secs_f64()
                )),
                e => CliError::failure(format!("waiting for a call: {e}")),
            })?;
            let from = call
                .calling()
                .map_or_else(|| "an unknown caller".to_string(), ToString::to_string);
            let vc = listener
                .accept_call(call, &channel)
                .map_err(|e| CliError::failure(format!("accepting the call from {from}: {e}")))?;
            let what = vc.call().map_or_else(
                || format!("the call from {from}"),
                |c| format!("VC {} (a call from {from})", c.vc),
            );
            (vc, Some(listener), what)
        }
    };
    let ch = Channel::over(vc, p.opts).map_err(|e| channel_error(a, p, &what, e))?;
    Ok((ch, listener))
}

/// Why the channel's hello failed, in one line.
fn channel_error(a: &ChannelArgs, p: &Plan, what: &str, e: natm::Error) -> CliError {
    match e {
        natm::Error::Timeout => CliError::failure(format!(
            "no {} channel answered on {what} within {:.1} s (is the other end running?)",
            service_name(p.opts.config.service),
            p.timeout.as_secs_f64()
        )),
        e => CliError::failure(format!("{what} on {}: {e}", a.host)),
    }
}

/// The end of stream message.
pub fn end_message(bytes: u64, messages: u64) -> [u8; END_LEN] {
    let mut m = [0u8; END_LEN];
    m[0] = END;
    m[1..9].copy_from_slice(&bytes.to_be_bytes());
    m[9..17].copy_from_slice(&messages.to_be_bytes());
    m
}

/// What a received message is.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Bytes of the stream.
    Data(&'a [u8]),
    /// The end: the stream's bytes and data messages.
    End {
        /// Bytes.
        bytes: u64,
        /// Data messages.
        messages: u64,
    },
}

/// Reads a received message; `None` if it is not one of the stream's.
pub fn piece(m: &[u8]) -> Option<Piece<'_>> {
    match m.split_first()? {
        (&DATA, rest) if !rest.is_empty() => Some(Piece::Data(rest)),
        (&END, rest) if rest.len() == END_LEN - 1 => {
            let (b, n) = rest.split_at(8);
            Some(Piece::End {
                bytes: u64::from_be_bytes(b.try_into().ok()?),
                messages: u64::from_be_bytes(n.try_into().ok()?),
            })
        }
        _ => None,
    }
}

/// Reads until `buf` is full or the input ends; the bytes read.
fn fill(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Bytes, messages and time as the summaries start: `B bytes in M messages, T s, R
/// Mbit/s`.
pub fn volume(bytes: u64, messages: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        bytes as f64 * 8.0 / secs / 1e6
    } else {
        0.0
    };
    format!(
        "{bytes} bytes in {messages} message{}, {secs:.3} s, {rate:.1} Mbit/s",
        if messages == 1 { "" } else { "s" }
    )
}

/// The sender's summary after [`volume`]: resends, probes, timeouts, round trip, window.
pub fn send_figures(s: &ChannelStats) -> String {
    let e = &s.endpoint;
    let mut line = format!(
        "{} resent ({} SMART, {} after a timeout), {} SMART losses, {} window cuts ({} by a fifth), {} loss probes, {} timeouts",
        e.smart_resends + e.timeout_resends,
        e.smart_resends,
        e.timeout_resends,
        e.smart_losses,
        e.window_cuts,
        e.random_loss_cuts,
        e.probes,
        e.timeouts
    );
    if let Some(rtt) = e.srtt {
        line += &format!(
            ", rtt {:.3} ms, window {} (threshold {})",
            rtt.as_nanos() as f64 / 1e6,
            e.cwnd,
            e.ssthresh
        );
    }
    line
}

/// The receiver's summary.
pub fn recv_line(bytes: u64, messages: u64, elapsed: Duration, lost: u64) -> String {
    format!(
        "natm recv: {}, {lost} message{} lost",
        volume(bytes, messages, elapsed),
        if lost == 1 { "" } else { "s" }
    )
}

fn failed(what: &str, e: natm::Error) -> CliError {
    CliError::failure(format!("{what}: {e}"))
}

/// Runs `natm send`.
pub fn send(args: SendArgs) -> CmdResult {
    let p = plan(&args.channel, args.to.as_deref(), None)?;
    let max = p.opts.config.max_message - 1;
    if !(1..=max).contains(&args.message_size) {
        return Err(CliError::usage(format!(
            "--message-size {}: must be 1 to {max} bytes",
            args.message_size
        )));
    }
    let (mut ch, _listener) = open(&args.channel, &p, true)?;
    let start = Instant::now();
    let mut msg = vec![0u8; 1 + args.message_size];
    msg[0] = DATA;
    let (mut bytes, mut messages) = (0u64, 0u64);
    let mut input = io::stdin().lock();
    loop {
        let n = fill(&mut input, &mut msg[1..])
            .map_err(|e| CliError::failure(format!("reading standard input: {e}")))?;
        if n == 0 {
            break;
        }
        ch.send_timeout(&msg[..1 + n], p.timeout)
            .map_err(|e| match e {
                natm::Error::Timeout => CliError::failure(format!(
                    "the far end took nothing for {:.1} s ({bytes} bytes sent)",
                    p.timeout.as_secs_f64()
                )),
                e => failed("sending", e),
            })?;
        bytes += n as u64;
        messages += 1;
        if n < args.message_size {
            break;
        }
    }
    let end = end_message(bytes, messages);
    let flushed = |e| match e {
        natm::Error::Timeout => CliError::failure(format!(
            "the far end did not acknowledge the whole stream within {:.1} s",
            p.timeout.as_secs_f64()
        )),
        e => failed("flushing", e),
    };
    if p.opts.config.service == Service::Reliable {
        ch.send_timeout(&end, p.timeout)
            .map_err(|e| failed("sending the end of stream", e))?;
    } else {
        ch.flush(p.timeout).map_err(flushed)?;
        let left = Instant::now();
        for ms in END_COPIES_MS {
            let at = left + Duration::from_millis(ms);
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            ch.send_timeout(&end, p.timeout)
                .map_err(|e| failed("sending the end of stream", e))?;
            ch.flush(p.timeout).map_err(flushed)?;
        }
    }
    ch.flush(p.timeout).map_err(|e| match e {
        natm::Error::Timeout => CliError::failure(format!(
            "the far end did not acknowledge the whole stream within {:.1} s",
            p.timeout.as_secs_f64()
        )),
        e => failed("flushing", e),
    })?;
    let elapsed = start.elapsed();
    let s = ch.stats();
    eprintln!(
        "natm send: {}, {}",
        volume(bytes, messages, elapsed),
        send_figures(&s)
    );
    Ok(())
}

/// Runs `natm recv`.
pub fn recv(args: RecvArgs) -> CmdResult {
    let listen = args.listen.then_some(args.selector);
    let p = plan(&args.channel, None, listen)?;
    let (mut ch, _listener) = open(&args.channel, &p, false)?;
    let mut out = BufWriter::with_capacity(1 << 20, io::stdout().lock());
    let mut start = None;
    let (mut bytes, mut messages, mut lost) = (0u64, 0u64, 0u64);
    let (want_bytes, want_messages) = loop {
        let event = ch.recv_timeout(p.timeout).map_err(|e| match e {
            natm::Error::Timeout => {
                let elapsed = start.map_or(Duration::ZERO, |s: Instant| s.elapsed());
                eprintln!("{}", recv_line(bytes, messages, elapsed, lost));
                CliError::failure(format!(
                    "no end of stream: nothing came for {:.1} s",
                    p.timeout.as_secs_f64()
                ))
            }
            e => failed("receiving", e),
        })?;
        start.get_or_insert_with(Instant::now);
        match event {
            Event::Message { data, .. } => match piece(&data) {
                Some(Piece::Data(d)) => {
                    out.write_all(d)
                        .map_err(|e| CliError::failure(format!("writing standard output: {e}")))?;
                    bytes += d.len() as u64;
                    messages += 1;
                }
                Some(Piece::End { bytes, messages }) => break (bytes, messages),
                None => {
                    return Err(CliError::failure(format!(
                        "message {messages} is not of natm send's stream (type byte {:?})",
                        data.first()
                    )));
                }
            },
            Event::Lost { first, last } => lost += u64::from(last.since(first)) + 1,
        }
    };
    out.flush()
        .map_err(|e| CliError::failure(format!("writing standard output: {e}")))?;
    let elapsed = start.map_or(Duration::ZERO, |s| s.elapsed());
    // The sender's last retransmissions (a lost final ack) find this end still there.
    ch.linger(LINGER_QUIET, LINGER_MAX)
        .map_err(|e| failed("lingering", e))?;
    eprintln!("{}", recv_line(bytes, messages, elapsed, lost));
    if (bytes, messages) != (want_bytes, want_messages) {
        return Err(CliError::failure(format!(
            "the stream is incomplete: {bytes} of {want_bytes} bytes, {messages} of {want_messages} messages"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_parse_and_print_back() {
        for s in ["reliable", "best-effort", "guaranteed:1000"] {
            assert_eq!(service_name(parse_service(s).unwrap()), s);
        }
        for bad in ["", "Reliable", "guaranteed", "guaranteed:0", "guaranteed:x"] {
            let e = parse_service(bad).unwrap_err();
            assert_eq!(e.code, 2, "{bad}");
            assert!(e.message.starts_with("--service"), "{}", e.message);
        }
    }

    #[test]
    fn the_framing_reads_back_and_refuses_what_is_not_a_piece() {
        let end = end_message(4 << 20, 64);
        assert_eq!(
            piece(&end),
            Some(Piece::End {
                bytes: 4 << 20,
                messages: 64
            })
        );
        assert_eq!(piece(&[DATA, 1, 2]), Some(Piece::Data(&[1, 2])));
        assert_eq!(piece(&[DATA]), None, "data without bytes");
        assert_eq!(piece(&end[..16]), None, "a short end");
        assert_eq!(piece(&[7, 1]), None, "another type");
        assert_eq!(piece(&[]), None);
    }

    #[test]
    fn the_summaries_give_volume_rate_and_the_sender_s_figures() {
        assert_eq!(
            volume(1_000_000, 1, Duration::from_secs(1)),
            "1000000 bytes in 1 message, 1.000 s, 8.0 Mbit/s"
        );
        assert_eq!(
            volume(0, 0, Duration::ZERO),
            "0 bytes in 0 messages, 0.000 s, 0.0 Mbit/s"
        );
        let mut s = ChannelStats::default();
        s.endpoint.smart_resends = 2;
        s.endpoint.timeout_resends = 1;
        assert_eq!(
            send_figures(&s),
            "3 resent (2 SMART, 1 after a timeout), 0 SMART losses, 0 window cuts (0 by a fifth), 0 loss probes, 0 timeouts"
        );
        s.endpoint.srtt = Some(natm_core::Duration::from_micros(410));
        s.endpoint.cwnd = 24;
        assert!(send_figures(&s).ends_with(", rtt 0.410 ms, window 24 (threshold 0)"));
    }

    #[test]
    fn the_vc_is_a_pvc_a_call_or_a_listen_and_exactly_one() {
        let args = |vc: Option<&str>| ChannelArgs {
            host: "h1".into(),
            vc: vc.map(Into::into),
            return_vc: None,
            service: "reliable".into(),
            qos: None,
            path: "auto".into(),
            tpdu_size: 8192,
            timeout: 1.0,
            calibration: Some("none".into()),
            dir: DirArgs { dir: None },
        };
        const ADDR: &str = "47.0005.80ffe1000000f21a3599.0020481a3599.00";
        let target = |vc, to, listen| plan(&args(vc), to, listen).map(|p| p.target);
        assert_eq!(
            target(Some("0.100"), None, None).unwrap(),
            Target::Pvc("0.100".parse().unwrap())
        );
        assert_eq!(
            target(None, Some(ADDR), None).unwrap(),
            Target::Call(ADDR.parse().unwrap())
        );
        assert_eq!(
            target(None, None, Some(Some(9))).unwrap(),
            Target::Listen(Some(9))
        );
        for (vc, to, listen) in [
            (None, None, None),
            (Some("0.100"), Some(ADDR), None),
            (Some("0.100"), None, Some(None)),
        ] {
            let e = target(vc, to, listen).expect_err("refused");
            assert_eq!(e.code, 2);
            assert!(e.message.starts_with("give "), "{}", e.message);
        }
        let e = target(None, Some("47.x"), None).expect_err("a bad address");
        assert_eq!(e.code, 2);
    }

    #[test]
    fn bad_options_are_exit_2_naming_them() {
        let args = |vc: &str, service: &str, tpdu: usize| ChannelArgs {
            host: "h1".into(),
            vc: Some(vc.into()),
            return_vc: None,
            service: service.into(),
            qos: None,
            path: "auto".into(),
            tpdu_size: tpdu,
            timeout: 1.0,
            calibration: Some("none".into()),
            dir: DirArgs { dir: None },
        };
        assert!(plan(&args("0.100", "reliable", 8192), None, None).is_ok());
        // A guaranteed channel's VC gets a quarter more than its rate (Service::vc_pcr).
        let p = plan(&args("0.100", "guaranteed:500", 8192), None, None).unwrap();
        assert_eq!(
            p.qos.to_string(),
            parse_qos("cbr:pcr=625", "").unwrap().to_string()
        );
        for (a, what) in [
            (args("0.1x", "reliable", 8192), "--vc"),
            (args("0.100", "fast", 8192), "--service"),
            (args("0.100", "reliable", 0), "--tpdu-size"),
            (args("0.100", "reliable", 70_000), "--tpdu-size"),
            (
                ChannelArgs {
                    calibration: Some("/nonexistent/natm-calibration.toml".into()),
                    ..args("0.100", "guaranteed:500", 8192)
                },
                "--calibration",
            ),
        ] {
            let e = plan(&a, None, None).err().expect(what);
            assert_eq!(e.code, 2, "{what}");
            assert!(e.message.starts_with(what), "{}", e.message);
        }
    }

    #[test]
    fn the_host_budget_comes_from_the_calibration_or_not_at_all() {
        let mut cal = Calibration::builtin();
        cal.transport = None;
        let b = budget_of(&cal);
        assert_eq!(b.send.fixed_ns, cal.costs.send_fixed.as_nanos());
        assert_eq!(b.recv.per_byte_ps, cal.costs.recv_per_byte_ps);
        assert_eq!(b.share_permille, HostBudget::DEFAULT_SHARE_PERMILLE);
        // The transport's own costs are added to the data path's.
        cal.transport = Some(natm_sim::calib::TransportCosts {
            send_fixed_ns: 100,
            send_per_byte_ps: 7,
            recv_fixed_ns: 200,
            recv_per_byte_ps: 9,
        });
        let t = budget_of(&cal);
        assert_eq!(t.send.fixed_ns, b.send.fixed_ns + 100);
        assert_eq!(t.recv.per_byte_ps, b.recv.per_byte_ps + 9);

        let dir = std::env::temp_dir().join(format!("natm-transfer-cal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.toml");
        std::fs::write(&good, cal.to_toml()).unwrap();
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "format = 3").unwrap();
        let missing = dir.join("missing.toml");
        let path = |p: &PathBuf| p.to_str().unwrap().to_string();
        assert_eq!(host_budget(Some(&path(&good)), None).unwrap(), Some(t));
        assert_eq!(host_budget(Some("none"), Some(good.clone())).unwrap(), None);
        assert_eq!(host_budget(None, Some(good.clone())).unwrap(), Some(t));
        assert_eq!(
            host_budget(None, Some(missing.clone())).unwrap(),
            None,
            "no file"
        );
        assert_eq!(host_budget(None, None).unwrap(), None);
        let e = host_budget(Some(&path(&bad)), None).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(e.message.starts_with("--calibration "), "{}", e.message);
        let e = host_budget(None, Some(bad.clone())).unwrap_err();
        assert_eq!(e.code, 1);
        assert!(e.message.contains("--calibration none"), "{}", e.message);
        let e = host_budget(Some(&path(&missing)), None).unwrap_err();
        assert_eq!(e.code, 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

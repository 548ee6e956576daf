//! `natm listen [--host H] [--selector S] [--count N] [--echo] [--json]`: accepts calls to
//! a host's address and prints what arrives, like linux-atm's `atmtcp … print`.
//!
//! The first line names the address calls are taken on (`listening on ADDR`). Then one
//! line per call accepted, `call from CALLING on VC V, QoS Q, set-up T ms` (`unknown` when
//! the SETUP named no calling party), one per SDU received, `V LENGTH "BYTES"` (the bytes
//! as text, escaped where not printable, at most 256 shown), and one per call ended,
//! `V released: cause 16 (normal call clearing) at U`. `--json` prints one object per line
//! instead (`event`: `listening`, `call`, `sdu`, `released`). `--echo` sends each SDU back
//! on its VC. Calls are served together, as they come; with `--count N` the command ends
//! when N calls have been accepted and have ended.
//!
//! Exit status: 0 after `--count` calls; 1 when the host refuses the listener (its address
//! or selector taken, no signalling) or its daemon goes; 2 on bad input.

use std::time::Duration;

use clap::Args;
use natm::{CallInfo, CauseInfo, ChannelOptions, Error, Vc};
use serde_json::{Value, json};

use super::call::{one_line, parse_path};
use super::lab::DirArgs;
use super::ping::connect_host;
use crate::{CliError, CmdResult};

/// Options of `natm listen`.
#[derive(Args, Debug)]
pub struct ListenArgs {
    /// The host whose address calls are taken on.
    #[arg(long, default_value = "h1")]
    pub host: String,
    /// Take only calls to this selector (the address's last byte, 0 to 255); default: any
    /// selector no other listener took.
    #[arg(long)]
    pub selector: Option<u8>,
    /// End after this many calls have been accepted and have ended.
    #[arg(long)]
    pub count: Option<u64>,
    /// Send every SDU received back on its VC.
    #[arg(long)]
    pub echo: bool,
    /// The accepted VCs' data path: auto, direct, daemon or lane.
    #[arg(long, default_value = "auto")]
    pub path: String,
    /// Print JSON, one object per line.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub dir: DirArgs,
}

/// At most this many bytes of an SDU are shown.
pub const SHOWN: usize = 256;

/// An SDU's bytes as text: printable ASCII as is, the rest escaped (`\n`, `\x01`), at most
/// [`SHOWN`] bytes, then `…`.
pub fn shown(bytes: &[u8]) -> String {
    let mut s = bytes[..bytes.len().min(SHOWN)].escape_ascii().to_string();
    if bytes.len() > SHOWN {
        s.push('…');
    }
    s
}

/// One event of `natm listen`, as a line of text and as JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<'a> {
    /// The listener is registered.
    Listening(&'a natm::Aesa),
    /// A call was accepted.
    Call(&'a CallInfo),
    /// An SDU arrived on `vc`.
    Sdu {
        /// The VC.
        vc: &'a natm::VcId,
        /// Its bytes.
        bytes: &'a [u8],
    },
    /// The call of `vc` ended.
    Released {
        /// The VC.
        vc: &'a natm::VcId,
        /// Why.
        cause: &'a CauseInfo,
    },
}

impl Event<'_> {
    /// The text line.
    pub fn line(&self) -> String {
        one_line(&match self {
            Event::Listening(a) => format!("listening on {a}"),
            Event::Call(c) => format!(
                "call from {} on VC {}, QoS {}, set-up {:.3} ms",
                c.remote
                    .map_or_else(|| "unknown".to_string(), |a| a.to_string()),
                c.vc,
                c.qos,
                c.setup_ns as f64 / 1e6
            ),
            Event::Sdu { vc, bytes } => format!("{vc} {} \"{}\"", bytes.len(), shown(bytes)),
            Event::Released { vc, cause } => format!("{vc} released: {cause}"),
        })
    }

    /// The JSON object.
    pub fn json(&self) -> Value {
        match self {
            Event::Listening(a) => json!({"event": "listening", "address": a.to_string()}),
            Event::Call(c) => json!({
                "event": "call",
                "calling": c.remote.map(|a| a.to_string()),
                "called": c.local.to_string(),
                "vc": c.vc.to_string(),
                "qos": c.qos.to_string(),
                "setup_ns": c.setup_ns,
            }),
            Event::Sdu { vc, bytes } => json!({
                "event": "sdu", "vc": vc.to_string(), "length": bytes.len(), "text": shown(bytes),
            }),
            Event::Released { vc, cause } => json!({
                "event": "released", "vc": vc.to_string(), "cause": cause,
            }),
        }
    }
}

/// How long one look for a new call waits when no VC had anything.
const IDLE: Duration = Duration::from_millis(5);

/// Runs `natm listen`.
pub fn run(args: ListenArgs) -> CmdResult {
    match listen(&args) {
        Ok(()) | Err(Stop::ReaderGone) => Ok(()),
        Err(Stop::Failed(e)) => Err(e),
    }
}

/// Why `natm listen` stopped before its `--count`.
enum Stop {
    /// Standard output's reader went away (`natm listen | head`): nothing to say.
    ReaderGone,
    /// A failure the command reports.
    Failed(CliError),
}

impl From<CliError> for Stop {
    fn from(e: CliError) -> Stop {
        Stop::Failed(e)
    }
}

fn listen(args: &ListenArgs) -> Result<(), Stop> {
    let path = parse_path(&args.path)?;
    if args.count == Some(0) {
        return Err(CliError::usage("--count 0: take at least one call").into());
    }
    // A reader that went away (`natm listen | head`) ends the command quietly.
    let print = |e: Event<'_>| -> Result<(), Stop> {
        use std::io::Write as _;
        let text = if args.json {
            e.json().to_string()
        } else {
            e.line()
        };
        let mut out = std::io::stdout().lock();
        match writeln!(out, "{text}").and_then(|()| out.flush()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Stop::ReaderGone),
            Err(e) => Err(CliError::failure(format!("stdout: {e}")).into()),
            Ok(()) => Ok(()),
        }
    };
    let host = connect_host(&args.dir, &args.host)?;
    let listener = host
        .listen(args.selector)
        .map_err(|e| CliError::failure(format!("listening on host {}: {e}", args.host)))?;
    print(Event::Listening(listener.address()))?;
    let opts = ChannelOptions::default().path(path);
    let mut calls: Vec<(Vc, CallInfo)> = Vec::new();
    let mut accepted = 0u64;
    let mut ended = 0u64;
    let mut buf = vec![0u8; 65536];
    let gone = |e: Error| CliError::failure(format!("host {}: {e}", args.host));
    loop {
        if args.count.is_some_and(|n| ended >= n) {
            return Ok(());
        }
        let mut busy = false;
        let mut i = 0;
        while i < calls.len() {
            let (vc, info) = &mut calls[i];
            match vc.try_recv(&mut buf) {
                Ok(n) => {
                    busy = true;
                    print(Event::Sdu {
                        vc: &info.vc,
                        bytes: &buf[..n],
                    })?;
                    // A call released meanwhile is told by its own line next round.
                    if args.echo
                        && let Err(e) = vc.send(&buf[..n])
                        && !matches!(e, Error::Released(_))
                    {
                        eprintln!("natm: echo on {}: {e}", info.vc);
                    }
                    i += 1;
                }
                Err(Error::WouldBlock) => i += 1,
                Err(e) => {
                    let cause = match e {
                        Error::Released(c) => c,
                        other => CauseInfo {
                            value: 31,
                            name: "normal, unspecified".into(),
                            location: "U".into(),
                            diagnostic: other.to_string(),
                        },
                    };
                    print(Event::Released {
                        vc: &info.vc,
                        cause: &cause,
                    })?;
                    calls.swap_remove(i);
                    ended += 1;
                }
            }
        }
        if args.count.is_some_and(|n| accepted >= n) {
            if !busy && !calls.is_empty() {
                std::thread::sleep(IDLE);
            }
            continue;
        }
        let wait = if busy { Duration::ZERO } else { IDLE };
        let call = match listener.next_call(Some(wait)) {
            Ok(c) => c,
            Err(Error::Timeout) => continue,
            Err(e) => return Err(gone(e).into()),
        };
        match listener.accept_call(call, &opts) {
            Ok(vc) => {
                let Some(info) = vc.call().cloned() else {
                    return Err(
                        CliError::failure("hostd accepted a call without saying which VC").into(),
                    );
                };
                print(Event::Call(&info))?;
                calls.push((vc, info));
                accepted += 1;
            }
            // The caller gave up meanwhile: not this command's failure.
            Err(Error::CallFailed(c)) => eprintln!("natm: an incoming call failed: {c}"),
            Err(e) => return Err(gone(e).into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sdus_show_as_text_escaped_where_not_printable_and_cut() {
        assert_eq!(shown(b"hello, ATM"), "hello, ATM");
        assert_eq!(shown(b"a\nb\x01\"c"), "a\\nb\\x01\\\"c");
        let long = vec![b'x'; SHOWN + 10];
        let s = shown(&long);
        assert!(s.ends_with('…') && s.len() == SHOWN + '…'.len_utf8());
    }

    #[test]
    fn each_event_is_one_line_and_one_json_object() {
        let a: natm::Aesa = "47.0005.80ffe1000000f21a3599.0020481a3599.00"
            .parse()
            .unwrap();
        let info = CallInfo {
            vc: "0.32768".parse().unwrap(),
            local: a,
            remote: None,
            qos: "ubr".parse().unwrap(),
            setup_ns: 2_000_000,
        };
        assert_eq!(
            Event::Call(&info).line(),
            format!(
                "call from unknown on VC 0.32768, QoS {}, set-up 2.000 ms",
                info.qos
            )
        );
        let j = Event::Call(&info).json();
        assert_eq!(
            (j["event"].as_str(), j["vc"].as_str()),
            (Some("call"), Some("0.32768"))
        );
        assert!(j["calling"].is_null());
        let sdu = Event::Sdu {
            vc: &info.vc,
            bytes: b"hi\n",
        };
        assert_eq!(sdu.line(), "0.32768 3 \"hi\\n\"");
        assert_eq!(sdu.json()["length"], 3);
        assert_eq!(sdu.json()["text"], "hi\\n");
        let cause = CauseInfo {
            value: 16,
            name: "normal call clearing".into(),
            location: "U".into(),
            diagnostic: String::new(),
        };
        let r = Event::Released {
            vc: &info.vc,
            cause: &cause,
        };
        assert_eq!(
            r.line(),
            "0.32768 released: cause 16 (normal call clearing) at U"
        );
        assert_eq!(r.json()["cause"]["value"], 16);
        assert!(
            Event::Listening(&a)
                .line()
                .starts_with("listening on 47.0005")
        );
    }
}

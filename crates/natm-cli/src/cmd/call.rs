//! `natm call [--host H] ADDR [--qos Q] (--text STR | --input FILE) [--json]`: sets up a
//! switched VC to an ATM address, sends, prints the VC and the set-up time, releases.
//!
//! The call goes through host H's daemon (natm's [`natm::Host::call`]): hostd signals it
//! and the network admits it hop by hop. `--text` is sent as one SDU; `--input` FILE's bytes
//! (`-`: standard input) as SDUs of at most the VC's largest SDU, read as they are sent
//! (what a pipe hands over in one read goes at once: it streams over the call). Then the call is released (normal clearing) and
//! one line says what happened: `call to ADDR: VC 0.32768, set-up 1.234 ms, QoS Q, sent N
//! SDUs (B bytes)`; `--json` prints one object instead (`called`, `vc`, `setup_ns`, `qos`,
//! `sdus`, `bytes`).
//!
//! Exit status: 0 when the call was set up and the data sent; 1 when it was refused, with
//! one line on stderr naming the cause's number, its name, where it arose and the
//! network's explanation (`natm: call to ADDR refused: cause 37 (user cell rate not
//! available) at LPN: s2 p3: 1000 c/s free`), or when anything else failed; 2 on bad input
//! (an ADDR that is not an ATM address, a bad QoS, no data).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use natm::{Aesa, CallInfo, CallOptions, DataPath, Qos};
use serde_json::{Value, json};

use super::lab::DirArgs;
use super::ping::connect_host;
use crate::{CliError, CmdResult};

/// Options of `natm call`.
#[derive(Args, Debug)]
#[command(group = clap::ArgGroup::new("data").required(true).args(["text", "input"]))]
pub struct CallArgs {
    /// The called party's ATM address (AESA, `atm2text` form, e.g.
    /// 47.0005.80ffe1000000f21a3599.0020481a3599.00).
    pub addr: String,
    /// The host to call from.
    #[arg(long, default_value = "h1")]
    pub host: String,
    /// The call's QoS in qos(7) form (`tx` is this end's sending direction).
    #[arg(long, default_value = "ubr")]
    pub qos: String,
    /// Send this text as one SDU.
    #[arg(long)]
    pub text: Option<String>,
    /// Send this file's bytes (`-`: standard input), as SDUs of at most the VC's largest
    /// SDU.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// The data path: auto, direct, daemon or lane.
    #[arg(long, default_value = "auto")]
    pub path: String,
    /// Seconds to wait for the network's answer.
    #[arg(long, default_value_t = 4.0)]
    pub timeout: f64,
    /// Seconds to keep the call after the data is sent, before releasing it (default 0:
    /// the switch forwards a RELEASE only once the cells queued ahead of it have left).
    #[arg(long, default_value_t = 0.0)]
    pub linger: f64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub dir: DirArgs,
}

/// Parses an ATM address given on the command line (exit 2 naming it when it is not one).
pub fn parse_aesa(text: &str) -> Result<Aesa, CliError> {
    text.trim()
        .parse()
        .map_err(|e| CliError::usage(format!("{text:?} is not an ATM address: {e}")))
}

/// Parses a QoS option (exit 2 naming it).
pub fn parse_qos(text: &str, what: &str) -> Result<Qos, CliError> {
    text.parse()
        .map_err(|e| CliError::usage(format!("{what} {text:?}: {e}")))
}

/// Parses a data path option (exit 2 naming it).
pub fn parse_path(text: &str) -> Result<DataPath, CliError> {
    [DataPath::Auto]
        .into_iter()
        .chain(DataPath::ALL)
        .find(|p| p.name() == text)
        .ok_or_else(|| {
            CliError::usage(format!(
                "--path {text:?}: expected auto, direct, daemon or lane"
            ))
        })
}

/// Text as one line: control characters (a foreign peer's diagnostic) escaped.
pub fn one_line(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// A failed call as the one line `natm` prints: a refusal names the cause's number, name,
/// location and diagnostic (exit 1); anything else says what failed (exit 1).
pub fn call_error(called: &Aesa, e: natm::Error) -> CliError {
    match e {
        natm::Error::CallFailed(cause) => {
            CliError::failure(one_line(&format!("call to {called} refused: {cause}")))
        }
        e => CliError::failure(one_line(&format!("call to {called}: {e}"))),
    }
}

/// The SDUs `data` is sent as: pieces of at most `max_sdu` bytes.
pub fn sdus(data: &[u8], max_sdu: usize) -> impl Iterator<Item = &[u8]> {
    data.chunks(max_sdu.max(1))
}

/// The largest AAL5 SDU, and so the largest block read at once.
const MAX_SDU: usize = 65_535;

/// One read into `buf` (what the input has now, as a pipe hands it over); 0 at its end.
fn read_some(input: &mut dyn std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match input.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}

/// What `natm call` reports.
#[derive(Debug, Clone, PartialEq)]
pub struct CallReport {
    /// The called party.
    pub called: Aesa,
    /// The call, as hostd answered it.
    pub call: CallInfo,
    /// SDUs sent.
    pub sdus: u64,
    /// Bytes sent.
    pub bytes: u64,
}

impl CallReport {
    /// The text line.
    pub fn line(&self) -> String {
        format!(
            "call to {}: VC {}, set-up {:.3} ms, QoS {}, sent {} SDU{} ({} bytes), released",
            self.called,
            self.call.vc,
            self.call.setup_ns as f64 / 1e6,
            self.call.qos,
            self.sdus,
            if self.sdus == 1 { "" } else { "s" },
            self.bytes
        )
    }

    /// The JSON object.
    pub fn json(&self) -> Value {
        json!({
            "called": self.called.to_string(),
            "vc": self.call.vc.to_string(),
            "local": self.call.local.to_string(),
            "setup_ns": self.call.setup_ns,
            "qos": self.call.qos.to_string(),
            "sdus": self.sdus,
            "bytes": self.bytes,
        })
    }
}

/// Runs `natm call`.
pub fn run(args: CallArgs) -> CmdResult {
    let called = parse_aesa(&args.addr)?;
    let qos = parse_qos(&args.qos, "--qos")?;
    let path = parse_path(&args.path)?;
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 600.0) {
        return Err(CliError::usage(format!(
            "--timeout {}: must be above 0 and at most 600 seconds",
            args.timeout
        )));
    }
    if !(args.linger.is_finite() && (0.0..=600.0).contains(&args.linger)) {
        return Err(CliError::usage(format!(
            "--linger {}: must be 0 to 600 seconds",
            args.linger
        )));
    }
    // The input is read as it is sent, each read an SDU or more (standard input may be a
    // pipe that only ends when the call does); its first read before calling, so an empty
    // input calls nobody.
    let (name, mut input): (String, Box<dyn std::io::Read>) = match (&args.text, &args.input) {
        (Some(t), _) => (
            "--text".into(),
            Box::new(std::io::Cursor::new(t.clone().into_bytes())),
        ),
        (None, Some(f)) if f.as_os_str() == "-" => ("--input -".into(), Box::new(std::io::stdin())),
        (None, Some(f)) => (
            format!("--input {}", f.display()),
            Box::new(
                std::fs::File::open(f)
                    .map_err(|e| CliError::usage(format!("--input {}: {e}", f.display())))?,
            ),
        ),
        (None, None) => return Err(CliError::usage("give --text or --input")),
    };
    let mut read = |buf: &mut [u8]| {
        read_some(&mut input, buf).map_err(|e| CliError::failure(format!("{name}: reading: {e}")))
    };
    let mut data = vec![0u8; MAX_SDU];
    let mut len = read(&mut data)?;
    if len == 0 {
        return Err(CliError::usage(
            "nothing to send: an AAL5 SDU has at least 1 byte",
        ));
    }
    let host = connect_host(&args.dir, &args.host)?;
    let opts = CallOptions::new()
        .qos(qos)
        .path(path)
        .timeout(Duration::from_secs_f64(args.timeout));
    let mut vc = host
        .call(&called, opts)
        .map_err(|e| call_error(&called, e))?;
    let call = vc
        .call()
        .cloned()
        .ok_or_else(|| CliError::failure("hostd opened the call without saying which VC"))?;
    let mut report = CallReport {
        called,
        call,
        sdus: 0,
        bytes: 0,
    };
    // What each read gave, in SDUs of at most the VC's largest: the first read already
    // made, then as the input comes.
    let max = vc.max_sdu().clamp(1, MAX_SDU);
    while len > 0 {
        for sdu in sdus(&data[..len], max) {
            vc.send(sdu).map_err(|e| call_error(&called, e))?;
            report.sdus += 1;
            report.bytes += sdu.len() as u64;
        }
        len = read(&mut data[..max])?;
    }
    // What is queued leaves before the release (on the lane path only this process moves
    // it; on the daemon path hostd does). The far end may release as soon as it has the
    // data (`natm listen --count 1`): the call is over then, not failed.
    match vc.flush(Duration::from_secs(5)) {
        Ok(()) | Err(natm::Error::Released(_) | natm::Error::Revoked) => {}
        Err(e) => return Err(call_error(&called, e)),
    }
    std::thread::sleep(Duration::from_secs_f64(args.linger));
    drop(vc);
    if args.json {
        println!("{}", report.json());
    } else {
        println!("{}", report.line());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: CallArgs,
    }

    fn parse(args: &[&str]) -> Result<CallArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("call").chain(args.iter().copied())).map(|c| c.args)
    }

    const ADDR: &str = "47.0005.80ffe1000000f21a3599.0020481a3599.00";

    #[test]
    fn the_data_is_text_or_a_file_and_one_of_them_is_needed() {
        let a = parse(&[ADDR, "--text", "hi", "--qos", "cbr:pcr=1000"]).unwrap();
        assert_eq!((a.text.as_deref(), a.host.as_str()), (Some("hi"), "h1"));
        assert!(parse(&[ADDR, "--input", "/f", "--host", "h3", "--json"]).is_ok());
        assert!(parse(&[ADDR]).is_err(), "no data");
        assert!(
            parse(&[ADDR, "--text", "a", "--input", "/f"]).is_err(),
            "both"
        );
        assert!(parse(&["--text", "a"]).is_err(), "no address");
    }

    #[test]
    fn a_bad_address_is_exit_2_naming_it() {
        let e = parse_aesa("47.00x5").unwrap_err();
        assert_eq!(e.code, 2);
        assert!(
            e.message.starts_with("\"47.00x5\" is not an ATM address"),
            "{}",
            e.message
        );
        assert_eq!(parse_aesa(ADDR).unwrap().to_string().to_lowercase(), ADDR);
        assert_eq!(parse_qos("fast", "--qos").unwrap_err().code, 2);
        assert_eq!(parse_path("fast").unwrap_err().code, 2);
        assert_eq!(parse_path("daemon").unwrap(), DataPath::Daemon);
    }

    #[test]
    fn a_refusal_is_one_line_with_the_cause_number_name_and_diagnostic() {
        let called = parse_aesa(ADDR).unwrap();
        let cause = natm::CauseInfo {
            value: 37,
            name: "user cell rate not available".into(),
            location: "LPN".into(),
            diagnostic: "s2 p3: 1000 c/s free\nsecond line".into(),
        };
        let e = call_error(&called, natm::Error::CallFailed(cause));
        assert_eq!(e.code, 1);
        assert_eq!(
            e.message,
            format!(
                "call to {called} refused: cause 37 (user cell rate not available) at LPN: \
                 s2 p3: 1000 c/s free\\nsecond line"
            )
        );
        assert!(!e.message.contains('\n'));
        let e = call_error(&called, natm::Error::LinkDown);
        assert_eq!((e.code, e.message.contains("link is down")), (1, true));
    }

    #[test]
    fn data_goes_in_sdus_of_at_most_the_vc_s_largest() {
        let data = vec![7u8; 10];
        let lens: Vec<usize> = sdus(&data, 4).map(<[u8]>::len).collect();
        assert_eq!(lens, [4, 4, 2]);
    }

    #[test]
    fn the_report_line_and_json_name_the_vc_and_set_up_time() {
        let called = parse_aesa(ADDR).unwrap();
        let r = CallReport {
            called,
            call: CallInfo {
                vc: "0.32768".parse().unwrap(),
                local: called,
                remote: Some(called),
                qos: "cbr:pcr=1000".parse().unwrap(),
                setup_ns: 1_234_567,
            },
            sdus: 1,
            bytes: 5,
        };
        assert_eq!(
            r.line(),
            format!(
                "call to {called}: VC 0.32768, set-up 1.235 ms, QoS {}, sent 1 SDU (5 bytes), released",
                r.call.qos
            )
        );
        let j = r.json();
        for key in ["called", "vc", "local", "setup_ns", "qos", "sdus", "bytes"] {
            assert!(j.get(key).is_some(), "{key} in {j}");
        }
        assert_eq!(j["vc"], "0.32768");
        assert_eq!(j["setup_ns"], 1_234_567);
    }
}

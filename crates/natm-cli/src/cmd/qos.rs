//! `natm qos parse`: read QoS text as libatm's `text2qos` does and print it canonically.

use std::io::{self, BufRead, Write};

use clap::{Args, Subcommand};
use natm_core::qos::{Pcr, Qos, TrafficClass, TrafficParams};
use serde_json::{Value, json};

use crate::{CliError, CmdResult};

/// `natm qos …`
#[derive(Args)]
pub struct QosArgs {
    #[command(subcommand)]
    cmd: QosCmd,
}

#[derive(Subcommand)]
enum QosCmd {
    /// Parse QoS text (qos(7), e.g. "cbr:max_pcr=10Mbps,sdu=8192") and print qos2text's form.
    Parse {
        /// The QoS text.
        #[arg(allow_hyphen_values = true, required_unless_present = "batch")]
        text: Option<String>,
        /// Print the parsed fields as one JSON object.
        #[arg(long)]
        json: bool,
        /// Read one JSON string per line from stdin, print one JSON result per line
        /// (used by the libatm oracle check).
        #[arg(long, hide = true)]
        batch: bool,
    },
    /// Check a traffic contract on a link: is it well formed, and which GCRAs police it.
    Check(super::qos_check::CheckArgs),
}

/// Runs `natm qos`.
pub fn run(args: QosArgs) -> CmdResult {
    match args.cmd {
        QosCmd::Check(args) => super::qos_check::run(args),
        QosCmd::Parse { batch: true, .. } => batch(|text| {
            text.parse::<Qos>()
                .map(|q| (q.to_string(), qos_json(&q)))
                .map_err(|e| e.to_string())
        }),
        QosCmd::Parse { text, json, .. } => {
            let text = text.unwrap_or_default();
            let q: Qos = text
                .parse()
                .map_err(|e| CliError::usage(format!("QoS {text:?}: {e}")))?;
            let out = if json {
                qos_json(&q).to_string()
            } else {
                q.to_string()
            };
            print_line(&out)
        }
    }
}

/// A rate as JSON: its number, or "max" for the link rate.
fn rate(r: Pcr) -> Value {
    match r {
        Pcr::Max => json!("max"),
        Pcr::Cps(n) => json!(n),
    }
}

/// One direction, with libatm's `atm_trafprm` field names.
fn direction(t: &TrafficParams) -> Value {
    let mut v = json!({
        "traffic_class": t.class.name(),
        "max_pcr": rate(t.max_pcr),
        "pcr": rate(t.pcr),
        "min_pcr": t.min_pcr,
        "max_cdv": t.max_cdv,
        "max_sdu": t.max_sdu,
    });
    if t.class == TrafficClass::Vbr || t.scr != 0 || t.mbs != 0 || t.cdvt != 0 {
        v["scr"] = json!(t.scr);
        v["mbs"] = json!(t.mbs);
        v["cdvt"] = json!(t.cdvt);
    }
    v
}

/// `{"aal": …, "txtp": {…}, "rxtp": {…}}`.
pub fn qos_json(q: &Qos) -> Value {
    json!({ "aal": q.aal.name(), "txtp": direction(&q.tx), "rxtp": direction(&q.rx) })
}

/// Prints one line to stdout; a closed pipe is not an error worth a message.
pub(super) fn print_line(s: &str) -> CmdResult {
    let mut out = io::stdout().lock();
    writeln!(out, "{s}").map_err(|e| CliError::failure(format!("stdout: {e}")))
}

/// The hidden `--batch` mode of the `parse` commands: each stdin line is a JSON string;
/// each output line is `{"ok":true,"text":…,"value":…}` or `{"ok":false,"error":…}`.
pub(super) fn batch(parse: impl Fn(&str) -> Result<(String, Value), String>) -> CmdResult {
    let stdin = io::stdin().lock();
    let mut out = io::BufWriter::new(io::stdout().lock());
    for (n, line) in stdin.lines().enumerate() {
        let line = line.map_err(|e| CliError::failure(format!("stdin: {e}")))?;
        let text: String = serde_json::from_str(&line)
            .map_err(|e| CliError::usage(format!("line {}: not a JSON string: {e}", n + 1)))?;
        let result = match parse(&text) {
            Ok((text, value)) => json!({ "ok": true, "text": text, "value": value }),
            Err(error) => json!({ "ok": false, "error": error }),
        };
        writeln!(out, "{result}").map_err(|e| CliError::failure(format!("stdout: {e}")))?;
    }
    out.flush()
        .map_err(|e| CliError::failure(format!("stdout: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape() {
        let q: Qos = "ubr,aal5:pcr=max,sdu=1500,rx:none".parse().unwrap();
        let v = qos_json(&q);
        assert_eq!(v["aal"], "aal5");
        assert_eq!(v["txtp"]["traffic_class"], "ubr");
        assert_eq!(v["txtp"]["pcr"], "max");
        assert_eq!(v["rxtp"]["traffic_class"], "none");
        assert_eq!(v["rxtp"]["max_sdu"], 1500);
        assert!(v["txtp"].get("scr").is_none());
        let vbr = qos_json(&"vbr:scr=5".parse().unwrap());
        assert_eq!(vbr["txtp"]["scr"], 5);
    }
}

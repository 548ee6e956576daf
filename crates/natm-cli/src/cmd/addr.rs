//! `natm addr parse`: read an ATM address as libatm's `text2atm` does and print it as
//! `atm2text` does.

use clap::{Args, Subcommand};
use natm_core::addr::{AddrSyntax, AtmAddr, Sel};
use serde_json::{Value, json};

use crate::{CliError, CmdResult};

/// `natm addr …`
#[derive(Args)]
pub struct AddrArgs {
    #[command(subcommand)]
    cmd: AddrCmd,
}

#[derive(Subcommand)]
enum AddrCmd {
    /// Parse a PVC ([itf.]vpi.vci) or SVC (AESA, E.164) address and print it canonically.
    Parse {
        /// The address text.
        #[arg(allow_hyphen_values = true, required_unless_present = "batch")]
        text: Option<String>,
        /// Print the parsed fields as one JSON object.
        #[arg(long)]
        json: bool,
        /// Allow NNI VPIs (up to 4095), like libatm's T2A_NNI.
        #[arg(long)]
        nni: bool,
        /// Refuse "?", "*" and "/bits" (libatm without T2A_UNSPEC and T2A_WILDCARD).
        #[arg(long)]
        exact: bool,
        /// Read one JSON string per line from stdin, print one JSON result per line
        /// (used by the libatm oracle check).
        #[arg(long, hide = true)]
        batch: bool,
    },
}

/// Runs `natm addr`.
pub fn run(args: AddrArgs) -> CmdResult {
    let AddrCmd::Parse {
        text,
        json,
        nni,
        exact,
        batch,
    } = args.cmd;
    let base = if exact {
        AddrSyntax::EXACT
    } else {
        AddrSyntax::DEFAULT
    };
    let syntax = AddrSyntax { nni, ..base };
    if batch {
        return super::qos::batch(|text| {
            AtmAddr::parse_with(text, syntax)
                .map(|a| (a.to_string(), addr_json(&a)))
                .map_err(|e| e.to_string())
        });
    }
    let text = text.unwrap_or_default();
    let a = AtmAddr::parse_with(&text, syntax)
        .map_err(|e| CliError::usage(format!("address {text:?}: {e}")))?;
    let out = if json {
        addr_json(&a).to_string()
    } else {
        a.to_string()
    };
    super::qos::print_line(&out)
}

/// A PVC part as JSON: the number, "*" (any) or "?" (unspecified).
fn sel<T: Into<u32> + Copy>(s: Sel<T>) -> Value {
    match s {
        Sel::Is(v) => json!(v.into()),
        Sel::Any => json!("*"),
        Sel::Unspecified => json!("?"),
    }
}

/// `{"kind":"pvc","itf":…,"vpi":…,"vci":…}` or
/// `{"kind":"svc","prv":"<hex>","pub":"<digits>","prefix_len":…}`.
pub fn addr_json(a: &AtmAddr) -> Value {
    match a {
        AtmAddr::Pvc(p) => json!({
            "kind": "pvc",
            "itf": sel(p.itf.map(|i| i.get())),
            "vpi": sel(p.vpi.map(|v| v.get())),
            "vci": sel(p.vci.map(|v| v.get())),
        }),
        AtmAddr::Svc(s) => json!({
            "kind": "svc",
            "prv": s.prv.map(|p| p.to_hex()).unwrap_or_default(),
            "pub": s.pub_.map(|e| e.as_str().to_owned()).unwrap_or_default(),
            "prefix_len": s.prefix_len,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape() {
        let pvc = addr_json(&"1.*.?".parse().unwrap());
        assert_eq!(
            pvc,
            json!({"kind": "pvc", "itf": 1, "vpi": "*", "vci": "?"})
        );
        let svc = addr_json(&"+1234".parse().unwrap());
        assert_eq!(
            svc,
            json!({"kind": "svc", "prv": "", "pub": "1234", "prefix_len": null})
        );
    }
}

//! `natm qos check QOS --link RATE`: is this traffic contract well formed on this link, and
//! which GCRAs police it (natm-traffic's [`Policer`])?
//!
//! Exit 0 when every direction is well formed, 1 when one is not (the reason is printed and
//! repeated on stderr), 2 when the text or the options cannot be read.

use clap::Args;
use natm_core::LineRate;
use natm_core::qos::{Qos, TrafficClass, TrafficParams};
use natm_traffic::gcra::GcraParams;
use natm_traffic::policer::{Conformance, Policer};
use serde_json::{Value, json};

use super::qos::print_line;
use crate::{CliError, CmdResult};

/// `natm qos check …`
#[derive(Args)]
pub struct CheckArgs {
    /// The QoS text (qos(7), with natm's vbr extension), e.g. "vbr:pcr=1000,scr=250,mbs=10".
    #[arg(allow_hyphen_values = true)]
    text: String,
    /// The link's cell rate: cells/s, or oc3 (353207), oc12 (1412830), ds3 (96000),
    /// 25m (59111), as linux-atm's ATM_*_PCR.
    #[arg(long, value_parser = parse_link)]
    link: u32,
    /// The conformance definition (CBR.1, VBR.1, VBR.2, VBR.3, UBR.1, UBR.2); by default
    /// the class's first (CBR.1, VBR.1, UBR.1).
    #[arg(long)]
    conformance: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// A link rate: a number of cells/s or one of linux-atm's named rates.
pub(super) fn parse_link(s: &str) -> Result<u32, String> {
    match s.parse::<LineRate>() {
        Ok(rate) => rate
            .cells_per_s()
            .ok_or_else(|| format!("{s:?}: admission needs a link with a cell rate")),
        Err(_) if s.parse::<u32>() == Ok(0) => Err("a link of 0 cells/s carries nothing".into()),
        Err(_) => Err(format!(
            "{s:?} is not a cell rate (cells/s, or oc3, oc12, ds3, 25m)"
        )),
    }
}

/// One direction's check.
struct Checked {
    /// `"tx"`, `"rx"` or `"tx+rx"`.
    dir: &'static str,
    class: TrafficClass,
    /// The policer, or why the contract is not well formed; `None` for a direction
    /// without traffic.
    result: Option<Result<Policer, String>>,
    /// A UBR direction without a PCR is checked at the link rate.
    pcr_from_link: bool,
}

fn check_direction(
    dir: &'static str,
    params: &TrafficParams,
    link: u32,
    def: Option<Conformance>,
) -> Result<Checked, CliError> {
    let class = params.class;
    if let Some(def) = def
        && class != TrafficClass::None
        && def.class() != class
    {
        return Err(CliError::usage(format!(
            "--conformance {def} is for class {}, but {dir} is {class}",
            def.class()
        )));
    }
    let checked = Policer::check(def, params, link);
    Ok(Checked {
        dir,
        class,
        pcr_from_link: checked.as_ref().is_some_and(|c| c.1),
        result: checked.map(|(r, _)| r.map_err(|e| e.to_string())),
    })
}

/// `GCRA(…)` with its exact ticks, for JSON (ticks as strings: they can pass 2⁶⁴).
fn gcra_json(p: &GcraParams) -> Value {
    json!({
        "gcra": p.to_string(),
        "increment_ticks": p.increment().to_string(),
        "limit_ticks": p.limit().to_string(),
        "ticks_per_ns": p.ticks_per_ns(),
    })
}

fn checked_json(c: &Checked) -> Value {
    let mut v = json!({ "class": c.class.name(), "well_formed": true, "error": null });
    match &c.result {
        None => {}
        Some(Err(e)) => {
            v["well_formed"] = json!(false);
            v["error"] = json!(e);
        }
        Some(Ok(p)) => {
            let k = p.contract();
            v["conformance"] = json!(p.definition().name());
            v["pcr"] = json!(k.pcr);
            v["pcr_from_link"] = json!(c.pcr_from_link);
            v["cdvt_ns"] = json!(k.cdvt.as_nanos());
            v["peak"] = gcra_json(p.peak());
            if let Some(s) = p.sustainable() {
                v["scr"] = json!(k.scr);
                v["mbs"] = json!(k.mbs);
                v["sustainable"] = gcra_json(s);
            }
        }
    }
    v
}

fn checked_lines(c: &Checked, link: u32, out: &mut Vec<String>) {
    let dir = c.dir;
    match &c.result {
        None => out.push(format!("{dir}: none (no traffic)")),
        Some(Err(e)) => out.push(format!("{dir}: {}, not well formed: {e}", c.class)),
        Some(Ok(p)) => {
            let def = p.definition();
            let k = p.contract();
            out.push(format!(
                "{dir}: {def}, well formed on a {link} cells/s link"
            ));
            let from_link = if c.pcr_from_link {
                " (no PCR given: the link's)"
            } else {
                ""
            };
            out.push(format!(
                "  PCR(0+1) {} cells/s{from_link}, CDVT {}: {}",
                k.pcr,
                k.cdvt,
                p.peak()
            ));
            if let Some(s) = p.sustainable() {
                let flow = if def == Conformance::Vbr1 { "0+1" } else { "0" };
                out.push(format!(
                    "  SCR({flow}) {} cells/s, MBS {} (L = BT + CDVT): {s}",
                    k.scr, k.mbs
                ));
            }
            if def == Conformance::Vbr3 {
                out.push("  CLP=0 cells failing only SCR(0) are tagged".into());
            }
        }
    }
}

/// Runs `natm qos check`.
pub fn run(args: CheckArgs) -> CmdResult {
    let text = &args.text;
    let q: Qos = text
        .parse()
        .map_err(|e| CliError::usage(format!("QoS {text:?}: {e}")))?;
    let def = match &args.conformance {
        None => None,
        Some(s) => Some(
            s.parse::<Conformance>()
                .map_err(|e| CliError::usage(format!("--conformance {s:?}: {e}")))?,
        ),
    };
    if let Some(d) = def
        && ![q.tx.class, q.rx.class].contains(&d.class())
    {
        return Err(CliError::usage(format!(
            "--conformance {d} is for class {}, which {text:?} does not have",
            d.class()
        )));
    }
    let dirs = if q.tx == q.rx {
        vec![check_direction("tx+rx", &q.tx, args.link, def)?]
    } else {
        let applies = |t: &TrafficParams| def.filter(|d| d.class() == t.class);
        vec![
            check_direction("tx", &q.tx, args.link, applies(&q.tx))?,
            check_direction("rx", &q.rx, args.link, applies(&q.rx))?,
        ]
    };
    let errors: Vec<String> = dirs
        .iter()
        .filter_map(|c| match &c.result {
            Some(Err(e)) => Some(format!("{}: {e}", c.dir)),
            _ => None,
        })
        .collect();
    if args.json {
        let mut v = json!({ "link": args.link, "well_formed": errors.is_empty() });
        if let [both] = dirs.as_slice() {
            v["tx"] = checked_json(both);
            v["rx"] = checked_json(both);
        } else {
            for c in &dirs {
                v[c.dir] = checked_json(c);
            }
        }
        print_line(&v.to_string())?;
    } else {
        let mut lines = Vec::new();
        for c in &dirs {
            checked_lines(c, args.link, &mut lines);
        }
        print_line(&lines.join("\n"))?;
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(CliError::failure(format!(
            "QoS {text:?} is not a well-formed contract: {}",
            errors.join("; ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_rates() {
        assert_eq!(parse_link("OC3"), Ok(353_207));
        assert_eq!(parse_link("1000"), Ok(1000));
        assert!(parse_link("0").is_err());
        assert!(parse_link("fast").unwrap_err().contains("not a cell rate"));
        assert!(
            parse_link("unlimited")
                .unwrap_err()
                .contains("needs a link with a cell rate")
        );
    }
}

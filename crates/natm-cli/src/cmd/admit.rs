//! `natm admit --link RATE [--existing QOS]… QOS`: would a connection with this QoS be
//! admitted on a link already carrying these, and if not, why (natm-traffic's [`Cac`])?
//!
//! The existing connections are admitted first, in the order given; one that does not fit
//! is bad input (exit 2, naming it), since the link could not be carrying it. Then the new
//! one is assessed: exit 0 when admitted, 1 when refused (the refusal names the binding
//! constraint), 2 when the text or the options cannot be read.

use clap::{Args, ValueEnum};
use natm_core::qos::{Qos, TrafficClass, TrafficParams};
use natm_traffic::cac::{Cac, CacConfig, Refusal, Reservation};
use serde_json::{Value, json};

use super::qos::print_line;
use super::qos_check::parse_link;
use crate::{CliError, CmdResult};

/// Which direction of each QoS uses the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Direction {
    /// The transmit direction (`txtp`): the link leaves this end.
    Tx,
    /// The receive direction (`rxtp`): the link arrives at this end.
    Rx,
}

/// `natm admit …`
#[derive(Args)]
pub struct AdmitArgs {
    /// The QoS of the new connection (qos(7), with natm's vbr extension).
    #[arg(allow_hyphen_values = true)]
    qos: String,
    /// The link's cell rate: cells/s, or oc3 (353207), oc12 (1412830), ds3 (96000),
    /// 25m (59111).
    #[arg(long, value_parser = parse_link)]
    link: u32,
    /// A connection the link already carries (repeat for each).
    #[arg(long = "existing", value_name = "QOS", allow_hyphen_values = true)]
    existing: Vec<String>,
    /// The link's buffer in cells, which VBR connections share (0 books VBR at its PCR;
    /// more lets the equivalent bandwidth fall toward SCR).
    #[arg(long, default_value_t = 0, value_name = "CELLS")]
    buffer: u32,
    /// How many UBR connections the link admits.
    #[arg(long, default_value_t = 1024, value_name = "N")]
    max_ubr: u32,
    /// The link's name in the explanation.
    #[arg(long, default_value = "link")]
    name: String,
    /// Which direction of each QoS is booked on the link.
    #[arg(long, value_enum, default_value = "tx")]
    direction: Direction,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

fn parse_qos(what: &str, text: &str) -> Result<Qos, CliError> {
    text.parse()
        .map_err(|e| CliError::usage(format!("{what} {text:?}: {e}")))
}

fn books_json(cac: &Cac) -> Value {
    let c = cac.config();
    json!({
        "cbr_cells_per_s": cac.reserved_cbr(),
        "vbr_cells_per_s": cac.reserved_vbr(),
        "ubr_connections": cac.ubr_count(),
        "ubr_free": c.max_ubr.saturating_sub(cac.ubr_count()),
        "free_cells_per_s": cac.free(),
    })
}

fn class_name(class: TrafficClass) -> String {
    class.name().to_ascii_uppercase()
}

fn reservation_text(r: &Reservation) -> String {
    match r.class {
        TrafficClass::Ubr => "UBR, no bandwidth booked".into(),
        TrafficClass::Vbr => format!(
            "VBR {} cells/s equivalent (PCR {}, SCR {}, MBS {})",
            r.cells_per_s, r.contract.pcr, r.contract.scr, r.contract.mbs
        ),
        class => format!("{} {} cells/s", class_name(class), r.cells_per_s),
    }
}

fn books_text(cac: &Cac) -> String {
    let c = cac.config();
    format!(
        "CBR {} + VBR {} equivalent reserved, {} of {} cells/s free; UBR {} of {}",
        cac.reserved_cbr(),
        cac.reserved_vbr(),
        cac.free(),
        c.capacity,
        cac.ubr_count(),
        c.max_ubr
    )
}

/// Runs `natm admit`.
pub fn run(args: AdmitArgs) -> CmdResult {
    if args.name.is_empty() {
        return Err(CliError::usage("--name: the link needs a name"));
    }
    let pick = |q: &Qos| -> TrafficParams {
        match args.direction {
            Direction::Tx => q.tx,
            Direction::Rx => q.rx,
        }
    };
    let new = parse_qos("QoS", &args.qos)?;
    let existing: Vec<Qos> = args
        .existing
        .iter()
        .map(|t| parse_qos("--existing", t))
        .collect::<Result<_, _>>()?;
    let mut cac = Cac::new(CacConfig {
        link: args.name.clone(),
        capacity: args.link,
        buffer_cells: args.buffer,
        max_ubr: args.max_ubr,
    });
    let mut carried = Vec::new();
    for (n, (q, text)) in existing.iter().zip(&args.existing).enumerate() {
        let handle = cac.admit(&pick(q)).map_err(|e| {
            CliError::usage(format!(
                "--existing #{} {text:?} cannot be on this link: {e}",
                n + 1
            ))
        })?;
        let r = cac.reservation(handle).copied();
        carried.push((text, r.expect("an admitted handle is live")));
    }
    let before = books_json(&cac);
    let before_text = books_text(&cac);
    let verdict: Result<Reservation, Refusal> = match cac.admit(&pick(&new)) {
        Ok(h) => Ok(*cac.reservation(h).expect("an admitted handle is live")),
        Err(e) => Err(e),
    };
    let dir = match args.direction {
        Direction::Tx => "tx",
        Direction::Rx => "rx",
    };
    if args.json {
        let request = pick(&new);
        let mut v = json!({
            "admitted": verdict.is_ok(),
            "reason": verdict.as_ref().err().map(|e| e.to_string()),
            "direction": dir,
            "link": {
                "name": args.name,
                "capacity_cells_per_s": args.link,
                "buffer_cells": args.buffer,
                "max_ubr": args.max_ubr,
            },
            "request": { "qos": args.qos, "class": request.class.name(), "cells_per_s": null },
            "existing": carried.iter().map(|(t, r)| json!({
                "qos": t, "class": r.class.name(), "cells_per_s": r.cells_per_s,
            })).collect::<Vec<_>>(),
            "reserved": before,
            "after": null,
        });
        if let Ok(r) = &verdict {
            v["request"]["cells_per_s"] = json!(r.cells_per_s);
            v["after"] = books_json(&cac);
        }
        print_line(&v.to_string())?;
    } else {
        let mut lines = vec![format!(
            "{} ({} cells/s, buffer {} cells): {before_text}",
            args.name, args.link, args.buffer
        )];
        for (text, r) in &carried {
            lines.push(format!("  carries {text}: {}", reservation_text(r)));
        }
        match &verdict {
            Ok(r) => {
                lines.push(format!(
                    "admitted: {} ({dir}: {})",
                    args.qos,
                    reservation_text(r)
                ));
                lines.push(format!("  afterwards: {}", books_text(&cac)));
            }
            Err(e) => lines.push(format!("refused: {e}")),
        }
        print_line(&lines.join("\n"))?;
    }
    match verdict {
        Ok(_) => Ok(()),
        Err(e) => Err(CliError::failure(e.to_string())),
    }
}

//! natm's text formats against libatm's verdicts, recorded in `tests/data/libatm_*.json`
//! by `tests/oracle/libatm_oracle.py` (which also runs the same comparison against the live
//! library). Field by field: every string libatm accepts, natm accepts with the same values;
//! every string it rejects, natm rejects; canonical output equals `qos2text`/`atm2text`
//! wherever their output reads back to the same value, and always reads back itself.

use natm_core::addr::{AddrSyntax, AtmAddr, Sel};
use natm_core::qos::{Pcr, Qos, TrafficParams};
use serde_json::{Value, json};

fn entries(golden: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(golden).expect("golden file is JSON");
    v["entries"].as_array().expect("entries").clone()
}

fn rate(r: Pcr) -> Value {
    match r {
        Pcr::Max => json!("max"),
        Pcr::Cps(n) => json!(n),
    }
}

/// The oracle's view of a direction: libatm's `atm_trafprm` fields.
fn direction(t: &TrafficParams) -> Value {
    assert_eq!((t.scr, t.mbs, t.cdvt), (0, 0, 0), "VBR fields outside vbr");
    json!({
        "traffic_class": t.class.name(),
        "max_pcr": rate(t.max_pcr),
        "pcr": rate(t.pcr),
        "min_pcr": t.min_pcr,
        "max_cdv": t.max_cdv,
        "max_sdu": t.max_sdu,
    })
}

fn qos_json(q: &Qos) -> Value {
    json!({ "aal": q.aal.name(), "txtp": direction(&q.tx), "rxtp": direction(&q.rx) })
}

#[test]
fn qos_agrees_with_libatm() {
    let entries = entries(include_str!("data/libatm_qos.json"));
    assert!(entries.len() >= 300, "corpus too small: {}", entries.len());
    let mut failures = Vec::new();
    for e in &entries {
        let text = e["text"].as_str().expect("text");
        let parsed = text.parse::<Qos>();
        match (e["ok"].as_bool(), parsed) {
            (Some(false), Ok(q)) => {
                failures.push(format!("{text:?}: libatm rejects, natm gives {q:?}"))
            }
            (Some(false), Err(_)) => {}
            (_, Err(err)) => failures.push(format!("{text:?}: libatm accepts, natm: {err}")),
            (_, Ok(q)) => {
                if qos_json(&q) != e["value"] {
                    failures.push(format!(
                        "{text:?}: natm {} libatm {}",
                        qos_json(&q),
                        e["value"]
                    ));
                }
                let shown = q.to_string();
                if e["qos2text_roundtrip"] == json!(true) && e["qos2text"] != json!(shown) {
                    failures.push(format!(
                        "{text:?}: natm prints {shown:?}, qos2text {}",
                        e["qos2text"]
                    ));
                }
                if shown.parse::<Qos>().as_ref() != Ok(&q) {
                    failures.push(format!("{text:?}: {shown:?} does not read back"));
                }
                if let Err(err) = q.validate() {
                    failures.push(format!("{text:?}: parsed value fails validate: {err}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn sel<T: Into<u32>>(s: Sel<T>) -> Value {
    match s {
        Sel::Is(v) => json!(v.into()),
        Sel::Any => json!("*"),
        Sel::Unspecified => json!("?"),
    }
}

fn addr_json(a: &AtmAddr) -> Value {
    match a {
        AtmAddr::Pvc(p) => json!({
            "kind": "pvc",
            "itf": sel(p.itf.map(|v| v.get())),
            "vpi": sel(p.vpi.map(|v| v.get())),
            "vci": sel(p.vci.map(|v| v.get())),
        }),
        AtmAddr::Svc(s) => json!({
            "kind": "svc",
            "prv": s.prv.map(|p| p.to_hex()).unwrap_or_default(),
            "pub": s.pub_.map(|p| p.as_str().to_owned()).unwrap_or_default(),
            "prefix_len": s.prefix_len,
        }),
    }
}

fn syntax(name: &str) -> AddrSyntax {
    match name {
        "default" => AddrSyntax::DEFAULT,
        "nni" => AddrSyntax {
            nni: true,
            ..AddrSyntax::DEFAULT
        },
        "exact" => AddrSyntax::EXACT,
        other => panic!("unknown syntax {other}"),
    }
}

#[test]
fn addresses_agree_with_libatm() {
    let entries = entries(include_str!("data/libatm_addr.json"));
    assert!(entries.len() >= 200, "corpus too small: {}", entries.len());
    let mut failures = Vec::new();
    for e in &entries {
        let text = e["text"].as_str().expect("text");
        let syn = syntax(e["syntax"].as_str().expect("syntax"));
        let parsed = AtmAddr::parse_with(text, syn);
        let expect_ok = e["ok"] == json!(true) && e.get("natm_rejects").is_none();
        match (expect_ok, parsed) {
            (false, Ok(a)) => failures.push(format!("{text:?}: natm should reject, gives {a:?}")),
            (false, Err(_)) => {}
            (true, Err(err)) => failures.push(format!("{text:?}: libatm accepts, natm: {err}")),
            (true, Ok(a)) => {
                if addr_json(&a) != e["value"] {
                    failures.push(format!(
                        "{text:?}: natm {} libatm {}",
                        addr_json(&a),
                        e["value"]
                    ));
                }
                let shown = a.to_string();
                let prefix = e["value"]["prefix_len"].is_number();
                if !prefix
                    && e["atm2text_roundtrip"] == json!(true)
                    && e["atm2text"] != json!(shown)
                {
                    failures.push(format!(
                        "{text:?}: natm prints {shown:?}, atm2text {}",
                        e["atm2text"]
                    ));
                }
                if AtmAddr::parse_with(&shown, syn).as_ref() != Ok(&a) {
                    failures.push(format!("{text:?}: {shown:?} does not read back"));
                }
                if let Err(err) = a.validate(syn) {
                    failures.push(format!("{text:?}: parsed value fails validate: {err}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn recorded_divergences_are_the_documented_ones() {
    let entries = entries(include_str!("data/libatm_addr.json"));
    for e in entries.iter().filter(|e| e.get("natm_rejects").is_some()) {
        let v = &e["value"];
        let negative_vci = v["vci"].as_i64().is_some_and(|n| n < 0);
        let nni_4096 = v["vpi"] == json!(4096);
        assert!(negative_vci || nni_4096, "undocumented divergence: {e}");
    }
}

//! `natm admit` as a user runs it: exit 0 when admitted, 1 when refused with the binding
//! constraint named, 2 on input it cannot read.

use std::process::Output;

mod common;
use common::{stderr, stdout};

/// `natm admit ARGS…`
fn natm(args: &[&str]) -> Output {
    common::natm(&[&["admit"], args].concat())
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// The refusal of the example, word for word.
#[test]
fn cbr_refused_names_the_binding_constraint() {
    let o = natm(&[
        "--link",
        "oc3",
        "--name",
        "sw0:1",
        "--existing",
        "cbr:pcr=310000",
        "--existing",
        "vbr:pcr=30707,scr=1000,mbs=100",
        "cbr:pcr=20000",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let why = "CBR 20000 cells/s refused on sw0:1: 12500 of 353207 cells/s free \
               (CBR 310000 reserved, VBR 30707 equivalent)";
    assert!(
        stdout(&o).ends_with(&format!("refused: {why}\n")),
        "{}",
        stdout(&o)
    );
    assert_eq!(stderr(&o), format!("natm: {why}\n"));
}

#[test]
fn admitted_json_has_books_per_class() {
    let o = natm(&[
        "--link",
        "oc3",
        "--existing",
        "cbr:pcr=10000",
        "--existing",
        "ubr",
        "vbr:pcr=1000,scr=250,mbs=10",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["admitted"], true);
    assert_eq!(v["reason"], serde_json::Value::Null);
    assert_eq!(v["reserved"]["cbr_cells_per_s"], 10_000);
    assert_eq!(v["reserved"]["vbr_cells_per_s"], 0);
    assert_eq!(v["reserved"]["ubr_connections"], 1);
    assert_eq!(v["reserved"]["free_cells_per_s"], 353_207 - 10_000);
    // No buffer: VBR is booked at its PCR.
    assert_eq!(v["request"]["cells_per_s"], 1000);
    assert_eq!(v["after"]["vbr_cells_per_s"], 1000);
    assert_eq!(v["after"]["free_cells_per_s"], 353_207 - 11_000);
}

#[test]
fn refused_json_has_reason_and_no_after() {
    let o = natm(&[
        "--link",
        "1000",
        "--existing",
        "cbr:pcr=900",
        "cbr:pcr=200",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["admitted"], false);
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("100 of 1000 cells/s free")
    );
    assert_eq!(v["after"], serde_json::Value::Null);
    assert_eq!(v["reserved"]["free_cells_per_s"], 100);
}

/// A buffer lets VBR's equivalent bandwidth fall from PCR toward SCR.
#[test]
fn buffer_lowers_vbr_equivalent_bandwidth() {
    let eq = |buffer: &str| {
        let o = natm(&[
            "--link",
            "oc3",
            "--buffer",
            buffer,
            "vbr:pcr=1000,scr=250,mbs=10",
            "--json",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        json(&o)["request"]["cells_per_s"].as_u64().unwrap()
    };
    assert_eq!(eq("0"), 1000);
    let mid = eq("1000");
    assert!(250 < mid && mid < 1000, "{mid}");
    assert_eq!(eq("1000000"), 250);
}

#[test]
fn ubr_limit() {
    let o = natm(&[
        "--link",
        "oc3",
        "--max-ubr",
        "1",
        "--existing",
        "ubr",
        "ubr",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("all 1 UBR connections in use"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn rx_direction_is_booked_when_asked() {
    let args = ["--link", "1000", "--existing", "cbr:tx:pcr=100,rx:pcr=950"];
    let tx = natm(&[&args[..], &["cbr:pcr=100"]].concat());
    assert_eq!(tx.status.code(), Some(0), "{}", stderr(&tx));
    let rx = natm(&[&args[..], &["cbr:pcr=100", "--direction", "rx"]].concat());
    assert_eq!(rx.status.code(), Some(1), "{}", stderr(&rx));
}

#[test]
fn bad_input_exits_2_naming_it() {
    let o = natm(&["--link", "oc3", "cbr:pcr=1000x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("natm: QoS \"cbr:pcr=1000x\": at 12:"),
        "{}",
        stderr(&o)
    );

    let o = natm(&["--link", "oc3", "--existing", "cbr:pcr=400000", "ubr"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--existing #1 \"cbr:pcr=400000\" cannot be on this link"),
        "{}",
        stderr(&o)
    );

    let o = natm(&["--link", "0", "ubr"]);
    assert_eq!(o.status.code(), Some(2));
    let o = natm(&["--link", "oc3", "abr"]);
    assert_eq!(o.status.code(), Some(1), "ABR is refused, not misread");
    assert!(stderr(&o).contains("only CBR, VBR and UBR are admitted"));
}

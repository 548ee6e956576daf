//! `natm qos check` as a user runs it: the GCRAs of a contract, exit 0 when well formed,
//! 1 when not, 2 on input it cannot read.

mod common;
use common::{natm, stderr, stdout};

#[test]
fn vbr_contract_of_atm_facts_4_3() {
    let o = natm(&[
        "qos",
        "check",
        "vbr:pcr=1000,scr=250,mbs=10",
        "--link",
        "oc3",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "tx+rx: VBR.1, well formed on a 353207 cells/s link\n\
         \x20 PCR(0+1) 1000 cells/s, CDVT 0 ns: GCRA(I = 1000000 ns, L = 0 ns)\n\
         \x20 SCR(0+1) 250 cells/s, MBS 10 (L = BT + CDVT): GCRA(I = 4000000 ns, L = 27000000 ns)\n"
    );
}

#[test]
fn link_rate_increment_is_exact() {
    let o = natm(&["qos", "check", "cbr:max_pcr=max", "--link", "oc3", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["well_formed"], true);
    assert_eq!(v["tx"]["conformance"], "CBR.1");
    assert_eq!(v["tx"]["pcr"], 353_207);
    assert_eq!(v["tx"]["peak"]["gcra"], "GCRA(I = ≈2831.2 ns, L = 0 ns)");
    assert_eq!(v["tx"]["peak"]["increment_ticks"], "1000000000");
    assert_eq!(v["tx"]["peak"]["ticks_per_ns"], 353_207);
}

#[test]
fn vbr3_and_directions() {
    let o = natm(&[
        "qos",
        "check",
        "vbr:pcr=1000,scr=250,mbs=10,tx:cdvt=100,rx:none",
        "--link",
        "1000",
        "--conformance",
        "vbr.3",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("tx: VBR.3, well formed on a 1000 cells/s link\n"),
        "{out}"
    );
    assert!(
        out.contains("CDVT 100.000 µs: GCRA(I = 1000000 ns, L = 100000 ns)"),
        "{out}"
    );
    assert!(
        out.contains(
            "SCR(0) 250 cells/s, MBS 10 (L = BT + CDVT): GCRA(I = 4000000 ns, L = 27100000 ns)"
        ),
        "{out}"
    );
    assert!(out.ends_with("rx: none (no traffic)\n"), "{out}");
}

#[test]
fn malformed_contract_exits_1() {
    let o = natm(&["qos", "check", "vbr:pcr=100,scr=200,mbs=5", "--link", "oc3"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "tx+rx: vbr, not well formed: SCR 200 cells/s is above PCR 100 cells/s\n"
    );
    assert_eq!(
        stderr(&o),
        "natm: QoS \"vbr:pcr=100,scr=200,mbs=5\" is not a well-formed contract: \
         tx+rx: SCR 200 cells/s is above PCR 100 cells/s\n"
    );
    let o = natm(&[
        "qos",
        "check",
        "vbr:pcr=100,scr=50",
        "--link",
        "oc3",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["well_formed"], false);
    assert_eq!(v["rx"]["error"], "VBR.1 needs an MBS (mbs=) of at least 1");
}

#[test]
fn bad_input_exits_2() {
    for args in [
        &["qos", "check", "ubx", "--link", "oc3"][..],
        &["qos", "check", "cbr:pcr=10", "--link", "fast"],
        &["qos", "check", "cbr:pcr=10", "--link", "0"],
        &[
            "qos",
            "check",
            "cbr:pcr=10",
            "--link",
            "oc3",
            "--conformance",
            "vbr.1",
        ],
        &[
            "qos",
            "check",
            "cbr:pcr=10",
            "--link",
            "oc3",
            "--conformance",
            "cbr.9",
        ],
        &["qos", "check", "cbr:pcr=10"],
    ] {
        let o = natm(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
}

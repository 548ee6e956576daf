//! `natm perf calibrate` run as a user runs it: the file it writes (with natm-transport's
//! per-TPDU costs) is one the simulator accepts, with positive costs, a point per size and
//! the machine and command recorded; a damaged file is refused naming the field. No figure is asserted beyond being
//! positive: the machine is shared and noisy.

mod common;

use common::{natm, stderr, stdout};
use natm_sim::calib::{CalibError, Calibration};
use serde_json::Value;

#[test]
fn calibrate_writes_a_file_the_simulator_loads() {
    let dir = std::env::temp_dir().join(format!("natm-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let out = dir.join("calib.toml");
    let o = natm(&[
        "perf",
        "calibrate",
        "--seconds",
        "0.3",
        "--out",
        out.to_str().expect("UTF-8 temp path"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("send    ="), "{}", stdout(&o));

    let c = Calibration::load(&out).expect("the simulator accepts the file");
    std::fs::remove_dir_all(&dir).ok();
    assert!(c.costs.send_fixed.as_nanos() > 0 || c.costs.send_per_byte_ps > 0);
    assert!(c.costs.recv_fixed.as_nanos() > 0 || c.costs.recv_per_byte_ps > 0);
    assert!(c.costs.send(1500) > c.costs.send(0) || c.costs.send_per_byte_ps == 0);
    assert!(c.costs.wakeup.as_nanos() > 0);
    let sizes: Vec<u32> = c.fits.iter().map(|p| p.size).collect();
    assert_eq!(sizes.first(), Some(&40));
    assert_eq!(sizes.last(), Some(&16_384));
    assert!(c.fits.iter().all(|p| p.send_ns > 0.0 && p.recv_ns > 0.0));
    // natm-transport's own per-TPDU costs: copying a 16 KiB TPDU costs something.
    let t = c.transport.expect("the [transport] table");
    assert!(t.send_fixed_ns + t.send_per_byte_ps > 0, "{t:?}");
    assert!(t.recv_fixed_ns + t.recv_per_byte_ps > 0, "{t:?}");
    assert!(stdout(&o).contains("transport per TPDU frame: send "));
    assert!(
        c.command.contains("perf calibrate --seconds 0.3 --out"),
        "{}",
        c.command
    );
    assert!(c.measured_on.starts_with("Linux "), "{}", c.measured_on);
    assert!(c.date.ends_with('Z') && c.date.len() == 20, "{}", c.date);
}

#[test]
fn without_out_stdout_is_the_file_and_json_carries_it() {
    let o = natm(&["perf", "calibrate", "--seconds", "0.2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let c = Calibration::parse(&stdout(&o)).expect("stdout is the calibration file");
    assert!(stderr(&o).contains("wakeup  ="), "the table goes to stderr");
    assert_eq!(c.fits.len(), 10);

    let o = natm(&["perf", "calibrate", "--seconds", "0.2", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
    let text = v["toml"].as_str().expect("the file's text");
    let c = Calibration::parse(text).expect("it parses");
    assert_eq!(v["wakeup_ns"], c.costs.wakeup.as_nanos());
    assert_eq!(v["rows"].as_array().map(Vec::len), Some(10));
}

#[test]
fn a_damaged_file_is_refused_naming_the_field() {
    let good = Calibration::builtin().to_toml();
    let bad = good.replace("wakeup_ns = ", "wakeup_ns = -");
    assert_ne!(bad, good);
    let e = Calibration::parse(&bad).unwrap_err();
    assert!(
        matches!(&e, CalibError::Negative { field, .. } if field == "costs.wakeup_ns"),
        "{e}"
    );
    assert!(e.to_string().contains("costs.wakeup_ns"), "{e}");
    let missing: String = good
        .lines()
        .filter(|l| !l.starts_with("recv_fixed_ns"))
        .map(|l| format!("{l}\n"))
        .collect();
    let e = Calibration::parse(&missing).unwrap_err();
    assert_eq!(
        e,
        CalibError::Missing {
            field: "costs.recv_fixed_ns".into()
        }
    );
}

#[test]
fn bad_seconds_are_refused() {
    for s in ["0", "-1", "nan", "1000"] {
        let o = natm(&["perf", "calibrate", &format!("--seconds={s}")]);
        assert_eq!(o.status.code(), Some(2), "--seconds {s}: {}", stderr(&o));
        assert!(stderr(&o).contains("--seconds"), "{}", stderr(&o));
    }
}

//! `natm lab`: the default lab comes up as real daemons, answers, and goes down leaving no
//! process, socket or shared memory behind.

mod common;
#[path = "support/procfs.rs"]
mod procfs;

use std::path::{Path, PathBuf};

use common::{natm, stderr, stdout};
use serde_json::Value;

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("natm-lab-test-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        TempDir(p)
    }
    fn arg(&self) -> &str {
        self.0.to_str().expect("utf-8 temp dir")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if self.0.join("lab.json").exists() {
            let _ = natm(&["lab", "down", "--dir", self.arg()]);
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn alive(pid: i64) -> bool {
    // A zombie has no command line; it is gone for our purposes.
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| !c.is_empty())
}

fn dev_shm() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn up(dir: &TempDir, extra: &[&str]) -> Value {
    let mut args = vec!["lab", "up", "--json", "--dir", dir.arg()];
    args.extend_from_slice(extra);
    let o = natm(&args);
    assert!(o.status.success(), "lab up: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("lab up --json prints JSON")
}

#[test]
fn the_default_lab_comes_up_answers_and_goes_down_without_leftovers() {
    let shm_before = dev_shm();
    let dir = TempDir::new("default");
    let lab = up(&dir, &[]);
    let daemons = lab["daemons"].as_array().expect("daemons");
    let names: Vec<&str> = daemons.iter().filter_map(|d| d["name"].as_str()).collect();
    assert_eq!(names, ["s1", "h1", "h2"]);
    let pids: Vec<i64> = daemons.iter().filter_map(|d| d["pid"].as_i64()).collect();
    assert!(pids.iter().all(|&p| alive(p)), "{lab}");

    // A second `up` on the same directory is refused.
    let o = natm(&["lab", "up", "--dir", dir.arg()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("already up"), "{}", stderr(&o));

    let o = natm(&["lab", "status", "--json", "--dir", dir.arg()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let status: Value = serde_json::from_str(&stdout(&o)).expect("status JSON");
    let answers = status["status"].as_array().expect("per-daemon status");
    assert_eq!(answers.len(), 3);
    for a in answers {
        assert!(
            a.get("error").is_none(),
            "a daemon did not answer: {status}"
        );
    }
    // Every host has its address, every switch its prefix (derived: the topology has none).
    let prefix = "47.0005.80FFE1000000F2000001";
    let d = &status["daemons"];
    assert_eq!(d[0]["prefix"], prefix, "{status}");
    for (i, esi) in [(1, "020000000001"), (2, "020000000002")] {
        assert_eq!(d[i]["address"], format!("{prefix}.{esi}.00"), "{status}");
    }
    let o = natm(&["lab", "status", "--dir", dir.arg()]);
    assert!(
        stdout(&o).contains(&format!("address {prefix}.020000000002.00")),
        "{}",
        stdout(&o)
    );
    // The switch has the two host ports and the ten default PVCs.
    assert_eq!(
        answers[0]["ports"].as_array().map(Vec::len),
        Some(2),
        "{status}"
    );
    assert_eq!(
        answers[0]["connections"].as_array().map(Vec::len),
        Some(10),
        "{status}"
    );

    let o = natm(&["lab", "down", "--dir", dir.arg()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("stopped 3"), "{}", stdout(&o));
    for p in &pids {
        assert!(!alive(*p), "pid {p} is still running after lab down");
        assert_eq!(procfs::memfds(*p as u64), 0);
    }
    assert!(!dir.0.exists(), "the runtime directory is removed");
    assert_eq!(dev_shm(), shm_before, "nothing left in /dev/shm");
}

#[test]
fn every_link_kind_and_a_rate_override_come_up() {
    let dir = TempDir::new("kinds");
    let topo = dir.0.with_extension("toml");
    std::fs::write(
        &topo,
        r#"
        switch = [{ name = "s1" }]
        host = [{ name = "a" }, { name = "b" }, { name = "c" }]
        link = [
            { a = "a", b = "s1", kind = "shm" },
            { a = "b", b = "s1", kind = "udp", rate = "oc12" },
            { a = "c", b = "s1", kind = "tcp", impair = "loss=0" },
        ]
        pvc = [{ a = "a", b = "b", vc = "0.40" }, { a = "a", b = "c", vc = "0.41", qos = "cbr:pcr=1000" }]
        "#,
    )
    .expect("write topology");
    let lab = up(
        &dir,
        &["--topology", topo.to_str().unwrap(), "--rate", "unlimited"],
    );
    assert_eq!(lab["daemons"].as_array().map(Vec::len), Some(4), "{lab}");
    let o = natm(&["lab", "status", "--json", "--dir", dir.arg()]);
    let status: Value = serde_json::from_str(&stdout(&o)).expect("status JSON");
    assert_eq!(
        status["status"][0]["connections"].as_array().map(Vec::len),
        Some(2),
        "{status}"
    );
    let o = natm(&["lab", "down", "--dir", dir.arg()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let _ = std::fs::remove_file(topo);
}

#[test]
fn externals_come_up_as_an_atmtcp_port_and_a_hosts_link() {
    let dir = TempDir::new("external");
    let topo = dir.0.with_extension("toml");
    // A free loopback port: s1's external listens there and h2's external dials it, so
    // h2 is attached to s1 through the external port.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    std::fs::write(
        &topo,
        format!(
            r#"
            switch = [{{ name = "s1", prefix = "47.0005.80ffe1000000f21a3599" }}]
            host = [{{ name = "h1" }}, {{ name = "h2", esi = "0020481a3599" }}]
            link = [{{ a = "h1", b = "s1" }}]
            external = [
                {{ node = "s1", listen = "{addr}", prefix = "39.0840" }},
                {{ node = "h2", connect = "{addr}" }},
            ]
            "#
        ),
    )
    .expect("write topology");
    up(&dir, &["--topology", topo.to_str().unwrap()]);
    let o = natm(&["lab", "status", "--json", "--dir", dir.arg()]);
    let status: Value = serde_json::from_str(&stdout(&o)).expect("status JSON");
    let ports = status["status"][0]["ports"].as_array().expect("s1's ports");
    assert_eq!(ports.len(), 2, "{status}");
    assert!(
        ports[1]["link"]
            .as_str()
            .unwrap_or("")
            .contains(&addr.to_string()),
        "{status}"
    );
    assert_eq!(
        status["daemons"][2]["address"], "47.0005.80FFE1000000F3000002.0020481A3599.00",
        "{status}"
    );
    let o = natm(&["lab", "down", "--dir", dir.arg()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let _ = std::fs::remove_file(topo);
}

#[test]
fn down_removes_only_what_the_lab_made() {
    let dir = TempDir::new("mine");
    std::fs::create_dir_all(&dir.0).expect("mkdir");
    let mine = dir.0.join("notes.txt");
    std::fs::write(&mine, "keep me").expect("write");
    up(&dir, &[]);
    let o = natm(&["lab", "down", "--dir", dir.arg()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let left: Vec<String> = std::fs::read_dir(&dir.0)
        .expect("the directory stays")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["notes.txt"]);
}

#[test]
fn bad_topologies_and_a_missing_lab_are_reported() {
    let dir = TempDir::new("bad");
    let topo = dir.0.with_extension("toml");
    std::fs::write(&topo, "host = [{ name = \"h1\" }]\n").expect("write");
    let o = natm(&[
        "lab",
        "up",
        "--dir",
        dir.arg(),
        "--topology",
        topo.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("host \"h1\" has no link"),
        "{}",
        stderr(&o)
    );
    assert!(!Path::new(&dir.0).join("lab.json").exists());
    let o = natm(&["lab", "up", "--dir", dir.arg(), "--rate", "warp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("rate \"warp\""), "{}", stderr(&o));
    let o = natm(&["lab", "status", "--dir", dir.arg()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no lab is up"), "{}", stderr(&o));
    // An interval no Duration holds is refused up front (it was a panic in the sleep).
    for bad in ["1e30", "0", "nan"] {
        let o = natm(&["stat", "--watch", "--interval", bad, "--dir", dir.arg()]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("--interval"), "{bad}: {}", stderr(&o));
    }
    let _ = std::fs::remove_file(topo);
}

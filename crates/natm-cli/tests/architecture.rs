//! The workspace's dependency rule (DESIGN.md §2, STYLE.md practice 1): pure protocol crates
//! never reach an I/O, async or OS-interface crate, nor a natm crate that does I/O, and they
//! forbid `unsafe` and build without `std`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Crates that hold protocol logic only.
const PURE: &[&str] = &[
    "natm-core",
    "natm-wire",
    "natm-traffic",
    "natm-adapter",
    "natm-netem",
    "natm-switch",
    "natm-host-core",
    "natm-topology",
    "natm-sscop",
    "natm-sig",
    "natm-calls",
    "natm-transport",
];
/// What a pure crate may never depend on, directly or not.
const FORBIDDEN: &[&str] = &[
    "tokio",
    "mio",
    "socket2",
    "libc",
    "nix",
    "rustix",
    "async-std",
    "smol",
    "natm-capture",
    "natm-cli",
    "natm-nic",
    "natm-link",
];

/// The platform rustc builds for here.
fn host_triple() -> String {
    let out = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_string()
}

fn metadata() -> serde_json::Value {
    let out = Command::new(env!("CARGO"))
        // Not --offline: a fresh machine has not fetched the packages of other platforms,
        // which cargo reads to resolve the graph. Only this platform's edges are kept.
        .args(["metadata", "--format-version", "1", "--filter-platform"])
        .arg(host_triple())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// The names of every package `root`'s normal (non-dev, non-build) dependencies reach,
/// directly or not, `root` included.
fn reachable<'a>(meta: &'a serde_json::Value, root: &str) -> BTreeSet<&'a str> {
    let names: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            (
                p["id"].as_str().expect("id"),
                p["name"].as_str().expect("name"),
            )
        })
        .collect();
    let mut edges: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for node in meta["resolve"]["nodes"].as_array().expect("resolve nodes") {
        let id = node["id"].as_str().expect("node id");
        for dep in node["deps"].as_array().expect("deps") {
            let normal = dep["dep_kinds"]
                .as_array()
                .expect("dep_kinds")
                .iter()
                .any(|k| k["kind"].is_null());
            if normal {
                edges
                    .entry(id)
                    .or_default()
                    .push(dep["pkg"].as_str().expect("pkg"));
            }
        }
    }
    let start = names
        .iter()
        .find(|(_, n)| **n == root)
        .map(|(id, _)| *id)
        .unwrap_or_else(|| panic!("{root} is in the workspace"));
    let mut seen = BTreeSet::new();
    let mut stack = vec![start];
    while let Some(id) = stack.pop() {
        if seen.insert(id) {
            stack.extend(edges.get(id).into_iter().flatten());
        }
    }
    seen.into_iter().map(|id| names[id]).collect()
}

#[test]
fn pure_crates_reach_no_io_crate() {
    let meta = metadata();
    for pure in PURE {
        for name in reachable(&meta, pure) {
            assert!(
                !FORBIDDEN.contains(&name),
                "pure crate {pure} depends on {name}"
            );
        }
    }
}

/// Issue 6: the simulator drives the very cores the daemons run (one package each, so no
/// simulator-only copy), and reaches no I/O crate and no source of OS randomness.
#[test]
fn the_simulator_runs_the_daemons_cores_and_no_io() {
    let meta = metadata();
    let sim = reachable(&meta, "natm-sim");
    for (core, daemon) in [
        ("natm-switch", "natm-switchd"),
        ("natm-adapter", "natm-host"),
        ("natm-host-core", "natm-host"),
        ("natm-netem", "natm-link"),
    ] {
        assert!(sim.contains(core), "natm-sim must drive {core}");
        assert!(
            reachable(&meta, daemon).contains(core),
            "{daemon} must run {core}"
        );
    }
    for banned in [
        "natm-nic",
        "natm-link",
        "natm-host",
        "natm-switchd",
        "natm",
        "rustix",
        "nix",
        "tokio",
        "getrandom",
        "rand",
    ] {
        assert!(!sim.contains(banned), "natm-sim depends on {banned}");
    }
}

/// Issue 21: the application API speaks the daemons' protocols through natm-proto and runs
/// its lane over natm-link's driver; it never depends on a daemon crate.
#[test]
fn the_api_reaches_the_protocols_not_the_daemons() {
    let meta = metadata();
    let api = reachable(&meta, "natm");
    assert!(api.contains("natm-proto"), "natm must speak natm-proto");
    for daemon in [
        "natm-host",
        "natm-switchd",
        "natm-lab",
        "natm-bench",
        "natm-cli",
    ] {
        assert!(!api.contains(daemon), "natm depends on {daemon}");
    }
}

/// Issue 21: a simulated host is natm-host-core's `Host`, the object hostd drives. The
/// simulator's own source reaches none of the host's responsibilities by another path:
/// admission, the QoS → shaping derivation, the HEC receiver, OAM loopback, an adapter made
/// or a VC opened outside the host core.
#[test]
fn the_simulator_has_no_host_logic_of_its_own() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../natm-sim/src");
    let banned = [
        ("cac::", "admission (natm-host-core books it)"),
        ("Cac::new", "admission (natm-host-core books it)"),
        ("VcSpec::", "QoS → shaping (natm_host_core::shaping)"),
        (
            "UBR_UNSHAPED_PCR",
            "QoS → shaping (natm_host_core::shaping)",
        ),
        ("HecReceiver", "the link's HEC receiver (the host core's)"),
        ("Loopback", "the OAM responder (the host core's)"),
        ("Adapter::new", "a host's adapter (the host core makes it)"),
        (
            "adapter.open_vc(",
            "opening a VC in an adapter (Host::open_vc)",
        ),
        (
            "adapter_mut().open_vc(",
            "opening a VC in an adapter (Host::open_vc)",
        ),
        (
            "NOMINAL_RATE",
            "the unlimited link's admission rate (the host core's)",
        ),
    ];
    let mut files = vec![src];
    let mut found = Vec::new();
    while let Some(path) = files.pop() {
        if path.is_dir() {
            for e in std::fs::read_dir(&path).expect("a readable directory") {
                files.push(e.expect("an entry").path());
            }
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a readable file");
        for (line_no, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for (needle, what) in banned {
                if code.contains(needle) {
                    found.push(format!(
                        "{}:{}: {what}: {}",
                        path.display(),
                        line_no + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "natm-sim does the host's work itself:\n{}",
        found.join("\n")
    );
}

#[test]
fn pure_crates_forbid_unsafe_and_std() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for pure in PURE {
        let lib = std::fs::read_to_string(root.join(pure).join("src/lib.rs")).expect("lib.rs");
        assert!(
            lib.contains("#![forbid(unsafe_code)]"),
            "{pure} must forbid unsafe code"
        );
        // natm-topology parses TOML with the `toml` crate, which needs std; it does no I/O.
        if *pure != "natm-topology" {
            assert!(lib.contains("no_std"), "{pure} must build without std");
        }
    }
}

/// `unsafe` lives in two crates only: natm-nic (shared-memory rings, memfd mappings) and
/// natm-clmul (carry-less-multiply CRC intrinsics). Every other crate takes the workspace's
/// `unsafe_code = "forbid"`.
#[test]
fn only_natm_nic_and_natm_clmul_may_use_unsafe() {
    const ALLOWED: &[&str] = &["natm-nic", "natm-clmul"];
    let meta = metadata();
    let members: Vec<&str> = meta["workspace_members"]
        .as_array()
        .expect("workspace members")
        .iter()
        .filter_map(|m| m.as_str())
        .collect();
    let mut seen = 0;
    for p in meta["packages"].as_array().expect("packages") {
        if !members.contains(&p["id"].as_str().expect("id")) {
            continue;
        }
        seen += 1;
        let name = p["name"].as_str().expect("name");
        let manifest = std::fs::read_to_string(p["manifest_path"].as_str().expect("path"))
            .expect("a readable manifest");
        let allows = manifest.contains("unsafe_code = \"allow\"");
        assert_eq!(
            allows,
            ALLOWED.contains(&name),
            "{name}: unsafe is allowed only in {ALLOWED:?}"
        );
        if !allows {
            assert!(
                manifest.contains("[lints]\nworkspace = true"),
                "{name} must take the workspace's lints (unsafe_code = forbid)"
            );
        }
    }
    assert!(seen >= 15, "only {seen} workspace members found");
}

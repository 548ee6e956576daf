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

fn metadata() -> serde_json::Value {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline"])
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

#[test]
fn pure_crates_forbid_unsafe_and_std() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for pure in PURE {
        let lib = std::fs::read_to_string(root.join(pure).join("src/lib.rs")).expect("lib.rs");
        assert!(
            lib.contains("#![forbid(unsafe_code)]"),
            "{pure} must forbid unsafe code"
        );
        assert!(lib.contains("no_std"), "{pure} must build without std");
    }
}

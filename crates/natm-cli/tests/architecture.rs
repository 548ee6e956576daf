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
    "natm-aal",
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

#[test]
fn pure_crates_reach_no_io_crate() {
    let meta = metadata();
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
    // Normal (non-dev, non-build) dependency edges of the resolved graph.
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
    for pure in PURE {
        let root = names
            .iter()
            .find(|(_, n)| *n == pure)
            .map(|(id, _)| *id)
            .unwrap_or_else(|| panic!("{pure} is in the workspace"));
        let mut seen = BTreeSet::new();
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            let name = names[id];
            assert!(
                !FORBIDDEN.contains(&name),
                "pure crate {pure} depends on {name}"
            );
            stack.extend(edges.get(id).into_iter().flatten());
        }
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

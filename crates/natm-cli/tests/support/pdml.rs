//! tshark's PDML, one packet at a time: what the tshark tests and the switched-VC lab test
//! read tshark's verdicts from (`tshark -T pdml`).

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// tshark's expert severity "error" (`PI_ERROR`).
pub const PI_ERROR: &str = "8388608";

/// The fields and protocols tshark reported for one packet.
#[derive(Debug, Default)]
pub struct Packet {
    /// (name, show, showname) of every field.
    pub fields: Vec<(String, String, String)>,
    /// Protocol names, in order.
    pub protos: Vec<String>,
}

impl Packet {
    pub fn show(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|f| f.0 == name)
            .map(|f| f.1.as_str())
    }

    pub fn showname(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|f| f.0 == name)
            .map(|f| f.2.as_str())
    }

    pub fn has_proto(&self, name: &str) -> bool {
        self.protos.iter().any(|p| p == name)
    }

    /// Malformed-packet markers and error-level expert infos.
    pub fn errors(&self) -> Vec<String> {
        let mut e: Vec<String> = self
            .protos
            .iter()
            .filter(|p| p.starts_with("_ws.malformed"))
            .cloned()
            .collect();
        for (i, f) in self.fields.iter().enumerate() {
            if f.0 == "_ws.expert.severity" && f.1 == PI_ERROR {
                let message = self.fields[..i]
                    .iter()
                    .rev()
                    .find(|g| g.0 == "_ws.expert.message")
                    .map_or("?", |g| g.1.as_str());
                e.push(format!("expert error: {message}"));
            }
            if f.0.starts_with("_ws.malformed") {
                e.push(f.2.clone());
            }
        }
        e
    }

    pub fn vc(&self) -> Option<(u16, u16)> {
        Some((
            self.show("atm.vpi")?.parse().ok()?,
            self.show("atm.vci")?.parse().ok()?,
        ))
    }
}

pub fn attr(line: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = line.find(&key)? + key.len();
    let end = line[start..].find('"')? + start;
    Some(
        line[start..end]
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&"),
    )
}

/// tshark's PDML of `file`, read with `options` (`-o` preferences) before `-T pdml`.
pub fn pdml(file: &Path, options: &[&str]) -> String {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(options)
        .args(["-T", "pdml"])
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "tshark failed on {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("PDML is UTF-8")
}

pub fn tshark(file: &Path) -> Vec<Packet> {
    let text = pdml(file, &["-o", "erf.aal5_type:unspecified"]);
    let mut packets = Vec::new();
    let mut current: Option<Packet> = None;
    for line in text.lines() {
        let line = line.trim_start();
        if line.starts_with("<packet>") {
            current = Some(Packet::default());
        } else if line.starts_with("</packet>") {
            packets.extend(current.take());
        } else if let Some(p) = current.as_mut() {
            if line.starts_with("<proto ") {
                p.protos.extend(attr(line, "name"));
            } else if line.starts_with("<field ")
                && let Some(name) = attr(line, "name")
            {
                let show = attr(line, "show").unwrap_or_default();
                let showname = attr(line, "showname").unwrap_or_default();
                p.fields.push((name, show, showname));
            }
        }
    }
    packets
}

//! The switch daemon's TOML configuration.
//!
//! ```toml
//! name = "s1"
//! management = "/run/natm/s1.sock"   # Unix socket for the JSON-lines management protocol
//! wait = "adaptive"                  # or "poll": never sleep; "yield": never sleep, yield when idle
//! cpu = 1                            # optional: pin the daemon to this CPU
//! prefix = "47.0005.80ffe1000000f21a3599"  # optional: the switch's 13-byte address prefix
//!
//! [[port]]
//! id = 1
//! kind = "shm"                       # the link, as natm-link's LinkConfig
//! path = "/run/natm/link1.sock"
//! rate = "oc3"
//! # role = "connect"                 # dial the peer instead of listening (a trunk's far end)
//! # format = "nni"                   # header format on this port (default "uni")
//! # queue_cells = [256, 256, 1024, 4096]   # CBR, rt-VBR, nrt-VBR, UBR
//! # epd_percent = 80
//! # cdvt_us = 1000                   # CDV tolerated on arriving cells, added to every UPC (default 1 ms)
//! # signalling = "network"            # UNI signalling on 0.5: "network" (a host's port, or
//!                                     # the trunk end that assigns VCs), "user", "off" (default)
//!
//! [[route]]                          # calls to addresses with this prefix leave by this port
//! prefix = "47.0005.80ffe1000000f21a3599.0020481a3599"   # longest prefix wins
//! port = 1
//! [[xc]]
//! a = "1:0.100"
//! b = "2:0.100"
//! qos = "ubr"                        # qos(7) text, e.g. "cbr:pcr=1000"
//! upc = "discard"                    # off (default), tag, discard
//! aal5 = true                        # default: whether qos names aal5
//! weight = 1                         # UBR round-robin weight (default 1)
//! category = "rt-vbr"                # cbr, rt-vbr, nrt-vbr, ubr (default: from the class)
//! ```
//!
//! A switch signals when it has a `prefix`; then every `[[route]]` must name a port with
//! signalling on, and a port with signalling needs the prefix. Unknown keys are errors. Every error names the entry (`port 2`, `xc 3`), the key and
//! the line where the TOML has one. A port whose link has a rate (`rate = "oc3"`) also
//! paces the switch's output on it at that rate (rounded down to whole cells/s), so cells
//! wait in the switch's per-category queues (where EPD and priorities apply); the switch's
//! end of such a link emulates only its impairments, not the rate a second time.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::PathBuf;

use natm_core::IdleWait;
use natm_core::addr::AesaPrefix;
use natm_core::{HeaderFormat, Qos};
use natm_link::endpoint::LinkConfig;
use natm_switch::{Category, CrossConnect, Endpoint, PortConfig, PortId, Upc};
use serde::Deserialize;
use toml::Spanned;

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Not TOML, or a top-level key or type is wrong (the text names the line).
    #[error("{0}")]
    Toml(String),
    /// An entry's value is not usable.
    #[error("{entry}{}: `{key}`: {message}", line.map(|l| format!(" (line {l})")).unwrap_or_default())]
    Invalid {
        /// `port 2`, `xc 3` (1-based, in file order) or `management`.
        entry: String,
        /// The key.
        key: &'static str,
        /// The line, where known.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// The configuration file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

/// Which side of the link a port is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Listen for the peer (a host, or a trunk's near end); accept it again after it leaves.
    #[default]
    Listen,
    /// Connect to the peer's listener, and again after it leaves.
    Connect,
}

/// Which side of the UNI a signalling port is (`signalling = "network"` or `"user"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SigSide {
    /// The network side: a host's port, or the trunk end that assigns the VCs.
    Network,
    /// The user side: the other end of a trunk, or a port facing a foreign network.
    User,
}

/// A `[[route]]`: calls to addresses starting with `prefix` leave by `port`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RouteEntry {
    /// The address prefix.
    #[serde(serialize_with = "as_text")]
    pub prefix: AesaPrefix,
    /// The port.
    #[serde(serialize_with = "port_number")]
    pub port: PortId,
}

/// One port: its number, the switch-side settings and the link.
#[derive(Clone, Debug)]
pub struct PortEntry {
    /// The port number.
    pub id: PortId,
    /// Listen or connect.
    pub role: Role,
    /// UNI signalling on the port's VC 0.5, and which side; `None`: off.
    pub signalling: Option<SigSide>,
    /// The switch's settings for it (format, queue limits, EPD; the rate from the link).
    pub switch: PortConfig,
    /// The link.
    pub link: LinkConfig,
}

/// The daemon's configuration. See the [module documentation](self).
#[derive(Clone, Debug)]
pub struct SwitchdConfig {
    /// The switch's name, in status replies.
    pub name: String,
    /// The management socket's path.
    pub management: PathBuf,
    /// Idle behaviour.
    pub wait: IdleWait,
    /// The CPU the daemon pins itself to (`cpu = 1`), if any: a polling switch beside
    /// polling applications wants a CPU of its own, which the scheduler does not keep for it.
    pub cpu: Option<usize>,
    /// The ports, in file order.
    pub ports: Vec<PortEntry>,
    /// Cross-connects made at start, in file order.
    pub xcs: Vec<CrossConnect>,
    /// The switch's address prefix: with one, the switch signals (switched VCs).
    pub prefix: Option<AesaPrefix>,
    /// Static routes, in file order.
    pub routes: Vec<RouteEntry>,
}

/// A configuration file as written (`toml::to_string`), the form
/// [`SwitchdConfig::from_toml`] reads: for a program that starts switch daemons (natm-lab,
/// natm-bench) and writes their files. Optional keys are left out when `None`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ConfigFile {
    /// `name`.
    pub name: String,
    /// `wait`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait: Option<IdleWait>,
    /// `cpu`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<usize>,
    /// `management`.
    pub management: PathBuf,
    /// `prefix`.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "some_as_text"
    )]
    pub prefix: Option<AesaPrefix>,
    /// The `[[port]]` tables.
    #[serde(rename = "port", skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PortFile>,
    /// The `[[xc]]` tables.
    #[serde(rename = "xc", skip_serializing_if = "Vec::is_empty")]
    pub xcs: Vec<XcFile>,
    /// The `[[route]]` tables.
    #[serde(rename = "route", skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteEntry>,
}

/// A `[[port]]` table as written: its id, its role when it dials, and its link's keys.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PortFile {
    /// `id`.
    pub id: u16,
    /// The link (its keys are the port's own, as natm-link's `LinkConfig` writes them).
    #[serde(flatten)]
    pub link: LinkConfig,
    /// `role`, written only for [`Role::Connect`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// `signalling`, written only when on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signalling: Option<SigSide>,
}

/// An `[[xc]]` table as written: typed values, each written as its `Display` text, which
/// [`XcText`] parses back to the same value.
#[derive(Clone, Debug, serde::Serialize)]
pub struct XcFile {
    /// `a`: `PORT:VPI.VCI`.
    #[serde(serialize_with = "as_text")]
    pub a: Endpoint,
    /// `b`: `PORT:VPI.VCI`.
    #[serde(serialize_with = "as_text")]
    pub b: Endpoint,
    /// `qos`, in qos(7) text.
    #[serde(serialize_with = "as_text")]
    pub qos: Qos,
    /// `upc`: off, tag or discard.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "some_as_text"
    )]
    pub upc: Option<Upc>,
    /// `aal5`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aal5: Option<bool>,
}

/// Serialises a value as its `Display` text.
fn as_text<T: std::fmt::Display, S: serde::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// A port as its number.
fn port_number<S: serde::Serializer>(p: &PortId, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u16(p.0)
}

/// [`as_text`] for an optional value (`None` is skipped before this is called).
fn some_as_text<T: std::fmt::Display, S: serde::Serializer>(
    v: &Option<T>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.collect_str(v),
        None => s.serialize_none(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    name: String,
    management: PathBuf,
    #[serde(default)]
    wait: IdleWait,
    #[serde(default)]
    cpu: Option<usize>,
    #[serde(default)]
    port: Vec<RawPort>,
    #[serde(default)]
    xc: Vec<RawXc>,
    #[serde(default)]
    prefix: Option<Spanned<String>>,
    #[serde(default)]
    route: Vec<RawRoute>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    prefix: Spanned<String>,
    port: Spanned<u16>,
}

#[derive(Deserialize)]
struct RawPort {
    id: Spanned<u16>,
    #[serde(flatten)]
    rest: toml::Table,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawXc {
    a: Spanned<String>,
    b: Spanned<String>,
    qos: Spanned<String>,
    #[serde(default)]
    upc: Option<Spanned<String>>,
    #[serde(default)]
    aal5: Option<bool>,
    #[serde(default)]
    weight: Option<Spanned<u32>>,
    #[serde(default)]
    category: Option<Spanned<String>>,
}

/// Parses a category name as the configuration and the management protocol write it.
pub fn parse_category(s: &str) -> Option<Category> {
    match s.to_ascii_lowercase().as_str() {
        "cbr" => Some(Category::Cbr),
        "rt-vbr" => Some(Category::RtVbr),
        "nrt-vbr" => Some(Category::NrtVbr),
        "ubr" => Some(Category::Ubr),
        _ => None,
    }
}

/// The text fields of a cross-connect, as the configuration and the management protocol
/// give them.
#[derive(Clone, Debug, Default)]
pub struct XcText<'a> {
    /// `PORT:VPI.VCI` or `PORT:VPI`.
    pub a: &'a str,
    /// The other end.
    pub b: &'a str,
    /// qos(7) text.
    pub qos: &'a str,
    /// `off`, `tag` or `discard`.
    pub upc: Option<&'a str>,
    /// Whether AAL5 frame discard applies (default: whether the QoS names aal5).
    pub aal5: Option<bool>,
    /// UBR weight.
    pub weight: Option<u32>,
    /// `cbr`, `rt-vbr`, `nrt-vbr` or `ubr`.
    pub category: Option<&'a str>,
}

impl XcText<'_> {
    /// The cross-connect, or the key that is wrong and why.
    pub fn parse(&self) -> Result<CrossConnect, (&'static str, String)> {
        let a: Endpoint = self.a.parse().map_err(|e| ("a", format!("{e}")))?;
        let b: Endpoint = self.b.parse().map_err(|e| ("b", format!("{e}")))?;
        let qos: Qos = self
            .qos
            .parse()
            .map_err(|e| ("qos", format!("{:?}: {e}", self.qos)))?;
        let mut xc = CrossConnect::new(a, b, qos);
        if let Some(u) = self.upc {
            xc.upc = u.parse::<Upc>().map_err(|e| ("upc", format!("{e}")))?;
        }
        if let Some(v) = self.aal5 {
            xc.aal5 = v;
        }
        if let Some(w) = self.weight {
            if w == 0 {
                return Err(("weight", "must be at least 1".into()));
            }
            xc.weight = w;
        }
        if let Some(c) = self.category {
            xc.category = Some(parse_category(c).ok_or_else(|| {
                (
                    "category",
                    format!("{c:?} is not one of cbr, rt-vbr, nrt-vbr, ubr"),
                )
            })?);
        }
        Ok(xc)
    }
}

/// The 1-based line of a byte offset.
fn line_of(text: &str, span: Range<usize>) -> usize {
    text.as_bytes()[..span.start.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The port keys that are the switch's, not the link's.
const PORT_KEYS: [&str; 6] = [
    "role",
    "format",
    "queue_cells",
    "epd_percent",
    "cdvt_us",
    "signalling",
];

/// The cell delay variation a port tolerates unless its `cdvt_us` says otherwise: cells
/// shaped to their PCR by a host's adapter reach the switch in batches (the link's ring
/// drained at each wake-up of this daemon), so policing at CDVT 0 would discard
/// conforming cells. 1 ms covers a sleeping daemon's wake-up on a loaded machine.
pub const DEFAULT_CDVT_US: u64 = 1000;

fn port_entry(text: &str, raw: RawPort) -> Result<PortEntry, ConfigError> {
    let id = PortId(*raw.id.get_ref());
    let line = Some(line_of(text, raw.id.span()));
    let invalid = |key: &'static str, message: String| ConfigError::Invalid {
        entry: format!("port {id}"),
        key,
        line,
        message,
    };
    let mut rest = raw.rest;
    let mut switch = PortConfig {
        cdvt: natm_core::Duration::from_micros(DEFAULT_CDVT_US),
        ..PortConfig::default()
    };
    let mut role = Role::Listen;
    let mut signalling = None;
    for key in PORT_KEYS {
        let Some(v) = rest.remove(key) else { continue };
        match key {
            "role" => {
                role = match v.as_str() {
                    Some("listen") => Role::Listen,
                    Some("connect") => Role::Connect,
                    _ => {
                        return Err(invalid(
                            "role",
                            format!("{v} is not \"listen\" or \"connect\""),
                        ));
                    }
                }
            }
            "signalling" => {
                signalling = match v.as_str() {
                    Some("network") => Some(SigSide::Network),
                    Some("user") => Some(SigSide::User),
                    Some("off") => None,
                    _ => {
                        return Err(invalid(
                            "signalling",
                            format!("{v} is not \"network\", \"user\" or \"off\""),
                        ));
                    }
                }
            }
            "format" => {
                switch.format = match v.as_str() {
                    Some("uni") => HeaderFormat::Uni,
                    Some("nni") => HeaderFormat::Nni,
                    _ => return Err(invalid("format", format!("{v} is not \"uni\" or \"nni\""))),
                }
            }
            "queue_cells" => {
                let q: Option<Vec<u32>> = v.as_array().and_then(|a| {
                    a.iter()
                        .map(|x| x.as_integer().and_then(|i| u32::try_from(i).ok()))
                        .collect()
                });
                match q.as_deref() {
                    Some(&[c, r, n, u]) if [c, r, n, u].iter().all(|&x| x >= 1) => {
                        switch.queue_cells = [c, r, n, u];
                    }
                    _ => {
                        return Err(invalid(
                            "queue_cells",
                            format!("{v} is not four cell counts ≥ 1 (CBR, rt-VBR, nrt-VBR, UBR)"),
                        ));
                    }
                }
            }
            "cdvt_us" => {
                switch.cdvt = v
                    .as_integer()
                    .and_then(|i| u64::try_from(i).ok())
                    .filter(|&us| us <= 10_000_000)
                    .map(natm_core::Duration::from_micros)
                    .ok_or_else(|| invalid("cdvt_us", format!("{v} is not 0..=10000000 µs")))?;
            }
            _ => {
                switch.epd_percent = v
                    .as_integer()
                    .and_then(|i| u8::try_from(i).ok())
                    .filter(|&p| p <= 100)
                    .ok_or_else(|| invalid("epd_percent", format!("{v} is not 0..=100")))?;
            }
        }
    }
    let link: LinkConfig = rest
        .try_into()
        .map_err(|e: toml::de::Error| invalid("link", e.message().to_string()))?;
    switch.rate = link.rate;
    Ok(PortEntry {
        id,
        role,
        signalling,
        switch,
        link,
    })
}

impl SwitchdConfig {
    /// Parses the configuration text. See the [module documentation](self).
    pub fn from_toml(text: &str) -> Result<SwitchdConfig, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Toml(e.to_string()))?;
        if raw.management.as_os_str().is_empty() {
            return Err(ConfigError::Invalid {
                entry: "management".into(),
                key: "management",
                line: None,
                message: "an empty path".into(),
            });
        }
        let mut ports = Vec::new();
        let mut seen = BTreeSet::new();
        for p in raw.port {
            let e = port_entry(text, p)?;
            if !seen.insert(e.id) {
                return Err(ConfigError::Invalid {
                    entry: format!("port {}", e.id),
                    key: "id",
                    line: None,
                    message: "two ports with this id".into(),
                });
            }
            ports.push(e);
        }
        let mut xcs = Vec::new();
        for (i, x) in raw.xc.iter().enumerate() {
            let t = XcText {
                a: x.a.get_ref(),
                b: x.b.get_ref(),
                qos: x.qos.get_ref(),
                upc: x.upc.as_ref().map(|u| u.get_ref().as_str()),
                aal5: x.aal5,
                weight: x.weight.as_ref().map(|w| *w.get_ref()),
                category: x.category.as_ref().map(|c| c.get_ref().as_str()),
            };
            let xc = t.parse().map_err(|(key, message)| {
                let span = match key {
                    "b" => x.b.span(),
                    "qos" => x.qos.span(),
                    "upc" => x.upc.as_ref().map_or(x.a.span(), |u| u.span()),
                    "weight" => x.weight.as_ref().map_or(x.a.span(), |w| w.span()),
                    "category" => x.category.as_ref().map_or(x.a.span(), |c| c.span()),
                    _ => x.a.span(),
                };
                ConfigError::Invalid {
                    entry: format!("xc {}", i + 1),
                    key,
                    line: Some(line_of(text, span)),
                    message,
                }
            })?;
            for (key, end, span) in [("a", xc.a, x.a.span()), ("b", xc.b, x.b.span())] {
                if !seen.contains(&end.port) {
                    return Err(ConfigError::Invalid {
                        entry: format!("xc {}", i + 1),
                        key,
                        line: Some(line_of(text, span)),
                        message: format!("no [[port]] with id {}", end.port),
                    });
                }
            }
            xcs.push(xc);
        }
        let prefix = match &raw.prefix {
            None => None,
            Some(p) => {
                Some(
                    p.get_ref()
                        .parse::<AesaPrefix>()
                        .map_err(|e| ConfigError::Invalid {
                            entry: "prefix".into(),
                            key: "prefix",
                            line: Some(line_of(text, p.span())),
                            message: format!("{:?}: {e}", p.get_ref()),
                        })?,
                )
            }
        };
        if prefix.is_none()
            && let Some(p) = ports.iter().find(|p| p.signalling.is_some())
        {
            return Err(ConfigError::Invalid {
                entry: format!("port {}", p.id),
                key: "signalling",
                line: None,
                message: "signalling needs the switch's `prefix`".into(),
            });
        }
        let mut routes = Vec::new();
        for (i, r) in raw.route.iter().enumerate() {
            let invalid = |key: &'static str, span, message: String| ConfigError::Invalid {
                entry: format!("route {}", i + 1),
                key,
                line: Some(line_of(text, span)),
                message,
            };
            let p = r.prefix.get_ref();
            let route_prefix = p
                .parse::<AesaPrefix>()
                .map_err(|e| invalid("prefix", r.prefix.span(), format!("{p:?}: {e}")))?;
            let port = PortId(*r.port.get_ref());
            match ports.iter().find(|e| e.id == port) {
                None => {
                    return Err(invalid(
                        "port",
                        r.port.span(),
                        format!("no [[port]] with id {port}"),
                    ));
                }
                Some(e) if e.signalling.is_none() => {
                    return Err(invalid(
                        "port",
                        r.port.span(),
                        format!("port {port} does not signal (set its `signalling`)"),
                    ));
                }
                Some(_) => {}
            }
            routes.push(RouteEntry {
                prefix: route_prefix,
                port,
            });
        }
        Ok(SwitchdConfig {
            name: raw.name,
            management: raw.management,
            wait: raw.wait,
            cpu: raw.cpu,
            ports,
            xcs,
            prefix,
            routes,
        })
    }

    /// Reads and parses a configuration file.
    pub fn from_file(path: &std::path::Path) -> Result<SwitchdConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        SwitchdConfig::from_toml(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use natm_core::LineRate;

    const GOOD: &str = r#"
name = "s1"
management = "/tmp/s1.sock"

[[port]]
id = 1
kind = "shm"
path = "/tmp/l1.sock"
rate = "oc3"

[[port]]
id = 2
kind = "tcp"
addr = "127.0.0.1:41002"
role = "connect"
format = "nni"
queue_cells = [10, 20, 30, 40]
epd_percent = 50

[[xc]]
a = "1:0.100"
b = "2:0.200"
qos = "cbr:pcr=1000"
upc = "discard"
aal5 = true
weight = 2
category = "rt-vbr"
"#;

    #[test]
    fn a_full_configuration_parses() {
        let c = SwitchdConfig::from_toml(GOOD).unwrap();
        assert_eq!(c.name, "s1");
        assert_eq!(c.wait, IdleWait::Adaptive);
        assert_eq!(c.ports.len(), 2);
        assert_eq!(c.ports[0].switch.rate, LineRate::OC3);
        assert_eq!(c.ports[0].switch.rate.cells_per_s(), Some(353_207));
        assert_eq!(c.ports[0].role, Role::Listen);
        let p2 = &c.ports[1];
        assert_eq!(
            (
                p2.role,
                p2.switch.format,
                p2.switch.queue_cells,
                p2.switch.epd_percent
            ),
            (Role::Connect, HeaderFormat::Nni, [10, 20, 30, 40], 50)
        );
        assert_eq!(p2.switch.rate, LineRate::Unlimited);
        assert_eq!(p2.link.describe(), "tcp 127.0.0.1:41002, unlimited");
        let x = &c.xcs[0];
        assert_eq!(
            (x.a, x.b),
            (Endpoint::vc(1, 0, 100), Endpoint::vc(2, 0, 200))
        );
        assert_eq!(
            (x.upc, x.aal5, x.weight, x.category),
            (Upc::Discard, true, 2, Some(Category::RtVbr))
        );
    }

    #[test]
    fn errors_name_the_entry_key_and_line() {
        for (from, to, needle) in [
            (
                "qos = \"cbr:pcr=1000\"",
                "qos = \"cbr:pcr=fast\"",
                "xc 1 (line 23): `qos`",
            ),
            (
                "b = \"2:0.200\"",
                "b = \"3:0.200\"",
                "xc 1 (line 22): `b`: no [[port]] with id 3",
            ),
            ("a = \"1:0.100\"", "a = \"1-0.100\"", "xc 1 (line 21): `a`"),
            ("upc = \"discard\"", "upc = \"shoot\"", "`upc`"),
            ("category = \"rt-vbr\"", "category = \"abr\"", "`category`"),
            ("weight = 2", "weight = 0", "`weight`"),
            (
                "role = \"connect\"",
                "role = \"dial\"",
                "port 2 (line 12): `role`",
            ),
            ("format = \"nni\"", "format = \"pni\"", "`format`"),
            (
                "queue_cells = [10, 20, 30, 40]",
                "queue_cells = [1, 2]",
                "`queue_cells`",
            ),
            ("epd_percent = 50", "epd_percent = 101", "`epd_percent`"),
            (
                "addr = \"127.0.0.1:41002\"",
                "addr = \"nowhere\"",
                "port 2 (line 12): `link`",
            ),
            ("rate = \"oc3\"", "rate = \"oc3\"\ncolour = 1", "colour"),
            ("name = \"s1\"", "name = \"s1\"\nspeed = 1", "speed"),
            ("id = 2", "id = 1", "two ports"),
            ("management = \"/tmp/s1.sock\"", "management = ", "line 3"),
        ] {
            assert!(GOOD.contains(from), "{from}");
            let e = SwitchdConfig::from_toml(&GOOD.replacen(from, to, 1))
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{to}: {e}");
        }
    }

    #[test]
    fn a_written_cross_connect_reads_back_as_the_same_values() {
        let qos: Qos = "vbr,aal5:pcr=30000,scr=10000,mbs=40".parse().unwrap();
        let prefix: AesaPrefix = "47.0005.80ffe1000000f21a3599".parse().unwrap();
        let host: AesaPrefix = "47.0005.80ffe1000000f21a3599.0020481a3599".parse().unwrap();
        let file = ConfigFile {
            name: "s1".into(),
            wait: None,
            cpu: None,
            management: "/tmp/s1.sock".into(),
            prefix: Some(prefix),
            ports: [1, 2]
                .map(|id| PortFile {
                    id,
                    link: toml::from_str(&format!("kind = \"shm\"\npath = \"/tmp/l{id}.sock\""))
                        .unwrap(),
                    role: None,
                    signalling: Some(if id == 1 {
                        SigSide::Network
                    } else {
                        SigSide::User
                    }),
                })
                .into(),
            routes: vec![
                RouteEntry {
                    prefix: host,
                    port: PortId(1),
                },
                RouteEntry {
                    prefix: AesaPrefix::ALL,
                    port: PortId(2),
                },
            ],
            xcs: vec![XcFile {
                a: Endpoint::vc(1, 0, 100),
                b: Endpoint::vc(2, 3, 1000),
                qos,
                upc: Some(Upc::Tag),
                aal5: Some(false),
            }],
        };
        let text = toml::to_string(&file).unwrap();
        let c = SwitchdConfig::from_toml(&text).unwrap();
        let x = &c.xcs[0];
        assert_eq!(
            (x.a, x.b, x.qos, x.upc, x.aal5),
            (
                Endpoint::vc(1, 0, 100),
                Endpoint::vc(2, 3, 1000),
                qos,
                Upc::Tag,
                false
            ),
            "{text}"
        );
        assert_eq!(c.prefix, Some(prefix));
        assert_eq!(
            c.ports.iter().map(|p| p.signalling).collect::<Vec<_>>(),
            [Some(SigSide::Network), Some(SigSide::User)]
        );
        assert_eq!(c.routes, file.routes, "{text}");
    }

    #[test]
    fn signalling_settings_that_do_not_fit_are_refused_naming_them() {
        let port = "[[port]]\nid = 1\nkind = \"shm\"\npath = \"/tmp/l1.sock\"\n";
        let head = "name = \"s1\"\nmanagement = \"/tmp/s1.sock\"\n";
        let prefix = "prefix = \"47.0005.80ffe1000000f21a3599\"\n";
        let route = |p: &str, port: u16| format!("[[route]]\nprefix = \"{p}\"\nport = {port}\n");
        for (text, needle) in [
            (
                format!("{head}{port}signalling = \"network\"\n"),
                "needs the switch's `prefix`",
            ),
            (
                format!("{head}{prefix}{port}signalling = \"both\"\n"),
                "port 1 (line 5): `signalling`",
            ),
            (
                format!("{head}{prefix}{port}{}", route("47", 1)),
                "port 1 does not signal",
            ),
            (
                format!(
                    "{head}{prefix}{port}signalling = \"user\"\n{}",
                    route("47", 9)
                ),
                "no [[port]] with id 9",
            ),
            (
                format!(
                    "{head}{prefix}{port}signalling = \"user\"\n{}",
                    route("4x", 1)
                ),
                "route 1 (line 10): `prefix`: \"4x\"",
            ),
            (format!("{head}prefix = \"47..00\"\n{port}"), "prefix"),
        ] {
            let e = SwitchdConfig::from_toml(&text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}

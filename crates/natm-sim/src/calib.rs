//! The calibration file: a host's per-message CPU costs ([`HostCosts`]) as measured on the
//! real adapter by `natm perf calibrate`, so that the simulator's timings rest on
//! measurements and not on guesses.
//!
//! # What each figure means and how it is measured
//!
//! `natm perf calibrate` runs the production data path of a host — an application's
//! natm-nic channel, natm-host's `Driver` around the natm-adapter core, and natm-link's
//! shared-memory cell link — on two threads, one per CPU, and reads each thread's CPU clock
//! (`CLOCK_THREAD_CPUTIME_ID`, so time the thread spent preempted does not count) around
//! batches of SDUs of one size, for sizes from 40 B to 16 KiB taken in rotating rounds (a
//! batch of each size per round, so a change in the machine's load touches every size and
//! no size runs with caches only its own buffers have warmed):
//!
//! * **send** (`send_fixed_ns`, `send_per_byte_ps`): the sending thread posts a batch of
//!   SDUs to its channel, polls its driver until the adapter has segmented every one into
//!   cells on the link, and takes the transmit completions back. CPU time ÷ SDUs in the
//!   batch, median over many batches, per size.
//! * **receive** (`recv_fixed_ns`, `recv_per_byte_ps`): once the batch's cells are all on the
//!   link, the receiving thread polls its driver, which reassembles them straight into the
//!   buffers the application posted, takes each completed SDU and reposts its buffer. CPU
//!   time ÷ SDUs, median over batches, per size.
//! * Each of the two is fitted to `fixed + per_byte · len` over the sizes by least squares
//!   of the relative residuals ([`fit`]; both parts kept non-negative); the per-size medians are kept in the file (`[[fit]]`) so
//!   that a reader can judge the fit.
//! * **wakeup** (`wakeup_ns`): the median latency of `natm perf wakeup`'s eventfd mode, from a
//!   cell published to an idle receiver sleeping on natm-nic's eventfd waiter until that
//!   receiver holds the cell.
//!
//! * **transport** (optional `[transport]`: `send_fixed_ns`, `send_per_byte_ps`,
//!   `recv_fixed_ns`, `recv_per_byte_ps`): natm-transport's own CPU cost per TPDU on top of
//!   the data path's, fitted the same way over TPDU frames of the same sizes: sending is
//!   queueing a one-TPDU message and taking its frame (`send_message` + `poll_transmit`),
//!   receiving is handing the frame in and taking the message (`handle_tpdu` +
//!   `poll_event`), on a best-effort endpoint pair in one thread (no acks, no timers: the
//!   work a guaranteed channel does per TPDU). The `natm` API's admission of a guaranteed
//!   channel holds its rate to the host's per-TPDU budget: the data path's cost of the
//!   frame plus this. Files written before it was measured have no `[transport]` and read
//!   as before.
//!
//! The simulator charges these as [`HostCosts`] documents: one server per host, a send's
//! cost before the SDU reaches the adapter, a receive's after its last cell, the wake-up
//! once when the host was idle.
//!
//! # The file (`format = "natm-calibration-1"`)
//!
//! ```toml
//! format = "natm-calibration-1"
//! measured_on = "Linux 6.8.0; Intel Xeon …; 2 CPUs"   # where it was measured
//! command = "natm perf calibrate --out default.toml"    # what measured it
//! date = "2026-11-24T05:50:00Z"                         # when (UTC)
//!
//! [costs]
//! send_fixed_ns = 900
//! send_per_byte_ps = 120
//! recv_fixed_ns = 1100
//! recv_per_byte_ps = 150
//! wakeup_ns = 30000
//!
//! [transport]      # optional: natm-transport's own cost per TPDU frame
//! send_fixed_ns = 300
//! send_per_byte_ps = 40
//! recv_fixed_ns = 250
//! recv_per_byte_ps = 45
//!
//! [[fit]]          # one per SDU size measured: the medians the costs were fitted to
//! size = 40
//! send_ns = 905.5
//! recv_ns = 1110.0
//! ```
//!
//! Every key is required (but the `[transport]` table) and no other is accepted; integers
//! must be non-negative and at most the bounds below (a figure beyond them is a broken measurement, not a slow host);
//! `[[fit]]` sizes are 1 to 65,535 and increasing. Errors name the field.
//!
//! This module reads, checks and writes the file and fits the line; it does not measure
//! (that is `natm perf calibrate`, which needs the real clock and threads).

use std::fmt::Write as _;
use std::path::Path;

use natm_core::Duration;
use toml::{Table, Value};

use crate::app::HostCosts;

/// The `format` line every calibration file carries.
pub const FORMAT: &str = "natm-calibration-1";
/// Largest fixed cost of a send or a receive accepted: 10 ms.
pub const MAX_FIXED_NS: u64 = 10_000_000;
/// Largest per-byte cost accepted: 1 µs per byte.
pub const MAX_PER_BYTE_PS: u64 = 1_000_000;
/// Largest wake-up accepted: 100 ms.
pub const MAX_WAKEUP_NS: u64 = 100_000_000;
/// Largest per-SDU median accepted in `[[fit]]`: 1 s.
pub const MAX_POINT_NS: f64 = 1e9;
/// Largest SDU size in `[[fit]]`: the AAL5 maximum.
pub const MAX_SIZE: u32 = 65_535;

/// The builtin calibration's text: a measurement on natm's development machine.
const BUILTIN: &str = include_str!("../calibration/default.toml");

/// A calibration: the host costs and where, when and how they were measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// The fitted per-message costs the simulator charges.
    pub costs: HostCosts,
    /// The machine: kernel release, CPU model, CPU count.
    pub measured_on: String,
    /// The exact command that measured it.
    pub command: String,
    /// When, as UTC `YYYY-MM-DDTHH:MM:SSZ` (not checked beyond being a string).
    pub date: String,
    /// The per-size medians the costs were fitted to, by increasing size.
    pub fits: Vec<FitPoint>,
    /// natm-transport's own per-TPDU costs, when they were measured.
    pub transport: Option<TransportCosts>,
}

/// natm-transport's CPU cost per TPDU frame, beside the data path's (the `[transport]`
/// table).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransportCosts {
    /// Fixed cost of sending one TPDU, ns.
    pub send_fixed_ns: u64,
    /// Its cost per frame byte, ps.
    pub send_per_byte_ps: u64,
    /// Fixed cost of receiving one TPDU, ns.
    pub recv_fixed_ns: u64,
    /// Its cost per frame byte, ps.
    pub recv_per_byte_ps: u64,
}

/// One SDU size's measured medians.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FitPoint {
    /// SDU bytes.
    pub size: u32,
    /// Median CPU time of one send, ns.
    pub send_ns: f64,
    /// Median CPU time of one receive, ns.
    pub recv_ns: f64,
}

impl FitPoint {
    /// Measured send time minus the fitted one, ns.
    pub fn send_residual_ns(&self, costs: &HostCosts) -> f64 {
        self.send_ns - line_ns(costs.send_fixed, costs.send_per_byte_ps, self.size)
    }

    /// Measured receive time minus the fitted one, ns.
    pub fn recv_residual_ns(&self, costs: &HostCosts) -> f64 {
        self.recv_ns - line_ns(costs.recv_fixed, costs.recv_per_byte_ps, self.size)
    }
}

fn line_ns(fixed: Duration, per_byte_ps: u64, size: u32) -> f64 {
    fixed.as_nanos() as f64 + per_byte_ps as f64 * f64::from(size) / 1000.0
}

/// A least-squares line `fixed + per_byte · len`, both parts non-negative.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinearFit {
    /// The fixed part, ns.
    pub fixed_ns: f64,
    /// The per-byte part, ps per byte.
    pub per_byte_ps: f64,
}

impl LinearFit {
    /// The fitted time of `len` bytes, ns.
    pub fn at(&self, len: u32) -> f64 {
        self.fixed_ns + self.per_byte_ps * f64::from(len) / 1000.0
    }
}

/// Fits `(size, ns)` points by least squares of the *relative* residuals (each point
/// weighted by 1/ns²), so that a 40-byte SDU's cost is fitted as closely as a 16 KiB one's
/// although it is a hundred times smaller. A negative intercept (costs that grow faster than
/// linearly) is refitted as a line through the origin, a negative slope as a constant: a
/// cost never goes below zero. `None` without at least one finite point.
pub fn fit(points: &[(u32, f64)]) -> Option<LinearFit> {
    // (x, t, weight); a zero time has no relative error to weigh, so it counts as 1 ns.
    let pts: Vec<(f64, f64, f64)> = points
        .iter()
        .filter(|(_, t)| t.is_finite() && *t >= 0.0)
        .map(|&(x, t)| (f64::from(x), t, 1.0 / t.max(1.0).powi(2)))
        .collect();
    if pts.is_empty() {
        return None;
    }
    let sw: f64 = pts.iter().map(|p| p.2).sum();
    let mean_x = pts.iter().map(|p| p.2 * p.0).sum::<f64>() / sw;
    let mean_t = pts.iter().map(|p| p.2 * p.1).sum::<f64>() / sw;
    let sxx: f64 = pts.iter().map(|p| p.2 * (p.0 - mean_x).powi(2)).sum();
    let sxt: f64 = pts
        .iter()
        .map(|p| p.2 * (p.0 - mean_x) * (p.1 - mean_t))
        .sum();
    let (mut a, mut b) = if sxx > 0.0 {
        let b = sxt / sxx;
        (mean_t - b * mean_x, b)
    } else {
        (mean_t, 0.0)
    };
    if b < 0.0 {
        (a, b) = (mean_t, 0.0);
    }
    if a < 0.0 {
        let sxx0: f64 = pts.iter().map(|p| p.2 * p.0 * p.0).sum();
        let sxt0: f64 = pts.iter().map(|p| p.2 * p.0 * p.1).sum();
        b = if sxx0 > 0.0 {
            (sxt0 / sxx0).max(0.0)
        } else {
            0.0
        };
        a = 0.0;
    }
    Some(LinearFit {
        fixed_ns: a.max(0.0),
        per_byte_ps: b.max(0.0) * 1000.0,
    })
}

/// Why a calibration file was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum CalibError {
    /// Not TOML.
    Syntax(String),
    /// The file could not be read.
    Io {
        /// The file.
        path: String,
        /// What the system said.
        message: String,
    },
    /// `format` is not [`FORMAT`].
    Format {
        /// What the file has.
        found: String,
    },
    /// A required key is absent.
    Missing {
        /// The key, with its table (`costs.wakeup_ns`, `fit[2].size`).
        field: String,
    },
    /// A key this format does not have (a typo would otherwise be ignored).
    Unknown {
        /// The key.
        field: String,
    },
    /// A key of the wrong TOML type.
    Type {
        /// The key.
        field: String,
        /// What it should be.
        expected: &'static str,
    },
    /// A negative cost or size.
    Negative {
        /// The key.
        field: String,
        /// Its value, as written.
        value: String,
    },
    /// A value beyond its sane bound.
    TooLarge {
        /// The key.
        field: String,
        /// Its value, as written.
        value: String,
        /// The bound.
        max: String,
    },
    /// A size of zero, or not after the previous point's.
    Size {
        /// The key.
        field: String,
        /// The size.
        value: i64,
        /// What is wrong.
        why: &'static str,
    },
}

impl core::fmt::Display for CalibError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CalibError::Syntax(m) => write!(f, "not TOML: {m}"),
            CalibError::Io { path, message } => write!(f, "{path}: {message}"),
            CalibError::Format { found } => write!(f, "format {found:?}: expected {FORMAT:?}"),
            CalibError::Missing { field } => write!(f, "{field}: missing"),
            CalibError::Unknown { field } => write!(f, "{field}: not a key of {FORMAT}"),
            CalibError::Type { field, expected } => write!(f, "{field}: expected {expected}"),
            CalibError::Negative { field, value } => write!(f, "{field}: {value} is negative"),
            CalibError::TooLarge { field, value, max } => {
                write!(f, "{field}: {value} is more than {max}")
            }
            CalibError::Size { field, value, why } => write!(f, "{field}: {value} {why}"),
        }
    }
}

impl std::error::Error for CalibError {}

/// A table's keys, taken one by one so that what is left over can be refused.
struct Fields<'a> {
    table: &'a Table,
    prefix: String,
    seen: Vec<&'static str>,
}

impl<'a> Fields<'a> {
    fn new(table: &'a Table, prefix: &str) -> Fields<'a> {
        Fields {
            table,
            prefix: prefix.to_string(),
            seen: Vec::new(),
        }
    }

    fn name(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// A key that may be absent.
    fn optional(&mut self, key: &'static str) -> Option<&'a Value> {
        self.seen.push(key);
        self.table.get(key)
    }

    fn get(&mut self, key: &'static str) -> Result<&'a Value, CalibError> {
        self.seen.push(key);
        self.table.get(key).ok_or_else(|| CalibError::Missing {
            field: self.name(key),
        })
    }

    fn string(&mut self, key: &'static str) -> Result<String, CalibError> {
        match self.get(key)? {
            Value::String(s) => Ok(s.clone()),
            _ => Err(CalibError::Type {
                field: self.name(key),
                expected: "a string",
            }),
        }
    }

    fn table(&mut self, key: &'static str) -> Result<&'a Table, CalibError> {
        match self.get(key)? {
            Value::Table(t) => Ok(t),
            _ => Err(CalibError::Type {
                field: self.name(key),
                expected: "a table",
            }),
        }
    }

    /// A whole number in `0..=max`.
    fn uint(&mut self, key: &'static str, max: u64) -> Result<u64, CalibError> {
        let field = self.name(key);
        let v = match self.get(key)? {
            Value::Integer(v) => *v,
            _ => {
                return Err(CalibError::Type {
                    field,
                    expected: "a whole number",
                });
            }
        };
        let u = u64::try_from(v).map_err(|_| CalibError::Negative {
            field: field.clone(),
            value: v.to_string(),
        })?;
        if u > max {
            return Err(CalibError::TooLarge {
                field,
                value: v.to_string(),
                max: max.to_string(),
            });
        }
        Ok(u)
    }

    /// A finite number (integer or float) in `0..=max`.
    fn real(&mut self, key: &'static str, max: f64) -> Result<f64, CalibError> {
        let field = self.name(key);
        let v = match self.get(key)? {
            Value::Integer(v) => *v as f64,
            Value::Float(v) if v.is_finite() => *v,
            _ => {
                return Err(CalibError::Type {
                    field,
                    expected: "a finite number",
                });
            }
        };
        if v < 0.0 {
            return Err(CalibError::Negative {
                field,
                value: v.to_string(),
            });
        }
        if v > max {
            return Err(CalibError::TooLarge {
                field,
                value: v.to_string(),
                max: max.to_string(),
            });
        }
        Ok(v)
    }

    /// Refuses any key not taken.
    fn done(self) -> Result<(), CalibError> {
        match self.table.keys().find(|k| !self.seen.contains(&k.as_str())) {
            Some(k) => Err(CalibError::Unknown {
                field: self.name(k),
            }),
            None => Ok(()),
        }
    }
}

impl Calibration {
    /// Parses and checks a calibration file's text.
    pub fn parse(text: &str) -> Result<Calibration, CalibError> {
        let root: Table = text
            .parse()
            .map_err(|e: toml::de::Error| CalibError::Syntax(e.message().to_string()))?;
        let mut f = Fields::new(&root, "");
        let format = f.string("format")?;
        if format != FORMAT {
            return Err(CalibError::Format { found: format });
        }
        let measured_on = f.string("measured_on")?;
        let command = f.string("command")?;
        let date = f.string("date")?;

        let mut c = Fields::new(f.table("costs")?, "costs.");
        let costs = HostCosts {
            send_fixed: Duration::from_nanos(c.uint("send_fixed_ns", MAX_FIXED_NS)?),
            send_per_byte_ps: c.uint("send_per_byte_ps", MAX_PER_BYTE_PS)?,
            recv_fixed: Duration::from_nanos(c.uint("recv_fixed_ns", MAX_FIXED_NS)?),
            recv_per_byte_ps: c.uint("recv_per_byte_ps", MAX_PER_BYTE_PS)?,
            wakeup: Duration::from_nanos(c.uint("wakeup_ns", MAX_WAKEUP_NS)?),
        };
        c.done()?;

        let transport = match f.optional("transport") {
            None => None,
            Some(Value::Table(t)) => {
                let mut t = Fields::new(t, "transport.");
                let costs = TransportCosts {
                    send_fixed_ns: t.uint("send_fixed_ns", MAX_FIXED_NS)?,
                    send_per_byte_ps: t.uint("send_per_byte_ps", MAX_PER_BYTE_PS)?,
                    recv_fixed_ns: t.uint("recv_fixed_ns", MAX_FIXED_NS)?,
                    recv_per_byte_ps: t.uint("recv_per_byte_ps", MAX_PER_BYTE_PS)?,
                };
                t.done()?;
                Some(costs)
            }
            Some(_) => {
                return Err(CalibError::Type {
                    field: "transport".into(),
                    expected: "a table",
                });
            }
        };

        let points = match f.get("fit")? {
            Value::Array(a) => a,
            _ => {
                return Err(CalibError::Type {
                    field: "fit".into(),
                    expected: "an array of tables ([[fit]])",
                });
            }
        };
        let mut fits = Vec::with_capacity(points.len());
        for (i, p) in points.iter().enumerate() {
            let Value::Table(t) = p else {
                return Err(CalibError::Type {
                    field: format!("fit[{i}]"),
                    expected: "a table",
                });
            };
            let mut pf = Fields::new(t, &format!("fit[{i}]."));
            let size = pf.uint("size", u64::from(MAX_SIZE))? as u32;
            let after = fits.last().map_or(0, |p: &FitPoint| p.size);
            if size == 0 || size <= after {
                return Err(CalibError::Size {
                    field: format!("fit[{i}].size"),
                    value: i64::from(size),
                    why: if size == 0 {
                        "is zero"
                    } else {
                        "is not larger than the previous point's"
                    },
                });
            }
            let send_ns = pf.real("send_ns", MAX_POINT_NS)?;
            let recv_ns = pf.real("recv_ns", MAX_POINT_NS)?;
            pf.done()?;
            fits.push(FitPoint {
                size,
                send_ns,
                recv_ns,
            });
        }
        f.done()?;
        Ok(Calibration {
            costs,
            measured_on,
            command,
            date,
            fits,
            transport,
        })
    }

    /// Reads and checks a calibration file.
    pub fn load(path: impl AsRef<Path>) -> Result<Calibration, CalibError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| CalibError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Calibration::parse(&text)
    }

    /// The calibration shipped with natm (`crates/natm-sim/calibration/default.toml`),
    /// measured on natm's development machine.
    pub fn builtin() -> Calibration {
        // A test parses the shipped file, so this cannot fail in a built crate.
        Calibration::parse(BUILTIN).unwrap_or_else(|e| {
            panic!("the builtin calibration (calibration/default.toml) is refused: {e}")
        })
    }

    /// The file's text, which [`Calibration::parse`] reads back to an equal value.
    pub fn to_toml(&self) -> String {
        let quote = |s: &str| Value::String(s.to_string()).to_string();
        let c = &self.costs;
        let mut out = String::new();
        out.push_str(
            "# natm host calibration: per-message CPU costs of the real adapter path, measured\n\
             # by `natm perf calibrate` (see natm-sim's calib module for what each figure is).\n",
        );
        let _ = writeln!(out, "format = {}", quote(FORMAT));
        let _ = writeln!(out, "measured_on = {}", quote(&self.measured_on));
        let _ = writeln!(out, "command = {}", quote(&self.command));
        let _ = writeln!(out, "date = {}", quote(&self.date));
        if self.fits.is_empty() {
            // Before [costs]: a key after a table header belongs to that table.
            out.push_str("fit = []\n");
        }
        let _ = writeln!(out, "\n[costs]");
        let _ = writeln!(out, "send_fixed_ns = {}", c.send_fixed.as_nanos());
        let _ = writeln!(out, "send_per_byte_ps = {}", c.send_per_byte_ps);
        let _ = writeln!(out, "recv_fixed_ns = {}", c.recv_fixed.as_nanos());
        let _ = writeln!(out, "recv_per_byte_ps = {}", c.recv_per_byte_ps);
        let _ = writeln!(out, "wakeup_ns = {}", c.wakeup.as_nanos());
        if let Some(t) = &self.transport {
            let _ = writeln!(out, "\n[transport]");
            let _ = writeln!(out, "send_fixed_ns = {}", t.send_fixed_ns);
            let _ = writeln!(out, "send_per_byte_ps = {}", t.send_per_byte_ps);
            let _ = writeln!(out, "recv_fixed_ns = {}", t.recv_fixed_ns);
            let _ = writeln!(out, "recv_per_byte_ps = {}", t.recv_per_byte_ps);
        }
        for p in &self.fits {
            let _ = writeln!(out, "\n[[fit]]");
            let _ = writeln!(out, "size = {}", p.size);
            let _ = writeln!(out, "send_ns = {}", float(p.send_ns));
            let _ = writeln!(out, "recv_ns = {}", float(p.recv_ns));
        }
        out
    }
}

/// A float TOML reads back as the same value (Rust's shortest round-trip form, with a
/// decimal point so that it stays a float).
fn float(v: f64) -> String {
    let s = format!("{v:?}");
    if s.contains(['.', 'e', 'E']) || !v.is_finite() {
        s
    } else {
        format!("{s}.0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Calibration {
        Calibration {
            costs: HostCosts {
                send_fixed: Duration::from_nanos(812),
                send_per_byte_ps: 97,
                recv_fixed: Duration::from_nanos(1033),
                recv_per_byte_ps: 140,
                wakeup: Duration::from_nanos(41_250),
            },
            measured_on: "Linux 6.8.0; \"Quoted\" CPU \\ model; 2 CPUs".into(),
            command: "natm perf calibrate --out 'a b.toml'".into(),
            date: "2026-11-24T05:50:00Z".into(),
            fits: vec![
                FitPoint {
                    size: 40,
                    send_ns: 815.25,
                    recv_ns: 1040.0,
                },
                FitPoint {
                    size: 16_384,
                    send_ns: 2401.125,
                    recv_ns: 3330.0 + 1.0 / 3.0,
                },
            ],
            transport: Some(TransportCosts {
                send_fixed_ns: 301,
                send_per_byte_ps: 41,
                recv_fixed_ns: 252,
                recv_per_byte_ps: 43,
            }),
        }
    }

    #[test]
    fn to_toml_reads_back_equal() {
        let c = sample();
        assert_eq!(Calibration::parse(&c.to_toml()), Ok(c.clone()));
        let empty = Calibration {
            fits: Vec::new(),
            transport: None,
            ..c
        };
        assert_eq!(Calibration::parse(&empty.to_toml()), Ok(empty));
    }

    #[test]
    fn a_file_without_transport_costs_still_reads() {
        let c = Calibration {
            transport: None,
            ..sample()
        };
        let text = c.to_toml();
        assert!(!text.contains("[transport]"));
        assert_eq!(Calibration::parse(&text), Ok(c));
        assert_eq!(
            Calibration::builtin().transport,
            None,
            "written before it was measured"
        );
    }

    #[test]
    fn the_builtin_calibration_parses_and_is_a_measurement() {
        let b = Calibration::parse(BUILTIN).expect("default.toml parses");
        assert_eq!(Calibration::builtin(), b);
        assert!(b.costs.send_fixed > Duration::ZERO);
        assert!(b.costs.recv_fixed > Duration::ZERO);
        assert!(b.costs.wakeup > Duration::ZERO);
        assert!(b.fits.len() >= 2, "the per-size medians are kept");
        assert!(b.command.contains("perf calibrate"));
    }

    /// `sample()`'s text with one line replaced.
    fn with(line_start: &str, replacement: &str) -> String {
        let text = sample().to_toml();
        assert!(text.lines().any(|l| l.starts_with(line_start)));
        text.lines()
            .map(|l| {
                if l.starts_with(line_start) {
                    replacement
                } else {
                    l
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn field_of(e: &CalibError) -> Option<&str> {
        match e {
            CalibError::Missing { field }
            | CalibError::Unknown { field }
            | CalibError::Type { field, .. }
            | CalibError::Negative { field, .. }
            | CalibError::TooLarge { field, .. }
            | CalibError::Size { field, .. } => Some(field),
            _ => None,
        }
    }

    #[test]
    fn every_bad_field_is_refused_by_name() {
        let cases = [
            ("send_fixed_ns", "", "costs.send_fixed_ns"),
            ("wakeup_ns", "wakeup_ns = -5", "costs.wakeup_ns"),
            (
                "recv_per_byte_ps",
                "recv_per_byte_ps = 5000000",
                "costs.recv_per_byte_ps",
            ),
            (
                "recv_fixed_ns",
                "recv_fixed_ns = 1.5",
                "costs.recv_fixed_ns",
            ),
            (
                "send_per_byte_ps",
                "send_per_byte_ps = 3\nsend_per_byte = 3",
                "costs.send_per_byte",
            ),
            ("measured_on", "measured_on = 3", "measured_on"),
            ("date", "", "date"),
            ("size = 40", "size = 0", "fit[0].size"),
            ("size = 16384", "size = 40", "fit[1].size"),
            ("send_ns = 815.25", "send_ns = -1.0", "fit[0].send_ns"),
            (
                "recv_per_byte_ps = 43",
                "recv_per_byte_ps = -43",
                "transport.recv_per_byte_ps",
            ),
            ("send_fixed_ns = 301", "", "transport.send_fixed_ns"),
            (
                "recv_fixed_ns = 252",
                "recv_fixed_ns = 252\nwake = 1",
                "transport.wake",
            ),
            ("recv_ns = 1040.0", "recv_ns = nan", "fit[0].recv_ns"),
            ("recv_ns = 1040.0", "recv_ns = 2e9", "fit[0].recv_ns"),
        ];
        for (line, replacement, field) in cases {
            let e = Calibration::parse(&with(line, replacement)).unwrap_err();
            assert_eq!(field_of(&e), Some(field), "{line} -> {replacement}: {e}");
            assert!(e.to_string().starts_with(field), "{e}");
        }
    }

    #[test]
    fn wrong_format_and_non_toml_are_refused() {
        let e = Calibration::parse(&with("format", "format = \"natm-calibration-2\"")).unwrap_err();
        assert_eq!(
            e,
            CalibError::Format {
                found: "natm-calibration-2".into()
            }
        );
        assert!(matches!(
            Calibration::parse("costs = ["),
            Err(CalibError::Syntax(_))
        ));
        let e = Calibration::load("/nonexistent/natm-calibration.toml").unwrap_err();
        assert!(matches!(e, CalibError::Io { .. }), "{e}");
    }

    #[test]
    fn fit_recovers_a_line_and_never_goes_negative() {
        let pts: Vec<(u32, f64)> = [40u32, 1000, 4000, 16_384]
            .iter()
            .map(|&x| (x, 500.0 + 0.25 * f64::from(x)))
            .collect();
        let f = fit(&pts).unwrap();
        assert!((f.fixed_ns - 500.0).abs() < 1e-6, "{f:?}");
        assert!((f.per_byte_ps - 250.0).abs() < 1e-6, "{f:?}");
        assert!((f.at(2000) - 1000.0).abs() < 1e-6);
        // Convex costs would give a negative intercept: refitted through the origin.
        let convex: Vec<(u32, f64)> = [100u32, 200, 400]
            .iter()
            .map(|&x| (x, f64::from(x) * f64::from(x) / 100.0))
            .collect();
        let f = fit(&convex).unwrap();
        assert_eq!(f.fixed_ns, 0.0);
        assert!(f.per_byte_ps > 0.0);
        // Falling costs would give a negative slope: a constant.
        let f = fit(&[(40, 900.0), (4000, 700.0)]).unwrap();
        assert_eq!(f.per_byte_ps, 0.0);
        assert!(f.fixed_ns > 700.0 && f.fixed_ns < 900.0, "{f:?}");
        // Relative weighting: one noisy large size does not drag the small sizes' fit.
        let mut pts: Vec<(u32, f64)> = [40u32, 100, 256, 512]
            .iter()
            .map(|&x| (x, 1000.0 + f64::from(x)))
            .collect();
        pts.push((16_384, 1.3 * (1000.0 + 16_384.0)));
        let f = fit(&pts).unwrap();
        assert!((f.at(40) - 1040.0).abs() / 1040.0 < 0.1, "{f:?}");
        assert_eq!(fit(&[]), None);
    }

    proptest::proptest! {
        #[test]
        fn any_valid_calibration_reads_back_equal(
            costs in (0..=MAX_FIXED_NS, 0..=MAX_PER_BYTE_PS, 0..=MAX_FIXED_NS,
                      0..=MAX_PER_BYTE_PS, 0..=MAX_WAKEUP_NS),
            text in "\\PC{0,40}",
            sizes in proptest::collection::btree_set(1..=MAX_SIZE, 0..12),
            ns in proptest::collection::vec((0.0..MAX_POINT_NS, 0.0..MAX_POINT_NS), 12),
        ) {
            let c = Calibration {
                costs: HostCosts {
                    send_fixed: Duration::from_nanos(costs.0),
                    send_per_byte_ps: costs.1,
                    recv_fixed: Duration::from_nanos(costs.2),
                    recv_per_byte_ps: costs.3,
                    wakeup: Duration::from_nanos(costs.4),
                },
                measured_on: text.clone(),
                command: format!("natm perf calibrate {text}"),
                date: text,
                fits: sizes
                    .iter()
                    .zip(&ns)
                    .map(|(&size, &(send_ns, recv_ns))| FitPoint { size, send_ns, recv_ns })
                    .collect(),
                transport: (costs.0 % 2 == 0).then_some(TransportCosts {
                    send_fixed_ns: costs.2,
                    send_per_byte_ps: costs.1,
                    recv_fixed_ns: costs.0,
                    recv_per_byte_ps: costs.3,
                }),
            };
            proptest::prop_assert_eq!(Calibration::parse(&c.to_toml()), Ok(c));
        }
    }

    #[test]
    fn residuals_are_measured_minus_fitted() {
        let c = sample();
        let p = c.fits[0];
        let fitted_send = 812.0 + 97.0 * 40.0 / 1000.0;
        assert!((p.send_residual_ns(&c.costs) - (815.25 - fitted_send)).abs() < 1e-9);
        let fitted_recv = 1033.0 + 140.0 * 40.0 / 1000.0;
        assert!((p.recv_residual_ns(&c.costs) - (1040.0 - fitted_recv)).abs() < 1e-9);
    }
}

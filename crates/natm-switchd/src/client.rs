//! A client of the management socket, for the CLI and tests: one request, one reply
//! ([`request`]), or a capture stream ([`capture`]).

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

/// Why a management request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The socket could not be reached.
    #[error("{path}: connect: {source}")]
    Connect {
        /// The socket path.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// Writing the request or reading the reply failed (a timeout is `WouldBlock` or
    /// `TimedOut`).
    #[error("{path}: {source}")]
    Io {
        /// The socket path.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The daemon closed the connection before a whole reply.
    #[error("{path}: the daemon closed the connection without a reply")]
    Closed {
        /// The socket path.
        path: PathBuf,
    },
    /// The reply was not JSON.
    #[error("{path}: reply is not JSON ({error}): {line:?}")]
    BadReply {
        /// The socket path.
        path: PathBuf,
        /// The parse error.
        error: String,
        /// The line.
        line: String,
    },
}

fn open(path: &Path, timeout: Duration) -> Result<UnixStream, ClientError> {
    let s = UnixStream::connect(path).map_err(|source| ClientError::Connect {
        path: path.to_path_buf(),
        source,
    })?;
    let t = Some(timeout.max(Duration::from_millis(1)));
    s.set_read_timeout(t)
        .and_then(|()| s.set_write_timeout(t))
        .map_err(|source| ClientError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(s)
}

fn read_json(path: &Path, r: &mut BufReader<UnixStream>) -> Result<Value, ClientError> {
    let mut line = String::new();
    let n = r.read_line(&mut line).map_err(|source| ClientError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if n == 0 || !line.ends_with('\n') {
        return Err(ClientError::Closed {
            path: path.to_path_buf(),
        });
    }
    serde_json::from_str(&line).map_err(|e| ClientError::BadReply {
        path: path.to_path_buf(),
        error: e.to_string(),
        line: line.trim_end().to_string(),
    })
}

/// Sends one request to the daemon at `path` and returns its reply (which may be
/// `{"ok":false,"error":…}`: that is a reply, not a `ClientError`). Each read and write
/// waits at most `timeout`.
pub fn request(path: &Path, req: &Value, timeout: Duration) -> Result<Value, ClientError> {
    let mut s = open(path, timeout)?;
    let mut line = req.to_string();
    line.push('\n');
    s.write_all(line.as_bytes())
        .map_err(|source| ClientError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    read_json(path, &mut BufReader::new(s))
}

/// A cell from a capture stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapturedCell {
    /// Nanoseconds since the Unix epoch.
    pub t_ns: u64,
    /// Sent out of the port (`true`) or received on it.
    pub out: bool,
    /// The cell, HEC included.
    pub cell: [u8; 53],
}

/// A capture stream: the daemon sends one line per cell until this is dropped.
pub struct Capture {
    path: PathBuf,
    reader: BufReader<UnixStream>,
}

/// Starts capturing cells on `port` (only VC `vc`, `"VPI.VCI"`, if given) of the daemon at
/// `path`. The daemon's refusal is [`ClientError::BadReply`] with its error text.
pub fn capture(
    path: &Path,
    port: u16,
    vc: Option<&str>,
    timeout: Duration,
) -> Result<Capture, ClientError> {
    let mut s = open(path, timeout)?;
    let mut req = json!({"op": "capture", "port": port});
    if let Some(vc) = vc {
        req["vc"] = json!(vc);
    }
    let mut line = req.to_string();
    line.push('\n');
    s.write_all(line.as_bytes())
        .map_err(|source| ClientError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    let mut reader = BufReader::new(s);
    let reply = read_json(path, &mut reader)?;
    if reply.get("ok") != Some(&Value::Bool(true)) {
        return Err(ClientError::BadReply {
            path: path.to_path_buf(),
            error: "capture refused".into(),
            line: reply.to_string(),
        });
    }
    Ok(Capture {
        path: path.to_path_buf(),
        reader,
    })
}

impl Capture {
    /// The next captured cell, waiting at most the timeout given to [`capture`].
    pub fn next_cell(&mut self) -> Result<CapturedCell, ClientError> {
        let v = read_json(&self.path, &mut self.reader)?;
        let bad = |error: &str| ClientError::BadReply {
            path: self.path.clone(),
            error: error.into(),
            line: v.to_string(),
        };
        let t_ns = v
            .get("t_ns")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("no t_ns"))?;
        let out = match v.get("dir").and_then(Value::as_str) {
            Some("out") => true,
            Some("in") => false,
            _ => return Err(bad("dir is not in or out")),
        };
        let hex = v
            .get("cell")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no cell"))?;
        let mut cell = [0u8; 53];
        if hex.len() != 106 || !hex.is_ascii() {
            return Err(bad("cell is not 106 hex digits"));
        }
        for (i, b) in cell.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
                .map_err(|_| bad("cell is not hex"))?;
        }
        Ok(CapturedCell { t_ns, out, cell })
    }
}

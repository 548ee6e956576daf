//! A client of the management socket, for the CLI, the lab and tests: a [`Client`] has one
//! typed function per request ([`Client::status`], [`Client::connect`],
//! [`Client::disconnect`], [`Client::capture`], [`Client::shutdown`]), each on a
//! connection of its own; a refusal is [`ClientError::Refused`] with the daemon's typed
//! [`Refusal`].

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use natm_proto::switchd::{self as proto, CaptureLine};
/// The protocol's types and line codec, so callers need no other dependency.
pub use natm_proto::switchd::{
    CaptureDir, Category, Connect, ConnectionStatus, DirCounters, ErrorKind, LaneStatus,
    LinkCounters, PortCounters, PortStatus, QueueDepth, Refusal, Request, Response, SwitchStatus,
    Upc, decode_response, encode_request,
};

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
    /// The reply was not a response of the protocol.
    #[error("{path}: reply is not a response ({error}): {line:?}")]
    BadReply {
        /// The socket path.
        path: PathBuf,
        /// Why it is not.
        error: String,
        /// The line.
        line: String,
    },
    /// The daemon refused the request.
    #[error("{path}: {refusal}")]
    Refused {
        /// The socket path.
        path: PathBuf,
        /// What it said.
        refusal: Refusal,
    },
    /// The daemon answered with a response that does not answer the request.
    #[error("{path}: a {got} response to a {asked} request")]
    Unexpected {
        /// The socket path.
        path: PathBuf,
        /// The request's `"op"`.
        asked: &'static str,
        /// The response's `"op"`.
        got: &'static str,
    },
}

impl ClientError {
    /// The daemon's refusal, if that is what this is.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            ClientError::Refused { refusal, .. } => Some(refusal),
            _ => None,
        }
    }
}

/// The management socket of one switch daemon. Each request opens a connection of its
/// own; each read and write on it waits at most the timeout.
#[derive(Clone, Debug)]
pub struct Client {
    path: PathBuf,
    timeout: Duration,
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

fn read_line(path: &Path, r: &mut BufReader<UnixStream>) -> Result<String, ClientError> {
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
    Ok(line)
}

fn bad_reply(path: &Path, error: impl ToString, line: &str) -> ClientError {
    ClientError::BadReply {
        path: path.to_path_buf(),
        error: error.to_string(),
        line: line.trim_end().to_string(),
    }
}

impl Client {
    /// The daemon whose management socket is `path`, asked with `timeout` per read and
    /// write.
    pub fn new(path: impl Into<PathBuf>, timeout: Duration) -> Client {
        Client {
            path: path.into(),
            timeout,
        }
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sends `req` on a new connection and returns the connection, ready for the reply.
    fn send(&self, req: &Request) -> Result<BufReader<UnixStream>, ClientError> {
        let mut s = open(&self.path, self.timeout)?;
        s.write_all(proto::encode_request(req).as_bytes())
            .map_err(|source| ClientError::Io {
                path: self.path.clone(),
                source,
            })?;
        Ok(BufReader::new(s))
    }

    /// Reads one response; a refusal is [`ClientError::Refused`].
    fn receive(&self, r: &mut BufReader<UnixStream>) -> Result<Response, ClientError> {
        let line = read_line(&self.path, r)?;
        match proto::decode_response(line.as_bytes()) {
            Ok(Response::Error(refusal)) => Err(ClientError::Refused {
                path: self.path.clone(),
                refusal,
            }),
            Ok(response) => Ok(response),
            Err(e) => Err(bad_reply(&self.path, e, &line)),
        }
    }

    /// Sends one request and returns the daemon's response to it (never
    /// [`Response::Error`]: that is [`ClientError::Refused`]).
    pub fn request(&self, req: &Request) -> Result<Response, ClientError> {
        let mut r = self.send(req)?;
        self.receive(&mut r)
    }

    fn unexpected(&self, asked: &'static str, got: &Response) -> ClientError {
        ClientError::Unexpected {
            path: self.path.clone(),
            asked,
            got: got.op(),
        }
    }

    /// The switch's state.
    pub fn status(&self) -> Result<SwitchStatus, ClientError> {
        match self.request(&Request::Status)? {
            Response::Status(s) => Ok(s),
            other => Err(self.unexpected("status", &other)),
        }
    }

    /// Makes a cross-connect; returns its id (`SLOT.GENERATION`).
    pub fn connect(&self, xc: &Connect) -> Result<String, ClientError> {
        match self.request(&Request::Connect(xc.clone()))? {
            Response::Connected { id } => Ok(id),
            other => Err(self.unexpected("connect", &other)),
        }
    }

    /// Removes cross-connect `id` (`SLOT.GENERATION`).
    pub fn disconnect(&self, id: &str) -> Result<(), ClientError> {
        match self.request(&Request::Disconnect { id: id.into() })? {
            Response::Disconnected => Ok(()),
            other => Err(self.unexpected("disconnect", &other)),
        }
    }

    /// Stops the daemon.
    pub fn shutdown(&self) -> Result<(), ClientError> {
        match self.request(&Request::Shutdown)? {
            Response::ShuttingDown => Ok(()),
            other => Err(self.unexpected("shutdown", &other)),
        }
    }

    /// Starts capturing cells on `port` (only VC `vc`, `"VPI.VCI"`, if given). Each
    /// [`Capture::next_cell`] waits at most the timeout.
    pub fn capture(&self, port: u16, vc: Option<&str>) -> Result<Capture, ClientError> {
        let mut reader = self.send(&Request::Capture {
            port,
            vc: vc.map(str::to_string),
        })?;
        match self.receive(&mut reader)? {
            Response::Capturing { unseen, .. } => Ok(Capture {
                path: self.path.clone(),
                reader,
                unseen,
            }),
            other => Err(self.unexpected("capture", &other)),
        }
    }
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
    unseen: Vec<String>,
}

impl Capture {
    /// The VCs (`VPI.VCI`) this capture cannot see: spliced between two applications'
    /// lanes when it began, their cells bypass the switch.
    pub fn unseen(&self) -> &[String] {
        &self.unseen
    }

    /// The next captured cell, waiting at most the client's timeout.
    pub fn next_cell(&mut self) -> Result<CapturedCell, ClientError> {
        let line = read_line(&self.path, &mut self.reader)?;
        let c: CaptureLine =
            serde_json::from_str(&line).map_err(|e| bad_reply(&self.path, e, &line))?;
        Ok(CapturedCell {
            t_ns: c.t_ns,
            out: c.dir == CaptureDir::Out,
            cell: c.cell,
        })
    }
}

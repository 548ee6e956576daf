//! The switch daemon's management protocol: JSON lines on a Unix stream socket.
//!
//! A client writes one [`Request`] per line ([`encode_request`]); the daemon answers each
//! with one [`Response`] line, in order ([`encode_response`]). A request names its
//! operation in `"op"`; a response carries `"ok"` (whether it is not an
//! [`Response::Error`]) and `"op"` (its variant), then its fields:
//!
//! ```text
//! → {"op":"connect","a":"1:0.101","b":"2:0.101","qos":"cbr:pcr=1000"}
//! ← {"ok":true,"op":"connected","id":"3.1"}
//! → {"op":"disconnect","id":"banana"}
//! ← {"ok":false,"op":"error","kind":"bad_request","error":"\"id\": …"}
//! ```
//!
//! A line the daemon cannot take as a request ([`decode_request`]) gets an
//! [`Response::Error`] whose [`ErrorKind`] says how it failed (not JSON, no `"op"`, an
//! unknown one, a field missing or of the wrong type), and the connection stays usable.
//! An operation with fields refuses unknown ones (a misspelt `"wieght"`); one without
//! (`status`, `shutdown`) takes no notice of them.
//!
//! After [`Response::Capturing`] the daemon writes one [`CaptureLine`] per cell seen on the
//! port until the client closes the connection.
//!
//! The texts inside requests (`PORT:VPI.VCI` ends, qos(7), `SLOT.GENERATION` ids, `VPI.VCI`)
//! are the switch configuration's text formats and stay text here: the daemon parses them
//! with its configuration's parsers, and its refusal names the field that did not parse.

use std::fmt;

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

/// A request to the switch daemon.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Report the switch's state: answered with [`Response::Status`].
    Status,
    /// Make a cross-connect: answered with [`Response::Connected`].
    Connect(Connect),
    /// Remove a cross-connect: answered with [`Response::Disconnected`].
    Disconnect {
        /// The id [`Response::Connected`] gave, `SLOT.GENERATION`.
        id: String,
    },
    /// Stream the cells seen on a port: answered with [`Response::Capturing`], then
    /// [`CaptureLine`]s.
    Capture {
        /// The port.
        port: u16,
        /// Only this VC, `VPI.VCI`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        vc: Option<String>,
    },
    /// Stop the daemon: answered with [`Response::ShuttingDown`].
    Shutdown,
}

impl Request {
    /// The operations, by their `"op"` names.
    pub const OPS: [&'static str; 5] = ["status", "connect", "disconnect", "capture", "shutdown"];
}

/// A cross-connect to make, in the configuration's `[[xc]]` texts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Connect {
    /// One end, `PORT:VPI.VCI` or `PORT:VPI`.
    pub a: String,
    /// The other end.
    pub b: String,
    /// qos(7) text.
    pub qos: String,
    /// `off`, `tag` or `discard`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upc: Option<String>,
    /// Whether AAL5 frame discard applies (default: whether the QoS names aal5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aal5: Option<bool>,
    /// UBR weight (≥ 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
    /// `cbr`, `rt-vbr`, `nrt-vbr` or `ubr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
}

/// The daemon's answer to one request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Response {
    /// The switch's state.
    Status(SwitchStatus),
    /// The cross-connect is made.
    Connected {
        /// Its id, `SLOT.GENERATION`.
        id: String,
    },
    /// The cross-connect is gone.
    Disconnected,
    /// Capture lines follow.
    Capturing {
        /// The port captured.
        #[serde(rename = "capturing")]
        port: u16,
        /// VCs of the port (`VPI.VCI`, only the one asked for if one was) that are spliced
        /// between two applications' lanes: their cells bypass the switch, so the capture
        /// does not see them while the splice lasts.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unseen: Vec<String>,
    },
    /// The daemon stops.
    ShuttingDown,
    /// The request was not carried out.
    Error(Refusal),
}

/// Why the daemon did not carry out a request: [`Response::Error`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(deny_unknown_fields)]
#[error("{message}")]
pub struct Refusal {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// What was wrong, for a person (named `"error"` on the wire).
    #[serde(rename = "error")]
    pub message: String,
}

impl Refusal {
    /// A refusal of `kind` saying `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Refusal {
        Refusal {
            kind,
            message: message.into(),
        }
    }
}

/// Classes of [`Refusal`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The line is not JSON.
    BadJson,
    /// The request has no `"op"` string.
    NoOp,
    /// The `"op"` names no operation ([`Request::OPS`]).
    UnknownOp,
    /// A field is missing, unknown, of the wrong type, or its text does not parse.
    BadRequest,
    /// The port or cross-connect named does not exist.
    NotFound,
    /// The switch refused it (admission control, an end in use, a bad contract…).
    Refused,
    /// The peer is not the daemon's user or root: the connection is closed.
    PermissionDenied,
    /// The request line is longer than the daemon takes: the connection is closed.
    LineTooLong,
}

/// What [`Request::Status`] reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SwitchStatus {
    /// The switch's name.
    pub name: String,
    /// The daemon's pid.
    pub pid: u32,
    /// Seconds since the daemon started.
    pub uptime_s: f64,
    /// The daemon's resident memory (VmRSS), bytes, if it could read it.
    pub memory: Option<u64>,
    /// The switch core's bytes of state per cross-connect.
    pub state_bytes_per_connection: u64,
    /// Captured cells dropped because capture clients fell behind.
    pub capture_overflow: u64,
    /// Every port.
    pub ports: Vec<PortStatus>,
    /// Every cross-connect.
    pub connections: Vec<ConnectionStatus>,
    /// Switched VCs (issue 24): the switch's signalling, absent on a switch that does not
    /// signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signalling: Option<Box<SignallingStatus>>,
}

/// A signalling switch's call control, as [`SwitchStatus`] reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignallingStatus {
    /// The switch's address prefix (`atm2text` groups).
    pub prefix: String,
    /// Calls in any state.
    pub calls_active: u64,
    /// Calls set up since start (reached active).
    pub calls_connected: u64,
    /// Calls refused or failed before active, since start.
    pub calls_refused: u64,
    /// Bytes of signalling and call state per call (the call control's own estimate of
    /// its per-call structures, SSCOP and Q.2931 included).
    pub state_bytes_per_call: u64,
    /// Each signalling port.
    pub ports: Vec<SignallingPort>,
    /// Each call, at most `calls_listed` of them (a switch with 10,000 calls lists the
    /// first 1,000 and counts the rest in `calls_active`).
    pub calls: Vec<SwitchCall>,
}

/// One port's signalling (VC 0.5).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignallingPort {
    /// The port number.
    pub port: u16,
    /// `network` or `user`: which side of the UNI the switch is on this port.
    pub side: String,
    /// The SSCOP state's name (e.g. `data-transfer-ready`).
    pub sscop: String,
    /// Whether call control sees the SAAL established.
    pub link_up: bool,
    /// Calls on the port.
    pub calls: u64,
    /// SSCOP connections established since start (the first and each after a loss).
    pub establishments: u64,
    /// SSCOP counters of the port's present connection: SDs sent, POLLs sent, STATs sent
    /// (one per POLL received), and the times new SDs waited for the peer's credit.
    #[serde(default)]
    pub sscop_counters: SscopCounters,
}

/// A signalling port's SSCOP counters (see [`SignallingPort::sscop_counters`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SscopCounters {
    /// New SDs sent.
    pub sd_sent: u64,
    /// SDs delivered to the user.
    pub delivered: u64,
    /// POLLs sent.
    pub polls: u64,
    /// STATs sent.
    pub stats: u64,
    /// Times new SDs waited for credit (the peer's window closed with SDs queued).
    pub credit_waits: u64,
}

/// One call through the switch, both legs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchCall {
    /// The calling side's leg, `PORT:VPI.VCI` (`PORT:?` until the VC is known).
    pub a: String,
    /// The called side's leg.
    pub b: String,
    /// The call's state (e.g. `active`, `proceeding`, `releasing`).
    pub state: String,
    /// The QoS as the caller sees it (qos(7) text).
    pub qos: String,
    /// The called party (`atm2text`).
    pub called: String,
    /// The calling party, when the SETUP named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calling: Option<String>,
    /// Milliseconds since the SETUP arrived.
    pub age_ms: u64,
}

/// One port of [`SwitchStatus`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortStatus {
    /// The port number.
    pub id: u16,
    /// Its link's description.
    pub link: String,
    /// Whether the switch has the port up.
    pub up: bool,
    /// Whether a peer is attached to the link.
    pub attached: bool,
    /// The switch's counters for the port.
    pub counters: PortCounters,
    /// Cells queued per output category.
    pub queue_depth: QueueDepth,
    /// The link's own counters, while one is attached.
    pub link_counters: Option<LinkCounters>,
    /// What the attached link said at setup about losing cells or falling short of its
    /// rate (a UDP link's socket buffers smaller than its rate needs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_warning: Option<String>,
    /// Cells the link refused that wait to be sent.
    pub held: u64,
    /// Peers attached so far.
    pub connects: u64,
    /// Peers gone so far.
    pub disconnects: u64,
    /// Cells lost because the link failed under them.
    pub tx_lost: u64,
    /// The last link failure.
    pub last_error: Option<String>,
    /// The lanes (applications' own rings) on the port.
    pub lanes: Vec<LaneStatus>,
    /// The weight the host says for its main link (its channels not on lanes), with
    /// which a rated port's input line is shared with the lanes; `None` unsaid (then 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub main_weight: Option<u32>,
    /// Lanes attached so far.
    pub lanes_attached: u64,
    /// Lanes removed so far.
    pub lanes_removed: u64,
    /// Lane requests refused.
    pub lane_refused: u64,
    /// Cells for a lane dropped because it was full.
    pub lane_dropped: u64,
    /// Held cells dropped (the link went away with them).
    pub held_dropped: u64,
}

/// The switch core's counters for a port (natm-switch's `PortCounters`, by name).
///
/// Kept apart from natm-switch's struct on purpose (`duplicates` lists the pair): the core is
/// `no_std` without serde, and this is the wire's shape, which also carries the derived
/// `dropped` and leaves out the queue depths (reported per category beside it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortCounters {
    /// Cells received.
    pub cells_in: u64,
    /// Cells sent.
    pub cells_out: u64,
    /// Cells dropped, for any reason.
    pub dropped: u64,
    /// Idle cells received.
    pub idle: u64,
    /// Headers whose single-bit error the HEC corrected.
    pub hec_corrected: u64,
    /// Cells discarded for a header error.
    pub hec_discarded: u64,
    /// Cells for no cross-connect.
    pub unknown_vc: u64,
    /// Cells UPC discarded.
    pub policed: u64,
    /// Cells UPC tagged (CLP = 1).
    pub tagged: u64,
    /// Cells dropped at a full output queue.
    pub queue_full: u64,
    /// Cells dropped by early packet discard.
    pub epd: u64,
    /// Cells dropped by partial packet discard.
    pub ppd: u64,
    /// Cells dropped because the port was down.
    pub port_down: u64,
    /// Queued cells flushed when the port went down.
    pub flushed: u64,
    /// OAM loopbacks answered.
    pub oam_answered: u64,
    /// OAM cells terminated here.
    pub oam_terminated: u64,
    /// AIS cells sent.
    pub ais_sent: u64,
}

/// Cells queued per output category (named as qos(7) names them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueDepth {
    /// CBR.
    pub cbr: u32,
    /// rt-VBR.
    #[serde(rename = "rt-vbr")]
    pub rt_vbr: u32,
    /// nrt-VBR.
    #[serde(rename = "nrt-vbr")]
    pub nrt_vbr: u32,
    /// UBR.
    pub ubr: u32,
}

/// A link's own counters (natm-link's `LinkCounters`), mirrored for the wire as
/// [`PortCounters`] is: the daemons' clients reach it without natm-link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkCounters {
    /// Cells sent.
    pub tx_cells: u64,
    /// Batches sent.
    pub tx_batches: u64,
    /// Cells received.
    pub rx_cells: u64,
    /// Batches received.
    pub rx_batches: u64,
    /// Received units that were not cells.
    pub rx_malformed: u64,
    /// Batches the link knows were lost on the way in (UDP: datagrams missing from the
    /// peer's sequence).
    pub rx_lost: u64,
}

/// A lane of [`PortStatus`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneStatus {
    /// Its VCs, `VPI.VCI`.
    pub vcs: Vec<String>,
    /// Cells received from the application.
    pub rx: u64,
    /// Cells sent to the application.
    pub tx: u64,
    /// Cells for it dropped.
    pub dropped: u64,
    /// Steps it was paused (too many held cells).
    pub paused: u64,
    /// Cells held for it now.
    pub held: u64,
    /// Its weight on a rated port's input line (the host's weight for its VC; 1 from a
    /// switch that did not say).
    #[serde(default = "one")]
    pub weight: u32,
    /// A spliced lane (natm-link's `lane` module): the other holder's `PORT:VPI.VCI`.
    /// The switch is off its data path: `rx` and `tx` are then read from the region's
    /// ring indices (every cell the application's side sent and took since the region
    /// was made, the switch's share before the splice included), and the rest stay 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spliced_with: Option<String>,
    /// A lane the switch serves with its ring's cells carrying another VC than the
    /// port's (a spliced region's side taken back): that VC, `VPI.VCI`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

fn one() -> u32 {
    1
}

/// A cross-connect of [`SwitchStatus`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionStatus {
    /// Its id, `SLOT.GENERATION`.
    pub id: String,
    /// One end, `PORT:VPI.VCI` or `PORT:VPI`.
    pub a: String,
    /// The other end.
    pub b: String,
    /// qos(7) text.
    pub qos: String,
    /// The output queue category (`None`: the QoS gives none).
    pub category: Option<Category>,
    /// Policing.
    pub upc: Upc,
    /// Whether AAL5 frame discard applies.
    pub aal5: bool,
    /// UBR weight.
    pub weight: u32,
    /// Counters of the direction a → b.
    pub a_to_b: DirCounters,
    /// Counters of the direction b → a.
    pub b_to_a: DirCounters,
}

/// An output queue category, as qos(7) names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    /// CBR.
    Cbr,
    /// rt-VBR.
    RtVbr,
    /// nrt-VBR.
    NrtVbr,
    /// UBR.
    Ubr,
}

/// Usage parameter control of a cross-connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Upc {
    /// No policing.
    Off,
    /// Non-conforming cells are tagged (CLP = 1).
    Tag,
    /// Non-conforming cells are discarded.
    Discard,
}

/// One direction's counters of a cross-connect (natm-switch's `DirCounters`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirCounters {
    /// Cells received.
    pub cells_in: u64,
    /// Cells sent.
    pub cells_out: u64,
    /// Cells dropped.
    pub dropped: u64,
    /// Cells tagged.
    pub tagged: u64,
    /// Cells queued now.
    pub queued: u32,
}

/// One line of a capture stream: `{"t_ns":…,"dir":"in"|"out","cell":"<106 hex digits>"}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureLine {
    /// Nanoseconds since the Unix epoch.
    pub t_ns: u64,
    /// Received on the port or sent out of it.
    pub dir: CaptureDir,
    /// The cell, HEC included, as hex on the wire.
    #[serde(with = "cell_hex")]
    pub cell: [u8; 53],
}

/// Which way a captured cell went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaptureDir {
    /// Received on the port.
    In,
    /// Sent out of the port.
    Out,
}

/// A cell as 106 lowercase hex digits.
mod cell_hex {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::borrow::Cow;

    const HEX: &[u8; 16] = b"0123456789abcdef";

    pub fn serialize<S: Serializer>(cell: &[u8; 53], s: S) -> Result<S::Ok, S::Error> {
        let mut text = String::with_capacity(106);
        for &b in cell {
            text.push(char::from(HEX[usize::from(b >> 4)]));
            text.push(char::from(HEX[usize::from(b & 0xF)]));
        }
        s.serialize_str(&text)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 53], D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        let bytes = text.as_bytes();
        if bytes.len() != 106 {
            return Err(D::Error::custom("cell is not 106 hex digits"));
        }
        let digit = |c: u8| {
            char::from(c)
                .to_digit(16)
                .and_then(|v| u8::try_from(v).ok())
        };
        let mut cell = [0u8; 53];
        for (b, pair) in cell.iter_mut().zip(bytes.chunks_exact(2)) {
            match (digit(pair[0]), digit(pair[1])) {
                (Some(hi), Some(lo)) => *b = hi << 4 | lo,
                _ => return Err(D::Error::custom("cell is not hex")),
            }
        }
        Ok(cell)
    }
}

/// A request as its line, newline included.
pub fn encode_request(req: &Request) -> String {
    line(req)
}

/// A response as its line, newline included: `"ok"` first, then the response.
pub fn encode_response(resp: &Response) -> String {
    #[derive(Serialize)]
    struct Line<'a> {
        ok: bool,
        #[serde(flatten)]
        response: &'a Response,
    }
    line(&Line {
        ok: !matches!(resp, Response::Error(_)),
        response: resp,
    })
}

fn line<T: Serialize>(v: &T) -> String {
    let mut s = serde_json::to_string(v)
        .expect("the protocol's types have string keys only, so they always serialise");
    s.push('\n');
    s
}

/// The request on `line` (its newline, if any, included), or the refusal that answers it.
/// Never panics, whatever the bytes.
pub fn decode_request(line: &[u8]) -> Result<Request, Refusal> {
    /// Just the operation, the rest ignored.
    #[derive(Deserialize)]
    struct Head {
        #[serde(default)]
        op: Option<String>,
    }
    if let Err(e) = serde_json::from_slice::<IgnoredAny>(line) {
        return Err(Refusal::new(ErrorKind::BadJson, format!("bad JSON: {e}")));
    }
    let op = match serde_json::from_slice::<Head>(line) {
        Ok(Head { op: Some(op) }) => op,
        _ => {
            return Err(Refusal::new(
                ErrorKind::NoOp,
                "the request has no \"op\" string",
            ));
        }
    };
    if !Request::OPS.contains(&op.as_str()) {
        return Err(Refusal::new(
            ErrorKind::UnknownOp,
            format!("unknown op {op:?} ({})", Request::OPS.join(", ")),
        ));
    }
    serde_json::from_slice(line).map_err(|e| {
        // serde quotes names with backticks; the rest of the protocol's messages, like
        // JSON, with double quotes.
        let e = e.to_string().replace('`', "\"");
        Refusal::new(ErrorKind::BadRequest, format!("{op}: {e}"))
    })
}

/// Why a response line could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not JSON, or not a response.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// `"ok"` disagrees with the response (true on an error, or false on anything else).
    #[error("\"ok\": {ok} on a {op} response")]
    Ok {
        /// What it said.
        ok: bool,
        /// The response's `"op"`.
        op: String,
    },
}

/// The response on `line` (its newline, if any, included).
pub fn decode_response(line: &[u8]) -> Result<Response, DecodeError> {
    #[derive(Deserialize)]
    struct Line {
        ok: bool,
        #[serde(flatten)]
        response: Response,
    }
    let Line { ok, response } = serde_json::from_slice(line)?;
    if ok == matches!(response, Response::Error(_)) {
        return Err(DecodeError::Ok {
            ok,
            op: response.op().into(),
        });
    }
    Ok(response)
}

impl Response {
    /// The response's `"op"` name.
    pub fn op(&self) -> &'static str {
        match self {
            Response::Status(_) => "status",
            Response::Connected { .. } => "connected",
            Response::Disconnected => "disconnected",
            Response::Capturing { .. } => "capturing",
            Response::ShuttingDown => "shutting_down",
            Response::Error(_) => "error",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::BadJson => "bad JSON",
            ErrorKind::NoOp => "no op",
            ErrorKind::UnknownOp => "unknown op",
            ErrorKind::BadRequest => "bad request",
            ErrorKind::NotFound => "not found",
            ErrorKind::Refused => "refused",
            ErrorKind::PermissionDenied => "permission denied",
            ErrorKind::LineTooLong => "line too long",
        })
    }
}

#[cfg(test)]
mod tests;

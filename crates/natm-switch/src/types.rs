//! The switch's configuration and result types: ports, endpoints, cross-connects, handles,
//! errors and counters.

use alloc::string::{String, ToString};
use core::fmt;
use core::str::FromStr;

use natm_core::{HeaderFormat, LineRate, Qos, TrafficClass};
use natm_traffic::cac::Refusal;
use natm_traffic::policer::ContractError;
use natm_traffic::sched::Category;

/// A switch port's number, as the operator names it (`1`, `2`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortId(pub u16);

impl fmt::Display for PortId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for PortId {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<PortId, ParseError> {
        parse_u16(s, "a port number 0..=65535").map(PortId)
    }
}

/// The category queues of a port, in [`PortConfig::queue_cells`] order.
pub const CATEGORIES: [Category; 4] = [
    Category::Cbr,
    Category::RtVbr,
    Category::NrtVbr,
    Category::Ubr,
];

/// The index of a category in [`PortConfig::queue_cells`] and [`PortCounters::queue_depth`].
pub const fn category_index(c: Category) -> usize {
    match c {
        Category::Cbr => 0,
        Category::RtVbr => 1,
        Category::NrtVbr => 2,
        Category::Ubr => 3,
    }
}

/// A port's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PortConfig {
    /// UNI (8-bit VPI, GFC) or NNI (12-bit VPI) headers on this port's link.
    pub format: HeaderFormat,
    /// The output rate: at most [`LineRate::cells_per_s`] cells per second, one per slot of
    /// `1/rate` (a named layer's rate truncated, 353207 for OC-3c); at
    /// [`LineRate::Unlimited`] whatever is queued, as fast as the caller polls.
    pub rate: LineRate,
    /// Output queue limits in cells per category: CBR, rt-VBR, nrt-VBR, UBR (each ≥ 1).
    pub queue_cells: [u32; 4],
    /// EPD threshold in percent of a queue's limit (1..=100; 0 or 100 = PPD only).
    pub epd_percent: u8,
    /// Cell delay variation tolerated on cells arriving at this port (TM 4.1 §4.4.4): the
    /// UPC of every connection entering here uses at least this CDVT. Cells of a source
    /// shaped exactly to its PCR reach a software switch in batches (a link's ring, a
    /// sleeping daemon's wake-up), so a software port needs some; 0 polices the ideal.
    pub cdvt: natm_core::Duration,
    /// Whether the switch ends this port's signalling VC 0.5: its user-data cells go to a
    /// receive queue the owner drains ([`Switch::poll_signalling`](crate::Switch::poll_signalling))
    /// instead of the lookup, the owner's cells for 0.5
    /// ([`Switch::send_signalling`](crate::Switch::send_signalling)) leave ahead of CBR, and
    /// 0.5 (and VP 0 as a whole) cannot be cross-connected here.
    pub signalling: bool,
}

impl Default for PortConfig {
    /// UNI, unlimited rate, queues of 256/256/1024/4096 cells, EPD at 80%, CDVT 0, no
    /// signalling.
    fn default() -> PortConfig {
        PortConfig {
            format: HeaderFormat::Uni,
            rate: LineRate::Unlimited,
            queue_cells: [256, 256, 1024, 4096],
            epd_percent: 80,
            cdvt: natm_core::Duration::ZERO,
            signalling: false,
        }
    }
}

/// The whole switch's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SwitchConfig {
    /// Cross-connects that may exist at once.
    pub max_connections: u32,
}

impl Default for SwitchConfig {
    /// 131,072 connections.
    fn default() -> SwitchConfig {
        SwitchConfig {
            max_connections: 131_072,
        }
    }
}

/// One end of a cross-connect: a port and a VPI, plus a VCI for a VC (`None`: the whole
/// VP). Text: `1:0.100` (port 1, VPI 0, VCI 100) or `1:7` (port 1, VP 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Endpoint {
    /// The port.
    pub port: PortId,
    /// The VPI (≤ 255 on a UNI port, ≤ 4095 on an NNI port).
    pub vpi: u16,
    /// The VCI of a VC endpoint; `None` for a VP endpoint.
    pub vci: Option<u16>,
}

impl Endpoint {
    /// A VC endpoint.
    pub const fn vc(port: u16, vpi: u16, vci: u16) -> Endpoint {
        Endpoint {
            port: PortId(port),
            vpi,
            vci: Some(vci),
        }
    }

    /// A VP endpoint.
    pub const fn vp(port: u16, vpi: u16) -> Endpoint {
        Endpoint {
            port: PortId(port),
            vpi,
            vci: None,
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.vci {
            Some(vci) => write!(f, "{}:{}.{}", self.port, self.vpi, vci),
            None => write!(f, "{}:{}", self.port, self.vpi),
        }
    }
}

impl FromStr for Endpoint {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Endpoint, ParseError> {
        let expected = "an endpoint PORT:VPI.VCI or PORT:VPI (e.g. 1:0.100, 1:7)";
        let (port, rest) = s
            .split_once(':')
            .ok_or_else(|| ParseError::new(expected, s))?;
        let port = parse_u16(port, expected).map_err(|_| ParseError::new(expected, s))?;
        let (vpi, vci) = match rest.split_once('.') {
            Some((vpi, vci)) => (vpi, Some(vci)),
            None => (rest, None),
        };
        let vpi = parse_u16(vpi, expected).map_err(|_| ParseError::new(expected, s))?;
        let vci = match vci {
            Some(v) => Some(parse_u16(v, expected).map_err(|_| ParseError::new(expected, s))?),
            None => None,
        };
        Ok(Endpoint {
            port: PortId(port),
            vpi,
            vci,
        })
    }
}

/// What usage parameter control does to a leg's non-conforming cells (I.371 §5.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Upc {
    /// No policing.
    #[default]
    Off,
    /// Tag non-conforming CLP=0 cells (CLP := 1) and forward them; discard non-conforming
    /// CLP=1 cells.
    Tag,
    /// Discard non-conforming cells.
    Discard,
}

impl fmt::Display for Upc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Upc::Off => "off",
            Upc::Tag => "tag",
            Upc::Discard => "discard",
        })
    }
}

impl FromStr for Upc {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Upc, ParseError> {
        match s {
            "off" => Ok(Upc::Off),
            "tag" => Ok(Upc::Tag),
            "discard" => Ok(Upc::Discard),
            _ => Err(ParseError::new("a UPC mode off, tag or discard", s)),
        }
    }
}

/// A duplex cross-connect between two endpoints, both VC or both VP.
///
/// Cells from `a` to `b` are policed against `qos.tx`, cells from `b` to `a` against
/// `qos.rx`; CAC books `qos.tx` on `b`'s port and `qos.rx` on `a`'s port. A direction whose
/// class is `none` carries nothing (its cells are counted as policed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CrossConnect {
    /// One end.
    pub a: Endpoint,
    /// The other end.
    pub b: Endpoint,
    /// Traffic parameters: `tx` for a→b, `rx` for b→a.
    pub qos: Qos,
    /// The output queue category of both directions; `None` = from the QoS class (CBR →
    /// CBR, VBR → nrt-VBR, UBR → UBR).
    pub category: Option<Category>,
    /// Policing of both directions.
    pub upc: Upc,
    /// Whether the cells are AAL5 frames (EPD/PPD apply) rather than single cells.
    pub aal5: bool,
    /// UBR weighted round robin: cells per turn (≥ 1).
    pub weight: u32,
}

impl CrossConnect {
    /// A cross-connect with no UPC, weight 1, the category from the QoS class, AAL5 frame
    /// discard if `qos.aal` is AAL5.
    pub fn new(a: Endpoint, b: Endpoint, qos: Qos) -> CrossConnect {
        CrossConnect {
            a,
            b,
            qos,
            category: None,
            upc: Upc::Off,
            aal5: qos.aal == natm_core::Aal::Aal5,
            weight: 1,
        }
    }

    /// The category of both directions: [`category`](Self::category), or the class of
    /// `qos.tx` (`qos.rx` if tx is `none`).
    pub fn effective_category(&self) -> Result<Category, SwitchError> {
        if let Some(c) = self.category {
            return Ok(c);
        }
        let class = if self.qos.tx.class == TrafficClass::None {
            self.qos.rx.class
        } else {
            self.qos.tx.class
        };
        match class {
            TrafficClass::Cbr => Ok(Category::Cbr),
            TrafficClass::Vbr => Ok(Category::NrtVbr),
            TrafficClass::Ubr => Ok(Category::Ubr),
            other => Err(SwitchError::NoCategory(other)),
        }
    }
}

/// A cross-connect's handle: a slot and a generation, so a handle of a removed connection
/// never names a later one. Text: `SLOT.GENERATION`, e.g. `17.2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct XcId {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl XcId {
    /// The slot number (reused after a disconnect).
    pub const fn index(self) -> u32 {
        self.index
    }

    /// The generation of the slot.
    pub const fn generation(self) -> u32 {
        self.generation
    }
}

impl fmt::Display for XcId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.index, self.generation)
    }
}

impl FromStr for XcId {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<XcId, ParseError> {
        let expected = "a connection id SLOT.GENERATION (e.g. 17.2)";
        let (i, g) = s
            .split_once('.')
            .ok_or_else(|| ParseError::new(expected, s))?;
        match (i.parse(), g.parse()) {
            (Ok(index), Ok(generation)) => Ok(XcId { index, generation }),
            _ => Err(ParseError::new(expected, s)),
        }
    }
}

/// A direction of a cross-connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From `a` to `b`, policed against `qos.tx`.
    AToB,
    /// From `b` to `a`, policed against `qos.rx`.
    BToA,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::AToB => "a→b (tx)",
            Direction::BToA => "b→a (rx)",
        })
    }
}

/// Why a switch command was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SwitchError {
    /// No port with this number.
    UnknownPort(PortId),
    /// A port with this number exists already.
    PortExists(PortId),
    /// The port configuration is not usable.
    BadPortConfig {
        /// The port.
        port: PortId,
        /// What is wrong.
        reason: &'static str,
    },
    /// The endpoint cannot be used on its port.
    BadEndpoint {
        /// The endpoint.
        endpoint: Endpoint,
        /// What is wrong.
        reason: &'static str,
    },
    /// The endpoint (or its VP, or a VC inside it) belongs to another cross-connect.
    EndpointInUse {
        /// The endpoint asked for.
        endpoint: Endpoint,
        /// The cross-connect using it (`None`: the other end of the same request).
        by: Option<XcId>,
    },
    /// One end is a VP and the other a VC.
    Mismatch {
        /// End `a`.
        a: Endpoint,
        /// End `b`.
        b: Endpoint,
    },
    /// No output category follows from this class (give `category`).
    NoCategory(TrafficClass),
    /// A UBR weight of 0.
    ZeroWeight,
    /// A direction's traffic contract is not well formed for its UPC.
    BadContract {
        /// The direction.
        direction: Direction,
        /// What is wrong.
        error: ContractError,
    },
    /// Connection admission control refused a direction on its output port.
    Admission(Refusal),
    /// The switch holds its maximum number of cross-connects.
    TooMany {
        /// The limit.
        max: u32,
    },
    /// No cross-connect with this handle (never made, or disconnected).
    UnknownConnection(XcId),
}

impl fmt::Display for SwitchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwitchError::UnknownPort(p) => write!(f, "no port {p}"),
            SwitchError::PortExists(p) => write!(f, "port {p} exists already"),
            SwitchError::BadPortConfig { port, reason } => write!(f, "port {port}: {reason}"),
            SwitchError::BadEndpoint { endpoint, reason } => {
                write!(f, "endpoint {endpoint}: {reason}")
            }
            SwitchError::EndpointInUse { endpoint, by } => match by {
                Some(id) => write!(f, "endpoint {endpoint} is in use by connection {id}"),
                None => write!(f, "endpoint {endpoint} is used by both ends"),
            },
            SwitchError::Mismatch { a, b } => write!(
                f,
                "{a} and {b}: both ends must be VCs (PORT:VPI.VCI) or both VPs (PORT:VPI)"
            ),
            SwitchError::NoCategory(class) => write!(
                f,
                "class {class} has no output category (CBR, VBR or UBR, or give one)"
            ),
            SwitchError::ZeroWeight => f.write_str("a UBR weight must be at least 1"),
            SwitchError::BadContract { direction, error } => {
                write!(f, "contract of direction {direction}: {error}")
            }
            SwitchError::Admission(r) => r.fmt(f),
            SwitchError::TooMany { max } => {
                write!(f, "the switch holds its maximum of {max} connections")
            }
            SwitchError::UnknownConnection(id) => write!(f, "no connection {id}"),
        }
    }
}

impl core::error::Error for SwitchError {}

/// Why [`Switch::send_signalling`](crate::Switch::send_signalling) refused a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignallingError {
    /// No port with this number.
    UnknownPort(PortId),
    /// The port does not end signalling ([`PortConfig::signalling`] is false).
    NotSignalling(PortId),
    /// The port is down: nothing is queued for it.
    PortDown(PortId),
    /// The port's signalling output queue holds
    /// [`SIGNALLING_QUEUE_CELLS`](crate::SIGNALLING_QUEUE_CELLS) cells; try after
    /// `poll_transmit` has sent some.
    Full(PortId),
}

impl fmt::Display for SignallingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignallingError::UnknownPort(p) => write!(f, "no port {p}"),
            SignallingError::NotSignalling(p) => write!(f, "port {p} does not end signalling"),
            SignallingError::PortDown(p) => write!(f, "port {p} is down"),
            SignallingError::Full(p) => write!(f, "port {p}: the signalling queue is full"),
        }
    }
}

impl core::error::Error for SignallingError {}

/// Text that is not what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// What was expected.
    pub expected: &'static str,
    /// The text found (at most 40 characters).
    pub found: String,
}

impl ParseError {
    fn new(expected: &'static str, found: &str) -> ParseError {
        ParseError {
            expected,
            found: found.chars().take(40).collect::<String>().to_string(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "expected {}, found {:?}", self.expected, self.found)
    }
}

impl core::error::Error for ParseError {}

fn parse_u16(s: &str, expected: &'static str) -> Result<u16, ParseError> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ParseError::new(expected, s));
    }
    s.parse().map_err(|_| ParseError::new(expected, s))
}

/// A port's counters.
///
/// Input-side counts are charged to the port a cell arrived on, output-side counts to the
/// port it was queued for. Over the whole switch, cells are conserved:
/// `Σ cells_in + Σ ais_sent + Σ signalling_out = Σ cells_out + Σ dropped() + Σ queued() +
/// Σ signalling_in` (signalling cells end at the switch's owner or come from it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounters {
    /// Whether the port is up.
    pub up: bool,
    /// Cells handed in (input).
    pub cells_in: u64,
    /// Cells sent (output), generated OAM cells included.
    pub cells_out: u64,
    /// Idle and unassigned cells (VPI 0, VCI 0), dropped silently (input).
    pub idle: u64,
    /// Headers with one bit corrected (input; the cell goes on).
    pub hec_corrected: u64,
    /// Cells dropped for a header error (input).
    pub hec_discarded: u64,
    /// Cells for no cross-connect (input).
    pub unknown_vc: u64,
    /// Cells discarded by UPC, or on a direction of class none (input).
    pub policed: u64,
    /// Cells tagged CLP := 1 by UPC and forwarded (input; not a drop).
    pub tagged: u64,
    /// Cells dropped because their queue was full (output).
    pub queue_full: u64,
    /// Cells dropped by early packet discard (output).
    pub epd: u64,
    /// Cells dropped by partial packet discard (output).
    pub ppd: u64,
    /// Cells dropped because the port was down: arriving on it (input), queued for it, or
    /// flushed from its queues when it went down (output).
    pub port_down: u64,
    /// Queued cells dropped because their connection was disconnected (output).
    pub flushed: u64,
    /// OAM segment loopback requests answered (input; the reply leaves this port).
    pub oam_answered: u64,
    /// OAM cells that end at the switch and are not answered: segment flows other than
    /// loopback requests, F4 end-to-end cells of a VP that ends here, bad CRC-10 (input).
    pub oam_terminated: u64,
    /// AIS cells generated onto this port (output).
    pub ais_sent: u64,
    /// Cells queued per category: CBR (with generated OAM), rt-VBR, nrt-VBR, UBR.
    pub queue_depth: [u32; 4],
    /// Signalling cells (VC 0.5 user data on a signalling port) put on the receive queue
    /// for the owner (input; they end here, drained or not).
    pub signalling_in: u64,
    /// Signalling cells dropped because the receive queue held
    /// [`SIGNALLING_QUEUE_CELLS`](crate::SIGNALLING_QUEUE_CELLS) (input).
    pub signalling_dropped: u64,
    /// Signalling cells the owner queued for output (generated here, like AIS: they leave
    /// in `cells_out`, or are dropped as `port_down`).
    pub signalling_out: u64,
    /// Signalling cells waiting for output (served ahead of CBR).
    pub signalling_queued: u32,
}

impl PortCounters {
    /// Cells dropped here for any reason.
    pub fn dropped(&self) -> u64 {
        self.idle
            + self.hec_discarded
            + self.unknown_vc
            + self.policed
            + self.queue_full
            + self.epd
            + self.ppd
            + self.port_down
            + self.flushed
            + self.oam_terminated
            + self.signalling_dropped
    }

    /// Cells queued for output, signalling cells included.
    pub fn queued(&self) -> u64 {
        self.queue_depth.iter().map(|&d| u64::from(d)).sum::<u64>()
            + u64::from(self.signalling_queued)
    }
}

/// One direction's counters. `cells_in = cells_out + dropped + queued`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirCounters {
    /// Cells that arrived for this direction.
    pub cells_in: u64,
    /// Cells sent out of the far port.
    pub cells_out: u64,
    /// Cells dropped (policed, queue full, EPD/PPD, port down).
    pub dropped: u64,
    /// Cells tagged by UPC (also in `cells_in`, and in `cells_out` once sent).
    pub tagged: u64,
    /// Cells waiting in the output queue.
    pub queued: u32,
}

/// A cross-connect's counters per direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XcCounters {
    /// From `a` to `b`.
    pub a_to_b: DirCounters,
    /// From `b` to `a`.
    pub b_to_a: DirCounters,
}

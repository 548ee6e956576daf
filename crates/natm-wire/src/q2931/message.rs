//! A whole message: the header and its IEs in typed form; parsing with the IE problems of
//! Q.2931 §5.6, emission, and the one-line `Display` of `natm dump`.

use alloc::vec::Vec;
use core::fmt;

use super::cause::Cause;
use super::header::{HEADER_LEN, Header};
use super::ie::number::{CalledNumber, CalledSubaddress, CallingNumber, CallingSubaddress};
use super::ie::*;
use super::view::MessageView;
use super::{IeProblem, ParseError};

/// Most BLLI IEs in a message (UNI 3.1 §5.4.5.9).
pub const MAX_BLLI: usize = 3;
/// Most cause IEs in a message (Q.2931 §4.5.15: RELEASE may carry two).
pub const MAX_CAUSE: usize = 2;

/// A Q.2931 message: the header and one field per kind of IE natm decodes, plus the IEs it
/// does not decode, kept raw.
///
/// `emit` writes the IEs in a fixed order (the order of the fields here, which is the
/// order of atm-facts §5.5's SETUP; Q.2931 lets IEs come in any order) with ITU-T coding
/// and no explicit instruction, except where an IE's own type says otherwise
/// ([`QosParam::coding`], [`ExtQos`] and the UNI 4.0 traffic descriptors are ATM Forum
/// coded). Unknown IEs follow, with their own header octet.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Message {
    /// The header.
    pub header: Header,
    /// AAL parameters (0x58).
    pub aal: Option<AalParams>,
    /// ATM traffic descriptor (0x59).
    pub traffic: Option<TrafficDescriptor>,
    /// Minimum acceptable ATM traffic descriptor (0x81, UNI 4.0).
    pub min_traffic: Option<TrafficDescriptor>,
    /// Alternative ATM traffic descriptor (0x82, UNI 4.0).
    pub alt_traffic: Option<TrafficDescriptor>,
    /// Broadband bearer capability (0x5E).
    pub bearer: Option<BearerCapability>,
    /// Broadband high-layer information (0x5D).
    pub bhli: Option<Bhli>,
    /// Called party number (0x70).
    pub called: Option<PartyNumber>,
    /// Called party subaddress (0x71).
    pub called_sub: Option<Subaddress>,
    /// Calling party number (0x6C).
    pub calling: Option<PartyNumber>,
    /// Calling party subaddress (0x6D).
    pub calling_sub: Option<Subaddress>,
    /// Broadband repeat indicator (0x63).
    pub repeat: Option<RepeatIndicator>,
    /// Broadband low-layer information (0x5F), at most [`MAX_BLLI`].
    pub blli: Vec<Blli>,
    /// Connection identifier (0x5A).
    pub connection_id: Option<ConnectionId>,
    /// QoS parameter (0x5C).
    pub qos: Option<QosParam>,
    /// Extended QoS parameters (0xEC, UNI 4.0).
    pub ext_qos: Option<ExtQos>,
    /// End-to-end transit delay (0x42).
    pub transit_delay: Option<TransitDelay>,
    /// Broadband sending complete (0x62), emitted as `62 80 00 01 a1`.
    pub sending_complete: bool,
    /// Cause (0x08), at most [`MAX_CAUSE`].
    pub cause: Vec<Cause>,
    /// Call state (0x14).
    pub call_state: Option<CallState>,
    /// Restart indicator (0x79).
    pub restart: Option<RestartIndicator>,
    /// Notification indicator (0x27, UNI 4.0).
    pub notification: Option<Notification>,
    /// IEs natm does not decode, in the order received.
    pub unknown: Vec<RawIe>,
}

/// A parsed message and what was wrong with its IEs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The message, without the IEs that had problems.
    pub message: Message,
    /// The IE problems, in the order found (mandatory IEs missing last).
    pub problems: Vec<IeProblem>,
}

/// Contents of the sending complete IE.
const SENDING_COMPLETE: u8 = 0xA1;

impl Message {
    /// A message with no IEs.
    pub const fn new(header: Header) -> Message {
        Message {
            header,
            aal: None,
            traffic: None,
            min_traffic: None,
            alt_traffic: None,
            bearer: None,
            bhli: None,
            called: None,
            called_sub: None,
            calling: None,
            calling_sub: None,
            repeat: None,
            blli: Vec::new(),
            connection_id: None,
            qos: None,
            ext_qos: None,
            transit_delay: None,
            sending_complete: false,
            cause: Vec::new(),
            call_state: None,
            restart: None,
            notification: None,
            unknown: Vec::new(),
        }
    }

    /// The IEs a message of type `t` must carry, in either direction (Q.2931 §3 and UNI
    /// 3.1 §5.3 tables). SETUP's QoS parameter (mandatory in UNI 3.1, optional in UNI 4.0)
    /// and the connection identifier of the network's first answer depend on the version
    /// and the direction: call control checks those.
    pub const fn mandatory(t: super::MsgType) -> &'static [IeId] {
        use super::MsgType as M;
        match t {
            M::Setup => &[
                IeId::TrafficDescriptor,
                IeId::BearerCapability,
                IeId::CalledNumber,
            ],
            M::Release => &[IeId::Cause],
            M::Status => &[IeId::Cause, IeId::CallState],
            M::Restart | M::RestartAck => &[IeId::RestartIndicator],
            M::Notify => &[IeId::Notification],
            _ => &[],
        }
    }

    /// Parses a message. Errors are for messages Q.2931 §5.6.1–5.6.3 ignores as a whole;
    /// otherwise the message comes back with every IE that parsed and the list of IE
    /// problems (§5.6.7, §5.6.8). An IE with a content error is left out of the message.
    /// Never panics.
    pub fn parse(b: &[u8]) -> Result<Parsed, ParseError> {
        let view = MessageView::new_checked(b)?;
        let header = view.header();
        let mut m = Message::new(header);
        let mut problems = Vec::new();
        let mandatory = Message::mandatory(header.msg_type);
        for ie in view.ies() {
            let ie = ie?;
            if let Err(p) = m.add_ie(ie.id, ie.flags, ie.contents) {
                let p = match p {
                    IeProblem::ContentError { id, error, .. } => IeProblem::ContentError {
                        id,
                        mandatory: mandatory.contains(&id),
                        error,
                    },
                    other => other,
                };
                problems.push(p);
            }
        }
        for &id in mandatory {
            let reported = problems
                .iter()
                .any(|p| matches!(p, IeProblem::ContentError { id: i, .. } if *i == id));
            if !m.has(id) && !reported {
                problems.push(IeProblem::MandatoryMissing { id });
            }
        }
        Ok(Parsed {
            message: m,
            problems,
        })
    }

    /// Whether the message carries an IE with this identifier.
    pub fn has(&self, id: IeId) -> bool {
        match id {
            IeId::AalParams => self.aal.is_some(),
            IeId::TrafficDescriptor => self.traffic.is_some(),
            IeId::MinTraffic => self.min_traffic.is_some(),
            IeId::AltTraffic => self.alt_traffic.is_some(),
            IeId::BearerCapability => self.bearer.is_some(),
            IeId::Bhli => self.bhli.is_some(),
            IeId::CalledNumber => self.called.is_some(),
            IeId::CalledSubaddress => self.called_sub.is_some(),
            IeId::CallingNumber => self.calling.is_some(),
            IeId::CallingSubaddress => self.calling_sub.is_some(),
            IeId::RepeatIndicator => self.repeat.is_some(),
            IeId::Blli => !self.blli.is_empty(),
            IeId::ConnectionId => self.connection_id.is_some(),
            IeId::QosParam => self.qos.is_some(),
            IeId::ExtQos => self.ext_qos.is_some(),
            IeId::TransitDelay => self.transit_delay.is_some(),
            IeId::SendingComplete => self.sending_complete,
            IeId::Cause => !self.cause.is_empty(),
            IeId::CallState => self.call_state.is_some(),
            IeId::RestartIndicator => self.restart.is_some(),
            IeId::Notification => self.notification.is_some(),
            other => self.unknown.iter().any(|r| r.id == other),
        }
    }

    /// Decodes one IE into its field.
    fn add_ie(&mut self, id: IeId, flags: IeFlags, c: &[u8]) -> Result<(), IeProblem> {
        fn put<T: IeCodec>(slot: &mut Option<T>, c: &[u8]) -> Result<(), IeProblem> {
            if slot.is_some() {
                return Err(IeProblem::Repeated { id: T::ID });
            }
            *slot = Some(T::parse_contents(c).map_err(|e| content(T::ID, e))?);
            Ok(())
        }
        fn content(id: IeId, error: IeErrorKind) -> IeProblem {
            IeProblem::ContentError {
                id,
                mandatory: false,
                error,
            }
        }
        fn put_as<T: IeCodec, U>(
            slot: &mut Option<U>,
            c: &[u8],
            f: impl FnOnce(T) -> U,
        ) -> Result<(), IeProblem> {
            if slot.is_some() {
                return Err(IeProblem::Repeated { id: T::ID });
            }
            *slot = Some(f(T::parse_contents(c).map_err(|e| content(T::ID, e))?));
            Ok(())
        }
        match id {
            IeId::AalParams => put(&mut self.aal, c),
            IeId::TrafficDescriptor => put(&mut self.traffic, c),
            IeId::MinTraffic | IeId::AltTraffic => {
                let slot = if id == IeId::MinTraffic {
                    &mut self.min_traffic
                } else {
                    &mut self.alt_traffic
                };
                if slot.is_some() {
                    return Err(IeProblem::Repeated { id });
                }
                *slot = Some(TrafficDescriptor::parse_contents(c).map_err(|e| content(id, e))?);
                Ok(())
            }
            IeId::BearerCapability => put(&mut self.bearer, c),
            IeId::Bhli => put(&mut self.bhli, c),
            IeId::CalledNumber => put_as(&mut self.called, c, |n: CalledNumber| n.0),
            IeId::CalledSubaddress => put_as(&mut self.called_sub, c, |n: CalledSubaddress| n.0),
            IeId::CallingNumber => put_as(&mut self.calling, c, |n: CallingNumber| n.0),
            IeId::CallingSubaddress => put_as(&mut self.calling_sub, c, |n: CallingSubaddress| n.0),
            IeId::RepeatIndicator => put(&mut self.repeat, c),
            IeId::Blli => {
                if self.blli.len() >= MAX_BLLI {
                    return Err(IeProblem::Repeated { id });
                }
                self.blli
                    .push(Blli::parse_contents(c).map_err(|e| content(id, e))?);
                Ok(())
            }
            IeId::ConnectionId => put(&mut self.connection_id, c),
            IeId::QosParam => {
                if self.qos.is_some() {
                    return Err(IeProblem::Repeated { id });
                }
                self.qos = Some(QosParam::parse_with(flags.coding, c).map_err(|e| content(id, e))?);
                Ok(())
            }
            IeId::ExtQos => put(&mut self.ext_qos, c),
            IeId::TransitDelay => put(&mut self.transit_delay, c),
            IeId::SendingComplete => {
                if self.sending_complete {
                    return Err(IeProblem::Repeated { id });
                }
                if c != [SENDING_COMPLETE] {
                    return Err(content(
                        id,
                        IeErrorKind::Invalid("sending complete indication"),
                    ));
                }
                self.sending_complete = true;
                Ok(())
            }
            IeId::Cause => {
                if self.cause.len() >= MAX_CAUSE {
                    return Err(IeProblem::Repeated { id });
                }
                self.cause
                    .push(Cause::parse_contents(c).map_err(|e| content(id, e))?);
                Ok(())
            }
            IeId::CallState => put(&mut self.call_state, c),
            IeId::RestartIndicator => put(&mut self.restart, c),
            IeId::Notification => put(&mut self.notification, c),
            _ => {
                self.unknown.push(RawIe {
                    id,
                    flags,
                    contents: c.to_vec(),
                });
                Err(IeProblem::Unrecognised { id, flags })
            }
        }
    }

    /// Calls `f` with every IE's length in bytes, header included.
    fn for_each_len(&self, mut f: impl FnMut(usize)) {
        fn o<T: IeCodec>(v: &Option<T>, f: &mut impl FnMut(usize)) {
            if let Some(v) = v {
                f(v.buffer_len());
            }
        }
        o(&self.aal, &mut f);
        o(&self.traffic, &mut f);
        o(&self.min_traffic, &mut f);
        o(&self.alt_traffic, &mut f);
        o(&self.bearer, &mut f);
        o(&self.bhli, &mut f);
        for n in [&self.called, &self.calling].into_iter().flatten() {
            f(IE_HEADER_LEN + n.len());
        }
        for s in [&self.called_sub, &self.calling_sub].into_iter().flatten() {
            f(IE_HEADER_LEN + s.len());
        }
        o(&self.repeat, &mut f);
        for b in &self.blli {
            f(b.buffer_len());
        }
        o(&self.connection_id, &mut f);
        o(&self.qos, &mut f);
        o(&self.ext_qos, &mut f);
        o(&self.transit_delay, &mut f);
        if self.sending_complete {
            f(IE_HEADER_LEN + 1);
        }
        for c in &self.cause {
            f(c.buffer_len());
        }
        o(&self.call_state, &mut f);
        o(&self.restart, &mut f);
        o(&self.notification, &mut f);
        for r in &self.unknown {
            f(r.buffer_len());
        }
    }

    /// The length of the emitted message.
    pub fn buffer_len(&self) -> usize {
        let mut n = HEADER_LEN;
        self.for_each_len(|l| n += l);
        n
    }

    /// Writes the message into `buf` and returns its length. Panics if `buf` is shorter
    /// than [`Message::buffer_len`]. The caller keeps the message under 65535 bytes of IEs
    /// (the length field is cut to 16 bits) and each IE's contents within its limits.
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let total = self.buffer_len();
        self.header.emit(buf, (total - HEADER_LEN) as u16);
        let mut at = HEADER_LEN;
        macro_rules! o {
            ($v:expr) => {
                if let Some(v) = &$v {
                    at += v.emit(&mut buf[at..]);
                }
            };
        }
        o!(self.aal);
        o!(self.traffic);
        if let Some(v) = &self.min_traffic {
            at += emit_as(IeId::MinTraffic, IeFlags::NETWORK, v, &mut buf[at..]);
        }
        if let Some(v) = &self.alt_traffic {
            at += emit_as(IeId::AltTraffic, IeFlags::NETWORK, v, &mut buf[at..]);
        }
        o!(self.bearer);
        o!(self.bhli);
        if let Some(v) = &self.called {
            at += emit_with(IeId::CalledNumber, v.len(), &mut buf[at..], |b| v.emit(b));
        }
        if let Some(v) = &self.called_sub {
            at += emit_with(IeId::CalledSubaddress, v.len(), &mut buf[at..], |b| {
                v.emit(b)
            });
        }
        if let Some(v) = &self.calling {
            at += emit_with(IeId::CallingNumber, v.len(), &mut buf[at..], |b| v.emit(b));
        }
        if let Some(v) = &self.calling_sub {
            at += emit_with(IeId::CallingSubaddress, v.len(), &mut buf[at..], |b| {
                v.emit(b)
            });
        }
        o!(self.repeat);
        for b in &self.blli {
            at += b.emit(&mut buf[at..]);
        }
        o!(self.connection_id);
        o!(self.qos);
        o!(self.ext_qos);
        o!(self.transit_delay);
        if self.sending_complete {
            at += emit_with(IeId::SendingComplete, 1, &mut buf[at..], |b| {
                b[0] = SENDING_COMPLETE;
            });
        }
        for c in &self.cause {
            at += c.emit(&mut buf[at..]);
        }
        o!(self.call_state);
        o!(self.restart);
        o!(self.notification);
        for r in &self.unknown {
            at += r.emit(&mut buf[at..]);
        }
        debug_assert_eq!(at, total, "buffer_len and emit agree");
        total
    }

    /// The emitted message in a new vector.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = alloc::vec![0; self.buffer_len()];
        self.emit(&mut v);
        v
    }
}

/// Emits a traffic descriptor under another identifier (the UNI 4.0 minimum acceptable and
/// alternative descriptors share its format).
fn emit_as(id: IeId, flags: IeFlags, td: &TrafficDescriptor, buf: &mut [u8]) -> usize {
    let n = td.contents_len();
    buf[0] = id.code();
    buf[1] = flags.to_octet();
    buf[2..4].copy_from_slice(&(n as u16).to_be_bytes());
    td.emit_contents(&mut buf[4..4 + n]);
    4 + n
}

/// Writes an ITU-T coded IE whose contents `f` writes (`n` bytes).
fn emit_with(id: IeId, n: usize, buf: &mut [u8], f: impl FnOnce(&mut [u8])) -> usize {
    buf[0] = id.code();
    buf[1] = IeFlags::ITU.to_octet();
    buf[2..4].copy_from_slice(&(n as u16).to_be_bytes());
    f(&mut buf[4..4 + n]);
    4 + n
}

impl fmt::Display for Message {
    /// One line: the header, then each IE decoded, e.g.
    /// `SETUP cr=1 flag=0 aal=[aal5 fwd_sdu=9188 bwd_sdu=9188] td=[fwd pcr01=353207 …]
    /// bbc=[BCOB-X atc=NoIndication p2p] called=47.0005.… calling=… blli=[l2=0x0c(llc)]
    /// qos=[class 0/0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.header.fmt(f)?;
        fn item(f: &mut fmt::Formatter<'_>, name: &str, v: &dyn fmt::Display) -> fmt::Result {
            write!(f, " {name}=[{v}]")
        }
        if let Some(v) = &self.aal {
            item(f, "aal", v)?;
        }
        if let Some(v) = &self.traffic {
            item(f, "td", v)?;
        }
        if let Some(v) = &self.min_traffic {
            item(f, "min_td", v)?;
        }
        if let Some(v) = &self.alt_traffic {
            item(f, "alt_td", v)?;
        }
        if let Some(v) = &self.bearer {
            item(f, "bbc", v)?;
        }
        if let Some(v) = &self.bhli {
            item(f, "bhli", v)?;
        }
        if let Some(v) = &self.called {
            write!(f, " called={v}")?;
        }
        if let Some(v) = &self.called_sub {
            write!(f, " called_sub={v}")?;
        }
        if let Some(v) = &self.calling {
            write!(f, " calling={v}")?;
        }
        if let Some(v) = &self.calling_sub {
            write!(f, " calling_sub={v}")?;
        }
        if let Some(v) = &self.repeat {
            write!(f, " repeat={}", v.indication)?;
        }
        for v in &self.blli {
            item(f, "blli", v)?;
        }
        if let Some(v) = &self.connection_id {
            item(f, "conn", v)?;
        }
        if let Some(v) = &self.qos {
            item(f, "qos", v)?;
        }
        if let Some(v) = &self.ext_qos {
            item(f, "ext_qos", v)?;
        }
        if let Some(v) = &self.transit_delay {
            item(f, "transit_delay", v)?;
        }
        if self.sending_complete {
            f.write_str(" sending-complete")?;
        }
        for v in &self.cause {
            item(f, "cause", v)?;
        }
        if let Some(v) = &self.call_state {
            write!(f, " state={v}")?;
        }
        if let Some(v) = &self.restart {
            item(f, "restart", v)?;
        }
        if let Some(v) = &self.notification {
            item(f, "notify", v)?;
        }
        for v in &self.unknown {
            item(f, "unknown", v)?;
        }
        Ok(())
    }
}

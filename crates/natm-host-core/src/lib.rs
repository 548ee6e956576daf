//! natm's host as a pure state machine (DESIGN.md §7): everything one host does between its
//! applications' channels and its one link to a switch, with no sockets, threads, clocks or
//! randomness. `natm hostd` drives it in real time; natm-sim drives the same object in
//! virtual time, so a simulated host is the daemon's logic, not a copy of it.
//!
//! ```text
//!   channel ── Adapter ─┐                      ┌─ OAM F5 loopback responder, pings
//!   channel ── Adapter ─┼── demux by VPI/VCI ◄─┤◄── handle_cells (I.432 HEC receiver)
//!   channel ── Adapter ─┘── transmit order ────┴──► poll_transmit / transmitted
//!          admission (CAC on the link), QoS → shaping, max_sdu
//! ```
//!
//! * **Channels** ([`ChannelId`]): one natm-adapter [`Adapter`] each, over memory the driver
//!   owns and lends through [`ChannelMemory`] (a shared-memory region in hostd, a `Vec` in
//!   the simulator, none at all for a lane, whose data never passes through the host).
//!   hostd gives every application VC a channel of its own; the simulator gives a host one
//!   channel with all its VCs.
//! * **VCs** ([`VcHandle`]): admitted by natm-traffic's [`Cac`] on the link's rate (an
//!   unlimited link is admitted as an OC-3c line, [`NOMINAL_RATE`]); shaped as [`shaping`]
//!   derives from the QoS; received into frames of at most the QoS's `max_sdu` and the
//!   channel's buffer size. The handle is the adapter's handle, so it is what descriptors
//!   and completions carry.
//! * **Receive** ([`Host::handle_cells`]): each cell's header goes through one I.432 HEC
//!   receiver (the link's), F5 OAM cells go to the responder (end-to-end loopback requests
//!   are answered with the same cell as a reply, I.610 §10.2.4; segment requests are the
//!   switch's), F4 cells are counted and dropped, the rest go in runs to the adapter of
//!   their VC. Cells of no open VC are counted.
//! * **Transmit** ([`Host::poll_transmit`] / [`Host::transmitted`]): OAM first, then the
//!   channels by weighted round robin, a batch a unit (`round.rs`): in every round channels
//!   with CBR or VBR VCs first, each up to its rate's share, then the others by their UBR
//!   VCs' weights (CAC keeps the guaranteed rates within the link). A batch the link takes
//!   only in part stays with its channel and goes first next time: nothing the adapters
//!   produced is dropped.
//! * **Link state** ([`Host::link_down`] / [`Host::link_up`]): on failure queued cells are
//!   counted lost, every VC is flushed (its queued descriptors complete as aborted) and
//!   outstanding pings fail; the VCs stay open.
//!
//! # Call contract
//!
//! After any `handle_*`, command or `link_*` call, drain: [`Host::poll_transmit`] (with
//! [`Host::transmitted`]) until it gives nothing or the link is full, each channel's
//! completions ([`Host::channel_mut`]), and [`Host::poll_event`]; then wait until
//! [`Host::poll_timeout`] and call [`Host::handle_timeout`]. Time never goes back; every
//! time-dependent call takes `now`. Descriptors and receive buffers are posted on the
//! channel's adapter by the driver ([`Host::channel_mut`]), which knows where they come from.
//!
//! # Switched VCs
//!
//! With [`HostConfig::signalling`] set (the host's address and the settings of call control
//! and SSCOP), the host runs the UNI user side: a `natm_sig::Signalling` on VC 0.5, started
//! fresh each time the link comes up. Cells of 0.5 go through the link's HEC receiver like
//! every cell, then to natm-adapter's [`Reassembler`](natm_adapter::Reassembler) and the
//! entity; its SDUs are segmented onto 0.5 and sent first, with OAM, before the channels.
//!
//! * [`Host::call`] admits the QoS's `tx` on the link first (a refusal comes back at once
//!   as [`CallError::Refused`] with cause 37 and the explanation, nothing sent), then sends
//!   SETUP. [`Host::accept`] / [`Host::reject`] answer an [`Event::IncomingCall`];
//!   [`Host::release`] ends a call in any phase.
//! * Events: [`Event::SignallingUp`] / [`Event::SignallingDown`],
//!   [`Event::IncomingCall`] (calling and called party, the QoS in the host's view, the VC
//!   the network named), [`Event::CallConnected`] (the VC), [`Event::CallReleased`] (the
//!   cause; exactly one per call).
//! * **Who opens a call's VC: the driver**, on the channel of its choice, with
//!   [`Host::open_call_vc`] (natm-sim: its one channel; hostd: a channel per application
//!   VC, opened as for a PVC). The bandwidth is booked at [`call`](Host::call) /
//!   [`accept`](Host::accept) and held by the call until the VC takes it; when the call ends
//!   the host closes the VC (or drops the booking) itself, and a VC the driver closes first
//!   returns it then: it is returned exactly once either way.
//! * [`Host::link_down`] releases every call at once (cause 27 at U, reported), PVCs stay;
//!   a RESTART from the network is acknowledged and its calls released; an offered call not
//!   answered within [`SignallingConfig::answer_timeout`] is released with cause 18.
//!
//! What it is not: it moves no bytes to or from sockets or shared memory, reads no clock,
//! knows nothing of applications, connections, processes or listeners (the driver maps
//! those to channels and calls), and has no ILMI (its address is configured).

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

#[cfg(test)]
mod call_tests;
mod calls;
mod round;
mod spec;
#[cfg(test)]
mod tests;

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use natm_adapter::{Adapter, AdapterConfig, BufferMemory, HecCheck, RxVcConfig};
use natm_core::slotmap::SlotMap;
use natm_core::{
    Duration, HeaderFormat, Instant, LineRate, PhyRate, Qos, TrafficParams, VcId, Vci,
};
use natm_traffic::cac::{self, Cac, CacConfig};
use natm_traffic::policer::Contract;
use natm_traffic::sched::VcSpec;
use natm_wire::cell::{Cell as WireCell, CellHeader, HecReceiver, HecStats, HecVerdict, Pti};
use natm_wire::oam::{Loopback, OamCell, OamFlow, OamRepr};

pub use calls::{
    CallError, CallId, CallInfo, CallParams, CallPhase, Direction, IncomingCall, SIGNALLING_VC,
    SignallingConfig, user_cause,
};
pub use natm_sig::{Cause, CauseValue, Location, ReleaseOrigin};
pub use round::vc_weight;
pub use spec::{Scale, shaping};

/// A cell as the host moves it: 53 bytes, header first.
pub use natm_wire::cell::CellBytes;

/// OC-3c's cell rate: what an unlimited link is admitted as.
pub const NOMINAL_RATE: u32 = PhyRate::OC3.cells_per_s();

/// The largest AAL5 SDU.
const MAX_SDU: usize = 65535;

/// A channel: one adapter and the memory it works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChannelId(pub u32);

/// An open VC: the adapter's handle for it, unique in the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VcHandle(pub u32);

/// An outstanding loopback request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PingId(pub u64);

/// The memory a channel's adapter works on, lent by the driver for each call.
pub trait ChannelMemory {
    /// The buffers as the adapter sees them.
    type Buffers<'a>: BufferMemory
    where
        Self: 'a;

    /// The buffers, or `None` when the channel's data does not pass through the host (a
    /// lane): its cells are then counted as of no VC and it transmits nothing.
    fn buffers(&mut self) -> Option<Self::Buffers<'_>>;

    /// Whether received frames are handed back one at a time: [`Host::handle_cells`]
    /// returns after each frame this channel completes, so the driver can recycle its
    /// buffer before the next (a pool the driver owns, such as hostd's daemon path).
    fn frame_at_a_time(&self) -> bool {
        false
    }
}

impl ChannelMemory for natm_adapter::VecBuffers {
    type Buffers<'a> = &'a mut natm_adapter::VecBuffers;

    fn buffers(&mut self) -> Option<&mut natm_adapter::VecBuffers> {
        Some(self)
    }
}

/// The host's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostConfig {
    /// The host's name: CAC refusals name its link `NAME:link`.
    pub name: String,
    /// The link's rate, cells/s (`None`: unlimited, admitted as [`NOMINAL_RATE`]).
    pub link_rate: Option<u32>,
    /// The most channels open at once.
    pub max_channels: usize,
    /// Cells a channel gives per unit of its turn in the transmit round (a turn is its
    /// weight in units).
    pub batch: usize,
    /// The UNI user side on VC 0.5 (`None`: no signalling, PVCs only; cells of 0.5 are
    /// then of no VC).
    pub signalling: Option<SignallingConfig>,
}

impl HostConfig {
    /// A host named `name` on a link of `link_rate` cells/s (`None`: unlimited), at most
    /// 1,024 channels, batches of 64 cells.
    pub fn new(name: &str, link_rate: Option<u32>) -> HostConfig {
        HostConfig {
            name: String::from(name),
            link_rate,
            max_channels: 1024,
            batch: 64,
            signalling: None,
        }
    }
}

/// Why a channel or VC was not opened. Each names what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// VCIs 0..=31 are for signalling, OAM and ILMI.
    ReservedVci(VcId),
    /// The VPI does not fit a UNI header.
    VpiTooLarge(VcId),
    /// Another VC of this host has it.
    InUse {
        /// The VC asked for.
        vc: VcId,
        /// The VC that has it.
        by: VcHandle,
        /// Its channel.
        channel: ChannelId,
    },
    /// The host has its most channels open.
    TooManyChannels {
        /// The most.
        max: usize,
    },
    /// No such channel.
    UnknownChannel(ChannelId),
    /// Admission control refused the contract on the host's link.
    Admission(cac::Refusal),
    /// The channel's adapter refused the settings.
    Config(natm_adapter::ConfigError),
    /// The channel's adapter refused the VC (e.g. it holds its most VCs).
    Adapter(natm_adapter::OpenError),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::ReservedVci(vc) => write!(
                f,
                "VC {vc}: VCI {} is reserved (VCIs 0..=31 are for signalling, OAM and ILMI); use 32 or above",
                vc.vci.get()
            ),
            OpenError::VpiTooLarge(vc) => write!(f, "VC {vc}: VPI above 255 at the UNI"),
            OpenError::InUse { vc, by, .. } => {
                write!(f, "VC {vc} is in use by another channel (handle {})", by.0)
            }
            OpenError::TooManyChannels { max } => write!(f, "hostd has {max} VCs open, its most"),
            OpenError::UnknownChannel(c) => write!(f, "no channel {}", c.0),
            OpenError::Admission(r) => write!(f, "{r}"),
            OpenError::Config(e) => write!(f, "{e}"),
            OpenError::Adapter(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for OpenError {}

/// Why a loopback request was not sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PingError {
    /// The link is down.
    LinkDown(VcId),
}

impl fmt::Display for PingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PingError::LinkDown(vc) => write!(f, "link down: no loopback on {vc}"),
        }
    }
}

impl core::error::Error for PingError {}

/// What the host tells its driver, drained with [`Host::poll_event`].
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A loopback reply matched an outstanding request.
    PingReply {
        /// The request.
        ping: PingId,
        /// From sending the request to handling the reply.
        rtt: Duration,
    },
    /// No reply came before the request's deadline.
    PingTimeout {
        /// The request.
        ping: PingId,
        /// Its VC.
        vc: VcId,
        /// Whether it was a segment request.
        segment: bool,
    },
    /// The link went down under the request.
    PingFailed {
        /// The request.
        ping: PingId,
    },
    /// The SAAL on 0.5 is established.
    SignallingUp,
    /// The SAAL on 0.5 was lost (or the link went down).
    SignallingDown,
    /// The network offers a call: answer with [`Host::accept`] or [`Host::reject`] (no
    /// answer within [`SignallingConfig::answer_timeout`]: released with cause 18).
    IncomingCall(alloc::boxed::Box<IncomingCall>),
    /// A call is active on `vc`: for an outgoing call, open it now
    /// ([`Host::open_call_vc`]).
    CallConnected {
        /// The call.
        call: CallId,
        /// Its VC.
        vc: VcId,
    },
    /// A call ended; its VC (if it was open) is closed and its bandwidth returned. Every
    /// call ends with exactly one of these.
    CallReleased {
        /// The call.
        call: CallId,
        /// Why: the network's or far end's cause, or this host's.
        cause: Cause,
        /// Who ended it.
        by: ReleaseOrigin,
    },
}

/// The host's own counters (each adapter keeps its channel's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Cells of no open VC (or of a channel whose data does not pass through the host).
    pub rx_unknown_vc: u64,
    /// OAM cells received (F5 by PTI, F4 by VCI).
    pub rx_oam: u64,
    /// End-to-end loopback requests answered.
    pub loopbacks_answered: u64,
    /// Cells produced but not sent when the link went down.
    pub lost_on_failure: u64,
    /// Cells of the signalling VC (0.5) taken.
    pub rx_signalling: u64,
}

/// An open VC as the host records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VcInfo {
    /// Its channel.
    pub channel: ChannelId,
    /// Its VPI/VCI.
    pub vc: VcId,
    /// Its QoS as asked.
    pub qos: Qos,
    /// Its shaping.
    pub spec: VcSpec,
    /// Its receive side.
    pub rx: RxVcConfig,
    reservation: cac::Handle,
    call: Option<CallId>,
}

impl VcInfo {
    /// The call whose VC this is (`None`: a PVC).
    pub fn call(&self) -> Option<CallId> {
        self.call
    }
}

/// A channel: its adapter, the driver's memory, and the batch of cells the link has not
/// taken yet (`out[sent..filled]`).
struct Channel<M> {
    adapter: Adapter,
    config: AdapterConfig,
    mem: M,
    out: Vec<CellBytes>,
    sent: usize,
    filled: usize,
    /// Its class and weight in the transmit round.
    place: round::Place,
}

impl<M> Channel<M> {
    fn backlog(&self) -> bool {
        self.sent < self.filled
    }
}

/// A loopback request waiting for its reply.
struct Ping {
    id: PingId,
    vc: VcId,
    segment: bool,
    tag: u32,
    sent: Instant,
    deadline: Instant,
}

/// Where the cells [`Host::poll_transmit`] last gave came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    None,
    Oam,
    Channel(ChannelId),
}

/// One host. See the [crate documentation](crate).
pub struct Host<M> {
    config: HostConfig,
    cac: Cac,
    /// Boxed: a channel (its adapter's stage above all) is kilobytes, and the map moves
    /// its values on every insert and remove.
    channels: BTreeMap<ChannelId, Box<Channel<M>>>,
    next_channel: u32,
    vcs: BTreeMap<VcHandle, VcInfo>,
    /// VPI/VCI key → channel.
    by_vc: SlotMap,
    next_handle: u32,
    link_up: bool,
    hec: HecReceiver,
    oam_out: VecDeque<CellBytes>,
    pings: Vec<Ping>,
    next_ping: u64,
    events: VecDeque<Event>,
    counters: Counters,
    /// The UNI user side, when the host signals.
    sig: Option<calls::Sig>,
    /// The transmit round over the channels.
    round: round::Round,
    /// The channel whose batch the link took only in part: it goes first next time.
    stalled: Option<ChannelId>,
    source: Source,
}

impl<M: ChannelMemory> Host<M> {
    /// A host with no channels and its link down.
    pub fn new(config: HostConfig) -> Host<M> {
        let cac = Cac::new(CacConfig {
            link: format!("{}:link", config.name),
            capacity: config.link_rate.unwrap_or(NOMINAL_RATE),
            buffer_cells: 0,
            max_ubr: 4096,
        });
        Host {
            sig: config.signalling.clone().map(calls::Sig::new),
            config,
            cac,
            channels: BTreeMap::new(),
            next_channel: 1,
            vcs: BTreeMap::new(),
            by_vc: SlotMap::new(),
            next_handle: 1,
            link_up: false,
            hec: HecReceiver::new(),
            oam_out: VecDeque::new(),
            pings: Vec::new(),
            next_ping: 1,
            events: VecDeque::new(),
            counters: Counters::default(),
            round: round::Round::default(),
            stalled: None,
            source: Source::None,
        }
    }

    /// The settings it was made with.
    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// Admission control on the link.
    pub fn cac(&self) -> &Cac {
        &self.cac
    }

    /// The host's own counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The link's HEC receiver's counters.
    pub fn hec_stats(&self) -> HecStats {
        self.hec.stats()
    }

    /// Whether the link is up.
    pub fn is_link_up(&self) -> bool {
        self.link_up
    }

    // ------------------------------------------------------------ channels and VCs

    /// Opens a channel: an adapter made from `adapter` (its link rate is the host's; its
    /// HEC is not checked again, the host's receiver did) over `mem`.
    pub fn open_channel(
        &mut self,
        mut adapter: AdapterConfig,
        mem: M,
    ) -> Result<ChannelId, OpenError> {
        if self.channels.len() >= self.config.max_channels {
            return Err(OpenError::TooManyChannels {
                max: self.config.max_channels,
            });
        }
        adapter.link = self
            .config
            .link_rate
            .and_then(LineRate::cells)
            .unwrap_or(LineRate::Unlimited);
        adapter.hec = HecCheck::Off;
        let made = Adapter::new(adapter).map_err(OpenError::Config)?;
        let id = ChannelId(self.next_channel);
        self.next_channel = self.next_channel.wrapping_add(1).max(1);
        let place = self.round.add(id);
        self.channels.insert(
            id,
            Box::new(Channel {
                adapter: made,
                config: adapter,
                mem,
                out: vec![[0; 53]; self.config.batch.max(1)],
                sent: 0,
                filled: 0,
                place,
            }),
        );
        Ok(id)
    }

    /// Opens `vc` on channel `ch` with `qos`: admitted on the link, shaped as [`shaping`]
    /// says, received into frames of at most the QoS's `max_sdu` (65,535 when 0) and the
    /// channel's buffer size.
    pub fn open_vc(&mut self, ch: ChannelId, vc: VcId, qos: &Qos) -> Result<VcHandle, OpenError> {
        self.open_vc_scaled(ch, vc, qos, Scale::CONTRACT)
    }

    /// [`open_vc`](Self::open_vc) with the shaped rates scaled: a host that sends faster
    /// (or slower) than its contract, for testing the network's policing. Admission still
    /// books the contract.
    pub fn open_vc_scaled(
        &mut self,
        ch: ChannelId,
        vc: VcId,
        qos: &Qos,
        scale: Scale,
    ) -> Result<VcHandle, OpenError> {
        self.open_vc_booked(ch, vc, qos, scale, None)
    }

    /// Opens a VC with the bandwidth `booked` for a call, or admitted now (`None`). A
    /// booking is left to its call when the VC does not open.
    fn open_vc_booked(
        &mut self,
        ch: ChannelId,
        vc: VcId,
        qos: &Qos,
        scale: Scale,
        booked: Option<(cac::Handle, CallId)>,
    ) -> Result<VcHandle, OpenError> {
        self.check_vc(vc)?;
        let Some(channel) = self.channels.get_mut(&ch) else {
            return Err(OpenError::UnknownChannel(ch));
        };
        let reservation = match booked {
            Some((b, _)) => b,
            None => self.cac.admit(&qos.tx).map_err(OpenError::Admission)?,
        };
        let contract = self
            .cac
            .reservation(reservation)
            .map(|r| r.contract)
            .unwrap_or_default();
        let capacity = self.cac.config().capacity;
        let spec = shaping(&qos.tx, &contract, capacity, self.config.link_rate, scale);
        let max_sdu = match qos.rx.max_sdu {
            0 => MAX_SDU,
            m => m as usize,
        };
        let rx = RxVcConfig::aal5(max_sdu.min(channel.config.rx_buffer_size).min(MAX_SDU));
        let handle = VcHandle(self.next_handle);
        if let Err(e) = channel.adapter.open_vc(handle.0, vc, spec, rx) {
            if booked.is_none() {
                let _ = self.cac.release(reservation);
            }
            return Err(OpenError::Adapter(e));
        }
        self.next_handle = self.next_handle.wrapping_add(1).max(1);
        self.round
            .vc_changed(ch, &mut channel.place, &spec, capacity, true);
        self.by_vc.insert(vc.key(), ch.0);
        self.vcs.insert(
            handle,
            VcInfo {
                channel: ch,
                vc,
                qos: *qos,
                spec,
                rx,
                reservation,
                call: booked.map(|(_, c)| c),
            },
        );
        Ok(handle)
    }

    /// The weight a VC sending `tx` gets in the transmit round once open ([`vc_weight`] of
    /// its shaping at the contract admission gives it), as a driver that hands the VC's
    /// cells to someone else (hostd's lanes, to the switch) needs it beforehand.
    pub fn weight_of(&self, tx: &TrafficParams) -> u32 {
        let capacity = self.cac.config().capacity;
        Contract::from_params(tx, capacity).map_or(1, |contract| {
            let spec = shaping(
                tx,
                &contract,
                capacity,
                self.config.link_rate,
                Scale::CONTRACT,
            );
            vc_weight(&spec, capacity)
        })
    }

    /// The sum of the transmit-round weights of the channels whose memory `pick` chooses
    /// (a channel weighs its VCs' weights, 1 without VCs): what those channels weigh on the
    /// host's line beside senders outside the round (hostd's main link beside its lanes).
    pub fn weight_of_channels(&self, mut pick: impl FnMut(&M) -> bool) -> u32 {
        self.channels
            .values()
            .filter(|c| pick(&c.mem))
            .fold(0u32, |sum, c| sum.saturating_add(c.place.weight()))
    }

    /// Whether `vc` could be opened here: a user VCI, a UNI VPI, not open already.
    pub fn check_vc(&self, vc: VcId) -> Result<(), OpenError> {
        if vc.vci.get() < Vci::FIRST_USER {
            return Err(OpenError::ReservedVci(vc));
        }
        if !vc.vpi.fits(HeaderFormat::Uni) {
            return Err(OpenError::VpiTooLarge(vc));
        }
        if let Some(c) = self.by_vc.get(vc.key()) {
            let by = self
                .vcs
                .iter()
                .find(|(_, i)| i.vc == vc)
                .map_or(VcHandle(0), |(h, _)| *h);
            return Err(OpenError::InUse {
                vc,
                by,
                channel: ChannelId(c),
            });
        }
        Ok(())
    }

    /// Closes a VC: its adapter state goes (queued descriptors complete as aborted) and its
    /// reservation is returned. `None` if it is not open.
    pub fn close_vc(&mut self, handle: VcHandle) -> Option<VcInfo> {
        let info = self.vcs.remove(&handle)?;
        self.by_vc.remove(info.vc.key());
        let _ = self.cac.release(info.reservation);
        if let Some(c) = self.channels.get_mut(&info.channel) {
            let _ = c.adapter.close_vc(handle.0);
            let capacity = self.cac.config().capacity;
            self.round
                .vc_changed(info.channel, &mut c.place, &info.spec, capacity, false);
        }
        if let Some(call) = info.call {
            self.call_vc_closed(call);
        }
        Some(info)
    }

    /// Closes a channel and its VCs; gives its memory back. Cells it had produced and the
    /// link had not taken are dropped with it.
    pub fn close_channel(&mut self, ch: ChannelId) -> Option<M> {
        let handles: Vec<VcHandle> = self.vcs_of(ch).map(|(h, _)| h).collect();
        for h in handles {
            self.close_vc(h);
        }
        if self.source == Source::Channel(ch) {
            self.source = Source::None;
        }
        if self.stalled == Some(ch) {
            self.stalled = None;
        }
        let mut c = self.channels.remove(&ch)?;
        self.round.remove(&mut c.place);
        Some(c.mem)
    }

    /// Gives channel `ch` a fresh adapter with its VCs reopened in VPI/VCI order (same
    /// handles, specs and reservations): what a host keeps across a restart of its
    /// adapter, and what it loses (every buffer, queue and partial frame).
    pub fn reset_channel(&mut self, ch: ChannelId) -> Result<(), OpenError> {
        let Some(c) = self.channels.get_mut(&ch) else {
            return Err(OpenError::UnknownChannel(ch));
        };
        c.adapter = Adapter::new(c.config).map_err(OpenError::Config)?;
        c.sent = 0;
        c.filled = 0;
        let mut vcs: Vec<(&VcHandle, &VcInfo)> =
            self.vcs.iter().filter(|(_, i)| i.channel == ch).collect();
        vcs.sort_by_key(|(_, i)| i.vc);
        for (h, info) in vcs {
            c.adapter
                .open_vc(h.0, info.vc, info.spec, info.rx)
                .map_err(OpenError::Adapter)?;
        }
        Ok(())
    }

    /// The open VCs of channel `ch`.
    pub fn vcs_of(&self, ch: ChannelId) -> impl Iterator<Item = (VcHandle, &VcInfo)> {
        self.vcs
            .iter()
            .filter(move |(_, i)| i.channel == ch)
            .map(|(h, i)| (*h, i))
    }

    /// An open VC.
    pub fn vc(&self, handle: VcHandle) -> Option<&VcInfo> {
        self.vcs.get(&handle)
    }

    /// Every open channel's id, in order.
    pub fn channel_ids(&self) -> impl Iterator<Item = ChannelId> + '_ {
        self.channels.keys().copied()
    }

    /// Channel `ch`'s adapter.
    pub fn adapter(&self, ch: ChannelId) -> Option<&Adapter> {
        self.channels.get(&ch).map(|c| &c.adapter)
    }

    /// Channel `ch`'s memory.
    pub fn memory(&self, ch: ChannelId) -> Option<&M> {
        self.channels.get(&ch).map(|c| &c.mem)
    }

    /// Channel `ch`'s adapter and memory, for the driver to post descriptors and receive
    /// buffers and to take completions. Opening or closing VCs on the adapter directly
    /// bypasses admission and demultiplexing: use [`open_vc`](Self::open_vc).
    pub fn channel_mut(&mut self, ch: ChannelId) -> Option<(&mut Adapter, &mut M)> {
        self.channels
            .get_mut(&ch)
            .map(|c| (&mut c.adapter, &mut c.mem))
    }

    /// Every channel's adapter and memory, in order.
    pub fn channels_mut(&mut self) -> impl Iterator<Item = (ChannelId, &mut Adapter, &mut M)> {
        self.channels
            .iter_mut()
            .map(|(id, c)| (*id, &mut c.adapter, &mut c.mem))
    }

    // ---------------------------------------------------------------------- link

    /// The link is up (again): a fresh HEC receiver, transmission resumes.
    pub fn link_up(&mut self) {
        self.link_up = true;
        self.hec = HecReceiver::new();
        self.signalling_link_up();
    }

    /// The link failed: queued cells are counted lost, every VC is flushed (its queued
    /// descriptors complete as aborted, to be taken from the channel), outstanding pings
    /// fail. VCs, channels and reservations stay.
    pub fn link_down(&mut self) {
        self.link_up = false;
        self.counters.lost_on_failure += self.oam_out.len() as u64;
        self.oam_out.clear();
        for c in self.channels.values_mut() {
            self.counters.lost_on_failure += (c.filled - c.sent) as u64;
            c.sent = 0;
            c.filled = 0;
        }
        for (h, info) in &self.vcs {
            if let Some(c) = self.channels.get_mut(&info.channel) {
                let _ = c.adapter.close_vc(h.0);
                let _ = c.adapter.open_vc(h.0, info.vc, info.spec, info.rx);
            }
        }
        for p in self.pings.drain(..) {
            self.events.push_back(Event::PingFailed { ping: p.id });
        }
        self.end_round();
        self.source = Source::None;
        self.signalling_link_down();
    }

    // ------------------------------------------------------------------- receive

    /// Takes cells from the link (their headers are corrected in place where the HEC
    /// receiver may). Returns how many it took: all of them, or fewer just after a
    /// [`frame_at_a_time`](ChannelMemory::frame_at_a_time) channel completed a frame —
    /// drain that channel's completions, then give the rest.
    pub fn handle_cells(&mut self, now: Instant, cells: &mut [CellBytes]) -> usize {
        let mut run: Option<(ChannelId, usize)> = None;
        // The last lookup: a frame's cells share a header.
        let mut last: Option<(u32, Option<ChannelId>)> = None;
        for i in 0..cells.len() {
            let (target, eof) = self.classify(now, &mut cells[i], &mut last);
            if let Some((ch, start)) = run
                && target != Some(ch)
            {
                self.deliver(now, ch, &cells[start..i]);
                run = None;
            }
            let Some(t) = target else {
                continue;
            };
            let start = run.get_or_insert((t, i)).1;
            if eof
                && self
                    .channels
                    .get(&t)
                    .is_some_and(|c| c.mem.frame_at_a_time())
            {
                self.deliver(now, t, &cells[start..=i]);
                return i + 1;
            }
        }
        if let Some((ch, start)) = run {
            self.deliver(now, ch, &cells[start..]);
        }
        cells.len()
    }

    /// Checks a cell's header and says which channel it goes to (and whether it ends a
    /// frame); OAM is handled here.
    fn classify(
        &mut self,
        now: Instant,
        cell: &mut CellBytes,
        last: &mut Option<(u32, Option<ChannelId>)>,
    ) -> (Option<ChannelId>, bool) {
        let verdict = self
            .hec
            .receive(&mut WireCell::new_unchecked(&mut cell[..]));
        if matches!(verdict, HecVerdict::Discarded { .. }) {
            return (None, false);
        }
        let h =
            CellHeader::parse_unverified(&WireCell::new_unchecked(&cell[..]), HeaderFormat::Uni);
        if h.pti.is_f5_oam() {
            self.counters.rx_oam += 1;
            self.oam_in(now, h, cell);
            return (None, false);
        }
        if matches!(h.vc.vci, Vci::F4_SEGMENT | Vci::F4_END_TO_END) {
            self.counters.rx_oam += 1;
            return (None, false);
        }
        if h.vc == SIGNALLING_VC && self.sig.is_some() {
            self.signalling_cell(now, cell);
            return (None, false);
        }
        let key = h.vc.key();
        let target = match *last {
            Some((k, t)) if k == key => t,
            _ => {
                let t = self.by_vc.get(key).map(ChannelId);
                *last = Some((key, t));
                t
            }
        };
        if target.is_none() {
            self.counters.rx_unknown_vc += 1;
        }
        (target, h.pti.is_end_of_frame())
    }

    /// Hands a run of one channel's cells to its adapter.
    fn deliver(&mut self, now: Instant, ch: ChannelId, cells: &[CellBytes]) {
        let Some(c) = self.channels.get_mut(&ch) else {
            return;
        };
        match c.mem.buffers() {
            Some(mut b) => c.adapter.handle_cells(now, cells, &mut b),
            None => self.counters.rx_unknown_vc += cells.len() as u64,
        }
    }

    fn oam_in(&mut self, now: Instant, h: CellHeader, cell: &CellBytes) {
        let Ok(oam) = OamCell::new_checked(&cell[5..]) else {
            return;
        };
        let Ok(OamRepr::Loopback(lb)) = OamRepr::parse(&oam) else {
            return;
        };
        let segment = h.pti == Pti::SegmentF5;
        if lb.request {
            if !segment {
                let reply = OamRepr::Loopback(lb.reply()).to_cell(OamFlow::F5EndToEnd, h.vc);
                self.oam_out.push_back(reply);
                self.counters.loopbacks_answered += 1;
            }
            return;
        }
        if let Some(i) = self
            .pings
            .iter()
            .position(|p| p.vc == h.vc && p.tag == lb.correlation_tag && p.segment == segment)
        {
            let p = self.pings.swap_remove(i);
            let rtt = Duration::from_nanos(now.saturating_duration_since(p.sent).as_nanos().max(1));
            self.events.push_back(Event::PingReply { ping: p.id, rtt });
        }
    }

    // ------------------------------------------------------------------ transmit

    /// The next cells for the link, or `None` when a whole round of the channels gave
    /// nothing (or the link is down). Say how many the link took with
    /// [`transmitted`](Self::transmitted) before calling again.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<&[CellBytes]> {
        self.source = Source::None;
        if !self.link_up {
            return None;
        }
        self.start_signalling(now);
        self.pump_signalling(now);
        if !self.oam_out.is_empty() {
            self.source = Source::Oam;
            return Some(self.oam_out.make_contiguous());
        }
        if let Some(id) = self.stalled.take()
            && self.channels.get(&id).is_some_and(|c| c.backlog())
        {
            self.source = Source::Channel(id);
        }
        while self.source == Source::None {
            let id = self.round.next()?;
            let Some(c) = self.channels.get_mut(&id) else {
                continue;
            };
            if !c.backlog() {
                c.sent = 0;
                c.filled = match c.mem.buffers() {
                    Some(b) => c.adapter.poll_transmit(now, &b, &mut c.out[..]),
                    None => 0,
                };
            }
            if c.backlog() {
                self.source = Source::Channel(id);
            } else {
                self.round.dry(&c.place);
            }
        }
        let Source::Channel(id) = self.source else {
            return None;
        };
        let c = self.channels.get(&id)?;
        Some(&c.out[c.sent..c.filled])
    }

    /// Ends the round: the next [`poll_transmit`](Self::poll_transmit) starts a fresh one.
    fn end_round(&mut self) {
        self.round.end();
        self.stalled = None;
    }

    /// The link took the first `n` of the cells [`poll_transmit`](Self::poll_transmit)
    /// gave. Fewer than given: the link is full, the rest go first next time.
    pub fn transmitted(&mut self, n: usize) {
        match self.source {
            Source::None => {}
            Source::Oam => {
                self.oam_out.drain(..n.min(self.oam_out.len()));
            }
            Source::Channel(id) => {
                let Some(c) = self.channels.get_mut(&id) else {
                    return;
                };
                c.sent = (c.sent + n).min(c.filled);
                if n > 0 {
                    self.round.progressed();
                }
                if c.backlog() {
                    // The link is full: this channel goes first next time.
                    self.stalled = Some(id);
                }
            }
        }
        self.source = Source::None;
    }

    /// Whether a channel holds cells the link refused.
    pub fn has_backlog(&self) -> bool {
        !self.oam_out.is_empty() || self.channels.values().any(|c| c.backlog())
    }

    // ---------------------------------------------------------------------- OAM

    /// Sends an F5 loopback request on `vc` (end-to-end, or segment: answered by the
    /// switch) with correlation tag `tag`; its reply or its timeout comes as an [`Event`].
    pub fn ping(
        &mut self,
        now: Instant,
        vc: VcId,
        segment: bool,
        tag: u32,
        timeout: Duration,
    ) -> Result<PingId, PingError> {
        if !self.link_up {
            return Err(PingError::LinkDown(vc));
        }
        let flow = if segment {
            OamFlow::F5Segment
        } else {
            OamFlow::F5EndToEnd
        };
        self.oam_out
            .push_back(OamRepr::Loopback(Loopback::request(tag)).to_cell(flow, vc));
        let id = PingId(self.next_ping);
        self.next_ping += 1;
        self.pings.push(Ping {
            id,
            vc,
            segment,
            tag,
            sent: now,
            deadline: now
                .checked_add(timeout)
                .unwrap_or(Instant::from_nanos(u64::MAX)),
        });
        Ok(id)
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    // -------------------------------------------------------------------- timers

    /// The earliest deadline: an adapter's (reassembly, shaping) or a ping's. A channel
    /// whose batch waits for room on the link has no deadline of its own: its cells wait
    /// for the link, not the clock (see [`has_backlog`](Self::has_backlog)).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let adapters = self
            .channels
            .values()
            .filter(|c| !c.backlog())
            .filter_map(|c| c.adapter.poll_timeout());
        let pings = self.pings.iter().map(|p| p.deadline);
        adapters.chain(pings).chain(self.signalling_timeout()).min()
    }

    /// Runs what is due at `now`: adapters' timers, ping deadlines, signalling's timers.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.signalling_handle_timeout(now);
        for c in self.channels.values_mut() {
            if c.adapter.poll_timeout().is_some_and(|t| t <= now) {
                c.adapter.handle_timeout(now);
            }
        }
        let mut i = 0;
        while i < self.pings.len() {
            if self.pings[i].deadline <= now {
                let p = self.pings.swap_remove(i);
                self.events.push_back(Event::PingTimeout {
                    ping: p.id,
                    vc: p.vc,
                    segment: p.segment,
                });
            } else {
                i += 1;
            }
        }
    }
}

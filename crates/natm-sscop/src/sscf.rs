//! SSCF-UNI (ITU-T Q.2130): the coordination function between Q.2931 and SSCOP on the UNI.
//!
//! SSCF-UNI is a thin mapping with no header of its own: the signalling layer's
//! AAL-ESTABLISH, AAL-RELEASE, AAL-DATA and AAL-UNITDATA primitives ([`SaalRequest`],
//! [`SaalEvent`]) become SSCOP's AA-signals, and SSCOP's resynchronisation and recovery are
//! hidden behind AAL-ESTABLISH (Q.2130 §6, the SDL of figure 5, states 1, 2, 4, 10 and 5):
//!
//! | state | AAL-ESTABLISH.req | AAL-RELEASE.req | AAL-DATA.req |
//! |---|---|---|---|
//! | 1 released | AA-ESTABLISH.req → 2 | AAL-RELEASE.conf | dropped |
//! | 2 awaiting establish | ignored | AA-RELEASE.req → 4 | dropped |
//! | 4 awaiting release | AA-ESTABLISH.req → 2 | ignored | dropped |
//! | 10 established | AA-RESYNC.req → 5 | AA-RELEASE.req → 4 | AA-DATA.req |
//! | 5 resync | ignored | AA-RELEASE.req → 4 | dropped |
//!
//! | SSCOP signal | in state | SSCF does |
//! |---|---|---|
//! | AA-ESTABLISH.ind | 1 | AA-ESTABLISH.resp, AAL-ESTABLISH.ind → 10 |
//! | AA-ESTABLISH.conf | 2 | AAL-ESTABLISH.conf → 10 |
//! | AA-RELEASE.ind | 2, 10, 5 | AAL-RELEASE.ind → 1 |
//! | AA-RELEASE.conf | 4 | AAL-RELEASE.conf → 1 |
//! | AA-DATA.ind | 10 | AAL-DATA.ind |
//! | AA-RESYNC.ind | 10 | AA-RESYNC.resp, AAL-ESTABLISH.ind |
//! | AA-RESYNC.conf | 5 | AAL-ESTABLISH.conf → 10 |
//! | AA-RECOVER.ind | 10 | AA-RECOVER.resp, AAL-ESTABLISH.ind |
//! | AA-UNITDATA.ind | any | AAL-UNITDATA.ind |
//!
//! Anything else is ignored (counted in [`Sscf::ignored`]). SSCF-UNI asks SSCOP for buffer
//! release (BR = yes) on establishment, as Q.2130 §6.2 does, so unacknowledged data is
//! dropped across a new connection; Q.2931 recovers by its own status enquiry.
//!
//! Call contract: as [`Sscop`]'s: after [`Sscf::request`], [`Sscf::handle_pdu`] or
//! [`Sscf::handle_timeout`], drain [`Sscf::poll_transmit`] and [`Sscf::poll_event`] until
//! they return `None`, then wait until [`Sscf::poll_timeout`].

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use natm_core::Instant;

use crate::{Config, Event, Sscop, State as SscopState};

/// What the signalling layer asks of the AAL (Q.2130's AAL-*.request primitives).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SaalRequest {
    /// AAL-ESTABLISH.request: bring the link up (or resynchronise an established one).
    Establish,
    /// AAL-RELEASE.request: take the link down.
    Release,
    /// AAL-DATA.request: send one Q.2931 message assured (SSCOP SD).
    Data(Vec<u8>),
    /// AAL-UNITDATA.request: send one message unassured (SSCOP UD).
    UnitData(Vec<u8>),
}

/// What the AAL tells the signalling layer (Q.2130's indications and confirms).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SaalEvent {
    /// AAL-ESTABLISH.indication: the peer established the link, or it was resynchronised
    /// or recovered (Q.2931 then treats it as a new link: status enquiry, T309 stopped).
    EstablishIndication,
    /// AAL-ESTABLISH.confirm: our establish (or resync) request completed.
    EstablishConfirm,
    /// AAL-RELEASE.indication: the link was lost or the peer released it.
    ReleaseIndication,
    /// AAL-RELEASE.confirm: our release request completed.
    ReleaseConfirm,
    /// AAL-DATA.indication: one Q.2931 message, in order.
    Data(Vec<u8>),
    /// AAL-UNITDATA.indication: one unassured message.
    UnitData(Vec<u8>),
}

/// SSCF-UNI's state (Q.2130 figure 5 numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SscfState {
    /// 1: released.
    Released = 1,
    /// 2: awaiting establish.
    AwaitingEstablish = 2,
    /// 4: awaiting release.
    AwaitingRelease = 4,
    /// 5: resynchronising.
    Resync = 5,
    /// 10: established.
    Established = 10,
}

/// SSCF-UNI over one SSCOP connection: what Q.2931 signalling drives on VC 0.5.
#[derive(Debug)]
pub struct Sscf {
    sscop: Sscop,
    state: SscfState,
    events: VecDeque<SaalEvent>,
    ignored: u64,
}

impl Sscf {
    /// A released SSCF-UNI over a new SSCOP with `config`.
    pub fn new(config: Config) -> Self {
        Sscf {
            sscop: Sscop::new(config),
            state: SscfState::Released,
            events: VecDeque::new(),
            ignored: 0,
        }
    }

    /// The SSCF state.
    pub fn state(&self) -> SscfState {
        self.state
    }

    /// The SSCOP underneath (for its state and counters).
    pub fn sscop(&self) -> &Sscop {
        &self.sscop
    }

    /// Signals that were ignored in the state they arrived in.
    pub fn ignored(&self) -> u64 {
        self.ignored
    }

    /// One request from the signalling layer.
    pub fn request(&mut self, now: Instant, r: SaalRequest) {
        use SscfState::*;
        match (r, self.state) {
            (SaalRequest::Establish, Released | AwaitingRelease) => {
                self.state = AwaitingEstablish;
                self.sscop.establish_request(now, Vec::new(), true);
            }
            (SaalRequest::Establish, Established) => {
                self.state = Resync;
                self.sscop.resync_request(now, Vec::new());
            }
            (SaalRequest::Release, Released) => self.events.push_back(SaalEvent::ReleaseConfirm),
            (SaalRequest::Release, AwaitingEstablish | Established | Resync) => {
                self.state = AwaitingRelease;
                self.sscop.release_request(now, Vec::new());
            }
            (SaalRequest::Data(d), Established) => self.sscop.data_request(now, d),
            (SaalRequest::UnitData(d), _) => self.sscop.unitdata_request(now, d),
            _ => self.ignored += 1,
        }
        self.pump(now);
    }

    /// One AAL5 SDU received on VC 0.5.
    pub fn handle_pdu(&mut self, now: Instant, sdu: &[u8]) {
        self.sscop.handle_pdu(now, sdu);
        self.pump(now);
    }

    /// One AAL5 SDU to send on VC 0.5.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.sscop.poll_transmit()
    }

    /// The next indication or confirm for the signalling layer.
    pub fn poll_event(&mut self) -> Option<SaalEvent> {
        self.events.pop_front()
    }

    /// When [`Sscf::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.sscop.poll_timeout()
    }

    /// Run the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.sscop.handle_timeout(now);
        self.pump(now);
    }

    /// Map SSCOP's signals to SSCF's (the second table in the module docs).
    fn pump(&mut self, now: Instant) {
        use SscfState::*;
        while let Some(e) = self.sscop.poll_event() {
            match (e, self.state) {
                (Event::EstablishIndication { .. }, Released) => {
                    self.sscop.establish_response(now, Vec::new(), true);
                    self.state = Established;
                    self.events.push_back(SaalEvent::EstablishIndication);
                }
                (Event::EstablishConfirm { .. }, AwaitingEstablish) => {
                    self.state = Established;
                    self.events.push_back(SaalEvent::EstablishConfirm);
                }
                (Event::ReleaseIndication { .. }, AwaitingEstablish | Established | Resync) => {
                    self.state = Released;
                    self.events.push_back(SaalEvent::ReleaseIndication);
                }
                (Event::ReleaseConfirm, AwaitingRelease) => {
                    self.state = Released;
                    self.events.push_back(SaalEvent::ReleaseConfirm);
                }
                (Event::Data { data, .. }, Established) => {
                    self.events.push_back(SaalEvent::Data(data));
                }
                (Event::ResyncIndication { .. }, Established) => {
                    self.sscop.resync_response(now);
                    self.events.push_back(SaalEvent::EstablishIndication);
                }
                (Event::ResyncConfirm, Resync) => {
                    self.state = Established;
                    self.events.push_back(SaalEvent::EstablishConfirm);
                }
                (Event::RecoverIndication, Established) => {
                    self.sscop.recover_response(now);
                    self.events.push_back(SaalEvent::EstablishIndication);
                }
                (Event::UnitData(d), _) => self.events.push_back(SaalEvent::UnitData(d)),
                // Management reports go to layer management, not to Q.2931.
                (Event::ManagementError(_) | Event::ManagementData(_), _) => {}
                _ => self.ignored += 1,
            }
        }
        debug_assert!(
            self.state != Established || self.sscop.state() != SscopState::Idle,
            "SSCF established over an idle SSCOP"
        );
    }
}

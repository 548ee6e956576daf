//! SSCF-UNI (ITU-T Q.2130): the coordination function between Q.2931 and SSCOP on the UNI.
//!
//! SSCF-UNI is a thin mapping with no header of its own: the signalling layer's
//! AAL-ESTABLISH, AAL-RELEASE, AAL-DATA and AAL-UNITDATA primitives ([`SaalRequest`],
//! [`SaalEvent`]) become SSCOP's AA-signals, and SSCOP's resynchronisation and recovery are
//! hidden behind AAL-ESTABLISH (Q.2130's SDL; states named SSCF/SSCOP as ngatm does):
//!
//! | state | AAL-ESTABLISH.req | AAL-RELEASE.req | AAL-DATA.req |
//! |---|---|---|---|
//! | 1/1 released | AA-ESTABLISH.req → 2/2 | AAL-RELEASE.conf | dropped |
//! | 2/2 awaiting establish | ignored | AA-RELEASE.req → 3/4 | dropped |
//! | 3/4 awaiting release | AA-ESTABLISH.req → 2/2 | ignored | dropped |
//! | 4/10 established | AA-RESYNC.req → 2/5 | AA-RELEASE.req → 3/4 | AA-DATA.req |
//! | 2/5 resync | ignored | AA-RELEASE.req → 3/4 | dropped |
//!
//! AAL-UNITDATA.request becomes AA-UNITDATA.request in every state.
//!
//! | SSCOP signal | in state | SSCF does |
//! |---|---|---|
//! | AA-ESTABLISH.ind | 1/1 | AA-ESTABLISH.resp, AAL-ESTABLISH.ind → 4/10 |
//! | AA-ESTABLISH.conf | 2/2 | AAL-ESTABLISH.conf → 4/10 |
//! | AA-RELEASE.ind | 2/2, 4/10, 2/5 | AAL-RELEASE.ind → 1/1 |
//! | AA-RELEASE.conf | 3/4 | AAL-RELEASE.conf → 1/1 |
//! | AA-DATA.ind | 4/10 | AAL-DATA.ind |
//! | AA-RESYNC.ind | 4/10 | AA-RESYNC.resp, AAL-ESTABLISH.ind |
//! | AA-RESYNC.conf | 2/5 | AAL-ESTABLISH.conf → 4/10 |
//! | AA-RECOVER.ind | 4/10 | AA-RECOVER.resp, AAL-ESTABLISH.ind |
//! | AA-UNITDATA.ind | any | AAL-UNITDATA.ind |
//!
//! Anything else is ignored (counted in [`Sscf::ignored`]). SSCF-UNI asks SSCOP for buffer
//! release (BR = yes) on establishment, as ngatm's SSCF-UNI does, so unacknowledged data is
//! dropped across a new connection; Q.2931 recovers by its own status enquiry. Q.2110's
//! known limit (a stale BGAK, RSAK or ERAK mixing two numberings; [`Sscop`]'s module docs)
//! reaches the user as messages mixed, lost or repeated around an AAL-ESTABLISH signal,
//! and once as a message lost with no signal until the recovery that follows it.
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

/// SSCF-UNI's state. Q.2130 names each by its own number and the SSCOP state beside it
/// (SSCF/SSCOP, as ngatm's `sscfudef.h` lists them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SscfState {
    /// 1/1: released.
    Released,
    /// 2/2: awaiting establish (BGN sent).
    AwaitingEstablish,
    /// 3/4: awaiting release (END sent).
    AwaitingRelease,
    /// 4/10: established (data transfer ready).
    Established,
    /// 2/5: resynchronising (RS sent).
    Resync,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::T0;
    use alloc::vec;
    use natm_wire::sscop::{Repr, Source};

    fn carry(from: &mut Sscf, to: &mut Sscf) {
        while let Some(p) = from.poll_transmit() {
            to.handle_pdu(T0, &p);
        }
    }

    fn drain(s: &mut Sscf) -> Vec<SaalEvent> {
        core::iter::from_fn(|| s.poll_event()).collect()
    }

    /// Two SSCFs, the first established towards the second.
    fn up() -> (Sscf, Sscf) {
        let mut a = Sscf::new(Config::default());
        let mut b = Sscf::new(Config::default());
        a.request(T0, SaalRequest::Establish);
        assert_eq!(a.state(), SscfState::AwaitingEstablish);
        carry(&mut a, &mut b); // BGN
        assert_eq!(drain(&mut b), [SaalEvent::EstablishIndication]);
        carry(&mut b, &mut a); // BGAK
        assert_eq!(drain(&mut a), [SaalEvent::EstablishConfirm]);
        assert_eq!(
            (a.state(), b.state()),
            (SscfState::Established, SscfState::Established)
        );
        (a, b)
    }

    #[test]
    fn establish_data_release() {
        let (mut a, mut b) = up();
        a.request(T0, SaalRequest::Data(b"SETUP".to_vec()));
        b.request(T0, SaalRequest::UnitData(b"UD".to_vec()));
        carry(&mut a, &mut b);
        carry(&mut b, &mut a);
        assert_eq!(drain(&mut b), [SaalEvent::Data(b"SETUP".to_vec())]);
        assert_eq!(drain(&mut a), [SaalEvent::UnitData(b"UD".to_vec())]);
        a.request(T0, SaalRequest::Release);
        assert_eq!(a.state(), SscfState::AwaitingRelease);
        carry(&mut a, &mut b); // END
        assert_eq!(drain(&mut b), [SaalEvent::ReleaseIndication]);
        carry(&mut b, &mut a); // ENDAK
        assert_eq!(drain(&mut a), [SaalEvent::ReleaseConfirm]);
        assert_eq!(
            (a.state(), b.state()),
            (SscfState::Released, SscfState::Released)
        );
        // Release when released: confirmed at once.
        a.request(T0, SaalRequest::Release);
        assert_eq!(drain(&mut a), [SaalEvent::ReleaseConfirm]);
    }

    #[test]
    fn establish_when_established_resynchronises() {
        let (mut a, mut b) = up();
        a.request(T0, SaalRequest::Establish);
        assert_eq!(a.state(), SscfState::Resync);
        // Data in resync is not taken.
        a.request(T0, SaalRequest::Data(b"x".to_vec()));
        assert_eq!(a.ignored(), 1);
        carry(&mut a, &mut b); // RS
        assert_eq!(drain(&mut b), [SaalEvent::EstablishIndication]);
        carry(&mut b, &mut a); // RSAK
        assert_eq!(drain(&mut a), [SaalEvent::EstablishConfirm]);
        assert_eq!(a.state(), SscfState::Established);
        a.request(T0, SaalRequest::Data(b"after".to_vec()));
        carry(&mut a, &mut b);
        assert_eq!(drain(&mut b), [SaalEvent::Data(b"after".to_vec())]);
    }

    #[test]
    fn recovery_is_an_establish_indication() {
        let (mut a, mut b) = up();
        // A bad STAT makes B's SSCOP start recovery; both SSCFs tell Q.2931.
        b.handle_pdu(
            T0,
            &Repr::Stat {
                n_r: 0,
                n_mr: 9,
                n_ps: 7,
                list: vec![],
            }
            .to_vec()
            .unwrap(),
        );
        carry(&mut b, &mut a); // ER
        assert_eq!(drain(&mut a), [SaalEvent::EstablishIndication]);
        carry(&mut a, &mut b); // ERAK
        assert_eq!(drain(&mut b), [SaalEvent::EstablishIndication]);
        assert_eq!(a.sscop().state(), crate::State::DataTransferReady);
        assert_eq!(b.sscop().state(), crate::State::DataTransferReady);
    }

    #[test]
    fn lost_link_is_a_release_indication() {
        let (mut a, _b) = up();
        // No answer to any POLL: Timer_NO_RESPONSE releases.
        let mut now = T0;
        while let Some(t) = a.poll_timeout() {
            now = t;
            a.handle_timeout(now);
            while a.poll_transmit().is_some() {}
            if a.state() == SscfState::Released {
                break;
            }
        }
        assert_eq!(drain(&mut a), [SaalEvent::ReleaseIndication]);
        assert!(now.saturating_duration_since(T0) >= Config::default().timer_no_response);
    }

    #[test]
    fn establishment_rejected_or_timed_out() {
        let mut a = Sscf::new(Config::default());
        a.request(T0, SaalRequest::Establish);
        a.handle_pdu(T0, &Repr::Bgrej { uu: &[] }.to_vec().unwrap());
        assert_eq!(drain(&mut a), [SaalEvent::ReleaseIndication]);
        // Released while awaiting establish, then a new establish.
        a.request(T0, SaalRequest::Establish);
        a.request(T0, SaalRequest::Release);
        assert_eq!(a.state(), SscfState::AwaitingRelease);
        a.request(T0, SaalRequest::Establish);
        assert_eq!(a.state(), SscfState::AwaitingEstablish);
        // MaxCC BGNs unanswered: released.
        while let Some(t) = a.poll_timeout() {
            a.handle_timeout(t);
        }
        assert_eq!(drain(&mut a), [SaalEvent::ReleaseIndication]);
        assert_eq!(a.state(), SscfState::Released);
        // A peer END while established.
        let (mut a, _) = up();
        a.handle_pdu(
            T0,
            &Repr::End {
                source: Source::User,
                uu: &[],
            }
            .to_vec()
            .unwrap(),
        );
        assert_eq!(drain(&mut a), [SaalEvent::ReleaseIndication]);
    }
}

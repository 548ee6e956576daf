//! [`Signalling`]: SSCF-UNI (over SSCOP) and Q.2931 call control behind one face, the
//! object a daemon or the simulator drives on VPI 0 / VCI 5.

use alloc::vec::Vec;

use natm_core::Instant;
use natm_sscop::sscf::Sscf;

use crate::Cause;
use crate::config::Config;
use crate::types::{CallEvent, CallId, CommandError, ConnId, Restart, SetupParams};
use crate::uni::Uni;

/// The signalling entity of one interface: [`Sscf`] (SSCF-UNI over SSCOP) below, [`Uni`]
/// (Q.2931 call control) above, wired together.
///
/// # Call contract
///
/// * Input: [`handle_pdu`](Signalling::handle_pdu) with each AAL5 SDU received on the
///   signalling VC (0.5); [`handle_timeout`](Signalling::handle_timeout) when
///   [`poll_timeout`](Signalling::poll_timeout)'s instant has come; the call commands
///   ([`setup`](Signalling::setup), [`proceed`](Signalling::proceed),
///   [`connect`](Signalling::connect), [`release`](Signalling::release),
///   [`restart`](Signalling::restart), …), which are [`Uni`]'s.
/// * Output: after each of those, drain [`poll_transmit`](Signalling::poll_transmit) (AAL5
///   SDUs to send on 0.5) and [`poll_event`](Signalling::poll_event) ([`CallEvent`]s)
///   until both give `None`; then wait until `poll_timeout`.
///
/// A call between a host (user side) and a switch port (network side), the SDUs moved by
/// hand (a driver puts them in AAL5 frames on VC 0.5 and also runs the timers):
///
/// ```
/// use natm_core::addr::Aesa;
/// use natm_core::{Instant, Qos};
/// use natm_sig::{CallEvent, Config, ConnId, PartyNumber, Role, SetupParams, Signalling};
///
/// fn shuttle(now: Instant, a: &mut Signalling, b: &mut Signalling) {
///     for _ in 0..8 {
///         while let Some(sdu) = a.poll_transmit() {
///             b.handle_pdu(now, &sdu);
///         }
///         while let Some(sdu) = b.poll_transmit() {
///             a.handle_pdu(now, &sdu);
///         }
///     }
/// }
///
/// let now = Instant::ZERO;
/// let saal = natm_sscop::Config::default();
/// let mut host = Signalling::new(now, Config::new(Role::User), saal.clone());
/// let mut port = Signalling::new(now, Config::new(Role::Network), saal);
/// shuttle(now, &mut host, &mut port); // SSCOP establishes
/// assert!(host.uni().link_up() && port.uni().link_up());
///
/// let qos: Qos = "aal5,ubr:max_pcr=100000,max_sdu=9180".parse().unwrap();
/// let params = SetupParams {
///     called: PartyNumber::aesa(Aesa([0x47; 20])),
///     called_sub: None,
///     calling: None,
///     calling_sub: None,
///     qos,
///     blli: None,
///     bhli: None,
///     conn: None,
/// };
/// let call = host.setup(now, &params).unwrap();
/// shuttle(now, &mut host, &mut port);
/// // The switch sees the SETUP, picks a VPI/VCI and accepts.
/// let incoming = std::iter::from_fn(|| port.poll_event())
///     .find_map(|e| match e {
///         CallEvent::Setup { call, .. } => Some(call),
///         _ => None,
///     })
///     .unwrap();
/// let vc = ConnId { vpci: 0, vci: 40 };
/// port.connect(now, incoming, Some(vc)).unwrap();
/// shuttle(now, &mut host, &mut port);
/// let connected = std::iter::from_fn(|| host.poll_event())
///     .any(|e| e == CallEvent::Connected { call, conn: Some(vc) });
/// assert!(connected);
/// ```
#[derive(Debug)]
pub struct Signalling {
    sscf: Sscf,
    uni: Uni,
}

impl Signalling {
    /// A signalling entity; it starts establishing the SAAL at `now`.
    pub fn new(now: Instant, config: Config, saal: natm_sscop::Config) -> Signalling {
        let mut s = Signalling {
            sscf: Sscf::new(saal),
            uni: Uni::new(config),
        };
        s.pump(now);
        s
    }

    /// Call control, for its queries (states, counts, counters).
    pub fn uni(&self) -> &Uni {
        &self.uni
    }

    /// SSCF-UNI and its SSCOP, for their queries.
    pub fn sscf(&self) -> &Sscf {
        &self.sscf
    }

    /// Takes one AAL5 SDU received on the signalling VC.
    pub fn handle_pdu(&mut self, now: Instant, sdu: &[u8]) {
        self.sscf.handle_pdu(now, sdu);
        self.pump(now);
    }

    /// The next AAL5 SDU to send on the signalling VC.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.sscf.poll_transmit()
    }

    /// The next event of call control.
    pub fn poll_event(&mut self) -> Option<CallEvent> {
        self.uni.poll_event()
    }

    /// When [`handle_timeout`](Signalling::handle_timeout) is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match (self.sscf.poll_timeout(), self.uni.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs the SAAL's and call control's timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.sscf.poll_timeout().is_some_and(|t| t <= now) {
            self.sscf.handle_timeout(now);
            self.pump(now);
        }
        if self.uni.poll_timeout().is_some_and(|t| t <= now) {
            self.uni.handle_timeout(now);
        }
        self.pump(now);
    }

    /// [`Uni::setup`].
    pub fn setup(&mut self, now: Instant, params: &SetupParams) -> Result<CallId, CommandError> {
        let r = self.uni.setup(now, params);
        self.pump(now);
        r
    }

    /// [`Uni::proceed`].
    pub fn proceed(
        &mut self,
        now: Instant,
        call: CallId,
        conn: Option<ConnId>,
    ) -> Result<(), CommandError> {
        let r = self.uni.proceed(now, call, conn);
        self.pump(now);
        r
    }

    /// [`Uni::connect`].
    pub fn connect(
        &mut self,
        now: Instant,
        call: CallId,
        conn: Option<ConnId>,
    ) -> Result<(), CommandError> {
        let r = self.uni.connect(now, call, conn);
        self.pump(now);
        r
    }

    /// [`Uni::release`].
    pub fn release(
        &mut self,
        now: Instant,
        call: CallId,
        cause: Cause,
    ) -> Result<(), CommandError> {
        let r = self.uni.release(now, call, cause);
        self.pump(now);
        r
    }

    /// [`Uni::status_enquiry`].
    pub fn status_enquiry(&mut self, now: Instant, call: CallId) -> Result<(), CommandError> {
        let r = self.uni.status_enquiry(now, call);
        self.pump(now);
        r
    }

    /// [`Uni::restart`].
    pub fn restart(&mut self, now: Instant, what: Restart) -> Result<(), CommandError> {
        let r = self.uni.restart(now, what);
        self.pump(now);
        r
    }

    /// [`Uni::restart_response`].
    pub fn restart_response(&mut self, now: Instant) -> Result<(), CommandError> {
        let r = self.uni.restart_response(now);
        self.pump(now);
        r
    }

    /// Moves requests down and indications up until neither side has more.
    fn pump(&mut self, now: Instant) {
        // Bounded: an SSCF that refused every establishment at once would otherwise spin
        // here; what is left waits for the next input.
        for _ in 0..64 {
            let mut moved = false;
            while let Some(r) = self.uni.poll_saal() {
                self.sscf.request(now, r);
                moved = true;
            }
            while let Some(e) = self.sscf.poll_event() {
                self.uni.handle_saal(now, e);
                moved = true;
            }
            if !moved {
                break;
            }
        }
    }
}

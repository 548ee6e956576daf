//! One SSCOP connection endpoint: the Q.2110 state machine (its states, state variables,
//! timers and SDL).
//!
//! # What it is
//!
//! [`Sscop`] keeps one assured connection over an unassured lower layer (AAL5 on the
//! signalling VC): establishment (BGN/BGAK/BGREJ), release (END/ENDAK), in-order delivery of
//! SD PDUs with selective retransmission driven by POLL/STAT/USTAT, a credit window
//! (VR(MR)/VT(MS)), resynchronisation (RS/RSAK), error recovery (ER/ERAK), and unassured
//! UD/MD. It does not segment (one SD carries one message of up to MaxK bytes), and it does
//! not implement AA-RETRIEVE (unacknowledged data is dropped on release, as SSCF-UNI asks
//! with BR = yes).
//!
//! # Call contract
//!
//! * Commands are the AA-signals: [`Sscop::establish_request`], [`Sscop::establish_response`],
//!   [`Sscop::release_request`], [`Sscop::data_request`], [`Sscop::unitdata_request`],
//!   [`Sscop::resync_request`], [`Sscop::resync_response`], [`Sscop::recover_response`]
//!   and [`Sscop::mdata_request`]. A command that its state does not accept is ignored
//!   (counted in [`Counters::ignored`]), as Q.2110 leaves it undefined.
//! * Input: [`Sscop::handle_pdu`] with one AAL5 SDU, [`Sscop::handle_timeout`] at or after
//!   [`Sscop::poll_timeout`].
//! * Output: after any call, drain [`Sscop::poll_transmit`] (PDUs for the lower layer, in
//!   order) and [`Sscop::poll_event`] (AA- and MAA-signals, [`Event`]) until `None`, then
//!   wait until [`Sscop::poll_timeout`].
//!
//! Nothing here panics on peer input: bad PDUs become MAA-ERROR U and are dropped.
//!
//! # Sequence numbers
//!
//! All sequence numbers are 24-bit and compared modulo 2^24 against a base, as Q.2110
//! says: VT(A) for the transmitter's variables, VR(R) for the receiver's. An SD behind
//! VR(R) is therefore outside the window like one at or beyond VR(MR): Q.2110 answers it
//! with a USTAT up to VR(MR), which the peer reads as a list error and recovers from. A
//! duplicating lower layer thus costs a recovery per duplicated SD (AAL5 does not
//! duplicate); dropping such SDs quietly instead was tried and lets two ends that disagree
//! about the numbering (after a lost END, RS or ER) lose data without a signal.
//!
//! # Known limit of Q.2110
//!
//! BGAK, RSAK and ERAK carry no N(SQ), so a late acknowledgement (one answering an earlier,
//! retransmitted BGN, RS or ER) completes whatever this end has pending now, while the
//! peer may be in another numbering epoch. One end may then take SDs of the other's
//! previous numbering for new ones: messages mixed across epochs, lost, or (when the
//! receiver's recovery completes early and it asks again for SDs it already delivered)
//! delivered twice. Each time one of the two users has been told (an establish, resync or
//! recovery signal); within one epoch at both ends delivery is in order, without loss and
//! without duplication. ngatm and linux-atm share this; the machine fuzz targets found it
//! and check the guarantee as stated here, with two precisions they also found:
//!
//! * An epoch of the sender is that of the numbering an SD was sent in. With BR = no a
//!   message still queued when the sender's recovery runs is sent in the new numbering
//!   although it was asked for in the old one; once the receiver has taken SDs of both
//!   numberings as one, such a message can come before an older one (BR = no also
//!   delivers what the receive buffer holds past a gap when recovery completes).
//! * An old-numbering SD taken for a new one holds the new numbering's slot: when the new
//!   SD of that number comes it is behind VR(R) (out of window, see above), so a message
//!   is lost within one epoch at both ends, with no signal until the recovery that its
//!   USTAT or the sender's own checks start. This happens only in a receiver epoch that
//!   has already delivered messages of two of the sender's epochs.
//!
//! # Timers
//!
//! Timer_CC runs in the pending states while BGN, END, RS or ER wait for their
//! acknowledgement (MaxCC tries). In Data Transfer Ready exactly one of POLL (data
//! outstanding), KEEP-ALIVE (nothing outstanding) and IDLE (the peer is quiet) runs, with
//! NO-RESPONSE beside POLL and KEEP-ALIVE: a POLL is sent when POLL or KEEP-ALIVE expires,
//! when IDLE expires, or after MaxPD SDs; a STAT while POLL runs restarts NO-RESPONSE, a
//! STAT while KEEP-ALIVE runs enters the idle phase; NO-RESPONSE expiry releases (MAA-ERROR
//! P).
//!
//! # Tests
//!
//! The state × event tests (`tests.rs`) follow Q.2110's SDL, one table per state (its
//! module docs list the pages); the pair harness runs two endpoints over an impaired
//! channel in virtual time.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use natm_core::{Duration, Instant};
use natm_wire::sscop::{Pdu, PduType, Repr, SEQ_MAX, SEQ_MOD, Source};

/// Half the sequence space: offsets at or above it lie "behind" the base.
const HALF: u32 = SEQ_MOD / 2;

fn add(a: u32, n: u32) -> u32 {
    a.wrapping_add(n) & SEQ_MAX
}

/// The distance from `b` forward to `a`, modulo 2^24.
fn sub(a: u32, b: u32) -> u32 {
    a.wrapping_sub(b) & SEQ_MAX
}

/// SSCOP parameters (Q.2110's timers and counts). The timers and counts default to the
/// values ngatm's SSCF-UNI sets (`sscfu_getdefparam`, Q.2130's); the window to linux-atm's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Timer_CC: BGN, END, RS and ER retransmission (default 1 s).
    pub timer_cc: Duration,
    /// Timer_POLL: POLL interval while data is outstanding (default 750 ms).
    pub timer_poll: Duration,
    /// Timer_KEEP_ALIVE: POLL interval with nothing outstanding (default 2 s).
    pub timer_keep_alive: Duration,
    /// Timer_NO_RESPONSE: the longest wait for a STAT (default 7 s).
    pub timer_no_response: Duration,
    /// Timer_IDLE: how long an idle link goes without POLLs (default 15 s).
    pub timer_idle: Duration,
    /// MaxCC: tries of BGN, END, RS and ER (default 4).
    pub max_cc: u32,
    /// MaxPD: SDs sent before a POLL (default 25).
    pub max_pd: u32,
    /// MaxSTAT: list elements per STAT, odd and at least 3 (default 67); longer lists are
    /// split over several STATs.
    pub max_stat: usize,
    /// MaxK: the longest SD, UD or MD information field (default 4096).
    pub max_k: usize,
    /// MaxJ: the longest UU field (default 4096).
    pub max_j: usize,
    /// The receive window (credit) granted beyond VR(R): VR(MR) = VR(R) + `window`
    /// (default 30, linux-atm's `SSCOP_CF_MR`; ngatm uses 128).
    pub window: u32,
    /// Send a POLL as soon as the retransmission queue empties (ngatm's `POLLREX`, off).
    pub poll_after_retransmission: bool,
    /// VT(SQ) at creation (0): the first BGN carries N(SQ) one more. A peer still
    /// established with an earlier entity on the same link takes a BGN whose N(SQ) equals
    /// the last it saw for a retransmission (BGAK, no re-initialisation), so an owner that
    /// replaces its entity (a port's link back, a daemon restart) gives the new one
    /// another value.
    pub first_sq: u8,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            timer_cc: Duration::from_millis(1000),
            timer_poll: Duration::from_millis(750),
            timer_keep_alive: Duration::from_millis(2000),
            timer_no_response: Duration::from_millis(7000),
            timer_idle: Duration::from_millis(15000),
            max_cc: 4,
            max_pd: 25,
            max_stat: 67,
            max_k: 4096,
            max_j: 4096,
            window: 30,
            poll_after_retransmission: false,
            first_sq: 0,
        }
    }
}

/// The states of Q.2110, numbered as the standard numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// 1: Idle.
    Idle = 1,
    /// 2: Outgoing Connection Pending (BGN sent).
    OutgoingConnectionPending = 2,
    /// 3: Incoming Connection Pending (BGN received, AA-ESTABLISH.indication given).
    IncomingConnectionPending = 3,
    /// 4: Outgoing Disconnection Pending (END sent).
    OutgoingDisconnectionPending = 4,
    /// 5: Outgoing Resynchronization Pending (RS sent).
    OutgoingResynchronizationPending = 5,
    /// 6: Incoming Resynchronization Pending (RS received).
    IncomingResynchronizationPending = 6,
    /// 7: Outgoing Recovery Pending (ER sent).
    OutgoingRecoveryPending = 7,
    /// 8: Recovery Response Pending (ERAK received, AA-RECOVER.indication given).
    RecoveryResponsePending = 8,
    /// 9: Incoming Recovery Pending (ER received).
    IncomingRecoveryPending = 9,
    /// 10: Data Transfer Ready.
    DataTransferReady = 10,
}

/// The SSCOP timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// Timer_CC.
    Cc = 0,
    /// Timer_POLL.
    Poll = 1,
    /// Timer_NO_RESPONSE.
    NoResponse = 2,
    /// Timer_KEEP_ALIVE.
    KeepAlive = 3,
    /// Timer_IDLE.
    Idle = 4,
}

const TIMERS: [Timer; 5] = [
    Timer::Cc,
    Timer::Poll,
    Timer::NoResponse,
    Timer::KeepAlive,
    Timer::Idle,
];

/// MAA-ERROR codes (Q.2110's management error indications, lettered as the standard
/// and ngatm letter them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MaaError {
    /// A: SD PDU in a state that does not take it.
    A,
    /// B: BGN PDU (a retransmission in a state that does not take it).
    B,
    /// C: BGAK PDU unexpected.
    C,
    /// D: BGREJ PDU unexpected.
    D,
    /// F: ENDAK PDU unexpected.
    F,
    /// G: POLL PDU unexpected.
    G,
    /// H: STAT PDU unexpected.
    H,
    /// I: USTAT PDU unexpected.
    I,
    /// J: RS PDU unexpected.
    J,
    /// K: RSAK PDU unexpected.
    K,
    /// L: ER PDU unexpected.
    L,
    /// M: ERAK PDU unexpected.
    M,
    /// O: VT(CC) reached MaxCC.
    O,
    /// P: Timer_NO_RESPONSE expired.
    P,
    /// Q: SD or POLL with a bad N(S).
    Q,
    /// R: STAT with a bad N(PS).
    R,
    /// S: STAT with a bad N(R) or list element.
    S,
    /// T: USTAT with a bad N(R) or list element.
    T,
    /// U: PDU length violation (or an unparseable PDU).
    U,
    /// V: this many SDs are to be retransmitted.
    V(u32),
    /// W: the peer closed the window (lack of credit).
    W,
    /// X: credit obtained again.
    X,
}

/// A signal to the SSCOP user (AA-) or to layer management (MAA-).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// AA-ESTABLISH.indication: the peer asks to establish; answer with
    /// [`Sscop::establish_response`] or [`Sscop::release_request`].
    EstablishIndication {
        /// UU of the BGN.
        uu: Vec<u8>,
    },
    /// AA-ESTABLISH.confirm: established.
    EstablishConfirm {
        /// UU of the BGAK (empty when the peer's BGN crossed ours).
        uu: Vec<u8>,
    },
    /// AA-RELEASE.indication: the connection is gone (peer's END or BGREJ, or SSCOP gave
    /// up).
    ReleaseIndication {
        /// UU of the END or BGREJ.
        uu: Vec<u8>,
        /// Who released.
        source: Source,
    },
    /// AA-RELEASE.confirm: our release completed.
    ReleaseConfirm,
    /// AA-DATA.indication: one message, in order.
    Data {
        /// N(S) of the SD that carried it.
        n_s: u32,
        /// The message.
        data: Vec<u8>,
    },
    /// AA-UNITDATA.indication.
    UnitData(Vec<u8>),
    /// AA-RESYNC.indication: the peer resynchronises; answer with
    /// [`Sscop::resync_response`].
    ResyncIndication {
        /// UU of the RS.
        uu: Vec<u8>,
    },
    /// AA-RESYNC.confirm: our resynchronisation completed.
    ResyncConfirm,
    /// AA-RECOVER.indication: error recovery ran; answer with [`Sscop::recover_response`].
    RecoverIndication,
    /// MAA-ERROR.indication.
    ManagementError(MaaError),
    /// MAA-UNITDATA.indication (an MD PDU).
    ManagementData(Vec<u8>),
}

/// What an endpoint has done, for tests and management.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// New SDs sent.
    pub sd_sent: u64,
    /// SDs sent again (STAT or USTAT asked).
    pub sd_retransmitted: u64,
    /// SDs retransmitted because a USTAT asked.
    pub ustat_retransmissions: u64,
    /// POLLs sent.
    pub polls: u64,
    /// STATs sent.
    pub stats: u64,
    /// USTATs sent.
    pub ustats: u64,
    /// SDs delivered to the user.
    pub delivered: u64,
    /// SDs dropped outside the receive window (at or beyond VR(MR), or behind VR(R)).
    pub out_of_window: u64,
    /// Received PDUs that did not parse or broke a limit (MAA-ERROR U).
    pub bad_pdus: u64,
    /// User data requests dropped because the state does not take data.
    pub data_dropped: u64,
    /// Commands ignored in their state.
    pub ignored: u64,
    /// Times new SDs had to wait for credit: the peer's window (VT(MS)) closed with SDs
    /// queued. Each wait counts once, however many SDs it held back.
    pub credit_waits: u64,
}

/// One SD in the transmission buffer.
#[derive(Clone, Debug)]
struct TxSd {
    /// The encoded SD; `None` once a STAT acknowledged it selectively.
    pdu: Option<Vec<u8>>,
    /// VT(PS) when it was last sent.
    poll_sn: u32,
    /// Queued for retransmission.
    rexmit: bool,
}

/// One SSCOP connection endpoint (see the module docs for the call contract).
#[derive(Debug)]
pub struct Sscop {
    config: Config,
    state: State,

    // Transmitter.
    vt_s: u32,
    vt_ps: u32,
    vt_a: u32,
    vt_pa: u32,
    vt_ms: u32,
    vt_pd: u32,
    vt_cc: u32,
    vt_sq: u8,
    // Receiver.
    vr_r: u32,
    vr_h: u32,
    vr_mr: u32,
    vr_sq: u8,

    credit: bool,
    /// New SDs are waiting for credit (counted once per wait in `credit_waits`).
    credit_wait: bool,
    clear_buffers: bool,
    last_end_source: Source,
    /// N(MR) and N(SQ) of the last RS, for its retransmission.
    rs_mr: u32,
    rs_sq: u8,
    uu_bgn: Vec<u8>,
    uu_end: Vec<u8>,
    uu_rs: Vec<u8>,

    timers: [Option<Instant>; 5],
    /// Messages waiting for their first transmission.
    xq: VecDeque<Vec<u8>>,
    /// Sent SDs from VT(A) (index 0) to VT(S) - 1.
    xbuf: VecDeque<TxSd>,
    /// N(S) of SDs to retransmit, oldest request first.
    rxq: VecDeque<u32>,
    /// Received SDs from VR(R) (index 0, always missing) to VR(H) - 1.
    rbuf: VecDeque<Option<Vec<u8>>>,

    out: VecDeque<Vec<u8>>,
    events: VecDeque<Event>,
    counters: Counters,
}

impl Sscop {
    /// An idle endpoint.
    pub fn new(config: Config) -> Self {
        let first_sq = config.first_sq;
        Sscop {
            config,
            state: State::Idle,
            vt_s: 0,
            vt_ps: 0,
            vt_a: 0,
            vt_pa: 1,
            vt_ms: 0,
            vt_pd: 0,
            vt_cc: 0,
            vt_sq: first_sq,
            vr_r: 0,
            vr_h: 0,
            vr_mr: 0,
            vr_sq: 0,
            credit: true,
            credit_wait: false,
            clear_buffers: true,
            last_end_source: Source::User,
            rs_mr: 0,
            rs_sq: 0,
            uu_bgn: Vec::new(),
            uu_end: Vec::new(),
            uu_rs: Vec::new(),
            timers: [None; 5],
            xq: VecDeque::new(),
            xbuf: VecDeque::new(),
            rxq: VecDeque::new(),
            rbuf: VecDeque::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            counters: Counters::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// What this endpoint has done.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// When `timer` is due, if it runs.
    pub fn timer(&self, timer: Timer) -> Option<Instant> {
        self.timers[timer as usize]
    }

    /// Messages queued or sent but not yet acknowledged.
    pub fn unacknowledged(&self) -> usize {
        self.xq.len() + self.xbuf.len()
    }

    /// The state variables (VT(S), VT(A), VT(MS), VR(R), VR(H), VR(MR)), for tests.
    pub fn variables(&self) -> [u32; 6] {
        [
            self.vt_s, self.vt_a, self.vt_ms, self.vr_r, self.vr_h, self.vr_mr,
        ]
    }

    /// Move every sequence variable of an established endpoint to `n` (tests of the
    /// modulo-2^24 wrap).
    #[cfg(test)]
    pub(crate) fn set_sequence_for_tests(&mut self, n: u32) {
        assert!(self.xbuf.is_empty() && self.rbuf.is_empty());
        self.vt_s = n;
        self.vt_a = n;
        self.vt_ms = add(n, self.config.window);
        self.vr_r = n;
        self.vr_h = n;
        self.vr_mr = add(n, self.config.window);
    }

    // ---- commands (AA-signals) ------------------------------------------------------

    /// AA-ESTABLISH.request with UU and BR (`clear_buffers`: drop unacknowledged data).
    pub fn establish_request(&mut self, now: Instant, uu: Vec<u8>, clear_buffers: bool) {
        match self.state {
            State::Idle | State::OutgoingDisconnectionPending => {
                self.stop(Timer::Cc);
                self.uu_bgn = uu;
                self.clear_transmitter();
                self.clear_buffers = clear_buffers;
                self.vt_cc = 1;
                self.vt_sq = self.vt_sq.wrapping_add(1);
                self.initialize_mr();
                self.send_bgn();
                self.start(now, Timer::Cc);
                self.state = State::OutgoingConnectionPending;
            }
            _ => self.counters.ignored += 1,
        }
    }

    /// AA-ESTABLISH.response to an [`Event::EstablishIndication`], with UU and BR.
    pub fn establish_response(&mut self, now: Instant, uu: Vec<u8>, clear_buffers: bool) {
        if self.state != State::IncomingConnectionPending {
            self.counters.ignored += 1;
            return;
        }
        self.clear_transmitter();
        self.clear_buffers = clear_buffers;
        self.initialize_mr();
        self.send(&Repr::Bgak {
            n_mr: self.vr_mr,
            uu: &uu,
        });
        self.enter_ready(now);
    }

    /// AA-RELEASE.request with UU.
    pub fn release_request(&mut self, now: Instant, uu: Vec<u8>) {
        match self.state {
            State::IncomingConnectionPending => {
                self.send(&Repr::Bgrej { uu: &uu });
                self.enter_idle();
            }
            State::OutgoingConnectionPending
            | State::OutgoingResynchronizationPending
            | State::IncomingResynchronizationPending
            | State::OutgoingRecoveryPending
            | State::RecoveryResponsePending
            | State::IncomingRecoveryPending
            | State::DataTransferReady => {
                self.reset_data_timers();
                self.stop(Timer::Cc);
                self.rbuf.clear();
                if self.state == State::DataTransferReady {
                    self.prepare_retrieval();
                }
                self.uu_end = uu;
                self.vt_cc = 1;
                self.send_end(Source::User);
                self.start(now, Timer::Cc);
                self.state = State::OutgoingDisconnectionPending;
            }
            State::Idle | State::OutgoingDisconnectionPending => self.counters.ignored += 1,
        }
    }

    /// AA-DATA.request: send one message assured. Taken in Data Transfer Ready (and in
    /// Outgoing Recovery Pending when buffers are kept); dropped otherwise.
    pub fn data_request(&mut self, now: Instant, data: Vec<u8>) {
        match self.state {
            State::DataTransferReady => {
                self.xq.push_back(data);
                self.ready_send(now);
            }
            State::OutgoingRecoveryPending if !self.clear_buffers => self.xq.push_back(data),
            _ => self.counters.data_dropped += 1,
        }
    }

    /// AA-UNITDATA.request: send one message unassured (UD), in any state.
    pub fn unitdata_request(&mut self, _now: Instant, data: Vec<u8>) {
        self.send(&Repr::Ud { info: &data });
    }

    /// MAA-UNITDATA.request: send management data (MD), in any state.
    pub fn mdata_request(&mut self, _now: Instant, data: Vec<u8>) {
        self.send(&Repr::Md { info: &data });
    }

    /// AA-RESYNC.request with UU.
    pub fn resync_request(&mut self, now: Instant, uu: Vec<u8>) {
        match self.state {
            State::DataTransferReady
            | State::OutgoingRecoveryPending
            | State::RecoveryResponsePending
            | State::IncomingRecoveryPending => {
                self.reset_data_timers();
                self.stop(Timer::Cc);
                self.uu_rs = uu;
                self.clear_transmitter();
                self.release_buffers();
                self.vt_cc = 1;
                self.vt_sq = self.vt_sq.wrapping_add(1);
                self.initialize_mr();
                self.send_rs(false);
                self.start(now, Timer::Cc);
                self.state = State::OutgoingResynchronizationPending;
            }
            _ => self.counters.ignored += 1,
        }
    }

    /// AA-RESYNC.response to an [`Event::ResyncIndication`].
    pub fn resync_response(&mut self, now: Instant) {
        if self.state != State::IncomingResynchronizationPending {
            self.counters.ignored += 1;
            return;
        }
        self.initialize_mr();
        self.send(&Repr::Rsak { n_mr: self.vr_mr });
        self.clear_transmitter();
        self.enter_ready(now);
    }

    /// AA-RECOVER.response to an [`Event::RecoverIndication`].
    pub fn recover_response(&mut self, now: Instant) {
        match self.state {
            State::RecoveryResponsePending => {
                self.xbuf.clear();
                self.enter_ready(now);
            }
            State::IncomingRecoveryPending => {
                self.xbuf.clear();
                self.initialize_mr();
                self.send(&Repr::Erak { n_mr: self.vr_mr });
                self.enter_ready(now);
            }
            _ => self.counters.ignored += 1,
        }
    }

    // ---- output -----------------------------------------------------------------------

    /// The next PDU for the lower layer (one AAL5 SDU).
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.out.pop_front()
    }

    /// The next AA- or MAA-signal.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`Sscop::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.iter().flatten().min().copied()
    }

    /// Run every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        loop {
            let due = TIMERS
                .iter()
                .copied()
                .filter(|&t| self.timers[t as usize].is_some_and(|at| at <= now))
                .min_by_key(|&t| self.timers[t as usize]);
            let Some(t) = due else { break };
            self.timers[t as usize] = None;
            self.expire(now, t);
        }
    }

    // ---- input ------------------------------------------------------------------------

    /// One PDU from the lower layer.
    pub fn handle_pdu(&mut self, now: Instant, bytes: &[u8]) {
        let Ok(pdu) = Pdu::new_checked(bytes) else {
            return self.bad_pdu();
        };
        let repr = Repr::from_pdu(&pdu);
        let too_long = match &repr {
            Repr::Bgn { uu, .. }
            | Repr::Bgak { uu, .. }
            | Repr::Bgrej { uu }
            | Repr::End { uu, .. }
            | Repr::Rs { uu, .. } => uu.len() > self.config.max_j,
            Repr::Sd { info, .. } | Repr::Ud { info } | Repr::Md { info } => {
                info.len() > self.config.max_k
            }
            Repr::Stat { list, .. } => list.len() > self.config.max_stat,
            _ => false,
        };
        if too_long {
            return self.bad_pdu();
        }
        match repr {
            Repr::Ud { info } => self.events.push_back(Event::UnitData(info.to_vec())),
            Repr::Md { info } => self.events.push_back(Event::ManagementData(info.to_vec())),
            r => self.dispatch(now, r),
        }
        if self.state == State::DataTransferReady {
            self.ready_send(now);
        }
    }

    fn bad_pdu(&mut self) {
        self.counters.bad_pdus += 1;
        self.maa(MaaError::U);
    }

    /// The state × PDU table of Q.2110's SDL.
    fn dispatch(&mut self, now: Instant, r: Repr<'_>) {
        use State::*;
        let t = r.pdu_type();
        match self.state {
            Idle => self.idle_pdu(now, r),
            OutgoingConnectionPending => match r {
                Repr::Bgn { n_sq, n_mr, uu } => {
                    if self.detect_retransmission(n_sq) {
                        return;
                    }
                    self.stop(Timer::Cc);
                    self.vt_ms = n_mr;
                    self.initialize_mr();
                    self.send(&Repr::Bgak {
                        n_mr: self.vr_mr,
                        uu: &[],
                    });
                    self.events
                        .push_back(Event::EstablishConfirm { uu: uu.to_vec() });
                    self.enter_ready(now);
                }
                Repr::Bgak { n_mr, uu } => {
                    self.stop(Timer::Cc);
                    self.vt_ms = n_mr;
                    self.events
                        .push_back(Event::EstablishConfirm { uu: uu.to_vec() });
                    self.enter_ready(now);
                }
                Repr::Bgrej { uu } => {
                    self.release_indication(uu, Source::User);
                    self.enter_idle();
                }
                _ => {}
            },
            IncomingConnectionPending => match r {
                Repr::Bgn { n_sq, n_mr, uu } => {
                    if self.detect_retransmission(n_sq) {
                        return;
                    }
                    self.vt_ms = n_mr;
                    self.release_indication(&[], Source::User);
                    self.events
                        .push_back(Event::EstablishIndication { uu: uu.to_vec() });
                }
                Repr::End { source, uu } => self.peer_end(source, uu),
                Repr::Endak | Repr::Bgrej { .. } => self.error_release(t, false),
                Repr::Sd { .. } | Repr::Poll { .. } | Repr::Stat { .. } | Repr::Ustat { .. } => {
                    self.error_release(t, true)
                }
                _ => self.maa_for(t),
            },
            OutgoingDisconnectionPending => match r {
                Repr::Bgn { n_sq, n_mr, uu } => {
                    if self.detect_retransmission(n_sq) {
                        self.send(&Repr::Bgak {
                            n_mr: self.vr_mr,
                            uu: &[],
                        });
                        self.send_end(self.last_end_source);
                        return;
                    }
                    self.stop(Timer::Cc);
                    self.vt_ms = n_mr;
                    self.events.push_back(Event::ReleaseConfirm);
                    self.events
                        .push_back(Event::EstablishIndication { uu: uu.to_vec() });
                    self.state = IncomingConnectionPending;
                }
                Repr::End { .. } => {
                    self.send(&Repr::Endak);
                    self.events.push_back(Event::ReleaseConfirm);
                    self.enter_idle();
                }
                Repr::Endak | Repr::Bgrej { .. } => {
                    self.events.push_back(Event::ReleaseConfirm);
                    self.enter_idle();
                }
                _ => {}
            },
            OutgoingResynchronizationPending => match r {
                Repr::Bgn { n_sq, n_mr, uu } => {
                    if self.detect_retransmission(n_sq) {
                        self.send(&Repr::Bgak {
                            n_mr: self.vr_mr,
                            uu: &[],
                        });
                        self.send_rs(true);
                        return;
                    }
                    self.peer_begin(n_mr, uu);
                }
                Repr::End { source, uu } => self.peer_end(source, uu),
                Repr::Endak | Repr::Bgrej { .. } => self.error_release(t, false),
                Repr::Rs { n_sq, n_mr, .. } => {
                    if self.detect_retransmission(n_sq) {
                        return;
                    }
                    // The RSs crossed: both sides resynchronised.
                    self.stop(Timer::Cc);
                    self.vt_ms = n_mr;
                    self.initialize_mr();
                    self.send(&Repr::Rsak { n_mr: self.vr_mr });
                    self.events.push_back(Event::ResyncConfirm);
                    self.enter_ready(now);
                }
                Repr::Rsak { n_mr } => {
                    self.stop(Timer::Cc);
                    self.vt_ms = n_mr;
                    self.events.push_back(Event::ResyncConfirm);
                    self.enter_ready(now);
                }
                _ => {}
            },
            IncomingResynchronizationPending => match r {
                Repr::Bgn { n_sq, n_mr, uu } => {
                    self.peer_begin_unless_retransmitted(n_sq, n_mr, uu)
                }
                Repr::End { source, uu } => self.peer_end(source, uu),
                Repr::Endak | Repr::Bgrej { .. } => self.error_release(t, false),
                Repr::Rs { n_sq, .. } => {
                    if !self.detect_retransmission(n_sq) {
                        self.maa(MaaError::J);
                    }
                }
                Repr::Sd { .. } | Repr::Poll { .. } | Repr::Stat { .. } | Repr::Ustat { .. } => {
                    self.error_release(t, true)
                }
                _ => self.maa_for(t),
            },
            OutgoingRecoveryPending => match r {
                Repr::Bgn { n_sq, n_mr, uu } => {
                    self.peer_begin_unless_retransmitted(n_sq, n_mr, uu)
                }
                Repr::End { source, uu } => self.peer_end(source, uu),
                Repr::Endak | Repr::Bgrej { .. } => self.error_release(t, false),
                Repr::Rs { n_sq, n_mr, uu } => {
                    self.peer_resync_unless_retransmitted(n_sq, n_mr, uu)
                }
                Repr::Er { n_sq, n_mr } => {
                    if self.detect_retransmission(n_sq) {
                        return self.maa(MaaError::L);
                    }
                    // The ERs crossed.
                    self.stop(Timer::Cc);
                    self.vt_ms = n_mr;
                    self.initialize_mr();
                    self.send(&Repr::Erak { n_mr: self.vr_mr });
                    self.deliver_buffered();
                    self.events.push_back(Event::RecoverIndication);
                    self.state = RecoveryResponsePending;
                }
                Repr::Erak { n_mr } => {
                    self.stop(Timer::Cc);
                    self.vt_ms = n_mr;
                    self.deliver_buffered();
                    self.events.push_back(Event::RecoverIndication);
                    self.state = RecoveryResponsePending;
                }
                Repr::Bgak { .. } | Repr::Rsak { .. } => self.maa_for(t),
                _ => {}
            },
            RecoveryResponsePending => match r {
                Repr::Bgn { n_sq, n_mr, uu } => {
                    self.peer_begin_unless_retransmitted(n_sq, n_mr, uu)
                }
                Repr::End { source, uu } => self.peer_end(source, uu),
                Repr::Endak | Repr::Bgrej { .. } => self.error_release(t, false),
                Repr::Rs { n_sq, n_mr, uu } => {
                    self.peer_resync_unless_retransmitted(n_sq, n_mr, uu)
                }
                Repr::Er { n_sq, .. } => {
                    if self.detect_retransmission(n_sq) {
                        self.send(&Repr::Erak { n_mr: self.vr_mr });
                    } else {
                        self.maa(MaaError::L);
                    }
                }
                Repr::Stat { .. } | Repr::Ustat { .. } => self.error_release(t, true),
                Repr::Bgak { .. } | Repr::Rsak { .. } => self.maa_for(t),
                _ => {}
            },
            IncomingRecoveryPending => match r {
                Repr::Bgn { n_sq, n_mr, uu } => {
                    self.peer_begin_unless_retransmitted(n_sq, n_mr, uu)
                }
                Repr::End { source, uu } => self.peer_end(source, uu),
                Repr::Endak | Repr::Bgrej { .. } => self.error_release(t, false),
                Repr::Rs { n_sq, n_mr, uu } => {
                    self.peer_resync_unless_retransmitted(n_sq, n_mr, uu)
                }
                Repr::Er { n_sq, .. } => {
                    if !self.detect_retransmission(n_sq) {
                        self.maa(MaaError::L);
                    }
                }
                Repr::Sd { .. } | Repr::Poll { .. } | Repr::Stat { .. } | Repr::Ustat { .. } => {
                    self.error_release(t, true)
                }
                _ => self.maa_for(t),
            },
            DataTransferReady => self.ready_pdu(now, r),
        }
    }

    fn idle_pdu(&mut self, _now: Instant, r: Repr<'_>) {
        match r {
            Repr::Bgn { n_sq, n_mr, uu } => {
                if self.detect_retransmission(n_sq) {
                    self.send(&Repr::Bgrej { uu: &[] });
                    return;
                }
                self.vt_ms = n_mr;
                self.state = State::IncomingConnectionPending;
                self.events
                    .push_back(Event::EstablishIndication { uu: uu.to_vec() });
            }
            Repr::End { .. } => self.send(&Repr::Endak),
            Repr::Endak => {}
            Repr::Bgrej { .. } => self.maa(MaaError::D),
            r => {
                self.maa_for(r.pdu_type());
                self.send_end_sscop();
            }
        }
    }

    fn ready_pdu(&mut self, now: Instant, r: Repr<'_>) {
        match r {
            Repr::Sd { n_s, info } => self.ready_sd(now, n_s, info),
            Repr::Poll { n_ps, n_s } => self.ready_poll(now, n_ps, n_s),
            Repr::Stat {
                n_r,
                n_mr,
                n_ps,
                list,
            } => self.ready_stat(now, n_r, n_mr, n_ps, &list),
            Repr::Ustat { n_r, n_mr, list } => self.ready_ustat(now, n_r, n_mr, list),
            Repr::Bgn { n_sq, n_mr, uu } => {
                if self.detect_retransmission(n_sq) {
                    self.start(now, Timer::NoResponse);
                    self.send(&Repr::Bgak {
                        n_mr: self.vr_mr,
                        uu: &[],
                    });
                    return;
                }
                self.reset_data_timers();
                self.prepare_retrieval();
                self.peer_begin(n_mr, uu);
            }
            Repr::End { source, uu } => {
                self.reset_data_timers();
                self.peer_end(source, uu);
            }
            Repr::Endak | Repr::Bgrej { .. } => {
                self.reset_data_timers();
                self.error_release(r.pdu_type(), false);
            }
            Repr::Rs { n_sq, n_mr, uu } => {
                if self.detect_retransmission(n_sq) {
                    self.start(now, Timer::NoResponse);
                    self.send(&Repr::Rsak { n_mr: self.vr_mr });
                    return;
                }
                self.reset_data_timers();
                self.prepare_retrieval();
                self.peer_resync(n_mr, uu);
            }
            Repr::Er { n_sq, n_mr } => {
                if self.detect_retransmission(n_sq) {
                    self.start(now, Timer::NoResponse);
                    self.send(&Repr::Erak { n_mr: self.vr_mr });
                    return;
                }
                self.reset_data_timers();
                self.vt_ms = n_mr;
                self.prepare_recovery();
                self.deliver_buffered();
                self.events.push_back(Event::RecoverIndication);
                self.state = State::IncomingRecoveryPending;
            }
            // BGAK, RSAK and ERAK are late answers: ignored.
            _ => {}
        }
    }

    /// Q.2110 SDL "SD PDU" in Data Transfer Ready.
    fn ready_sd(&mut self, now: Instant, n_s: u32, info: &[u8]) {
        let off = sub(n_s, self.vr_r);
        let window = sub(self.vr_mr, self.vr_r);
        if off >= window {
            // Beyond the credit we gave, or behind VR(R) (which modulo VR(R) is the same):
            // drop, and report the gap up to VR(MR) once. The peer finds that list beyond
            // its VT(S) and recovers, which is what keeps two ends that disagree about the
            // numbering (after lost END, RS or ER PDUs) from losing data silently.
            self.counters.out_of_window += 1;
            if sub(self.vr_h, self.vr_r) < window {
                self.send_ustat(self.vr_h, self.vr_mr);
                self.vr_h = self.vr_mr;
            }
            return;
        }
        if off == 0 {
            self.rbuf.pop_front();
            self.deliver(n_s, info.to_vec());
            while let Some(Some(_)) = self.rbuf.front() {
                let n = self.vr_r;
                let data = self.rbuf.pop_front().flatten().unwrap_or_default();
                self.deliver(n, data);
            }
            // VR(H) never lags VR(R).
            if sub(self.vr_h, self.vr_r) >= HALF {
                self.vr_h = self.vr_r;
            }
            return;
        }
        let h = sub(self.vr_h, self.vr_r);
        let off = off as usize;
        if self.rbuf.len() <= off {
            self.rbuf.resize(off + 1, None);
        }
        if off as u32 >= h {
            if off as u32 > h {
                self.send_ustat(self.vr_h, n_s);
            }
            self.rbuf[off] = Some(info.to_vec());
            self.vr_h = add(n_s, 1);
        } else if self.rbuf[off].is_none() {
            self.rbuf[off] = Some(info.to_vec());
        } else {
            // The same N(S) twice below VR(H): the peer is confused.
            self.reset_data_timers();
            self.maa(MaaError::Q);
            self.start_recovery(now);
        }
    }

    fn deliver(&mut self, n_s: u32, data: Vec<u8>) {
        self.vr_r = add(self.vr_r, 1);
        self.vr_mr = add(self.vr_r, self.config.window);
        self.counters.delivered += 1;
        self.events.push_back(Event::Data { n_s, data });
    }

    /// Q.2110 SDL "POLL PDU" in Data Transfer Ready: answer with STAT(s).
    fn ready_poll(&mut self, now: Instant, n_ps: u32, n_s: u32) {
        let off = sub(n_s, self.vr_r);
        if off >= HALF || off < sub(self.vr_h, self.vr_r) {
            self.reset_data_timers();
            self.maa(MaaError::Q);
            return self.start_recovery(now);
        }
        self.vr_h = if off > sub(self.vr_mr, self.vr_r) {
            self.vr_mr
        } else {
            n_s
        };
        let n = sub(self.vr_h, self.vr_r) as usize;
        let present =
            |rbuf: &VecDeque<Option<Vec<u8>>>, i: usize| rbuf.get(i).is_some_and(Option::is_some);
        let mut list = Vec::new();
        let mut i = 0;
        while i < n {
            if present(&self.rbuf, i) {
                while i < n && present(&self.rbuf, i) {
                    i += 1;
                }
                if i >= n {
                    list.push(add(self.vr_r, i as u32));
                    break;
                }
            }
            list.push(add(self.vr_r, i as u32));
            while i < n && !present(&self.rbuf, i) {
                i += 1;
            }
            list.push(add(self.vr_r, i as u32));
        }
        // Split into STATs of at most MaxSTAT elements, each starting at a gap.
        let pairs_per_stat = (self.config.max_stat.max(3) - 1) / 2;
        let mut chunks = list.chunks(2).peekable();
        loop {
            let mut part = Vec::new();
            for _ in 0..pairs_per_stat {
                match chunks.next() {
                    Some(c) => part.extend_from_slice(c),
                    None => break,
                }
            }
            if let Some(last) = chunks.peek()
                && last.len() == 1
            {
                part.push(last[0]);
                chunks.next();
            }
            self.counters.stats += 1;
            self.send(&Repr::Stat {
                n_r: self.vr_r,
                n_mr: self.vr_mr,
                n_ps,
                list: part,
            });
            if chunks.peek().is_none() {
                break;
            }
        }
    }

    /// Q.2110 SDL "STAT PDU" in Data Transfer Ready.
    fn ready_stat(&mut self, now: Instant, n_r: u32, n_mr: u32, n_ps: u32, list: &[u32]) {
        // VT(PA) <= N(PS) <= VT(PS): an empty range when no POLL is unanswered.
        if sub(n_ps, self.vt_pa) >= sub(add(self.vt_ps, 1), self.vt_pa) {
            self.reset_data_timers();
            self.maa(MaaError::R);
            return self.start_recovery(now);
        }
        let outstanding = sub(self.vt_s, self.vt_a);
        if sub(n_r, self.vt_a) > outstanding {
            return self.stat_error(now, MaaError::S);
        }
        self.acknowledge(n_r);
        self.vt_pa = n_ps;
        self.vt_ms = n_mr;
        if list.len() > 1 {
            let mut count = 0;
            let mut seq1 = list[0];
            if sub(seq1, self.vt_a) >= sub(self.vt_s, self.vt_a) {
                return self.stat_error(now, MaaError::S);
            }
            let mut i = 1;
            loop {
                // [seq1, seq2): missing at the peer.
                let seq2 = list[i];
                i += 1;
                if !self.ordered(seq1, seq2) {
                    return self.stat_error(now, MaaError::S);
                }
                while seq1 != seq2 {
                    let Some(sd) = self.xbuf.get_mut(sub(seq1, self.vt_a) as usize) else {
                        return self.stat_error(now, MaaError::S);
                    };
                    if sd.pdu.is_none() {
                        return self.stat_error(now, MaaError::S);
                    }
                    let since = sub(n_ps, sd.poll_sn);
                    if (1..HALF).contains(&since) && !sd.rexmit {
                        sd.rexmit = true;
                        self.rxq.push_back(seq1);
                        count += 1;
                    }
                    seq1 = add(seq1, 1);
                }
                if i == list.len() {
                    break;
                }
                // [seq1, seq2): received by the peer.
                let seq2 = list[i];
                i += 1;
                if !self.ordered(seq1, seq2) {
                    return self.stat_error(now, MaaError::S);
                }
                while seq1 != seq2 {
                    if self.clear_buffers
                        && let Some(sd) = self.xbuf.get_mut(sub(seq1, self.vt_a) as usize)
                    {
                        sd.pdu = None;
                    }
                    seq1 = add(seq1, 1);
                }
                if i == list.len() {
                    break;
                }
            }
            if count > 0 {
                self.maa(MaaError::V(count));
            }
        }
        self.check_credit();
        if self.timers[Timer::Poll as usize].is_some() {
            self.start(now, Timer::NoResponse);
        } else if self.timers[Timer::Idle as usize].is_none() {
            self.stop(Timer::KeepAlive);
            self.stop(Timer::NoResponse);
            self.start(now, Timer::Idle);
        }
    }

    /// `seq1 < seq2 <= VT(S)`, relative to VT(A).
    fn ordered(&self, seq1: u32, seq2: u32) -> bool {
        let a = sub(seq1, self.vt_a);
        let b = sub(seq2, self.vt_a);
        a < b && b <= sub(self.vt_s, self.vt_a)
    }

    fn stat_error(&mut self, now: Instant, code: MaaError) {
        self.reset_data_timers();
        self.maa(code);
        self.start_recovery(now);
    }

    /// Q.2110 SDL "USTAT PDU" in Data Transfer Ready.
    fn ready_ustat(&mut self, now: Instant, n_r: u32, n_mr: u32, list: [u32; 2]) {
        let outstanding = sub(self.vt_s, self.vt_a);
        if sub(n_r, self.vt_a) >= outstanding {
            return self.stat_error(now, MaaError::T);
        }
        self.acknowledge(n_r);
        self.vt_ms = n_mr;
        let [mut seq1, seq2] = list;
        let a = sub(seq1, self.vt_a);
        let b = sub(seq2, self.vt_a);
        if a >= b || b >= sub(self.vt_s, self.vt_a) {
            return self.stat_error(now, MaaError::T);
        }
        let mut count = 0;
        while seq1 != seq2 {
            let Some(sd) = self.xbuf.get_mut(sub(seq1, self.vt_a) as usize) else {
                return self.stat_error(now, MaaError::T);
            };
            if sd.pdu.is_none() {
                return self.stat_error(now, MaaError::T);
            }
            if !sd.rexmit && !crate::ignore_ustat() {
                sd.rexmit = true;
                self.rxq.push_back(seq1);
                self.counters.ustat_retransmissions += 1;
                count += 1;
            }
            seq1 = add(seq1, 1);
        }
        if count > 0 {
            self.maa(MaaError::V(count));
        }
        self.check_credit();
    }

    /// Release the transmission buffer below N(R) and set VT(A).
    fn acknowledge(&mut self, n_r: u32) {
        let n = sub(n_r, self.vt_a) as usize;
        self.xbuf.drain(..n.min(self.xbuf.len()));
        self.vt_a = n_r;
    }

    fn check_credit(&mut self) {
        let open = self.window_open();
        if !open && self.credit {
            self.credit = false;
            self.maa(MaaError::W);
        } else if open && !self.credit {
            self.credit = true;
            self.maa(MaaError::X);
        }
    }

    /// VT(S) < VT(MS), relative to VT(A) (a VT(MS) behind VT(A) closes the window).
    fn window_open(&self) -> bool {
        let w = sub(self.vt_ms, self.vt_a);
        w < HALF && sub(self.vt_s, self.vt_a) < w
    }

    /// Q.2110 SDL "SD PDU queued up" in Data Transfer Ready: retransmissions first, then
    /// new SDs while the window is open, with the poll rules.
    fn ready_send(&mut self, now: Instant) {
        loop {
            if let Some(seq) = self.rxq.pop_front() {
                let idx = sub(seq, self.vt_a) as usize;
                let vt_ps = self.vt_ps;
                let Some(sd) = self
                    .xbuf
                    .get_mut(idx)
                    .filter(|_| sub(seq, self.vt_a) < HALF)
                else {
                    continue;
                };
                sd.rexmit = false;
                let Some(pdu) = sd.pdu.clone() else { continue };
                sd.poll_sn = vt_ps;
                self.out.push_back(pdu);
                self.counters.sd_retransmitted += 1;
                if self.config.poll_after_retransmission && self.rxq.is_empty() {
                    self.send_poll(now);
                } else {
                    self.maybe_poll(now);
                }
                continue;
            }
            if self.xq.is_empty() {
                return;
            }
            if !self.window_open() {
                if !self.credit_wait {
                    self.credit_wait = true;
                    self.counters.credit_waits += 1;
                }
                if self.timers[Timer::Idle as usize].is_some() {
                    self.stop(Timer::Idle);
                    self.start(now, Timer::NoResponse);
                    self.send_poll(now);
                }
                return;
            }
            self.credit_wait = false;
            let data = self.xq.pop_front().unwrap_or_default();
            let pdu = Repr::Sd {
                n_s: self.vt_s,
                info: &data,
            }
            .to_vec()
            .unwrap_or_default();
            self.out.push_back(pdu.clone());
            self.xbuf.push_back(TxSd {
                pdu: Some(pdu),
                poll_sn: self.vt_ps,
                rexmit: false,
            });
            self.vt_s = add(self.vt_s, 1);
            self.counters.sd_sent += 1;
            self.maybe_poll(now);
        }
    }

    /// Q.2110 SDL "poll": after an SD, count towards MaxPD and keep Timer_POLL running.
    fn maybe_poll(&mut self, now: Instant) {
        self.vt_pd += 1;
        if self.timers[Timer::Poll as usize].is_some() {
            if self.vt_pd < self.config.max_pd {
                return;
            }
        } else {
            if self.timers[Timer::Idle as usize].is_some() {
                self.stop(Timer::Idle);
                self.start(now, Timer::NoResponse);
            } else {
                self.stop(Timer::KeepAlive);
            }
            if self.vt_pd < self.config.max_pd {
                self.start(now, Timer::Poll);
                return;
            }
        }
        self.send_poll(now);
    }

    fn send_poll(&mut self, now: Instant) {
        self.vt_ps = add(self.vt_ps, 1);
        self.counters.polls += 1;
        self.send(&Repr::Poll {
            n_ps: self.vt_ps,
            n_s: self.vt_s,
        });
        self.vt_pd = 0;
        self.start(now, Timer::Poll);
    }

    fn expire(&mut self, now: Instant, t: Timer) {
        use State::*;
        match (self.state, t) {
            (OutgoingConnectionPending, Timer::Cc) => {
                if self.vt_cc >= self.config.max_cc {
                    self.give_up();
                } else {
                    self.vt_cc += 1;
                    self.send_bgn();
                    self.start(now, Timer::Cc);
                }
            }
            (OutgoingDisconnectionPending, Timer::Cc) => {
                if self.vt_cc >= self.config.max_cc {
                    self.maa(MaaError::O);
                    self.events.push_back(Event::ReleaseConfirm);
                    self.enter_idle();
                } else {
                    self.vt_cc += 1;
                    self.send_end(self.last_end_source);
                    self.start(now, Timer::Cc);
                }
            }
            (OutgoingResynchronizationPending, Timer::Cc) => {
                if self.vt_cc >= self.config.max_cc {
                    self.give_up();
                } else {
                    self.vt_cc += 1;
                    self.send_rs(true);
                    self.start(now, Timer::Cc);
                }
            }
            (OutgoingRecoveryPending, Timer::Cc) => {
                if self.vt_cc >= self.config.max_cc {
                    self.give_up();
                } else {
                    self.vt_cc += 1;
                    self.send_er();
                    self.start(now, Timer::Cc);
                }
            }
            (DataTransferReady, Timer::Poll | Timer::KeepAlive) => self.poll_and_set(now),
            (DataTransferReady, Timer::Idle) => {
                self.start(now, Timer::NoResponse);
                self.poll_and_set(now);
            }
            (DataTransferReady, Timer::NoResponse) => {
                self.reset_data_timers();
                self.maa(MaaError::P);
                self.send_end_sscop();
                self.release_indication(&[], Source::Sscop);
                self.enter_idle();
            }
            // A timer left over from a state that does not run it: nothing to do.
            _ => {}
        }
        if self.state == DataTransferReady {
            self.ready_send(now);
        }
    }

    /// Timer_POLL or KEEP-ALIVE expiry: POLL, then POLL or KEEP-ALIVE by what is
    /// outstanding (Q.2110's "Set POLL timer").
    fn poll_and_set(&mut self, now: Instant) {
        self.vt_ps = add(self.vt_ps, 1);
        self.counters.polls += 1;
        self.send(&Repr::Poll {
            n_ps: self.vt_ps,
            n_s: self.vt_s,
        });
        self.vt_pd = 0;
        if self.xq.is_empty() && self.vt_s == self.vt_a {
            self.start(now, Timer::KeepAlive);
        } else {
            self.start(now, Timer::Poll);
        }
    }

    /// VT(CC) reached MaxCC in a pending state: release with END (S = 1).
    fn give_up(&mut self) {
        self.maa(MaaError::O);
        self.send_end_sscop();
        self.release_indication(&[], Source::Sscop);
        self.enter_idle();
    }

    // ---- common transitions -----------------------------------------------------------

    /// A new BGN in a connected or pending state: the old connection is gone, the peer
    /// starts another.
    fn peer_begin(&mut self, n_mr: u32, uu: &[u8]) {
        self.stop(Timer::Cc);
        self.vt_ms = n_mr;
        self.rbuf.clear();
        self.release_indication(&[], Source::User);
        self.events
            .push_back(Event::EstablishIndication { uu: uu.to_vec() });
        self.state = State::IncomingConnectionPending;
    }

    /// BGN in a pending or recovery state whose table says so: a retransmitted one
    /// is MAA-ERROR B, a new one [`peer_begin`](Self::peer_begin).
    fn peer_begin_unless_retransmitted(&mut self, n_sq: u8, n_mr: u32, uu: &[u8]) {
        if self.detect_retransmission(n_sq) {
            return self.maa(MaaError::B);
        }
        self.peer_begin(n_mr, uu);
    }

    fn peer_end(&mut self, source: Source, uu: &[u8]) {
        self.stop(Timer::Cc);
        self.send(&Repr::Endak);
        self.release_indication(uu, source);
        self.enter_idle();
    }

    fn peer_resync(&mut self, n_mr: u32, uu: &[u8]) {
        self.stop(Timer::Cc);
        self.vt_ms = n_mr;
        self.rbuf.clear();
        self.events
            .push_back(Event::ResyncIndication { uu: uu.to_vec() });
        self.state = State::IncomingResynchronizationPending;
    }

    /// RS in a resynchronisation or recovery state: a retransmitted one is MAA-ERROR J, a
    /// new one [`peer_resync`](Self::peer_resync).
    fn peer_resync_unless_retransmitted(&mut self, n_sq: u8, n_mr: u32, uu: &[u8]) {
        if self.detect_retransmission(n_sq) {
            return self.maa(MaaError::J);
        }
        self.peer_resync(n_mr, uu);
    }

    /// An unexpected PDU that ends the connection: MAA-ERROR, END (S = 1) if `send_end`,
    /// AA-RELEASE.indication.
    fn error_release(&mut self, t: PduType, send_end: bool) {
        self.stop(Timer::Cc);
        self.maa_for(t);
        if send_end {
            self.send_end_sscop();
        }
        self.release_indication(&[], Source::Sscop);
        self.enter_idle();
    }

    /// Q.2110 "start recovery": ER, Timer_CC, Outgoing Recovery Pending.
    fn start_recovery(&mut self, now: Instant) {
        self.vt_cc = 1;
        self.vt_sq = self.vt_sq.wrapping_add(1);
        self.initialize_mr();
        self.send_er();
        self.prepare_recovery();
        self.start(now, Timer::Cc);
        self.state = State::OutgoingRecoveryPending;
    }

    fn enter_ready(&mut self, now: Instant) {
        self.stop(Timer::Cc);
        self.initialize_state();
        self.start(now, Timer::Poll);
        self.start(now, Timer::NoResponse);
        self.state = State::DataTransferReady;
        self.ready_send(now);
    }

    fn enter_idle(&mut self) {
        self.timers = [None; 5];
        self.xq.clear();
        self.xbuf.clear();
        self.rxq.clear();
        self.rbuf.clear();
        self.state = State::Idle;
    }

    fn release_indication(&mut self, uu: &[u8], source: Source) {
        self.events.push_back(Event::ReleaseIndication {
            uu: uu.to_vec(),
            source,
        });
    }

    fn maa(&mut self, e: MaaError) {
        self.events.push_back(Event::ManagementError(e));
    }

    /// The MAA-ERROR code for an unexpected PDU of type `t`.
    fn maa_for(&mut self, t: PduType) {
        let code = match t {
            PduType::Sd => MaaError::A,
            PduType::Bgn => MaaError::B,
            PduType::Bgak => MaaError::C,
            PduType::Bgrej => MaaError::D,
            PduType::Endak => MaaError::F,
            PduType::Poll => MaaError::G,
            PduType::Stat => MaaError::H,
            PduType::Ustat => MaaError::I,
            PduType::Rs => MaaError::J,
            PduType::Rsak => MaaError::K,
            PduType::Er => MaaError::L,
            PduType::Erak => MaaError::M,
            _ => return,
        };
        self.maa(code);
    }

    /// N(SQ) equal to VR(SQ) means a retransmitted BGN, RS or ER; otherwise remember it.
    fn detect_retransmission(&mut self, n_sq: u8) -> bool {
        if self.vr_sq == n_sq {
            return true;
        }
        self.vr_sq = n_sq;
        false
    }

    // ---- Q.2110's SDL "macros" -------------------------------------------------------

    fn initialize_mr(&mut self) {
        // VR(R) restarts at 0 when data transfer starts: the credit is the window.
        self.vr_mr = self.config.window & SEQ_MAX;
    }

    fn initialize_state(&mut self) {
        self.vt_s = 0;
        self.vt_ps = 0;
        self.vt_a = 0;
        self.vt_pa = 1;
        self.vt_pd = 0;
        self.credit = true;
        self.credit_wait = false;
        self.vr_r = 0;
        self.vr_h = 0;
        self.xbuf.clear();
        self.rxq.clear();
        self.rbuf.clear();
    }

    fn clear_transmitter(&mut self) {
        self.xq.clear();
        self.xbuf.clear();
        self.rxq.clear();
    }

    fn release_buffers(&mut self) {
        self.clear_transmitter();
        self.rbuf.clear();
    }

    fn prepare_retrieval(&mut self) {
        self.release_buffers();
    }

    fn prepare_recovery(&mut self) {
        if self.clear_buffers {
            self.xq.clear();
            self.xbuf.clear();
        }
        for sd in &mut self.xbuf {
            sd.rexmit = false;
        }
        self.rxq.clear();
    }

    /// Q.2110 "deliver data": with BR = yes the buffered SDs are dropped, otherwise
    /// delivered in order (the gaps stay gaps).
    fn deliver_buffered(&mut self) {
        let rbuf = core::mem::take(&mut self.rbuf);
        if self.clear_buffers {
            return;
        }
        for (i, sd) in rbuf.into_iter().enumerate() {
            if let Some(data) = sd {
                let n_s = add(self.vr_r, i as u32);
                self.counters.delivered += 1;
                self.events.push_back(Event::Data { n_s, data });
            }
        }
    }

    fn reset_data_timers(&mut self) {
        for t in [
            Timer::KeepAlive,
            Timer::NoResponse,
            Timer::Idle,
            Timer::Poll,
        ] {
            self.stop(t);
        }
    }

    fn start(&mut self, now: Instant, t: Timer) {
        let d = match t {
            Timer::Cc => self.config.timer_cc,
            Timer::Poll => self.config.timer_poll,
            Timer::NoResponse => self.config.timer_no_response,
            Timer::KeepAlive => self.config.timer_keep_alive,
            Timer::Idle => self.config.timer_idle,
        };
        self.timers[t as usize] = Some(now.checked_add(d).unwrap_or(now));
    }

    fn stop(&mut self, t: Timer) {
        self.timers[t as usize] = None;
    }

    // ---- sending ----------------------------------------------------------------------

    fn send(&mut self, r: &Repr<'_>) {
        // Our own PDUs always encode: sequence numbers are kept below 2^24.
        if let Ok(pdu) = r.to_vec() {
            self.out.push_back(pdu);
        }
    }

    fn send_bgn(&mut self) {
        let uu = core::mem::take(&mut self.uu_bgn);
        self.send(&Repr::Bgn {
            n_sq: self.vt_sq,
            n_mr: self.vr_mr,
            uu: &uu,
        });
        self.uu_bgn = uu;
    }

    fn send_end(&mut self, source: Source) {
        self.last_end_source = source;
        let uu = core::mem::take(&mut self.uu_end);
        self.send(&Repr::End { source, uu: &uu });
        self.uu_end = uu;
    }

    /// END with S = 1 and no UU (SSCOP-originated).
    fn send_end_sscop(&mut self) {
        self.uu_end.clear();
        self.send_end(Source::Sscop);
    }

    fn send_rs(&mut self, again: bool) {
        if !again {
            self.rs_mr = self.vr_mr;
            self.rs_sq = self.vt_sq;
        }
        let uu = core::mem::take(&mut self.uu_rs);
        self.send(&Repr::Rs {
            n_sq: self.rs_sq,
            n_mr: self.rs_mr,
            uu: &uu,
        });
        self.uu_rs = uu;
    }

    fn send_er(&mut self) {
        self.send(&Repr::Er {
            n_sq: self.vt_sq,
            n_mr: self.vr_mr,
        });
    }

    fn send_ustat(&mut self, a: u32, b: u32) {
        self.counters.ustats += 1;
        self.send(&Repr::Ustat {
            n_r: self.vr_r,
            n_mr: self.vr_mr,
            list: [a, b],
        });
    }
}

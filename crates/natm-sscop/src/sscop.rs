//! Skeleton of the Q.2110 connection (the behaviour follows).

use alloc::vec::Vec;

use natm_core::{Duration, Instant};
use natm_wire::sscop::Source;

/// SSCOP parameters (Q.2110 §7.8), with linux-atm's and ngatm's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Timer_CC: BGN, END, RS and ER retransmission.
    pub timer_cc: Duration,
    /// Timer_POLL.
    pub timer_poll: Duration,
    /// Timer_KEEP_ALIVE.
    pub timer_keep_alive: Duration,
    /// Timer_NO_RESPONSE.
    pub timer_no_response: Duration,
    /// Timer_IDLE.
    pub timer_idle: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            timer_cc: Duration::from_millis(1000),
            timer_poll: Duration::from_millis(750),
            timer_keep_alive: Duration::from_millis(2000),
            timer_no_response: Duration::from_millis(7000),
            timer_idle: Duration::from_millis(15000),
        }
    }
}

/// The states of Q.2110 §7.6.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// 1: idle.
    Idle = 1,
    /// 10: data transfer ready.
    DataTransferReady = 10,
}

/// A signal to the SSCOP user or to layer management.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// AA-ESTABLISH.indication.
    EstablishIndication {
        /// User-to-user information of the BGN.
        uu: Vec<u8>,
    },
    /// AA-ESTABLISH.confirm.
    EstablishConfirm {
        /// User-to-user information of the BGAK.
        uu: Vec<u8>,
    },
    /// AA-RELEASE.indication.
    ReleaseIndication {
        /// User-to-user information of the END or BGREJ.
        uu: Vec<u8>,
        /// Who released.
        source: Source,
    },
    /// AA-RELEASE.confirm.
    ReleaseConfirm,
    /// AA-DATA.indication.
    Data {
        /// N(S) of the SD.
        n_s: u32,
        /// The message.
        data: Vec<u8>,
    },
    /// AA-UNITDATA.indication.
    UnitData(Vec<u8>),
    /// AA-RESYNC.indication.
    ResyncIndication {
        /// User-to-user information of the RS.
        uu: Vec<u8>,
    },
    /// AA-RESYNC.confirm.
    ResyncConfirm,
    /// AA-RECOVER.indication.
    RecoverIndication,
    /// MAA-ERROR.indication with its Q.2110 code letter.
    ManagementError(char),
    /// MAA-UNITDATA.indication.
    ManagementData(Vec<u8>),
}

/// One SSCOP connection endpoint.
#[derive(Debug)]
pub struct Sscop {
    config: Config,
    state: State,
}

impl Sscop {
    /// An idle endpoint.
    pub fn new(config: Config) -> Self {
        Sscop {
            config,
            state: State::Idle,
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

    /// AA-ESTABLISH.request.
    pub fn establish_request(&mut self, _now: Instant, _uu: Vec<u8>, _clear_buffers: bool) {}
    /// AA-ESTABLISH.response.
    pub fn establish_response(&mut self, _now: Instant, _uu: Vec<u8>, _clear_buffers: bool) {}
    /// AA-RELEASE.request.
    pub fn release_request(&mut self, _now: Instant, _uu: Vec<u8>) {}
    /// AA-DATA.request.
    pub fn data_request(&mut self, _now: Instant, _data: Vec<u8>) {}
    /// AA-UNITDATA.request.
    pub fn unitdata_request(&mut self, _now: Instant, _data: Vec<u8>) {}
    /// AA-RESYNC.request.
    pub fn resync_request(&mut self, _now: Instant, _uu: Vec<u8>) {}
    /// AA-RESYNC.response.
    pub fn resync_response(&mut self, _now: Instant) {}
    /// AA-RECOVER.response.
    pub fn recover_response(&mut self, _now: Instant) {}
    /// One received PDU.
    pub fn handle_pdu(&mut self, _now: Instant, _pdu: &[u8]) {}
    /// One PDU to send.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        None
    }
    /// The next signal.
    pub fn poll_event(&mut self) -> Option<Event> {
        None
    }
    /// The next timer deadline.
    pub fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// Run the timers due at `now`.
    pub fn handle_timeout(&mut self, _now: Instant) {}
}

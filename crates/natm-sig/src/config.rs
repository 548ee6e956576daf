//! The interface's configuration: its role and the Q.2931 timers (atm-facts 5.4).

use natm_core::Duration;
use natm_wire::q2931::qos::UniVersion;

/// Which side of the UNI this entity is (Q.2931 §1: the user side is the end system, the
/// network side the switch port).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// The end system's side (states U0…U12).
    User,
    /// The switch's side (states N0…N12).
    Network,
}

/// The Q.2931 timers of one interface, named as in the standard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Timer {
    /// SETUP sent, no answer yet.
    T303,
    /// RELEASE sent, no RELEASE COMPLETE yet.
    T308,
    /// SAAL lost while calls were active.
    T309,
    /// CALL PROCEEDING received, no CONNECT yet.
    T310,
    /// CONNECT sent (user side), no CONNECT ACKNOWLEDGE yet.
    T313,
    /// RESTART sent, no RESTART ACKNOWLEDGE yet.
    T316,
    /// RESTART received, internal clearing not yet confirmed.
    T317,
    /// STATUS ENQUIRY sent, no STATUS yet.
    T322,
}

impl Timer {
    /// The timer's number as three IA5 digits, the diagnostic of cause 102 (Q.2931 §4.5.12).
    pub const fn digits(self) -> [u8; 3] {
        match self {
            Timer::T303 => *b"303",
            Timer::T308 => *b"308",
            Timer::T309 => *b"309",
            Timer::T310 => *b"310",
            Timer::T313 => *b"313",
            Timer::T316 => *b"316",
            Timer::T317 => *b"317",
            Timer::T322 => *b"322",
        }
    }
}

/// How a RESTART from the peer is acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RestartResponse {
    /// At once: the calls are cleared internally (each reported `Released`) and RESTART
    /// ACKNOWLEDGE goes out in the same step. T317 never runs.
    #[default]
    Auto,
    /// The owner frees the VCs' resources first and confirms with
    /// [`Uni::restart_response`](crate::Uni::restart_response); T317 bounds the wait.
    Owner,
}

/// The configuration of one [`Uni`](crate::Uni). `Config::new(role)` gives ngatm's
/// defaults (UNI 4.0 values, which for everything but T310 are UNI 3.1's too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// User or network side.
    pub role: Role,
    /// The peer's UNI version, for what SETUP may carry: with UNI 3.1 a `Qos` that needs
    /// UNI 4.0's traffic negotiation or extended QoS IEs (`pcr`, `min_pcr`, `cdvt`) is
    /// refused by [`Uni::setup`](crate::Uni::setup) (`CommandError::Qos`); UNI 4.0, the
    /// default, sends them.
    pub version: UniVersion,
    /// T303 (SETUP): 4 s.
    pub t303: Duration,
    /// SETUPs sent before giving up (ngatm: 2, i.e. one retransmission).
    pub n303: u8,
    /// T308 (RELEASE): 30 s.
    pub t308: Duration,
    /// RELEASEs sent before releasing locally (2).
    pub n308: u8,
    /// T309 (SAAL re-establishment): 10 s.
    pub t309: Duration,
    /// T310 (CALL PROCEEDING received). ngatm: user 30 s, network 10 s; linux-atm and UNI
    /// 3.1: 10 s (atm-facts 5.4 lists the disagreement). `Config::new` takes ngatm's values.
    pub t310: Duration,
    /// T313 (CONNECT sent by the user): 4 s.
    pub t313: Duration,
    /// T316 (RESTART): 120 s.
    pub t316: Duration,
    /// RESTARTs sent before giving up (2).
    pub n316: u8,
    /// T317 (internal clearing after a received RESTART): 90 s, less than T316.
    pub t317: Duration,
    /// T322 (STATUS ENQUIRY): 4 s.
    pub t322: Duration,
    /// STATUS ENQUIRYs sent before clearing the call with cause 41 (2).
    pub n322: u8,
    /// How a received RESTART is acknowledged.
    pub restart_response: RestartResponse,
    /// After T308 expires for the last time the VC is in a "maintenance condition"
    /// (Q.2931 §5.4.3.4 / §5.4.4.3); with this set the entity restarts that VC (RESTART,
    /// class "indicated VC") so that the peer cannot keep a call the link has forgotten.
    pub restart_after_t308: bool,
    /// The first call reference value tried when allocating (1..=0x7F_FFFE); a seeded
    /// start keeps two runs apart in captures, nothing depends on it.
    pub first_call_ref: u32,
}

impl Config {
    /// ngatm's defaults for `role`.
    pub const fn new(role: Role) -> Config {
        Config {
            role,
            version: UniVersion::Uni40,
            t303: Duration::from_secs(4),
            n303: 2,
            t308: Duration::from_secs(30),
            n308: 2,
            t309: Duration::from_secs(10),
            t310: match role {
                Role::User => Duration::from_secs(30),
                Role::Network => Duration::from_secs(10),
            },
            t313: Duration::from_secs(4),
            t316: Duration::from_secs(120),
            n316: 2,
            t317: Duration::from_secs(90),
            t322: Duration::from_secs(4),
            n322: 2,
            restart_response: RestartResponse::Auto,
            restart_after_t308: true,
            first_call_ref: 1,
        }
    }

    /// The duration of `timer` in this configuration.
    pub const fn duration(&self, timer: Timer) -> Duration {
        match timer {
            Timer::T303 => self.t303,
            Timer::T308 => self.t308,
            Timer::T309 => self.t309,
            Timer::T310 => self.t310,
            Timer::T313 => self.t313,
            Timer::T316 => self.t316,
            Timer::T317 => self.t317,
            Timer::T322 => self.t322,
        }
    }
}

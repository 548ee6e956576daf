//! Call states (Q.2931 §2.1 user side, §2.2 network side) and the global restart states
//! (§2.3), numbered as the call state IE codes them (atm-facts 5.3).

use crate::config::Role;

/// A call's state. The user side and the network side use the same numbers (U1 and N1 are
/// both 1); [`Uni::role`](crate::Uni::role) says which set a value belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum CallState {
    /// U0 / N0: no call.
    Null = 0,
    /// U1: SETUP sent. N1: SETUP received from the user.
    CallInitiated = 1,
    /// U3: CALL PROCEEDING received. N3: CALL PROCEEDING sent to the user.
    OutgoingCallProceeding = 3,
    /// U6: SETUP received from the network. N6: SETUP sent to the user.
    CallPresent = 6,
    /// U8: CONNECT sent, waiting for CONNECT ACKNOWLEDGE. N8: CONNECT received (passed
    /// through: the network acknowledges at once).
    ConnectRequest = 8,
    /// U9: CALL PROCEEDING sent. N9: CALL PROCEEDING received from the user.
    IncomingCallProceeding = 9,
    /// U10 / N10: the call is up.
    Active = 10,
    /// U11 / N11: RELEASE sent, waiting for RELEASE COMPLETE.
    ReleaseRequest = 11,
    /// U12 / N12: RELEASE received (passed through: RELEASE COMPLETE goes out at once).
    ReleaseIndication = 12,
}

impl CallState {
    /// The call state IE's code.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The state a call state IE code names, if it is one this entity has.
    pub const fn from_code(code: u8) -> Option<CallState> {
        Some(match code {
            0 => CallState::Null,
            1 => CallState::CallInitiated,
            3 => CallState::OutgoingCallProceeding,
            6 => CallState::CallPresent,
            8 => CallState::ConnectRequest,
            9 => CallState::IncomingCallProceeding,
            10 => CallState::Active,
            11 => CallState::ReleaseRequest,
            12 => CallState::ReleaseIndication,
            _ => return None,
        })
    }

    /// The state's name in the standard's notation for `role` (`U10`, `N3`, …).
    pub const fn name(self, role: Role) -> &'static str {
        match (role, self) {
            (Role::User, CallState::Null) => "U0",
            (Role::User, CallState::CallInitiated) => "U1",
            (Role::User, CallState::OutgoingCallProceeding) => "U3",
            (Role::User, CallState::CallPresent) => "U6",
            (Role::User, CallState::ConnectRequest) => "U8",
            (Role::User, CallState::IncomingCallProceeding) => "U9",
            (Role::User, CallState::Active) => "U10",
            (Role::User, CallState::ReleaseRequest) => "U11",
            (Role::User, CallState::ReleaseIndication) => "U12",
            (Role::Network, CallState::Null) => "N0",
            (Role::Network, CallState::CallInitiated) => "N1",
            (Role::Network, CallState::OutgoingCallProceeding) => "N3",
            (Role::Network, CallState::CallPresent) => "N6",
            (Role::Network, CallState::ConnectRequest) => "N8",
            (Role::Network, CallState::IncomingCallProceeding) => "N9",
            (Role::Network, CallState::Active) => "N10",
            (Role::Network, CallState::ReleaseRequest) => "N11",
            (Role::Network, CallState::ReleaseIndication) => "N12",
        }
    }

    /// Whether the peer reporting `peer` (its own state number, from a STATUS) can be in
    /// step with a call here in `self`, allowing for messages still in flight either way
    /// (Q.2931 §5.6.11 leaves "compatible" to the implementation). The peer's Null state is
    /// handled before this is asked.
    pub(crate) fn compatible_with(self, peer: u8) -> bool {
        use CallState::*;
        // States the peer can be in while this side is in `self`, by the peer's numbers.
        // Outgoing side: 1, 3 (and 4 in UNI 4.0) then 10; incoming side: 6, 7, 9, 8 then
        // 10. A peer in 11 has sent RELEASE that is on its way here.
        let ok: &[u8] = match self {
            Null => &[],
            CallInitiated => &[1, 3, 4, 10, 11],
            OutgoingCallProceeding => &[3, 4, 10, 11],
            CallPresent | IncomingCallProceeding => &[6, 7, 8, 9, 11],
            ConnectRequest => &[6, 7, 8, 9, 10, 11],
            Active => &[8, 10, 11],
            ReleaseRequest | ReleaseIndication => return peer != 0,
        };
        ok.contains(&peer)
    }
}

/// The interface's restart states (Q.2931 §2.3): one for restarts this side started, one
/// for restarts it answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RestartState {
    /// REST0: no restart in progress.
    Null,
    /// REST1: RESTART sent, waiting for RESTART ACKNOWLEDGE (T316).
    Requested,
    /// REST2: RESTART received, waiting for the owner to finish clearing (T317).
    Indicated,
}

impl RestartState {
    /// The call state IE code of the global call reference's state (REST0 0, REST1 0x3D,
    /// REST2 0x3E).
    pub const fn code(self) -> u8 {
        match self {
            RestartState::Null => 0,
            RestartState::Requested => 0x3D,
            RestartState::Indicated => 0x3E,
        }
    }
}

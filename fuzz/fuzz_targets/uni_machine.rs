//! natm-sig's `Uni` (Q.2931 call control), one of each role, driven by arbitrary input:
//! raw messages, well-formed messages of every type with random call references, flags,
//! action indicators and IEs, mutated SETUPs, the owner's commands on any call, SAAL
//! events and time. Nothing panics; every `Released` is for a call the entity had, once;
//! the entity's call count matches what its events said.
#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use natm_core::addr::Aesa;
use natm_core::qos::{Aal, Pcr, TrafficClass, TrafficParams};
use natm_core::{Duration, Instant, Qos};
use natm_sig::{
    CallEvent, CallId, Config, ConnId, Restart, RestartResponse, Role, SaalEvent, SaalRequest,
    SetupParams, Uni,
};
use natm_wire::q2931::{
    CallRef, CallState, Cause, CauseValue, ConnectionId, Header, IeFlags, IeId, Location, Message,
    MsgType, RawIe, RestartClass, RestartIndicator,
};

const TYPES: [u8; 14] = [
    0x01, 0x02, 0x05, 0x07, 0x0F, 0x46, 0x4D, 0x4E, 0x5A, 0x6E, 0x75, 0x7D, 0x80, 0x33,
];

fn params(conn: Option<ConnId>) -> SetupParams {
    let dir = TrafficParams {
        class: TrafficClass::Ubr,
        max_pcr: Pcr::Cps(1000),
        max_sdu: 9188,
        ..TrafficParams::default()
    };
    SetupParams {
        called: natm_wire::q2931::PartyNumber::aesa(Aesa([0x47; 20])),
        called_sub: None,
        calling: None,
        calling_sub: None,
        qos: Qos {
            tx: dir,
            rx: dir,
            aal: Aal::Aal5,
        },
        blli: None,
        bhli: None,
        conn,
    }
}

struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn bytes(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
}

struct Ent {
    u: Uni,
    known: BTreeSet<CallId>,
}

impl Ent {
    fn drain(&mut self) {
        while let Some(r) = self.u.poll_saal() {
            if let SaalRequest::Data(b) = r {
                // What it sends parses.
                assert!(Message::parse(&b).is_ok(), "sent an unparsable message");
            }
        }
        while let Some(e) = self.u.poll_event() {
            match e {
                CallEvent::Setup { call, .. } => assert!(self.known.insert(call), "{call} twice"),
                CallEvent::Released { call, .. } => {
                    assert!(self.known.remove(&call), "Released for unknown {call}")
                }
                _ => {}
            }
        }
        assert_eq!(self.u.call_count(), self.known.len(), "call count");
    }
}

fuzz_target!(|data: &[u8]| {
    let mut c = Cursor(data);
    let Some(cfg) = c.u8() else { return };
    let mut ents = [Role::User, Role::Network].map(|role| {
        let mut config = Config::new(role);
        if cfg & 1 != 0 {
            config.restart_response = RestartResponse::Owner;
        }
        config.restart_after_t308 = cfg & 2 == 0;
        config.first_call_ref = u32::from(cfg >> 2) * 0x2_0000;
        let mut e = Ent {
            u: Uni::new(config),
            known: BTreeSet::new(),
        };
        e.u.handle_saal(Instant::ZERO, SaalEvent::EstablishConfirm);
        e.drain();
        e
    });
    let mut now = Instant::ZERO;
    while let Some(op) = c.u8() {
        let e = &mut ents[usize::from(op >> 7)];
        match op & 0x7 {
            0 => {
                // Raw bytes.
                let Some(n) = c.u8() else { return };
                let Some(b) = c.bytes(usize::from(n)) else {
                    return;
                };
                e.u.handle_saal(now, SaalEvent::Data(b.to_vec()));
            }
            1 | 2 => {
                // A well-formed message with chosen IEs.
                let Some(b) = c.bytes(6) else { return };
                let mt = TYPES[usize::from(b[0]) % TYPES.len()];
                let cref = u32::from(b[1] & 7);
                let mut h =
                    Header::new(MsgType::from_code(mt), CallRef::new(cref, b[0] & 0x80 != 0));
                if b[0] & 0x40 != 0 {
                    h.instruction =
                        natm_wire::q2931::MsgInstruction::from_octet(0x90 | (b[0] >> 4) & 3);
                }
                let mut m = Message::new(h);
                if mt == 0x05 {
                    let mut bytes = peer_setup(cref, b[0] & 0x80 != 0);
                    if b[2] & 2 != 0 && !bytes.is_empty() {
                        let i = usize::from(b[3]) % bytes.len();
                        bytes[i] ^= b[4];
                    }
                    e.u.handle_saal(now, SaalEvent::Data(bytes));
                } else {
                    if b[2] & 1 != 0 {
                        m.cause.push(Cause::new(
                            Location::User,
                            CauseValue::from_code(b[3] & 0x7F),
                        ));
                    }
                    if b[2] & 2 != 0 {
                        m.connection_id =
                            Some(ConnectionId::exclusive(0, 32 + u16::from(b[4] & 3)));
                    }
                    if b[2] & 4 != 0 {
                        m.call_state = Some(CallState::from_code(b[5] & 0x3F));
                    }
                    if b[2] & 8 != 0 {
                        m.restart = Some(RestartIndicator {
                            class: RestartClass::from_code(b[5] & 3),
                        });
                    }
                    if b[2] & 16 != 0 {
                        m.unknown.push(RawIe {
                            id: IeId::from_code(0x4A),
                            flags: IeFlags::from_octet(0x80 | (b[4] & 0x17)),
                            contents: vec![1, 2],
                        });
                    }
                    let mut bytes = m.to_vec();
                    if op & 7 == 2 && b[2] & 32 != 0 {
                        let i = usize::from(b[3]) % bytes.len();
                        bytes[i] ^= b[5] | 1;
                    }
                    e.u.handle_saal(now, SaalEvent::Data(bytes));
                }
            }
            3 => {
                // A command on some call.
                let Some(b) = c.bytes(2) else { return };
                let calls: Vec<CallId> = e.u.calls().map(|(id, _)| id).collect();
                let call = calls.get(usize::from(b[1]) % calls.len().max(1)).copied();
                let conn = (b[1] & 0x80 != 0).then_some(ConnId {
                    vpci: 0,
                    vci: 32 + u16::from(b[1] & 3),
                });
                let cause = Cause::new(Location::User, CauseValue::NormalCallClearing);
                let _ = match (b[0] % 8, call) {
                    (0, _) => e.u.setup(now, &params(conn)).map(|k| {
                        e.known.insert(k);
                    }),
                    (1, Some(k)) => e.u.proceed(now, k, conn),
                    (2, Some(k)) => e.u.connect(now, k, conn),
                    (3, Some(k)) => e.u.release(now, k, cause),
                    (4, Some(k)) => e.u.status_enquiry(now, k),
                    (5, _) => e.u.restart(
                        now,
                        match b[1] % 3 {
                            0 => Restart::All,
                            1 => Restart::Vp { vpci: 0 },
                            _ => Restart::Vc {
                                vpci: 0,
                                vci: 32 + u16::from(b[1] & 3),
                            },
                        },
                    ),
                    (6, _) => e.u.restart_response(now),
                    _ => Ok(()),
                };
            }
            4 | 5 => {
                let Some(b) = c.u8() else { return };
                now += Duration::from_millis(u64::from(b) * 500);
                if e.u.poll_timeout().is_some_and(|t| t <= now) {
                    e.u.handle_timeout(now);
                }
            }
            _ => {
                let Some(b) = c.u8() else { return };
                let ev = match b % 5 {
                    0 => SaalEvent::EstablishConfirm,
                    1 => SaalEvent::EstablishIndication,
                    2 => SaalEvent::ReleaseIndication,
                    3 => SaalEvent::ReleaseConfirm,
                    _ => SaalEvent::UnitData(vec![b]),
                };
                e.u.handle_saal(now, ev);
            }
        }
        e.drain();
    }
});

/// A SETUP as the peer would send it (through the public API: a scratch entity's).
fn peer_setup(cref: u32, flag: bool) -> Vec<u8> {
    let mut scratch = Uni::new({
        let mut c = Config::new(Role::Network);
        c.first_call_ref = cref.max(1);
        c
    });
    scratch.handle_saal(Instant::ZERO, SaalEvent::EstablishConfirm);
    let _ = scratch.setup(Instant::ZERO, &params(Some(ConnId { vpci: 0, vci: 40 })));
    while let Some(r) = scratch.poll_saal() {
        if let SaalRequest::Data(mut b) = r {
            if b.len() > 4 {
                b[2] = (b[2] & 0x7F) | if flag { 0x80 } else { 0 };
                if cref == 0 {
                    b[2] &= 0x80;
                    b[3] = 0;
                    b[4] = 0;
                }
            }
            return b;
        }
    }
    Vec::new()
}

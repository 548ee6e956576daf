//! Two natm-sig `Signalling` entities (user side and network side: SSCF-UNI and SSCOP
//! under Q.2931 call control) joined by a link the input drives: each SDU delivered, lost,
//! duplicated or corrupted; the owners' commands; time. Nothing panics, nothing spins
//! (the per-step output is bounded), every `Released` is for a call the entity had.
#![no_main]

use std::collections::{BTreeSet, VecDeque};

use libfuzzer_sys::fuzz_target;
use natm_core::addr::Aesa;
use natm_core::{Duration, Instant, Qos};
use natm_sig::{
    CallEvent, CallId, Cause, CauseValue, Config, ConnId, Location, PartyNumber, Restart, Role,
    SetupParams, Signalling,
};

fn params(conn: Option<ConnId>) -> SetupParams {
    SetupParams {
        called: PartyNumber::aesa(Aesa([0x47; 20])),
        called_sub: None,
        calling: None,
        calling_sub: None,
        qos: "aal5,ubr:max_pcr=1000,max_sdu=9180".parse::<Qos>().unwrap(),
        blli: None,
        bhli: None,
        conn,
    }
}

struct End {
    s: Signalling,
    known: BTreeSet<CallId>,
}

impl End {
    fn events(&mut self) {
        let mut n = 0;
        while let Some(e) = self.s.poll_event() {
            n += 1;
            assert!(n < 100_000, "event storm");
            match e {
                CallEvent::Setup { call, .. } => assert!(self.known.insert(call)),
                CallEvent::Released { call, .. } => {
                    assert!(self.known.remove(&call), "Released for unknown {call}")
                }
                _ => {}
            }
        }
        assert_eq!(self.s.uni().call_count(), self.known.len());
    }
}

fuzz_target!(|data: &[u8]| {
    let mut now = Instant::ZERO;
    let saal = natm_sscop::Config::default();
    let mut ends = [Role::User, Role::Network].map(|r| End {
        s: Signalling::new(now, Config::new(r), saal.clone()),
        known: BTreeSet::new(),
    });
    let mut wire: [VecDeque<Vec<u8>>; 2] = [VecDeque::new(), VecDeque::new()];
    let mut vci = 32u16;
    let mut it = data.iter().copied();
    while let Some(op) = it.next() {
        let i = usize::from(op >> 7);
        // Collect what each side sent (bounded: no spinning inside a step).
        for k in 0..2 {
            let mut n = 0;
            while let Some(sdu) = ends[k].s.poll_transmit() {
                n += 1;
                assert!(n < 100_000, "transmit storm");
                wire[1 - k].push_back(sdu);
            }
        }
        match op & 0x7 {
            0 | 1 => {
                // Deliver the next SDU to side i, maybe corrupted or twice.
                let Some(mut sdu) = wire[i].pop_front() else {
                    continue;
                };
                let arg = it.next().unwrap_or(0);
                if arg & 0x80 != 0 && !sdu.is_empty() {
                    let at = usize::from(arg) % sdu.len();
                    sdu[at] ^= arg | 1;
                }
                ends[i].s.handle_pdu(now, &sdu);
                if arg & 0x40 != 0 {
                    ends[i].s.handle_pdu(now, &sdu);
                }
            }
            2 => {
                wire[i].pop_front();
            }
            3 => {
                let Some(b) = it.next() else { return };
                now += Duration::from_millis(u64::from(b) * 40);
                for e in &mut ends {
                    e.s.handle_timeout(now);
                }
            }
            _ => {
                let Some(b) = it.next() else { return };
                let e = &mut ends[i];
                let calls: Vec<CallId> = e.s.uni().calls().map(|(c, _)| c).collect();
                let call = calls.get(usize::from(b >> 3) % calls.len().max(1)).copied();
                vci = vci.wrapping_add(1).max(32);
                let conn = (i == 1 || b & 0x40 != 0).then_some(ConnId { vpci: 0, vci });
                let cause = Cause::new(Location::User, CauseValue::NormalCallClearing);
                match (b & 7, call) {
                    (0, _) => {
                        if let Ok(c) = e.s.setup(now, &params(conn)) {
                            e.known.insert(c);
                        }
                    }
                    (1, Some(c)) => {
                        let _ = e.s.proceed(now, c, conn);
                    }
                    (2, Some(c)) => {
                        let _ = e.s.connect(now, c, conn);
                    }
                    (3, Some(c)) => {
                        let _ = e.s.release(now, c, cause);
                    }
                    (4, Some(c)) => {
                        let _ = e.s.status_enquiry(now, c);
                    }
                    (5, _) => {
                        let _ = e.s.restart(now, Restart::All);
                    }
                    _ => {}
                }
            }
        }
        for e in &mut ends {
            e.events();
        }
    }
});

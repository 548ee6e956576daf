//! natm-sscop's SSCF-UNI: two `Sscf`s driven by arbitrary AAL-requests on either side,
//! frames carried, dropped or duplicated one at a time, and time advanced to fire timers.
//! Nothing may panic (SSCF's own debug assertions included). Between two AAL-ESTABLISH or
//! AAL-RELEASE signals at the sender and two at the receiver, the messages arrive in order
//! and without duplication, and while the sender has had no such signal none is missing.
//! Nothing more is promised across signals: Q.2110's acknowledgements (BGAK, RSAK, ERAK)
//! carry no N(SQ), so a stale one can complete a newer BGN/RS/ER, and then one end may
//! take SDs of the other's previous numbering for new ones (mixing, losing or repeating
//! messages) while only one user is told; this target found that. Each message carries its
//! number and the sender's signal count.
//!
//! One consequence is modelled narrowly (natm-sscop's "Known limit of Q.2110"): the
//! no-loss check is off for the rest of a receiver epoch once that epoch has delivered
//! messages of two sender epochs. An old-numbering SD taken for a new one (after a stale
//! ERAK completed the receiver's recovery early) holds the new numbering's slot, so the new
//! SD of that number is behind VR(R) when it comes and is lost within one epoch at both
//! ends. Without a stale acknowledgement one receiver epoch never holds two sender epochs
//! (SSCF-UNI always asks for BR = yes, so a message is numbered in the epoch it was asked).
#![no_main]

use std::collections::{BTreeMap, VecDeque};

use libfuzzer_sys::fuzz_target;
use natm_core::{Duration, Instant};
use natm_sscop::Config;
use natm_sscop::sscf::{SaalEvent, SaalRequest, Sscf};

struct Side {
    s: Sscf,
    wire: VecDeque<Vec<u8>>,
    next: u64,
    /// AAL-ESTABLISH/RELEASE signals this side has had.
    epoch: u32,
    /// Per (sender epoch, own epoch): the last message received.
    last: BTreeMap<(u32, u32), u64>,
    /// Every message received, with this side's epoch then.
    seen: BTreeMap<u64, u32>,
    /// Per own epoch: the first sender epoch delivered in it, and whether another was too
    /// (the peer's numberings were mixed by a stale BGAK/RSAK/ERAK).
    mixed: BTreeMap<u32, (u32, bool)>,
}

fn drain(sides: &mut [Side; 2]) {
    for side in sides.iter_mut() {
        while let Some(p) = side.s.poll_transmit() {
            side.wire.push_back(p);
        }
    }
    for i in 0..2 {
        while let Some(ev) = sides[i].s.poll_event() {
            let sender_epoch = sides[1 - i].epoch;
            let side = &mut sides[i];
            match ev {
                SaalEvent::Data(d) => {
                    let n = u64::from_be_bytes(d[..8].try_into().expect("8-byte number"));
                    let e = u32::from_be_bytes(d[8..12].try_into().expect("4-byte epoch"));
                    let mine = side.epoch;
                    let mixed = side.mixed.entry(mine).or_insert((e, false));
                    mixed.1 |= mixed.0 != e;
                    let mixed = mixed.1;
                    if let Some(then) = side.seen.insert(n, mine) {
                        assert_ne!(then, mine, "{n} delivered twice in one epoch");
                    }
                    if let Some(&last) = side.last.get(&(e, mine)) {
                        assert!(n > last, "got {n} after {last}");
                        assert!(
                            n == last + 1 || sender_epoch != e || mixed,
                            "lost {} while the sender's epoch {e} lasts",
                            last + 1
                        );
                    }
                    side.last.insert((e, mine), n);
                }
                SaalEvent::UnitData(_) => {}
                _ => side.epoch += 1,
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let side = || Side {
        s: Sscf::new(Config {
            window: 4,
            max_pd: 3,
            ..Config::default()
        }),
        wire: VecDeque::new(),
        next: 0,
        epoch: 0,
        last: BTreeMap::new(),
        seen: BTreeMap::new(),
        mixed: BTreeMap::new(),
    };
    let mut sides = [side(), side()];
    let mut now = Instant::from_nanos(1_000_000_000);
    for pair in data.chunks(2) {
        let (op, arg) = (pair[0], pair.get(1).copied().unwrap_or(0));
        let i = usize::from(op & 1);
        match (op >> 1) % 8 {
            0 => sides[i].s.request(now, SaalRequest::Establish),
            1 => sides[i].s.request(now, SaalRequest::Release),
            2 => {
                for _ in 0..=arg % 6 {
                    let n = sides[i].next;
                    sides[i].next += 1;
                    let mut m = n.to_be_bytes().to_vec();
                    m.extend_from_slice(&sides[i].epoch.to_be_bytes());
                    sides[i].s.request(now, SaalRequest::Data(m));
                }
            }
            3 => sides[i].s.request(now, SaalRequest::UnitData(vec![arg])),
            4 => {
                let until = now + Duration::from_millis(u64::from(arg) * 25);
                while let Some(t) = sides
                    .iter()
                    .filter_map(|s| s.s.poll_timeout())
                    .filter(|&t| t <= until)
                    .min()
                {
                    now = now.max(t);
                    for s in sides.iter_mut() {
                        s.s.handle_timeout(now);
                    }
                    drain(&mut sides);
                }
                now = until;
            }
            5 | 6 => {
                let j = 1 - i;
                for k in 0..=arg % 8 {
                    let Some(p) = sides[i].wire.pop_front() else {
                        break;
                    };
                    sides[j].s.handle_pdu(now, &p);
                    if k == 0 && arg & 8 != 0 {
                        sides[j].s.handle_pdu(now, &p);
                    }
                    drain(&mut sides);
                }
            }
            _ => {
                sides[i].wire.pop_front();
            }
        }
        drain(&mut sides);
    }
});

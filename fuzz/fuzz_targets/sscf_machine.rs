//! natm-sscop's SSCF-UNI: two `Sscf`s driven by arbitrary AAL-requests on either side,
//! frames carried, dropped or duplicated one at a time, and time advanced to fire timers.
//! Nothing may panic (SSCF's own debug assertions included); no message is delivered
//! twice; the messages a sender submitted within one of its connection epochs (between two
//! of its AAL-ESTABLISH/RELEASE signals) arrive in order, and while that epoch lasts one is
//! missing only if the receiver had such a signal since the previous one. Once the sender
//! is told its epoch ended, its unacknowledged messages may be lost. Across the sender's
//! epochs nothing more is promised: Q.2110's acknowledgements (BGAK, RSAK, ERAK) carry no N(SQ), so a
//! stale one can complete a newer BGN/RS/ER and the receiver may take old-epoch SDs for
//! new-epoch ones; only the sender is told (this target found that).
#![no_main]

use std::collections::{BTreeMap, BTreeSet, VecDeque};

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
    /// Per sender epoch: the last message received from it, and this side's epoch then.
    last: BTreeMap<u32, (u64, u32)>,
    /// Every message received.
    seen: BTreeSet<u64>,
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
                    assert!(side.seen.insert(n), "{n} delivered twice");
                    if let Some(&(last, mine)) = side.last.get(&e) {
                        assert!(n > last, "got {n} after {last} of sender epoch {e}");
                        assert!(
                            n == last + 1 || mine != side.epoch || sender_epoch != e,
                            "lost {} of the sender's current epoch {e}",
                            last + 1
                        );
                    }
                    side.last.insert(e, (n, side.epoch));
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
        seen: BTreeSet::new(),
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

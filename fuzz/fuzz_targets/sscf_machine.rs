//! natm-sscop's SSCF-UNI: two `Sscf`s driven by arbitrary AAL-requests on either side,
//! frames carried, dropped or duplicated one at a time, and time advanced to fire timers.
//! Nothing may panic (SSCF's own debug assertions included); each side receives the
//! other's numbered messages in order and without duplication, and without loss between
//! two AAL-ESTABLISH/RELEASE signals.
#![no_main]

use std::collections::VecDeque;

use libfuzzer_sys::fuzz_target;
use natm_core::{Duration, Instant};
use natm_sscop::Config;
use natm_sscop::sscf::{SaalEvent, SaalRequest, Sscf};

struct Side {
    s: Sscf,
    wire: VecDeque<Vec<u8>>,
    next: u64,
    last: Option<u64>,
    epoch_ended: bool,
}

fn drain(sides: &mut [Side; 2]) {
    for side in sides.iter_mut() {
        while let Some(p) = side.s.poll_transmit() {
            side.wire.push_back(p);
        }
    }
    for i in 0..2 {
        while let Some(e) = sides[i].s.poll_event() {
            match e {
                SaalEvent::Data(d) => {
                    let side = &mut sides[i];
                    let n = u64::from_be_bytes(d[..8].try_into().expect("8-byte number"));
                    if let Some(last) = side.last {
                        assert!(n > last, "got {n} after {last}");
                        assert!(n == last + 1 || side.epoch_ended, "lost {}", last + 1);
                    }
                    side.last = Some(n);
                    side.epoch_ended = false;
                }
                SaalEvent::UnitData(_) => {}
                _ => {
                    for side in sides.iter_mut() {
                        side.epoch_ended = true;
                    }
                }
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
        last: None,
        epoch_ended: false,
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
                    sides[i].s.request(now, SaalRequest::Data(n.to_be_bytes().to_vec()));
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
                    let Some(p) = sides[i].wire.pop_front() else { break };
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

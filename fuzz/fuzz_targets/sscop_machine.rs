//! natm-sscop: two SSCOP endpoints driven by arbitrary operations: AA-requests on either
//! side, frames carried, dropped, duplicated or bit-flipped one at a time, arbitrary bytes
//! injected as PDUs, and time advanced to fire timers. The users answer every indication
//! as SSCF-UNI does. Nothing may panic, and the sequence variables stay within half the
//! space. While no forged or corrupted frame was delivered: between two establish,
//! release, resync or recovery signals at the sender and two at the receiver, messages
//! arrive in order and without duplication, and while the sender has had no such signal
//! none is missing. Nothing more is promised across signals: BGAK, RSAK and ERAK carry no
//! N(SQ), so a stale one can complete a newer BGN/RS/ER, and then one end may take SDs of
//! the other's previous numbering for new ones while only one user is told. Each message
//! carries its number and the sender's signal count.
#![no_main]

use std::collections::{BTreeMap, VecDeque};

use libfuzzer_sys::fuzz_target;
use natm_core::{Duration, Instant};
use natm_sscop::{Config, Event, Sscop, State};

const HALF: u32 = 1 << 23;

fn sub(a: u32, b: u32) -> u32 {
    a.wrapping_sub(b) & 0x00FF_FFFF
}

/// One direction's receiving side of the check.
#[derive(Default)]
struct Check {
    /// Per (sender epoch, own epoch): the last message received.
    last: BTreeMap<(u32, u32), u64>,
    /// Every message received, with this side's epoch then.
    seen: BTreeMap<u64, u32>,
    /// Epoch signals this side has had.
    epoch: u32,
}

struct Side {
    s: Sscop,
    /// Frames on their way to the other side.
    wire: VecDeque<Vec<u8>>,
    next: u64,
    check: Check,
}

struct World {
    sides: [Side; 2],
    now: Instant,
    /// A forged or corrupted frame was delivered: data checks are off.
    tainted: bool,
    /// An endpoint kept its buffers across recovery (BR = no): gaps may be delivered.
    kept_buffers: bool,
}

impl World {
    fn side(config: &Config) -> Side {
        Side {
            s: Sscop::new(config.clone()),
            wire: VecDeque::new(),
            next: 0,
            check: Check::default(),
        }
    }

    fn drain(&mut self) {
        for _ in 0..64 {
            let mut moved = false;
            for i in 0..2 {
                while let Some(p) = self.sides[i].s.poll_transmit() {
                    self.sides[i].wire.push_back(p);
                    moved = true;
                }
                while let Some(e) = self.sides[i].s.poll_event() {
                    moved = true;
                    self.signal(i, e);
                }
            }
            if !moved {
                return;
            }
        }
    }

    fn epoch_ends(&mut self, i: usize) {
        self.sides[i].check.epoch += 1;
    }

    fn signal(&mut self, i: usize, e: Event) {
        let now = self.now;
        match e {
            Event::Data { data, .. } => {
                if self.tainted || data.len() < 12 {
                    return;
                }
                let n = u64::from_be_bytes(data[..8].try_into().expect("8 bytes"));
                let e = u32::from_be_bytes(data[8..12].try_into().expect("4 bytes"));
                let sender_epoch = self.sides[1 - i].check.epoch;
                let c = &mut self.sides[i].check;
                let mine = c.epoch;
                if let Some(then) = c.seen.insert(n, mine) {
                    assert_ne!(then, mine, "side {i} got {n} twice in one epoch");
                }
                if let Some(&last) = c.last.get(&(e, mine)) {
                    assert!(n > last, "side {i} got {n} after {last}");
                    if !self.kept_buffers {
                        assert!(
                            n == last + 1 || sender_epoch != e,
                            "side {i} lost {} while the sender's epoch {e} lasts",
                            last + 1
                        );
                    }
                }
                c.last.insert((e, mine), n);
            }
            Event::EstablishIndication { .. } => {
                self.epoch_ends(i);
                self.sides[i].s.establish_response(now, Vec::new(), true);
            }
            Event::ResyncIndication { .. } => {
                self.epoch_ends(i);
                self.sides[i].s.resync_response(now);
            }
            Event::RecoverIndication => {
                self.epoch_ends(i);
                self.sides[i].s.recover_response(now);
            }
            Event::EstablishConfirm { .. }
            | Event::ResyncConfirm
            | Event::ReleaseIndication { .. }
            | Event::ReleaseConfirm => self.epoch_ends(i),
            Event::UnitData(_) | Event::ManagementData(_) | Event::ManagementError(_) => {}
        }
    }

    fn sanity(&self) {
        for side in &self.sides {
            if side.s.state() == State::DataTransferReady {
                let [vt_s, vt_a, _, vr_r, vr_h, vr_mr] = side.s.variables();
                assert!(sub(vt_s, vt_a) < HALF, "VT(S) behind VT(A)");
                assert!(sub(vr_h, vr_r) < HALF, "VR(H) behind VR(R)");
                assert!(sub(vr_mr, vr_r) < HALF, "VR(MR) behind VR(R)");
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&cfg, mut rest)) = data.split_first() else {
        return;
    };
    let config = Config {
        window: 1 + u32::from(cfg & 0x0f),
        max_pd: 1 + u32::from(cfg >> 4),
        max_stat: 3 + 2 * usize::from(cfg & 3),
        max_k: 64,
        ..Config::default()
    };
    let mut w = World {
        sides: [World::side(&config), World::side(&config)],
        now: Instant::from_nanos(1_000_000_000),
        tainted: false,
        kept_buffers: false,
    };
    while let Some((&op, tail)) = rest.split_first() {
        let (arg, tail) = tail.split_first().map_or((0, tail), |(a, t)| (*a, t));
        rest = tail;
        let i = usize::from(op & 1);
        let now = w.now;
        match (op >> 1) % 10 {
            0 => {
                let br = arg & 1 == 0;
                w.kept_buffers |= !br;
                w.sides[i]
                    .s
                    .establish_request(now, vec![arg; usize::from(arg % 5)], br);
            }
            1 => w.sides[i].s.release_request(now, Vec::new()),
            2 => {
                for _ in 0..=arg % 8 {
                    let side = &mut w.sides[i];
                    let mut m = side.next.to_be_bytes().to_vec();
                    m.extend_from_slice(&side.check.epoch.to_be_bytes());
                    m.extend(std::iter::repeat_n(0xee, usize::from(arg % 4)));
                    side.next += 1;
                    side.s.data_request(now, m);
                }
            }
            3 => w.sides[i].s.resync_request(now, Vec::new()),
            4 => w.sides[i].s.unitdata_request(now, vec![arg]),
            5 => {
                // Advance time and run both endpoints' timers in order.
                let until = now + Duration::from_millis(u64::from(arg) * 20);
                loop {
                    let due = w
                        .sides
                        .iter()
                        .filter_map(|s| s.s.poll_timeout())
                        .filter(|&t| t <= until)
                        .min();
                    let Some(t) = due else { break };
                    w.now = w.now.max(t);
                    for side in &mut w.sides {
                        side.s.handle_timeout(w.now);
                    }
                    w.drain();
                }
                w.now = until;
            }
            6 => {
                // Carry up to 8 frames from side i to the other; bit 3 duplicates the first.
                let j = 1 - i;
                for k in 0..=arg % 8 {
                    let Some(p) = w.sides[i].wire.pop_front() else {
                        break;
                    };
                    w.sides[j].s.handle_pdu(now, &p);
                    if k == 0 && arg & 8 != 0 {
                        w.sides[j].s.handle_pdu(now, &p);
                    }
                    w.drain();
                }
            }
            7 => {
                w.sides[i].wire.pop_front();
            }
            8 => {
                // Flip one bit of the next frame and deliver it (what AAL5's CRC would stop).
                let j = 1 - i;
                if let Some(mut p) = w.sides[i].wire.pop_front() {
                    if !p.is_empty() {
                        let bit = usize::from(arg) % (p.len() * 8);
                        p[bit / 8] ^= 1 << (bit % 8);
                    }
                    w.tainted = true;
                    w.sides[j].s.handle_pdu(now, &p);
                }
            }
            _ => {
                // Forged bytes from the input as one PDU.
                let n = usize::from(arg % 48).min(rest.len());
                let (pdu, tail) = rest.split_at(n);
                rest = tail;
                w.tainted = true;
                w.sides[i].s.handle_pdu(now, pdu);
            }
        }
        w.drain();
        w.sanity();
    }
});

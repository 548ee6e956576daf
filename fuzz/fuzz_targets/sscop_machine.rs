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
//!
//! Two consequences of that mixing are modelled, each narrowly (natm-sscop's "Known limit
//! of Q.2110" has both):
//! * A message's sender epoch is the one in which its SD was first sent (numbered), not the
//!   one in which it was requested. The two differ only when a message waits in the
//!   transmission queue across the sender's recovery, which only BR = no allows (checked).
//!   Found with a stale ERAK: the receiver took an old-numbering SD into its new receive
//!   buffer, delivered a message queued before the sender's recovery but numbered after
//!   it, then (BR = no) the buffered old one after it.
//! * The no-loss check is off for the rest of a receiver epoch once that epoch has
//!   delivered messages of two sender epochs: an old-numbering SD taken for a new one holds
//!   the new numbering's slot, so the new SD of that number is behind VR(R) when it comes.
//!   Without a stale acknowledgement one receiver epoch never holds two sender epochs.
#![no_main]

use std::collections::{BTreeMap, VecDeque};

use libfuzzer_sys::fuzz_target;
use natm_core::{Duration, Instant};
use natm_sscop::{Config, Event, Sscop, State};
use natm_wire::sscop::{Pdu, Repr};

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
    /// Per own epoch: the first sender epoch delivered in it, and whether another was too
    /// (the peer's numberings were mixed by a stale BGAK/RSAK/ERAK).
    mixed: BTreeMap<u32, (u32, bool)>,
}

struct Side {
    s: Sscop,
    /// Frames on their way to the other side.
    wire: VecDeque<Vec<u8>>,
    next: u64,
    check: Check,
    /// Per message sent: this side's epoch when its SD first left (its numbering epoch).
    numbered: BTreeMap<u64, u32>,
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
            numbered: BTreeMap::new(),
        }
    }

    fn drain(&mut self) {
        for _ in 0..64 {
            let mut moved = false;
            for i in 0..2 {
                while let Some(p) = self.sides[i].s.poll_transmit() {
                    let side = &mut self.sides[i];
                    if let Ok(pdu) = Pdu::new_checked(&p[..])
                        && let Repr::Sd { info, .. } = Repr::from_pdu(&pdu)
                        && info.len() >= 12
                    {
                        let n = u64::from_be_bytes(info[..8].try_into().expect("8 bytes"));
                        side.numbered.entry(n).or_insert(side.check.epoch);
                    }
                    side.wire.push_back(p);
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
                let asked = u32::from_be_bytes(data[8..12].try_into().expect("4 bytes"));
                let sender = &self.sides[1 - i];
                let sender_epoch = sender.check.epoch;
                let e = sender.numbered.get(&n).copied().unwrap_or(asked);
                assert!(
                    e == asked || self.kept_buffers,
                    "side {i} got {n}, asked in epoch {asked} but sent in {e}, with BR = yes"
                );
                let c = &mut self.sides[i].check;
                let mine = c.epoch;
                let mixed = c.mixed.entry(mine).or_insert((e, false));
                mixed.1 |= mixed.0 != e;
                let mixed = mixed.1;
                if let Some(then) = c.seen.insert(n, mine) {
                    assert_ne!(then, mine, "side {i} got {n} twice in one epoch");
                }
                if let Some(&last) = c.last.get(&(e, mine)) {
                    assert!(n > last, "side {i} got {n} after {last}");
                    if !self.kept_buffers {
                        assert!(
                            n == last + 1 || sender_epoch != e || mixed,
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

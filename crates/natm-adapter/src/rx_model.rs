//! The receive path against a reference receiver of the same cells, on random cell streams
//! with loss, bit flips anywhere, duplicates, aborts, Length errors, SDUs longer than the VC
//! takes and reassembly timeouts passing between batches: the same SDUs per VC in the same
//! order, and the same frames dropped for each reason, after every batch.
//!
//! The reference is a model written to be obviously right rather than fast: per VC, the
//! payloads of the frame so far, checked whole at its last cell with natm-wire's
//! [`Pdu::check`] (I.363.5 §10.4). The same comparison held natm-aal's receiver and
//! natm-wire's reassembler equal to the adapter before they went (issue 21).

use std::collections::BTreeMap;
use std::vec::Vec;

use natm_core::{Duration, HeaderFormat, Instant};
use natm_wire::aal5::{Aal5Error, Pdu, cell_count};
use natm_wire::cell::{CELL_LEN, Cell, CellHeader, HEADER_LEN, PAYLOAD_LEN, Pti};
use natm_wire::crc32::crc32;
use proptest::prelude::*;

use crate::props::{BUFFERS, SIZE, VCS, faults, run, sdu_list, xorshift};
use crate::tests::{T0, UBR, config, vc};
use crate::*;

const TIMEOUT: Duration = Duration::from_micros(500);

/// Frames dropped, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Drops {
    crc: u64,
    aborted: u64,
    length: u64,
    oversize: u64,
    timeout: u64,
}

impl Drops {
    fn count(&mut self, e: Aal5Error) {
        match e {
            Aal5Error::Crc { .. } => self.crc += 1,
            Aal5Error::Abort => self.aborted += 1,
            Aal5Error::Length { .. } => self.length += 1,
            Aal5Error::Oversize { .. } => self.oversize += 1,
            Aal5Error::NotCellMultiple { .. } | Aal5Error::EmptySdu => {
                unreachable!("not a receive verdict: {e}")
            }
        }
    }
}

/// What a receiver made of the cells so far: the SDUs of each VC (by index) in order, and
/// the frames dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Outcome {
    sdus: BTreeMap<u32, Vec<Vec<u8>>>,
    drops: Drops,
}

/// A receiver of the VCs `vc(0..VCS)`, each taking SDUs up to `limit` bytes, with a
/// reassembly timeout of [`TIMEOUT`].
trait Receive {
    /// Time passes to `now` (frames whose deadline is at or before it are dropped), then
    /// `cells` arrive.
    fn receive(&mut self, now: Instant, cells: &[[u8; CELL_LEN]]);
    /// Everything so far.
    fn outcome(&self) -> Outcome;
}

/// The adapter, its buffers handed back and posted again as soon as they complete.
struct Nic {
    adapter: Adapter,
    mem: VecBuffers,
    sdus: BTreeMap<u32, Vec<Vec<u8>>>,
}

impl Nic {
    fn new(limit: usize) -> Nic {
        let mut adapter = Adapter::new(AdapterConfig {
            buffers: BUFFERS,
            rx_buffer_size: SIZE,
            reassembly_timeout: Some(TIMEOUT),
            // The other receivers take the cells the link's HEC check let through.
            hec: HecCheck::Off,
            ..config()
        })
        .unwrap();
        for i in 0..VCS {
            adapter
                .open_vc(100 + i, vc(i), UBR, RxVcConfig::aal5(limit))
                .unwrap();
        }
        for id in 0..BUFFERS {
            adapter.post_rx_buffer(BufferId(id));
        }
        Nic {
            adapter,
            mem: VecBuffers::new(BUFFERS, SIZE),
            sdus: BTreeMap::new(),
        }
    }
}

impl Receive for Nic {
    fn receive(&mut self, now: Instant, cells: &[[u8; CELL_LEN]]) {
        self.adapter.handle_timeout(now);
        self.adapter.handle_cells(now, cells, &mut self.mem);
        while let Some(c) = self.adapter.poll_completion() {
            assert_eq!(c.status, Status::Ok, "{c:?}");
            let sdu = self.mem.buffer(c.buffer).unwrap()[..c.len].to_vec();
            let handle = c.handle.expect("a received SDU names its VC");
            self.sdus.entry(handle - 100).or_default().push(sdu);
            self.adapter.post_rx_buffer(c.buffer);
        }
        assert_eq!(self.adapter.counters().no_buffer, 0);
    }

    fn outcome(&self) -> Outcome {
        let c = self.adapter.counters();
        Outcome {
            sdus: self.sdus.clone(),
            drops: Drops {
                crc: c.crc,
                aborted: c.aborted,
                length: c.length,
                oversize: c.oversize,
                timeout: c.timeout,
            },
        }
    }
}

/// One VC's frame in the reference.
#[derive(Clone, Debug, Default)]
struct Frame {
    payloads: Vec<u8>,
    /// When its first cell came (`None`: no frame in progress).
    started: Option<Instant>,
    /// Dropped as oversize: cells up to its last one are ignored.
    skipping: bool,
}

/// The reference receiver.
struct Reference {
    limit: usize,
    frames: Vec<Frame>,
    out: Outcome,
}

impl Reference {
    fn new(limit: usize) -> Reference {
        Reference {
            limit,
            frames: vec![Frame::default(); VCS as usize],
            out: Outcome::default(),
        }
    }

    /// Drop VC `i`'s frame if it is `TIMEOUT` old at `now`.
    fn expire(&mut self, i: usize, now: Instant) {
        let f = &mut self.frames[i];
        if f.started.is_some_and(|t| now >= t + TIMEOUT) {
            *f = Frame::default();
            self.out.drops.timeout += 1;
        }
    }

    fn cell(&mut self, now: Instant, cell: &[u8; CELL_LEN]) {
        let view = Cell::new_unchecked(&cell[..]);
        let id = view.vc(HeaderFormat::Uni);
        let Some(i) = (0..VCS).find(|&i| vc(i) == id) else {
            return;
        };
        let Pti::UserData { end_of_frame, .. } = view.pti() else {
            return;
        };
        let i = i as usize;
        self.expire(i, now);
        let f = &mut self.frames[i];
        if f.skipping {
            f.skipping = !end_of_frame;
            return;
        }
        if f.payloads.len() == cell_count(self.limit) * PAYLOAD_LEN {
            *f = Frame {
                skipping: !end_of_frame,
                ..Frame::default()
            };
            self.out.drops.oversize += 1;
            return;
        }
        f.started.get_or_insert(now);
        f.payloads.extend_from_slice(&cell[HEADER_LEN..]);
        if !end_of_frame {
            return;
        }
        let payloads = core::mem::take(&mut self.frames[i]).payloads;
        match Pdu::new_unchecked(&payloads[..]).check(self.limit) {
            Ok(n) => self
                .out
                .sdus
                .entry(i as u32)
                .or_default()
                .push(payloads[..n].to_vec()),
            Err(e) => self.out.drops.count(e),
        }
    }
}

impl Receive for Reference {
    fn receive(&mut self, now: Instant, cells: &[[u8; CELL_LEN]]) {
        for i in 0..VCS as usize {
            self.expire(i, now);
        }
        for c in cells {
            self.cell(now, c);
        }
    }

    fn outcome(&self) -> Outcome {
        self.out.clone()
    }
}

/// A one-cell frame on VC `i` whose CRC is right and whose Length is `length`: 0 is an
/// abort (I.363.5), 1..=40 an SDU of zeros, more a Length error.
fn lone_frame(i: u32, length: u16) -> [u8; CELL_LEN] {
    let mut cell = [0u8; CELL_LEN];
    let header = CellHeader::data(vc(i), true)
        .to_bytes(HeaderFormat::Uni)
        .unwrap();
    cell[..HEADER_LEN].copy_from_slice(&header);
    cell[CELL_LEN - 6..CELL_LEN - 4].copy_from_slice(&length.to_be_bytes());
    let crc = crc32(&cell[HEADER_LEN..CELL_LEN - 4]);
    cell[CELL_LEN - 4..].copy_from_slice(&crc.to_be_bytes());
    cell
}

/// The cells of `sdus` as the adapter sends them, with faults in thousandths: each cell
/// lost, flipped in one bit, duplicated, or followed by a [`lone_frame`] on a random VC
/// (an abort, a short SDU or a Length error).
fn stream(
    sdus: &[(u32, usize)],
    seed: u64,
    (loss, flip, dup, lone): (u32, u32, u32, u32),
) -> Vec<[u8; CELL_LEN]> {
    let mut rand = xorshift(seed);
    let mut cells = Vec::new();
    run(sdus, natm_core::LineRate::Unlimited, 64, |batch| {
        for c in faults(batch, &mut rand, (loss, flip, dup)) {
            cells.push(c);
            if rand() % 1000 < u64::from(lone) {
                let i = (rand() % u64::from(VCS)) as u32;
                let length = match rand() % 3 {
                    0 => 0,
                    1 => 1 + rand() % 40,
                    _ => 41 + rand() % 1000,
                };
                cells.push(lone_frame(i, length as u16));
            }
        }
        Vec::new()
    });
    cells
}

/// Feed `cells` to `a` and `b` in the same batches, time moving on before each; the
/// outcomes after every batch.
fn compare(
    a: &mut dyn Receive,
    b: &mut dyn Receive,
    cells: &[[u8; CELL_LEN]],
    batches: &[(usize, u64)],
) -> Result<(), TestCaseError> {
    let mut now = T0;
    let mut rest = cells;
    let mut batch = batches.iter().cycle();
    while !rest.is_empty() {
        let &(n, us) = batch.next().unwrap();
        let (this, tail) = rest.split_at(n.min(rest.len()));
        now += Duration::from_micros(us);
        a.receive(now, this);
        b.receive(now, this);
        prop_assert_eq!(a.outcome(), b.outcome());
        rest = tail;
    }
    // Long after: every frame left has timed out.
    now += TIMEOUT;
    a.receive(now, &[]);
    b.receive(now, &[]);
    prop_assert_eq!(a.outcome(), b.outcome());
    Ok(())
}

fn rates() -> impl Strategy<Value = (u32, u32, u32, u32)> {
    (0u32..50, 0u32..50, 0u32..50, 0u32..30)
}

fn batches() -> impl Strategy<Value = Vec<(usize, u64)>> {
    proptest::collection::vec((1usize..200, 0u64..1_500), 1..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The adapter delivers and drops what the reference does.
    #[test]
    fn the_adapter_receives_as_the_reference_does(
        sdus in sdu_list(),
        seed in any::<u64>(),
        rates in rates(),
        batches in batches(),
        limit in prop_oneof![Just(SIZE), 1usize..SIZE],
    ) {
        let cells = stream(&sdus, seed, rates);
        compare(&mut Nic::new(limit), &mut Reference::new(limit), &cells, &batches)?;
    }
}

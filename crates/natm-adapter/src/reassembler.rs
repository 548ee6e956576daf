//! [`Reassembler`]: the adapter's receive path for the cells of one VC, each SDU handed back
//! as bytes, for tests, tools and demonstrations that hold one VC's cells and want its
//! SDUs. It is an [`Adapter`] with that one VC open and one receive buffer, not a second
//! implementation: natm has one AAL5 receiver.

use alloc::vec::Vec;

use natm_core::{HeaderFormat, Instant, VcId};
use natm_traffic::sched::VcSpec;
use natm_wire::cell::{CELL_LEN, CellHeader, HEADER_LEN, PAYLOAD_LEN};

use crate::{
    Adapter, AdapterConfig, BufferId, Counters, FrameDrop, HecCheck, OpenError, RxVcConfig, Status,
    UBR_UNSHAPED_PCR, VecBuffers,
};

/// What pushing cells into a [`Reassembler`] produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reassembly {
    /// No frame ended.
    Incomplete,
    /// An SDU of this many bytes is in [`Reassembler::sdu`] until the next push.
    Complete(usize),
    /// A frame was dropped for this reason.
    Discarded(FrameDrop),
}

/// One VC's AAL5 frames reassembled by the adapter's receive path.
///
/// The headers are not checked (the link did: natm-wire's `HecReceiver`) and there is no
/// reassembly timeout (no clock). Cells of other VCs, OAM and RM cells are not reassembled
/// (they are counted in [`counters`](Self::counters)). The strict receive rules of I.363.5
/// §10 apply, as in the adapter: a frame longer than `max_sdu` is dropped at the cell that
/// makes it too long, and the cells up to its last one are skipped.
#[derive(Clone, Debug)]
pub struct Reassembler {
    adapter: Adapter,
    mem: VecBuffers,
    /// The VC's user-data headers: a middle cell's, a last cell's.
    headers: [[u8; HEADER_LEN]; 2],
    /// The SDU the last push completed (empty otherwise).
    sdu: Vec<u8>,
    /// The adapter's drop counters after the last push, in the order of [`DROPS`].
    drops: [u64; 5],
}

/// The adapter's drop counters, in the order of [`DROPS`].
fn drops(c: &Counters) -> [u64; 5] {
    [c.crc, c.aborted, c.length, c.oversize, c.timeout]
}

/// The drop reasons, in the order of [`drops`].
const DROPS: [FrameDrop; 5] = [
    FrameDrop::Crc,
    FrameDrop::Abort,
    FrameDrop::Length,
    FrameDrop::Oversize,
    FrameDrop::Timeout,
];

impl Reassembler {
    /// SDUs of up to `max_sdu` (1..=65535) bytes on `vc`, a UNI VC.
    pub fn new(vc: VcId, max_sdu: usize) -> Result<Reassembler, OpenError> {
        let mut adapter = Adapter::new(AdapterConfig {
            hec: HecCheck::Off,
            reassembly_timeout: None,
            max_vcs: 1,
            ..AdapterConfig::new(1, max_sdu.max(1))
        })
        .expect("one buffer of at least one byte and one VC");
        let ubr = VcSpec::ubr(UBR_UNSHAPED_PCR, 1);
        adapter.open_vc(0, vc, ubr, RxVcConfig::aal5(max_sdu))?;
        adapter.post_rx_buffer(BufferId(0));
        let header = |end_of_frame| {
            CellHeader::data(vc, end_of_frame)
                .to_bytes(HeaderFormat::Uni)
                .expect("the adapter took the VC")
        };
        Ok(Reassembler {
            adapter,
            mem: VecBuffers::new(1, max_sdu),
            headers: [header(false), header(true)],
            sdu: Vec::new(),
            drops: [0; 5],
        })
    }

    /// Push one cell.
    pub fn push_cell(&mut self, cell: &[u8; CELL_LEN]) -> Reassembly {
        self.push_cells(core::slice::from_ref(cell))
    }

    /// Push a user-data cell's payload; `end_of_frame` is the PTI's SDU-type bit.
    pub fn push(&mut self, payload: &[u8; PAYLOAD_LEN], end_of_frame: bool) -> Reassembly {
        let mut cell = [0u8; CELL_LEN];
        cell[..HEADER_LEN].copy_from_slice(&self.headers[usize::from(end_of_frame)]);
        cell[HEADER_LEN..].copy_from_slice(payload);
        self.push_cell(&cell)
    }

    /// Push cells; a frame's middle cells take the adapter's run path. The outcome is that
    /// of the last frame that ended among them; [`sdu`](Self::sdu) holds the last SDU
    /// completed among them.
    pub fn push_cells(&mut self, mut cells: &[[u8; CELL_LEN]]) -> Reassembly {
        self.sdu.clear();
        let mut outcome = Reassembly::Incomplete;
        while !cells.is_empty() {
            // Up to the first cell that may end a frame (PTI 0x1: user data, SDU-type 1):
            // at most one frame ends per call, and the one buffer is posted again between.
            let n = cells
                .iter()
                .position(|c| c[3] & 0b1010 == 0b0010)
                .map_or(cells.len(), |i| i + 1);
            let (these, rest) = cells.split_at(n);
            let ended = self.handle(these);
            if ended != Reassembly::Incomplete {
                outcome = ended;
            }
            cells = rest;
        }
        outcome
    }

    /// Cells of which at most the last ends a frame, through the adapter.
    fn handle(&mut self, cells: &[[u8; CELL_LEN]]) -> Reassembly {
        self.adapter
            .handle_cells(Instant::ZERO, cells, &mut self.mem);
        let mut outcome = Reassembly::Incomplete;
        let now = drops(&self.adapter.counters());
        for ((n, before), why) in now.iter().zip(&self.drops).zip(DROPS) {
            if n != before {
                outcome = Reassembly::Discarded(why);
            }
        }
        self.drops = now;
        while let Some(done) = self.adapter.poll_completion() {
            if done.status == Status::Ok {
                let buffer = self.mem.buffer(done.buffer).expect("the one buffer");
                self.sdu.clear();
                self.sdu.extend_from_slice(&buffer[..done.len]);
                outcome = Reassembly::Complete(done.len);
            }
            self.adapter.post_rx_buffer(done.buffer);
        }
        while self.adapter.poll_event().is_some() {}
        debug_assert_eq!(self.adapter.counters().no_buffer, 0);
        outcome
    }

    /// The SDU completed by the last push (empty otherwise).
    pub fn sdu(&self) -> &[u8] {
        &self.sdu
    }

    /// The adapter's counters: cells in, frames in, frames dropped per reason, cells of
    /// other VCs, OAM cells.
    pub fn counters(&self) -> Counters {
        self.adapter.counters()
    }
}

/// Moved from natm-wire's reassembler with the behaviour they test. Its exact CRC figures
/// in a discard (computed and received) are not kept: the adapter checks the residue.
#[cfg(test)]
mod tests {
    use std::vec;

    use natm_wire::aal5::{MAX_SDU, Pdu, Segmenter, encode_pdu};
    use natm_wire::cell::{Cell, Pti, hec};
    use proptest::prelude::*;

    use super::*;

    fn vc(vpi: u32, vci: u32) -> VcId {
        VcId::uni(vpi, vci).unwrap()
    }

    #[test]
    fn reassemble_every_error() {
        let sdu: Vec<u8> = (0..100u8).collect();
        let cells: Vec<_> = Segmenter::uni(vc(0, 32), &sdu).unwrap().collect();
        let mut r = Reassembler::new(vc(0, 32), MAX_SDU).unwrap();
        assert_eq!(r.push_cell(&cells[0]), Reassembly::Incomplete);
        assert_eq!(r.push_cell(&cells[1]), Reassembly::Incomplete);
        assert_eq!(r.push_cell(&cells[2]), Reassembly::Complete(100));
        assert_eq!(r.sdu(), &sdu[..]);

        // CRC: a payload bit flip.
        let mut bad = cells.clone();
        bad[1][20] ^= 0x01;
        for c in &bad[..2] {
            assert_eq!(r.push_cell(c), Reassembly::Incomplete);
        }
        assert_eq!(r.push_cell(&bad[2]), Reassembly::Discarded(FrameDrop::Crc));

        // A lost middle cell: the CRC catches it.
        r.push_cell(&cells[0]);
        assert_eq!(
            r.push_cell(&cells[2]),
            Reassembly::Discarded(FrameDrop::Crc)
        );

        // Length with a good CRC: a PDU claiming 100 bytes in one cell.
        let mut one = [0u8; 48];
        one[40..44].copy_from_slice(&[0, 0, 0, 100]);
        let crc = natm_wire::crc32::crc32(&one[..44]);
        one[44..].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(r.push(&one, true), Reassembly::Discarded(FrameDrop::Length));

        // Pad > 47: 3 cells carrying a 10-byte SDU.
        let mut three = [0u8; 144];
        three[136..140].copy_from_slice(&[0, 0, 0, 10]);
        let crc = natm_wire::crc32::crc32(&three[..140]);
        three[140..].copy_from_slice(&crc.to_be_bytes());
        r.push(three[..48].try_into().unwrap(), false);
        r.push(three[48..96].try_into().unwrap(), false);
        assert_eq!(
            r.push(three[96..].try_into().unwrap(), true),
            Reassembly::Discarded(FrameDrop::Length)
        );

        // The abort PDU (Length 0): 40 zero bytes and trailer 00 00 00 00 38 66 24 c1.
        let mut abort = [0u8; 48];
        abort[44..].copy_from_slice(&[0x38, 0x66, 0x24, 0xc1]);
        assert_eq!(
            r.push(&abort, true),
            Reassembly::Discarded(FrameDrop::Abort)
        );
        assert_eq!(r.counters().frames_in, 1);
    }

    #[test]
    fn reassembler_oversize_and_limit() {
        let sdu = vec![7u8; 200];
        let cells: Vec<_> = Segmenter::uni(vc(0, 32), &sdu).unwrap().collect();
        let mut r = Reassembler::new(vc(0, 32), 100).unwrap();
        let verdicts: Vec<_> = cells.iter().map(|c| r.push_cell(c)).collect();
        // max_sdu 100 fits 3 cells: the fourth makes the frame too long.
        assert_eq!(verdicts[3], Reassembly::Discarded(FrameDrop::Oversize));
        assert!(
            verdicts
                .iter()
                .all(|v| !matches!(v, Reassembly::Complete(_)))
        );
        // After the oversize frame's last cell, the next frame is reassembled.
        let ok: Vec<_> = Segmenter::uni(vc(0, 32), &sdu[..50]).unwrap().collect();
        r.push_cell(&ok[0]);
        assert_eq!(r.push_cell(&ok[1]), Reassembly::Complete(50));

        // Length within the PDU but above max_sdu.
        let mut r = Reassembler::new(vc(0, 32), 45).unwrap();
        let c: Vec<_> = Segmenter::uni(vc(0, 32), &sdu[..50]).unwrap().collect();
        r.push_cell(&c[0]);
        assert_eq!(
            r.push_cell(&c[1]),
            Reassembly::Discarded(FrameDrop::Oversize)
        );
        assert_eq!(
            Reassembler::new(vc(0, 32), 0).err(),
            Some(OpenError::MaxSdu(0))
        );
    }

    #[test]
    fn oam_cells_do_not_enter_reassembly() {
        let mut cell = [0u8; CELL_LEN];
        let h = CellHeader {
            pti: Pti::EndToEndF5,
            ..CellHeader::data(vc(1, 100), false)
        };
        h.emit(&mut Cell::new_unchecked(&mut cell[..]), HeaderFormat::Uni)
            .unwrap();
        let mut r = Reassembler::new(vc(1, 100), MAX_SDU).unwrap();
        assert_eq!(r.push_cell(&cell), Reassembly::Incomplete);
        assert_eq!(r.counters().oam, 1);
        assert_eq!(cell[4], hec([0x00, 0x10, 0x06, 0x4A]));
    }

    /// A stream of cells on one VC: whole PDUs, some with a corrupted byte, a lost cell, an
    /// OAM cell slipped in, or longer than the receiver takes.
    fn messy_stream(sdus: &[(Vec<u8>, u8)]) -> Vec<[u8; CELL_LEN]> {
        let mut stream = Vec::new();
        for (sdu, damage) in sdus {
            let mut cells: Vec<[u8; CELL_LEN]> = Segmenter::uni(vc(0, 100), sdu).unwrap().collect();
            let at = usize::from(*damage) % cells.len();
            match damage % 5 {
                0 => cells[at][5 + usize::from(*damage) % 48] ^= 0x10,
                1 if cells.len() > 1 => {
                    cells.remove(at);
                }
                2 => {
                    let mut oam = cells[at];
                    oam[3] = (oam[3] & 0xF1) | (5 << 1); // PTI 101: end-to-end F5 OAM
                    cells.insert(at, oam);
                }
                _ => {}
            }
            stream.extend(cells);
        }
        stream
    }

    proptest! {
        /// A batch through `push_cells` ends as the same cells pushed one at a time end:
        /// its outcome is that of the last frame that ended in it, its SDU the last one.
        #[test]
        fn push_cells_equals_push_cell_one_by_one(
            sdus in proptest::collection::vec((proptest::collection::vec(any::<u8>(), 1..1500), any::<u8>()), 1..12),
            batches in proptest::collection::vec(1usize..40, 1..8),
            max_sdu in prop_oneof![Just(MAX_SDU), 1usize..1200],
        ) {
            let stream = messy_stream(&sdus);
            let mut one = Reassembler::new(vc(0, 100), max_sdu).unwrap();
            let mut runs = Reassembler::new(vc(0, 100), max_sdu).unwrap();
            let mut rest = &stream[..];
            for &n in batches.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (batch, tail) = rest.split_at(n.min(rest.len()));
                let (mut want, mut want_sdu) = (Reassembly::Incomplete, Vec::new());
                for c in batch {
                    let outcome = one.push_cell(c);
                    if outcome != Reassembly::Incomplete {
                        want = outcome;
                    }
                    if let Reassembly::Complete(_) = outcome {
                        want_sdu = one.sdu().to_vec();
                    }
                }
                prop_assert_eq!(runs.push_cells(batch), want);
                prop_assert_eq!(runs.sdu(), &want_sdu[..]);
                rest = tail;
            }
            prop_assert_eq!(runs.counters(), one.counters());
        }

        #[test]
        fn push_cells_after_single_pushes(sdu in proptest::collection::vec(any::<u8>(), 1..3000), split: usize) {
            let cells: Vec<[u8; CELL_LEN]> = Segmenter::uni(vc(0, 100), &sdu).unwrap().collect();
            let split = split % cells.len();
            let mut r = Reassembler::new(vc(0, 100), MAX_SDU).unwrap();
            for c in &cells[..split] {
                prop_assert_eq!(r.push_cell(c), Reassembly::Incomplete);
            }
            prop_assert_eq!(r.push_cells(&cells[split..]), Reassembly::Complete(sdu.len()));
            prop_assert_eq!(r.sdu(), &sdu[..]);
        }

        #[test]
        fn round_trip(sdu in proptest::collection::vec(any::<u8>(), 1..3000), uu: u8, cpi: u8) {
            let h = CellHeader::data(vc(3, 77), false);
            let seg = Segmenter::new(h, HeaderFormat::Uni, &sdu, uu, cpi).unwrap();
            let mut r = Reassembler::new(vc(3, 77), MAX_SDU).unwrap();
            let mut out = None;
            for c in seg {
                prop_assert!(Cell::new_checked(&c[..]).unwrap().verify_hec());
                if let Reassembly::Complete(n) = r.push_cell(&c) {
                    out = Some((n, r.sdu().to_vec()));
                }
            }
            prop_assert_eq!(out, Some((sdu.len(), sdu.clone())));
            let mut pdu = Vec::new();
            encode_pdu(&sdu, uu, cpi, &mut pdu).unwrap();
            prop_assert_eq!(Pdu::new_checked(&pdu[..]).unwrap().check(MAX_SDU), Ok(sdu.len()));
        }

        #[test]
        fn never_delivers_corrupt(sdu in proptest::collection::vec(any::<u8>(), 1..500), byte in any::<prop::sample::Index>(), bit in 0u8..8) {
            let mut cells: Vec<_> = Segmenter::uni(vc(0, 40), &sdu).unwrap().collect();
            let n = cells.len() * PAYLOAD_LEN;
            let i = byte.index(n);
            cells[i / PAYLOAD_LEN][HEADER_LEN + i % PAYLOAD_LEN] ^= 1 << bit;
            let mut r = Reassembler::new(vc(0, 40), MAX_SDU).unwrap();
            for c in &cells {
                prop_assert!(!matches!(r.push_cell(c), Reassembly::Complete(_)));
            }
        }

        #[test]
        fn arbitrary_cells_never_panic_or_overflow(cells in proptest::collection::vec((any::<[u8; 48]>(), any::<bool>()), 0..200), max in 1usize..2000) {
            let mut r = Reassembler::new(vc(0, 40), max).unwrap();
            for (p, eof) in &cells {
                if let Reassembly::Complete(n) = r.push(p, *eof) {
                    prop_assert!(n <= max);
                    prop_assert_eq!(r.sdu().len(), n);
                }
            }
        }
    }
}

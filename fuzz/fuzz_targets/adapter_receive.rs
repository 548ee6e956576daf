//! natm-adapter's receive path (natm's one AAL5 receiver): arbitrary cells on a handful of
//! VCs, interleaved with whole SDUs segmented by natm-wire (so frames get past the CRC), bit
//! flips, passing time, timeouts, few receive buffers, and VCs closed and reopened. Cells
//! pass the link's HEC receiver first and the adapter does not check them again
//! (`HecCheck::Off`, as on natm's lanes). The adapter must never panic and deliver on a VC
//! only an SDU that a CRC-valid PDU made of that VC's received cells carries (any suffix of
//! whole cells since the last end-of-frame cell, since timeouts and an empty free pool drop
//! the start of a frame). Moved here from natm-aal's receiver when that crate went.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_adapter::{
    Adapter, AdapterConfig, BufferId, HecCheck, RxVcConfig, Status, UBR_UNSHAPED_PCR, VecBuffers,
};
use natm_core::{Duration, HeaderFormat, Instant, VcId};
use natm_traffic::sched::VcSpec;
use natm_wire::aal5::{Pdu, Segmenter, pdu_len};
use natm_wire::cell::{CELL_LEN, Cell, HEADER_LEN, HecReceiver, HecVerdict};

/// VCs 1.32..=1.34 are open (max_sdu 1000); 1.35 never is.
const VCS: u32 = 3;
const MAX_SDU: usize = 1000;

fn vc(i: u32) -> VcId {
    VcId::uni(1, 32 + i).expect("small VCI")
}

fn open(a: &mut Adapter, i: u32) {
    let ubr = VcSpec::ubr(UBR_UNSHAPED_PCR, 1);
    a.open_vc(i, vc(i), ubr, RxVcConfig::aal5(MAX_SDU))
        .expect("a valid VC");
}

/// What the cells handed over so far allow the adapter to deliver.
struct Oracle {
    hec: HecReceiver,
    /// Per VC: user-data payloads since its last end-of-frame cell.
    frames: Vec<Vec<u8>>,
    /// Per VC: the SDUs of the CRC-valid PDUs that ended there (any suffix of whole cells).
    valid: Vec<Vec<Vec<u8>>>,
}

impl Oracle {
    /// The cells the link's HEC receiver lets through (corrected), noted.
    fn pass(&mut self, cells: &[[u8; CELL_LEN]]) -> Vec<[u8; CELL_LEN]> {
        let mut passed = Vec::new();
        for cell in cells {
            let mut cell = *cell;
            let verdict = self.hec.receive(&mut Cell::new_unchecked(&mut cell[..]));
            if let HecVerdict::Discarded { .. } = verdict {
                continue;
            }
            // The VC and PTI as the adapter reads them (a UNI header: GFC ignored).
            let view = Cell::new_unchecked(&cell[..]);
            let (v, pti) = (view.vc(HeaderFormat::Uni), view.pti());
            if let Some(i) = (0..VCS).position(|i| vc(i) == v)
                && pti.is_user_data()
            {
                self.frames[i].extend_from_slice(&cell[HEADER_LEN..]);
                if pti.is_end_of_frame() {
                    let f = &self.frames[i];
                    let first = f.len().saturating_sub(pdu_len(MAX_SDU));
                    for start in (first..f.len()).filter(|k| (f.len() - k) % 48 == 0) {
                        if let Ok(n) = Pdu::new_unchecked(&f[start..]).check(MAX_SDU) {
                            self.valid[i].push(f[start..start + n].to_vec());
                        }
                    }
                    self.frames[i].clear();
                }
            }
            passed.push(cell);
        }
        passed
    }
}

/// Check and post again every completed buffer.
fn drain(a: &mut Adapter, mem: &VecBuffers, oracle: &Oracle) {
    while let Some(c) = a.poll_completion() {
        if c.status == Status::Ok {
            let i = c.handle.expect("a received SDU names its VC") as usize;
            let sdu = &mem.buffer(c.buffer).expect("a known id")[..c.len];
            assert!(
                oracle.valid[i].iter().any(|v| v == sdu),
                "delivered on {} an SDU no valid PDU carried",
                vc(i as u32)
            );
        }
        a.post_rx_buffer(c.buffer);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&b, mut rest)) = data.split_first() else {
        return;
    };
    // Few buffers, so that frames also find the free pool empty.
    let buffers = u32::from(b % 4) + 1;
    let mut a = Adapter::new(AdapterConfig {
        hec: HecCheck::Off,
        reassembly_timeout: Some(Duration::from_micros(500)),
        ..AdapterConfig::new(buffers, MAX_SDU)
    })
    .expect("a valid config");
    let mut mem = VecBuffers::new(buffers, MAX_SDU);
    for i in 0..VCS {
        open(&mut a, i);
    }
    for id in 0..buffers {
        a.post_rx_buffer(BufferId(id));
    }
    let mut oracle = Oracle {
        hec: HecReceiver::new(),
        frames: vec![Vec::new(); VCS as usize],
        valid: vec![Vec::new(); VCS as usize],
    };
    let mut now = Instant::ZERO;
    while let Some((&op, tail)) = rest.split_first() {
        rest = tail;
        match op % 4 {
            0 => {
                // 1..=8 arbitrary cells in one batch.
                let n = usize::from(op >> 2) % 8 + 1;
                let Some((cells, tail)) = rest.split_at_checked(n * CELL_LEN) else {
                    return;
                };
                rest = tail;
                let cells: Vec<[u8; CELL_LEN]> = cells
                    .chunks_exact(CELL_LEN)
                    .map(|c| c.try_into().expect("chunks_exact gives CELL_LEN"))
                    .collect();
                let passed = oracle.pass(&cells);
                a.handle_cells(now, &passed, &mut mem);
            }
            1 => {
                // A whole SDU on an open VC in one batch, maybe with one bit flipped.
                let Some((&[len_lo, len_hi, flip], tail)) = rest.split_first_chunk::<3>() else {
                    return;
                };
                let len =
                    (usize::from(u16::from_le_bytes([len_lo, len_hi])) % 1200).min(tail.len());
                let (sdu, tail) = tail.split_at(len);
                rest = tail;
                let i = u32::from(op >> 2) % VCS;
                let Ok(seg) = Segmenter::uni(vc(i), sdu) else {
                    continue;
                };
                let mut cells: Vec<[u8; CELL_LEN]> = seg.collect();
                if op & 0x40 != 0
                    && let Some(cell) = cells.get_mut(usize::from(flip >> 3))
                {
                    cell[usize::from(flip) % CELL_LEN] ^= 1 << (flip % 8);
                }
                let passed = oracle.pass(&cells);
                a.handle_cells(now, &passed, &mut mem);
            }
            2 => {
                now += Duration::from_micros(u64::from(op >> 2) * 20);
                a.handle_timeout(now);
                if let Some(t) = a.poll_timeout() {
                    assert!(t > now);
                }
            }
            _ => {
                let i = u32::from(op >> 2) % VCS;
                if a.close_vc(i).is_ok() {
                    open(&mut a, i);
                }
            }
        }
        drain(&mut a, &mem, &oracle);
    }
});

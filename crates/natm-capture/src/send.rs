//! The records of one AAL5 SDU as a receiver on a VC would capture them: its cells, each a
//! cell time after the last, and the AAL5 PDU with its trailer, stamped with its last
//! cell's time (a receiver completes the PDU with it). `natm aal5 send` writes them.
//!
//! What it is not: a writer (the caller gives the records to a [`crate::Writer`]) nor a
//! clock (the caller gives the first cell's time). Call contract: [`sdu_records`] is a pure
//! function of its arguments; an SDU the segmenter refuses is its error.

use natm_core::{Duration, HeaderFormat, Instant, VcId};
use natm_wire::aal5::{SegmentError, Segmenter, TRAILER_LEN, Trailer};
use natm_wire::cell::{CellHeader, HEADER_LEN};

use crate::erf::MAX_AAL5_PDU;
use crate::{CellRecord, Record, RecordKind};

/// One SDU's records and what they hold.
pub struct SduRecords {
    /// The records, in time order: the cells (when written), then the PDU (when it fits).
    pub records: Vec<Record>,
    /// Cells the SDU took.
    pub cells: usize,
    /// Pad bytes before the trailer.
    pub pad: usize,
    /// The CPCS trailer.
    pub trailer: Trailer,
    /// Whether the PDU fits an ERF AAL5 record ([`MAX_AAL5_PDU`]); when not, the cells
    /// are written alone.
    pub pdu_fits: bool,
    /// Whether the cells are among the records.
    pub cells_written: bool,
}

/// `sdu` segmented on `vc` (UNI headers) with trailer bytes `uu` and `cpi`: the PDU as an
/// AAL5 record, and with `cells` (or when the PDU is too long for an ERF record) every
/// cell, the first at `start`, the next each `cell_time` later.
pub fn sdu_records(
    vc: VcId,
    sdu: &[u8],
    (uu, cpi): (u8, u8),
    start: Instant,
    cell_time: Duration,
    cells: bool,
) -> Result<SduRecords, SegmentError> {
    let segmenter = Segmenter::new(CellHeader::data(vc, false), HeaderFormat::Uni, sdu, uu, cpi)?;
    let trailer = segmenter.trailer();
    let all: Vec<_> = segmenter.collect();
    let pdu: Vec<u8> = all
        .iter()
        .flat_map(|c| c[HEADER_LEN..].iter().copied())
        .collect();
    let pad = pdu.len() - sdu.len() - TRAILER_LEN;
    let pdu_fits = pdu.len() <= MAX_AAL5_PDU;
    let cells_written = cells || !pdu_fits;
    let at = |i: usize| start + Duration::from_nanos(cell_time.as_nanos() * i as u64);
    let mut records = Vec::new();
    if cells_written {
        records.extend(all.iter().enumerate().map(|(i, cell)| Record {
            time: at(i),
            kind: RecordKind::Cell(CellRecord::from_cell(cell)),
        }));
    }
    if pdu_fits {
        let time = if cells_written {
            at(all.len() - 1)
        } else {
            start
        };
        records.push(Record {
            time,
            kind: RecordKind::Aal5Pdu { vc, pdu },
        });
    }
    Ok(SduRecords {
        records,
        cells: all.len(),
        pad,
        trailer,
        pdu_fits,
        cells_written,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pdu_comes_after_its_cells_at_the_last_cells_time() {
        let vc = VcId::uni(0, 100).unwrap();
        let t0 = Instant::from_nanos(1_000);
        let step = Duration::from_nanos(2_831);
        let r = sdu_records(vc, &[7u8; 100], (0, 0), t0, step, true).unwrap();
        assert_eq!(
            (r.cells, r.pad, r.pdu_fits, r.cells_written),
            (3, 36, true, true)
        );
        assert_eq!(r.records.len(), 4);
        assert_eq!(r.records[3].time, t0 + Duration::from_nanos(2 * 2_831));
        assert!(matches!(&r.records[3].kind, RecordKind::Aal5Pdu { pdu, .. } if pdu.len() == 144));
        let alone = sdu_records(vc, &[7u8; 100], (0, 0), t0, step, false).unwrap();
        assert_eq!(alone.records.len(), 1);
        assert_eq!(alone.records[0].time, t0);
        let long = sdu_records(vc, &vec![0u8; 65_500], (0, 0), t0, step, false).unwrap();
        assert!(!long.pdu_fits && long.cells_written);
        assert_eq!(long.records.len(), long.cells);
    }
}

//! State × event tests of the transmit and receive paths (`test_<state>_<event>`), plus
//! the ownership-checking memory the property tests share.

use std::cell::Cell as StdCell;
use std::collections::BTreeSet;
use std::vec::Vec;

use natm_core::{Duration, HeaderFormat, Instant, LineRate, VcId, Vpi};
use natm_traffic::policer::{Conformance, Contract, Policer};
use natm_traffic::sched::VcSpec;
use natm_wire::aal5::{Segmenter, cell_count, encode_pdu};
use natm_wire::cell::{CELL_LEN, CellHeader, HEADER_LEN, PAYLOAD_LEN, Pti};
use natm_wire::crc32::crc32;

use crate::*;

pub(crate) const T0: Instant = Instant::from_nanos(1_000_000);
pub(crate) const TIMEOUT: Duration = Duration::from_millis(10);
/// UBR without a rate of its own: unshaped on an unlimited link.
pub(crate) const UBR: VcSpec = VcSpec::ubr(UBR_UNSHAPED_PCR, 1);

/// Buffer memory that checks every access against what the test has handed the adapter:
/// reads only of buffers posted for transmit, writes only of buffers posted for receive.
pub(crate) struct Checked {
    pub(crate) mem: VecBuffers,
    pub(crate) tx: BTreeSet<u32>,
    pub(crate) rx: BTreeSet<u32>,
    pub(crate) reads: StdCell<u64>,
    pub(crate) writes: u64,
}

impl Checked {
    pub(crate) fn new(count: u32, size: usize) -> Checked {
        Checked {
            mem: VecBuffers::new(count, size),
            tx: BTreeSet::new(),
            rx: BTreeSet::new(),
            reads: StdCell::new(0),
            writes: 0,
        }
    }

    /// Note a completion: the buffer is the application's again.
    pub(crate) fn returned(&mut self, c: &Completion) {
        if matches!(c.status, Status::UnknownBuffer | Status::NotOwned) {
            return;
        }
        let set = match c.direction {
            Direction::Tx => &mut self.tx,
            Direction::Rx => &mut self.rx,
        };
        assert!(
            set.remove(&c.buffer.0),
            "{c:?} for a buffer not handed over"
        );
    }
}

impl BufferMemory for Checked {
    fn read(&self, id: BufferId, offset: usize, out: &mut [u8]) -> Result<(), MemoryError> {
        assert!(
            self.tx.contains(&id.0),
            "read of {id} not posted for transmit"
        );
        assert!(
            offset.is_multiple_of(PAYLOAD_LEN),
            "read at offset {offset}"
        );
        self.reads.set(self.reads.get() + 1);
        self.mem.read(id, offset, out)
    }

    fn write(&mut self, id: BufferId, offset: usize, data: &[u8]) -> Result<(), MemoryError> {
        assert!(
            self.rx.contains(&id.0),
            "write of {id} not posted for receive"
        );
        assert!(
            offset.is_multiple_of(PAYLOAD_LEN),
            "write at offset {offset}"
        );
        self.writes += 1;
        self.mem.write(id, offset, data)
    }
}

pub(crate) fn vc(i: u32) -> VcId {
    VcId::uni(1, 32 + i).unwrap()
}

/// Recognisable SDU bytes.
pub(crate) fn sdu(len: usize, seed: u32) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) as u8 ^ (i >> 8) as u8)
        .collect()
}

pub(crate) fn config() -> AdapterConfig {
    AdapterConfig {
        reassembly_timeout: Some(TIMEOUT),
        ..AdapterConfig::new(16, 4096)
    }
}

/// An adapter with VCs 1.32 (handle 10) and 1.33 (handle 11) open, max_sdu 4096.
fn adapter_with(config: AdapterConfig) -> Adapter {
    let mut a = Adapter::new(config).unwrap();
    a.open_vc(10, vc(0), UBR, RxVcConfig::aal5(4096)).unwrap();
    a.open_vc(11, vc(1), UBR, RxVcConfig::aal5(4096)).unwrap();
    a
}

fn adapter() -> Adapter {
    adapter_with(config())
}

/// The cells natm-wire's reference segmenter makes of `data` on `v`.
fn cells(v: VcId, data: &[u8]) -> Vec<[u8; CELL_LEN]> {
    Segmenter::uni(v, data).unwrap().collect()
}

/// A cell with `pti` on `v` and a recognisable payload.
fn cell_with_pti(v: VcId, pti: Pti) -> [u8; CELL_LEN] {
    let h = CellHeader {
        gfc: 0,
        vc: v,
        pti,
        clp: false,
    };
    let mut c = [0x6Au8; CELL_LEN];
    c[..HEADER_LEN].copy_from_slice(&h.to_bytes(HeaderFormat::Uni).unwrap());
    c
}

/// The cells of a PDU whose trailer says `length`, with a right CRC.
fn pdu_cells(v: VcId, body: &[u8], length: u16) -> Vec<[u8; CELL_LEN]> {
    let mut pdu = Vec::new();
    encode_pdu(body, 0, 0, &mut pdu).unwrap();
    let n = pdu.len();
    pdu[n - 6..n - 4].copy_from_slice(&length.to_be_bytes());
    let crc = crc32(&pdu[..n - 4]);
    pdu[n - 4..].copy_from_slice(&crc.to_be_bytes());
    let last = pdu.len() / PAYLOAD_LEN - 1;
    pdu.chunks(PAYLOAD_LEN)
        .enumerate()
        .map(|(i, p)| {
            let pti = if i == last { Pti::DATA_END } else { Pti::DATA };
            let mut c = cell_with_pti(v, pti);
            c[HEADER_LEN..].copy_from_slice(p);
            c
        })
        .collect()
}

/// Post `ids` as free receive buffers (and tell the checker).
fn post_rx(a: &mut Adapter, m: &mut Checked, ids: impl IntoIterator<Item = u32>) {
    for id in ids {
        m.rx.insert(id);
        a.post_rx_buffer(BufferId(id));
    }
}

/// Put `data` in buffer `id` and post it on `handle`.
fn post_tx(a: &mut Adapter, m: &mut Checked, id: u32, data: &[u8], handle: u32) {
    m.mem.buffer_mut(BufferId(id)).unwrap()[..data.len()].copy_from_slice(data);
    m.tx.insert(id);
    a.post_tx(T0, BufferId(id), data.len(), handle);
}

/// Drain every cell the adapter will send now, in batches of `batch`.
fn drain(a: &mut Adapter, m: &Checked, now: Instant, batch: usize) -> Vec<[u8; CELL_LEN]> {
    let mut out = vec![[0u8; CELL_LEN]; batch];
    let mut all = Vec::new();
    loop {
        let n = a.poll_transmit(now, m, &mut out);
        if n == 0 {
            return all;
        }
        all.extend_from_slice(&out[..n]);
    }
}

fn completions(a: &mut Adapter, m: &mut Checked) -> Vec<Completion> {
    let mut v = Vec::new();
    while let Some(c) = a.poll_completion() {
        m.returned(&c);
        v.push(c);
    }
    v
}

/// The SDU an Rx completion delivered.
fn delivered(m: &Checked, c: &Completion) -> Vec<u8> {
    m.mem.buffer(c.buffer).unwrap()[..c.len].to_vec()
}

/// The SDU of the first completion waiting (all are drained).
fn first_sdu(a: &mut Adapter, m: &mut Checked) -> Vec<u8> {
    let c = completions(a, m);
    assert_eq!(c[0].status, Status::Ok, "{c:?}");
    delivered(m, &c[0])
}

macro_rules! recv {
    ($a:expr, $m:expr, $now:expr, $cells:expr) => {
        $a.handle_cells($now, &$cells[..], &mut $m)
    };
}

macro_rules! recv_nothing {
    ($a:expr) => {
        assert_eq!($a.poll_completion(), None);
        assert_eq!($a.poll_event(), None);
    };
}

// ------------------------------------------------------------------ transmit

#[test]
fn test_idle_post_tx() {
    // Byte for byte what the reference segmenter makes, at every pad and trailer case.
    for len in [
        1, 39, 40, 41, 47, 48, 88, 89, 100, 767, 768, 769, 4096, 8192, 65_535,
    ] {
        let mut a = Adapter::new(AdapterConfig::new(4, 65_535)).unwrap();
        a.open_vc(7, vc(0), UBR, RxVcConfig::aal5(100)).unwrap();
        let mut m = Checked::new(4, 65_535);
        let data = sdu(len, len as u32);
        post_tx(&mut a, &mut m, 2, &data, 7);
        assert_eq!(
            a.poll_timeout(),
            Some(T0),
            "an unlimited link sends at once"
        );
        for batch in [1, 7, 64] {
            let mut b = a.clone();
            let got = drain(&mut b, &m, T0, batch);
            assert_eq!(got, cells(vc(0), &data), "len {len} batch {batch}");
            let c = completions(&mut b, &mut m.clone_sets());
            assert_eq!(
                c,
                [Completion {
                    buffer: BufferId(2),
                    direction: Direction::Tx,
                    handle: Some(7),
                    len,
                    status: Status::Ok
                }]
            );
            assert_eq!(b.poll_timeout(), None);
            let k = b.counters();
            assert_eq!((k.cells_out, k.frames_out), (cell_count(len) as u64, 1));
            assert_eq!(b.vc_counters(7).unwrap().bytes_out, len as u64);
        }
    }
}

impl Checked {
    /// A copy of the ownership sets over the same bytes, for tests that fork an adapter.
    fn clone_sets(&self) -> Checked {
        Checked {
            mem: self.mem.clone(),
            tx: self.tx.clone(),
            rx: self.rx.clone(),
            reads: StdCell::new(0),
            writes: 0,
        }
    }
}

#[test]
fn test_sending_poll_transmit_completes_at_last_cell() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_tx(&mut a, &mut m, 0, &sdu(200, 1), 10);
    let mut one = [[0u8; CELL_LEN]; 1];
    for _ in 0..4 {
        assert_eq!(a.poll_transmit(T0, &m, &mut one), 1);
        assert_eq!(a.poll_completion(), None, "not before the last cell");
        assert!(a.holds(BufferId(0)));
    }
    assert_eq!(a.poll_transmit(T0, &m, &mut one), 1);
    assert_eq!(one[0][3] & 0x02, 0x02, "end of frame on the last cell");
    let c = completions(&mut a, &mut m);
    assert_eq!(c[0].status, Status::Ok);
    assert!(!a.holds(BufferId(0)));
    assert_eq!(a.tx_queued(), 0);
}

#[test]
fn test_idle_post_tx_refused() {
    let mut a = Adapter::new(AdapterConfig {
        max_tx_queued: 2,
        ..config()
    })
    .unwrap();
    a.open_vc(10, vc(0), UBR, RxVcConfig::aal5(4096)).unwrap();
    let mut m = Checked::new(16, 4096);
    a.post_tx(T0, BufferId(0), 10, 99); // unknown VC
    a.post_tx(T0, BufferId(1), 0, 10); // empty
    a.post_tx(T0, BufferId(2), 65_536, 10); // too long
    a.post_tx(T0, BufferId(16), 10, 10); // no such buffer
    post_tx(&mut a, &mut m, 3, &[1; 10], 10);
    a.post_tx(T0, BufferId(3), 10, 10); // held already
    post_tx(&mut a, &mut m, 4, &[2; 10], 10);
    a.post_tx(T0, BufferId(5), 10, 10); // queue full
    let statuses: Vec<(u32, Status)> = std::iter::from_fn(|| a.poll_completion())
        .map(|c| (c.buffer.0, c.status))
        .collect();
    assert_eq!(
        statuses,
        [
            (0, Status::UnknownVc),
            (1, Status::BadLength),
            (2, Status::BadLength),
            (16, Status::UnknownBuffer),
            (3, Status::NotOwned),
            (5, Status::QueueFull),
        ]
    );
    assert_eq!(a.counters().tx_refused, 6);
    // The refusal of a held buffer did not give it back: it still goes out, once.
    assert!(a.holds(BufferId(3)));
    assert!(!a.holds(BufferId(0)) && !a.holds(BufferId(5)));
    assert_eq!(drain(&mut a, &m, T0, 8).len(), 2);
    let c = completions(&mut a, &mut m);
    assert_eq!(c.len(), 2);
    assert!(c.iter().all(|c| c.status == Status::Ok));
    for s in [Status::UnknownVc, Status::MemoryFault, Status::Aborted] {
        assert!(!s.to_string().is_empty());
    }
}

#[test]
fn test_queued_close_vc() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_tx(&mut a, &mut m, 0, &sdu(1000, 1), 10);
    post_tx(&mut a, &mut m, 1, &sdu(1000, 2), 10);
    post_tx(&mut a, &mut m, 2, &sdu(10, 3), 11);
    let mut some = [[0u8; CELL_LEN]; 3];
    assert_eq!(
        a.poll_transmit(T0, &m, &mut some),
        3,
        "part of buffer 0 is out"
    );
    let counters = a.close_vc(10).unwrap();
    assert_eq!(counters.cells_out, 3);
    let c = completions(&mut a, &mut m);
    assert_eq!(c.len(), 2);
    assert!(
        c.iter()
            .all(|c| c.status == Status::Aborted && c.handle == Some(10))
    );
    assert_eq!(a.tx_queued(), 1);
    // The other VC is untouched.
    assert_eq!(drain(&mut a, &m, T0, 8), cells(vc(1), &sdu(10, 3)));
    assert_eq!(a.close_vc(10), Err(UnknownHandle(10)));
}

#[test]
fn test_sending_read_fault() {
    // The memory's buffers are 50 bytes: a 50-byte SDU reads fine, a 300-byte one fails
    // at its second burst (bursts of one cell), a 150-byte one at its first.
    let mut a = Adapter::new(config()).unwrap();
    a.open_vc(10, vc(0), UBR, RxVcConfig::aal5(4096)).unwrap();
    let mut m = Checked::new(4, 50);
    m.tx.extend([0, 1, 2]);
    a.post_tx(T0, BufferId(0), 300, 10);
    a.post_tx(T0, BufferId(1), 50, 10);
    let mut one = [[0u8; CELL_LEN]; 1];
    assert_eq!(a.poll_transmit(T0, &m, &mut one), 1);
    let first = one[0];
    assert_eq!(a.poll_transmit(T0, &m, &mut one), 1, "the abort cell");
    let abort = one[0];
    let c = completions(&mut a, &mut m);
    assert_eq!(
        (c[0].buffer, c[0].status),
        (BufferId(0), Status::MemoryFault)
    );
    // A receiver takes the two cells as an aborted PDU.
    let mut b = adapter();
    let mut r = Checked::new(16, 4096);
    post_rx(&mut b, &mut r, [0]);
    recv!(b, r, T0, [first, abort]);
    recv_nothing!(b);
    assert_eq!(b.counters().aborted, 1);
    // The next SDU goes out whole; a fault at the first cell sends nothing.
    assert_eq!(drain(&mut a, &m, T0, 8).len(), 2);
    a.post_tx(T0, BufferId(2), 150, 10);
    assert!(drain(&mut a, &m, T0, 8).is_empty());
    let c = completions(&mut a, &mut m);
    assert_eq!(
        c.iter().map(|c| c.status).collect::<Vec<_>>(),
        [Status::Ok, Status::MemoryFault]
    );
    assert_eq!(a.counters().memory_fault, 2);
}

#[test]
fn test_unlimited_round_robin_bursts() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_tx(&mut a, &mut m, 0, &sdu(4000, 1), 10);
    post_tx(&mut a, &mut m, 1, &sdu(4000, 2), 11);
    let got = drain(&mut a, &m, T0, 1000);
    let order: Vec<u16> = got.iter().map(vc_index).collect();
    // Turns of STAGE_CELLS cells alternate.
    assert!(order[..STAGE_CELLS].iter().all(|&v| v == 0));
    assert!(order[STAGE_CELLS..2 * STAGE_CELLS].iter().all(|&v| v == 1));
    let (a0, a1): (Vec<[u8; CELL_LEN]>, Vec<[u8; CELL_LEN]>) =
        got.iter().partition(|c| vc_index(c) == 0);
    assert_eq!(a0, cells(vc(0), &sdu(4000, 1)));
    assert_eq!(a1, cells(vc(1), &sdu(4000, 2)));
}

/// VCI − 32 of a cell (the test VCs are 1.32, 1.33, …).
fn vc_index(c: &[u8; CELL_LEN]) -> u16 {
    (u16::from(c[2]) << 4 | u16::from(c[3]) >> 4) - 32
}

#[test]
fn test_unlimited_cbr_leaves_at_exactly_its_pcr() {
    // cbr:pcr=10000 on an unlimited link: one cell every 100 µs, not a burst.
    let mut a = Adapter::new(config()).unwrap();
    a.open_vc(10, vc(0), VcSpec::cbr(10_000), RxVcConfig::aal5(4096))
        .unwrap();
    let mut m = Checked::new(16, 4096);
    let (d0, d1) = (sdu(1000, 3), sdu(500, 4));
    post_tx(&mut a, &mut m, 0, &d0, 10);
    post_tx(&mut a, &mut m, 1, &d1, 10);
    let mut out = [[0u8; CELL_LEN]; 64];
    let mut got = Vec::new();
    let mut times = Vec::new();
    while let Some(t) = a.poll_timeout() {
        // Nothing before it is due.
        if t > T0 {
            assert_eq!(
                a.poll_transmit(Instant::from_nanos(t.as_nanos() - 1), &m, &mut out),
                0
            );
        }
        let n = a.poll_transmit(t, &m, &mut out);
        assert_eq!(n, 1, "one cell at {t:?}");
        got.extend_from_slice(&out[..n]);
        times.push(t);
    }
    let mut want = cells(vc(0), &d0);
    want.extend(cells(vc(0), &d1));
    assert_eq!(got, want);
    assert_eq!(times[0], T0);
    for w in times.windows(2) {
        assert_eq!(
            w[1] - w[0],
            Duration::from_micros(100),
            "exactly 1/PCR apart"
        );
    }
    let done = completions(&mut a, &mut m);
    assert_eq!(done.len(), 2);
    assert!(done.iter().all(|c| c.status == Status::Ok));
    // Idle long enough, it may send at once again (no credit beyond one cell).
    let later = *times.last().unwrap() + Duration::from_secs(1);
    a.handle_timeout(later);
    post_tx(&mut a, &mut m, 2, &sdu(100, 5), 10);
    assert_eq!(a.poll_transmit(later, &m, &mut out), 1);
    assert_eq!(a.poll_timeout(), Some(later + Duration::from_micros(100)));
}

#[test]
fn test_unlimited_vbr_conforms_while_unshaped_ubr_takes_the_rest() {
    // nrt-VBR PCR 10,000, SCR 2,500, MBS 8 beside an unshaped UBR VC, both backlogged,
    // polled every microsecond with room for 4 cells.
    const MBS: u32 = 8;
    let spec = VcSpec::nrt_vbr(10_000, 2_500, MBS);
    let mut a = Adapter::new(AdapterConfig {
        max_tx_queued: 64,
        ..AdapterConfig::new(64, 4096)
    })
    .unwrap();
    a.open_vc(10, vc(0), spec, RxVcConfig::aal5(4096)).unwrap();
    a.open_vc(11, vc(1), UBR, RxVcConfig::aal5(4096)).unwrap();
    let mut m = Checked::new(64, 4096);
    for id in 0..32 {
        post_tx(&mut a, &mut m, id, &sdu(4000, id), 10);
        post_tx(&mut a, &mut m, 32 + id, &sdu(4000, 100 + id), 11);
    }
    let contract = |cdvt| Contract {
        cdvt,
        ..spec.contract()
    };
    let mut upc = Policer::new(Conformance::Vbr1, &contract(Duration::ZERO)).unwrap();
    let mut out = [[0u8; CELL_LEN]; 4];
    let mut vbr_times = Vec::new();
    let (mut vbr, mut ubr) = (0u64, 0u64);
    let mut now = T0;
    for _ in 0..20_000 {
        let n = a.poll_transmit(now, &m, &mut out);
        // The UBR VC is kept backlogged below: every batch is full.
        assert_eq!(n, out.len(), "at {now:?}");
        for c in &out[..n] {
            if vc_index(c) == 0 {
                assert_eq!(upc.police(now, false), natm_traffic::policer::Verdict::Pass);
                vbr_times.push(now);
                vbr += 1;
            } else {
                ubr += 1;
            }
        }
        assert_eq!(a.poll_timeout(), Some(now), "the UBR VC may always send");
        for c in completions(&mut a, &mut m) {
            assert_eq!(c.status, Status::Ok);
            if c.handle == Some(11) {
                m.tx.insert(c.buffer.0);
                a.post_tx(now, c.buffer, c.len, 11);
            }
        }
        now += Duration::from_micros(1);
    }
    // MBS cells 1/PCR apart, then 1/SCR apart: GCRA(1/PCR, 0) and GCRA(1/SCR, BT) met
    // with nothing to spare.
    let gaps: Vec<u64> = vbr_times
        .windows(2)
        .map(|w| (w[1] - w[0]).as_nanos())
        .collect();
    assert!(
        gaps[..MBS as usize - 1].iter().all(|&g| g == 100_000),
        "{gaps:?}"
    );
    assert!(
        gaps[MBS as usize - 1..].iter().all(|&g| g == 400_000),
        "{gaps:?}"
    );
    // In 20 ms: 8 cells at 0..=700 µs, then one every 400 µs from 1,100 µs to 19,999 µs.
    assert_eq!(vbr, 8 + (19_999 - 1_100) / 400 + 1);
    assert_eq!(
        vbr + ubr,
        20_000 * out.len() as u64,
        "the UBR VC got every other cell"
    );
}

#[test]
fn test_unlimited_ubr_with_a_pcr_is_shaped_and_poll_timeout_says_when() {
    let mut a = Adapter::new(AdapterConfig {
        shaper_cdv: Duration::ZERO,
        ..config()
    })
    .unwrap();
    a.open_vc(10, vc(0), VcSpec::ubr(1_000, 1), RxVcConfig::aal5(4096))
        .unwrap();
    let mut m = Checked::new(16, 4096);
    post_tx(&mut a, &mut m, 0, &sdu(100, 1), 10);
    let mut out = [[0u8; CELL_LEN]; 16];
    assert_eq!(a.poll_timeout(), Some(T0));
    assert_eq!(a.poll_transmit(T0, &m, &mut out), 1);
    assert_eq!(a.poll_timeout(), Some(T0 + Duration::from_millis(1)));
    // Called late, it sends one cell, not the two it "missed".
    let late = T0 + Duration::from_millis(5);
    assert_eq!(a.poll_transmit(late, &m, &mut out), 1);
    assert_eq!(a.poll_timeout(), Some(late + Duration::from_millis(1)));
    // Closing a waiting VC takes it out of the shaper's set.
    a.close_vc(10).unwrap();
    assert_eq!(a.poll_timeout(), None);
    assert_eq!(completions(&mut a, &mut m)[0].status, Status::Aborted);
}

/// Departure instants of a 9-cell SDU on UBR at 1,000 cells/s from a driver that calls
/// `late` after each `poll_timeout`, with shaper tolerance `cdv`.
fn late_driver(cdv: Duration, late: Duration) -> Vec<Instant> {
    let mut a = Adapter::new(AdapterConfig {
        shaper_cdv: cdv,
        ..config()
    })
    .unwrap();
    a.open_vc(10, vc(0), VcSpec::ubr(1_000, 1), RxVcConfig::aal5(4096))
        .unwrap();
    let mut m = Checked::new(16, 4096);
    post_tx(&mut a, &mut m, 0, &sdu(400, 1), 10);
    let mut out = [[0u8; CELL_LEN]; 16];
    let mut times = Vec::new();
    while let Some(t) = a.poll_timeout() {
        let now = if t == T0 { t } else { t + late };
        let n = a.poll_transmit(now, &m, &mut out);
        times.extend(std::iter::repeat_n(now, n));
    }
    assert_eq!(times.len(), 9);
    times
}

#[test]
fn test_unlimited_shaper_cdv_keeps_the_rate_of_a_late_driver() {
    let ms = |x: u64| Duration::from_micros(x * 100);
    // Strict (CDVT 0): every call 0.5 ms late costs 0.5 ms, so 9 cells take 12 ms.
    let strict = late_driver(Duration::ZERO, ms(5));
    let want: Vec<Instant> = (0..9).map(|k| T0 + ms(15 * k)).collect();
    assert_eq!(strict, want);
    // With 1 ms of tolerance the same driver keeps 1/PCR on average: cell k leaves 0.5 ms
    // after k ms, and no call sends two.
    let tolerant = late_driver(Duration::from_millis(1), ms(5));
    let want: Vec<Instant> = (0..9)
        .map(|k| if k == 0 { T0 } else { T0 + ms(10 * k + 5) })
        .collect();
    assert_eq!(tolerant, want);
    // 2.5 ms late: it catches up 1 ms of the 2.5 (two cells per call), no more.
    let very_late = late_driver(Duration::from_millis(1), ms(25));
    assert_eq!(&very_late[..3], &[T0, T0 + ms(35), T0 + ms(35)]);
    // A GCRA(1/PCR, τ) policer passes all of it.
    let contract = Contract {
        cdvt: Duration::from_millis(1),
        ..VcSpec::ubr(1_000, 1).contract()
    };
    let mut upc = Policer::new(Conformance::Ubr1, &contract).unwrap();
    for t in &tolerant {
        assert_eq!(upc.police(*t, false), natm_traffic::policer::Verdict::Pass);
    }
    let mut upc = Policer::new(Conformance::Ubr1, &contract).unwrap();
    for t in &very_late {
        assert_eq!(upc.police(*t, false), natm_traffic::policer::Verdict::Pass);
    }
}

#[test]
fn test_unlimited_shaper_cdv_gives_no_credit_for_idle_time() {
    let mut a = Adapter::new(AdapterConfig {
        shaper_cdv: Duration::from_millis(10),
        ..config()
    })
    .unwrap();
    a.open_vc(10, vc(0), VcSpec::cbr(1_000), RxVcConfig::aal5(4096))
        .unwrap();
    let mut m = Checked::new(16, 4096);
    let mut out = [[0u8; CELL_LEN]; 16];
    post_tx(&mut a, &mut m, 0, &sdu(40, 1), 10);
    assert_eq!(a.poll_transmit(T0, &m, &mut out), 1);
    assert_eq!(a.poll_timeout(), None);
    // Three 1-cell SDUs after a second of idle time: one cell now, not a burst.
    let later = T0 + Duration::from_secs(1);
    for id in 1..4 {
        m.mem.buffer_mut(BufferId(id)).unwrap()[..40].copy_from_slice(&sdu(40, id));
        m.tx.insert(id);
        a.post_tx(later, BufferId(id), 40, 10);
    }
    assert_eq!(a.poll_transmit(later, &m, &mut out), 1);
    assert_eq!(a.poll_timeout(), Some(later + Duration::from_millis(1)));
    // 2 ms late, within the tolerance: both cells it was late for leave.
    let late = later + Duration::from_millis(3);
    assert_eq!(a.poll_transmit(late, &m, &mut out), 2);
    assert_eq!(a.poll_timeout(), None);
}

#[test]
fn test_rated_post_tx() {
    // 10,000 cells/s link, one CBR VC at 1,000 cells/s: a cell every millisecond.
    let mut a = Adapter::new(AdapterConfig {
        link: LineRate::cells(10_000).unwrap(),
        ..config()
    })
    .unwrap();
    a.open_vc(10, vc(0), VcSpec::cbr(1000), RxVcConfig::aal5(4096))
        .unwrap();
    let mut m = Checked::new(16, 4096);
    let data = sdu(200, 9);
    post_tx(&mut a, &mut m, 0, &data, 10);
    let mut out = [[0u8; CELL_LEN]; 8];
    let mut got = Vec::new();
    let mut now = T0;
    for _ in 0..10 {
        let n = a.poll_transmit(now, &m, &mut out);
        assert!(n <= 1, "one cell per slot");
        got.extend_from_slice(&out[..n]);
        match a.poll_timeout() {
            Some(t) => {
                assert!(t >= now);
                now = t;
            }
            None => break,
        }
    }
    assert_eq!(got, cells(vc(0), &data));
    assert_eq!(now, T0 + Duration::from_millis(4), "five cells, 1 ms apart");
    assert_eq!(completions(&mut a, &mut m)[0].status, Status::Ok);
    // Contracts are checked through the scheduler.
    assert!(matches!(
        a.open_vc(12, vc(2), VcSpec::cbr(20_000), RxVcConfig::aal5(10)),
        Err(OpenError::Tx(_))
    ));
}

#[test]
fn test_rated_handle_timeout_then_poll_timeout() {
    // Found by fuzzing: the scheduler's clock moves only in poll_transmit, so after time
    // passed in handle_timeout its deadline could be before the adapter's `now`.
    let mut a = Adapter::new(AdapterConfig {
        link: LineRate::cells(1000).unwrap(),
        ..config()
    })
    .unwrap();
    a.open_vc(10, vc(0), VcSpec::cbr(1000), RxVcConfig::aal5(100))
        .unwrap();
    let mut m = Checked::new(16, 4096);
    post_tx(&mut a, &mut m, 0, &sdu(10, 1), 10);
    let later = T0 + Duration::from_secs(5);
    a.handle_timeout(later);
    assert_eq!(a.poll_timeout(), Some(later));
}

// ------------------------------------------------------------------ receive

#[test]
fn test_idle_end_cell() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [5]);
    recv!(a, m, T0, cells(vc(0), b"hello"));
    let c = completions(&mut a, &mut m);
    assert_eq!(
        c,
        [Completion {
            buffer: BufferId(5),
            direction: Direction::Rx,
            handle: Some(10),
            len: 5,
            status: Status::Ok
        }]
    );
    assert_eq!(delivered(&m, &c[0]), b"hello");
    assert_eq!(
        m.mem.buffer(BufferId(5)).unwrap()[5..48],
        [0u8; 43],
        "only SDU bytes of the last cell are written"
    );
    assert_eq!(a.poll_timeout(), None);
    let k = a.vc_counters(10).unwrap();
    assert_eq!((k.cells_in, k.frames_in, k.bytes_in), (1, 1, 5));
}

#[test]
fn test_idle_data_cell_no_buffer() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    let cs = cells(vc(0), &sdu(300, 1));
    recv!(a, m, T0, cs[..3]);
    // A buffer posted mid-frame is not used for the rest of it.
    post_rx(&mut a, &mut m, [1]);
    recv!(a, m, T0, cs[3..]);
    recv_nothing!(a);
    assert_eq!(a.counters().no_buffer, 1);
    assert_eq!(a.free_rx_buffers(), 1);
    assert_eq!(m.writes, 0);
    recv!(a, m, T0, cs);
    assert_eq!(first_sdu(&mut a, &mut m), sdu(300, 1));
}

#[test]
fn test_idle_end_cell_no_buffer() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    recv!(a, m, T0, cells(vc(0), b"x"));
    post_rx(&mut a, &mut m, [1]);
    recv!(a, m, T0, cells(vc(0), b"y"));
    let c = completions(&mut a, &mut m);
    assert_eq!(delivered(&m, &c[0]), b"y");
    assert_eq!(a.counters().no_buffer, 1);
}

#[test]
fn test_filling_end_cell_bad_crc() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1, 2]);
    let mut cs = cells(vc(0), &sdu(1000, 4));
    cs[7][20] ^= 0x10;
    recv!(a, m, T0, cs);
    recv_nothing!(a);
    assert_eq!(a.counters().crc, 1);
    assert_eq!(a.free_rx_buffers(), 2, "the buffer is back in the pool");
    assert_eq!(a.vc_counters(10).unwrap().frames_dropped, 1);
    assert_eq!(a.poll_timeout(), None);
}

#[test]
fn test_filling_lost_cell() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1]);
    let mut cs = cells(vc(0), &sdu(1000, 4));
    cs.remove(5);
    recv!(a, m, T0, cs);
    recv_nothing!(a);
    let k = a.counters();
    assert_eq!(k.crc + k.length, 1);
}

#[test]
fn test_filling_lost_end_cell() {
    // Strict I.363.5: the two frames merge and both are lost.
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1]);
    let mut first = cells(vc(0), &sdu(100, 1));
    first.pop();
    recv!(a, m, T0, first);
    recv!(a, m, T0, cells(vc(0), &sdu(100, 2)));
    recv_nothing!(a);
    recv!(a, m, T0, cells(vc(0), &sdu(100, 3)));
    assert_eq!(first_sdu(&mut a, &mut m), sdu(100, 3));
}

#[test]
fn test_filling_duplicate_cell() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1]);
    let mut cs = cells(vc(0), &sdu(1000, 4));
    cs.insert(9, cs[9]);
    recv!(a, m, T0, cs);
    recv_nothing!(a);
    assert_eq!(a.counters().crc + a.counters().length, 1);
}

#[test]
fn test_idle_cell_hec_errors() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1, 2, 3]);
    // A single-bit header error is corrected...
    let mut one = cells(vc(0), b"one");
    one[0][2] ^= 0x10;
    recv!(a, m, T0, one);
    assert_eq!(first_sdu(&mut a, &mut m), b"one");
    // ... then the receiver is in detection mode until an error-free header.
    let mut two = cells(vc(0), b"two");
    two[0][1] ^= 0x01;
    recv!(a, m, T0, two);
    recv_nothing!(a);
    // A two-bit error is discarded in correction mode too.
    recv!(a, m, T0, cells(vc(0), b"ok"));
    let mut three = cells(vc(0), b"three");
    three[0][0] ^= 0x03;
    recv!(a, m, T0, three);
    let c = completions(&mut a, &mut m);
    assert_eq!(c.len(), 1);
    let k = a.counters();
    assert_eq!((k.hec_corrected, k.hec), (1, 2));
}

#[test]
fn test_idle_cell_hec_detect_and_off() {
    let mut bad = cells(vc(0), b"bad");
    bad[0][3] ^= 0x20;
    let mut a = adapter_with(AdapterConfig {
        hec: HecCheck::Detect,
        ..config()
    });
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1]);
    recv!(a, m, T0, bad);
    recv_nothing!(a);
    assert_eq!(a.counters().hec, 1);
    // Off: the header is taken as it is (here the flip hit the VCI: another VC).
    let mut a = adapter_with(AdapterConfig {
        hec: HecCheck::Off,
        ..config()
    });
    post_rx(&mut a, &mut m, [2]);
    recv!(a, m, T0, bad);
    assert_eq!((a.counters().hec, a.counters().unknown_vc), (0, 1));
}

#[test]
fn test_filling_timeout() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1]);
    let cs = cells(vc(0), &sdu(500, 1));
    recv!(a, m, T0, cs[..4]);
    assert_eq!(a.poll_timeout(), Some(T0 + TIMEOUT));
    // The deadline runs from the first cell.
    recv!(a, m, T0 + Duration::from_millis(5), cs[4..6]);
    assert_eq!(a.poll_timeout(), Some(T0 + TIMEOUT));
    a.handle_timeout(T0 + Duration::from_nanos(TIMEOUT.as_nanos() - 1));
    assert_eq!(a.counters().timeout, 0);
    a.handle_timeout(T0 + TIMEOUT);
    assert_eq!(a.counters().timeout, 1);
    assert_eq!(a.poll_timeout(), None);
    assert_eq!(a.free_rx_buffers(), 1);
    recv_nothing!(a);
    // The tail alone fails its checks; the next frame is fine.
    let later = T0 + Duration::from_millis(20);
    recv!(a, m, later, cs[6..]);
    recv!(a, m, later, cells(vc(0), b"next"));
    assert_eq!(first_sdu(&mut a, &mut m), b"next");
}

#[test]
fn test_filling_cell_after_deadline() {
    // handle_timeout never called: the late cell expires the old frame first.
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1]);
    recv!(a, m, T0, cells(vc(0), &sdu(500, 1))[..3]);
    recv!(a, m, T0 + TIMEOUT, cells(vc(0), b"fresh"));
    assert_eq!(first_sdu(&mut a, &mut m), b"fresh");
    assert_eq!(a.counters().timeout, 1);
}

#[test]
fn test_filling_timeouts_in_start_order() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1, 2]);
    recv!(a, m, T0, cells(vc(0), &sdu(100, 1))[..1]);
    let t1 = T0 + Duration::from_millis(3);
    recv!(a, m, t1, cells(vc(1), &sdu(100, 1))[..1]);
    // Time going back is taken as the latest seen.
    a.handle_timeout(T0);
    assert_eq!(a.poll_timeout(), Some(T0 + TIMEOUT));
    a.handle_timeout(T0 + TIMEOUT);
    assert_eq!(a.poll_timeout(), Some(t1 + TIMEOUT));
    a.handle_timeout(t1 + TIMEOUT);
    assert_eq!(a.counters().timeout, 2);
    assert_eq!(a.poll_timeout(), None);
}

#[test]
fn test_idle_no_timeout_configured() {
    let mut a = adapter_with(AdapterConfig {
        reassembly_timeout: None,
        ..config()
    });
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1]);
    let cs = cells(vc(0), &sdu(100, 1));
    recv!(a, m, T0, cs[..1]);
    assert_eq!(a.poll_timeout(), None);
    recv!(a, m, Instant::from_nanos(u64::MAX), cs[1..]);
    assert_eq!(completions(&mut a, &mut m)[0].len, 100);
}

#[test]
fn test_filling_oversize_max_sdu() {
    let mut a = Adapter::new(config()).unwrap();
    a.open_vc(10, vc(0), UBR, RxVcConfig::aal5(100)).unwrap();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1]);
    recv!(a, m, T0, cells(vc(0), &sdu(300, 1)));
    recv_nothing!(a);
    assert_eq!(a.counters().oversize, 1);
    // Length 130 > max_sdu 100 in a PDU of three cells (which pdu_len(100) allows).
    recv!(a, m, T0, pdu_cells(vc(0), &[3; 130], 130));
    assert_eq!(a.counters().oversize, 2);
    recv!(a, m, T0, cells(vc(0), &sdu(100, 2)));
    assert_eq!(first_sdu(&mut a, &mut m), sdu(100, 2));
}

#[test]
fn test_filling_buffer_too_small() {
    // Receive buffers are 100 bytes (the memory's are 200: nothing past 100 is written).
    let mut a = adapter_with(AdapterConfig {
        rx_buffer_size: 100,
        ..config()
    });
    let mut m = Checked::new(16, 200);
    post_rx(&mut a, &mut m, [1]);
    for len in [101, 130, 180] {
        recv!(a, m, T0, cells(vc(0), &sdu(len, 1)));
        recv_nothing!(a);
        assert_eq!(m.mem.buffer(BufferId(1)).unwrap()[100..], [0u8; 100]);
    }
    assert_eq!(a.counters().oversize, 3);
    recv!(a, m, T0, cells(vc(0), &sdu(100, 5)));
    let c = completions(&mut a, &mut m);
    assert_eq!(delivered(&m, &c[0]), sdu(100, 5));
    assert_eq!(m.mem.buffer(BufferId(1)).unwrap()[100..], [0u8; 100]);
}

#[test]
fn test_idle_abort_and_length_errors() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1]);
    recv!(a, m, T0, pdu_cells(vc(0), &[0; 1], 0));
    assert_eq!(a.counters().aborted, 1);
    // Two cells but Length 10 (78 bytes of pad), and Length longer than the PDU.
    recv!(a, m, T0, pdu_cells(vc(0), &[5; 60], 10));
    recv!(a, m, T0, pdu_cells(vc(0), &[5; 20], 60));
    assert_eq!(a.counters().length, 2);
    recv_nothing!(a);
    assert_eq!(a.free_rx_buffers(), 1);
}

#[test]
fn test_filling_interleaved_vcs() {
    // Cells of two VCs interleaved in a fixed shuffled order (each VC's own order kept),
    // long enough that the stage is flushed on every switch and when full.
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1, 2]);
    let x = cells(vc(0), &sdu(3000, 1));
    let y = cells(vc(1), &sdu(2000, 2));
    let (mut i, mut j, mut k) = (0, 0, 7u32);
    let mut mixed = Vec::new();
    while i < x.len() || j < y.len() {
        k = k.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let run = (k >> 16) as usize % 20;
        for _ in 0..run {
            if (k >> 8) & 1 == 0 && i < x.len() {
                mixed.push(x[i]);
                i += 1;
            } else if j < y.len() {
                mixed.push(y[j]);
                j += 1;
            }
        }
    }
    for chunk in mixed.chunks(37) {
        recv!(a, m, T0, chunk);
    }
    let c = completions(&mut a, &mut m);
    assert_eq!(c.len(), 2);
    for c in &c {
        let want = if c.handle == Some(10) {
            sdu(3000, 1)
        } else {
            sdu(2000, 2)
        };
        assert_eq!(delivered(&m, c), want);
    }
}

#[test]
fn test_filling_close_vc() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1, 2]);
    let cs = cells(vc(0), &sdu(500, 1));
    recv!(a, m, T0, cs[..3]);
    a.close_vc(10).unwrap();
    let c = completions(&mut a, &mut m);
    assert_eq!(
        (c[0].buffer, c[0].direction, c[0].status),
        (BufferId(2), Direction::Rx, Status::Aborted)
    );
    assert_eq!(a.poll_timeout(), None);
    recv!(a, m, T0, cs[3..]);
    assert_eq!(a.counters().unknown_vc, cs.len() as u64 - 3);
    // The handle and the VC can be used again.
    a.open_vc(10, vc(0), UBR, RxVcConfig::aal5(4096)).unwrap();
    recv!(a, m, T0, cs);
    assert_eq!(first_sdu(&mut a, &mut m), sdu(500, 1));
}

#[test]
fn test_idle_oam_cells() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1]);
    let rest = cells(vc(0), &sdu(200, 1));
    recv!(a, m, T0, rest[..2]);
    let seg = cell_with_pti(vc(0), Pti::SegmentF5);
    let e2e = cell_with_pti(vc(0), Pti::EndToEndF5);
    let rm = cell_with_pti(vc(0), Pti::ResourceMgmt);
    let f4 = cell_with_pti(VcId::uni(7, 3).unwrap(), Pti::DATA);
    let f4e = cell_with_pti(VcId::uni(7, 4).unwrap(), Pti::SegmentF5);
    let reserved = cell_with_pti(vc(0), Pti::Reserved);
    recv!(a, m, T0, [seg, e2e, rm, f4, f4e, reserved]);
    let events: Vec<(Option<u32>, OamKind, [u8; CELL_LEN])> = std::iter::from_fn(|| a.poll_event())
        .map(
            |Event::Oam {
                 handle, kind, cell, ..
             }| (handle, kind, cell),
        )
        .collect();
    assert_eq!(
        events,
        [
            (Some(10), OamKind::F5Segment, seg),
            (Some(10), OamKind::F5EndToEnd, e2e),
            (Some(10), OamKind::Rm, rm),
            (None, OamKind::F4Segment, f4),
            (None, OamKind::F4EndToEnd, f4e),
        ]
    );
    assert_eq!((a.counters().oam, a.counters().reserved_pti), (5, 1));
    // The frame in progress did not see them.
    recv!(a, m, T0, rest[2..]);
    assert_eq!(first_sdu(&mut a, &mut m), sdu(200, 1));
}

#[test]
fn test_idle_oam_corrected_header_and_queue_full() {
    let mut a = adapter_with(AdapterConfig {
        event_queue_max: 1,
        ..config()
    });
    let mut m = Checked::new(16, 4096);
    let seg = cell_with_pti(vc(0), Pti::SegmentF5);
    let mut flipped = seg;
    flipped[3] ^= 0x80;
    recv!(a, m, T0, [flipped, seg]);
    assert_eq!(
        a.poll_event(),
        Some(Event::Oam {
            vc: vc(0),
            handle: Some(10),
            kind: OamKind::F5Segment,
            cell: seg
        })
    );
    assert_eq!(a.poll_event(), None);
    assert_eq!(a.counters().events_dropped, 1);
}

#[test]
fn test_idle_unknown_and_unassigned_cells() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1]);
    recv!(a, m, T0, cells(vc(9), b"stray"));
    let mut idle = [0x6Au8; CELL_LEN];
    idle[..HEADER_LEN].copy_from_slice(&[0, 0, 0, 1, 0x52]);
    recv!(a, m, T0, [idle]);
    recv_nothing!(a);
    let k = a.counters();
    assert_eq!((k.unknown_vc, k.unassigned, k.cells_in), (1, 1, 2));
    assert_eq!(m.writes, 0);
}

#[test]
fn test_idle_policed_cells() {
    // CBR.1 at 1,000 cells/s, CDVT 0: back-to-back cells fail the peak GCRA.
    let contract = Contract {
        pcr: 1000,
        scr: 0,
        mbs: 0,
        cdvt: Duration::ZERO,
    };
    let policer = Policer::new(Conformance::Cbr1, &contract).unwrap();
    let mut a = Adapter::new(config()).unwrap();
    a.open_vc(
        10,
        vc(0),
        UBR,
        RxVcConfig {
            max_sdu: 4096,
            policer: Some(policer),
        },
    )
    .unwrap();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1, 2]);
    let cs = cells(vc(0), &sdu(100, 1));
    recv!(a, m, T0, cs);
    assert_eq!(a.counters().policed, 2);
    assert_eq!(a.vc_counters(10).unwrap().policed, 2);
    // Spaced at the PCR they pass (after the partial frame the first cell began expired).
    for (i, c) in cs.iter().enumerate() {
        a.handle_cell(T0 + TIMEOUT + Duration::from_millis(i as u64), c, &mut m);
    }
    assert_eq!(a.counters().timeout, 1);
    assert_eq!(first_sdu(&mut a, &mut m), sdu(100, 1));
}

#[test]
fn test_free_reclaim_rx_buffers() {
    let mut a = adapter();
    let mut m = Checked::new(16, 4096);
    post_rx(&mut a, &mut m, [1, 2, 3]);
    a.post_rx_buffer(BufferId(2)); // held already
    a.post_rx_buffer(BufferId(99)); // unknown
    recv!(a, m, T0, cells(vc(0), &sdu(100, 1))[..1]);
    a.reclaim_rx_buffers();
    let c = completions(&mut a, &mut m);
    let statuses: Vec<Status> = c.iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        [
            Status::NotOwned,
            Status::UnknownBuffer,
            Status::Aborted,
            Status::Aborted
        ]
    );
    assert_eq!(a.free_rx_buffers(), 0);
    // The frame in progress keeps its buffer until the VC closes.
    assert_eq!(m.rx.len(), 1);
    a.close_vc(10).unwrap();
    completions(&mut a, &mut m);
    assert!(m.rx.is_empty());
    assert!((0..16).all(|i| !a.holds(BufferId(i))));
}

#[test]
fn test_nni_high_vpi() {
    let mut a = Adapter::new(AdapterConfig {
        format: HeaderFormat::Nni,
        ..config()
    })
    .unwrap();
    let v = VcId::new(Vpi::nni(4000).unwrap(), natm_core::Vci::from_u16(77));
    a.open_vc(1, v, UBR, RxVcConfig::aal5(100)).unwrap();
    let mut m = Checked::new(16, 4096);
    post_tx(&mut a, &mut m, 0, b"nni", 1);
    post_rx(&mut a, &mut m, [1]);
    let cs = drain(&mut a, &m, T0, 4);
    recv!(a, m, T0, cs);
    let c = completions(&mut a, &mut m);
    assert_eq!(delivered(&m, &c[1]), b"nni");
}

#[test]
fn test_config_and_open_errors() {
    let bad = [
        (
            AdapterConfig {
                buffers: 0,
                ..config()
            },
            ConfigError::Buffers(0),
        ),
        (
            AdapterConfig {
                rx_buffer_size: 0,
                ..config()
            },
            ConfigError::RxBufferSize,
        ),
        (
            AdapterConfig {
                max_vcs: 0,
                ..config()
            },
            ConfigError::MaxVcs(0),
        ),
        (
            AdapterConfig {
                max_tx_queued: 0,
                ..config()
            },
            ConfigError::MaxTxQueued,
        ),
    ];
    for (c, want) in bad {
        assert_eq!(Adapter::new(c).err(), Some(want));
        assert!(!want.to_string().is_empty());
    }
    assert!(matches!(
        Adapter::new(AdapterConfig {
            link: LineRate::cells(2_000_000_000).unwrap(),
            ..config()
        }),
        Err(ConfigError::LinkRate(_))
    ));
    let mut a = Adapter::new(AdapterConfig {
        max_vcs: 2,
        ..config()
    })
    .unwrap();
    a.open_vc(1, vc(0), UBR, RxVcConfig::aal5(100)).unwrap();
    let nni = VcId::new(Vpi::nni(300).unwrap(), natm_core::Vci::from_u16(40));
    let cases = [
        (1, vc(1), UBR, 100, OpenError::HandleInUse(1)),
        (2, vc(0), UBR, 100, OpenError::VcInUse(vc(0))),
        (
            2,
            nni,
            UBR,
            100,
            OpenError::VpiTooLarge { vc: nni, max: 255 },
        ),
        (
            2,
            VcId::uni(1, 3).unwrap(),
            UBR,
            100,
            OpenError::ReservedVci(VcId::uni(1, 3).unwrap()),
        ),
        (2, vc(1), UBR, 0, OpenError::MaxSdu(0)),
        (2, vc(1), UBR, 65_536, OpenError::MaxSdu(65_536)),
        (
            2,
            vc(1),
            VcSpec::ubr(100, 0),
            100,
            OpenError::Tx(natm_traffic::sched::SchedError::ZeroWeight),
        ),
        // The unlimited link's check is the scheduler's: the same typed reasons.
        (
            2,
            vc(1),
            VcSpec::cbr(0),
            100,
            OpenError::Tx(natm_traffic::sched::SchedError::Contract(
                natm_traffic::policer::ContractError::NoPcr,
            )),
        ),
    ];
    for (h, v, spec, max_sdu, want) in cases {
        assert_eq!(a.open_vc(h, v, spec, RxVcConfig::aal5(max_sdu)), Err(want));
        assert!(!want.to_string().is_empty());
    }
    a.open_vc(2, vc(1), UBR, RxVcConfig::aal5(100)).unwrap();
    assert_eq!(
        a.open_vc(3, vc(2), UBR, RxVcConfig::aal5(100)),
        Err(OpenError::TooManyVcs { max: 2 })
    );
    assert!(!UnknownHandle(3).to_string().is_empty());
}

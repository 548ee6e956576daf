//! natm-adapter: arbitrary operations (cells, whole SDUs sent by a second adapter with one
//! bit maybe flipped, transmit and receive posts of any id and length, transmit batches
//! looped back, VCs closed and reopened, passing time, reclaims) on an adapter. It must
//! never panic, never touch a buffer it does not hold (the memory asserts it), give every
//! buffer back once, and deliver on a VC only an SDU the peer sent on it.
#![no_main]

use std::cell::Cell as StdCell;
use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use natm_adapter::{
    Adapter, AdapterConfig, BufferId, BufferMemory, Direction, HecCheck, MemoryError, RxVcConfig,
    Status, UBR_UNSHAPED_PCR, VecBuffers,
};
use natm_core::{Duration, Instant, LineRate, VcId};
use natm_traffic::sched::VcSpec;
use natm_wire::cell::CELL_LEN;

const BUFFERS: u32 = 12;
const SIZE: usize = 600;
const VCS: u32 = 3;

/// Memory that asserts the adapter reads only transmit buffers and writes only receive
/// buffers it was given.
struct Checked {
    mem: VecBuffers,
    tx: BTreeSet<u32>,
    rx: BTreeSet<u32>,
    reads: StdCell<u64>,
}

impl BufferMemory for Checked {
    fn read(&self, id: BufferId, offset: usize, out: &mut [u8]) -> Result<(), MemoryError> {
        assert!(
            self.tx.contains(&id.0),
            "read of {id} not posted for transmit"
        );
        self.reads.set(self.reads.get() + 1);
        self.mem.read(id, offset, out)
    }

    fn write(&mut self, id: BufferId, offset: usize, data: &[u8]) -> Result<(), MemoryError> {
        assert!(
            self.rx.contains(&id.0),
            "write of {id} not posted for receive"
        );
        self.mem.write(id, offset, data)
    }
}

fn vc(i: u32) -> VcId {
    VcId::uni(1, 32 + i).expect("small VCI")
}

/// The adapter under test: UBR at 100,000 cells/s (shaped on an unlimited link).
fn open(a: &mut Adapter, i: u32, max_sdu: usize) {
    let _ = a.open_vc(i, vc(i), VcSpec::ubr(100_000, 1), RxVcConfig::aal5(max_sdu));
}

/// The peer sends whole SDUs at one instant: UBR without a rate, never shaped.
fn open_peer(a: &mut Adapter, i: u32, max_sdu: usize) {
    let spec = VcSpec::ubr(UBR_UNSHAPED_PCR, 1);
    let _ = a.open_vc(i, vc(i), spec, RxVcConfig::aal5(max_sdu));
}

fuzz_target!(|data: &[u8]| {
    let Some((&[mode, rate], mut rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let config = AdapterConfig {
        link: if rate & 1 == 0 {
            LineRate::Unlimited
        } else {
            // An odd byte is at least 1: 1000 cells/s or more.
            LineRate::cells(u32::from(rate) * 1000).unwrap_or(LineRate::Unlimited)
        },
        // Unlimited links: shaping tolerance 0 to 1.27 ms.
        shaper_cdv: Duration::from_micros(u64::from(rate >> 1) * 10),
        hec: [HecCheck::Off, HecCheck::Detect, HecCheck::Correct][usize::from(mode % 3)],
        reassembly_timeout: Some(Duration::from_micros(300)),
        max_tx_queued: 5,
        event_queue_max: 4,
        ..AdapterConfig::new(BUFFERS, SIZE - usize::from(mode >> 3))
    };
    let hec_off = config.hec == HecCheck::Off;
    let mut a = Adapter::new(config).expect("valid config");
    let mut peer = Adapter::new(AdapterConfig::new(1, 1)).expect("valid config");
    for i in 0..VCS {
        open(&mut a, i, 500);
        open_peer(&mut peer, i, 500);
    }
    let mut m = Checked {
        mem: VecBuffers::new(BUFFERS, SIZE),
        tx: BTreeSet::new(),
        rx: BTreeSet::new(),
        reads: StdCell::new(0),
    };
    let mut pm = Checked {
        mem: VecBuffers::new(1, 1200),
        tx: BTreeSet::from([0]),
        rx: BTreeSet::new(),
        reads: StdCell::new(0),
    };
    // What the peer and our own loopback sent per VC (only these may be delivered).
    let mut sent: Vec<Vec<Vec<u8>>> = vec![Vec::new(); VCS as usize];
    let mut given = [0u32; BUFFERS as usize];
    let mut back = [0u32; BUFFERS as usize];
    let mut now = Instant::ZERO;
    let mut cells = vec![[0u8; CELL_LEN]; 40];
    while let Some((&op, tail)) = rest.split_first() {
        rest = tail;
        let arg = op >> 3;
        match op & 7 {
            0 => {
                let Some((cell, tail)) = rest.split_first_chunk::<CELL_LEN>() else {
                    return;
                };
                rest = tail;
                a.handle_cells(now, std::slice::from_ref(cell), &mut m);
            }
            1 => {
                // A whole SDU from the peer, one bit maybe flipped.
                let Some((&[len, flip], tail)) = rest.split_first_chunk::<2>() else {
                    return;
                };
                rest = tail;
                let len = (usize::from(len) * 5).min(1200).max(1);
                let v = u32::from(arg) % VCS;
                let body: Vec<u8> = (0..len).map(|i| (i as u8) ^ flip ^ arg).collect();
                pm.mem.buffer_mut(BufferId(0)).expect("id")[..len].copy_from_slice(&body);
                peer.post_tx(now, BufferId(0), len, v);
                sent[v as usize].push(body);
                let mut k = 0usize;
                let mut burst = [[0u8; CELL_LEN]; 1];
                while peer.poll_transmit(now, &pm, &mut burst) == 1 {
                    if flip & 1 == 1 && k == usize::from(flip >> 4) {
                        // With the HEC unchecked a header flip may move a cell to another
                        // VC (the link is trusted then), so only payloads are hit.
                        let at = if hec_off {
                            5 + usize::from(flip) % 48
                        } else {
                            usize::from(flip) % CELL_LEN
                        };
                        burst[0][at] ^= 1 << (arg % 8);
                    }
                    k += 1;
                    a.handle_cells(now, &burst, &mut m);
                }
                while peer.poll_completion().is_some() {}
            }
            2 => {
                let Some((&[id, len], tail)) = rest.split_first_chunk::<2>() else {
                    return;
                };
                rest = tail;
                let id = u32::from(id % (BUFFERS as u8 + 2));
                let len = usize::from(len) * 4;
                let v = u32::from(arg) % (VCS + 1);
                if id < BUFFERS && !a.holds(BufferId(id)) {
                    m.tx.insert(id);
                    given[id as usize] += 1;
                    if (1..=SIZE).contains(&len) && v < VCS {
                        let body = m.mem.buffer(BufferId(id)).expect("id")[..len].to_vec();
                        sent[v as usize].push(body);
                    }
                }
                a.post_tx(now, BufferId(id), len, v);
            }
            3 => {
                let id = u32::from(arg) % (BUFFERS + 2);
                if id < BUFFERS && !a.holds(BufferId(id)) {
                    m.rx.insert(id);
                    given[id as usize] += 1;
                }
                a.post_rx_buffer(BufferId(id));
            }
            4 => {
                // Transmit a batch and loop it back.
                let n = a.poll_transmit(now, &m, &mut cells[..usize::from(arg) + 1]);
                let out = cells[..n].to_vec();
                a.handle_cells(now, &out, &mut m);
            }
            5 => {
                now += Duration::from_micros(u64::from(arg) * 25);
                a.handle_timeout(now);
                if let Some(t) = a.poll_timeout() {
                    assert!(t >= now);
                }
            }
            6 => {
                let v = u32::from(arg) % VCS;
                if a.close_vc(v).is_ok() {
                    open(&mut a, v, usize::from(arg) * 20 + 1);
                }
            }
            _ => a.reclaim_rx_buffers(),
        }
        while a.poll_event().is_some() {}
        while let Some(c) = a.poll_completion() {
            if matches!(c.status, Status::UnknownBuffer | Status::NotOwned) {
                continue;
            }
            let i = c.buffer.0 as usize;
            back[i] += 1;
            assert!(back[i] <= given[i], "{c:?} came back twice");
            match c.direction {
                Direction::Tx => assert!(m.tx.remove(&c.buffer.0)),
                Direction::Rx => {
                    assert!(m.rx.remove(&c.buffer.0));
                    if c.status == Status::Ok {
                        let h = c.handle.expect("a delivered SDU names its VC") as usize;
                        let got = &m.mem.buffer(c.buffer).expect("id")[..c.len];
                        assert!(
                            sent[h].iter().any(|s| s == got),
                            "delivered on VC {h} an SDU never sent on it"
                        );
                    }
                }
            }
        }
    }
    for v in 0..VCS {
        let _ = a.close_vc(v);
    }
    a.reclaim_rx_buffers();
    while let Some(c) = a.poll_completion() {
        if !matches!(c.status, Status::UnknownBuffer | Status::NotOwned) {
            back[c.buffer.0 as usize] += 1;
        }
    }
    assert_eq!(given, back, "every buffer given came back once");
});

//! atmsigd's signalling VC on an atmtcp connection: the bridge between its two FIFOs of
//! framed SDUs and a natm-link endpoint.
//!
//! natm's atmtcp links (`kind = "tcp"` in a link's configuration, what natm lab writes for
//! an `[[external]]` entry) carry cells, one atmtcp frame per cell
//! ([`natm_link::tcpcell`]), as Linux's atmtcp driver carries an AAL0 VC. So the bridge is
//! an AAL5 end on VC 0.5: each SDU atmsigd writes is segmented (natm-wire's
//! [`Segmenter`]) and sent as cells, and the cells received on 0.5 are reassembled by
//! natm's one AAL5 receiver ([`Reassembler`]) and each whole SDU written to atmsigd's FIFO.
//! atmsigd has no data path, so the bridge stands in for its calls' data: AAL5 frames on
//! other VCs are reassembled and kept for the test ([`BridgeStats::data`], the first
//! [`DATA_KEPT`]), and a test sends SDUs on a call's VC with
//! [`crate::atmsigd::AtmSigd::send_data`].
//!
//! It runs in a thread of its own ([`crate::atmsigd::AtmSigd::bridge`] starts it), which
//! also passes atmsigd's kernel-side messages on, so a test waits for them as before
//! ([`crate::atmsigd::AtmSigd::wait`]); the SDUs crossing the bridge land in the
//! harness's trace. When the link ends (the peer closed it, a daemon restarted) the
//! bridge says why in [`BridgeStats::ended`] and drops what atmsigd sends until it is
//! stopped; it does not reconnect.

use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use natm_adapter::{Reassembler, Reassembly};
use natm_core::VcId;
use natm_link::endpoint::EndpointLink;
use natm_link::{CELL_LEN, CellBytes};
use natm_wire::aal5::Segmenter;

use crate::atmsigd::{Dir, Incoming, Seen};

/// The signalling VC, 0.5.
pub const SIGNALLING_VC: (u32, u32) = (0, 5);
/// The largest SDU taken from the link (SSCOP's SD with a Q.2931 message stays far below).
pub const MAX_SDU: usize = 9188;
/// How long the bridge sleeps on the link before looking at atmsigd's FIFO again.
const TICK: Duration = Duration::from_millis(1);
/// Data SDUs kept in [`BridgeStats::data`]; later ones are only counted.
pub const DATA_KEPT: usize = 64;
/// How long one SDU's cells may wait for room in the link.
const SEND_LIMIT: Duration = Duration::from_secs(1);

/// What a bridge has carried.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BridgeStats {
    /// SDUs from atmsigd sent on the link.
    pub to_link: u64,
    /// SDUs from the link written to atmsigd.
    pub to_sigd: u64,
    /// Cells of VCs other than 0.5 received (the calls' data).
    pub other_cells: u64,
    /// AAL5 SDUs received on VCs other than 0.5, `(vpi, vci, sdu)`, the first
    /// [`DATA_KEPT`].
    pub data: Vec<(u16, u16, Vec<u8>)>,
    /// Data SDUs sent ([`crate::atmsigd::AtmSigd::send_data`]).
    pub data_sent: u64,
    /// AAL5 frames on 0.5 the receiver discarded (CRC, length).
    pub discarded: u64,
    /// Why the link ended, once it has.
    pub ended: Option<String>,
}

/// A running bridge: stopped and joined by [`Bridge::stop`] (the owner's drop).
pub(crate) struct Bridge {
    data: Sender<(VcId, Vec<u8>)>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<Mutex<BridgeStats>>,
}

impl Bridge {
    /// Starts the thread: `rx` is atmsigd's readers' channel, `tx` where its kernel
    /// messages and the trace go on, `to_sigd` atmsigd's input FIFO, `epoch` the
    /// harness's clock.
    pub(crate) fn start(
        link: Box<dyn EndpointLink>,
        rx: Receiver<Incoming>,
        tx: Sender<Incoming>,
        to_sigd: File,
        epoch: std::time::Instant,
    ) -> Bridge {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Mutex::new(BridgeStats::default()));
        let (s, st) = (stop.clone(), stats.clone());
        let (data, data_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("atmsigd-bridge".into())
            .spawn(move || {
                Run {
                    link: Some(link),
                    rx,
                    tx,
                    to_sigd,
                    epoch,
                    stats: st,
                    data: data_rx,
                    data_rx: std::collections::BTreeMap::new(),
                }
                .run(&s)
            })
            .expect("spawn the bridge thread");
        Bridge {
            data,
            stop,
            thread: Some(thread),
            stats,
        }
    }

    /// Queues one data SDU for `vc`.
    pub(crate) fn send_data(&self, vc: VcId, sdu: Vec<u8>) {
        let _ = self.data.send((vc, sdu));
    }

    /// What it has carried so far.
    pub(crate) fn stats(&self) -> BridgeStats {
        self.stats.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Stops the thread (which drops the link) and waits for it.
    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Run {
    link: Option<Box<dyn EndpointLink>>,
    rx: Receiver<Incoming>,
    tx: Sender<Incoming>,
    to_sigd: File,
    epoch: std::time::Instant,
    stats: Arc<Mutex<BridgeStats>>,
    /// Data SDUs to send.
    data: Receiver<(VcId, Vec<u8>)>,
    /// A reassembler per data VC seen.
    data_rx: std::collections::BTreeMap<(u16, u16), Reassembler>,
}

impl Run {
    fn run(mut self, stop: &AtomicBool) {
        let vc = VcId::uni(SIGNALLING_VC.0, SIGNALLING_VC.1).expect("0.5 is a UNI VC");
        let mut reassembler = Reassembler::new(vc, MAX_SDU).expect("one VC");
        let mut buf = [[0u8; CELL_LEN]; 64];
        while !stop.load(Ordering::Relaxed) {
            // atmsigd → link.
            loop {
                match self.rx.try_recv() {
                    Ok(Incoming::Sdu(sdu)) => self.send_on_link(vc, sdu),
                    Ok(other) => {
                        let _ = self.tx.send(other);
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return,
                }
            }
            while let Ok((vc, sdu)) = self.data.try_recv() {
                if self.send_cells(vc, &sdu) {
                    self.count(|s| s.data_sent += 1);
                }
            }
            // link → atmsigd.
            let Some(link) = self.link.as_mut() else {
                std::thread::sleep(TICK);
                continue;
            };
            let got = link
                .send_cells(&[])
                .and_then(|_| link.recv_cells_timeout(&mut buf, Some(TICK)));
            let n = match got {
                Ok(n) => n,
                Err(e) => {
                    self.end(format!("receiving: {e}"));
                    continue;
                }
            };
            for cell in &buf[..n] {
                if on_vc(cell, SIGNALLING_VC) {
                    match reassembler.push_cell(cell) {
                        Reassembly::Complete(_) => self.write_to_sigd(reassembler.sdu()),
                        Reassembly::Discarded(_) => self.count(|s| s.discarded += 1),
                        Reassembly::Incomplete => {}
                    }
                } else {
                    self.data_cell(cell);
                }
            }
        }
    }

    fn send_on_link(&mut self, vc: VcId, sdu: Vec<u8>) {
        if self.send_cells(vc, &sdu) {
            self.count(|s| s.to_link += 1);
            self.trace(Dir::FromSigd, sdu);
        }
    }

    /// Sends `sdu` as AAL5 on `vc`; `false` if it did not go (the link ends on a failure).
    fn send_cells(&mut self, vc: VcId, sdu: &[u8]) -> bool {
        let Some(link) = self.link.as_mut() else {
            return false;
        };
        let cells: Vec<CellBytes> = match Segmenter::uni(vc, sdu) {
            Ok(s) => s.collect(),
            Err(_) => return false, // longer than AAL5 takes
        };
        match link.send_cells_timeout(&cells, Some(SEND_LIMIT)) {
            Ok(n) if n == cells.len() => true,
            Ok(n) => {
                self.end(format!("the link took {n} of {} cells", cells.len()));
                false
            }
            Err(e) => {
                self.end(format!("sending: {e}"));
                false
            }
        }
    }

    /// A cell of a call's VC: reassembled per VC, the SDU kept.
    fn data_cell(&mut self, cell: &CellBytes) {
        let word = u32::from_be_bytes([cell[0], cell[1], cell[2], cell[3]]);
        let (vpi, vci) = (((word >> 20) & 0xff) as u16, ((word >> 4) & 0xffff) as u16);
        self.count(|s| s.other_cells += 1);
        let Ok(vc) = VcId::uni(u32::from(vpi), u32::from(vci)) else {
            return;
        };
        let r = match self.data_rx.entry((vpi, vci)) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => match Reassembler::new(vc, MAX_SDU) {
                Ok(r) => e.insert(r),
                Err(_) => return,
            },
        };
        if let Reassembly::Complete(_) = r.push_cell(cell) {
            let sdu = r.sdu().to_vec();
            self.count(|s| {
                if s.data.len() < DATA_KEPT {
                    s.data.push((vpi, vci, sdu));
                }
            });
        }
    }

    fn write_to_sigd(&mut self, sdu: &[u8]) {
        if crate::atmsigd::write_frame(&mut self.to_sigd, sdu).is_ok() {
            self.count(|s| s.to_sigd += 1);
            self.trace(Dir::ToSigd, sdu.to_vec());
        }
    }

    fn trace(&self, dir: Dir, sdu: Vec<u8>) {
        let at = natm_core::Instant::from_nanos(
            u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX),
        );
        let _ = self.tx.send(Incoming::Traced(Seen {
            at,
            dir,
            sdu,
            dropped: false,
        }));
    }

    fn end(&mut self, why: String) {
        self.link = None;
        self.count(|s| s.ended = Some(why));
    }

    fn count(&self, f: impl FnOnce(&mut BridgeStats)) {
        if let Ok(mut s) = self.stats.lock() {
            f(&mut s);
        }
    }
}

/// Whether `cell` (a UNI header) is on `vpi.vci`.
fn on_vc(cell: &CellBytes, (vpi, vci): (u32, u32)) -> bool {
    let word = u32::from_be_bytes([cell[0], cell[1], cell[2], cell[3]]);
    (word >> 20) & 0xff == vpi && (word >> 4) & 0xffff == vci
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segmented_sdu_is_on_the_signalling_vc() {
        let vc = VcId::uni(0, 5).unwrap();
        let cells: Vec<CellBytes> = Segmenter::uni(vc, &[1, 2, 3]).unwrap().collect();
        assert_eq!(cells.len(), 1);
        assert!(on_vc(&cells[0], SIGNALLING_VC));
        assert!(!on_vc(&cells[0], (0, 6)));
        let mut r = Reassembler::new(vc, MAX_SDU).unwrap();
        assert_eq!(r.push_cell(&cells[0]), Reassembly::Complete(3));
        assert_eq!(r.sdu(), &[1, 2, 3]);
    }
}

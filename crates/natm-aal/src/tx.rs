//! The transmit side: a per-VC queue of the application's SDU buffers, cut into cells
//! lazily and without copying the SDU (natm-wire's [`Segmenter`], paused between cells).

use alloc::collections::VecDeque;
use core::fmt;

use natm_core::{Aal, HeaderFormat, VcId};
use natm_wire::aal5::{MAX_SDU, PausedSegmenter, Segmenter};
use natm_wire::cell::{CELL_LEN, CellHeader, HEADER_LEN, HeaderError, PAYLOAD_LEN, Pti};

/// Settings of one transmitting VC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxConfig {
    /// [`Aal::Aal5`] (each buffer is one SDU) or [`Aal::Aal0`] (each buffer is a run of
    /// 48-byte cell payloads, sent as user-data cells with PTI 000).
    pub aal: Aal,
    /// AAL5: the largest SDU accepted, 1..=65535.
    pub max_sdu: usize,
    /// The most buffers held at once: queued, in progress, and completed but not yet taken
    /// back with [`TxQueue::poll_completion`].
    pub queue_max: usize,
    /// Cell loss priority of every cell.
    pub clp: bool,
    /// AAL5 CPCS-UU, carried in every trailer (RFC 2684: 0).
    pub uu: u8,
}

impl TxConfig {
    /// AAL5 with `max_sdu`, room for 64 buffers, CLP 0, UU 0.
    pub const fn aal5(max_sdu: usize) -> TxConfig {
        TxConfig {
            aal: Aal::Aal5,
            max_sdu,
            queue_max: 64,
            clp: false,
            uu: 0,
        }
    }

    /// AAL0 with room for 64 buffers, CLP 0.
    pub const fn aal0() -> TxConfig {
        TxConfig {
            aal: Aal::Aal0,
            max_sdu: PAYLOAD_LEN,
            queue_max: 64,
            clp: false,
            uu: 0,
        }
    }
}

/// Why a [`TxQueue`] could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxConfigError {
    /// Only AAL0 and AAL5 are supported.
    UnsupportedAal(Aal),
    /// AAL5 max_sdu must be 1..=65535.
    MaxSdu(usize),
    /// queue_max must be at least 1.
    QueueMax,
    /// The VC does not fit the header format.
    Header(HeaderError),
}

impl fmt::Display for TxConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxConfigError::UnsupportedAal(aal) => {
                write!(f, "AAL {aal} is not supported (only aal0 and aal5)")
            }
            TxConfigError::MaxSdu(n) => write!(f, "max_sdu {n} is outside 1..=65535"),
            TxConfigError::QueueMax => f.write_str("queue_max must be at least 1"),
            TxConfigError::Header(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for TxConfigError {}

/// Why [`TxQueue::send`] refused a buffer; the buffer comes back inside.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SendError<B> {
    /// An empty buffer: AAL5 Length 0 means abort, and AAL0 has no cell to send.
    Empty(B),
    /// The SDU is longer than max_sdu.
    TooLarge {
        /// The buffer.
        sdu: B,
        /// Its length.
        len: usize,
        /// The VC's max_sdu.
        max_sdu: usize,
    },
    /// AAL0: the length is not a multiple of 48.
    NotCellMultiple {
        /// The buffer.
        sdu: B,
        /// Its length.
        len: usize,
    },
    /// queue_max buffers are held already.
    QueueFull(B),
}

impl<B> SendError<B> {
    /// The refused buffer.
    pub fn into_sdu(self) -> B {
        match self {
            SendError::Empty(b)
            | SendError::TooLarge { sdu: b, .. }
            | SendError::NotCellMultiple { sdu: b, .. }
            | SendError::QueueFull(b) => b,
        }
    }
}

impl<B> fmt::Display for SendError<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::Empty(_) => f.write_str("empty buffer (an AAL5 SDU is 1..=65535 bytes)"),
            SendError::TooLarge { len, max_sdu, .. } => {
                write!(f, "SDU of {len} bytes exceeds max_sdu {max_sdu}")
            }
            SendError::NotCellMultiple { len, .. } => {
                write!(f, "AAL0 buffer of {len} bytes is not a multiple of 48")
            }
            SendError::QueueFull(_) => f.write_str("transmit queue full"),
        }
    }
}

impl<B: fmt::Debug> core::error::Error for SendError<B> {}

/// Counters of one transmitting VC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxCounters {
    /// Cells produced.
    pub cells: u64,
    /// Buffers whose last cell is out.
    pub completed: u64,
    /// Buffers cut short because `AsRef` returned a different length than at `send` (the
    /// buffer is handed back all the same).
    pub abandoned: u64,
}

#[derive(Clone, Copy, Debug)]
enum Progress {
    /// The head buffer has not started.
    Idle,
    /// AAL5: the head SDU's segmenter, paused between cells.
    Aal5(PausedSegmenter),
    /// AAL0: the offset of the next 48-byte payload in the head buffer.
    Aal0(usize),
}

/// The transmit queue of one VC: holds the application's buffers, produces their cells one
/// at a time straight from them, and hands each buffer back once its last cell is out.
///
/// Call contract: [`send`](Self::send) buffers; call [`next_cell`](Self::next_cell)
/// whenever the link (or the shaper in front of it) has a cell slot for this VC; after it,
/// drain [`poll_completion`](Self::poll_completion) to get the buffers back. No call needs
/// the time: when a cell may go is the shaper's decision (natm-traffic), not the queue's.
///
/// An AAL5 SDU's CRC-32 is computed when its first cell is produced (one pass over the
/// buffer); every later cell is a 48-byte copy. The buffer must not change while queued.
#[derive(Clone, Debug)]
pub struct TxQueue<B> {
    vc: VcId,
    aal: Aal,
    format: HeaderFormat,
    max_sdu: usize,
    queue_max: usize,
    uu: u8,
    /// Template header: user data, SDU-type 0, with the configured CLP.
    header: CellHeader,
    /// AAL0 cells' header bytes, HEC included.
    aal0_header: [u8; HEADER_LEN],
    queue: VecDeque<B>,
    progress: Progress,
    done: VecDeque<B>,
    counters: TxCounters,
}

impl<B: AsRef<[u8]>> TxQueue<B> {
    /// A queue for `vc` on a link with header `format`.
    pub fn new(vc: VcId, format: HeaderFormat, config: TxConfig) -> Result<Self, TxConfigError> {
        match config.aal {
            Aal::Aal5 if config.max_sdu == 0 || config.max_sdu > MAX_SDU => {
                return Err(TxConfigError::MaxSdu(config.max_sdu));
            }
            Aal::Aal5 | Aal::Aal0 => {}
            other @ Aal::None => return Err(TxConfigError::UnsupportedAal(other)),
        }
        if config.queue_max == 0 {
            return Err(TxConfigError::QueueMax);
        }
        let header = CellHeader {
            gfc: 0,
            vc,
            pti: Pti::DATA,
            clp: config.clp,
        };
        let aal0_header = header.to_bytes(format).map_err(TxConfigError::Header)?;
        Ok(TxQueue {
            vc,
            aal: config.aal,
            format,
            max_sdu: if config.aal == Aal::Aal5 {
                config.max_sdu
            } else {
                usize::MAX
            },
            queue_max: config.queue_max,
            uu: config.uu,
            header,
            aal0_header,
            queue: VecDeque::new(),
            progress: Progress::Idle,
            done: VecDeque::new(),
            counters: TxCounters::default(),
        })
    }

    /// The VC.
    pub fn vc(&self) -> VcId {
        self.vc
    }

    /// Queue a buffer to be sent after those queued before it.
    pub fn send(&mut self, sdu: B) -> Result<(), SendError<B>> {
        let len = sdu.as_ref().len();
        if len == 0 {
            return Err(SendError::Empty(sdu));
        }
        if len > self.max_sdu {
            return Err(SendError::TooLarge {
                sdu,
                len,
                max_sdu: self.max_sdu,
            });
        }
        if self.aal == Aal::Aal0 && len % PAYLOAD_LEN != 0 {
            return Err(SendError::NotCellMultiple { sdu, len });
        }
        if self.held() >= self.queue_max {
            return Err(SendError::QueueFull(sdu));
        }
        self.queue.push_back(sdu);
        Ok(())
    }

    /// Buffers held: queued, in progress, or completed and not yet taken back.
    pub fn held(&self) -> usize {
        self.queue.len() + self.done.len()
    }

    /// Whether a cell is waiting to be sent.
    pub fn has_cells(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Counters.
    pub fn counters(&self) -> &TxCounters {
        &self.counters
    }

    /// Write the next cell into `out`; `false` (and `out` untouched) when nothing is queued.
    pub fn next_cell(&mut self, out: &mut [u8; CELL_LEN]) -> bool {
        loop {
            let Some(head) = self.queue.front() else {
                return false;
            };
            let bytes = head.as_ref();
            let produced = match (self.aal, self.progress) {
                (Aal::Aal0, progress) => {
                    let at = match progress {
                        Progress::Aal0(at) => at,
                        _ => 0,
                    };
                    match bytes.get(at..at + PAYLOAD_LEN) {
                        Some(payload) => {
                            out[..HEADER_LEN].copy_from_slice(&self.aal0_header);
                            out[HEADER_LEN..].copy_from_slice(payload);
                            let next = at + PAYLOAD_LEN;
                            if next == bytes.len() {
                                Some(true)
                            } else {
                                self.progress = Progress::Aal0(next);
                                Some(false)
                            }
                        }
                        None => None,
                    }
                }
                (_, progress) => {
                    // `None` only for a buffer whose length changed since `send`.
                    let seg = match progress {
                        Progress::Aal5(paused) => paused.resume(bytes),
                        _ => Segmenter::new(self.header, self.format, bytes, self.uu, 0).ok(),
                    };
                    seg.map(|mut seg| {
                        seg.next_cell(out);
                        self.progress = Progress::Aal5(seg.pause());
                        seg.remaining() == 0
                    })
                }
            };
            match produced {
                Some(last) => {
                    self.counters.cells += 1;
                    if last {
                        self.finish();
                        self.counters.completed += 1;
                    }
                    return true;
                }
                None => {
                    self.finish();
                    self.counters.abandoned += 1;
                }
            }
        }
    }

    fn finish(&mut self) {
        self.progress = Progress::Idle;
        if let Some(b) = self.queue.pop_front() {
            self.done.push_back(b);
        }
    }

    /// A buffer whose last cell is out (or that was abandoned), oldest first.
    pub fn poll_completion(&mut self) -> Option<B> {
        self.done.pop_front()
    }

    /// Take back every buffer not wholly sent, in order, the one in progress included (its
    /// remaining cells are not sent): for closing the VC. Completed buffers stay for
    /// `poll_completion`.
    pub fn drain_unsent(&mut self) -> impl Iterator<Item = B> + '_ {
        self.progress = Progress::Idle;
        self.queue.drain(..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    fn vc() -> VcId {
        VcId::uni(1, 100).unwrap()
    }

    fn aal5(max_sdu: usize, queue_max: usize) -> TxQueue<Vec<u8>> {
        TxQueue::new(
            vc(),
            HeaderFormat::Uni,
            TxConfig {
                queue_max,
                ..TxConfig::aal5(max_sdu)
            },
        )
        .unwrap()
    }

    fn drain(q: &mut TxQueue<Vec<u8>>) -> Vec<[u8; CELL_LEN]> {
        let mut out = Vec::new();
        let mut c = [0u8; CELL_LEN];
        while q.next_cell(&mut c) {
            out.push(c);
        }
        out
    }

    #[test]
    fn test_idle_next_cell() {
        let mut q = aal5(100, 4);
        let mut c = [0xa5u8; CELL_LEN];
        assert!(!q.next_cell(&mut c));
        assert_eq!(c, [0xa5; CELL_LEN], "untouched");
        assert_eq!(q.poll_completion(), None);
    }

    #[test]
    fn test_idle_send_hello() {
        // atm-facts §2.3: "hello" on 1.100 is one cell, header 00 10 06 42 40.
        let mut q = aal5(100, 4);
        q.send(b"hello".to_vec()).unwrap();
        assert!(q.has_cells());
        let cells = drain(&mut q);
        assert_eq!(cells.len(), 1);
        assert_eq!(&cells[0][..5], &[0x00, 0x10, 0x06, 0x42, 0x40]);
        assert_eq!(&cells[0][45..], &[0, 0, 0, 5, 0x7f, 0x4c, 0xd5, 0xde]);
        assert_eq!(q.poll_completion(), Some(b"hello".to_vec()));
        assert_eq!(q.poll_completion(), None);
        assert_eq!(q.counters().completed, 1);
    }

    #[test]
    fn test_sending_completion_after_last_cell_only() {
        let mut q = aal5(1000, 4);
        let sdu: Vec<u8> = (0..=255).collect();
        let want: Vec<_> = Segmenter::uni(vc(), &sdu).unwrap().collect();
        q.send(sdu.clone()).unwrap();
        q.send(vec![1]).unwrap();
        let mut c = [0u8; CELL_LEN];
        for w in &want {
            assert_eq!(q.poll_completion(), None);
            assert!(q.next_cell(&mut c));
            assert_eq!(&c, w);
        }
        assert_eq!(q.poll_completion(), Some(sdu));
        assert_eq!(drain(&mut q).len(), 1);
        assert_eq!(q.poll_completion(), Some(vec![1]));
        assert_eq!(q.counters().cells, want.len() as u64 + 1);
    }

    #[test]
    fn test_send_errors() {
        let mut q = aal5(100, 2);
        assert_eq!(q.send(vec![]), Err(SendError::Empty(vec![])));
        let big = vec![0u8; 101];
        assert_eq!(
            q.send(big.clone()),
            Err(SendError::TooLarge {
                sdu: big.clone(),
                len: 101,
                max_sdu: 100
            })
        );
        q.send(vec![1]).unwrap();
        q.send(vec![2]).unwrap();
        assert_eq!(q.send(vec![3]), Err(SendError::QueueFull(vec![3])));
        // Sent but not taken back still counts.
        drain(&mut q);
        assert_eq!(q.held(), 2);
        assert_eq!(q.send(vec![3]).map_err(SendError::into_sdu), Err(vec![3]));
        assert_eq!(q.poll_completion(), Some(vec![1]));
        q.send(vec![3]).unwrap();
        for e in [
            SendError::Empty(()),
            SendError::TooLarge {
                sdu: (),
                len: 2,
                max_sdu: 1,
            },
            SendError::NotCellMultiple { sdu: (), len: 5 },
            SendError::QueueFull(()),
        ] {
            assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn test_config_errors() {
        let new = |c: TxConfig| TxQueue::<Vec<u8>>::new(vc(), HeaderFormat::Uni, c).err();
        assert_eq!(new(TxConfig::aal5(0)), Some(TxConfigError::MaxSdu(0)));
        assert_eq!(
            new(TxConfig::aal5(65_536)),
            Some(TxConfigError::MaxSdu(65_536))
        );
        assert_eq!(
            new(TxConfig {
                aal: Aal::None,
                ..TxConfig::aal0()
            }),
            Some(TxConfigError::UnsupportedAal(Aal::None))
        );
        assert_eq!(
            new(TxConfig {
                queue_max: 0,
                ..TxConfig::aal0()
            }),
            Some(TxConfigError::QueueMax)
        );
        let nni = VcId::new(natm_core::Vpi::nni(300).unwrap(), vc().vci);
        let e = TxQueue::<Vec<u8>>::new(nni, HeaderFormat::Uni, TxConfig::aal0()).err();
        assert!(matches!(e, Some(TxConfigError::Header(_))));
        assert!(!e.unwrap().to_string().is_empty());
    }

    #[test]
    fn test_aal0_send() {
        let mut q: TxQueue<[u8; 96]> = TxQueue::new(
            vc(),
            HeaderFormat::Uni,
            TxConfig {
                clp: true,
                ..TxConfig::aal0()
            },
        )
        .unwrap();
        let mut buf = [0u8; 96];
        buf[48..].fill(7);
        q.send(buf).unwrap();
        let mut c = [0u8; CELL_LEN];
        assert!(q.next_cell(&mut c));
        // PTI 000, CLP 1, on 1.100.
        assert_eq!(&c[..4], &[0x00, 0x10, 0x06, 0x41]);
        assert_eq!(c[4], natm_wire::cell::hec([0x00, 0x10, 0x06, 0x41]));
        assert_eq!(&c[5..], &[0u8; 48]);
        assert_eq!(q.poll_completion(), None);
        assert!(q.next_cell(&mut c));
        assert_eq!(&c[5..], &[7u8; 48]);
        assert_eq!(q.poll_completion(), Some(buf));
        assert!(!q.next_cell(&mut c));
        let mut q: TxQueue<&[u8]> =
            TxQueue::new(vc(), HeaderFormat::Uni, TxConfig::aal0()).unwrap();
        assert!(matches!(
            q.send(&[0u8; 50]),
            Err(SendError::NotCellMultiple { len: 50, .. })
        ));
    }

    /// A buffer whose length changes after `send`: the queue must not panic or send a
    /// wrong CRC, and must hand it back.
    #[derive(Debug)]
    struct Shrinking {
        data: Vec<u8>,
        len: core::cell::Cell<usize>,
    }

    impl AsRef<[u8]> for Shrinking {
        fn as_ref(&self) -> &[u8] {
            let n = self.len.get();
            self.len.set(n.saturating_sub(1));
            &self.data[..n]
        }
    }

    #[test]
    fn test_sending_buffer_changes_length() {
        let mut q: TxQueue<Shrinking> =
            TxQueue::new(vc(), HeaderFormat::Uni, TxConfig::aal5(1000)).unwrap();
        q.send(Shrinking {
            data: vec![1; 200],
            len: core::cell::Cell::new(200),
        })
        .unwrap();
        let mut c = [0u8; CELL_LEN];
        let mut n = 0;
        while q.next_cell(&mut c) {
            n += 1;
            assert!(n < 10);
        }
        assert!(q.poll_completion().is_some());
        assert_eq!(q.counters().abandoned, 1);
    }

    #[test]
    fn test_sending_drain_unsent() {
        let mut q = aal5(1000, 4);
        q.send(vec![1; 100]).unwrap();
        q.send(vec![2; 100]).unwrap();
        let mut c = [0u8; CELL_LEN];
        assert!(q.next_cell(&mut c));
        let unsent: Vec<_> = q.drain_unsent().collect();
        assert_eq!(unsent, [vec![1; 100], vec![2; 100]]);
        assert!(!q.next_cell(&mut c));
        assert_eq!(q.held(), 0);
        // A fresh SDU starts from its first cell.
        q.send(vec![3; 10]).unwrap();
        assert_eq!(
            drain(&mut q),
            Segmenter::uni(vc(), &[3; 10]).unwrap().collect::<Vec<_>>()
        );
    }
}

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
                (_, Progress::Aal5(paused)) => paused.resume(bytes).map(|mut seg| {
                    seg.next_cell(out);
                    let last = seg.remaining() == 0;
                    self.progress = Progress::Aal5(seg.pause());
                    last
                }),
                (_, _) => {
                    match Segmenter::new(self.header, self.format, bytes, self.uu, 0) {
                        Ok(mut seg) => {
                            seg.next_cell(out);
                            let last = seg.remaining() == 0;
                            self.progress = Progress::Aal5(seg.pause());
                            Some(last)
                        }
                        // Only a buffer whose length changed since `send` gets here.
                        Err(_) => None,
                    }
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

    /// Take back every buffer not yet sent (in order), dropping the one in progress too:
    /// for closing the VC. Completed buffers stay for `poll_completion`.
    pub fn drain_unsent(&mut self) -> impl Iterator<Item = B> + '_ {
        self.progress = Progress::Idle;
        self.queue.drain(..)
    }
}

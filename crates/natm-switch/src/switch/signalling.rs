//! VC 0.5 ended on signalling ports: received cells queued for the owner
//! ([`Switch::poll_signalling`]), the owner's cells queued for output
//! ([`Switch::send_signalling`], sent by `poll_transmit` ahead of CBR).

use natm_core::Instant;

use super::{Port, Switch};
use crate::hec::hec;
use crate::types::{PortId, SignallingError};

/// The most cells each of a signalling port's two queues (received, to send) holds: a full
/// receive queue drops and counts (`signalling_dropped`), a full send queue refuses
/// ([`SignallingError::Full`]). 4,096 cells are 85 SDUs of the largest Q.2931 message
/// natm sends (about 2 KiB), far more than SSCOP's window of 30 holds unacknowledged.
pub const SIGNALLING_QUEUE_CELLS: usize = 4096;

/// `vpi << 16 | vci` of the signalling VC 0.5.
pub(super) const SIGNALLING_KEY: u32 = 5;
/// The header word of 0.5 (GFC 0, PTI 0, CLP 0), without HEC.
const SIGNALLING_WORD: u32 = 5 << 4;
/// The PTI bit of OAM and RM cells.
const PTI_NOT_USER: u32 = 0b1000;
/// The header bits the owner's cells keep: PTI and CLP.
const KEEP: u32 = 0x0F;

impl Switch {
    /// Whether any signalling port has received cells waiting for
    /// [`poll_signalling`](Self::poll_signalling): one load, for a driver's hot loop.
    #[inline]
    pub fn has_signalling(&self) -> bool {
        self.sig_pending != 0
    }

    /// Moves the signalling cells received on `port` (oldest first, headers as received
    /// with the HEC checked or corrected) into `out`; returns how many. Nothing for an
    /// unknown or non-signalling port.
    pub fn poll_signalling(&mut self, port: PortId, out: &mut [[u8; 53]]) -> usize {
        let Ok(slot) = self.slot(port) else {
            return 0;
        };
        let Some(p) = self.ports[usize::from(slot)].as_mut() else {
            return 0;
        };
        let n = out.len().min(p.sig_rx.len());
        for (o, cell) in out.iter_mut().zip(p.sig_rx.drain(..n)) {
            *o = cell;
        }
        self.sig_pending -= n;
        n
    }

    /// Queues `cell` for output on `port`'s VC 0.5, ahead of every other category, under
    /// the port's pacing. The header is rewritten to VPI 0, VCI 5 (GFC 0) keeping the
    /// cell's PTI and CLP, and its HEC is computed when it leaves; the payload goes as is.
    /// `now` is the time of the request (the cell leaves at the next `poll_transmit` that
    /// has a slot).
    pub fn send_signalling(
        &mut self,
        _now: Instant,
        port: PortId,
        cell: &[u8; 53],
    ) -> Result<(), SignallingError> {
        let slot = self
            .slot(port)
            .map_err(|_| SignallingError::UnknownPort(port))?;
        let p = self.port_mut(slot);
        if !p.config.signalling {
            return Err(SignallingError::NotSignalling(port));
        }
        if !p.up {
            return Err(SignallingError::PortDown(port));
        }
        if p.sig_tx.len() >= SIGNALLING_QUEUE_CELLS {
            return Err(SignallingError::Full(port));
        }
        let word = u32::from_be_bytes([cell[0], cell[1], cell[2], cell[3]]);
        let payload: [u8; 48] = cell[5..].try_into().expect("53 - 5 = 48 bytes");
        p.sig_tx
            .push_back((SIGNALLING_WORD | (word & KEEP), payload));
        p.counters.signalling_out += 1;
        p.counters.signalling_queued = p.sig_tx.len() as u32;
        Ok(())
    }
}

/// A cell on 0.5 arrived at signalling port `p` with (corrected) header `word`: user data
/// goes to the receive queue (or is dropped when it is full), OAM cells end here. Returns
/// whether it was queued.
#[inline]
pub(super) fn receive_signalling(p: &mut Port, word: u32, cell: &[u8; 53]) -> bool {
    if word & PTI_NOT_USER != 0 {
        p.counters.oam_terminated += 1;
        return false;
    }
    if p.sig_rx.len() >= SIGNALLING_QUEUE_CELLS {
        p.counters.signalling_dropped += 1;
        return false;
    }
    let mut c = *cell;
    c[..4].copy_from_slice(&word.to_be_bytes());
    c[4] = hec(word);
    p.sig_rx.push_back(c);
    p.counters.signalling_in += 1;
    true
}

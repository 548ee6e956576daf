//! An endpoint's settings and the service it gives.

use core::fmt;

use natm_core::Duration;

use crate::header::{DATA_HEADER_LEN, ServiceKind};

/// The largest AAL5 CPCS-SDU, bytes.
pub const AAL5_MAX_SDU: usize = 65_535;

/// The service of a channel. Both ends must be configured with the same one: every TPDU
/// carries it, and a TPDU of another service is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Service {
    /// Every message delivered once, in order, byte-exact: SMART acks, selective
    /// retransmission, a Reno-like window, receive-window flow control.
    Reliable,
    /// No acks and no retransmission: complete messages are delivered in order, every lost
    /// one is reported by its message sequence numbers.
    BestEffort,
    /// Best effort (no retransmission, losses reported) with TPDUs released by a leaky
    /// bucket at `rate` cells/s (the frames' cells: header, payload, AAL5 trailer and pad).
    Guaranteed {
        /// The rate, cells/s (at least 1).
        rate: u32,
    },
}

impl Service {
    /// The peak cell rate a guaranteed channel's VC should be opened with: the rate and a
    /// quarter more. The channel's leaky bucket holds the rate; the headroom lets it catch
    /// up after a late release (a VC shaped at exactly the rate, in series with the
    /// bucket, never does: beside a bulk flow `natm perf transport` measured 8–22 % short
    /// with `pcr = rate`, within ±1 % with 1.5 × rate). `None` for the other services,
    /// which reserve nothing.
    pub const fn vc_pcr(self) -> Option<u64> {
        match self {
            Service::Guaranteed { rate } => Some(rate as u64 + rate as u64 / 4),
            _ => None,
        }
    }

    /// The code carried in the TPDU header.
    pub const fn kind(self) -> ServiceKind {
        match self {
            Service::Reliable => ServiceKind::Reliable,
            Service::BestEffort => ServiceKind::BestEffort,
            Service::Guaranteed { .. } => ServiceKind::Guaranteed,
        }
    }

    /// Whether the receiver acknowledges.
    pub(crate) const fn acks(self) -> bool {
        matches!(self, Service::Reliable)
    }
}

/// An [`Endpoint`](crate::Endpoint)'s settings. [`Config::default`] is a reliable channel of
/// 8 KiB TPDUs and messages up to 1 MiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The service (both ends alike).
    pub service: Service,
    /// Payload bytes per TPDU (1 to 65,523, so that a TPDU fits one AAL5 SDU; default 8192).
    /// Both ends alike: a longer payload is refused.
    pub tpdu_size: usize,
    /// The longest message, bytes (default 1 MiB).
    pub max_message: usize,
    /// The most message bytes the sender holds (queued, in flight or waiting for their
    /// ack); a message that would pass it is refused (default 4 MiB).
    pub send_queue_limit: usize,
    /// The receiver's buffer, TPDUs: out-of-order TPDUs, the message being reassembled and
    /// complete messages not yet taken by [`poll_event`](crate::Endpoint::poll_event). At least
    /// the TPDUs of the longest message (default 512). The reliable window it advertises
    /// is what is free of it. Twice the largest window, since under loss it also holds
    /// what arrived behind a hole for the round trips the hole takes to fill: at 1 % cell
    /// loss on a 2 ms round trip, with the adaptive size's 5-cell TPDUs, 256 held the
    /// line to 74 % and 512 let it fill (`tests::efficiency`).
    pub recv_buffer: u32,
    /// The largest congestion window, TPDUs (default 256); the slow-start threshold starts
    /// at half of it.
    pub max_window: u32,
    /// The retransmission timeout before any round trip was measured (default 200 ms).
    pub initial_rto: Duration,
    /// The floor of the retransmission timeout (default 50 ms; never zero). The seed's
    /// lesson: with a coarse clock, a timeout computed from tiny measured round trips fires
    /// spuriously and collapses the window to one TPDU.
    pub min_rto: Duration,
    /// The ceiling of the retransmission timeout, back-off included (default 60 s).
    pub max_rto: Duration,
    /// The floor of the loss-probe timeout (default 100 µs; never zero): with TPDUs
    /// outstanding and no ack for max(2·srtt, this), one TPDU is sent again as a probe so
    /// that a whole lost flight is found by SMART instead of by the timeout. A probe does
    /// not touch the window, so a coarse clock costs one TPDU, not the window; a driver
    /// whose timers are coarser only probes later. On a LAN, where 2·srtt is a few hundred
    /// µs, a floor of 1 ms (the old default) left the line idle for most of the probe time:
    /// 1,500-byte messages at 1 % cell loss in 1,500-byte TPDUs got 75 % of the ideal
    /// instead of 86 % (with the window's growth of such a TPDU per round trip).
    pub min_probe: Duration,
    /// Best effort and guaranteed: how long a partly received message may wait for its next
    /// TPDU before it is reported lost (default 1 s).
    pub reassembly_timeout: Duration,
    /// Reliable: the sender sizes its TPDUs after the cell loss it measures
    /// ([`tpdu_size`](crate::tpdu_size)), up to `tpdu_size` (default on: it starts with
    /// one-cell TPDUs and, on a clean path, is at `tpdu_size` after 256 of them; at 1 %
    /// cell loss on the LAN 1,500-byte and 8 KiB messages get 98–100 % of the ideal of the
    /// sizes it picks, where a fixed 8 KiB gets 17 % of its own: `tests::efficiency`).
    pub adaptive_tpdu_size: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            service: Service::Reliable,
            tpdu_size: 8192,
            max_message: 1 << 20,
            send_queue_limit: 4 << 20,
            recv_buffer: 512,
            max_window: 256,
            initial_rto: Duration::from_millis(200),
            min_rto: Duration::from_millis(50),
            max_rto: Duration::from_secs(60),
            min_probe: Duration::from_micros(100),
            reassembly_timeout: Duration::from_secs(1),
            adaptive_tpdu_size: true,
        }
    }
}

/// Why a [`Config`] cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// `tpdu_size` is 0 or a TPDU would not fit one AAL5 SDU.
    TpduSize {
        /// The size asked for.
        size: usize,
        /// The largest that fits.
        max: usize,
    },
    /// `recv_buffer` cannot hold the longest message, which must be held whole.
    RecvBuffer {
        /// TPDUs the longest message takes.
        need: u64,
        /// The buffer.
        have: u32,
    },
    /// `send_queue_limit` is below `max_message`.
    SendQueue {
        /// The longest message.
        need: usize,
        /// The limit.
        have: usize,
    },
    /// `max_window` is 0.
    ZeroWindow,
    /// `min_rto` is zero.
    ZeroMinRto,
    /// `min_probe` is zero.
    ZeroMinProbe,
    /// `min_rto` is above `max_rto`, or `initial_rto` is outside them.
    RtoBounds,
    /// A guaranteed rate of 0 cells/s.
    ZeroRate,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::TpduSize { size, max } => {
                write!(f, "TPDU size {size} is not within 1..={max} bytes")
            }
            ConfigError::RecvBuffer { need, have } => write!(
                f,
                "receive buffer of {have} TPDUs cannot hold the longest message ({need} TPDUs)"
            ),
            ConfigError::SendQueue { need, have } => write!(
                f,
                "send queue limit of {have} bytes is below the longest message ({need})"
            ),
            ConfigError::ZeroWindow => f.write_str("largest window is 0 TPDUs"),
            ConfigError::ZeroMinRto => f.write_str("timeout floor (min_rto) is zero"),
            ConfigError::ZeroMinProbe => f.write_str("loss-probe floor (min_probe) is zero"),
            ConfigError::RtoBounds => {
                f.write_str("timeouts are not ordered min_rto <= initial_rto <= max_rto")
            }
            ConfigError::ZeroRate => f.write_str("guaranteed rate is 0 cells/s"),
        }
    }
}

impl core::error::Error for ConfigError {}

impl Config {
    /// The largest payload a TPDU can carry.
    pub const MAX_TPDU_SIZE: usize = AAL5_MAX_SDU - DATA_HEADER_LEN;

    /// Checks the settings against each other.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.tpdu_size == 0 || self.tpdu_size > Self::MAX_TPDU_SIZE {
            return Err(ConfigError::TpduSize {
                size: self.tpdu_size,
                max: Self::MAX_TPDU_SIZE,
            });
        }
        let need = self.tpdus_of(self.max_message);
        if need > u64::from(self.recv_buffer) {
            return Err(ConfigError::RecvBuffer {
                need,
                have: self.recv_buffer,
            });
        }
        if self.send_queue_limit < self.max_message {
            return Err(ConfigError::SendQueue {
                need: self.max_message,
                have: self.send_queue_limit,
            });
        }
        if self.max_window == 0 {
            return Err(ConfigError::ZeroWindow);
        }
        if self.min_rto == Duration::ZERO {
            return Err(ConfigError::ZeroMinRto);
        }
        if self.min_probe == Duration::ZERO {
            return Err(ConfigError::ZeroMinProbe);
        }
        if !(self.min_rto <= self.initial_rto && self.initial_rto <= self.max_rto) {
            return Err(ConfigError::RtoBounds);
        }
        if self.service == (Service::Guaranteed { rate: 0 }) {
            return Err(ConfigError::ZeroRate);
        }
        Ok(())
    }

    /// TPDUs a message of `len` bytes takes (an empty message takes one).
    pub fn tpdus_of(&self, len: usize) -> u64 {
        (len.div_ceil(self.tpdu_size.max(1))).max(1) as u64
    }

    /// The longest frame this endpoint sends: the buffer
    /// [`poll_transmit`](crate::Endpoint::poll_transmit) needs.
    pub const fn max_frame_len(&self) -> usize {
        let data = DATA_HEADER_LEN + self.tpdu_size;
        if data > crate::header::ACK_LEN {
            data
        } else {
            crate::header::ACK_LEN
        }
    }
}

/// Cells of one AAL5 frame of `len` bytes (the 8-byte trailer and the pad included).
pub const fn frame_cells(len: usize) -> u32 {
    ((len + 8).div_ceil(48)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_validate() {
        let ok = Config::default();
        assert_eq!(ok.validate(), Ok(()));
        let bad = |f: fn(&mut Config)| {
            let mut c = Config::default();
            f(&mut c);
            c.validate().unwrap_err()
        };
        assert_eq!(bad(|c| c.min_rto = Duration::ZERO), ConfigError::ZeroMinRto);
        assert_eq!(
            bad(|c| c.min_probe = Duration::ZERO),
            ConfigError::ZeroMinProbe
        );
        assert_eq!(
            bad(|c| c.tpdu_size = 0),
            ConfigError::TpduSize {
                size: 0,
                max: 65_523
            }
        );
        assert_eq!(
            bad(|c| c.tpdu_size = 65_524),
            ConfigError::TpduSize {
                size: 65_524,
                max: 65_523
            }
        );
        assert_eq!(
            bad(|c| c.tpdu_size = 1500),
            ConfigError::RecvBuffer {
                need: 700,
                have: 512
            }
        );
        assert_eq!(bad(|c| c.max_window = 0), ConfigError::ZeroWindow);
        assert_eq!(
            bad(|c| c.initial_rto = Duration::from_millis(10)),
            ConfigError::RtoBounds
        );
        assert_eq!(
            bad(|c| c.service = Service::Guaranteed { rate: 0 }),
            ConfigError::ZeroRate
        );
        assert_eq!(
            bad(|c| c.send_queue_limit = 10),
            ConfigError::SendQueue {
                need: 1 << 20,
                have: 10
            }
        );
    }

    #[test]
    fn test_frame_cells() {
        assert_eq!(frame_cells(40), 1);
        assert_eq!(frame_cells(41), 2);
        assert_eq!(frame_cells(12 + 8192), 172);
        assert_eq!(frame_cells(12 + 1500), 32);
        assert_eq!(Config::default().tpdus_of(0), 1);
        assert_eq!(Config::default().tpdus_of(8193), 2);
    }
}

//! Admission of a guaranteed channel: what a [`Channel`](super::Channel) checks before its
//! hello, so that a rate the VC or the host cannot honour is refused at once, naming
//! which ([`Refusal`]).
//!
//! Reliable and best-effort channels are always admitted: they ask for no rate. A
//! [`Service::Guaranteed`] channel at `rate` cells/s is held to two constraints:
//!
//! * **link**: the VC's QoS must reserve `rate` cells/s in this end's sending direction
//!   (`tx`). The rate counts the cells of the frames the leaky bucket releases (TPDU
//!   header, payload, AAL5 trailer and pad: natm-transport's [`Service::Guaranteed`]), so
//!   the TPDU overhead is in it already and the need is the rate itself. What a QoS
//!   reserves is what natm's CAC books for it: CBR its PCR (`pcr=`, else `max_pcr=`;
//!   `max` is the whole link, which the host's CAC checked, so it covers any rate); VBR
//!   its SCR (the PCR is for bursts only, the long-run rate is the SCR). UBR reserves
//!   nothing, so a UBR VC cannot carry a guaranteed channel: linux-atm users expect CBR
//!   for a rate, and a UBR VC beside a bulk flow would lose the rate to it. ABR is not
//!   admitted by natm's CAC at all. Each end checks its own sending direction; the far
//!   end checks its own.
//! * **host**: with a [`HostBudget`] (the host's per-TPDU costs from `natm perf
//!   calibrate`), the CPU time the channel's TPDUs take must fit the budget's share of one
//!   CPU. The channel is duplex, each direction at `rate`, so every TPDU is counted once
//!   sent and once received: `rate / cells per TPDU × (send + receive cost of one TPDU) ≤
//!   share × 1 s`, with full TPDUs of the channel's TPDU size. A stream of messages
//!   smaller than the TPDU size makes more TPDUs per cell than that: such an application
//!   sets the TPDU size to its message size, and is admitted for what it sends. Without a
//!   budget (no calibration), the channel is admitted with no host check. The
//!   calibration's wake-up is not counted: where the budget binds, a channel's ends are
//!   busy and poll rather than sleep (adaptive notification), while a receiver woken per
//!   TPDU (~20 µs a wake-up on the development VM) could not keep 50,000 TPDUs/s at any
//!   share. On that VM (release, 2026-11-27, medians of 3 calibrations) a TPDU sent and
//!   received costs 445 ns and 0.62 ns per frame byte (natm-transport's own part of it
//!   63 ns and 0.05 ns per byte), so the host check admits OC-3c's line rate at every
//!   TPDU size (48-byte TPDUs: 8.5 % of a CPU) and binds only from 1.1 M cells/s
//!   (1-byte TPDUs), 2.1 M (48-byte) or 15.6 M (8 KiB).
//!
//! What it is not: no host-wide accounting. Every channel lives in its own process (the
//! `natm` API has no shared scheduler), so two guaranteed channels are each checked
//! against the whole share; the VC's own reservation, which hostd's CAC booked, is what
//! keeps their cells apart on the link (its cell scheduler serves a CBR VC at its PCR
//! beside any UBR bulk flow: the per-VC "weight" of the seed's work-unit scheduler).

use core::fmt;

use natm_core::{Pcr, Qos, TrafficClass};
use natm_transport::{Config, Service, frame_cells};

/// A cost that grows with the frame: `fixed + per_byte · len`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CostLine {
    /// The fixed part, ns.
    pub fixed_ns: u64,
    /// The part per byte, picoseconds.
    pub per_byte_ps: u64,
}

impl CostLine {
    /// The cost of a frame of `len` bytes, ns.
    pub fn ns(&self, len: usize) -> f64 {
        self.fixed_ns as f64 + self.per_byte_ps as f64 * len as f64 / 1000.0
    }
}

/// The host's processing budget for a guaranteed channel's TPDUs: the CPU cost of
/// sending and of receiving one TPDU (an AAL5 frame of the TPDU's length), as `natm perf
/// calibrate` measured the host's data path, and the share of one CPU a guaranteed
/// channel may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostBudget {
    /// Sending one TPDU.
    pub send: CostLine,
    /// Receiving one TPDU.
    pub recv: CostLine,
    /// The share of one CPU a guaranteed channel's TPDUs may take, per mille (1 to 1000).
    pub share_permille: u32,
}

impl HostBudget {
    /// The share given when none is said: half a CPU, so that the application and hostd
    /// keep the other half.
    pub const DEFAULT_SHARE_PERMILLE: u32 = 500;

    /// A budget of these costs at the default share.
    pub fn new(send: CostLine, recv: CostLine) -> HostBudget {
        HostBudget {
            send,
            recv,
            share_permille: HostBudget::DEFAULT_SHARE_PERMILLE,
        }
    }

    /// Sending and receiving one TPDU of `frame_len` bytes, ns.
    pub fn per_tpdu_ns(&self, frame_len: usize) -> f64 {
        self.send.ns(frame_len) + self.recv.ns(frame_len)
    }
}

/// Why a guaranteed channel was not admitted ([`Error::NotAdmitted`](crate::Error)).
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// The VC's QoS does not reserve the rate.
    Link {
        /// The guaranteed rate asked for, cells/s.
        rate: u32,
        /// The VC's sending direction's class.
        class: TrafficClass,
        /// What it reserves, cells/s (`None`: nothing, UBR or ABR).
        reserved: Option<u32>,
    },
    /// The host's per-TPDU budget cannot take the rate.
    Host {
        /// The guaranteed rate asked for, cells/s.
        rate: u32,
        /// Payload bytes per TPDU.
        tpdu_size: usize,
        /// TPDUs per second each way at the rate, full TPDUs.
        tpdus_per_s: f64,
        /// Sending and receiving one TPDU, ns.
        per_tpdu_ns: f64,
        /// The share of one CPU allowed, per mille.
        share_permille: u32,
    },
}

impl Refusal {
    /// Which constraint: `"link"` or `"host"`.
    pub fn constraint(&self) -> &'static str {
        match self {
            Refusal::Link { .. } => "link",
            Refusal::Host { .. } => "host",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Refusal::Link {
                rate,
                class,
                reserved: Some(have),
            } => {
                let what = if class == TrafficClass::Vbr {
                    "scr"
                } else {
                    "pcr"
                };
                write!(
                    f,
                    "link: the VC's {class} {what} {have} cells/s < {rate} cells/s needed for \
                     guaranteed:{rate}"
                )
            }
            Refusal::Link {
                rate,
                class,
                reserved: None,
            } => write!(
                f,
                "link: the VC is {class}, which reserves no rate, and guaranteed:{rate} needs \
                 {rate} cells/s (open it cbr:pcr={rate} or more)"
            ),
            Refusal::Host {
                rate,
                tpdu_size,
                tpdus_per_s,
                per_tpdu_ns,
                share_permille,
            } => write!(
                f,
                "host: guaranteed:{rate} in {tpdu_size}-byte TPDUs is {tpdus_per_s:.0} TPDUs/s \
                 × {:.2} µs (sent and received, from the calibration) = {:.0} ms of CPU per \
                 s > the budget's {} ms ({:.1} % of one CPU)",
                per_tpdu_ns / 1000.0,
                tpdus_per_s * per_tpdu_ns / 1e6,
                share_permille,
                f64::from(share_permille) / 10.0
            ),
        }
    }
}

impl std::error::Error for Refusal {}

/// The cells/s a QoS reserves for one direction, as natm's CAC books it (`None`: none,
/// `Some(u32::MAX)`: the whole link).
fn reserved(tx: &natm_core::TrafficParams) -> Option<u32> {
    let peak = if tx.pcr.is_zero() { tx.max_pcr } else { tx.pcr };
    match tx.class {
        TrafficClass::Cbr => Some(match peak {
            Pcr::Max => u32::MAX,
            Pcr::Cps(n) => n,
        }),
        TrafficClass::Vbr => Some(tx.scr),
        _ => None,
    }
}

/// Admits a channel of `config` over a VC of `qos` on a host of `budget` (the rules in
/// the [module docs](self)).
pub fn admit(config: &Config, qos: &Qos, budget: Option<&HostBudget>) -> Result<(), Refusal> {
    let Service::Guaranteed { rate } = config.service else {
        return Ok(());
    };
    let have = reserved(&qos.tx);
    if have.is_none_or(|have| have < rate) {
        return Err(Refusal::Link {
            rate,
            class: qos.tx.class,
            reserved: have,
        });
    }
    if let Some(b) = budget {
        let frame = config.max_frame_len();
        let tpdus_per_s = f64::from(rate) / f64::from(frame_cells(frame));
        let per_tpdu_ns = b.per_tpdu_ns(frame);
        if tpdus_per_s * per_tpdu_ns > f64::from(b.share_permille) * 1e6 {
            return Err(Refusal::Host {
                rate,
                tpdu_size: config.tpdu_size,
                tpdus_per_s,
                per_tpdu_ns,
                share_permille: b.share_permille,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guaranteed(rate: u32, tpdu_size: usize) -> Config {
        Config {
            service: Service::Guaranteed { rate },
            tpdu_size,
            max_message: tpdu_size,
            ..Config::default()
        }
    }

    fn qos(text: &str) -> Qos {
        text.parse().unwrap()
    }

    #[test]
    fn only_a_guaranteed_channel_is_held_to_the_vc() {
        for s in [Service::Reliable, Service::BestEffort] {
            let c = Config {
                service: s,
                ..Config::default()
            };
            assert_eq!(admit(&c, &qos("ubr"), None), Ok(()));
        }
    }

    #[test]
    fn cbr_covers_the_rate_up_to_its_pcr() {
        let c = guaranteed(10_000, 8192);
        assert_eq!(admit(&c, &qos("cbr:pcr=10000"), None), Ok(()));
        assert_eq!(admit(&c, &qos("cbr:max_pcr=20000"), None), Ok(()));
        assert_eq!(admit(&c, &qos("cbr:pcr=max"), None), Ok(()));
        let e = admit(&c, &qos("cbr:pcr=9999"), None).unwrap_err();
        assert_eq!(
            e,
            Refusal::Link {
                rate: 10_000,
                class: TrafficClass::Cbr,
                reserved: Some(9_999)
            }
        );
        assert_eq!(e.constraint(), "link");
        assert_eq!(
            e.to_string(),
            "link: the VC's cbr pcr 9999 cells/s < 10000 cells/s needed for guaranteed:10000"
        );
        // Only this end's sending direction counts.
        assert!(admit(&c, &qos("cbr:tx:pcr=100,rx:pcr=20000"), None).is_err());
        assert_eq!(admit(&c, &qos("cbr:tx:pcr=20000,rx:pcr=100"), None), Ok(()));
    }

    #[test]
    fn vbr_is_held_to_its_scr_and_ubr_reserves_nothing() {
        let c = guaranteed(5_000, 1500);
        assert_eq!(
            admit(&c, &qos("vbr:pcr=20000,scr=5000,mbs=10"), None),
            Ok(())
        );
        let e = admit(&c, &qos("vbr:pcr=20000,scr=4000,mbs=10"), None).unwrap_err();
        assert!(e.to_string().contains("vbr scr 4000 cells/s < 5000"), "{e}");
        for text in ["ubr", "ubr:pcr=100000"] {
            let e = admit(&c, &qos(text), None).unwrap_err();
            assert_eq!(
                e.to_string(),
                "link: the VC is ubr, which reserves no rate, and guaranteed:5000 needs 5000 \
                 cells/s (open it cbr:pcr=5000 or more)"
            );
        }
    }

    #[test]
    fn the_host_budget_counts_full_tpdus_both_ways() {
        // 1 µs fixed + 1 ns per byte each way: a 8,204-byte frame (172 cells) costs
        // 2 × 9.204 µs.
        let line = CostLine {
            fixed_ns: 1_000,
            per_byte_ps: 1_000,
        };
        let b = HostBudget::new(line, line);
        assert!((b.per_tpdu_ns(8204) - 18_408.0).abs() < 1e-6);
        let cbr = qos("cbr:pcr=max");
        // 353,207 cells/s (OC-3c) in 172-cell TPDUs: 2,054 TPDUs/s × 18.4 µs = 3.8 %.
        assert_eq!(admit(&guaranteed(353_207, 8192), &cbr, Some(&b)), Ok(()));
        // 48-byte TPDUs: 60-byte frames of 2 cells, 2 × 1.06 µs each; 176,604 TPDUs/s is
        // 37 % of a CPU, within half a CPU; at a share of 10 % it is refused.
        let small = guaranteed(353_207, 48);
        assert_eq!(admit(&small, &cbr, Some(&b)), Ok(()));
        let tight = HostBudget {
            share_permille: 100,
            ..b
        };
        let e = admit(&small, &cbr, Some(&tight)).unwrap_err();
        assert_eq!(e.constraint(), "host");
        assert_eq!(
            e.to_string(),
            "host: guaranteed:353207 in 48-byte TPDUs is 176604 TPDUs/s × 2.12 µs (sent and \
             received, from the calibration) = 374 ms of CPU per s > the budget's 100 ms \
             (10.0 % of one CPU)"
        );
        // The link is checked first: a VC too small is named even when the host is, too.
        let e = admit(&small, &qos("cbr:pcr=10"), Some(&tight)).unwrap_err();
        assert_eq!(e.constraint(), "link");
    }
}

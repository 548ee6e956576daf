//! From a QoS to the adapter's shaping of one VC.

use natm_adapter::UBR_UNSHAPED_PCR;
use natm_core::{Pcr, TrafficClass, TrafficParams};
use natm_traffic::policer::Contract;
use natm_traffic::sched::VcSpec;

/// How the shaped rates relate to the admitted contract.
#[derive(Clone, Copy)]
pub enum Scale<'a> {
    /// At the contract: what every real host does.
    Contract,
    /// Each contract rate mapped by the function (a host that breaks its contract on
    /// purpose, to test the network's policing).
    Rates(&'a dyn Fn(u32) -> u32),
}

impl Scale<'_> {
    /// At the contract.
    pub const CONTRACT: Scale<'static> = Scale::Contract;

    fn apply(&self, rate: u32) -> u32 {
        match self {
            Scale::Contract => rate,
            Scale::Rates(f) => f(rate),
        }
    }
}

impl core::fmt::Debug for Scale<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Scale::Contract => f.write_str("Contract"),
            Scale::Rates(_) => f.write_str("Rates(..)"),
        }
    }
}

/// The shaping of a VC whose transmit side asked for `tx` and was admitted with
/// `contract` on a link of `capacity` cells/s (`link_rate`: `None` when the link itself is
/// unlimited and `capacity` only its nominal rate):
///
/// * CBR at the contract's PCR; VBR at its PCR, SCR (at most the PCR) and MBS;
/// * UBR at its own PCR when it has one; with none (not given, or `max`), the link's rate
///   on a rated link and not shaped at all on an unlimited one ([`UBR_UNSHAPED_PCR`]).
///   Admission resolves a missing PCR to the nominal rate; shaping to that held a memory
///   link to an OC-3c's 135 Mbit/s.
pub fn shaping(
    tx: &TrafficParams,
    contract: &Contract,
    capacity: u32,
    link_rate: Option<u32>,
    scale: Scale<'_>,
) -> VcSpec {
    let s = |r| scale.apply(r);
    match tx.class {
        TrafficClass::Cbr => VcSpec::cbr(s(contract.pcr)),
        TrafficClass::Vbr => VcSpec::nrt_vbr(
            s(contract.pcr),
            s(contract.scr).min(s(contract.pcr)),
            contract.mbs,
        ),
        _ => {
            let own_rate = [tx.pcr, tx.max_pcr]
                .iter()
                .any(|r| !r.is_zero() && *r != Pcr::Max);
            let pcr = match (own_rate, link_rate) {
                (false, None) => UBR_UNSHAPED_PCR,
                _ if contract.pcr == 0 => capacity,
                _ => s(contract.pcr),
            };
            VcSpec::ubr(pcr, 1)
        }
    }
}

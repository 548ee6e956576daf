//! Connection admission control (CAC) for one link.
//!
//! [`Cac`] keeps the books of one link (or one direction of a switch port): its capacity in
//! cells/s, what each admitted connection took, and the totals per class. A new connection
//! is admitted only if what it needs fits in what is free (ATM Forum TM 4.1 §5.2 leaves the
//! CAC algorithm to the network; this is natm's):
//!
//! * **CBR** takes its PCR.
//! * **VBR** takes an *equivalent bandwidth* between its SCR and its PCR (below).
//! * **UBR** takes no bandwidth; up to [`CacConfig::max_ubr`] connections are admitted.
//! * ABR and "no traffic" are refused as not supported (no MCR bookkeeping yet).
//!
//! [`Cac::release`] gives back exactly the [`Reservation`] that [`Cac::admit`] booked, so
//! the books always balance: the totals equal the sum of the live reservations, and are 0
//! when every connection has been released (a property test checks it). A [`Refusal`] names
//! the binding constraint, e.g. `CBR 20000 cells/s refused on sw0:1: 12500 of 353207 cells/s
//! free (CBR 310000 reserved, VBR 30707 equivalent)`.
//!
//! This module does not police or shape (see [`policer`](crate::policer)) and does no
//! signalling: it is the arithmetic a switch or host consults before it accepts a VC.
//!
//! # VBR equivalent bandwidth: lossless allocation of Elwalid, Mitra and Wentworth
//!
//! A VBR source conforming to VBR.1 (PCR, SCR, MBS) sends at worst bursts of MBS cells at
//! PCR, separated by silences that keep its mean at SCR: the extremal on–off source of a
//! dual leaky bucket. Following A. Elwalid, D. Mitra and R. H. Wentworth, "A new approach
//! for allocating buffers and admitting heterogeneous, regulated traffic in an ATM node",
//! IEEE JSAC 13(6):1115–1127, 1995 (the lossless allocation, §II), give each connection a
//! share `c` of the link's capacity `C` and the same share of its buffer `B` (cells), so
//! `b = c · B / C`. A burst lasts `MBS / PCR` and fills the share's buffer at `PCR − c`; it
//! is lossless iff `(PCR − c) · MBS / PCR ≤ c · B / C`, i.e.
//!
//! ```text
//! c ≥ PCR · MBS · C / (MBS · C + PCR · B)        and        c ≥ SCR
//! e = max(SCR, ⌈PCR · MBS · C / (MBS · C + PCR · B)⌉)
//! ```
//!
//! `e` lies between SCR and PCR: with no buffer (`B = 0`) it is PCR (peak allocation); as
//! the buffer's drain time `B / C` grows past the burst's length `MBS / PCR` it falls to
//! SCR. Its sum over connections never exceeding `C` guarantees no loss for conforming
//! sources (their buffer shares add up to at most `B`); it takes no statistical
//! multiplexing gain, which is the conservative choice for a first CAC. The arithmetic is
//! exact integers (`u128`) rounded up, so no floating point is involved.

use alloc::collections::BTreeMap;
use alloc::string::String;
use core::fmt;

use natm_core::{TrafficClass, TrafficParams};

use crate::policer::{Conformance, Contract, ContractError};

/// The link a [`Cac`] books.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacConfig {
    /// The link's name in refusals (e.g. `sw0:1`).
    pub link: String,
    /// The link's capacity, cells/s (e.g. 353207 for OC-3c).
    pub capacity: u32,
    /// The link's buffer, cells, shared by VBR connections (`B` of the equivalent
    /// bandwidth; 0 allocates VBR at PCR).
    pub buffer_cells: u32,
    /// How many UBR connections are admitted at most.
    pub max_ubr: u32,
}

/// A live admission, returned by [`Cac::admit`] to pass to [`Cac::release`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Handle(u64);

/// What one admitted connection took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// Its class: CBR, VBR or UBR.
    pub class: TrafficClass,
    /// The bandwidth booked, cells/s: PCR for CBR, the equivalent bandwidth for VBR, 0 for
    /// UBR.
    pub cells_per_s: u64,
    /// The contract it was admitted with (for UBR, PCR 0 if it gave none or one above the
    /// link: UBR takes nothing, so its PCR is not checked).
    pub contract: Contract,
}

/// Why a connection was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not enough bandwidth is free.
    Bandwidth {
        /// The link.
        link: String,
        /// CBR or VBR.
        class: TrafficClass,
        /// What the connection needs, cells/s (PCR, or VBR's equivalent bandwidth).
        needed: u64,
        /// What is free, cells/s.
        free: u64,
        /// The link's capacity, cells/s.
        capacity: u32,
        /// CBR bandwidth reserved, cells/s.
        cbr: u64,
        /// VBR equivalent bandwidth reserved, cells/s.
        vbr: u64,
    },
    /// All UBR slots are in use.
    UbrLimit {
        /// The link.
        link: String,
        /// The configured maximum.
        max: u32,
    },
    /// The contract is not well formed.
    Contract {
        /// The link.
        link: String,
        /// What is wrong with it.
        error: ContractError,
    },
    /// The class is not admitted by this CAC (ABR, none).
    Unsupported {
        /// The link.
        link: String,
        /// The class.
        class: TrafficClass,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Bandwidth {
                link,
                class,
                needed,
                free,
                capacity,
                cbr,
                vbr,
            } => {
                let class = if *class == TrafficClass::Vbr {
                    "VBR"
                } else {
                    "CBR"
                };
                let eq = if class == "VBR" { " equivalent" } else { "" };
                write!(
                    f,
                    "{class} {needed} cells/s{eq} refused on {link}: {free} of {capacity} \
                     cells/s free (CBR {cbr} reserved, VBR {vbr} equivalent)"
                )
            }
            Refusal::UbrLimit { link, max } => {
                write!(f, "UBR refused on {link}: all {max} UBR connections in use")
            }
            Refusal::Contract { link, error } => write!(f, "refused on {link}: {error}"),
            Refusal::Unsupported { link, class } => write!(
                f,
                "class {class} refused on {link}: only CBR, VBR and UBR are admitted"
            ),
        }
    }
}

impl core::error::Error for Refusal {}

/// [`Cac::release`] was given a handle that is not live (never issued, or released).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownHandle(pub Handle);

impl fmt::Display for UnknownHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no admitted connection has handle {}", self.0.0)
    }
}

impl core::error::Error for UnknownHandle {}

/// The equivalent bandwidth of a VBR contract on a link of `capacity` cells/s with
/// `buffer_cells` of buffer (see the module doc): `max(SCR, ⌈PCR·MBS·C / (MBS·C + PCR·B)⌉)`,
/// always between SCR and PCR. A link of capacity 0 gives PCR.
pub fn equivalent_bandwidth(contract: &Contract, capacity: u32, buffer_cells: u32) -> u64 {
    let (pcr, mbs) = (u128::from(contract.pcr), u128::from(contract.mbs));
    let c = u128::from(capacity);
    let denominator = mbs * c + pcr * u128::from(buffer_cells);
    let lossless = if denominator == 0 {
        pcr
    } else {
        (pcr * mbs * c).div_ceil(denominator)
    };
    // ≤ PCR ≤ u32::MAX, so the conversion cannot fail.
    let lossless = u64::try_from(lossless).unwrap_or(u64::MAX);
    lossless.max(u64::from(contract.scr))
}

/// Connection admission control for one link.
///
/// Call contract: [`admit`](Self::admit) a connection's traffic parameters (the direction
/// that uses this link); keep the [`Handle`]; [`release`](Self::release) it when the
/// connection ends. No time is involved. Nothing here panics.
#[derive(Clone, Debug)]
pub struct Cac {
    config: CacConfig,
    cbr: u64,
    vbr: u64,
    ubr: u32,
    live: BTreeMap<Handle, Reservation>,
    next: u64,
}

impl Cac {
    /// Empty books for the link.
    pub fn new(config: CacConfig) -> Self {
        Cac {
            config,
            cbr: 0,
            vbr: 0,
            ubr: 0,
            live: BTreeMap::new(),
            next: 0,
        }
    }

    /// The link.
    pub fn config(&self) -> &CacConfig {
        &self.config
    }

    /// CBR bandwidth reserved, cells/s.
    pub fn reserved_cbr(&self) -> u64 {
        self.cbr
    }

    /// VBR equivalent bandwidth reserved, cells/s.
    pub fn reserved_vbr(&self) -> u64 {
        self.vbr
    }

    /// UBR connections admitted.
    pub fn ubr_count(&self) -> u32 {
        self.ubr
    }

    /// Bandwidth still free, cells/s.
    pub fn free(&self) -> u64 {
        u64::from(self.config.capacity).saturating_sub(self.cbr + self.vbr)
    }

    /// The live reservations, in handle order.
    pub fn reservations(&self) -> impl Iterator<Item = (Handle, &Reservation)> {
        self.live.iter().map(|(h, r)| (*h, r))
    }

    /// The reservation behind a live handle.
    pub fn reservation(&self, handle: Handle) -> Option<&Reservation> {
        self.live.get(&handle)
    }

    /// What a connection with these parameters would take, without booking it: the
    /// reservation, or why it would be refused.
    pub fn assess(&self, params: &TrafficParams) -> Result<Reservation, Refusal> {
        let link = || self.config.link.clone();
        let contract_error = |error| Refusal::Contract {
            link: self.config.link.clone(),
            error,
        };
        let class = params.class;
        let (contract, cells_per_s) = match class {
            TrafficClass::Ubr => {
                if self.ubr >= self.config.max_ubr {
                    return Err(Refusal::UbrLimit {
                        link: link(),
                        max: self.config.max_ubr,
                    });
                }
                let contract =
                    Contract::from_params(params, self.config.capacity).unwrap_or_default();
                return Ok(Reservation {
                    class,
                    cells_per_s: 0,
                    contract,
                });
            }
            TrafficClass::Cbr => {
                let c =
                    Contract::from_params(params, self.config.capacity).map_err(contract_error)?;
                c.check(Conformance::Cbr1).map_err(contract_error)?;
                (c, u64::from(c.pcr))
            }
            TrafficClass::Vbr => {
                let c =
                    Contract::from_params(params, self.config.capacity).map_err(contract_error)?;
                c.check(Conformance::Vbr1).map_err(contract_error)?;
                let e = equivalent_bandwidth(&c, self.config.capacity, self.config.buffer_cells);
                (c, e)
            }
            TrafficClass::Abr | TrafficClass::None => {
                return Err(Refusal::Unsupported {
                    link: link(),
                    class,
                });
            }
        };
        let free = self.free();
        if cells_per_s > free {
            return Err(Refusal::Bandwidth {
                link: link(),
                class,
                needed: cells_per_s,
                free,
                capacity: self.config.capacity,
                cbr: self.cbr,
                vbr: self.vbr,
            });
        }
        Ok(Reservation {
            class,
            cells_per_s,
            contract,
        })
    }

    /// Admits a connection with these parameters if it fits, booking what it takes.
    pub fn admit(&mut self, params: &TrafficParams) -> Result<Handle, Refusal> {
        let r = self.assess(params)?;
        match r.class {
            TrafficClass::Cbr => self.cbr += r.cells_per_s,
            TrafficClass::Vbr => self.vbr += r.cells_per_s,
            _ => self.ubr += 1,
        }
        let handle = Handle(self.next);
        self.next += 1;
        self.live.insert(handle, r);
        Ok(handle)
    }

    /// Releases an admitted connection and returns exactly what it had taken.
    pub fn release(&mut self, handle: Handle) -> Result<Reservation, UnknownHandle> {
        let r = self.live.remove(&handle).ok_or(UnknownHandle(handle))?;
        // Planted bug for natm-sim's meta-test (test-only feature): the books stay booked.
        #[cfg(feature = "mutants")]
        if crate::mutants::cac_forgets_release() {
            return Ok(r);
        }
        match r.class {
            TrafficClass::Cbr => self.cbr -= r.cells_per_s,
            TrafficClass::Vbr => self.vbr -= r.cells_per_s,
            _ => self.ubr -= 1,
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec::Vec;
    use natm_core::{Pcr, Qos};
    use proptest::prelude::*;

    const OC3: u32 = natm_core::PhyRate::OC3.cells_per_s();

    fn link(buffer_cells: u32, max_ubr: u32) -> Cac {
        Cac::new(CacConfig {
            link: "sw0:1".into(),
            capacity: OC3,
            buffer_cells,
            max_ubr,
        })
    }

    fn tx(qos: &str) -> TrafficParams {
        qos.parse::<Qos>().unwrap().tx
    }

    #[test]
    fn test_loaded_cbr_refused_names_the_constraint() {
        let mut cac = link(0, 0);
        cac.admit(&tx("cbr:pcr=310000")).unwrap();
        // No buffer: VBR is booked at its PCR.
        cac.admit(&tx("vbr:pcr=30707,scr=1000,mbs=10")).unwrap();
        assert_eq!(cac.free(), 12_500);
        let r = cac.admit(&tx("cbr:pcr=20000")).unwrap_err();
        assert_eq!(
            r.to_string(),
            "CBR 20000 cells/s refused on sw0:1: 12500 of 353207 cells/s free \
             (CBR 310000 reserved, VBR 30707 equivalent)"
        );
        let r = cac.admit(&tx("vbr:pcr=20000,scr=100,mbs=5")).unwrap_err();
        assert_eq!(
            r.to_string(),
            "VBR 20000 cells/s equivalent refused on sw0:1: 12500 of 353207 cells/s free \
             (CBR 310000 reserved, VBR 30707 equivalent)"
        );
        assert_eq!((cac.reserved_cbr(), cac.reserved_vbr()), (310_000, 30_707));
    }

    #[test]
    fn test_empty_cbr_at_link_rate_admitted() {
        let mut cac = link(0, 0);
        let h = cac.admit(&tx("cbr:max_pcr=max")).unwrap();
        assert_eq!(cac.free(), 0);
        assert!(cac.admit(&tx("cbr:pcr=1")).is_err());
        assert_eq!(cac.release(h).unwrap().cells_per_s, u64::from(OC3));
        assert_eq!(cac.free(), u64::from(OC3));
    }

    #[test]
    fn test_any_ubr_over_limit_refused() {
        let mut cac = link(0, 2);
        let a = cac.admit(&tx("ubr")).unwrap();
        cac.admit(&tx("ubr:pcr=1000")).unwrap();
        let r = cac.admit(&tx("ubr")).unwrap_err();
        assert_eq!(
            r.to_string(),
            "UBR refused on sw0:1: all 2 UBR connections in use"
        );
        assert_eq!(cac.free(), u64::from(OC3), "UBR takes no bandwidth");
        cac.release(a).unwrap();
        assert!(cac.admit(&tx("ubr")).is_ok());
    }

    #[test]
    fn test_any_malformed_or_unsupported_refused() {
        let mut cac = link(100, 1);
        let r = cac.admit(&tx("vbr:pcr=100,scr=200,mbs=5")).unwrap_err();
        assert_eq!(
            r.to_string(),
            "refused on sw0:1: SCR 200 cells/s is above PCR 100 cells/s"
        );
        let r = cac.admit(&tx("vbr:pcr=100,scr=50")).unwrap_err();
        assert_eq!(
            r.to_string(),
            "refused on sw0:1: VBR.1 needs an MBS (mbs=) of at least 1"
        );
        let r = cac.admit(&tx("cbr")).unwrap_err();
        assert_eq!(
            r.to_string(),
            "refused on sw0:1: no peak cell rate (pcr and max_pcr are 0)"
        );
        let r = cac.admit(&tx("abr:pcr=100")).unwrap_err();
        assert_eq!(
            r.to_string(),
            "class abr refused on sw0:1: only CBR, VBR and UBR are admitted"
        );
        assert_eq!(cac.reservations().count(), 0);
    }

    #[test]
    fn test_any_release_unknown_handle() {
        let mut cac = link(0, 1);
        let h = cac.admit(&tx("ubr")).unwrap();
        cac.release(h).unwrap();
        assert_eq!(cac.release(h), Err(UnknownHandle(h)));
        assert_eq!(
            UnknownHandle(h).to_string(),
            "no admitted connection has handle 0"
        );
        assert_eq!(cac.ubr_count(), 0);
    }

    #[test]
    fn equivalent_bandwidth_between_scr_and_pcr() {
        let c = Contract {
            pcr: 10_000,
            scr: 1_000,
            mbs: 100,
            ..Contract::default()
        };
        // No buffer: peak allocation.
        assert_eq!(equivalent_bandwidth(&c, OC3, 0), 10_000);
        // B/C = 1000/353207 s ≈ 2.83 ms against a 10 ms burst:
        // ⌈10000·100·353207 / (100·353207 + 10000·1000)⌉ = ⌈7793.6⌉.
        assert_eq!(equivalent_bandwidth(&c, OC3, 1_000), 7_794);
        // A huge buffer: the mean rate.
        assert_eq!(equivalent_bandwidth(&c, OC3, 10_000_000), 1_000);
        assert_eq!(equivalent_bandwidth(&c, 0, 0), 10_000);
        let mut cac = link(1_000, 0);
        let h = cac.admit(&tx("vbr:pcr=10000,scr=1000,mbs=100")).unwrap();
        assert_eq!(cac.reserved_vbr(), 7_794);
        assert_eq!(cac.reservation(h).unwrap().contract.mbs, 100);
    }

    proptest! {
        #[test]
        fn equivalent_bandwidth_bounds(
            pcr in 1u32..=u32::MAX, scr_frac in 0u32..=1000, mbs in 1u32..=u32::MAX,
            capacity: u32, buffer: u32,
        ) {
            let scr = ((u64::from(pcr) * u64::from(scr_frac)) / 1000).max(1) as u32;
            let c = Contract { pcr, scr, mbs, ..Contract::default() };
            let e = equivalent_bandwidth(&c, capacity, buffer);
            prop_assert!(e >= u64::from(scr) && e <= u64::from(pcr));
        }

        /// After any sequence of admits and releases, the totals are the sums of the live
        /// reservations, nothing is over-booked, each release returns what its admit took,
        /// and releasing everything leaves the books at zero.
        #[test]
        fn books_balance(
            buffer in 0u32..100_000,
            max_ubr in 0u32..8,
            ops in proptest::collection::vec((0u8..4, 1u32..200_000, 0u32..=1000, 1u32..500, any::<prop::sample::Index>()), 1..120),
        ) {
            let mut cac = link(buffer, max_ubr);
            let mut model: Vec<(Handle, Reservation)> = Vec::new();
            let mut dead: Vec<Handle> = Vec::new();
            for (op, pcr, scr_frac, mbs, pick) in ops {
                let mut p = TrafficParams { pcr: Pcr::Cps(pcr), ..TrafficParams::default() };
                match op {
                    0 => p.class = TrafficClass::Cbr,
                    1 => {
                        p.class = TrafficClass::Vbr;
                        p.scr = ((u64::from(pcr) * u64::from(scr_frac)) / 1000) as u32;
                        p.mbs = mbs;
                    }
                    2 => p.class = TrafficClass::Ubr,
                    _ => {
                        if !model.is_empty() && pick.index(4) != 0 {
                            let (h, r) = model.remove(pick.index(model.len()));
                            prop_assert_eq!(cac.release(h), Ok(r));
                            dead.push(h);
                        } else if let Some(&h) = dead.last() {
                            prop_assert_eq!(cac.release(h), Err(UnknownHandle(h)));
                        }
                        p.class = TrafficClass::None;
                    }
                }
                if p.class != TrafficClass::None {
                    let before = (cac.reserved_cbr(), cac.reserved_vbr(), cac.ubr_count());
                    match cac.admit(&p) {
                        Ok(h) => {
                            let r = *cac.reservation(h).unwrap();
                            prop_assert!(r.class == p.class);
                            model.push((h, r));
                        }
                        Err(_) => prop_assert_eq!(
                            before,
                            (cac.reserved_cbr(), cac.reserved_vbr(), cac.ubr_count())
                        ),
                    }
                }
                let sum = |class| -> u64 {
                    model.iter().filter(|(_, r)| r.class == class).map(|(_, r)| r.cells_per_s).sum()
                };
                prop_assert_eq!(cac.reserved_cbr(), sum(TrafficClass::Cbr));
                prop_assert_eq!(cac.reserved_vbr(), sum(TrafficClass::Vbr));
                let ubr = model.iter().filter(|(_, r)| r.class == TrafficClass::Ubr).count();
                prop_assert_eq!(cac.ubr_count() as usize, ubr);
                prop_assert!(cac.ubr_count() <= max_ubr);
                prop_assert!(cac.reserved_cbr() + cac.reserved_vbr() <= u64::from(OC3));
                prop_assert_eq!(cac.reservations().count(), model.len());
            }
            for (h, r) in model.drain(..) {
                prop_assert_eq!(cac.release(h), Ok(r));
            }
            prop_assert_eq!((cac.reserved_cbr(), cac.reserved_vbr(), cac.ubr_count()), (0, 0, 0));
            prop_assert_eq!(cac.free(), u64::from(OC3));
        }
    }
}

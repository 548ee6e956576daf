//! Conformance definitions and the usage parameter control (UPC) policer.
//!
//! A [`Contract`] is the traffic descriptor of one direction of a VC (PCR, SCR, MBS,
//! CDVT), checked to be well formed. A [`Conformance`] definition (ATM Forum TM 4.1 §4.5,
//! ITU-T I.371 §4.4 and §5.4) says which GCRAs test which cells, and what happens to a cell
//! that fails. A [`Policer`] applies both to a VC's cells, one at a time, and counts its
//! verdicts. This is the UPC of TM 4.1 §4.6 / I.371 §5.4.3: it decides, it does not queue
//! or delay (that is shaping), and it does not rewrite the cell (the caller sets CLP on
//! [`Verdict::Tag`] and drops on [`Verdict::Discard`]).
//!
//! # The definitions (TM 4.1 §4.5; atm-facts §4.3)
//!
//! With `PCR(0+1)` = GCRA(1/PCR, CDVT) on all cells and `SCR(x)` = GCRA(1/SCR, BT + CDVT),
//! `BT = (MBS − 1)(1/SCR − 1/PCR)`, on the CLP=`x` cells:
//!
//! | definition | cells | a cell failing a test is |
//! |---|---|---|
//! | CBR.1 | `PCR(0+1)` on all | discarded |
//! | VBR.1 | `PCR(0+1)` and `SCR(0+1)` on all | discarded |
//! | VBR.2 | `PCR(0+1)` on all, `SCR(0)` on CLP=0 | discarded |
//! | VBR.3 | `PCR(0+1)` on all, `SCR(0)` on CLP=0 | discarded if it fails `PCR(0+1)`; tagged (CLP := 1) if it is CLP=0 and fails only `SCR(0)` |
//! | UBR.1 | `PCR(0+1)` on all | discarded |
//! | UBR.2 | `PCR(0+1)` on all | discarded |
//!
//! A bucket is advanced only by a cell that passes it and is passed or tagged in the end:
//! a cell that fails one GCRA does not advance the other (TM 4.1 §4.5: "cells that are not
//! conforming are not counted"), and a VBR.3 cell tagged for failing `SCR(0)` advances
//! `PCR(0+1)` only, as it still flows on the CLP=0+1 stream.
//!
//! **Recorded decision, UBR.2.** TM 4.1 gives UBR.2 the same conformance test as UBR.1; its
//! "tagging option" lets the *network* tag CLP=0 cells for its own traffic management, not
//! as a conformance action. So the UPC treats UBR.2 like UBR.1, and
//! [`Conformance::network_may_tag`] reports the option for a congestion manager to use.
//!
//! # Time
//!
//! Time is exact (see [`gcra`](crate::gcra)): no increment is rounded. Arrivals are whole
//! nanoseconds, though, so a source whose PCR does not divide 10⁹ cannot space its cells
//! exactly 1/PCR apart: the k-th cell at `⌈k·10⁹/PCR⌉` ns is sometimes less than 1/PCR after
//! the one before, and GCRA(1/PCR, 0) rightly calls it early. A CDVT of 1 ns (the clock's
//! resolution) absorbs exactly that; a source that sends each cell at the first whole ns
//! the bucket allows ([`Policer::next_conforming`]) conforms with CDVT 0.

use core::fmt;

use natm_core::{Duration, Instant, Pcr, TrafficClass, TrafficParams};

use crate::gcra::{Gcra, GcraError, GcraParams};

/// A conformance definition (ATM Forum TM 4.1 §4.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Conformance {
    /// CBR.1: `PCR(0+1)` on all cells.
    Cbr1,
    /// VBR.1: `PCR(0+1)` and `SCR(0+1)` on all cells.
    Vbr1,
    /// VBR.2: `PCR(0+1)` on all cells, `SCR(0)` on CLP=0 cells; failures are discarded.
    Vbr2,
    /// VBR.3: as VBR.2, but a CLP=0 cell that fails only `SCR(0)` is tagged.
    Vbr3,
    /// UBR.1: `PCR(0+1)` on all cells, no tagging option.
    Ubr1,
    /// UBR.2: `PCR(0+1)` on all cells, with the network's tagging option.
    Ubr2,
}

impl Conformance {
    /// Every definition, in TM 4.1's order.
    pub const ALL: [Conformance; 6] = [
        Conformance::Cbr1,
        Conformance::Vbr1,
        Conformance::Vbr2,
        Conformance::Vbr3,
        Conformance::Ubr1,
        Conformance::Ubr2,
    ];

    /// The name as TM 4.1 writes it: `CBR.1`, `VBR.2`, ….
    pub const fn name(self) -> &'static str {
        match self {
            Conformance::Cbr1 => "CBR.1",
            Conformance::Vbr1 => "VBR.1",
            Conformance::Vbr2 => "VBR.2",
            Conformance::Vbr3 => "VBR.3",
            Conformance::Ubr1 => "UBR.1",
            Conformance::Ubr2 => "UBR.2",
        }
    }

    /// The service category the definition belongs to.
    pub const fn class(self) -> TrafficClass {
        match self {
            Conformance::Cbr1 => TrafficClass::Cbr,
            Conformance::Vbr1 | Conformance::Vbr2 | Conformance::Vbr3 => TrafficClass::Vbr,
            Conformance::Ubr1 | Conformance::Ubr2 => TrafficClass::Ubr,
        }
    }

    /// The default definition of a class (CBR.1, VBR.1, UBR.1); `None` for ABR and none,
    /// which the UPC does not police.
    pub const fn default_for(class: TrafficClass) -> Option<Conformance> {
        match class {
            TrafficClass::Cbr => Some(Conformance::Cbr1),
            TrafficClass::Vbr => Some(Conformance::Vbr1),
            TrafficClass::Ubr => Some(Conformance::Ubr1),
            TrafficClass::None | TrafficClass::Abr => None,
        }
    }

    /// Whether the definition has a sustainable-rate GCRA (needs SCR and MBS).
    pub const fn has_scr(self) -> bool {
        matches!(
            self,
            Conformance::Vbr1 | Conformance::Vbr2 | Conformance::Vbr3
        )
    }

    /// Whether the network may tag CLP=0 cells for traffic management (UBR.2's option).
    /// The UPC itself does not (see the module doc).
    pub const fn network_may_tag(self) -> bool {
        matches!(self, Conformance::Ubr2)
    }
}

/// A conformance definition's name that is not one of TM 4.1's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownConformance;

impl fmt::Display for UnknownConformance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a conformance definition (CBR.1, VBR.1, VBR.2, VBR.3, UBR.1, UBR.2)")
    }
}

impl core::error::Error for UnknownConformance {}

impl core::str::FromStr for Conformance {
    type Err = UnknownConformance;

    /// TM 4.1's names in any case, with or without the dot: `VBR.2`, `vbr.2`, `vbr2`.
    fn from_str(s: &str) -> Result<Conformance, UnknownConformance> {
        Conformance::ALL
            .into_iter()
            .find(|c| {
                let name = c.name();
                s.eq_ignore_ascii_case(name)
                    || (s.len() == 4
                        && s.get(..3)
                            .is_some_and(|h| h.eq_ignore_ascii_case(&name[..3]))
                        && s.get(3..) == name.get(4..))
            })
            .ok_or(UnknownConformance)
    }
}

impl fmt::Display for Conformance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A traffic descriptor for one direction, in cells/s and time.
///
/// `scr` and `mbs` are 0 for a contract without a sustainable rate. Build it from
/// linux-atm's [`TrafficParams`] with [`Contract::from_params`], or directly; a
/// [`Policer`] checks it against its [`Conformance`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Contract {
    /// Peak cell rate, cells/s.
    pub pcr: u32,
    /// Sustainable cell rate, cells/s (0: none).
    pub scr: u32,
    /// Maximum burst size at PCR, cells (0: none).
    pub mbs: u32,
    /// Cell delay variation tolerance for both GCRAs.
    pub cdvt: Duration,
}

/// Why a traffic contract is not well formed for a conformance definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContractError {
    /// No peak cell rate: `pcr` and `max_pcr` are both 0.
    NoPcr,
    /// The PCR is above the link's cell rate.
    PcrAboveLink {
        /// Peak cell rate, cells/s.
        pcr: u32,
        /// The link's cell rate, cells/s.
        link: u32,
    },
    /// The definition needs a sustainable cell rate and SCR is 0.
    NoScr(Conformance),
    /// The definition needs a maximum burst size and MBS is 0.
    NoMbs(Conformance),
    /// The SCR is above the PCR.
    ScrAbovePcr {
        /// Sustainable cell rate, cells/s.
        scr: u32,
        /// Peak cell rate, cells/s.
        pcr: u32,
    },
    /// A parameter is given that the definition does not use (SCR or MBS without VBR).
    NotInDefinition {
        /// The parameter (`"scr"` or `"mbs"`).
        field: &'static str,
        /// The definition.
        def: Conformance,
    },
    /// The class has no conformance definition the UPC polices (ABR, none).
    NotPoliced(TrafficClass),
    /// The GCRA parameters cannot be built (only for a contract that did not pass
    /// [`Contract::check`]).
    Gcra(GcraError),
}

impl fmt::Display for ContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContractError::NoPcr => f.write_str("no peak cell rate (pcr and max_pcr are 0)"),
            ContractError::PcrAboveLink { pcr, link } => {
                write!(f, "PCR {pcr} cells/s is above the link's {link} cells/s")
            }
            ContractError::NoScr(def) => write!(f, "{def} needs an SCR (scr=) above 0"),
            ContractError::NoMbs(def) => write!(f, "{def} needs an MBS (mbs=) of at least 1"),
            ContractError::ScrAbovePcr { scr, pcr } => {
                write!(f, "SCR {scr} cells/s is above PCR {pcr} cells/s")
            }
            ContractError::NotInDefinition { field, def } => {
                write!(f, "{field}= is given but {def} does not use it")
            }
            ContractError::NotPoliced(class) => {
                write!(f, "class {class} has no conformance definition to police")
            }
            ContractError::Gcra(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for ContractError {}

impl Contract {
    /// The contract of one direction of linux-atm's [`TrafficParams`] on a link of
    /// `link_pcr` cells/s: the PCR is `pcr`, or `max_pcr` if `pcr` is 0 (libatm keeps them
    /// apart, see [`natm_core::qos`]), [`Pcr::Max`] being the link rate; SCR, MBS and CDVT
    /// (µs) are the VBR extension's fields. `min_pcr` and `max_sdu` play no part.
    pub fn from_params(p: &TrafficParams, link_pcr: u32) -> Result<Contract, ContractError> {
        let rate = if p.pcr.is_zero() { p.max_pcr } else { p.pcr };
        let pcr = match rate {
            Pcr::Max => link_pcr,
            Pcr::Cps(n) => n,
        };
        if pcr == 0 {
            return Err(ContractError::NoPcr);
        }
        if pcr > link_pcr {
            return Err(ContractError::PcrAboveLink {
                pcr,
                link: link_pcr,
            });
        }
        Ok(Contract {
            pcr,
            scr: p.scr,
            mbs: p.mbs,
            cdvt: Duration::from_micros(u64::from(p.cdvt)),
        })
    }

    /// Checks the contract against a definition: PCR above 0; for VBR an SCR in
    /// `1..=PCR` and an MBS of at least 1; otherwise neither SCR nor MBS.
    pub fn check(&self, def: Conformance) -> Result<(), ContractError> {
        if self.pcr == 0 {
            return Err(ContractError::NoPcr);
        }
        if def.has_scr() {
            if self.scr == 0 {
                return Err(ContractError::NoScr(def));
            }
            if self.scr > self.pcr {
                return Err(ContractError::ScrAbovePcr {
                    scr: self.scr,
                    pcr: self.pcr,
                });
            }
            if self.mbs == 0 {
                return Err(ContractError::NoMbs(def));
            }
        } else if self.scr != 0 {
            return Err(ContractError::NotInDefinition { field: "scr", def });
        } else if self.mbs != 0 {
            return Err(ContractError::NotInDefinition { field: "mbs", def });
        }
        Ok(())
    }

    /// The peak-rate GCRA(1/PCR, CDVT).
    pub fn peak_gcra(&self) -> Result<GcraParams, GcraError> {
        GcraParams::peak(self.pcr, self.cdvt)
    }

    /// The sustainable-rate GCRA(1/SCR, BT + CDVT), BT = (MBS − 1)(1/SCR − 1/PCR).
    pub fn sustainable_gcra(&self) -> Result<GcraParams, GcraError> {
        GcraParams::sustainable(self.pcr, self.scr, self.mbs, self.cdvt)
    }
}

/// What the UPC does with a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The cell conforms: forward it unchanged.
    Pass,
    /// The cell is forwarded with CLP set to 1 (VBR.3).
    Tag,
    /// The cell is dropped.
    Discard,
}

/// Cells counted per verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Cells passed unchanged.
    pub pass: u64,
    /// Cells tagged (CLP := 1) and passed.
    pub tag: u64,
    /// Cells discarded.
    pub discard: u64,
}

/// The usage parameter control of one VC direction: a conformance definition applied to
/// its cells (TM 4.1 §4.5–4.6, I.371 §5.4.3).
///
/// Call contract: [`police`](Self::police) once per cell, in arrival order, with the
/// arrival time and the cell's CLP bit as received; act on the [`Verdict`]. Time must not
/// go backwards (an earlier `now` is treated as the latest one seen by each GCRA).
/// Nothing here panics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policer {
    def: Conformance,
    contract: Contract,
    peak: Gcra,
    sustainable: Option<Gcra>,
    counters: Counters,
}

impl Policer {
    /// A policer for `contract` under definition `def`, if the contract is well formed for
    /// it ([`Contract::check`]).
    pub fn new(def: Conformance, contract: &Contract) -> Result<Policer, ContractError> {
        contract.check(def)?;
        let peak = Gcra::new(contract.peak_gcra().map_err(ContractError::Gcra)?);
        let sustainable = if def.has_scr() {
            let s = contract.sustainable_gcra();
            Some(Gcra::new(s.map_err(ContractError::Gcra)?))
        } else {
            None
        };
        Ok(Policer {
            def,
            contract: *contract,
            peak,
            sustainable,
            counters: Counters::default(),
        })
    }

    /// A policer for one direction of linux-atm's [`TrafficParams`] on a link of
    /// `link_pcr` cells/s ([`Contract::from_params`]), under `def`, or under the class's
    /// default definition ([`Conformance::default_for`]) if `def` is `None`.
    pub fn from_params(
        def: Option<Conformance>,
        params: &TrafficParams,
        link_pcr: u32,
    ) -> Result<Policer, ContractError> {
        let def = match def {
            Some(d) => d,
            None => Conformance::default_for(params.class)
                .ok_or(ContractError::NotPoliced(params.class))?,
        };
        Policer::new(def, &Contract::from_params(params, link_pcr)?)
    }

    /// Checks one direction of a QoS on a link of `link_pcr` cells/s, as `natm qos check`
    /// does: `None` for a direction without traffic, else the policer
    /// [`from_params`](Self::from_params) makes or why the contract is not well formed, and
    /// whether the PCR is the link's (a UBR direction that gives no PCR is checked at the
    /// link rate). `def` must be of the direction's class, as for `from_params`.
    pub fn check(
        def: Option<Conformance>,
        params: &TrafficParams,
        link_pcr: u32,
    ) -> Option<(Result<Policer, ContractError>, bool)> {
        if params.class == TrafficClass::None {
            return None;
        }
        let mut params = *params;
        let pcr_from_link =
            params.class == TrafficClass::Ubr && params.pcr.is_zero() && params.max_pcr.is_zero();
        if pcr_from_link {
            params.max_pcr = Pcr::Max;
        }
        Some((Policer::from_params(def, &params, link_pcr), pcr_from_link))
    }

    /// The conformance definition.
    pub const fn definition(&self) -> Conformance {
        self.def
    }

    /// The contract.
    pub const fn contract(&self) -> &Contract {
        &self.contract
    }

    /// The peak-rate GCRA's parameters.
    pub const fn peak(&self) -> &GcraParams {
        self.peak.params()
    }

    /// The sustainable-rate GCRA's parameters, for the VBR definitions.
    pub fn sustainable(&self) -> Option<&GcraParams> {
        self.sustainable.as_ref().map(Gcra::params)
    }

    /// Cells counted per verdict so far.
    pub const fn counters(&self) -> Counters {
        self.counters
    }

    /// The earliest instant at which a CLP=0 cell would pass (every GCRA that tests it
    /// conforms). A source that sends each cell then never fails.
    pub fn next_conforming(&self) -> Instant {
        let p = self.peak.next_conforming();
        match &self.sustainable {
            Some(s) => p.max(s.next_conforming()),
            None => p,
        }
    }

    /// Decides on a cell arriving at `now` with CLP `clp`, advances the GCRAs the cell
    /// passed, and counts the verdict.
    pub fn police(&mut self, now: Instant, clp: bool) -> Verdict {
        let verdict = self.decide(now, clp);
        // Planted bug for natm-sim's meta-test (test-only feature): every cell passes.
        #[cfg(feature = "mutants")]
        let verdict = if crate::mutants::policer_never_tags() {
            Verdict::Pass
        } else {
            verdict
        };
        let c = &mut self.counters;
        match verdict {
            Verdict::Pass => c.pass += 1,
            Verdict::Tag => c.tag += 1,
            Verdict::Discard => c.discard += 1,
        }
        verdict
    }

    fn decide(&mut self, now: Instant, clp: bool) -> Verdict {
        if !self.peak.is_conforming(now) {
            return Verdict::Discard;
        }
        let Some(scr) = &mut self.sustainable else {
            // CBR.1, UBR.1, UBR.2: PCR(0+1) only.
            self.peak.record(now);
            return Verdict::Pass;
        };
        // SCR(0+1) tests every cell (VBR.1); SCR(0) only CLP=0 cells (VBR.2, VBR.3).
        if clp && self.def != Conformance::Vbr1 {
            self.peak.record(now);
            return Verdict::Pass;
        }
        if scr.is_conforming(now) {
            scr.record(now);
            self.peak.record(now);
            return Verdict::Pass;
        }
        if self.def == Conformance::Vbr3 {
            // Tagged: it stays in the CLP=0+1 flow, so PCR(0+1) counts it; SCR(0) does not.
            self.peak.record(now);
            return Verdict::Tag;
        }
        Verdict::Discard
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    #[test]
    fn check_takes_the_link_rate_for_a_ubr_direction_without_a_pcr() {
        let ubr = TrafficParams {
            class: TrafficClass::Ubr,
            ..TrafficParams::default()
        };
        let (p, from_link) = Policer::check(None, &ubr, 353_207).unwrap();
        assert!(from_link);
        assert_eq!(p.unwrap().contract().pcr, 353_207);
        assert!(Policer::check(None, &TrafficParams::default(), 353_207).is_none());
        let cbr = TrafficParams {
            class: TrafficClass::Cbr,
            ..TrafficParams::default()
        };
        let (p, from_link) = Policer::check(None, &cbr, 353_207).unwrap();
        assert!(!from_link);
        assert!(
            p.is_err(),
            "a CBR direction without a PCR is not well formed"
        );
    }

    const NS_PER_S: u64 = 1_000_000_000;

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    fn ms(n: u64) -> Instant {
        Instant::from_nanos(n * 1_000_000)
    }

    fn vbr(pcr: u32, scr: u32, mbs: u32) -> Contract {
        Contract {
            pcr,
            scr,
            mbs,
            cdvt: Duration::ZERO,
        }
    }

    fn cbr(pcr: u32, cdvt: Duration) -> Contract {
        Contract {
            pcr,
            cdvt,
            ..Contract::default()
        }
    }

    fn policer(def: Conformance, c: Contract) -> Policer {
        Policer::new(def, &c).unwrap()
    }

    /// atm-facts §4.3: PCR 1000, SCR 250, MBS 10 (BT = 27 ms). A back-to-back burst at PCR
    /// passes exactly 10 cells, cells 11–13 fail, cell 14 at t = 13 ms conforms.
    #[test]
    fn test_vbr1_burst_at_pcr_atm_facts_4_3() {
        let mut p = policer(Conformance::Vbr1, vbr(1000, 250, 10));
        let verdicts: Vec<Verdict> = (0..14).map(|k| p.police(ms(k), false)).collect();
        let mut expect = [Verdict::Pass; 14];
        expect[10..13].fill(Verdict::Discard);
        assert_eq!(verdicts, expect);
        assert_eq!(
            p.counters(),
            Counters {
                pass: 11,
                tag: 0,
                discard: 3
            }
        );
        assert_eq!(
            p.sustainable().unwrap().to_string(),
            "GCRA(I = 4000000 ns, L = 27000000 ns)"
        );
    }

    #[test]
    fn test_cbr1_early_cell_discarded() {
        let mut p = policer(Conformance::Cbr1, cbr(1000, Duration::from_micros(100)));
        assert_eq!(p.police(ms(0), false), Verdict::Pass);
        assert_eq!(p.police(at(900_000), false), Verdict::Pass, "within CDVT");
        assert_eq!(p.police(at(1_850_000), true), Verdict::Discard, "CLP=1 too");
        assert_eq!(p.police(at(1_900_000), false), Verdict::Pass);
        assert_eq!(p.counters().discard, 1);
    }

    #[test]
    fn test_vbr1_clp1_cell_tested_by_scr() {
        // SCR(0+1) sees CLP=1 cells: a burst of CLP=1 cells is limited like CLP=0.
        let mut p = policer(Conformance::Vbr1, vbr(1000, 250, 2));
        assert_eq!(p.police(ms(0), true), Verdict::Pass);
        assert_eq!(p.police(ms(1), true), Verdict::Pass);
        assert_eq!(p.police(ms(2), true), Verdict::Discard);
    }

    #[test]
    fn test_vbr1_peak_failure_does_not_advance_scr() {
        let mut p = policer(Conformance::Vbr1, vbr(1000, 250, 2));
        assert_eq!(p.police(ms(0), false), Verdict::Pass);
        // Early for PCR: discarded, and SCR must not count it.
        assert_eq!(p.police(at(500_000), false), Verdict::Discard);
        assert_eq!(
            p.police(ms(1), false),
            Verdict::Pass,
            "second cell of the burst"
        );
    }

    #[test]
    fn test_vbr1_scr_failure_does_not_advance_peak() {
        let c = Contract {
            cdvt: Duration::from_micros(500),
            ..vbr(1000, 250, 2)
        };
        let mut p = policer(Conformance::Vbr1, c);
        assert_eq!(p.police(ms(0), false), Verdict::Pass);
        assert_eq!(p.police(ms(1), false), Verdict::Pass);
        // SCR TAT 8 ms > 2 ms + BT 3 ms + CDVT 0.5 ms.
        assert_eq!(p.police(ms(2), false), Verdict::Discard);
        // PCR(0+1) still has TAT 2 ms (in ticks of 1/1000 ns), not 3 ms.
        assert_eq!(p.peak.tat(), Some(2_000_000 * 1000));
    }

    #[test]
    fn test_vbr2_clp0_scr_failure_discarded() {
        let mut p = policer(Conformance::Vbr2, vbr(1000, 250, 2));
        assert_eq!(p.police(ms(0), false), Verdict::Pass);
        assert_eq!(p.police(ms(1), false), Verdict::Pass);
        assert_eq!(p.police(ms(2), false), Verdict::Discard);
    }

    #[test]
    fn test_vbr2_clp1_cell_skips_scr() {
        let mut p = policer(Conformance::Vbr2, vbr(1000, 250, 2));
        assert_eq!(p.police(ms(0), false), Verdict::Pass);
        assert_eq!(p.police(ms(1), false), Verdict::Pass);
        // SCR(0) is exhausted, but CLP=1 cells only answer to PCR(0+1).
        for k in 2..10 {
            assert_eq!(p.police(ms(k), true), Verdict::Pass);
        }
        // And they did advance PCR(0+1).
        assert_eq!(p.police(at(9_500_000), true), Verdict::Discard);
        // Nor did they fill SCR(0), which has drained by now.
        assert_eq!(p.police(ms(10), false), Verdict::Pass);
    }

    #[test]
    fn test_vbr3_clp0_scr_failure_tagged() {
        let mut p = policer(Conformance::Vbr3, vbr(1000, 250, 2));
        assert_eq!(p.police(ms(0), false), Verdict::Pass);
        assert_eq!(p.police(ms(1), false), Verdict::Pass);
        assert_eq!(p.police(ms(2), false), Verdict::Tag);
        // The tagged cell advanced PCR(0+1): a cell 0.5 ms later is early.
        assert_eq!(p.police(at(2_500_000), false), Verdict::Discard);
        assert_eq!(
            p.counters(),
            Counters {
                pass: 2,
                tag: 1,
                discard: 1
            }
        );
    }

    #[test]
    fn test_vbr3_peak_failure_discarded_not_tagged() {
        let mut p = policer(Conformance::Vbr3, vbr(1000, 250, 2));
        assert_eq!(p.police(ms(0), false), Verdict::Pass);
        assert_eq!(p.police(at(100), false), Verdict::Discard);
        assert_eq!(p.police(at(100), true), Verdict::Discard);
    }

    #[test]
    fn test_vbr3_clp1_cell_skips_scr() {
        let mut p = policer(Conformance::Vbr3, vbr(1000, 250, 1));
        assert_eq!(p.police(ms(0), false), Verdict::Pass);
        assert_eq!(p.police(ms(1), true), Verdict::Pass);
        assert_eq!(p.police(ms(2), false), Verdict::Tag);
    }

    #[test]
    fn test_ubr2_excess_discarded_like_ubr1() {
        for def in [Conformance::Ubr1, Conformance::Ubr2] {
            let mut p = policer(def, cbr(1000, Duration::ZERO));
            assert_eq!(p.police(ms(0), false), Verdict::Pass);
            assert_eq!(p.police(at(999_999), false), Verdict::Discard);
            assert_eq!(p.police(ms(1), false), Verdict::Pass);
        }
        assert!(Conformance::Ubr2.network_may_tag());
        assert!(!Conformance::Ubr1.network_may_tag());
    }

    #[test]
    fn conformance_names() {
        for c in Conformance::ALL {
            assert_eq!(c.name().parse(), Ok(c));
            assert_eq!(c.name().to_lowercase().replace('.', "").parse(), Ok(c));
        }
        assert_eq!("vbr.4".parse::<Conformance>(), Err(UnknownConformance));
        assert_eq!("vbr".parse::<Conformance>(), Err(UnknownConformance));
        assert_eq!("vbré".parse::<Conformance>(), Err(UnknownConformance));
        assert_eq!(Conformance::Vbr3.class(), TrafficClass::Vbr);
    }

    #[test]
    fn malformed_contracts_are_refused() {
        use ContractError as E;
        let err = |def, c: Contract| Policer::new(def, &c).unwrap_err();
        assert_eq!(
            err(Conformance::Vbr1, vbr(100, 200, 5)),
            E::ScrAbovePcr { scr: 200, pcr: 100 }
        );
        assert_eq!(
            err(Conformance::Vbr2, vbr(100, 50, 0)),
            E::NoMbs(Conformance::Vbr2)
        );
        assert_eq!(
            err(Conformance::Vbr3, vbr(100, 0, 5)),
            E::NoScr(Conformance::Vbr3)
        );
        assert_eq!(err(Conformance::Cbr1, vbr(0, 0, 0)), E::NoPcr);
        assert_eq!(
            err(Conformance::Cbr1, vbr(100, 50, 0)),
            E::NotInDefinition {
                field: "scr",
                def: Conformance::Cbr1
            }
        );
        assert_eq!(
            err(Conformance::Ubr1, vbr(100, 0, 3)),
            E::NotInDefinition {
                field: "mbs",
                def: Conformance::Ubr1
            }
        );
        assert_eq!(
            E::ScrAbovePcr { scr: 200, pcr: 100 }.to_string(),
            "SCR 200 cells/s is above PCR 100 cells/s"
        );
        assert_eq!(
            E::NoMbs(Conformance::Vbr1).to_string(),
            "VBR.1 needs an MBS (mbs=) of at least 1"
        );
        // SCR = PCR is well formed: BT is 0 whatever the MBS.
        assert!(Policer::new(Conformance::Vbr1, &vbr(100, 100, 7)).is_ok());
    }

    #[test]
    fn from_linux_atm_params() {
        let q: natm_core::Qos = "vbr:pcr=1000,scr=250,mbs=10,cdvt=250".parse().unwrap();
        let p = Policer::from_params(None, &q.tx, natm_core::PhyRate::OC3.cells_per_s()).unwrap();
        assert_eq!(p.definition(), Conformance::Vbr1);
        assert_eq!(
            *p.contract(),
            Contract {
                pcr: 1000,
                scr: 250,
                mbs: 10,
                cdvt: Duration::from_micros(250)
            }
        );
        assert_eq!(p.peak().to_string(), "GCRA(I = 1000000 ns, L = 250000 ns)");
        let q: natm_core::Qos = "cbr:max_pcr=max".parse().unwrap();
        let p = Policer::from_params(None, &q.tx, natm_core::PhyRate::OC3.cells_per_s()).unwrap();
        assert_eq!(p.contract().pcr, 353_207);
        let q: natm_core::Qos = "cbr:pcr=400000".parse().unwrap();
        assert_eq!(
            Policer::from_params(None, &q.tx, natm_core::PhyRate::OC3.cells_per_s())
                .unwrap_err()
                .to_string(),
            "PCR 400000 cells/s is above the link's 353207 cells/s"
        );
        let q: natm_core::Qos = "ubr".parse().unwrap();
        assert_eq!(
            Policer::from_params(None, &q.tx, 1).unwrap_err(),
            ContractError::NoPcr
        );
        let q: natm_core::Qos = "abr:pcr=5".parse().unwrap();
        assert_eq!(
            Policer::from_params(None, &q.tx, 10).unwrap_err(),
            ContractError::NotPoliced(TrafficClass::Abr)
        );
    }

    /// The k-th cell of a source at `num/den` times `pcr`, at the earliest whole ns not
    /// before its ideal time `k · 10⁹ · den / (num · pcr)`.
    fn ideal(k: u64, pcr: u32, num: u64, den: u64) -> Instant {
        let t = (u128::from(k) * u128::from(NS_PER_S) * u128::from(den))
            .div_ceil(u128::from(num) * u128::from(pcr));
        at(t as u64)
    }

    /// Rates that divide 10⁹ (10⁹ = 2⁹·5⁹): their cells can be spaced exactly 1/PCR apart.
    fn exact_pcr() -> impl Strategy<Value = u32> {
        (0u32..=9, 0u32..=9)
            .prop_map(|(a, b)| 2u32.pow(a) * 5u32.pow(b))
            .prop_filter("within OC-12", |&p| p <= 1_412_830)
    }

    proptest! {
        /// A source at exactly its PCR with CDVT 0 is never tagged or discarded, under any
        /// definition: rates whose 1/PCR is a whole number of ns.
        #[test]
        fn at_pcr_with_cdvt_0_always_passes(pcr in exact_pcr(), def in 0usize..6, clp: bool) {
            let def = Conformance::ALL[def];
            let c = if def.has_scr() { vbr(pcr, pcr, 1) } else { cbr(pcr, Duration::ZERO) };
            let mut p = policer(def, c);
            for k in 0..500 {
                prop_assert_eq!(p.police(ideal(k, pcr, 1, 1), clp), Verdict::Pass, "cell {}", k);
            }
        }

        /// Any PCR: a source that sends each cell at the earliest whole ns the contract
        /// allows (never early) is never tagged with CDVT 0; its rate is PCR to within 1 ns
        /// per cell; and the ideal schedule ⌈k/PCR⌉ passes with CDVT = 1 ns, the clock's
        /// resolution.
        #[test]
        fn at_pcr_on_a_ns_clock_passes(pcr in 1u32..=1_412_830, def in 0usize..6) {
            let def = Conformance::ALL[def];
            let c = if def.has_scr() { vbr(pcr, pcr, 1) } else { cbr(pcr, Duration::ZERO) };
            let mut greedy = policer(def, c);
            let mut t = Instant::ZERO;
            for k in 0..500u64 {
                t = greedy.next_conforming();
                prop_assert_eq!(greedy.police(t, false), Verdict::Pass, "cell {}", k);
            }
            let ideal_499 = ideal(499, pcr, 1, 1).as_nanos();
            prop_assert!(t.as_nanos() >= ideal_499 && t.as_nanos() <= ideal_499 + 499);
            let c = Contract { cdvt: Duration::from_nanos(1), ..c };
            let mut p = policer(def, c);
            for k in 0..500 {
                prop_assert_eq!(p.police(ideal(k, pcr, 1, 1), false), Verdict::Pass, "cell {}", k);
            }
        }

        /// A source 1 % above its PCR is caught (with CDVT 0 or 1 ns): some cell is
        /// discarded (all definitions fail PCR(0+1) by discarding).
        #[test]
        fn above_pcr_is_caught(pcr in 1u32..=1_412_830, def in 0usize..6, cdvt in 0u64..=1) {
            let def = Conformance::ALL[def];
            let c = if def.has_scr() { vbr(pcr, pcr, 1) } else { cbr(pcr, Duration::ZERO) };
            let mut p = policer(def, Contract { cdvt: Duration::from_nanos(cdvt), ..c });
            let verdicts: Vec<Verdict> =
                (0..200).map(|k| p.police(ideal(k, pcr, 101, 100), false)).collect();
            prop_assert!(verdicts.contains(&Verdict::Discard));
            prop_assert_eq!(verdicts[0], Verdict::Pass);
        }

        /// A VBR.3 source above SCR but within PCR is tagged, not discarded.
        #[test]
        fn vbr3_above_scr_is_tagged(pcr in exact_pcr(), mbs in 1u32..50) {
            prop_assume!(pcr >= 2);
            let mut p = policer(Conformance::Vbr3, vbr(pcr, pcr / 2, mbs));
            let verdicts: Vec<Verdict> =
                (0..200).map(|k| p.police(ideal(k, pcr, 1, 1), false)).collect();
            prop_assert!(verdicts.contains(&Verdict::Tag));
            prop_assert!(!verdicts.contains(&Verdict::Discard));
        }

        /// A burst of exactly MBS cells at PCR passes VBR.1 and MBS + 1 does not, cells
        /// spaced exactly 1/PCR (PCR divides 10⁹), CDVT 0.
        #[test]
        fn mbs_burst_exact(pcr in exact_pcr(), scr_frac in 1u32..1000, mbs in 1u32..300) {
            let scr = (u64::from(pcr) * u64::from(scr_frac) / 1000) as u32;
            prop_assume!(scr >= 1 && scr < pcr);
            let mut p = policer(Conformance::Vbr1, vbr(pcr, scr, mbs));
            for k in 0..u64::from(mbs) {
                prop_assert_eq!(p.police(ideal(k, pcr, 1, 1), false), Verdict::Pass, "cell {}", k);
            }
            prop_assert_eq!(p.police(ideal(mbs.into(), pcr, 1, 1), false), Verdict::Discard);
        }

        /// The same for any PCR on a ns clock: cells at ⌈k/PCR⌉ with CDVT = 1 ns (which
        /// the ns clock needs) pass for exactly MBS cells, when 1/SCR − 1/PCR ≥ 2 ns, so
        /// that the CDVT and the rounding cannot hide a whole extra cell.
        #[test]
        fn mbs_burst_on_a_ns_clock(pcr in 2u32..=1_412_830, scr_frac in 1u32..1000, mbs in 1u32..300) {
            let scr = (u64::from(pcr) * u64::from(scr_frac) / 1000) as u32;
            prop_assume!(scr >= 1 && scr < pcr);
            // 10⁹/SCR − 10⁹/PCR ≥ 2  ⇔  10⁹ (PCR − SCR) ≥ 2 PCR SCR.
            prop_assume!(NS_PER_S * u64::from(pcr - scr) >= 2 * u64::from(pcr) * u64::from(scr));
            let c = Contract { cdvt: Duration::from_nanos(1), ..vbr(pcr, scr, mbs) };
            let mut p = policer(Conformance::Vbr1, c);
            for k in 0..u64::from(mbs) {
                prop_assert_eq!(p.police(ideal(k, pcr, 1, 1), false), Verdict::Pass, "cell {}", k);
            }
            prop_assert_eq!(p.police(ideal(mbs.into(), pcr, 1, 1), false), Verdict::Discard);
        }
    }
}

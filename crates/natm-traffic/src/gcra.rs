//! The Generic Cell Rate Algorithm, GCRA(I, L), in exact integer time.
//!
//! GCRA(I, L) decides whether each cell of a flow conforms to a rate with increment `I`
//! (the ideal spacing, 1/rate) and limit `L` (the tolerance). It is defined in ITU-T I.371
//! §4.4.3.2 and ATM Forum TM 4.1 §4.4.3 in two equivalent forms, both implemented here:
//!
//! * [`Gcra`], the **virtual scheduling** form: the state is the theoretical arrival time
//!   TAT. A cell arriving at `ta` is non-conforming if `TAT > ta + L` (TAT is unchanged);
//!   otherwise it conforms and `TAT = max(TAT, ta) + I`. The first cell sets TAT to `ta`.
//! * [`LeakyBucket`], the **continuous-state leaky bucket**: the state is the bucket
//!   content `X` and the last conformance time `LCT`. `X' = max(0, X − (ta − LCT))`; if
//!   `X' > L` the cell is non-conforming (nothing changes), else `X = X' + I`, `LCT = ta`.
//!
//! `X'` equals `TAT − ta` whenever that is positive, so the two forms decide identically;
//! a property test checks it on random parameters and arrivals.
//!
//! # Exact time: ticks
//!
//! Arrivals are whole nanoseconds, but an increment 1/PCR rarely is (OC-3c: 2831.2 ns), and
//! rounding it would let a flow drift from its contract by a cell every few thousand. So a
//! bucket does not count in nanoseconds but in **ticks** of `1 / ticks_per_ns` ns, chosen
//! per bucket so that `I` and `L` are whole numbers of ticks:
//!
//! * a peak-rate bucket GCRA(1/PCR, CDVT) counts `PCR` ticks per ns, so `I = 10⁹` ticks
//!   exactly and `L = CDVT_ns · PCR` ([`GcraParams::peak`]);
//! * a sustainable-rate bucket GCRA(1/SCR, BT + CDVT) with BT = (MBS − 1)(1/SCR − 1/PCR)
//!   counts `PCR · SCR` ticks per ns, so `I = 10⁹ · PCR`, `BT = (MBS − 1) · 10⁹ · (PCR − SCR)`
//!   and `CDVT = CDVT_ns · PCR · SCR`, all exact ([`GcraParams::sustainable`]);
//! * [`GcraParams::from_nanos`] gives ns ticks (`ticks_per_ns = 1`) for whole-ns `I` and `L`,
//!   and [`GcraParams::new`] any other exact rational scheme.
//!
//! An arrival at `t` ns is `t · ticks_per_ns` ticks. State is `u128`: `u64` ns times a
//! `u64` scale always fits, and additions saturate instead of wrapping (at the end of
//! time, 584 years out).
//!
//! # Call contract
//!
//! Call [`Gcra::is_conforming`] to ask, [`Gcra::record`] to account a cell that passed, or
//! [`Gcra::handle_cell`] to do both; the split lets a dual-bucket policer advance a bucket
//! only when the cell passes every test. `now` must not go backwards: an arrival earlier
//! than the last recorded one is treated as arriving at that last one (clamped), so time
//! never runs backwards inside a bucket. Nothing here panics.

use core::fmt;

use natm_core::{Duration, Instant};

/// Nanoseconds per second.
pub(crate) const NS_PER_S: u128 = 1_000_000_000;

/// The parameters of a GCRA(I, L), in ticks of `1 / ticks_per_ns` ns (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GcraParams {
    increment: u128,
    limit: u128,
    ticks_per_ns: u64,
}

/// Why GCRA parameters cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcraError {
    /// The tick scale is 0 ticks per nanosecond.
    ZeroScale,
    /// The increment `I` is 0: every cell would conform.
    ZeroIncrement,
    /// A cell rate is 0 cells/s.
    ZeroRate {
        /// Which rate (`"PCR"` or `"SCR"`).
        which: &'static str,
    },
    /// The sustainable cell rate is above the peak cell rate.
    ScrAbovePcr {
        /// Sustainable cell rate, cells/s.
        scr: u32,
        /// Peak cell rate, cells/s.
        pcr: u32,
    },
    /// The maximum burst size is 0 cells (it counts the first cell, so it is at least 1).
    ZeroMbs,
}

impl fmt::Display for GcraError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GcraError::ZeroScale => f.write_str("GCRA tick scale is 0 ticks per ns"),
            GcraError::ZeroIncrement => f.write_str("GCRA increment I is 0"),
            GcraError::ZeroRate { which } => write!(f, "{which} is 0 cells/s"),
            GcraError::ScrAbovePcr { scr, pcr } => {
                write!(f, "SCR {scr} cells/s is above PCR {pcr} cells/s")
            }
            GcraError::ZeroMbs => f.write_str("MBS is 0 cells (it must be at least 1)"),
        }
    }
}

impl core::error::Error for GcraError {}

impl GcraParams {
    /// GCRA(I, L) with `increment` and `limit` in ticks of `1 / ticks_per_ns` ns.
    pub const fn new(increment: u128, limit: u128, ticks_per_ns: u64) -> Result<Self, GcraError> {
        if ticks_per_ns == 0 {
            return Err(GcraError::ZeroScale);
        }
        if increment == 0 {
            return Err(GcraError::ZeroIncrement);
        }
        Ok(GcraParams {
            increment,
            limit,
            ticks_per_ns,
        })
    }

    /// GCRA(I, L) with `I` and `L` in whole nanoseconds (one tick per ns). With the unit of
    /// time taken as 1 ns, this is also the "unit time" GCRA of the textbook vectors.
    pub const fn from_nanos(increment_ns: u64, limit_ns: u64) -> Result<Self, GcraError> {
        GcraParams::new(increment_ns as u128, limit_ns as u128, 1)
    }

    /// The peak-rate GCRA(1/PCR, CDVT), exactly: `PCR` ticks per ns, `I = 10⁹` ticks.
    pub fn peak(pcr: u32, cdvt: Duration) -> Result<Self, GcraError> {
        if pcr == 0 {
            return Err(GcraError::ZeroRate { which: "PCR" });
        }
        let limit = u128::from(cdvt.as_nanos()) * u128::from(pcr);
        GcraParams::new(NS_PER_S, limit, u64::from(pcr))
    }

    /// The sustainable-rate GCRA(1/SCR, BT + CDVT) with the burst tolerance
    /// `BT = (MBS − 1)(1/SCR − 1/PCR)` of TM 4.1 §4.4.3 (I.371 §4.4.3.2), exactly:
    /// `PCR · SCR` ticks per ns, `I = 10⁹ · PCR`, `BT = (MBS − 1) · 10⁹ · (PCR − SCR)`.
    pub fn sustainable(pcr: u32, scr: u32, mbs: u32, cdvt: Duration) -> Result<Self, GcraError> {
        if pcr == 0 {
            return Err(GcraError::ZeroRate { which: "PCR" });
        }
        if scr == 0 {
            return Err(GcraError::ZeroRate { which: "SCR" });
        }
        if scr > pcr {
            return Err(GcraError::ScrAbovePcr { scr, pcr });
        }
        if mbs == 0 {
            return Err(GcraError::ZeroMbs);
        }
        let scale = u64::from(pcr) * u64::from(scr);
        let bt = u128::from(mbs - 1) * NS_PER_S * u128::from(pcr - scr);
        // Below 2¹²⁸: CDVT·PCR·SCR + BT is largest at SCR = PCR = 2³²−1 (BT = 0), where it
        // is under (2⁶⁴−1)·(2³²−1)²; saturating is only belt and braces.
        let limit = u128::from(cdvt.as_nanos())
            .saturating_mul(u128::from(scale))
            .saturating_add(bt);
        GcraParams::new(NS_PER_S * u128::from(pcr), limit, scale)
    }

    /// The increment `I`, in ticks.
    pub const fn increment(&self) -> u128 {
        self.increment
    }

    /// The limit `L`, in ticks.
    pub const fn limit(&self) -> u128 {
        self.limit
    }

    /// Ticks per nanosecond.
    pub const fn ticks_per_ns(&self) -> u64 {
        self.ticks_per_ns
    }

    /// `now` in this bucket's ticks.
    pub const fn ticks(&self, now: Instant) -> u128 {
        now.as_nanos() as u128 * self.ticks_per_ns as u128
    }

    /// The earliest whole-nanosecond instant not before `ticks` (saturating at the end of
    /// time).
    pub const fn instant_at_or_after(&self, ticks: u128) -> Instant {
        let ns = ticks.div_ceil(self.ticks_per_ns as u128);
        if ns > u64::MAX as u128 {
            Instant::from_nanos(u64::MAX)
        } else {
            Instant::from_nanos(ns as u64)
        }
    }
}

/// Writes `ticks / per_ns` ns with up to three decimals; `≈` marks a truncated value.
fn fmt_ns(f: &mut fmt::Formatter<'_>, ticks: u128, per_ns: u64) -> fmt::Result {
    let per = u128::from(per_ns);
    let (whole, rest) = (ticks / per, ticks % per);
    if rest == 0 {
        return write!(f, "{whole} ns");
    }
    let milli = rest * 1000 / per;
    let approx = if rest * 1000 % per == 0 { "" } else { "≈" };
    let frac = alloc::format!("{milli:03}");
    write!(f, "{approx}{whole}.{} ns", frac.trim_end_matches('0'))
}

impl fmt::Display for GcraParams {
    /// `GCRA(I = 2831.213 ns, L = 0 ns)`, exact values with up to three decimals (`≈` when
    /// truncated).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GCRA(I = ")?;
        fmt_ns(f, self.increment, self.ticks_per_ns)?;
        f.write_str(", L = ")?;
        fmt_ns(f, self.limit, self.ticks_per_ns)?;
        f.write_str(")")
    }
}

/// GCRA(I, L) in the virtual scheduling form (I.371 §4.4.3.2, TM 4.1 annex C): the state is
/// the theoretical arrival time TAT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gcra {
    params: GcraParams,
    /// TAT and the last recorded arrival (the clamp for backward time), in ticks; `None`
    /// before the first cell.
    state: Option<(u128, u128)>,
}

impl Gcra {
    /// A GCRA that has seen no cell.
    pub const fn new(params: GcraParams) -> Self {
        Gcra {
            params,
            state: None,
        }
    }

    /// The parameters.
    pub const fn params(&self) -> &GcraParams {
        &self.params
    }

    /// The theoretical arrival time in ticks, or `None` before the first cell.
    pub const fn tat(&self) -> Option<u128> {
        match self.state {
            Some((tat, _)) => Some(tat),
            None => None,
        }
    }

    /// The arrival `now` in ticks, clamped to the last recorded arrival.
    fn arrival(&self, now: Instant) -> u128 {
        let ta = self.params.ticks(now);
        match self.state {
            Some((_, last)) if last > ta => last,
            _ => ta,
        }
    }

    /// Whether a cell arriving at `now` conforms (`TAT ≤ ta + L`). Changes nothing.
    pub fn is_conforming(&self, now: Instant) -> bool {
        match self.state {
            None => true,
            Some((tat, _)) => tat <= self.arrival(now).saturating_add(self.params.limit),
        }
    }

    /// Accounts a cell that passed at `now`: `TAT = max(TAT, ta) + I`. Normally called only
    /// after [`is_conforming`](Self::is_conforming) said yes.
    pub fn record(&mut self, now: Instant) {
        // Written out, not shared with record_cells: a shared helper cost the CBR.1 policer
        // ~15% (290 vs 350 M decisions/s in one run).
        let ta = self.arrival(now);
        let tat = match self.state {
            Some((tat, _)) if tat > ta => tat,
            _ => ta,
        };
        self.state = Some((tat.saturating_add(self.params.increment), ta));
    }

    /// Accounts `n` cells that passed back to back at `now`, as `n` calls of
    /// [`record`](Self::record) at `now` would: `TAT = max(TAT, ta) + n · I`, in one step.
    /// `n = 0` changes nothing.
    pub fn record_cells(&mut self, now: Instant, n: u32) {
        if n == 0 {
            return;
        }
        let ta = self.arrival(now);
        let tat = match self.state {
            Some((tat, _)) if tat > ta => tat,
            _ => ta,
        };
        let inc = self.params.increment.saturating_mul(u128::from(n));
        self.state = Some((tat.saturating_add(inc), ta));
    }

    /// Decides on a cell arriving at `now` and, if it conforms, records it.
    pub fn handle_cell(&mut self, now: Instant) -> bool {
        let ok = self.is_conforming(now);
        if ok {
            self.record(now);
        }
        ok
    }

    /// The earliest instant from which a cell conforms (`TAT − L`, rounded up to a whole
    /// ns); [`Instant::ZERO`] before the first cell. A shaper's next departure time.
    pub const fn next_conforming(&self) -> Instant {
        match self.state {
            None => Instant::ZERO,
            Some((tat, _)) => self
                .params
                .instant_at_or_after(tat.saturating_sub(self.params.limit)),
        }
    }
}

/// GCRA(I, L) in the continuous-state leaky bucket form (I.371 §4.4.3.2, TM 4.1 annex C):
/// the state is the bucket content X and the last conformance time LCT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeakyBucket {
    params: GcraParams,
    /// X and LCT in ticks; `None` before the first cell.
    state: Option<(u128, u128)>,
}

impl LeakyBucket {
    /// An empty bucket that has seen no cell.
    pub const fn new(params: GcraParams) -> Self {
        LeakyBucket {
            params,
            state: None,
        }
    }

    /// The parameters.
    pub const fn params(&self) -> &GcraParams {
        &self.params
    }

    /// The bucket content X and the last conformance time LCT in ticks, or `None` before
    /// the first cell.
    pub const fn state(&self) -> Option<(u128, u128)> {
        self.state
    }

    /// `(X', ta)`: the content drained up to the arrival `now`, which is clamped to LCT.
    fn drained(&self, now: Instant) -> (u128, u128) {
        let ta = self.params.ticks(now);
        match self.state {
            None => (0, ta),
            Some((x, lct)) => {
                let ta = if ta < lct { lct } else { ta };
                (x.saturating_sub(ta - lct), ta)
            }
        }
    }

    /// Whether a cell arriving at `now` conforms (`X' ≤ L`). Changes nothing.
    pub fn is_conforming(&self, now: Instant) -> bool {
        self.drained(now).0 <= self.params.limit
    }

    /// Accounts a cell that passed at `now`: `X = X' + I`, `LCT = ta`.
    pub fn record(&mut self, now: Instant) {
        let (x, ta) = self.drained(now);
        self.state = Some((x.saturating_add(self.params.increment), ta));
    }

    /// Decides on a cell arriving at `now` and, if it conforms, records it.
    pub fn handle_cell(&mut self, now: Instant) -> bool {
        let ok = self.is_conforming(now);
        if ok {
            self.record(now);
        }
        ok
    }

    /// The earliest instant from which a cell conforms (`LCT + X − L`, rounded up to a whole
    /// ns); [`Instant::ZERO`] before the first cell.
    pub const fn next_conforming(&self) -> Instant {
        match self.state {
            None => Instant::ZERO,
            Some((x, lct)) => self
                .params
                .instant_at_or_after(lct.saturating_add(x).saturating_sub(self.params.limit)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    /// atm-facts §4.2: GCRA(10, 2), arrivals 0, 8, 18, 27, 30, 45, 52, 60, 61, 62.
    #[test]
    fn test_reference_vector_both_forms() {
        let p = GcraParams::from_nanos(10, 2).unwrap();
        let arrivals = [0, 8, 18, 27, 30, 45, 52, 60, 61, 62];
        let expect = [
            true, true, true, false, true, true, false, true, false, false,
        ];
        let tats = [10, 20, 30, 30, 40, 55, 55, 70, 70, 70];
        let mut vs = Gcra::new(p);
        let mut lb = LeakyBucket::new(p);
        for ((&t, &c), &tat) in arrivals.iter().zip(&expect).zip(&tats) {
            assert_eq!(vs.handle_cell(at(t)), c, "virtual scheduling at {t}");
            assert_eq!(lb.handle_cell(at(t)), c, "leaky bucket at {t}");
            assert_eq!(vs.tat(), Some(tat), "TAT after {t}");
            let (x, lct) = lb.state().unwrap();
            assert_eq!(x + lct, tat, "LCT + X after {t}");
        }
    }

    #[test]
    fn test_idle_first_cell() {
        let p = GcraParams::from_nanos(10, 0).unwrap();
        let mut g = Gcra::new(p);
        assert_eq!(g.next_conforming(), Instant::ZERO);
        assert!(g.handle_cell(at(1_000)));
        assert_eq!(g.tat(), Some(1_010));
        assert_eq!(g.next_conforming(), at(1_010));
    }

    #[test]
    fn test_active_early_cell_within_limit() {
        let mut g = Gcra::new(GcraParams::from_nanos(10, 3).unwrap());
        assert!(g.handle_cell(at(0)));
        assert!(g.handle_cell(at(7)));
        assert_eq!(g.tat(), Some(20));
        assert_eq!(g.next_conforming(), at(17));
    }

    #[test]
    fn test_active_early_cell_beyond_limit() {
        let mut g = Gcra::new(GcraParams::from_nanos(10, 3).unwrap());
        assert!(g.handle_cell(at(0)));
        assert!(!g.handle_cell(at(6)));
        assert_eq!(g.tat(), Some(10), "a non-conforming cell leaves TAT alone");
    }

    #[test]
    fn test_active_late_cell_restarts_from_arrival() {
        let mut g = Gcra::new(GcraParams::from_nanos(10, 0).unwrap());
        assert!(g.handle_cell(at(0)));
        assert!(g.handle_cell(at(100)));
        assert_eq!(g.tat(), Some(110));
    }

    #[test]
    fn test_active_backward_time_is_clamped() {
        let p = GcraParams::from_nanos(10, 0).unwrap();
        let (mut g, mut b) = (Gcra::new(p), LeakyBucket::new(p));
        for t in [50, 60] {
            assert!(g.handle_cell(at(t)) && b.handle_cell(at(t)));
        }
        // 40 is treated as 60: TAT 70 > 60, non-conforming in both forms.
        assert!(!g.handle_cell(at(40)));
        assert!(!b.handle_cell(at(40)));
        assert_eq!(g.tat(), Some(70));
    }

    #[test]
    fn oc3_increment_is_exact() {
        // 1/353207 s is 2831.2... ns; 353207 cells at the ideal spacing take exactly 1 s.
        let p = GcraParams::peak(natm_core::PhyRate::OC3.cells_per_s(), Duration::ZERO).unwrap();
        assert_eq!(p.increment(), 1_000_000_000);
        assert_eq!(p.ticks_per_ns(), 353_207);
        let mut g = Gcra::new(p);
        for _ in 0..353_207u64 {
            g.record(Instant::ZERO);
        }
        assert_eq!(g.tat(), Some(353_207 * 1_000_000_000));
        assert_eq!(g.next_conforming(), at(1_000_000_000));
        assert_eq!(p.to_string(), "GCRA(I = ≈2831.2 ns, L = 0 ns)");
    }

    #[test]
    fn sustainable_matches_atm_facts_4_3() {
        // PCR 1000, SCR 250, MBS 10: Ts = 4 ms, BT = 9 · 3 ms = 27 ms.
        let p = GcraParams::sustainable(1000, 250, 10, Duration::ZERO).unwrap();
        assert_eq!(p.to_string(), "GCRA(I = 4000000 ns, L = 27000000 ns)");
        let p = GcraParams::peak(3, Duration::from_micros(1)).unwrap();
        assert_eq!(p.to_string(), "GCRA(I = ≈333333333.333 ns, L = 1000 ns)");
        let p = GcraParams::peak(8, Duration::ZERO).unwrap();
        assert_eq!(p.to_string(), "GCRA(I = 125000000 ns, L = 0 ns)");
        let p = GcraParams::new(5, 0, 2).unwrap();
        assert_eq!(p.to_string(), "GCRA(I = 2.5 ns, L = 0 ns)");
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert_eq!(GcraParams::from_nanos(0, 1), Err(GcraError::ZeroIncrement));
        assert_eq!(GcraParams::new(1, 1, 0), Err(GcraError::ZeroScale));
        assert_eq!(
            GcraParams::peak(0, Duration::ZERO),
            Err(GcraError::ZeroRate { which: "PCR" })
        );
        assert_eq!(
            GcraParams::sustainable(100, 200, 1, Duration::ZERO),
            Err(GcraError::ScrAbovePcr { scr: 200, pcr: 100 })
        );
        assert_eq!(
            GcraParams::sustainable(100, 50, 0, Duration::ZERO),
            Err(GcraError::ZeroMbs)
        );
        assert!(GcraParams::sustainable(u32::MAX, u32::MAX, u32::MAX, Duration::MAX).is_ok());
        assert_eq!(
            GcraError::ScrAbovePcr { scr: 2, pcr: 1 }.to_string(),
            "SCR 2 cells/s is above PCR 1 cells/s"
        );
    }

    #[test]
    fn end_of_time_saturates() {
        let p = GcraParams::new(u128::MAX, 0, u64::MAX).unwrap();
        let (mut g, mut b) = (Gcra::new(p), LeakyBucket::new(p));
        let end = at(u64::MAX);
        assert!(g.handle_cell(end) && b.handle_cell(end));
        assert_eq!(g.tat(), Some(u128::MAX));
        assert!(!g.handle_cell(end) && !b.handle_cell(end));
        assert_eq!(g.next_conforming(), end);
        assert_eq!(b.next_conforming(), end);
    }

    proptest! {
        /// The two forms of I.371 decide identically, and TAT = LCT + X throughout.
        #[test]
        fn forms_agree(
            inc in 1u128..2_000,
            limit in 0u128..5_000,
            scale in 1u64..7,
            gaps in proptest::collection::vec((0u64..1_500, any::<bool>()), 1..200),
        ) {
            let p = GcraParams::new(inc, limit, scale).unwrap();
            let (mut vs, mut lb) = (Gcra::new(p), LeakyBucket::new(p));
            let mut t = 0u64;
            let mut decisions = Vec::new();
            for (gap, back) in gaps {
                // Mostly forward; now and then backwards, which both forms clamp.
                t = if back && gap < 100 { t.saturating_sub(gap) } else { t + gap };
                let a = vs.handle_cell(at(t));
                let b = lb.handle_cell(at(t));
                prop_assert_eq!(a, b, "at {} after {:?}", t, decisions);
                decisions.push(a);
                let (x, lct) = lb.state().unwrap();
                prop_assert_eq!(vs.tat(), Some(lct + x));
                prop_assert_eq!(vs.next_conforming(), lb.next_conforming());
            }
        }

        /// `record_cells(now, n)` is `n` calls of `record(now)`.
        #[test]
        fn record_cells_is_n_records(
            inc in 1u128..2_000,
            scale in 1u64..7,
            steps in proptest::collection::vec((0u64..3_000, 0u32..20), 1..40),
        ) {
            let p = GcraParams::new(inc, 0, scale).unwrap();
            let (mut one, mut many) = (Gcra::new(p), Gcra::new(p));
            for (t, n) in steps {
                one.record_cells(at(t), n);
                for _ in 0..n {
                    many.record(at(t));
                }
                prop_assert_eq!(one, many);
            }
        }

        /// `next_conforming` is exactly the first whole ns at which a cell conforms.
        #[test]
        fn next_conforming_is_the_boundary(
            pcr in 1u32..2_000_000,
            cdvt in 0u64..10_000,
            gaps in proptest::collection::vec(0u64..5_000, 1..50),
        ) {
            let mut g = Gcra::new(GcraParams::peak(pcr, Duration::from_nanos(cdvt)).unwrap());
            let mut t = 0u64;
            for gap in gaps {
                t += gap;
                g.handle_cell(at(t));
                let n = g.next_conforming().as_nanos();
                prop_assert!(g.is_conforming(at(n.max(t))));
                if n > t {
                    prop_assert!(!g.is_conforming(at(n - 1)));
                }
            }
        }
    }
}

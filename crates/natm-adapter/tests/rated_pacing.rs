//! Shaping and pacing on rated links in virtual time (issue 22): the adapter in front of
//! natm-netem's line, as natm's lane engine and hostd's channels drive them, with no clock
//! and no threads.
//!
//! * The lane's engine: an adapter on an unlimited link (each VC shaped to its contract,
//!   with [`DEFAULT_SHAPER_CDV`]) sending into a [`Netem`] line of the link's rate. What a
//!   switch port's UPC sees is the line's output, so conformance is checked on the
//!   departure instants the line hands out ([`Transmit::at`](natm_netem::Transmit::at)):
//!   they include the line's own serialisation, and nothing a later wake-up adds.
//! * hostd's channel: an adapter on a rated link (natm-traffic's scheduler, with the
//!   tolerance `shaper_cdv`) with N VCs, sending into the same line. The property test
//!   checks what the adapter hands the line and what the line sends.
//!
//! Bounds found (R the link rate, τ the adapter's `shaper_cdv`, T = 1/PCR):
//!
//! * A driver that calls at `poll_timeout`, lane engine: the line's departures conform at
//!   CDVT 0 (PCR; VBR also SCR/MBS). The line adds a constant cell time to each cell of a
//!   VC alone on it, so the spacing the shaper made survives. hostd's rated adapter: at
//!   CDVT = one cell time, not 0 (its cells are handed out at their slot's start, the
//!   scheduler's `Transmit::at` may be later in the slot).
//! * A driver that wakes every 200 µs: the cells due since the last wake-up leave
//!   together, back to back on the line. A cell is late by less than 200 µs plus one cell
//!   time and never less than one cell time (the first of every burst waits for the
//!   line), so two cells' spacing is short of the contract's by less than 200 µs: the
//!   departures conform at CDVT = 200 µs. The test asserts CDVT = 200 µs + one cell time
//!   (the bound, one cell of margin for the ns rounding) and that CDVT 0 fails
//!   (the coarse driver really does burst).
//! * N VCs on one rated link, any wake-ups: every cell the adapter hands over takes a link
//!   slot of its own, no later than the slot of `now` and no earlier than the slot of
//!   `now − τ`. So by any instant t at most ⌊t·R⌋ + 1 cells have been handed over (slots
//!   0..=⌊t·R⌋), and in any window [t, t + w) at most ⌈(w + τ)·R⌉ + 1: the catch-up of a
//!   late driver only spends slots it left unused within τ. The line then sends at most
//!   ⌊w·R⌋ + 1 cells in any window of w. The line cannot use the past slots a catch-up
//!   fills, so on a busy link repeated late wake-ups push its queue (1,024 cells) to
//!   full: the driver then keeps the cells the line refuses, as natm-link's `Emulated`
//!   and `LinkSide` do, and nothing is lost.

use natm_adapter::{
    Adapter, AdapterConfig, BufferId, DEFAULT_SHAPER_CDV, RxVcConfig, STAGE_CELLS, Status,
    VecBuffers,
};
use natm_core::{Duration, Instant, LineRate, PhyRate, VcId};
use natm_netem::{Config, Netem};
use natm_traffic::policer::{Contract, Policer, Verdict};
use natm_traffic::sched::VcSpec;
use natm_wire::aal5::cell_count;
use natm_wire::cell::CELL_LEN;
use proptest::prelude::*;

/// OC-3c as the lane's engine and hostd's channels take it: whole cells per second.
const OC3: u32 = PhyRate::OC3.cells_per_s();
/// The wake-up interval of a coarse driver: natm-link's `COALESCE`.
const COARSE: Duration = Duration::from_micros(200);
/// The largest SDU the tests send (the default MTU of classical IP over ATM).
const MAX_SDU: usize = 9180;

/// Nanoseconds in one second, for rate arithmetic.
const NS: u128 = 1_000_000_000;

/// One cell time at `rate` cells/s, rounded up to a whole ns.
fn cell_time(rate: u32) -> u64 {
    NS.div_ceil(u128::from(rate)) as u64
}

/// The VCI of a UNI cell's header.
fn vci_of(cell: &[u8; CELL_LEN]) -> u16 {
    (u16::from(cell[1] & 0x0f) << 12) | (u16::from(cell[2]) << 4) | u16::from(cell[3] >> 4)
}

/// The VC of index `k`: 0.(32 + k).
fn vc_id(k: usize) -> VcId {
    format!("0.{}", 32 + k).parse().unwrap()
}

/// A VC of a rig: its contract and the SDU lengths it sends, all posted at once.
#[derive(Clone, Debug)]
struct Source {
    spec: VcSpec,
    sdus: Vec<usize>,
}

/// One adapter and the line it sends into, driven in virtual time by the caller.
struct Rig {
    adapter: Adapter,
    mem: VecBuffers,
    line: Netem,
    /// Every cell the adapter handed over: when, and its VC's index.
    handed: Vec<(u64, usize)>,
    /// Every cell the line sent: its departure, and its VC's index.
    departed: Vec<(u64, usize)>,
    /// SDUs completed with `Status::Ok`, per VC.
    completed: Vec<usize>,
    /// Cells the adapter handed out that the line has not taken yet.
    pending: std::collections::VecDeque<[u8; CELL_LEN]>,
    /// The longest that backlog was.
    max_backlog: usize,
    now: Instant,
}

impl Rig {
    /// An adapter on `adapter_link` with `sources` open and their SDUs posted at time 0,
    /// in front of an idle line of `line_rate` cells/s.
    fn new(adapter_link: LineRate, line_rate: u32, sources: &[Source]) -> Rig {
        let buffers: usize = sources.iter().map(|s| s.sdus.len()).sum();
        let mut config = AdapterConfig::new(buffers as u32, MAX_SDU);
        config.link = adapter_link;
        config.max_vcs = sources.len();
        config.max_tx_queued = buffers;
        let mut adapter = Adapter::new(config).unwrap();
        let mut mem = VecBuffers::new(buffers as u32, MAX_SDU);
        let mut id = 0;
        for (k, s) in sources.iter().enumerate() {
            adapter
                .open_vc(k as u32, vc_id(k), s.spec, RxVcConfig::aal5(MAX_SDU))
                .unwrap();
            for &len in &s.sdus {
                mem.buffer_mut(BufferId(id)).unwrap()[..len].fill(k as u8);
                adapter.post_tx(Instant::ZERO, BufferId(id), len, k as u32);
                id += 1;
            }
        }
        let line = Netem::new(&Config {
            rate: LineRate::cells(line_rate).unwrap(),
            ..Config::default()
        });
        Rig {
            adapter,
            mem,
            line,
            handed: Vec::new(),
            departed: Vec::new(),
            completed: vec![0; sources.len()],
            pending: std::collections::VecDeque::new(),
            max_backlog: 0,
            now: Instant::ZERO,
        }
    }

    /// One wake-up of the driver at `now`: the adapter's cells go into the line while it
    /// has room, the rest wait in the driver's backlog (as natm-link's `Emulated` refuses
    /// cells and `LinkSide` keeps them), completions are collected, and the cells the
    /// line has sent by `now` are taken.
    fn wake(&mut self, now: Instant) {
        assert!(now >= self.now, "virtual time went back");
        self.now = now;
        self.drain_line(now);
        self.offer(now);
        let mut out = [[0u8; CELL_LEN]; STAGE_CELLS];
        while self.pending.is_empty() {
            let n = self.adapter.poll_transmit(now, &self.mem, &mut out);
            for cell in &out[..n] {
                let k = usize::from(vci_of(cell)) - 32;
                self.handed.push((now.as_nanos(), k));
                self.pending.push_back(*cell);
            }
            self.offer(now);
            if n == 0 {
                break;
            }
        }
        while let Some(c) = self.adapter.poll_completion() {
            assert_eq!(c.status, Status::Ok, "{c:?}");
            self.completed[c.handle.unwrap() as usize] += 1;
        }
        self.drain_line(now);
    }

    /// Offers the driver's backlog to the line while it has room.
    fn offer(&mut self, now: Instant) {
        while self.line.has_room(now) {
            let Some(cell) = self.pending.pop_front() else {
                break;
            };
            self.line.handle_cell(now, cell);
        }
        self.max_backlog = self.max_backlog.max(self.pending.len());
    }

    /// When the driver must wake: the adapter's deadline, or while cells wait for the
    /// line, when it has room.
    fn deadline(&self) -> Option<Instant> {
        if self.pending.is_empty() {
            self.adapter.poll_timeout()
        } else {
            self.line.room_at()
        }
    }

    fn drain_line(&mut self, now: Instant) {
        while let Some(t) = self.line.poll_transmit(now) {
            let k = usize::from(vci_of(&t.cell)) - 32;
            self.departed.push((t.at.as_nanos(), k));
        }
    }

    /// Whether the adapter has cells left to hand over.
    fn busy(&self) -> bool {
        self.adapter.tx_queued() > 0 || !self.pending.is_empty()
    }

    /// Lets the line send what it still holds.
    fn finish(&mut self) {
        while let Some(t) = self.line.poll_timeout() {
            self.drain_line(t);
        }
    }

    /// The instants at which VC `k`'s cells left the line.
    fn departures(&self, k: usize) -> Vec<Instant> {
        self.departed
            .iter()
            .filter(|d| d.1 == k)
            .map(|d| Instant::from_nanos(d.0))
            .collect()
    }
}

/// Drives `rig` at its adapter's `poll_timeout`, exactly, until it has nothing left.
fn drive_on_time(rig: &mut Rig) {
    rig.wake(Instant::ZERO);
    while rig.busy() {
        let t = rig.deadline().expect("a backlog has a deadline");
        rig.wake(t);
    }
    rig.finish();
}

/// Drives `rig` by a timer that fires every `every`, whatever the adapter asks for.
fn drive_every(rig: &mut Rig, every: Duration) {
    let mut now = Instant::ZERO;
    rig.wake(now);
    while rig.busy() {
        now += every;
        rig.wake(now);
    }
    rig.finish();
}

/// Drives `rig` at its adapter's `poll_timeout` late by `lates[k]` ns at its `k`-th
/// wake-up (cycling through `lates`).
fn drive_late(rig: &mut Rig, lates: &[u64]) {
    let mut now = Instant::ZERO;
    rig.wake(now);
    for late in lates.iter().cycle() {
        if !rig.busy() {
            break;
        }
        let due = rig.deadline().expect("a backlog has a deadline");
        now = due.max(now + Duration::from_nanos(1)) + Duration::from_nanos(*late);
        rig.wake(now);
    }
    rig.finish();
}

/// The cells of `sdus`, as AAL5 cuts them.
fn cells_of(sdus: &[usize]) -> usize {
    sdus.iter().map(|&l| cell_count(l)).sum()
}

/// How many of `times` (ascending ns) the UPC of `spec` with `cdvt` passes.
fn policed(spec: &VcSpec, cdvt: Duration, times: &[Instant]) -> Result<(), String> {
    let contract = Contract {
        cdvt,
        ..spec.contract()
    };
    let mut upc = Policer::new(spec.category.conformance(), &contract).unwrap();
    for (i, &t) in times.iter().enumerate() {
        if upc.police(t, false) != Verdict::Pass {
            return Err(format!("cell {i} at {t} of {spec:?} fails at CDVT {cdvt}"));
        }
    }
    Ok(())
}

/// The smallest CDVT, in ns, at which GCRA(1/rate, CDVT) with an extra bucket depth
/// `bt_ns` passes `times`: the virtual scheduling algorithm with an unbounded tolerance,
/// keeping the largest TAT − a (exact, in units of 1/(rate·10⁹) s).
fn min_cdvt(times: &[Instant], rate: u32, bt_ns: u128) -> u64 {
    let rate = u128::from(rate);
    let step = NS; // 1/rate s in these units
    let mut tat: u128 = 0;
    let mut worst: u128 = 0;
    for (i, t) in times.iter().enumerate() {
        let a = u128::from(t.as_nanos()) * rate;
        if i > 0 {
            worst = worst.max(tat.saturating_sub(a));
        }
        tat = tat.max(a) + step;
    }
    (worst.div_ceil(rate).saturating_sub(bt_ns)) as u64
}

/// BT = (MBS − 1)(1/SCR − 1/PCR) in ns, rounded down (so `min_cdvt` errs high).
fn burst_tolerance_ns(spec: &VcSpec) -> u128 {
    let (pcr, scr, mbs) = (
        u128::from(spec.pcr),
        u128::from(spec.scr),
        u128::from(spec.mbs),
    );
    (mbs - 1) * NS * (pcr - scr) / (scr * pcr)
}

/// The contracts of (a) and (b), at OC-3c: a CBR VC, and VBR VCs whose SCR bucket holds
/// them back (rt and nrt).
fn contracts() -> [VcSpec; 4] {
    [
        VcSpec::cbr(20_000),
        VcSpec::cbr(OC3 / 3),
        VcSpec::rt_vbr(100_000, 20_000, 32),
        VcSpec::nrt_vbr(OC3 / 2, 50_000, 100),
    ]
}

/// 40 SDUs of 1,500 bytes and 40 of 64: long enough for the SCR bucket to fill.
fn load() -> Vec<usize> {
    (0..80)
        .map(|i| if i % 2 == 0 { 1500 } else { 64 })
        .collect()
}

/// (a) The lane's engine driven at `poll_timeout`: the line's departures of a CBR VC
/// conform at CDVT 0 to its PCR, and a VBR VC's to PCR and SCR/MBS; every cell leaves.
#[test]
fn lane_on_time_conforms_at_cdvt_0() {
    for spec in contracts() {
        let source = Source { spec, sdus: load() };
        let mut rig = Rig::new(LineRate::Unlimited, OC3, std::slice::from_ref(&source));
        drive_on_time(&mut rig);
        let times = rig.departures(0);
        assert_eq!(times.len(), cells_of(&source.sdus), "{spec:?}");
        assert_eq!(rig.completed[0], source.sdus.len());
        policed(&spec, Duration::ZERO, &times).unwrap();
        // Not vacuous: the VC was held back by its contract, not by the line.
        let span = times.last().unwrap().as_nanos() - times[0].as_nanos();
        let rate = if spec.scr > 0 { spec.scr } else { spec.pcr };
        let floor = (times.len() as u64 - 1 - u64::from(spec.mbs)) * cell_time(rate) / 2;
        assert!(
            span >= floor,
            "{spec:?}: {} cells in {span} ns",
            times.len()
        );
    }
}

/// (a) hostd's channel: an adapter on the rated link, its scheduler's slots, driven at
/// `poll_timeout`. The adapter hands a slot's cell out at the slot's start, while the
/// scheduler's `Transmit::at` (which conforms at CDVT 0) may be later in the slot; the
/// driver does not hold it, so the line's departures conform at CDVT = one cell time, and
/// not at 0.
#[test]
fn rated_adapter_on_time_conforms_at_cdvt_of_one_cell_time() {
    for spec in contracts() {
        let source = Source { spec, sdus: load() };
        let link = LineRate::cells(OC3).unwrap();
        let mut rig = Rig::new(link, OC3, std::slice::from_ref(&source));
        drive_on_time(&mut rig);
        let times = rig.departures(0);
        assert_eq!(times.len(), cells_of(&source.sdus), "{spec:?}");
        policed(&spec, Duration::from_nanos(cell_time(OC3)), &times).unwrap();
    }
}

/// (b) The lane's engine woken every 200 µs: the cells due since the last wake-up leave
/// back to back; the departures conform at CDVT = 200 µs plus one cell time, not at 0,
/// and the contract's rate holds.
#[test]
fn lane_woken_every_200us_conforms_at_200us_plus_a_cell() {
    let cell = cell_time(OC3);
    let cdvt = COARSE + Duration::from_nanos(cell);
    for spec in contracts() {
        let source = Source { spec, sdus: load() };
        let mut rig = Rig::new(LineRate::Unlimited, OC3, std::slice::from_ref(&source));
        drive_every(&mut rig, COARSE);
        let times = rig.departures(0);
        assert_eq!(times.len(), cells_of(&source.sdus), "{spec:?}");
        policed(&spec, cdvt, &times).unwrap();
        let need = min_cdvt(&times, spec.pcr, 0);
        assert!(
            need > 0 && need <= cdvt.as_nanos(),
            "{spec:?}: needs CDVT {need} ns at PCR"
        );
        if spec.scr > 0 {
            let need = min_cdvt(&times, spec.scr, burst_tolerance_ns(&spec));
            assert!(need <= cdvt.as_nanos(), "{spec:?}: needs {need} ns at SCR");
        }
        // The rate holds within 1%: the late driver loses no departure (τ = 1 ms > 200 µs).
        let rate = if spec.scr > 0 { spec.scr } else { spec.pcr };
        let span = times.last().unwrap().as_nanos() - times[0].as_nanos();
        let bt = if spec.scr > 0 {
            burst_tolerance_ns(&spec) as u64
        } else {
            0
        };
        let due = (times.len() as u64 - 1) * (NS as u64) / u64::from(rate) - bt;
        assert!(
            span <= due + due / 100 + COARSE.as_nanos(),
            "{spec:?}: {} cells took {span} ns, the contract {due}",
            times.len()
        );
    }
    // Not vacuous: at CDVT 0 the same departures fail.
    let spec = VcSpec::cbr(OC3 / 3);
    let source = Source { spec, sdus: load() };
    let mut rig = Rig::new(LineRate::Unlimited, OC3, &[source]);
    drive_every(&mut rig, COARSE);
    assert!(policed(&spec, Duration::ZERO, &rig.departures(0)).is_err());
}

/// The most of `times` (ascending) inside any window [t, t + w).
fn max_in_window(times: &[u64], w: u64) -> usize {
    let mut best = 0;
    let mut j = 0;
    for i in 0..times.len() {
        while j < times.len() && times[j] < times[i] + w {
            j += 1;
        }
        best = best.max(j - i);
    }
    best
}

/// ⌈w·R⌉ for w in ns and R in cells/s.
fn cells_in(w: u64, rate: u32) -> u64 {
    (u128::from(w) * u128::from(rate)).div_ceil(NS) as u64
}

/// A VC as drawn: category (0 CBR, 1 rt-VBR, 2 nrt-VBR, 3 UBR), PCR and SCR in ‰ of the
/// link, MBS, UBR weight, SDU lengths.
type Drawn = (u8, u32, u32, u32, u32, Vec<usize>);

fn arb_vc() -> impl Strategy<Value = Drawn> {
    (
        0u8..4,
        5u32..=1000,
        1u32..=1000,
        2u32..64,
        1u32..5,
        proptest::collection::vec(1usize..=MAX_SDU, 1..6),
    )
}

/// Contracts as CAC admits them: CBR PCRs and VBR SCRs add up to at most the link; a VC
/// that would pass it is taken as UBR instead (which CAC admits at any PCR).
fn admit(link: u32, drawn: &[Drawn]) -> Vec<Source> {
    let mut booked = 0u64;
    drawn
        .iter()
        .map(|(cat, pcr, scr, mbs, weight, sdus)| {
            let pcr = (u64::from(link) * u64::from(*pcr) / 1000).max(1) as u32;
            let scr = (u64::from(pcr) * u64::from(*scr) / 1000).clamp(1, u64::from(pcr) - 1);
            let scr = scr.max(1) as u32;
            let booking = match cat {
                0 => u64::from(pcr),
                1 | 2 if pcr > 1 => u64::from(scr),
                _ => u64::MAX,
            };
            let spec = if booking != u64::MAX && booked + booking <= u64::from(link) {
                booked += booking;
                match cat {
                    0 => VcSpec::cbr(pcr),
                    1 => VcSpec::rt_vbr(pcr, scr, *mbs),
                    _ => VcSpec::nrt_vbr(pcr, scr, *mbs),
                }
            } else {
                VcSpec::ubr(pcr, *weight)
            };
            Source {
                spec,
                sdus: sdus.clone(),
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// (c) N VCs with admitted CBR/VBR/UBR contracts on one rated link, driven by wake-ups
    /// late by random amounts (0 to 2 ms after `poll_timeout`, beyond the tolerance too):
    /// the adapter never hands the line more than its slots allow (⌊t·R⌋ + 1 by t, and
    /// ⌈(w + τ)·R⌉ + 1 in any window w), the line never sends more than ⌊w·R⌋ + 1 in any
    /// window w nor has to refuse a cell, and every cell of every SDU leaves.
    #[test]
    fn n_vcs_never_exceed_the_link_rate(
        link in prop_oneof![Just(OC3), Just(96_000u32), Just(1_412_830u32)],
        drawn in proptest::collection::vec(arb_vc(), 1..=16),
        lates in proptest::collection::vec(
            prop_oneof![Just(0u64), 0u64..20_000, 0u64..2_000_000], 1..64),
    ) {
        let sources = admit(link, &drawn);
        let mut rig = Rig::new(LineRate::cells(link).unwrap(), link, &sources);
        drive_late(&mut rig, &lates);

        // No loss at the source: every SDU completed, every cell crossed the line.
        for (k, s) in sources.iter().enumerate() {
            prop_assert_eq!(rig.completed[k], s.sdus.len());
            let cells = rig.departed.iter().filter(|d| d.1 == k).count();
            prop_assert_eq!(cells, cells_of(&s.sdus), "VC {} {:?}", k, s.spec);
        }
        let line = rig.line.counters();
        prop_assert_eq!(line.queue_drops + line.overflow_drops, 0);
        let tau = DEFAULT_SHAPER_CDV.as_nanos();

        // What the adapter handed over: by t, at most the slots up to t's.
        let handed: Vec<u64> = rig.handed.iter().map(|h| h.0).collect();
        for (i, &t) in handed.iter().enumerate() {
            let slots = (u128::from(t) * u128::from(link) / NS) as usize + 1;
            prop_assert!(i < slots, "cell {} handed at {} ns: only {} slots", i, t, slots);
        }
        let slot = cell_time(link);
        for w in [1, slot, 10 * slot, 100_000, 1_000_000, 5_000_000] {
            let bound = cells_in(w + tau, link) + 1;
            let most = max_in_window(&handed, w) as u64;
            prop_assert!(most <= bound, "{} cells handed within {} ns (bound {})", most, w, bound);
        }
        // What the line sent: the link rate.
        let sent: Vec<u64> = rig.departed.iter().map(|d| d.0).collect();
        prop_assert!(sent.windows(2).all(|p| p[0] <= p[1]));
        for w in [1, slot, 10 * slot, 100_000, 1_000_000, 5_000_000] {
            let bound = (u128::from(w) * u128::from(link) / NS) as u64 + 1;
            let most = max_in_window(&sent, w) as u64;
            prop_assert!(most <= bound, "{} cells sent within {} ns (bound {})", most, w, bound);
        }
    }
}

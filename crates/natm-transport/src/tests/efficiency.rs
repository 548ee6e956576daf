//! Goodput under random cell loss, against the ideal `(1 − frame loss rate) × lossless
//! goodput` of issue 25 (≥ 90 % asked). Virtual time: the figures are fixed by the seed,
//! so the bounds are assertions, not timings.
//!
//! Set-up: one reliable direction over OC-3c (353,207 cells/s), the same random cell loss
//! on the data and the ack wire, messages queued back to back, the sender given the path's
//! round trip as the API's hello measures it ([`Endpoint::set_rtt_hint`]), the configured
//! TPDU size the default 8 KiB (as the API's channels have it) or the message's if larger.
//! Goodput is the message bytes over the time from the start to the last message's
//! delivery.
//!
//! The ideal: the issue's `(1 − frame loss) × lossless goodput`, the frame being one TPDU
//! of the message's size (one frame per message) and the lossless goodput that of the same
//! messages in such TPDUs on the same path. With the adaptive TPDU size
//! ([`Config::adaptive_tpdu_size`]) that ideal is the bar to beat; the grid also gives the
//! efficiency against the ideal of the TPDU size the sender ended with.
//!
//! What bounds it on long paths: the window. It grows by one TPDU of the configured size
//! per round trip (171 cells for 8 KiB) whatever the size in use; halved at every random
//! loss it averages about √(2·g/p)·0.87 cells (`g` that growth), ~500 at 0.1 % and ~160
//! at 1 %, which fills a LAN's pipe and a 100 µs one but not the ~700 cells of 1 ms one
//! way: 1,500-byte messages got 87 % and 52 % of that path's ideal there. Three changes
//! took them to 98.6 % and 110 % (the grid's medians, adaptive size): a loss that looks
//! random cuts the window by a fifth, not half (Veno's rule, in `send`); the growth is
//! spread over the acks, so a cut before a window's last ack no longer loses it; and the
//! receive buffer's default went from 256 TPDUs to 512, since behind each hole it holds
//! what arrives for the round trips the hole takes to fill (the adaptive size's 5-cell
//! TPDUs at 1 %: 256 held the line to 74 %).
//!
//! [`Endpoint::set_rtt_hint`]: crate::Endpoint::set_rtt_hint

use alloc::vec;

use super::*;
use crate::testing::PPB;
use crate::tpdu_size::{best_tpdu_size, expected_goodput_ppm};
use crate::{Stats, frame_cells, header::DATA_HEADER_LEN};

/// What one run gave.
struct Measured {
    /// Message bytes/s, from the start to the last message's delivery (or to the time
    /// limit, if not all came).
    goodput: f64,
    /// Messages delivered (all of them, unless the channel stalled).
    delivered: usize,
    /// The sender's figures.
    stats: Stats,
    /// The share of the time the data wire was sending cells.
    busy: f64,
}

/// `n` messages of `size` bytes in TPDUs of `tpdu` bytes (the sender sizing them itself
/// from there on if `adaptive`) under cell loss `p` (ppb) with `delay` one way; the
/// configured TPDU size is the default's or `size`, the larger.
fn measure(
    size: usize,
    tpdu: usize,
    adaptive: bool,
    n: usize,
    p: u64,
    delay: Duration,
    seed: u64,
) -> Measured {
    let wire = WireConfig {
        cell_loss: p,
        ..WireConfig::oc3(delay)
    };
    measure_on(size, tpdu, adaptive, n, &wire, seed)
}

/// As [`measure`], over `wire` both ways.
fn measure_on(
    size: usize,
    tpdu: usize,
    adaptive: bool,
    n: usize,
    wire: &WireConfig,
    seed: u64,
) -> Measured {
    let (p, delay) = (wire.cell_loss, wire.delay);
    let c = Config {
        tpdu_size: size.max(Config::default().tpdu_size),
        max_message: size,
        recv_buffer: Config::default()
            .recv_buffer
            .max(size.div_ceil(tpdu) as u32 + 64),
        adaptive_tpdu_size: adaptive,
        ..Config::default()
    };
    let ab = Isn {
        seq: seed as u32,
        msg: 0,
    };
    let mut pr = pair(c, ab, Isn::default(), wire, seed);
    pr.a.set_tpdu_size(tpdu)
        .expect("a TPDU size the receiver takes");
    // The API's hello measures the path's round trip before any TPDU: one-cell frames.
    let cell = Duration::from_nanos(1_000_000_000u64.div_ceil(wire.rate));
    pr.a.set_rtt_hint(delay + delay + cell + cell);
    let mut a = Outbox::new(seed, vec![size; n]);
    let limit = at(Duration::from_secs(600));
    drive(&mut pr, &mut a, &mut Outbox::default(), limit);
    // Byte-exact and in order, complete or not: a stall is a figure, corruption a failure.
    assert_eq!(
        check_reliable(&pr.b_events, ab, &a, false),
        Ok(()),
        "{size} B in {tpdu} B TPDUs (adaptive {adaptive}) at {p} ppb, {delay:?} one way, seed {seed}"
    );
    let delivered = messages(&pr.b_events);
    let end = match delivered {
        _ if delivered == n => pr.b_events[n - 1].0,
        _ => limit,
    };
    let secs = end.as_nanos() as f64 / 1e9;
    Measured {
        goodput: (delivered * size) as f64 / secs,
        delivered,
        stats: pr.a.stats(),
        busy: pr.ab.stats.cells as f64 / wire.rate as f64 / secs,
    }
}

fn frame_loss(payload: usize, p: u64) -> f64 {
    let cells = frame_cells(DATA_HEADER_LEN + payload);
    1.0 - (1.0 - p as f64 / PPB as f64).powi(cells as i32)
}

/// Asserts ≥ 90 % of the ideal on the LAN for `n` messages of `size` at `p` ppb in TPDUs
/// of the message's size (the mutant tests' check).
#[cfg(feature = "mutants")]
pub(crate) fn lan_goodput_holds(size: usize, n: usize, p: u64) {
    let r = grid_row(size, n, p, LAN, false, &[7]);
    assert!(r.eff[0] >= 0.9, "{}", r.text);
}

const SIZES: [(usize, usize); 2] = [(1_500, 6_000), (8_192, 1_500)];
const LOSSES: [u64; 3] = [100_000, 1_000_000, 10_000_000];
/// One way on a LAN.
const LAN: Duration = Duration::from_micros(5);

/// Checks each (size, loss, adaptive, floor) on `delay` with one seed: efficiency at least
/// `floor`; the table.
fn check(delay: Duration, rows: &[(usize, u64, bool, f64)]) -> String {
    let mut table = String::new();
    let mut low = Vec::new();
    for &(size, p, adaptive, floor) in rows {
        let n = SIZES.iter().find(|s| s.0 == size).map_or(1_000, |s| s.1);
        let r = grid_row(size, n, p, delay, adaptive, &[7]);
        table += &r.text;
        if r.eff[0] < floor {
            low.push((size, p, adaptive, r.eff[0], floor));
        }
    }
    assert!(low.is_empty(), "below the floor: {low:?}\n{table}");
    table
}

/// The acceptance rows on `delay`: ≥ 90 % for 1,500 B and 8 KiB messages at
/// 0.01 %, 0.1 % and 1 % with the adaptive TPDU size, and up to 0.1 % with the message's own
/// TPDU; `fixed_1pc` are the floors of the fixed TPDU at 1 % (1,500 B, 8 KiB), recorded so
/// that a change that loses more is seen.
fn acceptance(delay: Duration, fixed_1pc: [f64; 2]) -> String {
    let mut rows = Vec::new();
    for (k, (size, _)) in SIZES.into_iter().enumerate() {
        for p in LOSSES {
            rows.push((size, p, true, 0.9));
            rows.push((
                size,
                p,
                false,
                if p < 10_000_000 { 0.9 } else { fixed_1pc[k] },
            ));
        }
    }
    check(delay, &rows)
}

/// Issue 25's table on a LAN (5 µs one way). With the message's own TPDU at 1 %, 1,500 B
/// gets the ideal (99.7 %); 8 KiB TPDUs are lost 82 % of the time there (17 %).
#[test]
fn goodput_is_near_the_ideal_under_random_cell_loss() {
    let table = acceptance(LAN, [0.95, 0.15]);
    std::println!("LAN, 5 µs one way:\n{table}");
}

/// The same over 100 µs one way: ≥ 90 % at 1 % with the adaptive size and with a fixed
/// 1,500-byte TPDU (99.6 %; two thirds when the configured size was 1,500 B and the window
/// grew by 32 cells per round trip).
#[test]
fn goodput_on_a_longer_path() {
    let table = acceptance(us(100), [0.95, 0.14]);
    std::println!("100 µs one way:\n{table}");
}

/// 1 ms one way (a pipe of ~700 cells): ≥ 90 % with the adaptive size at every loss. With
/// a fixed TPDU the window is short of the pipe at the higher losses (1,500 B at 1 %:
/// 78 %; 8 KiB at 0.1 %: 89.7 %, and at 1 % it is 82 % lost): those are floors, so that a
/// change that loses more is seen.
#[test]
fn goodput_on_a_long_path() {
    let mut rows = Vec::new();
    for (size, _) in SIZES {
        for p in LOSSES {
            rows.push((size, p, true, 0.9));
        }
    }
    rows.extend([
        (1_500, 1_000_000, false, 0.95),
        (1_500, 10_000_000, false, 0.75),
        (8_192, 1_000_000, false, 0.85),
    ]);
    let table = check(ms(1), &rows);
    std::println!("1 ms one way:\n{table}");
}

/// With `adaptive_tpdu_size` the sender finds the loss itself: 8 KiB messages on the LAN,
/// lossless, then 1 % cell loss, then 0.01 %; the TPDU size goes down to the loss's and up
/// again, every message arrives, and the 1 % phase keeps ≥ 90 % of the ideal.
#[test]
fn tpdu_size_follows_the_loss() {
    tpdu_size_follows_the_loss_with(8_192);
}

/// The same with the default largest message (1 MiB, 4 KiB in each of the receive
/// buffer's 256 TPDUs), as the API's channels have it: the 8 KiB messages still get the
/// small TPDUs at 1 % (a floor from the largest message kept them at 4 KiB).
#[test]
fn tpdu_size_follows_the_loss_whatever_the_largest_message() {
    tpdu_size_follows_the_loss_with(Config::default().max_message);
}

fn tpdu_size_follows_the_loss_with(max_message: usize) {
    let size = 8_192;
    let c = Config {
        tpdu_size: size,
        max_message,
        // A shallow queue, so that the new size reaches the line soon.
        send_queue_limit: (8 * size).max(max_message),
        adaptive_tpdu_size: true,
        ..Config::default()
    };
    let ab = Isn { seq: 3, msg: 0 };
    let mut p = pair(c, ab, Isn::default(), &WireConfig::oc3(us(10)), 11);
    let mut a = Outbox::new(11, vec![size; 200]);
    let mut sizes = Vec::new();
    let mut phase = |p: &mut Pair, a: &mut Outbox, loss: u64, more: usize| {
        let wire = WireConfig {
            cell_loss: loss,
            ..WireConfig::oc3(us(10))
        };
        p.ab.set_config(wire.clone());
        p.ba.set_config(wire);
        a.sizes.extend(vec![size; more]);
        let start = (p.now, messages(&p.b_events));
        drive(
            p,
            a,
            &mut Outbox::default(),
            p.now + Duration::from_secs(60),
        );
        sizes.push(p.a.stats().tpdu_size);
        let bytes = (messages(&p.b_events) - start.1) * size;
        bytes as f64 / ((p.now - start.0).as_nanos() as f64 / 1e9)
    };
    let lossless = phase(&mut p, &mut a, 0, 0);
    let lossy = phase(&mut p, &mut a, 10_000_000, 800);
    phase(&mut p, &mut a, 100_000, 800);
    assert_eq!(check_reliable(&p.b_events, ab, &a, true), Ok(()));
    // Lossless: the configured size (8,188 B would be a hair better: not worth a change).
    assert_eq!(sizes[0], size);
    // 1 %: within a few cells of the best size for it; 0.01 %: large again, carrying
    // within 2 % of the best size's goodput (the sender's threshold for a change).
    let best = best_tpdu_size(10_000_000, size);
    assert!(sizes[1].abs_diff(best) <= 3 * 48, "{sizes:?} best {best}");
    let (low, best) = (100_000, best_tpdu_size(100_000, size));
    assert!(
        expected_goodput_ppm(low, sizes[2]) * 100 >= expected_goodput_ppm(low, best) * 98,
        "{sizes:?} best {best} at 0.01 %"
    );
    let ideal = (1.0 - frame_loss(size, 10_000_000)) * lossless;
    std::println!(
        "adaptive TPDU size: {sizes:?}; at 1 %: {:.2} MB/s, {:.0} % of the ideal {:.2} MB/s",
        lossy / 1e6,
        lossy / ideal * 100.0,
        ideal / 1e6
    );
    assert!(lossy >= 0.9 * ideal);
}

/// One cell of the grid of [`efficiency_grid`]: its figures over several seeds.
struct GridRow {
    /// Efficiency against the ideal of the message's own TPDU, per seed.
    eff: Vec<f64>,
    text: String,
}

/// Seeds of each grid cell.
const GRID_SEEDS: [u64; 3] = [7, 8, 9];

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `size`-byte messages (`n` of them) at `p` ppb with `delay` one way, in TPDUs of the
/// message's size or, if `adaptive`, of the size the sender picks
/// ([`Config::adaptive_tpdu_size`]).
///
/// The ideal is the issue's: `(1 − frame loss) × lossless goodput`, the frame being one
/// TPDU of the message's size, with the lossless goodput of that TPDU size on the same
/// path. With the adaptive size that ideal is the bar to beat; the ideal of the frames it
/// ended with (the same formula at its last TPDU size) is given beside it.
fn grid_row(
    size: usize,
    n: usize,
    p: u64,
    delay: Duration,
    adaptive: bool,
    seeds: &[u64],
) -> GridRow {
    let lossless = measure(size, size, false, n, 0, delay, 1).goodput;
    let ideal = (1.0 - frame_loss(size, p)) * lossless;
    let (mut eff, mut own, mut runs) = (Vec::new(), Vec::new(), Vec::new());
    for &seed in seeds {
        let m = measure(size, size, adaptive, n, p, delay, seed);
        eff.push(m.goodput / ideal);
        let used = m.stats.tpdu_size;
        if adaptive {
            let base = measure(size, used, false, n, 0, delay, 1).goodput;
            own.push(m.goodput / ((1.0 - frame_loss(used, p)) * base));
        }
        runs.push(m);
    }
    let stalls = runs.iter().filter(|m| m.delivered < n).count();
    let mid = &runs[runs.len() / 2];
    let s = &mid.stats;
    let range = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::MAX, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        format!(
            "{:>5.1}% [{:>5.1}–{:>5.1}]",
            median(v) * 100.0,
            lo * 100.0,
            hi * 100.0
        )
    };
    let own_text = if adaptive {
        range(&own)
    } else {
        String::from("         -          ")
    };
    let text = format!(
        "{size:>5} B {:>5} µs {:>4.2}% {:<8} TPDU {:>5} B  ideal {:>5.2} MB/s  eff {}  own {}  busy {:>3.0}%  resent {:>4.1}%  probes {:>4}  RTOs {:>3}  cuts {:>4} (by a fifth {:>4}){}\n",
        delay.as_nanos() / 1_000,
        p as f64 / 1e7,
        if adaptive { "adaptive" } else { "fixed" },
        s.tpdu_size,
        ideal / 1e6,
        range(&eff),
        own_text,
        mid.busy * 100.0,
        (s.smart_resends + s.timeout_resends + s.probes) as f64 / s.tpdus_sent.max(1) as f64
            * 100.0,
        s.probes,
        s.timeouts,
        s.window_cuts,
        s.random_loss_cuts,
        match stalls {
            0 => String::new(),
            k => format!("  STALLED {k} of {}", runs.len()),
        },
    );
    GridRow { eff, text }
}

/// The whole grid: {1,500 B, 8 KiB} × {0.01 %, 0.1 %, 1 %} × {5 µs, 100 µs, 1 ms one way} ×
/// {fixed TPDU, adaptive}, 3 seeds each (median [min–max]); "busy" is the data wire's
/// utilisation, "resent" the resends and probes per new TPDU, those and the counters from
/// the middle seed's run; a run that has not delivered everything after 600 s is a stall.
/// Printed, not asserted (the tests above assert, with one seed):
/// `cargo test -p natm-transport --lib efficiency_grid -- --ignored --nocapture`.
#[test]
#[ignore = "a table to read (about 20 s in a debug build)"]
fn efficiency_grid() {
    let (mut table, mut below) = (String::new(), 0);
    for delay in [us(5), us(100), ms(1)] {
        for (size, n) in SIZES {
            for p in LOSSES {
                for adaptive in [false, true] {
                    let r = grid_row(size, n, p, delay, adaptive, &GRID_SEEDS);
                    table += &r.text;
                    if median(&r.eff) < 0.9 {
                        below += 1;
                    }
                }
            }
        }
    }
    std::println!("{table}{below} of 36 rows below 90 % of the ideal (median)");
}

/// A full queue still halves the window: one flow through a drop-tail queue (a frame that
/// finds it full dropped whole), no random loss, 100 µs one way. At natm-switch's UBR
/// queue (4,096 cells) and at 2,000, deeper than Veno's backlog bound (3 × 171 cells),
/// the cuts are halvings (random: 10 of 45 at 2,000) and the line stays busy (95 % of
/// lossless). The known limit: a queue shallower than the bound, 300 cells, drops one
/// frame at a time under ack clocking, so its drops look random to both tests: 243 of 375
/// cuts by a fifth, the TPDUs shrunk to 364 B, 75 % of lossless (halving at every loss
/// there: 79 %, and the TPDUs at 76 B); a floor records it.
#[test]
fn a_full_queue_halves_the_window() {
    let path = WireConfig::oc3(us(100));
    let lossless = measure_on(8_192, 8_192, false, 2_000, &path, 7).goodput;
    for (q, floor) in [(4_096, 0.9), (2_000, 0.9), (300, 0.7)] {
        let wire = WireConfig {
            queue_cells: q,
            ..path.clone()
        };
        let m = measure_on(8_192, 8_192, true, 2_000, &wire, 7);
        let s = &m.stats;
        let text = format!(
            "queue {q}: {:.1} % of lossless, {} cuts ({} by a fifth), {} resent, {} timeouts, TPDU {} B",
            m.goodput / lossless * 100.0,
            s.window_cuts,
            s.random_loss_cuts,
            s.smart_resends + s.timeout_resends,
            s.timeouts,
            s.tpdu_size
        );
        std::println!("{text}");
        assert!(m.goodput >= floor * lossless, "{text}");
        assert_eq!(s.timeouts, 0, "{text}");
        if floor >= 0.9 {
            assert!(s.window_cuts > 0, "{text}");
            assert!(s.random_loss_cuts * 4 <= s.window_cuts, "{text}");
        }
    }
}

//! The guaranteed service: the rate kept by the leaky bucket, and the adaptive spacing
//! factor.

use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::header::{DATA_HEADER_LEN, Repr};
use crate::{Endpoint, Service, X_MAX, frame_cells, spacing_factor};

/// A backlogged guaranteed sender for `secs` seconds: the (time, cells) of every TPDU.
fn run(rate: u32, size: usize, tpdu: usize, secs: u64) -> (Vec<(Instant, u32)>, Endpoint) {
    let c = Config {
        service: Service::Guaranteed { rate },
        tpdu_size: tpdu,
        max_message: 1 << 16,
        recv_buffer: 4_096,
        ..Config::default()
    };
    let mut e = Endpoint::new(c, Isn::default(), Isn::default()).unwrap();
    let mut buf = vec![0; c.max_frame_len()];
    let (mut now, mut out) = (Instant::ZERO, Vec::new());
    let end = at(Duration::from_secs(secs));
    while now < end {
        while e.queued_bytes() < 64 * size.max(1) {
            e.send_message(now, &vec![1; size]).unwrap();
        }
        while let Some(n) = e.poll_transmit(now, &mut buf) {
            assert!(matches!(Repr::parse(&buf[..n]), Ok(Repr::Data { .. })));
            out.push((now, frame_cells(n)));
        }
        now = e.poll_timeout().expect("a backlog waits for the bucket");
    }
    (out, e)
}

/// Over 10 s the cells sent are within 1 % of the rate, for every message size from 48 B
/// up; and over every interval they stay within the bucket: depth + rate · t.
#[test]
fn test_rate_kept_at_every_size() {
    let rate = 20_000;
    for (size, tpdu) in [
        (48, 48),
        (100, 100),
        (1_500, 1_500),
        (8_192, 8_192),
        (20_000, 4_096),
    ] {
        let (out, e) = run(rate, size, tpdu, 10);
        let secs = 10.0;
        let cells: u64 = out
            .iter()
            .filter(|o| o.0 < at(Duration::from_secs(10)))
            .map(|o| u64::from(o.1))
            .sum();
        let achieved = cells as f64 / secs;
        assert!(
            (achieved / f64::from(rate) - 1.0).abs() <= 0.01,
            "{size} B: {achieved} cells/s for {rate}"
        );
        let depth = u64::from(X_MAX * frame_cells(DATA_HEADER_LEN + tpdu));
        for i in 0..out.len() {
            let mut sum = 0u64;
            for o in &out[i..] {
                sum += u64::from(o.1);
                let span = (o.0 - out[i].0).as_nanos();
                assert!(
                    u128::from(sum) * 1_000_000_000
                        <= u128::from(depth) * 1_000_000_000 + u128::from(rate) * u128::from(span),
                    "{size} B: {sum} cells in {span} ns"
                );
            }
            if i > 200 {
                break;
            }
        }
        // A full backlog: the largest spacing factor.
        assert_eq!(e.stats().spacing, X_MAX);
    }
}

/// The spacing factor follows the backlog when the batch is formed.
#[test]
fn test_spacing_factor_thresholds() {
    let xs: Vec<u32> = [0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 1_000]
        .into_iter()
        .map(spacing_factor)
        .collect();
    assert_eq!(xs, [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]);
    // One TPDU queued at a time: X = 1, an activation per TPDU, spaced at the rate.
    let c = Config {
        service: Service::Guaranteed { rate: 1_000 },
        tpdu_size: 1_000,
        max_message: 1_000,
        ..Config::default()
    };
    let mut e = Endpoint::new(c, Isn::default(), Isn::default()).unwrap();
    let mut buf = vec![0; c.max_frame_len()];
    let mut times = Vec::new();
    let mut now = Instant::ZERO;
    for _ in 0..10 {
        e.send_message(now, &[0; 1_000]).unwrap();
        loop {
            if e.poll_transmit(now, &mut buf).is_some() {
                times.push(now);
                break;
            }
            now = e.poll_timeout().unwrap();
        }
    }
    assert_eq!(e.stats().spacing, 1);
    assert_eq!(e.stats().activations, 10);
    // 22 cells per TPDU at 1,000 cells/s: after the bucket's first 6 TPDUs, 22 ms apart.
    let gaps: Vec<u64> = times
        .windows(2)
        .map(|w| (w[1] - w[0]).as_micros())
        .collect();
    assert_eq!(gaps[..5], [0; 5]);
    assert!(gaps[6..].iter().all(|&g| g == 22_000), "{gaps:?}");
}

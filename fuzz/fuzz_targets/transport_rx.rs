//! natm-transport: arbitrary bytes to the TPDU codec (what parses re-emits to the same
//! bytes), then to the receive path of an endpoint of the service the first byte picks,
//! which has messages of its own in flight. Frames are arbitrary or built valid from the
//! input (data TPDUs and acks near the expected sequence numbers, so the state machine is
//! reached), interleaved with time going forward. Nothing may panic; every frame the
//! endpoint sends parses; no message is longer than the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_core::{Duration, Instant};
use natm_transport::header::{Ack, DataHeader, Repr, ServiceKind, emit_ack, emit_data_header};
use natm_transport::{Config, Endpoint, Event, Isn, Service};

const LOCAL: u32 = u32::MAX - 4;
const REMOTE: u32 = u32::MAX - 2;

fn drain(e: &mut Endpoint, now: Instant, buf: &mut [u8], max_message: usize) {
    while let Some(n) = e.poll_transmit(now, buf) {
        assert!(
            Repr::parse(&buf[..n]).is_ok(),
            "the endpoint sent a bad frame"
        );
    }
    while let Some(ev) = e.poll_event() {
        if let Event::Message { data, .. } = ev {
            assert!(data.len() <= max_message);
        }
    }
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    let mut a = [0; 4];
    for (k, x) in a.iter_mut().enumerate() {
        *x = b.get(i + k).copied().unwrap_or(0);
    }
    u32::from_be_bytes(a)
}

/// An ack near the sender's sequence numbers, from the bytes of `body`.
fn ack(service: ServiceKind, body: &[u8]) -> Ack {
    let b = |i: usize| u32::from(body.get(i).copied().unwrap_or(0));
    Ack {
        service,
        cum: LOCAL.wrapping_add(b(0) % 16),
        trigger: (b(1) & 0x80 == 0).then(|| LOCAL.wrapping_add(b(1) % 16)),
        echo: if b(1) & 0x80 == 0 { b(2) as u8 } else { 0 },
        window: b(3) % 24,
        bitmap: u64::from(u32_at(body, 4)) | u64::from(u32_at(body, 8)) << 32,
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = Repr::parse(data) {
        let mut out = vec![0; r.buffer_len()];
        r.emit(&mut out);
        assert_eq!(out, data);
        let _ = r.to_string();
    }

    let Some((&sel, mut rest)) = data.split_first() else {
        return;
    };
    let service = match sel % 3 {
        0 => Service::Reliable,
        1 => Service::BestEffort,
        _ => Service::Guaranteed {
            rate: 1 + u32::from(sel) * 100,
        },
    };
    let config = Config {
        service,
        tpdu_size: 64,
        max_message: 512,
        recv_buffer: 16,
        max_window: 16,
        ..Config::default()
    };
    let mut e = Endpoint::new(
        config,
        Isn { seq: LOCAL, msg: 0 },
        Isn {
            seq: REMOTE,
            msg: 0,
        },
    )
    .expect("a valid config");
    if sel & 0x40 != 0 {
        // A driver's measured round trip (its hello's), before any TPDU.
        e.set_rtt_hint(Duration::from_micros(u64::from(sel)));
    }
    let mut buf = vec![0; config.max_frame_len()];
    let mut now = Instant::ZERO;
    for k in 0..3 {
        let _ = e.send_message(now, &[k; 200]);
    }
    drain(&mut e, now, &mut buf, config.max_message);

    while let Some((&op, tail)) = rest.split_first() {
        let len = usize::from(tail.first().copied().unwrap_or(0)).min(tail.len().saturating_sub(1));
        let body = tail.get(1..1 + len).unwrap_or(&[]);
        rest = &tail[(1 + len).min(tail.len())..];
        match op % 4 {
            0 => {
                let _ = e.handle_tpdu(now, body);
            }
            1 => {
                let flags = body.first().copied().unwrap_or(0);
                let h = DataHeader {
                    service: service.kind(),
                    first: flags & 1 != 0,
                    last: flags & 2 != 0,
                    seq: REMOTE.wrapping_add(u32::from(body.get(1).copied().unwrap_or(0) % 32)),
                    msg: u32::from(body.get(2).copied().unwrap_or(0) % 8),
                    tx: flags >> 4,
                };
                let mut payload = body.get(3..).unwrap_or(&[]);
                // An ack riding on it, from the next 12 bytes.
                let ride = (flags & 4 != 0).then(|| {
                    let a = ack(service.kind(), payload);
                    payload = payload.get(12..).unwrap_or(&[]);
                    a
                });
                let mut f = vec![0; 33 + payload.len()];
                let at = emit_data_header(&h, ride.as_ref(), &mut f);
                f.truncate(at + payload.len());
                f[at..].copy_from_slice(payload);
                let _ = e.handle_tpdu(now, &f);
            }
            2 => {
                let mut f = [0; 24];
                emit_ack(&ack(service.kind(), body), &mut f);
                let _ = e.handle_tpdu(now, &f);
            }
            _ => {
                now += Duration::from_micros(u64::from(u32_at(body, 0) % 5_000_000));
                if e.poll_timeout().is_some_and(|t| t <= now) {
                    e.handle_timeout(now);
                }
                let b = body.first().copied().unwrap_or(0);
                if b & 1 == 1 {
                    let _ = e.send_message(now, body);
                }
                // A driver holding acks for replies, and its application's calls.
                if b & 2 != 0 {
                    e.hold_acks(b & 4 != 0);
                }
                if b & 8 != 0 {
                    e.release_ack();
                }
            }
        }
        drain(&mut e, now, &mut buf, config.max_message);
        let s = e.stats();
        assert!(s.cwnd <= 16 && s.flight <= 64, "{s:?}");
    }
});

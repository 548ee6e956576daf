//! natm-host-core's `Host` driven by arbitrary input: cells from the link (any bytes),
//! VC opens and closes, pings, a link that takes any part of what it is offered, link loss
//! and time. Nothing panics, and whatever is transmitted is a whole number of cells the
//! host offered.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_adapter::{AdapterConfig, BufferId, VecBuffers};
use natm_core::{Duration, Instant, Qos, VcId};
use natm_host_core::{CellBytes, ChannelId, Host, HostConfig, VcHandle};

const QOS: [&str; 4] = [
    "ubr",
    "cbr:pcr=100000",
    "vbr:pcr=50000,scr=10000,mbs=20",
    "ubr:pcr=1000",
];

fuzz_target!(|data: &[u8]| {
    let mut host: Host<VecBuffers> = Host::new(HostConfig::new("f", Some(353_207)));
    host.link_up();
    let mut channels: Vec<ChannelId> = Vec::new();
    let mut vcs: Vec<(ChannelId, VcHandle)> = Vec::new();
    let mut now = 0u64;
    let mut ops = data.chunks(54);
    while let Some(op) = ops.next() {
        let (&code, arg) = op.split_first().unwrap_or((&0, &[]));
        let byte = |i: usize| arg.get(i).copied().unwrap_or(0);
        now += u64::from(byte(0)) * 1_000;
        let t = Instant::from_nanos(now);
        match code % 9 {
            0 => {
                if let Ok(ch) =
                    host.open_channel(AdapterConfig::new(8, 2048), VecBuffers::new(8, 2048))
                {
                    if let Some((a, _)) = host.channel_mut(ch) {
                        for b in 0..4 {
                            a.post_rx_buffer(BufferId(b));
                        }
                    }
                    channels.push(ch);
                }
            }
            1 => {
                let Some(&ch) = channels.get(usize::from(byte(1)) % channels.len().max(1)) else {
                    continue;
                };
                let vc = VcId::uni(u32::from(byte(2) % 4), 32 + u32::from(byte(3) % 8)).unwrap();
                let qos: Qos = QOS[usize::from(byte(4)) % QOS.len()].parse().unwrap();
                if let Ok(h) = host.open_vc(ch, vc, &qos) {
                    vcs.push((ch, h));
                }
            }
            2 => {
                if !vcs.is_empty() {
                    let (_, h) = vcs.swap_remove(usize::from(byte(1)) % vcs.len());
                    host.close_vc(h);
                }
            }
            3 => {
                if let Some(&(ch, h)) = vcs.get(usize::from(byte(1)) % vcs.len().max(1)) {
                    let len = 1 + usize::from(byte(2)) * 8;
                    if let Some((a, _)) = host.channel_mut(ch) {
                        a.post_tx(t, BufferId(4 + u32::from(byte(3) % 4)), len, h.0);
                    }
                }
            }
            4 => {
                // Cells from the link: the op's bytes as one cell, headers and all.
                let mut cell: CellBytes = [0; 53];
                for (c, b) in cell.iter_mut().zip(arg) {
                    *c = *b;
                }
                let mut cells = [cell];
                let took = host.handle_cells(t, &mut cells);
                assert!(took <= 1);
            }
            5 => {
                let vc = VcId::uni(0, 32 + u32::from(byte(1) % 8)).unwrap();
                let _ = host.ping(
                    t,
                    vc,
                    byte(2) % 2 == 1,
                    u32::from(byte(3)),
                    Duration::from_micros(u64::from(byte(4))),
                );
            }
            6 => {
                if let Some(cells) = host.poll_transmit(t) {
                    let n = cells.len();
                    assert!(n > 0);
                    host.transmitted(usize::from(byte(1)).min(n));
                }
            }
            7 => {
                if byte(1) % 2 == 0 {
                    host.link_down();
                } else {
                    host.link_up();
                }
            }
            _ => {
                if let Some(d) = host.poll_timeout() {
                    host.handle_timeout(d.max(t));
                }
            }
        }
        while host.poll_event().is_some() {}
        for &ch in &channels {
            if let Some((a, _)) = host.channel_mut(ch) {
                while let Some(c) = a.poll_completion() {
                    if c.direction == natm_adapter::Direction::Rx {
                        a.post_rx_buffer(c.buffer);
                    }
                }
            }
        }
    }
});

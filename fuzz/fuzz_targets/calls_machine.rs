//! natm-calls' `CallControl` on a switch with three signalling ports (hosts on 1 and 2,
//! network side; a trunk on 3, user side), driven by arbitrary input: peers (real
//! `natm_sig::Signalling`s) that call any address, answer, refuse and release at random;
//! raw SDUs and raw cells on 0.5; ports going down and up; time. Nothing panics, and once
//! call control holds no call, it holds no VCI and the switch no cross-connect.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_adapter::{Reassembler, Reassembly};
use natm_calls::{CallControl, Config, Route, Side};
use natm_core::addr::{Aesa, AesaPrefix, Esi};
use natm_core::{Duration, Instant, LineRate, VcId};
use natm_sig::{
    CallEvent, CallId, Cause, CauseValue, ConnId, Location, PartyNumber, Role, SetupParams,
    Signalling,
};
use natm_switch::{PortConfig, PortId, Switch, SwitchConfig};
use natm_wire::aal5::Segmenter;

const QOS: [&str; 4] = [
    "aal5,ubr",
    "aal5,cbr:max_pcr=3000",
    "aal5,cbr:max_pcr=9000",
    "aal5,vbr:pcr=4000,scr=1000,mbs=20",
];

struct Peer {
    port: PortId,
    sig: Signalling,
    rx: Reassembler,
    calls: Vec<CallId>,
    incoming: Vec<CallId>,
}

fn sig_vc() -> VcId {
    VcId::uni(0, 5).expect("0.5")
}

fn prefix(n: u8) -> AesaPrefix {
    let mut a = [0u8; 20];
    a[0] = 0x47;
    a[12] = n;
    AesaPrefix::of(&Aesa(a), 104)
}

fn host(n: u8) -> Aesa {
    prefix(1)
        .address(Esi([0, 0, 0, 0, 0, n]), 0)
        .expect("104 bits")
}

fn push_sdu(now: Instant, sw: &mut Switch, port: PortId, sdu: &[u8]) {
    let Ok(mut seg) = Segmenter::uni(sig_vc(), sdu) else {
        return;
    };
    let mut cell = [0u8; 53];
    while seg.next_cell(&mut cell) {
        sw.handle_cell(now, port, &cell);
    }
}

/// Moves everything until nothing moves (bounded).
fn shuttle(now: Instant, sw: &mut Switch, cc: &mut CallControl, peers: &mut [Peer], lose: u8) {
    let mut out = [[0u8; 53]; 64];
    for round in 0..40u8 {
        let mut moved = false;
        for p in peers.iter_mut() {
            let mut k = 0u8;
            while let Some(sdu) = p.sig.poll_transmit() {
                moved = true;
                k = k.wrapping_add(1);
                if lose != 0 && k % lose == 0 {
                    continue;
                }
                push_sdu(now, sw, p.port, &sdu);
            }
        }
        if sw.has_signalling() {
            moved = true;
            cc.handle(now, sw);
        }
        while cc.poll_log().is_some() {}
        for p in peers.iter_mut() {
            loop {
                let n = sw.poll_transmit(now, p.port, &mut out);
                if n == 0 {
                    break;
                }
                moved = true;
                for cell in &out[..n] {
                    if u32::from_be_bytes([cell[0], cell[1], cell[2], cell[3]]) >> 4 == 5
                        && let Reassembly::Complete(_) = p.rx.push_cell(cell)
                    {
                        p.sig.handle_pdu(now, p.rx.sdu());
                    }
                }
            }
            while let Some(e) = p.sig.poll_event() {
                moved = true;
                match e {
                    CallEvent::Setup { call, .. } => p.incoming.push(call),
                    CallEvent::Released { call, .. } => {
                        p.calls.retain(|&c| c != call);
                        p.incoming.retain(|&c| c != call);
                    }
                    _ => {}
                }
            }
        }
        if !moved || round == 39 {
            break;
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut data = data.iter().copied();
    let Some(cfg) = data.next() else { return };
    let mut now = Instant::ZERO;
    let mut config = Config::new("s1", prefix(1));
    config.routes = vec![
        Route {
            prefix: AesaPrefix::of(&host(1), 152),
            port: PortId(1),
        },
        Route {
            prefix: AesaPrefix::of(&host(2), 152),
            port: PortId(2),
        },
        Route {
            prefix: prefix(2),
            port: PortId(3),
        },
    ];
    // A small VCI range makes "no VCI free" reachable.
    if cfg & 1 != 0 {
        config.vci_last = config.vci_first + 3;
    }
    let mut sw = Switch::new(SwitchConfig::default());
    let mut cc = CallControl::new(config);
    let mut peers = Vec::new();
    for (port, side, role) in [
        (1u16, Side::Network, Role::User),
        (2, Side::Network, Role::User),
        (3, Side::User, Role::Network),
    ] {
        let rate = if cfg & 2 != 0 {
            LineRate::cells(10_000).expect("a rate")
        } else {
            LineRate::Unlimited
        };
        let pc = PortConfig {
            signalling: true,
            rate,
            ..PortConfig::default()
        };
        sw.add_port(PortId(port), pc).expect("port");
        cc.add_port(now, PortId(port), side).expect("port");
        peers.push(Peer {
            port: PortId(port),
            sig: Signalling::new(
                now,
                natm_sig::Config::new(role),
                natm_sscop::Config::default(),
            ),
            rx: Reassembler::new(sig_vc(), 8192).expect("0.5"),
            calls: Vec::new(),
            incoming: Vec::new(),
        });
    }
    let lose = cfg >> 4;
    shuttle(now, &mut sw, &mut cc, &mut peers, lose);
    let mut next_vci = 40u16;
    while let Some(op) = data.next() {
        let p = usize::from(op >> 6) % 3;
        let arg = data.next().unwrap_or(0);
        match op & 0x7 {
            0 => {
                // A call to one of: host 1, host 2, behind the trunk, unknown here, nowhere.
                let called = match arg % 5 {
                    0 => host(1),
                    1 => host(2),
                    2 => prefix(2).address(Esi([1; 6]), 0).expect("104 bits"),
                    3 => host(9),
                    _ => prefix(7).address(Esi([1; 6]), 0).expect("104 bits"),
                };
                let conn = (peers[p].sig.uni().role() == Role::Network).then(|| {
                    next_vci = next_vci.wrapping_add(1).max(40);
                    ConnId {
                        vpci: 0,
                        vci: next_vci,
                    }
                });
                let params = SetupParams {
                    called: PartyNumber::aesa(called),
                    called_sub: None,
                    calling: None,
                    calling_sub: None,
                    qos: QOS[usize::from(arg >> 4) % QOS.len()].parse().expect("QoS"),
                    blli: None,
                    bhli: None,
                    conn,
                };
                if let Ok(c) = peers[p].sig.setup(now, &params) {
                    peers[p].calls.push(c);
                }
            }
            1 => {
                // Answer an incoming call: accept or refuse.
                if let Some(c) = peers[p].incoming.pop() {
                    let peer = &mut peers[p];
                    if arg & 1 == 0 {
                        let conn = (peer.sig.uni().role() == Role::Network).then(|| {
                            next_vci = next_vci.wrapping_add(1).max(40);
                            ConnId {
                                vpci: 0,
                                vci: next_vci,
                            }
                        });
                        if peer.sig.connect(now, c, conn).is_ok() {
                            peer.calls.push(c);
                        }
                    } else {
                        let cause = Cause::new(Location::User, CauseValue::CallRejected);
                        let _ = peer.sig.release(now, c, cause);
                    }
                }
            }
            2 => {
                // Release one of the peer's calls.
                let peer = &mut peers[p];
                if !peer.calls.is_empty() {
                    let c = peer.calls[usize::from(arg) % peer.calls.len()];
                    let cause = Cause::new(Location::User, CauseValue::NormalCallClearing);
                    let _ = peer.sig.release(now, c, cause);
                }
            }
            3 => {
                // A raw SDU on the port's 0.5.
                let n = usize::from(arg);
                let bytes: Vec<u8> = data.by_ref().take(n).collect();
                push_sdu(now, &mut sw, PortId(p as u16 + 1), &bytes);
            }
            4 => {
                // A raw cell.
                let mut cell = [arg; 53];
                for b in cell.iter_mut() {
                    *b = data.next().unwrap_or(0);
                }
                sw.handle_cell(now, PortId(p as u16 + 1), &cell);
            }
            5 => {
                // The port's link goes or comes back.
                let port = PortId(p as u16 + 1);
                let up = arg & 1 == 1;
                let _ = sw.set_port_up(now, port, up);
                let _ = if up {
                    cc.port_up(now, port, &mut sw)
                } else {
                    cc.port_down(now, port, &mut sw)
                };
            }
            _ => {
                // Time passes; timers run.
                now += Duration::from_millis(u64::from(arg) * 50);
                for peer in peers.iter_mut() {
                    if peer.sig.poll_timeout().is_some_and(|t| t <= now) {
                        peer.sig.handle_timeout(now);
                    }
                }
                if cc.poll_timeout().is_some_and(|t| t <= now) {
                    cc.handle_timeout(now, &mut sw);
                }
                sw.handle_timeout(now);
            }
        }
        shuttle(now, &mut sw, &mut cc, &mut peers, lose);
        if cc.call_count() == 0 {
            for port in 1..=3 {
                assert_eq!(
                    cc.allocated_vcis(PortId(port)),
                    0,
                    "VCIs left on port {port}"
                );
            }
            assert_eq!(sw.connection_count(), 0, "cross-connects left");
        }
    }
});

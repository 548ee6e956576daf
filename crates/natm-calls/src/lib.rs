//! The call control of one switch (issue 24): what turns natm-switch's cross-connects into
//! switched VCs.
//!
//! * **Per port** a [`natm_sig::Signalling`] (Q.2931 over SSCF-UNI and SSCOP) on the side
//!   the port is ([`Side`]: network on a host's port and on a trunk's `a` end, user on its
//!   `b` end), fed the AAL5 SDUs of the port's VC 0.5: the switch core ends 0.5 on ports
//!   with `PortConfig::signalling` (`Switch::poll_signalling`), natm-adapter's
//!   [`Reassembler`](natm_adapter::Reassembler) (natm's one AAL5 receiver) rebuilds the
//!   SDUs, and what the signalling sends is segmented by natm-wire's `Segmenter` into
//!   cells for `Switch::send_signalling`.
//! * **Routing** by the longest matching prefix of [`Config::routes`] (a host's 19-byte
//!   prefix to its port, another switch's prefix to the trunk toward it). Addresses are
//!   "registered" by configuration: ILMI is not done. An address under the switch's own
//!   prefix without a route is refused with cause 1 (unallocated number), any other with
//!   cause 3 (no route to destination); a called number that is not an AESA with 3.
//! * **VCIs** on VPI 0 from [`Config::vci_first`]`..=`[`Config::vci_last`] (32768..=65535,
//!   never the PVCs'), assigned only by the network side of a port: in the SETUP it
//!   forwards, and in the CALL PROCEEDING it answers a SETUP with. On a user-side port the
//!   peer assigns them (its SETUP, CALL PROCEEDING or CONNECT names them).
//! * **A SETUP arriving on port A**: route → port B (down, or its SAAL not up: cause 27);
//!   the VCIs this switch assigns; the bandwidth booked with `Switch::connect` as soon as
//!   both legs' VCs are known, or, when B is a user-side trunk whose peer assigns the
//!   VCI, checked with `Switch::assess` now and booked when CALL PROCEEDING or CONNECT
//!   names it; then SETUP forwarded on B (called and calling party, subaddresses, QoS,
//!   BLLI and BHLI as received) and CALL PROCEEDING back to A at once. CONNECT from B →
//!   the cross-connect is active → CONNECT to A. RELEASE from either side → RELEASE on
//!   the other with the same cause (passed through unchanged, location included), the
//!   cross-connect removed (its bandwidth returned), each leg's VCI freed when its
//!   signalling has finished with it. While the cross-connect still holds cells from the
//!   releasing side toward the other (0.5 leaves ahead of the port's queues, and removing
//!   the cross-connect drops what it holds), both wait until those cells have left, looked
//!   at every [`DRAIN_CHECK`], at most [`DRAIN_MAX`]: the last data arrives before the
//!   RELEASE.
//! * **Refusals** go back as RELEASE COMPLETE with a cause of location LPN and an
//!   **explanation** in the diagnostics (ASCII, at most 28 bytes, the switch's
//!   [`Config::name`] first): CAC bandwidth → 37 (51 with [`Config::version`] UNI 3.1),
//!   `s2 p3: 1000 c/s free` (the port and its free rate in the direction that did not
//!   fit); UBR or connection limit → 47; no free VCI → 45; QoS IEs that do not map, or a
//!   contract the CAC cannot read → 73; a class not offered (ABR) → 49; a VCI the peer
//!   named that is taken → 35. A refusal further on comes back through unchanged. Each
//!   refusal is also one whole line of [`CallControl::poll_log`] (who, the cause, the
//!   explanation and the CAC's full words).
//! * **Ports and SAAL.** [`port_down`](CallControl::port_down) or the SAAL's loss on a
//!   port clears every call with a leg there (the other legs released with cause 27,
//!   diagnostics `s1 pN port down` / `s1 pN SAAL lost`), returns their bandwidth and VCIs, and
//!   gives the port a fresh `Signalling` (its SSCOP starting at another N(SQ), so a peer
//!   still established with the old one re-establishes). Once the SAAL of a fresh entity
//!   is up (after [`add_port`](CallControl::add_port), [`port_up`](CallControl::port_up)
//!   or a loss), RESTART (class all) goes out: the peer clears what it still held.
//!
//! What it is not: no I/O, clocks or randomness, no `unsafe`; `no_std` with `alloc`. No
//! ILMI, no point-to-multipoint, no soft PVCs, no PNNI (routes are static), no call
//! admission beyond the switch core's CAC, no re-routing; UBR and CBR/VBR alike are
//! cross-connected without UPC.
//!
//! # Call contract (sans-IO)
//!
//! * Set-up: [`new`](CallControl::new) with the [`Config`] (name, prefix, routes);
//!   for each port of the `Switch` added with `PortConfig::signalling = true`,
//!   [`add_port`](CallControl::add_port)`(now, port, side)`.
//! * Input: [`handle`](CallControl::handle)`(now, &mut switch)` whenever
//!   `Switch::has_signalling()` (it drains every port's 0.5 cells and runs everything,
//!   queueing what is to be sent with `Switch::send_signalling`);
//!   [`handle_timeout`](CallControl::handle_timeout)`(now, &mut switch)` at
//!   [`poll_timeout`](CallControl::poll_timeout); [`port_down`](CallControl::port_down) /
//!   [`port_up`](CallControl::port_up) when a port's link goes or comes back (the driver
//!   sets the switch port's own state with `Switch::set_port_up` too).
//! * Output: the cells queued on the switch (the driver's `poll_transmit` sends them);
//!   [`poll_log`](CallControl::poll_log) until `None` after each call; the status
//!   queries ([`ports`](CallControl::ports), [`calls`](CallControl::calls),
//!   [`counters`](CallControl::counters), [`call_count`](CallControl::call_count),
//!   [`allocated_vcis`](CallControl::allocated_vcis),
//!   [`state_bytes_per_call`](CallControl::state_bytes_per_call)).
//! * `now` never goes backwards. Nothing here panics on any cell, SDU or message (fuzz
//!   target `calls_machine`).
//! * With every call gone, every port's [`allocated_vcis`](CallControl::allocated_vcis)
//!   is 0, [`call_count`](CallControl::call_count) is 0, and the switch holds no
//!   cross-connect or booking that call control made.
//!
//! A switch with two hosts (the hosts are plain user-side `Signalling`s whose SDUs the
//! example moves as cells by hand); host 1 calls host 2:
//!
//! ```
//! use natm_adapter::{Reassembler, Reassembly};
//! use natm_calls::{CallControl, Config, Route, Side};
//! use natm_core::addr::{AesaPrefix, Esi};
//! use natm_core::{Instant, VcId};
//! use natm_sig::{CallEvent, PartyNumber, Role, SetupParams, Signalling};
//! use natm_switch::{PortConfig, PortId, Switch, SwitchConfig};
//! use natm_wire::aal5::Segmenter;
//!
//! let now = Instant::ZERO;
//! let prefix: AesaPrefix = "47.0005.80ffe1000000f21a3501".parse()?;
//! let addr = |n: u8| prefix.address(Esi([0, 0, 0, 0, 0, n]), 0).unwrap();
//! let mut config = Config::new("s1", prefix);
//! for n in [1u8, 2] {
//!     let port = PortId(u16::from(n));
//!     config.routes.push(Route { prefix: AesaPrefix::of(&addr(n), 152), port });
//! }
//! let mut sw = Switch::new(SwitchConfig::default());
//! let mut cc = CallControl::new(config);
//! let mut hosts = Vec::new();
//! for port in [PortId(1), PortId(2)] {
//!     sw.add_port(port, PortConfig { signalling: true, ..PortConfig::default() })?;
//!     cc.add_port(now, port, Side::Network)?;
//!     let user = natm_sig::Config::new(Role::User);
//!     let host = Signalling::new(now, user, natm_sscop::Config::default());
//!     hosts.push((port, host, Reassembler::new(VcId::uni(0, 5)?, 8192)?));
//! }
//! // Moves SDUs as cells between the hosts and the switch until nothing moves.
//! let shuttle = |sw: &mut Switch, cc: &mut CallControl, hosts: &mut [(PortId, Signalling, Reassembler)]| {
//!     for _ in 0..10 {
//!         for (port, host, rx) in hosts.iter_mut() {
//!             while let Some(sdu) = host.poll_transmit() {
//!                 let mut seg = Segmenter::uni(VcId::uni(0, 5).unwrap(), &sdu).unwrap();
//!                 let mut cell = [0u8; 53];
//!                 while seg.next_cell(&mut cell) {
//!                     sw.handle_cell(now, *port, &cell);
//!                 }
//!             }
//!             if sw.has_signalling() {
//!                 cc.handle(now, sw);
//!             }
//!             let mut out = [[0u8; 53]; 64];
//!             let n = sw.poll_transmit(now, *port, &mut out);
//!             for cell in &out[..n] {
//!                 if let Reassembly::Complete(_) = rx.push_cell(cell) {
//!                     host.handle_pdu(now, rx.sdu());
//!                 }
//!             }
//!         }
//!     }
//! };
//! shuttle(&mut sw, &mut cc, &mut hosts); // SSCOP up on both ports, RESTART, …
//! let call = hosts[0].1.setup(now, &SetupParams {
//!     called: PartyNumber::aesa(addr(2)),
//!     called_sub: None,
//!     calling: Some(PartyNumber::aesa(addr(1))),
//!     calling_sub: None,
//!     qos: "aal5,cbr:max_pcr=1000".parse()?,
//!     blli: None,
//!     bhli: None,
//!     conn: None,
//! })?;
//! shuttle(&mut sw, &mut cc, &mut hosts);
//! let incoming = std::iter::from_fn(|| hosts[1].1.poll_event())
//!     .find_map(|e| match e {
//!         CallEvent::Setup { call, .. } => Some(call),
//!         _ => None,
//!     })
//!     .expect("host 2 is called");
//! hosts[1].1.connect(now, incoming, None)?;
//! shuttle(&mut sw, &mut cc, &mut hosts);
//! assert!(std::iter::from_fn(|| hosts[0].1.poll_event())
//!     .any(|e| matches!(e, CallEvent::Connected { call: c, .. } if c == call)));
//! assert_eq!((cc.call_count(), sw.connection_count()), (1, 1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

mod control;
#[cfg(feature = "mutants")]
pub mod mutants;
mod types;

pub use control::{CallControl, DRAIN_CHECK, DRAIN_MAX};
pub use types::{
    CallStatus, Config, Counters, LegStatus, Phase, PortError, PortStatus, Route, Side,
};

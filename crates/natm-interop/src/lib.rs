//! natm's interoperability harness for linux-atm's `atmsigd` (Debian atm-tools 2.5.1), run
//! unmodified under `LD_PRELOAD` of `tools/atm_socket_shim.c`.
//!
//! What it is: test support that starts atmsigd in a private directory with its signalling
//! VC 0.5 on two FIFOs of framed SDUs and its "kernel" on a UNIX datagram socket
//! ([`atmsigd`]), speaks that kernel-side protocol (`struct atmsvc_msg`, [`kernel`]) so a
//! test can make atmsigd listen, accept, place and clear calls, and drives a natm signalling
//! entity against it in real time ([`atmsigd::AtmSigd::pump`]), or hands its signalling VC
//! to a [`bridge`] onto an atmtcp cell link (`kind = "tcp"`, what an `[[external]]` entry
//! is) so that natm's daemons signal with it ([`atmsigd::AtmSigd::bridge`]). [`vectors`]
//! holds the bytes atmsigd was seen to send.
//!
//! What it is not: a pure crate. It runs processes, FIFOs, sockets and threads, and reads the
//! wall clock (in [`atmsigd::AtmSigd::now`] and the bridge's trace). No protocol logic lives
//! here: the natm side under test is `natm-sig`'s `Signalling` or the daemons; the bridge
//! uses natm-wire's AAL5 segmenter, natm-adapter's reassembler and natm-link's links.
//!
//! The tests are in `tests/atmsigd.rs` (natm-sig against atmsigd) and `tests/external.rs`
//! (the bridge; atmsigd `-m user` on a switchd's `[[external]]` port and `-m network` as a
//! hostd's `[[external]]` link, the daemons in threads from natm-lab's configurations); they
//! skip when atmsigd or `cc` is missing unless `NATM_REQUIRE_ATMSIGD=1` (set by
//! `scripts/test`).

//!
//! # atmsigd 2.5.1 as found (Debian atm-tools 1:2.5.1)
//!
//! * The "user of signalling" is one UNIX datagram socket at the path given after the VC
//!   (`atmsigd … 0.0.5 PATH`), not the man page's pair of named pipes. Without it atmsigd
//!   opens `socket(PF_ATMSVC)` + `ATMSIGD_CTRL`, which under the shim would read the
//!   signalling FIFO. atmsigd answers whoever sent the first datagram.
//! * Without `-u`, the build runs UNI 3.0 with Q.SAAL's SSCOP (BGN N(SQ) 0); `-u uni31` and
//!   `-u uni40` run Q.2110 and send the same bytes for every message seen here.
//! * Without `-c`, `/etc/atmsigd.conf` applies (syslog, `entity 0.0.5`). No timer is
//!   configurable: Timer_CC 1 s and MaxCC 4 (then END and start over), Timer_POLL 750 ms,
//!   Timer_IDLE 15 s, Timer_NO_RESPONSE 7 s, window VR(R) + 30.
//! * With no local address (the shim's original ATM_GETADDR) atmsigd accepts calls as the
//!   user side but places none (`as_error` −EADDRNOTAVAIL, "no local address", with or
//!   without `local` in `as_connect`); as the network side it allocates every VCI through
//!   `bind(ATM_VCI_ANY)` + `getsockname`, and a failing `getsockname` ends it ("get_pvc:
//!   Socket operation on non-socket", exit 1). The shim here has `ATMSHIM_LOCAL` and
//!   `getsockname` for that.
//! * A request made while its SAAL is not up yet is lost ("sscf_send invoked in state
//!   2/2"; no SETUP, the call waits on T303), and atmsigd reads its kernel socket before the
//!   signalling VC: the tests wait for atmsigd's side of the establishment.
//! * RELEASE of an active call is answered with RELEASE COMPLETE only after the kernel side
//!   closes too, and without a cause. STATUS lists call state before cause; every cause
//!   atmsigd sends has location 0 (user), in network mode too. No T322; STATUS ENQUIRY only
//!   for active calls when its SAAL comes back under T309. It never sends RESTART.
//! * It takes an incoming SETUP only if its AAL5 maximum SDU sizes are the listener's: a
//!   call of 1024 bytes to a listener of 9188 is refused at once, before CALL PROCEEDING
//!   in network mode too, with RELEASE COMPLETE cause 88 (incompatible destination). Its
//!   owner's `as_reject` becomes cause 21 with one diagnostic byte, 0x80.
//! * Attached to natm's daemons, it answers a switch's RESTART (all VCs, sent when the
//!   port's SAAL comes up) with RESTART ACK, and in user mode takes the VC the switch names
//!   (VCI 32768 upward); in network mode it names VCIs from the shim's `ATMSHIM_VCI` (32).

pub mod atmsigd;
pub mod bridge;
pub mod kernel;
pub mod vectors;

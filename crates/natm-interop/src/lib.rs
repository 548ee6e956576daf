//! natm's interoperability harness for linux-atm's `atmsigd` (Debian atm-tools 2.5.1), run
//! unmodified under `LD_PRELOAD` of `tools/atm_socket_shim.c`.
//!
//! What it is: test support that starts atmsigd in a private directory with its signalling
//! VC 0.5 on two FIFOs of framed SDUs and its "kernel" on a UNIX datagram socket
//! ([`atmsigd`]), speaks that kernel-side protocol (`struct atmsvc_msg`, [`kernel`]) so a
//! test can make atmsigd listen, accept, place and clear calls, and drives a natm signalling
//! entity against it in real time ([`atmsigd::AtmSigd::pump`]). [`vectors`] holds the bytes
//! atmsigd was seen to send.
//!
//! What it is not: a pure crate. It runs processes, FIFOs, sockets and threads, and reads the
//! wall clock (in one place, [`atmsigd::AtmSigd::now`]). No protocol logic lives here; the
//! natm side under test is `natm-sig`'s `Signalling`.
//!
//! The tests are in `tests/atmsigd.rs`; they skip when atmsigd or `cc` is missing unless
//! `NATM_REQUIRE_ATMSIGD=1` (set by `scripts/test`).

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

pub mod atmsigd;
pub mod bridge;
pub mod kernel;
pub mod vectors;

//! The SAAL primitives call control speaks (Q.2130 AAL-ESTABLISH/RELEASE/DATA/UNITDATA),
//! as natm-sscop's SSCF-UNI defines them.

pub use natm_sscop::sscf::{SaalEvent, SaalRequest};

/// The receive window (credit) natm's own signalling entities grant: 128 SDs beyond
/// VR(R), ngatm's value (SSCOP's default, 30, is linux-atm's).
///
/// Credit only comes back in a STAT, which answers a POLL, which SSCOP sends every MaxPD
/// (25) SDs: with a window of 30 a sender had 5 SDs of slack per POLL round trip, and a
/// switch port carrying thousands of calls a second waited for credit in a third of its
/// POLL cycles at 8 calls outstanding, in most at 32 (`natm perf calls`, counted in
/// switchd's `status` as `credit_waits`). A larger grant costs the receiver nothing until
/// SDs arrive out of order (they are kept until the gap is filled).
pub const WINDOW: u32 = 128;

/// SSCOP's parameters for natm's switches and hosts: the defaults with [`WINDOW`].
pub fn sscop_config() -> natm_sscop::Config {
    natm_sscop::Config {
        window: WINDOW,
        ..natm_sscop::Config::default()
    }
}

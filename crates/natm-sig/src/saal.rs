//! The SAAL primitives call control speaks (Q.2130 AAL-ESTABLISH/RELEASE/DATA/UNITDATA),
//! as natm-sscop's SSCF-UNI defines them.

pub use natm_sscop::sscf::{SaalEvent, SaalRequest};

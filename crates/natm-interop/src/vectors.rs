//! Bytes linux-atm's atmsigd 2.5.1 (Debian atm-tools 1:2.5.1) was seen to send, recorded
//! through the shim on 2026-11-27 with `-u uni31`; `-u uni40` sent the same bytes for every
//! message here. Each is one SDU on VC 0.5 (an SSCOP PDU) or, for Q.2931, the SD's
//! information field.
//!
//! Against atm-facts.md §6: the PDU layouts agree; atmsigd's own values differ from the
//! §6 examples only where the examples pick values (N(MR) 30 instead of 128; BGN's N(SQ)
//! starts at 1 under Q.2110 and at 0 under UNI 3.0's Q.SAAL).

/// BGN, N(SQ) = 1, N(MR) = 30: atmsigd's first PDU in both modes (UNI 3.1 and 4.0). It
/// repeats every second (Timer_CC 1 s) until answered.
pub const BGN: [u8; 8] = [0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x1e];

/// BGN without `-u` (Debian's default, UNI 3.0 with Q.SAAL SSCOP): N(SQ) = 0.
pub const BGN_UNI30: [u8; 8] = [0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x1e];

/// END with S = 1 (SSCOP-originated), sent after 4 unanswered BGNs (MaxCC 4); atmsigd then
/// sends a new BGN at once and starts over.
pub const END_MAXCC: [u8; 8] = [0x00, 0x00, 0x00, 0x00, 0x13, 0x00, 0x00, 0x00];

/// POLL N(PS) = 1, N(S) = 0: 750 ms after the BGAK (Timer_POLL). After its STAT, atmsigd
/// polls again only after Timer_IDLE, 15 s, while nothing is outstanding.
pub const FIRST_POLL: [u8; 8] = [0x00, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x00];

/// USTAT for a lost SD 0 (SD 1 arrived first): list [0, 1), N(MR) = 30, N(R) = 0.
pub const USTAT_LOST_0: [u8; 16] = [
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x1e, 0x0c, 0x00, 0x00, 0x00,
];

/// STAT answering POLL N(PS) = 1 after SD 0 was lost (POLL N(S) = 1): list [0, 1),
/// N(PS) = 1, N(MR) = 30, N(R) = 0.
pub const STAT_LOST_0: [u8; 20] = [
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x1e,
    0x0b, 0x00, 0x00, 0x00,
];

/// STAT with nothing missing: N(PS) = 2, N(MR) = 31 (VR(R) + 30), N(R) = 1.
pub const STAT_NONE_MISSING: [u8; 12] = [
    0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x1f, 0x0b, 0x00, 0x00, 0x01,
];

/// `-m user`'s CONNECT answering the network's SETUP with call reference 5: only the AAL
/// parameters (AAL5, fwd/bwd max CPCS-SDU 9188, SSCS type null).
pub const CONNECT_CR5: &[u8] = &[
    0x09, 0x03, 0x80, 0x00, 0x05, 0x07, 0x80, 0x00, 0x0d, 0x58, 0x80, 0x00, 0x09, 0x05, 0x8c, 0x23,
    0xe4, 0x81, 0x23, 0xe4, 0x84, 0x00,
];

/// RELEASE COMPLETE after a RELEASE (call reference 5): **no cause IE**, in both modes.
pub const RELEASE_COMPLETE_CR5: &[u8] = &[0x09, 0x03, 0x80, 0x00, 0x05, 0x5a, 0x80, 0x00, 0x00];

/// `-m user`'s SETUP (call reference 1, its first) for an `as_connect` to
/// 47.0005.80ffe1000000f21a3d5c.0020481a3d5c.00 from local 47.…1b000100.00, UBR: AAL5
/// (9188/9188, SSCS null), PCR(0+1) 353207 both ways + best effort, bearer BCOB-X with the
/// extension bit set (`90 80`: no octet 5a), called, calling, QoS class 0/0. No
/// connection identifier (the network assigns it).
pub const SETUP_USER: &[u8] = &[
    0x09, 0x03, 0x00, 0x00, 0x01, 0x05, 0x80, 0x00, 0x58, 0x58, 0x80, 0x00, 0x09, 0x05, 0x8c, 0x23,
    0xe4, 0x81, 0x23, 0xe4, 0x84, 0x00, 0x59, 0x80, 0x00, 0x09, 0x84, 0x05, 0x63, 0xb7, 0x85, 0x05,
    0x63, 0xb7, 0xbe, 0x5e, 0x80, 0x00, 0x02, 0x90, 0x80, 0x70, 0x80, 0x00, 0x15, 0x82, 0x47, 0x00,
    0x05, 0x80, 0xff, 0xe1, 0x00, 0x00, 0x00, 0xf2, 0x1a, 0x3d, 0x5c, 0x00, 0x20, 0x48, 0x1a, 0x3d,
    0x5c, 0x00, 0x6c, 0x80, 0x00, 0x15, 0x82, 0x47, 0x00, 0x05, 0x80, 0xff, 0xe1, 0x00, 0x00, 0x00,
    0xf2, 0x1a, 0x3d, 0x5c, 0x00, 0x20, 0x48, 0x1b, 0x00, 0x01, 0x00, 0x5c, 0x80, 0x00, 0x02, 0x00,
    0x00,
];

/// `-m network`'s CALL PROCEEDING for the user's SETUP with call reference 7: connection
/// identifier VPCI 0, VCI 32 (allocated through the shim's getsockname).
pub const CALL_PROCEEDING_CR7: &[u8] = &[
    0x09, 0x03, 0x80, 0x00, 0x07, 0x02, 0x80, 0x00, 0x09, 0x5a, 0x80, 0x00, 0x05, 0x88, 0x00, 0x00,
    0x00, 0x20,
];

/// CONNECT ACKNOWLEDGE for atmsigd's own call 1 (it sent the SETUP).
pub const CONNECT_ACK_CR1: &[u8] = &[0x09, 0x03, 0x00, 0x00, 0x01, 0x0f, 0x80, 0x00, 0x00];

/// RELEASE, cause 16 (normal call clearing), location user, on atmsigd's call 1.
pub const RELEASE_CR1: &[u8] = &[
    0x09, 0x03, 0x00, 0x00, 0x01, 0x4d, 0x80, 0x00, 0x06, 0x08, 0x80, 0x00, 0x02, 0x80, 0x90,
];

/// RESTART ACKNOWLEDGE for a RESTART of all VCs (global call reference). Byte-identical to
/// atm-facts.md §5.5's vector.
pub const RESTART_ACK_ALL: &[u8] = &[
    0x09, 0x03, 0x80, 0x00, 0x00, 0x4e, 0x80, 0x00, 0x05, 0x79, 0x80, 0x00, 0x01, 0x82,
];

/// STATUS answering a STATUS ENQUIRY on unknown call reference 9: call state 0 first, then
/// cause 30 with location 0 (user) even from `-m network`.
pub const STATUS_CR9: &[u8] = &[
    0x09, 0x03, 0x80, 0x00, 0x09, 0x7d, 0x80, 0x00, 0x0b, 0x14, 0x80, 0x00, 0x01, 0x00, 0x08, 0x80,
    0x00, 0x02, 0x80, 0x9e,
];

/// RELEASE COMPLETE, cause 81 (invalid call reference value), for a RELEASE on unknown call
/// reference 10.
pub const RELEASE_COMPLETE_CR10_CAUSE81: &[u8] = &[
    0x09, 0x03, 0x80, 0x00, 0x0a, 0x5a, 0x80, 0x00, 0x06, 0x08, 0x80, 0x00, 0x02, 0x80, 0xd1,
];

/// RESTART ACKNOWLEDGE for a RESTART of the indicated VC 0.32: connection identifier, then
/// restart indicator class 0.
pub const RESTART_ACK_VC32: &[u8] = &[
    0x09, 0x03, 0x80, 0x00, 0x00, 0x4e, 0x80, 0x00, 0x0e, 0x5a, 0x80, 0x00, 0x05, 0x88, 0x00, 0x00,
    0x00, 0x20, 0x79, 0x80, 0x00, 0x01, 0x80,
];

/// STATUS answering a RESTART of a VC atmsigd has no call on: global call reference, call
/// state 0, cause 100 (invalid IE contents) with diagnostic 0x5A (the connection identifier).
pub const STATUS_RESTART_UNKNOWN_VC: &[u8] = &[
    0x09, 0x03, 0x80, 0x00, 0x00, 0x7d, 0x80, 0x00, 0x0c, 0x14, 0x80, 0x00, 0x01, 0x00, 0x08, 0x80,
    0x00, 0x03, 0x80, 0xe4, 0x5a,
];

/// Every recorded Q.2931 message, with a name.
pub const Q2931: &[(&str, &[u8])] = &[
    ("CONNECT", CONNECT_CR5),
    ("RELEASE COMPLETE", RELEASE_COMPLETE_CR5),
    ("SETUP (user)", SETUP_USER),
    ("CALL PROCEEDING", CALL_PROCEEDING_CR7),
    ("CONNECT ACK", CONNECT_ACK_CR1),
    ("RELEASE", RELEASE_CR1),
    ("RESTART ACK", RESTART_ACK_ALL),
    ("STATUS", STATUS_CR9),
    ("RESTART ACK (VC)", RESTART_ACK_VC32),
    (
        "STATUS (RESTART of an unknown VC)",
        STATUS_RESTART_UNKNOWN_VC,
    ),
    ("RELEASE COMPLETE cause 81", RELEASE_COMPLETE_CR10_CAUSE81),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The SSCOP PDU type in the trailer and the Q.2931 length field agree with the bytes.
    #[test]
    fn self_consistent() {
        for (pdu, ty) in [
            (&BGN[..], 1),
            (&BGN_UNI30[..], 1),
            (&END_MAXCC[..], 3),
            (&FIRST_POLL[..], 0xa),
            (&USTAT_LOST_0[..], 0xc),
            (&STAT_LOST_0[..], 0xb),
            (&STAT_NONE_MISSING[..], 0xb),
        ] {
            assert_eq!(pdu.len() % 4, 0);
            assert_eq!(pdu[pdu.len() - 4] & 0x0f, ty);
        }
        for (name, m) in Q2931 {
            assert_eq!((m[0], m[1]), (0x09, 0x03), "{name}");
            assert_eq!(
                usize::from(m[7]) << 8 | usize::from(m[8]),
                m.len() - 9,
                "{name}"
            );
        }
    }
}

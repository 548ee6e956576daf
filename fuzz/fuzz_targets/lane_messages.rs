//! Lane requests and replies (natm-link's `lane`): decode arbitrary bytes as each, never
//! panicking; what decodes must encode back (a request to the same VCs, weight and splice
//! flag, a reply, taken, spliced or refused, to the same bytes). The bytes are tried as they are and after each message's magic, so that
//! the fuzzer reaches past it. And arbitrary VC lists: what `encode_request` accepts
//! decodes back to the list sorted with its weight, and what it refuses breaks one of the
//! request's rules.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_link::lane::{
    LaneError, LaneVc, MAX_LANE_VCS, ReplyFields, RequestFields, decode_reply, decode_request,
    encode_reply, encode_request,
};

/// The longest refusal reason a reply carries, in bytes.
const MAX_REASON: usize = 512;

fn check_request(data: &[u8]) {
    match decode_request(data) {
        Ok(RequestFields {
            vcs,
            weight,
            may_splice,
        }) => {
            assert!((1..=MAX_LANE_VCS).contains(&vcs.len()), "{vcs:?}");
            assert!(vcs.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
            assert!(vcs.iter().all(|v| v.vci >= 32), "{vcs:?}");
            assert!(weight >= 1);
            // Version 3 carries a weight and flags; version 2 a weight; version 1 neither
            // (weight 1); only version 3 may splice.
            let version = data[7];
            let tail = match version {
                1 => 0,
                2 => 4,
                _ => 5,
            };
            assert!(may_splice <= (version == 3));
            assert_eq!(data.len(), 10 + 4 * vcs.len() + tail);
            let bytes = encode_request(&vcs, weight, may_splice).expect("what decodes encodes");
            let again = decode_request(&bytes).expect("and decodes again");
            assert_eq!(
                again,
                RequestFields {
                    vcs,
                    weight,
                    may_splice
                }
            );
            // The same count; the VCs are the input's, sorted; the weight and flags the same.
            assert_eq!(bytes[8..10], data[8..10]);
            if version == 3 {
                assert_eq!(bytes[..10], data[..10]);
                assert_eq!(bytes[bytes.len() - 5..], data[data.len() - 5..]);
            }
        }
        Err(e) => {
            assert!(matches!(e, LaneError::Malformed(_)), "{e:?}");
            let _ = e.to_string();
        }
    }
}

fn check_reply(data: &[u8]) {
    match decode_reply(data) {
        Ok(fields) => assert_eq!(encode_reply(Ok(fields)), data),
        Err(LaneError::Refused(why)) => {
            assert!(why.len() <= MAX_REASON);
            assert_eq!(encode_reply(Err(&why)), data);
        }
        Err(e) => {
            assert!(matches!(e, LaneError::Malformed(_)), "{e:?}");
            let _ = e.to_string();
        }
    }
}

fn with_magic(magic: &[u8], data: &[u8]) -> Vec<u8> {
    let mut b = magic[..8].to_vec();
    b.extend_from_slice(data);
    b
}

fuzz_target!(|data: &[u8]| {
    check_request(data);
    check_reply(data);
    let request =
        encode_request(&[LaneVc { vpi: 0, vci: 32 }], 1, true).expect("a valid request");
    check_request(&with_magic(&request, data));
    check_reply(&with_magic(&encode_reply(Ok(ReplyFields::Taken)), data));

    // The bytes as a list of VCs to ask for.
    let vcs: Vec<LaneVc> = data
        .chunks_exact(4)
        .map(|c| LaneVc {
            vpi: u16::from_le_bytes([c[0], c[1]]),
            vci: u16::from_le_bytes([c[2], c[3]]),
        })
        .collect();
    let mut sorted = vcs.clone();
    sorted.sort_unstable();
    let repeats = sorted.windows(2).any(|w| w[0] == w[1]);
    let valid =
        (1..=MAX_LANE_VCS).contains(&vcs.len()) && vcs.iter().all(|v| v.vci >= 32) && !repeats;
    let weight = data.len() as u32;
    let may_splice = data.first().is_some_and(|b| b & 1 != 0);
    match encode_request(&vcs, weight, may_splice) {
        Ok(bytes) => {
            assert!(valid && weight >= 1, "accepted {vcs:?} at {weight}");
            assert_eq!(bytes.len(), 15 + 4 * vcs.len());
            assert_eq!(
                decode_request(&bytes).expect("decodes"),
                RequestFields {
                    vcs: sorted,
                    weight,
                    may_splice
                }
            );
        }
        Err(e) => assert!(!valid || weight == 0, "refused {vcs:?}: {e}"),
    }

    // A reason of any text: cut at a character to at most 512 bytes, read back the same.
    let text = String::from_utf8_lossy(data);
    match decode_reply(&encode_reply(Err(&text))) {
        Err(LaneError::Refused(why)) => {
            assert!(why.len() <= MAX_REASON && text.starts_with(why.as_str()));
            assert!(why.len() == text.len() || why.len() > MAX_REASON - 4);
        }
        other => panic!("a refusal read back as {other:?}"),
    }
});

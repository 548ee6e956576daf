//! Lane requests and replies (natm-link's `lane`): decode arbitrary bytes as each, never
//! panicking; what decodes must encode back (a request to the same VCs, a reply to the
//! same bytes). The bytes are tried as they are and after each message's magic, so that
//! the fuzzer reaches past it. And arbitrary VC lists: what `encode_request` accepts
//! decodes back to the list sorted with its weight, and what it refuses breaks one of the
//! request's rules.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_link::lane::{
    LaneError, LaneVc, MAX_LANE_VCS, decode_reply, decode_request, encode_reply, encode_request,
};

/// The longest refusal reason a reply carries, in bytes.
const MAX_REASON: usize = 512;

fn check_request(data: &[u8]) {
    match decode_request(data) {
        Ok((vcs, weight)) => {
            assert!((1..=MAX_LANE_VCS).contains(&vcs.len()), "{vcs:?}");
            assert!(vcs.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
            assert!(vcs.iter().all(|v| v.vci >= 32), "{vcs:?}");
            assert!(weight >= 1);
            // Version 2 carries a weight; version 1 (no weight, read as 1) does not.
            let v1 = data[7] == 1;
            assert_eq!(data.len(), 10 + 4 * vcs.len() + if v1 { 0 } else { 4 });
            let bytes = encode_request(&vcs, weight).expect("what decoded encodes");
            let again = decode_request(&bytes).expect("and decodes again");
            assert_eq!(again, (vcs, weight));
            // The same count; the VCs are the input's, sorted; the weight the same.
            assert_eq!(bytes[8..10], data[8..10]);
            if !v1 {
                assert_eq!(bytes[..10], data[..10]);
                assert_eq!(bytes[bytes.len() - 4..], data[data.len() - 4..]);
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
        Ok(()) => assert_eq!(encode_reply(Ok(())), data),
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
    let request = encode_request(&[LaneVc { vpi: 0, vci: 32 }], 1).expect("a valid request");
    check_request(&with_magic(&request, data));
    check_reply(&with_magic(&encode_reply(Ok(())), data));

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
    match encode_request(&vcs, weight) {
        Ok(bytes) => {
            assert!(valid && weight >= 1, "accepted {vcs:?} at {weight}");
            assert_eq!(bytes.len(), 14 + 4 * vcs.len());
            assert_eq!(decode_request(&bytes).expect("decodes"), (sorted, weight));
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

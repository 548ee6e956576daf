//! Wireshark's exported PDUs (`LINKTYPE_WIRESHARK_UPPER_PDU`, 252): a list of tags, then the
//! bytes for the dissector the tags name.
//!
//! ```text
//! tag (BE16) | length (BE16) | value (length bytes) ... | 00 00 00 00 (end) | data
//! ```
//!
//! Tag 12 names the dissector, as a NUL-padded string whose length is a multiple of 4
//! (Wireshark's `epan/exported_pdu.h`). natm uses one dissector: `atm_oam_cell`, which takes
//! a whole 53-byte cell and checks its HEC, the only pcap encoding found in which tshark
//! checks a cell's HEC (ERF cell records carry no HEC). tshark then decodes the payload as
//! OAM whatever the PTI, so its CRC-10 verdict only means something for OAM cells.
//!
//! Not here: the other tags (addresses, ports, frame numbers), which the reader skips.

/// The end-of-tags tag.
pub const TAG_END: u16 = 0;
/// The tag naming the dissector.
pub const TAG_DISSECTOR_NAME: u16 = 12;
/// The dissector that checks a raw cell's HEC and decodes its payload as OAM.
pub const ATM_OAM_CELL: &str = "atm_oam_cell";

/// Append an exported PDU for `dissector` carrying `data` to `out`.
pub fn encode(dissector: &str, data: &[u8], out: &mut Vec<u8>) {
    let name = dissector.as_bytes();
    let padded = (name.len() + 1).next_multiple_of(4);
    out.extend_from_slice(&TAG_DISSECTOR_NAME.to_be_bytes());
    out.extend_from_slice(&(padded as u16).to_be_bytes());
    out.extend_from_slice(name);
    out.resize(out.len() + padded - name.len(), 0);
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(data);
}

/// The dissector name (empty if no tag names one) and the data of an exported PDU; `None`
/// if the tags run past the record.
pub fn decode(record: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut at = 0;
    let mut name: &[u8] = &[];
    loop {
        let tag = record.get(at..at + 4)?;
        let kind = u16::from_be_bytes([tag[0], tag[1]]);
        let len = usize::from(u16::from_be_bytes([tag[2], tag[3]]));
        at += 4;
        if kind == TAG_END {
            return Some((name, record.get(at..)?));
        }
        let value = record.get(at..at + len)?;
        if kind == TAG_DISSECTOR_NAME {
            name = value.split(|&b| b == 0).next().unwrap_or(&[]);
        }
        at += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_layout() {
        let mut out = Vec::new();
        encode(ATM_OAM_CELL, &[1, 2, 3], &mut out);
        // "atm_oam_cell" is 12 bytes: padded to 16 so that a NUL ends it.
        assert_eq!(&out[..4], &[0, 12, 0, 16]);
        assert_eq!(&out[4..16], b"atm_oam_cell");
        assert_eq!(&out[16..24], &[0; 8]);
        assert_eq!(decode(&out), Some((&b"atm_oam_cell"[..], &[1u8, 2, 3][..])));
    }

    #[test]
    fn malformed_tags() {
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&[0, 12, 0, 40, b'a']), None);
        assert_eq!(decode(&[0, 0, 0, 0]), Some((&[][..], &[][..])));
        // An unknown tag is skipped.
        assert_eq!(
            decode(&[0, 99, 0, 2, 7, 7, 0, 0, 0, 0, 5]),
            Some((&[][..], &[5u8][..]))
        );
    }
}

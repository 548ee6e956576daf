//! natm-capture's reader: arbitrary bytes as a pcap file, and as the contents of one record
//! of each link type natm decodes. Nothing may panic; a decoded record must encode and
//! decode back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natm_capture::{LinkType, Reader, Record, summarize};
use natm_core::Instant;

fuzz_target!(|data: &[u8]| {
    if let Ok(reader) = Reader::new(data) {
        for record in reader.flatten() {
            let _ = summarize(&record).to_string();
        }
    }
    for link in [LinkType::Erf, LinkType::SunAtm, LinkType::ExportedPdu] {
        let record = Record::decode(link, Instant::from_nanos(1_000_000_000), data.to_vec());
        let _ = summarize(&record).to_string();
        let mut bytes = Vec::new();
        // Encoding may refuse (a PDU too long for ERF); what it accepts must read back.
        if record.encode(link, &mut bytes).is_ok() {
            assert_eq!(Record::decode(link, record.time, bytes), record);
        }
    }
});
